"""spyre-legalize patterns that move data without arithmetic: reshapes, permutations
and transposes.

Transposes of weights fold into the weight (`spyre.param` with a `permutation`, one copy per
weight however many ops read it). Permutations of an activation's leading dims are
`spyre.permute_rows` (a reshape when only size-1 dims move); a move of the innermost (stick)
dim is a device transpose, identity @ x^T on the PT (`device_transpose`, design note 37),
which a matmul reading the transpose as stored absorbs (`transpose_source`). Reshapes that
keep the stick dim are free `spyre.reshape`s; ones that split or merge it restickify
through device transposes (`restickify_reshape`), and any other one is a merge and a split.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import Float32Type, ModuleOp, TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.rewriter import InsertPoint

from spyrec.dialects.spyre import (
    BINARY_OPS,
    ELEMENT_BYTES,
    SCALAR_OPS,
    STICK_BYTES,
    AtenOp,
    BatchMatmulOp,
    CastOp,
    ExpandRowsOp,
    ParamOp,
    PermuteRowsOp,
    ReshapeOp,
    is_free_reshape,
)
from spyrec.passes.graph.graph_build import constant as _constant
from spyrec.passes.graph.graph_build import element as _element_name
from spyrec.passes.graph.graph_build import emit as _emit
from spyrec.passes.graph.graph_build import exact_move
from spyrec.passes.graph.graph_build import fx_name as _fx_name
from spyrec.passes.graph.graph_build import shape as _shape
from spyrec.passes.graph.legalize.base import (
    FLOAT_ELEMENTS,
    INT_ELEMENTS,
    LegalizeRewriter,
    Selector,
    Unsupported,
    arg,
    with_shape,
)
from spyrec.target import SpyreTarget
from spyrec.target.layout import stick_padded


def transposed_weight(op: AtenOp, value: SSAValue, rewriter: LegalizeRewriter,
                      perm: list[int] | None = None) -> SSAValue:
    """The weight `value` with its dims permuted (result dim i = dim perm[i]; by default a
    2-D weight transposed), folded into a new spyre.param: the stored data is permuted once
    at compile time, whatever the rank (a stack of expert matrices transposed for a bmm)."""
    owner = value.owner
    if not isinstance(owner, ParamOp):
        raise Unsupported("the transposed operand is not a constant weight (activation "
                          "transposes are not lowered yet)")
    ttype = value.type
    assert isinstance(ttype, TensorType)
    shape = list(ttype.get_shape())
    if perm is None:
        if len(shape) != 2:
            raise Unsupported(f"transpose of a {len(shape)}-D weight")
        perm = [1, 0]
    base = owner.perm or tuple(range(len(shape)))
    new_type = TensorType(ttype.element_type, [shape[p] for p in perm])
    stored = tuple(base[p] for p in perm)  # the stored data's dims, in the result's order
    # one transposed weight per weight, however many ops read it that way (a weight shared
    # by every layer is stored and placed once), reused where it is defined before the op
    block = op.parent_block()
    for earlier in rewriter.transposed.get(owner, ()):
        if (earlier.parent_block() is block and block is not None and earlier.perm == stored
                and earlier.result.type == new_type and earlier.is_before_in_block(op)):
            return earlier.result
    new = ParamOp(owner.param_name.data, new_type, permutation=list(stored))
    new.result.name_hint = f"{value.name_hint or 'w'}_t"
    rewriter.insert_op(new, InsertPoint.before(op))
    rewriter.transposed.setdefault(owner, []).append(new)
    return new.result


def device_transpose(op: AtenOp, rewriter: LegalizeRewriter, x: SSAValue) -> SSAValue:
    """x [..., M, N] -> [..., N, M]: identity_N @ x^T per batch, a batch matmul whose rhs the
    PT reads as stored (pt.matmul_nt), so the transpose restickifies through the PT (design
    note 37). Exact: each output element is one product by 1 accumulated in fp32."""
    shape = _shape(x)
    if _element_name(x) in INT_ELEMENTS:  # through f32: exact below 2^24 (note 28c)
        as_float = _emit(rewriter, op, CastOp(x, TensorType(Float32Type(), shape)))
        y = device_transpose(op, rewriter, as_float)
        return _emit(rewriter, op, CastOp(y, with_shape(x, _shape(y))))
    if _element_name(x) not in FLOAT_ELEMENTS:
        raise Unsupported(f"a transpose of the innermost dim of a {_element_name(x)} tensor "
                          "(float and integer tensors are transposed on the device)")
    n, m = shape[-1], shape[-2]
    per_stick = STICK_BYTES // ELEMENT_BYTES[_element_name(x)]
    chunk = 2 * per_stick
    if m > chunk and m % chunk == 0:
        # long columns: transpose row blocks of two output sticks as batches of their own,
        # so the work splits over cores by blocks rather than every core reading all of x;
        # the blocks' rows interleave back for free ([.., N, M/c, c] is [.., N, M])
        lead = shape[:-2]
        blocks = _emit(rewriter, op, ReshapeOp(x, with_shape(x, [*lead, m // chunk, chunk, n])))
        t = device_transpose(op, rewriter, blocks)  # [.., M/c, N, c]
        rank = len(lead) + 3
        swap = [*range(rank - 3), rank - 2, rank - 3, rank - 1]
        t = permute_rows(op, rewriter, t, swap)
        y = _emit(rewriter, op, ReshapeOp(t, with_shape(t, [*lead, n, m])))
        rewriter.device_transposes[y.owner] = x  # type: ignore[index]
        return y
    lead = shape[:-2]
    check_resident_rhs(x, "a transpose of the innermost dim", rewriter.target)
    eye = _identity(op, rewriter, n, x.type.element_type)  # type: ignore[attr-defined]
    if lead:
        eye = _emit(rewriter, op, ReshapeOp(eye, with_shape(eye, [1] * len(lead) + [n, n])))
    if math.prod(lead) > 1:
        eye = _emit(rewriter, op, ExpandRowsOp(eye, with_shape(eye, [*lead, n, n])))
    out = with_shape(x, [*lead, n, shape[-2]])
    y = exact_move(op, rewriter, x,
                   lambda value: _emit(rewriter, op, BatchMatmulOp(eye, value, True, out)),
                   np.eye(min(n, 2)))  # zeros off the diagonal when n > 1
    rewriter.device_transposes[y.owner] = x  # type: ignore[index]
    return y


def _identity(op: AtenOp, rewriter: LegalizeRewriter, n: int, element_type: Attribute
              ) -> SSAValue:
    """The n x n identity of `element_type` a device transpose reads: the one an earlier
    transpose of the same block made, else a new constant before `op`."""
    key = (n, str(element_type))
    block = op.parent_block()
    for earlier in rewriter.identities.get(key, ()):
        if block is not None and earlier.parent_block() is block and earlier.is_before_in_block(op):
            return earlier.result
    eye = _constant(op, rewriter, f"{_fx_name(op)}.identity", np.eye(n), element_type)
    assert isinstance(eye.owner, ParamOp)
    rewriter.identities.setdefault(key, []).append(eye.owner)
    return eye


def check_resident_rhs(rhs: SSAValue, what: str, target: SpyreTarget) -> None:
    """A batch matmul keeps one batch of its rhs in LX while it walks the lhs rows; refuse
    one whose block takes more than three quarters of a core's usable LX."""
    shape = _shape(rhs)
    size = ELEMENT_BYTES[_element_name(rhs)]
    block = shape[-2] * stick_padded(shape[-1] * size)
    budget = target.lx_usable_bytes * 3 // 4
    if block > budget:
        raise Unsupported(
            f"{what} of a {shape} tensor: its [{shape[-2]}, {shape[-1]}] block ({block} B with "
            f"its rows padded to sticks) stays in LX per batch, more than {budget} B "
            "(a transpose tiled along both dims is not lowered yet)")


def transpose_source(rewriter: LegalizeRewriter, value: SSAValue) -> SSAValue | None:
    """x when `value` is the device transpose of x, used only here, possibly regrouped in
    its leading dims by reshapes (`q @ k.transpose(-1, -2)` reaches bmm as a view of the
    transpose); the transpose and reshapes are erased and x is regrouped the same way."""
    chain: list[ReshapeOp] = []
    while isinstance(value.owner, ReshapeOp) and value.has_one_use() \
            and _shape(value)[-2:] == _shape(value.owner.input)[-2:]:
        chain.append(value.owner)
        value = value.owner.input
    owner = value.owner
    if not isinstance(owner, Operation) or owner not in rewriter.device_transposes \
            or not value.has_one_use():
        return None
    source = rewriter.device_transposes[owner]
    target = _shape(chain[0].result) if chain else _shape(value)
    shape = target[:-2] + target[-1:] + target[-2:-1]
    if _shape(source) != shape:
        regroup = ReshapeOp(source, with_shape(source, shape))
        rewriter.insert_op(regroup, InsertPoint.after(source.owner) if isinstance(
            source.owner, Operation) else InsertPoint.at_start(source.owner))
        source = regroup.result
    return source  # the transpose and its reshapes are erased once unused


def erase_dead_moves(module: ModuleOp) -> None:
    """Erase the device transposes a matmul read as stored (`transpose_source`) and the
    identities, reshapes and broadcasts that fed only them, with the SFU ops that carried
    its special values (`exact_move`), users first (and the cast of a 16-bit constant held
    in f32 that attention reads in f32, `attention._wide_constant`)."""
    dead_kinds = (BatchMatmulOp, ReshapeOp, ExpandRowsOp, PermuteRowsOp, CastOp,
                  *BINARY_OPS.values(), *SCALAR_OPS.values())
    for op in reversed(list(module.walk())):
        if isinstance(op, dead_kinds) and not op.results[0].uses and op.parent is not None:
            op.detach()
            op.erase()


def column_to_row(op: AtenOp, rewriter: LegalizeRewriter, y: SSAValue,
                  like: SSAValue) -> SSAValue:
    """A reduction's [..., R, 1] column as the [..., R] row of `like`'s shape: a device
    transpose to [..., 1, R] and a free reshape."""
    row = device_transpose(op, rewriter, y)
    return _emit(rewriter, op, ReshapeOp(row, with_shape(row, _shape(like))))


def _permutation(op: AtenOp, rank: int) -> list[int]:
    """The full dim permutation of a permute / transpose / t node (result dim i = operand
    dim perm[i])."""
    if op.target.data == "aten.permute.default":
        dims = arg(op, "dims")
        return [d.value.data % rank for d in dims.data]  # type: ignore[union-attr]
    perm = list(range(rank))
    if op.target.data == "aten.transpose.int" and rank:
        d0, d1 = arg(op, "dim0") % rank, arg(op, "dim1") % rank  # type: ignore[operator]
        perm[d0], perm[d1] = perm[d1], perm[d0]
    elif rank == 2:  # aten.t
        perm = [1, 0]
    return perm


def _select_transpose(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """Weights: folded into the weight. Activations: a row permutation when the innermost
    dim stays last; a reshape when only size-1 dims move (no byte changes place)."""
    src = op.operands[0]
    shape = _shape(src)
    perm = _permutation(op, len(shape))
    if perm == list(range(len(shape))):
        return src
    if isinstance(src.owner, ParamOp):
        return transposed_weight(op, src, rewriter, perm)
    return permute(op, rewriter, src, perm)


def permute(op: AtenOp, rewriter: LegalizeRewriter, src: SSAValue, perm: list[int]) -> SSAValue:
    """Any permutation of an activation's dims (result dim i = operand dim perm[i]): a row
    permutation when the innermost dim stays last, else one device transpose between two."""
    shape = _shape(src)
    if perm[-1] == len(shape) - 1:
        return permute_rows(op, rewriter, src, perm)
    # the innermost dim moves: bring the dim that becomes innermost next to it (rows), swap
    # the two on the device, then put the leading dims in their final order (rows)
    rank = len(shape)
    last, inner = rank - 1, perm[-1]
    first = [d for d in range(rank - 1) if d != inner] + [inner, last]
    x = permute_rows(op, rewriter, src, first)
    if _shape(x)[-2:] != [1, 1]:  # two size-1 dims swap without moving a byte
        x = device_transpose(op, rewriter, x)
    order = [*first[:-2], last, inner]  # source dims in the order they now stand
    return permute_rows(op, rewriter, x, [order.index(p) for p in perm])


def permute_rows(op: AtenOp, rewriter: LegalizeRewriter, src: SSAValue,
                 perm: list[int]) -> SSAValue:
    """A permutation that keeps the innermost dim last: a reshape when only size-1 dims move
    (no byte changes place), otherwise spyre.permute_rows."""
    shape = _shape(src)
    if perm == list(range(len(shape))):
        return src
    out = with_shape(src, [shape[p] for p in perm])
    if _nontrivial(perm, shape) == sorted(_nontrivial(perm, shape)):
        return _emit(rewriter, op, ReshapeOp(src, out))
    return _emit(rewriter, op, PermuteRowsOp(src, perm, out))


def _nontrivial(perm: list[int], shape: list[int]) -> list[int]:
    """The permutation restricted to the dims of extent > 1: if it is sorted, the permute
    only moves size-1 dims and every byte keeps its place."""
    return [p for p in perm if shape[p] != 1]


def _select_reshape(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    x = op.operands[0]
    src, out = _shape(x), _shape(op.results[0])
    element = x.type.element_type  # type: ignore[attr-defined]
    if not is_free_reshape(src, out, element):
        return restickify_reshape(op, rewriter, x, out)
    if src == out:
        return x
    # the operand's element type: a boolean is an f32 predicate on the device
    return _emit(rewriter, op, ReshapeOp(x, with_shape(x, out)))


def restickify_reshape(op: AtenOp, rewriter: LegalizeRewriter, x: SSAValue,
                       out: list[int]) -> SSAValue:
    """A reshape that splits the innermost dim ([..., A*B] -> [..., A, B]: heads narrower
    than a stick, `position_ids[..., None]`) or merges it with the dim before ([..., A, B]
    -> [..., A*B]), through device transposes: the innermost dim goes to the rows, regroups
    there for free and comes back (design note 37). Any other reshape that changes the
    innermost dim is a merge and a split (`_merge_then_split`, design note 74)."""
    src = _shape(x)

    def view(value: SSAValue, shape: list[int]) -> SSAValue:
        if _shape(value) == shape:
            return value
        return _emit(rewriter, op, ReshapeOp(value, with_shape(value, shape)))

    if len(out) >= 2 and math.prod(out[-2:]) == src[-1]:  # a split of the innermost dim
        rows, (a, b) = math.prod(src[:-1]), out[-2:]
        if b == 1:  # [R, 1, N] -> [R, N, 1]: one transpose per row
            return view(device_transpose(op, rewriter, view(x, [rows, 1, a])), out)
        t = view(device_transpose(op, rewriter, view(x, [rows, a * b])), [a, b, rows])
        t = device_transpose(op, rewriter, t)  # [A, R, B]
        return view(permute_rows(op, rewriter, t, [1, 0, 2]), out)
    if len(src) >= 2 and math.prod(src[-2:]) == out[-1]:  # a merge into the innermost dim
        rows, (a, b) = math.prod(src[:-2]), src[-2:]
        if b == 1:  # [R, N, 1] -> [R, 1, N]
            return view(device_transpose(op, rewriter, view(x, [rows, a, 1])), out)
        t = permute_rows(op, rewriter, view(x, [rows, a, b]), [1, 0, 2])  # [A, R, B]
        t = view(device_transpose(op, rewriter, t), [a * b, rows])
        return view(device_transpose(op, rewriter, t), out)
    return _merge_then_split(op, rewriter, x, out)


def _merge_then_split(op: AtenOp, rewriter: LegalizeRewriter, x: SSAValue,
                      out: list[int]) -> SSAValue:
    """Any other reshape (`[.., 64, 1, 1] -> [.., 64]`, `[.., 16, 32] -> [.., 32, 16]`):
    the shortest trailing dims of the operand and of the result with one product P are
    the only ones that change; the operand's merge into one innermost dim of P (a merge,
    above) and that splits into the result's (a split, above). Each step that keeps the
    bytes in place (`is_free_reshape`) is a free view. Exact: only moves."""
    src = _shape(x)
    element = x.type.element_type  # type: ignore[attr-defined]
    i = _changed_from(src, out)
    rows, size = math.prod(src[:i]), math.prod(src[i:])

    def reshape(value: SSAValue, shape: list[int]) -> SSAValue:
        if _shape(value) == shape:
            return value
        if is_free_reshape(_shape(value), shape, element):
            return _emit(rewriter, op, ReshapeOp(value, with_shape(value, shape)))
        return restickify_reshape(op, rewriter, value, shape)

    merged = reshape(reshape(x, [rows, size // src[-1], src[-1]]), [rows, size])
    return reshape(reshape(merged, [rows, size // out[-1], out[-1]]), out)


def _changed_from(src: list[int], out: list[int]) -> int:
    """The largest i with prod(src[i:]) also the product of trailing dims of `out`."""
    trailing = {math.prod(out[j:]) for j in range(len(out))}
    return next(i for i in range(len(src) - 1, -1, -1) if math.prod(src[i:]) in trailing)


SELECTORS: dict[str, Selector] = {
    "aten.permute.default": _select_transpose,
    "aten.t.default": _select_transpose,
    "aten.transpose.int": _select_transpose,
    "aten.view.default": _select_reshape,
    "aten._unsafe_view.default": _select_reshape,
    "aten.reshape.default": _select_reshape,
    "aten.unsqueeze.default": _select_reshape,
    "aten.squeeze.dim": _select_reshape,
    "aten.squeeze.dims": _select_reshape,
    "aten.squeeze.default": _select_reshape,
    "aten.flatten.using_ints": _select_reshape,
}
