"""Tour 22: `aniso run M --n-sequences 8` (aniso stats's option given to aniso run) was refused as an unrecognized
argument without the way to give it: aniso run takes its settings after `--`, as pytest options."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("given, said", [(["--n-sequences", "8"], "-- --aniso-n-sequences 8"),
                                         (["--n-sequences=8"], "-- --aniso-n-sequences 8"),
                                         (["--seed", "3"], "-- --aniso-seed 3"),
                                         (["--no-cache"], "-- --aniso-no-cache")])
def test_a_setting_given_to_aniso_run_as_its_own_option_names_the_way(clean_env, refused_line, given, said):
    line = refused_line(["run", "all-MiniLM-L6-v2", *given])
    assert line.startswith(f"aniso run: unrecognized argument") and \
        f"aniso run takes the settings after --, as pytest options: aniso run MODEL {said}" in line, line


def test_an_option_that_is_no_setting_keeps_its_did_you_mean(clean_env, refused_line):
    line = refused_line(["run", "all-MiniLM-L6-v2", "--clams", "G."])
    assert "did you mean --claims?" in line and "settings after --" not in line, line
