"""The verdict policy: from a measured verdict and the registry's expectation to a test outcome.

A claim test measures whether its claim holds for one model. What that means for the test run depends on what
the registry recorded for that model and claim, and on which inputs (corpus, recordings, photographs) it was
recorded:

========================  ====================  =====================  ===========================================
recorded (expected)       measured              inputs                 outcome
========================  ====================  =====================  ===========================================
nothing (= holds)         holds                 any                    pass, "holds"
nothing (= holds)         does not hold         same as recorded       fail, "does not hold" (a new finding)
does-not-hold             does not hold         any                    xfail, "expected not to hold" (a finding)
does-not-hold             holds                 same as recorded       fail, "holds, expected not to"
holds (measured)          does not hold         same as recorded       fail, "does not hold"
any                       differs from record   other than recorded    pass, the measured verdict, marked as
                                                                       differing from the record on other inputs
========================  ====================  =====================  ===========================================

"Inputs" are a dataset identity ``<name>@<fingerprint>`` (:attr:`aniso.inputs.text.Corpus.dataset`,
:attr:`aniso.inputs.media.MediaSet.dataset`), independent of the sample size: a verdict recorded on WikiText-103
binds every run on WikiText-103, at the ``quick`` and the ``paper`` size alike, and informs (without failing)
a run on another corpus. Expectations without inputs (the papers' own exceptions) bind every run.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

__all__ = ["Outcome", "Decision", "decide", "HOLDS", "DOES_NOT_HOLD", "EXPECTED_NOT_TO_HOLD", "UNEXPECTEDLY_HOLDS",
           "SKIPPED", "ERROR"]

HOLDS = "holds"
DOES_NOT_HOLD = "does not hold"
EXPECTED_NOT_TO_HOLD = "expected not to hold"
UNEXPECTEDLY_HOLDS = "holds, expected not to"
SKIPPED = "skipped"
ERROR = "error"


class Outcome(str, Enum):
    """What the pytest test does with a verdict."""

    PASS = "pass"
    FAIL = "fail"
    XFAIL = "xfail"


@dataclass(frozen=True)
class Decision:
    """The verdict of one claim on one model and what the test does with it.

    ``verdict``: one of the verdict strings of this module; ``outcome``: the test's outcome; ``reason``: the
    recorded reason (xfail), the failure message's core (fail), or why a differing verdict does not fail;
    ``differs_from_record``: set when the measured verdict differs from the one recorded on other inputs,
    saying which (e.g. ``"recorded: holds on wikitext-103-validation@1a2b…"``), else None.
    """

    verdict: str
    outcome: Outcome
    reason: str = ""
    differs_from_record: str | None = None


def decide(holds: bool, expected_verdict: str | None = None, expected_reason: str = "",
           recorded_inputs: str | None = None, run_inputs: str | None = None) -> Decision:
    """Apply the verdict policy (module docstring) to one measured verdict.

    Parameters
    ----------
    holds : whether the operationalised claim holds on this run's measurement
    expected_verdict : the registry's ``"holds"`` / ``"does-not-hold"`` for this model and claim, or None (which
        means "holds")
    expected_reason : the registry's reason for it
    recorded_inputs : the dataset identity the expectation was recorded on, or None (binds any inputs)
    run_inputs : the dataset identity of this run's inputs, or None (unknown: treated as the recorded ones)

    Raises ValueError for an unknown ``expected_verdict``.
    """
    if expected_verdict not in (None, "holds", "does-not-hold"):
        raise ValueError(f"expected verdict must be 'holds' or 'does-not-hold', got {expected_verdict!r}")
    expects_holds = expected_verdict in (None, "holds")
    measured = HOLDS if holds else DOES_NOT_HOLD
    if holds == expects_holds:
        if holds:
            return Decision(HOLDS, Outcome.PASS)
        return Decision(EXPECTED_NOT_TO_HOLD, Outcome.XFAIL, expected_reason)
    same_inputs = recorded_inputs is None or run_inputs is None or recorded_inputs == run_inputs
    if not same_inputs:
        record = f"recorded: {'holds' if expects_holds else 'does not hold'} on {recorded_inputs}"
        return Decision(measured, Outcome.PASS,
                        f"differs from the verdict recorded on other inputs ({record}; these inputs: {run_inputs})",
                        record)
    if holds:
        return Decision(UNEXPECTEDLY_HOLDS, Outcome.FAIL,
                        f"registry expects does-not-hold ({expected_reason}); now it holds")
    return Decision(DOES_NOT_HOLD, Outcome.FAIL, expected_reason)
