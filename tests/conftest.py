"""Shared fixtures of the unit tests, and Hypothesis settings: no timing deadlines (performance lives in benchmarks/)."""

import os

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


def pytest_generate_tests(metafunc):
    """A test that takes ``torch_device`` runs once per device of :data:`TORCH_DEVICES` (ids ``cpu``, ``cuda``)."""
    if "torch_device" in metafunc.fixturenames:
        metafunc.parametrize("torch_device", TORCH_DEVICES)


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


@pytest.fixture(scope="module")
def tiny_bert_entry(tiny_bert_dir):
    """A registry entry (source kind local) for :func:`tiny_bert_dir`."""
    from aniso.registry.entries import ModelEntry

    return ModelEntry.model_validate(dict(id="m", source={"kind": "local", "path": str(tiny_bert_dir)},
                                          modality="text", granularity="subword", architecture="transformer",
                                          role="encoder", family="bert"))
