"""A folder holding model.safetensors and also pytorch_model.bin (other weights) was measured from the safetensors
without a word, where `aniso hub import` of it says the pickle is left out. A load now says it in one line."""

from __future__ import annotations

import pytest

import aniso
from model_folders import copy_folder

TEXTS = ["the first of the texts here", "a second one of them", "and the third text", "the fourth and last one"]


def test_a_pickle_beside_the_safetensors_is_named_as_left_out(clean_env, tiny_bert_dir):
    folder = copy_folder(tiny_bert_dir, clean_env, "both")
    (folder / "pytorch_model.bin").write_bytes(b"PK\x03\x04 not read")
    with pytest.warns(RuntimeWarning, match=r"^pytorch_model\.bin in its folder left out \(pickle, never read\): the "
                                            r"safetensors weights are measured$"):
        aniso.measure(str(folder), TEXTS, progress=False)
