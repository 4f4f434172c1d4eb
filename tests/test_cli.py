"""The command line: list, run (registry, folder, undetectable), diff (exit codes), help with examples."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from aniso.cli import main
from aniso.judge.results import ClaimResult, ResultsDocument, Uncertainty, provenance, write_results

ROOT = Path(__file__).resolve().parents[1]


def _env(tmp_path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANISO_")}
    env.update(ANISO_CACHE_DIR=str(tmp_path / "cache"), ANISO_REPORT_DIR=str(tmp_path / "reports"), CI="1")
    return env


@pytest.mark.parametrize("command", ["list", "run", "report", "diff", "stats", "block-sweep", "extract"])
def test_every_command_has_help_with_an_example(command, capsys):
    with pytest.raises(SystemExit) as exc:
        main([command, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "example:" in out and f"aniso {command}" in out or "aniso.cli extract" in out


def test_list_shows_claims_and_models_with_their_set_and_weights(capsys):
    assert main(["list", "--registry", str(ROOT / "models.yaml")]) == 0
    out = capsys.readouterr().out
    assert "G.token-nlp-anisotropic" in out and "executable" in out
    minilm = next(line for line in out.splitlines() if line.startswith("| all-MiniLM-L6-v2 "))
    assert "| yes " in minilm  # in the small set, and its weights install with the package
    opt13 = next(line for line in out.splitlines() if line.startswith("| opt-13b "))
    assert "12853M" in opt13 and "| no " in opt13  # large: outside the default set
    whisper = next(line for line in out.splitlines() if line.startswith("| whisper-base "))
    assert "| whisper-base (converted) " in whisper  # a model of the papers, from a conversion
    assert "| bert-base-uncased (relative) " in minilm
    header = next(line for line in out.splitlines() if line.startswith("| model ") and "source" in line)
    assert "| stands for " in header
    assert "| - " in next(line for line in out.splitlines() if line.startswith("| gemma-3-270m "))  # no seed row


def test_list_rejects_an_unknown_model_set(capsys):
    assert main(["list", "models", "--models", "smal", "--registry", str(ROOT / "models.yaml")]) == 2
    err = capsys.readouterr().err
    assert "'smal'" in err and "did you mean 'small'" in err


def _result(verdict, value, low, high, fragile=False, model="m"):
    return ClaimResult(claim_id="G.cnn-mostly-isotropic", paper="G", section="§3.2", figure="Fig. 4", statement="s",
                       model_id=model, test=f"claims/x.py::t[{model}]", verdict=verdict, measured={"max_avg_cos": value},
                       uncertainty=Uncertainty(statistic="highest layer avg cos", value=value, low=low, high=high,
                                               threshold=0.2, holds_if="<", holds_share=1.0, fragile=fragile,
                                               n_boot=100))


def _write(tmp_path, name, results) -> Path:
    path = tmp_path / name / "results.json"
    write_results(path, ResultsDocument(provenance=provenance(tmp_path, {}, None), results=results))
    return path


def test_diff_exits_1_on_a_changed_verdict_and_0_on_noise(tmp_path, capsys):
    old = _write(tmp_path, "a", [_result("holds", 0.17, 0.15, 0.19)])
    noise = _write(tmp_path, "b", [_result("holds", 0.18, 0.16, 0.20)])
    moved = _write(tmp_path, "c", [_result("holds", 0.10, 0.09, 0.11)])
    flipped = _write(tmp_path, "d", [_result("does not hold", 0.21, 0.19, 0.23, fragile=True)])
    assert main(["diff", str(old), str(noise)]) == 0
    assert "no verdict or number changed" in capsys.readouterr().out
    assert main(["diff", str(old), str(moved)]) == 0
    out = capsys.readouterr().out
    assert "1 number" in out and "0.17" in out and "0.1 [0.09, 0.11]" in out
    assert main(["diff", str(old), str(flipped)]) == 1
    out = capsys.readouterr().out
    assert "1 verdict" in out and "does not hold" in out and "fragile" in out


def test_diff_flags_a_record_that_went_stale(tmp_path, capsys):
    """A registry record whose numbers the new run does not reproduce is a change that fails the diff (exit 1)."""
    from aniso.judge.results import RecordDrift

    fresh = _result("expected not to hold", 0.17, 0.15, 0.19)
    stale = fresh.model_copy(update={"record_drift": [RecordDrift(key="p_value", recorded=0.39, measured=0.285,
                                                                  tolerance="p-value")]})
    old, new = _write(tmp_path, "a", [fresh]), _write(tmp_path, "b", [stale])
    assert main(["diff", str(old), str(new)]) == 1
    out = capsys.readouterr().out
    assert "1 record" in out and "stale record: p_value recorded 0.39, measured 0.285" in out
    assert main(["diff", str(new), str(old)]) == 0
    assert "record's numbers reproduced" in capsys.readouterr().out


def test_diff_names_added_and_removed_results_and_unreadable_files(tmp_path, capsys):
    old = _write(tmp_path, "a", [_result("holds", 0.17, 0.15, 0.19, model="x")])
    new = _write(tmp_path, "b", [_result("holds", 0.17, 0.15, 0.19, model="y")])
    assert main(["diff", "--all", str(old), str(new)]) == 0
    out = capsys.readouterr().out
    assert "1 added" in out and "1 removed" in out
    assert main(["diff", str(old), str(new)]) == 0  # other models: only the results both have (none) are compared
    assert "left aside 1 only in" in capsys.readouterr().out
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert main(["diff", str(old), str(bad)]) == 2
    assert "bad.json" in capsys.readouterr().err


def test_run_refuses_what_it_cannot_detect(tmp_path, capsys):
    folder = tmp_path / "weird"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "no-such-type", "hidden_size": 8}))
    assert main(["run", str(folder), "--registry", str(ROOT / "models.yaml")]) == 2
    err = capsys.readouterr().err
    assert "no-such-type" in err and "modality, granularity, architecture, role and family" in err
    assert main(["run", str(tmp_path / "nowhere"), "--registry", str(ROOT / "models.yaml")]) == 2
    assert "nowhere" in capsys.readouterr().err


def test_run_on_a_local_folder_detects_it_and_writes_a_report(tmp_path, tiny_bert_dir):
    """`aniso run <folder>`: an entry from its config (a BERT: text, subword, encoder), the chosen claims run on it
    alone, and the report holds its verdicts."""
    proc = subprocess.run([sys.executable, "-m", "aniso.cli", "run", str(tiny_bert_dir), "--claims",
                           "G.token-nlp-anisotropic", "--", "--aniso-n-sequences", "16"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env=_env(tmp_path) | {"TMPDIR": str(tmp_path)})
    assert not list(tmp_path.glob("aniso-run-*"))  # the temporary registry is removed
    assert "detected modality: text, granularity: subword, architecture: transformer, role: encoder" in proc.stderr
    runs = list((tmp_path / "reports").glob("run-*/results.json"))
    assert len(runs) == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = json.loads(runs[0].read_text())["results"]
    assert {r["claim_id"] for r in results} == {"G.token-nlp-anisotropic"}
    assert results[0]["model_id"] == tiny_bert_dir.name and results[0]["verdict"] in ("holds", "does not hold")
    assert results[0]["uncertainty"]["n_boot"] == 1000


def test_record_rewrites_a_stale_record_and_refuses_bad_files(tmp_path, capsys):
    """`aniso record RESULTS`: the stale record's numbers become the run's; --dry-run writes nothing; an unreadable
    results file is one line and exit 2."""
    import yaml

    from aniso.judge.results import RecordDrift

    registry = tmp_path / "models.yaml"
    registry.write_text("models:\n- id: m\n  source: {kind: local, path: ./m}\n  modality: vision\n"
                        "  granularity: pixel\n  architecture: cnn\n  role: encoder\n  family: f\n  expected:\n"
                        "    G.cnn-mostly-isotropic:\n      verdict: does-not-hold\n"
                        "      measured: {max_avg_cos: 0.521}\n      reason: 'max {max_avg_cos:.3f}'\n")
    r = _result("expected not to hold", 0.539, 0.5, 0.56).model_copy(update={
        "expected": {"measured": {"max_avg_cos": 0.521}},
        "record_drift": [RecordDrift(key="max_avg_cos", recorded=0.521, measured=0.539)]})
    results = _write(tmp_path, "a", [r])
    assert main(["record", str(results), "--registry", str(registry), "--dry-run"]) == 0
    assert "max_avg_cos 0.521 -> 0.539" in capsys.readouterr().out and "0.521" in registry.read_text()
    assert main(["record", str(results), "--registry", str(registry)]) == 0
    record = yaml.safe_load(registry.read_text())["models"][0]["expected"]["G.cnn-mostly-isotropic"]
    assert record["measured"] == {"max_avg_cos": 0.539}
    from aniso.registry.entries import load_registry
    assert load_registry(registry).get("m").expected["G.cnn-mostly-isotropic"].text == "max 0.539"
    assert main(["record", str(tmp_path / "nowhere.json"), "--registry", str(registry)]) == 2
    assert "nowhere.json" in capsys.readouterr().err
