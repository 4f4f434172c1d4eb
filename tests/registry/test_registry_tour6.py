"""Registry files a run would misread: recorded inputs in no form a run writes, mapping keys that are lists."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from aniso.registry.entries import RegistryError, load_registry
from registry_rows import ENTRY


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


@pytest.mark.parametrize("key", ["? [a, b]\n    : x\n", "? {a: 1}\n    : x\n", "[a, b]: x\n"])
def test_a_mapping_key_that_is_a_list_or_mapping_is_one_line_naming_the_file_and_line(tmp_path, key):
    """A complex YAML key (``? [a, b] : x``) is no field name: one line naming the file and the line, not
    ``TypeError: unhashable type``."""
    path = write(tmp_path, "models:\n" + ENTRY + "    " + key)
    with pytest.raises(RegistryError) as err:
        load_registry(path)
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith(f"{path}: not valid YAML at line 9"), msg


def test_a_complex_key_is_one_line_through_every_door(tmp_path, capsys, clean_env, monkeypatch):
    """``aniso list``, the Python API and ``pytest claims/`` (a usage error, not INTERNALERROR) all name the file."""
    import aniso
    from aniso.cli import main

    path = write(tmp_path, "models:\n" + ENTRY + "    ? [a, b]\n    : x\n")
    assert main(["list", "models", "--registry", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and f"{path}: not valid YAML at line 9" in err, err
    with pytest.raises(RegistryError, match="not valid YAML at line 9"):
        aniso.models(registry=path)
    import subprocess
    import sys

    from aniso.registry.claimtests import SOURCE_TREE as _TREE

    monkeypatch.setenv("ANISO_REGISTRY", str(path))
    run = subprocess.run([sys.executable, "-m", "pytest", str(_TREE / "claims"), "-p", "no:cacheprovider", "-q",
                          "--collect-only"], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    out = run.stdout + run.stderr
    assert run.returncode == 4 and "INTERNALERROR" not in out and "not valid YAML at line 9" in out, out


@settings(max_examples=50, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=20), min_size=1, max_size=5),
       st.sampled_from(["wikitext-103-validation", "local-corpus", "texts", "my photos"]))
def test_every_identity_a_corpus_is_given_is_a_recorded_identity_the_registry_takes(paragraphs, name):
    """Whatever the text, the identity a run writes for it (``name@`` and its fingerprint) is accepted as recorded
    inputs, so a record written from a run always binds that run."""
    import re

    from aniso.inputs.text import _fingerprint
    from aniso.registry.entries import _INPUTS

    assert re.fullmatch(_INPUTS, f"{name}@{_fingerprint(paragraphs)}")


@pytest.mark.parametrize("vary, steps, said", [
    ({"revision": "main"}, [0, 16, 128], r"steps 0 and 16 name the same checkpoint \(revision 'main'\)"),
    ({"revision": "step{kstep}k"}, [0, 1500, 1900], r"steps 1500 and 1900 name the same checkpoint"),
    ({"revision": "step{stepp}"}, [0, 16], r"holds the placeholder \{stepp\}; a template may hold \{step\} and"),
    ({"revision": "step{0}"}, [0, 16], r"holds the placeholder \{0\}"),
    ({"revision": "step{step"}, [0, 16], r"'step\{step' is no template"),
])
def test_checkpoint_templates_that_name_no_step_or_one_checkpoint_twice_are_refused(vary, steps, said):
    """A checkpoint series whose `vary` names the same revision for two steps read one model as two checkpoints;
    an unknown placeholder was a KeyError traceback in the run."""
    from aniso.registry.entries import CheckpointSeries

    with pytest.raises(ValueError, match=said):
        CheckpointSeries(steps=steps, vary=vary)
    assert CheckpointSeries(steps=[0, 1000, 2000], vary={"revision": "step{kstep}k"}).source_fields(2000) == {
        "revision": "step2k"}
