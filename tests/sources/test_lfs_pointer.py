"""A folder cloned without git-lfs holds, in place of each large file, a Git LFS pointer (a text of about 130 bytes
naming the object). Its model.safetensors was refused as "not a safetensors file, or truncated: its header claims
2336927755350992246 bytes, the file holds 125" (the pointer's text read as a length); an ONNX file as a protobuf
"DecodeError". Each door now says it is a Git LFS pointer and how to fetch the file."""

from __future__ import annotations

import pytest

from aniso.cli import main
from aniso.common.files import lfs_pointer
from model_folders import copy_folder

POINTER = ("version https://git-lfs.github.com/spec/v1\n"
           "oid sha256:53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db\nsize 90868376\n")
SAID = ("is a Git LFS pointer of a 90,868,376-byte file, not the file itself (a clone made without git-lfs): run git "
        "lfs pull in its repository, or download the file")


def test_a_pointer_is_recognised_and_a_file_is_not(tmp_path):
    (tmp_path / "p").write_text(POINTER)
    (tmp_path / "t").write_text("version 1\n")
    (tmp_path / "big").write_bytes(POINTER.encode() + b"x" * 2000)
    assert lfs_pointer(tmp_path / "p") == SAID
    assert lfs_pointer(tmp_path / "t") is None and lfs_pointer(tmp_path / "big") is None
    assert lfs_pointer(tmp_path) is None and lfs_pointer(tmp_path / "nothing") is None


@pytest.mark.parametrize("argv", [["stats"], ["hub", "import", "me/lfs"]], ids=["stats", "hub import"])
def test_a_folder_whose_weights_are_a_pointer(clean_env, tiny_bert_dir, capsys, argv):
    folder = copy_folder(tiny_bert_dir, clean_env, "lfs")
    (folder / "model.safetensors").write_text(POINTER)
    extra = ["--cache-dir", str(clean_env / "hub")] if argv[0] == "hub" else ["--n-sequences", "8"]
    assert main([*argv, str(folder), *extra]) == 2
    err = capsys.readouterr().err
    assert f"model.safetensors {SAID}" in err and "header claims" not in err, err
    assert len(err.strip().splitlines()) == 1


def test_a_single_file_that_is_a_pointer(clean_env, capsys):
    path = clean_env / "model.onnx"
    path.write_text(POINTER)
    assert main(["stats", str(path), "--n-sequences", "8"]) == 2
    err = capsys.readouterr().err
    assert f"{path} {SAID}" in err and "DecodeError" not in err, err
