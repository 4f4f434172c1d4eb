"""A corpus path ending in a carriage return (a value read from a file of Windows line ends) was refused as "c20.txt
does not exist", the \\r printed invisibly beside a file that does exist: the answer says the name has a line end at
its end and the file without it exists."""

from __future__ import annotations

from aniso.cli import main
from aniso.common.files import not_a_regular_file


def test_a_path_with_a_trailing_carriage_return_says_so(tmp_path):
    corpus = tmp_path / "c20.txt"
    corpus.write_text("one paragraph\nanother one\n")
    said = not_a_regular_file(f"{corpus}\r")
    assert said == (f"does not exist: its name, {str(corpus) + chr(13)!r}, has blanks or a line end at its ends, "
                    f"and {corpus} exists (a value read from a file with Windows line ends?)")
    assert not_a_regular_file(tmp_path / "nowhere.txt") == "does not exist"


def test_through_the_environment(clean_env, monkeypatch, capsys):
    corpus = clean_env / "c20.txt"
    corpus.write_text("one paragraph\nanother one\n")
    monkeypatch.setenv("ANISO_CORPUS", f"{corpus}\r")
    assert main(["stats", "all-MiniLM-L6-v2", "--n-sequences", "8"]) == 2
    err = capsys.readouterr().err
    assert f"{str(corpus) + chr(13)!r} holds the control character '\\r' (a line end" in err and f"; {corpus} exists" in err
    assert "\r" not in err  # shown as Python writes it: a terminal does not write over the setting's name
