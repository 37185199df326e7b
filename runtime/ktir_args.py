"""The arrays a caller passes to a KTIR kernel, checked against the kernel's views of them.

An array passed for an `index` (pointer) parameter is copied into LPDDR and the kernel gets
its offset in elements; from then on the kernel reads whatever bytes its views name. So a
float32 array behind an f16 view, or an 8x8 array behind a 96x64 view, would run to the end
and return wrong numbers. `check_array_argument` refuses them before anything runs, from
the views the kernel builds on the parameter (`ktdp.construct_memory_view` whose offset is
the parameter, or the parameter plus a constant: pointer arithmetic):

- dtype: every view's element type must be the array's dtype (a view of another type would
  also count the offset in the wrong unit);
- shape: a parameter viewed at offset 0 by dense row-major views of one static shape is a
  tensor of that shape, and the array must have exactly that shape (rank included);
  otherwise (parts at constant offsets, strided views) the array must hold every element
  the views can reach.

Views whose sizes, strides or offsets are only known at run time (symbolic sizes, offsets
computed from tile ids) are not checked here; the interpreter checks every access against
the array its view starts in (`ktdp_values.MemView.addresses`), so they cannot read another
array's bytes either.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import DYNAMIC_INDEX, IntegerAttr, MemRefType
from xdsl.dialects.func import FuncOp
from xdsl.ir import BlockArgument, SSAValue

from spyrec.dialects.ktdp import ConstructMemoryViewOp
from spyrec.dialects.ktdp_values import KtirError, numpy_dtype, view_reach


@dataclass(frozen=True)
class ViewUse:
    """A global memory view built on a pointer parameter."""

    op: ConstructMemoryViewOp
    delta: int | None  # its offset minus the parameter's, in elements; None if not constant

    @property
    def type(self) -> MemRefType:
        return self.op.result.type

    def static(self) -> tuple[list[int], list[int]] | None:
        """(sizes, strides) when both are static."""
        sizes = [int(s) for s in self.op.static_sizes.get_values()]
        strides = [int(s) for s in self.op.static_strides.get_values()]
        if DYNAMIC_INDEX in sizes or DYNAMIC_INDEX in strides:
            return None
        return sizes, strides

    def describe(self) -> str:
        name = f"%{self.op.result.name_hint} " if self.op.result.name_hint else ""
        at = f" at element offset {self.delta}" if self.delta else ""
        return f"view {name}({self.type}{at})"


def _constant(value: SSAValue) -> int | None:
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return int(owner.value.value.data)
    return None


def pointer_root(offset: SSAValue) -> BlockArgument | None:
    """The function parameter `offset` is, or derives from by adding or subtracting index
    values (pointer arithmetic); None if it derives from none or from two."""
    owner = offset.owner
    if isinstance(offset, BlockArgument):
        return offset if isinstance(offset.block.parent_op(), FuncOp) else None
    if isinstance(owner, arith.SubiOp):
        return pointer_root(owner.lhs)
    if isinstance(owner, arith.AddiOp):
        roots = [r for r in map(pointer_root, owner.operands) if r is not None]
        return roots[0] if len(roots) == 1 else None
    return None


def views_of(param: SSAValue) -> list[ViewUse]:
    """The global memory views whose offset is `param`, or `param` plus or minus index
    values (constants give the view's `delta`; anything else leaves it unknown)."""
    found: list[ViewUse] = []
    pending: list[tuple[SSAValue, int | None]] = [(param, 0)]
    seen: set[SSAValue] = set()
    while pending:
        value, delta = pending.pop()
        if value in seen:
            continue
        seen.add(value)
        for use in value.uses:
            op = use.operation
            if isinstance(op, ConstructMemoryViewOp):
                if op.offset is value and op.memory_space.kind == "global":
                    found.append(ViewUse(op, delta))
            elif isinstance(op, arith.AddiOp | arith.SubiOp):
                other = op.operands[1 - use.index]
                if isinstance(op, arith.SubiOp) and use.index == 1:
                    continue  # a constant minus the pointer is no pointer into the array
                step = _constant(other)
                sign = -1 if isinstance(op, arith.SubiOp) else 1
                moved = None if delta is None or step is None else delta + sign * step
                pending.append((op.result, moved))
    found.sort(key=lambda v: (v.delta is None, v.delta or 0))
    return found


def _shape(shape: tuple[int, ...] | list[int]) -> str:
    return "x".join(map(str, shape)) if len(shape) else "0-d"


def check_array_argument(kernel: str, name: str, param: SSAValue, array: np.ndarray) -> None:
    """Raise `KtirError` unless `array` fits every view `kernel` builds on parameter `param`.

    The message names the kernel, the parameter, what the kernel needs and what was given.
    """
    views = views_of(param)
    if not views:
        return
    given = f"{_shape(array.shape)} {array.dtype}"
    for view in views:
        dtype: np.dtype[Any] = numpy_dtype(view.type.element_type)
        if dtype != array.dtype:
            raise KtirError(
                f"@{kernel}: argument %{name} is {given}, but the kernel reads it through "
                f"{view.describe()} as {view.type.element_type}: pass {dtype} values (read as "
                f"{view.type.element_type}, the bytes of {array.dtype} values are other numbers, "
                "and the kernel would count the array's offset in the wrong unit)"
            )
    shapes = [v.static() for v in views]
    whole = {tuple(s[0]) for s in shapes if s is not None}
    if all(
        v.delta == 0 and s is not None and s[1] == _dense(s[0]) for v, s in zip(views, shapes)
    ) and len(whole) == 1:
        (needed,) = whole
        if tuple(array.shape) != needed:
            raise KtirError(
                f"@{kernel}: argument %{name} is {given}, but the kernel views it through "
                f"{views[0].describe()}: pass an array of shape {_shape(needed)} and dtype "
                f"{array.dtype}"
            )
        return
    for view, static in zip(views, shapes):
        if view.delta is None or static is None:
            continue  # known at run time only: the interpreter checks every access
        low, high = view_reach(*static)
        first, last = view.delta + low, view.delta + high
        if first < 0 or last >= array.size:
            reach = f"element {first}" if first < 0 else f"element {last}"
            raise KtirError(
                f"@{kernel}: argument %{name} is {given}, {array.size} elements, but the "
                f"kernel's {view.describe()} reaches {reach} of it: pass at least "
                f"{max(last + 1, 0)} {array.dtype} elements, laid out as the kernel's views "
                "expect"
            )


def _dense(sizes: list[int]) -> list[int]:
    """Row-major strides of a dense array of `sizes`."""
    return [math.prod(sizes[i + 1 :]) for i in range(len(sizes))]
