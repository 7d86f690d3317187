"""``python -m iclr25``: list the chapters, or run one with parameters.

    python -m iclr25 list
    python -m iclr25 run sro -p n=50000 -p seed=3 --out runs/sro [--smoke]
    python -m iclr25 claims runs/sro

Bad input (an unknown chapter or parameter, a value of the wrong type or out of
range) exits with status 2 and one line that names the problem and what is accepted.
A run exits 1 if a cell fails, or (except with --smoke, whose scale decides nothing)
if a claim fails without a declared known gap. ``claims`` prints the claims that runs
wrote to a folder, with the scoreboard's summary.
"""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from iclr25 import toc
from iclr25.core import ParameterError


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
    claims = sub.add_parser("claims", help="print the claims recorded in a folder of runs")
    claims.add_argument(
        "folder",
        help="a folder that `run` wrote (--out), or the book's _build/jupyter_execute/notebooks",
    )
    return parser


def _list() -> None:
    for c in toc.built():
        print(f"{c.slug}: {c.title}  [{c.part}]")
        module = c.module()
        for name, p in module.PARAMETERS.items():
            smoke = f"  (smoke: {module.SMOKE[name]!r})" if name in module.SMOKE else ""
            print(f"    {name} = {p.default!r}  {p.help}; {p.accepted()}{smoke}")


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
    except (ValueError, ParameterError) as err:  # ParameterError is a ValueError
        print(f"iclr25: error: {err}", file=sys.stderr)
        return 2
    from papermill.exceptions import PapermillExecutionError

    from iclr25.run import execute

    out = args.out or f"runs/{args.slug}"
    try:
        notebook, claims = execute(args.slug, out, overrides, smoke=args.smoke, progress=True)
    except PapermillExecutionError as err:
        print(
            f"iclr25: {args.slug} failed in cell {err.exec_count}: {err.ename}: {err.evalue}",
            file=sys.stderr,
        )
        return 1
    for c in claims:
        print(f"  [{c.status}] {c.id}: {c.measured} (bound: {c.bound})")
    print(f"wrote {notebook} and {notebook.with_suffix('.claims.json')}")
    if args.smoke:
        print("smoke run: its claims are computed at a scale that decides nothing")
        return 0
    return 1 if any(c.status == "FAILED" for c in claims) else 0
