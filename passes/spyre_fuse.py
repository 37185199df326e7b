"""spyre-fuse: form kernels so intermediates stay in LX.

Expects: stickified `spyre` compute ops in a `func.func`. Guarantees: every compute op sits
in exactly one `spyre.kernel`; a kernel is at most one matmul followed by a chain of
elementwise ops (its epilogue), or a chain of elementwise ops alone. An op joins the kernel
of its producer when the producer's result has no other use and has the same shape, so the
intermediate never leaves LX. Each kernel records `fused` (the FX nodes it holds) and
`reason`.

    %a = spyre.matmul %x, %w bias %b ...     // before: two ops, %a goes through LPDDR
    %r = spyre.relu %a ...
    %r = spyre.kernel "k0"(%x, %w, %b) ... { // after: one kernel, %a stays in LX
      ^bb0(...): %a = spyre.matmul ... ; %r = spyre.relu %a ... ; spyre.yield %r }
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr, TensorType
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from spyrec.dialects.spyre import (
    BINARY_OPS,
    UNARY_OPS,
    KernelOp,
    MatmulOp,
    YieldOp,
)


def is_elementwise(op: Operation) -> bool:
    short = op.name.removeprefix("spyre.")
    return op.name.startswith("spyre.") and (short in UNARY_OPS or short in BINARY_OPS)


def is_compute(op: Operation) -> bool:
    return isinstance(op, MatmulOp) or is_elementwise(op)


def _shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return tuple(value.type.get_shape())


@dataclass(frozen=True)
class SpyreFuse(ModulePass):
    """Group a matmul with its elementwise epilogue, and elementwise chains, into kernels."""

    name = "spyre-fuse"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        counter = 0
        for fn in [o for o in op.walk() if isinstance(o, func.FuncOp)]:
            if fn.body.blocks.first is None or "grid" in fn.attributes:
                continue
            for group in self._groups(fn.body.block):
                _outline(group, f"k{counter}")
                counter += 1

    @staticmethod
    def _groups(block: Block) -> list[list[Operation]]:
        groups: list[list[Operation]] = []
        group_of: dict[Operation, list[Operation]] = {}
        for op in block.ops:
            if not is_compute(op):
                continue
            joined = None
            if is_elementwise(op):
                for operand in op.operands:
                    producer = operand.owner
                    if (isinstance(producer, Operation) and producer in group_of
                            and operand.has_one_use()
                            and _shape(operand) == _shape(op.results[0])
                            and group_of[producer][-1] is producer):
                        joined = group_of[producer]
                        break
            if joined is None:
                joined = []
                groups.append(joined)
            joined.append(op)
            group_of[op] = joined
        return groups


def _outline(group: list[Operation], name: str) -> None:
    """Move `group` into a new spyre.kernel placed where its last op was."""
    members = set(group)
    inputs: list[SSAValue] = []
    for op in group:
        for operand in op.operands:
            if operand.owner not in members and operand not in inputs:
                inputs.append(operand)
    outputs = [r for op in group for r in op.results
               if any(use.operation not in members for use in r.uses)]
    block = Block(arg_types=[v.type for v in inputs])
    body = Region(block)
    kernel = KernelOp(name, inputs, [r.type for r in outputs], body)
    kernel.attributes["fused"] = ArrayAttr(
        [op.attributes.get("fx_node", StringAttr(op.name)) for op in group])
    kernel.attributes["reason"] = StringAttr(
        "matmul with elementwise epilogue" if isinstance(group[0], MatmulOp) and len(group) > 1
        else "single op" if len(group) == 1 else "elementwise chain")
    Rewriter.insert_op(kernel, InsertPoint.before(group[-1]))
    for out, res in zip(outputs, kernel.results):
        for use in list(out.uses):
            if use.operation not in members:
                use.operation.operands[use.index] = res
        res.name_hint = out.name_hint
    for op in group:
        op.detach()
        block.add_op(op)
    for value, arg in zip(inputs, block.args):
        for use in list(value.uses):
            if use.operation in members:
                use.operation.operands[use.index] = arg
        arg.name_hint = value.name_hint
    block.add_op(YieldOp(outputs))
    if "spyre.layout" in group[-1].attributes:
        kernel.attributes["spyre.layout"] = group[-1].attributes["spyre.layout"]
