"""Figures of the training-dynamics claims, from ``results.json``'s ``experiments.training`` (one
:func:`aniso.stats.dynamics.series_document` per checkpoint series).

Per series: G Fig. 13 (cos(Q̄, K̄) per layer), Fig. 14 (|Q̄·K̄|), Fig. 15 (attention entropy), R Fig. 3-4 (SVD
anisotropy) and R Fig. 2 (TwoNN, mean ± batch std) against the training step; G Fig. 12 / 21 / 22 (Q̄_s and K̄_s
as arrows on the first two singular directions of Q ∪ K, K only, Q only, for the two heads with the highest and the
lowest final cosine). Across seeds of a family: G Fig. 23. Each function returns a list of (caption, base64 PNG).
"""

from __future__ import annotations

import numpy as np

from .figures import label as _label
from .figures import png as _png
from .figures import pyplot as _plt
from .figures import symlog
from .modalities import Palette, model_styles

__all__ = ["series_figures", "projection_figure", "seed_figure", "training_figures"]


def _x(steps: list[int]) -> np.ndarray:
    return np.asarray(steps, dtype=float)


def _per_layer(ax, steps, values: np.ndarray, title: str, ylabel: str) -> None:
    """values (n_checkpoints, L): one line per layer, coloured from first (dark) to last (light)."""
    plt = _plt()
    n = values.shape[1]
    for layer in range(n):
        ax.plot(_x(steps), values[:, layer], "o-", ms=3, color=plt.cm.viridis(layer / max(n - 1, 1)),
                label=f"layer {layer}")
    ax.set_title(title, fontsize=9)
    ax.set_ylabel(ylabel, fontsize=9)


def series_figures(series_id: str, doc: dict) -> list[tuple[str, str]]:
    """G Fig. 13-15 and R Fig. 2-4 for one series, against the step (symmetric log axis: step 0 included)."""
    plt = _plt()
    steps = doc["steps"]
    cos, dot, ent = (np.asarray(doc[k], dtype=float) for k in ("qk_cos", "qk_dot", "entropy"))
    fig, grid = plt.subplots(2, 3, figsize=(12, 6.6))
    axes = [grid[0][0], grid[0][1], grid[0][2], grid[1][0], grid[1][1]]
    _per_layer(axes[0], steps, cos.mean(2), "G Fig. 13: cos(Q̄, K̄), mean over heads", "cosine")
    axes[0].axhline(0, color="k", lw=0.6)
    _per_layer(axes[1], steps, np.abs(dot).mean(2), "G Fig. 14: |Q̄·K̄|, mean over heads", "|dot|")
    _per_layer(axes[2], steps, ent.mean(2), "G Fig. 15: attention entropy", "nats")
    svd = np.asarray([[np.nan if v is None else v for v in row] for row in doc["svd_anisotropy_batch_mean"]])
    axes[3].plot(_x(steps), np.nanmean(svd, 1), "o-", color="C3", label="mean over layers")
    axes[3].set_title("R Fig. 3-4: SVD anisotropy (batch-wise)", fontsize=9)
    twonn = np.asarray([[np.nan if v is None else v for v in row] for row in doc["twonn_batch_mean"]])
    std = np.asarray([[np.nan if v is None else v for v in row] for row in doc["twonn_batch_std"]])
    axes[4].errorbar(_x(steps), np.nanmean(twonn, 1), yerr=np.nanmean(std, 1), fmt="o-", color="C4", capsize=3,
                     label="mean over layers ± batch std")
    axes[4].set_title("R Fig. 2: TwoNN intrinsic dimension", fontsize=9)
    for ax in axes:
        ax.set_xlim(right=max(steps) * 1.2 if max(steps) > 0 else 1)
        symlog(ax, max(1, min(s for s in steps if s > 0) if any(steps) else 1))
        ax.set_xlabel("training step", fontsize=9)
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=9)
    axes[4].legend(fontsize=9)
    # the sixth cell holds the layer legend of the three per-layer panels
    grid[1][2].axis("off")
    handles, labels = axes[0].get_legend_handles_labels()
    grid[1][2].legend(handles, labels, loc="center", fontsize=9, ncol=2 if len(labels) > 12 else 1,
                      title="layer (dark: first)")
    fig.suptitle(f"{series_id} ({doc.get('inputs') or 'inputs not recorded'})")
    fig.tight_layout()
    out = [(f"{series_id}: queries, keys and attention along training (G Fig. 13-15); SVD anisotropy and "
            f"intrinsic dimension along training (R Fig. 2-4)", _png(fig))]
    plt.close(fig)
    return out


def projection_figure(series_id: str, doc: dict) -> list[tuple[str, str]]:
    """G Fig. 12, 21, 22: Q̄_s (blue) and K̄_s (red) along training as arrows from checkpoint to checkpoint, on
    the first two singular directions of Q ∪ K, K only and Q only, for two heads."""
    plt = _plt()
    bases = (("qk", "Q ∪ K (G Fig. 12)"), ("k", "K only (G Fig. 21)"), ("q", "Q only (G Fig. 22)"))
    heads = doc["projections"]["qk"]
    # constrained layout keeps each row's titles clear of the axis labels of the row above
    fig, axes = plt.subplots(len(heads), 3, figsize=(12, 3.6 * len(heads)), squeeze=False, layout="constrained")
    for col, (basis, title) in enumerate(bases):
        for row, head in enumerate(doc["projections"][basis]):
            ax = axes[row][col]
            for key, colour in (("q", "C0"), ("k", "C3")):
                p = np.asarray(head[key], dtype=float)
                for a, b in zip(p[:-1], p[1:]):
                    ax.annotate("", xy=b, xytext=a, arrowprops=dict(arrowstyle="->", color=colour, lw=1.2))
                ax.plot(p[:, 0], p[:, 1], "o", ms=2, color=colour, label=f"{key.upper()}̄_s")
            ax.plot([0], [0], "k+", ms=8)
            ax.set_title(f"{title}\nlayer {head['layer']}, head {head['head']}", fontsize=9)
            ax.set_xlabel("1st singular direction", fontsize=9)
            ax.set_ylabel("2nd", fontsize=9)
            ax.tick_params(labelsize=9)
            ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=9)
    fig.suptitle(f"{series_id}: mean query and key along training (step 0 to {doc['steps'][-1]})")
    out = [(f"{series_id}: Q̄_s and K̄_s projected on the first two singular directions (G Fig. 12, 21-22)",
            _png(fig))]
    plt.close(fig)
    return out


def seed_figure(family: str, docs: dict[str, dict], styles: Palette | None = None) -> list[tuple[str, str]]:
    """G Fig. 23: cos(Q̄, K̄) of the first and the last layer (mean over heads) along training, one line per seed,
    each series in its colour (``styles``, :func:`~aniso.report.modalities.model_styles`; default: of ``docs``)."""
    styles = styles if styles is not None else model_styles(docs)
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.2))
    for sid, doc in docs.items():
        cos = np.asarray(doc["qk_cos"], dtype=float).mean(2)
        for ax, layer in zip(axes, (0, -1)):
            ax.plot(_x(doc["steps"]), cos[:, layer], ms=3, label=_label(sid), **styles[sid])
    for ax, name in zip(axes, ("first layer", "last layer")):
        symlog(ax, 1.0)
        ax.axhline(0, color="k", lw=0.6)
        ax.set_title(f"cos(Q̄, K̄), {name}", fontsize=9)
        ax.set_xlabel("training step", fontsize=9)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=9)
    out = [(f"{family}: the query/key alignment across seeds (G Fig. 23)", _png(fig))]
    plt.close(fig)
    return out


def training_figures(training: dict[str, dict], registry: dict[str, dict],
                     styles: Palette | None = None) -> list[tuple[str, str]]:
    """Every figure of the training section: per series, then across seeds for each family with >= 2 series
    (``styles``: the report's :func:`~aniso.report.modalities.model_styles`; default: of the series)."""
    styles = styles if styles is not None else model_styles(training, None, registry)
    out: list[tuple[str, str]] = []
    families: dict[str, dict[str, dict]] = {}
    for sid, doc in training.items():
        out += series_figures(sid, doc) + projection_figure(sid, doc)
        families.setdefault((registry.get(sid) or {}).get("family") or sid, {})[sid] = doc
    for family, docs in families.items():
        if len(docs) >= 2:
            out += seed_figure(family, docs, styles)
    return out
