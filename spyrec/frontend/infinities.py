"""Infinities computed in 16-bit tensors, widened to f32 at import time (design note 100).

DL16, the format Spyre keeps fp16 and bf16 tensors in, has no infinity: its one special
pattern (NINF) reads back as NaN. Inside a kernel every tile is f32 and -inf is exact; a
16-bit tensor that holds an infinity and crosses a kernel boundary (stored to DDR) comes
back NaN, and a `max` or `softmax` over it is NaN for the whole row. Programs write such
tensors on purpose: Phi-MoE's router `scatter(scores, -1, idx, -inf)` then `max`,
`masked_fill(mask, -inf)` of a run-time mask, a `full(-inf)` row, `log` of a 0/1 mask.
An infinity the arithmetic makes (`log` of a computed 0) is not looked for: a 16-bit value
holding one between kernels comes back NaN.

This pass finds them in the decomposed FX graph and computes them in f32, where the device
holds -inf exactly:

- a *source* is a call whose 16-bit float result may hold an infinity it did not read: an
  op given an infinite number (`masked_fill(m, -inf)`, `where(c, x, -inf)`, `full`,
  `scalar_tensor`, `fill`; the `where` a one-value `scatter` becomes), or the logarithm
  of a boolean mask cast to a float (`log(0)` is -inf);
- the set spreads to every call whose 16-bit float result reads a member, except through
  ops whose result is finite whatever they read (softmax, sigmoid, tanh, ...; comparisons,
  indices and other non-float results end it by their type);
- each member is recomputed in f32 (its 16-bit tensor operands cast up, exact: every fp16
  and bf16 value is an f32 value; a 16-bit `dtype=` argument made f32), and so is every
  call that reads a member; a reader whose result is 16-bit and not a member (a softmax)
  casts its f32 result back, so the rest of the program is unchanged.

The widened ops compute in f32 what eager computes in fp16/bf16: results differ from
eager's by the rounding of the intermediate values, inside the 16-bit tolerance. A program
output that is a member stays 16-bit (cast back before it is returned): an infinity there
reaches the host as NaN, as any 16-bit output that overflows DL16 does. Division by zero
and overflow are not sources (a finite 16-bit value that overflows fp16 is still finite in
DL16, whose range reaches 8.57e9).
"""

from __future__ import annotations

import math
import operator
from typing import Any

import torch
from torch.fx.node import map_aggregate, map_arg

from spyrec.frontend.moe import FxEmit

aten = torch.ops.aten

HALF = (torch.float16, torch.bfloat16)

# logarithms: -inf where the operand is 0; a source when the operand is a boolean mask
# cast to a float (`torch.log(mask.half())`, an additive mask), not in general (`log(x +
# eps)` of features would widen a whole encoder for nothing)
_LOGS = {aten.log.default, aten.log2.default, aten.log10.default}
# ops given a number that leave a bound, not an infinity, when the number is infinite
_BOUNDS = {aten.clamp.default, aten.clamp_min.default, aten.clamp_max.default,
           aten.hardtanh.default, aten.nan_to_num.default}
# ops whose float result is finite (or NaN) whatever their operands hold
_FINITE = {aten._softmax.default, aten.softmax.int, aten.sigmoid.default,
           aten.tanh.default, aten.erf.default, aten.hardsigmoid.default,
           aten.sign.default, aten.nan_to_num.default, aten.sin.default,
           aten.cos.default}


# readers that take a member as an additive mask: they stay in the program's dtype and read
# the f32 mask as it is (the attention kernel adds the mask to f32 scores, where -inf is
# exact; SDPA takes a float mask of another dtype than the query's)
_MASK_READERS = {aten.scaled_dot_product_attention.default: (3, "attn_mask")}


def _half(val: Any) -> bool:
    """`val` (a node's fake value) is, or holds, a 16-bit float tensor."""
    if isinstance(val, torch.Tensor):
        return val.dtype in HALF
    if isinstance(val, tuple | list):
        return any(_half(v) for v in val)
    return False


def _infinite_number(args: Any) -> bool:
    found = False

    def visit(a: Any) -> Any:
        nonlocal found
        if isinstance(a, float) and math.isinf(a):
            found = True
        return a

    map_aggregate(args, visit)
    return found


def _source(node: torch.fx.Node) -> bool:
    if not _half(node.meta.get("val")):
        return False
    if node.target in _LOGS:
        operand = node.args[0]
        return isinstance(operand, torch.fx.Node) and operand.target in (
            aten._to_copy.default, aten.to.dtype) and isinstance(
            src := operand.all_input_nodes[0].meta.get("val"), torch.Tensor) \
            and src.dtype == torch.bool
    return node.target not in _BOUNDS and _infinite_number((node.args, node.kwargs))


def widen_infinities(graph: torch.fx.Graph) -> int:
    """Compute every 16-bit value of `graph` that may hold an infinity in f32 (the module
    docstring); returns how many calls were widened."""
    members: set[torch.fx.Node] = set()
    readers: list[torch.fx.Node] = []  # members and the calls that read them, in order
    for node in graph.nodes:
        if node.op != "call_function":
            continue
        reads = any(a in members for a in node.all_input_nodes)
        if _source(node) or (reads and _half(node.meta.get("val"))
                             and node.target not in _FINITE
                             and node.target not in _MASK_READERS):
            members.add(node)
            readers.append(node)
        elif reads:
            readers.append(node)
    if not members:
        return 0
    wide: dict[torch.fx.Node, torch.fx.Node] = {}
    cast_up: dict[torch.fx.Node, torch.fx.Node] = {}
    for node in readers:
        if node.target is aten._assert_tensor_metadata.default:
            graph.erase_node(node)  # a trace-time check of the dtype the member had
            continue
        if "val" not in node.meta:
            continue  # reads the members cast back, as the program's output does (below)
        if node.target in _MASK_READERS:  # never a member (the loop above)
            _read_mask(node, wide)
            continue
        emit = FxEmit(graph, node)

        def operand(a: torch.fx.Node, emit: FxEmit = emit) -> torch.fx.Node:
            if a in wide:
                return wide[a]
            val = a.meta.get("val")
            if isinstance(val, torch.Tensor) and val.dtype in HALF:
                if a not in cast_up:
                    cast_up[a] = emit(aten._to_copy.default, a, dtype=torch.float32)
                return cast_up[a]
            return a

        args = map_arg(node.args, operand)
        kwargs = {k: (torch.float32 if k == "dtype" and v in HALF else v)
                  for k, v in map_arg(node.kwargs, operand).items()}
        new = emit(node.target, *args, **kwargs)
        wide[node] = new
        if node in members:
            continue
        # a reader outside the set: its result takes the original's place, cast back to
        # 16 bits where the original was 16-bit
        result = new
        old = node.meta.get("val")
        if isinstance(old, torch.Tensor) and new.meta["val"].dtype != old.dtype:
            result = emit(aten._to_copy.default, new, dtype=old.dtype)
        node.replace_all_uses_with(result)
    for node in members:
        # members read by calls outside `readers` (the program's output, a getitem of a
        # tuple): cast back to what they were
        users = [u for u in node.users if u not in wide]
        if not users:
            continue
        old = node.meta["val"]
        if isinstance(old, torch.Tensor):
            back = FxEmit(graph, wide[node].next, like=node)(
                aten._to_copy.default, wide[node], dtype=old.dtype)
            for user in users:
                user.replace_input_with(node, back)
        else:
            for user in users:
                assert user.target is operator.getitem, user
                user.replace_input_with(node, wide[node])
    graph.eliminate_dead_code()
    return len(members)


def _read_mask(node: torch.fx.Node, wide: dict[torch.fx.Node, torch.fx.Node]) -> None:
    """A mask reader's mask argument, if a member, read as its f32 value; the other
    operands stay."""
    position, name = _MASK_READERS[node.target]  # type: ignore[index]
    mask = node.kwargs.get(name, node.args[position] if len(node.args) > position else None)
    if isinstance(mask, torch.fx.Node) and mask in wide:
        node.replace_input_with(mask, wide[mask])
    # a member read as a query, key or value is read cast back (below): NaN in, NaN out
