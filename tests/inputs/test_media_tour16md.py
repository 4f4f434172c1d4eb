"""A photograph stored turned, with an EXIF orientation tag saying how viewers turn it upright, was measured on its
sideways pixels: it is read upright."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from aniso.inputs.media import load_images


def _photograph() -> np.ndarray:
    """A 48 x 80 (height x width) RGB picture that differs from each of its turns and mirror images."""
    y, x = np.mgrid[0:48, 0:80]
    return np.stack([(3 * x) % 256, (5 * y) % 256, (x * y) % 256], axis=-1).astype(np.uint8)


def _save(path: Path, pixels: np.ndarray, orientation: int | None = None, **options) -> None:
    from PIL import Image

    im = Image.fromarray(pixels, "RGB")
    if orientation is not None:
        exif = Image.Exif()
        exif[0x0112] = orientation
        options["exif"] = exif
    im.save(path, **options)


def _pixels(loaded) -> list[np.ndarray]:
    return [np.asarray(im) for im in loaded.items]


def test_a_photograph_stored_turned_with_its_orientation_tag_is_read_upright(tmp_path):
    """Orientation 6: the file's pixels are the picture turned a quarter anticlockwise; viewers turn it clockwise.
    Read, it gives the upright picture's pixels, not the sideways ones."""
    upright, turned = tmp_path / "upright", tmp_path / "turned"
    upright.mkdir(), turned.mkdir()
    picture = _photograph()
    _save(upright / "a.png", picture)
    _save(turned / "a.png", np.rot90(picture), orientation=6)  # np.rot90: a quarter anticlockwise
    assert np.rot90(picture).shape == (80, 48, 3)
    (want,) = _pixels(load_images(upright, 1, 0))
    (got,) = _pixels(load_images(turned, 1, 0))
    assert got.shape == want.shape == (48, 80, 3)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("orientation, stored", [
    (3, lambda a: np.rot90(a, 2)),  # turned half way
    (8, lambda a: np.rot90(a, -1)),  # a quarter clockwise: viewers turn it anticlockwise
    (2, lambda a: a[:, ::-1]),  # mirrored left to right
])
def test_every_orientation_is_undone(tmp_path, orientation, stored):
    picture = _photograph()
    _save(tmp_path / "a.png", np.ascontiguousarray(stored(picture)), orientation=orientation)
    (got,) = _pixels(load_images(tmp_path, 1, 0))
    assert np.array_equal(got, picture)


def test_a_jpeg_stored_turned_with_its_tag_gives_the_upright_jpegs_pixels(tmp_path):
    """The case as cameras write it: a JPEG of the sideways pixels tagged 6. Its pixels, read, are those of the
    upright JPEG up to the compression's loss (a sideways read has the other shape)."""
    upright, turned = tmp_path / "upright", tmp_path / "turned"
    upright.mkdir(), turned.mkdir()
    picture = _photograph()
    _save(upright / "a.jpg", picture, quality=95)
    _save(turned / "a.jpg", np.rot90(picture), orientation=6, quality=95)
    (want,) = _pixels(load_images(upright, 1, 0))
    (got,) = _pixels(load_images(turned, 1, 0))
    assert got.shape == want.shape == (48, 80, 3)
    assert np.abs(got.astype(int) - want.astype(int)).mean() < 4


def test_a_set_read_upright_is_not_keyed_as_the_same_bytes_read_sideways(tmp_path):
    """Statistics are cached under the files' bytes: a set one of whose photographs is turned upright gets another
    fingerprint than those bytes alone give (an entry computed on its sideways pixels is not served); a set without
    an orientation tag keeps the fingerprint of its bytes."""
    from aniso.inputs.media import _files_fingerprint

    plain, tagged = tmp_path / "plain", tmp_path / "tagged"
    plain.mkdir(), tagged.mkdir()
    _save(plain / "a.png", _photograph())
    _save(tagged / "a.png", np.rot90(_photograph()), orientation=6)
    assert load_images(plain, 1, 0).fingerprint == _files_fingerprint([plain / "a.png"], {})
    assert load_images(tagged, 1, 0).fingerprint != _files_fingerprint([tagged / "a.png"], {})
