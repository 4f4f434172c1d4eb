"""First-order sums of one layer's vectors: what avg cos, the drift norm, the mean norm and rogue dimensions read.

Godey et al. 2024 §3.3 (avg cos from Σu, drift norm ‖x̄‖ from Σx); Σu∘u and Σx∘x give the per-dimension contributions
to avg cos and the exact per-dimension mean and standard deviation (Timkey & van Schijndel 2021, rogue dimensions).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from ... import metrics
from .base import Batch, Layers, Layout, LeftOut, Statistic, host, of_layers, stack_attributes

if TYPE_CHECKING:
    from ..accumulators import LayerAccumulator

__all__ = ["FirstOrder"]


class FirstOrder(Statistic):
    """Count of zero vectors, Σ u_i (unit vectors of the non-zero x_i), Σ x_i, Σ ‖x_i‖, Σ u_i∘u_i and Σ x_i∘x_i.

    Keeps ``_n_zero`` (0-d int64), ``_norm_sum`` (0-d) and ``_unit_sum``, ``_vector_sum``, ``_unit_sq_sum``,
    ``_sq_sum`` ((d,) each) in the accumulation dtype on the device: O(d), unscaled sums (divided by the count when
    read). Their batch sums are rows of the batch's shared GEMMs (Σu and Σx against x, Σx∘x and Σu∘u against x∘x).
    Per complement it keeps the left-out rows' counts and sums (:class:`_FirstOrderLeftOut`), which the complement
    subtracts. Summarises ``dim``, ``count``, ``n_zero``, ``mean_cosine`` (G §3.3, zero vectors left out),
    ``drift_norm`` and ``mean_norm`` (raises ValueError, or ZeroDivisionError, for a layer with no vector).
    """

    name = "first-order"
    keeps = {"_n_zero": "1", "_norm_sum": "1", "_unit_sum": "d", "_vector_sum": "d", "_unit_sq_sum": "d",
             "_sq_sum": "d"}
    left_keeps = {"counts": "1", "norm_sum": "1", "x_sums": "d", "sq_sums": "d"}
    summary_rank = 2

    def __init__(self, layout: Layout):
        super().__init__(layout)
        zeros, d = layout.zeros, layout.dim
        self._n_zero = torch.zeros((), dtype=torch.int64, device=layout.device)
        self._unit_sum, self._vector_sum, self._norm_sum = zeros(d), zeros(d), zeros()
        self._unit_sq_sum, self._sq_sum = zeros(d), zeros(d)
        self._complements = {name: _FirstOrderLeftOut(layout) for name in layout.complements}

    def weights(self, batch: Batch):
        return [batch.inverse, batch.ones], [batch.ones, batch.inverse * batch.inverse]

    def update(self, batch: Batch, x_sums: torch.Tensor, sq_sums: torch.Tensor) -> None:
        self._n_zero += batch.m - batch.nonzero.sum()
        self._unit_sum += x_sums[0]  # Σ x_i / ‖x_i‖ over the non-zero vectors
        self._vector_sum += x_sums[1]
        self._norm_sum += batch.norms.sum()
        self._sq_sum += sq_sums[0]
        self._unit_sq_sum += sq_sums[1]

    @classmethod
    def stacked(cls, parts: list["FirstOrder"]) -> list:
        # (L, 2, d) [Σu, Σx], (L, 2, d) [Σx∘x, Σu∘u]: the rows of layer_weights, in their order; (L,) the scalars;
        # then per complement its left-out share's (L, 2) counts, (L, 2, d) sums against x and x∘x, (L,) Σ‖x‖
        own = stack_attributes(parts, [("_unit_sum", "_vector_sum"), ("_sq_sum", "_unit_sq_sum"), ("_n_zero",),
                                       ("_norm_sum",)])
        left = [stack_attributes([p._complements[name] for p in parts],
                                 [("counts",), ("x_sums",), ("sq_sums",), ("norm_sum",)])
                for name in parts[0].layout.complements]
        return [own, left]

    @classmethod
    def layer_weights(cls, layers: Layers):
        ones = torch.ones((1, 1, layers.m), dtype=layers.x64.dtype, device=layers.x64.device)
        inverse = layers.inverse.unsqueeze(1)
        square = inverse * inverse
        w_x, w_sq = [inverse, ones], [ones, square]
        for w in layers.mask_weights.values():  # each complement's left-out rows: Σu, Σx; Σx∘x, Σu∘u
            w_x += [w * inverse, w]
            w_sq += [w, w * square]
        return w_x, w_sq

    @classmethod
    def update_layers(cls, stacked, parts, at: slice, layers: Layers, x_sums: torch.Tensor,
                      sq_sums: torch.Tensor) -> None:
        own, left = stacked
        x_rows, sq_rows, n_zero, norm_sum = (of_layers(t, at) for t in own)
        x_rows += x_sums[:, :2] if left else x_sums  # (no view to make without complements)
        sq_rows += sq_sums[:, :2] if left else sq_sums
        n_zero += (~layers.nonzero).sum(1)
        norm_sum += layers.norms.sum(1) if layers.norm_sums is None else layers.norm_sums
        for j, (mask, share) in enumerate(zip(layers.masks.values(), left)):
            counts, x_left, sq_left, norm_left = (of_layers(t, at) for t in share)
            counts += torch.stack([mask, mask & ~layers.nonzero], 1).sum(2)
            x_left += x_sums[:, 2 + 2 * j : 4 + 2 * j]
            sq_left += sq_sums[:, 2 + 2 * j : 4 + 2 * j]
            norm_left += torch.linalg.vecdot(mask.to(layers.norms.dtype), layers.norms)

    def merge(self, other: "FirstOrder", count: int, other_count: int) -> None:
        on = lambda t: t.to(device=self.layout.device, dtype=self.layout.dtype)  # noqa: E731
        self._unit_sum += on(other._unit_sum)
        self._vector_sum += on(other._vector_sum)
        self._norm_sum += on(other._norm_sum)
        self._n_zero += other._n_zero.to(self.layout.device)
        self._unit_sq_sum += on(other._unit_sq_sum)
        self._sq_sum += on(other._sq_sum)

    def excluded(self, name: str) -> torch.Tensor:
        """Rows complement ``name`` left out so far (0-d int64 on the device). Raises KeyError for another name."""
        return self._complements[name].counts[0]

    def without(self, name: str, into: "FirstOrder") -> None:
        left, part = self._complements[name], into
        part._n_zero = self._n_zero - left.counts[1]
        part._unit_sum, part._vector_sum = self._unit_sum - left.x_sums[0], self._vector_sum - left.x_sums[1]
        part._sq_sum, part._unit_sq_sum = self._sq_sum - left.sq_sums[0], self._unit_sq_sum - left.sq_sums[1]
        part._norm_sum = self._norm_sum - left.norm_sum

    def state(self, count: int) -> dict[str, np.ndarray]:
        return {"unit_sum": host(self._unit_sum).copy(), "vector_sum": host(self._vector_sum).copy(),
                "norm_sum": np.array([float(self._norm_sum)], np.float64),
                "unit_sq_sum": host(self._unit_sq_sum).copy(), "sq_sum": host(self._sq_sum).copy()}

    def load(self, state: dict[str, np.ndarray]) -> None:
        t = self.layout.loader(state)
        self._n_zero = torch.tensor(int(state["count"][1]), dtype=torch.int64, device=self.layout.device)
        for name in ("unit_sum", "vector_sum", "unit_sq_sum", "sq_sum"):
            setattr(self, f"_{name}", t(name))
        self._norm_sum = t("norm_sum")[0]

    def summarise(self, layer: "LayerAccumulator", seed: int, n_pairs: int) -> dict[str, Any]:
        n = layer.count
        return {"dim": self.layout.dim, "count": n, "n_zero": layer.n_zero,
                "mean_cosine": metrics.mean_cosine_from_unit_sum(layer.unit_sum, layer.n_nonzero),
                "drift_norm": metrics._drift_norm_from_sum(layer.vector_sum, n),
                "mean_norm": layer.norm_sum / n}


class _FirstOrderLeftOut(LeftOut):
    """The first-order sums of the rows one complement leaves out, on the device: ``counts`` (2,) int64 (rows left
    out, of them of norm 0), ``x_sums`` (2, d) (Σu, Σx), ``sq_sums`` (2, d) (Σx∘x, Σu∘u), ``norm_sum`` (0-d)."""

    keeps = FirstOrder.left_keeps

    def __init__(self, layout: Layout):
        self.counts = torch.zeros(2, dtype=torch.int64, device=layout.device)
        self.x_sums, self.sq_sums = layout.zeros(2, layout.dim), layout.zeros(2, layout.dim)
        self.norm_sum = layout.zeros()

    def weights(self, batch: Batch, name: str):
        w = batch.mask_weights[name]
        return [w * batch.inverse, w], [w, w * batch.inverse * batch.inverse]

    def update(self, batch: Batch, index: int, name: str, x_sums: torch.Tensor, sq_sums: torch.Tensor) -> None:
        mask = batch.masks[name]
        self.counts += torch.stack([mask, mask & (batch.norms == 0)]).sum(1)
        self.x_sums += x_sums
        self.sq_sums += sq_sums
        self.norm_sum += mask.to(batch.x64.dtype) @ batch.norms
