"""A hub id "not cached here" says what the cache holds and where it looked: the cache folder and the variable that
named it (or that a variable set after huggingface_hub was imported is not read), a cached id that differs only in
case, a snapshot whose ``refs/`` file is gone; and a ``local`` row whose path is a file says so."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import aniso

COMMIT = "945efccc1363df69ae5b7afb12ebd486a317787a"
TEXTS = ["The cat sat on the mat.", "A dog ran in the park.", "Rain fell all day long."]


@pytest.fixture
def hub(one_snapshot_hub):
    """A hub cache holding me/plain at main only; offline (see ``one_snapshot_hub``)."""
    return one_snapshot_hub("me/plain", "main", COMMIT)


def _refusal(model: str) -> str:
    with pytest.raises(ValueError) as caught:
        aniso.measure(model, TEXTS, progress=False)
    said = str(caught.value)
    assert "\n" not in said and f"{model}: not cached here" in said, said
    return said


def test_a_hub_id_differing_from_a_cached_one_only_in_case_is_suggested(hub):
    said = _refusal("me/PLAIN")
    assert f"looked in the hub cache {hub} (set by HF_HUB_CACHE)" in said, said
    assert "did you mean 'me/plain', which the cache holds?" in said, said


def test_a_snapshot_without_its_refs_file_is_named_with_what_to_do(hub, aniso_cli):
    import shutil

    shutil.rmtree(hub / "models--me--plain" / "refs")
    said = _refusal("me/plain")
    assert f"it holds snapshot {COMMIT} of me/plain, but no refs/main names a commit" in said, said
    assert "aniso hub import me/plain FOLDER" in said and str(hub / "models--me--plain" / "refs" / "main") in said
    code, out, _ = aniso_cli(["hub", "list", "--all", "--cache-dir", str(hub)])
    line = next((l for l in out.splitlines() if "me/plain" in l), "")
    assert code == 0 and COMMIT in line and "a snapshot no refs/ file names" in line, out


def test_a_hub_cache_variable_set_after_huggingface_hub_read_it_is_named(hub, monkeypatch, tmp_path):
    """HF_HUB_CACHE set in os.environ after `import aniso` (a notebook): the message named no folder."""
    from huggingface_hub import constants

    fixed = tmp_path / "fixed-at-import"
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(fixed))
    said = _refusal("me/plain")
    assert f"looked in the hub cache {fixed} (fixed when huggingface_hub was first imported" in said, said
    assert f"HF_HUB_CACHE now names {hub}, set after that, so it is not read" in said, said


def test_a_hub_row_not_cached_names_the_cache_and_its_variable(hub):
    from aniso.registry.entries import ModelEntry
    from aniso.sources import ModelUnavailable, load_model

    row = ModelEntry.model_validate({"id": "other", "source": {"kind": "hub", "repo": "me/other"},
                                     "modality": "text", "granularity": "subword", "architecture": "transformer",
                                     "role": "encoder", "family": "bert"})
    with pytest.raises(ModelUnavailable) as caught:
        load_model(row)
    assert f"looked in the hub cache {hub} (set by HF_HUB_CACHE)" in str(caught.value), str(caught.value)


def _local_row(tmp_path: Path, path: Path) -> Path:
    reg = tmp_path / "models.yaml"
    reg.write_text(f"models:\n  - id: mini\n    source: {{kind: local, path: '{path}'}}\n    modality: text\n"
                   "    granularity: subword\n    architecture: transformer\n    role: encoder\n    family: bert\n",
                   encoding="utf-8")
    return reg


def test_a_local_row_whose_path_is_a_model_file_says_it_is_a_file_and_gives_its_folder(clean_env):
    folder = clean_env / "plain"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "bert"}), encoding="utf-8")
    weights = folder / "model.safetensors"
    weights.write_bytes(b"\0" * 16)
    with pytest.raises(Exception) as caught:
        aniso.measure("mini", TEXTS, registry=str(_local_row(clean_env, weights)), progress=False)
    said = str(caught.value)
    assert type(caught.value).__name__ == "ModelUnavailable", said
    assert said == (f"mini: local model directory {weights} is a file, not a folder (source kind local reads a "
                    f"transformers model folder, with config.json); give its folder, path: {folder}")


def test_a_local_row_whose_path_is_another_file_says_it_is_a_file(clean_env):
    other = clean_env / "notes.txt"
    other.write_text("x", encoding="utf-8")
    with pytest.raises(Exception) as caught:
        aniso.measure("mini", TEXTS, registry=str(_local_row(clean_env, other)), progress=False)
    assert str(caught.value).startswith(f"mini: local model directory {other} is a file, not a folder"), \
        str(caught.value)
    assert os.path.exists(other)


def test_a_local_row_whose_path_is_a_file_another_kind_reads_names_that_kind(clean_env):
    onnx = clean_env / "bad.onnx"
    onnx.write_bytes(b"not a protobuf")
    with pytest.raises(Exception) as caught:
        aniso.measure("mini", TEXTS, registry=str(_local_row(clean_env, onnx)), progress=False)
    said = str(caught.value)
    assert said.startswith(f"mini: local model directory {onnx} is a file, not a folder"), said
    assert "source kind onnx reads files of its format, but" in said and "\n" not in said, said


def test_a_local_row_whose_path_ends_with_a_blank_shows_it_quoted_and_names_the_folder_without_it(clean_env):
    """`path: '/w/minilm '` (pasted with a trailing space) was said as "local model directory /w/minilm  does not
    exist", the blank that makes it another path unseen, while /w/minilm is there."""
    folder = clean_env / "minilm"
    folder.mkdir()
    with pytest.raises(Exception) as caught:
        aniso.measure("mini", TEXTS, registry=str(_local_row(clean_env, Path(f"{folder} "))), progress=False)
    said = str(caught.value)
    assert type(caught.value).__name__ == "ModelUnavailable", said
    assert said == (f"mini: local model directory {str(folder) + ' '!r} does not exist; {folder}, without the "
                    "blanks around it, is a folder: write source.path without them")


def test_a_hub_cache_variable_naming_a_file_is_said_at_every_door(clean_env, monkeypatch, aniso_cli):
    """HF_HUB_CACHE naming a file: `aniso stats` said the row was "not cached here" (and to `aniso hub import` it),
    `aniso list models` said "hub: not cached here", while `aniso hub list`/`import` said it is a file."""
    file = clean_env / "hcfile"
    file.write_text("x", encoding="utf-8")
    monkeypatch.setenv("HF_HUB_CACHE", str(file))
    reg = clean_env / "models.yaml"
    reg.write_text("models:\n  - id: mini-hub\n    source: {kind: hub, repo: me/mini, revision: main}\n"
                   "    modality: text\n    granularity: subword\n    architecture: transformer\n    role: encoder\n"
                   "    family: bert\n", encoding="utf-8")
    named = (f"environment variable HF_HUB_CACHE ({file}): {file} cannot be the hub cache: {file} is a file, not a "
             "folder")
    code, out, err = aniso_cli(["stats", "mini-hub", "--registry", str(reg), "--n-sequences", "16"])
    assert code == 2 and named in err and "not cached here" not in err, err
    code, out, err = aniso_cli(["list", "models", "--registry", str(reg)])
    squeezed = "".join(out.split())  # (the table wraps its cells)
    assert code == 0 and "".join(named.split()) in squeezed and "notcachedhere" not in squeezed, out
    code, out, err = aniso_cli(["hub", "list"])
    assert code == 2 and named in err, err
