"""A folder whose name holds a byte that is no UTF-8 ended in a 4-line pydantic ValidationError (the registry row's
path cannot hold it) from `aniso.measure` and `aniso stats`: one line naming the byte, exit 2 / a ValueError."""

from __future__ import annotations

import os

import pytest

import aniso
from aniso.cli import main
from word_bert import TEXTS, word_bert


@pytest.fixture
def undecodable(clean_env, monkeypatch):
    monkeypatch.chdir(clean_env)
    name = os.fsdecode(b"bad\xffname")
    word_bert(clean_env / name)
    return name


def test_measure_of_a_folder_named_with_a_byte_that_is_no_utf8_is_one_line(undecodable):
    with pytest.raises(ValueError, match=r"its name holds a byte that is no UTF-8 \(b'\\xff' at character 4\), which a "
                                         r"registry row cannot name; rename the file or folder") as caught:
        aniso.measure(undecodable, TEXTS, progress=False)
    assert "\n" not in str(caught.value)


def test_stats_of_a_folder_named_with_a_byte_that_is_no_utf8_is_one_line(undecodable, refused_line):
    line = refused_line(["stats", undecodable, "--n-sequences", "8"])
    assert "byte that is no UTF-8" in line, line
