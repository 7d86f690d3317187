"""The chapter's figures: size against faithfulness per method, and one image's
explanations by every method."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import torch
from plotly.colors import qualitative

from iclr25 import vision
from iclr25.chapters.sst.evaluation import Explained
from iclr25.chapters.sst.method import METHODS, VARIANT_NAMES

if TYPE_CHECKING:
    import plotly.graph_objects as go


# ---------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------

COLORS = dict(zip(METHODS, ["black", "#7f7f7f", *qualitative.Plotly]))
"""One colour per method: SST black, SST-ST grey, the baselines plotly's colour cycle."""

BY_CONSTRUCTION = (
    "Anchors, IG and gradient search under the panel's fill and stop at a subset that passes "
    "its check: faithful by construction<br>up to a fresh fill's randomness. SIS searches "
    "under the zero baseline and is judged under the panel's notion."
)
"""The size-faithfulness figure's note on what the baselines' faithfulness means."""


def size_faithfulness_figure(results: Mapping[tuple[str, str, str], Explained]) -> go.Figure:
    """Each method at its (size, faithfulness), in %, one panel per (data set, notion) of
    ``results`` (keyed by data set, notion and method): the best corner is the top left."""
    from plotly.subplots import make_subplots

    data, notions, methods = (list(dict.fromkeys(key[i] for key in results)) for i in range(3))
    fig = make_subplots(
        rows=len(data),
        cols=len(notions),
        shared_yaxes=True,
        subplot_titles=[f"{d}, {k}" for d in data for k in notions],
        vertical_spacing=0.14,
    )
    for row, d in enumerate(data, start=1):
        for col, k in enumerate(notions, start=1):
            for m in methods:
                r = results[d, k, m]
                fig.add_scatter(
                    x=[100 * r.size],
                    y=[100 * r.faithfulness],
                    mode="markers",
                    name=m,
                    legendgroup=m,
                    showlegend=row == col == 1,
                    row=row,
                    col=col,
                    marker=dict(
                        color=COLORS[m], size=11, symbol="star" if m in VARIANT_NAMES else "circle"
                    ),
                    hovertemplate=f"{m}: size %{{x:.2f}}%, faithfulness "
                    f"%{{y:.1f}}%, {1000 * r.seconds:.3g} ms"
                    "<extra></extra>",
                )
    fig.update_xaxes(title_text="explanation size (% of features)", row=len(data))
    fig.update_yaxes(title_text="faithfulness (%)", col=1)
    return fig.update_layout(
        title=dict(
            text="Size and faithfulness of the explanations<br><sup>" + BY_CONSTRUCTION + "</sup>",
            font_size=15,
        ),
        height=300 * len(data) + 160,
        margin_t=110,
    )


def explanations_figure(
    image: torch.Tensor, found: Mapping[tuple[str, str], Explained], title: str
) -> go.Figure:
    """One image (h, w) and each method's explanation of it, one row per notion of
    ``found`` (keyed by notion and method): kept pixels in colour, the rest grey; each
    title gives the size and whether the prediction survived one fresh fill (✓ or ✗)."""
    notions, methods = (list(dict.fromkeys(key[i] for key in found)) for i in range(2))
    image = image.numpy()
    original = ("gray_r", None, None, "pixel value %{z:.2f}<extra></extra>")
    kept = ("Viridis", 0, 1, "kept, value %{z:.2f}<extra></extra>")
    images, titles = [], []
    for k in notions:
        images.append(image)
        titles.append(f"{k} fill")
        for m in methods:
            r = found[k, m]
            images.append(np.where(r.masks[0, 0].numpy(), image, np.nan))
            titles.append(f"{m}: {int(r.masks.sum())} px {'✓' if r.faithfulness else '✗'}")
    scales, low, high, hover = zip(*([original] + [kept] * len(methods)) * len(notions))
    return vision.image_grid(
        images,
        len(notions),
        len(methods) + 1,
        titles=titles,
        colorscale=scales,
        zmin=low,
        zmax=high,
        hovertemplate=hover,
        title_size=9,
        plot_bgcolor="#e5e5e5",
        height=170 * len(notions) + 90,
        title=title,
    )
