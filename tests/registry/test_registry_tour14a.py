"""A registry line indented (or separated) with a character that looks like a blank but is none to YAML: a no-break
space, a figure space, a narrow no-break space, an ideographic space, a zero-width space, a byte-order mark inside
the file. The one line names the character, its code point, line and column (it said only "not valid YAML at line 4:
did not find expected key", the line after)."""

from __future__ import annotations

import pytest

import aniso
from aniso.registry.entries import RegistryError, load_registry

ROW = ("models:\n- id: mini\n{indent}source: {{kind: hub, repo: org/mini}}\n  modality: text\n"
       "  granularity: subword\n  architecture: transformer\n  role: encoder\n  family: bert\n")


@pytest.mark.parametrize("indent, name, code, column", [
    ("\u00a0 ", "a no-break space", "U+00A0", 1),
    ("\u2007 ", "a figure space", "U+2007", 1),
    ("\u202f ", "a narrow no-break space", "U+202F", 1),
    ("\u3000 ", "an ideographic space", "U+3000", 1),
    ("\u200b  ", "a zero width space", "U+200B", 1),
    (" \ufeff ", "a zero width no-break space", "U+FEFF, a byte-order mark", 2),
], ids=["nbsp", "figure", "narrow-nbsp", "ideographic", "zero-width", "bom-mid-file"])
def test_an_odd_blank_is_named_with_its_line_and_column(tmp_path, indent, name, code, column):
    path = tmp_path / "models.yaml"
    path.write_text(ROW.format(indent=indent), encoding="utf-8")
    with pytest.raises(RegistryError) as caught:
        load_registry(path)
    said = str(caught.value)
    assert "\n" not in said
    assert said.startswith(f"{path}: not valid YAML at line 3 column {column}: {name} ({code}), which YAML does not "
                           "read as a blank"), said
    assert "replace it with a space" in said


def test_through_the_api_and_aniso_list(tmp_path, clean_env, aniso_cli):
    path = tmp_path / "models.yaml"
    path.write_text(ROW.format(indent="\u00a0 "), encoding="utf-8")
    with pytest.raises(ValueError, match=r"line 3 column 1: a no-break space \(U\+00A0\)"):
        aniso.models(registry=str(path))
    code, _, err = aniso_cli(["list", "models", "--registry", str(path)])
    assert code == 2 and "line 3 column 1: a no-break space (U+00A0)" in err, err


def test_a_byte_order_mark_at_the_start_and_plain_spaces_pass(tmp_path):
    path = tmp_path / "models.yaml"
    path.write_text("\ufeff" + ROW.format(indent="  "), encoding="utf-8")
    assert [e.id for e in load_registry(path)] == ["mini"]
