"""A list of texts given to the API whose every text is the name of a file here: the names were measured as texts."""

from __future__ import annotations

import pytest


def test_a_list_whose_every_text_is_a_file_here_is_refused(clean_env, tmp_path, monkeypatch):
    """`aniso.measure(M, ["c20.txt", "hello.txt"])` measured the two names as texts. (No ANISO_* setting of the
    caller's: a relative data folder, as CI sets them, would not be found from the test's working folder.)"""
    import aniso

    monkeypatch.chdir(tmp_path)
    (tmp_path / "c20.txt").write_text("a paragraph\nanother one\n")
    (tmp_path / "hello.txt").write_text("hello\nworld\n")
    for call in (lambda: aniso.measure("all-MiniLM-L6-v2", ["c20.txt", "hello.txt"], progress=False),
                 lambda: aniso.check("all-MiniLM-L6-v2", inputs=["c20.txt", "hello.txt"])):
        with pytest.raises(ValueError) as caught:
            call()
        said = str(caught.value)
        assert said.startswith("inputs: every text of the list is the path of a file here ('c20.txt', 'hello.txt')")
        assert "inputs='c20.txt'" in said and "\n" not in said, said


def test_a_list_with_one_text_that_is_no_file_is_texts():
    from aniso.api import _texts

    assert _texts([__file__, "a text about files"]) == (__file__, "a text about files")
    assert _texts(["x" * 5000, "y"]) == ("x" * 5000, "y")


