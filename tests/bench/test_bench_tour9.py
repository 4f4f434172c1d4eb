"""Bad input to the benchmark commands, to sharded extraction and to the miniature-budget study script: one line
naming the option or variable, exit code 2 (a ValueError naming the parameter in the API), before any work (they
were a misleading line, hangs of minutes to hours, or tracebacks)."""

from __future__ import annotations

import importlib.util
import socket
import time
from pathlib import Path

import pytest

from aniso.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _one_line(capsys) -> str:
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out + err, err[-2000:]
    return lines[0]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_random_init_without_config_names_what_is_missing(clean_env, capsys):
    """--random-init with a registry model was answered "--config builds random weights: give it with
    --random-init", the reverse of what was given."""
    assert main(["bench", "extraction", "all-MiniLM-L6-v2", "--random-init", "--no-memory"]) == 2
    line = _one_line(capsys)
    assert line.startswith("aniso bench extraction: --random-init builds random weights of a --config")
    assert "all-MiniLM-L6-v2" in line and "give it with --random-init" not in line
    assert main(["bench", "extraction", "--config", "llama-tiny", "--no-memory"]) == 2  # the other way round
    assert "give it with --random-init" in _one_line(capsys)


@pytest.mark.parametrize("config,blocks", [("llama-tiny", 32), ("llama-7b", 32), ("llama-13b", 40)])
def test_layers_beyond_the_configurations_blocks_are_refused_before_building(clean_env, capsys, config, blocks):
    """--layers 100000000 built blocks for minutes while memory grew: the configuration's blocks bound it."""
    from aniso.bench.extraction import build_llama_7b

    t = time.perf_counter()
    assert main(["bench", "extraction", "--config", config, "--random-init", "--layers", "100000000",
                 "--paragraphs", "2", "--max-length", "8", "--no-memory", "--repeats", "1", "--no-warmup"]) == 2
    assert _one_line(capsys) == (f"aniso bench extraction: --layers 100000000: {config} has {blocks} blocks; "
                                 f"give 1 to {blocks}")
    with pytest.raises(ValueError, match=rf"--layers {blocks + 1}: {config} has {blocks} blocks"):
        build_llama_7b(blocks + 1, config=config)
    assert time.perf_counter() - t < 60  # refused, not built


def test_paragraphs_beyond_the_corpus_are_refused(clean_env, capsys, monkeypatch):
    """--paragraphs 99999999 took the whole corpus without a word (minutes): more than the corpus holds is refused,
    naming --paragraphs and how many it holds; the peak-memory processes' 8x may still take it whole."""
    from aniso.bench.extraction import llama_subject, subject_from_spec

    corpus = clean_env / "corpus.txt"
    corpus.write_text("\n\n".join(f"Paragraph {i} has a few words of its own to read." for i in range(5)) + "\n")
    monkeypatch.setenv("ANISO_CORPUS", str(corpus))
    assert main(["bench", "extraction", "--config", "llama-tiny", "--random-init", "--layers", "1",
                 "--paragraphs", "99999999", "--max-length", "8", "--no-memory", "--repeats", "1",
                 "--no-warmup"]) == 2
    line = _one_line(capsys)
    assert line.startswith("aniso bench extraction: --paragraphs 99999999: the corpus") and "holds 5 paragraphs" in line
    with pytest.raises(ValueError, match="--paragraphs 6: .* holds 5 paragraphs; give at most 5"):
        llama_subject("llama-tiny", layers=1, paragraphs=6, max_length=8)
    whole = subject_from_spec(dict(config="llama-tiny", layers=1, dtype="float32", paragraphs=40, max_length=8,
                                   batch_size=4, device="cpu", seed=0))
    assert len(whole.texts) == 5


def test_twonn_points_beyond_the_pairs_a_pass_compares_are_refused(capsys):
    """--n 1000000 --d 2 fits the memory but compares 10^12 pairs (hours on a CPU): refused, naming --n."""
    from aniso.bench.twonn import bench_twonn, work_problem

    assert main(["bench", "twonn", "--n", "1000000", "--d", "2", "--no-peers", "--device", "cpu"]) == 2
    line = _one_line(capsys)
    assert line.startswith("aniso bench twonn: --n 1000000: ") and "give a smaller --n" in line
    with pytest.raises(ValueError, match="n=1000000 points compares all 1.0e\\+12 pairs"):
        bench_twonn(1_000_000, 2, peers=False)
    assert work_problem(16_384, "cpu") is None and work_problem(131_072, "cpu") is None
    assert work_problem(131_073, "cpu") is not None and work_problem(131_073, "cuda") is None


def test_a_rank_without_torchruns_address_is_one_line(clean_env, capsys, monkeypatch):
    """RANK=0 WORLD_SIZE=2 without MASTER_ADDR was torch's 40-line rendezvous traceback."""
    from aniso.stats.distributed import Shard, process_group

    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.delenv("MASTER_ADDR", raising=False)
    monkeypatch.setenv("MASTER_PORT", "29500")
    assert main(["extract", "all-MiniLM-L6-v2"]) == 2
    line = _one_line(capsys)
    assert line.startswith("aniso extract: environment variables RANK=0 and WORLD_SIZE=2") and "MASTER_ADDR" in line
    assert "MASTER_PORT" not in line.split(";")[0].split("but")[1]
    with pytest.raises(ValueError, match="MASTER_ADDR .* not set"):
        with process_group(Shard(1, 2)):
            pass


def test_a_rank_whose_peers_never_come_is_named_after_a_bounded_wait(clean_env, capsys, monkeypatch):
    """One process of WORLD_SIZE=2 waited silently for the missing rank (torch's 30 minutes): the rendezvous is
    bounded and the line names the rank, the address and the remedy; the group is not left started."""
    import torch.distributed as dist

    import aniso.stats.distributed as distributed

    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(_free_port()))
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setattr(distributed, "RENDEZVOUS_SECONDS", 2.0)
    t = time.perf_counter()
    assert main(["extract", "all-MiniLM-L6-v2"]) == 2
    line = _one_line(capsys)
    assert line.startswith("aniso extract: rank 0 of WORLD_SIZE=2 waited 2 s at 127.0.0.1:") and "did not join" in line
    assert "torchrun --nproc-per-node 2" in line and not dist.is_initialized()
    monkeypatch.setenv("MASTER_PORT", str(_free_port()))
    with pytest.raises(ValueError, match="rank 1 of WORLD_SIZE=2 waited 1 s .*: rank 0 was not reached"):
        with distributed.process_group(distributed.Shard(1, 2), rendezvous_seconds=1):
            pass
    assert time.perf_counter() - t < 60


def test_fewer_inputs_than_ranks_are_refused_before_a_forward_pass():
    """One paragraph over two ranks: rank 0 got an empty shard and a traceback ("the inputs gave no batches") while
    rank 1 lost its peer; now every rank raises the same one line before any forward pass (aniso extract prints
    it and exits 2)."""
    import torch
    from transformers import BertConfig, BertModel

    from aniso.common.settings import Settings
    from aniso.extract.modalities import MODALITIES, _subword_tokenizer
    from aniso.inputs.text import load_corpus
    from aniso.registry.entries import ModelEntry
    from aniso.sources import LoadedModel
    from aniso.stats.distributed import Shard, TooFewInputs
    from aniso.stats.pipeline import compute_model_stats

    class Unused(BertModel):
        def forward(self, *args, **kwargs):
            raise AssertionError("a forward pass ran")

    torch.manual_seed(0)
    model = Unused(BertConfig(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=20,
                              vocab_size=300, max_position_embeddings=64)).eval()
    entry = ModelEntry.model_validate(dict(id="tiny", modality="text", granularity="subword",
                                           architecture="transformer", role="encoder", family="bert",
                                           source=dict(kind="hub", repo="none/none")))
    loaded = LoadedModel(entry, model, _subword_tokenizer(300), "tiny random BERT", None)
    settings = Settings.from_sources({"batch_size": 4, "max_length": 16}, environ={})
    corpus = load_corpus(None, 1, 0)
    assert len(corpus.sequences) == 1
    for rank in (0, 1):
        with pytest.raises(TooFewInputs, match=r"^1 input\(s\) over WORLD_SIZE=2 processes: rank\(s\) 0 would get "
                                               r"none; give at least 2 inputs"):
            compute_model_stats(loaded, MODALITIES["text"], corpus, settings, "tiny", shard=Shard(rank, 2))
    assert Shard(0, 3).items([1, 2, 3]) == [1] and Shard().items([]) == []


def _study():
    spec = importlib.util.spec_from_file_location("miniature_budget_tour9", ROOT / "docs/studies/miniature_budget.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("argv,named", [
    (["run", "abc"], "budget 'abc': give STEPSxBATCHxWIDTH"),
    (["run", "16x16"], "budget '16x16': give STEPSxBATCHxWIDTH"),
    (["run", "16x0x128"], "budget '16x0x128'"),
    (["run", "16x16x128", "--archs", "bogus"], "--archs 'bogus': give one or more of bert, gpt2"),
    (["run", "16x16x128", "--archs", "bert,bert"], "--archs 'bert,bert'"),
    (["add", "no-such-results.json"], "results file 'no-such-results.json': no such file"),
])
def test_the_budget_study_refuses_bad_arguments_in_one_line(capsys, monkeypatch, argv, named):
    """A malformed budget was a ValueError traceback from parse_budget; an unknown --archs started pytest with an
    empty ANISO_MODELS. Now one line naming the argument, exit 2, before anything runs or is written."""
    study = _study()
    recorded = study.OUT.read_bytes()
    monkeypatch.setattr(study, "run_budget", lambda *a, **k: pytest.fail("a budget ran"))
    with pytest.raises(SystemExit) as stop:
        study.main(argv)
    assert stop.value.code == 2
    assert named in _one_line(capsys)
    assert study.OUT.read_bytes() == recorded
    assert study.parse_budget("2048x16x128") == {"miniature_steps": 2048, "miniature_batch": 16,
                                                 "miniature_width": 128}
    assert study.parse_archs("gpt2") == ("gpt2",)
