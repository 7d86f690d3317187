"""The chapter's figures: count histograms, the counting conventions, one network's
explanations drawn on its graph, growth with the width, and the multi-gate tasks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from iclr25.chapters.identifiability.method import (
    Algorithm,
    Explanations,
    circuit_candidates,
    first_interpretation,
    neuron_circuits,
    neuron_groups,
    task_name,
)
from iclr25.chapters.identifiability.networks import NAMES, Networks
from iclr25.core import stats

if TYPE_CHECKING:
    import plotly.graph_objects as go


def count_histograms(panels: dict[str, np.ndarray], log: Sequence[str] = ()) -> go.Figure:
    """How often each count occurs, one panel per entry of ``panels`` (title -> counts), two
    by two: bars per count, or a histogram of log10 counts for the titles in ``log``."""
    from plotly.colors import qualitative
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=2, cols=2, vertical_spacing=0.18, subplot_titles=list(panels))
    for k, (title, values) in enumerate(panels.items()):
        where = dict(row=k // 2 + 1, col=k % 2 + 1)
        style = dict(marker_color=qualitative.Plotly[k], showlegend=False)
        if title in log:
            fig.add_histogram(x=np.log10(values), nbinsx=20, **style, **where)
        else:
            counts, n = np.unique(values, return_counts=True)
            fig.add_bar(x=counts, y=n, **style, **where)
    fig.update_yaxes(title_text="count")
    return fig.update_layout(height=560)


def conventions_figure(counts: dict[str, np.ndarray], title: str) -> go.Figure:
    """How many networks have each number of aligned algorithms, one group of bars per
    counting convention (``counts``: convention -> aligned algorithms per network)."""
    import plotly.graph_objects as go
    from plotly.colors import qualitative

    fig = go.Figure()
    for (name, values), color in zip(counts.items(), qualitative.Plotly):
        value, n = np.unique(values, return_counts=True)
        fig.add_bar(
            x=value,
            y=n,
            name=name,
            marker_color=color,
            hovertemplate=f"{name}: %{{y}} networks with %{{x}} aligned<extra></extra>",
        )
    fig.add_vline(x=1.5, line_dash="dot", line_color="gray")
    fig.update_xaxes(title_text="aligned algorithms per network (IIA 1)")
    fig.update_yaxes(title_text="networks")
    return fig.update_layout(barmode="group", height=380, title=title)


def draw_network(
    fig: go.Figure,
    nets: Networks,
    index: int,
    row: int,
    col: int,
    active: np.ndarray | None = None,
    labels: dict | None = None,
    colors: dict | None = None,
    title: str = "",
    hovers: dict | None = None,
) -> None:
    """Draw network ``index`` in one panel of ``fig``: ``active`` (2, width) marks the
    neurons shown as part of the circuit (the others grey), ``labels``/``colors``/``hovers``
    map (layer, neuron) to text, colour and hover text, edge colour is the weight's sign
    (blue positive, red negative), and ``title`` is written above (as a trace, so that a
    static slider can change it)."""
    sizes = [2, nets.width, nets.width, 1]
    top = (nets.width - 1) / 2
    y = {(l, j): (n - 1) / 2 - j for l, n in enumerate(sizes) for j in range(n)}
    on = {(l, j): l in (0, 3) or active is None or bool(active[l - 1][j]) for (l, j) in y}
    segments = {"positive": ([], []), "negative": ([], []), "ablated": ([], [])}
    for l in range(3):
        w = nets.weights[l][index]
        for i, j in np.ndindex(sizes[l], sizes[l + 1]):
            kept = on[l, i] and on[l + 1, j]
            kind = ("negative" if w[j, i] < 0 else "positive") if kept else "ablated"
            segments[kind][0].extend([l, l + 1, None])
            segments[kind][1].extend([y[l, i], y[l + 1, j], None])
    style = {
        "positive": dict(color="#0969da", width=2),
        "negative": dict(color="#cf222e", width=2),
        "ablated": dict(color="#d0d7de", width=1, dash="dot"),
    }
    for kind, (xs, ys) in segments.items():
        fig.add_scatter(
            x=xs,
            y=ys,
            mode="lines",
            line=style[kind],
            hoverinfo="skip",
            showlegend=False,
            row=row,
            col=col,
        )
    labels, colors, hovers = labels or {}, colors or {}, hovers or {}
    nodes = list(y)
    fig.add_scatter(
        x=[l for l, _ in nodes],
        y=[y[n] for n in nodes],
        mode="markers+text",
        text=[labels.get(n, "") for n in nodes],
        textposition="top center",
        marker=dict(
            size=22,
            line=dict(color="black", width=1),
            color=[colors.get(n, "#8c959f" if not on[n] else "#ffffff") for n in nodes],
        ),
        hovertext=[hovers.get((l, j), f"layer {l}, neuron {j}") for l, j in nodes],
        hoverinfo="text",
        showlegend=False,
        row=row,
        col=col,
    )
    fig.add_scatter(
        x=[1.5],
        y=[top + 0.75],
        mode="text",
        text=[title],
        textfont_size=10,
        hoverinfo="skip",
        showlegend=False,
        row=row,
        col=col,
    )
    fig.update_xaxes(range=[-0.3, 3.3], row=row, col=col)
    fig.update_yaxes(range=[-top - 0.4, top + 0.95], row=row, col=col)


def circuit_labels(
    nets: Networks, index: int, circuit: np.ndarray, gate: str
) -> dict[tuple[int, int], str]:
    """Gate names of one interpretation (the first found) of ``circuit`` of network
    ``index``, by (layer, neuron); only the inputs and output if it has none."""
    found = first_interpretation(circuit_candidates(nets, index, circuit[None])[0])
    labels = {(0, 0): "A", (0, 1): "B", (3, 0): gate}
    if found is not None:
        for layer in (0, 1):
            for j, t in zip(np.flatnonzero(circuit[layer]), found[layer]):
                labels[layer + 1, j] = NAMES[t]
    return labels


def location_labels(
    algorithm: Algorithm, location: tuple[int, ...], groups: list[tuple[int, np.ndarray]], gate: str
) -> tuple[dict, dict, dict]:
    """Labels, colours and hover texts, by (layer, neuron), of the neurons that hold each
    intermediate variable v1, v2, ... of ``algorithm`` at ``location`` (group indices)."""
    from plotly.colors import qualitative

    palette = qualitative.Set2
    labels, colors, hovers = {(0, 0): "A", (0, 1): "B", (3, 0): gate}, {}, {}
    for v, g in enumerate(location):
        layer, mask = groups[g]
        for j in np.flatnonzero(mask):
            labels[layer + 1, j] = f"v{v + 1}"
            colors[layer + 1, j] = palette[v % len(palette)]
            hovers[layer + 1, j] = f"v{v + 1} = {algorithm.describe(v)}"
    return labels, colors, hovers


def explanations_figure(
    nets: Networks,
    index: int,
    explained: Explanations,
    algorithms: list[Algorithm],
    gate: str,
    name: str,
) -> go.Figure:
    """One network's explanations: up to three valid circuits, the sparsest first, each
    labelled with one interpretation (top row), and up to three aligned algorithms at their
    first minimal location (bottom row)."""
    from plotly.subplots import make_subplots

    e, width = explained, nets.width
    circuits, groups = neuron_circuits(width), neuron_groups(width)
    fig = make_subplots(rows=2, cols=3, vertical_spacing=0.06, horizontal_spacing=0.03)
    for col, c in enumerate(sorted(e.circuits, key=lambda c: circuits[c].sum())[:3], start=1):
        count = e.interpretations[list(e.circuits).index(c)]
        draw_network(
            fig,
            nets,
            index,
            1,
            col,
            circuits[c],
            circuit_labels(nets, index, circuits[c], gate),
            title=f"circuit of {circuits[c].sum()} neurons, {count} interpretations",
        )
    for col, a in enumerate(e.aligned[:3], start=1):
        labels, colors, hovers = location_labels(algorithms[a], e.locations[a][0], groups, gate)
        draw_network(
            fig,
            nets,
            index,
            2,
            col,
            None,
            labels,
            colors,
            title=algorithms[a].describe(),
            hovers=hovers,
        )
    fig.update_xaxes(visible=False).update_yaxes(visible=False)
    return fig.update_layout(
        height=620,
        title=f"{name}: {len(e.circuits)} valid circuits, "
        f"{e.n_interpretations} interpretations, "
        f"{len(e.aligned)} aligned algorithms, "
        f"{e.n_locations} minimal locations",
    )


def growth_figure(
    widths: Sequence[int], growth: dict[str, list[np.ndarray]], title: str
) -> go.Figure:
    """Mean count per network against the width, one line per measure (``growth``: name ->
    one array of per-network counts per width), with 95% bootstrap intervals, on a log
    scale."""
    import plotly.graph_objects as go
    from plotly.colors import qualitative

    fig = go.Figure()
    for (name, values), color in zip(growth.items(), qualitative.Plotly):
        means = [stats.mean(v) if len(v) else None for v in values]
        fig.add_scatter(
            x=list(widths),
            y=[m.value if m else np.nan for m in means],
            error_y=stats.error_bars([m for m in means if m]) if all(means) else None,
            name=name,
            mode="lines+markers",
            line_color=color,
            customdata=[len(v) for v in values],
            hovertemplate="width %{x}: mean %{y:.3g} over %{customdata} networks<extra></extra>",
        )
    fig.update_yaxes(type="log", title_text="mean per network (log scale)")
    fig.update_xaxes(title_text="neurons per hidden layer", dtick=1)
    return fig.update_layout(height=420, title=title)


def multi_gate_figure(
    joint: dict[tuple[str, ...], np.ndarray],
    per_gate: dict[tuple[str, ...], np.ndarray],
    title: str,
) -> go.Figure:
    """Networks trained on several gates, by task (its gates): the circuits replicating
    every output per network (``joint``, boxes) and the mean valid circuits of each output
    gate (``per_gate``: (networks, gates) counts, bars with 95% bootstrap intervals)."""
    from plotly.colors import qualitative
    from plotly.subplots import make_subplots

    fig = make_subplots(
        rows=1,
        cols=2,
        horizontal_spacing=0.1,
        subplot_titles=[
            "circuits replicating every output, per network",
            "valid circuits per gate (official count)",
        ],
    )
    for gates, counts in joint.items():
        fig.add_box(
            y=counts,
            name=task_name(gates),
            boxpoints="all",
            jitter=0.4,
            pointpos=0,
            marker_color=qualitative.Plotly[len(gates) - 1],
            showlegend=False,
            row=1,
            col=1,
            hovertemplate=f"{task_name(gates)}: %{{y}} circuits<extra></extra>",
        )
    for gates, counts in per_gate.items():
        means = [stats.mean(column) for column in counts.T]
        fig.add_bar(
            x=list(gates),
            y=[m.value for m in means],
            error_y=stats.error_bars(means),
            name=task_name(gates),
            marker_color=qualitative.Plotly[len(gates) - 1],
            legendgroup=task_name(gates),
            customdata=[len(counts)] * len(gates),
            row=1,
            col=2,
            hovertemplate="%{x}: mean %{y:.3g} over %{customdata} networks<extra>"
            + task_name(gates)
            + "</extra>",
        )
    fig.update_yaxes(title_text="valid circuits", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text="mean valid circuits", row=1, col=2)
    fig.update_xaxes(title_text="output gate", row=1, col=2)
    return fig.update_layout(
        barmode="group", height=430, legend_title_text="trained on", title=title
    )
