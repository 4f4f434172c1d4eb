"""Standard output that cannot be written: a reader that closed the pipe (`aniso list | head`) ends the output
quietly; a full disk (`> /dev/full`) is one line on standard error, exit 1 (an environment fault, not bad input)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _env(tmp_path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANISO_")}
    env.update(ANISO_CACHE_DIR=str(tmp_path / "cache"), ANISO_REPORT_DIR=str(tmp_path / "reports"), CI="1",
               PYTHONPATH=str(ROOT / "src"))
    return env


def test_a_closed_pipe_ends_aniso_list_quietly(tmp_path):
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line: every write meets a closed pipe
    try:
        done = subprocess.run([sys.executable, "-m", "aniso.cli", "list", "all"], cwd=ROOT, env=_env(tmp_path),
                              stdout=write, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_output_to_a_full_disk_is_one_line_naming_the_output(tmp_path):
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "aniso.cli", "list", "models"], cwd=ROOT, env=_env(tmp_path),
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.splitlines() == ["aniso list: cannot write the output: No space left on device"]


def test_a_closed_standard_output_is_one_line_as_for_a_full_disk(tmp_path):
    done = subprocess.run(["sh", "-c", 'exec "$0" -m aniso.cli list claims >&-', sys.executable], cwd=ROOT,
                          env=_env(tmp_path), stderr=subprocess.PIPE, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.splitlines() == ["aniso list: cannot write the output: standard output is closed"]


@pytest.mark.parametrize("argv", [["list", "models"], ["hub", "list", "--cache-dir", "{empty}"]])
def test_every_command_started_with_standard_output_closed_says_so(argv, tmp_path, monkeypatch, capsys):
    from aniso.cli import main

    (tmp_path / "hc").mkdir()
    monkeypatch.setattr(sys, "stdout", None)
    code = main([a.format(empty=tmp_path / "hc") for a in argv])
    assert code == 1
    assert sys.stdout is None
    assert capsys.readouterr().err.splitlines()[-1] == f"aniso {argv[0]}: cannot write the output: standard output is closed"
