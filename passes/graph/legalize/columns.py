"""spyre-legalize patterns for slices, splits, concatenations, broadcasts, repeats,
padding and constant indexing.

Along a leading dim these are row moves (`spyre.slice_rows`, `spyre.expand_rows`). Along
the innermost dim they are linear maps of the columns: each chain of slices and negations
that feeds a concatenation folds into one constant 0/+-1 matrix per source (`_column_map`),
so a concatenation is one matmul per distinct source (the half rotation of rotary
embeddings, `cat(-x[..., d/2:], x[..., :d/2])`, is one); a matrix that moves whole sticks
in an increasing order is a row move instead (`_stick_move`, design note 63).
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.ir import Operation, SSAValue

from spyrec.dialects.spyre import (
    BINARY_OPS,
    ELEMENT_BYTES,
    STICK_BYTES,
    AtenOp,
    ExpandRowsOp,
    MatmulOp,
    ReshapeOp,
    SliceRowsOp,
    is_free_reshape,
)
from spyrec.passes.graph.graph_build import binary_op as _binary_op
from spyrec.passes.graph.graph_build import constant as _constant
from spyrec.passes.graph.graph_build import element as _element_name
from spyrec.passes.graph.graph_build import emit as _emit
from spyrec.passes.graph.graph_build import exact_move
from spyrec.passes.graph.graph_build import fx_name as _fx_name
from spyrec.passes.graph.graph_build import shape as _shape
from spyrec.passes.graph.legalize.base import (
    FLOAT_ELEMENTS,
    MAX_ROW_MATRIX,
    LegalizeRewriter,
    Selector,
    Unsupported,
    arg,
    int_constant,
    numel,
    operand,
    require_float,
    with_shape,
)
from spyrec.passes.graph.legalize.movement import device_transpose, permute_rows, restickify_reshape

INT64_MAX = 2**63 - 1


def _last_dim_slice(op: Operation) -> slice | None:
    """The columns an `aten.slice` of the innermost dim keeps (any step), else None."""
    if not isinstance(op, AtenOp) or op.target.data != "aten.slice.Tensor":
        return None
    shape = _shape(op.operands[0])
    if arg(op, "dim", 0) % len(shape) != len(shape) - 1:  # type: ignore[operator]
        return None
    start = arg(op, "start", 0)
    end = arg(op, "end", INT64_MAX)
    start = 0 if start is None else start
    end = INT64_MAX if end is None else end
    return slice(*slice(start, end, arg(op, "step", 1)).indices(shape[-1]))


def _column_map(value: SSAValue) -> tuple[SSAValue, np.ndarray]:
    """`value` as `source @ matrix`: a chain of innermost-dim slices and negations of
    `source` (ATen ops not yet selected) is a [K, N] matrix of 0, 1 and -1."""
    source, columns, signs = _column_indices(value)
    matrix = np.zeros((_shape(source)[-1], columns.size))
    matrix[columns, np.arange(columns.size)] = signs
    return source, matrix


MAX_PLACEMENT = 1 << 26
"""Elements of the placement matrices of one concatenation along the innermost dim (a
float64 matrix while it is built, a constant weight after): 2 x 24,576 x 49,152 for a
full-size LM head computed in two halves (2.4 G elements) was a 20 GB compile."""


def _column_source(value: SSAValue) -> SSAValue:
    """The source `_column_map` reads `value` from (no matrix built)."""
    return _column_indices(value)[0]


def _column_indices(value: SSAValue) -> tuple[SSAValue, np.ndarray, np.ndarray]:
    """`_column_map` as the source column and the sign of each of `value`'s columns (the
    matrix is built once at the end: a [K, K] identity per step would be quadratic work)."""
    owner = value.owner
    if isinstance(owner, AtenOp) and owner.target.data == "aten.neg.default":
        source, columns, signs = _column_indices(owner.operands[0])
        return source, columns, -signs
    bounds = _last_dim_slice(owner)  # type: ignore[arg-type]
    if bounds is not None:
        source, columns, signs = _column_indices(owner.operands[0])  # type: ignore[union-attr]
        return source, columns[bounds], signs[bounds]
    width = _shape(value)[-1]
    return value, np.arange(width), np.ones(width)


def _stick_pieces(matrix: np.ndarray, per_stick: int) -> tuple[int, int, np.ndarray] | None:
    """(start, step, signs) when `matrix` [K, N] moves whole sticks: output stick j is input
    stick start + j * step (step >= 1) times signs[j] (+-1), or None."""
    k, n = matrix.shape
    if k % per_stick or n % per_stick:
        return None
    sources, signs = [], []
    for j in range(n // per_stick):
        block = matrix[:, j * per_stick:(j + 1) * per_stick]
        rows = np.nonzero(block.any(axis=1))[0]
        if rows.size != per_stick or rows[0] % per_stick or rows[-1] != rows[0] + per_stick - 1:
            return None
        piece = block[rows[0]:rows[0] + per_stick]
        sign = piece[0, 0]
        if sign not in (1.0, -1.0) or not np.array_equal(piece, sign * np.eye(per_stick)):
            return None
        sources.append(int(rows[0]) // per_stick)
        signs.append(sign)
    step = sources[1] - sources[0] if len(sources) > 1 else 1
    # a decreasing order (rotate_half of a two-stick head) would need DMA runs at a negative
    # pitch, which the move kernels do not have (design note 63)
    if step < 1 or sources != [sources[0] + j * step for j in range(len(sources))]:
        return None
    return sources[0], step, np.repeat(np.array(signs), per_stick)


def _stick_move(op: AtenOp, rewriter: LegalizeRewriter, source: SSAValue,
                matrix: np.ndarray) -> SSAValue | None:
    """source @ matrix as a row move when the matrix moves whole sticks in an increasing
    arithmetic order (a stick-aligned slice or split, GPT-2's q/k/v): [..., K] is
    [..., K/e, e] in the same bytes (e elements a stick), the sticks are a strided slice of
    that leading dim, and negated sticks a product by a constant row of +-1. Exact for every
    value (no PT product by the matrix's zeros) and a DMA-only move (design note 63). None
    when the matrix is not of that form."""
    per_stick = STICK_BYTES // ELEMENT_BYTES[_element_name(source)]
    pieces = _stick_pieces(matrix, per_stick)
    if pieces is None:
        return None
    start, step, signs = pieces
    shape = _shape(source)
    k, n = matrix.shape
    sticks = _emit(rewriter, op, ReshapeOp(source, with_shape(
        source, [*shape[:-1], k // per_stick, per_stick])))
    moved = _slice_rows(op, rewriter, sticks, len(shape) - 1, start, step, n // per_stick)
    moved = _emit(rewriter, op, ReshapeOp(moved, with_shape(source, [*shape[:-1], n])))
    if (signs < 0).any():
        row = _constant(op, rewriter, f"{_fx_name(op)}.signs", signs,
                        source.type.element_type)  # type: ignore[attr-defined]
        moved = _binary_op(op, rewriter, "mul", moved, row)
    return moved


def column_matmul(op: AtenOp, rewriter: LegalizeRewriter, source: SSAValue, matrix: np.ndarray,
                  name: str) -> SSAValue:
    """source @ matrix with `matrix` a constant; leading dims flattened into rows (free in
    the row-sticked layout) and restored after. A matrix that moves whole sticks is a row
    move instead (`_stick_move`)."""
    moved = _stick_move(op, rewriter, source, matrix)
    if moved is not None:
        return moved
    shape = _shape(source)
    k, n = matrix.shape
    weight = _constant(op, rewriter, name, matrix, source.type.element_type)  # type: ignore[attr-defined]
    rows = numel(source) // k
    flat = source if len(shape) == 2 else _emit(
        rewriter, op, ReshapeOp(source, with_shape(source, [rows, k])))

    def move(value: SSAValue) -> SSAValue:
        return _emit(rewriter, op, MatmulOp(value, weight, None, with_shape(value, [rows, n])))

    y = exact_move(op, rewriter, flat, move, matrix)
    if len(shape) == 2:
        return y
    return _emit(rewriter, op, ReshapeOp(y, with_shape(source, [*shape[:-1], n])))


def _leading_dim(op: AtenOp, x: SSAValue) -> int | None:
    """The op's `dim` normalised, if it is a leading (not the innermost) dim of `x`."""
    rank = len(_shape(x))
    dim = arg(op, "dim", 0) % max(rank, 1)  # type: ignore[operator]
    return dim if dim < rank - 1 else None


def _slice_rows(op: AtenOp, rewriter: LegalizeRewriter, x: SSAValue, dim: int, start: int,
                step: int, size: int) -> SSAValue:
    """Rows start, start + step, ... (`size` of them) of leading dim `dim`: a row move."""
    shape = _shape(x)
    if (start, step, size) == (0, 1, shape[dim]):
        return x
    return _emit(rewriter, op, SliceRowsOp(x, dim, start, step,
                                           with_shape(x, [*shape[:dim], size, *shape[dim + 1:]])))


def _select_slice(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """A slice of a leading dim is a row move (`spyre.slice_rows`); one of the innermost
    dim a matmul by a column-selection matrix (a strided copy that moves whole sticks is the
    better lowering once a move kernel for it exists)."""
    x = op.operands[0]
    dim = _leading_dim(op, x)
    if dim is not None:
        start, end = arg(op, "start", 0), arg(op, "end", INT64_MAX)
        start, end, step = slice(0 if start is None else start, INT64_MAX if end is None else end,
                                 arg(op, "step", 1)).indices(_shape(x)[dim])
        return _slice_rows(op, rewriter, x, dim, start, step, _shape(op.results[0])[dim])
    require_float(op)
    source, matrix = _column_map(op.results[0])
    if _shape(source) == _shape(op.results[0]):
        return source  # the whole dim
    return column_matmul(op, rewriter, source, matrix, f"{_fx_name(op)}.columns")


def _select_split(op: AtenOp, rewriter: LegalizeRewriter) -> list[SSAValue | None]:
    """A split of the innermost dim (GPT-2's fused q/k/v projection): each used piece is a
    matmul by its column-selection matrix; unused pieces cost nothing."""
    x = op.operands[0]
    shape = _shape(x)
    dim = _leading_dim(op, x)
    if dim is not None:  # pieces of a leading dim are row moves
        rows: list[SSAValue | None] = []
        start = 0
        for result in op.results:
            size = _shape(result)[dim]
            rows.append(_slice_rows(op, rewriter, x, dim, start, 1, size) if result.uses else None)
            start += size
        return rows
    require_float(op)
    pieces: list[SSAValue | None] = []
    column = 0
    for index, result in enumerate(op.results):
        width = _shape(result)[-1]
        matrix = np.zeros((shape[-1], width))
        matrix[column + np.arange(width), np.arange(width)] = 1.0
        column += width
        pieces.append(column_matmul(op, rewriter, x, matrix, f"{_fx_name(op)}.columns{index}")
                      if result.uses else None)
    return pieces


def _select_select(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """x.select(dim, i) on a leading dim (x[:, 0] of BERT's pooler, the last position of a
    decoder): a one-row slice, then a free reshape that drops the dim. On the innermost dim
    (`x[..., i]`, a selective scan's per-step column) see `_select_column`."""
    x = op.operands[0]
    dim = _leading_dim(op, x)
    shape = _shape(x)
    if dim is None:
        return _select_column(op, rewriter, x, arg(op, "index", 0) % shape[-1])  # type: ignore[operator]
    index = arg(op, "index", 0) % shape[dim]  # type: ignore[operator]
    row = _slice_rows(op, rewriter, x, dim, index, 1, 1)
    # the row's own element type: a predicate (f32 0/1 on the device) stays one
    return _emit(rewriter, op, ReshapeOp(row, with_shape(row, _shape(op.results[0]))))


def _select_column(op: AtenOp, rewriter: LegalizeRewriter, x: SSAValue, index: int) -> SSAValue:
    """x[..., index]: column `index` by a matmul with a one-column 0/1 matrix
    (`column_matmul`: exact, NaN and infinities included), [..., 1], whose size-1 innermost
    dim a restickifying reshape then drops (a device transpose: the column becomes the
    stick). Float only; a 1-D x (a 0-d result) is refused."""
    require_float(op)
    shape = _shape(x)
    if len(shape) < 2:
        raise Unsupported(f"of element {index} of a 1-D tensor (a 0-d result has no device "
                          "form); keep a dim: x[..., i:i+1] or x.narrow(-1, i, 1)")
    matrix = np.zeros((shape[-1], 1))
    matrix[index, 0] = 1.0
    column = column_matmul(op, rewriter, x, matrix, f"{_fx_name(op)}.column")
    return restickify_reshape(op, rewriter, column, _shape(op.results[0]))


def _select_cat(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """A concatenation along the innermost dim: sum over its distinct sources of
    source @ placement, where each placement matrix puts that source's slices (negated where
    they are) into their output columns. rotate_half is one matmul."""
    require_float(op)
    out = _shape(op.results[0])
    dim = arg(op, "dim", 0) % len(out)  # type: ignore[operator]
    if dim != len(out) - 1:
        return _cat_rows(op, rewriter, dim)
    widths = {_column_source(piece): _shape(_column_source(piece))[-1] for piece in op.operands}
    if sum(widths.values()) * out[-1] > MAX_PLACEMENT:
        raise Unsupported(
            f"a concatenation into {out[-1]} columns along the innermost dim: its pieces are "
            f"placed by constant [K, {out[-1]}] matrices of {sum(widths.values()) * out[-1]} "
            f"elements in all, past the {MAX_PLACEMENT} the compiler builds; concatenate "
            "along a leading dim, or use the pieces separately")
    placed: dict[SSAValue, np.ndarray] = {}
    column = 0
    for piece in op.operands:
        source, matrix = _column_map(piece)
        if _shape(source)[:-1] != out[:-1]:
            raise Unsupported(f"a {_shape(source)} piece for a {out} result (pieces must "
                              "share the leading dims)")
        placement = placed.setdefault(source, np.zeros((matrix.shape[0], out[-1])))
        placement[:, column:column + matrix.shape[1]] = matrix
        column += matrix.shape[1]
    terms = [column_matmul(op, rewriter, source, placement, f"{_fx_name(op)}.columns{i}")
             for i, (source, placement) in enumerate(placed.items())]
    result = terms[0]
    for term in terms[1:]:
        result = _emit(rewriter, op, BINARY_OPS["add"](result, term, op.results[0].type))
    return result


def _cat_rows(op: AtenOp, rewriter: LegalizeRewriter, dim: int,
              pieces: list[SSAValue] | None = None) -> SSAValue:
    """A concatenation along a leading dim (a cat-style KV cache) of `pieces` (default: the
    op's operands): with that dim moved next to the innermost one (a row move), each piece
    is transposed on the device, the transposes are concatenated along their innermost dim
    by column maps (note 23), and the result is transposed back (design note 37)."""
    out = _shape(op.results[0])
    rank = len(out)
    to_inner = [d for d in range(rank - 1) if d != dim] + [dim, rank - 1]
    total = out[dim]
    result: SSAValue | None = None
    offset = 0
    for i, piece in enumerate(op.operands if pieces is None else pieces):
        x = permute_rows(op, rewriter, piece, to_inner)
        rows = _shape(x)[-2]
        placement = np.zeros((rows, total))
        placement[np.arange(rows), offset + np.arange(rows)] = 1.0
        offset += rows
        term = column_matmul(op, rewriter, device_transpose(op, rewriter, x), placement,
                             f"{_fx_name(op)}.rows{i}")
        result = term if result is None else _emit(
            rewriter, op, BINARY_OPS["add"](result, term, term.type))
    assert result is not None
    back = device_transpose(op, rewriter, result)
    return permute_rows(op, rewriter, back, [to_inner.index(d) for d in range(rank)])


def _select_slice_scatter(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """slice_scatter(x, src, dim, start, end, step), x with that slice replaced by src (what
    `x[..., a:b] = src` becomes once exported; the gated delta rule's row updates). Along
    the innermost dim, any step: x's kept columns and src's columns in their places are two
    column maps (exact moves, NaN and infinities included), summed: each result column is
    one map's value plus the other's zero. Along a leading dim with step 1: the
    concatenation of x's rows before the slice, src and x's rows after (`_cat_rows`)."""
    require_float(op)
    x, src = op.operands[0], op.operands[1]
    shape = _shape(x)
    dim = arg(op, "dim", 0) % len(shape)  # type: ignore[operator]
    start, end = arg(op, "start", 0), arg(op, "end", INT64_MAX)
    start, end, step = slice(0 if start is None else start, INT64_MAX if end is None else end,
                             arg(op, "step", 1)).indices(shape[dim])
    placed = np.arange(start, end, step)
    if placed.size == 0:
        return x
    if dim < len(shape) - 1:
        if step != 1:
            raise Unsupported(f"along dim {dim}, a leading dim, with step {step} (step 1 "
                              "is lowered: assign to a contiguous block of rows)")
        pieces = [_slice_rows(op, rewriter, x, dim, 0, 1, start)] if start else []
        pieces.append(src)
        if end < shape[dim]:
            pieces.append(_slice_rows(op, rewriter, x, dim, end, 1, shape[dim] - end))
        return pieces[0] if len(pieces) == 1 else _cat_rows(op, rewriter, dim, pieces)
    keep = np.eye(shape[-1])
    keep[:, placed] = 0.0
    place = np.zeros((placed.size, shape[-1]))
    place[np.arange(placed.size), placed] = 1.0
    moved = column_matmul(op, rewriter, src, place, f"{_fx_name(op)}.placed")
    if placed.size == shape[-1]:
        return moved
    kept = column_matmul(op, rewriter, x, keep, f"{_fx_name(op)}.kept")
    return _emit(rewriter, op, BINARY_OPS["add"](kept, moved, op.results[0].type))


def _select_copy(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """copy(dst, src): src's values in dst's shape and type (the functional form of
    `dst.copy_(src)` and of slice assignment); lowered when they already agree."""
    dst, src = op.operands[0], op.operands[1]
    if dst.type != src.type:
        raise Unsupported(f"of a {src.type} into a {dst.type} (a copy that broadcasts or "
                          "casts is not lowered: expand or cast the source first)")
    return src


def _select_expand(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """expand: a broadcast of size-1 leading dims becomes spyre.expand_rows; a broadcast of
    a size-1 stick dim a matmul by a row of ones. New leading dims are first added as size-1
    dims (a reshape)."""
    x = op.operands[0]
    src, out = _shape(x), _shape(op.results[0])
    padded = [1] * (len(out) - len(src)) + src
    if padded[-1:] != out[-1:]:
        # a column repeated along the stick: x @ ones[1, N] (the column-map matmul)
        require_float(op)
        x = column_matmul(op, rewriter, x, np.ones((1, out[-1])), f"{_fx_name(op)}.columns")
        src = _shape(x)
        padded = [1] * (len(out) - len(src)) + src
    if padded != src:
        x = _emit(rewriter, op, ReshapeOp(x, with_shape(x, padded)))
    if padded == out:
        return x
    return _emit(rewriter, op, ExpandRowsOp(x, with_shape(x, out)))


def _select_repeat(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """x.repeat(r_0, ..., r_n): along leading dims each r_i > 1 is a new size-1 dim in front
    of dim i broadcast by spyre.expand_rows, then merged into dim i (a free reshape: the
    innermost dim is kept); along the innermost dim a matmul by [I I ... I]."""
    x = op.operands[0]
    repeats = [r.value.data for r in arg(op, "repeats").data]  # type: ignore[union-attr]
    shape = [1] * (len(repeats) - len(_shape(x))) + _shape(x)
    if shape != _shape(x):
        x = _emit(rewriter, op, ReshapeOp(x, with_shape(x, shape)))
    if repeats[-1] != 1:
        require_float(op)
        x = column_matmul(op, rewriter, x, np.tile(np.eye(shape[-1]), (1, repeats[-1])),
                          f"{_fx_name(op)}.columns")
        shape = _shape(x)
    if all(r == 1 for r in repeats[:-1]):
        return x
    split = [d for r, n in zip(repeats[:-1], shape[:-1]) for d in (1, n)] + shape[-1:]
    wide = [d for r, n in zip(repeats[:-1], shape[:-1]) for d in (r, n)] + shape[-1:]
    x = _emit(rewriter, op, ReshapeOp(x, with_shape(x, split)))
    x = _emit(rewriter, op, ExpandRowsOp(x, with_shape(x, wide)))
    return _emit(rewriter, op, ReshapeOp(x, op.results[0].type))


def _select_pad(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """constant_pad_nd along the innermost dim: x @ P with P an identity shifted by the left
    padding (negative padding crops), plus a constant row holding `value` in the padded
    columns when it is not 0. Padding leading dims (new rows) is not lowered."""
    require_float(op)
    x = op.operands[0]
    pad = [p.value.data for p in arg(op, "pad").data]  # type: ignore[union-attr]
    if any(pad[2:]):
        raise Unsupported(f"pad {pad} pads a leading dim (only the innermost dim is lowered)")
    left, right = pad[0], pad[1] if len(pad) > 1 else 0
    n = _shape(x)[-1]
    width = n + left + right
    matrix = np.zeros((n, width))
    for j in range(max(0, -left), min(n, width - left)):
        matrix[j, j + left] = 1.0
    y = column_matmul(op, rewriter, x, matrix, f"{_fx_name(op)}.columns")
    value = float(arg(op, "value", 0.0) or 0.0)  # type: ignore[arg-type]
    if value == 0.0:
        return y
    fill = np.zeros(width)
    fill[:max(left, 0)] = value
    fill[width - max(right, 0):] = value
    row = _constant(op, rewriter, f"{_fx_name(op)}.fill", fill, x.type.element_type)  # type: ignore[attr-defined]
    return _binary_op(op, rewriter, "add", y, row)


def _select_index(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """x[i0, i1, ...] by constant index tensors (folded aranges: a position row read as a
    column `pos[b, q]` and as a row `pos[b, kv]`) of a one-row tensor: the row times a
    constant 0/1 selection matrix (exact), then reshaped to the result, through a device
    transpose when the result is a column."""
    x = operand(op, "self")
    assert x is not None
    for v in (x, op.results[0]):
        if _element_name(v) not in FLOAT_ELEMENTS:
            raise Unsupported(f"element type {_element_name(v)} (only f16, bf16, f32 so far)")
    shape = _shape(x)
    key: list[slice | np.ndarray] = [slice(None)] * len(shape)
    names = [n.data for n in op.operand_names.data]  # type: ignore[attr-defined]
    for name, value in zip(names, op.operands):
        if not name.startswith("indices."):
            continue
        values = int_constant(value)
        if values is None:
            raise Unsupported("an index tensor computed at run time (indices that depend on "
                              "no input are lowered, as a constant selection matrix)")
        key[int(name.split(".")[1])] = values
    picked = np.arange(max(math.prod(shape), 1)).reshape(shape)[tuple(key)]
    out = _shape(op.results[0])
    if list(picked.shape) != out:
        raise Unsupported(f"indices selecting a {list(picked.shape)} result for {out}")
    if math.prod(shape[:-1]) != 1:
        raise Unsupported(f"indexing a {shape} tensor (a tensor of one row is lowered: "
                          "a selection matrix over its columns)")
    if picked.size > MAX_ROW_MATRIX // max(shape[-1], 1):
        raise Unsupported(f"a {shape[-1]} x {picked.size} selection matrix is too large")
    row = x if len(shape) == 2 else _emit(rewriter, op, ReshapeOp(x, with_shape(x, [1, shape[-1]])))
    matrix = np.zeros((shape[-1], picked.size))
    matrix[picked.reshape(-1) % shape[-1], np.arange(picked.size)] = 1.0
    y = column_matmul(op, rewriter, row, matrix, f"{_fx_name(op)}.select")
    if _shape(y) == out:
        return y
    if is_free_reshape(_shape(y), out, y.type.element_type):  # type: ignore[attr-defined]
        return _emit(rewriter, op, ReshapeOp(y, with_shape(y, out)))
    return restickify_reshape(op, rewriter, y, out)


SELECTORS: dict[str, Selector] = {
    "aten.expand.default": _select_expand,
    "aten.slice.Tensor": _select_slice,
    "aten.cat.default": _select_cat,
    "aten.split_with_sizes.default": _select_split,
    "aten.split.Tensor": _select_split,
    "aten.select.int": _select_select,
    "aten.slice_scatter.default": _select_slice_scatter,
    "aten.copy.default": _select_copy,
    "aten.repeat.default": _select_repeat,
    "aten.constant_pad_nd.default": _select_pad,
    "aten.index.Tensor": _select_index,
}
