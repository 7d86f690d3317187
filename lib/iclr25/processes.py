"""A chapter's process tree: its CPU time, and its end.

A chapter runs in a process of its own, whose Jupyter kernel runs in a session of its
own, so neither a process group nor a signal to the chapter's process reaches the
whole tree. psutil walks it instead: to sum its CPU time against the chapter's limit,
to kill it, and to end it when whoever started it is gone.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time


def tree_cpu_s(pid: int) -> float:
    """CPU seconds (user and system) of process ``pid``, its live descendants and the
    children they have reaped: a chapter's process with its kernel."""
    import psutil

    try:
        root = psutil.Process(pid)
        tree = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0.0
    total = 0.0
    for process in tree:
        try:
            t = process.cpu_times()
        except psutil.NoSuchProcess:  # ended between the listing and now
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


def kill_tree(pid: int) -> None:
    """SIGKILL process ``pid`` and all its descendants. Killing its process group would
    miss a Jupyter kernel, which runs in a session of its own."""
    import psutil

    try:
        root = psutil.Process(pid)
        tree = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return
    for process in tree:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()


def end_with_parent(parent: int, poll_s: float = 1.0) -> None:
    """In a chapter's own process: end this process and its descendants (the kernel)
    when ``parent``, the process that started it and passed its pid, is gone: at once
    if it went while this one was starting. A sweep's worker, or a build, stopped by
    SIGKILL has no chance to kill the tree it started, and the kernel runs in a session
    of its own, so nothing else would reach it. A daemon thread watches the parent."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll_s)
        import psutil

        for child in psutil.Process().children(recursive=True):
            with contextlib.suppress(psutil.NoSuchProcess):
                child.kill()
        os._exit(1)

    threading.Thread(target=watch, name="end-with-parent", daemon=True).start()
