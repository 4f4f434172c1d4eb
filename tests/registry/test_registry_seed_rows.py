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


GPT2 = """\
  - id: gpt2
    source: {kind: hub, repo: gpt2}
    modality: text
    granularity: subword
    architecture: transformer
    role: decoder
    family: gpt2
    tiny: {model_type: gpt2, n_embd: 32, n_layer: 2, n_head: 4, vocab_size: 512}
    full: {n_embd: 768, n_layer: 12, n_head: 12, vocab_size: 50257}
"""


@pytest.mark.parametrize("relation, refused", [("same", True), ("converted", True), ("relative", False)])
def test_a_row_said_to_be_its_seeds_weights_is_refused_when_its_config_has_other_sizes(tmp_path, relation, refused):
    import json

    from aniso.sources import declared_files_problem

    folder = tmp_path / "minilm"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "bert", "architectures": ["BertModel"],
                                                    "hidden_size": 384, "num_hidden_layers": 6}))
    row = (ENTRY.replace("./tiny", str(folder)) + f"    stands_for: gpt2\n    relation: {relation}\n")
    path = write(tmp_path, "models:\n" + GPT2 + row)
    problem = declared_files_problem(load_registry(path).get("tiny"))
    if not refused:
        assert problem is None
        return
    assert problem == (f"{path}: models[1] (id 'tiny'): stands_for 'gpt2', relation {relation!r} (the seed's own "
                       "weights), but its config.json is 384 wide, 6 layers where the seed row's full config is 768 "
                       "wide, 12 layers: the row is not its seed's weights; give relation relative (or the right "
                       "stands_for)")
