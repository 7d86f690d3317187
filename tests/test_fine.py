"""Unit tests of the FiNE chapter's module, iclr25.chapters.fine: the neuron contribution score,
the choice of neurons, and an edit that changes only the chosen rows of W_down and is
undone exactly; and the live editor, on a small random model."""

import numpy as np
import pytest
import torch

from iclr25 import core, editing, llm
from iclr25.chapters import fine
from iclr25.core import stats

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
    a = editing.neuron_activations(tiny, PROMPT)
    assert a.shape == (1, 4, 32)
    scores = editing.contributions(a[0], tiny, token)
    assert scores.shape == (4, 32)
    l, i = 2, 7
    value = llm.down_proj(tiny, l).weight[:, i]  # neuron i's value vector
    expected = a[0, l, i] * (value @ tiny.model.lm_head.weight[token])
    torch.testing.assert_close(scores[l, i], expected)


def test_locate_finds_k_neurons_for_each_target_token(tiny):
    target = " Kuala Lumpur"
    assert len(tiny.tokens(target)) == 2
    per_token, predicted = editing.locate(tiny, PROMPT, target, k=6, frozen_last=2)
    assert len(per_token) == 2 and all(len(set(n)) == 6 for n in per_token)
    assert all(l < 2 for n in per_token for l, _ in n)
    # the tokens the unedited model predicts under teacher forcing on prompt + target
    ids = tiny.tokens(PROMPT + target)
    logits = tiny.model(input_ids=torch.tensor([ids])).logits[0]
    assert predicted == logits[len(ids) - 3 : len(ids) - 1].argmax(-1).tolist()
    a = editing.neuron_activations(tiny, PROMPT, target)
    assert a.shape == (2, 4, 32)
    # position 0 is the prompt's last token: the same activations as the prompt alone
    torch.testing.assert_close(a[0], editing.neuron_activations(tiny, PROMPT)[0])
    for j in range(2):  # each token's neurons are the top 6 of its own scores
        scores = editing.contributions(a[j], tiny, predicted[j])[:2]
        assert sorted(float(scores[l, i]) for l, i in per_token[j]) == pytest.approx(
            sorted(scores.flatten().topk(6).values.tolist())
        )
    with pytest.raises(ValueError, match="at least one neuron"):
        editing.locate(tiny, PROMPT, " Rome", k=0)


def test_loss_takes_the_largest_nll_and_the_plain_l2_norm():
    # two prefix positions, two target tokens, the position after the target; vocab 4
    probs = torch.tensor(
        [
            [0.25, 0.25, 0.25, 0.25],
            [0.1, 0.2, 0.3, 0.4],
            [0.7, 0.1, 0.1, 0.1],  # predicts target token 0: P = 0.7
            [0.1, 0.1, 0.6, 0.2],  # predicts target token 2: P = 0.6
            [0.5, 0.1, 0.3, 0.1],  # after the target: P(0) = 0.5, P(2) = 0.3
        ]
    )
    logp, target = probs.log(), [0, 2]
    deltas = torch.tensor([[3.0, 4.0], [0.0, 0.0]])  # norm 5, squared 25
    reference = logp[:2].clone()  # the KL term vanishes
    loss, nll = editing.fine_loss(logp, reference, target, deltas, alpha=1.0, beta=0.0, gamma=0.0)
    torch.testing.assert_close(nll, -torch.tensor(0.6).log())  # the max, not the mean
    torch.testing.assert_close(loss, nll)
    loss, _ = editing.fine_loss(logp, reference, target, deltas, alpha=0.0, beta=1.0, gamma=0.0)
    # the repetition penalty over all target tokens: the largest -log(1 - P(t))
    torch.testing.assert_close(loss - nll, -torch.tensor(0.5).log())
    loss, _ = editing.fine_loss(logp, reference, target, deltas, alpha=0.0, beta=0.0, gamma=0.1)
    torch.testing.assert_close(loss - nll, torch.tensor(0.5))  # gamma * ||delta||, not squared
    other = logp[:2].flip(-1)
    loss, _ = editing.fine_loss(logp, other, target, deltas, alpha=1.0, beta=0.0, gamma=0.0)
    kl = (other.exp() * (other - logp[:2])).sum(-1).mean()  # KL(unedited || edited)
    torch.testing.assert_close(loss - nll, kl)


def test_fine_changes_only_the_chosen_rows_and_is_undone_exactly(tiny, snapshot, changed):
    request = editing.Request(PROMPT, "France", "Kuala Lumpur", "Paris")
    edit = editing.fine(tiny, request, k=3, epochs=3, lr=0.05, frozen_last=1)
    neurons = edit.info["neurons"]
    assert len(neurons) == 2 * 3  # 3 per target token
    assert edit.n_params == len(set(neurons)) * 16 and edit.info["steps"] >= 1
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


def test_fine_stops_once_every_target_token_is_likely(tiny):
    request = editing.Request(PROMPT, "France", "Kuala Lumpur", "Paris")
    edit = editing.fine(tiny, request, k=2, epochs=3, frozen_last=1, early_stop=1e-9)
    assert edit.info["steps"] == 1  # the least likely token is already above 1e-9


def test_paired_arms_of_the_edits():
    records = [
        {"case": c, "method": m, "a": v, "b": w}
        for c, (r, f) in enumerate([((0.0, 1.0), (1.0, 1.0)), ((0.0, 0.5), (0.0, np.nan))] * 10)
        for m, (v, w) in (("ROME", r), ("FiNE", f))
    ]
    fine_a, rome_a = fine.paired(records, ["a"])
    assert len(fine_a) == len(rome_a) == 20 and fine_a[0] == 1.0 and rome_a[0] == 0.0
    fine_b, rome_b = fine.paired(records, ["b"])  # the edits without b's probes are left out
    assert len(fine_b) == 10 and (fine_b == 1.0).all() and (rome_b == 1.0).all()
    fine_ab, rome_ab = fine.paired(records, ["a", "b"])  # per edit, over the probes it has
    assert len(fine_ab) == 20 and fine_ab[:2].tolist() == [1.0, 0.0]
    assert rome_ab[:2].tolist() == [0.5, 0.25]
    gain = stats.paired_difference(fine_a, rome_a)
    assert gain.value == 0.5 and 0 < gain.low < 0.5 < gain.high and gain.n == 20
    same = stats.paired_difference(fine_b, rome_b)
    assert (same.value, same.low, same.high) == (0.0, 0.0, 0.0)


def test_timed_edits_are_reused():
    made = []

    def editor(request):
        made.append(request)
        return editing.Edit("X", request, [])

    requests = [editing.Request(f"{s} is in", s, "Rome") for s in ("Nice", "Lyon", "Metz")]
    timing = fine.timed_edits(requests[:2], {"X": editor})
    again = fine.reusing(timing, requests[:2], {"X": editor})["X"]
    assert again(requests[0]) is timing["X"].results[0] and len(made) == 2
    again(requests[2])
    assert len(made) == 3


def test_editor_edits_and_resets(tiny, facts, snapshot, changed):
    editors = {"FiNE": lambda r: editing.fine(tiny, r, k=2, epochs=2, frozen_last=1)}
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


def test_claims_name_the_notebook_claims():
    assert list(fine.CLAIMS) == [
        "edits-made",
        "generalisation-comparable",
        "neighbourhood-better",
        "relation-better",
        "distract-better",
        "located-beats-random",
        "faster",
    ]
    assert fine.CLAIMS["edits-made"].kind == "setup"
    assert all(
        spec.rests_on == ("edits-made",) for cid, spec in fine.CLAIMS.items() if cid != "edits-made"
    )
    gaps = {cid for cid, spec in fine.CLAIMS.items() if spec.gap is not None}
    assert gaps == {"edits-made", "neighbourhood-better", "distract-better"}
    assert fine.CLAIMS["edits-made"].rule.decide(0.81, 0.99) == "holds"
    assert fine.CLAIMS["edits-made"].rule.decide(0.79, 0.99) == "inconclusive"
    assert fine.CLAIMS["generalisation-comparable"].rule.decide(-0.09, 0.1) == "holds"
    assert not core.check_bound(fine.CLAIMS["faster"].rule, {"wall": 0.5, "CPU": 1.2})
    assert core.check_bound(fine.CLAIMS["faster"].rule, {"wall": 0.5, "CPU": 0.6})
    for cid in (  # the interval must exclude 0
        "neighbourhood-better",
        "relation-better",
        "distract-better",
        "located-beats-random",
    ):
        rule = fine.CLAIMS[cid].rule
        assert isinstance(rule, core.Margin) and rule.above == 0
        assert rule.decide(0.01, 0.2) == "holds" and rule.decide(-0.01, 0.2) == "inconclusive"
        assert rule.decide(-0.2, -0.01) == "contradicted"


def test_random_neurons_keep_the_layers_and_the_count(tiny):
    per_token, _ = editing.locate(tiny, PROMPT, " Kuala Lumpur", k=3, frozen_last=1)
    drawn = editing.random_neurons(per_token, 32, np.random.default_rng(0))
    assert [len(t) for t in drawn] == [len(t) for t in per_token]
    assert [[l for l, _ in t] for t in drawn] == [[l for l, _ in t] for t in per_token]
    assert all(0 <= i < 32 for t in drawn for _, i in t)
    request = editing.Request(PROMPT, "France", "Lima", "Paris")
    edit = editing.fine(tiny, request, k=2, epochs=2, random=np.random.default_rng(0))
    assert edit.method == "random" and len(edit.info["neurons"]) == 2 * len(tiny.tokens(" Lima"))


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
    fig = fine.c_sweep_figure({2000: sweep[1], 50000: sweep[2]}, ["efficacy"])
    assert list(fig.data[0].x) == [2000, 50000] and list(fig.data[0].y) == [0.75, 1.0]
    fig = fine.edits_figure(sweep[2], ["efficacy"], 2)
    assert [t.name for t in fig.data] == ["a", "b"] and "k = 2" in fig.layout.title.text
