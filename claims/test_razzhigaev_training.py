"""Razzhigaev et al. 2024 §4.2-4.3, Fig. 2-4: anisotropy and intrinsic dimension along training.

Every registry entry with a checkpoint series is measured at each checkpoint on the run's text corpus: per layer,
the batch-wise SVD anisotropy (R §2.3: batches of ``svd_batch_size`` >= 4096 vectors, mean over batches) and the
TwoNN intrinsic dimension over shuffled batches of the same size (R §2.4: mean ± std), then averaged over layers
(layer 0, the embedding output, included). Each claim is decided per family of seeds, from all its seeds together
(a sign test, :func:`aniso.judge.training_rules.over_seeds`), each seed's numbers beside the verdict.
"""

from __future__ import annotations

import numpy as np
import pytest

from aniso.stats.dynamics import TWONN_BATCHES
from aniso.sources import InputsMissing
from aniso.judge.training_rules import GROWS_RULE, RISE_FALL_RULE, grows_then_stabilises, rises_then_falls


@pytest.mark.claim("R.decoder-anisotropy-grows")
@pytest.mark.models(all_of=("checkpoints", "text", "decoder"))
def test_decoder_anisotropy_grows(entry, claim):
    """R §4.2, Fig. 3-4: in decoders, anisotropy grows as training proceeds, then stabilises.

    Per seed: holds if the mean-over-layers SVD anisotropy has Spearman rho(step, value) > 0 over the checkpoints
    with one-sided permutation p < 0.05, and its range over the last third of checkpoints is smaller than over the
    first third. Over the seeds: a sign test.
    """
    def rule(e, series):
        values = series.layer_metric("svd_anisotropy_batch_mean").mean(1)
        result = grows_then_stabilises(series.steps, values, seed=claim.seed_for(f"spearman:{e.id}"))
        result.measured["steps"] = series.steps.tolist()
        return result

    claim.conclude_over_seeds({e.id: rule(e, s) for e, s in claim.seeds()}, GROWS_RULE)


@pytest.mark.claim("R.id-expands-then-compresses")
@pytest.mark.models(all_of=("checkpoints", "text"))
def test_id_expands_then_compresses(entry, claim):
    """R §4.3, Fig. 2: the mean-over-layers TwoNN intrinsic dimension rises early in training, then falls.

    Per seed: holds if the curve over checkpoints has its maximum strictly inside, significantly above the first
    value, and the last value significantly below it (one-sided Welch t-tests over the TwoNN batches). Over the
    seeds: a sign test.
    """
    def rule(e, series):
        values = series.layer_metric("twonn_batch_mean")
        if not np.isfinite(values).all():
            claim.skip(InputsMissing(f"{e.id}: the text sample has fewer than {TWONN_BATCHES} x "
                                     f"{claim.settings.svd_batch_size} tokens, too few for the batch-wise TwoNN "
                                     "(settings n_sequences, max_length)"))
        result = rises_then_falls(values.mean(1), series.layer_metric("twonn_batch_std").mean(1),
                                  int(series.layer_metric("n_twonn_batches").min()))
        result.measured["steps"] = series.steps.tolist()
        return result

    claim.conclude_over_seeds({e.id: rule(e, s) for e, s in claim.seeds()}, RISE_FALL_RULE)
