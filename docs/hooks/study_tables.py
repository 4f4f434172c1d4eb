"""MkDocs hook: on the budget-study page, the claim x budget x seed tables made from the study's recorded runs
(``docs/studies/miniature_budget.json``, written by ``docs/studies/miniature_budget.py run``), in place of the marker
``<!-- aniso:miniature-budget -->``."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

MARKER = "<!-- aniso:miniature-budget -->"


def on_page_markdown(markdown: str, page, config, files) -> str:
    if MARKER not in markdown:
        return markdown
    here = Path(config["config_file_path"]).parent / "docs" / "studies"
    spec = importlib.util.spec_from_file_location("miniature_budget", here / "miniature_budget.py")
    study = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(study)
    runs = json.loads((here / "miniature_budget.json").read_text()) if (here / "miniature_budget.json").exists() else []
    table = study.table(sorted(runs, key=lambda r: tuple(r["budget"].values()))) if runs else "(no run recorded yet)"
    return markdown.replace(MARKER, table)
