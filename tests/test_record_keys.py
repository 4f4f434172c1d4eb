"""A record whose ``measured`` names a number no test of its claim reports (``p_valeu`` for ``p_value``) is never
compared: the run fails naming the record and the keys the claim reports; a key another test of the claim reports
is compared there, and the run passes."""

from __future__ import annotations

from aniso.common.settings import Settings
from aniso.registry.entries import ModelEntry, Registry
from aniso.session import AnisoSession

WIKI = "wikitext-103-validation@fc03b3e11199aebb"
CLAIM = "G.drift-correlation-spearman"


def _session(tmp_path, key: str):
    entry = ModelEntry.model_validate(dict(
        id="m", source={"kind": "hub", "repo": "x/m"}, modality="text", granularity="subword",
        architecture="transformer", role="encoder", family="bert",
        expected={CLAIM: dict(verdict="does-not-hold", measured={key: 0.39}, reason=f"p = {{{key}:.2f}}")}))
    registry = Registry([entry], recorded_inputs={"text": WIKI})
    session = AnisoSession.start(Settings(report_dir=str(tmp_path / "r"), cache_dir=str(tmp_path / "c")), registry,
                                 tmp_path)
    return session, entry


def _conclude(session, entry, name: str, measured: dict):
    context = session.claim(CLAIM, entry, name)
    context.result.inputs = WIKI
    context.conclude(False, measured, "rule")
    session.record(context.result, seconds=0.0)
    return context.result


def test_a_record_key_no_test_of_the_claim_reports_fails_the_run_naming_it(tmp_path):
    session, entry = _session(tmp_path, "p_valeu")
    result = _conclude(session, entry, "t", {"p_value": 0.39, "rho": 0.1})
    assert session.finish() is True
    assert len(session.must_run_failures) == 1, session.must_run_failures
    said = session.must_run_failures[0]
    assert said.startswith(f"{CLAIM} on m: the registry's record is stale"), said
    assert "'p_valeu' (did you mean 'p_value'?)" in said and "they report p_value, rho" in said, said
    assert "another test" not in result.record_check and "no test of" in result.record_check, result.record_check


def test_a_record_key_another_test_of_the_claim_reports_is_compared_there(tmp_path):
    session, entry = _session(tmp_path, "p_value")
    first = _conclude(session, entry, "t1", {"final_share": 0.0})
    second = _conclude(session, entry, "t2", {"p_value": 0.3905})
    assert session.finish() is False, session.must_run_failures
    assert "reports none of them" in first.record_check and "all within" in second.record_check
