"""A path setting or option whose value holds a line end or a blank at its ends names another file or folder than the
one meant: a cache folder ``cache\\r`` was made beside the real cache and everything computed afresh into it, a
leading blank made an absolute corpus path relative to the working folder, and the raw ``\\r`` in a message wrote over
the setting's name on a terminal. Every door refuses such a value in one line, shown as Python writes it."""

from __future__ import annotations

import pytest

from aniso.cli import main
from aniso.common.files import path_text_problem
from aniso.common.settings import SettingError, Settings


def test_the_rule(tmp_path):
    assert path_text_problem(str(tmp_path)) is None and path_text_problem("a name with blanks inside") is None
    said = path_text_problem(f"{tmp_path}\r")
    assert said == (f"{str(tmp_path) + chr(13)!r} holds the control character '\\r' (a line end, as in a value read "
                    f"from a file with Windows line ends); {tmp_path} exists: remove it")
    assert path_text_problem(f" {tmp_path}") == f"{' ' + str(tmp_path)!r} begins or ends with blanks; {tmp_path} exists: remove it"
    assert path_text_problem(f"  {tmp_path} ").endswith("exists: remove them")
    assert path_text_problem("no/such\tplace") == "'no/such\\tplace' holds the control character '\\t': remove it"


def test_a_cache_folder_ending_in_a_line_end_is_refused_and_not_made(tmp_path, clean_env, monkeypatch, capsys):
    cache = tmp_path / "cache"
    cache.mkdir()
    monkeypatch.setenv("ANISO_CACHE_DIR", f"{cache}\r")
    assert main(["stats", "all-MiniLM-L6-v2", "--n-sequences", "8"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "setting cache_dir (ANISO_CACHE_DIR, --aniso-cache-dir)" in err
    assert f"; {cache} exists: remove it" in err and "\r" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache"] and not any(cache.iterdir())


@pytest.mark.parametrize("name", ["corpus", "cache_dir", "speech_dir", "registry", "report_dir"])
def test_every_path_setting_through_the_api(tmp_path, name):
    with pytest.raises(SettingError, match=rf"^setting {name} .*' begins or ends with blanks; {tmp_path} exists: remove it$"):
        Settings(**{name: f" {tmp_path}"})


def test_the_registry_option_of_the_commands(tmp_path, clean_env, capsys):
    registry = tmp_path / "models.yaml"
    registry.write_text("models: []\n")
    assert main(["stats", "all-MiniLM-L6-v2", "--registry", f"{registry}\r"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("aniso stats: registry: ") and f"; {registry} exists: remove it" in err and "\r" not in err
