"""Bad input through every door, named in one line: a max_length too short for the texts given (Python API) or the
corpus (aniso stats, aniso bench extraction: the option typed), the options of aniso bench twonn, the attention
sizes of an untrained block's registry row, a refused model's line under pytest, the progress of the TwoNN benchmark
and a refusal check that a cache entry does not get round."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import aniso
from aniso.cli import main

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = str(ROOT / "models.yaml")


def _tiny_registry(tmp_path: Path, folder: Path) -> Path:
    reg = tmp_path / "models.yaml"
    reg.write_text(f"models:\n  - id: tiny\n    source: {{kind: local, path: {folder}}}\n    modality: text\n"
                   "    granularity: subword\n    architecture: transformer\n    role: encoder\n    family: bert\n")
    return reg


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err, err
    return err


def test_a_max_length_too_short_for_the_texts_given_is_a_value_error_naming_the_argument(clean_env, tiny_bert_dir):
    """AP01: max_length=1 with a list of texts raised ModelRefused (a RuntimeError) speaking of "paragraphs of the
    corpus": it is a ValueError naming the argument, its value, the texts given and the least length allowed."""
    with pytest.raises(ValueError) as exc:
        aniso.measure(str(tiny_bert_dir), ["w1 w2 w3 w4", "w5 w6 w7 w8"], max_length=1, progress=False)
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith("max_length: 1 tokens per sequence"), msg
    assert "in the 2 texts given" in msg and "give at least 4" in msg, msg
    assert "corpus" not in msg and "setting" not in msg and "paragraph" not in msg, msg


def test_a_max_length_too_short_for_the_corpus_names_the_variable_at_aniso_stats(clean_env, tiny_bert_dir, capsys,
                                                                                 monkeypatch):
    """AP01 through aniso stats (which reads ANISO_MAX_LENGTH): one line naming the setting as the settings name it
    (variable and option), its value and the least length allowed; exit 2."""
    corpus = clean_env / "corpus.txt"
    corpus.write_text("\n".join(" ".join(f"w{(i * 7 + j) % 40}" for j in range(12)) for i in range(8)) + "\n")
    monkeypatch.setenv("ANISO_MAX_LENGTH", "2")
    registry = _tiny_registry(clean_env, tiny_bert_dir)
    assert main(["stats", "tiny", "--registry", str(registry), "--corpus", str(corpus), "--n-sequences", "8"]) == 2
    line = _one_line(capsys)
    assert ("setting max_length (ANISO_MAX_LENGTH, --aniso-max-length) 2 tokens per sequence, the tokenizer's 2 "
            "special tokens of each included, leave 0 known token(s)") in line and "give at least 4" in line, line


def test_a_max_length_too_short_names_the_option_typed_at_aniso_bench_extraction(clean_env, capsys):
    """BE07: the refusal named "setting max_length", not the option the user typed: one line naming --max-length,
    its value and the least length allowed; exit 2."""
    assert main(["bench", "extraction", "--config", "llama-tiny", "--random-init", "--layers", "1", "--paragraphs",
                 "4", "--max-length", "1", "--no-memory", "--repeats", "1", "--no-warmup"]) == 2
    line = _one_line(capsys)
    assert line.startswith("aniso bench extraction: llama-tiny-random-1l: --max-length 1 tokens per sequence"), line
    assert "give at least 2" in line and "setting" not in line and "ANISO_" not in line, line


@pytest.mark.parametrize("argv, says", [
    (["--n", "2"], "aniso bench twonn: argument --n: must be an integer of at least 3, got 2"),
    (["--d", "0"], "aniso bench twonn: argument --d: must be an integer of at least 1, got 0"),
])
def test_the_sizes_of_aniso_bench_twonn_are_refused_naming_the_option_typed(clean_env, capsys, argv, says):
    """BE07's kind at aniso bench twonn: "TwoNN benchmark needs n >= 3 and d >= 1, got n=2" named the function's
    parameters, not the options --n and --d."""
    with pytest.raises(SystemExit) as stop:
        main(["bench", "twonn", *argv, "--no-peers"])
    assert stop.value.code == 2
    assert _one_line(capsys).startswith(says)


def _block_registry(tmp_path: Path, block: str, config: dict) -> Path:
    doc = yaml.safe_load(Path(REGISTRY).read_text())
    (row,) = [m for m in doc["models"] if m["id"] == "untrained-bert-block"]
    row = {**row, "source": {"kind": "init", "block": block, "config": config}}
    path = tmp_path / "blocks.yaml"
    path.write_text(yaml.safe_dump({**{k: v for k, v in doc.items() if k != "models"}, "models": [row]}))
    return path


@pytest.mark.parametrize("block, config, says", [
    ("bert-post-ln", {"hidden_size": 30, "num_attention_heads": 4},
     "source.config: hidden_size 30 is not a multiple of num_attention_heads 4"),
    ("bert-post-ln", {"hidden_size": 1, "num_attention_heads": 1},
     "source.config: hidden_size 1 / num_attention_heads 1 gives attention heads of 1 dimension(s); the block "
     "claims need at least 2"),
    ("gpt2-pre-ln", {"n_embd": 30, "n_head": 4}, "source.config: n_embd 30 is not a multiple of n_head 4"),
    ("bert-post-ln", {"num_attention_heads": 5}, "source.config: hidden_size 768 is not a multiple of "
                                                 "num_attention_heads 5"),
    ("llama-pre-rmsnorm", {"hidden_size": 32, "num_attention_heads": 4, "num_key_value_heads": 3},
     "source.config: num_key_value_heads 3 does not divide num_attention_heads 4"),
])
def test_an_untrained_block_row_whose_heads_cannot_split_its_width_is_refused_at_registry_load(
        clean_env, capsys, monkeypatch, block, config, says):
    """K04/K05: hidden size 30 with 4 heads, or hidden size 1, reached transformers ("not a multiple of the number
    of attention heads") or numpy ("a zero vector has no direction") when the sweep ran, naming no row or field.
    Refused when the registry is read: one line naming the file, the row, the field, the value and what is
    allowed; exit 2."""
    for name, value in (("ANISO_BLOCK_SEEDS", "1"), ("ANISO_N_BIAS_NORMS", "3"), ("ANISO_BLOCK_SEQ_LEN", "4")):
        monkeypatch.setenv(name, value)  # (small, should a sweep start)
    path = _block_registry(clean_env, block, config)
    assert main(["block-sweep", "untrained-bert-block", "--registry", str(path)]) == 2
    line = _one_line(capsys)
    assert line.startswith(f"aniso block-sweep: {path}: models[0] (id 'untrained-bert-block'): {says}"), line


def test_an_untrained_block_row_of_sizes_that_split_is_accepted(clean_env):
    from aniso.registry.entries import load_registry

    for block, config in (("bert-post-ln", {"hidden_size": 32, "num_attention_heads": 4}),
                          ("gpt2-pre-ln", {"n_embd": 32, "n_head": 4}),
                          ("llama-pre-rmsnorm", {"hidden_size": 32, "num_attention_heads": 4,
                                                 "num_key_value_heads": 2})):
        load_registry(_block_registry(clean_env, block, config))
    load_registry(REGISTRY)


def test_a_model_a_check_now_refuses_is_refused_though_the_cache_holds_an_entry_for_it(clean_env, tiny_bert_dir,
                                                                                      capsys, monkeypatch):
    """A statistics cache entry computed before a refusal check existed (here the check that the tokenizer is the
    model's own, its padding id against config.json's pad_token_id) was still served, so a folder refused at load
    "measured" from the cache. The checks' source text is part of the cache key: the entry is not served, and the
    folder is refused."""
    import json
    import shutil

    import aniso.sources.hub as hub
    import aniso.stats.pipeline as pipeline

    folder = clean_env / "tiny-bert"
    shutil.copytree(tiny_bert_dir, folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "pad_token_id": 5}))  # the tokenizer pads with id 0
    corpus = clean_env / "corpus.txt"
    corpus.write_text("\n".join(" ".join(f"w{(i * 7 + j) % 40}" for j in range(12)) for i in range(8)) + "\n")
    argv = ["stats", "tiny", "--registry", str(_tiny_registry(clean_env, folder)), "--corpus", str(corpus),
            "--n-sequences", "8"]
    monkeypatch.setenv("ANISO_MAX_LENGTH", "16")
    with monkeypatch.context() as before:  # the code as it was before the check: no such check, other check code
        before.setattr(hub, "tokenizer_problem", lambda *args, **kwargs: None)
        before.setattr(pipeline, "refusal_checks_digest", lambda: "before-the-check", raising=False)
        assert main(argv) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert any((clean_env / "cache").rglob("*")), "the first run wrote no cache entry"
    assert main(argv) == 2
    line = _one_line(capsys)
    assert line.startswith("aniso stats: tiny: ") and "config.json field pad_token_id is 5" in line, line


def test_the_refusal_checks_digest_covers_every_check_of_the_source_kinds_and_the_pipeline(tmp_path):
    """The digest the cache key holds reads the source of the checks where they live: a check added as the others
    are named (``*_problem`` in aniso.sources, ``_check_*`` in the pipeline) changes it without being listed;
    another function does not."""
    import shutil

    import aniso.stats.pipeline as pipeline

    package = Path(pipeline.__file__).resolve().parents[1]
    shutil.copytree(package / "sources", tmp_path / "sources")
    (tmp_path / "stats").mkdir()
    shutil.copy(package / "stats" / "pipeline.py", tmp_path / "stats" / "pipeline.py")
    assert pipeline.refusal_checks_digest(tmp_path) == pipeline.refusal_checks_digest()
    with (tmp_path / "sources" / "hub.py").open("a") as f:
        f.write("\n\ndef helper(x):\n    return x\n")
    assert pipeline.refusal_checks_digest(tmp_path / ".." / tmp_path.name) == pipeline.refusal_checks_digest()
    with (tmp_path / "sources" / "hub.py").open("a") as f:
        f.write("\n\ndef shape_problem(x):\n    return 'no'\n")
    assert pipeline.refusal_checks_digest(tmp_path / "." / "sources" / "..") != pipeline.refusal_checks_digest()
    with (tmp_path / "stats" / "pipeline.py").open("a") as f:
        f.write("\n\ndef _check_inputs(x):\n    return None\n")
    changed = pipeline.refusal_checks_digest(tmp_path / "stats" / "..")
    assert changed not in (pipeline.refusal_checks_digest(), pipeline.refusal_checks_digest(tmp_path / "." / "sources" / ".."))


@pytest.mark.parametrize("ci", [None, "1"])
def test_the_twonn_benchmark_shows_its_passes_on_a_terminal_and_is_quiet_under_ci(capsys, monkeypatch, ci):
    """BE01: `aniso bench twonn` at its largest --n on the CPU ran about 5 minutes a pass with no line. A progress bar
    over its passes (bound, suite, peers) goes to standard error, as the suite's other progress bars do: shown on a
    terminal, quiet under CI=1. (Small points here: the bar, not the time, is what is checked.)"""
    from aniso.bench.twonn import bench_twonn
    from aniso.common import progress

    monkeypatch.delenv("ANISO_PROGRESS", raising=False)
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    with progress.shown(True):  # (a terminal's standard error: pytest's capture is none)
        result = bench_twonn(64, 4, seed=0, peers=False)
    err = capsys.readouterr().err
    assert result["n"] == 64 and result["suite_s"] >= 0
    if ci is None:
        assert "TwoNN benchmark, 64 x 4 points on cpu" in err and "/2 " in err, err  # bound and suite
    else:
        assert err == "", err


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_a_setting_that_refuses_the_model_under_pytest_is_one_line_once_and_a_usage_error(clean_env, tiny_bert_dir,
                                                                                       workers):
    """P01: `pytest claims --aniso-max-length 2` printed its refusal three times (the skip reasons, a must_run
    failure, pytest's list of skips) and exited 1. The refusal is printed once, one line, and pytest exits with its
    usage-error code, as `aniso run` exits 2; with pytest-xdist workers too."""
    import os
    import subprocess
    import sys

    corpus = clean_env / "corpus.txt"
    corpus.write_text("\n".join(" ".join(f"w{(i * 7 + j) % 40}" for j in range(12)) for i in range(8)) + "\n")
    registry = _tiny_registry(clean_env, tiny_bert_dir)
    registry.write_text(registry.read_text() + "    must_run: true\n")
    env = {**os.environ, "COLUMNS": "80"}
    out = subprocess.run([sys.executable, "-m", "pytest", str(ROOT / "claims"), "-p", "no:cacheprovider", *workers,
                          "--rootdir", str(ROOT), "-c", str(ROOT / "pyproject.toml"), "--aniso-registry",
                          str(registry), "--aniso-models", "tiny", "--aniso-claims", "G.token-nlp-anisotropic",
                          "--aniso-corpus", str(corpus), "--aniso-n-sequences", "8", "--aniso-max-length", "2"],
                         capture_output=True, text=True, env=env, cwd=clean_env, timeout=600)
    text = out.stdout + out.stderr
    assert out.returncode == 4, text[-3000:]  # pytest.ExitCode.USAGE_ERROR
    said = [line for line in text.splitlines() if "setting max_length (ANISO_MAX_LENGTH, --aniso-max-length) 2" in line]
    assert len(said) == 1 and said[0].startswith("1 claim test(s) not run: refused: tiny: "), text[-3000:]
    assert "give at least 4" in said[0] and "must_run" not in text, text[-3000:]


def test_block_sweep_of_a_registry_with_no_untrained_block_says_there_is_nothing_to_sweep(clean_env, capsys):
    """`aniso block-sweep --registry my.yaml` with no ids and no untrained-block row printed nothing and exited 0,
    as if it had swept."""
    path = clean_env / "my.yaml"
    path.write_text("models:\n- id: mybert\n  source: {kind: local, path: ./m}\n  modality: text\n"
                    "  granularity: subword\n  architecture: transformer\n  role: encoder\n  family: bert\n")
    assert main(["block-sweep", "--registry", str(path)]) == 2
    line = _one_line(capsys)
    assert line == (f"aniso block-sweep: {path} has no row tagged untrained-block (an untrained block of G §4, "
                    "source kind init), so there is nothing to sweep; name the rows to sweep, or add one"), line
