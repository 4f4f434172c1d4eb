"""The HTML report, read top-down: summary and findings, one section per claim with its figures, models not run,
layer-wise statistics, experiments, provenance.

Everything placed in the page goes through Jinja2 with autoescaping on;
figures are PNGs embedded as data URIs, so the report is one self-contained file.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from jinja2 import Environment, PackageLoader, select_autoescape

from ..results import ResultsDocument, read_results
from .figures import png as _png
from .figures import pyplot

__all__ = ["layer_figure", "write_html_report", "render_html", "figure_refs", "FINDING_VERDICTS"]

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


#: Verdicts that are findings (a claim that does not hold for a model, recorded or new) or faults, listed first.
FINDING_VERDICTS = ("expected not to hold", "does not hold", "holds, expected not to", "error")

_FIG_REF = re.compile(r"\b([GRS]) Fig\. ((?:\d+[a-z]?(?:\s*[-–/]\s*\d*[a-z]?)?(?:\s*(?:,|and)\s*)?)+)")


def figure_refs(text: str, paper: str | None = None) -> set[tuple[str, str]]:
    """The (paper letter, figure number) pairs a caption or a claim's figure field names, e.g. ``"G Fig. 12,
    21-22"`` -> {(G, 12), (G, 21), (G, 22)}; letters are kept (``6a``) and also given bare (``6``). ``paper``
    prefixes a bare ``Fig. ...`` (a claim's own figure field). A caption "beyond G Fig. ..." is the suite's own."""
    text = text.replace("beyond G Fig.", "S Fig.")
    if paper is not None:
        text = re.sub(r"(?<![GRS] )\bFig\.", f"{paper} Fig.", text)
    refs: set[tuple[str, str]] = set()
    for letter, items in _FIG_REF.findall(text):
        for a, b in re.findall(r"(\d+[a-z]?)(?:\s*[-–]\s*(\d+))?", items):
            num = int(re.match(r"\d+", a).group())
            refs |= {(letter, a), (letter, str(num))}
            if b:
                refs |= {(letter, str(n)) for n in range(num, int(b) + 1)}
    return refs


def _claim_figures(claims: list[dict], figures: list[tuple[str, str]]) -> tuple[dict[str, list], list]:
    """Each figure beside the first claim it illustrates (later claims link to it); figures of no claim apart."""
    beside: dict[str, list] = {c["id"]: [] for c in claims}
    placed: dict[int, str] = {}
    unplaced = []
    for i, (caption, png) in enumerate(figures):
        refs = figure_refs(caption)
        named = [c["id"] for c in claims if caption.startswith(c["id"] + " ") or caption.startswith(c["id"] + ":")]
        for c in claims:
            if (c["id"] in named) if named else refs & figure_refs(c["figure"], c["id"].split(".")[0]):
                if i in placed:
                    beside[c["id"]].append({"caption": caption, "anchor": f"fig-{i}", "png": None})
                else:
                    placed[i] = c["id"]
                    beside[c["id"]].append({"caption": caption, "anchor": f"fig-{i}", "png": png})
        if i not in placed:
            unplaced.append({"caption": caption, "anchor": f"fig-{i}", "png": png})
    return beside, unplaced


def _scalars(measured: dict, limit: int = 6) -> list[tuple[str, object]]:
    return [(k, v) for k, v in measured.items() if not isinstance(v, (list, dict))][:limit]


def _notes(measured: dict) -> list[str]:
    """The lines a claim adds to its measured numbers for the reader (``measured["notes"]``: a control beside the
    claim, which of two statistics the rule reads), shown in full under the numbers."""
    notes = measured.get("notes")
    return [n for n in notes if isinstance(n, str)] if isinstance(notes, list) else []


def render_html(document: ResultsDocument) -> str:
    """The report page for a results document (as read by :func:`aniso.results.read_results`): a summary (claims
    executable and run, verdict counts, the findings and fragile verdicts with links to their evidence), then one
    section per claim (its verdicts with their intervals, the skipped models in one line each, its figures
    beside), the models not run here, the layer-wise tables, the experiments, and the provenance at the end."""
    from ..catalog import CLAIMS

    env = Environment(loader=PackageLoader("aniso.report", "templates"), autoescape=select_autoescape(["html", "j2"]))
    env.filters["num"] = lambda v: "—" if v is None else (f"{v:.4g}" if isinstance(v, float) else str(v))
    from .blocks import block_figures
    from .modalities import P_FLOOR, drift_pvalue_figure, modality_figures, profile_figure
    from .training import training_figures

    doc = document.model_dump(mode="json")
    results = doc["results"]
    registry = doc["registry"]
    for i, r in enumerate(results):
        r["anchor"] = f"r-{i}"
        r["scalars"] = _scalars(r["measured"])
        r["notes"] = _notes(r["measured"])
    counts: dict[str, int] = {}
    for r in results:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    block_docs = doc["experiments"].get("untrained_block", {})
    training = doc["experiments"].get("training", {})
    from .counter import counter_figures

    figures = (modality_figures(doc["models"]) + drift_pvalue_figure(document.results, doc["models"])
               + profile_figure(doc["models"]) + block_figures(block_docs) + training_figures(training, registry)
               + counter_figures(doc["models"], training))
    claim_ids = [c for c in CLAIMS if any(r["claim_id"] == c for r in results)]
    claim_ids += sorted({r["claim_id"] for r in results} - set(claim_ids))
    claims = [{"id": c, "statement": CLAIMS[c].statement if c in CLAIMS else "", "paper": CLAIMS[c].paper if c in
               CLAIMS else "", "section": CLAIMS[c].section if c in CLAIMS else "",
               "figure": CLAIMS[c].figure if c in CLAIMS else ""} for c in claim_ids]
    beside, other_figures = _claim_figures(claims, figures)
    for c in claims:
        mine = [r for r in results if r["claim_id"] == c["id"]]
        c["rows"] = [r for r in mine if r["verdict"] != "skipped"]
        c["skipped"] = [r for r in mine if r["verdict"] == "skipped"]
        c["figures"] = beside[c["id"]]
        c["rule"] = next((r["rule"] for r in c["rows"] if r["rule"]), "")
    findings = [r for r in results if r["verdict"] in FINDING_VERDICTS]
    fragile = [r for r in results if (r.get("uncertainty") or {}).get("fragile")]
    sensitive = [(r, alt) for r in results for alt in r.get("sensitivity") or [] if alt["differs"]]
    run_models = {r["model_id"] for r in results if r["verdict"] != "skipped"}
    not_run: dict[str, str] = {}
    for r in results:
        if r["verdict"] == "skipped" and r["model_id"] and r["model_id"] not in run_models:
            not_run.setdefault(r["model_id"], r["reason"])
    executable = [c for c in CLAIMS.values() if c.executable]
    summary = {"catalogue": len(CLAIMS), "executable": len(executable),
               "run": len({r["claim_id"] for r in results if r["verdict"] != "skipped"}),
               "models_run": len(run_models), "models_not_run": len(not_run)}
    template = env.get_template("report.html.j2")
    return template.render(
        prov=doc["provenance"], schema_version=doc["schema_version"], results=results, claims=claims,
        summary=summary, counts=counts, findings=findings, fragile=fragile, not_run=not_run, sensitive=sensitive,
        other_figures=other_figures, layer_figures={mid: layer_figure(mid, m) for mid, m in doc["models"].items()},
        pipeline=doc["experiments"].get("pipeline_offline", {}), not_yet=doc["not_yet_executable"],
        missing_inputs=_missing_inputs(results), model_docs=doc["models"], verdict_class=VERDICT_CLASS,
        block_docs=block_docs, training=training, p_floor=P_FLOOR, registry=registry, run_errors=doc["run_errors"],
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
    from ..files import atomic_write

    doc = read_results(results_json)
    out = Path(out)
    html = render_html(doc)
    atomic_write(out, lambda p: p.write_text(html, encoding="utf-8"))
    return out
