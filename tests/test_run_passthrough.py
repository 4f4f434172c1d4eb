"""pytest arguments after ``--`` that change what a claims run does: options that make pytest list or describe tests
instead of running them are refused; a ``-k`` filter or a ``--deselect`` that selects nothing, and a claims module
that does not import, are named in the run's one line (not "no selected claim applies", not "interrupted (Ctrl-C)")."""

from __future__ import annotations

from pathlib import Path

import pytest

from aniso import api
from aniso.cli import main

ROOT = Path(__file__).resolve().parents[1]
MODEL = "all-MiniLM-L6-v2"


@pytest.mark.parametrize("arg", ["--co", "--collect-only", "--version", "--help", "--fixtures", "--markers"])
def test_describe_only_options_are_refused_in_one_line(clean_env, capsys, arg):
    code = main(["run", MODEL, "--claims", "G.token-nlp-anisotropic", "--", arg])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and f"{arg} makes pytest list, describe or print" in err[0], err


def test_a_k_filter_that_selects_nothing_is_named():
    tally = api._Tally()
    said = api._why_nothing_ran(tally, ["--aniso-n-sequences", "8", "-k", "nothing"], MODEL)
    assert said == (f"the pytest filter -k 'nothing' after -- selected none of the claim tests of {MODEL}; "
                    "nothing measured")
    tally.collected = tally.claim_tests = 2  # claim tests were selected: the usual line
    assert api._why_nothing_ran(tally, ["-k", "nothing"], MODEL) is None
    assert api._why_nothing_ran(api._Tally(), [], MODEL) is None  # no filter of the user's: the usual line


def test_a_claims_module_with_a_syntax_error_is_named_not_an_interrupt(clean_env, tmp_path, capsys):
    claims = tmp_path / "claims"
    claims.mkdir()
    (claims / "test_broken.py").write_text('import pytest\n\n\n@pytest.mark.claim("G.token-nlp-anisotropic")\n'
                                           "def test_x(:\n    pass\n")
    code = main(["run", MODEL, "--claims-dir", str(claims), "--registry", str(ROOT / "models.yaml")])
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 2 and "Ctrl-C" not in last, last
    assert last.startswith("aniso run: cannot collect the claim tests: ") and "test_broken.py" in last, last
    assert "SyntaxError" in last, last


def test_a_hub_id_of_a_registry_row_points_at_the_row(clean_env, capsys):
    """`aniso run sentence-transformers/all-MiniLM-L6-v2` (the hub repo of the packaged row) and `aniso run
    Sentence-Transformers/ALL-MINILM-L6-V2` said only "not cached here"; the line now names the registry row and its
    command (an id in another case alone: tests/test_tour3_settings.py)."""
    for model in ("sentence-transformers/all-MiniLM-L6-v2", "Sentence-Transformers/ALL-MINILM-L6-V2"):
        code = main(["run", model, "--claims", "G.token-nlp-anisotropic", "--registry", str(ROOT / "models.yaml")])
        last = capsys.readouterr().err.strip().splitlines()[-1]
        assert code == 2 and last.endswith(
            f"the registry row '{MODEL}' has this name: aniso run {MODEL}"), last


def test_a_registry_id_that_is_also_a_folder_here_says_which_runs(clean_env, monkeypatch):
    """`aniso run all-MiniLM-L6-v2` beside a folder ./all-MiniLM-L6-v2 runs the registry's row; the run says so, and
    that the folder is run under another name (`aniso run ./all-MiniLM-L6-v2` would take the row's id). (A row whose
    weights are here: one that is not is refused before, as `aniso stats` refuses it.)"""
    model = "all-MiniLM-L6-v2"
    (clean_env / model).mkdir()
    monkeypatch.chdir(clean_env)
    said = []
    monkeypatch.setattr("pytest.main", lambda *a, **k: 5)  # what runs after the choice is not this test's
    api.run_claims(model, "G.token-nlp-anisotropic", registry=ROOT / "models.yaml", claims_dir=ROOT / "claims",
                   say=said.append)
    assert said[0] == f"{model} is a registry id and also a path here; running the registry's row, not the path " \
                      "(whose id would be the row's: rename it to measure it)", said


def test_stats_says_why_a_column_is_nan():
    """`aniso stats efficientnet-lite0` printed nan in SVD aniso, TwoNN and IsoScore for every layer, with no word
    why: one line per reason now, naming the layers and the setting."""
    from types import SimpleNamespace

    from aniso.cli import _missing_columns

    nan = float("nan")
    layers = [SimpleNamespace(dim=d, count=n, n_reservoir=n, twonn=t) for d, n, t in
              [(401408, 8, nan), (62720, 8, nan), (384, 200, 5.0), (384, 2, nan), (384, 1, nan), (99999, 1, nan)]]
    lines = _missing_columns(layers, SimpleNamespace(second_order_max_dim=8192))
    assert lines == ["nan: layer(s) 0-1, 5 are wider than second_order_max_dim (8192; ANISO_SECOND_ORDER_MAX_DIM), so "
                     "only first-order statistics are kept: no SVD anisotropy, TwoNN or IsoScore",
                     "nan: TwoNN of layer(s) 3-4: 1 to 2 vector(s) in the reservoir, fewer than the 128 TwoNN "
                     "needs to mean anything; give more inputs"]
    assert _missing_columns(layers[2:3], SimpleNamespace(second_order_max_dim=8192)) == []


def test_a_folder_that_is_also_a_cached_hub_id_says_which_runs(clean_env, monkeypatch, tiny_bert_dir):
    """`aniso run me/minilm` with a folder ./me/minilm and the hub model me/minilm in the hub cache ran the folder
    without a word."""
    import shutil

    from aniso.sources.hubcache import repo_dir

    monkeypatch.chdir(clean_env)
    shutil.copytree(tiny_bert_dir, clean_env / "me" / "tiny")
    hub = clean_env / "hub"
    monkeypatch.setattr("aniso.sources.hubcache.cache_root", lambda cache_dir=None: hub)
    repo_dir("me/tiny").mkdir(parents=True)
    said = []
    monkeypatch.setattr("pytest.main", lambda *a, **k: 5)  # what runs after the choice is not this test's
    api.run_claims("me/tiny", "G.token-nlp-anisotropic", registry=ROOT / "models.yaml", claims_dir=ROOT / "claims",
                   say=said.append)
    assert said[0] == ("me/tiny is a folder here and also a hub id in the hub cache; running the folder (for the "
                       "hub's model, run it from another folder)"), said


def test_a_claims_run_leaves_no_benchmark_folder_in_the_working_folder(clean_env, monkeypatch):
    """`aniso run` from a clean folder left an empty .benchmarks/ there (pytest-benchmark's storage); a run given a
    --benchmark-* option keeps the plugin."""
    monkeypatch.chdir(clean_env)
    seen = []
    monkeypatch.setattr("pytest.main", lambda args, **k: seen.append(list(args)) or 5)
    api.run_claims("all-MiniLM-L6-v2", "G.token-nlp-anisotropic", registry=ROOT / "models.yaml",
                   claims_dir=ROOT / "claims")
    assert "no:benchmark" in seen[0]
    api.run_claims("all-MiniLM-L6-v2", "G.token-nlp-anisotropic", registry=ROOT / "models.yaml",
                   claims_dir=ROOT / "claims", pytest_args=["--benchmark-disable"])
    assert "no:benchmark" not in seen[1]


@pytest.mark.parametrize("args, named", [
    (["--deselect", "claims/test_godey_pretrained.py::test_token_nlp_anisotropic[m]"],
     "--deselect 'claims/test_godey_pretrained.py::test_token_nlp_anisotropic[m]'"),
    (["--deselect=claims/x.py::t[m]"], "--deselect 'claims/x.py::t[m]'"),
    (["--ignore", "claims/test_godey_pretrained.py"], "--ignore 'claims/test_godey_pretrained.py'"),
    (["-m", "not claim"], "-m 'not claim'"),
    (["-m=not claim"], "-m 'not claim'"),
])
def test_a_deselect_that_removes_every_claim_test_is_named_not_the_model(args, named):
    """`aniso run M -- --deselect NODE` removing the only claim test said "no selected claim applies to M"."""
    tally = api._Tally()
    tally.collected = 1  # the offline pipeline check, which marks no claim
    said = api._why_nothing_ran(tally, ["--aniso-n-sequences", "8", *args], MODEL)
    assert said is not None and said.startswith(f"the pytest filter {named} after -- selected none of the claim "
                                                f"tests of {MODEL}"), said
