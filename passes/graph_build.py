"""Small helpers that spyre-legalize's selectors share to build `spyre` graph ops.

Every op a selector inserts carries the provenance (FX node name, source line) of the ATen
op it helps to replace, so later errors can name the node; constants such as column maps,
summation matrices and pad fills become `spyre.param` tensors stored in the `.spyre`.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, StringAttr, TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from spyrec.dialects.spyre import ParamOp


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


def constant(at: Operation, rewriter: Rewriter, name: str, values: np.ndarray,
             element_type: Attribute) -> SSAValue:
    """`values` as a constant tensor (a `spyre.param` named `name`) inserted before `at`."""
    ttype = TensorType(element_type, list(values.shape))
    param = ParamOp(name, ttype, value=DenseIntOrFPElementsAttr.from_list(
        ttype, [float(v) for v in values.reshape(-1)]))
    param.result.name_hint = name.replace(".", "_")
    return emit(rewriter, at, param)
