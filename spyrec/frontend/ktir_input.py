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
`spyrec.frontend.ktir_specialise`); an unbound one is refused with the `--arg` to add.
What the compiler cannot take yet is refused here, naming the argument: runtime_arg records
(symbolic sizes: run those in the KTIR interpreter), pointer arithmetic on an argument,
arguments
both read and written, views that are not dense row-major, views whose coordinate set does
not start at 0 (part of a larger tensor), and views outside global memory. Rows that are
not whole 128-byte sticks are the device's padded sticks (spyre-legalize-ktir gives their
views the padded pitch).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    IndexType,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.ir import Block, BlockArgument, Region

from spyrec.diagnostics import CompileError
from spyrec.dialects.ktdp import (
    ConstructAccessTileOp,
    ConstructMemoryViewOp,
    LoadOp,
    StoreOp,
)
from spyrec.dialects.ktdp_parse import KtirSourceError, parse_ktir
from spyrec.dialects.ktdp_types import RuntimeArgType
from spyrec.dialects.ktdp_values import set_bounds
from spyrec.dialects.spyre import LaunchOp
from spyrec.dialects.spyre_plan import GRID, LAYOUT, ktir_grid
from spyrec.frontend.importer import ImportedProgram, TensorSpec
from spyrec.frontend.ktir_specialise import Scalar, is_pointer, specialise
from spyrec.passes.graph.spyre_stickify import row_sticked
from spyrec.target import SpyreTarget

TORCH_DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32,
                "i32": torch.int32}


@dataclass
class _Arg:
    """What the kernel does with one pointer argument."""

    name: str
    view: MemRefType
    read: bool = False
    written: bool = False


def import_ktir(path: str | Path, function: str | None, target: SpyreTarget,
                constants: Mapping[str, Scalar] | None = None) -> ImportedProgram:
    """The program that launches kernel `function` (the only kernel if None) of `path`, its
    tensors laid out for `target`, its scalar arguments bound to `constants` (name -> value:
    `spyrec.frontend.ktir_specialise`)."""
    path = Path(path)
    if not path.exists():
        raise CompileError(f"{path}: no such file")
    try:
        module = parse_ktir(path)
    except KtirSourceError as exc:
        raise CompileError(str(exc)) from None
    kernel = _pick(module, function, path)
    specialise(kernel, constants or {}, f"{path}: @{kernel.sym_name.data}")
    if len(ktir_grid(kernel)) == 1:  # KTIR's default grid is one tile; [n] is [n, 1]
        GRID.set(kernel, (ktir_grid(kernel)[0], 1))
    # its views are the caller's dense tensors, not stick-padded device copies
    kernel.attributes["spyre.dense_views"] = UnitAttr()
    # drop the other functions: the program is this kernel
    for other in [f for f in module.body.block.ops if f is not kernel]:
        other.detach()
    where = f"{path}: @{kernel.sym_name.data}"
    args = [_classify(kernel, arg, where) for arg in kernel.body.block.args]
    inputs = [a for a in args if not a.written]
    outputs = [a for a in args if a.written]
    if not outputs:
        raise CompileError(f"{where} stores to none of its arguments; it has no outputs")
    graph, specs = _graph(kernel.sym_name.data, args, inputs, outputs, target)
    module.body.block.add_op(graph)
    module.attributes["spyre.source"] = StringAttr(str(path))
    return ImportedProgram(module, {}, *specs, source_name=str(path))


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
    for view in views:
        _check_view(view, name, where)
        if view.result.type != first:
            raise CompileError(f"{where}: argument %{name} is viewed as both {first} and "
                               f"{view.result.type}; give it one view")
        for use in view.result.uses:
            tile = use.operation
            if not isinstance(tile, ConstructAccessTileOp):
                raise CompileError(f"{where}: the view of %{name} feeds {tile.name}; the "
                                   "compiler takes direct access tiles only (no distributed "
                                   "views or indirect tiles yet)")
            for access in tile.result.uses:
                info.read |= isinstance(access.operation, LoadOp)
                info.written |= isinstance(access.operation, StoreOp)
    if info.read and info.written:
        raise CompileError(f"{where}: argument %{name} is both loaded and stored (updated in "
                           "place); the compiler takes kernels whose arguments are inputs or "
                           "outputs")
    return info


def _check_view(view: ConstructMemoryViewOp, name: str, where: str) -> None:
    mtype = view.result.type
    assert isinstance(mtype, MemRefType)
    space = view.memory_space
    if space.kind != "global":
        raise CompileError(f"{where}: the view of %{name} is in {space}; the compiler places "
                           "tensors itself and takes views of global memory only")
    if view.sizes or view.strides:
        raise CompileError(f"{where}: the view of %{name} has dynamic sizes or strides; the "
                           "compiler needs static shapes")
    sizes = [int(s) for s in view.static_sizes.get_values()]
    strides = [int(s) for s in view.static_strides.get_values()]
    # KTIR addresses element c of a view at c - (the set's lowest point); the back end
    # addresses a tensor from its element 0, so a view of part of a larger tensor (a set
    # starting elsewhere) would be read at the wrong place
    low = [lo for lo, _ in set_bounds(view.coordinate_set.data) or []]
    if any(low):
        raise CompileError(f"{where}: the view of %{name} holds coordinates from {low} on (its "
                           "coordinate_set); the compiler takes views of whole tensors, whose "
                           "coordinates start at 0: shift the set and the tiles' subscripts "
                           "to start at 0")
    dense = [math.prod(sizes[i + 1:]) for i in range(len(sizes))]
    if strides != dense:
        raise CompileError(f"{where}: the view of %{name} has strides {strides}; the compiler "
                           f"takes dense row-major tensors (strides {dense})")
    element = str(mtype.element_type)
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

    def spec(a: _Arg) -> TensorSpec:
        return TensorSpec(a.name, tuple(a.view.get_shape()),
                          TORCH_DTYPES[str(a.view.element_type)])

    return graph, ([spec(a) for a in inputs], [spec(a) for a in outputs])
