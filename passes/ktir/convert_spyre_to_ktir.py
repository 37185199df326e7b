"""convert-spyre-to-ktir: lower each `spyre.kernel` to a KTIR function.

Expects: kernels with `grid` and `tile` (after spyre-partition-cores and spyre-tile) and
stickified tensors. Guarantees: every kernel becomes a `func.func @kN(%t0: index, ...)
attributes {grid = [gm, gn]}` in valid KTIR (ktdp + arith/math/linalg/scf/tensor), taking
one element offset per input and output tensor, and the graph calls it with `spyre.launch`.

Inside, each core (`ktdp.get_compute_tile_id`) owns rows [x*Mc, (x+1)*Mc) and columns
[y*Nc, (y+1)*Nc) of the output. Views (`ktdp.construct_memory_view`) describe the stick-padded
LPDDR tensors; `scf.for` loops walk the core's tiles in the order spyre-tile chose
(`resident`): "a" rows outer with the tm x K block of A loaded before the column loop, "b"
columns outer with the K x tn block of B loaded before the row loop, "acc" rows, columns,
then the K loop loading both; `ktdp.construct_access_tile` + `ktdp.load` bring tiles in;
a `matmul` generic accumulates in f32 over the K loop; a row operand (a bias, a norm's
weight) of a core with one column tile and several row tiles (or tail pieces) is loaded
once, before the loops; each
epilogue op is a `linalg.generic` on the f32 tile (tagged `spyre.fn` with the SFU function
that implements it), a final one rounds to the output type, and `ktdp.store` writes it back
(with `spyre.store_pieces` when spyre-tile chose to store it in row pieces paced over the
next tile's K loop, note 54).
Attention and row-move kernels are built by `passes/ktir/ktir_attention.py`: their views make
each strided run of stored rows a box, their access tiles are placed by affine maps (with
floordiv / mod) of the head and row indices, and the attention body is a `matmul_nt`
generic (B indexed (d1, d2): K as stored), a `causal_mask` generic (`linalg.index` against
the tile's first query row, an index operand), the softmax generics and a `matmul` generic.
A tensor spyre-partition-cores keeps in LX between two kernels (`spyre.lx_results`, note
61) is, in both, a `ktdp.construct_distributed_memory_view` of one `ct_local` part per
core: core (x, y) (compute tile y * gm + x) holds its output block at the top of the usable
LX (`spyre.lx_reserved` = byte offset, bytes on the function); the producer builds each
tile's access tile before the rounding generic, so it can be rounded straight into it.

    %r = spyre.kernel "k0"(%x, %w, %b) {grid = [1, 2], tile = [64, 128, 256],
                                        resident = "b"} {...}                 // before
    %r = spyre.launch @k0(%x, %w, %b) : ...                                   // after
    func.func @k0(%x: index, %w: index, %b: index, %out: index) attributes {grid = [1, 2]}
      scf.for %n ... { %bt = ktdp.load B[0, col0 + %n]       // K x 128, once per column
        scf.for %m ... { %a = ktdp.load A[row0 + %m, 0] ... matmul(%a, %bt) ... } }
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith, func, scf, tensor
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    TensorType,
    UnitAttr,
    f32,
    i64,
)
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from spyrec.costmodel import tail_rows
from spyrec.dialects import spyre_plan as plan
from spyrec.dialects.ktdp import ConstructDistributedMemoryViewOp, GetComputeTileIdOp, StoreOp
from spyrec.dialects.spyre import KernelOp, LaunchOp
from spyrec.passes.graph.spyre_stickify import DEVICE_ITEMSIZE, layout_of
from spyrec.passes.ktir.ktir_attention import AttentionBuilder, MoveBuilder
from spyrec.passes.ktir.ktir_builder import (
    BINARY_BODIES,
    IDX,
    UNARY_BODIES,
    KtirBuilder,
    LxSlices,
    convert,
    fconst,
)
from spyrec.passes.ktir.ktir_gather import INDEX_ELEMENT, GatherBuilder, ScatterBuilder
from spyrec.passes.ktir.ktir_window import WindowBuilder
from spyrec.passes.planning.kernel_analysis import (
    AttentionInfo,
    GatherInfo,
    KernelInfo,
    Kind,
    MoveInfo,
    ScatterInfo,
    WindowInfo,
    analyze,
    kept_in_lx,
    op_kind,
    padded_rows_cols,
    read_split,
    read_tiling,
)
from spyrec.target import SpyreTarget


def stored_element(value: SSAValue, device_dtype: str) -> Attribute:
    """The element type of `value` as the device stores it: int64 tensors live on the
    device as int32 (indices; exact below 2^31), so their views are i32, not i64."""
    element = value.type.element_type  # type: ignore[attr-defined]
    if isinstance(element, IntegerType) and device_dtype == "i32":
        return INDEX_ELEMENT
    return element


class _KernelBuilder(KtirBuilder):
    """Builds the KTIR function of one analysed tile-graph kernel."""

    def __init__(self, info: KernelInfo, name: str, target: SpyreTarget):
        super().__init__()
        self.info = info
        self.name = name
        self.target = target
        self.kernel = info.kernel
        self.split = read_split(info.kernel)
        self.tiling = read_tiling(info.kernel)
        self.tiling_tm = self.tiling.tm  # a tail's pieces run with fewer

    def build(self) -> func.FuncOp:
        info = self.info
        inner = [*self.kernel.body.block.args, *info.outputs]
        outer = [*self.kernel.inputs, *self.kernel.results]
        block = Block(arg_types=[IDX] * len(inner))
        for arg, value in zip(block.args, outer):
            arg.name_hint = value.name_hint
        self.b = Builder(InsertPoint.at_end(block))
        x, y = self.b.insert(GetComputeTileIdOp(2)).results
        self.grid_col = y
        self.views: dict[SSAValue, tuple[SSAValue, tuple[int, int]]] = {}
        self.stored: dict[SSAValue, Attribute] = {}  # the element type each view holds
        reserved: LxSlices | None = None
        for value, outer_value, ptr in zip(inner, outer, block.args):
            if not value.uses and value not in info.outputs:
                continue
            layout = layout_of(outer_value)
            shape = padded_rows_cols(layout.padded_shape)
            element = stored_element(value, layout.device_dtype)
            self.stored[value] = element
            if kept_in_lx(outer_value):  # its slices in the cores' LX, not in LPDDR (note 61)
                slices = LxSlices.of(*shape, DEVICE_ITEMSIZE[layout.device_dtype],
                                     self.split.gm, self.split.gn,
                                     self.target.lx_usable_bytes)
                if reserved is None or slices.byte_offset < reserved.byte_offset:
                    reserved = slices  # one read and one written share it (note 61)
                self.views[value] = (self.lx_view(slices, element), shape)
                continue
            self.views[value] = (self.view(ptr, shape, element), shape)
        m, _n = info.full
        widths = [cols for value, (_, (_, cols)) in self.views.items()
                  if info.kinds.get(value) is not Kind.COL and not self._matmul_only(value)]
        if info.matmul is not None:  # the product's width (all a row reduction may keep of it)
            widths.append(self.views[info.matmul.rhs][1][1])
        padded_n = max(widths)
        mc, nc = m // self.split.gm, padded_n // self.split.gn
        row0 = self.mul(x, self.const(mc))
        col0 = self.mul(y, self.const(nc))
        t = self.tiling
        # a row operand (a bias, a norm's weight) depends on the column tile alone: with one
        # column tile and several row tiles (or a tail's row pieces) per core it is loaded
        # once, before the loops (with one tile it stays behind the tile's own loads, which
        # the first ops need)
        self.env: dict[SSAValue, SSAValue] = {}
        hoisted: dict[SSAValue, SSAValue] = {}
        if nc == t.tn and (mc > t.tm or t.tail > 1):
            hoisted = {value: self._value(value, row0, col0) for value in self.views
                       if info.kinds.get(value) is Kind.ROW and not self._matmul_only(value)
                       and value in self.kernel.body.block.args}

        resident = self._resident()

        def out_tile(r: SSAValue, c: SSAValue, a: SSAValue | None, b: SSAValue | None,
                     a_row: SSAValue | None = None) -> None:
            self.env = dict(hoisted)
            if info.matmul:
                self.env[info.matmul.result] = self._matmul(r, c, a, b, a_row)
            self._tile_graph(r, c)
            for value in info.outputs:
                self._store(value, r, c)

        if resident == "b":  # columns outer: the K x tn block of B is loaded once per column
            def n_outer(ni: SSAValue) -> None:
                c = self.add(col0, ni)
                b_tile = self._load_b(self.const(0), c)
                self.loop(mc, t.tm, lambda mi: out_tile(self.add(row0, mi), c, None, b_tile))

            self.loop(nc, t.tn, n_outer)
        else:  # rows outer: with "a" the tm x K block of A is loaded once per row
            def m_outer(mi: SSAValue) -> None:
                r = self.add(row0, mi)
                a_tile = self._load_a_block(r) if resident == "a" else None
                if a_tile is None or t.tail <= 1:
                    self.loop(nc, t.tn, lambda ni: out_tile(r, self.add(col0, ni), a_tile, None))
                    return
                # the last column tile in `tail` row pieces (note 57): its K x tn block of B
                # stays in LX, so each piece is stored while the next one is computed
                if nc > t.tn:
                    self.loop(nc - t.tn, t.tn,
                              lambda ni: out_tile(r, self.add(col0, ni), a_tile, None))
                c = self.add(col0, self.const(nc - t.tn))
                b_block = self._load_b_block(c)
                rows, last = tail_rows(t.tm, t.tail)
                self.tiling = replace(t, tm=rows)
                self.loop((t.tail - 1) * rows, rows,
                          lambda pi: out_tile(self.add(r, pi), c, a_tile, b_block, pi))
                self.tiling = replace(t, tm=last)
                at = self.const((t.tail - 1) * rows)
                out_tile(self.add(r, at), c, a_tile, b_block, at)
                self.tiling = t

            self.loop(mc, t.tm, m_outer)
        self.b.insert(func.ReturnOp())
        fn = func.FuncOp(self.name, ([IDX] * len(inner), []), Region(block))
        plan.GRID.set(fn, (self.split.gm, self.split.gn))
        plan.SHARE.copy(self.kernel, fn)  # for spyre-schedule-dataflow
        if reserved is not None:  # spyre-place-memory keeps the kernel's tiles below it
            fn.attributes["spyre.lx_reserved"] = DenseArrayBase.from_list(
                i64, [reserved.byte_offset, reserved.bytes])
        plan.record_decisions(self.kernel, fn, (
            plan.FUSED, plan.REASON, plan.FUSION, plan.PARTITION, plan.TILING, plan.TILE,
            plan.RESIDENT, plan.TAIL))
        shape = self.info.shape()
        fn.attributes["spyre.cost"] = DictionaryAttr({
            "flops": IntegerAttr(shape.flops, 64),
            "min_offchip_bytes": IntegerAttr(shape.min_offchip_bytes, 64),
        })
        return fn

    def _resident(self) -> str:
        """The matmul operand kept in LX (spyre-tile's `resident`; a tile set without one
        keeps A when K fits one tile)."""
        if self.info.matmul is None:
            return ""
        if self.tiling.resident:
            return self.tiling.resident
        kp = self.views[self.info.matmul.lhs][1][1]
        return "a" if kp == self.tiling.tk else "acc"

    def _load_a(self, r: SSAValue, k: SSAValue) -> SSAValue:
        mm = self.info.matmul
        assert mm is not None
        view = self.views[mm.lhs][0]
        return self.load(view, r, k, (self.tiling.tm, self.tiling.tk), mm.lhs.type.element_type)  # type: ignore[attr-defined]

    def _load_a_block(self, r: SSAValue) -> SSAValue:
        """The tm x K row block of A kept over the column loop; with tk < K it is loaded in
        K slices (`spyre.load_pieces`), which the K loop reads as they arrive (note 54)."""
        mm = self.info.matmul
        assert mm is not None
        t, kp = self.tiling, self.views[mm.lhs][1][1]
        view = self.views[mm.lhs][0]
        block = self.load(view, r, self.const(0), (t.tm, kp), mm.lhs.type.element_type)  # type: ignore[attr-defined]
        if t.tk < kp:
            block.owner.attributes["spyre.load_pieces"] = IntegerAttr(kp // t.tk, 64)  # type: ignore[union-attr]
        return block

    def _load_b(self, k: SSAValue, c: SSAValue) -> SSAValue:
        mm = self.info.matmul
        assert mm is not None
        view = self.views[mm.rhs][0]
        return self.load(view, k, c, (self.tiling.tk, self.tiling.tn), mm.rhs.type.element_type)  # type: ignore[attr-defined]

    def _load_b_block(self, c: SSAValue) -> SSAValue:
        """The K x tn column block of B kept over a tail's row pieces (note 57), loaded in K
        slices (row pieces of the block) that the first piece's K loop reads as they come."""
        mm = self.info.matmul
        assert mm is not None
        t, kp = self.tiling, self.views[mm.lhs][1][1]
        view = self.views[mm.rhs][0]
        block = self.load(view, self.const(0), c, (kp, t.tn), mm.rhs.type.element_type)  # type: ignore[attr-defined]
        if t.tk < kp:
            block.owner.attributes["spyre.load_pieces"] = IntegerAttr(kp // t.tk, 64)  # type: ignore[union-attr]
            block.owner.attributes["spyre.load_pieces_dim"] = IntegerAttr(0, 64)  # type: ignore[union-attr]
        return block

    def _slice(self, block: SSAValue, offsets: Sequence[SSAValue | int],
               sizes: Sequence[int]) -> SSAValue:
        """A view of part of a resident block (no data moves)."""
        block_type = block.type
        assert isinstance(block_type, TensorType)
        return self.b.insert(tensor.ExtractSliceOp(
            block, offsets, sizes, [1, 1],
            TensorType(block_type.element_type, list(sizes)))).result

    def _matmul(self, r: SSAValue, c: SSAValue, a_resident: SSAValue | None,
                b_resident: SSAValue | None, a_row: SSAValue | None = None) -> SSAValue:
        """acc = A[r, :] @ B[:, c] over the K loop; a resident operand (its whole K, loaded
        outside the loops) is read as it is, the other is loaded per K step. In a tail's row
        piece (`a_row`: its first row in the A block) both operands are resident blocks and
        each K step reads a slice of both."""
        mm = self.info.matmul
        assert mm is not None
        t = self.tiling
        acc0 = self.fill([t.tm, t.tn], 0.0)
        acc_type = acc0.type
        kp = self.views[mm.lhs][1][1]
        block = Block(arg_types=[IDX, acc_type])
        outer, saved = self.b, dict(self.consts)
        self.b = Builder(InsertPoint.at_end(block))
        ki, acc = block.args
        a = a_resident if a_resident is not None else self._load_a(r, ki)
        if a_resident is not None and (t.tk < kp or a_row is not None):
            a = self._slice(a_resident, [0 if a_row is None else a_row, ki], [t.tm, t.tk])
        b = b_resident if b_resident is not None else self._load_b(ki, c)
        if b_resident is not None and a_row is not None and t.tk < kp:
            b = self._slice(b_resident, [ki, 0], [t.tk, t.tn])
        prod = self.matmul_generic(a, b, acc)
        self.b.insert(scf.YieldOp(prod))
        self.b, self.consts = outer, saved
        loop = self.b.insert(
            scf.ForOp(self.const(0), self.const(kp), self.const(t.tk), [acc0], block))
        return loop.results[0]

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
        tile = self.load(view, rows, cols, self._extents(kind), self.stored[value])
        self.env[value] = tile
        return tile

    def _tile_graph(self, r: SSAValue, c: SSAValue) -> None:
        info = self.info
        if info.matmul is not None and info.matmul.bias is not None:
            acc = self.env[info.matmul.result]
            bias = self._value(info.matmul.bias, r, c)
            self.env[info.matmul.result] = self._generic(
                "add", [acc, bias], [Kind.FULL, Kind.ROW], Kind.FULL,
                lambda b, args: BINARY_BODIES["add"](b, convert(b, args[0], f32),
                                                     convert(b, args[1], f32)))
        for op in info.ops:
            category, fn = op_kind(op)
            result = op.results[0]
            out_kind = info.kind(result)
            if category in ("cast", "view"):  # the operand's tile, converted at its use
                self.env[result] = self._value(op.operands[0], r, c)
                continue
            ins = [self._value(v, r, c) for v in op.operands]
            kinds = [info.kind(v) for v in op.operands]
            if category == "unary":
                body_fn = UNARY_BODIES[fn]
                self.env[result] = self._generic(
                    fn, ins, kinds, out_kind, lambda b, a, f=body_fn: f(b, convert(b, a[0], f32)))
            elif category == "binary":
                comb = BINARY_BODIES[fn]
                self.env[result] = self._generic(
                    fn, ins, kinds, out_kind,
                    lambda b, a, f=comb: f(b, convert(b, a[0], f32), convert(b, a[1], f32)))
            elif category == "scalar":
                value = op.value.value.data  # type: ignore[attr-defined]
                reverse = op.reverse is not None  # type: ignore[attr-defined]
                comb = BINARY_BODIES[fn]

                def scalar_body(b: Builder, a: Sequence[SSAValue], f=comb, v=value,
                                rev=reverse) -> SSAValue:
                    x, k = convert(b, a[0], f32), fconst(b, v)
                    return f(b, k, x) if rev else f(b, x, k)

                gen = self._generic(fn, ins, kinds, out_kind, scalar_body)
                gen.owner.attributes["spyre.scalar"] = FloatAttr(value, f32)  # type: ignore[union-attr]
                if reverse:
                    gen.owner.attributes["spyre.reverse"] = UnitAttr()  # type: ignore[union-attr]
                self.env[result] = gen
            else:
                self.env[result] = self._reduce(fn, ins[0])

    def _reduce(self, fn: str, src: SSAValue) -> SSAValue:
        """A row reduction over the valid (unpadded) columns, as a reduction generic. With
        the reduced dim split over a grid row (gn > 1, sums only, no padded column: note 59)
        each core reduces its share of the row and the shares' partial sums are all-reduced
        over the grid row, so every core goes on with the whole row's sum."""
        if self.split.gn == 1:
            return self.reduce_generic(fn, src, self.info.full[1])
        assert fn == "sum", "spyre-partition-cores splits only rows reduced by sums"
        partial = self.reduce_generic(fn, src, self.tiling.tn)
        return self.grid_row_all_reduce(partial, self.split.gm, self.split.gn)

    def _store(self, value: SSAValue, r: SSAValue, c: SSAValue) -> None:
        kind = self.info.kind(value)
        if kind is Kind.COL and self.split.gn > 1:
            # a split row's one-column result is whole on every core of the grid row after
            # its all-reduce: the row's first core stores it (note 59)
            first = self.b.insert(arith.CmpiOp(self.grid_col, self.const(0), "eq")).result
            self.when(first, lambda: self._store_tile(value, kind, r, c))
            return
        self._store_tile(value, kind, r, c)

    def _store_tile(self, value: SSAValue, kind: Kind, r: SSAValue, c: SSAValue) -> None:
        tile = self.env[value]
        rows, cols = self._extents(kind)
        element = self.stored[value]
        view = self.views[value][0]
        at = self.const(0) if kind is Kind.COL else c
        # a tensor kept in LX: its access tile first, so spyre-schedule-dataflow rounds the
        # result straight into the core's part of it (note 61)
        kept = self._tile(view, r, at, (rows, cols)) \
            if isinstance(view.owner, ConstructDistributedMemoryViewOp) else None
        out = self._generic("copy", [tile], [kind], kind, lambda b, a: convert(b, a[0], element),
                            element=element)
        store = self.b.insert(StoreOp(out, kept or self._tile(view, r, at, (rows, cols))))
        pieces = plan.STORE_PIECES.get(self.kernel) or 1
        # paced over the next tile's K steps (note 54); a tail's pieces are the split itself
        if pieces > 1 and kind is Kind.FULL and self.tiling.tm == self.tiling_tm:
            store.attributes["spyre.store_pieces"] = IntegerAttr(pieces, 64)

    def _generic(self, fn: str, inputs: Sequence[SSAValue], kinds: Sequence[Kind],
                 out_kind: Kind, body: Callable[[Builder, Sequence[SSAValue]], SSAValue],
                 element: Attribute = f32) -> SSAValue:
        """An elementwise generic over the out tile; ROW/COL inputs broadcast by their maps."""
        result_type = TensorType(element, list(self._extents(out_kind)))
        d0, d1, zero = AffineExpr.dimension(0), AffineExpr.dimension(1), AffineExpr.constant(0)
        by_kind = {Kind.FULL: (d0, d1), Kind.ROW: (zero, d1), Kind.COL: (d0, zero)}
        maps = [AffineMap(2, 0, by_kind[k] if k is not out_kind else (d0, d1)) for k in kinds]
        return self.elementwise(fn, inputs, maps, result_type, body)


def build_kernel_func(kernel: KernelOp, target: SpyreTarget) -> func.FuncOp:
    """The KTIR function of a tile-graph kernel with `grid` and `tile` (spyre-tile lowers
    candidate tilings with it to count the LX spyre-place-memory will allocate)."""
    info = analyze(kernel)
    assert isinstance(info, KernelInfo)
    return _KernelBuilder(info, kernel.sym_name.data, target).build()


@dataclass(frozen=True)
class ConvertSpyreToKtir(ModulePass):
    """Replace every spyre.kernel by a KTIR function and a spyre.launch of it."""

    name = "convert-spyre-to-ktir"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        rewriter = Rewriter()
        target = plan.target_of(op)
        for kernel in [o for o in op.walk() if isinstance(o, KernelOp)]:
            name = kernel.sym_name.data
            info = analyze(kernel)
            if isinstance(info, AttentionInfo):
                fn = AttentionBuilder(info, name).build()
            elif isinstance(info, MoveInfo):
                fn = MoveBuilder(info, name).build()
            elif isinstance(info, WindowInfo):
                fn = WindowBuilder(info, name).build()
            elif isinstance(info, GatherInfo):
                fn = GatherBuilder(info, name).build()
            elif isinstance(info, ScatterInfo):
                fn = ScatterBuilder(info, name).build()
            else:
                fn = _KernelBuilder(info, name, target).build()
            op.body.block.add_op(fn)
            launch = LaunchOp(name, list(kernel.inputs), [r.type for r in kernel.results])
            for spec in (plan.LAYOUT, plan.INPLACE, plan.LX_RESULTS):  # an in-place scatter
                spec.copy(kernel, launch)  # (ktir_gather.py), results kept in LX (note 61)
            rewriter.replace_op(kernel, launch)
