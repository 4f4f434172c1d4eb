"""Inputs and arguments of the Python API (and the text inputs behind it) that were misread: corpus lines split on
separators inside a line, empty and bytes paths, blank claim filters, texts without a known token, and pytest
options whose files cannot be written."""

from __future__ import annotations

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from aniso.inputs.text import corpus_lines, corpus_paragraphs, load_corpus

#: The characters str.splitlines ends a line at besides \n and \r.
INNER_BREAKS = ["\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


@pytest.mark.parametrize("sep", INNER_BREAKS + ["\r"])
def test_a_corpus_line_holding_a_separator_is_one_paragraph(tmp_path, sep):
    """A corpus of 20 lines, each holding U+2028 (or a form feed, NEL, ...), is 20 paragraphs, as wc -l counts it,
    and its fingerprint is that of no other split."""
    lines = [f"paragraph {i} first half{sep}second half of it" for i in range(20)]
    path = tmp_path / "c.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8", newline="")
    paragraphs = corpus_paragraphs(path)
    assert len(paragraphs) == 20 and all(sep in p for p in paragraphs)
    corpus = load_corpus(path, 64, seed=0)
    assert corpus.n_available == 20 and "only 20 paragraphs, 64 requested" in corpus.label


def test_crlf_ends_a_line_like_lf(tmp_path):
    path = tmp_path / "c.txt"
    path.write_bytes(b"one paragraph\r\nanother one\r\n")
    assert corpus_paragraphs(path) == ["one paragraph", "another one"]


@hsettings(max_examples=60, deadline=None)
@given(st.lists(st.text(st.characters(blacklist_characters="\n", blacklist_categories=("Cs",)), max_size=12),
                max_size=8))
def test_corpus_lines_are_the_lines_between_newlines(lines):
    """Splitting the joined lines gives them back, whatever other separators they hold."""
    assert corpus_lines("\n".join(lines)) == (lines or [""])
