"""A max_length beyond a model's learnt positions is read as the positions: the statistics' metadata and the
verdict's stated inputs say how many tokens each sequence gave (the results used to record the length asked)."""

from __future__ import annotations

from types import SimpleNamespace

from aniso.common.settings import Settings
from aniso.extract.hidden import tokens_read
from aniso.registry.entries import Registry
from aniso.stats.pipeline import StatsProvider


def test_tokens_read_is_the_models_positions_at_most():
    for config, asked, read in [(dict(max_position_embeddings=64), 1000, 64), (dict(n_positions=1024), 128, 128),
                                (dict(), 5000, 5000), (dict(max_position_embeddings=None), 7, 7)]:
        assert tokens_read(SimpleNamespace(config=SimpleNamespace(**config)), asked) == read


def test_the_length_read_is_in_the_metadata_only_when_capped(tiny_bert_entry, tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(" ".join(f"w{(i * 7 + j) % 40}" for j in range(5 + i % 90)) for i in range(40)))
    common = dict(corpus=str(corpus), n_sequences=40, cache_dir=str(tmp_path / "cache"), reservoir_size=128,
                  svd_batch_size=64)
    capped = StatsProvider(Settings(**common, max_length=1000), Registry([tiny_bert_entry])).get(tiny_bert_entry)
    assert capped.meta["max_length_read"] == {"asked": 1000, "read": 64}  # the tiny BERT has 64 positions
    within = StatsProvider(Settings(**common, max_length=32), Registry([tiny_bert_entry])).get(tiny_bert_entry)
    assert "max_length_read" not in within.meta
