"""Unit tests of the MCQA chapter's module, iclr25.chapters.mcqa: the task, the prompts, the
paper's metrics and the patching explorer, on a small random tiny model."""

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


def test_tiny_corpus_is_solved_prompts_in_the_vocabulary(tiny):
    texts = mcqa.tiny_corpus(np.random.default_rng(5), 40)
    for text in texts:
        symbol = text.rsplit(" ", 1)[1]
        assert text.count("Answer:") == 4 and len(symbol) == 1 and len(tiny.tokens(text)) <= 128
    assert 20 < sum("\nA: " in t for t in texts) < 40 and all(
        "\nA: " in t or "\nQ: " in t for t in texts
    )


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
    fig = mcqa.patching_figure(results, "tiny · residual", (0, 1))
    assert fig.data[0].type == "heatmap" and len(fig.data) == 2 + 3
    explorer = mcqa.patching_explorer(results)
    assert explorer.value == ("tiny · residual", 0, 0)
    explorer.children[0].value = "tiny · head"
    assert explorer.value[0] == "tiny · head" and explorer.children[2].max == 3


def test_parameters_and_smoke_overrides_are_valid():
    core.validate(mcqa.PARAMETERS, mcqa.SMOKE)
    assert {"seed", "device"} <= set(mcqa.PARAMETERS)


def test_bounds_name_the_notebook_claims_and_the_gaps_are_declared_claims():
    assert set(mcqa.BOUNDS) == {
        "smollm2-format",
        "smollm2-no-separation",
        "tiny-learned",
        "tiny-localisation",
        "tiny-middle-layers",
        "tiny-sparse-heads",
        "tiny-projection",
        "tiny-logit-difference-grows",
    }
    assert set(mcqa.KNOWN_GAPS) <= set(mcqa.BOUNDS)
    assert core.check_bound(mcqa.BOUNDS["tiny-logit-difference-grows"], 0.7999999999999999)
    assert not core.check_bound(mcqa.BOUNDS["tiny-logit-difference-grows"], float("nan"))
    assert not core.check_bound(mcqa.BOUNDS["smollm2-no-separation"], [0.1, 0.6])


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
