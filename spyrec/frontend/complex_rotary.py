"""Complex arithmetic (rotary embeddings written with complex numbers), rewritten at import
time into real arithmetic on (re, im) pairs (design note 92).

Llama 4 and DeepSeek-V2 rotate queries and keys as `view_as_real(view_as_complex(x) *
polar(1, angle))`. A complex tensor has no Spyre device format, so every complex value of
the decomposed FX graph is carried as two real tensors of its shape, its real and imaginary
parts, and each complex op becomes the real ops that define it, exactly as eager computes
them:

- `view_as_complex(x)` (x real, [..., 2]): re = x[..., 0], im = x[..., 1];
- `polar(abs, angle)`: re = abs * cos(angle), im = abs * sin(angle);
- `mul` of complex a + bi and c + di: re = ac - bd, im = ad + bc (each product rounded,
  then the sum: eager's vectorised complex product, no fused multiply-add); a real operand
  r (a tensor or a number) is the complex r + 0i and goes through the same formula, so an
  infinite or NaN part propagates as in eager (`inf * 0` is NaN on both sides);
- `add` / `sub` of a complex value and a complex or real one: part by part (a real
  operand r is r + 0i);
- shape ops (`view`, `unsqueeze`, `expand`, `permute`, `slice`, ...) and `clone` or a
  same-dtype `_to_copy`: the same op on each part (a complex tensor's dims are its parts'
  dims);
- `view_as_real(z)`: the parts stacked along a new last dim, [..., 2];
- `_assert_tensor_metadata` of a complex value: dropped.

Every other op reading or making a complex value (`abs`, `angle`, `conj`, `fft_*`, a cast
between complex and real, a complex constant ...) is refused by name: the error names the
node, its op and source line and says to write that step in real arithmetic. A graph with
no complex value is left as it is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from spyrec.diagnostics import CompileError
from spyrec.frontend.moe import FxEmit

aten = torch.ops.aten

Parts = tuple[torch.fx.Node, torch.fx.Node]
Table = dict[Any, Parts]  # a complex node's (re, im); keyed by any FX argument for lookups

# ops that act on each part alone with the same arguments (the tensor first)
_PARTWISE = {aten.view.default, aten._unsafe_view.default, aten.reshape.default,
             aten.unsqueeze.default, aten.squeeze.dim, aten.squeeze.dims,
             aten.squeeze.default, aten.expand.default, aten.permute.default,
             aten.transpose.int, aten.t.default, aten.slice.Tensor, aten.select.int,
             aten.clone.default, aten.alias.default, aten.contiguous.default,
             aten.repeat.default, aten.cat.default}
_COVERED = ("view_as_complex, polar, mul, add, sub, view_as_real and the shape ops "
            "(view, unsqueeze, squeeze, expand, permute, transpose, slice, select, cat, "
            "clone, repeat)")


def _is_complex(node: Any) -> bool:
    val = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return isinstance(val, torch.Tensor) and val.is_complex()


def _reads_complex(node: torch.fx.Node) -> bool:
    return any(_is_complex(a) for a in node.all_input_nodes)


def rewrite_complex(graph: torch.fx.Graph, where: Callable[[torch.fx.Node], str]) -> int:
    """Rewrite every complex value of `graph` into a pair of real values (the module
    docstring); returns how many complex ops were rewritten. Raises CompileError naming
    the first op that makes or reads a complex value and is not covered (reading a complex
    input or constant, which has no parts, included); `where(node)` is the node's source
    line for that message."""
    parts: Table = {}
    count = 0
    for node in list(graph.nodes):
        if node.op != "call_function" or not (_is_complex(node) or _reads_complex(node)):
            continue
        if node.target == aten._assert_tensor_metadata.default:
            graph.erase_node(node)
            continue
        unknown = any(_is_complex(a) and a not in parts for a in node.all_input_nodes)
        rewrite = None if unknown else _rewrite(FxEmit(graph, node), node, parts)
        if rewrite is None:
            raise CompileError(
                f"node {node.name} ({node.target}, {where(node)}): a complex-valued op that "
                "spyrec's complex-to-real rewrite does not cover. Complex tensors have no "
                f"Spyre device format; the rewrite covers {_COVERED} (design note 92). "
                "Write this step in real arithmetic on (re, im) pairs, e.g. "
                "(a+bi)(c+di) = (ac-bd) + (ad+bc)i on `x.view(..., d // 2, 2)`.")
        count += 1
        if isinstance(rewrite, tuple):
            parts[node] = rewrite
        else:
            node.replace_all_uses_with(rewrite)
            graph.erase_node(node)
    for node in reversed(list(graph.nodes)):  # the complex nodes, now unread
        if node in parts and not node.users:
            graph.erase_node(node)
    return count


def _operand(emit: FxEmit, value: Any, parts: Table,
             like: torch.fx.Node) -> tuple[Any, Any]:
    """A mul/add operand as (re, im): a complex node's parts; a real tensor or a number r
    as (r, 0), the 0 a zero tensor of r's shape in the result's real dtype."""
    if isinstance(value, torch.fx.Node) and value in parts:
        return parts[value]
    if isinstance(value, torch.fx.Node):
        val = value.meta["val"]
        real = _real_dtype(like)
        if val.dtype != real:
            value = emit(aten._to_copy.default, value, dtype=real)
        return value, emit(aten.mul.Tensor, value, 0.0)
    if isinstance(value, complex):
        return value.real, value.imag
    return value, 0.0


def _real_dtype(node: torch.fx.Node) -> torch.dtype:
    return torch.empty(0, dtype=node.meta["val"].dtype).real.dtype


def _product(emit: FxEmit, a: tuple[Any, Any], c: tuple[Any, Any]) -> Parts:
    """(a0 + a1 i)(c0 + c1 i) = (a0 c0 - a1 c1) + (a0 c1 + a1 c0) i, each product rounded
    (a number times a tensor is put second, as ATen's `mul.Tensor` wants it)."""
    def mul(x: Any, y: Any) -> torch.fx.Node:
        return emit(aten.mul.Tensor, *((x, y) if isinstance(x, torch.fx.Node) else (y, x)))
    re = emit(aten.sub.Tensor, mul(a[0], c[0]), mul(a[1], c[1]))
    im = emit(aten.add.Tensor, mul(a[0], c[1]), mul(a[1], c[0]))
    return re, im


def _rewrite(emit: FxEmit, node: torch.fx.Node, parts: Table
             ) -> Parts | torch.fx.Node | None:
    """The parts of complex `node`, or the real node replacing a real-valued `node` that
    reads complex values; None when the op is not covered."""
    target, args = node.target, node.args
    if target == aten.view_as_complex.default:
        x = args[0]
        return emit(aten.select.int, x, -1, 0), emit(aten.select.int, x, -1, 1)
    if target == aten.polar.default:
        magnitude, angle = args[0], args[1]
        return (emit(aten.mul.Tensor, magnitude, emit(aten.cos.default, angle)),
                emit(aten.mul.Tensor, magnitude, emit(aten.sin.default, angle)))
    if target == aten.sym_size.int and args[0] in parts:
        return emit(target, parts[args[0]][0], *args[1:])
    if target == aten.view_as_real.default and args[0] in parts:
        re, im = parts[args[0]]
        pair = [emit(aten.unsqueeze.default, re, -1), emit(aten.unsqueeze.default, im, -1)]
        return emit(aten.cat.default, pair, -1)
    if not _is_complex(node) or node.kwargs.get("alpha", 1) != 1:
        return None
    if target == aten.mul.Tensor:
        return _product(emit, _operand(emit, args[0], parts, node),
                        _operand(emit, args[1], parts, node))
    if target in (aten.add.Tensor, aten.sub.Tensor) and args[0] in parts:
        (a0, a1), (b0, b1) = parts[args[0]], _operand(emit, args[1], parts, node)
        return emit(target, a0, b0), emit(target, a1, b1)
    if target == aten._to_copy.default and node.kwargs.get("dtype") in (
            None, node.meta["val"].dtype) and args[0] in parts:
        return parts[args[0]]
    if target in _PARTWISE:
        return _partwise(emit, node, parts)
    return None


def _partwise(emit: FxEmit, node: torch.fx.Node, parts: Table
              ) -> Parts | None:
    """A shape op applied to each part (a `cat` to each part list)."""
    first, rest = node.args[0], node.args[1:]
    if node.target == aten.cat.default:
        if not isinstance(first, list | tuple) or not all(a in parts for a in first):
            return None
        return (emit(aten.cat.default, [parts[a][0] for a in first], *rest),
                emit(aten.cat.default, [parts[a][1] for a in first], *rest))
    if first not in parts:
        return None
    re, im = parts[first]
    return (emit(node.target, re, *rest, **node.kwargs),
            emit(node.target, im, *rest, **node.kwargs))
