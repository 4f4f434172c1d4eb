"""A claim tested twice on one model (the attention sink, and its emergence along training) that does not hold where
the registry has no record made `aniso record` add the claim's record twice: the registry no longer validated (the
key given twice) and nothing was recorded. One record a claim, from its first result."""

from __future__ import annotations

import yaml

from aniso.judge.records import record_new_findings
from aniso.judge.results import ClaimResult

ROW = ("models:\n- id: m\n  source: {kind: local, path: ./m}\n  modality: text\n  granularity: byte\n"
       "  architecture: transformer\n  role: decoder\n  family: f\n")


def _result(test: str, measured: dict) -> ClaimResult:
    return ClaimResult(claim_id="X.attention-sink", paper="X", section="s", figure="f", statement="s", model_id="m",
                       test=f"claims/test_counter_claims.py::{test}[m]", verdict="does not hold", measured=measured)


def test_a_claim_tested_twice_is_recorded_once_from_its_first_result():
    text, notes = record_new_findings(ROW, [_result("test_attention_sink", {"share": 0.0, "max_head_mean": 0.1}),
                                            _result("test_attention_sink_emerges", {"final_share": 0.0})])
    expected = yaml.safe_load(text)["models"][0]["expected"]
    assert list(expected) == ["X.attention-sink"] and expected["X.attention-sink"]["measured"] == {
        "share": 0.0, "max_head_mean": 0.1}
    assert notes == ["m X.attention-sink: recorded as does-not-hold (a new finding)"]
