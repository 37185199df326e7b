"""What each SpyreCode instruction does to memory, as whole-tile NumPy operations.

`validate` checks an instruction against the target and the memory it will touch (engine unit,
type and function codes, LX bounds, LPDDR allocation, alignment) and raises a DeviceFault
without core/pc context; the emulator adds that. `bind` turns a validated instruction into a
closure over fixed NumPy views of LX and LPDDR, so executing it is one or two array operations.

Numerics (all whole-tile):
* dma.load / dma.store copy `rows` runs of `row_bytes` between strided views.
* pt.matmul decodes A and B from `in_dtype` (DL16 or fp32) to float32, multiplies with
  np.matmul on float32 (fp32 products and sums), and stores C in fp32; with `accumulate` the
  product is added to the old C in fp32.
* sfu.unary / sfu.binary decode their sources to float32, apply the function (see sfu.py) and
  round to `dst_dtype`: DL16 rounding (or IEEE fp16 in "ieee" numerics), fp32 as is, int32 by
  truncation toward zero with saturation. When every operand is int32 and the function is
  integer-capable (copy, relu, neg, abs; add, sub, mul, max, min) the work is done in int32
  with wrap-around. A source pitch of 0 broadcasts its one row over all rows.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from spyrec.runtime import sfu
from spyrec.runtime.dl16 import HalfCodec
from spyrec.runtime.isa import (BinaryFn, DType, Engine, Instr, Region, UnaryFn, ddr_region,
                                lx_access, lx_reads, lx_writes)
from spyrec.runtime.memory import DeviceFault, DeviceMemory, LocalMemory
from spyrec.target import SpyreTarget

_STORAGE = {DType.DL16: np.dtype(np.uint16), DType.F32: np.dtype(np.float32),
            DType.I32: np.dtype(np.int32)}

_DTYPE_FIELDS = ("in_dtype", "src_dtype", "dst_dtype", "src0_dtype", "src1_dtype")
_DTYPE_CODES = frozenset(int(d) for d in DType)
_UNARY_CODES = frozenset(int(f) for f in UnaryFn)
_BINARY_CODES = frozenset(int(f) for f in BinaryFn)
_POSITIVE_FIELDS = ("m", "k", "n", "rows", "cols", "row_bytes")


def _check_codes(instr: Instr, target: SpyreTarget) -> None:
    a = instr.named_args()
    engine = instr.spec.engine
    if engine is Engine.DMA and instr.unit != 0:
        raise DeviceFault(f"DMA unit {instr.unit} does not exist (a core has one DMA engine)")
    if engine is not Engine.DMA and not 0 <= instr.unit < target.corelets_per_core:
        raise DeviceFault(f"{engine.value.upper()} unit {instr.unit} does not exist "
                          f"(a core has {target.corelets_per_core} corelets)")
    for name in _POSITIVE_FIELDS:
        if name in a and a[name] <= 0:
            raise DeviceFault(f"{name}={a[name]} must be positive")
    for name in _DTYPE_FIELDS:
        if name in a and a[name] not in _DTYPE_CODES:
            raise DeviceFault(f"{name}={a[name]} is not a device dtype")
    if instr.op == "pt.matmul" and a["in_dtype"] == DType.I32:
        raise DeviceFault("pt.matmul has no int32 mode (in_dtype must be DL16 or F32)")
    if instr.op == "sfu.unary":
        if a["fn"] not in _UNARY_CODES:
            raise DeviceFault(f"fn={a['fn']} is not a unary SFU function")
        if a["src_dtype"] == a["dst_dtype"] == DType.I32 and UnaryFn(a["fn"]) not in sfu.INT_UNARY:
            raise DeviceFault(f"{UnaryFn(a['fn']).name} has no int32 form")
    if instr.op == "sfu.binary":
        if a["fn"] not in _BINARY_CODES:
            raise DeviceFault(f"fn={a['fn']} is not a binary SFU function")
        all_int = a["src0_dtype"] == a["src1_dtype"] == a["dst_dtype"] == DType.I32
        if all_int and BinaryFn(a["fn"]) not in sfu.INT_BINARY:
            raise DeviceFault(f"{BinaryFn(a['fn']).name} has no int32 form")


def validate(
    instr: Instr, target: SpyreTarget, memory: DeviceMemory, lx: LocalMemory
) -> tuple[tuple[Region, ...], tuple[Region, ...], int]:
    """Check an instruction; returns the LX regions it reads and writes, and the highest LX
    byte it touches plus one."""
    _check_codes(instr, target)
    reads, writes = lx_access(instr)
    for region in reads + writes:
        lx.check(region)
    ddr = ddr_region(instr)
    if ddr is not None:
        memory.check_dma(ddr)
    return reads, writes, max(region.end for region in reads + writes)


def _load(view: np.ndarray, dtype: DType, codec: HalfCodec) -> np.ndarray:
    if dtype is DType.DL16:
        return codec.decode(view)
    return view.astype(np.float32)


def _store(view: np.ndarray, dtype: DType, codec: HalfCodec, value: np.ndarray) -> None:
    if dtype is DType.DL16:
        view[...] = codec.encode(value)
    elif dtype is DType.I32:
        view[...] = sfu.float_to_int32(value)
    else:
        view[...] = value


def _tile(lx: LocalMemory, region: Region, dtype: DType) -> np.ndarray:
    storage = _STORAGE[dtype]
    return lx.view(region, storage, storage.itemsize)


def bind(
    instr: Instr, memory: DeviceMemory, lx: LocalMemory, codec: HalfCodec
) -> Callable[[], None]:
    """A closure that executes a validated instruction on backed memory."""
    a = instr.named_args()
    if instr.op == "dma.load":
        lx_region = lx_writes(instr)[0]
        source = memory.view(ddr_region(instr))  # type: ignore[arg-type]
        target_view = lx.view(lx_region, np.dtype(np.uint8), 1)
        return lambda: np.copyto(target_view, source)
    if instr.op == "dma.store":
        lx_region = lx_reads(instr)[0]
        source = lx.view(lx_region, np.dtype(np.uint8), 1)
        target_view = memory.view(ddr_region(instr))  # type: ignore[arg-type]
        return lambda: np.copyto(target_view, source)
    if instr.op == "pt.matmul":
        return _bind_matmul(instr, lx, codec)
    if instr.op == "sfu.unary":
        return _bind_unary(a, lx, codec)
    return _bind_binary(a, lx, codec)


def _bind_matmul(instr: Instr, lx: LocalMemory, codec: HalfCodec) -> Callable[[], None]:
    a = instr.named_args()
    in_dtype = DType(a["in_dtype"])
    reads = lx_reads(instr)
    a_tile, b_tile = _tile(lx, reads[0], in_dtype), _tile(lx, reads[1], in_dtype)
    c_tile = _tile(lx, lx_writes(instr)[0], DType.F32)
    accumulate = bool(a["accumulate"])

    def run() -> None:
        product = np.matmul(_load(a_tile, in_dtype, codec), _load(b_tile, in_dtype, codec),
                            dtype=np.float32)
        if accumulate:
            c_tile[...] = c_tile + product
        else:
            c_tile[...] = product

    return run


def _unary_region(a: dict[str, int], prefix: str) -> Region:
    dtype = DType(a[f"{prefix}_dtype"])
    return Region(a[prefix], a["rows"], a["cols"] * dtype.itemsize, a[f"{prefix}_pitch"])


def _bind_unary(a: dict[str, int], lx: LocalMemory, codec: HalfCodec) -> Callable[[], None]:
    fn = UnaryFn(a["fn"])
    src_dtype, dst_dtype = DType(a["src_dtype"]), DType(a["dst_dtype"])
    src = _tile(lx, _unary_region(a, "src"), src_dtype)
    dst = _tile(lx, _unary_region(a, "dst"), dst_dtype)
    if src_dtype is dst_dtype is DType.I32:
        int_fn = sfu.INT_UNARY[fn]
        return lambda: np.copyto(dst, int_fn(src))
    float_fn = sfu.UNARY[fn]
    return lambda: _store(dst, dst_dtype, codec, float_fn(_load(src, src_dtype, codec)))


def _bind_binary(a: dict[str, int], lx: LocalMemory, codec: HalfCodec) -> Callable[[], None]:
    fn = BinaryFn(a["fn"])
    dtypes = [DType(a[f"{p}_dtype"]) for p in ("src0", "src1", "dst")]
    src0, src1, dst = (_tile(lx, _unary_region(a, p), d)
                       for p, d in zip(("src0", "src1", "dst"), dtypes, strict=True))
    if all(d is DType.I32 for d in dtypes):
        int_fn = sfu.INT_BINARY[fn]
        return lambda: np.copyto(dst, int_fn(src0, src1))
    float_fn = sfu.BINARY[fn]
    d0, d1, dd = dtypes
    return lambda: _store(dst, dd, codec, float_fn(_load(src0, d0, codec), _load(src1, d1, codec)))
