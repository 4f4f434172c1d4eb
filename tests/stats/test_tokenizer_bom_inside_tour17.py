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


def test_a_mark_inside_vocab_txt_beside_the_tokenizer_json_that_is_read_instead_is_not_refused(clean_env):
    """With tokenizer.json beside it, the fast tokenizer reads that file (its tokens as saved) and not vocab.txt: the
    mark in vocab.txt changes no id, so the folder is measured as without it."""
    from transformers import AutoTokenizer

    folder = word_bert(clean_env / "joined")
    AutoTokenizer.from_pretrained(str(folder)).save_pretrained(str(folder))  # writes tokenizer.json beside vocab.txt
    before = aniso.measure(str(folder), TEXTS, progress=False)
    vocab = folder / "vocab.txt"
    lines = vocab.read_text(encoding="utf-8").split("\n")
    lines[lines.index("the")] = "\ufeffthe"
    vocab.write_text("\n".join(lines), encoding="utf-8")
    after = aniso.measure(str(folder), TEXTS, progress=False)
    assert [s.mean_cosine for s in after.layers] == [s.mean_cosine for s in before.layers]
