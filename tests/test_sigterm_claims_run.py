"""SIGTERM (``kill``, a scheduler's time limit) while `aniso run ID` or `pytest claims/` measures is answered as
Ctrl-C is: the run stops, one line says what is cached and whether a results file was written, the process then
ends by the signal, and the report folder the run created is not left behind empty. Rows of docs/bad-input.md."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _claims_stopped_by_sigterm(tmp_path: Path) -> Path:
    """A claims folder whose one claim test sends SIGTERM to its own process while it runs."""
    folder = tmp_path / "claims"
    folder.mkdir()
    (folder / "test_terminated.py").write_text(textwrap.dedent("""
        import os
        import signal
        import time

        import pytest

        @pytest.mark.claim("G.token-nlp-anisotropic")
        def test_terminated():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(30)
    """))
    return folder


def _run(cwd: Path, argv: list[str]) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANISO_", "PYTEST_"))}
    env.update(PYTHONPATH=os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")]), HF_HUB_OFFLINE="1",
               ANISO_CACHE_DIR=str(cwd.parent / "cache"), ANISO_PROGRESS="0")
    return subprocess.run([sys.executable, *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_sigterm_while_aniso_run_measures_is_one_line_and_leaves_no_empty_report_folder(tmp_path):
    claims = _claims_stopped_by_sigterm(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    done = _run(work, ["-m", "aniso.cli", "run", "all-MiniLM-L6-v2", "--claims", "G.token-nlp-anisotropic",
                       "--claims-dir", str(claims), "--registry", str(ROOT / "models.yaml")])
    lines = done.stderr.strip().splitlines()
    assert done.returncode == -signal.SIGTERM, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    assert lines and lines[-1].startswith("aniso run: interrupted (SIGTERM): the statistics of every model measured "
                                          f"before it are in the cache {tmp_path / 'cache'}"), done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert sorted(p.name for p in work.iterdir()) == [], list(work.iterdir())  # no empty reports/


def test_sigterm_while_pytest_claims_measures_is_one_line_and_leaves_no_empty_folder(tmp_path):
    claims = _claims_stopped_by_sigterm(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    done = _run(work, ["-m", "pytest", str(claims), "-q", "-p", "no:randomly", "-p", "no:cacheprovider", "-p",
                       "aniso.pytest_plugin", "--aniso-models", "all-MiniLM-L6-v2", "--aniso-registry",
                       str(ROOT / "models.yaml")])
    lines = done.stderr.strip().splitlines()
    assert done.returncode == -signal.SIGTERM, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    assert lines and lines[-1].startswith("pytest: interrupted (SIGTERM): the statistics of every model measured "
                                          "before it are in the cache"), done.stderr[-2000:]
    assert sorted(p.name for p in work.iterdir()) == [], list(work.iterdir())  # no empty reports/, no .benchmarks/


def test_a_report_folder_that_was_there_is_kept(tmp_path):
    from aniso.common.settings import _check_writable_folder, remove_empty_folders

    there = tmp_path / "there"
    there.mkdir()
    assert _check_writable_folder(str(there), "report_dir") is None
    remove_empty_folders(there, None)
    assert there.is_dir()
    made = _check_writable_folder(str(tmp_path / "a" / "b"), "report_dir")
    assert made == str(tmp_path / "a")
    (tmp_path / "a" / "b" / "kept.txt").write_text("x")
    remove_empty_folders(tmp_path / "a" / "b", made)
    assert (tmp_path / "a" / "b" / "kept.txt").is_file()
    (tmp_path / "a" / "b" / "kept.txt").unlink()
    remove_empty_folders(tmp_path / "a" / "b", made)
    assert not (tmp_path / "a").exists() and tmp_path.is_dir()
