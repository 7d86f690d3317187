"""Recommending from the Knowledge Benchmark Graph (Liu, Di et al., ICLR 2025): the
official "local" and "global" recommendations, the personalised PageRank, the
leave-one-dataset-out evaluation with its baselines and oracle, and the official
correctness test of the similarity (``eval_error_probability``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from iclr25.chapters.kbg.method import ACTIVATIONS, SIM_WEIGHTS, check_weight
from iclr25.chapters.kbg.store import Store
from iclr25.core import ParameterError

# ---------------------------------------------------------------------------------
# Recommendation (official "local" and "global") and personalised PageRank
# ---------------------------------------------------------------------------------


def _minmax(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, float)
    span = v.max() - v.min()
    return (v - v.min()) / span if span > 0 else np.ones_like(v)


def recommend_local(
    neighbours: pd.DataFrame, facts: pd.DataFrame, *, top_models: int = 5
) -> pd.DataFrame:
    """Official "local": for each similar dataset (``neighbours``: dataset, similarity),
    its ``top_models`` best architectures with performance min-max scaled among them;
    similarity min-max scaled over all rows; score = (similarity + performance) / 2.
    Rows sorted by score (ties: higher performance first); the first is the pick.
    A constant column scales to 1 (the official code divides by zero)."""
    rows = []
    for dataset, sim in zip(neighbours["dataset"], neighbours["similarity"]):
        top = facts[facts["dataset"] == dataset].nlargest(top_models, "value", keep="first")
        rows.append(top.assign(similarity=sim, perf=_minmax(top["value"].to_numpy())))
    table = pd.concat(rows, ignore_index=True)
    table["similarity_scaled"] = _minmax(table["similarity"].to_numpy())
    table["score"] = (table["similarity_scaled"] + table["perf"]) / 2
    return table.sort_values(["score", "value"], ascending=False, kind="stable")


def perf_score(facts: pd.DataFrame) -> pd.Series:
    """Official ``perf_score`` per fact: (value + rank / count + 1 - (max - value) / max) / 3
    within its dataset (rank ascending, ties averaged)."""
    g = facts.groupby("dataset")["value"]
    rank = g.rank(method="average") / g.transform("count")
    top = 1 - (g.transform("max") - facts["value"]) / g.transform("max")
    return (facts["value"] + rank + top) / 3


def recommend_global(neighbours: pd.DataFrame, facts: pd.DataFrame) -> pd.DataFrame:
    """Official "global": weighted score = perf_score x similarity, averaged per
    architecture over the similar datasets, sorted descending."""
    sims = dict(zip(neighbours["dataset"], neighbours["similarity"]))
    f = facts[facts["dataset"].isin(sims)].copy()
    f["weighted_score"] = perf_score(f) * f["dataset"].map(sims)
    out = f.groupby("arch", sort=True)["weighted_score"].mean().reset_index()
    return out.sort_values("weighted_score", ascending=False, kind="stable")


def personalised_pagerank(sim: pd.DataFrame, target: str, alpha: float = 0.9) -> pd.Series:
    """Official ``calculate_complex_dataset_similarity``: PageRank on the complete
    directed graph of datasets weighted by similarity, restarting at ``target``."""
    import networkx as nx

    g = nx.DiGraph()
    g.add_nodes_from(sim.index)
    for a in sim.index:
        for b in sim.columns:
            if a != b:
                g.add_edge(a, b, weight=float(sim.loc[a, b]))
    rank = nx.pagerank(
        g, alpha=alpha, personalization={n: float(n == target) for n in g}, max_iter=1000
    )
    return pd.Series(rank).sort_values(ascending=False)


# ---------------------------------------------------------------------------------
# Leave-one-dataset-out evaluation
# ---------------------------------------------------------------------------------


def percentile(values: pd.Series, arch: str) -> float:
    """Where ``arch`` stands among all architectures on a dataset: 100 for the best,
    0 for the worst (average ranks for ties)."""
    from scipy.stats import rankdata

    ranks = pd.Series(rankdata(values.to_numpy()), index=values.index)
    return float(100 * (ranks[arch] - 1) / max(len(values) - 1, 1))


def check_target(
    store_names: Sequence[str], held_out: str, sources: Sequence[str], top_k: int
) -> None:
    """One-line errors for an unknown dataset, a held-out dataset among the sources, and
    a top-k beyond the sources."""
    for name in [held_out, *sources]:
        if name not in store_names:
            raise ParameterError(f"unknown dataset {name!r}; accepted: {', '.join(store_names)}")
    if held_out in sources:
        raise ParameterError(
            f"held-out dataset {held_out!r} is among the training datasets; accepted: "
            "sources without it"
        )
    if not 1 <= top_k <= len(sources):
        raise ParameterError(
            f"top_k={top_k} is beyond the {len(sources)} datasets with facts; accepted: "
            f"1 to {len(sources)}"
        )


def recommend(
    store: Store,
    held_out: str,
    sources: Sequence[str],
    *,
    top_k: int = 3,
    top_models: int = 5,
    w: float = 1.0,
    activation: str = "gower",
    style: str = "local",
) -> pd.DataFrame:
    """Recommend architectures for ``held_out`` from the KBG, reading only the facts of
    ``sources`` (the Cypher queries ``NEIGHBOURS_QUERY`` and ``FACTS_QUERY``)."""
    check_target(store.datasets(), held_out, sources, top_k)
    check_weight(w)
    neighbours = store.neighbours(held_out, sources, top_k, w=w, activation=activation)
    if neighbours.empty:
        raise ParameterError(
            f"no similarities stored for w={w:g}, activation "
            f"{activation!r}; accepted: w in {SIM_WEIGHTS}, activation "
            f"in {ACTIVATIONS}"
        )
    facts = store.facts(sources)
    if style == "local":
        return recommend_local(neighbours, facts, top_models=top_models)
    if style == "global":
        return recommend_global(neighbours, facts)
    raise ParameterError(f"style {style!r}; accepted: 'local', 'global'")


GLOBAL_K = 2
"""Similar datasets the global recommendation reads in the authors' evaluation
(``eval_init_recommendation_global(name, 2, 40, ...)``)."""


def kendall_matrix(table: pd.DataFrame) -> pd.DataFrame:
    """Kendall tau between the architecture rankings of every pair of datasets
    (``table``: datasets x architectures)."""
    from scipy.stats import kendalltau

    names = list(table.index)
    out = pd.DataFrame(1.0, index=names, columns=names)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            tau = kendalltau(table.loc[a], table.loc[b]).statistic
            out.loc[a, b] = out.loc[b, a] = 0.0 if np.isnan(tau) else tau
    return out


def leave_one_out(
    store: Store,
    table: pd.DataFrame,
    *,
    top_k: int,
    top_models: int,
    w: float,
    activation: str,
    global_k: int = GLOBAL_K,
) -> pd.DataFrame:
    """For each held-out dataset: the percentile and regret of the top-1 pick of each
    method. ``table`` (datasets x architectures, all facts) is read for the truth on the
    held-out dataset, for the oracle (the global style over the ``global_k`` datasets of
    highest true Kendall tau, weighted by tau) and nowhere else; the KBG methods read
    the store's facts of the other datasets only."""
    tau = kendall_matrix(table)
    sim = similarity_from_store(store, list(table.index), w=w, activation=activation)
    similar = dict(w=w, activation=activation)
    rows = []
    for held in table.index:
        sources = [d for d in table.index if d != held]
        truth = table.loc[held]
        facts = store.facts(sources)
        ppr = personalised_pagerank(sim, held).drop(held).head(top_k)
        ppr_nb = pd.DataFrame({"dataset": ppr.index, "similarity": ppr.to_numpy()})
        oracle = tau.loc[held, sources].sort_values(ascending=False).head(global_k)
        oracle_nb = pd.DataFrame({"dataset": oracle.index, "similarity": oracle.to_numpy()})
        ranks = facts.pivot(index="dataset", columns="arch", values="value").rank(axis=1)
        lists = {
            "KBG global": recommend(
                store, held, sources, top_k=global_k, style="global", **similar
            ),
            "KBG local": recommend(
                store, held, sources, top_k=top_k, top_models=top_models, **similar
            ),
            "KBG local, PageRank": recommend_local(ppr_nb, facts, top_models=top_models),
            "oracle": recommend_global(oracle_nb, facts),
        }
        picks = {method: ranked["arch"].iloc[0] for method, ranked in lists.items()}
        picks["global best"] = ranks.mean().sort_values(ascending=False, kind="stable").index[0]
        for method, arch in picks.items():
            rows.append(
                dict(
                    dataset=held,
                    method=method,
                    arch=arch,
                    percentile=percentile(truth, arch),
                    regret=float(truth.max() - truth[arch]),
                )
            )
        rows.append(
            dict(
                dataset=held,
                method="random",
                arch="",
                percentile=float(np.mean([percentile(truth, a) for a in truth.index])),
                regret=float(truth.max() - truth.mean()),
            )
        )
    return pd.DataFrame(rows)


EPSILONS = tuple(np.round(np.arange(0.01, 0.105, 0.01), 2))
"""The official sweep of the transfer tolerance epsilon."""


def top_diff(values: pd.Series) -> pd.Series:
    """Official ``perf_top_diff``: 1 - (max - value) / max = value / max on a dataset."""
    return 1 - (values.max() - values) / values.max()


def error_probability(
    source: pd.Series, target: pd.Series, *, top_models: int, epsilon: float
) -> float:
    """Official ``eval_error_probability``: among the source dataset's ``top_models``
    best architectures by ``perf_top_diff``, the share whose ``perf_top_diff`` on the
    target falls by at most ``epsilon`` (source - target <= epsilon)."""
    src, tgt = top_diff(source), top_diff(target)
    best = src.sort_values(ascending=False, kind="stable").index[:top_models]
    return float(np.mean(src[best] - tgt[best] <= epsilon))


def error_curve(source: pd.Series, target: pd.Series, *, top_models: int) -> np.ndarray:
    """The error probability at every epsilon of ``EPSILONS``."""
    return np.array(
        [error_probability(source, target, top_models=top_models, epsilon=e) for e in EPSILONS]
    )


def transfer_probabilities(
    sim: pd.DataFrame, table: pd.DataFrame, *, top_models: int
) -> pd.DataFrame:
    """For each target dataset: the error probability averaged over ``EPSILONS`` from
    its most similar dataset (``nearest``) and from the mean of all other datasets
    (``any``, a randomly chosen source)."""
    rows = []
    for t in table.index:
        others = [d for d in table.index if d != t]
        curves = {d: error_curve(table.loc[d], table.loc[t], top_models=top_models) for d in others}
        near = sim.loc[t, others].sort_values(ascending=False, kind="stable").index[0]
        rows.append(
            dict(
                dataset=t,
                neighbour=near,
                nearest=float(curves[near].mean()),
                any=float(np.mean([c.mean() for c in curves.values()])),
            )
        )
    return pd.DataFrame(rows)


def similarity_from_store(
    store: Store, names: Sequence[str], *, w: float, activation: str
) -> pd.DataFrame:
    """The similarity matrix as stored (SIMILAR edges for this w and activation)."""
    edges = store.query(
        "MATCH (a:Dataset)-[s:SIMILAR]->(b:Dataset) WHERE s.w = $w AND "
        "s.activation = $act RETURN a.name AS a, b.name AS b, s.score AS score",
        {"w": float(w), "act": activation},
    )
    sim = edges.pivot(index="a", columns="b", values="score").reindex(index=names, columns=names)
    return sim.fillna(1.0)


def similarity_vs_tau(sim: pd.DataFrame, tau: pd.DataFrame) -> pd.DataFrame:
    """One row per unordered pair of datasets: similarity and Kendall tau."""
    names = list(sim.index)
    return pd.DataFrame(
        [
            dict(a=a, b=b, similarity=sim.loc[a, b], tau=tau.loc[a, b])
            for i, a in enumerate(names)
            for b in names[i + 1 :]
        ]
    )
