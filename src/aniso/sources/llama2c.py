"""Source kind ``llama2c``: a Llama checkpoint in llama2.c's legacy ``.bin`` format, read onto transformers' Llama.

The file (Karpathy's llama2.c ``export``, legacy version) is a header of 7 little-endian int32 — dim, hidden_dim,
n_layers, n_heads, n_kv_heads, vocab_size (negative: the classifier is not tied to the token embedding), seq_len —
then float32 tensors in this order: token embedding (vocab, dim); attention RMSNorm weights (L, dim); W_Q (L, dim,
dim); W_K and W_V (L, kv_dim, dim); W_O (L, dim, dim); FFN RMSNorm weights (L, dim); W1 (L, hidden, dim); W2 (L,
dim, hidden); W3 (L, hidden, dim); final RMSNorm weight (dim); the rotary tables (seq_len, head_size/2) twice
(unused: transformers recomputes them); and the classifier (vocab, dim) when not tied. Matrices are stored as
(out, in), as ``nn.Linear`` holds them.

llama2.c rotates interleaved pairs of each head's query/key (dimensions 2i, 2i+1) where transformers' Llama rotates
the two halves (i, i + head_size/2), so the rows of W_Q and W_K are permuted per head on the way in
(:func:`rotary_permutation`); every other tensor is copied as is. The file holds numbers only, no code.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import Field

from ..common.files import check_readable, sha256_file
from ..common.schema import Strict
from .base import LoadedModel, ModelUnavailable, SourceContext, SourceKind, check_permissions, in_models_dir

__all__ = ["Llama2cSource", "KIND", "read_llama2c", "rotary_permutation"]


class Llama2cSource(Strict):
    """A llama2.c ``.bin`` (``path``, relative to the models folder unless absolute) and the folder of a Hugging Face
    tokenizer that matches it (``tokenizer``, same rule), without which the model cannot be fed text."""

    kind: Literal["llama2c"]
    path: str = Field(min_length=1)
    tokenizer: str | None = None


def _header(raw: bytes, path: Path) -> tuple[int, int, int, int, int, int, int, bool]:
    if len(raw) < 28:
        raise ValueError(f"{path}: {len(raw)} bytes, too short for a llama2.c header")
    dim, hidden, layers, heads, kv_heads, vocab, seq_len = struct.unpack("<7i", raw[:28])
    if min(dim, hidden, layers, heads, kv_heads, seq_len) < 1 or vocab == 0 or dim % heads or heads % kv_heads:
        raise ValueError(f"{path}: not a llama2.c header: {(dim, hidden, layers, heads, kv_heads, vocab, seq_len)}")
    return dim, hidden, layers, heads, kv_heads, abs(vocab), seq_len, vocab > 0


def rotary_permutation(n_heads: int, head_size: int) -> np.ndarray:
    """Row order that turns a projection with llama2.c's interleaved rotary pairs into transformers' halves layout.

    Returns ``perm`` of shape (n_heads * head_size,): row ``r`` of the transformers weight is row ``perm[r]`` of the
    llama2.c weight. Within each head, transformers' dimension ``i < head_size/2`` is llama2.c's ``2i`` and
    ``i + head_size/2`` is ``2i + 1``. Raises ValueError for an odd head size.
    """
    if head_size % 2:
        raise ValueError(f"rotary embeddings need an even head size, got {head_size}")
    half = head_size // 2
    within = np.concatenate([np.arange(half) * 2, np.arange(half) * 2 + 1])
    return (np.arange(n_heads)[:, None] * head_size + within[None, :]).reshape(-1)


def read_llama2c(path: Path | str, lm_head: bool = True):
    """A transformers ``LlamaForCausalLM`` (or ``LlamaModel`` if not ``lm_head``), float32, eval mode, with the
    weights of a llama2.c legacy ``.bin``.

    Raises ValueError naming the file if the header is not llama2.c's or the size does not match it.
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    path = Path(path)
    raw = path.read_bytes()
    dim, hidden, layers, heads, kv_heads, vocab, seq_len, shared = _header(raw, path)
    head_size = dim // heads
    kv_dim = kv_heads * head_size
    shapes = [("embed", (vocab, dim)), ("rms_att", (layers, dim)), ("wq", (layers, dim, dim)),
              ("wk", (layers, kv_dim, dim)), ("wv", (layers, kv_dim, dim)), ("wo", (layers, dim, dim)),
              ("rms_ffn", (layers, dim)), ("w1", (layers, hidden, dim)), ("w2", (layers, dim, hidden)),
              ("w3", (layers, hidden, dim)), ("rms_final", (dim,)), ("freq_real", (seq_len, head_size // 2)),
              ("freq_imag", (seq_len, head_size // 2))] + ([] if shared else [("classifier", (vocab, dim))])
    floats = np.frombuffer(raw, dtype="<f4", offset=28)
    need = sum(int(np.prod(s)) for _, s in shapes)
    if floats.size != need:
        raise ValueError(f"{path}: {floats.size} float32 values after the header, the header implies {need}")
    t, at = {}, 0
    for name, shape in shapes:
        n = int(np.prod(shape))
        t[name] = torch.from_numpy(floats[at:at + n].reshape(shape).copy())
        at += n
    config = LlamaConfig(hidden_size=dim, intermediate_size=hidden, num_hidden_layers=layers,
                         num_attention_heads=heads, num_key_value_heads=kv_heads, vocab_size=vocab,
                         max_position_embeddings=seq_len, rms_norm_eps=1e-5, tie_word_embeddings=shared,
                         attn_implementation="eager")
    model = LlamaForCausalLM(config)
    q_perm = torch.from_numpy(rotary_permutation(heads, head_size))
    k_perm = torch.from_numpy(rotary_permutation(kv_heads, head_size))
    state = {"model.embed_tokens.weight": t["embed"], "model.norm.weight": t["rms_final"],
             "lm_head.weight": t["embed"] if shared else t["classifier"]}
    for i in range(layers):
        p = f"model.layers.{i}."
        state |= {p + "input_layernorm.weight": t["rms_att"][i], p + "post_attention_layernorm.weight": t["rms_ffn"][i],
                  p + "self_attn.q_proj.weight": t["wq"][i][q_perm], p + "self_attn.k_proj.weight": t["wk"][i][k_perm],
                  p + "self_attn.v_proj.weight": t["wv"][i], p + "self_attn.o_proj.weight": t["wo"][i],
                  p + "mlp.gate_proj.weight": t["w1"][i], p + "mlp.down_proj.weight": t["w2"][i],
                  p + "mlp.up_proj.weight": t["w3"][i]}
    model.load_state_dict(state, strict=True)
    model.tie_weights()
    model.eval()
    return model if lm_head else model.model


def fingerprint(entry, ctx: SourceContext) -> str:
    """``llama2c:<sha256 prefix of the .bin>`` (``llama2c:unread`` where ``ctx.read_weights`` is False: the file
    checked readable, not read)."""
    check_permissions(entry)
    path = in_models_dir(entry, ctx, entry.source.path, "llama2.c checkpoint")
    if not ctx.read_weights:
        check_readable([path])
        return "llama2c:unread"
    return f"llama2c:{sha256_file(path)[:16]}"


def load(entry, ctx: SourceContext) -> LoadedModel:
    """The model (``LlamaModel``) and the tokenizer folder named by the entry. Raises ModelUnavailable if either
    is missing or the file is not a llama2.c checkpoint."""
    check_permissions(entry)
    path = in_models_dir(entry, ctx, entry.source.path, "llama2.c checkpoint")
    if entry.source.tokenizer is None:
        raise ModelUnavailable(f"{entry.id}: a llama2.c checkpoint needs the Hugging Face tokenizer it was trained "
                               "with (registry field source.tokenizer)")
    from transformers import AutoTokenizer

    folder = in_models_dir(entry, ctx, entry.source.tokenizer, "tokenizer folder", Path.is_dir)
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    try:
        model = read_llama2c(path, lm_head=False)
    except ValueError as exc:
        raise ModelUnavailable(f"{entry.id}: {exc}") from None
    return LoadedModel(entry, model, tokenizer, f"llama2c: {path} (read onto transformers' LlamaModel)")


#: Files of a Hugging Face tokenizer, any of which makes a folder one.
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model")


def detect(path: Path) -> dict | None:
    """The registry fields of a llama2.c checkpoint (a file whose header is llama2.c's and whose size the header
    implies), its tokenizer the Hugging Face tokenizer in the same folder; None for any other file or a folder.

    Raises UndetectableModel (one line) when the checkpoint has no Hugging Face tokenizer beside it.
    """
    from .detect import UndetectableModel

    if not path.is_file() or path.stat().st_size < 28:
        return None
    with path.open("rb") as f:
        head = f.read(28)
    try:
        dim, hidden, layers, heads, kv_heads, vocab, seq_len, shared = _header(head, path)
    except ValueError:
        return None
    kv_dim = kv_heads * (dim // heads)
    floats = (vocab * dim + layers * (2 * dim + 2 * dim * dim + 2 * kv_dim * dim + 3 * hidden * dim) + dim
              + seq_len * (dim // heads) + (0 if shared else vocab * dim))
    if path.stat().st_size != 28 + 4 * floats:
        return None
    if not any((path.parent / name).is_file() for name in _TOKENIZER_FILES):
        raise UndetectableModel(f"a llama2.c checkpoint ({layers} layers, width {dim}, vocabulary {vocab}) without "
                                "the Hugging Face tokenizer it was trained with: put its files "
                                f"({', '.join(_TOKENIZER_FILES)}) in {path.parent}, or write a models.yaml entry with "
                                "source.tokenizer")
    return {"source": {"kind": "llama2c", "path": str(path.resolve()), "tokenizer": str(path.parent.resolve())},
            "modality": "text", "granularity": "subword", "architecture": "transformer", "role": "decoder",
            "family": "llama"}


KIND = SourceKind("llama2c", Llama2cSource, fingerprint, load, needs=(("modality", "text"),), is_a="a language model",
                  detect=detect, detects="a llama2.c checkpoint with its Hugging Face tokenizer beside it")
