"""Pointer arithmetic on a KTIR kernel's pointer arguments, as Triton emits it, made views of
the whole tensor.

    %offs = arith.muli %pid, %c128 : index
    %row_ptr = arith.addi %in_ptr, %offs : index
    %row = ktdp.construct_memory_view %row_ptr, sizes: [1, 128], strides: [128, 1] ...
    %t = ktdp.construct_access_tile %row[%c0, %c0] ...

`rebase_pointer_views(kernel, grid)` rewrites every view built at `%ptr + %off` (a
pointer argument plus an offset in elements) as a view of the whole tensor at `%ptr`, and
moves the offset into the rows of its access tiles: `%off` is evaluated on every core of
`grid` (it may depend on the core's ids and constants only), each value must be a whole
number of rows (a multiple of the view's leading stride) and non-negative, and the tiles'
leading subscript gains that row shift: computed from the ids by multiplications and
additions when it is affine in them, else (a core group's `(pid / 4) * 128`) the offset
divided by the stride (`arith.divui`, exact on every core), which the back end folds per core
(design note 94). The whole tensor has the views'
trailing sizes and strides and as many rows as the furthest view reaches on any core. The
kernel then addresses exactly the elements it addressed before (the views' own bounds are
still proved per tile by the back end), so it computes what the interpreter computes on
the original kernel. What does not fit (an offset depending on a loop or a loaded value,
part of a row, views of one pointer with different row shapes) is left as written, and
`ktir_input` refuses it by name.
"""

from __future__ import annotations

import itertools

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineMap

from spyrec.dialects.ktdp import (
    ConstructAccessTileOp,
    ConstructMemoryViewOp,
    GetComputeTileIdOp,
)
from spyrec.passes.ktir.ktir_builder import box_set
from spyrec.passes.spyrecode.index_division import DIVISIONS, divide

Rows = dict[tuple[int, ...], int]  # per core (its ids), the row a view starts at

_ARITH = {"arith.addi": lambda a, b: a + b, "arith.subi": lambda a, b: a - b,
          "arith.muli": lambda a, b: a * b}


def rebase_pointer_views(kernel: func.FuncOp, grid: tuple[int, ...]) -> None:
    """Rewrite the views of `kernel` built at a pointer argument plus an offset (module
    docstring); views that do not fit are left for `ktir_input` to refuse."""
    cores = list(itertools.product(*(range(n) for n in grid)))
    for pointer in kernel.body.block.args:
        if not isinstance(pointer.type, IndexType):
            continue
        shifted = _shifted_views(pointer, cores)
        if shifted:
            ids = next((o for o in kernel.walk() if isinstance(o, GetComputeTileIdOp)), None)
            _rebase(pointer, shifted, ids)


def _shifted_views(pointer: BlockArgument, cores: list[tuple[int, ...]]
                   ) -> list[tuple[ConstructMemoryViewOp, Rows]] | None:
    """(view, the row it starts at per core) of each view at `pointer` + offset, when all
    views of `pointer` (direct ones start at row 0) fit the rewrite; None otherwise."""
    views: list[tuple[ConstructMemoryViewOp, Rows | None]] = []
    for use in pointer.uses:
        op = use.operation
        if isinstance(op, ConstructMemoryViewOp) and op.offset is pointer:
            views.append((op, None))
            continue
        if op.name != "arith.addi" or not op.results[0].uses:
            return None
        offset = op.operands[1] if op.operands[0] is pointer else op.operands[0]
        values = [_at(offset, core) for core in cores]
        for view_use in op.results[0].uses:
            view = view_use.operation
            if not isinstance(view, ConstructMemoryViewOp) or view.offset is not op.results[0] \
                    or view.sizes or view.strides or any(v is None for v in values) \
                    or not all(isinstance(u.operation, ConstructAccessTileOp)
                               for u in view.result.uses):
                return None
            stride = int(view.static_strides.get_values()[0])
            if any(v is None or v < 0 or v % stride for v in values):
                return None
            rows = {c: v // stride for c, v in zip(cores, values) if v is not None}
            views.append((view, rows))
    shapes = {(tuple(v.static_sizes.get_values()[1:]), tuple(v.static_strides.get_values()),
               v.result.type.element_type) for v, _ in views
              if isinstance(v.result.type, MemRefType)}
    if len(shapes) != 1 or all(r is None for _, r in views):
        return None
    return [(v, r) for v, r in views if r is not None]


def _coefficients(rows: Rows, cores: list[tuple[int, ...]]) -> list[int]:
    """[a0, a1, ...] with rows[c] = a0 + sum(a_i * c_i) read at core 0 and the unit cores
    (whether it holds everywhere: `_is_affine`)."""
    zero = cores[0]
    base = rows[zero]
    out = [base]
    for i in range(len(zero)):
        unit = tuple(1 if j == i else 0 for j in range(len(zero)))
        out.append(rows[unit] - base if unit in rows else 0)
    return out


def _is_affine(rows: Rows, cores: list[tuple[int, ...]]) -> bool:
    a = _coefficients(rows, cores)
    return all(rows[c] == a[0] + sum(x * y for x, y in zip(a[1:], c)) for c in cores)


def _affine_in_ids(rows: Rows, ids: GetComputeTileIdOp | None,
                   before: ConstructMemoryViewOp) -> SSAValue:
    """`rows` as index arithmetic on the core ids, inserted before `before`."""
    a = _coefficients(rows, sorted(rows))
    block = before.parent
    assert block is not None

    def insert(op: Operation) -> SSAValue:
        block.insert_op_before(op, before)
        return op.results[0]

    def const(n: int) -> SSAValue:
        return insert(arith.ConstantOp(IntegerAttr(n, IndexType()), IndexType()))

    value = const(a[0])
    for i, coefficient in enumerate(a[1:]):
        if coefficient:
            assert ids is not None and i < len(ids.results)  # a nonzero term reads an id
            term = insert(arith.MuliOp(ids.results[i], const(coefficient)))
            value = insert(arith.AddiOp(value, term))
    return value


def _quotient(view: ConstructMemoryViewOp, stride: int) -> SSAValue:
    """The rows of `view`'s offset (`%ptr + %off`): `%off / stride`, inserted before the view,
    exact on every core (`_shifted_views` checked each value is a whole number of rows);
    for a shift not affine in the core ids, such as a core group's `(pid / 4) * 128`."""
    added = view.offset.owner
    assert isinstance(added, Operation) and view.parent is not None
    pointer = next(v for v in added.operands if isinstance(v, BlockArgument))
    offset = added.operands[1] if added.operands[0] is pointer else added.operands[0]
    divisor = arith.ConstantOp(IntegerAttr(stride, IndexType()), IndexType())
    rows = arith.DivUIOp(offset, divisor.result)
    view.parent.insert_op_before(divisor, view)
    view.parent.insert_op_before(rows, view)
    return rows.result


def _at(value: SSAValue, core: tuple[int, ...]) -> int | None:
    """`value` on core `core`, if it is computed from core ids and integer constants by
    additions, subtractions, multiplications, divisions (core groups: `pid / 4`) and index
    casts only."""
    if isinstance(value, BlockArgument):
        return None
    op = value.owner
    assert isinstance(op, Operation)
    if isinstance(op, GetComputeTileIdOp):
        position = next(i for i, r in enumerate(op.results) if r is value)
        return core[position] if position < len(core) else 0
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    if op.name == "arith.index_cast":
        return _at(op.operands[0], core)
    if op.name in _ARITH or op.name in DIVISIONS:
        a, b = (_at(v, core) for v in op.operands)
        if a is None or b is None:
            return None
        return _ARITH[op.name](a, b) if op.name in _ARITH else divide(op.name, a, b)
    return None


def _rebase(pointer: BlockArgument, shifted: list[tuple[ConstructMemoryViewOp, Rows]],
            ids: GetComputeTileIdOp | None) -> None:
    """View the whole tensor at `pointer` in place of each shifted view, with the shift (an
    affine function of the core ids `ids`, `_affine_in_ids`) moved into its tiles' leading
    subscript."""
    rows = max([max(r.values()) + int(v.static_sizes.get_values()[0]) for v, r in shifted]
               + [int(u.operation.static_sizes.get_values()[0]) for u in pointer.uses
                  if isinstance(u.operation, ConstructMemoryViewOp)])
    for view, rows_at in shifted:
        old = view.result.type
        assert isinstance(old, MemRefType)
        sizes = [rows, *(int(n) for n in view.static_sizes.get_values()[1:])]
        strides = [int(n) for n in view.static_strides.get_values()]
        whole = ConstructMemoryViewOp(pointer, sizes, strides,
                                      MemRefType(old.element_type, sizes), box_set(sizes),
                                      view.memory_space)
        whole.result.name_hint = view.result.name_hint
        assert view.parent is not None
        view.parent.insert_op_before(whole, view)
        shift = _affine_in_ids(rows_at, ids, view) if _is_affine(rows_at, sorted(rows_at)) \
            else _quotient(view, strides[0])
        for use in list(view.result.uses):
            tile = use.operation
            assert isinstance(tile, ConstructAccessTileOp)  # `_shifted_views` checked
            _shift_tile(tile, whole, shift)
        added = view.offset.owner
        view.detach()
        view.erase()
        if isinstance(added, arith.AddiOp) and not added.result.uses:
            added.detach()
            added.erase()


def _shift_tile(tile: ConstructAccessTileOp, view: ConstructMemoryViewOp,
                shift: SSAValue) -> None:
    """Replace `tile` by the same tile of `view` whose leading subscript adds `shift`."""
    indices = list(tile.indices)
    if shift in indices:
        position = indices.index(shift)
    else:
        position = len(indices)
        indices.append(shift)
    old = tile.base_map.data
    results = list(old.results)
    results[0] = results[0] + AffineDimExpr(position)
    new = ConstructAccessTileOp(view.result, indices,
                                AffineMap(max(old.num_dims, position + 1), old.num_symbols,
                                          tuple(results)),
                                tile.access_tile_set, tile.access_tile_order, tile.result.type,
                                list(tile.symbols))
    new.result.name_hint = tile.result.name_hint
    assert tile.parent is not None
    tile.parent.insert_op_before(new, tile)
    tile.result.replace_all_uses_with(new.result)
    tile.detach()
    tile.erase()
