"""The HTML report: claim × model matrix, per-model layer-wise figures, provenance.

Everything placed in the page goes through Jinja2 with autoescaping on;
figures are PNGs embedded as data URIs, so the report is one self-contained file.
"""

from __future__ import annotations

import math
from pathlib import Path

from jinja2 import Environment, PackageLoader, select_autoescape

from ..results import ResultsDocument, read_results
from .figures import png as _png
from .figures import pyplot

__all__ = ["layer_figure", "write_html_report", "render_html"]

VERDICT_CLASS = {
    "holds": "holds",
    "does not hold": "fails",
    "expected not to hold": "expected",
    "holds, expected not to": "fails",
    "skipped": "skipped",
    "error": "fails",
}


def _series(layers: list[dict], key: str) -> list[float]:
    return [math.nan if layer.get(key) is None else layer[key] for layer in layers]


def layer_figure(model_id: str, model_doc: dict) -> str:
    """Layer-wise figure of one model as base64 PNG: avg cos with q95(d), drift norm, SVD anisotropy.

    Godey et al. 2024 Fig. 1 (avg cos per layer) and App. B Fig. 18 (q95 line);
    §3.3 (drift norm); Razzhigaev et al. 2024 Fig. 1 (SVD anisotropy, exact and
    batch-wise mean ± std).
    """
    plt = pyplot()
    layers = model_doc["layers"]
    x = list(range(len(layers)))
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.2))
    ax = axes[0]
    ax.plot(x, _series(layers, "mean_cosine"), "o-", label="avg cos (exact)")
    ax.plot(x, _series(layers, "q95"), "k--", label="isotropic q95(d)")
    ax.set_title("mean cosine similarity")
    ax.legend(fontsize=8)
    axes[1].plot(x, _series(layers, "drift_norm"), "o-", color="C1", label="drift norm ||x̄||")
    axes[1].plot(x, _series(layers, "mean_norm"), ".:", color="C7", label="mean norm E||x||")
    axes[1].set_title("drift norm")
    axes[1].legend(fontsize=8)
    ax = axes[2]
    ax.plot(x, _series(layers, "svd_anisotropy"), "o-", color="C2", label="exact (all vectors)")
    mean = _series(layers, "svd_anisotropy_batch_mean")
    std = _series(layers, "svd_anisotropy_batch_std")
    ax.errorbar(x, mean, yerr=std, fmt="s:", color="C3", capsize=3, label="batch-wise mean ± std")
    ax.set_title("SVD anisotropy σ₁²/Σσᵢ²")
    ax.legend(fontsize=8)
    names = model_doc.get("layer_names", x)
    for ax in axes:
        ax.set_xlabel("layer")
        ax.set_xticks(x)
        ax.set_xticklabels(names, rotation=90 if len(x) > 14 else 0, fontsize=7)
        ax.grid(alpha=0.3)
    fig.suptitle(model_id, y=1.04)
    out = _png(fig)
    plt.close(fig)
    return out


def render_html(document: ResultsDocument) -> str:
    """The report page for a results document (as read by :func:`aniso.results.read_results`)."""
    env = Environment(loader=PackageLoader("aniso.report", "templates"), autoescape=select_autoescape(["html", "j2"]))
    env.filters["num"] = lambda v: "—" if v is None else (f"{v:.4g}" if isinstance(v, float) else str(v))
    from .blocks import block_figures
    from .modalities import GROUPS, drift_pvalue_figure, group_of, modality_figures, profile_figure

    doc = document.model_dump(mode="json")
    results = doc["results"]
    registry = doc["registry"]
    models = list(dict.fromkeys(r["model_id"] or "—" for r in results))
    matrix = {(r["claim_id"], r["model_id"] or "—"): r for r in results}
    # One claims x models table per report group (text subword, char/byte, speech, vision Transformers, CNNs),
    # then untrained blocks and model-free claims; each with only the claims that have a result there.
    titles = {k: f"{t} ({fig})" for k, t, fig in GROUPS} | {"embeddings": "Untrained blocks (G §4)",
                                                              "other": "Model-free checks"}
    groups = []
    for key in [k for k, _, _ in GROUPS] + ["embeddings", "other"]:
        members = [m for m in models if (group_of(registry[m]) if m in registry else "other") == key]
        if members:
            group_claims = list(dict.fromkeys(r["claim_id"] for r in results if (r["model_id"] or "—") in members))
            groups.append((titles[key], group_claims, members))
    pipeline = doc["experiments"].get("pipeline_offline", {})
    unavailable = {r["model_id"] for r in results if r["verdict"] == "skipped"} - \
        {r["model_id"] for r in results if r["verdict"] != "skipped"}
    counts: dict[str, int] = {}
    for r in results:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    figures = {mid: layer_figure(mid, mdoc) for mid, mdoc in doc["models"].items()}
    block_docs = doc["experiments"].get("untrained_block", {})
    from .training import training_figures

    training = doc["experiments"].get("training", {})
    template = env.get_template("report.html.j2")
    return template.render(
        prov=doc["provenance"], schema_version=doc["schema_version"], results=results, groups=groups, models=models, matrix=matrix,
        pipeline=pipeline, unavailable=unavailable, registry=registry,
        group_figures=modality_figures(doc["models"]) + drift_pvalue_figure(document.results, doc["models"])
        + profile_figure(doc["models"]),
        counts=counts, figures=figures, not_yet=doc["not_yet_executable"],
        missing_inputs=_missing_inputs(results), model_docs=doc["models"], verdict_class=VERDICT_CLASS,
        block_docs=block_docs, block_figures=block_figures(block_docs),
        training=training, training_figures=training_figures(training, registry),
    )


def _missing_inputs(results: list[dict]) -> list[tuple[str, int, list[str]]]:
    """(reason without the model id, number of claim tests, model ids) per distinct missing-inputs skip."""
    out: dict[str, tuple[int, set]] = {}
    for r in results:
        if r.get("skip_kind") == "inputs":
            reason = r["reason"].split(": ", 1)[-1]
            n, ids = out.get(reason, (0, set()))
            out[reason] = (n + 1, ids | {r["model_id"]})
    return [(reason, n, sorted(i for i in ids if i)) for reason, (n, ids) in out.items()]


def write_html_report(results_json: Path, out: Path) -> Path:
    """Render ``results_json`` into the HTML file ``out``; returns ``out``. Raises ValueError on a malformed file."""
    doc = read_results(results_json)
    out = Path(out)
    out.write_text(render_html(doc), encoding="utf-8")
    return out
