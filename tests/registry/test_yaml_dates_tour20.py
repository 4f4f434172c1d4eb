"""Tour 20: `family: 2024-01-01` (YAML reads a date) got "Input should be a valid string" without the hint the
yes/no and number cases get."""

from __future__ import annotations

import pytest

from aniso.registry.entries import RegistryError, load_registry


def test_a_date_where_text_is_due_says_what_yaml_read(tmp_path):
    path = tmp_path / "models.yaml"
    path.write_text("models:\n- id: x\n  source: {kind: local, path: ./m}\n  modality: text\n  granularity: subword\n"
                    "  architecture: transformer\n  role: encoder\n  family: 2024-01-01\n")
    with pytest.raises(RegistryError, match=r"family: Input should be a valid string \(YAML reads the unquoted value "
                                            r"as the date 2024-01-01; quote it to give it as text\)"):
        load_registry(path)


def test_a_models_config_given_as_the_registry_is_named(tmp_path):
    from aniso.registry.entries import NotARegistry

    path = tmp_path / "config.json"
    path.write_text('{"_name_or_path": "m", "architectures": ["BertModel"], "model_type": "bert", "hidden_size": 32}')
    with pytest.raises(NotARegistry, match=r"config\.json is a model's config \(a transformers config\.json"):
        load_registry(path)
