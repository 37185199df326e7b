"""pt.matmul_nt and sfu.mask: numerics, geometry, validation, timing, hazards, one head end to end.

Like test_sfu_extra.py, most tests pre-fill one core's LX, run a hand-built program and read LX
back, so they see the raw device bits and the bytes an instruction must leave alone. The
references are NumPy computations of the same steps on decoded DL16 values: the emulator must
agree bit for bit.
"""

import numpy as np
import pytest
from runtime_helpers import DL16, F32, I32, bind, load, store
from test_sfu_extra import DST, GARBAGE, SRC, SRC1, dl16_data, one_core, run_on_lx, tile

from spyrec.runtime import dl16
from spyrec.runtime.dl16 import round_dl16
from spyrec.runtime.emulator import Emulator
from spyrec.runtime.memory import DeviceFault
from spyrec.runtime.timing import instr_cost
from spyrec.target import DEFAULT_TARGET, GIB
from spyrec.target.container import KernelImage, SpyreBinary
from spyrec.target.isa import (
    BinaryFn,
    Instr,
    ReduceFn,
    UnaryFn,
    decode_program,
    encode_program,
    f32_bits,
    lx_access,
    matmul_flops,
)

T = DEFAULT_TARGET
MASKED = -30000.0  # what the compiler writes: finite, and exp(-30000 - max) is exactly 0


def matmul_nt(deps: tuple[int, ...] = (), **fields: int) -> Instr:
    args = {"a": SRC, "b": SRC1, "c": DST, "m": 4, "k": 64, "n": 8, "a_pitch": 128,
            "b_pitch": 128, "c_pitch": 128, "in_dtype": DL16, "accumulate": 0}
    return Instr.make("pt.matmul_nt", deps=deps, **(args | fields))


def mask(diag: int = 0, value: float = MASKED, deps: tuple[int, ...] = (),
         **fields: int) -> Instr:
    args = {"src": SRC, "dst": DST, "rows": 4, "cols": 64, "src_pitch": 128, "dst_pitch": 128,
            "src_dtype": DL16, "dst_dtype": DL16, "diag": diag, "imm": f32_bits(value)}
    return Instr.make("sfu.mask", deps=deps, **(args | fields))


# ---- encoding and geometry -------------------------------------------------------------------

def test_new_opcodes_round_trip_and_report_their_regions() -> None:
    program = [matmul_nt(accumulate=1), mask(diag=-3)]
    assert decode_program(encode_program(program)) == program
    assert program[1].arg("diag") == -3
    # B is read as n = 8 rows of k = 64 DL16 (128 bytes), not k rows of n.
    (a, b, c_old), (c,) = lx_access(program[0])
    assert (a.rows, a.row_bytes) == (4, 128)
    assert (b.rows, b.row_bytes, b.pitch) == (8, 128, 128)
    assert (c.rows, c.row_bytes) == (4, 32) and c_old == c  # accumulate reads C as well
    (src,), (dst,) = lx_access(mask(cols=100, src_pitch=256, dst_dtype=F32, dst_pitch=512))
    assert (src.row_bytes, src.pitch, dst.row_bytes, dst.pitch) == (200, 256, 400, 512)
    assert matmul_flops(program[0]) == 2 * 4 * 64 * 8


# ---- pt.matmul_nt -----------------------------------------------------------------------------

@pytest.mark.parametrize("accumulate", [0, 1])
def test_matmul_nt_dl16_is_bit_exact(accumulate: int) -> None:
    # A: 6 x 64 DL16; B: 10 rows of 64 DL16 at a 256-byte pitch (garbage between rows);
    # C: 6 x 10 fp32 at a 128-byte pitch, preloaded with values the accumulate mode adds to.
    m, k, n = 6, 64, 10
    a = dl16_data(1, m, k)
    b = np.zeros((n, 128), np.uint16)
    b[:, :k] = dl16_data(2, n, k)
    b[:, k:] = dl16.encode(np.float32(8e9))  # beyond k: must not be read
    c0 = np.random.default_rng(3).standard_normal((m, 32)).astype(np.float32)
    instr = matmul_nt(m=m, k=k, n=n, b_pitch=256, accumulate=accumulate)
    lx = run_on_lx([instr], {SRC: a, SRC1: b, DST: c0})
    product = np.matmul(dl16.decode(a), dl16.decode(b[:, :k]).T, dtype=np.float32)
    expected = c0[:, :n] + product if accumulate else product
    out = tile(lx, DST, m, 128, np.float32)
    assert np.array_equal(out[:, :n], expected)
    assert np.array_equal(out[:, n:], c0[:, n:])  # the rest of each C row is untouched


def test_matmul_nt_fp32_equals_matmul_of_the_transpose() -> None:
    # The same product through pt.matmul with B stored transposed gives the same bits.
    m, k, n = 5, 32, 7
    rng = np.random.default_rng(4)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((n, k)).astype(np.float32)
    bt = np.zeros((k, 32), np.float32)
    bt[:, :n] = b.T
    program = [matmul_nt(m=m, k=k, n=n, in_dtype=F32),
               Instr.make("pt.matmul", a=SRC, b=0x10000, c=DST + 0x1000, m=m, k=k, n=n,
                          a_pitch=128, b_pitch=128, c_pitch=128, in_dtype=F32, accumulate=0)]
    lx = run_on_lx(program, {SRC: a, SRC1: b, 0x10000: bt})
    nt = tile(lx, DST, m, 128, np.float32)[:, :n]
    assert np.array_equal(nt, tile(lx, DST + 0x1000, m, 128, np.float32)[:, :n])
    assert np.array_equal(nt, np.matmul(a, b.T, dtype=np.float32))


# ---- sfu.mask ---------------------------------------------------------------------------------

@pytest.mark.parametrize("diag", [-2, 0, 5, 70])
def test_mask_dl16_is_bit_exact(diag: int) -> None:
    # Row r keeps columns c <= r + diag and gets -30000 (rounded to DL16) everywhere else;
    # diag = 70 keeps every one of the 64 columns, -2 masks row 0 and 1 entirely.
    x = dl16_data(5, 4, 64, scale=4)
    lx = run_on_lx([mask(diag)], {SRC: x})
    r, c = np.arange(4)[:, None], np.arange(64)[None, :]
    expected = np.where(c > r + diag, dl16.encode(np.float32(MASKED)), x)
    assert np.array_equal(tile(lx, DST, 4, 128, np.uint16), expected)


def test_mask_fp32_with_a_converted_source_in_place_leaves_the_padding() -> None:
    # A DL16 source (4 x 50, 128-byte rows) masked into fp32 in a separate tile, then an fp32
    # tile masked in place; bytes past the 50 (100) columns keep their contents.
    x = dl16_data(6, 4, 64)
    y = np.random.default_rng(7).standard_normal((4, 128)).astype(np.float32)
    program = [mask(1, cols=50, dst_dtype=F32, dst_pitch=512),
               mask(-1, value=-1e30, src=SRC1, dst=SRC1, cols=100, src_pitch=512,
                    dst_pitch=512, src_dtype=F32, dst_dtype=F32)]
    lx = run_on_lx(program, {SRC: x, SRC1: y})
    r, c = np.arange(4)[:, None], np.arange(50)[None, :]
    out = tile(lx, DST, 4, 512, np.float32)
    assert np.array_equal(out[:, :50], np.where(c > r + 1, np.float32(MASKED),
                                                dl16.decode(x[:, :50])))
    assert (tile(lx, DST, 4, 512, np.uint8)[:, 200:] == GARBAGE).all()
    r, c = np.arange(4)[:, None], np.arange(100)[None, :]
    inplace = tile(lx, SRC1, 4, 512, np.float32)
    assert np.array_equal(inplace[:, :100], np.where(c > r - 1, np.float32(-1e30), y[:, :100]))
    assert np.array_equal(inplace[:, 100:], y[:, 100:])


def test_exp_of_a_masked_score_is_exactly_zero() -> None:
    # The reason for a finite mask value: DL16 has no -inf (it would be NaN), while
    # exp(-30000 - max) underflows to +0 in fp32 and in DL16.
    x = dl16_data(8, 4, 64)
    program = [mask(0, dst_dtype=F32, dst_pitch=256),
               Instr.make("sfu.reduce", deps=(0,), fn=ReduceFn.MAX, src=DST, dst=0x10000,
                          rows=4, cols=64, src_pitch=256, dst_pitch=128, src_dtype=F32,
                          dst_dtype=F32),
               Instr.make("sfu.colwise", deps=(1,), fn=BinaryFn.SUB, src0=DST, src1=0x10000,
                          dst=DST, rows=4, cols=64, src0_pitch=256, src1_pitch=128,
                          dst_pitch=256, src0_dtype=F32, src1_dtype=F32, dst_dtype=F32,
                          reverse=0),
               Instr.make("sfu.unary", deps=(2,), fn=UnaryFn.EXP, src=DST, dst=0x12000, rows=4,
                          cols=64, src_pitch=256, dst_pitch=128, src_dtype=F32, dst_dtype=DL16)]
    lx = run_on_lx(program, {SRC: x})
    e = tile(lx, 0x12000, 4, 128, np.uint16)
    upper = np.arange(64)[None, :] > np.arange(4)[:, None]
    assert (e[upper] == 0).all() and (dl16.decode(e[~upper]) > 0).all()


# ---- validation, timing and hazards -----------------------------------------------------------

@pytest.mark.parametrize(
    ("instr", "message"),
    [
        (matmul_nt(in_dtype=I32), "pt.matmul_nt has no int32 mode"),
        (matmul_nt(n=0), "n=0 must be positive"),
        (mask(src_dtype=I32, cols=32), "sfu.mask has no int32 mode"),
        (mask(imm=-(1 << 31) - 1), "is not a 32-bit fp32 bit pattern"),
        (mask(rows=0), "rows=0 must be positive"),
        (matmul_nt(b=T.lx_bytes - 256), "overflows the 2097152-byte LX"),
    ],
)
def test_invalid_instructions_fault(instr: Instr, message: str) -> None:
    with pytest.raises(DeviceFault) as info:
        Emulator(one_core([load(0, 0x10000, 1, 128), instr]), mode="timing")
    assert str(info.value).startswith(f"core 0, pc 1 ({instr.disassemble()}): ")
    assert message in str(info.value)


def test_costs() -> None:
    # matmul_nt: as pt.matmul, 2 * 64 * 64 * 104 / 1024 cycles with n = 100 rounded up to 104.
    cost = instr_cost(matmul_nt(m=64, k=64, n=100, unit=1), T)
    assert (cost.track, cost.cycles) == (2, 2 * 64 * 64 * 104 // 1024)
    # mask: one pass, 100 fp32 columns = 400 bytes = 4 sticks a row (a DL16 source is narrower).
    cost = instr_cost(mask(rows=32, cols=100, src_pitch=256, dst_pitch=512, dst_dtype=F32), T)
    assert (cost.track, cost.cycles) == (1 + T.corelets_per_core, 32 * 4)


def test_hazard_checker_sees_the_transposed_b_rows() -> None:
    # Refilling row 7 of B (the last of n = 8 rows) while the matmul may read it is a hazard;
    # row 8 is outside the n x k tile.
    warnings = Emulator(one_core([matmul_nt(), load(0, SRC1 + 7 * 128, 1, 128)]),
                        mode="timing").run()[1].warnings
    assert len(warnings) == 1 and "still read by pc 0 (pt.matmul_nt" in warnings[0]
    assert Emulator(one_core([matmul_nt(), load(0, SRC1 + 8 * 128, 1, 128)]),
                    mode="timing").run()[1].warnings == []


# ---- one attention head end to end ------------------------------------------------------------

def head_binary(s: int, d: int, scale: float) -> SpyreBinary:
    """softmax(mask(Q K^T * scale)) V for one fp16 head, s x d, in one core's LX.

    Q, K, V: DL16 rows of d elements (d = 64: one stick); scores fp32 s x s (rows of
    round_up(4 s, 128) bytes); causal mask in place; max, subtract, exp, sum; P = E / sum
    rounded to DL16; O = P V with k = s (the valid prefix of P's rows); O rounded to DL16.
    """
    q = bind("q", (s, d), "float16", 0)
    k = bind("k", (s, d), "float16", GIB)
    v = bind("v", (s, d), "float16", 2 * GIB)
    out = bind("out", (s, d), "float16", 3 * GIB)
    rp = q.layout.row_pitch
    sp = -(-s * 4 // 128) * 128  # fp32 score row pitch
    pp = -(-s * 2 // 128) * 128  # DL16 P row pitch
    lq, lk, lv, ls, lm, lsum, lp, lo, lout = (i * 0x10000 for i in range(9))
    tile_ = {"rows": s, "cols": s}
    f32 = {"src_dtype": F32, "dst_dtype": F32}
    program = [
        load(q.addr, lq, s, rp), load(k.addr, lk, s, rp), load(v.addr, lv, s, rp),
        matmul_nt(deps=(0, 1), a=lq, b=lk, c=ls, m=s, k=d, n=s, a_pitch=rp, b_pitch=rp,
                  c_pitch=sp),
        Instr.make("sfu.scalar", deps=(3,), fn=BinaryFn.MUL, src=ls, dst=ls, src_pitch=sp,
                   dst_pitch=sp, imm=f32_bits(scale), reverse=0, **tile_, **f32),
        mask(0, deps=(4,), src=ls, dst=ls, src_pitch=sp, dst_pitch=sp, **tile_, **f32),
        Instr.make("sfu.reduce", deps=(5,), fn=ReduceFn.MAX, src=ls, dst=lm, src_pitch=sp,
                   dst_pitch=128, **tile_, **f32),
        Instr.make("sfu.colwise", deps=(6,), fn=BinaryFn.SUB, src0=ls, src1=lm, dst=ls,
                   src0_pitch=sp, src1_pitch=128, dst_pitch=sp, src0_dtype=F32, src1_dtype=F32,
                   dst_dtype=F32, reverse=0, **tile_),
        Instr.make("sfu.unary", deps=(7,), fn=UnaryFn.EXP, src=ls, dst=ls, src_pitch=sp,
                   dst_pitch=sp, **tile_, **f32),
        Instr.make("sfu.reduce", deps=(8,), fn=ReduceFn.SUM, src=ls, dst=lsum, src_pitch=sp,
                   dst_pitch=128, **tile_, **f32),
        Instr.make("sfu.colwise", deps=(9,), fn=BinaryFn.DIV, src0=ls, src1=lsum, dst=lp,
                   src0_pitch=sp, src1_pitch=128, dst_pitch=pp, src0_dtype=F32, src1_dtype=F32,
                   dst_dtype=DL16, reverse=0, **tile_),
        Instr.make("pt.matmul", deps=(2, 10), a=lp, b=lv, c=lo, m=s, k=s, n=d, a_pitch=pp,
                   b_pitch=rp, c_pitch=d * 4, in_dtype=DL16, accumulate=0),
        Instr.make("sfu.unary", deps=(11,), fn=UnaryFn.COPY, src=lo, dst=lout, rows=s, cols=d,
                   src_pitch=d * 4, dst_pitch=rp, src_dtype=F32, dst_dtype=DL16),
        store(lout, out.addr, s, rp, deps=(12,)),
    ]
    flops = 4 * s * s * d
    nbytes = sum(t.layout.logical_nbytes for t in (q, k, v, out))
    kernel = KernelImage("head", 1, {0: program}, flops=flops, min_offchip_bytes=nbytes)
    return SpyreBinary(T.name, [q, k, v], [out], [], [], [kernel])


def test_causal_head_end_to_end() -> None:
    s, d = 100, 64
    scale = d ** -0.5
    rng = np.random.default_rng(9)
    q, k, v = (rng.standard_normal((s, d)).astype(np.float16) for _ in range(3))
    (out,), profile = Emulator(head_binary(s, d, scale), strict=True).run([q, k, v])
    assert profile.warnings == []
    # Bit-exact against the same steps in NumPy on the device inputs ...
    qd, kd, vd = (round_dl16(t.astype(np.float32)) for t in (q, k, v))
    scores = np.matmul(qd, kd.T, dtype=np.float32) * np.float32(scale)
    scores = np.where(np.triu(np.ones((s, s), bool), 1), np.float32(MASKED), scores)
    shifted = scores - scores.max(axis=1, keepdims=True)
    e = np.exp(shifted.astype(np.float64)).astype(np.float32)
    p = round_dl16(e / np.sum(e, axis=1, dtype=np.float32, keepdims=True))
    expected = round_dl16(np.matmul(p, vd, dtype=np.float32)).astype(np.float16)
    assert np.array_equal(out, expected)
    # ... and close to float64 causal attention of the device inputs (P and O rounded once).
    exact = qd.astype(np.float64) @ kd.T.astype(np.float64) * scale
    exact[np.triu(np.ones((s, s), bool), 1)] = -np.inf
    w = np.exp(exact - exact.max(axis=1, keepdims=True))
    reference = (w / w.sum(axis=1, keepdims=True)) @ vd
    assert np.abs(out - reference).max() <= 4 * 2.0**-10 * np.abs(reference).max()
    assert 0 < profile.roofline_ratio <= 1
