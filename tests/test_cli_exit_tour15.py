"""A Ctrl-C that lands once a command is done, in the interpreter's exit (torch's exit hook after `aniso hub import`
had printed its success), printed that hook's 20-line traceback: the console script ends at once, with the
command's exit code and nothing more."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import atexit, os, signal, sys, time
import aniso.cli

def late_hook():  # a library's exit hook, interrupted by a Ctrl-C
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(2)

atexit.register(late_hook)
sys.argv = ["aniso", "list", "claims"]
sys.exit(aniso.cli.{entry}())
"""


def _run(entry: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", SCRIPT.format(entry=entry)], capture_output=True, text=True,
                          timeout=120)


def test_a_ctrl_c_in_the_exit_hooks_ends_with_the_commands_code_and_no_traceback():
    done = _run("entry")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "KeyboardInterrupt" not in done.stderr, done.stderr
    assert "G." in done.stdout  # the command's output was written whole


def test_the_console_script_is_the_entry_that_does_so():
    from importlib.metadata import entry_points

    (script,) = [e for e in entry_points(group="console_scripts") if e.name == "aniso"]
    assert script.value == "aniso.cli:entry"
