"""A corpus file that cannot be read, set by ANISO_CORPUS, at the benchmarks' doors: named as the setting that gave
it, as `aniso stats` names it (was the file alone). A row of docs/bad-input.md."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("argv", [["bench", "extraction", "all-MiniLM-L6-v2", "--paragraphs", "2", "--repeats", "1",
                                   "--no-memory"],
                                  ["bench", "extraction", "--config", "llama-tiny", "--random-init", "--layers", "1",
                                   "--paragraphs", "2", "--repeats", "1", "--no-memory"],
                                  ["bench", "command", "all-MiniLM-L6-v2", "--paragraphs", "2", "--repeats", "1"]])
def test_a_missing_corpus_file_is_named_as_its_setting(clean_env, refused_line, monkeypatch, argv):
    monkeypatch.setenv("ANISO_CORPUS", "/nonexistent/wiki.txt")
    line = refused_line(argv)
    assert line.startswith(f"aniso bench {argv[1]}: setting corpus (ANISO_CORPUS, --aniso-corpus): corpus file "
                           "/nonexistent/wiki.txt does not exist"), line
