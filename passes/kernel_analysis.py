"""Structure of a `spyre.kernel` as the middle-end passes see it.

A kernel is an optional matmul (its first op) followed by a graph of tile ops on one row
block. Every value of the kernel is one of three kinds relative to the kernel's full
rows x cols tensor (M x N, leading dims flattened into rows):

- FULL: the full M x N tensor, tiled tm x tn;
- ROW: one row of N values broadcast over all rows (a bias or norm weight), tiled 1 x tn;
- COL: one value per row (a row reduction), tiled tm x 1, one stick per row in LX.

`analyze` classifies every value and summarises the kernel as a cost-model `KernelShape`.
The partitioning, tiling, lowering and scheduling passes all read kernels through this one
function so they agree on what a kernel is.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field

from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, TensorType, i64
from xdsl.ir import Operation, SSAValue

from spyrec.costmodel import KernelShape, Split, Tiling
from spyrec.diagnostics import CompileError
from spyrec.dialects.spyre import (
    BINARY_OPS,
    REDUCE_OPS,
    SCALAR_OPS,
    UNARY_OPS,
    CastOp,
    KernelOp,
    MatmulOp,
    YieldOp,
    describe,
)
from spyrec.runtime.isa import TRANSCENDENTAL, UnaryFn

DEVICE_ITEMSIZE = {"f16": 2, "bf16": 2, "f32": 4, "i32": 4}

UNARY_FN = {
    "relu": UnaryFn.RELU, "gelu": UnaryFn.GELU, "gelu_tanh": UnaryFn.GELU_TANH,
    "exp": UnaryFn.EXP, "neg": UnaryFn.NEG, "sigmoid": UnaryFn.SIGMOID, "silu": UnaryFn.SILU,
    "tanh": UnaryFn.TANH, "sqrt": UnaryFn.SQRT, "rsqrt": UnaryFn.RSQRT,
    "reciprocal": UnaryFn.RECIPROCAL, "abs": UnaryFn.ABS,
}
_SCALAR_NAMES = {cls.name: kind for kind, cls in SCALAR_OPS.items()}
_REDUCE_NAMES = {cls.name: kind for kind, cls in REDUCE_OPS.items()}


class Kind(enum.Enum):
    FULL = "full"
    ROW = "row"
    COL = "col"


def op_kind(op: Operation) -> tuple[str, str]:
    """(category, function) of a tile op: unary/binary/scalar/reduce/cast."""
    short = op.name.removeprefix("spyre.")
    if isinstance(op, CastOp):
        return "cast", "copy"
    if short in UNARY_OPS:
        return "unary", short
    if short in BINARY_OPS:
        return "binary", short
    if op.name in _SCALAR_NAMES:
        return "scalar", _SCALAR_NAMES[op.name]
    if op.name in _REDUCE_NAMES:
        return "reduce", _REDUCE_NAMES[op.name]
    raise CompileError(f"{describe(op)}: cannot be part of a kernel's tile graph")


def sfu_passes(fn: str, factor: int = 4) -> int:
    return factor if fn in UNARY_FN and UNARY_FN[fn] in TRANSCENDENTAL else 1


def rows_cols(value: SSAValue) -> tuple[int, int]:
    assert isinstance(value.type, TensorType)
    shape = list(value.type.get_shape()) or [1]
    return math.prod(shape[:-1]), shape[-1]


def itemsize(value: SSAValue) -> int:
    assert isinstance(value.type, TensorType)
    return DEVICE_ITEMSIZE[str(value.type.element_type)]


@dataclass
class KernelInfo:
    kernel: KernelOp
    matmul: MatmulOp | None
    ops: list[Operation]  # tile ops after the matmul, in program order
    outputs: list[SSAValue]
    full: tuple[int, int]  # M x N
    kinds: dict[SSAValue, Kind] = field(default_factory=dict)

    @property
    def has_reduce(self) -> bool:
        return any(op_kind(op)[0] == "reduce" for op in self.ops)

    def kind(self, value: SSAValue) -> Kind:
        return self.kinds[value]

    def shape(self) -> KernelShape:
        m, n = self.full
        args = list(self.kernel.body.block.args)
        used = [a for a in args if a.uses and not self._only_matmul_operand(a)]
        row_ops = sum(1 for a in used if self.kinds[a] is Kind.ROW)
        full_ops = sum(1 for a in used if self.kinds[a] is Kind.FULL)
        col_ops = sum(1 for a in used if self.kinds[a] is Kind.COL)
        if self.matmul is not None and self.matmul.bias is not None:
            row_ops += 1
        passes = sum(sfu_passes(op_kind(op)[1]) for op in self.ops
                     if op_kind(op)[0] != "cast")
        passes += (1 if self.matmul is not None and self.matmul.bias is not None else 0)
        passes += len(self.outputs)  # the final conversion of each result
        full_temps = self._peak_live(Kind.FULL)
        col_temps = col_ops + self._peak_live(Kind.COL)
        main = self.matmul.lhs if self.matmul else None
        in_size = itemsize(main) if main is not None else max(
            [itemsize(a) for a in used] or [4])
        return KernelShape(
            m, n, _k(self.matmul), in_size, max(itemsize(v) for v in self.outputs),
            row_operands=row_ops, full_operands=full_ops, sfu_passes=max(passes, 1),
            reduce=self.has_reduce, full_temps=full_temps, col_temps=col_temps,
            outputs=len(self.outputs))

    def _peak_live(self, kind: Kind) -> int:
        """Most tile-graph values of `kind` live at once (an operand dying at an op frees
        its buffer for the op's result, as spyre-place-memory's in-place reuse does)."""
        body = ([self.matmul] if self.matmul else []) + self.ops
        last_use = {v: op for op in body for v in op.operands}
        live: set[SSAValue] = set()
        peak = 0
        for op in body:
            for v in op.operands:
                if v in live and last_use[v] is op and v not in self.outputs:
                    live.discard(v)
            if not isinstance(op, CastOp):  # a cast aliases its operand's tile
                live.update(r for r in op.results if self.kinds.get(r) is kind)
            peak = max(peak, len(live))
        return peak

    def _only_matmul_operand(self, arg: SSAValue) -> bool:
        mm = self.matmul
        return mm is not None and all(u.operation is mm for u in arg.uses)


def _k(matmul: MatmulOp | None) -> int:
    return 0 if matmul is None else matmul.lhs.type.get_shape()[1]  # type: ignore[attr-defined]


def classify(value: SSAValue, full: tuple[int, int]) -> Kind | None:
    rows, cols = rows_cols(value)
    m, n = full
    if (rows, cols) == (m, n):
        return Kind.FULL
    if rows == 1 and cols == n:
        return Kind.ROW
    if (rows, cols) == (m, 1):
        return Kind.COL
    return None


def analyze(kernel: KernelOp) -> KernelInfo:
    """Classify a kernel's values; reject shapes the tile graph cannot express."""
    ops = list(kernel.body.block.ops)
    term = ops[-1]
    assert isinstance(term, YieldOp)
    body = ops[:-1]
    if not body:
        raise CompileError(f"kernel @{kernel.sym_name.data} is empty")
    matmul = body[0] if isinstance(body[0], MatmulOp) else None
    values = [v for op in body for v in (*op.operands, *op.results)]
    full = rows_cols(matmul.result) if matmul else max(
        (rows_cols(v) for v in values), key=math.prod)
    info = KernelInfo(kernel, matmul, body[1:] if matmul else body, list(term.values), full)
    if not info.outputs:
        raise CompileError(f"kernel @{kernel.sym_name.data} has no result")
    if matmul is not None and len(matmul.result.type.get_shape()) != 2:  # type: ignore[attr-defined]
        raise CompileError(f"{describe(matmul)}: only 2-D matmuls are lowered so far")
    for op in body:
        if op is matmul:
            info.kinds[matmul.result] = Kind.FULL
            for v in ([matmul.bias] if matmul.bias is not None else []):
                info.kinds[v] = Kind.ROW
            continue
        op_kind(op)  # rejects ops that are not tile ops
        for v in (*op.operands, *op.results):
            kind = classify(v, full)
            if kind is None:
                raise CompileError(
                    f"{describe(op)}: a {list(v.type.get_shape())} operand does not fit the "  # type: ignore[attr-defined]
                    f"kernel's {full[0]}x{full[1]} row block (only full tensors, one row or "
                    "one column of it broadcast)")
            info.kinds[v] = kind
    for arg in kernel.body.block.args:
        info.kinds.setdefault(arg, classify(arg, full) or Kind.FULL)
    return info


def read_split(kernel: KernelOp) -> Split:
    grid = kernel.attributes.get("grid")
    if not isinstance(grid, ArrayAttr):
        raise CompileError(f"kernel @{kernel.sym_name.data} has no grid; run "
                           "spyre-partition-cores first")
    gm, gn = (g.value.data for g in grid.data)  # type: ignore[attr-defined]
    return Split(gm, gn)


def read_tiling(kernel: KernelOp) -> Tiling:
    tile = kernel.attributes.get("tile")
    if not isinstance(tile, ArrayAttr):
        raise CompileError(f"kernel @{kernel.sym_name.data} has no tile; run spyre-tile first")
    tm, tn, tk = (t.value.data for t in tile.data)  # type: ignore[attr-defined]
    return Tiling(tm, tn, tk)


def int_array(values: list[int]) -> ArrayAttr:
    return ArrayAttr([IntegerAttr(v, i64) for v in values])
