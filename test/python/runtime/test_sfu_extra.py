"""sfu.scalar, sfu.reduce and sfu.colwise: numerics, padding, validation, timing, hazards.

Most tests pre-fill one core's LX, run a hand-built program on it and read LX back, so they
see the raw device bits, padding and bytes an instruction must leave alone included. The last
test is a row softmax built from the new instructions, run from LPDDR to LPDDR.
"""

import numpy as np
import pytest
from runtime_helpers import DL16, F32, I32, bind, load, store

from spyrec.runtime import dl16
from spyrec.runtime.dl16 import half_codec, round_dl16
from spyrec.runtime.emulator import Emulator
from spyrec.runtime.memory import DeviceFault
from spyrec.runtime.timing import instr_cost
from spyrec.target import DEFAULT_TARGET, GIB
from spyrec.target.container import KernelImage, SpyreBinary
from spyrec.target.isa import (
    STICK_BYTES,
    BinaryFn,
    Instr,
    ReduceFn,
    UnaryFn,
    bits_f32,
    decode_program,
    encode_program,
    f32_bits,
    lx_access,
)

T = DEFAULT_TARGET
SRC, SRC1, DST = 0x0, 0x4000, 0x8000
GARBAGE = 0xCD  # fill byte for LX an instruction must not touch

# float64 models of the binary functions: rounding their result once to fp32 gives the IEEE fp32
# result (float64 has more than 2 * 24 + 2 bits, so the double rounding is innocuous).
F64 = {BinaryFn.ADD: np.add, BinaryFn.SUB: np.subtract, BinaryFn.MUL: np.multiply,
       BinaryFn.DIV: np.divide, BinaryFn.MAX: np.maximum, BinaryFn.MIN: np.minimum,
       BinaryFn.KEEP: lambda a, p: np.where(p != 0, a, -0.0)}


def one_core(program: list[Instr]) -> SpyreBinary:
    """A binary running `program` on core 0; its DMAs may use the LPDDR scratch [0, 4 KiB)."""
    scratch = bind("scratch", (32, 32), "float32", 0)
    return SpyreBinary(T.name, [], [], [], [scratch], [KernelImage("k", 1, {0: program})])


def run_on_lx(program: list[Instr], init: dict[int, np.ndarray],
              numerics: str = "dl16") -> np.ndarray:
    """Run `program` on core 0 with LX pre-filled (offset -> array bytes); the LX after it."""
    emulator = Emulator(one_core(program), numerics=numerics, strict=True)
    lx = emulator.lx[0].buffer
    assert lx is not None
    lx[:] = GARBAGE
    for offset, data in init.items():
        raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        lx[offset: offset + raw.size] = raw
    outputs, profile = emulator.run([])
    assert outputs == [] and profile.warnings == []
    return lx.copy()


def tile(lx: np.ndarray, offset: int, rows: int, pitch: int, dtype: type) -> np.ndarray:
    """LX bytes [offset, offset + rows * pitch) as a (rows, pitch / itemsize) array."""
    return lx[offset: offset + rows * pitch].view(dtype).reshape(rows, -1)


def dl16_data(seed: int, rows: int, cols: int, scale: float = 1.0) -> np.ndarray:
    """Random DL16 bit patterns, shape (rows, cols)."""
    values = np.random.default_rng(seed).standard_normal((rows, cols)) * scale
    return dl16.encode(values.astype(np.float32))


def scalar(fn: int, value: float, reverse: int = 0, deps: tuple[int, ...] = (),
           **fields: int) -> Instr:
    args = {"fn": fn, "src": SRC, "dst": DST, "rows": 4, "cols": 64, "src_pitch": 128,
            "dst_pitch": 128, "src_dtype": DL16, "dst_dtype": DL16, "imm": f32_bits(value),
            "reverse": reverse}
    return Instr.make("sfu.scalar", deps=deps, **(args | fields))


def colwise(fn: int, reverse: int = 0, deps: tuple[int, ...] = (), **fields: int) -> Instr:
    args = {"fn": fn, "src0": SRC, "src1": SRC1, "dst": DST, "rows": 4, "cols": 64,
            "src0_pitch": 128, "src1_pitch": 128, "dst_pitch": 128, "src0_dtype": DL16,
            "src1_dtype": DL16, "dst_dtype": DL16, "reverse": reverse}
    return Instr.make("sfu.colwise", deps=deps, **(args | fields))


def reduce(fn: int, deps: tuple[int, ...] = (), **fields: int) -> Instr:
    args = {"fn": fn, "src": SRC, "dst": DST, "rows": 4, "cols": 64, "src_pitch": 128,
            "dst_pitch": 128, "src_dtype": DL16, "dst_dtype": DL16}
    return Instr.make("sfu.reduce", deps=deps, **(args | fields))


# ---- encoding and geometry -------------------------------------------------------------------

def test_new_opcodes_round_trip_and_report_their_regions() -> None:
    program = [scalar(BinaryFn.SUB, 0.5, reverse=1), reduce(ReduceFn.MAX),
               colwise(BinaryFn.DIV, reverse=1)]
    assert decode_program(encode_program(program)) == program
    assert bits_f32(program[0].arg("imm")) == 0.5
    assert T.stick_bytes == STICK_BYTES
    # sfu.reduce writes a whole stick per destination row, whatever cols and dst_dtype are.
    (src,), (dst,) = lx_access(reduce(ReduceFn.SUM, cols=10, dst_pitch=256, dst_dtype=F32))
    assert (src.rows, src.row_bytes, src.pitch) == (4, 20, 128)
    assert (dst.rows, dst.row_bytes, dst.pitch) == (4, 128, 256)
    # sfu.colwise reads one element per row of src1.
    (src0, src1), (dst,) = lx_access(colwise(BinaryFn.ADD, src1_dtype=F32, src1_pitch=512))
    assert (src0.row_bytes, src1.row_bytes, src1.pitch, dst.row_bytes) == (128, 4, 512, 128)


# ---- sfu.scalar -------------------------------------------------------------------------------

@pytest.mark.parametrize("reverse", [0, 1])
@pytest.mark.parametrize("fn", list(BinaryFn))
def test_scalar_dl16_is_bit_exact(fn: BinaryFn, reverse: int) -> None:
    x = dl16_data(int(fn), 4, 64)
    s = 0.7  # not a DL16 value: s stays fp32, only the result is rounded
    lx = run_on_lx([scalar(fn, s, reverse)], {SRC: x})
    xd, s64 = dl16.decode(x).astype(np.float64), np.float64(np.float32(s))
    exact = F64[fn](s64, xd) if reverse else F64[fn](xd, s64)
    expected = dl16.encode(exact.astype(np.float32))
    assert np.array_equal(tile(lx, DST, 4, 128, np.uint16), expected)


def test_scalar_fp32_and_reverse_is_not_commutative() -> None:
    x = np.random.default_rng(1).standard_normal((3, 32)).astype(np.float32) + 2
    program = [scalar(BinaryFn.DIV, 3.0, 1, rows=3, cols=32, src_dtype=F32, dst_dtype=F32),
               scalar(BinaryFn.DIV, 3.0, 0, rows=3, cols=32, src_dtype=F32, dst_dtype=F32,
                      dst=DST + 0x1000)]
    lx = run_on_lx(program, {SRC: x})
    assert np.array_equal(tile(lx, DST, 3, 128, np.float32),
                          (3.0 / x.astype(np.float64)).astype(np.float32))
    assert np.array_equal(tile(lx, DST + 0x1000, 3, 128, np.float32), x / np.float32(3))


def test_scalar_leaves_the_row_padding_alone() -> None:
    # 40 DL16 columns = 80 bytes of each 128-byte row; bytes 80..127 keep their old contents.
    x = dl16_data(2, 4, 64)
    lx = run_on_lx([scalar(BinaryFn.ADD, 1.0, cols=40)], {SRC: x})
    out = tile(lx, DST, 4, 128, np.uint16)
    assert np.array_equal(out[:, :40], dl16.encode(dl16.decode(x[:, :40]) + np.float32(1)))
    assert (tile(lx, DST, 4, 128, np.uint8)[:, 80:] == GARBAGE).all()


def test_scalar_ieee_numerics_round_through_fp16() -> None:
    codec = half_codec("ieee")
    x = codec.encode(np.linspace(-3, 3, 4 * 64, dtype=np.float32).reshape(4, 64))
    lx = run_on_lx([scalar(BinaryFn.MUL, 1.1)], {SRC: x}, numerics="ieee")
    expected = codec.encode(codec.decode(x) * np.float32(1.1))
    assert np.array_equal(tile(lx, DST, 4, 128, np.uint16), expected)


def test_scalar_int32_wraps_and_reverses() -> None:
    x = np.array([[2**31 - 1, -5, 7, 0] + [0] * 28], dtype=np.int32)
    program = [scalar(BinaryFn.ADD, 3.0, rows=1, cols=32, src_dtype=I32, dst_dtype=I32),
               scalar(BinaryFn.SUB, 10.0, 1, rows=1, cols=32, src_dtype=I32, dst_dtype=I32,
                      dst=DST + 128)]
    lx = run_on_lx(program, {SRC: x})
    assert tile(lx, DST, 1, 128, np.int32)[0, :4].tolist() == [-(2**31) + 2, -2, 10, 3]
    assert tile(lx, DST + 128, 1, 128, np.int32)[0, :4].tolist() == [-(2**31) + 11, 15, 3, 10]


# ---- sfu.colwise ------------------------------------------------------------------------------

@pytest.mark.parametrize("reverse", [0, 1])
@pytest.mark.parametrize("fn", list(BinaryFn))
def test_colwise_dl16_with_pitched_rows_is_bit_exact(fn: BinaryFn, reverse: int) -> None:
    # src0: 5 rows of 70 DL16 (140 bytes) at a pitch of 384 bytes, garbage in between.
    # src1: one value per row at the start of a stick (a reduce result); the rest of each
    # stick holds huge values that must not leak in. dst: rows 256 bytes apart.
    rows, cols = 5, 70
    x = dl16_data(10 + int(fn), rows, 192)
    x[:, cols:] = dl16.encode(np.float32(8e9))
    col = dl16_data(20 + int(fn), rows, 64)
    col[:, 1:] = dl16.encode(np.float32(-8e9))
    instr = colwise(fn, reverse, rows=rows, cols=cols, src0_pitch=384, dst_pitch=256)
    lx = run_on_lx([instr], {SRC: x, SRC1: col})
    a, b = dl16.decode(x[:, :cols]).astype(np.float64), dl16.decode(col[:, :1]).astype(np.float64)
    exact = F64[fn](b, a) if reverse else F64[fn](a, b)
    out = tile(lx, DST, rows, 256, np.uint16)
    assert np.array_equal(out[:, :cols], dl16.encode(exact.astype(np.float32)))
    assert (tile(lx, DST, rows, 256, np.uint8)[:, 2 * cols:] == GARBAGE).all()


def test_colwise_mixed_types_and_broadcast_pitch() -> None:
    # fp32 src0, one DL16 value for all rows (src1_pitch 0), fp32 result.
    x = np.random.default_rng(3).standard_normal((4, 32)).astype(np.float32)
    col = dl16.encode(np.array([2.5] + [0.0] * 63, dtype=np.float32))
    instr = colwise(BinaryFn.SUB, 1, cols=32, src0_dtype=F32, dst_dtype=F32, src1_pitch=0)
    lx = run_on_lx([instr], {SRC: x, SRC1: col})
    assert np.array_equal(tile(lx, DST, 4, 128, np.float32), np.float32(2.5) - x)


def test_colwise_int32_wraps() -> None:
    x = np.array([[2**31 - 1, 1] + [0] * 30, [5, 6] + [0] * 30], dtype=np.int32)
    col = np.array([[1] + [99] * 31, [-2] + [99] * 31], dtype=np.int32)
    instr = colwise(BinaryFn.SUB, 1, rows=2, cols=32, src0_dtype=I32, src1_dtype=I32,
                    dst_dtype=I32)
    lx = run_on_lx([instr], {SRC: x, SRC1: col})
    out = tile(lx, DST, 2, 128, np.int32)
    assert out[:, :2].tolist() == [[-(2**31) + 2, 0], [-7, -8]]


# ---- sfu.reduce -------------------------------------------------------------------------------

@pytest.mark.parametrize("fn", list(ReduceFn))
def test_reduce_dl16_ignores_padding_and_zeroes_the_stick(fn: ReduceFn) -> None:
    # 6 rows of 50 DL16 in 128-byte rows; columns 50..63 hold a value that would dominate any
    # of the reductions. The destination rows are 256 bytes apart and start out as garbage.
    rows, cols = 6, 50
    x = dl16_data(30 + int(fn), rows, 64, scale=3)
    x[:, cols:] = dl16.encode(np.float32(-8e9 if fn is ReduceFn.MIN else 8e9))
    lx = run_on_lx([reduce(fn, rows=rows, cols=cols, dst_pitch=256)], {SRC: x})
    values = dl16.decode(x[:, :cols])
    expected = {ReduceFn.SUM: lambda: np.sum(values, axis=1, dtype=np.float32),
                ReduceFn.MAX: lambda: values.max(axis=1),
                ReduceFn.MIN: lambda: values.min(axis=1)}[fn]()
    out = tile(lx, DST, rows, 256, np.uint16)
    assert np.array_equal(out[:, 0], dl16.encode(expected))
    assert (out[:, 1:64] == 0).all()  # the rest of the first stick is +0
    assert (tile(lx, DST, rows, 256, np.uint8)[:, 128:] == GARBAGE).all()  # beyond: untouched
    if fn is not ReduceFn.SUM:  # max / min of DL16 values is one of them, exactly
        assert np.isin(dl16.decode(out[:, 0]), values).all()
    exact = values.astype(np.float64).sum(axis=1)
    assert np.allclose(dl16.decode(out[:, 0]), {ReduceFn.SUM: exact}.get(fn, expected),
                       rtol=2.0**-9, atol=1e-3)


def test_reduce_fp32_over_several_sticks() -> None:
    # 100 fp32 columns span four 128-byte sticks of a 512-byte row; padding columns are huge.
    rows, cols = 3, 100
    x = np.random.default_rng(4).standard_normal((rows, 128)).astype(np.float32)
    x[:, cols:] = 1e30
    # Row 0 tells fp32 accumulation from float64's: in NumPy's order the 1 meets 2^24 first
    # and is lost (a float64 accumulator would return 1).
    x[0, :cols] = 0
    x[0, [0, 8, 16]] = [2.0**24, 1, -(2.0**24)]
    program = [reduce(ReduceFn.SUM, rows=rows, cols=cols, src_pitch=512, src_dtype=F32,
                      dst_dtype=F32),
               reduce(ReduceFn.MAX, rows=rows, cols=cols, src_pitch=512, src_dtype=F32,
                      dst_dtype=DL16, dst=DST + 0x1000)]
    lx = run_on_lx(program, {SRC: x})
    total = tile(lx, DST, rows, 128, np.float32)
    assert np.array_equal(total[:, 0], np.sum(np.ascontiguousarray(x[:, :cols]), axis=1,
                                              dtype=np.float32))
    assert total[0, 0] == 0
    assert np.allclose(total[1:, 0], x[1:, :cols].astype(np.float64).sum(axis=1), rtol=1e-5)
    assert (total[:, 1:] == 0).all()
    top = tile(lx, DST + 0x1000, rows, 128, np.uint16)
    assert np.array_equal(top[:, 0], dl16.encode(x[:, :cols].max(axis=1)))
    assert (top[:, 1:] == 0).all()


def test_reduce_in_place() -> None:
    # The result may overwrite its own source: everything is read before anything is written.
    x = dl16_data(5, 2, 64)
    lx = run_on_lx([reduce(ReduceFn.SUM, rows=2, dst=SRC)], {SRC: x})
    out = tile(lx, SRC, 2, 128, np.uint16)
    assert np.array_equal(out[:, 0], dl16.encode(np.sum(dl16.decode(x), axis=1,
                                                        dtype=np.float32)))
    assert (out[:, 1:] == 0).all()


# ---- validation -------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("instr", "message"),
    [
        (scalar(7, 1.0), "fn=7 is not a binary SFU function"),
        (scalar(BinaryFn.ADD, 1.0, reverse=2), "reverse=2 must be 0 or 1"),
        (scalar(BinaryFn.ADD, 1.0, imm=1 << 32), "imm=4294967296 is not a 32-bit fp32 bit"),
        (scalar(BinaryFn.DIV, 2.0, src_dtype=I32, dst_dtype=I32, cols=32),
         "DIV has no int32 form"),
        (scalar(BinaryFn.ADD, 1.5, src_dtype=I32, dst_dtype=I32, cols=32),
         "is the fp32 1.5, not an int32 value"),
        (scalar(BinaryFn.ADD, 1.0, rows=0), "rows=0 must be positive"),
        (colwise(9), "fn=9 is not a binary SFU function"),
        (colwise(BinaryFn.SUB, reverse=-1), "reverse=-1 must be 0 or 1"),
        (colwise(BinaryFn.DIV, src0_dtype=I32, src1_dtype=I32, dst_dtype=I32, cols=32),
         "DIV has no int32 form"),
        (colwise(BinaryFn.ADD, src1_dtype=5), "src1_dtype=5 is not a device dtype"),
        (colwise(BinaryFn.ADD, cols=0), "cols=0 must be positive"),
        (reduce(3), "fn=3 is not an SFU reduction"),
        (reduce(ReduceFn.SUM, src_dtype=I32, cols=32), "sfu.reduce has no int32 mode"),
        (reduce(ReduceFn.MAX, dst_pitch=64), "dst_pitch=64 is less than the 128-byte stick"),
        (reduce(ReduceFn.MAX, dst=T.lx_bytes - 64, rows=1), "overflows the 2097152-byte LX"),
    ],
)
def test_invalid_instructions_fault(instr: Instr, message: str) -> None:
    with pytest.raises(DeviceFault) as info:
        Emulator(one_core([load(0, 0x10000, 1, 128), instr]), mode="timing")
    assert str(info.value).startswith(f"core 0, pc 1 ({instr.disassemble()}): ")
    assert message in str(info.value)


def test_a_one_row_reduce_may_use_any_pitch() -> None:
    x = dl16_data(6, 1, 64)
    lx = run_on_lx([reduce(ReduceFn.MAX, rows=1, dst_pitch=0)], {SRC: x})
    assert tile(lx, DST, 1, 128, np.uint16)[0, 0] == dl16.encode(dl16.decode(x).max())


# ---- timing and hazards -----------------------------------------------------------------------

def test_costs_are_sfu_passes_on_their_unit() -> None:
    sfu1 = 1 + T.corelets_per_core + 1
    # scalar: a unary pass; 64 rows x 64 DL16 = one stick per row, two with an fp32 result.
    assert instr_cost(scalar(BinaryFn.DIV, 2.0, rows=64), T).cycles == 64
    assert instr_cost(scalar(BinaryFn.MUL, 2.0, rows=64, dst_dtype=F32), T).cycles == 128
    # colwise: a binary pass at the widest operand type, the one-column src1 included.
    assert instr_cost(colwise(BinaryFn.SUB, rows=64), T).cycles == 64
    assert instr_cost(colwise(BinaryFn.SUB, rows=64, src1_dtype=F32), T).cycles == 128
    # reduce: the source rows only; 200 DL16 = 400 bytes = 4 sticks a row, whatever dst is.
    assert instr_cost(reduce(ReduceFn.SUM, rows=64, cols=200, src_pitch=512), T).cycles == 256
    assert instr_cost(reduce(ReduceFn.SUM, rows=64, cols=200, src_pitch=512, dst_dtype=F32),
                      T).cycles == 256
    assert instr_cost(reduce(ReduceFn.MAX, rows=1, cols=1), T).cycles == 1
    for instr in (scalar(BinaryFn.ADD, 1.0), colwise(BinaryFn.ADD), reduce(ReduceFn.SUM)):
        unit1 = Instr(instr.op, instr.args, unit=1)
        cost = instr_cost(unit1, T)
        assert cost.track == sfu1 and cost.lpddr_bytes == 0
        # No operand streams faster than the SFU's peak (operands stream side by side, as in
        # sfu.binary; the reduce's one-stick-per-row result is not counted).
        reads, (write,) = lx_access(unit1)
        streams = reads if instr.op == "sfu.reduce" else (*reads, write)
        for region in streams:
            assert region.rows * region.row_bytes <= cost.cycles * T.sfu_bytes_per_cycle_per_corelet


def hazards_of(program: list[Instr]) -> list[str]:
    return Emulator(one_core(program), mode="timing").run()[1].warnings


def test_hazard_checker_sees_the_reduce_stick_and_the_colwise_column() -> None:
    # A copy reads element 5 of the reduce's destination stick (its zero padding) unordered.
    copy = Instr.make("sfu.unary", unit=1, fn=UnaryFn.COPY, src=DST + 10, dst=0x20000, rows=1,
                      cols=1, src_pitch=128, dst_pitch=128, src_dtype=DL16, dst_dtype=DL16)
    found = hazards_of([reduce(ReduceFn.SUM, rows=1), copy])
    assert len(found) == 1 and "pc 1 (sfu.unary" in found[0]
    assert "last written by pc 0 (sfu.reduce" in found[0]
    # A load refills row 2's stick of the colwise column while the colwise may still read it.
    found = hazards_of([colwise(BinaryFn.DIV), load(0, SRC1 + 2 * 128, 1, 128)])
    assert len(found) == 1 and "still read by pc 0 (sfu.colwise" in found[0]
    # With the dependency both programs are clean.
    assert hazards_of([reduce(ReduceFn.SUM, rows=1), Instr(copy.op, copy.args, 1, (0,))]) == []
    assert hazards_of([colwise(BinaryFn.DIV), load(0, SRC1 + 2 * 128, 1, 128, deps=(0,))]) == []


# ---- end to end -------------------------------------------------------------------------------

def softmax_binary(rows: int, cols: int) -> SpyreBinary:
    """out = softmax(x, dim=1) for fp16 x: max, subtract, exp, sum, divide, all on the SFU.

    LX: X (DL16, 256-byte rows) -> M = rowmax (DL16, one stick a row) -> T = X - M (fp32,
    512-byte rows) -> exp in place (SFU 1) -> S = rowsum (fp32, one stick a row) -> O = T / S
    (DL16) -> store.
    """
    x = bind("x", (rows, cols), "float16", 0)
    out = bind("out", (rows, cols), "float16", GIB)
    xp, op = x.layout.row_pitch, out.layout.row_pitch
    lx_x, lx_m, lx_t, lx_s, lx_o = 0, 0x4000, 0x8000, 0x10000, 0x14000
    tp = 512
    sfu = {"rows": rows, "cols": cols}
    program = [
        load(x.addr, lx_x, rows, xp),
        reduce(ReduceFn.MAX, deps=(0,), src=lx_x, dst=lx_m, src_pitch=xp, dst_pitch=128, **sfu),
        colwise(BinaryFn.SUB, deps=(1,), src0=lx_x, src1=lx_m, dst=lx_t, src0_pitch=xp,
                src1_pitch=128, dst_pitch=tp, dst_dtype=F32, **sfu),
        Instr.make("sfu.unary", unit=1, deps=(2,), fn=UnaryFn.EXP, src=lx_t, dst=lx_t,
                   src_pitch=tp, dst_pitch=tp, src_dtype=F32, dst_dtype=F32, **sfu),
        reduce(ReduceFn.SUM, deps=(3,), src=lx_t, dst=lx_s, src_pitch=tp, dst_pitch=128,
               src_dtype=F32, dst_dtype=F32, **sfu),
        colwise(BinaryFn.DIV, deps=(4,), src0=lx_t, src1=lx_s, dst=lx_o, src0_pitch=tp,
                src1_pitch=128, dst_pitch=op, src0_dtype=F32, src1_dtype=F32, **sfu),
        store(lx_o, out.addr, rows, op, deps=(5,)),
    ]
    kernel = KernelImage("softmax", 1, {0: program}, flops=5 * rows * cols,
                         min_offchip_bytes=x.layout.logical_nbytes + out.layout.logical_nbytes)
    return SpyreBinary(T.name, [x], [out], [], [], [kernel])


def test_row_softmax_end_to_end() -> None:
    rows, cols = 64, 100
    binary = softmax_binary(rows, cols)
    x = (np.random.default_rng(8).standard_normal((rows, cols)) * 3).astype(np.float16)
    (out,), profile = Emulator(binary, strict=True).run([x])
    assert profile.warnings == []
    # Bit-exact against the same steps in NumPy ...
    xd = round_dl16(x.astype(np.float32))
    t = xd - xd.max(axis=1, keepdims=True)
    e = np.exp(t.astype(np.float64)).astype(np.float32)
    s = np.sum(e, axis=1, dtype=np.float32, keepdims=True)
    assert np.array_equal(out, round_dl16(e / s).astype(np.float16))
    # ... and within DL16 rounding (2^-10 relative) of float64's softmax of the device input.
    exact = np.exp(xd - xd.max(axis=1, keepdims=True).astype(np.float64))
    exact /= exact.sum(axis=1, keepdims=True)
    assert np.all(np.abs(out - exact) <= 2.0**-9 * exact + 2.0**-24)
    assert np.allclose(out.astype(np.float64).sum(axis=1), 1, atol=2e-3)
    # Timing: six SFU passes after the load; every figure within the target's peaks.
    kernel = profile.kernels[0]
    assert kernel.instructions == 7 and kernel.busy_cycles["sfu"] > 0
    for value in profile.utilisation().values():
        assert 0 <= value <= 1 + 1e-12
    assert 0 < profile.roofline_ratio <= 1
    _, timing = Emulator(binary, mode="timing").run()
    assert timing.emulated_cycles == profile.emulated_cycles
