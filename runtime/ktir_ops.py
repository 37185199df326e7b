"""Op implementations of the KTIR interpreter, on xDSL's interpreter framework.

`KtirFunctions` is one core's `InterpreterFunctions`: NumPy implementations of the arith,
math, tensor and linalg ops KTIR kernels use, and of the ktdp ops that build views and tiles
and move tiles between memory and tensors. Elementwise ops apply to whole tensors (and to
scalars); linalg bodies run once on whole arrays (`ktir_linalg.py`). Control flow and the
inter-tile ops, which must be able to pause a core, are run by the scheduler in
`ktir_interpreter.py`, not here.

Values: index scalars are Python ints, other scalars NumPy scalars of their type, tensors
NumPy arrays, and ktdp values the classes of `spyrec.dialects.ktdp_values`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
from xdsl.dialects import affine, arith, math, tensor
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ContainerType,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    ShapedType,
    TensorType,
    VectorType,
)
from xdsl.dialects.linalg import abstract_ops as linalg_abstract
from xdsl.dialects.linalg import ops as linalg
from xdsl.dialects.linalg.attrs import IteratorType
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    impl,
    register_impls,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from spyrec.dialects import ktdp, std_ext_arith, std_ext_linalg
from spyrec.dialects.ktdp_affine import bind_symbols
from spyrec.dialects.ktdp_values import (
    MASKED_TILE,
    STICK_BYTES,
    AccessTile,
    Description,
    DistributedView,
    KtirError,
    LazyText,
    Lpddr,
    Lx,
    Memory,
    MemView,
    PlacedArray,
    TensorView,
    TilePoints,
    View,
    enumerate_tile,
    indirect_subscript,
    numpy_dtype,
    view_origin,
)
from spyrec.runtime.ktir_args import pointer_root
from spyrec.runtime.ktir_linalg import Structured, StructuredEngine
from spyrec.runtime.ktir_races import RaceDetector
from spyrec.runtime.sfu import erf

# Elementwise ops charged at this many vector passes per element (ktir-cpu's 4x model).
TRANSCENDENTAL = frozenset(
    {
        "math.exp",
        "math.exp2",
        "math.expm1",
        "math.log",
        "math.log2",
        "math.log10",
        "math.log1p",
        "math.sqrt",
        "math.rsqrt",
        "math.tanh",
        "math.erf",
        "math.powf",
        "math.sin",
        "math.cos",
        "math.tan",
        "math.atan",
        "math.atan2",
    }
)


@dataclass
class CoreStats:
    """What one core did, for the latency estimate."""

    lpddr_bytes: int = 0  # whole 128-byte sticks to or from LPDDR
    lpddr_element_bytes: int = 0  # the elements the tiles name, each counted once per access
    lx_bytes: int = 0  # sticks of this core's own LX
    ring_bytes: int = 0  # sticks of other cores' LX, and inter-tile deliveries
    vector_bytes: int = 0  # bytes produced by elementwise work (transcendentals count 4x)
    matmul_flops: int = 0
    loads: int = 0
    stores: int = 0


@dataclass
class CoreEnv:
    """The machine as one core sees it."""

    core: int  # linear id: x fastest
    coords: tuple[int, ...]  # grid coordinates, x first
    lpddr: Lpddr
    lx: list[Lx]
    lx_capacity: int
    races: RaceDetector | None = None
    stats: CoreStats = field(default_factory=CoreStats)
    # the array placed for each pointer parameter: a view built on the parameter (plus an
    # offset) may only touch that array's bytes
    homes: Mapping[SSAValue, PlacedArray] = field(default_factory=dict)
    # every direct access tile is masked (the kernel's MASKED_KERNEL attribute, or the
    # caller's masked_tails=True)
    masked_tails: bool = False


@dataclass(frozen=True)
class RuntimeArg:
    """The value of a `!ktdp.runtime_arg` parameter."""

    value: Any
    granularity: int | None
    upperbound: int | None


def element_type(value_type: Attribute) -> Attribute:
    if isinstance(value_type, ShapedType):
        return cast(ContainerType[Attribute], value_type).get_element_type()
    return value_type


def finish(value: Any, result_type: Attribute) -> Any:
    """`value` as the interpreter represents a value of `result_type`."""
    if isinstance(result_type, IndexType):
        if isinstance(value, np.ndarray) and value.ndim:
            # index arithmetic inside a generic body runs over the whole iteration space
            return value.astype(np.int64, copy=False)
        return int(value)
    dtype = numpy_dtype(element_type(result_type))
    if isinstance(result_type, TensorType | VectorType):
        return np.asarray(value).astype(dtype, copy=False)
    if isinstance(value, np.ndarray) and value.ndim:
        return value.astype(dtype, copy=False)
    return dtype.type(value)


def _erf(x: Any) -> Any:
    """erf in float64 (the SFU's implementation: within 1e-13 relative), whole-array."""
    return erf(np.asarray(x, dtype=np.float64))


def _trunc_div(a: Any, b: Any) -> Any:
    quotient = np.abs(a) // np.abs(b)
    return np.where((np.asarray(a) < 0) != (np.asarray(b) < 0), -quotient, quotient)


def _unsigned(value: Any, width: int) -> Any:
    return np.asarray(value).astype(np.int64) & ((1 << width) - 1) if width < 64 else value


def _ceil_div(a: Any, b: Any) -> Any:
    return -(-np.asarray(a) // b)


def _cmpf(predicate: int, a: Any, b: Any) -> Any:
    a, b = np.asarray(a), np.asarray(b)
    unordered = np.isnan(a) | np.isnan(b)
    base = [
        np.zeros(np.broadcast(a, b).shape, dtype=bool),
        a == b,
        a > b,
        a >= b,
        a < b,
        a <= b,
        a != b,
        ~unordered,
    ]
    if predicate == 15:
        return np.ones(np.broadcast(a, b).shape, dtype=bool)
    if predicate == 14:
        return unordered
    if predicate <= 7:
        return base[predicate] & ~unordered if predicate not in (0, 7) else base[predicate]
    return base[predicate - 7] | unordered


def _cmpi(predicate: int, a: Any, b: Any, width: int) -> Any:
    if predicate >= 6:
        a, b = _unsigned(a, width), _unsigned(b, width)
    comparisons = [np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal]
    # eq ne slt sle sgt sge, then ult ule ugt uge on the zero-extended values
    return comparisons[predicate if predicate < 6 else predicate - 4](a, b)


def _affine_results(affine_map: AffineMap, operands: Sequence[int]) -> list[int]:
    """The results of an affine map on index operands (its dims, then its symbols)."""
    dims, symbols = operands[: affine_map.num_dims], operands[affine_map.num_dims :]
    return [int(value) for value in affine_map.eval(list(dims), list(symbols))]


def _width(value_type: Attribute) -> int:
    element = element_type(value_type)
    return 64 if isinstance(element, IndexType) else cast(Any, element).width.data


_FLOAT_BINARY: dict[type[Operation], Callable[[Any, Any], Any]] = {
    arith.AddfOp: np.add,
    arith.SubfOp: np.subtract,
    arith.MulfOp: np.multiply,
    arith.DivfOp: np.divide,
    arith.MaximumfOp: np.maximum,
    arith.MinimumfOp: np.minimum,
    arith.MaxnumfOp: np.fmax,
    arith.MinnumfOp: np.fmin,
    math.PowFOp: np.power,
    math.Atan2Op: np.arctan2,
    math.CopySignOp: np.copysign,
}

_INT_BINARY: dict[type[Operation], Callable[[Any, Any], Any]] = {
    arith.AddiOp: lambda a, b: a + b,
    arith.SubiOp: lambda a, b: a - b,
    arith.MuliOp: lambda a, b: a * b,
    arith.DivSIOp: _trunc_div,
    arith.DivUIOp: lambda a, b: a // b,
    arith.RemSIOp: lambda a, b: a - b * _trunc_div(a, b),
    arith.RemUIOp: lambda a, b: a % b,
    arith.FloorDivSIOp: lambda a, b: a // b,
    arith.CeilDivSIOp: _ceil_div,
    arith.CeilDivUIOp: _ceil_div,
    arith.MaxSIOp: np.maximum,
    arith.MinSIOp: np.minimum,
    arith.MaxUIOp: np.maximum,
    arith.MinUIOp: np.minimum,
    arith.AndIOp: np.bitwise_and,
    arith.OrIOp: np.bitwise_or,
    arith.XOrIOp: np.bitwise_xor,
    arith.ShLIOp: np.left_shift,
    arith.ShRSIOp: np.right_shift,
    arith.ShRUIOp: np.right_shift,
}

_UNARY: dict[type[Operation], Callable[[Any], Any]] = {
    arith.NegfOp: np.negative,
    math.AbsFOp: np.abs,
    math.AbsIOp: np.abs,
    math.ExpOp: np.exp,
    math.Exp2Op: np.exp2,
    math.ExpM1Op: np.expm1,
    math.LogOp: np.log,
    math.Log2Op: np.log2,
    math.Log10Op: np.log10,
    math.Log1pOp: np.log1p,
    math.SqrtOp: np.sqrt,
    # in float64, rounded once to the result type by `finish` (1 / np.sqrt(x) of an f16
    # rounded twice: up to an ulp off, which a whole row's RMSNorm scale inherits)
    math.RsqrtOp: lambda x: 1 / np.sqrt(np.asarray(x, dtype=np.float64)),
    math.TanhOp: np.tanh,
    math.ErfOp: _erf,
    math.SinOp: np.sin,
    math.CosOp: np.cos,
    math.TanOp: np.tan,
    math.AtanOp: np.arctan,
    math.FloorOp: np.floor,
    math.CeilOp: np.ceil,
    math.RoundOp: lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5),
    math.RoundEvenOp: np.rint,
    math.TruncOp: np.trunc,
}

# Conversions: the result type decides the NumPy dtype; these only pre-process the input.
_CONVERSIONS: dict[type[Operation], Callable[[Any, Attribute], Any]] = {
    arith.ExtFOp: lambda x, _: x,
    arith.TruncFOp: lambda x, _: x,
    arith.ExtSIOp: lambda x, _: x,
    arith.ExtUIOp: lambda x, t: _unsigned(x, _width(t)),
    arith.TruncIOp: lambda x, _: x,
    arith.SIToFPOp: lambda x, _: x,
    arith.UIToFPOp: lambda x, t: _unsigned(x, _width(t)),
    arith.FPToSIOp: lambda x, _: np.trunc(x),
    arith.FPToUIOp: lambda x, _: np.trunc(x),
    arith.IndexCastOp: lambda x, _: x,
    std_ext_arith.SIToFPOp: lambda x, _: x,
    std_ext_arith.UIToFPOp: lambda x, t: _unsigned(x, _width(t)),
    std_ext_arith.FPToSIOp: lambda x, _: np.trunc(x),
    std_ext_arith.FPToUIOp: lambda x, _: np.trunc(x),
    std_ext_arith.IndexCastOp: lambda x, _: x,
    std_ext_arith.IndexCastUIOp: lambda x, t: _unsigned(x, _width(t)),
}


_LINALG_STRUCTURED: tuple[type[Operation], ...] = (
    linalg.GenericOp,
    std_ext_linalg.GenericOp,
    linalg.AddOp,
    linalg.SubOp,
    linalg.MulOp,
    linalg.ExpOp,
    linalg.LogOp,
    linalg.SqrtOp,
    linalg.SelectOp,
    linalg.FillOp,
    linalg.CopyOp,
    linalg.MaxOp,
    linalg.MinOp,
    linalg.TransposeOp,
    linalg.MatmulOp,
    std_ext_linalg.MatmulOp,
    std_ext_linalg.BatchMatmulOp,
    std_ext_linalg.DivOp,
)


def _elementwise_namespace() -> dict[str, Any]:
    """@impl functions for the table-driven elementwise ops, by op class."""
    namespace: dict[str, Any] = {}

    def binary(fn: Callable[[Any, Any], Any]):
        def run(ft: KtirFunctions, interpreter: Interpreter, op: Operation, args: PythonValues):
            with np.errstate(all="ignore"):
                value = finish(fn(args[0], args[1]), op.results[0].type)
            ft.charge(op, value)
            return (value,)

        return run

    def unary(fn: Callable[[Any], Any]):
        def run(ft: KtirFunctions, interpreter: Interpreter, op: Operation, args: PythonValues):
            with np.errstate(all="ignore"):
                value = finish(fn(args[0]), op.results[0].type)
            ft.charge(op, value)
            return (value,)

        return run

    def conversion(fn: Callable[[Any, Attribute], Any]):
        def run(ft: KtirFunctions, interpreter: Interpreter, op: Operation, args: PythonValues):
            with np.errstate(all="ignore"):
                value = finish(fn(args[0], op.operands[0].type), op.results[0].type)
            return (value,)

        return run

    def structured(ft: KtirFunctions, interpreter: Interpreter, op: Operation, args: PythonValues):
        return ft.run_structured_op(interpreter, op, args)

    runs = [(op_class, binary(fn)) for table in (_FLOAT_BINARY, _INT_BINARY)
            for op_class, fn in table.items()]
    runs += [(op_class, unary(fn)) for op_class, fn in _UNARY.items()]
    runs += [(op_class, conversion(fn)) for op_class, fn in _CONVERSIONS.items()]
    for op_class, run in runs:
        namespace[f"run_{op_class.__module__}_{op_class.__name__}"] = impl(op_class)(run)
    for op_class in _LINALG_STRUCTURED:
        namespace[f"run_{op_class.__module__}_{op_class.__name__}"] = impl(op_class)(structured)
    return namespace


_Elementwise = type("_Elementwise", (InterpreterFunctions,), _elementwise_namespace())


def _static_or_dynamic(static: Sequence[int], dynamic: Sequence[Any]) -> list[int]:
    values = iter(dynamic)
    return [int(next(values)) if s == DYNAMIC_INDEX else int(s) for s in static]


def _result_shape(result_type: Attribute, dynamic: Sequence[Any] = ()) -> tuple[int, ...]:
    return tuple(_static_or_dynamic(cast(ShapedType, result_type).get_shape(), dynamic))


@register_impls
@dataclass
class KtirFunctions(_Elementwise):
    """Op implementations for one core of the grid."""

    env: CoreEnv = field(default=None)  # type: ignore[assignment]
    names: Mapping[SSAValue, str] = field(default_factory=dict)
    linalg_indices: list[Any] | None = None
    _tile_cache: dict[tuple[int, tuple[int, ...]], TilePoints] = field(default_factory=dict)

    def describe(self, value: SSAValue) -> str:
        """How errors name `value`: `%name` as the kernel's printed form spells it."""
        name = self.names.get(value) or value.name_hint
        if name:
            return f"%{name}"
        owner = value.owner
        return f"the result of {owner.name}" if isinstance(owner, Operation) else "an argument"

    # ---- accounting ------------------------------------------------------------------
    def charge(self, op: Operation, value: Any) -> None:
        """Count elementwise work on tensors (scalar index arithmetic is free)."""
        if isinstance(value, np.ndarray) and value.size > 1:
            self.charge_vector(op, int(value.size), value.dtype.itemsize)

    def charge_vector(self, op: Operation, elements: int, itemsize: int = 2) -> None:
        factor = 4 if op.name in TRANSCENDENTAL else 1
        self.env.stats.vector_bytes += elements * itemsize * factor

    def charge_matmul(self, flops: int) -> None:
        self.env.stats.matmul_flops += flops

    def charge_memory(self, memory: Memory, addresses: np.ndarray, itemsize: int) -> None:
        sticks = int(np.unique(addresses // STICK_BYTES).size) * STICK_BYTES
        if isinstance(memory, Lpddr):
            self.env.stats.lpddr_bytes += sticks
            self.env.stats.lpddr_element_bytes += int(addresses.size) * itemsize
        elif isinstance(memory, Lx) and memory.core == self.env.core:
            self.env.stats.lx_bytes += sticks
        else:
            self.env.stats.ring_bytes += sticks

    # ---- arith -----------------------------------------------------------------------
    @impl(arith.ConstantOp)
    def run_constant(self, interpreter: Interpreter, op: arith.ConstantOp, args: PythonValues):
        value = op.value
        result_type = op.result.type
        if isinstance(value, DenseIntOrFPElementsAttr):
            dtype = numpy_dtype(element_type(result_type))
            data = np.array(value.get_values(), dtype=dtype)
            shape = cast(ShapedType, result_type).get_shape()
            return (
                np.array(np.broadcast_to(data, shape) if data.size == 1 else data.reshape(shape)),
            )
        if isinstance(value, IntegerAttr | FloatAttr):
            return (finish(value.value.data, result_type),)
        raise KtirError(f"arith.constant of {value} is not supported")

    def _cmpf(self, op: Operation, args: PythonValues) -> PythonValues:
        predicate = cast(IntegerAttr, op.properties["predicate"]).value.data
        return (_bool_value(_cmpf(predicate, args[0], args[1])),)

    def _cmpi(self, op: Operation, args: PythonValues) -> PythonValues:
        predicate = cast(IntegerAttr, op.properties["predicate"]).value.data
        return (_bool_value(_cmpi(predicate, args[0], args[1], _width(op.operands[0].type))),)

    def _select(self, op: Operation, args: PythonValues) -> PythonValues:
        cond, lhs, rhs = args
        if np.ndim(cond) == 0:
            return (lhs if bool(cond) else rhs,)
        value = finish(np.where(cond, lhs, rhs), op.results[0].type)
        self.charge(op, value)
        return (value,)

    @impl(arith.CmpfOp)
    def run_cmpf(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        return self._cmpf(op, args)

    @impl(std_ext_arith.CmpfOp)
    def run_cmpf_ext(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        return self._cmpf(op, args)

    @impl(arith.CmpiOp)
    def run_cmpi(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        return self._cmpi(op, args)

    @impl(std_ext_arith.CmpiOp)
    def run_cmpi_ext(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        return self._cmpi(op, args)

    @impl(arith.SelectOp)
    def run_select(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        return self._select(op, args)

    @impl(std_ext_arith.SelectOp)
    def run_select_ext(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        return self._select(op, args)

    @impl(arith.BitcastOp)
    def run_bitcast(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        target = numpy_dtype(element_type(op.results[0].type))
        bits = np.asarray(args[0])
        return (bits.view(target) if bits.ndim else bits.reshape(1).view(target)[0],)

    @impl(math.FmaOp)
    def run_fma(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        value = finish(args[0] * args[1] + args[2], op.results[0].type)
        self.charge(op, value)
        return (value,)

    # ---- affine (index arithmetic) ---------------------------------------------------
    @impl(affine.ApplyOp)
    def run_affine_apply(self, interpreter: Interpreter, op: affine.ApplyOp, args: PythonValues):
        return tuple(_affine_results(op.map.data, args))

    @impl(affine.MinOp)
    def run_affine_min(self, interpreter: Interpreter, op: affine.MinOp, args: PythonValues):
        return (min(_affine_results(op.map.data, args)),)

    # ---- tensor ----------------------------------------------------------------------
    @impl(tensor.EmptyOp)
    def run_empty(self, interpreter: Interpreter, op: tensor.EmptyOp, args: PythonValues):
        result_type = op.tensor.type
        return (
            np.zeros(
                _result_shape(result_type, args), dtype=numpy_dtype(element_type(result_type))
            ),
        )

    @impl(tensor.SplatOp)
    def run_splat(self, interpreter: Interpreter, op: tensor.SplatOp, args: PythonValues):
        result_type = op.result.type
        shape = _result_shape(result_type, args[1:])
        return (np.full(shape, args[0], dtype=numpy_dtype(element_type(result_type))),)

    @impl(tensor.ExtractOp)
    def run_extract(self, interpreter: Interpreter, op: tensor.ExtractOp, args: PythonValues):
        value = np.asarray(args[0])[tuple(int(i) for i in args[1:])]
        return (finish(value, op.result.type),)

    @impl(tensor.InsertOp)
    def run_insert(self, interpreter: Interpreter, op: tensor.InsertOp, args: PythonValues):
        out = np.array(args[1], copy=True)
        out[tuple(int(i) for i in args[2:])] = args[0]
        return (out,)

    @impl(tensor.DimOp)
    def run_dim(self, interpreter: Interpreter, op: tensor.DimOp, args: PythonValues):
        return (int(np.shape(args[0])[int(args[1])]),)

    @impl(tensor.CastOp)
    def run_tensor_cast(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        return (args[0],)

    @impl(tensor.FromElementsOp)
    def run_from_elements(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        result_type = op.results[0].type
        dtype = numpy_dtype(element_type(result_type))
        return (np.array(args, dtype=dtype).reshape(_result_shape(result_type)),)

    @impl(tensor.ConcatOp)
    def run_concat(self, interpreter: Interpreter, op: tensor.ConcatOp, args: PythonValues):
        return (np.concatenate([np.asarray(a) for a in args], axis=op.dim.value.data),)

    def _slices(self, op: Operation, values: Sequence[Any]) -> tuple[slice, ...]:
        offsets = _static_or_dynamic(
            cast(Any, op).static_offsets.get_values(), values[: len(cast(Any, op).offsets)]
        )
        rest = values[len(cast(Any, op).offsets) :]
        sizes = _static_or_dynamic(
            cast(Any, op).static_sizes.get_values(), rest[: len(cast(Any, op).sizes)]
        )
        strides = _static_or_dynamic(
            cast(Any, op).static_strides.get_values(), rest[len(cast(Any, op).sizes) :]
        )
        return tuple(
            slice(o, o + (s - 1) * st + 1, st)
            for o, s, st in zip(offsets, sizes, strides, strict=True)
        )

    @impl(tensor.ExtractSliceOp)
    def run_extract_slice(
        self, interpreter: Interpreter, op: tensor.ExtractSliceOp, args: PythonValues
    ):
        source = np.asarray(args[0])
        window = self._slices(op, args[1:])
        _check_window(source.shape, window, "tensor.extract_slice")
        piece = source[window]
        # A rank-reducing slice drops unit dims: the result type has the final shape.
        shape = cast(ShapedType, op.result.type).get_shape()
        return (np.array(piece if DYNAMIC_INDEX in shape else piece.reshape(shape)),)

    @impl(tensor.InsertSliceOp)
    def run_insert_slice(
        self, interpreter: Interpreter, op: tensor.InsertSliceOp, args: PythonValues
    ):
        out = np.array(args[1], copy=True)
        window = self._slices(op, args[2:])
        _check_window(out.shape, window, "tensor.insert_slice")
        out[window] = np.asarray(args[0]).reshape(out[window].shape)
        return (out,)

    @impl(tensor.ExpandShapeOp)
    def run_expand_shape(
        self, interpreter: Interpreter, op: tensor.ExpandShapeOp, args: PythonValues
    ):
        return (np.asarray(args[0]).reshape(_result_shape(op.result.type, args[1:])),)

    @impl(tensor.CollapseShapeOp)
    def run_collapse_shape(
        self, interpreter: Interpreter, op: tensor.CollapseShapeOp, args: PythonValues
    ):
        shape = cast(ShapedType, op.result.type).get_shape()
        return (np.asarray(args[0]).reshape([-1 if s == DYNAMIC_INDEX else s for s in shape]),)

    @impl(tensor.ReshapeOp)
    def run_reshape(self, interpreter: Interpreter, op: tensor.ReshapeOp, args: PythonValues):
        return (np.asarray(args[0]).reshape([int(s) for s in np.asarray(args[1]).reshape(-1)]),)

    # ---- linalg ----------------------------------------------------------------------
    def _structured(self, interpreter: Interpreter, spec: Structured) -> PythonValues:
        for init in spec.inits:
            if not isinstance(init, np.ndarray):
                raise KtirError(f"{spec.op.name} on buffers is not supported; KTIR uses tensors")
        # pyright takes this file (runtime/) and the KtirFunctions ktir_linalg names through the
        # spyrec/runtime link for two modules
        engine = StructuredEngine(self, interpreter)  # pyright: ignore[reportArgumentType]
        return tuple(engine.run(spec))

    def run_structured_op(
        self, interpreter: Interpreter, op: Operation, args: PythonValues
    ) -> PythonValues:
        """A named or generic linalg op, through the whole-tensor engine."""
        structured = cast(linalg_abstract.LinalgStructuredOperation, op)
        num_inputs = len(structured.inputs)
        maps = [m.data for m in structured.get_indexing_maps()]
        iterators = [it.data for it in structured.get_iterator_types()]
        return self._structured(
            interpreter,
            Structured(
                op,
                structured.body.block,
                maps,
                [it == IteratorType.REDUCTION for it in iterators],
                list(args[:num_inputs]),
                list(args[num_inputs:]),
                [v.type for v in structured.outputs],
            ),
        )

    @impl(linalg.IndexOp)
    def run_index(self, interpreter: Interpreter, op: linalg.IndexOp, args: PythonValues):
        if self.linalg_indices is None:
            raise KtirError("linalg.index outside a structured op body")
        return (self.linalg_indices[op.dim.value.data],)

    @impl(linalg.BroadcastOp)
    def run_broadcast(self, interpreter: Interpreter, op: linalg.BroadcastOp, args: PythonValues):
        init = np.asarray(args[1])
        expanded = np.expand_dims(np.asarray(args[0]), tuple(op.dimensions.get_values()))
        return (np.array(np.broadcast_to(expanded, init.shape), dtype=init.dtype),)

    @impl(std_ext_linalg.ReduceOp)
    def run_reduce(self, interpreter: Interpreter, op: std_ext_linalg.ReduceOp, args: PythonValues):
        num_inputs = len(op.inputs)
        rank = len(np.shape(args[0]))
        dims = set(op.dimensions.get_values())
        identity = AffineMap.identity(rank)
        kept = AffineMap(
            rank, 0, tuple(AffineExpr.dimension(d) for d in range(rank) if d not in dims)
        )
        return self._structured(
            interpreter,
            Structured(
                op,
                op.combiner.block,
                [identity] * num_inputs + [kept] * len(op.inits),
                [d in dims for d in range(rank)],
                list(args[:num_inputs]),
                list(args[num_inputs:]),
                [v.type for v in op.inits],
            ),
        )

    @impl(linalg.ReduceOp)
    def run_xdsl_reduce(self, interpreter: Interpreter, op: linalg.ReduceOp, args: PythonValues):
        rank = len(np.shape(args[0]))
        dims = set(op.dimensions.get_values())
        kept = AffineMap(
            rank, 0, tuple(AffineExpr.dimension(d) for d in range(rank) if d not in dims)
        )
        return self._structured(
            interpreter,
            Structured(
                op,
                op.region.block,
                [AffineMap.identity(rank), kept],
                [d in dims for d in range(rank)],
                [args[0]],
                [args[1]],
                [op.init.type],
            ),
        )

    # ---- ktdp ------------------------------------------------------------------------
    @impl(ktdp.GetComputeTileIdOp)
    def run_tile_id(
        self, interpreter: Interpreter, op: ktdp.GetComputeTileIdOp, args: PythonValues
    ):
        coords = self.env.coords
        return tuple(coords[i] if i < len(coords) else 0 for i in range(len(op.ids)))

    @impl(ktdp.ConstructMemoryViewOp)
    def run_memory_view(
        self, interpreter: Interpreter, op: ktdp.ConstructMemoryViewOp, args: PythonValues
    ):
        offset = int(args[0])
        dynamic_sizes = [int(v) for v in args[1 : 1 + len(op.sizes)]]
        dynamic_strides = [int(v) for v in args[1 + len(op.sizes) :]]
        sizes = _static_or_dynamic(op.static_sizes.get_values(), dynamic_sizes)
        strides = _static_or_dynamic(op.static_strides.get_values(), dynamic_strides)
        view_type = cast(MemRefType, op.result.type)
        dtype = numpy_dtype(view_type.element_type)
        space = op.memory_space
        if space.kind == "global":
            memory: Memory = self.env.lpddr
        else:
            ct_id = cast(int, space.ct_id)
            if ct_id >= len(self.env.lx):
                raise KtirError(
                    f"ct_local memory of tile {ct_id}: the card has {len(self.env.lx)} cores"
                )
            memory = self.env.lx[ct_id]
        coordinate_set = op.coordinate_set.data
        bound_set = bind_symbols(coordinate_set, dynamic_sizes[: coordinate_set.num_symbols])
        view = MemView(
            offset * dtype.itemsize,
            tuple(sizes),
            tuple(strides),
            dtype.itemsize,
            view_origin(bound_set),
            memory=memory,
            dtype=dtype,
            coordinate_set=coordinate_set,
            bound_set=bound_set,
            description=LazyText(lambda: f"view {self.describe(op.result)} ({view_type})"),
        )
        root = pointer_root(op.offset)
        if isinstance(memory, Lpddr) and root is not None:
            view.home = self.env.homes.get(root)
        if isinstance(memory, Lx):
            first, last = view.footprint()
            if first < 0 or last >= memory.size:
                raise KtirError(
                    f"LX overflow: {view.description} spans bytes [{first}, {last}] of the LX of "
                    f"core {memory.core}, which holds {memory.size} bytes"
                )
        return (view,)

    @impl(ktdp.ConstructDistributedMemoryViewOp)
    def run_distributed_view(
        self,
        interpreter: Interpreter,
        op: ktdp.ConstructDistributedMemoryViewOp,
        args: PythonValues,
    ):
        view_type = cast(MemRefType, op.result.type)
        shape = tuple(
            max(p.shape[d] + p.origin[d] for p in args) if s == DYNAMIC_INDEX else s
            for d, s in enumerate(view_type.get_shape())
        )
        return (
            DistributedView(
                list(args),
                shape,
                numpy_dtype(view_type.element_type),
                LazyText(lambda: f"distributed view {self.describe(op.result)} ({view_type})"),
            ),
        )

    def _points(
        self, op: Operation, tile_set: Any, order: Any, symbols: Sequence[int], what: Description
    ) -> TilePoints:
        key = (id(op), tuple(symbols))
        points = self._tile_cache.get(key)
        if points is None:
            points = enumerate_tile(tile_set, order, symbols, what)
            self._tile_cache[key] = points
        return points

    def _check_tile_shape(self, op: Operation, shape: tuple[int, ...]) -> None:
        declared = cast(ktdp.AccessTileType, op.results[0].type).get_shape()
        if len(declared) != len(shape) or any(
            d != DYNAMIC_INDEX and d != s for d, s in zip(declared, shape, strict=False)
        ):
            raise KtirError(
                f"{self.describe(op.results[0])}: the set spans {'x'.join(map(str, shape))} "
                f"points but the type says {op.results[0].type}"
            )

    @impl(ktdp.ConstructAccessTileOp)
    def run_access_tile(
        self, interpreter: Interpreter, op: ktdp.ConstructAccessTileOp, args: PythonValues
    ):
        base = _as_view(args[0], LazyText(lambda: self.describe(op.base)))
        indices = [int(v) for v in args[1 : 1 + len(op.indices)]]
        symbols = [int(v) for v in args[1 + len(op.indices) :]]
        origin = np.asarray(op.base_map.data.eval(indices, []), dtype=np.int64)
        points = self._points(
            op,
            op.access_tile_set.data,
            op.access_tile_order.data,
            symbols,
            LazyText(lambda: f"access_tile_set of {self.describe(op.result)}"),
        )
        self._check_tile_shape(op, points.shape)
        relative = points.points
        return (
            AccessTile(
                base,
                points.shape,
                lambda: relative + origin,
                points.present,
                LazyText(lambda: f"tile {self.describe(op.result)}"),
                masked=self.env.masked_tails or MASKED_TILE in op.attributes,
            ),
        )

    @impl(ktdp.ConstructIndirectAccessTileOp)
    def run_indirect_tile(
        self, interpreter: Interpreter, op: ktdp.ConstructIndirectAccessTileOp, args: PythonValues
    ):
        base = _as_view(args[0], LazyText(lambda: self.describe(op.base)))
        num_views, num_captured = len(op.indirect_memrefs), len(op.captured_variables)
        index_views = [
            _as_view(v, LazyText(lambda o=o: self.describe(o)))
            for v, o in zip(args[1 : 1 + num_views], op.indirect_memrefs, strict=True)
        ]
        captured = [int(v) for v in args[1 + num_views : 1 + num_views + num_captured]]
        symbols = [int(v) for v in args[1 + num_views + num_captured :]]
        points = self._points(
            op,
            op.variables_space_set.data,
            op.variables_space_order.data,
            symbols,
            LazyText(lambda: f"variables_space_set of {self.describe(op.result)}"),
        )
        self._check_tile_shape(op, points.shape)
        variables = [points.points[..., k] for k in range(points.points.shape[-1])]
        maps = [m.data for m in op.per_dim_subscript_maps]
        kinds = op.subscript_kinds
        reads: list[tuple[Memory, np.ndarray, int]] = []

        def coordinates() -> np.ndarray:
            reads.clear()
            views = iter(index_views)
            columns = []
            for indirect, subscript in zip(kinds, maps, strict=True):
                values = [
                    np.broadcast_to(np.asarray(v, dtype=np.int64), points.shape)
                    for v in indirect_subscript(subscript, captured, variables)
                ]
                if not indirect:
                    columns.append(values[0])
                    continue
                view = next(views)
                flat = np.stack([v.reshape(-1) for v in values], axis=1)
                reads.extend((m, a, view.dtype.itemsize) for m, a in view.traffic(flat))
                columns.append(view.read(flat).astype(np.int64).reshape(points.shape))
            return np.stack(columns, axis=-1)

        return (
            AccessTile(
                base,
                points.shape,
                coordinates,
                points.present,
                LazyText(lambda: f"indirect tile {self.describe(op.result)}"),
                lambda: list(reads),
            ),
        )

    def _tile_traffic(self, op: Operation, tile: AccessTile, flat: np.ndarray, write: bool) -> None:
        """Charge the sticks an access touches and check it for races."""
        races = self.env.races
        where = LazyText(lambda: f"{op.name} {', '.join(map(self.describe, op.operands))}")
        for memory, addresses in tile.view.traffic(flat):
            if addresses.size:
                self.charge_memory(memory, addresses, tile.view.dtype.itemsize)
                if races is not None:
                    races.access(
                        self.env.core, memory, addresses, tile.view.dtype.itemsize, write, where
                    )
        for memory, addresses, itemsize in tile.index_reads():
            if addresses.size:
                self.charge_memory(memory, addresses, itemsize)
                if races is not None:
                    races.access(self.env.core, memory, addresses, itemsize, False, where)

    def load(self, op: ktdp.LoadOp, tile: AccessTile) -> np.ndarray:
        """`ktdp.load`: gather the tile's elements in tile order (0 at holes and at the
        masked-off lanes of a masked tile)."""
        flat, lanes = tile.lanes()
        values = tile.view.read(flat)
        self._tile_traffic(op, tile, flat, write=False)
        self.env.stats.loads += 1
        dtype = numpy_dtype(element_type(op.result.type))
        if lanes is None:
            out = values.astype(dtype, copy=False).reshape(tile.shape)
        else:
            out = np.zeros(tile.shape, dtype=dtype)
            out[lanes] = values
        if out.nbytes > self.env.lx_capacity:
            raise KtirError(
                f"LX overflow: the loaded tile {self.describe(op.result)} takes {out.nbytes} "
                f"bytes, more than the {self.env.lx_capacity}-byte LX of a core"
            )
        return out

    def store(self, op: ktdp.StoreOp, value: np.ndarray, tile: AccessTile) -> None:
        """`ktdp.store`: scatter the tensor to the tile's coordinates, in tile order (not to
        holes, nor to the masked-off lanes of a masked tile)."""
        flat, lanes = tile.lanes()
        data = np.asarray(value)
        if data.shape != tile.shape:
            raise KtirError(f"storing a {data.shape} tensor through a {tile.shape} tile")
        data = data[lanes] if lanes is not None else data.reshape(-1)
        tile.view.write(flat, data.astype(tile.view.dtype, copy=False))
        self._tile_traffic(op, tile, flat, write=True)
        self.env.stats.stores += 1

    @impl(ktdp.LoadOp)
    def run_load(self, interpreter: Interpreter, op: ktdp.LoadOp, args: PythonValues):
        return (self.load(op, args[0]),)

    @impl(ktdp.StoreOp)
    def run_store(self, interpreter: Interpreter, op: ktdp.StoreOp, args: PythonValues):
        self.store(op, args[0], args[1])
        return ()

    @impl(ktdp.RuntimeArgExtractOp)
    def run_runtime_arg(
        self, interpreter: Interpreter, op: ktdp.RuntimeArgExtractOp, args: PythonValues
    ):
        arg = args[0]
        if not isinstance(arg, RuntimeArg):
            arg = RuntimeArg(arg, None, None)
        field_name = op.field
        value = arg.value if field_name == "value" else getattr(arg, field_name)
        return (finish(value, op.result.type),)


def _bool_value(value: Any) -> Any:
    array = np.asarray(value, dtype=bool)
    return array if array.ndim else np.bool_(array)


def _check_window(shape: tuple[int, ...], window: tuple[slice, ...], what: str) -> None:
    for dim, (extent, piece) in enumerate(zip(shape, window, strict=True)):
        last = (
            piece.start + ((piece.stop - piece.start - 1) // piece.step) * piece.step
            if piece.stop > piece.start
            else piece.start
        )
        if piece.start < 0 or (piece.stop > piece.start and last >= extent):
            raise KtirError(f"{what} reaches index {last} of dim {dim}, which has {extent}")


def _as_view(value: Any, name: Description) -> View:
    if isinstance(value, View):
        return value
    if isinstance(value, np.ndarray):
        return TensorView(value, LazyText(lambda: f"tensor {name}"))
    raise KtirError(f"{name} is not a view or a tensor")
