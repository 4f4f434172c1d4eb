"""The statistics cache on disk: files written with the mode of any new file (a cache shared by a group stays
readable), and each corrupt copy of an entry kept for inspection, never written over."""

from __future__ import annotations

import os
import stat
import warnings

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


def test_an_entry_corrupt_a_second_time_keeps_the_first_corrupt_copy(tmp_path):
    cache = StatsCache(tmp_path)
    key = cache_key({"model": "m"})
    data = tmp_path / f"{key}.safetensors"
    copies = []
    for size in (100, 200, 300):
        cache.save(key, _stats())
        data.write_bytes(data.read_bytes()[:size])
        copies.append(data.read_bytes())
        with pytest.warns(RuntimeWarning, match="corrupt or truncated"):
            assert cache.load(key) is None
    assert (tmp_path / f"{key}.safetensors.corrupt").read_bytes() == copies[0]
    assert (tmp_path / f"{key}.safetensors.2.corrupt").read_bytes() == copies[1]
    assert (tmp_path / f"{key}.safetensors.3.corrupt").read_bytes() == copies[2]
    assert (tmp_path / f"{key}.json.3.corrupt").exists()  # the sidecar keeps its data file's number
    cache.save(key, _stats())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cache.load(key) is not None


@pytest.mark.parametrize("which", ["safetensors", "json"])
def test_an_entry_file_that_is_a_link_is_moved_aside_without_being_read(tmp_path, which):
    """An entry's data file or sidecar replaced by a symbolic link (to /dev/zero, which a checksum would read
    forever): the entry is corrupt, moved aside with a warning naming the link, and recomputed; nothing is read
    through the link."""
    cache = StatsCache(tmp_path / "cache")
    key = cache_key({"model": "m"})
    cache.save(key, _stats())
    entry = tmp_path / "cache" / f"{key}.{which}"
    entry.unlink()
    entry.symlink_to("/dev/zero")
    with pytest.warns(RuntimeWarning, match=rf"{key}\.{which} is a symbolic link, not a file the cache wrote"):
        assert cache.load(key) is None
    assert not entry.exists() and not entry.is_symlink()
