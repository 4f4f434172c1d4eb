"""Streamed accumulators equal their one-shot values whatever the batch split; the cache is safe."""

from __future__ import annotations

import json

import tracemalloc
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aniso import metrics
from aniso.stats.accumulators import LayerAccumulator
from aniso.stats.results import ModelStats
from aniso.stats.cache import StatsCache
from aniso.common.versions import cache_key


@st.composite
def stream_and_splits(draw):
    n = draw(st.integers(3, 120))
    d = draw(st.integers(2, 8))
    seed = draw(st.integers(0, 2**31))
    x = (np.random.default_rng(seed).standard_normal((n, d)) + draw(st.floats(-2, 2))).astype(np.float32)
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=6)))
    return x, cuts


def _feed(x, cuts, **kw):
    acc = LayerAccumulator(x.shape[1], **kw)
    for part in np.split(x, cuts):
        acc.update(part)
    return acc


@settings(deadline=None)
@given(stream_and_splits())
def test_streamed_equals_one_shot(data):
    x, cuts = data
    acc = _feed(x, cuts, reservoir_size=16, svd_batch_size=10, seed=3)
    x64 = x.astype(np.float64)
    assert acc.count == len(x)
    assert metrics.mean_cosine_from_unit_sum(acc.unit_sum, acc.n_nonzero) == pytest.approx(
        metrics.mean_cosine(x64), abs=1e-9)
    assert metrics.drift_norm_from_sum(acc.vector_sum, acc.count) == pytest.approx(metrics.drift_norm(x64), rel=1e-9)
    expected_svd = metrics.svd_anisotropy(x64)
    if not np.isnan(expected_svd):
        got = metrics.svd_anisotropy_from_moments(acc.vector_sum, acc.gram, acc.count)
        assert got == pytest.approx(expected_svd, rel=1e-5, abs=1e-7)
    full = len(x) // 10
    expected_batches = [metrics.svd_anisotropy(x64[i * 10 : (i + 1) * 10]) for i in range(full)]
    np.testing.assert_allclose(acc.batch_svd, expected_batches, rtol=1e-5, atol=1e-7)


@settings(deadline=None)
@given(stream_and_splits())
def test_reservoir_is_independent_of_the_split(data):
    x, cuts = data
    one_shot = _feed(x, [], reservoir_size=16, seed=7)
    split = _feed(x, cuts, reservoir_size=16, seed=7)
    np.testing.assert_array_equal(one_shot.reservoir_sample(), split.reservoir_sample())
    # Every kept vector is one of the inputs, each at most once.
    kept = {tuple(v) for v in split.reservoir_sample()}
    assert kept <= {tuple(v) for v in x}


def test_reservoir_is_uniform():
    """Each of 100 items lands in a 10-slot reservoir with probability 0.1 (chi-square over 2000 seeds)."""
    from scipy.stats import chisquare

    hits = np.zeros(100)
    x = np.arange(100, dtype=np.float32)[:, None] * np.ones((1, 2), np.float32)
    for seed in range(2000):
        acc = LayerAccumulator(2, reservoir_size=10, svd_batch_size=4096, seed=seed)
        for part in np.split(x, [7, 50, 51]):
            acc.update(part)
        hits[acc.reservoir_sample()[:, 0].astype(int)] += 1
    assert hits.sum() == 20000
    assert chisquare(hits).pvalue > 1e-3


def test_update_rejects_bad_shapes_and_values():
    acc = LayerAccumulator(3)
    with pytest.raises(ValueError, match=r"\(m, 3\)"):
        acc.update(np.ones((2, 4)))
    with pytest.raises(ValueError, match="NaN"):
        acc.update(np.array([[1.0, np.inf, 0.0]]))


def test_peak_memory_does_not_grow_with_tokens():
    """Feeding 10× more vectors must not raise the accumulator's peak allocation."""
    rng = np.random.default_rng(0)
    batch = rng.standard_normal((512, 64)).astype(np.float32)

    def peak(n_batches):
        acc = LayerAccumulator(64, reservoir_size=256, svd_batch_size=1024, seed=0)
        tracemalloc.start()
        for _ in range(n_batches):
            acc.update(batch)
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return top

    small, large = peak(4), peak(40)
    assert large <= small * 1.2 + 64_000


def _stats(seed=0):
    x = np.random.default_rng(seed).standard_normal((50, 4)).astype(np.float32)
    layers = [_feed(x, [20], reservoir_size=8, svd_batch_size=10, seed=i) for i in range(3)]
    return ModelStats("m", ["0", "1", "2"], layers, {"note": "test"})


def test_cache_round_trip(tmp_path):
    cache = StatsCache(tmp_path)
    key = cache_key({"model": "m", "corpus": "c"})
    assert cache.load(key) is None
    stats = _stats()
    cache.save(key, stats)
    loaded = cache.load(key)
    assert loaded is not None and loaded.layer_names == stats.layer_names
    for a, b in zip(stats.summaries(), loaded.summaries()):
        assert a == b
    for a, b in zip(stats.layers, loaded.layers):
        np.testing.assert_array_equal(a.gram, b.gram)
        np.testing.assert_array_equal(a.reservoir_sample(), b.reservoir_sample())
    assert not list(tmp_path.glob("*.tmp"))


@pytest.mark.parametrize("damage", ["truncate", "flip", "sidecar", "summary", "meta", "layer-name"])
def test_corrupt_cache_entry_warns_and_is_recomputed(tmp_path, damage):
    """Any byte the reader trusts, in the data file or in its JSON sidecar (the summaries a verdict reads, the
    metadata, the layer names), is covered by the entry's checksum: an edit makes the entry corrupt, recomputed."""
    cache = StatsCache(tmp_path)
    key = cache_key({"model": "m"})
    cache.save(key, _stats())
    data = tmp_path / f"{key}.safetensors"
    if damage == "truncate":
        data.write_bytes(data.read_bytes()[:100])
    elif damage == "flip":
        raw = bytearray(data.read_bytes())
        raw[-5] ^= 0xFF
        data.write_bytes(bytes(raw))
    elif damage == "sidecar":
        (tmp_path / f"{key}.json").write_text("{not json")
    else:  # a well-formed sidecar, edited: a summary's number, the metadata, a layer's name
        sidecar = tmp_path / f"{key}.json"
        meta = json.loads(sidecar.read_text())
        if damage == "summary":
            meta["summaries"][1]["mean_cosine"] = 0.99
        elif damage == "meta":
            meta["meta"]["note"] = "edited"
        else:
            meta["layer_names"][0] = "emb"
        sidecar.write_text(json.dumps(meta, indent=1))
    with pytest.warns(RuntimeWarning, match="corrupt or truncated"):
        assert cache.load(key) is None
    cache.save(key, _stats())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cache.load(key) is not None


def test_an_entry_being_written_is_absent_not_corrupt(tmp_path):
    """Data written, sidecar not yet (another process is saving the entry): absent, no warning, the data left in
    place; once the sidecar is there the entry loads. Found by two pytest-xdist workers: one read the entry while
    the other was computing its summaries, moved its data aside as corrupt and both computed it again."""
    cache = StatsCache(tmp_path)
    key = cache_key({"model": "m"})
    cache.save(key, _stats())
    sidecar = tmp_path / f"{key}.json"
    text = sidecar.read_text()
    sidecar.unlink()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cache.load(key) is None
    assert (tmp_path / f"{key}.safetensors").exists() and not list(tmp_path.glob("*.corrupt"))
    sidecar.write_text(text)
    assert cache.load(key) is not None


def test_cache_key_depends_on_every_part():
    base = {"model": "m", "corpus": "c", "settings": {"n": 1}}
    assert cache_key(base) == cache_key(dict(base))
    assert cache_key(base) != cache_key({**base, "corpus": "d"})
    assert cache_key(base) != cache_key({**base, "settings": {"n": 2}})
    assert cache_key(base) != cache_key({**base, "model": "n"})


def test_cache_key_names_the_library_versions(monkeypatch):
    """An entry written under another torch or transformers version is not found again."""
    import aniso.common.versions as versions

    base = {"model": "m", "corpus": "c"}
    before = cache_key(base)
    for dist in ("torch", "transformers", "onnxruntime"):
        changed = dict(versions.library_versions(), **{dist: "0.0.0-other"})
        monkeypatch.setattr(versions, "library_versions", lambda changed=changed: changed)
        assert cache_key(base) != before, dist
    monkeypatch.undo()
    assert cache_key(base) == before
    assert {"torch", "transformers", "numpy", "onnxruntime", "pillow"} <= set(versions.library_versions())

@given(st.integers(0, 2**32 - 1), st.integers(3, 40), st.integers(2, 12), st.floats(-3, 3))
def test_first_order_mode_matches_full_mode(seed, n, d, shift):
    """Without second order, avg cos, drift norm and mean norm are those of the full accumulator, whatever the
    split of the stream; the state round-trips."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((n, d)) + shift).astype(np.float32)
    split = int(rng.integers(0, n + 1))
    full, first = LayerAccumulator(d, 16, 8, 0), LayerAccumulator(d, second_order=False)
    full.update(x)
    first.update(x[:split])
    first.update(x[split:])
    a, b = full.summary(), first.summary()
    for k in ("mean_cosine", "drift_norm", "mean_norm"):
        assert np.isclose(getattr(a, k), getattr(b, k), rtol=1e-9, atol=1e-12)
    assert np.isnan(b.svd_anisotropy) and np.isnan(b.twonn) and first.gram is None
    again = LayerAccumulator.from_state(first.state())
    assert again.second_order is False
    assert np.isclose(again.summary().mean_cosine, b.mean_cosine, rtol=1e-12)


def test_first_order_state_is_o_of_d():
    acc = LayerAccumulator(400_000, second_order=False)
    acc.update(np.ones((2, 400_000), np.float32))
    assert sum(v.nbytes for v in acc.state().values()) < 10 * 400_000 * 8


def test_shuffled_batches_are_disjoint_full_and_independent_of_the_split():
    from aniso.stats.accumulators import ShuffledBatches

    x = np.arange(3000, dtype=np.float32)[:, None] * np.ones((1, 2), np.float32)
    whole, pieces = ShuffledBatches(2, 3, 200, seed=5), ShuffledBatches(2, 3, 200, seed=5)
    whole.update(x)
    for chunk in np.array_split(x, 7):
        pieces.update(chunk)
    a, b = whole.batches(), pieces.batches()
    assert len(a) == 3 and all(batch.shape == (200, 2) for batch in a)
    rows = np.concatenate([batch[:, 0] for batch in a])
    assert len(np.unique(rows)) == 600  # disjoint: no vector in two batches
    assert all(np.array_equal(p, q) for p, q in zip(a, b))
    assert all(abs(batch[:, 0].mean() - 1500) < 200 for batch in a)  # uniform samples of the stream


def test_shuffled_batches_give_no_twonn_until_a_batch_is_full():
    from aniso.stats.accumulators import ShuffledBatches

    bins = ShuffledBatches(4, 2, 100, seed=0)
    bins.update(np.random.default_rng(0).normal(size=(150, 4)).astype(np.float32))
    mean, std, n = bins.twonn()
    assert n == 0 and np.isnan(mean) and np.isnan(std)
    bins.update(np.random.default_rng(1).normal(size=(400, 4)).astype(np.float32))
    mean, std, n = bins.twonn()
    assert n == 2 and 2.5 < mean < 5.5 and std >= 0
