"""``aniso bench extraction``, ``aniso bench twonn`` and ``aniso bench command``: the JSON objects they print, the
7B-shaped random decoder path, and their one-line errors (:mod:`aniso.bench`)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from aniso.cli import main


def _json(capsys, argv) -> dict:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_bench_extraction_on_a_7b_shaped_decoder(capsys):
    """One block of LLaMA-7B's shape (4,096-d, 32 heads, 11,008 MLP) with random weights and every statistic, on
    a few short paragraphs on the CPU: the object has the ratios of every variant, and every statistic came out
    finite with the attention sink and final-norm statistics kept."""
    got = _json(capsys, ["bench", "extraction", "--config", "llama-7b", "--random-init", "--layers", "1",
                         "--paragraphs", "4", "--max-length", "12", "--batch-size", "4", "--device", "cpu",
                         "--repeats", "1", "--no-warmup", "--no-memory", "--no-embedding-isotropy", "--json"])
    assert got["device"] == "cpu" and got["model"] == "llama-7b-random-1l" and got["dtype"] == "torch.bfloat16"
    assert set(got["ratios"]) == {"hidden_states", "first_order", "all", "every"}
    assert got["forward_s"] > 0 and all(r > 0 for r in got["ratios"].values())
    assert {v: len(ts) for v, ts in got["rounds"].items()} == dict.fromkeys(["forward", *got["ratios"]], 1)
    assert got["ratios_median"] == got["ratios"]  # one round: its median is its best
    assert got["memory_growth_8x"] is None  # --no-memory
    st = got["statistics"]
    assert st["layers"] == 2 and st["finite"] and {"attention_sink", "final_norm"} <= set(st["kept"])
    assert 4 < got["tokens"] <= 4 * 12


def test_llama_7b_configuration_is_the_papers():
    from aniso.bench.extraction import build_llama_7b

    model = build_llama_7b(1, dtype="float32")
    c = model.config
    assert (c.hidden_size, c.num_attention_heads, c.intermediate_size, c.vocab_size) == (4096, 32, 11008, 32000)
    w = model.layers[0].self_attn.q_proj.weight
    assert w.dtype.is_floating_point and abs(float(w.detach().std()) - 0.02) < 1e-3  # seeded N(0, 0.02²), not empty memory
    assert abs(float(build_llama_7b(1, dtype="float32").layers[0].self_attn.q_proj.weight[0, 0]) - float(w[0, 0])) == 0


@pytest.mark.parametrize("argv, message", [
    (["bench", "extraction"], "give a registry id (MODEL) or --config"),
    (["bench", "extraction", "--config", "llama-7b"], "give it with --random-init"),
    (["bench", "extraction", "no-such-model", "--no-memory"], "no-such-model"),
    (["bench", "extraction", "--config", "llama-7b", "--random-init", "--layers", "0"], "--layers must be >= 1"),
    (["bench", "command", "no-such-model"], "no-such-model"),
    (["bench", "command", "smollm2-135m-instruct"], "needs a model read from a transformers folder"),
])
def test_bench_bad_usage_is_one_line(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and "Traceback" not in err


def test_bench_twonn_json_on_every_kind_of_points(capsys):
    """Small n so that it runs in a test; the estimate of the 10-dimensional subspace is near 10, and the suite's
    estimate equals a float64 brute-force TwoNN on the same points."""
    from aniso.bench.twonn import make_points

    for data in ("gaussian", "subspace", "massive"):
        got = _json(capsys, ["bench", "twonn", "--n", "600", "--d", "32", "--data", data, "--device", "cpu",
                             "--no-peers", "--json"])
        assert {"suite_s", "bound_s", "ratio_to_bound", "estimate", "peers"} <= set(got) and got["peers"] == {}
        x = make_points(600, 32, data, 0).astype(np.float64)
        d2 = ((x[:, None, :] - x[None, :, :]) ** 2).sum(-1)
        np.fill_diagonal(d2, np.inf)
        two = np.sqrt(np.sort(d2, axis=1)[:, :2])
        mu = np.sort(two[:, 1] / two[:, 0])
        keep = int(600 * 0.9)
        log_mu, y = np.log(mu[:keep]), -np.log1p(-np.arange(1, 601)[:keep] / 600)
        assert got["estimate"] == pytest.approx(float(log_mu @ y / (log_mu @ log_mu)), rel=1e-9)
        if data == "subspace":
            assert 8 <= got["estimate"] <= 12


def test_bench_command_times_aniso_stats_against_the_bare_script(capsys, tmp_path, tiny_bert_dir, monkeypatch):
    """A tiny local BERT on a few paragraphs, one round: both processes ran (the command on an empty cache of its
    own, which it filled and which is gone afterwards), and the ratio is the command's time over the script's."""
    reg = tmp_path / "models.yaml"
    reg.write_text(f"models:\n  - id: tiny\n    source: {{kind: local, path: {tiny_bert_dir}}}\n    modality: text\n"
                   "    granularity: subword\n    architecture: transformer\n    role: encoder\n    family: bert\n")
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(" ".join(f"w{(i * 7 + j) % 40}" for j in range(5 + i % 9)) for i in range(20)))
    monkeypatch.setenv("ANISO_CORPUS", str(corpus))
    got = _json(capsys, ["bench", "command", "tiny", "--paragraphs", "6", "--repeats", "1", "--registry", str(reg),
                         "--json"])
    assert got["model"] == "tiny" and got["paragraphs"] == 6 and len(got["rounds"]) == 1
    assert got["command_s"] > 0 and got["script_s"] > 0
    assert got["ratio"] == pytest.approx(got["command_s"] / got["script_s"], rel=1e-2)


def test_bench_command_reads_the_transformers_folder_of_local_and_package_rows(tmp_path):
    """The bare script's folder: a local row's path, a package row's folder in the transformers format; a package in
    another format, or another source kind, is refused naming the row."""
    from aniso.bench.command import model_folder
    from aniso.registry.entries import load_registry
    from aniso.sources import SourceContext

    reg = load_registry(Path(__file__).resolve().parents[2] / "models.yaml")
    ctx = SourceContext(cache_dir=tmp_path)
    assert (model_folder(reg.get("all-MiniLM-L6-v2"), ctx) / "config.json").is_file()
    for refused in ("whisper-tiny.en", "smollm2-135m-instruct"):
        with pytest.raises(ValueError, match=f"^{refused}: aniso bench command needs a model read from a transformers"):
            model_folder(reg.get(refused), ctx)
