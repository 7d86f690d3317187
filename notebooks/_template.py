# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Template: does least squares recover a known slope?
#
# *The first cell holds the chapter's title, the notebook's only `#` heading, then
# the question the paper asks, in a reader's words, and what the chapter does about
# it. Cite the paper here, e.g. ``{cite:p}`yang2025sro` ``, with its key in
# `book/references.bib`. Text in italics, like this, tells a new author what goes
# where; delete it in a real chapter. `README.md` ("Adding a chapter") lists every
# step.*
#
# We draw points on a line of known slope, add noise, and ask whether ordinary least
# squares finds the slope again, to within the error that theory predicts.

# %% tags=["parameters"]
# The first code cell, tagged "parameters": plain assignments only, the same
# values as PARAMETERS in the chapter module (a test checks it). papermill and
# `python -m iclr25 run _template -p n=5000` inject their values after it.
n = 1000
slope = 2.0
noise = 1.0
seed = 0
device = "auto"

# %%
# The setup: every import of the notebook, here and nowhere else, then
# core.chapter, which checks the parameters, seeds everything and starts the
# claims record. `p` holds the checked parameters, p.rng and p.torch_device.
import numpy as np

from iclr25 import core
from iclr25.chapters import _template
from iclr25.core import stats

p = core.chapter("_template", globals())

# %% [markdown]
# ## The method
#
# *Show the method from the module's source, never a copy: MyST `literalinclude`
# with `:pyobject:` displays a function with its docstring, which gives the
# paper's equation. Explain the equation in the text around it.*
#
# With points $(x_i, y_i)$ on $y = ax + b$ plus noise of standard deviation
# $\sigma$, least squares minimises $\sum_i (y_i - a x_i - b)^2$:
#
# ```{literalinclude} ../lib/iclr25/chapters/_template/method.py
# :pyobject: fit_line
# ```
#
# ## Recovering the slope
#
# *Each experiment is a `##` section: what it tests and the rule that decides it
# (fixed in the package's `CLAIMS` registry, in its `__init__.py`, before the run), then a code cell of at
# most 25 lines that computes the evidence, shows it, and makes the claim beside
# it. The notebook passes only the evidence: the statement, the paper's figure,
# the rule, the control and any declared gap live in the registry. Figure
# builders over about 15 lines go to the package's `figures.py`, with a unit
# test.*
#
# We fit on half the points and keep the other half. The slope's standard error
# is $\sigma / (\operatorname{sd}(x)\sqrt n)$, so $z = (\hat a - a)/\mathrm{se}$
# is standard normal: a point check, $|z| \le 3$. It rests on a setup claim: the
# residuals have the noise level $\sigma$ that the standard error assumes.

# %%
x = p.rng.uniform(-1, 1, 2 * p.n)
y = p.slope * x + p.noise * p.rng.standard_normal(2 * p.n)
fit, held = slice(0, p.n), slice(p.n, 2 * p.n)
a_hat, b_hat = _template.fit_line(x[fit], y[fit])
se = p.noise / (x[fit].std() * np.sqrt(p.n))
residual_sd = np.std(y[fit] - a_hat * x[fit] - b_hat)

_template.fit_figure(
    x[fit], y[fit], a_hat, b_hat,
    title=f"Least squares on {p.n} points of slope {p.slope}").show()

core.claim("noise-level", value=residual_sd / p.noise,
           measured=f"residual sd {residual_sd:.3f}, sigma {p.noise}")
z = (a_hat - p.slope) / se
core.claim("slope-recovered", value=z,
           measured=f"slope {a_hat:.4f} vs {p.slope}; z = {z:.2f}");

# %% [markdown]
# ## Against a control
#
# *A claim on items, seeds or pairs is an estimate with a 95% interval from
# `core.stats` (scipy), decided against a margin, the smallest effect worth
# reporting: it holds when the interval lies beyond the margin, is contradicted
# when it lies on the control's side, and is inconclusive when it straddles it.*
#
# On the held-out points, each point's squared error under the intercept-only
# fit (the mean of $y$, a method that learns no slope) minus its squared error
# under the fitted line; a paired bootstrap over the points gives the interval.

# %%
line_error = (y[held] - a_hat * x[held] - b_hat) ** 2
mean_error = (y[held] - y[fit].mean()) ** 2
gain = stats.paired_difference(mean_error, line_error, seed=p.seed)
core.claim("beats-intercept", estimate=gain,
           measured=f"squared error: line {line_error.mean():.3f}, "
                    f"intercept only {mean_error.mean():.3f}");

# %% [markdown]
# ## Claims

# %%
core.claims_table();

# %% [markdown]
# *Exactly one `## Claims` heading, and no claim after it: its first cell shows
# the table of the claims made beside their evidence above, with the outcome in
# words that `core.claims_table()` writes from the run. A **Reading the
# claims.** paragraph may follow: what the claims ask and how to read them,
# never what became of them.*

# %% [markdown]
# ## What differs from the paper
#
# *Where the chapter scales the paper down or substitutes data or models, and what
# follows from it: which claims our scale can test and which it cannot (those are
# declared in the module's `CLAIMS` with `gap=Gap(...)` before the first run).*
#
# Nothing: the template's "paper" is the textbook, and its setting is the
# textbook's own, Gaussian noise on a line.
#
# ## Going further
#
# *The last section: the parameters of a full-scale run, and what to try.*
#
# ```
# python -m iclr25 run _template -p n=100000 -p noise=5.0
# ```
#
# A larger `n` shrinks the standard error as $1/\sqrt n$; the bound on $z$ does
# not change.
