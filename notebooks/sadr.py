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
# undoing the edit? This chapter edits facts SmolLM2-135M {cite:p}`allal2025smollm2` knows with ROME and with
# SADR, reads the attention weights before and after, and puts the unedited attention
# back into the edited model to see what it repairs.

# %% tags=["parameters"]
n_edits = 20
n_neighbours = 4
steps = 12
attn_weight = 0.01
n_authors = 0
authors_steps = 80
n_trace = 4
c_texts = 512
seed = 0
device = "auto"

# %%
import textwrap
import time
from functools import partial

import numpy as np

from iclr25 import core, editing, llm
from iclr25.chapters import sadr
from iclr25.core import stats

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
# looked up in its `AttentionInterface`; the book's model access (`iclr25.llm`)
# registers an eager-equivalent one, so that each layer's attention weights are a site
# `("attn_weights", layer)` that `llm.reading` hands out (with gradients) and
# `llm.writing` replaces, like the residual stream or an MLP's output:
#
# ```{literalinclude} ../lib/iclr25/llm/sites.py
# :pyobject: sited_attention
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
# book gives both `steps`). ROME's rank-one update then writes it. In code, the term
# is a `Penalty` handed to ROME's own `rome_v`: a context the model runs in (here one
# that reads the attention weights) and a loss on what it read.
#
# ```{literalinclude} ../lib/iclr25/chapters/sadr/method.py
# :pyobject: sadr_v
# ```
#
# The paper's test that drift causes the leak: run the *edited* model with the
# unedited model's attention weights put back in every layer above the edit. Two more
# restorations split the path the new object takes: the attention of the hinge's heads
# only, and the edited MLP's output at the subject's last token (the value every head
# above reads there), which leaves only the update's effect at the other tokens.
#
# ```{literalinclude} ../lib/iclr25/chapters/sadr/method.py
# :pyobject: restored_margins
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
print("distract:", textwrap.fill("{!r} -> {!r}".format(*case.distract[0]), 68,
                                 subsequent_indent=" " * 10))

# %% [markdown]
# ## ROME and SADR
#
# Each fact is edited by ROME and by SADR (weight `attn_weight`) with the same number
# of steps (`steps`): ROME is then SADR's control, its objective at SADR's steps with
# the term's weight at 0, and SADR minus ROME is what the term itself does. The edits
# are kept in the model cache, like trained models; the times are those of the run
# that made them (ROME's exclude causal tracing and $C$).

# %%
editors = {
    "ROME": partial(editing.rome, lm, layer=layer, C=C, steps=p.steps),
    "SADR": partial(sadr.sadr, lm, layer=layer, C=C, steps=p.steps,
                    attn_weight=p.attn_weight),
}
config = {"seed": p.seed, "layer": layer, "c_texts": p.c_texts,
          "steps": p.steps, "attn_weight": p.attn_weight, "chapter": "sadr"}
made = editing.kept_edits(lm, [c.request for c in cases], editors, config)
edits = {m: [made[m](c.request) for c in cases] for m in editors}
for m, es in edits.items():
    print(f"{m}: median {np.median([e.seconds for e in es]):.1f} s per "
          f"edit, steps {sorted({e.info['steps'] for e in es})}")
terms = [max(e.info["attention_loss"]) for e in edits["SADR"]]
print("SADR's largest attention term per edit:\n", np.round(terms, 3))

# %% [markdown]
# ## Does the edit leak?
#
# Each model's CounterFact accuracy and mean margin, per score, over all probes of all
# edits: the unedited model, ROME and SADR, beside the paper's GPT-J row.

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
print(f"{'':8s}" + "".join(f"{s:>14s}" for s in editing.COUNTERFACT))
for m, g in pooled.items():
    print(f"{m:8s}" + "".join(f"{acc[m][s]:5.2f} ({g[s].mean():+6.2f})"
                              for s in editing.COUNTERFACT))
print("probes per score:", {s: len(v) for s, v in pooled["ROME"].items()})
sadr.metrics_figure(acc, len(cases)).show()

# %% [markdown]
# The setup claim: ROME makes the edit, on most rewrite prompts the new object is
# preferred after it (a share with its Wilson interval).

# %%
hits = int((pooled["ROME"]["ES"] > 0).sum())
core.claim("rome-edits", estimate=stats.share(hits, len(cases)),
           measured=f"ROME writes the new object on {hits} of "
                    f"{len(cases)} rewrites");

# %% [markdown]
# The paper's claims on this table, each decided over the edits by a paired bootstrap
# interval: SADR raises each edit's mean margin on relation specificity and distract
# neighbourhood over ROME at equal steps, and gives up less than 0.05 of efficacy,
# 0.10 of paraphrase accuracy and 0.05 of neighbourhood accuracy per edit.


# %%
def per_edit(groups, score, f=np.mean):
    return np.array([f(g[score]) if len(g[score]) else np.nan
                     for g in groups])


def paired(score, a, b, f=np.mean, of=per_case):  # of: per method, per edit
    x, y = per_edit(of[a], score, f), per_edit(of[b], score, f)
    keep = ~np.isnan(x) & ~np.isnan(y)
    return stats.paired_difference(x[keep], y[keep], seed=p.seed)


for cid, score in (("sadr-rs", "RS"), ("sadr-dns", "DNS")):
    e = paired(score, "SADR", "ROME")
    a = paired(score, "SADR", "ROME", editing.counterfact_accuracy)
    gap_quotes = dict(steps=p.steps, weight=p.attn_weight, accuracy=a.value,
                      smallest=min(terms), largest=max(terms))
    core.claim(cid, estimate=e,
               measured=f"SADR - ROME, {score} margin per edit: {e} nats; "
                        f"accuracy {a.value:+.2f} "
                        f"[{a.low:+.2f}, {a.high:+.2f}]",
               quote=gap_quotes if cid == "sadr-rs" else None)
for score in ("ES", "PS", "NS"):
    e = paired(score, "ROME", "SADR", editing.counterfact_accuracy)
    core.claim(f"sadr-keeps-{score.lower()}", estimate=e,
               measured=f"ROME - SADR, {score} accuracy per edit: {e}")

# %% [markdown]
# ### At the authors' settings
#
# Two of the book's departures from the authors could matter to the term itself:
# `steps` = 12 where they give SADR 80, and ROME's three fixed context prefixes
# where their hparams sample about twenty (each prefix is one more rewrite prompt
# whose attention the term watches). On the first `n_authors` edits both editors
# are made again with one departure undone at a time, ROME still SADR's control at
# the same settings: 80 steps for both (`authors_steps`), or ROME's sampled prefixes
# (`editing.context_prefixes`, the FiNE chapter's) for both. Below, SADR minus ROME
# on each edit's mean RS and DNS margin, paired by edit, beside the book's settings
# on the same edits, and each editor's median time per edit at each setting: the
# signs and intervals say whether the term, with more steps or more prompts to act
# on, moves the margins further from ROME's, and in the paper's direction (SADR's
# margins above ROME's). A report, not a claim: the claims above are decided at
# the book's settings, so it runs only when asked for (`n_authors` is 0 in the
# book; see *Going further*), and a few edits give wide intervals.
#
# ```{literalinclude} ../lib/iclr25/chapters/sadr/method.py
# :pyobject: authors_editors
# ```

# %%
if p.n_authors:
    first = cases[: p.n_authors]
    again = sadr.authors_editors(
        lm, [c.request for c in first], layer, C, steps=p.steps,
        attn_weight=p.attn_weight, authors_steps=p.authors_steps,
        prefixes=editing.context_prefixes(lm, seed=p.seed), config=config)
    settings = {f"book: {p.steps} steps, 3 prefixes":
                {m: per_case[m][: len(first)] for m in editors}}
    for name, made_again in again.items():
        settings[name] = {m: [] for m in made_again}
        for m, editor in made_again.items():
            es = [editor(c.request) for c in first]
            for c, e in zip(first, es):
                with editing.applied(lm, e):
                    settings[name][m] += editing.counterfact_margins(lm, [c])
            term = (f", attention term up to "
                    f"{max(max(e.info['attention_loss']) for e in es):.3g}"
                    if m == "SADR" else "")
            median = np.median([e.seconds for e in es])
            print(f"{name}, {m}:\n  median {median:.1f} s per edit, "
                  f"steps {sorted({e.info['steps'] for e in es})}" + term)
else:
    print("The authors'-settings report is off: "
          "python -m iclr25 run sadr -p n_authors=4 runs it.")

# %%
if p.n_authors:
    authors = {name: {s: paired(s, "SADR", "ROME", of=by_method)
                      for s in ("RS", "DNS")}
               for name, by_method in settings.items()}
    core.estimates_figure(
        authors, title="SADR minus ROME at equal settings, on the first "
        f"{len(first)} edits", ylabel="margin per edit (nats)").show()
    for name, d in authors.items():
        for s, e in d.items():
            print(f"{name}, {s}: {e}")

# %% [markdown]
# ## Attention drift
#
# On each distract prompt ("The capital of France is the city of Rome. The capital of
# Spain is the city of"), every head's attention from the last token to the edited
# subject's last token, before and after each edit, for the heads above the edit. The
# hinge's heads are those that attend to the subject more than any head of their layer
# did before the edit. Any change to the subject's value moves attention, so drift is
# measured against a control: ROME's update written for a random $v^*$ at the same
# distance from the unedited value as ROME's.
#
# ```{literalinclude} ../lib/iclr25/chapters/sadr/method.py
# :pyobject: random_edit
# ```

# %%
above = list(range(layer + 1, lm.n_layers))
edited = {**edits, "random v*": [sadr.random_edit(lm, e, C, p.seed + i)
                                 for i, e in enumerate(edits["ROME"])]}
att = {m: [] for m in ("unedited", *edited)}
for i, c in enumerate(cases):
    prompts = [q for q, _ in c.distract]
    s = c.request.subject
    att["unedited"].append(sadr.subject_attention(lm, prompts, s))
    for m in edited:
        with editing.applied(lm, edited[m][i]):
            att[m].append(sadr.subject_attention(lm, prompts, s))
att = {m: np.concatenate([a.numpy() for a in v])[:, above]
       for m, v in att.items()}  # [prompt, layer above, head]
mean = {m: a.mean(0) for m, a in att.items()}
sadr.drift_figure(mean["unedited"], {m: mean[m] for m in edited},
                  above).show()
counts = {m: sadr.heads_above(att["unedited"], att[m]).sum((1, 2))
          for m in edited}
for m in edited:
    print(f"{m:9s} mean attention to the subject "
          f"{mean['unedited'].mean():.4f} -> {mean[m].mean():.4f};\n"
          f"{'':9s} heads above their layer's maximum per prompt: mean "
          f"{counts[m].mean():.1f} of {np.prod(att[m].shape[1:])}")

# %% [markdown]
# The claim: per distract prompt, ROME's edit puts more heads above their layer's
# unedited maximum than the random edit does (paired over prompts; the unedited model
# has none by definition).

# %%
core.claim("drift",
           estimate=stats.paired_difference(counts["ROME"],
                                            counts["random v*"], seed=p.seed),
           measured="heads above the maximum per prompt, ROME - random v*",
           quote=dict(random=counts["random v*"].mean(),
                      rome=counts["ROME"].mean(),
                      heads=int(np.prod(att["ROME"].shape[1:]))));

# %% [markdown]
# ## Putting parts of the unedited model back
#
# If drift carries the new object into the distract prompts, the edited model run with
# its unedited attention weights (every layer above the edit) should prefer the true
# object again. Two sets of distract probes: CounterFact's (the edited sentence, with
# the new object, then a neighbour's prompt) and the official demo's, a neutral
# mention ("France is famous. The capital of Spain is the city of"). Each probe's
# margin: unedited, ROME, and ROME with the attention of every head above the edit,
# of the hinge's heads only, or the subject's value restored. The slider moves over
# the edits (CounterFact's probes).

# %%
def margins(probes):
    nll = editing.mean_nll(lm, [(q, r) for q, r, _ in probes]
                           + [(q, w) for q, _, w in probes])
    return nll[len(probes):] - nll[: len(probes)]


sets = {"DNS": lambda c: editing.counterfact_probes(c)["DNS"],
        "neutral": sadr.neutral_probes}
dns = {k: {m: [] for m in ("unedited", "ROME", *sadr.RESTORED)}
       for k in sets}
for c, e in zip(cases, edits["ROME"]):
    for k, probes_of in sets.items():
        probes = probes_of(c)
        dns[k]["unedited"].append(margins(probes))
        with editing.applied(lm, e):
            dns[k]["ROME"].append(margins(probes))
        for part in sadr.RESTORED:
            dns[k][part].append(
                sadr.restored_margins(lm, e, probes, layer, part))

# %%
names = [f"{c.fact.subject}: {c.fact.object} -> {c.request.new}"
         for c in cases]


def margins_of(name):
    i = names.index(name)
    labels = [q.split(". ")[-1] for q, _ in cases[i].distract]
    shown = {("ROME, " + k + " restored" if k in sadr.RESTORED else k): v[i]
             for k, v in dns["DNS"].items()}
    return sadr.margins_figure(labels, shown,
                               f"Distract margins, edit {name}")


core.explore(margins_of, names, "edit")

# %% [markdown]
# Over the probes ROME lowered by more than 0.5 nats, each probe's share of its drop
# that a restoration wins back (0: none, 1: all), mean with its bootstrap interval:

# %%
flat = {k: {m: np.concatenate(v) for m, v in d.items()}
        for k, d in dns.items()}
share = {k: {part: sadr.recovered(f["unedited"], f["ROME"], f[part])
             for part in sadr.RESTORED} for k, f in flat.items()}
for k, by_part in share.items():
    print(textwrap.fill(f"{k}: mean margins " + ", ".join(
        f"{m} {v.mean():+.2f}" for m, v in flat[k].items()), 78,
        subsequent_indent="  "))
    for part, x in by_part.items():
        print(f"  {part:13s} restored: {stats.mean(x, seed=p.seed)}")

# %% [markdown]
# The claims: restoring the unedited attention above the edit wins back at least 30%
# of ROME's drop, on either set of distract probes.

# %%
for cid, k in (("restore-recovers", "DNS"),
               ("restore-recovers-neutral", "neutral")):
    x = share[k]["attention"]
    core.claim(cid, estimate=stats.mean(x, seed=p.seed),
               measured=f"share of the drop won back over {len(x)} of "
                        f"{len(flat[k]['ROME'])} probes")

# %% [markdown]
# ## The editor
#
# Type a country, pick a relation and a new object, choose ROME, SADR or FiNE
# {cite:p}`pan2025fine` (a handful of neurons, at its paper's settings) and press Edit:
# the bars show the top next tokens before and after on the rewrite prompt, a
# paraphrase, a neighbour and another relation, and the heatmaps every head's attention
# to the subject on a distract prompt (the edited sentence, then a neighbour's prompt)
# before and after. On the static page the slider shows the edits above.

# %%
relation_of = {c.request: c.fact.relation for c in cases}
gallery, before_of = {}, {}
for m in editors:
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
        return live_editors[method](req)
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


live_editors = {**editors, "FiNE": partial(editing.fine, lm)}
live = editing.editor_widget(lm, {m: watched(m) for m in live_editors},
                             known)
core.explore(editor_figure, list(gallery), "edit", live=live);

# %% [markdown]
# ## Claims

# %%
core.claims_table()
print(f"chapter ran in {time.perf_counter() - chapter_start:.0f} s")

# %% [markdown]
# **Reading the claims.** Only mid-sentence subjects are edited (see *Which
# facts* below), and the paper claims rest on ROME's edits taking (the setup
# claim). ROME and SADR take the same number of steps, so SADR minus ROME is
# what the attention term does; the accuracy table shows the two editors'
# scores side by side. What the authors' 80 steps, or their sampled prefixes,
# change is the report *At the authors' settings*, off in the book (see *Going
# further*). Drift (`drift`) is counted as the hinge defines it, against a
# random $v^*$ of the same size. The restorations (`restore-recovers` on
# CounterFact's distract probes, `restore-recovers-neutral` on the neutral
# mentions) put back, in turn, every head's attention above the edit, the
# hinge's heads alone, and the subject's value with the update still in the
# weights elsewhere.

# %% [markdown]
# ## What differs from the paper
#
# * **Model and data.** The paper edits GPT-J (and Llama-3-8B, GPT-NeoX with MEMIT
#   {cite:p}`meng2023memit` and PMET) on CounterFact's 2,000 cases; we edit
#   SmolLM2-135M with ROME only, on `n_edits` facts of our own country templates,
#   each with four neighbour and distract prompts. CounterFact itself cannot be had
#   offline. With so few probes an accuracy moves in large steps, so the comparisons
#   of RS and DNS are decided on each edit's mean margin, the accuracy beside it.
# * **Which facts.** Only facts whose rewrite prompt has text before the subject are
#   edited: SmolLM2 has no beginning-of-text token, and a subject at the first
#   position (the attention sink) cannot be edited there (see above). CounterFact's
#   prompts often start with the subject; GPT-J's edits reach it there.
# * **Steps.** The authors give SADR 80 steps and ROME 20, so their comparison mixes
#   the term with the extra steps. Here both take `steps` = 12: ROME is SADR's control
#   at equal steps. Twelve, not 20 or 80, because one step costs the CPU-seconds that
#   the times per edit above show divided by the steps, and two editors times twenty
#   edits at 80 steps would take many times the book's budget for the chapter. The
#   term has fewer steps to act here than in the paper; the report *At the
#   authors' settings*, off in the book, makes the first `n_authors` edits again at
#   80 steps.
# * **ROME** is the FiNE chapter's: the layer from our causal tracing, three fixed
#   context prefixes (the authors' hparams sample about twenty; each prefix is one
#   more prompt in every step, and the report *At the authors' settings* makes the
#   first `n_authors` edits again with ROME's sampled ones), and $C$ from about
#   58,000 tokens the model samples
#   itself (ROME: 100,000 Wikipedia samples), estimated once for both chapters.
#   ROME's and SADR's $v^*$ follow ROME's and the authors' `compute_v.py` (Adam at
#   rate 0.5, the clamp at four times $|v|$, the KL and weight-decay factors; SADR's
#   hinge, $\epsilon$ added to both distributions, the weight $100 \times 10^{-4}$),
#   except that: the KL is read at the last token of "{subject} is a" (ROME's code
#   reads it at the subject's last token); the rank-one update writes $v^*$ for the
#   mean key over the prefixes, where ROME's code adds $v^* - v$ to the plain
#   prompt's output; the attention term covers only the layers above the edit (those
#   below cannot change, so their term is zero); and our loop also steps at the last
#   iteration.
# * **The live editor** offers ROME, SADR and FiNE (at its paper's settings, from
#   `iclr25.editing`); only ROME and SADR are compared in the claims.
# * **Attention** is read and replaced through the `attn_weights` sites of
#   `iclr25.llm`, an eager-equivalent attention registered with transformers'
#   `AttentionInterface` (its unit tests check it against the default attention).
# * **Drift** is counted as the paper's hinge defines it: heads above the edit whose
#   attention from the distract prompt's last token to the subject's last token
#   exceeds the largest of their layer before the edit, against a random $v^*$ at
#   ROME's distance (ours; the paper shows drift without a control).
# * **Restoration.** Beside the paper's test (all attention above the edit), the
#   hinge's heads alone and the subject's value are restored, and the official demo's
#   neutral-mention prompts are probed beside CounterFact's.
#
# ## Going further
#
# More edits (the paper: 2,000), the authors' steps, and the weight of the term:
#
# ```
# python -m iclr25 run sadr -p n_edits=100 -p steps=80
# python -m iclr25 run sadr -p attn_weight=0.0   # and 0.005, 0.02
# ```
#
# A run of 100 edits makes 100 ROME and 100 SADR edits; the times per edit printed
# above say how long (a GPU makes them fast).
#
# The report *At the authors' settings* is off in the book (on four edits, about six
# CPU-minutes more when its edits are not yet cached):
#
# ```
# python -m iclr25 run sadr -p n_authors=4    # the first four edits
# python -m iclr25 run sadr -p n_authors=20   # every edit
# ```
#
# It makes the first `n_authors` edits four more times, by ROME and by SADR at the
# authors' 80 steps and with ROME's sampled prefixes, and shows SADR minus ROME on
# each edit's mean RS and DNS margin at each setting beside the book's, paired by
# edit with 95% intervals, with each editor's median time per edit and SADR's
# largest attention term.
