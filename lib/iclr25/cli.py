"""``python -m iclr25``: list the chapters, run one, sweep a grid, or replicate over seeds.

    python -m iclr25 list
    python -m iclr25 run sro -p n=50000 -p seed=3 --out runs/sro [--smoke]
    python -m iclr25 claims runs/sro
    python -m iclr25 sweep sro -g seed=0,1,2 -g m=400,600 [--workers 2 | --scheduler ADDRESS
        | --scheduler-file PATH | --gpus 0,1,2,3]
    python -m iclr25 replicate sro --seeds 1000,1001,1002 [--workers 2 | --scheduler ADDRESS]
    python -m iclr25 cache list
    python -m iclr25 cache clear [sro]

Bad input (an unknown chapter or parameter, a value of the wrong type or out of
range, in any point of a sweep's grid, a bad ``--seeds`` list, or an ``--out`` folder
that cannot be created or written) exits with status 2 and one line that names the
problem and what is accepted, before anything runs. A run exits 1 if a cell fails, or
(except with --smoke, whose scale decides nothing) if a claim fails without a declared
known gap; a sweep or a replication exits 1 if any point fails, and 130 when
interrupted (the same command resumes). ``claims`` prints the claims that runs wrote to
a folder, with the scoreboard's summary. ``replicate`` is a sweep over the seed alone
(:mod:`iclr25.replicate`): it prints each claim's outcome at each seed, flags a claim
that holds at one seed and is contradicted at another (``FLIPS``; a flip is a result,
so it exits 0), and writes the table to ``replicate.md`` in its folder. ``cache list``
shows the model cache's artefacts (:func:`iclr25.core.artefacts`): each one's size,
age and the chapters that used it; ``cache clear`` removes them all, ``cache clear
SLUG`` those that chapter used.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from iclr25 import toc
from iclr25.core import ParameterError

if TYPE_CHECKING:
    from iclr25.sweep import Point, Sweep


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, not argparse's usage block
        self.exit(2, f"iclr25: error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m iclr25", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    sub.add_parser("list", help="list the built chapters and their parameters")
    run = sub.add_parser("run", help="execute one chapter through papermill")
    run.add_argument("slug", help="the chapter, e.g. sro")
    run.add_argument(
        "-p",
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a parameter (repeatable)",
    )
    run.add_argument(
        "--out",
        default=None,
        help="folder for the executed notebook and its claims JSON (default: runs/<slug>)",
    )
    run.add_argument(
        "--smoke", action="store_true", help="start from the chapter's smoke overrides (seconds)"
    )
    sweep = sub.add_parser("sweep", help="run one chapter over a grid of parameters, on Dask")
    sweep.add_argument("slug", help="the chapter, e.g. sro")
    sweep.add_argument(
        "-g",
        "--grid",
        action="append",
        default=[],
        metavar="KEY=V1,V2,...",
        help="a swept parameter and its values (repeatable: every combination runs; "
        "';' separates values that hold commas)",
    )
    _dask_options(sweep, "points, sweep.parquet and sweep.html", "sweep")
    replicate = sub.add_parser(
        "replicate",
        help="run one chapter at several seeds, on Dask, and flag a claim whose outcome "
        "flips between them",
    )
    replicate.add_argument("slug", help="the chapter, e.g. sro")
    replicate.add_argument(
        "--seeds",
        required=True,
        metavar="S1,S2,...",
        help="the seeds, comma-separated distinct integers 0..2**32-1 (the chapter passes "
        "use 1000 and up)",
    )
    _dask_options(replicate, "points, replicate.md, sweep.parquet and sweep.html", "replicate")
    cache = sub.add_parser("cache", help="list or clear the model cache's artefacts")
    cache.add_argument("action", choices=["list", "clear"])
    cache.add_argument(
        "slug", nargs="?", help="with clear: only the artefacts this chapter used (e.g. sro)"
    )
    claims = sub.add_parser("claims", help="print the claims recorded in a folder of runs")
    claims.add_argument(
        "folder",
        help="a folder that `run` wrote (--out), or the book's _build/jupyter_execute/notebooks",
    )
    return parser


def _dask_options(parser: argparse.ArgumentParser, holds: str, name: str) -> None:
    """The options that ``sweep`` and ``replicate`` share: fixed parameters, the cluster,
    the folder and smoke scale."""
    parser.add_argument(
        "-p",
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="fix a parameter at every point (repeatable)",
    )
    parser.add_argument(
        "--workers",
        type=_positive,
        default=None,
        help="local worker processes, one thread each (default 2); torch and BLAS "
        "threads are the cores divided among them",
    )
    parser.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run on the Dask cluster whose scheduler is at ADDRESS (tcp://host:8786) "
        "instead of a local one",
    )
    parser.add_argument(
        "--scheduler-file",
        metavar="PATH",
        help="run on the Dask cluster whose scheduler wrote PATH "
        "(dask scheduler --scheduler-file PATH) instead of a local one",
    )
    parser.add_argument(
        "--gpus",
        metavar="ID1,ID2,...",
        help="give each local worker its own GPU through CUDA_VISIBLE_DEVICES "
        "(default: one worker per GPU)",
    )
    parser.add_argument(
        "--out",
        default=None,
        help=f"folder for the {holds} (default: runs/<slug>-{name}); the same command "
        "into it again skips the finished points",
    )
    parser.add_argument(
        "--smoke", action="store_true", help="run every point with the chapter's smoke overrides"
    )


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return int(text)


def _out_folder(folder: str) -> Path:
    """``folder``, created if need be; a ParameterError if it cannot be created or written."""
    path = Path(folder)
    try:
        path.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
    except OSError as err:
        raise ParameterError(
            f"--out {folder}: cannot create or write this folder ({err.strerror})"
        ) from None
    return path


def _list() -> None:
    for c in toc.built():
        print(f"{c.slug}: {c.title}  [{c.part}]")
        module = c.module()
        for name, p in module.PARAMETERS.items():
            smoke = f"  (smoke: {module.SMOKE[name]!r})" if name in module.SMOKE else ""
            print(f"    {name} = {p.default!r}  {p.help}; {p.accepted(name)}{smoke}")


def _cache(action: str, slug: str | None) -> int:
    """``cache list``, or ``cache clear [SLUG]``; a bad chapter name exits 2."""
    import time

    from iclr25 import core

    if slug is not None:
        try:
            toc.get(slug)
            if action == "list":
                raise ValueError(f"cache list takes no chapter (got {slug!r}); it lists them all")
        except ValueError as err:
            print(f"iclr25: error: {err}", file=sys.stderr)
            return 2
    found = core.artefacts()
    if action == "list":
        now = time.time()
        total = _size(sum(a.size for a in found))
        print(f"{core.cache_dir()}: {len(found)} artefact{'s' * (len(found) != 1)}, {total}")
        for a in found:
            age = _age(now - a.modified)
            print(f"  {a.name:<36} {_size(a.size):>9} {age:>9}  {', '.join(a.chapters) or '-'}")
        return 0
    chosen = [a for a in found if slug is None or slug in a.chapters]
    for a in chosen:
        a.remove()
    which = f" that {slug} used" if slug else ""
    print(
        f"removed {len(chosen)} artefact{'s' * (len(chosen) != 1)}{which} "
        f"({_size(sum(a.size for a in chosen))}) from {core.cache_dir()}"
    )
    return 0


def _size(n: int) -> str:
    return f"{n / 2**20:.1f} MB"


def _age(seconds: float) -> str:
    for unit, length in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= length:
            return f"{seconds / length:.0f} {unit}"
    return f"{seconds:.0f} s"


def _overrides(slug: str, pairs: list[str]) -> dict[str, object]:
    schema = toc.get(slug).module().PARAMETERS
    values: dict[str, object] = {}
    for pair in pairs:
        name, eq, text = pair.partition("=")
        if not eq:
            raise ParameterError(
                f"-p {pair!r} is not KEY=VALUE; accepted keys: {', '.join(schema)}"
            )
        if name not in schema:
            raise ParameterError(
                f"unknown parameter {name!r} for {slug}; accepted: {', '.join(schema)}"
            )
        values[name] = schema[name].parse(name, text)
    return values


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "list":
        _list()
        return 0
    if args.command == "cache":
        return _cache(args.action, args.slug)
    if args.command == "claims":
        from iclr25 import scoreboard

        try:
            print(scoreboard.text(scoreboard.collect(args.folder)))
        except FileNotFoundError as err:
            print(f"iclr25: error: {err}", file=sys.stderr)
            return 2
        return 0
    try:
        toc.get(args.slug)
        overrides = _overrides(args.slug, args.param)
        if args.command in ("sweep", "replicate"):
            points = _points(args, overrides)
        suffix = {"run": "", "sweep": "-sweep", "replicate": "-replicate"}[args.command]
        out = _out_folder(args.out or f"runs/{args.slug}{suffix}")
    except (ValueError, ParameterError) as err:  # ParameterError is a ValueError
        print(f"iclr25: error: {err}", file=sys.stderr)
        return 2
    if args.command == "sweep":
        return _sweep(args, points, out)
    if args.command == "replicate":
        return _replicate(args, points, out)
    from papermill.exceptions import PapermillExecutionError

    from iclr25.run import execute

    try:
        notebook, claims = execute(args.slug, out, overrides, smoke=args.smoke, progress=True)
    except PapermillExecutionError as err:
        print(
            f"iclr25: {args.slug} failed in cell {err.exec_count}: {err.ename}: {err.evalue}",
            file=sys.stderr,
        )
        return 1
    for c in claims:
        estimate = f"; {c.estimate:.3g} {c.interval}, {c.size}" if c.estimate is not None else ""
        print(f"  [{c.status}] {c.id}: {c.measured}{estimate} (rule: {c.rule})")
    print(f"wrote {notebook} and {notebook.with_suffix('.claims.json')}")
    if args.smoke:
        print("smoke run: its claims are computed at a scale that decides nothing")
        return 0
    return 1 if any(c.status in ("FAILED", "holds, gap declared") for c in claims) else 0


def _points(args: argparse.Namespace, fixed: dict[str, object]) -> list[Point]:
    """The sweep's grid points, or the replication's seeds, every one checked."""
    from iclr25 import cluster, replicate, sweep

    cluster.check_cluster(args.workers, args.scheduler, args.scheduler_file, _gpus(args))
    if args.command == "replicate":
        seeds = replicate.parse_seeds(args.seeds)
        return replicate.seed_points(args.slug, seeds, fixed, smoke=args.smoke)
    grid = sweep.parse_grid(args.slug, args.grid)
    return sweep.grid_points(args.slug, grid, fixed, smoke=args.smoke)


def _gpus(args: argparse.Namespace) -> list[str] | None:
    """``--gpus 0,1`` as device names, or None where the option is not given."""
    from iclr25 import cluster

    return None if args.gpus is None else cluster.parse_gpus(args.gpus)


def _run_sweep(args: argparse.Namespace, points: list[Point], out: Path) -> Sweep | int:
    """Run the points on Dask: the sweep, or the exit status if none could be had."""
    from iclr25 import sweep

    try:
        return sweep.sweep(
            points,
            out,
            workers=args.workers,
            scheduler=args.scheduler,
            scheduler_file=args.scheduler_file,
            gpus=_gpus(args),
        )
    except ParameterError as err:  # no scheduler at --scheduler
        print(f"iclr25: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            f"iclr25: interrupted; {out} keeps the points that finished, and the same "
            "command resumes from them",
            file=sys.stderr,
        )
        return 130


def _sweep(args: argparse.Namespace, points: list[Point], out: Path) -> int:
    from iclr25 import sweep

    done = _run_sweep(args, points, out)
    if isinstance(done, int):
        return done
    ran = sweep.counted(len(points) - done.skipped, "point")
    print(f"{ran} ran in {done.wall_s:.0f} s; {done.skipped} had finished before")
    print("claims: the share of points where each holds")
    for r in sweep.holding(done.frame).itertuples():
        print(f"  {r.claim} ({r.kind}): {r.holds} of {r.points} ({r.share:.0%}); {r.statuses}")
    for point, error in done.failed:
        print(
            f"iclr25: point {point.label} failed: {error} ({out / 'points' / point.key})",
            file=sys.stderr,
        )
    print(f"wrote {out / 'sweep.parquet'} and {out / 'sweep.html'}")
    if args.smoke:
        print("smoke sweep: its claims are computed at a scale that decides nothing")
    return 1 if done.failed else 0


def _replicate(args: argparse.Namespace, points: list[Point], out: Path) -> int:
    """Run the chapter at each seed; print the table of outcomes and write replicate.md.
    A flip is a result (status 0); a seed that failed to run is not (status 1)."""
    from iclr25 import replicate

    done = _run_sweep(args, points, out)
    if isinstance(done, int):
        return done
    table = replicate.from_sweep(done, smoke=args.smoke)
    print(replicate.text(table))
    print(f"wrote {replicate.write_markdown(out, table)} and {out / 'sweep.parquet'}")
    return 1 if done.failed else 0
