"""Operand sharing over the ring: one LPDDR read of a tile, forwarded core to core.

A kernel split over a gm x gn grid loads the same operand tiles on several cores: every core
of a grid row reads the same A tiles, every core of a grid column the same B tiles, every
core of an attention head that head's K and V. `share_loads` rewrites the per-core programs
of one launch so that each such tile is read from LPDDR once: the cores that load it form a
chain in ring order; the first keeps its `dma.load` and sends the tile on with `ring.send`,
each next core receives it with `ring.recv` into the LX slot its load would have filled and,
unless it is the last, sends it on (design note 38). A tile above `RING_CHUNK_LIMIT` bytes
(a resident whole-K block) moves in pieces of about `RING_CHUNK` bytes, each loaded, sent
and received on its own, so it streams down the chain; its readers wait for every piece.

Matching and deadlock freedom come from the programs' common structure. The k-th load of a
given LPDDR block on a core is matched with the k-th load of the same block on the others,
and a group is shared only when its loads sit at the same program position on every member
(the programs of a kernel are instances of one schedule, so they normally do); otherwise the
launch is left as it was. With the same position everywhere, the sends and receives of every
pair of cores come in the same order on both sides (`spyrec.target.rendezvous.match` pairs them by
program order), and every rendezvous waits only on instructions at earlier positions or on the
same tile's earlier chain members, so the chain cannot deadlock. Dependences: a receive
keeps the load's (its slot's previous readers and writer), a send depends on the instruction
that filled its slot, and every later instruction writing over that slot depends on the
send (write-after-read), so the emulator's per-core hazard checker holds unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

from spyrec.costmodel import RING_CHUNK, RING_CHUNK_LIMIT
from spyrec.progress import report as report_progress
from spyrec.target.isa import Instr, Region, lx_access

RING_TAG = 0

LoadKey = tuple[int, int, int, int, int]  # ddr, rows, row_bytes, ddr_pitch, occurrence


@dataclass
class SharingReport:
    """What `share_loads` did to a launch: tiles shared, LPDDR bytes saved, transfers."""

    groups: int = 0
    saved_bytes: int = 0
    transfers: int = 0
    reason: str = ""


def _load_keys(program: list[Instr]) -> dict[int, LoadKey]:
    """pc -> (LPDDR block, occurrence) of each dma.load of a core's program."""
    seen: dict[tuple[int, int, int, int], int] = {}
    keys: dict[int, LoadKey] = {}
    for pc, instr in enumerate(program):
        if instr.op != "dma.load":
            continue
        a = instr.named_args()
        block = (a["ddr"], a["rows"], a["row_bytes"], a["ddr_pitch"])
        n = seen.get(block, 0)
        seen[block] = n + 1
        keys[pc] = (*block, n)
    return keys


def _overlaps(a: Region, b: Region) -> bool:
    return a.base < b.end and b.base < a.end


def _covers(a: Region, b: Region) -> bool:
    """a writes every byte of b (both dense runs)."""
    dense = a.pitch == a.row_bytes and b.pitch == b.row_bytes
    return dense and a.base <= b.base and b.end <= a.end


def share_loads(programs: dict[int, list[Instr]],
                origins: dict[int, list[int]] | None = None,
                ) -> tuple[dict[int, list[Instr]], SharingReport]:
    """Per-core programs of one launch with every LPDDR tile that several cores load read
    once and forwarded over the ring; unchanged (with a reason) when the loads do not line
    up by program position. With `origins`, it receives for each core the pc of the input
    instruction every output instruction stands for (schedule templates relocate the
    rewritten programs by it)."""
    report = SharingReport()
    keys = {core: _load_keys(program) for core, program in programs.items()}
    members: dict[LoadKey, list[tuple[int, int]]] = {}
    for core in sorted(programs):
        for pc, key in keys[core].items():
            members.setdefault(key, []).append((core, pc))
    shared = {key: cores for key, cores in members.items() if len(cores) > 1}
    if not shared:
        report.reason = "no tile is loaded by more than one core"
        return programs, report
    for key, cores in shared.items():
        if len({pc for _, pc in cores}) > 1:
            report.reason = (f"the loads of the block at {key[0]:#x} sit at different program "
                             "positions on its cores")
            return programs, report
    # role of each (core, pc): previous and next core of its chain (-1: none)
    role: dict[tuple[int, int], tuple[int, int]] = {}
    for key, cores in shared.items():
        chain = [c for c, _ in cores]
        for i, (core, pc) in enumerate(cores):
            role[(core, pc)] = (chain[i - 1] if i else -1,
                                chain[i + 1] if i + 1 < len(chain) else -1)
        report.groups += 1
        report.saved_bytes += (len(chain) - 1) * key[1] * key[2]
        report.transfers += (len(chain) - 1) * len(chunks(key[1], key[2]))
    rewritten: dict[int, list[Instr]] = {}
    for done, (core, program) in enumerate(programs.items(), 1):
        # a core's rewrite takes about 0.5 s in an 8192^3 matmul: the CLI shows the count
        rewritten[core] = _rewrite(core, program, role, None if origins is None
                                   else origins.setdefault(core, []))
        report_progress("cores' programs shared over the ring", done, len(programs))
    return rewritten, report


def chunks(rows: int, row_bytes: int) -> list[tuple[int, int]]:
    """(first row, rows) of the pieces a shared tile moves in: tiles above
    `RING_CHUNK_LIMIT` bytes go in pieces of about `RING_CHUNK` bytes, so a large resident
    block streams down its chain piece by piece instead of waiting a whole block per hop."""
    if rows * row_bytes <= RING_CHUNK_LIMIT or rows == 1:
        return [(0, rows)]
    step = max(1, RING_CHUNK // row_bytes)
    return [(r, min(step, rows - r)) for r in range(0, rows, step)]


def _rewrite(core: int, program: list[Instr], role: dict[tuple[int, int], tuple[int, int]],
             origin: list[int] | None = None) -> list[Instr]:
    out: list[Instr] = []
    new_pc: list[list[int]] = []  # the instructions that stand for each old one
    pending: list[tuple[Region, int]] = []  # LX regions a send still reads, and its pc
    for pc, instr in enumerate(program):
        deps = {n for d in instr.deps for n in new_pc[d]}
        writes = lx_access(instr, core)[1]
        if pending and writes:
            still = []
            for region, send_pc in pending:
                if any(_overlaps(w, region) for w in writes):
                    deps.add(send_pc)
                    if any(_covers(w, region) for w in writes):
                        continue  # later writers are ordered after this one
                still.append((region, send_pc))
            pending = still
        if (core, pc) not in role:
            out.append(Instr(instr.op, instr.args, instr.unit, tuple(sorted(deps))))
            new_pc.append([len(out) - 1])
            if origin is not None:
                origin.append(pc)
            continue
        prev, nxt = role[(core, pc)]
        a = instr.named_args()
        filled: list[int] = []
        for first, rows in chunks(a["rows"], a["row_bytes"]):
            lx = a["lx"] + first * a["lx_pitch"]
            if prev >= 0:
                out.append(Instr.make("ring.recv", deps=deps, dst=lx, rows=rows,
                                      row_bytes=a["row_bytes"], dst_pitch=a["lx_pitch"],
                                      src_core=prev, tag=RING_TAG))
            else:
                out.append(Instr.make("dma.load", deps=deps,
                                      ddr=a["ddr"] + first * a["ddr_pitch"], lx=lx, rows=rows,
                                      row_bytes=a["row_bytes"], ddr_pitch=a["ddr_pitch"],
                                      lx_pitch=a["lx_pitch"]))
            filled.append(len(out) - 1)
            if nxt >= 0:
                out.append(Instr.make("ring.send", deps=[filled[-1]], src=lx, rows=rows,
                                      row_bytes=a["row_bytes"], src_pitch=a["lx_pitch"],
                                      dst_core=nxt, tag=RING_TAG))
                pending.append((Region(lx, rows, a["row_bytes"], a["lx_pitch"]), len(out) - 1))
        new_pc.append(filled)
        if origin is not None:
            origin.extend([pc] * (len(out) - len(origin)))
    return out
