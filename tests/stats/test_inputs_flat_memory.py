"""Preparing a corpus for the extraction keeps no Python object per paragraph: the tokenizer check
(:func:`aniso.stats.pipeline._check_real_tokens`) and the length order of the batches
(:func:`aniso.extract.hidden.iter_text_hidden_states`) hold a few bytes per paragraph in arrays, so their peak traced
memory grows by a fixed budget per paragraph, not by the paragraphs' tokens. Measured with tracemalloc on a fake
tokenizer whose ids are fresh Python ints (as a fast tokenizer returns them)."""

from __future__ import annotations

import gc
import tracemalloc
from types import SimpleNamespace

import torch

import aniso.extract.hidden as hidden
from aniso.stats.pipeline import _check_real_tokens

TOKENS = 200  # tokens per fake paragraph


class FakeTokenizer:
    """Paragraph ``"p<k>"`` is ``TOKENS`` ids above 1,000 (no cached small ints), distinct per paragraph."""

    unk_token_id = 1
    all_special_ids = [0, 1, 2, 3]
    pad_token = "[PAD]"
    eos_token = unk_token = None
    padding_side = "right"

    def num_special_tokens_to_add(self, pair=False):
        return 2

    def __call__(self, texts, truncation=False, max_length=None, add_special_tokens=True, verbose=True, **_):
        rows = []
        for text in texts:
            k = int(text[1:])
            n = TOKENS - k % 7 if max_length is None else min(TOKENS - k % 7, max_length)
            rows.append([1000 + (k * 31 + j) % 20000 for j in range(n)])
        return {"input_ids": rows}


def _inputs(n: int):
    return SimpleNamespace(items=tuple(f"p{k}" for k in range(n)), label="fake corpus", origin="fake")


def _peak(fn) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def test_the_tokenizer_check_keeps_no_tokens_per_paragraph():
    loaded = SimpleNamespace(tokenizer=FakeTokenizer(), entry=SimpleNamespace(id="fake"))
    small, large = _inputs(256), _inputs(2048)
    assert _check_real_tokens(loaded, small, 128) == 0  # distinct paragraphs: no copies
    peaks = [_peak(lambda inputs=inputs: _check_real_tokens(loaded, inputs, 128)) for inputs in (small, large)]
    per_paragraph = (peaks[1] - peaks[0]) / (2048 - 256)
    # a 16-byte digest of each paragraph as measured and whole, and their distinct count; a set of tuples of ids
    # took about 9,100 bytes per paragraph here (200 tokens)
    assert per_paragraph < 256, (peaks, per_paragraph)


def test_the_tokenizer_check_still_counts_copies():
    loaded = SimpleNamespace(tokenizer=FakeTokenizer(), entry=SimpleNamespace(id="fake"))
    # distinct texts read as one sequence ("q1" is "p1" to this tokenizer): counted; the same text twice is the
    # corpus label's to count, not this check's
    items = ("p1", "p2", "q1", "p3", "q2", "r1")
    assert _check_real_tokens(loaded, SimpleNamespace(items=items, label="fake corpus", origin="fake"), 128) == 3
    items = ("p1", "p2", "p1", "p3", "q2", "r1")
    assert _check_real_tokens(loaded, SimpleNamespace(items=items, label="fake corpus", origin="fake"), 128) == 2
    assert _check_real_tokens(loaded, SimpleNamespace(items=("p1", "p2"), label="c", origin="fake"), None) == 0


class _Stop(Exception):
    pass


def test_the_length_order_keeps_no_object_per_paragraph(monkeypatch):
    model = torch.nn.Linear(1, 1)
    model.config = SimpleNamespace(max_position_embeddings=512, is_encoder_decoder=False)
    seen = {}

    def first_batch(model, tokenizer, texts, order, *args):
        seen["order"] = order  # kept as made (a copy would count in the traced memory)
        raise _Stop

    monkeypatch.setattr(hidden, "_text_batches", first_batch)

    def prepare(texts):
        try:
            next(hidden.iter_text_hidden_states(model, FakeTokenizer(), texts, batch_size=16, max_length=512))
        except _Stop:
            pass

    prepare(tuple(f"p{k}" for k in range(64)))
    # sorted by (length, index): lengths TOKENS - k % 7, ties in the texts' order
    assert [int(i) for i in seen["order"]] == sorted(range(64), key=lambda k: (TOKENS - k % 7, k))
    corpora = [tuple(f"p{k}" for k in range(n)) for n in (256, 8192)]  # made outside the traced calls
    peaks = [_peak(lambda texts=texts: prepare(texts)) for texts in corpora]
    per_paragraph = (peaks[1] - peaks[0]) / (8192 - 256)
    # an int32 length and an int64 index per paragraph; a list of lengths and a list sorted by (length, index)
    # keys took about 70 bytes per paragraph
    assert per_paragraph < 48, (peaks, per_paragraph)
