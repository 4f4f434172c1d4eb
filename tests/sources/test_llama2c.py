"""The llama2c source kind: the reader against llama2.c's own forward pass, on random weights and on the real
stories260K checkpoint of the models folder."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
import torch

from aniso.registry.entries import ModelEntry
from aniso.sources import ModelUnavailable, SourceContext, load_model, source_fingerprint
from aniso.sources.llama2c import read_llama2c, rotary_permutation

STORIES = Path(__file__).resolve().parents[3] / "shared" / "models" / "karpathy" / "tinyllamas-stories260K"


def _rmsnorm(x, w):
    return x / np.sqrt(np.mean(x * x) + 1e-5) * w


def reference_logits(path: Path, tokens: list[int]) -> np.ndarray:
    """llama2.c's run.c forward pass, token by token with a key/value cache, in float64 numpy: (len(tokens), vocab)."""
    raw = path.read_bytes()
    dim, hidden, layers, heads, kv_heads, vocab, seq_len = struct.unpack("<7i", raw[:28])
    shared, vocab = vocab > 0, abs(vocab)
    hs, kv_dim, kv_mul = dim // heads, kv_heads * (dim // heads), heads // kv_heads
    f = np.frombuffer(raw, "<f4", offset=28).astype(np.float64)
    at = 0

    def take(*shape):
        nonlocal at
        n = int(np.prod(shape))
        out = f[at:at + n].reshape(shape)
        at += n
        return out

    emb, rms_att = take(vocab, dim), take(layers, dim)
    wq, wk, wv, wo = take(layers, dim, dim), take(layers, kv_dim, dim), take(layers, kv_dim, dim), take(layers, dim, dim)
    rms_ffn, w1, w2, w3 = take(layers, dim), take(layers, hidden, dim), take(layers, dim, hidden), take(layers, hidden, dim)
    rms_final = take(dim)
    take(seq_len, hs // 2), take(seq_len, hs // 2)
    wcls = emb if shared else take(vocab, dim)
    kc, vc = np.zeros((layers, len(tokens), kv_dim)), np.zeros((layers, len(tokens), kv_dim))
    out = []
    for pos, tok in enumerate(tokens):
        x = emb[tok].copy()
        for layer in range(layers):
            xb = _rmsnorm(x, rms_att[layer])
            q, k, v = wq[layer] @ xb, wk[layer] @ xb, wv[layer] @ xb
            for i in range(0, dim, 2):
                val = pos / 10000.0 ** ((i % hs) / hs)
                c, s = np.cos(val), np.sin(val)
                for vec in ((q, k) if i < kv_dim else (q,)):
                    v0, v1 = vec[i], vec[i + 1]
                    vec[i], vec[i + 1] = v0 * c - v1 * s, v0 * s + v1 * c
            kc[layer, pos], vc[layer, pos] = k, v
            att_out = np.zeros(dim)
            for h in range(heads):
                kvh = (h // kv_mul) * hs
                scores = kc[layer, :pos + 1, kvh:kvh + hs] @ q[h * hs:(h + 1) * hs] / np.sqrt(hs)
                p = np.exp(scores - scores.max())
                p /= p.sum()
                att_out[h * hs:(h + 1) * hs] = p @ vc[layer, :pos + 1, kvh:kvh + hs]
            x = x + wo[layer] @ att_out
            xb = _rmsnorm(x, rms_ffn[layer])
            a, b = w1[layer] @ xb, w3[layer] @ xb
            x = x + w2[layer] @ (a / (1 + np.exp(-a)) * b)
        out.append(wcls @ _rmsnorm(x, rms_final))
    return np.array(out)


def _write_random(path: Path, dim=16, hidden=24, layers=2, heads=4, kv_heads=2, vocab=40, seq_len=32, shared=False,
                  seed=0) -> None:
    hs = dim // heads
    n = (vocab * dim + layers * dim + layers * dim * dim + 2 * layers * kv_heads * hs * dim + layers * dim * dim
         + layers * dim + 3 * layers * hidden * dim + dim + 2 * seq_len * hs // 2 + (0 if shared else vocab * dim))
    rng = np.random.default_rng(seed)
    path.write_bytes(struct.pack("<7i", dim, hidden, layers, heads, kv_heads, vocab if shared else -vocab, seq_len)
                     + (0.3 * rng.standard_normal(n)).astype("<f4").tobytes())


@pytest.mark.parametrize("shared", [True, False])
def test_reader_matches_llama2c_forward_on_random_weights(tmp_path, shared):
    path = tmp_path / "m.bin"
    _write_random(path, shared=shared)
    tokens = [1, 7, 3, 22, 5, 9, 0, 31]
    model = read_llama2c(path)
    with torch.no_grad():
        ours = model(torch.tensor([tokens])).logits[0].double().numpy()
    np.testing.assert_allclose(ours, reference_logits(path, tokens), atol=1e-4, rtol=1e-4)


def test_rotary_permutation_maps_pairs_to_halves():
    assert rotary_permutation(1, 6).tolist() == [0, 2, 4, 1, 3, 5]
    assert rotary_permutation(2, 4).tolist() == [0, 2, 1, 3, 4, 6, 5, 7]
    with pytest.raises(ValueError, match="even"):
        rotary_permutation(2, 3)


def test_bad_files_are_named(tmp_path):
    short = tmp_path / "short.bin"
    short.write_bytes(b"\x00" * 10)
    with pytest.raises(ValueError, match="short.bin: .*too short"):
        read_llama2c(short)
    wrong = tmp_path / "wrong.bin"
    _write_random(wrong)
    wrong.write_bytes(wrong.read_bytes()[:-8])
    with pytest.raises(ValueError, match="wrong.bin: .* float32 values after the header"):
        read_llama2c(wrong)


def test_entry_needs_its_tokenizer_and_the_models_folder(tmp_path):
    _write_random(tmp_path / "m.bin")
    entry = ModelEntry.model_validate(dict(id="tiny-llama2c", source={"kind": "llama2c", "path": "m.bin"},
                                           modality="text", granularity="subword", architecture="transformer",
                                           role="decoder", family="llama"))
    with pytest.raises(ModelUnavailable, match="models folder, which is not set"):
        source_fingerprint(entry)
    assert source_fingerprint(entry, SourceContext(models_dir=tmp_path)).startswith("llama2c:")
    with pytest.raises(ModelUnavailable, match="source.tokenizer"):
        load_model(entry, SourceContext(models_dir=tmp_path))


@pytest.mark.skipif(not (STORIES / "stories260K.bin").is_file(), reason=f"{STORIES} not found")
def test_stories260k_matches_llama2c_forward():
    """The real checkpoint: transformers' Llama with the permuted q/k rows gives llama2.c's logits (the vocabulary
    beside it in the models folder is not the one it was trained with, so this is checked on token ids, not text)."""
    path = STORIES / "stories260K.bin"
    tokens = [1, 403, 407, 261, 378, 102, 15, 300, 411, 2]
    model = read_llama2c(path)
    with torch.no_grad():
        ours = model(torch.tensor([tokens])).logits[0].double().numpy()
    ref = reference_logits(path, tokens)
    assert np.abs(ours - ref).max() < 1e-3
    assert (ours.argmax(-1) == ref.argmax(-1)).all()
