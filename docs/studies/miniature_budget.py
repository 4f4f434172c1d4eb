"""The budget study of the text miniatures: at which training budget is each training-dynamics claim decided?

The claims of G §5 (queries and keys along training) and R §4.2-4.3 (anisotropy and intrinsic dimension along
training) run offline on the suite's own byte-level miniatures (a BERT and a GPT-2, five seeds each: the registry's
rows mini-<arch>-bytes-s0 to -s4). At 512 steps several of them hold for one seed and not another: decided
nowhere. This script trains the ten miniatures at each budget asked for (steps x batch of 128-byte sequences, width), runs the claims on their checkpoint
series, and records claim x budget x seed: the verdict, the deciding numbers and
the training seconds. A claim is *decided* at a budget for an architecture by the rule of every claim over seeds
(:func:`aniso.judge.training_rules.over_seeds`: a one-sided sign test over the seeds at 0.05, so at least 5 seeds
that agree), and each decision is given with the Clopper-Pearson 95% interval of the share of seeds that hold.

Run from the repository root, with the data settings of the main job (``ANISO_CORPUS``, ``ANISO_TRAIN_TEXT``):

    python docs/studies/miniature_budget.py run 512x16x128 2048x16x128   # appends to miniature_budget.json
    python docs/studies/miniature_budget.py add reports/run-X/results.json  # the main job's quick-budget verdicts
    python docs/studies/miniature_budget.py table                       # the Markdown tables of the docs page

Each budget is one ``pytest claims/test_godey_training.py claims/test_razzhigaev_training.py -n 2`` over the ten
miniatures (the two families of five seeds side by side, one core each; one architecture alone runs in one process
on every core), with an empty statistics cache of its own unless ``--cache`` is given, at the ``study`` profile's
sizes (256 paragraphs, those of every column so far) with the budget's steps, batch and width.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).with_suffix(".json")
#: The seeds of each architecture (the registry's rows mini-<arch>-bytes-s<seed>).
SEEDS = (0, 1, 2, 3, 4)
#: The architectures of the miniatures (the registry's rows mini-<arch>-bytes-s<seed>).
ARCHS = ("bert", "gpt2")
MODELS = [f"mini-{arch}-bytes-s{seed}" for arch in ARCHS for seed in SEEDS]
CLAIMS = ["G.qk-means-align", "G.qk-direction-by-depth", "G.qk-dot-grows", "G.attention-entropy-decays",
          "G.qk-svd-projections", "G.qk-align-across-seeds", "R.decoder-anisotropy-grows",
          "R.id-expands-then-compresses"]
#: The numbers kept per verdict (when the claim reports them).
KEEP = ("aligned_share", "mean_cos_first_third", "mean_cos_last_third", "grown_share", "spearman_rho", "p_value",
        "layers_decayed", "n_layers", "share_qk", "share_k", "share_q", "seeds_holding", "range_first_third",
        "range_last_third", "max_checkpoint", "max", "last", "batch_std", "p_rise", "p_fall", "p_heads_grown",
        "p_first_third_positive", "p_last_third_negative", "p_first_half_sharper", "p_qk", "p_k", "p_q")


def parse_budget(text: str) -> dict[str, int]:
    """``"2048x16x128"`` -> steps, batch, width. Raises ValueError (one line naming the budget) for anything but
    three whole numbers of at least 1 joined by ``x``."""
    parts = text.split("x")
    if len(parts) != 3 or not all(p.isascii() and p.isdigit() and int(p) >= 1 for p in parts):
        raise ValueError(f"budget {text!r}: give STEPSxBATCHxWIDTH, three whole numbers of at least 1 (e.g. "
                         "2048x16x128)")
    steps, batch, width = (int(v) for v in parts)
    return {"miniature_steps": steps, "miniature_batch": batch, "miniature_width": width}


def parse_archs(text: str) -> tuple[str, ...]:
    """``"bert,gpt2"`` -> ("bert", "gpt2"). Raises ValueError (one line naming ``--archs``) for an architecture not in
    :data:`ARCHS`, one named twice, or none."""
    archs = tuple(a.strip() for a in text.split(","))
    unknown = [a for a in archs if a not in ARCHS]
    if unknown or len(set(archs)) != len(archs):
        raise ValueError(f"--archs {text!r}: give one or more of {', '.join(ARCHS)}, each once, joined by commas")
    return archs


class _Parser(argparse.ArgumentParser):
    """Bad arguments are one line naming them and exit code 2, without the usage text."""

    def error(self, message):
        self.exit(2, f"{self.prog}: {message}\n")


def _typed(parse):
    def typed(text: str):
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    typed.__name__ = parse.__name__
    return typed


def _results_file(text: str) -> Path:
    path = Path(text)
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"results file {text!r}: no such file")
    return path


def run_budget(budget: dict[str, int], cache: Path | None, archs: tuple[str, ...] = ("bert", "gpt2")) -> dict:
    """Train and measure the miniatures of ``archs`` (five seeds each) at ``budget``; their verdicts and timings."""
    models = [m for m in MODELS if m.split("-")[1] in archs]
    import tempfile

    from aniso.judge.results import read_results

    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, ANISO_REPORT_DIR=str(Path(tmp) / "reports"),
                   ANISO_CACHE_DIR=str(cache or Path(tmp) / "cache"), CI="1", ANISO_PROFILE="study",
                   ANISO_MODELS=",".join(models), ANISO_CLAIMS=",".join(CLAIMS),
                   **{f"ANISO_{k.upper()}": str(v) for k, v in budget.items()})
        t0 = time.perf_counter()
        # one family of seeds per architecture, each on a worker of its own; a single architecture runs in one
        # process with every core (torch's threads) instead
        workers = ["-n", "2", "--dist", "loadgroup"] if len(archs) > 1 else []
        proc = subprocess.run([sys.executable, "-m", "pytest", "claims/test_godey_training.py",
                               "claims/test_razzhigaev_training.py", *workers, "-q",
                               "-p", "no:cacheprovider"], cwd=ROOT, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        found = sorted((Path(tmp) / "reports").glob("run-*/results.json"))
        if not found:
            raise SystemExit(f"no results for {budget}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        doc = read_results(found[-1])
    verdicts = _per_seed_verdicts(doc, models)
    seconds = {mid: doc.experiments.get("training", {}).get(mid, {}).get("training_seconds") for mid in models}
    return {"budget": budget, "archs": list(archs), "wall_seconds": round(wall, 1), "training_seconds": seconds, "verdicts": verdicts,
            "versions": {k: doc.provenance.versions.get(k) for k in ("torch", "transformers", "numpy")},
            "git_commit": doc.provenance.git_commit, "time": doc.provenance.time,
            "inputs": doc.provenance.corpus.get("dataset") if doc.provenance.corpus else None}


def from_results(path: Path) -> dict:
    """A study entry from a claims run's ``results.json`` that measured the six miniatures (e.g. the main job at the
    ``quick`` budget): its verdicts, its miniatures' training seconds and its budget (the run profile's sizes)."""
    from aniso.judge.results import read_results

    doc = read_results(path)
    sizes = (doc.provenance.profile or {}).get("sizes", {})
    verdicts = _per_seed_verdicts(doc, MODELS)
    seconds = {mid: doc.experiments.get("training", {}).get(mid, {}).get("training_seconds") for mid in MODELS}
    return {"budget": {k: sizes[k] for k in ("miniature_steps", "miniature_batch", "miniature_width")},
            "archs": ["bert", "gpt2"], "wall_seconds": None, "training_seconds": seconds, "verdicts": verdicts,
            "versions": {k: doc.provenance.versions.get(k) for k in ("torch", "transformers", "numpy")},
            "git_commit": doc.provenance.git_commit, "time": doc.provenance.time, "from": "a claims run's results.json",
            "inputs": doc.provenance.corpus.get("dataset") if doc.provenance.corpus else None}


def _per_seed_verdicts(doc, models) -> list[dict]:
    """Claim x seed verdicts of a claims run: each family result's ``measured.per_seed`` (one result per family of
    seeds), each seed's verdict "holds", "does not hold" or "underpowered" and its kept numbers."""
    out = []
    for r in doc.results:
        if r.claim_id not in CLAIMS or r.verdict == "skipped":
            continue
        for model, seed in (r.measured.get("per_seed") or {}).items():
            if model in models:
                kind = "holds" if seed.get("holds") else "underpowered" if seed.get("underpowered") else "does not hold"
                out.append({"claim": r.claim_id, "model": model, "verdict": kind,
                            "numbers": {k: seed[k] for k in KEEP if k in seed}})
    return out


def decision(kinds: list[str]) -> tuple[str, list[float]]:
    """The verdict of a claim over seeds from its seeds' kinds (the rule of
    :func:`aniso.judge.training_rules.over_seeds`), and the Clopper-Pearson 95% interval of the share of seeds that
    hold (Clopper & Pearson 1934; :meth:`scipy.stats.binomtest`)."""
    from scipy.stats import binomtest

    from aniso.judge.training_rules import SeedResult, over_seeds

    holds, _, undecided = over_seeds({str(i): SeedResult(k == "holds", {}, "u" if k == "underpowered" else None)
                                      for i, k in enumerate(kinds)})
    ci = binomtest(kinds.count("holds"), len(kinds)).proportion_ci(0.95, method="exact")
    return ("holds" if holds else "undecided" if undecided else "does not hold"), [round(ci.low, 3), round(ci.high, 3)]


def decided(runs: list[dict]) -> dict[tuple[str, str, str], tuple[str, list[float], int]]:
    """(claim, architecture, budget) -> (decision, 95% interval of the share of seeds holding, seeds): the sign test
    over the seeds the run measured (:func:`decision`)."""
    out = {}
    for run in runs:
        b = _name(run)
        for claim in CLAIMS:
            for arch in ("bert", "gpt2"):
                got = [v["verdict"] for v in run["verdicts"] if v["claim"] == claim and f"-{arch}-" in v["model"]]
                if got:
                    out[(claim, arch, b)] = (*decision(got), len(got))
    return out


def _name(run: dict) -> str:
    return "x".join(str(run["budget"][k]) for k in ("miniature_steps", "miniature_batch", "miniature_width"))


def table(runs: list[dict]) -> str:
    """Markdown: one table per architecture, claim x budget, each cell the three seeds' verdicts and the decision."""
    mark = {"holds": "✓", "does not hold": "✗", "underpowered": "≈"}
    lines = []
    d = decided(runs)
    for arch in ("bert", "gpt2"):
        mine = [r for r in runs if arch in r.get("archs", ["bert", "gpt2"])]
        if not mine:
            continue
        budgets = [_name(r) for r in mine]
        lines += [f"\n**mini-{arch}-bytes** (✓ holds, ✗ does not hold, ≈ underpowered, one mark per seed; the "
                  "decision by a one-sided sign test over the seeds, with the 95% interval of the share that hold)\n",
                  "| claim | " + " | ".join(f"{b} (steps x batch x width)" for b in budgets) + " |",
                  "|---|" + "---|" * len(budgets)]
        for claim in CLAIMS:
            cells = []
            for run, b in zip(mine, budgets):
                seeds = [next((mark[v["verdict"]] for v in run["verdicts"] if v["claim"] == claim
                               and v["model"] == f"mini-{arch}-bytes-s{s}"), "") for s in SEEDS]
                got = d.get((claim, arch, b))
                cells.append(" ".join(x for x in seeds if x) + (f" **{got[0]}** ({got[2]} seeds; share holding "
                                                                 f"[{got[1][0]:.2f}, {got[1][1]:.2f}])" if got else ""))
            if any(c.strip("– ") for c in cells):
                lines.append(f"| `{claim}` | " + " | ".join(cells) + " |")
    lines.append("\n| budget | miniatures | commit | training seconds per miniature (by seed) | wall seconds of the run |")
    lines.append("|---|---|---|---|---|")
    for run in runs:
        for arch in run.get("archs", ["bert", "gpt2"]):
            secs = ", ".join(str(run["training_seconds"].get(f"mini-{arch}-bytes-s{s}"))
                             for s in SEEDS if run["training_seconds"].get(f"mini-{arch}-bytes-s{s}") is not None)
            wall = run["wall_seconds"] if run["wall_seconds"] is not None else "(from the main job)"
            if run["wall_seconds"] is not None:  # both architectures side by side, or one alone on every core
                wall = f"{wall} ({'2 processes, one core each' if len(run.get('archs', ['bert', 'gpt2'])) > 1 else '1 process, 2 cores'})"
            lines.append(f"| {_name(run)} | mini-{arch}-bytes | {str(run.get('git_commit'))[:12]} | {secs or '–'} | "
                         f"{wall} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = _Parser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    r = sub.add_parser("run", help="train and measure at these budgets (STEPSxBATCHxWIDTH), appending to the JSON")
    r.add_argument("budgets", nargs="+", type=_typed(parse_budget), metavar="STEPSxBATCHxWIDTH")
    r.add_argument("--cache", type=Path, default=None, help="a statistics cache to reuse (default: an empty one)")
    r.add_argument("--archs", type=_typed(parse_archs), default=ARCHS,
                   help="the architectures to train, joined by commas (default: bert,gpt2)")
    sub.add_parser("table", help="print the Markdown tables of the recorded runs")
    a = sub.add_parser("add", help="record the miniatures' verdicts of a claims run's results.json (e.g. the main job)")
    a.add_argument("results", type=_results_file)
    args = ap.parse_args(argv)
    runs = json.loads(OUT.read_text()) if OUT.exists() else []
    if args.cmd == "table":
        print(table(sorted(runs, key=lambda x: tuple(x["budget"].values()))))
        return 0
    if args.cmd == "add":
        run = from_results(args.results)
        runs = [x for x in runs if not (x["budget"] == run["budget"] and x.get("archs") == run["archs"])] + [run]
        OUT.write_text(json.dumps(runs, indent=1) + "\n")
        return 0
    for budget in args.budgets:
        text = "x".join(str(v) for v in budget.values())
        run = run_budget(budget, args.cache, args.archs)
        runs = [x for x in runs if not (x["budget"] == budget and x.get("archs", ["bert", "gpt2"]) == run["archs"])]
        runs.append(run)
        OUT.write_text(json.dumps(runs, indent=1) + "\n")
        print(f"{text}: {run['wall_seconds']} s; training seconds {run['training_seconds']}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
