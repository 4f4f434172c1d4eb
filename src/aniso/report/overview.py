"""Figures that put every measured model side by side, from the layer tables of ``results.json`` (``models``):

* avg cos against relative depth for every model, each in its colour (shades of one family per report group, see
  :func:`~aniso.report.modalities.model_styles`), each with its isotropic q95(d) (Godey et al. 2024 Fig. 1-4 in one
  plot);
* drift norm against avg cos, one point per layer, every model (the relation G §3.3 and Fig. 5 test per model);
* the SVD-anisotropy and intrinsic-dimension (TwoNN) profiles of every text decoder and encoder together
  (Razzhigaev et al. 2024 Fig. 1 and 2).

Each function returns a list of (caption, :class:`~aniso.report.figures.Png`); an empty list when no model has
the numbers it draws.
"""

from __future__ import annotations

import math

from .figures import MAX_LEGEND, bounded_legend
from .figures import label as _label
from .figures import png as _png
from .figures import pyplot as _plt
from .modalities import GROUP_SHORT, GROUPS, Palette, entry_of, group_of, model_styles

__all__ = ["overview_figures"]


def _values(layers: list[dict], key: str) -> list[float]:
    return [math.nan if s.get(key) is None else float(s[key]) for s in layers]


def _depth(n: int) -> list[float]:
    return [i / max(n - 1, 1) for i in range(n)]


def _ordered(models: dict, registry: dict | None) -> list[tuple[str, str, dict]]:
    """(model id, group key, layer table), by group in report order, then by id."""
    order = {k: i for i, (k, _, _) in enumerate(GROUPS)}
    rows = [(mid, group_of(entry_of(mid, doc, registry)), doc) for mid, doc in models.items()]
    return sorted(rows, key=lambda r: (order.get(r[1], len(order)), r[0]))


def _legend(fig, ax, rows, styles) -> None:
    """Models listed by group beside the axes; the group name heads each run of one colour."""
    from matplotlib.lines import Line2D

    handles, labels, last = [], [], None
    for mid, key, _ in rows:
        if key != last:
            handles.append(Line2D([], [], ls="none"))
            labels.append(GROUP_SHORT.get(key, key) + ":")
            last = key
        st = styles[mid]
        handles.append(Line2D([], [], color=st["color"], ls=st["ls"], marker=st["marker"], ms=4, gid=mid))
        labels.append(_label(mid))
    ncol = 1 if len(labels) <= 26 else 2
    bounded_legend(ax, handles, labels, fontsize=9, loc="upper left", bbox_to_anchor=(1.01, 1.0), ncol=ncol,
                   handlelength=2.6, borderaxespad=0)


def _height(rows) -> float:
    n_labels = len(rows) + len({k for _, k, _ in rows})
    return max(4.2, 0.19 * min(n_labels, 26) + 0.6)


def avg_cos_overview(models: dict, registry: dict | None = None,
                     styles: Palette | None = None) -> list[tuple[str, str]]:
    """avg cos of every model against relative depth (0 = embeddings, 1 = last layer), each model in its colour
    (``styles``, :func:`~aniso.report.modalities.model_styles`; default: of ``models``), with each Transformer's
    isotropic q95(d) as a thin line of its colour."""
    rows = [r for r in _ordered(models, registry) if any(math.isfinite(v) for v in _values(r[2]["layers"],
                                                                                           "mean_cosine"))]
    if not rows:
        return []
    styles = styles if styles is not None else model_styles(models, models, registry)
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.5, _height(rows)))
    for mid, key, doc in rows:
        cos = _values(doc["layers"], "mean_cosine")
        x = _depth(len(cos))
        st = styles[mid]
        ax.plot(x, cos, ms=3, lw=1.3, **st)
        if entry_of(mid, doc, registry).get("architecture") != "cnn":
            ax.plot(x, _values(doc["layers"], "q95"), color=st["color"], lw=0.6, alpha=0.7, ls=(0, (1, 1)), gid=mid)
    ax.set_xlabel("relative depth (0 = embeddings, 1 = last layer)")
    ax.set_ylabel("avg cos (exact)")
    ax.set_ylim(min(0.0, ax.get_ylim()[0]), 1.0)
    ax.set_title("every model: avg cos per layer (thin dotted: isotropic q95(d))")
    ax.grid(alpha=0.3)
    _legend(fig, ax, rows, styles)
    out = [("Across models: avg cos by relative depth, one shade family per modality, with each model's isotropic "
            "q95(d) (G Fig. 1-4 side by side)", _png(fig))]
    plt.close(fig)
    return out


def drift_overview(models: dict, registry: dict | None = None,
                   styles: Palette | None = None) -> list[tuple[str, str]]:
    """Drift norm ||x̄|| (log scale) against avg cos, one point per layer, every model's layers joined in order, each
    model in its colour (``styles``: as in :func:`avg_cos_overview`)."""
    rows = []
    for mid, key, doc in _ordered(models, registry):
        d, c = _values(doc["layers"], "drift_norm"), _values(doc["layers"], "mean_cosine")
        pts = [(a, b) for a, b in zip(d, c) if math.isfinite(a) and math.isfinite(b) and a > 0]
        if pts:
            rows.append((mid, key, {"points": pts}))
    if not rows:
        return []
    styles = styles if styles is not None else model_styles(models, models, registry)
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.5, _height(rows)))
    for mid, _, doc in rows:
        st = styles[mid]
        ax.plot([p[0] for p in doc["points"]], [p[1] for p in doc["points"]], ms=3.5, lw=0.9, **st)
    ax.set_xscale("log")
    ax.set_xlabel("drift norm ||x̄|| of the layer (log scale)")
    ax.set_ylabel("avg cos of the layer")
    ax.set_title("every model: drift norm vs avg cos, one point per layer")
    ax.grid(alpha=0.3)
    _legend(fig, ax, rows, styles)
    out = [("Across models: drift norm vs avg cos per layer (the relation G §3.3, Fig. 4-5 test model by model)",
            _png(fig))]
    plt.close(fig)
    return out


def profile_overview(models: dict, registry: dict | None = None,
                     styles: Palette | None = None) -> list[tuple[str, str]]:
    """SVD anisotropy (batch-wise mean, else exact) and TwoNN intrinsic dimension against relative depth for every
    text Transformer with a role of decoder or encoder, each model in its colour (``styles``: as in
    :func:`avg_cos_overview`): decoders solid, encoders dashed (R Fig. 1-2's view)."""
    curves = {}
    for mid, doc in models.items():
        entry = entry_of(mid, doc, registry)
        if entry.get("modality") != "text" or entry.get("role") not in ("decoder", "encoder"):
            continue
        svd = _values(doc["layers"], "svd_anisotropy_batch_mean")
        if not any(math.isfinite(v) for v in svd):
            svd = _values(doc["layers"], "svd_anisotropy")
        twonn = _values(doc["layers"], "twonn")
        if any(math.isfinite(v) for v in svd + twonn):
            curves[mid] = (entry["role"], svd, twonn)
    if not curves:
        return []
    styles = styles if styles is not None else model_styles(models, models, registry)
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    ids = sorted(curves, key=lambda m: (curves[m][0] != "decoder", m))
    for mid in ids:
        role, svd, twonn = curves[mid]
        style = {**styles[mid], "ls": "-" if role == "decoder" else "--", "ms": 3}
        axes[0].plot(_depth(len(svd)), svd, label=f"{_label(mid)} ({role})", **style)
        axes[1].plot(_depth(len(twonn)), twonn, **style)
    axes[0].set_ylabel("SVD anisotropy σ₁²/Σσᵢ²")
    axes[0].set_title("anisotropy profile (batch-wise mean)")
    axes[1].set_ylabel("intrinsic dimension (TwoNN)")
    axes[1].set_title("intrinsic-dimension profile")
    for ax in axes:
        ax.set_xlabel("relative depth")
        ax.grid(alpha=0.3)
    entries = min(len(ids), MAX_LEGEND)
    bounded_legend(fig, *axes[0].get_legend_handles_labels(), loc="lower center", bbox_to_anchor=(0.5, -0.02),
                   ncol=3 if entries > 4 else entries, fontsize=9, title="decoders solid, encoders dashed")
    fig.tight_layout(rect=(0, 0.08 + 0.05 * math.ceil(entries / 3), 1, 1))
    out = [("Across models: SVD-anisotropy and TwoNN profiles of every text decoder and encoder (R Fig. 1-2 side "
            "by side)", _png(fig))]
    plt.close(fig)
    return out


def overview_figures(models: dict, registry: dict | None = None,
                     styles: Palette | None = None) -> list[tuple[str, str]]:
    """The three cross-model views, each where a model has its numbers; none for fewer than two models (one
    model's layers are drawn in its group's figure and its layer-wise figure). ``styles``: the report's
    :func:`~aniso.report.modalities.model_styles` (default: of ``models``)."""
    if len(models) < 2:
        return []
    styles = styles if styles is not None else model_styles(models, models, registry)
    return (avg_cos_overview(models, registry, styles) + drift_overview(models, registry, styles)
            + profile_overview(models, registry, styles))
