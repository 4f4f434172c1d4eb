"""MkDocs hook: on the performance page, the table of the recorded benchmark runs (``benchmarks/results/*/*.json``:
each file one run of an ``aniso bench`` command, with its date, commit, machine, library versions and output), in
place of the marker ``<!-- aniso:bench-results -->``; and on any page, the GPU runs of ``aniso bench extraction``'s
variants (``benchmarks/results/*-gpu/*.json`` with ratios) as one table, in place of ``<!-- aniso:gpu-ratios -->``.
The numbers on the pages are then those of the files."""

from __future__ import annotations

import json
from pathlib import Path

MARKER = "<!-- aniso:bench-results -->"
GPU_MARKER = "<!-- aniso:gpu-ratios -->"


def _fmt(x: float, digits: int = 3) -> str:
    return f"{x:.{digits}g}" if abs(x) < 1000 else f"{x:,.0f}"


def summary(result: dict) -> str:
    """One cell's worth of what a run measured: the ratios of ``aniso bench extraction`` (best rounds, and the
    median rounds' where the run recorded its rounds), the ratio of ``aniso bench command``, the memory beyond the
    weights at 1x and 8x the paragraphs, or the times of ``aniso bench twonn`` with its peers'."""
    if "ratios" in result:
        r = result["ratios"]
        text = (f"forward {_fmt(result['forward_s'])} s ({result['tokens']:,} tokens); hidden states "
                f"{r['hidden_states']:.2f}×, first order {r['first_order']:.2f}×, all {r['all']:.2f}×, every "
                f"{r['every']:.2f}×")
        med = result.get("ratios_median")
        if med:
            text += (f" (median of {len(result['rounds']['forward'])} rounds: all {med['all']:.2f}×, every "
                     f"{med['every']:.2f}×)")
        if result.get("embedding_isotropy_s") is not None:
            text += f"; embedding isotropy {result['embedding_isotropy_s']:.2f} s"
        mem = result.get("memory")
        if mem:
            text += (f"; peak RSS {mem['peak_1x_mb']:,.0f} → {mem['peak_8x_mb']:,.0f} MB from 1× to 8× the tokens "
                     f"({mem['growth']:+.1%})")
        return text
    if "runs" in result and "variant" in result:
        a, b = result["runs"][0], result["runs"][-1]
        return (f"{result['variant']}, {result['measure']}: peak {a['peak_mb']:,.0f} MB at {a['tokens']:,} tokens, "
                f"{b['peak_mb']:,.0f} MB at {b['tokens']:,} tokens ({b['peak_mb'] / a['peak_mb'] - 1:+.1%}); beyond "
                f"the loaded model {a['peak_mb'] - a['before_mb']:,.0f} → {b['peak_mb'] - b['before_mb']:,.0f} MB "
                f"({(b['peak_mb'] - b['before_mb']) / (a['peak_mb'] - a['before_mb']) - 1:+.1%})")
    if "command_s" in result:
        return (f"command {result['command_s']:.2f} s, bare script {result['script_s']:.2f} s: "
                f"{result['ratio']:.2f}× (best of {len(result['rounds'])} rounds)")
    if "suite_s" in result:
        peers = "; ".join(f"{name} {p['s']:.2f} s ({p['estimate']:.3f})" for name, p in result["peers"].items())
        return (f"n = {result['n']:,}, d = {result['d']}, {result['data']}: suite {result['suite_s']:.2f} s "
                f"({result['estimate']:.3f}), bound {result['bound_s']:.2f} s ({result['ratio_to_bound']:.2f}×)"
                + (f"; {peers}" if peers else ""))
    return "(unknown benchmark)"


def table(root: Path) -> str:
    """The Markdown table of every run recorded under ``root`` (``benchmarks/results``), by date."""
    runs = [json.loads(p.read_text()) | {"file": p.relative_to(root.parent.parent).as_posix()}
            for p in sorted(root.glob("*/*.json"))]
    if not runs:
        return "(no benchmark run recorded yet)"
    rows = ["| date (UTC) | command | measured | machine, commit | file |", "|---|---|---|---|---|"]
    for run in sorted(runs, key=lambda r: (r["date"], r["file"])):
        measured = summary(run["result"]) if run.get("result") else f"failed (exit {run.get('exit_code')})"
        machine = run["machine"]
        where = (f"{machine['cpu']}, {machine['cores']} cores" + (f", {machine['gpu']}" if machine.get("gpu") else "")
                 + f"; torch {run['versions']['torch']}; {run['commit']}")
        rows.append(f"| {run['date']} | `{run['command']}` | {measured} | {where} | `{run['file']}` |")
    return "\n".join(rows)


def gpu_table(root: Path) -> str:
    """The Markdown table of the GPU runs recorded under ``root`` (``benchmarks/results``, folders ending ``-gpu``)
    that timed the variants of ``aniso bench extraction``: per run its date, shape, tokens, bare forward pass, each
    variant's multiple of it and, where recorded, the peak GPU memory of ``every`` beyond the weights."""
    rows = ["| date | shape | tokens (≤ per paragraph) | bare forward | hidden states | first order | all | every | "
            "`every`: peak beyond the weights | file |", "|---|---|---|---|---|---|---|---|---|---|"]
    for path in sorted(root.glob("*-gpu/*.json")):
        run = json.loads(path.read_text(encoding="utf-8"))
        r = run.get("result") or {}
        if "ratios" not in r:
            continue
        peak = (r.get("peak_beyond_weights_gib") or {}).get("every")
        ratios = " | ".join(f"{r['ratios'][v]:.2f}×" for v in ("hidden_states", "first_order", "all", "every"))
        rows.append(f"| {run['date']} | {r['model']} ({r['dtype'].removeprefix('torch.')}) | {r['tokens']:,} "
                    f"(≤ {r['max_length']}) | {r['forward_s']:.3g} s | {ratios} | "
                    f"{f'{peak:.1f} GiB' if peak is not None else '—'} | "
                    f"`{path.relative_to(root.parent.parent).as_posix()}` |")
    return "\n".join(rows) if len(rows) > 2 else "(no GPU run recorded yet)"


def on_page_markdown(markdown: str, page, config, files) -> str:
    root = Path(config["config_file_path"]).parent / "benchmarks" / "results"
    if GPU_MARKER in markdown:
        markdown = markdown.replace(GPU_MARKER, gpu_table(root))
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, table(root))
