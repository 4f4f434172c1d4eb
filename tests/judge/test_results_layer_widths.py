"""The significance claims' margin is avg cos − q95(d) of the deciding layer (the one furthest above its own q95):
where layers differ in width (OPT-350m's last state is 512 wide, its others 1,024), that layer need not be the one
of the largest avg cos, and a results file saying so is consistent."""

from aniso.judge.results import _measured_problem
from aniso.metrics import isotropic_cos_quantile


def test_a_margin_of_another_layer_than_the_largest_avg_cos_is_consistent():
    # two 1,024-wide layers and a 512-wide last one: the last has the largest avg cos, the second (whose q95 is
    # lower) the largest margin
    q95_wide, q95_narrow = isotropic_cos_quantile(1024), isotropic_cos_quantile(512)
    layers = [0.05, 0.195, 0.2]
    assert layers[1] - q95_wide > layers[2] - q95_narrow
    m = {"max_avg_cos": 0.2, "avg_cos_per_layer": layers, "layer_of_max": "2", "q95": q95_wide, "d": 1024,
         "margin": layers[1] - q95_wide}
    assert _measured_problem(m) is None


def test_a_margin_that_is_no_layers_avg_cos_minus_q95_is_refused():
    q95 = isotropic_cos_quantile(384)
    m = {"max_avg_cos": 0.25, "avg_cos_per_layer": [0.1, 0.25], "q95": q95, "d": 384, "margin": 0.13 - q95,
         "layer_of_max": "1"}
    assert "is the avg cos of no layer" in _measured_problem(m)


def test_a_margin_above_the_largest_avg_cos_minus_q95_is_refused():
    q95 = isotropic_cos_quantile(384)
    m = {"max_avg_cos": 0.25, "q95": q95, "d": 384, "margin": 0.7}
    assert "which no layer's margin can exceed" in _measured_problem(m)
