"""Text inputs: WikiText paragraphs, seeded samples, the labelled fallback, errors naming the file."""

from __future__ import annotations


import pytest

from aniso.inputs.text import CorpusError, load_corpus, sample_sequences, wikitext_paragraphs


WIKI = """ = Valkyria Chronicles III = 
 
 Senjō no Valkyria 3 : <unk> Chronicles is a tactical role @-@ playing game released in 2011 . 
 
 = = Gameplay = = 
 
 The game has 1 @,@ 000 units and costs 2 @.@ 5 dollars . 
"""


def test_wikitext_paragraphs_drop_headings_and_join_numbers():
    paras = wikitext_paragraphs(WIKI)
    assert len(paras) == 2
    assert "role-playing" in paras[0] and "<unk>" in paras[0]
    assert "1,000" in paras[1] and "2.5" in paras[1]


def test_corpus_file_sampling_is_seeded(tmp_path):
    f = tmp_path / "wiki.valid.tokens"
    f.write_text("\n".join(f" paragraph number {i} with some words . " for i in range(50)))
    a = load_corpus(f, 10, seed=1)
    b = load_corpus(f, 10, seed=1)
    c = load_corpus(f, 10, seed=2)
    assert a.sequences == b.sequences and a.sequences != c.sequences
    assert len(set(a.sequences)) == 10 and a.n_available == 50 and not a.is_fallback
    assert len(load_corpus(f, 500, seed=0).sequences) == 50


def test_corpus_errors_name_the_file(tmp_path):
    with pytest.raises(CorpusError, match="missing.txt does not exist"):
        load_corpus(tmp_path / "missing.txt", 5, 0)
    bad = tmp_path / "bin.txt"
    bad.write_bytes(b"caf\xe9 bad")  # Latin-1
    with pytest.raises(CorpusError, match="bin.txt is not UTF-8"):
        load_corpus(bad, 5, 0)


def test_embedded_fallback_is_labelled():
    c = load_corpus(None, 20, seed=0, hub_reachable=False)
    assert c.is_fallback and "FALLBACK" in c.label and "not WikiText" in c.label
    assert len(c.sequences) == 20 and c.n_available > 100


def test_sample_sequences_validates():
    with pytest.raises(ValueError):
        sample_sequences(["a", "b"], 0, 0)


def _word_tokenizer(bos: bool):
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    words = ["<pad>", "<unk>", "<bos>"] + [f"w{i}" for i in range(10)]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    if bos:
        tok.post_processor = processors.TemplateProcessing(single="<bos> $A", special_tokens=[("<bos>", 2)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", unk_token="<unk>", bos_token="<bos>")


def test_a_tokenizer_that_adds_bos_gives_every_sequence_the_same_first_token():
    from aniso.inputs.text import first_token

    texts = ["w1 w2", "w3", "w4 w5 w6", ""]
    assert first_token(_word_tokenizer(True), texts) == {"fixed": True, "id": 2, "token": "<bos>", "checked": 3}
    assert first_token(_word_tokenizer(False), texts) == {"fixed": False, "id": None, "token": None, "checked": 3}
    assert first_token(_word_tokenizer(False), ["w1 w2", "w1 w3"])["fixed"]  # one first word everywhere: fixed too
    assert not first_token(_word_tokenizer(True), ["w1"])["fixed"]  # one sequence says nothing



def test_a_file_of_nul_bytes_is_binary_and_utf16_without_a_mark_is_named_so(tmp_path):
    """NUL bytes only (valid UTF-8, but no text) are binary data, not "UTF-16" with advice to convert it; UTF-16
    without a byte-order mark (NULs in every other byte) is still named UTF-16."""
    nul = tmp_path / "nul.txt"
    nul.write_bytes(b"\x00" * 5000)
    with pytest.raises(CorpusError, match=r"nul.txt is not UTF-8 text: it holds NUL bytes"):
        load_corpus(nul, 16, 0)
    utf16 = tmp_path / "utf16.txt"
    utf16.write_bytes(("one paragraph of words here\n\nanother paragraph of words\n" * 20).encode("utf-16-le"))
    with pytest.raises(CorpusError, match=r"utf16.txt is not UTF-8 text: it is UTF-16"):
        load_corpus(utf16, 16, 0)


def test_one_paragraph_repeated_is_refused_and_repeats_in_a_sample_are_named(tmp_path):
    """64 copies of one paragraph are one input, not 64: refused with the count of distinct paragraphs. A corpus
    with some repeats is measured, and its label says how many sampled paragraphs repeat another."""
    same = tmp_path / "repeat.txt"
    same.write_text("the same paragraph of words, again and again\n" * 64)
    with pytest.raises(CorpusError, match=r"repeat.txt has 64 paragraph\(s\), 1 distinct; at least 2 distinct"):
        load_corpus(same, 16, 0)
    some = tmp_path / "some.txt"
    some.write_text("first paragraph of words\nsecond paragraph of words\nfirst paragraph of words\n")
    corpus = load_corpus(some, 16, 0)
    assert len(corpus.sequences) == 3 and "1 of the 3 sampled paragraphs repeat another" in corpus.label
    distinct = tmp_path / "distinct.txt"
    distinct.write_text("first paragraph of words\nsecond paragraph of words\n")
    assert "repeat" not in load_corpus(distinct, 16, 0).label
