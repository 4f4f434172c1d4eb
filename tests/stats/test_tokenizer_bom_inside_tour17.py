"""A vocab.txt holding a UTF-8 byte-order mark past its first line (files joined together: the mark glued to the
token 'the') was measured without a word, every 'the' read as other ids. Refused naming the file, the line and the
mark."""

from __future__ import annotations

import pytest

import aniso
from aniso.sources import ModelRefused
from word_bert import TEXTS, word_bert


def test_a_byte_order_mark_inside_vocab_txt_is_refused_naming_the_line(clean_env):
    folder = word_bert(clean_env / "joined")
    vocab = folder / "vocab.txt"
    lines = vocab.read_text(encoding="utf-8").split("\n")
    at = lines.index("the")
    lines[at] = "\ufeffthe"
    vocab.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(ModelRefused, match=rf"vocab\.txt line {at + 1} holds a UTF-8 byte-order mark "
                                           r"\('\\ufeffthe'\), which the tokenizer reads as part of that token "
                                           r"\(files joined together\?\): remove the mark"):
        aniso.measure(str(folder), TEXTS, progress=False)
