"""The attention sink (Gu et al. 2025, §3): the attention each head pays to the first real token of each sequence, a
model-level statistic (one per attention layer and head, not per layer of hidden states)."""

from __future__ import annotations

import math

import numpy as np
import torch

from ...extract.hidden import first_token_attention_sums
from .base import host as _host

__all__ = ["AttentionSink", "first_token_attention"]


def first_token_attention(probs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Per head, the attention paid to each sequence's first real token, summed over the real query rows:
    ``probs`` (b, H, t, t), ``mask`` (b, t) bool; returns (H,) in :func:`accumulation_dtype`, on ``probs``' device
    (Gu et al. 2025, §3)."""
    return first_token_attention_sums(probs, mask)[0]


class AttentionSink:
    """Streamed mean attention paid to the first real token of each sequence, per attention layer and head.

    For head h of layer l: α = mean over every real query position t of A[t, first] (Gu et al. 2025, §3, with
    their ε = 0.3 to call a head a sink). Kept two ways: token-weighted (every real query row of the corpus counts
    once, so long sequences weigh more: what the claim reads, as Gu et al. average over the query positions of their
    corpus) and per sequence (the mean of each sequence's own mean). ``heads[l]`` is layer l's number of heads (None:
    learnt from the first map of each layer). Sums stay on the device of the maps until :meth:`result`.
    """

    def __init__(self, heads: list[int] | None = None, n_layers: int | None = None):
        n = len(heads) if heads is not None else int(n_layers or 0)
        self.heads = list(heads) if heads is not None else [None] * n
        self.token_sums: list[torch.Tensor | None] = [None] * n
        self.sequence_sums: list[torch.Tensor | None] = [None] * n
        self.rows = 0
        self.sequences = 0

    def update_layer(self, layer: int, probs: torch.Tensor, mask: torch.Tensor) -> None:
        """Add layer ``layer``'s map of one batch: ``probs`` (b, H, t, t), ``mask`` (b, t) bool. Raises ValueError
        if its head count or shape does not match."""
        expected = self.heads[layer]
        if (expected is not None and probs.shape[1] != expected) or probs.shape[-1] != mask.shape[1]:
            raise ValueError(f"attention shape {tuple(probs.shape)} does not match {expected} heads and mask "
                             f"{tuple(mask.shape)}")
        self.add_sums(layer, *first_token_attention_sums(probs, mask))

    def add_sums(self, layer: int, token_sum: torch.Tensor, sequence_sum: torch.Tensor) -> None:
        """Add layer ``layer``'s sums of one batch, as :func:`first_token_attention_sums` gives them ((H,) each),
        where the map was reduced (the extraction's attention hooks)."""
        if self.heads[layer] is not None and token_sum.shape[0] != self.heads[layer]:
            raise ValueError(f"attention layer {layer}: {token_sum.shape[0]} heads, expected {self.heads[layer]}")
        self.heads[layer] = token_sum.shape[0]
        self.token_sums[layer] = token_sum if self.token_sums[layer] is None else self.token_sums[layer] + token_sum
        self.sequence_sums[layer] = (sequence_sum if self.sequence_sums[layer] is None
                                     else self.sequence_sums[layer] + sequence_sum)

    def add_batch(self, mask: torch.Tensor) -> None:
        """Count one batch's real query rows and sequences (after its layers went through :meth:`update_layer`)."""
        self.rows = mask.sum() + self.rows  # kept on the mask's device until :meth:`result` (no wait per batch)
        self.sequences += int(mask.shape[0])

    def update(self, attentions: list[torch.Tensor], mask: torch.Tensor) -> None:
        """Add one batch: ``attentions[l]`` (b, H_l, t, t) probabilities, ``mask`` (b, t) bool of real tokens.
        Raises ValueError if the layers' head counts or shapes do not match."""
        if len(attentions) != len(self.heads):
            raise ValueError(f"expected {len(self.heads)} attention layers, got {len(attentions)}")
        for layer, a in enumerate(attentions):
            self.update_layer(layer, a, mask)
        self.add_batch(mask)

    def result(self, eps: float = 0.3) -> dict:
        """``per_head``: per layer, each head's token-weighted mean attention on the first token; ``share_per_layer``:
        the share of heads above ``eps``; ``share``: the share over every (layer, head) (what X.attention-sink
        reads); ``per_sequence``: the same three from per-sequence means (``per_head``, ``share_per_layer``,
        ``share``); ``eps``; ``rows``: query rows seen; ``sequences``."""
        def shares(sums, n):
            per_head = [(_host(s) / max(n, 1)).round(6).tolist() if s is not None else [] for s in sums]
            flat = np.concatenate([np.asarray(h) for h in per_head]) if per_head else np.zeros(0)
            return {"per_head": per_head, "share_per_layer": [float(np.mean(np.asarray(h) > eps)) if h else math.nan
                                                             for h in per_head],
                    "share": float(np.mean(flat > eps)) if flat.size else float("nan")}

        rows = int(self.rows)
        out = shares(self.token_sums, rows)
        return out | {"eps": eps, "rows": rows, "sequences": self.sequences,
                      "per_sequence": shares(self.sequence_sums, self.sequences)}
