"""The command line: list, run (registry, undetectable, --changed-since), diff (exit codes), help with examples.
`aniso run` on a local folder runs in tests/test_readme_commands.py, as the README has it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from aniso.cli import main
from aniso.judge.results import ClaimResult, ResultsDocument, Uncertainty, provenance, write_results

ROOT = Path(__file__).resolve().parents[1]


def _env(tmp_path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANISO_")}
    env.update(ANISO_CACHE_DIR=str(tmp_path / "cache"), ANISO_REPORT_DIR=str(tmp_path / "reports"), CI="1")
    return env


@pytest.mark.parametrize("command", ["list", "run", "report", "diff", "stats", "block-sweep", "extract"])
def test_every_command_has_help_with_an_example(command, capsys):
    with pytest.raises(SystemExit) as exc:
        main([command, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "example:" in out and f"aniso {command}" in out or "aniso.cli extract" in out


def _row(out: str, model: str) -> str:
    """The table row of ``model`` with its continuation line (the model it stands for)."""
    lines = out.splitlines()
    i = next(i for i, line in enumerate(lines) if line.startswith(model + " "))
    return lines[i] + "\n" + (lines[i + 1] if i + 1 < len(lines) and lines[i + 1].startswith("  for ") else "")


def test_list_shows_claims_and_models_with_their_set_and_weights(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.delenv("ANISO_MODELS_DIR", raising=False)
    assert main(["list", "--registry", str(ROOT / "models.yaml")]) == 0
    out = capsys.readouterr().out
    assert "G.token-nlp-anisotropic" in out and "executable" not in out  # no column that says the same on every row
    minilm = _row(out, "all-MiniLM-L6-v2")
    assert " yes " in minilm and "package: here" in minilm  # in the small set; its weights install with the package
    assert "for bert-base-uncased (relative)" in minilm
    opt13 = _row(out, "opt-13b")
    assert "12853M" in opt13 and " no " in opt13  # large: outside the default set
    assert "for whisper-base (converted)" in _row(out, "whisper-base")  # a model of the papers, from a conversion
    assert " for " not in _row(out, "gemma-3-270m")  # no seed row
    # What a user must set is named: the models folder, which the int8 MobileNet's file is relative to.
    assert "onnx: missing: set ANISO_MODELS_DIR" in " ".join(out.split("mobilenetv2-1.0-int8", 1)[1][:400].split())
    assert "ANISO_MODELS_DIR: models whose files are relative to the models folder" in " ".join(out.split())


def test_list_fits_100_columns_without_importing_torch(tmp_path):
    """`aniso list` in a 100-column terminal: no line wider, whole words only in the weights column, and it imports
    neither torch nor the statistics pipeline. (Its time is measured in benchmarks/test_bench_list.py.)"""
    import unicodedata

    env = {k: v for k, v in os.environ.items() if not k.startswith("ANISO_")} | {"COLUMNS": "100"}
    proc = subprocess.run([sys.executable, "-c", "import sys; from aniso.cli import main; code = main(['list']); "
                           "assert 'torch' not in sys.modules, 'torch imported'; sys.exit(code)"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    widths = [sum(not unicodedata.combining(c) for c in line) for line in proc.stdout.splitlines()]  # x̄: 1 column
    assert max(widths) <= 100 and len(widths) > 80


def test_list_rejects_an_unknown_model_set(capsys):
    assert main(["list", "models", "--models", "smal", "--registry", str(ROOT / "models.yaml")]) == 2
    err = capsys.readouterr().err
    assert "'smal'" in err and "did you mean 'small'" in err


def _result(verdict, value, low, high, fragile=False, model="m"):
    return ClaimResult(claim_id="G.cnn-mostly-isotropic", paper="G", section="§3.2", figure="Fig. 4", statement="s",
                       model_id=model, test=f"claims/x.py::t[{model}]", verdict=verdict, measured={"max_avg_cos": value},
                       uncertainty=Uncertainty(statistic="highest layer avg cos", value=value, low=low, high=high,
                                               threshold=0.2, holds_if="<", holds_share=1.0, fragile=fragile,
                                               n_boot=100))


def _write(tmp_path, name, results) -> Path:
    path = tmp_path / name / "results.json"
    write_results(path, ResultsDocument(provenance=provenance(tmp_path, {}, None), results=results))
    return path


def test_diff_exits_1_on_a_changed_verdict_and_0_on_noise(tmp_path, capsys):
    old = _write(tmp_path, "a", [_result("holds", 0.17, 0.15, 0.19)])
    noise = _write(tmp_path, "b", [_result("holds", 0.18, 0.16, 0.20)])
    moved = _write(tmp_path, "c", [_result("holds", 0.10, 0.09, 0.11)])
    flipped = _write(tmp_path, "d", [_result("does not hold", 0.21, 0.19, 0.23, fragile=True)])
    assert main(["diff", str(old), str(noise)]) == 0
    assert "no verdict or number changed" in capsys.readouterr().out
    assert main(["diff", str(old), str(moved)]) == 0
    out = capsys.readouterr().out
    assert "1 number" in out and "0.17" in out and "0.1 [0.09, 0.11]" in out
    assert main(["diff", str(old), str(flipped)]) == 1
    out = capsys.readouterr().out
    assert "1 verdict" in out and "does not hold" in out and "fragile" in out


def test_diff_flags_a_record_that_went_stale(tmp_path, capsys):
    """A registry record whose numbers the new run does not reproduce is a change that fails the diff (exit 1)."""
    from aniso.judge.results import RecordDrift

    fresh = _result("expected not to hold", 0.27, 0.25, 0.29).model_copy(
        update={"record_check": "record's numbers compared: all within tolerance"})
    stale = fresh.model_copy(update={"record_drift": [RecordDrift(key="p_value", recorded=0.39, measured=0.285,
                                                                  tolerance="p-value")],
                                     "record_check": "record's numbers compared: 1 of them stale"})
    old, new = _write(tmp_path, "a", [fresh]), _write(tmp_path, "b", [stale])
    assert main(["diff", str(old), str(new)]) == 1
    out = capsys.readouterr().out
    assert "1 record" in out and "stale record: p_value recorded 0.39, measured 0.285" in out
    assert main(["diff", str(new), str(old)]) == 0
    assert "record's numbers reproduced" in capsys.readouterr().out


def test_diff_names_added_and_removed_results_and_unreadable_files(tmp_path, capsys):
    old = _write(tmp_path, "a", [_result("holds", 0.17, 0.15, 0.19, model="x")])
    new = _write(tmp_path, "b", [_result("holds", 0.17, 0.15, 0.19, model="y")])
    assert main(["diff", "--all", str(old), str(new)]) == 0
    out = capsys.readouterr().out
    assert "1 added" in out and "1 removed" in out
    assert main(["diff", str(old), str(new)]) == 0  # other models: only the results both have (none) are compared
    assert "left aside 1 only in" in capsys.readouterr().out
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert main(["diff", str(old), str(bad)]) == 2
    assert "bad.json" in capsys.readouterr().err


def test_run_refuses_what_it_cannot_detect(tmp_path, capsys):
    folder = tmp_path / "weird"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "no-such-type", "hidden_size": 8}))
    assert main(["run", str(folder), "--registry", str(ROOT / "models.yaml")]) == 2
    err = capsys.readouterr().err
    assert "no-such-type" in err and "modality, granularity, architecture, role and family" in err
    assert main(["run", str(tmp_path / "nowhere"), "--registry", str(ROOT / "models.yaml")]) == 2
    assert "nowhere" in capsys.readouterr().err


def test_record_rewrites_a_stale_record_and_refuses_bad_files(tmp_path, capsys):
    """`aniso record RESULTS`: the stale record's numbers become the run's; --dry-run writes nothing; an unreadable
    results file is one line and exit 2."""
    import yaml

    from aniso.judge.results import RecordDrift

    registry = tmp_path / "models.yaml"
    registry.write_text("models:\n- id: m\n  source: {kind: local, path: ./m}\n  modality: vision\n"
                        "  granularity: pixel\n  architecture: cnn\n  role: encoder\n  family: f\n  expected:\n"
                        "    G.cnn-mostly-isotropic:\n      verdict: does-not-hold\n"
                        "      measured: {max_avg_cos: 0.521}\n      reason: 'max {max_avg_cos:.3f}'\n")
    r = _result("expected not to hold", 0.539, 0.5, 0.56).model_copy(update={
        "expected": {"measured": {"max_avg_cos": 0.521}},
        "record_drift": [RecordDrift(key="max_avg_cos", recorded=0.521, measured=0.539)]})
    from aniso.judge.results import file_digest

    results = tmp_path / "a" / "results.json"  # as a run of this registry writes it: the registry's digest inside
    write_results(results, ResultsDocument(provenance=provenance(tmp_path, {}, None,
                                                                 registry_sha256=file_digest(registry)), results=[r]))
    other = _write(tmp_path, "other", [r])  # a run that read no registry file (or another one)
    assert main(["record", str(other), "--registry", str(registry)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "was not written by a run of" in err and "0.521" in registry.read_text()
    edited = tmp_path / "edited" / "results.json"  # a number edited after the run: its digest no longer matches
    edited.parent.mkdir()
    edited.write_text(results.read_text().replace("0.539", "0.6"))
    assert main(["record", str(edited), "--registry", str(registry)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "does not match the digest" in err, err
    undigested = tmp_path / "undigested" / "results.json"  # the digest taken out: not written by a run
    undigested.parent.mkdir()
    undigested.write_text(json.dumps({k: v for k, v in json.loads(results.read_text()).items() if k != "digest"}))
    assert main(["record", str(undigested), "--registry", str(registry)]) == 2
    assert "no digest" in capsys.readouterr().err
    assert main(["record", str(results), "--registry", str(registry), "--dry-run"]) == 0
    assert "max_avg_cos 0.521 -> 0.539" in capsys.readouterr().out and "0.521" in registry.read_text()
    assert main(["record", str(results), "--registry", str(registry)]) == 0
    record = yaml.safe_load(registry.read_text())["models"][0]["expected"]["G.cnn-mostly-isotropic"]
    assert record["measured"] == {"max_avg_cos": 0.539}
    from aniso.registry.entries import load_registry
    assert load_registry(registry).get("m").expected["G.cnn-mostly-isotropic"].text == "max 0.539"
    assert main(["record", str(tmp_path / "nowhere.json"), "--registry", str(registry)]) == 2
    assert "nowhere.json" in capsys.readouterr().err


def test_record_refuses_a_results_file_forged_with_its_digest_recomputed(tmp_path, capsys, monkeypatch):
    """A results file edited and its digest recomputed (``content_digest``, which anyone can run), or sealed by another
    installation, or not sealed, is read by report and diff but never written into the registry by `aniso record`:
    one line naming the file and the key, exit 2, the registry unchanged."""
    from aniso.judge.results import RecordDrift, content_digest, file_digest, read_results

    registry = tmp_path / "models.yaml"
    registry.write_text("models:\n- id: m\n  source: {kind: local, path: ./m}\n  modality: vision\n"
                        "  granularity: pixel\n  architecture: cnn\n  role: encoder\n  family: f\n  expected:\n"
                        "    G.cnn-mostly-isotropic:\n      verdict: does-not-hold\n"
                        "      measured: {max_avg_cos: 0.521}\n      reason: 'max {max_avg_cos:.3f}'\n")
    r = _result("expected not to hold", 0.539, 0.5, 0.56).model_copy(update={
        "expected": {"measured": {"max_avg_cos": 0.521}},
        "record_drift": [RecordDrift(key="max_avg_cos", recorded=0.521, measured=0.539)]})
    results = tmp_path / "run" / "results.json"
    write_results(results, ResultsDocument(provenance=provenance(tmp_path, {}, None,
                                                                 registry_sha256=file_digest(registry)), results=[r]))
    before = registry.read_text()
    forged = tmp_path / "forged" / "results.json"
    forged.parent.mkdir()
    data = json.loads(results.read_text().replace("0.539", "0.9"))
    data["digest"] = content_digest(data)
    forged.write_text(json.dumps(data))
    read_results(forged)  # its digest matches: report and diff read it
    unsealed = tmp_path / "unsealed" / "results.json"
    unsealed.parent.mkdir()
    data = json.loads(results.read_text()) | {"seal": None}
    data["digest"] = content_digest(data)
    unsealed.write_text(json.dumps(data))
    for path, says in ((forged, "its seal does not verify"), (unsealed, "not sealed")):
        assert main(["record", str(path), "--registry", str(registry)]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and str(path) in err and says in err and "seal.key" in err, err
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "another-installation"))
    assert main(["record", str(results), "--registry", str(registry)]) == 2
    assert "no seal key" in capsys.readouterr().err
    (tmp_path / "another-installation" / "aniso").mkdir(parents=True)
    (tmp_path / "another-installation" / "aniso" / "seal.key").write_bytes(b"k" * 32)
    assert main(["record", str(results), "--registry", str(registry)]) == 2
    assert "its seal does not verify" in capsys.readouterr().err
    assert registry.read_text() == before
    monkeypatch.undo()
    assert main(["record", str(results), "--registry", str(registry), "--dry-run"]) == 0  # the run's own file


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args], cwd=repo, check=True,
                   capture_output=True)


def _registry_row(ident: str, folder: Path, description: str = "a tiny BERT") -> str:
    return (f"  - id: {ident}\n    description: {description}\n    source: {{kind: local, path: {folder}}}\n"
            "    modality: text\n    granularity: subword\n    architecture: transformer\n    role: encoder\n"
            "    family: bert\n")


def test_run_changed_since_runs_the_rows_added_or_changed_in_a_git_repository(clean_env, tmp_path, tiny_bert_dir,
                                                                             monkeypatch, capsys):
    """A temporary git repository whose models.yaml has three rows at HEAD; then one row's description changes, a
    row is added, one stays as it was: `aniso run --changed-since HEAD` runs the changed and the added row (each as
    `aniso run ID` would, with its own report) and not the unchanged one. No data setting of the caller's: the test
    works in another folder, where a relative one would name nothing."""
    repo = tmp_path / "repo"
    repo.mkdir()
    registry = repo / "models.yaml"
    registry.write_text("models:\n" + _registry_row("kept", tiny_bert_dir) + _registry_row("edited", tiny_bert_dir))
    _git(repo, "init", "-q")
    _git(repo, "add", "models.yaml")
    _git(repo, "commit", "-q", "-m", "registry")
    # Same rows in another order and spacing, one description changed, one row added.
    registry.write_text("# the registry\nmodels:\n" + _registry_row("edited", tiny_bert_dir, "a tiny BERT, described anew")
                        + "\n" + _registry_row("kept", tiny_bert_dir) + _registry_row("added", tiny_bert_dir))
    for name, value in _env(tmp_path).items():
        monkeypatch.setenv(name, value)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(" ".join(f"w{(i * 7 + j) % 40}" for j in range(12)) for i in range(8)) + "\n")
    monkeypatch.setenv("ANISO_CORPUS", str(corpus))
    monkeypatch.chdir(repo)  # the registry as `aniso run` finds it: models.yaml in the working folder
    code = main(["run", "--changed-since", "HEAD", "--claims", "G.token-nlp-anisotropic", "--claims-dir",
                 str(ROOT / "claims"), "--", "--aniso-n-sequences", "8", "--aniso-max-length", "16",
                 "--aniso-n-bootstrap", "0"])
    out, err = capsys.readouterr()
    assert code in (0, 1), out[-3000:] + err[-3000:]
    assert "2 registry row(s) added or changed since HEAD: edited, added" in err
    runs = sorted((tmp_path / "reports").glob("run-*/results.json"))
    assert [json.loads(p.read_text())["results"][0]["model_id"] for p in runs] == ["edited", "added"]
    _git(repo, "add", "models.yaml")
    _git(repo, "commit", "-q", "-m", "more")
    assert main(["run", "--changed-since", "HEAD"]) == 0
    assert "no registry row" in capsys.readouterr().err
    assert main(["run", "--changed-since", "no-such-ref"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--changed-since no-such-ref: no such commit" in err
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "models.yaml").write_text(registry.read_text())
    monkeypatch.chdir(outside)
    assert main(["run", "--changed-since", "HEAD"]) == 2
    assert "is not in a git repository" in capsys.readouterr().err
    assert main(["run", "edited", "--changed-since", "HEAD"]) == 2
    assert "not both" in capsys.readouterr().err


def test_the_example_workflow_runs_the_changed_rows_with_the_command():
    """docs/github-actions-example.yml is YAML whose job runs `aniso run --changed-since` (no inline registry diff)."""
    import yaml

    text = (ROOT / "docs/github-actions-example.yml").read_text()
    steps = yaml.safe_load(text)["jobs"]["claims"]["steps"]
    runs = [s.get("run", "") for s in steps]
    assert any(r.startswith('aniso run --changed-since "origin/${{ github.base_ref }}"') for r in runs)
    assert "load_registry" not in text and "python - " not in text
    assert next(s for s in steps if s.get("uses", "").startswith("actions/checkout"))["with"]["fetch-depth"] == 0


def test_top_level_help_is_plain_text_naming_every_claim_family(capsys, monkeypatch):
    from aniso.registry.selection import FAMILIES

    monkeypatch.setenv("COLUMNS", "100")
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 100
    assert "``" not in out and ":func:" not in out and ":mod:" not in out
    for family in FAMILIES:
        assert f"\n  {family[0]}  " in out, family
    for verdict in ("holds", "does not hold", "expected not to hold", "differs on these inputs", "fragile",
                    "underpowered at this size"):
        assert verdict in " ".join(out.split())
    assert "--changed-since" in out


_COMMANDS = [["run"], ["diff"], ["record"], ["extract"], ["bench", "extraction"], ["bench", "command"],
             ["bench", "twonn"], ["hub", "import"], ["hub", "list"], ["list"], ["report"], ["stats"],
             ["block-sweep"], ["bench"], ["hub"], []]


@pytest.mark.parametrize("columns", [60, 100])
@pytest.mark.parametrize("command", _COMMANDS, ids=lambda c: " ".join(c) or "aniso")
def test_every_help_is_wrapped_to_the_terminal(command, columns, capsys, monkeypatch):
    """Each help's description is wrapped to the terminal's width (COLUMNS), not printed as one line of hundreds of
    characters; its words are all there."""
    monkeypatch.setenv("COLUMNS", str(columns))
    with pytest.raises(SystemExit) as exc:
        main([*command, "--help"])
    assert exc.value.code == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in lines) <= columns, max(lines, key=len)
    if command == ["run"]:
        text = " ".join(" ".join(lines).split())
        assert "pytest options follow `--` (e.g. `-- --aniso-n-sequences 64`)" in text
        assert "  3  nothing measured" in "\n".join(lines)  # the exit codes stay one per line


@pytest.mark.parametrize("argv, says", [
    (["run", "all-MiniLM-L6-v2", "--no-such-option"], "aniso run: unrecognized argument --no-such-option"),
    (["run", "m", "--claimz", "G."], "aniso run: unrecognized arguments --claimz G.; did you mean --claims?"),
    (["run", "m", "--aniso-models", "paper"], "pytest's --aniso-models goes after --"),
    (["rn", "m"], "aniso: unknown command 'rn'; did you mean run?"),
    (["bench", "extractoin"], "aniso bench: unknown command 'extractoin'; did you mean extraction?"),
    (["hub", "lst"], "aniso hub: unknown command 'lst'; did you mean list?"),
    (["list", "modls"], "aniso list: unknown what value 'modls'; did you mean models?"),
    (["bench", "extraction", "--dtype", "float16"], "aniso bench extraction: unknown --dtype value 'float16'"),
    (["diff", "a.json"], "aniso diff: the following arguments are required: new"),
])
def test_a_parser_error_is_one_line_naming_the_subcommand(argv, says, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and says in lines[0] and "usage:" not in captured.err and captured.out == "", lines


@pytest.mark.parametrize("option, says", [
    ("--aniso-n-sequnces", "unknown option --aniso-n-sequnces after --; did you mean --aniso-n-sequences?"),
    ("--maxfial", "the pytest arguments after `--`: unrecognized arguments: --maxfial"),
])
def test_a_misspelt_pytest_option_after_the_separator_is_one_line(option, says, tmp_path, capfd, monkeypatch):
    """`aniso run MODEL -- --misspelt`: one line naming the option (pytest's usage dump is not shown), exit 2."""
    monkeypatch.setenv("ANISO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("ANISO_REPORT_DIR", str(tmp_path / "reports"))
    assert main(["run", "all-MiniLM-L6-v2", "--", option, "2"]) == 2
    captured = capfd.readouterr()
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert len(lines) == 1 and says in lines[0] and "usage:" not in captured.err + captured.out, captured
    assert "did you mean --maxfail?" in lines[0] or option != "--maxfial"


def test_record_adds_the_new_findings_of_a_first_run_with_the_detected_row(tmp_path, capsys):
    """`aniso record RESULTS` after the first run of a model the registry lacked: the claims that did not hold
    become records (does-not-hold, their numbers and inputs), under the detected row written beside the results;
    a registry model without records gets them under its own row; the registry still validates."""
    import yaml

    from aniso.api import DETECTED_ENTRY
    from aniso.judge.results import sealed_lines
    from aniso.registry.entries import load_registry

    registry = tmp_path / "models.yaml"
    registry.write_text("models:\n# a comment kept\n- id: m\n  source: {kind: local, path: ./m}\n  modality: vision\n"
                        "  granularity: pixel\n  architecture: cnn\n  role: encoder\n  family: f\n")
    from aniso.judge.results import file_digest

    new = [_result("does not hold", 0.61, 0.58, 0.64, model=model).model_copy(
        update={"inputs": "images@0123456789abcdef"}) for model in ("m", "mine")]
    held = _result("holds", 0.1, 0.05, 0.15, model="mine").model_copy(update={"test": "claims/x.py::other[mine]"})
    results = tmp_path / "a" / "results.json"
    write_results(results, ResultsDocument(provenance=provenance(tmp_path, {}, None).model_copy(
        update={"registry_sha256": file_digest(registry)}), results=[*new, held]))
    assert main(["record", str(results), "--registry", str(registry), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "m G.cnn-mostly-isotropic: recorded as does-not-hold" in out
    assert "mine: no row in the registry and no detected row" in out and "mine" not in registry.read_text()
    row = yaml.safe_dump([{"id": "mine", "source": {"kind": "local", "path": str(tmp_path)}, "modality": "vision",
                           "granularity": "pixel", "architecture": "cnn", "role": "encoder", "family": "f"}])
    beside = results.with_name(DETECTED_ENTRY)
    for edited in (row, sealed_lines(row).replace("role: encoder", "role: decoder")):  # unsealed; edited after
        beside.write_text(edited)
        assert main(["record", str(results), "--registry", str(registry)]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and DETECTED_ENTRY in err and "mine" not in registry.read_text()
    beside.write_text(sealed_lines(row))  # as the run writes it
    assert main(["record", str(results), "--registry", str(registry)]) == 0
    assert "mine G.cnn-mostly-isotropic: recorded as does-not-hold" in capsys.readouterr().out
    text = registry.read_text()
    assert "# a comment kept" in text and text.count("G.cnn-mostly-isotropic:") == 2
    loaded = load_registry(registry)
    for model in ("m", "mine"):
        record = loaded.get(model).expected["G.cnn-mostly-isotropic"]
        assert record.verdict == "does-not-hold" and record.measured == {"max_avg_cos": 0.61}
        assert record.inputs == "images@0123456789abcdef"


def test_hub_list_of_a_cache_folder_that_is_not_there_is_refused(tmp_path, capsys):
    """A mistyped --cache-dir once answered "nothing cached" with exit 0."""
    (tmp_path / "file").write_text("x")
    for path, what in ((tmp_path / "nothing", "does not exist"), (tmp_path / "file", "is not a folder")):
        assert main(["hub", "list", "--cache-dir", str(path)]) == 2
        err = capsys.readouterr().err
        assert err == f"aniso hub list: --cache-dir {path} {what}\n"


def test_bench_extraction_without_a_subject_asks_for_one(capsys):
    assert main(["bench", "extraction"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "give a registry id (MODEL) or --config" in err and "not both" not in err
