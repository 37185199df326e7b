"""Small helpers that spyre-legalize's selectors share to build `spyre` graph ops.

Every op a selector inserts carries the provenance (FX node name, source line) of the ATen
op it helps to replace, so later errors can name the node; constants such as column maps,
summation matrices and pad fills become `spyre.param` tensors stored in the `.spyre`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from xdsl.dialects.builtin import (
    AnyDenseElement,
    AnyFloat,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from spyrec.dialects.spyre import (
    BINARY_OPS,
    SCALAR_OPS,
    BatchMatmulOp,
    CastOp,
    ExpandRowsOp,
    MatmulOp,
    ParamOp,
    PermuteRowsOp,
    ReshapeOp,
)


def shape(value: SSAValue) -> list[int]:
    assert isinstance(value.type, TensorType)
    return list(value.type.get_shape())


def element(value: SSAValue) -> str:
    """The element type's name: `f16`, `bf16`, `f32`, `i64`, ..."""
    assert isinstance(value.type, TensorType)
    return str(value.type.element_type)


def fx_name(op: Operation) -> str:
    """The FX node `op` came from, or the op's name when it has none."""
    node = op.attributes.get("fx_node")
    return node.data if isinstance(node, StringAttr) else op.name


def emit(rewriter: Rewriter, at: Operation, new: Operation) -> SSAValue:
    """Insert `new` before the op it helps to replace; keep that op's provenance."""
    for key in ("fx_node", "source"):
        if key in at.attributes:
            new.attributes[key] = at.attributes[key]
    rewriter.insert_op(new, InsertPoint.before(at))
    return new.results[0]


# little-endian NumPy types of the element types xDSL packs (`struct` formats e, f, d, i, q)
_PACKED = {"f16": "<f2", "f32": "<f4", "f64": "<f8", "i32": "<i4", "i64": "<i8"}


def dense_values(ttype: TensorType[AnyDenseElement], values: np.ndarray
                 ) -> DenseIntOrFPElementsAttr:
    """`values` as the dense attribute of tensor type `ttype`, packed by NumPy in the bytes
    `DenseIntOrFPElementsAttr.from_list` writes (one `struct.pack` per element is
    quadratic-size work for the selection matrices column moves build, and for the row maps
    of element moves). Values the cast would change (a float past the type's range, an
    integer past its width), and element types without a NumPy layout, take `from_list`,
    which refuses or packs them as before."""
    element = str(ttype.element_type)
    packed = _PACKED.get(element)
    if packed is not None:
        flat = values.reshape(-1)
        with np.errstate(over="ignore", invalid="ignore"):
            cast = flat.astype(packed)
        if element.startswith("i"):
            exact = np.array_equal(cast, flat)
        else:
            cast_inf = np.isinf(cast)
            exact = not cast_inf.any() or np.array_equal(cast_inf, np.isinf(flat))
        if exact:
            return DenseIntOrFPElementsAttr(ttype, BytesAttr(cast.tobytes()))
    convert = int if element.startswith("i") else float
    return DenseIntOrFPElementsAttr.from_list(
        ttype, [convert(v) for v in values.reshape(-1)])  # type: ignore[arg-type]


def constant(at: Operation, rewriter: Rewriter, name: str, values: np.ndarray,
             element_type: Attribute) -> SSAValue:
    """`values` as a constant tensor (a `spyre.param` named `name`) inserted before `at`;
    `element_type` is a float type (legalization computes integers in f32)."""
    assert isinstance(element_type, AnyFloat)
    ttype = TensorType(element_type, list(values.shape))
    param = ParamOp(name, ttype, value=dense_values(ttype, values))
    param.result.name_hint = name.replace(".", "_")
    return emit(rewriter, at, param)


def scalar_op(at: Operation, rewriter: Rewriter, kind: str, x: SSAValue, value: float,
              reverse: bool = False) -> SSAValue:
    """x `kind` value (value `kind` x when `reverse`) on the SFU, in x's type."""
    return emit(rewriter, at, SCALAR_OPS[kind](x, value, x.type, reverse=reverse))


def binary_op(at: Operation, rewriter: Rewriter, kind: str, a: SSAValue, b: SSAValue) -> SSAValue:
    """a `kind` b on the SFU, in the type of the operand the other broadcasts to."""
    big = a if len(shape(a)) >= len(shape(b)) and math.prod(shape(a)) >= math.prod(shape(b)) \
        else b
    return emit(rewriter, at, BINARY_OPS[kind](a, b, big.type))


def nonfinite(at: Operation, rewriter: Rewriter, x: SSAValue) -> SSAValue:
    """keep(1, x - x): 1 where x is +-inf or NaN (x - x is NaN there, 0 elsewhere), -0.0
    where x is finite; 1 minus it is the "finite" predicate (design notes 62, 63)."""
    return scalar_op(at, rewriter, "keep", binary_op(at, rewriter, "sub", x, x), 1.0,
                     reverse=True)


def through(value: SSAValue, kinds: tuple[type[Operation], ...]) -> SSAValue:
    """The value behind a chain of `kinds` ops (reshapes, casts, row moves) that ends in
    `value`, each op read through its first operand."""
    while isinstance(value.owner, kinds):
        value = value.owner.operands[0]
    return value


def _float(value: SSAValue) -> bool:
    return str(value.type.element_type).startswith(("f", "bf"))  # type: ignore[attr-defined]


def known_finite(value: SSAValue) -> bool:
    """Is every element of `value` finite by construction: a constant with finite values, a
    0/1 predicate, an integer tensor, one of those cast, reshaped or broadcast, or moved by
    a matmul with a constant matrix of entries within [-1, 1]?"""
    if not _float(value):
        return True
    value = through(value, (CastOp, ReshapeOp, ExpandRowsOp, PermuteRowsOp))
    owner = value.owner
    if not _float(value):
        return True
    if isinstance(owner, Operation) and "spyre.predicate" in owner.attributes:
        return True
    if isinstance(owner, (MatmulOp, BatchMatmulOp)) and getattr(owner, "bias", None) is None \
            and any(_unit_constant(v) for v in owner.operands):
        # a move of a finite value (a selected integer position): at most K times its largest
        return all(known_finite(v) for v in owner.operands)
    return _unit_constant(value) is not None


def _unit_constant(value: SSAValue) -> bool | None:
    """For a constant: are its values within [-1, 1] (a move's matrix)? None when `value`
    is not a constant with finite values."""
    owner = through(value, (CastOp, ReshapeOp, ExpandRowsOp)).owner
    if not isinstance(owner, ParamOp) or owner.value is None:
        return None
    values = _array(owner)
    if not np.isfinite(values).all():
        return None
    return bool((np.abs(values) <= 1).all())


def _array(param: ParamOp) -> np.ndarray:
    """A constant's values as an array (read from its bytes where numpy knows the type)."""
    assert param.value is not None
    numpy_type = {"f32": np.float32, "f16": np.float16, "f64": np.float64}.get(
        str(param.value.get_element_type()))
    if numpy_type is not None:
        return np.frombuffer(param.value.data.data, dtype=numpy_type)
    return np.asarray(param.value.get_values(), dtype=np.float64)


def exact_move(at: Operation, rewriter: Rewriter, x: SSAValue,
               move: Callable[[SSAValue], SSAValue], matrix: np.ndarray) -> SSAValue:
    """`move(x)` for a move that the PT does as a matmul by a constant matrix of 0, +-1 and
    1/n entries (a column map, a transpose, a sum over rows, an average), exact for NaN and
    infinities (design note 63).

    The PT multiplies every element of a row by the matrix's zeros too, and 0 * NaN and
    0 * inf are NaN: a NaN or an infinity moved that way turns its whole row (column) into
    NaN. So the special values travel apart from the data, as finite codes:

    - f = x where x is finite, else -0.0: moved exactly as before;
    - P = 1 where x is +inf or NaN, N = 1 where x is -inf or NaN (else -0.0): moved by the
      same matrix, so P' (N') is nonzero exactly where a +inf (-inf) reaches the output,
      with the sign the matrix gives it;
    - the result is f' + keep(P' * inf, P') + keep(N' * -inf, N'): +inf + -inf is NaN, so
      a NaN (both codes) or opposite infinities meeting in a sum give NaN, as in eager.

    A 16-bit x holds no infinity (DL16 has none: an infinity reads back as NaN), so it
    takes one code, Q = 1 where x is NaN, and the result f' + (a - a) with
    a = keep(Q' * inf, Q') (inf - inf is NaN, -0 - -0 is 0). Values finite by
    construction (`known_finite`), and moves by a `matrix` without zeros (a transpose of
    one column, a sum of all rows), move as they are. Cost: three moves instead of one in
    f32 (two in 16-bit) and a few SFU ops, measured in design note 63."""
    if known_finite(x) or matrix.all():  # no zero to meet a NaN or an infinity: IEEE as is
        return move(x)

    def scalar(kind: str, value: SSAValue, number: float, reverse: bool = False) -> SSAValue:
        return scalar_op(at, rewriter, kind, value, number, reverse)

    def binary(kind: str, a: SSAValue, b: SSAValue) -> SSAValue:
        return binary_op(at, rewriter, kind, a, b)

    special = nonfinite(at, rewriter, x)
    finite = binary("keep", x, scalar("sub", special, 1.0, reverse=True))
    moved = move(finite)
    inf = float("inf")
    if element(x) != "f32":
        code = move(special)
        marked = binary("keep", scalar("mul", code, inf), code)
        return binary("add", moved, binary("sub", marked, marked))
    specials = binary("keep", x, special)  # +-inf and NaN, -0.0 elsewhere
    for clamp, sign in (("maximum", inf), ("minimum", -inf)):
        code = move(scalar("keep", scalar(clamp, specials, 0.0), 1.0, reverse=True))
        moved = binary("add", moved, binary("keep", scalar("mul", code, sign), code))
    return moved
