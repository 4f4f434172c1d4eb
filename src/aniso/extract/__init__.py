"""The extraction stage: a loaded model and its inputs in, hidden states out.

:mod:`.hidden` runs the forward passes (hidden states of every layer with padding excluded, attention reduced inside
per-layer hooks, query/key capture); :mod:`.modalities` is the modality table (which inputs a kind of hidden state
reads, how they are batched and run, which vectors count); :mod:`.architecture_check` sends tiny random models of
each registry family through that path, offline.
"""
