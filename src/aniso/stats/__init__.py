"""The statistics stage: hidden states in, streamed per-layer statistics out, cached on disk.

:mod:`.accumulators` (streamed, mergeable accumulators and their summaries), :mod:`.cache` (the disk cache),
:mod:`.pipeline` (statistics per model, only those the selected claims read; block sweeps), :mod:`.distributed`
(sharded extraction under ``torchrun``), :mod:`.dynamics` (checkpoint series), :mod:`.uncertainty` (bootstrap
intervals). The pure metric functions they call are :mod:`aniso.metrics`.
"""
