"""Tour 19: SIGHUP (a closed terminal or ssh session) to `aniso run FOLDER` left its temporary registry folder behind;
SIGTERM removed it. Both signals now remove the folders of a run, then end the process as they would have; an ignored
SIGHUP (``nohup``) stays ignored."""

from __future__ import annotations

import os
import signal

import pytest

from aniso.api import ENDING_SIGNALS, _removed_on_sigterm
from aniso.cli import _sigterm_raised, _Terminated


@pytest.mark.parametrize("signum", ENDING_SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_the_folders_of_a_run_are_removed_on_each_ending_signal(tmp_path, signum):
    seen = []
    previous = signal.signal(signum, lambda s, f: seen.append(s))  # someone's handler: it decides what comes next
    try:
        folder = tmp_path / "aniso-run-x"
        folder.mkdir()
        with _removed_on_sigterm() as folders:
            folders.append(folder)
            os.kill(os.getpid(), signum)
        assert not folder.exists() and seen == [signum]
    finally:
        signal.signal(signum, previous)


def test_an_ignored_hangup_stays_ignored(tmp_path):
    if not hasattr(signal, "SIGHUP"):
        pytest.skip("no SIGHUP on this system")
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as under nohup
    try:
        folder = tmp_path / "kept"
        folder.mkdir()
        with _removed_on_sigterm() as folders:
            folders.append(folder)
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            os.kill(os.getpid(), signal.SIGHUP)
        assert folder.exists()
    finally:
        signal.signal(signal.SIGHUP, previous)


@pytest.mark.parametrize("signum", ENDING_SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_the_commands_clean_up_on_each_ending_signal(signum):
    previous = signal.signal(signum, signal.SIG_DFL)
    try:
        with pytest.raises(_Terminated) as caught:
            with _sigterm_raised():
                os.kill(os.getpid(), signum)
        assert caught.value.signum == signum and caught.value.name == signal.Signals(signum).name
        assert signal.getsignal(signum) is signal.SIG_DFL
    finally:
        signal.signal(signum, previous)
