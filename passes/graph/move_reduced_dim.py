"""Reductions and softmax over a dim other than the last: move that dim last first.

Spyre reduces along the innermost (stick) dim only: the SFU folds a stick's elements, so
softmax, max, argmax, var, norms and logsumexp are selected over the last dim. An op that
reduces dim d of a rank-r tensor (d < r - 1; `dim=0` of a matrix, `dim=1` of [B, S, H])
becomes, before op selection,

    xt = permute(x, [.. every other dim in order .., d])   # d is now innermost
    yt = op(xt, dim=-1)                                    # the last-dim lowering
    y  = permute(yt, inverse)                              # when yt still has the dim

all as `spyre.aten` ops, so spyre-legalize selects them like any other: the permutes are
device transposes (the innermost dim moves through the PT, design note 37) plus free or
row-permuting reshapes. softmax / log_softmax / cumsum keep their shape and move back;
keepdim reductions move their size-1 dim back (a column becomes a row); keepdim=False
reductions need no move back, since the kept dims of `yt` are in their original order
(the last-dim lowering turns its column into a row, `_column_to_row`). Reductions over
several dims are left to their selectors, and so are sums and means over leading dims
(a matmul by a summation matrix, design note 34) except when that matmul is refused
(`summation_refusal`: the summed rows are not whole sticks, as a class-token-free ViT
pool `x[:, 1:].mean(1)` over 16 fp32 rows; design note 74): those move the dim last too.
A sum or 2-norm over adjacent leading dims whose matrix is refused (ConvNeXt V2's response
norm over H and W of a small image) first merges them into one by a free reshape (the stick
dim stays) and then moves that one (design note 98).
"""

from __future__ import annotations

import math

from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from spyrec.dialects.spyre import AtenOp
from spyrec.passes.graph.graph_build import element
from spyrec.passes.graph.graph_build import shape as _shape
from spyrec.passes.graph.legalize.reductions import summation_refusal

# target -> True when the result keeps the reduced dim at full size (moved back always)
MOVABLE: dict[str, bool] = {
    "aten.softmax.int": True,
    "aten._softmax.default": True,
    "aten._log_softmax.default": True,
    "aten.log_softmax.int": True,
    "aten.cumsum.default": True,
    "aten.amax.default": False,
    "aten.amin.default": False,
    "aten.max.dim": False,
    "aten.min.dim": False,
    "aten.argmax.default": False,
    "aten.argmin.default": False,
    "aten.var.correction": False,
    "aten.std.correction": False,
    "aten.linalg_vector_norm.default": False,
    "aten.logsumexp.default": False,
}
# moved only when the summation-matrix form over leading dims is refused (`_movable`)
SUMS = {"aten.sum.dim_IntList", "aten.mean.dim"}


def _one_dim(op: AtenOp, rank: int) -> int | None:
    """The one dim `op` reduces, normalised, or None (several dims, all dims, a 0-D input)."""
    attr = op.args.data.get("dim")
    if isinstance(attr, ArrayAttr):
        if len(attr.data) != 1:
            return None
        attr = attr.data[0]
    if not isinstance(attr, IntegerAttr) or rank == 0:
        return None
    return attr.value.data % rank


def _permute(at: AtenOp, value: SSAValue, perm: list[int], suffix: str) -> SSAValue:
    return _view_op(at, value, "aten.permute.default", "dims", perm,
                    [_shape(value)[p] for p in perm], suffix)


def _view_op(at: AtenOp, value: SSAValue, target: str, name: str, ints: list[int],
             shape: list[int], suffix: str) -> SSAValue:
    assert isinstance(value.type, TensorType)
    new = AtenOp.create(
        operands=[value],
        result_types=[TensorType(value.type.element_type, shape)],
        properties={"target": StringAttr(target),
                    "args": DictionaryAttr(
                        {name: ArrayAttr([IntegerAttr(p, i64) for p in ints])}),
                    "operand_names": ArrayAttr([StringAttr("self")])},
        attributes=dict(at.attributes))
    node = at.attributes.get("fx_node")
    if isinstance(node, StringAttr):  # its own node name: constants it makes are its own
        new.attributes["fx_node"] = StringAttr(f"{node.data}.{suffix}")
    Rewriter.insert_op(new, InsertPoint.before(at))
    new.results[0].name_hint = f"{value.name_hint or 'x'}_{suffix}"
    return new.results[0]


def _movable(op: AtenOp, rank: int) -> tuple[int, bool] | None:
    """(the one non-last dim `op` reduces, whether its result keeps it at full size), or
    None when `op` is not moved: not a movable op, several dims, the last dim, or a sum
    whose summation matrix works."""
    target = op.target.data
    full = MOVABLE.get(target, False if target in SUMS else None)
    d = _one_dim(op, rank)
    if full is None or d is None or d == rank - 1:
        return None
    if target in SUMS and not summation_refusal(
            _shape(op.operands[0])[:-1], [d], element(op.results[0])):
        return None
    return d, full


# reductions over several adjacent leading dims that merge into one when their summation
# matrix is refused (`_merge_reduced_dims`)
MERGEABLE = {"aten.linalg_vector_norm.default", *SUMS}


def _mergeable(op: AtenOp, rank: int) -> list[int] | None:
    """The adjacent leading dims (two or more) `op` reduces when they should merge into
    one: a sum or a 2-norm whose summation matrix over them is refused (the summed rows
    are not whole sticks: ConvNeXt V2's response norm over 4 x 4 pixels)."""
    attr = op.args.data.get("dim")
    if op.target.data not in MERGEABLE or not isinstance(attr, ArrayAttr) \
            or len(attr.data) < 2 or rank < 3:
        return None
    dims = sorted({a.value.data % rank for a in attr.data
                   if isinstance(a, IntegerAttr)})
    if len(dims) != len(attr.data) or dims[-1] >= rank - 1 \
            or dims != list(range(dims[0], dims[-1] + 1)):
        return None
    summed = "f32" if op.target.data not in SUMS else element(op.results[0])
    if not summation_refusal(_shape(op.operands[0])[:-1], dims, summed):
        return None
    return dims


def _merge_reduced_dims(op: AtenOp, dims: list[int]) -> AtenOp:
    """`op` over the adjacent leading dims `dims` as the same op over their product, one
    dim, between free reshapes (the stick dim stays): `_movable` then moves it last."""
    x = op.operands[0]
    shape = _shape(x)
    first, last = dims[0], dims[-1]
    merged = [*shape[:first], math.prod(shape[first:last + 1]), *shape[last + 1:]]
    xm = _view_op(op, x, "aten.view.default", "size", merged, merged, "merged")
    keepdim = op.args.data.get("keepdim")
    keep = isinstance(keepdim, IntegerAttr) and bool(keepdim.value.data)
    args = dict(op.args.data)
    args["dim"] = ArrayAttr([IntegerAttr(first, i64)])
    result = op.results[0]
    assert isinstance(result.type, TensorType)
    out = [*merged[:first], 1, *merged[first + 1:]] if keep else _shape(result)
    new = AtenOp.create(operands=[xm, *op.operands[1:]],
                        result_types=[TensorType(result.type.element_type, out)],
                        properties={"target": op.target, "args": DictionaryAttr(args),
                                    "operand_names": op.operand_names},
                        attributes=dict(op.attributes))
    Rewriter.insert_op(new, InsertPoint.before(op))
    new.results[0].name_hint = result.name_hint
    value = new.results[0]
    if out != _shape(result):
        value = _view_op(op, value, "aten.view.default", "size", _shape(result),
                         _shape(result), "unmerged")
    result.replace_all_uses_with(value)
    op.detach()
    op.erase()
    return new


def move_reduced_dims_last(module: ModuleOp) -> int:
    """Rewrite every op that `_movable` moves (one of `MOVABLE`, or of `SUMS` whose matrix
    is refused, reducing one non-last dim, or adjacent ones merged into one first) as
    above; returns how many were rewritten."""
    count = 0
    for found in [o for o in module.walk() if isinstance(o, AtenOp)]:
        if found.parent is None or not found.operands:
            continue
        dims = _mergeable(found, len(_shape(found.operands[0])))
        op = found if dims is None else _merge_reduced_dims(found, dims)
        x = op.operands[0]
        rank = len(_shape(x))
        movable = _movable(op, rank)
        if movable is None:
            continue
        d, full = movable
        perm = [i for i in range(rank) if i != d] + [d]
        inverse = [perm.index(i) for i in range(rank)]
        xt = _permute(op, x, perm, "to_last")
        keepdim = op.args.data.get("keepdim")
        keep = full or (isinstance(keepdim, IntegerAttr) and bool(keepdim.value.data))
        args = dict(op.args.data)
        dim_attr = args["dim"]
        last = IntegerAttr(rank - 1, i64)
        args["dim"] = ArrayAttr([last]) if isinstance(dim_attr, ArrayAttr) else last
        result_types = []
        for r in op.results:
            assert isinstance(r.type, TensorType)
            rshape = _shape(r)
            if keep:
                rshape = [rshape[p] for p in perm]
            result_types.append(TensorType(r.type.element_type, rshape))
        new = AtenOp.create(operands=[xt, *op.operands[1:]], result_types=result_types,
                            properties={"target": op.target, "args": DictionaryAttr(args),
                                        "operand_names": op.operand_names},
                            attributes=dict(op.attributes))
        Rewriter.insert_op(new, InsertPoint.before(op))
        for old, result in zip(op.results, new.results):
            result.name_hint = old.name_hint
            value = result
            if keep and old.uses:
                value = _permute(op, result, inverse, "from_last")
            old.replace_all_uses_with(value)
        op.detach()
        op.erase()
        count += 1
    return count
