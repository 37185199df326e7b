"""Structure of a `spyre.kernel` as the middle-end passes see it.

A kernel is an optional matmul followed by an elementwise chain. `analyze` names its parts
(the main operands, the bias, the extra operands of each epilogue step) and summarises it as
a cost-model `KernelShape`. The partitioning, tiling and lowering passes all read kernels
through this one function so they agree on what a kernel is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, TensorType
from xdsl.ir import Operation, SSAValue

from spyrec.costmodel import KernelShape, Split, Tiling
from spyrec.diagnostics import CompileError
from spyrec.dialects.spyre import BINARY_OPS, UNARY_OPS, KernelOp, MatmulOp, YieldOp, describe
from spyrec.runtime.isa import TRANSCENDENTAL, UnaryFn

DEVICE_ITEMSIZE = {"f16": 2, "bf16": 2, "f32": 4, "i32": 4}


@dataclass
class EpilogueStep:
    """One elementwise op of the chain: its function and its operand outside the chain."""

    op: Operation
    fn: str  # unary or binary spyre op name, e.g. "relu", "add"
    other: SSAValue | None = None  # the non-chain operand of a binary op (a block argument)
    other_is_row: bool = False  # True when `other` broadcasts one row over all rows
    chain_is_lhs: bool = True


@dataclass
class KernelInfo:
    kernel: KernelOp
    matmul: MatmulOp | None
    first_input: SSAValue | None  # the chain's input when there is no matmul
    steps: list[EpilogueStep] = field(default_factory=list)
    output: SSAValue | None = None

    @property
    def out_type(self) -> TensorType:
        assert self.output is not None and isinstance(self.output.type, TensorType)
        return self.output.type

    def shape(self) -> KernelShape:
        out_shape = list(self.out_type.get_shape())
        rows = math.prod(out_shape[:-1]) if len(out_shape) > 1 else 1
        cols = out_shape[-1] if out_shape else 1
        main = self.matmul.lhs if self.matmul else self.first_input
        assert main is not None
        in_size = _itemsize(main)
        row_ops = (1 if self.matmul and self.matmul.bias is not None else 0) + sum(
            1 for s in self.steps if s.other is not None and s.other_is_row)
        full_ops = sum(1 for s in self.steps if s.other is not None and not s.other_is_row)
        if not self.matmul:
            full_ops += 1  # the chain input itself streams in like a full operand
        passes = sum(sfu_passes(s.fn) for s in self.steps)
        passes += 1 if self.matmul and self.matmul.bias is not None else 0
        return KernelShape(rows, cols, _k(self.matmul), in_size, _itemsize(self.output),
                           row_operands=row_ops, full_operands=full_ops,
                           sfu_passes=max(passes, 1))


def _k(matmul: MatmulOp | None) -> int:
    return 0 if matmul is None else matmul.lhs.type.get_shape()[1]  # type: ignore[attr-defined]


def _itemsize(value: SSAValue | None) -> int:
    assert value is not None and isinstance(value.type, TensorType)
    return DEVICE_ITEMSIZE[str(value.type.element_type)]


UNARY_FN = {
    "relu": UnaryFn.RELU, "gelu": UnaryFn.GELU, "gelu_tanh": UnaryFn.GELU_TANH,
    "exp": UnaryFn.EXP, "neg": UnaryFn.NEG, "sigmoid": UnaryFn.SIGMOID, "silu": UnaryFn.SILU,
    "tanh": UnaryFn.TANH, "sqrt": UnaryFn.SQRT, "rsqrt": UnaryFn.RSQRT,
    "reciprocal": UnaryFn.RECIPROCAL, "abs": UnaryFn.ABS,
}


def sfu_passes(fn: str, factor: int = 4) -> int:
    return factor if fn in UNARY_FN and UNARY_FN[fn] in TRANSCENDENTAL else 1


def analyze(kernel: KernelOp) -> KernelInfo:
    """Split a kernel into matmul and epilogue steps; reject shapes not lowered yet."""
    ops = list(kernel.body.block.ops)
    term = ops[-1]
    assert isinstance(term, YieldOp)
    body = ops[:-1]
    matmul = body[0] if body and isinstance(body[0], MatmulOp) else None
    chain: SSAValue | None = matmul.result if matmul else None
    info = KernelInfo(kernel, matmul, None)
    for op in body[1:] if matmul else body:
        short = op.name.removeprefix("spyre.")
        if short in UNARY_OPS:
            if chain is None:
                info.first_input = chain = op.operands[0]
            info.steps.append(EpilogueStep(op, short))
        elif short in BINARY_OPS:
            if chain is None:
                info.first_input = chain = op.operands[0]
            lhs, rhs = op.operands
            chain_is_lhs = lhs is chain
            other = rhs if chain_is_lhs else lhs
            out_shape = tuple(op.results[0].type.get_shape())  # type: ignore[attr-defined]
            other_shape = tuple(other.type.get_shape())  # type: ignore[attr-defined]
            is_row = other_shape != out_shape
            if is_row and math.prod(other_shape) != out_shape[-1]:
                raise CompileError(
                    f"{describe(op)}: broadcasting {list(other_shape)} to {list(out_shape)} is "
                    "only lowered for a row vector over the last dimension so far"
                )
            info.steps.append(EpilogueStep(op, short, other, is_row, chain_is_lhs))
        else:
            raise CompileError(f"{describe(op)}: cannot be part of a kernel epilogue")
        chain = op.results[0]
    info.output = term.values[0] if term.values else None
    if info.output is None:
        raise CompileError(f"kernel @{kernel.sym_name.data} has no result")
    if matmul and len(matmul.result.type.get_shape()) != 2:  # type: ignore[attr-defined]
        raise CompileError(f"{describe(matmul)}: only 2-D matmuls are lowered so far")
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
    from xdsl.dialects.builtin import i64

    return ArrayAttr([IntegerAttr(v, i64) for v in values])


