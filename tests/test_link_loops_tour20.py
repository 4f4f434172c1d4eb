"""Tour 20: a path given through a loop of symbolic links (``loopA -> loopB -> loopA``) ended `aniso hub import` in
a traceback (``RuntimeError: Symlink loop``, from ``Path.resolve``), and the other doors called it a link to a file
that "does not exist" or "not a folder". Each door names the loop in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from aniso.common.files import link_loop

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def loop(tmp_path):
    (tmp_path / "loopA").symlink_to("loopB")
    (tmp_path / "loopB").symlink_to("loopA")
    return tmp_path / "loopA"


def test_the_rule(tmp_path, loop):
    assert link_loop(loop) == str(loop) and link_loop(loop / "inside" / "x") == str(loop)
    (tmp_path / "dangling").symlink_to("nowhere")
    assert link_loop(tmp_path / "dangling") is None and link_loop(tmp_path) is None


@pytest.mark.parametrize("argv", [["hub", "import", "me/x", "{tests}", "--cache-dir", "{loop}"],
                                  ["hub", "import", "me/x", "{loop}", "--cache-dir", "{tmp}/hc"],
                                  ["hub", "list", "--cache-dir", "{loop}"],
                                  ["run", "all-MiniLM-L6-v2", "--claims-dir", "{loop}"],
                                  ["list", "models", "--registry", "{loop}"]])
def test_every_door_names_the_loop(tmp_path, loop, clean_env, refused_line, argv):
    line = refused_line([a.format(loop=loop, tests=ROOT / "tests", tmp=tmp_path) for a in argv])
    assert f"{loop} is a symbolic link to itself, or one of a loop of links" in line, line
    assert not (tmp_path / "hc").exists()
