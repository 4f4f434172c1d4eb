"""Bad input at the command line's doors (found by a tour of the commands): arguments after `--` given to a command
that passes none to pytest (dropped without a word: `aniso stats M -- --aniso-seed 3` measured seed 0), a list of
models where one is taken, a model given after `--`, a test path after `aniso run ... --`, and SIGTERM to `aniso
bench command` (its timed process ran on and its temporary folder stayed). Each is a row of docs/bad-input.md."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODEL = "all-MiniLM-L6-v2"
CLAIM = "G.token-nlp-anisotropic"


# --- A47, A48: arguments after `--` of a command other than aniso run ---------------------------------------------

def test_stats_refuses_a_setting_after_dashes_naming_its_variable(clean_env, refused_line):
    line = refused_line(["stats", MODEL, "--n-sequences", "8", "--", "--aniso-seed", "3"])
    assert line.startswith("aniso stats: --aniso-seed 3 after `--`: only aniso run passes what follows `--`"), line
    assert line.endswith("set the variable ANISO_SEED=3 instead (see aniso stats --help)"), line


def test_stats_names_its_own_option_for_a_setting_it_takes(clean_env, refused_line):
    line = refused_line(["stats", MODEL, "--", "--aniso-n-sequences=8"])
    assert "give --n-sequences 8 before `--`" in line, line


def test_report_refuses_its_own_option_after_dashes(clean_env, refused_line, tmp_path):
    results = tmp_path / "results.json"
    results.write_text("{}")
    line = refused_line(["report", str(results), "--", "--out", str(tmp_path / "x.html")])
    # (a long temporary path is shortened in the middle to keep the line readable)
    assert line.startswith("aniso report: --out ") and " after `--`: only aniso run" in line, line
    assert "give --out before `--`" in line, line
    assert not (tmp_path / "x.html").exists() and not (tmp_path / "report.html").exists()


@pytest.mark.parametrize("argv", [["list", "claims", "--", "-x"], ["diff", "a.json", "b.json", "--", "b"],
                                  ["bench", "twonn", "--n", "10", "--", "--aniso-seed", "1"]])
def test_every_other_command_refuses_arguments_after_dashes(clean_env, refused_line, argv):
    line = refused_line(argv)
    assert "after `--`: only aniso run passes what follows `--`" in line, line


def test_bench_twonn_names_its_seed_option(clean_env, refused_line):
    line = refused_line(["bench", "twonn", "--", "--aniso-seed", "1"])
    assert "give --seed 1 before `--`" in line, line


# --- A44, A45, A46: several models, or a model after `--` ---------------------------------------------------------

def test_run_of_two_models_says_it_takes_one(clean_env, refused_line):
    line = refused_line(["run", f"{MODEL},bert-base-uncased", "--claims", CLAIM])
    assert f"'{MODEL},bert-base-uncased' names 2 models; aniso run runs the claims on one model" in line, line
    assert f"pytest claims/ --aniso-models {MODEL},bert-base-uncased" in line, line


def test_stats_of_two_models_says_it_takes_one(clean_env, refused_line):
    line = refused_line(["stats", f"{MODEL},bert-base-uncased", "--n-sequences", "8"])
    assert "names 2 models; this takes one registry id" in line and "did you mean" not in line, line


def test_stats_of_a_list_names_the_unknown_ids(clean_env, refused_line):
    line = refused_line(["stats", f"{MODEL},no-such-model"])
    assert "('no-such-model' not in registry" in line, line


def test_run_with_the_model_after_dashes_says_so(clean_env, refused_line):
    line = refused_line(["run", "--claims", CLAIM, "--", MODEL, "--aniso-n-sequences", "8"])
    assert line.startswith(f"aniso run: no model given before `--`; {MODEL} after `--` is passed to pytest"), line
    assert "not both" not in line, line


def test_run_with_neither_model_nor_changed_since(clean_env, refused_line):
    line = refused_line(["run", "--claims", CLAIM])
    assert line == "aniso run: give a model (registry id, folder or hub id) or --changed-since REF", line


# --- A09: a test path after aniso run ... -- ------------------------------------------------------------------------

@pytest.mark.parametrize("path", ["claims/test_godey_modalities.py",
                                  "claims/test_godey_pretrained.py::test_token_nlp_anisotropic"])
def test_run_refuses_a_test_path_after_dashes(clean_env, refused_line, path):
    line = refused_line(["run", MODEL, "--claims", CLAIM, "--", "--aniso-n-sequences", "8", str(ROOT / path)])
    assert f"{ROOT / path} is a test path" in line and "select claims with --claims" in line, line


def test_a_deselect_value_is_no_test_path():
    from aniso.api import _runs_tests

    _runs_tests(["--deselect", "claims/test_godey_modalities.py::test_x", "-k", "x.py", "-x"])
    with pytest.raises(ValueError, match="is a test path"):
        _runs_tests(["-x", "claims/test_godey_modalities.py"])


# --- A39: SIGTERM to aniso bench command ----------------------------------------------------------------------------

def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process table from /proc")
def test_sigterm_to_bench_command_ends_its_child_and_removes_its_folder(clean_env, tmp_path, tiny_bert_dir):
    """SIGTERM to the aniso process alone (as `kill PID` sends it): the timed process is ended with it and the
    temporary folder (the paragraphs, the command's cache) is removed."""
    reg = tmp_path / "models.yaml"
    reg.write_text(f"models:\n  - id: tiny\n    source: {{kind: local, path: {tiny_bert_dir}}}\n    modality: text\n"
                   "    granularity: subword\n    architecture: transformer\n    role: encoder\n    family: bert\n")
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(" ".join(f"w{(i * 7 + j) % 40}" for j in range(5 + i % 9)) for i in range(20)))
    temp = tmp_path / "temp"
    temp.mkdir()
    env = dict(os.environ, ANISO_CORPUS=str(corpus), TMPDIR=str(temp))
    proc = subprocess.Popen([sys.executable, "-m", "aniso.cli", "bench", "command", "tiny", "--paragraphs", "6",
                             "--repeats", "50", "--registry", str(reg)], env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        children = []
        while not children and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
            children = _children(proc.pid)
        assert children, f"no timed process started: {proc.poll()}"
        assert list(temp.iterdir()), "no temporary folder made"
        os.kill(proc.pid, signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    time.sleep(0.5)
    survivors = [c for c in children if _alive(c)]
    for pid in survivors:  # not left running past the test
        os.kill(pid, signal.SIGKILL)
    assert not survivors, "a timed process survived"
    assert list(temp.iterdir()) == [], list(temp.rglob("*"))[:5]
    assert proc.returncode == -signal.SIGTERM, err
    assert "Traceback" not in err and "interrupted (SIGTERM)" in err, err
