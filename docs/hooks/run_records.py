"""MkDocs hook: on the findings page, the tables of the recorded claim runs (``docs/records/*.json``: each file one
run of ``aniso run`` / ``pytest claims/``, trimmed from its ``results.json`` to what the tables show, with its
command, date, commit, profile and settings), and the numbers and verdicts of the prose, in place of these markers:

- ``<!-- aniso:recorded-runs -->``: one table per recorded run, its verdicts with their deciding statistic and 95%
  interval;
- ``<!-- aniso:profile-comparison -->``: every verdict of a ``paper``-profile record set against the same claim and
  model in the latest ``quick``-profile record, with each model's time and peak memory at the papers' size, and the
  explanation the record gives (``notes``) of each difference; until a ``paper`` record exists, which models it
  would cover and how to record it.

- ``<!-- aniso:value MODEL CLAIM KEY [FORMAT] -->``: one number of the latest ``quick``-profile record (the profile
  CI runs; :data:`PROSE_PROFILE`) that measured ``CLAIM`` on
  ``MODEL``, ``KEY`` of its ``measured`` numbers (or ``value``, ``low``, ``high`` of its deciding statistic, or its
  ``n_items`` inputs and ``n_vectors`` vectors),
  formatted by ``FORMAT`` (a format spec, default ``.3g``), so that a number in the prose is a recorded one; a
  ``measured`` value that the record keeps as text (a layer's name: ``layer_of_max`` is ``"5"`` or ``"enc.6"``) is
  given as it is (or formatted by ``FORMAT`` if one is given). A marker whose value no record holds fails the build.
- ``<!-- aniso:verdict MODEL CLAIM -->``: the verdict of the latest record that measured ``CLAIM`` on ``MODEL``, as
  the record spells it (``holds``, ``expected not to hold``, ``underpowered at this size``, ...), so that a verdict
  in the prose is a recorded one; a marker whose verdict no record holds fails the build.

The numbers of these tables are then those of the files. To record a run::

    python docs/hooks/run_records.py reports/run-<time>/results.json --command "aniso run all-MiniLM-L6-v2" \\
        [--wall-s 171 --peak-mb 908] > docs/records/<date>-<profile>-<what>.json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

RUNS_MARKER = "<!-- aniso:recorded-runs -->"
#: The numbers of a record's verdict besides its ``measured`` ones that a value marker may name.
RECORD_KEYS = ("value", "low", "high", "n_items", "n_vectors")
VALUE_MARKER = re.compile(r"<!-- aniso:value (\S+) (\S+) (\S+)(?: (\S+))? -->")
VERDICT_MARKER = re.compile(r"<!-- aniso:verdict (\S+) (\S+) -->")
PROFILES_MARKER = "<!-- aniso:profile-comparison -->"
RECORDS = "docs/records"
#: The settings a record keeps (sizes of the profile, seed, resamples) besides the profile's name.
KEPT_SETTINGS = ("n_sequences", "max_length", "n_clips", "n_images", "block_seeds", "block_sequences",
                 "block_seq_len", "miniature_steps", "seed", "n_bootstrap", "models", "claims")


def _scalar(value):
    if isinstance(value, float):
        return float(f"{value:.6g}")
    return value if isinstance(value, (int, str, bool)) or value is None else None


def trim(results: dict, command: str, wall_s: float | None = None, peak_mb: float | None = None) -> dict:
    """A record of one run: what the findings tables show of its ``results.json`` (the verdicts that were decided
    or underpowered, with their scalar measurements and intervals; each model's extraction time), with the run's
    command, date, commit, profile, settings and library versions. ``wall_s`` and ``peak_mb``: the run's wall time
    and peak resident memory where measured outside it (``/usr/bin/time -v``)."""
    prov = results["provenance"]
    settings = prov.get("settings", {})
    verdicts = []
    for r in results["results"]:
        if r.get("verdict") in (None, "skipped", "error"):
            continue
        unc = r.get("uncertainty") or {}
        verdicts.append({
            "claim": r["claim_id"], "model": r.get("model_id"), "verdict": r["verdict"],
            "measured": {k: _scalar(v) for k, v in (r.get("measured") or {}).items() if _scalar(v) is not None},
            "statistic": unc.get("statistic"), "value": _scalar(unc.get("value")), "low": _scalar(unc.get("low")),
            "high": _scalar(unc.get("high")), "interval": unc.get("name"), "fragile": unc.get("fragile"),
            "expected": r.get("expected"),
            "inputs": r.get("inputs"), "n_items": r.get("n_items"), "n_vectors": r.get("n_vectors")})
    models = {}
    for model_id, m in (results.get("models") or {}).items():
        meta = m.get("meta") or {}
        models[model_id] = {"seconds": meta.get("seconds"), "cache_hit": (meta.get("cache") or {}).get("hit"),
                            "n_layers": len(m.get("layer_names") or [])}
    record = {
        "record_version": 1, "command": command, "date": prov.get("time"), "commit": prov.get("git_commit"),
        "profile": (prov.get("profile") or {}).get("name") or settings.get("profile"),
        "settings": {k: settings[k] for k in KEPT_SETTINGS if k in settings},
        "inputs": sorted({v["inputs"] for v in verdicts if v.get("inputs")}),
        "versions": {k: prov.get("versions", {}).get(k) for k in ("aniso", "torch", "transformers")},
        "platform": prov.get("platform"), "summary": results.get("summary"), "models": models,
        "verdicts": verdicts, "notes": {}}
    if wall_s is not None:
        record["wall_s"] = wall_s
    if peak_mb is not None:
        record["peak_mb"] = peak_mb
    return record


def load(root: Path) -> list[dict]:
    """Every record under ``root``, by date, each with its ``file`` (relative to the repository)."""
    out = []
    for path in sorted(root.glob("*.json")):
        record = json.loads(path.read_text())
        out.append(record | {"file": path.relative_to(root.parent.parent).as_posix()})
    return sorted(out, key=lambda r: (r["date"] or "", r["file"]))


def _num(x) -> str:
    if isinstance(x, float):
        return f"{x:.4g}"
    return str(x)


def _cell(text) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _decided_by(v: dict) -> str:
    if v.get("value") is None:
        return "—"
    text = f"{_num(v['value'])}"
    if v.get("low") is not None and v.get("high") is not None:  # named for what it resamples (a p-value's range)
        text += f" [{_num(v['low'])}, {_num(v['high'])}]" + (f" ({v['interval']})" if v.get("interval") and
                                                             v["interval"] != "95% CI" else "")
    if v.get("fragile"):
        text += ", fragile"
    return f"{_cell(v.get('statistic') or '')}: {text}"


def _measured(v: dict, n: int = 4) -> str:
    items = [f"{k} = {_num(x)}" for k, x in v["measured"].items() if not isinstance(x, str) or len(x) < 24][:n]
    return _cell(", ".join(items)) or "—"


def _about(record: dict) -> str:
    s = record.get("settings", {})
    sizes = ", ".join(f"{k} {s[k]}" for k in ("n_sequences", "max_length", "n_clips", "n_images", "seed") if k in s)
    counts = record.get("summary") or {}
    parts = [f"`{record['command']}`, profile `{record['profile']}` ({sizes})",
             f"commit `{(record['commit'] or '?')[:10]}`", f"torch {record['versions'].get('torch')}",
             f"transformers {record['versions'].get('transformers')}"]
    if record.get("wall_s") is not None:
        parts.append(f"{record['wall_s']:.0f} s wall" + (f", peak {record['peak_mb']:,.0f} MB resident"
                                                         if record.get("peak_mb") is not None else ""))
    line = "; ".join(parts) + "."
    if counts:
        line += " " + ", ".join(f"{n} {k}" for k, n in counts.items()) + "."
    if record.get("inputs"):
        line += " Inputs: " + ", ".join(f"`{i}`" for i in record["inputs"]) + "."
    return line + f" File: `{record['file']}`."


def recorded_runs(root: Path) -> str:
    """One table per recorded run: claim, model, verdict, deciding statistic with its 95% interval, measured."""
    records = load(root)
    if not records:
        return f"(no run recorded yet under `{RECORDS}/`)"
    out = []
    for record in records:
        out += [f"### {record['date'][:10]}: `{record['command']}` ({record['profile']})", "", _about(record), "",
                "| claim | model | verdict | deciding statistic [95% interval over the inputs] | measured |",
                "|---|---|---|---|---|"]
        for v in record["verdicts"]:
            expected = v.get("expected")
            expected = expected.get("verdict") if isinstance(expected, dict) else expected
            verdict = v["verdict"] + (f" (recorded: {expected})" if expected else "")
            out.append(f"| `{v['claim']}` | {('`' + v['model'] + '`') if v['model'] else '—'} | {_cell(verdict)} | "
                       f"{_decided_by(v)} | {_measured(v)} |")
        out.append("")
    return "\n".join(out)


def offline_real_models(registry_file: Path) -> list[str]:
    """The registry's real pre-trained models that every run must be able to run offline (``must_run``, not the
    suite's own miniatures)."""
    from aniso.registry.entries import load_registry

    return [e.id for e in load_registry(registry_file) if e.must_run and e.trained and not e.miniature]


def profile_comparison(root: Path, registry_file: Path) -> str:
    """The ``paper``-profile verdicts against the latest ``quick`` ones of the same claim and model."""
    records = load(root)
    paper = [r for r in records if r["profile"] == "paper"]
    models = offline_real_models(registry_file)
    if not paper:
        return (f"No `paper`-profile run is recorded yet. It would cover the {len(models)} real pre-trained models "
                f"that run offline ({', '.join(f'`{m}`' for m in models)}), one record per model with its time and "
                "peak memory: `/usr/bin/time -v aniso run MODEL --aniso-profile paper`, then "
                f"`python docs/hooks/run_records.py reports/run-<time>/results.json --command ... --wall-s ... "
                f"--peak-mb ...` into `{RECORDS}/`; this section then sets each verdict against the `quick` one.")
    quick: dict[tuple, tuple[dict, dict]] = {}
    for record in records:
        if record["profile"] == "quick":
            for v in record["verdicts"]:
                quick[(v["claim"], v["model"])] = (record, v)
    out = ["| model | claim | `quick` | `paper` | same verdict | why they differ | paper run |",
           "|---|---|---|---|---|---|---|"]
    for record in paper:
        run = (f"{record['wall_s']:.0f} s" if record.get("wall_s") is not None else "time not recorded") + (
            f", {record['peak_mb']:,.0f} MB" if record.get("peak_mb") is not None else "")
        for v in record["verdicts"]:
            if v["model"] is None:  # a model-free check (the isotropic baseline of a width): the same at any size
                continue
            q = quick.get((v["claim"], v["model"]))
            qtext = f"{q[1]['verdict']}: {_decided_by(q[1])}" if q else "not recorded"
            same = "—" if q is None else ("yes" if q[1]["verdict"] == v["verdict"] else "**no**")
            note = record.get("notes", {}).get(f"{v['claim']} {v['model']}", "")
            if same == "**no**" and not note:
                note = "(not yet explained)"
            out.append(f"| `{v['model']}` | `{v['claim']}` | {_cell(qtext)} | {_cell(v['verdict'])}: "
                       f"{_decided_by(v)} | {same} | {_cell(note)} | {run}; `{record['file']}` |")
    missing = [m for m in models if not any(v["model"] == m for r in paper for v in r["verdicts"])]
    if missing:
        out += ["", f"Not yet recorded at the `paper` profile: {', '.join(f'`{m}`' for m in missing)}."]
    return "\n".join(out)


#: The profile whose records the prose's markers read: the one CI runs and the page describes (a ``paper`` record
#: is shown beside it in the profile comparison, never in its place).
PROSE_PROFILE = "quick"


def _latest_first(records: list[dict]) -> list[dict]:
    """The records of :data:`PROSE_PROFILE`, the latest first."""
    return sorted((r for r in records if r.get("profile") == PROSE_PROFILE), key=lambda r: (r["date"] or "", r["file"]),
                  reverse=True)


def recorded_value(records: list[dict], model: str, claim: str, key: str, spec: str | None = None) -> str:
    """``key`` of the latest record's verdict of ``claim`` on ``model`` (see the module docstring), formatted by
    ``spec`` (``.3g`` for a number when none is given; a text value as it is). Raises ValueError naming the marker
    when no record holds it."""
    for record in _latest_first(records):
        for v in record["verdicts"]:
            if v["model"] == model and v["claim"] == claim:
                number = v["measured"].get(key, v.get(key) if key in RECORD_KEYS else None)
                if isinstance(number, (int, float)) and not isinstance(number, bool):
                    return format(number, spec or ".3g")
                if isinstance(number, str):
                    return format(number, spec or "")
    raise ValueError(f"aniso:value {model} {claim} {key}: no record under {RECORDS}/ holds this number")


def recorded_verdict(records: list[dict], model: str, claim: str) -> str:
    """The verdict of the latest record that measured ``claim`` on ``model``, as the record spells it. Raises
    ValueError naming the marker when no record holds it."""
    for record in _latest_first(records):
        for v in record["verdicts"]:
            if v["model"] == model and v["claim"] == claim and v.get("verdict"):
                return v["verdict"]
    raise ValueError(f"aniso:verdict {model} {claim}: no record under {RECORDS}/ holds this verdict")


def on_page_markdown(markdown: str, page, config, files) -> str:
    if (RUNS_MARKER not in markdown and PROFILES_MARKER not in markdown and not VALUE_MARKER.search(markdown)
            and not VERDICT_MARKER.search(markdown)):
        return markdown
    base = Path(config["config_file_path"]).parent
    records = load(base / RECORDS)
    markdown = VALUE_MARKER.sub(lambda m: recorded_value(records, m[1], m[2], m[3], m[4]), markdown)
    markdown = VERDICT_MARKER.sub(lambda m: recorded_verdict(records, m[1], m[2]), markdown)
    if RUNS_MARKER in markdown:
        markdown = markdown.replace(RUNS_MARKER, recorded_runs(base / RECORDS))
    if PROFILES_MARKER in markdown:
        markdown = markdown.replace(PROFILES_MARKER, profile_comparison(base / RECORDS, base / "models.yaml"))
    return markdown


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write the record of a claims run (to docs/records/) from its "
                                                 "results.json, on stdout.")
    parser.add_argument("results", type=Path, help="reports/run-<time>/results.json")
    parser.add_argument("--command", required=True, help="the command the run was made with")
    parser.add_argument("--wall-s", type=float, help="the run's wall time, seconds")
    parser.add_argument("--peak-mb", type=float, help="the run's peak resident memory, MB")
    args = parser.parse_args(argv)
    record = trim(json.loads(args.results.read_text()), args.command, args.wall_s, args.peak_mb)
    json.dump(record, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
