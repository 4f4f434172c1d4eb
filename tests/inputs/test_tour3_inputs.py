"""A corpus the model's tokenizer reads as its unknown token ([UNK]) is not text the model reads: refused in one line
naming the model, the corpus and the share, through ``aniso run`` as through the pipeline."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from aniso.cli import main
from aniso.sources.base import ModelRefused
from aniso.stats.pipeline import MAX_UNKNOWN_SHARE, _check_real_tokens

REGISTRY = str(Path(__file__).resolve().parents[2] / "models.yaml")


def _loaded(tiny_bert_dir):
    from transformers import AutoTokenizer

    return SimpleNamespace(tokenizer=AutoTokenizer.from_pretrained(tiny_bert_dir), entry=SimpleNamespace(id="tiny"))


def _corpus(lines):
    return SimpleNamespace(items=lines, label="notes.txt")


def test_a_corpus_of_mostly_unknown_tokens_is_refused_with_the_share(tiny_bert_dir):
    """Emoji for a vocabulary without them: every token [UNK], once read as real tokens and measured."""
    lines = [f"\U0001F600\U0001F525 \U0001F600 w{i}" for i in range(8)]  # 2 unknown tokens to 1 word each
    with pytest.raises(ModelRefused) as info:
        _check_real_tokens(_loaded(tiny_bert_dir), _corpus(lines))
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith("tiny: the corpus notes.txt gives 67% unknown tokens ([UNK]: 16 of 24)")
    assert MAX_UNKNOWN_SHARE == 0.5


def test_unknown_tokens_do_not_count_as_real_ones(tiny_bert_dir):
    """Paragraphs of unknown words only give no real token: refused with the count, as special tokens are."""
    with pytest.raises(ModelRefused, match=r"gives 0 real token\(s\) \(not special ones\) in 8 paragraph\(s\) "
                                           r"with this model's tokenizer \(8 unknown ones not counted\)"):
        _check_real_tokens(_loaded(tiny_bert_dir), _corpus([f"zz{i}" for i in range(8)]))


def test_a_corpus_with_some_unknown_words_is_measured(tiny_bert_dir):
    """Half the tokens unknown or fewer: text the model reads, not refused."""
    _check_real_tokens(_loaded(tiny_bert_dir), _corpus([f"w{i} w{i + 1} zz" for i in range(8)]))
    _check_real_tokens(_loaded(tiny_bert_dir), _corpus([f"w{i} zz" for i in range(8)]))  # exactly half


def test_aniso_run_refuses_an_emoji_corpus_in_one_line(clean_env, tiny_bert_dir, capsys):
    corpus = clean_env / "emoji.txt"
    corpus.write_text("".join(f"\U0001F600\U0001F525 \U0001F600\U0001F525 w{i}\n" for i in range(8)), encoding="utf-8")
    code = main(["run", str(tiny_bert_dir), "--claims", "G.token-nlp-anisotropic", "--registry", REGISTRY, "--",
                 "--aniso-corpus", str(corpus), "--aniso-n-sequences", "8", "--aniso-n-bootstrap", "0"])
    out, err = capsys.readouterr()
    assert code == 2, out[-3000:] + err[-3000:]
    assert "unknown tokens ([UNK]:" in err and "emoji.txt" in err and "more than 50%" in err, err[-3000:]
    assert "Traceback" not in out + err
