"""The method of the Knowledge Benchmark Graph (Liu, Di et al., ICLR 2025).

The generated datasets, the design space and its training, the label-free dataset
descriptions, the similarity (official ``pairwise_similarity``), the recommendations
(official "local" and "global") and the personalised PageRank, and the
leave-one-dataset-out evaluation. The LLM step is in ``retrieval.py``, the store they
read in ``store.py``; the package's docstring (:mod:`iclr25.chapters.kbg`) gives the
equations.
"""

from __future__ import annotations

import math
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from iclr25.core import ParameterError

if TYPE_CHECKING:
    import torch

    from iclr25.chapters.kbg.store import Store

# ---------------------------------------------------------------------------------
# Datasets: generated node-classification graphs
# ---------------------------------------------------------------------------------

OPS = ("gcn", "gat", "sage", "gin", "cheb", "arma", "graph", "fc", "skip")
"""NAS-Bench-Graph's nine operations."""


@dataclass(frozen=True)
class Spec:
    """One generated dataset: a contextual degree-corrected block model whose knobs
    ``homophily``, ``degree``, ``tail`` (the Pareto index of the node weights; ``inf``
    gives equal weights) and ``classes`` move the architecture ranking, with triadic
    closure tied to homophily (``closure`` share of the edges close a triangle) so that
    clustering co-varies with it."""

    name: str
    domain: str = "Generated"
    classes: int = 4
    degree: float = 6.0
    homophily: float = 0.8
    tail: float = math.inf
    closure: float = 0.0
    signal: float = 1.0


SUITE_SIZE = 48
"""How many datasets a suite draws."""

NAMES = tuple(f"g{i + 1:02d}" for i in range(SUITE_SIZE))
"""The datasets' names, in the order the parameter ``n_datasets`` takes them."""

FEATURES = 16


def closure_for(homophily: float) -> float:
    """The share of triangle-closing edges tied to homophily: 0 up to 0.15, rising
    linearly to 0.5 at 0.85 and beyond, as clustered social graphs are homophilous."""
    return float(np.clip((homophily - 0.15) / 1.4, 0.0, 0.5))


def draw_suite(seed: int) -> tuple[Spec, ...]:
    """``SUITE_SIZE`` datasets with continuous knobs drawn at ``seed``: homophily
    ~ U(0.1, 0.9), mean degree ~ U(2, 12), the inverse Pareto index 1 / tail ~ U(0,
    1 / 1.5) (from equal weights to a heavy tail), classes uniform on 2..6. Near
    neighbours in knob space can then share what moves the ranking, as Cora and
    CiteSeer do, without any two datasets being twins."""
    rng = np.random.default_rng([seed, zlib.crc32(b"suite")])
    h = rng.uniform(0.1, 0.9, SUITE_SIZE)
    d = rng.uniform(2.0, 12.0, SUITE_SIZE)
    inverse_tail = rng.uniform(0.0, 1 / 1.5, SUITE_SIZE)
    k = rng.integers(2, 7, SUITE_SIZE)
    return tuple(
        Spec(
            name,
            classes=int(k[i]),
            degree=round(float(d[i]), 2),
            homophily=round(float(h[i]), 3),
            tail=round(float(1 / inverse_tail[i]), 2) if inverse_tail[i] > 0 else math.inf,
            closure=round(closure_for(h[i]), 3),
        )
        for i, name in enumerate(NAMES)
    )


@dataclass
class Graph:
    """A node-classification graph: features, undirected edges, labels, split masks."""

    name: str
    x: torch.Tensor
    edge_index: torch.Tensor
    y: torch.Tensor
    train: torch.Tensor
    val: torch.Tensor
    test: torch.Tensor
    spec: Spec

    @property
    def n(self) -> int:
        return int(self.y.shape[0])

    @property
    def classes(self) -> int:
        return int(self.y.max()) + 1


def edge_homophily(edge_index: torch.Tensor, y: torch.Tensor) -> float:
    """The share of edges whose two ends have the same label."""
    return float((y[edge_index[0]] == y[edge_index[1]]).float().mean())


def _structure(spec: Spec, nodes: int, rng: np.random.Generator) -> tuple[Any, np.ndarray]:
    """Edges and labels: ``(1 - closure) m`` block-model edges (one end drawn by weight,
    the other by weight within the same class with probability ``homophily``, else
    from another class), then up to ``closure m`` edges u-w closing a path u-v-w of
    a random block edge u-v when w is in u's class; m = n d / 2. Weights are
    Pareto(tail) + 1 draws, or 1 for an infinite tail."""
    import torch
    from torch_geometric.utils import coalesce, to_undirected

    k = spec.classes
    y = np.repeat(np.arange(k), nodes // k)
    n = len(y)
    theta = rng.pareto(spec.tail, n) + 1 if math.isfinite(spec.tail) else np.ones(n)
    prob = theta / theta.sum()
    m = int(round(n * spec.degree / 2))
    m_block = int(round(m * (1 - spec.closure)))
    u = rng.choice(n, size=m_block, p=prob)
    same = rng.random(m_block) < spec.homophily
    v = np.full(m_block, -1)
    todo = np.arange(m_block)
    while len(todo):  # rejection: draw by weight until the class condition holds
        cand = rng.choice(n, size=len(todo), p=prob)
        ok = ((y[cand] == y[u[todo]]) == same[todo]) & (cand != u[todo])
        v[todo[ok]] = cand[ok]
        todo = todo[~ok]
    neighbours: list[list[int]] = [[] for _ in range(n)]
    for a, b in zip(u, v):
        neighbours[a].append(b)
        neighbours[b].append(a)
    closing = []
    for e in rng.integers(m_block, size=m - m_block):  # close u-v-w where w shares u's class
        a, b = (u[e], v[e]) if rng.random() < 0.5 else (v[e], u[e])
        w = neighbours[b][rng.integers(len(neighbours[b]))]
        if w != a and y[w] == y[a]:
            closing.append((a, w))
    pairs = np.concatenate([np.stack([u, v], 1), np.array(closing, dtype=int).reshape(-1, 2)])
    edges = to_undirected(torch.tensor(pairs.T, dtype=torch.long), num_nodes=n)
    return coalesce(edges, num_nodes=n), y


def make_graph(spec: Spec, nodes: int, seed: int) -> Graph:
    """Generate ``spec``: structure, Gaussian class features (random class means of norm
    ``spec.signal``, unit noise), and a fixed 50/25/25 train/val/test split."""
    import torch

    rng = np.random.default_rng([seed, zlib.crc32(spec.name.encode())])
    edges, labels = _structure(spec, nodes, rng)
    n, k = len(labels), int(labels.max()) + 1
    means = rng.standard_normal((k, FEATURES))
    means *= spec.signal / np.linalg.norm(means, axis=1, keepdims=True)
    x = means[labels] + rng.standard_normal((n, FEATURES))
    order = rng.permutation(n)
    masks = [np.zeros(n, bool) for _ in range(3)]
    cuts = [0, n // 2, (3 * n) // 4, n]
    for mask, lo, hi in zip(masks, cuts[:-1], cuts[1:]):
        mask[order[lo:hi]] = True
    train, val, test = (torch.tensor(m) for m in masks)
    return Graph(
        spec.name,
        torch.tensor(x, dtype=torch.float),
        edges.long(),
        torch.tensor(labels, dtype=torch.long),
        train,
        val,
        test,
        spec,
    )


# ---------------------------------------------------------------------------------
# The design space: pre-linear, two operations, classifier
# ---------------------------------------------------------------------------------


def parse_ops(text: str) -> tuple[str, ...]:
    """``"gcn,fc"`` -> ("gcn", "fc"); an unknown or repeated operation is an error."""
    ops = tuple(o.strip() for o in str(text).split(",") if o.strip())
    unknown = [o for o in ops if o not in OPS]
    if unknown or not ops or len(set(ops)) != len(ops):
        what = f"unknown operation {', '.join(unknown)}" if unknown else "empty or repeated"
        raise ValueError(
            f"operations {text!r}: {what}; accepted: distinct names from {', '.join(OPS)}"
        )
    return ops


def architectures(ops: Sequence[str]) -> list[str]:
    """Every architecture of two operations from ``ops``: "gcn-sage" is gcn, then sage."""
    return [f"{a}-{b}" for a in ops for b in ops]


def _op(name: str, hidden: int) -> torch.nn.Module:
    import torch
    from torch_geometric import nn as gnn

    if name == "gcn":
        return gnn.GCNConv(hidden, hidden, cached=True)
    if name == "gat":
        return gnn.GATConv(hidden, hidden, heads=1)
    if name == "sage":
        return gnn.SAGEConv(hidden, hidden)
    if name == "gin":
        mlp = torch.nn.Sequential(
            torch.nn.Linear(hidden, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, hidden)
        )
        return gnn.GINConv(mlp)
    if name == "cheb":
        return gnn.ChebConv(hidden, hidden, K=2)
    if name == "arma":
        return gnn.ARMAConv(hidden, hidden)
    if name == "graph":
        return gnn.GraphConv(hidden, hidden)
    if name == "fc":
        return torch.nn.Linear(hidden, hidden)
    if name == "skip":
        return torch.nn.Identity()
    raise ParameterError(f"unknown operation {name!r}; accepted: {', '.join(OPS)}")


def build_net(arch: str, d_in: int, classes: int, hidden: int = 32, dropout: float = 0.5):
    """The network of ``arch`` ("op1-op2"): linear pre-layer, the two operations, each
    followed by ReLU and dropout, and a linear classifier."""
    import torch

    ops = arch.split("-")
    if len(ops) != 2 or any(o not in OPS for o in ops):
        raise ParameterError(f"unknown architecture {arch!r}; accepted: two of {', '.join(OPS)}")

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.pre = torch.nn.Linear(d_in, hidden)
            self.kinds = ops
            self.layers = torch.nn.ModuleList(_op(o, hidden) for o in ops)
            self.post = torch.nn.Linear(hidden, classes)

        def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
            h = torch.nn.functional.dropout(self.pre(x).relu(), dropout, self.training)
            for kind, layer in zip(self.kinds, self.layers):
                h = layer(h) if kind in ("fc", "skip") else layer(h, edge_index)
                h = torch.nn.functional.dropout(h.relu(), dropout, self.training)
            return self.post(h)

    return Net()


def train_architecture(
    graph: Graph, arch: str, *, epochs: int, hidden: int = 32, seed: int = 0
) -> dict[str, float]:
    """Train ``arch`` on ``graph`` (Adam 0.01, weight decay 5e-4, full batch) and return
    the test accuracy at the epoch of best validation accuracy, as NAS-Bench-Graph
    reports, with the validation accuracy and the seconds it took."""
    import torch

    torch.manual_seed(seed)
    start = time.perf_counter()
    net = build_net(arch, graph.x.shape[1], graph.classes, hidden)
    opt = torch.optim.Adam(net.parameters(), lr=0.01, weight_decay=5e-4)
    best_val, best_test = -1.0, 0.0
    for _ in range(epochs):
        net.train()
        opt.zero_grad()
        out = net(graph.x, graph.edge_index)
        torch.nn.functional.cross_entropy(out[graph.train], graph.y[graph.train]).backward()
        opt.step()
        net.eval()
        with torch.inference_mode():
            pred = net(graph.x, graph.edge_index).argmax(1)
        hit = (pred == graph.y).float()
        val, test = float(hit[graph.val].mean()), float(hit[graph.test].mean())
        if val > best_val:
            best_val, best_test = val, test
    return {"value": best_test, "val": best_val, "seconds": time.perf_counter() - start}


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


def settings(p: Any) -> dict[str, Any]:
    """The benchmark's configuration from the checked parameters (the cache key)."""
    names = list(NAMES[: p.n_datasets])
    if p.focus not in names:
        raise ParameterError(
            f"focus {p.focus!r} is not among the {p.n_datasets} datasets; "
            f"accepted: {', '.join(names)}"
        )
    for name in ("top_k", "global_k"):
        if getattr(p, name) > len(names) - 1:
            raise ParameterError(
                f"{name}={getattr(p, name)} is beyond the {len(names) - 1} datasets with "
                f"facts; accepted: 1 to {len(names) - 1}"
            )
    return {
        "names": names,
        "ops": list(parse_ops(p.ops)),
        "epochs": p.epochs,
        "nodes": p.nodes,
        "hidden": p.hidden,
        "seeds": p.seeds,
        "seed": p.seed,
        "version": 3,
    }
