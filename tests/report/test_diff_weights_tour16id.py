"""``aniso diff`` of two runs whose model of one id was measured from other weights (two folders both named
``model``): the model is named in one line with where each run loaded it from, and its results are listed as removed
and added, not compared as one model whose number moved; a copy of the same weights elsewhere is compared as before."""

from __future__ import annotations

from pathlib import Path

from aniso.judge.results import ClaimResult, ModelLayers, ResultsDocument, Uncertainty, provenance
from aniso.report.diff import diff_results, format_diff

ROOT = Path(__file__).resolve().parents[2]


def _doc(origin: str, fingerprint: str, value: float) -> ResultsDocument:
    u = Uncertainty(statistic="max avg cos", value=value, low=value - 0.03, high=value + 0.03, threshold=0.08,
                    holds_if=">", n_boot=20)
    r = ClaimResult(claim_id="G.token-nlp-anisotropic", paper="G", section="§2", figure="Fig. 1", statement="s",
                    model_id="model", test="claims/t.py::t[model]", verdict="holds", measured={}, uncertainty=u)
    model = ModelLayers(layer_names=["0"], layers=[{}], meta={"origin": origin, "fingerprint": fingerprint})
    return ResultsDocument(provenance=provenance(ROOT, {}, None), results=[r], models={"model": model})


def test_one_id_measured_from_other_weights_is_not_one_models_change():
    old, new = _doc("local: /w/a/model", "local:aaaa", 0.2), _doc("local: /w/b/model", "local:bbbb", 0.8)
    changes = diff_results(old, new, notes=True)
    assert not [c for c in changes if c.kind == "number"], changes
    assert {c.kind for c in changes} == {"model", "added", "removed"}, changes
    said = format_diff(changes, "A", "B")
    lines = [line for line in said.splitlines() if "other weights" in line]
    assert len(lines) == 1, said
    assert "'model'" in lines[0] and "/w/a/model" in lines[0] and "/w/b/model" in lines[0], said
    assert "1 added, 1 removed" in said.splitlines()[0], said


def test_a_copy_of_the_same_weights_is_compared_as_before():
    old, new = _doc("local: /w/a/model", "local:aaaa", 0.2), _doc("local: /w/c/model", "local:aaaa", 0.8)
    changes = diff_results(old, new, notes=True)
    assert [c.kind for c in changes] == ["number"], changes
    assert "other weights" not in format_diff(changes)
