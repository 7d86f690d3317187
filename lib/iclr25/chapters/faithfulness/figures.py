"""The faithfulness chapter's figures: CE against EE per concept with mu's line, mu
and the category sigmas beside the paper's, and one question with its counterfactuals."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from iclr25.chapters.faithfulness.data import (
    CATEGORIES,
    UNKNOWN,
    Question,
    cited,
    counterfactual,
)
from iclr25.chapters.faithfulness.method import Faithfulness

if TYPE_CHECKING:
    import plotly.graph_objects as go

# ---------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------

#: The paper's faithfulness mu (90% HPDI) on BBQ (official notebook, 29 questions, 50
#: samples) and its category sigmas (behaviour, identity, context).
PAPER_MU = {
    "GPT-3.5": (0.75, 0.42, 1.05),
    "GPT-4o": (0.56, 0.24, 0.86),
    "Claude-3.5": (0.62, 0.28, 0.91),
}
PAPER_SIGMA = {
    "GPT-3.5": (3.13, 1.35, 0.53),
    "GPT-4o": (4.75, 1.99, 1.00),
    "Claude-3.5": (4.01, 1.94, 1.02),
}

COLORS = {"behaviour": "#1f77b4", "identity": "#d62728", "context": "#2ca02c"}


def scatter_figure(fits: Mapping[str, Faithfulness]) -> go.Figure:
    """z-CE against z-EE per concept, coloured by category, with mu's line and 90% band
    and the faithful line EE = CE, one panel per model (the paper's Figure)."""
    from numpyro.diagnostics import hpdi
    from plotly.subplots import make_subplots

    fig = make_subplots(
        rows=1,
        cols=len(fits),
        subplot_titles=[
            f"{m}: mu {f.mu:.2f} [{f.hpdi[0]:.2f}, {f.hpdi[1]:.2f}]" for m, f in fits.items()
        ],
    )
    xs = np.linspace(-2, 2, 41)
    for col, f in enumerate(fits.values(), 1):
        band = hpdi(f.draws[:, None] * xs, 0.9)
        fig.add_scatter(x=np.r_[xs, xs[::-1]], y=np.r_[band[1], band[0][::-1]], fill="toself",
                        line_width=0, fillcolor="rgba(0,0,200,0.15)", showlegend=False,
                        row=1, col=col)  # fmt: skip
        fig.add_scatter(x=xs, y=f.mu * xs, line_color="navy", name="posterior mean",
                        showlegend=col == 1, row=1, col=col)  # fmt: skip
        fig.add_scatter(x=xs, y=xs, line={"dash": "dash", "color": "black"}, name="EE = CE",
                        showlegend=col == 1, row=1, col=col)  # fmt: skip
        for c, name in enumerate(CATEGORIES):
            fig.add_scatter(
                x=f.ce_z[:, c],
                y=f.ee_z[:, c],
                mode="markers",
                name=name,
                marker_color=COLORS[name],
                showlegend=col == 1,
                row=1,
                col=col,
            )
    fig.update_xaxes(title_text="CE (z-score)", range=[-2.2, 2.2])
    fig.update_yaxes(title_text="EE (z-score)", range=[-2.2, 2.2], col=1)
    return fig.update_layout(height=430, title="Explanation-implied vs causal concept effects")


def mu_figure(ours: Mapping[str, Faithfulness]) -> go.Figure:
    """mu with its 90% HPDI per model, beside the paper's three LLMs."""
    import plotly.graph_objects as go

    rows = [(m, f.mu, *f.hpdi, "ours") for m, f in ours.items()]
    rows += [(f"{m} (paper)", *v, "paper") for m, v in PAPER_MU.items()]
    fig = go.Figure()
    for group, color in (("ours", "#1f77b4"), ("paper", "#7f7f7f")):
        r = [x for x in rows if x[4] == group]
        fig.add_scatter(x=[x[0] for x in r], y=[x[1] for x in r], mode="markers",
                        marker={"size": 10, "color": color}, name=group,
                        error_y={"type": "data", "symmetric": False,
                                 "array": [x[3] - x[1] for x in r],
                                 "arrayminus": [x[1] - x[2] for x in r]})  # fmt: skip
    fig.add_hline(y=0, line_dash="dot")
    return fig.update_layout(title="Faithfulness mu (90% HPDI)", yaxis_title="mu", height=400)


def sigma_figure(ours: Mapping[str, np.ndarray]) -> go.Figure:
    """Posterior mean sigma per category, ours beside the paper's."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for m, s in list(ours.items()) + [(f"{k} (paper)", v) for k, v in PAPER_SIGMA.items()]:
        fig.add_bar(name=m, x=list(CATEGORIES), y=list(s))
    return fig.update_layout(barmode="group", title="Category sigma (prior scale of beta)",
                             yaxis_title="sigma (posterior mean)", height=400)  # fmt: skip


def question_figure(
    q: Question, p0: np.ndarray, p1: Mapping[tuple[str, str], np.ndarray],
    explanations: Sequence[str], concept: str | None = None,
) -> go.Figure:  # fmt: skip
    """Posterior answer distributions of one question and its six counterfactuals, with
    sample explanations and the concepts they cite; with ``concept``, its counterfactual
    questions are written out in the title and the other concepts' bars are faded."""
    import textwrap

    import plotly.graph_objects as go

    fig = go.Figure()
    labels = ["original"] + [f"{c} {k}" for c, k in p1]
    probs = [p0] + list(p1.values())
    opacity = [1.0] + [1.0 if concept in (None, c) else 0.3 for c, _ in p1]
    for k, option in enumerate(("first person", "second person", UNKNOWN)):
        fig.add_bar(name=option, x=labels, y=[p[k] for p in probs], marker_opacity=opacity)

    def wrapped(text: str) -> str:
        return "<br>".join(textwrap.wrap(text, 110))

    notes = [f"{e!r}: cites {', '.join(c for c, v in cited(e, q).items() if v) or 'nothing'}"
             for e in explanations[:3]]  # fmt: skip
    if concept is not None:
        notes += [wrapped(f"<b>{concept} {k}</b>: {counterfactual(q, c, k).text()}")
                  for c, k in p1 if c == concept]  # fmt: skip
    top = (
        50
        + 15 * sum(n.count("<br>") + 1 for n in notes)
        + 16 * (wrapped(q.text()).count("<br>") + 1)
    )
    fig.update_layout(barmode="stack", height=340 + top,
                      yaxis_title="P(answer) (posterior mean)",
                      title={"text": wrapped(q.text()) + "<br><sup>" + "<br>".join(notes)
                             + "</sup>", "font": {"size": 11}, "yref": "container",
                             "y": 1, "yanchor": "top", "pad": {"t": 12}},
                      margin={"t": top})  # fmt: skip
    return fig
