"""The device setting: auto picks what is present, a missing device is refused at once, out-of-memory is one line
that names the model, the batch size and the setting to lower, and leaves the cache as it was."""

from __future__ import annotations

import sys

import pytest
import torch

from aniso.common.devices import best_device, check_device, release_freed_host_memory, resolve_device
from aniso.stats.pipeline import StatsProvider
from aniso.registry.entries import Registry
from aniso.common.settings import Settings


def test_auto_resolves_to_the_best_device_present():
    assert Settings().device == best_device()
    assert resolve_device("auto") == best_device()
    if not torch.cuda.is_available():
        assert best_device() in ("cpu", "mps")


@pytest.mark.parametrize("device", ["cuda:7", "tpu"])
def test_a_device_that_is_not_here_is_refused_naming_it(device):
    if device.startswith("cuda") and torch.cuda.device_count() > 7:
        pytest.skip("this machine has 8 GPUs")
    with pytest.raises(ValueError, match=rf"setting device \(ANISO_DEVICE, --aniso-device\): device '{device}'"):
        Settings(device=device)
    with pytest.raises(ValueError, match="ANISO_DEVICE|auto, cpu"):
        check_device(device)


def test_other_devices_get_cache_keys_of_their_own():
    cpu = Settings(device="cpu").extraction_key()
    assert "device" not in cpu  # CPU entries keep the keys they had
    fake = Settings(device="cpu")
    object.__setattr__(fake, "device", "cuda:1")
    assert fake.extraction_key() == cpu | {"device": "cuda"}


def test_out_of_memory_is_one_line_and_leaves_the_cache_as_it_was(tiny_bert_entry, tmp_path, monkeypatch):
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(" ".join(f"w{(i * 7 + j) % 40}" for j in range(5 + i % 9)) for i in range(30)))
    cache = tmp_path / "cache"
    settings = Settings(corpus=str(corpus), n_sequences=20, cache_dir=str(cache), reservoir_size=128,
                        svd_batch_size=64, batch_size=8)
    import aniso.stats.pipeline as pipeline

    def exhausted(*args, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")

    monkeypatch.setattr(pipeline, "compute_stats", exhausted)
    with pytest.raises(RuntimeError) as err:
        StatsProvider(settings, Registry([tiny_bert_entry])).get(tiny_bert_entry)
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"{tiny_bert_entry.id}: out of memory on cpu with batch_size 8")
    assert "ANISO_BATCH_SIZE" in message and "cache is unchanged" in message
    assert not list(cache.glob("*.safetensors")) if cache.exists() else True


def test_xdist_workers_share_the_cores_instead_of_each_taking_all(monkeypatch):
    import torch
    from threadpoolctl import threadpool_info, threadpool_limits

    from aniso.common.devices import share_cpu_cores

    before_torch = torch.get_num_threads()
    restore = threadpool_limits(limits=None)  # records the pools' present limits
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    try:
        assert share_cpu_cores(2, cpus=4) == 2
        assert torch.get_num_threads() == 2
        assert share_cpu_cores(3, cpus=2) == 1
        assert torch.get_num_threads() == 1
        assert all(pool["num_threads"] == 1 for pool in threadpool_info())
        monkeypatch.setenv("OMP_NUM_THREADS", "3")  # the user's choice wins and nothing is changed
        assert share_cpu_cores(2, cpus=8) == 3
        assert torch.get_num_threads() == 1
        with pytest.raises(ValueError, match="n_workers"):
            share_cpu_cores(0)
    finally:
        torch.set_num_threads(before_torch)
        restore.restore_original_limits()


def test_worker_thread_environment_sets_the_share_before_libraries_load():
    from aniso.common.devices import THREAD_VARIABLES, worker_thread_environment

    env = {"PYTEST_XDIST_WORKER_COUNT": "2"}
    assert worker_thread_environment(env, cpus=8) == 4
    assert all(env[name] == "4" for name in THREAD_VARIABLES)
    assert worker_thread_environment({"PYTEST_XDIST_WORKER_COUNT": "3"}, cpus=2) == 1
    outside = {}  # not a worker: nothing changes
    assert worker_thread_environment(outside, cpus=8) is None and outside == {}
    chosen = {"PYTEST_XDIST_WORKER_COUNT": "2", "OMP_NUM_THREADS": "3"}  # the user's choice wins
    assert worker_thread_environment(chosen, cpus=8) is None and chosen == {"PYTEST_XDIST_WORKER_COUNT": "2",
                                                                            "OMP_NUM_THREADS": "3"}


def test_keep_cpu_share_puts_back_what_a_test_changed():
    import torch

    from aniso.common.devices import keep_cpu_share

    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        assert keep_cpu_share(1) is False
        torch.set_num_threads(2)
        assert keep_cpu_share(1) is True and torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


_HEAP_AFTER_FREE = r"""
import ctypes, sys
import numpy as np
from aniso.common.devices import release_freed_host_memory

class MallInfo2(ctypes.Structure):  # glibc >= 2.33, <malloc.h>
    _fields_ = [(n, ctypes.c_size_t) for n in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype = MallInfo2
big = np.ones(8 << 20, np.uint8); del big  # glibc now serves blocks up to 8 MiB from the heap
held = [np.ones(1 << 20, np.uint8) for _ in range(16)]  # 16 MiB of heap, then every other block freed: holes
del held[::2]
free_before = libc.mallinfo2().fordblks
trimmed = release_freed_host_memory() if sys.argv[1] == "release" else None
rss = [int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmRSS")][0]
print(free_before >> 20, trimmed, rss)
"""


def test_freed_host_memory_goes_back_to_the_system():
    """Holes left in glibc's heap by freed blocks stay resident until trimmed: after the release, the resident set is
    smaller by about the 8 MiB freed. In fresh processes (the allocator's state is process-wide)."""
    import platform
    import subprocess
    import sys

    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        assert not release_freed_host_memory()  # other C libraries keep their own policy
        return
    runs = {how: subprocess.run([sys.executable, "-c", _HEAP_AFTER_FREE, how], capture_output=True, text=True,
                                check=True).stdout.split() for how in ("keep", "release")}
    (free_kept, _, rss_kept), (free_released, released, rss_released) = runs["keep"], runs["release"]
    assert int(free_kept) >= 8 and int(free_released) >= 8  # the holes are there in both
    assert released == "True" and int(rss_kept) - int(rss_released) >= 6 * 1024  # KiB: most of the 8 MiB given back


def test_release_host_memory_is_a_setting():
    assert Settings().release_host_memory is True
    assert Settings.from_sources({"release_host_memory": False}).release_host_memory is False


def test_host_memory_is_released_after_the_first_batch_and_when_the_resident_set_grew(monkeypatch):
    """The release policy: the first batch releases; the end of the batch after a release is the reference (the
    pages that batch faulted back in are not growth); later batches release once the resident set is 2% (at least
    the floor) above the reference."""
    import aniso.common.devices as devices

    calls = []
    monkeypatch.setattr(devices, "release_freed_host_memory", lambda: calls.append(1) or True)
    mib = 1 << 20
    readings = iter([1000 * mib, 800 * mib,  # batch 1: releases, level 800 MiB
                     950 * mib,  # batch 2: the reference, 950 MiB (2%: 19 MiB)
                     969 * mib,  # +19 MiB: not above
                     970 * mib, 790 * mib,  # +20 MiB: releases, level 790
                     700 * mib,  # the new reference (2%: 14 MiB, below the floor of 16 MiB)
                     715 * mib,  # +15 MiB: below the floor
                     717 * mib, 680 * mib])  # +17 MiB: releases
    policy = devices.HostMemoryRelease(rss=lambda: next(readings))
    assert [policy.after_batch() for _ in range(4)] == [True, False, False, True]
    assert policy.level == 790 * mib and policy.reference is None
    assert [policy.after_batch() for _ in range(3)] == [False, False, True]
    assert policy.releases == 3 and len(calls) == 3 and policy.level == 680 * mib
    with pytest.raises(ValueError, match="growth"):
        devices.HostMemoryRelease(growth=-1)


def test_without_a_resident_set_reading_every_batch_releases(monkeypatch):
    import aniso.common.devices as devices

    monkeypatch.setattr(devices, "release_freed_host_memory", lambda: True)
    policy = devices.HostMemoryRelease(rss=lambda: None)
    assert all(policy.after_batch() for _ in range(3)) and policy.releases == 3


def test_resident_bytes_reads_this_process():
    from aniso.common.devices import resident_bytes

    got = resident_bytes()
    if sys.platform.startswith("linux"):
        assert got is not None and 10 * (1 << 20) < got < 1 << 40
    else:
        assert got is None
