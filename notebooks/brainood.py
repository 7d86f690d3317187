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
# # BrainOOD: brain-network GNNs that travel to new sites
#
# A brain network has a node per region of interest (ROI) and edges from the
# correlation of the ROIs' fMRI signals. A graph neural network can learn to tell
# patients from controls, but multi-site data carry a trap: each scanner and
# protocol leaves its own mark on the connectivity, and when a site's patients
# and controls come in unequal shares the site itself predicts the label. Does a
# model trained on some sites still work on a new one, and does it point at the
# regions the disorder really touches? {cite:p}`xu2025brainood` add to a GNN a
# feature selector and a structure extractor trained with auxiliary losses
# (reconstruction, alignment of the selected structure across subjects, an
# improved graph information bottleneck) and report better accuracy on held-out
# sites (up to +8.5 points over 16 methods on ABIDE and ADNI) and regions that
# agree with the literature. Here the data are generated, so the disorder's
# regions are known: we plant them, add a site shortcut that held-out sites
# break, and train BrainOOD beside ERM, IRM, VREx, GroupDRO and GSAT.

# %% tags=["parameters"]
n_subjects = 400
n_rois = 50
n_sites = 6
shift = 1.0
shortcut = 0.6
effect = 0.8
edge_ratio = 0.2
epochs = 30
lr = 0.002
batch_size = 64
n_seeds = 2
n_seeds_others = 1
seed = 0
device = "auto"

# %%
import time

import ipywidgets as widgets
import numpy as np
import pandas as pd
import plotly.graph_objects as go

from iclr25 import core
from iclr25.chapters import brainood

p = core.chapter("brainood", globals())

# %% [markdown]
# ## Generated multi-site connectomes
#
# ABIDE and ADNI cannot be downloaded here, so the subjects are generated from a
# latent network model. `n_rois` ROIs fall into 7 communities, each driven by its
# own factor. The disorder adds a shared factor to a planted set of ROIs (the
# ground truth), with a strength that varies between subjects so that patients
# and controls overlap. Each site adds a global signal, its own noise level, a
# scaling of each ROI and a spurious sub-network of its own; all of them grow
# with `shift` and vanish at 0. Training sites have disorder prevalence 0.8 or
# 0.2 (a gap of `shortcut`), so the site predicts the label there; the two
# held-out sites have 0.5.
#
# ```{literalinclude} ../lib/iclr25/chapters/brainood/data.py
# :pyobject: sample_subjects
# ```
#
# The graphs are built as the official loader builds them: node features are
# the rows of the correlation matrix, edges the strongest `edge_ratio` of
# |correlation|. The splits are GOOD's: the training sites' subjects go 70/15/15
# to train, ID validation and ID test; one held-out site validates (model
# selection, as GOOD does) and the other is the OOD test.
#
# ```{literalinclude} ../lib/iclr25/chapters/brainood/data.py
# :pyobject: to_graphs
# ```

# %%
cohort = brainood.generate(
    p.n_subjects, p.n_rois, n_sites=p.n_sites, shift=p.shift,
    shortcut=p.shortcut, effect=p.effect, seed=p.seed)
splits = brainood.split(cohort, p.n_sites - 2, p.n_sites - 1,
                        p.edge_ratio, seed=p.seed)
print({k: len(v) for k, v in vars(splits).items()})
conn = brainood.planted_connectivity(cohort)
frame = pd.DataFrame({"site": cohort.site, "label": cohort.y,
                      "planted": conn})
fig = go.Figure()
for label, name in ((0, "control"), (1, "disorder")):
    part = frame[frame.label == label]
    fig.add_box(x=part.site, y=part.planted, name=name)
fig.update_layout(
    boxmode="group", title="Mean correlation among the planted ROIs",
    xaxis_title=f"site (last two held out: {p.n_sites - 2}, "
                f"{p.n_sites - 1})", yaxis_title="mean correlation")
fig.show()
print(frame.groupby("site").label.mean().round(2).to_dict())

# %% [markdown]
# The planted ROIs' connectivity separates the labels at every site, with
# overlap; the last line is each site's disorder prevalence, the shortcut.
# The sites also differ in ways a classifier can see: a logistic regression
# on the controls' connectivity (one label, so that prevalence cannot help)
# tells the sites apart, and at `shift = 0` it is at chance (a unit test).

# %%
controls = cohort.y == 0
site_acc, chance = brainood.site_classifier_accuracy(brainood.Cohort(
    cohort.corr[controls], cohort.y[controls], cohort.site[controls],
    cohort.planted))
print(f"site from connectivity: {site_acc:.2f} (chance {chance:.2f})")

# %% [markdown]
# ## The model: official GDGMTvGIN with the BrainOOD algorithm
#
# The backbone is the official 2-layer vGIN (hidden width = `n_rois`, dropout
# 0.5, mean pooling). BrainOOD multiplies the node features by a mask shared by
# all subjects, $M = \sigma(EE^\top)$, symmetric and in $[0, 1]$:
#
# ```{literalinclude} ../lib/iclr25/chapters/brainood/method.py
# :pyobject: feature_mask
# ```
#
# An edge MLP scores every edge from its two node embeddings; in training the
# attention is $\sigma(l + \log u - \log(1-u))$, symmetrised. Five rounds each
# draw a binary mask with the straight-through estimator, mask the message
# passing (torch_geometric's `set_masks`) and the class logits are averaged:
#
# ```{literalinclude} ../lib/iclr25/chapters/brainood/method.py
# :pyobject: straight_through
# ```
#
# ```{literalinclude} ../lib/iclr25/chapters/brainood/method.py
# :pyobject: BrainNet.forward
# ```
#
# ```{literalinclude} ../lib/iclr25/chapters/brainood/method.py
# :pyobject: BrainNet.masked_passes
# ```
#
# The auxiliary losses: alignment (the same structure in every subject), the
# GIB's KL to a Bernoulli prior whose $r$ falls from 0.9 by 0.1 every 20
# epochs, and the reconstruction $\tanh(HH^\top) \odot M$ of the masked
# features by a high-pass GIN (inside `forward` above).
#
# ```{literalinclude} ../lib/iclr25/chapters/brainood/method.py
# :pyobject: alignment_loss
# ```
#
# ```{literalinclude} ../lib/iclr25/chapters/brainood/method.py
# :pyobject: gib_loss
# ```
#
# ```{literalinclude} ../lib/iclr25/chapters/brainood/method.py
# :pyobject: r_schedule
# ```
#
# The objective adds them with the shipped ABIDE weights (GIB 0.0, alignment
# 0.1, reconstruction 0.5, entropy 0.01); the baselines' penalties are GOOD's,
# with their shipped weights, and every environment is a training site:
#
# ```{literalinclude} ../lib/iclr25/chapters/brainood/method.py
# :pyobject: objective
# ```

# %% [markdown]
# ## Training every method
#
# Ten variants on the same backbone: ERM, IRM, VREx, GroupDRO, GSAT (edge
# extractor and GIB with weight 1, one soft-masked pass), BrainOOD as shipped
# (GIB weight 0), BrainOOD with the GIB on (weight 1), and BrainOOD without
# the feature selector, the alignment or the reconstruction. Each trains
# `epochs` epochs with Adam and keeps the epoch of best OOD-validation
# accuracy; ERM and BrainOOD over `n_seeds` seeds, the others over
# `n_seeds_others`. Trained weights are cached.

# %%
DATA = {k: getattr(p, k) for k in (
    "n_subjects", "n_rois", "n_sites", "shift", "shortcut", "effect",
    "edge_ratio", "seed")}
TRAIN = {"epochs": p.epochs, "lr": p.lr, "batch_size": p.batch_size}
MAIN = ("ERM", "BrainOOD")


def trained(name, s):
    config = {**DATA, **TRAIN, "method": name, "train_seed": s, "v": 1}
    result = core.cached("brainood-model", config, lambda: brainood.fit(
        brainood.METHODS[name], splits, seed=s,
        device=str(p.torch_device), **TRAIN))
    return brainood.load(brainood.METHODS[name], p.n_rois, result["state"])


wall, cpu = time.perf_counter(), time.process_time()
with core.threads(1):
    models = {name: [trained(name, p.seed + k) for k in range(
        p.n_seeds if name in MAIN else p.n_seeds_others)]
        for name in brainood.METHODS}
print(f"{sum(map(len, models.values()))} models: "
      f"{time.perf_counter() - wall:.0f} s wall, "
      f"{time.process_time() - cpu:.0f} s CPU")

# %% [markdown]
# ## Accuracy on training sites and held-out sites
#
# ID test is the training sites' held-out subjects, where the shortcut still
# pays; OOD test is the held-out test site. Bars are means over seeds, whiskers
# one standard deviation (none for one seed). The bounds were fixed before
# the run: ERM loses at least 5 points from ID to OOD (the generator makes a
# real shift); BrainOOD gains at least 2 points over ERM on OOD and is at
# least as good as the best of IRM, VREx, GroupDRO and GSAT.

# %%
rows = []
eval_sets = {"ID test": splits.id_test, "OOD val": splits.ood_val,
             "OOD test": splits.ood_test}
for name, ms in models.items():
    for k, model in enumerate(ms):
        for split_name, graphs in eval_sets.items():
            pred = brainood.predict(model, graphs) > 0.5
            for g, yhat in zip(graphs, pred):
                rows.append({"method": name, "seed": k, "split": split_name,
                             "site": int(g.site),
                             "correct": float(yhat) == float(g.y)})
scores = pd.DataFrame(rows).astype({"correct": float})
per_seed = scores.groupby(["method", "split", "seed"], sort=False).correct
summary = (per_seed.mean().groupby(["method", "split"], sort=False)
           .agg(["mean", "std"]).reset_index()
           .rename(columns={"std": "sd"}))
shown = summary[summary.split != "OOD val"]
brainood.accuracy_figure(shown).show()
table = summary.pivot(index="method", columns="split", values="mean")
table.loc[list(models)].round(3)

# %% [markdown]
# The same accuracies per site (means over seeds): the training sites'
# columns use their ID-test subjects, the last two are the held-out sites.

# %% tags=["hide-input"]
by_site = scores.groupby(["method", "site"]).correct.mean().unstack()
by_site.loc[list(models)].round(2)

# %%
ood = table["OOD test"]
drop = 100 * (table.loc["ERM", "ID test"] - ood["ERM"])
core.claim(
    "shift_is_real",
    value=drop,
    measured=f"ERM ID {table.loc['ERM', 'ID test']:.3f}, "
             f"OOD {ood['ERM']:.3f}: {drop:.1f} points")
gain = 100 * (ood["BrainOOD"] - ood["ERM"])
core.claim(
    "ood_gain",
    value=gain,
    measured=f"BrainOOD {ood['BrainOOD']:.3f} vs ERM {ood['ERM']:.3f} "
             f"({gain:+.1f} points, {p.n_seeds} seeds)");

# %%
rivals = ood[["IRM", "VREx", "GroupDRO", "GSAT"]]
margin = 100 * (ood["BrainOOD"] - rivals.max())
core.claim(
    "beats_ood_baselines",
    value=margin,
    measured=f"BrainOOD {ood['BrainOOD']:.3f} vs best baseline "
             f"{rivals.idxmax()} {rivals.max():.3f} ({margin:+.1f} points)");

# %% [markdown]
# ## Do the selected edges point at the planted ROIs?
#
# A node's importance is the mean (evaluation-mode) attention of its incident
# edges, averaged over the OOD test subjects; the planted ROIs are the truth.
# AUROC of importance against the planted set, and precision@k with k the
# number of planted ROIs, for every model with an edge extractor. Bound, fixed
# before the run: BrainOOD's AUROC at least 0.8 and at least GSAT's.

# %%
ATTENDING = [n for n, m in brainood.METHODS.items() if m.extractor]
roi_rows, attention = [], {}
for name in ATTENDING:
    for k, model in enumerate(models[name]):
        dense, importance = brainood.edge_attention(model, splits.ood_test)
        attention[name, k] = dense, importance
        roi_rows.append({"method": name, "seed": k, **brainood.roi_recovery(
            importance, cohort.planted)})
roi = pd.DataFrame(roi_rows).groupby("method", sort=False).mean()
imp = {n: attention[n, 0][1] for n in ("BrainOOD", "GSAT")}
fig = core.plot(np.arange(p.n_rois), imp, mode="markers",
                title="Node importance (seed 0); planted ROIs shaded",
                xlabel="ROI", ylabel="mean attention of incident edges")
for r in np.flatnonzero(cohort.planted):
    fig.add_vrect(x0=r - 0.5, x1=r + 0.5, fillcolor="orange",
                  opacity=0.25, line_width=0)
fig.show()
roi.drop(columns="seed").round(3)

# %%
auroc = roi.loc["BrainOOD", "auroc"]
core.claim(
    "roi_recovery",
    value={"auroc": auroc, "minus_gsat": auroc - roi.loc["GSAT", "auroc"]},
    measured=f"AUROC {auroc:.3f} (GSAT {roi.loc['GSAT', 'auroc']:.3f}); "
             f"precision@k {roi.loc['BrainOOD', 'precision_at_k']:.2f}");

# %% [markdown]
# What the shipped BrainOOD (seed 0) selects: its mean edge attention over the
# OOD test subjects, its feature mask $M$, and the planted sub-network.

# %% tags=["hide-input"]
mask = brainood.feature_mask(models["BrainOOD"][0].mask_emb).detach()
brainood.structure_figure(attention["BrainOOD", 0][0], mask.numpy(),
                          cohort.planted).show()

# %% [markdown]
# ## Sensitivity: how strong a site shift can the models take?
#
# Fresh test sites of the same population, with prevalence 0.5 and site
# effects from none (0) to twice the training sites' (2), go through the
# trained ERM and BrainOOD models: inference only. Shift 0 is not the
# training distribution: every training site carries site effects of
# strength 1, so 0 and 2 are both departures from it, in opposite
# directions. The live slider redraws with a kernel; on the static page,
# move the figure's own slider.

# %%
MULTS, fresh = [0.0, 0.5, 1.0, 1.5, 2.0], {}
n_fresh = max(24, p.n_subjects // 4)


def fresh_figure(mult):
    if mult not in fresh:
        c = brainood.fresh_sites(p.n_rois, n_fresh, shift=mult * p.shift,
                                 effect=p.effect, seed=p.seed)
        graphs = brainood.to_graphs(c.corr, c.y, c.site, p.edge_ratio)
        fresh[mult] = {n: [brainood.accuracy(m, graphs) for m in models[n]]
                       for n in MAIN}
    fig = go.Figure()
    for n, accs in fresh[mult].items():
        fig.add_bar(x=[n], y=[np.mean(accs)], name=n, showlegend=False)
        fig.add_scatter(x=[n] * len(accs), y=accs, mode="markers",
                        marker_color="black", showlegend=False)
    fig.update_yaxes(range=[0.3, 1.0], title_text="accuracy")
    return fig.update_layout(title=f"Fresh sites at {mult} x the training "
                                   "sites' shift (dots: seeds)")


slider = widgets.FloatSlider(value=1.0, min=0.0, max=2.0, step=0.25,
                             description="shift multiple",
                             continuous_update=False)
core.explore(fresh_figure, MULTS, "shift multiple", live=slider, active=2)

# %% tags=["hide-input"]
pd.DataFrame({m: {n: np.mean(a) for n, a in fresh[m].items()}
              for m in MULTS}).round(3)

# %% [markdown]
# ## Claims
#
# Each rule in the chapter's CLAIMS registry (`brainood.CLAIMS`) was fixed in
# the chapter's issue before any run. All three paper claims had been
# declared known gaps before the book run: the OOD test site holds about 67
# subjects, so one model's accuracy there has a binomial standard error near
# 5 points, the baselines run one seed each, and 30 epochs are some 90 Adam
# steps. They held in the book run, and the declarations were withdrawn. The
# caveat stands: each margin rests on one generated held-out site, and the
# baselines on one seed, so read a margin of a few points, above all against
# the best of four baselines, as one draw.

# %%
core.claims_table();

# %% [markdown]
# ## What differs from the paper
#
# - **Data.** The paper uses ABIDE (autism) and ADNI (Alzheimer's) with the
#   Schaefer-100 atlas, split by site; we generate 400 subjects of 50 ROIs at
#   6 sites, with a planted disorder sub-network and a site shortcut we
#   control. Real site effects are subtler and the real disorder signal
#   weaker and unknown; ours makes the shift and the truth measurable.
# - **Scale.** 30 epochs instead of 50 (200 for the baselines' shipped
#   configs), about 190 training subjects instead of about a thousand, one
#   held-out test site instead of 10-fold cross-validation, 2 seeds for ERM
#   and BrainOOD and 1 for the others. So the differences between methods are
#   measured on one 67-subject test site, and the GIB's $r$ never
#   reaches its floor of 0.7. All methods share
#   BrainOOD's schedule (Adam, rate 0.002, batch 64) rather than their own
#   shipped rates.
# - **Model.** As the official GDGMTvGIN, except that hidden width = `n_rois`
#   (50; the paper's 100 is its ROI count), and two exact speed-ups in the
#   edge MLP (the first layer on nodes; InstanceNorm on a per-graph view
#   when every graph has the same number of edges), both checked equal to
#   the library's layers in the tests. BrainOOD's reported configuration
#   is the shipped one (GIB weight 0); the GIB-on variant is shown beside
#   it.
# - **Interpretation.** The paper's case studies compare selected regions
#   with the neuroscience literature; here the planted ROIs allow a score
#   (AUROC, precision@k) that real data cannot give.
#
# ## Going further
#
# The paper's scale, on a GPU where present (several minutes per method):
#
# ```
# python -m iclr25 run brainood -p n_subjects=1000 -p n_rois=100 \
#     -p epochs=50 -p n_seeds=3 -p n_seeds_others=3
# ```
#
# Try `-p shortcut=0` (no shortcut: the ID-OOD drop is then the site
# effects alone), `-p shift=0` (no site effects), or a weaker disorder
# (`-p effect=0.5`), and rotate which sites are held out by changing `seed`.
