"""FiNE's figures: causal tracing, ROME and FiNE side by side, the layers of FiNE's
neurons, each edit's scores, the sweeps over the neuron count and over the tokens ``C``
is estimated from, and the effect of ROME's departures from ROME's code."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from iclr25 import core

if TYPE_CHECKING:
    import plotly.graph_objects as go

METHOD_COLOURS = {"ROME": "#1f77b4", "FiNE": "#d62728"}


def tracing_figure(effects: np.ndarray, layer: int, n_facts: int, window: int) -> go.Figure:
    """Causal tracing's indirect effect per layer, with ROME's chosen layer marked."""
    import plotly.graph_objects as go

    fig = go.Figure(go.Bar(x=list(range(len(effects))), y=effects, name="indirect effect"))
    fig.add_vline(x=layer, line_dash="dot", annotation_text=f"ROME edits layer {layer}")
    fig.update_layout(
        title=f"Causal tracing over {n_facts} facts: restoring the MLPs of {window} "
        "layers around each layer at the subject's last token",
        xaxis_title="layer (centre of the restored window)",
        yaxis_title="P(object) restored - corrupted",
    )
    return fig


def comparison_figure(
    results: dict[str, dict[str, float]], metrics: Sequence[str], n_cases: int
) -> go.Figure:
    """Each method's mean score per metric (:func:`iclr25.editing.summary`), side by side."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for method, scores in results.items():
        fig.add_bar(
            x=list(metrics),
            y=[scores[m] for m in metrics],
            name=method,
            marker_color=METHOD_COLOURS.get(method),
            text=[f"{scores[m]:.2f}" for m in metrics],
        )
    fig.update_layout(
        title=f"ROME vs FiNE on SmolLM2-135M, {n_cases} edits (higher is better)",
        yaxis_range=[0, 1.05],
        barmode="group",
    )
    return fig


def neuron_layers_figure(
    neuron_layers: Sequence[int], n_layers: int, rome_layer: int, frozen_last: int, n_edits: int
) -> go.Figure:
    """Histogram of the layers of FiNE's edited neurons, beside ROME's layer and the
    frozen last layers."""
    import plotly.graph_objects as go

    fig = go.Figure(
        go.Histogram(
            x=list(neuron_layers),
            name="FiNE neurons",
            xbins=dict(start=-0.5, end=n_layers - 0.5, size=1),
        )
    )
    fig.add_vline(x=rome_layer, line_dash="dot", annotation_text=f"ROME's layer {rome_layer}")
    fig.add_vrect(
        x0=n_layers - frozen_last - 0.5,
        x1=n_layers - 0.5,
        fillcolor="grey",
        opacity=0.2,
        annotation_text="frozen",
    )
    fig.update_layout(
        title=f"Layers of FiNE's {len(neuron_layers)} edited neurons over {n_edits} edits",
        xaxis_title="layer",
        yaxis_title="neurons",
        xaxis_range=[-0.5, n_layers - 0.5],
    )
    return fig


def _mean_sweep_figure(
    sweep: dict[int, list[dict[str, Any]]], metrics: Sequence[str], title: str, xlabel: str
) -> go.Figure:
    """The mean of each metric over the records at each swept value, on a log x-axis;
    ``title`` is completed with the number of edits."""
    xs = sorted(sweep)
    fig = core.plot(
        xs,
        {m: [np.nanmean([r[m] for r in sweep[x]]) for x in xs] for m in metrics},
        title=f"{title}, mean over {len(sweep[xs[0]])} edits",
        xlabel=xlabel,
        log_x=True,
        mode="lines+markers",
    )
    return fig.update_layout(yaxis_range=[0, 1.05])


def sweep_figure(sweep: dict[int, list[dict[str, Any]]], metrics: Sequence[str]) -> go.Figure:
    """The mean of each metric over the swept edits against the number of neurons ``k``;
    ``sweep[k]`` holds the records of :func:`iclr25.editing.run_cases`."""
    return _mean_sweep_figure(sweep, metrics, "FiNE with k neurons", "k (neurons edited)")


def edits_figure(records: Sequence[dict[str, Any]], metrics: Sequence[str], k: int) -> go.Figure:
    """Each edit's scores with ``k`` neurons, one group of bars per metric."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for r in records:
        fig.add_bar(x=list(metrics), y=[r[m] for m in metrics], name=r["case"])
    fig.update_layout(
        title=f"FiNE with k = {k} neurons: each edit's scores",
        yaxis_range=[0, 1.05],
        barmode="group",
    )
    return fig


def c_sweep_figure(by_size: dict[int, list[dict[str, Any]]], metrics: Sequence[str]) -> go.Figure:
    """ROME's mean score per metric against the number of tokens ``C`` is estimated from
    (:func:`c_sweep`)."""
    return _mean_sweep_figure(
        by_size,
        metrics,
        "ROME with C from n tokens",
        "tokens the key second moment C is estimated from",
    )


def departures_figure(diffs: dict[str, dict[str, core.stats.Estimate]]) -> go.Figure:
    """Per departure undone, the mean change of each metric against the book's ROME,
    paired by edit, with its 95% interval (:func:`rome_departures`)."""
    return core.estimates_figure(
        diffs,
        title="ROME as ROME's code computes it, minus the book's ROME",
        ylabel="change in score (paired by edit)",
    )
