"""Recorded dataset identities that name a dataset the suite knows by its content with another fingerprint, or a
misspelling of its name: a run names that corpus only by its own fingerprint, so a record on such an identity binds
no run and a stale record passes unseen."""

from __future__ import annotations

import pytest

from aniso.registry.entries import RegistryError, load_registry
from registry_rows import ENTRY

KNOWN = "wikitext-103-validation@fc03b3e11199aebb"


def write(tmp_path, text):
    p = tmp_path / "models.yaml"
    p.write_text(text)
    return p


@pytest.mark.parametrize("identity", ["wikitext-103-validation@fc03b3e11199aebc", "wikitext-103-valid@fc03b3e11199aebb",
                                      "wikitext-103-validation@d39189dd969e5aef"])
def test_a_record_on_a_known_dataset_with_another_fingerprint_or_a_misspelt_name_is_refused(tmp_path, identity):
    text = ("models:\n" + ENTRY + "    expected:\n      G.token-nlp-anisotropic: {verdict: holds, reason: r, "
            f"inputs: '{identity}'}}\n")
    with pytest.raises(RegistryError) as err:
        load_registry(write(tmp_path, text))
    msg = str(err.value)
    assert "\n" not in msg and "models[0] (id 'tiny'): expected.G.token-nlp-anisotropic.inputs:" in msg, msg
    assert identity in msg and KNOWN in msg, msg


@pytest.mark.parametrize("identity", ["wikitext-103-validation@fc03b3e11199aebc", "wikitext-103-valid@fc03b3e11199aebb"])
def test_recorded_inputs_on_a_known_dataset_with_another_identity_are_refused(tmp_path, identity):
    with pytest.raises(RegistryError) as err:
        load_registry(write(tmp_path, f"recorded_inputs: {{text: '{identity}'}}\nmodels:\n" + ENTRY))
    msg = str(err.value)
    assert "\n" not in msg and "recorded_inputs.text:" in msg and KNOWN in msg, msg


@pytest.mark.parametrize("identity", [KNOWN, "wikitext-2-validation@d39189dd969e5aef", "local-corpus@0123456789abcdef",
                                      "caltech101@a2921fd671df40a5", "speech@775c15caaccf17d3"])
def test_known_datasets_with_their_own_fingerprint_and_other_names_are_accepted(tmp_path, identity):
    text = (f"recorded_inputs: {{text: '{identity}'}}\nmodels:\n" + ENTRY + "    expected:\n      "
            f"G.token-nlp-anisotropic: {{verdict: holds, reason: r, inputs: '{identity}'}}\n")
    assert load_registry(write(tmp_path, text)).recorded_inputs == {"text": identity}
