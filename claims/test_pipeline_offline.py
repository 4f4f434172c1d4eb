"""Every architecture of the registry, exercised offline on a tiny random configuration (not a paper claim).

Pre-trained weights of most registry models cannot be had offline. For each
entry with a ``tiny`` config (and each miniature trained by the suite, at its initialisation), a randomly initialised model of the same
architecture runs through the same extraction path as the claims
(:mod:`aniso.extract.architecture_check`): number of layers, vector shapes, padding
excluded, and queries/keys captured. The report shows "pipeline verified
offline" for it: never a verdict on a claim.
"""

from __future__ import annotations

import pytest


@pytest.mark.models(all_of=("pretrained",))
def test_pipeline_offline(entry, aniso_session):
    """The entry's tiny random model passes every extraction check (layers, shapes, masking, queries/keys)."""
    if entry.needs_remote_code:
        pytest.skip(f"{entry.id}: its architecture is custom code from its repository; not built unless the "
                    "registry entry opts in with trust_remote_code: true")
    if entry.tiny is None and not entry.miniature:
        pytest.skip(f"{entry.id}: real weights run the extraction path here; no tiny config in the registry")
    try:
        result = aniso_session.architectures.check(entry)
    except ValueError as exc:
        pytest.skip(str(exc))
    failed = {k: d for k, (ok, d) in result.checks.items() if not ok}
    assert not failed, f"{entry.id} ({result.model_type}): pipeline checks failed: {failed}"
