"""The tiny random model of a registry row: refused, in one line naming the ``tiny`` field, where it is not the row's
architecture or its vocabulary cannot hold its tokenizer's ids."""

from __future__ import annotations

import pytest

from aniso.extract.architecture_check import ArchitectureChecks, build_tiny_model
from aniso.registry.entries import ModelEntry

BERT = dict(id="mybert", source=dict(kind="local", path="/models/minilm"), modality="text", granularity="subword",
            architecture="transformer", role="encoder", family="bert",
            tiny=dict(model_type="bert", hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                      intermediate_size=37, vocab_size=512, max_position_embeddings=128))


def test_a_tiny_model_type_of_another_family_is_refused_naming_tiny_model_type():
    entry = ModelEntry.model_validate(dict(BERT, tiny=dict(model_type="gpt2", n_layer=2, n_embd=32, n_head=2)))
    with pytest.raises(ValueError, match="mybert: tiny.model_type 'gpt2' is not of the row's family 'bert'"):
        build_tiny_model(entry)
    with pytest.raises(ValueError, match="tiny.model_type 'gpt2'"):
        ArchitectureChecks().check(entry)


def test_a_tiny_vocab_size_below_the_tokenizers_ids_is_refused_naming_tiny_vocab_size():
    entry = ModelEntry.model_validate(dict(BERT, tiny=dict(BERT["tiny"], vocab_size=100)))
    with pytest.raises(ValueError, match=r"mybert: tiny.vocab_size 100 is below the \d+ ids of the tiny model's "
                                         r"tokenizer .*give tiny.vocab_size at least \d+"):
        build_tiny_model(entry)


def test_a_tiny_model_of_the_rows_family_with_room_for_its_tokenizer_is_built():
    model, tokenizer, _ = build_tiny_model(ModelEntry.model_validate(BERT))
    assert model.config.model_type == "bert" and len(tokenizer) <= model.config.vocab_size
