"""The device's LPDDR address rules, which the container's plans and the emulator's memory
both obey.

The job's virtual address space is `num_segments` segments of `segment_bytes`; every
allocation starts on an `ALIGNMENT`-byte boundary, has a positive size, lies inside the
address space and inside one segment, and overlaps no other allocation.
"""

from __future__ import annotations

from collections.abc import Iterable

from spyrec.target import SpyreTarget

ALIGNMENT = 128


def address_range(start: int, end: int) -> str:
    """[start, end) as the device's messages spell it."""
    return f"[{start:#x}, {end:#x})"


def allocation_fault(base: int, size: int, name: str, target: SpyreTarget,
                     neighbours: Iterable[tuple[int, int, str]]) -> str | None:
    """Why allocating [base, base+size) as `name` breaks the rules above, or None when it
    does not; `neighbours` are the (base, end, name) of the allocations it could overlap."""
    space = target.num_segments * target.segment_bytes
    if base % ALIGNMENT:
        return f"allocation '{name}' at {base:#x} is not {ALIGNMENT}-byte aligned"
    if size <= 0:
        return f"allocation '{name}' has size {size}"
    where = address_range(base, base + size)
    if base < 0 or base + size > space:
        return f"allocation '{name}' {where} is outside the {space:#x}-byte device address space"
    if base // target.segment_bytes != (base + size - 1) // target.segment_bytes:
        return f"allocation '{name}' {where} crosses a segment boundary"
    for start, end, other in neighbours:
        if start < base + size and base < end:
            return f"allocation '{name}' {where} overlaps '{other}' {address_range(start, end)}"
    return None
