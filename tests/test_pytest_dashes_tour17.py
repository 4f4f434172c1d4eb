"""`pytest claims/ -- --aniso-n-sequences 8` (the `--` of `aniso run MODEL -- OPTIONS` copied to pytest) ended in
pytest's "file or directory not found: --aniso-n-sequences": one line saying pytest takes files after `--` and the
option goes before it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from aniso.common.settings import options_taken_as_paths

ROOT = Path(__file__).resolve().parents[1]


def test_a_setting_option_among_the_file_arguments_is_named():
    assert options_taken_as_paths(["claims", "--aniso-n-sequences", "8"]).startswith(
        "--aniso-n-sequences was given after `--`, where pytest takes files and folders to collect")
    assert options_taken_as_paths(["claims", "tests/test_x.py"]) is None


def test_pytest_with_options_after_the_separator_is_one_usage_line(clean_env):
    done = subprocess.run([sys.executable, "-m", "pytest", str(ROOT / "claims"), "-p", "no:cacheprovider",
                           "--rootdir", str(ROOT), "-c", str(ROOT / "pyproject.toml"), "--", "--aniso-n-sequences", "8"],
                          capture_output=True, text=True, cwd=clean_env, timeout=300)
    text = done.stdout + done.stderr
    assert done.returncode == 4, text[-2000:]
    assert "ERROR: aniso settings: --aniso-n-sequences was given after `--`" in text, text[-2000:]
    assert "file or directory not found" not in text
