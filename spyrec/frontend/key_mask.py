"""The host's key mask: bidirectional attention over a symbolic length (design note 81).

A program with a symbolic sequence length runs at its upper bound U with every input
zero-padded (note 32). An encoder given `input_ids` alone attends every key, the padded
ones included, and a softmax over the sequence sums their exponentials. The padding proof
(`spyrec.frontend.symbolic`) records those nodes (`_Checker.keyed`) instead of refusing
them, and this module rewrites the program before it is specialised at U:

- it takes one more input per symbol, the *key mask*: the host makes it per call, ones of
  the symbol's length (no user value), and pads it with zeros like every input, so it is
  1 exactly at the real positions of that call (`spyrec.target.container.TensorBinding.made`);
- an attention without a mask gets `mask != 0` as its boolean mask, viewed [1, ..., 1, U]:
  False at every padded key for every query; one with a boolean mask gets that mask `&`
  it, one with an additive mask -inf where it is False (`where`, exact);
- a softmax, log_softmax, logsumexp, amax or max over the symbolic dim reads its operand
  with -inf at the padded positions, in f32 (where -inf is exact on the device; a 16-bit
  operand is cast up, a 16-bit result back); static positions a cat put after the padding
  (attention sinks, `symbolic.TAIL`) stay as they are.

A padded key's weight is then exp(-inf - max) = 0 exactly, so each real row's softmax is
the one eager computes at that length; the proof checks that every row still sees a real
key at the lower bound (`_Checker.mask_keys`), so no row is all -inf.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch.fx.graph import CodeGen

aten = torch.ops.aten


def made_name(symbol: str) -> str:
    """The program input of `symbol`'s key mask (`ids.dim1` -> `ids_dim1_keys`)."""
    return symbol.replace(".", "_") + "_keys"


def _real(graph: torch.fx.Graph, made: torch.fx.Node, rank: int, d: int) -> torch.fx.Node:
    """`made != 0` (True at the real positions) viewed with its positions along dim `d` of
    a rank-`rank` value, every other dim 1."""
    out = graph.call_function(aten.ne.Scalar, (made, 0))
    for _ in range(d):
        out = graph.call_function(aten.unsqueeze.default, (out, 0))
    for _ in range(rank - 1 - d):
        out = graph.call_function(aten.unsqueeze.default, (out, -1))
    return out


def _mask_attention(graph: torch.fx.Graph, node: torch.fx.Node, made: torch.fx.Node) -> None:
    """SDPA `node` with its padded keys masked for every query."""
    rank = node.args[0].meta["val"].dim()  # type: ignore[union-attr]
    real = _real(graph, made, rank, rank - 1)
    mask = node.kwargs.get("attn_mask", node.args[3] if len(node.args) > 3 else None)
    if mask is None:
        masked = real
    elif mask.meta["val"].dtype == torch.bool:  # type: ignore[union-attr]
        masked = graph.call_function(aten.bitwise_and.Tensor, (mask, real))
    else:
        masked = graph.call_function(aten.where.ScalarOther, (real, mask, float("-inf")))
    if len(node.args) > 3:
        node.update_arg(3, masked)
    else:
        node.update_kwarg("attn_mask", masked)


def _mask_reduction(graph: torch.fx.Graph, node: torch.fx.Node, made: torch.fx.Node,
                    d: int, tail: int) -> None:
    """softmax / log_softmax / logsumexp / amax / max.dim `node` over dim `d` with -inf at
    the padded positions, computed in f32 and cast to the element type it had (max.dim's
    values; its indices stay as they are). The last `tail` positions along `d` (static ones
    after the padding) are left as they are: the masked positions are a cat's first piece."""
    x = node.args[0]
    assert isinstance(x, torch.fx.Node)
    val, out = x.meta["val"], node.meta["val"]
    dtype = (out[0] if isinstance(out, (tuple, list)) else out).dtype  # (max.dim: values)
    scores = x if val.dtype == torch.float32 else graph.call_function(
        aten._to_copy.default, (x,), {"dtype": torch.float32})
    head = graph.call_function(aten.slice.Tensor, (scores, d, 0, -tail)) if tail else scores
    masked = graph.call_function(aten.where.ScalarOther,
                                 (_real(graph, made, val.dim(), d), head, float("-inf")))
    if tail:
        after = graph.call_function(aten.slice.Tensor, (scores, d, -tail))
        masked = graph.call_function(aten.cat.default, ([masked, after], d))
    node.update_arg(0, masked)
    if node.target in (aten._softmax.default, aten._log_softmax.default):
        node.update_arg(2, False)  # f32 in, f32 out
    elif node.target in (aten.softmax.int, aten.log_softmax.int) and len(node.args) > 2:
        node.update_arg(2, None)
    if dtype == torch.float32:
        return
    results = [u for u in node.users if u.args[1] == 0] \
        if node.target is aten.max.dim else [node]  # max.dim's values, read by getitem
    for result in results:
        with graph.inserting_after(result):
            back = graph.call_function(aten._to_copy.default, (result,), {"dtype": dtype})
        result.replace_all_uses_with(
            back, delete_user_cb=lambda user, back=back: user is not back)


def add_key_masks(module: torch.fx.GraphModule,
                  keyed: Mapping[str, tuple[str, int, int]]) -> list[str]:
    """Rewrite `module` (an exported program's `module()`) in place: each node named in
    `keyed` (node name -> its symbol's name, the symbolic dim of its keys and the static
    positions after their padding, `_real`'s `tail`) reads the
    symbol's key mask, a new input after the user's. Returns the symbols whose masks it
    takes, in input order; `module` then takes its inputs flat, the masks last."""
    graph = module.graph
    graph._codegen = CodeGen()  # flat positional inputs, the masks appended
    module._forward_pre_hooks.clear()  # the unlifted module's check of the user's inputs
    last = [n for n in graph.nodes if n.op == "placeholder"][-1]
    masks: dict[str, torch.fx.Node] = {}
    nodes = {n.name: n for n in graph.nodes}
    for name, (symbol, d, tail) in keyed.items():
        if symbol not in masks:
            with graph.inserting_after(last):
                masks[symbol] = last = graph.placeholder(made_name(symbol))
        node = nodes[name]
        with graph.inserting_before(node):
            if node.target is aten.scaled_dot_product_attention.default:
                _mask_attention(graph, node, masks[symbol])
            else:
                _mask_reduction(graph, node, masks[symbol], d, tail)
    module.recompile()
    return list(masks)
