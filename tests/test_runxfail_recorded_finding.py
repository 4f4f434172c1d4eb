"""pytest ``--runxfail`` (report xfailing tests as if they were not marked) on a recorded finding (a claim the
registry records as expected not to hold on a model): the test fails as the claim not holding would, and the verdict
stays "expected not to hold" (it passed, while the verdict table said the claim does not hold). A row of
docs/bad-input.md."""

from __future__ import annotations

import pytest

from aniso.judge.results import ClaimResult
from aniso.judge.verdicts import EXPECTED_NOT_TO_HOLD, Decision, Outcome
from aniso.pytest_plugin import _PytestClaim

CLAIM = "X.rogue-dimensions"


class _Session:
    """What conclude reads of a run whose registry records the claim as expected not to hold on the model."""

    twin = None
    family_sizes: dict = {}
    results: list = []

    @staticmethod
    def record_of(entry, claim_id):
        return None, None, False

    @staticmethod
    def decision(entry, claim_id, holds, inputs, undecided):
        return Decision(EXPECTED_NOT_TO_HOLD, Outcome.XFAIL, "recorded: its avg cos is low")


def _context(runxfail: bool) -> _PytestClaim:
    result = ClaimResult(claim_id=CLAIM, paper="X", section="", figure="", statement="s", model_id=None,
                         test="claims/test_counter_claims.py::test_rogue_dimensions[m]")
    context = _PytestClaim(_Session(), result, None)
    context.runxfail = runxfail
    return context


def test_runxfail_fails_a_recorded_finding_and_keeps_its_verdict():
    from aniso.session import AnisoSession

    context = _context(True)
    with pytest.raises(pytest.fail.Exception, match=r"expected not to hold: recorded: its avg cos is low .*"
                                                    r"\[--runxfail: failed as if its record did not mark it\]"):
        context.conclude(False, {"max_top3_share": 0.45}, "rule")
    AnisoSession.record(_Session(), context.result, seconds=1.0, failed="the failure's line")  # as the plugin does
    assert context.result.verdict == EXPECTED_NOT_TO_HOLD and context.result.reason == "recorded: its avg cos is low"


def test_without_runxfail_a_recorded_finding_xfails():
    with pytest.raises(pytest.xfail.Exception):
        _context(False).conclude(False, {"max_top3_share": 0.45}, "rule")
