"""A list field given a mapping (``tags: {offline: true}``) or one value (``image_mean: 0.5``) was refused in
pydantic's words, "Input should be a valid tuple"; the line now says what was given and the form the field takes."""

from __future__ import annotations

import pytest

from aniso.registry.entries import RegistryError, load_registry

ROW = ("models:\n- id: mb\n  source: {{kind: {kind}}}\n  modality: {modality}\n  granularity: {granularity}\n"
       "  architecture: {architecture}\n  role: encoder\n  family: f\n{extra}")


@pytest.mark.parametrize("kind, modality, granularity, architecture, extra, said", [
    ("local, path: /nowhere", "text", "subword", "transformer", "  tags: {offline: true}\n",
     "models[0] (id 'mb'): tags: {'offline': True} is a mapping; tags takes a list, e.g. tags: [offline]"),
    ("onnx, path: m.onnx, image_mean: 0.5", "vision", "pixel", "cnn", "",
     "models[0] (id 'mb'): source.image_mean: 0.5 is one value; image_mean takes a list, e.g. image_mean: [0.5, ...]"),
], ids=["tags mapping", "image_mean number"])
def test_a_list_field_given_otherwise_says_what_it_takes(tmp_path, kind, modality, granularity, architecture, extra,
                                                         said):
    path = tmp_path / "r.yaml"
    path.write_text(ROW.format(kind=kind, modality=modality, granularity=granularity, architecture=architecture,
                               extra=extra))
    with pytest.raises(RegistryError) as refused:
        load_registry(path)
    assert f"{path}: {said}" in str(refused.value) and "valid tuple" not in str(refused.value), str(refused.value)
