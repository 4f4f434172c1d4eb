"""A registry identifier (id, tag, family, kind) that holds a white-space character other than the plain space, such
as a no-break space pasted from a web page, is refused naming the field and the character: ``bert\\u00a0`` was a
family distinct from ``bert``."""

from __future__ import annotations

from pathlib import Path

import pytest

from aniso.registry.entries import RegistryError, load_registry

ROW = """\
models:
  - id: {id}
    source: {{kind: local, path: ./mybert}}
    modality: text
    granularity: subword
    architecture: transformer
    role: encoder
    family: {family}
    tags: [{tag}]
"""


def _said(tmp_path: Path, **fields: str) -> str:
    path = tmp_path / "models.yaml"
    path.write_text(ROW.format(**({"id": "blk", "family": "bert", "tag": "offline"} | fields)), encoding="utf-8")
    with pytest.raises(RegistryError) as exc:
        load_registry(path)
    said = str(exc.value)
    assert "\n" not in said
    return said


@pytest.mark.parametrize("char", ["\u00a0", "\u2009", "\u3000", "\u200b"])
def test_a_family_holding_a_no_break_or_other_space_is_refused_naming_the_field_and_character(tmp_path, char):
    said = _said(tmp_path, family=f"bert{char}")
    assert f"family: 'bert{char}'" in said or f"family: {('bert' + char)!r}" in said, said
    assert f"U+{ord(char):04X}" in said and said.endswith("write family: bert"), said


def test_an_id_or_tag_holding_a_no_break_space_names_the_character(tmp_path):
    said = _said(tmp_path, id="my\u00a0bert")
    assert "U+00A0 (NO-BREAK SPACE)" in said and "id:" in said, said
    said = _said(tmp_path, tag="offline\u00a0")
    assert "tags" in said and "U+00A0 (NO-BREAK SPACE)" in said and said.endswith("offline"), said


def test_a_plain_family_still_loads(tmp_path):
    path = tmp_path / "models.yaml"
    path.write_text(ROW.format(id="blk", family="bert", tag="offline"), encoding="utf-8")
    assert load_registry(path).get("blk").family == "bert"
