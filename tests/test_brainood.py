"""iclr25.chapters.brainood: the generator, the graphs, BrainOOD's parts and the baselines."""

import numpy as np
import pandas as pd
import pytest
import torch
from torch_geometric.loader import DataLoader
from torch_geometric.nn import InstanceNorm

from iclr25 import core
from iclr25.chapters import brainood
from iclr25.core import stats


@pytest.fixture(scope="module")
def cohort():
    return brainood.generate(180, 20, seed=3)


@pytest.fixture(scope="module")
def splits(cohort):
    return brainood.split(cohort, 4, 5, seed=3)


# --- the generator ------------------------------------------------------------------


def test_planted_connectivity_differs_by_label(cohort):
    conn = brainood.planted_connectivity(cohort)
    patients, controls = conn[cohort.y == 1], conn[cohort.y == 0]
    gap = patients.mean() - controls.mean()
    se = np.sqrt(patients.var() / len(patients) + controls.var() / len(controls))
    assert gap > 5 * se
    # the rest of the network does not carry the label
    other = brainood.Cohort(cohort.corr, cohort.y, cohort.site, ~cohort.planted)
    rest = brainood.planted_connectivity(other)
    assert abs(rest[cohort.y == 1].mean() - rest[cohort.y == 0].mean()) < gap / 4


def test_site_classifier_is_at_chance_at_shift_zero_and_not_at_shift_one():
    for shift, expect_chance in ((0.0, True), (1.0, False)):
        c = brainood.generate(360, 20, shift=shift, seed=1)
        controls = c.y == 0  # one label, so that prevalence cannot tell the site
        sub = brainood.Cohort(c.corr[controls], c.y[controls], c.site[controls], c.planted)
        acc, chance = brainood.site_classifier_accuracy(sub)
        if expect_chance:
            assert acc < chance + 0.1
        else:
            assert acc > chance + 0.4


def test_drift_moves_a_share_of_the_planted_rois_per_site():
    pop = brainood.population(30, n_planted=6, seed=0)
    rng = np.random.default_rng(0)
    shared = brainood.sample_site(pop, 1.0, rng)
    np.testing.assert_array_equal(shared.planted, pop.planted)
    moved = brainood.sample_site(pop, 1.0, rng, drift=0.5)
    assert moved.planted.sum() == 6 and (moved.planted & pop.planted).sum() == 3
    # drift 0 leaves the default cohorts as they were
    a = brainood.generate(36, 12, seed=2)
    b = brainood.generate(36, 12, drift=0.0, seed=2)
    np.testing.assert_array_equal(a.corr, b.corr)


def test_site_accuracy_is_accuracy_per_site(splits):
    model = brainood.make_model(brainood.METHODS["ERM"], 20).eval()
    graphs = splits.ood_val + splits.ood_test
    per_site = brainood.site_accuracy(model, graphs)
    assert per_site.shape == (2,)
    np.testing.assert_allclose(
        per_site,
        [brainood.accuracy(model, splits.ood_val), brainood.accuracy(model, splits.ood_test)],
    )


def test_training_sites_tie_prevalence_to_site_and_held_out_sites_do_not(cohort):
    prevalence = [cohort.y[cohort.site == s].mean() for s in range(6)]
    np.testing.assert_allclose(prevalence[:4], [0.8, 0.2, 0.8, 0.2], atol=0.02)
    np.testing.assert_allclose(prevalence[4:], [0.5, 0.5], atol=0.02)


def test_graphs_keep_the_top_edge_ratio_of_absolute_correlation(cohort):
    graphs = brainood.to_graphs(cohort.corr[:3], cohort.y[:3], cohort.site[:3], 0.2)
    n_pairs = 20 * 19 // 2
    for g, c in zip(graphs, cohort.corr[:3]):
        assert g.edge_index.shape[1] == 2 * round(0.2 * n_pairs)
        kept = np.zeros((20, 20), bool)
        kept[g.edge_index[0], g.edge_index[1]] = True
        assert (kept == kept.T).all() and not kept.diagonal().any()
        off = ~np.eye(20, dtype=bool)
        assert np.abs(c[kept]).min() >= np.abs(c[off & ~kept]).max()
        np.testing.assert_array_equal(g.x.numpy(), c)


def test_splits_are_good_style(cohort, splits):
    sites = lambda graphs: {int(g.site) for g in graphs}  # noqa: E731
    assert sites(splits.ood_val) == {4} and sites(splits.ood_test) == {5}
    assert sites(splits.train) == sites(splits.id_test) == {0, 1, 2, 3}
    n = len(splits.train) + len(splits.id_val) + len(splits.id_test)
    assert n + len(splits.ood_val) + len(splits.ood_test) == len(cohort.y)
    assert {int(g.env) for g in splits.train} == {0, 1, 2, 3}


# --- bad input ------------------------------------------------------------------------


def test_bad_input_gives_one_line_errors(cohort):
    c, y, s = cohort.corr[:2], cohort.y[:2], cohort.site[:2]
    with pytest.raises(core.ParameterError, match="different"):
        brainood.to_graphs([c[0], c[1][:10, :10]], y, s)
    asym = c.copy()
    asym[1, 0, 1] += 0.5
    with pytest.raises(core.ParameterError, match="subject 1 has an asymmetric"):
        brainood.to_graphs(asym, y, s)
    nan = c.copy()
    nan[0, 2, 3] = nan[0, 3, 2] = np.nan
    with pytest.raises(core.ParameterError, match="subject 0 has NaN"):
        brainood.to_graphs(nan, y, s)
    for ratio in (0.0, 1.5):
        with pytest.raises(core.ParameterError, match=r"outside \(0, 1\]"):
            brainood.to_graphs(c, y, s, edge_ratio=ratio)
    with pytest.raises(core.ParameterError, match=r"site\(s\) \[3\] are in both"):
        brainood.check_sites([0, 1, 2, 3], [3, 5])
    for err in (ValueError, core.ParameterError):
        assert issubclass(core.ParameterError, err)


# --- BrainOOD's parts ---------------------------------------------------------------


def test_feature_mask_is_symmetric_in_unit_interval():
    m = brainood.feature_mask(torch.randn(12, 12))
    assert torch.allclose(m, m.T)
    assert (m >= 0).all() and (m <= 1).all()


def test_alignment_is_zero_for_identical_graphs(cohort):
    graphs = brainood.to_graphs(np.repeat(cohort.corr[:1], 4, 0), [0, 1, 0, 1], [0] * 4)
    model = brainood.make_model(brainood.METHODS["BrainOOD"], 20).eval()
    batch = next(iter(DataLoader(graphs, batch_size=4)))
    with torch.no_grad():
        adj = brainood.dense_logits(model(batch), batch, 20)
        assert brainood.alignment_loss(adj).item() == pytest.approx(0.0, abs=1e-6)
        assert adj.abs().sum() > 0
        other = brainood.to_graphs(cohort.corr[:4], [0, 1, 0, 1], [0] * 4)
        b2 = next(iter(DataLoader(other, batch_size=4)))
        assert brainood.alignment_loss(brainood.dense_logits(model(b2), b2, 20)) > 0.01


def test_gib_is_zero_at_att_equal_r_and_positive_elsewhere():
    for r in (0.9, 0.7, 0.5):
        assert abs(brainood.gib_loss(torch.full((50,), r), r).item()) < 1e-4
        assert brainood.gib_loss(torch.full((50,), 0.2), r).item() > 0.1


def test_straight_through_is_binary_forward_identity_backward():
    p = torch.rand(500, requires_grad=True)
    b = brainood.straight_through(p)
    assert set(b.detach().unique().tolist()) <= {0.0, 1.0}
    (b * torch.arange(500.0)).sum().backward()
    np.testing.assert_allclose(p.grad.numpy(), np.arange(500.0))


def test_r_schedule():
    assert [brainood.r_schedule(e) for e in (0, 19, 20, 39, 40, 100)] == pytest.approx(
        [0.9, 0.9, 0.8, 0.8, 0.7, 0.7]
    )
    assert brainood.r_schedule(80, final_r=0.5) == pytest.approx(0.5)
    assert brainood.r_schedule(60, final_r=0.5) == pytest.approx(0.6)


def test_edge_masks_are_symmetrised(splits):
    model = brainood.make_model(brainood.METHODS["BrainOOD"], 20).train()
    batch = next(iter(DataLoader(splits.train, batch_size=8)))
    out = model(batch)
    rev = brainood.reverse_edges(batch.edge_index, batch.num_nodes)
    np.testing.assert_array_equal(
        batch.edge_index[:, rev].numpy(), batch.edge_index.flip(0).numpy()
    )
    torch.testing.assert_close(out["edge_att"], out["edge_att"][rev])
    assert not torch.allclose(out["att"], out["att"][rev])  # the raw draws are not


def test_fast_edge_layers_equal_the_library_ones(splits):
    z = torch.randn(6 * 40, 16)
    graph = torch.arange(6).repeat_interleave(40)
    torch.testing.assert_close(
        brainood.instance_norm_equal(z, 6), InstanceNorm(16)(z, graph), atol=1e-5, rtol=1e-5
    )
    ext = brainood.EdgeExtractor(20).eval()
    batch = next(iter(DataLoader(splits.train, batch_size=3)))
    emb = torch.randn(batch.num_nodes, 20)
    src, dst = batch.edge_index
    z = ext.lin[0](torch.cat([emb[src], emb[dst]], -1))
    for lin, norm in zip(ext.lin[1:], ext.norms):
        z = lin(torch.relu(norm(z, batch.batch[src])))
    torch.testing.assert_close(
        ext(emb, batch.edge_index, batch.batch), z.squeeze(-1), atol=1e-5, rtol=1e-5
    )


def test_fast_sums_and_dropout_are_bit_for_bit_the_library_ones(splits):
    """index_add_ sums each node's messages in the order scatter_add_ does, and a scaled
    mask at p = 0.5 gives z / (1 - p) exactly: the values and gradients are equal."""
    from torch_geometric.nn import GINConv

    batch = next(iter(DataLoader(splits.train, batch_size=3)))
    ours = brainood.VGINEncoder(20, 20).conv1
    library = GINConv(ours.nn)
    x = batch.x.clone().requires_grad_()
    out = ours(x, batch.edge_index)
    (grad,) = torch.autograd.grad(out.square().sum(), x)
    x.grad = None
    expected = library(x, batch.edge_index)
    assert torch.equal(out, expected)
    assert torch.equal(grad, torch.autograd.grad(expected.square().sum(), x)[0])
    z = torch.randn(500, 8, requires_grad=True)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        dropped = brainood.edge_dropout(z, 0.5, training=True)
        torch.manual_seed(0)
        divided = z * (torch.rand_like(z) >= 0.5) / 0.5
    assert torch.equal(dropped, divided)
    assert torch.equal(*(torch.autograd.grad(d.sum(), z)[0] for d in (dropped, divided)))
    assert brainood.edge_dropout(z, 0.5, training=False) is z


def test_rounds_average_binary_masked_passes(splits):
    batch = next(iter(DataLoader(splits.train, batch_size=8)))
    model = brainood.make_model(brainood.METHODS["BrainOOD"], 20).train()
    out = model(batch)
    assert out["logits"].shape == (8,)
    assert {"recon", "entropy", "att", "edge_att", "edge_logits"} <= set(out)
    loss = brainood.objective(brainood.METHODS["BrainOOD"], model, batch, 0)
    loss.backward()
    assert model.extractor.lin[0].weight.grad.abs().sum() > 0  # through the straight-through masks
    assert model.mask_emb.grad.abs().sum() > 0


def test_baseline_penalties(splits):
    batch = next(iter(DataLoader(splits.train, batch_size=64)))
    torch.manual_seed(0)
    model = brainood.make_model(brainood.METHODS["ERM"], 20).eval()
    losses = {
        name: brainood.objective(brainood.METHODS[name], model, batch, 0).item()
        for name in ("ERM", "IRM", "VREx", "GroupDRO")
    }
    assert losses["IRM"] >= losses["ERM"] and losses["VREx"] >= losses["ERM"]
    assert losses["GroupDRO"] == pytest.approx(losses["ERM"], abs=0.1)  # near-uniform group weights


def test_fit_predict_and_roi_recovery_run(splits, cohort):
    result = brainood.fit(brainood.METHODS["GSAT"], splits, epochs=2, batch_size=32, seed=0)
    assert len(result["ood_val_curve"]) == 2
    model = brainood.load(brainood.METHODS["GSAT"], 20, result["state"])
    p1, p2 = brainood.predict(model, splits.ood_test), brainood.predict(model, splits.ood_test)
    np.testing.assert_array_equal(p1, p2)
    dense, importance = brainood.edge_attention(model, splits.ood_test)
    assert dense.shape == (20, 20) and importance.shape == (20,)
    rec = brainood.roi_recovery(importance, cohort.planted)
    assert 0 <= rec["auroc"] <= 1 and 0 <= rec["precision_at_k"] <= 1
    perfect = brainood.roi_recovery(cohort.planted.astype(float), cohort.planted)
    assert perfect == {"auroc": 1.0, "precision_at_k": 1.0}


def test_figures(cohort):
    table = pd.DataFrame(
        {
            "method": ["ERM", "ERM"],
            "split": ["ID test", "OOD test"],
            "mean": [0.8, 0.7],
            "sd": [0.01, np.nan],
        }
    )
    fig = brainood.accuracy_figure(table)
    assert len(fig.data) == 2
    fig = brainood.structure_figure(np.eye(20), np.eye(20), cohort.planted)
    assert len(fig.data) == 3
    assert fig.data[2].z.sum() == cohort.planted.sum() * (cohort.planted.sum() - 1)
    gain = [stats.paired_difference([60.0, 62.0, 58.0], [55.0, 56.0, 57.0])] * 2
    fig = brainood.drift_figure([0.0, 1.0], {"ERM": [56, 50], "BrainOOD": [60, 49]}, gain)
    assert [t.name for t in fig.data] == ["ERM", "BrainOOD", "gain"]
    assert list(fig.data[2].error_y.array) == [gain[0].high - gain[0].value] * 2


def test_univariate_importance_is_the_node_strength_t_statistic():
    rng = np.random.default_rng(0)
    corr = np.tile(np.eye(4), (40, 1, 1))
    corr[:, 0, 1] = corr[:, 1, 0] = rng.normal(0, 0.05, 40)
    y = np.repeat([0, 1], 20)
    corr[y == 1, 2, 3] = corr[y == 1, 3, 2] = 0.5  # patients: ROIs 2 and 3 stronger
    t = brainood.univariate_importance(corr, y)
    assert t.shape == (4,) and t[2] == t[3] and t[2] > 10 > t[0]
    flipped = brainood.univariate_importance(corr, 1 - y)  # the sign is dropped
    np.testing.assert_allclose(flipped, t)
