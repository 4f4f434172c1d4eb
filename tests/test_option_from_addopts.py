"""A setting's option put in PYTEST_ADDOPTS or the ini file's addopts and given again on the command line: pytest
puts those before the command line, so the option is given twice; the refusal says where the first came from and
that the variable ANISO_<SETTING> sets a default (it said only "given twice", to a user who typed it once). A row of
docs/bad-input.md."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _pytest(cwd: Path, args: list[str], **extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANISO_", "PYTEST_"))}
    env.update(PYTHONPATH=os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")]), **extra)
    return subprocess.run([sys.executable, "-m", "pytest", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def _said(done: subprocess.CompletedProcess) -> str:
    return next(line for line in done.stderr.splitlines() if "given twice" in line)


def test_an_option_from_pytest_addopts_given_again_names_the_variable_and_the_default_setting(tmp_path):
    done = _pytest(tmp_path, [str(ROOT / "claims"), "--co", "-q", "--aniso-n-sequences", "16"],
                   PYTEST_ADDOPTS="--aniso-n-sequences 8")
    assert done.returncode == 4, done.stdout[-2000:] + done.stderr[-2000:]
    assert _said(done).endswith(
        "argument --aniso-n-sequences: given twice ('8' from the variable PYTEST_ADDOPTS, then '16'); give it once: "
        "pytest puts the variable PYTEST_ADDOPTS before the command line, so a default there cannot be changed on "
        "it; set the default with the variable ANISO_N_SEQUENCES instead"), done.stderr


def test_an_option_from_the_ini_addopts_given_again_names_addopts(tmp_path):
    done = _pytest(tmp_path, [str(ROOT / "claims"), "--co", "-q", "-o", "addopts=--aniso-n-sequences=8",
                              "--aniso-n-sequences", "16"])
    assert done.returncode == 4, done.stdout[-2000:] + done.stderr[-2000:]
    assert "given twice ('8' from the ini file's addopts, then '16'); give it once: pytest puts the ini file's " \
           "addopts before" in _said(done) and "ANISO_N_SEQUENCES" in _said(done), done.stderr


def test_an_option_typed_twice_is_still_given_twice(tmp_path):
    done = _pytest(tmp_path, [str(ROOT / "claims"), "--co", "-q", "--aniso-n-sequences", "8", "--aniso-n-sequences",
                              "16"])
    assert _said(done).endswith("argument --aniso-n-sequences: given twice ('8', then '16'); give it once"), done.stderr


def test_the_help_of_a_relative_registry_says_the_working_folder_as_it_is_read(tmp_path):
    """`pytest --help` said a relative --aniso-registry is taken from "the working folder (pytest: its root folder)";
    it is taken from the working folder whatever pytest's root folder (here the checkout's)."""
    from aniso.common.settings import SETTING_HELP

    assert "a relative path is taken from the working folder (under pytest too, whatever its root folder)" \
        in SETTING_HELP["registry"]
    done = _pytest(tmp_path, [str(ROOT / "claims"), "--co", "-q", "--aniso-registry", "models.yaml"])
    assert done.returncode == 4 and f"models.yaml ({tmp_path / 'models.yaml'}) does not exist" in done.stderr, \
        done.stderr[-2000:]
    (tmp_path / "models.yaml").write_bytes((ROOT / "models.yaml").read_bytes())
    done = _pytest(tmp_path, [str(ROOT / "claims"), "--co", "-q", "--aniso-registry", "models.yaml",
                              "--aniso-models", "all-MiniLM-L6-v2"])
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
