"""iclr25.chapters.sensitivity: the sensitivity estimate, the one-token perturbation, the
regulariser, sharpness, corruptions, the models and the grokking run."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from iclr25 import core, vision
from iclr25.chapters import sensitivity
from iclr25.chapters.sensitivity import grokking
from iclr25.core.claims import check_bound, check_registry

EXPECTED_GAPS = {"language_lowest", "robustness_correlates", "grokking_drop_first"}
"""The claims whose gap is declared."""


def test_a_constant_model_has_sensitivity_zero():
    tokens = torch.randn(200, 5, 3)
    constant = lambda t: torch.tensor([0.0, 1.0, 0.5]).expand(len(t), 3)  # noqa: E731
    assert sensitivity.sensitivity(constant, tokens, sigma=100.0, repeats=3) == 0.0


def test_a_model_reading_only_the_noised_token_flips_almost_always():
    # one token, D = 50 features read as logits: huge noise makes the argmax uniform
    tokens = torch.randn(400, 1, 50)
    reader = lambda t: t[:, 0]  # noqa: E731
    s = sensitivity.sensitivity(
        reader, tokens, sigma=1e4, repeats=2, generator=torch.Generator().manual_seed(0)
    )
    assert s > 0.95
    # with four tokens of which it reads one, only a quarter of the draws touch it
    tokens = torch.randn(2000, 4, 50)
    s = sensitivity.sensitivity(
        reader, tokens, sigma=1e4, repeats=2, generator=torch.Generator().manual_seed(0)
    )
    assert s == pytest.approx(0.25 * 49 / 50, abs=0.03)
    # unless the noise is restricted to the token it reads
    s = sensitivity.sensitivity(
        reader, tokens, sigma=1e4, positions=(0,), generator=torch.Generator().manual_seed(0)
    )
    assert s > 0.95
    # and no noise flips nothing
    assert sensitivity.sensitivity(reader, tokens, sigma=0.0) == 0.0


def test_the_perturbation_touches_exactly_one_token():
    tokens = torch.randn(300, 6, 4)
    noised, pick = sensitivity.perturb_one_token(tokens, 0.5, torch.Generator().manual_seed(1))
    changed = (noised != tokens).any(-1)  # (batch, tokens)
    assert torch.equal(changed.sum(1), torch.ones(300, dtype=torch.long))
    assert torch.equal(changed.float().argmax(1), pick)
    assert set(pick.tolist()) == set(range(6))  # every position can be chosen
    delta = (noised - tokens)[torch.arange(300), pick]
    assert delta.std().item() == pytest.approx(0.5, rel=0.1)
    _, pick = sensitivity.perturb_one_token(tokens, 0.5, positions=(1, 3))
    assert set(pick.tolist()) <= {1, 3}
    with pytest.raises(ValueError, match=r"\(batch, tokens, features\)"):
        sensitivity.perturb_one_token(torch.zeros(3, 4), 1.0)
    with pytest.raises(ValueError, match="sigma must be >= 0"):
        sensitivity.perturb_one_token(tokens, -1.0)


def test_joint_noise_touches_every_listed_token_and_only_those():
    tokens = torch.randn(50, 3, 8)
    noised = sensitivity.perturb_tokens(tokens, 0.1, (0, 1), torch.Generator().manual_seed(0))
    changed = (noised != tokens).any(-1)
    assert changed[:, :2].all() and not changed[:, 2].any()
    # a model reading only token 2 never flips; one reading token 0 flips under joint noise
    reader = lambda t: t[:, 2]  # noqa: E731
    assert sensitivity.sensitivity(reader, tokens, 1e4, positions=(0, 1), joint=True) == 0.0
    reader = lambda t: t[:, 0]  # noqa: E731
    assert sensitivity.sensitivity(reader, tokens, 1e4, positions=(0, 1), joint=True) > 0.8
    with pytest.raises(ValueError, match="joint noise needs the positions"):
        sensitivity.sensitivity(reader, tokens, 1.0, joint=True)


def test_sigma_grid_doubles_down_to_the_official_scale():
    assert sensitivity.sigma_grid(0.025, 1.6) == [0.025, 0.05, 0.1, 0.2, 0.4, 0.8, 1.6]
    assert sensitivity.sigma_grid(0.4, 1.0) == [0.4, 0.8]
    with pytest.raises(core.ParameterError, match="sigma_min <= sigma_max"):
        sensitivity.sigma_grid(2.0, 1.0)


def _blobs(n: int = 200, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Two well separated Gaussian blobs as (n, 2 tokens, 2 features) and labels."""
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 2, (n,), generator=g)
    tokens = torch.randn(n, 2, 2, generator=g) + (2 * labels - 1).float()[:, None, None]
    return tokens, labels


def _linear(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(4, 2))


def test_train_to_accuracy_stops_at_the_first_epoch_that_reaches_the_target():
    tokens, labels = _blobs()
    model = _linear()
    history = sensitivity.train_to_accuracy(
        model, model, tokens, labels, target=0.95, max_epochs=50, lr=0.01, batch_size=16
    )
    assert history[-1] >= 0.95 and all(a < 0.95 for a in history[:-1])
    assert 2 <= len(history) < 50
    assert history[-1] == sensitivity.accuracy(model, tokens, labels)  # the clean train accuracy
    # stopping changes nothing else: training the same number of epochs with an
    # unreachable target gives the same weights
    again = _linear()
    longer = sensitivity.train_to_accuracy(
        again, again, tokens, labels, target=1.0, max_epochs=len(history), lr=0.01, batch_size=16
    )
    assert longer == history
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), again.parameters()))


def test_train_to_accuracy_stops_at_the_cap_when_the_target_is_out_of_reach():
    tokens, _ = _blobs()
    noise_labels = torch.randint(0, 2, (len(tokens),), generator=torch.Generator().manual_seed(5))
    model = _linear()
    history = sensitivity.train_to_accuracy(
        model, model, tokens, noise_labels, target=0.99, max_epochs=3, p=0.5, sigma_reg=0.1
    )
    assert len(history) == 3 and max(history) < 0.99
    assert not model.training
    with pytest.raises(ValueError, match="0 < target <= 1"):
        sensitivity.train_to_accuracy(model, model, tokens, noise_labels, target=1.5, max_epochs=3)


def test_fit_caches_and_honours_the_device(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR25_CACHE", str(tmp_path))
    tokens, labels = _blobs()
    asked = []
    real_get_device = core.get_device

    def spy(device: str = "auto") -> torch.device:
        asked.append(device)
        return real_get_device(device)

    monkeypatch.setattr(core, "get_device", spy)
    seen = []

    def make() -> torch.nn.Module:
        return _linear()

    def to_forward(m: torch.nn.Module):
        def forward(t: torch.Tensor) -> torch.Tensor:
            seen.append(t.device.type)
            return m(t)

        return forward

    kwargs = dict(target_acc=0.9, max_epochs=20, lr=0.05, batch_size=16, device="auto")
    model, history = sensitivity.fit("t", {"k": 1}, make, to_forward, tokens, labels, **kwargs)
    assert asked == ["auto"]  # "auto" is resolved by core.get_device
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert set(seen) == {expected}  # training ran where "auto" points
    assert next(model.parameters()).device.type == "cpu" and not model.training
    assert history[-1] >= 0.9 and len(list(tmp_path.glob("*.pt"))) == 1
    # the second call reads the cache: no training, the same model
    seen.clear()
    again, history2 = sensitivity.fit("t", {"k": 1}, make, to_forward, tokens, labels, **kwargs)
    assert not seen and np.array_equal(history, history2)
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), again.parameters()))
    if not torch.cuda.is_available():
        with pytest.raises(core.ParameterError, match="no CUDA device"):
            sensitivity.fit(
                "u", {"k": 2}, make, to_forward, tokens, labels, **{**kwargs, "device": "cuda"}
            )


def test_patches_are_the_vit_tokens_and_round_trip():
    images = torch.rand(5, 1, 16, 16)
    tokens = sensitivity.patchify(images, 4)
    assert tokens.shape == (5, 16, 16)
    assert torch.equal(tokens[:, 0], images[:, 0, :4, :4].flatten(1))  # top-left patch first
    assert torch.equal(tokens[:, 1], images[:, 0, :4, 4:8].flatten(1))  # then along the row
    assert torch.equal(sensitivity.unpatchify(tokens, (1, 16, 16), 4), images)
    # noise on one token is noise on one 4x4 block of pixels
    noised, pick = sensitivity.perturb_one_token(tokens, 1.0)
    diff = (sensitivity.unpatchify(noised, (1, 16, 16), 4) != images)[:, 0]
    assert torch.equal(diff.sum((1, 2)), torch.full((5,), 16))
    with pytest.raises(ValueError, match="must divide"):
        sensitivity.patchify(torch.rand(1, 1, 10, 10), 4)


def test_regularised_loss_mixes_cross_entropy_and_output_mse():
    torch.manual_seed(0)
    layer = torch.nn.Linear(12, 3)
    forward = lambda t: layer(t.flatten(1))  # noqa: E731
    tokens, labels = torch.randn(8, 3, 4), torch.randint(0, 3, (8,))
    ce = F.cross_entropy(forward(tokens), labels)
    assert torch.allclose(sensitivity.regularised_loss(forward, tokens, labels, 0.0, 1.0), ce)
    gen = lambda: torch.Generator().manual_seed(3)  # noqa: E731
    noised, _ = sensitivity.perturb_one_token(tokens, 1.0, gen())
    mse = F.mse_loss(forward(noised), forward(tokens))
    mixed = sensitivity.regularised_loss(forward, tokens, labels, 0.25, 1.0, gen())
    assert torch.allclose(mixed, 0.75 * ce + 0.25 * mse)
    with pytest.raises(ValueError, match="must be in \\[0, 1\\]"):
        sensitivity.regularised_loss(forward, tokens, labels, 1.5, 1.0)


def test_sharpness_is_zero_without_noise_and_restores_the_weights():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    x = torch.randn(50, 4)
    before = [w.clone() for w in model.parameters()]
    assert sensitivity.sharpness(model, lambda m: m(x), std=0.0) == 0.0
    small = sensitivity.sharpness(model, lambda m: m(x), std=0.01)
    large = sensitivity.sharpness(model, lambda m: m(x), std=0.1)
    assert 0 < small < large
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))


def test_corruptions():
    images = torch.rand(20, 1, 8, 8)
    shifted = sensitivity.corrupt(images, "shift", 1)
    assert torch.allclose(shifted.sum((1, 2, 3)), images.sum((1, 2, 3)))  # a roll keeps every pixel
    assert not torch.equal(shifted, images)
    blurred = sensitivity.corrupt(images, "blur", 1.0)
    assert blurred.std() < images.std()
    noisy = sensitivity.corrupt(images, "noise", 0.5)
    assert noisy.min() >= 0 and noisy.max() <= 1 and not torch.equal(noisy, images)
    with pytest.raises(ValueError, match="unknown corruption 'rain'; accepted: noise, blur, shift"):
        sensitivity.corrupt(images, "rain", 1.0)


def test_image_models_share_the_token_interface():
    data = vision.load("digits16")
    tokens = sensitivity.patchify(data.train.x[:6], 4)
    for arch in sensitivity.IMAGE_ARCHS:
        model = sensitivity.build_image_model(arch, data, 8).eval()
        logits = sensitivity.image_forward(model, data.shape, 4)(tokens)
        assert logits.shape == (6, 10)
        assert torch.allclose(logits, model(data.train.x[:6]), atol=1e-5)
    with pytest.raises(ValueError, match="unknown architecture 'resnet'"):
        sensitivity.build_image_model("resnet", data, 8)


def test_sequence_classifiers_read_embeddings():
    embeddings = torch.randn(32, 16)
    ids = torch.randint(0, 32, (5, 16))
    for arch in sensitivity.SEQUENCE_ARCHS:
        model = sensitivity.SequenceClassifier(arch, embeddings, 16, 2).eval()
        assert torch.equal(model(ids), model.from_embeddings(embeddings[ids]))
        assert "embeddings" not in dict(model.named_parameters())  # fixed, not trained
    with pytest.raises(ValueError, match="unknown architecture 'gru'"):
        sensitivity.SequenceClassifier("gru", embeddings, 16, 2)


def test_sentiment_task_follows_its_planted_rule():
    ids, labels = sensitivity.sentiment_task(500, length=16, vocab=32, signed=8, seed=1)
    assert ids.shape == (500, 16) and labels.shape == (500,)
    score = (ids < 8).sum(1) - ((ids >= 8) & (ids < 16)).sum(1)
    assert (score != 0).all()
    assert torch.equal(labels, (score > 0).long())
    assert 0.3 < labels.float().mean() < 0.7
    with pytest.raises(ValueError, match="2 signed <= vocab"):
        sensitivity.sentiment_task(10, vocab=10, signed=8)


def test_modular_addition_splits_all_pairs():
    data = sensitivity.modular_addition(7, 0.3, seed=0)
    assert len(data["train_y"]) == int(0.3 * 49) and len(data["test_y"]) == 49 - int(0.3 * 49)
    x = torch.cat([data["train_x"], data["test_x"]])
    y = torch.cat([data["train_y"], data["test_y"]])
    assert len({tuple(r) for r in x[:, :2].tolist()}) == 49
    assert torch.equal(y, (x[:, 0] + x[:, 1]) % 7) and (x[:, 2] == 7).all()
    with pytest.raises(ValueError, match="0 < train_fraction < 1"):
        sensitivity.modular_addition(7, 1.5)


def test_grok_logs_and_caches(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR25_CACHE", str(tmp_path))
    log = sensitivity.grok(modulus=5, epochs=20, dim=16, every=10, device="cpu")
    assert log["epoch"].tolist() == [0, 10, 20]
    for key in ("train_acc", "test_acc", "sensitivity"):
        assert ((log[key] >= 0) & (log[key] <= 1)).all()
    assert len(list(tmp_path.glob("*.pt"))) == 1
    # the device is not part of the key: a run made on a GPU serves a CPU build
    again = sensitivity.grok(modulus=5, epochs=20, dim=16, every=10, device="auto")
    assert all(torch.equal(log[k], again[k]) for k in log)
    if not torch.cuda.is_available():
        with pytest.raises(core.ParameterError, match="no CUDA device"):
            sensitivity.grok(modulus=5, epochs=30, dim=16, every=10, device="cuda")


def test_grok_settings_are_the_book_run_or_the_official_one():
    assert sensitivity.GROK_PAPER == {
        "modulus": 113,
        "train_fraction": 0.3,
        "epochs": 17000,
        "lr": 1e-3,
        "every": 50,
    }
    book = {"modulus": 5, "train_fraction": 0.5, "epochs": 10, "lr": 1e-3, "every": 5}
    assert sensitivity.grok_settings("book", book) == book
    assert sensitivity.grok_settings("paper", book) == sensitivity.GROK_PAPER
    with pytest.raises(ValueError, match="unknown grokking setting 'slow'; accepted: paper"):
        sensitivity.grok_settings("slow", book)


def test_scattered_noise_touches_at_most_the_drawn_pixels_in_every_channel():
    images = torch.rand(500, 3, 8, 8)
    noised = sensitivity.perturb_scattered_pixels(images, 0.5, 16, torch.Generator().manual_seed(0))
    changed = (noised != images).any(1)  # (batch, height, width)
    assert torch.equal((noised != images).all(1), changed)  # every channel of a pixel
    count = changed.flatten(1).sum(1)
    assert count.max() <= 16 and count.float().mean() > 13  # 16 draws, few repeats
    assert (noised - images)[noised != images].std().item() == pytest.approx(0.5, rel=0.1)
    with pytest.raises(ValueError, match="sigma must be >= 0"):
        sensitivity.perturb_scattered_pixels(images, -1.0)


def test_scattered_sensitivity_flips_a_reader_of_one_pixel_at_its_draw_rate():
    # logits: the pixel (0, 0) of channel 0 against 0.5; huge noise flips it half the
    # time it is drawn, and 16 draws of 64 pixels touch it with 1 - (63/64)^16
    images = torch.zeros(4000, 1, 8, 8)
    reader = lambda x: torch.stack([x[:, 0, 0, 0], torch.full((len(x),), 0.5)], 1)  # noqa: E731
    s = sensitivity.scattered_sensitivity(reader, images, 1e4, repeats=2, seed=1)
    assert s == pytest.approx(0.5 * (1 - (63 / 64) ** 16), abs=0.02)
    assert sensitivity.scattered_sensitivity(reader, images, 0.0) == 0.0


def test_the_grokking_transformer_reads_only_the_equals_position():
    # attention with "=" as the only query gives the logits of the full computation
    torch.manual_seed(0)
    model = sensitivity.OneLayerTransformer(7, dim=16, heads=4, hidden=32).eval()
    ids = torch.randint(0, 7, (10, 3))
    ids[:, 2] = 7
    h = model.embed(ids) + model.pos
    h = h + model.attn(h, h, h, need_weights=False)[0]
    h = h + model.mlp(h)
    step = model.from_embeddings(model.embed(ids))
    assert torch.allclose(step, model.unembed(h[:, -1]), atol=1e-5)


def test_the_grokking_transformers_tables_give_the_same_logits_and_gradients():
    # forward looks keys, values and the query up per token; from_embeddings projects
    torch.manual_seed(0)
    model = sensitivity.OneLayerTransformer(7, dim=16, heads=4, hidden=32)
    ids = torch.randint(0, 8, (20, 3))  # any token anywhere, "=" (7) included
    fast = model(ids)
    step = model.from_embeddings(model.embed(ids))
    assert torch.allclose(fast, step, atol=1e-5)
    weights = list(model.parameters())
    grads = [torch.autograd.grad(out.square().sum(), weights) for out in (fast, step)]
    for a, b in zip(*grads):
        assert torch.allclose(a, b, atol=1e-4)


def test_grok_stops_after_generalising_and_its_log_is_the_full_runs_prefix(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR25_CACHE", str(tmp_path))
    kwargs = dict(modulus=5, epochs=100, dim=16, every=10, device="cpu")
    full = sensitivity.grok(**kwargs)
    # a tiny run never generalises: every test accuracy counts as generalised instead
    monkeypatch.setattr(grokking, "GENERALISED", 0.0)
    short = sensitivity.grok(**kwargs, stop_after=25)
    assert short["epoch"].tolist() == [0, 10, 20, 30]  # 25 rounded up to a logged epoch
    for key, values in short.items():
        assert torch.equal(values, full[key][: len(values)]), key
    with pytest.raises(ValueError, match="stop_after >= 0"):
        sensitivity.grok(**kwargs, stop_after=-1)


def test_grokking_events_follow_their_definitions():
    epoch = np.arange(0, 100, 10)
    log = {
        "epoch": epoch,
        "train_acc": np.array([0.1, 0.5, 1, 1, 1, 1, 1, 1, 1, 1]),
        "test_acc": np.array([0, 0, 0, 0, 0.5, 0.6, 0.8, 1, 1, 1]),
        "sensitivity": np.array([9, 1, 2, 4, 4, 4, 1, 0, 0, 0.0]),
    }
    events = sensitivity.grokking_events(log, train_fraction=0.5, window=1)
    # the initialisation's 9 is before memorising at 20; the peak is the first 4
    assert events == {"memorised": 20, "peak": 30, "drop": 60, "jump": 60}
    assert sensitivity.smoothed(np.array([0, 3, 0.0]), 3).tolist() == [1.5, 1.0, 1.5]


def test_first_epoch():
    epochs, values = np.array([0, 10, 20, 30]), np.array([0.1, 0.6, 0.2, 0.9])
    assert sensitivity.first_epoch(epochs, values, 0.5, below=False) == 10
    assert sensitivity.first_epoch(epochs, values, 0.5, below=True, after=10) == 20
    assert sensitivity.first_epoch(epochs, values, 0.95, below=False) is None


def test_claim_rules_setup_claims_and_declared_gaps():
    # the registry is one a run can decide; every paper claim rests on the setup claim
    # of its experiment; the correlation rules are the conventional 5% level
    check_registry("sensitivity", sensitivity.CLAIMS)
    claims = sensitivity.CLAIMS
    setup = {cid for cid, spec in claims.items() if spec.kind == "setup"}
    assert setup == {"images_matched", "text_matched", "grokking_groks"}
    for cid, spec in claims.items():
        if spec.kind == "paper":
            assert len(spec.rests_on) == 1 and spec.rests_on[0] in setup, cid
    assert claims["grokking_drop_first"].rests_on == ("grokking_groks",)
    assert claims["language_lowest"].rests_on == ("text_matched",)
    gaps = {cid for cid, spec in claims.items() if spec.gap is not None}
    assert gaps == EXPECTED_GAPS
    assert claims["grokking_drop_first"].rule.decide(float("nan"), float("nan")) == "inconclusive"
    assert claims["grokking_drop_first"].rule.decide(20.0, 400.0) == "holds"
    groks = claims["grokking_groks"].rule
    assert check_bound(groks, {"final test acc": 0.95, "jump / memorised epoch": 2.0})
    assert not check_bound(groks, {"final test acc": 0.95, "jump / memorised epoch": 1.5})
    assert not check_bound(groks, {"final test acc": 0.5, "jump / memorised epoch": 9.0})


def test_spearman_p_value_is_the_exact_permutation_p_value():
    x = np.arange(6.0)
    # a perfect increasing relation is the most extreme of the 6! = 720 pairings
    assert sensitivity.spearman_p_value(x, 2 * x + 1, "greater") == pytest.approx(1 / 720)
    assert sensitivity.spearman_p_value(x, -x, "less") == pytest.approx(1 / 720)
    assert sensitivity.spearman_p_value(x, 2 * x + 1, "less") == pytest.approx(1.0)
    # rho >= 0.83 is what six models need for p < 0.05 (the claims' bound)
    assert sensitivity.spearman_p_value(x, [0, 1, 2, 3, 5, 4], "greater") < 0.05  # rho 0.94
    assert sensitivity.spearman_p_value(x, [0, 2, 1, 3, 5, 4], "greater") < 0.05  # rho 0.89
    assert sensitivity.spearman_p_value(x, [1, 0, 2, 4, 5, 3], "greater") > 0.05  # rho 0.77
    with pytest.raises(ValueError, match="alternative"):
        sensitivity.spearman_p_value(x, x, "two-sided")


def _row(sigmas, corruptions, base):
    return {
        "test acc": base,
        **{f"{k} acc": base / 2 for k in corruptions},
        **{f"S({s:g})": base * s for s in sigmas},
    }


def test_figures_build_from_small_tables():
    import pandas as pd

    sigmas, corruptions = [0.1, 1.0], ["noise", "blur"]
    fig = sensitivity.reg_figure(
        _row(sigmas, corruptions, 0.5),
        _row(sigmas, corruptions, 0.8),
        0.5,
        sigmas,
        corruptions,
        "red",
    )
    assert [t.type for t in fig.data] == ["scatter", "bar", "scatter", "bar"]
    assert list(fig.data[3].x) == ["clean", "noise", "blur"]
    assert fig.data[2].name == "p = 0.5" and fig.data[2].line.color == "red"
    assert fig.layout.title.text == "ViT with the sensitivity regulariser, p = 0.5"
    assert fig.layout.xaxis.type == "log"

    table = pd.DataFrame(
        {
            "mean S": [0.1, 0.2, 0.3],
            "corrupted acc": [0.9, 0.7, 0.6],
            "sharpness": [1.0, 3.0, 4.0],
            "arch": ["CNN", "ViT", "ViT"],
        },
        index=["a", "b", "c"],
    )
    fig = sensitivity.robustness_figure(table, -1.0, 1.0, {"ViT": "red", "CNN": "blue"})
    # one trace per (architecture, panel), in the table's order
    assert [t.name for t in fig.data] == ["CNN", "CNN", "ViT", "ViT"]
    assert list(fig.data[3].y) == [3.0, 4.0] and list(fig.data[0].text) == ["a"]
    assert fig.data[2].marker.color == "red"
    assert [t.showlegend for t in fig.data] == [True, False, True, False]
    assert fig.layout.yaxis2.type == "log"
    assert fig.layout.title.text.endswith("accuracy -1.00, vs sharpness +1.00")

    log = {k: np.linspace(0, 1, 4) for k in ("train_acc", "test_acc", "sensitivity")}
    log["epoch"] = np.arange(4)
    events = {"drop": 2, "jump": None}
    fig = sensitivity.grokking_figure(log, log["sensitivity"], events, 7, ("red", "blue"))
    assert [t.name for t in fig.data][-2:] == ["train sensitivity (smoothed)", "drop"]
    assert fig.data[3].yaxis == "y2" and list(fig.data[4].x) == [2, 2]
    titled = sensitivity.grokking_figure(
        log, log["sensitivity"], {"drop": float("nan")}, 7, ("red", "blue"), title="run 3"
    )
    assert len(titled.data) == 4 and titled.layout.title.text == "run 3"
    assert fig.layout.title.text == "Grokking a + b mod 7"
