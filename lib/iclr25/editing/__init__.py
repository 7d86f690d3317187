"""Knowledge editing on a real language model: facts, edit requests, metrics and ROME.

The shared substrate of the book's editing chapters (FiNE, SADR). An *edit* rewrites one
fact ``(subject, relation, object)`` to a new object, e.g. "The capital of France is the
city of" Paris -> Rome, by changing the weights of the model. Every public name of the
files below is re-exported here: chapters write ``from iclr25 import editing`` and
``editing.rome(...)``.

Files:

* ``facts.py`` -- a CounterFact-style set of facts about countries (capital, official
  language, currency, continent) in cloze form, filtered to the facts the unedited model
  knows (:func:`known_facts`: greedy decoding after the prompt writes the whole true
  object); edit requests and cases (:func:`make_cases`): the rewrite prompt, paraphrases,
  *neighbourhood* prompts (other subjects, same relation), *relation-specificity* prompts
  (same subject, other relations) and *distract-neighbourhood* prompts (the edited
  sentence, then a neighbour prompt);
* ``evaluation.py`` -- the metrics, as EasyEdit computes them for KnowEdit (the FiNE
  paper's benchmark): efficacy and generalisation are the token accuracy of the new
  object under teacher forcing; each locality score is the share of the true object's
  tokens whose predicted token is unchanged by the edit; fluency is ROME's weighted bi-
  and tri-gram entropy of generated text. CounterFact accuracy, as ROME's summarize
  script scores it (the SADR paper's metric): a probe counts when the right object's
  mean per-token NLL is below the wrong one's (:func:`counterfact_margins`,
  :func:`counterfact_accuracy`). And :func:`run_cases`: edit, measure, restore;
* ``edits.py`` -- :class:`Edit`, a weight change that can be applied and undone exactly,
  and :func:`kept_edits`, every method's edits made once and kept in the model cache;
* ``rome_method.py`` -- ROME (Meng et al., 2022): causal tracing picks the layer, the
  key ``k*`` is the MLP's hidden activation at the subject's last token, ``v*`` is
  optimised so that the model says the new object (with the KL term on "{subject} is a"
  that keeps the subject's essence), and a rank-one update of the MLP down projection
  writes ``W k* = v*``; ``C`` is estimated once and cached (:func:`second_moments`);
* ``fine_method.py`` -- FiNE (Pan et al., 2025): the neurons that contribute most to
  each token of the new object are located, and their value vectors get learned
  updates (the FiNE chapter explains it; the SADR chapter's editor offers it too);
* ``editor.py`` -- the top predictions before and after an edit, their figure, and the
  live editing widget.

Written by hand: EasyEdit, the field's editing library, pins transformers 4 and older
torch releases and downloads its data and statistics at run time, so ROME and the
metrics are re-implemented here from the papers (the hooks are plain torch forward
hooks: pyvene has no intervention that adds a trainable vector at one position per
example). ROME's second moment ``C = E[k k^T]`` is estimated from about 58,000 tokens of
text the model itself samples (:func:`second_moments`; ROME uses 100,000 Wikipedia
samples, which cannot be had offline), and its context prefixes are a fixed list of our
own rather than sampled ones.
"""

from iclr25.editing.editor import (
    before_after_figure,
    editor_figure,
    editor_widget,
    top_predictions,
    views,
)
from iclr25.editing.edits import Applied, Change, Edit, applied, kept_edits
from iclr25.editing.evaluation import (
    COUNTERFACT,
    LOCALITY,
    METRICS,
    Baseline,
    agreement,
    baselines,
    counterfact_accuracy,
    counterfact_margins,
    counterfact_probes,
    evaluate,
    fluency,
    mean_nll,
    n_gram_entropy,
    predict,
    predict_groups,
    probe_batch,
    probes,
    run_cases,
    summary,
    token_accuracy,
)
from iclr25.editing.facts import (
    COUNTRIES,
    RELATIONS,
    Case,
    Fact,
    Relation,
    Request,
    all_facts,
    known_facts,
    make_cases,
    objects,
)
from iclr25.editing.fine_method import (
    contributions,
    fine,
    fine_loss,
    locate,
    neuron_activations,
    random_neurons,
)
from iclr25.editing.rome_method import (
    CONTEXT_LENGTHS,
    CONTEXT_OPENINGS,
    OPENINGS,
    PREFIXES,
    ROME_CLAMP,
    ROME_DECAY,
    ROME_KL,
    ROME_LR,
    ROME_STEPS,
    SAMPLE_TEXTS,
    SAMPLE_TOKENS,
    Penalty,
    causal_trace,
    context_prefixes,
    keys_at,
    moments_config,
    plain_key,
    regularised,
    rome,
    rome_update,
    rome_v,
    sample_texts,
    second_moment,
    second_moments,
    subject_columns,
    subject_span,
    trace_layer,
)
