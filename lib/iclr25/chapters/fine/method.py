"""The paper's comparison of FiNE against ROME: the edits timed in alternation (and
reused afterwards), the two methods' scores paired by edit, the unedited model's
efficacy, the neuron counts of the sweep, ROME's edits written again with ``C`` from
fewer tokens, and ROME's edits made again with its departures from ROME's code undone."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np
import torch

from iclr25 import core, editing, llm


def timed_edits(
    requests: Sequence[editing.Request],
    editors: dict[str, Callable[[editing.Request], editing.Edit]],
) -> dict[str, core.Timing]:
    """Time every method's edit of each request, the methods in alternation (ROME edit 0,
    FiNE edit 0, ROME edit 1, ...; :func:`iclr25.core.alternate`), so that a load that
    comes and goes on the machine falls on both alike: wall and CPU seconds per edit."""
    if not requests:
        raise ValueError("timed_edits() needs at least one request")
    return core.alternate(
        {m: (lambda i, e=e: e(requests[i])) for m, e in editors.items()}, len(requests)
    )


def reusing(
    timing: dict[str, core.Timing],
    requests: Sequence[editing.Request],
    editors: dict[str, Callable[[editing.Request], editing.Edit]],
) -> dict[str, Callable[[editing.Request], editing.Edit]]:
    """The ``editors``, handing back the edits :func:`timed_edits` already made of the
    first ``requests`` instead of making them again."""
    done = {m: dict(zip(requests, timing[m].results)) for m in editors}
    return {m: (lambda r, m=m, e=e: done[m].get(r) or e(r)) for m, e in editors.items()}


def paired(
    records: Sequence[dict[str, Any]], metrics: Sequence[str], a: str = "FiNE", b: str = "ROME"
) -> tuple[np.ndarray, np.ndarray]:
    """Per edit, method ``a``'s and method ``b``'s mean score over ``metrics`` (over those
    the edit has probes for), paired by case, the two arms of
    :func:`iclr25.core.stats.paired_difference`; an edit with no probes of any of
    ``metrics`` is left out."""
    by = {(r["case"], r["method"]): r for r in records}
    cases = list(dict.fromkeys(r["case"] for r in records))

    def mean(case: str, method: str) -> float:
        scores = [by[case, method][m] for m in metrics]
        scores = [v for v in scores if not np.isnan(v)]
        return float(np.mean(scores)) if scores else float("nan")

    arms = np.array([[mean(c, a), mean(c, b)] for c in cases], dtype=float).reshape(-1, 2)
    kept = ~np.isnan(arms).any(axis=1)
    return arms[kept, 0], arms[kept, 1]


def c_sweep(
    lm: llm.LM,
    cases: Sequence[editing.Case],
    rome_edit: Callable[[editing.Request], editing.Edit],
    moments: dict[int, torch.Tensor],
    layer: int,
    records: Sequence[dict[str, Any]],
) -> dict[int, list[dict[str, Any]]]:
    """ROME's edits of ``cases`` written again with ``C`` estimated from each smaller
    number of tokens in ``moments`` (:func:`iclr25.editing.second_moments`): ``v*`` and
    ``k*`` do not depend on ``C``, so each is reused from ``rome_edit`` and only the
    rank-one update changes. The records of :func:`iclr25.editing.run_cases` per token
    count (no fluency); the largest count is ROME's own ``records``, with all tokens."""

    def editor(C: torch.Tensor) -> Callable[[editing.Request], editing.Edit]:
        def fn(request: editing.Request) -> editing.Edit:
            info = rome_edit(request).info
            return editing.rome_update(lm, request, layer, C, info["v_star"], info["k_star"])

        return fn

    *fewer, full = sorted(moments)
    editors = {n: editor(editing.regularised(moments[n])) for n in fewer}
    runs, _ = editing.run_cases(lm, cases, editors, n_tokens=0, progress=False)
    return {**{n: [r for r in runs if r["method"] == n] for n in editors}, full: list(records)}


#: ROME's departures from ROME's code that :func:`rome_departures` undoes, one at a time.
DEPARTURES = ("plain key", "KL at the subject", "sampled prefixes")


def rome_departures(
    lm: llm.LM,
    cases: Sequence[editing.Case],
    rome_edit: Callable[[editing.Request], editing.Edit],
    layer: int,
    C: torch.Tensor,
    *,
    prefixes: Sequence[str],
    steps: int,
    n_optimised: int,
    config: dict[str, Any],
) -> list[dict[str, Any]]:
    """ROME's edits made again with one of its departures from ROME's code undone, judged
    as the book's edits are (no fluency). "plain key": each kept edit of ``rome_edit``
    rewritten for the plain prompt's key (``v*`` and ``k*`` reused, on every case).
    "KL at the subject" (``kl_at_subject``) and "sampled prefixes" (``prefixes``, ROME's
    sampled ones): ``v*`` optimised again, on the first ``n_optimised`` cases, the edits
    kept in the cache under ``config``. Returns the records of
    :func:`iclr25.editing.run_cases`."""

    def plain(request: editing.Request) -> editing.Edit:
        info = rome_edit(request).info
        key = editing.plain_key(lm, request, layer)
        return editing.rome_update(lm, request, layer, C, info["v_star"], info["k_star"], key)

    rome = partial(editing.rome, lm, layer=layer, C=C, steps=steps)
    redone = cases[:n_optimised]
    optimised = editing.kept_edits(
        lm,
        [c.request for c in redone],
        {
            "KL at the subject": partial(rome, kl_at_subject=True),
            "sampled prefixes": partial(rome, prefixes=prefixes),
        },
        {**config, "prefixes": list(prefixes)},
    )
    runs, _ = editing.run_cases(lm, cases, {"plain key": plain}, n_tokens=0, progress=False)
    more, _ = editing.run_cases(lm, redone, optimised, n_tokens=0, progress=False)
    return runs + more


def unedited_efficacy(lm: llm.LM, cases: Sequence[editing.Case]) -> np.ndarray:
    """Per case, the unedited model's efficacy: the share of the new object's tokens it
    already predicts on the rewrite prompt under teacher forcing (the setup's control)."""
    predicted = editing.predict(lm, [(c.request.prompt, c.request.target) for c in cases])
    return np.array(
        [
            editing.token_accuracy([p], [lm.tokens(c.request.target)])
            for p, c in zip(predicted, cases, strict=True)
        ]
    )


def sweep_ks(k_max: int) -> list[int]:
    """1, 2, 5, 10, 20, 50, ... up to ``k_max``."""
    ks, base = [], 1
    while base <= k_max:
        ks += [m * base for m in (1, 2, 5) if m * base <= k_max]
        base *= 10
    return ks
