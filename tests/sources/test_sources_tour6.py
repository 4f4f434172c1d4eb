"""Model files that are no regular file (a symbolic link to /dev/zero, a FIFO, a folder named tokenizer.json) are
refused in one line naming the file, exit 2, before anything opens them: hashing a device never ends and opening a
FIFO blocks. Through `aniso run FOLDER`, `aniso hub import`, the package source and the hashing helpers."""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

import pytest

from aniso.cli import main

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not os.path.exists("/dev/zero") or not hasattr(os, "mkfifo"),
                                reason="needs /dev/zero and FIFOs")


@pytest.fixture
def no_hang():
    """Fails the test after 120 s instead of letting a blocked open of a FIFO or an endless read of /dev/zero hang
    the suite (the alarm interrupts both)."""
    def hung(signum, frame):
        raise AssertionError("no answer in 120 s: a FIFO or a device was opened")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(120)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def _zero_link(path: Path) -> str:
    path.unlink(missing_ok=True)
    path.symlink_to("/dev/zero")
    return f"{path.name} (a symbolic link to /dev/zero) is a device, not a regular file"


def _fifo(path: Path) -> str:
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    return f"{path.name} is a FIFO or pipe, not a regular file"


def _folder(path: Path) -> str:
    path.unlink(missing_ok=True)
    path.mkdir()
    return f"{path.name} is a folder, not a file"


FAULTS = {
    "weights-link-to-dev-zero": ("model.safetensors", _zero_link),
    "weights-fifo": ("model.safetensors", _fifo),
    "tokenizer-json-folder": ("tokenizer.json", _folder),
    "tokenizer-config-folder": ("tokenizer_config.json", _folder),
    "special-tokens-fifo": ("special_tokens_map.json", _fifo),
    "config-link-to-dev-zero": ("config.json", _zero_link),
    "config-fifo": ("config.json", _fifo),
}


def _faulty(tiny_bert_dir: Path, tmp_path: Path, fault: str) -> tuple[Path, str]:
    folder = tmp_path / f"bert-{fault}"
    shutil.copytree(tiny_bert_dir, folder)
    name, make = FAULTS[fault]
    return folder, make(folder / name)


@pytest.mark.parametrize("fault", FAULTS)
def test_aniso_run_refuses_a_model_file_that_is_no_regular_file_naming_it(fault, tiny_bert_dir, clean_env, no_hang,
                                                                          capsys):
    folder, what = _faulty(tiny_bert_dir, clean_env, fault)
    code = main(["run", str(folder), "--registry", str(ROOT / "models.yaml"), "--claims", "G.token-nlp-anisotropic",
                 "--", "--aniso-n-sequences", "8", "--aniso-max-length", "16", "--aniso-n-bootstrap", "0"])
    out, err = capsys.readouterr()
    assert code == 2, out[-2000:] + err[-2000:]
    line = next(line for line in err.splitlines() if what in line)
    assert str(folder) in line and "Traceback" not in out + err and "IsADirectoryError" not in out + err, err


@pytest.mark.parametrize("fault", ["weights-link-to-dev-zero", "weights-fifo", "tokenizer-json-folder"])
def test_hub_import_refuses_a_model_file_that_is_no_regular_file_naming_it(fault, tiny_bert_dir, tmp_path, no_hang,
                                                                           capsys):
    folder, what = _faulty(tiny_bert_dir, tmp_path, fault)
    cache = tmp_path / "hub"
    code = main(["hub", "import", "org/tiny", str(folder), "--cache-dir", str(cache)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith(f"aniso hub import: {folder}: {what}"), err
    assert not cache.exists() or not any(cache.rglob("*.safetensors"))


def test_the_package_source_refuses_a_model_file_that_is_no_regular_file(tiny_bert_dir, tmp_path, monkeypatch,
                                                                         no_hang):
    from aniso.registry.entries import ModelEntry
    from aniso.sources import ModelRefused, source_fingerprint

    package = tmp_path / "site" / "tiny_pkg_fifo"
    shutil.copytree(tiny_bert_dir, package / "model")
    (package / "__init__.py").write_text("")
    what = _fifo(package / "model" / "model.safetensors")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    entry = ModelEntry.model_validate(dict(
        id="tiny-pkg", modality="text", granularity="subword", architecture="transformer", role="encoder",
        family="bert", source=dict(kind="package", package="tiny_pkg_fifo", subdir="model",
                                   format="transformers", sha256="0" * 64)))
    with pytest.raises(ModelRefused) as caught:
        source_fingerprint(entry, None)
    assert str(caught.value).startswith("tiny-pkg: ") and what in str(caught.value), caught.value


def test_the_model_file_check_passes_a_folder_of_regular_files_and_names_the_first_other(tiny_bert_dir, tmp_path):
    from aniso.sources.hubcache import unreadable_model_file

    assert unreadable_model_file(tiny_bert_dir) is None
    folder, what = _faulty(tiny_bert_dir, tmp_path, "weights-fifo")
    (folder / "notes.md").symlink_to("/dev/zero")  # not a model file: not read, not refused
    assert unreadable_model_file(folder) == what + " (it would block or be read once only); save it to a file"


@pytest.mark.parametrize("make", [_zero_link, _fifo, _folder], ids=["dev-zero", "fifo", "folder"])
def test_hashing_refuses_a_file_that_is_no_regular_file_before_opening_it(make, tmp_path, no_hang):
    from aniso.common.files import hash_files, sha256_file

    path = tmp_path / "weights.bin"
    path.write_bytes(b"x")
    make(path)
    for hashing in (lambda: sha256_file(path), lambda: hash_files([path])):
        with pytest.raises(OSError, match=f"^{path} is a"):
            hashing()


@pytest.mark.parametrize("make", [_zero_link, _fifo], ids=["dev-zero", "fifo"])
def test_aniso_run_of_a_model_file_that_is_no_regular_file_names_it(make, clean_env, no_hang, capsys):
    path = clean_env / "model.onnx"
    path.write_bytes(b"x")
    what = make(path).removeprefix("model.onnx")
    code = main(["run", str(path), "--registry", str(ROOT / "models.yaml"), "--claims", "G.token-nlp-anisotropic"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith(f"aniso run: {path}{what}"), err


@pytest.mark.parametrize("fault", ["config-fifo", "weights-link-to-dev-zero", "tokenizer-json-folder"])
def test_loading_a_local_model_refuses_a_file_that_is_no_regular_file(fault, tiny_bert_dir, tmp_path, no_hang):
    """The Python API's door: loading without the fingerprint first (whose check the runs pass through)."""
    from aniso.registry.entries import ModelEntry
    from aniso.sources import ModelRefused, load_model

    folder, what = _faulty(tiny_bert_dir, tmp_path, fault)
    entry = ModelEntry.model_validate(dict(id="tiny", modality="text", granularity="subword",
                                           architecture="transformer", role="encoder", family="bert",
                                           source=dict(kind="local", path=str(folder))))
    with pytest.raises(ModelRefused) as caught:
        load_model(entry, None)
    assert str(caught.value).startswith(f"tiny: {folder}: {what}"), caught.value
