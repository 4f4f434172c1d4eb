"""``aniso diff`` of a tiny twin's run against a full-size twin's (or a twin's against the model's): they measured
other models, and the note beside the table says so, with the layer counts, not only the vectors counted."""

from __future__ import annotations

from pathlib import Path

from aniso.judge.results import ClaimResult, ModelLayers, ResultsDocument, Uncertainty, provenance
from aniso.report.diff import diff_results, format_diff

ROOT = Path(__file__).resolve().parents[2]


def _doc(size: str | None, layers: int, verdict: str) -> ResultsDocument:
    u = Uncertainty(statistic="max avg cos", value=0.3, low=0.25, high=0.35, threshold=0.08, holds_if=">", n_boot=20)
    r = ClaimResult(claim_id="G.token-nlp-anisotropic", paper="G", section="§2", figure="Fig. 1", statement="s",
                    model_id="gpt2", test="claims/t.py::t[gpt2]", verdict=verdict, measured={}, uncertainty=u)
    prov = provenance(ROOT, {}, None)
    if size is not None:
        prov = prov.model_copy(update={"twin": {"label": "twin", "size": size, "rows": {}}})
    names = [str(i) for i in range(layers)]
    model = ModelLayers(layer_names=names, layers=[{} for _ in names], meta={})
    return ResultsDocument(provenance=prov, results=[r], models={"gpt2": model})


def test_a_tiny_and_a_full_size_twin_are_named_as_other_models():
    said = format_diff(diff_results(_doc("tiny", 3, "does not hold"), _doc("full size", 13, "holds"), notes=True))
    assert "twin tiny -> full size" in said and "layers 3 -> 13" in said


def test_a_twin_and_the_model_itself_are_named_too():
    said = format_diff(diff_results(_doc("tiny", 3, "holds"), _doc(None, 13, "holds"), notes=True))
    assert "twin tiny -> none" in said


def test_two_runs_of_one_twin_size_say_nothing_of_twins():
    said = format_diff(diff_results(_doc("tiny", 3, "holds"), _doc("tiny", 3, "holds"), notes=True))
    assert "twin" not in said and "layers" not in said


def test_a_twins_verdict_is_marked_in_the_table():
    """Tour 21: `aniso diff TWIN_RUN RUN --all` listed the twin's `removed | ... | holds`, as if the model held."""
    from aniso.sources.twin import TWIN_LABEL

    twin = _doc("tiny", 3, "holds")
    twin = twin.model_copy(update={"results": [twin.results[0].model_copy(update={"twin": TWIN_LABEL})]})
    other = _doc(None, 3, "holds")
    other = other.model_copy(update={"results": [other.results[0].model_copy(
        update={"model_id": "bert", "test": "claims/t.py::t[bert]"})]})
    rows = [(c.kind, c.model_id, c.old, c.new) for c in diff_results(twin, other)]
    assert ("removed", "gpt2", "holds (twin)", "-") in rows and ("added", "bert", "-", "holds") in rows
    assert "holds (twin)" in format_diff(diff_results(twin, other))
