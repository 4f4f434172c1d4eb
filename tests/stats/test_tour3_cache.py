"""The statistics cache on disk: files written with the mode of any new file (a cache shared by a group stays
readable)."""

from __future__ import annotations

import os
import stat

import numpy as np
import pytest

from aniso.common.versions import cache_key
from aniso.stats.cache import StatsCache
from aniso.stats.accumulators import LayerAccumulator
from aniso.stats.results import ModelStats


def _stats(seed=0):
    x = np.random.default_rng(seed).standard_normal((50, 4)).astype(np.float32)
    layers = []
    for i in range(2):
        acc = LayerAccumulator(4, reservoir_size=8, svd_batch_size=10, seed=i)
        acc.update(x)
        layers.append(acc)
    return ModelStats("m", ["0", "1"], layers, {"note": "test"})


@pytest.mark.parametrize("umask", [0o022, 0o002])
def test_cache_data_and_sidecar_get_the_mode_of_a_new_file(tmp_path, umask):
    old = os.umask(umask)
    try:
        cache = StatsCache(tmp_path)
        key = cache_key({"model": "m"})
        cache.save(key, _stats())
    finally:
        os.umask(old)
    for name in (f"{key}.safetensors", f"{key}.json"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o666 & ~umask, name
