"""Compile-time values of a KTIR kernel's scalar arguments, as Triton's constexprs.

`specialise(kernel, constants, where)` binds scalar arguments (`%BLOCK_SIZE: index`,
`%eps: f32`, ...) to values: each bound argument becomes an `arith.constant` of its type at
the top of the kernel and leaves the signature, then every integer `arith` op whose operands
are all constants is folded, so loop bounds and tile offsets computed from the argument are
constants the back end can place. The kernel then computes exactly what the interpreter
computes when it is called with the same values (the binary records them, so `spyrec run
k.spyre --check k.mlir` passes them again).

Guarantees: a name that is not an argument, a value of the wrong kind (a float for an
integer argument, a non-integral or out-of-range integer) and a pointer argument (one that
is a view's offset: the compiler places tensors itself) are refused with a `CompileError`
naming the argument; nothing else of the kernel changes.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping

import ml_dtypes
import numpy as np
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    AnyFloat,
    FloatAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    IntegerType,
)
from xdsl.ir import Attribute, Operation, SSAValue

from spyrec.diagnostics import CompileError
from spyrec.dialects.ktdp import ConstructMemoryViewOp

Scalar = int | float

# the key of a binary's provenance that records the values, as JSON
CONSTANTS_KEY = "ktir_constants"
# provenance: "1" when compiled with every access tile masked (`--masked-tails`, docs/ktir.md §7)
MASKED_KEY = "ktir_masked_tails"
# provenance: the launch grid the kernel was compiled for when `--grid` gave one, as JSON
GRID_KEY = "ktir_grid"

# index arithmetic is 64-bit; the interpreter computes with Python ints, so a fold that
# leaves 64 bits would differ from it: such folds are refused
INDEX_BITS = 64


def _floordiv(a: int, b: int) -> int:
    return a // b


def _ceildiv(a: int, b: int) -> int:
    return -(-a // b)


def _truncdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _truncrem(a: int, b: int) -> int:
    return a - b * _truncdiv(a, b)


FOLDS: dict[type[Operation], Callable[[int, int], int]] = {
    arith.AddiOp: operator.add, arith.SubiOp: operator.sub, arith.MuliOp: operator.mul,
    arith.FloorDivSIOp: _floordiv, arith.CeilDivSIOp: _ceildiv, arith.DivSIOp: _truncdiv,
    arith.RemSIOp: _truncrem, arith.MinSIOp: min, arith.MaxSIOp: max,
}
NUMPY = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64}
# by name: spyrec's arith (`spyrec.dialects.std_ext_arith`) defines its own cast classes
FLOAT_CASTS = ("arith.truncf", "arith.extf", "arith.sitofp", "arith.uitofp")
DIVISIONS = (arith.FloorDivSIOp, arith.CeilDivSIOp, arith.DivSIOp, arith.RemSIOp)


def specialise(kernel: func.FuncOp, constants: Mapping[str, Scalar], where: str) -> None:
    """Bind `constants` (argument name -> value) in `kernel` and fold what they determine
    (with none, fold the integer arithmetic on constants the kernel has: the RFC examples
    compute their sizes and strides from constants)."""
    if not constants:
        _fold(kernel, where)
        return
    block = kernel.body.block
    args = {(a.name_hint or f"arg{a.index}"): a for a in block.args}
    for name in constants:
        if name not in args:
            raise CompileError(f"{where}: --arg {name}: the kernel has no argument %{name}; "
                               f"its arguments are {', '.join('%' + n for n in args)}")
    first = block.first_op
    for name, value in constants.items():
        arg = args[name]
        if is_pointer(arg):
            raise CompileError(f"{where}: --arg {name}: %{name} is a tensor address (the "
                               "offset of a memory view); the compiler places tensors itself, "
                               "so bind only scalar arguments")
        const = arith.ConstantOp(_attribute(arg.type, value, name, where), arg.type)
        const.result.name_hint = name
        block.insert_op_before(const, first) if first else block.add_op(const)
        arg.replace_all_uses_with(const.result)
    keep = [i for i, a in enumerate(block.args) if a.name_hint not in constants]
    if kernel.arg_attrs is not None:
        kernel.arg_attrs = type(kernel.arg_attrs)([kernel.arg_attrs.data[i] for i in keep])
    for arg in [a for a in block.args if a.name_hint in constants]:
        block.erase_arg(arg)
    kernel.properties["function_type"] = FunctionType.from_lists(
        [a.type for a in block.args], list(kernel.function_type.outputs.data))
    _fold(kernel, where)


def is_pointer(value: SSAValue) -> bool:
    """Whether `value` is a view's offset, directly or through integer additions."""
    for use in value.uses:
        op = use.operation
        if isinstance(op, ConstructMemoryViewOp) and op.offset is value:
            return True
        if isinstance(op, (arith.AddiOp, arith.SubiOp)) and is_pointer(op.result):
            return True
    return False


def _attribute(type_: Attribute, value: Scalar, name: str,
               where: str) -> IntegerAttr | FloatAttr:
    if isinstance(type_, (IndexType, IntegerType)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise CompileError(f"{where}: --arg {name}={value}: %{name} is {type_}; give an "
                               "integer")
        bits = INDEX_BITS if isinstance(type_, IndexType) else type_.width.data
        if not -(2 ** (bits - 1)) <= value < 2 ** bits:
            raise CompileError(f"{where}: --arg {name}={value}: out of the range of {type_}")
        return IntegerAttr(value, type_)
    if isinstance(type_, AnyFloat):
        return FloatAttr(float(value), type_)
    raise CompileError(f"{where}: --arg {name}: %{name} is {type_}; only index, integer and "
                       "float arguments take a compile-time value")


def constant_of(value: SSAValue) -> int | float | None:
    """The value of an integer or float `arith.constant`; None for anything else."""
    op = value.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, (IntegerAttr, FloatAttr)):
        return op.value.value.data
    return None


def _fold(kernel: func.FuncOp, where: str) -> None:
    """Replace every integer op of FOLDS, `index_cast` and the FLOAT_CASTS (`truncf`,
    `extf`, `sitofp`, `uitofp`) whose operands are constants by the constant it computes
    (a cast rounded as the interpreter rounds it), in program order so chains fold
    through."""
    for op in list(kernel.walk()):
        values = [constant_of(v) for v in op.operands]
        if not op.operands or any(v is None for v in values) or len(op.results) != 1:
            continue
        result = op.results[0]
        type_ = result.type
        attr: IntegerAttr | FloatAttr
        if op.name in FLOAT_CASTS and isinstance(type_, AnyFloat) and values[0] is not None:
            value = values[0]
            source = op.operands[0].type
            if op.name == "arith.uitofp" and isinstance(source, IntegerType) and value < 0:
                value += 2 ** source.width.data  # the bits read as unsigned
            attr = FloatAttr(float(np.array(value, NUMPY[str(type_)])), type_)
        elif isinstance(type_, (IndexType, IntegerType)):
            folded = _fold_integer(op, [v for v in values if isinstance(v, int)], where)
            if folded is None:
                continue
            attr = IntegerAttr(folded, type_)
        else:
            continue
        const = arith.ConstantOp(attr, type_)
        const.result.name_hint = result.name_hint
        assert op.parent is not None
        op.parent.insert_op_before(const, op)
        result.replace_all_uses_with(const.result)
        op.detach()
        op.erase()


def _fold_integer(op: Operation, values: list[int], where: str) -> int | None:
    """What integer op `op` computes from `values`, or None (not foldable, or it wraps)."""
    fold = next((f for k, f in FOLDS.items() if isinstance(op, k)), None)
    if len(values) != len(op.operands):
        return None
    if op.name == "arith.index_cast":
        folded = values[0]
    elif fold is not None:
        if isinstance(op, DIVISIONS) and values[1] == 0:
            raise CompileError(f"{where}: {op.name} divides by zero once the scalar "
                               "arguments are bound")
        folded = fold(*values)
    else:
        return None
    type_ = op.results[0].type
    bits = INDEX_BITS if isinstance(type_, IndexType) else \
        type_.width.data if isinstance(type_, IntegerType) else 0
    if not bits or not -(2 ** (bits - 1)) <= folded < 2 ** (bits - 1):
        return None  # wraps: left to run as written
    return folded
