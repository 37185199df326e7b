"""The `spyre` graph dialect: whole-tensor ops as the Spyre back end implements them.

The frontend imports a torch.export graph as `spyre.aten` ops (one per FX node, carrying the
ATen target, its non-tensor arguments, the FX node name and the torch source line);
`spyre-legalize` selects a Spyre op for each (`spyre.matmul`, `spyre.relu`, `spyre.add`, ...),
`spyre-fuse` groups them into `spyre.kernel` regions, and `convert-spyre-to-ktir` replaces
each kernel by a KTIR function and a `spyre.launch` of it.

Every op derived from an FX node keeps `fx_node` and `source` attributes so any later
diagnostic can name the node and the line of the model it came from.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    DenseArrayBase,
    i64,
    DictionaryAttr,
    FloatAttr,
    UnitAttr,
    f64,
    StringAttr,
    SymbolRefAttr,
    TensorType,
)
from xdsl.ir import Attribute, Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import IsTerminator, Pure
from xdsl.utils.exceptions import VerifyException


def _provenance(op: Operation, source_op: Operation | None) -> None:
    """Copy the FX node name and source line of `source_op` onto `op`."""
    if source_op is None:
        return
    for key in ("fx_node", "source"):
        if key in source_op.attributes:
            op.attributes[key] = source_op.attributes[key]


def describe(op: Operation) -> str:
    """`model.py:42: aten.addmm.default (node addmm_1)` style name of an op for diagnostics."""
    source = op.attributes.get("source")
    node = op.attributes.get("fx_node")
    target = op.properties.get("target")
    what = target.data if isinstance(target, StringAttr) else op.name
    text = what
    if isinstance(node, StringAttr):
        text += f" (node {node.data})"
    if isinstance(source, StringAttr) and source.data:
        text = f"{source.data}: {text}"
    return text


@irdl_op_definition
class ParamOp(IRDLOperation):
    """A parameter, buffer or constant of the exported program, by name.

    The data lives beside the IR (the driver's weight table, stored in the .spyre). An
    optional `permutation` says the value is the stored tensor with its dims permuted, so
    op selection can fold a transpose of a weight into the weight itself.

        %w = spyre.param {param_name = "fc1.weight", permutation = array<i64: 1, 0>}
               : tensor<256x100xf16>
    """

    name = "spyre.param"
    param_name = prop_def(StringAttr)
    permutation = opt_prop_def(DenseArrayBase)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "attr-dict `:` type($result)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(
        self, param_name: str, result_type: TensorType,
        permutation: Sequence[int] | None = None,
    ):
        props: dict[str, Attribute] = {"param_name": StringAttr(param_name)}
        if permutation is not None:
            props["permutation"] = DenseArrayBase.from_list(i64, list(permutation))
        super().__init__(properties=props, result_types=[result_type])

    @property
    def perm(self) -> tuple[int, ...] | None:
        return None if self.permutation is None else tuple(self.permutation.get_values())


@irdl_op_definition
class AtenOp(IRDLOperation):
    """An imported ATen op, before op selection.

    `target` is the ATen overload, `args` its non-tensor arguments by schema name, and
    `operand_names` the schema name of each tensor operand.

        %y = spyre.aten "aten.relu.default"(%x) {args = {}, operand_names = ["self"]}
               : (tensor<64x256xf16>) -> tensor<64x256xf16>
    """

    name = "spyre.aten"
    target = prop_def(StringAttr)
    args = prop_def(DictionaryAttr)
    operand_names = prop_def(Attribute)
    inputs = var_operand_def()
    outputs = var_result_def()
    assembly_format = "$target `(` $inputs `)` attr-dict `:` functional-type($inputs, $outputs)"
    irdl_options = (ParsePropInAttrDict(),)


class _UnaryOp(IRDLOperation):
    """Base of elementwise ops with one tensor operand."""

    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, result_type: Attribute, source_op: Operation | None = None):
        super().__init__(operands=[input], result_types=[result_type])
        _provenance(self, source_op)

    def verify_(self) -> None:
        _check_same_shape(self, self.input.type, self.result.type)


class _BinaryOp(IRDLOperation):
    """Base of elementwise ops with two tensor operands, broadcast numpy-style."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)"

    def __init__(
        self, lhs: SSAValue, rhs: SSAValue, result_type: Attribute,
        source_op: Operation | None = None,
    ):
        super().__init__(operands=[lhs, rhs], result_types=[result_type])
        _provenance(self, source_op)

    def verify_(self) -> None:
        out = self.result.type
        assert isinstance(out, TensorType)
        for operand in (self.lhs, self.rhs):
            shape = operand.type.get_shape()  # type: ignore[attr-defined]
            full = out.get_shape()
            if len(shape) > len(full) or any(
                s not in (1, f) for s, f in zip(reversed(shape), reversed(full))
            ):
                raise VerifyException(
                    f"{self.name}: operand shape {list(shape)} does not broadcast to the "
                    f"result shape {list(full)}"
                )


def _check_same_shape(op: Operation, a: Attribute, b: Attribute) -> None:
    assert isinstance(a, TensorType) and isinstance(b, TensorType)
    if a.get_shape() != b.get_shape():
        raise VerifyException(
            f"{op.name}: result shape {list(b.get_shape())} differs from the operand shape "
            f"{list(a.get_shape())}"
        )


def _unary(op_name: str, doc: str) -> type[_UnaryOp]:
    cls = type(op_name.split(".")[1].title().replace("_", "") + "Op", (_UnaryOp,),
               {"name": op_name, "__doc__": doc})
    return irdl_op_definition(cls)


def _binary(op_name: str, doc: str) -> type[_BinaryOp]:
    cls = type(op_name.split(".")[1].title().replace("_", "") + "Op", (_BinaryOp,),
               {"name": op_name, "__doc__": doc})
    return irdl_op_definition(cls)


UNARY_OPS: dict[str, type[_UnaryOp]] = {
    name: _unary(f"spyre.{name}", f"Elementwise {name} on the SFU.")
    for name in ("relu", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh", "exp", "neg", "sqrt",
                 "rsqrt", "reciprocal", "abs")
}
class _ScalarOp(IRDLOperation):
    """Base of elementwise ops between a tensor and a constant (`reverse`: constant first)."""

    input = operand_def(TensorType)
    value = prop_def(FloatAttr)
    reverse = opt_prop_def(UnitAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, value: float, result_type: Attribute,
                 reverse: bool = False, source_op: Operation | None = None):
        props: dict[str, Attribute] = {"value": FloatAttr(value, f64)}
        if reverse:
            props["reverse"] = UnitAttr()
        super().__init__(operands=[input], result_types=[result_type], properties=props)
        _provenance(self, source_op)

    def verify_(self) -> None:
        _check_same_shape(self, self.input.type, self.result.type)


class _ReduceOp(IRDLOperation):
    """Base of reductions over the innermost (stick) dimension; the result keeps it as 1."""

    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, result_type: Attribute, source_op: Operation | None = None):
        super().__init__(operands=[input], result_types=[result_type])
        _provenance(self, source_op)

    def verify_(self) -> None:
        src = list(self.input.type.get_shape())  # type: ignore[attr-defined]
        out = list(self.result.type.get_shape())  # type: ignore[attr-defined]
        if not src or out != src[:-1] + [1]:
            raise VerifyException(
                f"{self.name}: result shape {out} must be the operand shape {src} with the "
                "last dimension reduced to 1")


def _scalar(op_name: str, doc: str) -> type[_ScalarOp]:
    cls = type(op_name.split(".")[1].title().replace("_", "") + "Op", (_ScalarOp,),
               {"name": op_name, "__doc__": doc})
    return irdl_op_definition(cls)


def _reduce(op_name: str, doc: str) -> type[_ReduceOp]:
    cls = type(op_name.split(".")[1].title().replace("_", "") + "Op", (_ReduceOp,),
               {"name": op_name, "__doc__": doc})
    return irdl_op_definition(cls)


SCALAR_OPS: dict[str, type[_ScalarOp]] = {
    name: _scalar(f"spyre.{name}_scalar",
                  f"Elementwise {name} of a tensor and the constant `value` on the SFU.")
    for name in ("add", "sub", "mul", "div", "maximum", "minimum")
}
REDUCE_OPS: dict[str, type[_ReduceOp]] = {
    name: _reduce(f"spyre.reduce_{name}", f"Row-wise {name} over the last dimension.")
    for name in ("sum", "max", "min")
}


@irdl_op_definition
class CastOp(IRDLOperation):
    """Converts the element type (fp16 / bf16 / fp32); rounding happens where data is stored.

        %y = spyre.cast %x : tensor<64x128xf16> -> tensor<64x128xf32>
    """

    name = "spyre.cast"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, result_type: Attribute, source_op: Operation | None = None):
        super().__init__(operands=[input], result_types=[result_type])
        _provenance(self, source_op)

    def verify_(self) -> None:
        _check_same_shape(self, self.input.type, self.result.type)


@irdl_op_definition
class ReshapeOp(IRDLOperation):
    """A view with other leading dimensions and the same innermost one: no data moves.

    In the row-sticked layout a tensor is rows x sticks; regrouping the rows changes nothing
    in memory, so the result aliases its operand.

        %y = spyre.reshape %x : tensor<2x16x64xf16> -> tensor<32x64xf16>
    """

    name = "spyre.reshape"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, result_type: Attribute, source_op: Operation | None = None):
        super().__init__(operands=[input], result_types=[result_type])
        _provenance(self, source_op)

    def verify_(self) -> None:
        src = list(self.input.type.get_shape())  # type: ignore[attr-defined]
        out = list(self.result.type.get_shape())  # type: ignore[attr-defined]
        if (src[-1:] or [1]) != (out[-1:] or [1]) or _prod(src) != _prod(out):
            raise VerifyException(
                f"spyre.reshape: {src} -> {out} must keep the innermost dimension and the "
                "element count (other reshapes move data)")
        if self.input.type.element_type != self.result.type.element_type:  # type: ignore[attr-defined]
            raise VerifyException("spyre.reshape: element types differ; use spyre.cast")


def _prod(shape: Sequence[int]) -> int:
    out = 1
    for d in shape:
        out *= d
    return out


BINARY_OPS: dict[str, type[_BinaryOp]] = {
    name: _binary(f"spyre.{name}", f"Elementwise {name} with broadcasting on the SFU.")
    for name in ("add", "sub", "mul", "div", "maximum", "minimum")
}


@irdl_op_definition
class MatmulOp(IRDLOperation):
    """C = A @ B (+ bias) on the PT arrays; A is MxK, B is KxN, bias broadcasts over rows.

        %c = spyre.matmul %a, %b bias %bias : tensor<64x256xf16>, tensor<256x100xf16>,
               tensor<100xf16> -> tensor<64x100xf16>
    """

    name = "spyre.matmul"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$lhs `,` $rhs (`bias` $bias^)? attr-dict `:` type($lhs) `,` type($rhs) "
        "(`,` type($bias)^)? `->` type($result)"
    )

    def __init__(
        self, lhs: SSAValue, rhs: SSAValue, bias: SSAValue | None, result_type: Attribute,
        source_op: Operation | None = None,
    ):
        super().__init__(
            operands=[lhs, rhs, [bias] if bias is not None else []], result_types=[result_type]
        )
        _provenance(self, source_op)

    def verify_(self) -> None:
        a = self.lhs.type.get_shape()  # type: ignore[attr-defined]
        b = self.rhs.type.get_shape()  # type: ignore[attr-defined]
        c = self.result.type.get_shape()  # type: ignore[attr-defined]
        if len(a) != 2 or len(b) != 2:
            raise VerifyException(f"spyre.matmul: operands must be 2-D, got {list(a)} and {list(b)}")
        if a[1] != b[0]:
            raise VerifyException(
                f"spyre.matmul: lhs has K = {a[1]} columns but rhs has {b[0]} rows"
            )
        if tuple(c) != (a[0], b[1]):
            raise VerifyException(
                f"spyre.matmul: result shape {list(c)} is not [{a[0]}, {b[1]}]"
            )
        if self.bias is not None:
            shape = self.bias.type.get_shape()  # type: ignore[attr-defined]
            if tuple(shape) not in ((b[1],), (1, b[1])):
                raise VerifyException(
                    f"spyre.matmul: bias shape {list(shape)} does not match N = {b[1]}"
                )


@irdl_op_definition
class KernelOp(IRDLOperation):
    """A group of spyre ops compiled into one device kernel; intermediates stay in LX.

    Block arguments stand for the operands; `spyre.yield` returns the kernel's results.
    """

    name = "spyre.kernel"
    sym_name = prop_def(StringAttr)
    inputs = var_operand_def()
    outputs = var_result_def()
    body = region_def("single_block")
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = (
        "$sym_name `(` $inputs `)` attr-dict `:` functional-type($inputs, $outputs) $body"
    )

    def __init__(self, sym_name: str, inputs: Sequence[SSAValue], result_types: Sequence[Attribute],
                 body: Region):
        super().__init__(
            operands=[inputs], result_types=[result_types], regions=[body],
            properties={"sym_name": StringAttr(sym_name)},
        )

    def verify_(self) -> None:
        block = self.body.block
        if len(block.args) != len(self.inputs):
            raise VerifyException(
                f"spyre.kernel @{self.sym_name.data}: {len(block.args)} block arguments for "
                f"{len(self.inputs)} inputs"
            )
        term = block.last_op
        if not isinstance(term, YieldOp) or len(term.values) != len(self.outputs):
            raise VerifyException(
                f"spyre.kernel @{self.sym_name.data}: must end in spyre.yield of "
                f"{len(self.outputs)} values"
            )


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Returns the results of a spyre.kernel."""

    name = "spyre.yield"
    values = var_operand_def()
    traits = traits_def(IsTerminator())
    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, values: Sequence[SSAValue]):
        super().__init__(operands=[values])


@irdl_op_definition
class LaunchOp(IRDLOperation):
    """Runs the KTIR kernel `callee` on tensors: the host-side view of one ComputeOnDevice.

        %y = spyre.launch @k0(%x, %w) : (tensor<64x256xf16>, tensor<256x256xf16>)
               -> tensor<64x256xf16>
    """

    name = "spyre.launch"
    callee = prop_def(SymbolRefAttr)
    inputs = var_operand_def()
    outputs = var_result_def()
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$callee `(` $inputs `)` attr-dict `:` functional-type($inputs, $outputs)"

    def __init__(self, callee: str, inputs: Sequence[SSAValue], result_types: Sequence[Attribute]):
        super().__init__(
            operands=[inputs], result_types=[result_types],
            properties={"callee": SymbolRefAttr(callee)},
        )


Spyre = Dialect(
    "spyre",
    [ParamOp, AtenOp, MatmulOp, KernelOp, YieldOp, LaunchOp, CastOp, ReshapeOp,
     *UNARY_OPS.values(), *BINARY_OPS.values(), *SCALAR_OPS.values(), *REDUCE_OPS.values()],
    [],
)
