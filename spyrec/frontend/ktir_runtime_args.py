"""Run-time scalar arguments of a KTIR kernel: a loop bound over rows is a symbolic size.

`spyrec compile k.mlir --function F --arg n_rows=?` (or `--arg n_rows=LO..HI`) leaves
`%n_rows` a run-time argument of the binary instead of binding it (`ktir_specialise`).
Triton's row kernels take the row count this way (`scf.for %row = %pid to %n_rows step
%nprog`, one row of each tensor per iteration), and the caller's tensors have `n_rows` rows.
`runtime_rows(kernel, name, bounds, where)` proves that such an argument can be corrected
per call as a symbolic size (design notes 32 and 83), and returns the symbol's bounds and
the pointer arguments whose leading dim it sizes. The kernel is then compiled once with the
argument at its upper bound; the host's program correction zero-pads those inputs' rows to
the bound and crops those outputs' rows back to the value of the call.

The proof: every use of the argument (through `arith.index_cast`) is the upper bound of an
`scf.for` without loop-carried values; inside such a loop every access tile of a view whose
row count is the bound addresses exactly one row, the loop's induction variable; every
other access to those views anywhere in the kernel is refused, and so is a store inside
the loop to any other view. Then iteration i reads and writes row i of the sized tensors
only and nothing else, so rows below the value are computed as the interpreter computes
them with that value, and the padded rows only reach cropped rows. Anything else is
refused with a `CompileError` naming the argument and the op, and saying to bind it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from xdsl.dialects import func, scf
from xdsl.dialects.builtin import IndexType, IntegerType, MemRefType
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr

from spyrec.diagnostics import CompileError
from spyrec.dialects.ktdp import ConstructAccessTileOp, ConstructMemoryViewOp, StoreOp
from spyrec.dialects.ktdp_values import MASKED_KERNEL, MASKED_TILE, set_bounds
from spyrec.frontend.ktir_specialise import constant_of


@dataclass(frozen=True)
class RuntimeArg:
    """A scalar argument left to run time: `--arg NAME=?` (both bounds from the views it
    sizes: 1 and their rows) or `--arg NAME=LO..HI` (either side may be omitted)."""

    lower: int | None = None
    upper: int | None = None

    def __str__(self) -> str:
        if self.lower is None and self.upper is None:
            return "?"
        low, high = ("" if v is None else str(v) for v in (self.lower, self.upper))
        return f"{low}..{high}"


@dataclass(frozen=True)
class RowSymbol:
    """What `runtime_rows` proved: the symbol's inclusive bounds and the pointer arguments
    whose dim 0 it sizes."""

    lower: int
    upper: int
    pointers: frozenset[BlockArgument]


def runtime_rows(kernel: func.FuncOp, name: str, bounds: RuntimeArg, where: str) -> RowSymbol:
    """Prove that argument `name` of `kernel` only bounds loops over rows (module docstring)
    and return its symbol; a `CompileError` naming the argument and the op otherwise."""
    args = {(a.name_hint or f"arg{a.index}"): a for a in kernel.body.block.args}
    if name not in args:
        raise CompileError(f"{where}: --arg {name}={bounds}: the kernel has no argument "
                           f"%{name}; its arguments are {', '.join('%' + n for n in args)}")
    arg = args[name]
    bind = f"; bind it at compile time instead (spyrec compile ... --arg {name}=VALUE)"
    if not isinstance(arg.type, (IndexType, IntegerType)):
        raise CompileError(f"{where}: --arg {name}={bounds}: %{name} is {arg.type}; only an "
                           f"integer argument can be a run-time size{bind}")
    views = _sized_views(arg)
    if views:
        return _masked_size(kernel, views, name, bounds, where, bind)
    loops = _bounded_loops(arg, name, where, bind)
    tiles: set[ConstructAccessTileOp] = set()
    pointers: dict[BlockArgument, int] = {}
    for loop in loops:
        if loop.iter_args:
            raise CompileError(f"{where}: --arg {name}: the scf.for it bounds carries values "
                               "from one iteration to the next, so the rows past the run-time "
                               f"value would change the result{bind}")
        for tile in loop.body.walk():
            if not isinstance(tile, ConstructAccessTileOp):
                continue
            row = _row_pointer(tile, loop.body.block.args[0])
            if row is not None:
                tiles.add(tile)
                pointers[row[0]] = row[1]
            elif any(isinstance(u.operation, StoreOp) for u in tile.result.uses):
                raise CompileError(f"{where}: --arg {name}: a store inside the loop it bounds "
                                   f"({_describe(tile)}) does not address one row at the "
                                   "loop's index, so the iterations past the run-time value "
                                   f"would write it{bind}")
    if not pointers:
        raise CompileError(f"{where}: --arg {name}: no access tile inside the loops it bounds "
                           "addresses one row of a tensor at the loop's index, so it sizes "
                           f"no tensor dim{bind}")
    rows = set(pointers.values())
    if len(rows) != 1:
        raise CompileError(f"{where}: --arg {name}: the tensors it indexes by rows have "
                           f"{sorted(rows)} rows; give them one row count{bind}")
    (full,) = rows
    lower = 1 if bounds.lower is None else bounds.lower
    upper = full if bounds.upper is None else bounds.upper
    if upper != full or not 1 <= lower <= upper:
        raise CompileError(f"{where}: --arg {name}={bounds}: the range must be LO..{full} with "
                           f"1 <= LO (the tensors it indexes have {full} rows: the compiled "
                           f"size), e.g. --arg {name}=1..{full} or --arg {name}=?")
    _check_other_accesses(kernel, set(pointers), tiles, name, where, bind)
    return RowSymbol(lower, upper, frozenset(pointers))


def _sized_views(arg: BlockArgument) -> list[ConstructMemoryViewOp]:
    """The memory views on pointer arguments whose leading size is `arg` (through index
    casts), when every use of `arg` is one; [] otherwise."""
    views: list[ConstructMemoryViewOp] = []
    for value, op in _uses(arg):
        if isinstance(op, ConstructMemoryViewOp) and isinstance(op.offset, BlockArgument) \
                and op.mixed_sizes()[0] is value and value not in op.mixed_sizes()[1:] \
                and value not in op.mixed_strides():
            views.append(op)
        else:
            return []
    return views


def _uses(arg: BlockArgument) -> Iterator[tuple[SSAValue, Operation]]:
    """(value, user) for every use of `arg` or of an `arith.index_cast` of it, the casts
    themselves left out."""
    pending: list[SSAValue] = [arg]
    while pending:
        value = pending.pop()
        for use in value.uses:
            if use.operation.name == "arith.index_cast":
                pending.append(use.operation.results[0])
            else:
                yield value, use.operation


def _masked_size(kernel: func.FuncOp, views: list[ConstructMemoryViewOp], name: str,
                 bounds: RuntimeArg, where: str, bind: str) -> RowSymbol:
    """A run-time size of views whose every access tile is masked (docs/ktir.md §7, design
    note 88): compiled at the upper bound, the host zero-pads the inputs past the value (the
    zeros a masked load reads there) and crops the outputs to it (the lanes a masked store
    drops). The upper bound is the range's, or else how far the tiles reach when their
    subscripts are constants (Triton's one-tile kernels)."""
    pointers = sorted({v.offset for v in views}, key=lambda a: a.index)  # type: ignore[attr-defined]
    reach = 0
    for pointer in pointers:
        for use in pointer.uses:
            view = use.operation
            if view not in views:
                raise CompileError(f"{where}: --arg {name}: %{pointer.name_hint} is also "
                                   f"viewed by {_describe(view)}, whose size is not %{name}; "
                                   f"view it once{bind}")
            for access in view.results[0].uses:
                tile = access.operation
                if not isinstance(tile, ConstructAccessTileOp) or not (
                        MASKED_TILE in tile.attributes or MASKED_KERNEL in kernel.attributes):
                    raise CompileError(
                        f"{where}: --arg {name}: it sizes the view of %{pointer.name_hint} "
                        f"and {_describe(tile)} accesses it unmasked, where the lanes past "
                        "the run-time value would be the host's zero padding rather than the "
                        "error the kernel makes; mask the kernel's tiles (compile with "
                        f"--masked-tails, docs/ktir.md §7){bind}")
                reach = max(reach, _reach(tile))
    upper = bounds.upper if bounds.upper is not None else reach
    lower = 1 if bounds.lower is None else bounds.lower
    if reach and upper > reach:
        raise CompileError(f"{where}: --arg {name}={bounds}: the kernel's tiles reach "
                           f"{reach} elements, so a larger value would leave elements past "
                           f"them unwritten; give --arg {name}=LO..{reach} or --arg {name}=?")
    if not 1 <= lower <= upper:
        raise CompileError(f"{where}: --arg {name}={bounds}: give the range it may take, "
                           f"--arg {name}=LO..HI with 1 <= LO <= HI (the tiles' subscripts are "
                           "not constants, so their reach gives no upper bound)")
    return RowSymbol(lower, upper, frozenset(pointers))  # type: ignore[arg-type]


def _reach(tile: ConstructAccessTileOp) -> int:
    """1 + the last leading coordinate `tile` touches when its subscripts are constants
    (0 when they are not)."""
    indices = [constant_of(v) for v in tile.indices]
    box = set_bounds(tile.access_tile_set.data)
    if None in indices or box is None:
        return 0
    base = tile.base_map.data.eval([int(i) for i in indices if i is not None], [])
    return base[0] + box[0][1] + 1


def _bounded_loops(arg: BlockArgument, name: str, where: str, bind: str) -> list[scf.ForOp]:
    """The loops whose upper bound is `arg` (through index casts); any other use refused."""
    loops: list[scf.ForOp] = []
    for value, op in _uses(arg):
        if isinstance(op, scf.ForOp) and op.ub is value and op.lb is not value \
                and op.step is not value:
            loops.append(op)
        else:
            raise CompileError(f"{where}: --arg {name}: %{name} is used by {_describe(op)} "
                               "(as a value, not as the upper bound of an scf.for over "
                               "rows), which the host cannot correct per call" + bind)
    if not loops:
        raise CompileError(f"{where}: --arg {name}: %{name} bounds no scf.for{bind}")
    return loops


def _row_pointer(tile: ConstructAccessTileOp,
                 index: SSAValue) -> tuple[BlockArgument, int] | None:
    """(pointer argument, its view's rows) when `tile` addresses exactly row `index` of a
    memory view built on a pointer argument, else None."""
    view = tile.base.owner
    if not isinstance(view, ConstructMemoryViewOp) or not isinstance(view.offset,
                                                                      BlockArgument):
        return None
    first = tile.base_map.data.results[0] if tile.base_map.data.results else None
    box = set_bounds(tile.access_tile_set.data)
    if not isinstance(first, AffineDimExpr) or tile.indices[first.position] is not index \
            or box is None or box[0] != (0, 0):
        return None
    mtype = view.result.type
    assert isinstance(mtype, MemRefType)
    return view.offset, mtype.get_shape()[0]


def _check_other_accesses(kernel: func.FuncOp, pointers: set[BlockArgument],
                          tiles: set[ConstructAccessTileOp], name: str, where: str,
                          bind: str) -> None:
    """Every access to a tensor `name` sizes is one of the row tiles `tiles`."""
    for pointer in pointers:
        for use in pointer.uses:
            view = use.operation
            for access in view.results[0].uses if view.results else ():
                if access.operation not in tiles:
                    raise CompileError(
                        f"{where}: --arg {name}: %{pointer.name_hint} is read or written by "
                        f"{_describe(access.operation)} outside one row at the index of a "
                        f"loop bounded by %{name}; its rows past the run-time value would be "
                        f"read{bind}")


def _describe(op: Operation) -> str:
    """An op by its name and first result's name, as the messages name ops."""
    result = op.results[0].name_hint if op.results and op.results[0].name_hint else None
    return f"{op.name} (%{result})" if result else op.name
