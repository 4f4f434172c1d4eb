"""`aniso bench twonn` with --n or --d whose points do not fit this machine's memory: one line naming --n and --d,
exit 2, before anything is allocated (it was a NumPy allocation traceback, or the kernel killing the process)."""

from __future__ import annotations

import pytest

from aniso.bench.twonn import bench_twonn, memory_parts
from aniso.cli import main


def _one_line(capsys) -> str:
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out + err, err[-2000:]
    return lines[0]


def test_a_huge_n_is_refused_in_one_line_naming_n_and_d(capsys):
    assert main(["bench", "twonn", "--n", "100000000000", "--no-peers", "--device", "cpu"]) == 2
    line = _one_line(capsys)
    assert line.startswith("aniso bench twonn: --n 100000000000 --d 768: ") and "this machine has" in line


def test_points_larger_than_this_machine_are_refused_before_they_are_made(capsys, monkeypatch):
    import aniso.common.settings as settings

    n, d = 4000, 1000
    monkeypatch.setattr(settings, "physical_memory", lambda: sum(memory_parts(n, d, "gaussian", False).values()) - 1)
    assert main(["bench", "twonn", "--n", str(n), "--d", str(d), "--no-peers", "--device", "cpu"]) == 2
    line = _one_line(capsys)
    assert line.startswith(f"aniso bench twonn: --n {n} --d {d}: the points and their copies would take about")
    assert "give a smaller --n or --d" in line
    with pytest.raises(ValueError, match=rf"n={n} points in d={d} dimensions would take about"):
        bench_twonn(n, d, peers=False)
