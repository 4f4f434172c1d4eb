"""Tour 22: a record's reason showed a yes/no given any format spec as a number (``{grows:8}`` read "       1",
``{grows:+}`` "+1", ``{grows:08}`` "00000000"); a recorded whole number a float cannot hold (401 digits) ended the
reading of the registry in an OverflowError traceback, one past Python's 4300 digits in a line naming nothing; a
precision longer than a text was refused as cutting it; a number quoted as text was told to drop its format; a stray
brace was refused without naming the field ``reason``."""

from __future__ import annotations

import pytest

from aniso.registry.entries import RegistryError, load_registry
from registry_rows import ENTRY

CLAIM = "G.drift-correlation-spearman"


def _registry(tmp_path, measured: str, reason: str):
    record = (f"    expected:\n      {CLAIM}:\n        verdict: does-not-hold\n"
              f"        measured: {measured}\n        reason: '{reason}'\n")
    path = tmp_path / "models.yaml"
    path.write_text("models:\n" + ENTRY + record)
    return load_registry(path)


@pytest.mark.parametrize("spec", ["8", ",", "+", "*>6", "08", "<5", " ", "_"])
def test_a_yes_no_with_any_format_spec_is_refused(tmp_path, spec):
    with pytest.raises(RegistryError, match=rf"expected\.{CLAIM}: reason: \{{grows:{__import__('re').escape(spec)}\}} "
                                            r"formats (true|false), a yes/no and not a number"):
        _registry(tmp_path, "{p_value: 0.39, grows: true}", f"grows {{grows:{spec}}}")


def test_a_bare_placeholder_still_shows_a_yes_no(tmp_path):
    reg = _registry(tmp_path, "{p_value: 0.39, grows: false}", "grows: {grows}, p {p_value:.2f}")
    assert reg.get("tiny").expected[CLAIM].text == "grows: False, p 0.39"


@pytest.mark.parametrize("digits", [401, 310, 5001])
@pytest.mark.parametrize("spec", [".2f", "e", ""])
def test_a_whole_number_beyond_a_float_names_file_record_and_field(tmp_path, digits, spec):
    huge = "1" + "0" * (digits - 1)
    with pytest.raises(RegistryError) as caught:
        _registry(tmp_path, f"{{p_value: 0.39, per_layer: [0.1, {huge}]}}", f"p {{p_value:{spec}}}")
    line = str(caught.value)
    assert "\n" not in line and str(tmp_path / "models.yaml") in line and "models[0] (id 'tiny')" in line
    assert f"expected.{CLAIM}: measured.per_layer[1]: a whole number of {digits} digits, beyond what a float " \
           "holds" in line


def test_a_large_whole_number_a_float_holds_is_kept(tmp_path):
    reg = _registry(tmp_path, "{p_value: 0.39, count: " + "9" * 300 + "}", "p {p_value:.2f}, n {count:.1e}")
    assert reg.get("tiny").expected[CLAIM].text == "p 0.39, n 1.0e+300"


def test_a_precision_that_cuts_nothing_is_kept_and_one_that_cuts_is_refused(tmp_path):
    measured = "{p_value: 0.39, layer_of_max: enc.11}"
    assert _registry(tmp_path, measured, "at {layer_of_max:.99}; {layer_of_max:.6}").get("tiny").expected[
        CLAIM].text == "at enc.11; enc.11"
    with pytest.raises(RegistryError, match=r"reason: \{layer_of_max:\.5\} cuts the text 'enc\.11'"):
        _registry(tmp_path, measured, "at {layer_of_max:.5}")


@pytest.mark.parametrize("spec", [".2f", "e", "d", ".3"])
def test_a_number_quoted_as_text_is_told_to_unquote_it(tmp_path, spec):
    with pytest.raises(RegistryError, match=rf"reason: \{{p_value:{__import__('re').escape(spec)}\}} formats the text "
                                            r"'0\.3889', a number quoted: .*write the number unquoted"):
        _registry(tmp_path, "{p_value: '0.3889'}", f"p {{p_value:{spec}}}")


@pytest.mark.parametrize("reason", ["{p_value:}>8.2f}", "p }", "p {"])
def test_a_stray_brace_names_the_reason(tmp_path, reason):
    with pytest.raises(RegistryError, match=rf"models\[0\] \(id 'tiny'\): expected\.{CLAIM}: reason: Single '[{{}}]' "
                                            r"encountered in format string"):
        _registry(tmp_path, "{p_value: 0.39}", reason)


@pytest.mark.parametrize("name, text", [
    ("tokenizer.json", '{"version": "1.0", "truncation": null, "added_tokens": [], "normalizer": null, '
                       '"pre_tokenizer": null, "model": {"type": "WordPiece", "vocab": {}}}'),
    ("tokenizer_config.json", '{"do_lower_case": true, "model_max_length": 512, "tokenizer_class": "BertTokenizer"}')])
def test_a_tokenizer_file_given_as_the_registry_is_named(tmp_path, name, text):
    from aniso.registry.entries import NotARegistry

    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(NotARegistry, match=rf"{name.replace('.', '[.]')} is a tokenizer file \(a tokenizer\.json or "
                                           r"tokenizer_config\.json of a model folder.*\), not a registry"):
        load_registry(path)
