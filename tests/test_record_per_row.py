"""`aniso record` of a run's results checks the rows the run took, not the whole file: after recording one run,
the results of a run of another row of the same registry are still recorded; recording the same results again says
"already recorded" (exit 0); a row the run took that was edited by hand since is refused as before."""

from __future__ import annotations

from aniso.cli import main
from aniso.judge.records import run_row_digests
from aniso.judge.results import RecordDrift, ResultsDocument, file_digest, provenance, write_results
from test_cli import _result

ROW = ("- id: {id}\n  source: {{kind: local, path: ./{id}}}\n  modality: vision\n"
       "  granularity: pixel\n  architecture: cnn\n  role: encoder\n  family: f\n  expected:\n"
       "    G.cnn-mostly-isotropic:\n      verdict: does-not-hold\n"
       "      measured: {{max_avg_cos: 0.521}}\n      reason: 'max {{max_avg_cos:.3f}}'\n")
REGISTRY = "recorded_profile: quick\nmodels:\n" + ROW.format(id="m") + ROW.format(id="n")


def _run_of(tmp_path, registry, model: str, measured: float):
    """The results of a run of the one row ``model`` of ``registry`` (as it is now) that found its record stale."""
    r = _result("expected not to hold", measured, 0.5, 0.56, model=model).model_copy(update={
        "expected": {"measured": {"max_avg_cos": 0.521}},
        "record_drift": [RecordDrift(key="max_avg_cos", recorded=0.521, measured=measured)]})
    results = tmp_path / model / "results.json"
    rows = run_row_digests(registry.read_text(), [r], [model])
    write_results(results, ResultsDocument(provenance=provenance(
        tmp_path, {}, None, registry_sha256=file_digest(registry), registry_rows_sha256=rows), results=[r]))
    return results


def test_one_run_per_row_recorded_one_after_another(tmp_path, capsys):
    registry = tmp_path / "models.yaml"
    registry.write_text(REGISTRY)
    first, second = _run_of(tmp_path, registry, "m", 0.539), _run_of(tmp_path, registry, "n", 0.547)
    assert main(["record", str(first), "--registry", str(registry)]) == 0, capsys.readouterr()
    assert main(["record", str(second), "--registry", str(registry)]) == 0, capsys.readouterr()
    text = registry.read_text()
    assert "0.539" in text and "0.547" in text and "0.521" not in text, text


def test_the_same_results_recorded_twice_are_already_recorded(tmp_path, capsys):
    registry = tmp_path / "models.yaml"
    registry.write_text(REGISTRY)
    results = _run_of(tmp_path, registry, "m", 0.539)
    assert main(["record", str(results), "--registry", str(registry)]) == 0
    recorded = registry.read_text()
    capsys.readouterr()
    assert main(["record", str(results), "--registry", str(registry)]) == 0
    out = capsys.readouterr().out
    assert "is already recorded in" in out and "unchanged" in out, out
    assert registry.read_text() == recorded


def test_a_row_the_run_took_edited_by_hand_since_is_still_refused(tmp_path, capsys):
    registry = tmp_path / "models.yaml"
    registry.write_text(REGISTRY)
    results = _run_of(tmp_path, registry, "m", 0.539)
    edited = REGISTRY.replace("family: f\n", "family: f\n  description: edited by hand\n", 1)  # row m
    registry.write_text(edited)
    assert main(["record", str(results), "--registry", str(registry)]) == 2
    assert "was not written by a run of" in capsys.readouterr().err
    assert registry.read_text() == edited
    registry.write_text(REGISTRY.replace("recorded_profile: quick\n", "recorded_profile: study\n"))
    assert main(["record", str(results), "--registry", str(registry)]) == 2  # the recorded sizes changed
    assert "was not written by a run of" in capsys.readouterr().err
