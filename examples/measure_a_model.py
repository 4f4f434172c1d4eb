"""Measure a model's layers, plot its avg-cos profile, and check one claim on it, with the Python API.

    python examples/measure_a_model.py                      # all-MiniLM-L6-v2 on the settings' corpus
    python examples/measure_a_model.py ./my-bert --n 64     # a local model folder (or a registry id, a hub id)

The corpus is setting ``corpus`` (``ANISO_CORPUS``, e.g. WikiText-103's ``wiki.valid.tokens``), else the embedded
fallback text. Writes ``avg_cos.png`` (avg cos per layer against the isotropic baseline q95(d)) and the claims run's
``results.json`` and ``report.html`` under ``--out``. Exit code: that of the claims run (0: measured, none failed).
tests/test_api.py runs this script on small inputs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import aniso


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?", default="all-MiniLM-L6-v2",
                        help="registry id, model folder or hub id (default all-MiniLM-L6-v2)")
    parser.add_argument("--n", type=int, default=64, help="paragraphs of the corpus (default 64)")
    parser.add_argument("--max-length", type=int, default=128, help="tokens per paragraph at most (default 128)")
    parser.add_argument("--claim", default="G.token-nlp-anisotropic", help="claim id or prefix to check")
    parser.add_argument("--out", default="example-out", help="folder for the figure and the report")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    # 1. The layer-wise statistics: one row per layer.
    stats = aniso.measure(args.model, n_inputs=args.n, max_length=args.max_length)
    table = stats.to_frame()
    print(f"{stats.model_id} on {stats.inputs.get('label')}")
    print(table[["layer", "avg_cos", "q95", "drift_norm", "svd_anisotropy", "twonn"]].to_string(index=False))

    # 2. The avg-cos profile against the isotropic baseline.
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.plot(range(len(table)), table["avg_cos"], marker="o", label="avg cos")
    ax.plot(range(len(table)), table["q95"], linestyle="--", color="grey", label="isotropic q95(d)")
    ax.set_xticks(range(len(table)), table["layer"])
    ax.set_xlabel("layer")
    ax.set_ylabel("avg cos")
    ax.set_title(stats.model_id)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "avg_cos.png", dpi=100)
    plt.close(fig)
    print(f"figure: {out / 'avg_cos.png'}")

    # 3. One claim's verdict, on the same inputs.
    verdicts = aniso.check(args.model, claims=args.claim,
                           settings={"n_sequences": args.n, "max_length": args.max_length,
                                     "report_dir": str(out.resolve())})
    print(verdicts.to_frame()[["claim", "model", "verdict", "statistic", "value", "ci_low", "ci_high"]]
          .to_string(index=False))
    print(f"report: {verdicts.report()}")
    return verdicts.exit_code


if __name__ == "__main__":
    sys.exit(main())
