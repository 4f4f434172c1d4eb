"""Numbers that reach `aniso.metrics` as Python objects: an integer too large for a float64 (10**400) ended in a bare
OverflowError, and one beyond int64 but within float64 (10**20) was rounded silently, where an int64 array beyond
±2**53 is refused; a missing value of a pandas frame (`pd.NA`) was answered with advice meant for layer names."""

from __future__ import annotations

import numpy as np
import pytest

from aniso import metrics


@pytest.mark.parametrize("big", [10**400, 10**20, -(10**30)], ids=["1e400", "1e20", "-1e30"])
def test_python_integers_beyond_2_53_in_an_object_array_are_refused_naming_the_argument(big):
    with pytest.raises(ValueError, match=rf"^x: the integer {big} is beyond ±2\*\*53"):
        metrics.correlation_test([big, 2, 3, 5, 4], [1, 2, 3, 4, 5])
    with pytest.raises(ValueError, match=rf"^x: the integer {big} is beyond ±2\*\*53"):
        metrics.mean_cosine(np.array([[big, 1], [1, 2], [3, 3]], dtype=object))


def test_python_integers_within_2_53_in_an_object_array_read_exactly():
    values = np.array([[2**53, 1], [1, 2], [3, -(2**53)]], dtype=object)
    assert metrics.mean_cosine(values) == metrics.mean_cosine(np.array(values, dtype=np.float64))


def test_a_missing_value_of_a_frame_is_named_as_missing_without_the_layer_names_advice():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(np.random.default_rng(0).normal(size=(20, 4))).astype("Float64")
    frame.iloc[0, 0] = pd.NA
    with pytest.raises(ValueError, match=r"^x: <NA> \(NAType\) is no number; a missing value; drop or fill it") as info:
        metrics.mean_cosine(frame)
    assert "layers named" not in str(info.value)
    with pytest.raises(ValueError, match=r"^x: \{'a': 1\} \(dict\) is no number; give an array of numbers$"):
        metrics.mean_cosine(np.array([[{"a": 1}, 2.0], [1.0, 2.0]], dtype=object))
