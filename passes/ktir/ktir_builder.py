"""Shared KTIR building blocks for convert-spyre-to-ktir's kernel builders.

`KtirBuilder` holds the insertion point and the small builders every kernel kind uses:
index constants and arithmetic, stick-padded memory views, access tiles placed by affine
maps of loop indices, `ktdp.load`, `scf.for` loops and the `linalg.generic` forms the
scheduler maps to engines (matmul with B as stored or transposed, row reductions over the
valid columns, elementwise ops with broadcasting maps). The scalar bodies of those generics
(`UNARY_BODIES`, `BINARY_BODIES`) state the SFU function each one stands for.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.dialects import arith, math, scf, tensor
from xdsl.dialects.builtin import (
    AffineMapAttr,
    AffineSetAttr,
    AnyFloat,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    StringAttr,
    TensorType,
    UnitAttr,
    f32,
)
from xdsl.dialects.linalg import ops as linalg
from xdsl.dialects.linalg.attrs import IteratorTypeAttr
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.ir.affine import (
    AffineConstraintExpr,
    AffineConstraintKind,
    AffineExpr,
    AffineMap,
    AffineSet,
)
from xdsl.rewriter import InsertPoint

from spyrec.dialects.ktdp import (
    AccessTileType,
    ConstructAccessTileOp,
    ConstructDistributedMemoryViewOp,
    ConstructMemoryViewOp,
    LoadOp,
    MemorySpaceAttr,
)
from spyrec.dialects.ktdp_intertile import (
    InterTileProduceOp,
    InterTileReduceOp,
    YieldPartialOp,
    YieldReducedOp,
)
from spyrec.dialects.ktdp_types import TileFutureType
from spyrec.dialects.ktdp_values import MASKED_TILE
from spyrec.target import round_up
from spyrec.target.layout import STICK_BYTES

IDX = IndexType()


def box_set(extents: Sequence[int], lows: Sequence[int] | None = None) -> AffineSetAttr:
    """The set {l_i <= d_i <= l_i + e_i - 1} as an affine_set attribute (l_i = 0 without
    `lows`)."""
    constraints = []
    for i, e in enumerate(extents):
        low = lows[i] if lows is not None else 0
        d = AffineExpr.dimension(i)
        constraints.append(AffineConstraintExpr(AffineConstraintKind.ge, d - low if low else d,
                                                AffineExpr.constant(0)))
        constraints.append(AffineConstraintExpr(
            AffineConstraintKind.ge, AffineExpr.constant(low + e - 1) - d, AffineExpr.constant(0)))
    return AffineSetAttr(AffineSet(len(extents), 0, tuple(constraints)))



@dataclass(frozen=True)
class LxSlices:
    """Where a tensor kept in LX between two kernels lives (note 61): on a gm x gn grid,
    core (x, y) (compute tile y * gm + x) holds an mc x nc block at LX byte `byte_offset`,
    each row `row_bytes` (whole sticks)."""

    gm: int
    gn: int
    mc: int
    nc: int
    itemsize: int
    row_bytes: int
    byte_offset: int

    @staticmethod
    def of(rows: int, cols: int, itemsize: int, gm: int, gn: int,
           lx_top: int, stick: int = STICK_BYTES) -> LxSlices:
        """The slices of a rows x cols tensor (stick-padded columns) split gm x gn, placed
        at the top of the usable LX (`lx_top` bytes), below which the kernels' tiles go."""
        mc, nc = rows // gm, cols // gn
        row_bytes = round_up(nc * itemsize, stick)
        return LxSlices(gm, gn, mc, nc, itemsize, row_bytes,
                        (lx_top - mc * row_bytes) // stick * stick)

    @property
    def bytes(self) -> int:
        """LX bytes each core reserves."""
        return self.mc * self.row_bytes

    @property
    def pitch(self) -> int:
        return self.row_bytes // self.itemsize

    @property
    def offset(self) -> int:
        """The element offset of the views."""
        return self.byte_offset // self.itemsize


def _mask_if_wider(op: ConstructAccessTileOp, view: SSAValue,
                   extents: Sequence[int]) -> None:
    """Mark a tile wider than its whole view's row masked (`ktdp.masked`): a kernel mixing
    f16 and f32 tiles columns in f16 sticks (64 elements), and an f32 operand of at most 32
    columns is one f32 stick wide. Its lanes past the view read +0.0, in the interpreter
    and on the device (the back end's DMA moves the view's sticks and zero-fills the rest
    of the LX tile), instead of a coordinate outside the view."""
    vtype = view.type
    if isinstance(vtype, MemRefType) and vtype.get_shape() and extents \
            and extents[-1] > vtype.get_shape()[-1]:
        op.attributes[MASKED_TILE] = UnitAttr()


class KtirBuilder:
    """Insertion point, index constants and the small builders of one KTIR function."""

    def __init__(self) -> None:
        self.b: Builder
        self.consts: dict[tuple[object, Attribute], SSAValue] = {}

    # -- small builders ---------------------------------------------------------------
    def const(self, value: int) -> SSAValue:
        key = (value, IDX)
        if key not in self.consts:
            op = self.b.insert(arith.ConstantOp(IntegerAttr(value, IDX)))
            self.consts[key] = op.result
        return self.consts[key]

    def view(self, offset: SSAValue, shape: Sequence[int], element: Attribute) -> SSAValue:
        strides = [shape[1], 1] if len(shape) == 2 else [1]
        op = self.b.insert(ConstructMemoryViewOp(
            offset, list(shape), strides, MemRefType(element, list(shape)),
            box_set(shape), MemorySpaceAttr.global_()))
        return op.result

    def lx_view(self, slices: LxSlices, element: Attribute) -> SSAValue:
        """A `rows x cols` tensor kept in LX (note 61): a distributed view of one `ct_local`
        part per core of a `gm x gn` grid, core (x, y) holding rows [x*mc, (x+1)*mc) and
        columns [y*nc, (y+1)*nc) at LX element offset `offset`, `pitch` elements a row."""
        offset = self.const(slices.offset)
        box = box_set([slices.mc, slices.nc]).data
        parts = []
        for y in range(slices.gn):
            for x in range(slices.gm):
                origin = (AffineExpr.dimension(0) - x * slices.mc,
                          AffineExpr.dimension(1) - y * slices.nc)
                placed = AffineSet(2, 0, tuple(
                    AffineConstraintExpr(c.kind, c.lhs.replace_dims_and_symbols(origin, []),
                                         c.rhs) for c in box.constraints))
                parts.append(self.b.insert(ConstructMemoryViewOp(
                    offset, [slices.mc, slices.nc], [slices.pitch, 1],
                    MemRefType(element, [slices.mc, slices.nc]), placed,
                    MemorySpaceAttr.ct_local(y * slices.gm + x))).result)
        return self.b.insert(ConstructDistributedMemoryViewOp(
            parts, MemRefType(element, [slices.gm * slices.mc, slices.gn * slices.nc]))).result

    def load(self, view: SSAValue, rows: SSAValue, cols: SSAValue, extents: Sequence[int],
             element: Attribute) -> SSAValue:
        tile = self._tile(view, rows, cols, extents)
        return self.b.insert(LoadOp(tile, TensorType(element, list(extents)))).results[0]

    def _tile(self, view: SSAValue, rows: SSAValue, cols: SSAValue,
              extents: Sequence[int]) -> SSAValue:
        operands = [rows, cols]
        base = AffineMap(2, 0, (AffineExpr.dimension(0), AffineExpr.dimension(1)))
        op = self.b.insert(ConstructAccessTileOp(
            view, operands, base, box_set(extents).data, AffineMap.identity(2),
            AccessTileType(list(extents))))
        _mask_if_wider(op, view, extents)
        return op.result

    def add(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.b.insert(arith.AddiOp(a, b)).result

    def mul(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.b.insert(arith.MuliOp(a, b)).result

    def _nested(self, block: Block, body: Callable[[], None]) -> None:
        """Build `body` into `block`, ended by an empty `scf.yield` (constants made there
        stay there)."""
        outer, saved = self.b, dict(self.consts)
        self.b = Builder(InsertPoint.at_end(block))
        body()
        self.b.insert(scf.YieldOp())
        self.b, self.consts = outer, saved

    def loop(self, upper: int, step: int, body: Callable[[SSAValue], None],
             lower: int = 0) -> None:
        block = Block(arg_types=[IDX])
        self._nested(block, lambda: body(block.args[0]))
        self.b.insert(scf.ForOp(self.const(lower), self.const(upper), self.const(step), [],
                                block))

    def when(self, condition: SSAValue, body: Callable[[], None]) -> None:
        """`scf.if condition { body }`."""
        block = Block()
        self._nested(block, body)
        self.b.insert(scf.IfOp(condition, [], Region(block)))

    def tile_at(self, view: SSAValue, indices: Sequence[SSAValue],
                origin: Sequence[AffineExpr], extents: Sequence[int]) -> SSAValue:
        """An access tile of `extents` at `origin`, affine in `indices` (dim i = indices[i]);
        indices the origin does not use are dropped, so the printed subscripts name them all."""
        used = sorted(set().union(*(e.used_dims() for e in origin)))
        renumber = [AffineExpr.dimension(used.index(i)) if i in used else AffineExpr.constant(0)
                    for i in range(len(indices))]
        exprs = tuple(e.replace_dims_and_symbols(renumber, []) for e in origin)
        op = self.b.insert(ConstructAccessTileOp(
            view, [indices[i] for i in used], AffineMap(len(used), 0, exprs),
            box_set(extents).data, AffineMap.identity(len(extents)),
            AccessTileType(list(extents))))
        _mask_if_wider(op, view, extents)
        return op.result

    def load_at(self, view: SSAValue, indices: Sequence[SSAValue], origin: Sequence[AffineExpr],
                extents: Sequence[int], element: Attribute) -> SSAValue:
        tile = self.tile_at(view, indices, origin, extents)
        return self.b.insert(LoadOp(tile, TensorType(element, list(extents)))).results[0]

    def fill(self, shape: Sequence[int], value: float) -> SSAValue:
        """An f32 tensor of `shape` holding `value` (an accumulator's start)."""
        ttype = TensorType(f32, list(shape))
        empty = self.b.insert(tensor.EmptyOp([], ttype)).tensor
        init = self.b.insert(arith.ConstantOp(FloatAttr(value, f32))).result
        return self.b.insert(linalg.FillOp([init], [empty], [ttype])).results[0]

    def matmul_generic(self, a: SSAValue, b: SSAValue, acc: SSAValue,
                       transposed: bool = False) -> SSAValue:
        """acc += a @ b (b given as [k, n]), or a @ b^T (b given as [n, k]) when `transposed`,
        as a linalg.generic with explicit widening to f32, tagged `matmul` / `matmul_nt`.

        `linalg.matmul` with f16 operands and an f32 accumulator is what upstream prints,
        but xDSL 0.74 rebuilds its body with the operand type and rejects it; the generic
        form states the same computation and parses everywhere.
        """
        block = Block(arg_types=[a.type.element_type, b.type.element_type, f32])  # type: ignore[attr-defined]
        inner = Builder(InsertPoint.at_end(block))
        x, y, z = block.args
        prod = inner.insert(arith.MulfOp(convert(inner, x, f32), convert(inner, y, f32))).result
        inner.insert(linalg.YieldOp(inner.insert(arith.AddfOp(z, prod)).result))
        d0, d1, d2 = (AffineExpr.dimension(i) for i in range(3))
        b_map = (d1, d2) if transposed else (d2, d1)
        maps = [AffineMap(3, 0, (d0, d2)), AffineMap(3, 0, b_map), AffineMap(3, 0, (d0, d1))]
        iters = [IteratorTypeAttr.parallel(), IteratorTypeAttr.parallel(),
                 IteratorTypeAttr.reduction()]
        op = self.b.insert(linalg.GenericOp(
            [a, b], [acc], Region(block), [AffineMapAttr(m) for m in maps], iters, [acc.type]))
        op.attributes["spyre.fn"] = StringAttr("matmul_nt" if transposed else "matmul")
        return op.results[0]

    def reduce_generic(self, fn: str, src: SSAValue, valid_cols: int) -> SSAValue:
        """A row reduction over the first `valid_cols` columns (the stick padding and any
        other columns past them never enter), as a reduction generic into an f32 column."""
        rows = src.type.get_shape()[0]  # type: ignore[attr-defined]
        identity = {"sum": 0.0, "max": float("-inf"), "min": float("inf")}[fn]
        acc = self.fill([rows, 1], identity)
        block = Block(arg_types=[src.type.element_type, f32])  # type: ignore[attr-defined]
        inner = Builder(InsertPoint.at_end(block))
        x, a = block.args
        col = inner.insert(linalg.IndexOp(1)).result
        limit = inner.insert(arith.ConstantOp(IntegerAttr(valid_cols, IDX))).result
        valid = inner.insert(arith.CmpiOp(col, limit, "ult")).result
        combined = {"sum": BINARY_BODIES["add"], "max": BINARY_BODIES["maximum"],
                    "min": BINARY_BODIES["minimum"]}[fn](inner, a, convert(inner, x, f32))
        inner.insert(linalg.YieldOp(inner.insert(arith.SelectOp(valid, combined, a)).result))
        d0, d1 = AffineExpr.dimension(0), AffineExpr.dimension(1)
        maps = [AffineMap(2, 0, (d0, d1)), AffineMap(2, 0, (d0, AffineExpr.constant(0)))]
        op = self.b.insert(linalg.GenericOp(
            [src], [acc], Region(block), [AffineMapAttr(m) for m in maps],
            [IteratorTypeAttr.parallel(), IteratorTypeAttr.reduction()], [acc.type]))
        op.attributes["spyre.fn"] = StringAttr(f"reduce_{fn}")
        op.attributes["spyre.valid_cols"] = IntegerAttr(valid_cols, IDX)
        return op.results[0]

    def grid_row_all_reduce(self, partial: SSAValue, gm: int, gn: int) -> SSAValue:
        """The sum of `partial` over the gn cores of a grid row, on each of them (note 59):
        a `ktdp.inter_tile_produce` of the partial and a `ktdp.inter_tile_reduce` whose
        consumers are its producers (an all-reduce). Tile (x, y) has linear id y * gm + x,
        so grid row g holds the tiles i with i mod gm = g."""
        i, g = AffineExpr.dimension(0), AffineExpr.symbol(0)
        zero = AffineExpr.constant(0)
        row_of_g = AffineSet(1, 1, (
            AffineConstraintExpr(AffineConstraintKind.ge, i, zero),
            AffineConstraintExpr(AffineConstraintKind.ge, AffineExpr.constant(gm * gn - 1) - i,
                                 zero),
            AffineConstraintExpr(AffineConstraintKind.eq, (i % gm) - g, zero)))
        groups = box_set([gm])
        ptype = partial.type
        future_type = TileFutureType([ptype], groups)
        body = Block(arg_types=[IDX])
        Builder(InsertPoint.at_end(body)).insert(YieldPartialOp([partial]))
        future = self.b.insert(InterTileProduceOp(row_of_g, future_type, Region(body))).future
        identity = self.fill(list(ptype.get_shape()), 0.0)  # type: ignore[attr-defined]
        combiner = Block(arg_types=[ptype, ptype])
        inner = Builder(InsertPoint.at_end(combiner))
        total = inner.insert(arith.AddfOp(combiner.args[0], combiner.args[1])).result
        inner.insert(YieldReducedOp([total]))
        op = self.b.insert(InterTileReduceOp(future, [identity], row_of_g, Region(combiner)))
        return op.results[0]

    def elementwise(self, fn: str, inputs: Sequence[SSAValue], maps: Sequence[AffineMap],
                    result_type: TensorType,
                    body: Callable[[Builder, Sequence[SSAValue]], SSAValue]) -> SSAValue:
        """A 2-D parallel generic producing `result_type`; `maps` index the inputs (a
        broadcast operand's map drops a dim, a scalar operand's map has no results)."""
        empty = self.b.insert(tensor.EmptyOp([], result_type)).tensor
        arg_types = [v.type.element_type if isinstance(v.type, TensorType) else v.type
                     for v in inputs] + [result_type.element_type]
        block = Block(arg_types=arg_types)
        inner = Builder(InsertPoint.at_end(block))
        inner.insert(linalg.YieldOp(body(inner, block.args[:len(inputs)])))
        all_maps = [*maps, AffineMap.identity(2)]
        op = self.b.insert(linalg.GenericOp(
            list(inputs), [empty], Region(block), [AffineMapAttr(m) for m in all_maps],
            [IteratorTypeAttr.parallel()] * 2, [result_type]))
        op.attributes["spyre.fn"] = StringAttr(fn)
        return op.results[0]

    # -- the kernel -------------------------------------------------------------------


def convert(b: Builder, value: SSAValue, to: Attribute) -> SSAValue:
    if value.type == to:
        return value
    if isinstance(value.type, IntegerType):  # int32 / int64 tiles read as float (exact < 2^24)
        assert isinstance(to, AnyFloat)
        return b.insert(arith.SIToFPOp(value, to)).result
    if isinstance(to, IntegerType):  # indices computed in f32, stored as integers
        return b.insert(arith.FPToSIOp(value, to)).result
    if to == f32:
        return b.insert(arith.ExtFOp(value, f32)).result
    return b.insert(arith.TruncFOp(value, to)).result


def fconst(b: Builder, v: float, like: SSAValue | None = None) -> SSAValue:
    """The float constant `v` of `like`'s type (f32 without one)."""
    ftype = like.type if like is not None and isinstance(like.type, AnyFloat) else f32
    return b.insert(arith.ConstantOp(FloatAttr(v, ftype))).result


def _gelu(b: Builder, x: SSAValue) -> SSAValue:
    # 0.5 * x * (1 + erf(x / sqrt(2)))
    scaled = b.insert(arith.MulfOp(x, fconst(b, 0.7071067811865476))).result
    erf = b.insert(math.ErfOp(scaled)).result
    one_plus = b.insert(arith.AddfOp(erf, fconst(b, 1.0))).result
    half_x = b.insert(arith.MulfOp(x, fconst(b, 0.5))).result
    return b.insert(arith.MulfOp(half_x, one_plus)).result


def _gelu_tanh(b: Builder, x: SSAValue) -> SSAValue:
    # 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))
    x3 = b.insert(arith.MulfOp(b.insert(arith.MulfOp(x, x)).result, x)).result
    inner = b.insert(arith.AddfOp(x, b.insert(arith.MulfOp(x3, fconst(b, 0.044715))).result)).result
    scaled = b.insert(arith.MulfOp(inner, fconst(b, 0.7978845608028654))).result
    th = b.insert(math.TanhOp(scaled)).result
    one_plus = b.insert(arith.AddfOp(th, fconst(b, 1.0))).result
    return b.insert(arith.MulfOp(b.insert(arith.MulfOp(x, fconst(b, 0.5))).result, one_plus)).result


def _sigmoid(b: Builder, x: SSAValue) -> SSAValue:
    e = b.insert(math.ExpOp(b.insert(arith.NegfOp(x)).result)).result
    one_plus = b.insert(arith.AddfOp(e, fconst(b, 1.0))).result
    return b.insert(arith.DivfOp(fconst(b, 1.0), one_plus)).result


UNARY_BODIES: dict[str, Callable[[Builder, SSAValue], SSAValue]] = {
    "relu": lambda b, x: b.insert(arith.MaximumfOp(x, fconst(b, 0.0))).result,
    "gelu": _gelu,
    "gelu_tanh": _gelu_tanh,
    "sigmoid": _sigmoid,
    "silu": lambda b, x: b.insert(arith.MulfOp(x, _sigmoid(b, x))).result,
    "tanh": lambda b, x: b.insert(math.TanhOp(x)).result,
    "exp": lambda b, x: b.insert(math.ExpOp(x)).result,
    "neg": lambda b, x: b.insert(arith.NegfOp(x)).result,
    "sqrt": lambda b, x: b.insert(math.SqrtOp(x)).result,
    "rsqrt": lambda b, x: b.insert(math.RsqrtOp(x)).result,
    "reciprocal": lambda b, x: b.insert(arith.DivfOp(fconst(b, 1.0, x), x)).result,
    "abs": lambda b, x: b.insert(math.AbsFOp(x)).result,
    "log": lambda b, x: b.insert(math.LogOp(x)).result,
    "erf": lambda b, x: b.insert(math.ErfOp(x)).result,
    "sin": lambda b, x: b.insert(math.SinOp(x)).result,
    "cos": lambda b, x: b.insert(math.CosOp(x)).result,
}


def _keep(b: Builder, x: SSAValue, p: SSAValue) -> SSAValue:
    """x where p is nonzero, else -0.0 (sfu KEEP: the exact half of a select)."""
    nonzero = b.insert(arith.CmpfOp(p, fconst(b, 0.0, p), "une")).result
    return b.insert(arith.SelectOp(nonzero, x, fconst(b, -0.0, x))).result


BINARY_BODIES: dict[str, Callable[[Builder, SSAValue, SSAValue], SSAValue]] = {
    "add": lambda b, x, y: b.insert(arith.AddfOp(x, y)).result,
    "sub": lambda b, x, y: b.insert(arith.SubfOp(x, y)).result,
    "mul": lambda b, x, y: b.insert(arith.MulfOp(x, y)).result,
    "div": lambda b, x, y: b.insert(arith.DivfOp(x, y)).result,
    "maximum": lambda b, x, y: b.insert(arith.MaximumfOp(x, y)).result,
    "minimum": lambda b, x, y: b.insert(arith.MinimumfOp(x, y)).result,
    "keep": _keep,
}
