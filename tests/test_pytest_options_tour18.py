"""What the pytest and API doors said of a setting option given in a form they do not take: `--ANISO-…` (upper case)
after `--` got pytest's "file or directory not found"; '--aniso-n-sequences 8' quoted as one word was said to be "given
after `--`" on a line with no `--`; a second `--` before an option (`aniso run M -- -- --aniso-…`, or `--` in
run_claims' pytest_args) got "did you mean" the very option given."""

from __future__ import annotations

import pytest

from aniso.api import _setting_options
from aniso.common.settings import options_taken_as_paths


def test_pytest_file_arguments_that_are_options_in_another_form():
    assert options_taken_as_paths(["claims", "--ANISO-n-sequences", "8"]) == (
        "--ANISO-n-sequences: the setting options are lower case, --aniso-n-sequences; pytest took this one for a "
        "file to collect")
    assert options_taken_as_paths(["claims", "--aniso-n-sequences 8"]) == (
        "'--aniso-n-sequences 8' is an option and its value quoted as one word; write them apart, "
        "--aniso-n-sequences 8 (pytest took it for a file to collect)")


def test_a_second_separator_before_an_option_is_named():
    with pytest.raises(ValueError, match=r"^--aniso-n-sequences follows a second `--` among the pytest arguments, "
                                         r"which makes it a file for pytest to collect: give the options without it"):
        _setting_options(["--", "--aniso-n-sequences", "8"])
    assert _setting_options(["--aniso-n-sequences", "8"]) == {"n_sequences": "8"}
