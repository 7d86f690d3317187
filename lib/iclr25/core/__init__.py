"""The shared substrate every chapter stands on.

A chapter notebook starts with a tagged ``parameters`` cell of plain scalars and then
calls :func:`chapter`, which checks those parameters against the chapter's
``PARAMETERS`` schema, seeds every generator, installs the offline plotly renderer and
starts the claims record. ``from iclr25 import core`` gives all of it; the files:

* ``params.py`` -- :class:`Param`, :func:`validate` (the parameter schema and its
  one-line errors), :func:`seed_everything`, :func:`threads`, :func:`get_device`, and
  :func:`chapter`, the entry point;
* ``cache.py`` -- :func:`cached`, :func:`cached_dir`: trained artefacts (a value, or a
  folder of files) keyed by a hash of their configuration and of the code that builds
  them (:func:`fingerprint`); :func:`artefacts`, what the cache holds;
* ``training.py`` -- :func:`train`, :func:`train_epoch`: a small loop with tqdm;
  :func:`train_seeds`: K seeds of one small model trained as one batched model;
* ``plots.py`` -- the offline plotly renderer, :func:`plot`, :func:`estimates_figure`
  (estimates with their intervals, as grouped bars), and :func:`explore`: a live
  ipywidgets control with its static plotly-slider twin;
* ``registry.py`` -- a chapter's claims registry (:class:`ClaimSpec`, :class:`Gap`),
  written before the run; ``claims.py`` -- what a run made of it: :func:`claim`,
  :func:`claims_table`, :func:`read_claims`, :func:`under_replicated`; ``outcomes.py``
  -- the :class:`Claim` record with its status; ``report.py``
  -- the claims as HTML (:func:`claim_rows`) and the outcome in words
  (:func:`outcome_paragraph`); ``glance.py`` -- every claim's interval against its
  margin in one figure;
  ``rules.py`` -- what decides a claim (:class:`Bound`, :class:`Margin`); ``stats.py``
  -- the 95% intervals, from scipy, over training runs or over the items of one model;
* ``timing.py`` -- :func:`alternate`: methods timed in alternation, wall and CPU time.
"""

from iclr25.core import claims, report, stats
from iclr25.core.cache import (
    CACHE_LOG,
    CHAPTER,
    Artefact,
    artefacts,
    cache_dir,
    cache_path,
    cached,
    cached_dir,
    fingerprint,
)
from iclr25.core.claims import (
    CLAIM_MIME,
    book_problems,
    claim,
    claims_table,
    counts,
    json_value,
    read_claims,
    tally,
    under_replicated,
)
from iclr25.core.outcomes import OUTCOMES, STATUSES, Claim, claim_from_record
from iclr25.core.params import (
    Param,
    ParameterError,
    Scalar,
    chapter,
    get_device,
    seed_everything,
    threads,
    validate,
)
from iclr25.core.plots import (
    default_control,
    estimates_figure,
    explore,
    figure_html,
    plot,
    slider_figure,
    use_offline_plotly,
)
from iclr25.core.registry import (
    AFTER_THE_RUN,
    KINDS,
    MIN_RUNS,
    SMOLLM2,
    VARIES,
    ClaimSpec,
    Gap,
    format_value,
)
from iclr25.core.report import claim_rows, outcome_paragraph
from iclr25.core.rules import Bound, Margin, check_bound, describe_rule
from iclr25.core.timing import Timing, alternate
from iclr25.core.training import train, train_epoch, train_seeds
