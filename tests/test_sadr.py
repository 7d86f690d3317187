"""Unit tests of the SADR chapter's module, iclr25.chapters.sadr: the recording attention
(equal to sdpa, and the identity when it puts a model's own weights back), the hinge and
the attention term, SADR's v* (ROME's when the term is off), the restored-attention
margins, the bad inputs and the figures, on a small random model."""

import numpy as np
import pytest
import torch

from iclr25 import core, editing, llm
from iclr25.chapters import sadr

PROMPT = "The capital of France is the city of"
REQUEST = editing.Request(PROMPT, "France", "Rome", "Paris")
DISTRACT = "The capital of France is the city of Rome . The capital of Japan is the city of"


@pytest.fixture(scope="module")
def tiny(editing_vocabulary):
    lm = llm.tiny_model(
        editing_vocabulary,
        llm.TinyConfig(n_layers=4, n_heads=2, d_model=16, d_mlp=32, context=64),
        seed=2,
    )
    lm.model.config._attn_implementation = "sdpa"
    return lm


def test_recording_attention_matches_sdpa(tiny):
    batch = llm.encode(tiny, [PROMPT, DISTRACT])  # left-padded: the mask matters
    with torch.no_grad():
        reference = tiny.model(**batch.inputs()).logits
        with sadr.attention(tiny) as weights:
            recorded = tiny.model(**batch.inputs()).logits
    assert tiny.model.config._attn_implementation == "sdpa"  # restored on exit
    assert sorted(weights) == [0, 1, 2, 3]
    assert weights[0].shape == (2, 2, batch.input_ids.shape[1], batch.input_ids.shape[1])
    real = batch.attention_mask.bool()
    torch.testing.assert_close(recorded[real], reference[real], atol=1e-5, rtol=1e-5)
    # each real query's weights sum to 1 and give nothing to padding or the future
    w = weights[2][1]
    torch.testing.assert_close(w[:, real[1]].sum(-1), torch.ones(2, int(real[1].sum())))
    assert float(w.triu(1).abs().max()) == 0


def test_restoring_the_models_own_weights_is_the_identity(tiny):
    batch = llm.encode(tiny, [PROMPT, DISTRACT])
    with torch.no_grad():
        with sadr.attention(tiny) as weights:
            plain = tiny.model(**batch.inputs()).logits
        kept = {l: w.clone() for l, w in weights.items()}
        with sadr.attention(tiny, replace=kept):
            restored = tiny.model(**batch.inputs()).logits
        # and replacing does change the output when the weights differ
        with sadr.attention(tiny, replace={1: kept[1].flip(0)}):
            swapped = tiny.model(**batch.inputs()).logits
    torch.testing.assert_close(restored, plain, atol=0, rtol=0)
    assert not torch.allclose(swapped, plain)


def test_hinge_on_hand_made_tensors():
    p = torch.tensor([[0.1, 0.4, 0.2], [0.3, 0.3, 0.1]])  # [prompt, head]
    q = torch.tensor([[0.5, 0.4, 0.1], [0.2, 0.35, 0.31]])
    mask = sadr.over_attending(p, q)
    assert mask.tolist() == [[True, False, False], [False, True, True]]


def test_attention_loss_is_masked_kl():
    # one layer, one prompt, two heads, query 1 of 2, three keys; subject at key 0
    p = torch.zeros(1, 2, 2, 3)
    p[0, :, 1] = torch.tensor([[0.5, 0.25, 0.25], [0.2, 0.4, 0.4]])
    q = p.clone()
    assert float(sadr.attention_loss({0: p}, {0: q}, [1], [0])) == pytest.approx(0, abs=1e-6)
    q[0, 0, 1] = torch.tensor([0.7, 0.15, 0.15])  # head 0 now above the layer max 0.5
    q[0, 1, 1] = torch.tensor([0.1, 0.45, 0.45])  # head 1 drifts too, but below the max
    eps = 1e-8
    pp, qq = p[0, 0, 1] + eps, q[0, 0, 1] + eps
    kl0 = float((pp * (pp / qq).log()).sum())
    got = float(sadr.attention_loss({0: p}, {0: q}, [1], [0]))
    assert got == pytest.approx(kl0, rel=1e-5)
    pp1, qq1 = p[0, 1, 1] + eps, q[0, 1, 1] + eps
    kl1 = float((pp1 * (pp1 / qq1).log()).sum())
    unhinged = float(sadr.attention_loss({0: p}, {0: q}, [1], [0], hinge=False))
    assert unhinged == pytest.approx(kl0 + kl1, rel=1e-5)


def test_counterfact_accuracy_on_hand_made_margins():
    assert editing.counterfact_accuracy([0.5, -0.1, 0.0, 2.0]) == 0.5  # a tie is a miss
    assert np.isnan(editing.counterfact_accuracy([]))


def test_sadr_v_starts_at_zero_and_is_rome_without_the_term(tiny):
    layer = 1
    v, k, taken, history = sadr.sadr_v(tiny, REQUEST, layer, steps=6)
    assert history[0] == 0.0 and len(history) == taken
    assert v.shape == (16,) and k.shape == (32,)
    v0, k0, taken0, _ = sadr.sadr_v(tiny, REQUEST, layer, steps=6, attn_weight=0.0)
    v_rome, k_rome, taken_rome = editing.rome_v(tiny, REQUEST, layer, steps=6)
    assert taken0 == taken_rome
    torch.testing.assert_close(k0, k_rome)
    torch.testing.assert_close(v0, v_rome, atol=1e-4, rtol=1e-4)


def test_sadr_edit_and_restored_margins(tiny):
    C = editing.regularised(torch.eye(32))
    edit = sadr.sadr(tiny, REQUEST, 1, C, steps=3)
    assert edit.method == "SADR" and edit.info["steps"] <= 3
    assert [c.layer for c in edit.changes] == [1]
    probes = [(DISTRACT, " Tokyo", " Rome")]
    case = editing.Case(
        editing.Fact("France", "capital", "Paris"),
        REQUEST,
        (),
        (),
        (),
        ((DISTRACT, " Tokyo"),),
        (),
    )
    with editing.applied(tiny, edit):
        (edited,) = editing.counterfact_margins(tiny, [case])
    restored = sadr.restore_attention(tiny, edit, probes, 1)
    # the attention of the layers above the edit put back: the layer below is unchanged,
    # so restoring every layer above is the unedited model's attention everywhere
    assert restored.shape == (1,) and np.isfinite(restored).all()
    (unedited,) = editing.counterfact_margins(tiny, [case])
    assert edited["DNS"].shape == (1,)
    # with the edit restored away (no edit: a zero change), restoring is the identity
    zero = editing.Edit("none", REQUEST, [editing.Change(1, torch.zeros(16, 32))])
    assert sadr.restore_attention(tiny, zero, probes, 1) == pytest.approx(unedited["DNS"], abs=1e-5)


def test_subject_attention_and_drift_helpers(tiny):
    a = sadr.subject_attention(tiny, [DISTRACT, "France is a"], "France")
    assert a.shape == (2, 4, 2) and float(a.min()) >= 0 and float(a.max()) <= 1
    before = np.array([[0.1, 0.3], [0.2, 0.2]])
    after = np.array([[0.35, 0.1], [0.1, 0.25]])
    assert sadr.heads_above(before, after).tolist() == [[True, False], [False, True]]
    share, n = sadr.recovered(np.array([0.0, 1.0]), np.array([-2.0, 0.9]), np.array([-1.0, 0.9]))
    assert (share, n) == (0.5, 1)
    assert np.isnan(sadr.recovered(np.zeros(2), np.zeros(2), np.zeros(2))[0])


def test_bad_inputs_are_clear_errors(tiny):
    with pytest.raises(ValueError, match="SADR's weight must be >= 0"):
        sadr.sadr_v(tiny, REQUEST, 1, attn_weight=-1.0)
    with pytest.raises(ValueError, match="at least one step"):
        sadr.sadr_v(tiny, REQUEST, 1, steps=0)
    with pytest.raises(ValueError, match="layer 9 is out of range"):
        sadr.sadr_v(tiny, REQUEST, 9)
    with pytest.raises(ValueError, match="does not contain the edited subject"):
        sadr.subject_attention(tiny, ["The capital of Japan is the city of"], "France")
    zero = editing.Edit("none", REQUEST, [editing.Change(1, torch.zeros(16, 32))])
    with pytest.raises(ValueError, match="does not contain the edited subject"):
        sadr.restore_attention(tiny, zero, [("The capital of Japan is", " Tokyo", " Rome")], 1)


def test_figures():
    ours = {m: {s: 0.5 for s in editing.COUNTERFACT} for m in ("unedited", "ROME", "SADR")}
    fig = sadr.metrics_figure(ours, 4)
    assert len(fig.data) == 6 and fig.data[3].y[0] is None  # the paper's unedited ES
    before = np.array([[0.1, 0.3], [0.2, 0.2]])
    fig = sadr.drift_figure(before, {"ROME": before + 0.1, "SADR": before}, [2, 3])
    assert "3 heads above" in fig.data[0].name and "0 heads above" in fig.data[1].name
    fig = sadr.margins_figure(["a", "b"], {"unedited": [1, 2], "ROME": [0, 1]}, "t")
    assert len(fig.data) == 2 and list(fig.data[0].hovertext) == ["a", "b"]
    assert list(fig.data[0].x) == ["probe 1", "probe 2"]
    fig = sadr.heatmap_figure(before, before + 0.1, "t")
    assert len(fig.data) == 2 and fig.data[0].zmax == pytest.approx(0.4)


def test_metrics_figure_with_the_control():
    ours = {m: {s: 0.5 for s in editing.COUNTERFACT} for m in sadr.METHOD_COLOURS}
    fig = sadr.metrics_figure(ours, 6)
    assert len(fig.data) == 7 and fig.data[3].name == "control"


def test_only_facts_with_text_before_the_subject_are_edited():
    assert sadr.mid_sentence(editing.Fact("France", "capital", "Paris"))
    assert not sadr.mid_sentence(editing.Fact("France", "continent", "Europe"))


def test_distract_prompt(facts):
    got = sadr.distract_prompt(REQUEST, "capital", facts)
    assert got == f"{PROMPT} Rome. The capital of Japan is the city of"
    with pytest.raises(ValueError, match="no other subject"):
        sadr.distract_prompt(REQUEST, "capital", facts[:2])


def test_restoring_nothing_gives_the_edited_margins(tiny):
    C = editing.regularised(torch.eye(32))
    edit = editing.rome(tiny, REQUEST, 1, C, steps=5)
    probes = [(DISTRACT, " Tokyo", " Rome"), (DISTRACT + " Tokyo .", " Paris", " Rome")]
    case = editing.Case(
        editing.Fact("France", "capital", "Paris"),
        REQUEST,
        (),
        (),
        (),
        tuple((q, r) for q, r, _ in probes),
        (),
    )
    with editing.applied(tiny, edit):
        (edited,) = editing.counterfact_margins(tiny, [case])
    # no layer above the last one: nothing is restored
    same = sadr.restore_attention(tiny, edit, probes, tiny.n_layers - 1)
    np.testing.assert_allclose(same, edited["DNS"], atol=1e-4)
    (unedited,) = editing.counterfact_margins(tiny, [case])
    assert not np.allclose(edited["DNS"], unedited["DNS"], atol=1e-3)  # the edit moved them


def test_claims_quote_the_papers_table_and_decide_by_the_old_bounds():
    assert list(sadr.CLAIMS) == ["sadr-rs", "sadr-dns", "sadr-keeps", "drift", "restore-recovers"]
    assert sadr.CLAIMS["sadr-rs"].paper == "GPT-J, ROME -> SADR: RS 11.94 -> 27.75 (Table 3)"
    keeps = sadr.CLAIMS["sadr-keeps"].paper
    assert keeps.startswith("GPT-J, ROME -> SADR: ES 99.88 -> 99.76, PS 99.58 -> 96.36")
    assert all(f"{sadr.PAPER_GPTJ['SADR'][s]}" in keeps for s in ("ES", "PS", "NS"))
    rule = {cid: spec.rule for cid, spec in sadr.CLAIMS.items()}
    assert core.check_bound(rule["sadr-keeps"], {"ES": 0.05, "PS": 0.1, "NS": 0.0})
    assert not core.check_bound(rule["sadr-keeps"], {"ES": 0.0, "PS": 0.11, "NS": 0.0})
    assert not core.check_bound(rule["sadr-dns"], {"margin": 0.2, "accuracy": -0.01})
    assert not core.check_bound(rule["drift"], 0.0) and core.check_bound(rule["drift"], 1e-4)
    assert core.check_bound(rule["restore-recovers"], 0.3)
    gap = sadr.CLAIMS["restore-recovers"].gap
    assert gap.after_run and [c for c, s in sadr.CLAIMS.items() if s.gap] == ["restore-recovers"]
