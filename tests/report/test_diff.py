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
