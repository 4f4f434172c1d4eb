"""Three hints that sent a user the wrong way: a hub row pinned to a tag not in the cache was told `aniso hub import
REPO FOLDER` (which imports at main, and the row stays refused); a local row's path naming an unset environment
variable was refused as ".../$NOPE_UNSET/mini does not exist"; `aniso hub list --cache-dir FOLDER` of a model folder
said "nothing cached"."""

from __future__ import annotations

from aniso.cli import main

ROW = ("models:\n- id: mb\n  source: {{{source}}}\n  modality: text\n  granularity: subword\n"
       "  architecture: transformer\n  role: encoder\n  family: bert\n")


def test_a_row_pinned_to_a_revision_is_told_to_import_that_revision(hub_env, monkeypatch, capsys):
    monkeypatch.setenv("HF_HUB_CACHE", str(hub_env / "hub"))
    registry = hub_env / "r.yaml"
    registry.write_text(ROW.format(source="kind: hub, repo: me/minilm, revision: v1.0"))
    assert main(["stats", "mb", "--registry", str(registry), "--n-sequences", "8"]) == 2
    err = capsys.readouterr().err
    assert "`aniso hub import me/minilm FOLDER --revision v1.0` puts a model folder there" in err, err


def test_a_path_naming_an_unset_variable_says_so(clean_env, monkeypatch, capsys):
    monkeypatch.delenv("NOPE_UNSET", raising=False)
    registry = clean_env / "r.yaml"
    registry.write_text(ROW.format(source="kind: local, path: $NOPE_UNSET/mini"))
    assert main(["stats", "mb", "--registry", str(registry), "--n-sequences", "8"]) == 2
    err = capsys.readouterr().err
    assert ("mb: source.path '$NOPE_UNSET/mini' names the environment variable $NOPE_UNSET, which is not set: set "
            "it, or write the path out") in err, err


def test_hub_list_of_a_model_folder_says_it_is_one(clean_env, tiny_bert_dir, capsys):
    assert main(["hub", "list", "--cache-dir", str(tiny_bert_dir)]) == 2
    err = capsys.readouterr().err
    assert f"--cache-dir {tiny_bert_dir} is a model folder (it holds config.json), not a hub cache" in err, err
