"""A registry row's mistakes named as what they are: a key of another source kind, a list of too few values."""

from __future__ import annotations

from pathlib import Path

import pytest

from aniso.registry.entries import RegistryError, load_registry

ROW = """\
models:
  - id: my-model
    source: {source}
    modality: {modality}
    granularity: {granularity}
    architecture: {architecture}
    role: encoder
    family: {family}
"""


def _load(tmp_path: Path, source: str, kind: str = "text") -> str:
    fields = (dict(modality="text", granularity="subword", architecture="transformer", family="bert")
              if kind == "text" else dict(modality="vision", granularity="pixel", architecture="cnn",
                                          family="mobilenet"))
    path = tmp_path / "models.yaml"
    path.write_text(ROW.format(source=source, **fields), encoding="utf-8")
    with pytest.raises(RegistryError) as exc:
        load_registry(path)
    assert "\n" not in str(exc.value)
    return str(exc.value)


def test_a_revision_on_a_local_source_says_it_applies_to_hub_sources_only(tmp_path):
    said = _load(tmp_path, "{kind: local, path: ./mybert, revision: abc123}")
    assert said.endswith("models[0] (id 'my-model'): source.revision: key 'revision' applies to hub sources only, "
                         "not to a local source (source: {kind: hub, ...})"), said
    assert "did you mean 'revision'" not in said
    said = _load(tmp_path, "{kind: local, path: ./mybert, revison: abc123}")  # a misspelling is still one
    assert "unknown key 'revison'; did you mean 'revision'?" in said, said


def test_an_image_mean_of_two_values_says_three_are_needed(tmp_path):
    said = _load(tmp_path, "{kind: onnx, path: m.onnx, image_mean: [0.5, 0.5]}", kind="vision")
    assert said.endswith("source.image_mean: [0.5, 0.5] has 2 value(s), but image_mean takes 3 (R, G, B)"), said
    said = _load(tmp_path, "{kind: onnx, path: m.onnx, image_std: [0.5]}", kind="vision")
    assert said.endswith("source.image_std: [0.5] has 1 value(s), but image_std takes 3 (R, G, B)"), said
