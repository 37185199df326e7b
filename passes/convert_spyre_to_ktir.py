"""convert-spyre-to-ktir: lower each `spyre.kernel` to a KTIR function.

Expects: kernels with `grid` and `tile` (after spyre-partition-cores and spyre-tile) and
stickified tensors. Guarantees: every kernel becomes a `func.func @kN(%t0: index, ...)
attributes {grid = [gm, gn]}` in valid KTIR (ktdp + arith/math/linalg/scf/tensor), taking
one element offset per input and output tensor, and the graph calls it with `spyre.launch`.

Inside, each core (`ktdp.get_compute_tile_id`) owns rows [x*Mc, (x+1)*Mc) and columns
[y*Nc, (y+1)*Nc) of the output. Views (`ktdp.construct_memory_view`) describe the stick-padded
LPDDR tensors; `scf.for` loops walk the core's tiles; `ktdp.construct_access_tile` +
`ktdp.load` bring tiles in; `linalg.matmul` accumulates in f32 over the K loop; each
epilogue op is a `linalg.generic` on the f32 tile (tagged `spyre.fn` with the SFU function
that implements it), a final one rounds to the output type, and `ktdp.store` writes it back.

    %r = spyre.kernel "k0"(%x, %w, %b) {grid = [1, 2], tile = [64, 128, 64]} {...}   // before
    %r = spyre.launch @k0(%x, %w, %b) : ...                                          // after
    func.func @k0(%x: index, %w: index, %b: index, %out: index) attributes {grid = [1, 2]}
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith, func, math, scf, tensor
from xdsl.dialects.linalg import ops as linalg
from xdsl.dialects.linalg.attrs import IteratorTypeAttr
from xdsl.dialects.builtin import (
    AffineMapAttr,
    AffineSetAttr,
    ArrayAttr,
    DictionaryAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
    f32,
)
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.ir.affine import AffineConstraintExpr, AffineConstraintKind, AffineExpr, AffineMap, AffineSet
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from spyrec.dialects.ktdp import (
    AccessTileType,
    ConstructAccessTileOp,
    ConstructMemoryViewOp,
    GetComputeTileIdOp,
    LoadOp,
    MemorySpaceAttr,
    StoreOp,
)
from spyrec.dialects.spyre import KernelOp, LaunchOp
from spyrec.passes.kernel_analysis import (
    Kind,
    KernelInfo,
    analyze,
    op_kind,
    read_split,
    read_tiling,
)
from spyrec.passes.spyre_stickify import layout_of

IDX = IndexType()


def box_set(extents: Sequence[int]) -> AffineSetAttr:
    """The set {0 <= d_i <= e_i - 1} as an affine_set attribute."""
    constraints = []
    for i, e in enumerate(extents):
        d = AffineExpr.dimension(i)
        constraints.append(AffineConstraintExpr(AffineConstraintKind.ge, d, AffineExpr.constant(0)))
        constraints.append(AffineConstraintExpr(
            AffineConstraintKind.ge, AffineExpr.constant(e - 1) - d, AffineExpr.constant(0)))
    return AffineSetAttr(AffineSet(len(extents), 0, tuple(constraints)))


class _KernelBuilder:
    """Builds the KTIR function of one analysed kernel."""

    def __init__(self, info: KernelInfo, name: str):
        self.info = info
        self.name = name
        self.kernel = info.kernel
        self.split = read_split(info.kernel)
        self.tiling = read_tiling(info.kernel)
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
        return op.result

    def add(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.b.insert(arith.AddiOp(a, b)).result

    def mul(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.b.insert(arith.MuliOp(a, b)).result

    def loop(self, upper: int, step: int, body: Callable[[SSAValue], None]) -> None:
        block = Block(arg_types=[IDX])
        outer = self.b
        self.b = Builder(InsertPoint.at_end(block))
        saved = dict(self.consts)
        body(block.args[0])
        self.b.insert(scf.YieldOp())
        self.b, self.consts = outer, saved
        outer.insert(scf.ForOp(self.const(0), self.const(upper), self.const(step), [], block))

    # -- the kernel -------------------------------------------------------------------
    def build(self) -> func.FuncOp:
        info = self.info
        inner = [*self.kernel.body.block.args, *info.outputs]
        outer = [*self.kernel.inputs, *self.kernel.results]
        block = Block(arg_types=[IDX] * len(inner))
        for arg, value in zip(block.args, outer):
            arg.name_hint = value.name_hint
        self.b = Builder(InsertPoint.at_end(block))
        x, y = self.b.insert(GetComputeTileIdOp(2)).results
        self.views: dict[SSAValue, tuple[SSAValue, tuple[int, int]]] = {}
        for value, outer_value, ptr in zip(inner, outer, block.args):
            if not value.uses and value not in info.outputs:
                continue
            shape = _rows_cols(layout_of(outer_value).padded_shape)
            element = value.type.element_type  # type: ignore[attr-defined]
            self.views[value] = (self.view(ptr, shape, element), shape)
        m, n = info.full
        padded_n = max(cols for value, (_, (_, cols)) in self.views.items()
                       if info.kinds.get(value) is not Kind.COL and not self._matmul_only(value))
        mc, nc = m // self.split.gm, padded_n // self.split.gn
        row0 = self.mul(x, self.const(mc))
        col0 = self.mul(y, self.const(nc))
        t = self.tiling

        def m_body(mi: SSAValue) -> None:
            r = self.add(row0, mi)
            a_tile = None
            if info.matmul and self._k_tiles() == 1:
                a_tile = self._load_a(r, self.const(0))  # A row block stays resident over n

            def n_body(ni: SSAValue) -> None:
                c = self.add(col0, ni)
                self.env: dict[SSAValue, SSAValue] = {}
                if info.matmul:
                    self.env[info.matmul.result] = self._matmul(r, c, a_tile)
                self._tile_graph(r, c)
                for value in info.outputs:
                    self._store(value, r, c)

            self.loop(nc, t.tn, n_body)

        self.loop(mc, t.tm, m_body)
        self.b.insert(func.ReturnOp())
        fn = func.FuncOp(self.name, ([IDX] * len(inner), []), Region(block))
        fn.attributes["grid"] = ArrayAttr([IntegerAttr(self.split.gm, 64),
                                           IntegerAttr(self.split.gn, 64)])
        fn.attributes["spyre.decisions"] = DictionaryAttr({
            k: self.kernel.attributes[k] for k in
            ("fused", "reason", "spyre.partition", "spyre.tiling", "tile")
            if k in self.kernel.attributes})
        shape = self.info.shape()
        fn.attributes["spyre.cost"] = DictionaryAttr({
            "flops": IntegerAttr(shape.flops, 64),
            "min_offchip_bytes": IntegerAttr(shape.min_offchip_bytes, 64),
        })
        return fn

    def _k_tiles(self) -> int:
        assert self.info.matmul is not None
        kp = self.views[self.info.matmul.lhs][1][1]
        return kp // self.tiling.tk

    def _load_a(self, r: SSAValue, k: SSAValue) -> SSAValue:
        mm = self.info.matmul
        assert mm is not None
        view = self.views[mm.lhs][0]
        return self.load(view, r, k, (self.tiling.tm, self.tiling.tk), mm.lhs.type.element_type)  # type: ignore[attr-defined]

    def _matmul(self, r: SSAValue, c: SSAValue, a_resident: SSAValue | None) -> SSAValue:
        mm = self.info.matmul
        assert mm is not None
        t = self.tiling
        acc_type = TensorType(f32, [t.tm, t.tn])
        empty = self.b.insert(tensor.EmptyOp([], acc_type)).tensor
        zero = self.b.insert(arith.ConstantOp(FloatAttr(0.0, f32))).result
        acc0 = self.b.insert(linalg.FillOp([zero], [empty], [acc_type])).results[0]
        kp = self.views[mm.lhs][1][1]
        block = Block(arg_types=[IDX, acc_type])
        outer, saved = self.b, dict(self.consts)
        self.b = Builder(InsertPoint.at_end(block))
        ki, acc = block.args
        a = a_resident if a_resident is not None else self._load_a(r, ki)
        b = self.load(self.views[mm.rhs][0], ki, c, (t.tk, t.tn), mm.rhs.type.element_type)  # type: ignore[attr-defined]
        prod = self._matmul_generic(a, b, acc)
        self.b.insert(scf.YieldOp(prod))
        self.b, self.consts = outer, saved
        loop = self.b.insert(scf.ForOp(self.const(0), self.const(kp), self.const(t.tk), [acc0], block))
        return loop.results[0]

    def _matmul_generic(self, a: SSAValue, b: SSAValue, acc: SSAValue) -> SSAValue:
        """acc += a @ b as a linalg.generic with explicit widening to f32.

        `linalg.matmul` with f16 operands and an f32 accumulator is what upstream prints,
        but xDSL 0.74 rebuilds its body with the operand type and rejects it; the generic
        form states the same computation and parses everywhere.
        """
        block = Block(arg_types=[a.type.element_type, b.type.element_type, f32])  # type: ignore[attr-defined]
        inner = Builder(InsertPoint.at_end(block))
        x, y, z = block.args
        prod = inner.insert(arith.MulfOp(_convert(inner, x, f32), _convert(inner, y, f32))).result
        inner.insert(linalg.YieldOp(inner.insert(arith.AddfOp(z, prod)).result))
        d0, d1, d2 = (AffineExpr.dimension(i) for i in range(3))
        maps = [AffineMap(3, 0, (d0, d2)), AffineMap(3, 0, (d2, d1)), AffineMap(3, 0, (d0, d1))]
        iters = [IteratorTypeAttr.parallel(), IteratorTypeAttr.parallel(),
                 IteratorTypeAttr.reduction()]
        op = self.b.insert(linalg.GenericOp(
            [a, b], [acc], Region(block), [AffineMapAttr(m) for m in maps], iters, [acc.type]))
        op.attributes["spyre.fn"] = StringAttr("matmul")
        return op.results[0]

    def _matmul_only(self, value: SSAValue) -> bool:
        mm = self.info.matmul
        return mm is not None and all(u.operation is mm and u.index < 2 for u in value.uses)

    def _extents(self, kind: Kind) -> tuple[int, int]:
        t = self.tiling
        return {Kind.FULL: (t.tm, t.tn), Kind.ROW: (1, t.tn), Kind.COL: (t.tm, 1)}[kind]

    def _value(self, value: SSAValue, r: SSAValue, c: SSAValue) -> SSAValue:
        """The KTIR tile of a kernel value; kernel inputs are loaded on first use."""
        if value in self.env:
            return self.env[value]
        kind = self.info.kind(value)
        view = self.views[value][0]
        rows = self.const(0) if kind is Kind.ROW else r
        cols = self.const(0) if kind is Kind.COL else c
        element = value.type.element_type  # type: ignore[attr-defined]
        tile = self.load(view, rows, cols, self._extents(kind), element)
        self.env[value] = tile
        return tile

    def _tile_graph(self, r: SSAValue, c: SSAValue) -> None:
        info = self.info
        if info.matmul is not None and info.matmul.bias is not None:
            acc = self.env[info.matmul.result]
            bias = self._value(info.matmul.bias, r, c)
            self.env[info.matmul.result] = self._generic(
                "add", [acc, bias], [Kind.FULL, Kind.ROW], Kind.FULL,
                lambda b, args: BINARY_BODIES["add"](b, _convert(b, args[0], f32),
                                                     _convert(b, args[1], f32)))
        for op in info.ops:
            category, fn = op_kind(op)
            result = op.results[0]
            out_kind = info.kind(result)
            if category == "cast":
                self.env[result] = self._value(op.operands[0], r, c)
                continue
            ins = [self._value(v, r, c) for v in op.operands]
            kinds = [info.kind(v) for v in op.operands]
            if category == "unary":
                body_fn = UNARY_BODIES[fn]
                self.env[result] = self._generic(
                    fn, ins, kinds, out_kind, lambda b, a, f=body_fn: f(b, _convert(b, a[0], f32)))
            elif category == "binary":
                comb = BINARY_BODIES[fn]
                self.env[result] = self._generic(
                    fn, ins, kinds, out_kind,
                    lambda b, a, f=comb: f(b, _convert(b, a[0], f32), _convert(b, a[1], f32)))
            elif category == "scalar":
                value = op.value.value.data  # type: ignore[attr-defined]
                reverse = op.reverse is not None  # type: ignore[attr-defined]
                comb = BINARY_BODIES[fn]

                def scalar_body(b: Builder, a: Sequence[SSAValue], f=comb, v=value,
                                rev=reverse) -> SSAValue:
                    x, k = _convert(b, a[0], f32), _fconst(b, v)
                    return f(b, k, x) if rev else f(b, x, k)

                gen = self._generic(fn, ins, kinds, out_kind, scalar_body)
                gen.owner.attributes["spyre.scalar"] = FloatAttr(value, f32)  # type: ignore[union-attr]
                if reverse:
                    gen.owner.attributes["spyre.reverse"] = UnitAttr()  # type: ignore[union-attr]
                self.env[result] = gen
            else:
                self.env[result] = self._reduce(fn, ins[0])

    def _reduce(self, fn: str, src: SSAValue) -> SSAValue:
        """A row reduction over the valid (unpadded) columns, as a reduction generic."""
        t = self.tiling
        n = self.info.full[1]
        out_type = TensorType(f32, [t.tm, 1])
        identity = {"sum": 0.0, "max": float("-inf"), "min": float("inf")}[fn]
        empty = self.b.insert(tensor.EmptyOp([], out_type)).tensor
        init = self.b.insert(arith.ConstantOp(FloatAttr(identity, f32))).result
        acc = self.b.insert(linalg.FillOp([init], [empty], [out_type])).results[0]
        block = Block(arg_types=[src.type.element_type, f32])  # type: ignore[attr-defined]
        inner = Builder(InsertPoint.at_end(block))
        x, a = block.args
        col = inner.insert(linalg.IndexOp(1)).result
        limit = inner.insert(arith.ConstantOp(IntegerAttr(n, IDX))).result
        valid = inner.insert(arith.CmpiOp(col, limit, "ult")).result
        combined = {"sum": BINARY_BODIES["add"], "max": BINARY_BODIES["maximum"],
                    "min": BINARY_BODIES["minimum"]}[fn](inner, a, _convert(inner, x, f32))
        inner.insert(linalg.YieldOp(inner.insert(arith.SelectOp(valid, combined, a)).result))
        d0, d1 = AffineExpr.dimension(0), AffineExpr.dimension(1)
        maps = [AffineMap(2, 0, (d0, d1)), AffineMap(2, 0, (d0, AffineExpr.constant(0)))]
        op = self.b.insert(linalg.GenericOp(
            [src], [acc], Region(block), [AffineMapAttr(m) for m in maps],
            [IteratorTypeAttr.parallel(), IteratorTypeAttr.reduction()], [out_type]))
        op.attributes["spyre.fn"] = StringAttr(f"reduce_{fn}")
        op.attributes["spyre.valid_cols"] = IntegerAttr(n, IDX)
        return op.results[0]

    def _store(self, value: SSAValue, r: SSAValue, c: SSAValue) -> None:
        kind = self.info.kind(value)
        tile = self.env[value]
        rows, cols = self._extents(kind)
        element = value.type.element_type  # type: ignore[attr-defined]
        out = self._generic("copy", [tile], [kind], kind, lambda b, a: _convert(b, a[0], element),
                            element=element)
        view = self.views[value][0]
        self.b.insert(StoreOp(out, self._tile(view, r, self.const(0) if kind is Kind.COL else c,
                                               (rows, cols))))

    def _generic(self, fn: str, inputs: Sequence[SSAValue], kinds: Sequence[Kind],
                 out_kind: Kind, body: Callable[[Builder, Sequence[SSAValue]], SSAValue],
                 element: Attribute = f32) -> SSAValue:
        """An elementwise generic over the out tile; ROW/COL inputs broadcast by their maps."""
        result_type = TensorType(element, list(self._extents(out_kind)))
        empty = self.b.insert(tensor.EmptyOp([], result_type)).tensor
        arg_types = [v.type.element_type for v in inputs] + [element]  # type: ignore[attr-defined]
        block = Block(arg_types=arg_types)
        inner = Builder(InsertPoint.at_end(block))
        inner.insert(linalg.YieldOp(body(inner, block.args[:len(inputs)])))
        d0, d1, zero = AffineExpr.dimension(0), AffineExpr.dimension(1), AffineExpr.constant(0)
        by_kind = {Kind.FULL: (d0, d1), Kind.ROW: (zero, d1), Kind.COL: (d0, zero)}
        maps = [AffineMap(2, 0, by_kind[k] if k is not out_kind else (d0, d1)) for k in kinds]
        maps.append(AffineMap.identity(2))
        op = self.b.insert(linalg.GenericOp(
            list(inputs), [empty], Region(block), [AffineMapAttr(m) for m in maps],
            [IteratorTypeAttr.parallel()] * 2, [result_type]))
        op.attributes["spyre.fn"] = StringAttr(fn)
        return op.results[0]


def _rows_cols(padded: Sequence[int]) -> tuple[int, int]:
    rows = 1
    for d in padded[:-1]:
        rows *= d
    return rows, padded[-1]


def _convert(b: Builder, value: SSAValue, to: Attribute) -> SSAValue:
    if value.type == to:
        return value
    if to == f32:
        return b.insert(arith.ExtFOp(value, f32)).result
    return b.insert(arith.TruncFOp(value, to)).result


def _fconst(b: Builder, v: float) -> SSAValue:
    return b.insert(arith.ConstantOp(FloatAttr(v, f32))).result


def _gelu(b: Builder, x: SSAValue) -> SSAValue:
    # 0.5 * x * (1 + erf(x / sqrt(2)))
    scaled = b.insert(arith.MulfOp(x, _fconst(b, 0.7071067811865476))).result
    erf = b.insert(math.ErfOp(scaled)).result
    one_plus = b.insert(arith.AddfOp(erf, _fconst(b, 1.0))).result
    half_x = b.insert(arith.MulfOp(x, _fconst(b, 0.5))).result
    return b.insert(arith.MulfOp(half_x, one_plus)).result


def _gelu_tanh(b: Builder, x: SSAValue) -> SSAValue:
    # 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))
    x3 = b.insert(arith.MulfOp(b.insert(arith.MulfOp(x, x)).result, x)).result
    inner = b.insert(arith.AddfOp(x, b.insert(arith.MulfOp(x3, _fconst(b, 0.044715))).result)).result
    th = b.insert(math.TanhOp(b.insert(arith.MulfOp(inner, _fconst(b, 0.7978845608028654))).result)).result
    one_plus = b.insert(arith.AddfOp(th, _fconst(b, 1.0))).result
    return b.insert(arith.MulfOp(b.insert(arith.MulfOp(x, _fconst(b, 0.5))).result, one_plus)).result


def _sigmoid(b: Builder, x: SSAValue) -> SSAValue:
    e = b.insert(math.ExpOp(b.insert(arith.NegfOp(x)).result)).result
    return b.insert(arith.DivfOp(_fconst(b, 1.0), b.insert(arith.AddfOp(e, _fconst(b, 1.0))).result)).result


UNARY_BODIES: dict[str, Callable[[Builder, SSAValue], SSAValue]] = {
    "relu": lambda b, x: b.insert(arith.MaximumfOp(x, _fconst(b, 0.0))).result,
    "gelu": _gelu,
    "gelu_tanh": _gelu_tanh,
    "sigmoid": _sigmoid,
    "silu": lambda b, x: b.insert(arith.MulfOp(x, _sigmoid(b, x))).result,
    "tanh": lambda b, x: b.insert(math.TanhOp(x)).result,
    "exp": lambda b, x: b.insert(math.ExpOp(x)).result,
    "neg": lambda b, x: b.insert(arith.NegfOp(x)).result,
    "sqrt": lambda b, x: b.insert(math.SqrtOp(x)).result,
    "rsqrt": lambda b, x: b.insert(math.RsqrtOp(x)).result,
    "reciprocal": lambda b, x: b.insert(arith.DivfOp(_fconst(b, 1.0), x)).result,
    "abs": lambda b, x: b.insert(math.AbsFOp(x)).result,
}

BINARY_BODIES: dict[str, Callable[[Builder, SSAValue, SSAValue], SSAValue]] = {
    "add": lambda b, x, y: b.insert(arith.AddfOp(x, y)).result,
    "sub": lambda b, x, y: b.insert(arith.SubfOp(x, y)).result,
    "mul": lambda b, x, y: b.insert(arith.MulfOp(x, y)).result,
    "div": lambda b, x, y: b.insert(arith.DivfOp(x, y)).result,
    "maximum": lambda b, x, y: b.insert(arith.MaximumfOp(x, y)).result,
    "minimum": lambda b, x, y: b.insert(arith.MinimumfOp(x, y)).result,
}


@dataclass(frozen=True)
class ConvertSpyreToKtir(ModulePass):
    """Replace every spyre.kernel by a KTIR function and a spyre.launch of it."""

    name = "convert-spyre-to-ktir"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        rewriter = Rewriter()
        for kernel in [o for o in op.walk() if isinstance(o, KernelOp)]:
            name = kernel.sym_name.data
            fn = _KernelBuilder(analyze(kernel), name).build()
            op.body.block.add_op(fn)
            launch = LaunchOp(name, list(kernel.inputs), [r.type for r in kernel.results])
            launch.attributes["spyre.layout"] = kernel.attributes["spyre.layout"]
            rewriter.replace_op(kernel, launch)
