"""Figures and widgets: the offline plotly renderer, line plots, and a live ipywidgets
control with its static plotly-slider twin.

Written by hand: plotly's own renderers either emit a mimetype the static site cannot
show or load plotly.js from a CDN.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # plotly is imported lazily: `python -m iclr25 list` should be quick
    import plotly.graph_objects as go

    from iclr25.core.params import Scalar
    from iclr25.core.stats import Estimate


# ---------------------------------------------------------------------------------
# Figures: the offline plotly renderer
# ---------------------------------------------------------------------------------


PLOTLY_CONFIG = {
    "displaylogo": False,
    "showSendToCloud": False,
    "modeBarButtonsToRemove": ["sendChartToCloud", "sendDataToCloud", "editInChartStudio"],
}
"""plotly.js's options for every figure: nothing in its tool bar leaves the machine (no
plotly.com logo link, no "Share chart" upload to Plotly Cloud)."""


def figure_html(fig: go.Figure | dict) -> str:
    """A figure as an HTML fragment that draws with the page's own plotly.js (no CDN)."""
    import plotly.io as pio

    return pio.to_html(
        fig,
        full_html=False,
        include_plotlyjs=False,
        include_mathjax=False,
        auto_play=False,
        config=PLOTLY_CONFIG,
    )


TITLE_WIDTH = 72
"""Characters of a figure's title on one line; a longer title wraps (plotly cuts it)."""


def wrap_titles(fig: dict, width: int = TITLE_WIDTH) -> dict:
    """``fig`` (a figure's dict) with its title, and the titles its slider steps set,
    broken into lines of at most ``width`` characters, and room above for them."""
    import textwrap

    def wrap(text: str) -> str:
        if "<br" in text or len(text) <= width:
            return text
        return "<br>".join(textwrap.wrap(text, width))

    layout = fig.setdefault("layout", {})
    title = layout.get("title", {})
    if isinstance(title, dict) and isinstance(title.get("text"), str):
        title["text"] = wrap(title["text"])
        lines = title["text"].count("<br>")
        if lines:
            margin = layout.setdefault("margin", {})
            margin["t"] = max(margin.get("t", 80), 80 + 20 * lines)
    for slider in layout.get("sliders", []):
        for step in slider.get("steps", []):
            for args in step.get("args", [])[1:]:
                if isinstance(args, dict) and isinstance(args.get("title.text"), str):
                    args["title.text"] = wrap(args["title.text"])
    return fig


def use_offline_plotly() -> None:
    """Make ``fig.show()`` emit plotly's mimetype (for Jupyter) and offline HTML (for the book)."""
    import plotly.io as pio
    from plotly.io.base_renderers import MimetypeRenderer

    class BookRenderer(MimetypeRenderer):
        def to_mimebundle(self, fig_dict: dict) -> dict[str, str]:
            return {"text/html": figure_html(wrap_titles(fig_dict))}

    pio.renderers["iclr25"] = BookRenderer()
    pio.renderers["plotly_mimetype"].config = dict(PLOTLY_CONFIG)
    pio.renderers.default = "plotly_mimetype+iclr25"
    pio.templates.default = "plotly_white"


def plot(
    x: Sequence[float],
    ys: Mapping[str, Sequence[float]],
    *,
    title: str = "",
    xlabel: str = "",
    ylabel: str = "",
    log_x: bool = False,
    log_y: bool = False,
    mode: str = "lines",
    colors: Mapping[str, str] | None = None,
    height: int | None = None,
) -> go.Figure:
    """A line figure: each series ``ys[name]`` against ``x``, named in the legend.

    ``mode`` is plotly's (``"lines"``, ``"lines+markers"``), ``colors`` maps a series
    to its colour (default: the template's colour cycle), ``log_x``/``log_y`` make an
    axis logarithmic. Further traces and layout can be added to the returned figure.
    """
    import plotly.graph_objects as go

    fig = go.Figure()
    for name, y in ys.items():
        fig.add_scatter(x=x, y=y, name=name, mode=mode, line_color=(colors or {}).get(name))
    fig.update_xaxes(title_text=xlabel, type="log" if log_x else None)
    fig.update_yaxes(title_text=ylabel, type="log" if log_y else None)
    return fig.update_layout(title=title, height=height)


def estimates_figure(
    groups: Mapping[str, Mapping[str, Estimate]],
    *,
    title: str = "",
    ylabel: str = "",
    unit: str = "edits",
) -> go.Figure:
    """Grouped bars: for each group (a legend entry), each estimate's value by its name
    (the x axis), with its 95% interval as the error bar and its ``n`` (in ``unit``) on
    hover."""
    import plotly.graph_objects as go

    from iclr25.core.stats import error_bars

    fig = go.Figure()
    for group, by_name in groups.items():
        estimates = list(by_name.values())
        fig.add_bar(
            x=list(by_name),
            y=[e.value for e in estimates],
            error_y=error_bars(estimates),
            name=group,
            customdata=[e.n for e in estimates],
            hovertemplate=f"%{{x}}: %{{y:.3f}} (n = %{{customdata}} {unit})",
        )
    return fig.update_layout(title=title, yaxis_title=ylabel, barmode="group")


# ---------------------------------------------------------------------------------
# Widgets: a live control and its static twin
# ---------------------------------------------------------------------------------


def slider_figure(
    figures: Sequence[go.Figure], values: Sequence[Scalar], label: str, active: int = 0
) -> go.Figure:
    """One figure holding every figure of ``figures``, a plotly slider choosing which shows.

    The slider switches trace visibility and the title, so it works on a static page
    with no kernel: the static twin of a live control.
    """
    import plotly.graph_objects as go

    if len(figures) != len(values) or not figures:
        raise ValueError("slider_figure needs one figure per value, and at least one")
    combined = go.Figure(layout=figures[active].layout)
    owner: list[int] = []
    for k, fig in enumerate(figures):
        for trace in fig.data:
            combined.add_trace(trace)
            owner.append(k)
    for trace, k in zip(combined.data, owner):
        trace.visible = k == active
    steps = [
        dict(
            method="update",
            label=str(v),
            args=[{"visible": [k == i for k in owner]}, {"title.text": fig.layout.title.text}],
        )
        for i, (v, fig) in enumerate(zip(values, figures))
    ]
    combined.update_layout(
        sliders=[
            dict(active=active, steps=steps, pad=dict(t=50), currentvalue=dict(prefix=f"{label}: "))
        ]
    )
    return combined


#: The longest value a slider's readout shows in full (ipywidgets gives it a fixed width).
READOUT_CHARS = 12


def default_control(values: Sequence[Scalar], label: str, active: int = 0) -> Any:
    """The live control :func:`explore` gives ``values``: a selection slider, or a menu
    as wide as its longest value where one is longer than :data:`READOUT_CHARS` (a
    slider's readout would cut it)."""
    import ipywidgets as widgets

    common = {
        "options": list(values),
        "value": values[active],
        "description": label,
        "style": {"description_width": "initial"},
    }
    if max(len(str(v)) for v in values) <= READOUT_CHARS:
        return widgets.SelectionSlider(**common, continuous_update=False)
    return widgets.Dropdown(**common, layout=widgets.Layout(width="max-content"))


def explore(
    make_figure: Callable[[Any], go.Figure],
    values: Sequence[Scalar],
    label: str,
    *,
    live: Any = None,
    active: int = 0,
    pickers: Sequence[Any] = (),
) -> None:
    """Show a live control redrawing ``make_figure(value)``, then its static slider twin.

    ``live`` is the ipywidgets control for Jupyter (default: :func:`default_control`);
    its label is shown in full. It calls ``make_figure`` afresh on every change, so it may offer
    values the twin does not. ``pickers`` are widgets shown above it that set it (a
    menu that fills a text box, say). The twin is :func:`slider_figure` over ``values`` and
    is what a reader of the static site moves. Returns nothing, so that a cell ending
    in the call does not show the twin a second time.
    """
    import ipywidgets as widgets
    from IPython.display import display

    twin = slider_figure([make_figure(v) for v in values], values, label, active)
    control = live if live is not None else default_control(values, label, active)
    if hasattr(control, "style") and hasattr(control.style, "description_width"):
        control.style.description_width = "initial"  # the label in full, never cut
    out = widgets.Output()

    def redraw(change: Mapping[str, Any]) -> None:
        with out:
            out.clear_output(wait=True)
            make_figure(change["new"]).show()

    control.observe(redraw, names="value")
    display(LiveControl(widgets.VBox([*pickers, control, out])))
    twin.show()


STATIC_NOTE = (
    "Live control: run this chapter in JupyterLab (`make lab`) to move it.\n"
    "Here, the slider of the figure below works."
)
"""What a page without a kernel shows in place of a live control (the book renders a
widget's plain-text form, not the widget: with no kernel it could not redraw). Two
lines, so that it fits the page's code column without scrolling."""


class LiveControl:
    """An ipywidgets control that shows as itself where a kernel runs (JupyterLab), and
    as :data:`STATIC_NOTE` where none does (the book's pages, a plain-text viewer)."""

    def __init__(self, widget: Any) -> None:
        self.widget = widget

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        return {**bundle, "text/plain": STATIC_NOTE}
