"""iclr25.chapters.tgbseq: the protocol (split, negatives, MRR), the sampler, EdgeBank and
the models."""

import numpy as np
import pytest
import torch

from iclr25.chapters import tgbseq


@pytest.fixture(scope="module")
def stream():
    return tgbseq.generate(60, 80, 20, repeat=0.5, noise=0.2, n_patterns=3, seed=1)


def hand_stream(pairs):
    """A stream from (user, item) pairs at times 1, 2, 3, ..."""
    src, dst = (np.array(x) for x in zip(*pairs))
    return tgbseq.Stream(
        src, dst, np.arange(1.0, len(pairs) + 1), int(src.max()) + 1, int(dst.max()) + 1
    )


# --- the protocol ---------------------------------------------------------------------


def test_chronological_split_has_no_future_leakage(stream):
    n_train, n_val = tgbseq.chronological_split(stream)
    t = stream.t
    assert t[:n_train].max() < t[n_train : n_train + n_val].min()
    assert t[n_train : n_train + n_val].max() < t[n_train + n_val :].min()
    assert n_train / len(stream) == pytest.approx(0.7, abs=0.01)
    assert n_val / len(stream) == pytest.approx(0.15, abs=0.01)


def test_negatives_never_include_the_positive_and_are_distinct():
    rng = np.random.default_rng(0)
    positives = rng.integers(150, size=300)
    neg = tgbseq.sample_negatives(positives, 150, 100, rng)
    assert neg.shape == (300, 100)
    assert not (neg == positives[:, None]).any()
    assert all(len(set(row)) == 100 for row in neg)
    assert neg.min() >= 0 and neg.max() < 150
    # fewer items than asked: every other item, once
    small = tgbseq.sample_negatives(np.array([3, 0]), 10, 100, rng)
    assert small.shape == (2, 9)
    assert [sorted(r) for r in small] == [sorted(set(range(10)) - {3}), list(range(1, 10))]


def test_benchmark_stores_fixed_negatives_for_test_positives(stream):
    bench = tgbseq.benchmark(stream, 100, 50, seed=0)
    assert bench.negatives.shape == (50, 79)
    assert (bench.eval_idx >= bench.n_train + bench.n_val).all()
    assert not (bench.negatives == stream.dst[bench.eval_idx, None]).any()
    again = tgbseq.benchmark(stream, 100, 50, seed=0)
    np.testing.assert_array_equal(bench.negatives, again.negatives)


def test_validation_sample_does_not_move_with_the_test_sample(stream):
    few = tgbseq.benchmark(stream, 20, 30, seed=0, max_val=40)
    every = tgbseq.benchmark(stream, 20, 0, seed=0, max_val=40)
    np.testing.assert_array_equal(few.val_idx, every.val_idx)
    np.testing.assert_array_equal(few.val_negatives, every.val_negatives)
    test = np.arange(every.n_train + every.n_val, len(stream))
    np.testing.assert_array_equal(every.eval_idx, test)  # 0: every test positive
    assert len(few.eval_idx) == 30


def test_mrr_on_hand_made_rankings():
    pos = np.array([0.9, 0.5, 0.1])
    neg = np.array([[0.1, 0.5], [0.9, 0.5], [0.2, 0.3]])
    # ranks: 1; 1 + 1 + 1/2 (one above, one tied) = 2.5; 3
    np.testing.assert_allclose(tgbseq.ranks(pos, neg), [1, 2.5, 3])
    assert tgbseq.mrr(pos, neg) == pytest.approx((1 + 1 / 2.5 + 1 / 3) / 3)
    # a constant score ties everything: rank (k + 2) / 2
    assert tgbseq.mrr(np.zeros(4), np.zeros((4, 100))) == pytest.approx(1 / 51)


def test_mrr_refuses_mismatched_shapes():
    with pytest.raises(ValueError, match=r"pos of shape \[n\] and neg of shape \[n, k\]"):
        tgbseq.mrr(np.zeros(3), np.zeros((2, 5)))


def test_edgebank_scores_exactly_one_over_rank_on_a_stream_that_only_repeats():
    # user u takes item u again and again; user 0 also took item 2 once, early
    pairs = [(0, 2)] + [(u, u) for _ in range(10) for u in range(4)]
    s = hand_stream(pairs)
    bank = tgbseq.EdgeBank(s)
    queries = np.arange(5, len(s))  # every one a repeat
    assert tgbseq.seen_before(s, queries).all()
    neg = np.array([[v for v in range(4) if v != s.dst[i]] for i in queries])
    scores = [
        bank.score(np.repeat(s.src[i], 4), np.r_[s.dst[i], neg[j]], np.repeat(s.t[i], 4))
        for j, i in enumerate(queries)
    ]
    scores = np.array(scores)
    # the positive scores 1; a negative scores 1 only for user 0 and item 2 (a tie)
    expected = np.where(s.src[queries] == 0, 1 / 1.5, 1.0)
    np.testing.assert_allclose(1 / tgbseq.ranks(scores[:, 0], scores[:, 1:]), expected)
    assert tgbseq.mrr(scores[:, 0], scores[:, 1:]) == pytest.approx(expected.mean())


def test_edgebank_forgets_nothing_and_sees_nothing_ahead():
    s = hand_stream([(0, 1), (0, 2), (1, 1)])
    bank = tgbseq.EdgeBank(s)
    np.testing.assert_array_equal(
        bank.score([0, 0, 0, 1], [1, 1, 2, 1], [1.0, 1.5, 2.0, 9.0]), [0, 1, 0, 1]
    )


@pytest.mark.parametrize("repeat", [0.0, 0.3, 0.7])
def test_generator_statistics_match_the_knob(repeat):
    # many items and no noise: a walk never meets its own past, so repeats come from the knob only
    s = tgbseq.generate(400, 5000, 30, repeat=repeat, noise=0.0, n_patterns=4, seed=0)
    n_train, n_val = tgbseq.chronological_split(s)
    stats = tgbseq.repeat_ratios(s, n_train, n_val)
    assert stats["test"] == pytest.approx(repeat, abs=0.03)
    # over the whole stream the first interaction of a user cannot repeat
    assert tgbseq.seen_before(s, np.arange(len(s))).mean() == pytest.approx(
        repeat * 29 / 30, abs=0.02
    )


def test_generator_walks_follow_a_cyclic_order():
    s = tgbseq.generate(5, 50, 20, repeat=0.0, noise=0.0, n_patterns=1, seed=3)
    sequences = [s.dst[s.src == u] for u in range(5)]
    succ = {}
    for seq in sequences:
        assert len(set(seq)) == len(seq)  # no repeats
        for a, b in zip(seq[:-1], seq[1:]):
            assert succ.setdefault(a, b) == b  # one successor per item, shared by all users


def test_generator_gives_zipf_popularity_bursts_and_item_features():
    kw = dict(repeat=0.0, noise=0.1, n_patterns=8, seed=0, cycle=40)
    skewed = tgbseq.generate(300, 200, 40, zipf=1.0, burst=1.5, n_features=5, **kw)
    flat = tgbseq.generate(300, 200, 40, **kw)

    def top_share(s):
        pop = np.sort(tgbseq.stream_profile(s)["popularity"])[::-1]
        return pop[:20].sum() / pop.sum()

    def gap_cv(s):
        gaps = tgbseq.stream_profile(s)["gaps"]
        return gaps.std() / gaps.mean()

    assert top_share(skewed) > top_share(flat) + 0.1
    assert gap_cv(skewed) > 1.3 > gap_cv(flat)  # uniform times: about 1, as Poisson
    assert skewed.item_feat.shape == (200, 5) and flat.item_feat is None
    assert (np.diff(skewed.t) >= 0).all() and skewed.t.max() < tgbseq.HORIZON


def test_generator_walks_wrap_around_a_cycle_of_distinct_items():
    s = tgbseq.generate(6, 30, 25, repeat=0.0, noise=0.0, n_patterns=2, seed=2, cycle=10)
    for u in range(6):
        seq = s.dst[s.src == u]
        assert len(set(seq[:10])) == 10  # ten distinct items, then the same cycle again
        np.testing.assert_array_equal(seq[10:], seq[:15])
    same_pattern = [set(s.dst[s.src == u]) for u in (0, 2, 4)]
    assert same_pattern[0] == same_pattern[1] == same_pattern[2]


def test_link_features_name_the_item_of_each_link():
    s = hand_stream([(0, 1), (0, 2), (1, 1)])
    s.item_feat = np.arange(6.0).reshape(3, 2)
    sampler = tgbseq.RecentNeighbors(s)
    nodes = np.array([0, s.n_users + 1])  # user 0 and item 1, after every link
    ids, _, mask = sampler(nodes, np.array([9.0, 9.0]), 3)
    feat = sampler.link_features(nodes, ids, mask)
    np.testing.assert_array_equal(feat[0], [[0, 0], [2, 3], [4, 5]])  # padding, item 1, 2
    np.testing.assert_array_equal(feat[1], [[0, 0], [2, 3], [2, 3]])  # item 1's own


def test_jodie_keeps_the_latest_message_per_node_and_updates_only_those():
    s = hand_stream([(0, 1), (1, 1), (0, 2)])
    model = tgbseq.JODIE(tgbseq.RecentNeighbors(s), dim=4, batch_size=3)
    model.commit(model.memory, model.last, np.arange(3))
    node, other, when, item = model.pending
    latest = dict(zip(node, when))
    n_users = s.n_users
    assert latest == {0: 3.0, 1: 2.0, n_users + 1: 2.0, n_users + 2: 3.0}
    memory, last = model.advance()
    changed = set(np.flatnonzero((memory != 0).any(1).numpy()))
    assert changed <= set(latest) and last[n_users + 1] == 2.0


def test_toy_reproduces_the_official_generator():
    """toy_example/example_generator.py with N = 1000: counts, lockstep, negatives, splits."""
    bench = tgbseq.toy(1000, seed=0)
    s = bench.stream
    # 351 pairs fully in training (10 links), pair 860 keeps only its first user's last
    # link (9), 74 validation and 74 test pairs keep one last link each (9): 4851 links
    assert len(s) == 4851 and (bench.n_train, bench.n_val) == (351 * 10 + 9 + 74 * 8 * 2, 74)
    assert len(bench.eval_idx) == 74 and s.n_items == 10 and s.n_users == 1000
    for u in range(0, 1000, 2):  # pairs (official ids 10 + u, 11 + u)
        a, b = s.dst[s.src == u], s.dst[s.src == u + 1]
        assert list(a) == list(range(len(a))) and list(b) == list(range(5, 5 + len(b)))
        ta, tb = s.t[s.src == u][:4], s.t[s.src == u + 1][:4]
        np.testing.assert_array_equal(ta, tb)  # lockstep: one time per step
        assert (ta >= 0.7 * u / 1000 * tgbseq.HORIZON).all()
        assert (ta <= 0.7 * (u + 2) / 1000 * tgbseq.HORIZON).all()
    # one fixed negative, the other walk's item at the same step
    np.testing.assert_array_equal(bench.negatives[:, 0], (s.dst[bench.eval_idx] + 5) % 10)
    np.testing.assert_array_equal(bench.val_negatives[:, 0], (s.dst[bench.val_idx] + 5) % 10)
    # validation: the first user keeps its link where its official id is 0 mod 4, the
    # second user otherwise, at the previous pair's time; test: 2 mod 4
    for idx, first_mod, lo, hi in ((bench.val_idx, 0, 0.7, 0.85), (bench.eval_idx, 2, 0.85, 1)):
        official = s.src[idx] + 10
        first = official % 2 == 0
        assert (s.dst[idx] == np.where(first, 4, 9)).all()
        assert ((official[first] % 4) == first_mod).all()
        assert ((official[~first] - 1) % 4 != first_mod).all()
        assert (s.t[idx] >= lo * tgbseq.HORIZON).all() and (s.t[idx] <= hi * tgbseq.HORIZON).all()
        assert (np.diff(s.t[idx])[::2] == 0).all() or (np.diff(s.t[idx])[1::2] == 0).all()
    assert (s.t[: bench.n_train] <= 0.7 * tgbseq.HORIZON).all()


def test_toy_candidates_are_indistinguishable_without_node_identity():
    """The paper's argument: GraphMixer and DyGFormer give 4 and 9 the same score.

    Exactly so while a node's window of recent links holds no more than the validation
    links of item 4 (7 with 200 users): beyond them, the official generator's one
    unpaired training link of item 4 (the pair whose first user sits at the test cut)
    makes the two items' histories differ.
    """
    bench = tgbseq.toy(200, seed=1)
    s, i = bench.stream, bench.eval_idx
    for name in ["GraphMixer", "DyGFormer"]:
        model, *_ = tgbseq._setup(
            name, bench, batch_size=50, dim=16, neighbors=4, seed=0, device="cpu"
        )
        pos = model.score(s.src[i], s.dst[i], s.t[i])
        neg = model.score(s.src[i], bench.negatives[:, 0], s.t[i])
        np.testing.assert_array_equal(pos, neg)
        assert tgbseq.average_precision(pos, neg) == pytest.approx(0.5)


def test_toy_refuses_an_odd_number_of_users():
    with pytest.raises(ValueError, match="must be even"):
        tgbseq.toy(101)


def test_generate_refuses_bad_input():
    with pytest.raises(ValueError, match="repeat must lie in"):
        tgbseq.generate(10, 10, 5, repeat=1.5, noise=0.1, n_patterns=1, seed=0)
    with pytest.raises(ValueError, match="must be >= 1"):
        tgbseq.generate(10, 0, 5, repeat=0.5, noise=0.1, n_patterns=1, seed=0)


# --- the sampler and the models ----------------------------------------------------------


def test_recent_sampler_returns_the_k_latest_links_strictly_before_t(stream):
    sampler = tgbseq.RecentNeighbors(stream)
    k = 5
    nodes = np.r_[stream.src, stream.dst + stream.n_users]
    times = np.r_[stream.t, stream.t]
    ids, t, mask = sampler(nodes, times, k)
    assert (t[mask] < np.broadcast_to(times[:, None], t.shape)[mask]).all()
    for row in range(0, len(nodes), 37):  # brute force on a sample of queries
        x, when = nodes[row], times[row]
        if x < stream.n_users:
            hit = (stream.src == x) & (stream.t < when)
            other = stream.dst[hit] + stream.n_users
        else:
            hit = (stream.dst == x - stream.n_users) & (stream.t < when)
            other = stream.src[hit]
        want_ids, want_t = other[-k:], stream.t[hit][-k:]
        np.testing.assert_array_equal(ids[row][mask[row]], want_ids)
        np.testing.assert_array_equal(t[row][mask[row]], want_t)
        assert mask[row].sum() == min(k, hit.sum()) and mask[row, k - mask[row].sum() :].all()


@pytest.mark.parametrize("name", ["GraphMixer", "DyGFormer", "JODIE", "SASRec"])
def test_models_do_not_see_the_future(name, stream):
    """A model's score for (u, v, t) is unchanged when every link at or after t is rewritten."""
    bench = tgbseq.benchmark(stream, 20, 20, seed=0)
    fit = tgbseq.fit(name, bench, epochs=1, lr=0.01, batch_size=64, dim=16, neighbors=8, seed=0)
    when = stream.t[bench.n_train + bench.n_val]  # queries of every user, all at one test time
    rng = np.random.default_rng(5)
    u, v = np.arange(stream.n_users), rng.integers(stream.n_items, size=stream.n_users)
    t = np.full(stream.n_users, when)
    before = fit.model.score(u, v, t)
    future = stream.t >= when
    changed = tgbseq.Stream(
        stream.src.copy(),
        np.where(future, rng.integers(stream.n_items, size=len(stream)), stream.dst),
        stream.t,
        stream.n_users,
        stream.n_items,
        stream.item_feat,
    )
    fit.model.sampler = tgbseq.RecentNeighbors(changed)
    np.testing.assert_allclose(fit.model.score(u, v, t), before, rtol=1e-5, atol=1e-6)


def test_dygformer_counts_neighbour_cooccurrences():
    s = hand_stream([(0, 1)])
    model = tgbseq.DyGFormer(tgbseq.RecentNeighbors(s), seq_len=4, patch=2, dim=4)
    s_u = torch.tensor([[5, 7, 7, -1]])
    s_v = torch.tensor([[7, 9, -1, -1]])
    del model.cooc
    model.cooc = lambda c: c.expand(*c.shape[:-1], 4)  # f = identity exposes the counts
    out = model.cooccurrence(s_u, s_v)[0, :, 0]
    # f(c in S_u) + f(c in S_v): 5 -> 1 + 0, 7 -> 2 + 1, 7 -> 2 + 1, padding -> 0
    np.testing.assert_allclose(out.numpy(), [1, 3, 3, 0])


def test_fit_refuses_an_unknown_model(stream):
    bench = tgbseq.benchmark(stream, 20, 20, seed=0)
    with pytest.raises(ValueError, match="unknown model 'TGN'; accepted: EdgeBank"):
        tgbseq.fit("TGN", bench, epochs=1, lr=0.01, batch_size=8, dim=8, neighbors=4, seed=0)


@pytest.mark.parametrize("name", ["DyGFormer", "SASRec", "JODIE"])
def test_epoch_runner_trains_one_epoch_per_call_as_fit_does(name, stream):
    bench = tgbseq.benchmark(stream, 20, 20, seed=0)
    kw = dict(lr=0.01, batch_size=16, dim=8, neighbors=4, seed=0)
    epoch, interactions = tgbseq.epoch_runner(name, bench, **kw)
    first = epoch(0)
    fitted = tgbseq.fit(name, bench, epochs=1, **kw)
    assert first == pytest.approx(fitted.losses[0])
    assert interactions == fitted.interactions > 0
    assert np.isfinite(epoch(1))


@pytest.mark.parametrize("name", ["EdgeBank", "GraphMixer", "DyGFormer", "SASRec", "JODIE"])
def test_cached_weights_test_as_the_selected_model_does(name, stream):
    bench = tgbseq.benchmark(stream, 20, 20, seed=0)
    kw = dict(lr=0.01, batch_size=16, dim=8, neighbors=4, seed=0, patience=1)
    fitted = tgbseq.fit(name, bench, epochs=3, **kw)
    kept = tgbseq.train(name, bench, epochs=3, **kw)
    assert all(v.device.type == "cpu" for v in kept["state"].values())
    tested = tgbseq.evaluate_trained(name, bench, kept, batch_size=16, dim=8, neighbors=4)
    np.testing.assert_allclose(tested["rr"], tgbseq.evaluate(fitted.model, bench).rr)
    assert tested["epochs_run"] == len(fitted.losses)


def test_jodie_updates_memory_with_an_rnn_cell_and_standardised_time_shifts():
    s = hand_stream([(0, 1), (1, 1), (0, 2), (0, 1)])
    model = tgbseq.JODIE(tgbseq.RecentNeighbors(s), dim=4, batch_size=2, n_train=3)
    assert isinstance(model.rnn, torch.nn.RNNCell)
    # DyGLib's shifts over the first three interactions: users 0, 1, 0 at times 1, 2, 3
    # shift 1 - 0, 2 - 0, 3 - 1; items 1, 1, 2: 1 - 0, 2 - 1, 3 - 0
    users, items = [1.0, 2.0, 2.0], [1.0, 1.0, 3.0]
    np.testing.assert_allclose(tgbseq.time_shifts(s.src[:3], s.t[:3]), [1, 2, 2])
    np.testing.assert_allclose(tgbseq.time_shifts(s.dst[:3], s.t[:3]), [1, 1, 3])
    mean, std = model.shift
    np.testing.assert_allclose(mean, [np.mean(users)] * 2 + [np.mean(items)] * 3)
    np.testing.assert_allclose(std, [np.std(users)] * 2 + [np.std(items)] * 3)


def test_epoch_runner_refuses_edgebank(stream):
    bench = tgbseq.benchmark(stream, 20, 20, seed=0)
    with pytest.raises(ValueError, match="nothing to train"):
        tgbseq.epoch_runner("EdgeBank", bench, lr=0.01, batch_size=8, dim=8, neighbors=4, seed=0)


def test_sasrec_learns_the_toy():
    bench = tgbseq.toy(200, seed=0)
    sas = tgbseq.fit(
        "SASRec", bench, epochs=15, lr=0.01, batch_size=16, dim=16, neighbors=8, seed=0
    )
    assert tgbseq.evaluate(sas.model, bench).ap > 0.9


# --- chance and the figures -----------------------------------------------------------


def test_chance_mrr_is_the_mean_reciprocal_rank_of_a_random_ranking(stream):
    bench = tgbseq.benchmark(stream, 100, 50, seed=0)
    k = bench.negatives.shape[1]
    assert tgbseq.chance_mrr(bench) == pytest.approx(np.mean(1 / np.arange(1, k + 2)))
    # two negatives: ranks 1, 2, 3 equally likely
    two = tgbseq.benchmark(hand_stream([(0, i % 3) for i in range(20)]), 2, 5, seed=0)
    assert two.negatives.shape[1] == 2
    assert tgbseq.chance_mrr(two) == pytest.approx((1 + 1 / 2 + 1 / 3) / 3)


def test_mrr_figure_draws_one_bar_per_model_and_the_chance_line():
    fig = tgbseq.mrr_figure({"EdgeBank": 0.2, "SASRec": 0.7}, 0.05, "a title")
    (bars,) = fig.data
    assert list(bars.x) == ["EdgeBank", "SASRec"] and list(bars.y) == [0.2, 0.7]
    assert list(bars.marker.color) == [tgbseq.COLORS["EdgeBank"], tgbseq.COLORS["SASRec"]]
    assert fig.layout.shapes[0].y0 == 0.05 and fig.layout.title.text == "a title"
    assert set(tgbseq.COLORS) == set(tgbseq.MODELS)
    with_err = tgbseq.mrr_figure({"JODIE": 0.4}, 0.5, "t", err={"JODIE": 0.1}, metric="AP")
    assert list(with_err.data[0].error_y.array) == [0.1]
    assert with_err.layout.yaxis.title.text == "AP"


def test_streams_figure_draws_popularity_and_gaps_per_stream(stream):
    profile = tgbseq.stream_profile(stream)
    assert profile["popularity"].sum() == len(stream)
    assert len(profile["gaps"]) == len(stream) - stream.n_users
    assert (profile["gaps"] >= 0).all()
    fig = tgbseq.streams_figure({"a": profile, "b": profile})
    assert len(fig.data) == 4 and [d.name for d in fig.data] == ["a", "a", "b", "b"]
    assert fig.layout.xaxis.type == "log" and fig.layout.xaxis2.type == "log"
