"""A corpus hard-wrapped at a width (paragraphs spread over several lines, blank lines between them: plain-text books
and e-mail) was read line by line, each fragment a paragraph, without a word: refused naming the file and the
width; one paragraph per line, WikiText, one sentence per line and verse are read as before."""

from __future__ import annotations

import re
import textwrap

import pytest

from aniso.inputs.text import CorpusError, corpus_paragraphs, hard_wrapped

PARAGRAPHS = [
    f"Paragraph {i} tells of the river that runs under the old stone bridge of the town, where the mill once stood "
    f"and the carts of grain came down from the hills each autumn; the miller kept {i} ledgers of what they brought, "
    "and his sons after him kept them too, until the railway came and the mill fell silent for good."
    for i in range(12)]

VERSE = ["The wind goes over the hill,", "and the grass bends low", "where the old road ran", "to the sea",
         "", "Night comes down,", "slow as a tide over sand,", "and the lamps", "are lit one by one in the valley"]


def test_a_corpus_wrapped_at_80_columns_is_refused_naming_the_file_and_width(tmp_path):
    path = tmp_path / "wrapped.txt"
    path.write_text("\n\n".join(textwrap.fill(p, 80) for p in PARAGRAPHS) + "\n")
    with pytest.raises(CorpusError, match=rf"^corpus file {re.escape(str(path))} is hard-wrapped: 12 of its 12 "
                                          r"paragraphs \(blocks between blank lines\) run over several lines of at "
                                          r"most \d\d characters, broken mid-sentence; a corpus is one paragraph per "
                                          r"line.*join each paragraph's lines into one$"):
        corpus_paragraphs(path)


@pytest.mark.parametrize("layout", ["one per line", "wikitext", "sentences", "verse"])
def test_unwrapped_layouts_are_read_as_before(tmp_path, layout):
    if layout == "one per line":
        text = "\n".join(PARAGRAPHS)
    elif layout == "wikitext":
        text = " \n = Title = \n \n" + "".join(f" {p} \n \n" for p in PARAGRAPHS)
    elif layout == "sentences":  # one sentence per line, documents between blank lines
        text = "\n\n".join("\n".join(re.split(r"(?<=[;.]) ", p)) for p in PARAGRAPHS)
    else:
        text = "\n".join(VERSE * 3)
    assert hard_wrapped(text) is None
    path = tmp_path / "c.txt"
    path.write_text(text)
    assert len(corpus_paragraphs(path)) >= 2


def test_a_markdown_corpus_of_headings_and_lists_is_not_taken_for_wrapped_prose(tmp_path):
    """Markdown (a heading, a paragraph, a two-item list in each section) was refused as "hard-wrapped at 16
    characters": its blocks are lists, read one item per line."""
    text = "\n\n".join(f"## Section {i}\n\n{p}\n\n- first item of {i}\n- second item of {i}"
                       for i, p in enumerate(PARAGRAPHS))
    assert hard_wrapped(text) is None
    path = tmp_path / "notes.md"
    path.write_text(text + "\n")
    assert len(corpus_paragraphs(path)) == 4 * len(PARAGRAPHS)
