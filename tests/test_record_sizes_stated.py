"""A record's numbers are compared at the sizes it was measured at: a record naming its own ``sizes`` is compared on
a run at those sizes whether or not its registry file names a ``recorded_profile``; where neither the record nor the
registry says at which sizes or on which inputs the numbers were measured, nothing is compared and ``record_check`` says why (never a
silent "holds" that reads as a reproduced record)."""

from __future__ import annotations

import pytest

from aniso.common.settings import Settings
from aniso.judge.verdicts import HOLDS, Outcome
from aniso.registry.entries import load_registry
from aniso.session import AnisoSession

WIKI = "wikitext-103-validation@fc03b3e11199aebb"
CLAIM = "X.rogue-dimensions"
ROW = ("models:\n- id: mybert\n  source: {{kind: hub, repo: x/mybert}}\n  modality: text\n  granularity: subword\n"
       "  architecture: transformer\n  role: encoder\n  family: bert\n  expected:\n    X.rogue-dimensions:\n"
       "      verdict: holds\n      source: measured\n      measured: {{max_top3_share: 0.5}}\n{sizes}"
       "      reason: top3 share {{max_top3_share:.2f}}\n")
STATED = f"recorded_profile: quick\nrecorded_inputs: {{text: {WIKI}}}\n"


def _conclude(tmp_path, text: str, **settings):
    path = tmp_path / "my.yaml"
    path.write_text(text)
    registry = load_registry(path)
    session = AnisoSession.start(Settings(report_dir=str(tmp_path / "r"), cache_dir=str(tmp_path / "c"),
                                          **settings), registry, tmp_path)
    entry = registry.get("mybert")
    context = session.claim(CLAIM, entry, "t")
    context.result.inputs = WIKI
    decision, message = context.conclude(True, {"max_top3_share": 0.7365}, "rule")
    return decision, context.result, message


@pytest.mark.parametrize("head", ["", STATED], ids=["no recorded_profile", "recorded_profile"])
def test_a_record_with_its_own_sizes_is_compared_at_those_sizes(tmp_path, head):
    decision, result, message = _conclude(tmp_path, head + ROW.format(sizes="      sizes: {n_sequences: 16}\n"),
                                          n_sequences=16)
    assert (decision.verdict, decision.outcome) == (HOLDS, Outcome.FAIL), (decision, result.record_check)
    assert [d.key for d in result.record_drift] == ["max_top3_share"] and "stale" in message, message
    decision, result, _ = _conclude(tmp_path, head + ROW.format(sizes="      sizes: {n_sequences: 16}\n"),
                                    n_sequences=32)
    assert decision.outcome is Outcome.PASS and "not compared" in result.record_check, result.record_check


def test_a_record_measured_at_sizes_nobody_states_is_said_not_compared(tmp_path):
    decision, result, _ = _conclude(tmp_path, ROW.format(sizes=""))
    assert decision.outcome is Outcome.PASS and result.record_drift == []
    assert ("not compared: neither the record (sizes:, inputs:) nor the registry (recorded_profile:, "
            "recorded_inputs:) says at which sizes or on which inputs" in result.record_check), result.record_check
    decision, result, message = _conclude(tmp_path, STATED + ROW.format(sizes=""))
    assert decision.outcome is Outcome.FAIL and "stale" in message, (decision, result.record_check)
