"""The Knowledge Benchmark Graph's store: an embedded graph database (``ladybug``).

Node tables Dataset, Architecture and Op and relation tables PERFORMANCE, USES and
SIMILAR (``SCHEMA``), the two Cypher queries a recommendation reads (``FACTS_QUERY``,
``NEIGHBOURS_QUERY``), the :class:`Store` that runs them, and the benchmark run whose
facts it holds (``run_benchmark``, configured by ``settings``), written once into a
cached folder (``build_store``, ``open_store``), and its networkx view
(``networkx_view``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pandas as pd

from iclr25 import core
from iclr25.chapters.kbg.data import (
    NAMES,
    architectures,
    draw_suite,
    edge_homophily,
    make_graph,
    parse_ops,
    train_architecture,
)
from iclr25.chapters.kbg.method import (
    ACTIVATIONS,
    CATEGORICAL,
    SIM_WEIGHTS,
    DatasetDescription,
    describe,
    description_frame,
    similarity_matrix,
)
from iclr25.core import ParameterError

# ---------------------------------------------------------------------------------
# The store: a Knowledge Benchmark Graph in ladybug (Cypher)
# ---------------------------------------------------------------------------------

SCHEMA = (
    "CREATE NODE TABLE Dataset(name STRING, {columns}, PRIMARY KEY(name))",
    "CREATE NODE TABLE Architecture(name STRING, PRIMARY KEY(name))",
    "CREATE NODE TABLE Op(name STRING, PRIMARY KEY(name))",
    "CREATE REL TABLE PERFORMANCE(FROM Dataset TO Architecture, metric STRING, "
    "value DOUBLE, seed INT64, seconds DOUBLE)",
    "CREATE REL TABLE USES(FROM Architecture TO Op, position INT64)",
    "CREATE REL TABLE SIMILAR(FROM Dataset TO Dataset, score DOUBLE, w DOUBLE, activation STRING)",
)

FACTS_QUERY = """
MATCH (d:Dataset)-[p:PERFORMANCE]->(a:Architecture)
WHERE d.name IN $sources AND p.metric = $metric
RETURN d.name AS dataset, a.name AS arch, avg(p.value) AS value
ORDER BY dataset, arch"""
"""The facts of the source datasets, averaged over seeds: leave-one-out passes every
dataset but the held-out."""

NEIGHBOURS_QUERY = """
MATCH (t:Dataset {name: $target})-[s:SIMILAR]->(d:Dataset)
WHERE s.w = $w AND s.activation = $activation AND d.name IN $sources
RETURN d.name AS dataset, s.score AS similarity
ORDER BY similarity DESC, dataset
LIMIT $k"""
"""The top-k most similar source datasets of a target."""


class Store:
    """A Knowledge Benchmark Graph in a ladybug database folder, queried in Cypher.

    ``query`` runs one Cypher statement with parameters and returns a frame; every query
    is logged (``log``) with what it returned, so a test can see what was read.
    """

    def __init__(self, folder: str | Path, *, read_only: bool = True) -> None:
        import ladybug

        self.folder = Path(folder)
        self.db = ladybug.Database(
            str(self.folder / "kbg.lbug"),
            read_only=read_only,
            buffer_pool_size=64 * 2**20,
            max_num_threads=1,
        )
        self.conn = ladybug.Connection(self.db)
        self.log: list[tuple[str, dict, pd.DataFrame]] = []

    def query(self, cypher: str, params: Mapping[str, Any] | None = None) -> pd.DataFrame:
        result = self.conn.execute(cypher, dict(params or {}))
        frame = result.get_as_df()
        self.log.append((cypher, dict(params or {}), frame))
        return frame

    def close(self) -> None:
        self.conn.close()
        self.db.close()

    # -- writing ---------------------------------------------------------------
    def create_schema(self) -> None:
        columns = [
            f"{c} DOUBLE" for c in DatasetDescription.__dataclass_fields__ if c not in CATEGORICAL
        ] + [f"{c} STRING" for c in CATEGORICAL]
        for statement in SCHEMA:
            self.conn.execute(statement.format(columns=", ".join(columns)))

    def add_dataset(self, name: str, description: Mapping[str, Any]) -> None:
        fields = ", ".join(f"{k}: ${k}" for k in description)
        self.conn.execute(
            f"CREATE (:Dataset {{name: $name, {fields}}})",
            {"name": name, **{k: _plain(v) for k, v in description.items()}},
        )

    def add_architecture(self, arch: str) -> None:
        self.conn.execute("CREATE (:Architecture {name: $name})", {"name": arch})
        for position, op in enumerate(arch.split("-"), start=1):
            self.conn.execute("MERGE (:Op {name: $op})", {"op": op})
            self.conn.execute(
                "MATCH (a:Architecture {name: $a}), (o:Op {name: $op}) "
                "CREATE (a)-[:USES {position: $p}]->(o)",
                {"a": arch, "op": op, "p": position},
            )

    def add_fact(
        self,
        dataset: str,
        arch: str,
        value: float,
        *,
        seed: int = 0,
        seconds: float = 0.0,
        metric: str = "accuracy",
    ) -> None:
        """Store performance(dataset, arch); a second fact with the same dataset,
        architecture, metric and seed is refused."""
        found = self.conn.execute(
            "MATCH (d:Dataset {name: $d})-[p:PERFORMANCE]->(a:Architecture {name: $a}) "
            "WHERE p.metric = $m AND p.seed = $s RETURN count(*)",
            {"d": dataset, "a": arch, "m": metric, "s": seed},
        ).get_all()[0][0]
        if found:
            raise ValueError(
                f"duplicate fact: performance({dataset}, {arch}) [{metric}, seed {seed}] "
                "is already stored"
            )
        self.conn.execute(
            "MATCH (d:Dataset {name: $d}), (a:Architecture {name: $a}) "
            "CREATE (d)-[:PERFORMANCE {metric: $m, value: $v, seed: $s, seconds: $t}]->(a)",
            {
                "d": dataset,
                "a": arch,
                "m": metric,
                "v": float(value),
                "s": seed,
                "t": float(seconds),
            },
        )

    def add_similar(
        self, source: str, target: str, score: float, w: float, activation: str
    ) -> None:
        self.conn.execute(
            "MATCH (a:Dataset {name: $s}), (b:Dataset {name: $t}) "
            "CREATE (a)-[:SIMILAR {score: $x, w: $w, activation: $act}]->(b)",
            {"s": source, "t": target, "x": float(score), "w": float(w), "act": activation},
        )

    # -- reading ---------------------------------------------------------------
    def datasets(self) -> list[str]:
        return list(self.query("MATCH (d:Dataset) RETURN d.name AS name ORDER BY name")["name"])

    def facts(self, sources: Sequence[str], metric: str = "accuracy") -> pd.DataFrame:
        return self.query(FACTS_QUERY, {"sources": list(sources), "metric": metric})

    def neighbours(
        self, target: str, sources: Sequence[str], k: int, *, w: float, activation: str
    ) -> pd.DataFrame:
        return self.query(
            NEIGHBOURS_QUERY,
            {
                "target": target,
                "sources": list(sources),
                "k": int(k),
                "w": float(w),
                "activation": activation,
            },
        )


def _plain(v: Any) -> Any:
    return v if isinstance(v, str) else float(v)


def build_store(folder: Path, bench: Mapping[str, Any]) -> None:
    """Write the KBG of a benchmark (``run_benchmark``'s value) into ``folder``: datasets
    with their descriptions, architectures and their operations, every performance
    fact, and the similarity of every pair for each w of ``SIM_WEIGHTS`` and both
    activations."""
    store = Store(folder, read_only=False)
    try:
        store.create_schema()
        for name, desc in bench["descriptions"].items():
            store.add_dataset(name, desc)
        for arch in bench["archs"]:
            store.add_architecture(arch)
        for d, a, v, s, t in zip(
            *(bench["facts"][k] for k in ("dataset", "arch", "value", "seed", "seconds"))
        ):
            store.add_fact(d, a, v, seed=int(s), seconds=t)
        frame = description_frame(bench["descriptions"])
        for activation in ACTIVATIONS:
            for w in SIM_WEIGHTS:
                sim = similarity_matrix(frame, w=w, activation=activation)
                for a in sim.index:
                    for b in sim.columns:
                        if a != b:
                            store.add_similar(a, b, sim.loc[a, b], w, activation)
    finally:
        store.close()


def open_store(bench: Mapping[str, Any], config: Mapping[str, Any]) -> Store:
    """The KBG of ``bench``, built once into a cached folder and opened read-only."""
    import importlib.metadata

    key = {**config, "ladybug": importlib.metadata.version("ladybug"), "store": 2}
    folder = core.cached_dir("kbg-store", key, lambda out: build_store(out, bench))
    return Store(folder)


def run_benchmark(
    names: Sequence[str],
    ops: Sequence[str],
    *,
    epochs: int,
    nodes: int,
    hidden: int = 32,
    seeds: int = 3,
    seed: int = 0,
    progress: bool = True,
) -> dict[str, Any]:
    """Generate (at ``seed``), describe and train: every architecture of ``ops`` on
    every dataset of ``names`` from ``seeds`` training seeds (``seed`` onwards), on one
    torch thread. Returns plain containers (cacheable)."""
    from tqdm.auto import tqdm

    archs = architectures(ops)
    facts: dict[str, list] = {k: [] for k in ("dataset", "arch", "value", "val", "seed", "seconds")}
    descriptions, homophily = {}, {}
    specs = {s.name: s for s in draw_suite(seed)}
    with core.threads(1):
        for name in tqdm(names, desc="datasets", disable=not progress):
            graph = make_graph(specs[name], nodes, seed)
            descriptions[name] = asdict(describe(graph, seed=seed))
            homophily[name] = edge_homophily(graph.edge_index, graph.y)
            for arch in archs:
                for s in range(seed, seed + seeds):
                    r = train_architecture(graph, arch, epochs=epochs, hidden=hidden, seed=s)
                    for k, v in (("dataset", name), ("arch", arch), ("seed", s), *r.items()):
                        facts[k].append(v)
    knobs = {name: asdict(specs[name]) for name in names}
    return {
        "facts": facts,
        "descriptions": descriptions,
        "archs": archs,
        "homophily": homophily,
        "knobs": knobs,
    }


def networkx_view(store: Store) -> Any:
    """The KBG as a networkx multigraph, exported from one Cypher query per relation."""
    import networkx as nx

    g = nx.MultiDiGraph()
    for rel, src, dst in (
        ("PERFORMANCE", "Dataset", "Architecture"),
        ("USES", "Architecture", "Op"),
        ("SIMILAR", "Dataset", "Dataset"),
    ):
        edges = store.query(f"MATCH (a:{src})-[r:{rel}]->(b:{dst}) RETURN a.name AS a, b.name AS b")
        for a, b in zip(edges["a"], edges["b"]):
            g.add_node(("D" if src == "Dataset" else "A") + ":" + a, kind=src)
            g.add_node({"Dataset": "D", "Architecture": "A", "Op": "O"}[dst] + ":" + b, kind=dst)
            g.add_edge(
                ("D" if src == "Dataset" else "A") + ":" + a,
                {"Dataset": "D", "Architecture": "A", "Op": "O"}[dst] + ":" + b,
                relation=rel,
            )
    return g


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
