"""Bad input left by the last tour: a looping link given to `aniso run`, a model folder whose name is longer than a
registry id, wrong types given to `aniso.measure`, a results file given as the API's registry, repeated inputs that
leave TwoNN fewer distinct points than it needs, lone carriage returns inside a corpus's lines, a photograph folder
of formats the suite does not read. Each is a row of docs/bad-input.md."""

from __future__ import annotations

import json
import math
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("kind", ["self", "pair"])
def test_a_looping_link_given_to_aniso_run_is_named_as_a_link_not_a_hub_id(clean_env, monkeypatch, refused_line,
                                                                         kind):
    """`aniso run loop`, where ./loop is a link to itself (or two links to each other), said "registry ... names no
    model with this id ...; as a hub id, loop is a symbolic link to itself": the path is the user's, and the
    registry and the hub have nothing to do with it."""
    monkeypatch.chdir(clean_env)
    if kind == "self":
        Path("loop").symlink_to("loop")
    else:
        Path("loop").symlink_to("other")
        Path("other").symlink_to("loop")
    line = refused_line(["run", "loop", "--registry", str(ROOT / "models.yaml")])
    assert line == "aniso run: loop is a symbolic link to itself, or a loop of links", line


def test_a_dangling_link_given_to_aniso_run_names_its_target(clean_env, monkeypatch, refused_line):
    monkeypatch.chdir(clean_env)
    Path("gone").symlink_to(clean_env / "nothing-here")
    line = refused_line(["run", "gone", "--registry", str(ROOT / "models.yaml")])
    assert "gone is a symbolic link to" in line and "which does not exist" in line and "hub id" not in line, line


def test_a_detected_id_is_always_a_valid_registry_id():
    """A model folder named with 140 characters ran as "the detected entry does not validate: ... id: String should
    have at most 128 characters". The detected id keeps the name's beginning and a digest of the whole name."""
    from aniso.registry.entries import ID_MAX_LENGTH, ID_PATTERN
    from aniso.sources.detect import DETECTED_ID_MAX, detected_id

    assert DETECTED_ID_MAX == ID_MAX_LENGTH
    long_a, long_b = "m" * 140, "m" * 139 + "n"
    for name in (long_a, long_b, ".hidden", "__init__", "...", "org/model name", "é" * 200, "a"):
        ident = detected_id(name)
        assert re.match(ID_PATTERN, ident) and len(ident) <= ID_MAX_LENGTH, (name, ident)
    assert detected_id(long_a) != detected_id(long_b)  # same beginning, two ids
    assert detected_id(long_a).startswith("m" * 100)
    assert detected_id("org/model name") == "org-model-name"  # a short name is kept as before


def test_a_folder_with_a_long_name_is_detected_with_a_valid_id(tmp_path):
    from aniso.registry.entries import ModelEntry
    from aniso.sources.detect import detect_entry

    folder = tmp_path / ("x" * 150)
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({
        "model_type": "bert", "architectures": ["BertModel"], "hidden_size": 8, "num_hidden_layers": 1,
        "num_attention_heads": 2, "intermediate_size": 16, "vocab_size": 30}))
    row = detect_entry(str(folder))
    ModelEntry.model_validate(row)  # validates: the registry the run writes holds it
    assert row["id"].startswith("x" * 100) and len(row["id"]) == 128


@pytest.mark.parametrize("model, inputs, named", [
    (5, ["a text", "another"], "model"),
    (None, ["a text", "another"], "model"),
    ("all-MiniLM-L6-v2", 5, "inputs"),
    ("all-MiniLM-L6-v2", [1, 2], "inputs[0]"),
])
def test_wrong_types_given_to_measure_are_type_errors_naming_the_argument(clean_env, model, inputs, named):
    """`aniso.measure(5, texts)` was a ValueError; the API's other wrong types are TypeErrors naming the argument."""
    import aniso

    with pytest.raises(TypeError, match=rf"^{re.escape(named)}: a "):
        aniso.measure(model, inputs)


def test_wrong_typed_inputs_given_to_check_are_a_type_error(clean_env):
    import aniso

    with pytest.raises(TypeError, match=r"^inputs: a int; "):
        aniso.check("all-MiniLM-L6-v2", inputs=5)


@pytest.mark.parametrize("door", ["measure", "check", "models"])
def test_a_results_file_given_as_the_apis_registry_is_named_as_the_registry_argument(clean_env, door):
    """`aniso.check(M, registry="results.json")` said "... is a results file ..." without naming the argument the
    path came through (the CLI names --registry)."""
    import aniso
    from aniso.registry.entries import NotARegistry

    results = clean_env / "results.json"
    results.write_text(json.dumps({"schema_version": 1, "provenance": {}, "results": []}))
    call = {"measure": lambda: aniso.measure("all-MiniLM-L6-v2", ["a text", "another"], registry=results),
            "check": lambda: aniso.check("all-MiniLM-L6-v2", registry=results),
            "models": lambda: aniso.models(registry=results)}[door]
    with pytest.raises(NotARegistry, match=rf"^registry: {results} is a results file"):
        call()


def test_repeated_inputs_leave_twonn_nan_and_count_the_distinct_vectors():
    """Two paragraphs repeated 150 times filled the reservoir with copies of a dozen vectors: `aniso stats` printed
    TwoNN 0.10 for layers where it is about 10. TwoNN is NaN below 128 distinct vectors, which the summary counts."""
    from aniso.stats.accumulators import LayerAccumulator

    g = torch.Generator().manual_seed(0)
    few = torch.randn(12, 16, generator=g)
    acc = LayerAccumulator(16, reservoir_size=256, svd_batch_size=64, seed=1)
    for _ in range(30):
        acc.update(few[torch.randint(0, 12, (20,), generator=g)])
    s = acc.summary()
    assert s.n_reservoir == 256 and s.n_distinct == 12 and math.isnan(s.twonn)

    many = LayerAccumulator(16, reservoir_size=256, svd_batch_size=64, seed=1)
    many.update(torch.randn(600, 16, generator=g))
    s = many.summary()
    assert s.n_distinct == 256 and 5 < s.twonn < 30  # distinct vectors: TwoNN as before


def test_aniso_stats_says_why_twonn_is_nan_for_repeated_inputs():
    from aniso.cli import _missing_columns
    from aniso.common.settings import Settings
    from aniso.stats.results import LayerSummary

    base = dict(dim=8, count=3000, n_zero=0, mean_cosine=0.3, mean_cosine_sampled=0.3, drift_norm=1.0, mean_norm=2.0,
                svd_anisotropy=0.2, svd_anisotropy_batch_mean=0.2, svd_anisotropy_batch_std=0.0, n_svd_batches=3,
                n_reservoir=2048, q95=0.5)
    summaries = [LayerSummary(**base, twonn=math.nan, n_distinct=12), LayerSummary(**base, twonn=7.0, n_distinct=2048)]
    lines = _missing_columns(summaries, Settings())
    assert lines == ["nan: TwoNN of layer(s) 0: 12 distinct vector(s) in the reservoir (the others repeat them: inputs "
                     "that repeat), fewer than the 128 TwoNN needs to mean anything; give more distinct inputs"], lines


def test_lone_carriage_returns_inside_a_corpus_lines_are_named_in_a_warning(tmp_path):
    """A corpus whose lines end in \\n, with a few lone \\r inside (two editors' line ends): the \\r is no line end,
    so two lines are read as one paragraph; that was silent."""
    from aniso.inputs.text import corpus_paragraphs

    path = tmp_path / "mixed.txt"
    path.write_bytes(b"first paragraph\rstill the first\nsecond paragraph\nthird one\r\n")
    with pytest.warns(UserWarning, match=r"mixed\.txt: 1 lone carriage return\(s\) .* read as blanks within a "
                                         r"paragraph, not as line ends"):
        paragraphs = corpus_paragraphs(path)
    assert paragraphs == ["first paragraph\rstill the first", "second paragraph", "third one"]
    clean = tmp_path / "clean.txt"
    clean.write_bytes(b"one\r\ntwo\nthree\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert corpus_paragraphs(clean) == ["one", "two", "three"]


def test_a_photograph_folder_of_other_formats_names_them_at_the_settings_check(tmp_path):
    """`ANISO_IMAGE_DIR=svgs aniso run VISION_MODEL` said "holds no .jpg/.jpeg/.png file" where `aniso stats` named the
    .svg files it left out; the settings check now names them too."""
    from aniso.common.settings import data_folder_problem

    folder = tmp_path / "svgs"
    (folder / "sub").mkdir(parents=True)
    for name in ("a.svg", "b.SVG", "sub/c.svg", "notes"):
        (folder / name).write_text("<svg/>")
    problem = data_folder_problem(str(folder), (".jpg", ".jpeg", ".png"))
    assert problem == (f"{folder} holds no .jpg/.jpeg/.png file (its sub-folders searched too); it holds 4 file(s) "
                       "of other formats (.svg x3, no suffix x1), which this suite does not read"), problem
    empty = tmp_path / "empty"
    empty.mkdir()
    assert data_folder_problem(str(empty), (".jpg",)) == f"{empty} holds no .jpg file (its sub-folders searched too)"
    np.testing.assert_equal(data_folder_problem(str(folder), (".svg",)), None)


def test_a_peer_that_fails_in_its_pass_keeps_the_timings_made(clean_env, monkeypatch, aniso_cli):
    """`aniso bench twonn` with an ANISO_PEER_PYTHON that imports the peers but fails running one (out of memory at
    a large --n) lost the suite's and the bound's timings, minutes of passes, in a one-line refusal. They are printed
    (and in --json), the failed peer named in one line, exit 2."""
    import importlib.util

    if any(importlib.util.find_spec(m) for m in ("dadapy", "skdim")):
        pytest.skip("a peer is installed here: it would run in this process")
    script = clean_env / "peer-python"
    script.write_text("#!/bin/sh\ncase \"$2\" in import*) exit 0;; esac\n"
                      "echo 'Traceback (most recent call last):' >&2; echo 'MemoryError' >&2; exit 1\n")
    script.chmod(0o755)
    monkeypatch.setenv("ANISO_PEER_PYTHON", str(script))
    code, out, err = aniso_cli(["bench", "twonn", "--n", "200", "--d", "8"])
    assert code == 2 and "suite" in out and "bound" in out, (code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("aniso bench twonn: peer dadapy failed after the suite's "
                                                   f"timings above: environment variable ANISO_PEER_PYTHON {script}: "
                                                   "exited 1 (MemoryError)"), lines
    assert "(and 1 more peer(s))" in lines[0]
    code, out, err = aniso_cli(["bench", "twonn", "--n", "200", "--d", "8", "--json"])
    result = json.loads(out)
    assert code == 2 and result["suite_s"] > 0 and set(result["peers_failed"]) == {"dadapy", "scikit-dimension"}


# --- the CLI doors: options named as typed, links, reversed runs, folders that are not what they are given as -----

def test_bench_twonn_names_the_options_of_a_subspace_too_narrow(clean_env, refused_line):
    """`aniso bench twonn --data subspace --d 1` said "data='subspace' needs d >= 10, got d=1" (the function's
    parameters)."""
    line = refused_line(["bench", "twonn", "--data", "subspace", "--d", "1", "--n", "100", "--no-peers"])
    assert line == "aniso bench twonn: argument --d: --data subspace needs at least 10 dimensions, got 1", line


def _results(path: Path, time: str | None = None) -> Path:
    from aniso.judge.results import ResultsDocument, provenance, write_results

    prov = provenance(path.parent, {}, None)
    write_results(path, ResultsDocument(provenance=prov.model_copy(update={"time": time}) if time else prov,
                                        results=[]))
    return path


def test_a_report_to_standard_output_is_refused_not_written_to_a_file_named_dash(clean_env, monkeypatch,
                                                                                refused_line):
    """`aniso report r1.json --out -` wrote a 220 KB file named "-" in the working folder, exit 0."""
    monkeypatch.chdir(clean_env)
    results = _results(clean_env / "r1.json")
    line = refused_line(["report", str(results), "--out", "-"])
    assert line.startswith("aniso report: --out -: the report is an HTML file written to disk, not to standard "
                           "output; name it"), line
    assert not (clean_env / "-").exists()


def test_a_cache_folder_that_is_a_loop_of_links_says_to_remove_it(clean_env, monkeypatch, refused_line):
    """`ANISO_CACHE_DIR=loopc` (a link to itself) said "... is a symbolic link to loopc, which does not exist;
    create that folder", which cannot be done where the link is."""
    loop = clean_env / "loopc"
    loop.symlink_to("loopc")
    monkeypatch.setenv("ANISO_CACHE_DIR", str(loop))
    line = refused_line(["stats", "all-MiniLM-L6-v2", "--n-sequences", "8"])
    assert f"{loop} is a symbolic link to itself, or a loop of links; remove it" in line, line
    assert "create that folder" not in line


def test_diff_of_a_later_run_given_first_says_the_changes_read_backwards(clean_env, aniso_cli):
    """`aniso diff LATER EARLIER` listed the changes from the later run to the earlier one without a word."""
    early = _results(clean_env / "early.json", "2026-11-28T03:52:27+00:00")
    late = _results(clean_env / "late.json", "2026-11-28T04:08:53+00:00")
    _, _, err = aniso_cli(["diff", str(late), str(early)])
    assert (f"note: {late} was run after {early} (2026-11-28T04:08:53+00:00 and 2026-11-28T03:52:27+00:00): the "
            "changes above read from the later run to the earlier one") in err, err
    _, _, err = aniso_cli(["diff", str(early), str(late)])
    assert "was run after" not in err, err


def test_bench_command_of_a_vision_model_names_its_modality(clean_env, refused_line):
    """`aniso bench command efficientnet-lite0` was refused as "a package source", which MiniLM is too."""
    line = refused_line(["bench", "command", "efficientnet-lite0", "--paragraphs", "2", "--repeats", "1"])
    assert line == ("aniso bench command: efficientnet-lite0: aniso bench command times text models (it reads "
                    "paragraphs of the corpus), this one is 'vision'"), line


@pytest.mark.parametrize("make, says", [
    (lambda p: p.mkdir(), "a seal key must be a regular file, not a folder; remove it and a new key is drawn"),
    (lambda p: p.write_bytes(b""), "not a seal key (0 bytes, a key has 32); remove it and a new key is drawn"),
])
def test_a_seal_key_that_cannot_serve_says_the_way_out(tmp_path, make, says):
    """A cache's seal.key replaced by a folder ("not a special file") or left empty: every later run warned and
    recomputed, with no word of what to do."""
    from aniso.common.seal import SealKeyError, load_key

    key = tmp_path / "seal.key"
    make(key)
    with pytest.raises(SealKeyError, match=re.escape(says)):
        load_key(key)
    if key.is_dir():
        key.rmdir()
    else:
        key.unlink()
    assert len(load_key(key)) == 32  # the way out works


@pytest.mark.parametrize("where, says", [
    ("hub/models--org--name", "is one repository's folder of a hub cache; give the cache folder ({hub})"),
    ("hub/models--org--name/snapshots", "is inside the repository folder models--org--name of a hub cache; give the "
                                        "cache folder ({hub})"),
    ("hub/models--org--name/snapshots/abc123", "is inside the repository folder models--org--name of a hub cache"),
    ("stats", "is aniso's statistics cache (it holds seal.key; setting cache_dir), not a hub cache"),
])
@pytest.mark.parametrize("door", ["list", "import"])
def test_a_folder_given_as_the_hub_cache_that_is_another_folder_is_named(clean_env, refused_line, where, says, door):
    """`aniso hub list --cache-dir HUB/models--org--name` (or its snapshots, or aniso's statistics cache) said
    "nothing cached", exit 0; `hub import` would write a cache inside a cache."""
    hub = clean_env / "hub"
    (hub / "models--org--name" / "snapshots" / "abc123").mkdir(parents=True)
    (clean_env / "stats").mkdir()
    (clean_env / "stats" / "seal.key").write_bytes(bytes(32))
    folder = clean_env / where
    argv = ["hub", "list", "--cache-dir", str(folder)] if door == "list" else \
        ["hub", "import", "org/other", str(ROOT / "tests"), "--cache-dir", str(folder)]
    line = refused_line(argv)
    assert line.startswith(f"aniso hub {door}: --cache-dir {folder} {says.format(hub=hub)}"), line
