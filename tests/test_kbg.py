"""iclr25.chapters.kbg: the official similarity on hand vectors, the Cypher store against
pandas, leave-one-out isolation, the generators' homophily, refused duplicates, errors."""

import types

import numpy as np
import pandas as pd
import pytest

from iclr25 import core
from iclr25.chapters import kbg


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR25_CACHE", str(tmp_path / "cache"))


def test_gower_on_hand_vectors_both_activations():
    t, b = np.array([0.0, 0.5]), np.array([1.0, 0.6])
    ones = np.ones(3)
    # |d| = (1, 0.1) -> capped at 0.8 -> mean(1 - (0.8, 0.1)) = 0.55
    assert kbg.pairwise_similarity(t, b, ones, ones) == pytest.approx(0.55)
    # power: (1, 0.1 ** (1/3)) -> (0.8, 0.4642) -> mean(0.2, 0.5358)
    expected = (0.2 + 1 - 0.1 ** (1 / 3)) / 2
    got = kbg.pairwise_similarity(t, b, ones, ones, activation="power")
    assert got == pytest.approx(expected)
    # w = 0.5 mixes in the Dice part: target all ones, bench matches 2 of 3 -> 0.8
    mixed = kbg.pairwise_similarity(t, b, ones, np.array([1, 0, 1]), w=0.5)
    assert mixed == pytest.approx(0.5 * 0.55 + 0.5 * 0.8)


def test_dice_on_hand_vectors():
    assert kbg.dice([1, 1, 1], [1, 0, 1]) == pytest.approx(0.8)
    assert kbg.dice([1, 0, 1, 0], [0, 1, 0, 1]) == 0.0
    assert kbg.dice([1, 1], [1, 1]) == 1.0
    with pytest.raises(ValueError, match="binary"):
        kbg.dice([0.5, 1], [1, 1])


def test_similarity_matrix_is_symmetric_and_one_on_the_diagonal():
    frame = pd.DataFrame(
        {
            "a": [0.0, 1.0, 3.0],
            "b": [5.0, 5.0, 5.0],
            "task": ["x"] * 3,
            "domain": ["p", "p", "q"],
            "label_type": ["s"] * 3,
        },
        index=["d1", "d2", "d3"],
    )
    sim = kbg.similarity_matrix(frame, w=0.5)
    np.testing.assert_allclose(sim.to_numpy(), sim.to_numpy().T)
    np.testing.assert_allclose(np.diag(sim), 1.0)
    # d1 vs d3: a scaled 0 vs 1 -> capped 0.8; b constant -> 0; Dice(1, [1, 0, 1]) = 0.8
    assert sim.loc["d1", "d3"] == pytest.approx(0.5 * (1 - 0.4) + 0.5 * 0.8)


def test_generator_homophily_matches_its_knob():
    for h in (0.15, 0.5, 0.85):
        spec = kbg.Spec("x", homophily=h, classes=4, degree=10.0)
        graph = kbg.make_graph(spec, 800, seed=1)
        assert kbg.edge_homophily(graph.edge_index, graph.y) == pytest.approx(h, abs=0.05)
        degree = graph.edge_index.shape[1] / graph.n
        assert degree == pytest.approx(10.0, rel=0.15)


def test_closure_raises_clustering_and_sizes_are_equal():
    import networkx as nx
    from torch_geometric.data import Data
    from torch_geometric.utils import to_networkx

    clustering = []
    for c in (0.0, 0.5):
        g = kbg.make_graph(kbg.Spec("x", homophily=0.85, closure=c), 400, seed=1)
        nxg = to_networkx(Data(edge_index=g.edge_index, num_nodes=g.n), to_undirected=True)
        clustering.append(nx.average_clustering(nxg))
    assert clustering[1] > clustering[0] + 0.05


def test_suite_draws_its_knobs_at_the_seed():
    suite = kbg.draw_suite(0)
    assert [s.name for s in suite] == list(kbg.NAMES) and len(suite) == kbg.SUITE_SIZE == 48
    assert suite == kbg.draw_suite(0) and suite != kbg.draw_suite(1000)
    for s in suite:
        assert 0.1 <= s.homophily <= 0.9 and 2 <= s.degree <= 12 and 2 <= s.classes <= 6
        assert s.tail >= 1.5 and s.closure == pytest.approx(kbg.closure_for(s.homophily), abs=1e-3)
    assert (
        kbg.closure_for(0.15) == 0 and kbg.closure_for(0.5) == 0.25 and kbg.closure_for(0.9) == 0.5
    )


def test_every_generator_gives_a_split_graph():
    for spec in kbg.draw_suite(0):
        g = kbg.make_graph(spec, 120, seed=0)
        assert (g.train.int() + g.val.int() + g.test.int() == 1).all()
        assert g.x.shape == (g.n, kbg.FEATURES) and g.edge_index.max() < g.n


def test_error_probability_follows_the_official_definition():
    source = pd.Series({"a": 1.0, "b": 0.9, "c": 0.5})
    target = pd.Series({"a": 0.5, "b": 1.0, "c": 0.9})
    # top_diff: source (1, 0.9, 0.5), target (0.5, 1, 0.9); top 2 of the source: a, b
    # drops: a 0.5, b -0.1 -> within 0.05: b only
    assert kbg.error_probability(source, target, top_models=2, epsilon=0.05) == 0.5
    assert kbg.error_probability(source, target, top_models=2, epsilon=0.5) == 1.0
    assert kbg.error_curve(source, source, top_models=3).tolist() == [1.0] * 10


def _bench(values: dict[tuple[str, str], float]) -> dict:
    names = sorted({d for d, _ in values})
    archs = sorted({a for _, a in values})
    rng = np.random.default_rng(0)
    descriptions = {}
    for i, d in enumerate(names):
        desc = {
            f: float(rng.uniform())
            for f in kbg.DatasetDescription.__dataclass_fields__
            if f not in kbg.CATEGORICAL
        }
        desc |= {"task": "Node Classification", "domain": "D" + str(i % 2), "label_type": "Single"}
        descriptions[d] = desc
    facts = {"dataset": [], "arch": [], "value": [], "seed": [], "seconds": []}
    for (d, a), v in values.items():
        for k, x in zip(facts, (d, a, v, 0, 0.1)):
            facts[k].append(x)
    return {"facts": facts, "descriptions": descriptions, "archs": archs}


@pytest.fixture
def values():
    rng = np.random.default_rng(3)
    return {
        (d, a): float(rng.uniform())
        for d in ("d0", "d1", "d2", "d3", "d4")
        for a in kbg.architectures(["gcn", "fc"])
    }


def _store(tmp_path, bench, name="db"):
    folder = tmp_path / name
    folder.mkdir()
    kbg.build_store(folder, bench)
    return kbg.Store(folder)


def test_cypher_top_k_equals_a_pandas_sort(tmp_path, values):
    bench = _bench(values)
    store = _store(tmp_path, bench)
    sources = ["d1", "d2", "d3", "d4"]
    got = store.neighbours("d0", sources, 3, w=0.5, activation="power")
    sim = kbg.similarity_matrix(
        kbg.description_frame(bench["descriptions"]), w=0.5, activation="power"
    )
    want = sim.loc["d0", sources].sort_values(ascending=False).head(3)
    assert list(got["dataset"]) == list(want.index)
    np.testing.assert_allclose(got["similarity"], want.to_numpy())
    facts = store.facts(["d2"])
    top = facts.sort_values("value", ascending=False).head(2)
    cypher = store.query(
        "MATCH (d:Dataset {name: $d})-[p:PERFORMANCE]->(a:Architecture) "
        "RETURN a.name AS arch, p.value AS value ORDER BY value DESC LIMIT 2",
        {"d": "d2"},
    )
    assert list(cypher["arch"]) == list(top["arch"])
    store.close()


def test_duplicate_facts_are_refused(tmp_path, values):
    folder = tmp_path / "db"
    folder.mkdir()
    kbg.build_store(folder, _bench(values))
    store = kbg.Store(folder, read_only=False)
    with pytest.raises(ValueError, match="duplicate fact"):
        store.add_fact("d0", "gcn-fc", 0.5)
    store.add_fact("d0", "gcn-fc", 0.5, seed=1)  # another seed is another fact
    got = store.facts(["d0"]).set_index("arch")["value"]["gcn-fc"]
    assert got == pytest.approx((values[("d0", "gcn-fc")] + 0.5) / 2)  # mean over seeds
    store.close()


def test_leave_one_out_never_reads_held_out_facts(tmp_path, values):
    changed = {k: (1 - v if k[0] == "d0" else v) for k, v in values.items()}
    stores = [_store(tmp_path, _bench(v), name) for v, name in ((values, "a"), (changed, "b"))]
    sources = ["d1", "d2", "d3", "d4"]
    picks = []
    for store in stores:
        for style in ("local", "global"):
            picks.append(
                list(kbg.recommend(store, "d0", sources, top_k=2, w=1.0, style=style)["arch"])
            )
        read = pd.concat([f for *_, f in store.log if "dataset" in f.columns])
        assert "d0" not in set(read["dataset"])
        store.close()
    assert picks[:2] == picks[2:]


def test_local_recommendation_follows_the_official_score():
    nb = pd.DataFrame({"dataset": ["a", "b"], "similarity": [0.9, 0.6]})
    facts = pd.DataFrame(
        {
            "dataset": ["a"] * 3 + ["b"] * 3,
            "arch": ["x", "y", "z", "x", "y", "z"],
            "value": [0.5, 0.7, 0.6, 0.9, 0.1, 0.2],
        }
    )
    rec = kbg.recommend_local(nb, facts, top_models=2)
    # a: y (perf 1), z (0); b: x (1), z (0); similarity a -> 1, b -> 0
    assert list(zip(rec["dataset"], rec["arch"])) == [
        ("a", "y"),
        ("b", "x"),
        ("a", "z"),
        ("b", "z"),
    ]
    assert list(rec["score"]) == [1.0, 0.5, 0.5, 0.0]


def test_global_recommendation_follows_the_official_score():
    nb = pd.DataFrame({"dataset": ["a", "b"], "similarity": [1.0, 0.5]})
    facts = pd.DataFrame(
        {
            "dataset": ["a", "a", "b", "b"],
            "arch": ["x", "y", "x", "y"],
            "value": [0.8, 0.4, 0.2, 1.0],
        }
    )
    # perf_score on a: x (0.8 + 1 + 1) / 3, y (0.4 + 0.5 + 0.5) / 3; on b: x (0.2 + 0.5
    # + 0.2) / 3, y (1 + 1 + 1) / 3; weighted mean: x (2.8 + 0.45) / 6, y (1.4 + 1.5) / 6
    rec = kbg.recommend_global(nb, facts)
    assert list(rec["arch"]) == ["x", "y"]
    np.testing.assert_allclose(rec["weighted_score"], [3.25 / 6, 2.9 / 6])


def test_leave_one_out_reads_the_global_style_at_k(tmp_path, values):
    store = _store(tmp_path, _bench(values))
    table = pd.Series(values).unstack()
    loo = kbg.leave_one_out(store, table, top_k=3, top_models=2, w=1.0, activation="power")
    got = loo[loo["method"] == "KBG global"].set_index("dataset")["arch"]
    for held in table.index:
        sources = [d for d in table.index if d != held]
        want = kbg.recommend(
            store, held, sources, top_k=kbg.GLOBAL_K, activation="power", style="global"
        )
        assert got[held] == want["arch"].iloc[0]
    assert set(loo["method"]) == {
        "KBG global",
        "KBG local",
        "KBG local, PageRank",
        "oracle",
        "global best",
        "random",
    }
    store.close()


def test_percentile_and_pagerank():
    values = pd.Series({"a": 0.1, "b": 0.5, "c": 0.9})
    assert [kbg.percentile(values, k) for k in "abc"] == [0.0, 50.0, 100.0]
    sim = pd.DataFrame(
        [[1, 0.9, 0.1], [0.9, 1, 0.1], [0.1, 0.1, 1]], index=list("xyz"), columns=list("xyz")
    )
    rank = kbg.personalised_pagerank(sim, "x")
    assert list(rank.index) == ["x", "y", "z"]


def test_bad_input_gives_one_line_errors(tmp_path, values):
    store = _store(tmp_path, _bench(values))
    with pytest.raises(core.ParameterError, match="unknown dataset 'nope'"):
        kbg.recommend(store, "nope", ["d1"], top_k=1)
    with pytest.raises(core.ParameterError, match="among the training datasets"):
        kbg.recommend(store, "d0", ["d0", "d1"], top_k=1)
    with pytest.raises(core.ParameterError, match="beyond the 2 datasets"):
        kbg.recommend(store, "d0", ["d1", "d2"], top_k=3)
    with pytest.raises(core.ParameterError, match=r"\[0, 1\]"):
        kbg.recommend(store, "d0", ["d1", "d2"], top_k=1, w=1.5)
    store.close()
    with pytest.raises(core.ParameterError, match="unknown operation|accepted"):
        core.validate(kbg.PARAMETERS, {"ops": "gcn,transformer"})
    with pytest.raises(core.ParameterError, match="accepted"):
        core.validate(kbg.PARAMETERS, {"w": 1.2})
    with pytest.raises(core.ParameterError, match="accepted"):
        core.validate(kbg.PARAMETERS, {"focus": "cora"})
    p = types.SimpleNamespace(
        **core.validate(kbg.PARAMETERS, {"n_datasets": 3, "top_k": 3, "focus": kbg.NAMES[0]})
    )
    with pytest.raises(core.ParameterError, match="top_k=3 is beyond"):
        kbg.settings(p)


def test_training_learns_and_the_space_has_81_architectures():
    assert len(kbg.architectures(kbg.OPS)) == 81
    graph = kbg.make_graph(
        kbg.Spec("x", classes=5, degree=10.0, homophily=0.85, closure=0.5), 400, seed=0
    )
    for arch in ("gcn-sage", "cheb-arma", "graph-gin", "gat-skip", "fc-fc"):
        r = kbg.train_architecture(graph, arch, epochs=30)
        assert r["value"] > 1.5 / graph.classes  # well above chance


def test_description_is_label_free():
    graph = kbg.make_graph(kbg.draw_suite(0)[0], 120, seed=0)
    first = kbg.describe(graph)
    graph.y = graph.y[np.random.default_rng(0).permutation(graph.n)]
    assert kbg.describe(graph) == first


def test_figures_build():
    table = pd.DataFrame([[0.1, 0.2], [0.3, 0.4]], index=["a", "b"], columns=["x", "y"])
    assert kbg.heatmap(table, "t").data[0].z.shape == (2, 2)
    loo = pd.DataFrame(
        {
            "dataset": ["a", "a"],
            "method": ["m1", "m2"],
            "arch": ["x", "y"],
            "percentile": [50.0, 100.0],
        }
    )
    assert len(kbg.percentile_figure(loo, "t").data) == 2
    nb = pd.DataFrame({"dataset": ["a"], "similarity": [0.9]})
    rec = pd.DataFrame({"dataset": ["a"], "arch": ["x"], "value": [0.8], "score": [1.0]})
    assert "pick x" in kbg.neighbours_figure("b", nb, rec, "x").layout.title.text
