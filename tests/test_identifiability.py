"""iclr25.chapters.identifiability: circuits of a hand-built XOR network and of a hand-built
XOR-and-AND network, interpretation counts, interchange interventions, candidate
algorithms, multi-gate training, and order-independence of the counts."""

import itertools

import numpy as np
import pytest
import torch

from iclr25 import run
from iclr25.chapters import identifiability as idf
from iclr25.core import ParameterError

XOR = idf.bits(idf.GATES["XOR"])
CLEAN = torch.tensor(idf.INPUTS, dtype=torch.float32)


def hand_built_xor() -> idf.Networks:
    """Width 2: n1 = relu(A - B) (A and not B), n2 = relu(B - A) (B and not A); both
    second-layer neurons m1 = m2 = relu(n1 + n2) = XOR; output 0.7 m1 + 0.7 m2.
    Either m alone gives 0.7 (rounds to 1), both 1.4 (rounds to 1); n1 or n2 alone
    misses half of the XOR's ones. So its valid circuits are exactly
    ({n1, n2}, {m1}), ({n1, n2}, {m2}) and ({n1, n2}, {m1, m2})."""
    w = [
        torch.tensor([[[1.0, -1.0], [-1.0, 1.0]]]),
        torch.tensor([[[1.0, 1.0], [1.0, 1.0]]]),
        torch.tensor([[[0.7, 0.7]]]),
    ]
    b = [torch.zeros(1, 2), torch.zeros(1, 2), torch.zeros(1, 1)]
    return idf.Networks(w, b)


def test_truth_tables_and_separations():
    np.testing.assert_array_equal(XOR, [0, 1, 1, 0])
    np.testing.assert_array_equal(idf.bits(idf.INPUT_A), idf.INPUTS[:, 0])
    np.testing.assert_array_equal(idf.bits(idf.INPUT_B), idf.INPUTS[:, 1])
    assert idf.separations(0) == 0 and idf.separations(15) == 0
    # A separates exactly the pairs whose first input differs: (0,2) (0,3) (1,2) (1,3)
    expected = sum(
        1 << k for k, (i, j) in enumerate(idf.PAIRS) if idf.INPUTS[i, 0] != idf.INPUTS[j, 0]
    )
    assert idf.separations(idf.INPUT_A) == expected
    assert idf.separations(idf.INPUT_A) | idf.separations(idf.INPUT_B) == 63


def test_hand_built_network_computes_xor_and_has_its_two_circuits():
    net = hand_built_xor()
    out = idf.forward(net, CLEAN)[-1][0]
    np.testing.assert_array_equal(out.round().numpy(), XOR)
    circuits = idf.neuron_circuits(2)
    assert len(circuits) == 8 and not circuits.all((1, 2)).any()  # the full net is none
    accuracy = idf.circuit_accuracy(
        net, CLEAN[None], torch.tensor(XOR, dtype=torch.float32)[None], circuits
    )[0]
    valid = {tuple(map(tuple, circuits[c].astype(int))) for c in np.flatnonzero(accuracy > 0.99)}
    assert valid == {((1, 1), (1, 0)), ((1, 1), (0, 1))}


def test_candidate_circuits_follow_the_official_min_sparsity():
    # (2^w - 1)^2 - 1 up to width 3; at widths 4 and 5 more than 20% and 30% of the
    # hidden neurons ablated: at least 2 of 8, at least 4 of 10
    assert [len(idf.neuron_circuits(w)) for w in (2, 3, 4, 5)] == [8, 48, 225 - 1 - 8, 785]
    ablated = (~idf.neuron_circuits(5)).sum((1, 2))
    assert ablated.min() == 4 and idf.neuron_circuits(5).any(2).all()


def test_count_matches_the_listing_and_hand_counts():
    # first layer A and B exactly, an AND neuron, the output AND: one interpretation
    assert idf.count_interpretations([[[12], [10]], [[8]], [[8]]]) == 1
    # an XOR neuron over exactly two parents that reach all four patterns is ruled out
    assert idf.count_interpretations([[[12], [10]], [[6]], [[6]]]) == 0
    # ... but not over three parents
    assert idf.count_interpretations([[[12], [10], [8]], [[6]], [[6]]]) == 1
    # a neuron that is no function of its parents: B is not a function of A
    assert idf.count_interpretations([[[12]], [[10]], [[10]]]) == 0
    rng = np.random.default_rng(0)
    for _ in range(200):
        shape = [rng.integers(1, 4), rng.integers(1, 4)]
        cands = [
            [
                sorted(rng.choice(np.arange(1, 15), rng.integers(1, 4), replace=False).tolist())
                for _ in range(n)
            ]
            for n in shape
        ] + [[sorted(rng.choice([6, 8, 14, 11], rng.integers(1, 3), replace=False).tolist())]]
        assert idf.count_interpretations(cands) == len(list(idf.interpretations(cands)))


def test_threshold_truth_tables_cut_between_distinct_values():
    assert idf.threshold_truth_tables(np.array([0.0, 1.0, 1.0, 2.0])) == [14, 8]
    assert idf.threshold_truth_tables(np.array([3.0, 3.0, 3.0, 3.0])) == []


def test_interchange_interventions_find_the_built_algorithm_only():
    net = hand_built_xor()
    groups = idf.neuron_groups(2)
    patched = idf.patched_outputs(net, groups)[0]
    built = idf.Algorithm(
        ((4, "A", "B"), (2, "A", "B"), (14, 0, 1))
    )  # (A and not B) or (B and not A)
    wrong = idf.Algorithm(((14, "A", "B"), (8, "A", "B"), (4, 0, 1)))  # (A or B) and not (A and B)
    a, b = idf.INPUTS[:, 0], idf.INPUTS[:, 1]
    np.testing.assert_array_equal(built.run(a, b), XOR)
    np.testing.assert_array_equal(wrong.run(a, b), XOR)
    n1 = next(
        k for k, (layer, m) in enumerate(groups) if layer == 0 and m.tolist() == [True, False]
    )
    n2 = next(
        k for k, (layer, m) in enumerate(groups) if layer == 0 and m.tolist() == [False, True]
    )
    iia = idf.interchange_accuracy(patched, built)
    assert iia[0, n1] == 1.0 and iia[1, n2] == 1.0
    assert iia[0, n2] < 1.0  # the wrong neuron for the variable
    assert idf.interchange_accuracy(patched, wrong)[:, [n1, n2]].diagonal().min() < 1.0
    assert idf.minimal_locations(iia, groups) == [(n1, n2)]
    assert idf.minimal_locations(idf.interchange_accuracy(patched, wrong), groups) == []


def test_candidate_algorithms():
    xor2 = idf.candidate_algorithms("XOR", 2)
    assert len(xor2) == 2  # the paper's two: OR and NAND, or the two one-sided ANDs
    a, b = idf.INPUTS[:, 0], idf.INPUTS[:, 1]
    for depth in (2, 3):
        for alg in idf.candidate_algorithms("XOR", depth):
            np.testing.assert_array_equal(alg.run(a, b), XOR)
    assert idf.candidate_algorithms("XOR", 1) == []
    assert [alg.describe() for alg in idf.candidate_algorithms("AND", 1)] == ["A ∧ B"]
    assert len(idf.candidate_algorithms("XOR", 3)) > len(xor2)


def hand_built_xor_and() -> idf.Networks:
    """Width 2, two outputs: n1 = relu(A + B - 1) (AND), n2 = relu(A + B) (0, 1, 1, 2);
    m1 = relu(n2 - 2 n1) (XOR), m2 = relu(n1) (AND); output XOR = m1, output AND = m2.
    The XOR output needs n1, n2 and m1 (m2 is optional); the AND output needs n1 and m2
    (n2 and m1 are optional). So the XOR output has 2 valid circuits, the AND output 4, and
    only the full network replicates both."""
    w = [
        torch.tensor([[[1.0, 1.0], [1.0, 1.0]]]),
        torch.tensor([[[-2.0, 1.0], [1.0, 0.0]]]),
        torch.tensor([[[1.0, 0.0], [0.0, 1.0]]]),
    ]
    b = [torch.tensor([[-1.0, 0.0]]), torch.zeros(1, 2), torch.zeros(1, 2)]
    return idf.Networks(w, b)


def as_set(circuits: np.ndarray) -> set:
    return {tuple(map(tuple, c.astype(int))) for c in circuits}


def test_hand_built_two_output_network_has_its_known_circuits():
    net = hand_built_xor_and()
    gates = ("XOR", "AND")
    targets = torch.tensor(idf.bits(np.array([6, 8])).T, dtype=torch.float32)  # (4, 2)
    out = idf.forward(net, CLEAN)[-1][0]
    assert out.shape == (4, 2)
    np.testing.assert_array_equal(out.round().numpy(), targets.numpy())
    for i in range(2):  # a head is the shared hidden layers with one output neuron
        torch.testing.assert_close(idf.forward(net.head(i), CLEAN)[-1][0], out[:, i])
    trained = idf.Trained(
        net,
        np.array([0]),
        np.array([1]),
        np.array([0.0]),
        np.array([1.0]),
        np.array([True]),
        CLEAN[None],
        targets[None],
    )
    explained = idf.explain_outputs(trained, gates, depth=2)
    assert len(explained) == 1 and len(explained[0]) == 2
    circuits = idf.neuron_circuits(2)
    xor, and_ = explained[0]
    assert as_set(circuits[xor.circuits]) == {((1, 1), (1, 0))}
    assert as_set(circuits[and_.circuits]) == {
        ((1, 0), (0, 1)),
        ((1, 0), (1, 1)),
        ((1, 1), (0, 1)),
    }
    assert len(idf.joint_circuits(explained[0])) == 0  # only the full net does both
    # ({n1}, {m2}) for AND: n1 and m2 read as OR or AND (cuts at -0.005 and 0.5); only
    # n1 = m2 = AND makes the output AND a function of m2, so one interpretation
    sparsest = [k for k, c in enumerate(and_.circuits) if circuits[c].sum() == 2]
    assert and_.interpretations[sparsest].tolist() == [1]
    with pytest.raises(ValueError, match="1 gates"):
        idf.explain_outputs(trained, ("XOR",), depth=2)
    with pytest.raises(ValueError, match="output 2 out of range"):
        net.head(2)


@pytest.mark.parametrize("spec", ["FOO", "XOR,FOO", "XOR,XOR", "", "xor"])
def test_bad_gate_names_are_refused_with_what_is_accepted(spec):
    with pytest.raises(
        ValueError,
        match=r"in gates .*; accepted: one or more distinct of "
        r"XOR, AND, OR, IMP, NAND, NOR, separated by commas",
    ):
        idf.parse_gates(spec)
    with pytest.raises(ValueError, match="accepted"):
        idf.boolean_data(spec, 10, 0.1, np.random.default_rng(0))


@pytest.mark.parametrize("spec", ["XOR", "XOR,FOO", "XOR,XOR"])
def test_a_bad_multi_gate_task_stops_the_chapter_before_it_runs(spec):
    with pytest.raises(ParameterError, match=r"^parameter 'multi_gates': .*accepted: "):
        run.parameters("identifiability", {"multi_gates": spec})
    assert run.parameters("identifiability", {"multi_gates": "OR,XOR"})["multi_gates"] == "OR,XOR"


def test_multi_gate_data_has_one_target_column_per_gate():
    assert idf.parse_gates("XOR, AND,OR") == ("XOR", "AND", "OR")
    x, y = idf.boolean_data("XOR,AND,OR", 200, 0.0, np.random.default_rng(0))
    assert x.shape == (200, 2) and y.shape == (200, 3)
    corner = (2 * x[:, 0] + x[:, 1]).long().numpy()
    for k, gate in enumerate(("XOR", "AND", "OR")):
        np.testing.assert_array_equal(y[:, k].numpy(), idf.bits(idf.GATES[gate])[corner])
    assert idf.boolean_data("XOR", 5, 0.0, np.random.default_rng(0))[1].shape == (5,)


def test_noisy_data_repeat_each_corner_with_noise_of_its_own():
    # the official add_noise_and_repeat: every drawn corner `repeats` times, each copy
    # with its own noise, the target that of the clean corner
    x, y = idf.boolean_data("XOR", 10, 0.1, np.random.default_rng(0), repeats=50)
    assert x.shape == (500, 2) and y.shape == (500,)
    corners = x.round().reshape(10, 50, 2)
    assert (corners == corners[:, :1]).all()  # 50 copies of each of 10 corners
    assert len(torch.unique(x[:50], dim=0)) == 50  # fresh noise on every copy
    clean = (2 * corners[:, 0, 0] + corners[:, 0, 1]).long().numpy()
    np.testing.assert_array_equal(y.reshape(10, 50)[:, 0], idf.bits(idf.GATES["XOR"])[clean])


def test_noisy_training_passes_repeats_times_over_the_corners_an_epoch():
    # with lr 0 an epoch's mean loss is the initial network's loss averaged over the
    # epoch's noise draws: 8 passes an epoch average more fresh draws than one, so they
    # land nearer the loss averaged over 64 passes
    base = dict(n_train=200, n_val=40, noise_std=0.3, lr=0.0, max_epochs=1, patience=1)
    one, eight, many = (
        idf.train_networks(idf.TrainConfig(**base, repeats=r), range(20)) for r in (1, 8, 64)
    )
    assert one.val_x.shape == (20, 40 * 50, 2)  # validation: 50 noisy copies a corner
    clean = idf.train_networks(idf.TrainConfig(**{**base, "noise_std": 0.0}), range(20))
    assert clean.val_x.shape == (20, 40, 2)
    spread = [np.abs(t.loss - many.loss).mean() for t in (one, eight)]
    assert spread[1] < spread[0]


def test_bad_input_is_refused_with_what_is_accepted():
    with pytest.raises(ValueError, match="algorithm depth must be 1, 2 or 3"):
        idf.candidate_algorithms("XOR", 4)


def permuted(nets: idf.Networks, p1: np.ndarray, p2: np.ndarray) -> idf.Networks:
    """The same networks with their hidden neurons renumbered."""
    p1, p2 = torch.as_tensor(p1), torch.as_tensor(p2)
    w = [nets.weights[0][:, p1], nets.weights[1][:, p2][:, :, p1], nets.weights[2][:, :, p2]]
    b = [nets.biases[0][:, p1], nets.biases[1][:, p2], nets.biases[2]]
    return idf.Networks(w, b)


def test_two_gate_training_learns_both_gates():
    config = idf.TrainConfig(
        gate="XOR,AND", width=3, n_train=1000, n_val=100, lr=0.01, max_epochs=150
    )
    trained = idf.train_networks(config, [0, 1, 2])
    ok = trained.converged
    assert ok.sum() >= 2 and trained.nets.n_outputs == 2 and trained.val_y.shape == (3, 100, 2)
    out = idf.forward(trained.nets, CLEAN)[-1].round().numpy()  # (3, 4, 2)
    assert (out[ok] == idf.bits(np.array([6, 8])).T).all()
    explained = idf.explain_outputs(trained, ("XOR", "AND"), depth=2)
    assert len(explained) == ok.sum()
    for per_gate in explained:  # a joint circuit is valid for every output
        joint = set(idf.joint_circuits(per_gate).tolist())
        assert joint == set(per_gate[0].circuits) & set(per_gate[1].circuits)


@pytest.fixture(scope="module")
def trained():
    config = idf.TrainConfig(width=3, n_train=1000, n_val=100, lr=0.01, max_epochs=150)
    return idf.train_networks(config, [0, 1, 2])


def test_training_reaches_the_loss_target(trained):
    assert trained.converged.sum() >= 2
    ok = trained.converged
    assert (trained.loss[ok] < 0.01).all() and (trained.val_accuracy[ok] >= 0.99).all()
    out = idf.forward(trained.nets, CLEAN)[-1].round().numpy()
    assert (out[ok] == XOR).all()


def test_counts_do_not_depend_on_the_order_of_enumeration(trained):
    algorithms = idf.candidate_algorithms("XOR", 3)
    before = idf.explain(trained, algorithms)
    rng = np.random.default_rng(1)
    p1, p2 = rng.permutation(3), rng.permutation(3)
    shuffled = idf.Trained(
        permuted(trained.nets, p1, p2),
        *[
            getattr(trained, f)
            for f in ("seeds", "epochs", "loss", "val_accuracy", "converged", "val_x", "val_y")
        ],
    )
    after = idf.explain(shuffled, algorithms[::-1])
    for x, y in zip(before, after):
        assert x.n_circuits == y.n_circuits
        assert sorted(x.interpretations) == sorted(y.interpretations)
        assert x.n_interpretations == y.n_interpretations
        assert x.n_locations == y.n_locations
        assert sorted(len(l) for l in x.locations) == sorted(len(l) for l in y.locations)
    # the interpretation count does not depend on the order of the neurons in a layer
    net = int(np.flatnonzero(trained.converged)[0])
    cands = idf.circuit_candidates(trained.nets, net, np.ones((1, 2, 3), dtype=bool))[0]
    for order in itertools.permutations(range(3)):
        reordered = [[cands[0][i] for i in order], cands[1][::-1], cands[2]]
        assert idf.count_interpretations(reordered) == idf.count_interpretations(cands)


def test_first_interpretation_is_one_of_the_listed():
    rng = np.random.default_rng(2)
    for _ in range(100):
        cands = [
            [
                sorted(rng.choice(np.arange(1, 15), rng.integers(1, 4), replace=False).tolist())
                for _ in range(rng.integers(1, 4))
            ]
            for _ in range(2)
        ] + [[[6]]]
        listed = list(idf.interpretations(cands))
        found = idf.first_interpretation(cands)
        assert (found is None) == (not listed)
        assert found is None or found in listed


def test_edge_circuits_contain_the_neuron_circuits():
    assert len(idf.edge_covers(3, 3)) == 265 and len(idf.edge_covers(2, 3)) == 25
    edges = idf.edge_circuits(2)
    # one first-layer neuron (2 ways, 1 edge cover from the inputs), then 1 or 2 second-layer
    # neurons (2 + 1 ways); two first-layer neurons (7 covers), then one second-layer neuron
    # (2 x 1 ways; keeping all four neurons is the full network's node set, not a circuit)
    assert len(edges[0]) == 2 * 1 * (2 + 1) + 7 * (2 * 1) == 20
    assert len(idf.edge_circuits(3)[0]) == 9625 - 25 * 265 == 3000
    assert not (edges[0].any(-1).all(-1) & edges[1].any(-1).all(-1)).any()
    net = hand_built_xor()
    y = torch.tensor(XOR, dtype=torch.float32)[None]
    by_edges = idf.edge_circuit_accuracy(net, CLEAN[None], y, edges)[0]
    by_neurons = idf.circuit_accuracy(net, CLEAN[None], y, idf.neuron_circuits(2))[0]
    for c, mask in enumerate(idf.neuron_circuits(2)):  # the circuit with all its edges
        full = [(edges[0].any(-1) == mask[0]).all(-1), (edges[1].any(-1) == mask[1]).all(-1)]
        k = np.flatnonzero(
            full[0]
            & full[1]
            & (edges[0].sum((1, 2)) == 2 * mask[0].sum())
            & (edges[1].sum((1, 2)) == mask[0].sum() * mask[1].sum())
        )
        assert len(k) == 1 and by_edges[k[0]] == by_neurons[c]
    assert (by_edges > 0.99).sum() >= (by_neurons > 0.99).sum()
    with pytest.raises(ValueError, match="widths 1 to 3 only"):
        idf.edge_circuits(4)


# --- figures --------------------------------------------------------------------------


def test_count_histograms_draw_bars_of_counts_and_a_log_histogram():
    panels = {
        "a": np.array([1, 1, 3]),
        "b": np.array([10, 100]),
        "c": np.array([2]),
        "d": np.array([0, 0]),
    }
    fig = idf.count_histograms(panels, log=["b"])
    assert [t.type for t in fig.data] == ["bar", "histogram", "bar", "bar"]
    assert list(fig.data[0].x) == [1, 3] and list(fig.data[0].y) == [2, 1]
    np.testing.assert_allclose(fig.data[1].x, [1, 2])
    assert [a.text for a in fig.layout.annotations] == list(panels)


def test_draw_network_greys_the_ablated_neurons_and_labels_a_circuit():
    from plotly.subplots import make_subplots

    net = hand_built_xor()
    circuit = np.array([[True, True], [True, False]])  # ({n1, n2}, {m1}): a valid circuit
    labels = idf.circuit_labels(net, 0, circuit, "XOR")
    assert labels[(0, 0)] == "A" and labels[(3, 0)] == "XOR"
    # n1 and n2 read as (the negations of) A and not B, B and not A; m1 as XOR or XNOR
    assert {labels[(1, 0)], labels[(1, 1)]} == {"A→B", "B→A"}
    assert labels[(2, 0)] in ("XOR", "XNOR")
    assert (2, 1) not in labels  # m2 is ablated
    fig = make_subplots(rows=1, cols=1)
    idf.draw_network(fig, net, 0, 1, 1, circuit, labels, title="one circuit")
    positive, negative, ablated, nodes, title = fig.data
    assert title.text == ("one circuit",)
    assert len(negative.x) == 3 * 2  # the two -1 weights of the first layer
    assert len(ablated.x) == 3 * 3  # m2's two inputs and its output edge
    colors = dict(zip(zip(nodes.x, nodes.y), nodes.marker.color))
    assert colors[(2, -0.5)] == "#8c959f" and colors[(2, 0.5)] == "#ffffff"


def test_explanations_figure_draws_circuits_and_aligned_algorithms():
    net = hand_built_xor()
    groups = idf.neuron_groups(2)
    algorithms = idf.candidate_algorithms("XOR", 2)
    patched = idf.patched_outputs(net, groups)[0]
    locations = [
        idf.minimal_locations(idf.interchange_accuracy(patched, a), groups) for a in algorithms
    ]
    circuits = idf.neuron_circuits(2)
    valid = np.array(
        [c for c in range(len(circuits)) if circuits[c][0].all() and circuits[c][1].any()]
    )
    explained = idf.Explanations(valid, np.ones(len(valid), dtype=np.int64), locations)
    assert len(explained.aligned) == 1
    labels, colors, hovers = idf.location_labels(
        algorithms[explained.aligned[0]], locations[explained.aligned[0]][0], groups, "XOR"
    )
    assert {labels[(1, 0)], labels[(1, 1)]} == {"v1", "v2"} and len(colors) == 2
    fig = idf.explanations_figure(net, 0, explained, algorithms, "XOR", "hand-built")
    assert len(fig.data) == 5 * (2 + 1)  # five traces per drawn network
    assert fig.layout.title.text.startswith("hand-built: 2 valid circuits")


def test_growth_and_multi_gate_figures():
    growth = {"valid circuits": [np.array([1.0, 3.0]), np.array([4.0, 8.0])]}
    fig = idf.growth_figure([2, 3], growth, "growth")
    assert list(fig.data[0].y) == [2.0, 6.0] and fig.layout.yaxis.type == "log"
    np.testing.assert_allclose(fig.data[0].error_y.array, [1.0, 2.0])
    assert idf.task_name(("XOR", "AND")) == "XOR + AND"
    joint = {("XOR",): np.array([2, 3]), ("XOR", "AND"): np.array([1, 1])}
    per_gate = {("XOR",): np.array([[2], [3]]), ("XOR", "AND"): np.array([[2, 4], [2, 6]])}
    fig = idf.multi_gate_figure(joint, per_gate, "multi")
    assert [t.type for t in fig.data] == ["box", "box", "bar", "bar"]
    assert fig.data[1].name == "XOR + AND" and list(fig.data[3].y) == [2.0, 5.0]
    assert fig.layout.title.text == "multi"


# --- the official conventions ---------------------------------------------------------


def test_official_candidates_follow_the_official_enumeration():
    # depth 2: the official code's two XOR trees, each with its first negation
    assert [a.label for a in idf.official_algorithms("XOR", 2)] == [
        "¬(A*B)*(A+B)",
        "¬((A*B)+¬(A+B))",
    ]
    xor3 = idf.official_algorithms("XOR", 3)
    assert len(xor3) == 56  # as the official demo lists them for a network of 2 hidden layers
    assert [a.label for a in xor3[2:4]] == ["¬((A*B)*B)*¬(¬A*¬B)", "(¬(A*B)*B)+(A*¬B)"]
    a, b = idf.INPUTS[:, 0], idf.INPUTS[:, 1]
    for alg in xor3:
        np.testing.assert_array_equal(alg.run(a, b), XOR)
    # a negated input is a variable of its own (a NOT gate), written as such
    third = xor3[2]
    nots = [k for k in third.variables if third.gates[k][1] == third.gates[k][2]]
    assert [third.describe(k) for k in nots] == ["¬A", "¬B"]
    assert len(third.variables) == 5
    assert [a.label for a in idf.official_algorithms("AND", 1)] == ["A*B", "¬(¬A+¬B)"]
    assert idf.official_algorithms("XOR", 1) == ()
    with pytest.raises(ValueError, match="algorithm depth must be 1, 2 or 3"):
        idf.official_algorithms("XOR", 4)


def test_official_pairs_are_one_order_of_each_pair():
    bases, sources = idf.BASES[idf.OFFICIAL_PAIRS], idf.SOURCES[idf.OFFICIAL_PAIRS]
    assert len(idf.OFFICIAL_PAIRS) == 6 and (sources < bases).all()
    assert {frozenset(p) for p in zip(bases, sources)} == {frozenset(p) for p in idf.PAIRS}
    assert 3 not in sources and 0 not in bases


def hand_built_or_and_xor() -> idf.Networks:
    """Width 2: n1 = relu(A + B) (OR, values 0, 1, 1, 2), n2 = relu(A + B - 1) (AND);
    m1 = relu(n1 - 2 n2) (XOR), m2 = relu(n2) with output weight 0; output m1."""
    w = [
        torch.tensor([[[1.0, 1.0], [1.0, 1.0]]]),
        torch.tensor([[[1.0, -2.0], [0.0, 1.0]]]),
        torch.tensor([[[1.0, 0.0]]]),
    ]
    b = [torch.tensor([[0.0, -1.0]]), torch.zeros(1, 2), torch.zeros(1, 1)]
    return idf.Networks(w, b)


def test_official_algorithm_count_matches_a_hand_count():
    """By hand, for the OR/AND network: each official depth-2 candidate locates its AND
    variable (NAND or AND) at n2 alone and its OR variable (OR or NOR) at n1 alone, and
    nowhere else (n1 with n2, or m1, carries XOR of the source; m2 changes nothing). So
    both official candidates align, one minimal location each: 2 aligned algorithms. Ours
    counts them as one algorithm, and its other depth-2 candidate, (A and not B) or
    (not A and B), finds no neuron group for A and not B: 1 aligned algorithm."""
    net = hand_built_or_and_xor()
    np.testing.assert_array_equal(idf.forward(net, CLEAN)[-1][0].round().numpy(), XOR)
    trained = idf.Trained(
        net,
        np.array([0]),
        np.array([1]),
        np.array([0.0]),
        np.array([1.0]),
        np.array([True]),
        CLEAN[None],
        torch.tensor(XOR, dtype=torch.float32)[None],
    )
    official = idf.official_alignment(trained, idf.official_algorithms("XOR", 2))
    assert official.tolist() == [[1, 1]]
    groups = idf.neuron_groups(2)
    n1, n2 = (
        next(k for k, (layer, m) in enumerate(groups) if layer == 0 and m.tolist() == mask)
        for mask in ([True, False], [False, True])
    )
    patched = idf.patched_outputs(net, groups)[0]
    for alg in idf.official_algorithms("XOR", 2):  # variables: the AND one, then the OR one
        iia = idf.interchange_accuracy(patched, alg, idf.OFFICIAL_PAIRS)
        assert idf.minimal_locations(iia, groups) == [(n2, n1)]
    ours = idf.explain(trained, idf.candidate_algorithms("XOR", 2))[0]
    assert len(ours.aligned) == 1 and ours.n_locations == 1


def test_fast_edge_circuit_accuracy_matches_circuit_by_circuit():
    for width, seeds in ((2, [0, 1]), (3, [2])):
        nets = idf.init_networks(width, seeds)
        x = torch.randn(len(seeds), 30, 2) * 0.5 + 0.5
        y = (torch.rand(len(seeds), 30) > 0.5).float()
        edges = idf.edge_circuits(width)
        fast = idf.edge_circuit_accuracy(nets, x, y, edges)
        np.testing.assert_allclose(fast, idf._edge_circuit_accuracy_direct(nets, x, y, edges))


def test_conventions_figure_groups_counts_per_convention():
    fig = idf.conventions_figure({"ours": np.array([1, 1, 2]), "official": np.array([2, 4])}, "t")
    assert [t.name for t in fig.data] == ["ours", "official"]
    assert list(fig.data[0].x) == [1, 2] and list(fig.data[0].y) == [2, 1]
    assert fig.layout.title.text == "t"


def test_training_stops_after_patience_epochs_without_improvement():
    # a learning rate of 0 lowers the loss only by rounding: every network stops after
    # 1 + patience epochs or a few more, long before max_epochs
    config = idf.TrainConfig(n_train=200, n_val=40, lr=0.0, max_epochs=50, patience=3)
    trained = idf.train_networks(config, [0, 1, 2])
    assert (trained.epochs >= 4).all() and (trained.epochs <= 10).all()
    assert not trained.converged.any()


def test_claim_estimates():
    # log10 of the mean doubles per width: slope log10(2), a point interval
    e = idf.log_slope([2, 3, 4], [np.full(5, 2.0**k) for k in range(3)])
    assert np.isclose(e.value, np.log10(2)) and np.isclose(e.low, e.high)
    # a mean of 0 at the smallest width: the limit is +inf
    assert idf.log_slope([2, 3], [np.zeros(3), np.ones(3)]).value == np.inf
    assert np.isnan(idf.log_slope([2, 3], [np.ones(1), np.ones(3)]).low)
    with pytest.raises(ValueError, match="one sample of counts per width"):
        idf.log_slope([2, 3, 4], [np.ones(3)])
    s = idf.share_of([True, True, False, True])
    assert s.value == 0.75 and s.low < 0.75 < s.high and s.n == 4
    assert np.isnan(idf.share_of([]).low)
    name, e = idf.least_supported(
        {"a": idf.share_of([True] * 9), "b": idf.share_of([True] * 3), "c": s}
    )
    assert name == "c"
    assert idf.least_supported({"a": s, "none": idf.share_of([])})[0] == "none"
