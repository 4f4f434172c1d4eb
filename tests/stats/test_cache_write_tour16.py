"""A cache entry that cannot be written (a file-size limit, a full disk) lost the statistics computed: safetensors
raised its own SafetensorError, which the run did not take for the write error it is, so `aniso.measure` ended in
a traceback and `aniso run` judged the claim an error. The run keeps them in memory with a warning."""

from __future__ import annotations

import resource
import signal

import pytest

import aniso

TEXTS = [" ".join(f"w{(i * 7 + j) % 40}" for j in range(12)) for i in range(8)]


@pytest.fixture
def file_size_limit():
    """Files written past 4,096 bytes fail with EFBIG (as `ulimit -f 4` makes them)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, hard))
    yield
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    signal.signal(signal.SIGXFSZ, previous)


def test_statistics_whose_cache_entry_cannot_be_written_are_returned_with_a_warning(clean_env, tiny_bert_dir,
                                                                                    file_size_limit):
    with pytest.warns(RuntimeWarning, match=r"could not write the statistics cache entry .*File too large"):
        stats = aniso.measure(str(tiny_bert_dir), TEXTS)
    assert len(stats.layers) == 3 and stats.meta["cache"]["written"] is False


def test_the_cache_raises_the_write_error_as_an_oserror(tmp_path, file_size_limit):
    import numpy as np

    from aniso.stats.cache import _save_tensors

    with pytest.raises(OSError, match="File too large") as caught:
        _save_tensors({"x": np.zeros(10_000)}, tmp_path / "x.safetensors")
    assert caught.value.errno == 27
