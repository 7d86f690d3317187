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
# # SADR: restricting attention drift in knowledge editing
#
# After ROME {cite:p}`meng2022rome` rewrites "The capital of France is the city of" from Paris to Rome, the
# model says Rome there, as asked. But ask it for France's official language, or write
# the edited sentence and then ask for the capital of Spain, and it may say Rome again.
# {cite:p}`wang2025sadr` blame attention: after the edit some heads attend to the edited
# subject more than any head of their layer did before, and they carry the new object
# into prompts where it does not belong. Does the edit's leak come from that drift, and
# does a penalty on it (SADR, a term added to ROME's objective) stop the leak without
# undoing the edit? This chapter edits facts SmolLM2-135M knows with ROME and with
# SADR, reads the attention weights before and after, and puts the unedited attention
# back into the edited model to see what it repairs.

# %% tags=["parameters"]
n_edits = 6
n_neighbours = 4
rome_steps = 20
sadr_steps = 40
attn_weight = 0.01
n_trace = 4
c_texts = 512
seed = 0
device = "auto"

# %%
import time
from functools import partial

import numpy as np

from iclr25 import core, editing, llm
from iclr25.chapters import sadr

p = core.chapter("sadr", globals())
chapter_start = time.perf_counter()

# %% [markdown]
# ## The method
#
# ROME (shown in the FiNE chapter, and in `iclr25.editing.rome_v`) writes a new value
# $v^*$ into one MLP at the subject's last token: $v^*$ minimises the new object's
# negative log-likelihood on the rewrite prompt (after a few context prefixes), a KL
# term that keeps what the model says about "{subject} is a", and a penalty on the
# change; a rank-one update of the MLP's down projection then writes it.
#
# To see attention, we need its weights, and to test the paper's explanation we need
# to *replace* them. transformers routes every attention layer through a function
# looked up in its `AttentionInterface`; we register an eager-equivalent one that
# records each layer's weights, or puts given weights in their place:
#
# ```{literalinclude} ../lib/iclr25/chapters/sadr/method.py
# :pyobject: recording_attention
# ```
#
# SADR's term compares, for each rewrite prompt, every head's attention over the keys
# at the prompt's last token with the unedited model's (recorded at the first step,
# when the change is still zero), $\mathrm{KL}(p \,\|\, q)$, but only for heads whose
# attention to the subject's last token now exceeds the largest any head of their layer
# gave it before (the hinge):
#
# ```{literalinclude} ../lib/iclr25/chapters/sadr/method.py
# :pyobject: over_attending
# ```
#
# ```{literalinclude} ../lib/iclr25/chapters/sadr/method.py
# :pyobject: attention_loss
# ```
#
# SADR's $v^*$ is ROME's objective plus $w$ times this term, summed over the layers
# above the edit (those below cannot change) and averaged over the rewrite prompts;
# the authors use $w = 100 \times 10^{-4}$ and 80 steps instead of ROME's 20 (the
# book takes `sadr_steps`). ROME's rank-one update then writes it. In code, the term
# is a `Penalty` handed to ROME's own `rome_v`: a context the model runs in (here the
# recording attention) and a loss on what it recorded.
#
# ```{literalinclude} ../lib/iclr25/chapters/sadr/method.py
# :pyobject: sadr_v
# ```
#
# The paper's test that drift causes the leak: run the *edited* model with the
# unedited model's attention weights put back in every layer above the edit.
#
# ```{literalinclude} ../lib/iclr25/chapters/sadr/method.py
# :pyobject: restore_attention
# ```
#
# The scores are CounterFact's accuracy, as ROME's summarize script computes it (the
# paper's metric): a probe counts when the right object's mean per-token NLL is below
# the wrong one's. On the rewrite prompt (ES) and its paraphrases (PS) the new object
# is right and the old one wrong; on other subjects' prompts (NS), the subject's other
# relations (RS) and the distract prompts (DNS) the true object is right and the new
# one wrong. The margin, the wrong object's NLL minus the right one's, says by how much.
#
# ```{literalinclude} ../lib/iclr25/editing/evaluation.py
# :pyobject: counterfact_margins
# ```
#
# ## Facts, ROME's layer and its statistics
#
# The facts, the edits and ROME are the FiNE chapter's (`iclr25.editing`): facts about
# some ninety countries that the model knows (greedy decoding writes the whole object),
# causal tracing over `n_trace` facts to pick ROME's layer, and the second moment $C$ of
# the layer's MLP keys from about 58,000 tokens SmolLM2 samples itself (estimated once
# and cached; the same entry as the FiNE chapter's).
#
# We edit only facts whose rewrite prompt has text before the subject
# (`sadr.mid_sentence`). SmolLM2 puts no beginning-of-text token before a prompt, so
# in "Spain is located in the continent of" the subject is the first token: the
# attention sink, whose residual stream is many times larger than anywhere else.
# Edited there, ROME misses the new object on its own rewrite prompt (while the
# prefixed prompts, with the subject mid-sentence, take it): $v^*$, clamped at four times the small MLP output there, cannot move that
# residual. Those facts still serve as neighbours and as the other relations probed.

# %%
lm = llm.load_model("smollm2-135m", p.torch_device)
known = editing.known_facts(lm, editing.all_facts())
cases = editing.make_cases(known, p.n_edits, p.rng,
                           n_neighbours=p.n_neighbours,
                           rewritable=sadr.mid_sentence)
effects = editing.causal_trace(lm, known[: p.n_trace],
                               window=sadr.TRACE_WINDOW, seed=p.seed)
layer = editing.trace_layer(effects, sadr.TRACE_WINDOW)
moments = editing.second_moments(
    lm, layer, n_texts=p.c_texts, n_tokens=editing.SAMPLE_TOKENS,
    seed=p.seed, sizes=sadr.C_SIZES, progress=True)
C = editing.regularised(moments[max(moments)])
print(f"{len(known)} known facts; ROME's layer {layer} of {lm.n_layers}; "
      f"C from {max(moments):,} tokens")
case = cases[0]
print("rewrite: ", repr(case.request.prompt), case.fact.object, "->",
      case.request.new)
print("relation:", case.relation)
print("distract:", case.distract[0])

# %% [markdown]
# ## ROME and SADR
#
# Each fact is edited by ROME (20 steps) and by SADR (`sadr_steps`, weight
# `attn_weight`), and by a control: ROME's objective with SADR's steps (weight 0),
# which tells what SADR owes to its term from what it owes to the extra steps. The
# edits are kept in the model cache, like trained models; the times are those of the
# run that made them (ROME's exclude causal tracing and $C$).

# %%
editors = {
    "ROME": partial(editing.rome, lm, layer=layer, C=C, steps=p.rome_steps),
    "SADR": partial(sadr.sadr, lm, layer=layer, C=C, steps=p.sadr_steps,
                    attn_weight=p.attn_weight),
    "control": partial(editing.rome, lm, layer=layer, C=C,
                       steps=p.sadr_steps),
}
config = {"seed": p.seed, "layer": layer, "c_texts": p.c_texts,
          "rome_steps": p.rome_steps, "sadr_steps": p.sadr_steps,
          "attn_weight": p.attn_weight, "chapter": "sadr"}
made = editing.kept_edits(lm, [c.request for c in cases], editors, config)
edits = {m: [made[m](c.request) for c in cases] for m in editors}
for m, es in edits.items():
    print(f"{m}: median {np.median([e.seconds for e in es]):.1f} s per "
          f"edit, steps {[e.info['steps'] for e in es]}")
terms = [max(e.info["attention_loss"]) for e in edits["SADR"]]
print("SADR's largest attention term per edit:", np.round(terms, 3))

# %% [markdown]
# ## Does the edit leak?
#
# Each model's CounterFact accuracy and mean margin, per score, over all probes of all
# edits: the unedited model, ROME, SADR and the control, beside the paper's GPT-J
# row.

# %%
per_case = {"unedited": editing.counterfact_margins(lm, cases)}
for m in editors:
    per_case[m] = []
    for c, e in zip(cases, edits[m]):
        with editing.applied(lm, e):
            per_case[m] += editing.counterfact_margins(lm, [c])
pooled = {m: {s: np.concatenate([g[s] for g in gs])
              for s in editing.COUNTERFACT} for m, gs in per_case.items()}
acc = {m: {s: editing.counterfact_accuracy(v) for s, v in g.items()}
       for m, g in pooled.items()}
print(f"{'':9s}" + "".join(f"{s:>16s}" for s in editing.COUNTERFACT))
for m, g in pooled.items():
    print(f"{m:9s}" + "".join(f"{acc[m][s]:7.2f} ({g[s].mean():+6.2f})"
                              for s in editing.COUNTERFACT))
print("probes per score:", {s: len(v) for s, v in pooled["ROME"].items()})
hits = int((pooled["ROME"]["ES"] > 0).sum())
print(f"ROME writes the new object on {hits} of {len(cases)} rewrites")
if hits < 0.9 * len(cases):
    print("ROME's efficacy is below 0.9: the comparison rests on edits "
          "that did not take; estimate C from more text (-p c_texts=2048)")
sadr.metrics_figure(acc, len(cases)).show()

# %% [markdown]
# The paper's claims on this table: SADR's relation specificity and distract
# neighbourhood are at least ROME's (mean margin and accuracy), and SADR gives up at
# most 0.05 of efficacy, 0.10 of paraphrase accuracy and 0.05 of neighbourhood
# accuracy. With a handful of edits, one probe moves an accuracy by a large step
# (the probe counts are printed above), so the margins are shown beside it.

# %%
def diff(score, base="ROME"):
    return {"margin": pooled["SADR"][score].mean()
            - pooled[base][score].mean(),
            "accuracy": acc["SADR"][score] - acc[base][score]}


for cid, score in (("sadr-rs", "RS"), ("sadr-dns", "DNS")):
    d = diff(score)
    core.claim(
        cid, value=d,
        measured=f"SADR - ROME: margin {d['margin']:+.2f} nats, accuracy "
                 f"{d['accuracy']:+.2f} ({score} {acc['ROME'][score]:.2f} -> "
                 f"{acc['SADR'][score]:.2f})")
drop = {s: acc["ROME"][s] - acc["SADR"][s] for s in ("ES", "PS", "NS")}
core.claim(
    "sadr-keeps", value=drop,
    measured="ROME - SADR: " + ", ".join(f"{s} {v:+.2f}"
                                         for s, v in drop.items()));

# %% [markdown]
# The control has SADR's steps and no attention term: SADR minus the control is what
# the term itself does, SADR minus ROME what the term and the extra steps do together.

# %%
for score in ("RS", "DNS"):
    for base in ("ROME", "control"):
        d = diff(score, base)
        print(f"{score}: SADR - {base:7s} margin {d['margin']:+.2f} nats, "
              f"accuracy {d['accuracy']:+.2f}")

# %% [markdown]
# ## Attention drift
#
# On each distract prompt ("The capital of France is the city of Rome. The capital of
# Spain is the city of"), every head's attention from the last token to the edited
# subject's last token, before and after each edit, for the heads above the edit.
# Averaged over all distract prompts; a filled marker is a head that attends to the
# subject more than any head of its layer did before (the heads SADR's hinge targets).

# %%
above = list(range(layer + 1, lm.n_layers))
methods = ("ROME", "SADR")
att = {m: [] for m in ("unedited", *methods)}
for i, c in enumerate(cases):
    prompts = [q for q, _ in c.distract]
    s = c.request.subject
    att["unedited"].append(sadr.subject_attention(lm, prompts, s))
    for m in methods:
        with editing.applied(lm, edits[m][i]):
            att[m].append(sadr.subject_attention(lm, prompts, s))
att = {m: np.concatenate([a.numpy() for a in v])[:, above]
       for m, v in att.items()}  # [prompt, layer above, head]
mean = {m: a.mean(0) for m, a in att.items()}
sadr.drift_figure(mean["unedited"], {m: mean[m] for m in methods},
                  above).show()
for m in methods:
    per_prompt = sadr.heads_above(att["unedited"], att[m]).sum((1, 2))
    print(f"{m}: mean attention to the subject {mean['unedited'].mean():.4f}"
          f" -> {mean[m].mean():.4f}; heads above their layer's maximum per "
          f"prompt: {per_prompt.min()}-{per_prompt.max()} of "
          f"{np.prod(att[m].shape[1:])}")

# %% [markdown]
# The claim: ROME raises the mean attention to the subject over these heads and
# prompts (after minus before, above 0).

# %%
rise = float(mean["ROME"].mean() - mean["unedited"].mean())
core.claim(
    "drift", value=rise,
    measured=f"mean attention after - before: {rise:+.4f}");

# %% [markdown]
# ## Putting the attention back
#
# If drift carries the new object into the distract prompts, the edited model run with
# its unedited attention weights (every layer above the edit) should prefer the true
# object again. Each distract probe's margin: unedited, ROME, and ROME with the
# attention restored. The slider moves over the edits.

# %%
dns = {"unedited": [], "ROME": [], "ROME, attention restored": []}
for i, c in enumerate(cases):
    probes = editing.counterfact_probes(c)["DNS"]
    dns["unedited"].append(per_case["unedited"][i]["DNS"])
    dns["ROME"].append(per_case["ROME"][i]["DNS"])
    dns["ROME, attention restored"].append(
        sadr.restore_attention(lm, edits["ROME"][i], probes, layer))
names = [f"{c.fact.subject}: {c.fact.object} -> {c.request.new}"
         for c in cases]


def margins_of(name):
    i = names.index(name)
    labels = [q.split(". ")[-1] for q, _ in cases[i].distract]
    return sadr.margins_figure(labels, {k: v[i] for k, v in dns.items()},
                               f"Distract margins, edit {name}")


core.explore(margins_of, names, "edit")

# %% [markdown]
# The claim: over the distract probes ROME lowered by more than 0.5 nats, restoring the
# attention wins back at least 30% of ROME's mean margin drop.

# %%
flat = {k: np.concatenate(v) for k, v in dns.items()}
share, n_hit = sadr.recovered(flat["unedited"], flat["ROME"],
                              flat["ROME, attention restored"])
means = {k: v.mean() for k, v in flat.items()}
core.claim(
    "restore-recovers", value=share,
    measured=f"{share:.0%} of the drop over {n_hit} of {len(flat['ROME'])} "
             "probes; mean margins " + ", ".join(
                 f"{k} {v:+.2f}" for k, v in means.items()));

# %% [markdown]
# ## The editor
#
# Type a country, pick a relation and a new object, choose ROME or SADR and press Edit:
# the bars show the top next tokens before and after on the rewrite prompt, a
# paraphrase, a neighbour and another relation, and the heatmaps every head's attention
# to the subject on a distract prompt (the edited sentence, then a neighbour's prompt)
# before and after. On the static page the slider shows the edits above.

# %%
relation_of = {c.request: c.fact.relation for c in cases}
gallery, before_of = {}, {}
for m in methods:
    for e in edits[m][:3]:
        d = sadr.distract_prompt(e.request, relation_of[e.request], known)
        b = sadr.subject_attention(lm, [d], e.request.subject)[0].numpy()
        with editing.applied(lm, e):
            a = sadr.subject_attention(lm, [d], e.request.subject)[0].numpy()
        gallery[f"{m}: {e.request.subject} -> {e.request.new}"] = (b, a, d)


def watched(method):  # record the attention before the live editor edits
    def edit(req):
        for r in editing.RELATIONS:
            if editing.RELATIONS[r].prompt.format(req.subject) == req.prompt:
                try:
                    d = sadr.distract_prompt(req, r, known)
                except ValueError:  # no neighbour to write after
                    continue
                before_of[req] = (sadr.subject_attention(
                    lm, [d], req.subject)[0].numpy(), d)
        return editors[method](req)
    return edit


# %% tags=["hide-input"]
def editor_figure(value):
    """A gallery entry (static page) or the live editor's state (a tuple)."""
    if isinstance(value, str):
        b, a, d = gallery[value]
        return sadr.heatmap_figure(b, a, f"{value}: attention to the subject "
                                         f"after {d!r}")
    if value[0] != "edit" or value[1] not in before_of:
        return editing.editor_figure(lm, value, known)
    editing.editor_figure(lm, value, known).show()
    b, d = before_of[value[1]]
    a = sadr.subject_attention(lm, [d], value[1].subject)[0].numpy()
    return sadr.heatmap_figure(b, a, f"attention to the subject after {d!r}")


live = editing.editor_widget(lm, {m: watched(m) for m in methods}, known)
core.explore(editor_figure, list(gallery), "edit", live=live);

# %% [markdown]
# ## Claims
#
# Only mid-sentence subjects are edited (see *Which facts* below), and a
# control with ROME's objective and SADR's steps separates what the
# attention term does from what the extra steps do. `restore-recovers` is a
# gap the registry marks as declared after a run had missed it, with its
# diagnosis in the table. The claims are one draw of six edits at seed 0, on
# few probes.

# %%
core.claims_table()
print(f"chapter ran in {time.perf_counter() - chapter_start:.0f} s")

# %% [markdown]
# ## What differs from the paper
#
# * **Model and data.** The paper edits GPT-J (and Llama-3-8B, GPT-NeoX with MEMIT {cite:p}`meng2023memit` and
#   PMET) on CounterFact's 2,000 cases; we edit SmolLM2-135M with ROME only, on six
#   facts of our own country templates (`n_edits`), each with four neighbour and
#   distract prompts. CounterFact itself cannot be had offline. With so few probes an
#   accuracy moves in large steps, so the mean margins are reported beside it.
# * **Which facts.** Only facts whose rewrite prompt has text before the subject are
#   edited: SmolLM2 has no beginning-of-text token, and a subject at the first
#   position (the attention sink) cannot be edited there (see above). CounterFact's
#   prompts often start with the subject; GPT-J's edits reach it there.
# * **Steps.** SADR takes `sadr_steps` = 40 steps, not the authors' 80, to fit six
#   edits (four at 80 would give too few probes) in the book's time; the
#   control (ROME's objective, SADR's steps) is ours, the
#   ablation the paper's comparison with ROME leaves open.
# * **ROME** is the FiNE chapter's: the layer from our causal tracing, three fixed
#   context prefixes, and $C$ from about 58,000 tokens the model samples itself (ROME:
#   100,000 Wikipedia samples). Where ROME misses the new object on a rewrite (the
#   count is printed under the table), a larger sample for $C$ (`c_texts`) is the
#   first thing to try; the book keeps the FiNE chapter's, estimated once for both.
#   ROME's and SADR's $v^*$ follow ROME's and the authors' `compute_v.py` (Adam at
#   rate 0.5, the clamp at four times $|v|$, the KL and weight-decay factors; SADR's
#   hinge, $\epsilon$ added to both distributions, the weight $100 \times 10^{-4}$),
#   except that: the KL is read at the last token of "{subject} is a" (ROME's code
#   reads it at the subject's last token); the rank-one update writes $v^*$ for the
#   mean key over the prefixes, where ROME's code adds $v^* - v$ to the plain
#   prompt's output; the attention term covers only the layers above the edit (those
#   below cannot change, so their term is zero); and our loop also steps at the last
#   iteration.
# * **The live editor** offers ROME and SADR; FiNE lives in its own chapter, and a
#   chapter never imports another.
# * **Attention** is read and replaced through transformers' `AttentionInterface`
#   with an eager-equivalent function, which matches the default (sdpa) attention to
#   within $10^{-5}$ (a unit test).
# * **Drift** is measured at the distract prompt's last token on the subject's last
#   token, averaged over all heads above the edit; the paper's analysis looks at the
#   heads that over-attend, which the figure marks.
#
# ## Going further
#
# More edits (the paper: 2,000), the authors' 80 steps (the control follows them),
# and the weight of the term:
#
# ```
# python -m iclr25 run sadr -p n_edits=100 -p sadr_steps=80
# python -m iclr25 run sadr -p attn_weight=0.0   # and 0.005, 0.02
# ```
#
# A run of 100 edits makes 100 ROME, 100 SADR and 100 control edits; the times per
# edit printed above say how long (a GPU makes them fast).
