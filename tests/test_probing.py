"""iclr25.chapters.probing: GridPG, the grid builder, B-cos layers, probes and losses."""

import numpy as np
import pytest
import torch

from iclr25.chapters import probing
from iclr25.core import ParameterError


def test_gridpg_on_hand_made_maps():
    # all the mass inside cell 1 (top right) of a 2x2 grid of 8x8 cells: 1
    amap = torch.zeros(16, 16)
    amap[2:6, 10:14] = 1.0
    for smoothing in (None, "avg", "gauss"):
        assert probing.gridpg(amap, torch.tensor([1]), 2, smoothing)[0] == pytest.approx(1.0)
        assert probing.gridpg(amap, torch.tensor([0]), 2, smoothing)[0] < 0.05
    # a uniform map: a quarter in every cell, smoothing or not (symmetry)
    uniform = torch.ones(16, 16)
    for cell in range(4):
        score = probing.gridpg(uniform, torch.tensor([cell]), 2, "avg")[0]
        assert score == pytest.approx(0.25)
    assert probing.gridpg(torch.ones(18, 18), torch.tensor([4]), 3, None)[0] == pytest.approx(1 / 9)
    # negative attribution elsewhere is ignored: still all the positive mass
    signed = -torch.ones(16, 16)
    signed[2:6, 2:6] = 1.0
    assert probing.gridpg(signed, torch.tensor([0]), 2, None)[0] == pytest.approx(1.0)
    # half the positive mass in cell 3
    half = torch.zeros(16, 16)
    half[12, 12], half[3, 3] = 1.0, 1.0
    assert probing.gridpg(half, torch.tensor([3]), 2, None)[0] == pytest.approx(0.5)


def test_gridpg_refuses_non_square_maps():
    with pytest.raises(ParameterError, match="square"):
        probing.gridpg(torch.ones(16, 12), torch.tensor([0]), 2)


def test_grid_builder_puts_class_k_in_cell_k_and_refuses_repeats():
    images = [torch.full((1, 4, 4), float(k)) for k in range(4)]
    grid = probing.make_grid(images, [5, 2, 0, 3])
    assert grid.shape == (1, 8, 8)
    # cell k (row k // 2, column k % 2) holds image k
    for k in range(4):
        r, c = divmod(k, 2)
        assert torch.all(grid[0, 4 * r : 4 * r + 4, 4 * c : 4 * c + 4] == k)
    nine = probing.make_grid([torch.full((1, 3, 3), float(k)) for k in range(9)], range(9))
    assert nine.shape == (1, 9, 9) and nine[0, 8, 8] == 8 and nine[0, 3, 0] == 3
    with pytest.raises(ParameterError, match="distinct"):
        probing.make_grid(images, [1, 2, 1, 3])
    with pytest.raises(ParameterError, match="4 \\(2x2\\) or 9"):
        probing.make_grid(images[:3], [0, 1, 2])
    with pytest.raises(ParameterError, match="square"):
        probing.make_grid([torch.zeros(1, 4, 5)] * 4, [0, 1, 2, 3])


def test_sampled_grids_match_their_classes():
    # image value = its class: each cell of each grid must show its own class
    x = torch.arange(6).float().repeat_interleave(3)[:, None, None, None].expand(-1, 1, 4, 4)
    pool = {c: torch.arange(3 * c, 3 * c + 3) for c in range(6)}
    grids, classes = probing.sample_grids(x, pool, 20, 2, np.random.default_rng(0))
    assert grids.shape == (20, 1, 8, 8) and classes.shape == (20, 4)
    for grid, cls in zip(grids, classes):
        assert len(set(cls.tolist())) == 4
        for k in range(4):
            r, c = divmod(k, 2)
            assert torch.all(grid[0, 4 * r : 4 * r + 4, 4 * c : 4 * c + 4] == cls[k])
    with pytest.raises(ParameterError, match="accepted: 2, 3"):
        probing.sample_grids(x, pool, 1, 4, np.random.default_rng(0))


def test_only_images_every_probe_gets_right_are_kept_most_confident_first():
    y = torch.tensor([0, 0, 0, 1, 1])
    right = torch.tensor([[0.9, 0.1], [0.6, 0.4], [0.99, 0.01], [0.2, 0.8], [0.3, 0.7]])
    other = right.clone()
    other[2] = torch.tensor([0.4, 0.6])  # the second probe gets image 2 wrong
    pool, lowest = probing.confident_pool([right, other], y, 1, 2, ("a", "b"))
    assert pool[0].tolist() == [0] and pool[1].tolist() == [3]
    assert lowest == pytest.approx(0.8)


def test_too_few_confident_classes_names_the_classes_short():
    y = torch.tensor([0, 1, 2, 0, 1, 2])
    probs = torch.eye(3)[torch.tensor([0, 1, 0, 0, 1, 0])]  # class 2 never right
    with pytest.raises(ParameterError, match="short: c"):
        probing.confident_pool([probs], y, 5, 3, ("a", "b", "c"))
    pool, lowest = probing.confident_pool([probs], y, 5, 2, ("a", "b", "c"))
    assert sorted(pool) == [0, 1] and lowest == pytest.approx(1.0)


def test_bcos_linear_on_a_hand_case_and_homogeneous():
    layer = probing.BcosLinear(2, 1, max_out=1)
    with torch.no_grad():
        layer.weight.copy_(torch.tensor([[3.0, 4.0]]))  # unit row (0.6, 0.8)
    # x = (1, 0): w.x = 0.6, |cos| = 0.6, out = 0.36
    assert layer(torch.tensor([[1.0, 0.0]])).item() == pytest.approx(0.36)
    maxout = probing.BcosLinear(2, 1, max_out=2)
    with torch.no_grad():
        maxout.weight.copy_(torch.tensor([[2.0, 0.0], [0.0, 5.0]]))
    # x = (3, 4): unit rows give 3 and 4, max-out 4, |cos| = 4 / 5: out = 3.2
    assert maxout(torch.tensor([[3.0, 4.0]])).item() == pytest.approx(3.2)
    torch.manual_seed(0)
    layer, x = probing.BcosLinear(7, 5), torch.randn(10, 7)
    for c in (0.5, 2.0, 13.0):
        torch.testing.assert_close(layer(c * x), c * layer(x), rtol=1e-5, atol=1e-6)


def test_bcos_explanation_mode_gives_the_exact_contribution_map():
    torch.manual_seed(1)
    mlp = probing.BcosMLP(6, 8, 3)
    f = torch.rand(1, 6, requires_grad=True)
    for module in (mlp.fc0, mlp.fc1):
        module.detach = True
    out = mlp(f)[0, 2]
    (grad,) = torch.autograd.grad(out, f)
    # W(x) x + the fixed logit bias is the output itself
    assert (grad * f).sum().item() + mlp.logit_bias.item() == pytest.approx(out.item(), rel=1e-5)


def test_probe_training_leaves_the_backbone_unchanged():
    torch.manual_seed(0)
    backbone = probing.Backbone(4).eval()
    for parameter in backbone.parameters():
        parameter.requires_grad_(False)
    before = {k: v.clone() for k, v in backbone.state_dict().items()}
    x, y = torch.rand(64, 1, 16, 16), torch.randint(0, 3, (64,))
    features = probing.pooled(backbone, x)
    probe = probing.train_probe(features, y, "mlp2", "bce", seed=0, max_iter=25, width=8)
    model = probing.Probed(backbone, probe, probing.feature_scale(features))
    probing.attribute(model, "ixg", x[:4], y[:4])
    for k, v in backbone.state_dict().items():
        assert torch.equal(v, before[k]), k


@pytest.mark.parametrize("loss", ["ce", "bce", 0.5])
@pytest.mark.parametrize("kind", probing.PROBES)
def test_both_losses_separate_toy_features(kind, loss):
    gen = torch.Generator().manual_seed(0)
    y = torch.randint(0, 3, (300,), generator=gen)
    centres = 3 * torch.eye(3, 5) + 1.0
    features = centres[y] + 0.3 * torch.randn(300, 5, generator=gen)
    probe = probing.train_probe(features, y, kind, loss, seed=0, max_iter=200, width=16)
    with torch.no_grad():
        accuracy = (probe(features).argmax(1) == y).float().mean().item()
    assert accuracy > 0.95


@pytest.mark.parametrize("loss", ["ce", "bce"])
def test_a_linear_probe_is_trained_to_the_optimum(loss):
    # overlapping classes: the convex loss has a finite minimum, where the gradient vanishes
    gen = torch.Generator().manual_seed(1)
    y = torch.randint(0, 3, (400,), generator=gen)
    features = torch.eye(3, 4)[y] + 0.8 * torch.randn(400, 4, generator=gen)
    probe = probing.train_probe(features, y, "linear", loss, seed=0, tol=1e-9)
    assert probe.fit["stopped"] == "converged" and probe.fit["iterations"] < 1000
    probe.zero_grad()
    probing.probe_loss(probe(features), y, loss).backward()
    gradient = torch.cat([q.grad.ravel() for q in probe.parameters()])
    assert gradient.abs().max().item() < 1e-4
    # with a validation set, the weights kept are the best-validation ones seen
    val = (features[:100] + 0.5, y[:100])
    early = probing.train_probe(features, y, "linear", loss, seed=0, val=val, tol=1e-9)
    assert early.fit["stopped"] in ("converged", "validation")
    with torch.no_grad():
        assert (
            probing.probe_loss(early(val[0]), val[1], loss)
            <= probing.probe_loss(probe(val[0]), val[1], loss) + 1e-6
        )


def test_receptive_field_of_the_last_convolution():
    # 3x3 conv: 3; max-pool 2: 4; 3x3 conv: 8; 3x3 conv: 12 (pool after conv 2: 18)
    assert probing.receptive_field(probing.Backbone(4, pools=1)) == 12
    assert probing.receptive_field(probing.Backbone(4, pools=2)) == 18
    backbone = probing.Backbone(4, pools=1)
    assert backbone.last_conv is backbone.features[-3]
    assert backbone(torch.rand(2, 1, 32, 32)).shape == (2, 16)


def test_bce_uses_the_official_uniform_off_labels():
    # targets 1 for the true class, 1/K for the others (UniformOffLabelsBCEWithLogitsLoss)
    logits, y = torch.randn(6, 5), torch.tensor([0, 1, 2, 3, 4, 0])
    target = torch.full((6, 5), 0.2)
    target[torch.arange(6), y] = 1.0
    expected = torch.nn.functional.binary_cross_entropy_with_logits(logits, target)
    assert probing.probe_loss(logits, y, "bce").item() == pytest.approx(expected.item())


def test_per_grid_means_and_the_swap_contrast():
    scores = np.arange(8.0)  # two grids of four cells
    assert probing.per_grid(scores, 4).tolist() == [1.5, 5.5]
    rng = np.random.default_rng(0)
    big = 0.2 + 0.01 * rng.standard_normal((4, 40))  # loss swaps that move GridPG
    none = 0.01 * rng.standard_normal((4, 40))  # backbone swaps that do not
    contrast = probing.swap_contrast(big, none)
    oracle = np.abs(big.mean(1)).mean() - np.abs(none.mean(1)).mean()
    assert contrast == pytest.approx(oracle) and 0.18 < contrast < 0.22
    # signs do not cancel between swaps: the size of each swap's effect counts
    mixed = big * np.array([1, -1, 1, -1])[:, None]
    assert probing.swap_contrast(mixed, none) == pytest.approx(contrast)
    assert probing.swap_contrast(none, big) == pytest.approx(-contrast)
    with pytest.raises(ValueError, match="one shape"):
        probing.swap_contrast(big, none[:3])


def test_gridpg_over_runs_reads_each_runs_mean_over_grids():
    runs = [np.full(18, 0.3), np.full(18, 0.5), np.full(18, 0.4)]  # 2 grids of 9 each
    estimate = probing.summarise_runs(runs, 9)
    assert estimate.value == pytest.approx(0.4) and estimate.unit == "runs"
    assert estimate.n == 3 and estimate.items == 6 and estimate.low < 0.4 < estimate.high


def test_simclr_views_keep_the_digit_upright():
    """No flip or rotation: a view of an image is closer to it than to its mirror."""
    x = torch.zeros(64, 1, 16, 16)
    x[:, :, 2:14, 3:6] = 1.0  # a bar on the left
    views = probing.augment(x, torch.Generator().manual_seed(0))
    left, right = views[..., :8].mean((1, 2, 3)), views[..., 8:].mean((1, 2, 3))
    assert views.shape == x.shape and bool((left > right).all())


def test_the_loss_mixture_interpolates_ce_and_bce():
    logits, y = torch.randn(8, 4), torch.randint(0, 4, (8,))
    ce, bce = probing.probe_loss(logits, y, "ce"), probing.probe_loss(logits, y, "bce")
    assert probing.probe_loss(logits, y, 0.25).item() == pytest.approx(
        (0.75 * ce + 0.25 * bce).item()
    )


def test_unknown_names_give_one_line_errors_naming_the_accepted():
    with pytest.raises(ParameterError, match="unknown probe 'svm'; accepted: linear"):
        probing.make_probe("svm", 4, 3)
    with pytest.raises(ParameterError, match="unknown loss 'mse'; accepted: ce, bce"):
        probing.loss_weight("mse")
    with pytest.raises(ParameterError, match="unknown method 'shap'; accepted: ixg"):
        probing.parse_methods("ixg,shap")
    bcos = probing.make_probe("bcos2", 16, 3)
    model = probing.Probed(probing.Backbone(4).eval(), bcos, torch.ones(16))
    with pytest.raises(ParameterError, match="unknown method"):
        probing.attribute(model, "occlusion", torch.rand(1, 1, 8, 8), torch.tensor([0]))
    with pytest.raises(ParameterError, match="does not apply"):
        probing.attribute(model, "lrp", torch.rand(1, 1, 8, 8), torch.tensor([0]))


def test_every_method_runs_and_gridpg_is_a_share():
    torch.manual_seed(0)
    backbone = probing.Backbone(4).eval()
    x, y = torch.rand(32, 1, 16, 16), torch.randint(0, 4, (32,))
    features = probing.pooled(backbone, x)
    grids = torch.stack([probing.make_grid(list(x[4 * i : 4 * i + 4]), range(4)) for i in range(2)])
    classes = torch.tensor([[0, 1, 2, 3], [3, 2, 1, 0]])
    for kind in ("linear", "bcos2"):
        probe = probing.train_probe(features, y, kind, "bce", seed=0, max_iter=25, width=8)
        model = probing.Probed(backbone, probe, probing.feature_scale(features))
        scores = probing.evaluate_probe(
            model,
            grids,
            classes,
            probing.methods_for(kind),
            costly_grids=1,
            ig_steps=4,
            lime_samples=20,
        )
        assert set(scores) == set(probing.methods_for(kind))
        for method, s in scores.items():
            expected = 4 if method in ("ig", "lime") else 8
            assert s.shape == (expected,) and np.all((s >= 0) & (s <= 1 + 1e-9)), method
