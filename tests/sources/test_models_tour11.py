"""Model folders, configs, hub ids and registry rows that cannot be measured faithfully are refused in one line, exit
2, the same way through every door that reads them (``aniso run FOLDER``, ``aniso.measure``, ``aniso hub import``,
a registry row run by the claims), by the same check:

- float weights saved as int8 (cast back to float without a word, and measured as the model's weights);
- a safetensors index naming a shard the folder does not hold (imported as it was; named as "not cached" though a
  folder is no cache);
- a config field no model can be built or run with (a head count of 0: ZeroDivisionError; a negative
  ``layer_norm_eps``: NaN blamed on the weights or inputs; a ``pad_token_id`` past the vocabulary: an assertion);
- ``--cache-dir`` inside the folder imported (a cache written into the model, copied by the next import);
- a hub id with ``..`` (its reason printed cut at the ``..``);
- a model path that is a symbolic link to itself or to nothing (said to be "no model folder and no hub id");
- a registry row whose role and family contradict its weights' config (a decoder claim decided on BERT).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from aniso.cli import main
from model_folders import copy_folder, edit_config

ROOT = Path(__file__).resolve().parents[2]
TEXTS = ["w1 w2 w3 w4 w5 w6", "w7 w8 w9 w10 w11", "w12 w13 w14 w15 w16 w17", "w18 w19 w20 w21"]


def _measure_refusal(folder: Path) -> str:
    import aniso

    with pytest.raises(ValueError) as caught:  # ModelRefused (a RuntimeError) or ValueError: one line either way
        aniso.measure(str(folder), TEXTS, progress=False)
    said = str(caught.value)
    assert "\n" not in said
    return said


def _measure_refused(folder: Path) -> str:
    import aniso
    from aniso.sources import ModelRefused

    with pytest.raises(ModelRefused) as caught:
        aniso.measure(str(folder), TEXTS, progress=False)
    said = str(caught.value)
    assert "\n" not in said and str(folder) in said, said
    return said


def _run_refused(folder: Path, quiet_run, capsys) -> str:
    code = main(["run", str(folder), *quiet_run])
    out, err = capsys.readouterr()
    assert code == 2, out[-2000:] + err[-2000:]
    assert "Traceback" not in out + err and "Error:" not in err, err
    return err


def _import_refused(folder: Path, cache: Path, capsys, hub_id: str = "me/model") -> str:
    assert main(["hub", "import", hub_id, str(folder), "--cache-dir", str(cache)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("aniso hub import: "), err
    assert not list(cache.glob("models--*/refs/*"))
    return err


# float weights saved as int8 ------------------------------------------------------------------------------------


def _int8_weights(folder: Path) -> None:
    from safetensors.torch import load_file, save_file

    tensors = load_file(folder / "model.safetensors")
    save_file({k: (v * 50).round().clamp(-128, 127).to("cpu").char() if v.is_floating_point() else v
               for k, v in tensors.items()}, folder / "model.safetensors", metadata={"format": "pt"})


def test_float_weights_saved_as_int8_are_refused_by_run_measure_and_import(tiny_bert_dir, tmp_path, quiet_run,
                                                                          capsys):
    folder = copy_folder(tiny_bert_dir, tmp_path, "int8")
    _int8_weights(folder)
    named = "model.safetensors holds"
    said = _measure_refused(folder)
    assert named in said and "int8" in said and "BertModel has float parameters" in said, said
    err = _run_refused(folder, quiet_run, capsys)
    assert [line for line in err.splitlines() if named in line and "int8" in line and str(folder) in line], err
    err = _import_refused(folder, tmp_path / "hub", capsys)
    assert named in err and "int8" in err, err


def test_float_weights_are_measured(tiny_bert_dir, tmp_path):
    import aniso

    stats = aniso.measure(str(copy_folder(tiny_bert_dir, tmp_path, "float")), TEXTS, progress=False)
    assert stats is not None


# a shard the index names is not in the folder ---------------------------------------------------------------------


def _shard_lost(folder: Path) -> None:
    from safetensors.torch import load_file, save_file

    tensors = load_file(folder / "model.safetensors")
    names = sorted(tensors)
    halves = {"model-00001-of-00002.safetensors": names[: len(names) // 2],
              "model-00002-of-00002.safetensors": names[len(names) // 2:]}
    for shard, keys in halves.items():
        save_file({k: tensors[k] for k in keys}, folder / shard, metadata={"format": "pt"})
    index = {"metadata": {}, "weight_map": {k: shard for shard, keys in halves.items() for k in keys}}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index), encoding="utf-8")
    (folder / "model.safetensors").unlink()
    (folder / "model-00002-of-00002.safetensors").unlink()


def test_a_shard_the_index_names_is_named_as_missing_from_the_folder_and_never_imported(tiny_bert_dir, tmp_path,
                                                                                      quiet_run, capsys):
    folder = copy_folder(tiny_bert_dir, tmp_path, "shard")
    _shard_lost(folder)
    named = "model-00002-of-00002.safetensors, named by model.safetensors.index.json, is not in the folder"
    err = _run_refused(folder, quiet_run, capsys)
    assert [line for line in err.splitlines() if named in line and str(folder) in line], err
    assert "not cached" not in err
    err = _import_refused(folder, tmp_path / "hub", capsys)
    assert named in err, err


# config fields no model can be built or run with ------------------------------------------------------------------

CONFIG_FAULTS = {
    "heads-0": ({"num_attention_heads": 0}, "config.json num_attention_heads 0: must be a whole number of at least 1"),
    "hidden-negative": ({"hidden_size": -32}, "config.json hidden_size -32: must be a whole number of at least 1"),
    "layers-0": ({"num_hidden_layers": 0}, "config.json num_hidden_layers 0: must be a whole number of at least 1"),
    "vocab-0": ({"vocab_size": 0}, "config.json vocab_size 0: must be a whole number of at least 1"),
    "positions-0": ({"max_position_embeddings": 0}, "config.json max_position_embeddings 0: must be a whole number"),
    "intermediate-negative": ({"intermediate_size": -1}, "config.json intermediate_size -1: must be a whole number"),
    "eps-negative": ({"layer_norm_eps": -1.0}, "config.json layer_norm_eps -1.0: must be a number > 0"),
    "eps-zero": ({"layer_norm_eps": 0}, "config.json layer_norm_eps 0: must be a number > 0"),
    "pad-past": ({"pad_token_id": 99999}, "config.json pad_token_id 99999 is past the vocabulary (vocab_size "),
}


@pytest.mark.parametrize("fault", list(CONFIG_FAULTS))
def test_a_config_field_no_model_can_be_built_with_is_named_by_measure_and_import(fault, tiny_bert_dir, tmp_path,
                                                                                 capsys):
    changes, named = CONFIG_FAULTS[fault]
    folder = copy_folder(tiny_bert_dir, tmp_path, fault)
    edit_config(folder, **changes)
    said = _measure_refused(folder)
    assert named in said, said
    err = _import_refused(folder, tmp_path / "hub", capsys)
    assert named in err, err


def test_a_head_count_of_0_is_refused_by_run_with_exit_2(tiny_bert_dir, tmp_path, quiet_run, capsys):
    folder = copy_folder(tiny_bert_dir, tmp_path, "heads0")
    edit_config(folder, num_attention_heads=0)
    err = _run_refused(folder, quiet_run, capsys)
    assert "ZeroDivisionError" not in err
    assert [line for line in err.splitlines() if "config.json num_attention_heads 0" in line], err


def test_config_values_of_a_sub_config_and_a_negative_padding_index_within_the_vocabulary():
    from aniso.sources.hubcache import config_values_problem

    assert config_values_problem({"vocab_size": 100, "pad_token_id": -1, "layer_norm_eps": 1e-12}) is None
    assert config_values_problem({"text_config": {"rms_norm_eps": -1e-6}}) == (
        "config.json text_config.rms_norm_eps -1e-06: must be a number > 0 (what a normalisation adds to the "
        "variance before dividing by its square root)")


# --cache-dir inside the folder imported ---------------------------------------------------------------------------


@pytest.mark.parametrize("inside", ["hc", ".", "sub/hc"])
def test_a_cache_inside_the_folder_imported_is_refused_before_anything_is_written(inside, tiny_bert_dir, tmp_path,
                                                                                 capsys):
    folder = copy_folder(tiny_bert_dir, tmp_path, "model")
    before = sorted(p.relative_to(folder) for p in folder.rglob("*"))
    cache = folder / inside
    assert main(["hub", "import", "me/self", str(folder), "--cache-dir", str(cache)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is inside the folder being imported" in err and str(cache) in err, err
    assert sorted(p.relative_to(folder) for p in folder.rglob("*")) == before


def test_the_import_function_refuses_such_a_cache_too(tiny_bert_dir, tmp_path):
    from aniso.sources.hubcache import HubCacheError, import_folder

    folder = copy_folder(tiny_bert_dir, tmp_path, "model")
    with pytest.raises(HubCacheError, match="is inside the folder imported"):
        import_folder("me/self", folder, cache_dir=folder / "hc")
    assert not (folder / "hc").exists()


def test_a_hub_cache_found_inside_a_model_folder_is_not_copied_into_the_snapshot(tiny_bert_dir, tmp_path, capsys):
    from aniso.sources.hubcache import import_folder

    folder = copy_folder(tiny_bert_dir, tmp_path, "model")
    import_folder("me/first", folder, cache_dir=tmp_path / "elsewhere")
    shutil.move(str(tmp_path / "elsewhere"), str(folder / "hc"))  # a cache left in the folder
    assert main(["hub", "import", "me/second", str(folder), "--cache-dir", str(tmp_path / "hub")]) == 0
    out = capsys.readouterr().out
    assert "left out (a hub cache inside the folder, no file of the model): hc/models--me--first" in out
    snapshot = next((tmp_path / "hub" / "models--me--second" / "snapshots").iterdir())
    assert not (snapshot / "hc").exists()
    assert (snapshot / "model.safetensors").is_file()


# a hub id with '..' ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("hub_id, reason", [
    ("me/x..y", "'..' (or '--') is not allowed in a hub id"),
    ("me/x--y", "'--' (or '..') is not allowed in a hub id"),
    ("me/x.", "'x.' begins or ends with '-' or '.'"),
])
def test_a_hub_id_refused_says_its_reason_whole(hub_id, reason, tiny_bert_dir, tmp_path, capsys):
    err = _import_refused(tiny_bert_dir, tmp_path / "hub", capsys, hub_id=hub_id)
    assert f"{hub_id!r}: not a hub id ({reason}" in err, err


# a symbolic link that loops or leads nowhere ----------------------------------------------------------------------


def test_a_model_path_that_is_a_link_to_itself_or_to_nothing_is_said_to_be_one(tmp_path, quiet_run, capsys):
    loop = tmp_path / "loop"
    loop.symlink_to("loop")
    said = _measure_refusal(loop)
    assert f"{loop} is a symbolic link to itself, or a loop of links" in said, said
    dangling = tmp_path / "moved"
    dangling.symlink_to(tmp_path / "gone")
    said = _measure_refusal(dangling)
    assert f"{dangling} is a symbolic link to {tmp_path / 'gone'}, which does not exist" in said, said
    err = _run_refused(loop, quiet_run, capsys)
    assert f"{loop} is a symbolic link to itself" in err and "no hub id" not in err, err


# a registry row whose role and family contradict its weights ------------------------------------------------------


def _registry(tmp_path: Path, folder: Path, role: str, family: str) -> Path:
    path = tmp_path / f"{role}.yaml"
    path.write_text(f"models:\n- id: mini\n  source: {{kind: local, path: {folder}}}\n  modality: text\n"
                    f"  granularity: subword\n  architecture: transformer\n  role: {role}\n  family: {family}\n",
                    encoding="utf-8")
    return path


def test_a_row_declared_a_gpt2_decoder_over_bert_weights_is_refused_at_load(tiny_bert_dir, tmp_path):
    from aniso.registry.entries import load_registry
    from aniso.sources import ModelRefused, SourceContext, load_model

    path = _registry(tmp_path, tiny_bert_dir, "decoder", "gpt2")
    with pytest.raises(ModelRefused) as caught:
        load_model(load_registry(path).get("mini"), SourceContext())
    said = str(caught.value)
    assert said.startswith(f"{path}: models[0] (id 'mini'): role 'decoder', but its config.json makes it an encoder "
                           "(model_type 'bert'"), said
    assert "family 'gpt2', but its config.json says model_type 'bert'" in said and "\n" not in said
    good = load_registry(_registry(tmp_path, tiny_bert_dir, "encoder", "bert")).get("mini")
    assert load_model(good, SourceContext()).model.config.model_type == "bert"


def test_the_claims_refuse_such_a_row_with_exit_2(tiny_bert_dir, tmp_path, quiet_run, capsys):
    path = _registry(tmp_path, tiny_bert_dir, "decoder", "gpt2")
    code = main(["run", "mini", "--registry", str(path), "--claims", "R.decoder-bell-profile", "--",
                 "--aniso-n-sequences", "8", "--aniso-max-length", "16", "--aniso-n-bootstrap", "0"])
    out, err = capsys.readouterr()
    assert code == 2, out[-2000:] + err[-2000:]
    assert "holds" not in out and "role 'decoder', but its config.json makes it an encoder" in out + err


def test_roles_told_by_configs():
    from aniso.sources.detect import role_told

    assert role_told({"model_type": "bert", "architectures": ["BertModel"]}) == "encoder"
    assert role_told({"model_type": "bert", "is_decoder": True}) == "decoder"
    assert role_told({"model_type": "gpt2", "architectures": ["GPT2Model"]}) == "decoder"
    assert role_told({"model_type": "t5", "is_encoder_decoder": True}) == "encoder-decoder"
    assert role_told({"model_type": "vit"}) is None
