"""One untrained Transformer block with a common bias (drift) added to its inputs (Godey et al. 2024 §4).

Setup (G §4.1): a block ``T`` and an embedding table ``E`` initialised as
transformers initialises the model; ``n_sequences`` sequences of ``seq_len``
input embeddings drawn uniformly from ``E``; a bias ``b = N · b_u / ||b_u||``
with ``b_u ~ N(0, I_d)``; the block applied to ``x_i + b`` for each ``N`` of a
sweep. Every quantity is measured with forward hooks on the real transformers
modules (eager attention), streamed over chunks of sequences.

Block kinds (all BERT-base sized: d = 768, 12 heads of 64, FFN 3072):

``bert-post-ln``
    ``BertLayer`` of ``BertModel`` (post-LayerNorm; G's block).
``gpt2-pre-ln``
    block 0 of a GPT-2 small ``GPT2Model`` (pre-LayerNorm; residual
    projections scaled by 1/√(2·12) as GPT-2 initialises them).
``llama-pre-rmsnorm``
    ``LlamaDecoderLayer`` (pre-RMSNorm, SwiGLU, rotary positions).
``bert-identity-attention``
    the BERT block with its self-attention replaced by the identity (the
    output projection, residual and LayerNorms kept): a control without
    attention.

All blocks attend bidirectionally (no attention mask), as G's BERT block
does, so that block kinds differ only in their architecture and
initialisation. Queries and keys are the projections ``W_Q x + b_Q`` and
``W_K x + b_K`` per head (before rotary embeddings for Llama, as in G eq. 1);
pre-softmax scores are the ones the block's softmax receives, ``Q Kᵀ / √d_k``
(with rotary embeddings applied for Llama).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from .. import metrics

__all__ = [
    "BLOCK_KINDS", "default_bias_norms", "SweepSpec", "UntrainedBlock", "AttentionCapture",
    "build_block", "projection_params", "draw_inputs", "bias_direction", "BlockPoint", "FixedPoint", "BlockSweep",
    "measure_point", "norm_gap", "find_fixed_point", "run_sweep", "IDENTITY_CONTROLS", "identity_attention_control",
]

#: The block types of the untrained-block experiment: G's post-LayerNorm BERT block, a pre-LayerNorm GPT-2 block,
#: a pre-RMSNorm Llama block, and the BERT block with its self-attention replaced by the identity (a control).
#: The source kind ``init`` (:mod:`aniso.sources.init`) takes them from here.
from .names import BLOCK_KINDS  # noqa: E402 - the one list, which the registry schema reads without torch

#: Block kind → the kind that is the same block with its self-attention replaced by the identity (the control of
#: G.block-norm-fixed-point: built under the same seed, it has the same weights apart from attention).
IDENTITY_CONTROLS = {"bert-post-ln": "bert-identity-attention"}


# Independent random streams derived from one seed.
_STREAM_INIT, _STREAM_INPUTS, _STREAM_BIAS, _STREAM_SCORES = range(4)


def _stream_seed(seed: int, stream: int) -> int:
    return int(np.random.SeedSequence([seed, stream]).generate_state(1)[0])


def default_bias_norms(n_points: int = 21, top: float = 128.0, bottom: float = 0.5) -> tuple[float, ...]:
    """The sweep of bias norms N: 0, then ``n_points − 1`` values geometrically spaced in [bottom, top].

    The default (21 values up to 128) crosses the BERT block's fixed point
    (about √768 ≈ 27.7) by more than a factor 4, as G §4.2 requires ("0 to ≥ 2×
    the fixed point"). Raises ValueError for fewer than 3 points or a bad range.
    """
    if n_points < 3:
        raise ValueError(f"a bias-norm sweep needs at least 3 points, got {n_points}")
    if not 0 < bottom < top:
        raise ValueError(f"bias-norm range must satisfy 0 < bottom < top, got bottom={bottom}, top={top}")
    return (0.0,) + tuple(round(float(v), 10) for v in np.geomspace(bottom, top, n_points - 1))


@dataclass(frozen=True)
class SweepSpec:
    """What one sweep computes: block kind, seed, bias norms and sizes (G §4.1 defaults)."""

    kind: str
    seed: int = 0
    norms: tuple[float, ...] = field(default_factory=default_bias_norms)
    n_sequences: int = 16
    seq_len: int = 512
    config: tuple[tuple[str, Any], ...] = ()
    chunk: int = 4
    score_sample: int = 4096
    hist_bins: int = 60

    def __post_init__(self) -> None:
        if self.kind not in BLOCK_KINDS:
            raise ValueError(f"unknown block kind {self.kind!r}; known kinds: {', '.join(BLOCK_KINDS)}")
        if len(self.norms) < 3 or any(n < 0 for n in self.norms) or list(self.norms) != sorted(self.norms):
            raise ValueError(f"bias norms must be >= 3 increasing non-negative values, got {self.norms}")
        if self.n_sequences < 1 or self.seq_len < 2 or self.chunk < 1:
            raise ValueError(f"need n_sequences >= 1, seq_len >= 2, chunk >= 1 (got {self.n_sequences}, "
                             f"{self.seq_len}, {self.chunk})")

    def key(self) -> dict:
        """The JSON-friendly identity of this sweep (part of its cache key)."""
        d = asdict(self)
        d["norms"] = [round(v, 10) for v in self.norms]
        d["config"] = [list(kv) for kv in self.config]
        return d


@dataclass
class AttentionCapture:
    """What the hooks saw in one forward pass of a block with attention.

    Shapes: ``attention_inputs`` (B, L, d), the hidden states entering the
    attention module (after the block's input normalisation for pre-norm
    blocks); ``queries``, ``keys`` (B, H, L, d_head), before rotary embeddings;
    ``scores`` (B, H, L, L) pre-softmax, ``probs`` (B, H, L, L) softmax rows.
    """

    attention_inputs: torch.Tensor
    queries: torch.Tensor
    keys: torch.Tensor
    scores: torch.Tensor
    probs: torch.Tensor


class UntrainedBlock:
    """A freshly initialised transformers block, its embedding table and capture hooks.

    Use :func:`build_block` to make one. ``table`` is (V, d); :meth:`forward`
    maps (B, L, d) inputs to (B, L, d) outputs and, with ``capture=True``,
    returns an :class:`AttentionCapture` (None for the identity control).
    """

    def __init__(self, kind: str, block: nn.Module, table: torch.Tensor, n_heads: int, head_dim: int,
                 attention: nn.Module | None, rotary: nn.Module | None = None):
        self.kind = kind
        self.block = block.eval()
        self.table = table
        self.n_heads = n_heads
        self.head_dim = head_dim
        self.attention = attention
        self.rotary = rotary
        self._capturing = False
        self._seen: dict[str, torch.Tensor] = {}
        self._hooks = []
        if attention is not None:
            self._install_hooks()

    @property
    def dim(self) -> int:
        return int(self.table.shape[1])

    @property
    def has_attention(self) -> bool:
        return self.attention is not None

    def _keep(self, name: str) -> Callable:
        def hook(_module, _inputs, output):
            if self._capturing:
                self._seen[name] = output[1] if name == "probs" else output
        return hook

    def _install_hooks(self) -> None:
        att = self.attention
        for name, module in _BLOCKS[self.kind].family.qk_modules(att).items():
            self._hooks.append(module.register_forward_hook(self._keep(name)))
        self._hooks.append(att.register_forward_hook(self._keep("probs")))

        def keep_input(_module, args, kwargs):
            if self._capturing:
                self._seen["attention_inputs"] = args[0] if args else kwargs["hidden_states"]

        self._hooks.append(att.register_forward_pre_hook(keep_input, with_kwargs=True))

    def _heads(self, t: torch.Tensor) -> torch.Tensor:
        b, n, _ = t.shape
        return t.view(b, n, self.n_heads, self.head_dim).transpose(1, 2)

    @torch.inference_mode()
    def forward(self, h: torch.Tensor, capture: bool = False) -> tuple[torch.Tensor, AttentionCapture | None]:
        """Apply the block to ``h`` (B, L, d). Returns (outputs (B, L, d), capture or None)."""
        self._capturing = capture and self.has_attention
        self._seen = {}
        kwargs = {}
        rope = None
        if self.rotary is not None:
            pos = torch.arange(h.shape[1], device=h.device).unsqueeze(0).expand(h.shape[0], -1)
            rope = self.rotary(h, pos)
            kwargs["position_embeddings"] = rope
        try:
            out = self.block(h, **kwargs)
        finally:
            self._capturing = False
        out = out[0] if isinstance(out, tuple) else out
        if not capture or not self.has_attention:
            return out, None
        if "qkv" in self._seen:
            q, k, _ = self._seen["qkv"].split(self.dim, dim=2)
        else:
            q, k = self._seen["q"], self._seen["k"]
        q, k = self._heads(q), self._heads(k)
        qs, ks = q, k
        if rope is not None:
            from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

            qs, ks = apply_rotary_pos_emb(q, k, *rope)
        scores = torch.matmul(qs, ks.transpose(-1, -2)) * self.attention.scaling
        probs = self._seen["probs"]
        inputs = self._seen["attention_inputs"]
        self._seen = {}
        return out, AttentionCapture(inputs, q, k, scores, probs)


def projection_params(block: UntrainedBlock) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The query and key projections of a block as (W_Q, b_Q, W_K, b_K), W of shape (d, d) acting as W x.

    Biases are zero vectors for blocks without projection biases (Llama by
    default). G §4.3, eq. 1 uses these to predict the mean query/key.
    Raises ValueError for a block without attention.
    """
    att = block.attention
    if att is None:
        raise ValueError(f"block {block.kind!r} has no attention")
    d = block.dim

    return _BLOCKS[block.kind].family.projections(att, d)


def _linear(lin: nn.Module) -> tuple[torch.Tensor, torch.Tensor]:
    """(W, b) of a linear layer, W of shape (out, in); b zero where it has no bias."""
    bias = lin.bias if lin.bias is not None else torch.zeros(lin.weight.shape[0], dtype=lin.weight.dtype)
    return lin.weight.detach(), bias.detach()


def _fused_qkv(att: nn.Module, d: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """GPT-2's Conv1D ``c_attn``: y = x W + b with W (d, 3d), queries, keys and values side by side."""
    w, b = att.c_attn.weight.detach(), att.c_attn.bias.detach()
    return w[:, :d].T, b[:d], w[:, d:2 * d].T, b[d:2 * d]


class _IdentitySelfAttention(nn.Module):
    """Stands in for ``BertSelfAttention``: returns its input (no token mixing) and no attention weights."""

    def forward(self, hidden_states, *args, **kwargs):
        return hidden_states, None


def _bert_parts(model, cfg):
    block, table = model.encoder.layer[0], model.embeddings.word_embeddings.weight
    if cfg.pad_token_id is not None:  # the padding row is zero: never drawn
        keep = torch.ones(table.shape[0], dtype=torch.bool)
        keep[cfg.pad_token_id] = False
        table = table[keep]
    heads = cfg.num_attention_heads
    return block, table.detach(), heads, cfg.hidden_size // heads, block.attention.self, None


def _gpt2_parts(model, cfg):
    block = model.h[0]
    return block, model.wte.weight.detach(), cfg.n_head, cfg.n_embd // cfg.n_head, block.attn, None


def _llama_parts(model, cfg):
    block = model.layers[0]
    return (block, model.embed_tokens.weight.detach(), cfg.num_attention_heads, block.self_attn.head_dim,
            block.self_attn, model.rotary_emb)


def _bert_model(cfg):
    from transformers import BertModel

    return BertModel(cfg, add_pooling_layer=False)


def _gpt2_model(cfg):
    from transformers import GPT2Model

    return GPT2Model(cfg)


def _llama_model(cfg):
    from transformers import LlamaModel

    return LlamaModel(cfg)


@dataclass(frozen=True)
class BlockFamily:
    """The transformers architecture a block kind is taken from.

    Attributes
    ----------
    config : the name of its transformers config class
    base : the config fields it is built with before the sweep's overrides
    model : ``config -> model``, the whole model, initialised as transformers initialises it
    parts : ``(model, config) -> (block, embedding table (V, d), heads, head dim, attention module, rotary
        module or None)``
    qk_modules : ``attention -> {name: module}``, the modules whose outputs are the queries and keys (``"q"`` and
        ``"k"``, or ``"qkv"`` fused)
    projections : ``(attention, d) -> (W_Q, b_Q, W_K, b_K)``, W of shape (d, d) acting as W x
    """

    config: str
    base: tuple[tuple[str, Any], ...]
    model: Callable[[Any], nn.Module]
    parts: Callable[[Any, Any], tuple]
    qk_modules: Callable[[nn.Module], dict[str, nn.Module]]
    projections: Callable[[nn.Module, int], tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]]


_BERT = BlockFamily("BertConfig", (("num_hidden_layers", 1),), _bert_model, _bert_parts,
                    lambda att: {"q": att.query, "k": att.key},
                    lambda att, d: (*_linear(att.query), *_linear(att.key)))
# GPT-2 small: 12 layers, so residual projections get std 0.02/√24
_GPT2 = BlockFamily("GPT2Config", (), _gpt2_model, _gpt2_parts, lambda att: {"qkv": att.c_attn}, _fused_qkv)
_LLAMA = BlockFamily("LlamaConfig", (("hidden_size", 768), ("intermediate_size", 3072), ("num_attention_heads", 12),
                                     ("num_key_value_heads", 12), ("num_hidden_layers", 1), ("vocab_size", 32000)),
                     _llama_model, _llama_parts, lambda att: {"q": att.q_proj, "k": att.k_proj},
                     lambda att, d: (*_linear(att.q_proj), *_linear(att.k_proj)))


@dataclass(frozen=True)
class BlockKind:
    """One row of the block-kind table: its architecture, and whether its self-attention is replaced by the
    identity (the control without attention)."""

    family: BlockFamily
    identity_attention: bool = False


#: The table of block kinds (the names: :data:`BLOCK_KINDS`).
_BLOCKS: dict[str, BlockKind] = {
    "bert-post-ln": BlockKind(_BERT),
    "gpt2-pre-ln": BlockKind(_GPT2),
    "llama-pre-rmsnorm": BlockKind(_LLAMA),
    "bert-identity-attention": BlockKind(_BERT, identity_attention=True),
}
assert tuple(_BLOCKS) == BLOCK_KINDS


def _config(kind: str, overrides: dict[str, Any]):
    import transformers

    family = _BLOCKS[kind].family
    base = dict(family.base)
    base.update(overrides)
    try:
        return getattr(transformers, family.config)(attn_implementation="eager", **base)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"block kind {kind!r}: bad config override(s) {overrides}: {exc}") from None


def build_block(kind: str, seed: int, config: dict[str, Any] | None = None) -> UntrainedBlock:
    """Build and initialise one block of ``kind`` exactly as transformers initialises its model.

    The whole model (BERT: one layer; GPT-2: GPT-2 small; Llama: one layer) is
    built under ``seed`` in a forked torch RNG, so the global RNG is untouched;
    the block and the embedding table are taken from it. BERT: N(0, 0.02²)
    weights, zero biases, LayerNorm 1/0 (G §4.1). ``config`` overrides fields
    of the transformers config (e.g. ``hidden_size`` for small test blocks).

    Raises ValueError for an unknown kind or a bad override.
    """
    if kind not in BLOCK_KINDS:
        raise ValueError(f"unknown block kind {kind!r}; known kinds: {', '.join(BLOCK_KINDS)}")
    row = _BLOCKS[kind]
    cfg = _config(kind, dict(config or {}))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(_stream_seed(seed, _STREAM_INIT))
        block, table, heads, head_dim, attention, rotary = row.family.parts(row.family.model(cfg), cfg)
    if row.identity_attention:
        block.attention.self = _IdentitySelfAttention()
        attention = None
    return UntrainedBlock(kind, block, table, heads, head_dim, attention, rotary=rotary)


def draw_inputs(table: torch.Tensor, n_sequences: int, seq_len: int, seed: int) -> torch.Tensor:
    """``n_sequences`` sequences of ``seq_len`` rows drawn uniformly (with replacement) from ``table`` (V, d).

    Returns (n_sequences, seq_len, d). G §4.1: "16 input embedding sequences of length 512 drawn uniformly from E".
    """
    gen = torch.Generator().manual_seed(_stream_seed(seed, _STREAM_INPUTS))
    idx = torch.randint(0, table.shape[0], (n_sequences, seq_len), generator=gen)
    return table[idx].clone()


def bias_direction(dim: int, seed: int) -> torch.Tensor:
    """The unit drift direction b_u/||b_u|| with b_u ~ N(0, I_dim) (G §4.1); shape (dim,), float32."""
    gen = torch.Generator().manual_seed(_stream_seed(seed, _STREAM_BIAS))
    b = torch.randn(dim, generator=gen, dtype=torch.float64)
    return (b / b.norm()).float()


@dataclass
class BlockPoint:
    """Everything measured at one bias norm N (one seed).

    Norms are Euclidean (units of the embedding space); cosines are exact means
    over all ordered pairs of distinct vectors. Query/key values are means over
    heads of per-head statistics (per-head lists beside them). Row statistics
    are means over all softmax rows (B·H·L); ``seq_max``/``seq_min`` the mean
    over (sequence, head) of the largest/smallest attention weight in the
    whole L×L map (G Fig. 10). The score histogram is over a uniform random
    subsample of the scores (``score_sample`` per chunk); moments are exact.
    Attention fields are None for a block without attention.
    """

    bias_norm: float
    input_mean_cos: float
    input_mean_norm: float
    output_mean_cos: float
    output_mean_norm: float
    query_mean_norm: float | None = None
    key_mean_norm: float | None = None
    query_mean_cos: float | None = None
    key_mean_cos: float | None = None
    query_cos_per_head: list[float] | None = None
    key_cos_per_head: list[float] | None = None
    score_mean: float | None = None
    score_std: float | None = None
    score_mean_abs: float | None = None
    score_hist_counts: list[int] | None = None
    score_hist_edges: list[float] | None = None
    row_max: float | None = None
    row_median: float | None = None
    row_min: float | None = None
    row_entropy: float | None = None
    seq_max: float | None = None
    seq_min: float | None = None


@dataclass
class FixedPoint:
    """The bias norm N* where E||T(x+b)|| = E||x+b|| (G §4.2, Fig. 6b), or why none was found.

    ``n_star`` is None when the norm gap does not change sign on the sweep;
    ``sign_changes`` counts sign changes between consecutive sweep points;
    ``bracket`` is the sweep interval refined by ``scipy.optimize.brentq``
    with ``evaluations`` re-evaluations of the block; ``gap_at_root`` is the
    norm gap at the evaluated N closest to ``n_star``.
    """

    n_star: float | None
    sign_changes: int
    bracket: tuple[float, float] | None = None
    evaluations: int = 0
    gap_at_root: float | None = None


@dataclass
class BlockSweep:
    """One sweep: its spec, a :class:`BlockPoint` per bias norm, the fixed point and provenance.

    ``meta`` holds the block's ``dim``, ``n_heads`` and ``head_dim``, the torch
    version and thread count, and (from the provider) the cache key.
    """

    spec: SweepSpec
    points: list[BlockPoint]
    fixed_point: FixedPoint
    seconds: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict)

    def series(self, name: str) -> np.ndarray:
        """The values of :class:`BlockPoint` field ``name`` along the sweep, shape (n_norms,); None → NaN."""
        return np.array([np.nan if getattr(p, name) is None else getattr(p, name) for p in self.points], float)

    @property
    def norms(self) -> np.ndarray:
        return np.array([p.bias_norm for p in self.points])

    def to_dict(self) -> dict:
        """JSON-friendly form (inverse: :meth:`from_dict`)."""
        return {"spec": self.spec.key(), "points": [asdict(p) for p in self.points],
                "fixed_point": asdict(self.fixed_point), "seconds": self.seconds, "meta": self.meta}

    @classmethod
    def from_dict(cls, d: dict) -> "BlockSweep":
        """Rebuild a sweep from :meth:`to_dict` output. Raises KeyError/TypeError on a malformed dict."""
        s = dict(d["spec"])
        s["norms"] = tuple(s["norms"])
        s["config"] = tuple(tuple(kv) for kv in s["config"])
        fp = dict(d["fixed_point"])
        if fp.get("bracket") is not None:
            fp["bracket"] = tuple(fp["bracket"])
        return cls(SweepSpec(**s), [BlockPoint(**p) for p in d["points"]], FixedPoint(**fp),
                   d.get("seconds", 0.0), d.get("meta", {}))


class _Moments:
    """Running unit-vector sum, norm sum and count of vectors (float64)."""

    def __init__(self, shape: tuple[int, ...]):
        self.unit_sum = torch.zeros(shape, dtype=torch.float64)
        self.norm_sum = torch.zeros(shape[:-1], dtype=torch.float64)
        self.count = 0

    def update(self, v: torch.Tensor) -> None:
        """``v`` (n, *shape): n vectors per slot."""
        v = v.double()
        norms = v.norm(dim=-1)
        if bool((norms == 0).any()):
            raise ValueError("a zero vector has no direction: cannot take its cosine")
        self.unit_sum += (v / norms.unsqueeze(-1)).sum(0)
        self.norm_sum += norms.sum(0)
        self.count += v.shape[0]

    def mean_cos(self) -> np.ndarray:
        s = self.unit_sum.numpy().reshape(-1, self.unit_sum.shape[-1])
        return np.array([metrics.mean_cosine_from_unit_sum(row, self.count) for row in s])

    def mean_norm(self) -> np.ndarray:
        return (self.norm_sum / self.count).numpy().reshape(-1)


def _total(t: torch.Tensor) -> float:
    return float(t.double().sum())


def measure_point(block: UntrainedBlock, x: torch.Tensor, bias: torch.Tensor, spec: SweepSpec,
                  gen: torch.Generator) -> BlockPoint:
    """Measure inputs, outputs, queries/keys, scores and softmax rows at one bias (G §4.2–4.4, Fig. 6–10).

    ``x`` (n_sequences, L, d) drawn inputs; ``bias`` (d,) = N·b_u/||b_u||;
    ``gen`` draws the score subsample for the histogram. Streams over chunks
    of ``spec.chunk`` sequences, so memory is bounded by one chunk's
    (chunk, H, L, L) attention maps.
    """
    d = block.dim
    inputs, outputs = _Moments((d,)), _Moments((d,))
    heads = (block.n_heads, block.head_dim)
    qm, km = _Moments(heads), _Moments(heads)
    s_sum = s_sq = s_abs = 0.0
    n_scores = 0
    sample: list[torch.Tensor] = []
    row_max = row_med = row_min = row_ent = 0.0
    n_rows = 0
    seq_max = seq_min = 0.0
    n_maps = 0
    for start in range(0, x.shape[0], spec.chunk):
        h = x[start:start + spec.chunk] + bias
        out, cap = block.forward(h, capture=True)
        inputs.update(h.reshape(-1, d))
        outputs.update(out.reshape(-1, d))
        if cap is None:
            continue
        qm.update(cap.queries.transpose(1, 2).reshape(-1, *heads))
        km.update(cap.keys.transpose(1, 2).reshape(-1, *heads))
        # Reduce over the last axis in float32 (≤ L terms), then accumulate in float64.
        sc = cap.scores
        s_sum += _total(sc.sum(dim=-1))
        s_sq += _total((sc * sc).sum(dim=-1))
        s_abs += _total(sc.abs().sum(dim=-1))
        n_scores += sc.numel()
        flat = sc.reshape(-1)
        sample.append(flat[torch.randint(0, flat.numel(), (spec.score_sample,), generator=gen)])
        p = cap.probs
        rmax, rmin = p.amax(dim=-1), p.amin(dim=-1)
        # median of an even-length row: mean of its lower and upper middle values
        mid = (p.median(dim=-1).values - (-p).median(dim=-1).values) / 2
        row_max += _total(rmax)
        row_min += _total(rmin)
        row_med += _total(mid)
        row_ent -= _total(torch.special.xlogy(p, p).sum(dim=-1))
        n_rows += rmax.numel()
        seq_max += _total(rmax.amax(dim=-1))
        seq_min += _total(rmin.amin(dim=-1))
        n_maps += rmax.shape[0] * rmax.shape[1]
    point = BlockPoint(
        bias_norm=float(bias.double().norm()),
        input_mean_cos=float(inputs.mean_cos()[0]), input_mean_norm=float(inputs.mean_norm()[0]),
        output_mean_cos=float(outputs.mean_cos()[0]), output_mean_norm=float(outputs.mean_norm()[0]),
    )
    if n_rows:
        qcos, kcos = qm.mean_cos(), km.mean_cos()
        mean = s_sum / n_scores
        smp = torch.cat(sample).double().numpy()
        counts, edges = np.histogram(smp, bins=spec.hist_bins)
        point.query_mean_norm = float(qm.mean_norm().mean())
        point.key_mean_norm = float(km.mean_norm().mean())
        point.query_mean_cos, point.key_mean_cos = float(qcos.mean()), float(kcos.mean())
        point.query_cos_per_head = [float(v) for v in qcos]
        point.key_cos_per_head = [float(v) for v in kcos]
        point.score_mean = mean
        point.score_std = math.sqrt(max(s_sq / n_scores - mean * mean, 0.0))
        point.score_mean_abs = s_abs / n_scores
        point.score_hist_counts = [int(c) for c in counts]
        point.score_hist_edges = [float(e) for e in edges]
        point.row_max, point.row_median, point.row_min = row_max / n_rows, row_med / n_rows, row_min / n_rows
        point.row_entropy = row_ent / n_rows
        point.seq_max, point.seq_min = seq_max / n_maps, seq_min / n_maps
    return point


def norm_gap(block: UntrainedBlock, x: torch.Tensor, direction: torch.Tensor, n: float, chunk: int = 4) -> float:
    """E||T(x+b)|| − E||x+b|| for b = n·direction (G §4.2, Fig. 6b); ``x`` (S, L, d), ``direction`` (d,) unit."""
    bias = direction * float(n)
    out_sum = in_sum = 0.0
    count = 0
    for start in range(0, x.shape[0], chunk):
        h = x[start:start + chunk] + bias
        out, _ = block.forward(h)
        out_sum += float(out.double().norm(dim=-1).sum())
        in_sum += float(h.double().norm(dim=-1).sum())
        count += h.shape[0] * h.shape[1]
    return (out_sum - in_sum) / count


def find_fixed_point(norms: Sequence[float], gaps: Sequence[float], gap_fn: Callable[[float], float],
                     xtol: float = 1e-3) -> FixedPoint:
    """Locate N* with gap(N*) = 0: first sign change of ``gaps`` on ``norms``, refined by ``scipy.optimize.brentq``.

    ``gaps[i]`` is E||T(x+b)|| − E||x+b|| at ``norms[i]``; ``gap_fn`` re-evaluates
    the block at any N. An exact zero on the grid is returned as is.
    Returns a :class:`FixedPoint` with ``n_star`` None when there is no sign
    change. Raises ValueError if the lengths differ.
    """
    from scipy.optimize import brentq

    if len(norms) != len(gaps):
        raise ValueError(f"norms ({len(norms)}) and gaps ({len(gaps)}) differ in length")
    g = np.asarray(gaps, dtype=float)
    signs = np.sign(g)
    changes = [i for i in range(len(g) - 1) if signs[i] * signs[i + 1] < 0]
    zeros = [i for i in range(len(g)) if g[i] == 0]
    n_changes = len(changes) + len(zeros)
    if zeros and (not changes or zeros[0] <= changes[0]):
        return FixedPoint(float(norms[zeros[0]]), n_changes, (float(norms[zeros[0]]),) * 2, 0, 0.0)
    if not changes:
        return FixedPoint(None, 0)
    i = changes[0]
    a, b = float(norms[i]), float(norms[i + 1])
    seen: dict[float, float] = {a: float(g[i]), b: float(g[i + 1])}

    def f(n: float) -> float:
        if n not in seen:
            seen[n] = gap_fn(n)
        return seen[n]

    root = brentq(f, a, b, xtol=xtol)
    nearest = min(seen, key=lambda n: abs(n - root))
    return FixedPoint(float(root), n_changes, (a, b), len(seen) - 2, seen[nearest])


def run_sweep(spec: SweepSpec, progress: Callable[[str], None] | None = None) -> BlockSweep:
    """Run the whole G §4 experiment for one block kind and seed: every N of the sweep, then N*.

    Returns a :class:`BlockSweep`. ``progress`` (optional) receives one line per
    bias norm. Deterministic given ``spec`` (same torch build and thread count).
    """
    t0 = time.perf_counter()
    block = build_block(spec.kind, spec.seed, dict(spec.config))
    x = draw_inputs(block.table, spec.n_sequences, spec.seq_len, spec.seed)
    direction = bias_direction(block.dim, spec.seed)
    gen = torch.Generator().manual_seed(_stream_seed(spec.seed, _STREAM_SCORES))
    from ..common.progress import bar

    points = []
    for n in bar(spec.norms, desc=f"{spec.kind} seed {spec.seed}: bias norms", unit="norm"):
        points.append(measure_point(block, x, direction * float(n), spec, gen))
        if progress is not None:
            p = points[-1]
            progress(f"{spec.kind} seed {spec.seed}: N={n:.3g} |x+b|={p.input_mean_norm:.3g} "
                     f"|T|={p.output_mean_norm:.3g}")
    gaps = [p.output_mean_norm - p.input_mean_norm for p in points]
    fixed = find_fixed_point(spec.norms, gaps, lambda n: norm_gap(block, x, direction, n, spec.chunk))
    return BlockSweep(spec, points, fixed, round(time.perf_counter() - t0, 2),
                      {"dim": block.dim, "n_heads": block.n_heads, "head_dim": block.head_dim,
                       "torch": torch.__version__, "threads": torch.get_num_threads()})


def identity_attention_control(spec: SweepSpec) -> FixedPoint:
    """The fixed point N* of the identity-attention control of ``spec``'s block: the same block kind with its
    self-attention replaced by the identity (:data:`IDENTITY_CONTROLS`), everything else equal — the same seed,
    hence the same embedding table, output projection, FFN and LayerNorm weights, the same drawn inputs, drift
    direction and bias norms — located as :func:`run_sweep` locates the block's own (norm gaps on the sweep, first
    sign change refined with brentq). Only the norm gaps are measured (about n_norms + 8 forward passes).

    Raises ValueError for a block kind without an identity control.
    """
    control = IDENTITY_CONTROLS.get(spec.kind)
    if control is None:
        raise ValueError(f"block kind {spec.kind!r} has no identity-attention control (kinds with one: "
                         f"{', '.join(IDENTITY_CONTROLS)})")
    block = build_block(control, spec.seed, dict(spec.config))
    x = draw_inputs(block.table, spec.n_sequences, spec.seq_len, spec.seed)
    direction = bias_direction(block.dim, spec.seed)
    gaps = [norm_gap(block, x, direction, n, spec.chunk) for n in spec.norms]
    return find_fixed_point(spec.norms, gaps, lambda n: norm_gap(block, x, direction, n, spec.chunk))
