"""`aniso record --dry-run` (or a record) of results whose records the run did not compare (other sizes or inputs)
says how many and why, not only "no stale record": they could not be checked."""

from __future__ import annotations

from aniso.cli import main
from aniso.judge.results import ResultsDocument, file_digest, provenance, write_results
from test_cli import _result
from test_record_tour16 import REGISTRY


def test_a_dry_run_of_results_whose_records_were_not_compared_says_so(tmp_path, capsys):
    registry = tmp_path / "models.yaml"
    registry.write_text(REGISTRY)
    r = _result("expected not to hold", 0.539, 0.5, 0.56).model_copy(update={
        "expected": {"measured": {"max_avg_cos": 0.521}},
        "record_check": "record's numbers not compared: recorded at the 'quick' profile's sizes, this run at other "
                        "sizes"})
    results = tmp_path / "a" / "results.json"
    write_results(results, ResultsDocument(provenance=provenance(tmp_path, {}, None,
                                                                 registry_sha256=file_digest(registry)), results=[r]))
    assert main(["record", str(results), "--registry", str(registry), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert ("1 record(s) were not compared by this run (recorded at the 'quick' profile's sizes, this run at other "
            "sizes), so they could not be checked") in out, out
