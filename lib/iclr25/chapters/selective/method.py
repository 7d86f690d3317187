"""The method of "label smoothing degrades selective classification" (Xia et al.).

The risk-coverage curve, AURC, E-AURC and AUROC; the MSP and normalised-logit scores
and the choice of p; the LS targets and logit gradient; one trained model evaluated;
the max-logit suppression on matched inputs; the official training recipe. The
package's docstring (:mod:`iclr25.chapters.selective`) gives the equations.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import torch

from iclr25 import vision

# ---------------------------------------------------------------------------------
# Risk-coverage curve and AURC
# ---------------------------------------------------------------------------------


class RiskCoverage(NamedTuple):
    """Coverage 0, 1/N, ..., 1 and the risk (error rate of the accepted) at each."""

    coverage: np.ndarray
    risk: np.ndarray


def _as_numpy(a: np.ndarray | torch.Tensor) -> np.ndarray:
    return a.detach().cpu().numpy() if isinstance(a, torch.Tensor) else np.asarray(a)


def risk_coverage(
    scores: np.ndarray | torch.Tensor, correct: np.ndarray | torch.Tensor
) -> RiskCoverage:
    """Risk at every coverage k / N when the N predictions are accepted by decreasing score.

    r(k / N) = (errors among the k most confident) / k, and r(0) = 0 as in the
    official code. Within a run of tied scores the errors are spread evenly (the
    expectation over a random order of the tie).
    """
    scores, wrong = _as_numpy(scores).astype(np.float64), ~_as_numpy(correct).astype(bool)
    if scores.shape != wrong.shape or scores.ndim != 1 or len(scores) == 0:
        raise ValueError(
            f"risk_coverage needs two 1-d arrays of one length, got shapes "
            f"{scores.shape} and {wrong.shape}"
        )
    order = np.argsort(-scores, kind="stable")
    scores, wrong = scores[order], wrong[order].astype(np.float64)
    n = len(scores)
    # tie groups: start index, size and error count of each run of equal scores
    starts = np.flatnonzero(np.r_[True, scores[1:] != scores[:-1]])
    sizes = np.diff(np.r_[starts, n])
    errors_before = np.r_[0.0, np.cumsum(wrong)][starts]
    group_rate = np.add.reduceat(wrong, starts) / sizes
    group = np.repeat(np.arange(len(starts)), sizes)
    k = np.arange(1, n + 1)
    cum_errors = errors_before[group] + (k - starts[group]) * group_rate[group]
    return RiskCoverage(np.linspace(0.0, 1.0, n + 1), np.r_[0.0, cum_errors / k])


def aurc(scores: np.ndarray | torch.Tensor, correct: np.ndarray | torch.Tensor) -> float:
    """Area under the risk-coverage curve, by the trapezoidal rule (lower is better)."""
    curve = risk_coverage(scores, correct)
    return float(np.trapezoid(curve.risk, curve.coverage))


def oracle_aurc(error_rate: float, n: int) -> float:
    """The smallest AURC at this error rate: every error ranked below every correct
    prediction (with the same discretisation as :func:`aurc`)."""
    correct = np.arange(n) >= round(error_rate * n)
    return aurc(correct.astype(float), correct)


def e_aurc(scores: np.ndarray | torch.Tensor, correct: np.ndarray | torch.Tensor) -> float:
    """Excess AURC: the AURC minus that of the oracle ranking at the same error rate.

    The oracle puts every error below every correct prediction, so the excess is zero
    for a perfect ranking whatever the accuracy: it scores the ranking alone, where
    the AURC also grows with the error rate."""
    correct = _as_numpy(correct).astype(bool)
    return aurc(scores, correct) - oracle_aurc(1.0 - float(correct.mean()), len(correct))


def auroc(scores: np.ndarray | torch.Tensor, correct: np.ndarray | torch.Tensor) -> float:
    """AUROC of the score separating correct from wrong predictions: the probability
    that a random correct prediction scores above a random error (ties count a half);
    NaN when all predictions are correct or all wrong (scikit-learn's
    ``roc_auc_score``)."""
    from sklearn.metrics import roc_auc_score

    scores, correct = _as_numpy(scores).astype(np.float64), _as_numpy(correct).astype(bool)
    if scores.shape != correct.shape or scores.ndim != 1:
        raise ValueError(
            f"auroc needs two 1-d arrays of one length, got shapes "
            f"{scores.shape} and {correct.shape}"
        )
    if correct.all() or not correct.any():
        return float("nan")
    return float(roc_auc_score(correct, scores))


# ---------------------------------------------------------------------------------
# Confidence scores
# ---------------------------------------------------------------------------------


def msp(logits: torch.Tensor) -> torch.Tensor:
    """Maximum softmax probability, max_k softmax(z)_k, in float64 (float32 saturates
    at 1.0 for confident predictions and would tie them)."""
    return logits.double().softmax(-1).amax(-1)


def centred(logits: torch.Tensor) -> torch.Tensor:
    """The logits minus their mean over the classes, in float64: the same softmax and
    the same prediction, with the shift that softmax ignores taken out."""
    z = logits.double()
    return z - z.mean(-1, keepdim=True)


def normalised_max_logit(logits: torch.Tensor, p: float, centre: bool = True) -> torch.Tensor:
    """The paper's fix: max_k u_k / ||u||_p, the max of the p-norm-normalised logits,
    with u the centred logits (or the raw logits if ``centre`` is False).

    Invariant to scaling the logits by a positive constant, so it ranks by the
    *direction* of the logit vector and ignores the magnitude LS suppresses unevenly;
    centred, it is invariant to adding a constant to every logit too, as the softmax is
    (the official search centres with ``norm_logits(..., add_unit="mean")``).
    """
    z = centred(logits) if centre else logits.double()
    norm = torch.linalg.vector_norm(z, ord=p, dim=-1, keepdim=True)
    # all logits equal: the centred vector is zero and so is its score
    return (z / norm.clamp_min(torch.finfo(torch.float64).tiny)).amax(-1)


P_GRID = tuple(range(1, 11))
"""The norms p searched, as in the official search on ImageNet (1 to 10)."""


def choose_p(
    logits: torch.Tensor, labels: torch.Tensor, grid: Iterable[float] = P_GRID
) -> tuple[float, dict[float, float]]:
    """The p in ``grid`` whose normalised max logit gives the lowest AURC on this
    (validation) set; returns it and the AURC of every p (ties: smallest p)."""
    correct = logits.argmax(-1) == labels
    scores = {p: aurc(normalised_max_logit(logits, p), correct) for p in grid}
    if not scores:
        raise ValueError("choose_p needs a non-empty grid of norms p")
    return min(scores, key=scores.get), scores


# ---------------------------------------------------------------------------------
# Label smoothing: targets and logit gradient
# ---------------------------------------------------------------------------------


def ls_targets(labels: torch.Tensor, n_classes: int, alpha: float) -> torch.Tensor:
    """Smoothed targets (1 - alpha) one_hot(y) + alpha / K; each row sums to one."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha!r}")
    one_hot = torch.nn.functional.one_hot(labels, n_classes).double()
    return (1 - alpha) * one_hot + alpha / n_classes


def ls_logit_gradient(logits: torch.Tensor, labels: torch.Tensor, alpha: float) -> torch.Tensor:
    """dL/dz = softmax(z) - ((1 - alpha) y + alpha / K) for the LS loss of each example."""
    return logits.double().softmax(-1) - ls_targets(labels, logits.shape[-1], alpha)


def max_logit_pull(p_correct: np.ndarray | float, alpha: float, n_classes: int) -> np.ndarray:
    """The extra gradient LS puts on the max logit, averaged over the label:
    alpha (P(correct | x) - 1 / K). Positive values push the max logit down."""
    return alpha * (np.asarray(p_correct, dtype=np.float64) - 1.0 / n_classes)


# ---------------------------------------------------------------------------------
# One trained model, evaluated
# ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Evaluation:
    """A classifier's selective-classification results on the test set: accuracy; by
    MSP and by the normalised max logit (p chosen on validation), the AURC, E-AURC,
    AUROC and risk-coverage curve; and per example the MSP, the centred max logit
    (max logit minus the mean logit) and correctness."""

    accuracy: float
    aurc_msp: float
    p: float
    aurc_norm: float
    curve_msp: RiskCoverage
    curve_norm: RiskCoverage
    msp: np.ndarray
    margin: np.ndarray
    correct: np.ndarray
    eaurc_msp: float
    eaurc_norm: float
    auroc_msp: float
    auroc_norm: float

    def summary(self) -> dict[str, float]:
        """The scalar results, by name (a table row)."""
        names = ("accuracy", "p", "aurc_msp", "aurc_norm", "eaurc_msp", "eaurc_norm")
        return {name: float(getattr(self, name)) for name in (*names, "auroc_msp", "auroc_norm")}


def evaluate(
    val_logits: torch.Tensor,
    val_labels: torch.Tensor,
    test_logits: torch.Tensor,
    test_labels: torch.Tensor,
    grid: Iterable[float] = P_GRID,
) -> Evaluation:
    """Score a classifier from its logits: p is chosen on the validation split only."""
    correct = (test_logits.argmax(-1) == test_labels).numpy()
    p, _ = choose_p(val_logits, val_labels, grid)
    by_msp = msp(test_logits)
    by_norm = normalised_max_logit(test_logits, p)
    return Evaluation(
        accuracy=float(correct.mean()),
        aurc_msp=aurc(by_msp, correct),
        p=p,
        aurc_norm=aurc(by_norm, correct),
        curve_msp=risk_coverage(by_msp, correct),
        curve_norm=risk_coverage(by_norm, correct),
        msp=by_msp.numpy(),
        margin=centred(test_logits).amax(-1).numpy(),
        correct=correct,
        eaurc_msp=e_aurc(by_msp, correct),
        eaurc_norm=e_aurc(by_norm, correct),
        auroc_msp=auroc(by_msp, correct),
        auroc_norm=auroc(by_norm, correct),
    )


# ---------------------------------------------------------------------------------
# The mechanism on matched inputs
# ---------------------------------------------------------------------------------


class Suppression(NamedTuple):
    """Per bin of confidence (equal counts, least confident first): the mean confidence
    binned by, the CE model's accuracy, and LS's median centred max logit over CE's."""

    confidence: np.ndarray
    ce_accuracy: np.ndarray
    ratio: np.ndarray


def suppression_by_confidence(
    ce: Evaluation, ls: Evaluation, bins: int = 5, by: np.ndarray | None = None
) -> Suppression:
    """How much LS shrinks the max logit, on the *same* test inputs, binned by how
    confident a model is on them: by default the CE model's own MSP, which tracks
    P(correct | x), or ``by``, a confidence per input from other models.

    The max logit is taken centred (minus the mean logit), so a shift of all logits,
    which the softmax ignores, does not count as suppression. A ratio below one means LS
    lowered it; the paper's account predicts lower ratios in the confident bins."""
    confidence = ce.msp if by is None else np.asarray(by)
    if not len(ce.msp) == len(ls.msp) == len(confidence) or not 1 <= bins <= len(ce.msp):
        raise ValueError(
            f"suppression_by_confidence needs two evaluations of one test set, a "
            f"confidence per input and 1 <= bins <= {len(ce.msp)}; got {len(ce.msp)}, "
            f"{len(ls.msp)}, {len(confidence)} and {bins}"
        )
    groups = np.array_split(np.argsort(confidence, kind="stable"), bins)
    return Suppression(
        np.array([confidence[g].mean() for g in groups]),
        np.array([ce.correct[g].mean() for g in groups]),
        np.array([np.median(ls.margin[g]) / np.median(ce.margin[g]) for g in groups]),
    )


def cross_fitted_drops(
    ce: Sequence[Evaluation],
    ls: Sequence[Evaluation],
    control: Sequence[Evaluation],
    reference: Sequence[np.ndarray],
    bins: int = 5,
) -> tuple[np.ndarray, np.ndarray]:
    """The suppression's drop (the ratio of the least confident bin minus that of the
    most confident), run by run, binned by a confidence no compared model has seen.

    Binning by the CE model's own MSP selects its high max logits into the top bin and
    its low ones into the bottom bin, so any second model, a retrained CE model too,
    regresses to the mean and shows a drop. Here run ``i`` trained ``ce[i]``, ``ls[i]``
    (the same initialisation and batch order) and ``control[i]`` (CE again, from
    another initialisation and batch order) on its own data, and its test inputs are
    binned by ``reference[i]``, a confidence per input from models of the other runs,
    which share no training noise with the three. ``ls[i]`` is set against ``ce[i]``,
    and, as the control, ``control[i]`` against ``ce[i]``. Returns the drops of LS and
    of the control, one a run."""
    n = len(ce)
    if n < 2 or not len(ls) == len(control) == len(reference) == n:
        raise ValueError(
            f"cross_fitted_drops needs at least 2 runs, each with a CE, an LS and a control "
            f"model and a reference; got {n} CE, {len(ls)} LS, {len(control)} control "
            f"models and {len(reference)} references"
        )
    drops = []
    for i in range(n):
        pair = [
            suppression_by_confidence(ce[i], m, bins, by=reference[i]) for m in (ls[i], control[i])
        ]
        drops.append([s.ratio[0] - s.ratio[-1] for s in pair])
    ls_drop, control_drop = np.array(drops).T
    return ls_drop, control_drop


# ---------------------------------------------------------------------------------
# Training: the official recipe
# ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Recipe:
    """The official training recipe: minibatch SGD (momentum 0.9, weight decay 5e-4 as
    an L2 term) at ``lr`` 0.1, divided by 10 at each fraction of the epochs in
    ``milestones`` (1/3 and 2/3: epochs 25 and 50 of 75 in the official CIFAR configs),
    batch 128, the last iterate kept. ``seed`` fixes the initialisation and the batch
    order, so CE and LS models of one seed share both."""

    epochs: int
    lr: float = 0.1
    weight_decay: float = 5e-4
    batch_size: int = 128
    milestones: tuple[float, ...] = (1 / 3, 2 / 3)
    seed: int = 0

    def steps(self) -> list[int]:
        """The epochs after which the rate drops (torch's ``MultiStepLR`` milestones)."""
        return sorted({round(f * self.epochs) for f in self.milestones} - {0, self.epochs})

    def config(self, alpha: float, threads: int = 1) -> vision.TrainConfig:
        """This recipe with LS ``alpha`` (0: plain cross-entropy) for
        :func:`iclr25.vision.train`, which trains and caches the model; torch uses
        ``threads`` CPU threads while training."""
        return vision.TrainConfig(
            epochs=self.epochs,
            batch_size=self.batch_size,
            lr=self.lr,
            weight_decay=self.weight_decay,
            label_smoothing=alpha,
            seed=self.seed,
            threads=threads,
            optimizer="sgd",
            milestones=tuple(self.steps()),
        )


def loss_change(losses: Sequence[float], window: int) -> float:
    """|L_E - L_(E - w)|: how far the mean training loss of the last epoch E lies from
    that of ``window`` = w epochs before (the first epoch, if training was shorter)."""
    if len(losses) < 2 or window < 1:
        raise ValueError(
            f"loss_change needs two or more epochs and window >= 1, got {len(losses)} "
            f"epochs and window {window}"
        )
    return abs(float(losses[-1]) - float(losses[max(0, len(losses) - 1 - window)]))
