"""The one description of the Spyre hardware that the compiler and the emulator both read.

Every number carries its provenance ("official": stated by IBM or the torch-spyre docs;
"code": a constant in torch-spyre fitted to hardware; "est": an estimate of ours). Passes
make their decisions from a `SpyreTarget`, never from literals, and the emulator times
instructions from the same object, so the compiler's cost model and the emulator's clock
cannot drift apart silently.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB


@dataclass(frozen=True)
class SpyreTarget:
    """Hardware parameters of one Spyre card (all configurable; defaults are the AIU)."""

    name: str = "spyre-aiu"
    num_cores: int = 32  # official
    corelets_per_core: int = 2  # official
    clock_hz: float = 1.5e9  # est: consistent with 32 cores x 2 corelets x 64 PE x 8-wide FMA
    # PT systolic array: 8x8 PEs, 8-wide FMA -> 1024 FLOP/cycle per corelet
    # (code: 98.304 TFLOPS/card)
    pt_flops_per_cycle_per_corelet: int = 1024
    # SFU: one 128-byte stick per cycle per corelet (est; 64 DL16 or 32 fp32 lanes)
    sfu_bytes_per_cycle_per_corelet: int = 128
    # transcendental SFU ops (exp, gelu, tanh, ...) cost this many passes (est, ktir-cpu model)
    sfu_transcendental_factor: int = 4
    lx_bytes: int = 2 * MIB  # official: 2 MB scratchpad per core
    lx_backend_reserve_fraction: float = 0.2  # code: DXP_LX_FRAC_AVAIL keeps ~20 % for the back end
    stick_bytes: int = 128  # official (RFC 0047)
    lpddr_bytes_per_s: float = 204.8e9  # code: aggregate peak used by torch-spyre's cost model
    dma_setup_cycles: int = 64  # est: per-descriptor start-up cost of a DMA
    ring_bytes_per_cycle: int = 128  # official: per direction, bidirectional ring
    ring_hop_cycles: int = 4  # est: latency a transfer adds per core it passes on the ring
    segment_bytes: int = 16 * GIB  # official: 8 x 16 GB virtual segments per job
    num_segments: int = 8  # official
    program_segment: int = 7  # official: segment 7 reserved for SpyreCode
    per_core_span_bytes: int = 256 * MIB  # official: max off-chip span per tensor per core

    # ---- derived quantities -------------------------------------------------------------
    @property
    def lx_usable_bytes(self) -> int:
        """LX bytes the front end may plan (the rest is the back end's reserve), stick aligned."""
        usable = int(self.lx_bytes * (1.0 - self.lx_backend_reserve_fraction))
        return usable - usable % self.stick_bytes

    @property
    def peak_flops_per_core(self) -> float:
        return self.pt_flops_per_cycle_per_corelet * self.corelets_per_core * self.clock_hz

    @property
    def peak_flops(self) -> float:
        return self.peak_flops_per_core * self.num_cores

    @property
    def lpddr_bytes_per_cycle(self) -> float:
        return self.lpddr_bytes_per_s / self.clock_hz

    @property
    def ridge_flops_per_byte(self) -> float:
        return self.peak_flops / self.lpddr_bytes_per_s

    def elems_per_stick(self, itemsize: int) -> int:
        return self.stick_bytes // itemsize

    def cycles_to_us(self, cycles: float) -> float:
        return cycles / self.clock_hz * 1e6

    def replace(self, **changes: object) -> SpyreTarget:
        return dataclasses.replace(self, **changes)


DEFAULT_TARGET = SpyreTarget()

TARGETS: dict[str, SpyreTarget] = {DEFAULT_TARGET.name: DEFAULT_TARGET}
"""The target descriptions by name. A compile records the name of its target in the IR (the
`target` compile option, `spyre.options`) and in the binary; the compiler's passes and the
emulator both look the description up here, so another description (a calibrated one) is
one `register_target` away."""


def register_target(target: SpyreTarget) -> SpyreTarget:
    """Make `target` known by its name to the compiler and the emulator."""
    TARGETS[target.name] = target
    return target


def target_named(name: str) -> SpyreTarget:
    """The description registered as `name`; a ValueError naming the known ones if none."""
    found = TARGETS.get(name)
    if found is None:
        known = ", ".join(sorted(TARGETS))
        raise ValueError(f"unknown Spyre target '{name}': the known targets are {known} "
                         "(spyrec.target.register_target adds one)")
    return found


def round_up(value: int, multiple: int) -> int:
    """Smallest multiple of `multiple` that is >= `value`."""
    return -(-value // multiple) * multiple
