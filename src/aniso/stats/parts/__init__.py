"""The parts of a layer's streamed statistics, one module each, behind one protocol (:class:`.base.Statistic`).

:mod:`.base` (the protocol, the batch view :class:`.base.Batch` and the settings :class:`.base.Layout`),
:mod:`.first_order` (count of zero vectors, Σu, Σx, Σ‖x‖, Σu∘u, Σx∘x), :mod:`.massive` (max |x| per feature and its
position, the first tokens' sums), :mod:`.second_order` (Σxxᵀ with the SVD batch buffer, the batch-wise SVD
anisotropy), :mod:`.reservoir` (the uniform sample: TwoNN, sampled pairs, rogue dimensions), :mod:`.inputs` (the
per-input sums in :class:`.inputs.InputGroups`), :mod:`.attention` (the attention sink, a model-level statistic).
:class:`aniso.stats.accumulators.LayerAccumulator` is built from the table of the layer's parts,
:data:`aniso.stats.accumulators.PARTS`.
"""
