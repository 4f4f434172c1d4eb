"""The verdict policy (aniso.judge.verdicts): every row of its table, and the inputs rule."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aniso.judge.verdicts import (DOES_NOT_HOLD, EXPECTED_NOT_TO_HOLD, HOLDS, UNDERPOWERED, UNEXPECTEDLY_HOLDS, Outcome,
                                  decide)

WIKI = "wikitext-103-validation@fc03b3e11199aebb"
PYDOC = "pydoc_data.topics (fallback)@ff12a5432833d6ad"


@pytest.mark.parametrize("expected", [None, "holds"])
def test_expected_to_hold(expected):
    assert decide(True, expected, recorded_inputs=WIKI, run_inputs=WIKI).outcome is Outcome.PASS
    d = decide(False, expected, recorded_inputs=WIKI, run_inputs=WIKI)
    assert (d.verdict, d.outcome, d.differs_from_record) == (DOES_NOT_HOLD, Outcome.FAIL, None)


def test_expected_not_to_hold():
    d = decide(False, "does-not-hold", "the paper says so", WIKI, WIKI)
    assert (d.verdict, d.outcome, d.reason) == (EXPECTED_NOT_TO_HOLD, Outcome.XFAIL, "the paper says so")
    d = decide(True, "does-not-hold", "the paper says so", WIKI, WIKI)
    assert (d.verdict, d.outcome) == (UNEXPECTEDLY_HOLDS, Outcome.FAIL)
    assert "the paper says so" in d.reason


def test_a_change_on_other_inputs_informs_and_does_not_fail():
    d = decide(False, None, "", WIKI, PYDOC)
    assert (d.verdict, d.outcome) == (DOES_NOT_HOLD, Outcome.PASS)
    assert d.differs_from_record == f"recorded: holds on {WIKI}"
    assert PYDOC in d.reason
    d = decide(True, "does-not-hold", "r", WIKI, PYDOC)
    assert (d.verdict, d.outcome) == (HOLDS, Outcome.PASS) and "does not hold" in d.differs_from_record


def test_an_expectation_without_inputs_binds_every_run():
    """The papers' own exceptions carry no inputs: they fail on any corpus when they change."""
    assert decide(True, "does-not-hold", "paper", None, PYDOC).outcome is Outcome.FAIL
    assert decide(False, None, "", None, PYDOC).outcome is Outcome.FAIL


@given(st.booleans(), st.sampled_from([None, "holds", "does-not-hold", "underpowered"]), st.sampled_from([None, WIKI]),
       st.sampled_from([None, WIKI, PYDOC]), st.booleans(), st.booleans())
def test_same_inputs_never_pass_a_changed_verdict(holds, expected, recorded, run, decidable, same_sizes):
    """Whatever the case, a decided verdict that differs from its record passes only when the inputs or the record's
    sizes differ, a matching verdict never fails, and an underpowered one never fails."""
    d = decide(holds, expected, "reason", recorded, run, decidable=decidable, undecided="too few", same_sizes=same_sizes)
    measured = "holds" if holds else "does-not-hold" if decidable else "underpowered"
    matches = measured == (expected or "holds") or (expected == "underpowered" and not holds and (
        same_sizes and (recorded is None or run is None or recorded == run) or not decidable))
    if matches or measured == "underpowered":
        assert d.outcome is not Outcome.FAIL
        if matches:
            assert d.differs_from_record is None
    else:
        differ = (recorded is not None and run is not None and recorded != run) or not same_sizes
        assert (d.outcome is Outcome.PASS) == differ
        assert (d.differs_from_record is not None) == differ


@given(st.booleans(), st.sampled_from([None, "holds", "does-not-hold", "underpowered"]), st.booleans(),
       st.booleans())
def test_underpowered_never_fails(expected_holds, expected, same_sizes, recorded_model):
    """A test that could not decide decides nothing: whatever the record, it never fails the run."""
    d = decide(False, expected, "r", WIKI, WIKI, decidable=False, undecided="power 0.41", same_sizes=same_sizes,
               recorded_model=recorded_model)
    assert d.verdict == UNDERPOWERED and d.outcome is not Outcome.FAIL


def test_a_new_model_with_no_record_reports_findings_without_failing():
    """A model detected for the run (no registry row before it): a claim that does not hold is a new finding to
    look at and record, not a broken test; one that holds passes as ever."""
    d = decide(False, None, "", WIKI, WIKI, recorded_model=False)
    assert (d.verdict, d.outcome) == (DOES_NOT_HOLD, Outcome.PASS) and "aniso record" in d.reason
    assert decide(True, None, "", WIKI, WIKI, recorded_model=False).verdict == HOLDS
    d = decide(False, None, "", WIKI, WIKI, decidable=False, undecided="3 layers", recorded_model=False)
    assert (d.verdict, d.outcome) == (UNDERPOWERED, Outcome.PASS)


def test_unknown_expected_verdict():
    with pytest.raises(ValueError, match="maybe"):
        decide(True, "maybe")


def test_a_test_that_cannot_decide_is_underpowered_not_a_finding():
    """A measurement that could not decide (decidable False) and does not hold is "underpowered at this size": it
    passes, saying why; where the registry recorded another verdict, it says which and what to record; once
    recorded as underpowered it xfails, tracked apart from the findings."""
    d = decide(False, None, "", WIKI, WIKI, decidable=False, undecided="4 layers: power 0.08")
    assert (d.verdict, d.outcome, d.reason) == (UNDERPOWERED, Outcome.PASS, "4 layers: power 0.08")
    d = decide(False, "does-not-hold", "old finding", WIKI, WIKI, decidable=False, undecided="4 layers")
    assert (d.verdict, d.outcome) == (UNDERPOWERED, Outcome.PASS) and "old finding" in d.reason
    assert "record it as verdict: underpowered" in d.reason
    d = decide(False, "underpowered", "4 layers; 15 would decide", WIKI, WIKI, decidable=False)
    assert (d.verdict, d.outcome, d.reason) == (UNDERPOWERED, Outcome.XFAIL, "4 layers; 15 would decide")
    assert decide(True, None, "", WIKI, WIKI, decidable=False).verdict == HOLDS  # a test that rejects decided


def test_an_underpowered_record_binds_only_its_sizes():
    """A miniature underpowered at the quick budget: tracked at that budget (xfail), a verdict that holds there
    fails; at another budget the record informs and does not bind."""
    d = decide(False, "underpowered", "512 steps", WIKI, WIKI)
    assert (d.verdict, d.outcome) == (UNDERPOWERED, Outcome.XFAIL)
    d = decide(True, "underpowered", "512 steps", WIKI, WIKI)
    assert (d.verdict, d.outcome) == (UNEXPECTEDLY_HOLDS, Outcome.FAIL)
    d = decide(True, "underpowered", "512 steps", WIKI, WIKI, same_sizes=False)
    assert (d.verdict, d.outcome) == (HOLDS, Outcome.PASS) and "underpowered" in d.differs_from_record
    d = decide(False, "underpowered", "512 steps", WIKI, WIKI, same_sizes=False)
    assert (d.verdict, d.outcome) == (DOES_NOT_HOLD, Outcome.PASS) and d.differs_from_record is not None
