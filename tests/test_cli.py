"""`python -m iclr25`: listing, running, and one clear line for bad input."""

import json
import os
import re
import subprocess
import sys

import pytest

from iclr25 import toc


def test_list_shows_chapters_and_parameters(cli):
    result = cli("list")
    assert result.returncode == 0
    for chapter in toc.built():
        assert f"{chapter.slug}: {chapter.title}" in result.stdout
        for name in chapter.module().PARAMETERS:
            assert f"    {name} = " in result.stdout


@pytest.mark.parametrize(
    "args, words",
    [
        (("run", "nope"), "unknown chapter 'nope'; built chapters: sro"),
        (("run", "sro", "-p", "nope=1"), "unknown parameter 'nope' for sro; accepted: "),
        (("run", "sro", "-p", "seed=three"), "parameter 'seed' got 'three'; accepted: a int >= 0"),
        (("run", "sro", "-p", "seed"), "-p 'seed' is not KEY=VALUE"),
        (("run", "sro", "-p", "device=tpu"), "parameter 'device' got 'tpu'; accepted: one of "),
        (("frobnicate",), "argument command: invalid choice: 'frobnicate'"),
        (("claims", "no/such/folder"), "no folder no/such/folder: give the folder that"),
        (("cache", "clear", "nope"), "unknown chapter 'nope'; built chapters: sro"),
        (("cache", "list", "sro"), "cache list takes no chapter (got 'sro')"),
        (("cache", "empty"), "argument action: invalid choice: 'empty'"),
    ],
)
def test_bad_input_exits_2_with_one_line(cli, args, words):
    result = cli(*args)
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], result.stderr


@pytest.mark.smoke
def test_run_writes_notebook_and_claims(cli, tmp_path):
    result = cli("run", "sro", "--smoke", "-p", "seed=3", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr  # a smoke run's claims decide nothing
    record = json.loads((tmp_path / "sro.claims.json").read_text())
    assert record["chapter"] == "sro" and record["parameters"]["seed"] == 3
    assert record["claims"] and (tmp_path / "sro.ipynb").is_file()
    assert f"wrote {tmp_path / 'sro.ipynb'}" in result.stdout
    assert "smoke run" in result.stdout and "(rule: " in result.stdout
    shown = cli("claims", str(tmp_path))
    assert shown.returncode == 0, shown.stderr
    for c in record["claims"]:
        assert f"[{c['status']}] sro/{c['id']} ({c['kind']})" in shown.stdout
    assert shown.stdout.strip().splitlines()[-1].startswith("fidelity: ")


def test_cache_list_shows_and_cache_clear_removes_a_chapters_artefacts(cli, tmp_path):
    env = {**os.environ, "ICLR25_CACHE": str(tmp_path)}
    for chapter, name in (("sro", "sro-model"), ("fine", "fine-model"), ("sro", "shared")):
        make = f"from iclr25 import core; core.cached({name!r}, {{}}, lambda: [1.0])"
        chapters = {**env, "ICLR25_CHAPTER": chapter}
        subprocess.run([sys.executable, "-c", make], env=chapters, check=True)
    shown = cli("cache", "list", env=env)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.strip().splitlines()
    assert lines[0].startswith(f"{tmp_path}: 3 artefacts, ")
    assert [line.split()[0] for line in lines[1:]] == ["fine-model", "shared", "sro-model"]
    # the chapter, and the age: seconds, or minutes where load slowed the three processes
    assert lines[-1].split()[-1] == "sro" and re.search(r" \d+ (s|min) ", lines[-1])
    cleared = cli("cache", "clear", "sro", env=env)
    assert cleared.stdout.startswith("removed 2 artefacts that sro used (")
    assert [line.split()[0] for line in cli("cache", "list", env=env).stdout.splitlines()[1:]] == [
        "fine-model"
    ]
    assert cli("cache", "clear", env=env).stdout.startswith("removed 1 artefact (")
    assert not list(tmp_path.iterdir())


def test_claims_of_a_folder_without_runs_says_so_in_one_line(cli, tmp_path):
    result = cli("claims", str(tmp_path))
    assert result.returncode == 0
    assert result.stdout.strip().splitlines() == [
        "no claims: the folder holds no executed chapter that recorded one"
    ]


@pytest.mark.parametrize("command", [("run", "sro"), ("sweep", "sro", "-g", "seed=0,1")])
def test_an_out_folder_that_cannot_be_created_gives_one_line(cli, tmp_path, command):
    (tmp_path / "file").write_text("")
    out = tmp_path / "file" / "runs"  # under a file: no folder can be made there
    result = cli(*command, "--smoke", "--out", str(out))
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        f"iclr25: error: --out {out}: cannot create or write this folder (Not a directory)"
    ]


def test_chapter_kernels_get_one_thread_and_the_allocator_settings_unless_told(monkeypatch):
    import os

    from iclr25.build import ALLOCATOR_VARIABLES, THREAD_VARIABLES
    from iclr25.run import kernel_environment

    for name in (*THREAD_VARIABLES, *ALLOCATOR_VARIABLES):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MKL_NUM_THREADS", "3")
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "0")
    with kernel_environment():
        assert [os.environ[n] for n in THREAD_VARIABLES] == ["1", "3", "1"]
        assert os.environ["MALLOC_MMAP_THRESHOLD_"] == ALLOCATOR_VARIABLES["MALLOC_MMAP_THRESHOLD_"]
        assert os.environ["MALLOC_TRIM_THRESHOLD_"] == "0"
    assert "OMP_NUM_THREADS" not in os.environ and os.environ["MKL_NUM_THREADS"] == "3"
    assert "MALLOC_MMAP_THRESHOLD_" not in os.environ
