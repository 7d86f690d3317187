"""The LLM step of the Knowledge Benchmark Graph: SmolLM2 picks an architecture among
candidates for a held-out dataset, with and without the facts retrieved from its most
similar datasets (the measure: how often its pick follows the top retrieved fact)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd


def describe_in_words(name: str, desc: Mapping[str, Any]) -> str:
    return (
        f"The graph dataset '{name}' ({desc['domain']}) has {int(desc['node_count'])} "
        f"nodes, {int(desc['edge_count'])} edges, average degree "
        f"{desc['average_degree']:.1f}, clustering "
        f"{desc['average_clustering_coefficient']:.2f} and "
        f"{int(desc['num_classes'])} classes."
    )


def llm_prompt(
    name: str, desc: Mapping[str, Any], candidates: Sequence[str], facts: pd.DataFrame | None
) -> str:
    """The prompt: the dataset in words, the candidates, and (optionally) the retrieved
    facts ``facts`` (dataset, similarity, arch, value), in the order given; it ends where
    the model continues with an architecture."""
    lines = [
        describe_in_words(name, desc),
        "Candidate GNN architectures (two layers each): " + ", ".join(candidates) + ".",
    ]
    if facts is not None:
        lines.append("Benchmark facts retrieved from similar datasets:")
        lines += [
            f"- on {r.dataset} (similarity {r.similarity:.2f}), {r.arch} reached "
            f"accuracy {r.value:.2f}"
            for r in facts.itertuples()
        ]
    lines.append(f"The most accurate architecture on '{name}' is")
    return "\n".join(lines)


def llm_picks(lm: Any, prompts: Sequence[str], candidates: Sequence[Sequence[str]]) -> list[str]:
    """The candidate with the highest cloze log-probability after each prompt."""
    from iclr25 import llm

    scores = llm.score_continuations(
        lm, list(prompts), [[" " + c for c in cs] for cs in candidates]
    )
    return [cs[int(i)] for cs, i in zip(candidates, scores.argmax(1))]
