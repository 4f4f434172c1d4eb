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
    api = (tmp_path / "site/api/index.html").read_text()
    assert "aniso.api.measure" in api and "aniso.registry.selection.parse_claims" in api


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
