"""The debias chapter's figures: the causal graph, the gap and accuracy bars beside
GPT-4's, one sentence's referent probabilities, and the live sentence inspector."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from iclr25.chapters.debias.method import (
    AMBIGUOUS,
    FACTS,
    NEUTRAL,
    PRONOUNS,
    STEREOTYPED,
    STRATEGIES,
    TEST_FACTS,
    Case,
    make_case,
)

if TYPE_CHECKING:
    import plotly.graph_objects as go

# ---------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------

#: GPT-4 on WinoBias Type I, pro - anti accuracy gap (%), from the paper's abstract
#: figures as the issue quotes them; the contrastive examples stand beside strategy II
#: and DDP (I+II on WinoBias) beside I+II.
GPT4_GAP = {"default": 21.74, "II": 9.23, "I+II": 2.17}

#: The causal graph drawn in the chapter: (node, x, y) and (edge, label).
GRAPH_NODES = {
    "G (gender)": (0, 2), "St (occupation)": (0, 1), "R (referent)": (0, 0),
    "Amb": (0, -1), "Anti": (1, 1), "Src (source)": (2, 2), "S (selected)": (2, 0.5),
    "corpus": (3, 0.5), "model's dependence": (4, 0.5), "prompt text": (3, 2),
    "fact": (3, -0.5), "decision": (5, 1),
}  # fmt: skip
GRAPH_EDGES = [
    ("Amb", "R"), ("R", "Anti"), ("St", "Anti"), ("G", "Anti"), ("Anti", "S"), ("Src", "S"),
    ("S", "corpus"), ("corpus", "model's dependence"), ("model's dependence", "decision"),
    ("G", "prompt text"), ("prompt text", "decision"), ("R", "fact"), ("fact", "decision"),
]  # fmt: skip
#: Where each strategy acts: (strategy, the edge or node it regulates).
GRAPH_STRATEGIES = {
    "I: towards the fact": "fact",
    "II: counteract selection": "S (selected)",
    "III: away from gender in text": "prompt text",
}


def causal_graph() -> Any:
    """The pathways as a networkx ``DiGraph`` (full node names)."""
    import networkx as nx

    full = {n.split(" ")[0]: n for n in GRAPH_NODES}
    graph = nx.DiGraph()
    for name, pos in GRAPH_NODES.items():
        graph.add_node(name, pos=pos)
    graph.add_edges_from((full.get(a, a), full.get(b, b)) for a, b in GRAPH_EDGES)
    return graph


def graph_figure() -> go.Figure:
    """The causal graph with the pathways from gender to the decision, and where each
    strategy acts (a plotly figure)."""
    import plotly.graph_objects as go

    graph = causal_graph()
    pos = {n: d["pos"] for n, d in graph.nodes(data=True)}
    fig = go.Figure()
    for a, b in graph.edges:
        fig.add_annotation(
            x=pos[b][0], y=pos[b][1], ax=pos[a][0], ay=pos[a][1], xref="x", yref="y",
            axref="x", ayref="y", showarrow=True, arrowhead=3, arrowsize=1.2,
            standoff=18, startstandoff=18, arrowcolor="#888",
        )  # fmt: skip
    acts = {v: k for k, v in GRAPH_STRATEGIES.items()}
    fig.add_scatter(
        x=[p[0] for p in pos.values()], y=[p[1] for p in pos.values()], mode="markers+text",
        text=list(pos), textposition="top center", hovertext=[acts.get(n, n) for n in pos],
        marker={"size": 22, "color": ["#d62728" if n in acts else "#1f77b4" for n in pos]},
        showlegend=False,
    )  # fmt: skip
    for node, label in acts.items():
        fig.add_annotation(x=pos[node][0], y=pos[node][1] - 0.3, text=label, showarrow=False,
                           font={"color": "#d62728"})  # fmt: skip
    fig.update_layout(
        title="The causal model: gender reaches the decision through selection (the corpus) "
        "and through the prompt; red nodes are where strategies I, II, III act",
        xaxis={"visible": False}, yaxis={"visible": False}, height=480,
    )  # fmt: skip
    return fig


def gap_figure(results: Mapping[str, Mapping[str, Mapping[str, float]]]) -> go.Figure:
    """Gap (pro - anti, %) per prompt for each model, beside GPT-4's (paper)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for model, per in results.items():
        names = [s for s in STRATEGIES if s in per]
        fig.add_bar(name=model, x=names, y=[100 * per[s]["gap"] for s in names])
    fig.add_bar(name="GPT-4, WinoBias Type I (paper)", x=list(GPT4_GAP),
                y=list(GPT4_GAP.values()), marker_pattern_shape="/")  # fmt: skip
    fig.update_layout(barmode="group", title="Pro - anti accuracy gap per prompt",
                      xaxis_title="prompt", yaxis_title="gap (percentage points)")  # fmt: skip
    return fig


def accuracy_figure(per: Mapping[str, Mapping[str, float]], title: str) -> go.Figure:
    """Accuracy on pro- and anti-stereotypical cases per strategy."""
    import plotly.graph_objects as go

    names = [s for s in STRATEGIES if s in per]
    fig = go.Figure()
    for side in ("pro", "anti"):
        fig.add_bar(name=side, x=names, y=[per[s][side] for s in names])
    fig.update_layout(barmode="group", title=title, yaxis={"range": [0, 1], "title": "accuracy"},
                      xaxis_title="prompt")  # fmt: skip
    return fig


def referent_figure(probabilities: Mapping[str, Sequence[float]], case: Case,
                    strategy: str) -> go.Figure:  # fmt: skip
    """Each referent's probability (the two options renormalised) under each model."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for k, option in enumerate(case.options):
        fig.add_bar(name=option, x=list(probabilities), y=[p[k] for p in probabilities.values()])
    fig.update_layout(
        barmode="group", yaxis={"range": [0, 1], "title": "P(referent)"},
        title=f"{strategy}: {case.sentence()} ("
        + ("ambiguous: no referent is right"
           if case.fact.role == "either"
           else f"answer: {case.answer}, {'pro' if case.pro else 'anti'}-stereotypical")
        + ")",
    )  # fmt: skip
    return fig


def two_way(scores: np.ndarray) -> np.ndarray:
    """The two options' scores as probabilities that sum to one."""
    s = np.asarray(scores, dtype=float)
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def inspector() -> Any:
    """The live sentence inspector: occupations, order, fact (Type I or ambiguous),
    pronoun and strategy; its ``value`` is ``(case, strategy)``."""
    import ipywidgets as widgets
    import traitlets

    class Inspector(widgets.VBox):
        value = traitlets.Any()

    style = {"description_width": "initial"}
    stereo = widgets.Dropdown(options=[o for o, _ in STEREOTYPED], description="stereotyped")
    other = widgets.Dropdown(options=NEUTRAL, value="farmer", description="other")
    order = widgets.Checkbox(value=True, description="stereotyped one first")
    facts = [(f"{f.verb} / {f.reason}", f) for f in FACTS] + [
        (f"{f.verb} / {f.reason} (ambiguous)", f) for f in AMBIGUOUS
    ]
    fact = widgets.Dropdown(options=facts, value=FACTS[TEST_FACTS[0]], description="fact",
                            style=style)  # fmt: skip
    pronoun = widgets.Dropdown(options=PRONOUNS, value="she", description="pronoun")
    strategy = widgets.Dropdown(options=STRATEGIES, description="strategy")
    controls = (stereo, other, order, fact, pronoun, strategy)
    box = Inspector(list(controls))

    def update(_: object = None) -> None:
        st = [o for o, _ in STEREOTYPED].index(stereo.value)
        # an ambiguous fact decides nothing: its case is scored as the stereotype's reading
        case = make_case(st, other.value, fact.value, pronoun.value, order.value, True)
        box.value = (case, strategy.value)

    for control in controls:
        control.observe(update, names="value")
    update()
    return box
