"""Hand-built SpyreCode programs and binaries shared by the runtime tests."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from spyrec.runtime.dl16 import round_dl16
from spyrec.runtime.layout import DeviceLayout
from spyrec.target import DEFAULT_TARGET, GIB
from spyrec.target.container import KernelImage, SpyreBinary, TensorBinding
from spyrec.target.isa import BinaryFn, DType, Instr, UnaryFn

SEGMENT = DEFAULT_TARGET.segment_bytes
F32, DL16, I32 = int(DType.F32), int(DType.DL16), int(DType.I32)


def bind(name: str, shape: tuple[int, ...], dtype: str, addr: int) -> TensorBinding:
    return TensorBinding(name, DeviceLayout(shape, dtype), addr)


def load(ddr: int, lx: int, rows: int, row_bytes: int, deps: tuple[int, ...] = (),
         ddr_pitch: int | None = None, lx_pitch: int | None = None) -> Instr:
    return Instr.make("dma.load", deps=deps, ddr=ddr, lx=lx, rows=rows, row_bytes=row_bytes,
                      ddr_pitch=row_bytes if ddr_pitch is None else ddr_pitch,
                      lx_pitch=row_bytes if lx_pitch is None else lx_pitch)


def store(lx: int, ddr: int, rows: int, row_bytes: int, deps: tuple[int, ...] = ()) -> Instr:
    return Instr.make("dma.store", deps=deps, lx=lx, ddr=ddr, rows=rows, row_bytes=row_bytes,
                      lx_pitch=row_bytes, ddr_pitch=row_bytes)


def linear_relu_binary(
    m: int = 64, k: int = 128, n: int = 64, cores: int = 2, dtype: str = "float16",
    drop_dep: bool = False,
) -> SpyreBinary:
    """relu(x @ w + b) with x:(m,k), w:(k,n), b:(n,); rows of x split over `cores`.

    Per core: load its rows of x, w and b; two pt.matmuls over the halves of k (the second
    accumulates); add b with a pitch-0 (broadcast) sfu.binary into fp32; relu rounding to the
    output type; store. `drop_dep` removes the relu's dependency on the add (a hazard).
    """
    half = dtype in ("float16", "bfloat16")
    dt = DL16 if half else F32
    size = 2 if half else 4
    x = bind("x", (m, k), dtype, 0)
    out = bind("out", (m, n), dtype, 1 * GIB)
    w = bind("w", (k, n), dtype, 2 * GIB)
    b = bind("b", (n,), dtype, 3 * GIB)
    rows = m // cores
    x_pitch, w_pitch, b_pitch = x.layout.row_pitch, w.layout.row_pitch, b.layout.row_pitch
    lx_x, lx_w, lx_b, lx_c, lx_t, lx_o = (i * 0x10000 for i in range(6))
    programs = {}
    for core in range(cores):
        first = core * rows
        kh = k // 2
        programs[core] = [
            load(x.addr + first * x_pitch, lx_x, rows, x_pitch),
            load(w.addr, lx_w, k, w_pitch),
            load(b.addr, lx_b, 1, b_pitch),
            Instr.make("pt.matmul", deps=(0, 1), a=lx_x, b=lx_w, c=lx_c, m=rows, k=kh, n=n,
                       a_pitch=x_pitch, b_pitch=w_pitch, c_pitch=n * 4, in_dtype=dt,
                       accumulate=0),
            Instr.make("pt.matmul", unit=0, deps=(3,), a=lx_x + kh * size, b=lx_w + kh * w_pitch,
                       c=lx_c, m=rows, k=kh, n=n, a_pitch=x_pitch, b_pitch=w_pitch,
                       c_pitch=n * 4, in_dtype=dt, accumulate=1),
            Instr.make("sfu.binary", deps=(2, 4), fn=BinaryFn.ADD, src0=lx_c, src1=lx_b,
                       dst=lx_t, rows=rows, cols=n, src0_pitch=n * 4, src1_pitch=0,
                       dst_pitch=n * 4, src0_dtype=F32, src1_dtype=dt, dst_dtype=F32),
            Instr.make("sfu.unary", unit=1, deps=() if drop_dep else (5,), fn=UnaryFn.RELU,
                       src=lx_t, dst=lx_o, rows=rows, cols=n, src_pitch=n * 4,
                       dst_pitch=out.layout.row_pitch, src_dtype=F32, dst_dtype=dt),
            store(lx_o, out.addr + first * out.layout.row_pitch, rows, out.layout.row_pitch,
                  deps=(6,)),
        ]
    rng = np.random.default_rng(7)
    host = HOST[dtype]
    weights = [(w, (rng.standard_normal((k, n)) * 0.2).astype(host)),
               (b, rng.standard_normal(n).astype(host))]
    kernel = KernelImage("linear_relu", cores, programs, flops=2 * m * k * n,
                         min_offchip_bytes=x.layout.logical_nbytes + w.layout.logical_nbytes
                         + b.layout.logical_nbytes + out.layout.logical_nbytes,
                         provenance=["test: linear+relu"])
    return SpyreBinary(DEFAULT_TARGET.name, [x], [out], weights, [], [kernel],
                       {"source": "runtime_helpers.linear_relu_binary"})


HOST = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32,
        "int32": np.int32}


def linear_relu_reference(binary: SpyreBinary, x: np.ndarray, cores: int = 2,
                          rounding=round_dl16) -> np.ndarray:
    """NumPy model of `linear_relu_binary`: the same per-core tiles, rounded like the device."""
    (_, w), (_, b) = binary.weights
    half = x.dtype != np.float32
    rnd = rounding if half else (lambda v: v)
    xd, wd, bd = (rnd(v.astype(np.float32)) for v in (x, w, b))
    m, k = x.shape
    rows, kh = m // cores, k // 2
    parts = []
    for core in range(cores):
        xs = xd[core * rows:(core + 1) * rows]
        c = np.matmul(xs[:, :kh], wd[:kh], dtype=np.float32)
        c = c + np.matmul(xs[:, kh:], wd[kh:], dtype=np.float32)
        parts.append(rnd(np.maximum(c + bd, np.float32(0))))
    return np.concatenate(parts).astype(x.dtype)


def dma_only_binary(cores: int, nbytes_per_core: int, chunk: int = 64 * 1024) -> SpyreBinary:
    """Each core loads `nbytes_per_core` of its own slice of one fp32 tensor in `chunk` DMAs."""
    cols = 32  # one stick of fp32 per row
    rows_per_core = nbytes_per_core // 128
    src = bind("src", (cores * rows_per_core, cols), "float32", 0)
    programs = {}
    for core in range(cores):
        program = []
        base = src.addr + core * nbytes_per_core
        for offset in range(0, nbytes_per_core, chunk):
            size = min(chunk, nbytes_per_core - offset)
            program.append(load(base + offset, 0, size // 128, 128))
        programs[core] = program
    kernel = KernelImage("dma_only", cores, programs, 0, cores * nbytes_per_core)
    return SpyreBinary(DEFAULT_TARGET.name, [src], [], [], [], [kernel])


def pipelined_binary(cores: int = 32, tiles: int = 16, fn: int = UnaryFn.GELU) -> SpyreBinary:
    """gelu(x @ w) over `tiles` 64-row tiles per core, double-buffered.

    x: (cores*tiles*64, 128) fp16, w: (128, 64) fp16 resident in LX, out: like x @ w. Tile i
    uses buffer slot i % 2 and PT/SFU unit i % 2; the load of tile i+1 is issued before the
    store of tile i so the DMA engine prefetches, and each buffer reuse depends on the last
    reader of that slot (no hazards).
    """
    rows, k, n = 64, 128, 64
    total = cores * tiles * rows
    x = bind("x", (total, k), "float16", 0)
    w = bind("w", (k, n), "float16", 1 * GIB)
    out = bind("out", (total, n), "float16", 2 * GIB)
    xp, wp, op = x.layout.row_pitch, w.layout.row_pitch, out.layout.row_pitch
    lx_w = 0
    lx_x = [0x10000, 0x20000]
    lx_c = [0x30000, 0x40000]
    lx_o = [0x50000, 0x60000]
    programs = {}
    for core in range(cores):
        first_row = core * tiles * rows
        program: list[Instr] = [load(w.addr, lx_w, k, wp)]
        where: dict[tuple[str, int], int] = {}

        def emit(instr: Instr, key: tuple[str, int]) -> None:
            where[key] = len(program)  # noqa: B023 - called within this iteration only
            program.append(instr)  # noqa: B023

        def tile_load(i: int) -> None:
            deps = (where[("mm", i - 2)],) if i >= 2 else ()  # noqa: B023 - as emit
            row = first_row + i * rows  # noqa: B023
            emit(load(x.addr + row * xp, lx_x[i % 2], rows, xp, deps), ("ld", i))

        tile_load(0)
        for i in range(tiles):
            s = i % 2
            if i + 1 < tiles:
                tile_load(i + 1)
            mm_deps = (0, where[("ld", i)]) + ((where[("sfu", i - 2)],) if i >= 2 else ())
            emit(Instr.make("pt.matmul", unit=s, deps=mm_deps, a=lx_x[s], b=lx_w, c=lx_c[s],
                            m=rows, k=k, n=n, a_pitch=xp, b_pitch=wp, c_pitch=n * 4,
                            in_dtype=DL16, accumulate=0), ("mm", i))
            sfu_deps = (where[("mm", i)],) + ((where[("st", i - 2)],) if i >= 2 else ())
            emit(Instr.make("sfu.unary", unit=s, deps=sfu_deps, fn=fn, src=lx_c[s], dst=lx_o[s],
                            rows=rows, cols=n, src_pitch=n * 4, dst_pitch=op, src_dtype=F32,
                            dst_dtype=DL16), ("sfu", i))
            emit(store(lx_o[s], out.addr + (first_row + i * rows) * op, rows, op,
                       (where[("sfu", i)],)), ("st", i))
        programs[core] = program
    kernel = KernelImage("pipelined", cores, programs, flops=2 * total * k * n,
                         min_offchip_bytes=x.layout.logical_nbytes + w.layout.logical_nbytes
                         + out.layout.logical_nbytes)
    weight = (np.random.default_rng(3).standard_normal((k, n)) * 0.1).astype(np.float16)
    return SpyreBinary(DEFAULT_TARGET.name, [x], [out], [(w, weight)], [], [kernel])


def send(src: int, rows: int, row_bytes: int, dst_core: int, tag: int = 0,
         deps: tuple[int, ...] = ()) -> Instr:
    return Instr.make("ring.send", deps=deps, src=src, rows=rows, row_bytes=row_bytes,
                      src_pitch=row_bytes, dst_core=dst_core, tag=tag)


def recv(dst: int, rows: int, row_bytes: int, src_core: int, tag: int = 0,
         deps: tuple[int, ...] = ()) -> Instr:
    return Instr.make("ring.recv", deps=deps, dst=dst, rows=rows, row_bytes=row_bytes,
                      dst_pitch=row_bytes, src_core=src_core, tag=tag)


def barrier(first: int, count: int, deps: tuple[int, ...] = (), stride: int = 1,
            tag: int = 0) -> Instr:
    return Instr.make("sync.barrier", deps=deps, first=first, count=count, stride=stride, tag=tag)


def two_tensor_binary(programs: dict[int, list[Instr]], shape: tuple[int, ...] = (64, 32),
                      dtype: str = "float32", name: str = "k") -> SpyreBinary:
    """A binary running `programs` with input x at 0 and output out at 1 GiB (both `shape`)."""
    x = bind("x", shape, dtype, 0)
    out = bind("out", shape, dtype, 1 * GIB)
    cores = max(programs) + 1
    kernel = KernelImage(name, cores, programs)
    return SpyreBinary(DEFAULT_TARGET.name, [x], [out], [], [], [kernel])
