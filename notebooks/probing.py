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
# # Probe training decides post-hoc attributions
#
# A pre-trained backbone is usually read by a small classification layer, the
# *probe*, trained on its frozen features; attribution methods (gradients, GradCAM,
# LRP {cite:p}`bach2015lrp`, LIME {cite:p}`ribeiro2016lime`, ...) then "explain" the probe's decisions in pixel space. The methods are
# assumed to explain the backbone, whatever the probe. Is that so? {cite:p}`gairola2025probing`
# find that it is not: how the probe is trained, its loss (binary instead of softmax
# cross-entropy) and its form (an MLP, a B-cos MLP), changes how well the maps
# localise a class, more than how the backbone was pre-trained. This chapter trains
# two small backbones (supervised and SimCLR {cite:p}`chen2020simclr`) on noisy digits, probes each ten
# ways, and scores six attribution methods on the grid pointing game, repeating
# the whole experiment in independent runs.

# %% tags=["parameters"]
dataset = "noisy_digits"
n = 6000
width = 16
pools = 1
epochs_sup = 15
epochs_simclr = 20
temperature = 0.5
probe_iter = 1000
probe_width = 32
runs = 5
grids = 20
costly_grids = 5
grid_size = 3
per_class = 20
ig_steps = 16
lime_samples = 100
methods = "ixg,ig,gbp,gradcam,lrp,lime"
seed = 0
device = "auto"

# %%
import time

import ipywidgets as widgets
import numpy as np
import pandas as pd
import torch

from iclr25 import core, vision
from iclr25.chapters import probing
from iclr25.core import stats

p = core.chapter("probing", globals())

# %% [markdown]
# ## The method
#
# A backbone $f$ maps an image to pooled features; a probe $g$ maps those to
# logits $z = g(f(x))$. The backbone is frozen; only $g$ is trained, with softmax
# cross-entropy (CE), $-\log \operatorname{softmax}(z)_y$, or binary cross-entropy
# (BCE), $-\sum_k [t_k \log \sigma(z_k) + (1-t_k)\log(1-\sigma(z_k))]$, on the
# official targets: $t_k = 1$ for the true class and $1/K$ for the other $K-1$ of
# the $K$ classes. The chapter also mixes them, $(1-a)\,\mathrm{CE} + a\,\mathrm{BCE}$:
#
# ```{literalinclude} ../lib/iclr25/chapters/probing/method.py
# :pyobject: probe_loss
# ```
#
# Softmax does not change when the same number is added to every logit, so a CE
# logit is free to rise with evidence for *any* class; a BCE logit must stay low
# unless its own class is present. That is the paper's account of why BCE probes give
# class-specific maps. The probes are linear (with and without bias), 2- and 3-layer
# ReLU MLPs, and a 2-layer B-cos MLP {cite:p}`boehle2022bcos`, whose layers replace $w^\top x$ by
# $|\cos(x, w)|\, \hat w^\top x$ (unit-norm rows $\hat w$, max-out over two units):
#
# ```{literalinclude} ../lib/iclr25/chapters/probing/method.py
# :pyobject: BcosLinear
# ```
#
# **The grid pointing game (GridPG)** {cite:p}`rao2022gridpg`. Test images that every probe classifies
# correctly and confidently are tiled into $3\times3$ grids of nine distinct
# classes. For the class of each cell, the attribution map (summed over channels,
# smoothed, negatives set to zero) should put its mass in that cell; the score is
# the cell's share (1 is perfect, 1/9 is chance):
#
# ```{literalinclude} ../lib/iclr25/chapters/probing/evaluation.py
# :pyobject: gridpg
# ```
#
# The maps come from captum: Input×Gradient (IxG), Integrated Gradients {cite:p}`sundararajan2017ig`, guided
# backprop, GradCAM {cite:p}`selvaraju2017gradcam` on the last convolution, LRP (epsilon rules) and LIME on 4×4
# patches; for B-cos probes also the contribution map $W(x)\,x$.
#
# ```{literalinclude} ../lib/iclr25/chapters/probing/evaluation.py
# :pyobject: attribute
# ```

# %% [markdown]
# ## Two backbones
#
# A three-block CNN (16, 32, 64 channels, 64 features after global average
# pooling) is trained on 16×16 noisy digits (ten classes, each digit rescaled,
# shifted, crossed by a distractor stroke and noised; test digits are unseen in
# training) in two ways: supervised (CE through a linear head) and SimCLR (NT-Xent
# on two augmented views: random resized crops, shifts, noise; the projection
# head is then dropped), standing in for the paper's DINO, MoCo and BYOL. SimCLR's
# usual flips are left out, as are rotations: they would make a digit and its
# mirror one view of the same thing. Both backbones are then frozen.
#
# A map can only point at one cell if units of the last convolution see one cell at
# a time. The paper's ResNet-50 reads 224-pixel cells whose objects fill a good part
# of what its last layer effectively sees; here a cell is 16 pixels wide, so the
# backbone max-pools once (`pools = 1`): a unit of its last convolution sees 12×12
# pixels, less than a cell. With a second max-pool it would see 18×18, more than a
# cell, and every unit would straddle two cells.
#
# The whole experiment runs `runs` times, each run from its own seed (`seed`,
# `seed + 1`, ...): its own draw of the data, its own two backbones, its own
# probes and its own grids (`probing.one_run`). Every claim below is decided
# over these runs, its 95% interval over runs. Integrated Gradients and LIME,
# which cost tens of forward passes per map and decide no claim, run in the
# first run only.

# %%
METHODS = probing.parse_methods(p.methods)
FULL = [m for m in METHODS if m not in probing.COSTLY]
start = time.perf_counter()
RUNS = [probing.one_run(p, p.seed + r, METHODS if r == 0 else FULL)
        for r in range(p.runs)]
FIRST = RUNS[0]
data = FIRST.data
print(f"{len(RUNS)} runs ready in {time.perf_counter() - start:.1f} s "
      f"({data.name}: {len(data.train)} training, {len(data.test)} test "
      f"images, {data.n_classes} classes, per run); receptive field of the "
      f"last conv: {probing.receptive_field(FIRST.backbones['simclr'])} px, "
      f"cell: {data.shape[-1]} px")
vision.image_grid(
    [data.train.x[k, 0] for k in range(8)], rows=1, cols=8,
    titles=[data.classes[int(data.train.y[k])] for k in range(8)],
    title="Training images (first run)", height=200,
    margin=dict(t=60, b=10)).show()

# %% [markdown]
# ## Ten probes per backbone
#
# Each backbone gets every probe trained with CE and with BCE, from the run's
# seed, on its frozen pooled features (scaled to unit root-mean-square per
# feature). The paper trains its probes to convergence; so do we, cheaply, since
# the features are computed once: full-batch L-BFGS until a chunk of 25 iterations
# lowers the training loss by less than 0.01%, or the validation loss stops
# improving (the best-validation weights are kept: on 3,600 images an MLP probe
# would otherwise "converge" by memorising them):
#
# ```{literalinclude} ../lib/iclr25/chapters/probing/method.py
# :pyobject: train_probe
# ```
#
# The test accuracy shows what each probe reads from each backbone.

# %%
fits = pd.DataFrame([m.probe.fit for run in RUNS
                     for m in run.probed.values()])
print(f"{len(fits)} probes over {len(RUNS)} runs; L-BFGS iterations "
      f"{fits.iterations.min()}-{fits.iterations.max()}; "
      f"stopped: {fits.stopped.value_counts().to_dict()}")
ACCURACY = pd.DataFrame({run.seed: run.accuracy for run in RUNS})
ACCURACY.index.names = ["backbone", "probe", "loss"]
acc = ACCURACY.mean(axis=1).unstack("loss")[["ce", "bce"]]
acc["BCE - CE"] = acc["bce"] - acc["ce"]
acc.round(1)

# %% [markdown]
# The table is test accuracy in percent, the mean over runs. The paper's
# backbones are all strong ImageNet models, so a change of pre-training changes
# what the features mean more than how good they are. A setup claim checks that
# ours are matched too: in each run, the linear CE probe's accuracy on SimCLR
# features against that on supervised features.

# %%
linear_ce = ACCURACY.xs(("linear", "ce"), level=["probe", "loss"])
matched = stats.over_runs((linear_ce.loc["supervised"]
                           - linear_ce.loc["simclr"]).abs())
for b in probing.PARADIGMS:
    print(f"{b:>10}: linear CE probe, test accuracy in % "
          f"{stats.over_runs(linear_ce.loc[b])}")
core.claim("backbones_matched", estimate=matched);

# %% [markdown]
# The paper's BCE probes classify as well as its CE probes. Keeping accuracy is
# what a loss that changed nothing would do as well, so it is a fact to print
# here, not a claim: BCE minus CE over the ten pairs of a backbone and a probe
# kind, the mean over pairs in each run, with its interval over runs.

# %%
bce_minus_ce = (ACCURACY.xs("bce", level="loss")
                - ACCURACY.xs("ce", level="loss")).mean()
print(f"BCE - CE test accuracy, mean over the ten pairs: "
      f"{stats.over_runs(bce_minus_ce)} points")

# %% [markdown]
# ## Confident images and grids
#
# The official script keeps a test image only if every probe compared classifies it
# correctly with confidence at least 0.95. Here, in each run, an image is kept
# only if every probe of both backbones classifies it correctly; the images of
# each class are then ranked by the lowest confidence any probe gives the true
# class (softmax for CE probes, the sigmoid of the class's logit for BCE probes),
# and the best `per_class` are kept. We print how many of them reach 0.95 and the
# lowest confidence used. Each run's grids of nine distinct classes are drawn
# once and shared by every probe of both its backbones, so that every comparison
# below, of losses, probes or backbones, is paired on the same grids.

# %%
for run in RUNS:
    print(f"run {run.seed}: {run.kept} images kept, {run.confident} with "
          f"every probe's confidence >= {probing.CONFIDENT}; lowest "
          f"confidence used {run.lowest:.3f}")
grid_x, grid_c = FIRST.grids, FIRST.classes
CELLS = p.grid_size ** 2
SAMPLE = list(range(min(6, len(grid_x))))
vision.image_grid(
    [grid_x[k, 0] for k in SAMPLE], rows=1, cols=len(SAMPLE),
    titles=[",".join(data.classes[c] for c in grid_c[k].tolist())
            for k in SAMPLE],
    title="GridPG grids (first run)", height=240, title_size=8,
    margin=dict(t=60, b=10)).show()

# %% [markdown]
# ## GridPG by probe, loss and method
#
# Every probe on each backbone, every method that applies to it, every cell of
# every grid, in every run. Integrated Gradients and LIME cost tens of forward
# passes per map, so they run on the first run's first `costly_grids` grids only
# (the others on all `grids` of every run); the claims below read the methods
# run on every grid.

# %%
TABLE = {b: {(kind, loss): {
    m: probing.summarise_runs([run.scores[b, kind, loss][m] for run in RUNS
                               if m in run.scores[b, kind, loss]], CELLS)
    for m in FIRST.scores[b, kind, loss]}
    for kind in probing.PROBES for loss in probing.LOSSES}
    for b in probing.PARADIGMS}
probing.heatmaps_figure(TABLE, METHODS).show()

# %% [markdown]
# Each cell is the mean GridPG (a run's mean over its grids, each grid's mean over
# its nine cells, then the mean over runs) with its 95% interval over runs
# (IntGrad and LIME: the first run's mean, no interval); blank cells are methods that do not apply (LRP has no rule for B-cos layers; $W(x)\,x$
# exists for B-cos probes only). Before any comparison, the setup claim: the maps
# can point at a cell at all. GradCAM of the linear CE probe on the supervised
# backbone, the least favoured reading of the strongest features, must score well
# above chance.

# %%
core.claim("maps_localise",
           estimate=TABLE["supervised"]["linear", "ce"]["gradcam"]);

# %% [markdown]
# Below, one grid's maps for the class of its top-left cell, from the linear
# probe on the first run's SimCLR backbone trained with CE and with BCE.

# %%
def example_maps(backbone, kind, k=0):
    """Maps of grid k's top-left class for the CE and the BCE probe."""
    x, c = grid_x[k:k + 1], grid_c[k, :1]
    rows = {}
    for loss in probing.LOSSES:
        model = FIRST.probed[backbone, kind, loss]
        rows[loss.upper()] = {
            probing.METHOD_NAMES[m]: probing.attribute(
                model, m, x, c, ig_steps=p.ig_steps,
                lime_samples=p.lime_samples)[0]
            for m in probing.methods_for(kind, METHODS)}
    return rows, x, data.classes[int(c[0])]


rows, x, name = example_maps("simclr", "linear")
probing.maps_figure(x[0], rows, f"Maps for '{name}' (top left), linear "
                    "probe on SimCLR: CE vs BCE").show()

# %% [markdown]
# ## Does BCE beat CE?
#
# For the linear probe on each backbone, grid by grid: GridPG with BCE minus
# GridPG with CE, each grid's mean over its cells, averaged over the methods run
# on every grid (IxG, GuidedBP, GradCAM, LRP); a run's gain is the mean over its
# grids. The claim: the mean over runs lies above zero, with its 95% interval
# over runs, on each backbone. The printout gives each method's own difference
# and interval.

# %%
def grid_gain(run, b, better, worse, methods):
    """Per grid of a run: mean over methods of GridPG(better) - (worse)."""
    return np.mean([probing.per_grid(run.scores[(b, *better)][m], CELLS)
                    - probing.per_grid(run.scores[(b, *worse)][m], CELLS)
                    for m in methods], axis=0)


def gain(b, better, worse, methods):
    """Each run's mean grid gain, with the interval over runs."""
    return stats.over_runs(
        [grid_gain(run, b, better, worse, methods).mean() for run in RUNS],
        items=sum(len(run.grids) for run in RUNS))


def report(b, better, worse, methods):
    """Each method's gain over runs, in words."""
    return "; ".join(f"{probing.METHOD_NAMES[m]} "
                     f"{gain(b, better, worse, [m])}" for m in methods)


LINEAR = (("linear", "bce"), ("linear", "ce"))
for b in probing.PARADIGMS:
    print(f"{b:>10}, linear BCE - CE: {report(b, *LINEAR, FULL)}")
for b in probing.PARADIGMS:
    core.claim(f"bce_beats_ce_{b}", estimate=gain(b, *LINEAR, FULL))

# %% [markdown]
# ## Do B-cos MLP probes help further?
#
# The B-cos MLP trained with BCE against the linear BCE probe, the same way, over
# the methods run on every grid that apply to both (IxG, GuidedBP, GradCAM). The
# B-cos MLP is not convex in its weights: each run trains it from that run's seed.

# %%
BOTH = [m for m in FULL if m != "lrp"]
BCOS_VS = (("bcos2", "bce"), ("linear", "bce"))
for b in probing.PARADIGMS:
    print(f"{b:>10}, B-cos MLP - linear (BCE): {report(b, *BCOS_VS, BOTH)}")
for b in probing.PARADIGMS:
    core.claim(f"bcos_mlp_{b}", estimate=gain(b, *BCOS_VS, BOTH))

# %% [markdown]
# ## The probe or the pre-training?
#
# Equal numbers of single swaps, on the same grids: the ten swaps of the loss (CE
# to BCE, for each backbone and probe kind) against the ten swaps of the
# pre-training (SimCLR to supervised, for each probe kind and loss). Each swap's
# effect is its mean per-grid GridPG difference over the methods run on every grid
# that apply to the probe; a run's contrast is the mean size of its loss swaps'
# effects minus that of its backbone swaps', and the claim is the mean contrast
# over runs, with its 95% interval over runs:
#
# ```{literalinclude} ../lib/iclr25/chapters/probing/evaluation.py
# :pyobject: swap_contrast
# ```

# %%
def methods_of(kind):
    """The full-grid methods that apply to a probe kind (no W(x)x)."""
    return [m for m in probing.methods_for(kind, FULL) if m != probing.BCOS]

def swaps(run):
    """A run's loss swaps and backbone swaps, each (10, grids)."""
    loss = [grid_gain(run, b, (kind, "bce"), (kind, "ce"), methods_of(kind))
            for b in probing.PARADIGMS for kind in probing.PROBES]
    backbone = [np.mean([
        probing.per_grid(run.scores["supervised", kind, loss][m], CELLS)
        - probing.per_grid(run.scores["simclr", kind, loss][m], CELLS)
        for m in methods_of(kind)], axis=0)
        for kind in probing.PROBES for loss in probing.LOSSES]
    return np.array(loss), np.array(backbone)

SWAPS = [swaps(run) for run in RUNS]
SIZE = {name: stats.over_runs([np.abs(s[k].mean(1)).mean() for s in SWAPS])
        for name, k in (("loss", 0), ("backbone", 1))}
for name, size in SIZE.items():
    print(f"mean |effect| of a {name} swap: {size}")
core.claim("probe_over_pretraining", estimate=stats.over_runs(
    [probing.swap_contrast(*s) for s in SWAPS],
    items=sum(len(run.grids) for run in RUNS)),
    quote={"loss_swap": SIZE["loss"].value,
           "backbone_swap": SIZE["backbone"].value});

# %% [markdown]
# ## Sensitivity: mixing the two losses
#
# Probes trained on the first run's SimCLR backbone with
# $(1-a)\,\mathrm{CE} + a\,\mathrm{BCE}$, $a \in \{0, .25, .5, .75, 1\}$ ($a = 0$
# and $1$ are the CE and BCE probes above), scored by IxG and GradCAM on that
# run's grids, with intervals over its grids. One probe of each kind (linear,
# ReLU MLP, B-cos MLP) in one run keeps the section within the budget.

# %%
ALPHAS = [0.0, 0.25, 0.5, 0.75, 1.0]
MIX = ["ixg", "gradcam"]
MIX_PROBES = ("linear", "mlp2", "bcos2")
mixed = probing.fit_probes(
    FIRST.backbones["simclr"], data, MIX_PROBES, ALPHAS[1:-1], [p.seed],
    max_iter=p.probe_iter, width=p.probe_width)
MIXED = {(a, kind): model for (kind, a, _), model in mixed.items()}
for a in (0, 1):  # pure CE or BCE: the probes trained above
    for kind in MIX_PROBES:
        MIXED[a, kind] = FIRST.probed["simclr", kind, probing.LOSSES[a]]
MIX_SCORES = probing.score_probes(
    MIXED, grid_x, grid_c, MIX, costly_grids=p.costly_grids,
    ig_steps=p.ig_steps, lime_samples=p.lime_samples)

# %%
curves = {m: {kind: [probing.summarise(MIX_SCORES[a, kind][m], CELLS)
                     for a in ALPHAS] for kind in MIX_PROBES}
          for m in MIX}
probing.mixing_figure(ALPHAS, curves).show()

# %% [markdown]
# Move $a$ to see one grid's maps (top-left class) from each probe at that mixture,
# IxG above and GradCAM below; the titles give the map's own GridPG.

# %%
def mixture_maps(a, k=0):
    """IxG and GradCAM maps of grid k's top-left class, every probe at a."""
    x, c = grid_x[k:k + 1], grid_c[k, :1]
    rows = {}
    for m in MIX:
        rows[probing.METHOD_NAMES[m]] = {}
        for kind in MIX_PROBES:
            amap = probing.attribute(MIXED[a, kind], m, x, c)[0]
            score = probing.gridpg(amap, torch.tensor([0]), p.grid_size,
                                   probing.SMOOTHING.get(m, "avg"))[0]
            rows[probing.METHOD_NAMES[m]][f"{kind} {score:.2f}"] = amap
    return probing.maps_figure(
        x[0], rows, f"a = {a:g}: maps for '{data.classes[int(c[0])]}'")


core.explore(mixture_maps, ALPHAS, "BCE weight a", active=len(ALPHAS) - 1);

# %% [markdown]
# ## Explore the maps
#
# Pick a grid and a method to see the maps of every probe on the first run's
# SimCLR backbone, CE above and BCE below (class of the top-left cell). The live control offers every
# method; the static slider steps through ten grids with IxG.

# %%
def probe_maps(choice):
    """Every probe's map for a grid (int) or a (grid, method) pair."""
    k, m = choice if isinstance(choice, tuple) else (choice, "ixg")
    x, c = grid_x[k:k + 1], grid_c[k, :1]
    rows = {loss.upper(): {kind: (
        probing.attribute(FIRST.probed["simclr", kind, loss], m, x, c,
                          ig_steps=p.ig_steps, lime_samples=p.lime_samples)[0]
        if m in probing.methods_for(kind) else None)
        for kind in probing.PROBES} for loss in probing.LOSSES}
    return probing.maps_figure(
        x[0], rows, f"grid {k}, {probing.METHOD_NAMES[m]}: maps for "
        f"'{data.classes[int(c[0])]}'")


SHOWN = list(range(min(10, len(grid_x))))
live = widgets.Dropdown(
    options=[(f"grid {k}, {probing.METHOD_NAMES[m]}", (k, m)) for k in SHOWN
             for m in [*METHODS, probing.BCOS]],
    description="grid, method")
core.explore(probe_maps, SHOWN, "grid", live=live);

# %% [markdown]
# ## Claims

# %%
core.claims_table();

# %% [markdown]
# **Reading the claims.** Two setup claims check that the experiment reached the regime the paper's comparisons
# need: `maps_localise`, maps that can point at a cell, on which every GridPG
# claim rests; and `backbones_matched`, two pre-training schemes of matched
# quality, on which the SimCLR loss claim and the probe-or-pre-training
# comparison rest. Each claim is an estimate with its 95% interval over the
# independent runs, each run's statistic the mean over its own grids. The paper
# reports GridPG as bar charts over many backbones and methods; we quote its
# findings in words.

# %% [markdown]
# Reading the table with the printouts above. The GridPG claims average over
# methods, and the methods need not move together: Input×Gradient, LRP and
# Integrated Gradients propagate the logit back to the pixels through every
# layer, signs included, so a change of the probe's weights reaches them
# directly; GradCAM works at the resolution of the last convolution and keeps
# only the positive part of its weighted channels, and guided backprop keeps
# only positive gradients, so both discard much of the negative evidence in
# which two linear readouts differ. Each method's own grid-paired difference
# and interval is printed above its claim. The swap comparison counts the size
# of each swap's effect, so effects of opposite signs do not cancel.

# %% [markdown]
# ## What differs from the paper
#
# * **Scale.** The paper probes ResNet-50 and ViT backbones pre-trained on ImageNet
#   (supervised, DINO, MoCo v2, BYOL, CLIP) and grids of 224-pixel ImageNet images;
#   here a three-block CNN with 64 pooled features is trained for seconds on 16×16
#   noisy digits (ten classes), and SimCLR stands in for the self-supervised
#   schemes, with crops, shifts and noise for views (no flips or rotations, which
#   would merge mirrored digits). Their quality is matched by the setup claim
#   `backbones_matched`, and no untrained control is probed.
# * **Receptive field.** A GridPG map can only single out a cell if what the last
#   layer sees fits in it. The backbone max-pools once, so a unit of its last
#   convolution sees 12×12 pixels of a 16-pixel cell (with the usual second pool
#   it would see 18×18, straddling two cells; `pools = 2` runs that variant).
# * **Probes.** The paper's MLP probes have batch norm between layers; ours do not
#   (captum's LRP has no rule for 1-d batch norm), and the B-cos MLP's uncentred batch
#   norm is a learned positive gain per channel, what that norm is in eval mode. Probe
#   inputs are scaled to unit root-mean-square per feature. The paper trains probes
#   for 100 epochs of SGD (learning rate 30, momentum 0.9, crops and flips) on
#   ImageNet; ours are trained to convergence by full-batch L-BFGS on cached
#   features, stopped when the training loss stalls or on the validation loss (on
#   3,600 images an MLP would otherwise memorise), at most `probe_iter`
#   iterations; the printout above says how each probe stopped.
# * **BCE targets.** As the official loss: off-class targets $1/K$, here 0.1
#   for ten classes (0.001 for ImageNet's 1,000, where the loss is nearly
#   one-hot).
# * **GridPG.** Grids are 3×3, as the official `map_size=3`. Every kept image is
#   classified correctly by every probe of both backbones, as in the official
#   script, but not every one reaches the official confidence of 0.95 under every
#   probe: the images are ranked by their lowest confidence and the printout gives
#   how many reach 0.95. Grids are shared by both backbones, so that a change of
#   backbone is paired on grids too. Smoothing is scaled to our 16-pixel cells (a 3×3 average pool; for IxG a
#   Gaussian of about 19% of the grid side, as the official kernel of 129 on
#   672-pixel grids). IntGrad (16 steps) and LIME (100 perturbations) run on
#   the first run's first `costly_grids` grids only, for the book's time budget,
#   and the GridPG claims read the four methods run on every grid of every run.
# * **Statistics.** The paper reports one training of each backbone and probe;
#   here every claim rests on independent runs, each with its own data,
#   backbones, probes and grids, and its interval is over runs.
#
# ## Going further
#
# A fuller scale (ten runs, 100 grids each, IntGrad and LIME on all of them
# with the official step and sample counts), and a wider backbone
# (`width=32`) trained longer, closer to the paper's rich features; backbones,
# probes and GridPG scores are cached by configuration (`ICLR25_CACHE`):
#
# ```bash
# python -m iclr25 run probing -p runs=10 -p grids=100 -p costly_grids=100 \
#     -p ig_steps=32 -p lime_samples=200
# python -m iclr25 run probing -p width=32 -p epochs_sup=30 -p epochs_simclr=40
# ```
