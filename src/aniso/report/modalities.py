"""Figures across models, grouped by modality: layer-wise avg cos (Godey et al. 2024 Fig. 1, 2, 3a, 3b, 4) and
the p-values of the drift-norm correlations (Fig. 5 and 16).

Inputs are parts of ``results.json``: ``models`` (per-model layer metrics, with
the registry's ``entry`` fields) and ``results`` (claim verdicts with their
measured numbers). Each function returns a list of (caption, base64 PNG).
"""

from __future__ import annotations

import math

from .figures import MAX_LEGEND, bounded_legend
from .figures import label as _label
from .figures import png as _png
from .figures import pyplot as _plt

__all__ = ["GROUPS", "GROUP_SHORT", "group_of", "entry_of", "group_members", "model_styles", "Palette",
           "modality_figures", "drift_pvalue_figure", "profile_figure", "P_FLOOR"]

#: Report groups in order: (key, title, figure of G).
GROUPS = (
    ("text-subword", "Subword text Transformers", "G Fig. 1"),
    ("text-char", "Character/byte-level text Transformers", "G Fig. 2"),
    ("speech", "Speech Transformers (real audio frames)", "G Fig. 3a"),
    ("vision-transformer", "Vision Transformers (patch/token vectors)", "G Fig. 3b"),
    ("vision-cnn", "Convolutional networks (flattened C·H·W map per image)", "G Fig. 4"),
    ("vision-miniature", "Miniatures trained by this suite: a ViT and CNNs with everything else equal (not the "
     "papers' models)", "beyond G Fig. 3b vs 4"),
    ("text-miniature", "Text miniatures pre-trained by this suite: byte-level BERT and GPT-2 (not the papers' models)",
     "G §5, R §4"),
    ("beyond-paper", "Beyond the papers: chemistry models on reaction SMILES, tokenised atom by atom (counted in no "
     "paper category)", "no figure of the papers"),
)

#: A report group in a few words (the verdict matrix's column groups, the legends of the figures across models).
GROUP_SHORT = {"text-subword": "subword text", "text-char": "char/byte text", "speech": "speech",
               "vision-transformer": "ViTs", "vision-cnn": "CNNs", "vision-miniature":
               "vision miniatures", "text-miniature": "text miniatures", "beyond-paper": "beyond the papers"}

#: (modality, subword text?, CNN?, miniature?) → report group; anything else is grouped by its modality.
_GROUP_OF = {("text", True, False, False): "text-subword", ("text", False, False, False): "text-char",
             ("vision", False, True, False): "vision-cnn", ("vision", False, False, False): "vision-transformer",
             ("vision", False, False, True): "vision-miniature", ("vision", False, True, True): "vision-miniature",
             ("text", False, False, True): "text-miniature"}


def group_of(entry: dict) -> str:
    """The report group of a registry row (its ``modality``, ``granularity``, ``architecture``, ``miniature`` and
    ``category`` fields, as in :class:`aniso.judge.results.RegistryRow`): a ``beyond-paper`` row is grouped apart,
    whatever its modality and granularity."""
    if entry.get("category") == "beyond-paper":
        return "beyond-paper"
    m = entry.get("modality")
    key = (m, m == "text" and entry.get("granularity") == "subword", entry.get("architecture") == "cnn",
           bool(entry.get("miniature")))
    return _GROUP_OF.get(key, m or "other")



def entry_of(model_id: str, doc: dict, registry: dict | None = None) -> dict:
    """The registry row of a measured model: the one its layer table carries, else the document's registry's."""
    return doc.get("entry") or (registry or {}).get(model_id) or {}


#: Per report group, a family of shades (a matplotlib colormap and the part of it used, light to dark): each model
#: of the group takes one shade, so the figures across models read by group and each model keeps its own colour.
_SHADES = {"text-subword": ("Blues", 0.5, 0.95), "text-char": ("Purples", 0.5, 0.95), "speech": ("Greens", 0.5, 0.9),
           "vision-transformer": ("Oranges", 0.45, 0.75), "vision-cnn": ("Reds", 0.65, 0.95),
           "vision-miniature": ("YlOrBr", 0.7, 1.0), "text-miniature": ("RdPu", 0.45, 0.9),
           "beyond-paper": ("Greys", 0.5, 0.9)}
#: Shade families of the groups beyond :data:`GROUPS` (other modalities), in order of appearance.
_MORE_SHADES = (("GnBu", 0.55, 0.95), ("YlGn", 0.55, 0.95), ("PuBuGn", 0.55, 0.95))
_LINES = ("-", "--", "-.", ":")
_MARKERS = ("o", "s", "^", "v", "D", "P", "X", "*")


class Palette(dict):
    """Model id -> matplotlib style (``color``, ``ls``, ``marker``, ``gid``), as :func:`model_styles` makes it; a
    model it does not know is drawn grey (never another model's colour)."""

    def __missing__(self, model_id: str) -> dict:
        return {"color": "0.45", "ls": "-", "marker": ".", "gid": model_id}


def model_styles(ids, models: dict | None = None, registry: dict | None = None) -> Palette:
    """The one colour of each model across every figure of a report: ``{model id: {"color", "ls", "marker",
    "gid"}}`` for the model ids ``ids``. Each report group (:func:`group_of`, from :func:`entry_of` of ``models``
    and ``registry``) has a family of shades; its models, ordered by id, take shades from light to dark and,
    within the group, their own line style and marker. ``gid`` is the model id: a figure sets it on every curve of
    the model (``ax.plot(..., **style)``), which :func:`aniso.report.figures.png` reads back. The same ids, models
    and registry give the same styles."""
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    models, order = models or {}, {k: i for i, (k, _, _) in enumerate(GROUPS)}
    by_group: dict[str, list[str]] = {}
    for mid in sorted(set(ids)):
        by_group.setdefault(group_of(entry_of(mid, models.get(mid) or {}, registry)), []).append(mid)
    extra = iter(_MORE_SHADES * (1 + len(by_group) // len(_MORE_SHADES)))
    out = Palette()
    for key in sorted(by_group, key=lambda k: (order.get(k, len(order)), k)):
        name, lo, hi = _SHADES.get(key) or next(extra)
        members = by_group[key]
        n = len(members)
        for k, mid in enumerate(members):
            shade = (lo + hi) / 2 if n == 1 else lo + (hi - lo) * k / (n - 1)
            out[mid] = {"color": to_hex(colormaps[name](shade)), "ls": _LINES[k % len(_LINES)],
                        "marker": _MARKERS[k % len(_MARKERS)], "gid": mid}
    return out


def group_members(models: dict[str, dict], key: str, registry: dict | None = None,
                  also: dict[str, set[str]] | None = None) -> dict[str, dict]:
    """The measured models a group's figure draws: those of the group (by :func:`entry_of`), and those ``also``
    names for it."""
    extra = (also or {}).get(key, set())
    return {mid: doc for mid, doc in models.items() if group_of(entry_of(mid, doc, registry)) == key or mid in extra}


def modality_figures(models: dict[str, dict], registry: dict | None = None,
                     also: dict[str, set[str]] | None = None, styles: Palette | None = None) -> list[tuple[str, str]]:
    """One figure per group with measured models: avg cos per layer against relative depth (0 = embedding
    output, 1 = last layer), each model's isotropic q95(d) dashed (Transformers) or the 0.2 level (speech, CNNs).

    A model's group comes from its layer table's registry row, else from ``registry`` (``results.json``'s
    ``registry``); ``also`` adds, per group key, the models a claim of that figure measured, so that a figure
    shows every model its claim has a verdict for. ``styles`` (:func:`model_styles`, default: of ``models``) gives
    each model its colour."""
    styles = styles if styles is not None else model_styles(models, models, registry)
    plt = _plt()
    out = []
    for key, title, figure in GROUPS:
        members = group_members(models, key, registry, also)
        if not members:
            continue
        fig, ax = plt.subplots(figsize=(8, 3.8 + 0.12 * max(min(len(members), MAX_LEGEND) - 12, 0)))
        for mid, doc in members.items():
            cos = [math.nan if s.get("mean_cosine") is None else s["mean_cosine"] for s in doc["layers"]]
            n = len(cos)
            x = [j / max(n - 1, 1) for j in range(n)]
            ax.plot(x, cos, ms=3, label=_label(mid), **styles[mid])
            if key in ("speech", "vision-cnn") or entry_of(mid, doc, registry).get("architecture") == "cnn":
                continue
            q95 = [math.nan if s.get("q95") is None else s["q95"] for s in doc["layers"]]
            ax.plot(x, q95, lw=0.7, color=styles[mid]["color"], ls=(0, (1, 1)), gid=mid)
        if key in ("speech", "vision-cnn", "vision-miniature"):
            ax.axhline(0.2, color="k", ls=":", lw=1, label="0.2 (G §3.2)")
        ax.set_xlabel("relative depth (layer / last layer)")
        ax.set_ylabel("avg cos")
        ax.set_ylim(min(0.0, ax.get_ylim()[0]), 1.0)
        ax.grid(alpha=0.3)
        bounded_legend(ax, fontsize=9, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the curves, not over
        ax.set_title(f"{title} ({figure}); thin dotted: isotropic q95(d)" if key not in ("speech", "vision-cnn")
                     else f"{title} ({figure})", fontsize=9)
        out.append((f"{title} — {figure}", _png(fig)))
        plt.close(fig)
    return out


#: p-values below this are drawn at it (a p-value can be exactly 0 in float64, which a log axis cannot show).
P_FLOOR = 1e-16

#: The claims whose p-values G Fig. 5 (Spearman) and Fig. 16 (Pearson) plot.
DRIFT_CLAIMS = ("G.drift-correlation-spearman", "G.drift-correlation-pearson")


#: The most models the p-value figure draws, one row each (:func:`drift_pvalue_figure`).
MAX_PVALUE_ROWS = 2 * MAX_LEGEND


def drift_pvalue_figure(results: list, models: dict[str, dict], registry: dict | None = None
                        ) -> list[tuple[str, str]]:
    """G Fig. 5 / 16: p-values of the Spearman and Pearson tests between per-layer drift norm and avg cos,
    one point per model (log scale), the 0.05 line, models ordered by report group (the first
    :data:`MAX_PVALUE_ROWS`; the caption says how many are left out). ``results`` are
    :class:`~aniso.judge.results.ClaimResult`; their typed ``p_value`` is read."""
    p = {(r.claim_id, r.model_id): r.p_value for r in results
         if r.claim_id in DRIFT_CLAIMS and r.model_id and r.p_value is not None}
    rows = {m: (p[(DRIFT_CLAIMS[0], m)], p[(DRIFT_CLAIMS[1], m)]) for (c, m) in p
            if c == DRIFT_CLAIMS[0] and (DRIFT_CLAIMS[1], m) in p}
    if not rows:
        return []
    order = {k: i for i, (k, _, _) in enumerate(GROUPS)}
    ids = sorted(rows, key=lambda m: (order.get(group_of(entry_of(m, models.get(m) or {}, registry)), 99), m))
    left_out = max(len(ids) - MAX_PVALUE_ROWS, 0)  # a figure of thousands of rows: the claims' tables give them all
    ids = ids[:MAX_PVALUE_ROWS]
    plt = _plt()
    # one row per model (names read horizontally), p along a log axis
    fig, ax = plt.subplots(figsize=(8, 1.6 + 0.28 * len(ids)))
    y = list(range(len(ids)))[::-1]
    ax.scatter([max(rows[m][0], P_FLOOR) for m in ids], y, marker="o", label="Spearman (Fig. 5)")
    ax.scatter([max(rows[m][1], P_FLOOR) for m in ids], y, marker="x", s=40, label="Pearson (Fig. 16)")
    ax.axvline(P_FLOOR, color="0.6", ls=":", lw=0.8, label=f"floor {P_FLOOR:g} (smaller p drawn here)")
    ax.axvline(0.05, color="r", ls="--", lw=1, label="p = 0.05")
    ax.set_xscale("log")
    ax.set_yticks(y)
    ax.set_yticklabels([_label(m) for m in ids])
    ax.set_ylim(-0.7, len(ids) - 0.3)
    ax.set_xlabel("p-value (log scale)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=9, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title("drift norm vs avg cos across layers", fontsize=10)
    out = [(f"p-values of the drift-norm correlations — G Fig. 5 and 16 (p < {P_FLOOR:g} drawn at {P_FLOOR:g})"
            + (f"; the first {len(ids)} models of {len(ids) + left_out}, the claims' tables give every p-value"
               if left_out else ""), _png(fig))]
    plt.close(fig)
    return out


def profile_figure(models: dict[str, dict], registry: dict | None = None,
                   styles: Palette | None = None) -> list[tuple[str, str]]:
    """R Fig. 1: the SVD-anisotropy profile of every measured text Transformer against relative depth (decoders
    solid, encoders dashed), with every token (left, R's setting) and without the first token of each sequence
    (right, where measured). Models without second-order statistics are left out. ``styles``: as in
    :func:`modality_figures`."""
    from ..judge.rules import svd_profile

    styles = styles if styles is not None else model_styles(models, models, registry)
    curves = {}
    for mid, doc in models.items():
        entry = entry_of(mid, doc, registry)
        if entry.get("modality") != "text" or entry.get("architecture") != "transformer":
            continue
        try:
            profile, estimate = svd_profile(doc["layers"])
        except ValueError:
            continue
        aside = doc.get("meta", {}).get("first_token_excluded")
        without = svd_profile(aside)[0] if aside else None
        curves[mid] = (entry.get("role"), profile, without, estimate)
    if not curves:
        return []
    plt = _plt()
    panels = [("every token (R's setting)", 1)]
    if any(curve[2] is not None for curve in curves.values()):  # the second panel only where it was measured
        panels.append(("first token of each sequence excluded", 2))
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4.0), squeeze=False)
    axes = list(axes[0])
    for ax, (title, which) in zip(axes, panels):
        for mid, curve in curves.items():
            y = curve[which]
            if y is None:
                continue
            x = [k / max(1, len(y) - 1) for k in range(len(y))]  # one layer: at depth 0
            ax.plot(x, y, marker=".", label=f"{_label(mid)} ({curve[0]})", color=styles[mid]["color"],
                    ls="-" if curve[0] == "decoder" else "--", gid=mid)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("relative depth (0 = embeddings, 1 = last layer)")
        ax.set_ylabel("SVD anisotropy σ₁²/Σσᵢ² (batch mean)")
        ax.grid(alpha=0.3)
    # every model is in the first panel: its legend beside the last one, clear of every axis
    bounded_legend(axes[-1], *axes[0].get_legend_handles_labels(), fontsize=9, loc="upper left",
                   bbox_to_anchor=(1.01, 1.0))
    out = [("SVD-anisotropy profiles of decoders and encoders — R Fig. 1", _png(fig))]
    plt.close(fig)
    return out
