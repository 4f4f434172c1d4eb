"""A row's declared relations to other rows (stands_for, fine_tuned_from, role block) are checked against them."""

from __future__ import annotations

import pytest

from aniso.registry.entries import RegistryError, load_registry
from registry_rows import ENTRY


def write(tmp_path, text):
    p = tmp_path / "models.yaml"
    p.write_text(text)
    return p


SPEECH = """\
  - id: whisper
    source: {kind: hub, repo: org/whisper}
    modality: speech
    granularity: audio-frame
    architecture: transformer
    role: encoder-decoder
    family: whisper
"""
VISION = """\
  - id: vit
    source: {kind: hub, repo: org/vit}
    modality: vision
    granularity: patch
    architecture: transformer
    role: encoder
    family: vit
"""


@pytest.mark.parametrize("rows, field, seed, theirs", [
    (SPEECH + ENTRY + "    stands_for: whisper\n    relation: relative\n", "stands_for", "whisper", "speech"),
    (VISION + ENTRY + "    fine_tuned_from: vit\n", "fine_tuned_from", "vit", "vision"),
])
def test_a_row_naming_a_row_of_another_modality_is_refused_at_load(tmp_path, rows, field, seed, theirs):
    path = write(tmp_path, "models:\n" + rows)
    with pytest.raises(RegistryError) as info:
        load_registry(path)
    message = str(info.value)
    assert message.startswith(f"{path}: models[1] (id 'tiny'): {field}: {seed!r} is a {theirs} row, this row is text")
    assert "\n" not in message


def test_role_block_on_a_source_other_than_init_is_refused_at_load(tmp_path):
    path = write(tmp_path, "models:\n" + ENTRY.replace("role: encoder", "role: block"))
    with pytest.raises(RegistryError) as info:
        load_registry(path)
    message = str(info.value)
    assert message.startswith(f"{path}: models[0] (id 'tiny'): role: 'block' is the role of an untrained block")
    assert "source is local" in message and "encoder, decoder or encoder-decoder" in message and "\n" not in message
