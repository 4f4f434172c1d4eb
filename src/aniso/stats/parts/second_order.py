"""Second-order statistics of one layer's vectors: Σxxᵀ, kept from the products of each SVD batch, and the SVD
anisotropy of each batch (Razzhigaev et al. 2024 §2.3), with the float32 batch products they are computed from."""

from __future__ import annotations

import functools
import math
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from ... import metrics
from .base import Batch, Layers, Layout, LeftOut, Statistic, host, of_layers, stack_attributes

if TYPE_CHECKING:
    from ..accumulators import LayerAccumulator

__all__ = ["SecondOrder", "BatchProducts", "LayerProducts", "batch_svd_anisotropy", "centred_batch_products",
           "centred_layer_products"]


class SecondOrder(Statistic):
    """Σ x_i x_iᵀ and the batch-wise SVD anisotropy (R §2.3), through a buffer of ``svd_batch_size`` vectors.

    Keeps ``_gram_done`` (d, d), Σxxᵀ over the complete SVD batches, in the accumulation dtype; ``_svd_buffer``
    (svd_batch_size, d) float32 (float64 where the stream is float64), the partial batch, ``_svd_fill`` of its rows
    filled; ``_batch_svd``, one 0-d tensor per complete batch (λ_max / trace of its centred scatter, in [0, 1] or
    NaN); ``_partial_lost``: rebuilt from a state without its partial batch (cannot be merged). Each batch, once
    complete, is one centred product (:func:`centred_batch_products`) that gives its share of Σxxᵀ and its
    anisotropy, and those of each complement; the partial batch's share is added when Σxxᵀ is read
    (:meth:`gram_tensor`). Per complement it keeps the marks of the buffer's rows it leaves out, the left-out rows'
    Σxxᵀ over the complete batches and each batch's anisotropy without them (:class:`_SecondOrderLeftOut`). Without
    ``second_order`` nothing is kept (Σxxᵀ None, an empty buffer). Summarises ``svd_anisotropy`` and ``isoscore``
    of the whole stream (from the centred Σxxᵀ; NaN without second order; raises ValueError below 2 vectors) and
    the mean, std and number of the batch values (NaN, 0 without a complete batch).
    """

    name = "second-order"
    keeps = {"_gram_done": "d²", "_batch_svd": "svd batches", "_svd_buffer": "svd_batch_size·d"}
    left_keeps = {"marked": "svd_batch_size", "gram_done": "d²", "batch_svd": "svd batches"}
    summary_rank = 1

    def __init__(self, layout: Layout):
        super().__init__(layout)
        second = layout.second_order
        self._partial_lost = False
        self._gram_done = layout.zeros(layout.dim, layout.dim) if second else None
        self._batch_svd: list[torch.Tensor] = []
        self._svd_buffer = torch.empty((layout.svd_batch_size if second else 0, layout.dim), dtype=torch.float32,
                                       device=layout.device)
        self._svd_fill = 0
        self._cache: dict[str, Any] = {}
        self._complements = {name: _SecondOrderLeftOut(layout) for name in layout.complements}

    @property
    def fill(self) -> int:
        """Rows of the partial SVD batch."""
        return self._svd_fill

    @property
    def partial_lost(self) -> bool:
        """Rebuilt from a finished state whose partial SVD batch is inside Σxxᵀ (cannot be merged)."""
        return self._partial_lost

    def needs_check(self, m: int) -> bool:
        return self.layout.second_order and self._svd_fill + m >= self.layout.svd_batch_size

    def update(self, batch: Batch, x_sums: torch.Tensor, sq_sums: torch.Tensor) -> None:
        self.add_rows(batch.x, batch.masks, batch.seen)

    @classmethod
    def stacked(cls, parts: list["SecondOrder"]) -> list | None:
        if any(p._svd_fill or p._batch_svd for p in parts):
            return None
        if not parts[0].layout.second_order:
            return []
        # (L, svd_batch_size, d): the layers' SVD buffers; (L, d, d): their Σxxᵀ over the complete batches; per
        # complement, (L, svd_batch_size) the buffers' rows it marks
        stacked = stack_attributes(parts, [("_svd_buffer",), ("_gram_done",)])
        marked = [stack_attributes([p._complements[name] for p in parts], [("marked",)])[0]
                  for name in parts[0].layout.complements]
        return stacked + [marked]

    @classmethod
    def layers_close_counts(cls, stacked, parts, at: slice, layers: Layers) -> torch.Tensor | None:
        """:meth:`close_counts` of every layer of ``at`` at once: (L, batches completed, 2^complements) int64 on the
        device, or None where nothing is needed (no batch completes, or no complement is kept)."""
        first = parts[at.start]
        b, fill, m = first.layout.svd_batch_size, first._svd_fill, layers.m
        closes = (fill + m) // b if first.layout.second_order else 0
        if not closes or not layers.masks:
            return None
        marks = [torch.cat([of_layers(kept, at)[:, :fill], mask], 1)
                 for kept, mask in zip(stacked[2], layers.masks.values())]
        return code_counts(mark_codes(marks)[:, : closes * b].reshape(layers.n_layers, closes, b), len(marks))

    @classmethod
    def buffers_for(cls, stacked, parts, layers: Layers) -> None:
        """Before the first rows: every layer's SVD buffer in float64 where the rows are (keeping float64 inputs
        exact, as :meth:`add_rows` does), the layers' buffers still views of one tensor."""
        if stacked and layers.seen == 0 and layers.x.dtype == torch.float64 and stacked[0].dtype != torch.float64:
            stacked[0] = stacked[0].double()
            for i, p in enumerate(parts):
                p._svd_buffer = stacked[0][i]

    @classmethod
    def update_layers(cls, stacked, parts, at: slice, layers: Layers, x_sums: torch.Tensor,
                      sq_sums: torch.Tensor) -> None:
        """As :meth:`add_rows` for the parts ``parts[at]`` at once: the rows into every layer's SVD buffer with one
        copy (the complements' marks with one each), and each SVD batch they complete closed for every layer together
        (:func:`centred_layer_products`, :meth:`LayerProducts.anisotropies`), or, where complements are kept, layer
        by layer (each layer's marked rows apart; ``layers.counts``: each layer's :meth:`close_counts`, read). Reads
        ``layers.x``, ``layers.masks``, ``layers.counts`` and ``layers.seen``."""
        if not stacked:
            return
        cls.buffers_for(stacked, parts, layers)
        mine = parts[at]
        first, b = mine[0], mine[0].layout.svd_batch_size
        buffer, gram_done = of_layers(stacked[0], at), of_layers(stacked[1], at)
        marked = [of_layers(t, at) for t in stacked[2]]
        x, start, m, closed = layers.x, 0, layers.x.shape[1], 0
        while start < m:
            fill = first._svd_fill
            take = min(b - fill, m - start)
            buffer[:, fill : fill + take] = x[:, start : start + take]
            for kept, mask in zip(marked, layers.masks.values()):
                kept[:, fill : fill + take] = mask[:, start : start + take]
            start += take
            for p in mine:
                p._cache.clear()
                p._svd_fill += take
            if fill + take == b:
                if b < first.layout.dim:  # a wide batch: layer by layer
                    for i, p in enumerate(mine):
                        p._close_svd_batch(None if layers.counts is None else layers.counts[i][closed])
                elif marked:  # each layer's marked rows apart, the layers' top directions found together
                    cls._close_marked_batches(mine, None if layers.counts is None
                                              else [counts[closed] for counts in layers.counts])
                else:
                    moments = centred_layer_products(buffer, first.layout.dtype, first.layout.wait_free)
                    gram_done += moments.gram
                    ratios = moments.anisotropies(lockstep=first.layout.wait_free)
                    for i, p in enumerate(mine):
                        p._batch_svd.append(ratios[i])
                for p in mine:
                    p._svd_fill = 0
                closed += 1

    def add_rows(self, x: torch.Tensor, masks: dict, seen: int, counts: list[list[int]] | None = None) -> None:
        """Add the rows ``x`` (m, d) with their complements' marks ``masks`` ({name: (m,) bool}); ``seen``: rows
        the layer had seen before them. ``counts``: for each SVD batch these rows complete, in order, its rows by
        the set of complements that mark them (:meth:`close_counts`, read from the device), or None: each completed
        batch reads its own (one wait per batch completed, where complements are kept)."""
        self._cache.clear()
        if not self.layout.second_order:
            return
        if seen == 0 and x.dtype == torch.float64:
            self._svd_buffer = self._svd_buffer.double()  # keep float64 inputs exact
        self._update_svd_batches(x, masks, counts)

    def close_counts(self, masks: dict, m: int) -> torch.Tensor | None:
        """What the SVD batches that adding m rows marked ``masks`` ({name: (m,) bool}, the complements' marks, in
        their order) completes need from the host, formed on the device without reading it: for each such batch, its
        rows by the set of complements that mark them (:func:`mark_codes`), (batches completed, 2^complements)
        int64. None where nothing is needed: no batch completes, or no complement is kept."""
        b, fill = self.layout.svd_batch_size, self._svd_fill
        closes = (fill + m) // b if self.layout.second_order else 0
        if not closes or not self._complements:
            return None
        kept = [c.marked[:fill] for c in self._complements.values()]
        marks = [torch.cat([old, masks[name].to(device=old.device, dtype=torch.bool).reshape(-1)])
                 for old, name in zip(kept, self._complements)]
        return code_counts(mark_codes(marks)[: closes * b].reshape(closes, b), len(marks))

    def _update_svd_batches(self, x: torch.Tensor, masks: dict | None = None,
                            counts: list[list[int]] | None = None) -> None:
        start, b = 0, self.layout.svd_batch_size
        closed = 0
        while start < x.shape[0]:
            take = min(b - self._svd_fill, x.shape[0] - start)
            self._svd_buffer[self._svd_fill : self._svd_fill + take] = x[start : start + take]
            for name, mask in (masks or {}).items():
                self._complements[name].marked[self._svd_fill : self._svd_fill + take] = mask[start : start + take]
            self._svd_fill += take
            start += take
            if self._svd_fill == b:
                self._close_svd_batch(None if counts is None else counts[closed])
                closed += 1
                self._svd_fill = 0

    def _close_svd_batch(self, counts: list[int] | None = None) -> None:
        """The SVD buffer holds a complete batch: its share of Σxxᵀ and its SVD anisotropy, and each complement's
        (the batch without its marked rows), from one centred product (:func:`centred_batch_products`; ``counts``:
        the batch's rows by the set of complements marking them, read already, or None: read here); the buffer is
        left centred (it is refilled next)."""
        moments = self._batch_moments(counts)
        self._record_batch(moments, moments.anisotropies(lockstep=self.layout.wait_free))

    def _batch_moments(self, counts: list[int] | None) -> "BatchProducts":
        """The complete batch's centred products (:func:`centred_batch_products`), its share of Σxxᵀ added."""
        moments = centred_batch_products(self._svd_buffer, [c.marked for c in self._complements.values()],
                                         self.layout.dtype, counts, self.layout.wait_free)
        self._gram_done += moments.gram
        moments.gram = None  # (added: not kept while other layers' batches are formed)
        return moments

    def _record_batch(self, moments: "BatchProducts", ratios: list[torch.Tensor]) -> None:
        """The batch's SVD anisotropy and each complement's share (:meth:`_SecondOrderLeftOut.close_batch`)."""
        self._batch_svd.append(ratios[0])
        for comp, marked, ratio in zip(self._complements.values(), moments.marked, ratios[1:]):
            comp.close_batch(moments, marked, ratio)

    @staticmethod
    def _close_marked_batches(parts: list["SecondOrder"], counts: list[list[int]] | None) -> None:
        """:meth:`_close_svd_batch` of a complete batch in each of the layers ``parts`` (complements kept, batches at
        least as long as they are wide), with the top directions of every layer's sets (the batch, then the batch
        without each complement's rows) found in one lockstep Lanczos iteration
        (:func:`aniso.metrics.largest_eigenpairs`) rather than one per layer: per layer the same products, directions
        and values. The layers are taken in runs whose d × d float64 matrices held at once (products, the marked
        rows' scatters, the sets' scatters) stay within :data:`MARKED_CLOSE_BYTES` (at least one layer per run).
        ``counts``: each layer's :meth:`close_counts` of this batch, read, or None (each layer reads its own)."""
        layout = parts[0].layout
        size = torch.empty((), dtype=layout.dtype).element_size()
        per_layer = (2 + 2 * len(layout.complements)) * layout.dim**2 * size
        run = max(1, MARKED_CLOSE_BYTES // per_layer)
        for start in range(0, len(parts), run):
            mine = parts[start : start + run]
            moments = [p._batch_moments(None if counts is None else counts[start + i]) for i, p in enumerate(mine)]
            sets = [m.own_sets() for m in moments]
            scatters = [m.own_scatters(own) for m, own in zip(moments, sets) if own]
            found = (metrics._largest_eigenpairs(torch.cat(scatters) if len(scatters) > 1 else scatters[0],
                                                 lockstep=True)[1] if scatters else None)
            at = 0
            for p, m, own in zip(mine, moments, sets):
                vectors = found[at : at + len(own)] if own else None
                at += len(own)
                p._record_batch(m, m.anisotropies(found=vectors))

    def merge(self, other: "SecondOrder", count: int, other_count: int) -> None:
        self._cache.clear()
        if not self.layout.second_order:
            return
        device = self.layout.device
        self._gram_done += other._gram_done.to(device=device, dtype=self.layout.dtype)
        self._batch_svd.extend(t.to(device) for t in other._batch_svd)
        self._update_svd_batches(other._svd_buffer[: other._svd_fill].to(device))

    def gram_tensor(self) -> torch.Tensor | None:
        """Σ x_i x_iᵀ over every vector seen, (d, d) in the accumulation dtype, on the device (shared: do not modify
        it in place); None without second order."""
        if not self.layout.second_order:
            return None
        if self._svd_fill == 0:
            return self._gram_done
        # The partial batch's share as a complete batch's (centred float32 products, the complements' rows apart:
        # :func:`centred_batch_products`), formed once per state: the layer's summary and each complement read it.
        if "gram_tensor" not in self._cache:
            fill = self._svd_fill
            marks = [c.marked[:fill] for c in self._complements.values()]
            self._cache["gram_tensor"] = self._gram_done + centred_batch_products(
                self._svd_buffer[:fill].clone(), marks, self.layout.dtype, wait_free=self.layout.wait_free).gram
        return self._cache["gram_tensor"]

    def _left_out_gram(self, name: str) -> torch.Tensor:
        """Σxxᵀ of the rows complement ``name`` left out, the partial batch's included."""
        left, fill = self._complements[name], self._svd_fill
        if fill == 0:
            return left.gram_done
        out = self._svd_buffer[:fill][left.marked[:fill]].to(self.layout.dtype)
        return torch.addmm(left.gram_done, out.T, out)

    def without(self, name: str, into: "SecondOrder") -> None:
        left, part = self._complements[name], into
        if self.layout.second_order:
            part._gram_done = self.gram_tensor() - self._left_out_gram(name)
            part._batch_svd = list(left.batch_svd)
        part._partial_lost = self._svd_fill > 0

    def batch_values(self) -> list[float]:
        """SVD anisotropy of each complete batch, in stream order (float64, on the host)."""
        return host(torch.stack(self._batch_svd)).astype(np.float64).tolist() if self._batch_svd else []

    def state(self, count: int) -> dict[str, np.ndarray]:
        gram = {"gram": host(self.gram_tensor()).astype(np.float64)} if self.layout.second_order else {}
        return {"batch_svd": np.asarray(self.batch_values(), np.float64)} | gram

    def transfer_state(self) -> dict[str, np.ndarray]:
        if not self.layout.second_order:
            return {}
        return {"svd_buffer": host(self._svd_buffer[: self._svd_fill]).copy(), "gram_done": host(self._gram_done)}

    def load(self, state: dict[str, np.ndarray]) -> None:
        t = self.layout.loader(state)
        self._svd_fill = int(state["count"][2])
        self._batch_svd = [v for v in t("batch_svd")]
        if not self.layout.second_order:
            return
        partial = state.get("svd_buffer")
        if partial is not None:
            self._svd_buffer = self._svd_buffer.to(torch.float64 if partial.dtype == np.float64 else torch.float32)
            self._svd_buffer[: partial.shape[0]] = torch.as_tensor(partial, device=self.layout.device)
            self._gram_done = t("gram_done")
        else:  # a finished accumulator (the cache): its partial batch is inside Σxxᵀ and not kept apart
            self._partial_lost = self._svd_fill > 0
            self._svd_fill = 0
            self._gram_done = t("gram")

    def summarise(self, layer: "LayerAccumulator", seed: int, n_pairs: int) -> dict[str, Any]:
        bs = np.asarray(layer.batch_svd, dtype=np.float64)
        svd, iso = self._spectrum_metrics(layer) if self.layout.second_order else (math.nan, math.nan)
        return {"svd_anisotropy": svd, "isoscore": iso,
                "svd_anisotropy_batch_mean": float(bs.mean()) if bs.size else math.nan,
                "svd_anisotropy_batch_std": float(bs.std()) if bs.size else math.nan,
                "n_svd_batches": int(bs.size)}

    def _spectrum_metrics(self, layer: "LayerAccumulator") -> tuple[float, float]:
        """(SVD anisotropy, IsoScore) of every vector seen, from the centred scatter
        C = Σxxᵀ − n x̄x̄ᵀ (R §2.3; Rudman et al. 2022): λ_max / trace(C) (λ_max by
        :func:`aniso.metrics.largest_eigenpair`, value only: C is symmetrised here, so the symmetry check of
        :func:`aniso.metrics.largest_eigenvalue` is not repeated), and IsoScore from tr C and ‖C‖²_F
        (:func:`aniso.metrics.isoscore_from_trace_and_frobenius`): no dense eigendecomposition of the d x d matrix."""
        n = layer.count
        if n < 2:
            raise ValueError(f"SVD anisotropy needs at least 2 vectors, got {n}")
        if "spectrum" in self._cache:  # formed with other layers' (:meth:`find_spectra`)
            return self._cache["spectrum"]
        c = self._centred_scatter(layer)
        trace = float(torch.diagonal(c).sum())
        if trace <= 0:
            return math.nan, math.nan
        svd = float(min(1.0, max(0.0, float(metrics._largest_eigenpair(c, vector=False)[0]) / trace)))
        frobenius_sq = float(torch.sum(c * c))
        return svd, self._isoscore(trace, frobenius_sq)

    def _centred_scatter(self, layer: "LayerAccumulator") -> torch.Tensor:
        """C = Σxxᵀ − n x̄x̄ᵀ of every vector seen, symmetrised, (d, d) in the accumulation dtype."""
        s = layer.vector_sum_tensor()
        c = self.gram_tensor() - torch.outer(s, s) / layer.count
        return (c + c.T) / 2

    def _isoscore(self, trace: float, frobenius_sq: float) -> float:
        dim = self.layout.dim
        return metrics._isoscore_from_trace_and_frobenius(trace, frobenius_sq, dim) if dim >= 2 else math.nan

    @staticmethod
    def find_spectra(layers: list["LayerAccumulator"]) -> None:
        """The whole-set SVD anisotropy and IsoScore (:meth:`_spectrum_metrics`) of several accumulators at once,
        on the paths a GPU takes (``wait_free``): the centred scatters' λ_max from one lockstep Lanczos iteration
        (:func:`aniso.metrics.largest_eigenpairs`: each matrix's value to 1e-12 of its own run) per run of
        scatters within :data:`SPECTRA_BYTES`, their traces and Frobenius norms read in one copy; kept until the
        accumulator's next update, and read by its summary. Layers without second order, of fewer than 2 vectors or
        on the CPU's paths are left to their own summary (which computes, or raises, as before)."""
        mine = [acc for acc in layers if acc.layout.wait_free and acc.layout.second_order and acc.count >= 2]
        mine = [acc for acc in mine if acc.layout.dim == mine[0].layout.dim]  # (another width: its own summary)
        if len(mine) < 2:
            return
        layout = mine[0].layout
        size = torch.empty((), dtype=layout.dtype).element_size()
        run = max(1, SPECTRA_BYTES // (layout.dim**2 * size))
        for start in range(0, len(mine), run):
            group = mine[start : start + run]
            c = torch.stack([acc._second._centred_scatter(acc) for acc in group])
            values = metrics._largest_eigenpairs(c, vector=False, lockstep=True)[0]
            read = torch.stack([values, torch.diagonal(c, dim1=1, dim2=2).sum(1), (c * c).sum((1, 2))], 1).tolist()
            for acc, (top, trace, frobenius_sq) in zip(group, read):
                part = acc._second
                svd = min(1.0, max(0.0, top / trace)) if trace > 0 else math.nan
                part._cache["spectrum"] = (svd, part._isoscore(trace, frobenius_sq) if trace > 0 else math.nan)


class _SecondOrderLeftOut(LeftOut):
    """For one complement, on the device: ``marked`` (svd_batch_size,) bool, the buffer's rows it leaves out;
    ``gram_done`` (d, d), Σxxᵀ of the rows it left out of the complete SVD batches; ``batch_svd``, each complete
    batch's anisotropy without those rows (0-d tensors). Nothing without second order."""

    keeps = SecondOrder.left_keeps

    def __init__(self, layout: Layout):
        second = layout.second_order
        self.marked = torch.zeros(layout.svd_batch_size if second else 0, dtype=torch.bool, device=layout.device)
        self.gram_done = layout.zeros(layout.dim, layout.dim) if second else None
        self.batch_svd: list[torch.Tensor] = []

    def close_batch(self, moments: "BatchProducts", marked: "_Marked", anisotropy: torch.Tensor) -> None:
        """The SVD batch is complete: its ``anisotropy`` without the marked rows (:meth:`BatchProducts.anisotropies`),
        and the marked rows' share of Σxxᵀ, from the batch's centred products and the marked rows alone."""
        if marked.n:
            self.gram_done += moments.uncentred(marked.scatter, marked.y_sum, marked.n)
        self.batch_svd.append(anisotropy)


def batch_svd_anisotropy(batch: torch.Tensor, dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    """SVD anisotropy of one batch and its Gram matrix, on the batch's device.

    ``batch`` (b, d) -> (σ₁² / Σσᵢ² of the centred rows as a 0-d tensor, Σxxᵀ (d, d) in ``dtype``): λ_max / trace of
    the centred scatter (Razzhigaev et al. 2024 §2.3; equal to :func:`aniso.metrics.svd_anisotropy`), as
    :meth:`BatchProducts.anisotropies` gives it. NaN when every row is identical (no direction of variance, as the
    SVD gives).
    """
    moments = centred_batch_products(batch.clone(), [], dtype)
    return moments.anisotropies()[0], moments.gram


@dataclass
class _Marked:
    """The ``n`` rows of an SVD batch that one complement leaves out (``mask`` (b,) bool), with y = x − c (from
    exact copies of the rows, taken before the batch is centred, in the accumulation dtype): Σy (d,), Σyyᵀ (d, d)."""

    mask: torch.Tensor
    n: int
    y_sum: torch.Tensor
    scatter: torch.Tensor


@dataclass
class BatchProducts:
    """Second-order moments of one SVD batch of ``n`` rows about a centre ``c`` (d,): ``y_sum`` = Σ(x − c) (d,),
    ``products`` = Σ(x − c)(x − c)ᵀ (d, d), ``gram`` = Σxxᵀ (d, d), all in the accumulation dtype; ``marked``: one
    :class:`_Marked` per complement; ``work``: the dtype the products were formed in; ``rows``: the centred rows
    (b, d), in that dtype (the batch's buffer, centred in place); ``marked_index`` (r,) and ``marked_rows`` (r, d):
    the rows some complement marks and their centred values in the accumulation dtype (not rounded to ``work``:
    those rows can lie far from the centre), or None."""

    n: int
    centre: torch.Tensor
    y_sum: torch.Tensor
    products: torch.Tensor
    gram: torch.Tensor
    marked: list
    work: torch.dtype
    rows: torch.Tensor
    marked_index: torch.Tensor | None = None
    marked_rows: torch.Tensor | None = None

    def uncentred(self, products: torch.Tensor, y_sum: torch.Tensor, n: int) -> torch.Tensor:
        """Σxxᵀ of n rows from their products about the centre c: Σ(x − c)(x − c)ᵀ + c·Σ(x − c)ᵀ + Σ(x − c)·cᵀ +
        n·c cᵀ (``y_sum`` = Σ(x − c)), in two rank-one updates."""
        half = y_sum + (n / 2) * self.centre
        return torch.addr(torch.addr(products, self.centre, half), half, self.centre)

    def scatter(self, without: _Marked | None = None) -> torch.Tensor:
        """The centred scatter Σ(x − x̄)(x − x̄)ᵀ of the batch, or of the batch without the rows ``without``:
        Σ(x − c)(x − c)ᵀ − n (x̄ − c)(x̄ − c)ᵀ over the rows kept (a product about any centre, corrected to the
        mean)."""
        products, y_sum, n = self.products, self.y_sum, self.n
        if without is not None:
            products, y_sum, n = products - without.scatter, y_sum - without.y_sum, n - without.n
        c = torch.addr(products, y_sum, y_sum, alpha=-1.0 / max(n, 1))
        return (c + c.T) / 2

    def _sets(self) -> list:
        """The sets of rows valued: the batch (None), then each complement's :class:`_Marked` rows left out, or None
        where it leaves out no row (the batch's own set)."""
        return [None, *(m if m.n else None for m in self.marked)]

    def own_sets(self) -> list[int]:
        """The indices (into :meth:`_sets`) of the sets whose top direction comes from their own d × d scatter: the
        batch (unless wider than long) and each complement that leaves out rows."""
        wide = self.n < self.rows.shape[1]
        return [i for i, without in enumerate(self._sets()) if (i == 0 and not wide) or (i > 0 and without is not None)]

    def own_scatters(self, own: list[int]) -> torch.Tensor:
        """The centred scatters of the sets ``own`` (:meth:`own_sets`), (len(own), d, d), NaN replaced by 0."""
        sets = self._sets()
        return torch.stack([torch.nan_to_num(self.scatter(sets[i])) for i in own])

    def anisotropies(self, lockstep: bool | None = None, found: torch.Tensor | None = None) -> list[torch.Tensor]:
        """λ_max / trace of the centred scatter of the batch, then of the batch without each complement's rows
        (:attr:`marked`), as 0-d tensors: the SVD anisotropy of each set of rows, to float64 rounding.
        ``found``: the top directions of the sets :meth:`own_sets` names, (len(own), d), found by the caller (one
        Lanczos iteration for several layers' sets); None: found here.

        The float32 products only *find* the top direction v of each set (:func:`aniso.metrics.largest_eigenpairs`
        of the sets' scatters: with ``lockstep``, the default off the CPU, one Lanczos iteration for all of them; or
        :func:`aniso.metrics.largest_eigenpair` of the b × b Gram matrix of the centred rows where the batch is wider
        than it is long).
        The value is then computed in float64 from the rows themselves, in one pass over the batch for every set:
        the Rayleigh quotient vᵀCv = Σ(y·v)² − (Σy·v)²/n and the trace Σ‖y‖² − ‖Σy‖²/n over the set's rows y (the
        centred rows as the buffer holds them). A Rayleigh quotient is at most λ_max and falls short of it by at
        most (λ_max − λ_min)·sin²θ, θ the angle between v and the top eigenvector, itself at most ‖E‖/(λ₁ − λ₂)
        for a perturbation E of the scatter (Davis–Kahan): the float32 products' error enters squared (about 10⁻¹⁴
        with the bound of :func:`centred_batch_products`, unless the two top eigenvalues are within about 10⁻⁶ of
        each other, where λ_max itself barely moves when v does). What remains is the rows' own float32 rounding
        (x − c rounded once, relative 2⁻²⁴ per entry and unbiased): the values agree with the float64 SVD of the
        rows to about 10⁻⁹ (``tests/stats/test_float32_products.py``).

        The rows a complement marks (a few per batch, possibly far from the centre: massive activations, or every
        row of a batch whose rows are all marked) enter in their exact centred values (:attr:`marked_rows`), not as
        the buffer rounded them.

        NaN for fewer than two rows, and where the trace is not above what rounding the rows could leave,
        b·u·Σ‖y‖² (u the unit roundoff of the rows' dtype; of the accumulation dtype for the marked rows): no
        direction of variance (identical rows are centred exactly to 0).
        """
        sets = self._sets()
        vectors: list[torch.Tensor | None] = [None] * len(sets)
        if self.n < self.rows.shape[1]:  # wide batch: the b × b Gram matrix is the smaller one
            r = self.rows.to(self.products.dtype)
            r = r - r.mean(0)
            small = r @ r.T
            u = metrics._largest_eigenpair((small + small.T) / 2)[1]
            v = r.T @ u
            vectors[0] = v / torch.linalg.vector_norm(v).clamp_min(torch.finfo(v.dtype).tiny)
        # The other sets' top directions from their d × d scatters, one Lanczos iteration for all of them in lockstep
        # (a complement that leaves out no row is the batch's own set), or as found by the caller.
        own = self.own_sets()
        if own:
            if found is None:
                found = metrics._largest_eigenpairs(self.own_scatters(own), lockstep=lockstep)[1]
            for i, u in zip(own, found):
                vectors[i] = u
        vectors = [vectors[0] if u is None else u for u in vectors]
        v = torch.stack(vectors, 1)  # (d, sets)
        dtype = self.products.dtype
        proj = torch.empty((self.n, v.shape[1]), dtype=dtype, device=v.device)
        norms = torch.empty(self.n, dtype=dtype, device=v.device)
        total = torch.zeros(v.shape[0], dtype=dtype, device=v.device)
        for s in range(0, self.n, _ROWS_PER_PASS):  # float64 blocks of the float32 rows: no float64 copy of the batch
            y = self.rows[s : s + _ROWS_PER_PASS].to(dtype)
            proj[s : s + _ROWS_PER_PASS] = y @ v
            norms[s : s + _ROWS_PER_PASS] = torch.linalg.vecdot(y, y)
            total += y.sum(0)
        marked_sum = None
        if self.marked_index is not None:  # the marked rows from their exact centred values
            y, at = self.marked_rows.to(dtype), self.marked_index
            total += y.sum(0) - self.rows[at].to(dtype).sum(0)
            proj[at], norms[at] = y @ v, torch.linalg.vecdot(y, y)
            # (a set's left-out rows are marked rows: the first `n` of them in `at` that its mask marks)
            marked_sum = lambda left: y[_first_rows(left.mask[at], left.n)].sum(0)  # noqa: E731
        # What rounding the rows could leave of the trace: b·u·‖y‖² per row, u the unit roundoff of the dtype it was
        # rounded to (the rows' own; the accumulation dtype's for the marked rows, which are kept exact).
        eps = torch.finfo(self.work).eps / 2
        noise = norms * eps
        if self.marked_index is not None:
            noise[self.marked_index] *= torch.finfo(dtype).eps / 2 / eps
        out = []
        for i, without in enumerate(sets):
            if i > 0 and without is None:  # leaves out no row: the batch's own value
                out.append(out[0])
                continue
            # the rows kept, in order, as indices (the marked rows' count is known on the host: no wait)
            n = self.n if without is None else self.n - without.n
            if n < 2:
                out.append(torch.tensor(math.nan, dtype=dtype, device=v.device))
                continue
            keep = None if without is None else _first_rows(~without.mask, n)
            w = proj[:, i] if keep is None else proj[keep, i]
            sq = norms.sum() if keep is None else norms[keep].sum()
            floor = self.n * (noise.sum() if keep is None else noise[keep].sum())
            y_sum = total if keep is None else total - marked_sum(without)
            quotient = (w * w).sum() - w.sum() ** 2 / n
            trace = sq - (y_sum @ y_sum) / n
            out.append(torch.where(trace > floor, (quotient / trace).clamp(0.0, 1.0), torch.nan))
        return out


#: The most bytes of the d × d float64 matrices of the layers' complete SVD batches with marked rows closed together
#: (:meth:`SecondOrder._close_marked_batches`: per layer its products, its marked rows' and its sets' scatters): 2 GiB,
#: 2 layers of a 7B model's width (d = 4,096, two complements), every layer of SmolLM2's (d = 576).
MARKED_CLOSE_BYTES = 2 << 30

#: The most bytes of the layers' d × d centred scatters whose λ_max :meth:`SecondOrder.find_spectra` finds in one
#: iteration: 1 GiB, 8 layers at d = 4,096 in float64.
SPECTRA_BYTES = 1 << 30

#: Rows of an SVD batch per float32 product of :func:`centred_batch_products` (the blocks' products are summed in
#: float64: the rounding of a product's sums grows with its length).
_PRODUCT_ROWS = 1024

#: Rows of an SVD batch per float64 block of :meth:`BatchProducts.anisotropies` (bounds its transient memory).
_ROWS_PER_PASS = 1024

#: The most bytes of one float64 block of rows of every layer's SVD batch that :class:`LayerProducts` forms at once
#: (at least :data:`_ROWS_PER_PASS` rows).
_PASS_BYTES = 64 << 20


def _rows_per_pass(layers: int, d: int, dtype: torch.dtype) -> int:
    """Rows per block of :func:`centred_layer_products`' and :meth:`LayerProducts.anisotropies`' passes over the
    layers' batches: :data:`_PASS_BYTES` of ``dtype`` across ``layers`` × d, at least :data:`_ROWS_PER_PASS`."""
    return max(_ROWS_PER_PASS, _PASS_BYTES // (layers * d * torch.empty((), dtype=dtype).element_size()))


def mark_codes(marks: list[torch.Tensor]) -> torch.Tensor:
    """Each row's set of marking masks as an integer (bit j: ``marks[j]`` marks it), for marks (..., b) bool."""
    return functools.reduce(torch.add, (m.to(torch.int64) << j for j, m in enumerate(marks)))


def code_counts(codes: torch.Tensor, k: int) -> torch.Tensor:
    """Rows of each code 0 .. 2^k − 1 (:func:`mark_codes`) along the last dimension of ``codes``, on the device
    (one comparison per code: no ``bincount``, which reads its largest value back)."""
    return (codes.unsqueeze(-1) == torch.arange(1 << k, device=codes.device)).sum(-2)


def _first_rows(mask: torch.Tensor, n: int) -> torch.Tensor:
    """The indices of the rows ``mask`` (r,) bool marks, in increasing order, given their number ``n`` read before:
    what ``mask.nonzero()`` gives, without waiting for the device (a stable sort puts the marked rows first)."""
    return torch.argsort((~mask).to(torch.uint8), stable=True)[:n]


def centred_batch_products(batch: torch.Tensor, marks: list[torch.Tensor], dtype: torch.dtype,
                           counts: list[int] | None = None, wait_free: bool = False) -> BatchProducts:
    """One SVD batch's second-order products, in float32 where the batch is float32, merged into ``dtype``.

    ``batch`` (b, d), float32 or float64, is centred **in place** at c = the mean of the rows that no mask of
    ``marks`` (each (b,) bool: the rows a complement leaves out) marks (all rows' mean when every row is marked):
    c is rounded to the batch's dtype, so x − c is exact up to one rounding of the result. Those rows' products
    Σ(x − c)(x − c)ᵀ come from products in the batch's dtype (:func:`_add_upper_gram`) over blocks of 1,024 rows
    (float32: TF32 and reduced-precision products off on GPUs), summed in ``dtype`` (float64 on CPU and CUDA); the
    marked rows' (a few per batch: first tokens, massive-activation rows) are computed apart in ``dtype`` from exact
    copies of their rows (:func:`_marked_products`), and added. Then, in ``dtype``:
    Σxxᵀ = Σ(x − c)(x − c)ᵀ + c·Σ(x − c)ᵀ + Σ(x − c)·cᵀ + b·c cᵀ (exact algebra), and the centred scatter of the
    batch, or of the batch without one complement's rows, is the product about c corrected to the mean
    (:meth:`BatchProducts.scatter`).

    **Error bound.** With u = 2⁻²⁴ and Y the centred unmarked rows, the float32 product obeys, entry by entry,
    |Δ(YᵀY)| ≤ (γ_b + 2u + u²)·|Y|ᵀ|Y|, γ_b = b·u / (1 − b·u), b = 1,024 the rows of a block (the rounding of
    x − c, then any summation order of a length-b dot product; the float64 sum of the blocks adds nothing at this
    scale; Higham, *Accuracy and Stability of Numerical Algorithms*, §3.5). So the trace of the
    scatter is off by at most that factor of tr(YᵀY), and λ_max by at most that factor of tr(YᵀY) (‖ΔS‖₂ ≤
    ‖ΔS‖_F ≤ ‖|Y|ᵀ|Y|‖_F·… ≤ tr(YᵀY)). Centring is what keeps tr(YᵀY) the batch's own variance rather than its
    squared mean: a float32 Gram matrix of uncentred rows would carry errors of u·‖x̄‖² per entry, and a massive
    activation (10³–10⁴ times the other features) would swamp the variances. The worst case (γ_b ≈ 6·10⁻⁵) is far
    from what rounding does: the errors of a long dot product behave like a random walk, √b·u ≈ 2·10⁻⁶ of
    |Y|ᵀ|Y| per entry with high probability (Higham & Mary 2019, SIAM J. Sci. Comput. 41(5)), and the statistics
    read from the whole set's scatter (λ_max / trace, trace and Frobenius norm) average many entries: they agree
    with the float64 computation to about 10⁻⁸ on MiniLM's and SmolLM2's hidden states, and to at most 2·10⁻⁷ on
    synthetic rows whose feature scales span three decades, with an offset mean and massive activations (4·10⁻⁷
    with one block of 4,096 rows, hence the blocks); ``tests/stats/test_float32_products.py`` holds them within
    10⁻⁶ relative (Hypothesis). Each batch's own anisotropy is computed further, in float64
    (:meth:`BatchProducts.anisotropies`). A float64 batch takes the same path in float64.

    ``counts``: the rows of each code of :func:`mark_codes` (2^len(marks) numbers, read from the device before:
    :func:`code_counts`), or None: read here (one wait for the device; none without marks). What else needs a
    number of rows takes it from them, so that the batch's products and anisotropies wait for nothing more.
    ``wait_free``: the paths a GPU takes, whose products are cut into column blocks by :func:`gram_column_blocks`.
    """
    n, d = batch.shape
    work = batch.dtype
    total = torch.zeros(d, dtype=dtype, device=batch.device)
    for s in range(0, n, _PRODUCT_ROWS):  # in blocks: a sum with a dtype converts its whole input first
        total += batch[s : s + _PRODUCT_ROWS].sum(0, dtype=dtype)
    marks = [m.to(device=batch.device, dtype=torch.bool) for m in marks]
    rows = None
    if marks:
        codes = mark_codes(marks)
        if counts is None:
            counts = code_counts(codes, len(marks)).tolist()
        r = n - counts[0]
        rows = _first_rows(codes != 0, r)  # the rows some mask marks (a few), in order
    if rows is not None and rows.numel():
        x_any = batch[rows].to(dtype)
        n_free = n - rows.numel()
        centre = ((total - x_any.sum(0)) / n_free) if n_free else total / n
    else:
        x_any = None
        centre = total / n
    c = centre.to(work)  # a centre the batch's dtype holds exactly: x − c is then exact up to one rounding
    cc = c.to(dtype)
    y_any = None if x_any is None else x_any - cc
    if y_any is not None:
        products_any, marked = _marked_products(y_any, rows, marks, counts)
    else:
        marked = [_Marked(m, 0, torch.zeros(d, dtype=dtype, device=batch.device),
                          torch.zeros((d, d), dtype=dtype, device=batch.device)) for m in marks]
    batch.sub_(c)
    if x_any is not None:
        batch[rows] = 0  # the marked rows' products are taken apart, in ``dtype``
    products = torch.zeros((d, d), dtype=dtype, device=batch.device)
    with _ieee_float32(batch.device):
        for s in range(0, n, _PRODUCT_ROWS):  # float32 products over blocks of rows, summed in ``dtype``
            _add_upper_gram(products, batch[s : s + _PRODUCT_ROWS], gram_column_blocks(d, wait_free))
    products = torch.triu(products) + torch.triu(products, 1).mT
    if x_any is not None:
        products += products_any
        batch[rows] = y_any.to(work)
    moments = BatchProducts(n, cc, total - n * cc, products, None, marked, work, batch,
                            None if y_any is None else rows, y_any)
    moments.gram = moments.uncentred(products, moments.y_sum, n)
    return moments


@dataclass
class LayerProducts:
    """The second-order moments of one SVD batch of ``n`` rows in each of L layers, without complements, as
    :class:`BatchProducts` holds one layer's: ``centre`` (L, d), ``y_sum`` (L, d), ``products`` and ``gram``
    (L, d, d) in the accumulation dtype, ``work`` the rows' dtype and ``rows`` (L, n, d) the centred rows (the
    layers' buffers, centred in place)."""

    n: int
    centre: torch.Tensor
    y_sum: torch.Tensor
    products: torch.Tensor
    gram: torch.Tensor
    work: torch.dtype
    rows: torch.Tensor

    def anisotropies(self, lockstep: bool | None = None) -> torch.Tensor:
        """Each layer's SVD anisotropy of its batch, (L,): what :meth:`BatchProducts.anisotropies` gives each layer's
        batch (no complement, n >= d), with the layers' top directions found together
        (:func:`aniso.metrics.largest_eigenpairs` of their centred scatters; ``lockstep`` as there) and each value
        computed in float64 from the rows, in one pass over every layer's batch."""
        n, dtype = self.n, self.products.dtype
        c = torch.baddbmm(self.products, self.y_sum[:, :, None], self.y_sum[:, None, :], alpha=-1.0 / max(n, 1))
        c = (c + c.mT) / 2
        v = metrics._largest_eigenpairs(torch.nan_to_num(c), lockstep=lockstep)[1][:, :, None]  # (L, d, 1)
        layers, _, d = self.rows.shape
        step = _rows_per_pass(layers, d, dtype)
        proj, norms, total = [], [], None
        for s in range(0, n, step):  # float64 blocks of the float32 rows, of a bounded size
            y = self.rows[:, s : s + step].to(dtype)
            proj.append((y @ v)[:, :, 0])
            norms.append(torch.linalg.vecdot(y, y))
            total = y.sum(1) if total is None else total + y.sum(1)
        proj, norms = (torch.cat(t, 1) if len(t) > 1 else t[0] for t in (proj, norms))
        squares = norms.sum(1)
        floor = squares * (n * torch.finfo(self.work).eps / 2)  # what rounding the rows could leave of the trace
        quotient = torch.linalg.vecdot(proj, proj) - proj.sum(1).square() / n
        trace = squares - torch.linalg.vecdot(total, total) / n
        return torch.where(trace > floor, (quotient / trace).clamp(0.0, 1.0), torch.nan)


def centred_layer_products(batch: torch.Tensor, dtype: torch.dtype, wait_free: bool = False) -> LayerProducts:
    """:func:`centred_batch_products` of one SVD batch in each of L layers at once, without complements:
    ``batch`` (L, b, d), float32 or float64, each layer's rows centred **in place** at their mean (rounded to the
    batch's dtype), their products formed in blocks of 1,024 rows in the batch's dtype (one batched product per
    block for every layer) and summed in ``dtype``; Σxxᵀ from them as there. The error bound of
    :func:`centred_batch_products` holds for each layer. ``wait_free``: the paths a GPU takes
    (:func:`gram_column_blocks`)."""
    layers, n, d = batch.shape
    work = batch.dtype
    step = _rows_per_pass(layers, d, dtype)
    total = batch[:, :step].sum(1, dtype=dtype)
    for s in range(step, n, step):  # in blocks: a sum with a dtype converts its whole input first
        total += batch[:, s : s + step].sum(1, dtype=dtype)
    c = (total / n).to(work)  # a centre the batch's dtype holds exactly: x − c is then exact up to one rounding
    cc = c.to(dtype)
    batch.sub_(c[:, None, :])
    blocks = gram_column_blocks(d, wait_free)
    whole = -(-n // _PRODUCT_ROWS)  # blocks of rows
    with _ieee_float32(batch.device):
        if blocks == 1 and n % _PRODUCT_ROWS == 0 and layers * whole * d * d * 12 <= _PASS_BYTES:
            # every block of rows of every layer in one batched product (float32), summed over the blocks in dtype
            rows = batch.reshape(layers * whole, _PRODUCT_ROWS, d)
            products = (rows.mT @ rows).reshape(layers, whole, d, d).sum(1, dtype=dtype)
        else:
            products = torch.zeros((layers, d, d), dtype=dtype, device=batch.device)
            for s in range(0, n, _PRODUCT_ROWS):  # float32 products over blocks of rows, summed in ``dtype``
                _add_upper_gram(products, batch[:, s : s + _PRODUCT_ROWS], blocks)
            products = torch.triu(products) + torch.triu(products, 1).mT
    y_sum = total - n * cc
    half = y_sum + (n / 2) * cc
    gram = torch.baddbmm(torch.baddbmm(products, cc[:, :, None], half[:, None, :]), half[:, :, None],
                         cc[:, None, :])
    return LayerProducts(n, cc, y_sum, products, gram, work, batch)


def _marked_products(y: torch.Tensor, rows: torch.Tensor, masks: list[torch.Tensor],
                     code_rows: list[int]) -> tuple[torch.Tensor, list]:
    """The products of the marked rows ``y`` (r, d) (every row some mask marks, centred, in the accumulation dtype;
    ``rows`` (r,): their indices in the batch): Σyyᵀ over all of them, and one :class:`_Marked` per mask of ``masks``
    (each (b,) bool). The rows are split by the set of masks that mark them (first tokens that also carry a massive
    activation, and so on) and each part's Σyyᵀ is formed once: one product over the r rows in all, whatever the
    number of masks. ``code_rows``: the batch's rows of each code of :func:`mark_codes` (read before): each part is
    a run of the rows sorted by code (stable: in the batch's order within a part), so nothing is read here."""
    in_mask = torch.stack([m[rows] for m in masks])  # (k, r)
    order = torch.argsort(mark_codes(list(in_mask)), stable=True)
    parts, start = {}, 0
    for v in range(1, len(code_rows)):  # (code 0, the rows no mask marks, is not among them)
        if code_rows[v]:
            parts[v] = y[order[start : start + code_rows[v]]]
            start += code_rows[v]
    part_products = {v: part.mT @ part for v, part in parts.items()}
    y_sums = in_mask.to(y.dtype) @ y  # (k, d)
    counts = [sum(c for v, c in enumerate(code_rows) if v >> j & 1) for j in range(len(masks))]
    marked = []
    for j, mask in enumerate(masks):
        mine = [p for v, p in part_products.items() if v >> j & 1]
        scatter = functools.reduce(torch.add, mine) if mine else y.new_zeros((y.shape[1], y.shape[1]))
        marked.append(_Marked(mask, int(counts[j]), y_sums[j], scatter))
    return functools.reduce(torch.add, part_products.values()), marked


#: Column blocks of :func:`_add_upper_gram` (the share of a whole GEMM's products it forms: (k + 1) / 2k).
_GRAM_COLUMN_BLOCKS = 4


def _add_upper_gram(products: torch.Tensor, rows: torch.Tensor, blocks: int = _GRAM_COLUMN_BLOCKS) -> None:
    """Add rowsᵀ rows to the upper triangle (diagonal included) of ``products`` (d, d), in place, for ``rows`` (b, d)
    on its device (or of each of L layers': ``products`` (L, d, d), ``rows`` (L, b, d), one batched product per
    block): the product is formed in the rows' dtype and added in ``products``'. The columns are cut into ``blocks``
    blocks (:func:`gram_column_blocks`) and each block is multiplied by itself and the blocks after it only (one GEMM
    per block): 10 of the 16 block products with 4 blocks. An SVD batch of 4,096 float32 rows, in blocks of 1,024, on
    2 CPU cores:
    10.0 ms against 13.4 ms for whole GEMMs at d = 576, 4.8 ms against 6.2 ms at d = 384. The entries below the
    diagonal are left partly filled; read the upper triangle.
    Each entry is still one dot product of length b in the rows' dtype, so :func:`centred_batch_products`'s error
    bound holds as stated."""
    d = rows.shape[-1]
    edges = [round(i * d / blocks) for i in range(blocks + 1)]
    for start, end in zip(edges[:-1], edges[1:]):
        if end > start:
            # (add_ on the view: ``view += ...`` would copy the view back onto itself, a launch of its own)
            products[..., start:end, start:].add_(rows[..., start:end].mT @ rows[..., start:])


#: The width from which :func:`gram_column_blocks` cuts the columns on the paths a GPU takes.
GRAM_BLOCKS_MIN_DIM = 2048


def gram_column_blocks(dim: int, wait_free: bool) -> int:
    """Column blocks of :func:`_add_upper_gram` for rows of width ``dim``: :data:`_GRAM_COLUMN_BLOCKS` on the CPU's
    paths, where the products' arithmetic is what costs; on the paths a GPU takes (``wait_free``,
    :class:`~aniso.stats.parts.base.Layout`), where each block is a kernel launch of its own, only from
    :data:`GRAM_BLOCKS_MIN_DIM` (there the 6 of 16 block products saved per block of 1,024 rows, 0.75·1,024·d²
    ≥ 3·10⁹ multiply-adds, outweigh 6 more launches), else 1: one product per block of rows."""
    return _GRAM_COLUMN_BLOCKS if not wait_free or dim >= GRAM_BLOCKS_MIN_DIM else 1


@contextmanager
def _ieee_float32(device: torch.device):
    """float32 matrix products in IEEE float32 on a GPU (no TF32 or reduced-precision passes) while inside."""
    if device.type != "cuda":
        yield
        return
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("highest")
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(before)
