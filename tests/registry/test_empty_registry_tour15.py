"""A registry whose field models lists nothing is named as the fault (the refusal blamed the setting models, which
the user never gave)."""

from __future__ import annotations

import pytest

from aniso.cli import main


@pytest.mark.parametrize("command", [["list", "models"], ["list"], ["stats", "m"]])
def test_a_registry_of_no_models_is_named(clean_env, capsys, command):
    registry = clean_env / "none.yaml"
    registry.write_text("models: []\n")
    assert main([*command, "--registry", str(registry)]) == 2
    err = capsys.readouterr().err.strip()
    said = (f"registry {registry}: it holds no models (its field models lists none)" if command[0] == "stats" else
            f"{registry}: holds no models (its field models lists none); a registry lists at least one model to "
            "measure")
    assert err.endswith(said), err
    assert len(err.splitlines()) == 1 and "setting models" not in err
