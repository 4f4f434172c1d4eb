"""Figures of the claims that contest or explain G and R (docs/claims.md, "M and X"): massive activations per layer,
attention-sink share per layer and along training, rogue-dimension share per layer, avg cos before and after the
final normalisation, partition isotropy raw and centred. Each caption names its claim id, which places the figure
beside that claim in the report. Inputs are parts of ``results.json``; each function returns (caption, PNG) pairs.
"""

from __future__ import annotations

import numpy as np

from .figures import bounded_legend
from .figures import label as _label
from .figures import png as _png
from .figures import pyplot as _plt
from .figures import symlog
from .modalities import Palette, model_styles
from .overview import _depth, _values  # one definition of a layer column and of relative depth

__all__ = ["counter_figures"]


def _per_layer(models: dict, key: str, keep, title: str, ylabel: str, caption: str, styles: Palette, logy=False,
               level=None):
    curves = {mid: _values(doc["layers"], key) for mid, doc in models.items() if keep(doc.get("entry") or {})}
    curves = {m: v for m, v in curves.items() if np.isfinite(v).any()}
    if not curves:
        return []
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 3.4))
    for mid, v in curves.items():
        ax.plot(_depth(len(v)), v, ms=3, label=_label(mid), **styles[mid])
    if level is not None:
        ax.axhline(level, color="k", ls=":", lw=1, label=f"{level:g}")
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel("relative depth (0 = embeddings, 1 = last layer)")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    bounded_legend(ax, fontsize=9, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    out = [(caption, _png(fig))]
    plt.close(fig)
    return out


def _pairs(rows: dict[str, tuple[float, float]], labels: tuple[str, str], ylabel: str, title: str, caption: str,
           level: float | None = None):
    """Two numbers per model as a pair of horizontal bars, one row per model (its name read horizontally), in
    greys (a quantity, not a model: the models' colours are their curves')."""
    if not rows:
        return []
    plt = _plt()
    ids = list(rows)
    fig, ax = plt.subplots(figsize=(7, 1.2 + 0.32 * len(ids)))
    y = np.arange(len(ids))[::-1]
    ax.barh(y + 0.2, [rows[m][0] for m in ids], 0.4, color="0.7", label=labels[0])
    ax.barh(y - 0.2, [rows[m][1] for m in ids], 0.4, color="0.25", label=labels[1])
    if level is not None:
        ax.axvline(level, color="k", ls=":", lw=1, label=f"{level:g}")
    ax.set_yticks(y)
    ax.set_yticklabels([_label(m) for m in ids])
    ax.set_ylim(-0.7, len(ids) - 0.3)
    ax.set_xlabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3, axis="x")
    bounded_legend(ax, fontsize=9, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    out = [(caption, _png(fig))]
    plt.close(fig)
    return out


def _sink_along_training(training: dict, styles: Palette, eps: float = 0.3):
    curves = {sid: [float(np.mean(np.asarray(c) > eps)) for c in doc["sink"]] for sid, doc in training.items()
              if doc.get("sink")}
    if not curves:
        return []
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 3.4))
    for sid, v in curves.items():
        ax.plot(training[sid]["steps"], v, ms=3, label=_label(sid), **styles[sid])
    positive = [s for doc in training.values() for s in doc["steps"] if s > 0]
    symlog(ax, min(positive) if positive else 1.0)
    ax.set_xlabel("training step (linear from 0 to the first checkpoint, logarithmic above)")
    ax.set_ylabel(f"share of heads with attention on the first token > {eps}")
    ax.grid(alpha=0.3)
    bounded_legend(ax, fontsize=9, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    out = [("X.attention-sink along training: share of sink heads per checkpoint (Gu et al. 2025 Fig. 3)", _png(fig))]
    plt.close(fig)
    return out


def counter_figures(models: dict[str, dict], training: dict | None = None, registry: dict | None = None,
                    styles: Palette | None = None) -> list[tuple[str, str]]:
    """The figures of the M and X claims from ``results.json``'s ``models`` (and ``experiments.training``), each
    model and series in its colour (``styles``, :func:`~aniso.report.modalities.model_styles`; default: of the
    models and series drawn)."""
    if styles is None:
        styles = model_styles([*models, *(training or {})], models, registry)
    def decoder(e):
        return e.get("modality") == "text" and e.get("role") == "decoder"

    def text(e):
        return e.get("modality") == "text" and e.get("architecture") == "transformer"

    out = []
    out += _per_layer(models, "massive_ratio", decoder, "largest |activation| / median |activation|",
                      "ratio (log scale)", "X.massive-activations: largest activation over the median, per layer "
                      "(Sun et al. 2024 Fig. 1-2; dotted: the 100x criterion)", styles, logy=True, level=100.0)
    sinks = {mid: doc["meta"]["attention_sink"]["share_per_layer"] for mid, doc in models.items()
             if (doc.get("meta") or {}).get("attention_sink")}
    if sinks:
        out += _per_layer({m: {"layers": [{"share": v} for v in s], "entry": {}} for m, s in sinks.items()}, "share",
                          lambda e: True, "share of heads whose mean attention on the first token > 0.3",
                          "share of sink heads", "X.attention-sink: share of sink heads per attention layer "
                          "(Gu et al. 2025 Fig. 2; dotted: 0.3)", styles, level=0.3)
    out += _sink_along_training(training or {}, styles)
    out += _per_layer(models, "rogue_top3_share", text, "share of avg cos carried by the top 3 dimensions",
                      "top-3 share", "X.rogue-dimensions: share of avg cos in the 3 largest dimensions per layer "
                      "(Timkey & van Schijndel 2021 Fig. 1; dotted: 0.5)", styles, level=0.5)
    norms = {mid: (doc["meta"]["final_norm"]["before"]["mean_cosine"], doc["meta"]["final_norm"]["after"]["mean_cosine"])
             for mid, doc in models.items() if (doc.get("meta") or {}).get("final_norm")}
    out += _pairs(norms, ("before the final norm", "after it"), "avg cos", "last layer: avg cos around the final "
                  "normalisation", "M.final-norm-isotropises: avg cos of the last layer before and after the final "
                  "normalisation (Machina & Mercer 2024 Fig. 2-3)")
    iso = {mid: (doc["meta"]["embedding_isotropy"]["input"]["raw"], doc["meta"]["embedding_isotropy"]["input"]["centred"])
           for mid, doc in models.items() if "input" in ((doc.get("meta") or {}).get("embedding_isotropy") or {})}
    out += _pairs(iso, ("raw", "mean-centred"), "I(W)", "partition isotropy of the input embeddings",
                  "M.partition-isotropy: I(W) of the input embedding matrix, raw and centred (Machina & Mercer 2024 "
                  "Fig. 1; dotted: 0.9)", level=0.9)
    return out
