"""An in-memory model whose tokenizer's pad token was added past its input embedding (``add_special_tokens`` without
``resize_token_embeddings``): a padded batch meets that id, and the refusal names the pad token, its id and the two
remedies, as a ValueError about ``tokenizer``, not a config too small for its tokenizer."""

from __future__ import annotations

import pytest

import aniso

TEXTS = [" ".join(f"w{(i * 7 + j) % 40}" for j in range(6 + i % 5)) for i in range(12)]


@pytest.fixture(autouse=True)
def _quiet(monkeypatch):
    monkeypatch.setenv("ANISO_PROGRESS", "0")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_a_pad_token_past_the_embedding_is_named_with_the_remedies(tiny_bert_dir):
    from transformers import AutoTokenizer, BertModel

    tok = AutoTokenizer.from_pretrained(tiny_bert_dir)
    tok.add_special_tokens({"pad_token": "[NEWPAD]"})
    model = BertModel.from_pretrained(tiny_bert_dir).eval()
    rows = model.get_input_embeddings().num_embeddings
    assert tok.pad_token_id == rows
    with pytest.raises(ValueError) as caught:
        aniso.measure(model, TEXTS, tokenizer=tok, statistics="first-order", progress=False, batch_size=4)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("tokenizer: ")
    assert f"'[NEWPAD]', id {rows}, past the input embedding's {rows} rows" in message
    assert "model.resize_token_embeddings(len(tokenizer))" in message
    assert "tokenizer.pad_token to a token the model has" in message
    assert "vocab_size" not in message
