"""`pytest claims/` from a clean folder leaves no empty `.benchmarks/` (pytest-benchmark's storage, made as pytest
starts) there; a benchmark run that saves its results still saves them there. A row of docs/bad-input.md."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _pytest(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANISO_", "PYTEST_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "pytest", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def test_pytest_claims_from_a_clean_folder_leaves_no_benchmark_folder(tmp_path):
    done = _pytest(tmp_path, str(ROOT / "claims"), "-q", "-p", "no:randomly", "-p", "no:cacheprovider", "--co",
                   "--aniso-models", "all-MiniLM-L6-v2", "--aniso-claims", "G.token-nlp-anisotropic")
    assert done.returncode == 0 and "2/40 tests collected" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]
    assert sorted(p.name for p in tmp_path.iterdir()) == [], list(tmp_path.iterdir())


def test_a_benchmark_that_saves_its_run_still_saves_it_in_the_benchmark_folder(tmp_path):
    (tmp_path / "test_b.py").write_text(textwrap.dedent("""
        def test_sum(benchmark):
            benchmark.pedantic(sum, args=([1, 2],), rounds=2)
    """))
    done = _pytest(tmp_path, "test_b.py", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", "-p",
                   "aniso.pytest_plugin", "--benchmark-autosave")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    saved = list((tmp_path / ".benchmarks").rglob("*.json"))
    assert len(saved) == 1, sorted((tmp_path / ".benchmarks").rglob("*"))


def test_an_existing_benchmark_folder_is_kept(tmp_path):
    (tmp_path / ".benchmarks").mkdir()
    done = _pytest(tmp_path, str(ROOT / "claims"), "-q", "-p", "no:randomly", "-p", "no:cacheprovider", "--co",
                   "--aniso-models", "all-MiniLM-L6-v2", "--aniso-claims", "G.token-nlp-anisotropic")
    assert done.returncode == 0 and (tmp_path / ".benchmarks").is_dir(), done.stdout[-2000:]


def test_pytest_claims_help_or_a_usage_error_from_a_clean_folder_leaves_no_benchmark_folder(tmp_path):
    """--help configures the plugins (pytest-benchmark makes its folder) but starts no session; nor does a usage
    error raised as the aniso plugin configures, nor --version."""
    for args in (["--help"], ["--version"], ["--aniso-n-sequences", "0"], ["--aniso-models", "no-such-model"]):
        done = _pytest(tmp_path, str(ROOT / "claims"), "-p", "no:randomly", *args)
        assert done.returncode in (0, 4), (args, done.stdout[-2000:], done.stderr[-2000:])
        assert sorted(p.name for p in tmp_path.iterdir()) == [], (args, list(tmp_path.iterdir()))
