"""Operators dispatched and host synchronisations per layer-batch of each extraction variant, counted on the CPU.

Run: ``ANISO_CORPUS=../shared/data/text/wikitext-103_wiki.valid.tokens pytest benchmarks/test_bench_dispatch.py
--benchmark-only`` (or ``python -m aniso.bench.dispatch`` for the JSON lines). A LLaMA-shaped model of width 64 with
2 blocks and random weights (``llama-tiny``) over 128 paragraphs of at most 128 tokens in batches of 16: the counts
(:mod:`aniso.bench.dispatch`: top-level aten operators from the torch profiler, and the operators and copies that
would make a GPU wait for the host) land in each row's ``extra_info``; the time is one run under the profiler.
"""

from __future__ import annotations

import pytest

from aniso.bench.dispatch import PATHS, count_variant
from aniso.bench.extraction import VARIANTS, llama_subject, run_variant


@pytest.fixture(scope="module")
def subject():
    subject = llama_subject("llama-tiny", layers=2, dtype="float32", paragraphs=128, max_length=128, batch_size=16,
                            device="cpu")
    for variant in VARIANTS:  # first calls initialise caches
        run_variant(subject, variant)
    return subject


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("variant", VARIANTS)
def test_dispatch_counts(benchmark, subject, variant, path):
    benchmark.group = f"operators and host synchronisations per layer-batch ({path} path), llama-tiny 2 blocks, 128 x <= 128"
    counts = benchmark.pedantic(count_variant, args=(subject, variant, path), rounds=1, iterations=1)
    benchmark.extra_info.update(counts)
    if variant in ("forward", "hidden_states"):
        assert counts["syncs"]["total"] == 0  # padding is found on the host
    else:
        assert counts["syncs"]["total"] >= counts["batches"]  # at least the read of the checks, one per batch


@pytest.mark.parametrize("dim", [384, 1024])
def test_svd_batch_close_counts(benchmark, dim):
    """One update that completes an SVD batch of 1,024 rows with both left-out sets, on the device path: the
    Lanczos iterations of the three sets run in lockstep (``aniso.bench.dispatch.count_svd_close``)."""
    from aniso.bench.dispatch import count_svd_close

    benchmark.group = "operators and host synchronisations of one SVD-batch close (device path)"
    counts = benchmark.pedantic(count_svd_close, args=(dim,), rounds=1, iterations=1)
    benchmark.extra_info.update(counts)
    assert len(counts["svd_anisotropy"]) == 3 and all(0 <= a <= 1 for a in counts["svd_anisotropy"])
