"""The template chapter: least squares recovers a known slope.

A new chapter starts as a copy of this package (``iclr25/chapters/<slug>/``) and of
``notebooks/_template.py``. Its docstring names the paper and gives the method's
equations, as this one does for the template's toy problem:

    y_i = a x_i + b + eps_i,   eps_i ~ N(0, sigma^2),   i = 1..n,
    (a_hat, b_hat) = argmin_{a, b}  sum_i (y_i - a x_i - b)^2.

The slope's standard error is sigma / (sd(x) sqrt(n)) (Gauss-Markov), so
z = (a_hat - a) / se is standard normal.

This file holds what the chapter decides: its ``PARAMETERS`` and ``SMOKE``, then its
``CLAIMS`` registry, written before the first run: one claim of each form (a setup
claim, a point check, an estimate with an interval against a control). Files:

* ``method.py`` -- the method, the functions the notebook shows with ``literalinclude``;
* ``figures.py`` -- the figure builders (a figure over about 15 lines lives here, with a
  unit test, not in the notebook).

A real chapter adds files only at real seams, named for what they hold
(``models.py``, ``data.py``).
"""

from __future__ import annotations

from iclr25.chapters._template.figures import fit_figure
from iclr25.chapters._template.method import fit_line
from iclr25.core import Bound, ClaimSpec, Margin, Param

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
# The claims: one registry, fixed before the run. The notebook passes only the
# evidence: core.claim(id, value=...) or core.claim(id, estimate=...).
# ---------------------------------------------------------------------------

CLAIMS: dict[str, ClaimSpec] = {
    # A setup claim: the experiment is in the regime the method describes (here: the
    # residuals have the noise level that the standard error assumes).
    "noise-level": ClaimSpec(
        "The fit's residual standard deviation is within 10% of the noise sigma",
        kind="setup",
        rule=Bound(ge=0.9, le=1.1),
        control="sigma, the noise the data were drawn with",
    ),
    # A point check: z = (a_hat - a) / se is standard normal, so |z| <= 3 but for 0.3%
    # of the draws.
    "slope-recovered": ClaimSpec(
        "Least squares recovers the slope to within three standard errors",
        paper="the slope estimate is unbiased with standard error sigma / (sd(x) sqrt(n)) "
        "(Gauss-Markov)",
        rule=Bound(ge=-3, le=3),
        control="the true slope a",
        rests_on=("noise-level",),
    ),
    # An estimate with an interval against a control: on held-out points, the fitted
    # line's squared error is below the intercept-only fit's (a method that learns no
    # slope), by a paired bootstrap over the points.
    "beats-intercept": ClaimSpec(
        "On held-out points, the fitted line's squared error is lower than the "
        "intercept-only fit's",
        paper="least squares explains the variance a^2 var(x) that the mean leaves",
        rule=Margin(
            above=0.1,
            why="a tenth of the default noise variance: a smaller gain is not worth a slope",
        ),
        control="the intercept-only fit (the mean of y)",
        rests_on=("noise-level",),
    ),
}
"""Claim id -> what the claim says, what decides it and what it is measured against.
A claim expected to miss at the book's scale declares ``gap=Gap(diagnosis)`` here,
before the run; the template has none."""
