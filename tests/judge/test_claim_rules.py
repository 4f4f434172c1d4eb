"""Shared operationalisations: significant anisotropy, SVD-anisotropy profiles and their shape (R §4.1)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from aniso.judge.rules import CONTRAST, EDGE, profile_shape, svd_profile


def test_a_middle_peak_is_a_bell_and_a_flat_profile_is_not():
    bell = profile_shape(np.array([0.1, 0.3, 0.6, 0.4, 0.2]))
    assert bell["bell"] and bell["peak_layer"] == 2 and bell["contrast"] == pytest.approx((0.6 - 0.2) / 0.6)
    flat = profile_shape(np.array([0.10, 0.11, 0.12, 0.11, 0.10]))
    assert not flat["bell"] and flat["contrast"] < CONTRAST
    edge = profile_shape(np.array([0.9, 0.3, 0.2, 0.1, 0.1]))  # peak at the first layer
    assert not edge["bell"] and edge["peak_relative_depth"] == 0.0


@given(st.lists(st.floats(0.01, 1.0), min_size=3, max_size=40), st.floats(0.1, 10.0))
def test_shape_is_scale_free_and_bounded(values, scale):
    """contrast in [0, 1]; the shape does not change when the profile is scaled."""
    p = np.array(values)
    a, b = profile_shape(p), profile_shape(p * scale)
    assert 0.0 <= a["contrast"] <= 1.0
    assert a["bell"] == b["bell"] and a["peak_layer"] == b["peak_layer"]
    assert a["contrast"] == pytest.approx(b["contrast"], rel=1e-9, abs=1e-12)
    if a["bell"]:
        assert EDGE < a["peak_relative_depth"] < 1 - EDGE


def test_profile_prefers_batch_means_and_falls_back_to_exact():
    layers = [{"svd_anisotropy": 0.2, "svd_anisotropy_batch_mean": 0.25}, {"svd_anisotropy": 0.3,
                                                                          "svd_anisotropy_batch_mean": 0.35}]
    assert svd_profile(layers)[1] == "batch-wise mean"
    layers[1]["svd_anisotropy_batch_mean"] = None
    profile, estimate = svd_profile(layers)
    assert estimate == "exact" and profile.tolist() == [0.2, 0.3]
    with pytest.raises(ValueError, match="second-order"):
        svd_profile([{"svd_anisotropy": None, "svd_anisotropy_batch_mean": None}])


@pytest.mark.parametrize("bad", [np.array([0.1, 0.2]), np.zeros(5)])
def test_bad_profiles_are_refused(bad):
    with pytest.raises(ValueError):
        profile_shape(bad)


# -- attention-sink weighting and a first token fixed by construction --------------------------------------------

def test_the_per_sequence_sink_share_is_read_in_every_form_the_statistics_give():
    from aniso.judge.rules import per_sequence_share, sink_note

    sink = {"share": 0.5, "eps": 0.3, "per_head": [[0.1, 0.4], [0.5, 0.2]]}
    assert per_sequence_share(sink) is None and "not measured" in sink_note(0.5, None)
    assert per_sequence_share(dict(sink, per_sequence={"share": 0.726})) == 0.726
    assert per_sequence_share(dict(sink, per_sequence={"per_head": [[0.31, 0.4], [0.5, 0.2]]})) == 0.75
    assert per_sequence_share(dict(sink, per_sequence=[[0.31, 0.29], [0.5, 0.2]])) == 0.5
    note = sink_note(0.611, 0.726)
    assert "read by the claim: 0.611, token-weighted" in note and "per-sequence mean" in note and "0.726" in note


def test_a_first_token_cv_is_not_informative_when_every_sequence_starts_with_one_token():
    from types import SimpleNamespace

    from aniso.judge.rules import first_token_cv

    layer = SimpleNamespace(massive_first_token_cv=0.0)
    fixed = SimpleNamespace(meta={"first_token": {"fixed": True, "id": 2, "token": "<bos>", "checked": 256}})
    got = first_token_cv(fixed, layer)
    assert isinstance(got, str) and got.startswith("not informative (first token is a fixed BOS: id 2 '<bos>'")
    varied = SimpleNamespace(meta={"first_token": {"fixed": False, "id": None, "token": None, "checked": 256}})
    assert first_token_cv(varied, SimpleNamespace(massive_first_token_cv=0.12)) == 0.12
    assert first_token_cv(SimpleNamespace(meta={}), layer) == 0.0  # statistics that do not say: the value as is


def test_the_bell_margin_decides_as_the_bell_rule_does():
    """The deciding statistic of the bell claims: positive exactly when the rule says bell, and it speaks of the
    peak's position when the position decides (a high contrast at an edge is no bell)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from aniso.judge.rules import CONTRAST, EDGE, bell_margin, profile_shape

    @settings(max_examples=200, deadline=None)
    @given(st.lists(st.floats(0.01, 1.0), min_size=3, max_size=30))
    def check(values):
        shape = profile_shape(np.array(values))
        margin = bell_margin(shape)
        if abs(shape["contrast"] - CONTRAST) > 1e-12:
            assert (margin > 0) == shape["bell"] or (margin == 0 and not shape["bell"])

    check()
    edge = profile_shape(np.array([0.1, 0.9, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2]))  # peak at depth 1/9 < EDGE
    assert not edge["bell"] and edge["contrast"] > CONTRAST
    assert bell_margin(edge) == pytest.approx(1 / 9 - EDGE)
