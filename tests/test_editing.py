"""Unit tests of the shared editing package, iclr25.editing: edit requests, cases, the
metrics on hand-made cases, and ROME's update on a small random model (rank one, one
layer, undone exactly)."""

import math

import numpy as np
import pytest
import torch

from iclr25 import editing, llm
from iclr25.editing import rome_method


@pytest.fixture(scope="module")
def tiny(editing_vocabulary):
    return llm.tiny_model(
        editing_vocabulary,
        llm.TinyConfig(n_layers=3, n_heads=2, d_model=16, d_mlp=32, context=64),
        seed=0,
    )


def test_bad_requests_are_clear_errors():
    with pytest.raises(ValueError, match="subject is empty"):
        editing.Request("The capital of France is", " ", "Rome")
    with pytest.raises(ValueError, match="does not occur in the prompt"):
        editing.Request("The capital of France is", "Spain", "Rome")
    with pytest.raises(ValueError, match="equals the old one"):
        editing.Request("The capital of France is", "France", "Paris", old="Paris")
    with pytest.raises(ValueError, match="new object is empty"):
        editing.Request("The capital of France is", "France", "")
    assert editing.Request("The capital of France is", "France", "Rome ").target == " Rome"


def test_cases_hold_the_right_prompts(facts):
    cases = editing.make_cases(facts, 4, np.random.default_rng(0), n_neighbours=2)
    assert len(cases) == 4 and all(
        c.fact.subject in ("France", "Japan") for c in cases
    )  # relation probes first
    for c in cases:
        assert c.request.new != c.fact.object and c.request.new in editing.objects(c.fact.relation)
        assert all(c.fact.subject not in p for p, _ in c.neighbourhood)
        assert all(
            c.fact.subject in p and c.fact.relation != r
            for (p, _), r in zip(
                c.relation,
                [
                    f.relation
                    for f in facts
                    if f.subject == c.fact.subject and f.relation != c.fact.relation
                ],
            )
        )
        assert [o for _, o in c.distract] == [o for _, o in c.neighbourhood]
        assert all(p.startswith(f"{c.request.prompt} {c.request.new}. ") for p, _ in c.distract)
    with pytest.raises(ValueError, match="only 7 known facts"):
        editing.make_cases(facts, 8, np.random.default_rng(0))


def test_cases_rewrite_only_the_facts_asked_for(facts):
    def mid(f):
        return f.relation != "capital"

    cases = editing.make_cases(facts, 3, np.random.default_rng(0), rewritable=mid)
    assert all(c.fact.relation != "capital" for c in cases)
    # every fact is still a relation probe, and the first draws are the unfiltered ones
    plain = editing.make_cases(facts, 7, np.random.default_rng(0))
    assert [c.fact for c in cases] == [c.fact for c in plain if mid(c.fact)][:3]
    assert any(
        o
        == next(f.object for f in facts if f.subject == c.fact.subject and f.relation == "capital")
        for c in cases
        for _, o in [(p, o.strip()) for p, o in c.relation]
    )
    with pytest.raises(ValueError, match="can be rewritten"):
        editing.make_cases(facts, 7, np.random.default_rng(0), rewritable=mid)


def test_metrics_on_hand_made_cases():
    assert editing.token_accuracy([torch.tensor([1, 2]), torch.tensor([3])], [[1, 5], [3]]) == 0.75
    assert (
        editing.agreement(
            [torch.tensor([1, 2]), torch.tensor([4])], [torch.tensor([1, 2]), torch.tensor([5])]
        )
        == 0.5
    )
    assert math.isnan(editing.agreement([], []))
    assert editing.n_gram_entropy("a a a a a a") == 0.0
    distinct = "one two three four five six"  # 5 distinct bigrams, 4 distinct trigrams
    assert editing.n_gram_entropy(distinct) == pytest.approx((2 / 3 * math.log2(5) + 4 / 3 * 2) / 2)
    assert editing.n_gram_entropy("a b a b a b") < editing.n_gram_entropy(distinct)


def test_probes_predict_the_object_tokens(tiny, facts):
    probes = [
        ("The capital of France is the city of", " Paris"),
        ("The capital of Japan is the city of", " Tokyo"),
    ]
    batch, columns, objs = editing.probe_batch(tiny, probes)
    assert objs == [tiny.tokens(" Paris"), tiny.tokens(" Tokyo")]
    logits = tiny.model(**batch.inputs()).logits
    predicted = editing.predict(tiny, probes)
    assert [p.tolist() for p in predicted] == [
        logits[i, c].argmax(-1).tolist() for i, c in enumerate(columns)
    ]
    assert set(editing.known_facts(tiny, facts)) <= set(facts)


def test_subject_span(tiny):
    prompt = "The capital of the Czech Republic is the city of"
    first, last = editing.subject_span(tiny, prompt, "the Czech Republic")
    assert tiny.tokens(prompt)[first : last + 1] == tiny.tokens("the Czech Republic")


def test_rome_is_rank_one_in_its_layer_and_undone_exactly(tiny, snapshot, changed):
    request = editing.Request("The capital of France is the city of", "France", "Rome", "Paris")
    C = editing.regularised(torch.eye(32))
    edit = editing.rome(tiny, request, 1, C, steps=3)
    (change,) = edit.changes
    assert change.layer == 1 and change.columns is None and edit.n_params == 16 * 32
    assert torch.linalg.matrix_rank(change.delta) == 1
    before = snapshot(tiny)
    handle = editing.Applied(tiny, edit)
    assert changed(tiny, before) == ["model.layers.1.mlp.down_proj.weight"]
    handle.restore()
    assert changed(tiny, before) == []
    assert all(
        p.requires_grad for p in tiny.model.parameters()
    )  # the optimisation froze them only inside


def test_rome_writes_v_star_for_k_star(tiny):
    request = editing.Request("The capital of Japan is the city of", "Japan", "Lima", "Tokyo")
    v_star, k_star, _ = editing.rome_v(tiny, request, 0, steps=2)
    C = editing.regularised(torch.eye(32))
    edit = editing.rome(tiny, request, 0, C, steps=2)
    with editing.applied(tiny, edit):
        W = llm.down_proj(tiny, 0).weight
        torch.testing.assert_close(W @ k_star, v_star, atol=1e-4, rtol=1e-4)


def test_rome_as_its_code_writes_v_star_for_the_plain_key(tiny):
    request = editing.Request("The capital of Japan is the city of", "Japan", "Lima", "Tokyo")
    C = editing.regularised(torch.eye(32) + 0.1 * torch.ones(32, 32))
    edit = editing.rome(tiny, request, 0, C, steps=2)
    v_star, k_star = edit.info["v_star"], edit.info["k_star"]
    key = editing.plain_key(tiny, request, 0)
    assert not torch.allclose(key, k_star)  # the prefixes move the mean key
    plain = editing.rome_update(tiny, request, 0, C, v_star, k_star, key)
    same = editing.rome_update(tiny, request, 0, C, v_star, k_star, k_star)
    torch.testing.assert_close(same.changes[0].delta, edit.changes[0].delta)
    direction = torch.linalg.solve(C, k_star)  # u from the mean key in both
    for written, k in ((plain, key), (edit, k_star)):
        delta = written.changes[0].delta  # (v* - W k) u^T / (k^T u): rows along u
        along = torch.outer(delta @ direction, direction) / (direction @ direction)
        torch.testing.assert_close(delta, along, atol=1e-5, rtol=1e-4)
        with editing.applied(tiny, written):
            W = llm.down_proj(tiny, 0).weight
            torch.testing.assert_close(W @ k, v_star, atol=1e-4, rtol=1e-4)


def test_rome_kl_read_at_the_subject_changes_v_star(tiny):
    request = editing.Request("The capital of Japan is the city of", "Japan", "Lima", "Tokyo")
    at_end, _, _ = editing.rome_v(tiny, request, 0, steps=3)
    again, _, _ = editing.rome_v(tiny, request, 0, steps=3)
    at_subject, _, _ = editing.rome_v(tiny, request, 0, steps=3, kl_at_subject=True)
    torch.testing.assert_close(again, at_end)
    assert not torch.allclose(at_subject, at_end)


def test_context_prefixes_are_rome_s_sampled_templates(tiny):
    prefixes = editing.context_prefixes(tiny, seed=0)
    assert prefixes[0] == "" and len(prefixes) == 1 + sum(n for _, n in editing.CONTEXT_LENGTHS)
    assert all(p.endswith(". ") and "{" not in p and "}" not in p for p in prefixes[1:])
    openings = editing.CONTEXT_OPENINGS
    assert all(p.startswith(openings[i % len(openings)]) for i, p in enumerate(prefixes[1:]))
    assert editing.context_prefixes(tiny, seed=0) == prefixes  # cached


def test_causal_trace_and_layer_choice(tiny, facts):
    effects = editing.causal_trace(tiny, facts[:2], window=2, n_noise=2)
    assert effects.shape == (3,) and np.isfinite(effects).all()
    assert (
        editing.trace_layer(np.array([9.0, 0.1, 0.5, 0.2, 0.3]), window=2) == 2
    )  # layer 0 excluded
    assert editing.trace_layer(np.array([9.0, 9.0, 0.1, 0.2, 0.4, 0.3]), window=4) == 4


def test_run_cases_and_summary(tiny, facts, snapshot, changed):
    cases = editing.make_cases(facts, 2, np.random.default_rng(1), n_neighbours=1)
    C = editing.regularised(torch.eye(32))
    before = snapshot(tiny)
    records, edits = editing.run_cases(
        tiny,
        cases,
        {"ROME": lambda r: editing.rome(tiny, r, 1, C, steps=1)},
        n_tokens=4,
        progress=False,
    )
    assert changed(tiny, before) == []  # every edit undone
    assert len(records) == len(edits) == 2
    assert all(0 <= r[m] <= 1 for r in records for m in ("efficacy", "neighbourhood", "relation"))
    out = editing.summary(records)
    assert out["ROME"]["params"] == 16 * 32 and out["ROME"]["seconds"] > 0


def test_second_moment_is_the_mean_outer_product_of_keys(tiny, tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR25_CACHE", str(tmp_path))
    texts = ["The capital of France is the city of Paris", "The people of Japan"]
    C = editing.second_moment(tiny, 1, texts)
    keys = torch.cat([editing.keys_at(tiny, 1, [t]) for t in texts])
    assert keys.shape == (len(tiny.tokens(texts[0])) + len(tiny.tokens(texts[1])), 32)
    torch.testing.assert_close(C, keys.T @ keys / len(keys))


def test_kept_edits_are_made_once_and_come_back_whole(tmp_path, monkeypatch):
    from types import SimpleNamespace

    monkeypatch.setenv("ICLR25_CACHE", str(tmp_path))
    lm = SimpleNamespace(name="toy")
    requests = [editing.Request(f"{s} is in", s, "Rome", "Paris") for s in ("Nice", "Lyon")]
    made = []

    def editor(request):
        made.append(request)
        delta = torch.full((3, 2), float(len(made)))
        info = {"neurons": [(1, len(made))], "steps": 4}
        return editing.Edit("FiNE", request, [editing.Change(1, delta, [0, 2])], 0.5, info)

    first = editing.kept_edits(lm, requests, {"FiNE": editor}, {"k": 2})
    again = editing.kept_edits(lm, requests, {"FiNE": editor}, {"k": 2})
    assert len(made) == 2  # the second call made nothing
    for request, n in zip(requests, (1, 2)):
        a, b = first["FiNE"](request), again["FiNE"](request)
        assert a.request == b.request == request and b.method == "FiNE"
        assert torch.equal(b.changes[0].delta, torch.full((3, 2), float(n)))
        assert (b.changes[0].layer, b.changes[0].columns, b.seconds) == (1, [0, 2], 0.5)
        assert [tuple(x) for x in b.info["neurons"]] == [(1, n)] and b.info["steps"] == 4
    editing.kept_edits(lm, requests, {"FiNE": editor}, {"k": 3})  # another config: made anew
    assert len(made) == 4


def test_second_moments_cache_key_and_running_estimates(tiny, tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR25_CACHE", str(tmp_path))
    texts = ["The capital of France is the city of Paris", "The people of Japan"] * 3
    sampled = []

    def sample(lm, **kwargs):
        sampled.append(kwargs)
        return texts

    monkeypatch.setattr(rome_method, "sample_texts", sample)  # where second_moments uses it
    args = dict(n_texts=6, n_tokens=8, seed=0)
    out = editing.second_moments(tiny, 1, sizes=(5, 12, 10_000), batch_size=4, **args)
    keys = torch.cat([editing.keys_at(tiny, 1, [t]) for t in texts])
    assert sorted(out) == [5, 12, len(keys)]  # a size the sample does not reach is left out
    for n, C in out.items():  # each C is the mean outer product of the first n keys
        torch.testing.assert_close(C, keys[:n].T @ keys[:n] / n, atol=1e-5, rtol=1e-5)
    assert sampled == [{**args, "progress": False}]
    again = editing.second_moments(tiny, 1, sizes=(12, 5, 10_000), batch_size=2, **args)
    assert len(sampled) == 1 and sorted(again) == sorted(out)  # from the cache
    key = editing.moments_config(tiny, 1, sizes=(5, 12), **args)
    assert key == editing.moments_config(tiny, 1, sizes=(12, 5), **args)
    for changed in (
        editing.moments_config(tiny, 2, sizes=(5, 12), **args),  # another layer
        editing.moments_config(tiny, 1, sizes=(5,), **args),
        editing.moments_config(tiny, 1, sizes=(5, 12), **{**args, "n_texts": 7}),
        editing.moments_config(tiny, 1, sizes=(5, 12), **{**args, "seed": 1}),
    ):
        assert changed != key
    assert key["model"] == tiny.name and key["layer"] == 1


def test_rome_update_reuses_v_and_k(tiny):
    request = editing.Request("The capital of Japan is the city of", "Japan", "Lima", "Tokyo")
    C = editing.regularised(torch.eye(32))
    edit = editing.rome(tiny, request, 0, C, steps=2)
    again = editing.rome_update(tiny, request, 0, C, edit.info["v_star"], edit.info["k_star"])
    torch.testing.assert_close(again.changes[0].delta, edit.changes[0].delta)
    other = editing.rome_update(
        tiny,
        request,
        0,
        2 * C + torch.diag(torch.arange(32.0)),
        edit.info["v_star"],
        edit.info["k_star"],
    )
    with editing.applied(tiny, other):  # another C: still W' k* = v*
        W = llm.down_proj(tiny, 0).weight
        torch.testing.assert_close(
            W @ edit.info["k_star"], edit.info["v_star"], atol=1e-4, rtol=1e-4
        )


def test_counterfact_probes_margins_and_accuracy(tiny, facts):
    (case,) = editing.make_cases(facts, 1, np.random.default_rng(0), n_neighbours=2)
    groups = editing.counterfact_probes(case)
    new, old = case.request.target, " " + case.fact.object
    assert groups["ES"] == [(case.request.prompt, new, old)]
    assert all((r, w) == (new, old) for _, r, w in groups["PS"])
    for kind, probes in (("NS", case.neighbourhood), ("RS", case.relation), ("DNS", case.distract)):
        assert groups[kind] == [(p, o, new) for p, o in probes]
    # the mean per-token NLL, computed directly
    prompt, obj = "The capital of France is the city of", " Kuala Lumpur"
    ids = tiny.tokens(prompt + obj)
    with torch.no_grad():
        logp = tiny.model(input_ids=torch.tensor([ids])).logits[0].log_softmax(-1)
    n = len(tiny.tokens(obj))
    want = -np.mean([float(logp[len(ids) - n - 1 + j, ids[len(ids) - n + j]]) for j in range(n)])
    got = editing.mean_nll(tiny, [(prompt, obj), (prompt, " Rome")])
    assert got[0] == pytest.approx(want, rel=1e-4)
    (margins,) = editing.counterfact_margins(tiny, [case])
    p, r, w = groups["ES"][0]
    nll = editing.mean_nll(tiny, [(p, r), (p, w)])
    assert margins["ES"][0] == pytest.approx(nll[1] - nll[0], rel=1e-4, abs=1e-5)
    assert {k: len(v) for k, v in margins.items()} == {k: len(v) for k, v in groups.items()}
    assert editing.counterfact_accuracy([0.5, -0.1, 0.0, 2.0]) == 0.5  # a tie is a miss
    assert math.isnan(editing.counterfact_accuracy([]))
