"""iclr25.tabular: the bundled tables as 2-D tensors, disjoint seeded splits, min-max scaling."""

import numpy as np
import pytest
import torch

from iclr25 import tabular


@pytest.mark.parametrize(
    "name, rows, columns, classes",
    [
        ("breast_cancer", 569, 30, 2),
        ("iris", 150, 4, 3),
        ("wine", 178, 13, 3),
        ("digits", 1797, 64, 10),
    ],
)
def test_each_table_is_rows_by_columns_with_names(name, rows, columns, classes):
    table = tabular.load(name, 0)
    assert table.n_features == columns and table.n_classes == classes
    assert len(table.features) == columns and all(isinstance(f, str) for f in table.features)
    for split in tabular.SPLITS:
        part = table.split(split)
        assert part.x.ndim == 2 and part.x.shape[1] == columns and part.x.dtype == torch.float32
        assert part.y.dtype == torch.int64 and len(part.y) == len(part.x)
    sizes = [len(table.split(s)) for s in tabular.SPLITS]
    assert sizes == [round(0.6 * rows), round(0.2 * rows), rows - sizes[0] - sizes[1]]
    assert table.spec == {"name": name, "seed": 0}


def test_splits_are_seeded_and_disjoint():
    a, again = tabular.load("wine", 1), tabular.load.__wrapped__("wine", 1)
    other = tabular.load("wine", 2)
    assert torch.equal(a.test.x, again.test.x) and torch.equal(a.test.y, again.test.y)
    assert not torch.equal(a.test.x, other.test.x)
    rows = [{r.numpy().tobytes() for r in a.split(s).x} for s in tabular.SPLITS]
    assert not (rows[0] & rows[1]) and not (rows[0] & rows[2]) and not (rows[1] & rows[2])


def test_scaling_is_min_max_by_the_training_split():
    table = tabular.load("breast_cancer", 0)
    assert torch.equal(table.train.x.amin(0), torch.zeros(30))
    assert torch.equal(table.train.x.amax(0), torch.ones(30))
    assert 0 <= table.test.x.min() and table.test.x.max() <= 1  # held-out rows clipped
    x = np.array([[0.0, 5.0], [2.0, 5.0], [4.0, 5.0]])
    np.testing.assert_allclose(tabular.min_max(x, x[:2]), [[0, 0], [1, 0], [1, 0]])


def test_unknown_names_are_refused_with_what_is_accepted():
    with pytest.raises(ValueError, match="'adult'; accepted: breast_cancer, iris, wine"):
        tabular.load("adult")
    with pytest.raises(ValueError, match="unknown split 'dev'"):
        tabular.load("iris").split("dev")


def test_digits_are_scaled_pixels_with_ten_classes():
    table = tabular.load("digits", 0)
    assert table.features[0] == "pixel_0_0" and table.classes == tuple(str(k) for k in range(10))
    assert float(table.train.x.min()) == 0 and float(table.train.x.max()) == 1
    assert set(table.train.y.tolist()) == set(range(10))
