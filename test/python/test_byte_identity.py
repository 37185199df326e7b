"""The fixed set of `spyrec.tools.byte_identity` (the benchmark kernels, the model zoo, the
demo models, a decoder with a symbolic size) compiles to the `.spyre` bytes recorded in
test/golden/spyre_sha256.json.

A refactor keeps every hash; a change of generated code updates the golden file in the same
commit (`python -m spyrec.tools.byte_identity --update`) and says why. One test per group,
so pytest-xdist can spread them; the zoo's group holds the two Granite layers (400 MB of
weights each, about a minute together)."""

from __future__ import annotations

import pytest

from spyrec.tools import byte_identity

pytestmark = pytest.mark.heavy


def test_the_golden_file_lists_the_whole_set() -> None:
    """Every program of the set has a hash, and the file has none the set lacks."""
    recorded = byte_identity.load_golden()["programs"]
    assert sorted(recorded) == sorted(p.name for p in byte_identity.programs()), \
        byte_identity.UPDATE_HINT


@pytest.mark.parametrize("group", ["bench", "zoo", "demo", "symbolic"])
def test_spyre_bytes_unchanged(group: str) -> None:
    selected = [p for p in byte_identity.programs() if p.group == group]
    changed = byte_identity.differences(byte_identity.load_golden(),
                                        byte_identity.compute(selected))
    assert not changed, (f"{len(changed)} of {len(selected)} programs compile to different "
                         ".spyre bytes:\n  " + "\n  ".join(changed) + "\n"
                         + byte_identity.UPDATE_HINT)
