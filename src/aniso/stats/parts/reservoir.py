"""A uniform sample of one layer's vectors (Vitter's algorithm R), for the estimators that need the vectors
themselves: TwoNN (Facco et al. 2017; R §2.4), the sampled-pair avg cos (G §3.3) and the standardised avg cos of
rogue dimensions (Timkey & van Schijndel 2021)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from ... import metrics
from ...common.settings import TWONN_MIN_POINTS
from .base import Batch, Layers, Layout, Statistic, stack_attributes

if TYPE_CHECKING:
    from ..accumulators import LayerAccumulator

__all__ = ["Reservoir", "reservoir_update", "reservoir_picks"]


class Reservoir(Statistic):
    """A uniform sample of ``reservoir_size`` of the vectors seen (0 without second order).

    Keeps ``_reservoir`` (reservoir_size, d) float32 on the device, its first min(count, reservoir_size) rows in
    use, and ``_rng``, the host stream (numpy PCG64 seeded with ``seed``: one draw per vector past the fill) that
    makes the sample independent of how the stream is split into updates. A merge keeps a uniform sample of the
    union (:meth:`merge`). Summarises ``twonn`` from the reservoir's distinct vectors on its device (NaN below
    :data:`~aniso.common.settings.TWONN_MIN_POINTS` of them, too few to mean anything) and ``n_distinct``, their
    number, and from its host copy ``mean_cosine_sampled`` (``n_pairs`` pairs drawn with
    ``seed``; NaN below 2 vectors), ``n_reservoir``, ``q95``
    (the isotropic 95% quantile of cos at d) and the rogue dimensions (:meth:`rogue`).
    """

    name = "reservoir"
    keeps = {"_reservoir": "reservoir_size·d"}
    summary_rank = 0

    def __init__(self, layout: Layout):
        super().__init__(layout)
        self._rng = np.random.Generator(np.random.PCG64(layout.seed))
        self._reservoir = torch.empty((layout.reservoir_size, layout.dim), dtype=torch.float32, device=layout.device)

    def update(self, batch: Batch, x_sums: torch.Tensor, sq_sums: torch.Tensor) -> None:
        if self.layout.reservoir_size:
            reservoir_update(self._reservoir, batch.seen, batch.x, self._rng)

    @classmethod
    def stacked(cls, parts: list["Reservoir"]) -> list[torch.Tensor]:
        return stack_attributes(parts, [("_reservoir",)])

    @classmethod
    def update_layers(cls, stacked, parts, at: slice, layers: Layers, x_sums: torch.Tensor,
                      sq_sums: torch.Tensor) -> None:
        """Each layer's own draws (its seed's stream), the rows of every layer copied in one indexed copy."""
        (reservoir,) = stacked
        k = reservoir.shape[1]
        if not k:
            return
        picks = [reservoir_picks(k, layers.seen, layers.m, p._rng) for p in parts[at]]
        which = np.repeat(np.arange(at.start, at.start + len(picks)), [len(s) for s, _ in picks])
        if not which.size:
            return
        # the layer, slot and row of each copy, in one host-to-device copy
        index = torch.from_numpy(np.stack([which, np.concatenate([s for s, _ in picks]),
                                           which - at.start, np.concatenate([i for _, i in picks])]))
        index = index.to(reservoir.device)
        reservoir[index[0], index[1]] = layers.x[index[2], index[3]].to(reservoir.dtype)

    def merge(self, other: "Reservoir", count: int, other_count: int) -> None:
        """A uniform sample of the union: a hypergeometric split of the slots between the two sides, then a uniform
        choice within each, drawn from a stream seeded by (seed, both counts), so every rank merging the same states
        gets the same sample."""
        k = self.layout.reservoir_size
        if not (self.layout.second_order and k):
            return
        device = self.layout.device
        a = self._reservoir[: min(count, k)].clone()
        b = other._reservoir[: min(other_count, k)].to(device)
        total = count + other_count
        if total <= k:
            self._reservoir[: a.shape[0]] = a
            self._reservoir[a.shape[0] : total] = b
            return
        rng = np.random.Generator(np.random.PCG64([self.layout.seed, count, other_count]))
        from_a = int(rng.hypergeometric(count, other_count, k)) if count and other_count else \
            (k if count else 0)
        pick_a = torch.from_numpy(rng.choice(a.shape[0], from_a, replace=False)).to(device)
        pick_b = torch.from_numpy(rng.choice(b.shape[0], k - from_a, replace=False)).to(device)
        self._reservoir[:from_a] = a[pick_a]
        self._reservoir[from_a:k] = b[pick_b]

    def state(self, count: int) -> dict[str, np.ndarray]:
        if not self.layout.second_order:
            return {}
        return {"reservoir": self._reservoir[: min(count, self.layout.reservoir_size)].detach().to("cpu").numpy()
                .copy()}

    def load(self, state: dict[str, np.ndarray]) -> None:
        if self.layout.second_order:
            res = self.layout.loader(state)("reservoir", torch.float32)
            self._reservoir[: res.shape[0]] = res

    def summarise(self, layer: "LayerAccumulator", seed: int, n_pairs: int) -> dict[str, Any]:
        res = layer.reservoir_sample()
        # TwoNN where the reservoir is: off the CPU its O(r²·d) neighbour search runs on the device (the host copy
        # serves the O(r·d) estimates below); on the CPU the host copy is the same memory's numbers.
        points = res if self.layout.device.type == "cpu" else self._reservoir[: res.shape[0]]
        # Repeated inputs put copies of the same vectors in the reservoir: TwoNN counts distinct vectors only, so its
        # minimum is of distinct ones (a corpus of two paragraphs repeated would otherwise give a TwoNN of ~10 points).
        distinct = metrics._unique_rows(points)
        n_distinct = int(distinct.shape[0])
        twonn = metrics.twonn_dimension(distinct) if n_distinct >= TWONN_MIN_POINTS else math.nan
        rng = np.random.Generator(np.random.PCG64(seed))
        dim = self.layout.dim
        return {"twonn": twonn, "n_reservoir": int(res.shape[0]), "n_distinct": n_distinct,
                "mean_cosine_sampled": metrics.mean_cosine_sampled(res, n_pairs, rng) if res.shape[0] >= 2
                else math.nan,
                "q95": metrics.isotropic_cos_quantile(dim) if dim >= 2 else math.nan} | self.rogue(layer, res)

    @staticmethod
    def rogue(layer: "LayerAccumulator", res: np.ndarray) -> dict:
        """Rogue dimensions (Timkey & van Schijndel 2021): the three largest per-dimension contributions to avg cos
        (``rogue_dims``), their share of it (``rogue_top3_share``), and avg cos after standardising each dimension
        (exact μ and σ from the first-order sums, on the reservoir: ``mean_cosine_standardised``)."""
        out = {"rogue_dims": [], "rogue_top3_share": math.nan, "mean_cosine_standardised": math.nan}
        if layer.n_nonzero < 2:
            return out
        c = metrics._dimension_contributions(layer.unit_sum, layer.unit_sq_sum, layer.n_nonzero)
        top = np.argsort(c)[::-1][:3]
        total = float(c.sum())
        out["rogue_dims"] = [int(i) for i in top]
        out["rogue_top3_share"] = float(c[top].sum() / total) if total > 0 else math.nan
        if res.shape[0] >= 2:
            mean = layer.vector_sum / layer.count
            std = np.sqrt(np.clip(layer.sq_sum / layer.count - mean * mean, 0.0, None))
            keep = std > 0
            z = (res[:, keep].astype(np.float64) - mean[keep]) / std[keep]
            z = z[np.linalg.norm(z, axis=1) > 0]
            if z.shape[0] >= 2:
                out["mean_cosine_standardised"] = metrics.mean_cosine(z)
        return out


def reservoir_picks(k: int, count: int, m: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Vitter's algorithm R for m new rows after ``count`` seen, into a reservoir of ``k`` slots: (slots, rows),
    int64 host arrays, row ``rows[i]`` of the new ones to be copied into slot ``slots[i]`` (each slot at most once:
    of the rows drawn for one slot, the last). One uniform draw from ``rng`` per row past the fill, so the sample
    does not depend on how the stream is split into updates."""
    seen = count + np.arange(m)  # items seen before each new one
    fill = seen < k
    slots, items = [seen[fill]], [np.flatnonzero(fill)]
    rest = np.flatnonzero(~fill)
    if rest.size:
        u = rng.random(rest.size)
        slot = np.floor(u * (seen[rest] + 1)).astype(np.int64)
        hit = slot < k
        drawn, drawn_items = slot[hit], rest[hit]
        slots.append(drawn)
        items.append(drawn_items)
    slots, items = np.concatenate(slots).astype(np.int64), np.concatenate(items).astype(np.int64)
    if rest.size:  # later rows overwrite earlier ones in the same slot (a filled one too): keep the last
        _, first_in_rev = np.unique(slots[::-1], return_index=True)
        last = np.sort(len(slots) - 1 - first_in_rev)
        slots, items = slots[last], items[last]
    return slots, items


def reservoir_update(reservoir, count: int, x, rng: np.random.Generator) -> None:
    """Vitter's algorithm R over the rows of ``x`` in place: ``reservoir`` (k, d) holds a uniform sample of the
    ``count`` rows seen before (:func:`reservoir_picks`). The rows themselves are copied where they are (a numpy
    reservoir with numpy rows, or a torch reservoir on the rows' device)."""
    slots, items = reservoir_picks(reservoir.shape[0], count, x.shape[0], rng)
    if not slots.size:
        return
    if isinstance(reservoir, torch.Tensor):
        to = lambda a: torch.from_numpy(a).to(reservoir.device)  # noqa: E731
        reservoir[to(slots)] = x[to(items)].to(reservoir.dtype)
    else:
        reservoir[slots] = x[items]
