"""Emulator numerics on hand-built programs, input checking, and modes."""

import math

import ml_dtypes
import numpy as np
import pytest
from runtime_helpers import (
    DL16,
    F32,
    HOST,
    I32,
    bind,
    linear_relu_binary,
    linear_relu_reference,
    load,
    pipelined_binary,
    store,
)

from spyrec.runtime import sfu
from spyrec.runtime.blas import single_threaded_blas
from spyrec.runtime.dl16 import half_codec, round_dl16
from spyrec.runtime.emulator import Emulator, InputError
from spyrec.target import DEFAULT_TARGET, GIB
from spyrec.target.container import KernelImage, SpyreBinary
from spyrec.target.isa import BinaryFn, Instr, UnaryFn


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_two_core_linear_relu_is_bit_exact(dtype: str) -> None:
    # load x rows / w / b -> matmul over k/2 -> accumulating matmul -> add the bias row
    # broadcast with pitch 0 (fp32) -> relu rounded to the output type -> store.
    binary = linear_relu_binary(dtype=dtype)
    x = np.random.default_rng(11).standard_normal((64, 128)).astype(HOST[dtype])
    (out,), profile = Emulator(binary).run([x])
    expected = linear_relu_reference(binary, x)
    assert same_bits(out, expected)
    assert (out > 0).any() and (out == 0).any()  # relu did something both ways
    assert profile.warnings == []


def test_ieee_numerics_round_through_fp16() -> None:
    binary = linear_relu_binary()
    x = np.random.default_rng(12).standard_normal((64, 128)).astype(np.float16)
    (out,), _ = Emulator(binary, numerics="ieee").run([x])
    expected = linear_relu_reference(binary, x, rounding=half_codec("ieee").round)
    assert same_bits(out, expected)
    (dl16_out,), _ = Emulator(binary).run([x])
    assert not same_bits(out, dl16_out)  # the two formats do differ on this data


def test_dl16_result_is_close_to_float64() -> None:
    # Independent of the reference model: the device result is float64's within DL16 rounding
    # of inputs and output (relative 2^-10 each) over a k = 128 reduction.
    binary = linear_relu_binary()
    x = np.random.default_rng(13).standard_normal((64, 128)).astype(np.float16)
    (out,), _ = Emulator(binary).run([x])
    (_, w), (_, b) = binary.weights
    exact = np.maximum(x.astype(np.float64) @ w.astype(np.float64) + b.astype(np.float64), 0)
    scale = np.abs(x.astype(np.float64)) @ np.abs(w.astype(np.float64)) + np.abs(b)
    assert np.all(np.abs(out - exact) <= 4 * 2.0**-10 * scale + 1e-6)


def test_runs_are_repeatable_and_independent() -> None:
    binary = linear_relu_binary()
    emulator = Emulator(binary)
    rng = np.random.default_rng(14)
    x1, x2 = (rng.standard_normal((64, 128)).astype(np.float16) for _ in range(2))
    (a,), p1 = emulator.run([x1])
    (b,), _ = emulator.run([x2])
    (c,), p3 = emulator.run([x1])
    assert same_bits(a, c) and not same_bits(a, b)
    assert p1.emulated_cycles == p3.emulated_cycles


def sfu_binary(instrs: list[Instr], src: np.ndarray, out_dtype: str, rows: int,
               cols: int) -> SpyreBinary:
    """One core: load `src` to LX 0, run `instrs` (which leave the result at LX 0x8000), store."""
    x = bind("x", src.shape, src.dtype.name, 0)
    out = bind("out", (rows, cols), out_dtype, GIB)
    body = [load(x.addr, 0, x.layout.rows, x.layout.row_pitch)]
    body += instrs
    body.append(store(0x8000, out.addr, rows, out.layout.row_pitch, deps=(len(body) - 1,)))
    kernel = KernelImage("sfu", 1, {0: body})
    return SpyreBinary(DEFAULT_TARGET.name, [x], [out], [], [], [kernel])


@pytest.mark.parametrize("fn", list(UnaryFn))
def test_unary_functions_match_numpy_reference(fn: UnaryFn) -> None:
    values = np.linspace(-6, 6, 64 * 8).reshape(8, 64).astype(np.float16)
    if fn in (UnaryFn.SQRT, UnaryFn.RSQRT, UnaryFn.LOG):
        values = np.abs(values)
    unary = Instr.make("sfu.unary", deps=(0,), fn=fn, src=0, dst=0x8000, rows=8, cols=64,
                       src_pitch=128, dst_pitch=128, src_dtype=DL16, dst_dtype=DL16)
    (out,), _ = Emulator(sfu_binary([unary], values, "float16", 8, 64)).run([values])
    x = round_dl16(values.astype(np.float32)).astype(np.float64)  # the input as it is on device
    exact = {
        UnaryFn.COPY: lambda: x, UnaryFn.RELU: lambda: np.maximum(x, 0),
        UnaryFn.NEG: lambda: -x, UnaryFn.ABS: lambda: abs(x),
        UnaryFn.GELU: lambda: np.vectorize(lambda v: 0.5 * v * math.erfc(-v / math.sqrt(2)))(x),
        UnaryFn.GELU_TANH: lambda: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi)
                                                         * (x + 0.044715 * x**3))),
        UnaryFn.EXP: lambda: np.exp(x), UnaryFn.SIGMOID: lambda: 1 / (1 + np.exp(-x)),
        UnaryFn.SILU: lambda: x / (1 + np.exp(-x)), UnaryFn.TANH: lambda: np.tanh(x),
        UnaryFn.SQRT: lambda: np.sqrt(x), UnaryFn.RSQRT: lambda: 1 / np.sqrt(x),
        UnaryFn.RECIPROCAL: lambda: 1 / x, UnaryFn.LOG: lambda: np.log(x),
        UnaryFn.ERF: lambda: np.vectorize(math.erf)(x),
        UnaryFn.SIN: lambda: np.sin(x), UnaryFn.COS: lambda: np.cos(x),
    }[fn]
    with np.errstate(divide="ignore"):  # 1/0 and log(0)
        # float64 -> float32 -> DL16, the same two roundings as the SFU.
        expected = round_dl16(exact().astype(np.float32)).astype(np.float16)
    assert same_bits(out, expected)


@pytest.mark.parametrize("fn", list(BinaryFn))
def test_binary_functions_with_row_broadcast(fn: BinaryFn) -> None:
    # src0 is rows 0..3 (fp32), src1 row 4 broadcast with pitch 0; the result is fp32.
    values = np.random.default_rng(int(fn)).standard_normal((5, 32)).astype(np.float32) + 0.5
    binary_op = Instr.make("sfu.binary", deps=(0,), fn=fn, src0=0, src1=4 * 128, dst=0x8000,
                           rows=4, cols=32, src0_pitch=128, src1_pitch=0, dst_pitch=128,
                           src0_dtype=F32, src1_dtype=F32, dst_dtype=F32)
    (out,), _ = Emulator(sfu_binary([binary_op], values, "float32", 4, 32)).run([values])
    numpy_fn = {BinaryFn.ADD: np.add, BinaryFn.SUB: np.subtract, BinaryFn.MUL: np.multiply,
                BinaryFn.DIV: np.divide, BinaryFn.MAX: np.maximum, BinaryFn.MIN: np.minimum,
                BinaryFn.KEEP: lambda a, p: np.where(p != 0, a, np.float32(-0.0))}[fn]
    assert same_bits(out, numpy_fn(values[:4], values[4:5]))


def test_keep_selects_special_values_exactly() -> None:
    """KEEP(a, p) is a where p is nonzero (NaN counts) and -0.0 elsewhere, so
    KEEP(a, p) + KEEP(b, 1 - p) is a or b bit for bit: NaN, infinities and zeros too."""
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 3.4e38, -1.5, 2.0], np.float32)
    a = np.tile(specials, (4, 4))  # 4 x 32
    b = np.roll(a, 3, axis=1)
    p = (np.arange(4 * 32).reshape(4, 32) % 3 == 0).astype(np.float32)
    p[0, 5] = np.nan  # a NaN predicate keeps
    values = np.concatenate([a, p], axis=0)  # rows 0..3 a, rows 4..7 p
    keep = Instr.make("sfu.binary", deps=(0,), fn=BinaryFn.KEEP, src0=0, src1=4 * 128,
                      dst=0x8000, rows=4, cols=32, src0_pitch=128, src1_pitch=128,
                      dst_pitch=128, src0_dtype=F32, src1_dtype=F32, dst_dtype=F32)
    (out,), _ = Emulator(sfu_binary([keep], values, "float32", 4, 32)).run([values])
    kept = np.where(p != 0, a, np.float32(-0.0))
    assert same_bits(out, kept)
    assert same_bits(out + np.where(p != 0, np.float32(-0.0), b), np.where(p != 0, a, b))


def test_int32_sfu_wraps_and_converts() -> None:
    values = np.array([[2**31 - 1, -5, 7] + [0] * 29], dtype=np.int32)
    add = Instr.make("sfu.binary", deps=(0,), fn=BinaryFn.ADD, src0=0, src1=0, dst=0x8000,
                     rows=1, cols=32, src0_pitch=128, src1_pitch=128, dst_pitch=128,
                     src0_dtype=I32, src1_dtype=I32, dst_dtype=I32)
    (out,), _ = Emulator(sfu_binary([add], values, "int32", 1, 32)).run([values])
    assert out[0, :3].tolist() == [-2, -10, 14]  # 2*(2^31 - 1) wraps to -2
    # fp32 -> int32 conversion truncates toward zero and saturates.
    floats = np.array([[2.7, -2.7, 1e10, np.nan] + [0.0] * 28], dtype=np.float32)
    convert = Instr.make("sfu.unary", deps=(0,), fn=UnaryFn.COPY, src=0, dst=0x8000, rows=1,
                         cols=32, src_pitch=128, dst_pitch=128, src_dtype=F32, dst_dtype=I32)
    (out,), _ = Emulator(sfu_binary([convert], floats, "int32", 1, 32)).run([floats])
    assert out[0, :4].tolist() == [2, -2, 2**31 - 1, 0]


def test_gelu_on_fp32_is_correctly_rounded() -> None:
    x = np.linspace(-10, 10, 200_001).astype(np.float32)
    got = sfu.UNARY[UnaryFn.GELU](x)
    exact = np.array([0.5 * v * math.erfc(-v / math.sqrt(2)) for v in x.astype(np.float64)])
    assert np.all(np.abs(got - exact) <= 0.5 * np.spacing(np.abs(exact).astype(np.float32)))


def test_erfc_and_erf_accuracy() -> None:
    z = np.linspace(-6, 26, 64_001)
    exact = np.array([math.erfc(v) for v in z])
    assert np.max(np.abs(sfu.erfc(z) - exact) / exact) < 1e-14
    assert sfu.erfc(np.array([np.inf, -np.inf])).tolist() == [0.0, 2.0]
    # erf near 0 keeps its relative precision (1 - erfc would not)
    z = np.concatenate([np.linspace(-6, 6, 50_000), np.geomspace(1e-300, 1, 2000)])
    exact = np.array([math.erf(v) for v in z])
    assert np.max(np.abs(sfu.erf(z) - exact) / np.abs(exact)) < 1e-14
    assert sfu.erf(np.array([np.inf, -np.inf])).tolist() == [1.0, -1.0]


def test_input_errors_name_the_input() -> None:
    emulator = Emulator(linear_relu_binary())
    with pytest.raises(InputError, match=r"expected 1 inputs \(x\), got 2"):
        emulator.run([np.zeros((64, 128), np.float16)] * 2)
    with pytest.raises(InputError, match=r"input 'x': expected shape \(64, 128\) float16, "
                                         r"got shape \(64, 127\) float16"):
        emulator.run([np.zeros((64, 127), np.float16)])
    with pytest.raises(InputError, match=r"got shape \(64, 128\) bfloat16"):
        emulator.run([np.zeros((64, 128), ml_dtypes.bfloat16)])
    with pytest.raises(InputError, match="needs the inputs"):
        emulator.run()
    assert issubclass(InputError, ValueError)


def test_timing_mode_matches_full_mode() -> None:
    binary = pipelined_binary(cores=4, tiles=6)
    x = np.random.default_rng(15).standard_normal(binary.inputs[0].layout.shape).astype(np.float16)
    outputs, full = Emulator(binary).run([x])
    none, timing = Emulator(binary, mode="timing").run()
    assert len(outputs) == 1 and none == []
    assert timing.emulated_cycles == full.emulated_cycles
    assert timing.to_dict() == full.to_dict()
    assert Emulator(binary, mode="timing").memory.allocations[1].buffer is None


def test_pipelined_program_is_bit_exact_and_hazard_free() -> None:
    binary = pipelined_binary(cores=3, tiles=5)
    x = np.random.default_rng(16).standard_normal(binary.inputs[0].layout.shape).astype(np.float16)
    (out,), profile = Emulator(binary, strict=True).run([x])
    w = round_dl16(binary.weights[0][1].astype(np.float32))
    tiles = round_dl16(x.astype(np.float32)).reshape(-1, 64, 128)
    with single_threaded_blas():  # the emulator's BLAS, hence its summation order
        product = np.matmul(tiles, w, dtype=np.float32)
    expected = round_dl16(sfu.UNARY[UnaryFn.GELU](product.reshape(-1, 64))).astype(np.float16)
    assert same_bits(out, expected)
    assert profile.warnings == []


def test_unknown_mode_and_target_mismatch() -> None:
    with pytest.raises(ValueError, match="unknown emulator mode"):
        Emulator(linear_relu_binary(), mode="fast")
    other = DEFAULT_TARGET.replace(name="spyre-next")
    _, profile = Emulator(linear_relu_binary(), target=other, mode="timing").run()
    assert any("compiled for target 'spyre-aiu', emulating 'spyre-next'" in w
               for w in profile.warnings)


def test_erfc_runs_torch_on_one_thread_and_restores_the_count() -> None:
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        sfu.erfc(np.linspace(-3, 3, 4096))
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
