"""Whole-tensor evaluation of linalg structured ops for the KTIR interpreter.

A structured op (`linalg.generic`, the named ops, `linalg.reduce`) is a scalar body over an
iteration space, with one indexing map per operand. The interpreter never loops over
elements in Python. It lays every operand out in the iteration space (one axis per loop,
size 1 where the operand does not vary, which NumPy broadcasts) and runs the body's ops once
on those arrays. Reductions:

- `acc = combine(acc, e)` with a known combiner (addf, maxnumf, ...) and `e` free of the
  accumulator: `e` is evaluated on the whole space and folded with the combiner's ufunc
  along the reduction axes; if `e` is a product of (converted) inputs, one batched matmul
  does it (matmul, batch_matmul, contraction generics) in the accumulator's type.
- any other body: a loop over the points of the reduction axes only, each step vectorised
  over the parallel axes.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import ml_dtypes
import numpy as np
from xdsl.interpreter import Interpreter
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.ir.affine import AffineConstantExpr, AffineDimExpr, AffineMap

from spyrec.dialects.ktdp_values import KtirError, eval_exprs, numpy_dtype

if TYPE_CHECKING:
    from spyrec.runtime.ktir_ops import KtirFunctions

# Combiners whose fold along an axis is a NumPy ufunc reduction.
REDUCERS: dict[str, np.ufunc] = {
    "arith.addf": np.add,
    "arith.addi": np.add,
    "arith.mulf": np.multiply,
    "arith.muli": np.multiply,
    "arith.maxnumf": np.fmax,
    "arith.minnumf": np.fmin,
    "arith.maximumf": np.maximum,
    "arith.minimumf": np.minimum,
    "arith.maxsi": np.maximum,
    "arith.minsi": np.minimum,
    "arith.maxui": np.maximum,
    "arith.minui": np.minimum,
    "arith.andi": np.bitwise_and,
    "arith.ori": np.bitwise_or,
    "arith.xori": np.bitwise_xor,
}

# Conversions a contraction operand may pass through between its block argument and the product.
_CONVERSIONS = frozenset(
    {"arith.extf", "arith.truncf", "arith.extsi", "arith.extui", "arith.sitofp", "arith.uitofp"}
)
_PRODUCTS = frozenset({"arith.mulf", "arith.muli"})
# Combiners whose fold rounds at every step (max and min are exact in any precision).
_ROUNDING = frozenset({"arith.addf", "arith.mulf"})


def accumulator_dtype(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """The type a fold of `dtype` values accumulates in: f32 for f16 and bf16 (docs/ktir.md:
    reductions accumulate in f32 and round once to the result type), else `dtype` itself."""
    if dtype == np.float16 or dtype == ml_dtypes.bfloat16:
        return np.dtype(np.float32)
    return dtype


@dataclass
class Structured:
    """What the engine needs of a structured op."""

    op: Operation
    body: Block
    maps: list[AffineMap]
    reduction: list[bool]  # per loop
    inputs: list[Any]
    inits: list[np.ndarray]
    init_types: list[Any]


def _is_simple(amap: AffineMap) -> bool:
    """Results are distinct loop dims or constants: the operand is a sliced, permuted view."""
    dims = [r.position for r in amap.results if isinstance(r, AffineDimExpr)]
    return len(set(dims)) == len(dims) and all(
        isinstance(r, AffineDimExpr | AffineConstantExpr) for r in amap.results
    )


def loop_ranges(spec: Structured) -> list[int]:
    """The extent of every loop, read off the operands each loop indexes on its own."""
    ranges: list[int | None] = [None] * spec.maps[0].num_dims
    for value, amap in zip([*spec.inputs, *spec.inits], spec.maps, strict=True):
        shape = np.shape(value)
        for position, result in enumerate(amap.results):
            if isinstance(result, AffineDimExpr) and ranges[result.position] is None:
                ranges[result.position] = shape[position]
    if any(r is None for r in ranges):
        missing = [d for d, r in enumerate(ranges) if r is None]
        raise KtirError(f"{spec.op.name}: no operand gives the extent of loops {missing}")
    return cast(list[int], ranges)


def to_space(value: Any, amap: AffineMap, ranges: Sequence[int]) -> Any:
    """`value` laid out over the iteration space (size-1 axes where it does not vary)."""
    if not isinstance(value, np.ndarray) or not amap.results:
        return value
    if _is_simple(amap):
        index = tuple(
            r.value if isinstance(r, AffineConstantExpr) else slice(None) for r in amap.results
        )
        sliced = value[index]
        dims = [r.position for r in amap.results if isinstance(r, AffineDimExpr)]
        arranged = sliced.transpose(np.argsort(dims)) if dims else sliced
        shape = [1] * len(ranges)
        for d in dims:
            shape[d] = ranges[d]
        return arranged.reshape(shape)
    grid = np.ogrid[tuple(slice(0, r) for r in ranges)] if ranges else []
    index = tuple(np.asarray(v) for v in eval_exprs(amap.results, list(grid)))
    return value[index]


def from_space(result: Any, amap: AffineMap, ranges: Sequence[int], init: np.ndarray) -> np.ndarray:
    """The output tensor holding `result` (given over the iteration space) at `amap`."""
    if _is_simple(amap) and all(isinstance(r, AffineDimExpr) for r in amap.results):
        dims = [cast(AffineDimExpr, r).position for r in amap.results]
        full = [ranges[d] if d in dims else 1 for d in range(len(ranges))]
        spread = np.broadcast_to(result, full)
        ordered = sorted(dims)
        compact = spread.reshape([ranges[d] for d in ordered])
        placed = compact.transpose([ordered.index(d) for d in dims])
        return np.array(placed, dtype=init.dtype)
    out = np.array(init, copy=True)
    grid = np.ogrid[tuple(slice(0, r) for r in ranges)] if ranges else []
    index = tuple(np.asarray(v) for v in eval_exprs(amap.results, list(grid)))
    target = np.broadcast_arrays(*index, np.asarray(result))
    out[tuple(target[:-1])] = target[-1]
    return out


def _yield_values(body: Block) -> Sequence[SSAValue]:
    terminator = body.last_op
    if terminator is None or terminator.name != "linalg.yield":
        raise KtirError("a structured op body must end with linalg.yield")
    return terminator.operands


def _depends_on(value: SSAValue, forbidden: set[SSAValue], body: Block) -> bool:
    """Whether `value` is computed, inside `body`, from any of `forbidden`."""
    pending, seen = [value], set()
    while pending:
        current = pending.pop()
        if current in forbidden:
            return True
        if current in seen:
            continue
        seen.add(current)
        owner = current.owner
        if isinstance(owner, Operation) and owner.parent_block() is body:
            pending.extend(owner.operands)
    return False


def _fold_pattern(
    spec: Structured,
) -> list[tuple[Operation, bool, SSAValue]] | None:
    """Per output: (combiner op, whether acc is its first operand, the folded value).

    None unless every output is `combine(acc, e)` with a ufunc combiner, the accumulator
    used nowhere else, and `e` free of all accumulators.
    """
    args = spec.body.args
    accs = list(args[len(spec.inputs) :])
    terminator = spec.body.last_op
    found: list[tuple[Operation, bool, SSAValue]] = []
    for acc, value in zip(accs, _yield_values(spec.body), strict=True):
        combiner = value.owner
        if not isinstance(combiner, Operation) or combiner.name not in REDUCERS:
            return None
        lhs, rhs = combiner.operands
        if lhs is acc and rhs is not acc:
            acc_first, folded = True, rhs
        elif rhs is acc and lhs is not acc:
            acc_first, folded = False, lhs
        else:
            return None
        if any(use.operation is not combiner for use in acc.uses):
            return None
        if any(use.operation is not terminator for use in combiner.results[0].uses):
            return None
        if _depends_on(folded, set(accs), spec.body):
            return None
        found.append((combiner, acc_first, folded))
    return found


def _conversion_chain(
    value: SSAValue, body: Block, num_inputs: int
) -> tuple[int, list[Operation]] | None:
    """(input position, conversions innermost first) if `value` is a converted input."""
    chain: list[Operation] = []
    while isinstance(value.owner, Operation):
        owner = value.owner
        if owner.name not in _CONVERSIONS or owner.parent_block() is not body:
            return None
        chain.append(owner)
        value = owner.operands[0]
    if not isinstance(value, BlockArgument) or value.block is not body or value.index >= num_inputs:
        return None
    return value.index, chain[::-1]


class StructuredEngine:
    """Runs structured ops for one core; body ops go through the core's interpreter."""

    def __init__(self, functions: KtirFunctions, interpreter: Interpreter):
        self.functions = functions
        self.interpreter = interpreter

    def run(self, spec: Structured) -> list[np.ndarray]:
        ranges = loop_ranges(spec)
        reduced = [d for d, is_red in enumerate(spec.reduction) if is_red]
        num_inputs = len(spec.inputs)
        in_maps, out_maps = spec.maps[:num_inputs], spec.maps[num_inputs:]
        if not reduced:
            args = [to_space(v, m, ranges) for v, m in zip(spec.inputs, in_maps, strict=True)]
            args += [to_space(v, m, ranges) for v, m in zip(spec.inits, out_maps, strict=True)]
            results = self._body(spec.body, args, ranges, None)
            return [
                from_space(r, m, ranges, init)
                for r, m, init in zip(results, out_maps, spec.inits, strict=True)
            ]
        pattern = _fold_pattern(spec)
        if pattern is not None:
            return self._fold(spec, ranges, reduced, pattern)
        return self._loop_reductions(spec, ranges, reduced)

    def _body(
        self,
        body: Block,
        args: Sequence[Any],
        ranges: Sequence[int],
        fixed: dict[int, int] | None,
        wanted: Sequence[SSAValue] | None = None,
        skip: frozenset[Operation] = frozenset(),
    ) -> list[Any]:
        """Run `body` on `args`; return the yielded values (or the values of `wanted`)."""
        interpreter = self.interpreter
        previous = self.functions.linalg_indices
        self.functions.linalg_indices = _index_arrays(ranges, fixed)
        interpreter.push_scope("linalg")
        try:
            interpreter.set_values(zip(body.args, args, strict=True))
            for op in body.ops:
                if op is body.last_op:
                    break
                if op in skip:
                    continue
                values = interpreter.run_op(op, interpreter.get_values(op.operands))
                interpreter.set_values(zip(op.results, values, strict=True))
            return list(
                interpreter.get_values(wanted if wanted is not None else _yield_values(body))
            )
        finally:
            interpreter.pop_scope()
            self.functions.linalg_indices = previous

    def _fold(
        self,
        spec: Structured,
        ranges: list[int],
        reduced: list[int],
        pattern: list[tuple[Operation, bool, SSAValue]],
    ) -> list[np.ndarray]:
        num_inputs = len(spec.inputs)
        in_maps, out_maps = spec.maps[:num_inputs], spec.maps[num_inputs:]
        folded_values = [folded for _, _, folded in pattern]
        contractions = [
            self._contraction(spec, ranges, reduced, folded, combiner)
            for combiner, _, folded in pattern
        ]
        pending = [v for v, c in zip(folded_values, contractions, strict=True) if c is None]
        evaluated: dict[SSAValue, Any] = {}
        if pending:
            args = [to_space(v, m, ranges) for v, m in zip(spec.inputs, in_maps, strict=True)]
            args += [None] * len(spec.inits)
            combiners = frozenset(combiner for combiner, _, _ in pattern)
            values = self._body(spec.body, args, ranges, None, pending, combiners)
            evaluated = dict(zip(pending, values, strict=True))
        outputs = []
        for (combiner, acc_first, folded), contraction, init, amap in zip(
            pattern, contractions, spec.inits, out_maps, strict=True
        ):
            if contraction is not None:
                partial = contraction
            else:
                spread = np.broadcast_to(evaluated[folded], ranges)
                if combiner.name in _ROUNDING:  # a sum or product of 16-bit floats: in f32
                    spread = spread.astype(accumulator_dtype(spread.dtype), copy=False)
                partial = REDUCERS[combiner.name].reduce(spread, axis=tuple(reduced), keepdims=True)
                self.functions.charge_vector(combiner, int(spread.size))
            acc = to_space(init, amap, ranges)
            operands = (acc, partial) if acc_first else (partial, acc)
            (combined,) = self.interpreter.run_op(combiner, operands)
            outputs.append(from_space(combined, amap, ranges, init))
        return outputs

    def _contraction(
        self,
        spec: Structured,
        ranges: list[int],
        reduced: list[int],
        folded: SSAValue,
        combiner: Operation,
    ) -> np.ndarray | None:
        """`folded` summed over the reduction axes by one matmul, if it is a product of inputs."""
        if combiner.name not in ("arith.addf", "arith.addi"):
            return None
        product = folded.owner
        if not isinstance(product, Operation) or product.name not in _PRODUCTS:
            return None
        num_inputs = len(spec.inputs)
        chains = [_conversion_chain(v, spec.body, num_inputs) for v in product.operands]
        if any(c is None for c in chains):
            return None
        letters = "abcdefghijklmnopqrstuvwxyz"
        operands, subscripts = [], []
        used: set[int] = set()
        for position, conversions in cast(list[tuple[int, list[Operation]]], chains):
            amap = spec.maps[position]
            if not all(isinstance(r, AffineDimExpr) for r in amap.results) or not _is_simple(amap):
                return None
            value = spec.inputs[position]
            for conversion in conversions:
                (value,) = self.interpreter.run_op(conversion, (value,))
            operands.append(np.asarray(value))
            dims = [cast(AffineDimExpr, r).position for r in amap.results]
            used.update(dims)
            subscripts.append("".join(letters[d] for d in dims))
        kept = [d for d in range(len(ranges)) if d not in reduced]
        if not set(kept) <= used or not set(reduced) <= used:
            return None
        # products of 16-bit floats are exact in f32, so computing them there and summing
        # in f32 is "accumulate in f32"; the combiner rounds the sum once to the result type
        dtype = accumulator_dtype(numpy_dtype(product.results[0].type))
        a, b = (o.astype(dtype, copy=False) for o in operands)
        summed = contract(subscripts[0], subscripts[1], "".join(letters[d] for d in kept), a, b)
        self.functions.charge_matmul(2 * int(np.prod(ranges, dtype=np.int64)))
        shape = [1 if d in reduced else ranges[d] for d in range(len(ranges))]
        return summed.reshape(shape).astype(dtype, copy=False)

    def _loop_reductions(
        self, spec: Structured, ranges: list[int], reduced: list[int]
    ) -> list[np.ndarray]:
        num_inputs = len(spec.inputs)
        in_maps, out_maps = spec.maps[:num_inputs], spec.maps[num_inputs:]
        full_inputs = [to_space(v, m, ranges) for v, m in zip(spec.inputs, in_maps, strict=True)]
        accs = [to_space(v, m, ranges) for v, m in zip(spec.inits, out_maps, strict=True)]
        for point in itertools.product(*(range(ranges[d]) for d in reduced)):
            fixed = dict(zip(reduced, point, strict=True))
            args = [_fix(v, fixed) for v in full_inputs]
            accs = self._body(spec.body, [*args, *accs], ranges, fixed)
        return [
            from_space(a, m, ranges, init)
            for a, m, init in zip(accs, out_maps, spec.inits, strict=True)
        ]


def contract(sub_a: str, sub_b: str, sub_out: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`np.einsum(f"{sub_a},{sub_b}->{sub_out}", a, b)` as one batched matmul (BLAS speed).

    Letters in both operands and the output are batch axes, in one operand and the output
    are rows or columns, in both operands only are contracted; a letter in one operand only
    is summed away first.
    """
    for name, sub, other in (("a", sub_a, sub_b), ("b", sub_b, sub_a)):
        lonely = [c for c in sub if c not in other and c not in sub_out]
        if lonely:
            array = a if name == "a" else b
            array = array.sum(axis=tuple(sub.index(c) for c in lonely))
            kept = "".join(c for c in sub if c not in lonely)
            if name == "a":
                a, sub_a = array, kept
            else:
                b, sub_b = array, kept
    batch = [c for c in sub_out if c in sub_a and c in sub_b]
    rows = [c for c in sub_out if c in sub_a and c not in sub_b]
    cols = [c for c in sub_out if c in sub_b and c not in sub_a]
    inner = [c for c in sub_a if c in sub_b and c not in sub_out]
    extent = dict(zip(sub_a, a.shape, strict=True)) | dict(zip(sub_b, b.shape, strict=True))

    def size(letters: list[str]) -> int:
        return int(np.prod([extent[c] for c in letters], dtype=np.int64))

    left = a.transpose([sub_a.index(c) for c in (*batch, *rows, *inner)])
    right = b.transpose([sub_b.index(c) for c in (*batch, *inner, *cols)])
    lhs = left.reshape(size(batch), size(rows), size(inner))
    rhs = right.reshape(size(batch), size(inner), size(cols))
    # Small products: einsum's own loop. Waking BLAS threads costs milliseconds on a busy
    # machine, more than the whole product below about a million multiply-adds.
    if lhs.size * rhs.shape[-1] < 1 << 20:
        product = np.einsum("bik,bkj->bij", lhs, rhs, optimize=False)
    else:
        product = np.matmul(lhs, rhs)
    laid_out = product.reshape([extent[c] for c in (*batch, *rows, *cols)])
    order = [*batch, *rows, *cols]
    return laid_out.transpose([order.index(c) for c in sub_out])


def _fix(value: Any, fixed: dict[int, int]) -> Any:
    """`value` (over the iteration space) at fixed points of some axes (kept as size 1)."""
    if not isinstance(value, np.ndarray) or value.ndim == 0:
        return value
    index = tuple(
        slice(point, point + 1) if axis in fixed and value.shape[axis] > 1 else slice(None)
        for axis, point in ((a, fixed.get(a, 0)) for a in range(value.ndim))
    )
    return value[index]


def _index_arrays(ranges: Sequence[int], fixed: dict[int, int] | None) -> list[Any]:
    """What `linalg.index` d returns: the loop counter of axis d over the space."""
    arrays: list[Any] = []
    for d, extent in enumerate(ranges):
        if fixed is not None and d in fixed:
            arrays.append(fixed[d])
            continue
        shape = [1] * len(ranges)
        shape[d] = extent
        arrays.append(np.arange(extent, dtype=np.int64).reshape(shape))
    return arrays
