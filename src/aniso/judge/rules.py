"""Operationalisations that several claims share (one copy each), computed from a model's layer statistics.

``docs/claims.md``, "Metrics": a layer has *significant anisotropy* when its avg cos exceeds q95(d), the 95th
percentile of the cosine of two isotropic Gaussian vectors in its dimension (G App. B).
"""

from __future__ import annotations

import numpy as np

from .. import metrics

__all__ = ["significant_anisotropy", "significance_margin", "significance_alternatives", "without_first_token",
           "FIRST_TOKEN_EXCLUDED", "SIGNIFICANCE_RULE", "svd_profile", "profile_shape", "BELL_RULE", "EDGE", "CONTRAST",
           "SINK_WEIGHTING", "per_sequence_share", "sink_note", "first_token_cv", "underpowered", "bell_margin",
           "BELL_MARGIN"]

def underpowered(c: "metrics.Correlation", what: str, effect: float, alpha: float = 0.05) -> tuple[str | None, float]:
    """Whether a correlation test ``c`` (:func:`aniso.metrics.correlation_test`) over ``what`` (e.g. "layers") that
    did not reject could have: its power at the claim's stated ``effect`` (a bivariate-normal correlation; its sign
    is the direction a one-sided test looks in) by :func:`aniso.metrics.correlation_power`. A non-rejection is a
    finding only where that power is at least :data:`aniso.metrics.POWER_REQUIRED` (0.8).

    Returns ``(why, power)``: ``why`` says, in one line, the power and how many points would give 0.8, when the test
    did not reject and lacked the power, or that a series was constant (p-value NaN: nothing tested); else None.
    ``power`` is the test's power at ``effect`` either way.
    """
    signed = -abs(effect) if c.alternative == "less" else abs(effect)
    power = metrics.correlation_power(c.n, signed, c.method, c.alternative, alpha)
    if np.isnan(c.p_value):  # a constant series (metrics.correlation_test): nothing was tested
        return (f"{c.n} {what}: one of the two series is constant, so it has no order and no correlation can be "
                "tested"), power
    if c.p_value < alpha or power >= metrics.POWER_REQUIRED:
        return None, power
    need = metrics.points_for_power(signed, c.method, c.alternative, alpha, start=c.n + 1)
    return (f"{c.n} {what}: the {c.alternative} {c.method} test has power {power:.2f} at the claim's effect "
            f"(correlation {abs(effect)}) against the {metrics.POWER_REQUIRED} a non-rejection needs to be a finding"
            + (f"; {need} {what} would give it" if need else "")), power


#: The rule, in words, as every result states it.
SIGNIFICANCE_RULE = "some layer has avg cos > q95(d)"


def significant_anisotropy(stats) -> tuple[bool, dict]:
    """Whether some layer of ``stats`` (a :class:`~aniso.stats.results.ModelStats`) has significant anisotropy.

    Returns ``(holds, measured)``: ``measured`` gives the highest avg cos and its layer, the q95(d) and d of the
    layer furthest above its q95 (or least below it), its ``margin`` avg cos − q95(d) (the deciding statistic: the
    claim holds iff it is > 0), the number of significant layers, the number of layers and
    the avg cos of every layer (rounded to 5 decimals). G §2 Fig. 1, §3.1 Fig. 2, §3.2 Fig. 3b.
    """
    layers = stats.summaries()
    cos = np.array([s.mean_cosine for s in layers])
    q95 = np.array([s.q95 for s in layers])
    significant = cos > q95
    best = int(np.argmax(cos - q95))
    return bool(significant.any()), {
        "max_avg_cos": float(cos.max()),
        "layer_of_max": stats.layer_names[int(np.argmax(cos))],
        "q95": float(q95[best]),
        "d": layers[best].dim,
        "margin": float(cos[best] - q95[best]),
        "significant_layers": int(significant.sum()),
        "n_layers": len(cos),
        "avg_cos_per_layer": [round(float(v), 5) for v in cos],
    }


def significance_margin(stats) -> float:
    """max over layers of avg cos − q95(d): the statistic :func:`significant_anisotropy` decides on (> 0: holds)."""
    layers = stats.summaries()
    return float(max(s.mean_cosine - s.q95 for s in layers))


#: The choice a text model's statistics also hold the other side of: every token (the papers') or every token but
#: the first of each sequence (the attention-sink position of decoders).
FIRST_TOKEN_EXCLUDED = "first token of each sequence excluded"


def without_first_token(stats) -> list[dict] | None:
    """The per-layer summaries (:func:`~aniso.stats.results.summary_dict`) without the first token of each sequence, where
    the run measured them (text models other than encoder–decoders), else None."""
    aside = stats.meta.get("first_token_excluded")
    return aside if aside else None


def significance_alternatives(stats) -> dict[str, tuple[bool, float]]:
    """The significance rule under the choices the run also measured: ``{choice: (holds, margin)}``."""
    aside = without_first_token(stats)
    if aside is None or any(s.get("mean_cosine") is None for s in aside):
        return {}
    margin = max(s["mean_cosine"] - s["q95"] for s in aside)
    return {FIRST_TOKEN_EXCLUDED: (margin > 0, margin)}


#: R §4.1 operationalisation (docs/claims.md): the peak's relative depth lies strictly inside (EDGE, 1 - EDGE) and
#: its contrast to the ends, (peak - max(first, last)) / peak, is at least CONTRAST.
EDGE = 0.15
CONTRAST = 0.20
BELL_RULE = (f"argmax layer at relative depth in ({EDGE}, {1 - EDGE}) and (peak - max(first, last)) / peak >= "
             f"{CONTRAST}, on the batch-wise mean SVD anisotropy")


def svd_profile(summaries) -> tuple[np.ndarray, str]:
    """The SVD-anisotropy profile of a model, shape (n_layers,), and which estimate it is.

    ``summaries``: per-layer :class:`~aniso.stats.results.LayerSummary` objects or their dicts. R §2.3 averages the metric
    over batches of >= 4096 vectors: the batch-wise mean is used where every layer has a complete batch, else the
    exact value over all vectors. Raises ValueError if a layer has neither (no second-order statistics).
    """
    def get(s, key):
        return s[key] if isinstance(s, dict) else getattr(s, key)

    batch = np.array([np.nan if get(s, "svd_anisotropy_batch_mean") is None else get(s, "svd_anisotropy_batch_mean")
                      for s in summaries], dtype=np.float64)
    if np.isfinite(batch).all():
        return batch, "batch-wise mean"
    exact = np.array([np.nan if get(s, "svd_anisotropy") is None else get(s, "svd_anisotropy") for s in summaries],
                     dtype=np.float64)
    if not np.isfinite(exact).all():
        raise ValueError("no SVD anisotropy for some layer: second-order statistics were not kept")
    return exact, "exact"


def profile_shape(profile: np.ndarray) -> dict:
    """Where a layer profile peaks and how far it rises above its ends (R §4.1, Fig. 1).

    ``profile`` shape (n_layers,), n_layers >= 3, values >= 0. Returns ``peak``, ``peak_layer``,
    ``peak_relative_depth`` (0 = first layer, 1 = last), ``first``, ``last``, ``contrast`` ((peak - max(first,
    last)) / peak, in [0, 1]) and ``bell`` (the bell-shape rule :data:`BELL_RULE`). Raises ValueError for fewer
    than 3 layers or a non-positive peak.
    """
    p = np.asarray(profile, dtype=np.float64)
    if p.ndim != 1 or p.size < 3:
        raise ValueError(f"a profile needs >= 3 layers, got shape {p.shape}")
    k = int(np.argmax(p))
    peak = float(p[k])
    if not peak > 0:
        raise ValueError(f"the profile's peak must be positive, got {peak}")
    depth = k / (p.size - 1)
    contrast = (peak - max(float(p[0]), float(p[-1]))) / peak
    return {"peak": peak, "peak_layer": k, "peak_relative_depth": depth, "first": float(p[0]), "last": float(p[-1]),
            "contrast": contrast, "bell": bool(EDGE < depth < 1 - EDGE and contrast >= CONTRAST)}


#: The name of :func:`bell_margin` as results show it.
BELL_MARGIN = (f"bell margin: min(contrast − {CONTRAST}, peak depth − {EDGE}, {1 - EDGE} − peak depth)")


def bell_margin(shape: dict) -> float:
    """The one number :data:`BELL_RULE` decides on, from a :func:`profile_shape`: the smallest of the contrast's
    margin over :data:`CONTRAST` and the peak's relative depth's margins inside (:data:`EDGE`, 1 − EDGE). Positive
    when the profile is bell-shaped (up to a contrast exactly at CONTRAST, which the rule counts as a bell); its sign
    and its bootstrap interval speak of whichever part decides, the peak's position or its height."""
    depth = shape["peak_relative_depth"]
    return float(min(shape["contrast"] - CONTRAST, depth - EDGE, (1 - EDGE) - depth))


#: Which mean the share of sink heads of X.attention-sink is read from (the per-sequence one is reported beside).
SINK_WEIGHTING = "token-weighted (every real query position of every sequence counts once)"


def per_sequence_share(sink: dict, eps: float | None = None) -> float | None:
    """The share of sink heads (mean attention on the first token > ``eps``, default the statistics' own ε) with each
    head's mean taken per sequence, then averaged over sequences (Gu et al. 2025 §3 with every sequence weighing the
    same), from ``sink["per_sequence"]`` of ``meta["attention_sink"]``: a dict with ``share`` (or ``per_head``), or
    the per-layer lists of per-head means. None where the statistics do not have it."""
    got = sink.get("per_sequence")
    eps = sink.get("eps", 0.3) if eps is None else eps
    if isinstance(got, dict):
        if got.get("share") is not None:
            return float(got["share"])
        got = got.get("per_head")
    if not got:
        return None
    flat = np.concatenate([np.asarray(h, dtype=float).ravel() for h in got])
    return float(np.mean(flat > eps)) if flat.size else None


def sink_note(token_weighted: float, per_sequence: float | None) -> str:
    """One line saying which sink share the claim reads, and the other one."""
    other = ("the per-sequence mean was not measured in these statistics" if per_sequence is None else
             f"per-sequence mean (every sequence weighs the same) {per_sequence:.3f}")
    return (f"share of sink heads read by the claim: {token_weighted:.3f}, token-weighted (each head's mean over "
            f"every real query position of the sample); {other}; the two differ when sequences differ in length")


def first_token_cv(stats, layer) -> float | str:
    """``layer.massive_first_token_cv`` (the coefficient of variation of the layer's massive feature on the first
    token across sequences, Sun et al. 2024 §2), or why it is not informative: every sequence of ``stats`` started
    with the same token id (``stats.meta["first_token"]``, :func:`aniso.inputs.text.first_token`: the tokenizer adds a
    fixed BOS), so a causal decoder's first position computes the same states for every sequence and the value is 0
    by construction. Returns the float, or a one-line string beginning "not informative"."""
    first = stats.meta.get("first_token") or {}
    if first.get("fixed"):
        token = f" {first['token']!r}" if first.get("token") else ""
        return (f"not informative (first token is a fixed BOS: id {first['id']}{token} starts all "
                f"{first['checked']} sequences checked, so the value is constant by construction)")
    return layer.massive_first_token_cv
