# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Deep linearly gated networks: features from label discontinuities
#
# Deep networks beat kernel machines because they learn features while they
# train. But what is a feature, and how is it learned?
# {cite:p}`banerjee2025dlgn` take the features of a label function to be its
# discontinuities, the places where the label jumps, and hypothesise that
# training works by the label function's discontinuities *attracting* the
# model's. To watch it happen they label points by an oblique decision tree,
# whose discontinuities are a handful of known hyperplanes, and train a Deep
# Linearly Gated Network (DLGN), whose own discontinuities are hyperplanes that
# can be listed from its weights. Do the DLGN's hyperplanes move onto the
# tree's? Can the tree be read back off the trained network? And is such an
# interpretable network still competitive on real tables? This chapter repeats
# the three experiments at a small scale.

# %% tags=["parameters"]
dim = 8
tree_depth = 3
n = 5000
margin = 0.01
width = 64
depth = 3
beta = 4.0
epochs = 300
sweep_epochs = 100
lr = 0.01
batch_size = 400
runs = 5
cluster_eps = 0.2
cluster_eps_below = 0.3
cluster_min = 6
dt_width = 200
dt_epochs = 256
tab_steps = 1000
tab_seeds = 5
tab_lr = 0.001
tab_batch = 32
seed = 0
device = "auto"

# %%
import numpy as np
import pandas as pd
import torch

from iclr25 import core
from iclr25.chapters import dlgn

p = core.chapter("dlgn", globals())

# %% [markdown]
# ## The data: an oblique decision tree
#
# A tree of depth $d$ has $2^d - 1$ internal nodes; node $k$ holds a
# hyperplane $w_k \cdot x + b_k = 0$ with a random unit normal $w_k$ and sends
# a point to child $2k + 2$ when $w_k \cdot x + b_k > 0$, else to $2k + 1$.
# Each leaf is labelled by its index mod 2, so sibling leaves carry different
# labels: a point's label is the side of the *last* split on its path. Each
# bias is set so that the node halves the points that reach it, and points
# closer than `margin` to any of the tree's hyperplanes are dropped. This is
# the generator of the unofficial reference implementation
# (Rohith-Rongali/DLGN), numbering and labelling included (a test checks the
# labels against its rule). The authors' own notebooks
# (Doeschate/Feature_Learning_DLGN) label the same way, but put the points on
# the unit sphere in 20 dimensions and the hyperplanes through the origin.
#
# ```{literalinclude} ../lib/iclr25/chapters/dlgn/data.py
# :pyobject: oblique_tree
# ```
#
# With alternating leaves, each side of the root holds as many 0s as 1s: a
# greedy tree learner such as CART, which looks for the split that best
# separates the labels, finds no good first split, and a static kernel has to
# carve out $2^d$ polytopes with a fixed similarity. Note what this labelling
# does to the discontinuities: a bottom-level hyperplane flips the label
# wherever it splits, but the root's flips it only where the two bottom-level
# splits on either side of it disagree, about half of its extent (the last
# line printed below measures it, node by node, in heap order).

# %%
data = dlgn.oblique_tree(p.dim, p.tree_depth, p.n, p.margin, p.seed)
x_train, y_train, x_test, y_test = data.split()
_, _, reached = data.tree.route(data.x)
pos = [(data.x[reached[:, k]] @ data.tree.normals[k]
        + data.tree.biases[k] > 0).mean()
       for k in range(len(data.tree.biases))]
print(f"{len(x_train)} training and {len(x_test)} test points in "
      f"[-1, 1]^{p.dim}; {len(pos)} tree nodes")
print("share of each node's points on its positive side:",
      np.round(pos, 3))
clear = data.tree.clearance(data.x).min()
print(f"share labelled 1: {data.y.mean():.3f}; closest point to a tree "
      f"hyperplane: {clear:.4f} (> margin {p.margin})")
probe = np.random.default_rng(p.seed).uniform(-1, 1, (100_000, p.dim))
flips = dlgn.flip_share(data.tree, probe)
print("share of each node's hyperplane (inside its cell) across which the "
      "label flips:", np.round(flips, 2))

# %% [markdown]
# ## The model: a deep linearly gated network
#
# A DLGN separates *where* from *what*. A deep *linear* gating network computes
# $g^l = W_g^l g^{l-1} + b^l$ from $g^0 = x$; a value network multiplies each of
# its units by a soft gate, $h^l = \sigma(\beta g^l) \odot (W_v^l h^{l-1})$ with
# $h^0 = 1$, and the output is $w \cdot h^L + b$, trained with the logistic
# loss. DLGN-SF ("shallow features") gates every layer on the input itself,
# $g^l = W_g^l x + b^l$.
#
# ```{literalinclude} ../lib/iclr25/chapters/dlgn/method.py
# :pyobject: DLGN
# ```
#
# Since the gating network is linear, every gate is a hyperplane of the *input*:
# $g^l_i(x) = a \cdot x + c$, with $A_l = W^l A_{l-1}$ and
# $c_l = W^l c_{l-1} + b^l$. As $\beta$ grows the gates become steps and the
# DLGN is constant between its gate hyperplanes: they are its only
# discontinuities.
#
# ```{literalinclude} ../lib/iclr25/chapters/dlgn/method.py
# :pyobject: hyperplanes
# ```
#
# The distance between a gate and a tree node compares the two hyperplanes
# normalised by the length of their normals, $(a, c)/\lVert a \rVert$ against
# $(w, b)$, with the sign of $(a, c)$ that brings them closest:
#
# ```{literalinclude} ../lib/iclr25/chapters/dlgn/method.py
# :pyobject: gate_distances
# ```

# %% [markdown]
# ## Training on the tree data
#
# Every claim on trained models is decided over `runs` runs: run $s$ draws
# its own labelling tree and points (seed $s$) and initialises its models with
# the same seed. In each run the DLGN is trained and set against the
# baselines; the first run also trains DLGN-SF and a ReLU network, shown
# beside it. The DLGN, DLGN-SF and a ReLU network of the same width and depth are trained
# with Adam on the same batches, ten batches an epoch as in the authors'
# notebooks (learning rate 0.01, inside their grid of 0.001-0.02); every epoch
# records, for each tree node, the distance of the closest gate. Beside them,
# scikit-learn's CART, random forest, gradient boosting and a support vector
# machine (a static kernel). The SVM and CART are tuned over the authors'
# grids (SVM: $C$ and a linear, RBF or sigmoid kernel; CART: criterion,
# splitter, depth, minimum split and leaf sizes, features per split), each
# setting scored on the last fifth of the training split and the best refitted
# on all of it.
#
# ```{literalinclude} ../lib/iclr25/chapters/dlgn/method.py
# :pyobject: tuned
# ```

# %%
RUNS = list(range(p.seed, p.seed + p.runs))
SETTING = dict(width=p.width, depth=p.depth, beta=p.beta, lr=p.lr,
               batch_size=p.batch_size)
CONFIG = dict(SETTING, dim=p.dim, tree_depth=p.tree_depth, n=p.n,
              margin=p.margin, epochs=p.epochs, labels="reference")
DATA = {s: dlgn.oblique_tree(p.dim, p.tree_depth, p.n, p.margin, s)
        for s in RUNS}


def tree_run(kind, s, placebo=False):
    """Train ``kind`` on run ``s``'s tree data (cached by configuration);
    the placebo's labels come from the generator's tree at s + 1."""
    on = DATA[s]
    if placebo:
        other = dlgn.oblique_tree(p.dim, p.tree_depth, p.n, p.margin,
                                  s + dlgn.PLACEBO_SEED).tree
        on = dlgn.TreeData(on.x, other.predict(on.x), on.tree)

    def build():
        with core.threads(1):
            return dlgn.train_on_tree(on, kind, epochs=p.epochs, seed=s,
                                      **SETTING)
    name = f"dlgn-tree-{kind}" + ("-placebo" if placebo else "")
    return core.cached(name, dict(CONFIG, seed=s), build)


# %%
def baseline_build(s):
    """Test accuracies of run ``s``'s tuned SVM and CART and the others."""
    x_tr, y_tr, x_te, y_te = DATA[s].split()
    found, chosen = {}, {}
    for name in ("SVM", "CART"):
        model, chosen[name] = dlgn.tuned(name, x_tr, y_tr, s)
        found[name] = model.score(x_te, y_te)
    for name, model in dlgn.baselines(s, p.tree_depth).items():
        if name not in ("CART", "RBF SVM"):
            found[name] = model.fit(x_tr, y_tr).score(x_te, y_te)
    return {"accuracy": found, "chosen": chosen}


base = {s: core.cached("dlgn-baselines", dict(CONFIG, seed=s, grid="authors"),
                       lambda s=s: baseline_build(s)) for s in RUNS}
runs = {s: tree_run("DLGN", s) for s in RUNS}
shown = {kind: tree_run(kind, p.seed) for kind in dlgn.KINDS}
acc = pd.DataFrame({s: {"DLGN": runs[s]["accuracy"], **base[s]["accuracy"]}
                    for s in RUNS}).T.rename_axis("run (seed)")
print(f"tuned settings, run {p.seed}:", base[p.seed]["chosen"])
print(f"run {p.seed}: " + ", ".join(f"{k} {v['accuracy']:.3f}"
                                    for k, v in shown.items()))
acc.round(3)

# %% [markdown]
# The paper's claim: on tree-labelled data the DLGN is well above the static
# kernel and the greedy tree; we also set it against the two tree ensembles.
# Each difference is in test-accuracy points, paired by run, with the 95% t
# interval over the `runs` runs.

# %%
VS = {"beats_svm": "SVM", "beats_cart": "CART",
      "beats_forest": "random forest",
      "beats_boosting": "gradient boosting"}
for cid, other in VS.items():
    core.claim(cid, estimate=core.stats.paired_runs(
        100 * acc["DLGN"], 100 * acc[other]))

# %% [markdown]
# ## Do the gates move onto the tree's hyperplanes?
#
# For each tree node, the distance of the closest gate (over all
# $L \times$ width gates) after each epoch, for the DLGN and DLGN-SF. At
# initialisation the gates are random hyperplanes; if the label's
# discontinuities attract the model's, each node's curve should fall towards
# zero. The bound, fixed before the run: every node's closest gate at least
# twice as close after training as at initialisation, and the median trained
# distance at most 0.15.
#
# Gates could also drift towards the tree's hyperplanes for reasons that have
# nothing to do with its labels: all the data lie in the cube, and a gate far
# outside it does nothing. So a placebo DLGN trains the same way on the same
# points, labelled by *another* tree of the generator, and its gates are
# measured against this tree. The bound, also fixed before the run: the
# DLGN's median trained distance at most half the placebo's.

# %%
placebo = {s: tree_run("DLGN", s, placebo=True) for s in RUNS}
histories = {kind: shown[kind]["distances"].numpy()
             for kind in ("DLGN", "DLGN-SF")}
histories["DLGN, placebo"] = placebo[p.seed]["distances"].numpy()
dlgn.distance_figure(histories).show()
for kind, h in histories.items():
    print(f"{kind}: closest-gate distance {h[0].min():.2f}-{h[0].max():.2f} "
          f"at init, {h[-1].min():.2f}-{h[-1].max():.2f} after "
          f"{p.epochs} epochs (run {p.seed})")

# %% [markdown]
# Read the placebo's line against its range at initialisation: a DLGN whose
# labels come from another tree has no reason to put gates on this tree's
# hyperplanes, so its distances measure how close training alone, on these
# points, brings gates to them. The figure shows the first run; the claim
# reads every run. Its bounds hold in the worst run for the first two numbers,
# and at the upper end of the 95% interval over runs for the ratio of the
# DLGN's median trained distance to the placebo's.

# %%
def moved(s):
    h = runs[s]["distances"].numpy()
    hp = placebo[s]["distances"].numpy()
    return {"max_ratio": (h[-1] / h[0]).max(),
            "median_trained": np.median(h[-1]),
            "placebo_ratio": np.median(h[-1]) / np.median(hp[-1])}


gates = pd.DataFrame({s: moved(s) for s in RUNS}).T.rename_axis("run (seed)")
print(gates.round(3).to_string())
ratio = core.stats.over_runs(gates["placebo_ratio"])
core.claim(
    "gates_move",
    value={"max_ratio": gates["max_ratio"].max(),
           "median_trained": gates["median_trained"].max(),
           "placebo_ratio_high": ratio.high},
    measured=f"over {len(RUNS)} runs: trained/initial distance at most "
             f"{gates['max_ratio'].max():.2f}; median trained at most "
             f"{gates['median_trained'].max():.3f}; {ratio.value:.2f} "
             f"[{ratio.low:.2f}, {ratio.high:.2f}] of the placebo's",
);

# %% [markdown]
# ## A picture in two dimensions
#
# The same experiment with two inputs and a tree of depth 2 (three
# hyperplanes), so that the gates can be drawn: every DLGN gate is a grey line,
# the tree's hyperplanes are drawn thick inside the cells where they split, and
# the gate closest to each node is dashed in the node's colour. Move the epoch
# slider to watch the dashed lines settle on the thick ones.

# %%
flat = dlgn.oblique_tree(2, 2, min(p.n, 1500), p.margin, p.seed)
SHOTS = sorted({round(p.epochs * f) for f in (0, .05, .1, .2, .4, .7, 1)})


def flat_build():
    with core.threads(1):
        return dlgn.train_on_tree(flat, "DLGN", epochs=p.epochs, seed=p.seed,
                                  snapshots=SHOTS, **SETTING)


flat_run = core.cached("dlgn-flat", dict(CONFIG, seed=p.seed, shots=SHOTS),
                       flat_build)


def flat_figure(epoch):
    a, c = (t.numpy() for t in flat_run["planes"][epoch])
    d = flat_run["distances"][epoch].numpy()
    return dlgn.plane_figure(flat, a, c, f"epoch {epoch}: closest-gate "
                             f"distances {np.round(d, 2).tolist()}")


core.explore(flat_figure, SHOTS, "epoch", active=len(SHOTS) - 1);

# %% [markdown]
# ## Building a tree from the DLGN's gates (DLGN-DT)
#
# The gates are hyperplanes, so a tree can be assembled from them. The paper's
# principle says which ones: the label discontinuity with the largest scope
# (for a tree, the root's hyperplane) attracts the most gates, so a DLGN
# trained on the data should hold a cluster of gates around it. DLGN-DT, the
# paper's Algorithms 1-3, turns this into a tree. At a node it trains a DLGN on
# the node's training points, lists the gates as hyperplanes (Algorithm 3,
# `hyperplanes` above), normalises each to a unit normal whose first
# coordinate is non-negative, clusters them with DBSCAN (radius `cluster_eps`
# at the root and `cluster_eps_below` under it, `cluster_min` gates around a
# core) and splits on the centre of the largest cluster; where DBSCAN finds no
# cluster it splits on a logistic regression's hyperplane, as the authors'
# notebook does (Algorithm 2). Each node's DLGN follows the authors' DLGN-DT
# notebook: three layers of `dt_width`, $\beta = 3$, Adam at $10^{-3}$ for
# `dt_epochs` epochs of ten batches, keeping the epoch with the fewest errors
# on held-out points. The node's points are split and both sides recurse
# while they hold both labels and at least 1% of the training points
# (Algorithm 1), down to a depth of 6; the depth is then chosen on the last
# fifth of the training split, on which nothing is trained, and a leaf takes
# the majority label of its training points.
#
# ```{literalinclude} ../lib/iclr25/chapters/dlgn/method.py
# :pyobject: build_tree
# ```
#
# ```{literalinclude} ../lib/iclr25/chapters/dlgn/method.py
# :pyobject: dlgn_split
# ```
#
# ```{literalinclude} ../lib/iclr25/chapters/dlgn/method.py
# :pyobject: cluster_or_fallback
# ```
#
# ```{literalinclude} ../lib/iclr25/chapters/dlgn/method.py
# :pyobject: largest_cluster_center
# ```
#
# ```{literalinclude} ../lib/iclr25/chapters/dlgn/method.py
# :pyobject: depth_on_validation
# ```
#
# Before DLGNs are read, the procedure is run where the answer is known. In
# place of a trained DLGN's gates, each node gets the labelling tree's own
# hyperplanes, each repeated as often as the label jumps across it among the
# node's points (its scope of discontinuity, counted in a band of 0.05 on
# either side): the gates an ideal DLGN would hold if the paper's principle
# were exact. The setup claim, fixed before the run: on most of 8 trees of
# the generator (seeds `seed` to `seed + 7`), the tree built this way reaches
# test accuracy 0.99. The claims on the DLGN's tree rest on it. Each line
# below gives a tree's chosen depth, its test accuracy and, split by split in
# heap order, the node of the labelling tree the split lies on (-1 for a
# leaf): a rebuilt tree splits on the root, then on its two children, then on
# the four bottom nodes (each pair in either order, as a split's sign may
# flip).

# %%
def fit_and_validation(d):
    """Tree ``d``'s training split cut into the part a tree is built on and
    the last fifth, on which its depth is chosen."""
    xs, ys, _, _ = d.split()
    cut = int(round(0.8 * len(ys)))
    return xs[:cut], ys[:cut], xs[cut:], ys[cut:]


def grown(d, split):
    """BuildTree to DEPTH_CAP on ``d``, cut at the depth validation picks."""
    xf, yf, xv, yv = fit_and_validation(d)
    deep = dlgn.build_tree(xf, yf, split, depth=dlgn.DEPTH_CAP,
                           min_points=round(dlgn.MIN_SHARE * len(yf)))
    return dlgn.depth_on_validation(deep, xf, yf, xv, yv)


# %%
def truth_run(s):
    """DLGN-DT given tree ``s``'s own hyperplanes: its depth, its test
    accuracy, and the node each split lies on (heap order, -1 for a leaf)."""
    d = dlgn.oblique_tree(p.dim, p.tree_depth, p.n, p.margin, s)
    built = grown(d, dlgn.true_gate_split(d.tree, p.cluster_eps,
                                          p.cluster_min))
    _, _, xt, yt = d.split()
    on = dlgn.plane_distances(built.a, built.c, d.tree).argmin(1)
    on[np.array(built.how) == "leaf"] = -1
    depth = int(np.log2(len(built.leaves)))
    return depth, float((built.predict(xt) == yt).mean()), on


truth = [truth_run(s) for s in range(p.seed, p.seed + dlgn.TRUTH_TREES)]
for s, (depth, acc_s, on) in enumerate(truth, start=p.seed):
    print(f"tree {s}: depth {depth}, test accuracy {acc_s:.3f}, splits on "
          f"nodes {on}")
hits = sum(acc_s >= 0.99 for _, acc_s, _ in truth)
core.claim("truth_recovered",
           estimate=core.stats.share(hits, len(truth), unit="runs"),
           measured=f"{hits} of {len(truth)} trees rebuilt");

# %% [markdown]
# Now DLGN-DT proper, in every run, with a DLGN trained at each node. The
# claims, fixed before the run: its trees reach test accuracy above 0.90 (the
# mean over runs, with its 95% interval), and beat CART of the same depth
# fitted on the same points, paired by run. The lines below give, for the
# first run, where each split came from and how far it lies from the closest
# hyperplane of the labelling tree; the table gives every run.

# %%
DT = dict(width=p.dt_width, **dlgn.DT_RECIPE, epochs=p.dt_epochs,
          eps=p.cluster_eps, eps_below=p.cluster_eps_below,
          min_samples=p.cluster_min)


def dt_build(s):
    """Run ``s``'s DLGN-DT: its splits and leaves at the chosen depth."""
    with core.threads(1):
        built = grown(DATA[s], dlgn.dlgn_split(seed=s, **DT))
    return {"a": torch.from_numpy(built.a), "c": torch.from_numpy(built.c),
            "how": built.how, "leaves": torch.from_numpy(built.leaves)}


def extracted(s):
    stored = core.cached("dlgn-dt", dict(CONFIG, dt=DT, seed=s,
                                         cap=dlgn.DEPTH_CAP),
                         lambda: dt_build(s))
    return dlgn.ExtractedTree(stored["a"].numpy(), stored["c"].numpy(),
                              list(stored["how"]), stored["leaves"].numpy())


trees = {s: extracted(s) for s in RUNS}

# %%
def dt_row(s):
    """Run ``s``: DLGN-DT's depth, its splits by origin, its test accuracy
    and that of CART of the same depth on the same points."""
    t, (xf, yf, _, _) = trees[s], fit_and_validation(DATA[s])
    _, _, xt, yt = DATA[s].split()
    depth = int(np.log2(len(t.leaves)))
    cart = dlgn.baselines(s, depth)[f"CART depth {depth}"]
    return {"depth": depth, "cluster splits": t.how.count("cluster"),
            "logistic splits": t.how.count("logistic"),
            "DLGN-DT": float((t.predict(xt) == yt).mean()),
            "CART same depth": cart.fit(xf, yf).score(xt, yt)}


dt = pd.DataFrame.from_dict({s: dt_row(s) for s in RUNS}, orient="index")
dt = dt.rename_axis("run (seed)")
first = trees[p.seed]
off = dlgn.plane_distances(first.a, first.c, DATA[p.seed].tree).min(1)
for k, how in enumerate(first.how):
    print(f"node {k}: {how}" + (f", {off[k]:.3f} from the closest "
                                "tree hyperplane" if how != "leaf" else ""))
dt.round(3)

# %% [markdown]
# DBSCAN needs `cluster_min` gates within the radius of a core gate to form
# a cluster; the table counts, run by run, the splits that came from a
# cluster and those that fell back on a logistic regression.
#
# The share of trees the ideal gates rebuild is the regime check for
# DLGN-DT: where the procedure misorders a tree given the gates the paper's
# principle predicts, a DLGN's gates, which that principle describes, are no
# better guide. Both claims on DLGN-DT rest on this setup claim.

# %%
core.claim("extracted_tree",
           estimate=core.stats.over_runs(dt["DLGN-DT"].astype(float)))
core.claim("extracted_beats_cart", estimate=core.stats.paired_runs(
    100 * dt["DLGN-DT"].astype(float),
    100 * dt["CART same depth"].astype(float)));

# %% [markdown]
# ## Real tables
#
# The paper also compares the DLGN with ReLU networks and tree learners on
# real tabular data. Here: scikit-learn's bundled breast cancer, wine, iris and
# digits tables, split 60/20/20 and min-max scaled by `iclr25.tabular`, over
# `tab_seeds` splits and initialisations. The DLGN and the ReLU network (same
# width and depth) train for about `tab_steps` Adam steps (learning rate
# `tab_lr`, batches of `tab_batch`) on the training split. CART is chosen
# over the authors' grid on the validation split (a depth cap among them, so
# a pruned tree), then refitted on training and validation. Test accuracy,
# mean over seeds:

# %%
TAB = dict(width=p.width, depth=p.depth, beta=p.beta, steps=p.tab_steps,
           lr=p.tab_lr, batch_size=p.tab_batch)


def tab_build(name, s):
    with core.threads(1):
        return dlgn.tabular_run(name, s, **TAB)


rows = {(name, s): core.cached("dlgn-tab", dict(TAB, name=name, seed=s,
                                                cart="authors' grid"),
                               lambda name=name, s=s: tab_build(name, s))
        for name in dlgn.TABULAR
        for s in range(p.seed, p.seed + p.tab_seeds)}
table = pd.DataFrame(rows.values(), index=pd.MultiIndex.from_tuples(
    rows.keys(), names=["data", "seed"]))
means = table.groupby("data", sort=False).mean()
means.round(3)

# %% [markdown]
# "Competitive", fixed before the run: the DLGN's mean accuracy is no more than
# 2 points below the ReLU network's on at least 3 of the 4 tables, and at least
# CART's on all 4.

# %%
near = means["DLGN"] >= means["ReLU MLP"] - 0.02
above = means["DLGN"] >= means["CART"]
core.claim(
    "tabular_competitive",
    value={"near_mlp": int(near.sum()), "beats_cart": int(above.sum())},
    measured="DLGN - MLP: " + ", ".join(
        f"{k} {100 * v:+.1f}"
        for k, v in (means["DLGN"] - means["ReLU MLP"]).items())
    + "; DLGN - CART: " + ", ".join(
        f"{k} {100 * v:+.1f}"
        for k, v in (means["DLGN"] - means["CART"]).items()),
);

# %% [markdown]
# ## How sharp must the gates be? Sensitivity to $\beta$
#
# $\beta$ sets how step-like the gates are: small $\beta$ blurs them into a
# smooth function, large $\beta$ makes them hard steps with little gradient.
# For each $\beta$ a DLGN trains for `sweep_epochs` epochs on the tree data; the
# figure shows its test accuracy and median closest-gate distance, and every
# node's closest gate at the chosen $\beta$. The slider under the figure works
# on the static page.

# %%
def sweep_build(b):
    with core.threads(1):
        run = dlgn.train_on_tree(data, "DLGN", epochs=p.sweep_epochs,
                                 seed=p.seed, **dict(SETTING, beta=b))
    return {"accuracy": run["accuracy"], "distances": run["distances"][-1]}


sweep = {b: core.cached("dlgn-beta", dict(CONFIG, seed=p.seed, beta=b,
                                          epochs=p.sweep_epochs),
                        lambda b=b: sweep_build(b))
         for b in dlgn.BETAS}
for b, r in sweep.items():
    print(f"beta {b:>4g}: accuracy {r['accuracy']:.3f}, median distance "
          f"{np.median(r['distances'].numpy()):.3f}")
core.explore(lambda b: dlgn.beta_figure(sweep, b), dlgn.BETAS, "beta",
             active=dlgn.BETAS.index(4.0));

# %% [markdown]
# ## Claims

# %%
core.claims_table();

# %% [markdown]
# **Reading the claims.** `truth_recovered` is a setup claim on the extraction
# itself: given each tree's own hyperplanes in proportion to their scope of
# discontinuity, does DLGN-DT rebuild the labelling tree? `extracted_tree`
# and `extracted_beats_cart` rest on it. The table under DLGN-DT counts, run
# by run, the splits that came from a cluster of `cluster_min` gates and those
# that fell back on a logistic regression. The comparisons with the baselines
# and with CART are paired by run, with 95% t intervals over the `runs` runs;
# `gates_move` asks for its bounds in the worst run. The "paper" column gives the paper's own figure
# where its tables state it, the authors' repository's where only that does,
# and the claim in words otherwise.

# %% [markdown]
# ## What differs from the paper
#
# * **Sources.** The paper links no code. Its text fixes the DLGN, DLGN-DT
#   (Algorithms 1-3) and the accuracies it reports; two repositories fix
#   the rest: the unofficial reference (Rohith-Rongali/DLGN: data generator,
#   DLGN with gate biases, SGD) and the authors' notebooks
#   (Doeschate/Feature_Learning_DLGN, which name the paper as theirs).
# * **Data.** We use the reference generator: points uniform in the cube,
#   median biases, alternating leaves, margin over all hyperplanes (we redraw
#   the dropped points, the reference prunes them). The authors' data sets
#   put the points on the unit sphere with hyperplanes through the origin, in
#   20, 100 and 500 dimensions with a depth-4 tree and no margin; in our 8
#   dimensions random normals are far from orthogonal, and the median biases
#   keep every split balanced. The leaf labelling is the same in all three.
# * **Scale and training.** The authors train a DLGN of width 20 and depth 5
#   ($\beta = 3$) on 20,000 of 40,000 points for 1,500 epochs of ten
#   batches with Adam (learning rate 0.02 in their best setting) and keep the
#   model with the best validation error; the reference trains width 200,
#   depth 4, $\beta = 4$ with SGD for 250 epochs. The book trains width 64,
#   depth 3, $\beta = 4$ on 4,000 of 5,000 points in 8 dimensions (depth-3
#   tree) for 300 epochs of ten batches with Adam at 0.01, and keeps the last
#   model, in `runs` runs. Our gates keep
#   their biases (the authors' DLGN has none: their tree's hyperplanes pass
#   through the origin, ours do not). The sweep over $\beta$ trains 100
#   epochs per value.
# * **Tree extraction.** DLGN-DT follows Algorithms 1-3 and the authors'
#   DLGN-DT notebook (largest DBSCAN cluster of the unit-normal gates, first
#   coordinate non-negative; a logistic regression where no cluster forms;
#   nodes split while impure and holding 1% of the training points; each
#   node's DLGN three layers at $\beta = 3$, Adam at 0.001 for 256 epochs,
#   the best epoch kept; DBSCAN radius 0.2 at the root and 0.3 below).
#   Where it departs: each node's DLGN is `dt_width` wide (the notebook's is
#   500; the reference's networks 200) and keeps the epoch with the fewest
#   errors on the last tenth of the node's own points (the notebook scores
#   every node's DLGN on the whole validation split); one `cluster_min` at
#   every node (the notebook varies it by node, and the paper picks both
#   DBSCAN settings on a validation split from radii 0.1-0.3 and 1-40
#   gates); the depth is chosen on validation up to 6 (the paper's search
#   goes to 10); the gates keep their biases, so the clusters are of
#   $(a, c)/\lVert a \rVert$ and the splits need not pass through the
#   origin. The setup check's ideal gates (tree hyperplanes repeated
#   in proportion to their scope of discontinuity) are our control: the
#   paper states the principle, not this test.
# * **Baselines.** The SVM and CART are tuned over the authors' grids, but
#   chosen on a validation part of the training split (on the tables, their
#   validation split); the authors' notebook keeps the setting with the best
#   *test* accuracy. The random forest and
#   gradient boosting keep scikit-learn's defaults.
# * **Placebo.** The placebo DLGN of `gates_move` is our control: the
#   paper compares trained gates with the tree's, not with a DLGN trained on
#   other labels.
# * **Tables.** The tabular sets are scikit-learn's bundled ones, not the
#   paper's collection, and their test splits are small (30 iris and 36 wine
#   flowers), so one test point is about 3 accuracy points on those tables.
#   They train with their own setting (`tab_lr` $= 10^{-3}$, batches of
#   `tab_batch` = 32), smaller than the tree data's.
#
# ## Going further
#
# Nearer the authors' scale (slow on a CPU; a GPU helps little for models
# this small): their data set SDI has 20 dimensions, a depth-4 tree and
# 40,000 points; ten batches an epoch of 3,200 points, 1,500 epochs:
#
# ```bash
# python -m iclr25 run dlgn -p dim=20 -p tree_depth=4 -p n=40000 \
#     -p width=64 -p depth=4 -p epochs=1500 -p batch_size=3200
# ```
#
# DLGN-DT clusters with `cluster_eps`, `cluster_eps_below` and
# `cluster_min`; the paper searches radii 0.1-0.3 and 1-40 gates per core on
# a validation split, and the authors' DLGN-DT notebook trains three layers
# of 500 at every node (`-p dt_width=500`, slower).
#
# The reference's width is 200 (`-p width=200`). Try `-p beta=16` to
# see hard gates train more slowly, or `-p margin=0` for labels that touch
# the hyperplanes. Trained models are cached by configuration
# (`ICLR25_CACHE`), so a rerun only trains what changed.
