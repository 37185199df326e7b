"""An inter-tile sum of a flattened partial, made a sum of the partial as computed.

ktir-cpu's ffn_swiglu_4core flattens its `tensor<4x256xf16>` partial before the ring and
expands the sum back after it:

    %flat = tensor.collapse_shape %partial [[0, 1]] : tensor<4x256xf16> into tensor<1024xf16>
    %fut = ktdp.inter_tile_produce ... { ktdp.yield_partial %flat : tensor<1024xf16> }
    %sum_flat = ktdp.inter_tile_reduce(%fut) ... identity(%zeros : tensor<1024xf16>) {
      ^bb0(%l: tensor<1024xf16>, %r: tensor<1024xf16>): ... linalg.add / arith.addf ... }
    %sum = tensor.expand_shape %sum_flat [[0, 1]] output_shape [4, 256] ...

`unflatten_sums(kernel)` rewrites the pair to sum `%partial` itself and gives its users the
sum directly. A sum is elementwise, so summing before or after the reshape gives the same
elements in the same places; the identity becomes the same fill of the partial's shape.
It applies when the reshapes only frame the sum: the collapsed value is only the produce's
one yielded partial, every use of the result is an expand back to the partial's type, the
identity is a `linalg.fill`, and the combiner adds its two arguments (`arith.addf`, or
`linalg.add` into a `tensor.empty`). Anything else is left as written (the legalizer
refuses the `tensor.collapse_shape` by name).
"""

from __future__ import annotations

from xdsl.dialects import arith, func, tensor
from xdsl.dialects.builtin import TensorType
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Block, Operation, Region, SSAValue

from spyrec.dialects.ktdp_intertile import (
    InterTileProduceOp,
    InterTileReduceOp,
    YieldReducedOp,
)
from spyrec.dialects.ktdp_types import TileFutureType

SUM_OPS = ({"arith.addf"}, {"tensor.empty", "linalg.add"})


def unflatten_sums(kernel: func.FuncOp) -> None:
    """Sum each partial flattened only for its inter-tile sum as it is (module docstring)."""
    for reduce in [o for o in kernel.walk() if isinstance(o, InterTileReduceOp)]:
        produce = reduce.future.owner
        if not isinstance(produce, InterTileProduceOp) or len(reduce.results) != 1:
            continue
        yielded = produce.body.block.last_op
        assert yielded is not None
        collapse = yielded.operands[0].owner
        fill = reduce.identity[0].owner if len(reduce.identity) == 1 else None
        if not isinstance(collapse, tensor.CollapseShapeOp) or len(yielded.operands) != 1 \
                or not collapse.result.has_one_use() or not isinstance(fill, linalg.FillOp) \
                or not _sums(reduce):
            continue
        shaped = collapse.src.type
        uses = [u.operation for u in reduce.results[0].uses]
        if not isinstance(shaped, TensorType) or not all(
                isinstance(u, tensor.ExpandShapeOp) and u.result.type == shaped for u in uses):
            continue
        _rebuild(produce, reduce, collapse, fill, shaped)


def _sums(reduce: InterTileReduceOp) -> bool:
    """Whether the combiner is one elementwise sum of its two arguments, yielded."""
    block = reduce.combiner.block
    *ops, yielded = list(block.ops)
    names = {o.name for o in ops}
    if names not in SUM_OPS or len(ops) != len(names):
        return False
    add = ops[-1]
    return set(add.operands[:2]) == set(block.args) and len(set(add.operands[:2])) == 2 \
        and yielded.operands[0] is add.results[0]


def _rebuild(produce: InterTileProduceOp, reduce: InterTileReduceOp,
             collapse: tensor.CollapseShapeOp, fill: linalg.FillOp,
             shaped: TensorType) -> None:
    """The produce / reduce pair of `shaped` partials in place of the flattened one."""
    def before(op: Operation, new: list[Operation]) -> None:
        assert op.parent is not None
        op.parent.insert_ops_before(new, op)

    empty = tensor.EmptyOp([], shaped)
    zeros = linalg.FillOp(list(fill.inputs), [empty.tensor], [shaped])
    before(reduce, [empty, zeros])
    yielded = produce.body.block.last_op
    assert yielded is not None
    yielded.operands[0] = collapse.src
    _erase(collapse)
    future = TileFutureType([shaped], produce.future_type.groups)
    new_produce = InterTileProduceOp(produce.producer_tiles_per_group, future,
                                     produce.detach_region(produce.body))
    new_produce.attributes.update(produce.attributes)
    new_produce.future.name_hint = produce.future.name_hint
    before(produce, [new_produce])
    block = Block(arg_types=[shaped, shaped])
    total = arith.AddfOp(block.args[0], block.args[1])
    block.add_ops([total, YieldReducedOp([total.result])])
    new_reduce = InterTileReduceOp.create(
        operands=[new_produce.future, zeros.results[0]], result_types=[shaped],
        properties=dict(reduce.properties), attributes=dict(reduce.attributes),
        regions=[Region(block)])
    before(reduce, [new_reduce])
    result: SSAValue = new_reduce.results[0]
    result.name_hint = reduce.results[0].name_hint
    for use in list(reduce.results[0].uses):
        expand = use.operation
        expand.results[0].replace_all_uses_with(result)
        _erase(expand)
    _erase(reduce)
    _erase(produce)
    if not fill.results[0].uses:
        old_init = fill.outputs[0].owner
        _erase(fill)
        if isinstance(old_init, tensor.EmptyOp) and not old_init.tensor.uses:
            _erase(old_init)


def _erase(op: Operation) -> None:
    op.detach()
    op.erase()
