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
the first key is then SDPA's own output for a value that is 1 on that key and 0 elsewhere
(:func:`first_key_probabilities`): one more call of the same kernel on the same queries, keys and mask, whose
softmax denominator is a running log-sum-exp over blocks of keys and whose only output column is the first key's.
It costs about one more attention per layer, and no (t × t) map exists at any time.

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

__all__ = ["first_key_probabilities", "first_column", "first_token_sums", "FirstTokenAttention"]


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
    """Passes every torch call through; an SDPA call made while ``owner`` has an attention layer open is read first."""

    def __init__(self, owner: "FirstTokenAttention"):
        super().__init__()
        self.owner = owner

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is _SDPA and self.owner.layer is not None:
            self.owner._read_sdpa(dict(zip(_SDPA_ARGS, args)) | kwargs)
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

    def _read_sdpa(self, call: dict) -> None:
        layer = self.layer
        if self._got[layer] is not None:
            raise RuntimeError(f"attention layer {layer} called scaled_dot_product_attention more than once")
        query, key = call.pop("query"), call.pop("key")
        call.pop("value", None)
        mask = self.mask.to(query.device)
        b, t = mask.shape
        if query.shape[0] != b or key.shape[0] != b or key.shape[2] != t:
            return  # not this batch's self-attention (e.g. downsampled or chunked): the layer stays unmeasured
        on_first = first_key_probabilities(query, key, self._first.to(query.device), **call)
        if on_first.shape[2] != t and t == 1:  # one token, grouped heads packed along the query rows
            on_first = on_first.reshape(b, -1, 1)
        if on_first.shape[2] == t:
            self._got[layer] = self.reduce(on_first, mask, layer)

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
