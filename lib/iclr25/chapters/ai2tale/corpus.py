"""AI2TALE's generated corpus: the slot-filled templates (everyday sentences, decoys,
planted cues), emails and their split by template, readers of one and of two planted
sentences, and the emails' encoding as token tensors."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from iclr25.chapters.ai2tale.measures import words
from iclr25.core import ParameterError

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
"""Sentences of both classes that use cue words legitimately (deadlines, IT notices,
holidays, free lunches): statements about events and other people, with no request to
the reader; each test template rewords training ones with their words."""

CUES: dict[str, tuple[tuple[str, ...], ...]] = {
    # per family and strength 1-3: four templates, 0-1 train and 2-3 test (rewordings in
    # the training words), 1 and 3 off the keyword list. Each family also appears alone
    # in benign mail, so no sentence read alone decides the label.
    "authority": (
        (
            "this message comes from the finance department.",
            "this note comes from the office of the head of finance.",
            "this note comes from the finance department.",
            "this message comes from the office of the head of finance.",
        ),
        (
            "i am writing for the ceo, who asked me to contact you.",
            "i am writing for the head of finance, who is out of office this week.",
            "i am writing for the ceo, who is out of office this week.",
            "the head of finance asked me to contact you this week.",
        ),
        (
            "this is the fraud department of the {org} bank, and the matter is urgent.",
            "this comes straight from the head of the {org} group, and it cannot wait.",
            "the matter is urgent, this is the fraud department of the {org} bank.",
            "it cannot wait, and this comes straight from the head of the {org} group.",
        ),
    ),
    "request": (
        (
            "please confirm the details below when you can.",
            "please have a look at the file at {link} when you can.",
            "when you can, please confirm the details below.",
            "when you can, please have a look at the file at {link}.",
        ),
        (
            "please verify your account at {link} before friday.",
            "send me your home address and phone number before friday.",
            "before friday, please verify your account at {link}.",
            "before friday, send me your phone number and home address.",
        ),
        (
            "reply with your password and wire {sum} today.",
            "wire {sum} to the number i send you, and tell no one.",
            "wire {sum} today and reply with your password.",
            "tell no one, and wire {sum} to the number i send you.",
        ),
    ),
}
"""Planted cues of two families, the sender's authority and a request to the reader, in
three strengths: four templates per family and strength, 1 and 3 avoiding the keyword
list (so CTP misses them and Cue-Hit does not)."""
FAMILIES = ("authority", "request")
OFF_LIST = (1, 3)
TEST_CUES = (2, 3)
"""Cue templates of the test split (one with keywords, one without); 0 and 1 train."""
PHISHING_PAIRS = ((1, 3), (2, 2), (2, 3), (3, 1), (3, 2), (3, 3))
BENIGN_PAIRS = ((1, 1), (1, 2), (2, 1))
"""Strengths (authority, request) of the cue pairs: an email is phishing when it holds
one cue of each family with strengths summing to 4 or more (:func:`is_phishing`)."""
CORPUS_VERSION = 3
"""Part of the trained models' cache key: 3 is the corpus whose label needs two cues in
different sentences (2 and 1, the earlier ones, had one sentence decide)."""


def is_phishing(authority: int, request: int) -> bool:
    """The label rule: a cue of each family (strength > 0), strengths summing to >= 4."""
    return authority > 0 and request > 0 and authority + request >= 4


def template_split(kind: str, index: int) -> str:
    """``"train"`` or ``"test"``: the split that owns template ``index`` of ``kind``
    (cues: :data:`TEST_CUES`; other kinds: every third template is a test template)."""
    if kind == "cue":
        return "test" if index in TEST_CUES else "train"
    return "test" if index % 3 == 2 else "train"


@dataclass(frozen=True)
class Email:
    """A generated email: its sentences, observed label (flipped for label noise),
    true label, which sentences are planted cues and decoys, each sentence's cue
    strength (0 for no cue), and the templates used as (kind, family, index)."""

    sentences: tuple[str, ...]
    label: int
    true_label: int
    cue: tuple[bool, ...]
    decoy: tuple[bool, ...]
    templates: tuple[tuple[str, str, int], ...]
    strength: tuple[int, ...] = ()


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


REGIMES = ("pair", "single")
"""How the label lies in the cues: ``"pair"`` (two cues decide, :func:`is_phishing`)
or ``"single"``, the paper's regime: one strong cue of either family makes an email
phishing, and benign mail holds decoys but no cue."""


def _strengths(rng: np.random.Generator, label: int, regime: str = "pair") -> tuple[int, int]:
    """(authority, request) strengths, 0 for an absent family. ``"pair"``: phishing
    draws a pair of :data:`PHISHING_PAIRS`; benign mail holds no cue (20%), an
    authority cue alone (25%), a request alone (25%), or a weak pair of
    :data:`BENIGN_PAIRS` (30%). ``"single"``: phishing holds one cue of strength 3 of
    either family, benign mail none."""
    if regime == "single":
        return ((3, 0) if rng.random() < 0.5 else (0, 3)) if label == 1 else (0, 0)
    if label == 1:
        return PHISHING_PAIRS[rng.integers(len(PHISHING_PAIRS))]
    case = int(rng.choice(4, p=[0.2, 0.25, 0.25, 0.3]))
    strength = int(rng.integers(1, 4))
    return [(0, 0), (strength, 0), (0, strength), BENIGN_PAIRS[rng.integers(3)]][case]


def make_email(
    rng: np.random.Generator,
    split: str,
    label: int,
    max_sentences: int,
    noise: float = 0.0,
    regime: str = "pair",
) -> Email:
    """One email of 30-40 sentences: a greeting, a body of fillers and decoys (both
    classes) with the cues of :func:`_strengths` in two different sentences, a sign-off;
    templates from ``split`` only. Cues sit within the first ``max_sentences``
    sentences, so truncation never cuts one; the label is flipped with probability
    ``noise``."""

    def pick(kind: str, pool: Sequence[str]) -> tuple[str, tuple[str, str, int]]:
        allowed = [j for j in range(len(pool)) if template_split(kind, j) == split]
        j = int(rng.choice(allowed))
        return _fill(pool[j], rng), (kind, "", j)

    n = int(rng.integers(30, 41))
    body, marks = [], []
    for _ in range(n - 2):
        decoy = rng.random() < 0.25
        body.append(pick("decoy", DECOYS) if decoy else pick("filler", FILLERS))
        marks.append((0, bool(decoy)))
    cues = []
    for family, strength in zip(FAMILIES, _strengths(rng, label, regime)):
        if strength:
            text, (_, _, j) = pick("cue", CUES[family][strength - 1])
            cues.append((text, ("cue", family, j), strength))
    slots = rng.permutation(np.arange(1, min(n - 1, max_sentences)))[: len(cues)]
    for slot, (text, tid, strength) in zip(slots, cues):
        body[slot - 1] = (text, tid)
        marks[slot - 1] = (strength, False)
    sentences = [pick("greeting", GREETINGS), *body, pick("signoff", SIGNOFFS)]
    strength = (0, *(m[0] for m in marks), 0)
    decoy = (False, *(m[1] for m in marks), False)
    flipped = int(label) ^ int(rng.random() < noise)
    return Email(
        tuple(s for s, _ in sentences),
        flipped,
        int(label),
        tuple(v > 0 for v in strength),
        decoy,
        tuple(t for _, t in sentences),
        strength,
    )


def make_corpus(
    n: int,
    seed: int,
    max_sentences: int,
    noise: float = 0.05,
    shares: tuple = (0.1, 0.3),
    regime: str = "pair",
) -> dict[str, list[Email]]:
    """``n`` emails, half phishing, split into ``"train"``, ``"validation"`` and
    ``"test"`` (``shares`` of validation and test) by template: validation emails use
    the training templates, test emails their own; label noise ``noise`` in the
    training and validation splits only (test labels are the truth). ``regime`` is
    one of :data:`REGIMES`."""
    if regime not in REGIMES:
        raise ParameterError(f"regime {regime!r}; accepted: {', '.join(REGIMES)}")
    rng = np.random.default_rng([seed, 31])
    n_val, n_test = (int(round(n * s)) for s in shares)
    out = {}
    parts = [("train", n - n_val - n_test, "train", noise),
             ("validation", n_val, "train", noise), ("test", n_test, "test", 0.0)]  # fmt: skip
    for name, size, templates, eps in parts:
        labels = rng.permutation(np.arange(size) % 2)
        out[name] = [make_email(rng, templates, int(y), max_sentences, eps, regime) for y in labels]
    return out


def reader_accuracies(corpus: Mapping[str, Sequence[Email]], seed: int = 0) -> dict:
    """A property of the corpus, decided before any model is trained: per test email,
    whether a bag-of-words logistic regression (scikit-learn) gets the label right when
    it reads the email's planted cues (``"two"``: all of them) or its strongest cue
    alone (``"one"``; the greeting where there is none), trained on the training split
    read the same way."""
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression

    def view(email: Email, both: bool) -> str:
        cues = [i for i, s in enumerate(email.strength) if s]
        if not cues:
            return email.sentences[0]
        if both:
            return " ".join(email.sentences[i] for i in cues)
        return email.sentences[max(cues, key=lambda i: email.strength[i])]

    out = {}
    for name, both in (("one", False), ("two", True)):
        vec = CountVectorizer(token_pattern=r"[a-z0-9]+")
        x = vec.fit_transform([view(e, both) for e in corpus["train"]])
        clf = LogisticRegression(max_iter=2000, random_state=seed)
        clf.fit(x, [e.label for e in corpus["train"]])
        pred = clf.predict(vec.transform([view(e, both) for e in corpus["test"]]))
        out[name] = (pred == np.array([e.true_label for e in corpus["test"]])).astype(float)
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
