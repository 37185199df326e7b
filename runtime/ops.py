"""What each SpyreCode instruction does to memory, as whole-tile NumPy operations.

`validate` checks an instruction against the target and the memory it will touch (engine unit,
type and function codes, LX bounds, LPDDR allocation, alignment) and raises a DeviceFault
without core/pc context; the emulator adds that. `bind` turns a validated instruction into a
closure over fixed NumPy views of LX and LPDDR, so executing it is one or two array operations.

Numerics (all whole-tile):
* dma.load / dma.store copy `rows` runs of `row_bytes` between strided views.
* dma.gather reads its `rows` int32 indices from LX, checks every one against [0, limit)
  (a DeviceFault naming the first bad row and value, before anything is copied) and copies
  the selected table rows with one fancy-indexed NumPy copy.
* pt.matmul decodes A and B from `in_dtype` (DL16 or fp32) to float32, multiplies with
  np.matmul on float32 (fp32 products and sums), and stores C in fp32; with `accumulate` the
  product is added to the old C in fp32. pt.matmul_nt is the same with B read as an (n, k)
  tile and transposed (a NumPy view, no copy).
* sfu.unary / sfu.binary decode their sources to float32, apply the function (see sfu.py) and
  round to `dst_dtype`: DL16 rounding (or IEEE fp16 in "ieee" numerics), fp32 as is, int32 by
  truncation toward zero with saturation. When every operand is int32 and the function is
  integer-capable (copy, relu, neg, abs; add, sub, mul, max, min) the work is done in int32
  with wrap-around. A source pitch of 0 broadcasts its one row over all rows.
* sfu.scalar is sfu.binary with a constant fp32 operand s (the bits of `imm`), on either side
  (`reverse`). With int32 source and destination the work is int32, like sfu.binary's, and s
  must then be an integer in int32 range.
* sfu.colwise is sfu.binary whose second operand is one element per row (an (rows, 1) view),
  broadcast along the row by NumPy.
* sfu.mask copies src to dst (rounding to `dst_dtype`) except where column c > row r + diag,
  which gets the fp32 scalar s (the bits of `imm`), rounded the same way: one np.where over
  the tile against a precomputed (rows, cols) boolean mask.
* sfu.reduce sums (np.sum with a float32 accumulator, NumPy's pairwise order) or takes the
  max / min of each row's first `cols` elements, rounds the (rows,) result to `dst_dtype` into
  column 0 of each destination row and zeroes the rest of that row's first stick. There is no
  int32 source form.
Results are computed whole before anything is stored, so a destination may overlap a source.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from spyrec.runtime import ring, sfu
from spyrec.runtime.constant_tiles import Memo
from spyrec.runtime.dl16 import HalfCodec
from spyrec.runtime.memory import DeviceFault, DeviceMemory, LocalMemory, TileSource
from spyrec.target import SpyreTarget
from spyrec.target.isa import (
    GATHER_INDEX_BYTES,
    INDIRECT_DMA_OPS,
    MATMUL_OPS,
    STICK_BYTES,
    BinaryFn,
    DType,
    Engine,
    Instr,
    ReduceFn,
    Region,
    UnaryFn,
    bits_f32,
    ddr_region,
    gather_index_region,
    lx_access,
    lx_reads,
    lx_writes,
)
from spyrec.target.rendezvous import RENDEZVOUS_OPS

Memos = tuple[Memo | None, ...] | None  # per read operand, in lx_reads order

_STORAGE = {DType.DL16: np.dtype(np.uint16), DType.F32: np.dtype(np.float32),
            DType.I32: np.dtype(np.int32)}

_DTYPE_FIELDS = ("in_dtype", "src_dtype", "dst_dtype", "src0_dtype", "src1_dtype", "dtype")
_DTYPE_CODES = frozenset(int(d) for d in DType)
_UNARY_CODES = frozenset(int(f) for f in UnaryFn)
_BINARY_CODES = frozenset(int(f) for f in BinaryFn)
_REDUCE_CODES = frozenset(int(f) for f in ReduceFn)
_INT32_MIN, _INT32_END = -(2**31), 2**31
_IMM_MIN, _IMM_END = -(2**31), 2**32  # an fp32 bit pattern, read as signed or unsigned 32 bits
_POSITIVE_FIELDS = ("m", "k", "n", "rows", "cols", "row_bytes")
_SINGLE_UNIT = frozenset({Engine.DMA, Engine.RING, Engine.SYNC, Engine.LOOP})


def _check_codes(instr: Instr, target: SpyreTarget) -> None:
    a = instr.named_args()
    engine = instr.spec.engine
    if engine in _SINGLE_UNIT and instr.unit != 0:
        raise DeviceFault(f"{engine.value.upper()} unit {instr.unit} does not exist (a core has "
                          f"one {engine.value.upper()} engine)")
    if engine not in _SINGLE_UNIT and not 0 <= instr.unit < target.corelets_per_core:
        raise DeviceFault(f"{engine.value.upper()} unit {instr.unit} does not exist "
                          f"(a core has {target.corelets_per_core} corelets)")
    for name in _POSITIVE_FIELDS:
        if name in a and a[name] <= 0:
            raise DeviceFault(f"{name}={a[name]} must be positive")
    for name in _DTYPE_FIELDS:
        if name in a and a[name] not in _DTYPE_CODES:
            raise DeviceFault(f"{name}={a[name]} is not a device dtype")
    if instr.op in MATMUL_OPS and a["in_dtype"] == DType.I32:
        raise DeviceFault(f"{instr.op} has no int32 mode (in_dtype must be DL16 or F32)")
    if instr.op == "sfu.unary":
        if a["fn"] not in _UNARY_CODES:
            raise DeviceFault(f"fn={a['fn']} is not a unary SFU function")
        if a["src_dtype"] == a["dst_dtype"] == DType.I32 and UnaryFn(a["fn"]) not in sfu.INT_UNARY:
            raise DeviceFault(f"{UnaryFn(a['fn']).name} has no int32 form")
    if instr.op in ("sfu.binary", "sfu.colwise"):
        if a["fn"] not in _BINARY_CODES:
            raise DeviceFault(f"fn={a['fn']} is not a binary SFU function")
        all_int = a["src0_dtype"] == a["src1_dtype"] == a["dst_dtype"] == DType.I32
        if all_int and BinaryFn(a["fn"]) not in sfu.INT_BINARY:
            raise DeviceFault(f"{BinaryFn(a['fn']).name} has no int32 form")
    if instr.op == "sfu.scalar":
        _check_scalar(a)
    if instr.op == "sfu.reduce":
        _check_reduce(a)
    if instr.op == "sfu.mask":
        _check_mask(a)
    if "reverse" in a and a["reverse"] not in (0, 1):
        raise DeviceFault(f"reverse={a['reverse']} must be 0 or 1")
    if instr.op in INDIRECT_DMA_OPS:
        _check_gather(a)


def _check_gather(a: dict[str, int]) -> None:
    if a["limit"] <= 0:
        raise DeviceFault(f"limit={a['limit']} must be positive (the table's row count)")
    if a["idx"] % GATHER_INDEX_BYTES:
        raise DeviceFault(f"idx={a['idx']} is not {GATHER_INDEX_BYTES}-byte aligned (the "
                          "indices are int32)")


def _check_scalar(a: dict[str, int]) -> None:
    if a["fn"] not in _BINARY_CODES:
        raise DeviceFault(f"fn={a['fn']} is not a binary SFU function")
    if not _IMM_MIN <= a["imm"] < _IMM_END:
        raise DeviceFault(f"imm={a['imm']} is not a 32-bit fp32 bit pattern")
    if not a["src_dtype"] == a["dst_dtype"] == DType.I32:
        return
    if BinaryFn(a["fn"]) not in sfu.INT_BINARY:
        raise DeviceFault(f"{BinaryFn(a['fn']).name} has no int32 form")
    s = bits_f32(a["imm"])
    if not (np.isfinite(s) and s == int(s) and _INT32_MIN <= s < _INT32_END):
        raise DeviceFault(f"imm={a['imm']} is the fp32 {s!r}, not an int32 value; the int32 "
                          "form of sfu.scalar needs an integral scalar")


def _check_mask(a: dict[str, int]) -> None:
    if not _IMM_MIN <= a["imm"] < _IMM_END:
        raise DeviceFault(f"imm={a['imm']} is not a 32-bit fp32 bit pattern")
    if DType.I32 in (a["src_dtype"], a["dst_dtype"]):
        raise DeviceFault("sfu.mask has no int32 mode (src_dtype and dst_dtype must be DL16 "
                          "or F32)")


def _check_reduce(a: dict[str, int]) -> None:
    if a["fn"] not in _REDUCE_CODES:
        raise DeviceFault(f"fn={a['fn']} is not an SFU reduction")
    if a["src_dtype"] == DType.I32:
        raise DeviceFault("sfu.reduce has no int32 mode (src_dtype must be DL16 or F32)")
    if a["rows"] > 1 and a["dst_pitch"] < STICK_BYTES:
        raise DeviceFault(f"dst_pitch={a['dst_pitch']} is less than the {STICK_BYTES}-byte "
                          "stick sfu.reduce writes per row, so destination rows would overlap")


def validate(
    instr: Instr, target: SpyreTarget, memory: DeviceMemory, lx: LocalMemory, core: int = 0
) -> tuple[tuple[Region, ...], tuple[Region, ...], int]:
    """Check an instruction of `core`; returns the LX regions it reads and writes, and the
    highest LX byte it touches plus one (0 if none)."""
    _check_codes(instr, target)
    if instr.op in RENDEZVOUS_OPS:
        ring.validate(instr, core, target)
    reads, writes = lx_access(instr, core)
    for region in reads + writes:
        lx.check(region)
    ddr = ddr_region(instr)
    if ddr is not None:
        memory.check_dma(ddr)
    return reads, writes, max((region.end for region in reads + writes), default=0)


def _loader(view: np.ndarray, dtype: DType, codec: HalfCodec, memos: Memos,
            operand: int) -> Callable[[], np.ndarray]:
    """What reads read operand `operand` (its index in `lx_reads`) as float32: decoded on
    every call, or once if `memos` holds a memo for it (constant_tiles.py; the array is
    shared between calls, so no caller may write to it)."""
    # bound methods: no Python frame of ours per call
    convert = (functools.partial(codec.decode, view) if dtype is DType.DL16
               else functools.partial(view.astype, np.float32))
    memo = memos[operand] if memos is not None else None
    if memo is None:
        return convert

    def load() -> np.ndarray:
        value = memo.value
        if value is None:
            value = convert()
            memo.keep(value)
        return value

    return load


def _store(view: np.ndarray, dtype: DType, codec: HalfCodec, value: np.ndarray) -> None:
    if dtype is DType.DL16:
        view[...] = codec.encode(value)
    elif dtype is DType.I32:
        view[...] = sfu.float_to_int32(value)
    else:
        view[...] = value


def _tile(lx: TileSource, region: Region, dtype: DType) -> np.ndarray:
    storage = _STORAGE[dtype]
    return lx.view(region, storage, storage.itemsize)


def _ddr_view(instr: Instr, memory: DeviceMemory) -> np.ndarray:
    region = ddr_region(instr)
    assert region is not None, f"{instr.op} has no LPDDR operand"
    return memory.view(region)


def bind(
    instr: Instr, memory: DeviceMemory, lx: TileSource, codec: HalfCodec,
    ddr: np.ndarray | None = None, where: tuple[int, int] | None = None,
    memos: Memos = None,
) -> Callable[[], None]:
    """A closure that executes a validated instruction on backed memory.

    `lx` is one core's LX or a `CoreStack` (the instruction then runs on every core of the
    stack at once, with tiles that have a leading core axis); `ddr`, for a DMA, is the LPDDR
    view to use (shaped like the LX tile) instead of the one the instruction addresses.
    `where` (core, pc) locates the faults an instruction can raise while it runs (dma.gather's
    index check). `memos`, per read operand, keeps the float32 value of operands that are
    the same on every call (constant_tiles.py).
    """
    a = instr.named_args()
    if instr.op == "dma.gather":
        return _bind_gather(instr, memory, lx, where)
    if instr.op == "dma.scatter":
        return _bind_scatter(instr, memory, lx, where)
    if instr.op == "dma.load":
        lx_region = lx_writes(instr)[0]
        source = _ddr_view(instr, memory) if ddr is None else ddr
        target_view = lx.view(lx_region, np.dtype(np.uint8), 1)
        return lambda: np.copyto(target_view, source)
    if instr.op == "dma.store":
        lx_region = lx_reads(instr)[0]
        source = lx.view(lx_region, np.dtype(np.uint8), 1)
        target_view = _ddr_view(instr, memory) if ddr is None else ddr
        return lambda: np.copyto(target_view, source)
    if instr.op in MATMUL_OPS:
        return _bind_matmul(instr, lx, codec, memos)
    if instr.op == "sfu.mask":
        return _bind_mask(instr, lx, codec, memos)
    if instr.op == "sfu.unary":
        return _bind_unary(a, lx, codec, memos)
    if instr.op == "sfu.scalar":
        return _bind_scalar(instr, lx, codec, memos)
    if instr.op == "sfu.reduce":
        return _bind_reduce(instr, lx, codec, memos)
    if instr.op == "sfu.colwise":
        return _bind_colwise(instr, lx, codec, memos)
    return _bind_binary(a, lx, codec, memos)


def _bind_gather(instr: Instr, memory: DeviceMemory, lx: TileSource,
                 where: tuple[int, int] | None) -> Callable[[], None]:
    """Rows of the LPDDR table picked by the int32 index vector in LX; an index outside
    [0, limit) is a fault, raised before any byte is copied (never a read of other data)."""
    table = _ddr_view(instr, memory)  # (limit, row_bytes)
    indices = lx.view(gather_index_region(instr), np.dtype(np.int32), GATHER_INDEX_BYTES)
    target_view = lx.view(lx_writes(instr)[0], np.dtype(np.uint8), 1)

    def run() -> None:
        np.copyto(target_view, table[_checked_indices(instr, indices, where)])

    return run


def _bind_scatter(instr: Instr, memory: DeviceMemory, lx: TileSource,
                  where: tuple[int, int] | None) -> Callable[[], None]:
    """The rows of an LX tile written to the LPDDR table rows the int32 index vector names,
    in row order (a repeated index keeps the last row); indices checked first, as gather's."""
    table = _ddr_view(instr, memory)  # (limit, row_bytes)
    indices = lx.view(gather_index_region(instr), np.dtype(np.int32), GATHER_INDEX_BYTES)
    source = lx.view(lx_reads(instr)[1], np.dtype(np.uint8), 1)

    def run() -> None:
        k = _checked_indices(instr, indices, where)
        if where is not None:
            _claim_rows(instr, memory, k, where)
        # NumPy's fancy assignment keeps the last of repeated indices
        table[k] = source

    return run


def _claim_rows(instr: Instr, memory: DeviceMemory, k: np.ndarray,
                where: tuple[int, int]) -> None:
    """Record the table rows this dma.scatter writes as `where`'s core's, or a DeviceFault if
    another core scattered to one of them in the same kernel: the cores run unordered, so
    which row lands last would depend on their timing (a race, never a defined result;
    a core's own repeated rows keep the last in program order)."""
    core = where[0]
    base, pitch = instr.arg("ddr"), instr.arg("ddr_pitch")
    owners = memory.scattered_rows
    for row, index in enumerate(k.tolist()):
        address = base + index * pitch
        other = owners.setdefault(address, core)
        if other != core:
            raise DeviceFault(
                f"dma.scatter row {row}: table row {index} was also scattered to by core "
                f"{other} in this kernel; the cores are not ordered, so which write lands "
                "last is a race: make the indices of different cores distinct (or scatter "
                "those rows from one core)", address).at(core, where[1], instr)


def _checked_indices(instr: Instr, indices: np.ndarray,
                     where: tuple[int, int] | None) -> np.ndarray:
    """The index vector of a dma.gather / dma.scatter, or a DeviceFault naming the first
    index outside [0, limit)."""
    limit = instr.arg("limit")
    k = indices.reshape(-1)
    bad = np.flatnonzero((k < 0) | (k >= limit))
    if bad.size:
        row = int(bad[0])
        # the LPDDR address the bad index names (outside the table), for the report
        address = instr.arg("ddr") + int(k[row]) * instr.arg("ddr_pitch")
        fault = DeviceFault(f"{instr.op} row {row}: index {int(k[row])} is outside the "
                            f"table's rows [0, {limit}) ({bad.size} of {k.size} indices are)",
                            address)
        raise fault.at(where[0], where[1], instr) if where is not None else fault
    return k


def _bind_matmul(instr: Instr, lx: TileSource, codec: HalfCodec,
                 memos: Memos) -> Callable[[], None]:
    a = instr.named_args()
    in_dtype = DType(a["in_dtype"])
    reads = lx_reads(instr)
    a_tile, b_tile = _tile(lx, reads[0], in_dtype), _tile(lx, reads[1], in_dtype)
    c_tile = _tile(lx, lx_writes(instr)[0], DType.F32)
    accumulate = bool(a["accumulate"])
    transposed = instr.op == "pt.matmul_nt"
    load_a = _loader(a_tile, in_dtype, codec, memos, 0)
    load_b = _loader(b_tile, in_dtype, codec, memos, 1)

    def run() -> None:
        b_value = load_b()
        b_value = np.swapaxes(b_value, -1, -2) if transposed else b_value
        product = np.matmul(load_a(), b_value, dtype=np.float32)
        if accumulate:
            np.add(c_tile, product, out=c_tile)
        else:
            c_tile[...] = product

    return run


def _unary_region(a: dict[str, int], prefix: str) -> Region:
    dtype = DType(a[f"{prefix}_dtype"])
    return Region(a[prefix], a["rows"], a["cols"] * dtype.itemsize, a[f"{prefix}_pitch"])


def _bind_unary(a: dict[str, int], lx: TileSource, codec: HalfCodec,
                memos: Memos) -> Callable[[], None]:
    fn = UnaryFn(a["fn"])
    src_dtype, dst_dtype = DType(a["src_dtype"]), DType(a["dst_dtype"])
    src = _tile(lx, _unary_region(a, "src"), src_dtype)
    dst = _tile(lx, _unary_region(a, "dst"), dst_dtype)
    if src_dtype is dst_dtype is DType.I32:
        int_fn = sfu.INT_UNARY[fn]
        return lambda: np.copyto(dst, int_fn(src))
    float_fn = sfu.UNARY[fn]
    load = _loader(src, src_dtype, codec, memos, 0)
    return lambda: _store(dst, dst_dtype, codec, float_fn(load()))


def _bind_binary(a: dict[str, int], lx: TileSource, codec: HalfCodec,
                 memos: Memos) -> Callable[[], None]:
    fn = BinaryFn(a["fn"])
    dtypes = [DType(a[f"{p}_dtype"]) for p in ("src0", "src1", "dst")]
    src0, src1, dst = (_tile(lx, _unary_region(a, p), d)
                       for p, d in zip(("src0", "src1", "dst"), dtypes, strict=True))
    if all(d is DType.I32 for d in dtypes):
        int_fn = sfu.INT_BINARY[fn]
        return lambda: np.copyto(dst, int_fn(src0, src1))
    float_fn = sfu.BINARY[fn]
    d0, d1, dd = dtypes
    load0 = _loader(src0, d0, codec, memos, 0)
    load1 = _loader(src1, d1, codec, memos, 1)
    return lambda: _store(dst, dd, codec, float_fn(load0(), load1()))


def _bind_scalar(instr: Instr, lx: TileSource, codec: HalfCodec,
                 memos: Memos) -> Callable[[], None]:
    a = instr.named_args()
    fn = BinaryFn(a["fn"])
    src_dtype, dst_dtype = DType(a["src_dtype"]), DType(a["dst_dtype"])
    (src_region,), (dst_region,) = lx_access(instr)
    src, dst = _tile(lx, src_region, src_dtype), _tile(lx, dst_region, dst_dtype)
    reverse = bool(a["reverse"])
    s = np.float32(bits_f32(a["imm"]))
    if src_dtype is dst_dtype is DType.I32:
        int_fn, k = sfu.INT_BINARY[fn], np.int32(s)
        if reverse:
            return lambda: np.copyto(dst, int_fn(k, src))
        return lambda: np.copyto(dst, int_fn(src, k))
    float_fn = sfu.BINARY[fn]
    load = _loader(src, src_dtype, codec, memos, 0)
    if reverse:
        return lambda: _store(dst, dst_dtype, codec, float_fn(s, load()))
    return lambda: _store(dst, dst_dtype, codec, float_fn(load(), s))


def _bind_colwise(instr: Instr, lx: TileSource, codec: HalfCodec,
                  memos: Memos) -> Callable[[], None]:
    a = instr.named_args()
    fn = BinaryFn(a["fn"])
    d0, d1, dd = (DType(a[f"{p}_dtype"]) for p in ("src0", "src1", "dst"))
    (r0, r1), (rd,) = lx_access(instr)
    src0, src1, dst = _tile(lx, r0, d0), _tile(lx, r1, d1), _tile(lx, rd, dd)  # src1: (rows, 1)
    reverse = bool(a["reverse"])
    if d0 is d1 is dd is DType.I32:
        int_fn = sfu.INT_BINARY[fn]
        if reverse:
            return lambda: np.copyto(dst, int_fn(src1, src0))
        return lambda: np.copyto(dst, int_fn(src0, src1))
    float_fn = sfu.BINARY[fn]
    load0 = _loader(src0, d0, codec, memos, 0)
    load1 = _loader(src1, d1, codec, memos, 1)
    if reverse:
        return lambda: _store(dst, dd, codec, float_fn(load1(), load0()))
    return lambda: _store(dst, dd, codec, float_fn(load0(), load1()))


def _bind_mask(instr: Instr, lx: TileSource, codec: HalfCodec,
               memos: Memos) -> Callable[[], None]:
    a = instr.named_args()
    src_dtype, dst_dtype = DType(a["src_dtype"]), DType(a["dst_dtype"])
    (src_region,), (dst_region,) = lx_access(instr)
    src, dst = _tile(lx, src_region, src_dtype), _tile(lx, dst_region, dst_dtype)
    rows, cols = np.arange(a["rows"])[:, None], np.arange(a["cols"])[None, :]
    masked = cols > rows + a["diag"]
    s = np.float32(bits_f32(a["imm"]))
    load = _loader(src, src_dtype, codec, memos, 0)
    return lambda: _store(dst, dst_dtype, codec, np.where(masked, s, load()))


def _bind_reduce(instr: Instr, lx: TileSource, codec: HalfCodec,
                 memos: Memos) -> Callable[[], None]:
    a = instr.named_args()
    reduce = sfu.REDUCE[ReduceFn(a["fn"])]
    src_dtype, dst_dtype = DType(a["src_dtype"]), DType(a["dst_dtype"])
    (src_region,), (dst_region,) = lx_access(instr)
    src = _tile(lx, src_region, src_dtype)
    stick = _tile(lx, dst_region, dst_dtype)  # (rows, one stick of elements)
    first, rest = stick[..., :1], stick[..., 1:]
    load = _loader(src, src_dtype, codec, memos, 0)

    def run() -> None:
        value = reduce(load())
        rest[...] = 0  # all-zero bits: +0 in every device type
        _store(first, dst_dtype, codec, value)

    return run
