"""What each instruction costs on a Spyre target: the engine it occupies, its busy cycles
and the LPDDR bytes it moves, from the `SpyreTarget`'s numbers alone.

The compiler's scheduler and the emulator's clock (`spyrec.runtime.timing`, which schedules
these costs over engines and the shared LPDDR channel) both stand on this module:

* pt.matmul and pt.matmul_nt: ceil(2 * m' * k' * n' / pt_flops_per_cycle_per_corelet), where
  m', k', n' are m, k, n rounded up to 8 (the 8x8 PE array works on whole 8-row, 8-deep,
  8-wide blocks);
* sfu.*: ceil(rows * row bytes / sfu_bytes_per_cycle_per_corelet), rows padded to whole
  sticks at the widest operand type, times sfu_transcendental_factor for transcendental
  functions. sfu.scalar and sfu.mask are unary passes (src, dst), sfu.colwise a binary pass
  (src0, the per-row src1's type, dst), and sfu.reduce one pass over the source rows alone
  (the one stick it writes per row is not counted);
* dma.*: dma_setup_cycles, then the transfer of rows * row bytes (rounded up to whole sticks)
  over LPDDR;
* ring and sync instructions: `rendezvous_cycles`, from the target's ring figures.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from spyrec.target import SpyreTarget, round_up
from spyrec.target.isa import TRANSCENDENTAL, DType, Engine, Instr, group_members

PE_BLOCK = 8  # rows, depth and width of the PT array's work unit


@dataclass(frozen=True)
class Cost:
    """What one instruction occupies: its engine track, busy cycles and LPDDR bytes."""

    # 0 = DMA, 1 + unit = PT of corelet `unit`, 1 + corelets + unit = SFU, then ring send,
    # ring receive, reduce ring and sync (see `track_names`)
    track: int
    cycles: int  # busy cycles on the engine (for a DMA: the setup before the transfer)
    lpddr_bytes: int  # bytes through the shared LPDDR channel (DMA only)


# The engines after the corelets', in track order, and the op that runs on each.
_OTHER_TRACKS = ("ring_tx", "ring_rx", "ring_reduce", "sync")
_OTHER_TRACK_OF = {"ring.send": 0, "ring.recv": 1, "ring.reduce": 2, "sync.barrier": 3}


def num_tracks(target: SpyreTarget) -> int:
    """Engine tracks per core: DMA, a PT and an SFU per corelet, ring tx/rx/reduce, sync."""
    return 1 + 2 * target.corelets_per_core + len(_OTHER_TRACKS)


def track_names(target: SpyreTarget) -> list[str]:
    """Display names of a core's engine tracks, indexed like `Cost.track`."""
    units = range(target.corelets_per_core)
    return ["dma"] + [f"pt{u}" for u in units] + [f"sfu{u}" for u in units] + list(_OTHER_TRACKS)


def track_kind(track: int, target: SpyreTarget) -> str:
    """The engine kind of a track: dma, pt, sfu, ring or sync."""
    if track == 0:
        return "dma"
    if track <= target.corelets_per_core:
        return "pt"
    if track <= 2 * target.corelets_per_core:
        return "sfu"
    return "sync" if track == num_tracks(target) - 1 else "ring"


def _sfu_row_bytes(cols: int, dtypes: tuple[int, ...], target: SpyreTarget) -> int:
    widest = max(DType(d).itemsize for d in dtypes)
    return round_up(cols * widest, target.stick_bytes)


def instr_cost(instr: Instr, target: SpyreTarget, core: int = 0) -> Cost:
    """The cost of one (validated) instruction of `core` on `target`."""
    a = instr.named_args()
    engine = instr.spec.engine
    if engine in (Engine.RING, Engine.SYNC):
        track = 1 + 2 * target.corelets_per_core + _OTHER_TRACK_OF[instr.op]
        return Cost(track, rendezvous_cycles(instr, core, target), 0)
    if engine is Engine.DMA:
        moved = a["rows"] * round_up(a["row_bytes"], target.stick_bytes)
        return Cost(0, target.dma_setup_cycles, moved)
    if engine is Engine.PT:
        m, k, n = (round_up(a[x], PE_BLOCK) for x in ("m", "k", "n"))
        cycles = math.ceil(2 * m * k * n / target.pt_flops_per_cycle_per_corelet)
        return Cost(1 + instr.unit, cycles, 0)
    factor = 1
    if instr.op == "sfu.unary":
        row = _sfu_row_bytes(a["cols"], (a["src_dtype"], a["dst_dtype"]), target)
        if a["fn"] in TRANSCENDENTAL:
            factor = target.sfu_transcendental_factor
    elif instr.op in ("sfu.scalar", "sfu.mask"):
        row = _sfu_row_bytes(a["cols"], (a["src_dtype"], a["dst_dtype"]), target)
    elif instr.op == "sfu.reduce":
        row = _sfu_row_bytes(a["cols"], (a["src_dtype"],), target)
    else:  # sfu.binary, sfu.colwise
        row = _sfu_row_bytes(a["cols"], (a["src0_dtype"], a["src1_dtype"], a["dst_dtype"]), target)
    cycles = math.ceil(a["rows"] * row / target.sfu_bytes_per_cycle_per_corelet) * factor
    return Cost(1 + target.corelets_per_core + instr.unit, max(cycles, 1), 0)


def ring_hops(a: int, b: int, num_cores: int) -> int:
    """Hops between cores a and b on the bidirectional ring (the shorter way round)."""
    forward = (b - a) % num_cores
    return min(forward, num_cores - forward)


def _chain_hops(members: list[int], num_cores: int) -> int:
    return sum(ring_hops(x, y, num_cores) for x, y in itertools.pairwise(members))


def _tile_bytes(rows: int, row_bytes: int, target: SpyreTarget) -> int:
    return rows * round_up(row_bytes, target.stick_bytes)


def rendezvous_cycles(instr: Instr, core: int, target: SpyreTarget) -> int:
    """Cycles a ring or sync instruction occupies its engine once its group has started.

    ring.send / ring.recv: hops * ring_hop_cycles + bytes / ring_bytes_per_cycle.
    ring.reduce: the partial sums flow along the group in group order over the reduce ring
    (bytes / ring_bytes_per_cycle + chain hops * ring_hop_cycles); with root -1 the result
    flows back the same way, doubling it. sync.barrier: an arrival and a release message
    along the group's chain, 2 * chain hops * ring_hop_cycles.
    """
    a = instr.named_args()
    n = target.num_cores
    if instr.op in ("ring.send", "ring.recv"):
        peer = a["dst_core"] if instr.op == "ring.send" else a["src_core"]
        moved = _tile_bytes(a["rows"], a["row_bytes"], target)
        return (ring_hops(core, peer, n) * target.ring_hop_cycles
                + math.ceil(moved / target.ring_bytes_per_cycle))
    chain = _chain_hops(group_members(a["first"], a["count"], a["stride"]), n)
    if instr.op == "sync.barrier":
        return max(2 * chain * target.ring_hop_cycles, 1)
    moved = _tile_bytes(a["rows"], a["cols"] * DType(a["dtype"]).itemsize, target)
    one_way = math.ceil(moved / target.ring_bytes_per_cycle) + chain * target.ring_hop_cycles
    return one_way * (2 if a["root"] < 0 else 1)
