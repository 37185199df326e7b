"""Chains of views collapse into one view of the chain's first input.

A chain of unsqueezes, squeezes, views and permutations that only move size-1 dims keeps
every element's position in row-major order, so the whole chain is one reshape of the
tensor it starts from. Lowered op by op, the steps can cost far more than their sum:
`x.unsqueeze(-1)` puts each element in its own row (a device transpose per row) and the
permutation after it moves the elements back into the stick dim (another one), when the
chain as a whole keeps the stick dim and is free. transformers' PEGASUS-X local attention
(an einsum of blocked keys) wrote exactly that: [1, 2, 1, 512, 512] -> unsqueeze(5) ->
permute -> permute -> view [2, 512, 512], lowered as a 512 x 512 identity expanded over
1,024 rows (1 GiB) and three transposes, where one free view does (design note 102).

`collapse_view_chains` rewrites every such node whose input is also one into
`aten.view(root, its shape)`; the nodes left without readers are erased.
"""

from __future__ import annotations

import torch
import torch.fx

aten = torch.ops.aten

_RESHAPES = {
    aten.view.default, aten._unsafe_view.default, aten.reshape.default,
    aten.unsqueeze.default, aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default,
    aten.flatten.using_ints,
}


def _static_shape(node: torch.fx.Node) -> list[int] | None:
    value = node.meta.get("val")
    if not isinstance(value, torch.Tensor):
        return None
    shape = list(value.shape)
    return shape if all(isinstance(d, int) for d in shape) else None


def _keeps_order(node: torch.fx.Node) -> bool:
    """Whether `node` is a reshape, or a permutation whose dims of size > 1 stay in order:
    either way every element keeps its place in row-major order."""
    if node.op != "call_function":
        return False
    if node.target in _RESHAPES:
        return True
    if node.target is not aten.permute.default:
        return False
    source = node.args[0]
    shape = _static_shape(source) if isinstance(source, torch.fx.Node) else None
    if shape is None:
        return False
    moved = [d % len(shape) for d in node.args[1] if shape[d % len(shape)] != 1]  # type: ignore[union-attr]
    return moved == sorted(moved)


def collapse_view_chains(graph: torch.fx.Graph) -> int:
    """Rewrite each order-keeping node that reads another one as a view of the chain's
    first input; returns how many nodes were rewritten."""
    rewritten = 0
    for node in list(graph.nodes):
        if not _keeps_order(node) or _static_shape(node) is None:
            continue
        source = node.args[0]
        if not isinstance(source, torch.fx.Node) or not _keeps_order(source):
            continue
        root = source
        while _keeps_order(root) and isinstance(root.args[0], torch.fx.Node) \
                and _static_shape(root) is not None:
            root = root.args[0]
        node.target = aten.view.default
        node.args = (root, _static_shape(node))
        node.kwargs = {}
        rewritten += 1
        while source is not root and not source.users and source.op == "call_function":
            parent = source.args[0]
            graph.erase_node(source)
            if not isinstance(parent, torch.fx.Node):
                break
            source = parent
    return rewritten
