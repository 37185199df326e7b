"""dma.gather: rows of an LPDDR table picked by an int32 index vector in LX.

The hand-built kernel: per core, load its ids (one int32 stick) into LX, gather the selected
rows of the embedding table, store them. Numerics are bit-exact copies; an index outside
[0, vocab) faults naming core, pc, row and value; the hazard checker sees the index read;
the cycle model charges the gathered bytes like a dma.load of as many rows.
"""

from __future__ import annotations

import numpy as np
import pytest
from runtime_helpers import bind, load, store

from spyrec.runtime.emulator import Emulator, InputError
from spyrec.runtime.memory import DeviceFault
from spyrec.runtime.timing import instr_cost
from spyrec.target import DEFAULT_TARGET, GIB
from spyrec.target.container import KernelImage, SpyreBinary
from spyrec.target.isa import Instr, decode_program, encode_program, lx_access

VOCAB, DIM, TOKENS = 100, 64, 16


def gather(ddr: int, lx: int, rows: int, row_bytes: int, idx: int, limit: int,
           deps: tuple[int, ...] = ()) -> Instr:
    return Instr.make("dma.gather", deps=deps, ddr=ddr, lx=lx, rows=rows, row_bytes=row_bytes,
                      ddr_pitch=row_bytes, lx_pitch=row_bytes, idx=idx, limit=limit)


def embedding_binary(cores: int = 2, ids_dtype: str = "int32", limit: int = VOCAB) -> SpyreBinary:
    """out[t] = table[ids[t]] for TOKENS ids split over `cores` rows of ids."""
    ids = bind("ids", (cores, TOKENS), ids_dtype, 0)
    out = bind("out", (cores, TOKENS, DIM), "float32", 1 * GIB)
    table = bind("table", (VOCAB, DIM), "float32", 2 * GIB)
    row = table.layout.row_pitch  # 256 B: 64 fp32
    programs = {}
    for core in range(cores):
        programs[core] = [
            load(ids.addr + core * ids.layout.row_pitch, 0, 1, ids.layout.row_pitch),
            gather(table.addr, 0x1000, TOKENS, row, idx=0, limit=limit,
                   deps=(0,)),
            store(0x1000, out.addr + core * TOKENS * row, TOKENS, row, deps=(1,)),
        ]
    rng = np.random.default_rng(3)
    weights = [(table, rng.standard_normal((VOCAB, DIM)).astype(np.float32))]
    kernel = KernelImage("embedding", cores, programs, 0,
                         min_offchip_bytes=2 * cores * TOKENS * row)
    return SpyreBinary(DEFAULT_TARGET.name, [ids], [out], weights, [], [kernel])


def test_gather_copies_the_selected_rows_bit_exactly() -> None:
    binary = embedding_binary()
    ids = np.random.default_rng(4).integers(0, VOCAB, (2, TOKENS)).astype(np.int32)
    ids[0, :3] = [0, VOCAB - 1, 0]  # both ends of the table, and a repeat
    (out,), profile = Emulator(binary).run([ids])
    table = binary.weights[0][1]
    assert np.array_equal(out, table[ids])
    assert profile.warnings == []


def test_int64_ids_are_narrowed_and_checked() -> None:
    binary = embedding_binary(ids_dtype="int64")
    ids = np.random.default_rng(5).integers(0, VOCAB, (2, TOKENS))
    (out,), _ = Emulator(binary).run([ids])
    assert np.array_equal(out, binary.weights[0][1][ids])
    ids[1, 2] = 2**40  # would wrap to 0 as int32: refused on the way in
    with pytest.raises(InputError, match=r"input 'ids': int64 value 1099511627776 .* int32"):
        Emulator(binary).run([ids])


@pytest.mark.parametrize("bad", [VOCAB, -1, 2**31 - 1])
def test_an_index_outside_the_table_faults(bad: int) -> None:
    binary = embedding_binary()
    ids = np.zeros((2, TOKENS), dtype=np.int32)
    ids[1, 5] = bad
    with pytest.raises(DeviceFault, match=rf"core 1, pc 1 \(dma.gather .*\): dma.gather row 5: "
                                          rf"index {bad} is outside the table's rows \[0, 100\)"):
        Emulator(binary).run([ids])


def test_one_by_one_and_batched_paths_agree() -> None:
    binary = embedding_binary(cores=4)
    ids = np.random.default_rng(6).integers(0, VOCAB, (4, TOKENS)).astype(np.int32)
    (a,), _ = Emulator(binary).run([ids])
    (b,), _ = Emulator(binary, batch_cores=False).run([ids])
    assert a.tobytes() == b.tobytes()
    ids[3, 0] = VOCAB
    with pytest.raises(DeviceFault, match="core 3, pc 1"):
        Emulator(binary, batch_cores=False).run([ids])


def test_a_limit_past_the_table_is_refused_at_load() -> None:
    # the whole [0, limit) range must lie in the table's allocation
    with pytest.raises(DeviceFault, match="runs past the end of allocation 'table'"):
        Emulator(embedding_binary(limit=VOCAB + 1))


def test_hazard_checker_sees_the_index_read() -> None:
    # the ids are copied by the SFU (another engine) to 0x800; a gather that reads them
    # there without depending on the copy may see the old bytes
    binary = embedding_binary()
    for program in binary.kernels[0].programs.values():
        program.insert(1, Instr.make("sfu.unary", deps=(0,), fn=0, src=0, dst=0x800, rows=1,
                                     cols=TOKENS, src_pitch=128, dst_pitch=128, src_dtype=2,
                                     dst_dtype=2))
        program[2] = gather(2 * GIB, 0x1000, TOKENS, 256, idx=0x800, limit=VOCAB, deps=(0,))
        program[3] = store(0x1000, program[3].arg("ddr"), TOKENS, 256, deps=(2,))
    _, profile = Emulator(binary).run([np.zeros((2, TOKENS), dtype=np.int32)])
    assert any("pc 2 (dma.gather" in w and "reads LX [0x800, 0x840)" in w
               and "last written by pc 1 (sfu.unary" in w for w in profile.warnings), \
        profile.warnings


def test_encoding_access_and_cost() -> None:
    instr = gather(2 * GIB, 0x1000, TOKENS, 256, idx=64, limit=VOCAB, deps=(0,))
    program = [load(0, 0, 1, 128), instr]
    assert decode_program(encode_program(program)) == program
    reads, writes = lx_access(instr)
    assert [(r.base, r.rows * r.row_bytes) for r in reads] == [(64, TOKENS * 4)]
    assert [(w.base, w.rows, w.row_bytes) for w in writes] == [(0x1000, TOKENS, 256)]
    cost = instr_cost(instr, DEFAULT_TARGET)
    # like a dma.load of 16 rows of 256 B: the setup, then 4096 B over LPDDR
    assert (cost.cycles, cost.lpddr_bytes) == (DEFAULT_TARGET.dma_setup_cycles, TOKENS * 256)


def test_a_misaligned_index_vector_is_refused() -> None:
    binary = embedding_binary()
    program = binary.kernels[0].programs[0]
    program[1] = gather(2 * GIB, 0x1000, TOKENS, 256, idx=2, limit=VOCAB, deps=(0,))
    with pytest.raises(DeviceFault, match="idx=2 is not 4-byte aligned"):
        Emulator(binary)


# ---- dma.scatter: the reverse, LX rows written to the LPDDR table rows an index names ---------

def scatter_binary(cores: int = 2) -> SpyreBinary:
    """out[ids[c, t]] = src[c, t] for each core c's TOKENS rows; other rows keep their bytes
    (zero: the output allocation starts zeroed)."""
    ids = bind("ids", (cores, TOKENS), "int32", 0)
    src = bind("src", (cores, TOKENS, DIM), "float32", 1 * GIB)
    out = bind("out", (VOCAB, DIM), "float32", 2 * GIB)
    row = out.layout.row_pitch
    programs = {}
    for core in range(cores):
        programs[core] = [
            load(ids.addr + core * ids.layout.row_pitch, 0, 1, ids.layout.row_pitch),
            load(src.addr + core * TOKENS * row, 0x1000, TOKENS, row),
            Instr.make("dma.scatter", deps=(0, 1), lx=0x1000, ddr=out.addr, rows=TOKENS,
                       row_bytes=row, lx_pitch=row, ddr_pitch=row, idx=0, limit=VOCAB),
        ]
    kernel = KernelImage("scatter", cores, programs, 0, min_offchip_bytes=2 * cores * TOKENS * row)
    return SpyreBinary(DEFAULT_TARGET.name, [ids, src], [out], [], [], [kernel])


def test_scatter_writes_rows_in_order() -> None:
    binary = scatter_binary(cores=1)
    ids = np.arange(TOKENS, dtype=np.int32)[None, ::-1].copy() * 3
    ids[0, 5] = ids[0, 9]  # a repeated index: the later row (9) wins
    src = np.random.default_rng(8).standard_normal((1, TOKENS, DIM)).astype(np.float32)
    (out,), profile = Emulator(binary).run([ids, src])
    expected = np.zeros((VOCAB, DIM), dtype=np.float32)
    for t in range(TOKENS):
        expected[ids[0, t]] = src[0, t]
    assert np.array_equal(out, expected)
    assert np.array_equal(out[ids[0, 9]], src[0, 9])
    assert profile.warnings == []


def test_scatter_checks_every_index_before_writing() -> None:
    binary = scatter_binary()
    ids = np.zeros((2, TOKENS), dtype=np.int32)
    ids[0, 15] = -3
    with pytest.raises(DeviceFault, match=r"core 0, pc 2 \(dma.scatter .*\): dma.scatter row 15: "
                                          r"index -3 is outside the table's rows \[0, 100\)"):
        Emulator(binary).run([ids, np.ones((2, TOKENS, DIM), dtype=np.float32)])


def test_scatter_access_reads_the_indices_and_the_tile() -> None:
    instr = scatter_binary().kernels[0].programs[0][2]
    reads, writes = lx_access(instr)
    assert [(r.base, r.rows * r.row_bytes) for r in reads] == [(0, TOKENS * 4),
                                                              (0x1000, TOKENS * 256)]
    assert writes == ()
    assert instr_cost(instr, DEFAULT_TARGET).lpddr_bytes == TOKENS * 256
