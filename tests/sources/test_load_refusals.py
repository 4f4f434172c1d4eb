"""Loading refuses what it cannot load faithfully, in one line naming the folder and what is wrong, exit 2, through
`aniso run` (and `aniso hub import` for what it imports). The fixtures are copies of a twin of bert-base-uncased
(:mod:`aniso.sources.twin`: BERT's own classes, WordPiece vocabulary, random weights), each with one fault:

- no tokenizer files (transformers would build a tokenizer of a few tokens, every word unknown);
- a config naming more layers than the weights hold (randomly initialised layers), or fewer (weights left unread);
- a truncated or random ``model.safetensors``;
- a head count that does not divide the width; a ``config.json`` that is a JSON list;
- weights that are a symbolic link to nothing; a ``tokenizer.json`` that is not JSON; a WordPiece ``vocab.txt`` that
  is empty or lacks the unknown-word token;
- `aniso hub import` of a malformed hub id (``../evil``) or of a truncated weights file.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from aniso.cli import main
from aniso.registry.entries import load_registry
from aniso.sources.twin import twin_folders

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def twin(tmp_path_factory) -> Path:
    from aniso.inputs.text import load_corpus

    texts = load_corpus(None, 128, 0).sequences
    entry = load_registry(ROOT / "models.yaml").get("bert-base-uncased")
    return twin_folders(entry, tmp_path_factory.mktemp("twin"), texts)[0].folder


def _config(folder: Path, **changes) -> None:
    path = folder / "config.json"
    path.write_text(json.dumps(json.loads(path.read_text()) | changes))


def _no_tokenizer(folder: Path) -> None:
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        (folder / name).unlink(missing_ok=True)


def _truncated(folder: Path) -> None:
    path = folder / "model.safetensors"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _random(folder: Path) -> None:
    path = folder / "model.safetensors"
    path.write_bytes(os.urandom(path.stat().st_size))


def _dangling_weights(folder: Path) -> None:
    path = folder / "model.safetensors"
    path.unlink()
    path.symlink_to(folder.parent / f"{folder.name}-moved.safetensors")  # a link to nothing


def _wordpiece_only(folder: Path, vocabulary: str) -> None:
    (folder / "tokenizer.json").unlink(missing_ok=True)  # transformers then reads vocab.txt
    (folder / "vocab.txt").write_text(vocabulary, encoding="utf-8")


FAULTS = {
    "no-tokenizer": (_no_tokenizer, "no tokenizer files"),
    "more-layers": (lambda f: _config(f, num_hidden_layers=3), "would be randomly initialised"),
    "fewer-layers": (lambda f: _config(f, num_hidden_layers=1), "modules its config does not build"),
    "truncated": (_truncated, "model.safetensors: truncated"),
    "random": (_random, "model.safetensors: not a safetensors file"),
    "heads": (lambda f: _config(f, num_attention_heads=5), "cannot be built from its config.json"),
    "json-list": (lambda f: (f / "config.json").write_text("[1, 2]"), "config.json holds a JSON list"),
    # a field of the wrong type: huggingface_hub's strict-dataclass error (not a ValueError), named with the field
    "wrong-type": (lambda f: _config(f, num_hidden_layers="six"), "Field 'num_hidden_layers' expected int"),
    # weights that are a symbolic link to a file moved away: named with its target, not a FileNotFoundError
    "dangling-weights": (_dangling_weights, "model.safetensors is a symbolic link to "),
    # preprocessing files that transformers cannot read: named, not a bare JSONDecodeError / WordPiece error
    "tokenizer-json": (lambda f: (f / "tokenizer.json").write_text('{"version": \n'),
                       "tokenizer.json is not valid JSON (Expecting value: line 2 column 1"),
    "vocab-empty": (lambda f: _wordpiece_only(f, ""), "vocab.txt is empty"),
    "vocab-without-unk": (lambda f: _wordpiece_only(f, "hello\nworld\n"),
                          "or cannot read text (Exception: WordPiece error: "
                          "Missing [UNK] token"),
}


@pytest.fixture
def quiet_run(tmp_path, monkeypatch):
    for name in [k for k in os.environ if k.startswith("ANISO_") and k != "ANISO_CACHE_DIR"]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("ANISO_REPORT_DIR", str(tmp_path / "reports"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return ["--registry", str(ROOT / "models.yaml"), "--claims", "G.token-nlp-anisotropic", "--",
            "--aniso-n-sequences", "8", "--aniso-max-length", "16", "--aniso-n-bootstrap", "0"]


@pytest.mark.parametrize("fault", list(FAULTS))
def test_aniso_run_refuses_a_folder_it_cannot_load_faithfully(fault, twin, tmp_path, quiet_run, capsys):
    folder = tmp_path / f"bert-{fault}"
    shutil.copytree(twin, folder)
    damage, what = FAULTS[fault]
    damage(folder)
    code = main(["run", str(folder), *quiet_run])
    out, err = capsys.readouterr()
    assert code == 2, out[-2000:] + err[-2000:]
    said = [line for line in err.splitlines() if what in line]
    assert len(said) == 1 and str(folder) in said[0], err
    assert "Traceback" not in out + err


def test_the_twin_itself_runs(twin, tmp_path, quiet_run, capsys):
    """The fixture without a fault: measured, exit 0 (its verdict on random weights is what it is)."""
    folder = tmp_path / "bert-twin"
    shutil.copytree(twin, folder)
    code = main(["run", str(folder), *quiet_run])
    out, err = capsys.readouterr()
    assert code in (0, 1), out[-2000:] + err[-2000:]
    assert "refused" not in err


def test_hub_import_refuses_a_malformed_id_and_damaged_weights(twin, tmp_path, capsys):
    cache = ["--cache-dir", str(tmp_path / "hub")]
    assert main(["hub", "import", "../evil", str(twin), *cache]) == 2
    err = capsys.readouterr().err
    assert err.startswith("aniso hub import: '../evil': not a hub id") and err.count("\n") == 1
    folder = tmp_path / "truncated"
    shutil.copytree(twin, folder)
    _truncated(folder)
    assert main(["hub", "import", "org/bert-twin", str(folder), *cache]) == 2
    err = capsys.readouterr().err
    assert f"{folder}: model.safetensors: truncated" in err and err.count("\n") == 1
    assert not (tmp_path / "hub" / "models--org--bert-twin").exists()


def test_preprocessing_files_that_are_not_json_or_hold_no_tokens_are_named(tmp_path):
    """The check before any load: each tokenizer or processor JSON file that is not JSON is named with the error's
    line and column; a WordPiece vocab.txt of nothing (and no tokenizer.json) is named as empty."""
    from aniso.sources.hub import preprocessing_problem

    (tmp_path / "vocab.txt").write_text("[UNK]\nhello\n")
    assert preprocessing_problem(tmp_path, "text") is None
    (tmp_path / "special_tokens_map.json").write_text("{'unk_token': '[UNK]'}")
    assert preprocessing_problem(tmp_path, "text").startswith(
        "special_tokens_map.json is not valid JSON (Expecting property name enclosed in double quotes: line 1 column 2")
    (tmp_path / "special_tokens_map.json").unlink()
    (tmp_path / "vocab.txt").write_text(" \n\n")
    assert preprocessing_problem(tmp_path, "text").startswith("vocab.txt is empty")
    (tmp_path / "preprocessor_config.json").write_text('{"size": 224,}')
    assert preprocessing_problem(tmp_path, "vision") == (
        "preprocessor_config.json is not valid JSON (Expecting property name enclosed in double quotes: line 1 "
        "column 14 (char 13))")
