"""A second Ctrl-C while `aniso run` answers the first (pytest writing the results of the tests that ran, the run
removing its empty folders): the run ends as the first asked, with the same one line on what is cached and what was
written, exit 130, and no empty report folder (it was a bare "interrupted (Ctrl-C)" and an empty reports/ left); the
second Ctrl-C says once why nothing more happens and how to quit at once."""

from __future__ import annotations

import functools
import os
import signal
import time

import pytest

from aniso.cli import main
from test_cli_tour import MODEL, REGISTRY


def test_a_second_ctrl_c_says_what_the_first_would_and_leaves_no_empty_folder(clean_env, monkeypatch, capsys,
                                                                               request):
    # Ctrl-C as a terminal gives it: Python's handler (a pytest-xdist worker, where this may run, ignores SIGINT)
    request.addfinalizer(functools.partial(signal.signal, signal.SIGINT, signal.getsignal(signal.SIGINT)))
    signal.signal(signal.SIGINT, signal.default_int_handler)
    corpus = clean_env / "corpus.txt"
    corpus.write_text("\n".join(" ".join(f"w{(i * 7 + j) % 40}" for j in range(12)) for i in range(16)) + "\n")
    monkeypatch.setenv("ANISO_CORPUS", str(corpus))
    monkeypatch.setenv("ANISO_NO_CACHE", "1")
    reports = clean_env / "new-reports"
    monkeypatch.setenv("ANISO_REPORT_DIR", str(reports))

    def measuring(*args, **kwargs):  # pytest: Ctrl-C while a test runs, then again while it answers the first
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)  # (the signal lands at once)
        except KeyboardInterrupt:
            os.kill(os.getpid(), signal.SIGINT)
            return pytest.ExitCode.INTERRUPTED
        raise AssertionError("the first Ctrl-C did not interrupt")

    monkeypatch.setattr(pytest, "main", measuring)
    code = main(["run", MODEL, "--registry", REGISTRY, "--claims", "G.token-nlp-anisotropic"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 130, err
    assert err == ["aniso run: still stopping after the first Ctrl-C (keeping what ran); Ctrl-\\ quits at once",
                   "aniso run: interrupted (Ctrl-C): nothing was cached (setting no_cache); no results file was "
                   "written"], err
    assert not reports.exists()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # Ctrl-C is Python's again after the run
