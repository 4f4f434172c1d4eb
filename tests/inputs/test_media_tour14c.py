"""A cap on photographs' pixels (setting max_image_pixels) below every sampled photograph: one line in pixels
(was each file's "(0.0 M), above the cap of 1e-06 M pixels" as a warning, then the same reasons again in the
refusal). Each is a row of docs/bad-input.md."""

from __future__ import annotations

import warnings

import pytest

from aniso.inputs.media import InputsUnavailable, SkippedInput, load_images


def _photos(folder, sizes):
    from PIL import Image

    for i, (w, h) in enumerate(sizes):
        Image.new("RGB", (w, h), (i * 40, 90, 200 - i * 30)).save(folder / f"p{i}.png")


def test_a_cap_below_every_photograph_is_one_line_in_pixels(tmp_path):
    _photos(tmp_path, [(40, 50), (60, 60), (45, 40)])
    with warnings.catch_warnings():
        warnings.simplefilter("error", SkippedInput)  # no warning per file: the one line says it
        with pytest.raises(InputsUnavailable) as exc:
            load_images(tmp_path, 3, 0, max_pixels=1)
    said = str(exc.value)
    assert said == (f"setting max_image_pixels (ANISO_MAX_IMAGE_PIXELS, --aniso-max-image-pixels) is 1: every one "
                    f"of the 3 sampled from {tmp_path} is larger (1,800 pixels and up); raise it to measure them"), said


def test_a_photograph_above_the_cap_is_said_in_pixels(tmp_path):
    _photos(tmp_path, [(40, 40), (60, 60)])
    with pytest.warns(SkippedInput) as seen:
        got = load_images(tmp_path, 2, 0, max_pixels=2000)
    assert got.names == ("p0.png",)
    said = [str(w.message) for w in seen if issubclass(w.category, SkippedInput)]
    assert said == [f"image_dir: skipped, measuring the rest: {tmp_path / 'p1.png'} is 60 x 60 pixels (3,600), above "
                    "the cap of 2,000 pixels (setting max_image_pixels)"], said


def test_stats_says_the_cap_once(clean_env, aniso_cli, monkeypatch, tmp_path):
    _photos(tmp_path, [(40, 50), (60, 60)])
    monkeypatch.setenv("ANISO_IMAGE_DIR", str(tmp_path))
    monkeypatch.setenv("ANISO_MAX_IMAGE_PIXELS", "1")
    monkeypatch.setenv("ANISO_N_IMAGES", "2")
    code, out, err = aniso_cli(["stats", "efficientnet-lite0"])
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert "setting max_image_pixels (ANISO_MAX_IMAGE_PIXELS, --aniso-max-image-pixels) is 1: every one of the 2" \
        in lines[0] and "(2,000 pixels and up)" in lines[0], lines
