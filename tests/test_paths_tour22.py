"""Tour 22: a path option holding a literal ``~`` (quoted, so the shell did not expand it) was taken as a folder named
``~`` in the working folder: ``aniso report R --out "~/r.html"`` wrote ./~/r.html, ``aniso report "~/r.json"``
said the file does not exist. Every path option of the commands and every path argument of the API expands ``~``,
as the path settings and ``--corpus`` do."""

from __future__ import annotations

import os

import pytest

from aniso.api import _path_argument
from aniso.judge.results import ResultsDocument, provenance, write_results


@pytest.fixture
def home(tmp_path, monkeypatch, clean_env):
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return folder


def _results(where):
    write_results(where, ResultsDocument(provenance=provenance(where.parent, {}, None), results=[]))
    return where


def test_report_out_with_a_quoted_tilde_writes_to_the_home_folder(home, aniso_cli):
    results = _results(home / "run" / "results.json")
    code, out, err = aniso_cli(["report", str(results), "--out", "~/t22.html"])
    assert code == 0, err
    assert (home / "t22.html").is_file() and not os.path.lexists("~")
    assert str(home / "t22.html") in out + err and "~/t22.html" not in out + err


def test_a_results_file_given_with_a_quoted_tilde_is_read(home, aniso_cli):
    _results(home / "r.json")
    code, out, err = aniso_cli(["report", "~/r.json", "--out", str(home / "r.html")])
    assert code == 0, err
    assert (home / "r.html").is_file()


def test_the_api_path_arguments_expand_a_tilde(home):
    assert _path_argument("registry", "~/models.yaml", "the registry") == str(home / "models.yaml")
    assert _path_argument("claims_dir", __import__("pathlib").Path("~/claims"), "the folder") == str(home / "claims")
    assert _path_argument("registry", None, "the registry") is None
