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
# # HyperDAS: a hypernetwork that locates and learns concept features
#
# Where inside a language model does it keep "the country of this city", and in
# which directions of the hidden state? Distributed alignment search (DAS) {cite:p}`geiger2024das` answers
# the second question: at a chosen layer and token it learns a small subspace such
# that swapping it between two runs swaps the concept, and nothing else. But DAS
# must be told the layer and the token, so finding them is a brute-force search
# over every site. {cite:p}`sun2025hyperdas` train a *hypernetwork* instead: it
# reads an instruction ("this city ; that city - country"), decides itself which
# tokens of the two runs to exchange, and builds the subspace for the concept. On
# the RAVEL benchmark with Llama3-8B it disentangles attributes better than DAS
# and the other methods. This chapter builds both methods, at a scale a CPU can
# train: a tiny Llama trained on 144 facts about 48 invented cities, and DAS on
# SmolLM2-135M for countries it knows.

# %% tags=["parameters"]
n_cities = 48
target_steps = 800
target_lr = 0.003
k = 8
das_steps = 600
das_lr = 0.01
n_train = 2400
n_test = 480
hyper_layer = 0
hyper_layers = 2
hyper_steps = 1000
hyper_lr = 0.001
tau_start = 1.0
tau_end = 1.0
das_batch = 64
batch = 32
smol = True
smol_layers = "4,12"
smol_attribute = "capital"
smol_steps = 40
smol_batch = 8
smol_k = 16
seed = 0
device = "cpu"

# %%
import time

import numpy as np

from iclr25 import core, llm
from iclr25.chapters import hyperdas as H

p = core.chapter("hyperdas", globals())
t0 = time.perf_counter()

# %% [markdown]
# ## The data: RAVEL-style interchanges
#
# An instruction `e ; e' - A` names a base entity $e$, a source entity $e'$ and an
# attribute $A$. In a *cause* example the base prompt asks for $A(e)$; once the
# feature of $A$ is taken from a run on $e'$ (any template), the model must answer
# $A(e')$. In an *isolation* example the base prompt asks another attribute $B$ of
# $e$, and the answer must stay $B(e)$: the feature of $A$ must not carry $B$.
# Cause accuracy, isolation accuracy and their mean, *disentangle*, are RAVEL's
# scores. Train and test use different entities and different templates, and
# only facts the model answers right, as RAVEL does.
#
# ```{literalinclude} ../lib/iclr25/chapters/hyperdas/data.py
# :pyobject: make_examples
# ```
#
# **DAS** learns, for one attribute at one site, an orthonormal $d\times k$ basis
# $R$ and edits the hidden state as $h \leftarrow h + RR^\top(h_{src} - h)$
# (pyvene's `LowRankRotatedSpaceIntervention`). We train it for every attribute
# and position of one layer side by side, each intervention on its own rows of a
# shared batch:
#
# ```{literalinclude} ../lib/iclr25/chapters/hyperdas/das.py
# :pyobject: das_layer
# ```
#
# **HyperDAS** (the official `ReflectSelect`) copies the target's embedding and
# first $N$ layers, and gives each layer cross-attention to the normalised base and
# source hidden states. From the instruction's last token it *bids*: for base
# token $j$, a softmax over every source token $i$ (key $W[\hat h_{base,j};
# \hat h_{src,i}]$) and a *null* option (key $W_0 \hat h_{base,j}$, "keep the
# base"). Tokens after the entity are masked: their null weight is 1. The
# subspace is a learned basis $W$ reflected by a Householder vector $r$ read from
# the instruction, $R = (I - 2rr^\top)W$:
#
# ```{literalinclude} ../lib/iclr25/chapters/hyperdas/method.py
# :pyobject: ReflectSelect
# ```
#
# ```{literalinclude} ../lib/iclr25/chapters/hyperdas/method.py
# :pyobject: interchange
# ```
#
# The loss is the label's cross-entropy (cause examples weighted 3.5, isolation
# 0.5) plus a penalty on any source token spent on more than one base token,
# weighted 0 for the first half of training and then 0.15 rising to 1.5:
#
# ```{literalinclude} ../lib/iclr25/chapters/hyperdas/method.py
# :pyobject: sparsity_penalty
# ```
#
# ```{literalinclude} ../lib/iclr25/chapters/hyperdas/method.py
# :pyobject: penalty_weight
# ```

# %% [markdown]
# ## The tiny world
#
# Each invented city has a country (8 values), a language (6) and a climate (5),
# drawn independently, and three cloze templates per attribute. A 4-layer Llama
# ($d = 64$) learns every fact by next-token prediction.

# %%
world = H.tiny_world(p.n_cities, p.seed)
lm = H.train_target(
    world, p.target_steps, batch=64, lr=p.target_lr, seed=p.seed
)
ok = H.known(lm, world)
n_facts = len(world.entities) * sum(map(len, world.templates.values()))
print(f"the target answers {len(ok)} of {n_facts} (fact, template) prompts")
train, test = H.split(world, p.n_train, p.n_test, p.seed, ok)
for x in test[:4]:
    kind = "cause" if x.cause else "isolation"
    print(f"{kind:9}  {x.instruction:28} base '{x.base_prompt}'  "
          f"source '{x.source_prompt}'  -> {x.label}")
key = {name: getattr(p, name) for name in (
    "n_cities", "target_steps", "target_lr", "n_train", "n_test", "seed")}

# %% [markdown]
# ## DAS must search the sites
#
# DAS is trained for each attribute at every layer's input stream (layer 0 is the
# embeddings) and three positions: the entity token, the token after it, and the
# last token. The paper plots DAS accuracy against the layer; here is the whole
# layer × position grid, averaged over the three attributes. The setup claim:
# searching matters, the best site's cause accuracy beats the median site's by
# at least 0.5.
#
# As in the paper, DAS is trained to convergence at every site, by one rule on
# the *training* loss: a site stops when the mean loss of its last 50 steps is
# under 0.02 or less than 2% below that of the 50 steps before (at most
# `das_steps`); a stopped site leaves the shared batch. The learning rate
# $10^{-2}$ and batch 64 come from the training-loss curves at layer 0: with
# $3\times10^{-3}$ or $3\times10^{-2}$ the entity sites' loss fell more slowly,
# and with batch 16 it was too noisy for the rule (the official DAS runs use
# 1,000 steps of 16 at lr $10^{-3}$ on Llama3-8B).
#
# ```{literalinclude} ../lib/iclr25/chapters/hyperdas/das.py
# :pyobject: converged
# ```

# %%
grid = H.run_das_grid(
    lm, world, train, test, k=p.k, steps=p.das_steps, batch=p.das_batch,
    lr=p.das_lr, seed=p.seed, key=key,
)
layers = list(range(lm.n_layers))
attrs = list(world.attributes)
figs = [H.grid_figure(grid[m].mean(0), layers, f"DAS {m}, mean of attributes")
        for m in H.SCORES]
core.slider_figure(figs, list(H.SCORES), "score", active=2).show()
cause = grid["cause"].mean(0)
best = np.unravel_index(grid["disentangle"].mean(0).argmax(), cause.shape)
print(f"best DAS site by disentangle: layer {best[0]}, "
      f"{H.POSITIONS[best[1]]}; {time.perf_counter() - t0:.0f} s so far")
print("steps to convergence, per layer x position (mean of attributes):")
print(grid["steps"].mean(0).round())
# %% tags=["hide-input"]
cur = grid["curves"][..., : int(grid["steps"].max())]
ys = {f"{a}, layer 0 entity": cur[i, 0, 0] for i, a in enumerate(attrs)}
rest = cur.reshape(len(attrs), -1, cur.shape[-1])[:, 1:]
cnt = np.isfinite(rest).sum((0, 1))
ys["mean of the other sites"] = np.where(
    cnt > 0, np.nansum(rest, (0, 1)) / np.maximum(cnt, 1), np.nan)
core.plot(np.arange(1, cur.shape[-1] + 1), ys, log_y=True,
          title="DAS training loss (training examples)", xlabel="step",
          ylabel="weighted cross-entropy").show()

# %%
core.claim(
    "search-matters",
    value=cause.max() - np.median(cause),
    measured=f"best {cause.max():.2f}, median {np.median(cause):.2f}",
);

# %% [markdown]
# ## HyperDAS locates the feature itself
#
# The hypernetwork copies the target's first two layers and edits the stream
# entering layer `hyper_layer` (the embeddings by default: the only layer where
# the entity token still carries the attributes in this 4-layer model, as the DAS
# grid shows). We train it once with the penalty and, from the state at half
# training where the penalty starts, once more without it. The mean null weight
# shows whether the bidding gave up: a null weight of 1 edits nothing.

# %%
hk = dict(layer=p.hyper_layer, n_layers=p.hyper_layers, k=p.k,
          steps=p.hyper_steps, batch=p.batch, lr=p.hyper_lr,
          tau=(p.tau_start, p.tau_end), seed=p.seed)
with_pen = H.run_hyperdas(lm, train, key=key, **hk)
no_pen = H.run_hyperdas(lm, train, key=key, branch=True, **hk)
H.null_figure({"with penalty": (with_pen["history"], 0),
               "no penalty (branch)": (no_pen["history"], p.hyper_steps // 2)
               }).show()
nets = {name: H.hyper_net(lm, run["net"], p.hyper_layers, p.k)
        for name, run in (("with", with_pen), ("without", no_pen))}
res = {name: H.evaluate_hyperdas(net, lm, test, p.hyper_layer, p.tau_end)
       for name, net in nets.items()}
r = res["with"]
print(f"{time.perf_counter() - t0:.0f} s so far")
for mode in ("soft", "argmax"):
    print(mode, {m: round(v, 3) for m, v in r[mode]["all"].items()})

# %% [markdown]
# Per attribute, HyperDAS (soft and argmax bidding) beside DAS at its best site
# and at the entity token of the layer HyperDAS edits. The paper's claims: the
# argmax HyperDAS disentangles as well as DAS at the best site (within 0.10
# here), its argmax picks the entity token of both prompts (at least 80% of the
# test examples), and the argmax and soft scores agree (within 0.10). The dotted
# lines are the paper's scores on RAVEL with Llama3-8B, for scale only: another
# model, other data and attributes.

# %%
d = grid["disentangle"]
rows = {
    "HyperDAS soft": {a: r["soft"][a]["disentangle"] for a in attrs},
    "HyperDAS argmax": {a: r["argmax"][a]["disentangle"] for a in attrs},
    "DAS best site": dict(zip(attrs, d[:, best[0], best[1]])),
    "DAS entity site": dict(zip(attrs, d[:, p.hyper_layer, 0])),
}
H.compare_figure(rows, attrs, H.PAPER_DISENTANGLE).show()
best_das = float(d[:, best[0], best[1]].mean())
hard_d = r["argmax"]["all"]["disentangle"]
soft_d = r["soft"]["all"]["disentangle"]
core.claim(
    "hyperdas-matches",
    value=hard_d - best_das,
    measured=f"HyperDAS argmax {hard_d:.2f}, best DAS site {best_das:.2f}",
);

# %%
core.claim(
    "hyperdas-locates",
    value=r["locates"],
    measured=f"{r['locates']:.0%} of test examples",
);
core.claim(
    "hard-vs-soft",
    value=abs(hard_d - soft_d),
    measured=f"argmax {hard_d:.2f}, soft {soft_d:.2f}",
);

# %% [markdown]
# ## The sparsity penalty
#
# The penalty $\sum_i \max(0, \sum_j w_{ij} - 1)$ stops one source token from
# feeding several base tokens. The paper reports that without it the
# hypernetwork spreads its bids over more tokens. We count, per test example, the
# source tokens whose total weight exceeds 0.1, in the run with the penalty and
# in the branch without it, and show the bids of one test example in both.

# %%
x, i = test[0], 0
for name, rr in res.items():
    base, src, _ = H.pair(lm, test)
    H.bids_figure(rr["bids"][i], H.example_tokens(lm, base, i),
                  H.example_tokens(lm, src, i),
                  f"{name} penalty: {x.instruction}").show()
used = {name: rr["tokens_used"] for name, rr in res.items()}
core.claim(
    "sparsity",
    value=used["without"] - used["with"],
    measured=f"{used['without']:.2f} tokens without, {used['with']:.2f} with",
);

# %% [markdown]
# ## DAS on SmolLM2
#
# A real model: SmolLM2-135M and the countries whose capital it knows, with
# their capital, language and currency from the book's table of facts (three
# templates each). DAS for one attribute at the country's last token, at two
# layers. The setup claim: at the better layer, cause at least 0.5 and isolation
# at least 0.7, so that the real model has a feature DAS can find.

# %%
if p.smol:
    smol_lm = llm.load_model(device=p.torch_device)
    smol = H.run_smol(
        smol_lm, attribute=p.smol_attribute,
        layers=H.parse_layers(p.smol_layers), k=p.smol_k, steps=p.smol_steps,
        batch=p.smol_batch, lr=p.das_lr, seed=p.seed,
    )
    layer = max(smol, key=lambda l: smol[l]["disentangle"])
    core.plot(list(smol), {m: [smol[l][m] for l in smol] for m in H.SCORES},
              title=f"SmolLM2 DAS, {p.smol_attribute}", xlabel="layer",
              ylabel="accuracy", mode="markers").show()
    core.claim(
        "smollm2-das",
        value={m: smol[layer][m] for m in ("cause", "isolation")},
    )
print(f"{time.perf_counter() - t0:.0f} s so far")

# %% [markdown]
# ## Explore the hypernetwork
#
# Pick an instruction (attribute, base city, source city) of the held-out cities,
# and the attribute the base prompt asks (the same: a cause example; another:
# isolation, where the answer should not move): the bidding weights of the trained hypernetwork (penalty on) on the held-out
# template, and the target's answer before and after the argmax intervention. On
# the static page the slider moves over a few precomputed instructions.

# %%
cities = sorted({str(x.base) for x in test})
choices = [(a, a, e, e2) for a in attrs for e in cities for e2 in cities
           if e != e2][:: max(1, len(cities))]
view = lambda c: H.bidding_view(  # noqa: E731
    nets["with"], lm, world, c, p.hyper_layer, p.tau_end)
live = H.instruction_picker(attrs, cities)
core.explore(view, choices[:6], "instruction", live=live)

# %% [markdown]
# ## Claims
#
# Two things of the design matter for reading the table. DAS and HyperDAS
# train their rotations without weight decay: AdamW's decay pulls the ±1
# signs that torch's orthogonal parametrisation stores (and reads back as
# integers) to zero, and with them every basis. And DAS is trained to
# convergence at every site by the stopping rule above, as the paper does; on
# SmolLM2 that rule would need minutes of CPU per layer, so it stops at the
# step cap, and `smollm2-das` is a declared gap. `search-matters` is a gap
# too: DAS fits its training cities but carries over only in part to the
# held-out ones, and `hyperdas-matches`, whose control is DAS at the best
# site, rests on it. The registry marks which gaps were declared after a run
# had missed them.

# %%
core.claims_table();

# %% [markdown]
# ## What differs from the paper
#
# - **Model and data.** The paper intervenes on Llama3-8B (layer 15) with an
#   8-layer hypernetwork initialised from Llama3-8B itself, on RAVEL's five
#   domains (the City domain alone has 3,552 entities). Here the target is a
#   4-layer, 64-wide Llama trained on 48 invented single-token cities with three
#   independent attributes, and the hypernetwork copies two of its layers. The
#   cities are single tokens because in trials two-token names left every DAS
#   site at 0.12 or less.
# - **The site.** In a 4-layer model attention moves the attribute to the last
#   token already in the first layer, so the city token carries it only in the
#   embeddings: HyperDAS edits the stream entering layer 0 (the official code
#   starts at layer 1 of a much deeper model).
# - **Training.** About 1,000 AdamW steps of 32 (official: 5 epochs, batch 16,
#   lr 4e-5, $k = 128$); here lr $10^{-3}$ and $k = 8$. The bidding is a plain
#   softmax, as specified; `tau_start`/`tau_end` let a reader anneal its
#   temperature instead (not the official code). Our cross-attention has no
#   rotary positions (the official one rotates queries and keys). The null
#   option's key is $W_0 \hat h_{base,j}$, a learned linear map of the base
#   state as the other keys are of theirs, rather than $\hat h_{base,j}$
#   itself.
# - **Scores** compare the first token of the label (the official scores compare
#   up to three); isolation examples require $B(e) \ne B(e')$ so that a leak is
#   seen.
# - **DAS** is trained for every attribute and position of a layer side by side:
#   pyvene's `LowRankRotatedSpaceIntervention` modules applied by one hook, which
#   the tests check against pyvene's `IntervenableModel`.
# - **DAS training**: to convergence at every site as in the paper, with our
#   stopping rule on the training loss (windows of 50 steps, 2%), batch 64 and
#   lr $10^{-2}$ for a 64-wide model (official: 1,000 steps of 16, lr
#   $10^{-3}$, on Llama3-8B).
# - **SmolLM2** gets DAS at two layers and at most 40 steps (the same stopping
#   rule, which the cap cuts short); HyperDAS on it would cost 0.5-0.9 s a
#   step, so it is left to Going further.
#
# ## Going further
#
# A longer run of the tiny world, closer to the paper's budget:
#
# ```
# python -m iclr25 run hyperdas -p hyper_steps=20000 -p hyper_lr=0.0003 \
#     -p k=16 -p das_steps=2000 -p n_train=20000
# ```
#
# On SmolLM2, DAS at more layers (`-p smol_layers=2,6,10,14,18,22`) and more
# steps (`-p smol_steps=600`, so that the stopping rule, not the cap, ends
# each layer's training). HyperDAS on SmolLM2 (its own first 8 layers copied,
# cross-attending to layer 12) needs an accelerator: at 0.5-0.9 s a step on a
# CPU, the paper's 5 epochs take days.
