"""spyre-legalize patterns for attention: scaled dot-product attention becomes
`spyre.attention` (scale, causal, an additive mask of any shape that broadcasts to the
scores; grouped-query attention by the operand shapes), and so does eager attention
written out as bmm, scale, mask add, softmax and bmm (matched by `eager_attention`). A
boolean mask that is a predicate becomes an additive one, made once per predicate and
query type in a run and shared by the layers.
"""

from __future__ import annotations

import math

from xdsl.ir import SSAValue

from spyrec.dialects.spyre import AtenOp, AttentionOp, CastOp, ParamOp, ReshapeOp
from spyrec.passes.graph.eager_attention import EagerAttention
from spyrec.passes.graph.graph_build import binary_op as _binary_op
from spyrec.passes.graph.graph_build import element as _element_name
from spyrec.passes.graph.graph_build import emit as _emit
from spyrec.passes.graph.graph_build import scalar_op as _scalar_op
from spyrec.passes.graph.graph_build import shape as _shape
from spyrec.passes.graph.graph_build import through
from spyrec.passes.graph.legalize.base import (
    FLOAT_ELEMENTS,
    LegalizeRewriter,
    Selector,
    Unsupported,
    arg,
    broadcast_rows,
    operand,
    with_shape,
)
from spyrec.passes.graph.legalize.predicates import is_predicate
from spyrec.passes.graph.legalize.reductions import reduce_last


def _select_attention(op: AtenOp, rewriter: LegalizeRewriter,
                      finite_mask: bool = False) -> SSAValue:
    """aten.scaled_dot_product_attention -> spyre.attention (scale, causal, GQA by shapes).
    A mask computed at run time in f32 can hold a row of -inf: the kernel then gives that
    query zeros, as SDPA does (`zero_unseen`); a constant one with such a row is refused
    (`_attention_mask`), and a 16-bit one cannot hold -inf. `finite_mask`: the mask is
    known finite (made from a predicate), so no row can be -inf."""
    q, k, v = (operand(op, n) for n in ("query", "key", "value"))
    assert q is not None and k is not None and v is not None
    for value in (q, k, v, op.results[0]):
        if _element_name(value) not in FLOAT_ELEMENTS:
            raise Unsupported(f"element type {_element_name(value)} (only f16, bf16, f32 "
                              "so far)")
    dropout = float(arg(op, "dropout_p", 0.0))  # type: ignore[arg-type]
    if dropout > 0:
        raise Unsupported(f"dropout_p={dropout} (attention dropout is training-time only; "
                          "export the model in eval mode with dropout_p=0)")
    qs, ks, vs = _shape(q), _shape(k), _shape(v)
    if not len(qs) == len(ks) == len(vs) >= 2:
        raise Unsupported(f"q {qs}, k {ks}, v {vs} (q, k and v must have one rank >= 2)")
    hq, hk = AttentionOp.heads(qs), AttentionOp.heads(ks)
    if qs[:-3] != ks[:-3] or ks[:-1] != vs[:-1] or hq % hk:
        raise Unsupported(f"q {qs}, k {ks}, v {vs} (batch dims must agree, k and v must "
                          "have the same heads and rows, query heads a multiple of key "
                          "heads)")
    if hq != hk and hk != 1 and not arg(op, "enable_gqa", False):
        # one key/value head broadcasts to every query head (Falcon's multi-query
        # attention): the same as GQA with one group; eager refuses any other count
        raise Unsupported(f"{hq} query heads and {hk} key/value heads without enable_gqa "
                          "(pass enable_gqa=True, or repeat the key/value heads)")
    causal = bool(arg(op, "is_causal", False))
    mask = operand(op, "attn_mask")
    zero_unseen = False
    if mask is not None:
        mask = _attention_mask(op, rewriter, mask, q, ks[-2])
        zero_unseen = not finite_mask and _element_name(mask) == "f32" and not isinstance(
            through(mask, (ReshapeOp, CastOp)).owner, ParamOp)
    scale = arg(op, "scale")
    if scale is None:
        scale = 1.0 / math.sqrt(qs[-1])
    return _emit(rewriter, op, AttentionOp(q, k, v, mask, float(scale), causal,  # type: ignore[arg-type]
                                           op.results[0].type, zero_unseen=zero_unseen))


def _wide_constant(value: SSAValue) -> SSAValue:
    """The f32 constant behind a 16-bit constant with infinities or NaN (the frontend keeps
    those in f32 and casts them, since DL16 cannot hold them), else `value` itself."""
    owner = through(value, (ReshapeOp,)).owner  # the unsqueezes of a [L, S] mask
    if isinstance(owner, CastOp) and isinstance(owner.input.owner, ParamOp) \
            and _element_name(owner.input) == "f32":
        return owner.input
    return value


def _has_empty_rows(mask: SSAValue) -> bool:
    """Is `mask` (through reshapes) a constant with a row of -inf (the frontend marks it)?"""
    owner = through(mask, (ReshapeOp, CastOp)).owner
    return isinstance(owner, ParamOp) and "spyre.empty_rows" in owner.attributes


def _attention_mask(op: AtenOp, rewriter: LegalizeRewriter, mask: SSAValue, q: SSAValue,
                    keys: int, sdpa: bool = True) -> SSAValue:
    """An additive mask broadcast to the scores [..., H, L, S]: one whose leading dims are
    all 1 becomes [L, S] by a free reshape; any other broadcastable shape ([B, H, L, S],
    [1, H, L, S], [B, 1, L, S], [B, 1, 1, S], ...) is kept, and the attention kernel reads
    the block of each (batch, head) through its row map, never materializing the broadcast.
    A 16-bit mask with -inf entries is read in f32, where -inf is exact (the scores are f32
    in the kernel), and an f32 mask for 16-bit queries as it is (a mask the frontend
    computes in f32 because it holds -inf, `frontend/infinities.py`, or one the program
    passes so). `sdpa`: the mask of F.scaled_dot_product_attention, which returns zeros
    for a query whose keys are all masked, where softmax (the eager chain) returns NaN."""
    shape, qs = _shape(mask), _shape(q)
    scores = [*qs[:-1], keys]
    if _element_name(mask) not in FLOAT_ELEMENTS:
        raise Unsupported(
            f"a {_element_name(mask)} attn_mask (a boolean mask is lowered when it is an "
            "input or a comparison computed in the program; pass an additive float mask: 0 "
            "where allowed, a large finite negative value such as -30000 where not)")
    if not AttentionOp.mask_broadcasts(shape, qs, keys):
        raise Unsupported(
            f"attn_mask of shape {shape} (it must broadcast to the scores {scores}: S "
            "columns, every other dim 1 or the scores' own)")
    if _element_name(mask) not in (_element_name(q), "f32"):
        raise Unsupported(f"a {_element_name(mask)} attn_mask for {_element_name(q)} "
                          "queries (the mask must have the query element type, or f32)")
    mask = _wide_constant(mask)
    if sdpa and _has_empty_rows(mask):
        raise Unsupported(
            "an attn_mask with rows that are -inf throughout (F.scaled_dot_product_attention "
            "returns zeros for those queries; the Spyre attention kernel would return NaN): "
            "leave at least one key unmasked in every row, or mask with a large finite "
            "negative value")
    if shape == scores[-2:] or len(shape) < 2 or shape[-2] != scores[-2] \
            or any(d != 1 for d in shape[:-2]):
        return mask  # [L, S] already, or read through the kernel's mask origin
    return _emit(rewriter, op, ReshapeOp(mask, with_shape(mask, scores[-2:])))


def select_eager_attention(match: EagerAttention, rewriter: LegalizeRewriter) -> None:
    """A matched eager attention block -> spyre.attention, replacing its output."""
    q, k = match.query, match.key
    mask = match.mask
    if mask is not None:
        mask = _attention_mask(match.anchor, rewriter, mask, q, _shape(k)[-2], sdpa=False)
    out = _shape(q)[:-1] + _shape(match.value)[-1:]
    y = _emit(rewriter, match.anchor, AttentionOp(q, k, match.value, mask, match.scale, False,
                                                  with_shape(q, out)))
    if _shape(match.output) != out:
        y = _emit(rewriter, match.anchor, ReshapeOp(y, match.output.type))
    match.output.replace_all_uses_with(y)


def _select_attention_any_mask(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """SDPA whose boolean mask is a predicate: the mask becomes additive (p * 30000 - 30000,
    exactly 0 or -30000) in the query's type before the usual selection. A query whose keys
    are all masked gets zeros, as SDPA gives (the softmax of a row of -30000 would average
    every value): the output is multiplied by max(p) over the keys, 1 for a query that sees
    one key and 0 for one that sees none (exact either way)."""
    mask, query = operand(op, "attn_mask"), operand(op, "query")
    if mask is not None and query is not None and is_predicate(mask):
        sees = reduce_last(op, rewriter, "max", mask)  # [..., L, 1]: 1 if a key is seen
        y = _select_attention_with_predicate(op, rewriter, mask, query)
        sees = broadcast_rows(op, rewriter, sees, _shape(y), column=True)
        if _element_name(sees) != _element_name(y):  # cast where the product reads it
            sees = _emit(rewriter, op, CastOp(sees, with_shape(y, _shape(sees))))
        return _binary_op(op, rewriter, "mul", y, sees)
    return _select_attention(op, rewriter)


def _select_attention_with_predicate(op: AtenOp, rewriter: LegalizeRewriter, mask: SSAValue,
                                     query: SSAValue) -> SSAValue:
    """SDPA with the predicate `mask` made additive (see `_select_attention_any_mask`)."""
    # one additive mask per predicate and query type, made at the first layer that reads
    # it and shared by the others (a decoder's layers share their mask)
    key = (mask, _element_name(query))
    additive = rewriter.additive_masks.get(key)
    if additive is None:
        scaled = _scalar_op(op, rewriter, "mul", mask, 30000.0)
        additive = _scalar_op(op, rewriter, "add", scaled, -30000.0)
        if _element_name(query) != "f32":
            additive = _emit(rewriter, op, CastOp(additive, with_shape(query, _shape(mask))))
        rewriter.additive_masks[key] = additive
    names = [n.data for n in op.operand_names.data]  # type: ignore[attr-defined]
    op.operands[names.index("attn_mask")] = additive
    return _select_attention(op, rewriter, finite_mask=True)


SELECTORS: dict[str, Selector] = {
    "aten.scaled_dot_product_attention.default": _select_attention_any_mask,
}
