"""iclr25.chapters.hyperdas: the RAVEL-style data, the subspace, the bidding and its
null option, the interchange against activation patching (mcqa.patch) and pyvene, and
the one-line errors."""

import numpy as np
import pytest
import torch

from iclr25.chapters import hyperdas as H
from iclr25.chapters import mcqa


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR25_CACHE", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def world():
    return H.tiny_world(12, 0)


@pytest.fixture(scope="module")
def lm(world):
    torch.manual_seed(0)
    model = H.llm.tiny_model(H.vocabulary(world), seed=0)
    for q in model.model.parameters():
        q.requires_grad_(False)
    return model


def test_examples_follow_the_official_generator(world):
    rng = np.random.default_rng(0)
    xs = H.make_examples(world, world.entities, (0, 1), 200, rng)
    assert sum(x.cause for x in xs) == 100
    for x in xs:
        assert x.base in x.base_prompt and x.source in x.source_prompt
        word = H.INSTRUCTION_WORDS[x.attribute]
        assert x.instruction == f"{x.base} to {x.source} {word}"
        if x.cause:
            assert x.label == world.value(x.attribute, x.source)
            assert world.value(x.attribute, x.base) != x.label
        else:
            assert x.asked != x.attribute and x.label == world.value(x.asked, x.base)
            assert world.value(x.asked, x.source) != x.label
    train, test = H.split(world, 60, 30, 0)
    assert not {x.base for x in train} & {x.base for x in test}
    held = {t.format(x.base) for x in test for t in world.templates[x.asked][2:]}
    assert all(x.base_prompt in held for x in test)


def test_instructions_use_only_words_of_the_targets_corpus(world):
    corpus = set(" ".join(H.world_texts(world)).split())
    x = H.make_examples(world, world.entities, (0, 1), 10, np.random.default_rng(0))[0]
    for a, word in H.INSTRUCTION_WORDS.items():
        assert word in " ".join(world.templates[a])
        assert set(x.instruction.split()[:-1] + [word]) <= corpus


def test_mismatched_examples_name_one_city_and_take_the_source_from_another(world):
    rng = np.random.default_rng(0)
    xs = H.make_examples(world, world.entities, (0, 1), 40, rng)
    moved = H.mismatched(world, xs, rng)
    assert 0 < len(moved) <= sum(x.cause for x in xs)
    for m in moved:
        assert m.cause and m.named != m.source and m.source in m.source_prompt
        assert m.instruction.split()[2] == m.named  # the instruction names e'
        assert m.label == world.value(m.attribute, m.source)
        values = {world.value(m.attribute, c) for c in (m.base, m.named, m.source)}
        assert len(values) == 3


def test_edited_layer_is_the_best_entity_das_on_training_cities_not_layer_0():
    fit = np.zeros((3, 4, 3))  # [attribute, layer, position]
    fit[:, 0, 0], fit[:, 2, 0], fit[:, 3, 2] = 0.9, 0.7, 0.95
    assert H.edit_layer({"train_disentangle": fit}, [0, 1, 2, 4]) == 2
    assert H.parse_site("auto") == "auto" and H.parse_site("3") == 3
    with pytest.raises(ValueError, match="accepted, 'auto' or a layer number from 1"):
        H.parse_site("0")


def test_the_suffix_mask_stops_at_the_entity(lm, world):
    s = H.side(lm, ["the climate of balava is", "balava is a city in"], ["balava"] * 2)
    toks = [H.example_tokens(lm, s, r) for r in range(2)]
    for r in range(2):
        ent = int(s.entity[r])
        assert toks[r][ent] == "balava"
        assert s.mask[r].tolist() == [
            bool(s.batch.attention_mask[r, j]) and j <= ent for j in range(len(toks[r]))
        ]


def test_subspace_is_orthonormal(lm):
    net = H.ReflectSelect(lm, 2, 8)
    z = torch.randn(5, lm.d_model)
    R = net.subspace(z)
    eye = torch.eye(8).expand(5, 8, 8)
    torch.testing.assert_close(R.transpose(1, 2) @ R, eye, atol=1e-5, rtol=0)
    # the reflection changes the subspace from one instruction to another
    assert not torch.allclose(R[0], R[1])
    # and training keeps it orthonormal (weight decay on the parametrisation would not)
    opt = H.optimiser(net, 1e-2)
    for _ in range(5):
        loss = net.subspace(z).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    R = net.subspace(z)
    torch.testing.assert_close(R.transpose(1, 2) @ R, eye, atol=1e-5, rtol=0)


def test_das_training_moves_the_subspace_and_keeps_it_orthonormal(lm, world):
    train = H.make_examples(world, world.entities, (0, 1), 32, np.random.default_rng(3))
    by = {"country": [x for x in train if x.attribute == "country"] or train}
    before = H.das_layer(lm, by, by, 0, 4, 0, batch=8, lr=1e-2, seed=0)
    after = H.das_layer(lm, by, by, 0, 4, 3, batch=8, lr=1e-2, seed=0)
    assert set(before) == {*H.SCORES, "steps", "curves", "hits"} and after["cause"].shape == (1, 3)
    assert after["steps"].tolist() == [[3, 3, 3]] and len(after["curves"][0]) == 3
    model = H.das_model(lm, 0, 4)
    iv = H._module(next(iter(model.interventions.values())))
    opt = torch.optim.AdamW(iv.parameters(), lr=1e-2, weight_decay=0.0)
    w0 = iv.rotate_layer.weight.detach().clone()
    for _ in range(3):
        loss = iv(torch.randn(4, lm.d_model), torch.randn(4, lm.d_model)).pow(2).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    w = iv.rotate_layer.weight
    torch.testing.assert_close(w.T @ w, torch.eye(4), atol=1e-5, rtol=0)
    assert not torch.allclose(w, w0)


def test_the_stopping_rule_reads_the_training_loss():
    falling = list(np.linspace(5, 1, 100))
    assert not H.converged(falling[:99], 50, 0.02)  # fewer than two windows
    assert not H.converged(falling, 50, 0.02)  # still falling fast
    assert H.converged([2.0] * 100, 50, 0.02)  # flat
    assert H.converged([0.01] * 100, 50, 0.02)  # learnt
    assert H.converged([1.0] * 50 + [0.99] * 50, 50, 0.02)  # under 2% better


def test_all_null_weights_change_nothing():
    h, src = torch.randn(3, 6, 16), torch.randn(3, 5, 16)
    w = torch.zeros(3, 6, 6)
    w[..., -1] = 1
    R = torch.linalg.qr(torch.randn(16, 4))[0].expand(3, 16, 4)
    torch.testing.assert_close(H.interchange(h, src, w, R), h)


def test_masked_base_positions_take_the_null(lm, world):
    xs = H.make_examples(world, world.entities, (0, 1, 2), 16, np.random.default_rng(1))
    base, src, _ = H.pair(lm, xs)
    net = H.ReflectSelect(lm, 1, 4)
    instr = H.encode(lm, [x.instruction for x in xs])
    hb, hs = H.stacked(lm, base.batch), H.stacked(lm, src.batch)
    assert hb.shape[2] == lm.n_layers + 1  # every layer's states
    torch.testing.assert_close(hb[:, :, 1], H.hidden(lm, base.batch, 1))
    z, at = net.encode(instr, hb, base.mask, hs, src.mask)
    w = net.bids(z, at, hb[:, :, 1], base.mask, hs[:, :, 1], src.mask, tau=1.0)
    torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:2]))
    assert torch.all(w[..., -1][~base.mask] == 1)
    assert torch.all(w[..., :-1][~src.mask[:, None].expand_as(w[..., :-1])] == 0)
    assert w[..., -1][base.mask].max() < 1  # unmasked base tokens may bid


def test_one_hot_entity_selection_with_full_rank_is_activation_patching(lm, world):
    t = world.templates["country"][0]
    a, b = world.entities[:2], world.entities[2:4]
    base, src = H.side(lm, [t.format(e) for e in a], a), H.side(lm, [t.format(e) for e in b], b)
    layer = 1
    hs = H.hidden(lm, src.batch, layer)
    n, width = base.batch.input_ids.shape
    w = torch.zeros(n, width, width + 1)
    w[..., -1] = 1
    for r in range(n):
        w[r, base.entity[r]] = 0
        w[r, base.entity[r], src.entity[r]] = 1
    R = torch.linalg.qr(torch.randn(lm.d_model, lm.d_model))[0].expand(n, -1, -1)
    ours = H.run_with(lm, base.batch, layer, lambda h: H.interchange(h, hs, w, R))
    pos = int(base.entity[0]) - width
    theirs = mcqa.patch(
        lm,
        [t.format(e) for e in a],
        [t.format(e) for e in b],
        [("residual", layer - 1)],
        positions=(pos,),
    )
    torch.testing.assert_close(ours.float(), theirs, atol=1e-4, rtol=1e-4)
    xs = [
        H.Example("country", "country", e, e2, t.format(e), t.format(e2), "Arvia")
        for e, e2 in zip(a, b)
    ]
    torch.testing.assert_close(H.swap_logits(lm, xs, layer), ours, atol=1e-5, rtol=1e-5)


def test_batched_das_hook_equals_pyvene(lm, world):
    xs = H.make_examples(world, world.entities, (0, 1), 8, np.random.default_rng(2))
    base, src, _ = H.pair(lm, xs)
    layer = 1
    model = H.das_model(lm, layer, 4)
    iv = H._module(next(iter(model.interventions.values())))
    want = H.das_logits(model, base, src, "entity")
    rows = torch.arange(len(xs))
    hs = H.hidden(lm, src.batch, layer)[rows, src.entity]

    def edit(h):
        return h.index_put((rows, base.entity), iv(h[rows, base.entity], hs))

    got = H.run_with(lm, base.batch, layer, edit)
    torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)


def test_penalty_and_its_schedule():
    w = torch.zeros(1, 3, 3)  # 3 base tokens, 2 source tokens + null
    w[0, :, 0] = 0.6  # source token 0 spent 1.8 times
    w[0, :, 2] = 0.4
    assert float(H.sparsity_penalty(w)) == pytest.approx(0.8)
    assert H.penalty_weight(0, 100) == 0 and H.penalty_weight(49, 100) == 0
    # the official linspace(0.15, 1.5, steps + 1), its first half zeroed
    assert H.penalty_weight(50, 100) == pytest.approx(0.825)
    assert H.penalty_weight(100, 100) == pytest.approx(1.5)
    assert H.temperature(0, 10, 50, 0.1) == pytest.approx(50)
    assert H.temperature(9, 10, 50, 0.1) == pytest.approx(0.1)


def test_bad_input_gives_one_clear_error(lm, world):
    with pytest.raises(ValueError, match="unknown attribute 'colour'; accepted: country"):
        world.value("colour", world.entities[0])
    with pytest.raises(ValueError, match="does not occur in the prompt"):
        H.side(lm, ["balava is a city in"], ["corava"])
    with pytest.raises(ValueError, match="layer 7 is out of range"):
        H.check_layer(lm, 7)
    with pytest.raises(ValueError, match="k = 65 is out of range; accepted: 1..64"):
        H.ReflectSelect(lm, 2, 65)
    with pytest.raises(ValueError, match="k = 65 is out of range"):
        H.das_model(lm, 0, 65)
    with pytest.raises(ValueError, match="out of range; accepted: 0..29"):
        H.parse_layers("4,40")


def test_instruction_picker_gives_cause_and_isolation_choices():
    picker = H.instruction_picker(["country", "climate"], ["balava", "coreno", "dunith"])
    assert picker.value == ("country", "country", "balava", "coreno")  # a cause example
    picker.children[1].value = "climate"  # the base asks another attribute: isolation
    picker.children[3].value = "dunith"
    assert picker.value == ("country", "climate", "balava", "dunith")


def test_compare_figure_draws_the_papers_scores_as_lines():
    rows = {"ours": {"country": 0.5, "language": 0.7}}
    fig = H.compare_figure(rows, ["country", "language"], H.PAPER_DISENTANGLE)
    assert [list(b.y) for b in fig.data] == [[0.5, 0.7]]
    lines = sorted(s.y0 for s in fig.layout.shapes)
    assert lines == sorted(H.PAPER_DISENTANGLE.values())
    assert all("paper: " in a.text for a in fig.layout.annotations)
    assert not H.compare_figure(rows, ["country", "language"]).layout.shapes


def test_bidding_argmax_is_one_to_one_with_a_null_floor():
    # 2 base positions, 2 source tokens + null; both base positions prefer source 0
    w = torch.tensor([[[0.6, 0.3, 0.1], [0.5, 0.45, 0.05]]])
    col = H.hard(w)  # one-to-many: both take source 0
    assert col[0].argmax(-1).tolist() == [0, 0]
    bid = H.bidding_argmax(w)  # source 0 bids for base 0, source 1 for base 1
    assert bid[0].argmax(-1).tolist() == [0, 1]
    # a kept bid below the 0.1 floor loses to the null
    w = torch.tensor([[[0.05, 0.02, 0.93], [0.04, 0.06, 0.9]]])
    w[..., -1] = 0.0  # null weight 0, floored at 0.1
    assert H.bidding_argmax(w)[0].argmax(-1).tolist() == [2, 2]


def test_groundtruth_and_noop_weights(lm, world):
    xs = H.make_examples(world, world.entities, (0, 1, 2), 6, np.random.default_rng(4))
    base, src, _ = H.pair(lm, xs)
    w = torch.rand(6, base.mask.shape[1], src.mask.shape[1] + 1).softmax(-1)
    g = H.select(w, "groundtruth", base, src)
    rows = torch.arange(6)
    assert torch.all(g[rows, base.entity, src.entity] == 1)
    assert g.sum() == g.shape[0] * g.shape[1]  # one-hot everywhere, else the null
    noop = H.select(w, "noop", base, src)
    assert torch.all(noop[..., -1] == 1)
    with pytest.raises(ValueError, match="unknown inference mode 'top'; accepted: soft"):
        H.select(w, "top", base, src)


def test_rotary_keeps_norms_and_moves_with_position(lm):
    net = H.ReflectSelect(lm, 1, 4)
    x = torch.randn(2, 4, 3, 16)
    pos = torch.tensor([[0, 1, 2], [3, 4, 5]])
    y = H.rotate(x, net.rotary, pos)
    torch.testing.assert_close(y.norm(dim=-1), x.norm(dim=-1))
    torch.testing.assert_close(y[0, :, 0], x[0, :, 0])  # position 0 is unrotated
    assert H.key_positions(torch.tensor([[0, 1, 1, 0, 1]])).tolist() == [[0, 1, 2, 0, 3]]


def test_identity_edit_through_the_llm_site_leaves_the_logits(lm, world):
    s = H.side(lm, ["balava is a city in"], ["balava"])
    want = lm.model(**s.batch.inputs()).logits[:, -1]
    torch.testing.assert_close(H.run_with(lm, s.batch, 2, lambda h: h), want)
