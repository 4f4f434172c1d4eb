"""`aniso record` of a run whose verdict contradicts its record: the record is named (model, claim, recorded verdict
and numbers, measured ones) to be edited by hand, left as it is, and the command exits 1 as the run did (it said
"no stale record and no new finding … unchanged", exit 0)."""

from __future__ import annotations

from aniso.cli import main
from aniso.judge.results import RecordDrift, ResultsDocument, file_digest, provenance, write_results
from test_cli import _result
from test_record_tour16 import REGISTRY


def _run(tmp_path, *results):
    registry = tmp_path / "models.yaml"
    registry.write_text(REGISTRY)
    path = tmp_path / "a" / "results.json"
    write_results(path, ResultsDocument(provenance=provenance(tmp_path, {}, None,
                                                              registry_sha256=file_digest(registry)),
                                        results=list(results)))
    return registry, path


def _contradicting(**update):
    return _result("holds, expected not to", 0.1665, 0.15, 0.18).model_copy(update={
        "expected": {"verdict": "does-not-hold", "measured": {"max_avg_cos": 0.521}}, **update})


def test_a_contradicted_record_is_named_and_exits_1_writing_nothing(tmp_path, capsys):
    registry, results = _run(tmp_path, _contradicting())
    for dry in ([], ["--dry-run"]):
        assert main(["record", str(results), "--registry", str(registry), *dry]) == 1
        out = capsys.readouterr().out
        assert "no stale record" not in out, out
        assert "contradicted" in out and "edit each by hand" in out, out
        assert ("m G.cnn-mostly-isotropic: recorded does-not-hold (max_avg_cos=0.521), measured holds, expected "
                "not to (max_avg_cos=0.1665)") in out, out
        assert registry.read_text() == REGISTRY


def test_a_contradicted_record_keeps_its_numbers_even_where_they_drifted(tmp_path, capsys):
    drift = [RecordDrift(key="max_avg_cos", recorded=0.521, measured=0.1665)]
    registry, results = _run(tmp_path, _contradicting(record_drift=drift))
    assert main(["record", str(results), "--registry", str(registry)]) == 1
    assert "recorded does-not-hold" in capsys.readouterr().out
    assert registry.read_text() == REGISTRY  # its numbers are not rewritten under a verdict they contradict


def test_a_verdict_differing_from_a_record_on_other_inputs_contradicts_nothing(tmp_path, capsys):
    registry, results = _run(tmp_path, _contradicting(differs_from_record="recorded: does not hold on x"))
    assert main(["record", str(results), "--registry", str(registry)]) == 0
    assert "no stale record" in capsys.readouterr().out
