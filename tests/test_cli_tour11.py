"""Bad input about settings, results files and `aniso bench twonn` (found by a tour of the commands): a reservoir too
small for TwoNN to mean anything, a Python for the TwoNN peers that cannot run them or none at all, an empty file or
a registry given as results (and a results file given as the registry), a variable of the wrong case or with no
name, `aniso --version`. Each is a row of docs/bad-input.md."""

from __future__ import annotations

import json
import math
import stat
from pathlib import Path

import numpy as np
import pytest

from aniso.cli import main

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = ROOT / "models.yaml"
MODEL = "all-MiniLM-L6-v2"


# --- A38: a reservoir too small for TwoNN ---------------------------------------------------------------------

@pytest.mark.parametrize("value", ["3", "127"])
def test_a_reservoir_too_small_for_twonn_is_refused_naming_the_setting(clean_env, monkeypatch, refused_line, value):
    """`ANISO_RESERVOIR_SIZE=3 aniso stats all-MiniLM-L6-v2 --n-sequences 8` printed TwoNN dimensions of 51.77,
    17.99, ... computed from 3 points, exit 0. The reservoir's smallest size is now the fewest points the suite gives
    a TwoNN from (128), refused in one line naming the setting, its variable and option, the value and the bounds."""
    monkeypatch.setenv("ANISO_RESERVOIR_SIZE", value)
    line = refused_line(["stats", MODEL, "--n-sequences", "8"])
    assert ("setting reservoir_size (ANISO_RESERVOIR_SIZE, --aniso-reservoir-size) must be an integer from 128 to "
            f"2147483647, got {value}: TwoNN needs at least 128 points to mean anything") in line, line


def test_the_reservoirs_bound_holds_through_the_api_and_the_claims_need_no_smaller():
    from aniso.common.settings import BOUNDS, TWONN_MIN_POINTS, Settings, SettingError
    from aniso.registry.catalog import MIN_VECTORS

    assert BOUNDS["reservoir_size"][0] == TWONN_MIN_POINTS == 128
    with pytest.raises(SettingError, match=r"setting reservoir_size .* must be an integer from 128 .*, got 64"):
        Settings(reservoir_size=64)
    assert Settings().reservoir_size >= TWONN_MIN_POINTS  # the default every profile (quick included) runs
    assert MIN_VECTORS["second-order"] >= TWONN_MIN_POINTS  # a claim on TwoNN is decided on a full reservoir


def test_twonn_from_fewer_points_than_it_needs_is_nan_and_the_table_says_why():
    """A layer that saw fewer vectors than TwoNN needs (few tokens) gets NaN, not a number from a handful of points,
    and `aniso stats` says why under its table."""
    from aniso.cli import _missing_columns
    from aniso.stats.accumulators import LayerAccumulator

    rng = np.random.default_rng(0)
    few = LayerAccumulator(8, reservoir_size=4096, svd_batch_size=16)
    few.update(rng.standard_normal((100, 8)).astype(np.float32))
    enough = LayerAccumulator(8, reservoir_size=4096, svd_batch_size=16)
    enough.update(rng.standard_normal((200, 8)).astype(np.float32))
    a, b = few.summary(), enough.summary()
    assert a.n_reservoir == 100 and math.isnan(a.twonn)
    assert b.n_reservoir == 200 and 4 < b.twonn < 12
    from types import SimpleNamespace

    assert _missing_columns([a, b], SimpleNamespace(second_order_max_dim=8192)) == [
        "nan: TwoNN of layer(s) 0: 100 vector(s) in the reservoir, fewer than the 128 TwoNN needs to mean anything; "
        "give more inputs"]


# --- A41, A62, A68: the TwoNN benchmark's peers ---------------------------------------------------------------

def _script(tmp_path: Path, body: str) -> str:
    path = tmp_path / "peer-python"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


@pytest.mark.parametrize("python, says", [
    ("/nonexistent/python", "environment variable ANISO_PEER_PYTHON /nonexistent/python: no such file"),
    ("/bin/false", "environment variable ANISO_PEER_PYTHON /bin/false: exited 1 with no error output"),
    ("script", "exited 1 (ModuleNotFoundError: No module named 'dadapy')"),
])
def test_a_peer_python_that_cannot_run_the_peers_is_one_line(clean_env, monkeypatch, aniso_cli, refused_line, python,
                                                             says):
    """`ANISO_PEER_PYTHON=/nonexistent/python aniso bench twonn --n 200 --d 8` ended in a FileNotFoundError
    traceback, `/bin/false` in a RuntimeError one (exit 1): one line now, exit 2, naming the variable, its value and
    what went wrong (the line of its error output that says why), with --no-peers as the way out; before any point
    is made."""
    if python == "script":
        python = _script(clean_env, "echo 'Traceback (most recent call last):' >&2; "
                                    "echo \"ModuleNotFoundError: No module named 'dadapy'\" >&2; exit 1")
    monkeypatch.setenv("ANISO_PEER_PYTHON", python)
    line = refused_line(["bench", "twonn", "--n", "200", "--d", "8"])
    assert line.startswith("aniso bench twonn: environment variable ANISO_PEER_PYTHON") and says in line, line
    assert line.endswith("or give --no-peers to leave the peers out"), line
    code, out, _ = aniso_cli(["bench", "twonn", "--n", "200", "--d", "8", "--no-peers"])
    assert code == 0 and "suite" in out


def test_a_peer_python_that_cannot_run_is_named_through_the_api(clean_env, monkeypatch):
    from aniso.bench.twonn import PeerFailed, bench_twonn

    monkeypatch.setenv("ANISO_PEER_PYTHON", "/nonexistent/python")
    with pytest.raises(PeerFailed, match=r"^environment variable ANISO_PEER_PYTHON /nonexistent/python: no such "
                                         r"file; .*, or pass peers=False to leave the peers out$"):
        bench_twonn(200, 8)
    assert bench_twonn(200, 8, peers=False)["peers"] == {}


def test_peers_that_cannot_run_here_are_named_not_left_out_silently(clean_env, monkeypatch, aniso_cli):
    """`aniso bench twonn` with neither peer installed and ANISO_PEER_PYTHON unset showed the suite and bound rows
    only, with no word that the peers the command compares against were not run."""
    import importlib.util

    if any(importlib.util.find_spec(m) for m in ("dadapy", "skdim")):
        pytest.skip("a peer is installed here")
    monkeypatch.delenv("ANISO_PEER_PYTHON", raising=False)
    code, out, err = aniso_cli(["bench", "twonn", "--n", "200", "--d", "8"])
    assert code == 0 and "suite" in out
    assert ("aniso bench twonn: peer(s) dadapy, scikit-dimension not run: not installed here and ANISO_PEER_PYTHON "
            "is unset") in err and "--no-peers" in err, err
    code, out, err = aniso_cli(["bench", "twonn", "--n", "200", "--d", "8", "--json"])
    assert json.loads(out)["peers_not_run"] == ["dadapy", "scikit-dimension"] and "not run" in err
    code, out, err = aniso_cli(["bench", "twonn", "--n", "200", "--d", "8", "--no-peers"])
    assert code == 0 and "not run" not in err, err


# --- A03, A04: an empty file, no results; a registry given as results ------------------------------------------

def _results(tmp_path: Path) -> Path:
    from aniso.judge.results import ResultsDocument, provenance, write_results

    path = tmp_path / "r1.json"
    write_results(path, ResultsDocument(provenance=provenance(tmp_path, {}, None), results=[]))
    return path


@pytest.mark.parametrize("content, says", [
    ("", "zero.json is empty (0 bytes): not a results.json written by aniso run"),
    ("\n  \n", "zero.json is empty (4 bytes, white space only): not a results.json written by aniso run"),
    ("{}", "zero.json holds no results (no schema_version, provenance or results): not a results.json written by "
           "aniso run"),
    (REGISTRY.read_text(encoding="utf-8"), "zero.json is a model registry (its field models lists the entries), not "
                                           "a results.json written by aniso run"),
    (json.dumps({"models": [{"id": "m"}]}), "zero.json is a model registry"),
], ids=["empty", "blank", "braces", "registry-yaml", "registry-json"])
@pytest.mark.parametrize("door", ["report", "record", "diff"])
def test_a_file_that_holds_no_results_says_so_at_every_door(clean_env, refused_line, content, says, door):
    """`aniso report empty.json` ({}) said "results schema version None, this aniso reads 4 (re-run the claims...)";
    `aniso record zero.json` (0 bytes) "cannot read results (Expecting value: line 1 column 1 (char 0))"; a registry
    given as results a JSON or YAML error. The reader of report, record and diff says what the file is."""
    bad = clean_env / "zero.json"
    bad.write_text(content, encoding="utf-8")
    argv = {"report": ["report", str(bad), "--out", str(clean_env / "e.html")],
            "record": ["record", str(bad), "--registry", str(REGISTRY), "--dry-run"],
            "diff": ["diff", str(_results(clean_env)), str(bad)]}[door]
    line = refused_line(argv)
    assert line.startswith(f"aniso {door}: ") and says in line, line


# --- A49, A54: a results file given as the registry -----------------------------------------------------------

def test_a_results_file_given_as_the_registry_is_named_as_one(clean_env, monkeypatch, refused_line):
    """`aniso record r1.json --registry r1.json` and `ANISO_REGISTRY=r1.json aniso list models` said
    "schema_version: unknown key 'schema_version' (and 10 more error(s))": they name --registry or setting registry
    now, and say the file is a results file, not a registry."""
    r1 = _results(clean_env)
    says = f"{r1} is a results file (the results.json of a run: schema_version, provenance, results), not a registry"
    line = refused_line(["record", str(r1), "--registry", str(r1), "--dry-run"])
    assert line.startswith("aniso record: registry (--registry): ") and says in line, line
    line = refused_line(["list", "models", "--registry", str(r1)])
    assert line.startswith("aniso list: registry (--registry): ") and says in line, line
    monkeypatch.setenv("ANISO_REGISTRY", str(r1))
    line = refused_line(["list", "models"])
    assert line.startswith("aniso list: setting registry (ANISO_REGISTRY, --aniso-registry): ") and says in line, line
    line = refused_line(["record", str(r1), "--dry-run"])
    assert line.startswith("aniso record: setting registry (ANISO_REGISTRY, --aniso-registry): ") and says in line


# --- A50, A51: a variable of the wrong case, a variable with no name ------------------------------------------

@pytest.mark.parametrize("name, says", [
    ("ANISO_corpus", "environment variable ANISO_corpus: no setting has this name; did you mean ANISO_CORPUS? (the "
                     "variables are upper case)"),
    ("ANISO_Peer_Python", "did you mean ANISO_PEER_PYTHON? (the variables are upper case)"),
    ("ANISO_", "environment variable ANISO_: no setting has this name; nothing follows ANISO_ (the settings:"),
])
def test_a_variable_of_the_wrong_case_or_no_name_gets_the_right_hint(clean_env, monkeypatch, refused_line, name,
                                                                     says):
    """`ANISO_corpus=/nonexistent aniso list models` said "no setting has this name" with no suggestion, and
    `ANISO_=1` suggested ANISO_TWIN, a guess that could mislead."""
    monkeypatch.setenv(name, "/nonexistent" if name != "ANISO_" else "1")
    line = refused_line(["list", "models"])
    assert says in line and ("did you mean" not in line if name == "ANISO_" else True), line


# --- A55: aniso --version -------------------------------------------------------------------------------------

def test_aniso_version_prints_the_installed_version(capsys):
    """`aniso --version` said "the following arguments are required: COMMAND"."""
    import importlib.metadata

    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"aniso {importlib.metadata.version('aniso')}"


def test_stats_of_cnn_maps_says_they_get_first_order_statistics_only_not_that_they_need_more_inputs():
    """A CNN map layer narrower than second_order_max_dim has an empty reservoir because CNN maps keep first-order
    statistics only: its NaN columns say so, never "give more inputs" (more inputs change nothing)."""
    from types import SimpleNamespace

    from aniso.cli import _missing_columns
    from aniso.stats.accumulators import LayerAccumulator

    rng = np.random.default_rng(0)
    layers = []
    for dim in (16, 9000):
        acc = LayerAccumulator(dim, second_order=False)
        acc.update(rng.standard_normal((160, dim)).astype(np.float32))
        layers.append(acc.summary())
    assert all(math.isnan(s.twonn) and math.isnan(s.svd_anisotropy) for s in layers)
    cnn = SimpleNamespace(modality="vision", architecture="cnn")
    lines = _missing_columns(layers, SimpleNamespace(second_order_max_dim=8192), cnn)
    assert lines == ["nan: layer(s) 0-1: SVD anisotropy, TwoNN and IsoScore not computed: CNN maps (one flattened "
                     "vector per image) get first-order statistics only, whatever the number of inputs or "
                     "second_order_max_dim"]
