"""Unit tests of the FiNE chapter's module, iclr25.chapters.fine: the neuron contribution score,
the choice of neurons, and an edit that changes only the chosen rows of W_down and is
undone exactly; and the live editor, on a small random model."""

import numpy as np
import pytest
import torch

from iclr25 import core, editing, llm
from iclr25.chapters import fine

PROMPT = "The capital of France is the city of"


@pytest.fixture(scope="module")
def tiny(editing_vocabulary):
    return llm.tiny_model(
        editing_vocabulary,
        llm.TinyConfig(n_layers=4, n_heads=2, d_model=16, d_mlp=32, context=64),
        seed=1,
    )


def test_contribution_is_activation_times_value_vector_logit(tiny):
    token = tiny.token_id(" Rome")
    scores = fine.contributions(tiny, PROMPT, token)
    a = fine.neuron_activations(tiny, PROMPT)
    assert scores.shape == a.shape == (4, 32)
    l, i = 2, 7
    value = llm.down_proj(tiny, l).weight[:, i]  # neuron i's value vector
    expected = a[l, i] * (value @ tiny.model.lm_head.weight[token])
    torch.testing.assert_close(scores[l, i], expected)


def test_locate_takes_the_top_neurons_outside_the_frozen_layers(tiny):
    neurons, token = fine.locate(tiny, PROMPT, k=6, frozen_last=2)
    assert len(set(neurons)) == 6 and all(l < 2 for l, _ in neurons)
    assert token == int(llm.next_token_logits(tiny, [PROMPT])[0].argmax())
    scores = fine.contributions(tiny, PROMPT, token)[:2]
    assert sorted(float(scores[l, i]) for l, i in neurons) == sorted(
        scores.flatten().topk(6).values.tolist()
    )
    with pytest.raises(ValueError, match="at least one neuron"):
        fine.locate(tiny, PROMPT, k=0)


def test_fine_changes_only_the_chosen_rows_and_is_undone_exactly(tiny, snapshot, changed):
    request = editing.Request(PROMPT, "France", "Rome", "Paris")
    edit = fine.fine(tiny, request, k=3, epochs=3, lr=0.05, frozen_last=1)
    neurons = edit.info["neurons"]
    assert edit.n_params == 3 * 16 and edit.info["steps"] >= 1
    before = snapshot(tiny)
    handle = editing.Applied(tiny, edit)
    layers = sorted({l for l, _ in neurons})
    assert changed(tiny, before) == [f"model.layers.{l}.mlp.down_proj.weight" for l in layers]
    for l in layers:
        diff = (
            llm.down_proj(tiny, l).weight - before[f"model.layers.{l}.mlp.down_proj.weight"]
        ).abs()
        assert set(diff.sum(0).nonzero().flatten().tolist()) == {i for m, i in neurons if m == l}
    handle.restore()
    assert changed(tiny, before) == []


def test_editor_edits_and_resets(tiny, facts, snapshot, changed):
    editors = {"FiNE": lambda r: fine.fine(tiny, r, k=2, epochs=2, frozen_last=1)}
    box = editing.editor_widget(tiny, editors, facts)
    subject, relation, new = box.children[0].children
    edit_button, reset_button = box.children[2].children
    message = box.children[3]
    before = snapshot(tiny)
    relation.value, new.value = "capital", "Lima"
    edit_button.click()
    assert box.value[0] == "edit" and changed(tiny, before)
    assert editing.editor_figure(tiny, box.value, facts).data
    reset_button.click()
    assert box.value[0] == "reset" and changed(tiny, before) == []
    subject.value = ""
    edit_button.click()
    assert "subject is empty" in message.value and changed(tiny, before) == []
    subject.value, new.value = "France", "Paris"  # the fact it already knows
    edit_button.click()
    assert "equals the old one" in message.value and changed(tiny, before) == []


def test_sweep_and_parameters():
    assert fine.sweep_ks(50) == [1, 2, 5, 10, 20, 50] and fine.sweep_ks(3) == [1, 2]
    core.validate(fine.PARAMETERS, fine.SMOKE)
    assert {"seed", "device"} <= set(fine.PARAMETERS)


def test_timed_edits_alternate_the_methods():
    requests = [editing.Request(PROMPT, "France", new, "Paris") for new in ("Rome", "Lima")]
    calls = []

    def editor(method):
        def edit(request):
            calls.append((method, request.new))
            return editing.Edit(method, request, [])

        return edit

    timing = fine.timed_edits(requests, {"ROME": editor("ROME"), "FiNE": editor("FiNE")})
    assert calls == [("ROME", "Rome"), ("FiNE", "Rome"), ("ROME", "Lima"), ("FiNE", "Lima")]
    assert set(timing) == {"ROME", "FiNE"} and all(
        len(t.wall) == len(t.cpu) == 2 and [e.request for e in t.results] == requests
        for t in timing.values()
    )
    with pytest.raises(ValueError, match="at least one request"):
        fine.timed_edits([], {"ROME": editor("ROME")})


def test_bounds_name_the_notebook_claims():
    assert set(fine.BOUNDS) == {
        "efficacy-comparable",
        "generalisation-comparable",
        "locality-better",
        "relation-gap-largest",
        "faster",
    }
    assert set(fine.KNOWN_GAPS) <= set(fine.BOUNDS)
    assert core.check_bound(
        fine.BOUNDS["efficacy-comparable"], {"ROME": 0.9, "FiNE": 1.0, "|FiNE - ROME|": 0.1}
    )
    assert not core.check_bound(fine.BOUNDS["faster"], 1.2)


def test_figures_from_hand_made_results():
    effects = np.array([0.0, 0.1, 0.3, 0.2])
    fig = fine.tracing_figure(effects, 2, n_facts=3, window=2)
    assert list(fig.data[0].y) == list(effects) and "over 3 facts" in fig.layout.title.text
    results = {
        "ROME": {"efficacy": 1.0, "relation": 0.2},
        "FiNE": {"efficacy": 0.9, "relation": 0.8},
    }
    fig = fine.comparison_figure(results, ["efficacy", "relation"], n_cases=2)
    assert [t.name for t in fig.data] == ["ROME", "FiNE"] and list(fig.data[1].y) == [0.9, 0.8]
    fig = fine.neuron_layers_figure([1, 1, 3], n_layers=4, rome_layer=2, frozen_last=1, n_edits=2)
    assert (
        fig.data[0].type == "histogram" and "3 edited neurons over 2 edits" in fig.layout.title.text
    )
    sweep = {
        1: [{"case": "a", "efficacy": 0.5}, {"case": "b", "efficacy": 1.0}],
        2: [{"case": "a", "efficacy": 1.0}, {"case": "b", "efficacy": 1.0}],
    }
    fig = fine.sweep_figure(sweep, ["efficacy"])
    assert list(fig.data[0].x) == [1, 2] and list(fig.data[0].y) == [0.75, 1.0]
    assert "mean over 2 edits" in fig.layout.title.text
    assert fig.layout.xaxis.type == "log" and fig.data[0].mode == "lines+markers"
    fig = fine.edits_figure(sweep[2], ["efficacy"], 2)
    assert [t.name for t in fig.data] == ["a", "b"] and "k = 2" in fig.layout.title.text
