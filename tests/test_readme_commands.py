"""The README's command-line examples run as written (with tiny sizes), and its "Bad input and faults" table names
tests that exist."""

from __future__ import annotations

import os
import re
import shlex
import shutil
from pathlib import Path

import pytest

from aniso.cli import main

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()

#: The README's command-line block, command by command (comments stripped); a change there must come here too.
COMMANDS = [
    "aniso list models",
    "aniso run all-MiniLM-L6-v2",
    "aniso run ./my-bert-folder --claims G.",
    "aniso diff reports/run-A/results.json reports/run-B/results.json",
    "aniso report reports/run-A/results.json",
]
#: Sizes that make `aniso run all-MiniLM-L6-v2` take seconds (the claims and the model are the README's).
TINY = ["--claims", "G.token-nlp-anisotropic", "--", "--aniso-n-sequences", "8", "--aniso-max-length", "32",
        "--aniso-n-bootstrap", "0"]


def _command_block() -> list[str]:
    after = README.split("**Command line**", 1)[1]
    block = re.search(r"```bash\n(.*?)```", after, re.S).group(1)
    return [line.split("#", 1)[0].strip() for line in block.splitlines() if line.strip()]


def test_the_readme_command_block_is_the_one_tested():
    assert _command_block() == COMMANDS


def test_the_readme_commands_run(tmp_path, monkeypatch, capsys):
    """`aniso list models`, `aniso run all-MiniLM-L6-v2` (one quick claim, tiny sizes), `aniso diff` and `aniso
    report` on what that run wrote, from the repository root as the README has them. `aniso run ./my-bert-folder`
    runs for real in tests/test_cli.py::test_run_on_a_local_folder_detects_it_and_writes_a_report."""
    assert "def test_run_on_a_local_folder_detects_it_and_writes_a_report" in (ROOT / "tests/test_cli.py").read_text()
    monkeypatch.chdir(ROOT)
    for name in [k for k in os.environ if k.startswith("ANISO_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("ANISO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("ANISO_REPORT_DIR", str(tmp_path / "reports"))
    monkeypatch.setenv("CI", "1")
    run_a = run_b = None
    for line in COMMANDS:
        argv = shlex.split(line)[1:]
        if argv[0] == "run":
            if argv[1].startswith("./"):
                continue  # the folder example: see the docstring
            code = main(argv + TINY)  # in this process: pytest.main runs the claims as `aniso` does
            out, err = capsys.readouterr()
            assert code == 0, out[-3000:] + err[-3000:]
            run_a = next((tmp_path / "reports").glob("run-*/results.json"))
            run_b = tmp_path / "run-B" / "results.json"
            run_b.parent.mkdir()
            shutil.copy(run_a, run_b)
            assert "| G.token-nlp-anisotropic | all-MiniLM-L6-v2 |" in out
            continue
        argv = [str(run_a) if a == "reports/run-A/results.json" else str(run_b) if a == "reports/run-B/results.json"
                else a for a in argv]
        assert main(argv) == 0, line
        out = capsys.readouterr().out
        if argv[0] == "list":
            assert re.search(r"^\| all-MiniLM-L6-v2 .*\| yes +\|", out, re.M)
        if argv[0] == "diff":
            assert "no verdict or number changed" in out
        if argv[0] == "report":
            assert run_a.with_name("report.html").stat().st_size > 0 and str(run_a.with_name("report.html")) in out


def _bad_input_rows() -> list[str]:
    section = README.split("## Bad input and faults", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| input")]


def test_the_bad_input_table_has_40_cases_each_with_a_test_that_exists():
    rows = _bad_input_rows()
    assert len(rows) >= 40 and len({r.split(" | ")[0] for r in rows}) == len(rows)
    for row in rows:
        tests = re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", row.rsplit(" | ", 1)[-1])
        assert tests, row
        for path, name in tests:
            assert re.search(rf"^def {name}\(", (ROOT / path).read_text(), re.M), f"{path}::{name} ({row[:60]})"
