"""Unit tests of the SADR chapter's module, iclr25.chapters.sadr: the attention-weight
sites it reads (putting a model's own weights back is the identity), the hinge and the
attention term, SADR's v* (ROME's when the term is off), the random edit of ROME's size,
the neutral probes, the restored margins, the bad inputs, the figures and the registry,
on a small random model."""

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


def test_weight_sites_read_and_put_back_are_the_identity(tiny):
    batch = llm.encode(tiny, [PROMPT, DISTRACT])  # left-padded: the mask matters
    sites = sadr.weight_sites(range(4))
    with torch.no_grad():
        plain = tiny.model(**batch.inputs()).logits
        with llm.reading(tiny, sites) as seen:
            tiny.model(**batch.inputs())
        kept = {s: w.clone() for s, w in seen.items()}
        with llm.writing(tiny, {s: (lambda w, k=kept[s]: k) for s in sites}):
            restored = tiny.model(**batch.inputs()).logits
    assert tiny.model.config._attn_implementation == "sdpa"  # restored on exit
    assert seen["attn_weights", 0].shape == (
        2,
        2,
        batch.input_ids.shape[1],
        batch.input_ids.shape[1],
    )
    real = batch.attention_mask.bool()
    torch.testing.assert_close(restored[real], plain[real], atol=1e-5, rtol=1e-5)


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
    (unedited,) = editing.counterfact_margins(tiny, [case])
    for part in sadr.RESTORED:
        restored = sadr.restored_margins(tiny, edit, probes, 1, part)
        assert restored.shape == (1,) and np.isfinite(restored).all()
        # with no edit (a zero change), restoring any part is the identity
        zero = editing.Edit("none", REQUEST, [editing.Change(1, torch.zeros(16, 32))])
        got = sadr.restored_margins(tiny, zero, probes, 1, part)
        assert got == pytest.approx(unedited["DNS"], abs=1e-5)


def test_authors_editors_undo_one_setting_each(tiny, tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR25_CACHE", str(tmp_path))
    C = editing.regularised(torch.eye(32))
    prefixes = ("", "The the. ")
    again = sadr.authors_editors(
        tiny, [REQUEST], 1, C, steps=2, attn_weight=0.01, prefixes=prefixes, config={}
    )
    assert tuple(again) == sadr.AUTHORS
    expected = {
        "authors' steps": {"steps": sadr.SADR_STEPS},
        "sampled prefixes": {"steps": 2, "prefixes": prefixes},
    }
    for name, editors in again.items():
        assert set(editors) == {"ROME", "SADR"}
        rome = editing.rome(tiny, REQUEST, 1, C, **expected[name])
        own = sadr.sadr(tiny, REQUEST, 1, C, attn_weight=0.01, **expected[name])
        for made, direct in ((editors["ROME"](REQUEST), rome), (editors["SADR"](REQUEST), own)):
            assert made.info["steps"] == direct.info["steps"]
            torch.testing.assert_close(made.changes[0].delta, direct.changes[0].delta)


def test_restoring_the_subject_value_undoes_the_update_there(tiny):
    # an update that only moves keys at the subject's last token: restoring the subject's
    # value there gives back the unedited margins
    C = editing.regularised(torch.eye(32))
    edit = editing.rome(tiny, REQUEST, 1, C, steps=5)
    probes = [(DISTRACT, " Tokyo", " Rome")]
    case = editing.Case(
        editing.Fact("France", "capital", "Paris"), REQUEST, (), (), (), ((DISTRACT, " Tokyo"),), ()
    )
    (unedited,) = editing.counterfact_margins(tiny, [case])
    with editing.applied(tiny, edit):
        (edited,) = editing.counterfact_margins(tiny, [case])
    value = sadr.restored_margins(tiny, edit, probes, 1, "subject value")
    assert abs(value[0] - unedited["DNS"][0]) < abs(edited["DNS"][0] - unedited["DNS"][0])


def test_random_edit_has_romes_distance_and_key(tiny):
    C = editing.regularised(torch.eye(32))
    edit = editing.rome(tiny, REQUEST, 1, C, steps=5)
    control = sadr.random_edit(tiny, edit, C, seed=3)
    W = llm.down_proj(tiny, 1).weight.detach()
    v = W @ edit.info["k_star"]
    size = float((edit.info["v_star"] - v).norm())
    assert float((control.info["v_star"] - v).norm()) == pytest.approx(size, rel=1e-4)
    torch.testing.assert_close(control.info["k_star"], edit.info["k_star"])
    assert control.method == "random v*"
    again = sadr.random_edit(tiny, edit, C, seed=3)
    torch.testing.assert_close(again.info["v_star"], control.info["v_star"])


def test_neutral_probes(facts):
    case = editing.Case(
        editing.Fact("France", "capital", "Paris"),
        REQUEST,
        (),
        (("The capital of Japan is the city of", " Tokyo"),),
        (),
        (),
        (),
    )
    assert sadr.neutral_probes(case) == [
        ("France is famous. The capital of Japan is the city of", " Tokyo", " Rome")
    ]


def test_subject_attention_and_drift_helpers(tiny):
    a = sadr.subject_attention(tiny, [DISTRACT, "France is a"], "France")
    assert a.shape == (2, 4, 2) and float(a.min()) >= 0 and float(a.max()) <= 1
    before = np.array([[0.1, 0.3], [0.2, 0.2]])
    after = np.array([[0.35, 0.1], [0.1, 0.25]])
    assert sadr.heads_above(before, after).tolist() == [[True, False], [False, True]]
    shares = sadr.recovered(np.array([0.0, 1.0]), np.array([-2.0, 0.9]), np.array([-1.0, 0.9]))
    assert shares.tolist() == [0.5]
    assert len(sadr.recovered(np.zeros(2), np.zeros(2), np.zeros(2))) == 0


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
        sadr.restored_margins(tiny, zero, [("The capital of Japan is", " Tokyo", " Rome")], 1)
    with pytest.raises(ValueError, match="accepted: attention, hinge heads, subject value"):
        sadr.restored_margins(tiny, zero, [(DISTRACT, " Tokyo", " Rome")], 1, "values")


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
    assert len(fig.data) == 7 and fig.data[3].name == "random v*"


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
    same = sadr.restored_margins(tiny, edit, probes, tiny.n_layers - 1)
    np.testing.assert_allclose(same, edited["DNS"], atol=1e-4)
    (unedited,) = editing.counterfact_margins(tiny, [case])
    assert not np.allclose(edited["DNS"], unedited["DNS"], atol=1e-3)  # the edit moved them


def test_claims_are_decided_by_intervals_against_margins():
    assert list(sadr.CLAIMS) == [
        "rome-edits",
        "sadr-rs",
        "sadr-dns",
        "sadr-keeps-es",
        "sadr-keeps-ps",
        "sadr-keeps-ns",
        "drift",
        "restore-recovers",
        "restore-recovers-neutral",
    ]
    assert sadr.CLAIMS["sadr-rs"].paper == "GPT-J, ROME -> SADR: RS 11.94 -> 27.75 (Table 3)"
    assert sadr.CLAIMS["rome-edits"].kind == "setup"
    for cid, spec in sadr.CLAIMS.items():
        assert isinstance(spec.rule, core.Margin), cid
        assert cid == "rome-edits" or spec.rests_on == ("rome-edits",)
    assert sadr.CLAIMS["sadr-keeps-ps"].rule.decide(-0.05, 0.09) == "holds"
    assert sadr.CLAIMS["sadr-keeps-ns"].rule.decide(-0.05, 0.09) == "inconclusive"
    assert sadr.CLAIMS["drift"].rule.decide(0.5, 3.0) == "holds"
    gaps = {c: s.gap.after_run for c, s in sadr.CLAIMS.items() if s.gap}
    assert gaps == {
        "sadr-rs": True,
        "drift": True,
        "restore-recovers": True,
        "restore-recovers-neutral": False,
    }
