"""Registry files a run would misread: recorded inputs in no form a run writes, mapping keys that are lists."""

from __future__ import annotations

import pytest

from aniso.registry.entries import RegistryError, load_registry

ENTRY = """\
  - id: tiny
    source: {kind: local, path: ./tiny}
    modality: text
    granularity: subword
    architecture: transformer
    role: encoder
    family: bert
"""


def write(tmp_path, text):
    p = tmp_path / "models.yaml"
    p.write_text(text)
    return p


@pytest.mark.parametrize("identity", ["wikitext-103-validation@zzzz-not-hex", "wikitext-103-validation@fc03b3e1",
                                      "wikitext-103-validation@FC03B3E11199AEBB", "corpus@fc03b3e11199aebb\n",
                                      "@fc03b3e11199aebb", "corpus@fc03b3e11199aebb0"])
def test_recorded_inputs_in_no_form_a_run_writes_are_refused(tmp_path, identity):
    """A recorded ``name@fingerprint`` whose fingerprint is not the 16 hex digits a run writes would never equal a
    run's inputs, so its records would silently never bind: refused, naming the field and the value."""
    text = f"recorded_inputs: {{text: {identity!r}}}\nmodels:\n" + ENTRY
    with pytest.raises(RegistryError) as err:
        load_registry(write(tmp_path, text.replace("'", '"').replace("\n\"", '\\n"')))
    msg = str(err.value)
    assert "\n" not in msg and "recorded_inputs.text:" in msg and "16 lowercase hex digits" in msg, msg


def test_a_record_whose_inputs_are_in_no_form_a_run_writes_names_the_entry_and_field(tmp_path):
    text = ("models:\n" + ENTRY + "    expected:\n      G.token-nlp-anisotropic: {verdict: holds, reason: r, "
            "inputs: wikitext-103-validation@zzzz-not-hex}\n")
    with pytest.raises(RegistryError) as err:
        load_registry(write(tmp_path, text))
    msg = str(err.value)
    assert "models[0] (id 'tiny'): expected.G.token-nlp-anisotropic.inputs:" in msg and "zzzz-not-hex" in msg, msg


@pytest.mark.parametrize("identity", ["wikitext-103-validation@fc03b3e11199aebb", "my corpus@0123456789abcdef",
                                      "librispeech-clean-validation@hub", "skimage-data@scikit-image-0.24.0"])
def test_the_identities_runs_write_are_accepted(tmp_path, identity):
    text = f"recorded_inputs: {{text: '{identity}'}}\nmodels:\n" + ENTRY
    assert load_registry(write(tmp_path, text)).recorded_inputs == {"text": identity}
