"""Four answers of the Python API that passed for success or quoted numbers the caller never gave: a
``ClaimResults`` was true whatever its exit code (``assert aniso.check(...)`` passed a run with nothing measured), a
check of a claim that does not apply to the model returned exit code 3 without a word, ``metrics.Correlation`` took a
coefficient of 3 and a p-value of 2, and a gram refused as not symmetric was described in internally rescaled
numbers."""

from __future__ import annotations

import numpy as np
import pytest

import aniso
import aniso.metrics as M
from aniso.api import ClaimResults


def test_claim_results_have_no_truth_value(tmp_path):
    results = ClaimResults(tmp_path / "results.json", None, 3, "m")
    with pytest.raises(TypeError, match=r"^the truth value of a ClaimResults is ambiguous: test its exit_code \(0: "):
        bool(results)


def test_a_check_that_measures_nothing_says_why(clean_env, monkeypatch):
    monkeypatch.setenv("ANISO_CORPUS", str(clean_env / "corpus.txt"))
    (clean_env / "corpus.txt").write_text("".join(f"paragraph {i} of a small corpus, with words {i * 7}.\n"
                                                   for i in range(40)))
    with pytest.warns(RuntimeWarning, match=r"^check all-MiniLM-L6-v2: nothing measured: no selected claim applies "
                                            r"to all-MiniLM-L6-v2; exit_code 3$"):
        results = aniso.check("all-MiniLM-L6-v2", "G.char-nlp-anisotropic", settings={"n_sequences": 16})
    assert results.exit_code == 3


@pytest.mark.parametrize("args, said", [
    (("spearman", 3.0, 0.5, 5), "coefficient: 3.0; a coefficient lies in [-1, 1]"),
    (("spearman", 0.3, 2.0, 5), "p_value: 2.0; a p value lies in [0, 1]"),
    (("spearman", 0.3, -1.0, 5), "p_value: -1.0; a p value lies in [0, 1]"),
    (("foo", 0.5, 0.1, 4), "method: 'foo'; a correlation is 'spearman' or 'pearson'"),
    (("pearson", 0.5, 0.1, -4), "n: -4; give a whole number >= 0"),
])
def test_a_correlation_of_impossible_values_is_refused(args, said):
    with pytest.raises(ValueError) as refused:
        M.Correlation(*args)
    assert str(refused.value).startswith(said), str(refused.value)
    assert np.isnan(M.correlation_test([1, 1, 1, 1], [1, 2, 3, 4]).coefficient)  # a constant series: NaN, as before


@pytest.mark.parametrize("fn", [M.svd_anisotropy_from_moments, M.isoscore_from_moments])
def test_an_asymmetric_gram_is_described_in_the_callers_numbers(fn):
    x = np.random.default_rng(0).normal(size=(20, 5)) + 1
    gram = x.T @ x + np.triu(np.ones((5, 5)), 1) * 50
    with pytest.raises(ValueError) as refused:
        fn(x.sum(0), gram, 20)
    assert str(refused.value) == (f"gram is not symmetric (largest asymmetry 50, largest entry "
                                  f"{np.abs(gram).max():.3g}); give Σ x xᵀ")


@pytest.mark.parametrize("d, q", [(10, 1e-300), (10, 1e-200), (13, 1e-121), (7, 1e-130), (9, 1e-250)])
def test_the_isotropic_quantile_far_in_the_tail_is_a_number(d, q):
    """scipy's betaincinv gives NaN there (q <= ~1e-120 at d of 7 to 13), which was passed on as the quantile."""
    t = M.isotropic_cos_quantile(d, q)
    assert -1.0 <= t <= M.isotropic_cos_quantile(d, 1e-50) < 0


def test_the_tail_formula_agrees_with_scipy_where_both_work():
    import math

    from scipy.special import betaincinv, betaln

    for d in (7, 10, 13):
        a, q = (d - 1) / 2, 1e-40
        x = math.exp((math.log(q) + math.log(a) + float(betaln(a, a))) / a)
        assert x == pytest.approx(float(betaincinv(a, a, q)), rel=1e-6)


@pytest.mark.parametrize("coefficient, p_value", [(float("nan"), 0.01), (0.5, float("nan"))])
def test_a_correlation_with_one_of_its_two_numbers_nan_is_refused(coefficient, p_value):
    """A constant series gives both NaN; one alone was accepted, and as_dict reported a p-value of no coefficient."""
    with pytest.raises(ValueError, match=r"NaN together or neither \(NaN for a constant series"):
        M.Correlation("spearman", coefficient, p_value, 10)
