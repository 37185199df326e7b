"""Recognise eager (unfused) attention in imported ATen ops, for spyre-legalize.

Hugging Face's `attn_implementation="eager"` computes attention from its parts; after
export and decomposition to core ATen a head-batched block reads

    %s3 = aten.bmm(view(q), view(expand(permute(k, [0, 1, 3, 2]))))   // [B*H, L, S]
    %s  = aten.mul(view(%s3), scale)          // or aten.div by a number, or absent
    %m  = aten.add(%s, %mask)                 // optional additive mask, broadcast to %s
                                              // (16-bit %s possibly cast to an f32 mask's type)
    %p  = aten.softmax(%m, dim=-1)            // possibly in f32, then _to_copy back
    %o3 = aten.bmm(view(expand(clone(%p))), view(v))                  // [B*H, L, Ev]
    %o  = aten.view(%o3)                      // [B, H, L, Ev]

which is exactly `softmax(q k^T * scale + mask) v`, so it becomes the `spyre.attention` op
SDPA becomes. The match is strict: softmax over the key dim, the key transposed in its last
two dims only, a constant scale applied after the product, the mask added after the scale
and broadcastable as SDPA's ([L, S] with leading dims of 1), no value in the chain used
elsewhere. Anything else is left alone, and op selection reports the `bmm` as unsupported.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import FloatAttr, IntegerAttr
from xdsl.ir import SSAValue

from spyrec.dialects.spyre import AtenOp, AttentionOp
from spyrec.passes.graph.graph_build import element as _element
from spyrec.passes.graph.graph_build import shape as _shape

FLOAT_ELEMENTS = ("f16", "bf16", "f32")

# ops that keep every element and the last two dims: the batch dims of a bmm operand are a
# reshape of the [..., H] dims of the tensor they view
_VIEWS = {"aten.view.default", "aten._unsafe_view.default", "aten.reshape.default",
          "aten.clone.default", "aten.contiguous.default", "aten.alias.default",
          "aten.expand.default"}
_CASTS = {"aten._to_copy.default", "aten.to.dtype"}
_SOFTMAX = {"aten.softmax.int", "aten._softmax.default"}
_SCALES = {"aten.mul.Tensor": False, "aten.mul.Scalar": False,
           "aten.div.Tensor": True, "aten.div.Scalar": True}


@dataclass
class EagerAttention:
    """A matched eager attention block: `output` is `softmax(q k^T * scale + mask) v`."""

    query: SSAValue
    key: SSAValue
    value: SSAValue
    mask: SSAValue | None
    scale: float
    output: SSAValue
    anchor: AtenOp
    """The `bmm` of the probabilities and the values (insertion point and provenance)."""


def _aten(value: SSAValue, targets: set[str] | dict[str, bool]) -> AtenOp | None:
    owner = value.owner
    if isinstance(owner, AtenOp) and owner.target.data in targets:
        return owner
    return None


def _number(op: AtenOp, name: str) -> float | None:
    attr = op.args.data.get(name)
    if isinstance(attr, (IntegerAttr, FloatAttr)):
        return float(attr.value.data)
    return None


def _is_view(op: AtenOp) -> bool:
    """A data-preserving op of `_VIEWS` that keeps the last two dims (an expand only when it
    broadcasts nothing)."""
    src, out = _shape(op.operands[0]), _shape(op.results[0])
    if op.target.data == "aten.expand.default" and src != out:
        return False
    return len(src) >= 2 and len(out) >= 2 and src[-2:] == out[-2:]


def _through_views(value: SSAValue, interior: bool = False) -> SSAValue:
    """The tensor `value` views, following `_VIEWS` backwards. Inside the matched chain
    (`interior`), only values of one use are followed: the chain is erased after the match."""
    while (op := _aten(value, _VIEWS)) is not None and _is_view(op):
        if interior and not value.has_one_use():
            break
        value = op.operands[0]
    return value


def _operand_source(value: SSAValue, leading: list[int]) -> SSAValue | None:
    """The farthest tensor `value` views (through `_VIEWS`) whose leading dims are
    `leading` (the [B, H] of the scores): q, k^T or v before the bmm flattened its heads.
    Not beyond it: GQA's repeat (a broadcasting expand, then a view) stays in front."""
    found = value if _shape(value)[:-2] == leading else None
    while (op := _aten(value, _VIEWS)) is not None and _is_view(op):
        value = op.operands[0]
        if _shape(value)[:-2] == leading:
            found = value
    return found


def _through_casts(value: SSAValue) -> SSAValue:
    """Float-to-float casts inside the chain (softmax in f32 for f16 scores, and back)."""
    while (op := _aten(value, _CASTS)) is not None and value.has_one_use():
        if _element(op.operands[0]) not in FLOAT_ELEMENTS:
            break
        value = op.operands[0]
    return value


def _scale(op: AtenOp) -> float | None:
    """The constant a scores tensor is multiplied by (`mul` / `div` by a number)."""
    if len(op.operands) != 1 or _aten(op.operands[0], _VIEWS | {"aten.bmm.default"}) is None:
        return None
    number = _number(op, "other")
    if number is None or (number == 0 and _SCALES[op.target.data]):
        return None
    return 1.0 / number if _SCALES[op.target.data] else number


def _mask(mask: SSAValue, scores: list[int], query: SSAValue) -> bool:
    """Is `mask` an additive mask attention takes: float of the query's type or f32,
    broadcast to the scores as added (`scores`) and, read against the query's own leading
    dims, to the same scores ([L, S] after leading dims of 1 always is)?"""
    shape, q = _shape(mask), _shape(query)
    if _element(mask) not in (_element(query), "f32") or len(shape) < 2:
        return False
    if all(d == 1 for d in shape[:-2]):
        return shape[-2:] == scores[-2:]
    return scores == q[:-1] + scores[-1:] and AttentionOp.mask_broadcasts(shape, q, scores[-1])


def match_eager_attention(pv: AtenOp) -> EagerAttention | None:
    """`pv` (an `aten.bmm`) as the last product of an eager attention block, or None."""
    if pv.target.data != "aten.bmm.default":
        return None
    probs = _through_casts(_through_views(pv.operands[0], interior=True))
    softmax = _aten(probs, _SOFTMAX)
    if softmax is None or not probs.has_one_use():
        return None
    rank = len(_shape(probs))
    dim = _number(softmax, "dim")
    if dim is None or int(dim) % rank != rank - 1:
        return None
    scores = _through_casts(softmax.operands[0])
    mask = None
    if (add := _aten(scores, {"aten.add.Tensor"})) is not None and scores.has_one_use():
        if len(add.operands) != 2 or _number(add, "alpha") not in (None, 1.0):
            return None
        out = _shape(add.results[0])
        a, b = add.operands
        a_scores = _shape(a) == out and (_shape(b) != out or _aten(a, _SCALES) is not None)
        scores, mask = (a, b) if a_scores else (b, a)
        if _shape(scores) != out:
            return None
        # 16-bit scores cast up to meet an f32 mask (one holding -inf is computed in f32:
        # `frontend/infinities.py`)
        scores = _through_casts(scores)
    scale = 1.0
    if (mul := _aten(scores, _SCALES)) is not None and scores.has_one_use():
        found = _scale(mul)
        if found is None:
            return None
        scale, scores = found, mul.operands[0]
    qk_value = _through_views(scores, interior=True)
    qk = _aten(qk_value, {"aten.bmm.default"})
    if qk is None or not qk_value.has_one_use():
        return None
    leading = _shape(scores)[:-2]
    query = _operand_source(qk.operands[0], leading)
    transposed = _operand_source(qk.operands[1], leading)
    key = _key_of(transposed) if transposed is not None else None
    value = _operand_source(pv.operands[1], leading)
    if query is None or key is None or value is None:
        return None
    q, k, v = _shape(query), _shape(key), _shape(value)
    if not (len(q) == len(k) == len(v) >= 2 and q[:-2] == k[:-2] == v[:-2]
            and q[-1] == k[-1] and k[-2] == v[-2]):
        return None
    elements = {_element(x) for x in (query, key, value, pv.results[0])}
    if elements != {_element(query)} or _element(query) not in FLOAT_ELEMENTS:
        return None
    if mask is not None and not _mask(mask, _shape(scores), query):
        return None
    output = pv.results[0]
    users = [use.operation for use in output.uses]
    if (len(users) == 1 and isinstance(users[0], AtenOp) and users[0].target.data in _VIEWS
            and _shape(users[0].results[0]) == q[:-1] + v[-1:]):
        output = users[0].results[0]
    return EagerAttention(query, key, value, mask, scale, output, pv)


def _key_of(transposed: SSAValue) -> SSAValue | None:
    """k for k^T: a permute / transpose that swaps the last two dims and nothing else."""
    op = _aten(transposed, {"aten.permute.default", "aten.transpose.int"})
    if op is None:
        return None
    rank = len(_shape(transposed))
    perm = list(range(rank))
    if op.target.data == "aten.permute.default":
        dims = op.args.data.get("dims")
        perm = [d.value.data % rank for d in dims.data]  # type: ignore[union-attr]
    else:
        d0, d1 = _number(op, "dim0"), _number(op, "dim1")
        if d0 is None or d1 is None:
            return None
        i, j = int(d0) % rank, int(d1) % rank
        perm[i], perm[j] = perm[j], perm[i]
    if perm != [*range(rank - 2), rank - 1, rank - 2]:
        return None
    return op.operands[0]
