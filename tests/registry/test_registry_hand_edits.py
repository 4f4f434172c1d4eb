"""Registry files as hand edits leave them: a `tiny:` config whose width is no multiple of its heads passed every
check and ended the offline pipeline check in a 49-line transformers traceback; git's conflict markers were "not valid
YAML at line 10" (the line after the marker); `verdict: 'holds '` was refused without showing the blank."""

from __future__ import annotations

import pytest

from aniso.registry.entries import RegistryError, load_registry
from registry_rows import ENTRY


def _write(tmp_path, text):
    path = tmp_path / "models.yaml"
    path.write_text("models:\n" + text)
    return path


@pytest.mark.parametrize("field", ["tiny", "full"])
def test_a_width_that_is_no_multiple_of_the_heads_is_refused_at_load(tmp_path, field):
    text = ENTRY + (f"    {field}: {{model_type: bert, hidden_size: 30, num_hidden_layers: 2, num_attention_heads: 4, "
                    "intermediate_size: 37, vocab_size: 512}\n")
    with pytest.raises(RegistryError, match=rf"models\[0\] \(id 'tiny'\): {field}: {field}\.hidden_size 30 is not a "
                                            rf"multiple of {field}\.num_attention_heads 4 .*give a multiple, or the "
                                            r"head size \(head_dim\)$"):
        load_registry(_write(tmp_path, text))
    if field == "tiny":  # (full goes with tiny)
        # the head size given (as Gemma's rows give it): the width need not be a multiple
        load_registry(_write(tmp_path, text.replace("num_attention_heads: 4,", "num_attention_heads: 4, head_dim: 8,")))
        load_registry(_write(tmp_path, text.replace("hidden_size: 30", "hidden_size: 32")))


def test_git_conflict_markers_are_named_with_their_line(tmp_path):
    text = ENTRY + "<<<<<<< HEAD\n    tags: [mine]\n=======\n    tags: [theirs]\n>>>>>>> feature\n"
    line = ENTRY.count("\n") + 2  # after the models: line
    with pytest.raises(RegistryError, match=rf"models\.yaml: an unresolved merge conflict at line {line} \(<<<<<<<\): "
                                            r"resolve it, keeping one side"):
        load_registry(_write(tmp_path, text))


def test_a_choice_given_with_a_blank_shows_the_value(tmp_path):
    text = ENTRY + ("    expected:\n      G.token-nlp-anisotropic: {verdict: 'holds ', source: measured, "
                    "measured: {max_avg_cos: 0.3}, reason: x}\n")
    with pytest.raises(RegistryError, match=r"verdict: Input should be 'holds', 'does-not-hold' or 'underpowered' "
                                            r"\(the value given, 'holds ', has a blank before or after it\)$"):
        load_registry(_write(tmp_path, text))
