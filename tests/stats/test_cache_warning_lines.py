"""A damaged cache entry (truncated, a `.lock` that is a folder) was said in a warning shown as a line of the suite's
source, with Python's echo of that source line under it (``cached = self.cache.load(key)``). The warning is now the
damaged file's own line, ``PATH:0: RuntimeWarning: …``, one line, as skipped inputs are said."""

from __future__ import annotations

import json
import warnings

import numpy as np

from aniso.common.files import exclusive
from aniso.common.versions import cache_key
from aniso.stats.accumulators import LayerAccumulator
from aniso.stats.cache import JsonCache, StatsCache
from aniso.stats.results import ModelStats


def _stats():
    acc = LayerAccumulator(4, reservoir_size=8, svd_batch_size=10, seed=0)
    acc.update(np.random.default_rng(0).standard_normal((20, 4)).astype(np.float32))
    return ModelStats("m", ["0"], [acc], {"n_sequences": 20})


def _one_line_of(path, said):
    assert len(said) == 1, [str(w.message) for w in said]
    w = said[0]
    assert (w.filename, w.lineno) == (str(path), 0)
    shown = warnings.formatwarning(w.message, w.category, w.filename, w.lineno)
    assert shown.count("\n") == 1 and shown.startswith(f"{path}:0: RuntimeWarning: "), shown


def test_a_truncated_entry_is_said_on_its_own_line(tmp_path):
    cache = StatsCache(tmp_path)
    key = cache_key({"model": "m"})
    cache.save(key, _stats())
    data = tmp_path / f"{key}.safetensors"
    data.write_bytes(b"")
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        assert cache.load(key) is None
    _one_line_of(data, said)


def test_an_edited_json_entry_is_said_on_its_own_line(tmp_path):
    cache = JsonCache(tmp_path)
    key = cache_key({"model": "m", "what": "qk"})
    cache.save(key, {"value": 1.0})
    path = next(tmp_path.glob(f"{key}*.json"))
    doc = json.loads(path.read_text())
    doc["payload"] = {"value": 2.0}
    path.write_text(json.dumps(doc))
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        assert cache.load(key) is None
    _one_line_of(path, said)


def test_a_lock_that_is_a_folder_is_said_on_its_own_line(tmp_path):
    lock = tmp_path / "entry.lock"
    lock.mkdir()
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        with exclusive(tmp_path / "entry"):
            pass
    _one_line_of(lock, said)
