"""Reduction combiners spyre-legalize-ktir reads as the one arith op they mean: a max / min
written out as `arith.cmpf` + `arith.select` in a `linalg.reduce` region (`selected_max`,
design note 94), and an inter-tile sum written with the named `linalg.add`
(`named_sum_as_addf`, note 89)."""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.ir import Block

from spyrec.dialects.ktdp_intertile import InterTileReduceOp
from spyrec.dialects.std_ext_arith import CmpfOp, SelectOp

# a reduction combiner written `select(cmpf P, %in, %acc), %in, %acc` (`selected_max`)
SELECTED = {"select.max": "maximum", "select.min": "minimum"}
# arith.cmpf's predicates: the ordered comparisons of a max / min written out
_OGT, _OGE, _OLT, _OLE = 2, 3, 4, 5
_SWAPPED = {_OGT: _OLT, _OGE: _OLE, _OLT: _OGT, _OLE: _OGE}


def selected_max(block: Block) -> str:
    """`select.max` / `select.min` if a reduction combiner over (%in, %acc) is a max / min
    written out: `%c = arith.cmpf P, %in, %acc` and `arith.select %c, %in, %acc` yielded,
    P ordered (ogt / oge: max; olt / ole: min; the operands swapped, the mirrored P).

    Folded in order (as the interpreter folds a region), an ordered comparison with a NaN is
    false, so a NaN element is skipped (the accumulator kept) and a NaN accumulator stays
    NaN: over the elements this is `maxnumf` / `minnumf` (a NaN element counts as the
    identity), combined with the init as `maximumf` / `minimumf` (a NaN init propagates).
    Only the sign of a zero result can differ: ogt keeps the first of -0 and +0, oge the
    last, the SFU's MAX returns +0. Any other body is "" (refused by the caller)."""
    ops = list(block.ops)
    if len(ops) != 3 or len(block.args) != 2:
        return ""
    cmp, select, yielded = ops
    element, acc = block.args
    if not isinstance(cmp, CmpfOp) or not isinstance(select, SelectOp) \
            or list(yielded.operands) != [select.result] or select.cond is not cmp.result \
            or (select.lhs, select.rhs) != (element, acc):
        return ""
    predicate = cmp.predicate.value.data
    if (cmp.lhs, cmp.rhs) == (acc, element):
        predicate = _SWAPPED.get(predicate, -1)
    elif (cmp.lhs, cmp.rhs) != (element, acc):
        return ""
    return {_OGT: "select.max", _OGE: "select.max", _OLT: "select.min",
            _OLE: "select.min"}.get(predicate, "")


def named_sum_as_addf(op: InterTileReduceOp) -> None:
    """A combiner written with the named op, `linalg.add ins(%lhs, %rhs) outs(%empty)` of
    its two arguments into a `tensor.empty`, becomes the `arith.addf %lhs, %rhs` it means
    (the same elementwise sum in the arguments' type), the form ring.reduce implements."""
    block = op.combiner.block
    ops = list(block.ops)
    if [o.name for o in ops] != ["tensor.empty", "linalg.add", "ktdp.yield_reduced"]:
        return
    empty, add, yielded = ops
    ins = list(add.operands[:2])
    if len(add.operands) != 3 or add.operands[2] is not empty.results[0] or len(set(ins)) != 2 \
            or set(ins) != set(block.args) or yielded.operands[0] is not add.results[0]:
        return
    addf = arith.AddfOp(ins[0], ins[1])
    block.insert_op_before(addf, add)
    add.results[0].replace_all_uses_with(addf.result)
    for dead in (add, empty):
        dead.detach()
        dead.erase()
