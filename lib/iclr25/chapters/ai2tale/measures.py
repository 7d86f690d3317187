"""AI2TALE's measures, as the official ``ai2tale_measures.py``: the seven cognitive
categories and our keyword lists, the Cognitive-True-Positive (CTP), Cue-Hit, the label
metrics, and Kendall's tau between two rankings of the methods."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

# ---------------------------------------------------------------------------------
# Cognitive categories and their keywords (our own lists; see the module docstring)
# ---------------------------------------------------------------------------------

CATEGORIES = (
    "scarcity",
    "consistency",
    "reciprocity",
    "authority",
    "socialproof",
    "liking",
    "security",
)

KEYWORDS: dict[str, tuple[str, ...]] = {
    "scarcity": tuple(
        "urgent immediately immediate expire limited deadline hours today hurry remain "
        "final minutes".split()
    ),
    "consistency": tuple(
        "confirm previously agreed promised continue renew subscription commitment".split()
    ),
    "reciprocity": tuple("gift reward bonus prize refund free offer claim won".split()),
    "authority": tuple(
        "bank ceo manager director police tax legal department official administrator "
        "government".split()
    ),
    "socialproof": tuple(
        "colleagues customers thousands joined reviews members million popular people".split()
    ),
    "liking": tuple("friend love enjoy appreciate valued favourite favorite".split()),
    "security": tuple(
        "password account verify login security suspended suspension fraud unusual locked "
        "breach identity".split()
    ),
}
"""Raw keywords per category; :data:`KEYWORD_STEMS` holds their Snowball stems."""


def _stemmer():
    from nltk.stem.snowball import SnowballStemmer

    return SnowballStemmer("english")


_STEM = _stemmer()
KEYWORD_STEMS: dict[str, frozenset[str]] = {
    c: frozenset(_STEM.stem(w) for w in words) for c, words in KEYWORDS.items()
}


def words(sentence: str) -> list[str]:
    """Lower-cased word tokens (letters and digits), as the official cleaning leaves them."""
    return re.findall(r"[a-z0-9]+", sentence.lower())


def keyword_counts(sentence: str) -> dict[str, int]:
    """Keyword hits per category, as the official ``check_cog_diversity``: tokens
    lower-cased, stop words dropped (scikit-learn's list), Snowball-stemmed, and each token
    counted for the first category (in :data:`CATEGORIES` order) whose list holds it."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    counts = dict.fromkeys(CATEGORIES, 0)
    for token in words(sentence):
        if token in ENGLISH_STOP_WORDS:
            continue
        stem = _STEM.stem(token)
        for c in CATEGORIES:
            if stem in KEYWORD_STEMS[c]:
                counts[c] += 1
                break
    return counts


def is_cognitive(sentence: str) -> bool:
    """Whether a sentence holds at least one keyword of any category."""
    return max(keyword_counts(sentence).values()) > 0


def cognitive_true_positive(selected: Sequence[Sequence[str]], labels: Sequence[int]) -> float:
    """CTP: over the phishing emails (label 1), the share of selected non-empty
    sentences holding a keyword (official measure; 0 when nothing was selected)."""
    hits = total = 0
    for sentences, label in zip(selected, labels):
        if label != 1:
            continue
        for s in sentences:
            if s.strip():
                total += 1
                hits += is_cognitive(s)
    return hits / total if total else 0.0


def cue_hit(masks: np.ndarray, cues: np.ndarray, labels: Sequence[int]) -> float:
    """Cue-Hit: over the phishing emails (label 1), the mean share of an email's planted
    cue sentences (cues [N, S]) that its selection mask [N, S] holds."""
    labels = np.asarray(labels)
    phishing = (labels == 1) & np.asarray(cues, bool).any(1)
    if not phishing.any():
        return 0.0
    held = (np.asarray(masks, bool) & np.asarray(cues, bool)).sum(1)
    return float((held / np.maximum(np.asarray(cues, bool).sum(1), 1))[phishing].mean())


def label_metrics(y: Sequence[int], y_hat: Sequence[int]) -> dict[str, float]:
    """Label-Accuracy, F1 (phishing as positive), FPR and FNR, as the official code."""
    from sklearn.metrics import confusion_matrix, f1_score

    y, y_hat = np.asarray(y), np.asarray(y_hat)
    tn, fp, fn, tp = confusion_matrix(y, y_hat, labels=[0, 1]).ravel()
    return {
        "accuracy": float((y == y_hat).mean()),
        "f1": float(f1_score(y, y_hat, zero_division=0.0)),
        "fpr": float(fp / (fp + tn)) if fp + tn else float("nan"),
        "fnr": float(fn / (fn + tp)) if fn + tp else float("nan"),
    }
