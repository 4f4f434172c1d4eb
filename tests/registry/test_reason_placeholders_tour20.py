"""Tour 20: a record's reason is a template rendered with ``str.format``, which also follows attributes
(``{contrast.__class__}`` put "<class 'float'>" into the reason and the report), pads to any width
(``{contrast:>1000000.2f}``: a reason of a million characters) and formats a yes/no as a number (``measured:
{contrast: true}`` read "contrast 1.00"); a measured record without its numbers was refused as a KeyError. Each is
refused in one line naming the record and what is wrong."""

from __future__ import annotations

import pytest

from aniso.registry.entries import RegistryError, load_registry
from registry_rows import ENTRY


def _registry(tmp_path, measured: str, reason: str):
    record = ("    expected:\n      G.drift-correlation-spearman:\n        verdict: does-not-hold\n"
              f"{measured}        reason: '{reason}'\n")
    path = tmp_path / "models.yaml"
    path.write_text("models:\n" + ENTRY + record)
    return load_registry(path)


MEASURED = "        measured: {p_value: 0.3912, per_model: {a-b.c: 0.25}, grows: true}\n"


def test_a_placeholder_is_a_measured_number_and_nothing_else(tmp_path):
    ok = _registry(tmp_path, MEASURED, "weak (p = {p_value:.2f}; {per_model[a-b.c]:>6.1f}; grows: {grows})")
    assert ok.get("tiny").expected["G.drift-correlation-spearman"].text == "weak (p = 0.39;    0.2; grows: True)"
    for reason, shown in (("{p_value.__class__}", "{p_value.__class__}"), ("{p_value!r}", "{p_value!r}"),
                          ("{per_model[a-b.c].real}", "{per_model[a-b.c].real}"),
                          ("{p_value:>1000000.2f}", "{p_value:>1000000.2f}")):
        with pytest.raises(RegistryError, match=r"expected\.G\.drift-correlation-spearman: .*reason: the placeholder "
                                                + __import__("re").escape(shown) + " is not a measured number's"):
            _registry(tmp_path, MEASURED, reason)


def test_a_yes_no_formatted_as_a_number_is_refused(tmp_path):
    with pytest.raises(RegistryError, match=r"reason: \{grows:\.2f\} formats true, a yes/no and not a number"):
        _registry(tmp_path, MEASURED, "grows {grows:.2f}")


def test_a_precision_that_cuts_a_text_is_refused(tmp_path):
    """Tour 21: '{flattest_decoder:.3}' read "min" for the model id mini-gpt2-bytes-s0."""
    measured = "        measured: {p_value: 0.39, layer_of_max: enc.11}\n"
    with pytest.raises(RegistryError, match=r"reason: \{layer_of_max:\.3\} cuts the text 'enc\.11': a precision is "
                                            r"for numbers"):
        _registry(tmp_path, measured, "at {layer_of_max:.3}")
    assert _registry(tmp_path, measured, "at {layer_of_max}, p {p_value:.2f}").get("tiny").expected[
        "G.drift-correlation-spearman"].text == "at enc.11, p 0.39"


def test_a_measured_record_without_numbers_says_so(tmp_path):
    with pytest.raises(RegistryError, match=r"reason: its placeholders \(p_value\) render from measured, and the "
                                            r"record has no measured numbers"):
        _registry(tmp_path, "", "weak (p = {p_value:.2f})")
