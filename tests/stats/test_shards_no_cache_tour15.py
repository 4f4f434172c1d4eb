"""Reading statistics extracted over shards with the cache turned off is a contradiction of two settings: the refusal
names both (it said no statistics were in the cache and to extract them with torchrun, which would not help)."""

from __future__ import annotations

import pytest


def test_shards_with_no_cache_names_both_settings(tmp_path):
    from aniso.common.settings import Settings
    from aniso.registry.entries import ModelEntry, Registry
    from aniso.sources import ModelUnavailable
    from aniso.stats.pipeline import StatsProvider

    entry = ModelEntry.model_validate(dict(id="tiny", modality="text", granularity="subword",
                                           architecture="transformer", role="encoder", family="bert",
                                           source=dict(kind="hub", repo="none/none")))
    settings = Settings.from_sources({"shards": 2, "no_cache": True, "cache_dir": str(tmp_path), "n_sequences": 4},
                                     environ={})
    with pytest.raises(ModelUnavailable, match=r"^tiny: setting shards 2 reads statistics extracted over 2 shards from "
                                               r"the cache, and setting no_cache \(ANISO_NO_CACHE\) turns the cache "
                                               r"off; unset one of them$"):
        StatsProvider(settings, Registry([entry])).get(entry)
