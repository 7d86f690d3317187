"""The Dask cluster a sweep runs on: a ``LocalCluster`` on this machine, each worker
with its own GPU where there are several, or a running cluster named by its scheduler's
address or by the file it wrote.

Written by hand around Dask's ``LocalCluster`` and ``Client``: what it adds is the
book's choices (one thread a worker, Ctrl-C left to the client, one GPU a worker) and
one-line errors for options that do not go together.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from distributed.diagnostics.plugin import WorkerPlugin

from iclr25.core import ParameterError

if TYPE_CHECKING:
    from distributed import Client


def parse_gpus(text: str) -> list[str]:
    """``--gpus 0,1,2,3`` as the devices, as ``CUDA_VISIBLE_DEVICES`` names them
    (indices or UUIDs); a :class:`ParameterError` naming the first bad entry."""
    gpus: list[str] = []
    for entry in text.split(","):
        if not entry or entry != entry.strip() or entry in gpus:
            why = f"{entry!r} is listed twice" if entry in gpus else f"{entry!r} is no device"
            raise ParameterError(
                f"--gpus {text!r}: {why}; accepted: comma-separated distinct device ids "
                "as CUDA_VISIBLE_DEVICES takes them, e.g. 0,1,2,3"
            )
        gpus.append(entry)
    return gpus


def check_cluster(
    workers: int | None,
    scheduler: str | None,
    scheduler_file: str | None,
    gpus: Sequence[str] | None,
) -> None:
    """A :class:`ParameterError` for cluster options that do not go together."""
    given = [
        name
        for name, value in (("--scheduler", scheduler), ("--scheduler-file", scheduler_file))
        if value
    ]
    if len(given) == 2:
        raise ParameterError("--scheduler and --scheduler-file both name a cluster; give one")
    if given and workers:
        raise ParameterError(
            f"--workers starts a local cluster; with {given[0]} the cluster's own workers run"
        )
    if given and gpus:
        raise ParameterError(
            f"--gpus gives a local cluster's workers their GPUs; with {given[0]} the "
            "cluster's own workers run"
        )
    if gpus and workers and workers > len(gpus):
        raise ParameterError(
            f"--workers {workers} with {len(gpus)} GPU{'s' * (len(gpus) != 1)} in --gpus: "
            "each local worker needs a GPU of its own"
        )


@contextlib.contextmanager
def connect(
    workers: int | None = None,
    scheduler: str | None = None,
    *,
    scheduler_file: str | None = None,
    gpus: Sequence[str] | None = None,
) -> Iterator[Client]:
    """A Dask client: of a new ``LocalCluster`` of ``workers`` processes (default: one
    per GPU of ``gpus``, else 2) with one thread each, worker ``n`` seeing GPU
    ``gpus[n]`` alone; or of the running cluster whose scheduler is at ``scheduler``,
    or is named in the file ``scheduler_file`` (``dask scheduler --scheduler-file``)."""
    from distributed import Client, LocalCluster

    option = f"--scheduler {scheduler}"
    if scheduler_file:  # read here: Dask's client would wait for a missing file forever
        option = f"--scheduler-file {scheduler_file}"
        try:
            scheduler = json.loads(Path(scheduler_file).read_text())["address"]
        except (OSError, ValueError, KeyError) as err:
            raise ParameterError(f"{option}: no scheduler's address in it ({err!r})") from None
    if scheduler:  # its own workers run: ``workers`` and ``gpus`` are unused
        try:
            client = Client(scheduler, timeout="10s")
        except (OSError, ValueError) as err:  # no answer; an address without a port
            raise ParameterError(f"{option}: no Dask scheduler answers ({err})") from None
        with client:
            yield client
        return
    check_cluster(workers, None, None, gpus)
    plugins: set[WorkerPlugin] = {_IgnoreInterrupt()}
    if gpus:
        plugins.add(_OwnGPU(gpus))
    with (
        LocalCluster(
            n_workers=workers or (len(gpus) if gpus else 2),
            threads_per_worker=1,
            dashboard_address=":0",
            silence_logs=logging.ERROR,
            plugins=plugins,
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


class _IgnoreInterrupt(WorkerPlugin):
    """Ctrl-C in a terminal reaches the local workers too: they leave it to the client,
    which cancels the points and closes the cluster."""

    def setup(self, worker: Any) -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


class _OwnGPU(WorkerPlugin):
    """Local worker ``n`` sees the ``n``-th of ``gpus`` alone (``CUDA_VISIBLE_DEVICES``,
    which the kernels of its points inherit): left alone, every worker's torch sees
    all the GPUs and uses the first."""

    def __init__(self, gpus: Sequence[str]) -> None:
        self.gpus = list(gpus)

    def setup(self, worker: Any) -> None:
        os.environ["CUDA_VISIBLE_DEVICES"] = self.gpus[int(worker.name)]


def slots_by_host(client: Client) -> dict[str, int]:
    """Worker threads on each host of the cluster: a point's kernel gets its host's
    cores divided by this."""
    slots: dict[str, int] = {}
    for w in client.scheduler_info(n_workers=-1)["workers"].values():
        slots[w["host"]] = slots.get(w["host"], 0) + w["nthreads"]
    return slots


def dashboard(client: Client) -> str | None:
    """The Dask dashboard's address, if the scheduler serves one (it needs bokeh)."""
    import importlib.util

    has_bokeh = client.run_on_scheduler(lambda: importlib.util.find_spec("bokeh") is not None)
    return client.dashboard_link if has_bokeh else None
