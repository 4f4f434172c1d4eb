"""Extraction overhead: hidden states and the streamed statistics against a bare transformers forward pass.

Run: ``ANISO_CORPUS=../shared/data/text/wikitext-103_wiki.valid.tokens pytest benchmarks/test_bench_extraction.py
--benchmark-only`` (without the corpus, Python's documentation text is used). The variants are those of ``aniso
bench extraction`` (:mod:`aniso.bench.extraction`, which this file calls), on the packaged all-MiniLM-L6-v2 over the
same 64 paragraphs of at most 128 tokens, in the same batches, on the best device present:

- ``forward``: ``model(**batch, output_hidden_states=True)`` under ``torch.inference_mode`` (the baseline);
- ``hidden_states``: :func:`aniso.extract.hidden.iter_text_hidden_states` (the forward pass, padding removed);
- ``first_order``, ``all`` and ``every``: first-order statistics; with second-order ones (Σxxᵀ, batch-wise SVD
  anisotropy, reservoir); every streamed statistic (also the complements, final norm, attention sink, per-input
  sums).

The number to read is each row's time as a multiple of ``forward``'s.
"""

from __future__ import annotations

import os

import pytest

from aniso.bench.extraction import VARIANTS, _batch_order, best_device, load_subject, run_variant

N_SEQUENCES, MAX_LENGTH, BATCH = 64, 128, 16


@pytest.fixture(scope="module")
def subject():
    registry = os.path.join(os.path.dirname(__file__), "..", "models.yaml")
    return load_subject("all-MiniLM-L6-v2", paragraphs=N_SEQUENCES, max_length=MAX_LENGTH, batch_size=BATCH,
                        device=best_device(), registry=registry)


@pytest.mark.parametrize("variant", VARIANTS)
def test_extraction(benchmark, subject, variant):
    benchmark.group = (f"extraction all-MiniLM-L6-v2 {N_SEQUENCES} x <= {MAX_LENGTH} tokens "
                       f"({subject.corpus.name}, {subject.settings.device})")
    batches = _batch_order(subject)
    out = benchmark.pedantic(run_variant, args=(subject, variant, batches), rounds=3, iterations=1, warmup_rounds=1)
    if variant in ("first_order", "all", "every"):
        assert out.layers[0].count > 1000
