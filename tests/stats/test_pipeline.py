"""The statistics provider: computed, cached, reused; only the statistics the claims read."""

from __future__ import annotations

import math

import numpy as np
import pytest

from aniso import metrics

from aniso.stats.pipeline import StatsProvider
from aniso.registry.entries import Registry
from aniso.common.settings import TWONN_MIN_POINTS, Settings


def test_provider_computes_caches_and_reuses(tiny_bert_entry, tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(" ".join(f"w{(i * 7 + j) % 40}" for j in range(5 + i % 9)) for i in range(60)))
    entry = tiny_bert_entry
    settings = Settings(corpus=str(corpus), n_sequences=40, cache_dir=str(tmp_path / "cache"), reservoir_size=128,
                        svd_batch_size=64)
    first = StatsProvider(settings, Registry([entry])).get(entry)
    second = StatsProvider(settings, Registry([entry])).get(entry)
    assert first.meta["cache"]["hit"] is False and second.meta["cache"]["hit"] is True
    assert first.summaries() == second.summaries()
    assert first.layers[0].count == first.meta["n_tokens"] > 40
    assert first.summaries()[0].n_svd_batches == first.meta["n_tokens"] // 64


def test_a_cache_entry_read_back_is_named_by_this_runs_inputs(tiny_bert_entry, tmp_path):
    """A copy of the same text under another name hits the entry computed from the first (keyed by content), and
    the statistics name the copy this run read, never the file the entry was computed from."""
    text = "\n".join(" ".join(f"w{(i * 7 + j) % 40}" for j in range(5 + i % 9)) for i in range(60))
    first, copy = tmp_path / "first.txt", tmp_path / "corpus é copy.txt"
    first.write_text(text)
    copy.write_text(text)
    stats = []
    for path in (first, copy):
        settings = Settings(corpus=str(path), n_sequences=40, cache_dir=str(tmp_path / "cache"), reservoir_size=128,
                            svd_batch_size=64)
        stats.append(StatsProvider(settings, Registry([tiny_bert_entry])).get(tiny_bert_entry))
    assert stats[1].meta["cache"]["hit"] is True
    assert stats[0].meta["corpus"]["fingerprint"] == stats[1].meta["corpus"]["fingerprint"]
    assert "first.txt" in stats[0].meta["corpus"]["label"]
    assert "corpus é copy.txt" in stats[1].meta["corpus"]["label"] and "first.txt" not in str(stats[1].meta["corpus"])


def test_first_order_claims_keep_no_d_by_d_matrix(tiny_bert_entry, tmp_path):
    """A run whose claims read first-order statistics only (every claim on pre-trained models today) keeps no
    Σxxᵀ, SVD batch or reservoir; the same first-order numbers as a run that keeps everything."""
    from aniso.registry.catalog import statistics_read
    from aniso.stats.pipeline import FIRST_ORDER

    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(" ".join(f"w{(i * 7 + j) % 40}" for j in range(5 + i % 9)) for i in range(60)))
    entry = tiny_bert_entry
    settings = Settings(corpus=str(corpus), n_sequences=40, cache_dir=str(tmp_path / "cache"), reservoir_size=128,
                        svd_batch_size=64)
    wanted = statistics_read(["G.token-nlp-anisotropic", "G.drift-correlation-spearman", "G.isotropic-baseline"])
    assert wanted == {FIRST_ORDER}
    lean = StatsProvider(settings, Registry([entry]), statistics=wanted).get(entry)
    assert all(acc.gram is None and acc.reservoir.size == 0 and not acc.batch_svd for acc in lean.layers)
    full = StatsProvider(settings, Registry([entry])).get(entry)
    assert full.layers[0].gram is not None and lean.meta["cache"]["key"] != full.meta["cache"]["key"]
    # The full run also reads attention probabilities, which switches the model to eager attention: the same
    # numbers up to float rounding of the two attention implementations.
    assert [s.mean_cosine for s in lean.summaries()] == pytest.approx([s.mean_cosine for s in full.summaries()],
                                                                      rel=1e-8)
    assert [s.drift_norm for s in lean.summaries()] == pytest.approx([s.drift_norm for s in full.summaries()],
                                                                     rel=1e-8)


def test_twonn_over_shuffled_batches_of_every_token(tiny_bert_entry, tmp_path):
    """R §2.4's protocol (setting twonn_batches): TwoNN mean ± std over disjoint random batches of the whole stream,
    per layer, in the metadata; the reservoir TwoNN is unchanged beside it."""
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(" ".join(f"w{(i * 7 + j) % 40}" for j in range(5 + i % 9)) for i in range(60)))
    common = dict(corpus=str(corpus), n_sequences=60, cache_dir=str(tmp_path / "cache"), reservoir_size=128,
                  svd_batch_size=64)
    plain = StatsProvider(Settings(**common), Registry([tiny_bert_entry])).get(tiny_bert_entry)
    both = StatsProvider(Settings(**common, twonn_batches=3), Registry([tiny_bert_entry])).get(tiny_bert_entry)
    assert "twonn_shuffled_batches" not in plain.meta
    per_layer = both.meta["twonn_shuffled_batches"]
    assert len(per_layer) == len(both.layers)
    assert all(d["n_batches"] == 3 and d["batch_size"] == 64 and d["mean"] > 0 and d["std"] >= 0 for d in per_layer)
    assert [s.twonn for s in both.summaries()] == [s.twonn for s in plain.summaries()]


def test_every_statistic_on_the_device_matches_the_cpu(tiny_bert_entry, tmp_path, torch_device):
    """Hidden states, attention (sink share, entropy, first-token attention), Q/K and per-input sums reduced on
    ``torch_device`` give the CPU's statistics to float rounding (1e-5 relative): what a GPU run reports is what
    the CPU reports. On the CPU, two runs into separate caches give the same numbers exactly.

    TwoNN is held to more: each device's value is the float64 TwoNN of its own reservoir (1e-9), and the two
    reservoirs are the same rows to float rounding. Its values on the two devices are not compared at 1e-5: μ = r₂/r₁
    scales the forward passes' last-bit differences by about ‖x‖/r₁, large where a vector has a close neighbour
    (on one H200 against the CPU, this corpus's repeated words gave 1.5·10⁻⁵ relative)."""
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(" ".join(f"w{(i * 7 + j) % 40}" for j in range(5 + i % 9)) for i in range(60)))
    common = dict(corpus=str(corpus), n_sequences=40, reservoir_size=128, svd_batch_size=64)
    runs = [StatsProvider(Settings(**common, device=device, cache_dir=str(tmp_path / f"cache-{i}")),
                          Registry([tiny_bert_entry])).get(tiny_bert_entry)
            for i, device in enumerate(("cpu", torch_device))]
    cpu, dev = runs
    assert dev.meta["cache"]["hit"] is False and dev.meta["n_tokens"] == cpu.meta["n_tokens"]
    exact = torch_device == "cpu"
    for a, b in zip(cpu.summaries(), dev.summaries()):
        for field, value in vars(a).items():
            got = getattr(b, field)
            if field == "twonn" and not exact:
                continue  # each device's against its own reservoir, below
            if isinstance(value, float) and not exact:
                assert got == pytest.approx(value, rel=1e-5, abs=1e-7, nan_ok=True), field
            else:
                assert got == value or (value != value and got != got), field
    for layer_cpu, layer_dev, summary in zip(cpu.layers, dev.layers, dev.summaries()):
        res_cpu, res_dev = layer_cpu.reservoir_sample(), layer_dev.reservoir_sample()
        assert res_dev.shape == res_cpu.shape
        np.testing.assert_allclose(res_dev, res_cpu, rtol=1e-5, atol=1e-6 * float(np.abs(res_cpu).max()))
        distinct = metrics.unique_rows(res_dev.astype(np.float64))
        assert summary.n_distinct == distinct.shape[0]
        own = metrics.twonn_dimension(distinct) if distinct.shape[0] >= TWONN_MIN_POINTS else math.nan
        assert summary.twonn == pytest.approx(own, rel=1e-9, nan_ok=True)
    assert any(s.twonn == s.twonn for s in dev.summaries())  # some layer's TwoNN is a number
    assert "attention_sink" in cpu.meta and "first_token_excluded" in cpu.meta
    for name in ("attention_sink", "first_token_excluded", "massive_excluded"):
        _assert_close(cpu.meta[name], dev.meta[name], exact, name)


def _assert_close(a, b, exact: bool, where: str) -> None:
    """Nested metadata (dicts, lists, numbers, strings) equal, floats to 1e-5 relative unless ``exact``."""
    if isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            _assert_close(a[k], b[k], exact, f"{where}.{k}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_close(x, y, exact, f"{where}[{i}]")
    elif isinstance(a, float) and not exact:
        assert b == pytest.approx(a, rel=1e-5, abs=1e-7, nan_ok=True), where
    else:
        assert a == b or (a != a and b != b), where


def _fake_run(bad_items: set[int]):
    """A modality's ``run`` that gives each input (a clip filled with its index) 3 rows of width 4 per layer, NaN for the inputs in
    ``bad_items`` (by their value), labelled by input, in batches of ``batch_size``."""
    import torch

    from aniso.extract.hidden import Batch

    def run(model, tokenizer, processor, items, batch_size, device, max_length, **_):
        for start in range(0, len(items), batch_size):
            chunk = items[start:start + batch_size]
            rows, labels = [], []
            for j, clip in enumerate(chunk):
                value = int(clip[0]) if not isinstance(clip, str) else int(clip.split()[-1])
                g = torch.Generator().manual_seed(value)
                x = torch.randn(3, 4, generator=g) + 2.0
                if value in bad_items:
                    x[1, 2] = float("nan")
                rows.append(x)
                labels.append(torch.full((3,), j, dtype=torch.int64))
            h, lab = torch.cat(rows), torch.cat(labels)
            yield Batch([h, h * 2], len(chunk), inputs=[lab, lab])

    return run


@pytest.mark.parametrize("batch_size", [1, 2, 8])
def test_a_file_that_makes_the_model_non_finite_is_left_out_and_named(tmp_path, batch_size):
    """One recording (here: item 2 of 6) whose hidden states are NaN: the model is measured on the others, the file
    named among the skipped inputs as a broken file is; all of a batch of several NaN at once is the model's fault."""
    from dataclasses import replace as _replace

    import numpy as np

    from aniso.extract.modalities import MODALITIES
    from aniso.inputs.media import MediaSet
    from aniso.sources import LoadedModel, ModelRefused
    from aniso.stats.pipeline import compute_model_stats

    modality = _replace(MODALITIES["speech"], run=_fake_run({2}), layer_names=lambda model: ["0", "1"])
    entry = type("E", (), {"id": "m", "modality": "speech", "granularity": "audio-frame", "architecture":
                           "transformer", "role": "encoder", "family": "f", "measured_on": None, "tags": ()})()
    loaded = LoadedModel(entry, None, None, "fake")
    media = MediaSet("speech", "clips", "6 recordings", "here", "fp", tuple(np.full(160, i, np.float32) for i in range(6)),
                     tuple(f"clip{i}.wav" for i in range(6)), 6, 0)
    settings = Settings(batch_size=batch_size, reservoir_size=128, svd_batch_size=64, device="cpu", n_bootstrap=0,
                        cache_dir=str(tmp_path))
    stats = compute_model_stats(loaded, modality, media, settings, "fp", frozenset({"first-order"}))
    assert stats.meta["n_sequences"] == 5 and stats.layers[0].count == 15
    skipped = dict(stats.meta["corpus"]["skipped"])
    assert list(skipped) == ["clip2.wav"] and "makes m produce non-finite hidden states" in skipped["clip2.wav"]
    all_bad = _replace(modality, run=_fake_run(set(range(6))))
    if batch_size > 1:
        with pytest.raises(ModelRefused, match=r"^m: layer 0: hidden states contain NaN"):
            compute_model_stats(loaded, all_bad, media, settings, "fp", frozenset({"first-order"}))


def test_a_paragraph_that_makes_the_model_non_finite_is_left_out_and_named(tmp_path):
    """A text model whose hidden states are NaN on one paragraph of the corpus sample is measured on the others, the
    paragraph named (its place in the sample and its first words) and the corpus label saying one was left out."""
    from dataclasses import replace as _replace

    from aniso.extract.modalities import MODALITIES
    from aniso.inputs.text import Corpus
    from aniso.sources import LoadedModel
    from aniso.stats.pipeline import compute_model_stats

    modality = _replace(MODALITIES["text"], run=_fake_run({3}), layer_names=lambda model: ["0", "1"])
    entry = type("E", (), {"id": "m", "modality": "text", "granularity": "subword", "architecture": "transformer",
                           "role": "encoder", "family": "f", "measured_on": None, "tags": ()})()
    loaded = LoadedModel(entry, None, None, "fake")
    corpus = Corpus("c", "6 paragraphs", "here", "fp", tuple(f"words of paragraph {i}" for i in range(6)), 6, 0)
    settings = Settings(batch_size=2, reservoir_size=128, svd_batch_size=64, device="cpu", n_bootstrap=0,
                        cache_dir=str(tmp_path))
    stats = compute_model_stats(loaded, modality, corpus, settings, "fp", frozenset({"first-order"}))
    assert stats.meta["n_sequences"] == 5 and stats.layers[0].count == 15
    described = stats.meta["corpus"]
    assert described["n_skipped"] == 1 and "1 paragraph(s) left out" in described["label"]
    (name, reason), = described["skipped"].items()
    assert name == "paragraph 4 of the sample (words of paragraph 3)"
    assert "makes m produce non-finite hidden states (layer 0" in reason


def test_the_real_token_check_reads_long_paragraphs_without_the_tokenizers_length_warning(tiny_bert_dir):
    """A paragraph longer than the model reads: the check counts its tokens without transformers' warning that the
    sequence "will result in indexing errors" (the extraction cuts every paragraph at max_length), and refuses nothing
    here; the same tokenizer call without ``verbose=False`` does warn (so this test can fail)."""
    import logging
    from types import SimpleNamespace

    from transformers import AutoTokenizer

    from aniso.stats.pipeline import _check_real_tokens

    said: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: said.append(record.getMessage())
    logger = logging.getLogger("transformers")
    logger.addHandler(handler)
    try:
        texts = [" ".join(f"w{(i + j) % 40}" for j in range(50)) for i in range(4)]
        loaded = SimpleNamespace(entry=SimpleNamespace(id="m"),
                                 tokenizer=AutoTokenizer.from_pretrained(tiny_bert_dir, model_max_length=8))
        _check_real_tokens(loaded, SimpleNamespace(items=texts, label="long"), 8)
        assert not any("indexing errors" in m for m in said), said
        AutoTokenizer.from_pretrained(tiny_bert_dir, model_max_length=8)(texts, add_special_tokens=False)
        assert any("indexing errors" in m for m in said)
    finally:
        logger.removeHandler(handler)


def _uncased_tokenizer():
    """A word-level tokenizer that lower-cases its input (as an uncased BERT vocabulary does)."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"] + [f"w{i}" for i in range(40)]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2),
                                                                                              ("[SEP]", 3)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]")


def test_paragraphs_the_tokenizer_reads_as_one_are_counted_as_copies_or_refused():
    """One paragraph in 8 cases is one input to an uncased vocabulary: refused (no two inputs); distinct paragraphs
    and case variants of some: the copies are counted (the inputs label says so); paragraphs alike in the tokens
    measured (cut at max_length) are copies too."""
    from types import SimpleNamespace

    from aniso.inputs.text import GIVEN_LIST
    from aniso.sources import ModelRefused
    from aniso.stats.pipeline import InputsRefused, _check_real_tokens

    loaded = SimpleNamespace(entry=SimpleNamespace(id="m"), tokenizer=_uncased_tokenizer())
    one = "w1 w2 w3 w4 w5 w6"
    cases = [one, one.upper(), one.capitalize(), "W1 w2 W3 w4 W5 w6", "w1 W2 w3 W4 w5 W6", one + " ", "  " + one,
             "w1  w2 w3 w4 w5 w6"]
    assert len(set(cases)) == 8
    with pytest.raises(ModelRefused, match=r"gives 8 paragraph\(s\) that this model's tokenizer reads as one and "
                                           r"the same sequence.*setting corpus"):
        _check_real_tokens(loaded, SimpleNamespace(items=cases, label="c.txt"), 128)
    with pytest.raises(InputsRefused, match=r"^inputs: .*reads as one and the same sequence"):
        _check_real_tokens(loaded, SimpleNamespace(items=cases, label="8 texts given to aniso.measure",
                                                   origin=GIVEN_LIST), 128)
    distinct = [" ".join(f"w{(i + j + 10) % 40}" for j in range(6)) for i in range(6)]
    assert _check_real_tokens(loaded, SimpleNamespace(items=distinct + cases[:3], label="c.txt"), 128) == 2
    assert _check_real_tokens(loaded, SimpleNamespace(items=distinct, label="c.txt"), 128) == 0
    alike = [f"w1 w2 w3 w4 w5 w6 w{i}" for i in range(7, 12)] + distinct  # alike in their first 6 text tokens
    assert _check_real_tokens(loaded, SimpleNamespace(items=alike, label="c.txt"), 8) == 4
    assert _check_real_tokens(loaded, SimpleNamespace(items=alike, label="c.txt"), 128) == 0


def _tiny_lm(tie: bool):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(1)
    return GPT2LMHeadModel(GPT2Config(vocab_size=60, n_embd=16, n_layer=1, n_head=2, n_positions=16,
                                      tie_word_embeddings=tie)).eval()


def test_the_output_embeddings_are_labelled_from_the_weights_not_the_config():
    """A head replaced by weights of its own is measured although the config says tied; a head sharing the input
    matrix, or holding equal values, is tied although the config says not."""
    import torch

    from aniso.stats.pipeline import embedding_isotropy

    replaced = _tiny_lm(tie=True)
    replaced.lm_head.weight = torch.nn.Parameter(torch.randn(60, 16) * 3 + 1)
    iso = embedding_isotropy(replaced, "m")
    assert iso["output_embeddings"] == "measured"
    assert iso["output"]["raw"] == metrics.partition_isotropies(replaced.lm_head.weight.detach())[0]
    shared = _tiny_lm(tie=False)
    shared.lm_head.weight = shared.transformer.wte.weight
    copied = _tiny_lm(tie=False)
    copied.lm_head.weight = torch.nn.Parameter(copied.transformer.wte.weight.detach().clone())
    for model in (shared, copied, _tiny_lm(tie=True)):
        iso = embedding_isotropy(model, "m")
        assert iso["output_embeddings"] == "tied to the input embeddings" and "output" not in iso
    own = embedding_isotropy(_tiny_lm(tie=False), "m")
    assert own["output_embeddings"] == "measured" and "output" in own
    assert embedding_isotropy(_tiny_lm(tie=True).transformer, "m")["output_embeddings"] == \
        "not loaded (base model without its LM head)"


def _word_bert_with_a_nan_word(word: str):
    """A 2-layer BERT over a word-level vocabulary whose embedding row for ``word`` is NaN, and its tokenizer."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"] + "of a is was for on his that it an were are which".split() \
        + [str(i) for i in range(16)]
    tk = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    tk.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]",
                                                      special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]",
                                  sep_token="[SEP]")
    torch.manual_seed(0)
    model = BertModel(BertConfig(vocab_size=len(words), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                 intermediate_size=64, max_position_embeddings=64, pad_token_id=0)).eval()
    with torch.no_grad():
        model.embeddings.word_embeddings.weight[words.index(word)] = float("nan")
    return model, tok


@pytest.mark.parametrize("position", [13, 0])
def test_the_text_that_makes_the_model_non_finite_is_the_one_left_out_though_texts_run_by_length(position):
    """Texts run in order of length, not in the order given: the text whose hidden states are NaN is found by its
    place in the inputs, left out and named, and the other 15 are measured."""
    import aniso

    model, tok = _word_bert_with_a_nan_word("of")
    texts = [f"his that it an were are which {i}" for i in range(8)] + [f"a is was for on {i}" for i in range(8, 16)]
    texts[position] = "of " + texts[position]
    result = aniso.measure(model, texts, tokenizer=tok, progress=False, batch_size=16, statistics="first-order")
    corpus = result.meta["corpus"]
    assert corpus["n_sequences"] == 15 and corpus["n_skipped"] == 1
    (name, reason), = corpus["skipped"].items()
    assert name == f"paragraph {position + 1} of the sample ({' '.join(texts[position].split()[:6])} …)"
    assert "produce non-finite hidden states (layer 0" in reason
