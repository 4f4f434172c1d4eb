"""Operationalisations of the training-dynamics claims (``docs/claims.md``, "G — queries and keys along training"
and "R — anisotropy profiles and intrinsic dimension"), as pure functions of per-checkpoint arrays, and the rule
that decides such a claim over the seeds of one architecture and recipe (:func:`over_seeds`).

Arrays are indexed (checkpoint s, attention layer l, head h, ...), checkpoints oldest first. Each rule returns a
:class:`SeedResult`: whether the claim holds on one seed's series, the numbers that decided it (JSON-friendly), and,
where its test did not reject and could not have (too little power at the claim's stated effect), why the seed is
undecided. Every rule that reads a growth, a decay or a direction decides on a test at :data:`ALPHA` with its
alternative stated, never on the sign of a difference.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import metrics
from ..registry.catalog import POWER_EFFECT
from .rules import underpowered
from ..stats.dynamics import first_directions, projections

__all__ = ["SeedResult", "over_seeds", "SEEDS_RULE", "seeds_to_decide", "ALPHA", "TREND_EFFECT",
           "qk_means_align", "ALIGN_RULE", "ALIGN_SHARE", "qk_direction_by_depth", "DEPTH_RULE", "qk_dot_grows",
           "DOT_RULE", "entropy_decays", "ENTROPY_RULE", "qk_projections_grow", "PROJECTION_RULE", "majority_test",
           "grows_then_stabilises", "GROWS_RULE", "rises_then_falls", "RISE_FALL_RULE", "thirds", "trend_undecided"]

#: The level of every test of this module (one-sided where the claim names a direction).
ALPHA = 0.05
#: The effect a trend along checkpoints is tested at, for the power of its test (the catalogue's
#: :data:`aniso.registry.catalog.POWER_EFFECT`; G Fig. 14-15 and R Fig. 3-4 show curves, not effect sizes).
TREND_EFFECT = POWER_EFFECT


@dataclass(frozen=True)
class SeedResult:
    """One seed's verdict on a training-dynamics claim: ``holds``; ``measured``, the numbers it rests on;
    ``undecided``, why a result that does not hold is not evidence against the claim (its test had too little
    power), else None."""

    holds: bool
    measured: dict
    undecided: str | None = None

    @property
    def decided_not(self) -> bool:
        """True when the seed decidedly does not hold (it does not hold, and its test could have shown it)."""
        return not self.holds and self.undecided is None


SEEDS_RULE = (f"sign test over the seeds (one-sided binomial, p = 1/2 per seed, alpha {ALPHA}): holds when the seeds "
              "that hold are significantly many, does not hold when the seeds that decidedly do not hold are; "
              "otherwise undecided (underpowered)")


def seeds_to_decide(alpha: float = ALPHA) -> int:
    """The fewest seeds whose unanimous verdict a one-sided sign test decides at ``alpha``: the smallest n with
    2^-n < alpha (5 at 0.05: 1/32 = 0.031)."""
    return int(math.floor(-math.log2(alpha))) + 1


def over_seeds(per_seed: dict[str, SeedResult], alpha: float = ALPHA) -> tuple[bool, dict, str | None]:
    """Decide a claim about an architecture and a training recipe from all its seeds together (Conover 1999, §3.4:
    the sign test): each seed's verdict is a Bernoulli trial; the claim holds when the number of seeds that hold is
    significantly above half (P(X >= k | n, 1/2) < ``alpha``), does not hold when the number of seeds that decidedly
    do not hold is (an underpowered seed counts for neither side), and is undecided otherwise.

    ``per_seed``: {model id: :class:`SeedResult`}, at least one. Returns ``(holds, measured, undecided)``:
    ``measured`` gives the counts, both one-sided p-values and the seeds' own numbers; ``undecided`` says why the
    seeds cannot decide (None when they do). Raises ValueError for no seeds.
    """
    from scipy.stats import binom

    if not per_seed:
        raise ValueError("a claim over seeds needs at least one seed")
    n = len(per_seed)
    k_hold = sum(r.holds for r in per_seed.values())
    k_not = sum(r.decided_not for r in per_seed.values())
    p_hold = float(binom.sf(k_hold - 1, n, 0.5))
    p_not = float(binom.sf(k_not - 1, n, 0.5))
    measured = {"n_seeds": n, "seeds_holding": k_hold, "seeds_not_holding": k_not,
                "seeds_underpowered": n - k_hold - k_not, "sign_p_holds": p_hold, "sign_p_does_not_hold": p_not,
                "per_seed": {m: {"holds": r.holds, "underpowered": r.undecided is not None, **_scalars(r.measured)}
                             for m, r in per_seed.items()}}
    if p_hold < alpha:
        return True, measured, None
    if p_not < alpha:
        return False, measured, None
    need = seeds_to_decide(alpha)
    if n < need:
        why = (f"{k_hold} of {n} seeds hold, {k_not} decidedly do not: a one-sided sign test over {n} seeds cannot "
               f"reach p < {alpha} even when they agree (smallest p = 1/2^{n} = {0.5 ** n:.3g}); {need} seeds that "
               "agree would decide it")
    else:
        why = (f"{k_hold} of {n} seeds hold, {k_not} decidedly do not: neither side is significant by a one-sided "
               f"sign test (p = {p_hold:.3g} for holds, {p_not:.3g} for does not hold)")
    return False, measured, why


def _scalars(measured: dict) -> dict:
    return {k: v for k, v in measured.items() if isinstance(v, (int, float, str, bool)) or v is None}


def _r(a) -> list:
    return np.round(np.asarray(a, dtype=np.float64), 4).tolist()


def majority_test(successes: int, n: int) -> float:
    """One-sided sign-test p-value that ``successes`` of ``n`` units (heads) is more than half by chance:
    P(X >= successes | n, 1/2) (Conover 1999, §3.4). Raises ValueError for n < 1."""
    from scipy.stats import binom

    if n < 1:
        raise ValueError(f"need at least one unit, got {n}")
    return float(binom.sf(successes - 1, n, 0.5))


def trend_undecided(trend: metrics.Correlation, what: str, effect: float = TREND_EFFECT,
                    alpha: float = ALPHA) -> str | None:
    """Why a trend test ``trend`` over ``what`` (e.g. "checkpoints") that did not reject is not a finding: its power
    at ``effect`` is below :data:`aniso.metrics.POWER_REQUIRED` (:func:`aniso.judge.rules.underpowered`). None when
    it rejected or had the power."""
    return underpowered(trend, what, effect, alpha)[0]


#: G §5 Fig. 13: share of heads that must align.
ALIGN_SHARE = 0.75
ALIGN_RULE = (f"for >= {ALIGN_SHARE:.0%} of heads, |cos(Q̄, K̄)| at the last checkpoint > at step 0 and > "
              "q95(d_head)")


def qk_means_align(cos: np.ndarray, head_dim: int) -> SeedResult:
    """G §5, Fig. 13: mean queries and keys align (in a common or opposite direction) along training.

    ``cos``: (n_checkpoints, L, H) cos(Q̄_s, K̄_s), first checkpoint = step 0. A head aligns when |cos| at the last
    checkpoint exceeds both its |cos| at step 0 and q95(d_head), the 95th percentile of the cosine of two isotropic
    Gaussian vectors in d_head dimensions (:func:`aniso.metrics.isotropic_cos_quantile`: each head's alignment is
    a one-sided test at 0.05 against isotropy). Holds when the share of aligned heads is >= :data:`ALIGN_SHARE`
    (G's "almost all heads"). Raises ValueError for fewer than 2 checkpoints.
    """
    c = np.abs(np.asarray(cos, dtype=np.float64))
    if c.ndim != 3 or c.shape[0] < 2:
        raise ValueError(f"need (n_checkpoints >= 2, layers, heads) cosines, got shape {c.shape}")
    q95 = metrics.isotropic_cos_quantile(head_dim)
    aligned = (c[-1] > c[0]) & (c[-1] > q95)
    share = float(aligned.mean())
    return SeedResult(share >= ALIGN_SHARE, {
        "aligned_share": share, "aligned_heads": int(aligned.sum()), "n_heads": int(aligned.size),
        "q95_head_dim": q95, "head_dim": head_dim, "mean_abs_cos_first": float(c[0].mean()),
        "mean_abs_cos_last": float(c[-1].mean()), "cos_last_per_layer_head": _r(np.asarray(cos)[-1])})


DEPTH_RULE = (f"mean head cos(Q̄, K̄) at the last checkpoint significantly > 0 over the first third of layers and "
              f"significantly < 0 over the last third (one-sided z-tests at {ALPHA} against isotropic directions, "
              "std 1/sqrt(d_head) per head)")


def qk_direction_by_depth(cos_last: np.ndarray, head_dim: int) -> SeedResult:
    """G §5, Fig. 13: first layers drift in a common direction (cos > 0), last layers in opposite ones (cos < 0).

    ``cos_last``: (L, H) cos(Q̄, K̄) at the last checkpoint, L >= 3. The first and last thirds are the first and
    last max(1, L // 3) attention layers. Each third's mean over its m heads is tested against the null of unrelated
    directions, under which a head's cosine has mean 0 and std 1/sqrt(d_head) (G App. B;
    :func:`aniso.metrics.isotropic_cos_std`): z = mean · sqrt(m · d_head), one-sided (first third "greater", last
    third "less") at :data:`ALPHA`. Raises ValueError for fewer than 3 layers.
    """
    from scipy.stats import norm

    c = np.asarray(cos_last, dtype=np.float64)
    if c.ndim != 2 or c.shape[0] < 3:
        raise ValueError(f"need (layers >= 3, heads) cosines, got shape {c.shape}")
    per_layer = c.mean(1)
    n = max(1, c.shape[0] // 3)
    first, last = float(per_layer[:n].mean()), float(per_layer[-n:].mean())
    scale = math.sqrt(n * c.shape[1]) / metrics.isotropic_cos_std(head_dim)
    p_first, p_last = float(norm.sf(first * scale)), float(norm.cdf(last * scale))
    return SeedResult(p_first < ALPHA and p_last < ALPHA, {
        "mean_cos_first_third": first, "mean_cos_last_third": last, "p_first_third_positive": p_first,
        "p_last_third_negative": p_last, "layers_per_third": n, "mean_cos_per_layer": _r(per_layer)})


DOT_RULE = (f"|Q̄·K̄| at the last checkpoint > at step 0 for a significant majority of heads (one-sided sign test, "
            f"p < {ALPHA}), and Spearman rho(step, mean over heads of |Q̄·K̄|) > 0 with one-sided permutation "
            f"p < {ALPHA}")


def qk_dot_grows(steps: np.ndarray, dots: np.ndarray, seed: int = 0) -> SeedResult:
    """G §5, Fig. 14: the magnitude of Q̄_s·K̄_s grows along training.

    ``steps`` (n_checkpoints,), ``dots`` (n_checkpoints, L, H). Holds when both tests reject at :data:`ALPHA`: the
    sign test over heads of |Q̄·K̄| last > first (:func:`majority_test`) and Spearman's one-sided ("greater")
    permutation test over the checkpoints (exact up to :data:`aniso.metrics.EXACT_MAX_N` checkpoints, else Monte
    Carlo seeded by ``seed``). A trend test that does not reject is undecided when its power at
    :data:`TREND_EFFECT` is below 0.8 (:func:`trend_undecided`). Raises ValueError for fewer than 3 checkpoints.
    """
    d = np.abs(np.asarray(dots, dtype=np.float64))
    mean = d.reshape(d.shape[0], -1).mean(1)
    trend = metrics.monotonic_trend(np.asarray(steps, dtype=np.float64), mean, "greater", seed=seed)
    grown = d[-1] > d[0]
    p_heads = majority_test(int(grown.sum()), int(grown.size))
    holds = p_heads < ALPHA and trend.p_value < ALPHA
    return SeedResult(holds, {
        "grown_share": float(grown.mean()), "p_heads_grown": p_heads, "spearman_rho": trend.coefficient,
        "p_value": trend.p_value, "alternative": trend.alternative, "p_method": trend.p_method,
        "p_value_asymptotic": trend.p_value_asymptotic, "mean_abs_dot_first": float(mean[0]),
        "mean_abs_dot_last": float(mean[-1]), "mean_abs_dot_per_checkpoint": _r(mean)},
        trend_undecided(trend, "checkpoints") if not holds and p_heads < ALPHA else None)


ENTROPY_RULE = (f"every layer's mean attention entropy decreases along training (Spearman rho(step, entropy) < 0, "
                f"one-sided permutation p < {ALPHA} in each layer), and at the last checkpoint the heads of the first "
                f"half of layers have lower entropies than those of the last half (one-sided Mann-Whitney U, exact, "
                f"p < {ALPHA})")


def entropy_decays(steps: np.ndarray, entropy: np.ndarray, seed: int = 0) -> SeedResult:
    """G §5, Fig. 15: attention entropy decays in every layer; the first layers stay sharper than the last.

    ``steps`` (n_checkpoints,); ``entropy``: (n_checkpoints, L, H) mean attention entropy (nats) of real query
    tokens, L >= 2. Each layer's decay is Spearman's one-sided ("less") permutation test of its mean entropy
    along the checkpoints (seeded by ``seed`` + layer above :data:`aniso.metrics.EXACT_MAX_N` checkpoints); every
    layer must reject (an intersection-union test: no multiplicity adjustment, Berger 1982). "Sharper first" is a
    one-sided exact Mann-Whitney U test of the last checkpoint's head entropies, first half of layers against the
    last half (with an odd L the middle layer belongs to neither). A layer whose test did not reject is undecided
    when the test lacked power (:func:`trend_undecided`). Raises ValueError for fewer than 2 checkpoints or layers.
    """
    from scipy.stats import mannwhitneyu

    e = np.asarray(entropy, dtype=np.float64)
    if e.ndim != 3 or e.shape[0] < 3 or e.shape[1] < 2:
        raise ValueError(f"need (n_checkpoints >= 3, layers >= 2, heads) entropies, got shape {e.shape}")
    per_layer = e.mean(2)
    steps = np.asarray(steps, dtype=np.float64)
    trends = [metrics.monotonic_trend(steps, per_layer[:, layer], "less", seed=seed + layer)
              for layer in range(e.shape[1])]
    decayed = [t.p_value < ALPHA for t in trends]
    half = e.shape[1] // 2
    first, last = e[-1, :half].ravel(), e[-1, -half:].ravel()
    p_sharper = float(mannwhitneyu(first, last, alternative="less", method="exact").pvalue)
    holds = all(decayed) and p_sharper < ALPHA
    undecided = None
    if not holds and p_sharper < ALPHA:
        why = [trend_undecided(t, "checkpoints") for t, ok in zip(trends, decayed) if not ok]
        undecided = next((w for w in why if w), None) if all(why) else None
    return SeedResult(holds, {
        "layers_decayed": int(sum(decayed)), "n_layers": len(decayed), "p_decay_per_layer": [t.p_value for t in trends],
        "p_first_half_sharper": p_sharper, "entropy_first_half_last": float(first.mean()),
        "entropy_last_half_last": float(last.mean()), "entropy_per_layer_first": _r(per_layer[0]),
        "entropy_per_layer_last": _r(per_layer[-1])}, undecided)


PROJECTION_RULE = (f"for each SVD basis (Q∪K, K only, Q only), a significant majority of heads (one-sided sign test, "
                   f"p < {ALPHA}) have both |Q̄| and |K̄| projected on the first singular direction larger at the last "
                   "checkpoint than at the first")
#: Kept for the records that cite it: the share of heads the rule read before it read a sign test.
PROJECTION_SHARE = 0.5


def qk_projections_grow(q_mean, k_mean, q_moment, k_moment) -> SeedResult:
    """G §5 Fig. 11-12 and App. C Fig. 19-22: projected on the first singular direction of the union over
    checkpoints of Q_s ∪ K_s (and of K_s only, Q_s only), Q̄_s and K̄_s drift away from the origin.

    ``q_mean``, ``k_mean``: (n_checkpoints, L, H, d_h); ``q_moment``, ``k_moment``: (n_checkpoints, L, H, d_h,
    d_h) uncentred second moments. The figures show a few heads; the test asks, for every basis, that the heads
    moving away be significantly many (:func:`majority_test` at :data:`ALPHA`). Returns per basis the share of
    heads, the sign test's p-value and the mean |projection| of Q̄ and K̄ at the first and last checkpoint.
    """
    out, holds = {}, True
    for basis in ("qk", "k", "q"):
        direction = first_directions(q_moment, k_moment, basis)
        pq = np.abs(projections(q_mean, direction)[..., 0])
        pk = np.abs(projections(k_mean, direction)[..., 0])
        away = (pq[-1] > pq[0]) & (pk[-1] > pk[0])
        p = majority_test(int(away.sum()), int(away.size))
        holds &= p < ALPHA
        out[f"share_{basis}"] = float(away.mean())
        out[f"p_{basis}"] = p
        out[f"proj_q_{basis}_first_last"] = [float(pq[0].mean()), float(pq[-1].mean())]
        out[f"proj_k_{basis}_first_last"] = [float(pk[0].mean()), float(pk[-1].mean())]
    return SeedResult(bool(holds), out)


def thirds(n: int) -> tuple[slice, slice]:
    """The first and last third of ``n`` checkpoints, each of max(2, round(n / 3)) checkpoints (n >= 3)."""
    k = max(2, round(n / 3))
    return slice(0, k), slice(n - k, n)


GROWS_RULE = (f"mean-over-layers SVD anisotropy: Spearman rho(step, value) > 0 over checkpoints with one-sided "
              f"permutation p < {ALPHA}, and its range over the last third of checkpoints < over the first third")


def grows_then_stabilises(steps: np.ndarray, values: np.ndarray, seed: int = 0) -> SeedResult:
    """R §4.2, Fig. 3-4: anisotropy grows as training proceeds, then stabilises.

    ``steps``, ``values``: (n_checkpoints,), n >= 3 (values: mean over layers of the batch-wise SVD anisotropy).
    "Grows" is Spearman's one-sided ("greater") permutation test over the checkpoints at :data:`ALPHA` (exact up to
    :data:`aniso.metrics.EXACT_MAX_N`, else Monte Carlo seeded by ``seed``); "changes less" is compared on the range
    (max - min) within each third (:func:`thirds`). A trend test that does not reject is undecided when its power at
    :data:`TREND_EFFECT` is below 0.8.
    """
    v = np.asarray(values, dtype=np.float64)
    trend = metrics.monotonic_trend(np.asarray(steps, dtype=np.float64), v, "greater", seed=seed)
    early, late = thirds(v.size)
    first_range, last_range = float(np.ptp(v[early])), float(np.ptp(v[late]))
    holds = trend.p_value < ALPHA and last_range < first_range
    return SeedResult(holds, {
        "spearman_rho": trend.coefficient, "p_value": trend.p_value, "alternative": trend.alternative,
        "p_method": trend.p_method, "p_value_asymptotic": trend.p_value_asymptotic, "range_first_third": first_range,
        "range_last_third": last_range, "value_first": float(v[0]), "value_last": float(v[-1]),
        "value_per_checkpoint": _r(v)},
        trend_undecided(trend, "checkpoints") if not holds and last_range < first_range else None)


RISE_FALL_RULE = (f"mean-over-layers TwoNN: maximum at a checkpoint strictly inside the series, significantly above "
                  f"the first value and the last value significantly below it (one-sided Welch t-tests over the "
                  f"batches at {ALPHA})")


def rises_then_falls(values: np.ndarray, stds: np.ndarray, n_batches: int) -> SeedResult:
    """R §4.3, Fig. 2: intrinsic dimension rises early in training, then falls.

    ``values``: (n_checkpoints,) mean over layers of the batch-wise TwoNN; ``stds``: (n_checkpoints,) mean over
    layers of its batch std (population std, ddof 0, as the statistics report it; rescaled here to the sample std);
    ``n_batches``: the batches each value is the mean of (R §2.4). The rise (max − first)
    and the fall (max − last) are each a one-sided Welch t-test from the summary statistics
    (:func:`scipy.stats.ttest_ind_from_stats`) at :data:`ALPHA`; the mean over layers of the per-layer stds bounds
    the std of the layer mean from above (the triangle inequality), so the tests are conservative. Raises ValueError
    for fewer than 3 checkpoints, mismatched shapes or fewer than 2 batches.
    """
    from scipy.stats import ttest_ind_from_stats

    v, s = np.asarray(values, dtype=np.float64), np.asarray(stds, dtype=np.float64)
    if v.ndim != 1 or v.shape != s.shape or v.size < 3:
        raise ValueError(f"need two equal 1-D series of >= 3 checkpoints, got {v.shape} and {s.shape}")
    if n_batches < 2:
        raise ValueError(f"a t-test over batches needs >= 2 batches, got {n_batches}")
    k = int(np.argmax(v))
    sample = s * math.sqrt(n_batches / (n_batches - 1))

    def p_above(i: int, j: int) -> float:  # one-sided: value i above value j
        if i == j:
            return 1.0
        with np.errstate(all="ignore"):
            p = ttest_ind_from_stats(v[i], max(sample[i], 1e-12), n_batches, v[j], max(sample[j], 1e-12), n_batches,
                                     equal_var=False, alternative="greater").pvalue
        return float(p) if math.isfinite(p) else 1.0

    p_rise, p_fall = p_above(k, 0), p_above(k, v.size - 1)
    return SeedResult(0 < k < v.size - 1 and p_rise < ALPHA and p_fall < ALPHA, {
        "max_checkpoint": k, "max": float(v[k]), "first": float(v[0]), "last": float(v[-1]),
        "drop": float(v[k] - v[-1]), "batch_std": float(max(s[k], s[-1])), "p_rise": p_rise, "p_fall": p_fall,
        "n_batches": n_batches, "value_per_checkpoint": _r(v)})
