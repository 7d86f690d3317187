"""Facts and edit cases: a CounterFact-style set of facts about countries in cloze form,
the facts the model knows, edit requests and the cases that probe an edit."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from iclr25 import core, llm
from iclr25.editing.evaluation import predict

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
