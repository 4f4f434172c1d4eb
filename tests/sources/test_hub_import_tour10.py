"""``aniso hub import`` refuses what ``aniso run FOLDER`` refuses: a folder whose config names another model family
than its tokenizer (BERT weights and tokenizer under a RoBERTa config) never becomes a revision of the cache."""

import json
import shutil

from aniso.cli import main


def test_a_folder_whose_tokenizer_is_of_another_family_than_its_config_is_not_imported(tmp_path, tiny_bert_dir,
                                                                                        capsys):
    folder = tmp_path / "robmix"
    shutil.copytree(tiny_bert_dir, folder)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    config.update(model_type="roberta", architectures=["RobertaModel"])
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    tok = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    tok["tokenizer_class"] = "BertTokenizer"
    (folder / "tokenizer_config.json").write_text(json.dumps(tok), encoding="utf-8")
    cache = tmp_path / "hub"
    assert main(["hub", "import", "me/robmix", str(folder), "--cache-dir", str(cache)]) == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "tokenizer_class 'BertTokenizer'" in lines[0] and "'roberta'" in lines[0], err
    assert "not imported, the cache is as it was" in lines[0]
    assert not list(cache.glob("models--me--robmix/refs/*"))


def test_the_same_folder_under_its_own_config_is_imported(tmp_path, tiny_bert_dir, capsys):
    folder = tmp_path / "bert"
    shutil.copytree(tiny_bert_dir, folder)
    tok = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    tok["tokenizer_class"] = "BertTokenizer"
    (folder / "tokenizer_config.json").write_text(json.dumps(tok), encoding="utf-8")
    assert main(["hub", "import", "me/bert", str(folder), "--cache-dir", str(tmp_path / "hub")]) == 0, \
        capsys.readouterr().err


def test_a_full_size_twin_that_cannot_fit_in_memory_is_refused_before_it_is_built(tmp_path, monkeypatch):
    """opt-13b's full-size twin (26 GB in float16) grew past 5.6 GB on a 23 GB machine with nothing said: the build
    is refused first, in one line naming the row, the weights' size and the memory available."""
    import pytest

    import aniso.sources.twin as twin
    from aniso.registry.entries import load_registry

    from pathlib import Path

    entry = load_registry(Path(__file__).resolve().parents[2] / "models.yaml").get("opt-13b")
    monkeypatch.setattr(twin, "available_memory", lambda: 8 * 2**30)
    with pytest.raises(twin.TwinError) as caught:
        twin.build_twin(entry, tmp_path / "twin", ["a few words"] * 4, 0, full_size=True)
    said = str(caught.value)
    assert said.startswith("opt-13b: its full-size twin holds 23.9 GiB of weights in torch.float16")
    assert "8.0 GiB of memory are available here" in said and "\n" not in said
    assert not (tmp_path / "twin" / "model.safetensors").exists()
