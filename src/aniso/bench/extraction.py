"""What hidden-state extraction and the streamed statistics cost next to a bare forward pass (``aniso bench
extraction``; ``benchmarks/test_bench_extraction.py`` and ``benchmarks/test_bench_memory.py`` call the same code).

Variants (:data:`VARIANTS`), each run over the same paragraphs in the same batches (sorted by token length, as
:func:`aniso.extract.hidden.iter_text_hidden_states` batches them):

- ``forward``: ``model(**batch, output_hidden_states=True)`` under ``torch.inference_mode`` (the baseline);
- ``hidden_states``: :func:`aniso.extract.hidden.iter_text_hidden_states` (the forward pass, padding removed on the
  device, states kept there in the model's dtype);
- ``first_order``: :func:`aniso.stats.pipeline.compute_stats` with first-order statistics only (O(d) per layer);
- ``all``: the same with second-order statistics too (Σxxᵀ, batch-wise SVD anisotropy, reservoir:
  ``second_order=True``);
- ``every``: :func:`aniso.stats.pipeline.compute_model_stats` with every streamed statistic (:data:`STREAMED`: also the
  first-token-excluded set, the final normalisation's input and output, the attention sink read from the queries
  and keys of the model's own attention, per-input sums). The embedding matrices' partition isotropy (``embedding-isotropy``) does not depend on the inputs,
  so it is timed once on its own (``embedding_isotropy_s``), not as a multiple of the forward pass.

Each variant's time is the best (minimum) of ``repeats`` runs after one warm-up run of each; the variants are run
interleaved (round-robin), so that noise from other processes hits them alike. Peak memory is measured in fresh
processes (``python -m aniso.bench.extraction --child SPEC``) running ``every`` on 1x and 8x the paragraphs: on the
CPU the peak resident set size (Linux: ``VmHWM``, reset once the model is loaded, since loading can peak higher
than extraction; elsewhere ``ru_maxrss``), on CUDA ``torch.cuda.max_memory_allocated``; growth = peak(8x) /
peak(1x) - 1. Both peaks include the model's weights.

``llama-7b`` (:func:`build_llama_7b`) is a transformers Llama with the LLaMA-7B configuration (Touvron et al. 2023:
hidden 4,096, 32 heads, MLP 11,008, vocabulary 32,000, RMSNorm, rotary positions) and random weights, built on
the ``meta`` device and filled by a seeded normal initialisation (no download), with a byte-level tokenizer built
here; ``layers`` sets how many of its 32 blocks are built.
"""

from __future__ import annotations

import json
import math
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from ..common.devices import best_device, resident_bytes

__all__ = ["VARIANTS", "STREAMED", "CONFIGS", "Subject", "best_device", "load_subject", "llama_subject",
           "build_llama_7b", "byte_tokenizer", "run_variant", "time_variants", "peak_memory", "memory_growth",
           "bench_extraction", "format_table"]

#: The timed variants, in the order they run in each round (see the module docstring).
VARIANTS = ("forward", "hidden_states", "first_order", "all", "every")

#: Random-weight configurations ``--config`` can build (see :func:`build_llama_7b`): LLaMA-7B's and LLaMA-2-13B's
#: shapes, and a tiny model of the same architecture (for counting operators and measuring the statistics' state in
#: seconds on a CPU).
CONFIGS = ("llama-7b", "llama-13b", "llama-tiny")

#: LLaMA-7B's shape (Touvron et al. 2023, Table 2; the ``config.json`` of meta-llama/Llama-2-7b-hf).
LLAMA_7B = dict(hidden_size=4096, num_attention_heads=32, num_key_value_heads=32, intermediate_size=11008,
                vocab_size=32000, rms_norm_eps=1e-5, max_position_embeddings=4096, hidden_act="silu",
                rope_theta=10000.0, tie_word_embeddings=False)

#: LLaMA-2-13B's shape (Touvron et al. 2023b, Table 1; the ``config.json`` of meta-llama/Llama-2-13b-hf): hidden
#: 5,120, 40 heads, MLP 13,824, 40 blocks.
LLAMA_13B = dict(LLAMA_7B, hidden_size=5120, num_attention_heads=40, num_key_value_heads=40, intermediate_size=13824)

#: A LLaMA of the same architecture at hidden 64 (4 heads of 16, MLP 172), with the byte tokenizer's 260 ids.
LLAMA_TINY = dict(LLAMA_7B, hidden_size=64, num_attention_heads=4, num_key_value_heads=4, intermediate_size=172,
                  vocab_size=260)

_SHAPES = {"llama-7b": LLAMA_7B, "llama-13b": LLAMA_13B, "llama-tiny": LLAMA_TINY}

#: The blocks each configuration has (LLaMA-7B 32, LLaMA-2-13B 40; the tiny model stands in for LLaMA-7B's 32):
#: ``layers`` above these are refused, since they would build a model of another depth than the one named.
BLOCKS = {"llama-7b": 32, "llama-13b": 40, "llama-tiny": 32}


def _streamed() -> frozenset[str]:
    from ..stats.pipeline import ALL_STATISTICS, EMBEDDING_ISOTROPY

    return frozenset(ALL_STATISTICS - {EMBEDDING_ISOTROPY})


#: Every statistic that is streamed over the inputs (``ALL_STATISTICS`` but the embedding isotropy).
STREAMED = _streamed()


@dataclass
class Subject:
    """A model, its inputs and the extraction settings of one benchmark.

    ``loaded`` is a :class:`aniso.sources.LoadedModel`; ``corpus`` a :class:`aniso.inputs.text.Corpus`; ``settings``
    an :class:`aniso.common.settings.Settings` whose ``batch_size``, ``max_length`` and ``device`` are the benchmark's;
    ``spec`` is what a fresh process needs to build the same subject (:func:`subject_from_spec`).
    """

    loaded: object
    corpus: object
    settings: object
    spec: dict

    @property
    def entry(self):
        return self.loaded.entry

    @property
    def model(self):
        return self.loaded.model

    @property
    def texts(self) -> tuple[str, ...]:
        return tuple(self.corpus.sequences)


def _settings(paragraphs: int, max_length: int, batch_size: int, device: str, registry: str | None = None):
    from ..common.settings import Settings

    options = {"n_sequences": paragraphs, "max_length": max_length, "batch_size": batch_size, "device": device,
               "registry": registry}
    return Settings.from_sources(options)


def _corpus(settings, whole: bool = False):
    """The corpus's ``settings.n_sequences`` paragraphs. Raises ValueError (one line naming ``--paragraphs``) when
    the corpus holds fewer, unless ``whole`` (the peak-memory processes' 8x, which take the corpus whole), and one
    naming setting ``corpus`` when its file cannot be read (:func:`aniso.registry.locate.check_corpus`)."""
    from ..inputs.text import load_corpus
    from ..registry.locate import check_corpus

    check_corpus(settings)  # a bad corpus named as the setting that gave it, as at every other door
    corpus = load_corpus(settings.corpus, settings.n_sequences, settings.seed)
    if not whole and settings.n_sequences > len(corpus.sequences):
        raise ValueError(f"--paragraphs {settings.n_sequences}: the corpus ({corpus.label.split(';')[0]}) holds "
                         f"{len(corpus.sequences)} paragraphs; give at most {len(corpus.sequences)}")
    return corpus


def load_subject(model_id: str, *, paragraphs: int = 256, max_length: int = 128, batch_size: int = 16,
                 device: str = "cpu", registry: str | None = None, whole_corpus: bool = False) -> Subject:
    """The registry model ``model_id`` (loaded as ``aniso run`` loads it) on ``paragraphs`` paragraphs of the run's
    corpus (setting ``corpus``, i.e. ``ANISO_CORPUS``; else the fallback text).

    Raises KeyError naming the model when the registry has no such id, :class:`aniso.sources.ModelUnavailable` when
    its weights cannot be loaded, ValueError for a non-text model, a bad setting or more ``paragraphs`` than the
    corpus holds (unless ``whole_corpus``: then it is taken whole), and :class:`aniso.inputs.text.CorpusError` for
    an unreadable corpus.
    """
    from ..stats.pipeline import StatsProvider
    from ..registry.locate import open_registry, registry_path, registry_source
    from ..sources import load_model

    settings = _settings(paragraphs, max_length, batch_size, device, registry)
    reg = open_registry(registry_path(registry, settings.registry), registry_source(registry, settings.registry))
    entry = reg.get(model_id)
    from ..extract.modalities import modality_of

    if not getattr(modality_of(entry), "tokens", False):  # the bench's inputs are paragraphs of a corpus
        raise ValueError(f"{model_id}: aniso bench extraction measures text models, this one is {entry.modality!r}")
    corpus = _corpus(settings, whole_corpus)  # before the model is loaded
    loaded = load_model(entry, StatsProvider(settings, reg).source_context)
    spec = dict(model=model_id, paragraphs=paragraphs, max_length=max_length, batch_size=batch_size, device=device,
                registry=settings.registry)
    return Subject(loaded, corpus, settings, spec)


def byte_tokenizer():
    """A byte-level tokenizer built here (no files, no hub): one token per UTF-8 byte (ids 4..259, GPT-2's byte
    alphabet) after the special tokens ``<pad>`` 0, ``<unk>`` 1, ``<s>`` 2 (prepended to every sequence) and ``</s>`` 3.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    specials = ["<pad>", "<unk>", "<s>", "</s>"]
    vocab = {t: i for i, t in enumerate(specials + sorted(pre_tokenizers.ByteLevel.alphabet()))}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 2)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", unk_token="<unk>", bos_token="<s>",
                                   eos_token="</s>")


def build_llama_7b(layers: int = 32, *, dtype: str = "bfloat16", device: str = "cpu", seed: int = 0,
                   config: str = "llama-7b"):
    """A transformers ``LlamaModel`` with LLaMA-7B's configuration (:data:`LLAMA_7B`) and ``layers`` blocks, random
    weights: built on the ``meta`` device, materialised on ``device`` in ``dtype`` (``bfloat16`` or ``float32``),
    then every matrix drawn from N(0, 0.02²) with a generator seeded by ``seed`` and every RMSNorm weight set to 1.
    At 2 blocks it holds 536 M parameters (1.07 GB in bfloat16), at 32 blocks 6.6 G (13.2 GB).

    ``config`` ``llama-13b`` builds :data:`LLAMA_13B` (13.0 G parameters at 40 blocks, 26 GB in bfloat16) and
    ``llama-tiny`` :data:`LLAMA_TINY` instead.

    Raises ValueError when ``layers`` is not from 1 to the configuration's blocks (:data:`BLOCKS`) or ``dtype`` is
    neither ``bfloat16`` nor ``float32``.
    """
    from transformers import LlamaConfig, LlamaModel

    if config not in CONFIGS:
        raise ValueError(f"--config must be one of {', '.join(CONFIGS)}, got {config!r}")
    if layers < 1:
        raise ValueError(f"--layers must be >= 1, got {layers}")
    if layers > BLOCKS[config]:
        raise ValueError(f"--layers {layers}: {config} has {BLOCKS[config]} blocks; give 1 to {BLOCKS[config]}")
    dtypes = {"bfloat16": torch.bfloat16, "float32": torch.float32}
    if dtype not in dtypes:
        raise ValueError(f"--dtype must be one of {sorted(dtypes)}, got {dtype!r}")
    config = LlamaConfig(**_SHAPES[config], num_hidden_layers=layers, pad_token_id=0, bos_token_id=2, eos_token_id=3)
    with torch.device("meta"):
        model = LlamaModel(config)
    model = model.to(dtypes[dtype]).to_empty(device=device)
    gen = torch.Generator(device=device).manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.ndim == 1:
                p.fill_(1.0)  # RMSNorm weights
            else:
                p.normal_(0.0, 0.02, generator=gen)
    # The rotary frequencies are buffers computed at construction (left empty by to_empty): compute them again.
    model.rotary_emb = type(model.rotary_emb)(config).to(device)
    return model.eval()


def llama_subject(config: str = "llama-7b", *, layers: int = 32, dtype: str = "bfloat16", paragraphs: int = 256,
                  max_length: int = 128, batch_size: int = 16, device: str = "cpu", seed: int = 0,
                  whole_corpus: bool = False) -> Subject:
    """A random-weight model of configuration ``config`` (:data:`CONFIGS`; :func:`build_llama_7b`) with
    :func:`byte_tokenizer`, on ``paragraphs`` paragraphs of the run's corpus. The model is built directly on the run's
    device (``device``, resolved as the ``device`` setting is): a 7B model is never materialised on the host first.
    Its random weights depend on the device's generator (same seed, same device, same weights).

    Raises ValueError for an unknown configuration, ``layers`` not from 1 to its blocks (:data:`BLOCKS`), an
    unknown ``dtype``, or more ``paragraphs`` than the corpus holds (unless ``whole_corpus``: then it is taken whole).
    """
    from ..registry.entries import ModelEntry
    from ..sources import LoadedModel

    if config not in CONFIGS:
        raise ValueError(f"--config must be one of {', '.join(CONFIGS)}, got {config!r}")
    settings = _settings(paragraphs, max_length, batch_size, device)
    corpus = _corpus(settings, whole_corpus)  # before the model is built
    model = build_llama_7b(layers, dtype=dtype, device=settings.device, seed=seed, config=config)
    entry = ModelEntry.model_validate(dict(
        id=f"{config}-random-{layers}l", modality="text", granularity="byte", architecture="transformer",
        role="decoder", family="llama", source=dict(kind="hub", repo="none/none")))
    loaded = LoadedModel(entry, model, byte_tokenizer(), origin=f"random {config} ({layers} layers, {dtype}, "
                                                                f"seed {seed})")
    spec = dict(config=config, layers=layers, dtype=dtype, paragraphs=paragraphs, max_length=max_length,
                batch_size=batch_size, device=device, seed=seed)
    return Subject(loaded, corpus, settings, spec)


def subject_from_spec(spec: dict) -> Subject:
    """The subject :attr:`Subject.spec` describes (what a fresh process of :func:`peak_memory` builds)."""
    spec = dict(spec, whole_corpus=True)  # 8x the paragraphs may take the corpus whole
    if "config" in spec:
        return llama_subject(**spec)
    return load_subject(spec.pop("model"), **spec)


def _sync(device: str) -> None:
    if str(device).startswith("cuda"):
        torch.cuda.synchronize()
    elif str(device).startswith("mps"):
        torch.mps.synchronize()


def _batch_order(subject: Subject) -> list[list[str]]:
    """The paragraphs in the batches the extraction forms: sorted by (token length, index), ``batch_size`` each."""
    tok, s = subject.loaded.tokenizer, subject.settings
    max_length = s.max_length
    positions = getattr(subject.model.config, "max_position_embeddings", None)
    if isinstance(positions, int) and positions > 0:
        max_length = min(max_length, positions)
    texts = subject.texts
    lengths = [len(ids) for ids in tok(list(texts), truncation=True, max_length=max_length)["input_ids"]]
    order = sorted(range(len(texts)), key=lambda i: (lengths[i], i))
    return [[texts[i] for i in order[b : b + s.batch_size]] for b in range(0, len(order), s.batch_size)]


def _forward(subject: Subject, batches: list[list[str]]) -> None:
    model, tok, s = subject.model, subject.loaded.tokenizer, subject.settings
    tok.padding_side = tok.truncation_side = "right"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token or tok.unk_token
    model.to(s.device)
    with torch.inference_mode():
        for chunk in batches:
            enc = tok(chunk, padding=True, truncation=True, max_length=s.max_length, return_tensors="pt")
            inputs = {k: v.to(s.device) for k, v in enc.items() if k in ("input_ids", "attention_mask",
                                                                         "token_type_ids")}
            model(**inputs, output_hidden_states=True)
    _sync(s.device)


def run_variant(subject: Subject, variant: str, batches: list[list[str]] | None = None,
                wait_free: bool | None = None):
    """Run one variant (:data:`VARIANTS`) of the benchmark once; returns the :class:`aniso.stats.results.ModelStats` of the
    statistics variants, None for ``forward`` and ``hidden_states``. ``batches``: the paragraphs already grouped
    (:func:`_batch_order`; for ``forward`` only). Every variant runs the model's own attention. ``wait_free``: the
    statistics' update paths that read nothing back to the host, also on the CPU (see
    :func:`aniso.stats.pipeline.compute_stats`; default: off the CPU only).

    Raises ValueError for an unknown variant.
    """
    from ..extract.hidden import iter_text_hidden_states, layer_names
    from ..extract.modalities import modality_of
    from ..stats.pipeline import compute_model_stats, compute_stats

    s, model, tok = subject.settings, subject.model, subject.loaded.tokenizer
    if variant == "forward":
        _forward(subject, batches if batches is not None else _batch_order(subject))
        return None
    if variant == "every":
        stats = compute_model_stats(subject.loaded, modality_of(subject.entry), subject.corpus, s, "benchmark",
                                    statistics=STREAMED, wait_free=wait_free)
        _sync(s.device)
        return stats
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; one of {', '.join(VARIANTS)}")
    states = iter_text_hidden_states(model, tok, subject.texts, batch_size=s.batch_size, max_length=s.max_length,
                                     device=s.device)
    if variant == "hidden_states":
        for _ in states:
            pass
        _sync(s.device)
        return None
    stats = compute_stats(subject.entry, states, layer_names(model), s, {}, second_order=variant == "all",
                          wait_free=wait_free)
    _sync(s.device)
    return stats


def time_variants(subject: Subject, variants=VARIANTS, repeats: int = 3, warmup: bool = True,
                  rounds: dict | None = None) -> tuple[dict, dict]:
    """Seconds of each variant: the minimum over ``repeats`` interleaved rounds (each round runs every variant once,
    in order), after one warm-up round when ``warmup``. Returns (seconds by variant, the last ModelStats by
    variant for the statistics variants); ``rounds``, when given, receives every timed round's seconds by variant.

    Raises ValueError when ``repeats`` < 1.
    """
    if repeats < 1:
        raise ValueError(f"--repeats must be >= 1, got {repeats}")
    batches = _batch_order(subject)
    best = {v: math.inf for v in variants}
    stats = {}
    for r in range(repeats + (1 if warmup else 0)):
        for v in variants:
            t0 = time.perf_counter()
            out = run_variant(subject, v, batches)
            dt = time.perf_counter() - t0
            if out is not None:
                stats[v] = out
            if r > 0 or not warmup:
                best[v] = min(best[v], dt)
                if rounds is not None:
                    rounds.setdefault(v, []).append(dt)
    return best, stats


def _reset_rss_peak() -> bool:
    """Reset this process's peak resident set size (Linux >= 4.0: ``5`` into ``/proc/self/clear_refs`` resets
    ``VmHWM``), so that the peak read later is that of the extraction, not of loading the model (whose transient
    copies can exceed it). False where it cannot be reset (then ``ru_maxrss``, the peak since the start, is read)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return _vm_hwm() is not None
    except OSError:
        return False


def _vm_hwm() -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _child(spec_json: str) -> None:
    """Entry point of the fresh processes of :func:`peak_memory`: build the subject, run ``every`` once, print one
    JSON line: ``peak`` (bytes) during the extraction, ``before`` (bytes held once the model is loaded), ``tokens``,
    ``device`` and ``measure`` (what was read)."""
    import gc

    subject = subject_from_spec(json.loads(spec_json))
    device = str(subject.settings.device)
    gc.collect()
    if device.startswith("cuda"):
        subject.model.to(device)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before, measure = int(torch.cuda.memory_allocated()), "torch.cuda.max_memory_allocated"
    elif _reset_rss_peak():
        before, measure = resident_bytes() or 0, "VmHWM (peak RSS, reset once the model is loaded)"
    else:
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        before, measure = int(rss if platform.system() == "Darwin" else rss * 1024), "ru_maxrss"
    stats = run_variant(subject, "every")
    if device.startswith("cuda"):
        peak = int(torch.cuda.max_memory_allocated())
    elif measure.startswith("VmHWM"):
        peak = _vm_hwm() or 0
    else:
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # bytes on macOS, KiB on Linux
        peak = int(rss if platform.system() == "Darwin" else rss * 1024)
    print(json.dumps({"peak": peak, "before": before, "tokens": stats.layers[0].count, "device": device,
                      "measure": measure}))


def peak_memory(spec: dict, factor: int = 1, timeout: float = 3600) -> dict:
    """Peak memory (bytes) of ``every`` on ``factor`` x ``spec["paragraphs"]`` paragraphs, in a fresh Python process:
    {"peak", "before" (held once the model is loaded), "tokens", "device", "measure"} (see :func:`_child`).

    Raises RuntimeError with the child's last line of error output when it fails.
    """
    spec = dict(spec, paragraphs=spec["paragraphs"] * factor)
    src = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([src] + [p for p in [os.environ.get("PYTHONPATH")] if p]),
               ANISO_PROGRESS="0")
    out = subprocess.run([sys.executable, "-m", "aniso.bench.extraction", "--child", json.dumps(spec)],
                         capture_output=True, text=True, timeout=timeout, env=env)
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"peak-memory process for {spec.get('model') or spec.get('config')} x{factor} failed: "
                           f"{last}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def memory_growth(spec: dict, factor: int = 8) -> dict:
    """Peak memory at 1x and ``factor`` x the paragraphs, in two fresh processes, one after the other:
    {"peak_1x_mb", "peak_8x_mb", "before_1x_mb", "tokens_1x", "tokens_8x", "growth"} with growth = peak(8x) /
    peak(1x) - 1."""
    one, many = peak_memory(spec, 1), peak_memory(spec, factor)
    mb = 2.0 ** 20
    return {"peak_1x_mb": round(one["peak"] / mb, 1), f"peak_{factor}x_mb": round(many["peak"] / mb, 1),
            "before_1x_mb": round(one["before"] / mb, 1), "tokens_1x": one["tokens"],
            f"tokens_{factor}x": many["tokens"], "growth": round(many["peak"] / one["peak"] - 1, 4),
            "measure": one["measure"]}


def _statistics_check(stats) -> dict:
    """What the ``every`` run computed, and whether all its per-layer numbers are finite."""
    summaries = stats.summaries()
    numbers = [v for s in summaries for v in (s.mean_cosine, s.drift_norm, s.mean_norm)]
    meta = stats.meta
    aside = meta.get("first_token_excluded") or []
    numbers += [d["mean_cosine"] for d in aside]
    norm = meta.get("final_norm") or {}
    numbers += [norm[k]["mean_cosine"] for k in ("before", "after") if k in norm]
    sink = meta.get("attention_sink")
    return {"layers": len(summaries), "tokens": stats.layers[0].count,
            "mean_cosine": [round(s.mean_cosine, 6) for s in summaries],
            "kept": sorted(k for k in ("first_token_excluded", "final_norm", "attention_sink") if meta.get(k)),
            "finite": all(v is not None and math.isfinite(v) for v in numbers) and sink is not None}


def bench_extraction(subject: Subject, *, repeats: int = 3, warmup: bool = True, memory: bool = True,
                     embedding_isotropy: bool = True) -> dict:
    """Time the variants on ``subject`` (:func:`time_variants`), measure the memory growth from 1x to 8x the
    paragraphs (:func:`memory_growth`, when ``memory``) and the embedding isotropy's one-off time (when
    ``embedding_isotropy``). Returns the JSON object ``aniso bench extraction --json`` prints: ``device``,
    ``forward_s``, ``seconds`` and ``ratios`` by variant (best time / best forward time), ``rounds`` (every timed
    round's seconds by variant) and ``ratios_median`` (median round / median forward round: what a typical run
    gives, where ``ratios`` is the least disturbed one), ``memory_growth_8x`` (None when not
    measured) and ``memory``, ``model``, ``paragraphs``, ``tokens``, ``max_length``, ``batch_size``,
    ``torch_threads``, ``torch``, ``transformers``, ``repeats``, ``statistics`` (what ``every`` kept and whether it
    came out finite) and ``embedding_isotropy_s``.
    """
    import transformers

    from ..stats.pipeline import embedding_isotropy as partition

    rounds: dict[str, list[float]] = {}
    seconds, stats = time_variants(subject, repeats=repeats, warmup=warmup, rounds=rounds)
    fwd = seconds["forward"]
    iso_s = None
    if embedding_isotropy:
        t0 = time.perf_counter()
        partition(subject.model)
        iso_s = round(time.perf_counter() - t0, 3)
    mem = memory_growth(subject.spec) if memory else None
    s = subject.settings
    return {
        "model": subject.entry.id, "origin": subject.loaded.origin, "device": str(s.device),
        "corpus": subject.corpus.label, "paragraphs": len(subject.texts), "tokens": stats["every"].layers[0].count,
        "max_length": s.max_length, "batch_size": s.batch_size, "dtype": str(next(subject.model.parameters()).dtype),
        "forward_s": round(fwd, 4), "seconds": {v: round(t, 4) for v, t in seconds.items()},
        "ratios": {v: round(seconds[v] / fwd, 3) for v in VARIANTS if v != "forward"},
        "rounds": {v: [round(t, 4) for t in ts] for v, ts in rounds.items()},
        "ratios_median": {v: round(statistics.median(rounds[v]) / statistics.median(rounds["forward"]), 3)
                          for v in VARIANTS if v != "forward"},
        "memory_growth_8x": None if mem is None else mem["growth"], "memory": mem,
        "embedding_isotropy_s": iso_s, "statistics": _statistics_check(stats["every"]),
        "repeats": repeats, "warmup": warmup, "torch_threads": torch.get_num_threads(), "torch": torch.__version__,
        "transformers": transformers.__version__, "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
    }


def format_table(result: dict) -> str:
    """The short table ``aniso bench extraction`` prints without ``--json``."""
    from tabulate import tabulate

    rows = [[v, result["seconds"][v], 1.0 if v == "forward" else result["ratios"][v]] for v in VARIANTS]
    head = (f"{result['model']} on {result['device']} ({result['dtype']}): {result['paragraphs']} paragraphs, "
            f"{result['tokens']} tokens (<= {result['max_length']} per paragraph, batches of {result['batch_size']}); "
            f"best of {result['repeats']}, torch {result['torch']}, {result['torch_threads']} threads")
    lines = [head, tabulate(rows, headers=["variant", "seconds", "x forward"], floatfmt=".3f")]
    mem = result.get("memory")
    if mem:
        lines.append(f"peak memory ({mem['measure']}): {mem['peak_1x_mb']} MB at 1x, {mem['peak_8x_mb']} MB at 8x "
                     f"the paragraphs: growth {mem['growth']:+.1%}")
    if result.get("embedding_isotropy_s") is not None:
        lines.append(f"embedding isotropy (once per model): {result['embedding_isotropy_s']} s")
    st = result["statistics"]
    lines.append(f"every statistic: {st['layers']} layers, kept {', '.join(st['kept']) or 'nothing extra'}, "
                 f"{'all finite' if st['finite'] else 'NOT all finite'}")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover - the fresh processes of peak_memory
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        _child(sys.argv[2])
    else:
        sys.exit("usage: python -m aniso.bench.extraction --child SPEC_JSON (use `aniso bench extraction`)")
