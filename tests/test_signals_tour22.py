"""Tour 22: SIGUSR1 (what a batch scheduler sends before a job's time limit) or SIGXCPU (a CPU-time limit) to `aniso
run FOLDER` left its temporary registry behind, as SIGTERM no longer did; and a signal that ended a run between its
results.json and its report.html left the results without a word. Every catchable signal that ends a process by
default is answered as SIGTERM is (an ignored one stays ignored), and a run cut between its results and its report
says in one line on standard error what was written and how to make the report."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import pytest

from aniso.api import ENDING_SIGNALS

SCHEDULERS = [getattr(signal, n) for n in ("SIGUSR1", "SIGUSR2", "SIGXCPU", "SIGALRM", "SIGVTALRM", "SIGPROF")
              if hasattr(signal, n)]


def test_every_signal_that_ends_a_process_is_answered():
    assert set(SCHEDULERS) <= set(ENDING_SIGNALS)
    assert signal.SIGINT not in ENDING_SIGNALS and signal.SIGKILL not in ENDING_SIGNALS
    assert signal.SIGCHLD not in ENDING_SIGNALS  # (its default is to ignore it)


def _run(code: str, tmp_path):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, cwd=tmp_path,
                          timeout=120)


@pytest.mark.parametrize("signum", SCHEDULERS, ids=lambda s: signal.Signals(s).name)
def test_a_runs_folders_are_removed_and_the_process_ends_by_the_signal(tmp_path, signum):
    folder = tmp_path / "aniso-run-x"
    folder.mkdir()
    done = _run(f"""
        import os
        from pathlib import Path
        from aniso.api import _removed_on_sigterm
        with _removed_on_sigterm() as folders:
            folders.append(Path({str(folder)!r}))
            os.kill(os.getpid(), {int(signum)})
        print("not ended")
        """, tmp_path)
    assert done.returncode == -signum and "not ended" not in done.stdout, done.stderr
    assert not folder.exists()


def test_an_ignored_pipe_signal_stays_ignored(tmp_path):
    done = _run("""
        import os, signal
        from aniso.api import _removed_on_sigterm
        assert signal.getsignal(signal.SIGPIPE) is signal.SIG_IGN  # (Python's own, from its start)
        with _removed_on_sigterm():
            assert signal.getsignal(signal.SIGPIPE) is signal.SIG_IGN
            os.kill(os.getpid(), signal.SIGPIPE)
        print("still here")
        """, tmp_path)
    assert done.returncode == 0 and "still here" in done.stdout, done.stderr


@pytest.mark.parametrize("signum", [signal.SIGTERM] + SCHEDULERS[:1], ids=lambda s: signal.Signals(s).name)
def test_a_run_cut_between_its_results_and_its_report_says_so(tmp_path, signum):
    done = _run(f"""
        import os
        from pathlib import Path
        import aniso.report
        from aniso.common.settings import Settings
        from aniso.registry.entries import Registry
        from aniso.session import AnisoSession

        def cut(results, target):
            os.kill(os.getpid(), {int(signum)})

        aniso.report.write_html_report = cut
        session = AnisoSession.start(Settings(report_dir={str(tmp_path / "r")!r}, cache_dir={str(tmp_path / "c")!r},
                                              device="cpu"), Registry([]), Path({str(tmp_path)!r}))
        session.write_report()
        print("not ended")
        """, tmp_path)
    assert done.returncode == -signum and "not ended" not in done.stdout, done.stderr
    (results,) = (tmp_path / "r").glob("run-*/results.json")
    assert not results.with_name("report.html").exists()
    lines = done.stderr.strip().splitlines()
    assert lines == [f"aniso: ended by {signal.Signals(signum).name}: {results} is written whole, report.html was not "
                     f"(make it with: aniso report {results})"], done.stderr
