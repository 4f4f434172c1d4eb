"""Metrics of representation geometry, as small pure functions.

Every function takes plain NumPy arrays (rows are vectors) or the streamed sums
that :mod:`aniso.stats.accumulators` accumulates, and returns floats. Definitions follow the
metric table of the claims catalogue (``CLAIMS.md``). Every array or tensor argument is read as numbers in one place
(:func:`_readable`): a tensor that requires grad is read as its values, a bfloat16, float16 or float8 tensor through
float32 (exact), a quantized tensor as its dequantized values; a structured array of several fields, or integers beyond
±2**53 (which float64 cannot hold exactly), are refused with a ValueError naming the argument. SciPy is imported inside the few functions that use it, so that a
statistics run (which reads q95 through :func:`scipy.special.betaincinv` alone) never imports :mod:`scipy.stats`.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np
import torch

from .waits import on_host

__all__ = [
    "unit_rows",
    "mean_cosine",
    "mean_cosine_from_unit_sum",
    "mean_cosine_sampled",
    "drift_norm",
    "drift_norm_from_sum",
    "svd_anisotropy",
    "svd_anisotropy_from_moments",
    "largest_eigenvalue",
    "largest_eigenpair",
    "largest_eigenpairs",
    "isoscore_from_trace_and_frobenius",
    "twonn_dimension",
    "two_nearest_neighbours",
    "unique_rows",
    "isotropic_cos_quantile",
    "isotropic_cos_std",
    "isoscore",
    "isoscore_from_eigenvalues",
    "isoscore_from_moments",
    "dimension_contributions",
    "partition_isotropy",
    "partition_isotropies",
    "Correlation",
    "correlation_test",
    "correlation_tests",
    "correlation_power",
    "points_for_power",
    "derive_seed",
    "mc_orderings_for",
    "drift_correlation",
    "monotonic_trend",
    "EXACT_MAX_N",
    "MAX_SAMPLED_PAIRS",
    "N_PERMUTATIONS",
    "ALTERNATIVES",
    "POWER_REQUIRED",
    "POWER_MAX_N",
    "MC_RELATIVE_ERROR",
    "MOMENTS_TOLERANCE",
]


def _whole(value, name: str, least: int, most: int | None = None) -> int:
    """``value`` as an int, refusing in one line naming ``name``: TypeError for what is not a whole number (a bool,
    a str, 2.5, NaN), ValueError below ``least`` or above ``most``. An integral float (3.0) is taken."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer, float, np.floating)) or (
            isinstance(value, (float, np.floating)) and not float(value).is_integer()):
        raise TypeError(f"{name}: {value!r} ({type(value).__name__}); give a whole number >= {least}")
    whole = int(value)
    if whole < least or (most is not None and whole > most):
        allowed = f"from {least} to {most}" if most is not None else f">= {least}"
        raise ValueError(f"{name}: {whole}; give a whole number {allowed}")
    return whole


def _torch_seed(value, name: str = "seed") -> int:
    """``value`` as the int seed of a torch generator, refusing in one line naming ``name``: TypeError for what is
    not an integer (a bool, None, 1.5; a NumPy integer is taken), ValueError outside torch's seeds, -2**63 to
    2**64 - 1."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name}: {value!r} ({type(value).__name__}); give an integer")
    if not -2**63 <= int(value) <= 2**64 - 1:
        raise ValueError(f"{name}: {int(value)}; give an integer from -2**63 to 2**64 - 1")
    return int(value)


def _truth(value, name: str, none: bool = False):
    """``value`` as a bool (None kept where ``none``), refusing in one line naming ``name`` a TypeError for any other
    value (``'no'`` would be read as True)."""
    if none and value is None:
        return None
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name}: {value!r} ({type(value).__name__}); give True or False"
                        + (" or None" if none else ""))
    return bool(value)


def _real(value, name: str, allowed: str) -> float:
    """``value`` as a float, refusing in one line naming ``name`` and what is ``allowed``: TypeError for what is not
    a real number (a str, a bool, a complex), ValueError for NaN."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}: {value!r} ({type(value).__name__}); give {allowed}")
    if math.isnan(value):
        raise ValueError(f"{name}: nan; give {allowed}")
    return float(value)


#: The largest magnitude up to which float64 holds every integer exactly (2**53).
_EXACT_INTEGERS = 2**53


def _readable(x, name: str):
    """The one place where every array argument of this module is read as numbers: ``x`` as a NumPy array or (a
    tensor) a detached tensor on its own device, refused in one line naming ``name`` where it cannot be read as a
    plain array of real values without losing part of it or without numpy's or torch's wording.

    A tensor that requires grad is read as its values (detached); a bfloat16, float16 or float8 tensor as float32
    (exact); a quantized tensor as its dequantized values; a one-field structured array as its field.

    TypeError for a complex array or tensor (a cast would drop the imaginary parts), a NumPy masked array with
    masked values (``np.asarray`` would drop the mask and measure them), a ``scipy.sparse`` matrix or array, or a
    sparse torch tensor (give a dense one); ValueError for a tensor on the meta device (it holds no values), for a
    list whose rows differ in length (a ragged list), for a structured array of several fields, for values that
    are no numbers (a text such as a layer name 'enc.0', a text column of a DataFrame), naming the first, and for
    an integer beyond ±2**53, which float64 cannot hold exactly (the metrics work in floating point)."""
    if isinstance(x, torch.Tensor):
        if x.is_meta:
            raise ValueError(f"{name}: a tensor on the meta device, which holds no values; give one holding its values")
        if x.layout != torch.strided:
            raise TypeError(f"{name}: a sparse tensor ({str(x.layout)[6:]}); give a dense one ({name}.to_dense())")
        if x.is_quantized:
            return x.detach().dequantize()
        if x.is_complex():
            raise TypeError(f"{name}: a complex tensor; give real vectors")
        x = x.detach()
        if x.is_floating_point():
            return x.float() if torch.finfo(x.dtype).bits < 32 else x  # bfloat16, float16, float8: exact
        if x.dtype in (torch.int64, torch.uint64) and x.numel():
            low, high = torch.aminmax(x)
            _refuse_inexact_integers(int(low), int(high), name)
        return x
    if type(x).__module__.startswith("scipy.sparse"):
        raise TypeError(f"{name}: a scipy.sparse {type(x).__name__}; give a dense array ({name}.toarray())")
    if isinstance(x, np.ma.MaskedArray):
        if np.ma.is_masked(x):
            keep = (f"np.ma.compress_rows({name}), the rows without a masked value" if x.ndim == 2 else
                    f"{name}.compressed(), the values not masked")
            raise TypeError(f"{name}: a numpy masked array with {int(np.ma.count_masked(x)):,} masked value(s), "
                            f"which would be measured as given; give the values to measure as a plain array (e.g. "
                            f"{keep})")
    if not isinstance(x, np.ndarray):
        try:
            x = np.asarray(x)
        except ValueError as exc:
            ragged = "inhomogeneous" in str(exc) or "sequence" in str(exc)
            raise ValueError(f"{name}: a {type(x).__name__} " + (
                "whose rows differ in length; give equal rows (an array of one shape)" if ragged else
                f"that is no array of numbers ({str(exc).splitlines()[0][:200]})")) from None
    if x.dtype.names is not None:
        if len(x.dtype.names) != 1:
            raise ValueError(f"{name}: a structured array (fields {', '.join(x.dtype.names)}); give a plain (n, d) "
                             "array of numbers (e.g. numpy.lib.recfunctions.structured_to_unstructured)")
        x = x[x.dtype.names[0]]
    if np.iscomplexobj(x):
        raise TypeError(f"{name}: a complex array; give real vectors")
    if x.dtype.kind in "iu" and x.dtype.itemsize == 8 and x.size:
        _refuse_inexact_integers(int(x.min()), int(x.max()), name)
    if x.dtype.kind == "O":  # Python integers beyond int64 (10**20, 10**400) stay objects: float64 would round them
        whole = [int(v) for v in x.reshape(-1) if isinstance(v, (int, np.integer)) and not isinstance(v, bool)]
        if whole:
            _refuse_inexact_integers(min(whole), max(whole), name)
    if x.dtype.kind in "OUSV":  # texts (layer names, a text column), objects
        try:
            np.asarray(x, dtype=np.float64)
        except (TypeError, ValueError):
            bad = next((v for v in x.reshape(-1) if not _is_number(v)), None)
            bad = bad.item() if isinstance(bad, np.generic) else bad  # np.str_('enc.0') shown as 'enc.0'
            missing = bad is None or bad is getattr(sys.modules.get("pandas"), "NA", float("nan"))
            hint = ("a missing value; drop or fill it (e.g. DataFrame.dropna())" if missing else
                    "give an array of numbers" + (" (for layers named 'enc.0', 'dec.0', …: their positions, e.g. "
                                                   "range(len(names)))" if name == "along" else ""))
            raise ValueError(f"{name}: {bad!r} ({type(bad).__name__}) is no number; {hint}") from None
    return x


def _refuse_inexact_integers(low: int, high: int, name: str) -> None:
    """ValueError naming ``name`` when integers from ``low`` to ``high`` include one beyond ±2**53: float64 would
    round it (ties where the integers differ, distances lost to cancellation), silently."""
    bad = high if high > _EXACT_INTEGERS else low if low < -_EXACT_INTEGERS else None
    if bad is not None:
        raise ValueError(f"{name}: the integer {bad} is beyond ±2**53 = {_EXACT_INTEGERS}, where float64 cannot hold "
                         "every integer exactly; give floats, or subtract an offset (e.g. the smallest value)")


def _float64(x) -> np.ndarray:
    """A value of :func:`_readable` (a NumPy array or a detached, real, at least float32-wide tensor) as a float64
    NumPy array on the host."""
    return np.asarray(x.cpu() if isinstance(x, torch.Tensor) else x, dtype=np.float64)


def _is_number(value) -> bool:
    """Whether ``value`` reads as a float (a number, or a text of one such as ``'3'``)."""
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def _as_vector(x, name: str, finite: bool = True) -> np.ndarray:
    """``x`` as a 1-D float64 array, refusing in one line naming ``name``: TypeError for a complex array, ValueError
    for another shape or (with ``finite``) NaN or infinite values."""
    x = _readable(x, name)
    x = _float64(x)
    if x.ndim != 1:
        raise ValueError(f"{name} must be 1-D of shape (d,), got shape {x.shape}")
    if finite and not np.all(np.isfinite(x)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return x


def _as_matrix(x: np.ndarray, name: str = "x") -> np.ndarray:
    x = _readable(x, name)
    x = _float64(x)
    if x.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array of shape (n, d), got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return x


def _from_numpy(a: np.ndarray) -> torch.Tensor:
    """``torch.from_numpy(a)`` (no copy) without PyTorch's warning for a read-only array ("The given NumPy array is
    not writable"): the metrics only read their input, so sharing its memory is safe."""
    if not a.dtype.isnative:  # a big-endian array (torch reads only the machine's byte order): the same values
        a = a.astype(a.dtype.newbyteorder("="))
    if a.flags.writeable:
        return torch.from_numpy(a)
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable", category=UserWarning)
        return torch.from_numpy(a)


def _exponent(peak: float) -> int:
    """The e with ``peak`` in [2^(e−1), 2^e) (0 for 0): times 2^−e, the largest |value| lies in [0.5, 1)."""
    return math.frexp(peak)[1] if peak > 0 else 0


def _unit_scaled(x: np.ndarray) -> tuple[np.ndarray, int]:
    """``x`` (float64, finite) times 2^−e, e the :func:`_exponent` of its largest |value|, and e. Multiplying by a
    power of two is exact (barring results below 2^−1022, far below the largest value), so a scale-free measure of
    the result is that of ``x`` itself, at any finite magnitude: no square or sum overflows (|x| near 1e200) and none
    underflows (|x| near 1e-200, subnormal rows)."""
    e = _exponent(float(np.abs(x).max())) if x.size else 0
    return (np.ldexp(x, -e) if e else x), e


def _times_power_of_two(t: torch.Tensor, exponents) -> torch.Tensor:
    """``t`` times 2^e, exactly, for an int ``e`` or, per row of ``t``'s first dimension, a list of them: in steps
    of at most 2^±100, each a power of two float32 holds (2^e itself may be beyond any float's range)."""
    left = [exponents] if isinstance(exponents, int) else list(exponents)
    while any(left):
        steps = [max(-100, min(100, k)) for k in left]
        if isinstance(exponents, int):
            t = t * (2.0 ** steps[0])
        else:
            factor = torch.tensor([2.0**k for k in steps], dtype=t.dtype, device=t.device)
            t = t * factor.reshape(-1, *([1] * (t.ndim - 1)))
        left = [k - step for k, step in zip(left, steps)]
    return t


def _max_exponent(dtype: torch.dtype) -> int:
    """The e with the largest finite value of ``dtype`` in [2^(e−1), 2^e): 128 for float32, 1024 for float64."""
    return math.frexp(torch.finfo(dtype).max)[1]


def _beyond_float(what: str, mantissa: float, exponent: int,
                  advice: str = "give the vectors in smaller units (it scales with them)",
                  dtype: torch.dtype = torch.float64) -> ValueError:
    """The one-line refusal of a result ``mantissa`` · 2^``exponent`` beyond the range of ``dtype``."""
    log10 = math.log10(abs(mantissa)) + exponent * math.log10(2.0)
    whole = math.floor(log10)
    return ValueError(f"{what}: {10 ** (log10 - whole):.4g}e+{whole} is beyond the largest {str(dtype)[6:]} "
                      f"({torch.finfo(dtype).max:.4g}); {advice}")


def _ldexp(value: float, exponent: int, what: str, **advice) -> float:
    """``value`` · 2^``exponent`` as a float, or :func:`_beyond_float` raised where it overflows."""
    try:
        return math.ldexp(value, exponent)
    except OverflowError:
        raise _beyond_float(what, value, exponent, **advice) from None


def unit_rows(x: np.ndarray) -> tuple[np.ndarray, int]:
    """Normalise the rows of ``x`` to unit Euclidean norm, dropping zero rows.

    Parameters
    ----------
    x : array of shape (n, d)

    Returns
    -------
    u : array of shape (n - n_zero, d), float64, each row of norm 1
    n_zero : int, the number of all-zero rows dropped (they have no direction)

    Each row is first scaled by the power of two that brings its largest |value| into [0.5, 1) (exact), so its norm
    neither overflows (|x| near 1e200) nor underflows (|x| near 1e-200, subnormal rows near 1e-320): the unit rows of
    ``x`` at any finite magnitude.
    """
    x = _as_matrix(x)
    if x.shape[1]:
        x = np.ldexp(x, -np.frexp(np.abs(x).max(axis=1))[1][:, None])  # each row's peak into [0.5, 1); 0 for 0 rows
    norms = np.linalg.norm(x, axis=1)
    keep = norms > 0
    return x[keep] / norms[keep, None], int((~keep).sum())


#: The relative excess of ‖Σu‖² over n² that :func:`mean_cosine_from_unit_sum` takes for rounding (unit vectors
#: normalised in a narrow dtype have norms a few units of its roundoff from 1) before refusing the sum.
_UNIT_SUM_SLACK = 1e-3
#: The most pairs :func:`mean_cosine_sampled` draws: their two int64 indices take 16 bytes a pair (1.6 GB here).
MAX_SAMPLED_PAIRS = 10**8


def mean_cosine_from_unit_sum(unit_sum: np.ndarray, n: int) -> float:
    """Exact mean cosine similarity over all ordered pairs i != j, from Σ u_i.

    With u_i = x_i / ||x_i|| and s = Σ_i u_i, Σ_{i≠j} cos(x_i, x_j) = ||s||² − n,
    so avg cos = (||s||² − n) / (n (n − 1)).  (Claims catalogue, metric table;
    Godey et al. 2024 §3 use the sampled-pairs estimate of the same quantity.)

    Parameters
    ----------
    unit_sum : array of shape (d,), the sum of the n unit vectors
    n : int, the number of (non-zero) vectors summed, n >= 2

    Returns
    -------
    float in [−1/(n−1), 1], dimensionless

    Raises
    ------
    TypeError if ``n`` is not a whole number or ``unit_sum`` is complex; ValueError if n < 2, ``unit_sum`` is not
    1-D or holds NaN or infinite values, or ‖unit_sum‖² exceeds n² by more than rounding (relative :data:`_UNIT_SUM_SLACK`): n unit vectors cannot
    sum to a norm above n, so it is not a sum of unit vectors (e.g. the raw Σx).
    """
    n = _whole(n, "n", 1)
    if n < 2:
        raise ValueError(f"mean cosine needs at least 2 non-zero vectors, got {n}")
    s = _as_vector(unit_sum, "unit_sum")
    square = float(s @ s)
    if not square <= n * n * (1 + _UNIT_SUM_SLACK):
        raise ValueError(f"unit_sum: its norm² {square:.6g} exceeds n² = {n * n} (n = {n}): not a sum of n unit "
                         "vectors; give the sum of the unit vectors x_i / ‖x_i‖")
    value = (square - n) / (n * (n - 1))
    # Rounding can push the value a hair outside its mathematical range.
    return float(min(1.0, max(-1.0 / (n - 1), value)))


def mean_cosine(x: np.ndarray) -> float:
    """Exact mean cosine similarity of the rows of ``x`` over all ordered pairs i != j.

    Zero rows are excluded (see :func:`unit_rows`). Scale-free at any finite magnitude: each row is normalised
    after scaling by a power of two (:func:`unit_rows`), so norms neither overflow nor underflow.

    Parameters
    ----------
    x : array of shape (n, d)

    Returns
    -------
    float in [−1/(n−1), 1]

    Raises
    ------
    ValueError naming ``x`` if it has fewer than 2 non-zero rows (none at all, no columns, or all rows zero: a zero
    row has no direction), or non-finite values.
    """
    u, n_zero = unit_rows(x)
    if u.shape[0] < 2:
        raise ValueError(_too_few_directions(u.shape[0], n_zero))
    return mean_cosine_from_unit_sum(u.sum(axis=0), u.shape[0])


def _too_few_directions(n: int, n_zero: int) -> str:
    """The refusal of a mean cosine of ``n`` non-zero rows (n < 2) beside ``n_zero`` zero rows."""
    rows = n + n_zero
    zeros = (f", {f'all {n_zero}' if n == 0 and n_zero > 1 else n_zero} of them zero (a zero row has no direction)"
             if n_zero else "")
    return f"x: mean cosine needs at least 2 non-zero rows, got {rows} row{'s' * (rows != 1)}{zeros}"


def mean_cosine_sampled(x: np.ndarray, n_pairs: int, rng: np.random.Generator) -> float:
    """Mean cosine similarity over ``n_pairs`` uniformly sampled pairs i != j.

    The estimator of Godey et al. 2024 §3.1–3.2 ("we uniformly sample pairs of
    vectors"). Unbiased for :func:`mean_cosine`.

    Parameters
    ----------
    x : array of shape (n, d), n >= 2 non-zero rows
    n_pairs : int >= 1
    rng : numpy Generator (explicit seed)

    Returns
    -------
    float in [−1, 1]

    Raises
    ------
    TypeError if ``n_pairs`` is not a whole number or ``rng`` is neither a Generator nor an int (an int is taken as
    the seed of ``numpy.random.default_rng``, numpy's convention); ValueError if ``n_pairs`` is below 1 or above
    :data:`MAX_SAMPLED_PAIRS` (memory), or ``x`` has fewer than 2 non-zero rows.
    """
    n_pairs = _whole(n_pairs, "n_pairs", 1)
    if n_pairs > MAX_SAMPLED_PAIRS:
        raise ValueError(f"n_pairs: {n_pairs} is more than {MAX_SAMPLED_PAIRS:,} pairs (16 bytes each); give fewer, "
                         "or take the exact mean_cosine")
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, (bool, np.bool_)):
        if rng < 0:
            raise ValueError(f"rng: {int(rng)}; give a numpy.random.Generator or an int seed >= 0")
        rng = np.random.default_rng(rng)
    elif not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng: a {type(rng).__name__}; give a numpy.random.Generator or an int seed")
    u, n_zero = unit_rows(x)
    n = u.shape[0]
    if n < 2:
        raise ValueError(_too_few_directions(n, n_zero))
    i = rng.integers(0, n, size=n_pairs)
    j = rng.integers(0, n - 1, size=n_pairs)
    j = j + (j >= i)  # uniform over j != i
    total = 0.0
    for s in range(0, n_pairs, 8192):  # chunks keep the gathered pairs small
        total += float(np.einsum("pd,pd->", u[i[s : s + 8192]], u[j[s : s + 8192]]))
    return total / n_pairs


def drift_norm_from_sum(vector_sum: np.ndarray, n: int) -> float:
    """Drift norm ||x̄||₂ from Σ x_i and n (Godey et al. 2024 §3.3).

    Returns a float in the units of the hidden states, computed from Σx scaled by a power of two (exact), so it
    neither overflows nor underflows short of float64's range.

    Raises TypeError if ``n`` is not a whole number or ``vector_sum`` is complex; ValueError if n < 1, or
    ``vector_sum`` is not 1-D or holds NaN or infinite values, or the drift norm itself is beyond the largest
    float64 (1.8e308).
    """
    n = _whole(n, "n", 1)
    return _drift_norm_from_sum(_as_vector(vector_sum, "vector_sum"), n)


def _drift_norm_from_sum(vector_sum: np.ndarray, n: int) -> float:
    """:func:`drift_norm_from_sum` without the checks of its arguments (the statistics' own sums and counts)."""
    if n < 1:
        raise ValueError(f"drift norm needs at least 1 vector, got {n}")
    s, exponent = _unit_scaled(np.asarray(vector_sum, dtype=np.float64))
    return _ldexp(float(np.linalg.norm(s / n)), exponent, "drift norm")


def drift_norm(x: np.ndarray) -> float:
    """Drift norm ||x̄||₂, the norm of the mean of the rows of ``x`` (shape (n, d)).

    Godey et al. 2024 §3.3. Same units as ``x``. The rows are summed scaled by a power of two (exact), so the sum
    does not overflow at any finite magnitude. Raises ValueError (besides the checks of ``x``) where the drift norm
    itself is beyond the largest float64 (1.8e308).
    """
    x = _as_matrix(x)
    scaled, exponent = _unit_scaled(x)
    if x.shape[0] < 1:
        raise ValueError(f"drift norm needs at least 1 vector, got {x.shape[0]}")
    return _ldexp(float(np.linalg.norm(scaled.sum(axis=0) / x.shape[0])), exponent, "drift norm")


#: A matrix is symmetric for :func:`svd_anisotropy_from_moments` and :func:`largest_eigenvalue` when no entry
#: differs from its transpose's by more than this times its largest |entry| (a float32 Gram matrix's rounding is
#: far below it; a matrix that is not a Gram or covariance matrix is far above it).
_SYMMETRY_TOL = 1e-4


def _refuse_asymmetric(c, name: str, what: str, exponent: int = 0) -> None:
    """ValueError naming ``name`` when ``c`` (a square array or tensor) is not symmetric beyond rounding (one pass,
    one value to the host); ``c`` is the caller's matrix times 2^-``exponent`` (:func:`_moments`), and the refusal
    quotes the caller's numbers."""
    if isinstance(c, torch.Tensor):
        gap, top = torch.stack([(c - c.mT).abs().amax(), c.abs().amax()]).tolist() if c.numel() else (0.0, 0.0)
    else:
        gap, top = (float(np.abs(c - c.T).max()), float(np.abs(c).max())) if c.size else (0.0, 0.0)
    if gap > _SYMMETRY_TOL * top:
        gap, top = math.ldexp(gap, exponent), math.ldexp(top, exponent)
        raise ValueError(f"{name} is not symmetric (largest asymmetry {gap:.3g}, largest entry {top:.3g}); "
                         f"give {what}")


#: How far below zero (relative to the largest) an eigenvalue, or the trace of a centred scatter (relative to the
#: trace of Σxxᵀ), may be and still be taken for rounding; beyond it the numbers are not a covariance's.
_NEGATIVE_SLACK = 1e-6


#: The absolute error within which :func:`svd_anisotropy_from_moments` and :func:`isoscore_from_moments` give their
#: value (both lie in [0, 1]); moments that cannot fix it that closely are refused (see their docstrings).
MOMENTS_TOLERANCE = 1e-6
#: Units of float64 roundoff per entry counted for the given Σx and Σxxᵀ and the subtraction Σxxᵀ − ssᵀ/n.
_MOMENT_ROUNDING = 8


def _moments(vector_sum, gram) -> tuple[np.ndarray, np.ndarray, int]:
    """Σx and Σxxᵀ as float64 arrays of shapes (d,) and (d, d), refused in one line naming the one at fault; scaled
    by 2^−k and 2^−2k (exact; scale-free measures only), k such that the largest |entry| of Σxxᵀ is at most 1, so
    that ssᵀ/n neither overflows nor underflows; and k (a refusal quotes numbers in the caller's units)."""
    s = _as_vector(vector_sum, "vector_sum")
    gram = _readable(gram, "gram")
    g = _float64(gram)
    if g.shape != (s.shape[0], s.shape[0]):
        raise ValueError(f"gram must have shape ({s.shape[0]}, {s.shape[0]}), got {g.shape}")
    if not np.all(np.isfinite(g)):
        raise ValueError("gram contains NaN or infinite values")
    k = (_exponent(float(np.abs(g).max())) + 1) // 2 if g.size else 0
    return np.ldexp(s, -k), np.ldexp(g, -2 * k), k


def _centred_scatter(s: np.ndarray, g: np.ndarray, n: int, what: str, gain: float) -> np.ndarray | None:
    """The centred scatter C = Σxxᵀ − ssᵀ/n, symmetrised, or None when the moments are exactly those of identical
    vectors (tr C exactly 0 in rational arithmetic, :func:`_exact_trace`).

    ValueError naming n and gram when its trace is below zero beyond rounding (or NaN): no n vectors have these
    sums. ValueError naming vector_sum and gram when the answer ``what`` cannot be had from them to within
    :data:`MOMENTS_TOLERANCE`: with T = tr C and M = n‖x̄‖² = ‖s‖²/n, rounding each entry of Σxxᵀ and ssᵀ/n by
    :data:`_MOMENT_ROUNDING` units u = 2⁻⁵³ perturbs C by E with ‖E‖_F ≤ 8u(T + 2M) (C is positive semi-definite, so
    ‖Σxxᵀ‖_F ≤ tr Σxxᵀ = T + M), so relative to T by ρ = 8u(1 + 2M/T); the answer moves by at most ``gain`` · ρ
    (2 for λ_max / T; 4(1 + √d) for IsoScore), which must not exceed the tolerance (a trace of 0 or below: the
    moments cannot tell the vectors from identical ones, refused unless they are exactly those of identical
    vectors). The refusal quotes M/T only where ρ ≤ 0.1 (T known to about 10%); beyond it T is rounding, and the
    refusal says so without a number."""
    c = g - np.outer(s, s) / n
    c = (c + c.T) / 2
    trace, scale = float(np.trace(c)), float(np.abs(np.diagonal(g)).sum())
    if not trace >= -_NEGATIVE_SLACK * scale:
        raise ValueError(f"n = {n} and gram do not fit vector_sum: the centred scatter Σxxᵀ − ssᵀ/n has trace "
                         f"{trace:.6g} < 0; give Σx, Σxxᵀ and the count n of the same vectors")
    offset = float(s @ s) / n
    rho = _MOMENT_ROUNDING * _F64_UNIT_ROUNDOFF * (abs(trace) + 2 * offset) / abs(trace) if trace else math.inf
    if not gain * rho <= MOMENTS_TOLERANCE:
        if _exact_trace(s, g, n) == 0:  # the moments are exactly those of identical vectors
            return None
        # The trace is quoted only where its own rounding (relative ρ) leaves it a number: past ρ = 0.1 the
        # cancelled trace is rounding alone, and a ratio taken from it would be off by any factor.
        ratio = (f"is {offset / trace:.2g} times the centred scatter's trace" if trace > 0 and rho <= 0.1 else
                 "is so far above the centred scatter's trace that Σxxᵀ − ssᵀ/n leaves no digit of that trace")
        raise ValueError(f"vector_sum and gram: the vectors' common offset n‖x̄‖² {ratio}, so float64 moments "
                         f"cannot give {what} to within "
                         f"{MOMENTS_TOLERANCE:g} (Σxxᵀ − ssᵀ/n cancels); centre the vectors before summing "
                         "(any centre near their mean) or give the vectors themselves")
    return c


def _exact_trace(s: np.ndarray, g: np.ndarray, n: int) -> Fraction:
    """tr(Σxxᵀ − ssᵀ/n) of the given float64 moments in exact rational arithmetic: 0 only where they are exactly
    those of n identical vectors."""
    return sum((Fraction(float(gi)) - Fraction(float(si)) ** 2 / n for gi, si in zip(np.diagonal(g), s)), Fraction(0))


def svd_anisotropy_from_moments(vector_sum: np.ndarray, gram: np.ndarray, n: int) -> float:
    """SVD anisotropy σ₁² / Σσᵢ² of the centred set, from Σx (d,), Σxxᵀ (d, d) and n.

    The centred scatter matrix is C = Σxxᵀ − n x̄x̄ᵀ; its eigenvalues are the
    squared singular values of the centred data matrix, so the ratio is
    λ_max(C) / trace(C) (Razzhigaev et al. 2024 §2.3).

    Precision. Σxxᵀ of vectors that share a large common offset holds it in its leading digits, and C = Σxxᵀ − ssᵀ/n
    cancels them: with T = tr C and M = n‖x̄‖², rounding the given moments (8 units of float64 roundoff u = 2⁻⁵³ per
    entry, counted for their own rounding and the subtraction) moves the answer by at most 2ρ, ρ = 8u(1 + 2M/T)
    (Weyl's inequality for λ_max, and the same bound for the trace). Where that exceeds :data:`MOMENTS_TOLERANCE`
    (1e-6; M/T above about 2.8e8) the moments are refused: centre the vectors before summing (about any centre
    near their mean: the value does not change), or give the vectors to :func:`svd_anisotropy`. Moments summed
    with a larger rounding than that (long naive sums) carry more error than the bound counts. The moments are
    scaled by powers of two first (exact), so the magnitude of the vectors does not matter.

    Returns
    -------
    float in [1/r, 1] where r is the rank of the centred data; NaN if the moments are exactly those of identical
    vectors (tr C exactly 0 in rational arithmetic: no direction of variance).

    Raises
    ------
    ValueError if n < 2, shapes disagree, ``gram`` is not symmetric beyond rounding (:func:`_refuse_asymmetric`),
    the centred scatter has a negative trace or an eigenvalue below zero beyond rounding (1e-6 of its trace: sums no
    n vectors have), or the moments cannot give the value to within :data:`MOMENTS_TOLERANCE` (above); TypeError if
    ``n`` is not a whole number.
    """
    n = _whole(n, "n", 1)
    if n < 2:
        raise ValueError(f"SVD anisotropy needs at least 2 vectors, got {n}")
    s, g, k = _moments(vector_sum, gram)
    _refuse_asymmetric(g, "gram", "Σ x xᵀ", 2 * k)
    c = _centred_scatter(s, g, n, "the SVD anisotropy", 2.0)
    if c is None:
        return float("nan")
    trace = float(np.trace(c))
    lam = np.linalg.eigvalsh(c)
    _refuse_indefinite(float(lam[0]), trace)
    return float(min(1.0, max(0.0, float(lam[-1]) / trace)))


def _refuse_indefinite(lowest: float, trace: float) -> None:
    """ValueError naming gram where the centred scatter Σxxᵀ − ssᵀ/n has an eigenvalue ``lowest`` below zero by
    more than :data:`_NEGATIVE_SLACK` of its trace ``trace`` (rounding of accepted moments moves an eigenvalue by at
    most ``MOMENTS_TOLERANCE``/2 of the trace, below that): a scatter of real vectors is positive semi-definite, so
    no n vectors have these sums (a trace above 0 alone does not say so)."""
    if lowest < -_NEGATIVE_SLACK * trace:
        raise ValueError(f"gram: the centred scatter Σxxᵀ − ssᵀ/n has a negative eigenvalue ({lowest / trace:.3g} "
                         "times its trace), which no vectors' scatter has; give Σx, Σxxᵀ and the count n of the same "
                         "vectors")


def svd_anisotropy(x: np.ndarray) -> float:
    """SVD anisotropy σ₁² / Σσᵢ² of the centred rows of ``x`` (shape (n, d)).

    Razzhigaev et al. 2024 §2.3. Computed from singular values of the centred
    matrix directly (the one-shot reference for :func:`svd_anisotropy_from_moments`).
    NaN when all rows are identical, or when their centred spread √(Σσᵢ²) is below 1e-12 of their size ‖x‖_F
    (distinct rows within rounding of one another: the direction of their spread is rounding's); the latter with a
    RuntimeWarning saying so. Scale-free: ``x`` is first scaled by a power of two that brings its largest |value| into
    [0.5, 1) (exact), so σᵢ² neither overflow nor underflow at any finite magnitude.
    """
    x = _as_matrix(x)
    if x.shape[0] < 2:
        raise ValueError(f"SVD anisotropy needs at least 2 vectors, got {x.shape[0]}")
    x = _unit_scaled(x)[0]
    xc = x - x.mean(axis=0)
    if _spread_within_rounding(x, xc, "SVD anisotropy"):
        return float("nan")
    sv = torch.linalg.svdvals(torch.from_numpy(xc)).numpy()
    return float(sv[0] ** 2 / np.sum(sv**2))


def _spread_within_rounding(x: np.ndarray, xc: np.ndarray, metric: str) -> bool:
    """Whether the rows of ``x`` (already scaled by :func:`_unit_scaled`; ``xc`` its rows less their mean) have no
    spread a direction can be read from: all rows identical, or a centred spread √‖xc‖²_F (= √(Σσᵢ²)) below 1e-12 of
    their size max(1, ‖x‖_F) (distinct rows within rounding of one another). The latter warns (RuntimeWarning, naming
    ``metric``, which is then NaN). The one rule of :func:`svd_anisotropy` and :func:`isoscore`."""
    total = float(np.sum(xc**2))
    size = max(1.0, float(np.sum(x**2)))
    if total > 0 and total >= 1e-24 * size and (x != x[0]).any():
        return False
    if (x != x[0]).any():
        import warnings

        warnings.warn(f"x: the rows differ, but their centred spread is {math.sqrt(total / size):.2g} of their "
                      "size, below 1e-12: too close to rounding for a direction of spread to be told; "
                      f"{metric} NaN", RuntimeWarning, stacklevel=3)
    return True


#: Matrices of this size or smaller take ``torch.linalg.eigvalsh`` in :func:`largest_eigenvalue` (a dense solve of
#: microseconds). Above it the Lanczos iteration is faster (``benchmarks/test_bench_spectrum.py``, centred scatters
#: of 4,096 rows in float64 on 2 CPU cores: d = 384, 2.6 ms against 7.5 ms; d = 1,024, 5.1 ms against 86.5 ms); on an
#: H100 ``eigvalsh`` of d = 4,096 takes 0.12 s.
LANCZOS_MIN_SIZE = 128
#: Lanczos steps between two convergence checks of :func:`largest_eigenpair` (each check waits for the device).
_LANCZOS_CHUNK = 8


def _square_matrices(c, stacked: bool, rtol) -> tuple[torch.Tensor, list[int]]:
    """The checks of :func:`largest_eigenpair`, :func:`largest_eigenpairs` and :func:`largest_eigenvalue` (once, at
    the public entry: the statistics call the unchecked bodies per batch). A NumPy array is read as a tensor on the
    CPU; bfloat16 and float16 are read through float32 (exact), integers through float64. TypeError for what is
    neither (a ``numpy.matrix`` included), a complex one, or an ``rtol`` that is not a real number; ValueError for a
    shape that is not (m, m) (``stacked``: (n, m, m)), NaN or infinite entries, a matrix that is not symmetric beyond
    rounding (:func:`_refuse_asymmetric`), or an ``rtol`` not above 0.

    Returns the matrices scaled, each by 2^−e (exact), and the exponents e (one per matrix): 0 where the largest
    |entry| lies within 2^±(emax/4) (emax: 128 for float32, 1024 for float64), where no product or norm of the
    iteration overflows or underflows; else e brings it into [0.5, 1). λ_max is then 2^e times the scaled one."""
    rtol = _real(rtol, "rtol", "a number > 0")
    if not rtol > 0:
        raise ValueError(f"rtol: {rtol}; give a number > 0")
    c = _readable(c, "c")
    if isinstance(c, np.ndarray) and not isinstance(c, np.matrix):
        c = _from_numpy(c)
    if not isinstance(c, torch.Tensor):
        raise TypeError(f"c: a {type(c).__module__}.{type(c).__name__}; give a torch tensor or a NumPy array (m, m)")
    if not c.is_floating_point():
        c = c.to(torch.float64)
    elif torch.finfo(c.dtype).bits < 32:
        c = c.float()
    if stacked and (c.ndim != 3 or c.shape[1] != c.shape[2]):
        raise ValueError(f"c must be a stack of square matrices (n, m, m), got shape {tuple(c.shape)}")
    if not stacked and (c.ndim != 2 or c.shape[0] != c.shape[1]):
        raise ValueError(f"c must be a square matrix, got shape {tuple(c.shape)}")
    if c.shape[-1] == 0 and c.numel() == 0 and (not stacked or c.shape[0] > 0):
        raise ValueError(f"c: a 0 × 0 matrix has no eigenvalue, got shape {tuple(c.shape)}; give matrices of size >= 1")
    if not bool(torch.isfinite(c).all()):
        raise ValueError("c contains NaN or infinite values")
    for i, ci in enumerate(c if stacked else [c]):
        _refuse_asymmetric(ci, f"c[{i}]" if stacked else "c", "a symmetric (covariance or Gram) matrix")
    safe = _max_exponent(c.dtype) // 4
    peaks = (c.abs().amax(dim=(-2, -1)).reshape(-1).tolist() if c.numel() else [0.0] * (c.shape[0] if stacked else 1))
    exponents = [e if abs(e) > safe else 0 for e in map(_exponent, peaks)]
    if any(exponents):
        c = _times_power_of_two(c, [-e for e in exponents] if stacked else -exponents[0])
    return c, exponents


def _unscaled_values(values: torch.Tensor, exponents: list[int], m: int, stacked: bool) -> torch.Tensor:
    """λ_max of the matrices :func:`_square_matrices` scaled, back in the units of the matrices given (2^e times);
    ValueError where one is beyond the dtype's range (possible only where m times 2^e is: read from the device
    then)."""
    if not any(exponents):
        return values
    out = _times_power_of_two(values, exponents if stacked else exponents[0])
    if max(exponents) + math.log2(max(m, 1)) >= _max_exponent(values.dtype):
        for value, scaled, e in zip(out.reshape(-1).tolist(), values.reshape(-1).tolist(), exponents):
            if not math.isfinite(value):
                raise _beyond_float("largest eigenvalue", scaled, e, "give the matrix in smaller units (λ_max scales "
                                    "with it)", values.dtype)
    return out


def largest_eigenpair(c: torch.Tensor, *, rtol: float = 1e-10, max_steps: int = 240, seed: int = 0,
                      min_size: int = LANCZOS_MIN_SIZE, vector: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """λ_max of a symmetric positive semi-definite matrix and a unit eigenvector of it, on its device, in its dtype.

    ``c`` (m, m) float64 (or float32) -> (0-d tensor, (m,) tensor) on ``c``'s device. For m <= ``min_size`` this is
    ``torch.linalg.eigh(c)``'s last pair; above, the top Ritz pair (the vector: the Lanczos basis times the
    tridiagonal's top eigenvector) of a Lanczos iteration (Lanczos 1950;
    Golub & Van Loan, *Matrix Computations*, 4th ed., §10.1) with full re-orthogonalisation (twice per step), from a
    start vector drawn by a generator seeded with ``seed`` on ``c``'s device: one matrix-vector product per step
    (O(m²)), against the O(m³) of the dense solver, whose cost at m = 4,096 (0.12 s on an H100 in float64, 2.5 s on
    2 CPU cores) made it the largest cost of the batch-wise SVD anisotropy of a 7B decoder. The iteration checks
    its convergence every 8 steps (a k × k tridiagonal eigenproblem on the host, tens of microseconds): the SVD
    batches of MiniLM's and SmolLM2's hidden states converge after 8 or 16 steps, where a check every 24 steps
    ran 24.

    Accuracy: the Ritz value θ never exceeds λ_max (Cauchy interlacing, up to rounding), and the iteration stops when
    the top Ritz pair's residual ‖c y − θ y‖ = β_k |s_k| is at most ``rtol`` · θ, which puts an eigenvalue of ``c``
    within ``rtol`` · θ of θ (the residual bound of a symmetric matrix; Parlett, *The Symmetric Eigenvalue
    Problem*, ch. 4). That eigenvalue is λ_max unless the start vector is (nearly) orthogonal to λ_max's
    eigenvector and the top of the spectrum is not separated (the Kaniel–Paige–Saad bound, Golub & Van Loan
    §10.1.4); a random start makes the first improbable, and then the error is at most the gap to the next
    eigenvalue. If the residual is still larger after ``max_steps`` steps, the dense solver answers: an
    unconverged iteration never gives the result.
    ``tests/test_metrics.py`` checks agreement with ``eigvalsh`` to 1e-9 relative on isotropic, anisotropic,
    clustered-top, rank-deficient and massive-feature spectra.

    ``vector=False``: the value only (None for the vector).

    A NumPy array is read as a tensor on the CPU; bfloat16 and float16 are read through float32, integers through
    float64. Raises TypeError when ``c`` is neither a tensor nor a NumPy array, or is complex, or ``rtol`` is not a
    real number, or ``max_steps`` or ``min_size`` is not a whole number, or ``seed`` is not an integer, or ``vector``
    is not True or False; ValueError when ``c`` is not a square matrix
    or is 0 × 0, holds NaN or infinite values, or is not symmetric beyond rounding, or ``rtol`` is not above 0, or
    ``max_steps`` is below 1 or ``min_size`` below 0, or ``seed`` is outside torch's seeds (-2**63 to 2**64 - 1),
    or λ_max itself is beyond the dtype's range.

    At any finite magnitude: a matrix whose largest |entry| is beyond 2^±(emax/4) (2^±256 in float64, 2^±32 in
    float32) is scaled by a power of two into [0.5, 1) first (exact; the vector is unchanged, the value scaled back).
    """
    c, exponents = _square_matrices(c, False, rtol)
    max_steps, min_size = _whole(max_steps, "max_steps", 1), _whole(min_size, "min_size", 0)
    seed, vector = _torch_seed(seed), _truth(vector, "vector")
    value, vec = _largest_eigenpair(c, rtol=rtol, max_steps=max_steps, seed=seed, min_size=min_size, vector=vector)
    return _unscaled_values(value, exponents, c.shape[0], False), vec


def _largest_eigenpair(c: torch.Tensor, *, rtol: float = 1e-10, max_steps: int = 240, seed: int = 0,
                       min_size: int = LANCZOS_MIN_SIZE, vector: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`largest_eigenpair` without the checks of its arguments (no host copy: the statistics call it per
    batch, on a symmetrised float tensor)."""
    if c.ndim != 2 or c.shape[0] != c.shape[1]:
        raise ValueError(f"c must be a square matrix, got shape {tuple(c.shape)}")
    m = c.shape[0]
    if m <= min_size:
        if not vector:
            return torch.linalg.eigvalsh(c)[-1], None
        values, vectors = torch.linalg.eigh(c)
        return values[-1], vectors[:, -1]
    steps = min(max_steps, m)
    gen = torch.Generator(device=c.device).manual_seed(seed)
    basis = torch.zeros(steps + 1, m, dtype=c.dtype, device=c.device)
    q = torch.randn(m, generator=gen, dtype=c.dtype, device=c.device)
    basis[0] = q / torch.linalg.vector_norm(q)
    alphas = torch.zeros(steps, dtype=c.dtype, device=c.device)
    betas = torch.zeros(steps, dtype=c.dtype, device=c.device)
    tiny = torch.finfo(c.dtype).tiny
    k = 0
    while k < steps:
        for _ in range(min(_LANCZOS_CHUNK, steps - k)):
            w = c @ basis[k]
            alphas[k] = basis[k] @ w
            done = basis[: k + 1]
            w = w - done.T @ (done @ w)
            w = w - done.T @ (done @ w)
            betas[k] = torch.linalg.vector_norm(w)
            basis[k + 1] = w / betas[k].clamp_min(tiny)
            k += 1
        # The k x k tridiagonal's eigenpairs (a few kilobytes): where the iteration stops is decided on the host,
        # from the α and β read in one copy (the check's one wait).
        read = torch.cat([alphas[:k], betas[:k]]).cpu()
        with on_host():
            a, b = read[:k], read[k:]
            t = torch.diag(a) + torch.diag(b[: k - 1], 1) + torch.diag(b[: k - 1], -1)
            theta, s = torch.linalg.eigh(t)
            top = theta[-1]
            stop = bool(b[k - 1] * s[-1, -1].abs() <= rtol * top.abs()) or k == m
        if stop:
            return top.to(c.device), (basis[:k].T @ s[:, -1].to(device=c.device, dtype=c.dtype) if vector else None)
    if not vector:
        return torch.linalg.eigvalsh(c)[-1], None
    values, vectors = torch.linalg.eigh(c)
    return values[-1], vectors[:, -1]


def largest_eigenpairs(c: torch.Tensor, *, rtol: float = 1e-10, max_steps: int = 240, seed: int = 0,
                       min_size: int = LANCZOS_MIN_SIZE, vector: bool = True,
                       lockstep: bool | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
    """:func:`largest_eigenpair` of each of n symmetric positive semi-definite matrices at once.

    ``c`` (n, m, m) float64 (or float32) -> ((n,) tensor of λ_max, (n, m) unit eigenvectors, or None with
    ``vector=False``) on ``c``'s device, in its dtype. With ``lockstep`` (the default off the CPU) the n Lanczos
    iterations run together, each step one batched matrix-vector product for all of them (a launch per step, not one
    per matrix), and their convergence is checked together every 8 steps (one wait for the device per check, not one
    per matrix). Without it (the default on the CPU, where nothing waits and its BLAS runs a batched product of
    vectors about 3.6 times slower than one matrix-vector product per matrix: n = 3, m = 1,024, float64, one thread)
    each matrix is :func:`largest_eigenpair`'s own run. Each matrix's result is taken at
    the first check where it has converged, and it then leaves the iteration: the same steps, start vector (one
    draw from a generator seeded with ``seed``, as :func:`largest_eigenpair`'s) and stopping rule as a run of its
    own, so the same accuracy (Lanczos 1950; Golub & Van Loan, *Matrix Computations*, 4th ed., §10.1; Parlett, *The
    Symmetric Eigenvalue Problem*, ch. 4). A matrix whose residual is still above ``rtol`` · θ after ``max_steps``
    steps takes the dense solver. For m <= ``min_size``: ``torch.linalg.eigh`` of the batch.

    Raises as :func:`largest_eigenpair` (ValueError when ``c`` is not a stack of square matrices or one of them is not
    symmetric beyond rounding; TypeError when ``lockstep`` is not True, False or None).
    """
    c, exponents = _square_matrices(c, True, rtol)
    max_steps, min_size = _whole(max_steps, "max_steps", 1), _whole(min_size, "min_size", 0)
    seed, vector, lockstep = _torch_seed(seed), _truth(vector, "vector"), _truth(lockstep, "lockstep", none=True)
    values, vectors = _largest_eigenpairs(c, rtol=rtol, max_steps=max_steps, seed=seed, min_size=min_size,
                                          vector=vector, lockstep=lockstep)
    return _unscaled_values(values, exponents, c.shape[1], True), vectors


def _largest_eigenpairs(c: torch.Tensor, *, rtol: float = 1e-10, max_steps: int = 240, seed: int = 0,
                        min_size: int = LANCZOS_MIN_SIZE, vector: bool = True,
                        lockstep: bool | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
    """:func:`largest_eigenpairs` without the checks of its arguments (the statistics call it per batch)."""
    if c.ndim != 3 or c.shape[1] != c.shape[2]:
        raise ValueError(f"c must be a stack of square matrices (n, m, m), got shape {tuple(c.shape)}")
    n, m = c.shape[0], c.shape[1]
    if not (c.device.type != "cpu" if lockstep is None else lockstep):
        pairs = [_largest_eigenpair(ci, rtol=rtol, max_steps=max_steps, seed=seed, min_size=min_size, vector=vector)
                 for ci in c]
        values = torch.stack([v for v, _ in pairs]) if pairs else c.new_zeros(0)
        return values, (torch.stack([u for _, u in pairs]) if pairs else c.new_zeros(0, m)) if vector else None
    if m <= min_size or n == 0:
        if not vector:
            return torch.linalg.eigvalsh(c)[:, -1], None
        values, vectors = torch.linalg.eigh(c)
        return values[:, -1], vectors[:, :, -1]
    steps = min(max_steps, m)
    gen = torch.Generator(device=c.device).manual_seed(seed)
    q = torch.randn(m, generator=gen, dtype=c.dtype, device=c.device)
    basis = torch.zeros(n, steps + 1, m, dtype=c.dtype, device=c.device)
    basis[:, 0] = q / torch.linalg.vector_norm(q)
    betas = torch.zeros(n, steps, dtype=c.dtype, device=c.device)
    read_alphas = read_betas = torch.empty((n, 0), dtype=c.dtype)  # on the host: α and β read so far
    tiny = torch.finfo(c.dtype).tiny
    out_values = torch.empty(n, dtype=c.dtype, device=c.device)
    out_vectors = torch.empty((n, m), dtype=c.dtype, device=c.device) if vector else None
    active = list(range(n))  # the matrices still iterating, in the order of the state's rows
    k = 0
    while k < steps and active:
        start, new = k, []
        for _ in range(min(_LANCZOS_CHUNK, steps - k)):
            # One step for every matrix still iterating, in 8 kernels: the product (a, m, 1), the projections on the
            # basis so far (the k-th of which is α_k = q_kᵀ C q_k, kept where it is until the check) taken off twice
            # (full reorthogonalisation, "twice is enough"), each subtraction fused into its product, then β_k and
            # the next basis vector.
            w = torch.bmm(c, basis[:, k, :, None])
            done = basis[:, : k + 1]
            h = torch.bmm(done, w)
            new.append(h[:, k, 0])
            w = torch.baddbmm(w, done.mT, h, alpha=-1.0)
            w = torch.baddbmm(w, done.mT, torch.bmm(done, w), alpha=-1.0)[..., 0]
            torch.linalg.vector_norm(w, dim=1, out=betas[:, k])
            torch.div(w, betas[:, k, None].clamp_min(tiny), out=basis[:, k + 1])
            k += 1
        # Each k x k tridiagonal's eigenpairs (a few kilobytes each): where each iteration stops is decided on the
        # host, from the chunk's α and β read in one copy (the tridiagonal matrices formed there).
        read = torch.stack(new + [betas[:, j] for j in range(start, k)], 1).cpu()
        with on_host():
            read_alphas = torch.cat([read_alphas, read[:, : k - start]], 1)
            read_betas = torch.cat([read_betas, read[:, k - start :]], 1)
            a, b = read_alphas, read_betas
            t = torch.diag_embed(a) + torch.diag_embed(b[:, : k - 1], 1) + torch.diag_embed(b[:, : k - 1], -1)
            theta, s_ = torch.linalg.eigh(t)
            top = theta[:, -1]
            residual = b[:, k - 1] * s_[:, -1, -1].abs()
            converged = ((residual <= rtol * top.abs()) | (k == m)).tolist()  # host values: no wait
            finished = [i for i, done in enumerate(converged) if done]
            keep = [i for i, done in enumerate(converged) if not done]
            values, ritz = top[finished], s_[finished, :, -1]  # (f,), (f, k)
            if finished and keep:
                read_alphas, read_betas = read_alphas[keep], read_betas[keep]
        if not finished:
            continue
        where = torch.tensor([active[i] for i in finished], device=c.device)
        out_values[where] = values.to(device=c.device, dtype=c.dtype)
        if vector:
            ritz = ritz.to(device=c.device, dtype=c.dtype)
            rows = torch.tensor(finished, device=c.device)
            out_vectors[where] = torch.bmm(basis[rows, :k].mT, ritz[..., None])[..., 0]
        active = [active[i] for i in keep]
        if active:
            rows = torch.tensor(keep, device=c.device)
            c, basis, betas = c[rows], basis[rows], betas[rows]
    if active:  # not converged within max_steps: the dense solver answers
        rest = torch.tensor(active, device=c.device)
        if vector:
            values, vectors = torch.linalg.eigh(c)
            out_values[rest], out_vectors[rest] = values[:, -1], vectors[:, :, -1]
        else:
            out_values[rest] = torch.linalg.eigvalsh(c)[:, -1]
    return out_values, out_vectors


def largest_eigenvalue(c: torch.Tensor, **options) -> torch.Tensor:
    """λ_max of a symmetric positive semi-definite matrix ``c`` (m, m), a 0-d tensor on its device, in its dtype:
    the value of :func:`largest_eigenpair` (same options and accuracy; ``eigvalsh`` where that takes ``eigh``).
    A NumPy array is read as a tensor on the CPU; bfloat16 and float16 through float32, integers through float64.

    Raises TypeError when ``c`` is neither a tensor nor a NumPy array (a ``numpy.matrix`` included), or is complex,
    or ``rtol`` is not a real number, or an option is none of rtol, max_steps, seed and min_size (named, with the
    one meant: ``tol`` → ``rtol``); ValueError when it is not a square matrix (or is 0 × 0), holds NaN or infinite
    values, ``max_steps`` is below 1, or it is
    not symmetric beyond rounding (an entry differs from its transpose's by more than 1e-4 of the largest |entry|:
    not a covariance or Gram matrix), or λ_max is beyond the dtype's range. Scaled by a power of two as
    :func:`largest_eigenpair` is, so it holds at any finite magnitude."""
    unknown = sorted(set(options) - set(_EIGEN_OPTIONS))
    if unknown:
        import difflib

        close = difflib.get_close_matches(unknown[0], _EIGEN_OPTIONS, n=1)
        raise TypeError(f"largest_eigenvalue: no option {unknown[0]!r}" + (f" (did you mean {close[0]!r}?)" if close
                        else "") + f"; its options are {', '.join(_EIGEN_OPTIONS)}")
    return largest_eigenpair(c, vector=False, **options)[0]


#: The options :func:`largest_eigenvalue` passes on to :func:`largest_eigenpair`.
_EIGEN_OPTIONS = ("rtol", "max_steps", "seed", "min_size")


#: Rows of the float32 distance block of :func:`two_nearest_neighbours` (bounds its memory: rows × n floats).
_NN_BLOCK = 1024
#: Candidates kept per row from the float32 block before the exact float64 re-check.
_NN_CANDIDATES = 4
#: Candidates taken, from the same block, for the rows whose 4 candidates cannot be shown to hold the two nearest.
_NN_WIDE = 32
#: The float32 ranking product runs on a width padded with zero columns to a multiple of this: on 2 CPU cores a
#: (1,024 × 767) · (767 × 16,384) product took 9% longer than one of width 768 (massive-column split of 768-d points).
_NN_ALIGN = 8
_F64_UNIT_ROUNDOFF = 2.0**-53
#: A centred column is "massive" when its largest |value|² exceeds this many times the median over columns of the
#: largest |value|²; at most ``_MASSIVE_MAX`` columns (the largest) are split off.
_MASSIVE_RATIO = 256.0
_MASSIVE_MAX = 8


def _f32_unit_roundoff() -> float:
    """Unit roundoff of a float32 matrix product under ``torch.get_float32_matmul_precision()``: 2⁻²⁴ at
    "highest" (the default), 2⁻¹¹ at "high" (TF32 may be used), 2⁻⁸ at "medium" (bfloat16 may be used)."""
    return {"highest": 2.0**-24, "high": 2.0**-11}.get(torch.get_float32_matmul_precision(), 2.0**-8)


def _as_points(x, name: str = "x") -> torch.Tensor:
    """``x`` (a NumPy array or a torch tensor on any device) as a finite tensor of shape (n, d) on the same device:
    float32 when ``x`` is float32 or narrower (bfloat16, float16: exact in float32), else float64 (a NumPy array
    goes to the CPU without a copy when it already has that dtype). Every float32 value is exact in float64, so the
    nearest-neighbour search below is the float64 one either way, without a float64 copy of the points."""
    x = _readable(x, name)
    if isinstance(x, torch.Tensor):
        t = x.detach()
        if t.ndim != 2:
            raise ValueError(f"{name} must be a 2-D tensor of shape (n, d), got shape {tuple(t.shape)}")
        narrow = t.is_floating_point() and torch.finfo(t.dtype).bits <= 32
        t = t.to(torch.float32 if narrow else torch.float64)
        if not bool(torch.isfinite(t).all()):
            raise ValueError(f"{name} contains NaN or infinite values")
    else:
        a = np.asarray(x)
        if a.dtype in (np.float32, np.float16):
            a = np.ascontiguousarray(a, dtype=np.float32)
            if a.ndim != 2:
                raise ValueError(f"{name} must be a 2-D array of shape (n, d), got shape {a.shape}")
            if not np.isfinite(a).all():
                raise ValueError(f"{name} contains NaN or infinite values")
            t = _from_numpy(a)
        else:
            t = _from_numpy(np.ascontiguousarray(_as_matrix(a, name)))
    if t.shape[1] == 0:  # every row would be the same (empty) point
        raise ValueError(f"{name} must have at least 1 column, got shape {tuple(t.shape)}")
    return t


def unique_rows(x):
    """The distinct rows of ``x`` (shape (n, d)), each once, in order of first appearance.

    Rows are compared by value: ``-0.0`` equals ``0.0`` (a point computed as x·0 with x < 0 is the same point), NaN
    rows equal themselves (callers reject NaN first). A NumPy array gives a NumPy array: rows are compared by the
    bytes of their values with ``-0.0`` made ``0.0`` (hashing, not sorting), so this costs O(n·d). A torch tensor
    gives a tensor on its device (``torch.unique`` over rows, O(n·log n·d)). The input itself is returned when every
    row is distinct.

    Raises
    ------
    ValueError if ``x`` is not 2-D (a 1-D array is no set of rows), and as every array argument of this module
    (complex, masked, sparse or meta-device input).
    """
    x = _readable(x, "x")
    if not isinstance(x, torch.Tensor):
        x = np.asarray(x)
    if x.ndim != 2:
        raise ValueError(f"x must be a 2-D array of shape (n, d), got shape {tuple(x.shape)}")
    return _unique_rows(x)


def _unique_rows(x):
    """:func:`unique_rows` without the checks of its argument (a 2-D array or tensor)."""
    if isinstance(x, torch.Tensor):
        if x.ndim != 2 or x.shape[0] < 2:
            return x
        distinct, inverse = torch.unique(x, dim=0, return_inverse=True)
        if distinct.shape[0] == x.shape[0]:
            return x
        index = torch.arange(x.shape[0], device=x.device)
        first = torch.full((distinct.shape[0],), x.shape[0], dtype=index.dtype, device=x.device)
        first.scatter_reduce_(0, inverse, index, reduce="amin")
        return x[torch.sort(first).values]
    x = np.ascontiguousarray(x)
    keys = x + 0.0 if np.issubdtype(x.dtype, np.floating) else x  # -0.0 + 0.0 is 0.0: one point, one key
    first = dict.fromkeys(row.tobytes() for row in keys)
    if len(first) == x.shape[0]:
        return x
    seen: set[bytes] = set()
    keep = [i for i, row in enumerate(keys) if not ((b := row.tobytes()) in seen or seen.add(b))]
    return x[keep]


def _massive_columns(peak: torch.Tensor) -> torch.Tensor:
    """Indices (on the device) of the few columns whose largest |value| ``peak`` (d,) (about the centre) dwarfs the
    others' (see ``_MASSIVE_RATIO``): decoder models' massive activations. Only a speed choice; exactness never
    depends on it."""
    peak = peak**2
    massive = torch.nonzero(peak > _MASSIVE_RATIO * peak.median()).flatten()
    if massive.numel() > _MASSIVE_MAX:
        massive = massive[torch.topk(peak[massive], _MASSIVE_MAX).indices]
    return massive


def two_nearest_neighbours(x) -> tuple[np.ndarray, np.ndarray]:
    """Exact Euclidean distances of every point to its first and second nearest other point.

    Runs with torch on the device of ``x`` (a NumPy array runs on the CPU), in ``torch.get_num_threads()``
    threads; only the two (n,) results come to the host.

    Method. The points are centred (float64). The few *massive* columns M (a column whose largest |value|² is
    over 256 times the median over columns, at most 8: the massive activations of decoder models, 10³-10⁴ times the
    other features) are split from the small ones S, so ‖a − b‖² = D_S + D_M. Blocks of 1024 rows are ranked by
    v = ‖b_S‖² − 2·a_S·b_S (one float32 matrix product on the S columns) + Σ_{j∈M} fl32(a_j − b_j)² (the
    difference taken in float64, rounded once); 4 candidates are kept per row, their distances recomputed exactly
    in float64 and the two smallest taken.

    Error bound (why the answer is exact). With u the float32 unit roundoff of the matrix product (2⁻²⁴;
    larger when TF32/bfloat16 products are allowed, see :func:`_f32_unit_roundoff`), d_S = |S|, m = |M| and
    γ = c·u / (1 − c·u), c = d_S + m + 6, for every pair the computed v obeys
    ‖a − b‖² ≥ (‖a_S‖² + v − ε(a)) / (1 + (m + 4)·1.01·u), ε(a) = γ·(‖a_S‖ + max_b ‖b_S‖)².
    ε collects the rounding of the points to float32 (≤ 3u‖b‖² + 2u‖a‖‖b‖), the length-d_S dot product in any
    summation order (γ_d‖a‖‖b‖, doubled), the rounding of ‖b‖² and of the sum, and the m additions of the massive
    terms (each ≤ u·|running sum|, bounded by (‖a_S‖ + ‖b_S‖)² plus D_M); the denominator covers the relative error
    of the massive terms (≤ 3.01u·D_M ≤ 3.01u·‖a − b‖²) and of the additions. Every excluded point has v at least
    the 4th candidate's, so a row is exact when that lower bound at the 4th candidate's v exceeds the exact second
    distance². Because the massive columns leave ε, the bound scales with the small features' norms only: on
    decoder-like points it stays as tight as on Gaussian ones (without the split, ε grows with the massive
    norm² and nearly every row failed the test). Rows that fail are ranked again in float64 (the same bound with
    u = 2⁻⁵³, all columns in the product); the few that still fail get every distance in float64. The result is
    therefore the float64 brute-force one, at float32 matrix-product speed. The points are centred at a centre
    their dtype holds exactly (float32 points stay float32: x − c is exact in float64, and rounding it once to
    float32 is the rounding the bound counts), and the exact float64 rows are formed block by block or for the
    candidates only, never as a float64 copy of all the points.

    Massive columns that separate the points. Where a massive column's sorted values have gaps wider than the
    small features' spread (4·√S, S the small features' total variance: massive activations on some tokens
    only), the points fall into groups on either side of the gaps, and each group's two nearest neighbours are
    found within the group (recursively, by this method). A point is exact when its second distance² within its
    group is below the squared distance, along that column, to the nearest value outside its group's interval:
    every point of another group is at least that far. Points that fail (and groups of fewer than 3 points) are
    searched against every point in float64, as above. On points whose massive activation is on half the rows,
    the product is two of a quarter the size each.

    Parameters
    ----------
    x : NumPy array or torch tensor (any device, any float dtype) of shape (n, d), n >= 3, rows distinct, finite

    Returns
    -------
    (r1, r2) : two NumPy arrays of shape (n,), float64, r1 <= r2, in the units of ``x``

    Raises
    ------
    ValueError if fewer than 3 points, not 2-D, or not finite.
    """
    points = _as_points(x)
    if points.shape[0] < 3:
        raise ValueError(f"two nearest neighbours need at least 3 points, got {points.shape[0]}")
    scaled, exponent = _scaled_to_unit(points)
    r = np.ldexp(_two_nearest_squared(scaled).sqrt().cpu().numpy(), exponent)  # back to the units of x, exactly
    return np.ascontiguousarray(r[:, 0]), np.ascontiguousarray(r[:, 1])


class _Centred:
    """Points (n, d), float32 or float64, about a centre ``c`` their dtype holds exactly: their exact float64
    centred rows on demand (``rows``), or all of them once (``all``) for the rare float64 re-checks."""

    def __init__(self, points: torch.Tensor):
        self.points = points
        n = points.shape[0]
        self.centre = (points.sum(0, dtype=torch.float64) / n).to(points.dtype).to(torch.float64)
        self._all: torch.Tensor | None = None

    def rows(self, index) -> torch.Tensor:
        return self.points[index].to(torch.float64) - self.centre

    def columns(self, index) -> torch.Tensor:
        return self.points[:, index].to(torch.float64) - self.centre[index]

    def all(self) -> torch.Tensor:
        if self._all is None:
            self._all = self.points.to(torch.float64) - self.centre
        return self._all

    def peak(self) -> torch.Tensor:
        """Per column, max |x − c| (d,), float64, from the column's extremes (no temporary of the points' size)."""
        return torch.maximum(self.points.amax(0).double() - self.centre, self.centre - self.points.amin(0).double())


def _two_nearest_squared(points: torch.Tensor) -> torch.Tensor:
    """Exact squared distances (n, 2), float64, on the device of ``points`` (float32 or float64, n >= 3, distinct
    rows)."""
    n, d = points.shape
    pts = _Centred(points)
    massive = _massive_columns(pts.peak())
    m = massive.numel()
    if m:
        small_mask = torch.ones(d, dtype=torch.bool, device=points.device)
        small_mask[massive] = False
        groups = _separated_groups(pts, massive, small_mask)
        if groups is not None:
            return _two_nearest_in_groups(pts, groups)
        massive64 = pts.columns(massive).T.contiguous()  # (m, n)
        massive32 = massive64.float()
        peak = massive64.abs()
        reach = ((peak + peak.amax(1, keepdim=True)) ** 2).sum(0).sqrt()  # ‖P‖, P_j = |a_j| + max_b |b_j|
    else:
        small_mask, massive32 = None, None
        reach = torch.zeros(n, dtype=torch.float64, device=points.device)
    d_small = d - m
    # float32 S columns, padded: zero columns add exact zeros; an aligned width keeps the GEMM at its pace
    small32 = torch.zeros((n, d_small + (-d_small % _NN_ALIGN)), dtype=torch.float32, device=points.device)
    sq = torch.empty(n, dtype=torch.float32, device=points.device)  # ‖b_S‖² of the float32 points
    sq_exact = torch.empty(n, dtype=torch.float64, device=points.device)  # ‖a_S‖², float64
    for s in range(0, n, _NN_BLOCK):  # one pass, a block of exact float64 rows at a time
        block = pts.rows(slice(s, s + _NN_BLOCK))
        if small_mask is not None:
            block = block[:, small_mask]
        rounded = block.float()
        small32[s : s + _NN_BLOCK, :d_small] = rounded
        sq[s : s + _NN_BLOCK] = (rounded.double() ** 2).sum(1).float()
        sq_exact[s : s + _NN_BLOCK] = (block**2).sum(1)
    norm = sq_exact.sqrt()
    u = _f32_unit_roundoff()
    d_s = small32.shape[1]  # the padded width: the bound below counts its additions, zeros included
    gamma = d_s * u / (1 - d_s * u) if d_s * u < 0.5 else math.inf
    q = (norm + norm.max()) ** 2
    # The floor of every excluded point's squared distance is L = ‖a_S‖² + v − base (v its ranking value); the
    # row is exact when L > alpha·r₂² + beta·r₂ (see the error bound in two_nearest_neighbours).
    base = (0.505 * gamma + (m + 4) * 1.01 * u) * q + 3 * u**2 * reach**2
    alpha = 1 + (3.3 + 1.1 * m) * u
    beta = 2.1 * u * reach
    k = min(_NN_CANDIDATES, n - 1)
    wide = min(_NN_WIDE, n - 1)
    r = torch.empty((n, 2), dtype=torch.float64, device=points.device)
    unsure: list[torch.Tensor] = []
    step = None
    for s in range(0, n, _NN_BLOCK):
        e = min(s + _NN_BLOCK, n)
        # ‖b_S‖² − 2a_S·b_S ranks the row like the distance (‖a‖² is the same along the row): one BLAS call.
        part = torch.addmm(sq.unsqueeze(0), small32[s:e], small32.T, beta=1.0, alpha=-2.0)
        if massive32 is not None:
            if step is None or step.shape != part.shape:
                step = torch.empty_like(part)
            for j in range(m):
                torch.sub(massive32[j, s:e].unsqueeze(1), massive32[j].unsqueeze(0), out=step)
                part.addcmul_(step, step)
        part.diagonal(s).fill_(math.inf)
        rows = torch.arange(s, e, device=points.device)
        r[s:e], unsure_here = _candidates(part, rows, pts, k, sq_exact, base, alpha, beta)
        if unsure_here.numel() and wide > k:  # a wider candidate list from the same block, for those rows only
            local = unsure_here - s
            r[unsure_here], unsure_here = _candidates(part[local], unsure_here, pts, wide, sq_exact, base,
                                                      alpha, beta)
        if k < n - 1:
            unsure.append(unsure_here)
    if unsure:
        _settle(torch.cat(unsure), pts, wide, r)
    return r


def _settle(rows: torch.Tensor, pts: _Centred, k: int, r: torch.Tensor) -> None:
    """The rows whose candidates could not be shown to hold their two nearest neighbours: ranked again in float64
    against every point (:func:`_recheck`), and the few that still fail get every distance; written into ``r``."""
    if rows.numel() == 0:
        return
    for i in _recheck(rows, pts.all(), k, r).tolist():
        r[i] = _all_distances(pts.all(), i)


#: A massive column splits the points where its sorted values have a gap wider than this many times the small
#: features' spread √S (S their total variance): wide enough that the two nearest neighbours of nearly every
#: point are on its side (a pair of points differs by about √(2S) in the small features).
_SPLIT_GAP = 4.0


def _separated_groups(pts: _Centred, massive: torch.Tensor, small_mask: torch.Tensor) -> list | None:
    """Groups of points that the massive columns separate (see :func:`two_nearest_neighbours`): a list of (index
    tensor, column bounds) or None when no massive column has a gap wider than ``_SPLIT_GAP``·√S. Column bounds:
    per point, the squared distance along the splitting columns to the nearest value outside its group's interval
    (n,), float64 (every point of another group is at least that far)."""
    n = pts.points.shape[0]
    sample = pts.rows(slice(None, None, max(1, n // 1024)))[:, small_mask]  # the small features' spread
    gap_min = _SPLIT_GAP * float((sample**2).sum(1).mean().sqrt())
    labels = torch.zeros(n, dtype=torch.int64, device=pts.points.device)
    floor = torch.full((n,), math.inf, dtype=torch.float64, device=pts.points.device)
    split = False
    for j in massive.tolist():
        values = pts.points[:, j].double()
        order = torch.argsort(values)
        v = values[order]
        cut = torch.nonzero(v[1:] - v[:-1] > gap_min).flatten()  # a cut after sorted position cut[i]
        if cut.numel() == 0:
            continue
        split = True
        interval = torch.zeros(n, dtype=torch.int64, device=v.device)
        interval[cut + 1] = 1
        interval = interval.cumsum(0)  # interval of each sorted position
        starts = torch.cat([torch.zeros(1, dtype=torch.int64, device=v.device), cut + 1])
        ends = torch.cat([cut, torch.tensor([n - 1], device=v.device)])
        below = torch.where(starts > 0, v[(starts - 1).clamp_min(0)], -math.inf)[interval]
        above = torch.where(ends < n - 1, v[(ends + 1).clamp_max(n - 1)], math.inf)[interval]
        near = torch.minimum(v - below, above - v) ** 2  # exact differences of float32 values, squared once
        floor[order] = torch.minimum(floor[order], near)
        lab = torch.empty_like(interval)
        lab[order] = interval
        labels = torch.unique(labels * (cut.numel() + 1) + lab, return_inverse=True)[1]  # kept compact
    if not split:
        return None
    group = labels
    order = torch.argsort(group, stable=True)
    sizes = torch.bincount(group).tolist()
    return [list(torch.split(order, sizes)), floor * (1 - 8 * _F64_UNIT_ROUNDOFF)]


def _two_nearest_in_groups(pts: _Centred, groups: list) -> torch.Tensor:
    """Two nearest neighbours within each separated group, then checked against the bound to the other groups;
    points that fail it are searched against every point (see :func:`two_nearest_neighbours`)."""
    members, floor = groups
    n = pts.points.shape[0]
    r = torch.full((n, 2), math.inf, dtype=torch.float64, device=pts.points.device)
    for index in members:
        if index.numel() >= 3:
            r[index] = _two_nearest_squared(pts.points[index])
    unsure = torch.nonzero(~(r[:, 1] < floor)).flatten()  # within-group second distance not below the bound
    _settle(unsure, pts, min(_NN_WIDE, n - 1), r)
    return r


def _candidates(part, rows, pts: _Centred, k, sq_exact, base, alpha, beta):
    """From a block of ranking values ``part`` (rows × n), the exact two smallest squared distances of ``rows``
    among their ``k`` best candidates, (rows, 2) float64, and the rows whose bound cannot exclude the others."""
    values, idx = torch.topk(part, k, dim=1, largest=False, sorted=True)
    near = pts.rows(idx.flatten()).view(idx.shape[0], k, -1)
    diff = near - pts.rows(rows).unsqueeze(1)
    two = torch.topk(torch.einsum("rkd,rkd->rk", diff, diff), 2, dim=1, largest=False, sorted=True).values
    if k == pts.points.shape[0] - 1:
        return two, rows[:0]
    floor = sq_exact[rows] + values[:, -1].double() - base[rows]
    r2 = two[:, 1]
    return two, rows[floor <= alpha * r2 + beta[rows] * r2.sqrt()]


def _recheck(rows_all: torch.Tensor, centred: torch.Tensor, k: int, r: torch.Tensor) -> torch.Tensor:
    """Two nearest neighbours of ``rows_all`` (indices on the device) from float64 candidates (exact distances
    recomputed), written into ``r``; returns the rows whose float64 bound (that of
    :func:`two_nearest_neighbours` with u = 2⁻⁵³ and no massive split) still cannot separate the candidates."""
    if rows_all.numel() == 0:
        return rows_all
    sq = (centred**2).sum(1)
    norm = sq.sqrt()
    c = centred.shape[1] + 6
    slack = c * _F64_UNIT_ROUNDOFF / (1 - c * _F64_UNIT_ROUNDOFF) * (norm + norm.max()) ** 2
    shrink = 1 + 4.04 * _F64_UNIT_ROUNDOFF
    left = []
    for s in range(0, rows_all.numel(), _NN_BLOCK):
        rows = rows_all[s : s + _NN_BLOCK]
        part = torch.addmm(sq.unsqueeze(0), centred[rows], centred.T, beta=1.0, alpha=-2.0)
        part[torch.arange(len(rows), device=rows.device), rows] = math.inf
        values, idx = torch.topk(part, k, dim=1, largest=False, sorted=True)
        diff = centred[idx] - centred[rows].unsqueeze(1)
        two = torch.topk(torch.einsum("rkd,rkd->rk", diff, diff), 2, dim=1, largest=False, sorted=True).values
        r[rows] = two
        floor = (values[:, -1] + sq[rows] - slack[rows]) / shrink
        left.append(rows[floor <= two[:, 1]])
    return torch.cat(left)


def _all_distances(centred: torch.Tensor, i: int) -> torch.Tensor:
    """The two smallest float64 squared distances from row ``i`` to every other row (the last resort)."""
    dist = ((centred - centred[i]) ** 2).sum(1)
    dist[i] = math.inf
    return torch.topk(dist, 2, largest=False, sorted=True).values


#: The fewest neighbour ratios :func:`twonn_dimension` fits its line through (see its Raises).
TWONN_MIN_RATIOS = 2


def _scaled_to_unit(points: torch.Tensor) -> tuple[torch.Tensor, int]:
    """``points`` times 2^−e, e the exponent that brings their largest |value| into [0.5, 1) (exact: the same
    distance ratios, with no float32 overflow or underflow in the ranking), and e; the points themselves if e = 0."""
    exponent = _exponent(float(points.abs().amax()) if points.numel() else 0.0)
    return _times_power_of_two(points, -exponent), exponent


def twonn_dimension(x, discard_fraction: float = 0.1) -> float:
    """TwoNN intrinsic dimension (Facco et al. 2017, Sci. Rep. 7:12140).

    For every point, μ = r₂ / r₁ (distances to its first and second nearest
    neighbours). With F_emp the empirical CDF of μ, the points
    (log μ, −log(1 − F_emp(μ))) lie on a line through the origin of slope d;
    the largest ``discard_fraction`` of μ are dropped and d is fitted by least
    squares through the origin (Razzhigaev et al. 2024 §2.4, where "1 − F" is a
    typo for −log(1 − F)).

    Duplicate points (r₁ = 0) are removed before the fit: they carry no
    information on the local dimension and would give μ = ∞. The neighbours
    are exact (:func:`two_nearest_neighbours`) and computed on the device of
    ``x``; only the (n,) distances come to the host for the fit.

    Parameters
    ----------
    x : NumPy array or torch tensor (any device) of shape (n, d); needs at least 3 distinct points
    discard_fraction : float in [0, 1), share of the largest μ discarded (floor(n(1 − f)) of the n ratios kept,
        n(1 − f) rounded to 1e-6 first, so that 0.9 of 100 points keeps 10)

    Returns
    -------
    float > 0, the estimated intrinsic dimension (dimensionless)

    The points are first scaled by a power of two that brings their largest |value| into [0.5, 1) (exact in floating
    point, barring subnormals): μ is scale-invariant, and the float32 ranking of the neighbour search would
    otherwise overflow (|x| near 1e20) or underflow (|x| near 1e-30).

    Raises
    ------
    ValueError if fewer than 3 distinct points, non-finite or non-2-D ``x``, no columns, a ``discard_fraction``
    outside [0, 1), or one that keeps fewer than :data:`TWONN_MIN_RATIOS` (2) ratios: one ratio fixes the slope by
    itself, with nothing left to fit (3 distinct points, the fewest taken, give 2). TypeError for a complex ``x`` or
    a ``discard_fraction`` that is not a number.
    """
    discard_fraction = _real(discard_fraction, "discard_fraction", "a number in [0, 1)")
    if not 0 <= discard_fraction < 1:
        raise ValueError(f"discard_fraction must be in [0, 1), got {discard_fraction}")
    if isinstance(x, torch.Tensor):
        points = _unique_rows(_as_points(x))
    else:  # hashing the rows' bytes (O(n·d)) is cheaper than torch.unique's sort
        points = _as_points(x)
        rows = points.numpy()
        distinct = _unique_rows(rows)
        if distinct is not rows:
            points = _from_numpy(np.ascontiguousarray(distinct))
    n = points.shape[0]
    if n < 3:
        raise ValueError(f"TwoNN needs at least 3 distinct points, got {n}")
    # n(1 − f) in float64 falls just below a whole number where it is one (1 − 0.9 = 0.09999999999999998: 100
    # points kept 9 ratios, not 10): rounded to 1e-6 first, a fraction is read as the decimal it was written as
    keep = int(math.floor(round(n * (1 - discard_fraction), 6)))
    keep = min(keep, n - 1)  # F_emp = 1 at the last point gives log(0)
    if keep < TWONN_MIN_RATIOS:
        raise ValueError(f"discard_fraction {discard_fraction} keeps {keep} of {n} neighbour ratios; TwoNN's fit needs "
                         f"at least {TWONN_MIN_RATIOS}")
    r = _two_nearest_squared(_scaled_to_unit(points)[0]).sqrt().cpu().numpy()
    mu = np.sort(r[:, 1] / r[:, 0])
    f_emp = np.arange(1, n + 1) / n
    log_mu = np.log(mu[:keep])
    y = -np.log1p(-f_emp[:keep])
    denom = float(log_mu @ log_mu)
    if denom <= 0:
        raise ValueError("TwoNN: all neighbour ratios are 1 (degenerate point set)")
    return float(log_mu @ y / denom)


def isotropic_cos_quantile(d: int, q: float = 0.95) -> float:
    """Quantile of the cosine of two independent isotropic Gaussian vectors in ℝ^d.

    (cos + 1) / 2 ~ Beta((d−1)/2, (d−1)/2) (Godey et al. 2024 App. B,
    Fig. 17–18). q95(d) = isotropic_cos_quantile(d, 0.95) is the "significant
    anisotropy" yardstick of the claims catalogue.

    From d = 2^32 on, the quantile is read from cos² ~ Beta(1/2, (d−1)/2) (the same distribution, see
    :data:`_WIDE_D`), which keeps its relative precision at any d: 1.6449/√d at d = 10^30.

    Raises TypeError if d is not a whole number (2.5, NaN) or q not a number; ValueError if d < 2, d is beyond
    float64's range (2^1023 or more: Beta's parameters are floats), or q outside (0, 1).
    """
    d = _whole(d, "d", 2)
    if d >= 2**1023:
        raise ValueError(f"d: about 10^{len(str(d)) - 1}; give a whole number below 2^1023 (8.99e+307), the range of "
                         "Beta's float64 parameters")
    q = _real(q, "q", "a quantile in (0, 1)")
    if not 0 < q < 1:
        raise ValueError(f"quantile must be in (0, 1), got {q}")
    from scipy.special import betaincinv  # what scipy.stats.beta.ppf computes, without importing scipy.stats

    a = (d - 1) / 2
    if d >= _WIDE_D:  # 2·I⁻¹ − 1 cancels: cos² ~ Beta(1/2, a) instead (P(|cos| <= t) = I_t²(1/2, a), cos symmetric)
        t = math.sqrt(float(betaincinv(0.5, a, abs(2 * q - 1))))  # 2q − 1 exact for q in [0.25, 1]
        return t if q >= 0.5 else -t
    x = float(betaincinv(a, a, q))
    if math.isnan(x) and q < 0.5:  # scipy's inverse fails far in the tail (q <= ~1e-120 at d of 7 to 13): there
        # I_x(a, a) = x^a / (a·B(a, a)) · (1 + O(x)), so x = (q·a·B(a, a))^(1/a) to rounding, taken in logs
        from scipy.special import betaln

        x = math.exp((math.log(q) + math.log(a) + float(betaln(a, a))) / a)
    return float(2 * x - 1)


#: From this dimension on, :func:`isotropic_cos_quantile` takes the quantile of cos² ~ Beta(1/2, (d − 1)/2), which
#: keeps its relative precision where 2·I⁻¹(a, a, q) − 1 loses it (the cosines are ~1/√d against an offset of 1:
#: 2e-5 relative at d = 10^12, every digit at 10^30); below it (every width a model has) the Beta(a, a) form is kept.
_WIDE_D = 2**32


def isotropic_cos_std(d: int) -> float:
    """Standard deviation of that cosine: exactly 1/√d (Godey et al. 2024 App. B).

    From Var of 2·Beta(a, a) − 1 with a = (d−1)/2: 4·a²/((2a)²(2a+1)) = 1/d. A d of 2^300 or more (the product
    would overflow) gives 1/√d as 2^−k/√(d / 2^2k), d / 2^2k a 62-bit whole number: exact to rounding for any
    whole d (0.0 beyond about 10^647, below the smallest float).
    Raises TypeError if d is not a whole number, ValueError if d < 2.
    """
    d = _whole(d, "d", 2)
    if d >= 2**300:
        k = (d.bit_length() - 62) // 2
        return math.ldexp(1.0 / math.sqrt(d >> (2 * k)), -k)
    a = (d - 1) / 2
    return float(2 * math.sqrt(a * a / ((a + a) * (a + a) * (a + a + 1))))  # Beta(a, a)'s variance, as scipy's


#: Largest number of points whose n! orderings are all enumerated for an exact p-value (10! = 3,628,800, held as
#: int8, 36 MB); above it, a Monte Carlo permutation test over seeded random orderings.
EXACT_MAX_N = 10
#: Random orderings of a Monte Carlo permutation test's first stage, and of each bootstrap resample's p-value above
#: :data:`EXACT_MAX_N` points (:func:`correlation_tests`): p-values resolve to 1 / (N_PERMUTATIONS + 1) = 1e-4.
N_PERMUTATIONS = 9_999
#: The alternatives of a correlation test, as :func:`scipy.stats.permutation_test` names them.
ALTERNATIVES = ("two-sided", "greater", "less")
#: Absolute tolerance when a permuted coefficient is compared with the observed one (coefficients lie in [-1, 1];
#: equal orderings must count as equal despite rounding).
_TIE_TOL = 1e-12
#: A Monte Carlo p-value is reported within this relative error of the exact one (at p >= :data:`MC_P_FLOOR`), at
#: :data:`MC_Z` binomial standard errors: the orderings of the second stage are chosen for it (:func:`mc_orderings_for`).
MC_RELATIVE_ERROR = 0.10
#: The smallest p-value the relative-error guarantee is sized for (smaller p-values are resolved to at least this).
MC_P_FLOOR = 1e-3
#: Standard errors the relative error is held to (4: a p-value misses the 10% band with probability < 1e-4).
MC_Z = 4.0
#: The orderings of one Monte Carlo ordering block (memory: block x n indices).
_BLOCK = 1 << 16


@dataclass(frozen=True)
class Correlation:
    """A correlation coefficient with its permutation p-value (exact or Monte Carlo) and its asymptotic one.

    ``method`` "spearman" or "pearson"; ``coefficient`` in [-1, 1] (NaN, and ``p_value`` NaN, for a constant series,
    which has no order);
    ``p_value`` the permutation p-value under ``alternative`` ("two-sided", "greater": positive correlation,
    "less": negative); ``n`` the number of points; ``p_method`` how the p-value was obtained ("exact: all n!
    orderings" or "Monte Carlo: R seeded orderings, seed s"); ``n_permutations`` the orderings it counted;
    ``p_value_asymptotic`` the large-sample p-value of the same test (:func:`scipy.stats.spearmanr` /
    :func:`scipy.stats.pearsonr`: Student's t approximation), reported beside and never decided on; ``seed`` the
    seed of the Monte Carlo orderings (None when exact).
    """

    method: str
    coefficient: float
    p_value: float
    n: int
    alternative: str = "two-sided"
    p_method: str = ""
    n_permutations: int = 0
    p_value_asymptotic: float | None = None
    seed: int | None = None

    def __post_init__(self) -> None:
        """Raises ValueError naming the field for a value no correlation test gives: an unknown ``method`` or
        ``alternative``, a ``coefficient`` outside [-1, 1], a p-value outside [0, 1] (NaN in both together, and only
        so: a constant series), a negative or non-integer ``n`` or ``n_permutations``."""
        if self.method not in ("spearman", "pearson"):
            raise ValueError(f"method: {self.method!r}; a correlation is 'spearman' or 'pearson'")
        if self.alternative not in ("two-sided", "greater", "less"):
            raise ValueError(f"alternative: {self.alternative!r}; give 'two-sided', 'greater' or 'less'")
        for name, low, high in (("coefficient", -1.0, 1.0), ("p_value", 0.0, 1.0), ("p_value_asymptotic", 0.0, 1.0)):
            value = getattr(self, name)
            if value is None and name == "p_value_asymptotic":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)) or not (
                    math.isnan(value) or low - 1e-9 <= value <= high + 1e-9):
                raise ValueError(f"{name}: {value!r}; a {name.replace('_', ' ')} lies in [{low:g}, {high:g}] (NaN "
                                 "for a constant series)")
        if math.isnan(self.coefficient) != math.isnan(self.p_value):  # a constant series: neither is measured
            raise ValueError(f"coefficient {self.coefficient!r} and p_value {self.p_value!r}: NaN together or "
                             "neither (NaN for a constant series, which has no order)")
        for name in ("n", "n_permutations"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
                raise ValueError(f"{name}: {value!r}; give a whole number >= 0")

    def as_dict(self, prefix: str = "") -> dict:
        """The numbers a result reports (coefficient, p-value, asymptotic p-value, alternative, how the p-value
        was obtained), keys prefixed by ``prefix``, a str ('' for none). Raises TypeError for a ``prefix`` that is
        not a str (None included: it would be spelt into every key)."""
        if not isinstance(prefix, str):
            raise TypeError(f"prefix: {prefix!r} ({type(prefix).__name__}); give a str ('' for none)")
        return {f"{prefix}{k}": v for k, v in (
            ("coefficient", self.coefficient), ("p_value", self.p_value),
            ("p_value_asymptotic", self.p_value_asymptotic), ("alternative", self.alternative),
            ("p_method", self.p_method))}


def derive_seed(base: int, *parts: object) -> int:
    """A seed of its own for one test, from the run's ``base`` seed and the test's identity ``parts`` (e.g. claim id,
    model id, statistic): a stable 63-bit integer (SHA-256 of their text), so that tests of the same size draw
    independent null samples and a rerun draws the same ones. Each part is a str, int, float, bool, bytes or None
    (numpy's integers and floats too), or a tuple or list of these, whose text is the same in every process; two
    different lists of parts never give one text (:func:`_part_text`: a str is hashed as it is, any other part as a
    tagged ``repr``; a str holding the separator \\x1f is refused with ValueError). Raises TypeError when ``base``
    is not an integer (a bool, 1.5 or "1" would be read as another seed, or as the same one as 1), or naming the
    part (``parts[i]``) of another kind: a set's text follows the process's hash seed and an object's default text
    its address, so either would give another seed in each process."""
    import hashlib

    if isinstance(base, (bool, np.bool_)) or not isinstance(base, (int, np.integer)):
        raise TypeError(f"base: {base!r} ({type(base).__name__}); give an integer seed")
    texts = [_part_text(part, f"parts[{i}]") for i, part in enumerate(parts)]
    text = _SEED_SEPARATOR.join([str(int(base)), *texts])
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big") >> 1


#: What joins :func:`derive_seed`'s parts, and what begins the text of a part that is no str: no str part holds
#: either (at its start), so that no two lists of parts give one text.
_SEED_SEPARATOR, _SEED_TAG = "\x1f", "\x1e"


def _part_text(part: object, where: str) -> str:
    """The text :func:`derive_seed` hashes for one part: a str as it is (so every seed the suite draws from claim
    and model ids stays what it was); any other part :func:`_stable_part` takes as ``\x1e`` and the ``repr`` of its
    plain Python value (numpy scalars as Python's), which tells ``None`` from ``'None'``, ``1`` from ``'1'`` and a
    tuple from its text. Raises ValueError naming ``where`` for a str holding ``\x1f`` or starting with ``\x1e``
    (it would read as several parts, or as a part of another kind), TypeError as :func:`_stable_part`."""
    _stable_part(part, where)
    if isinstance(part, str):
        if _SEED_SEPARATOR in part or part.startswith(_SEED_TAG):
            raise ValueError(f"derive_seed: {where}: {part!r:.60} holds the control character \\x1f (or starts "
                             "with \\x1e), which derive_seed uses to tell parts apart; give a text without it")
        return part

    def plain(value):
        if isinstance(value, (tuple, list)):
            return type(value)(plain(v) for v in value)
        return value.item() if isinstance(value, np.generic) else value

    return _SEED_TAG + repr(plain(part))


_STABLE_PARTS = (str, int, float, bytes, type(None), np.integer, np.floating, np.bool_)  # bool is an int


def _stable_part(part: object, where: str) -> None:
    """Refuse (TypeError naming ``where``) a part of :func:`derive_seed` whose text may differ between processes:
    anything but :data:`_STABLE_PARTS` and tuples or lists of them."""
    if isinstance(part, (tuple, list)):
        for j, item in enumerate(part):
            _stable_part(item, f"{where}[{j}]")
    elif not isinstance(part, _STABLE_PARTS):
        raise TypeError(f"derive_seed: {where}: {type(part).__name__} {str(part)!r:.60} has a text that may differ "
                        "between processes (a set's order, an object's address); give a str, int, float, bool, bytes "
                        "or None, or a tuple or list of these")


def _paired_series(x: np.ndarray, y: np.ndarray, too_short: str,
                   names: tuple[str, str] = ("x", "y")) -> tuple[np.ndarray, np.ndarray]:
    """Two equal-length 1-D float64 arrays of at least 3 finite values; ValueError otherwise (``too_short`` formats
    n), and as :func:`_readable` for either argument, named by ``names``."""
    x = _readable(x, names[0])
    y = _readable(y, names[1])
    a, b = _float64(x), _float64(y)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"need two 1-D arrays of equal length, got {a.shape} and {b.shape}")
    if a.shape[0] < 3:
        raise ValueError(too_short.format(n=a.shape[0]))
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("a correlation test needs finite values")
    return a, b


@lru_cache(maxsize=3)
def _all_orderings(n: int) -> np.ndarray:
    """Every ordering of n <= :data:`EXACT_MAX_N` points, shape (n!, n), int8, in lexicographic order (the identity
    first), built by prefixing each first element to the orderings of the rest (no Python loop over orderings)."""
    out = np.zeros((1, 1), dtype=np.int8)
    for m in range(2, n + 1):
        rest = out
        out = np.empty((m * rest.shape[0], m), dtype=np.int8)
        for k in range(m):
            block = out[k * rest.shape[0]:(k + 1) * rest.shape[0]]
            block[:, 0] = k
            block[:, 1:] = rest + (rest >= k)
    return out


def _ordering_blocks(n: int, n_resamples: int, seed: int, exact_max_n: int = EXACT_MAX_N):
    """The orderings a permutation test over n points counts, in blocks of shape (m, n): all n! for n <=
    ``exact_max_n`` (the identity first), else ``n_resamples`` uniform random orderings drawn block by block from
    PCG64(``seed``) (the same seed gives the same orderings)."""
    if n <= min(exact_max_n, EXACT_MAX_N):
        every = _all_orderings(n)
        for start in range(0, every.shape[0], _BLOCK):
            yield every[start:start + _BLOCK]
        return
    rng = np.random.Generator(np.random.PCG64(seed))
    base = np.arange(n, dtype=np.int16)
    for start in range(0, n_resamples, _BLOCK):
        m = min(_BLOCK, n_resamples - start)
        yield rng.permuted(np.broadcast_to(base, (m, n)), axis=1)


def _standardised(v: np.ndarray, method: str) -> tuple[np.ndarray, np.ndarray]:
    """Rows of ``v`` (B, n) as centred unit vectors (ranks first for Spearman, ties averaged), and a (B,) mask of
    the constant rows (left as zeros: they have no order).

    Scale invariant: each row is first scaled by the power of two that brings its largest |value| into [0.5, 1)
    (exact), so no square overflows (series near 1e200) or underflows, and a row is constant when its centred norm is
    at most 1e-12 of its own largest |value| (rounding), at any magnitude: a series of values near 1e-13 that differ
    is not constant (as :func:`scipy.stats.pearsonr` decides it relative to the series)."""
    if method == "spearman":
        from scipy.stats import rankdata

        v = rankdata(v, axis=-1)
    v = np.asarray(v, dtype=np.float64)
    if v.shape[-1]:  # each row's peak into [0.5, 1); an all-zero row stays zero
        v = np.ldexp(v, -np.frexp(np.abs(v).max(axis=-1, keepdims=True))[1])
    c = v - v.mean(axis=-1, keepdims=True)
    norm = np.linalg.norm(c, axis=-1, keepdims=True)
    constant = (norm <= 1e-12 * np.abs(v).max(axis=-1, keepdims=True))[:, 0]
    return np.where(constant[:, None], 0.0, c / np.where(norm == 0, 1.0, norm)), constant


def _p_from_counts(at_least, at_most, r: int, alternative: str, exact: bool):
    """p-values from the counts of null coefficients at least (``at_least``) and at most (``at_most``) the observed
    one among ``r`` orderings, counted as :func:`scipy.stats.permutation_test` counts them: exact, the share of
    orderings at least as extreme; Monte Carlo, (count + 1) / (R + 1) (Phipson & Smyth 2010); two-sided, twice the
    smaller one-sided p-value, at most 1. Counts are scalars or arrays of one shape."""
    adjust = 0 if exact else 1
    greater = (at_least + adjust) / (r + adjust)
    less = (at_most + adjust) / (r + adjust)
    if alternative == "greater":
        return greater
    if alternative == "less":
        return less
    return np.minimum(1.0, 2 * np.minimum(greater, less))


def _p_from_sorted_null(observed: np.ndarray, null: np.ndarray, alternative: str, exact: bool) -> np.ndarray:
    """p-values of ``observed`` (B,) against one sorted null sample ``null`` (R,) (:func:`_p_from_counts`)."""
    return _p_from_counts(null.size - np.searchsorted(null, observed - _TIE_TOL, "left"),
                          np.searchsorted(null, observed + _TIE_TOL, "right"), null.size, alternative, exact)


def _check_test_arguments(a: np.ndarray, b: np.ndarray, method: str, alternative: str) -> None:
    if a.ndim == 1 and b.ndim == 1:
        raise ValueError(f"x, y: shapes {a.shape} and {b.shape} are 1-D; correlation_tests takes batches of series "
                         "(B, n): give x[None] and y[None], or use correlation_test for one pair")
    if a.ndim != 2 or a.shape != b.shape:
        raise ValueError(f"need two (B, n) arrays of equal shape, got {a.shape} and {b.shape}")
    if a.shape[1] < 3:
        raise ValueError(f"a correlation test needs at least 3 points, got {a.shape[1]}")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("a correlation test needs finite values")
    _check_method_and_alternative(method, alternative)


def _check_method_and_alternative(method: str, alternative: str) -> None:
    """Refuse an unknown ``method`` or ``alternative`` of a correlation test, naming only the one that is wrong."""
    if method not in ("spearman", "pearson"):
        raise ValueError(f"method must be 'spearman' or 'pearson', got {method!r}")
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative must be one of {ALTERNATIVES}, got {alternative!r}")


#: The most random orderings a Monte Carlo correlation test draws when asked (``n_resamples``): its p-value then
#: resolves to 1e-7, and the orderings take about 17 s on one core (10**6: 1.7 s).
MAX_RESAMPLES = 10**7


def _check_orderings(n_resamples, seed, exact_max_n) -> tuple[int | None, int, int]:
    """The Monte Carlo settings of a correlation test, checked: ``n_resamples`` None or a whole number from 1 to
    :data:`MAX_RESAMPLES`, ``seed``
    an integer >= 0 (numpy's seeds), ``exact_max_n`` a whole number from 0 to :data:`EXACT_MAX_N` (the orderings
    enumerated are held in memory: 10! of them take 36 MB, 11! would take 440 MB)."""
    if n_resamples is not None:  # (at most MAX_RESAMPLES: 10**6 take seconds, 10**9 hours and gigabytes)
        n_resamples = _whole(n_resamples, "n_resamples", 1, MAX_RESAMPLES)
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed: {seed!r} ({type(seed).__name__}); give an integer >= 0")
    if seed < 0:
        raise ValueError(f"seed: {seed}; give an integer >= 0")
    exact_max_n = _whole(exact_max_n, "exact_max_n", 0, EXACT_MAX_N)
    return n_resamples, int(seed), exact_max_n


def correlation_tests(x: np.ndarray, y: np.ndarray, method: str = "spearman", alternative: str = "two-sided", *,
                      n_resamples: int = N_PERMUTATIONS, seed: int = 0,
                      exact_max_n: int = EXACT_MAX_N) -> tuple[np.ndarray, np.ndarray]:
    """Coefficients and permutation p-values of many paired series at once (e.g. bootstrap resamples of a layer
    profile), every series tested against the same orderings: all n! of them for n <= :data:`EXACT_MAX_N` (exact),
    else ``n_resamples`` random orderings seeded by ``seed`` (Monte Carlo, one stage: :func:`correlation_test` sizes
    the orderings of a single test to its p-value).

    Parameters
    ----------
    x, y : arrays of shape (B, n), n >= 3, finite: B paired series of n points
    method : "spearman" (ranks, ties averaged) or "pearson"
    alternative : "two-sided", "greater" (positive association) or "less" (negative association)
    n_resamples, seed : the Monte Carlo orderings above EXACT_MAX_N points
    exact_max_n : the most points enumerated exactly (at most EXACT_MAX_N, refused above it: the n! orderings are
        held in memory; lower only to check the Monte Carlo test against the enumeration)

    Returns
    -------
    coefficients, p_values : arrays of shape (B,); a series with a constant side gets coefficient and p-value NaN
    (no order, nothing tested), as :func:`correlation_test` does.

    Raises
    ------
    ValueError for other shapes, fewer than 3 points, non-finite values, an unknown method or alternative,
    ``n_resamples`` below 1, a negative ``seed`` or ``exact_max_n`` above EXACT_MAX_N; TypeError where those are not
    whole numbers.
    """
    n_resamples, seed, exact_max_n = _check_orderings(n_resamples, seed, exact_max_n)
    if n_resamples is None:
        raise TypeError("n_resamples: None; give a whole number >= 1")
    x = _readable(x, "x")
    y = _readable(y, "y")
    a, b = _float64(x), _float64(y)
    _check_test_arguments(a, b, method, alternative)
    n = a.shape[1]
    exact = n <= exact_max_n
    xs, x_const = _standardised(a, method)
    ys, y_const = _standardised(b, method)
    coef = np.clip(np.einsum("bn,bn->b", xs, ys), -1.0, 1.0)
    p = np.ones(a.shape[0])
    live = ~(x_const | y_const)
    coef[~live] = np.nan  # a constant side has no order: no correlation, no test
    p[~live] = np.nan
    fast = live & (method == "spearman") & _untied(a) & _untied(b)
    if fast.any():  # untied ranks are an ordering of 0..n-1: the null of rho is the same for every such series
        null = _rank_null(n, n_resamples, seed, exact_max_n)
        p[fast] = _p_from_sorted_null(coef[fast], null, alternative, exact)
    for i in np.flatnonzero(live & ~fast):  # one series at a time, its null block by block: bounded memory
        null = np.concatenate([ys[i][block] @ xs[i]
                               for block in _ordering_blocks(n, n_resamples, seed, exact_max_n)])
        p[i] = _p_from_counts(int((null >= coef[i] - _TIE_TOL).sum()), int((null <= coef[i] + _TIE_TOL).sum()),
                              null.size, alternative, exact)
    return coef, p


def _untied(v: np.ndarray) -> np.ndarray:
    """(B,) mask of the rows of ``v`` (B, n) without two equal values."""
    return (np.diff(np.sort(v, axis=-1), axis=-1) > 0).all(axis=-1)


@lru_cache(maxsize=8)
def _rank_null(n: int, n_resamples: int, seed: int, exact_max_n: int = EXACT_MAX_N) -> np.ndarray:
    """Spearman's rho of the orderings of :func:`_ordering_blocks` against the identity, sorted, shape (R,): the null
    distribution of rho for any two untied series of n points (exact: all n!; else the Monte Carlo sample)."""
    ranks = np.arange(n, dtype=np.float64)
    z = (ranks - ranks.mean()) / np.linalg.norm(ranks - ranks.mean())
    return np.sort(np.concatenate([z[block] @ z for block in _ordering_blocks(n, n_resamples, seed, exact_max_n)]))


def _constant(v: np.ndarray, method: str) -> bool:
    """Whether the series ``v`` (n,) is constant, as :func:`_standardised` decides it (to rounding)."""
    return bool(_standardised(v[None, :], method)[1][0])


def mc_orderings_for(p_value: float, n_first: int = N_PERMUTATIONS) -> int:
    """The orderings a Monte Carlo permutation p-value needs to lie within :data:`MC_RELATIVE_ERROR` of the exact
    one at :data:`MC_Z` binomial standard errors: R = ceil((MC_Z / MC_RELATIVE_ERROR)² (1 − p) / p), with p the
    lower :data:`MC_Z`-standard-error bound of ``p_value`` (a first-stage estimate over ``n_first`` orderings),
    floored at :data:`MC_P_FLOOR` (1,598,400 orderings there) and never fewer than ``n_first``. The relative standard
    error of a Monte Carlo proportion is sqrt((1 − p) / (p R)) (Davison & Hinkley 1997, §4.2.5).

    Raises ValueError for a ``p_value`` outside [0, 1] (NaN included) or ``n_first`` below 1; TypeError for a
    ``p_value`` that is not a number or an ``n_first`` that is not a whole number."""
    p_value = _real(p_value, "p_value", "a p-value in [0, 1]")
    if not 0 <= p_value <= 1:
        raise ValueError(f"p_value: {p_value}; give a p-value in [0, 1]")
    n_first = _whole(n_first, "n_first", 1)
    se = math.sqrt(max(p_value * (1 - p_value), 0.0) / n_first)
    p = max(MC_P_FLOOR, p_value - MC_Z * se)
    return max(n_first, int(math.ceil((MC_Z / MC_RELATIVE_ERROR) ** 2 * (1 - p) / p)))


def correlation_test(x: np.ndarray, y: np.ndarray, method: str = "spearman", alternative: str = "two-sided", *,
                     seed: int = 0, n_resamples: int | None = None, exact_max_n: int = EXACT_MAX_N) -> Correlation:
    """Spearman or Pearson correlation of two series with a permutation p-value: exact over all n! orderings for
    n <= :data:`EXACT_MAX_N`, else Monte Carlo over seeded orderings sized so that the p-value lies within 10%
    relative of the exact one (at p >= 0.001); the asymptotic p-value is reported beside it.

    Over a handful of points (layers, checkpoints) the asymptotic p-values of :func:`scipy.stats.spearmanr` and
    :func:`scipy.stats.pearsonr` are wrong (4 layers with rho = 1 give p = 0; the exact two-sided p-value is
    2/24 = 0.083), and Pearson's assumes normality that a layer profile does not have. The permutation test assumes
    only exchangeability of the pairing under the null of no association. Its p-values are counted as
    :func:`scipy.stats.permutation_test` counts them (two-sided: twice the smaller one-sided p-value), so they equal
    ``scipy.stats.spearmanr(x, y, method=scipy.stats.PermutationMethod())`` where that is exact.

    The Monte Carlo test runs in two stages: :data:`N_PERMUTATIONS` orderings estimate p, then
    :func:`mc_orderings_for` of that estimate orderings (a fresh sample from the same seed) give the reported
    p-value, (count + 1) / (R + 1) (Phipson & Smyth 2010): so its floor is 1 / (R + 1) one-sided and 2 / (R + 1)
    two-sided. Each test should have a seed of its own (:func:`derive_seed` of the test's identity), so that tests of
    the same size draw independent null samples.

    Parameters
    ----------
    x, y : arrays of shape (n,), n >= 3, finite
    method : "spearman" (ranks, ties averaged) or "pearson"
    alternative : "two-sided", "greater" (positive association) or "less" (negative association)
    seed : seeds the Monte Carlo orderings (the same seed gives the same p-value)
    n_resamples : a fixed number of Monte Carlo orderings instead of the two stages (None: two stages)
    exact_max_n : as :func:`correlation_tests`

    Returns
    -------
    :class:`Correlation`; a constant series has no order, so no correlation: coefficient and p-value NaN (as
    :func:`scipy.stats.spearmanr` gives), p_method "none: a constant series has no order". A caller deciding on
    ``p_value < alpha`` then does not reject, and :func:`aniso.judge.rules.underpowered` says why the test could not
    decide.

    Raises
    ------
    ValueError for mismatched shapes, fewer than 3 points, non-finite values, an unknown method or alternative,
    and as :func:`correlation_tests` for ``n_resamples`` (None: the two stages), ``seed`` and ``exact_max_n``.
    """
    n_resamples, seed, exact_max_n = _check_orderings(n_resamples, seed, exact_max_n)
    a, b = _paired_series(x, y, "a correlation test needs at least 3 points, got {n}")
    n = a.shape[0]
    exact = n <= exact_max_n
    if _constant(a, method) or _constant(b, method):  # no order: no correlation to test (scipy: NaN, NaN)
        return Correlation(method, math.nan, math.nan, n, alternative, "none: a constant series has no order", 0,
                           math.nan, None)
    r = N_PERMUTATIONS if n_resamples is None else n_resamples
    coef, p = correlation_tests(a[None, :], b[None, :], method, alternative, n_resamples=r, seed=seed,
                                exact_max_n=exact_max_n)
    if not exact and n_resamples is None and (coef[0] != 0 or p[0] != 1):
        r = mc_orderings_for(float(p[0]), r)
        if r > N_PERMUTATIONS:
            coef, p = correlation_tests(a[None, :], b[None, :], method, alternative, n_resamples=r, seed=seed + 1,
                                        exact_max_n=exact_max_n)
    asymptotic = None
    if coef[0] != 0 or p[0] != 1:
        from scipy import stats

        fn = stats.spearmanr if method == "spearman" else stats.pearsonr
        with np.errstate(all="ignore"):
            asymptotic = float(fn(a, b, alternative=alternative).pvalue)
    sides = 2 if alternative == "two-sided" else 1
    how = (f"exact: all {math.factorial(n):,} orderings" if exact else
           f"Monte Carlo: {r:,} seeded orderings (seed {seed}), p >= {sides}/{r + 1:,}")
    return Correlation(method, float(coef[0]), float(p[0]), n, alternative, how,
                       math.factorial(n) if exact else r, asymptotic, None if exact else seed)


#: The power a test must have at the claim's stated effect for its non-rejection to be a finding.
POWER_REQUIRED = 0.8
#: Simulated samples of a power estimate (Spearman: Monte Carlo standard error <= 0.5 / sqrt(N) = 0.0025).
POWER_SAMPLES = 40_000
#: Pearson's permutation test needs a null per sample: fewer samples, each against this many shared orderings.
_PEARSON_POWER_SAMPLES, _PEARSON_POWER_ORDERINGS = 4_000, 1_999
#: The null sample of a power estimate above EXACT_MAX_N points (the critical value of the Spearman test).
_POWER_NULL = 199_999
#: The most points a power estimate takes (:func:`correlation_power`'s ``n``, :func:`points_for_power`'s ``limit``):
#: its simulation holds POWER_SAMPLES x n normal draws (about 1.6 GB and 15 s at 500 points) and grows with n.
POWER_MAX_N = 500


def correlation_power(n: int, effect: float, method: str = "spearman", alternative: str = "two-sided",
                      alpha: float = 0.05, *, seed: int = 0) -> float:
    """The power of the permutation correlation test of :func:`correlation_test` over ``n`` points at level
    ``alpha``: the probability that it rejects when the pairs are drawn from a bivariate normal distribution with
    correlation ``effect`` (the claim's stated effect; its sign is the direction of a one-sided alternative).

    The test's rejection region is exact where the test is (n <= :data:`EXACT_MAX_N`: the critical value of Spearman's
    rho from all n! orderings; for Pearson, each sample's p-value against 1,999 shared seeded orderings); the
    probability of that region under the bivariate normal has no closed form for rank statistics and is estimated
    by simulation seeded by ``seed``: :data:`POWER_SAMPLES` samples for Spearman (standard error <= 0.0025), 4,000 for
    Pearson (<= 0.008). Cohen 1988, ch. 3 (power of a correlation test); the samples' model is that of the exact
    power of Pearson's t-test (Fisher 1915).

    Parameters
    ----------
    n : points, from 3 to :data:`POWER_MAX_N`
    effect : the population correlation, in (-1, 1)
    method, alternative : as :func:`correlation_test`
    alpha : the level, in (0, 1)

    Returns
    -------
    float in [0, 1].

    Raises
    ------
    TypeError if ``n`` is not a whole number, ``seed`` not an integer or ``effect`` not a real number; ValueError for
    n < 3 or n > :data:`POWER_MAX_N`, seed < 0, |effect| >= 1, alpha outside (0, 1), or an unknown method or
    alternative.
    """
    n = _whole(n, "n", 3, POWER_MAX_N)
    effect = _real(effect, "effect", "a correlation in (-1, 1)")
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed: {seed!r} ({type(seed).__name__}); give an integer >= 0")
    if seed < 0:
        raise ValueError(f"seed: {int(seed)}; give an integer >= 0")
    _check_method_and_alternative(method, alternative)
    return _correlation_power(n, effect, method, alternative, alpha, int(seed))


@lru_cache(maxsize=256)
def _correlation_power(n: int, effect: float, method: str, alternative: str, alpha: float, seed: int) -> float:
    """:func:`correlation_power` once its arguments are checked (cached: the judge asks for the same powers)."""
    if n < 3:
        raise ValueError(f"power needs n >= 3 points, got {n}")
    if not -1 < effect < 1:
        raise ValueError(f"effect must be a correlation in (-1, 1), got {effect}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    rng = np.random.Generator(np.random.PCG64(seed))
    samples = POWER_SAMPLES if method == "spearman" else _PEARSON_POWER_SAMPLES
    x = rng.standard_normal((samples, n))
    y = effect * x + math.sqrt(1 - effect * effect) * rng.standard_normal((samples, n))
    if method == "spearman":  # continuous samples: no ties, every sample against the same null of rho
        xs, _ = _standardised(x, "spearman")
        ys, _ = _standardised(y, "spearman")
        rho = np.einsum("bn,bn->b", xs, ys)
        null = _rank_null(n, _POWER_NULL, seed)
        p = _p_from_sorted_null(rho, null, alternative, n <= EXACT_MAX_N)
    else:
        xs, _ = _standardised(x, "pearson")
        ys, _ = _standardised(y, "pearson")
        coef = np.einsum("bn,bn->b", xs, ys)
        orders = np.argsort(rng.random((_PEARSON_POWER_ORDERINGS, n)), axis=1)
        p = np.empty(samples)
        for start in range(0, samples, 64):
            block = slice(start, start + 64)
            null = np.einsum("bkn,bn->bk", ys[block][:, orders], xs[block])
            p[block] = _p_from_counts((null >= coef[block, None] - _TIE_TOL).sum(1),
                                      (null <= coef[block, None] + _TIE_TOL).sum(1), orders.shape[0], alternative,
                                      False)
    return float(np.mean(p <= alpha))


def points_for_power(effect: float, method: str = "spearman", alternative: str = "two-sided", alpha: float = 0.05,
                     power: float = POWER_REQUIRED, *, start: int = 3, limit: int = 200, seed: int = 0) -> int | None:
    """The fewest points (>= ``start``) at which :func:`correlation_power` reaches ``power`` at ``effect``, or None
    if not within ``limit`` points (searched in steps of n // 8 above 16 points, then point by point back to the last
    n that fell short); None also where ``start`` is above ``limit``: no number of points from ``start`` on is within
    it (a rule asking how many more points a test of ``start`` − 1 needs reads this as "more than ``limit``"). Raises ValueError as :func:`correlation_power` (its effect and alpha checked before any
    estimate, also where none is made), for
    a ``power`` outside (0, 1) (TypeError for one that is not a real number) and for a ``limit`` above
    :data:`POWER_MAX_N` (TypeError for one that is not a whole number)."""
    _check_method_and_alternative(method, alternative)  # also where no estimate is made (start beyond limit)
    effect = _real(effect, "effect", "a correlation in (-1, 1)")
    if not -1 < effect < 1:
        raise ValueError(f"effect must be a correlation in (-1, 1), got {effect}")
    alpha = _real(alpha, "alpha", "a level in (0, 1)")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    limit = _whole(limit, "limit", 0, POWER_MAX_N)
    power = _real(power, "power", "a probability in (0, 1)")
    if not 0 < power < 1:
        raise ValueError(f"power: {power}; give a probability in (0, 1)")
    n, below = max(3, start), max(3, start) - 1  # below: the largest n known to fall short
    while n <= limit:
        if correlation_power(n, effect, method, alternative, alpha, seed=seed) >= power:
            # the steps above 16 skip points: the fewest is the first between the last short n and this one
            return next((m for m in range(below + 1, n)
                         if correlation_power(m, effect, method, alternative, alpha, seed=seed) >= power), n)
        below = n
        n += 1 if n < 16 else max(1, n // 8)
    return None


def drift_correlation(drift_norms: np.ndarray, mean_cosines: np.ndarray, method: str = "spearman", *,
                      seed: int = 0) -> Correlation:
    """Correlation across layers between drift norm and avg cos of one model, with its permutation p-value
    (:func:`correlation_test`, two-sided).

    Godey et al. 2024 §3.3, Fig. 5 (Spearman) and App. A, Fig. 16 (Pearson). G asks whether anisotropy "could be
    directly explained by the drift effect" by "a monotonic relation" of either sign and reports scipy's default
    (two-sided) test: the alternative here is two-sided.

    Parameters
    ----------
    drift_norms, mean_cosines : arrays of shape (n_layers,), n_layers >= 3, finite
    method : "spearman" or "pearson"
    seed : seeds the Monte Carlo orderings above :data:`EXACT_MAX_N` layers

    Raises
    ------
    ValueError for an unknown method, mismatched lengths, fewer than 3 layers or non-finite values.
    """
    if method not in ("spearman", "pearson"):
        raise ValueError(f"method must be 'spearman' or 'pearson', got {method!r}")
    a, b = _paired_series(drift_norms, mean_cosines, "a correlation across layers needs at least 3 layers, got {n}",
                          ("drift_norms", "mean_cosines"))
    return correlation_test(a, b, method, "two-sided", seed=seed)


def monotonic_trend(along: np.ndarray, values: np.ndarray, alternative: str = "two-sided", *,
                    seed: int = 0) -> Correlation:
    """Spearman rank correlation of ``values`` with ``along`` (e.g. a quantity against the bias norm N, or against
    the training step), with its permutation p-value (:func:`correlation_test`).

    Used for the "grows / decreases with N" claims of Godey et al. 2024 §4.3–4.4 (Fig. 7–10, alternative
    "greater" or "less"), the trends along training of G §5 Fig. 14 and R §4.2 Fig. 3–4 ("greater"), and the
    depth trend of G §3.2 Fig. 4 ("less"). A constant series has no rank order: coefficient and p-value NaN.

    Parameters
    ----------
    along, values : arrays of shape (n,), n >= 3, finite
    alternative : "two-sided", "greater" (values grow along) or "less"
    seed : seeds the Monte Carlo orderings above :data:`EXACT_MAX_N` points

    Raises
    ------
    ValueError for mismatched shapes, fewer than 3 points, non-finite values or an unknown alternative.
    """
    a, b = _paired_series(along, values, "a trend needs at least 3 points, got {n}", ("along", "values"))
    return correlation_test(a, b, "spearman", alternative, seed=seed)


def isoscore_from_eigenvalues(eigenvalues: np.ndarray) -> float:
    """IsoScore of a point cloud from the eigenvalues of its covariance matrix (Rudman et al. 2022, Alg. 1).

    With n the dimension and λ the eigenvalues (the variances along the principal axes): λ̂ = √n λ / ‖λ‖, the
    isotropy defect δ = ‖λ̂ − 1‖ / √(2(n − √n)), and IsoScore = ((n − δ²(n − √n))² − n) / (n(n − 1)), which is 1 for
    equal variance in every direction and (k − 1)/(n − 1) when k of the n directions carry equal variance and the
    rest none. Scale-free: multiplying the points by c leaves it unchanged (the eigenvalues are scaled by a power of
    two into [0.5, 1) first, exactly, so ‖λ‖ neither overflows nor underflows at any finite magnitude).

    Parameters
    ----------
    eigenvalues : array of shape (n,), n >= 2, >= 0 (tiny negative rounding is clipped)

    Returns
    -------
    float in [0, 1]; NaN if every eigenvalue is 0 (all points equal).

    Raises
    ------
    TypeError if ``eigenvalues`` is complex; ValueError if it is not 1-D, holds NaN or infinite values or fewer than 2
    values, or one is below zero by more than rounding (1e-6 of the largest |eigenvalue|).
    """
    lam = _as_vector(eigenvalues, "eigenvalues")
    low = float(lam.min()) if lam.size else 0.0
    if low < -_NEGATIVE_SLACK * float(np.abs(lam).max(initial=0.0)):
        raise ValueError(f"eigenvalues: {low:.6g} is below zero beyond rounding; give the eigenvalues of a "
                         "covariance (positive semi-definite) matrix")
    return _isoscore_from_eigenvalues(lam)


def _isoscore_from_eigenvalues(eigenvalues: np.ndarray) -> float:
    """:func:`isoscore_from_eigenvalues` without the checks of its argument (tiny negative rounding clipped)."""
    lam = np.clip(np.asarray(eigenvalues, dtype=np.float64).reshape(-1), 0.0, None)
    lam = _unit_scaled(lam)[0]  # scale-free: ‖λ‖ neither overflows nor underflows
    n = lam.size
    if n < 2:
        raise ValueError(f"IsoScore needs a dimension >= 2, got {n}")
    norm = float(np.linalg.norm(lam))
    if norm == 0:
        return float("nan")
    root = math.sqrt(n)
    defect = float(np.linalg.norm(lam * root / norm - 1.0)) / math.sqrt(2 * (n - root))
    score = ((n - defect**2 * (n - root)) ** 2 - n) / (n * (n - 1))
    return float(min(1.0, max(0.0, score)))


def isoscore_from_trace_and_frobenius(trace: float, frobenius_sq: float, n: int) -> float:
    """IsoScore from the trace and the squared Frobenius norm of a covariance (or centred scatter) matrix C of
    dimension n, without its eigenvalues.

    With S₁ = Σλᵢ = tr C and S₂ = Σλᵢ² = ‖C‖²_F, Rudman et al. (2022, Alg. 1; :func:`isoscore_from_eigenvalues`) give
    ‖λ̂ − 1‖² = 2n − 2√n S₁/√S₂, so n − δ²(n − √n) = √n S₁/√S₂ and

        IsoScore = (S₁² / S₂ − 1) / (n − 1),

    the participation ratio S₁²/S₂ (the effective number of directions) rescaled from [1, n] to [0, 1]. Equal to
    :func:`isoscore_from_eigenvalues` up to rounding (that function clips eigenvalues that rounding made negative,
    of the order of 1e-16 · λ_max), at O(n²) instead of a dense O(n³) eigendecomposition.

    Parameters
    ----------
    trace : float, tr C >= 0
    frobenius_sq : float, ‖C‖²_F = Σᵢⱼ Cᵢⱼ² >= 0
    n : int >= 2, the dimension of C

    Returns
    -------
    float in [0, 1] (clipped); NaN if C is 0 (all points equal).

    Raises
    ------
    TypeError if ``n`` is not a whole number or ``trace`` or ``frobenius_sq`` not a real number; ValueError if n < 2,
    either is NaN, infinite or below zero, or no n × n positive semi-definite matrix has them (trace² / frobenius_sq
    outside [1, n] beyond rounding).
    """
    n = _whole(n, "n", 1)
    if n < 2:
        raise ValueError(f"IsoScore needs a dimension >= 2, got {n}")
    trace = _real(trace, "trace", "a finite number >= 0")
    frobenius_sq = _real(frobenius_sq, "frobenius_sq", "a finite number >= 0")
    for name, value in (("trace", trace), ("frobenius_sq", frobenius_sq)):
        if not 0 <= value < math.inf:
            raise ValueError(f"{name}: {value}; give a finite number >= 0")
    if frobenius_sq > 0 and trace > 0:
        ratio = (trace / math.sqrt(frobenius_sq)) ** 2  # trace² itself may overflow (trace above 1.3e154)
        if not 1 - 1e-9 <= ratio <= n * (1 + 1e-9):
            raise ValueError(f"trace² / frobenius_sq = {ratio:.6g} is outside [1, n = {n}]: no {n} × {n} positive "
                             "semi-definite matrix has this trace and squared Frobenius norm")
    elif (trace > 0) != (frobenius_sq > 0):
        raise ValueError(f"trace {trace:.6g} and frobenius_sq {frobenius_sq:.6g}: one is 0 and the other not; no "
                         "positive semi-definite matrix has them")
    return _isoscore_from_trace_and_frobenius(trace, frobenius_sq, n)


def _isoscore_from_trace_and_frobenius(trace: float, frobenius_sq: float, n: int) -> float:
    """:func:`isoscore_from_trace_and_frobenius` without the checks of its arguments (the statistics' own)."""
    if n < 2:
        raise ValueError(f"IsoScore needs a dimension >= 2, got {n}")
    if frobenius_sq <= 0 or trace <= 0:
        return float("nan")
    score = ((trace / math.sqrt(frobenius_sq)) ** 2 - 1.0) / (n - 1)  # no overflow of trace², no underflow
    return float(min(1.0, max(0.0, score)))


def isoscore(x: np.ndarray) -> float:
    """IsoScore of the rows of ``x`` (shape (m, n), m >= 2 points in ℝⁿ): :func:`isoscore_from_eigenvalues` of their
    covariance (Rudman et al. 2022). Rows are points (the ``IsoScore`` package 2.x takes the same layout). Scale-free:
    ``x`` is first scaled by a power of two that brings its largest |value| into [0.5, 1) (exact), so the covariance
    neither overflows nor underflows at any finite magnitude.

    Returns a float in [0, 1]; NaN when all rows are identical, or when their centred spread is below 1e-12 of their
    size ‖x‖_F (distinct rows within rounding of one another: the covariance is rounding's), the latter with a
    RuntimeWarning saying so: the rule of :func:`svd_anisotropy`. Raises ValueError for fewer than 2 rows."""
    x = _as_matrix(x)
    if x.shape[0] < 2:
        raise ValueError(f"IsoScore needs at least 2 points, got {x.shape[0]}")
    x = _unit_scaled(x)[0]
    xc = x - x.mean(axis=0)
    if _spread_within_rounding(x, xc, "IsoScore"):
        return float("nan")
    cov = (xc.T @ xc) / (x.shape[0] - 1)
    return _isoscore_from_eigenvalues(np.linalg.eigvalsh(cov.reshape(x.shape[1], x.shape[1])))


def isoscore_from_moments(vector_sum: np.ndarray, gram: np.ndarray, n: int) -> float:
    """IsoScore from streamed Σx (d,), Σxxᵀ (d, d) and the count n >= 2 (the covariance up to a factor, which
    IsoScore ignores). See :func:`isoscore_from_eigenvalues`. NaN where the moments are exactly those of identical
    vectors.

    Precision as :func:`svd_anisotropy_from_moments`, with the bound 4(1 + √d)·ρ in place of 2ρ (IsoScore is
    (S₁²/S₂ − 1)/(d − 1), S₁ = tr C moving by ρ relative, S₂ = ‖C‖²_F by 2√d·ρ): the moments are refused where it
    exceeds :data:`MOMENTS_TOLERANCE`; centre the vectors before summing, or give them to :func:`isoscore`.

    Raises TypeError if ``n`` is not a whole number or an argument is complex; ValueError as
    :func:`svd_anisotropy_from_moments` (n < 2, shapes, NaN, a gram that is not symmetric, sums no n vectors have,
    moments that cannot give the value to within the tolerance)."""
    n = _whole(n, "n", 1)
    if n < 2:
        raise ValueError(f"IsoScore needs at least 2 vectors, got {n}")
    s, g, k = _moments(vector_sum, gram)
    _refuse_asymmetric(g, "gram", "Σ x xᵀ", 2 * k)
    c = _centred_scatter(s, g, n, "the IsoScore", 4 * (1 + math.sqrt(s.shape[0])))
    if c is None:
        return float("nan")
    lam = np.linalg.eigvalsh(c)
    _refuse_indefinite(float(lam[0]), float(np.trace(c)))
    return _isoscore_from_eigenvalues(lam)


def dimension_contributions(unit_sum: np.ndarray, unit_square_sum: np.ndarray, n: int) -> np.ndarray:
    """Each dimension's contribution to avg cos, exactly, from Σu (d,) and Σu∘u (d,) of n non-zero vectors.

    avg cos = Σ_k c_k with c_k = ((Σu)_k² − (Σu∘u)_k) / (n(n − 1)) = E_{i≠j}[u_ik u_jk], the mean over pairs of
    the k-th term of the cosine (Timkey & van Schijndel 2021, §3, "contribution of dimension i to cosine
    similarity"). Returns an array of shape (d,) summing to the exact avg cos.

    Raises TypeError if ``n`` is not a whole number or a sum is complex; ValueError if n < 2, the sums are not 1-D of
    one shape or not finite, ‖unit_sum‖² exceeds n² beyond rounding (not a sum of n unit vectors, as
    :func:`mean_cosine_from_unit_sum`), or ``unit_square_sum`` does not sum to n or has an entry below 0 beyond
    rounding (relative :data:`_UNIT_SUM_SLACK`: each u_i∘u_i sums to 1, so a sum of Σx∘x or a negated one is
    refused), or a dimension's (Σu)_k² exceeds n·(Σu∘u)_k beyond that rounding (Cauchy–Schwarz: no unit vectors
    have such sums).
    """
    n = _whole(n, "n", 1)
    if n < 2:
        raise ValueError(f"contributions need at least 2 non-zero vectors, got {n}")
    s = _as_vector(unit_sum, "unit_sum")
    q = _as_vector(unit_square_sum, "unit_square_sum")
    if q.shape != s.shape:
        raise ValueError(f"unit_square_sum must have shape {s.shape}, got {q.shape}")
    square = float(s @ s)
    if not square <= n * n * (1 + _UNIT_SUM_SLACK):
        raise ValueError(f"unit_sum: its norm² {square:.6g} exceeds n² = {n * n} (n = {n}): not a sum of n unit "
                         "vectors; give the sum of the unit vectors x_i / ‖x_i‖")
    total, low = float(q.sum()), float(q.min(initial=0.0))
    if not (abs(total - n) <= n * _UNIT_SUM_SLACK and low >= -n * _UNIT_SUM_SLACK):
        raise ValueError(f"unit_square_sum: its entries sum to {total:.6g}" + (
            f" and one is {low:.6g} < 0" if low < -n * _UNIT_SUM_SLACK else "") + f", where n = {n} unit vectors give "
            "entries >= 0 summing to n (each u_i∘u_i sums to 1): not a sum of squared unit vectors; give "
            "Σ_i u_i∘u_i of the unit vectors u_i = x_i / ‖x_i‖")
    # per dimension, (Σ_i u_ik)² <= n Σ_i u_ik² (Cauchy–Schwarz): no unit vectors have sums beyond it
    excess = s * s - n * q
    k = int(np.argmax(excess)) if excess.size else 0
    if excess.size and not excess[k] <= n * n * _UNIT_SUM_SLACK:
        raise ValueError(f"unit_sum and unit_square_sum: dimension {k} has (Σu)² = {s[k] * s[k]:.6g} > n·(Σu∘u) = "
                         f"{n * q[k]:.6g} (n = {n}), which no n vectors have (Cauchy–Schwarz); give Σ_i u_i and "
                         "Σ_i u_i∘u_i of the same unit vectors u_i = x_i / ‖x_i‖")
    return _dimension_contributions(s, q, n)


def _dimension_contributions(unit_sum: np.ndarray, unit_square_sum: np.ndarray, n: int) -> np.ndarray:
    """:func:`dimension_contributions` without the checks of its arguments (the statistics' own sums)."""
    if n < 2:
        raise ValueError(f"contributions need at least 2 non-zero vectors, got {n}")
    s = np.asarray(unit_sum, dtype=np.float64)
    return (s * s - np.asarray(unit_square_sum, dtype=np.float64)) / (n * (n - 1))


def partition_isotropy(w: np.ndarray, centre: bool = False, chunk: int = 2048) -> float:
    """Partition-function isotropy I(W) = min_v Z(v) / max_v Z(v) of the rows of ``w`` (Arora et al. 2016;
    Mu & Viswanath 2018; Machina & Mercer 2024, §3), with Z(v) = Σᵢ exp(wᵢ·v) and v over the unit eigenvectors of
    WᵀW and their negatives (an eigenvector's sign is arbitrary; taking both makes I(W) well defined and invariant
    to rotations of W), in float64 with log-sum-exp.

    Parameters
    ----------
    w : array of shape (V, d), e.g. an embedding matrix (V words, d dimensions), V >= 1, d >= 1
    centre : subtract the mean row first (and take the eigenvectors of the centred matrix)
    chunk : rows per block of the products and the log-sum-exp (memory and speed only: a block's (chunk, 2d) float64
        products stay within the CPU's caches at the default, about a third faster on one core than 8,192 rows)

    Returns
    -------
    float in (0, 1]: 1 when Z is the same in every principal direction. It depends on the scale of W (Z grows with
    ‖w‖), so report the mean row norm beside it.

    Raises
    ------
    ValueError for a non-2-D or non-finite matrix.
    """
    if not isinstance(centre, (bool, np.bool_)):
        raise TypeError(f"centre: {centre!r} ({type(centre).__name__}); give True or False")
    return partition_isotropies(w, chunk)[1 if centre else 0]


def partition_isotropies(w: np.ndarray | torch.Tensor, chunk: int = 2048) -> tuple[float, float]:
    """:func:`partition_isotropy` of ``w`` raw and centred, ``(raw, centred)``, for the price of about one.

    Both come from one WᵀW (the centred matrix's is WᵀW − V·w̄w̄ᵀ, V rows) and one pass over the rows: each block's
    products with both sets of eigenvectors in one matrix product, (w − w̄)·v = w·v − w̄·v (the shift w̄·v applied once
    to each log Z, not to every row), and Z(−v) from the same
    products negated (no product against the negated vectors). A tensor (any float dtype, e.g. a model's bf16
    embedding matrix) is measured where it lies, on its device, in float64 a block of ``chunk`` rows at a time (no
    float64 copy of the whole matrix, no copy to the host but the two results and one finiteness flag); an array on
    the CPU. A float64 matrix (an array included) whose largest |entry| lies beyond 2^±256 is scaled by a power of
    two into [0.5, 1) for WᵀW and w̄ (exact: the same eigenvectors, w̄·v scaled back), which would otherwise overflow
    (|w| near 1e200) or underflow; its largest |entry| is the one value read for the finiteness check. A narrower
    dtype cannot overflow or underflow WᵀW in float64. Raises ValueError as :func:`partition_isotropy` does.
    """
    chunk = _whole(chunk, "chunk", 1)
    w = _readable(w, "W")
    w = w.detach() if isinstance(w, torch.Tensor) else _from_numpy(np.asarray(w, dtype=np.float64))
    if w.ndim != 2 or w.shape[0] < 1 or w.shape[1] < 1:
        raise ValueError(f"W must have shape (V, d) with V, d >= 1, got {tuple(w.shape)}")
    n, d = w.shape
    f64 = dict(dtype=torch.float64, device=w.device)
    blocks = [slice(start, start + chunk) for start in range(0, n, chunk)]
    gram, total = torch.zeros(d, d, **f64), torch.zeros(d, **f64)
    finite = torch.ones((), dtype=torch.bool, device=w.device)
    exponent = 0
    if w.dtype == torch.float64:  # WᵀW may overflow or underflow: scaled by 2^−e where the peak is far from 1
        # one host synchronisation (NaN or inf where W is not finite), block by block: no copy of the whole matrix
        peak = float(torch.stack([w[rows].abs().amax() for rows in blocks]).amax())
        if not math.isfinite(peak):
            raise ValueError("W contains NaN or infinite values")
        exponent = _exponent(peak) if abs(_exponent(peak)) > _max_exponent(torch.float64) // 4 else 0
    for rows in blocks:
        block = _times_power_of_two(w[rows].to(torch.float64), -exponent)
        gram.addmm_(block.T, block)
        total += block.sum(dim=0)
        if w.dtype != torch.float64:
            finite &= torch.isfinite(block).all()
    if not bool(finite):  # one host synchronisation (narrower dtypes)
        raise ValueError("W contains NaN or infinite values")
    mean = total / n
    raw = torch.linalg.eigh(gram)[1]  # columns: unit eigenvectors of WᵀW
    centred = torch.linalg.eigh(gram - n * torch.outer(mean, mean))[1]
    vectors = torch.cat([raw, centred], dim=1)
    shift = torch.cat([torch.zeros(d, **f64), _times_power_of_two(mean @ centred, exponent)])  # w̄·v, centred vectors
    log_z = torch.full((4 * d,), -math.inf, **f64)  # Z(v) then Z(−v), raw vectors then centred
    for rows in blocks:
        block = w[rows].to(torch.float64) @ vectors  # (rows, 2d): wᵢ·v
        log_z = torch.logaddexp(log_z, torch.cat([torch.logsumexp(block, dim=0), torch.logsumexp(-block, dim=0)]))
    # log Σ exp(wᵢ·v − w̄·v) = log Σ exp(wᵢ·v) − w̄·v: the centring's shift applied once per vector, not per row
    plus, minus = log_z[: 2 * d] - shift, log_z[2 * d :] + shift
    both = torch.stack([torch.cat([plus[part], minus[part]]) for part in (slice(0, d), slice(d, 2 * d))])
    ratio = torch.exp(both.min(dim=1).values - both.max(dim=1).values).tolist()  # one copy to the host
    return float(ratio[0]), float(ratio[1])
