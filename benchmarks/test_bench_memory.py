"""Peak memory of streamed statistics: flat in the number of tokens, O(d) per layer with first-order claims only.

Run: ``ANISO_CORPUS=../shared/data/text/wikitext-103_wiki.valid.tokens pytest benchmarks/test_bench_memory.py
--benchmark-only``. Each row runs in a fresh Python process and reports its peak resident set size
(``ru_maxrss``) in ``extra_info``:

- ``minilm-1x``, ``-4x``, ``-8x``: all-MiniLM-L6-v2 with every statistic (Σxxᵀ, SVD batches, reservoir, and the
  first-token-excluded set) over 128, 512 and 1,024 paragraphs of at most 128 tokens, with the C allocator's
  defaults: the peak grows by about 15% from 1× to 8×, which is heap fragmentation (glibc moves its mmap threshold
  up as batches of varying shapes are freed), not the statistics;
- ``minilm-1x-mmap``, ``minilm-8x-mmap``: the same with ``MALLOC_MMAP_THRESHOLD_=65536`` (large blocks always
  mapped and returned): the 8× peak must stay within 10% of the 1× peak;
- ``wide-first-order``: a randomly initialised 2-layer Llama of width 4,096 over 64 paragraphs with first-order
  statistics only (what a run of first-order claims keeps): the peak beyond the model's own weights is reported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

_CHILD = r"""
import json, os, resource, sys
import torch
from aniso.extract.hidden import iter_text_hidden_states, layer_names
from aniso.inputs.text import load_corpus
from aniso.stats.pipeline import compute_stats
from aniso.registry.entries import ModelEntry, load_registry
from aniso.common.settings import Settings
from aniso.sources import load_model

kind, n = sys.argv[1], int(sys.argv[2])
corpus = load_corpus(os.environ.get("ANISO_CORPUS") or None, n, 0)
settings = Settings.from_sources({}, environ={})
if kind == "minilm":
    entry = load_registry(sys.argv[3]).get("all-MiniLM-L6-v2")
    loaded = load_model(entry, None)
    model, tok, second = loaded.model, loaded.tokenizer, True
else:
    from transformers import LlamaConfig, LlamaModel
    from aniso.extract.modalities import _subword_tokenizer
    entry = ModelEntry.model_validate(dict(id="wide", modality="text", granularity="subword", architecture="transformer",
                                           role="decoder", family="llama", source=dict(kind="hub", repo="none/none")))
    torch.manual_seed(0)
    model = LlamaModel(LlamaConfig(hidden_size=4096, intermediate_size=4096, num_hidden_layers=2,
                                   num_attention_heads=32, num_key_value_heads=8, vocab_size=300)).eval()
    tok, second = _subword_tokenizer(300), False
weights = sum(p.numel() * p.element_size() for p in model.parameters())
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
batches = iter_text_hidden_states(model, tok, corpus.sequences, batch_size=16, max_length=128)
stats = compute_stats(entry, batches, layer_names(model), settings, {}, second_order=second,
                      first_token_excluded=second)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"peak": peak, "before": base, "weights": weights, "tokens": stats.layers[0].count}))
"""

_PEAKS: dict[str, dict] = {}
MMAP = {"MALLOC_MMAP_THRESHOLD_": "65536"}
ROWS = {"minilm-1x": ("minilm", 128, {}), "minilm-4x": ("minilm", 512, {}), "minilm-8x": ("minilm", 1024, {}),
        "minilm-1x-mmap": ("minilm", 128, MMAP), "minilm-8x-mmap": ("minilm", 1024, MMAP),
        "wide-first-order": ("wide", 64, {})}


def _measure(kind: str, n: int, env: dict) -> dict:
    registry = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models.yaml")
    out = subprocess.run([sys.executable, "-c", _CHILD, kind, str(n), registry], capture_output=True, text=True,
                         check=True, timeout=1800, env=os.environ | env)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("row", list(ROWS))
def test_peak_memory(benchmark, row):
    benchmark.group = "peak RSS of streamed statistics"
    got = benchmark.pedantic(_measure, args=ROWS[row], rounds=1, iterations=1)
    mb = {k: round(v / 2**20, 1) for k, v in got.items() if k != "tokens"}
    benchmark.extra_info.update({"tokens": got["tokens"], "peak_mb": mb["peak"], "weights_mb": mb["weights"],
                                 "before_extraction_mb": mb["before"]})
    _PEAKS[row] = got
    first = _PEAKS.get(row.replace("8x", "1x"))
    if "8x" in row and first is not None:
        benchmark.extra_info["growth_over_1x"] = round(got["peak"] / first["peak"] - 1, 4)
        assert got["tokens"] >= 6 * first["tokens"]
        if row.endswith("-mmap"):
            assert got["peak"] <= 1.10 * first["peak"], (first, got)
