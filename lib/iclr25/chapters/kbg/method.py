"""The method of the Knowledge Benchmark Graph (Liu, Di et al., ICLR 2025): the
label-free dataset descriptions and the similarity between datasets (official
``GraphDatasetUnderstanding`` and ``pairwise_similarity``). The recommendations that
read them are in ``recommend.py``; the package's docstring (:mod:`iclr25.chapters.kbg`)
gives the equations."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from iclr25.core import ParameterError

if TYPE_CHECKING:
    from iclr25.chapters.kbg.data import Graph


# ---------------------------------------------------------------------------------
# Label-free dataset descriptions
# ---------------------------------------------------------------------------------

CATEGORICAL = ("task", "domain", "label_type")


@dataclass
class DatasetDescription:
    """What the official ``GraphDatasetUnderstanding`` computes, without the labels:
    whole-graph statistics, "local" ones averaged over sampled 2-hop subgraphs,
    feature dimension, classes, and three categorical relations."""

    node_count: float
    edge_count: float
    average_degree: float
    density: float
    average_clustering_coefficient: float
    connected_components: float
    assortativity: float
    average_degree_centrality: float
    average_eigenvector_centrality: float
    local_average_shortest_path_length: float
    local_graph_diameter: float
    local_average_closeness_centrality: float
    local_average_betweenness_centrality: float
    node_feature: float
    num_classes: float
    task: str
    domain: str
    label_type: str


def _nan_safe(f: Callable[[], float]) -> float:
    try:
        value = float(f())
    except Exception:  # noqa: BLE001 - networkx raises several kinds on odd graphs
        return float("nan")
    return value


def _path_statistics(h: Any) -> tuple[float, float, np.float64]:
    """networkx's ``average_shortest_path_length``, ``diameter`` and mean
    ``closeness_centrality`` of the connected graph ``h``, from one breadth-first search
    per node instead of one per statistic: the distances are integers, and each
    statistic is then reduced with networkx's own arithmetic, in its node order."""
    import networkx as nx
    from scipy.sparse.csgraph import shortest_path

    nodes = list(h)
    n = len(nodes)
    if n == 1:
        return 0.0, 0.0, np.float64(0.0)
    hops = shortest_path(nx.to_scipy_sparse_array(h, nodelist=nodes), unweighted=True)
    totals = [int(t) for t in hops.sum(1)]  # exact: integer distances in float64
    closeness = [(n - 1) / t for t in totals]  # connected: no Wasserman-Faust factor
    return sum(totals) / (n * (n - 1)), float(hops.max()), np.mean(closeness)


def describe(
    graph: Graph, samples: int = 10, hops: int = 2, seed: int = 0, pivots: int = 32
) -> DatasetDescription:
    """The label-free description of ``graph``. Local metrics average over ``samples``
    2-hop subgraphs around distinct random nodes (the official sampler re-seeds before
    each draw, so its 20 subgraphs are one subgraph 20 times); betweenness is estimated
    from ``pivots`` source nodes (exact on subgraphs no larger)."""
    import networkx as nx
    from torch_geometric.data import Data
    from torch_geometric.utils import k_hop_subgraph, to_networkx

    g = to_networkx(Data(edge_index=graph.edge_index, num_nodes=graph.n), to_undirected=True)
    largest = lambda h: h.subgraph(max(nx.connected_components(h), key=len))  # noqa: E731
    rng = np.random.default_rng(seed)
    centres = rng.choice(graph.n, size=min(samples, graph.n), replace=False)
    local: dict[str, list[float]] = {k: [] for k in ("sp", "diam", "close", "betw")}
    for c in centres:
        nodes, *_ = k_hop_subgraph(int(c), hops, graph.edge_index, num_nodes=graph.n)
        h = largest(g.subgraph(nodes.tolist()))
        for key, value in zip(("sp", "diam", "close"), _path_statistics(h)):
            local[key].append(value)
        k = min(pivots, h.number_of_nodes())
        local["betw"].append(np.mean(list(nx.betweenness_centrality(h, k=k, seed=seed).values())))
    return DatasetDescription(
        node_count=g.number_of_nodes(),
        edge_count=g.number_of_edges(),
        average_degree=2 * g.number_of_edges() / g.number_of_nodes(),
        density=nx.density(g),
        average_clustering_coefficient=nx.average_clustering(g),
        connected_components=nx.number_connected_components(g),
        assortativity=_nan_safe(lambda: nx.degree_assortativity_coefficient(g)),
        average_degree_centrality=float(np.mean(list(nx.degree_centrality(g).values()))),
        average_eigenvector_centrality=_nan_safe(
            lambda: np.mean(list(nx.eigenvector_centrality(g, max_iter=1000).values()))
        ),
        local_average_shortest_path_length=float(np.nanmean(local["sp"])),
        local_graph_diameter=float(np.nanmean(local["diam"])),
        local_average_closeness_centrality=float(np.mean(local["close"])),
        local_average_betweenness_centrality=float(np.mean(local["betw"])),
        node_feature=graph.x.shape[1],
        num_classes=graph.classes,
        task="Node Classification",
        domain=graph.spec.domain,
        label_type="Single",
    )


# ---------------------------------------------------------------------------------
# Similarity (official pairwise_similarity, "gower")
# ---------------------------------------------------------------------------------

ACTIVATIONS = ("gower", "power")

SIM_WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)
"""The numerical weights w of the similarity whose values the store keeps."""


def dice(a: np.ndarray, b: np.ndarray) -> float:
    """Dice similarity of two 0/1 vectors: 2 |a and b| / (|a| + |b|)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if not (np.isin(a, (0, 1)).all() and np.isin(b, (0, 1)).all()):
        raise ValueError("dice needs binary (0/1) vectors")
    total = a.sum() + b.sum()
    return float(2 * (a * b).sum() / total) if total else float("nan")


def pairwise_similarity(
    target_num: np.ndarray,
    bench_num: np.ndarray,
    target_cat: np.ndarray,
    bench_cat: np.ndarray,
    *,
    w: float = 1.0,
    activation: str = "gower",
    power: float = 1 / 3,
    upper: float = 0.8,
) -> float:
    """s = w mean(1 - min(f(|t - b|), upper)) + (1 - w) Dice(t_cat, b_cat), numeric
    parts min-max scaled; f is the identity (the code's default activation, "gower") or
    d ** power ("power")."""
    check_weight(w)
    if activation not in ACTIVATIONS:
        raise ParameterError(f"activation {activation!r}; accepted: {', '.join(ACTIVATIONS)}")
    d = np.abs(np.asarray(target_num, float) - np.asarray(bench_num, float))
    if activation == "power":
        d = np.power(d, power)
    numeric = float(np.mean(1 - np.minimum(d, upper)))
    return w * numeric + (1 - w) * dice(target_cat, bench_cat)


def check_weight(w: float) -> float:
    if not 0 <= w <= 1:
        raise ParameterError(f"numerical weight w={w!r}; accepted: a number in [0, 1]")
    return float(w)


def description_frame(descriptions: Mapping[str, DatasetDescription | Mapping]) -> pd.DataFrame:
    """Descriptions as a frame, one row per dataset."""
    rows = {
        k: (asdict(v) if isinstance(v, DatasetDescription) else dict(v))
        for k, v in descriptions.items()
    }
    return pd.DataFrame.from_dict(rows, orient="index")


def similarity_matrix(
    frame: pd.DataFrame, *, w: float = 1.0, activation: str = "gower"
) -> pd.DataFrame:
    """s(target row, bench column) for every pair: numeric columns NaN -> 0 and min-max
    scaled over all datasets (a constant column -> 0, where the official code gives NaN),
    categorical columns compared with the target's value."""
    numeric = frame.drop(columns=list(CATEGORICAL)).astype(float).fillna(0.0)
    span = (numeric.max() - numeric.min()).replace(0, np.inf)
    scaled = ((numeric - numeric.min()) / span).to_numpy()
    cats = frame[list(CATEGORICAL)].to_numpy()
    names = list(frame.index)
    out = np.zeros((len(names), len(names)))
    for i in range(len(names)):
        same = (cats == cats[i]).astype(float)
        for j in range(len(names)):
            out[i, j] = pairwise_similarity(
                scaled[i], scaled[j], same[i], same[j], w=w, activation=activation
            )
    return pd.DataFrame(out, index=names, columns=names)
