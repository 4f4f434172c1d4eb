"""Arguments of ``aniso.measure`` for an in-memory model that it ignored or refused in words that contradict
themselves: a cache folder it made though nothing is cached, a registry file that does not exist, and ``'all'``
listed with the statistics it names."""

from __future__ import annotations

import os

import pytest

import aniso
from aniso.common.settings import Settings

TEXTS = ["w1 w2 w3 w4", "w5 w6 w7", "w8 w9 w10 w11 w12", "w13 w14", "w15 w16 w17 w18"]


def _measure(tiny_bert_dir, **kwargs):
    from transformers import AutoModel, AutoTokenizer

    return aniso.measure(AutoModel.from_pretrained(tiny_bert_dir), TEXTS,
                         tokenizer=AutoTokenizer.from_pretrained(tiny_bert_dir), progress=False, **kwargs)


def test_an_in_memory_model_creates_no_cache_folder(clean_env, tiny_bert_dir, tmp_path):
    cache = tmp_path / "new" / "deep"
    measured = _measure(tiny_bert_dir, statistics=["first-order"], settings={"cache_dir": str(cache)})
    assert len(measured.series("avg_cos")) == 3
    assert not (tmp_path / "new").exists()


def test_the_cache_check_creates_nothing_yet_refuses_a_folder_that_cannot_be_made(tmp_path):
    missing = tmp_path / "new" / "deep"
    Settings(cache_dir=str(missing)).check_paths()
    assert not (tmp_path / "new").exists()
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError) as caught:
        Settings(cache_dir=str(tmp_path / "file" / "cache")).check_paths()
    line = str(caught.value)
    assert "\n" not in line and "cache_dir" in line and "is a file, not a folder" in line, line
    assert sorted(os.listdir(tmp_path)) == ["file"]


@pytest.mark.parametrize("how", ["argument", "setting"])
@pytest.mark.parametrize("name", [None, "mine"])
def test_a_registry_that_does_not_exist_is_refused_for_an_in_memory_model(clean_env, tiny_bert_dir, tmp_path,
                                                                           how, name):
    missing = str(tmp_path / "nonexistent.yaml")
    given = {"registry": missing} if how == "argument" else {"settings": {"registry": missing}}
    with pytest.raises(ValueError) as caught:
        _measure(tiny_bert_dir, statistics=["first-order"], name=name, **given)
    line = str(caught.value)
    assert "\n" not in line and "registry" in line and missing in line and "does not exist" in line, line


def test_all_listed_with_other_statistics_is_said_to_stand_alone(clean_env, tiny_bert_dir):
    with pytest.raises(ValueError) as caught:
        _measure(tiny_bert_dir, statistics=["all", "first-order"])
    line = str(caught.value)
    assert "\n" not in line and line.startswith("statistics:") and "'all'" in line and "stands alone" in line \
        and "statistics='all'" in line and "is not one of" not in line, line


def test_a_tokenizer_given_as_its_folder_is_refused_saying_it_is_a_path(clean_env, tiny_bert_dir):
    """It said "needs its tokenizer (tokenizer=...), got str", as if none had been given."""
    from pathlib import Path

    from transformers import AutoModel

    model = AutoModel.from_pretrained(tiny_bert_dir)
    for given, kind in ((str(tiny_bert_dir), "str"), (Path(tiny_bert_dir), "pathlib.PosixPath")):
        with pytest.raises(ValueError) as caught:
            aniso.measure(model, TEXTS, tokenizer=given, progress=False)
        path = os.fspath(given)
        assert str(caught.value) == (f"tokenizer: {path!r} ({kind}) is a path; give the loaded "
                                     f"tokenizer: tokenizer=AutoTokenizer.from_pretrained({path!r})")
