"""`aniso stats --n-sequences 1` printed SVD anisotropy and IsoScore from 128 vectors in 384 dimensions without a
word: fewer vectors than dimensions read a layer as more anisotropic than it is (IsoScore of an isotropic cloud of
128 vectors in 384 dimensions: 0.25)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from aniso import metrics
from aniso.stats.results import rank_limited


def test_layers_with_no_more_vectors_than_dimensions_are_noted():
    few = [SimpleNamespace(n_reservoir=128, dim=384), SimpleNamespace(n_reservoir=128, dim=384)]
    (line,) = rank_limited(few)
    assert line.startswith("note: layer(s) 0-1: SVD aniso and IsoScore are measured on 128 vectors in 384 "
                           "dimensions: ") and "give more inputs" in line, line
    assert rank_limited([SimpleNamespace(n_reservoir=4096, dim=384)]) == []
    assert rank_limited([SimpleNamespace(n_reservoir=0, dim=384)]) == []  # nothing kept: the nan line says why


def test_the_note_is_about_a_real_bias():
    """The reason for the note: an isotropic cloud scores far below 1 at fewer vectors than dimensions."""
    rng = np.random.default_rng(0)
    assert metrics.isoscore(rng.normal(size=(128, 384))) < 0.3 < 0.9 < metrics.isoscore(rng.normal(size=(20_000, 384)))
