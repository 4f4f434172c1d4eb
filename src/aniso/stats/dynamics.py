"""Training dynamics: what a checkpoint series measures, one checkpoint at a time, streamed and cached.

For every checkpoint of a registry series (``checkpoints:`` in ``models.yaml``), :func:`measure_checkpoint` runs
the run's text inputs through the model once and keeps

- per layer of hidden states: the streamed :class:`~aniso.stats.accumulators.LayerAccumulator` summary (avg cos, exact and
  batch-wise SVD anisotropy) and TwoNN over shuffled batches (:class:`~aniso.stats.accumulators.ShuffledBatches`, R §2.4:
  mean ± std over batches of ``svd_batch_size`` vectors);
- per attention layer and head (G §5): the mean query Q̄ and mean key K̄ over real tokens, taken at the
  projections' outputs, before rotary embeddings, and their uncentred second moments E[q qᵀ], E[k kᵀ] (from which
  the SVD of G Fig. 11-12 and App. C is exact: the right singular vectors of the union of Q_s (and/or K_s) over
  steps are the eigenvectors of the summed second moments); and the mean attention entropy (nats) of the real
  query tokens, from the model's own attention probabilities (padding and causal masks respected).

Grouped-query attention: each query head is paired with the key head it reads.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from ..common.files import atomic_write, warn_as_file
from ..common.devices import accumulation_dtype
from .accumulators import ShuffledBatches, first_token_attention
from .results import summary_dict
from ..common.versions import cache_key

log = logging.getLogger(__name__)

__all__ = ["AttentionMoments", "CheckpointMeasure", "Series", "measure_checkpoint", "checkpoint_entries",
           "SeriesProvider", "head_cosines", "head_dots", "first_directions", "projections", "TWONN_BATCHES",
           "series_document"]

#: Bumped when a checkpoint measurement changes meaning.
DYNAMICS_FORMAT = 4
#: Shuffled batches per layer for the batch-wise TwoNN (R §2.4: mean ± std over batches).
TWONN_BATCHES = 4


class AttentionMoments:
    """Streamed per-head statistics of one attention layer (G §5).

    Parameters
    ----------
    n_heads : query heads H; n_kv_heads : key heads (H without grouped-query attention); head_dim : d_h
    """

    def __init__(self, n_heads: int, n_kv_heads: int, head_dim: int, device: "torch.device | str" = "cpu"):
        if n_heads < 1 or n_kv_heads < 1 or n_heads % n_kv_heads or head_dim < 1:
            raise ValueError(f"bad attention layout: {n_heads} query heads, {n_kv_heads} key heads, head dim {head_dim}")
        self.n_heads, self.n_kv_heads, self.head_dim = n_heads, n_kv_heads, head_dim
        self.count = 0
        dtype = accumulation_dtype(device)
        zeros = lambda *shape: torch.zeros(shape, dtype=dtype, device=device)  # noqa: E731
        self.q_sum, self.k_sum = zeros(n_heads, head_dim), zeros(n_kv_heads, head_dim)
        self.q_gram, self.k_gram = zeros(n_heads, head_dim, head_dim), zeros(n_kv_heads, head_dim, head_dim)
        self.entropy_sum, self.sink_sum = zeros(n_heads), zeros(n_heads)
        self.n_rows = 0

    def update_queries_keys(self, q: torch.Tensor, k: torch.Tensor) -> None:
        """Add the queries (m, H·d_h) and keys (m, H_kv·d_h) of m real tokens (on the sums' device)."""
        dtype = self.q_sum.dtype
        qh = q.to(dtype).reshape(-1, self.n_heads, self.head_dim)
        kh = k.to(dtype).reshape(-1, self.n_kv_heads, self.head_dim)
        if qh.shape[0] != kh.shape[0]:
            raise ValueError(f"{qh.shape[0]} queries but {kh.shape[0]} keys")
        self.count += qh.shape[0]
        self.q_sum += qh.sum(0)
        self.k_sum += kh.sum(0)
        self.q_gram += torch.einsum("mhi,mhj->hij", qh, qh)
        self.k_gram += torch.einsum("mhi,mhj->hij", kh, kh)

    def update_attention(self, probs: torch.Tensor, mask: torch.Tensor) -> None:
        """Add the entropies of the real query rows of ``probs`` (b, H, t, t) under the (b, t) bool ``mask``."""
        p = probs.to(self.entropy_sum.dtype)
        rows = mask.bool()
        entropy = -torch.special.xlogy(p, p).sum(-1)  # (b, H, t), nats
        self.entropy_sum += (entropy * rows[:, None, :].to(p.dtype)).sum((0, 2))
        self.sink_sum += first_token_attention(p, rows)
        self.n_rows += int(rows.sum())

    def _kv(self, a: np.ndarray) -> np.ndarray:
        return np.repeat(a, self.n_heads // self.n_kv_heads, axis=0)

    def result(self) -> dict[str, np.ndarray]:
        """``q_mean``, ``k_mean`` (H, d_h); ``q_moment``, ``k_moment`` (H, d_h, d_h), E[q qᵀ]; ``entropy`` (H,);
        ``sink`` (H,), the mean attention on the first real token. Host arrays."""
        n = max(self.count, 1)
        host = lambda t: t.detach().to("cpu").numpy()  # noqa: E731 - O(H·d_h²) summaries, once
        return {"q_mean": host(self.q_sum) / n, "k_mean": self._kv(host(self.k_sum)) / n,
                "q_moment": host(self.q_gram) / n, "k_moment": self._kv(host(self.k_gram)) / n,
                "entropy": host(self.entropy_sum) / max(self.n_rows, 1),
                "sink": host(self.sink_sum) / max(self.n_rows, 1)}


@dataclass
class CheckpointMeasure:
    """One checkpoint's measurements (see the module docstring).

    ``layers``: per hidden-state layer, a :func:`~aniso.stats.results.summary_dict` plus ``twonn_batch_mean``,
    ``twonn_batch_std``, ``n_twonn_batches``. Arrays over attention layers L and heads H: ``q_mean``, ``k_mean``
    (L, H, d_h); ``q_moment``, ``k_moment`` (L, H, d_h, d_h); ``entropy`` (L, H) in nats; ``sink`` (L, H), each
    head's mean attention on the first real token (Gu et al. 2025).
    """

    step: int
    layers: list[dict]
    q_mean: np.ndarray
    k_mean: np.ndarray
    q_moment: np.ndarray
    k_moment: np.ndarray
    entropy: np.ndarray
    meta: dict = field(default_factory=dict)
    sink: np.ndarray | None = None

    ARRAYS = ("q_mean", "k_mean", "q_moment", "k_moment", "entropy", "sink")

    def layer_series(self, name: str) -> np.ndarray:
        """One hidden-state metric across layers, (n_layers,) float64 (NaN where missing)."""
        return np.array([math.nan if s.get(name) is None else s[name] for s in self.layers], np.float64)

    def save(self, path: Path) -> None:
        """Write as safetensors (arrays) with the rest as JSON metadata, atomically."""
        from safetensors.numpy import save_file

        arrays = {k: np.ascontiguousarray(getattr(self, k)) for k in self.ARRAYS}
        meta = {"format": str(DYNAMICS_FORMAT), "step": str(self.step), "layers": json.dumps(self.layers),
                "meta": json.dumps(self.meta, default=str)}
        atomic_write(path, lambda tmp: save_file(arrays, str(tmp), metadata=meta))

    @classmethod
    def load(cls, path: Path) -> "CheckpointMeasure":
        """Read what :meth:`save` wrote. Raises on a missing, truncated or foreign file."""
        from safetensors import safe_open

        with safe_open(str(path), framework="np") as f:
            meta = f.metadata() or {}
            if meta.get("format") != str(DYNAMICS_FORMAT):
                raise ValueError(f"format {meta.get('format')!r}, expected {DYNAMICS_FORMAT}")
            arrays = {k: f.get_tensor(k) for k in cls.ARRAYS}
        return cls(int(meta["step"]), json.loads(meta["layers"]), meta=json.loads(meta["meta"]), **arrays)


def measure_checkpoint(loaded, texts, settings, step: int) -> CheckpointMeasure:
    """Measure one checkpoint on ``texts`` (see the module docstring).

    ``loaded``: a :class:`~aniso.sources.base.LoadedModel` of a text encoder or decoder; ``settings``: batch size,
    max length, device, seed, reservoir and batch sizes. Raises RuntimeError naming the model if its attention
    layers and its attention probabilities do not pair up, or if the inputs give no batch.
    """
    from ..extract.hidden import capture_queries_keys, iter_text_hidden_states
    from .pipeline import compute_stats

    model, name = loaded.model, loaded.entry.id
    shuffled: list[ShuffledBatches] = []
    heads: dict[int, AttentionMoments] = {}
    capture = capture_queries_keys(model)

    def reduce_layer(probs, mask, layer):
        """Inside attention layer ``layer``'s forward: its queries and keys (captured moments earlier in the same
        module) and its attention map go into that layer's moments, and none of them is kept."""
        site = capture.sites[layer]
        (q, k), = capture.take_site(site.name)
        if layer not in heads:
            heads[layer] = AttentionMoments(site.n_heads, k.shape[-1] // site.head_dim, site.head_dim, probs.device)
        heads[layer].update_queries_keys(q[mask], k[mask])
        heads[layer].update_attention(probs, mask)

    batches = iter_text_hidden_states(model, loaded.tokenizer, list(texts), batch_size=settings.batch_size,
                                      max_length=settings.max_length, device=settings.device, attentions=True,
                                      attention_reduce=reduce_layer)

    def shuffled_too(batches):
        """The batches, on their way to the hidden-state statistics, also into the shuffled TwoNN batches."""
        for batch in batches:
            if not shuffled:
                shuffled.extend(ShuffledBatches(h.shape[1], TWONN_BATCHES, settings.svd_batch_size, settings.seed + i,
                                                device=h.device) for i, h in enumerate(batch.layers))
            for bins, h in zip(shuffled, batch.layers):
                bins.update(h)
            yield batch

    from ..extract.hidden import attention_modules

    n_maps = len(attention_modules(model))
    if n_maps != len(capture.sites):
        raise RuntimeError(f"{name}: {len(capture.sites)} attention layers with queries and keys, but {n_maps} "
                           "attention maps")
    with capture:
        stats = compute_stats(loaded.entry, shuffled_too(batches), None, settings, {})
    heads = [heads[i] for i in sorted(heads)]
    layers = []
    for summary, bins in zip(stats.summaries(), shuffled):
        mean, std, n = bins.twonn()
        layers.append(summary_dict(summary) | {"twonn_batch_mean": mean, "twonn_batch_std": std,
                                               "n_twonn_batches": n})
    results = [m.result() for m in heads]
    arrays = {k: np.stack([r[k] for r in results]) for k in CheckpointMeasure.ARRAYS}
    from .pipeline import embedding_isotropy

    meta = {"origin": loaded.origin, "n_tokens": stats.meta["n_tokens"], "seconds": stats.meta["seconds"],
            "training": loaded.meta.get("training", {}),
            "embedding_isotropy": embedding_isotropy(model, f"{loaded.entry.id} at step {step}")}
    return CheckpointMeasure(step, layers, meta=meta, **arrays)


# -- series -------------------------------------------------------------------------------------------------------


def checkpoint_entries(entry, ctx) -> list[tuple[int, object]]:
    """The (step, registry entry of that checkpoint) pairs of a series entry, oldest first.

    Each checkpoint entry is the series entry with its source moved to the step (``vary`` templates, or the
    source's ``steps``) and its id suffixed ``.step<N>``. Raises ValueError naming the entry if it has no series.
    """
    from ..sources import SOURCE_KINDS

    series = entry.checkpoints
    if series is None:
        raise ValueError(f"{entry.id}: no checkpoints in its registry entry")
    steps = SOURCE_KINDS[entry.source.kind].checkpoints(entry, ctx) if series.steps == "all" else series.steps
    return [(step, entry.checkpoint_entry(step)) for step in steps]


@dataclass
class Series:
    """The measurements of every checkpoint of one registry series, oldest first, with the inputs they used."""

    model_id: str
    measures: list[CheckpointMeasure]
    inputs: dict

    @property
    def steps(self) -> np.ndarray:
        return np.array([m.step for m in self.measures], np.int64)

    def layer_metric(self, name: str) -> np.ndarray:
        """(n_checkpoints, n_layers) of one hidden-state metric."""
        return np.stack([m.layer_series(name) for m in self.measures])

    def stacked(self, name: str) -> np.ndarray:
        """One attention array over checkpoints: (n_checkpoints, L, H, ...)."""
        return np.stack([getattr(m, name) for m in self.measures])


@dataclass
class SeriesProvider:
    """Checkpoint series per registry entry, measured on the run's text inputs, memoised and cached per checkpoint.

    ``stats``: the run's :class:`~aniso.stats.pipeline.StatsProvider` (its inputs, source context and settings).
    :meth:`get` raises :class:`~aniso.sources.ModelUnavailable` (remembered) if a checkpoint cannot be had.
    """

    stats: object
    _memo: dict = field(default_factory=dict, init=False)

    def computed(self) -> dict[str, Series]:
        return {k: v for k, v in self._memo.items() if isinstance(v, Series)}

    def get(self, entry) -> Series:
        """The series of ``entry``: every checkpoint measured (or read from the cache), oldest first."""
        from .pipeline import remembered

        return remembered(self._memo, entry.id, lambda: self._measure(entry))

    def _measure(self, entry) -> Series:
        from ..inputs.media import InputsUnavailable
        from ..extract.modalities import modality_of, sample_names
        from ..sources import (InputsMissing, ModelRefused, ModelUnavailable, load_model, missing_checkpoints,
                               source_fingerprint)
        from ..sources.base import row_of

        modality = modality_of(entry)
        if modality is None or not (modality.tokens and modality.queries_keys) or entry.role not in ("encoder",
                                                                                                     "decoder"):
            raise ModelUnavailable(f"{entry.id}: training dynamics are measured on text encoders and decoders")
        settings, ctx = self.stats.settings, self.stats.source_context
        missing = missing_checkpoints(entry, ctx)
        if missing:  # the row's series names checkpoints its package or folder does not hold
            raise ModelRefused(f"{row_of(entry)}: checkpoints: {missing}")
        try:
            inputs = self.stats.inputs(modality.inputs)
        except InputsUnavailable as exc:
            raise InputsMissing(f"{entry.id}: {exc}") from None
        measures = []
        for step, ckpt in checkpoint_entries(entry, ctx):
            key = cache_key({"experiment": "checkpoint", "format": DYNAMICS_FORMAT,
                             "fingerprint": source_fingerprint(ckpt, ctx), "inputs": inputs.fingerprint,
                             "sample": sample_names(inputs), "settings": settings.extraction_key(),
                             "batch_size": settings.batch_size, "twonn_batches": TWONN_BATCHES})
            path = Path(settings.cache_dir) / "checkpoints" / f"{key}.safetensors"
            measure = None
            if path.exists() and not settings.no_cache:
                try:
                    measure = CheckpointMeasure.load(path)
                    measure.meta["cache"] = {"key": key, "hit": True}
                except Exception as exc:  # noqa: BLE001 - any defect means: measure again
                    warn_as_file(str(path), f"checkpoint cache entry {path} cannot be used ({exc}); measuring "
                                 "again", RuntimeWarning, __name__)
            if measure is None:
                measure = measure_checkpoint(load_model(ckpt, ctx), inputs.items, settings, step)
                log.info("%s: step %d measured in %.1f s", entry.id, step, measure.meta["seconds"])
                if not settings.no_cache:
                    measure.save(path)
                measure.meta["cache"] = {"key": key, "hit": False}
            measures.append(measure)
            if len(measure.layers) != len(measures[0].layers):
                raise ValueError(f"{entry.id}: checkpoint step {step} has {len(measure.layers)} hidden-state "
                                 f"layers, step {measures[0].step} has {len(measures[0].layers)}: a series must keep "
                                 "its architecture")
        return Series(entry.id, measures, inputs.describe())


# -- derived quantities (pure) ------------------------------------------------------------------------------------


def head_cosines(q_mean: np.ndarray, k_mean: np.ndarray) -> np.ndarray:
    """cos(Q̄, K̄) per head: arrays (..., d_h) → (...); 0 where a mean is the zero vector (G §5, Fig. 13)."""
    num = (q_mean * k_mean).sum(-1)
    den = np.linalg.norm(q_mean, axis=-1) * np.linalg.norm(k_mean, axis=-1)
    return np.divide(num, den, out=np.zeros_like(num), where=den > 0)


def head_dots(q_mean: np.ndarray, k_mean: np.ndarray) -> np.ndarray:
    """Q̄·K̄ per head: arrays (..., d_h) → (...) (G §5, Fig. 14)."""
    return (q_mean * k_mean).sum(-1)


def first_directions(q_moment: np.ndarray, k_moment: np.ndarray, basis: str, k: int = 1) -> np.ndarray:
    """The first ``k`` right singular vectors, per head, of the union over checkpoints of the queries and/or keys
    (G §5 Fig. 11-12: ``basis="qk"``; App. C Fig. 19: ``"k"``; Fig. 20: ``"q"``), uncentred.

    Parameters
    ----------
    q_moment, k_moment : (n_checkpoints, L, H, d_h, d_h) second moments E[q qᵀ], E[k kᵀ] per checkpoint (every
        checkpoint measured on the same tokens, so each weighs the same in the union)

    Returns
    -------
    (L, H, d_h, k): unit vectors (sign arbitrary). Raises ValueError for an unknown basis.
    """
    parts = {"qk": (q_moment, k_moment), "q": (q_moment,), "k": (k_moment,)}
    if basis not in parts:
        raise ValueError(f"basis must be one of {sorted(parts)}, got {basis!r}")
    total = sum(p.sum(0) for p in parts[basis])
    _, vectors = np.linalg.eigh(total)  # ascending eigenvalues
    return vectors[..., ::-1][..., :k]


def projections(means: np.ndarray, directions: np.ndarray) -> np.ndarray:
    """Coordinates of per-head means (n_checkpoints, L, H, d_h) on per-head directions (L, H, d_h, k):
    (n_checkpoints, L, H, k)."""
    return np.einsum("slhd,lhdk->slhk", means, directions)


def series_document(series: Series) -> dict:
    """A JSON-friendly summary of a series for ``results.json`` and the report's figures.

    ``steps``; per checkpoint and layer ``mean_cosine``, ``svd_anisotropy_batch_mean``, ``twonn_batch_mean``,
    ``twonn_batch_std``; per checkpoint, layer and head ``qk_cos``, ``qk_dot``, ``entropy``; ``projections``: for
    the two heads with the highest and the lowest final cos(Q̄, K̄), the coordinates of Q̄_s and K̄_s on the first
    two singular directions of each basis (``qk``, ``k``, ``q``: G Fig. 12, 21, 22); ``loss`` and
    ``training_seconds``: the training log's loss curve and duration where the series has one.
    """
    q, k = series.stacked("q_mean"), series.stacked("k_mean")
    q_moment, k_moment = series.stacked("q_moment"), series.stacked("k_moment")
    cos = head_cosines(q, k)
    final = cos[-1]
    chosen = [np.unravel_index(int(np.argmax(final)), final.shape), np.unravel_index(int(np.argmin(final)), final.shape)]
    proj = {}
    for basis in ("qk", "k", "q"):
        directions = first_directions(q_moment, k_moment, basis, k=2)
        pq, pk = projections(q, directions), projections(k, directions)
        proj[basis] = [{"layer": int(l), "head": int(h), "q": pq[:, l, h].round(5).tolist(),
                        "k": pk[:, l, h].round(5).tolist()} for l, h in chosen]
    doc = {"steps": series.steps.tolist(), "inputs": series.inputs.get("dataset"),
           "qk_cos": cos.round(5).tolist(), "qk_dot": head_dots(q, k).round(5).tolist(),
           "entropy": series.stacked("entropy").round(5).tolist(), "sink": (series.stacked("sink").round(5).tolist()
                    if all(m.sink is not None for m in series.measures) else None),
           "projections": proj,
           "loss": series.measures[-1].meta.get("training", {}).get("loss", []),
           "training_seconds": series.measures[-1].meta.get("training", {}).get("seconds"),
           "embedding_isotropy": [m.meta.get("embedding_isotropy") for m in series.measures]}
    for name in ("mean_cosine", "svd_anisotropy_batch_mean", "twonn_batch_mean", "twonn_batch_std"):
        values = series.layer_metric(name)
        doc[name] = [[None if not np.isfinite(v) else round(float(v), 5) for v in row] for row in values]
    return doc
