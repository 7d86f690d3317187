"""iclr25.chapters.modeconn: paths, bypasses, FVO, attacks, the postprocess and the AUC."""

import numpy as np
import pytest
import torch
from torch import nn

from iclr25.chapters import modeconn
from iclr25.core import ParameterError

SHAPE = (1, 4, 4)


@pytest.fixture
def model():
    """A small fixed network on 1x4x4 images, three classes, weights frozen."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Flatten(), nn.Linear(16, 12), nn.ReLU(), nn.Linear(12, 3)).eval()
    for w in net.parameters():
        w.requires_grad_(False)
    net.in_shape = SHAPE
    return net


def image_of(model, k, seed=0):
    """An image the model predicts as class k (a random image pushed towards it)."""
    g = torch.Generator().manual_seed(seed)
    x, _ = modeconn.optimize_point(model, torch.randn((1, *SHAPE), generator=g), k, steps=500)
    assert int(model(x).argmax()) == k
    return x[0]


def test_path_endpoints_are_exact_and_the_barrier_is_the_max(model):
    a, c = torch.rand(2, *SHAPE), torch.rand(2, *SHAPE)
    losses = modeconn.path_losses(model, a, c, [0, 2], steps=7)
    assert losses.shape == (2, 7)
    np.testing.assert_allclose(
        losses[:, 0], modeconn.cross_entropy(model, a, torch.tensor([0, 2])), rtol=1e-6
    )
    np.testing.assert_allclose(
        losses[:, -1], modeconn.cross_entropy(model, c, torch.tensor([0, 2])), rtol=1e-6
    )
    # the midpoint of 7 points is the mean image
    mid = modeconn.cross_entropy(model, (a + c) / 2, torch.tensor([0, 2]))
    np.testing.assert_allclose(losses[:, 3], mid, rtol=1e-5)
    b = modeconn.barrier(np.array([0.3, 1.5, 0.2, 0.9]))
    assert (b.max, b.argmax) == (1.5, 1) and b.gap == pytest.approx(1.5 - 0.9)


def test_linear_path_of_a_same_class_pair(model):
    a, c = image_of(model, 1, 0), image_of(model, 1, 1)
    losses, b = modeconn.linear_path(model, a, c, steps=50)
    assert len(losses) == 50 and b.max == losses.max() and b.gap >= 0


def test_projected_gradient_is_orthogonal_to_the_path():
    g, v = torch.randn(5, *SHAPE), torch.randn(5, *SHAPE)
    h = modeconn.project_out(g, v)
    dots = (h.flatten(1) * v.flatten(1)).sum(1)
    assert torch.allclose(dots, torch.zeros(5), atol=1e-5)
    removed = (g - h).flatten(1)  # what was taken away lies along v
    cos = (removed * v.flatten(1)).sum(1) / (removed.norm(dim=1) * v.flatten(1).norm(dim=1))
    assert torch.allclose(cos.abs(), torch.ones(5), atol=1e-5)


def test_bypass_lowers_the_barrier_point_and_reports_its_drift(model):
    a, c = image_of(model, 1, 0), image_of(model, 1, 1)
    mid = (a + c) / 2
    out = modeconn.bypass(model, a, c, mid, 1, steps=200, lr=0.01)
    before = float(modeconn.cross_entropy(model, mid[None], 1)[0])
    after = float(modeconn.cross_entropy(model, out.point, 1)[0])
    assert after < before
    move, v = (out.point[0] - mid).flatten(), (c - a).flatten()
    assert out.along[0] == pytest.approx(float(abs(move @ v) / (move.norm() * v.norm())), abs=1e-5)


def test_connect_adds_nodes_and_keeps_the_endpoints(model):
    a, c = image_of(model, 2, 0), image_of(model, 2, 3)
    route = modeconn.connect(model, a, c, [2], 2, points=20, steps=20)[0]
    assert len(route.curves) == 3 and len(route.nodes) == 4 and len(route.detours) == 2
    assert len(route.pixels) == 2 and all(v >= 0 for v in route.pixels)
    assert torch.equal(route.nodes[0], a) and torch.equal(route.nodes[-1], c)
    assert route.positions == sorted(route.positions)
    both = modeconn.connect(model, a, c, [2], 2, points=20, split="all", steps=20)[0]
    assert len(both.nodes) == 2 + 1 + 2  # one, then two new nodes
    none = modeconn.connect(model, a, c, [2], 2, points=20, tolerance=1e9, steps=20)[0]
    assert len(none.nodes) == 2 and none.curves[0] is none.curves[-1]


def test_a_round_that_skips_a_path_keeps_its_curve_and_updates_the_others(model):
    a = torch.stack([image_of(model, 2, 0), image_of(model, 2, 5)])
    c = torch.stack([image_of(model, 2, 3), image_of(model, 2, 6)])
    gaps = [modeconn.barrier(loss).gap for loss in modeconn.path_losses(model, a, c, 2, 20)]
    cut = float(np.mean(gaps))  # a tolerance between the two straight gaps
    assert min(gaps) < cut < max(gaps)
    routes = modeconn.connect(model, a, c, [2, 2], 1, points=20, tolerance=cut, steps=20)
    for route, gap in zip(routes, gaps):
        if gap <= cut:
            assert route.curves[1] is route.curves[0] and len(route.nodes) == 2
        else:  # its curve is the loss along its new segments, evaluated afresh
            fresh = [
                modeconn.path_losses(model, s[None], e[None], 2, 20)[0]
                for s, e in zip(route.nodes[:-1], route.nodes[1:])
            ]
            np.testing.assert_allclose(route.curves[1][1], np.concatenate(fresh), rtol=1e-5)


def test_a_run_draws_the_same_pairs_from_its_seed_and_others_from_another():
    labels = np.repeat(np.arange(4), 10)
    keep = np.ones(40, dtype=bool)
    same = modeconn.real_pairs(labels, keep, 8, 3), modeconn.real_pairs(labels, keep, 8, 3)
    assert np.array_equal(*same)
    assert not np.array_equal(same[0], modeconn.real_pairs(labels, keep, 8, 4))
    chosen, sources = modeconn.attack_pairs(labels, keep, 8, 3)
    assert (labels[chosen[:, 0]] == labels[chosen[:, 1]]).all()
    assert (labels[sources] != labels[chosen[:, 0]]).all()


def test_feature_visualization_lowers_the_loss(model):
    g = torch.Generator().manual_seed(0)
    start = 0.01 * torch.randn((3, *SHAPE), generator=torch.Generator().manual_seed(0))
    x, ce = modeconn.feature_visualization(model, [0, 1, 2], SHAPE, steps=300, generator=g)
    assert x.shape == (3, *SHAPE)
    before = modeconn.cross_entropy(model, start, torch.tensor([0, 1, 2])).numpy()
    assert (ce < before).all() and (ce < 0.1).all()
    np.testing.assert_allclose(
        ce, modeconn.cross_entropy(model, x, torch.tensor([0, 1, 2])).numpy(), rtol=1e-5
    )


def test_free_optimisation_stops_below_its_threshold(model):
    x, ce = modeconn.optimize_point(
        model, 0.1 * torch.ones(2, *SHAPE), [0, 1], steps=1000, threshold=0.05
    )
    assert (ce < 0.05).all()


def test_adversarial_example_is_predicted_as_the_target(model):
    source = torch.rand(SHAPE, generator=torch.Generator().manual_seed(5))
    target = (int(model(source[None]).argmax()) + 1) % 3
    adv, ce = modeconn.adversarial(model, source, target, stop=0.05, steps=500, lr=0.05)
    before = float(modeconn.cross_entropy(model, source[None], target)[0])
    assert int(model(adv).argmax()) == target and ce[0] < before
    assert not torch.equal(adv[0], source)


def test_postprocess_drops_the_two_most_mismatched_pairs_per_class():
    classes = [0, 0, 0, 0, 1, 1, 1, 2]
    loss1 = [0.1, 0.5, 0.2, 0.0, 1.0, 1.0, 1.0, 0.3]
    loss2 = [0.1, 0.0, 0.9, 0.1, 1.1, 3.0, 0.5, 0.0]
    # |diff|: class 0 -> 0, 0.5, 0.7, 0.1 (drop 0.7 and 0.5); class 1 -> 0.1, 2, 0.5
    # (drop 2 and 0.5); class 2 has one pair, dropped
    keep = modeconn.drop_mismatched(classes, loss1, loss2)
    assert keep.tolist() == [True, False, False, True, True, False, False, False]


def test_largest_pixel_change_of_a_bypass(model):
    a, c = image_of(model, 1, 0), image_of(model, 1, 1)
    route = modeconn.connect(model, a, c, [1], 1, points=20, steps=30)[0]
    b = (1 - route.positions[1]) * a + route.positions[1] * c  # the barrier point
    expected = float((route.nodes[1] - b).abs().max() / b.abs().max())
    assert route.pixels[0] == pytest.approx(expected, rel=1e-4)


def test_compare_barriers_pairs_the_two_sets():
    classes = [0, 0, 0, 1, 1, 1]
    flat = np.array([[0.1, 0.1, 0.1]] * 6)
    climb = np.array([[0.1, 1.0, 0.1]] * 6)
    climb[0, -1] = 5.0  # pair 0 the most mismatched in class 0 of the second set
    cmp = modeconn.compare_barriers(classes, flat, climb, drop=1)
    # ties drop the later pair: the flat set drops pairs 2 and 5
    assert cmp.kept.tolist() == [False, True, False, True, True, False]
    np.testing.assert_allclose(cmp.within_gap, 0.0)
    np.testing.assert_allclose(cmp.adversarial_gap[1:], 0.9)
    assert cmp.adversarial_max[0] == 5.0 and cmp.adversarial_gap[0] == 0.0


def test_auc_on_hand_made_scores():
    # adversarial 0.25 beats 2 of 3 within scores, 0.4 beats all 3: 5 of 6 pairs
    assert modeconn.detection_auc([0.1, 0.2, 0.3], [0.25, 0.4]) == pytest.approx(5 / 6)
    assert modeconn.detection_auc([0.1], [0.1]) == pytest.approx(0.5)
    assert np.isnan(modeconn.detection_auc([], [0.3]))


def test_bad_input_gives_one_line_errors(model):
    a, b = image_of(model, 0, 0), image_of(model, 1, 0)
    with pytest.raises(ParameterError, match="predicted as class 0 and C as class 1"):
        modeconn.linear_path(model, a, b)
    with pytest.raises(ParameterError, match="steps must be an int >= 2"):
        modeconn.linear_path(model, a, a, steps=1)
    with pytest.raises(ParameterError, match="rounds must be an int >= 0"):
        modeconn.connect(model, a, a, [0], -1)
    with pytest.raises(ParameterError, match=r"accepts images of shape \(1, 4, 4\)"):
        modeconn.path_losses(model, torch.zeros(1, 5, 5), torch.zeros(1, 5, 5), 0)
    with pytest.raises(ParameterError, match="must be a tensor"):
        modeconn.path_losses(model, torch.zeros(16), torch.zeros(16), 0)
    for message in (str(e) for e in [ParameterError("x")]):
        assert "\n" not in message


def test_pairs_are_same_class_and_disjoint():
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(3), 6)
    keep = np.ones(18, dtype=bool)
    keep[0] = False
    pairs = modeconn.class_pairs(labels, keep, 7, rng)
    assert len(pairs) == 7 and (labels[pairs[:, 0]] == labels[pairs[:, 1]]).all()
    assert len(np.unique(pairs)) == 14 and 0 not in pairs
    sources = modeconn.other_class_sources(labels, keep, labels[pairs[:, 0]], rng)
    assert (labels[sources] != labels[pairs[:, 0]]).all()
    a, c = modeconn.interpolated_pairs(
        torch.arange(18.0).view(18, 1, 1, 1), labels, keep, pairs, rng
    )
    assert a.shape == (7, 1, 1, 1) and not torch.equal(a, c)


def test_figures_build(model):
    a, c = image_of(model, 2, 0), image_of(model, 2, 3)
    route = modeconn.connect(model, a, c, [2], 2, points=10, split="all", steps=10)[0]
    fig = modeconn.rounds_figure(route, "rounds")
    assert len(fig.data) == 3
    fig = modeconn.paths_figure({"real": [np.ones(5)] * 2, "synthetic": [np.ones(5)]}, "t")
    assert len(fig.data) == 3
    stats = {"max": np.array([1.0, 2.0]), "gap": np.array([0.1, 0.2])}
    assert (
        len(modeconn.barriers_figure({"within class": stats, "adversarial": stats}, "b").data) == 2
    )
    assert len(modeconn.sensitivity_figure(stats, stats, "s").data) == 2
    fig = modeconn.explorer_figure(route, [x.numpy() for x in route.nodes], "e")
    assert len(fig.data) == 2 + len(route.nodes)
