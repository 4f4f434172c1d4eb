"""Godey et al. 2024 §5 and App. C-D: queries, keys and attention along training.

Every registry entry with a checkpoint series (``checkpoints:``) is measured at each checkpoint on the run's text
corpus (G §5: 128 WikiText-103 samples; here the run's sample): per attention layer and head, the mean query Q̄
and mean key K̄ over real tokens (taken at the projections, before rotary embeddings), their uncentred second
moments, and the mean attention entropy. Offline, the series are the suite's own byte-level miniatures (BERT and
GPT-2, three seeds each; the default ``small`` set takes seed 0, the others are tagged ``seed-replica``); MultiBERTs, Pythia and BLOOM run where the hub is reachable.

A claim about training dynamics is a claim about an architecture and a recipe: each test runs once per family of
seeds (the registry's series of one family and role), decides the rule on every seed's series, and concludes from
all the seeds together by a sign test (:func:`aniso.judge.training_rules.over_seeds`), with each seed's numbers
beside the verdict. Three seeds cannot reach p < 0.05 by a sign test (1/8 at best): at the ``quick`` profile these
claims are underpowered, and five seeds that agree decide them.
"""

from __future__ import annotations

import pytest

from aniso.stats.dynamics import head_cosines, head_dots
from aniso.judge.training_rules import (ALIGN_RULE, DEPTH_RULE, DOT_RULE, ENTROPY_RULE, PROJECTION_RULE, SeedResult,
                                         entropy_decays, qk_dot_grows, qk_direction_by_depth, qk_means_align,
                                         qk_projections_grow)

SERIES = ("checkpoints", "text")


def _cosines(series):
    return head_cosines(series.stacked("q_mean"), series.stacked("k_mean"))


def _head_dim(series) -> int:
    return series.measures[0].q_mean.shape[-1]


def _per_seed(claim, rule) -> dict[str, SeedResult]:
    """``rule(entry, series)`` on every seed of the test's family."""
    return {entry.id: rule(entry, series) for entry, series in claim.seeds()}


@pytest.mark.claim("G.qk-means-align")
@pytest.mark.models(all_of=SERIES)
def test_qk_means_align(entry, claim):
    """G §5, Fig. 13: along training, Q̄_s and K̄_s of almost all heads align in a common or opposite direction.

    Per seed: holds if for >= 75% of heads |cos(Q̄, K̄)| at the last checkpoint exceeds its value at step 0 and
    q95(d_head). Over the seeds: a sign test.
    """
    claim.conclude_over_seeds(_per_seed(claim, lambda e, s: qk_means_align(_cosines(s), _head_dim(s))), ALIGN_RULE)


@pytest.mark.claim("G.qk-direction-by-depth")
@pytest.mark.models(all_of=SERIES)
def test_qk_direction_by_depth(entry, claim):
    """G §5, Fig. 13: the first layers' Q̄ and K̄ drift in a common direction (cos > 0), the last layers' in
    opposite directions (cos < 0).

    Per seed: holds if the mean head cos(Q̄, K̄) at the last checkpoint is significantly > 0 over the first third
    of layers and significantly < 0 over the last third (one-sided z-tests against isotropic directions). Over the
    seeds: a sign test.
    """
    claim.conclude_over_seeds(
        _per_seed(claim, lambda e, s: qk_direction_by_depth(_cosines(s)[-1], _head_dim(s))), DEPTH_RULE)


@pytest.mark.claim("G.qk-dot-grows")
@pytest.mark.models(all_of=SERIES)
def test_qk_dot_grows(entry, claim):
    """G §5, Fig. 14: the magnitude of Q̄_s·K̄_s grows along training.

    Per seed: holds if |Q̄·K̄| at the last checkpoint exceeds its step-0 value for a significant majority of heads
    and Spearman rho(step, mean |Q̄·K̄|) > 0 with one-sided p < 0.05. Over the seeds: a sign test.
    """
    claim.conclude_over_seeds(_per_seed(claim, lambda e, s: qk_dot_grows(
        s.steps, head_dots(s.stacked("q_mean"), s.stacked("k_mean")), seed=claim.seed_for(f"spearman:{e.id}"))),
        DOT_RULE)


@pytest.mark.claim("G.attention-entropy-decays")
@pytest.mark.models(all_of=SERIES)
def test_attention_entropy_decays(entry, claim):
    """G §5, Fig. 15: mean attention entropy decays along training in every layer; the first layers stay sharper
    than the last.

    Per seed: holds if every layer's mean entropy decreases along the checkpoints (one-sided Spearman, p < 0.05)
    and at the last checkpoint the first half of layers' heads have lower entropies than the last half's (one-sided
    Mann-Whitney U). Over the seeds: a sign test.
    """
    claim.conclude_over_seeds(_per_seed(claim, lambda e, s: entropy_decays(
        s.steps, s.stacked("entropy"), seed=claim.seed_for(f"spearman:{e.id}"))), ENTROPY_RULE)


@pytest.mark.claim("G.qk-svd-projections")
@pytest.mark.models(all_of=SERIES)
def test_qk_svd_projections(entry, claim):
    """G §5 Fig. 11-12, App. C Fig. 19-22: projected on the first singular direction of Q_s ∪ K_s over all steps
    (and of K_s only, of Q_s only), Q̄_s and K̄_s drift away from the origin along training.

    The SVD is exact: the union's right singular vectors are the eigenvectors of the summed uncentred second
    moments (G sampled 20% of the vectors). Per seed: holds if, for every basis, a significant majority of heads
    (one-sided sign test) have both |projections| larger at the last checkpoint than at the first. Over the seeds:
    a sign test.
    """
    claim.conclude_over_seeds(_per_seed(claim, lambda e, s: qk_projections_grow(
        s.stacked("q_mean"), s.stacked("k_mean"), s.stacked("q_moment"), s.stacked("k_moment"))), PROJECTION_RULE)


@pytest.mark.claim("G.qk-align-across-seeds")
@pytest.mark.models(all_of=SERIES)
def test_qk_align_across_seeds(entry, claim):
    """G App. D, Fig. 23: the trends hold across seeds (MultiBERTs seeds 0-4; offline, the miniatures' seeds).

    One computation per family of seeds: G.qk-means-align on every seed, decided by the sign test over the seeds
    (the rule of every claim over seeds; G.qk-means-align reports the same per-seed numbers).
    """
    claim.conclude_over_seeds(_per_seed(claim, lambda e, s: qk_means_align(_cosines(s), _head_dim(s))),
                              f"G.qk-means-align ({ALIGN_RULE})")
