"""A layer with fewer than 2 vectors has no pair to take avg cos over: a CNN pools one photograph into one vector,
so ``ANISO_N_IMAGES=1`` gave a traceback under ``aniso extract`` and a line naming no setting under ``aniso stats``.
It is refused in one line naming the setting that counts the inputs."""

import os
from types import SimpleNamespace

import pytest

from aniso.stats.pipeline import InputsRefused, _check_two_vectors


def _stats(*counts):
    return SimpleNamespace(layers=[SimpleNamespace(n_nonzero=c, count=c, n_zero=0, spread=0.5) for c in counts],
                           layer_names=[str(i) for i in range(len(counts))])


def test_a_layer_of_one_vector_is_refused_naming_the_setting():
    with pytest.raises(InputsRefused, match=r"^cnn: 1 non-zero vector\(s\) in a layer .* \(setting n_images\): avg "
                                            r"cos needs at least 2; give more photographs$"):
        _check_two_vectors("cnn", SimpleNamespace(inputs="vision"), _stats(4, 1, 4))
    _check_two_vectors("cnn", SimpleNamespace(inputs="vision"), _stats(2, 2))  # two are enough


@pytest.mark.skipif(not os.environ.get("ANISO_IMAGE_DIR"), reason="needs the photographs (ANISO_IMAGE_DIR)")
@pytest.mark.parametrize("command", ["stats", "extract"])
def test_one_photograph_for_a_cnn_is_one_line_through_stats_and_extract(command, tmp_path, monkeypatch, capsys):
    from aniso.cli import main

    monkeypatch.setenv("ANISO_N_IMAGES", "1")
    monkeypatch.setenv("ANISO_CACHE_DIR", str(tmp_path / "cache"))
    assert main([command, "efficientnet-lite0"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "(setting n_images)" in lines[0] and "efficientnet-lite0" in lines[0], lines
