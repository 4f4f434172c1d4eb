"""The Python API on bad input (tour 3): an empty claims list, a misspelt model set in models(), an argument's
value out of range named as the argument, numpy integers as counts, claims_dir naming itself."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import aniso

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = ROOT / "models.yaml"


@pytest.fixture(autouse=True)
def _quiet_run(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("ANISO_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "api-cache"))
    monkeypatch.setenv("ANISO_REPORT_DIR", str(tmp_path_factory.getbasetemp() / "api-reports"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("ANISO_PROGRESS", "0")


def _one_line(exc) -> str:
    msg = str(exc.value)
    assert "\n" not in msg and "Traceback" not in msg
    return msg


def test_check_refuses_an_empty_list_of_claims():
    with pytest.raises(ValueError) as exc:
        aniso.check("all-MiniLM-L6-v2", claims=[], registry=REGISTRY)
    assert _one_line(exc).startswith("claims: an empty list")


def test_models_refuses_a_misspelt_model_set_with_the_closest_name():
    with pytest.raises(ValueError) as exc:
        aniso.models(REGISTRY, settings={"models": "smal"})
    msg = _one_line(exc)
    assert msg.startswith("settings['models']:") and "'smal'" in msg and "did you mean 'small'" in msg
    assert aniso.models(REGISTRY, settings={"models": "small"}, as_frame=False)


def test_an_argument_out_of_range_is_named_as_the_argument(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(f"{i} paragraphs about towers, rivers and bridges." for i in range(12)) + "\n")
    with pytest.raises(ValueError) as exc:
        aniso.measure("all-MiniLM-L6-v2", str(corpus), registry=REGISTRY, n_inputs=10**12, progress=False)
    msg = _one_line(exc)
    assert msg.startswith("n_inputs must be an integer") and "ANISO_N_SEQUENCES" not in msg
    with pytest.raises(ValueError) as exc:
        aniso.measure("all-MiniLM-L6-v2", str(corpus), registry=REGISTRY, max_length=10**8, progress=False)
    assert _one_line(exc).startswith("setting max_length (ANISO_MAX_LENGTH, --aniso-max-length) must be an integer")


def test_numpy_integers_are_counts(tmp_path):
    from transformers import GPT2Config, GPT2Model

    from aniso.extract.modalities import _subword_tokenizer

    torch.manual_seed(0)
    model = GPT2Model(GPT2Config(vocab_size=300, n_embd=32, n_layer=2, n_head=2, n_positions=64)).eval()
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(f"{i} paragraphs about towers, rivers and bridges." for i in range(12)) + "\n")
    stats = aniso.measure(model, str(corpus), tokenizer=_subword_tokenizer(300), n_inputs=np.int64(4),
                          max_length=np.int32(16), progress=False)
    assert len(stats.to_frame()) >= 2
    with pytest.raises(ValueError) as exc:
        aniso.measure(model, str(corpus), tokenizer=_subword_tokenizer(300), n_inputs=np.bool_(True), progress=False)
    assert _one_line(exc).startswith("n_inputs:")


def test_check_names_claims_dir_that_is_not_a_folder(tmp_path):
    not_a_folder = tmp_path / "file.txt"
    not_a_folder.write_text("x\n")
    with pytest.raises(ValueError) as exc:
        aniso.check("all-MiniLM-L6-v2", claims="G.token-nlp-anisotropic", registry=REGISTRY,
                    claims_dir=not_a_folder)
    msg = _one_line(exc)
    assert msg.startswith("claims_dir:") and "--claims-dir" not in msg


def _tiny():
    from transformers import GPT2Config, GPT2Model

    from aniso.extract.modalities import _subword_tokenizer

    torch.manual_seed(0)
    return (GPT2Model(GPT2Config(vocab_size=300, n_embd=32, n_layer=2, n_head=2, n_positions=64)).eval(),
            _subword_tokenizer(300))


def test_measure_refuses_copies_of_one_text_and_labels_repeats():
    model, tok = _tiny()
    text = "The tower is 324 metres tall, about the same height as an 81-storey building."
    with pytest.raises(ValueError) as exc:
        aniso.measure(model, [text] * 8, tokenizer=tok, progress=False)
    assert _one_line(exc).startswith("inputs: 8 copies of one text")
    stats = aniso.measure(model, [text, text, "Anisotropy of hidden states."], tokenizer=tok, progress=False)
    positions = "; at most 64 tokens each, the model's positions (max_length 128 asked)"  # (the tiny model's 64)
    assert stats.inputs["label"] in ("3 texts given to aniso.measure; 1 of the 3 repeat another" + positions,
                                     "3 texts given to aniso.measure; 1 of the 3 repeat another")
    assert aniso.measure(model, [text], tokenizer=tok, progress=False).inputs["label"] in (
        "1 texts given to aniso.measure", "1 texts given to aniso.measure" + positions)


def test_a_max_length_too_short_to_measure_is_named():
    model, tok = _tiny()
    texts = [f"The {w} sat on the mat." for w in ("cat", "dog", "bird", "fox", "cow", "hen", "owl", "elk")]
    with pytest.raises(ValueError) as exc:
        aniso.measure(model, texts, tokenizer=tok, max_length=1, progress=False)
    msg = _one_line(exc)
    assert msg.startswith("max_length: 1 tokens per text") and "give a larger max_length" in msg
