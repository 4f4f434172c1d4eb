"""`aniso list` answers in under 2 s of processor time, start-up included (it imports neither torch nor the
statistics pipeline): the processor time of the whole command, measured in a subprocess; the wall time also counts
waiting for the cores, so it is reported, not bounded."""

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _list_once() -> tuple[float, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANISO_")} | {"COLUMNS": "100"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", "from aniso.cli import main; raise SystemExit(main(['list']))"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), seconds


def test_aniso_list_processor_time(benchmark):
    cpu, seconds = benchmark.pedantic(_list_once, rounds=3, iterations=1)
    benchmark.extra_info.update(cpu_s=round(cpu, 3), wall_s=round(seconds, 3))
    assert cpu < 2.0, f"aniso list took {cpu:.2f} s of processor time, {seconds:.2f} s in all"
