"""The Knowledge Benchmark Graph's data (Liu, Di et al., ICLR 2025): the generated
node-classification datasets, drawn as a suite at a seed, and the design space whose
training runs give the facts performance(dataset, architecture)."""

from __future__ import annotations

import math
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from iclr25.core import ParameterError

if TYPE_CHECKING:
    import torch


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
