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
cluster_eps = 0.2
cluster_min = 6
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
# The DLGN, DLGN-SF and a ReLU network of the same width and depth are trained
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
SETTING = dict(width=p.width, depth=p.depth, beta=p.beta, lr=p.lr,
               batch_size=p.batch_size, seed=p.seed)
CONFIG = dict(SETTING, dim=p.dim, tree_depth=p.tree_depth, n=p.n,
              margin=p.margin, epochs=p.epochs, labels="reference")


def tree_run(kind, on=data, name=""):
    """Train ``kind`` on the tree data ``on`` (cached by configuration)."""
    def build():
        with core.threads(1):
            return dlgn.train_on_tree(on, kind, epochs=p.epochs, **SETTING)
    return core.cached(f"dlgn-tree-{kind}{name}", CONFIG, build)


def baseline_build():
    """Test predictions of the tuned SVM and CART and of the others."""
    found, chosen = {}, {}
    for name in ("SVM", "CART"):
        model, chosen[name] = dlgn.tuned(name, x_train, y_train, p.seed)
        found[name] = model.predict(x_test)
    for name, model in dlgn.baselines(p.seed, p.tree_depth).items():
        if name not in ("CART", "RBF SVM"):
            found[name] = model.fit(x_train, y_train).predict(x_test)
    found = {k: torch.from_numpy(v) for k, v in found.items()}
    return {"predictions": found, "chosen": chosen}


# %%
runs = {kind: tree_run(kind) for kind in dlgn.KINDS}
base = core.cached("dlgn-baselines", dict(CONFIG, grid="authors"),
                   baseline_build)
predicted = {k: v.numpy() for k, v in base["predictions"].items()}
for kind in dlgn.KINDS:
    net = dlgn.restore(kind, runs[kind]["state"], p.dim, p.width,
                       p.depth, p.beta)
    predicted[kind] = dlgn.predict(net, x_test)
correct = {k: 100.0 * (v == y_test) for k, v in predicted.items()}
scores = {k: v.mean() / 100 for k, v in correct.items()}
print("tuned settings:", base["chosen"])
pd.Series(scores, name="test accuracy").round(3).to_frame()

# %% [markdown]
# The paper's claim: on tree-labelled data the DLGN is well above the static
# kernel and the greedy tree; we also set it against the two tree ensembles.
# Each difference is paired over the test points, with a 95% interval.

# %%
VS = {"beats_svm": "SVM", "beats_cart": "CART",
      "beats_forest": "random forest",
      "beats_boosting": "gradient boosting"}
for cid, other in VS.items():
    core.claim(cid, estimate=core.stats.paired_difference(
        correct["DLGN"], correct[other]))

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
other = dlgn.oblique_tree(p.dim, p.tree_depth, p.n, p.margin,
                          p.seed + dlgn.PLACEBO_SEED).tree
placebo_data = dlgn.TreeData(data.x, other.predict(data.x), data.tree)
placebo = tree_run("DLGN", placebo_data, "-placebo")
histories = {kind: runs[kind]["distances"].numpy()
             for kind in ("DLGN", "DLGN-SF")}
histories["DLGN, placebo"] = placebo["distances"].numpy()
dlgn.distance_figure(histories).show()
for kind, h in histories.items():
    print(f"{kind}: closest-gate distance {h[0].min():.2f}-{h[0].max():.2f} "
          f"at init, {h[-1].min():.2f}-{h[-1].max():.2f} after "
          f"{p.epochs} epochs")

# %% [markdown]
# Read the placebo's line against its range at initialisation: a DLGN whose
# labels come from another tree has no reason to put gates on this tree's
# hyperplanes, so its distances measure how close training alone, on these
# points, brings gates to them. The claim divides the DLGN's median trained
# distance by the placebo's (the last number below).

# %%
h = histories["DLGN"]
versus = np.median(h[-1]) / np.median(histories["DLGN, placebo"][-1])
core.claim(
    "gates_move",
    value={"max_ratio": float((h[-1] / h[0]).max()),
           "median_trained": float(np.median(h[-1])),
           "placebo_ratio": float(versus)},
    measured=f"DLGN: trained/initial distance at most "
             f"{(h[-1] / h[0]).max():.2f}; median trained "
             f"{np.median(h[-1]):.3f}, {versus:.2f} of the placebo's",
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
        return dlgn.train_on_tree(flat, "DLGN", epochs=p.epochs,
                                  snapshots=SHOTS, **SETTING)


flat_run = core.cached("dlgn-flat", dict(CONFIG, shots=SHOTS), flat_build)


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
# coordinate is non-negative, clusters them with DBSCAN (radius `cluster_eps`,
# `cluster_min` gates around a core) and splits on the centre of the largest
# cluster; where DBSCAN finds no cluster it splits on a logistic regression's
# hyperplane, as the authors' notebook does (Algorithm 2). The node's points
# are split and both sides recurse while they hold both labels and at least
# 1% of the training points, down to the depth of the labelling tree; a leaf
# takes the majority label of its training points (Algorithm 1). The root's
# DLGN is the one trained above; every other node trains its own, with the
# same recipe, on its share of the points.
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
# Before DLGNs are read, the procedure is run where the answer is known. In
# place of a trained DLGN's gates, each node gets the labelling tree's own
# hyperplanes, each repeated as often as the label jumps across it among the
# node's points (its scope of discontinuity, counted in a band of 0.05 on
# either side): the gates an ideal DLGN would hold if the paper's principle
# were exact. The setup claim, fixed before the run: on most of 8 trees of
# the generator (seeds `seed` to `seed + 7`), the tree built this way reaches
# test accuracy 0.99. The claim on the DLGN's tree rests on it. Each line
# below gives a tree's test accuracy and, split by split in heap order, the
# node of the labelling tree the split lies on (-1 for a leaf): a rebuilt
# tree splits on the root, then on its two children, then on the four
# bottom nodes (each pair in either order, as a split's sign may flip).

# %%
DT = dict(depth=p.tree_depth,
          min_points=round(dlgn.MIN_SHARE * len(y_train)))


def truth_run(s):
    """DLGN-DT given tree ``s``'s own hyperplanes: its test accuracy, and
    the tree node each split lies on (heap order, -1 for a leaf)."""
    d = dlgn.oblique_tree(p.dim, p.tree_depth, p.n, p.margin, s)
    xs, ys, xt, yt = d.split()
    split = dlgn.true_gate_split(d.tree, p.cluster_eps, p.cluster_min)
    built = dlgn.build_tree(xs, ys, split, **DT)
    on = dlgn.plane_distances(built.a, built.c, d.tree).argmin(1)
    on[np.array(built.how) == "leaf"] = -1
    return float((built.predict(xt) == yt).mean()), on


truth = [truth_run(s) for s in range(p.seed, p.seed + dlgn.TRUTH_TREES)]
for s, (acc, on) in enumerate(truth, start=p.seed):
    print(f"tree {s}: test accuracy {acc:.3f}, splits on nodes {on}")
hits = sum(acc >= 0.99 for acc, _ in truth)
core.claim("truth_recovered", estimate=core.stats.share(hits, len(truth)),
           measured=f"{hits} of {len(truth)} trees rebuilt");

# %% [markdown]
# Now DLGN-DT proper, on the training split, with a DLGN trained at each
# node. The bound, fixed before the run: its tree reaches test accuracy 0.90
# and at least the accuracy of CART of the same depth. The lines below give,
# node by node, where the split came from and how far it lies from the
# closest hyperplane of the labelling tree.

# %%
RECIPE = dict(width=p.width, depth=p.depth, beta=p.beta, epochs=p.epochs,
              lr=p.lr, seed=p.seed, eps=p.cluster_eps,
              min_samples=p.cluster_min)


def dt_build():
    """DLGN-DT's splits and leaves, the root's DLGN the one trained above."""
    root = dlgn.restore("DLGN", runs["DLGN"]["state"], p.dim, p.width,
                        p.depth, p.beta)
    with core.threads(1):
        split = dlgn.dlgn_split(root=root, **RECIPE)
        built = dlgn.build_tree(x_train, y_train, split, **DT)
    return {"a": torch.from_numpy(built.a), "c": torch.from_numpy(built.c),
            "how": built.how, "leaves": torch.from_numpy(built.leaves)}


stored = core.cached("dlgn-dt", dict(CONFIG, eps=p.cluster_eps,
                                     min_samples=p.cluster_min,
                                     min_points=DT["min_points"]), dt_build)
built = dlgn.ExtractedTree(stored["a"].numpy(), stored["c"].numpy(),
                           list(stored["how"]), stored["leaves"].numpy())

# %%
tree_acc = float((built.predict(x_test) == y_test).mean())
cart_d = scores[f"CART depth {p.tree_depth}"]
off = dlgn.plane_distances(built.a, built.c, data.tree).min(1)
for k, how in enumerate(built.how):
    print(f"node {k}: {how}" + (f", {off[k]:.3f} from the closest "
                                "tree hyperplane" if how != "leaf" else ""))
print(f"DLGN-DT: test accuracy {tree_acc:.3f}; CART of depth "
      f"{p.tree_depth}: {cart_d:.3f}")
root = dlgn.restore("DLGN", runs["DLGN"]["state"], p.dim, p.width, p.depth,
                    p.beta)
close = dlgn.plane_distances(*dlgn.hyperplanes(root), data.tree)
print(f"gates of the root's DLGN within {p.cluster_eps} of each tree "
      "hyperplane:", (close < p.cluster_eps).sum(0))

# %% [markdown]
# DBSCAN needs `cluster_min` gates within `cluster_eps` of a core gate to
# form a cluster; the last line counts, for the root's DLGN, the gates that
# close to each hyperplane of the labelling tree.
#
# The share of trees the ideal gates rebuild is the regime check for
# DLGN-DT: where the procedure misorders a tree given the gates the paper's
# principle predicts, a DLGN's gates, which that principle describes, are no
# better guide. `extracted_tree` rests on this setup claim.

# %%
core.claim(
    "extracted_tree",
    value={"accuracy": tree_acc, "vs_cart_same_depth": tree_acc - cart_d},
    measured=f"DLGN-DT {tree_acc:.3f} vs CART depth {p.tree_depth} "
             f"{cart_d:.3f}",
);

# %% [markdown]
# ## Real tables
#
# The paper also compares the DLGN with ReLU networks and tree learners on
# real tabular data. Here: scikit-learn's bundled breast cancer, wine, iris and
# digits tables, split 60/20/20 and min-max scaled by `iclr25.tabular`, over
# `tab_seeds` splits and initialisations. The DLGN and the ReLU network (same
# width and depth) train for about `tab_steps` Adam steps (learning rate
# `tab_lr`, batches of `tab_batch`) on the training split; the validation
# split is not used. Test accuracy, mean over seeds:

# %%
TAB = dict(width=p.width, depth=p.depth, beta=p.beta, steps=p.tab_steps,
           lr=p.tab_lr, batch_size=p.tab_batch)


def tab_build(name, s):
    with core.threads(1):
        return dlgn.tabular_run(name, s, **TAB)


rows = {(name, s): core.cached("dlgn-tab", dict(TAB, name=name, seed=s),
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
                                 **dict(SETTING, beta=b))
    return {"accuracy": run["accuracy"], "distances": run["distances"][-1]}


sweep = {b: core.cached("dlgn-beta", dict(CONFIG, beta=b,
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
# rests on it. The lines printed under DLGN-DT say at which nodes DBSCAN found
# a cluster of `cluster_min` gates and where a split fell back on a logistic
# regression. The comparisons with the baselines are paired over the test
# points, with 95% intervals. The "paper" column gives the paper's own figure
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
#   model, so that the chapter runs in about two minutes. Our gates keep
#   their biases (the authors' DLGN has none: their tree's hyperplanes pass
#   through the origin, ours do not). The sweep over $\beta$ trains 100
#   epochs per value.
# * **Tree extraction.** DLGN-DT follows Algorithms 1-3 and the authors'
#   DLGN-DT notebook (largest DBSCAN cluster of the unit-normal gates, first
#   coordinate non-negative; a logistic regression where no cluster forms;
#   nodes split while impure and holding 1% of the training points; depth
#   capped at the labelling tree's). Where it departs: one DBSCAN setting at
#   every node (radius 0.2, 6 gates around a core; the notebook uses 0.2 at
#   the root and 0.3 below, and the paper picks both on a validation split
#   from radii 0.1-0.3 and 1-40 gates); each node's DLGN is trained with the
#   chapter's recipe above, not the notebook's three layers of 500 at
#   $\beta = 3$, learning rate 0.001 and best validation; the gates keep
#   their biases, so the clusters are of $(a, c)/\lVert a \rVert$ and the
#   splits need not pass through the origin; and the root reuses the DLGN
#   trained above. The setup check's ideal gates (tree hyperplanes repeated
#   in proportion to their scope of discontinuity) are our control: the
#   paper states the principle, not this test.
# * **Baselines.** The SVM and CART are tuned over the authors' grids, but
#   chosen on a validation part of the training split; the authors' notebook
#   keeps the setting with the best *test* accuracy. The random forest and
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
# DLGN-DT clusters with `cluster_eps` and `cluster_min`; the paper searches
# radii 0.1-0.3 and 1-40 gates per core on a validation split, and the
# authors' DLGN-DT notebook trains three layers of 500 at every node
# (`-p width=500`, slow, and it widens every model of the chapter).
#
# The reference's width is 200 (`-p width=200`). Try `-p beta=16` to
# see hard gates train more slowly, or `-p margin=0` for labels that touch
# the hyperplanes. Trained models are cached by configuration
# (`ICLR25_CACHE`), so a rerun only trains what changed.
