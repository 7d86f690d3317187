"""Methods timed in alternation (A, B, A, B), with wall and CPU time.

Written by hand: timeit runs one statement at a time, not two methods in alternation
with their CPU time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # torch is imported lazily: `python -m iclr25 list` should be quick
    pass


# ---------------------------------------------------------------------------------
# Timing: methods measured in alternation
# ---------------------------------------------------------------------------------


@dataclass
class Timing:
    """The wall-clock and process-CPU seconds of each call of one method."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    results: list[Any] = field(default_factory=list)

    @property
    def median_wall(self) -> float:
        return float(np.median(self.wall))

    @property
    def median_cpu(self) -> float:
        return float(np.median(self.cpu))

    def __str__(self) -> str:
        n = len(self.wall)
        return f"{self.median_wall:.3g} s wall, {self.median_cpu:.3g} s CPU (median of {n})"


def alternate(methods: Mapping[str, Callable[[int], Any]], rounds: int) -> dict[str, Timing]:
    """Time each method ``rounds`` times in alternation: A(0), B(0), A(1), B(1), ...

    A load that comes and goes on the machine then falls on every method alike, and the
    medians compare them fairly. Each call's wall time (``perf_counter``) and process CPU
    time (``process_time``, all threads) are kept, with its result.
    """
    import time

    if rounds < 1 or not methods:
        raise ValueError("alternate() needs at least one method and one round")
    timings = {name: Timing() for name in methods}
    for i in range(rounds):
        for name, method in methods.items():
            wall, cpu = time.perf_counter(), time.process_time()
            result = method(i)
            timings[name].wall.append(time.perf_counter() - wall)
            timings[name].cpu.append(time.process_time() - cpu)
            timings[name].results.append(result)
    return timings
