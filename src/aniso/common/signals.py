"""The signals that end a process by default, which a run answers with its clean-up before it ends as the signal
would have ended it (:func:`aniso.api._removed_on_sigterm`, the command line's ``_sigterm_raised``, the writing of
a run's results and report in :mod:`aniso.session`)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from typing import Callable, Iterator

#: Every catchable signal whose default action ends the process (signal(7): "Term" or "Core"): SIGTERM (``kill``, a
#: job scheduler's end), SIGHUP (the terminal or ssh session closed), SIGQUIT (Ctrl-\\), SIGUSR1 and SIGUSR2 (what
#: batch schedulers send before a job's time limit), SIGXCPU (a CPU-time limit, ``ulimit -t``), SIGXFSZ (a file-size
#: limit), SIGALRM, SIGVTALRM and SIGPROF (timers) and SIGPIPE (a closed pipe). SIGINT is Ctrl-C's KeyboardInterrupt,
#: SIGKILL cannot be caught, and the faults (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS) are left to
#: Python. A signal that is ignored stays ignored where these are answered: Python ignores SIGPIPE and SIGXFSZ from
#: its start (a write then raises an error instead), ``nohup`` ignores SIGHUP.
ENDING_SIGNALS = tuple(getattr(signal, name) for name in (
    "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGXCPU", "SIGXFSZ", "SIGALRM", "SIGVTALRM", "SIGPROF",
    "SIGPIPE") if hasattr(signal, name))


@contextlib.contextmanager
def handling(on_signal: Callable, signums: list[int]) -> Iterator[None]:
    """Inside the block, ``on_signal`` handles each of ``signums``; on leaving it, each signal's handler before comes
    back (the default where Python had none). The one way :func:`said_on_signal`, the API's folder clean-up
    (:func:`aniso.api._removed_on_sigterm`) and the command line's ``_sigterm_raised`` set and restore handlers; call
    it from the main thread (only that thread can set handlers)."""
    previous = {signum: signal.getsignal(signum) for signum in signums}
    for signum in signums:
        signal.signal(signum, on_signal)
    try:
        yield
    finally:
        for signum in signums:
            signal.signal(signum, previous[signum] if previous[signum] is not None else signal.SIG_DFL)


@contextlib.contextmanager
def said_on_signal(line: Callable[[int], str | None]) -> Iterator[None]:
    """Inside the block, a signal of :data:`ENDING_SIGNALS` first writes ``line(signum)`` (when it gives one) to
    standard error, as one line, then goes on as it would have: to the handler set before (whose clean-up then
    runs), or, where none was, ending the process by the signal itself. An ignored signal stays ignored; only the
    main thread can set handlers (elsewhere the block runs as it is). The handlers before come back after."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.getsignal(signum) for signum in ENDING_SIGNALS}

    def on_signal(signum, frame):
        text = line(signum)
        if text:
            try:
                sys.stderr.write(text + "\n")
                sys.stderr.flush()
            except (OSError, ValueError):  # (a closed standard error: the signal still ends the process)
                pass
        before = previous[signum]
        signal.signal(signum, before if before is not None else signal.SIG_DFL)
        if callable(before):
            before(signum, frame)
            return
        os.kill(os.getpid(), signum)

    with handling(on_signal, [signum for signum, before in previous.items() if before is not signal.SIG_IGN]):
        yield


def interrupted_line(settings, results, signum: int | None = None) -> str:
    """The one line of a claims run stopped by Ctrl-C, or by the signal ``signum`` answered as Ctrl-C is: what of it
    is kept (the statistics cache of ``settings``, :class:`aniso.common.settings.Settings`; the results file
    ``results`` of the tests that ran, a path or None) and what is not."""
    from pathlib import Path

    kept = ("nothing was cached (setting no_cache)" if settings.no_cache else
            f"the statistics of every model measured before it are in the cache {settings.cache_dir}")
    wrote = (f"the results of the tests that ran are in {results}" if results is not None and Path(results).is_file()
             else "no results file was written")
    how = "Ctrl-C" if signum is None else signal.Signals(signum).name
    return f"interrupted ({how}): {kept}; {wrote}"
