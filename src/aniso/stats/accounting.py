"""What the streamed statistics keep in memory: every tensor, its size and what it scales with.

:func:`kept_tensors` walks a :class:`~aniso.stats.accumulators.LayerAccumulator` (its sums, its SVD batch buffer and
reservoir, its per-input groups, each complement's sums, and what its readers cached) and names, for each tensor or
host array it finds, what its size scales with (:data:`SCALES_WITH`). :func:`accounting` adds them up over the layers
of a :class:`~aniso.stats.results.ModelStats`. A tensor that the table does not name is reported with
``scales_with`` None, and ``tests/stats/test_accounting.py`` fails on it, so that a new piece of state is accounted
for when it is added. ``docs/performance.md`` ("What the statistics keep") gives the table with its sizes.

Only one term grows with the corpus: one scalar per complete SVD batch (``svd batches``: the batch-wise SVD
anisotropy of each, 8 bytes per ``svd_batch_size`` tokens, kept for the bootstrap over batches). The per-input sums
are held to :data:`~aniso.stats.accumulators.INPUT_GROUPS` rows (:class:`~aniso.stats.accumulators.InputGroups`).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np
import torch

from .accumulators import InputGroups, LayerAccumulator, _Complement
from .results import ModelStats

__all__ = ["KeptTensor", "SCALES_WITH", "GROWS_WITH_CORPUS", "kept_tensors", "accounting"]

#: What each piece of an accumulator's state scales with, by its path (``*``: any key of a dict): ``1`` (a scalar),
#: ``d`` (the layer's width), ``d²``, ``svd_batch_size``, ``svd_batch_size·d``, ``reservoir_size·d``,
#: ``min(inputs, input_groups)`` and ``·d``, ``svd batches`` (one scalar per complete SVD batch: tokens /
#: svd_batch_size), ``read`` (results cached by a reader: cleared by the next update; at most what the state holds).
SCALES_WITH: dict[str, str] = {
    "_n_zero": "1", "_norm_sum": "1", "_n_first": "1",
    "_unit_sum": "d", "_vector_sum": "d", "_unit_sq_sum": "d", "_sq_sum": "d", "_abs_max": "d", "_abs_max_pos": "d",
    "_first_sum": "d", "_first_sq_sum": "d",
    "_gram_done": "d²",
    "_batch_svd": "svd batches",
    "_svd_buffer": "svd_batch_size·d",
    "_reservoir": "reservoir_size·d",
    "_inputs.unit": "min(inputs, input_groups)·d", "_inputs.vector": "min(inputs, input_groups)·d",
    "_inputs.counts": "min(inputs, input_groups)",
    "_complements.*.counts": "1", "_complements.*.norm_sum": "1",
    "_complements.*.x_sums": "d", "_complements.*.sq_sums": "d", "_complements.*.abs_max": "d",
    "_complements.*.abs_max_pos": "d",
    "_complements.*.marked": "svd_batch_size",
    "_complements.*.gram_done": "d²",
    "_complements.*.batch_svd": "svd batches",
    "_cache.*": "read",
}

#: The terms of :data:`SCALES_WITH` that grow with the number of inputs or tokens (everything else is fixed by the
#: settings and the layer's width).
GROWS_WITH_CORPUS = frozenset({"svd batches"})


@dataclass(frozen=True)
class KeptTensor:
    """One piece of kept state: ``path`` in its accumulator (``*`` for a dict key), ``count`` tensors there (a list
    of scalars counts as one entry), their ``bytes`` in all, ``device`` (``host`` for numpy arrays), and what their
    size ``scales_with`` (:data:`SCALES_WITH`; None: not accounted for)."""

    path: str
    count: int
    bytes: int
    device: str
    scales_with: str | None


def _walk(obj, path: str):
    if isinstance(obj, torch.Tensor):
        yield path, obj.numel() * obj.element_size(), str(obj.device)
    elif isinstance(obj, np.ndarray):
        yield path, obj.nbytes, "host"
    elif isinstance(obj, (list, tuple)):
        for item in obj:
            yield from _walk(item, path)
    elif isinstance(obj, dict):
        for item in obj.values():
            yield from _walk(item, f"{path}.*")
    elif isinstance(obj, (InputGroups, _Complement)):
        for name, item in vars(obj).items():
            if name != "main":  # a complement's link back to its accumulator
                yield from _walk(item, f"{path}.{name}")


def kept_tensors(acc: LayerAccumulator) -> list[KeptTensor]:
    """Every tensor and host array ``acc`` holds, grouped by path, with its size and what it scales with."""
    found: dict[str, list] = defaultdict(lambda: [0, 0, ""])
    for name, value in vars(acc).items():
        for path, nbytes, device in _walk(value, name):
            entry = found[path]
            entry[0] += 1
            entry[1] += nbytes
            entry[2] = device
    return [KeptTensor(path, count, nbytes, device, SCALES_WITH.get(path))
            for path, (count, nbytes, device) in found.items()]


def accounting(stats: ModelStats) -> dict[str, int]:
    """Bytes the accumulators of every layer of ``stats`` hold, by what they scale with (:data:`SCALES_WITH`;
    ``unaccounted`` for state the table does not name), and ``total``."""
    out: dict[str, int] = defaultdict(int)
    for acc in stats.layers:
        for kept in kept_tensors(acc):
            out[kept.scales_with or "unaccounted"] += kept.bytes
    out["total"] = sum(out.values())
    return dict(out)
