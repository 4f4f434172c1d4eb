"""Figures of the untrained-block experiment (Godey et al. 2024 §4, Fig. 6–10) and the block-type comparison.

Each function takes ``{registry id: [sweep dict per seed]}`` (the
``experiments["untrained_block"]`` part of ``results.json``, sweeps as written
by :meth:`aniso.experiments.untrained_block.BlockSweep.to_dict`) and returns a
base64 PNG. One column per block; every seed is a thin line.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from .figures import png as _png
from .figures import pyplot as _plt
from .figures import symlog
from .modalities import Palette, model_styles

__all__ = ["block_figures"]



def _series(sweep: dict, key: str) -> list[float]:
    return [math.nan if p.get(key) is None else p[key] for p in sweep["points"]]


def _norms(sweep: dict) -> list[float]:
    return [p["bias_norm"] for p in sweep["points"]]


def _has_attention(sweeps: list[dict]) -> bool:
    return sweeps[0]["points"][0].get("row_max") is not None


def _grid(blocks: dict[str, list[dict]], rows: list[tuple[str, Callable]], title: str, attention_only: bool = False):
    plt = _plt()
    ids = [b for b, s in blocks.items() if _has_attention(s) or not attention_only]
    # one panel per (block, row); a single row of more than three blocks wraps into a grid of three columns
    wrap = 3 if len(rows) == 1 and len(ids) > 3 else len(ids)
    n_rows = len(rows) * math.ceil(len(ids) / wrap)
    fig, axes = plt.subplots(n_rows, wrap, figsize=(3.9 * wrap, 3.0 * n_rows), squeeze=False)
    for extra in range(len(ids), n_rows * wrap if wrap != len(ids) else 0):
        axes[extra // wrap][extra % wrap].axis("off")
    for j, bid in enumerate(ids):
        for i, (ylabel, draw) in enumerate(rows):
            ax = axes[i + j // wrap][j % wrap] if wrap != len(ids) else axes[i][j]
            draw(ax, blocks[bid])
            symlog(ax, 0.5)
            ax.grid(alpha=0.3)
            if i == 0:
                ax.set_title(bid, fontsize=9)
            if i == len(rows) - 1:
                ax.set_xlabel("bias norm N")
            if j % wrap == 0:
                ax.set_ylabel(ylabel)
    fig.suptitle(title, y=1.02)
    fig.tight_layout()
    out = _png(fig)
    plt.close(fig)
    return out


def _lines(pairs: list[tuple[str, str, str]], logy: bool = False) -> Callable:
    """Draw each (key, colour, label) for every seed as a thin line; label once."""

    def draw(ax, sweeps):
        for k, (key, colour, label) in enumerate(pairs):
            for s_i, s in enumerate(sweeps):
                ax.plot(_norms(s), _series(s, key), color=colour, lw=0.9, alpha=0.75,
                        label=label if s_i == 0 else None)
        if logy:
            ax.set_yscale("log")
        ax.legend(fontsize=9)

    return draw


def _norms_with_fixed_point(ax, sweeps):
    _lines([("input_mean_norm", "C0", "E||x+b||"), ("output_mean_norm", "C3", "E||T(x+b)||")], logy=True)(ax, sweeps)
    for s in sweeps:
        n_star = s["fixed_point"].get("n_star")
        if n_star is not None:
            ax.axvline(n_star, color="k", lw=0.6, ls="--")
    stars = [s["fixed_point"]["n_star"] for s in sweeps if s["fixed_point"].get("n_star") is not None]
    ax.text(0.02, 0.02, f"N* = {sum(stars) / len(stars):.4g} ({len(stars)}/{len(sweeps)} seeds)" if stars
            else "no fixed point on the sweep", transform=ax.transAxes, fontsize=9)


def _score_histograms(blocks: dict[str, list[dict]]) -> str:
    plt = _plt()
    ids = [b for b, s in blocks.items() if _has_attention(s)]
    cols = min(len(ids), 3)
    n_rows = math.ceil(len(ids) / cols)
    fig, grid = plt.subplots(n_rows, cols, figsize=(3.9 * cols, 3.2 * n_rows), squeeze=False)
    flat = [a for row in grid for a in row]
    for ax in flat[len(ids):]:
        ax.axis("off")
    for ax, bid in zip(flat, ids):
        s = blocks[bid][0]
        pts = s["points"]
        picks = sorted({0, len(pts) // 3, 2 * len(pts) // 3, len(pts) - 1})
        for c, i in enumerate(picks):
            p = pts[i]
            edges, counts = p["score_hist_edges"], p["score_hist_counts"]
            total = sum(counts) or 1
            dens = [cnt / total / (edges[k + 1] - edges[k]) for k, cnt in enumerate(counts)]
            ax.stairs(dens, edges, color=f"C{c}", label=f"N = {p['bias_norm']:.3g}")
        ax.set_yscale("log")
        ax.set_xlabel("pre-softmax score QKᵀ/√d_k")
        ax.set_title(f"{bid} (seed {s['spec']['seed']})", fontsize=9)
        ax.legend(fontsize=9)
        ax.grid(alpha=0.3)
    for row in grid:
        row[0].set_ylabel("density (subsample)")
    fig.suptitle("Fig. 7: pre-softmax score histograms as N grows", y=1.03)
    fig.tight_layout()
    out = _png(fig)
    plt.close(fig)
    return out


def _comparison(blocks: dict[str, list[dict]], styles: Palette) -> str:
    """All block kinds on shared axes (mean over seeds), each block in its colour: what comes from attention, what
    from normalisation."""
    plt = _plt()
    panels = [
        ("E||T(x+b)|| / E||x+b||", lambda s: [o / i for o, i in zip(_series(s, "output_mean_norm"),
                                                                    _series(s, "input_mean_norm"))], True),
        ("avg cos out − avg cos in", lambda s: [o - i for o, i in zip(_series(s, "output_mean_cos"),
                                                                     _series(s, "input_mean_cos"))], False),
        ("score std", lambda s: _series(s, "score_std"), True),
        ("mean row entropy (nats)", lambda s: _series(s, "row_entropy"), False),
    ]
    fig, grid = plt.subplots(2, 2, figsize=(10, 6.4))
    axes = [a for row in grid for a in row]
    for ax, (label, fn, logy) in zip(axes, panels):
        for bid, sweeps in blocks.items():
            ys = [fn(s) for s in sweeps]
            if all(math.isnan(v) for y in ys for v in y):
                continue
            mean = [sum(col) / len(col) for col in zip(*ys)]
            ax.plot(_norms(sweeps[0]), mean, ms=2.5, label=bid, **styles[bid])
        symlog(ax, 0.5)
        if logy:
            ax.set_yscale("log")
        ax.set_title(label, fontsize=9)
        ax.set_xlabel("bias norm N")
        ax.grid(alpha=0.3)
    axes[0].axhline(1.0, color="k", lw=0.6, ls="--")
    axes[1].axhline(0.0, color="k", lw=0.6, ls="--")
    axes[0].legend(fontsize=9)
    fig.suptitle("Block types compared (mean over seeds)", y=1.03)
    fig.tight_layout()
    out = _png(fig)
    plt.close(fig)
    return out


def block_figures(blocks: dict[str, list[dict]], styles: Palette | None = None) -> list[tuple[str, str]]:
    """(caption, base64 PNG) for G Fig. 6a, 6b, 7, 8a/8b, 9, 10 and the block-type comparison, where each block is
    drawn in its colour (``styles``, :func:`~aniso.report.modalities.model_styles`; default: of the blocks)."""
    if not blocks:
        return []
    styles = styles if styles is not None else model_styles(blocks)
    figs = [
        ("G Fig. 6a: avg cos of inputs x+b and outputs T(x+b)",
         _grid(blocks, [("avg cos", _lines([("input_mean_cos", "C0", "inputs x+b"),
                                             ("output_mean_cos", "C3", "outputs T(x+b)")]))], "Fig. 6a")),
        ("G Fig. 6b: mean norms of inputs and outputs; dashed: N* per seed",
         _grid(blocks, [("mean norm", _norms_with_fixed_point)], "Fig. 6b")),
        ("G Fig. 7: histograms of pre-softmax scores for four bias norms (first seed)", _score_histograms(blocks)),
        ("G Fig. 8a/8b: queries and keys, head-averaged avg cos and mean norm",
         _grid(blocks, [("avg cos (mean over heads)", _lines([("query_mean_cos", "C0", "Q"),
                                                              ("key_mean_cos", "C1", "K")])),
                        ("mean norm", _lines([("query_mean_norm", "C0", "||Q||"), ("key_mean_norm", "C1", "||K||")]))],
               "Fig. 8", attention_only=True)),
        ("G Fig. 9: softmax rows: mean of row max, median, min",
         _grid(blocks, [("softmax value", _lines([("row_max", "C3", "max"), ("row_median", "C2", "median"),
                                                  ("row_min", "C0", "min")], logy=True))], "Fig. 9",
               attention_only=True)),
        ("G Fig. 10: per-sequence extremes of the attention map, mean over sequences and heads",
         _grid(blocks, [("softmax value", _lines([("seq_max", "C3", "sequence max"), ("seq_min", "C0", "sequence min")],
                                                 logy=True))], "Fig. 10", attention_only=True)),
        ("Block types compared: which effects come from attention, which from normalisation",
         _comparison(blocks, styles)),
    ]
    return figs
