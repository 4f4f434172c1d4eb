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
    """Whatever the case, a verdict that differs from its record passes only when the inputs or the record's sizes
    differ, and a matching verdict never fails."""
    d = decide(holds, expected, "reason", recorded, run, decidable=decidable, undecided="too few", same_sizes=same_sizes)
    measured = "holds" if holds else "does-not-hold" if decidable else "underpowered"
    matches = measured == (expected or "holds") or (expected == "underpowered" and not holds and (
        same_sizes and (recorded is None or run is None or recorded == run) or not decidable))
    if matches:
        assert d.outcome is not Outcome.FAIL and d.differs_from_record is None
    else:
        differ = (recorded is not None and run is not None and recorded != run) or not same_sizes
        assert (d.outcome is Outcome.PASS) == differ
        assert (d.differs_from_record is not None) == differ


def test_unknown_expected_verdict():
    with pytest.raises(ValueError, match="maybe"):
        decide(True, "maybe")


def test_a_test_that_cannot_decide_is_underpowered_not_a_finding():
    """A measurement that could not decide (decidable False) and does not hold is "underpowered at this size": it
    fails until the registry records it so (CI tracks it like a record), then xfails as underpowered; a recorded
    finding (does-not-hold) that the test cannot make fails too, naming the fix."""
    d = decide(False, None, "", WIKI, WIKI, decidable=False, undecided="4 layers: cannot decide")
    assert (d.verdict, d.outcome) == (UNDERPOWERED, Outcome.FAIL) and "4 layers" in d.reason
    assert "underpowered" in d.reason
    d = decide(False, "does-not-hold", "old finding", WIKI, WIKI, decidable=False, undecided="4 layers")
    assert (d.verdict, d.outcome) == (UNDERPOWERED, Outcome.FAIL) and "old finding" in d.reason
    d = decide(False, "underpowered", "4 layers; 6 would decide", WIKI, WIKI, decidable=False)
    assert (d.verdict, d.outcome, d.reason) == (UNDERPOWERED, Outcome.XFAIL, "4 layers; 6 would decide")
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
