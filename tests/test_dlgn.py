"""iclr25.chapters.dlgn: tree data, gates as hyperplanes, distances, DLGN-DT, bad input."""

import numpy as np
import pytest
import torch

from iclr25.chapters import dlgn
from iclr25.core import ParameterError


def traverse(tree, point):
    """The label of one point, by walking the tree node by node."""
    k = 0
    while k < len(tree.biases):
        positive = point @ tree.normals[k] + tree.biases[k] > 0
        k = 2 * k + (tree.positive_child if positive else 3 - tree.positive_child)
    return k % 2


def reference_labels(x, normals, biases):
    """The reference generator's own rule, vectorised as it writes it: index <- 2 (index
    + 1) - (1 - [w.x + b > 0]), then the label is (heap index) mod 2."""
    index = np.zeros(len(x), dtype=int)
    for _ in range(int(np.log2(len(biases) + 1))):
        decision = np.einsum("nd,nd->n", x, normals[index]) + biases[index]
        index = (index + 1) * 2 - (1 - (decision > 0))
    return index % 2


@pytest.fixture(scope="module")
def data():
    return dlgn.oblique_tree(dim=6, depth=3, n=4000, margin=0.02, seed=1)


def test_labels_are_the_tree_traversal(data):
    assert data.x.shape == (4000, 6) and data.y.shape == (4000,)
    assert np.abs(data.x).max() <= 1
    np.testing.assert_allclose(np.linalg.norm(data.tree.normals, axis=1), 1)
    walked = [traverse(data.tree, point) for point in data.x.astype(float)]
    np.testing.assert_array_equal(data.y, walked)
    # the same labels as the reference implementation's rule, node for node
    x = data.x.astype(float)
    np.testing.assert_array_equal(data.y, reference_labels(x, data.tree.normals, data.tree.biases))
    assert 0.4 < data.y.mean() < 0.6


def test_splits_are_balanced_and_nothing_is_within_the_margin(data):
    _, closest, reached = data.tree.route(data.x.astype(float))
    # nothing within the margin of ANY of the tree's hyperplanes (the reference's rule)
    distance = np.abs(data.x.astype(float) @ data.tree.normals.T + data.tree.biases)
    assert distance.min() > 0.02 and closest.min() > 0.02
    np.testing.assert_allclose(data.tree.clearance(data.x), distance.min(1))
    for k in range(len(data.tree.biases)):
        here = data.x[reached[:, k]]
        left = (here @ data.tree.normals[k] + data.tree.biases[k] > 0).mean()
        assert abs(left - 0.5) < 0.06, (k, left)
    # every point reaches exactly one node per level
    assert (reached.sum(1) == 3).all()


def test_axis_tree_lies_on_the_sphere_and_splits_on_coordinates():
    d = dlgn.axis_tree(dim=7, depth=3, n=500, seed=0)
    np.testing.assert_allclose(np.linalg.norm(d.x, axis=1), 1, atol=1e-5)
    np.testing.assert_array_equal(d.tree.normals, np.eye(7))
    np.testing.assert_array_equal(d.y, [traverse(d.tree, p) for p in d.x.astype(float)])
    # as the reference: x_0 > 0 -> node 1, x_1 > 0 -> node 3, x_3 > 0 -> leaf 7 (label 1)
    path = (d.x[:, 0] > 0) & (d.x[:, 1] > 0)
    np.testing.assert_array_equal(d.y[path], (d.x[path, 3] > 0).astype(int))
    with pytest.raises(ParameterError, match="needs dim >= 7"):
        dlgn.axis_tree(dim=5, depth=3, n=10)


def test_flip_share_sees_the_root_as_half_a_discontinuity():
    """Axis tree of depth 2: crossing x_0 = 0 flips the label iff sign(x_1) != sign(x_2)."""
    d = dlgn.axis_tree(dim=3, depth=2, n=20000, seed=0)
    shares = dlgn.flip_share(d.tree, d.x, eps=0.02)
    assert abs(shares[0] - 0.5) < 0.1
    assert (shares[1:] > 0.95).all()


@pytest.mark.parametrize("shared_input", [False, True], ids=["DLGN", "DLGN-SF"])
def test_hyperplanes_give_the_gate_preactivations(shared_input):
    torch.manual_seed(0)
    model = dlgn.DLGN(dim=5, width=7, depth=3, beta=2.0, shared_input=shared_input)
    x = torch.randn(40, 5)
    a, c = dlgn.hyperplanes(model)
    with torch.no_grad():
        g = torch.cat(model.gate_preactivations(x), dim=1).double().numpy()
    assert a.shape == (21, 5) and c.shape == (21,)
    np.testing.assert_allclose(x.double().numpy() @ a.T + c, g, atol=1e-5)


def test_distance_is_sign_and_scale_invariant_and_zero_on_the_tree(data):
    rng = np.random.default_rng(0)
    a, c = rng.standard_normal((30, 6)), rng.standard_normal(30)
    base = dlgn.gate_distances(a, c, data.tree)
    np.testing.assert_allclose(dlgn.gate_distances(-a, -c, data.tree), base)
    np.testing.assert_allclose(dlgn.gate_distances(3 * a, 3 * c, data.tree), base)
    flipped = np.vstack([a, -2 * data.tree.normals]), np.concatenate([c, -2 * data.tree.biases])
    np.testing.assert_allclose(dlgn.gate_distances(*flipped, data.tree), 0, atol=1e-6)
    assert (base > 0.1).all()


def test_largest_cluster_center_finds_the_cluster_among_random_gates():
    rng = np.random.default_rng(0)
    w, b = np.array([0.6, -0.8, 0.0]), 0.2
    scale = rng.choice([-3.0, 0.5, 2.0], size=(20, 1))  # sign and scale do not matter
    a = np.vstack([scale * (w + 0.02 * rng.standard_normal((20, 3))), rng.standard_normal((60, 3))])
    c = np.concatenate(
        [scale[:, 0] * (b + 0.02 * rng.standard_normal(20)), rng.standard_normal(60)]
    )
    centre, bias = dlgn.largest_cluster_center(a, c, eps=0.2, min_samples=6)
    assert centre[0] >= 0  # the authors' sign: first coordinate non-negative
    found = np.append(centre, bias) / np.linalg.norm(centre)
    assert (
        min(np.linalg.norm(found - np.append(w, b)), np.linalg.norm(found + np.append(w, b))) < 0.05
    )
    assert dlgn.largest_cluster_center(a[20:], c[20:], eps=0.05, min_samples=6) is None


def test_build_tree_with_each_node_s_own_hyperplane_is_the_tree(data):
    """Algorithm 1's bookkeeping: splits in heap order, the positive side to 2k + 2."""
    tree = data.tree

    def split(x, y, k):
        return tree.normals[k], float(tree.biases[k]), "cluster"

    built = dlgn.build_tree(data.x, data.y, split, depth=3, min_points=10)
    assert built.how == ["cluster"] * 7
    np.testing.assert_array_equal(built.predict(data.x), data.y)
    np.testing.assert_array_equal(built.leaves, [1, 0, 1, 0, 1, 0, 1, 0])


def test_build_tree_stops_on_pure_or_small_nodes(data):
    calls = []

    def split(x, y, k):
        calls.append(k)
        return data.tree.normals[k], float(data.tree.biases[k]), "cluster"

    pure = dlgn.build_tree(data.x, np.ones(len(data.x), dtype=int), split, depth=3, min_points=1)
    small = dlgn.build_tree(data.x, data.y, split, depth=3, min_points=len(data.x) + 1)
    assert calls == [] and pure.how == small.how == ["leaf"] * 7
    assert (pure.predict(data.x) == 1).all()
    # a split with an empty side makes a leaf: node 0 splits, its children cannot
    one = dlgn.build_tree(
        data.x,
        data.y,
        lambda x, y, k: (data.tree.normals[0], float(data.tree.biases[0]), "cluster"),
        depth=3,
        min_points=1,
    )
    assert one.how == ["cluster"] + ["leaf"] * 6


def test_discontinuity_scope_counts_where_the_label_jumps():
    """Axis tree of depth 2 on the sphere: crossing x_0 = 0 flips the label on half of it,
    crossing x_1 = 0 on all of it where x_0 > 0 (and nowhere else)."""
    d = dlgn.axis_tree(dim=3, depth=2, n=20000, seed=0)
    x = d.x.astype(float)
    scope = dlgn.discontinuity_scope(d.tree, x, band=0.05)
    near = np.abs(x[:, :3]) < 0.05
    assert 0.4 < scope[0] / near[:, 0].sum() < 0.6
    assert 0.9 < scope[1] / (near[:, 1] & (x[:, 0] > 0)).sum() <= 1.0
    assert dlgn.discontinuity_scope(d.tree, x[x[:, 0] > 0.5], band=0.05)[2] == 0


def test_true_gate_split_puts_the_root_first():
    """Depth 3: the root's scope is about twice any other node's, so its copies make the
    largest cluster."""
    d = dlgn.axis_tree(dim=7, depth=3, n=20000, seed=0)
    x, y = d.x.astype(float), d.y
    a, c, how = dlgn.true_gate_split(d.tree, eps=0.2, min_samples=6)(x, y, 0)
    assert how == "cluster"
    assert np.linalg.norm(np.append(a, c) - np.append(d.tree.normals[0], 0)) < 1e-9


def test_dlgn_split_builds_a_tree_on_a_small_problem():
    d = dlgn.oblique_tree(dim=2, depth=1, n=600, margin=0.02, seed=0)
    x, y, xt, yt = d.split()
    split = dlgn.dlgn_split(
        width=8,
        depth=2,
        beta=4.0,
        epochs=30,
        lr=0.01,
        seed=0,
        eps=0.2,
        eps_below=0.3,
        min_samples=3,
    )
    built = dlgn.build_tree(x, y, split, depth=1, min_points=5)
    assert built.how[0] in ("cluster", "logistic")
    assert (built.predict(xt) == yt).mean() > 0.9


def test_fit_best_keeps_the_epoch_with_the_fewest_validation_errors():
    d = dlgn.oblique_tree(dim=2, depth=1, n=400, margin=0.02, seed=0)
    x, y, xv, yv = d.split()
    seen = []

    def record(epoch, net):
        seen.append(int((dlgn.predict(net, xv) != yv).sum()))

    recipe = dict(epochs=8, lr=0.05, batch_size=32, seed=0)
    torch.manual_seed(0)
    dlgn.fit(dlgn.DLGN(2, 4, 2), x, y, on_epoch=record, **recipe)
    torch.manual_seed(0)
    best = dlgn.fit_best(dlgn.DLGN(2, 4, 2), x, y, xv, yv, **recipe)
    assert int((dlgn.predict(best, xv) != yv).sum()) == min(seen)


def test_truncating_a_tree_is_building_it_with_that_cap(data):
    """BuildTree's splits above the cap do not depend on it, so the deep tree cut at
    depth d predicts as the tree built to depth d."""
    found = dlgn.true_gate_split(data.tree, eps=0.2, min_samples=6)
    deep = dlgn.build_tree(data.x, data.y, found, depth=5, min_points=20)
    for depth in (1, 2, 3):
        capped = dlgn.build_tree(data.x, data.y, found, depth=depth, min_points=20)
        cut = dlgn.truncated(deep, depth, data.x, data.y)
        assert cut.how == capped.how
        np.testing.assert_array_equal(cut.predict(data.x), capped.predict(data.x))
    with pytest.raises(ParameterError, match="cannot cut a tree of depth 5 at depth 6"):
        dlgn.truncated(deep, 6, data.x, data.y)


def test_depth_on_validation_picks_the_most_accurate_cut(data):
    def own(x, y, k):  # each node's own hyperplane: the labelling tree at depth 3
        return data.tree.normals[k % 7], float(data.tree.biases[k % 7]), "cluster"

    deep = dlgn.build_tree(data.x, data.y, own, depth=4, min_points=1)
    chosen = dlgn.depth_on_validation(deep, data.x, data.y, data.x, data.y)
    assert len(chosen.leaves) == 2**3  # the shallowest cut that is exact
    np.testing.assert_array_equal(chosen.predict(data.x), data.y)


def test_tuned_picks_a_setting_of_the_authors_grid():
    d = dlgn.oblique_tree(dim=4, depth=2, n=600, margin=0.02, seed=0)
    x, y, xt, yt = d.split()
    model, chosen = dlgn.tuned("CART", x, y, 0)
    assert all(chosen[k] in v for k, v in dlgn.method.CART_GRID.items())
    assert model.score(xt, yt) > 0.5


def test_large_beta_makes_the_output_constant_per_gate_cell():
    torch.manual_seed(1)
    model = dlgn.DLGN(dim=2, width=3, depth=2, beta=1e5)
    a, c = dlgn.hyperplanes(model)
    x = np.random.default_rng(0).uniform(-1, 1, (4000, 2))
    side = x @ a.T + c
    x = x[(np.abs(side) / np.linalg.norm(a, axis=1) > 1e-3).all(1)]
    cells = [tuple(r) for r in (x @ a.T + c > 0)]
    with torch.no_grad():
        out = model(torch.as_tensor(x, dtype=torch.float32)).numpy()
    by_cell: dict = {}
    for cell, value in zip(cells, out):
        by_cell.setdefault(cell, []).append(value)
    assert len(by_cell) > 3
    for values in by_cell.values():
        assert np.ptp(values) < 1e-4
    # and it is not constant overall
    assert np.ptp(out) > 1e-3


def test_training_moves_gates_on_a_small_problem():
    d = dlgn.oblique_tree(dim=2, depth=1, n=600, margin=0.02, seed=0)
    run = dlgn.train_on_tree(
        d,
        "DLGN",
        width=8,
        depth=2,
        beta=4.0,
        epochs=15,
        lr=0.01,
        batch_size=32,
        seed=0,
        snapshots=(0, 15),
    )
    assert run["distances"].shape == (16, 1)
    assert run["distances"][-1, 0] < run["distances"][0, 0]
    assert run["accuracy"] > 0.9 and set(run["planes"]) == {0, 15}


def test_tabular_sets_load_including_digits():
    table = dlgn.load_table("digits", 0)
    assert table.n_features == 64 and table.n_classes == 10
    assert len(table.train) + len(table.val) + len(table.test) == 1797
    assert float(table.train.x.min()) >= 0 and float(table.train.x.max()) <= 1
    assert dlgn.load_table("iris", 0).n_classes == 3


def test_multiclass_dlgn_trains_with_cross_entropy():
    torch.manual_seed(0)
    model = dlgn.DLGN(dim=4, width=8, depth=2, n_classes=3)
    table = dlgn.load_table("iris", 0)
    dlgn.fit(
        model,
        table.train.x.numpy(),
        table.train.y.numpy(),
        epochs=30,
        lr=0.01,
        batch_size=16,
        seed=0,
    )
    assert model(table.test.x).shape == (len(table.test), 3)
    assert dlgn.accuracy(model, table.test.x.numpy(), table.test.y.numpy()) > 0.6


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: dlgn.oblique_tree(dim=1), "dim got 1; accepted: an integer >= 2"),
        (lambda: dlgn.oblique_tree(depth=0), "depth got 0; accepted: an integer >= 1 and <= 6"),
        (lambda: dlgn.oblique_tree(depth=7), "depth got 7"),
        (lambda: dlgn.oblique_tree(margin=-0.1), "margin got -0.1; accepted: a number >= 0"),
        (lambda: dlgn.DLGN(dim=3, width=0, depth=2), "width got 0; accepted: an integer >= 1"),
        (lambda: dlgn.DLGN(dim=3, width=4, depth=2, beta=0.0), "beta got 0.0; accepted"),
        (lambda: dlgn.load_table("mnist", 0), "unknown data set 'mnist'; accepted: breast_cancer"),
        (lambda: dlgn.make_model("CNN", 3, 4, 2, 4.0), "unknown model 'CNN'; accepted: DLGN"),
        (lambda: dlgn.tuned("MLP", np.zeros((4, 2)), np.zeros(4), 0), "no grid for 'MLP'"),
    ],
)
def test_bad_input_gives_one_line_errors(call, message):
    with pytest.raises(ParameterError, match=message) as err:
        call()
    assert "\n" not in str(err.value)


def test_mismatched_input_width_is_refused():
    model = dlgn.DLGN(dim=8, width=4, depth=2)
    with pytest.raises(ParameterError, match=r"accepted: \(n, 8\)"):
        model(torch.zeros(5, 3))
    with pytest.raises(ParameterError, match=r"accepted: \(n, 8\)"):
        dlgn.ReluMLP(8, 4, 2)(torch.zeros(5, 9))


def test_figures_build(data):
    flat = dlgn.oblique_tree(dim=2, depth=2, n=300, seed=0)
    rng = np.random.default_rng(0)
    a, c = rng.standard_normal((12, 2)), 0.3 * rng.standard_normal(12)
    fig = dlgn.plane_figure(flat, a, c, "test")
    names = [t.name for t in fig.data]
    assert names[:3] == ["label 0", "label 1", "DLGN gates"] and len(names) == 3 + 2 * 3
    fig = dlgn.distance_figure({"DLGN": np.ones((5, 7)), "DLGN-SF": np.ones((5, 7))})
    assert len(fig.data) == 14
    sweep = {b: {"accuracy": 0.9, "distances": np.full(7, 0.1)} for b in dlgn.BETAS}
    fig = dlgn.beta_figure(sweep, 4.0)
    assert "median distance 0.100" in fig.layout.title.text
