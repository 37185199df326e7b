"""spyre-legalize: op selection from imported ATen ops to Spyre ops.

Expects: a module from the frontend (`spyre.aten` and `spyre.param` ops in `func.func`s).
Guarantees: no `spyre.aten` op remains; every op is one the back end lowers. Transposes of
weights are folded into the weight (`spyre.param` with a `permutation`), so no data movement
kernel is spent on them. If any op has no lowering, the pass fails once, listing every such
op with its FX node and source line (never just the first).

    %y = spyre.aten "aten.linear.default"(%x, %w, %b) ...        // before
    %wt = spyre.param {param_name = "fc.weight", permutation = array<i64: 1, 0>} ...
    %y = spyre.matmul %x, %wt bias %b ...                         // after
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import (
    FloatAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from spyrec.diagnostics import UnsupportedOpsError
from spyrec.dialects.spyre import BINARY_OPS, UNARY_OPS, AtenOp, MatmulOp, ParamOp, describe

FLOAT_ELEMENTS = ("f16", "bf16", "f32")

# ATen overload -> spyre unary op name
_UNARY = {
    "aten.relu.default": "relu",
    "aten.silu.default": "silu",
    "aten.sigmoid.default": "sigmoid",
    "aten.tanh.default": "tanh",
    "aten.exp.default": "exp",
    "aten.neg.default": "neg",
    "aten.sqrt.default": "sqrt",
    "aten.rsqrt.default": "rsqrt",
    "aten.reciprocal.default": "reciprocal",
    "aten.abs.default": "abs",
}
_BINARY = {
    "aten.add.Tensor": "add",
    "aten.sub.Tensor": "sub",
    "aten.mul.Tensor": "mul",
    "aten.div.Tensor": "div",
    "aten.maximum.default": "maximum",
    "aten.minimum.default": "minimum",
}


class _Unsupported(Exception):
    """One op cannot be selected; the message says why."""


def _arg(op: AtenOp, name: str, default: object = None) -> object:
    attr = op.args.data.get(name)
    if attr is None:
        return default
    if isinstance(attr, IntegerAttr):
        if attr.type == IntegerType(1):
            return bool(attr.value.data)
        return attr.value.data
    if isinstance(attr, FloatAttr):
        return attr.value.data
    if isinstance(attr, StringAttr):
        return attr.data
    return attr


def _operand(op: AtenOp, name: str) -> SSAValue | None:
    names = [n.data for n in op.operand_names.data]  # type: ignore[attr-defined]
    return op.operands[names.index(name)] if name in names else None


def _element_name(value: SSAValue) -> str:
    ttype = value.type
    assert isinstance(ttype, TensorType)
    return str(ttype.element_type)


def _require_float(op: AtenOp) -> None:
    for v in [*op.operands, *op.results]:
        if _element_name(v) not in FLOAT_ELEMENTS:
            raise _Unsupported(f"element type {_element_name(v)} (only f16, bf16, f32 so far)")


def _transposed_weight(op: AtenOp, value: SSAValue, rewriter: Rewriter) -> SSAValue:
    """The 2-D weight `value` transposed, folded into a new spyre.param."""
    owner = value.owner
    if not isinstance(owner, ParamOp):
        raise _Unsupported("the transposed operand is not a constant weight (activation "
                           "transposes are not lowered yet)")
    ttype = value.type
    assert isinstance(ttype, TensorType)
    shape = list(ttype.get_shape())
    if len(shape) != 2:
        raise _Unsupported(f"transpose of a {len(shape)}-D weight")
    base = owner.perm or (0, 1)
    new = ParamOp(owner.param_name.data, TensorType(ttype.element_type, shape[::-1]),
                  permutation=[base[1], base[0]])
    new.result.name_hint = f"{value.name_hint or 'w'}_t"
    rewriter.insert_op(new, _before(op))
    return new.result


def _before(op: Operation):  # noqa: ANN202 - xDSL InsertPoint
    from xdsl.rewriter import InsertPoint

    return InsertPoint.before(op)


def _select_linear(op: AtenOp, rewriter: Rewriter) -> Operation:
    _require_float(op)
    x, w, b = _operand(op, "input"), _operand(op, "weight"), _operand(op, "bias")
    assert x is not None and w is not None
    if len(x.type.get_shape()) != 2:  # type: ignore[attr-defined]
        raise _Unsupported("linear on a non-2-D input (flatten leading dims first)")
    wt = _transposed_weight(op, w, rewriter)
    return MatmulOp(x, wt, b, op.results[0].type, source_op=op)


def _select_addmm(op: AtenOp, rewriter: Rewriter) -> Operation:
    _require_float(op)
    if _arg(op, "beta", 1) != 1 or _arg(op, "alpha", 1) != 1:
        raise _Unsupported("addmm with beta or alpha other than 1")
    bias, a, b = _operand(op, "self"), _operand(op, "mat1"), _operand(op, "mat2")
    assert bias is not None and a is not None and b is not None
    return MatmulOp(a, b, bias, op.results[0].type, source_op=op)


def _select_mm(op: AtenOp, rewriter: Rewriter) -> Operation:
    _require_float(op)
    a, b = _operand(op, "self"), _operand(op, "mat2")
    assert a is not None and b is not None
    return MatmulOp(a, b, None, op.results[0].type, source_op=op)


def _select_transpose(op: AtenOp, rewriter: Rewriter) -> SSAValue:
    """permute/t of a 2-D weight: folded into the weight."""
    src = op.operands[0]
    rank = len(src.type.get_shape())  # type: ignore[attr-defined]
    dims = _arg(op, "dims")
    if op.target.data == "aten.permute.default":
        perm = [d.value.data for d in dims.data]  # type: ignore[union-attr]
        if rank != 2 or perm != [1, 0]:
            raise _Unsupported(f"permute {perm} of a {rank}-D tensor")
    elif op.target.data == "aten.transpose.int":
        d0, d1 = (_arg(op, "dim0") % rank, _arg(op, "dim1") % rank)  # type: ignore[operator]
        if rank != 2 or {d0, d1} != {0, 1}:
            raise _Unsupported(f"transpose of dims {d0},{d1} of a {rank}-D tensor")
    return _transposed_weight(op, src, rewriter)


def _select_gelu(op: AtenOp, rewriter: Rewriter) -> Operation:
    _require_float(op)
    approx = _arg(op, "approximate", "none")
    name = {"none": "gelu", "tanh": "gelu_tanh"}.get(str(approx))
    if name is None:
        raise _Unsupported(f"gelu approximation '{approx}'")
    return UNARY_OPS[name](op.operands[0], op.results[0].type, source_op=op)


def _select_unary(op: AtenOp, rewriter: Rewriter) -> Operation:
    _require_float(op)
    return UNARY_OPS[_UNARY[op.target.data]](op.operands[0], op.results[0].type, source_op=op)


def _select_binary(op: AtenOp, rewriter: Rewriter) -> Operation:
    _require_float(op)
    if _arg(op, "alpha", 1) != 1:
        raise _Unsupported("alpha other than 1")
    if len(op.operands) != 2:
        raise _Unsupported("a scalar operand (only tensor-tensor forms so far)")
    for v in op.operands:
        if v.type.element_type != op.results[0].type.element_type:  # type: ignore[attr-defined]
            raise _Unsupported("mixed element types")
    cls = BINARY_OPS[_BINARY[op.target.data]]
    return cls(op.operands[0], op.operands[1], op.results[0].type, source_op=op)


Selector = Callable[[AtenOp, Rewriter], "Operation | SSAValue"]

SELECTORS: dict[str, Selector] = {
    "aten.linear.default": _select_linear,
    "aten.addmm.default": _select_addmm,
    "aten.mm.default": _select_mm,
    "aten.permute.default": _select_transpose,
    "aten.t.default": _select_transpose,
    "aten.transpose.int": _select_transpose,
    "aten.gelu.default": _select_gelu,
    **{k: _select_unary for k in _UNARY},
    **{k: _select_binary for k in _BINARY},
}


def supported_targets() -> list[str]:
    return sorted(SELECTORS)


@dataclass(frozen=True)
class SpyreLegalize(ModulePass):
    """Select Spyre ops for imported ATen ops; report every unsupported op at once."""

    name = "spyre-legalize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        rewriter = Rewriter()
        failures: list[str] = []
        for aten in [o for o in op.walk() if isinstance(o, AtenOp)]:
            selector = SELECTORS.get(aten.target.data)
            if selector is None:
                failures.append(f"{describe(aten)}: no Spyre lowering")
                continue
            try:
                result = selector(aten, rewriter)
            except _Unsupported as exc:
                failures.append(f"{describe(aten)}: {exc}")
                continue
            if isinstance(result, Operation):
                rewriter.replace_op(aten, result)
            else:
                aten.results[0].replace_all_uses_with(result)
                rewriter.erase_op(aten)
        if failures:
            source = op.attributes.get("spyre.source")
            raise UnsupportedOpsError(
                source.data if isinstance(source, StringAttr) else "module", failures
            )
        _erase_dead_params(op)


def _erase_dead_params(module: ModuleOp) -> None:
    for param in [o for o in module.walk() if isinstance(o, ParamOp)]:
        if not param.result.uses:
            param.detach()
            param.erase()

