"""iclr25.vision: deterministic disjoint splits, the three architectures, cached training."""

import numpy as np
import pytest
import torch

from iclr25 import vision


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR25_CACHE", str(tmp_path / "cache"))


def rows(split: vision.Split) -> set[bytes]:
    return {image.numpy().tobytes() for image in split.x}


@pytest.mark.parametrize("name", vision.DATASETS)
def test_splits_are_deterministic_by_seed_and_disjoint(name):
    n = None if name in ("digits", "digits16") else 300
    vision.load.cache_clear()
    first, again = vision.load(name, 3, n), vision.load.__wrapped__(name, 3, n)
    other = vision.load.__wrapped__(name, 4, n)
    for split in vision.SPLITS:
        a, b = first.split(split), again.split(split)
        assert torch.equal(a.x, b.x) and torch.equal(a.y, b.y)
    assert not torch.equal(first.test.x, other.test.x)
    train, val, test = rows(first.train), rows(first.val), rows(first.test)
    assert not (train & val) and not (train & test) and not (val & test)
    sizes = [len(first.split(s)) for s in vision.SPLITS]
    assert sizes[0] > sizes[1] > 0 and sizes[2] > 0
    assert first.train.x.dtype == torch.float32 and first.train.x.ndim == 4
    assert 0.0 <= float(first.train.x.min()) and float(first.train.x.max()) <= 1.0
    assert set(first.train.y.tolist()) == set(range(first.n_classes))


def test_noisy_digits_split_the_base_digits_before_drawing_variants(monkeypatch):
    # with the clutter switched off, each image is its sklearn digit (all 1,797 are
    # distinct): the splits share no digit, though each split repeats its own
    monkeypatch.setattr(vision, "_noisy_digits", lambda base, rng: (base, base > 0.25))
    data = vision.load.__wrapped__("noisy_digits", 0, 3000)
    train, val, test = rows(data.train), rows(data.val), rows(data.test)
    assert not (train & val) and not (train & test) and not (val & test)
    assert len(train) < len(data.train)
    base, _ = vision._sklearn_digits()
    assert train | val | test <= {digit.tobytes() for digit in base}


def test_generated_sets_carry_object_masks():
    data = vision.load("shapes", 0, 120)
    assert data.train.mask is not None and data.train.mask.shape == data.train.x[:, 0].shape
    inside = data.train.x[:, 0][data.train.mask].mean()
    outside = data.train.x[:, 0][~data.train.mask].mean()
    assert inside > outside + 0.3
    assert vision.load("digits").train.mask is None


def test_bad_names_and_sizes_are_refused_with_what_is_accepted():
    with pytest.raises(ValueError, match="unknown dataset 'mnist'; accepted: digits"):
        vision.load("mnist")
    with pytest.raises(ValueError, match="n=None for 'digits'"):
        vision.load("digits", 0, 500)
    with pytest.raises(ValueError, match="unknown split 'dev'"):
        vision.load("digits").split("dev")
    with pytest.raises(ValueError, match="unknown architecture 'resnet'; accepted: mlp, cnn, vit"):
        vision.ModelConfig("resnet", (1, 8, 8), 10)
    with pytest.raises(ValueError, match="patch 3 to divide"):
        vision.ModelConfig("vit", (1, 8, 8), 10, patch=3)
    with pytest.raises(ValueError, match="label_smoothing must be in"):
        vision.TrainConfig(label_smoothing=1.0)
    with pytest.raises(ValueError, match="anneal_epochs must be in"):
        vision.TrainConfig(epochs=3, anneal_epochs=3)
    with pytest.raises(ValueError, match="milestones must be increasing epochs in"):
        vision.TrainConfig(epochs=3, milestones=(2, 1))
    with pytest.raises(ValueError, match="milestones must be increasing epochs in"):
        vision.TrainConfig(epochs=3, milestones=(3,))
    with pytest.raises(ValueError, match="milestones or anneal_epochs, not both"):
        vision.TrainConfig(epochs=4, milestones=(2,), anneal_epochs=1)


@pytest.mark.parametrize("arch", vision.ARCHS)
@pytest.mark.parametrize("shape", [(1, 8, 8), (1, 16, 16)])
def test_every_architecture_maps_images_to_logits_through_its_head(arch, shape):
    config = vision.ModelConfig(arch, shape, 6, width=8, depth=2, patch=4, heads=2)
    model = vision.build(config)
    x = torch.rand(5, *shape)
    features = model.backbone(x)
    assert features.shape == (5, model.head.in_features)
    assert torch.allclose(model(x), model.head(features))
    assert model(x).shape == (5, 6)


def test_training_learns_is_reproducible_and_cached(tmp_path):
    data = vision.load("digits")
    model = vision.ModelConfig.for_data("mlp", data, width=32)
    config = vision.TrainConfig(epochs=8, batch_size=64, lr=3e-3, anneal_epochs=2, seed=1)
    threads = torch.get_num_threads()
    first = vision.train(data, model, config, progress=False)
    assert torch.get_num_threads() == threads  # training used config.threads, then restored it
    assert len(first.losses) == 8  # 6 epochs at lr, then 2 at lr / 10
    assert first.losses[-1] < first.losses[0] / 3
    accuracy = (vision.logits(first.model, data.test.x).argmax(-1) == data.test.y).float().mean()
    assert accuracy > 0.85
    assert len(list((tmp_path / "cache").glob("*.pt"))) == 1
    again = vision.train(data, model, config, progress=False)  # from the cache
    assert torch.equal(
        vision.logits(first.model, data.test.x), vision.logits(again.model, data.test.x)
    )
    assert again.losses == first.losses
    smoothed = vision.train(
        data,
        model,
        vision.TrainConfig(
            epochs=8, batch_size=64, lr=3e-3, anneal_epochs=2, seed=1, label_smoothing=0.2
        ),
        progress=False,
    )
    assert len(list((tmp_path / "cache").glob("*.pt"))) == 2
    assert smoothed.losses[-1] > first.losses[-1]  # smoothed targets cannot be fitted to zero loss


def test_a_fresh_training_run_equals_the_cached_one(tmp_path, monkeypatch):
    data = vision.load("shapes", 0, 200)
    model = vision.ModelConfig.for_data("cnn", data, width=4)
    config = vision.TrainConfig(epochs=2, batch_size=32, seed=5)
    cached = vision.train(data, model, config, progress=False)
    torch.manual_seed(123)  # the global generator must not matter
    monkeypatch.setenv("ICLR25_CACHE", str(tmp_path / "other"))
    fresh = vision.train(data, model, config, progress=False)
    assert torch.equal(
        vision.logits(cached.model, data.val.x), vision.logits(fresh.model, data.val.x)
    )


def test_sgd_trains_too_and_bad_optimizers_are_refused(tmp_path):
    data = vision.load("digits")
    model = vision.ModelConfig.for_data("mlp", data, width=32)
    trained = vision.train(
        data, model, vision.TrainConfig(epochs=8, lr=0.05, optimizer="sgd"), progress=False
    )
    accuracy = (vision.logits(trained.model, data.test.x).argmax(-1) == data.test.y).float().mean()
    assert trained.losses[-1] < trained.losses[0] / 3 and accuracy > 0.85
    with pytest.raises(ValueError, match="optimizer must be 'adamw' or 'sgd', got 'adam'"):
        vision.TrainConfig(optimizer="adam")


def test_image_grid_draws_each_image_upright_with_its_title_and_style():
    images = [np.arange(6.0).reshape(2, 3), torch.zeros(1, 2, 3), np.full((2, 3), np.nan)]
    fig = vision.image_grid(
        images,
        2,
        2,
        titles=["a", "b", "c"],
        colorscale=["gray", "Viridis", "gray"],
        zmax=1.0,
        hovertemplate="v %{z}",
        title="grid",
        height=200,
    )
    assert [t.type for t in fig.data] == ["heatmap"] * 3
    assert np.array_equal(fig.data[0].z, [[3.0, 4.0, 5.0], [0.0, 1.0, 2.0]])  # top row on top
    assert fig.data[1].z.shape == (2, 3)
    assert [(t.xaxis, t.yaxis) for t in fig.data] == [("x", "y"), ("x2", "y2"), ("x3", "y3")]
    assert fig.data[1].colorscale[0][1] != fig.data[0].colorscale[0][1]  # Viridis vs gray
    assert all(t.zmax == 1.0 and t.zmin is None and t.hovertemplate == "v %{z}" for t in fig.data)
    assert [a.text for a in fig.layout.annotations] == ["a", "b", "c"]
    assert fig.layout.title.text == "grid" and fig.layout.height == 200
    assert not fig.layout.xaxis.visible and fig.layout.yaxis2.scaleanchor == "x"
    with pytest.raises(ValueError, match="1 to rows \\* cols = 2 images"):
        vision.image_grid(images, 1, 2)
    with pytest.raises(ValueError, match="2 per-image values for 3 images"):
        vision.image_grid(images, 2, 2, zmin=[0, 0])
