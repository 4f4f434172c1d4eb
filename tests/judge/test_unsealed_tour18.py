"""A results file edited after its run, its digest recomputed (which anyone can do), was shown by `aniso report` and
`aniso diff` as a run's: settings, layers, fragility as edited, "no verdict or number changed". They read it (a file of
another machine is worth showing) and say, in one line and at the top of the page, that its seal does not verify here.
A notebook's ``ClaimResults.report()`` whose results.json was replaced by another run's refuses instead of writing the
other run's report under this one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aniso.api import ClaimResults
from aniso.cli import main
from aniso.judge.results import (ClaimResult, ResultsDocument, Uncertainty, content_digest, provenance, read_results,
                                 write_results)


def _result(value: float) -> ClaimResult:
    return ClaimResult(claim_id="G.cnn-mostly-isotropic", paper="G", section="§3.2", figure="Fig. 4", statement="s",
                       model_id="m", test="claims/x.py::t[m]", verdict="holds", measured={"max_avg_cos": value},
                       uncertainty=Uncertainty(statistic="highest layer avg cos", value=value, low=value - 0.01,
                                               high=value + 0.01, threshold=0.2, holds_if="<", holds_share=1.0,
                                               fragile=False, n_boot=100))


def _run(tmp_path: Path, name: str, value: float = 0.1) -> Path:
    path = tmp_path / name / "results.json"
    write_results(path, ResultsDocument(provenance=provenance(tmp_path, {}, None), results=[_result(value)]))
    return path


def _edited(tmp_path: Path, source: Path, name: str, edit) -> Path:
    data = json.loads(source.read_text())
    edit(data)
    data["digest"] = content_digest(data)  # what a user who edits the file can recompute
    path = tmp_path / name / "results.json"
    path.parent.mkdir()
    path.write_text(json.dumps(data))
    return path


def test_report_and_diff_say_that_an_edited_file_is_not_a_runs(tmp_path, capsys):
    genuine = _run(tmp_path, "one")
    edited = _edited(tmp_path, genuine, "edited", lambda d: d["provenance"]["settings"].update(n_sequences=256))
    notes: list[str] = []
    read_results(genuine, unsealed=notes)
    assert notes == []
    assert main(["report", str(genuine)]) == 0
    assert capsys.readouterr().err == "" and 'id="unsealed"' not in genuine.with_name("report.html").read_text()
    assert main(["report", str(edited)]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"aniso report: warning: {edited}: its seal does not verify under "
                                                   "this installation's results key: written by a run on another")
    assert "edited after the run (its digest recomputed)" in err
    page = edited.with_name("report.html").read_text()
    assert 'id="unsealed"' in page and "its seal does not verify" in page
    assert main(["diff", str(genuine), str(edited)]) == 0
    out, err = capsys.readouterr()
    assert "no verdict or number changed" in out
    assert err.startswith(f"aniso diff: warning: {edited}: its seal does not verify") and err.count("\n") == 1


def test_a_file_that_was_never_sealed_is_said_so(tmp_path, capsys):
    unsealed = _edited(tmp_path, _run(tmp_path, "one"), "unsealed", lambda d: d.update(seal=None))
    assert main(["report", str(unsealed)]) == 0
    assert f"warning: {unsealed}: not sealed under this installation's results key" in capsys.readouterr().err


def test_claim_results_report_refuses_a_results_file_replaced_since(tmp_path):
    mine, other = _run(tmp_path, "mine", 0.1), _run(tmp_path, "other", 0.15)
    cr = ClaimResults(mine, read_results(mine), 0, "m")
    assert cr.report() == mine.with_name("report.html")  # written from this run's file
    mine.with_name("report.html").unlink()
    mine.write_bytes(other.read_bytes())  # another run's file tidied over this one
    with pytest.raises(ValueError, match=rf"^{mine} no longer holds this run's results \(its digest is .*replaced or "
                                         "edited since"):
        cr.report()
    assert not mine.with_name("report.html").exists()


def test_a_fragility_its_own_numbers_contradict_is_refused(tmp_path):
    """holds_share edited to 0.2 with fragile left false (B10): the result contradicts the rule that made it."""
    edited = _edited(tmp_path, _run(tmp_path, "one"), "e10",
                     lambda d: d["results"][0]["uncertainty"].update(holds_share=0.2))
    with pytest.raises(ValueError, match=r"uncertainty\.fragile is false, but its holds_share 0\.2 and interval "
                                         r"\[0\.09, 0\.11\] about threshold 0\.2 make it fragile at level 0\.95$"):
        read_results(edited)
