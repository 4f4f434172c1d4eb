"""Registry → model source → inputs → extraction → streamed statistics (cached).

:class:`StatsProvider` is what claims ask for statistics: it loads a model only
when its statistics are not cached, streams its hidden states into one
:class:`~aniso.stats.LayerAccumulator` per layer, and caches the result.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

from .extract import iter_text_hidden_states, layer_names
from .inputs.text import Corpus, load_corpus
from .registry import ModelEntry, Registry
from .settings import Settings
from .sources import HubStatus, LoadedModel, ModelUnavailable, load_model, source_fingerprint
from .stats import JsonCache, LayerAccumulator, ModelStats, StatsCache, cache_key

log = logging.getLogger(__name__)

__all__ = ["compute_text_stats", "StatsProvider", "BlockSweepProvider", "block_sweep_specs", "ModelUnavailable"]

#: Bumped when the untrained-block measurements change meaning, so old cache entries are not reused.
BLOCK_SWEEP_FORMAT = 1


def compute_text_stats(loaded: LoadedModel, corpus: Corpus, settings: Settings, fingerprint: str) -> ModelStats:
    """Stream the hidden states of ``corpus`` through ``loaded`` into per-layer accumulators.

    Memory is bounded by one batch of hidden states plus the accumulators'
    fixed state, whatever the corpus size. ``fingerprint`` (from
    :func:`~aniso.sources.source_fingerprint`) is recorded in the metadata.
    """
    names = layer_names(loaded.model)
    layers: list[LayerAccumulator] | None = None
    n_seq = 0
    t0 = time.perf_counter()
    for batch in iter_text_hidden_states(
        loaded.model, loaded.tokenizer, corpus.sequences,
        batch_size=settings.batch_size, max_length=settings.max_length, device=settings.device,
    ):
        if layers is None:
            if len(batch.layers) != len(names):
                raise RuntimeError(f"{loaded.entry.id}: expected {len(names)} hidden states, got {len(batch.layers)}")
            layers = [
                LayerAccumulator(h.shape[1], settings.reservoir_size, settings.svd_batch_size, settings.seed + i)
                for i, h in enumerate(batch.layers)
            ]
        for acc, h in zip(layers, batch.layers):
            acc.update(h.numpy())
        n_seq += batch.n_sequences
    if layers is None:
        raise RuntimeError(f"{loaded.entry.id}: the corpus gave no sequences")
    meta = {
        "origin": loaded.origin,
        "fingerprint": fingerprint,
        "corpus": corpus.describe(),
        "n_sequences": n_seq,
        "n_tokens": layers[0].count,
        "settings": settings.extraction_key(),
        "seconds": round(time.perf_counter() - t0, 2),
    }
    return ModelStats(loaded.entry.id, names, layers, meta)


@dataclass
class StatsProvider:
    """Statistics per registry model for one run (one corpus, one set of settings).

    Results are memoised for the run and cached on disk (unless
    ``settings.no_cache``). :meth:`get` raises :class:`ModelUnavailable` for a
    model that cannot be loaded; the failure is remembered so it is reported
    once per model and not retried.
    """

    settings: Settings
    registry: Registry
    hub: HubStatus = field(default_factory=HubStatus)
    _corpus: Corpus | None = field(default=None, init=False)
    _memo: dict[str, ModelStats | ModelUnavailable] = field(default_factory=dict, init=False)

    @property
    def corpus(self) -> Corpus:
        if self._corpus is None:
            self._corpus = load_corpus(
                self.settings.corpus, self.settings.n_sequences, self.settings.seed,
                hub_reachable=self.settings.corpus is None and self.hub.reachable(),
            )
        return self._corpus

    @property
    def cache(self) -> StatsCache:
        return StatsCache(Path(self.settings.cache_dir))

    def computed(self) -> dict[str, ModelStats]:
        """Statistics obtained so far in this run, by model id."""
        return {k: v for k, v in self._memo.items() if isinstance(v, ModelStats)}

    def get(self, entry: ModelEntry) -> ModelStats:
        """The statistics of ``entry`` on this run's corpus (cached, else computed)."""
        memo = self._memo.get(entry.id)
        if isinstance(memo, ModelUnavailable):
            raise memo
        if memo is not None:
            return memo
        try:
            stats = self._get_uncached(entry)
        except ModelUnavailable as exc:
            self._memo[entry.id] = exc
            raise
        self._memo[entry.id] = stats
        return stats

    def _get_uncached(self, entry: ModelEntry) -> ModelStats:
        if entry.modality != "text":
            raise ModelUnavailable(f"{entry.id}: inputs for modality {entry.modality!r} are not implemented yet")
        registry_dir = self.registry.path.parent if self.registry.path else None
        fingerprint = source_fingerprint(entry, registry_dir)
        key = cache_key({
            "model": entry.id,
            "fingerprint": fingerprint,
            "corpus": self.corpus.fingerprint,
            "sample": list(self.corpus.sequences[:3]),
            "settings": self.settings.extraction_key(),
        })
        if not self.settings.no_cache:
            cached = self.cache.load(key)
            if cached is not None:
                cached.meta["cache"] = {"key": key, "hit": True}
                log.info("%s: statistics from cache %s", entry.id, key)
                return cached
        stats = compute_text_stats(load_model(entry, self.hub, registry_dir), self.corpus, self.settings, fingerprint)
        stats.meta["cache"] = {"key": key, "hit": False}
        if not self.settings.no_cache:
            self.cache.save(key, stats)
        return stats


def block_sweep_specs(entry: ModelEntry, settings: Settings):
    """The :class:`~aniso.experiments.untrained_block.SweepSpec` of each seed for an untrained-block entry.

    Seeds are ``settings.seed + i`` for ``i < settings.block_seeds``. Raises
    ValueError naming the entry if its source is not an untrained block.
    """
    from .experiments.untrained_block import SweepSpec, default_bias_norms

    if entry.source.kind != "init":
        raise ValueError(f"{entry.id}: not an untrained block (source kind {entry.source.kind!r})")
    return [
        SweepSpec(entry.source.block, settings.seed + i, default_bias_norms(settings.block_norms),
                  settings.block_sequences, settings.block_seq_len, tuple(sorted(entry.source.config.items())))
        for i in range(settings.block_seeds)
    ]


@dataclass
class BlockSweepProvider:
    """Untrained-block sweeps (G §4) per registry entry, one per seed, memoised and cached as JSON."""

    settings: Settings
    progress: object = None  # callable(str) or None
    _memo: dict[str, list] = field(default_factory=dict, init=False)

    @property
    def cache(self) -> JsonCache:
        return JsonCache(Path(self.settings.cache_dir) / "untrained-block")

    def computed(self) -> dict[str, list]:
        """Sweeps obtained so far in this run, by entry id (lists of BlockSweep, one per seed)."""
        return dict(self._memo)

    def get(self, entry: ModelEntry) -> list:
        """The sweeps of ``entry`` for every seed (cached, else computed; see :func:`block_sweep_specs`)."""
        if entry.id in self._memo:
            return self._memo[entry.id]
        import torch
        import transformers

        from .experiments.untrained_block import BlockSweep, run_sweep

        sweeps = []
        for spec in block_sweep_specs(entry, self.settings):
            key = cache_key({"experiment": "untrained-block", "format": BLOCK_SWEEP_FORMAT, "spec": spec.key(),
                             "torch": torch.__version__, "transformers": transformers.__version__})
            cached = None if self.settings.no_cache else self.cache.load(key)
            if cached is not None:
                sweep = BlockSweep.from_dict(cached)
                sweep.meta["cache"] = {"key": key, "hit": True}
            else:
                sweep = run_sweep(spec, progress=self.progress)
                log.info("%s seed %d: sweep in %.0f s", entry.id, spec.seed, sweep.seconds)
                if not self.settings.no_cache:
                    self.cache.save(key, sweep.to_dict())
                sweep.meta["cache"] = {"key": key, "hit": False}
            sweeps.append(sweep)
        self._memo[entry.id] = sweeps
        return sweeps
