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
# break, and train BrainOOD beside ERM, IRM {cite:p}`arjovsky2019irm`, VREx {cite:p}`krueger2021vrex`,
# GroupDRO {cite:p}`sagawa2020groupdro` and GSAT.

# %% tags=["parameters"]
n_subjects = 400
n_rois = 50
n_sites = 6
shift = 1.0
shortcut = 0.6
effect = 0.8
drift = 0.0
edge_ratio = 0.2
epochs = 30
lr = 0.002
batch_size = 64
n_cohorts = 5
n_fresh_sites = 12
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
from iclr25.core import stats

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
    shortcut=p.shortcut, effect=p.effect, drift=p.drift, seed=p.seed)
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
# ## Training every method on every cohort
#
# Nine variants on the same backbone: ERM, IRM, VREx, GroupDRO, GSAT
# {cite:p}`miao2022gsat` (edge extractor and GIB with weight 1, one
# soft-masked pass), BrainOOD as shipped (GIB weight 0), and BrainOOD without
# the feature selector, the alignment or the reconstruction. Each trains
# `epochs` epochs with Adam and keeps the epoch of best OOD-validation
# accuracy. The unit of replication is the cohort: `n_cohorts` cohorts are
# generated (data seeds `seed`, `seed + 1`, ...), each with its own
# population, planted ROIs and sites, and every method trains once on each at
# the cohort's seed. The figures above show the first cohort. A tenth
# variant, BrainOOD with the improved GIB switched on, trains on the first
# cohort only, as a report. Trained weights are cached.

# %%
DATA = {k: getattr(p, k) for k in (
    "n_subjects", "n_rois", "n_sites", "shift", "shortcut", "effect",
    "drift", "edge_ratio", "seed")}
TRAIN = {"epochs": p.epochs, "lr": p.lr, "batch_size": p.batch_size}
MAIN = ("ERM", "BrainOOD")
RIVALS = ("IRM", "VREx", "GroupDRO", "GSAT")
ABLATIONS = {"selector_helps": "no selector",
             "alignment_helps": "no alignment",
             "reconstruction_helps": "no reconstruction"}
NAMES = [*MAIN, *RIVALS, *ABLATIONS.values()]
GIB = "BrainOOD, GIB on"
COHORTS = [p.seed + c for c in range(p.n_cohorts)]


# %%
def cohort_splits(s):
    """Cohort s (its data seed) and its GOOD splits."""
    data = brainood.generate(
        p.n_subjects, p.n_rois, n_sites=p.n_sites, shift=p.shift,
        shortcut=p.shortcut, effect=p.effect, drift=p.drift, seed=s)
    return data, brainood.split(data, p.n_sites - 2, p.n_sites - 1,
                                p.edge_ratio, seed=s)


def trained(name, s, parts):
    config = {**DATA, **TRAIN, "seed": s, "method": name, "train_seed": s,
              "v": 2}
    result = core.cached("brainood-model", config, lambda: brainood.fit(
        brainood.METHODS[name], parts, seed=s,
        device=str(p.torch_device), **TRAIN))
    return brainood.load(brainood.METHODS[name], p.n_rois, result["state"])

# %%
wall, cpu = time.perf_counter(), time.process_time()
data = {s: (cohort, splits) if s == p.seed else cohort_splits(s)
        for s in COHORTS}
with core.threads(1):
    models = {n: [trained(n, s, data[s][1]) for s in COHORTS] for n in NAMES}
    gib_model = trained(GIB, p.seed, splits)
print(f"{sum(map(len, models.values())) + 1} models: "
      f"{time.perf_counter() - wall:.0f} s wall, "
      f"{time.process_time() - cpu:.0f} s CPU")

# %% [markdown]
# ## Accuracy on training sites and held-out sites
#
# ID test is the training sites' held-out subjects, where the shortcut still
# pays; OOD test is the held-out test site. Bars are means over cohorts,
# whiskers one standard deviation. One held-out site of some 67
# subjects cannot decide a difference of a few points (one model's binomial
# standard error there is near 6 points), so the claims below are decided on
# `n_fresh_sites` new sites instead.

# %%
rows = []
for name, ms in models.items():
    for k, (s, model) in enumerate(zip(COHORTS, ms)):
        part = data[s][1]
        for split_name, graphs in (("ID test", part.id_test),
                                   ("OOD val", part.ood_val),
                                   ("OOD test", part.ood_test)):
            pred = brainood.predict(model, graphs) > 0.5
            for g, yhat in zip(graphs, pred):
                rows.append({"method": name, "cohort": k, "split": split_name,
                             "site": int(g.site),
                             "correct": float(yhat) == float(g.y)})
scores = pd.DataFrame(rows).astype({"correct": float})
per_run = scores.groupby(["method", "split", "cohort"], sort=False).correct
summary = (per_run.mean().groupby(["method", "split"], sort=False)
           .agg(["mean", "std"]).reset_index()
           .rename(columns={"std": "sd"}))
shown = summary[summary.split != "OOD val"]
brainood.accuracy_figure(shown).show()
table = summary.pivot(index="method", columns="split", values="mean")
table.loc[list(models)].round(3)

# %% [markdown]
# The same accuracies per site (means over cohorts): the training sites'
# columns use their ID-test subjects, the last two are the held-out sites.

# %% tags=["hide-input"]
by_site = scores.groupby(["method", "site"]).correct.mean().unstack()
by_site.loc[list(models)].round(2)

# %% [markdown]
# ## Deciding on fresh sites
#
# Each cohort draws `n_fresh_sites` new sites of its own population, each
# with 60 subjects at prevalence 0.5 and site effects of the training sites'
# strength, and they go through that cohort's trained models (inference
# only). A difference between two methods is paired by cohort and by site,
# and its interval is a two-stage bootstrap: cohorts drawn with replacement,
# then the sites within each, so it holds both the spread between cohorts
# and the sites' noise. The rules were fixed before the run: ERM loses more
# than 5 points from its ID test to the new sites (setup: the shift is real,
# a t interval paired over cohorts); BrainOOD gains more than 2 points over
# ERM; BrainOOD beats the baseline with the best mean on these sites, which
# the choice favours; and each component of BrainOOD adds accuracy (BrainOOD
# minus the ablation).

# %%
n_site = 60


def new_sites(s, drift, n_sites):
    """Cohort s's fresh sites at a drift, as graphs."""
    c = brainood.fresh_sites(
        p.n_rois, n_site * n_sites, shift=p.shift, effect=p.effect,
        n_sites=n_sites, drift=drift, seed=s, draw=1)
    return brainood.to_graphs(c.corr, c.y, c.site, p.edge_ratio)


fresh = {s: new_sites(s, p.drift, p.n_fresh_sites) for s in COHORTS}
site_acc = {n: 100 * np.array([brainood.site_accuracy(m, fresh[s])
                               for s, m in zip(COHORTS, ms)])
            for n, ms in models.items()}  # [cohorts, sites], points
fresh_table = pd.DataFrame({
    "mean": {n: a.mean() for n, a in site_acc.items()},
    "worst site": {n: a.min() for n, a in site_acc.items()},
    "best site": {n: a.max() for n, a in site_acc.items()},
    "cohort sd": {n: a.mean(1).std(ddof=1) if len(a) > 1 else np.nan
                  for n, a in site_acc.items()}})
fresh_table.round(1)

# %%
erm_id = scores[(scores.method == "ERM") & (scores.split == "ID test")]
id_erm = erm_id.groupby("cohort").correct.mean().to_numpy() * 100
shift_est = stats.paired_runs(id_erm, site_acc["ERM"].mean(1))
core.claim("shift_is_real", estimate=shift_est,
           measured=f"ERM ID test minus new sites, points, {p.n_cohorts} "
                    "cohorts")
best = max(RIVALS, key=lambda n: site_acc[n].mean())
versus = {"ood_gain": "ERM", "beats_ood_baselines": best, **ABLATIONS}
gaps = {cid: site_acc["BrainOOD"] - site_acc[other]
        for cid, other in versus.items()}  # [cohorts, sites]
diffs = {cid: stats.two_stage(list(d)) for cid, d in gaps.items()}
for cid, est in diffs.items():
    core.claim(cid, estimate=est,
               measured=f"BrainOOD minus {versus[cid]}, points, "
                        f"{p.n_cohorts} cohorts x {p.n_fresh_sites} sites")

# %% [markdown]
# Each comparison cohort by cohort: a dot is one cohort's mean difference
# over its new sites, the bar the mean with its 95% interval.

# %% tags=["hide-input"]
fig = go.Figure()
for cid, est in diffs.items():
    d = gaps[cid].mean(1)
    fig.add_scatter(x=[versus[cid]] * len(d), y=d, mode="markers",
                    marker_color="grey", showlegend=False)
fig.add_bar(x=[versus[c] for c in diffs],
            y=[e.value for e in diffs.values()],
            error_y=stats.error_bars(list(diffs.values())),
            opacity=0.5, showlegend=False)
fig.update_layout(title="BrainOOD minus each method on new sites",
                  yaxis_title="accuracy difference (points)")
fig.show()

# %% [markdown]
# ## Do the selected edges point at the planted ROIs?
#
# A node's importance is the mean (evaluation-mode) attention of its incident
# edges, averaged over the cohort's OOD test subjects; the cohort's planted
# ROIs are the truth. AUROC of importance against the planted set, and
# precision@k with k the number of planted ROIs, for every model with an edge
# extractor, in every cohort. Two controls need no network: a random ranking,
# whose AUROC is 0.5 in expectation, and a univariate statistic, the |Welch
# t| of each ROI's node strength between patients and controls on the
# cohort's training subjects. Rules fixed before the run: BrainOOD's AUROC
# above 0.8, and above the better of GSAT and the univariate statistic,
# paired by cohort, with t intervals over cohorts.

# %%
ATTENDING = [n for n in models if brainood.METHODS[n].extractor]
roi_rows, attention = [], {}
for k, s in enumerate(COHORTS):
    truth, part = data[s]
    ranks = {n: brainood.edge_attention(models[n][k], part.ood_test)
             for n in ATTENDING}
    attention.update({(n, k): r for n, r in ranks.items()})
    scores_k = {n: r[1] for n, r in ranks.items()}
    scores_k["univariate"] = brainood.univariate_importance(
        np.stack([g.x.numpy() for g in part.train]),
        np.array([int(g.y) for g in part.train]))
    for n, importance in scores_k.items():
        roi_rows.append({"method": n, "cohort": k, **brainood.roi_recovery(
            importance, truth.planted)})
roi_runs = pd.DataFrame(roi_rows)
roi = roi_runs.groupby("method", sort=False)[["auroc", "precision_at_k"]]
roi.mean().round(3)
# %%
imp = {n: attention[n, 0][1] for n in ("BrainOOD", "GSAT")}
fig = core.plot(np.arange(p.n_rois), imp, mode="markers",
                title="Node importance (first cohort); planted ROIs shaded",
                xlabel="ROI", ylabel="mean attention of incident edges")
for r in np.flatnonzero(cohort.planted):
    fig.add_vrect(x0=r - 0.5, x1=r + 0.5, fillcolor="orange",
                  opacity=0.25, line_width=0)
fig.show()

# %%
auc = roi_runs.pivot(index="cohort", columns="method", values="auroc")
control = max(("GSAT", "univariate"), key=lambda n: auc[n].mean())
core.claim("roi_recovery", estimate=stats.over_runs(auc["BrainOOD"]),
           measured=f"BrainOOD's AUROC, {p.n_cohorts} cohorts")
core.claim("roi_beats_controls",
           estimate=stats.paired_runs(auc["BrainOOD"], auc[control]),
           measured=f"BrainOOD's AUROC minus {control}'s, "
                    f"{p.n_cohorts} cohorts");

# %% [markdown]
# ## The improved GIB switched on
#
# The shipped ABIDE and ADNI configurations give the GIB weight 0, so the
# BrainOOD above has none. The paper's "improved GIB" is a KL between the
# edge attention and a Bernoulli prior whose $r$ falls from 0.9; here it is
# switched on with weight 0.1 (the value the official algorithm's docstring
# gives) and trained on the first cohort: one run, a report and not a claim.

# %%
gib_sites = 100 * brainood.site_accuracy(gib_model, fresh[p.seed])
gib_auc = brainood.roi_recovery(brainood.edge_attention(
    gib_model, splits.ood_test)[1], cohort.planted)["auroc"]
gib_gain = stats.paired_difference(gib_sites, site_acc["BrainOOD"][0])
print(f"GIB weight {brainood.GIB_ON:g}, first cohort: new-site accuracy "
      f"{gib_sites.mean():.1f} against {site_acc['BrainOOD'][0].mean():.1f}"
      f" as shipped (difference over {p.n_fresh_sites} sites: {gib_gain});"
      f" AUROC {gib_auc:.3f} against {auc['BrainOOD'].iloc[0]:.3f}")

# %% [markdown]
# What the shipped BrainOOD (first cohort) selects: its mean edge attention
# over the OOD test subjects, its feature mask $M$, and the planted
# sub-network.

# %% tags=["hide-input"]
mask = brainood.feature_mask(models["BrainOOD"][0].mask_emb).detach()
brainood.structure_figure(attention["BrainOOD", 0][0], mask.numpy(),
                          cohort.planted).show()

# %% [markdown]
# ## When the disorder's sub-network drifts between sites
#
# The generator plants one disorder sub-network that every site shares, which
# is what BrainOOD's shared feature mask and its alignment loss assume. Here
# that assumption breaks at the new sites: each of the `n_fresh_sites` sites
# moves a share (its drift) of the planted ROIs to ROIs of its own choosing,
# so the disorder still links a set of ROIs as strongly, but partly other
# ones at every site. The models are the trained ones above (inference only),
# each cohort's on new sites of its own population; at the chapter's `drift`
# (0 unless set) the sites are the ones that decided the claims, at the other
# levels half as many per cohort. The table gives each method's mean
# accuracy and BrainOOD's gain over ERM, paired by cohort and site, with its
# two-stage 95% interval. This is a report, not a claim: the paper does not
# say what happens here.

# %%
DRIFTS, by_drift = sorted({p.drift, 0.0, 0.25, 0.5, 1.0}), {}
half = max(2, p.n_fresh_sites // 2)
for level in DRIFTS:
    sites = {s: fresh[s] if level == p.drift else new_sites(s, level, half)
             for s in COHORTS}
    by_drift[level] = {n: 100 * np.array(
        [brainood.site_accuracy(m, sites[s]) for s, m in zip(COHORTS, ms)])
        for n, ms in models.items() if n in MAIN}
drift_gain = [stats.two_stage(list(acc["BrainOOD"] - acc["ERM"]))
              for acc in by_drift.values()]

# %% tags=["hide-input"]
brainood.drift_figure(DRIFTS, {n: [acc[n].mean() for acc in by_drift.values()]
                               for n in MAIN}, drift_gain).show()
pd.DataFrame({
    "ERM": [acc["ERM"].mean() for acc in by_drift.values()],
    "BrainOOD": [acc["BrainOOD"].mean() for acc in by_drift.values()],
    "gain": [e.value for e in drift_gain],
    "95% interval": [f"[{e.low:.1f}, {e.high:.1f}]" for e in drift_gain]},
    index=pd.Index(DRIFTS, name="drift")).round(1)

# %% [markdown]
# How to read the table: BrainOOD's feature mask and edge attention pick the
# training sites' planted ROIs (the ROI recovery above), a choice that can
# pay only where a new site shares them. A gain that shrinks as the drift
# grows rests on the shared structure the generator plants; on real data,
# how much of a disorder's sub-network sites share decides how far
# BrainOOD's selection travels. To break the assumption in training as well,
# run the chapter with `-p drift=0.5` (Going further).

# %% [markdown]
# ## Sensitivity: how strong a site shift can the models take?
#
# Fresh test sites of the same population, with prevalence 0.5 and site
# effects from none (0) to twice the training sites' (2), go through the
# trained ERM and BrainOOD models, each cohort's on sites of its own
# population: inference only. Shift 0 is not the
# training distribution: every training site carries site effects of
# strength 1, so 0 and 2 are both departures from it, in opposite
# directions. The live slider redraws with a kernel; on the static page,
# move the figure's own slider.

# %%
MULTS, by_shift = [0.0, 0.5, 1.0, 1.5, 2.0], {}
n_fresh = max(24, p.n_subjects // 4)


def shifted(mult, s):
    c = brainood.fresh_sites(p.n_rois, n_fresh, shift=mult * p.shift,
                             effect=p.effect, drift=p.drift, seed=s)
    return brainood.to_graphs(c.corr, c.y, c.site, p.edge_ratio)


# %%
def fresh_figure(mult):
    if mult not in by_shift:
        graphs = {s: shifted(mult, s) for s in COHORTS}
        by_shift[mult] = {n: [brainood.accuracy(m, graphs[s]) for s, m
                              in zip(COHORTS, models[n])] for n in MAIN}
    fig = go.Figure()
    for n, accs in by_shift[mult].items():
        fig.add_bar(x=[n], y=[np.mean(accs)], name=n, showlegend=False)
        fig.add_scatter(x=[n] * len(accs), y=accs, mode="markers",
                        marker_color="black", showlegend=False)
    fig.update_yaxes(range=[0.3, 1.0], title_text="accuracy")
    return fig.update_layout(title=f"Fresh sites at {mult} x the training "
                                   "sites' shift (dots: cohorts)")


slider = widgets.FloatSlider(value=1.0, min=0.0, max=2.0, step=0.25,
                             description="shift multiple",
                             continuous_update=False)
core.explore(fresh_figure, MULTS, "shift multiple", live=slider, active=2)

# %% tags=["hide-input"]
pd.DataFrame({m: {n: np.mean(a) for n, a in by_shift[m].items()}
              for m in MULTS}).round(3)

# %% [markdown]
# ## Claims

# %%
core.claims_table();

# %% [markdown]
# **Reading the claims.** Every claim is decided over the generated cohorts:
# the accuracy claims by a two-stage bootstrap over cohorts and their new
# sites, the setup claim and the ROI claims by t intervals over cohorts.

# %% [markdown]
# Does the generator hand BrainOOD its answer? In part it does, and the
# reader should know where. The disorder touches one set of ROIs at every
# site, and each site adds a spurious sub-network of its own: this is the
# structure BrainOOD's shared feature mask and its alignment loss assume
# (one structure for every subject). ERM and the baselines see the same
# data, so a gain says that BrainOOD's components use that structure, not
# that real disorders have it. The shift claim is not true by construction:
# ERM could learn the planted signal and ignore the site shortcut, and the
# drop measures how far it did not. Where the shared structure breaks at
# new sites, the section on drift above shows what is left of the gain.
#
# How to read the ablations. Each removes one part and keeps the rest, so a
# difference is what that part adds given the others. The alignment loss is
# the one part whose job is not accuracy: it asks every subject to select
# the same edges. Without it the extractor may pick, subject by subject,
# the edges that classify that subject best, which can add accuracy on new
# sites and still point less at the planted ROIs; the fresh-site table and
# the ROI table above print both numbers for the variant without
# alignment. GSAT shares the edge extractor but has no feature selector,
# no alignment and one soft-masked pass, and its GIB pulls every edge's
# attention towards the same prior r (0.9, then 0.8 after 20 epochs), so
# nothing in its objective asks the attention to single out a sub-network
# shared by the subjects. The fresh-site table prints the spread of each
# method's mean accuracy between cohorts (`cohort sd`), which the claims'
# intervals contain.

# %% [markdown]
# ## What differs from the paper
#
# - **Data.** The paper uses ABIDE (autism) and ADNI (Alzheimer's) with the
#   Schaefer-100 atlas, split by site; we generate cohorts of 400 subjects
#   of 50 ROIs at 6 sites, with a planted disorder sub-network and a site
#   shortcut we control, and replicate over `n_cohorts` cohorts. Real site effects are subtler and the real disorder signal
#   weaker and unknown; ours makes the shift and the truth measurable.
# - **Scale.** 30 epochs for every method, instead of the official 50 for
#   BrainOOD and 200 for the GOOD baselines: the chapter's CPU budget, so the
#   GIB's $r$ never reaches its floor of 0.7. About 190 training subjects
#   instead of about a thousand; new generated sites instead of 10-fold
#   cross-validation over real sites; one training run per method and
#   cohort. All methods share BrainOOD's schedule (Adam, rate 0.002,
#   batch 64) rather than their own shipped rates.
# - **The GIB.** The shipped ABIDE configuration gives the GIB weight 0, and
#   BrainOOD here is that configuration; the GIB-on variant (weight 0.1, the
#   official docstring's value) trains on one cohort as a report, so the
#   paper's "improved GIB" carries no claim here. GSAT's GIB (weight 1,
#   floor 0.5) is trained on every cohort.
# - **Model.** As the official GDGMTvGIN, except that hidden width = `n_rois`
#   (50; the paper's 100 is its ROI count), and two exact speed-ups in the
#   edge MLP (the first layer on nodes; InstanceNorm on a per-graph view
#   when every graph has the same number of edges), both checked equal to
#   the library's layers in the tests. Hidden width follows the ROI count
#   as in the official code, so the paper's 100 needs `n_rois=100`.
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
#     -p epochs=50
# ```
#
# Break the shared-structure assumption with `-p drift=0.5`: every site,
# training and new, then moves half of the planted ROIs elsewhere, and
# the alignment loss asks for one structure that no longer exists.
#
# Try `-p shortcut=0` (no shortcut: the ID-OOD drop is then the site
# effects alone), `-p shift=0` (no site effects), or a weaker disorder
# (`-p effect=0.5`), and draw other cohorts by changing `seed`.
