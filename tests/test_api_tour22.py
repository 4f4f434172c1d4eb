"""Tour 22: in-memory models the API did not measure or refused unclearly: a model whose config says
``return_dict=False`` (a tuple's traceback, ``'tuple' object has no attribute 'hidden_states'``), one whose layers
were cut or whose config's ``num_hidden_layers`` was changed ("expected 7 hidden states, got 4"), and a
``torch.compile`` wrapper (named only by its class)."""

from __future__ import annotations

import numpy as np
import pytest

import aniso

TEXTS = ["w1 w2 w3 w4", "w5 w6 w7", "w8 w9 w10 w11 w12", "w13 w14", "w15 w16 w17 w18"]


def _measure(model, tiny_bert_dir):
    from transformers import AutoTokenizer

    return aniso.measure(model, TEXTS, tokenizer=AutoTokenizer.from_pretrained(tiny_bert_dir), progress=False,
                         statistics=["first-order"])


def test_a_model_whose_config_asks_for_tuples_is_measured_the_same(clean_env, tiny_bert_dir):
    from transformers import AutoConfig, AutoModel

    reference = _measure(AutoModel.from_pretrained(tiny_bert_dir), tiny_bert_dir).series("avg_cos")
    config = AutoConfig.from_pretrained(tiny_bert_dir)
    config.return_dict = False
    tuples = _measure(AutoModel.from_pretrained(tiny_bert_dir, config=config), tiny_bert_dir).series("avg_cos")
    assert len(reference) == 3 and np.array_equal(np.asarray(reference), np.asarray(tuples))


@pytest.mark.parametrize("change, runs, says", [("cut", 1, 2), ("config", 2, 1)])
def test_layers_other_than_the_configs_name_num_hidden_layers(clean_env, tiny_bert_dir, change, runs, says):
    from transformers import AutoModel

    from aniso.sources import ModelRefused

    model = AutoModel.from_pretrained(tiny_bert_dir)
    if change == "cut":
        model.encoder.layer = model.encoder.layer[:1]
    else:
        model.config.num_hidden_layers = 1
    with pytest.raises(ModelRefused) as caught:
        _measure(model, tiny_bert_dir)
    line = str(caught.value)
    assert "\n" not in line and f"the model runs {runs} layers ({runs + 1} hidden states" in line and \
        f"its config says num_hidden_layers {says}" in line, line


def test_a_compiled_model_is_refused_naming_the_model_it_wraps(clean_env, tiny_bert_dir):
    import torch
    from transformers import AutoModel

    compiled = torch.compile(AutoModel.from_pretrained(tiny_bert_dir))
    with pytest.raises(TypeError, match=r"^model: a torch\.OptimizedModule \(torch\.compile's wrapper of a "
                                        r"transformers\.BertModel\).*give the model it wraps \(model\._orig_mod\)"):
        _measure(compiled, tiny_bert_dir)
