"""The update path of every streamed statistic waits for the device at most once per batch, SVD batches completed
with both left-out sets (the first token of each sequence, the massive-activation rows) included, counted by
aniso.bench.dispatch.HostSyncCounter (what a GPU would wait for) on the path a GPU takes (``wait_free``)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from aniso.bench.dispatch import HostSyncCounter
from aniso.stats.accumulators import LayerAccumulator, massive_rows
from aniso.stats.pipeline import COMPLEMENTS

FIRST, MASSIVE = COMPLEMENTS


def _batches(rng, n=5, d=16, sequences=4):
    """Batches of a few sequences each (rows labelled by input and position), one massive activation per batch
    in a row that is not a first token, and one in a first token every other batch (both marks on one row)."""
    for i in range(n):
        lengths = rng.integers(3, 12, size=sequences)
        m = int(lengths.sum())
        x = torch.from_numpy(rng.normal(size=(m, d)).astype(np.float32)) + 2.0
        x[1, 3] = 1.0e4
        if i % 2:
            x[0, 5] = 2.0e4
        yield (x, torch.from_numpy(np.repeat(np.arange(sequences), lengths)),
               torch.from_numpy(np.concatenate([np.arange(k) for k in lengths])))


def _accumulator(svd_batch_size=12, wait_free=True):
    return LayerAccumulator(16, reservoir_size=8, svd_batch_size=svd_batch_size, per_input=True,
                            complements=COMPLEMENTS, wait_free=wait_free)


def _marks(x, pos, wait_free=True):
    return {FIRST: pos == 0, MASSIVE: massive_rows(x, wait_free=wait_free)}


def test_an_update_that_completes_svd_batches_waits_once():
    """Updates of 12-40 rows into SVD batches of 12: each completes one to three batches, both left-out sets mark
    rows in them; one wait per update (its check, with how many rows of each completed batch each set marks),
    where each completed batch waited about 11 times (its marked rows found by nonzero, unique, .tolist(), its
    anisotropies by boolean masks and counts)."""
    rng = np.random.default_rng(11)
    acc = _accumulator()
    for x, labels, pos in _batches(rng):
        marks = _marks(x, pos)
        with HostSyncCounter() as sync:
            acc.update(x, labels, 4, pos, marks)
        assert sync.total <= 1, dict(sync.counts)
    assert len(acc.batch_svd) >= 5
    assert acc.excluded_count(FIRST) == 20 and acc.excluded_count(MASSIVE) == 7
    assert len(acc.complement(FIRST).batch_svd) == len(acc.batch_svd)


def test_the_pipelines_one_read_forms_the_svd_batches_and_gives_the_same_values():
    """With ``wait`` False the completed SVD batches wait for the caller's one read of the checks
    (:func:`read_checks`, several layers at once): no wait in the update itself, one in all for the read, and every
    value as the updates that read their own checks give them (bit for bit)."""
    from aniso.stats.accumulators import read_checks

    rng = np.random.default_rng(12)
    batches = list(_batches(rng, n=6))
    waited, deferred = _accumulator(), [_accumulator(), _accumulator()]
    for x, labels, pos in batches:
        waited.update(x, labels, 4, pos, _marks(x, pos))
        checks = []
        for acc in deferred:
            with HostSyncCounter() as sync:
                checks.append(acc.update(x, labels, 4, pos, _marks(x, pos), wait=False))
            assert sync.total == 0, dict(sync.counts)
        with HostSyncCounter() as sync:
            assert read_checks(list(zip(deferred, checks))) == [False, False]
        assert sync.total == 1, dict(sync.counts)
    for acc in deferred:
        assert acc.batch_svd == waited.batch_svd and len(acc.batch_svd) >= 6
        for name in COMPLEMENTS:
            assert acc.complement(name).batch_svd == waited.complement(name).batch_svd
        mine, theirs = acc.state(), waited.state()
        assert mine.keys() == theirs.keys()
        for key in mine:
            np.testing.assert_array_equal(mine[key], theirs[key], err_msg=key)


def test_an_update_left_unread_is_formed_at_the_next_use():
    """An update whose check nobody read (``wait`` False, no :func:`read_checks`) completes its SVD batches at the
    accumulator's next use, with the same values."""
    rng = np.random.default_rng(13)
    x, labels, pos = next(_batches(rng))
    waited, left = _accumulator(), _accumulator()
    waited.update(x, labels, 4, pos, _marks(x, pos))
    left.update(x, labels, 4, pos, _marks(x, pos), wait=False)
    assert left.batch_svd == waited.batch_svd and len(left.batch_svd) >= 1


def test_a_non_finite_batch_forms_no_svd_batch_and_is_named():
    """A NaN in an update that completes an SVD batch: the caller's read says so before any batch is formed from
    it, and the layer's error counts the rows; left unread, the next use raises that error."""
    from aniso.stats.accumulators import read_checks

    rng = np.random.default_rng(14)
    x, labels, pos = next(_batches(rng))
    x[2, 0] = float("nan")
    acc = _accumulator()
    check = acc.update(x, labels, 4, pos, _marks(x, pos), wait=False)
    assert read_checks([(acc, check)]) == [True]
    assert acc._second._batch_svd == []
    assert str(acc.update_error(x)).startswith("hidden states contain NaN or infinite values: 1 of ")
    other = _accumulator()
    other.update(x, labels, 4, pos, _marks(x, pos), wait=False)
    with pytest.raises(ValueError, match="NaN or infinite values: 1 of "):
        other.summary()


def test_compute_stats_every_statistic_waits_once_per_batch():
    """compute_stats with every streamed statistic of text layers (second order, per-input sums, both left-out
    sets, the final norm's input and output) over 5 batches of 3 layers, SVD batches of 64 rows (up to two
    completed per layer and batch), on the devices' path: at most one wait per batch, the summaries' reads at the
    end apart. Before, about 11 per completed SVD batch and 2 for the final norm's updates."""
    from aniso.common.settings import Settings
    from aniso.extract.hidden import Batch
    from aniso.registry.entries import ModelEntry
    from aniso.stats.pipeline import compute_stats

    entry = ModelEntry.model_validate(dict(id="m", modality="text", granularity="byte", architecture="transformer",
                                           role="decoder", family="llama", source=dict(kind="hub", repo="none/none")))
    rng = np.random.default_rng(15)
    batches = []
    for x, labels, pos in _batches(rng, sequences=16):
        layers = [x, x * 0.5 + 1.0, x.flip(1)]
        batches.append(Batch(layers, 16, inputs=[labels] * 3, positions=[pos] * 3,
                             without_first_states=lambda: None, final_norm=(layers[2], layers[2] * 2.0)))
    seen: list[int] = []

    def stream(sync):
        for batch in batches:
            seen.append(sync.total)
            yield batch
        seen.append(sync.total)

    settings = Settings(svd_batch_size=64, reservoir_size=128)
    with HostSyncCounter() as sync:
        stats = compute_stats(entry, stream(sync), ["0", "1", "2"], settings, {}, first_token_excluded=True,
                              wait_free=True)
    per_batch = np.diff(seen)
    assert per_batch.max() <= 1, (per_batch.tolist(), dict(sync.counts))
    assert min(len(acc.batch_svd) for acc in stats.layers) >= 5
    assert stats.meta["first_token_excluded"] is not None and stats.meta["final_norm"] is not None
    massive = stats.meta["massive_excluded"]
    assert all(rows >= 5 for rows in massive["rows"]) and massive["layers"] is not None
