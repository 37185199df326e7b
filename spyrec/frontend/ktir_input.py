"""Hand-written KTIR as compiler input: a kernel becomes a one-launch program.

`import_ktir(path, function, target)` parses a KTIR module (located parse and verify errors), picks
the kernel to compile and wraps it in a graph function the back end knows: each pointer
argument of the kernel becomes a graph tensor whose shape and element type are those of
the memory view built on it; arguments the kernel only reads are the program's inputs,
arguments it stores to are its outputs, and one `spyre.launch` runs the kernel on them
(`spyre.kernel_args` maps the kernel's argument positions to the launch's operands and
results, because a kernel may interleave them).

    func.func @vector_add(%a: index, %b: index, %c: index) attributes {grid = [32, 1]}
    // becomes, next to the kernel:
    func.func @main(%a: tensor<8192xf32>, %b: tensor<8192xf32>) -> tensor<8192xf32> {
      %c = spyre.launch @vector_add(%a, %b) {spyre.kernel_args = array<i64: 0, 1, 2>} ...

Scalar arguments are bound first to the values the caller gives (`constants`:
`spyrec.frontend.ktir_specialise`); an unbound one is refused with the `--arg` to add. One
given as a `RuntimeArg` (`--arg n_rows=?`) stays a run-time argument of the binary: a
symbolic size of the tensors whose rows it bounds (`spyrec.frontend.ktir_runtime_args`),
recorded on the module as the symbolic sizes of an exported program are. Views at a
pointer plus whole rows become views of the whole tensor (`spyrec.frontend.ktir_pointers`),
and an `inter_tile_reduce` delivering its partial with unit dims dropped takes the partial's
type (`_full_rank_reduces`).
Views whose dynamic sizes are constants once the scalars are bound become static. A grid
`[n]` or `[x, y, 1]` is the planar `[n, 1]` or `[x, y]` (`_planar_grid`); a distributed view
of one tensor's blocks is a view of the tensor (`spyrec.frontend.ktir_parts`); an argument
loaded and stored is one tensor updated in place (`spyre.inplace` on the launch), when
`spyrec.frontend.ktir_inplace` proves the order safe; an inter-tile sum of a flattened
partial sums it unflattened (`spyrec.frontend.ktir_reshapes`; design note 89).
What the compiler cannot take yet is refused here, naming the argument: runtime_arg records
(symbolic sizes: run those in the KTIR interpreter), pointer arithmetic `ktir_pointers`
cannot rewrite, updates in place that could be observed early, views that are not dense
row-major,
views whose coordinate set does not start at 0 (part of a larger tensor), and views
outside global memory. Rows that are not whole 128-byte sticks are the device's padded
sticks (spyre-legalize-ktir gives their views the padded pitch).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import torch
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.ir import Block, BlockArgument, Region, SSAValue

from spyrec.diagnostics import CompileError
from spyrec.dialects.ktdp import (
    ConstructAccessTileOp,
    ConstructDistributedMemoryViewOp,
    ConstructMemoryViewOp,
    GetComputeTileIdOp,
    LoadOp,
    StoreOp,
)
from spyrec.dialects.ktdp_affine import bind_symbols
from spyrec.dialects.ktdp_indirect import ConstructIndirectAccessTileOp
from spyrec.dialects.ktdp_intertile import InterTileReduceOp
from spyrec.dialects.ktdp_parse import KtirSourceError, parse_ktir
from spyrec.dialects.ktdp_types import RuntimeArgType
from spyrec.dialects.ktdp_values import MASKED_KERNEL, set_bounds
from spyrec.dialects.spyre import LaunchOp
from spyrec.dialects.spyre_plan import GRID, INPLACE, LAYOUT, ktir_grid, record_symbols
from spyrec.dialects.spyre_symbolic import SymbolicSignature
from spyrec.frontend.importer import ImportedProgram, TensorSpec
from spyrec.frontend.ktir_blocks import HOST_BLOCKS, block_narrow_tiles
from spyrec.frontend.ktir_fixed import FIXED_ATTR, pin_fixed_views
from spyrec.frontend.ktir_inplace import check_in_place
from spyrec.frontend.ktir_parts import merge_block_views
from spyrec.frontend.ktir_pointers import rebase_pointer_views
from spyrec.frontend.ktir_reshapes import unflatten_sums
from spyrec.frontend.ktir_runtime_args import RowSymbol, RuntimeArg, runtime_rows
from spyrec.frontend.ktir_specialise import Scalar, is_pointer, specialise
from spyrec.frontend.ktir_stream import STREAMED_ATTR, stream_wide_rows
from spyrec.passes.graph.spyre_stickify import row_sticked
from spyrec.target import SpyreTarget

TORCH_DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32,
                "i32": torch.int32, "i64": torch.int64}
INDEX_ELEMENTS = ("i32", "i64")  # an indirect tile's indices (int64 narrowed on the way in)


@dataclass
class _Arg:
    """What the kernel does with one pointer argument."""

    name: str
    view: MemRefType
    read: bool = False
    written: bool = False
    host: MemRefType | None = None  # the kernel's own view when the device's is blocked


def import_ktir(path: str | Path, function: str | None, target: SpyreTarget,
                constants: Mapping[str, Scalar | RuntimeArg] | None = None,
                masked_tails: bool = False,
                grid: tuple[int, ...] | None = None) -> ImportedProgram:
    """The program that launches kernel `function` (the only kernel if None) of `path`, its
    tensors laid out for `target`, its scalar arguments bound to `constants` (name -> value:
    `spyrec.frontend.ktir_specialise`; a `RuntimeArg` leaves one to run time, a symbolic
    size compiled at its upper bound: `spyrec.frontend.ktir_runtime_args`); `masked_tails`
    masks every access tile (the attribute `ktdp.masked_tails`, docs/ktir.md §7); `grid`
    replaces the kernel's `grid` attribute (the launch grid, as Triton's caller gives it)."""
    path = Path(path)
    if not path.exists():
        raise CompileError(f"{path}: no such file")
    try:
        module = parse_ktir(path)
    except KtirSourceError as exc:
        raise CompileError(str(exc)) from None
    kernel = _pick(module, function, path)
    where = f"{path}: @{kernel.sym_name.data}"
    if masked_tails:
        kernel.attributes[MASKED_KERNEL] = UnitAttr()
    if grid:
        if not 1 <= len(grid) <= 3 or min(grid) < 1:
            raise CompileError(f"{where}: --grid {','.join(map(str, grid))}: a launch grid is "
                               "one to three positive extents")
        kernel.attributes[GRID.key] = ArrayAttr([IntegerAttr(n, i64) for n in grid])
    constants = constants or {}
    specialise(kernel, {k: v for k, v in constants.items() if not isinstance(v, RuntimeArg)},
               where)
    symbols = {k: runtime_rows(kernel, k, v, where) for k, v in constants.items()
               if isinstance(v, RuntimeArg)}
    specialise(kernel, {k: s.upper for k, s in symbols.items()}, where)
    _full_rank_reduces(kernel, where)
    unflatten_sums(kernel)
    _static_views(kernel)
    fixed = pin_fixed_views(kernel, where)
    if fixed:  # what `spyrec run --check` places for the interpreter again
        module.attributes[FIXED_ATTR] = DictionaryAttr(
            {k: IntegerAttr(v, i64) for k, v in fixed.items()})
    GRID.set(kernel, _planar_grid(kernel, where))
    _planar_tile_ids(kernel)
    merge_block_views(kernel)
    rebase_pointer_views(kernel, GRID.get(kernel) or (1, 1))
    streamed = stream_wide_rows(kernel)
    if streamed:  # recorded in the binary (`spyrec inspect` shows it)
        module.attributes[STREAMED_ATTR] = StringAttr("; ".join(streamed))
    blocks = {} if symbols else block_narrow_tiles(kernel)
    # its views are the caller's dense tensors, not stick-padded device copies
    kernel.attributes["spyre.dense_views"] = UnitAttr()
    # drop the other functions: the program is this kernel
    for other in [f for f in module.body.block.ops if f is not kernel]:
        other.detach()
    args = [_classify(kernel, arg, where) for arg in kernel.body.block.args]
    for a in args:
        if a.name in blocks:
            a.host = blocks[a.name][0]
    inputs = [a for a in args if a.read or not a.written]
    # the arguments updated in place first: `spyre.inplace` names the leading results
    outputs = [a for a in args if a.written and a.read] + [
        a for a in args if a.written and not a.read]
    if not outputs:
        raise CompileError(f"{where} stores to none of its arguments; it has no outputs")
    graph, specs = _graph(kernel.sym_name.data, args, inputs, outputs, target)
    module.body.block.add_op(graph)
    module.attributes["spyre.source"] = StringAttr(str(path))
    if symbols:
        record_symbols(module, _signature(symbols, inputs, outputs))
    return ImportedProgram(module, {}, *specs, source_name=str(path))


def _planar_grid(kernel: func.FuncOp, where: str) -> tuple[int, int]:
    """The kernel's grid as the back end's `[gm, gn]`: `[n]` is `[n, 1]` (KTIR's default
    grid is one tile) and `[x, y, 1]` is `[x, y]` (a tile id's z is 0 on every core either
    way); a grid with a z extent above 1 is refused, since the cores form a 2-D array."""
    extents = ktir_grid(kernel)
    if len(extents) == 3 and extents[2] != 1:
        raise CompileError(
            f"{where}: grid {list(extents)} spreads the kernel over {extents[2]} planes (z); "
            "the back end places a kernel on a 2-D array of cores: fold z into y "
            f"(grid = [{extents[0]}, {extents[1] * extents[2]}], y * {extents[2]} + z where "
            "the kernel reads the tile id), or run the kernel in the KTIR interpreter")
    return (extents[0], extents[1] if len(extents) > 1 else 1)


def _planar_tile_ids(kernel: func.FuncOp) -> None:
    """A `ktdp.get_compute_tile_id` reading z (three results) reads x and y; its z is the
    constant 0 on every core of a planar grid (`_planar_grid`)."""
    for op in [o for o in kernel.walk() if isinstance(o, GetComputeTileIdOp)]:
        if len(op.results) <= 2:
            continue
        planar = GetComputeTileIdOp(2)
        zero = arith.ConstantOp(IntegerAttr(0, IndexType()), IndexType())
        assert op.parent is not None
        op.parent.insert_ops_before([planar, zero], op)
        for old, new in zip(op.results, [*planar.results, zero.result]):
            new.name_hint = old.name_hint
            old.replace_all_uses_with(new)
        op.detach()
        op.erase()


def _signature(symbols: dict[str, RowSymbol], inputs: list[_Arg],
               outputs: list[_Arg]) -> SymbolicSignature:
    """The run-time arguments as the module's symbolic sizes: each sizes dim 0 of the
    tensors whose rows it bounds (named as `_classify` names them)."""
    sized = {(a.name_hint or f"arg{a.index}"): name
             for name, s in symbols.items() for a in s.pointers}

    def dims(args: list[_Arg]) -> tuple[dict[int, str], ...]:
        return tuple({0: sized[a.name]} if a.name in sized else {} for a in args)

    return SymbolicSignature({n: (s.lower, s.upper) for n, s in symbols.items()},
                             dims(inputs), dims(outputs))


def _static_views(kernel: func.FuncOp) -> None:
    """Give every memory view whose dynamic sizes and strides are all constants once the
    scalar arguments are bound (`sizes: [%n]` with `--arg n_elements=1024`) those sizes
    statically, its coordinate set's symbols bound to the sizes as the interpreter binds
    them; a view with a size known only at run time is left for `_check_view` to refuse."""
    for view in [o for o in kernel.walk() if isinstance(o, ConstructMemoryViewOp)]:
        sizes = [_known(v) for v in view.mixed_sizes()]
        strides = [_known(v) for v in view.mixed_strides()]
        if not (view.sizes or view.strides) or None in sizes + strides:
            continue
        mtype = view.result.type
        assert isinstance(mtype, MemRefType)
        shape = [n for n in sizes if n is not None]
        coordinates = view.coordinate_set.data
        symbols = [_known(v) for v in view.sizes][:coordinates.num_symbols]
        static = ConstructMemoryViewOp(
            view.offset, shape, [n for n in strides if n is not None],
            MemRefType(mtype.element_type, shape),
            bind_symbols(coordinates, [n for n in symbols if n is not None]),
            view.memory_space)
        assert view.parent is not None
        view.parent.insert_op_before(static, view)
        static.result.name_hint = view.result.name_hint
        view.result.replace_all_uses_with(static.result)
        view.detach()
        view.erase()


def _known(value: SSAValue | int) -> int | None:
    """An integer, or the value of an integer `arith.constant`; None otherwise."""
    if isinstance(value, int):
        return value
    op = value.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


def _full_rank_reduces(kernel: func.FuncOp, where: str) -> None:
    """Give each `ktdp.inter_tile_reduce` whose result drops unit dims of its partial (the
    public ring-reduce examples' `tensor<128xf16>` from `tensor<1x128xf16>` partials:
    `ktdp_intertile.rank_reduced`) the partial's type, when every use of that result is a
    `tensor.expand_shape` back to it (which then goes); any other use is refused with the
    rewrite that makes the kernel compile."""
    for op in [o for o in kernel.walk() if isinstance(o, InterTileReduceOp)]:
        partials = list(op.future_type.partials)
        if [r.type for r in op.results] == partials:
            continue
        for result, partial in zip(op.results, partials):
            for use in result.uses:
                if use.operation.name != "tensor.expand_shape" or \
                        use.operation.results[0].type != partial:
                    raise CompileError(
                        f"{where}: ktdp.inter_tile_reduce (%{result.name_hint}) delivers "
                        f"{result.type} from partials {partial} and {use.operation.name} "
                        f"reads it; the compiler takes the partial's type: write `-> "
                        f"{partial}` and use the result as the partial's shape (drop the "
                        "reshape)")
        full = InterTileReduceOp.create(
            operands=list(op.operands), result_types=partials,
            properties=dict(op.properties), attributes=dict(op.attributes),
            regions=[op.detach_region(op.regions[0])])
        assert op.parent is not None
        op.parent.insert_op_before(full, op)
        for result, new in zip(op.results, full.results):
            new.name_hint = result.name_hint
            for use in list(result.uses):
                expand = use.operation
                expand.results[0].replace_all_uses_with(new)
                expand.detach()
                expand.erase()
        op.detach()
        op.erase()


def _pick(module: ModuleOp, function: str | None, path: Path) -> func.FuncOp:
    kernels = [f for f in module.body.block.ops
               if isinstance(f, func.FuncOp) and f.body.blocks.first is not None]
    names = ", ".join(f"@{f.sym_name.data}" for f in kernels)
    if function is not None:
        for f in kernels:
            if f.sym_name.data == function:
                return f
        raise CompileError(f"{path}: no function @{function}; it defines {names or 'none'}")
    if len(kernels) != 1:
        raise CompileError(f"{path} defines {len(kernels)} functions ({names}); name the "
                           "kernel to compile with --function NAME")
    return kernels[0]


def _classify(kernel: func.FuncOp, arg: BlockArgument, where: str) -> _Arg:
    name = arg.name_hint or f"arg{arg.index}"
    if isinstance(arg.type, RuntimeArgType):
        raise CompileError(f"{where}: argument %{name} is a {arg.type} (a size known at run "
                           "time); the compiler needs static sizes: run the kernel in the KTIR "
                           "interpreter (spyrec run kernel.mlir --function ...)")
    if not isinstance(arg.type, IndexType):
        raise CompileError(f"{where}: argument %{name} is a scalar ({arg.type}); give its "
                           f"value at compile time: spyrec compile ... --arg {name}=VALUE "
                           f"(spyrec.compile(path, constants={{'{name}': VALUE}}))")
    uses = [u.operation for u in arg.uses]
    views = [v for v in uses if isinstance(v, ConstructMemoryViewOp)]
    if not uses:
        raise CompileError(f"{where}: argument %{name} is never used, so it has no view to "
                           "give it a shape; remove it or view it with "
                           "ktdp.construct_memory_view")
    if is_pointer(arg) and (len(views) != len(uses) or any(v.offset is not arg for v in views)):
        raise CompileError(f"{where}: argument %{name} is a tensor address offset by integer "
                           "arithmetic before it is viewed (pointer arithmetic); the compiler "
                           "takes views built on the argument itself: view the whole tensor "
                           f"at %{name} and move the offset into the access tiles' base "
                           "subscripts")
    if len(views) != len(uses) or any(v.offset is not arg for v in views):
        raise CompileError(f"{where}: argument %{name} is a scalar (it is not the offset of a "
                           "memory view); give its value at compile time: spyrec compile ... "
                           f"--arg {name}=VALUE (spyrec.compile(path, constants={{'{name}': "
                           "VALUE}))")
    first = views[0].result.type
    info = _Arg(name, first)
    loaded = distributed = False
    for view in views:
        _check_view(view, name, where)
        if view.result.type != first:
            raise CompileError(f"{where}: argument %{name} is viewed as both {first} and "
                               f"{view.result.type}; give it one view")
        uses = list(view.result.uses)
        while uses:
            use = uses.pop(0)
            tile = use.operation
            if isinstance(tile, ConstructIndirectAccessTileOp) and use.index > 0:
                info.read = True  # the indices (`_check_view` checked their type)
                continue
            if isinstance(tile, ConstructDistributedMemoryViewOp):
                _check_parts(kernel, tile, name, where)
                uses += list(tile.result.uses)  # the tiles of the tensors addressed as one
                distributed = True
                continue
            if not isinstance(tile, (ConstructAccessTileOp, ConstructIndirectAccessTileOp)) \
                    or (distributed and not isinstance(tile, ConstructAccessTileOp)):
                raise CompileError(f"{where}: the view of %{name} feeds {tile.name}; the "
                                   "compiler takes direct and indirect access tiles of a "
                                   "view, and direct tiles of a distributed view")
            for access in tile.result.uses:
                loads = isinstance(access.operation, LoadOp)
                loaded |= loads
                info.read |= loads
                info.written |= isinstance(access.operation, StoreOp)
                # a table scattered to keeps the caller's rows no index names: it is an
                # input too, updated in place (a fresh output's other rows are undefined)
                info.read |= isinstance(tile, ConstructIndirectAccessTileOp) and isinstance(
                    access.operation, StoreOp)
    if loaded and info.written:
        if distributed:
            raise CompileError(f"{where}: argument %{name} is a part of a distributed view "
                               "that the kernel both loads and stores; the compiler updates "
                               "in place only tensors viewed on their own: load from one "
                               "tensor and store to another")
        check_in_place(kernel, arg, where)
    return info


def _check_parts(kernel: func.FuncOp, op: ConstructDistributedMemoryViewOp, name: str,
                 where: str) -> None:
    """A distributed view the back end moves by DMA: its parts are views of whole tensors,
    each on its own pointer argument, in global memory (each part then moves as a tile
    of its own tensor; the walk splits a tile over the parts it reaches)."""
    args: list[SSAValue] = []
    for part in op.parts:
        view = part.owner
        if not isinstance(view, ConstructMemoryViewOp) or not isinstance(
                view.offset, BlockArgument) or view.offset.block is not kernel.body.block \
                or view.offset in args:
            raise CompileError(f"{where}: the view of %{name} is a part of a distributed view "
                               "whose parts are not each the view of a pointer argument of "
                               "its own; the compiler takes distributed views of whole "
                               "tensors (one argument per part) or of one tensor's blocks")
        args.append(view.offset)


def _check_index_view(tile: ConstructIndirectAccessTileOp, view: ConstructMemoryViewOp,
                      name: str, where: str) -> None:
    """The view of an indirect tile's indices must hold integers the DMA reads as int32
    (int64 is narrowed, range-checked, on the way in)."""
    mtype = view.result.type
    assert isinstance(mtype, MemRefType)
    element = str(mtype.element_type)
    if element not in INDEX_ELEMENTS:
        tile_name = f" (%{tile.result.name_hint})" if tile.result.name_hint else ""
        raise CompileError(f"{where}: %{name} gives the indices of the indirect access "
                           f"tile{tile_name} but holds {element}; indices are i32 or i64 "
                           "(row numbers of the table): make its view memref<...xi32>")


def _check_view(view: ConstructMemoryViewOp, name: str, where: str) -> None:
    mtype = view.result.type
    assert isinstance(mtype, MemRefType)
    space = view.memory_space
    if space.kind != "global":
        raise CompileError(f"{where}: the view of %{name} is in {space}; the compiler places "
                           "tensors itself and takes views of global memory only")
    if view.sizes or view.strides:
        raise CompileError(f"{where}: the view of %{name} has sizes or strides known only at "
                           "run time; the compiler needs static shapes: bind the scalar "
                           "arguments they come from (spyrec compile ... --arg NAME=VALUE)")
    sizes = [int(s) for s in view.static_sizes.get_values()]
    strides = [int(s) for s in view.static_strides.get_values()]
    # KTIR addresses element c of a view at c - (the set's lowest point); the back end
    # addresses a tensor from its element 0, so a view of part of a larger tensor (a set
    # starting elsewhere) would be read at the wrong place
    low = [lo for lo, _ in set_bounds(view.coordinate_set.data) or []]
    # a part of a distributed view holds its place in the whole: its element at the set's
    # lowest point is the tensor's first (the walk addresses parts from their origin)
    part = all(isinstance(u.operation, ConstructDistributedMemoryViewOp)
               for u in view.result.uses)
    if any(low) and not part:
        raise CompileError(f"{where}: the view of %{name} holds coordinates from {low} on (its "
                           "coordinate_set); the compiler takes views of whole tensors, whose "
                           "coordinates start at 0: shift the set and the tiles' subscripts "
                           "to start at 0")
    dense = [math.prod(sizes[i + 1:]) for i in range(len(sizes))]
    if strides != dense:
        raise CompileError(f"{where}: the view of %{name} has strides {strides}; the compiler "
                           f"takes dense row-major tensors (strides {dense})")
    element = str(mtype.element_type)
    indices = all(isinstance(u.operation, ConstructIndirectAccessTileOp) and u.index > 0
                  for u in view.result.uses)
    if indices:
        for use in view.result.uses:
            _check_index_view(use.operation, view, name, where)  # type: ignore[arg-type]
    elif element == "i64":
        raise CompileError(f"{where}: %{name} holds i64 and is not only the indices of "
                           "indirect access tiles; the device holds int64 as int32 and takes "
                           "i64 tensors only as indices: make it i32")
    if element not in TORCH_DTYPES:
        raise CompileError(f"{where}: %{name} holds {element}; the device takes f16, bf16, "
                           "f32 and i32")


def _graph(kernel: str, args: list[_Arg], inputs: list[_Arg], outputs: list[_Arg],
           target: SpyreTarget) -> tuple[func.FuncOp, tuple[list[TensorSpec], list[TensorSpec]]]:
    def tensor(a: _Arg) -> TensorType:
        return TensorType(a.view.element_type, a.view.get_shape())

    block = Block(arg_types=[tensor(a) for a in inputs])
    for value, a in zip(block.args, inputs):
        value.name_hint = a.name
    launch = LaunchOp(kernel, list(block.args), [tensor(a) for a in outputs])
    order = [inputs.index(a) if not a.written else len(inputs) + outputs.index(a) for a in args]
    launch.attributes["spyre.kernel_args"] = DenseArrayBase.from_list(i64, order)
    in_place = tuple(inputs.index(a) for a in outputs if a in inputs)
    if in_place:  # stored where the input lives: the host copies it in and out
        INPLACE.set(launch, in_place)
    layouts = [row_sticked(tensor(a), True, target).to_attr() for a in outputs]
    LAYOUT.set(launch, tuple(layouts))
    for value, a in zip(launch.results, outputs):
        value.name_hint = a.name
    block.add_ops([launch, func.ReturnOp(*launch.results)])
    graph = func.FuncOp("main", ([tensor(a) for a in inputs], [tensor(a) for a in outputs]),
                        Region(block))
    graph.arg_attrs = ArrayAttr([
        DictionaryAttr({LAYOUT.key: row_sticked(tensor(a), True, target).to_attr()})
        for a in inputs])
    graph.attributes["spyre.output_names"] = ArrayAttr([StringAttr(a.name) for a in outputs])
    blocked = {a.name: IntegerAttr(a.view.get_shape()[-1], i64) for a in args if a.host}
    if blocked:  # the host passes and receives the kernel's shapes (ktir_blocks)
        graph.attributes[HOST_BLOCKS] = DictionaryAttr(blocked)

    def spec(a: _Arg) -> TensorSpec:
        return TensorSpec(a.name, tuple((a.host or a.view).get_shape()),
                          TORCH_DTYPES[str(a.view.element_type)])

    return graph, ([spec(a) for a in inputs], [spec(a) for a in outputs])
