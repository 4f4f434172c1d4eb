"""aniso.registry.locate given an empty setting or a value of the wrong type: one line naming the parameter."""

from pathlib import Path

import pytest

from aniso.registry.entries import RegistryError
from aniso.registry.locate import claims_folder, registry_path


def test_an_empty_registry_setting_is_said_to_be_empty():
    """registry_path(setting='') named an empty file name: "setting registry (…):  (/work) is not a file"."""
    for empty in ("", "  "):
        with pytest.raises(RegistryError, match=r"^setting registry \(ANISO_REGISTRY, --aniso-registry\) is set but "
                                                rf"empty \({empty!r}\); give the registry file, or None for "
                                                r"models\.yaml here$"):
            registry_path(setting=empty)


def test_claims_folder_given_no_path_names_the_option(tmp_path):
    """claims_folder(5, registry) was pathlib's bare "expected str, bytes or os.PathLike object, not int"."""
    for option in ("--claims-dir", "claims_dir"):
        with pytest.raises(TypeError, match=rf"^{option}: 5 \(int\); give the folder of the claim tests \(a str or "
                                            r"pathlib\.Path\), or None for claims/ beside the registry$"):
            claims_folder(5, Path(tmp_path / "models.yaml"), option)
