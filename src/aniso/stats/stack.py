"""Every layer's statistics of a batch updated together: the states of a model's layers with a leading layer axis.

A model's hidden states of one batch are the same rows (tokens) in each of its L layers. Updated layer by layer
(:meth:`aniso.stats.accumulators.LayerAccumulator.update`), each statistic costs its kernels once per layer, and at
a small width a layer's statistics launch as many kernels as the layer's own forward pass (docs/performance.md,
"Launches, not views"). A :class:`LayerStack` updates the layers' accumulators together: the batch's rows of every
layer stacked into one (L, m, d) tensor, each part's weighted row sums one batched GEMM for all layers, and each
part's state held in tensors with a leading layer axis (:meth:`aniso.stats.parts.base.Statistic.stacked`), of which
every layer's accumulator keeps views, so each statistic issues its kernels once per batch, not once per layer. The
statistics are those of the layer-by-layer updates (the same sums, formed by the same products; the same reservoir
draws, each layer from its own seed's stream; the same SVD batches), and every accumulator stays what it was for
everything read after the stream (summaries, state, merges, complements).

This is the path a GPU takes (the accumulators' ``wait_free``, :class:`~aniso.stats.parts.base.Layout`), where each
kernel launch costs microseconds of the host's time; the CPU updates the layers one by one (:meth:`LayerStack.over`).
The layers are stacked in groups of at most :data:`STACK_BYTES` of the batch's copies (the stacked rows, their
upcast and squares in the accumulation dtype, their magnitudes), so memory stays bounded by a fixed budget, not by
the model's depth.
"""

from __future__ import annotations

import dataclasses
import functools

import torch

from .accumulators import PARTS, LayerAccumulator, _Deferred
from .parts.base import Layers, of_layers, rows_of_one

__all__ = ["LayerStack", "STACK_BYTES"]

#: The most bytes of one batch's stacked copies (the rows of the layers stacked, their upcast and squares in the
#: accumulation dtype, their |x| and one masked |x| in the model's dtype) formed at once: layers beyond it are stacked
#: in further groups. 1 GiB: a 7B model's batch of 16 × 128 bfloat16 tokens takes 5 layers per group.
STACK_BYTES = 1 << 30


class LayerStack:
    """The accumulators of a model's layers (``layers``: new, one per hidden state, made with the same layout but
    their seeds) updated together, one batch at a time (:meth:`update`). Made by :meth:`over`, which says when they
    can be; a batch whose layers' rows differ in shape, or any update of an accumulator on its own, ends the stack
    (:attr:`live`), and the layers are then updated one by one."""

    def __init__(self, layers: list[LayerAccumulator], handles: list):
        self.layers = layers
        self._handles = handles
        self.live = True

    @classmethod
    def over(cls, layers: list[LayerAccumulator]) -> "LayerStack | None":
        """A stack of ``layers``, or None where they are not to be updated together: on the CPU's paths (their
        layout's ``wait_free`` off, the default on the CPU: there a kernel launch costs next to nothing, and a layer's
        rows updated on their own stay in the cache: MiniLM's ``all`` statistics took 1.74-1.80 times a bare
        forward pass stacked against 1.44 one by one, docs/performance.md), fewer than two layers, different layouts
        (widths, statistics kept, complements, device; the seed apart), an accumulator that has seen rows already,
        or a part that cannot stack its state
        (:meth:`~aniso.stats.parts.base.Statistic.stacked`)."""
        if len(layers) < 2 or not layers[0].layout.wait_free:
            return None
        layout = dataclasses.replace(layers[0].layout, seed=0)
        if any(dataclasses.replace(acc.layout, seed=0) != layout for acc in layers) or \
                any(acc.count or acc._deferred is not None for acc in layers):
            return None
        handles = []
        for part in PARTS:
            handle = part.stacked([acc._parts[part.name] for acc in layers])
            if handle is None:
                return None
            handles.append(handle)
        return cls(layers, handles)

    def takes(self, hs: list[torch.Tensor], inputs: list, positions: list) -> bool:
        """Whether :meth:`update` takes this batch: the stack is live, and ``hs`` (one (m, d) tensor per layer) has
        m >= 1 rows of the accumulators' width in every layer, in one dtype on the accumulators' device, with the
        same input labels and positions (one object) for every layer."""
        lead = self.layers[0]
        if not self.live or len(hs) != len(self.layers) or not hs:
            return False
        h0 = hs[0]
        return (isinstance(h0, torch.Tensor) and h0.ndim == 2 and h0.shape[0] > 0 and h0.shape[1] == lead.dim
                and h0.device == lead.device
                and all(isinstance(h, torch.Tensor) and h.shape == h0.shape and h.dtype == h0.dtype
                        and h.device == h0.device for h in hs)
                and all(r is inputs[0] for r in inputs) and all(p is positions[0] for p in positions))

    def update(self, hs: list[torch.Tensor], inputs=None, n_inputs: int | None = None, positions=None,
               exclude: dict | None = None) -> list[torch.Tensor]:
        """Add one batch to every layer: ``hs`` one (m, d) tensor per layer (:meth:`takes`), ``inputs`` (m,) the input
        of each row, ``n_inputs``, ``positions`` (m,): as :meth:`~aniso.stats.accumulators.LayerAccumulator.update`
        takes them (the same rows in every layer), and ``exclude``: {complement name: the rows it leaves out, (m,)
        bool for every layer, (L, m) bool, one row per layer, or a function of a group of layers' rows (L, m, d)
        giving their (L, m) marks} (a complement not named leaves out none); with
        ``wait`` False: returns each layer's check (a 0-d bool tensor on the device, True where that layer's rows were
        not finite or the labels out of range), to be read by :func:`~aniso.stats.accumulators.read_checks`; an SVD
        batch the update completes is formed once that read is made, from checked rows only. Raises ValueError on
        labels of the wrong length, or given on the host out of range, or marks of the wrong shape."""
        accs = self.layers
        for acc in accs:
            acc._settle()
        lead = accs[0]
        m, d = hs[0].shape
        labels, k, bad_labels = lead._per_input.labels(inputs, n_inputs, m)
        pos = None if positions is None else lead._as_tensor(positions, torch.int64).reshape(-1)
        first = None if pos is None else pos == 0
        seen = lead.count
        marks = {}
        for name in lead.layout.complements:
            mask = (exclude or {}).get(name)
            if mask is None:
                mask = torch.zeros(m, dtype=torch.bool, device=lead.device)
            if not callable(mask):
                mask = lead._as_tensor(mask, torch.bool)
                if tuple(mask.shape) not in ((m,), (len(accs), m)):
                    raise ValueError(f"exclude[{name!r}] must mark {m} rows (or {m} rows of each of {len(accs)} "
                                     f"layers), got shape {tuple(mask.shape)}")
            marks[name] = mask
        parts = {part.name: [acc._parts[part.name] for acc in accs] for part in PARTS}
        deferred = [part for part in PARTS if parts[part.name][0].needs_check(m)]  # it completes an SVD batch
        itemsize = torch.empty((), dtype=lead.dtype).element_size()
        # per layer: the upcast rows and their squares, and the rows, their |x| and one masked |x| in the model's dtype
        size = max(1, min(len(accs), STACK_BYTES // max(1, m * d * (2 * itemsize + 3 * hs[0].element_size()))))
        checks: list[torch.Tensor] = []
        together = rows_of_one(hs)  # every layer's rows in one tensor already (the extraction's): not copied again
        for lo in range(0, len(accs), size):
            at = slice(lo, min(len(accs), lo + size))
            x = torch.stack(hs[at]) if together is None else of_layers(together, at)
            x64 = x.to(lead.dtype)
            sq = x64 * x64
            norms = sq.sum(2).sqrt_()
            norm_sums = norms.sum(1)
            # A layer's rows are finite where the sum of their norms is: a NaN or infinite entry makes its row's norm,
            # and so the sum, NaN or infinite; a float64 sum of finite norms of narrower floats (≤ 3.4·10³⁸·√d each)
            # cannot overflow. Rows in float64 are checked row by row.
            failed = ~torch.isfinite(norm_sums) if x.dtype != torch.float64 else ~torch.isfinite(norms).all(1)
            if bad_labels is not None:
                failed = failed | bad_labels
            nonzero = norms > 0
            inverse = torch.where(nonzero, norms.reciprocal(), 0.0)  # 1/‖x‖, as 1.0 / ‖x‖ gives it (0: zero rows)
            n = x.shape[0]
            masks = {name: _marks_of(mask, x, at, m) for name, mask in marks.items()}
            layers = Layers(x, x64, sq, norms, nonzero, inverse, seen, labels, k, pos, first, norm_sums, masks)
            rows, w_x, w_sq = [], [], []
            for part in PARTS:
                wx, wsq = ([], []) if part in deferred else part.layer_weights(layers)
                rows.append(tuple(_rows([w if w.shape[0] == n else w.expand(n, -1, -1) for w in mine], into)
                                  for mine, into in ((wx, w_x), (wsq, w_sq))))
            s_x = torch.bmm(torch.cat(w_x, 1), x64) if w_x else x64[:, :0]
            s_sq = torch.bmm(torch.cat(w_sq, 1), sq) if w_sq else sq[:, :0]
            for part, handle, (x_rows, sq_rows) in zip(PARTS, self._handles, rows):
                if part in deferred:  # left for the read of the checks (read_checks), as LayerAccumulator.update
                    need = part.layers_close_counts(handle, parts[part.name], at, layers)
                    group = _Checked(part, handle, parts[part.name], at, Layers(x, *[None] * 5, seen, None, k, None,
                                                                                None, None, masks), accs)
                    for i in range(at.start, at.stop):
                        accs[i]._deferred = _Deferred(functools.partial(group.fill_one, i),
                                                      None if need is None else need[i - lo], failed[i - lo],
                                                      x[i - lo], k, group)
                    continue
                part.update_layers(handle, parts[part.name], at, layers, _of(s_x, x_rows), _of(s_sq, sq_rows))
            checks.extend(failed[i] for i in range(n))
        for acc in accs:
            acc._cache.clear()
            acc.count += m
        return checks


def _marks_of(mask, x: torch.Tensor, at: slice, m: int) -> torch.Tensor:
    """The (L, m) marks of the group of layers ``at`` (rows ``x`` (L, m, d)): ``mask`` (m,) for every layer, (L_all,
    m) one row per layer, or a function of the group's rows giving (L, m) bool (formed group by group, within the
    stack's budget)."""
    if callable(mask):
        out = mask(x)
        if out.dtype != torch.bool or tuple(out.shape) != (x.shape[0], m):
            raise ValueError(f"a function marking the rows left out must give ({x.shape[0]}, {m}) bool, got "
                             f"{tuple(out.shape)} {out.dtype}")
        return out
    return mask.expand(x.shape[0], m) if mask.ndim == 1 else of_layers(mask, at)


def _of(sums: torch.Tensor, rows: slice) -> torch.Tensor | None:
    """A part's rows of the layers' GEMM (L, r, d); None where it has none."""
    return sums[:, rows] if rows.stop > rows.start else None


def _rows(weights: list[torch.Tensor], into: list[torch.Tensor]) -> slice:
    """Append one part's weight rows ((L, r, m) each) to the batch's; their slice of the GEMM's rows."""
    start = sum(w.shape[1] for w in into)
    into.extend(weights)
    return slice(start, start + sum(w.shape[1] for w in weights))


class _Checked:
    """A part's update of a group of layers left until their checks are read (it completes an SVD batch, which is
    never formed from unchecked rows): :meth:`fill_all` takes it for every layer at once once every layer's check
    is read and passed (:func:`~aniso.stats.accumulators.read_checks`); a layer settled on its own
    (:meth:`~aniso.stats.accumulators.LayerAccumulator._settle`) takes its own share alone (:meth:`fill_one`), the
    others then theirs alone too. ``layers``: the batch as the part reads it (``x``, ``masks`` and ``seen``). The
    part is :class:`~aniso.stats.parts.second_order.SecondOrder`, the one that completes SVD batches
    (:meth:`~aniso.stats.parts.base.Statistic.needs_check`): ``layers_close_counts``, ``buffers_for`` and
    ``add_rows`` are its."""

    def __init__(self, part, handle, parts: list, at: slice, layers: Layers, accs: list[LayerAccumulator]):
        self.part, self.handle, self.parts, self.at, self.layers = part, handle, parts, at, layers
        self.members = accs[at]
        self.pending = set(range(at.start, at.stop))

    def whole(self, accs: list[LayerAccumulator]) -> bool:
        """Whether ``accs`` (accumulators whose checks were read and passed) are every layer of the group, none of
        them taken alone."""
        return len(self.pending) == len(self.members) and {id(a) for a in accs} == {id(a) for a in self.members}

    def fill_all(self, counts: dict) -> None:
        """The part's update of every layer of the group at once; ``counts``: {id(accumulator): what its SVD
        batches need, read (None: nothing)}."""
        mine = [counts.get(id(acc)) for acc in self.members]
        layers = dataclasses.replace(self.layers, counts=None if all(c is None for c in mine) else mine)
        empty = layers.x[:, :, :0]
        self.part.update_layers(self.handle, self.parts, self.at, layers, empty, empty)
        self.pending.clear()

    def fill_one(self, i: int, counts=None) -> None:
        """The part's update of layer ``i`` alone (``counts``: what its SVD batches need, read, or None)."""
        j = i - self.at.start
        self.part.buffers_for(self.handle, self.parts, self.layers)  # (so that add_rows keeps the layer's view)
        self.parts[i].add_rows(self.layers.x[j], {name: mask[j] for name, mask in self.layers.masks.items()},
                               self.layers.seen, counts)
        self.pending.discard(i)
