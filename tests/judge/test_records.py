"""A record's numbers as data (aniso.judge.records): tolerances per statistic, and what makes a record stale."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aniso.judge.records import stale_numbers, tolerance_of


def test_tolerances_are_chosen_by_the_key():
    assert tolerance_of("p_value").name == tolerance_of("spearman_p").name == "p-value"
    assert tolerance_of("contrast").name == "real number"
    assert tolerance_of("depth_spearman_p").name == "p-value"
    assert tolerance_of("p_method").name == "real number"  # a word: compared as equal, whatever the table says


def test_numbers_within_tolerance_are_not_stale_and_the_issues_cases_are():
    """mini-resnet-s0's record said rho 0.5, p 0.39 where the run measured 0.6, 0.285; its CNN record 0.521 where the
    run measured 0.539: each is stale; 1% relative and a p-value's 0.002 absolute are not."""
    recorded = {"coefficient": 0.5, "p_value": 0.39, "max_avg_cos": 0.521, "n_layers": 5, "flattest": "gemma"}
    assert [d.key for d in stale_numbers(recorded, {"coefficient": 0.6, "p_value": 0.285, "max_avg_cos": 0.539,
                                                    "n_layers": 5, "flattest": "gemma"})] == \
        ["coefficient", "p_value", "max_avg_cos"]
    assert stale_numbers(recorded, {"coefficient": 0.5049, "p_value": 0.3919, "max_avg_cos": 0.5261, "n_layers": 5,
                                    "flattest": "gemma"}) == []
    drift = stale_numbers({"n_layers": 5, "flattest": "gemma"}, {"n_layers": 6, "flattest": "smollm2"})
    assert [(d.key, d.tolerance) for d in drift] == [("n_layers", "equal (a count)"), ("flattest", "equal")]


def test_nested_values_and_missing_keys():
    recorded = {"decoder_contrasts": {"a": 0.3, "b": 0.5}, "per_layer": [0.1, 0.2], "gone": 1.0}
    drift = stale_numbers(recorded, {"decoder_contrasts": {"a": 0.3, "b": 0.6}, "per_layer": [0.1, 0.2, 0.3]})
    assert [d.key for d in drift] == ["decoder_contrasts.b", "per_layer", "gone"]
    assert drift[-1].measured is None and "not reported" in str(drift[-1])
    assert stale_numbers(None, {"x": 1}) == [] and stale_numbers({}, {"x": 1}) == []


@given(st.floats(-1e6, 1e6, allow_nan=False), st.floats(-0.0099, 0.0099))
def test_a_relative_change_under_one_percent_is_never_stale(value, change):
    assert stale_numbers({"x": value}, {"x": value * (1 + change)}) == []


@given(st.floats(0.01, 1e6), st.floats(0.0101, 10))
def test_a_relative_change_over_one_percent_is_always_stale(value, change):
    assert len(stale_numbers({"x": value}, {"x": value * (1 + change)})) == 1


def test_nan_equals_nan_only():
    assert stale_numbers({"x": math.nan}, {"x": math.nan}) == []
    assert len(stale_numbers({"x": math.nan}, {"x": 0.1})) == 1
    assert len(stale_numbers({"x": 0.1}, {"x": math.nan})) == 1


def test_refresh_rewrites_only_the_stale_records_measured_line():
    """`aniso record`: the stale numbers of a record are replaced by the run's (4 significant digits), the rest of
    the file is kept byte for byte, a key the run does not report is kept and named, and the reason renders anew."""
    import yaml

    from aniso.judge.records import refresh_records
    from aniso.judge.results import ClaimResult, RecordDrift

    text = """# a comment
models:
- id: m
  expected:
    G.drift-correlation-spearman:
      verdict: does-not-hold
      measured: {coefficient: 0.5, p_value: 0.39, extra: 1.0}
      reason: 'rho = {coefficient:.1f}, p = {p_value:.2f}'
    X.rogue-dimensions:
      verdict: does-not-hold
      measured: {max_top3_share: 0.18}
      reason: x
- id: other
  expected:
    G.drift-correlation-spearman:
      verdict: does-not-hold
      measured: {coefficient: 0.5}
      reason: y
"""
    stale = ClaimResult(claim_id="G.drift-correlation-spearman", paper="G", section="", figure="", statement="",
                        model_id="m", test="t", measured={"coefficient": 0.6000001, "p_value": 0.28472},
                        expected={"measured": {"coefficient": 0.5, "p_value": 0.39, "extra": 1.0}},
                        record_drift=[RecordDrift(key="coefficient"), RecordDrift(key="p_value")])
    fresh = stale.model_copy(update={"claim_id": "X.rogue-dimensions", "record_drift": []})
    new, notes = refresh_records(text, [stale, fresh])
    data = yaml.safe_load(new)
    assert data["models"][0]["expected"]["G.drift-correlation-spearman"]["measured"] == \
        {"coefficient": 0.6, "p_value": 0.2847, "extra": 1.0}
    assert data["models"][1]["expected"]["G.drift-correlation-spearman"]["measured"] == {"coefficient": 0.5}
    assert new.replace("{coefficient: 0.6, p_value: 0.2847, extra: 1.0}", "{coefficient: 0.5, p_value: 0.39, extra: 1.0}") == text
    assert notes == ["m G.drift-correlation-spearman: coefficient 0.5 -> 0.6; p_value 0.39 -> 0.2847; not reported "
                     "by the run, left as recorded: extra"]
    with pytest.raises(ValueError, match="nowhere G.drift"):
        refresh_records(text, [stale.model_copy(update={"model_id": "nowhere"})])


def test_a_monte_carlo_p_value_is_held_to_the_precision_its_orderings_are_sized_for():
    """gemma-3-270m's Pearson p was recorded 0.192 and measured 0.1898 with another seeded null sample: within the
    10% relative precision of a Monte Carlo p-value, not stale; the same change of an exact p-value is stale, and a
    Monte Carlo p-value 20% off is stale too."""
    from aniso.metrics import MC_RELATIVE_ERROR

    mc = "Monte Carlo: 1,598,400 seeded orderings (seed 1), p >= 2/1,598,401"
    assert stale_numbers({"p_value": 0.192, "spearman_p": 0.57}, {"p_value": 0.1898, "spearman_p": 0.5784,
                                                                  "p_method": mc}) == []
    assert tolerance_of("spearman_p", monte_carlo=True).relative == MC_RELATIVE_ERROR
    assert tolerance_of("coefficient", monte_carlo=True).name == "real number"
    exact = stale_numbers({"p_value": 0.192}, {"p_value": 0.1898, "p_method": "exact: all 40,320 orderings"})
    assert [d.key for d in exact] == ["p_value"]
    off = stale_numbers({"depth_spearman_p": 0.2}, {"depth_spearman_p": 0.24, "depth_p_method": mc})
    assert [(d.key, d.tolerance.split(":")[0]) for d in off] == [("depth_spearman_p", "Monte Carlo p-value")]


_OTHER = ("- id: other\n  expected:\n    G.token-nlp-anisotropic:\n      verdict: holds\n"
          "      measured: {max_avg_cos: 0.3}\n      reason: y\n")
_LAYOUTS = {  # a stale record of row my-bert as written by hand -> as aniso record leaves it
    "block mapping over two lines": (
        "- id: my-bert\n  expected:\n    G.token-nlp-anisotropic:\n      verdict: holds\n      measured:\n"
        "        max_avg_cos: 0.3\n        q95: 0.08395\n      reason: x\n",
        "- id: my-bert\n  expected:\n    G.token-nlp-anisotropic:\n      verdict: holds\n"
        "      measured: {max_avg_cos: 0.2563, q95: 0.09}\n      reason: x\n"),
    "flow mapping wrapped onto two lines": (
        "- id: my-bert\n  expected:\n    G.token-nlp-anisotropic:\n      verdict: holds\n"
        "      measured: {max_avg_cos: 0.3,\n        q95: 0.08395}\n      reason: x\n",
        "- id: my-bert\n  expected:\n    G.token-nlp-anisotropic:\n      verdict: holds\n"
        "      measured: {max_avg_cos: 0.2563, q95: 0.09}\n      reason: x\n"),
    "a trailing comment": (
        "- id: my-bert\n  expected:\n    G.token-nlp-anisotropic:\n      verdict: holds\n"
        "      measured: {max_avg_cos: 0.3, q95: 0.08395}   # from my notebook\n      reason: x\n",
        "- id: my-bert\n  expected:\n    G.token-nlp-anisotropic:\n      verdict: holds\n"
        "      measured: {max_avg_cos: 0.2563, q95: 0.09}   # from my notebook\n      reason: x\n"),
    "a comment on the id line": (
        "- id: my-bert   # the MiniLM copy\n  expected:\n    G.token-nlp-anisotropic:\n      verdict: holds\n"
        "      measured: {max_avg_cos: 0.3, q95: 0.08395}\n      reason: x\n",
        "- id: my-bert   # the MiniLM copy\n  expected:\n    G.token-nlp-anisotropic:\n      verdict: holds\n"
        "      measured: {max_avg_cos: 0.2563, q95: 0.09}\n      reason: x\n"),
    "keys in another order": (
        "- source: {kind: local, path: ./m}\n  id: my-bert\n  expected:\n    G.token-nlp-anisotropic:\n"
        "      measured: {max_avg_cos: 0.3, q95: 0.08395}\n      verdict: holds\n      reason: x\n",
        "- source: {kind: local, path: ./m}\n  id: my-bert\n  expected:\n    G.token-nlp-anisotropic:\n"
        "      measured: {max_avg_cos: 0.2563, q95: 0.09}\n      verdict: holds\n      reason: x\n"),
    "a quoted id": (
        "- id: \"my-bert\"\n  expected:\n    G.token-nlp-anisotropic:\n      verdict: holds\n"
        "      measured: {max_avg_cos: 0.3, q95: 0.08395}\n      reason: x\n",
        "- id: \"my-bert\"\n  expected:\n    G.token-nlp-anisotropic:\n      verdict: holds\n"
        "      measured: {max_avg_cos: 0.2563, q95: 0.09}\n      reason: x\n"),
    "a record on one flow line": (
        "- id: my-bert\n  expected:\n    G.token-nlp-anisotropic: {verdict: holds, source: measured, measured: "
        "{max_avg_cos: 0.3, q95: 0.08395}, reason: 'avg cos {max_avg_cos:.2f}'}\n",
        "- id: my-bert\n  expected:\n    G.token-nlp-anisotropic: {verdict: holds, source: measured, measured: "
        "{max_avg_cos: 0.2563, q95: 0.09}, reason: 'avg cos {max_avg_cos:.2f}'}\n"),
    "an anchored mapping": (
        "- id: my-bert\n  expected:\n    G.token-nlp-anisotropic:\n      verdict: holds\n"
        "      measured: &m {max_avg_cos: 0.3, q95: 0.08395}\n      reason: x\n",
        "- id: my-bert\n  expected:\n    G.token-nlp-anisotropic:\n      verdict: holds\n"
        "      measured: &m {max_avg_cos: 0.2563, q95: 0.09}\n      reason: x\n"),
    "a block mapping with comments inside": (
        "- id: my-bert\n  expected:\n    G.token-nlp-anisotropic:\n      verdict: holds\n      measured:  # seed 1\n"
        "        max_avg_cos: 0.3  # layer 3\n        q95: 0.08395\n\n      # the reason renders them\n"
        "      reason: x\n",
        "- id: my-bert\n  expected:\n    G.token-nlp-anisotropic:\n      verdict: holds\n"
        "      measured: {max_avg_cos: 0.2563, q95: 0.09}  # seed 1  # layer 3\n\n      # the reason renders them\n"
        "      reason: x\n"),
}


def _stale_bert():
    from aniso.judge.results import ClaimResult, RecordDrift

    return ClaimResult(claim_id="G.token-nlp-anisotropic", paper="G", section="", figure="", statement="",
                       model_id="my-bert", test="t", measured={"max_avg_cos": 0.25634, "q95": 0.09},
                       expected={"measured": {"max_avg_cos": 0.3, "q95": 0.08395}},
                       record_drift=[RecordDrift(key="max_avg_cos")])


@pytest.mark.parametrize("layout", list(_LAYOUTS))
def test_refresh_finds_the_record_in_any_layout_and_keeps_the_rest_of_the_file(layout):
    """`aniso record` finds a stale record's ``measured`` through the YAML's own positions, whatever its layout (a
    block mapping, a flow mapping wrapped onto two lines, a record on one flow line, a comment after it or on the
    row's id line, the row's keys in another order, a quoted id), rewrites it as a one-line flow mapping and leaves
    every other byte of the file as it was."""
    import yaml

    from aniso.judge.records import refresh_records

    before, after = _LAYOUTS[layout]
    head = "# registry\nrecorded_profile: quick\nmodels:\n"
    new, notes = refresh_records(head + before + _OTHER, [_stale_bert()])
    assert new == head + after + _OTHER
    assert yaml.safe_load(new)["models"][0]["expected"]["G.token-nlp-anisotropic"]["measured"] == \
        {"max_avg_cos": 0.2563, "q95": 0.09}
    assert notes == ["my-bert G.token-nlp-anisotropic: max_avg_cos 0.3 -> 0.2563; q95 0.08395 -> 0.09"]


def _aliased(anchored: str, aliasing: str) -> str:
    """A registry of two rows whose records share one ``measured``: row ``anchored`` holds it (``&m``), row
    ``aliasing`` names it (``*m``)."""
    return (f"models:\n- id: {anchored}\n  expected:\n    G.token-nlp-anisotropic:\n      verdict: holds\n"
            "      measured: &m {max_avg_cos: 0.3, q95: 0.08395}\n      reason: y\n"
            f"- id: {aliasing}\n  expected:\n    G.token-nlp-anisotropic:\n      verdict: holds\n"
            "      measured: *m\n      reason: x\n")


def test_a_measured_alias_is_named_not_rewritten():
    """A record whose ``measured`` is an alias of another record's numbers is not rewritten (that would change the
    other record too): one line naming the model and the claim."""
    from aniso.judge.records import refresh_records

    text = _aliased("other", "my-bert")
    with pytest.raises(ValueError, match=r"^my-bert G.token-nlp-anisotropic: its 'measured' is an alias"):
        refresh_records(text, [_stale_bert()])


@pytest.mark.parametrize("id_line", ["- id: my-bert   # the MiniLM copy", "- id: \"my-bert\"",
                                     "- source: {kind: local, path: ./m}\n  id: my-bert"],
                         ids=["id line comment", "quoted id", "keys reordered"])
def test_a_new_finding_is_added_to_its_row_in_any_layout(id_line):
    """`aniso record` of a new finding adds the record under the model's own row, found through the YAML's own
    positions whatever its id line looks like, never a second row of the same id; the rest stays byte for byte."""
    import yaml

    from aniso.judge.records import record_new_findings
    from aniso.judge.results import ClaimResult

    text = f"models:\n{id_line}\n  family: f\n" + _OTHER
    found = ClaimResult(claim_id="G.token-nlp-anisotropic", paper="G", section="", figure="", statement="",
                        model_id="my-bert", test="t", verdict="does not hold", measured={"max_avg_cos": 0.05})
    new, notes = record_new_findings(text, [found], [{"id": "my-bert", "family": "f"}])
    rows = yaml.safe_load(new)["models"]
    assert [r["id"] for r in rows] == ["my-bert", "other"], new
    assert rows[0]["expected"]["G.token-nlp-anisotropic"]["measured"] == {"max_avg_cos": 0.05}
    assert new.startswith(f"models:\n{id_line}\n  family: f\n  expected:\n") and new.endswith(_OTHER)
    assert notes == ["my-bert G.token-nlp-anisotropic: recorded as does-not-hold (a new finding)"]


_MERGED = ("models:\n- &row\n  id: my-bert\n  family: f\n  expected:\n    G.token-nlp-anisotropic:\n"
           "      verdict: holds\n      measured: {max_avg_cos: 0.3, q95: 0.08395}\n      reason: x\n"
           "- <<: *row\n  id: my-bert-2\n")


def test_a_record_shared_through_a_merge_key_is_named_not_rewritten():
    """Row 2 written as `<<: *row` shares row 1's expected: rewriting row 1's stale record changed row 2's too
    (0.2 -> 0.2665), which no run of row 2 measured, and the command said one record was rewritten."""
    from aniso.judge.records import refresh_records

    with pytest.raises(ValueError, match=r"^my-bert G.token-nlp-anisotropic: this record is shared with the row\(s\) "
                                         r"'my-bert-2' through a YAML anchor or merge key \(<<: \*name, \*name\): one "
                                         r"YAML node holds the record of them all, so it cannot be written for this "
                                         r"row alone; write the record out on each row"):
        # (whether or not the run measured the other rows too: the words claim no more than the file shows)
        refresh_records(_MERGED, [_stale_bert()])
    # a row that merges row 1 but sets its own expected takes none of row 1's: row 1's record is rewritten
    own = _MERGED + "  expected: {}\n"
    new, _ = refresh_records(own, [_stale_bert()])
    assert "measured: {max_avg_cos: 0.2563, q95: 0.09}" in new


def test_an_anchored_record_aliased_by_another_row_is_named_not_rewritten():
    """The row holding the anchor of numbers another record aliases: rewritten in place (the anchor kept), the
    other record changed with it."""
    from aniso.judge.records import refresh_records

    text = _aliased("my-bert", "other")
    with pytest.raises(ValueError, match=r"shared with the row\(s\) 'other'"):
        refresh_records(text, [_stale_bert()])


def test_a_record_reached_through_a_merge_key_says_to_write_it_on_the_row():
    from aniso.judge.records import refresh_records

    stale = _stale_bert().model_copy(update={"model_id": "my-bert-2"})
    with pytest.raises(ValueError, match=r"^my-bert-2 G.token-nlp-anisotropic: the row takes its record through a "
                                         r"YAML merge key"):
        refresh_records(_MERGED, [stale])


def test_a_new_finding_is_not_added_where_a_merging_row_would_take_it():
    from aniso.judge.records import record_new_findings
    from aniso.judge.results import ClaimResult

    text = "models:\n- &row\n  id: my-bert\n  family: f\n- <<: *row\n  id: my-bert-2\n"
    found = ClaimResult(claim_id="G.token-nlp-anisotropic", paper="G", section="", figure="", statement="",
                        model_id="my-bert", test="t", verdict="does not hold", measured={"max_avg_cos": 0.05})
    with pytest.raises(ValueError, match=r"^my-bert: the row 'my-bert-2' merges this row"):
        record_new_findings(text, [found])
    with pytest.raises(ValueError, match=r"shared with the row\(s\) 'my-bert-2'"):
        record_new_findings(_MERGED.replace("G.token-nlp-anisotropic:", "G.other:"), [found])
