"""The range of the integers a program computes on the device, and the input limit that
keeps them exact (part of spyre-legalize, before op selection).

Integer tensors the program computes on run on the SFU as f32 (design note 28c): exact for
every integer of magnitude up to 2^24, rounded past it. Integers used only as indices (an
embedding's ids, the positions of a gather or an index) move as int32 and are exact up to
2^31. So every integer value an op computes on the device, and every integer input read by
such an op, must stay within 2^24 in magnitude, or the result is silently not eager's.

`int_input_limit` bounds |value| of every integer ATen value as a function of one limit L
on the magnitude of the integer inputs that reach f32 arithmetic (interval rules per op:
a sum adds its operands' bounds, a product multiplies them, a cumsum multiplies by the
scanned length, moves keep their data's bound, indices of a dim are below its size), and
finds the largest L for which every computed value is within 2^24. The graph function
records it per input (`spyre.int_limits`); the runtime refuses an input beyond it with a
message naming the input, the value and the limit. Float values are bounded the same way
(a float input within L, rules of their own for rounding and bounded functions), so an
integer computed from a float cast to an integer is bounded too, and the float inputs it
comes from get the limit; the cast itself is exact and is not checked. An integer with no
bound (an op without a rule, or a float no rule bounds: a log) is not guarded yet; a
program whose integers pass 2^24 whatever its inputs is refused here.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    IntegerAttr,
    ModuleOp,
    TensorType,
    i64,
)
from xdsl.ir import BlockArgument, OpResult, SSAValue

from spyrec.diagnostics import CompileError
from spyrec.dialects import spyre_plan as plan
from spyrec.dialects.spyre import AtenOp, ParamOp, describe
from spyrec.passes.graph.legalize.base import FLOAT_ELEMENTS, INT_ELEMENTS, arg

EXACT = 2 ** 24  # every integer of magnitude up to this is an f32 value
INT32_MAX = 2 ** 31 - 1
INT64_MAX = 2 ** 63 - 1
UNBOUNDED = math.inf

# ops whose integer result is one of their data operand's values (moves, views, casts
# between integer types): the result's bound is the data operands' largest
_MOVES = {
    "aten.view.default", "aten._unsafe_view.default", "aten.reshape.default",
    "aten.expand.default", "aten.clone.default", "aten.permute.default",
    "aten.transpose.int", "aten.t.default", "aten.unsqueeze.default", "aten.squeeze.dim",
    "aten.squeeze.dims", "aten.squeeze.default", "aten.slice.Tensor", "aten.select.int",
    "aten.cat.default", "aten.alias.default", "aten.flip.default", "aten.repeat.default",
    "aten.roll.default", "aten.lift_fresh_copy.default", "aten.detach.default",
    "aten._to_copy.default", "aten.to.dtype", "aten.to.dtype_layout", "aten.contiguous.default",
    "aten.split.Tensor", "aten.split_with_sizes.default", "aten.unbind.int",
    "aten.maximum.default", "aten.minimum.default", "aten.where.self", "aten.abs.default",
    "aten.neg.default", "aten.copy.default", "aten.index_put.default", "aten.scatter.src",
    "aten.slice_scatter.default", "aten.select_scatter.default", "aten.index_copy.default",
    "aten.tril.default", "aten.triu.default", "aten.amax.default", "aten.amin.default",
    "aten.max.default", "aten.min.default", "aten.diagonal.default", "aten.unfold.default",
    "aten.stack.default",
}
# ops reading integer operands by these names as positions (exact int32 moves), not values
_INDEX_OPERANDS = {
    "aten.embedding.default": ("indices",), "aten.index.Tensor": ("indices",),
    "aten.gather.default": ("index",), "aten.index_select.default": ("index",),
    "aten.scatter.src": ("index",), "aten.scatter.value": ("index",),
    "aten.scatter_add.default": ("index",), "aten.index_put.default": ("indices",),
    "aten._embedding_bag.default": ("indices", "offsets"),
    "aten.embedding_bag.padding_idx": ("indices", "offsets"),
}
# float ops whose results are within [-1, 1] whatever their inputs
_UNIT_RANGE = {
    "aten.sigmoid.default", "aten.tanh.default", "aten.sin.default", "aten.cos.default",
    "aten._softmax.default", "aten.softmax.int", "aten.erf.default", "aten.sign.default",
}
# casts: a float cast to an integer is exact as a conversion (a truncation, note 74); only
# what is computed from it needs its bound
_CASTS = {"aten._to_copy.default", "aten.to.dtype", "aten.to.dtype_layout"}
# a float op's result may be rounded up by half an ulp of bf16, the coarsest float type
_FLOAT_SLACK = 1.0 + 2.0 ** -7
# ops reading the values of their `self` at the positions of their index operand: the
# result's bound is `self`'s (the positions' own bound does not reach it)
_GATHERS = ("aten.index.Tensor", "aten.gather.default", "aten.index_select.default")


def _is_int(value: SSAValue) -> bool:
    return isinstance(value.type, TensorType) and str(value.type.element_type) in INT_ELEMENTS


def _numel(value: SSAValue) -> float:
    shape = value.type.get_shape()  # type: ignore[attr-defined]
    return UNBOUNDED if any(n < 0 for n in shape) else math.prod(shape)


def _dim_size(op: AtenOp, value: SSAValue) -> float:
    """The length of `op`'s `dim` of `value` (all of it when the op has no dim); a dynamic
    size is unbounded."""
    shape = value.type.get_shape()  # type: ignore[attr-defined]
    dim = arg(op, "dim", 0)
    size = shape[dim % len(shape)] if isinstance(dim, int) and shape else _numel(value)
    return UNBOUNDED if size < 0 else size


def _number(op: AtenOp, name: str) -> float:
    value = arg(op, name, 0)
    return abs(float(value)) if isinstance(value, (int, float)) else UNBOUNDED


def _result_bound(op: AtenOp, index: int, of: Callable[[SSAValue], float]) -> float:
    """|value| of `op`'s integer result `index`, given its operands' bounds (`of`)."""
    target = op.target.data
    names = [n.data for n in op.operand_names.data]  # type: ignore[attr-defined]
    operands = dict(zip(names, op.operands))
    tensors = list(op.operands)

    def most(values: list[SSAValue]) -> float:
        return max((of(v) for v in values), default=0.0)

    if target in _GATHERS:
        return of(operands["self"])
    if target in _MOVES:
        return most(tensors)
    if target in ("aten.constant_pad_nd.default", "aten.masked_fill.Scalar",
                  "aten.scatter.value", "aten.fill.Scalar", "aten.full_like.default",
                  "aten.new_full.default"):
        data = [operands[n] for n in ("self", "input") if n in operands and _is_int(operands[n])]
        name = "fill_value" if target.endswith(("full_like.default", "full.default")) \
            else "value"
        return max(most(data), _number(op, name))
    if target in ("aten.new_zeros.default", "aten.zeros_like.default",
                  "aten.empty_like.default"):
        return 0.0
    if target in ("aten.new_ones.default", "aten.ones_like.default"):
        return 1.0
    if target in ("aten.add.Tensor", "aten.sub.Tensor"):
        alpha = abs(float(arg(op, "alpha", 1)))  # type: ignore[arg-type]
        if len(tensors) == 2:
            return of(tensors[0]) + alpha * of(tensors[1])
        return most(tensors) + alpha * _number(op, "other")
    if target in ("aten.add.Scalar", "aten.sub.Scalar", "aten.rsub.Scalar"):
        return most(tensors) + _number(op, "other")
    if target == "aten.mul.Tensor":
        if len(tensors) == 2:
            return of(tensors[0]) * of(tensors[1])
        return most(tensors) * _number(op, "other")
    if target == "aten.mul.Scalar":
        return most(tensors) * _number(op, "other")
    if target == "aten.cumsum.default":
        return most(tensors) * _dim_size(op, tensors[0])
    if target in ("aten.sum.dim_IntList", "aten.sum.default"):
        total, kept = _numel(tensors[0]), _numel(op.results[0])
        if math.isinf(total) or math.isinf(kept):
            return UNBOUNDED
        return most(tensors) * total / max(kept, 1)
    if target in ("aten.argmax.default", "aten.argmin.default"):
        return float(_dim_size(op, tensors[0]))  # a position along the dim (or flattened)
    if target in ("aten.topk.default", "aten.sort.default", "aten.max.dim", "aten.min.dim"):
        # values (the input's, result 0) and their positions along the dim (result 1)
        return most(tensors) if index == 0 else float(_dim_size(op, tensors[0]))
    if target in ("aten.arange.default", "aten.arange.start", "aten.arange.start_step"):
        return max(_number(op, "start"), _number(op, "end"))
    if target in ("aten.full.default", "aten.scalar_tensor.default"):
        return _number(op, "fill_value" if target.startswith("aten.full") else "s")
    if target == "aten.zeros.default":
        return 0.0
    if target == "aten.ones.default":
        return 1.0
    if target in ("aten.div.Tensor_mode", "aten.floor_divide.default"):
        return of(tensors[0])  # |a // b| <= |a| for integers b != 0
    if target in ("aten.remainder.Tensor", "aten.fmod.Tensor"):
        return of(tensors[1]) if len(tensors) > 1 else UNBOUNDED
    if target in ("aten.remainder.Scalar", "aten.fmod.Scalar"):
        return _number(op, "other")
    if target in ("aten.clamp.default", "aten.clamp_min.default", "aten.clamp_max.default"):
        return most(tensors)  # a clamp never leaves the larger of its input and bounds
    if target in ("aten.floor.default", "aten.ceil.default", "aten.round.default",
                  "aten.trunc.default"):
        return most(tensors) + 1.0
    if target in _UNIT_RANGE:
        return 1.0
    if target in ("aten.div.Tensor", "aten.div.Scalar") and len(tensors) == 1:
        divisor = _number(op, "other")
        return most(tensors) / divisor if divisor > 0 else UNBOUNDED
    if target == "aten.sqrt.default":
        return math.sqrt(most(tensors))
    if target == "aten.exp.default":
        bound = most(tensors)
        return math.exp(bound) if bound < 700 else UNBOUNDED
    return UNBOUNDED


def _is_float(value: SSAValue) -> bool:
    return isinstance(value.type, TensorType) and str(value.type.element_type) in FLOAT_ELEMENTS


def _bounds(fn: func.FuncOp, limit: float) -> dict[SSAValue, float]:
    """|value| of every integer and float value of `fn`, its inputs within `limit`."""
    bounds: dict[SSAValue, float] = {}

    def of(value: SSAValue) -> float:
        if value in bounds:
            return bounds[value]
        if not _is_int(value) and not _is_float(value):
            return 1.0 if str(value.type.element_type) == "i1" else UNBOUNDED  # type: ignore[attr-defined]
        if isinstance(value, BlockArgument):
            return limit
        owner = value.owner
        if isinstance(owner, ParamOp):
            attr = owner.attributes.get("spyre.int_bound")
            if isinstance(attr, IntegerAttr):
                return float(attr.value.data)
            scalar = owner.properties.get("value")  # a float scalar the importer keeps
            if isinstance(scalar, DenseIntOrFPElementsAttr):
                return float(abs(scalar.get_values()[0]))
        return UNBOUNDED  # an op outside the graph's ATen ops (not reached in order)

    for op in fn.walk():
        if isinstance(op, AtenOp):
            for result in op.results:
                if _is_int(result):
                    bounds[result] = _result_bound(op, result.index, of)
                elif _is_float(result):
                    bounds[result] = _result_bound(op, result.index, of) * _FLOAT_SLACK
    return bounds


def _converted(result: OpResult) -> bool:
    """Whether `result` is a float cast to an integer: exact as a conversion."""
    owner = result.owner
    return isinstance(owner, AtenOp) and owner.target.data in _CASTS and any(
        _is_float(v) for v in owner.operands)


# ops whose integer result does not depend on how large their operands' values are:
# positions along a dim, and tensors made in an operand's shape
_POSITIONS = {"aten.argmax.default", "aten.argmin.default"}
_POSITION_RESULTS = {"aten.topk.default", "aten.sort.default", "aten.max.dim",
                     "aten.min.dim"}  # result 1
_SHAPED = {"aten.new_zeros.default", "aten.zeros_like.default", "aten.empty_like.default",
           "aten.new_ones.default", "aten.ones_like.default", "aten.full_like.default",
           "aten.new_full.default"}


def _ignores_magnitudes(value: OpResult) -> bool:
    owner = value.owner
    assert isinstance(owner, AtenOp)
    target = owner.target.data
    return target in _POSITIONS or target in _SHAPED or (
        target in _POSITION_RESULTS and value.index == 1)


def _float_inputs(results: list[OpResult]) -> list[BlockArgument]:
    """The float inputs `results` are computed from through values that carry magnitudes
    (not through booleans, positions or tensors made in an operand's shape: a comparison's
    0/1, an argmax, a zeros_like do not depend on how large their operands are)."""
    found: list[BlockArgument] = []
    seen: set[SSAValue] = set()
    stack: list[SSAValue] = list(results)
    while stack:
        value = stack.pop()
        if value in seen or not (_is_int(value) or _is_float(value)):
            continue
        seen.add(value)
        if isinstance(value, BlockArgument):
            if _is_float(value):
                found.append(value)
        elif isinstance(value, OpResult) and isinstance(value.owner, AtenOp) \
                and not _ignores_magnitudes(value):
            stack.extend(value.owner.operands)
    return sorted(found, key=lambda a: a.index)


def _computed(fn: func.FuncOp) -> tuple[list[OpResult], list[BlockArgument]]:
    """The integer results of ATen ops whose value matters (read by anything but an index
    operand), and the integer inputs read as values (not only as positions)."""
    results: list[OpResult] = []
    read_inputs: list[BlockArgument] = []
    for op in fn.walk():
        if not isinstance(op, AtenOp):
            continue
        names = [n.data for n in op.operand_names.data]  # type: ignore[attr-defined]
        positions = _INDEX_OPERANDS.get(op.target.data, ())
        for name, value in zip(names, op.operands):
            if isinstance(value, BlockArgument) and _is_int(value) and name not in positions \
                    and value not in read_inputs:
                read_inputs.append(value)
        results += [r for r in op.results if _is_int(r) and r.uses]
    return results, read_inputs


def _first_inexact(bounds: dict[SSAValue, float], results: list[OpResult]) -> OpResult | None:
    """The first of `results` whose bound passes 2^24."""
    return next((r for r in results if not bounds[r] <= EXACT), None)


def int_input_limit(module: ModuleOp) -> None:
    """Record on each graph function the limit its inputs must keep (`spyre.int_limits`:
    argument index -> largest |value|; integer inputs read as values, and float inputs
    that integers are computed from through a cast), or refuse a program whose device
    integers exceed 2^24 whatever the inputs are."""
    for fn in [o for o in module.walk() if isinstance(o, func.FuncOp)]:
        if fn.body.blocks.first is None or plan.is_kernel(fn):
            continue
        results, read_inputs = _computed(fn)
        # a float cast to an integer is exact itself: only what is computed from it is
        # checked. Values without a bound (computed by an op without a rule, or from a
        # float no rule bounds: a log) are not guarded yet (docs/numerics.md, note 85)
        at_zero = _bounds(fn, 0.0)
        results = [r for r in results if math.isfinite(at_zero[r]) and not _converted(r)]
        if not results and not read_inputs:
            continue
        bad = _first_inexact(at_zero, results)
        if bad is not None:
            owner = bad.owner
            assert isinstance(owner, AtenOp)
            raise CompileError(
                f"{describe(owner)}: its integer result reaches {at_zero[bad]:.0f} in "
                "magnitude even with integer inputs of 0; the device computes integers as "
                "f32, exact only up to 2^24 = 16777216, so the result would differ from "
                "eager's. Compute it in float (`.float()` before the arithmetic) or on the "
                "host, and pass the result as an input")
        float_inputs = _float_inputs(results)
        # the largest input limit whose bounds all fit: an integer input is itself an f32
        # value (at most 2^24); a float input may be as large as an int64 holds
        most = INT64_MAX if float_inputs else INT32_MAX
        lo, hi = 0, most
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if _first_inexact(_bounds(fn, float(mid)), results) is None and (
                    not read_inputs or mid <= EXACT):
                lo = mid
            else:
                hi = mid - 1
        if lo >= most:
            continue  # nothing computed depends on the inputs' values
        fn.attributes["spyre.int_limits"] = DictionaryAttr(
            {str(a.index): IntegerAttr(lo, i64) for a in [*read_inputs, *float_inputs]})
