"""The documentation site: `mkdocs build --strict` succeeds (a broken link or a page missing from the navigation
fails it), the settings page lists every setting from the settings' own definitions, and the bad-input table names
tests that exist."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _build(config_dir: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                          cwd=config_dir, capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT / "src")})


def test_the_site_builds_strict_with_every_setting_and_the_api(tmp_path):
    from aniso.common.settings import SETTING_HELP, Settings

    built = _build(ROOT, tmp_path / "site")
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    settings = (tmp_path / "site/settings/index.html").read_text()
    names = [f.name for f in fields(Settings)]
    assert set(names) == set(SETTING_HELP)
    for name in names:  # the five the hand-written table left out among them: batch_size, device, ...
        assert f"ANISO_{name.upper()}" in settings and f"--aniso-{name.replace('_', '-')}" in settings, name
    findings = (tmp_path / "site/findings/index.html").read_text()  # one table per claim, from models.yaml
    assert "<code>G.speech-all-layers-0.2</code>" in findings and "<code>whisper-tiny.en</code>" in findings
    assert "aniso:findings-by-claim" not in findings
    assert "aniso:recorded-runs" not in findings and "aniso:profile-comparison" not in findings  # from docs/records
    for record in sorted((ROOT / "docs/records").glob("*.json")):
        assert record.relative_to(ROOT).as_posix() in findings, record
    api = (tmp_path / "site/api/index.html").read_text()
    assert "aniso.api.measure" in api and "aniso.registry.selection.parse_claims" in api
    performance = (tmp_path / "site/performance/index.html").read_text()  # the recorded benchmark runs, from files
    assert "aniso:bench-results" not in performance
    for run in sorted((ROOT / "benchmarks/results").glob("*/*.json")):
        assert run.relative_to(ROOT).as_posix() in performance, run


def _bench_hook():
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_tables", ROOT / "docs/hooks/bench_tables.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    return hook


def test_the_benchmark_table_is_made_from_the_recorded_runs(tmp_path):
    """One row per results file, by date, with its command, machine, commit and the numbers of its output."""
    import json

    hook = _bench_hook()
    root = tmp_path / "benchmarks" / "results"
    (root / "a").mkdir(parents=True)
    meta = {"machine": {"cpu": "Some CPU", "cores": 2, "gpu": None}, "versions": {"torch": "9.9"}, "commit": "abc1234"}
    (root / "a/twonn.json").write_text(json.dumps(meta | {
        "command": "aniso bench twonn --n 16384", "date": "2026-01-02T00:00:00Z", "result": {
            "n": 16384, "d": 768, "data": "massive", "suite_s": 1.5, "bound_s": 2.0, "ratio_to_bound": 0.75,
            "estimate": 158.08, "peers": {"dadapy": {"s": 4.0, "estimate": 158.08}}}}))
    (root / "a/minilm.json").write_text(json.dumps(meta | {
        "command": "aniso bench extraction all-MiniLM-L6-v2", "date": "2026-01-01T00:00:00Z", "result": {
            "forward_s": 2.85, "tokens": 23616, "ratios": {"hidden_states": 1.02, "first_order": 1.18, "all": 1.39,
                                                           "every": 1.62},
            "memory": {"peak_1x_mb": 757.0, "peak_8x_mb": 829.0, "growth": 0.095}}}))
    (root / "a/rounds.json").write_text(json.dumps(meta | {
        "command": "aniso bench extraction x", "date": "2026-01-01T12:00:00Z", "result": {
            "forward_s": 2.85, "tokens": 100, "ratios": {"hidden_states": 1.0, "first_order": 1.1, "all": 1.3,
                                                         "every": 1.4},
            "rounds": {"forward": [2.9, 2.85, 3.0]},
            "ratios_median": {"hidden_states": 1.0, "first_order": 1.1, "all": 1.34, "every": 1.46}}}))
    (root / "a/failed.json").write_text(json.dumps(meta | {"command": "aniso bench command x", "exit_code": 1,
                                                            "date": "2026-01-03T00:00:00Z", "result": None}))
    rows = hook.table(root).splitlines()
    assert len(rows) == 6 and "extraction" in rows[2] and "twonn" in rows[4] and "failed (exit 1)" in rows[5]
    assert "all 1.39×, every 1.62×" in rows[2] and "+9.5%" in rows[2] and "Some CPU, 2 cores" in rows[2]
    assert "median" not in rows[2] and "(median of 3 rounds: all 1.34×, every 1.46×)" in rows[3]
    assert "bound 2.00 s (0.75×); dadapy 4.00 s (158.080)" in rows[4] and "`benchmarks/results/a/twonn.json`" in rows[4]
    assert hook.table(tmp_path / "nothing") == "(no benchmark run recorded yet)"


def test_the_gpu_table_is_made_from_the_gpu_runs_of_the_variants(tmp_path):
    """One row per file under a ``*-gpu`` folder whose result has ratios, in file order: shape and dtype, tokens,
    the bare forward pass, each variant's multiple and the peak beyond the weights where recorded; a GPU run without
    ratios (a failed one, a memory run) and CPU folders are left out."""
    import json

    hook = _bench_hook()
    root = tmp_path / "benchmarks" / "results"
    for folder in ("2026-01-01-gpu", "2026-01-01-cpu"):
        (root / folder).mkdir(parents=True)
    result = {"model": "llama-7b-random-32l", "dtype": "torch.bfloat16", "tokens": 30170, "max_length": 128,
              "forward_s": 0.9612, "ratios": {"hidden_states": 1.157, "first_order": 2.096, "all": 3.85,
                                              "every": 7.001}}
    (root / "2026-01-01-gpu/a.json").write_text(json.dumps({"date": "2026-01-01", "result": result | {
        "peak_beyond_weights_gib": {"every": 21.934}}}))
    (root / "2026-01-01-gpu/b.json").write_text(json.dumps({"date": "2026-01-02", "result": result}))
    (root / "2026-01-01-gpu/failed.json").write_text(json.dumps({"date": "2026-01-02", "result": None}))
    (root / "2026-01-01-cpu/c.json").write_text(json.dumps({"date": "2026-01-02", "result": result}))
    rows = hook.gpu_table(root).splitlines()
    assert len(rows) == 4
    assert rows[2] == ("| 2026-01-01 | llama-7b-random-32l (bfloat16) | 30,170 (≤ 128) | 0.961 s | 1.16× | 2.10× | "
                       "3.85× | 7.00× | 21.9 GiB | `benchmarks/results/2026-01-01-gpu/a.json` |")
    assert "| — |" in rows[3] and rows[3].endswith("`benchmarks/results/2026-01-01-gpu/b.json` |")
    assert hook.gpu_table(tmp_path / "nothing") == "(no GPU run recorded yet)"


def test_a_broken_link_fails_the_build(tmp_path):
    """The same site with one link to a page that does not exist: the strict build fails, naming it."""
    copy = tmp_path / "copy"
    shutil.copytree(ROOT / "docs", copy / "docs")
    shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    (copy / "src").symlink_to(ROOT / "src")
    with open(copy / "docs/index.md", "a") as f:
        f.write("\nSee [the missing page](no-such-page.md).\n")
    built = _build(copy, tmp_path / "site")
    assert built.returncode != 0 and "no-such-page.md" in built.stdout + built.stderr


def _bad_input_rows() -> list[str]:
    text = (ROOT / "docs/bad-input.md").read_text()
    return [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| input")]


def test_the_bad_input_table_has_40_cases_each_with_a_test_that_exists():
    rows = _bad_input_rows()
    assert len(rows) >= 40 and len({r.split(" | ")[0] for r in rows}) == len(rows)
    for row in rows:
        tests = re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", row.rsplit(" | ", 1)[-1])
        assert tests, row
        for path, name in tests:
            assert re.search(rf"^def {name}\(", (ROOT / path).read_text(), re.M), f"{path}::{name} ({row[:60]})"


#: What reStructuredText markup looks like when a page shows it raw: a Sphinx role or a reST literal.
RAW_MARKUP = re.compile(r":(?:py:)?(?:func|data|class|meth|mod|attr|exc|obj|const):`|``")


def test_no_page_of_the_site_shows_raw_sphinx_roles_or_double_backticks(tmp_path):
    """The docstrings are written with Sphinx roles and reST literals (``:func:`x```, ````x````); the API reference
    renders them as links and code (docs/hooks/griffe_docstrings.py), and no page shows them raw."""
    built = _build(ROOT, tmp_path / "site")
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    pages = sorted((tmp_path / "site").rglob("*.html"))
    assert len(pages) > 10
    raw = [f"{page.relative_to(tmp_path / 'site')}: ...{text[max(0, m.start() - 60):m.end() + 40]}..."
           for page in pages for text in [page.read_text()] for m in RAW_MARKUP.finditer(text)]
    assert not raw, f"{len(raw)} raw roles or literals:\n" + "\n".join(raw[:20])
    api = (tmp_path / "site/api/index.html").read_text()
    assert '<link rel="canonical" href="http' in api  # the site has a site_url
    # a role to an object the page documents is a link to it; one to an object it does not is its name as code
    assert re.search(r'<a class="autorefs autorefs-internal"[^>]*href="#aniso\.api\.LayerStats"', api)
    assert '<span title="aniso.sources.ModelUnavailable"><code>aniso.sources.ModelUnavailable</code></span>' in api
    # a parameter described in prose is not set as its type: measure's `model` shows the signature's type
    assert "<code>a registry id" not in api and "registry id (<code>aniso.models()</code>)" in api


def _griffe_hook():
    import importlib.util

    spec = importlib.util.spec_from_file_location("griffe_docstrings", ROOT / "docs/hooks/griffe_docstrings.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    return hook


def test_the_docstrings_markup_is_made_markdown():
    """Roles resolved in the object's scope (``~`` shows the last part), literals as code, ``name : prose`` entries
    as descriptions, a type-like entry kept, a Raises section in prose as an admonition, and ``::`` before code."""
    import griffe

    hook = _griffe_hook()
    module = griffe.visit("m", filepath=Path("m.py"), code=(
        "from os.path import join\n\ndef f(x, n):\n    '''Doc.'''\n\nclass C:\n    '''Doc.'''\n"))
    text = ("Calls :func:`join` and :class:`~a.b.Thing`, ``x`` and :mod:`aniso.metrics`::\n\n    f(``x``)\n\n"
            "Parameters\n----------\nx : a list of texts (see ``n``)\n    more text\nn : int\n    a count\n\n"
            "Raises\n------\nValueError naming ``x``;\nKeyError otherwise.\n")
    out = hook.markdown_docstring(module["f"], text)
    assert '<autoref identifier="os.path.join" optional><code>join()</code></autoref>' in out
    assert '<autoref identifier="a.b.Thing" optional><code>Thing</code></autoref>' in out
    assert '<autoref identifier="aniso.metrics" optional><code>aniso.metrics</code></autoref>:\n' in out
    assert "`x` and" in out and "    f(``x``)" in out  # code stays code
    assert "\nx\n    a list of texts (see `n`)\n    more text\nn : int\n" in out
    assert "\nErrors\n------\nValueError naming `x`;\nKeyError otherwise." in out and "Raises" not in out
    assert not RAW_MARKUP.search(out.replace("    f(``x``)", ""))


def _records_hook():
    import importlib.util

    spec = importlib.util.spec_from_file_location("run_records", ROOT / "docs/hooks/run_records.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    return hook


def _results(profile: str, verdict: str, value: float, time: str) -> dict:
    """A results.json of one run with one decided verdict and one skipped test."""
    return {"provenance": {"time": time, "git_commit": "abc1234", "versions": {"torch": "9.9", "transformers": "8.8"},
                           "profile": {"name": profile}, "settings": {"profile": profile, "n_sequences": 256,
                                                                      "seed": 0, "cache_dir": "/somewhere"}},
            "results": [
                {"claim_id": "G.token-nlp-anisotropic", "model_id": "m", "verdict": verdict, "inputs": "wiki@1",
                 "measured": {"max_avg_cos": value, "layer_of_max": "5", "per_layer": [0.1, 0.2]},
                 "uncertainty": {"statistic": "margin", "value": value - 0.08, "low": 0.1, "high": 0.2,
                                 "fragile": False}, "n_items": 256},
                {"claim_id": "G.char-nlp-anisotropic", "model_id": None, "verdict": "skipped"}],
            "models": {"m": {"layer_names": ["0", "1"], "meta": {"seconds": 12.5, "cache": {"hit": False}}}},
            "summary": {"holds": 1, "skipped": 1}}


def test_the_findings_tables_are_made_from_the_recorded_runs(tmp_path):
    """A record keeps what the tables show (no machine path, no per-layer list); the page gets one table per record,
    and the paper-profile records set against the latest quick one, a difference without a note flagged."""
    import json

    hook = _records_hook()
    root = tmp_path / "docs" / "records"
    root.mkdir(parents=True)
    quick = hook.trim(_results("quick", "holds", 0.2544, "2026-01-01T00:00:00+00:00"), "aniso run m", 171, 908)
    assert quick["settings"] == {"n_sequences": 256, "seed": 0} and quick["wall_s"] == 171
    assert [v["claim"] for v in quick["verdicts"]] == ["G.token-nlp-anisotropic"]
    assert quick["verdicts"][0]["measured"] == {"max_avg_cos": 0.2544, "layer_of_max": "5"}
    assert "/somewhere" not in json.dumps(quick)
    (root / "a-quick.json").write_text(json.dumps(quick))
    rows = hook.recorded_runs(root).splitlines()
    assert rows[0] == "### 2026-01-01: `aniso run m` (quick)" and "171 s wall, peak 908 MB resident" in rows[2]
    assert rows[-1].startswith("| `G.token-nlp-anisotropic` | `m` | holds | margin: 0.1744 [0.1, 0.2] |")

    registry = ROOT / "models.yaml"
    assert hook.profile_comparison(root, registry).startswith("No `paper`-profile run is recorded yet")
    paper = hook.trim(_results("paper", "does-not-hold", 0.07, "2026-01-02T00:00:00+00:00"), "aniso run m "
                      "--aniso-profile paper", 3600, 4000)
    (root / "b-paper.json").write_text(json.dumps(paper))
    table = hook.profile_comparison(root, registry)
    row = next(line for line in table.splitlines() if line.startswith("| `m` |"))
    assert "holds: margin: 0.1744" in row and "does-not-hold: margin" in row and "**no**" in row
    assert "(not yet explained)" in row and "3600 s, 4,000 MB" in row and "Not yet recorded at the `paper`" in table
    paper["notes"] = {"G.token-nlp-anisotropic m": "the whole validation set has longer paragraphs"}
    (root / "b-paper.json").write_text(json.dumps(paper))
    assert "the whole validation set has longer paragraphs" in hook.profile_comparison(root, registry)


def test_a_number_in_the_prose_is_read_from_the_latest_record(tmp_path):
    """``<!-- aniso:value MODEL CLAIM KEY FORMAT -->`` gives the latest record's number; one that no record holds
    fails the build instead of showing nothing."""
    import json

    hook = _records_hook()
    root = tmp_path / "docs" / "records"
    root.mkdir(parents=True)
    for name, value, time in (("a", 0.2544, "2026-01-01T00:00:00+00:00"), ("b", 0.3011, "2026-01-02T00:00:00+00:00")):
        (root / f"{name}.json").write_text(json.dumps(hook.trim(_results("quick", "holds", value, time), "aniso run m")))
    (tmp_path / "mkdocs.yml").write_text("site_name: x\n")
    page = "avg cos <!-- aniso:value m G.token-nlp-anisotropic max_avg_cos .2f -->, margin " \
           "<!-- aniso:value m G.token-nlp-anisotropic value -->"
    out = hook.on_page_markdown(page, None, {"config_file_path": str(tmp_path / "mkdocs.yml")}, None)
    assert out == "avg cos 0.30, margin 0.221"
    # a later paper-profile record is set beside the prose's profile in its own table, never read by the prose
    (root / "c.json").write_text(json.dumps(hook.trim(_results("paper", "holds", 0.4, "2026-01-03T00:00:00+00:00"),
                                                      "aniso run m --aniso-profile paper")))
    out = hook.on_page_markdown(page, None, {"config_file_path": str(tmp_path / "mkdocs.yml")}, None)
    assert out == "avg cos 0.30, margin 0.221"
    with pytest.raises(ValueError, match="aniso:value m G.token-nlp-anisotropic nothing: no record"):
        hook.on_page_markdown("<!-- aniso:value m G.token-nlp-anisotropic nothing -->", None,
                              {"config_file_path": str(tmp_path / "mkdocs.yml")}, None)


def test_a_verdict_in_the_prose_is_read_from_the_latest_record(tmp_path):
    """``<!-- aniso:verdict MODEL CLAIM -->`` gives the latest record's verdict as the record spells it, and a value
    marker gives a measured value the record keeps as text (a layer's name) as it is; a verdict that no record holds
    fails the build instead of showing nothing."""
    import json

    hook = _records_hook()
    root = tmp_path / "docs" / "records"
    root.mkdir(parents=True)
    for name, verdict, time in (("a", "holds", "2026-01-02T00:00:00+00:00"),
                                ("b", "underpowered at this size", "2026-01-01T00:00:00+00:00")):
        (root / f"{name}.json").write_text(json.dumps(hook.trim(_results("quick", verdict, 0.3, time), "aniso run m")))
    (tmp_path / "mkdocs.yml").write_text("site_name: x\n")
    config = {"config_file_path": str(tmp_path / "mkdocs.yml")}
    page = "anisotropic at layer <!-- aniso:value m G.token-nlp-anisotropic layer_of_max -->: " \
           "<!-- aniso:verdict m G.token-nlp-anisotropic -->"
    assert hook.on_page_markdown(page, None, config, None) == "anisotropic at layer 5: holds"  # a, the later date
    (root / "c.json").write_text(json.dumps(hook.trim(_results("quick", "expected not to hold", 0.3,
                                                               "2026-01-03T00:00:00+00:00"), "aniso run m")))
    assert hook.on_page_markdown(page, None, config, None).endswith(": expected not to hold")
    for model, claim in (("m", "G.char-nlp-anisotropic"), ("other", "G.token-nlp-anisotropic")):  # skipped; not run
        with pytest.raises(ValueError, match=f"aniso:verdict {model} {claim}: no record"):
            hook.on_page_markdown(f"<!-- aniso:verdict {model} {claim} -->", None, config, None)
