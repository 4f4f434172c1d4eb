"""Ctrl-C at the command line: in the first second or two of any command, while the ``aniso`` console script loads
pydantic, torch and transformers, it ended in Python's KeyboardInterrupt traceback; during ``aniso report`` it said
"interrupted" with exit code 2 (bad input's), and a Ctrl-C as the report's temporary file was made left that file
beside the report. Now: one line, exit code 130 (128 + SIGINT), and no temporary or half-written file."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: The console script (`aniso`, pyproject.toml [project.scripts]) as pip writes it, with a Ctrl-C landing as the
#: module MODULE starts to load: a KeyboardInterrupt raised there, as Python raises it from a SIGINT at that moment.
SCRIPT = """
import sys, importlib.abc

class Interrupt(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == {module!r}:
            raise KeyboardInterrupt

sys.meta_path.insert(0, Interrupt())
sys.argv = ["aniso", *{argv!r}]
from aniso.cli import entry
sys.exit(entry())
"""


def _console_script(module: str, argv: list[str]) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANISO_")} | {"ANISO_PROGRESS": "0"}
    return subprocess.run([sys.executable, "-c", SCRIPT.format(module=module, argv=argv)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def _ended_by_ctrl_c(returncode: int) -> bool:
    """130, or ended by SIGINT itself (Python does so at exit where a library ran code through PyRun_String that a
    Ctrl-C interrupted); a shell reports both as 130."""
    return returncode in (130, -signal.SIGINT)


@pytest.mark.parametrize("module, line", [
    ("pydantic", "aniso: interrupted (Ctrl-C)"),  # while aniso.api's settings load, before the options are read
    ("aniso.api", "aniso: interrupted (Ctrl-C)"),
    ("yaml", "aniso list: interrupted (Ctrl-C)"),  # once the command runs (it reads the registry)
])
def test_ctrl_c_while_the_console_script_loads_is_one_line_and_130(module, line):
    done = _console_script(module, ["list"])
    assert _ended_by_ctrl_c(done.returncode), (done.returncode, done.stderr[-3000:])
    assert done.stderr.strip() == line, done.stderr[-3000:]


def test_the_console_script_module_loads_nothing_but_the_standard_library():
    """Everything that takes time to load (pydantic, numpy, torch, transformers) loads once :func:`aniso.cli.entry`
    runs, where a Ctrl-C is answered; `from aniso.cli import RUN_EXIT_CODES, run_exit_code` still works."""
    code = ("import sys, aniso.cli\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'numpy', 'torch', 'transformers', "
            "'yaml', 'scipy', 'pluggy') or m.startswith('aniso.')))\n"
            "from aniso.cli import RUN_EXIT_CODES, run_exit_code\n"
            "print(RUN_EXIT_CODES[3][:15], callable(run_exit_code))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == ["['aniso.cli']", "nothing measure True"], done.stdout


# -- aniso report ------------------------------------------------------------------------------------------------


@pytest.fixture
def results(tmp_path) -> Path:
    from aniso.judge.results import ResultsDocument, provenance, write_results

    path = tmp_path / "results.json"
    write_results(path, ResultsDocument(provenance=provenance(tmp_path, {}, None), results=[]))
    return path


def _report(results: Path, capsys) -> tuple[int, list[str]]:
    from aniso.cli import main

    code = main(["report", str(results)])
    return code, capsys.readouterr().err.strip().splitlines()


def _left(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name != "results.json")


def test_ctrl_c_while_the_report_is_rendered_is_one_line_and_130(results, capsys, monkeypatch):
    import aniso.report

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(aniso.report, "render_html", interrupted)
    code, lines = _report(results, capsys)
    report = results.with_name("report.html")
    assert code == 130
    assert lines == [f"aniso report: interrupted (Ctrl-C) before the report {report} was written; nothing was "
                     "written"], lines
    assert _left(results.parent) == []


def test_ctrl_c_while_the_report_is_written_keeps_the_earlier_report_whole(results, capsys, monkeypatch):
    report = results.with_name("report.html")
    assert _report(results, capsys) == (0, [])
    earlier = report.read_bytes()
    real = Path.write_text

    def half(self, data, *args, **kwargs):  # half the page reaches the temporary file, then Ctrl-C
        real(self, data[: len(data) // 2], *args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(Path, "write_text", half)
    code, lines = _report(results, capsys)
    monkeypatch.undo()
    assert code == 130
    assert lines == [f"aniso report: interrupted (Ctrl-C) before the report {report} was written; the earlier file "
                     "there is as it was"], lines
    assert report.read_bytes() == earlier
    assert _left(results.parent) == ["report.html"]


def test_ctrl_c_as_the_temporary_file_is_made_leaves_no_file(results, capsys, monkeypatch):
    """The Ctrl-C lands as the system call that makes the report's temporary file returns: the file exists, its
    name not yet handed back (tempfile.mkstemp's window, which left `report.html.XXXXXXXX.tmp` behind)."""
    real = os.open

    def made_then_interrupted(path, flags, *args, **kwargs):
        fd = real(path, flags, *args, **kwargs)
        if str(path).endswith(".tmp") and Path(path).parent == results.parent:
            os.close(fd)
            raise KeyboardInterrupt
        return fd

    monkeypatch.setattr(os, "open", made_then_interrupted)
    code, lines = _report(results, capsys)
    monkeypatch.undo()
    assert code == 130 and len(lines) == 1 and "nothing was written" in lines[0], lines
    assert _left(results.parent) == []


def test_ctrl_c_once_the_report_is_written_says_it_is_whole(results, capsys, monkeypatch):
    import aniso.report

    real = aniso.report.write_html_report

    def written_then_interrupted(*args, **kwargs):
        real(*args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(aniso.report, "write_html_report", written_then_interrupted)
    code, lines = _report(results, capsys)
    report = results.with_name("report.html")
    assert code == 130
    assert lines == [f"aniso report: interrupted (Ctrl-C) once the report {report} was written whole"], lines
    assert report.read_text().rstrip().endswith("</html>")
    assert _left(results.parent) == ["report.html"]
