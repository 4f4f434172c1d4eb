"""A model folder whose config.json disagrees with its weights or names what transformers does not know, or whose
vocabulary lists a token twice, is refused in one line naming the field (or file), its value and what the weights
(or the allowed values) are, exit 2, through `aniso run` and `aniso hub import`. The fixtures are copies of a twin of
bert-base-uncased (:mod:`aniso.sources.twin`: BERT's classes, a WordPiece vocabulary, random weights)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aniso.cli import main
from aniso.registry.entries import load_registry
from aniso.sources.twin import twin_folders

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def twin(tmp_path_factory) -> Path:
    from aniso.inputs.text import load_corpus

    texts = load_corpus(None, 128, 0).sequences
    entry = load_registry(ROOT / "models.yaml").get("bert-base-uncased")
    return twin_folders(entry, tmp_path_factory.mktemp("twin6"), texts)[0].folder


@pytest.fixture
def quiet_run(tmp_path, monkeypatch):
    for name in [k for k in os.environ if k.startswith("ANISO_") and k != "ANISO_CACHE_DIR"]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("ANISO_REPORT_DIR", str(tmp_path / "reports"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return ["--registry", str(ROOT / "models.yaml"), "--claims", "G.token-nlp-anisotropic", "--",
            "--aniso-n-sequences", "8", "--aniso-max-length", "16", "--aniso-n-bootstrap", "0"]


def _config(folder: Path) -> dict:
    return json.loads((folder / "config.json").read_text())


def _set_config(folder: Path, **changes) -> None:
    (folder / "config.json").write_text(json.dumps(_config(folder) | changes))


def _vocab(folder: Path) -> dict[str, int]:
    return json.loads((folder / "tokenizer.json").read_text())["model"]["vocab"]


def _wordpiece_only(folder: Path, tokens: list[str]) -> None:
    """The folder's tokenizer as transformers reads it without tokenizer.json: vocab.txt, one token a line."""
    (folder / "tokenizer.json").unlink()
    (folder / "vocab.txt").write_text("".join(f"{t}\n" for t in tokens), encoding="utf-8")


def _vocab_txt_with_duplicates(folder: Path) -> str:
    tokens = sorted(_vocab(folder), key=_vocab(folder).get)
    first = tokens[20]
    tokens[30:33] = [first] * 3  # three lines replaced by a token the vocabulary already lists
    _wordpiece_only(folder, tokens)
    return f"vocab.txt has 3 duplicate entries of its {len(tokens)} lines (the first: {first!r} on lines 21 and 31)"


def _tokenizer_json_key_twice(folder: Path) -> str:
    """A tokenizer.json whose vocab gives one token twice (json keeps the last id; the first is never given)."""
    text = (folder / "tokenizer.json").read_text()
    vocab = _vocab(folder)
    token = sorted(vocab, key=vocab.get)[25]
    head, tail = text.split('"vocab": {', 1)
    (folder / "tokenizer.json").write_text(f'{head}"vocab": {{{json.dumps(token)}: 7, {tail}')
    return (f"tokenizer.json: its model's vocab has 1 duplicate entry of {len(vocab) + 1} (the first: {token!r}, "
            f"given ids 7 and {vocab[token]})")


def _tokenizer_json_id_twice(folder: Path) -> str:
    """A tokenizer.json whose vocab gives two tokens one id (both read as one)."""
    data = json.loads((folder / "tokenizer.json").read_text())
    vocab = data["model"]["vocab"]
    a, b = sorted(vocab, key=vocab.get)[40:42]
    vocab[b] = vocab[a]
    (folder / "tokenizer.json").write_text(json.dumps(data))
    return f"tokenizer.json: its model's vocab gives 1 of its {len(vocab)} tokens an id another token has " \
           f"(the first: id {vocab[a]} to {a!r} and {b!r})"


def _max_positions(folder: Path, value: int) -> str:
    config = _config(folder)
    _set_config(folder, max_position_embeddings=value)
    return (f"config.json max_position_embeddings {value}, but embeddings.position_embeddings.weight is "
            f"{config['max_position_embeddings']} \u00d7 {config['hidden_size']} in the weights (the config builds "
            f"{value} \u00d7 {config['hidden_size']})")


def _vocab_size(folder: Path) -> str:
    config = _config(folder)
    _set_config(folder, vocab_size=100)
    return (f"config.json vocab_size 100, but embeddings.word_embeddings.weight is {config['vocab_size']} \u00d7 "
            f"{config['hidden_size']} in the weights")


def _two_fields(folder: Path) -> str:
    """Two sizes wrong at once: both named, in one line."""
    positions = _max_positions(folder, 4)
    return f"{positions}; {_vocab_size(folder)}"


def _intermediate_size(folder: Path) -> str:
    config = _config(folder)
    _set_config(folder, intermediate_size=64)
    return (f"config.json intermediate_size 64, but encoder.layer.0.intermediate.dense.bias is "
            f"{config['intermediate_size']} in the weights (the config builds 64) (5 more weight(s) of another shape)")


def _hidden_act(folder: Path) -> str:
    _set_config(folder, hidden_act="foo")
    return "config.json hidden_act 'foo' is not an activation function transformers knows (one of gelu, gelu_10,"


FAULTS = {
    "max-positions": lambda f: _max_positions(f, 8),
    "vocab-size": _vocab_size,
    "two-fields": _two_fields,
    "intermediate-size": _intermediate_size,
    "hidden-act": _hidden_act,
    "vocab-txt-duplicates": _vocab_txt_with_duplicates,
    "tokenizer-json-key-twice": _tokenizer_json_key_twice,
    "tokenizer-json-id-twice": _tokenizer_json_id_twice,
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_aniso_run_names_the_config_field_or_vocabulary_entry_that_is_wrong(fault, twin, tmp_path, quiet_run,
                                                                             capsys):
    folder = tmp_path / f"bert-{fault}"
    shutil.copytree(twin, folder)
    what = FAULTS[fault](folder)
    code = main(["run", str(folder), *quiet_run])
    out, err = capsys.readouterr()
    assert code == 2, out[-2000:] + err[-2000:]
    last = err.strip().splitlines()[-1]
    assert str(folder) in last and what in last, err
    assert "look at the above report" not in out + err and "KeyError" not in err and "Traceback" not in out + err


def test_the_positions_field_is_named_alone_when_another_field_has_its_value(twin, tmp_path, quiet_run, capsys):
    """max_position_embeddings set to the head count: the field is found by building the model again with the
    weights' size, not by its value, so num_attention_heads is not named."""
    folder = tmp_path / "bert-heads-value"
    shutil.copytree(twin, folder)
    what = _max_positions(folder, _config(folder)["num_attention_heads"])
    assert main(["run", str(folder), *quiet_run]) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    # "config.json" twice: "... from its config.json and weights: config.json max_position_embeddings ..."
    assert what in last and "num_attention_heads" not in last and last.count("config.json ") == 2, last


def test_hub_import_names_the_config_field_that_disagrees_with_the_weights(twin, tmp_path, capsys):
    folder = tmp_path / "vocab100"
    shutil.copytree(twin, folder)
    what = _vocab_size(folder)
    assert main(["hub", "import", "org/bert-vocab100", str(folder), "--cache-dir", str(tmp_path / "hub")]) == 2
    err = capsys.readouterr().err
    assert what in err and err.count("\n") == 1, err
    assert not (tmp_path / "hub" / "models--org--bert-vocab100").exists()


def test_vocabulary_files_with_duplicates_are_named_and_those_without_pass(tmp_path):
    """vocab.txt lines as transformers' load_vocab reads them (an empty line is a token too); vocab.json keys and ids;
    a Unigram tokenizer.json's pieces; with a tokenizer.json, the other files are not read."""
    from aniso.sources.hub import vocabulary_problem

    (tmp_path / "vocab.txt").write_text("[UNK]\nhello\nworld\n\n")
    assert vocabulary_problem(tmp_path) is None
    (tmp_path / "vocab.txt").write_text("[UNK]\nhello\n\nworld\n\n")
    assert vocabulary_problem(tmp_path).startswith(
        "vocab.txt has 1 duplicate entry of its 5 lines (the first: '' on lines 3 and 5): a token listed twice")
    (tmp_path / "vocab.json").write_text('{"[UNK]": 0, "a": 1, "b": 1}')
    assert vocabulary_problem(tmp_path).startswith(
        "vocab.json gives 1 of its 3 tokens an id another token has (the first: id 1 to 'a' and 'b')")
    unigram = {"model": {"type": "Unigram", "vocab": [["<unk>", 0.0], ["\u2581a", -1.0], ["\u2581b", -2.0]]}}
    (tmp_path / "tokenizer.json").write_text(json.dumps(unigram))
    assert vocabulary_problem(tmp_path) is None  # the files beside a tokenizer.json are not read
    unigram["model"]["vocab"].append(["\u2581a", -3.0])
    (tmp_path / "tokenizer.json").write_text(json.dumps(unigram))
    assert vocabulary_problem(tmp_path).startswith(
        "tokenizer.json: its model's vocab has 1 duplicate entry of 4 (the first: '\u2581a', ids 1 and 3)")


def test_the_smiles_tokenizer_refuses_a_vocabulary_that_lists_a_token_twice(tmp_path):
    from aniso.sources.smiles import smiles_tokenizer

    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nC\nO\nC\n", encoding="utf-8")
    with pytest.raises(ValueError) as caught:
        smiles_tokenizer(vocab)
    assert str(caught.value).startswith(
        f"{vocab}: vocab.txt has 1 duplicate entry of its 8 lines (the first: 'C' on lines 6 and 8)")


def test_a_package_model_whose_vocabulary_lists_a_token_twice_is_refused(tmp_path, monkeypatch):
    """A registry row of an installed package (here a package of the test's, a copy of rxnmapper's ALBERT with
    one line of its vocab.txt repeated) is refused naming the model, the folder and the duplicate."""
    import importlib.util

    from aniso.registry.entries import ModelEntry
    from aniso.sources import ModelRefused, load_model

    spec = importlib.util.find_spec("rxnmapper")
    assert spec is not None, "rxnmapper is in the lock (pip install --no-deps rxnmapper)"
    subdir = "models/transformers/albert_heads_8_uspto_all_1310k"
    original = Path(list(spec.submodule_search_locations)[0]) / subdir
    package = tmp_path / "site" / "rxn_dup_vocab"
    folder = package / subdir
    folder.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    for path in original.iterdir():
        if path.is_file():
            os.symlink(path, folder / path.name)
    (folder / "vocab.txt").unlink()
    tokens = (original / "vocab.txt").read_text(encoding="utf-8").splitlines()
    (folder / "vocab.txt").write_text("\n".join(tokens + [tokens[10]]) + "\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    entry = ModelEntry.model_validate(dict(
        id="rxn-dup", modality="text", granularity="char", architecture="transformer", role="encoder",
        family="albert", measured_on="reactions",
        source=dict(kind="package", package="rxn_dup_vocab", subdir=subdir, format="transformers-torch",
                    tokenizer="smiles")))
    with pytest.raises(ModelRefused) as caught:
        load_model(entry, None)
    message = str(caught.value)
    assert message.startswith("rxn-dup: ") and str(folder / "vocab.txt") in message, message
    assert (f"vocab.txt has 1 duplicate entry of its {len(tokens) + 1} lines (the first: {tokens[10]!r} on lines 11 "
            f"and {len(tokens) + 1})") in message and "\n" not in message


def test_the_python_api_refuses_in_one_line_without_transformers_table(twin, tmp_path, clean_env, monkeypatch):
    """Through the Python API too, the refusal is the one line: transformers' "LOAD REPORT" table of the weights
    of another shape (logged as a warning before it raises) reaches none of transformers' log handlers; a load that
    goes through with weights left unread (the twin's pre-training head) says so in one warning line, not the table
    (a folder saved from BertForPreTraining printed ~15 lines of it before the table of statistics)."""
    import logging

    from transformers.utils import logging as hf_logging

    import aniso
    from aniso.sources import ModelRefused

    seen: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record):
            seen.append(record.getMessage())

    library = hf_logging.get_logger()  # transformers' own logger, where its handler is
    monkeypatch.setattr(library, "handlers", [*library.handlers, Collect()])
    folder = tmp_path / "bert-vocab100"
    shutil.copytree(twin, folder)
    what = _vocab_size(folder)
    texts = ["the first of the texts", "a second one of them", "and the third text", "the fourth and last text"]
    with pytest.raises(ModelRefused) as caught:
        aniso.measure(str(folder), texts)
    assert what in str(caught.value) and "\n" not in str(caught.value)
    assert not any("LOAD REPORT" in message for message in seen), seen
    loads = tmp_path / "bert-twin"  # (a folder named like the registry row, bert-base-uncased, would take its id)
    shutil.copytree(twin, loads)
    with pytest.warns(RuntimeWarning, match=r"weight\(s\) of its files are no part of Bert\w* and were not read "
                                            r"\(cls\.\*: a task head's, not a hidden state's\)"):
        aniso.measure(str(loads), texts)
    assert not any("LOAD REPORT" in message for message in seen), seen  # its one line, not the table


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="ab\u00e9 #", max_size=3), max_size=30))
def test_a_vocabulary_of_lines_is_refused_exactly_when_a_line_repeats_and_counts_the_repeats(tokens):
    from aniso.sources.hub import token_lines_problem

    problem = token_lines_problem(tokens, "vocab.txt")
    repeats = len(tokens) - len(set(tokens))
    assert (problem is None) == (repeats == 0)
    if repeats:
        first = next(i for i, t in enumerate(tokens) if t in tokens[:i])
        assert problem.startswith(f"vocab.txt has {repeats} duplicate entr{'ies' if repeats != 1 else 'y'} of its "
                                  f"{len(tokens)} lines (the first: {tokens[first]!r} on lines "
                                  f"{tokens.index(tokens[first]) + 1} and {first + 1})")
