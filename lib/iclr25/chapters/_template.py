"""The template chapter's method: least squares recovers a known slope.

A new chapter starts as a copy of this module (``iclr25/chapters/<slug>.py``) and
of ``notebooks/_template.py``. Its docstring names the paper and gives the method's
equations, as this one does for the template's toy problem:

    y_i = a x_i + b + eps_i,   eps_i ~ N(0, sigma^2),   i = 1..n,
    (a_hat, b_hat) = argmin_{a, b}  sum_i (y_i - a x_i - b)^2.

The slope's standard error is sigma / (sd(x) sqrt(n)) (Gauss-Markov), so
z = (a_hat - a) / se is standard normal.

Contents, in reading order: the method (the functions the notebook shows with
``literalinclude``), then the chapter's ``PARAMETERS`` and ``SMOKE``, then its
claims' ``BOUNDS`` and ``KNOWN_GAPS``, both written before the first run. A real
chapter ends with a ``Figures`` section for figure builders over about 15 lines.
"""

from __future__ import annotations

import numpy as np

from iclr25.core import Bound, Param

# ---------------------------------------------------------------------------
# The method: what the notebook shows from source. Docstrings give the equation.
# ---------------------------------------------------------------------------


def fit_line(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Least squares line: a_hat = cov(x, y) / var(x), b_hat = mean(y) - a_hat mean(x)."""
    design = np.column_stack([x, np.ones_like(x)])
    (slope, intercept), *_ = np.linalg.lstsq(design, y, rcond=None)
    return float(slope), float(intercept)


# ---------------------------------------------------------------------------
# The chapter's parameters: book defaults (about two minutes on two cores for a
# real chapter; seconds here), plus seed and device.
# ---------------------------------------------------------------------------

PARAMETERS = {
    "n": Param(1000, "number of points", low=3),
    "slope": Param(2.0, "the true slope a"),
    "noise": Param(1.0, "noise standard deviation sigma (> 0)", low=1e-6),
    "seed": Param(0, "random seed", low=0),
    "device": Param(
        "auto",
        "compute device (the method runs in NumPy on the CPU)",
        choices=("auto", "cpu", "cuda"),
    ),
}
"""The chapter's parameters: the notebook's parameters cell repeats these defaults."""

SMOKE = {"n": 50}
"""Overrides that run the whole chapter in seconds (the notebook test)."""

# ---------------------------------------------------------------------------
# The claims: the numbers that decide them, fixed before the run.
# ---------------------------------------------------------------------------

BOUNDS: dict[str, Bound | dict[str, Bound]] = {
    # z = (a_hat - a) / se is standard normal: |z| <= 3 but for 0.3% of the draws
    "slope-recovered": Bound(ge=-3, le=3),
}
"""Claim id -> the bound(s) its measured value must meet."""

KNOWN_GAPS: dict[str, str] = {}
"""Claim id -> why the claim cannot show at the book's scale, written before the run
(what our scale or data lacks, and what would show it). The template has none."""
