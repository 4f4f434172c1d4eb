"""Settings: options over environment over run profile over defaults; profiles set consistent sizes."""

from __future__ import annotations

import pytest

from aniso.common.settings import DEFAULT_PROFILE, PROFILES, SETTING_HELP, SettingError, Settings


def test_default_is_the_quick_profile():
    assert DEFAULT_PROFILE == "quick"
    s = Settings.from_sources({}, {})
    assert s.profile == "quick"
    assert {k: getattr(s, k) for k in PROFILES["quick"]} == PROFILES["quick"]
    assert Settings() == s  # the dataclass defaults are the quick profile's sizes


def test_paper_profile_sets_the_papers_sizes():
    s = Settings.from_sources({}, {"ANISO_PROFILE": "paper"})
    assert (s.block_sequences, s.block_seq_len) == (16, 512)  # G §4.1
    assert s.max_length == 512 and s.n_sequences >= 100_000  # the whole validation set
    assert {k: getattr(s, k) for k in PROFILES["paper"]} == PROFILES["paper"]


def test_explicit_settings_override_the_profile():
    s = Settings.from_sources({"profile": "paper", "block_sequences": 3}, {"ANISO_N_SEQUENCES": "10"})
    assert (s.profile, s.block_sequences, s.n_sequences, s.block_seq_len) == ("paper", 3, 10, 512)
    # the option wins over the environment, for the profile too
    s = Settings.from_sources({"profile": "quick"}, {"ANISO_PROFILE": "paper"})
    assert s.profile == "quick" and s.block_sequences == PROFILES["quick"]["block_sequences"]


def test_unknown_profile_names_itself():
    with pytest.raises(ValueError, match="'fast'"):
        Settings.from_sources({}, {"ANISO_PROFILE": "fast"})
    with pytest.raises(ValueError, match="profile"):
        Settings(profile="fast")


def test_bad_environment_value_names_the_variable():
    with pytest.raises(ValueError, match="ANISO_N_CLIPS"):
        Settings.from_sources({}, {"ANISO_N_CLIPS": "many"})


def test_a_misspelt_environment_variable_is_refused_with_the_closest_name():
    """ANISO_CORPSU would otherwise be ignored and the run measure the default corpus instead of the one meant."""
    with pytest.raises(SettingError, match="ANISO_CORPSU: no setting .* did you mean ANISO_CORPUS"):
        Settings.from_sources({}, {"ANISO_CORPSU": "/data/my.txt"})
    for fine in ({"ANISO_PROGRESS": "0"}, {"ANISO_CORPSU": ""}, {"ANISO_SEED": "3", "OTHER_THING": "x"}):
        Settings.from_sources({}, fine)


def test_every_setting_has_help():
    from dataclasses import fields

    assert {f.name for f in fields(Settings)} == set(SETTING_HELP)


@pytest.mark.parametrize("value", ["maybe", "2", "hide"])
def test_a_progress_switch_that_is_no_switch_is_refused(value):
    """ANISO_PROGRESS=maybe was taken for "show the bars" without a word; it is refused naming the variable and the
    words it takes. 0, off, 1, yes (any case) and empty are taken."""
    with pytest.raises(SettingError, match=rf"^environment variable ANISO_PROGRESS is '{value}'; give 0"):
        Settings.from_sources({}, {"ANISO_PROGRESS": value})
    for fine in ("0", "off", "1", "YES", ""):
        Settings.from_sources({}, {"ANISO_PROGRESS": fine})


def test_output_folders_are_taken_from_the_working_folder_where_the_run_enters(tmp_path, monkeypatch):
    """`ANISO_REPORT_DIR=rel pytest /project/claims` from another folder: the check made ./rel, the report was then
    written under the project (pytest's root folder). Relative folders are made absolute once, from the working
    folder, where the settings are built; every later reader uses that path."""
    import os

    from aniso.common.settings import Settings

    monkeypatch.chdir(tmp_path)
    s = Settings(report_dir="rel", cache_dir="~/c")
    assert s.report_dir == str(tmp_path / "rel") and s.cache_dir == os.path.expanduser("~/c")


def test_a_miniature_width_the_heads_do_not_share_and_a_train_text_shorter_than_a_window_are_named(tmp_path,
                                                                                                     monkeypatch):
    """ANISO_MINIATURE_WIDTH=130 (4 heads) and ANISO_TRAIN_TEXT of 50 bytes ended `aniso extract` with exit 1 and a
    recipe's repr or "the training stream has 50 ids", naming no setting."""
    from aniso.cli import main
    from aniso.common.settings import Settings, SettingError

    with pytest.raises(SettingError, match=r"miniature_width .*must be a multiple of 4 .*got 130"):
        Settings(miniature_width=130)
    short = tmp_path / "short.txt"
    short.write_text("x" * 50)
    with pytest.raises(SettingError, match=r"train_text .*short\.txt holds 50 bytes; .*windows of 128 bytes"):
        Settings(train_text=str(short), cache_dir=str(tmp_path / "c")).check_paths()
    monkeypatch.setenv("ANISO_TRAIN_TEXT", str(short))
    monkeypatch.setenv("ANISO_CACHE_DIR", str(tmp_path / "c"))
    assert main(["extract", "mini-bert-bytes-s0"]) == 2


def test_svd_batch_size_below_its_floor_is_refused_naming_the_floor():
    """A centred batch of b vectors has rank <= b - 1: b = 2 made every batch's SVD anisotropy 1.0 by construction
    and a decoder's run unbounded (one decomposition per 2 rows); the setting's floor refuses it in one line."""
    from aniso.common.settings import SVD_BATCH_MIN

    for value in (2, SVD_BATCH_MIN - 1):
        with pytest.raises(ValueError, match=rf"svd_batch_size.*from {SVD_BATCH_MIN} to .*got {value}: a centred "
                                             r"batch of b vectors has rank at most b - 1") as caught:
            Settings(svd_batch_size=value)
        assert "\n" not in str(caught.value)
    assert Settings(svd_batch_size=SVD_BATCH_MIN).svd_batch_size == SVD_BATCH_MIN


def test_svd_batches_narrower_than_a_layer_are_said_in_the_inputs_label():
    """Batches of b < d vectors are rank-limited (anisotropy >= 1/(b - 1), biased up): the inputs label says so
    once, naming b, the width and the layers; none where every batch is at least the layer's width."""
    from types import SimpleNamespace

    from aniso.stats.results import svd_batch_note

    layers = [SimpleNamespace(second_order=True, svd_batch_size=64, dim=d) for d in (384, 384, 32)]
    layers.append(SimpleNamespace(second_order=False, svd_batch_size=64, dim=4096))
    note = svd_batch_note(layers)
    assert note.startswith("; SVD batches of 64 vectors, fewer than the width 384 of layer(s) 0-1")
    assert ">= 1/63" in note
    assert svd_batch_note(layers[2:]) == ""


def test_a_cache_dir_that_is_a_hub_cache_is_refused(tmp_path):
    """ANISO_CACHE_DIR set to the Hugging Face hub cache: the statistics entries and seal.key were written among the
    hub's repositories, after which `aniso hub list` refused that folder as "aniso's statistics cache"."""
    (tmp_path / "hub" / "models--me--bert").mkdir(parents=True)
    with pytest.raises(SettingError, match=r"setting cache_dir \(ANISO_CACHE_DIR.*\): .*hub is a Hugging Face hub "
                                           r"cache \(it holds models--me--bert/\); the statistics cache is a folder "
                                           r"of its own"):
        Settings(cache_dir=str(tmp_path / "hub")).check_paths()
    assert not list((tmp_path / "hub").glob("seal.key"))
    (tmp_path / "own").mkdir()
    Settings(cache_dir=str(tmp_path / "own")).check_paths()  # a folder of its own, empty or not, is fine


@pytest.mark.parametrize("name", ["config.json", "model.safetensors", "pytorch_model.bin", "model.onnx", "m.gguf"])
def test_a_cache_dir_that_is_a_model_folder_is_refused(tmp_path, name):
    """ANISO_CACHE_DIR set to a local row's own model folder: each run wrote an entry into the folder whose files key
    the row's entries, so no entry was ever reused and the folder grew by one entry a run (and its
    model.safetensors was taken for a cache entry whose seal.key was gone)."""
    model = tmp_path / "mini"
    model.mkdir()
    (model / name).write_bytes(b"{}")
    with pytest.raises(SettingError, match=rf"setting cache_dir \(ANISO_CACHE_DIR.*\): .*mini is a model's folder "
                                           rf"\(it holds {name}\); the statistics cache is a folder of its own"):
        Settings(cache_dir=str(model)).check_paths()
    assert sorted(p.name for p in model.iterdir()) == [name]  # nothing written there
    own = tmp_path / "own"  # a statistics cache with its entries, seal.key and folders is fine
    (own / "checkpoints").mkdir(parents=True)
    key = "0123456789abcdef0123456789abcdef"
    for entry in (f"{key}.safetensors", f"{key}.json", "seal.key", f"{'f' * 32}.safetensors"):
        (own / entry).write_bytes(b"x")
    Settings(cache_dir=str(own)).check_paths()
