"""The selective-classification chapter's figure builders."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import numpy as np
from plotly.colors import qualitative

if TYPE_CHECKING:
    import plotly.graph_objects as go

    from iclr25.chapters.selective.method import Evaluation, Suppression

# ---------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------

COLORS = {"CE": "black", "LS": qualitative.Plotly[1], "LS, normalised": qualitative.Plotly[2]}
"""The colour of each model and score: CE by MSP, LS by MSP, LS by the normalised logit."""


def curves_figure(
    pairs: Mapping[str, tuple[Evaluation, Evaluation]], points: int = 401
) -> go.Figure:
    """Risk-coverage curves of a CE and an LS model by MSP, and of the LS model by the
    normalised max logit: one panel per entry of ``pairs`` (its label, such as the LS
    alpha -> the CE and the LS evaluation), each curve thinned to at most ``points``
    points."""
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=len(pairs), shared_yaxes=True, subplot_titles=list(pairs))
    for col, (ce, ls) in enumerate(pairs.values(), start=1):
        lines = {
            "CE": (ce.curve_msp, ce.aurc_msp),
            "LS": (ls.curve_msp, ls.aurc_msp),
            "LS, normalised": (ls.curve_norm, ls.aurc_norm),
        }
        for name, (curve, area) in lines.items():
            keep = np.unique(np.linspace(0, len(curve.risk) - 1, points).astype(int))
            fig.add_scatter(
                x=curve.coverage[keep],
                y=100 * curve.risk[keep],
                mode="lines",
                line_color=COLORS[name],
                name=name,
                legendgroup=name,
                showlegend=col == 1,
                row=1,
                col=col,
                hovertemplate=f"{name}, AURC {100 * area:.2f}%<br>coverage "
                "%{x:.2f}, risk %{y:.2f}%<extra></extra>",
            )
    fig.update_xaxes(title_text="coverage")
    fig.update_yaxes(title_text="risk (%)", col=1)
    return fig.update_layout(title="Risk-coverage curves, CE vs LS", height=380)


def alpha_figure(
    alphas: Iterable[float],
    series: Mapping[str, Mapping[str, tuple[Iterable[float], Iterable[float]]]],
    metric: str = "AURC",
) -> go.Figure:
    """The paper-style plot of a metric against alpha: one panel per setting of
    ``series`` (its label -> score name -> (mean, standard deviation over seeds) at each
    alpha, as fractions), one line per score with error bars, in percent."""
    from plotly.subplots import make_subplots

    alphas = list(alphas)
    fig = make_subplots(rows=1, cols=len(series), subplot_titles=list(series))
    colors = [COLORS["LS"], COLORS["LS, normalised"], *qualitative.Plotly[3:]]
    for col, scores in enumerate(series.values(), start=1):
        for (name, (mean, spread)), color in zip(scores.items(), colors):
            fig.add_scatter(
                x=alphas,
                y=100 * np.asarray(list(mean), dtype=float),
                error_y=dict(type="data", array=100 * np.asarray(list(spread), dtype=float)),
                mode="lines+markers",
                name=name,
                legendgroup=name,
                showlegend=col == 1,
                line_color=color,
                row=1,
                col=col,
                hovertemplate=f"{name}<br>alpha %{{x:g}}: {metric} %{{y:.2f}}%<extra></extra>",
            )
    fig.update_xaxes(title_text="alpha (0: CE)")
    fig.update_yaxes(title_text=f"{metric} (%)", col=1)
    return fig.update_layout(
        title=f"{metric} against alpha (mean and standard deviation over seeds)", height=380
    )


def suppression_figure(curves: Mapping[str, tuple[Suppression, Iterable[float]]]) -> go.Figure:
    """LS's centred max logit over CE's on the same inputs, by bin of CE confidence:
    one line per entry of ``curves`` (its label, such as the LS alpha -> the
    :class:`Suppression` averaged over seeds and the standard deviation of its ratio
    over seeds)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for name, (curve, spread) in curves.items():
        fig.add_scatter(
            x=curve.confidence,
            y=curve.ratio,
            error_y=dict(type="data", array=list(spread)),
            customdata=100 * curve.ce_accuracy,
            mode="lines+markers",
            name=name,
            hovertemplate=f"{name}<br>CE MSP %{{x:.3f}} (CE accuracy %{{customdata:.1f}}%)"
            "<br>LS / CE max logit %{y:.3f}<extra></extra>",
        )
    fig.add_hline(y=1, line_color="gray", line_width=1)
    fig.update_xaxes(title_text="CE confidence (mean MSP of the bin)")
    fig.update_yaxes(title_text="LS / CE median centred max logit")
    return fig.update_layout(title="Max-logit suppression by LS on the same inputs", height=380)
