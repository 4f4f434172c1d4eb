"""The update path waits for the device at most once per batch: the hidden-state extraction and the layer
accumulators' updates, counted by aniso.bench.dispatch.HostSyncCounter (what a GPU would wait for)."""

from __future__ import annotations

import numpy as np
import torch

from aniso.bench.dispatch import HostSyncCounter
from aniso.stats.accumulators import LayerAccumulator


def test_the_counter_counts_each_kind_of_host_synchronisation():
    x = torch.arange(6.0)
    with HostSyncCounter() as sync:
        x.sum().item(), bool(x.any()), x[x > 2], x.nonzero(), x.cpu(), x.numpy(), x.tolist(), torch.bincount(x.long())
    assert sync.counts == {"_local_scalar_dense": 2, "index (boolean mask)": 1, "nonzero": 1, ".cpu()": 1,
                           ".numpy()": 1, ".tolist()": 1, "bincount": 1}
    with HostSyncCounter() as none:
        (x * 2).sum(), x.index_select(0, torch.tensor([1, 2])), x.to("cpu")
    assert none.total == 0


def test_work_marked_as_on_the_host_is_not_counted_and_the_read_before_it_is():
    from torch.profiler import ProfilerActivity, profile

    from aniso.bench.dispatch import launches
    from aniso.waits import on_host, working_on_host

    x = torch.arange(6.0)
    assert not working_on_host()
    with profile(activities=[ProfilerActivity.CPU]) as prof, HostSyncCounter() as sync:
        read = (x * 2).cpu()
        with on_host():
            assert working_on_host()
            with on_host():  # nested
                assert working_on_host()
            assert working_on_host()
            read.nonzero(), read.tolist(), bool(read.any()), read[read > 2], read.exp()
        assert not working_on_host()
        x.tolist()
    assert sync.counts == {".cpu()": 1, ".tolist()": 1}
    top = [e.name for e in prof.events() if e.cpu_parent is None and e.name.startswith("aten::") and launches(e)]
    assert top == ["aten::mul"], top  # the host block's operators are not top-level ones


def test_the_lanczos_checks_wait_once_each():
    """largest_eigenpair(s) above the dense solver's size: one read of α and β per check of convergence, every 8
    steps; the tridiagonal solves on the host are not counted."""
    from aniso import metrics

    gen = torch.Generator().manual_seed(0)
    y = torch.randn(400, 200, generator=gen, dtype=torch.float64) * torch.linspace(0.1, 3, 200, dtype=torch.float64)
    y[:, 0] *= 100  # a separated top (converges within 16 steps: two checks)
    c = y.T @ y
    for lockstep in (False, True):
        with HostSyncCounter() as sync:
            if lockstep:
                value = metrics._largest_eigenpairs(torch.stack([c, 2 * c]), lockstep=True)[0][0]
            else:
                value = metrics._largest_eigenpair(c)[0]
        torch.testing.assert_close(value, torch.linalg.eigvalsh(c)[-1], rtol=1e-9, atol=0)
        assert set(sync.counts) == {".cpu()"} and sync.total <= 2, (lockstep, dict(sync.counts))  # one read per check


def _batches(rng, n=6, d=16):
    for _ in range(n):
        lengths = rng.integers(1, 9, size=4)
        m = int(lengths.sum())
        yield (torch.from_numpy(rng.normal(size=(m, d)).astype(np.float32)),
               torch.from_numpy(np.repeat(np.arange(4), lengths)),
               torch.from_numpy(np.concatenate([np.arange(n) for n in lengths])))


def test_a_layer_update_waits_for_the_device_once():
    """First-order and second-order updates (per-input sums, positions, reservoir, no SVD batch completed): one
    host synchronisation each, the check that the batch is finite and its labels in range."""
    rng = np.random.default_rng(0)
    for second_order in (False, True):
        acc = LayerAccumulator(16, reservoir_size=8, svd_batch_size=4096, second_order=second_order, per_input=True)
        for x, labels, pos in _batches(rng):
            with HostSyncCounter() as sync:
                acc.update(x, labels, 4, pos)
            assert sync.total <= 1, (second_order, dict(sync.counts))


def test_the_extraction_waits_for_nothing():
    """A LLaMA-shaped model (2 blocks): padding is removed once per batch, with indices every layer shares, found
    from the tokenizer's attention mask on the host (no wait for the device)."""
    from aniso.bench.extraction import build_llama_7b, byte_tokenizer
    from aniso.extract.hidden import iter_text_hidden_states

    model, tok = build_llama_7b(2, dtype="float32", config="llama-tiny"), byte_tokenizer()
    texts = [" ".join(["tokens"] * n) for n in (1, 3, 7, 2, 9, 4, 5, 6)]
    batches = iter_text_hidden_states(model, tok, texts, batch_size=4, max_length=32, final_norm=True)
    seen = 0
    while True:
        with HostSyncCounter() as sync:
            batch = next(batches, None)
        if batch is None:
            break
        seen += 1
        assert sync.total == 0, dict(sync.counts)
        # the rows are the real tokens', as a boolean mask selects them (each sequence's from position 0)
        assert all(h.shape[0] == batch.inputs[0].shape[0] == batch.positions[0].shape[0] for h in batch.layers)
        assert batch.final_norm[1].shape == batch.layers[-1].shape
        torch.testing.assert_close(batch.final_norm[1], batch.layers[-1], rtol=0, atol=0)
        starts = torch.nonzero(batch.positions[0] == 0).squeeze(1)
        assert batch.inputs[0][starts].tolist() == list(range(4))
    assert seen == 2


def test_the_kept_maxima_are_the_same_with_and_without_reading_the_marks():
    """The per-complement maxima over the rows kept: read from the few marked rows (the CPU's way) or one masked
    reduction per mask without a wait (other devices'): the same values and rows, ties to the earlier row, -1 at row
    0 where a mask marks every row."""
    from aniso.stats.accumulators import _kept_maxima

    rng = np.random.default_rng(3)
    for trial in range(30):
        m, d = int(rng.integers(1, 12)), int(rng.integers(1, 6))
        ax = torch.from_numpy(rng.integers(0, 4, size=(m, d)).astype(np.float32))  # many ties
        masks = [torch.from_numpy(rng.random(m) < p) for p in (0.2, 0.6, 1.0 if trial % 5 == 0 else 0.0)]
        top, rows = ax.max(0)
        with HostSyncCounter() as sync:
            free = _kept_maxima(ax.clone(), top, rows, masks, wait_free=True)
        read = _kept_maxima(ax.clone(), top, rows, masks, wait_free=False)
        assert sync.total == 0
        for (t1, r1), (t2, r2) in zip(free, read):
            assert torch.equal(t1, t2) and torch.equal(r1, r2), (trial, ax, masks)


def test_the_pipeline_reads_every_layers_check_once_per_batch():
    """compute_stats over 4 batches of 3 layers (second order, per-input sums): one wait per batch for all layers'
    checks; a NaN in one layer is still named with its layer."""
    import pytest

    from aniso.common.settings import Settings
    from aniso.extract.hidden import Batch
    from aniso.registry.entries import ModelEntry
    from aniso.stats.pipeline import compute_stats

    entry = ModelEntry.model_validate(dict(id="m", modality="text", granularity="byte", architecture="transformer",
                                           role="decoder", family="llama", source=dict(kind="hub", repo="none/none")))
    rng = np.random.default_rng(4)
    batches = [Batch([x] * 3, 4, inputs=[labels] * 3, positions=[pos] * 3) for x, labels, pos in _batches(rng, 4)]
    with HostSyncCounter() as sync:
        stats = compute_stats(entry, iter(batches), ["0", "1", "2"], Settings(), {})
    assert stats.layers[2].count == sum(b.layers[0].shape[0] for b in batches)
    assert sync.total <= len(batches), dict(sync.counts)
    bad = batches[0].layers[0].clone()
    bad[1, 2] = float("nan")
    with pytest.raises(RuntimeError, match=r"^m: layer 1: hidden states contain NaN or infinite values: 1 of "):
        compute_stats(entry, iter([Batch([batches[0].layers[0], bad, bad], 4)]), ["0", "1", "2"], Settings(), {})


def test_every_statistics_update_reads_nothing_on_the_devices_path():
    """The layer update of every streamed statistic (second order, per-input sums, both complements: the first token
    of each sequence and the massive-activation rows, found by ``massive_rows``) with ``wait_free`` (a GPU's path,
    forced on the CPU): no host synchronisation at all with the check left to the caller, where no SVD batch
    completes. The CPU's own path reads the massive-activation criterion back (counted, so this test can fail)."""
    from aniso.stats.accumulators import massive_rows
    from aniso.stats.pipeline import COMPLEMENTS

    first, massive = COMPLEMENTS
    rng = np.random.default_rng(5)
    for wait_free in (True, False):
        acc = LayerAccumulator(16, reservoir_size=8, svd_batch_size=4096, per_input=True, complements=COMPLEMENTS,
                               wait_free=wait_free)
        total = 0
        for x, labels, pos in _batches(rng):
            x[0, 3] = 500.0  # a massive activation
            with HostSyncCounter() as sync:
                check = acc.update(x, labels, 4, pos, {first: pos == 0, massive: massive_rows(x, wait_free=wait_free)},
                                   wait=False)
            total += sync.total
            assert not bool(check)
        assert (total == 0) if wait_free else (total >= 6), (wait_free, total)
