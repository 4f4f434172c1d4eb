"""Shared fixtures of the unit tests, and Hypothesis settings: no timing deadlines (performance lives in benchmarks/)."""

import os
from pathlib import Path

import pytest
import torch
from hypothesis import settings

settings.register_profile("aniso", deadline=None, max_examples=60)
# Under CI the examples are derived from each test itself, so the same commit draws the same examples on any
# machine (a fresh clone has no example database); elsewhere each run explores new ones.
settings.register_profile("aniso-ci", deadline=None, max_examples=60, derandomize=True)
settings.load_profile("aniso-ci" if os.environ.get("CI") else "aniso")

#: Where the device-resident paths are tested: the CPU always, and CUDA where a GPU is present (CI has none).
TORCH_DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.fixture(autouse=True, scope="session")
def _results_key_of_the_tests(tmp_path_factory):
    """The results files the tests write are sealed with a key of the test session's
    (:func:`aniso.common.seal.results_key_path` under ``XDG_STATE_HOME``), not the user's."""
    old = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = str(tmp_path_factory.mktemp("state"))
    yield
    if old is None:
        os.environ.pop("XDG_STATE_HOME", None)
    else:
        os.environ["XDG_STATE_HOME"] = old


def pytest_configure(config):
    """transformers' log handler keeps the stream that was ``sys.stderr`` when its library logger was first
    configured: configured here, while that is the session's own stream, a warning logged after a test whose
    ``capsys`` configured it first goes to the session's output instead of that test's closed capture ("I/O
    operation on closed file" under the next test that logs)."""
    from transformers.utils import logging as hf_logging

    hf_logging.get_logger()


def pytest_generate_tests(metafunc):
    """A test that takes ``torch_device`` runs once per device of :data:`TORCH_DEVICES` (ids ``cpu``, ``cuda``)."""
    if "torch_device" in metafunc.fixturenames:
        metafunc.parametrize("torch_device", TORCH_DEVICES)


def _fallback_corpus_words(n: int) -> list[str]:
    """The ``n`` most frequent words (whitespace/punctuation pre-tokenized) of the embedded fallback corpus, so that a
    word-level test tokenizer reads it mostly as known words rather than [UNK] (the suite refuses a corpus read
    mostly as [UNK])."""
    from collections import Counter

    from tokenizers import pre_tokenizers

    from aniso.inputs.text import _pydoc_paragraphs

    split = pre_tokenizers.Whitespace()
    counts = Counter(w for p in _pydoc_paragraphs() for w, _ in split.pre_tokenize_str(p))
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return [w for w, _ in ranked if not (w.startswith("w") and w[1:].isdigit())][:n]


@pytest.fixture(scope="module")
def tiny_bert_dir(tmp_path_factory):
    """A randomly initialised 2-layer BERT with a word-level tokenizer, saved in Hugging Face format."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    d = tmp_path_factory.mktemp("tiny-bert")
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"] + [f"w{i}" for i in range(40)] + _fallback_corpus_words(400)
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


@pytest.fixture(scope="module")
def tiny_bert_entry(tiny_bert_dir):
    """A registry entry (source kind local) for :func:`tiny_bert_dir`."""
    from aniso.registry.entries import ModelEntry

    return ModelEntry.model_validate(dict(id="m", source={"kind": "local", "path": str(tiny_bert_dir)},
                                          modality="text", granularity="subword", architecture="transformer",
                                          role="encoder", family="bert"))


@pytest.fixture
def clean_env(tmp_path, monkeypatch):
    """No ANISO_* setting from the caller's environment (nor a torchrun rank); a cache and report folder of the
    test's; the hub not probed. Returns the test's temporary folder."""
    for name in [k for k in os.environ if k.startswith("ANISO_")]:
        monkeypatch.delenv(name)
    for name in ("RANK", "WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANISO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("ANISO_REPORT_DIR", str(tmp_path / "reports"))
    monkeypatch.setenv("CI", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return tmp_path


@pytest.fixture
def hub_env(clean_env, monkeypatch):
    """No hub cache variable from the caller's environment; HF_HUB_OFFLINE=1 (also in huggingface_hub's constants)."""
    from huggingface_hub import constants

    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    return clean_env


@pytest.fixture
def one_snapshot_hub(hub_env, monkeypatch):
    """``one_snapshot_hub(repo_id, ref, commit)``: a hub cache under the test's folder that holds ``repo_id`` at
    ``ref`` only (``refs/<ref>`` naming ``commit``, whose snapshot has a BERT ``config.json``), named by
    HF_HUB_CACHE in the environment and in huggingface_hub's constants; offline. Returns the cache folder."""
    import json

    from huggingface_hub import constants

    def make(repo_id: str, ref: str, commit: str) -> Path:
        cache = hub_env / "hc"
        repo = cache / ("models--" + repo_id.replace("/", "--"))
        (repo / "snapshots" / commit).mkdir(parents=True)
        (repo / "snapshots" / commit / "config.json").write_text(json.dumps({"model_type": "bert"}), encoding="utf-8")
        (repo / "refs").mkdir()
        (repo / "refs" / ref).write_text(commit, encoding="utf-8")
        monkeypatch.setenv("HF_HUB_CACHE", str(cache))
        monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
        return cache

    return make



@pytest.fixture
def aniso_cli(capsys):
    """``aniso_cli(argv)``: run ``aniso ARGV`` in this process and return (exit code, standard output, standard
    error), asserting that no traceback was printed."""
    from aniso.cli import main

    def run(argv: list[str]) -> tuple[int, str, str]:
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
        out, err = capsys.readouterr()
        assert "Traceback" not in out + err, err[-3000:]
        return code, out, err

    return run


@pytest.fixture
def refused_line(aniso_cli):
    """``refused_line(argv)``: the one line on standard error of ``aniso ARGV`` refused with exit code 2 (asserted:
    exit 2, one line, beginning ``aniso ``)."""
    def line(argv: list[str]) -> str:
        code, out, err = aniso_cli(argv)
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1 and lines[0].startswith("aniso "), (code, out[-2000:], err[-3000:])
        return lines[0]

    return line
