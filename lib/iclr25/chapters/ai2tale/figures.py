"""AI2TALE's figures: the methods' measures side by side, and one email's selection."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from iclr25.chapters.ai2tale.measures import is_cognitive

if TYPE_CHECKING:
    import plotly.graph_objects as go

# ---------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------

METRIC_NAMES = {"accuracy": "Label-Accuracy", "ctp": "CTP", "cue_hit": "Cue-Hit"}


def metrics_figure(table: Mapping[str, Mapping[str, float]], title: str) -> go.Figure:
    """Grouped bars: Label-Accuracy, CTP and Cue-Hit of each method (a missing metric,
    such as the bag of words' CTP, is left out)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for key, name in METRIC_NAMES.items():
        methods = [m for m in table if key in table[m]]
        values = [table[m][key] for m in methods]
        fig.add_bar(
            x=methods, y=values, name=name, text=[f"{v:.2f}" for v in values],
            textposition="outside",
        )  # fmt: skip
    fig.update_layout(
        title=title, barmode="group", height=380, yaxis=dict(range=[0, 1.12], title="share"),
        margin=dict(t=60, b=40),
    )  # fmt: skip
    return fig


def email_figure(
    sentences: Sequence[str],
    scores: Sequence[float],
    mask: Sequence[bool],
    cues: Sequence[bool] | None = None,
    title: str = "",
    width: int = 70,
) -> go.Figure:
    """One email's sentences as horizontal bars of their selection score: the selected
    sentence(s) in red, a planted cue marked with a star, keyword sentences with (k)."""
    import plotly.graph_objects as go

    n = len(sentences)
    cues = cues if cues is not None else [False] * n
    labels = []
    for j, (s, cue) in enumerate(zip(sentences, cues)):
        short = s if len(s) <= width else s[: width - 3] + "..."
        labels.append(f"{j + 1}. {'* ' if cue else ''}{short}{' (k)' if is_cognitive(s) else ''}")
    colours = ["#d62728" if m else "#9bb7d4" for m in mask[:n]]
    fig = go.Figure(go.Bar(x=list(scores[:n]), y=labels, orientation="h", marker_color=colours))
    fig.update_layout(
        title=title, height=120 + 26 * n, xaxis_title="selection score",
        yaxis=dict(autorange="reversed", automargin=True), margin=dict(t=60, l=10),
    )  # fmt: skip
    return fig
