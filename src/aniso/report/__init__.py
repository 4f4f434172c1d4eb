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

from ..judge.results import ResultsDocument, read_results, verdict_counts
from .figures import Png, pyplot
from .figures import png as _png

__all__ = ["layer_figure", "write_html_report", "check_report_target", "render_html", "figure_refs", "refs_overlap",
           "FINDING_VERDICTS", "UNDERPOWERED_VERDICTS", "verdict_matrix", "report_figures", "interval_text", "common_wording",
           "public_text", "without_model_id"]

VERDICT_CLASS = {
    "holds": "holds",
    "does not hold": "fails",
    "expected not to hold": "expected",
    "holds, expected not to": "fails",
    "underpowered at this size": "underpowered",
    "skipped": "skipped",
    "error": "fails",
}


def _series(layers: list[dict], key: str) -> list[float]:
    return [math.nan if layer.get(key) is None else layer[key] for layer in layers]


#: The most models whose layer-wise figure the page draws (a second or more each; a full run measures about 80): the
#: page gives the layer tables of every model, and says how many figures it left out.
MAX_LAYER_FIGURES = 100


def layer_figure(model_id: str, model_doc: dict) -> str:
    """Layer-wise figure of one model as a base64 :class:`~aniso.report.figures.Png`, a 2 x 2 grid: avg cos with
    q95(d), drift norm, SVD anisotropy, TwoNN intrinsic dimension.

    Godey et al. 2024 Fig. 1 (avg cos per layer) and App. B Fig. 18 (q95 line);
    §3.3 (drift norm); Razzhigaev et al. 2024 Fig. 1 (SVD anisotropy, exact and
    batch-wise mean ± std) and Fig. 2 (TwoNN).
    """
    from matplotlib.ticker import MaxNLocator

    plt = pyplot()
    layers = model_doc["layers"]
    x = list(range(len(layers)))
    fig, grid = plt.subplots(2, 2, figsize=(11, 6.4))
    axes = [grid[0][0], grid[0][1], grid[1][0], grid[1][1]]
    ax = axes[0]
    ax.plot(x, _series(layers, "mean_cosine"), "o-", label="avg cos (exact)")
    ax.plot(x, _series(layers, "q95"), "k--", label="isotropic q95(d)")
    ax.set_title("mean cosine similarity")
    ax.legend(fontsize=9)
    axes[1].plot(x, _series(layers, "drift_norm"), "o-", color="C1", label="drift norm ||x̄||")
    axes[1].plot(x, _series(layers, "mean_norm"), ".:", color="C7", label="mean norm E||x||")
    axes[1].set_title("drift norm")
    axes[1].legend(fontsize=9)
    ax = axes[2]
    ax.plot(x, _series(layers, "svd_anisotropy"), "o-", color="C2", label="exact (all vectors)")
    mean = _series(layers, "svd_anisotropy_batch_mean")
    std = _series(layers, "svd_anisotropy_batch_std")
    ax.errorbar(x, mean, yerr=std, fmt="s:", color="C3", capsize=3, label="batch-wise mean ± std")
    ax.set_title("SVD anisotropy σ₁²/Σσᵢ²")
    ax.legend(fontsize=9)
    axes[3].plot(x, _series(layers, "twonn"), "o-", color="C4", label="TwoNN (reservoir)")
    axes[3].set_title("intrinsic dimension (TwoNN)")
    names = model_doc.get("layer_names") or [str(i) for i in x]
    for ax in axes:
        ax.set_xlabel("layer")
        if len(x) <= 16:
            ax.set_xticks(x)
            ax.set_xticklabels(names)
        else:  # every name would overlap at 9 pt: integer ticks, the names are in the table below
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
    fig.suptitle(model_id)
    fig.tight_layout()
    out = _png(fig)
    plt.close(fig)
    return out


#: Verdicts that are findings (a claim that does not hold for a model, recorded or new) or faults, listed first.
#: "underpowered at this size" is none of them: it is listed apart (UNDERPOWERED_VERDICTS).
FINDING_VERDICTS = ("expected not to hold", "does not hold", "holds, expected not to", "error")
UNDERPOWERED_VERDICTS = ("underpowered at this size",)

_FIG_REF = re.compile(r"\b([GRS]) Fig\. ((?:\d+[a-z]?(?:\s*[-–/]\s*\d*[a-z]?)?(?:\s*(?:,|and)\s*)?)+)")


def figure_refs(text: str, paper: str | None = None) -> set[tuple[str, str]]:
    """The (paper letter, figure) pairs a caption or a claim's figure field names, as written, e.g. ``"G Fig. 12,
    21-22, 3a"`` -> {(G, 12), (G, 21), (G, 22), (G, 3a)}. ``paper`` prefixes a bare ``Fig. ...`` (a claim's own
    figure field). A caption "beyond G Fig. ..." is the suite's own. Compare two sets with :func:`refs_overlap`."""
    text = text.replace("beyond G Fig.", "S Fig.")
    if paper is not None:
        text = re.sub(r"(?<![GRS] )\bFig\.", f"{paper} Fig.", text)
    refs: set[tuple[str, str]] = set()
    for letter, items in _FIG_REF.findall(text):
        for a, b in re.findall(r"(\d+[a-z]?)(?:\s*[-–]\s*(\d+))?", items):
            refs.add((letter, a))
            if b:
                num = int(re.match(r"\d+", a).group())
                refs |= {(letter, str(n)) for n in range(num, int(b) + 1)}
    return refs


def refs_overlap(a: set[tuple[str, str]], b: set[tuple[str, str]]) -> bool:
    """Whether two sets of :func:`figure_refs` name a common figure: the same one (``3a`` and ``3a``), or a figure and
    one of its panels (``3`` and ``3a``); two panels of one figure (``3a``, speech, and ``3b``, vision) are not."""
    def bare(fig: str) -> str:
        return re.match(r"\d+", fig).group()

    return any(p == q and (f == g or f == bare(g) or g == bare(f)) for p, f in a for q, g in b)


def _claim_figures(claims: list[dict], figures: list[tuple[str, str]]) -> tuple[dict[str, list], list]:
    """Each figure beside the first claim it illustrates (later claims link to it); figures of no claim apart."""
    beside: dict[str, list] = {c["id"]: [] for c in claims}
    placed: dict[int, str] = {}
    unplaced = []
    for i, (caption, png) in enumerate(figures):
        refs = figure_refs(caption)
        named = [c["id"] for c in claims if caption.startswith(c["id"] + " ") or caption.startswith(c["id"] + ":")]
        for c in claims:
            if (c["id"] in named) if named else refs_overlap(refs, figure_refs(c["figure"], c["id"].split(".")[0])):
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


def _num(v) -> str:
    return "—" if v is None else (f"{v:.4g}" if isinstance(v, float) else str(v))


#: An absolute path of two components or more (``/root/.cache/huggingface/hub``), not part of a URL, a relative path
#: or a ratio (``σ₁²/Σσᵢ²``).
_ABS_PATH = re.compile(r"(?<![\w.:/~-])/(?:[\w.@+~-]+/)+[\w.@+~-]*")
_HOME = re.compile(r"^/(?:root|home/[^/]+|Users/[^/]+)/")


def _public_path(path: str) -> str:
    if _HOME.match(path):
        return _HOME.sub("~/", path)
    if "/site-packages/" in path:
        return "site-packages/" + path.split("/site-packages/", 1)[1]
    parts = [p for p in path.split("/") if p]
    return "…/" + "/".join(parts[-2:] if len(parts) > 2 else parts[-1:])


def public_text(text: str) -> str:
    """``text`` with the absolute paths of the machine it ran on shortened to what reads the same anywhere: under a
    home folder ``~/...`` (``/root/.cache/huggingface/hub`` -> ``~/.cache/huggingface/hub``), in an installed
    package ``site-packages/...``, elsewhere the last two parts (``/work/run-7/models.yaml`` ->
    ``…/run-7/models.yaml``). Relative paths, URLs and ratios (``σ₁²/Σσᵢ²``) are left as they are. The report
    shows every text through it; ``results.json`` keeps the full paths."""
    return _ABS_PATH.sub(lambda m: _public_path(m.group()), text)


def _visible_text(value):
    """A value the report page writes: a text (not markup) with its control, bidirectional-override and other
    unprintable characters shown as their escapes (``\\u202e``), as ``aniso diff`` shows them
    (:func:`aniso.common.tables.printable`); its line breaks, and the lone surrogates of a file name read under
    another locale, are kept. Other values are left as they are."""
    import unicodedata

    from markupsafe import Markup

    from ..common.tables import printable

    if not isinstance(value, str) or isinstance(value, Markup) or value.isprintable():
        return value
    # a lone surrogate is a byte of a file name read under another locale (surrogateescape), which the page's
    # UTF-8 writer turns back into that byte: left as it is
    return "".join(c if c == "\n" or unicodedata.category(c) == "Cs" else printable(c) for c in value)


def _public(value):
    """``value`` (a part of results.json as plain data) with :func:`public_text` applied to every string in it."""
    if isinstance(value, str):
        return public_text(value)
    if isinstance(value, dict):
        return {k: _public(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_public(v) for v in value]
    return value


def without_model_id(reason: str, model_id: str | None) -> str:
    """A skip reason without the model id it starts with (the report names the model beside it):
    ``"gpt2: not cached here"`` -> ``"not cached here"``, ``"bert.step0: not cached"`` -> ``"step0: not cached"``
    for model ``bert``; any other reason as it is."""
    if not model_id or not reason.startswith(model_id):
        return reason
    rest = reason[len(model_id):]
    if rest.startswith(": "):
        return rest[2:]
    if rest[:1] in (".", "@", "/") and ": " in rest:
        return rest[1:]
    return reason


def interval_text(result: dict) -> str | None:
    """The bootstrap interval of a result (a ``ClaimResult`` as a dict) as ``"[low, high]"``; ``"n/a (one
    input)"`` when it rests on fewer than two inputs (``n_items`` < 2: resampling one input gives back that input);
    None when the result has no interval, or one that is not informative (every resample gave the same value: its
    ``note`` says why, and it is never printed as an interval)."""
    u = result.get("uncertainty") or {}
    if u.get("low") is None or u.get("high") is None or u.get("informative") is False:
        return None
    if result.get("n_items") is not None and result["n_items"] < 2:
        return "n/a (one input)"
    return f"[{_num(u['low'])}, {_num(u['high'])}]"


def _deciding(r: dict) -> str:
    """The deciding number of a verdict in one line, for a matrix cell's hover text."""
    u = r.get("uncertainty")
    if u and u.get("value") is not None:
        text = f"{u['statistic']} = {_num(u['value'])}"
        if r.get("interval"):
            text += f", {u.get('name') or 'CI'} {r['interval']}"
        if u.get("threshold") is not None:
            text += f" vs {u.get('holds_if') or ''} {_num(u['threshold'])}"
    elif r.get("p_value") is not None:
        text = f"p = {_num(r['p_value'])}"
        if r.get("p_adjusted") is not None:
            text += f", adjusted p = {_num(r['p_adjusted'])}"
    else:
        text = "; ".join(f"{k} = {_num(v)}" for k, v in _scalars(r.get("measured") or {}, 2))
    if r["verdict"] != "holds" and r.get("reason"):
        text += (" — " if text else "") + r["reason"][:240]
    return f"{r['model_id'] or 'no model'}: {r['verdict']}" + (f" · {text}" if text else "")


#: Matrix cell symbol per verdict (the colour class comes from VERDICT_CLASS).
SYMBOL = {"holds": "✓", "does not hold": "✗", "expected not to hold": "(✗)", "holds, expected not to": "✓!",
          "underpowered at this size": "≈", "error": "!", "skipped": "·"}


def verdict_matrix(claims: list[dict], results: list[dict], models: dict, registry: dict,
                   not_run: dict[str, str]) -> dict:
    """The claim x model verdict matrix: ``rows`` (claims grouped by paper and section, each with one cell per
    column), ``groups`` (column groups of run models by report group: (short title, [model ids], full title)),
    ``not_here`` (models not run here, a folded group), ``model_free`` (whether a column for claims without a model
    is needed).

    A cell holds the verdict's symbol, colour class, whether it is fragile, the deciding number (hover text) and
    the anchor of the result in the claim's section; a (claim, model) with several results shows the first one
    that is not skipped and says how many there are."""
    from .modalities import GROUP_SHORT, GROUPS, entry_of, group_of

    titles = {k: t for k, t, _ in GROUPS}
    order = {k: i for i, (k, _, _) in enumerate(GROUPS)}
    run = sorted({r["model_id"] for r in results if r["model_id"] and r["verdict"] != "skipped"},
                 key=lambda m: (order.get(group_of(entry_of(m, models.get(m) or {}, registry)), 99), m))
    groups: list[tuple[str, list[str], str]] = []
    for m in run:
        key = group_of(entry_of(m, models.get(m) or {}, registry))
        if groups and groups[-1][0] == GROUP_SHORT.get(key, key):
            groups[-1][1].append(m)
        else:
            groups.append((GROUP_SHORT.get(key, key), [m], titles.get(key, key)))
    model_free = any(r["model_id"] is None for r in results)
    columns = run + ([None] if model_free else [])
    by_pair: dict[tuple, list[dict]] = {}
    for r in results:
        by_pair.setdefault((r["claim_id"], r["model_id"]), []).append(r)

    def cell(cid, mid):
        found = by_pair.get((cid, mid))
        if not found:
            return None
        r = next((x for x in found if x["verdict"] != "skipped"), found[0])
        fragile = bool((r.get("uncertainty") or {}).get("fragile"))
        na = r["verdict"] == "skipped" and r.get("skip_kind") == "not-applicable"
        title = _deciding(r) + (f" ({len(found)} results)" if len(found) > 1 else "")
        return {"symbol": "n/a" if na else SYMBOL.get(r["verdict"], "?"), "fragile": fragile, "title": title,
                "cls": VERDICT_CLASS.get(r["verdict"], ""), "anchor": r["anchor"]}

    rows, last = [], None
    for c in claims:
        section = f"{c['paper'].split(', ')[0]} {c['section']}".strip() or "other"
        if section != last:
            rows.append({"section": section})
            last = section
        rows.append({"claim": c, "cells": [cell(c["id"], m) for m in columns],
                     "hidden": [cell(c["id"], m) for m in not_run],
                     "n_not_here": sum(1 for m in not_run if (c["id"], m) in by_pair)})
    return {"rows": rows, "groups": groups, "not_here": list(not_run), "model_free": model_free,
            "width": len(columns) + 2}


def common_wording(reasons: list[str]) -> tuple[str, list[str], str]:
    """The words every reason starts with, what is left of each, and the words every reason ends with; e.g.
    ``["max avg cos 0.1 < 0.2", "max avg cos 0.15 < 0.2"]`` -> ``("max avg cos", ["0.1", "0.15"], "< 0.2")``."""
    words = [r.split() for r in reasons]
    if len(words) < 2:
        return "", [" ".join(w) for w in words], ""
    n = 0
    while all(len(w) > n for w in words) and len({w[n] for w in words}) == 1:
        n += 1
    m = 0
    while all(len(w) - n > m for w in words) and len({w[len(w) - 1 - m] for w in words}) == 1:
        m += 1
    return (" ".join(words[0][:n]), [" ".join(w[n:len(w) - m]) for w in words], " ".join(words[0][len(words[0]) - m:]))


def _grouped_findings(claims: list[dict], findings: list[dict], fragile: list[dict]) -> list[dict]:
    """Findings and fragile verdicts per claim, one line per (claim, verdict): the wording the models share said
    once, then each model with what differs."""
    out = []
    for c in claims:
        for verdict in FINDING_VERDICTS:
            mine = [r for r in findings if r["claim_id"] == c["id"] and r["verdict"] == verdict]
            if mine:
                head, rests, tail = common_wording([r["reason"] or "" for r in mine])
                out.append({"claim": c, "verdict": verdict, "cls": VERDICT_CLASS.get(verdict, ""), "head": head,
                            "tail": tail, "entries": [(r, rest) for r, rest in zip(mine, rests)], "fragile": False})
        mine = [r for r in fragile if r["claim_id"] == c["id"]]
        if mine:
            u = mine[0]["uncertainty"]
            out.append({"claim": c, "verdict": "fragile", "cls": "", "fragile": True,
                        "head": f"{u['statistic']} against {u['holds_if'] or ''} {_num(u['threshold'])}",
                        "tail": "", "entries": [(r, "") for r in mine]})
    return out


def stands_for_labels(registry: dict) -> dict[str, str]:
    """Model id → ``"stands for <seed id> (<relation>)"`` for the registry rows (``results.json``'s ``registry``, as
    dicts) on real weights that stand for a seed model; the others are left out. The report shows the label beside
    the model's name (verdict matrix column titles, claim tables, layer-wise sections), autoescaped."""
    return {mid: f"stands for {row['stands_for']} ({row['relation']})" for mid, row in registry.items()
            if row.get("stands_for")}


def fine_tuning_pairs(models: dict, registry: dict) -> list[dict]:
    """The measured models that were fine-tuned from another measured model (``fine_tuned_from`` in the registry),
    each with the layer-wise avg cos (exact mean cosine similarity, on the run's inputs) of both: a list of
    ``{"model", "base", "inputs", "same_inputs", "layers": [(layer name, base avg cos, fine-tuned avg cos,
    change)], "largest": (layer name, change) of the largest absolute change}``. A pair whose layer counts
    differ, or of which one is not measured, is left out. No claim reads this: it is a comparison shown in the
    report (how fine-tuning moved each layer's anisotropy)."""
    pairs = []
    for mid, row in registry.items():
        base = row.get("fine_tuned_from")
        if not base or mid not in models or base not in models:
            continue
        tuned, orig = models[mid], models[base]
        if len(tuned["layers"]) != len(orig["layers"]):
            continue
        layers = []
        for name, b, t in zip(tuned["layer_names"], orig["layers"], tuned["layers"]):
            before, after = b.get("mean_cosine"), t.get("mean_cosine")
            layers.append((name, before, after, None if before is None or after is None else after - before))
        changes = [(name, d) for name, _, _, d in layers if d is not None]
        inputs = [(m["meta"].get("corpus") or {}).get("dataset") for m in (orig, tuned)]
        pairs.append({"model": mid, "base": base, "inputs": inputs[1], "same_inputs": inputs[0] == inputs[1],
                      "layers": layers, "largest": max(changes, key=lambda c: abs(c[1])) if changes else None})
    return pairs


def render_html(document: ResultsDocument, unsealed: list[str] | tuple[str, ...] = ()) -> str:
    """The report page for a results document (as read by :func:`aniso.judge.results.read_results`). It reads
    top-down: the verdict matrix first (a row per claim with its statement, a column per model, a cell per verdict
    linking to it), then a summary (verdict counts, the findings and fragile verdicts, one line per claim and
    verdict), then one section per claim (its verdicts counted; opened, the verdicts with their intervals, the
    skipped models with their reasons, its figures), the models not run here, the layer-wise tables, the
    experiments, and the provenance at the end. Long parts are collapsed (``<details>``), and a link into one opens
    it. Every text is escaped and its machine paths shortened (:func:`public_text`); each model has one colour in
    every figure (:func:`aniso.report.modalities.model_styles`). ``unsealed``: lines saying that the results file
    is not known to be a run's of this installation, unedited (:func:`aniso.judge.results.seal_problem`), shown at
    the top of the page."""
    env = Environment(loader=PackageLoader("aniso.report", "templates"), autoescape=select_autoescape(["html", "j2"]),
                      finalize=_visible_text)
    env.filters["num"] = _num
    return env.get_template("report.html.j2").render(**_page(document), unsealed=[public_text(u) for u in unsealed])


def report_figures(document: ResultsDocument) -> list[tuple[str, Png]]:
    """Every figure the page of ``document`` embeds, as (caption, :class:`~aniso.report.figures.Png`): beside the
    claims, across models, layer-wise per model. Each :class:`Png` says which texts overlap (drawn inside
    :func:`~aniso.report.figures.checked`) and which colour each model was drawn in."""
    from .figures import checked

    with checked():
        page = _page(document)
    out = [(f["caption"], f["png"]) for c in page["claims"] for f in c["figures"] if f["png"]]
    out += [(f["caption"], f["png"]) for f in page["other_figures"] + page["overview"]]
    return out + [(f"layer-wise statistics of {mid}", png) for mid, png in page["layer_figures"].items()]


def _page(document: ResultsDocument) -> dict:
    """The template's context for the page of ``document`` (figures drawn)."""
    from ..registry.catalog import CLAIMS
    from .blocks import block_figures
    from .modalities import P_FLOOR, drift_pvalue_figure, modality_figures, profile_figure
    from .training import training_figures

    doc = _public(document.model_dump(mode="json"))  # no machine path reaches the page
    results = doc["results"]
    registry = doc["registry"]
    for i, r in enumerate(results):
        r["anchor"] = f"r-{i}"
        r["scalars"] = _scalars(r["measured"])
        r["notes"] = _notes(r["measured"])
        r["interval"] = interval_text(r)
        if r["reason"]:
            r["reason"] = without_model_id(r["reason"], r["model_id"])
    counts: dict[str, int] = {}
    for r in results:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    block_docs = doc["experiments"].get("untrained_block", {})
    training = doc["experiments"].get("training", {})
    from .counter import counter_figures
    from .modalities import model_styles
    from .overview import overview_figures

    # one colour per model in every figure: every model, series and block the page draws or names
    styles = model_styles({*doc["models"], *training, *block_docs,
                           *(r["model_id"] for r in results if r["model_id"] and r["verdict"] != "skipped")},
                          doc["models"], registry)
    claim_ids = [c for c in CLAIMS if any(r["claim_id"] == c for r in results)]
    claim_ids += sorted({r["claim_id"] for r in results} - set(claim_ids))
    claims = [{"id": c, "statement": CLAIMS[c].statement if c in CLAIMS else "", "paper": CLAIMS[c].paper if c in
               CLAIMS else "", "section": CLAIMS[c].section if c in CLAIMS else "",
               "figure": CLAIMS[c].figure if c in CLAIMS else ""} for c in claim_ids]
    for c in claims:  # a claim outside the catalogue says what its results say
        if not c["statement"]:
            first = next(r for r in results if r["claim_id"] == c["id"])
            c.update(statement=first["statement"], paper=first["paper"], section=first["section"],
                     figure=first["figure"])
    figures = (modality_figures(doc["models"], registry, _measured_by_figure(claims, results), styles)
               + drift_pvalue_figure(document.results, doc["models"], registry)
               + profile_figure(doc["models"], registry, styles) + block_figures(block_docs, styles)
               + training_figures(training, registry, styles)
               + counter_figures(doc["models"], training, registry, styles))
    beside, other_figures = _claim_figures(claims, figures)
    for c in claims:
        mine = [r for r in results if r["claim_id"] == c["id"]]
        c["rows"] = [r for r in mine if r["verdict"] != "skipped"]
        c["skipped"] = [r for r in mine if r["verdict"] == "skipped"]
        c["figures"] = beside[c["id"]]
        c["rule"] = next((r["rule"] for r in c["rows"] if r["rule"]), "")
        c["tally"] = _tally(mine)
    findings = [r for r in results if r["verdict"] in FINDING_VERDICTS and not r.get("twin")]  # a twin finds nothing
    fragile = [r for r in results if (r.get("uncertainty") or {}).get("fragile") and not r.get("twin")]
    underpowered = [r for r in results if r["verdict"] in UNDERPOWERED_VERDICTS and not r.get("twin")]
    stale = [r for r in results if r.get("record_drift")]
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
    matrix = verdict_matrix(claims, results, doc["models"], registry, not_run)
    stands = stands_for_labels(registry)
    overview = [{"caption": cap, "anchor": f"overview-{i}", "png": png}
                for i, (cap, png) in enumerate(overview_figures(doc["models"], registry, styles))]
    return dict(
        matrix=matrix, overview=overview, grouped_findings=_grouped_findings(claims, findings, fragile),
        prov=doc["provenance"], schema_version=doc["schema_version"], results=results, claims=claims,
        summary=summary, counts=counts, findings=findings, fragile=fragile, not_run=not_run, sensitive=sensitive,
        other_figures=other_figures, layer_figures={mid: layer_figure(mid, m) for mid, m in
                                                   list(doc["models"].items())[:MAX_LAYER_FIGURES]},
        layer_figures_left_out=max(len(doc["models"]) - MAX_LAYER_FIGURES, 0),
        pipeline=doc["experiments"].get("pipeline_offline", {}), not_yet=doc["not_yet_executable"],
        missing_inputs=_missing_inputs(results), model_docs=doc["models"], verdict_class=VERDICT_CLASS, symbol=SYMBOL,
        block_docs=block_docs, training=training, p_floor=P_FLOOR, registry=registry, run_errors=doc["run_errors"],
        stands=stands, fine_tuning=fine_tuning_pairs(doc["models"], registry), underpowered=underpowered,
        stale=stale, kinds=verdict_counts(document.results),
    )


def _tally(results: list[dict]) -> list[tuple[str, str, str, int]]:
    """(verdict, colour class, matrix symbol, count) of a claim's results, in the order of :data:`SYMBOL`, for the
    one line under the claim's heading; a fragile verdict is counted apart as ("fragile", ...)."""
    counts: dict[str, int] = {}
    for r in results:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    out = [(v, VERDICT_CLASS.get(v, ""), SYMBOL[v], counts.pop(v)) for v in SYMBOL if v in counts]
    out += [(v, VERDICT_CLASS.get(v, ""), "?", n) for v, n in counts.items()]
    n_fragile = sum(1 for r in results if (r.get("uncertainty") or {}).get("fragile"))
    return out + ([("fragile", "fragile", "?", n_fragile)] if n_fragile else [])


def _measured_by_figure(claims: list[dict], results: list[dict]) -> dict[str, set[str]]:
    """Per report group, the models measured (not skipped) by a claim whose figure is that group's figure."""
    from .modalities import GROUPS

    out: dict[str, set[str]] = {}
    for key, _, figure in GROUPS:
        refs = figure_refs(figure)
        ids = {c["id"] for c in claims if refs and refs_overlap(refs, figure_refs(c["figure"], c["id"].split(".")[0]))}
        out[key] = {r["model_id"] for r in results if r["claim_id"] in ids and r["model_id"]
                    and r["verdict"] != "skipped"}
    return out


def _missing_inputs(results: list[dict]) -> list[tuple[str, int, list[str]]]:
    """(reason without the model id, number of claim tests, model ids) per distinct missing-inputs skip."""
    out: dict[str, tuple[int, set]] = {}
    for r in results:
        if r.get("skip_kind") == "inputs":
            reason = without_model_id(r["reason"], r["model_id"])
            n, ids = out.get(reason, (0, set()))
            out[reason] = (n + 1, ids | {r["model_id"]})
    return [(reason, n, sorted(i for i in ids if i)) for reason, (n, ids) in out.items()]


def _is_aniso_report(path: Path) -> bool:
    """Whether the regular file ``path`` is empty or an HTML report aniso wrote (its page begins with the doctype
    and the title ``aniso report``), which may be written over."""
    with open(path, "rb") as f:
        head = f.read(4096)
    return not head or (head.lstrip().upper().startswith(b"<!DOCTYPE HTML") and b"<title>aniso report" in head)


def check_report_target(out: Path, results_json: Path) -> None:
    """Raises ValueError (one line, naming ``out``) where the report may not be written to ``out``: it is a symbolic
    link (written over, it would become a file: ``/dev/stdout``), the results file ``results_json`` itself, a folder,
    no regular file, a file that is not empty and no report aniso wrote (a results file, anything else: never written
    over), the report of another run (a ``results.json`` other than ``results_json`` beside it), a folder on its way
    is a file, or the system refuses the name (too long, a loop of links, a NUL byte)."""
    import os

    out, results_json = Path(out), Path(results_json)
    if "\x00" in str(out):
        raise ValueError(f"the report file {str(out)!r:.120} holds a NUL byte, which no file name can hold; name "
                         "another file")
    try:
        os.stat(out)
    except (FileNotFoundError, NotADirectoryError):  # a file to make; a file on the way: said below
        pass
    except OSError as exc:
        name = str(out)
        shown = name if len(name) <= 120 else f"{name[:60]}…{name[-30:]} ({len(name):,} characters)"
        raise ValueError(f"the report file {shown} cannot be written ({exc.strerror or exc}); name another file") \
            from None
    if out.exists() and results_json.exists() and os.path.samefile(out, results_json):
        raise ValueError(f"the report file {out} is the results file {results_json} itself; name another file "
                         "(the report is written beside it as report.html by default)")
    if out.is_symlink():  # written over, the link would become a file (a link such as /dev/stdout included)
        raise ValueError(f"the report file {out} is a symbolic link (to {os.readlink(out)}); name the HTML file to "
                         "write itself")
    parent = next((p for p in out.parents if p.exists() or p.is_symlink()), None)
    if parent is not None and not parent.is_dir():
        what = "a link to nothing" if not parent.exists() else "a file"
        raise ValueError(f"cannot write the report {out}: {parent} is {what}, not a folder")
    if not out.exists():
        return
    if out.is_dir():
        raise ValueError(f"the report file {out} is a folder; name the HTML file to write (e.g. "
                         f"{out / 'report.html'})")
    if not out.is_file():
        raise ValueError(f"the report file {out} is no regular file (a FIFO, a device or a socket); name the HTML "
                         "file to write")
    try:
        ours = _is_aniso_report(out)
    except OSError as exc:
        raise ValueError(f"the report file {out} cannot be read ({exc.strerror or exc}) to check that it is an "
                         "earlier report") from None
    if not ours:
        raise ValueError(f"the report file {out} exists and is not a report aniso wrote; refused, so as not to "
                         "write over it: name another file, or remove it first")
    beside = out.with_name("results.json")
    if beside.is_file() and not (results_json.exists() and os.path.samefile(beside, results_json)):
        raise ValueError(f"the report file {out} is the report of the run beside it ({beside}), not of "
                         f"{results_json}; refused, so as not to write over that run's report: name another file")


#: The endings of a file name the HTML report may be written under (any case): a report is an HTML page, and a name
#: ending otherwise (``r.pdf``, ``r.txt``) would be opened as what it is not.
HTML_SUFFIXES = (".html", ".htm")


def html_name_problem(out: str | Path) -> str | None:
    """What is wrong with ``out`` as the name of the HTML report: None where its name ends in ``.html`` or ``.htm``
    (:data:`HTML_SUFFIXES`, any case; ``.html`` alone included), else a sentence for a one-line refusal saying the
    report is HTML and what to name it."""
    name = Path(out).name
    if name.lower().endswith(HTML_SUFFIXES):
        return None
    suffix = Path(name).suffix
    stem = Path(name).stem if suffix else name
    said = f"its name ends in {suffix!r}" if suffix else "its name has no ending"
    return (f"{said}, but the report is an HTML page, written as HTML whatever the name; name a file ending in "
            f".html or .htm (e.g. {stem or 'report'}.html)")


def write_html_report(results_json: Path, out: Path, unsealed: list[str] | None = None) -> Path:
    """Render ``results_json`` into the HTML file ``out``; returns ``out``. Raises ValueError (one line) on a
    malformed results file (:func:`aniso.judge.results.read_results`) or an ``out`` the report may not be written
    to (:func:`check_report_target`: the results file itself, a file that is no earlier report, a path through a
    file); OSError where writing fails. A file whose seal does not verify here is rendered with a line saying so at
    the top of the page, and that line appended to ``unsealed`` when a list is given (for the caller to print)."""
    from ..common.files import atomic_write

    out = Path(out)
    check_report_target(out, results_json)
    notes: list[str] = []
    doc = read_results(results_json, unsealed=notes)
    html = render_html(doc, notes)
    if unsealed is not None:
        unsealed.extend(notes)
    # a path read under an ASCII locale holds a UTF-8 name's bytes as lone surrogates: written back as those bytes
    atomic_write(out, lambda p: p.write_text(html, encoding="utf-8", errors="surrogateescape"))
    return out
