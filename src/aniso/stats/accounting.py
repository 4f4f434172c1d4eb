"""What the streamed statistics keep in memory: every tensor, its size and what it scales with.

:func:`kept_tensors` walks a :class:`~aniso.stats.accumulators.LayerAccumulator` through its parts (their sums, the SVD
batch buffer and reservoir, the per-input groups, each complement's share of each part, and what readers cached) and names, for each tensor or
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

from .accumulators import PARTS, InputGroups, LayerAccumulator
from .parts.base import LeftOut
from .results import ModelStats

__all__ = ["KeptTensor", "SCALES_WITH", "GROWS_WITH_CORPUS", "kept_tensors", "accounting"]

#: What each piece of an accumulator's state scales with, by its path in its part (``*``: any key of a dict): ``1``
#: (a scalar), ``d`` (the layer's width), ``d²``, ``svd_batch_size``, ``svd_batch_size·d``, ``reservoir_size·d``,
#: ``min(inputs, input_groups)`` and ``·d``, ``svd batches`` (one scalar per complete SVD batch: tokens /
#: svd_batch_size), ``read`` (results cached by a reader: cleared by the next update; at most what the state holds).
#: Made from the part table (:data:`aniso.stats.accumulators.PARTS`): each part's ``keeps``, and its complements'
#: shares' ``left_keeps`` under ``_complements.*.``.
SCALES_WITH: dict[str, str] = {
    **{path: scale for part in PARTS for path, scale in part.keeps.items()},
    **{f"_complements.*.{path}": scale for part in PARTS for path, scale in part.left_keeps.items()},
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
    elif isinstance(obj, (InputGroups, LeftOut)):
        for name, item in vars(obj).items():
            yield from _walk(item, f"{path}.{name}")


def kept_tensors(acc: LayerAccumulator) -> list[KeptTensor]:
    """Every tensor and host array ``acc`` holds, grouped by path, with its size and what it scales with."""
    found: dict[str, list] = defaultdict(lambda: [0, 0, ""])
    pieces = [(name, value) for name, value in vars(acc).items() if name != "_parts"]
    for part in acc.parts().values():  # each part's state, by its path in the part (its layout names no tensor)
        pieces += [(name, value) for name, value in vars(part).items() if name != "layout"]
    for name, value in pieces:
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
