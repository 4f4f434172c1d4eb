"""A bootstrap of more resamples than this machine's memory holds (ANISO_N_BOOTSTRAP=10000000, within the bounds):
refused when the settings are validated, in one line naming the setting and the memory (was a numpy allocation
error as a claim error, once every statistic was extracted). A row of docs/bad-input.md."""

from __future__ import annotations

import pytest

from aniso.common import settings as settings_module
from aniso.common.settings import BOOTSTRAP_UNITS, SettingError, Settings, bootstrap_bytes


def test_the_bootstrap_units_are_the_statistics_input_groups():
    from aniso.stats.parts.inputs import INPUT_GROUPS

    assert BOOTSTRAP_UNITS == INPUT_GROUPS


def test_a_bootstrap_larger_than_memory_is_refused_naming_the_setting(monkeypatch):
    monkeypatch.setattr(settings_module, "physical_memory", lambda: 16 * 2**30)
    largest = 16 * 2**30 // bootstrap_bytes(1, 8192)
    with pytest.raises(SettingError) as exc:
        Settings.from_sources({}, {"ANISO_N_BOOTSTRAP": "10000000"})
    said = str(exc.value)
    assert said.startswith(f"setting n_bootstrap (ANISO_N_BOOTSTRAP, --aniso-n-bootstrap) must be at most {largest} "
                           "here, got 10000000: the bootstrap resamples of one layer of width up to "
                           "second_order_max_dim 8192 over up to 256 inputs would take "), said
    assert said.endswith("and this machine has 16.0 GiB") and "\n" not in said, said
    assert Settings.from_sources({}, {"ANISO_N_BOOTSTRAP": str(largest)}).n_bootstrap == largest


@pytest.mark.parametrize("how", ["variable", "option"])
def test_aniso_run_refuses_it_before_extraction(clean_env, refused_line, monkeypatch, how):
    argv = ["run", "all-MiniLM-L6-v2", "--claims", "G.token-nlp-anisotropic", "--", "--aniso-n-sequences", "8"]
    if how == "variable":
        monkeypatch.setenv("ANISO_N_BOOTSTRAP", "10000000")
    else:
        argv += ["--aniso-n-bootstrap", "10000000"]
    line = refused_line(argv)
    assert "n_bootstrap" in line and "must be at most" in line and "this machine has" in line, line
