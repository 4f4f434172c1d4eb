"""Each variant of aniso.bench.extraction timed once per round, in order, on a random-weight LLaMA shape on CUDA,
after one warm-up forward pass; one line per timing on stdout (with the peak of torch.cuda.max_memory_allocated
during that variant, GiB), then the embedding isotropy's time.

Usage: ANISO_CORPUS=wikitext-103_wiki.valid.tokens python variants.py CONFIG BLOCKS MAX_LENGTH ROUNDS
(the script of benchmarks/results/2026-11-27-gpu/, with the peak memory per variant added).
"""
import sys, time, torch
from aniso.bench.extraction import llama_subject, run_variant, _batch_order, _sync, VARIANTS
from aniso.stats.pipeline import embedding_isotropy
t0 = time.perf_counter()
def say(*a):
    print(f"{time.perf_counter() - t0:7.2f}s", *a, file=sys.stderr, flush=True)
config, layers, max_length, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
s = llama_subject(config, layers=layers, paragraphs=256, max_length=max_length, device="cuda")
say("built")
b = _batch_order(s)
run_variant(s, "forward", b); _sync("cuda"); say("warm forward")
weights = torch.cuda.memory_allocated() / 2**30
print(f"weights_gib {weights:.3f}", flush=True)
for rnd in range(rounds):
    for v in VARIANTS:
        _sync("cuda"); torch.cuda.reset_peak_memory_stats()
        t = time.perf_counter(); st = run_variant(s, v, b); _sync("cuda"); dt = time.perf_counter() - t
        peak = torch.cuda.max_memory_allocated() / 2**30
        say(f"round {rnd} {v} {dt:.3f} s peak {peak:.2f} GiB")
        print(f"{config} {layers} {max_length} {rnd} {v} {dt:.4f} {peak:.3f}", flush=True)
        del st
t = time.perf_counter(); embedding_isotropy(s.model); torch.cuda.synchronize(); say(f"embedding isotropy {time.perf_counter() - t:.3f} s")
print(f"emb {time.perf_counter() - t:.4f}", flush=True)
