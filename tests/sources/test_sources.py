"""The source-kind table and the kinds' common behaviour: offline hub, opt-ins, missing packages and folders."""

from __future__ import annotations

import time

import pytest

from aniso.registry.entries import ModelEntry
from aniso.sources import ModelUnavailable, load_model


def _entry(**kw) -> ModelEntry:
    base = dict(id="m", source={"kind": "hub", "repo": "nobody/nothing"}, modality="text", granularity="subword",
                architecture="transformer", role="encoder", family="bert")
    base.update(kw)
    return ModelEntry.model_validate(base)


def test_hub_model_offline_is_unavailable_fast(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    t = time.perf_counter()
    with pytest.raises(ModelUnavailable, match=r"^m: hub id 'nobody/nothing' at revision 'main' is not cached here"):
        load_model(_entry())
    assert time.perf_counter() - t < 2


def test_remote_code_and_credentials_need_opt_in():
    """Remote code always needs the entry's opt-in; credentials only to download a gated model (one already in the
    local cache loads without them)."""
    from aniso.sources import HubStatus, SourceContext
    from aniso.sources.base import check_permissions

    with pytest.raises(ModelUnavailable, match="trust_remote_code: true"):
        load_model(_entry(needs_remote_code=True))
    reachable = HubStatus()
    reachable._reachable = True  # a download would be tried: the opt-in is asked first, without any request
    with pytest.raises(ModelUnavailable, match="use_auth_token: true"):
        load_model(_entry(gated=True), SourceContext(hub=reachable))
    check_permissions(_entry(gated=True), download=False)


def test_missing_package_and_directory_are_named(tmp_path):
    with pytest.raises(ModelUnavailable, match="package 'no_such_pkg_xyz' is not installed"):
        load_model(_entry(source={"kind": "package", "package": "no_such_pkg_xyz"}))
    with pytest.raises(ModelUnavailable, match="does not exist"):
        load_model(_entry(source={"kind": "local", "path": str(tmp_path / "nope")}))


def test_the_registry_takes_its_source_kinds_from_the_table():
    """One table: every kind's schema is named by its row, and the registry accepts exactly those kinds."""
    import typing

    from aniso.registry.entries import SOURCE_KIND_NAMES
    from aniso.sources import SOURCE_KINDS

    assert set(SOURCE_KIND_NAMES) == set(SOURCE_KINDS) == {"hub", "local", "package", "onnx", "gguf", "llama2c", "init", "miniature",
                                                                  "miniature-text"}
    for name, kind in SOURCE_KINDS.items():
        assert typing.get_args(kind.schema.model_fields["kind"].annotation) == (name,)
        assert callable(kind.fingerprint) and callable(kind.load)


def test_unknown_source_kind_is_named(tmp_path):
    from aniso.registry.entries import RegistryError, load_registry

    p = tmp_path / "models.yaml"
    p.write_text("models:\n  - {id: x, source: {kind: gguf, path: a}, modality: text, granularity: subword, "
                 "architecture: transformer, role: decoder, family: llama}\n")
    with pytest.raises(RegistryError, match="models\\[0\\] \\(id 'x'\\): source"):
        load_registry(p)


def test_a_kind_checks_the_rest_of_its_entry():
    """Each row's check_entry: an ONNX CNN declared as text, a ViT miniature declared as a CNN, an untrained
    block with a modality other than embeddings."""
    from pydantic import ValidationError

    from aniso.registry.entries import ModelEntry

    base = dict(id="x", granularity="pixel", role="encoder", family="f")
    for bad in (dict(source={"kind": "onnx", "path": "m.onnx"}, modality="text", architecture="transformer"),
                dict(source={"kind": "miniature", "recipe": "vision-rotation", "arch": "vit", "steps": 1},
                     modality="vision", architecture="cnn"),
                dict(source={"kind": "init", "block": "bert-post-ln"}, modality="text", architecture="transformer")):
        with pytest.raises(ValidationError):
            ModelEntry.model_validate(base | bad)


def test_placement_reaches_from_pretrained_and_the_fingerprint(monkeypatch):
    """dtype and device_map of a hub/local source go to transformers' from_pretrained; half precision changes the
    fingerprint (the numbers), float32 keeps the old one."""
    import transformers

    from aniso.sources import source_fingerprint
    from aniso.sources.hub import from_pretrained

    seen = {}

    class Fake:
        @staticmethod
        def from_pretrained(where, **kwargs):
            seen.update(kwargs)
            return torch_module(), {"missing_keys": [], "unexpected_keys": [], "mismatched_keys": [], "error_msgs": []}

    def torch_module():
        import torch

        return torch.nn.Linear(2, 2)

    monkeypatch.setattr(transformers, "AutoModel", Fake)
    monkeypatch.setattr(transformers, "AutoTokenizer", type("T", (), {"from_pretrained": staticmethod(lambda *a, **k: "tok")}))
    big = _entry(source={"kind": "hub", "repo": "org/big", "dtype": "bfloat16", "device_map": "auto"})
    from_pretrained(big, "org/big")
    assert seen["dtype"] == "bfloat16" and seen["device_map"] == "auto" and seen["use_safetensors"] is True
    assert source_fingerprint(big, None).endswith("@main:bfloat16")
    assert source_fingerprint(_entry(source={"kind": "hub", "repo": "org/big"}), None) == "hub:org/big@main"
    with pytest.raises(ValueError, match="dtype"):
        _entry(source={"kind": "hub", "repo": "org/big", "dtype": "int3"})


def test_a_model_spread_by_accelerate_is_not_moved():
    import torch

    from aniso.extract.hidden import place

    plain = torch.nn.Linear(2, 2)
    assert place(plain, "cpu") == "cpu"
    spread = torch.nn.Linear(2, 2)
    spread.hf_device_map = {"": "cpu"}
    moved = []
    spread.to = lambda *a, **k: moved.append(a)
    assert place(spread, "cuda:0") == torch.device("cpu") and not moved
