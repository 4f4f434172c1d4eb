"""Tour 19: `aniso.measure(M, texts, max_length=100000)` gave statistics whose settings said max_length 100000 while
the model had read at most its 512 learnt positions of each text, and nothing said so. The inputs' label and the
settings name the tokens read, as a claim's verdict does."""

from __future__ import annotations

import aniso


def test_a_max_length_beyond_the_models_positions_is_said(tiny_bert_dir, clean_env):
    texts = [" ".join(f"w{(i * 7 + j) % 40}" for j in range(200)) for i in range(6)]  # 200 words, 64 positions
    got = aniso.measure(str(tiny_bert_dir), texts, max_length=1000, progress=False)
    assert got.settings["max_length"] == 1000 and got.settings["max_length_read"] == 64
    assert got.inputs["label"].endswith("; at most 64 tokens each, the model's positions (max_length 1000 asked)")
    short = aniso.measure(str(tiny_bert_dir), texts, max_length=32, progress=False)
    assert "max_length_read" not in short.settings and "the model's positions" not in short.inputs["label"]
