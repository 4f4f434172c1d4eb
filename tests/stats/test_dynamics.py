"""Training dynamics: per-head query/key moments, attention entropy, checkpoint measurement, series cache."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings as hsettings, strategies as st

from aniso.stats.dynamics import (AttentionMoments, CheckpointMeasure, SeriesProvider, first_directions, head_cosines,
                                  head_dots, measure_checkpoint, projections)
from aniso.experiments import miniature_text as mt
from aniso.common.settings import Settings
from aniso.sources.base import LoadedModel

TEXTS = ["The cat sat on the mat.", "A much longer sentence about nothing in particular, to force padding.",
         "Short.", "Queries and keys along training."]


def test_attention_moments_match_brute_force_with_grouped_keys():
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(50, 4 * 3)), rng.normal(size=(50, 2 * 3))
    m = AttentionMoments(4, 2, 3)
    m.update_queries_keys(torch.tensor(q[:20]), torch.tensor(k[:20]))
    m.update_queries_keys(torch.tensor(q[20:]), torch.tensor(k[20:]))
    r = m.result()
    qh, kh = q.reshape(50, 4, 3), k.reshape(50, 2, 3)
    assert np.allclose(r["q_mean"], qh.mean(0))
    assert np.allclose(r["k_mean"], np.repeat(kh.mean(0), 2, axis=0))  # query head h reads key head h // 2
    assert np.allclose(r["q_moment"][1], qh[:, 1].T @ qh[:, 1] / 50)
    assert np.allclose(r["k_moment"][3], kh[:, 1].T @ kh[:, 1] / 50)


def test_attention_entropy_is_log_of_the_support_on_real_rows_only():
    probs = torch.zeros(1, 2, 3, 3)
    probs[0, 0] = torch.tensor([[1, 0, 0], [0.5, 0.5, 0], [1 / 3, 1 / 3, 1 / 3]])
    probs[0, 1] = torch.tensor([[1, 0, 0], [1, 0, 0], [0.25, 0.25, 0.5]])
    m = AttentionMoments(2, 2, 1)
    m.update_attention(probs, torch.tensor([[True, True, False]]))
    assert np.allclose(m.result()["entropy"], [math.log(2) / 2, 0.0])


def test_attention_layout_is_checked():
    with pytest.raises(ValueError, match="bad attention layout"):
        AttentionMoments(4, 3, 8)


@pytest.fixture(scope="module")
def tiny_bert():
    recipe = mt.TextRecipe("bert", hidden_size=16, num_layers=2, num_heads=2, seq_len=64)
    model = mt.build_model(recipe).eval()
    return LoadedModel(type("E", (), {"id": "tiny", "meta": {}})(), model, mt.byte_tokenizer(), "random")


def test_a_checkpoint_measure_agrees_with_one_sequence_at_a_time(tiny_bert):
    """Batched with padding vs. unpadded single sequences: Q̄ of layer 0 is W_Q (mean embedding output) + b_Q
    (the attention's input is hidden state 0), and the entropy is the mean over every real query row."""
    model, tok = tiny_bert.model, tiny_bert.tokenizer
    measure = measure_checkpoint(tiny_bert, TEXTS, Settings(batch_size=3, reservoir_size=128, svd_batch_size=64,
                                                           max_length=200), 7)  # clamped to the 64 positions
    assert measure.step == 7 and measure.q_mean.shape == (2, 2, 8) and measure.entropy.shape == (2, 2)
    rows, entropies = [], []
    with torch.no_grad():
        for text in TEXTS:
            enc = tok([text], return_tensors="pt", truncation=True, max_length=64)
            out = model(**enc, output_hidden_states=True, output_attentions=True)
            rows.append(out.hidden_states[0][0])
            p = out.attentions[1][0].double()
            entropies.append(-(p * p.clamp_min(1e-300).log()).sum(-1))  # (heads, t)
    h0 = torch.cat(rows).mean(0)
    attn = model.bert.encoder.layer[0].attention.self
    with torch.no_grad():
        q_bar = attn.query(h0).reshape(2, 8).numpy()
        k_bar = attn.key(h0).reshape(2, 8).numpy()
    assert np.allclose(measure.q_mean[0], q_bar, atol=1e-5) and np.allclose(measure.k_mean[0], k_bar, atol=1e-5)
    assert np.allclose(measure.entropy[1], torch.cat(entropies, dim=1).mean(1).numpy(), atol=1e-5)
    n_tokens = sum(min(64, len(tok(t)["input_ids"])) for t in TEXTS)
    assert max(len(tok(t)["input_ids"]) for t in TEXTS) > 64
    assert measure.meta["n_tokens"] == n_tokens and len(measure.layers) == 3


def test_a_measure_survives_its_file(tiny_bert, tmp_path):
    m = measure_checkpoint(tiny_bert, TEXTS, Settings(batch_size=2, reservoir_size=128, svd_batch_size=64), 3)
    m.save(tmp_path / "m.safetensors")
    back = CheckpointMeasure.load(tmp_path / "m.safetensors")
    # as text, where NaN (a TwoNN over batches more than the 128 tokens fill) equals itself
    assert back.step == 3 and json.dumps(back.layers) == json.dumps(m.layers)
    for name in CheckpointMeasure.ARRAYS:
        assert np.array_equal(getattr(back, name), getattr(m, name))
    (tmp_path / "m.safetensors").write_bytes(b"garbage")
    with pytest.raises(Exception):
        CheckpointMeasure.load(tmp_path / "m.safetensors")


@hsettings(max_examples=30, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(2, 12))
def test_head_cosines_and_dots_are_per_head(seed, d):
    rng = np.random.default_rng(seed)
    q, k = rng.normal(size=(3, 2, d)), rng.normal(size=(3, 2, d))
    cos = head_cosines(q, k)
    assert cos.shape == (3, 2) and np.all(np.abs(cos) <= 1 + 1e-12)
    assert np.allclose(cos * np.linalg.norm(q, axis=-1) * np.linalg.norm(k, axis=-1), head_dots(q, k))
    assert np.allclose(head_cosines(q, -k), -cos)
    assert np.all(head_cosines(np.zeros_like(q), k) == 0)


def test_first_direction_is_the_top_singular_vector_of_the_union():
    rng = np.random.default_rng(1)
    d = 5
    qs = [rng.normal(size=(40, d)) + np.eye(d)[0] * 3 * s for s in range(3)]  # queries drift along e0
    ks = [rng.normal(size=(40, d)) * 0.5 for _ in range(3)]
    q_mom = np.stack([(q.T @ q / 40)[None, None] for q in qs])
    k_mom = np.stack([(k.T @ k / 40)[None, None] for k in ks])
    for basis, union in (("qk", np.concatenate(qs + ks)), ("q", np.concatenate(qs)), ("k", np.concatenate(ks))):
        v = first_directions(q_mom, k_mom, basis)[0, 0, :, 0]
        top = np.linalg.svd(union, full_matrices=False)[2][0]
        assert abs(abs(v @ top) - 1) < 1e-9
    means = np.stack([q.mean(0)[None, None] for q in qs])
    proj = projections(means, first_directions(q_mom, k_mom, "q", k=2))
    assert proj.shape == (3, 1, 1, 2) and abs(proj[2, 0, 0, 0]) > abs(proj[0, 0, 0, 0])
    with pytest.raises(ValueError, match="basis"):
        first_directions(q_mom, k_mom, "v")


def test_series_are_measured_once_and_then_read_from_the_cache(tmp_path, monkeypatch):
    from aniso.stats.pipeline import StatsProvider
    from aniso.registry.entries import load_registry

    corpus = tmp_path / "wiki.valid.tokens"
    corpus.write_text("".join(f" = Title {i} = \n {t} {i} \n" for i, t in enumerate(TEXTS * 3)))
    train = tmp_path / "train.txt"
    train.write_text("some training text for a tiny run.\n" * 30)
    reg_path = tmp_path / "models.yaml"
    reg_path.write_text("""models:
- id: mini
  source: {kind: miniature-text, arch: gpt2, seed: 0, config: {num_layers: 2, num_heads: 2, seq_len: 16}}
  checkpoints: {steps: all}
  modality: text
  granularity: byte
  architecture: transformer
  role: decoder
  family: mini
- id: hub-series
  source: {kind: hub, repo: no-such-org/no-such-model}
  checkpoints: {steps: [0, 10], vary: {revision: "step{step}"}}
  modality: text
  granularity: subword
  architecture: transformer
  role: decoder
  family: other
""")
    s = Settings(corpus=str(corpus), n_sequences=8, cache_dir=str(tmp_path / "cache"), train_text=str(train),
                 miniature_steps=4, miniature_width=16, miniature_batch=2, reservoir_size=128, svd_batch_size=64)
    reg = load_registry(reg_path)
    first = SeriesProvider(StatsProvider(s, reg)).get(reg.get("mini"))
    assert first.steps.tolist() == [0, 4] and not any(m.meta["cache"]["hit"] for m in first.measures)
    again = SeriesProvider(StatsProvider(s, reg)).get(reg.get("mini"))
    assert all(m.meta["cache"]["hit"] for m in again.measures)
    assert np.array_equal(first.stacked("q_mean"), again.stacked("q_mean"))
    assert first.layer_metric("mean_cosine").shape == (2, 3)
    from pathlib import Path

    from aniso.session import AnisoSession

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    session = AnisoSession.start(s, reg, Path(tmp_path))
    got, missing = session.claim("G.qk-means-align", reg.get("mini"), "t").available_series(("checkpoints",))
    assert [e.id for e, _ in got] == ["mini"] and got[0][1].steps.tolist() == [0, 4]
    assert len(missing) == 1 and missing[0].startswith("hub-series.step0")
