"""The verdict policy: from a measured verdict and the registry's expectation to a test outcome.

A claim test measures whether its claim holds for one model. A measurement that does not hold is *underpowered*
when the test could not have decided at this size: a test whose power at the effect the claim states is below 0.8
(:func:`aniso.metrics.correlation_power`; e.g. a correlation over 7 layers), a claim over seeds whose sign test
cannot reach significance with the seeds trained (:func:`aniso.judge.training_rules.over_seeds`), or a miniature
trained on a budget the registry records as too small to decide the claim. Underpowered decides nothing, so it never
fails a test. What a verdict means for the test run depends on what the registry recorded for that model and claim,
and on which inputs and at which sizes it was recorded:

========================  =====================  ========================  =====================================
recorded (expected)       measured               inputs and sizes          outcome
========================  =====================  ========================  =====================================
nothing (= holds)         holds                  any                       pass, "holds"
nothing (= holds)         does not hold          as recorded               fail, "does not hold" (a new finding)
no record at all (a       does not hold          any                       pass, "does not hold": a new finding
model detected for the                                                     on a model the registry has never
run, not in the registry)                                                  measured, to look at and record
any but underpowered      underpowered           any                       pass, "underpowered at this size",
                                                                           saying what the record says
does-not-hold             does not hold          any                       xfail, "expected not to hold" (a finding;
                                                                           on other inputs its reason names the
                                                                           recorded ones and these)
does-not-hold             holds                  as recorded               fail, "holds, expected not to"
underpowered              does not hold          as recorded               xfail, "underpowered at this size"
                                                                           (tracked, counted apart from findings)
underpowered              underpowered           any                       xfail, "underpowered at this size"
underpowered              holds                  as recorded               fail, "holds, expected not to"
holds (measured)          does not hold          as recorded               fail, "does not hold"
any                       differs from record    other than recorded       pass, the measured verdict, marked as
                                                                           differing from the record on other
                                                                           inputs or sizes
========================  =====================  ========================  =====================================

"Inputs" are a dataset identity ``<name>@<fingerprint>`` (:attr:`aniso.inputs.text.Corpus.dataset`,
:attr:`aniso.inputs.media.MediaSet.dataset`), independent of the sample size: a verdict recorded on WikiText-103
binds every run on WikiText-103, at the ``quick`` and the ``paper`` size alike, and informs (without failing)
a run on another corpus. Expectations without inputs (the papers' own exceptions) bind every run. "Sizes" are the
settings a record names in its ``sizes`` (e.g. a miniature's training budget): a record with sizes binds only the runs
made at those sizes, so a verdict underpowered at the quick budget does not bind a run at a larger one.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

__all__ = ["Outcome", "Decision", "decide", "HOLDS", "DOES_NOT_HOLD", "EXPECTED_NOT_TO_HOLD", "UNEXPECTEDLY_HOLDS",
           "UNDERPOWERED", "SKIPPED", "ERROR", "EXPECTED_VERDICTS", "MEASURED_VERDICTS"]

HOLDS = "holds"
DOES_NOT_HOLD = "does not hold"
EXPECTED_NOT_TO_HOLD = "expected not to hold"
UNEXPECTEDLY_HOLDS = "holds, expected not to"
#: A measurement that could not decide the claim at this size (too few points, too small a budget): not a finding.
UNDERPOWERED = "underpowered at this size"
SKIPPED = "skipped"
ERROR = "error"
#: What a registry record may expect.
EXPECTED_VERDICTS = ("holds", "does-not-hold", "underpowered")
#: Every verdict a measured claim can end with.
MEASURED_VERDICTS = (HOLDS, DOES_NOT_HOLD, EXPECTED_NOT_TO_HOLD, UNEXPECTEDLY_HOLDS, UNDERPOWERED)


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
           recorded_inputs: str | None = None, run_inputs: str | None = None, *, decidable: bool = True,
           undecided: str = "", same_sizes: bool = True, recorded_model: bool = True) -> Decision:
    """Apply the verdict policy (module docstring) to one measured verdict.

    Parameters
    ----------
    holds : whether the operationalised claim holds on this run's measurement
    expected_verdict : the registry's ``"holds"`` / ``"does-not-hold"`` / ``"underpowered"`` for this model and
        claim, or None (which means "holds")
    expected_reason : the registry's reason for it
    recorded_inputs : the dataset identity the expectation was recorded on, or None (binds any inputs)
    run_inputs : the dataset identity of this run's inputs, or None (unknown: treated as the recorded ones)
    decidable : False when the measurement could not have decided the claim at this size (e.g. a test over too few
        points); a measurement that does not hold is then *underpowered*, not a finding
    undecided : why it could not decide (shown with the verdict)
    same_sizes : False when the record names sizes (``sizes``) other than this run's: the record then informs and
        does not bind, as a record on other inputs
    recorded_model : False for a model the registry has never measured (an entry detected for this run from a
        model folder or hub id): a claim that does not hold on it is a new finding to record, and passes

    Raises ValueError for an unknown ``expected_verdict``.
    """
    if expected_verdict not in (None, *EXPECTED_VERDICTS):
        raise ValueError(f"expected verdict must be one of {EXPECTED_VERDICTS}, got {expected_verdict!r}")
    recorded = expected_verdict or "holds"
    measured = HOLDS if holds else DOES_NOT_HOLD if decidable else UNDERPOWERED
    binds = same_sizes and (recorded_inputs is None or run_inputs is None or recorded_inputs == run_inputs)
    if recorded == "underpowered" and not holds and (binds or measured == UNDERPOWERED):
        return Decision(UNDERPOWERED, Outcome.XFAIL, expected_reason)
    if recorded == "holds" and holds:
        return Decision(HOLDS, Outcome.PASS)
    if recorded == "does-not-hold" and measured == DOES_NOT_HOLD:  # a finding on any inputs; where recorded, said
        where = recorded_inputs if recorded_inputs != run_inputs else "other sizes or seeds, or among other models"
        return Decision(EXPECTED_NOT_TO_HOLD, Outcome.XFAIL, expected_reason if binds else
                        f"{expected_reason} (recorded on {where}; these inputs: {run_inputs})")
    words = {"holds": "holds", "does-not-hold": "does not hold", "underpowered": "underpowered"}[recorded]
    if measured == UNDERPOWERED:  # decides nothing: never a failure, whatever the record says
        note = undecided or "the test cannot decide at this size"
        if expected_verdict is not None:
            note += f"; the registry records {words}" + (f" ({expected_reason})" if expected_reason else "") + \
                (": record it as verdict: underpowered, with what would decide it" if binds else
                 f" on {recorded_inputs if recorded_inputs != run_inputs else 'other sizes or seeds, or among other models'}")
        return Decision(UNDERPOWERED, Outcome.PASS, note)
    if not recorded_model and not holds:
        return Decision(DOES_NOT_HOLD, Outcome.PASS,
                        "a new finding: the registry has no record of this model; look at it, and record it with "
                        "aniso record RESULTS")
    if not binds:
        where = recorded_inputs if recorded_inputs != run_inputs else "other sizes or seeds, or among other models"
        record = f"recorded: {words} on {where}"
        return Decision(measured, Outcome.PASS,
                        f"differs from the verdict recorded on other inputs or sizes ({record}; these inputs: "
                        f"{run_inputs})", record)
    if holds:
        return Decision(UNEXPECTEDLY_HOLDS, Outcome.FAIL,
                        f"registry expects {expected_verdict} ({expected_reason}); now it holds")
    return Decision(DOES_NOT_HOLD, Outcome.FAIL, expected_reason)
