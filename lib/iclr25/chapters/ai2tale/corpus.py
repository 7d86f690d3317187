"""AI2TALE's generated corpus: the slot-filled templates (everyday sentences, decoys,
planted cues), emails and their split by template, the corpus's one-sentence
separability, and the emails' encoding as token tensors."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from iclr25.chapters.ai2tale.measures import CATEGORIES, words
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
