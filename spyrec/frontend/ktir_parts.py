"""A distributed memory view that is one tensor cut into blocks, made a view of that tensor.

Hand-written kernels (ktir-cpu's ffn_swiglu_4core, rmsnorm_4core_2x2) address a weight's
column blocks as parts of a `ktdp.construct_distributed_memory_view`, each part a view at
the pointer plus the block's first element, its coordinate set the block's global
coordinates:

    %p1_base = arith.addi %w_ptr, %c256 : index
    %p1 = ktdp.construct_memory_view %p1_base, sizes: [256, 256], strides: [1024, 1]
          {coordinate_set = (d0, d1) : (0 <= d0 <= 255, 256 <= d1 <= 511), ...}
    %w = ktdp.construct_distributed_memory_view(%p0, %p1, ...) : memref<256x1024xf16>

`merge_block_views(kernel)` replaces such a view by one `ktdp.construct_memory_view` of the
whole tensor at the pointer (the distributed type's sizes, the parts' strides, the box from
0). It is exact: a part's element c lives at `base + (c - origin) . strides` (docs/ktir.md
§4), and when every part's base is the pointer plus `origin . strides` (in elements, the
offset written as constants added to the pointer), that is `pointer + c . strides`, the
address the whole view gives; the parts must be boxes without symbols in global memory,
disjoint, with one set of strides, and cover the distributed view's box exactly, so the
whole view accepts the same coordinates. A distributed view that does not fit is left as
written (spyre-legalize-ktir refuses it by name).
"""

from __future__ import annotations

import math

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IntegerAttr, MemRefType
from xdsl.ir import BlockArgument, Operation, SSAValue

from spyrec.dialects.ktdp import ConstructDistributedMemoryViewOp, ConstructMemoryViewOp
from spyrec.dialects.ktdp_affine import is_box
from spyrec.dialects.ktdp_values import set_bounds
from spyrec.passes.ktir.ktir_builder import box_set


def merge_block_views(kernel: func.FuncOp) -> None:
    """Replace each distributed view of `kernel` that is one tensor's blocks (module
    docstring) by a view of the whole tensor; the part views and offsets left unused go."""
    for op in [o for o in kernel.walk() if isinstance(o, ConstructDistributedMemoryViewOp)]:
        pointer = _one_tensor(op)
        if not isinstance(pointer, BlockArgument) or pointer.block is not kernel.body.block:
            continue
        first = op.parts[0].owner
        assert isinstance(first, ConstructMemoryViewOp)
        rtype = op.result.type
        assert isinstance(rtype, MemRefType)
        sizes = list(rtype.get_shape())
        strides = [int(s) for s in first.static_strides.get_values()]
        whole = ConstructMemoryViewOp(pointer, sizes, strides, rtype, box_set(sizes),
                                      first.memory_space)
        whole.result.name_hint = op.result.name_hint
        assert op.parent is not None
        op.parent.insert_op_before(whole, op)
        op.result.replace_all_uses_with(whole.result)
        parts = list(op.parts)
        _erase_unused(op)
        for part in parts:
            _erase_unused(part.owner)


def _one_tensor(op: ConstructDistributedMemoryViewOp) -> SSAValue | None:
    """The pointer argument every part of `op` is a block of, or None if `op` is not one
    tensor's blocks (module docstring)."""
    rtype = op.result.type
    assert isinstance(rtype, MemRefType)
    whole = [(0, n - 1) for n in rtype.get_shape()]
    pointers: set[SSAValue] = set()
    strides: set[tuple[int, ...]] = set()
    boxes: list[list[tuple[int, int]]] = []
    for part in op.parts:
        view = part.owner
        if not isinstance(view, ConstructMemoryViewOp) or view.sizes or view.strides \
                or view.memory_space.kind != "global":
            return None
        coordinates = view.coordinate_set.data
        box = set_bounds(coordinates)
        sizes = [int(n) for n in view.static_sizes.get_values()]
        if box is None or coordinates.num_symbols or not is_box(coordinates) \
                or [high - low + 1 for low, high in box] != sizes \
                or any(low < lo or high > hi for (low, high), (lo, hi) in zip(box, whole)):
            return None
        stride = tuple(int(s) for s in view.static_strides.get_values())
        pointer, offset = _pointer_plus(view.offset)
        if pointer is None or not _at_origin(offset, box, stride):
            return None
        pointers.add(pointer)
        strides.add(stride)
        boxes.append(box)
    covered = sum(math.prod(high - low + 1 for low, high in box) for box in boxes)
    if len(pointers) != 1 or len(strides) != 1 or covered != math.prod(rtype.get_shape()) \
            or any(_overlap(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:]):
        return None
    return pointers.pop()


def _at_origin(offset: int, box: list[tuple[int, int]], strides: tuple[int, ...]) -> bool:
    """Whether a part `offset` elements past the pointer starts where its box's lowest point
    lies in the whole tensor (`origin . strides`)."""
    return offset == sum(low * s for (low, _), s in zip(box, strides))


def _overlap(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> bool:
    return all(lo1 <= hi2 and lo2 <= hi1 for (lo1, hi1), (lo2, hi2) in zip(a, b))


def _pointer_plus(value: SSAValue) -> tuple[SSAValue | None, int]:
    """(the kernel argument, the constant elements added to it) that `value` is, through
    `arith.addi` of integer constants; (None, 0) for anything else."""
    if isinstance(value, BlockArgument):
        return value, 0
    op = value.owner
    if not isinstance(op, arith.AddiOp):
        return None, 0
    for pointer_side, constant_side in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
        constant = constant_side.owner
        if isinstance(constant, arith.ConstantOp) and isinstance(constant.value, IntegerAttr):
            pointer, offset = _pointer_plus(pointer_side)
            if pointer is not None:
                return pointer, offset + constant.value.value.data
    return None, 0


def _erase_unused(op: Operation | object) -> None:
    """Erase `op` if nothing reads its results, then the `arith.addi` offsets it read."""
    if not isinstance(op, Operation) or any(r.uses for r in op.results):
        return
    operands = list(op.operands)
    op.detach()
    op.erase()
    for value in operands:
        if isinstance(value.owner, arith.AddiOp):
            _erase_unused(value.owner)
