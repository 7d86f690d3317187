"""``run``'s execution path (iclr25.run.execute_within): papermill in a process of its
own, held to a CPU limit, with a wall-clock backstop that load does not reach."""

import psutil
import pytest
from papermill.exceptions import PapermillExecutionError

from iclr25 import run

pytestmark = pytest.mark.smoke  # every test here starts a kernel


def _notebook(tmp_path, *cells):
    path = tmp_path / "chapter.py"
    path.write_text("".join(f"# %%\n{cell}\n\n" for cell in cells))
    return path


def test_a_run_that_waits_longer_than_its_cpu_limit_finishes(tmp_path):
    """Sleeping, as waiting on a loaded machine, takes wall time and no CPU time."""
    source = _notebook(tmp_path, "import time\ntime.sleep(12)", "print('woke')")
    run.execute_within(source, tmp_path / "out.ipynb", {}, cpu_limit_s=8)
    assert "woke" in (tmp_path / "out.ipynb").read_text()


def test_a_failing_cell_raises_papermills_error_with_its_cell(tmp_path):
    source = _notebook(tmp_path, "x = 1", "raise ValueError('no such')")
    with pytest.raises(PapermillExecutionError) as err:
        run.execute_within(source, tmp_path / "out.ipynb", {}, cpu_limit_s=60)
    assert (err.value.exec_count, err.value.ename, err.value.evalue) == (2, "ValueError", "no such")


def test_a_run_past_its_cpu_limit_is_stopped_in_its_cell_kernel_and_all(tmp_path):
    pid = tmp_path / "kernel.pid"
    spin = f"import os\nopen({str(pid)!r}, 'w').write(str(os.getpid()))\nwhile True:\n    pass"
    source = _notebook(tmp_path, "x = 1", spin)
    with pytest.raises(PapermillExecutionError) as err:
        run.execute_within(source, tmp_path / "out.ipynb", {}, cpu_limit_s=8)
    assert (err.value.exec_count, err.value.ename) == (2, "TimeLimit")
    assert err.value.evalue.startswith("stopped past its CPU limit of 8 s, at ")
    kernel = int(pid.read_text())
    assert not psutil.pid_exists(kernel) or psutil.Process(kernel).status() == "zombie"
