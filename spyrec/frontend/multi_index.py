"""Indexing by several index tensors, rewritten at import time as indexing by one.

`x[i0, i1]` with index tensors at adjacent dims d..d+k picks, for each position of the
indices' broadcast shape S, the element (row, ...) at (i0, i1, ...) of those dims; PyTorch
puts S where the indexed dims were. Merging the indexed dims into one (a view: x is
contiguous in the graph) and linearising the indices, `flat = ((i0 * n1) + i1) * n2 + ...`
with each index first wrapped into [0, n) (`i + n * (i < 0)`, as negative indices count from
the end), picks the same elements with one index tensor at dim d, which spyre-legalize
lowers as a gather along that dim (`gather_along`). The integer arithmetic is exact (the
device computes integers through f32 below 2^24, and a merged dim is at most the tensor's
element count).

The sequence classifiers of transformers (`GenericForSequenceClassification` with a pad
token) take each row's last real token so: `logits[arange(B), last_non_pad_token]`.
Indices at non-adjacent dims (PyTorch then moves S to the front), boolean masks and `None`
gaps between index tensors are left for op selection to refuse by name; indices that are
all constant (aranges) are left to op selection, which picks the elements they name.
"""

from __future__ import annotations

import math

import torch

from spyrec.frontend.moe import FxEmit

aten = torch.ops.aten

_INT = (torch.int32, torch.int64)


def rewrite_multi_index(graph: torch.fx.Graph) -> int:
    """Rewrite every `aten.index.Tensor` of `graph` indexing adjacent dims by two or more
    integer index tensors (the module docstring); returns how many were rewritten."""
    count = 0
    for node in list(graph.nodes):
        if node.op == "call_function" and node.target is aten.index.Tensor:
            new = _linearised(graph, node)
            if new is not None:
                node.replace_all_uses_with(new)
                graph.erase_node(node)
                count += 1
    return count


def _linearised(graph: torch.fx.Graph, node: torch.fx.Node) -> torch.fx.Node | None:
    x, indices = node.args[0], node.args[1]
    assert isinstance(x, torch.fx.Node) and isinstance(indices, list | tuple)
    at = [d for d, i in enumerate(indices) if i is not None]
    if len(at) < 2 or at != list(range(at[0], at[-1] + 1)):
        return None
    if not any(_reads_placeholder(indices[d]) for d in at):  # type: ignore[arg-type]
        return None  # constant indices: op selection picks the elements (and the frontend
        # reads transformers' mask building from them: `fold.runtime_masks`)
    vals = [indices[d].meta["val"] for d in at]  # type: ignore[union-attr]
    shape = list(x.meta["val"].shape)
    if any(v.dtype not in _INT for v in vals) or not all(isinstance(n, int) for n in shape):
        return None
    first, last = at[0], at[-1]
    sizes = shape[first:last + 1]
    picked = list(torch.broadcast_shapes(*(v.shape for v in vals)))
    if [*shape[:first], *picked, *shape[last + 1:]] != list(node.meta["val"].shape):
        return None  # not the placement the rewrite gives
    emit = FxEmit(graph, node)
    flat: torch.fx.Node | None = None
    for d, size in zip(at, sizes):
        index = indices[d]
        assert isinstance(index, torch.fx.Node)
        index = emit(aten._to_copy.default, index, dtype=torch.int64) \
            if index.meta["val"].dtype != torch.int64 else index
        negative = emit(aten._to_copy.default, emit(aten.lt.Scalar, index, 0),
                        dtype=torch.int64)
        wrapped = emit(aten.add.Tensor, index, emit(aten.mul.Scalar, negative, size))
        flat = wrapped if flat is None else emit(
            aten.add.Tensor, emit(aten.mul.Scalar, flat, size), wrapped)
    merged = emit(aten.view.default, x,
                  [*shape[:first], math.prod(sizes), *shape[last + 1:]])
    return emit(aten.index.Tensor, merged, [*([None] * first), flat])


def _reads_placeholder(node: torch.fx.Node) -> bool:
    """Does `node` depend on a placeholder (an input, parameter or buffer)?"""
    seen: set[torch.fx.Node] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if n.op == "placeholder":
            return True
        if n not in seen:
            seen.add(n)
            stack.extend(n.all_input_nodes)
    return False
