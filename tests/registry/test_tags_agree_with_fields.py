"""Claims select rows by tag, and an explicit tag that the row's own fields deny was accepted: ``tags: [decoder]`` on
an encoder made R.decoder-bell-profile measure it as a decoder ("holds"), ``[vision]`` and ``[speech]`` on a text row
judged vision and speech claims on WikiText, ``[char]`` counted a subword model as character-level, and ``[byt5]``,
``[checkpoints]``, ``[untrained-block]`` ended their claims in a bare ValueError or RuntimeError. Each is refused at
load, naming the tag and the field."""

from __future__ import annotations

import pytest

from aniso.registry.entries import RegistryError, load_registry

ROW = ("models:\n- id: my-bert\n  source: {{kind: local, path: /nowhere}}\n  modality: text\n  granularity: subword\n"
       "  architecture: transformer\n  role: encoder\n  family: bert\n  tags: [offline, {tag}]\n")


@pytest.mark.parametrize("tag, said", [
    ("decoder", "tags: 'decoder' is a role, and this row's role is 'encoder': claims select rows by it; remove the tag "
                "(a row carries its role as a tag already), or correct role"),
    ("vision", "tags: 'vision' is a modality, and this row's modality is 'text'"),
    ("speech", "tags: 'speech' is a modality, and this row's modality is 'text'"),
    ("char", "tags: 'char' is a granularity, and this row's granularity is 'subword'"),
    ("cnn", "tags: 'cnn' is an architecture, and this row's architecture is 'transformer'"),
    ("checkpoints", "tags: 'checkpoints' is implied by the row's fields (the field checkpoints), and this row's deny "
                    "it: claims select rows by it; remove the tag"),
    ("untrained", "tags: 'untrained' is implied by the row's fields (source kind init, or a miniature at step 0)"),
    ("byt5", "tags: 'byt5' selects the rows of the claims that need role: encoder-decoder; this row has role: "
             "encoder: remove the tag"),
    ("untrained-block", "tags: 'untrained-block' selects the rows of the claims that need modality: embeddings; this "
                        "row has modality: text: remove the tag"),
])
def test_a_tag_the_rows_fields_deny_is_refused(tmp_path, tag, said):
    path = tmp_path / "r.yaml"
    path.write_text(ROW.format(tag=tag))
    with pytest.raises(RegistryError) as refused:
        load_registry(path)
    assert str(refused.value).startswith(f"{path}: models[0] (id 'my-bert'): {said}"), str(refused.value)


@pytest.mark.parametrize("tag", ["encoder", "text", "subword", "transformer", "pretrained", "bert", "chemistry"])
def test_a_tag_the_fields_agree_with_or_a_free_tag_is_accepted(tmp_path, tag):
    path = tmp_path / "r.yaml"
    path.write_text(ROW.format(tag=tag))
    assert tag in load_registry(path).get("my-bert").all_tags


def test_a_tag_that_is_another_rows_family_is_refused(tmp_path):
    """`tags: [gpt2]` on a BERT row: `--models gpt2` selected the BERT row as one of the GPT-2 family."""
    path = tmp_path / "r.yaml"
    path.write_text(ROW.format(tag="gpt2") + "- id: my-gpt2\n  source: {kind: local, path: /nowhere2}\n"
                    "  modality: text\n  granularity: subword\n  architecture: transformer\n  role: decoder\n"
                    "  family: gpt2\n")
    with pytest.raises(RegistryError) as refused:
        load_registry(path)
    assert str(refused.value) == (f"{path}: models[0] (id 'my-bert'): tags: 'gpt2' is the family of row 'my-gpt2', "
                                  "and this row's family is 'bert': a family is a tag its rows carry; remove the tag, "
                                  "or correct family")
