"""A reference interpreter for the program a compile is working on, at any stage before
the binary: the `spyre` graph dialect op by op in PyTorch, and, once kernels are lowered,
each `spyre.launch` through the KTIR reference interpreter.

It is how `spyrec bisect` checks one pass at a time: the graph function of the module is
run on host tensors, every op's result is rounded to its element type (where the device
stores it), and the outputs come back in the program's output order. Values stay in their
element type between ops; ops compute in fp32 (matmuls and reductions accumulate in fp32,
as the PT arrays do).

Lowered kernels (`spyre.launch @k(...)`) run in the KTIR interpreter on arrays in their
device shape: the `spyre.layout` of each value gives its padded shape, padding is zero, and
the kernel's results are cropped back to their logical shape.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import DenseArrayBase, DictionaryAttr, ModuleOp, TensorType
from xdsl.ir import Attribute, Block, Operation, OpResult, SSAValue

from spyrec.diagnostics import SpyrecError
from spyrec.dialects import spyre
from spyrec.dialects.spyre_plan import LAYOUT, graph_func

if TYPE_CHECKING:
    from spyrec.verdict import ModelInfo

TORCH_DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32,
                "i32": torch.int32, "i64": torch.int64, "i1": torch.bool}


class InterpretError(SpyrecError):
    """The interpreter met an op it has no rule for, or a malformed program."""


def _dtype(value: SSAValue) -> torch.dtype:
    ttype = value.type
    assert isinstance(ttype, TensorType)
    name = str(ttype.element_type)
    if name not in TORCH_DTYPES:
        raise InterpretError(f"element type {name} of {value.name_hint or 'a value'} has no "
                             "host dtype")
    return TORCH_DTYPES[name]


def _shape(value: SSAValue) -> list[int]:
    assert isinstance(value.type, TensorType)
    return list(value.type.get_shape())


def _stored(result: torch.Tensor, value: SSAValue) -> torch.Tensor:
    """`result` as the device stores `value`: in its element type and shape."""
    out = result.to(_dtype(value))
    if list(out.shape) != _shape(value):
        raise InterpretError(f"{value.owner.name if isinstance(value.owner, Operation) else ''}"
                             f": computed shape {list(out.shape)}, the IR says {_shape(value)}")
    return out


def _f32(t: torch.Tensor) -> torch.Tensor:
    return t.to(torch.float32)


UNARY: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "relu": torch.relu, "gelu": torch.nn.functional.gelu,
    "gelu_tanh": lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
    "silu": torch.nn.functional.silu, "sigmoid": torch.sigmoid, "tanh": torch.tanh,
    "exp": torch.exp, "neg": torch.neg, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt,
    "reciprocal": torch.reciprocal, "abs": torch.abs, "log": torch.log, "erf": torch.erf,
    "sin": torch.sin, "cos": torch.cos,
}
BINARY: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
    "maximum": torch.maximum, "minimum": torch.minimum,
    "keep": lambda a, p: torch.where(p != 0, a, torch.tensor(-0.0, dtype=a.dtype)),
}
REDUCE: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "sum": lambda x: x.sum(-1, keepdim=True),
    "max": lambda x: x.amax(-1, keepdim=True),
    "min": lambda x: x.amin(-1, keepdim=True),
}


def _attention(op: spyre.AttentionOp, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
               mask: torch.Tensor | None) -> torch.Tensor:
    q, k, v = _f32(q), _f32(k), _f32(v)
    if q.dim() >= 3 and op.group > 1:  # grouped-query: key/value head h // group
        k = k.repeat_interleave(op.group, dim=-3)
        v = v.repeat_interleave(op.group, dim=-3)
    scores = (q @ k.transpose(-1, -2)) * op.scale.value.data
    length, keys = scores.shape[-2], scores.shape[-1]
    if op.causal is not None:
        hidden = torch.ones(length, keys, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(hidden, float("-inf"))
    if mask is not None:
        scores = scores + _f32(mask)
    return torch.softmax(scores, dim=-1) @ v


def _window_rows(op: spyre.WindowRowsOp, x: torch.Tensor, pad: torch.Tensor) -> torch.Tensor:
    n, h, w, c = x.shape
    ho, wo = op.out_hw()
    (sh, sw), (ph, pw), (dh, dw) = op.pair("stride"), op.pair("padding"), op.pair("dilation")
    block = op.block_cols()
    out = torch.zeros(n, ho, wo, len(op.tap_list) * block, dtype=x.dtype)
    rows = torch.arange(ho)[:, None]
    cols = torch.arange(wo)[None, :]
    for t, (kh, kw) in enumerate(op.tap_list):
        hi = rows * sh + kh * dh - ph
        wi = cols * sw + kw * dw - pw
        inside = (hi >= 0) & (hi < h) & (wi >= 0) & (wi < w)
        taken = x[:, hi.clamp(0, h - 1), wi.clamp(0, w - 1), :]  # [n, ho, wo, c]
        filled = torch.where(inside[None, :, :, None], taken, pad[0].to(x.dtype))
        out[..., t * block:t * block + c] = filled
    return out


def _scatter(table: torch.Tensor, indices: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    out = table.clone()
    out[..., indices.long(), :] = values.to(out.dtype)
    return out


class GraphInterpreter:
    """Runs the graph function of a module; `launch` runs `spyre.launch` ops."""

    def __init__(self, module: ModuleOp, weights: Mapping[str, np.ndarray]):
        self.module = module
        self.weights = weights
        graph = graph_func(module)
        if graph is None:
            raise InterpretError("no graph function in the module")
        self.graph = graph
        self.lx: list | None = None  # the cores' LX, kept across launches as on the card

    def run(self, inputs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        """The graph's results for host `inputs` (in the program's input order), without
        the buffers it updates in place."""
        block = self.graph.body.block
        if len(inputs) != len(block.args):
            raise InterpretError(f"the graph takes {len(block.args)} inputs, got {len(inputs)}")
        perms_attr = self.graph.attributes.get("spyre.host_perms")
        perms = perms_attr.data if isinstance(perms_attr, DictionaryAttr) else {}
        env: dict[SSAValue, torch.Tensor] = {}
        for arg, host in zip(block.args, inputs):
            perm = perms.get(arg.name_hint or "")
            t = host.permute(*_perm(perm)) if perm is not None else host
            env[arg] = _stored(t.contiguous(), arg)
        results = self._block(block, env)
        outputs = len(self.graph.function_type.outputs.data)
        names = self.graph.attributes.get("spyre.output_names")
        user = len(names.data) if names is not None else outputs  # type: ignore[attr-defined]
        host = []
        for value, t in zip(block.last_op.operands[outputs - user:],  # type: ignore[union-attr]
                            results[outputs - user:]):
            perm = perms.get(_output_name(self.graph, value))
            host.append(t.permute(*[int(i) for i in np.argsort(
                _perm(perm))]) if perm is not None else t)
        return host

    def _block(self, block: Block, env: dict[SSAValue, torch.Tensor]) -> list[torch.Tensor]:
        for op in block.ops:
            if isinstance(op, (func.ReturnOp, spyre.YieldOp)):
                return [env[v] for v in op.operands]
            args = [env[v] for v in op.operands]
            try:
                out = self.op(op, args)
            except InterpretError:
                raise
            except Exception as exc:  # an op the rules mishandle: name it
                raise InterpretError(f"{_describe(op)}: {type(exc).__name__}: {exc}") from exc
            results = out if isinstance(out, list) else [out]
            for value, t in zip(op.results, results):
                env[value] = _stored(t, value)
        raise InterpretError("a block without a terminator")

    def op(self, op: Operation, args: list[torch.Tensor]) -> torch.Tensor | list[torch.Tensor]:
        """One op's results from its operands' values."""
        name = op.name.removeprefix("spyre.")
        if isinstance(op, spyre.ParamOp):
            return self._param(op)
        if isinstance(op, spyre.KernelOp):
            return self._block(op.body.block, dict(zip(op.body.block.args, args)))
        if isinstance(op, spyre.LaunchOp):
            return self.launch(op, args)
        if isinstance(op, spyre.MatmulOp):
            out = _f32(args[0]) @ _f32(args[1])
            return out + _f32(args[2]) if len(args) == 3 else out
        if isinstance(op, spyre.BatchMatmulOp):
            rhs = _f32(args[1])
            return _f32(args[0]) @ (rhs.transpose(-1, -2) if op.transpose_rhs is not None
                                    else rhs)
        if isinstance(op, spyre.AttentionOp):
            return _attention(op, args[0], args[1], args[2], args[3] if len(args) == 4 else None)
        if isinstance(op, (spyre.ReshapeOp, spyre.CastOp)):
            return args[0].reshape(_shape(op.results[0]))
        if isinstance(op, spyre.PermuteRowsOp):
            return args[0].permute(*op.perm)
        if isinstance(op, spyre.ExpandRowsOp):
            return args[0].expand(*_shape(op.results[0]))
        if isinstance(op, spyre.SliceRowsOp):
            dim, start, step = op.bounds
            count = _shape(op.results[0])[dim]
            return args[0].narrow(dim, start, (count - 1) * step + 1)[
                (slice(None),) * dim + (slice(None, None, step),)]
        if isinstance(op, spyre.GatherOp):
            return args[0][args[1].long()]
        if isinstance(op, spyre.ScatterOp):
            return _scatter(*args)
        if isinstance(op, spyre.WindowRowsOp):
            return _window_rows(op, *args)
        if name in UNARY:
            return UNARY[name](_f32(args[0]))
        if name in BINARY:
            return BINARY[name](_f32(args[0]), _f32(args[1]))
        if name.endswith("_scalar") and name.removesuffix("_scalar") in BINARY:
            scalar = torch.tensor(op.properties["value"].value.data)  # type: ignore[attr-defined]
            pair = (scalar, _f32(args[0])) if "reverse" in op.properties else (
                _f32(args[0]), scalar)
            return BINARY[name.removesuffix("_scalar")](*pair)
        if name.startswith("reduce_") and name.removeprefix("reduce_") in REDUCE:
            return REDUCE[name.removeprefix("reduce_")](_f32(args[0]))
        if isinstance(op, spyre.AtenOp):
            raise InterpretError(f"{_describe(op)} is not selected yet (interpret the graph "
                                 "after spyre-legalize)")
        raise InterpretError(f"no interpreter rule for {_describe(op)}")

    def _param(self, op: spyre.ParamOp) -> torch.Tensor:
        if op.value is not None:
            data = np.asarray(op.value.get_values(), dtype=np.float64).reshape(
                op.value.type.get_shape())
            return torch.from_numpy(data)
        name = op.param_name.data
        if name not in self.weights:
            raise InterpretError(f"weight '{name}' has no data")
        t = _as_torch(self.weights[name])
        return t.permute(*op.perm) if op.perm is not None else t

    def launch(self, op: spyre.LaunchOp, args: list[torch.Tensor]) -> list[torch.Tensor]:
        """A lowered kernel through the KTIR reference interpreter, on device-shaped arrays."""
        from spyrec.runtime.ktir_interpreter import Device, run_kernel

        device = Device()
        # LX outlives a launch: a result kept there is read by the next launch (note 61)
        if self.lx is None:
            self.lx = device.lx
        device.lx = self.lx
        args_of: dict[str, Any] = {}
        placed: list[tuple[int, np.ndarray]] = []
        for i, value in enumerate([*op.operands, *op.results]):
            t = args[i] if i < len(args) else torch.zeros(_shape(value), dtype=_dtype(value))
            array = _device_array(value, t)
            address = device.place(array)
            placed.append((address, array))
            args_of[f"arg{i}"] = address // array.dtype.itemsize  # an element offset
        run_kernel(self.module, op.callee.root_reference.data, args_of, device=device,
                   races="off")
        results = []
        for value, (address, array) in zip(op.results, placed[len(op.operands):]):
            device_value = device.read(address, array.shape, array.dtype)
            crop = tuple(slice(0, n) for n in _shape(value))
            results.append(_as_torch(np.ascontiguousarray(device_value[crop])))
        return results


def _perm(attr: Attribute) -> list[int]:
    """A host permutation recorded in `spyre.host_perms` (an `array<i64: ...>`)."""
    assert isinstance(attr, DenseArrayBase)
    return spyre.int_values(attr)


def _output_name(graph: func.FuncOp, value: SSAValue) -> str:
    names = graph.attributes.get("spyre.output_names")
    ret = graph.body.block.last_op
    assert ret is not None
    if names is None:
        return ""
    user = list(ret.operands)[len(ret.operands) - len(names.data):]  # type: ignore[attr-defined]
    return names.data[user.index(value)].data if value in user else ""  # type: ignore[attr-defined]


def _padded_shape(value: SSAValue) -> list[int]:
    layout = _layout_attr(value)
    padded = None if layout is None else layout.data["padded_shape"]
    if not isinstance(padded, DenseArrayBase):
        return _shape(value)
    return [int(v) for v in padded.get_values()]


def _layout_attr(value: SSAValue) -> DictionaryAttr | None:
    if isinstance(value, OpResult):  # one layout per result (an array of them if several)
        layouts = LAYOUT.get(value.op) or ()
        return layouts[value.index] if value.index < len(layouts) else None
    block = value.block  # type: ignore[attr-defined]
    parent = block.parent_op()
    if isinstance(parent, func.FuncOp) and parent.arg_attrs is not None:
        attrs = parent.arg_attrs.data[value.index].data  # type: ignore[attr-defined]
        attr = attrs.get(LAYOUT.key)
        return attr if isinstance(attr, DictionaryAttr) else None
    return None


_NUMPY = {torch.float16: np.float16, torch.float32: np.float32, torch.int32: np.int32,
          torch.int64: np.int32, torch.bool: np.int32}


def _device_array(value: SSAValue, t: torch.Tensor) -> np.ndarray:
    """`t` zero-padded to the device shape of `value` (int64 as int32, as on the device)."""
    if t.dtype == torch.bfloat16:
        import ml_dtypes

        host = t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    else:
        host = t.numpy().astype(_NUMPY[t.dtype])
    padded = _padded_shape(value)
    if len(padded) != host.ndim:
        return host
    return np.pad(host, [(0, p - n) for p, n in zip(padded, host.shape)])


def _as_torch(a: np.ndarray) -> torch.Tensor:
    if a.dtype.name == "bfloat16":
        return torch.from_numpy(np.ascontiguousarray(a).view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(a))


def _describe(op: Operation) -> str:
    node = op.attributes.get("fx_node")
    where = f" (FX node {node.data})" if node is not None else ""  # type: ignore[attr-defined]
    target = op.properties.get("target")
    return f"{op.name}{' ' + target.data if target is not None else ''}{where}"  # type: ignore[attr-defined]


def graph_model_info(module: ModuleOp, count: int, numerics: str = "ieee") -> ModelInfo:
    """The error model (`spyrec.verdict`) of the graph's last `count` results (the program's
    outputs; leading ones are updated buffers), each from its own cone of ops: the depth sums
    the cone's matmul K, reduction widths and attention's scores and keys, the steps count
    the ops that round their result (the interpreter rounds after every op, a kernel only at
    its outputs: an upper bound for the program at any stage). `numerics` "ieee": the
    interpreter rounds 16-bit values as IEEE fp16 and bf16."""
    from spyrec.verdict import STORAGE_UNIT, ModelInfo, OutputModel

    graph = graph_func(module)
    assert graph is not None, "no graph function in the module"
    ret = graph.body.block.last_op
    assert isinstance(ret, func.ReturnOp)
    units = STORAGE_UNIT[numerics]
    outputs = []
    for position, value in enumerate(ret.arguments[len(ret.arguments) - count:]):
        depth = steps = 0
        types = {str(value.type.element_type)} if isinstance(value.type, TensorType) else set()
        seen: set[Operation] = set()
        stack = [value.owner] if isinstance(value.owner, Operation) else []
        while stack:
            op = stack.pop()
            if op in seen:
                continue
            seen.add(op)
            depth += _op_depth(op)
            if op.name.startswith("spyre.") and op.name not in (
                    "spyre.param", "spyre.kernel", "spyre.yield", "spyre.launch",
                    "spyre.reshape"):
                steps += 1 + isinstance(op, spyre.AttentionOp)
            for operand in op.operands:
                if isinstance(operand.type, TensorType):
                    types.add(str(operand.type.element_type))
                if isinstance(operand.owner, Operation):
                    stack.append(operand.owner)
        dtypes = {TORCH_DTYPES[t] for t in types if t in TORCH_DTYPES}
        names = {str(d).removeprefix("torch.") for d in dtypes}
        unit = max((units.get(n, 0.0) for n in names), default=0.0)
        element = str(value.type.element_type)  # type: ignore[attr-defined]
        dtype = str(TORCH_DTYPES.get(element, torch.float32)).removeprefix("torch.")
        outputs.append(OutputModel(f"output{position}", dtype, unit, depth, 1 + steps))
    return ModelInfo(outputs, numerics)


def _op_depth(op: Operation) -> int:
    """The reduction depth one graph op adds: a matmul's K, a reduction's width, attention's
    scores (the head dim) and keys."""
    if isinstance(op, (spyre.MatmulOp, spyre.BatchMatmulOp)):
        return _shape(op.lhs)[-1]
    if isinstance(op, spyre.AttentionOp):
        return _shape(op.query)[-1] + _shape(op.key)[-2]
    if op.name.startswith("spyre.reduce_"):
        return _shape(op.operands[0])[-1]
    return 0
