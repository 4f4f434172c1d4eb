"""MkDocs hook: on the findings page, one table per claim of the verdicts that ``models.yaml`` records for it (its
``expected:`` entries: the findings and the verdicts underpowered at their size, with the numbers and the reason
rendered from them), made from the registry when the site is built, in place of the marker
``<!-- aniso:findings-by-claim -->``."""

from __future__ import annotations

from pathlib import Path

MARKER = "<!-- aniso:findings-by-claim -->"


def _number(value) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _decides(expected) -> str:
    """What would decide an underpowered record, after its reason."""
    return f" — decided at: {_cell(expected.decides_at)}" if expected.decides_at else ""


def findings_by_claim(registry_file: Path) -> str:
    from aniso.registry.catalog import CLAIMS
    from aniso.registry.entries import load_registry

    registry = load_registry(registry_file)
    by_claim: dict[str, list] = {}
    for entry in registry:
        for claim_id, expected in (entry.expected or {}).items():
            by_claim.setdefault(claim_id, []).append((entry.id, expected))
    out = []
    for claim_id, claim in CLAIMS.items():
        rows = by_claim.get(claim_id)
        if not rows:
            continue
        out += [f"### `{claim_id}`", "", f"{claim.statement} ({claim.section}{', ' + claim.figure if claim.figure else ''}).",
                "", "| model | recorded verdict | from | measured | reason |", "|---|---|---|---|---|"]
        for model_id, expected in rows:
            measured = ", ".join(f"{k} = {_number(v)}" for k, v in (expected.measured or {}).items()
                                 if not isinstance(v, (dict, list)))
            out.append(f"| `{model_id}` | {_cell(expected.verdict)} | {expected.source} | {_cell(measured) or '—'} | "
                       f"{_cell(expected.text)}{_decides(expected)} |")
        out.append("")
    return "\n".join(out)


def on_page_markdown(markdown: str, page, config, files) -> str:
    if MARKER not in markdown:
        return markdown
    root = Path(config["config_file_path"]).parent
    return markdown.replace(MARKER, findings_by_claim(root / "models.yaml"))
