"""The HyperDAS chapter's runs, cached: DAS over the tiny target's grid, HyperDAS with
its branch without the penalty, and DAS on SmolLM2's countries."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from iclr25 import core, llm
from iclr25.chapters.hyperdas.das import das_grid, das_layer
from iclr25.chapters.hyperdas.data import SCORES, TEST_TEMPLATE, World, make_examples
from iclr25.chapters.hyperdas.method import train_hyperdas
from iclr25.chapters.hyperdas.target import known

# ---------------------------------------------------------------------------------
# SmolLM2: countries and their capital, language and currency
# ---------------------------------------------------------------------------------

SMOL_ATTRIBUTES = ("capital", "language", "currency")
SMOL_K, SMOL_BATCH, SMOL_STEPS = 16, 8, 40
"""SmolLM2 DAS: rank, batch and most steps per layer (the same stopping rule)."""


def smol_world(lm: llm.LM) -> World:
    """Countries of ``editing.COUNTRIES`` with a capital, language and currency, whose
    capital SmolLM2 knows (editing's known facts); their three attributes as listed there."""
    from iclr25 import editing

    knows = {
        f.subject for f in editing.known_facts(lm, editing.all_facts()) if f.relation == "capital"
    }
    cols = {a: editing.RELATIONS[a].column for a in SMOL_ATTRIBUTES}
    rows = [r for r in editing.COUNTRIES if r[0] in knows and all(r[c] for c in cols.values())]
    templates = {
        a: (editing.RELATIONS[a].prompt, *editing.RELATIONS[a].paraphrases) for a in SMOL_ATTRIBUTES
    }
    values = {a: tuple(r[c] for r in rows) for a, c in cols.items()}
    return World(tuple(r[0] for r in rows), values, templates)


def smol_das(
    lm: llm.LM,
    world: World,
    attribute: str,
    layers: Sequence[int],
    k: int,
    steps: int,
    *,
    batch: int,
    lr: float,
    n_train: int,
    n_test: int,
    seed: int,
) -> dict[int, dict[str, float]]:
    """DAS for ``attribute`` at the country's last token of each layer in ``layers``:
    countries split 2:1 and templates 2:1 into train and test, examples on known facts."""
    rng = np.random.default_rng(seed)
    order = list(rng.permutation(world.entities))
    cut = 2 * len(order) // 3
    ok = core.cached(
        "hyperdas-smol-known",
        {"model": lm.name, "entities": list(world.entities), "templates": world.templates},
        lambda: sorted(known(lm, world)),
    )
    ok = {tuple(c) for c in ok}
    train = make_examples(
        world, order[:cut], (0, 1), n_train, rng, attributes=[attribute], known=ok
    )
    test = make_examples(world, order[cut:], (2,), n_test, rng, attributes=[attribute], known=ok)
    out = {}
    for layer in layers:
        r = das_layer(
            lm,
            {attribute: train},
            {attribute: test},
            layer,
            k,
            steps,
            batch=batch,
            lr=lr,
            seed=seed,
            positions=("entity",),
        )
        out[layer] = {m: float(r[m][0, 0]) for m in (*SCORES, "steps")}
    return out


# ---------------------------------------------------------------------------------
# The chapter's runs, cached
# ---------------------------------------------------------------------------------


CODE = 5
"""Version of the cached runs' code: a fix that changes their results bumps it."""


def split(world: World, n_train: int, n_test: int, seed: int, ok: set | None = None):
    """Train examples on 3/4 of the entities and templates 0-1, test on the rest with the
    held-out template."""
    rng = np.random.default_rng(seed)
    order = [str(e) for e in rng.permutation(world.entities)]
    cut = 3 * len(order) // 4
    train = make_examples(world, order[:cut], (0, 1), n_train, rng, known=ok)
    test = make_examples(world, order[cut:], (TEST_TEMPLATE,), n_test, rng, known=ok)
    return train, test


def run_das_grid(lm, world, train, test, *, k, steps, batch, lr, seed, key, layers) -> dict:
    """:func:`das_grid` at ``layers``, cached under ``key`` (everything the run depends
    on)."""

    def build() -> dict:
        with core.threads(1):
            g = das_grid(
                lm, world, train, test, k, steps, batch=batch, lr=lr, seed=seed, layers=layers
            )
        return {m: torch.tensor(v) for m, v in g.items()}

    key = {
        **key,
        "k": k,
        "steps": steps,
        "batch": batch,
        "lr": lr,
        "seed": seed,
        "layers": list(layers),
        "code": CODE,
    }
    return {m: v.numpy() for m, v in core.cached("hyperdas-das", key, build).items()}


def run_hyperdas(lm, train, *, key, branch: bool = False, **kw) -> dict:
    """:func:`train_hyperdas` with the penalty, cached; with ``branch``, the run without
    the penalty from the main run's mid-training state (cached too)."""
    main_key = {**key, **kw, "code": CODE}
    main = core.cached("hyperdas-hyper", main_key, lambda: _train(lm, train, **kw))
    if not branch:
        return main
    return core.cached(
        "hyperdas-hyper-nopenalty",
        main_key,
        lambda: _train(
            lm, train, penalty=False, start=main["mid"], from_step=kw["steps"] // 2, **kw
        ),
    )


def _train(lm, train, **kw) -> dict:
    with core.threads(1):
        out = train_hyperdas(lm, train, **kw)
    out["history"] = {k: torch.tensor(v) for k, v in out["history"].items()}
    return out


def run_smol(lm: llm.LM, *, attribute: str, layers, k, steps, batch, lr, seed) -> dict:
    """SmolLM2 DAS per layer, cached; ``{layer: scores}``."""
    world = smol_world(lm)
    key = {
        "model": lm.name,
        "code": CODE,
        "attribute": attribute,
        "layers": list(layers),
        "k": k,
        "steps": steps,
        "batch": batch,
        "lr": lr,
        "seed": seed,
        "entities": list(world.entities),
    }

    def build() -> dict:
        with core.threads(1):
            res = smol_das(
                lm,
                world,
                attribute,
                layers,
                k,
                steps,
                batch=batch,
                lr=lr,
                n_train=max(64, steps * batch),
                n_test=64,
                seed=seed,
            )
        return {str(l): {m: torch.tensor(v) for m, v in r.items()} for l, r in res.items()}

    out = core.cached("hyperdas-smol", key, build)
    return {int(l): {m: float(v) for m, v in r.items()} for l, r in out.items()}


# ---------------------------------------------------------------------------------
# The SmolLM2 layers parameter
# ---------------------------------------------------------------------------------


def parse_site(spec: str) -> str | int:
    """``hyper_layer``: ``"auto"`` (:func:`edit_layer`) or a layer number from 1."""
    if str(spec) == "auto":
        return "auto"
    if not str(spec).isdigit() or int(spec) < 1:
        raise ValueError(
            f"hyper_layer {spec!r}: accepted, 'auto' or a layer number from 1 (the official "
            "code refuses the embeddings, layer 0)"
        )
    return int(spec)


def edit_layer(grid: dict, layers: Sequence[int]) -> int:
    """The layer HyperDAS edits, by the paper's rule: of ``layers`` (the embeddings
    left out), the one whose entity-token DAS disentangles best on the training cities
    (``grid["train_disentangle"]``, mean of the attributes)."""
    fit = grid["train_disentangle"].mean(0)[:, 0]  # [layer], entity position
    allowed = [i for i, l in enumerate(layers) if l > 0]
    if not allowed:
        raise ValueError("das_layers needs a layer above 0 for HyperDAS to edit")
    return int(layers[max(allowed, key=lambda i: fit[i])])


def parse_layers(spec: str, n_layers: int = 30) -> list[int]:
    try:
        layers = [int(x) for x in str(spec).split(",")]
    except ValueError:
        raise ValueError(
            f"layers {spec!r}: accepted, integers 0..{n_layers - 1} separated by commas"
        ) from None
    bad = [x for x in layers if not 0 <= x < n_layers]
    if bad or not layers:
        raise ValueError(
            f"layer {bad[0] if bad else spec!r} is out of range; accepted: 0..{n_layers - 1}"
        )
    return layers
