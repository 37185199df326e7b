"""Constant folding of input-independent subgraphs, at import time, with torch.

A node whose value depends only on parameters, buffers, lifted constants and static shapes
(never on a user input) computes the same tensor on every call, so it is evaluated once here,
by torch on the host, and the importer turns it into a weight (`spyre.param`) instead of
device ops. This removes from the device program what exported decoders compute from
shapes alone: causal-mask construction (arange, cumsum, comparisons, index, bitwise ops on
int64/bool) and the rotary position tables (inv_freq x positions, cos, sin). `full_like`,
`zeros_like` and their kind read only the shape and dtype of their operand, which are static,
so they fold even when that operand is a user input.

Only the frontier of a folded region is materialized: a folded node whose value is used by
a node that stays on the device (or is a program output). Interior values are dropped.
Reshapes at the frontier that keep the innermost dim stay on the device (they are free
views there), so a table that every layer reshapes is stored once.

A folded boolean attention mask (every user a `scaled_dot_product_attention` taking it as
`attn_mask`) is stored in the form the device consumes: additive, in the query's element
type, 0 where attention is allowed and MASKED where not (finite: DL16 has no -inf, and
exp(-30000 - max) is exactly 0), and with the batch / head dims it repeats along reduced to
1 (attention broadcasts the mask). Only here, where the data is, can that be decided.
A folded float mask that eager attention adds to its scores before a softmax over the key
dim gets the same treatment: leading dims that only repeat reduced to 1, and values below
MASKED (Hugging Face uses the dtype's minimum, -3.4e38 in fp32) raised to MASKED.

Two kinds of input-independent nodes are not materialized:
- no-op and view chains whose sources are plain parameters (`t(weight)`, `view(weight)`,
  `alias(buffer)`) that a device node reads: op selection folds a weight transpose into the
  weight's layout, and materializing them would store a second copy of the weight (they
  are still evaluated when a folded node reads them);
- nodes whose evaluation is not reproducible (random ops), which are not evaluated at all.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch.fx.experimental.symbolic_shapes import guard_or_false
from torch.fx.node import map_arg

from spyrec.diagnostics import CompileError

# ops that never copy data: a chain of them over a parameter is the parameter itself
_VIEW_TARGETS = {
    "aten.view.default", "aten._unsafe_view.default", "aten.reshape.default",
    "aten.permute.default", "aten.t.default", "aten.transpose.int",
    "aten.unsqueeze.default", "aten.squeeze.dim", "aten.expand.default",
    "aten.alias.default", "aten.detach.default", "aten.clone.default",
    "aten.lift_fresh_copy.default", "aten._assert_tensor_metadata.default",
}

# reshapes a folded value may keep on the device (see `_keep_reshapes_on_device`)
_RESHAPES = {"aten.view.default", "aten._unsafe_view.default", "aten.reshape.default",
             "aten.unsqueeze.default", "aten.squeeze.dim", "aten.alias.default",
             "aten.clone.default"}

# ops whose value depends on their first operand's shape and dtype only, never its data
_SHAPE_ONLY = {"aten.full_like.default", "aten.zeros_like.default", "aten.ones_like.default",
               "aten.new_zeros.default", "aten.new_ones.default", "aten.new_full.default",
               "aten.empty_like.default", "aten.new_empty.default",
               "aten.new_empty_strided.default"}

# ops whose result's values are unspecified (torch returns whatever memory held): folded as
# zeros, so a compile is deterministic and an integer range analysis of what is written
# into them (`inv = torch.empty_like(perm); inv[perm] = arange(n)`, the inverse permutation
# of a MoE dispatch) does not read leftover memory as values
_UNINITIALIZED = {"aten.empty.memory_format", "aten.empty_like.default",
                  "aten.empty_permuted.default", "aten.empty_strided.default",
                  "aten.new_empty.default", "aten.new_empty_strided.default"}

MASKED = -30000.0
_SDPA = "aten.scaled_dot_product_attention.default"
_SOFTMAX = {"aten.softmax.int", "aten._softmax.default"}


@dataclass
class Folding:
    """The outcome of folding: which nodes disappear and which become constants."""

    folded: set[torch.fx.Node]
    """Input-independent nodes the importer skips: evaluated here, interior or frontier."""
    constants: dict[torch.fx.Node, torch.Tensor]
    """The frontier: folded nodes whose value a device node or the output needs."""
    on_device: dict[torch.fx.Node, Any]
    """Input-independent nodes imported as device ops all the same (parameter views and
    reshapes, see `_keep_param_views_on_device`, `_keep_reshapes_on_device`), with their
    values: a convolution needs its weight's data at import even when the model passes
    `conv.weight.squeeze(1)` and the convolution unsqueezes it back."""

    def value(self, node: torch.fx.Node) -> torch.Tensor | None:
        """The tensor value of an input-independent node the importer sees (a frontier
        constant or a node kept on the device), or None."""
        value = self.constants.get(node, self.on_device.get(node))
        return value if isinstance(value, torch.Tensor) else None


def _target_name(target: Any) -> str:
    return str(target).removeprefix("torch.ops.")


def _nondeterministic(target: Any) -> bool:
    """Random ops: their value differs from call to call."""
    return torch.Tag.nondeterministic_seeded in getattr(target, "tags", ())


def _is_param_view(node: torch.fx.Node, params: set[torch.fx.Node]) -> bool:
    """Is `node` a chain of view / no-op nodes over a plain parameter?"""
    while node not in params:
        if node.op != "call_function" or _target_name(node.target) not in _VIEW_TARGETS:
            return False
        sources = node.all_input_nodes
        if len(sources) != 1:
            return False
        node = sources[0]
    return True


def fold_constants(graph: torch.fx.Graph, params: Mapping[str, torch.Tensor]) -> Folding:
    """Evaluate every input-independent `call_function` node of `graph`.

    `params` maps the placeholder name of each parameter, buffer and lifted constant to its
    tensor; every other placeholder is a user input.
    """
    _drop_empty_cat_operands(graph)
    values: dict[torch.fx.Node, Any] = {}
    param_nodes: set[torch.fx.Node] = set()
    for node in graph.nodes:
        if node.op == "placeholder" and node.name in params:
            values[node] = params[node.name]
            param_nodes.add(node)
        elif node.op == "placeholder" and _zero_element(node):
            values[node] = _stand_in(node)  # a user input with no data: its shape is all of it
    folded: set[torch.fx.Node] = set()
    for node in graph.nodes:
        if node.op != "call_function":
            continue
        if _zero_element(node):
            values[node] = _stand_in(node)  # no data: whatever its operands hold
        elif _foldable(node, values, param_nodes):
            values[node] = _evaluate(node, values)
        else:
            continue
        folded.add(node)
    _refuse_empty_outputs(graph)
    runtime_masks(graph, values)
    evaluated = set(folded)
    _keep_param_views_on_device(graph, folded, param_nodes)
    _keep_reshapes_on_device(graph, folded, values)
    constants = {
        node: _device_form(node, values[node]) for node in graph.nodes
        if node in folded and isinstance(values[node], torch.Tensor)
        and any(user not in folded for user in node.users)
    }
    return Folding(folded, constants, {node: values[node] for node in evaluated - folded})


_BOOL_CASTS = {"aten.to.device", "aten.to.dtype", "aten.to.dtype_layout",
               "aten._to_copy.default"}
_ANDS = {"aten.__and__.Tensor", "aten.bitwise_and.Tensor", "aten.logical_and.default"}
_LOGICAL = _ANDS | {"aten.__or__.Tensor", "aten.bitwise_or.Tensor", "aten.logical_or.default",
                    "aten.bitwise_not.default", "aten.logical_not.default"}
FLOAT_TYPES = {torch.float32, torch.float16, torch.bfloat16}


def runtime_masks(graph: torch.fx.Graph, values: dict[torch.fx.Node, Any]) -> None:
    """Rewrite, in place and exactly, the ops transformers uses to build a boolean attention
    mask from a run-time `attention_mask` ([B, S] integers) into ops the device has:
    - a cast of an integer tensor to bool becomes `ne(x, 0)` (a predicate, 0.0 / 1.0);
    - a cast of a boolean to bool is its operand;
    - `a & b` with a folded all-True operand is the other broadcast to the result's shape
      (`new_ones(...) & mask`, how transformers starts a mask); any other `a & b` of a
      run-time mask reads both operands broadcast to its shape;
    - `index(x, [i0, i1, ...])` whose indices are folded tensors (`values`) that only place
      x's dims in a larger rank (`arange(B)[:, None, None, None]`, `arange(S)[None, None,
      None, :]`) becomes a view of x: checked by indexing x's own element numbers.
    Each keeps every value (dtype, shape, data) as it was; what it cannot prove it leaves
    alone for op selection to refuse."""
    for node in list(graph.nodes):
        meta = node.meta.get("val")
        if node.op != "call_function" or node in values or not isinstance(meta, torch.Tensor) \
                or meta.dtype != torch.bool:
            continue
        name, args = _target_name(node.target), node.args
        if name in _ANDS and len(args) == 2 and any(_all_true(a, values) for a in args):
            other = args[1] if _all_true(args[0], values) else args[0]
            _replace(graph, node, torch.ops.aten.expand.default, (other, list(meta.shape)))
            continue
        if name in _ANDS and len(args) == 2:
            _expand_operands(graph, node)
            continue
        source = args[0] if args else None
        if not isinstance(source, torch.fx.Node) or source in values:
            continue
        before = source.meta["val"].dtype
        if name in _BOOL_CASTS and before == torch.bool:
            node.replace_all_uses_with(source)
            graph.erase_node(node)
        elif name in _BOOL_CASTS and not before.is_floating_point and not before.is_complex:
            _replace(graph, node, torch.ops.aten.ne.Scalar, (source, 0))
        elif name == "aten.index.Tensor" and _placement(source, args[1], values):
            _replace(graph, node, torch.ops.aten.view.default, (source, list(meta.shape)))


def _expand_operands(graph: torch.fx.Graph, node: torch.fx.Node) -> None:
    """`const & mask` where both broadcast ([1, 1, L, S] causal, [B, 1, 1, S] padding):
    each operand expanded to the result's shape first (a device broadcast), so the product
    reads two full tensors (the kernels broadcast one operand at most)."""
    shape = list(node.meta["val"].shape)
    for operand in node.args:
        if isinstance(operand, torch.fx.Node) and list(operand.meta["val"].shape) != shape:
            with graph.inserting_before(node):
                expanded = graph.call_function(torch.ops.aten.expand.default, (operand, shape))
            expanded.meta = {**operand.meta, "val": operand.meta["val"].expand(shape)}
            node.replace_input_with(operand, expanded)


def _all_true(arg: Any, values: dict[torch.fx.Node, Any]) -> bool:
    """Is `arg` a folded boolean tensor that is True throughout?"""
    value = values.get(arg) if isinstance(arg, torch.fx.Node) else None
    return isinstance(value, torch.Tensor) and value.dtype == torch.bool and bool(value.all())


def _replace(graph: torch.fx.Graph, node: torch.fx.Node, target: Any, args: tuple) -> None:
    """`node` replaced by `target(*args)`, which computes the same value (meta kept)."""
    with graph.inserting_before(node):
        new = graph.call_function(target, args)
    new.meta = dict(node.meta)
    node.replace_all_uses_with(new)
    graph.erase_node(node)


def _placement(source: torch.fx.Node, indices: Any, values: dict[torch.fx.Node, Any]) -> bool:
    """Does `index(source, indices)` only reshape `source` (indices folded, one per dim)?"""
    shape = tuple(source.meta["val"].shape)
    if not isinstance(indices, (list, tuple)) or len(indices) != len(shape) or not all(
            isinstance(i, torch.fx.Node) and isinstance(values.get(i), torch.Tensor)
            for i in indices):
        return False
    numbers = torch.arange(math.prod(shape)).reshape(shape)
    try:
        picked = numbers[tuple(values[i].long() for i in indices)]
    except (IndexError, RuntimeError):
        return False
    return torch.equal(picked.reshape(-1), torch.arange(math.prod(shape)))


def _keep_param_views_on_device(graph: torch.fx.Graph, folded: set[torch.fx.Node],
                                params: set[torch.fx.Node]) -> None:
    """Views of plain parameters that a device node reads are imported, not materialized.

    They are still evaluated (a folded node may read them, as BERT's gather reads an
    expanded buffer), but materializing one would store a second copy of the weight.
    Users come before their operands in reverse order, so whole view chains are kept.
    """
    for node in reversed(graph.nodes):
        if node in folded and _is_param_view(node, params) and any(
                user not in folded for user in node.users):
            folded.discard(node)


def _keep_reshapes_on_device(graph: torch.fx.Graph, folded: set[torch.fx.Node],
                             values: dict[torch.fx.Node, Any]) -> None:
    """Move frontier reshapes of a folded value back to the device, where they are free.

    Each decoder layer unsqueezes the same rotary table; materializing every unsqueeze
    would store one copy of the table per layer. Materializing the table once and keeping
    the reshapes (which keep the innermost dim, so op selection makes them free views)
    stores it once.
    """
    changed = True
    while changed:
        changed = False
        for node in reversed(graph.nodes):
            if node not in folded or all(user in folded for user in node.users):
                continue
            source = node.all_input_nodes[0] if len(node.all_input_nodes) == 1 else None
            if source is None or source not in folded or not _keeps_innermost(node, values):
                continue
            folded.discard(node)
            changed = True


def _keeps_innermost(node: torch.fx.Node, values: dict[torch.fx.Node, Any]) -> bool:
    """Is `node` a float reshape whose innermost dim is its operand's?"""
    if _target_name(node.target) not in _RESHAPES:
        return False
    value, source = values[node], values[node.all_input_nodes[0]]
    if not isinstance(value, torch.Tensor) or not isinstance(source, torch.Tensor):
        return False
    if not value.dtype.is_floating_point:
        return False  # integer and boolean values have no device form until folded
    return value.dim() > 0 and source.dim() > 0 and value.shape[-1] == source.shape[-1]


def _device_form(node: torch.fx.Node, value: torch.Tensor) -> torch.Tensor:
    """A boolean attention mask as an additive one, and an eager additive one reduced and
    clamped (see the module docstring); any other value unchanged."""
    if value.dtype.is_floating_point and _softmax_mask(node):
        return _reduce_repeats(value).clamp(min=MASKED)
    if value.dtype != torch.bool or not node.users:
        return value
    if is_predicate_constant(node):
        # a constant condition (tril, triu): a 0/1 predicate in the type of the values it
        # selects (exact in every float type), so the select needs no cast; f32 when a
        # logical op reads it (a causal mask and-ed with a run-time padding mask)
        types = {u.meta["val"].dtype for u in node.users}
        return value.to(types.pop() if types <= FLOAT_TYPES and len(types) == 1
                        else torch.float32)
    if stored_as_predicate(node):
        # a boolean another op reads as a number or moves (compared with an integer,
        # summed, concatenated with a run-time mask): the same 0.0 / 1.0 predicate
        return value.to(torch.float32)
    if not _sdpa_masks_only(node):
        return value
    queries = {u.args[0].meta["val"].dtype for u in node.users}  # type: ignore[union-attr]
    if len(queries) != 1:
        return value
    dtype = queries.pop()
    zero = torch.zeros((), dtype=dtype)
    return torch.where(_reduce_repeats(value), zero, torch.tensor(MASKED, dtype=dtype))


def _sdpa_mask_use(user: torch.fx.Node, node: torch.fx.Node) -> bool:
    """`user` is an SDPA taking `node` as its attn_mask (and only so)."""
    mask = user.kwargs.get("attn_mask", user.args[3] if len(user.args) > 3 else None)
    return _target_name(user.target) == _SDPA and mask is node \
        and node not in user.args[:3]


def _sdpa_masks_only(node: torch.fx.Node) -> bool:
    return bool(node.users) and all(_sdpa_mask_use(u, node) for u in node.users)


def is_predicate_constant(node: torch.fx.Node) -> bool:
    """Is every user of `node` a `where` taking it as its condition (and only so) or a
    logical and / or / not (possibly through an expand, a select, slice or view), or an SDPA
    taking it as its mask beside such users? A folded boolean such node is stored as 0.0 /
    1.0, a predicate (tril, triu, a causal mask); one only SDPAs read is stored additive
    instead (`_device_form`). LASR's encoder reads one mask both as SDPA's and negated."""
    if _sdpa_masks_only(node):
        return False
    return bool(node.users) and all(
        (_target_name(u.target) == "aten.where.self" and u.args[0] is node
         and node not in u.args[1:]) or _target_name(u.target) in _LOGICAL
        or _sdpa_mask_use(u, node)
        or (_target_name(u.target) in _PREDICATE_VIEWS and u.args[0] is node
            and is_predicate_constant(u))
        for u in node.users)


def stored_as_predicate(node: torch.fx.Node) -> bool:
    """Is a folded boolean `node` stored as a 0.0 / 1.0 predicate: read by some op, not
    only as SDPA masks (stored additive) and not as the indices of an `index` or
    `index_put` (a boolean index selects positions; op selection reads its values)?"""
    if not node.users or _sdpa_masks_only(node):
        return False
    return is_predicate_constant(node) or not any(
        _target_name(u.target) in _INDEXING and len(u.args) > 1
        and isinstance(u.args[1], (list, tuple)) and node in u.args[1] for u in node.users)


_INDEXING = {"aten.index.Tensor", "aten.index_put.default", "aten._index_put_impl.default",
             "aten.index_put_.default"}


# views a folded condition may pass through and stay one (DeepSeek-V3.2's causal mask is
# and-ed with the indexer's mask and read through `mask[:, 0]` by the indexer)
_PREDICATE_VIEWS = {"aten.expand.default", "aten.select.int", "aten.slice.Tensor",
                    "aten.unsqueeze.default", "aten.view.default", "aten.squeeze.dim"}


def _reduce_repeats(value: torch.Tensor) -> torch.Tensor:
    """`value` with each leading dim (all but the last two) that only repeats reduced to 1."""
    for dim in range(value.dim() - 2):
        first = value.narrow(dim, 0, 1)
        if torch.equal(value, first.expand_as(value)):
            value = first
    return value


def _softmax_mask(node: torch.fx.Node) -> bool:
    """Is every user of `node` an `add` of it to scores of the add's full shape, feeding
    only a softmax over the last dim (eager attention's additive mask)? Then reducing its
    repeated dims keeps every sum, and clamping to MASKED keeps every softmax (a masked
    score gets weight exp(-30000) = 0 either way)."""
    if not node.users:
        return False
    for user in node.users:
        if _target_name(user.target) != "aten.add.Tensor" or len(user.args) != 2 \
                or user.kwargs.get("alpha", 1) != 1:
            return False
        other = user.args[1] if user.args[0] is node else user.args[0]
        if not isinstance(other, torch.fx.Node) or other is node \
                or other.meta["val"].shape != user.meta["val"].shape:
            return False
        for softmax in user.users:
            if _target_name(softmax.target) not in _SOFTMAX or \
                    softmax.args[1] % user.meta["val"].dim() != user.meta["val"].dim() - 1:
                return False
    return True


def _evaluate(node: torch.fx.Node, values: dict[torch.fx.Node, Any]) -> Any:
    """The value of an input-independent node, by torch; a clean error if torch refuses it
    (`amax` over an empty dim, which eager refuses too)."""
    args, kwargs = map_arg((node.args, node.kwargs),
                           lambda n: values[n] if n in values else _stand_in(n))
    target = node.target
    assert callable(target)  # a call_function node
    try:
        with torch.no_grad():
            value = target(*args, **kwargs)
            if _target_name(target) in _UNINITIALIZED:
                value.zero_()
            return value
    except (RuntimeError, IndexError, ValueError) as exc:
        line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CompileError(
            f"{node.name} ({_target_name(node.target)}): its value depends on no input, so it "
            f"is computed at compile time, and torch refuses it: {line}. Eager PyTorch refuses "
            "it as well on these shapes; change the model so this op gets valid operands."
        ) from exc


def _refuse_empty_outputs(graph: torch.fx.Graph) -> None:
    """A program output with no elements has no device form (every stored tensor holds at
    least a stick): refused by name."""
    for node in graph.find_nodes(op="output"):
        for value in node.all_input_nodes:
            if _zero_element(value):
                raise CompileError(
                    f"{value.name} ({_target_name(value.target)}): a program output with no "
                    f"elements (shape {list(value.meta['val'].shape)}) cannot be stored on "
                    "Spyre. Return only non-empty tensors from the model (an empty result "
                    "is known from the shapes alone).")


def _zero_element(node: torch.fx.Node) -> bool:
    """Does `node` produce a tensor with no elements (a dim of size 0)? A size only the data
    decides (an unbacked symbol: `nonzero`, a split by run-time counts) is not known empty."""
    meta = node.meta.get("val")
    return isinstance(meta, torch.Tensor) and guard_or_false(meta.numel() == 0)


def _drop_empty_cat_operands(graph: torch.fx.Graph) -> None:
    """`cat` skips its zero-element operands, as PyTorch does (dinov3's zero register
    tokens): each is removed from the operand list; a cat left with one operand becomes a
    copy of it. A cat of only empty operands is itself empty, and folded."""
    for node in list(graph.nodes):
        if node.op != "call_function" or _target_name(node.target) != "aten.cat.default" \
                or _zero_element(node):
            continue
        operands = node.args[0]
        if not isinstance(operands, (list, tuple)):
            continue
        kept = [t for t in operands if not (isinstance(t, torch.fx.Node) and _zero_element(t))]
        if len(kept) == len(operands):
            continue
        if len(kept) == 1:
            _replace(graph, node, torch.ops.aten.clone.default, (kept[0],))
        else:
            node.args = (kept, *node.args[1:])


def _stand_in(node: torch.fx.Node) -> torch.Tensor:
    """A tensor with the metadata of `node` (shape, dtype and strides: `full_like` keeps its
    operand's strides, and a view of its result is valid only with them) for an op that
    reads nothing else of it."""
    meta = node.meta["val"]
    shape, stride = tuple(meta.shape), tuple(meta.stride())
    span = 0 if 0 in shape else 1 + sum((n - 1) * s for n, s in zip(shape, stride, strict=True))
    return torch.zeros(span, dtype=meta.dtype).as_strided(shape, stride)


def _foldable(node: torch.fx.Node, values: dict[torch.fx.Node, Any],
              params: set[torch.fx.Node]) -> bool:
    if _target_name(node.target) in _SHAPE_ONLY:
        # full_like(x, 1.0) and friends read only x's shape and dtype (static here)
        return all(source in values for source in node.all_input_nodes[1:])
    if any(source not in values for source in node.all_input_nodes):
        return False  # depends on a user input (or on a node left on the device)
    if node.target is operator.getitem:
        return True
    if _nondeterministic(node.target):
        return False
    schema = getattr(node.target, "_schema", None)
    return schema is not None and not schema.is_mutable
