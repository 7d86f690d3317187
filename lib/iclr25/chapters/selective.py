"""Label smoothing degrades selective classification; logit normalisation fixes it.

Xia, Laurent, Franchi & Bouganis (ICLR 2025). A selective classifier predicts
argmax_k z_k for logits z and abstains when a confidence score s(z) falls below a
threshold. Sorting the test set by s from most to least confident, accepting the top
fraction c (the *coverage*) gives the *risk* r(c), the error rate among the accepted;
the area under the risk-coverage curve (AURC) scores the ranking, lower is better.
The usual score is the maximum softmax probability (MSP), max_k softmax(z)_k.

Label smoothing (LS) trains against targets (1 - alpha) y + alpha / K instead of the
one-hot y, so the gradient of the loss with respect to the logits is

    dL/dz = pi - ((1 - alpha) y + alpha / K),   pi = softmax(z).

Averaged over the label, the max logit gets the cross-entropy gradient plus
alpha (P(correct | x) - 1 / K): LS pushes the max logit down *more* where the
prediction is likely correct, which squeezes confident-correct and uncertain-wrong
predictions together and worsens the MSP ranking. The post-hoc fix scores with the
max of the p-norm-normalised logits, max_k z_k / ||z||_p, with p chosen on
validation AURC.

What is here: the risk-coverage curve and AURC as the paper's code computes them,
the MSP and normalised-logit scores, the choice of p, and the LS targets and logit
gradient for the mechanism.

AURC is written by hand, following the official code's ``risk_coverage_curve``
(ENSTA-U2IS-AI/Label-smoothing-Selective-classification-Code): torch-uncertainty's
``AURC`` (0.13) cannot be imported without Lightning and torchmetrics (its package
``__init__`` imports a Lightning CLI), takes probabilities rather than an arbitrary
score, and discretises differently (no zero-coverage point, rescaled by
1 / (1 - 1/N)). Tied scores are ranked in expectation over a random tie order
(the official code breaks ties arbitrarily), so a constant score gives a flat
curve at the error rate.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import torch
from plotly.colors import qualitative

from iclr25 import core
from iclr25.core import Param

if TYPE_CHECKING:
    import plotly.graph_objects as go

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


# ---------------------------------------------------------------------------------
# Confidence scores
# ---------------------------------------------------------------------------------


def msp(logits: torch.Tensor) -> torch.Tensor:
    """Maximum softmax probability, max_k softmax(z)_k, in float64 (float32 saturates
    at 1.0 for confident predictions and would tie them)."""
    return logits.double().softmax(-1).amax(-1)


def normalised_max_logit(logits: torch.Tensor, p: float) -> torch.Tensor:
    """The paper's fix: max_k z_k / ||z||_p, the max of the p-norm-normalised logits.

    Invariant to scaling z by any positive constant, so it ranks by the *direction*
    of the logit vector and ignores the magnitude LS suppresses unevenly. (The official
    ``norm_logits`` can also shift z first, by a constant, its mean or its minimum;
    the score here is unshifted.)
    """
    z = logits.double()
    return (z / torch.linalg.vector_norm(z, ord=p, dim=-1, keepdim=True)).amax(-1)


P_GRID = tuple(range(1, 9))


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
    """A classifier's selective-classification results on the test set: accuracy,
    AURC by MSP, the p chosen on validation and the AURC of the normalised max logit,
    their risk-coverage curves, and per example the max logit and correctness."""

    accuracy: float
    aurc_msp: float
    p: float
    aurc_norm: float
    curve_msp: RiskCoverage
    curve_norm: RiskCoverage
    max_logit: np.ndarray
    correct: np.ndarray


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
        float(correct.mean()),
        aurc(by_msp, correct),
        p,
        aurc(by_norm, correct),
        risk_coverage(by_msp, correct),
        risk_coverage(by_norm, correct),
        test_logits.amax(-1).double().numpy(),
        correct,
    )


# ---------------------------------------------------------------------------------
# The chapter's parameters
# ---------------------------------------------------------------------------------

PARAMETERS = {
    "n": Param(8000, "images per generated dataset (split 60/20/20)", low=100, high=200000),
    "alpha_max": Param(0.3, "largest label-smoothing alpha", low=0.01, high=0.9),
    "n_alphas": Param(3, "alphas alpha_max * k / n_alphas, k = 1..n_alphas", low=1, high=10),
    "seeds": Param(2, "training seeds per configuration", low=1, high=20),
    "arch_b": Param("cnn", "second architecture, beside the MLP", choices=("cnn", "vit")),
    "epochs_mlp": Param(
        30, "training epochs of the MLP (the last tenth at lr / 10)", low=1, high=500
    ),
    "epochs_b": Param(20, "training epochs of the second architecture (likewise)", low=1, high=500),
    "width_mlp": Param(128, "hidden units of the MLP", low=2, high=4096),
    "width_b": Param(8, "first-block channels (CNN) or token width (ViT)", low=4, high=1024),
    "lr": Param(0.002, "Adam learning rate", low=1e-5, high=1.0),
    "batch_size": Param(128, "minibatch size", low=1, high=8192),
    "seed": Param(0, "seed of the datasets and of the first training run", low=0),
    "device": Param("auto", "compute device", choices=("auto", "cpu", "cuda")),
}

SMOKE = {
    "n": 600,
    "seeds": 1,
    "n_alphas": 1,
    "epochs_mlp": 2,
    "epochs_b": 1,
    "width_mlp": 16,
    "width_b": 4,
}

# ---------------------------------------------------------------------------------
# The chapter's claims: the bounds that decide them, and the gaps expected at our scale
# ---------------------------------------------------------------------------------

BOUNDS = {
    # AURC(LS) - AURC(CE), each (setting, alpha): LS must raise it everywhere
    "ls_worse_aurc": core.Bound(gt=0),
    # accuracy(LS) - accuracy(CE), each (setting, alpha): at most 1 point lost
    "accuracy_kept": core.Bound(ge=-0.01),
    # Spearman rho(alpha, mean AURC), each setting: an upward trend (null value 0)
    "grows_with_alpha": core.Bound(gt=0),
    # LS/CE median max logit, wrong minus correct, each setting: correct shrink more
    "suppresses_correct_more": core.Bound(gt=0),
    # share of the AURC lost to LS that normalisation wins back: "most" is over half
    "normalisation_recovers": core.Bound(gt=0.5),
}
"""Claim id -> the bound its value must meet, fixed before the run."""

_OVERFIT = (
    "The noisy digits are variants of the 1,797 digits that scikit-learn ships, so each split "
    "draws on about a thousand distinct digits: a cross-entropy model trained for a few dozen "
    "epochs over-fits them, and label smoothing then acts as a regulariser that raises "
    "accuracy. The AURC counts errors as well as their ranking, so it falls with the error "
    "rate whatever LS does to the ranking, and the paper's premise (LS keeps accuracy, so its "
    "effect on the ranking shows) does not hold there. The generated shapes, where the data "
    "are unlimited, do not have this problem. What would show the claim: a data set large "
    "enough that CE does not over-fit (more distinct base images, not more variants), or "
    "AURC compared at matched accuracy (E-AURC), over more seeds."
)

KNOWN_GAPS: dict[str, str] = {
    "ls_worse_aurc": _OVERFIT,
    "grows_with_alpha": _OVERFIT,
    "normalisation_recovers": (
        "Logit normalisation (the max of the p-norm-normalised logits, p chosen on the "
        "validation split) undoes LS's suppression of the max logit in models trained to "
        "convergence at high accuracy, the paper's ImageNet and CIFAR models. Our models are "
        "trained in seconds to well below that accuracy, where normalising the logits moves "
        "the AURC of cross-entropy models as much as of LS models, and p is chosen on a "
        "validation split of about 1,600 images with few errors to rank. What would show it: "
        "models trained to convergence on larger data (`n`, `epochs_mlp`, `epochs_b` up, a "
        "larger validation split) and more `seeds`."
    ),
}
"""Claim id -> why it is expected to miss at the book's scale, and what would show it."""


# ---------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------

COLORS = {"CE": "black", "LS": qualitative.Plotly[1], "LS, normalised": qualitative.Plotly[2]}
"""The colour of each model and score: CE by MSP, LS by MSP, LS by the normalised logit."""


def curves_figure(
    pairs: Mapping[str, tuple[Evaluation, Evaluation]], alpha: float, points: int = 401
) -> go.Figure:
    """Risk-coverage curves of a CE and an LS(alpha) model by MSP, and of the LS model by
    the normalised max logit: one panel per setting of ``pairs`` (its label -> the CE
    and the LS evaluation), each curve thinned to at most ``points`` points."""
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=len(pairs), shared_yaxes=True, subplot_titles=list(pairs))
    for col, (ce, ls) in enumerate(pairs.values(), start=1):
        lines = {
            "CE": (ce.curve_msp, ce.aurc_msp),
            "LS": (ls.curve_msp, ls.aurc_msp),
            "LS, normalised": (ls.curve_norm, ls.aurc_norm),
        }
        for name, (curve, area) in lines.items():
            keep = np.unique(np.linspace(0, len(curve.risk) - 1, points).astype(int))
            fig.add_scatter(
                x=curve.coverage[keep],
                y=100 * curve.risk[keep],
                mode="lines",
                line_color=COLORS[name],
                name=name,
                legendgroup=name,
                showlegend=col == 1,
                row=1,
                col=col,
                hovertemplate=f"{name}, AURC {100 * area:.2f}%<br>coverage "
                "%{x:.2f}, risk %{y:.2f}%<extra></extra>",
            )
    fig.update_xaxes(title_text="coverage")
    fig.update_yaxes(title_text="risk (%)", col=1)
    return fig.update_layout(
        title=f"Risk-coverage curves, CE vs LS (alpha = {alpha:g})", height=380
    )


def sensitivity_figure(
    ce: Mapping[str, Mapping[str, float]],
    ls: Mapping[str, Mapping[str, float]],
    alpha: float,
    accuracy_floor: float = 0.0,
) -> go.Figure:
    """AURC (%) of CE and LS(alpha) by MSP and of LS normalised, and accuracy (%) of both,
    by setting. ``ce`` and ``ls`` map a setting's label to its mean ``accuracy``,
    ``aurc_msp`` and ``aurc_norm``; the accuracy axis starts at ``accuracy_floor`` (%)."""
    from plotly.subplots import make_subplots

    labels = list(ce)
    fig = make_subplots(
        rows=1, cols=2, subplot_titles=["AURC (%), lower is better", "accuracy (%)"]
    )
    bars = [
        ("CE", ce, "aurc_msp", "CE"),
        (f"LS {alpha:g}", ls, "aurc_msp", "LS"),
        (f"LS {alpha:g}, normalised", ls, "aurc_norm", "LS, normalised"),
    ]
    for name, source, column, color in bars:
        fig.add_bar(
            x=labels,
            y=[100 * source[s][column] for s in labels],
            name=name,
            legendgroup=color,
            marker_color=COLORS[color],
            row=1,
            col=1,
        )
    for name, source, color in [("CE", ce, "CE"), (f"LS {alpha:g}", ls, "LS")]:
        fig.add_bar(
            x=labels,
            y=[100 * source[s]["accuracy"] for s in labels],
            name=name,
            legendgroup=color,
            marker_color=COLORS[color],
            showlegend=False,
            row=1,
            col=2,
        )
    fig.update_yaxes(range=[accuracy_floor, 100], row=1, col=2)
    return fig.update_layout(barmode="group", height=400, title=f"CE vs LS at alpha = {alpha:g}")
