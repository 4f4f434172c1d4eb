"""The parts of a layer's streamed statistics and their helpers, one module each.

:mod:`.second_order` (the float32 products of an SVD batch and its anisotropy), :mod:`.massive` (the massive
activations' rows and per-complement maxima), :mod:`.reservoir` (Vitter's algorithm R), :mod:`.inputs` (the
per-input sums in :class:`.inputs.InputGroups`), :mod:`.attention` (the attention sink), :mod:`.base` (shared
helpers). :mod:`aniso.stats.accumulators` re-exports their public names.
"""
