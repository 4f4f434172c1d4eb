"""The Python API: numpy booleans taken as booleans, an empty path and texts that are no Unicode refused naming
``inputs``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import aniso
from aniso.common.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = ROOT / "models.yaml"
MODEL = "all-MiniLM-L6-v2"


def _one_line(info) -> str:
    msg = str(info.value)
    assert "\n" not in msg, msg
    return msg


# -- numpy booleans --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("flag", [np.False_, np.bool_(False), np.array([True, False])[1]])
def test_a_numpy_bool_is_a_bool_to_the_api(flag):
    """``aniso.claims(as_frame=np.False_)`` was refused as "np.False_ (bool); give True or False"."""
    assert isinstance(aniso.claims(as_frame=flag), list)
    assert isinstance(aniso.models(REGISTRY, as_frame=flag, settings={"device": "cpu"}), list)
    assert type(aniso.claims(as_frame=np.True_)).__name__ == "DataFrame"


def test_check_and_measure_take_numpy_bools_for_verbose_and_progress(clean_env):
    """The flag is accepted and the call goes on to its next check (here a claim id and a model that do not exist),
    rather than stopping at "verbose: np.False_ (bool)"."""
    with pytest.raises(ValueError) as info:
        aniso.check(MODEL, "G.no-such-claim", registry=REGISTRY, verbose=np.False_)
    assert _one_line(info).startswith("claims: 'G.no-such-claim'")
    with pytest.raises(ValueError) as info:
        aniso.measure("no-such-model-anywhere", ["one text", "another"], registry=REGISTRY, progress=np.False_)
    assert _one_line(info).startswith("model 'no-such-model-anywhere': no registry id")


@pytest.mark.parametrize("value, shown", [
    (np.int64(1), "np.int64(1) (numpy.int64)"), (1, "1 (int)"), ("no", "'no' (str)"), (None, "None (NoneType)"),
    (np.array([True]), "(numpy.ndarray)"),
])
def test_a_value_that_is_no_bool_is_refused_naming_its_type(value, shown):
    with pytest.raises(TypeError) as info:
        aniso.claims(as_frame=value)
    msg = _one_line(info)
    assert msg.startswith("as_frame: ") and shown in msg and msg.endswith("give True or False"), msg


def test_settings_take_numpy_bools_and_integers_and_name_numpy_types_as_such(clean_env):
    s = Settings.from_sources({"no_cache": np.True_, "seed": np.int64(3), "device": "cpu"}, environ={})
    assert s.no_cache is True and type(s.seed) is int and s.seed == 3
    with pytest.raises(TypeError) as info:
        Settings.from_sources({"no_cache": np.float64(1.0), "device": "cpu"}, environ={})
    assert "got np.float64(1.0) (numpy.float64)" in _one_line(info)


def test_type_names_and_numpy_bools():
    from aniso.common.settings import numpy_bool, type_name

    assert [type_name(v) for v in (True, "x", np.True_, np.int64(1), Path("x"))] == [
        "bool", "str", "numpy.bool", "numpy.int64", "pathlib.PosixPath"]
    assert numpy_bool(np.True_) and numpy_bool(np.array([1, 0], dtype=bool)[0])
    assert not numpy_bool(True) and not numpy_bool(1) and not numpy_bool(np.int8(1))


# -- an empty path ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("inputs", ["", "   ", "\t\n"])
def test_an_empty_path_is_refused_naming_inputs_not_read_as_the_working_folder(clean_env, inputs):
    """``aniso.measure(M, inputs='')`` said "inputs: . is a folder" (the empty text read as the working folder)."""
    for call in (lambda: aniso.measure(MODEL, inputs, registry=REGISTRY, progress=False),
                 lambda: aniso.check(MODEL, "G.token-nlp-anisotropic", inputs, registry=REGISTRY)):
        with pytest.raises(ValueError) as info:
            call()
        msg = _one_line(info)
        assert msg.startswith(f"inputs: an empty path ({inputs!r})") and " . " not in msg, msg


def test_an_empty_path_is_refused_for_an_in_memory_model_too():
    from transformers import BertConfig, BertModel

    model = BertModel(BertConfig(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16,
                                 vocab_size=64, max_position_embeddings=32))
    with pytest.raises(ValueError) as info:
        aniso.measure(model, "", tokenizer=lambda *a, **k: None, progress=False)
    assert _one_line(info).startswith("inputs: an empty path ('')")


# -- texts and file names that are no UTF-8 --------------------------------------------------------------------------

TEXTS = ["The first paragraph of the texts, long enough to be one.", "A second paragraph, about something else."]


def test_a_text_with_a_lone_surrogate_is_refused_naming_the_item_and_the_position(clean_env):
    """``aniso.measure(M, [..., 'abc\\ud800def'])`` raised a bare UnicodeEncodeError from the tokenizer."""
    texts = TEXTS + ["abc\ud800def"]
    for call in (lambda: aniso.measure(MODEL, texts, registry=REGISTRY, progress=False),
                 lambda: aniso.check(MODEL, "G.token-nlp-anisotropic", texts, registry=REGISTRY)):
        with pytest.raises(ValueError) as info:
            call()
        msg = _one_line(info)
        assert msg.startswith("inputs[2]: a lone surrogate '\\ud800' at position 3"), msg
        msg.encode("utf-8", "backslashreplace")  # printable


def _odd_name(folder: Path) -> Path:
    """A corpus file in ``folder`` whose name holds the byte 0xff, which is no UTF-8 (Python reads it as the
    surrogate '\\udcff')."""
    import os

    path = Path(os.fsdecode(os.fsencode(str(folder)) + b"/corp\xffus.txt"))
    path.write_text("\n".join(TEXTS * 3) + "\n", encoding="utf-8")
    return path


def test_a_corpus_file_whose_name_is_no_utf8_is_refused_before_anything_is_measured(clean_env):
    """It was measured, then the run failed writing its cache entry (UnicodeEncodeError), losing the measurement."""
    path = _odd_name(clean_env)
    with pytest.raises(ValueError) as info:
        aniso.measure(MODEL, path, registry=REGISTRY, progress=False, n_inputs=2)
    msg = _one_line(info)
    assert msg.startswith("inputs: the path ") and "'\\udcff'" in msg and "(setting corpus)" in msg, msg
    assert not any((clean_env / "cache").rglob("*.json"))  # nothing computed to lose


def test_the_command_line_names_the_setting_for_such_a_corpus_and_for_one_that_is_no_utf8(clean_env, monkeypatch,
                                                                                          capsys):
    from aniso.cli import main

    monkeypatch.setenv("ANISO_CORPUS", str(_odd_name(clean_env)))
    assert main(["stats", MODEL, "--registry", str(REGISTRY)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("aniso stats: setting corpus (ANISO_CORPUS"), err
    assert "no UTF-8 text" in err and "rename it" in err, err
    latin1 = clean_env / "latin1.txt"
    latin1.write_bytes("\n".join(TEXTS).encode() + "\ncaf\xe9 au lait, a paragraph in Latin-1\n".encode("latin-1"))
    monkeypatch.setenv("ANISO_CORPUS", str(latin1))
    assert main(["stats", MODEL, "--registry", str(REGISTRY)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "ANISO_CORPUS" in err and "is not UTF-8 text" in err, err
