"""The whole ``aniso stats`` command, as a user times it, against a bare script of the same forward passes
(``aniso bench command``).

Both run in fresh Python processes, over the same paragraphs of the run's corpus, in rounds (the two interleaved in
each round, so that load from other processes hits them alike):

- ``command``: ``python -m aniso.cli stats MODEL --n-sequences N`` on an empty statistics cache of its own
  (everything a user waits for: imports, the registry, the model's fingerprint and load, the corpus, the forward
  passes with every statistic, the summaries, the cache entry, the table);
- ``script``: a script that imports torch and transformers, loads the same model folder
  (``AutoModel.from_pretrained``, ``AutoTokenizer.from_pretrained``), reads the same paragraphs, and runs the same
  forward passes: sorted by token length, in batches of the run's batch size, at most the run's ``max_length``
  tokens, ``output_hidden_states=True`` under ``torch.inference_mode`` (:data:`BARE_SCRIPT`).

Each is timed on the wall clock, with its CPU time (user + system, from ``RUSAGE_CHILDREN``); the ratio is the best
command time over the best script time.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["BARE_SCRIPT", "model_folder", "bench_command"]

#: The bare script: argv = model folder, JSON file of the paragraphs, max_length, batch size.
BARE_SCRIPT = """
import json, sys
import torch
from transformers import AutoModel, AutoTokenizer
folder, texts, max_length, batch = sys.argv[1], json.load(open(sys.argv[2])), int(sys.argv[3]), int(sys.argv[4])
model = AutoModel.from_pretrained(folder).eval()
tok = AutoTokenizer.from_pretrained(folder)
lengths = [len(ids) for ids in tok(texts, truncation=True, max_length=max_length)["input_ids"]]
order = sorted(range(len(texts)), key=lambda i: (lengths[i], i))
with torch.inference_mode():
    for s in range(0, len(order), batch):
        enc = tok([texts[i] for i in order[s : s + batch]], padding=True, truncation=True, max_length=max_length,
                  return_tensors="pt")
        model(**enc, output_hidden_states=True)
"""


def model_folder(entry, ctx) -> Path:
    """The transformers folder a registry entry loads from: a ``local`` source's path, or a ``package`` source's
    folder in the ``transformers`` format. Raises ValueError naming the entry for any other source (the bare script
    needs a folder that ``from_pretrained`` reads as it is)."""
    from ..sources import SOURCE_KINDS

    src = entry.source
    folder = SOURCE_KINDS[src.kind].transformers_folder
    path = folder(entry, ctx) if folder is not None else None
    if path is not None:
        return path
    raise ValueError(f"{entry.id}: aniso bench command needs a model read from a transformers folder (a local "
                     f"source, or a package in the transformers format); this one is a {src.kind} source"
                     + (f" in the {src.format!r} format" if getattr(src, "format", None) else ""))


def _timed(cmd: list[str], env: dict, cwd: str | None = None) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"{' '.join(cmd[:4])} ... failed ({out.returncode}): {last}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return {"s": round(wall, 3), "cpu_s": round(cpu, 3)}


def bench_command(model_id: str, *, paragraphs: int = 256, repeats: int = 3, registry: str | None = None) -> dict:
    """Time ``aniso stats model_id --n-sequences paragraphs`` (empty cache each round) and the bare script
    (:data:`BARE_SCRIPT`) over the same paragraphs, ``repeats`` interleaved rounds each.

    Returns ``{"model", "paragraphs", "corpus", "max_length", "batch_size", "command_s", "script_s" (the best of
    each), "ratio" (command / script), "rounds": [{"command": {"s", "cpu_s"}, "script": {...}}, ...],
    "python", "torch_threads"}``. Raises KeyError for an unknown model, ValueError for a model without a folder
    (:func:`model_folder`), ``repeats`` < 1 or more ``paragraphs`` than the corpus holds, RuntimeError when a
    process fails.
    """
    from ..common.settings import Settings
    from ..inputs.text import load_corpus
    from ..registry.locate import check_corpus, open_registry, registry_path, registry_source
    from ..stats.pipeline import StatsProvider

    if repeats < 1:
        raise ValueError(f"--repeats must be >= 1, got {repeats}")
    settings = Settings.from_sources({"registry": registry, "n_sequences": paragraphs})
    reg = open_registry(registry_path(None, settings.registry), registry_source(registry, settings.registry))
    entry = reg.get(model_id)
    from ..extract.modalities import modality_of

    if not getattr(modality_of(entry), "tokens", False):  # the bare script and `aniso stats` read the corpus
        raise ValueError(f"{model_id}: aniso bench command times text models (it reads paragraphs of the corpus), "
                         f"this one is {entry.modality!r}")
    folder = model_folder(entry, StatsProvider(settings, reg).source_context)
    check_corpus(settings)  # named as the setting that gave it
    corpus = load_corpus(settings.corpus, paragraphs, settings.seed)
    if paragraphs > len(corpus.sequences):  # a bare script would time other paragraphs than the command reads
        raise ValueError(f"--paragraphs {paragraphs}: the corpus ({corpus.label.split(';')[0]}) holds "
                         f"{len(corpus.sequences)} paragraphs; give at most {len(corpus.sequences)}")
    src = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([src] + [p for p in [os.environ.get("PYTHONPATH")] if p]),
               ANISO_PROGRESS="0")
    rounds = []
    with tempfile.TemporaryDirectory() as tmp:
        texts = Path(tmp) / "paragraphs.json"
        texts.write_text(json.dumps(list(corpus.sequences)))
        script = [sys.executable, "-c", BARE_SCRIPT, str(folder), str(texts), str(settings.max_length),
                  str(settings.batch_size)]
        command = [sys.executable, "-m", "aniso.cli", "stats", model_id, "--n-sequences", str(paragraphs)]
        if registry:
            command += ["--registry", registry]
        for r in range(repeats):
            cache = Path(tmp) / f"cache-{r}"
            rounds.append({"command": _timed(command, env | {"ANISO_CACHE_DIR": str(cache)}),
                           "script": _timed(script, env)})
    best = {k: min(r[k]["s"] for r in rounds) for k in ("command", "script")}
    import torch

    return {"model": entry.id, "paragraphs": paragraphs, "corpus": corpus.label, "max_length": settings.max_length,
            "batch_size": settings.batch_size, "command_s": best["command"], "script_s": best["script"],
            "ratio": round(best["command"] / best["script"], 3), "rounds": rounds,
            "python": sys.version.split()[0], "torch_threads": torch.get_num_threads()}
