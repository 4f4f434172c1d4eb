"""Model folders, files and texts that were measured as something else, or refused without saying what was there:

- a transformers folder whose weights are named ``weights.safetensors`` (no ``model.safetensors``, no index): said to
  be "not found" as if to install something (``aniso run``: exit 3, "nothing measured"), and imported into the hub
  cache as a snapshot that could never load;
- a BERT config asking for ``position_embedding_type: relative_key``, which the installed transformers does not
  build (absolute positions only): measured as another model than its config describes;
- a folder holding only an ONNX file or a llama2.c checkpoint: "not in a format aniso reads", the file unnamed.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np
import pytest

from aniso.cli import main
from model_folders import copy_folder, edit_config

ROOT = Path(__file__).resolve().parents[2]
TEXTS = ["w1 w2 w3 w4 w5 w6", "w7 w8 w9 w10 w11", "w12 w13 w14 w15 w16 w17", "w18 w19 w20 w21"]


def _measure_refused(model: str, where: str) -> str:
    import aniso
    from aniso.sources import ModelRefused

    with pytest.raises(ModelRefused) as caught:
        aniso.measure(model, TEXTS, progress=False)
    said = str(caught.value)
    assert "\n" not in said and where in said, said
    return said


def _run_refused(folder: Path, quiet_run, capsys) -> str:
    code = main(["run", str(folder), *quiet_run])
    out, err = capsys.readouterr()
    assert code == 2, out[-2000:] + err[-2000:]
    assert "Traceback" not in out + err, err
    return err


def _import_refused(folder: Path, cache: Path, capsys) -> str:
    assert main(["hub", "import", "me/model", str(folder), "--cache-dir", str(cache)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("aniso hub import: "), err
    assert not list(cache.glob("models--*/refs/*")) and not list(cache.glob("models--*/snapshots/*/*"))
    return err


# weights under a name transformers does not read ----------------------------------------------------------------


def test_weights_under_another_name_are_refused_naming_them_by_measure_run_and_import(tiny_bert_dir, tmp_path,
                                                                                    quiet_run, capsys):
    """`weights.safetensors` beside config.json: transformers reads model.safetensors (or an index) only and said
    "no file named model.safetensors", a ModelUnavailable (exit 3, "nothing measured"); the import took it."""
    folder = copy_folder(tiny_bert_dir, tmp_path, "renamed")
    (folder / "model.safetensors").rename(folder / "weights.safetensors")
    said = _measure_refused(str(folder), str(folder))
    assert "weights.safetensors" in said and "model.safetensors.index.json" in said, said
    assert "rename weights.safetensors to model.safetensors" in said, said
    err = _run_refused(folder, quiet_run, capsys)
    assert [line for line in err.splitlines() if "weights.safetensors" in line and str(folder) in line], err
    err = _import_refused(folder, tmp_path / "hub", capsys)
    assert "weights.safetensors" in err and "model.safetensors" in err, err


def test_every_file_that_looks_like_weights_is_named(tiny_bert_dir, tmp_path):
    """Shards without their index, and a pickle beside them: all named, none of them read."""
    from safetensors.torch import load_file, save_file

    folder = copy_folder(tiny_bert_dir, tmp_path, "shards")
    tensors = load_file(folder / "model.safetensors")
    names = sorted(tensors)
    save_file({k: tensors[k] for k in names[:5]}, folder / "model-00001-of-00002.safetensors")
    save_file({k: tensors[k] for k in names[5:]}, folder / "model-00002-of-00002.safetensors")
    (folder / "model.safetensors").unlink()
    (folder / "pytorch_model.bin").write_bytes(b"not read")
    said = _measure_refused(str(folder), str(folder))
    for name in ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "pytorch_model.bin"):
        assert name in said, said
    assert "give its shards their index" in said, said


def test_a_snapshot_imported_with_weights_under_another_name_is_refused_naming_them(tiny_bert_dir, tmp_path,
                                                                                    monkeypatch):
    """A snapshot imported (by an earlier version) with `weights.safetensors` only: "cannot be loaded from it: ...
    Please do not set use_safetensors=True", transformers' advice to its caller; now refused, naming the file and
    the import, since no hub can complete an import."""
    from aniso.sources.hubcache import import_folder

    folder = copy_folder(tiny_bert_dir, tmp_path, "good")
    cache = tmp_path / "hub"
    done = import_folder("me/renamed", folder, cache_dir=cache)
    snapshot = cache / "models--me--renamed" / "snapshots" / done.commit
    (snapshot / "model.safetensors").rename(snapshot / "weights.safetensors")
    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))  # read at import, and by transformers when called
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("ANISO_CACHE_DIR", str(tmp_path / "cache"))
    said = _measure_refused("me/renamed", "me/renamed")
    assert "weights.safetensors" in said and "imported from" in said and "use_safetensors" not in said, said


# a config field the installed transformers does not build -------------------------------------------------------


@pytest.mark.parametrize("value", ["relative_key", "relative_key_query"])
def test_a_relative_position_bert_config_is_refused_by_measure_run_and_import(tiny_bert_dir, tmp_path, quiet_run,
                                                                             capsys, value):
    """transformers 5 builds BERT with absolute positions only and ignores the field: the model measured was not the
    one the config describes (a real relative-key BERT's distance_embedding weights would be dropped)."""
    folder = copy_folder(tiny_bert_dir, tmp_path, "relpos")
    edit_config(folder, position_embedding_type=value)
    said = _measure_refused(str(folder), str(folder))
    assert f"config.json position_embedding_type {value!r}" in said and "'absolute'" in said, said
    err = _run_refused(folder, quiet_run, capsys)
    assert [line for line in err.splitlines() if "position_embedding_type" in line and str(folder) in line], err
    err = _import_refused(folder, tmp_path / "hub", capsys)
    assert f"position_embedding_type {value!r}" in err, err


def test_an_absolute_position_config_and_a_field_the_model_type_builds_are_not_refused():
    from aniso.sources.hub import unread_config_problem

    assert unread_config_problem({"model_type": "bert", "position_embedding_type": "absolute"}) is None
    assert unread_config_problem({"model_type": "esm", "position_embedding_type": "rotary"}) is None
    assert unread_config_problem({"model_type": "bert"}) is None


def test_weights_of_modules_the_config_does_not_build_are_refused(tiny_bert_dir, tmp_path):
    """A relative-key BERT's distance_embedding weights under a config of absolute positions: transformers reports
    them as unexpected and drops them; the load is refused, naming them."""
    import torch
    from safetensors.torch import load_file, save_file

    folder = copy_folder(tiny_bert_dir, tmp_path, "extra")
    tensors = load_file(folder / "model.safetensors")
    tensors["encoder.layer.0.attention.self.distance_embedding.weight"] = torch.zeros(127, 16)
    save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})
    said = _measure_refused(str(folder), str(folder))
    assert "distance_embedding" in said and "modules its config does not build" in said, said


# a folder holding one model file --------------------------------------------------------------------------------


def _llama2c(path: Path, dim=16, hidden=24, layers=2, heads=4, kv_heads=2, vocab=40, seq_len=32) -> None:
    hs = dim // heads
    n = (vocab * dim + layers * dim + layers * dim * dim + 2 * layers * kv_heads * hs * dim + layers * dim * dim
         + layers * dim + 3 * layers * hidden * dim + dim + 2 * seq_len * hs // 2 + vocab * dim)
    path.write_bytes(struct.pack("<7i", dim, hidden, layers, heads, kv_heads, -vocab, seq_len)
                     + (0.3 * np.random.default_rng(0).standard_normal(n)).astype("<f4").tobytes())


def _refused_as_folder(folder: Path, quiet_run, capsys) -> str:
    import aniso

    with pytest.raises(ValueError) as caught:
        aniso.measure(str(folder), TEXTS, progress=False)
    said = str(caught.value)
    assert "\n" not in said, said
    code = main(["run", str(folder), *quiet_run])
    out, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1, out[-2000:] + err
    return said + "\n" + err


def test_a_folder_holding_a_llama2c_checkpoint_names_it(tmp_path, quiet_run, capsys):
    folder = tmp_path / "toktok"
    folder.mkdir()
    _llama2c(folder / "stories.bin")
    (folder / "LICENSE.txt").write_text("MIT")
    for said in _refused_as_folder(folder, quiet_run, capsys).splitlines():
        assert "it holds stories.bin, a llama2.c checkpoint" in said, said
        assert f"give the file itself, not its folder ({folder / 'stories.bin'})" in said, said


def test_a_folder_holding_an_onnx_file_names_it(tmp_path, quiet_run, capsys):
    folder = tmp_path / "onnx"
    folder.mkdir()
    (folder / "net.onnx").write_bytes(b"no graph")
    for said in _refused_as_folder(folder, quiet_run, capsys).splitlines():
        assert "it holds net.onnx, not a readable ONNX file" in said, said
        assert f"({folder / 'net.onnx'})" in said, said


MOBILENET = ROOT.parent / "shared" / "models" / "onnxmodelzoo" / "mobilenetv2-12-int8" / "mobilenetv2-12-int8.onnx"


@pytest.mark.skipif(not MOBILENET.is_file(), reason=f"{MOBILENET} not found")
def test_a_folder_holding_an_onnx_cnn_names_it(tmp_path):
    import aniso

    folder = tmp_path / "folder"
    folder.mkdir()
    os.symlink(MOBILENET, folder / MOBILENET.name)
    with pytest.raises(ValueError, match=r"it holds mobilenetv2-12-int8\.onnx, an ONNX CNN file \(\.onnx\); give the "
                                         r"file itself, not its folder"):
        aniso.measure(str(folder), str(tmp_path), progress=False)


def test_a_folder_of_other_files_is_still_named_as_in_no_format(tmp_path):
    from aniso.sources.detect import UndetectableModel, detect_entry

    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(UndetectableModel, match=r"not in a format aniso reads: a transformers model folder"):
        detect_entry(str(tmp_path))
