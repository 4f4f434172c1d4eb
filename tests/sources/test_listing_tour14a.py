"""A listing checks that model files are there without reading them: ``aniso.models`` on a registry of many rows of
one package reads none of the weight files' bytes (it hashed them for every row, 0.18 s a row for MiniLM), and still
says what is missing or no regular file; a fingerprint for a cache key still reads them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import aniso
from aniso.common import files
from aniso.registry.entries import ModelEntry
from aniso.sources import SourceContext, source_fingerprint, weights_here

PACKAGE = "aniso_listing_fixture_pkg"


@pytest.fixture
def package_root(tmp_path, monkeypatch):
    """An installed-looking package (a folder on sys.path) with a small BERT-like model folder in ``model``."""
    root = tmp_path / "site"
    folder = root / PACKAGE / "model"
    folder.mkdir(parents=True)
    (root / PACKAGE / "__init__.py").write_text("", encoding="utf-8")
    (folder / "config.json").write_text(json.dumps({"model_type": "bert", "architectures": ["BertModel"],
                                                    "hidden_size": 32, "num_hidden_layers": 2,
                                                    "num_attention_heads": 2, "vocab_size": 50}), encoding="utf-8")
    (folder / "model.safetensors").write_bytes(b"\0" * 4096)
    (folder / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a", "b"]), encoding="utf-8")
    monkeypatch.syspath_prepend(str(root))
    for name in [k for k in os.environ if k.startswith("ANISO_")]:
        monkeypatch.delenv(name)
    return folder


def _row(i: int) -> str:
    return (f"- id: mini{i}\n  source: {{kind: package, package: {PACKAGE}, subdir: model}}\n  modality: text\n"
            "  granularity: subword\n  architecture: transformer\n  role: encoder\n  family: bert\n")


@pytest.fixture
def fed(monkeypatch):
    """The files whose bytes are read for a digest (``aniso.common.files._feed``), in order."""
    read: list[str] = []
    real = files._feed

    def counting(h, path):
        read.append(str(path))
        real(h, path)

    monkeypatch.setattr(files, "_feed", counting)
    files._sha256_of.cache_clear()
    return read


def test_a_listing_of_many_rows_of_one_package_reads_no_weight_file(package_root, tmp_path, fed):
    registry = tmp_path / "many.yaml"
    registry.write_text("models:\n" + "".join(_row(i) for i in range(25)), encoding="utf-8")
    rows = aniso.models(registry, as_frame=False, settings={"device": "cpu"})
    assert [r["weights_here"] for r in rows] == ["here (package)"] * 25
    assert fed == []


def test_a_fingerprint_for_a_cache_key_still_reads_the_files(package_root, fed):
    entry = ModelEntry.model_validate(dict(
        id="mini", source={"kind": "package", "package": PACKAGE, "subdir": "model"}, modality="text",
        granularity="subword", architecture="transformer", role="encoder", family="bert"))
    assert source_fingerprint(entry).startswith("package:") and "unread" not in source_fingerprint(entry)
    assert any(p.endswith("model.safetensors") for p in fed)
    with pytest.raises(ValueError, match="read_weights"):
        source_fingerprint(entry, SourceContext(read_weights=False))


def test_the_listing_still_says_what_is_missing_or_no_regular_file(package_root, fed):
    entry = ModelEntry.model_validate(dict(
        id="mini", source={"kind": "package", "package": PACKAGE, "subdir": "model"}, modality="text",
        granularity="subword", architecture="transformer", role="encoder", family="bert"))
    (package_root / "model.safetensors").unlink()
    os.mkfifo(package_root / "model.safetensors")
    assert weights_here(entry, SourceContext()).startswith("refused: ")
    assert "model.safetensors" in weights_here(entry, SourceContext())
    (package_root / "model.safetensors").unlink()
    (package_root / "model.safetensors").symlink_to(package_root / "gone.safetensors")
    said = weights_here(entry, SourceContext())
    assert said.startswith(("refused: ", "missing: ")) and "model.safetensors" in said
    (package_root / "model.safetensors").unlink()
    (package_root / "config.json").unlink()
    assert weights_here(entry, SourceContext()).startswith("missing: package ") and "config.json" in \
        weights_here(entry, SourceContext())
    assert fed == []


def test_a_local_folder_is_checked_not_read(tmp_path, fed):
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "bert"}', encoding="utf-8")
    (folder / "model.safetensors").write_bytes(b"\0" * 4096)
    entry = ModelEntry.model_validate(dict(
        id="m", source={"kind": "local", "path": str(folder)}, modality="text", granularity="subword",
        architecture="transformer", role="encoder", family="bert"))
    assert weights_here(entry, SourceContext()) == "here (folder)"
    assert fed == []
    assert Path(folder / "model.safetensors").exists()


def test_rows_that_differ_in_their_id_only_are_checked_once(package_root, tmp_path, monkeypatch):
    import aniso.sources

    calls = []
    real = aniso.sources.weights_here

    def counting(entry, ctx):
        calls.append(entry.id)
        return real(entry, ctx)

    monkeypatch.setattr(aniso.sources, "weights_here", counting)
    other = _row(99).replace("granularity: subword", "granularity: byte")  # another row's fields: checked apart
    registry = tmp_path / "many.yaml"
    registry.write_text("models:\n" + "".join(_row(i) for i in range(10)) + other, encoding="utf-8")
    rows = aniso.models(registry, as_frame=False, settings={"device": "cpu"})
    assert calls == ["mini0", "mini99"]
    assert [r["model"] for r in rows] == [f"mini{i}" for i in range(10)] + ["mini99"]
    assert {r["weights_here"] for r in rows[:10]} == {"here (package)"}


def test_a_folder_without_weights_is_listed_as_its_load_refuses_it(package_root, tmp_path, fed):
    """A local folder holding config.json only (its weights not yet copied) was listed "here (folder)", and
    `aniso stats` then refused it: "no .safetensors weights"."""
    from aniso.sources import load_model
    from aniso.sources.base import ModelRefused

    folder = tmp_path / "cfgonly"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "bert"}', encoding="utf-8")
    local = ModelEntry.model_validate(dict(
        id="m", source={"kind": "local", "path": str(folder)}, modality="text", granularity="subword",
        architecture="transformer", role="encoder", family="bert"))
    assert weights_here(local, SourceContext()) == "refused: no .safetensors weights (the suite loads safetensors only)"
    with pytest.raises(ModelRefused, match="no .safetensors weights"):
        load_model(local, SourceContext())
    (folder / "weights.safetensors").write_bytes(b"\0" * 64)
    assert weights_here(local, SourceContext()).startswith("refused: no model.safetensors nor ")
    (package_root / "model.safetensors").unlink()
    packaged = ModelEntry.model_validate(dict(
        id="mini", source={"kind": "package", "package": PACKAGE, "subdir": "model"}, modality="text",
        granularity="subword", architecture="transformer", role="encoder", family="bert"))
    assert weights_here(packaged, SourceContext()).startswith("refused: no .safetensors weights")
    assert fed == []
