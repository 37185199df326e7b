"""The tensors of a scheduled module as the `.spyre` binds them: what spyre-emit-spyrecode
writes and spyre-place-guards analyses, read from the IR in one place.

Guarantees: the program's inputs (the graph function's arguments), outputs (its results
after the buffers it updates in place, with the names, host permutations and bool types
the graph function records, and the symbolic dims of `spyre.symbols`), the intermediates
(every launch result the graph does not return), the params with their device layouts,
and each launch with its `spyrecode.program`, in launch order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    IntegerAttr,
    ModuleOp,
    TensorType,
)
from xdsl.ir import Attribute, SSAValue

from spyrec.diagnostics import CompileError
from spyrec.dialects.spyre import LaunchOp, ParamOp
from spyrec.dialects.spyre_plan import graph_func, symbolic_signature
from spyrec.dialects.spyrecode import ProgramOp
from spyrec.passes.graph.spyre_stickify import layout_of
from spyrec.passes.spyrecode.spyre_schedule_dataflow import addr_of
from spyrec.target.container import TensorBinding
from spyrec.target.layout import ELEMENT_HOST_DTYPE, DeviceLayout

HOST_DTYPE = ELEMENT_HOST_DTYPE  # the element types a binding can hold, by host name


def host_dtype(value: SSAValue) -> str:
    assert isinstance(value.type, TensorType)
    element = str(value.type.element_type)
    if element not in HOST_DTYPE:
        raise CompileError(f"%{value.name_hint}: element type {element} cannot cross the host "
                           "boundary yet")
    return HOST_DTYPE[element]


def _binding(name: str, value: SSAValue, host_perms: Mapping[str, Attribute] | None = None,
             host_blocks: Mapping[str, Attribute] | None = None) -> TensorBinding:
    shape = tuple(value.type.get_shape())  # type: ignore[attr-defined]
    block = (host_blocks or {}).get(name)
    if isinstance(block, IntegerAttr):
        # a hand-written kernel's tensor with its last dim in blocks of narrow tiles
        # (`spyre.host_blocks`, spyrec.frontend.ktir_blocks): the binding has the
        # kernel's shape, the host splits the last dim
        host_shape = (*shape[:-2], shape[-2] * shape[-1])
        return TensorBinding(name, DeviceLayout(host_shape, host_dtype(value),
                                                block=block.value.data), addr_of(value))
    perm_attr = (host_perms or {}).get(name)
    if perm_attr is None:
        return TensorBinding(name, DeviceLayout(shape, host_dtype(value)), addr_of(value))
    # a program input or output kept channels-last on the device (spyre-legalize's
    # `spyre.host_perms`): the binding has the host's shape, the host permutes
    perm = tuple(int(p) for p in perm_attr.get_values())  # type: ignore[attr-defined]
    host = [0] * len(shape)
    for device_dim, host_dim in enumerate(perm):
        host[host_dim] = shape[device_dim]
    return TensorBinding(name, DeviceLayout(tuple(host), host_dtype(value), perm),
                         addr_of(value))


@dataclass
class ProgramTensors:
    """A scheduled module's tensors and launches (see the module docstring)."""

    inputs: list[TensorBinding]
    outputs: list[TensorBinding]
    intermediates: list[TensorBinding]
    params: list[ParamOp]
    launches: list[LaunchOp]
    programs: list[ProgramOp]  # the program each launch runs
    returned: list[SSAValue]  # the values of the outputs
    symbols: dict[str, tuple[int, int]]  # the sizes that vary per call: name -> bounds


def program_tensors(module: ModuleOp) -> ProgramTensors:
    """The tensors and launches of a module after spyre-schedule-dataflow."""
    graph = graph_func(module)
    if graph is None:
        raise CompileError("no graph function in the module; nothing to emit")
    block = graph.body.block
    ret = block.last_op
    assert isinstance(ret, func.ReturnOp)
    names_attr = graph.attributes.get("spyre.output_names")
    out_names = ([n.data for n in names_attr.data] if isinstance(names_attr, ArrayAttr)
                 else [f"output{i}" for i in range(len(ret.arguments))])
    perms_attr = graph.attributes.get("spyre.host_perms")
    perms = perms_attr.data if isinstance(perms_attr, DictionaryAttr) else {}
    blocks_attr = graph.attributes.get("spyre.host_blocks")
    blocks = blocks_attr.data if isinstance(blocks_attr, DictionaryAttr) else {}
    inputs = [_binding(a.name_hint or f"input{a.index}", a, perms, blocks) for a in block.args]
    bool_inputs = graph.attributes.get("spyre.bool_inputs")  # f32 0/1 on device, bool on host
    if isinstance(bool_inputs, DenseArrayBase):
        for index in bool_inputs.get_values():
            inputs[index] = replace(inputs[index],
                                    layout=replace(inputs[index].layout, host_dtype="bool"))
    limits_attr = graph.attributes.get("spyre.int_limits")  # spyre-legalize's int_range
    if isinstance(limits_attr, DictionaryAttr):
        for index, limit in limits_attr.data.items():
            inputs[int(index)].int_limit = limit.value.data  # type: ignore[attr-defined]
    params = [o for o in block.ops if isinstance(o, ParamOp)]
    updated = _buffer_updates(graph, list(ret.arguments), params)
    returned = list(ret.arguments[len(updated):])
    outputs = [_binding(n, v, perms, blocks) for n, v in zip(out_names, returned)]
    bools_attr = graph.attributes.get("spyre.bool_outputs")  # f32 0/1 on device, bool on host
    bools = {b.data for b in bools_attr.data} if isinstance(bools_attr, ArrayAttr) else set()
    outputs = [replace(b, layout=replace(b.layout, host_dtype="bool")) if b.name in bools else b
               for b in outputs]
    every_result = set(ret.arguments)
    launches = [o for o in block.ops if isinstance(o, LaunchOp)]
    intermediates = [_binding(r.name_hint or "tmp", r) for o in launches
                     for r in o.results if r not in every_result]
    by_name = {p.kernel.data: p for p in module.body.block.ops if isinstance(p, ProgramOp)}
    programs = []
    for launch in launches:
        name = launch.callee.string_value()
        if name not in by_name:
            raise CompileError(f"launch of @{name} has no spyrecode.program; run "
                               "spyre-schedule-dataflow first")
        programs.append(by_name[name])
    signature = symbolic_signature(module)
    symbols: dict[str, tuple[int, int]] = {}
    if signature is not None:  # the sizes that vary per call, for the host's program correction
        symbols = dict(signature.symbols)
        for bindings, dims in ((inputs, signature.inputs), (outputs, signature.outputs)):
            for binding, symbolic in zip(bindings, dims, strict=True):
                binding.symbolic = dict(symbolic)
        for binding, made in zip(inputs, signature.made):
            binding.made = made
    return ProgramTensors(inputs, outputs, intermediates, params, launches, programs,
                          returned, symbols)


def weight_layout(param: ParamOp) -> DeviceLayout:
    """The device layout of a param's data: its result's shape (permuted as the param
    says), the rows of a matrix zero-padded to whole sticks of K."""
    shape = tuple(param.result.type.get_shape())
    padded = layout_of(param.result).padded_shape
    if len(shape) >= 2 and padded[0] > shape[0]:
        shape = (padded[0], *shape[1:])
    return DeviceLayout(shape, host_dtype(param.result))


def _buffer_updates(graph: func.FuncOp, results: list[SSAValue],
                    params: list[ParamOp]) -> list[str]:
    """The buffers the leading results update (`spyre.mutated_buffers`, from the export's
    buffer mutations). Each must already be in its buffer's storage, written in place (a
    KV-cache scatter): the program keeps the buffer on the device, and later runs see the
    new value, as torch's module state does. Anything else is a compile error."""
    attr = graph.attributes.get("spyre.mutated_buffers")
    names = [n.data for n in attr.data] if isinstance(attr, ArrayAttr) else []
    for name, value in zip(names, results):
        param = next((p for p in params if p.param_name.data == name and p.perm is None), None)
        if param is None or addr_of(value) != addr_of(param.result):
            raise CompileError(
                f"buffer '{name}' is updated by %{value.name_hint}, which is not an in-place "
                "update of it; only row writes (`cache[:, :, pos] = k`, `index_copy_`) are "
                "done in place on the device")
    return names
