"""Massive activations of one layer (Sun et al. 2024): the largest |x| per feature, where it was seen, and the first
tokens' sums that say how constant a feature is on the first token of each sequence."""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from .base import (Batch, Layers, Layout, LeftOut, Statistic, host, of_layers, running_max, running_max_,
                   stack_attributes)

if TYPE_CHECKING:
    from ..accumulators import LayerAccumulator

__all__ = ["Massive", "kept_maxima", "massive_rows"]


class Massive(Statistic):
    """Per feature, max |x| and the sequence position where it was first seen; Σx, Σx∘x and the count over the rows
    at position 0 of their sequence (Sun et al. 2024 §2-3).

    Keeps ``_abs_max`` (d,) in the accumulation dtype (exact: the maxima of the batches' own values),
    ``_abs_max_pos`` (d,) int64 (-1: position unknown), ``_first_sum``, ``_first_sq_sum`` (d,) and ``_n_first``
    (0-d int64), on the device: O(d). The first tokens' sums are rows of the batch's shared GEMMs. Per complement it
    keeps the maximum over the rows the complement *keeps* (a maximum does not subtract) and the left-out rows' first
    tokens' sums (:class:`_MassiveLeftOut`). Summarises ``massive_value``, ``massive_feature``, ``massive_position``,
    ``massive_ratio`` (to the median |x| of the reservoir: NaN without one) and ``massive_first_token_cv`` (std /
    |mean| of that feature over the first tokens: NaN below 2 first tokens, inf where its mean is 0).
    """

    name = "massive"
    keeps = {"_abs_max": "d", "_abs_max_pos": "d", "_first_sum": "d", "_first_sq_sum": "d", "_n_first": "1"}
    left_keeps = {"n_first": "1", "first_sum": "d", "first_sq_sum": "d", "abs_max": "d", "abs_max_pos": "d"}
    summary_rank = 4

    def __init__(self, layout: Layout):
        super().__init__(layout)
        zeros, d = layout.zeros, layout.dim
        self._abs_max = zeros(d)
        self._abs_max_pos = torch.full((d,), -1, dtype=torch.int64, device=layout.device)
        self._first_sum, self._first_sq_sum = zeros(d), zeros(d)
        self._n_first = torch.zeros((), dtype=torch.int64, device=layout.device)
        self._complements = {name: _MassiveLeftOut(layout) for name in layout.complements}

    def weights(self, batch: Batch):
        return [batch.first_weight], [batch.first_weight]

    def update(self, batch: Batch, x_sums: torch.Tensor, sq_sums: torch.Tensor) -> None:
        top, rows = _maxima(batch)
        self._abs_max, self._abs_max_pos = running_max(self._abs_max, self._abs_max_pos, top, rows, batch.positions)
        if batch.positions is None:
            return
        self._first_sum += x_sums[0]
        self._first_sq_sum += sq_sums[0]
        self._n_first += batch.first.sum()

    @classmethod
    def stacked(cls, parts: list["Massive"]) -> list:
        names = [("_abs_max",), ("_abs_max_pos",), ("_first_sum",), ("_first_sq_sum",), ("_n_first",)]
        own = stack_attributes(parts, names)
        left = [stack_attributes([p._complements[name] for p in parts],
                                 [("abs_max",), ("abs_max_pos",), ("first_sum",), ("first_sq_sum",), ("n_first",)])
                for name in parts[0].layout.complements]
        return [own, left]

    @classmethod
    def layer_weights(cls, layers: Layers):
        first = layers.first_weight.reshape(1, 1, -1)
        rows = [first] + [w * first for w in layers.mask_weights.values()]  # the first tokens' sums, left out too
        return rows, list(rows)

    @classmethod
    def update_layers(cls, stacked, parts, at: slice, layers: Layers, x_sums: torch.Tensor,
                      sq_sums: torch.Tensor) -> None:
        own, left = stacked
        # (L, d) each: per layer and feature, the max |x| and the first row reaching it, in the model's dtype (exact);
        # per complement, over the rows it keeps (one masked reduction each: nothing read back to the host, as
        # kept_maxima's wait-free path)
        ax = layers.x.abs()
        maxima = [ax.max(1)] + [ax.masked_fill(mask[:, :, None], -1.0).max(1) for mask in layers.masks.values()]
        for j, ((top, rows), share) in enumerate(zip(maxima, [own, *left])):
            abs_max, abs_max_pos, first_sum, first_sq_sum, n_first = (of_layers(t, at) for t in share)
            running_max_(abs_max, abs_max_pos, top, rows, layers.positions)
            if j == 0 and layers.positions is None:
                continue
            first_sum += x_sums[:, j]
            first_sq_sum += sq_sums[:, j]
            if layers.first is not None:
                mask = None if j == 0 else list(layers.masks.values())[j - 1]
                n_first += layers.first.sum() if mask is None else (mask & layers.first).sum(1)

    def merge(self, other: "Massive", count: int, other_count: int) -> None:
        device = self.layout.device
        theirs_max = other._abs_max.to(device=device, dtype=self.layout.dtype)
        better = theirs_max > self._abs_max
        self._abs_max = torch.where(better, theirs_max, self._abs_max)
        self._abs_max_pos = torch.where(better, other._abs_max_pos.to(device), self._abs_max_pos)
        self._first_sum += other._first_sum.to(device=device, dtype=self.layout.dtype)
        self._first_sq_sum += other._first_sq_sum.to(device=device, dtype=self.layout.dtype)
        self._n_first += other._n_first.to(device)

    def without(self, name: str, into: "Massive") -> None:
        left, part = self._complements[name], into
        part._first_sum, part._first_sq_sum = self._first_sum - left.first_sum, self._first_sq_sum - left.first_sq_sum
        part._abs_max, part._abs_max_pos = left.abs_max.clone(), left.abs_max_pos.clone()
        part._n_first = self._n_first - left.n_first

    def state(self, count: int) -> dict[str, np.ndarray]:
        return {"abs_max": host(self._abs_max).copy(), "abs_max_pos": host(self._abs_max_pos).copy(),
                "first_sum": host(self._first_sum).copy(), "first_sq_sum": host(self._first_sq_sum).copy(),
                "n_first": np.array([int(self._n_first)], np.int64)}

    def load(self, state: dict[str, np.ndarray]) -> None:
        t = self.layout.loader(state)
        for name in ("abs_max", "first_sum", "first_sq_sum"):
            setattr(self, f"_{name}", t(name))
        self._abs_max_pos = t("abs_max_pos", torch.int64)
        self._n_first = torch.tensor(int(state["n_first"][0]), dtype=torch.int64, device=self.layout.device)

    def summarise(self, layer: "LayerAccumulator", seed: int, n_pairs: int) -> dict[str, Any]:
        res = layer.reservoir_sample()
        abs_max = layer.abs_max
        f = int(np.argmax(abs_max))
        value = float(abs_max[f])
        median = float(np.median(np.abs(res))) if res.size else math.nan
        cv = math.nan
        n_first = layer.n_first
        if n_first >= 2:
            mean = layer.first_sum[f] / n_first
            var = max(layer.first_sq_sum[f] / n_first - mean * mean, 0.0)
            cv = math.sqrt(var) / abs(mean) if mean != 0 else math.inf
        return {"massive_value": value, "massive_feature": f, "massive_position": int(layer.abs_max_pos[f]),
                "massive_ratio": value / median if median > 0 else math.nan, "massive_first_token_cv": cv}


class _MassiveLeftOut(LeftOut):
    """For one complement, on the device: ``abs_max`` (d,) and ``abs_max_pos`` (d,) int64, the largest |x| per
    feature over the rows it keeps and its position; ``first_sum``, ``first_sq_sum`` (d,) and ``n_first`` (0-d
    int64), the first tokens' Σx, Σx∘x and count over the rows it leaves out."""

    keeps = Massive.left_keeps

    def __init__(self, layout: Layout):
        self.n_first = torch.zeros((), dtype=torch.int64, device=layout.device)
        self.first_sum, self.first_sq_sum = layout.zeros(layout.dim), layout.zeros(layout.dim)
        self.abs_max = layout.zeros(layout.dim)
        self.abs_max_pos = torch.full((layout.dim,), -1, dtype=torch.int64, device=layout.device)
        self.wait_free = layout.wait_free

    def weights(self, batch: Batch, name: str):
        w = batch.mask_weights[name]
        return [w * batch.first_weight], [w * batch.first_weight]

    def update(self, batch: Batch, index: int, name: str, x_sums: torch.Tensor, sq_sums: torch.Tensor) -> None:
        if batch.first is not None:
            self.n_first += (batch.masks[name] & batch.first).sum()
        self.first_sum += x_sums[0]
        self.first_sq_sum += sq_sums[0]
        top, rows = batch.shared("kept_maxima", lambda: _kept(batch, self.wait_free))[index]
        self.abs_max, self.abs_max_pos = running_max(self.abs_max, self.abs_max_pos, top, rows, batch.positions)


def _abs(batch: Batch) -> torch.Tensor:
    return batch.shared("abs_x", lambda: batch.x.abs())  # in the batch's own dtype (exact)


def _maxima(batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
    """Per feature, max |x| over the batch and the first row reaching it (shared with the complements' shares)."""
    return batch.shared("maxima", lambda: _abs(batch).max(0))


def _kept(batch: Batch, wait_free: bool) -> list[tuple[torch.Tensor, torch.Tensor]]:
    top, rows = _maxima(batch)
    return kept_maxima(_abs(batch), top, rows, list(batch.masks.values()), wait_free)  # (|x| is overwritten)


def kept_maxima(ax: torch.Tensor, top: torch.Tensor, rows: torch.Tensor, masks: list[torch.Tensor],
                wait_free: bool | None = None) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Per mask of ``masks`` (each (m,) bool: the rows a complement leaves out), the largest |x| per feature over the
    rows it keeps (d,) and the first row reaching it (d,); -1 at row 0 where the mask marks every row.

    ``ax`` (m, d) is |x| of the batch, ``top`` and ``rows`` its per-feature maximum and the first row reaching it
    (``ax.max(0)``). Where no mask marks a row holding a maximum, that maximum is every mask's. Otherwise one
    reduction over the rows that no mask marks (``ax`` is overwritten: -1 on the marked rows), then, per mask, the
    marked rows it keeps (a few) against it, a tie going to the earlier row. That reads which rows are marked back to
    the host; with ``wait_free`` (default: off the CPU, where such a read waits for the device) each mask's maximum
    is one masked reduction over the batch instead (more passes over the batch, no wait; the same values and rows).
    """
    if not masks:
        return []
    if wait_free is None:
        wait_free = ax.device.type != "cpu"
    if wait_free:  # one masked reduction per mask, nothing read back to the host
        return [ax.masked_fill(m[:, None], -1.0).max(0) for m in masks]
    marked = functools.reduce(torch.logical_or, masks)
    if not bool(marked[rows].any()):
        return [(top, rows)] * len(masks)
    idx = marked.nonzero().squeeze(1)  # the rows some mask marks (a few)
    marked_rows = ax[idx]
    free_top, free_rows = ax.index_fill_(0, idx, -1.0).max(0)
    out = []
    for m in masks:
        keep = ~m[idx]
        t, r = free_top, free_rows
        if bool(keep.any()):
            other_top, at = marked_rows[keep].max(0)
            other_rows = idx[keep][at]
            better = (other_top > t) | ((other_top == t) & (other_rows < r))
            t, r = torch.where(better, other_top, t), torch.where(better, other_rows, r)
        out.append((t, r))
    return out


def massive_rows(h: torch.Tensor, magnitude: float = 100.0, ratio: float = 1000.0,
                 wait_free: bool | None = None) -> torch.Tensor:
    """Which rows of one layer's batch ``h`` (m, d) carry a massive activation (Sun et al. 2024, §2: an activation
    of magnitude above ``magnitude`` (100) and about ``ratio`` (1,000) times the median magnitude of the hidden state,
    here the median |x| over the batch's rows and features, estimated from at most 65,536 of its entries taken at an
    even stride). Returns (m,) bool on ``h``'s device; for every layer's batch at once, ``h`` (L, m, d), (L, m), each
    layer's against its own median. A batch with no activation above ``magnitude`` has no such
    row whatever its median: on the CPU the median is then not computed; elsewhere (or with ``wait_free``) it always
    is, so that the criterion never waits for the device (the rows are the same either way, the threshold being at
    least ``magnitude``)."""
    a = h.abs()
    top = a.amax(-1).float()
    if wait_free is None:
        wait_free = a.device.type != "cpu"
    if not wait_free and not bool((top > magnitude).any()):  # reading it costs no wait on the CPU
        return torch.zeros(top.shape, dtype=torch.bool, device=top.device)
    if h.ndim == 3:  # every layer's batch at once: each layer's own median
        flat = a.reshape(a.shape[0], -1)
        median = flat[:, :: max(1, flat.shape[1] // 65_536)].float().median(dim=1).values
        return top > torch.clamp(median * ratio, min=magnitude)[:, None]
    flat = a.reshape(-1)
    median = flat[:: max(1, flat.numel() // 65_536)].float().median()
    threshold = torch.clamp(median * ratio, min=magnitude)
    return top > threshold
