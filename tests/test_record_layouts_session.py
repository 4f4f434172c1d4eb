"""The end of a run computes what `aniso record` of its results would leave of each row it took (the rows'
digests, which `aniso record` checks later): a stale record written by hand as a block mapping, or as a flow mapping
wrapped onto two lines (valid YAML, read by every command), is rewritten there as anywhere, and a registry that
cannot be rewritten leaves the digests out; neither loses the run's results."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from aniso.judge.results import ClaimResult, RecordDrift
from aniso.session import AnisoSession

ROW = ("models:\n- id: my-bert\n  expected:\n    G.token-nlp-anisotropic:\n      verdict: holds\n"
       "      source: measured\n      measured:{}\n      reason: 'avg cos {{max_avg_cos:.2f}}'\n")
STALE = ClaimResult(claim_id="G.token-nlp-anisotropic", paper="G", section="", figure="", statement="",
                    model_id="my-bert", test="t", measured={"max_avg_cos": 0.25634, "q95": 0.09},
                    expected={"measured": {"max_avg_cos": 0.3, "q95": 0.08395}},
                    record_drift=[RecordDrift(key="max_avg_cos")])


class _Registry(list):
    path = None


@pytest.mark.parametrize("measured", ["\n        max_avg_cos: 0.3\n        q95: 0.08395",
                                      " {max_avg_cos: 0.3,\n        q95: 0.08395}"], ids=["block", "wrapped flow"])
def test_the_run_end_digests_a_stale_record_in_a_block_or_wrapped_layout(tmp_path, measured):
    path = tmp_path / "r.yaml"
    path.write_text(ROW.format(measured))
    registry = _Registry([SimpleNamespace(id="my-bert")])
    registry.path = path
    digests = AnisoSession._row_digests(SimpleNamespace(registry=registry, twin=None, results=[STALE]))
    assert digests is not None and digests["my-bert"][0] != digests["my-bert"][1]  # the record would be rewritten


def test_a_registry_that_cannot_be_rewritten_leaves_the_digests_out_not_the_run(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text(ROW.format(" {max_avg_cos: 0.3, q95: 0.08395}") + "  - [unclosed\n")  # edited since: no YAML
    registry = _Registry([SimpleNamespace(id="my-bert")])
    registry.path = path
    assert AnisoSession._row_digests(SimpleNamespace(registry=registry, twin=None, results=[STALE])) is None
