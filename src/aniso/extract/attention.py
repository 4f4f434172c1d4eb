"""The attention each head pays to the first real token, read at the model's own attention (SDPA / flash).

Gu et al. 2025 (§3) measure an attention sink as the mean, over every real query position, of the attention
probability A[t, first] on the first token. Those probabilities are one column of each layer's (t × t) map; eager
attention materialises the whole map (and is the slowest way to run a Transformer), SDPA and flash kernels never
do. :class:`FirstTokenAttention` leaves the model on its own attention and reads each layer's query and key tensors
where the attention receives them: the call to ``torch.nn.functional.scaled_dot_product_attention`` (intercepted by a
:class:`torch.overrides.TorchFunctionMode` while a forward pass runs, and attributed to the attention module that is
running). There Q and K are exactly what the attention uses, after rotary positions, per-head norms and grouped-query
layouts, with the mask (padding, causal, bidirectional, sliding window) and any additive bias (ALiBi in Falcon) as
SDPA applies them; the projections' outputs (:class:`aniso.extract.hidden.capture_queries_keys`) come before all of
that, so rebuilding the map from them would mean re-implementing every family's position code. The probability on
the first key is exp(s[t, first] − lse[t]), where lse is the log-sum-exp of row t's scores (the softmax
denominator) and s[t, first] the one score on the first key (:func:`first_key_probabilities_from_lse`). Where SDPA's
own choice of kernel is the CPU flash kernel (what SDPA picks on a CPU without dropout) and the queries are float32
or float64, the layer's call runs that kernel directly, which returns the log-sum-exp beside the output it gives the
model (:func:`attention_with_logsumexp`; the output is bit-identical to SDPA's): the sink then costs one dot product
per query row. Elsewhere (a GPU's kernels, a backend restricted by ``torch.nn.attention.sdpa_kernel``) the
probabilities are SDPA's own output for a value that is 1 on the first key and 0 elsewhere
(:func:`first_key_probabilities`): one more call of the same kernel on the same queries, keys and mask, whose
softmax denominator is a running log-sum-exp over blocks of keys and whose only output column is the first key's,
about one more attention per layer. No (t × t) map exists at any time.

Attention modules whose only implementation is eager and returns its probabilities anyway (BLOOM's ALiBi attention,
GPT-J) are read from their output, where the map already exists. A model whose attention gives neither (CANINE's
eager modules return no map unless asked) is reported as not measured.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager

import torch
from torch.overrides import TorchFunctionMode

from ..common.devices import accumulation_dtype

__all__ = ["attention_with_logsumexp", "first_key_probabilities", "first_key_probabilities_from_lse",
           "first_column", "first_token_sums", "FirstTokenAttention"]


_SDPA = torch.nn.functional.scaled_dot_product_attention
_SDPA_ARGS = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")


def first_key_probabilities(query: torch.Tensor, key: torch.Tensor, first: torch.Tensor, **sdpa) -> torch.Tensor:
    """Each query row's attention probability on key ``first[b]`` of its sequence, as
    ``torch.nn.functional.scaled_dot_product_attention(query, key, value, **sdpa)`` weighs it.

    ``query`` (b, H, t, e), ``key`` (b, H_kv, s, e) as SDPA takes them (grouped-query heads with ``enable_gqa`` or
    broadcast key heads); ``first`` (b,) int64; ``sdpa``: the call's other arguments (``attn_mask`` bool or additive,
    ``is_causal``, ``scale``, ``enable_gqa``, ``dropout_p`` which must be 0). The probabilities are SDPA's own
    output for a value that is 1 on key ``first[b]`` (its first column) and 0 elsewhere: the same softmax over the
    same scores, mask and scale, computed by the same kernel (a flash kernel's running log-sum-exp over blocks of
    keys; no (t × s) map is kept), in float32 at least (bfloat16 and float16 inputs are upcast; float64 stays).
    Returns (b, H, t) in that dtype on the inputs' device; a row that may attend nothing (a padding row) gives 0.
    """
    dtype = torch.promote_types(query.dtype, torch.float32)
    b = query.shape[0]
    one = torch.zeros(key.shape, dtype=dtype, device=key.device)
    one[torch.arange(b, device=key.device), :, first.to(key.device), 0] = 1.0  # the value picks the first key
    mask = sdpa.get("attn_mask")
    if mask is not None and mask.dtype != torch.bool:
        sdpa = sdpa | {"attn_mask": mask.to(dtype)}
    out = _SDPA(query.to(dtype), key.to(dtype), one, **sdpa)[..., 0]
    return out.nan_to_num_(0.0)


#: ``torch._fused_sdp_choice``'s number for the flash kernel (``torch.nn.attention.SDPBackend.FLASH_ATTENTION``).
_FLASH = int(torch.nn.attention.SDPBackend.FLASH_ATTENTION)
#: Dtypes whose kernel scores are the scores of the inputs themselves: the CPU flash kernel rounds bfloat16 and
#: float16 queries (scaled) to their dtype before the product, so its log-sum-exp is that of rounded scores, 1e-4
#: away from those of the model's queries and keys; those dtypes take the second SDPA call in float32.
_EXACT_SCORES = (torch.float32, torch.float64)


def attention_with_logsumexp(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, *, attn_mask=None,
                             dropout_p: float = 0.0, is_causal: bool = False, scale: float | None = None,
                             enable_gqa: bool = False) -> tuple[torch.Tensor, torch.Tensor] | None:
    """SDPA's output and each query row's log-sum-exp of its scores, from one call of the kernel SDPA itself picks,
    where that kernel is the CPU flash kernel; None elsewhere (another device or kernel, dropout).

    Arguments as ``torch.nn.functional.scaled_dot_product_attention`` takes them: ``query`` (b, H, t, e), ``key``
    and ``value`` (b, H_kv, s, e) (H a multiple of H_kv), ``attn_mask`` bool (True: attend) or additive. Returns
    ``(output (b, H, t, e_v) in the inputs' dtype, lse (b, H, t))``, lse = log Σ_j exp(scale·q·k_j + mask_j) over the
    keys row t may attend, in the inputs' dtype, −inf for a row that may attend nothing. The
    output is the one SDPA returns for the same call, bit for bit (``tests/extract/test_attention.py``): SDPA's CPU
    dispatch runs this same kernel (``aten._scaled_dot_product_flash_attention_for_cpu``) on the same arguments, a
    bool mask made additive (0 / −inf in the query's dtype) as SDPA makes it.
    """
    if query.device.type != "cpu" or dropout_p or query.ndim != 4 or query.dtype not in _EXACT_SCORES:
        return None
    try:
        choice = torch._fused_sdp_choice(query, key, value, attn_mask=attn_mask, dropout_p=dropout_p,
                                         is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)
    except (RuntimeError, TypeError):
        return None
    if choice != _FLASH:
        return None
    if attn_mask is not None and attn_mask.dtype == torch.bool:
        attn_mask = torch.zeros(attn_mask.shape, dtype=query.dtype, device=query.device).masked_fill_(
            attn_mask.logical_not(), float("-inf"))
    out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
        query, key, value, dropout_p, is_causal, attn_mask=attn_mask, scale=scale)
    return out, lse


def first_key_probabilities_from_lse(query: torch.Tensor, key: torch.Tensor, first: torch.Tensor,
                                     lse: torch.Tensor, *, attn_mask=None, is_causal: bool = False,
                                     scale: float | None = None, **_) -> torch.Tensor:
    """Each query row's attention probability on key ``first[b]``: exp(scale·q_t·k_first + mask[t, first] − lse_t).

    ``query`` (b, H, t, e), ``key`` (b, H_kv, s, e) (H a multiple of H_kv: grouped-query heads), ``first`` (b,)
    int64, ``lse`` (b, H, t) the log-sum-exp of each row's scores (:func:`attention_with_logsumexp`); ``attn_mask``
    bool (True: attend) or additive, broadcastable to (b, H, t, s); ``is_causal``: row t attends keys j <= t;
    ``scale``: default 1/√e (SDPA's). Computed in float32 at least (float64 stays). Returns (b, H, t) on the inputs'
    device; a row that may attend nothing (a padding row) gives 0, a masked first key 0.

    Error against the exact softmax: |Δp| <= p·(|Δlse| + |Δs|). In float32 the kernel's lse carries the rounding of
    its scores and of its exponential (PyTorch's CPU kernel uses a 20-bit approximation): measured |Δlse| <= 3e-7·(1
    + M), M the row's largest |q|·|k|·scale, over 3,000 random calls with scores up to 90. So the probabilities hold
    to 1e-6 at the scores of the registry's tiny models and to a few 1e-5 at logits of 50-90, where a second SDPA call
    (:func:`first_key_probabilities`) holds 4e-6. ``tests/extract/test_attention.py`` holds
    |Δp| <= 1e-6 + 2e-6·p·M (Hypothesis) and the eager probabilities of every tiny text family to 1e-6.
    """
    dtype = torch.promote_types(lse.dtype, torch.float32)
    b, heads, t, e = query.shape
    kv = key.shape[1]
    idx = first.to(key.device)
    k_first = key[torch.arange(b, device=key.device), :, idx].to(dtype)  # (b, H_kv, e)
    q = query.to(dtype).reshape(b, kv, heads // kv, t, e)
    score = torch.einsum("bkgte,bke->bkgt", q, k_first).reshape(b, heads, t)
    score = score * (scale if scale is not None else 1.0 / e ** 0.5)
    if attn_mask is not None:
        m = attn_mask.to(score.device)
        while m.ndim < 4:
            m = m.unsqueeze(0)
        m = m.expand(b, -1, -1, -1)  # (b, 1 or H, 1 or t, s), a view
        col = m.gather(3, idx.to(m.device).view(b, 1, 1, 1).expand(b, m.shape[1], m.shape[2], 1))[..., 0]
        if col.dtype == torch.bool:
            score = score.masked_fill(~col, float("-inf"))
        else:
            score = score + col.to(dtype)
    if is_causal:
        rows = torch.arange(t, device=score.device)
        score = score.masked_fill(rows[None, None, :] < idx.to(score.device)[:, None, None], float("-inf"))
    p = torch.exp(score - lse.to(dtype))
    return torch.where(torch.isfinite(lse), p, 0.0).nan_to_num_(0.0)


def first_column(probs: torch.Tensor, first: torch.Tensor) -> torch.Tensor:
    """Column ``first[b]`` of each sequence's map: ``probs`` (b, H, t, s), ``first`` (b,) int64 -> (b, H, t)."""
    b, h, t, _ = probs.shape
    return probs.gather(3, first.view(b, 1, 1, 1).expand(b, h, t, 1)).squeeze(3)


def first_token_sums(on_first: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Sums of each head's attention on the first real token: ``on_first`` (b, H, t) the probability of each query
    row on its sequence's first real token, ``mask`` (b, t) bool of real tokens. Returns ``(token_sum,
    sequence_sum)``, (H,) each in :func:`accumulation_dtype`: the sum over every real query row, and the sum over
    sequences of each sequence's mean over its real rows (Gu et al. 2025, §3)."""
    dtype = accumulation_dtype(on_first.device)
    rows = mask.to(device=on_first.device, dtype=torch.bool)
    per_row = torch.where(rows[:, None, :], on_first.to(dtype), 0.0).sum(2)  # (b, H); padding rows left out
    per_sequence = per_row / rows.sum(1).clamp(min=1).to(dtype)[:, None]
    return per_row.sum(0), per_sequence.sum(0)


class _SdpaTap(TorchFunctionMode):
    """Passes every torch call through; an SDPA call made while ``owner`` has an attention layer open is run by the
    owner, which reads it on the way (:meth:`FirstTokenAttention._attend`)."""

    def __init__(self, owner: "FirstTokenAttention"):
        super().__init__()
        self.owner = owner

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is _SDPA and self.owner.layer is not None:
            return self.owner._attend(dict(zip(_SDPA_ARGS, args)) | kwargs)
        return func(*args, **kwargs)


class FirstTokenAttention:
    """Per attention layer, the attention on each sequence's first real token, read during the model's own forward
    passes (see the module docstring).

    ``modules``: the attention modules of a transformers text encoder or decoder (those
    :func:`aniso.extract.hidden.attention_sites` finds; a module that runs for several layers, as ALBERT's shared
    one, counts once per call: layers are numbered in the order they run). ``reduce(on_first (b, H, t), mask (b, t),
    layer)`` makes what is kept of each layer (default :func:`first_token_sums`). Use :meth:`reading` around each
    forward pass, then :meth:`take` for the layers' results in order; :meth:`remove` drops the hooks.

    ``take`` returns None when the model's attention gives neither an SDPA call nor a returned map (nothing measured),
    and raises RuntimeError when only some of its layers gave one.
    """

    def __init__(self, modules: list[torch.nn.Module], reduce: Callable | None = None):
        modules = {id(m): m for m in modules}
        self.reduce = reduce or (lambda on_first, mask, layer: first_token_sums(on_first, mask))
        self.mask: torch.Tensor | None = None
        self.layer: int | None = None
        self._first: torch.Tensor | None = None
        self._calls = 0
        self._got: list = []
        self._missing: list[int] = []
        self._tap = _SdpaTap(self)
        self.handles = []
        for module in modules.values():
            self.handles += [module.register_forward_pre_hook(self._open),
                             module.register_forward_hook(self._close)]

    @contextmanager
    def reading(self, mask: torch.Tensor):
        """Context manager around one forward pass over a batch whose (b, t) bool mask of real tokens is ``mask``;
        forward passes outside it are not read."""
        self.mask = mask
        self._first = mask.to(torch.int64).argmax(dim=1)  # (b,) each sequence's first real token
        self._calls, self._got, self._missing = 0, [], []
        try:
            with self._tap:
                yield self
        finally:
            self.mask = self.layer = None

    def _open(self, module, args) -> None:
        if self.mask is None:
            return
        self.layer = self._calls
        self._calls += 1
        self._got.append(None)

    def _close(self, module, args, out) -> None:
        layer, self.layer = self.layer, None
        if layer is None:
            return
        probs = out[1] if isinstance(out, (tuple, list)) and len(out) > 1 else None
        if self._got[layer] is None and isinstance(probs, torch.Tensor) and probs.ndim == 4 \
                and probs.shape[-1] == probs.shape[-2] == self.mask.shape[1]:
            # An eager module that returns its map: the column is there already.
            self._got[layer] = self.reduce(first_column(probs, self._first.to(probs.device)), self.mask, layer)
        if self._got[layer] is None:
            self._missing.append(layer)

    def _attend(self, call: dict) -> torch.Tensor:
        """Run one SDPA call of the open layer (``call``: its arguments by name) and read the probabilities on the
        first key on the way; returns the call's output, as SDPA gives it."""
        layer = self.layer
        if self._got[layer] is not None:
            raise RuntimeError(f"attention layer {layer} called scaled_dot_product_attention more than once")
        query, key, value = call.pop("query"), call.pop("key"), call.pop("value")
        mask = self.mask.to(query.device)
        b, t = mask.shape
        if query.shape[0] != b or key.shape[0] != b or key.shape[2] != t:
            # not this batch's self-attention (e.g. downsampled or chunked): the layer stays unmeasured
            return _SDPA(query, key, value, **call)
        first = self._first.to(query.device)
        fused = attention_with_logsumexp(query, key, value, **call)
        if fused is None:
            out = _SDPA(query, key, value, **call)
            on_first = first_key_probabilities(query, key, first, **call)
        else:
            out, lse = fused
            on_first = first_key_probabilities_from_lse(query, key, first, lse, **call)
        if on_first.shape[2] != t and t == 1:  # one token, grouped heads packed along the query rows
            on_first = on_first.reshape(b, -1, 1)
        if on_first.shape[2] == t:
            self._got[layer] = self.reduce(on_first, mask, layer)
        return out

    def take(self) -> list | None:
        """The results of the layers of the last forward pass, in the order they ran; None if none was measurable."""
        got, missing = self._got, self._missing
        self._got, self._missing = [], []
        if not got or len(missing) == len(got):
            return None
        if missing:
            raise RuntimeError(f"attention layers {missing} of {len(got)} gave no attention probabilities (neither "
                               "an SDPA call nor a returned map)")
        return got

    def remove(self) -> None:
        for h in self.handles:
            h.remove()
        self.handles = []
