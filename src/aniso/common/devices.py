"""Where a run computes: the torch device of the forward passes and of the streamed statistics.

One setting, ``device`` (``ANISO_DEVICE``, ``--aniso-device``), names it: ``auto`` (the default) takes the best device
present (:func:`best_device`), or ``cpu``, ``cuda``, ``cuda:N``, ``mps``; a device that is not there is refused at
once (:func:`check_device`) rather than at the first forward pass. The model and its statistics sit on it together
(:class:`aniso.stats.accumulators.LayerAccumulator`). torch is imported only when a device is resolved.
"""

from __future__ import annotations

import functools

AUTO = "auto"


def resolve_device(device: str) -> str:
    """``device`` checked (:func:`check_device`), with ``auto`` replaced by :func:`best_device`. Raises ValueError."""
    if device.strip().lower() == AUTO:
        return best_device()
    if device == "cpu":  # always present: no need to import torch (a listing stays quick)
        return device
    check_device(device)
    return device


def best_device() -> str:
    """``cuda`` if a CUDA device is present, else ``mps`` if Apple's is, else ``cpu``."""
    import torch

    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


def check_device(device: str) -> "torch.device":
    """``device`` as a :class:`torch.device`, checked to exist here. Raises ValueError naming the device and what is
    present (e.g. ``cuda:1`` on a machine with one GPU, ``cuda`` on a CPU-only build)."""
    import torch

    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        raise ValueError(f"device {device!r} is not a torch device; use auto, cpu, cuda, cuda:N or mps") from None
    if dev.type == "cuda":
        n = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if n == 0 or (dev.index or 0) >= n:
            raise ValueError(f"device {device!r} does not exist here ({n} CUDA device(s); torch "
                             f"{torch.__version__}); set device (ANISO_DEVICE / --aniso-device) to one that does, "
                             "e.g. cpu")
    elif dev.type == "mps":
        mps = getattr(torch.backends, "mps", None)
        if mps is None or not mps.is_available():
            raise ValueError(f"device {device!r} does not exist here (no MPS backend); set device to cpu")
    elif dev.type != "cpu":
        raise ValueError(f"device {device!r}: only cpu, cuda, cuda:N and mps are supported")
    return dev


#: The variables that size the OpenMP and BLAS thread pools when their libraries load.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def worker_thread_environment(environ: "dict[str, str]", cpus: int | None = None) -> int | None:
    """Set the thread-pool variables (:data:`THREAD_VARIABLES`) of a pytest-xdist worker in ``environ`` (normally
    ``os.environ``, before torch, numpy or scipy load) to its share of the cores, ``max(1, cpus // workers)``, with
    the number of workers from ``PYTEST_XDIST_WORKER_COUNT``.

    Limits set after loading (:func:`share_cpu_cores`) reach neither OpenMP threads started from other OS threads
    (each starts with the default the variable sets, all cores otherwise) nor a BLAS loaded later; the variables reach
    both, and the worker's subprocesses. Nothing is changed outside a worker or when ``OMP_NUM_THREADS`` is set
    already (the user's choice). Returns the threads set, or None when nothing was changed.
    """
    workers = environ.get("PYTEST_XDIST_WORKER_COUNT", "").strip()
    if not workers.isdigit() or int(workers) < 1 or environ.get("OMP_NUM_THREADS", "").strip():
        return None
    if cpus is None:
        cpus = _usable_cores()
    threads = max(1, cpus // int(workers))
    for name in THREAD_VARIABLES:
        environ.setdefault(name, str(threads))
    return threads


def share_cpu_cores(n_workers: int, cpus: int | None = None) -> int:
    """Give each of ``n_workers`` processes of one run (pytest-xdist workers) its share of the CPU cores, so that
    their thread pools do not oversubscribe the machine: torch's intra-op threads and the BLAS / OpenMP pools numpy
    and scipy call (via threadpoolctl) are limited to ``max(1, cpus // n_workers)`` threads in this process.

    ``cpus`` defaults to the cores this process may run on (``os.sched_getaffinity``). A user who set
    ``OMP_NUM_THREADS`` has chosen already: nothing is changed and that number is returned. Returns the number of
    threads. Raises ValueError if ``n_workers`` < 1.
    """
    import os

    if n_workers < 1:
        raise ValueError(f"n_workers must be at least 1, got {n_workers}")
    chosen = os.environ.get("OMP_NUM_THREADS", "").strip()
    if chosen.isdigit() and int(chosen) > 0:
        return int(chosen)
    if cpus is None:
        cpus = _usable_cores()
    threads = max(1, cpus // n_workers)
    _limit_threads(threads)
    return threads


def keep_cpu_share(threads: int) -> bool:
    """Put torch's intra-op threads and the BLAS / OpenMP pools back to ``threads`` if anything changed them (a
    library or a test that sets its own thread count); called before each test of a pytest-xdist worker with the
    worker's share from :func:`share_cpu_cores`. Returns True when something had to be put back.
    """
    import torch

    if torch.get_num_threads() == threads:
        return False
    _limit_threads(threads)
    return True


def release_freed_host_memory() -> bool:
    """Give the host memory that the C allocator holds free back to the operating system: glibc's
    ``malloc_trim(0)``, which also releases free pages inside the heap. Called after a batch of hidden states when
    the resident set has grown (:class:`HostMemoryRelease`, :func:`aniso.stats.pipeline.compute_stats`, setting
    ``release_host_memory``).

    Why: batches are formed in order of length, so each batch's hidden states, attention maps and MLP activations
    (megabytes each, served from the heap once glibc has raised its mmap threshold to the largest block freed) are a
    little larger than the holes the previous batch left; the heap grows past them, and the resident set grows with
    the number of batches rather than with what is held. Measured with MiniLM and every statistic, one thread, 256
    and 2,048 WikiText paragraphs (fresh processes): peak RSS 1,162 and 2,273 MB (+96%) with glibc's default; 808
    and 945 MB (+17%, of which the per-input sums are about 40 MB) with a trim after each batch, for 6% more CPU
    time (re-faulted pages). A fixed mmap threshold of 64 KiB instead (``mallopt(M_MMAP_THRESHOLD)``) kept growth at
    +9% but took 50% more CPU time (1.7 M page faults per run against 0.3 M). Device memory (CUDA, MPS) has
    allocators of its own and is not touched.

    Returns True where glibc's ``malloc_trim`` ran, False where the C library is not glibc (musl, macOS and Windows
    keep their own policies) and nothing was done.
    """
    trim = _glibc_malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


def resident_bytes() -> int | None:
    """This process's resident set size in bytes (``/proc/self/statm``), or None where there is no such file."""
    import os

    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


class HostMemoryRelease:
    """When to give freed host memory back (:func:`release_freed_host_memory`): after the first batch, and after a
    batch whose end finds the resident set grown by more than ``growth`` (2%, at least ``floor_bytes``, 16 MiB)
    above its *reference*: the resident set at the end of the first batch after the last release. A release returns
    the free pages of the heap, and the next batch faults the ones it uses back in; its end is therefore the level
    one batch holds, and what grows past it is the heap's fragmentation (or a batch that is larger than the earlier
    ones, as batches sorted by length are). Reading the growth from the level right after the release instead made
    every batch release (the pages faulted back in are above it), paying the release and the faults each time (MiniLM,
    every statistic, 256 WikiText paragraphs: 16 releases in 16 batches, about 0.07x of the forward pass); from the
    reference, 6 to 8 in 16, and the peak resident set grows by 6-9% from 256 to 2,048 paragraphs (41-55% without
    any release; docs/performance.md). Where the resident set cannot be read (no ``/proc/self/statm``) every batch
    releases.

    ``after_batch()`` returns True when it released; ``releases`` counts them; ``level`` is the resident set after
    the last release, ``reference`` as above (None until the batch after a release). ``rss`` (a callable giving
    bytes or None) is read instead of :func:`resident_bytes` (for tests).
    """

    def __init__(self, growth: float = 0.02, floor_bytes: int = 16 << 20, rss=None):
        if growth < 0 or floor_bytes < 0:
            raise ValueError(f"growth and floor_bytes must be >= 0, got {growth} and {floor_bytes}")
        self.growth, self.floor_bytes = growth, floor_bytes
        self._rss = rss or resident_bytes
        self.level: int | None = None  # resident bytes after the last release
        self.reference: int | None = None  # resident bytes after the first batch that followed it
        self.releases = 0

    def after_batch(self) -> bool:
        now = self._rss()
        if now is not None and self.level is not None:
            if self.reference is None:  # the first batch after a release: what one batch holds resident
                self.reference = now
                return False
            if now <= self.reference + max(self.floor_bytes, self.growth * self.reference):
                return False
        released = release_freed_host_memory()
        self.releases += released
        self.level = self._rss() if released else now
        self.reference = None
        return released


@functools.cache
def _glibc_malloc_trim():
    import ctypes
    import platform

    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = (ctypes.c_size_t,), ctypes.c_int
    return trim


def _usable_cores() -> int:
    """The CPU cores this process may run on (its affinity where the system has one, else all of them)."""
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _limit_threads(threads: int) -> None:
    """torch's intra-op pool and every BLAS / OpenMP pool loaded (threadpoolctl) to ``threads`` threads."""
    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(threads)
    threadpool_limits(limits=threads)


def accumulation_dtype(device: "torch.device | str") -> "torch.dtype":
    """The dtype the streamed sums are kept in on ``device``: float64 wherever the device has it (CPU, CUDA), float32
    on Apple's MPS, which has no float64 (there each batch is upcast to float32 and summed in float32: relative
    error of a sum of n terms at most about n·2⁻²⁴ in the worst case, √n·2⁻²⁴ typically)."""
    import torch

    return torch.float32 if torch.device(device).type == "mps" else torch.float64


#: The intra-op threads the suite trains its miniatures with, whatever the machine's cores (:func:`training_threads`).
TRAINING_THREADS = 1


def training_threads():
    """A context manager: torch's intra-op pool and the BLAS / OpenMP pools (threadpoolctl) at
    :data:`TRAINING_THREADS` for the block, put back as they were after it.

    Training sums gradients whose reductions CPU kernels split over threads, in an order that depends on their
    number, and a training run amplifies those last-bit differences: the miniature ResNet trained at 2 threads
    instead of 1 moved its drift-correlation p-value from 0.333 to 0.4. Training at a fixed thread count makes a
    miniature the same whether it is trained by ``aniso run`` on a laptop's cores or by one of pytest-xdist's
    workers. (The CPU's instruction set still matters: kernels for AVX-512 and AVX2 round differently, so two kinds
    of CPU can train two miniatures whose numbers differ in their last digits.)
    """
    import contextlib

    import torch
    from threadpoolctl import threadpool_limits

    @contextlib.contextmanager
    def pinned():
        before = torch.get_num_threads()
        torch.set_num_threads(TRAINING_THREADS)
        try:
            with threadpool_limits(limits=TRAINING_THREADS):  # puts the pools back on leaving
                yield
        finally:
            torch.set_num_threads(before)

    return pinned()
