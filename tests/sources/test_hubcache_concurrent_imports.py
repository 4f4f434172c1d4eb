"""Two imports of one hub id into one cache at the same time take turns: both revisions end up in the cache."""

import shutil
import threading

from aniso.sources.hubcache import import_folder, repo_dir


def test_two_imports_of_one_id_at_once_both_land_and_main_loads(tiny_bert_dir, tmp_path, monkeypatch):
    cache = tmp_path / "hc"
    copyfile = shutil.copyfile
    first_writing, second_done = threading.Event(), threading.Event()

    def slow_copyfile(src, dst, *args, **kwargs):
        made = copyfile(src, dst, *args, **kwargs)
        if threading.current_thread().name == "first" and not first_writing.is_set():
            first_writing.set()
            second_done.wait(timeout=3)  # without a lock the second import writes meanwhile
        return made

    monkeypatch.setattr(shutil, "copyfile", slow_copyfile)
    errors: list[BaseException] = []

    def run(revision, done=None):
        try:
            import_folder("me/x", tiny_bert_dir, revision=revision, cache_dir=cache)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            if done is not None:
                done.set()

    first = threading.Thread(target=run, args=("main",), name="first")
    first.start()
    assert first_writing.wait(timeout=30)
    second = threading.Thread(target=run, args=("v1", second_done), name="second")
    second.start()
    first.join(60)
    second.join(60)
    assert errors == []
    repo = repo_dir("me/x", cache)
    main = (repo / "refs" / "main").read_text()
    assert (repo / "refs" / "v1").read_text() == main
    assert (repo / "snapshots" / main / "config.json").is_file()
    assert not [p for p in (repo / "blobs").iterdir() if p.name.endswith(".incomplete")]
    from transformers import AutoConfig

    AutoConfig.from_pretrained("me/x", cache_dir=str(cache), local_files_only=True)
