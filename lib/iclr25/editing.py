"""Knowledge editing on a real language model: facts, edit requests, metrics and ROME.

The shared substrate of the book's editing chapters (FiNE, SADR). An *edit* rewrites one
fact ``(subject, relation, object)`` to a new object, e.g. "The capital of France is the
city of" Paris -> Rome, by changing the weights of the model. This module holds:

* a CounterFact-style set of facts about countries (capital, official language,
  currency, continent) in cloze form, filtered to the facts the unedited model knows
  (:func:`known_facts`: greedy decoding after the prompt writes the whole true object);
* edit cases (:func:`make_cases`): the rewrite prompt, paraphrases, *neighbourhood*
  prompts (other subjects, same relation), *relation-specificity* prompts (same subject,
  other relations) and *distract-neighbourhood* prompts (the edited sentence, then a
  neighbour prompt);
* the metrics, as EasyEdit computes them for KnowEdit (the FiNE paper's benchmark):
  efficacy and generalisation are the token accuracy of the new object under teacher
  forcing; each locality score is the share of the true object's tokens whose predicted
  token is unchanged by the edit; fluency is ROME's weighted bi- and tri-gram entropy of
  generated text;
* CounterFact accuracy, as ROME's summarize script scores it (the SADR paper's metric):
  a probe counts when the right object's mean per-token NLL is below the wrong one's
  (:func:`counterfact_margins`, :func:`counterfact_accuracy`);
* ROME (Meng et al., 2022): causal tracing picks the layer, the key ``k*`` is the MLP's
  hidden activation at the subject's last token, ``v*`` is optimised so that the model
  says the new object (with the KL term on "{subject} is a" that keeps the subject's
  essence), and a rank-one update of the MLP down projection writes ``W k* = v*``;
* :class:`Edit`, a weight change that can be applied and undone exactly, and the live
  editing widget.

Written by hand: EasyEdit, the field's editing library, pins transformers 4 and older
torch releases and downloads its data and statistics at run time, so ROME and the
metrics are re-implemented here from the papers (the hooks are plain torch forward
hooks: pyvene has no intervention that adds a trainable vector at one position per
example). ROME's second moment ``C = E[k k^T]`` is estimated from about 58,000 tokens of
text the model itself samples (:func:`second_moments`; ROME uses 100,000 Wikipedia
samples, which cannot be had offline), and its context prefixes are a fixed list of our
own rather than sampled ones.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from iclr25 import core, llm

if TYPE_CHECKING:
    import ipywidgets as widgets
    import plotly.graph_objects as go

# ---------------------------------------------------------------------------------
# Facts
# ---------------------------------------------------------------------------------

#: (country, capital, official language, currency, continent); ``None`` where the answer is
#: ambiguous (a country on two continents, or in Oceania, which has several names).
COUNTRIES: tuple[tuple[str, str | None, str | None, str | None, str | None], ...] = (
    ("France", "Paris", "French", "euro", "Europe"),
    ("Germany", "Berlin", "German", "euro", "Europe"),
    ("Italy", "Rome", "Italian", "euro", "Europe"),
    ("Spain", "Madrid", "Spanish", "euro", "Europe"),
    ("Portugal", "Lisbon", "Portuguese", "euro", "Europe"),
    ("Greece", "Athens", "Greek", "euro", "Europe"),
    ("the Netherlands", "Amsterdam", "Dutch", "euro", "Europe"),
    ("Austria", "Vienna", "German", "euro", "Europe"),
    ("Finland", "Helsinki", "Finnish", "euro", "Europe"),
    ("Sweden", "Stockholm", "Swedish", "krona", "Europe"),
    ("Norway", "Oslo", "Norwegian", "krone", "Europe"),
    ("Denmark", "Copenhagen", "Danish", "krone", "Europe"),
    ("Poland", "Warsaw", "Polish", "zloty", "Europe"),
    ("Hungary", "Budapest", "Hungarian", "forint", "Europe"),
    ("the Czech Republic", "Prague", "Czech", "koruna", "Europe"),
    ("Romania", "Bucharest", "Romanian", "leu", "Europe"),
    ("Bulgaria", "Sofia", "Bulgarian", "lev", "Europe"),
    ("Russia", "Moscow", "Russian", "ruble", None),
    ("Ukraine", "Kyiv", "Ukrainian", "hryvnia", "Europe"),
    ("Turkey", "Ankara", "Turkish", "lira", None),
    ("Japan", "Tokyo", "Japanese", "yen", "Asia"),
    ("China", "Beijing", "Chinese", "yuan", "Asia"),
    ("South Korea", "Seoul", "Korean", "won", "Asia"),
    ("India", "New Delhi", "Hindi", "rupee", "Asia"),
    ("Pakistan", "Islamabad", "Urdu", "rupee", "Asia"),
    ("Bangladesh", "Dhaka", "Bengali", "taka", "Asia"),
    ("Thailand", "Bangkok", "Thai", "baht", "Asia"),
    ("Vietnam", "Hanoi", "Vietnamese", "dong", "Asia"),
    ("Indonesia", "Jakarta", "Indonesian", "rupiah", "Asia"),
    ("Malaysia", "Kuala Lumpur", "Malay", "ringgit", "Asia"),
    ("the Philippines", "Manila", "Filipino", "peso", "Asia"),
    ("Iran", "Tehran", "Persian", "rial", "Asia"),
    ("Iraq", "Baghdad", "Arabic", "dinar", "Asia"),
    ("Saudi Arabia", "Riyadh", "Arabic", "riyal", "Asia"),
    ("Israel", "Jerusalem", "Hebrew", "shekel", "Asia"),
    ("Egypt", "Cairo", "Arabic", "pound", "Africa"),
    ("Morocco", "Rabat", "Arabic", "dirham", "Africa"),
    ("Kenya", "Nairobi", "Swahili", "shilling", "Africa"),
    ("Nigeria", "Abuja", "English", "naira", "Africa"),
    ("Ghana", "Accra", "English", "cedi", "Africa"),
    ("Ethiopia", "Addis Ababa", "Amharic", "birr", "Africa"),
    ("Mexico", "Mexico City", "Spanish", "peso", "North America"),
    ("Argentina", "Buenos Aires", "Spanish", "peso", "South America"),
    ("Brazil", "Brasilia", "Portuguese", "real", "South America"),
    ("Chile", "Santiago", "Spanish", "peso", "South America"),
    ("Colombia", "Bogota", "Spanish", "peso", "South America"),
    ("Peru", "Lima", "Spanish", "sol", "South America"),
    ("Venezuela", "Caracas", "Spanish", "bolivar", "South America"),
    ("Cuba", "Havana", "Spanish", "peso", "North America"),
    ("Canada", "Ottawa", None, "dollar", "North America"),
    ("the United States", "Washington", "English", "dollar", "North America"),
    ("Australia", "Canberra", "English", "dollar", None),
    ("New Zealand", "Wellington", "English", "dollar", None),
    ("the United Kingdom", "London", "English", "pound", "Europe"),
    ("Switzerland", "Bern", None, "franc", "Europe"),
    ("Iceland", "Reykjavik", "Icelandic", "krona", "Europe"),
    ("Croatia", "Zagreb", "Croatian", "euro", "Europe"),
    ("Serbia", "Belgrade", "Serbian", "dinar", "Europe"),
    ("Armenia", "Yerevan", "Armenian", "dram", None),
    ("Kazakhstan", "Astana", "Kazakh", "tenge", None),
    ("Afghanistan", "Kabul", "Pashto", "afghani", "Asia"),
    ("Nepal", "Kathmandu", "Nepali", "rupee", "Asia"),
    ("Sri Lanka", "Colombo", "Sinhala", "rupee", "Asia"),
    ("Mongolia", "Ulaanbaatar", "Mongolian", "tugrik", "Asia"),
    ("Jordan", "Amman", "Arabic", "dinar", "Asia"),
    ("Syria", "Damascus", "Arabic", "pound", "Asia"),
    ("Lebanon", "Beirut", "Arabic", "pound", "Asia"),
    ("Tunisia", "Tunis", "Arabic", "dinar", "Africa"),
    ("Algeria", "Algiers", "Arabic", "dinar", "Africa"),
    ("Libya", "Tripoli", "Arabic", "dinar", "Africa"),
    ("Zambia", "Lusaka", "English", "kwacha", "Africa"),
    ("Tanzania", "Dodoma", "Swahili", "shilling", "Africa"),
    ("Uganda", "Kampala", "English", "shilling", "Africa"),
    ("Cambodia", "Phnom Penh", "Khmer", "riel", "Asia"),
    ("Myanmar", "Naypyidaw", "Burmese", "kyat", "Asia"),
    ("Laos", "Vientiane", "Lao", "kip", "Asia"),
    ("Estonia", "Tallinn", "Estonian", "euro", "Europe"),
    ("Latvia", "Riga", "Latvian", "euro", "Europe"),
    ("Lithuania", "Vilnius", "Lithuanian", "euro", "Europe"),
    ("Slovakia", "Bratislava", "Slovak", "euro", "Europe"),
    ("Slovenia", "Ljubljana", "Slovenian", "euro", "Europe"),
    ("Ecuador", "Quito", "Spanish", "dollar", "South America"),
    ("Uruguay", "Montevideo", "Spanish", "peso", "South America"),
    ("Paraguay", "Asuncion", "Spanish", "guarani", "South America"),
    ("Jamaica", "Kingston", "English", "dollar", None),
    ("Qatar", "Doha", "Arabic", "riyal", "Asia"),
    ("Oman", "Muscat", "Arabic", "rial", "Asia"),
)


@dataclass(frozen=True)
class Relation:
    """A relation in cloze form: the rewrite prompt and paraphrases, ``{}`` for the subject."""

    name: str
    prompt: str
    paraphrases: tuple[str, ...]
    column: int  # its column in COUNTRIES


RELATIONS: dict[str, Relation] = {
    r.name: r
    for r in (
        Relation(
            "capital",
            "The capital of {} is the city of",
            ("The capital city of {} is", "{}'s capital city is"),
            1,
        ),
        Relation(
            "language",
            "The official language of {} is",
            ("The language spoken in {} is", "In {}, most people speak"),
            2,
        ),
        Relation(
            "currency",
            "The currency of {} is the",
            ("The official currency of {} is the", "In {}, people pay with the"),
            3,
        ),
        Relation(
            "continent",
            "{} is located in the continent of",
            ("{} is a country in", "{} lies on the continent of"),
            4,
        ),
    )
}


@dataclass(frozen=True)
class Fact:
    subject: str
    relation: str
    object: str

    @property
    def prompt(self) -> str:
        return RELATIONS[self.relation].prompt.format(self.subject)


def all_facts() -> list[Fact]:
    """Every (country, relation, object) of :data:`COUNTRIES` with an unambiguous object."""
    return [
        Fact(row[0], r.name, row[r.column])
        for row in COUNTRIES
        for r in RELATIONS.values()
        if row[r.column] is not None
    ]


def objects(relation: str) -> list[str]:
    """The distinct objects of ``relation`` in :data:`COUNTRIES`: its candidate answers."""
    return sorted({row[RELATIONS[relation].column] for row in COUNTRIES} - {None})


def known_facts(lm: llm.LM, facts: Sequence[Fact], batch_size: int = 32) -> list[Fact]:
    """The facts the model knows: greedy decoding after the prompt writes the true object,
    i.e. under teacher forcing every token of ``" " + object`` is the model's top-1.

    For a pretrained model the answer is cached (it takes a forward pass over every fact).
    """

    def check() -> list[int]:
        known = []
        for start in range(0, len(facts), batch_size):
            probes = [(f.prompt, " " + f.object) for f in facts[start : start + batch_size]]
            known += [
                start + j
                for j, (p, (_, o)) in enumerate(zip(predict(lm, probes), probes))
                if p.tolist() == lm.tokens(o)
            ]
        return known

    if lm.tiny:
        return [facts[j] for j in check()]
    config = {
        "model": lm.name,
        "facts": [[f.subject, f.relation, f.object] for f in facts],
        "templates": [r.prompt for r in RELATIONS.values()],
    }
    return [facts[j] for j in core.cached("editing-known-facts", config, check)]


# ---------------------------------------------------------------------------------
# Edit requests and cases
# ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    """Rewrite ``prompt`` (which contains ``subject``) to continue with ``new``, not ``old``."""

    prompt: str
    subject: str
    new: str
    old: str | None = None

    def __post_init__(self) -> None:
        if not self.subject.strip():
            raise ValueError(
                "the edit request's subject is empty; give the entity the prompt is about"
            )
        if self.subject not in self.prompt:
            raise ValueError(
                f"the subject {self.subject!r} does not occur in the prompt "
                f"{self.prompt!r}; the prompt must contain it"
            )
        if not self.new.strip():
            raise ValueError("the new object is empty; give the answer the edited model should say")
        if self.old is not None and self.new.strip() == self.old.strip():
            raise ValueError(
                f"the new object {self.new!r} equals the old one; an edit must change the answer"
            )

    @property
    def target(self) -> str:
        """The new object as it continues the prompt (one leading space)."""
        return " " + self.new.strip()


@dataclass(frozen=True)
class Case:
    """One edit and its evaluation prompts. Probes are ``(prompt, object)`` pairs."""

    fact: Fact
    request: Request
    paraphrases: tuple[str, ...]
    neighbourhood: tuple[tuple[str, str], ...]
    relation: tuple[tuple[str, str], ...]
    distract: tuple[tuple[str, str], ...]
    generation: tuple[str, ...]


def make_cases(
    facts: Sequence[Fact],
    n: int,
    rng: np.random.Generator,
    *,
    n_neighbours: int = 3,
    rewritable: Callable[[Fact], bool] | None = None,
) -> list[Case]:
    """``n`` edit cases over the known ``facts``, each rewriting a fact to another object of
    its relation drawn at random; facts whose subject has another known relation come first.
    With ``rewritable``, only the facts it accepts are rewritten (every fact still serves
    as a neighbour or a relation probe); the draws are the same as without it."""
    by_subject: dict[str, list[Fact]] = {}
    for f in facts:
        by_subject.setdefault(f.subject, []).append(f)
    eligible = [f for f in facts if rewritable is None or rewritable(f)]
    if n > len(eligible):
        raise ValueError(
            f"{n} edits asked for, but only {len(eligible)} known facts can be rewritten"
        )
    # facts whose subject has another known relation first (they have relation probes)
    order = sorted(
        rng.permutation(len(facts)), key=lambda j: len(by_subject[facts[j].subject]) == 1
    )
    if rewritable is not None:
        order = [j for j in order if rewritable(facts[int(j)])]
    cases = []
    for k in order[:n]:
        fact = facts[int(k)]
        relation = RELATIONS[fact.relation]
        new = str(rng.choice([o for o in objects(fact.relation) if o != fact.object]))
        request = Request(fact.prompt, fact.subject, new, fact.object)
        others = [
            f
            for f in facts
            if f.relation == fact.relation
            and f.subject != fact.subject
            and f.object not in (fact.object, new)
        ]
        neighbours = [others[int(j)] for j in rng.permutation(len(others))[:n_neighbours]]
        sentence = f"{fact.prompt} {new}."
        cases.append(
            Case(
                fact,
                request,
                paraphrases=tuple(p.format(fact.subject) for p in relation.paraphrases),
                neighbourhood=tuple((f.prompt, " " + f.object) for f in neighbours),
                relation=tuple(
                    (f.prompt, " " + f.object)
                    for f in by_subject[fact.subject]
                    if f.relation != fact.relation
                ),
                distract=tuple((f"{sentence} {f.prompt}", " " + f.object) for f in neighbours),
                generation=(f"{fact.subject} is a country", f"The people of {fact.subject}"),
            )
        )
    return cases


# ---------------------------------------------------------------------------------
# Metrics
# ---------------------------------------------------------------------------------


def probe_batch(
    lm: llm.LM, probes: Sequence[tuple[str, str]], extra: Sequence[str] = ()
) -> tuple[llm.Batch, list[list[int]], list[list[int]]]:
    """``prompt + object`` batched (then the ``extra`` texts); for each probe the columns
    whose logits predict the object's tokens, and those tokens."""
    objs = [lm.tokens(o) for _, o in probes]
    for (prompt, obj), ids in zip(probes, objs):
        if lm.tokens(prompt) + ids != lm.tokens(prompt + obj):
            raise ValueError(f"{obj!r} does not tokenize on its own after {prompt!r}")
    batch = llm.encode(lm, [p + o for p, o in probes] + list(extra))
    width = batch.input_ids.shape[1]
    columns = [list(range(width - len(ids) - 1, width - 1)) for ids in objs]
    return batch, columns, objs


@torch.no_grad()
def predict(lm: llm.LM, probes: Sequence[tuple[str, str]]) -> list[torch.Tensor]:
    """Teacher forcing on each probe's object: the model's top-1 token where it predicts
    each of the object's tokens (one tensor per probe)."""
    if not probes:
        return []
    batch, columns, _ = probe_batch(lm, probes)
    found = (
        llm.logits_at(
            lm,
            batch,
            [i for i, cols in enumerate(columns) for _ in cols],
            [c for cols in columns for c in cols],
        )
        .argmax(-1)
        .cpu()
    )
    return list(found.split([len(cols) for cols in columns]))


def token_accuracy(predicted: Sequence[torch.Tensor], targets: Sequence[Sequence[int]]) -> float:
    """Mean over probes of the share of object tokens predicted exactly (EasyEdit's
    efficacy and generalisation)."""
    return float(
        np.mean(
            [
                (p == torch.as_tensor(t)).float().mean().item()
                for p, t in zip(predicted, targets, strict=True)
            ]
        )
    )


def agreement(before: Sequence[torch.Tensor], after: Sequence[torch.Tensor]) -> float:
    """Mean over probes of the share of predicted tokens the edit left unchanged
    (EasyEdit's locality); ``nan`` when there are no probes."""
    if not before:
        return float("nan")
    return float(
        np.mean([(a == b).float().mean().item() for a, b in zip(before, after, strict=True)])
    )


def n_gram_entropy(
    text: str, ns: Sequence[int] = (2, 3), weights: Sequence[float] = (2 / 3, 4 / 3)
) -> float:
    """ROME's fluency: the mean of ``w_n * H_n`` over ``n``, where ``H_n`` is the entropy
    (bits) of the frequency distribution of the text's word ``n``-grams. Repetitive text
    scores low."""
    words = text.split()
    entropies = []
    for n, w in zip(ns, weights, strict=True):
        counts = np.array(list(Counter(zip(*(words[i:] for i in range(n)))).values()), dtype=float)
        freq = counts / counts.sum() if counts.size else np.ones(1)
        entropies.append(w * float(-(freq * np.log2(freq)).sum()))
    return float(np.mean(entropies))


LOCALITY = ("neighbourhood", "relation", "distract")


def probes(case: Case) -> dict[str, list[tuple[str, str]]]:
    """A case's probes by kind: the rewrite and its paraphrases with the new object, and
    the locality probes (:data:`LOCALITY`) with their true objects."""
    target = case.request.target
    return {
        "rewrite": [(case.request.prompt, target)],
        "paraphrase": [(p, target) for p in case.paraphrases],
        "neighbourhood": list(case.neighbourhood),
        "relation": list(case.relation),
        "distract": list(case.distract),
    }


def predict_groups(
    lm: llm.LM, groups: Sequence[dict[str, list[tuple[str, str]]]], chunk: int = 64
) -> list[dict[str, list[torch.Tensor]]]:
    """:func:`predict` on many groups of probes at once (one forward pass per ``chunk``
    probes), returned in the same shape."""
    flat = [probe for group in groups for probes_ in group.values() for probe in probes_]
    found = [t for i in range(0, len(flat), chunk) for t in predict(lm, flat[i : i + chunk])]
    out, at = [], 0
    for group in groups:
        out.append({})
        for kind, probes_ in group.items():
            out[-1][kind], at = found[at : at + len(probes_)], at + len(probes_)
    return out


def fluency(lm: llm.LM, prompts: Sequence[str], n_tokens: int) -> float:
    """The mean :func:`n_gram_entropy` of greedy continuations of ``prompts`` (``nan`` for
    ``n_tokens`` 0: fluency not measured)."""
    if not n_tokens:
        return float("nan")
    return float(np.mean([n_gram_entropy(t) for t in llm.generate(lm, prompts, n_tokens)]))


@dataclass
class Baseline:
    """The unedited model's predictions on a case's locality probes, and its fluency."""

    predictions: dict[str, list[torch.Tensor]]
    fluency: float


def baselines(lm: llm.LM, cases: Sequence[Case], n_tokens: int = 24) -> list[Baseline]:
    """The unedited model on every case, batched across cases (``n_tokens`` 0: no
    generation, fluency ``nan``)."""
    found = predict_groups(lm, [{k: probes(c)[k] for k in LOCALITY} for c in cases])
    if not n_tokens:
        return [Baseline(f, float("nan")) for f in found]
    texts = iter(llm.generate(lm, [g for c in cases for g in c.generation], n_tokens))
    return [
        Baseline(f, float(np.mean([n_gram_entropy(next(texts)) for _ in c.generation])))
        for f, c in zip(found, cases)
    ]


def evaluate(lm: llm.LM, case: Case, before: Baseline, n_tokens: int = 24) -> dict[str, float]:
    """The metrics of the (already edited) model on ``case``, against the unedited ``before``:
    efficacy and generalisation (:func:`token_accuracy` of the new object), each locality
    score (:func:`agreement` with the unedited predictions) and fluency."""
    target = lm.tokens(case.request.target)
    (after,) = predict_groups(lm, [probes(case)])
    return {
        "efficacy": token_accuracy(after["rewrite"], [target]),
        "generalisation": token_accuracy(after["paraphrase"], [target] * len(case.paraphrases)),
        **{k: agreement(before.predictions[k], after[k]) for k in LOCALITY},
        "fluency": fluency(lm, case.generation, n_tokens),
        "fluency_before": before.fluency,
    }


# ---------------------------------------------------------------------------------
# CounterFact accuracy (the SADR paper's metric, from ROME's summarize script)
# ---------------------------------------------------------------------------------

#: The CounterFact scores: efficacy, paraphrase, neighbourhood, relation and
#: distract-neighbourhood.
COUNTERFACT = ("ES", "PS", "NS", "RS", "DNS")


def counterfact_probes(case: Case) -> dict[str, list[tuple[str, str, str]]]:
    """A case's probes as ``(prompt, right, wrong)`` per CounterFact score: on the
    rewrite prompt (ES) and the paraphrases (PS) the new object is right and the old one
    wrong; on the neighbourhood (NS), the subject's other relations (RS) and the
    distract prompts (DNS) the true object is right and the new one wrong."""
    new, old = case.request.target, " " + case.fact.object
    return {
        "ES": [(case.request.prompt, new, old)],
        "PS": [(p, new, old) for p in case.paraphrases],
        "NS": [(p, o, new) for p, o in case.neighbourhood],
        "RS": [(p, o, new) for p, o in case.relation],
        "DNS": [(p, o, new) for p, o in case.distract],
    }


@torch.no_grad()
def mean_nll(lm: llm.LM, probes: Sequence[tuple[str, str]], chunk: int = 32) -> np.ndarray:
    """Each probe's mean per-token negative log-likelihood of its object after its
    prompt (teacher forcing), ``[probe]``."""
    out = []
    for at in range(0, len(probes), chunk):
        part = probes[at : at + chunk]
        batch, columns, objs = probe_batch(lm, part)
        rows = [i for i, cols in enumerate(columns) for _ in cols]
        logp = llm.logits_at(lm, batch, rows, [c for cols in columns for c in cols])
        picked = logp.float().log_softmax(-1)[torch.arange(len(rows)), [t for o in objs for t in o]]
        out += [-float(x.mean()) for x in picked.cpu().split([len(o) for o in objs])]
    return np.array(out, dtype=float)


def counterfact_margins(lm: llm.LM, cases: Sequence[Case]) -> list[dict[str, np.ndarray]]:
    """Per case and CounterFact score, each probe's margin: the wrong object's mean
    per-token NLL minus the right one's (nats; positive when the model prefers the
    right object). The model as it is now: apply an edit first to score it."""
    groups = [counterfact_probes(c) for c in cases]
    flat = [t for g in groups for kind in COUNTERFACT for t in g[kind]]
    nll = mean_nll(lm, [(p, r) for p, r, _ in flat] + [(p, w) for p, _, w in flat])
    margins = nll[len(flat) :] - nll[: len(flat)]
    out, at = [], 0
    for g in groups:
        out.append({})
        for kind in COUNTERFACT:
            out[-1][kind], at = margins[at : at + len(g[kind])], at + len(g[kind])
    return out


def counterfact_accuracy(margins: Sequence[float] | np.ndarray) -> float:
    """The share of probes whose right object has the lower mean per-token NLL
    (margin > 0; ties count as misses, as in ROME's summarize script); ``nan`` for none."""
    margins = np.asarray(margins, dtype=float)
    return float((margins > 0).mean()) if margins.size else float("nan")


# ---------------------------------------------------------------------------------
# Weight edits that can be undone
# ---------------------------------------------------------------------------------


@dataclass
class Change:
    """``W_down[layer][:, columns] += delta`` (``columns`` ``None``: the whole matrix)."""

    layer: int
    delta: torch.Tensor
    columns: list[int] | None = None


@dataclass
class Edit:
    """A method's weight changes for one request, and what it took to find them."""

    method: str
    request: Request
    changes: list[Change]
    seconds: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def n_params(self) -> int:
        """Parameters the edit changes (ROME changes a whole matrix, FiNE a few columns)."""
        return sum(c.delta.numel() for c in self.changes)


class Applied:
    """An edit written into the model; :meth:`restore` puts the original weights back."""

    def __init__(self, lm: llm.LM, edit: Edit) -> None:
        self.lm, self.saved = lm, []
        with torch.no_grad():
            for c in edit.changes:
                weight = llm.down_proj(lm, c.layer).weight
                cols = slice(None) if c.columns is None else c.columns
                self.saved.append((weight, cols, weight[:, cols].clone()))
                weight[:, cols] += c.delta.to(weight)

    def restore(self) -> None:
        with torch.no_grad():
            for weight, cols, original in reversed(self.saved):
                weight[:, cols] = original
        self.saved = []


@contextlib.contextmanager
def applied(lm: llm.LM, edit: Edit) -> Iterator[llm.LM]:
    """The model with ``edit`` written in, inside the block only."""
    handle = Applied(lm, edit)
    try:
        yield lm
    finally:
        handle.restore()


# ---------------------------------------------------------------------------------
# Subjects and keys
# ---------------------------------------------------------------------------------


def subject_span(lm: llm.LM, prompt: str, subject: str) -> tuple[int, int]:
    """The token indices of the subject's first and last tokens in ``prompt`` (its last
    occurrence), which must start and end on token boundaries."""
    start = prompt.rindex(subject)
    full = lm.tokens(prompt)
    first, last = (
        len(lm.tokens(prompt[:start].rstrip(" "))) if start else 0,
        len(lm.tokens(prompt[: start + len(subject)])),
    )
    if lm.tokens(prompt[: start + len(subject)]) != full[:last]:
        raise ValueError(f"the subject {subject!r} does not end on a token boundary in {prompt!r}")
    return first, last - 1


def subject_columns(
    lm: llm.LM, prompts: Sequence[str], subject: str, batch: llm.Batch
) -> list[int]:
    """The column of the subject's last token in each (left-padded) prompt of ``batch``."""
    width = batch.input_ids.shape[1]
    return [width - len(lm.tokens(p)) + subject_span(lm, p, subject)[1] for p in prompts]


def keys_at(
    lm: llm.LM,
    layer: int,
    prompts: Sequence[str],
    columns: Sequence[int] | None = None,
    batch: llm.Batch | None = None,
) -> torch.Tensor:
    """The MLP hidden activations ``k`` (the input of ``W_down``) of ``layer``: at one
    column per prompt ``[prompt, d_mlp]``, or at every real token ``[token, d_mlp]``."""
    batch = batch if batch is not None else llm.encode(lm, prompts)
    k = llm.read(lm, batch, [("neurons", layer)])["neurons", layer]
    if columns is None:
        return k[batch.attention_mask.bool()]
    return k[torch.arange(len(prompts)), list(columns)]


# ---------------------------------------------------------------------------------
# ROME
# ---------------------------------------------------------------------------------

#: ROME's context prefixes, fixed here (ROME samples them from the model).
PREFIXES = ("", "Here is a fact. ", "As everyone knows, ")

#: ROME's optimisation of v* (its GPT-2 XL settings).
ROME_STEPS, ROME_LR, ROME_KL, ROME_DECAY, ROME_CLAMP = 20, 0.5, 0.0625, 0.5, 4.0


def causal_trace(
    lm: llm.LM, facts: Sequence[Fact], *, window: int = 6, n_noise: int = 2, seed: int = 0
) -> np.ndarray:
    """ROME's causal tracing of the MLPs at the subject's last token.

    The subject's token embeddings are corrupted with Gaussian noise (3 times the
    embeddings' standard deviation); then, for each layer ``l``, the clean MLP outputs of
    the ``window`` layers around ``l`` are restored at the subject's last token. The
    indirect effect is ``P_restored(object) - P_corrupted(object)`` for the object's
    first token, averaged over facts and ``n_noise`` noise samples (ROME: 10): ``[layer]``.
    """
    n_layers = lm.n_layers
    embed = lm.model.model.embed_tokens
    sigma = 3 * float(embed.weight.detach().std())
    gen = torch.Generator().manual_seed(seed)
    effects = np.zeros(n_layers)
    for fact in facts:
        prompt, token = fact.prompt, lm.tokens(" " + fact.object)[0]
        batch = llm.encode(lm, [prompt])
        first, col = subject_span(lm, prompt, fact.subject)  # one prompt: columns are indices
        mlps = [("mlp", l) for l in range(n_layers)]
        clean = [value[0, col] for value in llm.read(lm, batch, mlps).values()]
        rows = 1 + n_layers  # row 0: corrupted only; row 1 + l: restore the window around l
        restore = torch.zeros(rows, n_layers, dtype=torch.bool)
        for l in range(n_layers):
            lo = max(0, l - window // 2)
            restore[1 + l, lo : min(n_layers, lo + window)] = True
        noise = torch.randn(n_noise, col - first + 1, lm.d_model, generator=gen) * sigma

        def corrupt(x: torch.Tensor) -> torch.Tensor:  # the token embeddings, ("resid", 0)
            x = x.clone()
            x[:, first : col + 1] += noise.repeat_interleave(rows, 0).to(x)
            return x

        def restorer(l: int) -> Callable[[torch.Tensor], torch.Tensor]:
            def fn(x: torch.Tensor) -> torch.Tensor:
                x = x.clone()
                x[restore[:, l].repeat(n_noise), col] = clean[l]
                return x

            return fn

        big = batch.repeat_interleave(rows * n_noise)
        edits = {("resid", 0): corrupt, **{site: restorer(l) for l, site in enumerate(mlps)}}
        with torch.no_grad(), llm.writing(lm, edits):
            probs = lm.model(**big.inputs(), logits_to_keep=1).logits[:, -1].softmax(-1)[:, token]
        probs = probs.view(n_noise, rows).mean(0).cpu().numpy()
        effects += probs[1:] - probs[0]
    return effects / len(facts)


def trace_layer(effects: np.ndarray, window: int) -> int:
    """The layer ROME edits: the largest indirect effect among the layers whose restored
    window leaves out layer 0 (whose MLP acts on the token embedding itself, so that
    restoring it undoes the corruption of the subject trivially)."""
    first = window // 2 + 1
    return first + int(np.argmax(effects[first:]))


#: ROME's sample of keys for ``C``: how many texts the model samples, and their length
#: (tokens). 512 texts give about 58,000 tokens (some stop early; ROME: 100,000 Wikipedia
#: samples).
SAMPLE_TEXTS, SAMPLE_TOKENS = 512, 128

#: The sampled texts' openings (one token each, so that a batch needs no padding).
OPENINGS = ("The", "In", "A", "It", "When", "This", "There", "My")


def sample_texts(
    lm: llm.LM,
    *,
    n_texts: int = 32,
    n_tokens: int = 64,
    seed: int = 0,
    batch_size: int = 64,
    progress: bool = False,
) -> list[str]:
    """Text the model samples itself (top-50 sampling) from short neutral openings: the
    stand-in for ROME's Wikipedia sample (cached). Sampled ``batch_size`` texts at a time
    (a progress bar with ``progress``); the seed is set once, before the first batch."""

    def build() -> list[str]:
        from tqdm.auto import tqdm

        torch.manual_seed(seed)
        texts: list[str] = []
        starts = range(0, n_texts, batch_size)
        for at in tqdm(starts, desc="sampling text for C", disable=not progress):
            size = min(batch_size, n_texts - at)
            batch = llm.encode(lm, [OPENINGS[(at + i) % len(OPENINGS)] for i in range(size)])
            with torch.no_grad():
                out = lm.model.generate(
                    input_ids=batch.input_ids,
                    attention_mask=batch.attention_mask,
                    max_new_tokens=n_tokens,
                    do_sample=True,
                    top_k=50,
                    pad_token_id=lm.tokenizer.pad_token_id,
                )
            texts += lm.tokenizer.batch_decode(out, skip_special_tokens=True)
        return texts

    config = {"model": lm.name, "n_texts": n_texts, "n_tokens": n_tokens, "seed": seed}
    if batch_size != 64:
        config["batch_size"] = batch_size
    return core.cached("editing-sample", config, build)


def second_moment(lm: llm.LM, layer: int, texts: Sequence[str]) -> torch.Tensor:
    """ROME's ``C = E[k k^T]`` of ``layer``'s MLP keys over every token of ``texts`` (cached)."""

    def build() -> torch.Tensor:
        keys = torch.cat([keys_at(lm, layer, texts[i : i + 16]) for i in range(0, len(texts), 16)])
        return (keys.T @ keys / len(keys)).cpu()

    return core.cached(
        "editing-second-moment", {"model": lm.name, "layer": layer, "texts": list(texts)}, build
    )


def moments_config(
    lm: llm.LM, layer: int, *, n_texts: int, n_tokens: int, seed: int, sizes: Sequence[int]
) -> dict[str, Any]:
    """The cache key of :func:`second_moments`: everything the estimate depends on (the
    model, the layer, the sample of text and the token counts kept)."""
    return {
        "model": lm.name,
        "layer": int(layer),
        "sample": {"n_texts": n_texts, "n_tokens": n_tokens, "seed": seed, "top_k": 50},
        "openings": list(OPENINGS),
        "sizes": sorted(int(n) for n in sizes),
    }


def second_moments(
    lm: llm.LM,
    layer: int,
    *,
    n_texts: int = SAMPLE_TEXTS,
    n_tokens: int = SAMPLE_TOKENS,
    seed: int = 0,
    sizes: Sequence[int] = (),
    batch_size: int = 16,
    progress: bool = False,
) -> dict[int, torch.Tensor]:
    """ROME's ``C = E[k k^T]`` of ``layer``'s MLP keys over the text the model samples
    itself (:func:`sample_texts`), estimated once and cached (key:
    :func:`moments_config`): ``{n: C over the first n tokens}`` for each of ``sizes`` that
    the sample reaches, and for all its tokens (the largest key). Keys are read
    ``batch_size`` texts at a time, the pass stopping at ``layer``."""
    config = moments_config(lm, layer, n_texts=n_texts, n_tokens=n_tokens, seed=seed, sizes=sizes)

    def build() -> dict[int, torch.Tensor]:
        from tqdm.auto import tqdm

        texts = sample_texts(lm, n_texts=n_texts, n_tokens=n_tokens, seed=seed, progress=progress)
        d_mlp = llm.down_proj(lm, layer).weight.shape[1]
        total = torch.zeros(d_mlp, d_mlp, dtype=torch.float64)
        wanted, seen, out = sorted(int(n) for n in sizes), 0, {}
        starts = range(0, len(texts), batch_size)
        for at in tqdm(starts, desc="keys for C", disable=not progress):
            keys = keys_at(lm, layer, texts[at : at + batch_size]).double().cpu()
            for row in range(0, len(keys), 256):  # cut the running sum at each size
                part = keys[row : row + 256]
                while wanted and seen + len(part) >= wanted[0]:
                    cut = wanted[0] - seen
                    total += part[:cut].T @ part[:cut]
                    part, seen = part[cut:], wanted[0]
                    out[wanted.pop(0)] = (total / seen).float()
                total += part.T @ part
                seen += len(part)
        out[seen] = (total / seen).float()
        return out

    return core.cached("editing-second-moments", config, build)


@dataclass
class Penalty:
    """A term added to :func:`rome_v`'s loss at every step. ``watch()`` is a context in
    which the model runs (the layers below the edit once, then each step's forward);
    ``loss(seen, queries, subjects)`` gets what ``watch()`` handed out, each rewrite
    prompt's last column before the target and its subject's last column."""

    watch: Callable[[], contextlib.AbstractContextManager[Any]]
    loss: Callable[[Any, list[int], torch.Tensor], torch.Tensor]


def rome_v(
    lm: llm.LM,
    request: Request,
    layer: int,
    *,
    steps: int = ROME_STEPS,
    lr: float = ROME_LR,
    kl_factor: float = ROME_KL,
    weight_decay: float = ROME_DECAY,
    clamp: float = ROME_CLAMP,
    prefixes: Sequence[str] = PREFIXES,
    penalty: Penalty | None = None,
) -> tuple[torch.Tensor, torch.Tensor, int]:
    """ROME's ``v*``: the MLP output at the subject's last token that makes the model say
    the new object.

    ``v* = v + delta`` where ``delta``, added to the MLP output at the subject's last token,
    minimises the mean over the prefixed rewrite prompts of ``-log P'(new | prefix + prompt)``
    (per token) ``+ kl_factor * KL(P'(.|"{s} is a") || P(.|"{s} is a"))`` (the subject's
    essence, against the unedited ``P``) ``+ weight_decay * |delta| / |v|^2``, with Adam,
    ``|delta| <= clamp * |v|`` and a stop once the loss is below 0.05 (ROME's code).
    A :class:`Penalty` adds a term of its own to the loss (SADR's attention term).
    Returns ``(v*, k*, steps taken)``, ``k*`` the mean key at the subject over the prefixes.
    """
    target = lm.tokens(request.target)
    texts = [p + request.prompt for p in prefixes]
    essence = f"{request.subject} is a"
    batch, columns, _ = probe_batch(lm, [(t, request.target) for t in texts], extra=[essence])
    subj = subject_columns(
        lm, [t + request.target for t in texts] + [essence], request.subject, batch
    )
    rows = torch.arange(len(texts) + 1)
    v_site, k_site = ("mlp", layer), ("neurons", layer)
    with torch.no_grad(), llm.reading(lm, [v_site, k_site]) as seen:
        kl_ref = llm.logits_at(lm, batch, [len(texts)], [batch.input_ids.shape[1] - 1])[
            0
        ].log_softmax(-1)
    v = seen[v_site][0, subj[0]]
    k_star = seen[k_site][rows[:-1], subj[:-1]].mean(
        0
    )  # causal: the target after it changes nothing
    delta = torch.zeros_like(v, requires_grad=True)
    opt = torch.optim.Adam([delta], lr=lr)

    def add(x: torch.Tensor) -> torch.Tensor:  # the MLP output, plus delta at the subject
        x = x.clone()
        x[rows, subj] += delta
        return x

    # the columns scored: each rewrite row's target positions, then the essence prompt's end
    where_rows = [i for i, cols in enumerate(columns) for _ in cols] + [len(texts)]
    where_cols = [c for cols in columns for c in cols] + [batch.input_ids.shape[1] - 1]
    watch = penalty.watch if penalty else contextlib.nullcontext
    with watch():  # the layers below never change: run them once
        resume = llm.layer_input(lm, batch, layer)
    taken = 0
    for taken in range(1, steps + 1):
        with llm.writing(lm, {v_site: add}), llm.frozen(lm), watch() as seen:
            logp = llm.logits_at(lm, batch, where_rows, where_cols, resume).log_softmax(-1)
        nll = -logp[:-1, target * len(texts)].diagonal().view(len(texts), -1).mean()
        kl = torch.nn.functional.kl_div(kl_ref, logp[-1], log_target=True, reduction="sum")
        loss = nll + kl_factor * kl + weight_decay * delta.norm() / v.norm() ** 2
        if penalty is not None:
            loss = loss + penalty.loss(seen, [cols[0] for cols in columns], subj[:-1])
        if loss.item() < 5e-2:
            break
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            limit = clamp * v.norm()
            if delta.norm() > limit:
                delta.mul_(limit / delta.norm())
    return (v + delta).detach(), k_star, taken


def rome(lm: llm.LM, request: Request, layer: int, C: torch.Tensor, **kwargs: Any) -> Edit:
    """ROME's rank-one update of ``W_down[layer]``: ``W' = W + (v* - W k*) u^T`` with
    ``u = C^-1 k* / (k*^T C^-1 k*)``, so that ``W' k* = v*`` and keys ``k`` with
    ``k^T C^-1 k* = 0`` are left alone. ``v*`` and ``k*`` are kept in the edit's ``info``
    (:func:`rome_update` writes them again with another ``C``)."""
    start = time.perf_counter()
    v_star, k_star, steps = rome_v(lm, request, layer, **kwargs)
    edit = rome_update(lm, request, layer, C, v_star, k_star)
    edit.seconds = time.perf_counter() - start
    edit.info["steps"] = steps
    return edit


def rome_update(
    lm: llm.LM,
    request: Request,
    layer: int,
    C: torch.Tensor,
    v_star: torch.Tensor,
    k_star: torch.Tensor,
) -> Edit:
    """ROME's rank-one update for a given ``v*`` and ``k*`` (:func:`rome`'s second half)."""
    W = llm.down_proj(lm, layer).weight.detach()
    v_star, k_star = v_star.to(W), k_star.to(W)
    c_inv_k = torch.linalg.solve(C.to(W), k_star)
    u = c_inv_k / (k_star @ c_inv_k)
    delta = torch.outer(v_star - W @ k_star, u)
    info = {"layer": layer, "v_star": v_star.cpu(), "k_star": k_star.cpu()}
    return Edit("ROME", request, [Change(layer, delta)], 0.0, info)


def kept_edits(
    lm: llm.LM,
    requests: Sequence[Request],
    editors: dict[str, Callable[[Request], Edit]],
    config: dict[str, Any],
) -> dict[str, Callable[[Request], Edit]]:
    """Every method's edit of every request, made once and kept in the model cache
    (:func:`iclr25.core.cached`): an edit is the result of an optimisation, like a
    trained model. ``config`` must name everything the editors depend on besides the
    model and the requests (their hyperparameters, the layer, the seed). Returns, per
    method, an editor that hands back the kept edit of a request (for
    :func:`run_cases`)."""

    def build() -> dict[str, list[dict[str, Any]]]:
        return {
            method: [
                {
                    "changes": [
                        {"layer": c.layer, "delta": c.delta, "columns": c.columns}
                        for c in edit.changes
                    ],
                    "seconds": edit.seconds,
                    "info": edit.info,
                }
                for edit in map(editor, requests)
            ]
            for method, editor in editors.items()
        }

    key = {**config, "model": lm.name, "requests": [vars(r) for r in requests]}
    kept = core.cached("editing-edits", key, build)
    made = {
        method: {
            request: Edit(
                method,
                request,
                [Change(c["layer"], c["delta"], c["columns"]) for c in state["changes"]],
                state["seconds"],
                state["info"],
            )
            for request, state in zip(requests, kept[method])
        }
        for method in editors
    }
    return {method: made[method].__getitem__ for method in editors}


def regularised(C: torch.Tensor, ridge: float = 1e-3) -> torch.Tensor:
    """``C + ridge * mean(diag C) * I``: invertible when the sample has fewer tokens than keys."""
    return C + ridge * C.diagonal().mean() * torch.eye(len(C))


# ---------------------------------------------------------------------------------
# Running a method over cases
# ---------------------------------------------------------------------------------

METRICS = ("efficacy", "generalisation", "neighbourhood", "relation", "distract", "fluency")


def run_cases(
    lm: llm.LM,
    cases: Sequence[Case],
    editors: dict[str, Callable[[Request], Edit]],
    *,
    n_tokens: int = 24,
    progress: bool = True,
) -> tuple[list[dict[str, Any]], list[Edit]]:
    """Edit the model with each method for each case, measure it and restore it. Returns
    one record per (case, method), with the metrics, the parameter count and the edit
    time, and the edits themselves (in the same order)."""
    from tqdm.auto import tqdm

    records, edits = [], []
    befores = baselines(lm, cases, n_tokens)
    for case, before in zip(tqdm(cases, desc="editing", disable=not progress), befores):
        for method, editor in editors.items():
            edit = editor(case.request)
            with applied(lm, edit):
                metrics = evaluate(lm, case, before, n_tokens)
            records.append(
                {
                    "case": f"{case.fact.subject} · {case.fact.relation}: "
                    f"{case.fact.object} -> {case.request.new}",
                    "method": method,
                    **metrics,
                    "params": edit.n_params,
                    "seconds": edit.seconds,
                }
            )
            edits.append(edit)
    return records, edits


def summary(records: Sequence[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per method, the mean of each metric (over the cases that have its probes) and the
    median parameter count and edit time."""
    out = {}
    for method in dict.fromkeys(r["method"] for r in records):
        rows = [r for r in records if r["method"] == method]
        out[method] = {
            m: float(np.nanmean([r[m] for r in rows]))
            if any(np.isfinite(r[m]) for r in rows)
            else float("nan")
            for m in (*METRICS, "fluency_before")
        }
        out[method]["params"] = float(np.median([r["params"] for r in rows]))
        out[method]["seconds"] = float(np.median([r["seconds"] for r in rows]))
    return out


# ---------------------------------------------------------------------------------
# Before and after: the figure and the live editor
# ---------------------------------------------------------------------------------


def views(request: Request, relation: str, facts: Sequence[Fact]) -> dict[str, str]:
    """The four prompts the editor shows: the rewrite, a paraphrase, a neighbour (another
    subject, same relation) and another relation of the same subject."""
    rel = RELATIONS[relation]
    neighbour = next(
        (f for f in facts if f.relation == relation and f.subject != request.subject), None
    )
    other = next(r for r in RELATIONS.values() if r.name != relation)
    shown = {
        "rewrite": request.prompt,
        "paraphrase": rel.paraphrases[0].format(request.subject),
        f"other relation ({other.name})": other.prompt.format(request.subject),
    }
    if neighbour is not None:
        shown["neighbour"] = neighbour.prompt
    return shown


@torch.no_grad()
def top_predictions(
    lm: llm.LM, prompts: dict[str, str], k: int = 5
) -> dict[str, list[tuple[str, float]]]:
    """The ``k`` most probable next tokens (text, probability) for each prompt."""
    probs = llm.next_token_logits(lm, list(prompts.values())).softmax(-1)
    top = probs.topk(k, -1)
    return {
        name: [(lm.tokenizer.decode([int(t)]), float(p)) for t, p in zip(ids, ps)]
        for name, ids, ps in zip(prompts, top.indices, top.values)
    }


def before_after_figure(
    before: dict[str, list[tuple[str, float]]],
    after: dict[str, list[tuple[str, float]]] | None,
    title: str,
) -> go.Figure:
    """Top next-token probabilities per prompt, before (and after) the edit."""
    from plotly.subplots import make_subplots

    names = list(before)
    fig = make_subplots(rows=1, cols=len(names), subplot_titles=names, horizontal_spacing=0.08)
    for j, name in enumerate(names, 1):
        for label, table, colour in (("before", before, "#8c8c8c"), ("after", after, "#d62728")):
            if table is None:
                continue
            fig.add_bar(
                x=[p for _, p in table[name]],
                y=[repr(t) for t, _ in table[name]],
                orientation="h",
                name=label,
                marker_color=colour,
                showlegend=j == 1,
                legendgroup=label,
                row=1,
                col=j,
            )
        fig.update_yaxes(autorange="reversed", row=1, col=j)
        fig.update_xaxes(range=[0, 1], row=1, col=j)
    fig.update_layout(title=title, height=380, barmode="group")
    return fig


def editor_widget(
    lm: llm.LM, editors: dict[str, Callable[[Request], Edit]], facts: Sequence[Fact]
) -> widgets.VBox:
    """The live editor: a subject, a relation (its cloze prompt) and a new object; Edit
    writes the chosen method's edit into the model, Reset restores the weights.

    Its ``value`` is ``("edit", request, relation, method)`` after an edit and
    ``("reset", request, relation)`` after a reset; :func:`editor_figure` draws the
    predictions before and after. A bad request is reported below the controls.
    """
    import ipywidgets as widgets
    import traitlets

    class Editor(widgets.VBox):
        value = traitlets.Any()

    style = {"description_width": "initial"}
    subject = widgets.Text(value="France", description="subject", style=style)
    relation = widgets.Dropdown(options=list(RELATIONS), description="relation", style=style)
    new = widgets.Text(value="Rome", description="new object", style=style)
    method = widgets.ToggleButtons(options=list(editors), description="method", style=style)
    edit_button, reset_button = (
        widgets.Button(description="Edit"),
        widgets.Button(description="Reset"),
    )
    message = widgets.HTML()
    box = Editor(
        [
            widgets.HBox([subject, relation, new]),
            method,
            widgets.HBox([edit_button, reset_button]),
            message,
        ]
    )
    state: dict[str, Any] = {"applied": None}

    def reset() -> None:
        if state["applied"] is not None:
            state["applied"].restore()
            state["applied"] = None

    def request() -> Request:
        old = next(
            (f.object for f in facts if (f.subject, f.relation) == (subject.value, relation.value)),
            None,
        )
        return Request(
            RELATIONS[relation.value].prompt.format(subject.value), subject.value, new.value, old
        )

    def on_edit(_: object) -> None:
        reset()
        try:
            req = request()
        except ValueError as err:
            message.value = f"<span style='color:#cf222e'>{err}</span>"
            return
        message.value = f"editing with {method.value}..."
        state["before"] = top_predictions(lm, views(req, relation.value, facts))
        edit = editors[method.value](req)
        state["applied"] = Applied(lm, edit)
        message.value = (
            f"{method.value}: {edit.n_params:,} parameters changed in {edit.seconds:.1f} s"
        )
        box.value = ("edit", req, relation.value, method.value, state["before"])

    def on_reset(_: object) -> None:
        reset()
        message.value = "weights restored"
        try:
            box.value = ("reset", request(), relation.value)
        except ValueError as err:
            message.value = f"weights restored; <span style='color:#cf222e'>{err}</span>"

    edit_button.on_click(on_edit)
    reset_button.on_click(on_reset)
    box.reset = reset  # type: ignore[attr-defined]
    return box


def editor_figure(lm: llm.LM, value: tuple, facts: Sequence[Fact]) -> go.Figure:
    """Draw the live editor's state: the model as it is now, and before the edit."""
    kind, req, relation = value[:3]
    now = top_predictions(lm, views(req, relation, facts))
    if kind == "edit":
        return before_after_figure(value[4], now, f"{value[3]}: {req.subject} -> {req.new.strip()}")
    return before_after_figure(now, None, "unedited model")
