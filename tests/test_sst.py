"""iclr25.chapters.sst: masks and fills on hand-made tensors, the adversarial fill, the searches'
own sufficiency, the SST loss and clear errors."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from iclr25 import tabular, vision
from iclr25.chapters import sst


def linear_model(weights, bias=None) -> nn.Linear:
    """A fixed linear classifier over flat inputs."""
    weights = torch.as_tensor(weights, dtype=torch.float32)
    model = nn.Linear(weights.shape[1], weights.shape[0])
    with torch.no_grad():
        model.weight.copy_(weights)
        model.bias.copy_(torch.zeros(weights.shape[0]) if bias is None else torch.as_tensor(bias))
    return model


def small_mlp(seed=0, shape=(1, 4, 4)) -> vision.Classifier:
    torch.manual_seed(seed)
    return vision.build(vision.ModelConfig("mlp", shape, 3, width=16)).eval()


def test_mask_is_the_scores_passing_tau():
    scores = torch.tensor([[0.1, 0.5, 0.49, 0.9]])
    assert sst.explanation_mask(scores, 0.5).tolist() == [[False, True, False, True]]
    for bad in (0.0, 1.0, -0.2, 1.5):
        with pytest.raises(ValueError, match=r"tau must lie in \(0, 1\)"):
            sst.explanation_mask(scores, bad)


def test_fills_keep_the_explanation_and_change_only_the_complement():
    x = torch.tensor([[0.2, 0.9, 0.5, 0.0]])
    mask = torch.tensor([[True, False, True, False]])
    target = torch.tensor([0])
    model = linear_model([[1.0, -1.0, 0.5, 2.0], [0.0, 1.0, 0.0, -1.0]])
    z = sst.fill(model, x, mask, target, sst.Notion("baseline"))
    assert torch.equal(z, torch.tensor([[0.2, 0.0, 0.5, 0.0]]))
    g = torch.Generator().manual_seed(0)
    for kind, eps in (("probabilistic", 0.3), ("robust", 0.2)):
        notion = sst.Notion(kind, eps=eps, steps=5)
        z = sst.fill(model, x.repeat(200, 1), mask.repeat(200, 1), target.repeat(200), notion, g)
        assert torch.equal(z[:, mask[0]], x[:, mask[0]].repeat(200, 1))  # kept features untouched
        assert (z - x).abs().max() <= eps + 1e-6 and z.min() >= 0 and z.max() <= 1
        assert (z[:, ~mask[0]] != x[:, ~mask[0]]).any()
    with pytest.raises(ValueError, match="bool tensor of the input's shape"):
        sst.fill(model, x, mask[:, :2], target, sst.Notion())
    with pytest.raises(ValueError, match="unknown sufficiency notion 'zeros'"):
        sst.Notion("zeros")


def test_robust_fill_is_adversarial():
    # a trained classifier: the PGD fill lowers the margin of the predicted class more
    # than uniform noise of the same radius does
    data = vision.load("digits", 0)
    model = vision.build(vision.ModelConfig.for_data("mlp", data, width=32))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(60):
        opt.zero_grad()
        F.cross_entropy(model(data.train.x), data.train.y).backward()
        opt.step()
    model.eval()
    x = data.test.x[:100]
    target = model(x).argmax(-1).detach()
    mask = torch.rand(x.shape, generator=torch.Generator().manual_seed(1)) < 0.5

    def margin(z):
        logits = model(z).detach()
        other = logits.clone()
        other[torch.arange(len(z)), target] = -torch.inf
        return logits[torch.arange(len(z)), target] - other.amax(-1)

    g = torch.Generator().manual_seed(0)
    noisy = sst.fill(model, x, mask, target, sst.Notion("probabilistic", eps=0.2), g)
    attacked = sst.fill(model, x, mask, target, sst.Notion("robust", eps=0.2, steps=10), g)
    assert margin(attacked).mean() < margin(noisy).mean() - 1.0
    assert (margin(attacked) < margin(noisy)).float().mean() > 0.9
    assert (
        sst.survives(model, x, mask, target, sst.Notion("robust", eps=0.2), g).float().mean()
        < sst.survives(model, x, mask, target, sst.Notion("probabilistic", eps=0.2), g)
        .float()
        .mean()
    )


@pytest.mark.parametrize("method", sst.BASELINES)
@pytest.mark.parametrize("kind", sst.NOTIONS)
def test_each_search_returns_a_subset_sufficient_by_its_own_check(method, kind):
    # a two-class linear model on 4x4 inputs: the attack's worst case is a corner of the
    # box whatever its random start, so the robust check is deterministic too
    torch.manual_seed(3)
    model = nn.Sequential(nn.Flatten(), linear_model(torch.randn(2, 16), bias=[0.0, 1.0])).eval()
    x = torch.rand(1, 4, 4, generator=torch.Generator().manual_seed(2))
    target = int(model(x[None]).argmax())
    notion = sst.Notion(kind, eps=0.5, steps=10, draws=32, precision=0.9)
    mask = sst.posthoc(method, patch=2)(
        model, x, target, notion, generator=torch.Generator().manual_seed(0)
    )
    assert mask.shape == x.shape and mask.dtype == torch.bool
    assert not mask.all(), "the whole input is sufficient trivially; the search should do better"
    if method == "SIS":  # SIS searches under its own zero fill, whatever it is judged by
        notion = sst.SIS_FILL
        kind = "baseline"
    if method == "Anchors":  # whole 2x2 superpixels
        blocks = mask.view(4, 4).unfold(0, 2, 2).unfold(1, 2, 2).reshape(4, 4)
        assert ((blocks.sum(1) == 0) | (blocks.sum(1) == 4)).all()
    if kind != "probabilistic":  # deterministic checks: the subset passes when checked again
        assert bool(
            sst.sufficient(model, x, mask[None], target, notion, torch.Generator().manual_seed(9))[
                0
            ]
        )
    else:  # a fresh, larger sample agrees up to sampling error
        again = sst.outcomes(
            model,
            x,
            mask[None],
            target,
            sst.Notion(kind, eps=0.5, draws=2000),
            torch.Generator().manual_seed(9),
        ).precision
        assert float(again[0]) >= 0.85


def test_sis_is_sufficient_and_smaller_than_the_whole_input():
    model = linear_model([[3.0, 0.1, 0.1, 0.1], [0.0, 0.2, 0.2, 0.2]], bias=[0.0, 0.5])
    flat = nn.Sequential(nn.Flatten(), model)
    x = torch.ones(1, 1, 4)
    notion = sst.Notion("baseline")
    mask = sst.sis(flat, x, 0, notion)
    assert mask.flatten().tolist() == [True, False, False, False]  # x_0 alone keeps class 0
    assert bool(sst.sufficient(flat, x, mask[None], 0, notion)[0])


def test_smallest_prefix_can_be_empty():
    model = linear_model([[1.0, 1.0], [0.0, 0.0]], bias=[1.0, 0.0])  # class 0 at x = 0 too
    mask = sst.smallest_sufficient_prefix(
        model, torch.ones(2), torch.tensor([1, 0]), 0, sst.Notion("baseline")
    )
    assert not mask.any()


def test_sst_net_checks_shapes_and_explains_in_one_pass():
    net = sst.SSTNet(small_mlp(), (1, 4, 4))
    x = torch.rand(5, 1, 4, 4)
    logits, scores = net.predict_and_score(x)
    assert logits.shape == (5, 3) and scores.shape == x.shape
    assert ((scores > 0) & (scores < 1)).all()
    predicted, mask = net.explain(x, 0.5)
    assert torch.equal(predicted, logits.argmax(-1)) and torch.equal(mask, scores >= 0.5)
    with pytest.raises(ValueError, match=r"expects inputs of shape \(n, 1, 4, 4\), got \(5, 16\)"):
        net(x.view(5, 16))
    with pytest.raises(ValueError, match="tau must lie"):
        net.explain(x, 1.0)


def test_probabilistic_fill_is_one_sided_and_shared_in_training():
    x = torch.full((500, 1, 2, 2), 0.3)
    mask = torch.zeros_like(x, dtype=torch.bool)
    mask[:, 0, 0, 0] = True
    notion = sst.Notion("probabilistic", eps=0.4)
    target = torch.zeros(500, dtype=torch.long)
    g = torch.Generator().manual_seed(0)
    z = sst.fill(nn.Identity(), x, mask, target, notion, g)
    free = z[~mask].view(500, 3) - 0.3
    assert free.min() >= 0 and free.max() <= 0.4 + 1e-6  # x + eps U(0, 1): brighter only
    assert free.mean() == pytest.approx(0.2, abs=0.02)
    assert (z[:, 0, 0, 0] == 0.3).all()
    assert not torch.equal(z[0], z[1])  # a draw per input by default
    shared = sst.fill(nn.Identity(), x, mask, target, notion, g, shared=True)
    assert torch.equal(shared[0], shared[-1])  # one draw for the batch
    assert (shared[0][~mask[0]] != 0.3).all()


def test_superpixels_group_square_blocks():
    groups = sst.superpixels((1, 4, 4), 2)
    assert groups.view(4, 4).tolist() == [[0, 0, 1, 1], [0, 0, 1, 1], [2, 2, 3, 3], [2, 2, 3, 3]]
    assert torch.equal(sst.superpixels((2, 4, 4), 2).view(2, 16)[1], groups)  # shared channels
    assert torch.equal(sst.superpixels((1, 1, 13), 2), torch.arange(13))  # table rows
    assert torch.equal(sst.superpixels((1, 6, 6), 4), torch.arange(36))  # no clean split
    with pytest.raises(ValueError, match="patch must be a positive int"):
        sst.superpixels((1, 4, 4), 0)


def test_judge_rescores_sis_under_another_notion():
    # a model that reads only the sum of its inputs: SIS keeps one bright pixel under the
    # zero fill, which a noise fill of the complement does not keep
    model = nn.Sequential(nn.Flatten(), linear_model([[1.0] * 4, [-1.0] * 4], bias=[-0.5, 0.5]))
    x = torch.tensor([[[[1.0, 0.0, 0.0, 0.0]]]])
    mask = sst.sis(model, x[0], 0)
    assert mask.flatten().tolist() == [True, False, False, False]
    g = torch.Generator().manual_seed(0)
    found = sst.Explained(torch.tensor([0]), mask[None], 0.25, 1.0, 0.001, 0.001)
    flipped = sst.judge(model, x, found, sst.Notion("robust", eps=0.3, steps=5), g)
    # the attack darkens nothing it may not: the kept pixel stays, the rest stay >= 0
    assert flipped.faithfulness == 1.0 and flipped.size == 0.25
    assert flipped.kept.tolist() == [True] and flipped.sizes.tolist() == [0.25]
    linear = nn.Sequential(nn.Flatten(), linear_model([[1.0] * 4, [2.0] * 4], bias=[0.0, -1.2]))
    assert int(linear(x).argmax()) == 0
    noisy = sst.judge(linear, x, found, sst.Notion("probabilistic", eps=1.0), g)
    assert noisy.faithfulness == 0.0 and noisy.seconds == found.seconds


def test_sst_loss_terms_and_the_straight_through_gradient():
    net = sst.SSTNet(small_mlp(), (1, 4, 4))
    x, y = torch.rand(8, 1, 4, 4), torch.randint(0, 3, (8,))
    notion = sst.Notion("baseline")
    logits, scores = net.predict_and_score(x)
    z = torch.where(scores >= 0.5, x, torch.zeros_like(x))
    expected = (
        F.cross_entropy(logits, y)
        + F.cross_entropy(net(z), logits.argmax(-1))
        + 0.3 * scores.mean()
    )
    assert sst.SSTConfig().straight_through is False  # the official hard mask by default
    assert sst.sst_loss(net, x, y, 0.5, 0.3, notion).item() == pytest.approx(
        expected.item(), rel=1e-5
    )

    def explainer_grad(straight_through, gamma):
        net.zero_grad()
        sst.sst_loss(net, x, y, 0.5, gamma, notion, straight_through=straight_through).backward()
        return net.explainer.bias.grad.clone()

    # without the estimator the explanation head only feels the size term
    assert torch.allclose(explainer_grad(False, 0.0), torch.zeros(16))
    assert not torch.allclose(explainer_grad(True, 0.0), torch.zeros(16))


def test_sst_config_and_tabular_data():
    with pytest.raises(ValueError, match="tau must lie"):
        sst.SSTConfig(tau=0.0)
    with pytest.raises(ValueError, match="gamma >= 0"):
        sst.SSTConfig(gamma=-1.0)
    table = tabular.load("wine", 0)
    data = sst.as_images(table)
    assert data.shape == (1, 1, 13) and data.n_classes == 3 and data.spec == table.spec
    for name in vision.SPLITS:
        assert torch.equal(data.split(name).x.flatten(1), table.split(name).x)
        assert torch.equal(data.split(name).y, table.split(name).y)
    with pytest.raises(ValueError, match="unknown baseline 'LIME'"):
        sst.posthoc("LIME")


def test_compare_alternates_the_methods_and_scores_each_against_its_own_model():
    torch.manual_seed(0)
    net = sst.SSTNet(small_mlp(0), (1, 4, 4)).eval()
    normal = small_mlp(1)
    x = torch.rand(3, 1, 4, 4)
    notion = sst.Notion("baseline")
    calls = []

    def spy(name, explainer):
        def explain(xi):
            calls.append(name)
            return explainer(xi)

        return explain

    g = torch.Generator().manual_seed(0)
    found = sst.compare(
        {
            "SST": (net, spy("SST", sst.sst_explainer(net, 0.5))),
            "SIS": (normal, spy("SIS", sst.posthoc_explainer(normal, "SIS", notion, g))),
        },
        x,
        notion,
        g,
    )
    assert calls == ["SST", "SIS"] * 3  # input by input, the methods in turn
    predicted, masks = net.explain(x, 0.5)
    assert torch.equal(found["SST"].predicted, predicted) and torch.equal(found["SST"].masks, masks)
    assert found["SST"].size == pytest.approx(float(masks.float().mean()))
    assert torch.equal(found["SIS"].predicted, normal(x).argmax(-1))
    assert found["SIS"].faithfulness == 1.0  # SIS returns a subset sufficient by the check
    for r in found.values():
        assert r.seconds > 0 and r.cpu_seconds >= 0


def test_compare_scores_each_method_under_its_own_notion():
    torch.manual_seed(0)
    normal = small_mlp(1)
    x = torch.rand(4, 1, 4, 4)
    g = torch.Generator().manual_seed(0)
    robust = sst.Notion("robust", eps=0.5, steps=5)
    found = sst.compare(
        {
            "zero/SIS": (normal, sst.posthoc_explainer(normal, "SIS", sst.SIS_FILL, g)),
            "robust/SIS": (normal, sst.posthoc_explainer(normal, "SIS", robust, g)),
        },
        x,
        {"zero/SIS": sst.SIS_FILL, "robust/SIS": robust},
        g,
    )
    # the same subsets (SIS ignores the notion), judged by two fills
    assert torch.equal(found["zero/SIS"].masks, found["robust/SIS"].masks)
    assert found["zero/SIS"].faithfulness == 1.0
    again = sst.judge(normal, x, found["zero/SIS"], robust, g)
    assert torch.equal(again.masks, found["zero/SIS"].masks)
    assert 0.0 <= again.faithfulness <= 1.0


def test_slope_is_the_least_squares_slope():
    assert sst.slope([0, 1, 2, 3], [9.0, 7.0, 5.0, 3.0]) == pytest.approx(-2.0)
    assert sst.slope([1, 2, 4], [7.8, 7.8, 7.8]) == 0.0
    with pytest.raises(ValueError, match="equal length >= 2"):
        sst.slope([1, 2], [1.0])
    with pytest.raises(ValueError, match="xs not all equal"):
        sst.slope([1, 1], [1.0, 2.0])


def test_choose_gamma_takes_the_smallest_faithful_explanations_that_are_needed():
    v = sst.Validated
    scores = {
        0.5: v(0.10, 0.99, 0.9),
        1.0: v(0.05, 0.97, 0.9),
        2.0: v(0.05, 0.98, 0.9),
        4.0: v(0.01, 0.60, 0.9),
        8.0: v(0.0, 1.0, 0.0),  # empty masks: faithful, but explain nothing
    }
    assert sst.choose_gamma(scores, 0.95) == 2.0  # tie on size: the more faithful
    assert sst.choose_gamma(scores, 0.995) == 0.5  # none faithful enough: the most faithful
    unneeded = {g: v(s, f, 0.1) for g, (s, f, _) in scores.items()}
    assert sst.choose_gamma(unneeded, 0.95) == 8.0  # none needed: all compete
    with pytest.raises(ValueError, match="at least one gamma"):
        sst.choose_gamma({}, 0.9)


def test_needed_is_a_non_empty_mask_the_input_cannot_do_without():
    net = sst.SSTNet(small_mlp(), (1, 4, 4)).eval()
    x = torch.rand(6, 1, 4, 4)
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        net.explainer.weight.zero_()
        net.explainer.bias.fill_(-10.0)  # every score below tau: empty masks
    assert not sst.needed(net, x, 0.5, sst.Notion("baseline"), g).any()
    with torch.no_grad():
        net.explainer.bias.fill_(10.0)  # full masks: needed where a blank input changes it
        expected = net(x).argmax(-1) != net(torch.zeros_like(x)).argmax(-1)
    assert torch.equal(sst.needed(net, x, 0.5, sst.Notion("baseline"), g), expected)


def test_claims_rest_on_the_setup_claim_of_their_notion():
    for k in sst.NOTIONS:
        assert sst.CLAIMS[f"explains_{k}_st"].kind == "setup"
        for name in ("smaller", "faithful", "accuracy_kept"):
            if f"{name}_{k}_st" in sst.CLAIMS:
                assert sst.CLAIMS[f"{name}_{k}_st"].rests_on == (f"explains_{k}_st",)
    assert sst.CLAIMS["explains_official"].gap is not None
    # under the zero baseline SIS is faithful by construction: no claim against it
    assert "faithful_baseline_st" not in sst.CLAIMS


def explained(size, faithfulness, masks=None) -> sst.Explained:
    masks = torch.zeros(1, 1, 2, 2, dtype=torch.bool) if masks is None else masks
    return sst.Explained(torch.tensor([0]), masks, size, faithfulness, 0.001, 0.001)


def test_size_faithfulness_figure_has_a_panel_per_data_set_and_notion():
    results = {
        (d, k, m): explained(0.1 * i, 0.9)
        for d in ("digits", "wine")
        for k in ("baseline", "robust")
        for i, m in enumerate(sst.METHODS)
    }
    fig = sst.size_faithfulness_figure(results)
    assert len(fig.data) == 2 * 2 * len(sst.METHODS)
    assert [a.text for a in fig.layout.annotations] == [
        "digits, baseline",
        "digits, robust",
        "wine, baseline",
        "wine, robust",
    ]
    assert fig.data[1].x == (10.0,) and fig.data[1].y == (90.0,)
    assert [t.showlegend for t in fig.data].count(True) == len(sst.METHODS)
    assert fig.data[0].marker.symbol == "star" and fig.data[0].marker.color == "black"
    assert fig.layout.yaxis.title.text == "faithfulness (%)"


def test_explanations_figure_shows_the_image_and_each_methods_kept_pixels():
    image = torch.tensor([[0.1, 0.2], [0.3, 0.4]])
    mask = torch.tensor([[[[True, False], [False, False]]]])
    found = {
        (k, m): explained(0.25, float(m == "SST"), mask)
        for k in ("baseline", "robust")
        for m in ("SST", "SIS")
    }
    fig = sst.explanations_figure(image, found, "digit 0")
    assert len(fig.data) == 2 * 3 and fig.layout.title.text == "digit 0"
    assert [a.text for a in fig.layout.annotations][:3] == [
        "baseline fill",
        "SST: 1 px ✓",
        "SIS: 1 px ✗",
    ]
    kept = np.array(fig.data[1].z, dtype=float)  # drawn upside down: top row last
    assert kept[1, 0] == pytest.approx(0.1) and np.isnan(kept).sum() == 3
    assert fig.data[0].zmin is None and fig.data[1].zmax == 1
