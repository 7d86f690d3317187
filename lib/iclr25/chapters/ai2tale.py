"""AI2TALE: weakly supervised phishing-sentence localisation (Nguyen et al., ICLR 2025).

An email is a sequence of sentences x_1..x_S. An encoder maps each sentence to a
vector e_i (embedding, dropout, Conv1D with ReLU, max-pool over the tokens). A selector
(an MLP ending in a sigmoid) gives every sentence a probability p_i of being the one
that makes the email phishing. In training the selection is relaxed as in the official
``SampleConcrete`` layer, with p_i and 1 - p_i used as logits:

    z_i = e^((g_a + p_i) / tau) / (e^((g_a + p_i) / tau) + e^((g_b + 1 - p_i) / tau)),

g_a, g_b standard Gumbel noise, tau = 0.5; at inference the k sentences with the
largest p_i are kept (hard top-k). The predictor reads sum_i z_i e_i (dense 250, ReLU,
softmax over two labels). Every batch takes two steps (official ``ai2tale.py``):

1. selector frozen; encoder and predictor on a relaxed random mask: r_i ~ Bern(0.5),
   then a relaxed Bernoulli sample with logit r_i and temperature 0.5 in place of z;
2. everything, on the loss CE + lambda * mean_batch [ sum_i p_i (mean_d e_id)^2 /
   (2 sigma^2) + S (log sigma + sigma^2 / 2) ], the second term the information
   bottleneck's prior (S sentence slots).

The metrics follow the official ``ai2tale_measures.py``: Label-Accuracy (with F1, FPR,
FNR) of the prediction made from the selected sentences alone, and the
Cognitive-True-Positive (CTP): over phishing test emails, the share of selected non-empty
sentences that hold a keyword of one of seven cognitive categories after lower-casing,
stop-word removal and Snowball stemming. The official keyword file
(``phishingdata/kwords_stem.json``) ships only in the authors' download, not in the
repository, so the lists here are our own, written from the paper's seven categories.
Stop words are scikit-learn's list (nltk's needs a download); the stemmer is nltk's
Snowball. Cue-Hit, which real data cannot give, is the share of phishing emails whose
selection holds a planted cue.

The data are generated (:func:`make_corpus`): emails of 4-15 sentences from
slot-filled templates, phishing ones carrying 1-2 cue sentences, benign ones decoys that
use cue words legitimately; some cues avoid the keyword list, 5% of the training labels
are flipped, and every template belongs to the training or to the test split, not both.
Cues ask the reader for something (act, reply, pay, send details, follow a link) or
threaten the reader; decoys and the everyday sentences state facts about events and
other people and ask the reader for nothing, so that one sentence read alone can tell a
cue from a decoy, as one sentence of a real benign email reads benign. The test
templates reword the training ones with training words only: the predictor meets no word
whose embedding it never trained (:func:`one_sentence_separability` checks the first
property with a bag-of-words reader, the tests both). The official training, kept here,
trains the predictor on relaxed masks over all sentences and tests it on the one sentence
selected; the corpus lets that sentence carry the label.
Baselines: L2X (a concrete top-k selector, no random-mask step, no prior), attention
pooling (select by weight), random selection, and a bag-of-words logistic regression on
whole emails (scikit-learn) as the issue's accuracy reference.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from iclr25 import core
from iclr25.core import Bound, ClaimSpec, Gap, Param, ParameterError

if TYPE_CHECKING:
    import plotly.graph_objects as go

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
    """Cue-Hit: the share of phishing emails (label 1) whose selection mask [N, S]
    holds at least one planted cue sentence (cues [N, S])."""
    labels = np.asarray(labels)
    phishing = labels == 1
    if not phishing.any():
        return 0.0
    return float((np.asarray(masks, bool) & np.asarray(cues, bool))[phishing].any(1).mean())


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


# ---------------------------------------------------------------------------------
# The generated corpus
# ---------------------------------------------------------------------------------

NAMES = ("alice", "ben", "carla", "david", "emma", "farid", "grace", "hugo", "ines", "jon")
ORGS = ("northwind", "contoso", "fabrikam", "globex", "initech", "umbrella", "wayne")
SUMS = ("120 dollars", "450 dollars", "1200 dollars", "75 pounds", "300 euros", "2500 dollars")
DATES = ("monday", "tuesday", "thursday", "friday", "march 3", "april 12", "june 30")
LINKS = ("{org}-docs.com/view", "www.{org}.net/page", "{org}.io/file", "go.{org}.com/doc")

GREETINGS = ("dear {name},", "hi {name},", "hello {name},", "hello team,",
             "good morning {name},", "good morning team,")  # fmt: skip
SIGNOFFS = ("best regards, {name}", "kind regards, the {org} team", "kind regards, {name}",
            "thanks and cheers, {name}", "cheers, the {org} team",
            "thanks and best regards, {name}")  # fmt: skip
FILLERS = (
    "the minutes from the meeting on {date} are attached.",
    "we moved the weekly sync to {date} at ten.",
    "the weekly meeting moved to {date} at ten.",
    "the draft slides are at {link}.",
    "the invoice of {sum} from {org} was paid on {date}.",
    "the invoice from {org} was paid on {date}.",
    "our group will be at the {org} workshop on {date}.",
    "the project plan is in the shared folder.",
    "the draft project plan is in the shared folder.",
    "the parking garage will be repainted next month.",
    "the newsletter is out, with photos from the picnic.",
    "the photos from the picnic are in the newsletter.",
    "i will be out of office on {date}.",
    "the printer on the second floor has new toner.",
    "the printer on the second floor will be repainted next month.",
    "the training room holds twenty people at most.",
    "our director will open the kickoff on {date}.",
    "the kickoff on {date} will be in the training room.",
    "here is the summary of the call with {org}.",
    "the budget sheet for {date} is at {link}.",
    "the summary of the call with {org} is at {link}.",
)
"""Neutral statements of both classes, none asking the reader for anything; a few hold
a keyword by chance ("people", "director"), as real mail does."""
DECOYS = (
    "the deadline for the budget review is {date}.",
    "the it team will install a security update on all laptops on {date}.",
    "the deadline for the security update on all laptops is {date}.",
    "the ceo will present the annual results at the town hall.",
    "the office is closed for the bank holiday on {date}.",
    "the ceo will present the results at the town hall on {date}.",
    "the new password policy for the wiki starts on {date}.",
    "over two hundred colleagues signed up for the charity run.",
    "over two hundred colleagues signed up for the run on the bank holiday.",
    "lunch at the {org} workshop is free for all volunteers.",
    "the limited edition mugs are at the reception.",
    "the free mugs at the reception are a limited edition.",
    "as agreed on {date}, the report goes out on friday.",
    "the team confirmed the dinner on {date}.",
    "as agreed, the team confirmed the report for {date}.",
    "we appreciate the help of everyone with the move.",
    "the finance manager verified the figures in the budget sheet.",
    "the finance manager verified the figures for the annual review.",
)
"""Benign sentences that use cue words legitimately (deadlines, IT notices, holidays,
free lunches) in a benign frame: statements about events and other people, with no
request to the reader, no link and no threat; each test template rewords training ones
with their words."""

CUES: dict[str, tuple[str, ...]] = {
    # per category: indices 0-2 hold keywords, 3-4 avoid the list; 2 and 4 (the test
    # templates) reword the training ones with their words. Every cue asks the reader
    # for something (act, reply, send, pay, follow a link) or threatens the reader.
    "scarcity": (
        "your mailbox will expire in 24 hours unless you act now.",
        "urgent: this offer ends today at midnight, reply now.",
        "urgent: act now or your mailbox will expire today.",
        "you must respond before the end of the day or lose access.",
        "respond now or you lose access to your mailbox.",
    ),
    "consistency": (
        "as you agreed, please confirm your details again.",
        "to continue your subscription, renew it at {link}.",
        "please renew your subscription as you agreed at {link}.",
        "like you did in march, send us the same information once more.",
        "send us the same details once more, like you did in march.",
    ),
    "reciprocity": (
        "you have won a gift card worth {sum}, claim it at {link}.",
        "a refund of {sum} is waiting for you.",
        "claim the refund of {sum} waiting for you at {link}.",
        "we are sending {sum} your way, just tell us where to send it.",
        "{sum} is on the way to you, just tell us where to send it.",
    ),
    "authority": (
        "the {org} bank fraud department needs you to reply today.",
        "the ceo needs you to wire {sum} before the end of the day.",
        "the ceo of the {org} bank needs you to wire {sum} today.",
        "i am writing for the head of finance: process a payment of {sum} now.",
        "the head of finance needs you to process a payment of {sum} now.",
    ),
    "socialproof": (
        "thousands of customers have already updated their details, do it now at {link}.",
        "most of your colleagues joined the new portal this week, join them at {link}.",
        "thousands of your colleagues already joined the portal, join now at {link}.",
        "nearly all staff in your building did this yesterday, so do it now.",
        "nearly all staff already updated their details at {link}, do it now.",
    ),
    "liking": (
        "as a valued friend of {org}, we picked you personally, reply now.",
        "we love working with you, so please send us your details.",
        "we picked you personally as a valued friend, please send us your details.",
        "you always make our day brighter, {name}, so just send us your details.",
        "you always make our day, {name}, so please send us your details.",
    ),
    "security": (
        "we detected unusual login activity on your account, verify it at {link}.",
        "your password must be reset at {link} to avoid suspension.",
        "unusual activity was detected, reset your password at {link} now.",
        "someone in another country tried to get into your mailbox, check it at {link}.",
        "someone tried to get into your mailbox from another country, check it now.",
    ),
}
"""Planted phishing cues, five per category: indices 0-2 hold a keyword, 3-4 avoid
the keyword list (so CTP misses them and Cue-Hit does not)."""
OFF_LIST = (3, 4)
TEST_CUES = (2, 4)
"""Cue templates of the test split (one with keywords, one without); the rest train."""
CORPUS_VERSION = 2
"""Part of the trained models' cache key: 2 is the corpus whose cues ask the reader and
whose test templates use training words only (1, the earlier one, did neither)."""


def template_split(kind: str, index: int) -> str:
    """``"train"`` or ``"test"``: the split that owns template ``index`` of ``kind``
    (cues: :data:`TEST_CUES`; other kinds: every third template is a test template)."""
    if kind == "cue":
        return "test" if index in TEST_CUES else "train"
    return "test" if index % 3 == 2 else "train"


@dataclass(frozen=True)
class Email:
    """A generated email: its sentences, observed label (flipped for label noise),
    true label, which sentences are planted cues and decoys, and the templates used
    as (kind, category, index)."""

    sentences: tuple[str, ...]
    label: int
    true_label: int
    cue: tuple[bool, ...]
    decoy: tuple[bool, ...]
    templates: tuple[tuple[str, str, int], ...]


def _fill(template: str, rng: np.random.Generator) -> str:
    org = ORGS[rng.integers(len(ORGS))]
    link = LINKS[rng.integers(len(LINKS))].format(org=org)
    return template.format(
        name=NAMES[rng.integers(len(NAMES))],
        org=org,
        sum=SUMS[rng.integers(len(SUMS))],
        date=DATES[rng.integers(len(DATES))],
        link=link,
    )


def make_email(
    rng: np.random.Generator, split: str, label: int, max_sentences: int, noise: float = 0.0
) -> Email:
    """One email of 4-15 sentences: a greeting, a body of fillers with 1-2 cues
    (phishing) or 0-2 decoys (benign), a sign-off; templates from ``split`` only.
    Cues and decoys sit within the first ``max_sentences`` sentences, so truncation
    never cuts one; the label is flipped with probability ``noise``."""

    def pick(kind: str, pool: Sequence[str]) -> tuple[str, tuple[str, str, int]]:
        allowed = [j for j in range(len(pool)) if template_split(kind, j) == split]
        j = int(rng.choice(allowed))
        return _fill(pool[j], rng), (kind, "", j)

    n = int(rng.integers(4, 16))
    body = [pick("filler", FILLERS) for _ in range(n - 2)]
    marks = [("", False, False)] * (n - 2)
    if label == 1:
        specials = []
        for _ in range(int(rng.integers(1, 3))):
            c = CATEGORIES[rng.integers(len(CATEGORIES))]
            text, (_, _, j) = pick("cue", CUES[c])
            specials.append((text, ("cue", c, j), True))
    else:
        count = int(rng.choice([0, 1, 2], p=[0.2, 0.5, 0.3]))
        specials = [(*pick("decoy", DECOYS), False) for _ in range(count)]
    slots = rng.permutation(np.arange(1, min(n - 1, max_sentences)))[: len(specials)]
    for slot, (text, tid, is_cue) in zip(slots, specials):
        body[slot - 1] = (text, tid)
        marks[slot - 1] = ("", is_cue, not is_cue)
    sentences = [pick("greeting", GREETINGS), *body, pick("signoff", SIGNOFFS)]
    cue = (False, *(m[1] for m in marks), False)
    decoy = (False, *(m[2] for m in marks), False)
    flipped = int(label) ^ int(rng.random() < noise)
    return Email(
        tuple(s for s, _ in sentences),
        flipped,
        int(label),
        cue,
        decoy,
        tuple(t for _, t in sentences),
    )


def make_corpus(
    n: int, seed: int, max_sentences: int, noise: float = 0.05, test_share: float = 0.3
) -> dict[str, list[Email]]:
    """``n`` emails, half phishing, split into ``"train"`` and ``"test"`` by template:
    label noise ``noise`` in the training split only (test labels are the truth)."""
    rng = np.random.default_rng([seed, 29])
    n_test = int(round(n * test_share))
    out = {}
    for split, size, eps in [("train", n - n_test, noise), ("test", n_test, 0.0)]:
        labels = rng.permutation(np.arange(size) % 2)
        out[split] = [make_email(rng, split, int(y), max_sentences, eps) for y in labels]
    return out


# ---------------------------------------------------------------------------------
# Encoding emails as token tensors
# ---------------------------------------------------------------------------------

PAD, UNK = 0, 1


def build_vocab(emails: Sequence[Email]) -> dict[str, int]:
    """Word -> index over the training emails (0 padding, 1 unknown)."""
    vocab = {"<pad>": PAD, "<unk>": UNK}
    for email in emails:
        for s in email.sentences:
            for w in words(s):
                vocab.setdefault(w, len(vocab))
    return vocab


@dataclass
class Encoded:
    """Emails as tensors: tokens [N, S, T] (0 padding), valid [N, S] (non-empty sentence),
    labels [N], true labels [N], cues [N, S], and the kept sentences' texts."""

    tokens: torch.Tensor
    valid: torch.Tensor
    labels: torch.Tensor
    true_labels: torch.Tensor
    cues: np.ndarray
    texts: list[list[str]]

    def __len__(self) -> int:
        return len(self.labels)


def encode(
    emails: Sequence[Email], vocab: Mapping[str, int], max_sentences: int, max_tokens: int,
    verbose: bool = True,
) -> Encoded:  # fmt: skip
    """Token tensors of ``emails``: at most ``max_sentences`` sentences of ``max_tokens``
    tokens each; longer emails and sentences are truncated, and counted aloud."""
    if not emails:
        raise ParameterError("no emails to encode; accepted: at least one email")
    n, s_max, t_max = len(emails), max_sentences, max_tokens
    tokens = torch.zeros(n, s_max, t_max, dtype=torch.long)
    cues = np.zeros((n, s_max), bool)
    long_emails = long_sentences = 0
    texts = []
    for i, email in enumerate(emails):
        if not email.sentences or not any(s.strip() for s in email.sentences):
            raise ParameterError(f"email {i} is empty; accepted: an email with a sentence")
        long_emails += len(email.sentences) > s_max
        kept = list(email.sentences[:s_max])
        texts.append(kept)
        cues[i, : len(kept)] = email.cue[:s_max]
        for j, s in enumerate(kept):
            ids = [vocab.get(w, UNK) for w in words(s)]
            long_sentences += len(ids) > t_max
            ids = ids[:t_max]
            tokens[i, j, : len(ids)] = torch.tensor(ids, dtype=torch.long)
    if verbose and (long_emails or long_sentences):
        print(
            f"truncated {long_emails} of {n} emails to {s_max} sentences and "
            f"{long_sentences} sentences to {t_max} tokens"
        )
    labels = torch.tensor([e.label for e in emails])
    true = torch.tensor([e.true_label for e in emails])
    return Encoded(tokens, (tokens != PAD).any(-1), labels, true, cues, texts)


def split_text(text: str) -> list[str]:
    """A typed email split into sentences (at . ! ? and line breaks); refuses an
    email with no words."""
    parts = [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", text) if s.strip()]
    parts = [s for s in parts if words(s)]
    if not parts:
        raise ParameterError("the email is empty; accepted: text with at least one word")
    return parts


def text_email(text: str) -> Email:
    """A typed email as an :class:`Email` (label unknown: 0, no planted cues)."""
    sentences = tuple(split_text(text))
    flags = (False,) * len(sentences)
    return Email(sentences, 0, 0, flags, flags, ())


# ---------------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------------

METHODS = ("ai2tale", "l2x", "attention", "random")


def check_settings(k: int, tau: float, sigma: float, max_sentences: int, method: str) -> None:
    """One clear line for a setting the method cannot run with."""
    if method not in METHODS:
        raise ParameterError(f"unknown method {method!r}; accepted: {', '.join(METHODS)}")
    if not 1 <= k <= max_sentences:
        raise ParameterError(f"k got {k!r}; accepted: an integer from 1 to {max_sentences}")
    if not tau > 0:
        raise ParameterError(f"tau got {tau!r}; accepted: a number > 0")
    if not sigma > 0:
        raise ParameterError(f"sigma got {sigma!r}; accepted: a number > 0")


def gumbel(shape: Sequence[int], generator: torch.Generator | None = None) -> torch.Tensor:
    """Standard Gumbel noise -log(-log u), u uniform in (tiny, 1) as the official layer."""
    tiny = torch.finfo(torch.float32).tiny
    u = torch.rand(*shape, generator=generator).clamp_min(tiny)
    return -torch.log(-torch.log(u))


def sample_concrete(
    p: torch.Tensor, tau: float, g_a: torch.Tensor, g_b: torch.Tensor
) -> torch.Tensor:
    """The official SampleConcrete relaxation with p and 1 - p as logits:
    z = e^((g_a + p)/tau) / (e^((g_a + p)/tau) + e^((g_b + 1 - p)/tau)), computed as the
    sigmoid of the difference of the two exponents (the same number, without overflow)
    and kept inside the open interval (0, 1), which float rounding could leave."""
    a = (g_a + p) / tau
    b = (g_b + 1.0 - p) / tau
    eps = torch.finfo(p.dtype).eps
    return torch.sigmoid(a - b).clamp(eps, 1.0 - eps)


def relaxed_random_mask(shape: Sequence[int], temperature: float = 0.5) -> torch.Tensor:
    """Step 1's mask: r ~ Bern(0.5) per sentence, then a relaxed Bernoulli sample with
    logit r and temperature 0.5 (official ``RelaxedBernoulli(0.5, logits=r)``):
    sigmoid((r + log u - log(1 - u)) / temperature)."""
    r = (torch.rand(*shape) > 0.5).float()
    u = torch.rand(*shape).clamp(1e-7, 1 - 1e-7)
    return torch.sigmoid((r + torch.log(u) - torch.log1p(-u)) / temperature)


def topk_mask(scores: torch.Tensor, k: int, valid: torch.Tensor) -> torch.Tensor:
    """Hard top-k over the sentences [N, S]: the k valid (non-empty) sentences with the
    largest scores; an email with fewer valid sentences keeps all of them."""
    masked = scores.masked_fill(~valid, float("-inf"))
    idx = masked.topk(k, dim=-1).indices
    mask = torch.zeros_like(valid).scatter(-1, idx, True)
    return mask & valid


def prior_term(p: torch.Tensor, e: torch.Tensor, sigma: float) -> torch.Tensor:
    """The prior term per email [N]: sum_i p_i (mean_d e_id)^2 / (2 sigma^2)
    + S (log sigma + sigma^2 / 2), over all S sentence slots as the official code."""
    n_slots = p.shape[-1]
    quad = (p * e.mean(-1).square()).sum(-1) / (2 * sigma**2)
    return quad + n_slots * (np.log(sigma) + sigma**2 / 2)


def keras_init(module: nn.Module) -> None:
    """The official model's (Keras') initialisers: embeddings U(-0.05, 0.05), Glorot-uniform
    kernels, zero biases. The prior weighs (mean_d e_id)^2, so it acts on the scale of
    the features; torch's defaults (embeddings N(0, 1)) make them about 30 times larger
    and the prior about a thousand times stronger than in the official code."""
    if isinstance(module, nn.Embedding):
        nn.init.uniform_(module.weight, -0.05, 0.05)
    elif isinstance(module, (nn.Linear, nn.Conv1d)):
        nn.init.xavier_uniform_(module.weight)
        nn.init.zeros_(module.bias)


class Encoder(nn.Module):
    """Sentence encoder: embedding, dropout 0.2, Conv1D (width 3, ReLU), max over tokens."""

    def __init__(self, vocab_size: int, embedding: int, filters: int):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embedding)
        self.drop = nn.Dropout(0.2)
        self.conv = nn.Conv1d(embedding, filters, 3)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        n, s, t = tokens.shape
        x = self.drop(self.embed(tokens.reshape(n * s, t))).transpose(1, 2)
        return F.relu(self.conv(x)).amax(-1).reshape(n, s, -1)


class Localiser(nn.Module):
    """Encoder, selector (dropout, 100 ReLU, dropout, 100 ReLU, 1) and predictor (sum of
    the weighted sentence vectors, 250 ReLU, 2). ``method`` decides how the selector's
    output weighs the sentences (see :meth:`weights`)."""

    def __init__(self, method: str, vocab_size: int, embedding: int, filters: int,
                 k: int = 1, tau: float = 0.5):  # fmt: skip
        super().__init__()
        if method not in METHODS:
            raise ValueError(f"unknown method {method!r}; accepted: {', '.join(METHODS)}")
        self.method, self.k, self.tau = method, k, tau
        self.encoder = Encoder(vocab_size, embedding, filters)
        self.selector = nn.Sequential(
            nn.Dropout(0.2), nn.Linear(filters, 100), nn.ReLU(),
            nn.Dropout(0.2), nn.Linear(100, 100), nn.ReLU(), nn.Linear(100, 1),
        )  # fmt: skip
        self.predictor = nn.Sequential(nn.Linear(filters, 250), nn.ReLU(), nn.Linear(250, 2))
        self.apply(keras_init)

    def scores(self, e: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
        """Per-sentence selection scores [N, S]: p (AI2TALE), logits (L2X), attention
        weights (softmax over the valid sentences), uniform noise (random)."""
        if self.method == "random":
            return torch.rand(valid.shape)
        raw = self.selector(e).squeeze(-1)
        if self.method == "ai2tale":
            return torch.sigmoid(raw)
        if self.method == "attention":
            return raw.masked_fill(~valid, float("-inf")).softmax(-1)
        return raw

    def weights(self, scores: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
        """Training weights of the sentences: the relaxed selection."""
        if self.method == "ai2tale":
            return sample_concrete(scores, self.tau, gumbel(scores.shape), gumbel(scores.shape))
        if self.method == "l2x":  # Chen et al.: k Gumbel-softmax draws, max over them
            logits = scores.masked_fill(~valid, float("-inf")).unsqueeze(1)
            draws = (gumbel((len(scores), self.k, scores.shape[-1])) + logits) / self.tau
            return draws.softmax(-1).amax(1)
        if self.method == "attention":
            return scores
        return topk_mask(scores, self.k, valid).float()

    def predict(self, e: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return self.predictor((w.unsqueeze(-1) * e).sum(1))

    def forward(self, tokens: torch.Tensor):
        """Inference: hard top-k selection; returns scores, mask and logits."""
        valid = (tokens != PAD).any(-1)
        e = self.encoder(tokens)
        scores = self.scores(e, valid)
        mask = topk_mask(scores, self.k, valid)
        return scores, mask, self.predict(e, mask.float())


@dataclass(frozen=True)
class Recipe:
    """Training settings (official defaults: Adam 1e-3 with clipnorm 1, 10 epochs,
    batch 128; sigma 0.3, lambda 0.1), and whether to take step (1)."""

    epochs: int = 10
    batch_size: int = 128
    lr: float = 1e-3
    sigma: float = 0.3
    lam: float = 0.1
    random_mask_step: bool = True
    seed: int = 0


def _clip_each(params: Sequence[nn.Parameter], max_norm: float = 1.0) -> None:
    # Keras' clipnorm clips every gradient tensor to norm 1 on its own
    for q in params:
        if q.grad is not None:
            norm = q.grad.norm()
            if norm > max_norm:
                q.grad.mul_(max_norm / norm)


def train_step(model: Localiser, opt, tokens, labels, recipe: Recipe) -> float:
    """One batch: for AI2TALE, step (1) (selector frozen, relaxed random masks) if
    the recipe takes it, then step (2) (everything, CE + lambda * prior); the baselines
    take step (2) with CE alone. Returns step (2)'s cross-entropy."""
    valid = (tokens != PAD).any(-1)
    ai2tale = model.method == "ai2tale"
    if ai2tale and recipe.random_mask_step:
        opt.zero_grad()
        e = model.encoder(tokens)
        mask = relaxed_random_mask(valid.shape)
        F.cross_entropy(model.predict(e, mask), labels).backward()
        for q in model.selector.parameters():
            q.grad = None  # frozen: Adam skips a parameter without a gradient
        _clip_each(list(model.parameters()))
        opt.step()
    opt.zero_grad()
    e = model.encoder(tokens)
    scores = model.scores(e, valid)
    ce = F.cross_entropy(model.predict(e, model.weights(scores, valid)), labels)
    loss = ce + recipe.lam * prior_term(scores, e, recipe.sigma).mean() if ai2tale else ce
    loss.backward()
    _clip_each(list(model.parameters()))
    opt.step()
    return float(ce.detach())


def train(model: Localiser, data: Encoded, recipe: Recipe) -> list[float]:
    """Train ``model`` on ``data`` (Adam, clipnorm 1); the mean CE of every epoch."""
    torch.manual_seed(recipe.seed)
    opt = torch.optim.Adam(model.parameters(), lr=recipe.lr)
    model.train()
    curve = []
    for _ in range(recipe.epochs):
        order = torch.randperm(len(data))
        losses = []
        for start in range(0, len(data), recipe.batch_size):
            idx = order[start : start + recipe.batch_size]
            losses.append(train_step(model, opt, data.tokens[idx], data.labels[idx], recipe))
        curve.append(float(np.mean(losses)))
    model.eval()
    return curve


@torch.no_grad()
def evaluate(model: Localiser, data: Encoded, seed: int = 0) -> dict[str, Any]:
    """Select and predict on ``data``: Label-Accuracy, F1, FPR, FNR, CTP, Cue-Hit, and the
    per-email scores, masks and predictions."""
    model.eval()
    torch.manual_seed(seed)  # the random baseline's draws
    scores, mask, logits = model(data.tokens)
    y_hat = logits.argmax(-1).numpy()
    mask_np = mask.numpy()
    selected = [[t for t, m in zip(texts, row) if m] for texts, row in zip(data.texts, mask_np)]
    labels = data.true_labels.numpy()
    return {
        **label_metrics(labels, y_hat),
        "ctp": cognitive_true_positive(selected, labels),
        "cue_hit": cue_hit(mask_np, data.cues, labels),
        "scores": scores.numpy(),
        "mask": mask_np,
        "pred": y_hat,
    }


def train_cached(
    method: str,
    data: Encoded,
    vocab_size: int,
    arch: Mapping[str, Any],
    recipe: Recipe,
    key: Mapping[str, Any],
) -> tuple[Localiser, list[float]]:
    """A trained :class:`Localiser`, from the cache when ``key`` (the data's config) and
    the settings match; built on one thread otherwise."""
    model = Localiser(method, vocab_size, **arch)
    config = {"method": method, "arch": dict(arch), "recipe": vars(recipe), "data": dict(key),
              "init": "keras", "corpus": CORPUS_VERSION}  # fmt: skip

    def build() -> dict[str, Any]:
        torch.manual_seed(recipe.seed)
        fresh = Localiser(method, vocab_size, **arch)
        with core.threads(1):
            curve = train(fresh, data, recipe)
        return {"state": fresh.state_dict(), "curve": torch.tensor(curve)}

    stored = core.cached("ai2tale-model", config, build)
    model.load_state_dict(stored["state"])
    model.eval()
    return model, stored["curve"].tolist()


def template_sentences(
    split: str, rng: np.random.Generator, fills: int = 20
) -> tuple[list[str], np.ndarray, list[str]]:
    """Every template of ``split`` (cues, decoys, fillers, greetings, sign-offs), each
    filled ``fills`` times: the sentences, whether each is a cue, and each one's kind."""
    kinds = {"greeting": GREETINGS, "signoff": SIGNOFFS, "filler": FILLERS, "decoy": DECOYS}
    texts, is_cue, kind_of = [], [], []
    for kind, pool in [("cue", [t for c in CATEGORIES for t in CUES[c]]), *kinds.items()]:
        for j, t in enumerate(pool):
            if template_split(kind, j % 5 if kind == "cue" else j) != split:
                continue
            for _ in range(fills):
                texts.append(_fill(t, rng))
                is_cue.append(kind == "cue")
                kind_of.append(kind)
    return texts, np.array(is_cue), kind_of


def one_sentence_separability(seed: int = 0, fills: int = 20) -> dict[str, float]:
    """A property of the corpus, decided before any model is trained: a bag-of-words
    logistic regression (scikit-learn) trained on single sentences of the training
    templates (cue against everything else), tested on the test templates. Returns the
    share of held-out cues it calls cues and the share of held-out decoys and of the
    other sentences (fillers, greetings, sign-offs) it calls not-cues."""
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng([seed, 2929])
    x_tr, y_tr, _ = template_sentences("train", rng, fills)
    x_te, y_te, kind_te = template_sentences("test", rng, fills)
    vec = CountVectorizer(token_pattern=r"[a-z0-9]+")
    clf = LogisticRegression(max_iter=2000, random_state=seed)
    clf.fit(vec.fit_transform(x_tr), y_tr)
    pred = clf.predict(vec.transform(x_te))
    kind_te = np.array(kind_te)
    decoy = kind_te == "decoy"
    other = ~y_te & ~decoy
    return {
        "cues": float(pred[y_te].mean()),
        "decoys": float((~pred[decoy]).mean()),
        "others": float((~pred[other]).mean()),
    }


def bag_of_words_accuracy(train: Sequence[Email], test: Sequence[Email], seed: int) -> float:
    """Label-Accuracy of a bag-of-words logistic regression on whole emails (the reference)."""
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression

    vec = CountVectorizer(token_pattern=r"[a-z0-9]+")
    x_train = vec.fit_transform([" ".join(e.sentences) for e in train])
    clf = LogisticRegression(max_iter=2000, random_state=seed)
    clf.fit(x_train, [e.label for e in train])
    pred = clf.predict(vec.transform([" ".join(e.sentences) for e in test]))
    return float(np.mean(pred == np.array([e.true_label for e in test])))


def kendall_tau(a: Sequence[float], b: Sequence[float]) -> float:
    """Kendall's tau-b between two scorings of the same methods (scipy)."""
    from scipy.stats import kendalltau

    return float(kendalltau(a, b).statistic)


# ---------------------------------------------------------------------------------
# Parameters
# ---------------------------------------------------------------------------------

PARAMETERS = {
    "n_emails": Param(3000, "generated emails (70% train, 30% test)", low=40, high=200000),
    "max_sentences": Param(12, "sentences kept per email (paper: 100)", low=4, high=100),
    "max_tokens": Param(16, "tokens kept per sentence (paper: 50)", low=4, high=50),
    "embedding": Param(32, "word-embedding width (paper: 150)", low=4, high=512),
    "filters": Param(64, "Conv1D filters (paper: 250)", low=4, high=512),
    "epochs": Param(10, "training epochs (paper: 10)", low=1, high=200),
    "batch_size": Param(128, "minibatch size (paper: 128)", low=8, high=4096),
    "lr": Param(1e-3, "Adam learning rate (paper: 1e-3, clipnorm 1)", low=1e-5, high=0.1),
    "tau": Param(0.5, "temperature of the relaxed selection (paper: 0.5)", low=1e-3, high=10.0),
    "k": Param(1, "sentences selected per email (paper: 1)", low=1, high=100),
    "sigma": Param(0.3, "prior's sigma (paper: 0.3)", low=1e-3, high=10.0),
    "lam": Param(0.1, "prior's weight lambda at the paper's settings (0.1)", low=0.0, high=10.0),
    "lam_ablation": Param(
        1e-3, "lambda of the step-(1) ablation (the sweep's smallest > 0)", low=0.0, high=10.0
    ),
    "label_noise": Param(0.05, "share of flipped training labels", low=0.0, high=0.4),
    "seeds": Param(1, "training seeds per model (full run: 3)", low=1, high=10),
    "seed": Param(0, "seed of the corpus and of the first training run", low=0),
    "device": Param(
        "auto",
        "compute device (the models are small: trained on the CPU)",
        choices=("auto", "cpu", "cuda"),
    ),  # fmt: skip
}
SMOKE = {"n_emails": 200, "epochs": 1}

LAMBDAS = (0.0, 1e-3, 1e-2, 1e-1)
"""The sweep of the prior's weight (the sensitivity section)."""

# ---------------------------------------------------------------------------------
# Claims: bounds fixed by the issue, gaps declared before the book-mode run
# ---------------------------------------------------------------------------------

CLAIMS: dict[str, ClaimSpec] = {
    # Gaps written before the first book run of the redesigned corpus (third book run in
    # all). The first two runs used the earlier corpus, whose test templates brought
    # words never seen in training (see make_corpus); beats_baselines and
    # random_mask_step missed there.
    # Kendall tau-b between the CTP and the Cue-Hit of AI2TALE, L2X, attention, random
    "ctp_tracks_truth": ClaimSpec(
        "CTP and Cue-Hit rank AI2TALE, L2X, attention and random alike (Kendall tau >= 0.6)",
        kind="setup",
        paper="no ground truth in the paper's datasets: CTP is its proxy",
        rule=Bound(ge=0.6),
        control="Cue-Hit's ranking of the same four methods (the planted cues)",
    ),
    # AI2TALE's mean of Label-Accuracy and CTP minus each baseline's (L2X, attention,
    # random), at sigma 0.3, lambda 0.1: at least one point (0.01) above every one
    "beats_baselines": ClaimSpec(
        "At the paper's settings, AI2TALE's mean of Label-Accuracy and CTP is at "
        "least 1 point above every baseline's",
        paper="1.5 to 3.5 points above the baselines on average in "
        "Label-Accuracy and CTP, seven email datasets (abstract)",
        rule=Bound(ge=0.01),
        control="L2X, attention pooling and random selection (same encoder and predictor)",
        rests_on=("ctp_tracks_truth",),
        gap=Gap(
            "On this corpus one sentence decides the label, by design: the test templates use "
            "only training words, and a bag-of-words reader of single sentences trained on the "
            "training templates tells held-out cues from decoys and from everyday sentences "
            "(one_sentence_separability, a unit test run before any model was trained). Every "
            "selector that learns to find a cue then feeds its predictor the sentence that "
            "decides the label, and all of them reach the same ceiling, as L2X and attention did "
            "in the issue's pilot on an easy corpus (Label-Accuracy 1.0). What is left between "
            "them is which of two cues they keep where an email has two (CTP), a matter of "
            "test-set noise rather than a systematic point. The paper's margins come from real "
            "emails of up to 100 sentences, where cues are graded, several sentences carry part "
            "of the evidence and the kept sentence changes what the label can be read from. What "
            "would show it: the paper's seven datasets, or a generated corpus whose cues are "
            "only weakly separable one sentence at a time."
        ),
    ),
    # Cue-Hit of the best lambda > 0 of the sweep minus that of lambda = 0
    "prior_helps": ClaimSpec(
        "The best lambda > 0 beats lambda = 0 in Cue-Hit by at least 2 points",
        paper="the prior term is part of the method (official default lambda "
        "0.1, sigma 0.3); the paper's ablation tables were not retrieved",
        rule=Bound(ge=0.02),
        control="AI2TALE at lambda = 0 (no prior term)",
        gap=Gap(
            "With k = 1 and a hard top-1 at inference, only the order of the p_i decides the "
            "selection, and the prior is a pressure towards small p where features are large: "
            "the sparsity it buys is what the top-1 already enforces. Of the sweep's lambdas > 0, "
            "the issue's pilot saw the selector collapse at 0.01 and 0.1 (Cue-Hit 0), leaving "
            "1e-3, whose pressure is a thousandth of the CE's scale; the pilot's lambda <= 1e-3 "
            "models reached the corpus's ceiling, as did lambda = 0. A 2-point gain needs the "
            "prior to change which sentence ranks first in more than 2% of phishing emails. "
            "On the redesigned corpus, where one sentence decides the label (see "
            "beats_baselines), lambda = 0 already finds the cue wherever a selector can, which "
            "leaves no room for the gain. "
            "What would show it: the paper's emails of up to 100 sentences, where many candidate "
            "sentences compete and a pressure towards few informative ones can reorder them, "
            "with lambda and sigma tuned per dataset."
        ),
    ),
    # Label-Accuracy with step (1) minus without it, at lam_ablation
    "random_mask_step": ClaimSpec(
        "Dropping step (1), the random-mask training, costs at least 1 point of Label-Accuracy",
        paper="step (1) is part of the official training loop; the paper's "
        "ablation tables were not retrieved",
        rule=Bound(ge=0.01),
        control="AI2TALE trained without step (1), at lam_ablation",
        gap=Gap(
            "Step (1) trains the encoder and predictor on relaxed random masks that keep about "
            "half of the sentences. Step (2)'s masks are nearly as random: the official "
            "SampleConcrete uses p and 1 - p themselves as logits, at temperature 0.5, so a "
            "sentence's z exceeds 0.5 with probability sigmoid(2p - 1), between 0.27 and 0.73 "
            "whatever p is. Without step (1) the predictor still learns from near-random "
            "subsets; and on a corpus where one sentence decides the label (see "
            "beats_baselines), both variants find the cue and read it, so they reach the same "
            "ceiling. What would show it: emails long enough that the predictor, trained on "
            "step (2)'s subsets alone, meets sentence mixtures it cannot yet read when the "
            "selector starts to commit (the paper's 100-sentence emails), or a sharper "
            "relaxation (logits log p) under which step (2)'s masks follow the selector."
        ),
    ),
}
"""Claim id -> what the claim says, what decides it (the issue's bounds), what it is
measured against, and the gaps declared before the book-mode run."""

# ---------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------

METRIC_NAMES = {"accuracy": "Label-Accuracy", "ctp": "CTP", "cue_hit": "Cue-Hit"}


def metrics_figure(table: Mapping[str, Mapping[str, float]], title: str) -> go.Figure:
    """Grouped bars: Label-Accuracy, CTP and Cue-Hit of each method (a missing metric,
    such as the bag of words' CTP, is left out)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for key, name in METRIC_NAMES.items():
        methods = [m for m in table if key in table[m]]
        values = [table[m][key] for m in methods]
        fig.add_bar(
            x=methods, y=values, name=name, text=[f"{v:.2f}" for v in values],
            textposition="outside",
        )  # fmt: skip
    fig.update_layout(
        title=title, barmode="group", height=380, yaxis=dict(range=[0, 1.12], title="share"),
        margin=dict(t=60, b=40),
    )  # fmt: skip
    return fig


def email_figure(
    sentences: Sequence[str],
    scores: Sequence[float],
    mask: Sequence[bool],
    cues: Sequence[bool] | None = None,
    title: str = "",
    width: int = 70,
) -> go.Figure:
    """One email's sentences as horizontal bars of their selection score: the selected
    sentence(s) in red, a planted cue marked with a star, keyword sentences with (k)."""
    import plotly.graph_objects as go

    n = len(sentences)
    cues = cues if cues is not None else [False] * n
    labels = []
    for j, (s, cue) in enumerate(zip(sentences, cues)):
        short = s if len(s) <= width else s[: width - 3] + "..."
        labels.append(f"{j + 1}. {'* ' if cue else ''}{short}{' (k)' if is_cognitive(s) else ''}")
    colours = ["#d62728" if m else "#9bb7d4" for m in mask[:n]]
    fig = go.Figure(go.Bar(x=list(scores[:n]), y=labels, orientation="h", marker_color=colours))
    fig.update_layout(
        title=title, height=120 + 26 * n, xaxis_title="selection score",
        yaxis=dict(autorange="reversed", automargin=True), margin=dict(t=60, l=10),
    )  # fmt: skip
    return fig
