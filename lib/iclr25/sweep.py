"""Sweeps: one chapter over a grid of parameters and seeds, on a Dask cluster.

    python -m iclr25 sweep sro -g seed=0,1,2 -g m=400,600 --smoke --out runs/sro-sweep
    python -m iclr25 sweep sro -g seed=0,1,2 --scheduler tcp://scheduler:8786
    python -m iclr25 sweep sro -g seed=0,1,2,3 --gpus 0,1,2,3

A grid point is one execution of the chapter through :func:`iclr25.run.execute`
(papermill), as one Dask task named after the chapter and the point, held to the
chapter's CPU limit as a ``run`` is (a point past it fails with its cell named). By
default a ``LocalCluster`` of ``workers`` processes with one thread each runs the
points, and ``gpus`` gives each its own GPU; given a scheduler's address or its
scheduler file, the workers of that cluster do (each needs this package installed).
A point's kernel gets its host's cores divided among the host's worker threads
(``OMP_NUM_THREADS`` and the like, which torch and the BLAS libraries read), so that
the workers do not oversubscribe the cores, and the book's allocator settings
(:data:`iclr25.build.ALLOCATOR_VARIABLES`): Dask's workers set their own otherwise.
A point whose worker died runs again on another (Dask's ``allowed-failures``), and
one that raised, :data:`RETRIES` times.

The client writes every file, as points finish, so workers need no shared disk::

    DIR/points/<key>/<slug>.ipynb        the executed notebook (a failed one too)
    DIR/points/<key>/<slug>.claims.json  its claims, as ``run`` writes them
    DIR/points/<key>/point.json          parameters, error, worker, start and wall time
    DIR/sweep.parquet                    one row per point and claim
    DIR/sweep.html                       each claim across the grid (plotly, offline)

``<key>`` is a hash of the chapter and the point's complete parameters. A point's
folder is filled under a temporary name and renamed into place when complete, so an
interrupted sweep never leaves a half-written point behind. A sweep into a folder that
holds finished points skips them; a point that failed, or whose files do not read
back, runs again.
"""

from __future__ import annotations

import hashlib
import html
import itertools
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from iclr25 import toc
from iclr25.cluster import connect, dashboard, slots_by_host
from iclr25.core import ParameterError, Scalar, claim_from_record

if TYPE_CHECKING:  # imported where they are used: checking a grid stays quick
    import pandas as pd
    import plotly.graph_objects as go
    from distributed import Client

STATUS_COLOURS = {
    "holds": "#1a7f37",
    "inconclusive": "#6e7781",
    "known gap": "#9a6700",
    "FAILED": "#cf222e",
    "holds, gap declared": "#cf222e",
}
"""A claim status's colour in sweep.html: the book's claim colours."""


# ---------------------------------------------------------------------------------
# The grid
# ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Point:
    """One grid point: the chapter, its complete checked parameters, and the swept ones."""

    chapter: str
    parameters: dict[str, Scalar]
    varied: dict[str, Scalar]

    @property
    def key(self) -> str:
        """A hash of the chapter and the parameters: the point's name in the sweep's folder."""
        text = json.dumps([self.chapter, self.parameters], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @property
    def label(self) -> str:
        """The swept parameters' values, ``"seed=0, m=400"``."""
        return ", ".join(f"{k}={v}" for k, v in self.varied.items()) or "defaults"


def parse_grid(slug: str, entries: Sequence[str]) -> dict[str, list[Scalar]]:
    """``-g`` entries, ``KEY=V1,V2,...``, as parameter -> checked values. Values that
    hold commas themselves are separated by ``;`` instead (``-g "gates=XOR,AND;XOR,OR"``).
    Raises :class:`ParameterError` naming the first bad entry."""
    schema = toc.get(slug).module().PARAMETERS
    grid: dict[str, list[Scalar]] = {}
    for entry in entries:
        name, eq, text = entry.partition("=")
        if not eq or not text:
            raise ParameterError(
                f"-g {entry!r} is not KEY=V1,V2,...; accepted keys: {', '.join(schema)}"
            )
        if name not in schema:
            raise ParameterError(
                f"unknown parameter {name!r} for {slug}; accepted: {', '.join(schema)}"
            )
        if name in grid:
            raise ParameterError(f"-g gives {name!r} twice; list all its values in one entry")
        values = [schema[name].parse(name, v) for v in text.split(";" if ";" in text else ",")]
        if len(set(values)) < len(values):
            raise ParameterError(f"-g {entry!r} lists a value twice")
        grid[name] = values
    return grid


def grid_points(
    slug: str,
    grid: Mapping[str, Sequence[Scalar]],
    fixed: Mapping[str, Scalar] | None = None,
    *,
    smoke: bool = False,
) -> list[Point]:
    """Every combination of the grid's values (the first parameter varies slowest), on
    top of the ``fixed`` parameters and, with ``smoke``, the chapter's smoke overrides.
    Each point is checked before any runs: :class:`ParameterError` otherwise."""
    from iclr25.run import parameters

    fixed = dict(fixed or {})
    both = sorted(set(grid) & set(fixed))
    if both:
        raise ParameterError(f"parameter {both[0]!r} is both swept (-g) and fixed (-p)")
    points = []
    for values in itertools.product(*grid.values()):
        varied = dict(zip(grid, values, strict=True))
        points.append(Point(slug, parameters(slug, {**fixed, **varied}, smoke=smoke), varied))
    return points


# ---------------------------------------------------------------------------------
# One point, on a worker
# ---------------------------------------------------------------------------------


def run_point(
    chapter: str,
    parameters: Mapping[str, Scalar],
    slots_by_host: Mapping[str, int],
    allocator: Mapping[str, str],
) -> dict[str, Any]:
    """Execute one point on a Dask worker: its files' text and how it went.

    The kernel's torch and BLAS threads are the host's cores over its worker threads
    (``slots_by_host``; the worker's own count for a host that joined later), and its
    allocator settings are the client's (``allocator``), not those Dask's nanny gives
    its worker. A failing chapter does not raise: its error is part of the result.
    """
    from distributed import get_worker
    from distributed.comm import get_address_host
    from papermill.exceptions import PapermillExecutionError

    from iclr25.build import THREAD_VARIABLES, cores
    from iclr25.run import execute

    worker = get_worker()
    slots = slots_by_host.get(get_address_host(worker.address), worker.state.nthreads)
    threads = max(1, cores() // slots)
    kernel = {**dict.fromkeys(THREAD_VARIABLES, str(threads)), **allocator}
    started, clock = datetime.now(UTC), time.perf_counter()
    error = None
    with tempfile.TemporaryDirectory() as tmp:
        try:
            execute(chapter, tmp, dict(parameters), environment=kernel)
        except PapermillExecutionError as err:
            error = f"cell {err.exec_count}: {err.ename}: {err.evalue}"
        except Exception as err:  # the kernel died, the notebook could not be written, ...
            error = f"{type(err).__name__}: {err}"
        files = {f.name: f.read_text() for f in Path(tmp).iterdir() if f.is_file()}
    return {
        "files": files,
        "error": error,
        "worker": worker.address,
        "threads": threads,
        "started": started.isoformat(timespec="seconds"),
        "wall_s": round(time.perf_counter() - clock, 2),
    }


# ---------------------------------------------------------------------------------
# The sweep's folder
# ---------------------------------------------------------------------------------


def finished(out: Path, point: Point) -> dict[str, Any] | None:
    """The record of ``point`` if an earlier sweep into ``out`` finished it: its
    ``point.json`` with its claims. None if it never ran, failed, or a file of it does
    not read back (a truncated file, other parameters)."""
    folder = out / "points" / point.key
    try:
        record = json.loads((folder / "point.json").read_text())
        claims = json.loads((folder / f"{point.chapter}.claims.json").read_text())
        json.loads((folder / f"{point.chapter}.ipynb").read_text())
    except (OSError, ValueError):
        return None
    if record.get("error") is not None or claims.get("parameters") != point.parameters:
        return None
    return {**record, "claims": claims["claims"]}


def save(out: Path, point: Point, result: Mapping[str, Any]) -> dict[str, Any]:
    """Write a point's files and its ``point.json`` into a temporary folder, then rename
    it to ``out/points/<key>``; return its record with its claims."""
    record = {
        "chapter": point.chapter,
        "key": point.key,
        "parameters": point.parameters,
        "varied": point.varied,
        **{k: result[k] for k in ("error", "worker", "threads", "started", "wall_s")},
    }
    tmp = out / "points" / f".{point.key}.partial"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    for name, text in result["files"].items():
        (tmp / name).write_text(text)
    (tmp / "point.json").write_text(json.dumps(record, indent=2) + "\n")
    final = out / "points" / point.key
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    claims = result["files"].get(f"{point.chapter}.claims.json")
    return {**record, "claims": json.loads(claims)["claims"] if result["error"] is None else []}


COLUMNS = (
    "point", "claim", "kind", "status", "outcome", "holds", "measured", "value",
    "estimate", "low", "high", "n", "unit", "items", "rule", "error", "wall_s", "worker",
    "threads", "started",
)  # fmt: skip
"""The table's columns besides the parameters, which follow ``point``."""


def table(records: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per point and claim (:data:`COLUMNS`): the point's key and parameters,
    the claim's id, kind, status, outcome, measured text, ``value`` (the measurement, where
    it is a single number), its estimate with the 95% interval ``low``-``high``, ``n`` and
    what n counts, ``unit`` (runs, with their ``items``, or items; claims decided by a
    margin), its rule, and the point's error, worker, kernel threads,
    start and wall time. A failed point has one row, with no claim and the status ``"error"``."""
    import pandas as pd

    rows = []
    for r in records:
        run = {k: r[k] for k in ("error", "wall_s", "worker", "threads", "started")}
        claims = [claim_from_record(c) for c in r["claims"]]
        found = [
            {
                "claim": c.id,
                "kind": c.kind,
                "status": c.status,
                "outcome": c.outcome,
                "holds": c.holds,
                "measured": c.measured,
                "value": _number(c.value, c.measured),
                "estimate": c.estimate,
                "low": c.low,
                "high": c.high,
                "n": c.n,
                "unit": c.unit,
                "items": c.items,
                "rule": c.rule,
            }
            for c in claims
        ] or [{"status": "error" if r["error"] else "no claims"}]
        for fields in found:
            cells = {**fields, **run}
            rows.append(
                {"point": r["key"], **r["parameters"], **{c: cells.get(c) for c in COLUMNS[1:]}}
            )
    frame = pd.DataFrame(rows) if rows else pd.DataFrame(columns=list(COLUMNS))
    for column in ("value", "estimate", "low", "high"):
        frame[column] = frame[column].astype(float)  # NaN where there is no number
    frame["started"] = pd.to_datetime(frame["started"])
    return frame


def _number(value: object, text: str) -> float | None:
    """The claim's value where it is one number, else its measured text as a number."""
    if isinstance(value, float | int):
        return float(value)
    try:
        return float(text)
    except ValueError:
        return None


def _replace(path: Path, write: Callable[[Path], object]) -> None:
    """Write ``path`` under a temporary name, then rename it: a reader never sees half."""
    tmp = path.with_name(f".{path.name}.partial")
    write(tmp)
    os.replace(tmp, path)


def write_table(out: Path, records: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """(Re)write ``out/sweep.parquet`` from the points' records; return the table."""
    frame = table(records)
    _replace(out / "sweep.parquet", lambda path: frame.to_parquet(path, index=False))
    return frame


def holding(frame: pd.DataFrame) -> pd.DataFrame:
    """Per claim, in the order the chapter made them: its kind, the points that measured
    it, those where it holds, that share, and the count of each status."""
    import pandas as pd

    rows = []
    for claim, group in frame[frame["status"] != "error"].groupby("claim", sort=False):
        counts = group["status"].value_counts()
        rows.append(
            {
                "claim": claim,
                "kind": group["kind"].iloc[0],
                "points": len(group),
                "holds": int(group["holds"].sum()),
                "share": float(group["holds"].mean()),
                "statuses": ", ".join(f"{s} {n}" for s, n in counts.items()),
            }
        )
    return pd.DataFrame(rows, columns=["claim", "kind", "points", "holds", "share", "statuses"])


# ---------------------------------------------------------------------------------
# sweep.html
# ---------------------------------------------------------------------------------


def claim_figure(frame: pd.DataFrame, claim: str, axes: Sequence[str]) -> go.Figure:
    """One claim across the grid: a line over one swept parameter, a heatmap over the
    first two (the mean over any others). It shows the measured value where every point
    gave a single number (on a line, with its 95% interval where the claim has one), else
    whether the claim holds (in a heatmap cell over several
    points, the share that hold); markers and cells give the status, hover the measured
    text."""
    import plotly.graph_objects as go

    rows = frame[frame["claim"] == claim]
    interval = bool(rows["low"].notna().all() and rows["high"].notna().all())
    numeric = bool(rows["value"].notna().all())
    rows = rows.assign(_shown=rows["value"] if numeric else rows["holds"].astype(float))
    shown = "measured value" if numeric else "holds"
    held = f"holds at {int(rows['holds'].sum())} of {counted(len(rows), 'point')}"
    title = f"{claim} ({rows['kind'].iloc[0]}): {held}"
    if len(axes) < 2:
        rows = rows.sort_values(axes[0]) if axes else rows
        fig = go.Figure(
            go.Scatter(
                x=rows[axes[0]] if axes else rows["point"],
                y=rows["_shown"],
                mode="lines+markers",
                marker={"color": [STATUS_COLOURS[s] for s in rows["status"]], "size": 11},
                line={"color": "#8c959f"},
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": rows["high"] - rows["_shown"],
                    "arrayminus": rows["_shown"] - rows["low"],
                }
                if interval and numeric
                else None,
                hovertext=[
                    f"{r['status']}: {html.escape(r['measured'])}" for _, r in rows.iterrows()
                ],
                hoverinfo="x+text",
            )
        )
        fig.update_layout(xaxis_title=axes[0] if axes else "point", yaxis_title=shown)
        if not numeric:
            fig.update_yaxes(range=[-0.2, 1.2], tickvals=[0, 1], ticktext=["no", "yes"])
    else:
        cells = rows.groupby([axes[1], axes[0]], sort=False)
        z = cells["_shown"].mean().unstack()
        text = cells.apply(_cell_text).unstack().reindex(index=z.index, columns=z.columns)
        hover = cells["measured"].agg(lambda m: "<br>".join(map(html.escape, m))).unstack()
        fig = go.Figure(
            go.Heatmap(
                x=[str(v) for v in z.columns],
                y=[str(v) for v in z.index],
                z=z.to_numpy(),
                text=text.to_numpy(),
                texttemplate="%{text}",
                hovertext=hover.reindex(index=z.index, columns=z.columns).to_numpy(),
                hoverinfo="x+y+z+text",
                colorscale="Viridis" if numeric else [[0, "#cf222e"], [1, "#1a7f37"]],
                zmin=None if numeric else 0,
                zmax=None if numeric else 1,
                colorbar={"title": shown if numeric else "share holding"},
            )
        )
        fig.update_layout(
            xaxis={"title": axes[0], "type": "category"},
            yaxis={"title": axes[1], "type": "category"},
        )
        if axes[2:]:
            title += f" (mean over {', '.join(axes[2:])})"
    fig.update_layout(title=title, height=380, margin={"t": 60})
    return fig


def _cell_text(cell: pd.DataFrame) -> str:
    """A heatmap cell's label: the status of its one point, or how many of its points hold."""
    if len(cell) == 1:
        return cell["status"].iloc[0]
    return f"{int(cell['holds'].sum())}/{len(cell)} hold"


def page_html(chapter: str, frame: pd.DataFrame, axes: Sequence[str]) -> str:
    """sweep.html: the share of points where each claim holds, the failed points, then
    each claim across the grid. plotly.js is inlined once: the page needs no network."""
    import plotly.io as pio

    summary = holding(frame)
    rows = "".join(
        f"<tr><td>{html.escape(r.claim)}</td><td>{r.kind}</td><td>{r.holds} of {r.points}"
        f" ({r.share:.0%})</td><td>{html.escape(r.statuses)}</td></tr>"
        for r in summary.itertuples()
    )
    failed = "".join(
        f"<li>{html.escape(', '.join(f'{a}={r[a]}' for a in axes))} (<code>{r['point']}</code>)"
        f": {html.escape(str(r['error']))}</li>"
        for _, r in frame[frame["status"] == "error"].iterrows()
    )
    figures = "".join(
        pio.to_html(claim_figure(frame, claim, axes), full_html=False, include_plotlyjs=k == 0)
        for k, claim in enumerate(summary["claim"])
    )
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{chapter} sweep</title>"
        "<style>body{font-family:sans-serif;margin:2em}td,th{padding:2px 10px;"
        "text-align:left}</style></head><body>"
        f"<h1>Sweep of {chapter}</h1><p>{frame['point'].nunique()} points, over "
        f"{html.escape(', '.join(axes)) or 'no swept parameter'}.</p>"
        "<table><thead><tr><th>claim</th><th>kind</th><th>holds at</th><th>statuses</th>"
        f"</tr></thead><tbody>{rows}</tbody></table>"
        + (f"<h2>Failed points</h2><ul>{failed}</ul>" if failed else "")
        + figures
        + "</body></html>"
    )


# ---------------------------------------------------------------------------------
# The sweep
# ---------------------------------------------------------------------------------


RETRIES = 2
"""Times a point whose task raised runs again (a chapter's own failure is a result, not
an exception)."""


@dataclass
class Sweep:
    """What a sweep did: each point's record (grid order; None if it did not finish),
    how many had finished before, the table, and the wall time of this run."""

    points: list[Point]
    records: list[dict[str, Any] | None]
    skipped: int
    frame: pd.DataFrame
    wall_s: float

    @property
    def failed(self) -> list[tuple[Point, str]]:
        """The points that raised, with their errors."""
        return [
            (p, r["error"])
            for p, r in zip(self.points, self.records, strict=True)
            if r is not None and r["error"] is not None
        ]


def sweep(
    points: Sequence[Point],
    out: str | Path,
    *,
    workers: int | None = None,
    scheduler: str | None = None,
    scheduler_file: str | None = None,
    gpus: Sequence[str] | None = None,
    progress: bool = True,
    log: Callable[[str], None] = print,
) -> Sweep:
    """Run the ``points`` that ``out`` does not hold finished on a Dask cluster
    (:func:`connect`), saving each point and the table as it finishes; write
    ``sweep.html`` at the end, also after Ctrl-C, which cancels the points still to run."""
    from distributed import as_completed
    from tqdm import tqdm

    from iclr25.build import ALLOCATOR_VARIABLES

    out = Path(out)
    (out / "points").mkdir(parents=True, exist_ok=True)
    for stale in (out / "points").glob(".*.partial"):  # left by a sweep that was killed
        shutil.rmtree(stale)
    chapter = points[0].chapter
    records = {p.key: finished(out, p) for p in points}
    todo = [p for p in points if records[p.key] is None]
    log(f"{chapter}: {counted(len(points), 'point')}, {len(points) - len(todo)} finished before")
    clock = time.perf_counter()
    try:
        if todo:
            with connect(workers, scheduler, scheduler_file=scheduler_file, gpus=gpus) as client:
                slots = slots_by_host(client)
                log(_describe(client, slots, gpus, local=not (scheduler or scheduler_file)))
                if link := dashboard(client):
                    log(f"Dask dashboard: {link}")
                allocator = {k: os.environ.get(k, v) for k, v in ALLOCATOR_VARIABLES.items()}
                futures = {
                    client.submit(
                        run_point,
                        p.chapter,
                        p.parameters,
                        slots,
                        allocator,
                        key=f"{p.chapter}-{p.label}-{p.key}",  # the dashboard groups by chapter
                        retries=RETRIES,
                    ): p
                    for p in todo
                }
                try:
                    for future in tqdm(
                        as_completed(futures), total=len(todo), unit="point", disable=not progress
                    ):
                        point = futures[future]
                        records[point.key] = save(out, point, _result(future))
                        write_table(out, [r for r in records.values() if r is not None])
                finally:  # after Ctrl-C or an error here, nothing should run on
                    client.cancel(list(futures))
    finally:
        frame = write_table(out, [r for r in records.values() if r is not None])
        axes = [a for a in points[0].varied if len({p.varied[a] for p in points}) > 1]
        _replace(out / "sweep.html", lambda path: path.write_text(page_html(chapter, frame, axes)))
    return Sweep(
        list(points),
        [records[p.key] for p in points],
        len(points) - len(todo),
        frame,
        time.perf_counter() - clock,
    )


def _describe(
    client: Client, slots: Mapping[str, int], gpus: Sequence[str] | None, *, local: bool
) -> str:
    """The cluster in one line: its workers, threads and GPUs."""
    from iclr25.build import cores

    workers = len(client.scheduler_info(n_workers=-1)["workers"])
    if local:
        threads = max(1, cores() // sum(slots.values()))
        own = f", GPU {', '.join(gpus[:workers])} one each" if gpus else ""
        return (
            f"LocalCluster: {counted(workers, 'worker')}, one thread each{own}; "
            f"{counted(threads, 'torch/BLAS thread')} in each point's kernel"
        )
    return (
        f"Dask scheduler {client.scheduler.address}: {counted(workers, 'worker')}, "
        f"{sum(slots.values())} threads on {counted(len(slots), 'host')}"
    )


def counted(n: int, noun: str) -> str:
    """``counted(1, "point")`` is ``"1 point"``; ``counted(3, "point")``, ``"3 points"``."""
    return f"{n} {noun}{'s' * (n != 1)}"


def _result(future: Any) -> dict[str, Any]:
    """A finished future's result; a task that did not return (its worker died, ...)
    as a failed point."""
    try:
        return future.result()
    except Exception as err:
        return {
            "files": {},
            "error": f"{type(err).__name__}: {err}",
            "worker": None,
            "threads": None,
            "started": datetime.now(UTC).isoformat(timespec="seconds"),
            "wall_s": None,
        }
