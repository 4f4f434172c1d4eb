"""Godey et al. 2024 §5 and App. C-D: queries, keys and attention along training.

Every registry entry with a checkpoint series (``checkpoints:``) is measured at each checkpoint on the run's text
corpus (G §5: 128 WikiText-103 samples; here the run's sample): per attention layer and head, the mean query Q̄
and mean key K̄ over real tokens (taken at the projections, before rotary embeddings), their uncentred second
moments, and the mean attention entropy. Offline, the series are the suite's own byte-level miniatures (BERT and
GPT-2, three seeds each); MultiBERTs, Pythia and BLOOM run where the hub is reachable.
"""

from __future__ import annotations

import pytest

from aniso.stats.dynamics import head_cosines, head_dots
from aniso.judge.training_rules import (ALIGN_RULE, DEPTH_RULE, DOT_RULE, ENTROPY_RULE, PROJECTION_RULE, entropy_decays,
                                         qk_dot_grows, qk_direction_by_depth, qk_means_align, qk_projections_grow)

SERIES = ("checkpoints", "text")


def _cosines(series):
    return head_cosines(series.stacked("q_mean"), series.stacked("k_mean"))


@pytest.mark.claim("G.qk-means-align")
@pytest.mark.models(all_of=SERIES)
def test_qk_means_align(entry, claim):
    """G §5, Fig. 13: along training, Q̄_s and K̄_s of almost all heads align in a common or opposite direction.

    Holds if for >= 75% of heads |cos(Q̄, K̄)| at the last checkpoint exceeds its value at step 0 and q95(d_head).
    """
    series = claim.series()
    holds, measured = qk_means_align(_cosines(series), series.measures[0].q_mean.shape[-1])
    claim.conclude(holds, measured, ALIGN_RULE)


@pytest.mark.claim("G.qk-direction-by-depth")
@pytest.mark.models(all_of=SERIES)
def test_qk_direction_by_depth(entry, claim):
    """G §5, Fig. 13: the first layers' Q̄ and K̄ drift in a common direction (cos > 0), the last layers' in
    opposite directions (cos < 0).

    Holds if the mean head cos(Q̄, K̄) at the last checkpoint is > 0 over the first third of layers and < 0 over
    the last third.
    """
    holds, measured = qk_direction_by_depth(_cosines(claim.series())[-1])
    claim.conclude(holds, measured, DEPTH_RULE)


@pytest.mark.claim("G.qk-dot-grows")
@pytest.mark.models(all_of=SERIES)
def test_qk_dot_grows(entry, claim):
    """G §5, Fig. 14: the magnitude of Q̄_s·K̄_s grows along training.

    Holds if |Q̄·K̄| at the last checkpoint exceeds its step-0 value for most heads and Spearman rho(step, mean
    |Q̄·K̄|) > 0.
    """
    series = claim.series()
    holds, measured, p = qk_dot_grows(series.steps, head_dots(series.stacked("q_mean"), series.stacked("k_mean")),
                                      seed=claim.settings.seed)
    claim.conclude(holds, measured, DOT_RULE, p_value=p)


@pytest.mark.claim("G.attention-entropy-decays")
@pytest.mark.models(all_of=SERIES)
def test_attention_entropy_decays(entry, claim):
    """G §5, Fig. 15: mean attention entropy decays along training in every layer; the first layers stay sharper
    than the last.

    Holds if every layer's mean entropy at the last checkpoint is below its step-0 value, and at the last
    checkpoint the first half of layers has a lower mean entropy than the last half.
    """
    holds, measured = entropy_decays(claim.series().stacked("entropy"))
    claim.conclude(holds, measured, ENTROPY_RULE)


@pytest.mark.claim("G.qk-svd-projections")
@pytest.mark.models(all_of=SERIES)
def test_qk_svd_projections(entry, claim):
    """G §5 Fig. 11-12, App. C Fig. 19-22: projected on the first singular direction of Q_s ∪ K_s over all steps
    (and of K_s only, of Q_s only), Q̄_s and K̄_s drift away from the origin along training.

    The SVD is exact: the union's right singular vectors are the eigenvectors of the summed uncentred second
    moments (G sampled 20% of the vectors). Holds if, for every basis, > 50% of heads have both |projections|
    larger at the last checkpoint than at the first.
    """
    s = claim.series()
    holds, measured = qk_projections_grow(s.stacked("q_mean"), s.stacked("k_mean"), s.stacked("q_moment"),
                                          s.stacked("k_moment"))
    claim.conclude(holds, measured, PROJECTION_RULE)


@pytest.mark.claim("G.qk-align-across-seeds")
@pytest.mark.models(all_of=SERIES)
def test_qk_align_across_seeds(entry, claim):
    """G App. D, Fig. 23: the trends hold across seeds (MultiBERTs seeds 0-4; offline, the miniatures' seeds).

    The seeds of a series are the registry's series of the same family and role. Holds if G.qk-means-align holds
    for every one of them; needs at least 3 available (otherwise skipped, naming what is missing).
    """
    seeds, missing = claim.available_series(SERIES + (entry.family, entry.role))
    per_seed = {other.id: qk_means_align(_cosines(series), series.measures[0].q_mean.shape[-1])
                for other, series in seeds}
    if len(per_seed) < 3:
        pytest.skip(f"needs >= 3 seeds of family {entry.family!r} with checkpoints; available: "
                    f"{sorted(per_seed) or 'none'}; unavailable: " + "; ".join(missing))
    claim.series()  # this entry's inputs, for the result
    measured = {"seeds_holding": sum(h for h, _ in per_seed.values()), "n_seeds": len(per_seed),
                "aligned_share_per_seed": {m: round(v["aligned_share"], 4) for m, (_, v) in per_seed.items()}}
    claim.conclude(all(h for h, _ in per_seed.values()), measured,
                   f"G.qk-means-align ({ALIGN_RULE}) holds for every seed of the family")
