"""Tour 19: a path option of the commands not checked as the path settings are (``aniso report --out 'r.html\\r'``
wrote a file whose name ends in a line end, ``--out ' /abs/r.html'`` a folder named with a blank), an invisible
character in a path setting (a cache folder ending in a zero-width space was made afresh beside the real one), a
report of a file read where no seal key is said to be "another installation's", a results path holding a line end
broke the one-line warning, and a setting option typed with an editor's dash or in upper case after ``--`` was not
named for what it is."""

from __future__ import annotations

import pytest

from aniso.api import _path_argument, _setting_options
from aniso.common.files import path_text_problem, shown_path
from aniso.common.settings import Settings, SettingError, option_form_problem, options_taken_as_paths
from aniso.judge.results import ResultsDocument, provenance, read_results, write_results


def test_invisible_characters_are_refused_and_shown(tmp_path):
    said = path_text_problem(f"{tmp_path}\u200b")
    assert said == f"{str(tmp_path) + chr(0x200b)!r} holds the invisible character U+200B (zero width space); " \
                   f"{tmp_path} exists: remove it"
    assert "\\u200b" in said  # seen, as Python writes it
    assert "U+FEFF" in path_text_problem("\ufeffmodels.yaml") and "'\\x85'" in path_text_problem("a\x85")
    for fine in ("café/données.txt", "/tmp/中文", "a b/c"):
        assert path_text_problem(fine) is None
    with pytest.raises(SettingError, match=r"^setting cache_dir .*U\+200B"):
        Settings(cache_dir=f"{tmp_path}\u200b")


@pytest.mark.parametrize("given", ["{d}/out.html\r", " {d}/out.html", "{d}/out\u200b.html"])
def test_report_out_is_checked_before_anything_is_written(tmp_path, refused_line, given):
    results = tmp_path / "run" / "results.json"
    write_results(results, ResultsDocument(provenance=provenance(tmp_path, {}, None), results=[]))
    line = refused_line(["report", str(results), "--out", given.format(d=tmp_path)])
    assert line.startswith("aniso report: argument --out: ") and "\r" not in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"] and not (tmp_path / " ").exists()


@pytest.mark.parametrize("argv", [["run", "m", "--claims-dir", "{d}\r"], ["run", "m", "--twin", "--keep-twins", " {d}"],
                                  ["diff", "{d}/a.json\u200b", "{d}/b.json"], ["record", "{d}/r.json\n"],
                                  ["hub", "import", "org/x", "{d}\t"]])
def test_every_path_argument_of_the_commands(tmp_path, clean_env, refused_line, argv):
    line = refused_line([a.format(d=tmp_path) for a in argv])
    assert ": argument " in line and "remove it" in line


def test_the_api_path_arguments():
    with pytest.raises(ValueError, match=r"^claims_dir: '/x/claims\\r' holds the control character"):
        _path_argument("claims_dir", "/x/claims\r", "the folder")


def test_no_key_here_is_said_as_such(tmp_path, monkeypatch, capsys):
    results = tmp_path / "run" / "results.json"
    write_results(results, ResultsDocument(provenance=provenance(tmp_path, {}, None), results=[]))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "no-state"))  # no seal key on this installation
    notes: list[str] = []
    read_results(results, unsealed=notes)
    assert len(notes) == 1 and "cannot check that a run here wrote it" in notes[0]
    assert "another installation" not in notes[0] and "edited" not in notes[0]


def test_a_path_with_a_line_end_is_shown_on_one_line(tmp_path):
    assert shown_path(tmp_path / "a.json") == str(tmp_path / "a.json")
    assert shown_path("run\n/results.json") == "'run\\n/results.json'"


def test_a_path_beginning_or_ending_with_a_blank_is_shown_quoted():
    assert shown_path("/w/minilm ") == "'/w/minilm '" and shown_path(" a.json") == "' a.json'"
    assert shown_path("/w/my models/a.json") == "/w/my models/a.json"


def test_setting_options_in_forms_no_parser_reads():
    assert option_form_problem("--aniso-n-sequences") is None and option_form_problem("--other") is None
    assert option_form_problem("--ANISO-N-SEQUENCES=8") == ("--ANISO-N-SEQUENCES: the setting options are lower case, "
                                                             "--aniso-n-sequences")
    assert option_form_problem("\u2014aniso-n-sequences").startswith("'\u2014aniso-n-sequences' begins with em dash "
                                                                      "(U+2014), not two hyphens")
    assert option_form_problem("\u2013-aniso-models").endswith("write --aniso-models")
    assert options_taken_as_paths(["claims", "\u2014aniso-n-sequences", "8"]).endswith(
        "write --aniso-n-sequences; pytest took this one for a file to collect")
    with pytest.raises(ValueError, match=r"^--ANISO-N-SEQUENCES: the setting options are lower case, "
                                         r"--aniso-n-sequences \(after --\)$"):
        _setting_options(["--ANISO-N-SEQUENCES=8"])
