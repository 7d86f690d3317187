"""The MCQA chapter's method: enumerated and cloze scoring, the paper's metrics, the
patching sweeps, and the tiny transformer trained on the 3-shot task."""

from __future__ import annotations

import hashlib
import string
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import TypeVar

import numpy as np
import torch

from iclr25 import core, llm
from iclr25.chapters.mcqa.interventions import Sweep, patch, patch_sweep
from iclr25.chapters.mcqa.task import (
    COLORS,
    N_SHOTS,
    OBJECTS,
    SYMBOLS,
    Item,
    colours_items,
    prompt,
)

T = TypeVar("T")


# ---------------------------------------------------------------------------------
# Scores and the paper's metrics
# ---------------------------------------------------------------------------------


def symbol_tokens(lm: llm.LM, symbols: str) -> list[int]:
    """The token of each answer symbol as the model would write it after ``Answer:``."""
    return [lm.token_id(" " + s) for s in symbols]


def answers(items: Sequence[Item]) -> np.ndarray:
    return np.array([item.query.answer for item in items])


def lettered_scores(
    lm: llm.LM, items: Sequence[Item], symbols: str = "ABCD", template: str = "bare"
) -> torch.Tensor:
    """Enumerated scoring: the next-token logits of the answer symbols, ``[item, symbol]``
    (cached for a pretrained model, :func:`cached_run`)."""
    texts = [prompt(item, symbols, template) for item in items]
    tokens = symbol_tokens(lm, symbols)
    if lm.tiny:
        return llm.next_token_logits(lm, texts)[:, tokens]
    return cached_run(
        "scores", lm, texts, lambda: llm.next_token_logits(lm, texts)[:, tokens], symbols=symbols
    )


def cloze_scores(lm: llm.LM, items: Sequence[Item]) -> torch.Tensor:
    """Cloze scoring: ``log P(option text | question)``, ``[item, option]`` (cached for a
    pretrained model, :func:`cached_run`)."""
    texts = [prompt(item, "cloze") for item in items]
    options = [[" " + o for o in item.query.options] for item in items]

    def run() -> torch.Tensor:
        return llm.score_continuations(lm, texts, options)

    if lm.tiny:
        return run()
    return cached_run("cloze", lm, texts + [o for row in options for o in row], run)


def accuracy(scores: torch.Tensor, items: Sequence[Item]) -> float:
    """The share of items whose correct option has the highest score."""
    return float((scores.argmax(-1).numpy() == answers(items)).mean())


def logit_difference(scores: torch.Tensor, items: Sequence[Item]) -> float:
    """Mean over items of the correct symbol's score minus the mean of the others'."""
    correct = scores[torch.arange(len(items)), answers(items)]
    others = (scores.sum(-1) - correct) / (scores.shape[-1] - 1)
    return float((correct - others).mean())


def item_logit_difference(scores: torch.Tensor, items: Sequence[Item]) -> list[float]:
    """Per item, the correct symbol's score minus the mean of the others'."""
    correct = scores[torch.arange(len(items)), answers(items)]
    others = (scores.sum(-1) - correct) / (scores.shape[-1] - 1)
    return (correct - others).tolist()


def separation(logprobs: torch.Tensor, items: Sequence[Item]) -> np.ndarray:
    """Per layer, how far vocabulary space separates the correct symbol from the others:
    ``logit_difference`` of a projection ``[layer, item, symbol]`` (nats)."""
    return np.array([logit_difference(layer, items) for layer in logprobs])


def projection_accuracy(logprobs: torch.Tensor, items: Sequence[Item]) -> np.ndarray:
    """Per layer, the share of items whose projection ranks the correct symbol first."""
    return np.array([accuracy(layer, items) for layer in logprobs])


def item_separation(logprobs: torch.Tensor, items: Sequence[Item]) -> np.ndarray:
    """``[layer, item]``: the correct symbol's log-probability minus the mean of the others'."""
    rows = torch.arange(len(items))
    correct = logprobs[:, rows, answers(items)]
    others = (logprobs.sum(-1) - correct) / (logprobs.shape[-1] - 1)
    return (correct - others).numpy()


def patching_pairs(items: Sequence[Item], rng: np.random.Generator) -> list[tuple[Item, Item]]:
    """(base, source) pairs: the same item with the correct option moved to another slot,
    so the two prompts differ only in the order of the options and their correct symbols differ."""
    pairs = []
    for item in items:
        slot = (item.query.answer + int(rng.integers(1, len(item.query.options)))) % len(
            item.query.options
        )
        pairs.append((item, item.moved(slot)))
    return pairs


def _ld(logprobs: torch.Tensor, pairs: Sequence[tuple[Item, Item]]) -> torch.Tensor:
    """``log p(source symbol) - log p(base symbol)`` per pair; ``logprobs[..., pair, symbol]``."""
    rows = torch.arange(len(pairs))
    base = torch.tensor([b.query.answer for b, _ in pairs])
    source = torch.tensor([s.query.answer for _, s in pairs])
    return logprobs[..., rows, source] - logprobs[..., rows, base]


def normalised_effect(
    patched: torch.Tensor,
    base: torch.Tensor,
    source: torch.Tensor,
    pairs: Sequence[tuple[Item, Item]],
) -> np.ndarray:
    """``(LD_patched - LD_base) / (LD_source - LD_base)``, each averaged over the pairs.

    ``patched`` is ``[..., pair, symbol]``; 0 means the patch changed nothing, 1 that it
    moved the prediction as far as the source prompt itself does.
    """
    ld_base, ld_source = _ld(base, pairs).mean(), _ld(source, pairs).mean()
    return ((_ld(patched, pairs).mean(-1) - ld_base) / (ld_source - ld_base)).numpy()


def full_effect(sweep: Sweep, pairs: Sequence[tuple[Item, Item]]) -> float:
    """``LD_source - LD_base`` (nats): how far the source prompt itself moves the prediction."""
    return float(_ld(sweep.source, pairs).mean() - _ld(sweep.base, pairs).mean())


def answered_pairs(
    lm: llm.LM, pairs: Sequence[tuple[Item, Item]], symbols: str = "ABCD", at_least: int = 4
) -> list[tuple[Item, Item]]:
    """The pairs whose base and source prompts the model both answers correctly (the
    official code patches only these); all ``pairs`` if fewer than ``at_least`` are (a
    model that has not learned the task, whose claims are then inconclusive)."""
    right = []
    for items in ([b for b, _ in pairs], [s for _, s in pairs]):
        scores = lettered_scores(lm, items, symbols)
        right.append(scores.argmax(-1).numpy() == answers(items))
    kept = [pair for pair, ok in zip(pairs, right[0] & right[1]) if ok]
    return kept if len(kept) >= at_least else list(pairs)


def pair_effects(
    patched: torch.Tensor,
    base: torch.Tensor,
    source: torch.Tensor,
    pairs: Sequence[tuple[Item, Item]],
) -> np.ndarray:
    """Each pair's share of :func:`normalised_effect`, ``[..., pair]``:
    ``(LD_patched,i - LD_base,i) / mean_j (LD_source,j - LD_base,j)``, whose mean over
    the pairs is the normalised effect (so a bootstrap over pairs gives its interval)."""
    ld_base = _ld(base, pairs)
    full = (_ld(source, pairs) - ld_base).mean()
    return ((_ld(patched, pairs) - ld_base) / full).numpy()


def transition(effect: Sequence[float], low: float, high: float) -> tuple[int, int] | None:
    """Where the residual stream's patching effect rises from below ``low`` to above
    ``high``: ``(a, b)``, the last layer below ``low`` before the first layer ``b`` above
    ``high`` (``a = -1`` if none is); None if no layer exceeds ``high``."""
    effect = np.asarray(effect, dtype=float)
    above = np.flatnonzero(effect > high)
    if not len(above):
        return None
    below = np.flatnonzero(effect[: above[0]] < low)
    return (int(below[-1]) if len(below) else -1, int(above[0]))


def symbol_roles(logprobs: torch.Tensor, pairs: Sequence[tuple[Item, Item]]) -> dict[str, float]:
    """Mean probability of the base's symbol, the source's symbol and the other symbols."""
    p = logprobs.exp()
    rows = torch.arange(len(pairs))
    base = p[rows, [b.query.answer for b, _ in pairs]]
    source = p[rows, [s.query.answer for _, s in pairs]]
    return {
        "base answer": float(base.mean()),
        "source answer": float(source.mean()),
        "other symbols": float((p.sum(-1) - base - source).mean()),
    }


# ---------------------------------------------------------------------------------
# Patching sweeps
# ---------------------------------------------------------------------------------


@dataclass
class Patching:
    """A patching sweep of one model's component over (base, source) pairs."""

    model: str
    sweep: Sweep
    pairs: list[tuple[Item, Item]]
    columns: list[str]  # what each column is: a position's token, or a head
    normalise: bool = True  # False: show the raw change of LD (nats), see ``shown``

    @property
    def effect(self) -> np.ndarray:
        """Normalised effect of each cell, ``[layer, column]``."""
        return normalised_effect(self.sweep.patched, self.sweep.base, self.sweep.source, self.pairs)

    @property
    def raw(self) -> np.ndarray:
        """``LD_patched - LD_base`` of each cell (nats), averaged over the pairs: the change
        before dividing by the full effect, readable when that is close to 0."""
        return (
            _ld(self.sweep.patched, self.pairs).mean(-1) - _ld(self.sweep.base, self.pairs).mean()
        ).numpy()

    @property
    def shown(self) -> np.ndarray:
        """What the figure draws: the normalised effect, or the raw change of LD."""
        return self.effect if self.normalise else self.raw

    @property
    def full(self) -> float:
        return full_effect(self.sweep, self.pairs)

    def distributions(self, row: int, column: int) -> dict[str, dict[str, float]]:
        """Symbol probabilities before (base run), after (patched) and in the source run."""
        return {
            "before (base)": symbol_roles(self.sweep.base, self.pairs),
            "after (patched)": symbol_roles(self.sweep.patched[row, column], self.pairs),
            "source": symbol_roles(self.sweep.source, self.pairs),
        }


def cached_run(name: str, lm: llm.LM, texts: Sequence[str], run: Callable[[], T], **extra) -> T:
    """``run()``, cached (:func:`iclr25.core.cached`) under the model's name, the SHA-256
    of the prompts ``texts`` and ``extra``: SmolLM2's scores, projections and patching
    sweeps, which the same prompts give again on a second run."""
    digest = hashlib.sha256("\x00".join(texts).encode()).hexdigest()
    config = {"model": lm.name, "texts": digest, **extra, "torch": torch.__version__}
    return core.cached(f"mcqa-{name}", config, run)


def patching(
    lm: llm.LM,
    pairs: Sequence[tuple[Item, Item]],
    component: str,
    *,
    symbols: str = "ABCD",
    positions: Sequence[int] = (-1,),
    template: str = "bare",
    normalise: bool = True,
) -> Patching:
    """Patch ``component`` cell by cell from each source prompt into its base prompt.

    A pretrained model's sweep is cached (:func:`cached_run`); a tiny model's is not."""
    base = [prompt(b, symbols, template) for b, _ in pairs]
    source = [prompt(s, symbols, template) for _, s in pairs]

    def sweep_of() -> Sweep:
        return patch_sweep(
            lm, base, source, component, symbol_tokens(lm, symbols), positions=positions
        )

    if lm.tiny:
        sweep = sweep_of()
    else:
        extra = {"component": component, "symbols": symbols, "positions": list(positions)}
        sweep = Sweep(
            **cached_run("patching", lm, base + source, lambda: asdict(sweep_of()), **extra)
        )
    if component == "head":
        columns = [f"head {h}" for h in sweep.columns]
    else:
        ids = lm.tokens(base[0])
        columns = [f"{p} {lm.tokenizer.decode([ids[p]])!r}" for p in sweep.columns]
    return Patching(lm.name, sweep, list(pairs), columns, normalise)


@dataclass
class HeadShare:
    """The top two heads, chosen on one half of the pairs, measured on the other."""

    heads: Patching  # single heads at the last position, on the choosing half
    top: list[tuple[int, int]]  # (layer, head) of the two largest effects
    top_effect: float  # normalised effect of patching the two together, held-out half
    all_effect: float  # the same for every head of every layer together

    @property
    def share(self) -> float:
        """``top_effect / all_effect``: how much of all heads' effect the two carry."""
        return self.top_effect / self.all_effect


def head_share(lm: llm.LM, pairs: Sequence[tuple[Item, Item]]) -> HeadShare:
    """Patch single heads at the last position on the first half of ``pairs``; then the
    top two together, and all heads together, on the second half."""
    half = len(pairs) // 2
    heads = patching(lm, pairs[:half], "head")
    flat = np.argsort(-heads.effect, axis=None)[:2]
    top = [tuple(int(i) for i in np.unravel_index(k, heads.effect.shape)) for k in flat]
    held = list(pairs[half:])
    base = [prompt(b) for b, _ in held]
    source = [prompt(s) for _, s in held]
    tokens = symbol_tokens(lm, "ABCD")

    def logprobs(texts: list[str]) -> torch.Tensor:
        return llm.next_token_logits(lm, texts).log_softmax(-1)[:, tokens]

    held_base, held_source = logprobs(base), logprobs(source)

    def joint(sites: list[tuple[str, int, int]]) -> float:
        patched = patch(lm, base, source, sites).log_softmax(-1)[:, tokens]
        return float(normalised_effect(patched, held_base, held_source, held))

    everything = [("head", layer, h) for layer in range(lm.n_layers) for h in range(lm.n_heads)]
    return HeadShare(heads, top, joint([("head", *t) for t in top]), joint(everything))


# ---------------------------------------------------------------------------------
# The tiny transformer
# ---------------------------------------------------------------------------------

OTHER_SYMBOLS = SYMBOLS[1]
"""Q/Z/R/X: ordinary letters of the training text, answer labels in a small share of it."""

OTHER_SHARE = 0.05
"""The share of training prompts labelled Q/Z/R/X (the rest A/B/C/D): letters the model
knows but rarely sees as labels, as the paper's models do."""

LETTERS_SHARE = 0.25
"""The share of training prompts that open with a line of random capital letters (the
alphabet as ordinary text, no loss on it)."""

HELD_OUT = tuple(range(0, len(OBJECTS), 4))
"""The objects (indices of :data:`OBJECTS`) never shown in a Q/Z/R/X training prompt;
the Q/Z/R/X test is on these."""

CRITERION = 0.95
"""Training stops searching once A/B/C/D accuracy on held-out validation prompts reaches
this; the step it took is reported."""


def tiny_vocabulary() -> list[str]:
    """Every word a bare Colors prompt can hold, with every capital letter as a symbol."""
    template = [
        f"{noun[0].upper() + noun[1:]} {verb} . What color {verb} {noun} ? : Answer"
        for noun, verb, _ in OBJECTS
    ]
    return llm.words([*template, " ".join(COLORS), " ".join(string.ascii_uppercase)])


def tiny_corpus(rng: np.random.Generator, n: int) -> list[str]:
    """``n`` solved Colors prompts (bare template) with random colours; each keeps 0 to 3
    of its shots (uniformly), so that short prompts teach the binding of a symbol to its
    option without the distraction of earlier questions, and long ones its use in the
    3-shot prompt. A share :data:`OTHER_SHARE` is labelled Q/Z/R/X, on objects outside
    :data:`HELD_OUT`; a share :data:`LETTERS_SHARE` opens with eight random capitals."""
    training = [k for k in range(len(OBJECTS)) if k not in HELD_OUT]
    letters = np.array(list(string.ascii_uppercase))
    texts = []
    for _ in range(n):
        other = rng.random() < OTHER_SHARE
        symbols = OTHER_SYMBOLS if other else SYMBOLS[0]
        item = colours_items(1, rng, typical=False, objects=training if other else None)[0]
        item = replace(item, shots=item.shots[: int(rng.integers(N_SHOTS + 1))])
        text = f"{prompt(item, symbols)} {symbols[item.query.answer]}"
        if rng.random() < LETTERS_SHARE:
            text = " ".join(rng.choice(letters, 8)) + "\n\n" + text
        texts.append(text)
    return texts


def post_solve_steps(solved: int, every: int, n: int) -> list[int]:
    """The checkpoints after the solving step: ``solved + every * k``, 1 <= k <= n."""
    return [solved + every * k for k in range(1, n + 1)]


@dataclass
class TinyTraining:
    """A tiny model trained to the criterion: validation curves and the final model."""

    lm: llm.LM
    steps: list[int]  # the evaluated steps (every ``every`` steps, then log-spaced)
    accuracy: dict[str, list[float]]  # validation accuracy per symbol set, per step
    logit_difference: list[float]  # validation logit difference (A/B/C/D), per step
    item_ld: list[list[float]]  # per validation prompt, the same, per step
    loss: list[float]  # mean training loss between evaluations
    solved: int | None  # the first step with validation accuracy >= CRITERION
    after: list[int]  # the checkpoints after ``solved``


def train_tiny(
    *,
    layers: int,
    d_model: int,
    max_steps: int,
    every: int,
    after: int,
    batch_size: int,
    lr: float,
    warmup: int,
    weight_decay: float,
    seed: int,
    n_val: int = 64,
    device: str | torch.device = "cpu",
    progress: bool = True,
) -> TinyTraining:
    """Train the tiny transformer on :func:`tiny_corpus` until A/B/C/D accuracy on ``n_val``
    held-out validation prompts reaches :data:`CRITERION` (checked every ``every`` steps, at
    most ``max_steps``), then on to ``after`` checkpoints ``every`` steps apart
    (:func:`post_solve_steps`). AdamW with ``weight_decay``, the rate rising linearly over
    ``warmup`` steps and then constant, gradients clipped to norm 1; one CPU thread, so
    a seed gives the same model on a machine.
    Cached (:func:`iclr25.core.cached`)."""
    config = llm.TinyConfig(
        n_layers=layers, n_heads=4, d_model=d_model, d_mlp=4 * d_model, context=160
    )
    key = {
        "config": config.__dict__,
        "corpus": ["mcqa.tiny_corpus", OBJECTS, COLORS, N_SHOTS, HELD_OUT, OTHER_SHARE, 4],
        "corpus_letters": LETTERS_SHARE,
        "train": [max_steps, every, after, batch_size, lr, warmup, 1.0, seed, n_val, CRITERION],
        "weight_decay": weight_decay,
        "torch": torch.__version__,
        "version": 5,
    }

    def build() -> dict:
        from tqdm.auto import tqdm

        lm = llm.tiny_model(tiny_vocabulary(), config, seed=seed, name="mcqa-tiny")
        lm.model.to(device)
        data, held_out = np.random.default_rng(seed), np.random.default_rng([seed, 1])
        validation = colours_items(n_val, held_out, typical=False)
        other = colours_items(n_val, held_out, typical=False, objects=HELD_OUT)
        cue = lm.tokens("Answer:")  # the loss is on the answer symbols only
        optimiser = torch.optim.AdamW(lm.model.parameters(), lr=lr, weight_decay=weight_decay)
        schedule = torch.optim.lr_scheduler.LambdaLR(
            optimiser, lambda k: min(1.0, (k + 1) / max(warmup, 1))
        )
        record: dict = {"steps": [], "ABCD": [], "QZRX": [], "ld": [], "item_ld": [], "loss": []}
        stops, solved, step, loss = list(range(every, max_steps + 1, every)), None, 0, np.nan
        bar = tqdm(total=max_steps, desc="training mcqa-tiny", disable=not progress)
        with core.threads(1):
            while True:
                with torch.no_grad():  # validation (train_epoch leaves eval mode)
                    for symbols, items in zip(SYMBOLS, (validation, other)):
                        scores = lettered_scores(lm, items, symbols)
                        record[symbols].append(accuracy(scores, items))
                        if symbols == "ABCD":
                            record["ld"].append(logit_difference(scores, items))
                            record["item_ld"].append(item_logit_difference(scores, items))
                record["steps"].append(step)
                record["loss"].append(float(loss))
                if solved is None and record["ABCD"][-1] >= CRITERION:
                    solved, stops = step, post_solve_steps(step, every, after)
                    bar.total = stops[-1]
                if not stops:
                    break
                n, step = stops[0] - step, stops.pop(0)
                loss = core.train_epoch(
                    lm.model,
                    optimiser,
                    lambda n=n: (llm.encode(lm, tiny_corpus(data, batch_size)) for _ in range(n)),
                    lambda model, batch: llm.cue_loss(model, batch, cue),
                    clip=1.0,
                    schedule=schedule,
                )
                bar.update(n)
        bar.close()
        state = {k: v.detach().cpu().clone() for k, v in lm.model.state_dict().items()}
        return {"state": state, "record": record, "solved": -1 if solved is None else solved}

    stored = core.cached("mcqa-tiny", key, build)
    lm = llm.tiny_model(tiny_vocabulary(), config, seed=seed, name="mcqa-tiny")
    lm.model.load_state_dict(stored["state"])
    lm = llm.LM(lm.name, lm.model.to(device).eval(), lm.tokenizer, tiny=True)
    record, solved = stored["record"], int(stored["solved"])
    return TinyTraining(
        lm,
        list(record["steps"]),
        {s: list(record[s]) for s in SYMBOLS},
        list(record["ld"]),
        [list(row) for row in record["item_ld"]],
        list(record["loss"]),
        None if solved < 0 else solved,
        [] if solved < 0 else post_solve_steps(solved, every, after),
    )


def trend(steps: Sequence[int], values: Sequence[float]) -> tuple[float, float]:
    """Kendall's tau of ``values`` against ``steps`` and its one-sided p-value (a rising
    trend): a test of the trend that one inversion does not overturn."""
    from scipy.stats import kendalltau

    if len(values) < 3:
        return float("nan"), float("nan")
    result = kendalltau(steps, values, alternative="greater")
    return float(result.statistic), float(result.pvalue)
