"""Writes into slices of a tensor, rewritten at import time as the concatenations they are.

`t[..., a:b].copy_(x)` and `t[i] = x` reach the decomposed FX graph functionalized: a
`copy(dst, src)` (src broadcast to dst's shape and cast to its dtype) whose result goes
back into the base by `slice_scatter(base, src, dim, start, end)` or
`select_scatter(base, src, dim, index)`. Each scatter is the base with one block along one
dim replaced, so it is rewritten as `cat` of the base's slices before and after the block
and the block itself (the slices of zero length left out), and each `copy` as the expand
and cast it is; spyre-legalize lowers slices and concatenations exactly (moves of whole
elements), so the result is eager's bit for bit. A tensor built from `new_empty` whose
slices are all written (DeepSeek-V3's key states, `key_states[..., :n].copy_(k_nope)`
then `key_states[..., n:].copy_(k_rot)`) reads no element of the empty tensor and the
empty tensor disappears. A `scatter` of one value at run-time indices (DeepSeek-V4's
block bias, `bias.scatter_(-1, idx, 0.0)`) writes the same value at a duplicate index
whichever write comes last, so it is exact as `where(hit, value, base)`, `hit` the places
a `scatter_add` of ones counts at least once (counts of whole numbers: exact in f32); a
boolean base takes the logical op instead. Strided writes (step > 1) and symbolic sizes
are left for op selection to refuse by name. `x[mask] = v` with one `v` for every picked
position is `where(mask, v, x)`.
"""

from __future__ import annotations

import torch

from spyrec.frontend.moe import FxEmit

aten = torch.ops.aten


def rewrite_slice_writes(graph: torch.fx.Graph) -> int:
    """Rewrite every `copy`, `slice_scatter` and `select_scatter` of `graph` with static
    sizes and unit step, and every `scatter` of one value (the module docstring); returns
    how many were rewritten."""
    count = 0
    for node in list(graph.nodes):
        if node.op != "call_function":
            continue
        if node.target == aten.copy.default:
            new = _copy(graph, node)
        elif node.target in (aten.slice_scatter.default, aten.select_scatter.default):
            new = _scatter(graph, node)
        elif node.target == aten.scatter.value:
            new = _scatter_value(graph, node)
        elif node.target == aten.index_put.default:
            new = _masked_put(graph, node)
        else:
            continue
        if new is not None:
            node.replace_all_uses_with(new)
            graph.erase_node(node)
            count += 1
    if count:
        graph.eliminate_dead_code()
    return count


def _static(shape: torch.Size) -> bool:
    return all(isinstance(n, int) for n in shape)


def _copy(graph: torch.fx.Graph, node: torch.fx.Node) -> torch.fx.Node | None:
    """copy(dst, src): src broadcast to dst's shape, in dst's dtype."""
    dst, src = node.args[0], node.args[1]
    assert isinstance(dst, torch.fx.Node) and isinstance(src, torch.fx.Node)
    want, have = dst.meta["val"], src.meta["val"]
    if not (_static(want.shape) and _static(have.shape)):
        return None
    emit = FxEmit(graph, node)
    value = src
    if tuple(have.shape) != tuple(want.shape):
        value = emit(aten.expand.default, value, list(want.shape))
    if have.dtype != want.dtype:
        value = emit(aten._to_copy.default, value, dtype=want.dtype)
    return value


def _scatter(graph: torch.fx.Graph, node: torch.fx.Node) -> torch.fx.Node | None:
    """The base with the block [start, end) of `dim` replaced by src: a cat of the base's
    slices around the block and the block (a selected index is a block of one, src with
    the dim put back)."""
    base, src = node.args[0], node.args[1]
    assert isinstance(base, torch.fx.Node) and isinstance(src, torch.fx.Node)
    shape = base.meta["val"].shape
    if not (_static(shape) and _static(src.meta["val"].shape)) or not shape:
        return None
    select = node.target == aten.select_scatter.default
    names = ("dim", "index") if select else ("dim", "start", "end", "step")
    named = dict(zip(names, node.args[2:])) | {k: v for k, v in node.kwargs.items()
                                                if k in names}
    dim, step = named.get("dim", 0), named.get("step", 1)
    if not isinstance(dim, int) or step != 1:
        return None
    dim %= len(shape)
    if select:
        index = named.get("index")
        if not isinstance(index, int):
            return None
        start = index % shape[dim]
        end = start + 1
    else:
        start, end = named.get("start"), named.get("end")
        if not all(isinstance(v, int | None) for v in (start, end)):
            return None
        start, end, _ = slice(start, end).indices(shape[dim])
        if end <= start:
            return None
    size = shape[dim]
    emit = FxEmit(graph, node)
    block = src
    if select:
        block = emit(aten.unsqueeze.default, src, dim)
    pieces = []
    if start > 0:
        pieces.append(emit(aten.slice.Tensor, base, dim, 0, start))
    pieces.append(block)
    if end < size:
        pieces.append(emit(aten.slice.Tensor, base, dim, end, size))
    return block if len(pieces) == 1 else emit(aten.cat.default, pieces, dim)


def _scatter_value(graph: torch.fx.Graph, node: torch.fx.Node) -> torch.fx.Node | None:
    """scatter(base, dim, index, value) of one number: `where(hit, value, base)` (module
    docstring); None for a symbolic size or a value that is not a number."""
    base, dim, index, value = node.args
    assert isinstance(base, torch.fx.Node) and isinstance(index, torch.fx.Node)
    want, ids = base.meta["val"], index.meta["val"]
    if not (_static(want.shape) and _static(ids.shape)) or not isinstance(dim, int) \
            or not isinstance(value, int | float | bool) or not want.shape:
        return None
    emit = FxEmit(graph, node)
    zeros = emit(aten.full.default, list(want.shape), 0.0, dtype=torch.float32)
    ones = emit(aten.full.default, list(ids.shape), 1.0, dtype=torch.float32)
    counts = emit(aten.scatter_add.default, zeros, dim, index, ones)
    hit = emit(aten.gt.Scalar, counts, 0.0)
    if want.dtype == torch.bool:  # set to True is an or, set to False an and-not
        return emit(aten.logical_or.default, hit, base) if value else emit(
            aten.logical_and.default, emit(aten.logical_not.default, hit), base)
    return emit(aten.where.self, hit, emit(aten.scalar_tensor.default, value,
                                           dtype=want.dtype), base)


def _masked_put(graph: torch.fx.Graph, node: torch.fx.Node) -> torch.fx.Node | None:
    """`x[mask] = v` (index_put by one boolean mask over x's leading dims, `v` the same for
    every picked position: it broadcasts to the dims the mask leaves): `where(mask, v, x)`,
    the mask given trailing dims of 1. T5Gemma 2's embedding writes its end-of-image
    embedding so. None for an accumulating put, integer indices or a `v` per picked row (a
    count only the data decides)."""
    x, indices, values = node.args[:3]
    accumulate = node.args[3] if len(node.args) > 3 else node.kwargs.get("accumulate", False)
    if accumulate or not isinstance(indices, list | tuple) or len(indices) != 1:
        return None
    mask = indices[0]
    if not isinstance(mask, torch.fx.Node) or not isinstance(values, torch.fx.Node):
        return None
    want, picked, given = x.meta["val"], mask.meta["val"], values.meta["val"]  # type: ignore[union-attr]
    rest = list(want.shape[picked.dim():])
    if picked.dtype != torch.bool or tuple(picked.shape) != tuple(want.shape[:picked.dim()]) \
            or given.dim() > len(rest) or not _static(want.shape) \
            or any(g not in (1, r) for g, r in zip(reversed(given.shape), reversed(rest))):
        return None
    emit = FxEmit(graph, node)
    if rest:
        mask = emit(aten.view.default, mask, [*picked.shape, *[1] * len(rest)])
    if given.dtype != want.dtype:
        values = emit(aten._to_copy.default, values, dtype=want.dtype)
    return emit(aten.where.self, mask, values, x)
