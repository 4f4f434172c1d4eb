"""Tour 22: two `aniso run ID --twin` runs of one row imported twins of other weights (their tokenizers trained
apart: another commit), and `aniso diff` compared them as one model ("no verdict or number changed"). Two twin runs
whose twins differ are named as other models, as two runs of other weights under one id are."""

from __future__ import annotations

from pathlib import Path

from aniso.judge.results import ClaimResult, ModelLayers, ResultsDocument, Uncertainty, provenance
from aniso.report.diff import diff_results, format_diff

ROOT = Path(__file__).resolve().parents[2]


def _doc(commit: str, twin: bool = True) -> ResultsDocument:
    u = Uncertainty(statistic="max avg cos", value=0.3, low=0.25, high=0.35, threshold=0.08, holds_if=">", n_boot=20)
    r = ClaimResult(claim_id="G.token-nlp-anisotropic", paper="G", section="§2", figure="Fig. 1", statement="s",
                    model_id="bert-base-uncased", test="claims/t.py::t[bert-base-uncased]", verdict="holds",
                    measured={}, uncertainty=u)
    prov = provenance(ROOT, {}, None)
    if twin:
        prov = prov.model_copy(update={"twin": {"label": "twin", "size": "tiny", "rows": {}}})
    meta = {"origin": f"hub cache: bert-base-uncased@main (commit {commit})",
            "fingerprint": f"hub:bert-base-uncased@main#{commit}"}
    model = ModelLayers(layer_names=["0", "1"], layers=[{}, {}], meta=meta)
    return ResultsDocument(provenance=prov, results=[r], models={"bert-base-uncased": model})


def test_two_twin_runs_of_other_twins_are_not_compared_as_one_model():
    changes = diff_results(_doc("b82afeb"), _doc("0fa02f5"))
    assert sorted(c.kind for c in changes) == ["added", "model", "removed"]
    said = format_diff(changes)
    assert "model 'bert-base-uncased' was measured from other weights in the two runs" in said and "b82afeb" in said
    assert "no verdict or number changed" not in said


def test_two_twin_runs_of_one_twin_are_compared():
    changes = diff_results(_doc("b82afeb"), _doc("b82afeb"))
    assert changes == [] and "no verdict or number changed" in format_diff(changes)


def test_a_twin_run_against_the_models_run_is_left_to_the_sizes_note():
    kinds = {c.kind for c in diff_results(_doc("b82afeb"), _doc("0fa02f5", twin=False), notes=True)}
    assert "model" not in kinds
