"""The Python API and the pytest door: temporary files on SIGTERM, Ctrl-C, settings a model does not read, a folder
of unreadable photographs, fewer inputs than asked, a path-like ``inputs``, ``claims_dir`` named, ``aniso.api`` after
``import aniso``, an in-memory model under a registry id."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODEL = "all-MiniLM-L6-v2"
CLAIM = "G.token-nlp-anisotropic"
TEXTS = ["The cat sat on the mat near the door.", "Anisotropy of hidden states in deep networks.",
         "A third paragraph about the weather in spring.", "Rivers carry water from the hills to the sea."]
#: Texts of the tiny BERT's own words (tests/conftest.py: tiny_bert_dir), four distinct paragraphs.
TINY_TEXTS = [" ".join(f"w{(7 * i + 3 * j) % 40}" for j in range(8)) for i in range(4)]


def _tiny(tiny_bert_dir):
    from transformers import AutoModel, AutoTokenizer

    return AutoModel.from_pretrained(tiny_bert_dir), AutoTokenizer.from_pretrained(tiny_bert_dir)


# -- temporary files on SIGTERM, Ctrl-C ---------------------------------------------------------------------------


def test_sigterm_during_check_removes_the_folder_of_the_texts_given(clean_env, tmp_path):
    """SIGTERM while `aniso.check(M, C, inputs=<texts>)` ran left aniso-check-*/texts-given-as-inputs.txt in
    TMPDIR. (The claims run is replaced by a wait, so that the signal comes while the folder is there.)"""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    ready = tmp_path / "ready"
    script = textwrap.dedent(f"""
        import time, aniso, aniso.api as api
        def waiting(*args, **kwargs):
            open({str(ready)!r}, "w").close()
            time.sleep(60)
        api.run_claims = waiting
        aniso.check({MODEL!r}, {CLAIM!r}, inputs={TEXTS!r}, registry={str(ROOT / 'models.yaml')!r})
    """)
    env = dict(os.environ, TMPDIR=str(tmp))
    proc = subprocess.Popen([sys.executable, "-c", script], env=env, cwd=tmp_path, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not ready.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert ready.exists(), proc.stderr.read().decode()[-2000:] if proc.poll() is not None else "never ready"
        assert any(tmp.iterdir())  # the folder of the texts is there while the run goes on
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == -signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
    assert list(tmp.iterdir()) == []


@pytest.fixture(params=["while pytest collects", "while the test runs"])
def interrupting_claims(tmp_path, request):
    """A claims folder whose one claim test is stopped by Ctrl-C (KeyboardInterrupt), while pytest imports its
    module or while it runs."""
    folder = tmp_path / "claims"
    folder.mkdir()
    on_import = "raise KeyboardInterrupt" if request.param == "while pytest collects" else ""
    # a module name of its own: pytest runs in this process, where a module of the same name may be imported
    (folder / f"test_interrupted_{uuid.uuid4().hex}.py").write_text(textwrap.dedent(f"""
        import pytest
        {on_import}

        @pytest.mark.claim({CLAIM!r})
        def test_stopped():
            raise KeyboardInterrupt
    """))
    return folder


def test_ctrl_c_during_check_is_a_keyboard_interrupt(clean_env, interrupting_claims):
    """Ctrl-C during `aniso.check` became "RuntimeError: the claims run wrote no results (pytest exit code 2) ...;
    run with verbose=True to see why"."""
    import aniso

    with pytest.raises(KeyboardInterrupt) as caught:
        aniso.check(MODEL, CLAIM, inputs=TEXTS, registry=ROOT / "models.yaml", claims_dir=interrupting_claims)
    assert "interrupted (Ctrl-C)" in str(caught.value) and "wrote no results" not in str(caught.value)


def test_ctrl_c_that_pytest_fails_to_report_is_still_a_keyboard_interrupt(clean_env, interrupting_claims, monkeypatch):
    """A real Ctrl-C inside an import (a frame without a line number) made pytest's terminal reporter fail while
    formatting it: "TypeError: unsupported operand type(s) for -: 'NoneType' and 'int'" came out of aniso.check."""
    import _pytest.terminal

    import aniso

    def failing(self, excinfo):
        raise TypeError("unsupported operand type(s) for -: 'NoneType' and 'int'")

    monkeypatch.setattr(_pytest.terminal.TerminalReporter, "pytest_keyboard_interrupt", failing)
    with pytest.raises(KeyboardInterrupt, match="interrupted \\(Ctrl-C\\)"):
        aniso.check(MODEL, CLAIM, inputs=TEXTS, registry=ROOT / "models.yaml", claims_dir=interrupting_claims)


def test_ctrl_c_during_run_claims_is_marked_interrupted(clean_env, interrupting_claims):
    from aniso.api import run_claims

    done = run_claims(MODEL, CLAIM, registry=ROOT / "models.yaml", claims_dir=interrupting_claims)
    assert done.interrupted and done.stopped.startswith("interrupted (Ctrl-C)") and done.exit_code == 2


# -- settings the model does not read ------------------------------------------------------------------------------


def test_measure_refuses_a_setting_of_inputs_the_model_does_not_read(clean_env, tmp_path, tiny_bert_dir):
    """`measure(<vision model>, settings={"corpus": ...})` and `measure(<speech model>, settings={"n_sequences":
    5})` measured, the setting silently ignored."""
    import aniso

    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(TEXTS) + "\n")
    with pytest.raises(ValueError) as caught:
        aniso.measure("efficientnet-lite0", settings={"corpus": str(corpus)}, progress=False)
    said = str(caught.value)
    assert said.startswith("settings['corpus']: setting corpus") and "efficientnet-lite0 (a vision model)" in said
    assert "setting image_dir (ANISO_IMAGE_DIR)" in said and "\n" not in said, said
    with pytest.raises(ValueError) as caught:
        aniso.measure("whisper-tiny.en", settings={"n_sequences": 5}, progress=False)
    said = str(caught.value)
    assert said.startswith("settings['n_sequences']: setting n_sequences") and "(a speech model)" in said
    assert "setting n_clips (ANISO_N_CLIPS)" in said, said
    model, tok = _tiny(tiny_bert_dir)
    with pytest.raises(ValueError) as caught:
        aniso.measure(model, TEXTS, tokenizer=tok, settings={"n_images": 4}, progress=False)
    assert str(caught.value).startswith("settings['n_images']: setting n_images") and "setting n_sequences" in \
        str(caught.value)


def test_run_claims_refuses_a_pytest_option_of_inputs_the_model_does_not_read(clean_env):
    from aniso.api import run_claims

    with pytest.raises(ValueError) as caught:
        run_claims("efficientnet-lite0", "G.cnn-mostly-isotropic", registry=ROOT / "models.yaml",
                   pytest_args=["--aniso-n-sequences", "8"])
    said = str(caught.value)
    assert said.startswith("the pytest option --aniso-n-sequences 8: setting n_sequences") and "n_images" in said


def test_pytest_claims_refuses_an_option_no_model_of_the_run_reads(clean_env):
    """`pytest claims/ --aniso-models efficientnet-lite0 --aniso-n-sequences 8` collected, the option ignored."""
    run = subprocess.run([sys.executable, "-m", "pytest", str(ROOT / "claims"), "--co", "-q", "-p", "no:cacheprovider",
                          "--aniso-models", "efficientnet-lite0", "--aniso-n-sequences", "8"],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    said = run.stdout + run.stderr
    assert run.returncode == 4, said[-3000:]
    line = next(x for x in said.splitlines() if "--aniso-n-sequences 8" in x)
    assert "efficientnet-lite0 (a vision model)" in line and "setting n_images" in line, line


def test_a_setting_each_model_reads_passes():
    from aniso.extract.modalities import unread_inputs_setting
    from aniso.registry.locate import open_registry

    reg = open_registry(ROOT / "models.yaml")
    both = [reg.get(MODEL), reg.get("efficientnet-lite0")]
    assert unread_inputs_setting({"n_sequences": "x", "n_images": "y", "seed": "z"}, both) is None
    assert unread_inputs_setting({"n_clips": "x"}, both).startswith("x: setting n_clips")


# -- inputs -------------------------------------------------------------------------------------------------------


def test_a_folder_of_only_unreadable_photographs_names_inputs_in_a_short_line(clean_env, tmp_path):
    """B04: InputsMissing named `image_dir:` (never set) and listed every file in a line of ~1,300 characters."""
    import aniso
    from aniso.sources import InputsMissing

    folder = tmp_path / "allbad"
    folder.mkdir()
    for i in range(6):
        (folder / f"r{i}.jpg").write_bytes(os.urandom(200))
    with warnings.catch_warnings(), pytest.raises(InputsMissing) as caught:
        warnings.simplefilter("ignore")
        aniso.measure("efficientnet-lite0", folder, progress=False)
    said = str(caught.value)
    assert said.startswith(f"efficientnet-lite0: inputs ({folder}): no usable photograph among the 6"), said
    assert "image_dir" not in said and "6 cannot be used" in said and "and 4 more" in said, said
    assert said.count("cannot identify") == 2 and len(said) < 800 and "\n" not in said, said


def test_fewer_inputs_than_asked_are_said(clean_env, tmp_path, tiny_bert_dir):
    """B06: `measure(<cnn>, <folder of 2 photographs>, n_inputs=8)` measured without a word (each layer's avg cos
    one cosine). The same holds of a corpus file of fewer paragraphs than asked."""
    import aniso

    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(TINY_TEXTS) + "\n")
    model, tok = _tiny(tiny_bert_dir)
    with pytest.warns(RuntimeWarning) as said:
        aniso.measure(model, corpus, tokenizer=tok, n_inputs=8, progress=False)
    lines = [str(w.message) for w in said if str(w.message).startswith("n_inputs:")]
    assert lines and lines[0].startswith(f"n_inputs: 8 asked, but {corpus} gave only 4 of them; measured on 4"), lines
    with warnings.catch_warnings(record=True) as caught:  # (other warnings, e.g. TwoNN's NaN column, may come)
        warnings.simplefilter("always")
        aniso.measure(model, corpus, tokenizer=tok, n_inputs=4, progress=False)
    assert not [str(w.message) for w in caught if str(w.message).startswith("n_inputs:")]


def test_a_path_like_inputs_is_taken_as_its_path(clean_env, tmp_path, tiny_bert_dir):
    """B14: an os.PathLike naming a corpus file was refused as the wrong type."""
    import aniso

    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(TINY_TEXTS) + "\n")

    class P:
        def __fspath__(self):
            return str(corpus)

    model, tok = _tiny(tiny_bert_dir)
    got = aniso.measure(model, P(), tokenizer=tok, n_inputs=3, progress=False)
    want = aniso.measure(model, str(corpus), tokenizer=tok, n_inputs=3, progress=False)
    assert got.series("avg_cos").tolist() == want.series("avg_cos").tolist()

    class B:
        def __fspath__(self):
            return b"c.txt"

    with pytest.raises(TypeError, match="^inputs: a path of bytes"):
        aniso.measure(model, B(), tokenizer=tok, progress=False)


# -- arguments ----------------------------------------------------------------------------------------------------


def test_run_claims_names_claims_dir(clean_env):
    """B54: `run_claims(claims_dir="/nonexistent")` said "(give --claims-dir)"."""
    from aniso.api import run_claims

    with pytest.raises(ValueError) as caught:
        run_claims(MODEL, CLAIM, registry=ROOT / "models.yaml", claims_dir="/nonexistent/claims")
    said = str(caught.value)
    assert said.startswith("claims_dir: /nonexistent/claims is not a folder") and "--claims-dir" not in said, said


def test_import_aniso_gives_the_api_submodule_and_the_claims_runs():
    """B92: in a fresh Python, `aniso.api.run_twins` and `aniso.run_claims` raised AttributeError."""
    code = ("import aniso; assert aniso.api.run_twins and aniso.run_claims and aniso.run_twins and aniso.ClaimsRun "
            "and aniso.RUN_EXIT_CODES; assert 'api' in dir(aniso); print('ok')")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-2000:]


def test_an_in_memory_model_under_a_registry_id_is_refused(clean_env, tiny_bert_dir):
    """B95: a random-weight model measured with name="all-MiniLM-L6-v2" was labelled with that registry id."""
    import aniso

    model, tok = _tiny(tiny_bert_dir)
    with pytest.raises(ValueError) as caught:
        aniso.measure(model, TINY_TEXTS, tokenizer=tok, name=MODEL, registry=ROOT / "models.yaml", progress=False)
    said = str(caught.value)
    assert said.startswith(f"name: {MODEL!r} is the id of a row of the registry") and "\n" not in said, said
    assert aniso.measure(model, TINY_TEXTS, tokenizer=tok, name="my-tiny", progress=False).model_id == "my-tiny"
