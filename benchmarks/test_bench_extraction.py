"""Extraction overhead: hidden states with every streamed statistic against a bare transformers forward pass.

Run: ``ANISO_CORPUS=../shared/data/text/wikitext-103_wiki.valid.tokens pytest benchmarks/test_bench_extraction.py
--benchmark-only`` (without the corpus, Python's documentation text is used). Rows of the one group, on the packaged
all-MiniLM-L6-v2 over the same 64 paragraphs of at most 128 tokens, in the same batches:

- ``forward``: ``model(**batch, output_hidden_states=True)`` under ``torch.inference_mode`` (the baseline);
- ``hidden-states``: :func:`aniso.extract.iter_text_hidden_states` (the forward pass, padding removed);
- ``first-order`` and ``all-statistics``: :func:`aniso.pipeline.compute_stats` over those batches with the
  first-order statistics only, and with every statistic (Σxxᵀ, batch-wise SVD anisotropy, reservoir).

The number to read is each row's time as a multiple of ``forward``'s.
"""

from __future__ import annotations

import os

import pytest
import torch

from aniso.extract import _prepare_tokenizer, iter_text_hidden_states, layer_names
from aniso.inputs.text import load_corpus
from aniso.pipeline import compute_stats
from aniso.registry import load_registry
from aniso.settings import Settings
from aniso.sources import load_model

N_SEQUENCES, MAX_LENGTH, BATCH = 64, 128, 16


@pytest.fixture(scope="module")
def setup():
    registry = load_registry(os.path.join(os.path.dirname(__file__), "..", "models.yaml"))
    entry = registry.get("all-MiniLM-L6-v2")
    loaded = load_model(entry, None)
    corpus = load_corpus(os.environ.get("ANISO_CORPUS") or None, N_SEQUENCES, 0)
    return entry, loaded, corpus


def _forward(loaded, texts):
    tok = loaded.tokenizer
    _prepare_tokenizer(tok)
    ordered = sorted(texts, key=len)
    with torch.inference_mode():
        for s in range(0, len(ordered), BATCH):
            batch = tok(list(ordered[s : s + BATCH]), padding=True, truncation=True, max_length=MAX_LENGTH,
                        return_tensors="pt")
            loaded.model(**batch, output_hidden_states=True)


def _hidden_states(loaded, texts):
    for _ in iter_text_hidden_states(loaded.model, loaded.tokenizer, texts, batch_size=BATCH, max_length=MAX_LENGTH):
        pass


def _statistics(entry, loaded, texts, second_order):
    settings = Settings.from_sources({}, environ={})
    batches = iter_text_hidden_states(loaded.model, loaded.tokenizer, texts, batch_size=BATCH, max_length=MAX_LENGTH)
    return compute_stats(entry, batches, layer_names(loaded.model), settings, {}, second_order=second_order)


@pytest.mark.parametrize("row", ["forward", "hidden-states", "first-order", "all-statistics"])
def test_extraction(benchmark, setup, row):
    entry, loaded, corpus = setup
    benchmark.group = f"extraction all-MiniLM-L6-v2 {N_SEQUENCES} x <= {MAX_LENGTH} tokens ({corpus.name})"
    texts = corpus.sequences
    run = {"forward": lambda: _forward(loaded, texts), "hidden-states": lambda: _hidden_states(loaded, texts),
           "first-order": lambda: _statistics(entry, loaded, texts, False),
           "all-statistics": lambda: _statistics(entry, loaded, texts, True)}[row]
    out = benchmark.pedantic(run, rounds=3, iterations=1, warmup_rounds=1)
    if row in ("first-order", "all-statistics"):
        assert out.layers[0].count > 1000
