"""The layer accumulator is its parts (aniso.stats.parts): the table PARTS gives its state's keys and the names of
the tensors it keeps, and each part rebuilds from its own state."""

from __future__ import annotations

import numpy as np
from aniso.stats.accounting import SCALES_WITH, kept_tensors
from aniso.stats.accumulators import PARTS, LayerAccumulator
from aniso.stats.parts.base import Statistic


def _accumulator(complements=("first", "other")) -> LayerAccumulator:
    rng = np.random.default_rng(7)
    acc = LayerAccumulator(5, reservoir_size=12, svd_batch_size=8, per_input=True, input_groups=4,
                           complements=complements)
    for _ in range(6):
        lengths = rng.integers(1, 5, size=3)
        x = rng.normal(size=(int(lengths.sum()), 5))
        pos = np.concatenate([np.arange(n) for n in lengths])
        acc.update(x, np.repeat(np.arange(3), lengths), 3, pos,
                   {"first": pos == 0, "other": pos == 1} if complements else None)
    return acc


def test_the_state_is_the_parts_states():
    """Each part's state keys are its own, and together with the layer's header they are the layer's state."""
    acc = _accumulator()
    assert [type(p) for p in acc.parts().values()] == list(PARTS)
    assert all(issubclass(p, Statistic) and p.name for p in PARTS)
    keys = [k for part in acc.parts().values() for k in part.state(acc.count)]
    assert len(keys) == len(set(keys))
    assert set(acc.state()) == {"count", "settings", *keys}


def test_each_part_rebuilds_from_the_state():
    """A part made from a layer's transfer state (which keeps no complement) holds the same state."""
    acc = _accumulator(complements=())
    state = acc.transfer_state()
    for part in acc.parts().values():
        again = type(part).from_state(acc.layout, state)
        mine, theirs = part.state(acc.count), again.state(acc.count)
        assert mine.keys() == theirs.keys()
        assert all(np.array_equal(mine[k], theirs[k], equal_nan=True) for k in mine), part.name


def test_every_tensor_a_part_declares_is_kept_and_named():
    """The parts' ``keeps`` are what the accounting names tensors by, and each declared piece is found."""
    acc = _accumulator()
    acc.summary()
    paths = {k.path for k in kept_tensors(acc)}
    declared = {path for part in PARTS for path in part.keeps}
    declared |= {f"_complements.*.{path}" for part in PARTS for path in part.left_keeps}
    assert declared <= paths and declared <= set(SCALES_WITH)


def test_twonn_of_the_reservoir_on_its_device_is_the_host_copys():
    """Off the CPU the summary's TwoNN reads the reservoir where it is (aniso.stats.parts.reservoir); the CPU reads
    its host copy. Both give the same estimate: the tensor path here against the summary, on every device present."""
    import torch

    from aniso import metrics

    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    rng = np.random.default_rng(3)
    x = rng.normal(size=(300, 6)) @ rng.normal(size=(6, 6))
    for device in devices:
        acc = LayerAccumulator(6, reservoir_size=128, svd_batch_size=64, device=device)
        acc.update(torch.as_tensor(x, dtype=torch.float32, device=device))
        reservoir = acc.parts()["reservoir"]._reservoir[:128]
        on_device = metrics.twonn_dimension(reservoir)
        on_host = metrics.twonn_dimension(acc.reservoir_sample())
        assert abs(on_device - on_host) <= 1e-12 * abs(on_host)
        assert acc.summary().twonn == (on_host if device == "cpu" else on_device)
