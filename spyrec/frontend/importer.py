"""Import a torch.export program into the `spyre` graph dialect.

The importer is mechanical: every FX `call_function` node becomes one `spyre.aten` op that
carries the ATen overload, its non-tensor arguments by schema name, the node's name and the
model source line; parameters, buffers and constants become `spyre.param` ops whose data goes
into the returned weight table. Nodes that depend on no user input are evaluated by torch
first (`spyrec.frontend.fold`) and imported as weights named `<node>.folded` that keep the
node's name and source line. Op selection happens later, in `spyre-legalize`.

IR is built through xDSL's Python API (never by printing and parsing text): that is several
times faster than parsing and keeps the frontend linear in the graph size.
"""

from __future__ import annotations

import json
import logging
import os
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import torch
from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols
from xdsl.builder import Builder
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    BFloat16Type,
    BoolAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    Float16Type,
    Float32Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
    f64,
    i64,
)
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.rewriter import InsertPoint

from spyrec.diagnostics import CompileError
from spyrec.dialects.spyre import AtenOp, CastOp, ParamOp
from spyrec.dialects.spyre_plan import record_symbols
from spyrec.frontend.complex_rotary import rewrite_complex
from spyrec.frontend.conv_weights import ConvWeights, plan_convolutions
from spyrec.frontend.decompose import decompose as decompose_program
from spyrec.frontend.fold import fold_constants, stored_as_predicate
from spyrec.frontend.infinities import widen_infinities
from spyrec.frontend.moe import rewrite_routing
from spyrec.frontend.multi_index import rewrite_multi_index
from spyrec.frontend.program_cost import program_cost
from spyrec.frontend.slice_writes import rewrite_slice_writes
from spyrec.frontend.symbolic import Specialization, specialize
from spyrec.frontend.view_chains import collapse_view_chains
from spyrec.target.container import ProgramCost

_TORCH_DIR = os.path.dirname(torch.__file__)
_FRAME = re.compile(r'File "([^"]+)", line (\d+)')

# nodes that forward their first operand unchanged
_NOOP_TARGETS = {"aten._assert_tensor_metadata.default", "aten.alias.default",
                 "aten.detach.default", "aten.lift_fresh_copy.default"}
_ASSERT_TARGETS = {"aten._assert_tensor_metadata.default", "aten._assert_scalar.default",
                   "aten.sym_constrain_range_for_size.default"}

TORCH_TO_MLIR: dict[torch.dtype, Attribute] = {
    torch.float16: Float16Type(),
    torch.bfloat16: BFloat16Type(),
    torch.float32: Float32Type(),
    torch.int64: IntegerType(64),
    torch.int32: IntegerType(32),
    torch.bool: IntegerType(1),
}


@dataclass
class TensorSpec:
    """Name, shape and dtype of a program input or output."""

    name: str
    shape: tuple[int, ...]
    dtype: torch.dtype


# integer constants up to this many elements carry their values into the IR
SMALL_INT_CONSTANT = 4096


@dataclass
class ImportedProgram:
    """The result of importing: the module, its weights and its I/O signature."""

    module: ModuleOp
    weights: dict[str, np.ndarray]
    inputs: list[TensorSpec]
    outputs: list[TensorSpec]
    source_name: str = "<memory>"
    weight_dtypes: dict[str, torch.dtype] = field(default_factory=dict)
    symbolic: Specialization | None = None  # symbolic sizes and where they are, if any
    cost: ProgramCost | None = None  # the source program's own cost (design note 70)


def load_program(path: str | Path) -> torch.export.ExportedProgram:
    """Load a .pt2 file, turning every failure into a CompileError that names the file."""
    path = Path(path)
    if not path.exists():
        raise CompileError(f"{path}: no such file. Pass the path of a .pt2 file written by "
                           "torch.export.save().")
    if path.is_dir():
        raise CompileError(f"{path}: is a directory, not a .pt2 file.")
    if not zipfile.is_zipfile(path):
        with path.open("rb") as stream:
            zip_magic = stream.read(4) == b"PK\x03\x04"
        if zip_magic:
            raise CompileError(f"{path}: a truncated or corrupt .pt2 (a zip archive whose "
                               "directory cannot be read). Save the program again.")
        raise CompileError(
            f"{path}: not a torch.export program (a .pt2 is a zip archive; this file is not). "
            "Write it with torch.export.save(torch.export.export(model, args), path)."
        )
    _check_archive(path)
    # torch logs a traceback of its own while probing archive formats; the error below says it
    logger = logging.getLogger("torch.export")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        return torch.export.load(str(path))
    except Exception as exc:  # torch raises many unrelated types for a foreign file
        raise CompileError(
            f"{path}: not a torch.export program ({type(exc).__name__}: {exc}). "
            "Write it with torch.export.save(torch.export.export(model, args), path)."
        ) from exc
    finally:
        logger.setLevel(level)


def decompose(ep: torch.export.ExportedProgram) -> torch.export.ExportedProgram:
    """Decompose to core ATen, but keep the composites Spyre lowers better whole."""
    return decompose_program(ep, KEEP_WHOLE)


KEEP_WHOLE = [
    torch.ops.aten.linear.default,
    torch.ops.aten.gelu.default,
    torch.ops.aten.silu.default,
    torch.ops.aten.layer_norm.default,
    torch.ops.aten.rms_norm.default,
    torch.ops.aten.softmax.int,
    torch.ops.aten.scaled_dot_product_attention.default,
    # decomposed, these need comparisons and selects; whole, they are a few SFU ops
    torch.ops.aten.softplus.default,
    torch.ops.aten.mish.default,
    torch.ops.aten.logsumexp.default,
    torch.ops.aten.hardswish.default,
    torch.ops.aten.hardsigmoid.default,
    torch.ops.aten.elu.default,
    torch.ops.aten.leaky_relu.default,
    torch.ops.aten.hardtanh.default,
]


def source_line(node: torch.fx.Node) -> str:
    """`model.py:42` for the innermost frame of the node's stack trace outside torch itself."""
    frames = _FRAME.findall(node.meta.get("stack_trace") or "")
    user = [(f, ln) for f, ln in frames if not f.startswith(_TORCH_DIR)]
    if not user:
        return ""
    file, line = user[-1]
    return f"{os.path.basename(file)}:{line}"


def tensor_type(value: Any, what: str) -> TensorType:
    """The MLIR tensor type of a FakeTensor in node.meta['val']."""
    if not isinstance(value, torch.Tensor):
        raise CompileError(f"{what}: expected a tensor value, got {type(value).__name__}")
    if value.dtype not in TORCH_TO_MLIR:
        raise CompileError(f"{what}: dtype {value.dtype} is not supported on Spyre "
                           f"(supported: {', '.join(str(d) for d in TORCH_TO_MLIR)})")
    shape = []
    for axis, dim in enumerate(value.shape):
        if free_unbacked_symbols(dim):
            raise CompileError(
                f"{what}: its dim {axis} has the size {dim}, which "
                "only the data decides (a boolean-mask index `x[mask]`, `nonzero`, a split by "
                "counts read from a tensor), and a compiled Spyre program has sizes fixed when "
                "it is compiled. Compute on every row and select: `torch.where(mask[..., None], "
                "f(x), other)` in place of `f(x[mask])` written back by `y[mask] = ...`.")
        if not isinstance(dim, int):
            raise CompileError(
                f"{what}: dimension {dim} is symbolic; dynamic shapes are not supported yet. "
                "Export with static shapes."
            )
        shape.append(dim)
    return TensorType(TORCH_TO_MLIR[value.dtype], shape)


def _arg_attr(value: Any, what: str) -> Attribute | None:
    """A non-tensor ATen argument as an attribute (None for a None argument)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return BoolAttr.from_bool(value)
    if isinstance(value, int):
        return IntegerAttr(value, i64)
    if isinstance(value, float):
        return FloatAttr(value, f64)
    if isinstance(value, str):
        return StringAttr(value)
    if isinstance(value, torch.dtype):
        return StringAttr(str(value).removeprefix("torch."))
    if isinstance(value, (torch.device, torch.layout, torch.memory_format)):
        return StringAttr(str(value))
    if isinstance(value, (list, tuple)):
        items = [_arg_attr(v, what) for v in value]
        return ArrayAttr([StringAttr("None") if i is None else i for i in items])
    raise CompileError(f"{what}: argument of type {type(value).__name__} is not supported")


class _Importer:
    def __init__(self, ep: torch.export.ExportedProgram):
        self.ep = ep
        self.values: dict[torch.fx.Node, SSAValue | list[SSAValue]] = {}
        self.weights: dict[str, np.ndarray] = {}
        self.weight_dtypes: dict[str, torch.dtype] = {}
        self._tied: dict[tuple[object, ...], ParamOp | CastOp] = {}

    def run(self) -> ImportedProgram:
        sig = self.ep.graph_signature
        param_names = {**sig.inputs_to_parameters, **sig.inputs_to_buffers,
                       **sig.inputs_to_lifted_tensor_constants}
        state = {**self.ep.state_dict, **self.ep.constants}
        # a buffer the program updates (a KV cache) is state, not a constant: nothing that
        # reads it may be folded into a snapshot of its first value
        mutable = set(sig.buffers_to_mutate.values())
        rewrite_routing(self.ep.graph)  # top-k and expert dispatch (design note 76)
        rewrite_slice_writes(self.ep.graph)  # writes into slices as concatenations
        widen_infinities(self.ep.graph)  # 16-bit values that may hold -inf, in f32 (note 100)
        rewrite_multi_index(self.ep.graph)  # x[i, j] as x.view(..)[flat]
        collapse_view_chains(self.ep.graph)  # reshape chains as one view (note 102)
        folding = fold_constants(self.ep.graph, {node: state[name]
                                                 for node, name in param_names.items()
                                                 if name not in mutable})
        convs = plan_convolutions(self.ep.graph, lambda n: state[param_names[n.name]] if (
            n.op == "placeholder" and n.name in param_names) else folding.value(n))
        nodes = list(self.ep.graph.nodes)
        user_inputs = [n for n in nodes if n.op == "placeholder" and n.name not in param_names]
        inputs = [TensorSpec(n.name, tuple(n.meta["val"].shape), n.meta["val"].dtype)
                  for n in user_inputs]
        arg_types = [tensor_type(n.meta["val"], f"input '{n.name}'") for n in user_inputs]
        block = Block(arg_types=arg_types)
        for node, arg in zip(user_inputs, block.args):
            arg.name_hint = node.name
            self.values[node] = arg
        builder = Builder(InsertPoint.at_end(block))
        outputs: list[TensorSpec] = []
        mutated: dict[str, str] = {}
        for node in nodes:
            if node.op == "placeholder" and node.name in param_names:
                self._state(builder, node, param_names[node.name], state[param_names[node.name]])
            elif node in folding.constants:
                self._folded(builder, node, folding.constants[node])
            elif node in folding.folded:
                continue
            elif node in convs.folded_norms:  # folded into its convolution's weights
                conv = self.values[convs.folded_norms[node]]
                assert isinstance(conv, SSAValue)
                self.values[node] = [conv]
            elif node in convs.convs:
                self._conv(builder, node, convs.convs[node])
            elif node.op == "call_function":
                self._call(builder, node)
            elif node.op == "output":
                results = [self._value(a, node) for a in node.args[0]]
                mutated = buffer_mutations(self.ep, node)
                for a in node.args[0]:
                    val = a.meta["val"]
                    if a.name not in mutated:
                        outputs.append(TensorSpec(a.name, tuple(val.shape), val.dtype))
                builder.insert(func.ReturnOp(*results))
        fn = func.FuncOp("forward", ([a.type for a in block.args],
                                     list(_return_types(block))), Region(block))
        fn.attributes["spyre.output_names"] = ArrayAttr([StringAttr(o.name) for o in outputs])
        if mutated:  # the leading results are new values of buffers, not outputs
            fn.attributes["spyre.mutated_buffers"] = ArrayAttr(
                [StringAttr(mutated[a.name]) for a in node.args[0] if a.name in mutated])
        return ImportedProgram(ModuleOp([fn]), self.weights, inputs, outputs,
                               weight_dtypes=self.weight_dtypes)

    def _folded(self, builder: Builder, node: torch.fx.Node, value: torch.Tensor) -> None:
        """A folded node's value as a weight named after the node, with its provenance."""
        name = f"{node.name}.folded"
        while name in self.weights:
            name += "_"
        op = self._param(builder, node, name, value)
        original = node.meta.get("val")
        if isinstance(original, torch.Tensor) and original.dtype == torch.bool \
                and value.dtype.is_floating_point and stored_as_predicate(node):
            self._mark_predicate(op, value)
        op.attributes["fx_node"] = StringAttr(node.name)
        op.attributes["source"] = StringAttr(source_line(node))

    @staticmethod
    def _mark_predicate(op: ParamOp | CastOp, value: torch.Tensor) -> None:
        """`op` holds a boolean as 0.0 / 1.0: a predicate, with its truth values when it is
        small (as a boolean constant's, for op selection to read)."""
        op.attributes["spyre.predicate"] = UnitAttr()
        if value.numel() <= SMALL_INT_CONSTANT:
            op.attributes["spyre.int_values"] = DenseArrayBase.from_list(
                i64, [int(v) for v in value.reshape(-1).tolist()])

    def _state(self, builder: Builder, node: torch.fx.Node, name: str,
               tensor: torch.Tensor) -> None:
        """A parameter, buffer or constant; one tensor lifted under several names (a module
        reused across layers, tied embeddings) becomes one weight, stored and placed once."""
        # a boolean buffer or constant read as a number or moved is stored as the 0.0 / 1.0
        # predicate it is on the device (as a folded boolean: `fold.stored_as_predicate`)
        predicate = tensor.dtype == torch.bool and stored_as_predicate(node)
        key = (tensor.untyped_storage().data_ptr(), tensor.storage_offset(),
               tuple(tensor.shape), tuple(tensor.stride()), tensor.dtype, predicate)
        tied = self._tied.get(key)
        if tied is not None and tensor.numel():
            self.values[node] = tied.result
            return
        op = self._param(builder, node, name, tensor.to(torch.float32) if predicate else tensor)
        if predicate:
            self._mark_predicate(op, tensor)
        self._tied[key] = op

    def _param(self, builder: Builder, node: torch.fx.Node, name: str,
               tensor: torch.Tensor) -> ParamOp | CastOp:
        ttype = tensor_type(tensor, f"parameter '{name}'")
        data = tensor.detach().contiguous()
        # one pass over the weight; what follows looks closer only at constants that hold
        # an infinity or NaN (masks)
        special = data.is_floating_point() and data.numel() > 1 \
            and not bool(torch.isfinite(data).all())
        if special and data.dtype in (torch.float16, torch.bfloat16):
            # DL16 has one pattern for NaN and both infinities, so a 16-bit -inf (an additive
            # attention mask) would reach the device as NaN. Such a constant is kept in f32
            # (exact: every 16-bit value is an f32 value) and cast where it is read, inside
            # the reading kernel's fp32 tile, where -inf stays -inf (design note 62).
            wide = self._param(builder, node, name, data.float())
            cast = builder.insert(CastOp(wide.result, ttype))
            cast.result.name_hint = node.name
            self.values[node] = cast.result
            return cast
        self.weight_dtypes[name] = data.dtype
        if data.dtype == torch.bfloat16:
            array = data.view(torch.int16).numpy().view(ml_dtypes.bfloat16).copy()
        else:
            array = data.numpy().copy()
        self.weights[name] = array
        op = builder.insert(ParamOp(name, ttype))
        if data.numel() == 1 and data.is_floating_point():
            # a scalar (where's 0.0 / -30000, a 0-d `torch.tensor(c)` or buffer): op
            # selection reads it as a constant, the SFU's immediate
            op.properties["value"] = DenseIntOrFPElementsAttr.from_list(
                ttype, [float(data.reshape(-1)[0])])  # type: ignore[arg-type]
        if special and bool(torch.isneginf(data).all(dim=-1).any()):
            # a row of -inf (a mask row that hides every key): softmax gives NaN there and
            # SDPA zeros, which spyre-legalize must know
            op.attributes["spyre.empty_rows"] = UnitAttr()
        if not data.is_floating_point() and data.dtype != torch.bool:
            # the largest magnitude, for the range of the integers computed from it
            # (`passes/graph/int_range.py`)
            op.attributes["spyre.int_bound"] = IntegerAttr(
                int(data.abs().max()) if data.numel() else 0, i64)
        if not data.is_floating_point() and data.numel() <= SMALL_INT_CONSTANT:
            # small integer / boolean constants (folded index grids, a folded `True`) carry
            # their values, for op selection to read (`aten.index` by constant indices)
            op.attributes["spyre.int_values"] = DenseArrayBase.from_list(
                i64, [int(v) for v in data.reshape(-1).tolist()])
        op.result.name_hint = node.name
        self.values[node] = op.result
        return op

    def _conv(self, builder: Builder, node: torch.fx.Node, prepared: ConvWeights) -> None:
        """A convolution with its weight as the matrix of its taps (and a batch norm
        folded in): `spyre.aten` with `kernel_size` added, which says the weight operand is
        that [KH*KW*Cb, Cout] matrix, or the per-tap rows `tap<t>` of a depthwise one
        (see `conv_weights`)."""
        x = self._value(node.args[0], node)
        operands, names = [x], [StringAttr("input")]
        for role, tensor in prepared.operands():
            name = f"{node.name}.{role}"
            param = self._param(builder, node, name, tensor)
            param.result.name_hint = f"{node.name}_{role}"
            param.attributes["fx_node"] = StringAttr(node.name)
            param.attributes["source"] = StringAttr(source_line(node))
            operands.append(param.result)
            names.append(StringAttr(role))
        bound = _bind(node.target._schema, node)  # type: ignore[union-attr]
        args: dict[str, Attribute] = {}
        for key, value in bound.items():
            if not isinstance(value, torch.fx.Node) and value is not None:
                attr = _arg_attr(value, f"node {node.name} argument '{key}'")
                assert attr is not None
                args[key] = attr
        args["kernel_size"] = ArrayAttr([IntegerAttr(k, i64) for k in prepared.kernel])
        out = node if prepared.batch_norm is None else prepared.batch_norm
        if prepared.batch_norm is not None:
            args["batch_norm"] = StringAttr(prepared.batch_norm.name)
        val = out.meta["val"]
        val = val[0] if isinstance(val, (list, tuple)) else val
        op = AtenOp.create(
            operands=operands,
            result_types=[tensor_type(val, f"node {node.name} ({_target_name(node.target)}, "
                                           f"{source_line(node)})")],
            properties={"target": StringAttr(_target_name(node.target)),
                        "args": DictionaryAttr(args), "operand_names": ArrayAttr(names)},
            attributes={"fx_node": StringAttr(node.name), "source": StringAttr(source_line(node))})
        builder.insert(op)
        op.results[0].name_hint = node.name
        self.values[node] = op.results[0]

    def _value(self, arg: Any, user: torch.fx.Node) -> SSAValue:
        value = self.values.get(arg)
        if not isinstance(value, SSAValue) and isinstance(arg, torch.fx.Node) \
                and arg.target is _READ_NUMBER:
            raise _read_number_error(user, arg)
        if not isinstance(value, SSAValue):
            raise CompileError(f"node {user.name}: operand {arg} is not a tensor value")
        return value

    def _call(self, builder: Builder, node: torch.fx.Node) -> None:
        target = node.target
        if target is __import__("operator").getitem:
            self.values[node] = self.values[node.args[0]][node.args[1]]  # type: ignore[index]
            return
        name = _target_name(target)
        if name in _ASSERT_TARGETS:
            return
        if name in _NOOP_TARGETS:
            self.values[node] = self._value(node.args[0], node)
            return
        operands: list[SSAValue] = []
        operand_names: list[Attribute] = []
        args: dict[str, Attribute] = {}
        schema = getattr(target, "_schema", None)
        if schema is None:
            number = _number_read_by(node)
            if number is not None:
                raise _read_number_error(node, number)
            raise CompileError(f"node {node.name}: {target} is not an ATen op")
        bound = _bind(schema, node)
        for arg_name, value in bound.items():
            if isinstance(value, torch.fx.Node):
                operands.append(self._value(value, node))
                operand_names.append(StringAttr(arg_name))
            elif isinstance(value, (list, tuple)) \
                    and any(isinstance(v, torch.fx.Node) for v in value):
                for i, v in enumerate(value):
                    if v is None:  # index_put's [None, None, pos]: the name keeps i
                        continue
                    operands.append(self._value(v, node))
                    operand_names.append(StringAttr(f"{arg_name}.{i}"))
            else:
                attr = _arg_attr(value, f"node {node.name} argument '{arg_name}'")
                if attr is not None:
                    args[arg_name] = attr
        val = node.meta.get("val")
        vals = list(val) if isinstance(val, (list, tuple)) else [val]
        result_types = [tensor_type(v, f"node {node.name} ({name}, {source_line(node)})")
                        for v in vals
                        if isinstance(v, torch.Tensor)]
        op = AtenOp.create(
            operands=operands, result_types=result_types,
            properties={"target": StringAttr(name), "args": DictionaryAttr(args),
                        "operand_names": ArrayAttr(operand_names)},
            attributes={"fx_node": StringAttr(node.name), "source": StringAttr(source_line(node))},
        )
        builder.insert(op)
        for r in op.results:
            r.name_hint = node.name
        if isinstance(val, (list, tuple)):
            self.values[node] = list(op.results)
        elif op.results:
            self.values[node] = op.results[0]


_READ_NUMBER = torch.ops.aten._local_scalar_dense.default  # `.item()`, `.tolist()`


def _number_read_by(node: torch.fx.Node) -> torch.fx.Node | None:
    """The `.item()` whose number `node` computes with (through other arithmetic on numbers,
    never through a tensor op), or None."""
    seen: set[torch.fx.Node] = set()
    stack = list(node.all_input_nodes)
    while stack:
        source = stack.pop()
        if source in seen:
            continue
        seen.add(source)
        if source.target is _READ_NUMBER:
            return source
        if not isinstance(source.meta.get("val"), torch.Tensor):
            stack.extend(source.all_input_nodes)
    return None


def _read_number_error(user: torch.fx.Node, number: torch.fx.Node) -> CompileError:
    """The refusal of `user`, which computes with `number`, read from a tensor at run time."""
    what = getattr(user.target, "__name__", "") if user.target.__module__ == "_operator" \
        else _target_name(user.target)  # `u0 >= 0` on the number: operator.ge
    return CompileError(
        f"node {user.name} ({what}, {source_line(user)}): it computes "
        f"with {number.name}, a number read from a tensor when the program runs (`.item()`, "
        f"`.tolist()`, or indexing by a 0-d tensor, at {source_line(number)}), which a "
        "compiled program cannot use: a value or size only the data decides. Keep the value "
        "in a tensor: index with a 1-D tensor (`x[t.view(1)]`, `torch.index_select(x, dim, "
        "t.view(1))`), mask with `torch.where` instead of splitting by run-time counts (a "
        "mixture-of-experts layer: a dense dispatch, every expert on every token weighted "
        "by its routing, as transformers' `grouped_mm` experts compile: design note 76).")


def buffer_mutations(ep: torch.export.ExportedProgram, output: torch.fx.Node) -> dict[str, str]:
    """{output node name: buffer name} for the outputs that are new buffer values (an
    in-place update such as a KV-cache append); they lead the output list. Other mutations
    (of user inputs or parameters) are refused: a compiled program has no way to write them
    back."""
    mutated: dict[str, str] = {}
    kinds = torch.export.graph_signature.OutputKind
    outputs = output.args[0]
    assert isinstance(outputs, list | tuple)
    names = {a.name for a in outputs if isinstance(a, torch.fx.Node)}
    for position, spec in enumerate(ep.graph_signature.output_specs):
        name = getattr(spec.arg, "name", None)
        if spec.kind == kinds.BUFFER_MUTATION:
            if position != len(mutated):
                raise CompileError(f"node {name}: a buffer mutation after a user output")
            assert name is not None and spec.target is not None
            mutated[name] = spec.target
        elif spec.kind != kinds.USER_OUTPUT:
            raise CompileError(
                f"node {name}: the program's {spec.kind.name.lower().replace('_', ' ')} of "
                f"'{spec.target}' is not supported; only buffers may be updated in place "
                "(copy the input and return the new value instead)")
    assert set(mutated) <= names
    return mutated


def _target_name(target: Any) -> str:
    return str(target).removeprefix("torch.ops.")


def _bind(schema: Any, node: torch.fx.Node) -> dict[str, Any]:
    """Positional and keyword arguments of a node by schema argument name."""
    bound: dict[str, Any] = {}
    for i, arg in enumerate(schema.arguments):
        if i < len(node.args):
            bound[arg.name] = node.args[i]
        elif arg.name in node.kwargs:
            bound[arg.name] = node.kwargs[arg.name]
        elif arg.has_default_value():
            bound[arg.name] = arg.default_value
    return bound


def _return_types(block: Block) -> list[Attribute]:
    term = block.last_op
    assert isinstance(term, func.ReturnOp)
    return [v.type for v in term.arguments]


def _check_archive(path: Path) -> None:
    """Checksums and the versions a .pt2 records, before torch reads it: a corrupt member or
    a program written by another torch gets a message that says which."""
    with zipfile.ZipFile(path) as archive:
        try:
            bad = archive.testzip()
        except (zipfile.BadZipFile, EOFError, OSError, ValueError) as exc:
            raise CompileError(f"{path}: a corrupt .pt2 ({exc}). Save the program again.") from exc
        if bad is not None:
            raise CompileError(f"{path}: a corrupt .pt2: member '{bad}' fails its checksum. "
                               "Save the program again.")
        names = archive.namelist()
        models = [n for n in names if n.endswith("/models/model.json")] or [
            n for n in names if n.endswith(".json") and "/models/" in n]
        if not models:
            return  # not the layout this torch writes; torch.export.load says what it is
        try:
            meta = json.loads(archive.read(models[0]))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise CompileError(f"{path}: a corrupt .pt2: {models[0]} is not JSON ({exc}). "
                               "Save the program again.") from exc
    from torch._export.serde.schema import SCHEMA_VERSION

    written = meta.get("schema_version", {})
    version = (written.get("major"), written.get("minor"))
    if version[0] != SCHEMA_VERSION[0] or (version[1] or 0) > SCHEMA_VERSION[1]:
        raise CompileError(
            f"{path}: written by torch {meta.get('torch_version', '(unknown)')} with export "
            f"schema {version[0]}.{version[1]}; this spyrec runs torch {torch.__version__} "
            f"(schema {SCHEMA_VERSION[0]}.{SCHEMA_VERSION[1]}), which cannot read it. "
            f"Re-export the model with torch {torch.__version__.split('+')[0]}.")


def import_program(ep: torch.export.ExportedProgram,
                   source_name: str = "<memory>") -> ImportedProgram:
    """Decompose `ep` and build its `spyre` graph-dialect module."""
    try:
        decomposed = decompose(ep)
    except Exception as exc:
        raise CompileError(f"{source_name}: torch decomposition failed: {exc}") from exc
    cost = program_cost(decomposed)  # as written: before specialising and any pass
    if rewrite_complex(decomposed.graph, source_line):  # complex values as (re, im) pairs
        decomposed.graph_module.recompile()
    symbolic = specialize(decomposed, source_name, source_line)
    if symbolic is not None:  # static from here on, at the upper bounds
        decomposed = decompose(symbolic.program)
    program = _Importer(decomposed).run()
    program.symbolic = symbolic
    program.cost = cost
    if symbolic is not None:
        record_symbols(program.module, symbolic.signature())
    program.source_name = source_name
    program.module.attributes["spyre.source"] = StringAttr(source_name)
    return program
