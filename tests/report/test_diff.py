"""``aniso diff``'s rule for a number change: beyond either run's interval, and never between equal numbers."""

from __future__ import annotations

from pathlib import Path

from aniso.judge.results import ClaimResult, ResultsDocument, Uncertainty, provenance
from aniso.report.diff import diff_results

ROOT = Path(__file__).resolve().parents[2]


def _doc(value: float, low: float, high: float) -> ResultsDocument:
    u = Uncertainty(statistic="pearson p-value", value=value, low=low, high=high, threshold=0.05, holds_if="<",
                    n_boot=1000, name="input-sensitivity range")
    r = ClaimResult(claim_id="G.drift-correlation-pearson", paper="G", section="App. A", figure="Fig. 16",
                    statement="s", model_id="m", test="claims/t.py::t[m]", verdict="holds",
                    measured={"p_value": value}, uncertainty=u)
    return ResultsDocument(provenance=provenance(ROOT, {}, None), results=[r])


def test_a_run_against_itself_changes_nothing_even_where_a_value_lies_outside_its_own_range():
    """A p-value on all inputs resolved below the resamples' Monte Carlo floor (1.25e-6 against a range from
    0.0002) is outside its own range; diffing the run with itself once listed it as a number change."""
    doc = _doc(1.25e-6, 2e-4, 1.2e-3)
    assert diff_results(doc, doc) == []


def test_a_move_beyond_the_interval_is_a_change_and_one_within_it_is_not():
    assert diff_results(_doc(0.010, 0.005, 0.020), _doc(0.012, 0.006, 0.022)) == []
    (change,) = diff_results(_doc(0.010, 0.005, 0.020), _doc(0.040, 0.030, 0.050))
    assert change.kind == "number"
    (change,) = diff_results(_doc(1.25e-6, 2e-4, 1.2e-3), _doc(3e-6, 2e-4, 1.2e-3))  # compared as numbers
    assert change.kind == "number" and "without interval" in change.new


def _record_doc(check: str | None, drift: list, registry: str = "/r/a.yaml", sha: str = "a" * 64) -> ResultsDocument:
    from aniso.judge.results import RecordDrift

    r = ClaimResult(claim_id="G.token-nlp-anisotropic", paper="G", section="4", figure="Fig. 1", statement="s",
                    model_id="m", test="claims/t.py::t[m]", verdict="holds",
                    measured={"max_avg_cos": 0.25628153156572664},
                    record_check=check, record_drift=[RecordDrift(**d) for d in drift])
    doc = ResultsDocument(provenance=provenance(ROOT, {"registry": registry}, None), results=[r])
    doc.provenance.registry_sha256 = sha
    return doc


def test_a_record_change_says_not_compared_or_no_record_never_reproduced_of_numbers_no_run_compared():
    from aniso.report.diff import format_diff

    stale = _record_doc("record's numbers compared: 1 of them stale",
                        [{"key": "max_avg_cos", "recorded": 0.9, "measured": 0.25628153156572664}])
    other_sizes = _record_doc("record's numbers not compared: recorded at the 'quick' profile's sizes, this run at "
                              "other sizes", [])
    (change,) = diff_results(stale, other_sizes)
    assert change.kind == "record"
    assert change.old == "stale record: max_avg_cos recorded 0.9, measured 0.2563"
    assert change.new == "record not compared (recorded at the 'quick' profile's sizes, this run at other sizes)"
    (change,) = diff_results(_record_doc(None, []), stale)
    assert change.old == "no record numbers"
    (change,) = diff_results(_record_doc("record's numbers compared: all within tolerance", []), stale)
    assert change.old == "record's numbers reproduced"
    text = format_diff(diff_results(_record_doc(None, [], "/r/a.yaml", "a" * 64),
                                    _record_doc(None, [], "/r/b.yaml", "b" * 64), notes=True))
    assert "registry /r/a.yaml (sha256 aaaaaaaaaaaa) -> /r/b.yaml (sha256 bbbbbbbbbbbb)" in text
    assert diff_results(stale, stale, notes=True) == []
