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

A chain whose permutations move dims of size > 1 and move them back (LongT5's local
attention: an einsum's `unsqueeze(5)`, a permute swapping heads and query rows, a second
one swapping them back, a view) keeps every element's place too; that is checked by
running the chain on the elements' indices (for up to 2^23 elements), and clones
between its steps are part of it.

`collapse_view_chains` rewrites every such node whose input is also one into
`aten.view(root, its shape)`; the nodes left without readers are erased.
"""

from __future__ import annotations

import math

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


# ops a chain may hold: each result is its operand's elements, rearranged or as they are
_CHAIN = {*_RESHAPES, aten.permute.default, aten.clone.default, aten.alias.default}
# the most elements whose order a chain is checked for by evaluating it (an int32 index
# per element: 32 MiB)
_EVALUATED = 1 << 23


def _contiguous_root(root: object) -> bool:
    """Is `root` a node whose value is a dense row-major tensor (so a view of it is one
    torch can evaluate too, as constant folding does)?"""
    value = root.meta.get("val") if isinstance(root, torch.fx.Node) else None
    return isinstance(value, torch.Tensor) and value.is_contiguous()


def _in_chain(node: object) -> bool:
    return isinstance(node, torch.fx.Node) and node.op == "call_function" \
        and node.target in _CHAIN and isinstance(node.args[0], torch.fx.Node) \
        and _static_shape(node) is not None and not (
            node.target is aten.clone.default and node.kwargs.get("memory_format")
            not in (None, torch.contiguous_format))


def _chain(node: torch.fx.Node) -> tuple[list[torch.fx.Node], object]:
    """The `_CHAIN` ops that end in `node`, last first, and the chain's input."""
    chain = [node]
    while _in_chain(chain[-1].args[0]):
        chain.append(chain[-1].args[0])  # type: ignore[arg-type]
    return chain, chain[-1].args[0]


def _evaluated_root(node: torch.fx.Node) -> torch.fx.Node | None:
    """The input of the chain of `_CHAIN` ops that ends in `node` when the whole chain
    keeps every element's place in row-major order, checked by running it on the
    elements' indices (permutations that move dims of size > 1 and move them back: an
    einsum's `unsqueeze` + two permutes), else None."""
    chain, root = _chain(node)
    shape = _static_shape(root) if isinstance(root, torch.fx.Node) else None
    if len(chain) < 2 or shape is None or math.prod(shape) > _EVALUATED \
            or not _contiguous_root(root):
        return None
    index = torch.arange(math.prod(shape), dtype=torch.int32).reshape(shape)
    for step in reversed(chain):
        if step.target is aten.permute.default:
            index = index.permute(step.args[1])  # type: ignore[arg-type]
        else:  # reshapes, clones: the elements in row-major order, in the step's shape
            index = index.reshape(_static_shape(step))  # type: ignore[arg-type]
    flat = index.reshape(-1)
    if not bool(torch.equal(flat, torch.arange(flat.numel(), dtype=torch.int32))):
        return None
    return root  # type: ignore[return-value]


def _row_permutation(node: torch.fx.Node) -> tuple[torch.fx.Node, list[int], list[int]] | None:
    """For a chain of `_CHAIN` ops ending in `node` that, as a whole, splits dims of its
    input and permutes the pieces, keeping the innermost dim last (an einsum's blocked
    values: [B, 1, K, H, D] -> unsqueeze -> two permutes -> [B * H, K, D]; its output:
    [B * H, Q, D] -> view -> permute -> [B, Q, H, D]), the chain's input, the split
    shape and the permutation of it; else None. Found by running the chain as strided
    views of the input (on the meta device): the result's dims of size > 1, ordered by
    stride, must tile the input contiguously. A step that needs a copy ends the permuting
    part: only reshapes may follow it."""
    chain, root = _chain(node)
    shape = _static_shape(root) if isinstance(root, torch.fx.Node) else None
    out = _static_shape(node)
    if len(chain) < 2 or shape is None or out is None or not shape or not out \
            or shape[-1] == 1 or out[-1] == 1 or not _contiguous_root(root):
        return None
    permuted = torch.empty(shape, dtype=torch.int8, device="meta")
    steps = list(reversed(chain))
    moves_stick = False  # does a step, lowered alone, move data into or out of the stick?
    for i, step in enumerate(steps):
        if step.target is aten.permute.default:
            permuted = permuted.permute(step.args[1])  # type: ignore[arg-type]
        else:
            try:
                permuted = permuted.view(_static_shape(step))  # type: ignore[arg-type]
            except RuntimeError:  # a copy: the rest must only reshape
                if any(s.target is aten.permute.default for s in steps[i:]):
                    return None
                break
        moves_stick = moves_stick or not permuted.dim() or permuted.shape[-1] == 1 \
            or permuted.stride()[-1] != 1
    if not moves_stick:
        return None  # op by op it is already the row moves (a decoder's head transpose)
    final = [(n, st) for n, st in zip(permuted.shape, permuted.stride()) if n > 1]
    split = sorted(final, key=lambda d: -d[1])
    expected = 1
    for n, stride in reversed(split):
        if stride != expected:
            return None  # the dims do not tile the input (a broadcast, a gap)
        expected *= n
    permutation = [split.index(d) for d in final]
    if split[-1][0] != shape[-1] or permutation[-1] != len(split) - 1 \
            or permutation == sorted(permutation):
        return None  # the stick dim changes (a transpose), or nothing moves (a view)
    return root, [n for n, _ in split], permutation  # type: ignore[return-value]


def _as_row_permutation(graph: torch.fx.Graph, node: torch.fx.Node, root: torch.fx.Node,
                        squeezed: list[int], permutation: list[int]) -> None:
    """Rewrite `node` as view(clone(permute(view(root, squeezed), permutation)))."""
    value = root.meta["val"]
    with graph.inserting_before(node):
        flat = graph.call_function(aten.view.default, (root, squeezed))
        moved = graph.call_function(aten.permute.default, (flat, permutation))
        copied = graph.call_function(aten.clone.default, (moved,))
    flat.meta = {**node.meta, "val": value.view(squeezed)}
    moved.meta = {**node.meta, "val": flat.meta["val"].permute(permutation)}
    copied.meta = {**node.meta, "val": moved.meta["val"].clone()}
    node.target = aten.view.default
    node.args = (copied, _static_shape(node))
    node.kwargs = {}


def _ends_chain(node: torch.fx.Node) -> bool:
    """No reader of `node` continues its chain (so the whole chain is rewritten once)."""
    return not any(_in_chain(u) and u.args[0] is node for u in node.users)


def collapse_view_chains(graph: torch.fx.Graph) -> int:
    """Rewrite each order-keeping node that reads another one as a view of the chain's
    first input; returns how many nodes were rewritten."""
    rewritten = 0
    for node in list(graph.nodes):
        if _static_shape(node) is None:
            continue
        source = node.args[0] if node.args else None
        if _keeps_order(node) and isinstance(source, torch.fx.Node) and _keeps_order(source):
            root = source
            while _keeps_order(root) and isinstance(root.args[0], torch.fx.Node) \
                    and _static_shape(root) is not None:
                root = root.args[0]
        elif _in_chain(node) and node.target is not aten.clone.default \
                and (evaluated := _evaluated_root(node)) is not None:
            root = evaluated
        elif _in_chain(node) and _ends_chain(node) \
                and (permuted := _row_permutation(node)) is not None:
            root = permuted[0]
            _as_row_permutation(graph, node, *permuted)
            rewritten += 1
            _erase_dead(graph, source, root)
            continue
        else:
            continue
        assert isinstance(source, torch.fx.Node)
        node.target = aten.view.default
        node.args = (root, _static_shape(node))
        node.kwargs = {}
        rewritten += 1
        _erase_dead(graph, source, root)
    return rewritten


def _erase_dead(graph: torch.fx.Graph, source: object, root: torch.fx.Node) -> None:
    """Erase the chain's nodes from `source` up to `root` that are left without readers."""
    while isinstance(source, torch.fx.Node) and source is not root and not source.users \
            and source.op == "call_function":
        parent = source.args[0]
        graph.erase_node(source)
        source = parent
