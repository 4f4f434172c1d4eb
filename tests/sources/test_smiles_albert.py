"""The rxnmapper ALBERT: the SMILES tokenizer against rxnmapper's own rule, the weights through a masked-LM check."""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import pytest
import torch

from aniso.inputs.reactions import load_reactions
from aniso.registry.entries import ModelEntry
from aniso.sources import ModelUnavailable, load_model
from aniso.sources.package import read_torch_bin
from aniso.sources.smiles import SMILES_REGEX, smiles_tokenizer

ENGLISH = "The tower is 324 metres tall, about the same height as an 81-storey building (Paris, 1889)."


def _rxnmapper() -> Path:
    spec = importlib.util.find_spec("rxnmapper")
    assert spec is not None, "rxnmapper is in the lock (pip install --no-deps rxnmapper)"
    return Path(list(spec.submodule_search_locations)[0])


def _folder() -> Path:
    return _rxnmapper() / "models" / "transformers" / "albert_heads_8_uspto_all_1310k"


def test_regex_is_rxnmapper_s_own():
    """SMILES_REGEX is the SMI_REGEX_PATTERN literal of rxnmapper's smiles_utils.py (read, not imported)."""
    tree = ast.parse((_rxnmapper() / "smiles_utils.py").read_text(encoding="utf-8"))
    found = [ast.literal_eval(n.value) for n in ast.walk(tree) if isinstance(n, ast.Assign)
             and any(getattr(t, "id", None) == "SMI_REGEX_PATTERN" for t in n.targets)]
    assert found == [SMILES_REGEX]


def test_tokenizer_matches_rxnmapper_rule():
    """rxnmapper's SmilesTokenizer is [CLS] + vocabulary ids of re.findall(SMI_REGEX_PATTERN, text) ([UNK] when
    missing) + [SEP]; ours gives the same ids on every reaction of the inputs and on English text, and pads."""
    vocab_file = _folder() / "vocab.txt"
    vocab = {line: i for i, line in enumerate(vocab_file.read_text(encoding="utf-8").splitlines())}
    tok = smiles_tokenizer(vocab_file)
    texts = list(load_reactions(100, 0).sequences) + [ENGLISH, "CC(=O)O.[Zz]>>CC"]
    for text in texts:
        rule = [vocab["[CLS]"]] + [vocab.get(t, vocab["[UNK]"]) for t in re.findall(SMILES_REGEX, text)] \
            + [vocab["[SEP]"]]
        assert tok(text)["input_ids"] == rule, text
    assert vocab["[UNK]"] in tok("[Zz]")["input_ids"]
    batch = tok(texts[:3], padding=True)
    assert {len(ids) for ids in batch["input_ids"]} == {max(len(tok(t)["input_ids"]) for t in texts[:3])}


def test_tokenizer_needs_the_special_tokens(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\nC\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"vocab\.txt.*\[CLS\]"):
        smiles_tokenizer(vocab)


def _masked_recovery(model, tok, reactions) -> float:
    hits = total = 0
    for text in reactions:
        ids = torch.tensor([tok(text)["input_ids"]])
        n = ids.shape[1] - 2
        batch = ids.repeat(n, 1)
        batch[torch.arange(n), torch.arange(1, n + 1)] = tok.mask_token_id
        with torch.inference_mode():
            logits = model(input_ids=batch).logits
        predicted = logits[torch.arange(n), torch.arange(1, n + 1)].argmax(-1)
        hits += int((predicted == ids[0, 1:n + 1]).sum())
        total += n
    return hits / total


def test_weights_recover_masked_atoms():
    """Loading check: masking one token at a time of every reaction, the trained masked LM puts the true token
    first for >= 60% of them (measured: 0.758 of 433), a randomly initialised one of the same config for <= 10%
    (measured: 0.0); the base model read for the claims gives the masked LM's encoder states exactly."""
    folder = _folder()
    tok = smiles_tokenizer(folder / "vocab.txt")
    reactions = load_reactions(100, 0).sequences
    mlm = read_torch_bin(folder, lm_head=True)
    assert _masked_recovery(mlm, tok, reactions) >= 0.6
    from transformers import AutoConfig, AutoModelForMaskedLM

    torch.manual_seed(0)
    untrained = AutoModelForMaskedLM.from_config(AutoConfig.from_pretrained(folder)).eval()
    assert _masked_recovery(untrained, tok, reactions) <= 0.1
    base = read_torch_bin(folder)
    assert type(base).__name__ == "AlbertModel" and base.config.num_hidden_layers == 12
    inputs = tok(list(reactions[:3]), padding=True, return_tensors="pt")
    with torch.inference_mode():
        assert torch.equal(base(**inputs).last_hidden_state, mlm.albert(**inputs).last_hidden_state)


def test_weights_that_do_not_fit_name_the_file(tmp_path):
    folder = tmp_path / "albert"
    folder.mkdir()
    (folder / "config.json").write_text((_folder() / "config.json").read_text())
    state = torch.load(_folder() / "pytorch_model.bin", map_location="cpu", weights_only=True)
    state.pop("albert.embeddings.word_embeddings.weight")
    torch.save(state, folder / "pytorch_model.bin")
    with pytest.raises(ValueError, match=r"pytorch_model\.bin.*missing.*word_embeddings"):
        read_torch_bin(folder)


ENTRY = dict(id="rxn", modality="text", granularity="char", architecture="transformer", role="encoder",
             family="albert", measured_on="reactions",
             source=dict(kind="package", package="rxnmapper", subdir="models/transformers/albert_heads_8_uspto_all_1310k",
                         format="transformers-torch", tokenizer="smiles"))


def test_registry_entry_loads_with_the_smiles_tokenizer():
    loaded = load_model(ModelEntry.model_validate(ENTRY), None)
    assert "weights_only=True" in loaded.origin and "SMILES" in loaded.origin
    assert loaded.tokenizer("C>>C")["input_ids"][0] == loaded.tokenizer.cls_token_id


def test_smiles_tokenizer_only_with_torch_bin_format():
    bad = dict(ENTRY, source=dict(ENTRY["source"], format="transformers"))
    with pytest.raises(ValueError, match="'tokenizer' is only used with format 'transformers-torch'"):
        ModelEntry.model_validate(bad)


def test_missing_package_is_unavailable_naming_it():
    entry = ModelEntry.model_validate(dict(ENTRY, source=dict(ENTRY["source"], package="no_such_rxn_package")))
    with pytest.raises(ModelUnavailable, match="no_such_rxn_package"):
        load_model(entry, None)
