"""A model folder whose vocab.txt was saved with a UTF-8 byte-order mark reads its first token as '\\ufeff[PAD]': it
was refused as "the tokenizer is not the model's own" (its padding token, added anew, had another id than
config.json's pad_token_id). The refusal names the cause: the file begins with the mark; save it without."""

from __future__ import annotations

import pytest

import aniso
from aniso.sources import ModelRefused
from word_bert import TEXTS, word_bert


def _with_mark(folder, name):
    path = folder / name
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    return folder


def test_a_vocab_txt_with_a_byte_order_mark_is_refused_naming_the_mark(clean_env):
    folder = _with_mark(word_bert(clean_env / "bom"), "vocab.txt")
    with pytest.raises(ModelRefused) as caught:
        aniso.measure(str(folder), TEXTS)
    message = str(caught.value)
    assert ("vocab.txt begins with a UTF-8 byte-order mark, so the tokenizer's token '\\ufeff[PAD]' reads the mark "
            "as part of it: save it as UTF-8 without the mark") in message, message
    assert "not the model's own" not in message and "\n" not in message


def test_the_same_folder_without_the_mark_is_measured(clean_env):
    stats = aniso.measure(str(word_bert(clean_env / "plain")), TEXTS)
    assert len(stats.layers) == 3
