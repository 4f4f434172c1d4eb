"""The result types of the statistics engine: what one model's streamed statistics give the claims.

:class:`LayerSummary` holds one layer's metrics, :class:`ModelStats` every layer's accumulated state with its
summaries (computed once), and :func:`summary_dict` a JSON-friendly form for results files and the cache. The engine
that fills them is :mod:`aniso.stats.accumulators` (streamed state) and :mod:`aniso.stats.pipeline` (extraction to
statistics).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from collections.abc import Collection
from typing import TYPE_CHECKING

import numpy as np

from .parts.second_order import SecondOrder

if TYPE_CHECKING:
    from .accumulators import LayerAccumulator

__all__ = ["LayerSummary", "ModelStats", "summary_dict", "nan_columns"]


@dataclass(frozen=True)
class LayerSummary:
    """Per-layer metrics of one model on one corpus.

    Attributes: ``dim`` d; ``count`` vectors seen; ``n_zero`` zero vectors
    excluded from the cosine; ``mean_cosine`` exact avg cos over all pairs;
    ``mean_cosine_sampled`` the same from sampled pairs of the reservoir;
    ``drift_norm`` ||x̄||; ``mean_norm`` E||x||; ``svd_anisotropy`` exact, of the
    whole centred set; ``svd_anisotropy_batch_mean``/``_std`` over complete
    batches (``n_svd_batches``); ``twonn`` TwoNN dimension of the reservoir
    (``n_reservoir`` points, ``n_distinct`` of them distinct, -1 where not counted; NaN below
    ``aniso.common.settings.TWONN_MIN_POINTS`` distinct points); ``q95`` the isotropic q95(d); ``isoscore`` the IsoScore of the covariance (Rudman
    et al. 2022; second order only); ``rogue_dims`` the three dimensions contributing most to avg cos and
    ``rogue_top3_share`` their share of it, ``mean_cosine_standardised`` avg cos after per-dimension
    standardisation, on the reservoir (Timkey & van Schijndel 2021); ``massive_value`` the largest |activation|,
    ``massive_feature`` and ``massive_position`` (in its sequence, -1 unknown) where it is, ``massive_ratio`` its
    ratio to the median |activation| of the reservoir, ``massive_first_token_cv`` std/|mean| of that feature on the
    first token of each sequence (Sun et al. 2024).
    """

    dim: int
    count: int
    n_zero: int
    mean_cosine: float
    mean_cosine_sampled: float
    drift_norm: float
    mean_norm: float
    svd_anisotropy: float
    svd_anisotropy_batch_mean: float
    svd_anisotropy_batch_std: float
    n_svd_batches: int
    twonn: float
    n_reservoir: int
    q95: float
    isoscore: float = math.nan
    rogue_dims: list = field(default_factory=list)
    rogue_top3_share: float = math.nan
    mean_cosine_standardised: float = math.nan
    massive_value: float = math.nan
    massive_feature: int = -1
    massive_position: int = -1
    massive_ratio: float = math.nan
    massive_first_token_cv: float = math.nan
    n_distinct: int = -1


@dataclass
class ModelStats:
    """Streamed statistics of every layer of one model on one corpus.

    ``layers[i]`` is layer i (0 = embedding output; encoder–decoder models list
    encoder layers then decoder layers, ``layer_names`` tells which).
    """

    model_id: str
    layer_names: list[str]
    layers: list[LayerAccumulator]
    meta: dict = field(default_factory=dict)
    _summaries: list[LayerSummary] | None = field(default=None, init=False, repr=False, compare=False)

    def summaries(self) -> list[LayerSummary]:
        """Per-layer :class:`LayerSummary`, computed once."""
        if self._summaries is None:
            SecondOrder.find_spectra(self.layers)  # (on a GPU's paths: every layer's λ_max in one iteration)
            out = []
            for name, acc in zip(self.layer_names, self.layers):
                try:
                    out.append(acc.summary())
                except ValueError as exc:  # e.g. a layer of all-zero vectors: name the model and the layer
                    raise ValueError(f"{self.model_id}: layer {name}: {exc} ({acc.n_zero} of {acc.count} vectors "
                                     "are all zero)") from None
            self._summaries = out
        return self._summaries

    def series(self, name: str) -> np.ndarray:
        """One metric across layers, shape (n_layers,)."""
        return np.array([getattr(s, name) for s in self.summaries()], dtype=np.float64)


def summary_dict(summary: LayerSummary) -> dict:
    """A JSON-friendly dict of a :class:`LayerSummary` (NaN becomes None)."""
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in asdict(summary).items()}


def max_length_note(meta: dict) -> str:
    """The words an inputs label carries where the model read fewer tokens per text than ``max_length`` asked (its
    learnt positions: ``meta["max_length_read"]``, :func:`aniso.extract.hidden.tokens_read`): ``"; at most 512
    tokens each, the model's positions (max_length 100000 asked)"``, or ""."""
    read = meta.get("max_length_read")
    if not read:
        return ""
    return f"; at most {read['read']} tokens each, the model's positions (max_length {read['asked']} asked)"


def copies_note(meta: dict) -> str:
    """The words an inputs label carries where the model's tokenizer reads some distinct texts as copies of others
    (``meta["copies_as_read"]``, :func:`aniso.stats.pipeline._check_real_tokens`: a case or spelling an uncased
    vocabulary does not tell apart, or the same first ``max_length`` tokens): fewer independent inputs than counted;
    or ""."""
    copies = meta.get("copies_as_read")
    if not copies:
        return ""
    return (f"; {copies} of the {meta.get('n_sequences')} paragraphs read by this model's tokenizer as a copy of "
            "another (a case or spelling its vocabulary does not tell apart, or the same first tokens)")


def svd_batch_note(layers) -> str:
    """The words an inputs label carries where a second-order layer is wider than its SVD batch (setting
    ``svd_batch_size``, b): a centred batch of b vectors has rank at most b - 1, so each batch's SVD anisotropy
    (Razzhigaev et al. 2024 §2.3, who use b >= 4096) is at least 1/(b - 1) and biased up against the layer's exact
    value. ``layers``: the model's :class:`~aniso.stats.accumulators.LayerAccumulator` s. ``"; SVD batches of 64
    vectors, fewer than the width 384 of layer(s) 0-6: each batch's anisotropy is rank-limited (>= 1/63), biased
    up (Razzhigaev et al.: >= 4096)"``, or ""."""
    narrow = [i for i, acc in enumerate(layers) if acc.second_order and acc.svd_batch_size < acc.dim]
    if not narrow:
        return ""
    b = layers[narrow[0]].svd_batch_size
    widths = ", ".join(str(w) for w in sorted({layers[i].dim for i in narrow}))
    return (f"; SVD batches of {b} vectors, fewer than the width {widths} of layer(s) {_spans(narrow)}: each batch's "
            f"anisotropy is rank-limited (>= 1/{b - 1}), biased up (Razzhigaev et al.: >= 4096)")


def rank_limited(summaries) -> list[str]:
    """Where a layer's SVD anisotropy and IsoScore were measured on no more vectors than the layer has dimensions
    (``aniso stats`` prints it below its table): m vectors span at most m − 1 centred directions of the d, so both
    read the layer as more anisotropic than it is (:func:`aniso.metrics.isoscore` of 128 standard normal vectors
    in 384 dimensions, an isotropic cloud: 0.25; of 20,000: 0.98). One line naming the layers, their vectors and widths, and what to give; [] where
    every layer measured has more vectors than dimensions."""
    few = [(i, s) for i, s in enumerate(summaries) if 0 < s.n_reservoir <= s.dim]
    if not few:
        return []
    counts = sorted({(s.n_reservoir, s.dim) for _, s in few})
    said = ", ".join(f"{m} vectors in {d} dimensions" for m, d in counts[:3])
    return [f"note: layer(s) {_spans([i for i, _ in few])}: SVD aniso and IsoScore are measured on {said}: fewer "
            "vectors than dimensions span only a part of the space, so both read the layer as more anisotropic than "
            "it is; give more inputs (at least as many vectors as dimensions) before reading them"]


#: How :func:`nan_columns` ends its line on second-order statistics left out of ``statistics``.
SECOND_ORDER_LEFT_OUT = "'second-order' (add 'second-order' to statistics to compute them)"


def nan_columns(summaries, second_order_max_dim: int, statistics: Collection[str] | None = None,
                second_order: bool = True) -> list[str]:
    """Why a layer's SVD anisotropy, TwoNN or IsoScore is NaN (``aniso stats`` prints it below its table,
    :func:`aniso.measure` warns it and keeps it in ``meta["nan_columns"]``): the layer is wider than
    ``second_order_max_dim`` (only first-order statistics are kept, G §3.2's flattened CNN maps), the second-order
    statistics were not asked for (``statistics``, the names :func:`aniso.measure` was given, without
    ``second-order``: vectors seen but none kept in the reservoir), or too few vectors (TwoNN needs
    :data:`~aniso.common.settings.TWONN_MIN_POINTS` to mean anything, the spectrum 2). One line per reason, naming
    the layers and the setting; a column left out is never said to need more inputs. ``second_order``: whether the
    model's layers can keep second-order statistics at all (its modality's ``second_order``); False (CNN maps, one
    flattened vector per image) is said of every layer in one line, whatever their width or the inputs."""
    import math

    from ..common.settings import TWONN_MIN_POINTS

    if not second_order:
        return [f"nan: layer(s) {_spans(list(range(len(summaries))))}: SVD anisotropy, TwoNN and IsoScore not "
                "computed: CNN maps (one flattened vector per image) get first-order statistics only, whatever the "
                "number of inputs or second_order_max_dim"] if summaries else []

    wide = [i for i, s in enumerate(summaries) if s.dim > second_order_max_dim]
    # second order kept keeps a reservoir of every layer that saw a vector: an empty one is second order left out
    left_out = [i for i, s in enumerate(summaries) if i not in wide and s.count > 0 and s.n_reservoir == 0]
    few = [i for i, s in enumerate(summaries)
           if i not in wide and i not in left_out and math.isnan(s.twonn) and s.n_reservoir < TWONN_MIN_POINTS]
    copies = [i for i, s in enumerate(summaries) if i not in wide + left_out + few and math.isnan(s.twonn)
              and 0 <= s.n_distinct < TWONN_MIN_POINTS]
    out = []
    if wide:
        out.append(f"nan: layer(s) {_spans(wide)} are wider than second_order_max_dim "
                   f"({second_order_max_dim}; ANISO_SECOND_ORDER_MAX_DIM), so only first-order statistics "
                   f"are kept: no SVD anisotropy, TwoNN or IsoScore")
    if left_out:
        names = sorted(statistics or ())
        asked = (f"statistics={names[0]!r} leaves" if len(names) == 1 else f"statistics={names} leave" if names
                 else "the statistics kept leave")
        out.append(f"nan: layer(s) {_spans(left_out)}: SVD anisotropy, TwoNN and IsoScore not computed: {asked} out "
                   f"{SECOND_ORDER_LEFT_OUT}")
    if few:
        counts = sorted({summaries[i].n_reservoir for i in few})
        shown = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]} to {counts[-1]}"
        out.append(f"nan: TwoNN of layer(s) {_spans(few)}: {shown} vector(s) in the reservoir, fewer than the "
                   f"{TWONN_MIN_POINTS} TwoNN needs to mean anything; give more inputs")
    if copies:
        counts = sorted({summaries[i].n_distinct for i in copies})
        shown = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]} to {counts[-1]}"
        out.append(f"nan: TwoNN of layer(s) {_spans(copies)}: {shown} distinct vector(s) in the reservoir (the "
                   f"others repeat them: inputs that repeat), fewer than the {TWONN_MIN_POINTS} TwoNN needs to mean "
                   "anything; give more distinct inputs")
    return out


def _spans(indices: list[int]) -> str:
    """``[0, 1, 2, 5]`` as ``0-2, 5``."""
    spans, start = [], None
    for i, j in zip(indices, indices[1:] + [None]):
        start = i if start is None else start
        if j != i + 1:
            spans.append(f"{start}-{i}" if i != start else f"{i}")
            start = None
    return ", ".join(spans)
