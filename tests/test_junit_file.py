"""pytest's ``--junitxml`` file beside a claims run: checked before anything is measured, and the run's results and
report written before any plugin's session finish (pytest's junitxml writing that file) can fail."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from aniso import api

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = ROOT / "models.yaml"
M = "all-MiniLM-L6-v2"
C = "G.token-nlp-anisotropic"


def _config(path):
    from aniso.pytest_plugin import _junit_file_problem

    return _junit_file_problem,  SimpleNamespace(option=SimpleNamespace(xmlpath=path))


def test_a_junit_file_that_cannot_be_written_is_named_before_the_run(tmp_path):
    """/dev/full (takes no byte), a folder, a path under a file or under a folder that cannot be written: one line
    naming --junitxml and the path; a missing file (and missing folders above it) and /dev/null are fine, and the
    check writes nothing."""
    (tmp_path / "file").write_text("x")
    (tmp_path / "old.xml").write_text("kept")
    refused = {"/dev/full": "No space left on device", str(tmp_path): "is a folder",
               str(tmp_path / "file" / "j.xml"): "is a file, not a folder"}
    for path, why in refused.items():
        check, config = _config(path)
        line = check(config)
        assert line is not None and line.startswith("--junitxml ") and why in line and "\n" not in line, line
    assert line.endswith("give a path pytest can write (it would fail only once the claims are measured)")
    for path in (None, "", "/dev/null", str(tmp_path / "new" / "deeper" / "j.xml"), str(tmp_path / "old.xml")):
        check, config = _config(path)
        assert check(config) is None, path
    assert not (tmp_path / "new").exists() and (tmp_path / "old.xml").read_text() == "kept"


def test_run_claims_refuses_an_unwritable_junit_file_before_measuring(clean_env):
    """A device that takes no byte (/dev/full) exists as a file: refused before the run, as a folder that cannot
    be written is."""
    said = r"^the pytest option --junitxml /dev/full in pytest_args: cannot write /dev/full \(No space left on device\)"
    with pytest.raises(ValueError, match=said):
        api.run_claims(M, C, registry=REGISTRY, pytest_args=["--junitxml=/dev/full"])
    assert not (clean_env / "cache").exists() or not any((clean_env / "cache").rglob("*.safetensors"))


def test_results_and_report_are_written_when_another_plugins_session_finish_fails(clean_env, monkeypatch):
    """A plugin whose session finish raises (as junitxml does on a full disk) no longer takes results.json and the
    report with it: the suite's session finish runs first."""
    corpus = clean_env / "corpus.txt"
    corpus.write_text("\n".join(f"Paragraph {i} says the river runs through the old town under stone bridges, and "
                                f"the market opens at {i} in the morning." for i in range(16)) + "\n")
    (clean_env / "failing_finish.py").write_text(
        "def pytest_sessionfinish(session, exitstatus):\n    raise OSError(28, 'No space left on device')\n")
    monkeypatch.syspath_prepend(str(clean_env))
    monkeypatch.setenv("ANISO_CORPUS", str(corpus))
    monkeypatch.delitem(sys.modules, "failing_finish", raising=False)
    with pytest.raises(OSError, match="No space left"):
        api.run_claims(M, C, registry=REGISTRY, pytest_args=["-p", "failing_finish"],
                       settings={"n_sequences": 16, "max_length": 32, "n_bootstrap": 20})
    written = list((clean_env / "reports").glob("run-*/results.json"))
    assert len(written) == 1 and (written[0].parent / "report.html").is_file()
    results = json.loads(written[0].read_text())
    assert C in json.dumps(results)
