"""The DLGN chapter's figures: gate distances during training, the gates of a 2-D DLGN
over the tree's hyperplanes, and the sweep over beta."""

from __future__ import annotations

import numpy as np

from iclr25.chapters.dlgn.data import TreeData

NODE_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2")


def distance_figure(histories: dict[str, np.ndarray]):
    """Per tree node, the closest gate's distance against the epoch, one panel a model
    (``histories``: model -> (epochs + 1, nodes))."""
    from plotly.subplots import make_subplots

    fig = make_subplots(
        rows=1, cols=len(histories), subplot_titles=list(histories), shared_yaxes=True
    )
    for col, history in enumerate(histories.values(), start=1):
        history = np.asarray(history)
        for k in range(history.shape[1]):
            fig.add_scatter(
                x=np.arange(len(history)),
                y=history[:, k],
                mode="lines",
                name=f"node {k}",
                legendgroup=f"node {k}",
                showlegend=col == 1,
                line_color=NODE_COLORS[k % len(NODE_COLORS)],
                row=1,
                col=col,
            )
        fig.update_xaxes(title_text="epoch", row=1, col=col)
    fig.update_yaxes(title_text="distance of the closest gate", rangemode="tozero", col=1)
    return fig.update_layout(height=380, title="Gates move onto the tree's hyperplanes")


def _line_in_box(a: np.ndarray, c: float, keep=None, samples: int = 400):
    """x and y of the line a.x + c = 0 inside [-1, 1]^2 (where ``keep`` holds), with
    None between pieces."""
    norm = max(float(np.linalg.norm(a)), 1e-12)
    base, direction = -c * a / norm**2, np.array([-a[1], a[0]]) / norm
    points = base + np.linspace(-3, 3, samples)[:, None] * direction
    ok = (np.abs(points) <= 1).all(1)
    if keep is not None:
        ok &= keep(points)
    xs: list = []
    ys: list = []
    for i in np.flatnonzero(ok):
        if xs and not ok[i - 1]:
            xs.append(None)
            ys.append(None)
        xs.append(points[i, 0])
        ys.append(points[i, 1])
    return xs + [None], ys + [None]


def plane_figure(data: TreeData, a: np.ndarray, c: np.ndarray, title: str):
    """A 2-D tree data set: the points by label, the tree's hyperplanes inside their
    cells (thick), every gate of the DLGN (grey) and each node's closest gate (dashed,
    the node's colour)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for label, color in ((0, "#9ecae1"), (1, "#fdae6b")):
        pts = data.x[data.y == label]
        fig.add_scatter(
            x=pts[:, 0],
            y=pts[:, 1],
            mode="markers",
            name=f"label {label}",
            marker=dict(size=3, color=color),
        )
    gx: list = []
    gy: list = []
    for g in range(len(c)):
        xs, ys = _line_in_box(a[g], c[g])
        gx += xs
        gy += ys
    fig.add_scatter(
        x=gx, y=gy, mode="lines", name="DLGN gates", line=dict(color="rgba(80,80,80,0.25)", width=1)
    )
    tree, norms = data.tree, np.maximum(np.linalg.norm(a, axis=1), 1e-12)
    for k in range(len(tree.biases)):
        color = NODE_COLORS[k % len(NODE_COLORS)]
        xs, ys = _line_in_box(
            tree.normals[k], tree.biases[k], keep=lambda p, k=k: tree.route(p)[2][:, k]
        )
        fig.add_scatter(
            x=xs, y=ys, mode="lines", name=f"tree node {k}", line=dict(color=color, width=4)
        )
        gates = np.hstack([a, c[:, None]]) / norms[:, None]
        node = np.append(tree.normals[k], tree.biases[k])
        best = int(
            np.argmin(
                np.minimum(
                    np.linalg.norm(gates - node, axis=1), np.linalg.norm(gates + node, axis=1)
                )
            )
        )
        xs, ys = _line_in_box(a[best], c[best])
        fig.add_scatter(
            x=xs,
            y=ys,
            mode="lines",
            name=f"closest gate to {k}",
            line=dict(color=color, width=2, dash="dash"),
        )
    fig.update_xaxes(range=[-1, 1], title_text="x1")
    fig.update_yaxes(range=[-1, 1], scaleanchor="x", title_text="x2")
    return fig.update_layout(title=title, height=520, width=620)


def beta_figure(sweep: dict[float, dict], beta: float):
    """Accuracy and median closest-gate distance against beta (left, the chosen beta
    marked), and the distance of every node's closest gate at ``beta`` (right)."""
    from plotly.subplots import make_subplots

    betas = sorted(sweep)
    acc = [sweep[b]["accuracy"] for b in betas]
    med = [float(np.median(sweep[b]["distances"])) for b in betas]
    fig = make_subplots(rows=1, cols=2, subplot_titles=["against beta", f"beta = {beta:g}"])
    fig.add_scatter(x=betas, y=acc, name="test accuracy", mode="lines+markers", row=1, col=1)
    fig.add_scatter(x=betas, y=med, name="median distance", mode="lines+markers", row=1, col=1)
    fig.add_vline(x=beta, line_dash="dot", line_color="gray", row=1, col=1)
    distances = np.asarray(sweep[beta]["distances"])
    fig.add_bar(
        x=[f"node {k}" for k in range(len(distances))],
        y=distances,
        name="closest-gate distance",
        marker_color="#555",
        row=1,
        col=2,
    )
    fig.update_xaxes(type="log", title_text="beta", row=1, col=1)
    fig.update_yaxes(rangemode="tozero")
    return fig.update_layout(
        height=380,
        title=f"beta = {beta:g}: accuracy {sweep[beta]['accuracy']:.3f}, "
        f"median distance {np.median(distances):.3f}",
    )
