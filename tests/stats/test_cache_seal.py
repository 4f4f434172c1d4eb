"""Cache entries are sealed (:mod:`aniso.common.seal`): an entry copied under another entry's key, or edited with a
plain digest recomputed, is set aside and recomputed, never read."""

from __future__ import annotations

import hashlib
import json
import shutil
import warnings

import numpy as np
import pytest

from aniso.common.versions import cache_key
from aniso.stats.accumulators import LayerAccumulator
from aniso.stats.cache import JsonCache, StatsCache
from aniso.stats.results import ModelStats


def _stats(n=50, seed=0):
    x = np.random.default_rng(seed).standard_normal((n, 4)).astype(np.float32)
    layers = []
    for i in range(2):
        acc = LayerAccumulator(4, reservoir_size=8, svd_batch_size=10, seed=i)
        acc.update(x)
        layers.append(acc)
    return ModelStats("m", ["0", "1"], layers, {"n_sequences": n})


def test_an_entry_copied_under_another_entrys_key_is_not_read(tmp_path):
    cache = StatsCache(tmp_path)
    small, large = cache_key({"model": "m", "n": 16}), cache_key({"model": "m", "n": 256})
    cache.save(small, _stats(16))
    for suffix in (".safetensors", ".json"):
        shutil.copy(tmp_path / f"{small}{suffix}", tmp_path / f"{large}{suffix}")
    with pytest.warns(RuntimeWarning, match="copied from another entry"):
        assert cache.load(large) is None
    assert not (tmp_path / f"{large}.json").exists()  # moved aside
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cache.load(small).meta == {"n_sequences": 16}  # the original is untouched


def test_an_entry_renamed_with_its_key_field_edited_does_not_verify(tmp_path):
    cache = StatsCache(tmp_path)
    small, large = cache_key({"n": 16}), cache_key({"n": 256})
    cache.save(small, _stats(16))
    shutil.copy(tmp_path / f"{small}.safetensors", tmp_path / f"{large}.safetensors")
    meta = json.loads((tmp_path / f"{small}.json").read_text())
    (tmp_path / f"{large}.json").write_text(json.dumps(meta | {"key": large}))
    with pytest.warns(RuntimeWarning, match="seal does not verify"):
        assert cache.load(large) is None


@pytest.mark.parametrize("reseal", ["none", "sha256", "other key"])
def test_a_sidecar_summary_edited_is_not_read_however_its_digest_is_redone(tmp_path, reseal):
    """The tamper of a bad-input tour: layer 1's avg cos edited in the sidecar, the checksum recomputed. Without the
    folder's key no recomputed digest verifies."""
    import hmac

    cache = StatsCache(tmp_path)
    key = cache_key({"model": "m"})
    cache.save(key, _stats())
    path = tmp_path / f"{key}.json"
    meta = json.loads(path.read_text())
    meta["summaries"][1]["mean_cosine"] = 0.95
    body = json.dumps({k: v for k, v in meta.items() if k != "seal"}, sort_keys=True, separators=(",", ":"))
    data_sha = hashlib.sha256((tmp_path / f"{key}.safetensors").read_bytes()).hexdigest()
    text = f"{data_sha}\n{body}".encode()
    if reseal == "sha256":
        meta["seal"] = hashlib.sha256(text).hexdigest()
    elif reseal == "other key":
        meta["seal"] = hmac.new(b"k" * 32, text, hashlib.sha256).hexdigest()
    path.write_text(json.dumps(meta))
    with pytest.warns(RuntimeWarning, match="seal does not verify"):
        assert cache.load(key) is None


def test_a_cache_folder_given_another_folders_key_reads_none_of_its_entries(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    key = cache_key({"model": "m"})
    StatsCache(one).save(key, _stats())
    StatsCache(two).save(cache_key({"x": 1}), _stats())  # a folder with its own key
    for suffix in (".safetensors", ".json"):
        shutil.copy(one / f"{key}{suffix}", two / f"{key}{suffix}")
    with pytest.warns(RuntimeWarning, match=r"sealed with another seal.key \(another cache folder's"):
        assert StatsCache(two).load(key) is None
    shutil.copytree(one, tmp_path / "moved")  # a whole folder moved with its key verifies
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert StatsCache(tmp_path / "moved").load(key) is not None


def test_a_json_entry_copied_under_another_key_or_edited_is_not_read(tmp_path):
    cache = JsonCache(tmp_path)
    cache.save("a", {"x": 1})
    shutil.copy(tmp_path / "a.json", tmp_path / "b.json")
    with pytest.warns(RuntimeWarning, match="copied from another entry"):
        assert cache.load("b") is None
    doc = json.loads((tmp_path / "a.json").read_text())
    doc["payload"]["x"] = 2
    doc["seal"] = hashlib.sha256(json.dumps({"key": "a", "payload": doc["payload"]}, sort_keys=True).encode()).hexdigest()
    (tmp_path / "a.json").write_text(json.dumps(doc))
    with pytest.warns(RuntimeWarning, match="seal does not verify"):
        assert cache.load("a") is None


def test_a_cache_whose_key_cannot_be_read_recomputes_without_moving_entries_aside(tmp_path):
    cache = StatsCache(tmp_path)
    key = cache_key({"model": "m"})
    cache.save(key, _stats())
    (tmp_path / "seal.key").write_bytes(b"short")
    with pytest.warns(RuntimeWarning, match="cannot be verified .*not a seal key"):
        assert cache.load(key) is None
    assert (tmp_path / f"{key}.json").exists()


def test_a_deleted_seal_key_is_named_once_and_its_entries_recomputed(tmp_path):
    cache = StatsCache(tmp_path)
    key = cache_key({"model": "m"})
    cache.save(key, _stats())
    (tmp_path / "seal.key").unlink()
    with pytest.warns(RuntimeWarning) as said:
        assert StatsCache(tmp_path).load(key) is None
    lines = [str(w.message) for w in said]
    assert any("its seal.key is gone, so none of its 1 entries can be verified" in m for m in lines), lines
    assert any("sealed with another seal.key" in m and "since deleted" in m for m in lines), lines


def test_a_summary_edited_and_sealed_again_with_the_folders_key_is_caught_by_its_sums(tmp_path):
    """Whoever can write the cache can read its key: a sidecar's avg cos edited and sealed again is still refused, as
    the summary's first-order numbers are recomputed from the entry's sums on load."""
    from aniso.common.seal import load_key, seal

    cache = StatsCache(tmp_path)
    key = cache_key({"model": "m"})
    cache.save(key, _stats())
    path = tmp_path / f"{key}.json"
    meta = json.loads(path.read_text())
    meta["summaries"][1]["mean_cosine"] = 0.95
    data_sha = hashlib.sha256((tmp_path / f"{key}.safetensors").read_bytes()).hexdigest()
    meta["seal"] = seal(load_key(tmp_path / "seal.key"), StatsCache._entry_text(data_sha, meta))
    path.write_text(json.dumps(meta))
    with pytest.warns(RuntimeWarning, match=r"layer 1: its summary's mean_cosine 0\.95 is not what its sums give"):
        assert cache.load(key) is None
