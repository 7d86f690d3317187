"""The README's commands: the quick start runs, every command it names exists and
takes the arguments shown, and the install refuses a torch build it does not know."""

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from iclr25 import cli, toc

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def commands(section: str | None = None) -> list[list[str]]:
    """The commands of the README's bash blocks (of one ``## section`` if named), split
    into words, without their comments."""
    text = README if section is None else README.split(f"## {section}\n")[1].split("\n## ")[0]
    lines = [
        line.split("#")[0].strip()
        for block in re.findall(r"```bash\n(.*?)```", text, re.S)
        for line in block.splitlines()
    ]
    return [shlex.split(line) for line in lines if line]


def iclr25_args(words: list[str]) -> list[str] | None:
    """The arguments of a ``python -m iclr25`` command, or None for another command."""
    if words[:3] == [".venv/bin/python", "-m", "iclr25"]:
        return words[3:]
    return None


def test_the_readme_opens_with_its_quick_start_and_stays_short():
    lines = README.splitlines()
    sections = [line for line in lines if line.startswith("## ")]
    assert sections[0] == "## Quick start" and len(lines) <= 150
    assert len(README.split("## Quick start")[0].split()) <= 200
    commit = r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b"
    assert not re.search(commit, README), "no commit hashes in the README"


def test_every_make_target_the_readme_names_is_in_the_makefile():
    targets = set(re.findall(r"^([a-z][a-z-]*):", (ROOT / "Makefile").read_text(), re.M))
    named = {words[1] for words in commands() if words[0] == "make"}
    assert {"test", "book", "lab", "install", "run"} <= named <= targets


def test_every_iclr25_command_in_the_readme_parses_with_its_parameters():
    parser = cli._parser()
    found = [args for args in map(iclr25_args, commands()) if args is not None]
    assert {args[0] for args in found} >= {"list", "run", "claims", "sweep", "replicate"}
    for args in found:
        parsed = parser.parse_args(args)
        if getattr(parsed, "slug", None):
            toc.get(parsed.slug)
            cli._overrides(parsed.slug, parsed.param)


@pytest.mark.parametrize(
    "torch, words",
    [
        ("rocm", "TORCH=rocm names no build of torch; accepted: cpu, cuda"),
        ("cuda", '"torch==2.13.0,!=2.13.0+cpu"'),
    ],
)
def test_the_install_takes_a_torch_build_it_knows_and_refuses_others(torch, words):
    result = subprocess.run(
        ["make", "--no-print-directory", "-n", "install", f"TORCH={torch}", "VENV=/nonexistent"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert words in result.stdout + result.stderr
    assert result.returncode == (2 if torch == "rocm" else 0)


@pytest.mark.smoke
def test_the_quick_start_runs_a_chapter_and_prints_its_claims(tmp_path):
    """The quick start's chapter commands, as a newcomer types them, from a folder of
    their own (``runs/`` lands there)."""
    chapter = [args for args in map(iclr25_args, commands("Quick start")) if args]
    assert [args[0] for args in chapter] == ["run", "claims"]
    for args in chapter:
        result = subprocess.run(
            [sys.executable, "-m", "iclr25", *args],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert result.returncode == 0, result.stderr[-2000:]
    assert "sro" in result.stdout and (tmp_path / "runs" / "sro" / "sro.claims.json").is_file()


def test_the_readme_names_the_chapters_that_use_a_gpu_and_only_they_offer_cuda():
    """A chapter offers ``device=cuda`` only if its notebook reads the device; the
    README's list is those chapters."""
    offers = {c.slug for c in toc.built() if "cuda" in c.module().PARAMETERS["device"].choices}
    reads = {
        c.slug for c in toc.built() if re.search(r"p\.(torch_)?device\b", c.notebook.read_text())
    }
    assert offers <= reads  # hyperdas reads it, and offers the CPU only
    sentence = README.split("With a GPU, the chapters")[1].split(". ")[0]
    named = set(re.findall(r"\b[a-z0-9]+\b", sentence.split("):")[1]))
    assert named - {"and"} == offers
