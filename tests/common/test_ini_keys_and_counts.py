"""Two ways of giving settings that were not read: ``aniso_models = …`` as a key of a user's pytest.ini (pytest
warned "Unknown config option" at the end and the run went ahead with every model), and ``--aniso-block-seeds=1,1,2``
(the help read as a list of seeds; the refusal said only "is not an integer")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from aniso.common.settings import SettingError, ini_settings_problem, parse_text

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name, text", [
    ("pytest.ini", "[pytest]\naniso_n_sequences = 16\naniso_models = all-MiniLM-L6-v2\n"),
    ("setup.cfg", "[tool:pytest]\naniso_n_sequences = 16\n"),
    ("pyproject.toml", "[tool.pytest.ini_options]\naniso_n_sequences = 16\n"),
    ("pytest.toml", "[pytest]\naniso_n_sequences = 16\n"),
])
def test_aniso_keys_in_pytests_configuration_file_are_named(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    said = ini_settings_problem(path)
    assert said is not None and said.startswith(f"{path}: aniso_n_sequences"), said
    assert said.endswith("aniso settings are not read as keys of pytest's configuration file; write them as options, "
                         "addopts = --aniso-n-sequences VALUE, or set ANISO_N_SEQUENCES"), said


def test_other_keys_and_sections_are_left_alone(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = --aniso-n-sequences 16\n[other]\naniso_x = 1\n")
    assert ini_settings_problem(tmp_path / "pytest.ini") is None
    assert ini_settings_problem(None) is None and ini_settings_problem(tmp_path / "gone.ini") is None


def test_through_pytest_the_run_stops_in_one_line(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\naniso_models = all-MiniLM-L6-v2\n")
    (tmp_path / "test_x.py").write_text("def test_x():\n    pass\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANISO_", "PYTEST_"))}
    env.update(PYTHONPATH=os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")]), HF_HUB_OFFLINE="1",
               ANISO_CACHE_DIR=str(tmp_path / "cache"), ANISO_REPORT_DIR=str(tmp_path / "reports"))
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "aniso.pytest_plugin", "-p", "no:randomly", "-p",
                           "no:cacheprovider", f"--aniso-registry={ROOT / 'models.yaml'}", "test_x.py"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 4, done.stdout[-2000:] + done.stderr[-2000:]
    assert (f"ERROR: aniso settings: {tmp_path / 'pytest.ini'}: aniso_models: aniso settings are not read as keys of "
            "pytest's configuration file") in done.stderr, done.stderr[-2000:]


def test_a_list_given_where_a_count_goes_is_said_to_be_one():
    with pytest.raises(SettingError) as refused:
        parse_text("block_seeds", "1,1,2", "option --aniso-block-seeds")
    assert str(refused.value) == (
        "option --aniso-block-seeds='1,1,2' is not an integer (a count, not a list); give a whole number from 1 to "
        "1000: number of seeds of the untrained-block sweep, each seeding its layer initialisation, inputs and bias "
        "direction (G §4)")
