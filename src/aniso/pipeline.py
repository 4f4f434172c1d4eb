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

from .extract import (iter_speech_hidden_states, iter_text_hidden_states, iter_vision_hidden_states, layer_names,
                      speech_layer_names)
from .inputs.media import InputsUnavailable, MediaSet, load_images, load_speech
from .inputs.text import Corpus, load_corpus
from .registry import ModelEntry, Registry
from .settings import Settings
from .sources import HubStatus, InputsMissing, LoadedModel, ModelUnavailable, load_model, source_fingerprint
from .stats import JsonCache, LayerAccumulator, ModelStats, StatsCache, cache_key

log = logging.getLogger(__name__)

__all__ = ["compute_stats", "compute_text_stats", "compute_media_stats", "StatsProvider", "BlockSweepProvider", "block_sweep_specs", "ModelUnavailable",
           "InputsMissing"]

#: Bumped when the untrained-block measurements change meaning, so old cache entries are not reused.
BLOCK_SWEEP_FORMAT = 1


def compute_stats(entry: ModelEntry, batches, names: list[str] | None, settings: Settings, meta: dict) -> ModelStats:
    """Stream hidden-state batches (:class:`~aniso.extract.Batch`) into one accumulator per layer.

    Memory is bounded by one batch of hidden states plus the accumulators'
    fixed state, whatever the number of inputs. CNN layers (one flattened
    C·H·W map per image) and layers wider than
    ``settings.second_order_max_dim`` keep first-order statistics only (avg
    cos, drift norm, mean norm; no SVD anisotropy, TwoNN or sampled pairs). ``names`` are the layer names (None: numbered
    from the first batch). Speech batches' all-frames states go into
    ``meta["all_frames_mean_cosine"]`` (padding frames included), per layer.

    Raises RuntimeError naming the model if there are no batches or the number of layers is not ``len(names)``.
    """
    layers: list[LayerAccumulator] | None = None
    all_frames: list[LayerAccumulator] | None = None
    n_seq = 0
    t0 = time.perf_counter()
    for batch in batches:
        if layers is None:
            if names is None:
                names = [str(i) for i in range(len(batch.layers))]
            if len(batch.layers) != len(names):
                raise RuntimeError(f"{entry.id}: expected {len(names)} hidden states, got {len(batch.layers)}")
            layers = [
                LayerAccumulator(h.shape[1], settings.reservoir_size, settings.svd_batch_size, settings.seed + i,
                                 second_order=entry.architecture != "cnn" and h.shape[1] <= settings.second_order_max_dim)
                for i, h in enumerate(batch.layers)
            ]
            if batch.all_frames is not None:
                all_frames = [LayerAccumulator(h.shape[1], second_order=False) for h in batch.all_frames]
        for acc, h in zip(layers, batch.layers):
            acc.update(h.numpy())
        if all_frames is not None:
            for acc, h in zip(all_frames, batch.all_frames):
                acc.update(h.numpy())
        n_seq += batch.n_sequences
    if layers is None:
        raise RuntimeError(f"{entry.id}: the inputs gave no batches")
    meta = dict(meta, n_sequences=n_seq, n_tokens=layers[0].count, settings=settings.extraction_key(),
                seconds=round(time.perf_counter() - t0, 2))
    if all_frames is not None:
        meta["all_frames_mean_cosine"] = [a.summary().mean_cosine for a in all_frames]
        meta["all_frames_count"] = all_frames[0].count
    return ModelStats(entry.id, names, layers, meta)


def compute_text_stats(loaded: LoadedModel, corpus: Corpus, settings: Settings, fingerprint: str) -> ModelStats:
    """Stream the hidden states of ``corpus`` through a text model (see :func:`compute_stats`)."""
    batches = iter_text_hidden_states(loaded.model, loaded.tokenizer, corpus.sequences, batch_size=settings.batch_size,
                                      max_length=settings.max_length, device=settings.device)
    return compute_stats(loaded.entry, batches, layer_names(loaded.model), settings,
                         {"origin": loaded.origin, "fingerprint": fingerprint, "corpus": corpus.describe()})


def compute_media_stats(loaded: LoadedModel, inputs: MediaSet, settings: Settings, fingerprint: str) -> ModelStats:
    """Stream recordings (speech) or photographs (vision) through ``loaded`` (see :func:`compute_stats`).

    CNNs give one vector per image (the flattened C·H·W map), vision
    Transformers one per patch/token, speech models one per real audio frame.
    """
    entry = loaded.entry
    if entry.modality == "speech":
        batches = iter_speech_hidden_states(loaded.model, loaded.processor, inputs.items,
                                            batch_size=max(1, settings.batch_size // 2), device=settings.device)
        names = speech_layer_names(loaded.model)
    else:
        batches = iter_vision_hidden_states(loaded.model, loaded.processor, inputs.items,
                                            per_image=entry.architecture == "cnn", batch_size=settings.batch_size,
                                            device=settings.device)
        names = None
    return compute_stats(entry, batches, names, settings,
                         {"origin": loaded.origin, "fingerprint": fingerprint, "corpus": inputs.describe()}
                         | loaded.meta)


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
    _media: dict[str, MediaSet | InputsUnavailable] = field(default_factory=dict, init=False)
    _memo: dict[str, ModelStats | ModelUnavailable] = field(default_factory=dict, init=False)

    @property
    def corpus(self) -> Corpus:
        if self._corpus is None:
            self._corpus = load_corpus(
                self.settings.corpus, self.settings.n_sequences, self.settings.seed,
                hub_reachable=self.settings.corpus is None and self.hub.reachable(),
            )
        return self._corpus

    def media(self, modality: str) -> MediaSet:
        """The run's recordings (``speech``) or photographs (``vision``), loaded once.

        Raises :class:`ModelUnavailable`-compatible :class:`InputsUnavailable` (remembered) if there are none.
        """
        got = self._media.get(modality)
        if got is None:
            s = self.settings
            try:
                if modality == "speech":
                    got = load_speech(s.speech_dir, s.n_clips, s.seed,
                                      hub_reachable=s.speech_dir is None and self.hub.reachable())
                elif modality == "vision":
                    got = load_images(s.image_dir, s.n_images, s.seed)
                else:
                    raise ValueError(f"no media inputs for modality {modality!r}")
            except InputsUnavailable as exc:
                got = exc
            self._media[modality] = got
        if isinstance(got, InputsUnavailable):
            raise got
        return got

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
        if entry.modality not in ("text", "speech", "vision"):
            raise ModelUnavailable(f"{entry.id}: no hidden-state statistics for modality {entry.modality!r}")
        registry_dir = self.registry.path.parent if self.registry.path else None
        if entry.miniature:
            fingerprint, load = self._miniature(entry)
        else:
            fingerprint = source_fingerprint(entry, registry_dir, self.settings.models_dir)
            load = lambda: load_model(entry, self.hub, registry_dir, self.settings.models_dir)  # noqa: E731
        if entry.modality == "text":
            inputs_key = {"corpus": self.corpus.fingerprint, "sample": list(self.corpus.sequences[:3])}
        else:
            try:
                media = self.media(entry.modality)
            except InputsUnavailable as exc:
                raise InputsMissing(f"{entry.id}: {exc}") from None
            inputs_key = {"media": media.fingerprint, "names": list(media.names)}
        key = cache_key({
            "model": entry.id,
            "fingerprint": fingerprint,
            **inputs_key,
            "settings": self.settings.extraction_key(),
        })
        if not self.settings.no_cache:
            cached = self.cache.load(key)
            if cached is not None:
                cached.meta["cache"] = {"key": key, "hit": True}
                log.info("%s: statistics from cache %s", entry.id, key)
                return cached
        loaded = load()
        if entry.modality == "text":
            stats = compute_text_stats(loaded, self.corpus, self.settings, fingerprint)
        else:
            stats = compute_media_stats(loaded, self.media(entry.modality), self.settings, fingerprint)
        stats.meta["cache"] = {"key": key, "hit": False}
        if not self.settings.no_cache:
            self.cache.save(key, stats)
        return stats


    def _miniature(self, entry: ModelEntry):
        """(fingerprint, loader) of a miniature trained by the suite on the photographs not measured.

        The fingerprint covers the recipe, the training photographs and the library versions (:func:`cache_key`);
        the loader trains the miniature or reads its checkpoint from the cache.
        """
        from .experiments.miniature_vision import load_or_train, recipe_of
        from .inputs.media import load_images_excluding

        try:
            recipe = recipe_of(entry.source)
        except ValueError as exc:
            raise ModelUnavailable(f"{entry.id}: miniature cannot be trained: {exc}") from None
        try:
            training = load_images_excluding(self.media(entry.modality))
        except InputsUnavailable as exc:
            raise InputsMissing(f"{entry.id}: miniature cannot be trained: {exc}") from None
        measured = self.media(entry.modality)
        fingerprint = "miniature:" + cache_key({"recipe": recipe.__dict__, "training": training.fingerprint})

        def load() -> LoadedModel:
            trained = load_or_train(recipe, training.items, measured.items, self.settings.cache_dir,
                                    fingerprint.removeprefix("miniature:"), progress=log.info)
            origin = (f"MINIATURE trained by this suite: {recipe.arch}, seed {recipe.seed}, {recipe.steps} steps of "
                      f"rotation prediction on {training.label}")
            return LoadedModel(entry, trained.model, None, origin, trained.processor,
                               meta={"training": trained.log | {"recipe": recipe.__dict__,
                                                                "images": training.describe()}})

        return fingerprint, load


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
        from .experiments.untrained_block import BlockSweep, run_sweep

        sweeps = []
        for spec in block_sweep_specs(entry, self.settings):
            key = cache_key({"experiment": "untrained-block", "format": BLOCK_SWEEP_FORMAT, "spec": spec.key()})
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
