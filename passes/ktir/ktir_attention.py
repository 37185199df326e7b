"""KTIR builders of the attention and row-move kernels (used by convert-spyre-to-ktir).

Both read and write stored tensors through row maps (`passes/graph/row_maps.py`): each stored
tensor gets one 2-D view [rows / stride, stride * cols] in which a run of `stride`-apart
stored rows is a box, and every access tile is placed by an affine map (with floordiv / mod)
of the core's loop indices, so a head transpose or a grouped-query head index costs nothing
but a subscript.

Attention, per core (x, y): heads [x * Hc, (x + 1) * Hc) of batch x query heads, query rows
[y * Lc, (y + 1) * Lc). Per head, K [S, E] and V [S, Ev padded] are loaded once and stay in
LX; per query tile of tq rows:

    Q = load [tq, E]                      scores = Q K^T        (generic "matmul_nt", f32)
    scores *= scale                       ("mul", spyre.scalar)
    scores[r, c] = -30000 if c > q0 + r   ("causal_mask", linalg.index; finite: DL16 has no
                                           -inf, and exp(-30000 - max) is exactly 0)
    scores += mask[q0 : q0 + tq]          ("add", an [L, S] additive mask)
    m = max over c < S ; e = exp(scores - m) ; l = sum over c < S ; P = e / l (input type)
    (zero_unseen: m = max(m, -FLT_MAX) and l += 2^-100, so a row of -inf gets P = 0 / 2^-100
     = 0 instead of NaN; l >= 1 in every other row, where the add changes nothing)
    O = P V with k = S                    ("matmul": P's padding columns are never read)
    store O rounded to the output type

A row-move kernel loads runs of tm rows through the source's row map and stores them into
the contiguous output.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from xdsl.builder import Builder
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    TensorType,
    UnitAttr,
    f32,
)
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.rewriter import InsertPoint

from spyrec.dialects import spyre_plan as plan
from spyrec.dialects.ktdp import GetComputeTileIdOp, StoreOp
from spyrec.dialects.spyre import BatchMatmulOp, KernelOp
from spyrec.passes.graph.row_maps import const, head_indices, lead_shape, mul
from spyrec.passes.graph.spyre_stickify import layout_of
from spyrec.passes.ktir.ktir_builder import (
    BINARY_BODIES,
    IDX,
    UNARY_BODIES,
    KtirBuilder,
    convert,
    fconst,
)
from spyrec.passes.planning.kernel_analysis import (
    AttentionInfo,
    MoveInfo,
    Stored,
    mask_origin,
    mask_rows,
    read_split,
    read_tiling,
)

MASK_VALUE = -30000.0  # what masked scores become: finite on every device type
F32_MAX = 3.4028234663852886e38  # the largest finite f32


class _StoredBuilder(KtirBuilder):
    """Function signature, views of stored tensors and the decision attributes."""

    def __init__(self, kernel: KernelOp, outputs: Sequence[SSAValue], name: str):
        super().__init__()
        self.kernel = kernel
        self.name = name
        self.split = read_split(kernel)
        self.tiling = read_tiling(kernel)
        self.inner = [*kernel.body.block.args, *outputs]
        self.outer = [*kernel.inputs, *kernel.results]
        self.block = Block(arg_types=[IDX] * len(self.inner))
        for arg, value in zip(self.block.args, self.outer):
            arg.name_hint = value.name_hint
        self.b = Builder(InsertPoint.at_end(self.block))

    def cols(self, value: SSAValue) -> int:
        """Padded columns of a stored tensor (whole sticks)."""
        return layout_of(self.outer[self.inner.index(value)]).padded_shape[-1]

    def stored_view(self, stored: Stored) -> SSAValue:
        """The 2-D view of a stored tensor in which its row runs are boxes."""
        pointer = self.block.args[self.inner.index(stored.value)]
        element = stored.value.type.element_type  # type: ignore[attr-defined]
        return self.view(pointer, stored.map.view_shape(), element)

    def finish(self, flops: int, offchip: int) -> func.FuncOp:
        self.b.insert(func.ReturnOp())
        fn = func.FuncOp(self.name, ([IDX] * len(self.inner), []), Region(self.block))
        plan.GRID.set(fn, (self.split.gm, self.split.gn))
        plan.SHARE.copy(self.kernel, fn)  # for spyre-schedule-dataflow
        plan.record_decisions(self.kernel, fn, (plan.FUSED, plan.REASON, plan.PARTITION,
                                                plan.TILING, plan.TILE))
        fn.attributes["spyre.cost"] = DictionaryAttr({
            "flops": IntegerAttr(flops, 64), "min_offchip_bytes": IntegerAttr(offchip, 64)})
        return fn


class AttentionBuilder(_StoredBuilder):
    """Builds the KTIR function of one attention kernel."""

    def __init__(self, info: AttentionInfo, name: str):
        super().__init__(info.kernel, info.outputs, name)
        self.info = info

    def build(self) -> func.FuncOp:
        if isinstance(self.info.op, BatchMatmulOp):
            return self._build_batch_matmul(self.info.op)
        info, op = self.info, self.info.op
        x, y = self.b.insert(GetComputeTileIdOp(2)).results
        views = {id(s): self.stored_view(s) for s in (info.query, info.key, info.value, info.out)}
        mask_view = None
        if info.mask is not None:
            stored_rows = math.prod(info.mask.type.get_shape()[:-1])  # type: ignore[attr-defined]
            mask_view = self.view(self.block.args[self.inner.index(info.mask)],
                                  (stored_rows, self.cols(info.mask)),
                                  info.mask.type.element_type)  # type: ignore[attr-defined]
        shape = info.shape()
        heads_core = shape.heads // self.split.gm
        rows_core = shape.q_rows // self.split.gn
        head0 = self.mul(x, self.const(heads_core))
        row0 = self.mul(y, self.const(rows_core))
        lead = info.q_lead
        d0, d1 = AffineExpr.dimension(0), AffineExpr.dimension(1)
        head_exprs = head_indices(lead, d0)
        value_cols = self.tiling.tn
        in_type = op.query.type.element_type  # type: ignore[attr-defined]

        def origin(stored: Stored, run: AffineExpr) -> tuple[AffineExpr, AffineExpr]:
            return stored.map.origin([*head_exprs, run])

        def head_body(i: SSAValue) -> None:
            head = self.add(head0, i)
            k = self.load_at(views[id(info.key)], [head], origin(info.key, const(0)),
                             (shape.kv_rows, shape.head_dim), in_type)
            v = self.load_at(views[id(info.value)], [head], origin(info.value, const(0)),
                             (shape.kv_rows, value_cols), in_type)

            def query_body(j: SSAValue) -> None:
                q0 = self.add(row0, j)
                tq = self.tiling.tm
                q = self.load_at(views[id(info.query)], [head, q0], origin(info.query, d1),
                                 (tq, shape.head_dim), in_type)
                scores = self.matmul_generic(q, k, self.fill([tq, shape.kv_rows], 0.0),
                                             transposed=True)
                scores = self._scale(scores, op.scale.value.data)
                if shape.causal:
                    scores = self._causal_mask(scores, q0)
                if mask_view is not None:
                    scores = self._add_mask(scores, mask_view, head, q0)
                probs = self._softmax(scores, shape.kv_rows, in_type, shape.zero_unseen)
                out = self.matmul_generic(probs, v, self.fill([tq, value_cols], 0.0))
                element = op.result.type.element_type
                out = self._map(out, "copy", lambda b, a: convert(b, a[0], element), element)
                self.b.insert(StoreOp(out, self.tile_at(
                    views[id(info.out)], [head, q0], origin(info.out, d1), (tq, value_cols))))

            self.loop(rows_core, self.tiling.tm, query_body)

        self.loop(heads_core, 1, head_body)
        fn = self.finish(shape.flops, shape.min_offchip_bytes)
        # a chain per query tile (scores, softmax, P V): spyre-schedule-dataflow orders the
        # program by earliest start, so tiles overlap on the PT and the SFU (note 60)
        fn.attributes["spyre.pt_lookahead"] = UnitAttr()
        return fn

    def _build_batch_matmul(self, op: BatchMatmulOp) -> func.FuncOp:
        """Per batch the rhs once ([N, K] as stored for `transpose_rhs`, else [K, N padded]),
        per row tile lhs [tm, K], one `matmul_nt` / `matmul` generic, the conversion to the
        output type and the store."""
        info = self.info
        x, y = self.b.insert(GetComputeTileIdOp(2)).results
        views = {id(s): self.stored_view(s) for s in (info.query, info.key, info.out)}
        shape = info.shape()
        heads_core = shape.heads // self.split.gm
        rows_core = shape.q_rows // self.split.gn
        head0 = self.mul(x, self.const(heads_core))
        row0 = self.mul(y, self.const(rows_core))
        d1 = AffineExpr.dimension(1)
        head_exprs = head_indices(info.q_lead, AffineExpr.dimension(0))
        nt = op.transpose_rhs is not None
        rhs_cols = shape.head_dim if nt else self.tiling.tn
        out_cols = shape.kv_rows if nt else self.tiling.tn
        in_type = op.lhs.type.element_type  # type: ignore[attr-defined]
        element = op.result.type.element_type

        def origin(stored: Stored, run: AffineExpr) -> tuple[AffineExpr, AffineExpr]:
            return stored.map.origin([*head_exprs, run])

        def head_body(i: SSAValue) -> None:
            head = self.add(head0, i)
            rhs = self.load_at(views[id(info.key)], [head], origin(info.key, const(0)),
                               (shape.kv_rows, rhs_cols), in_type)

            def row_body(j: SSAValue) -> None:
                r0 = self.add(row0, j)
                tm = self.tiling.tm
                lhs = self.load_at(views[id(info.query)], [head, r0], origin(info.query, d1),
                                   (tm, shape.head_dim), in_type)
                out = self.matmul_generic(lhs, rhs, self.fill([tm, out_cols], 0.0),
                                          transposed=nt)
                out = self._map(out, "copy", lambda b, a: convert(b, a[0], element), element)
                self.b.insert(StoreOp(out, self.tile_at(
                    views[id(info.out)], [head, r0], origin(info.out, d1), (tm, out_cols))))

            self.loop(rows_core, self.tiling.tm, row_body)

        self.loop(heads_core, 1, head_body)
        return self.finish(shape.flops, shape.min_offchip_bytes)

    def _map(self, value: SSAValue, fn: str,
             body: Callable[[Builder, Sequence[SSAValue]], SSAValue],
             element: Attribute = f32) -> SSAValue:
        """An elementwise generic of one tile."""
        shape = value.type.get_shape()  # type: ignore[attr-defined]
        return self.elementwise(fn, [value], [AffineMap.identity(2)],
                                TensorType(element, list(shape)), body)

    def _scale(self, scores: SSAValue, scale: float, fn: str = "mul") -> SSAValue:
        """scores `fn` scale, elementwise: an sfu.scalar with `scale` as its immediate."""
        out = self._map(scores, fn, lambda b, a: BINARY_BODIES[fn](b, a[0], fconst(b, scale)))
        out.owner.attributes["spyre.scalar"] = FloatAttr(scale, f32)  # type: ignore[union-attr]
        return out

    def _causal_mask(self, scores: SSAValue, q0: SSAValue) -> SSAValue:
        """scores[r, c] = MASK_VALUE where key c lies after query q0 + r."""

        def body(b: Builder, args: Sequence[SSAValue]) -> SSAValue:
            x, first = args
            row = b.insert(arith.AddiOp(b.insert(linalg.IndexOp(0)).result, first)).result
            after = b.insert(arith.CmpiOp(b.insert(linalg.IndexOp(1)).result, row, "ugt")).result
            return b.insert(arith.SelectOp(after, fconst(b, MASK_VALUE), x)).result

        d0, d1 = AffineExpr.dimension(0), AffineExpr.dimension(1)
        maps = [AffineMap(2, 0, (d0, d1)), AffineMap(2, 0, ())]
        out = self.elementwise("causal_mask", [scores, q0], maps, scores.type, body)  # type: ignore[arg-type]
        out.owner.attributes["spyre.scalar"] = FloatAttr(MASK_VALUE, f32)  # type: ignore[union-attr]
        return out

    def _add_mask(self, scores: SSAValue, view: SSAValue, head: SSAValue,
                  q0: SSAValue) -> SSAValue:
        """scores += the mask's block of this head and query tile: the stored row of (head,
        query row) is affine in both (`mask_origin`); a mask broadcast over the query rows
        gives one row, added to every row of the tile (sfu.binary with a zero pitch)."""
        rows, cols = scores.type.get_shape()  # type: ignore[attr-defined]
        assert self.info.mask is not None
        shape = list(self.info.mask.type.get_shape())  # type: ignore[attr-defined]
        one_row = mask_rows(shape) == 1
        element = view.type.element_type  # type: ignore[attr-defined]
        origin = (mask_origin(shape, self.info.q_lead), const(0))
        mask = self.load_at(view, [head, q0], origin, (1 if one_row else rows, cols), element)
        d1 = AffineExpr.dimension(1)
        read = AffineMap(2, 0, (const(0), d1)) if one_row else AffineMap.identity(2)
        return self.elementwise(
            "add", [scores, mask], [AffineMap.identity(2), read], scores.type,  # type: ignore[arg-type]
            lambda b, a: BINARY_BODIES["add"](b, a[0], convert(b, a[1], f32)))

    def _softmax(self, scores: SSAValue, valid: int, element: Attribute,
                 zero_unseen: bool = False) -> SSAValue:
        """P = exp(s - max) / sum, over the first `valid` columns, rounded to `element`.
        `zero_unseen`: a row of -inf gets P = 0 (its max becomes -FLT_MAX, so exp gives 0
        throughout, and the sum 2^-100 instead of 0); a row holding NaN or +inf stays NaN.
        Every other row has a finite max, an exp of exactly 1 at it, so a sum >= 1, to which
        2^-100 (far below half an f32 ulp of 1) adds nothing: those rows are unchanged."""
        d0, d1 = AffineExpr.dimension(0), AffineExpr.dimension(1)
        full, col = AffineMap(2, 0, (d0, d1)), AffineMap(2, 0, (d0, const(0)))
        top = self.reduce_generic("max", scores, valid)
        if zero_unseen:
            top = self._scale(top, -F32_MAX, "maximum")
        shifted = self.elementwise("sub", [scores, top], [full, col], scores.type,  # type: ignore[arg-type]
                                   lambda b, a: BINARY_BODIES["sub"](b, a[0], a[1]))
        e = self._map(shifted, "exp", lambda b, a: UNARY_BODIES["exp"](b, a[0]))
        total = self.reduce_generic("sum", e, valid)
        if zero_unseen:
            total = self._scale(total, 2.0 ** -100, "add")
        shape = scores.type.get_shape()  # type: ignore[attr-defined]
        return self.elementwise(
            "div", [e, total], [full, col], TensorType(element, list(shape)),
            lambda b, a: convert(b, BINARY_BODIES["div"](b, a[0], a[1]), element))


class MoveBuilder(_StoredBuilder):
    """Builds the KTIR function of one row-move kernel: strided loads, contiguous stores."""

    def __init__(self, info: MoveInfo, name: str):
        super().__init__(info.kernel, info.outputs, name)
        self.info = info

    def build(self) -> func.FuncOp:
        info = self.info
        shape = info.shape()
        x, y = self.b.insert(GetComputeTileIdOp(2)).results
        source = self.stored_view(info.source)
        cols = self.cols(info.out)
        out_view = self.view(self.block.args[self.inner.index(info.out)], (shape.rows, cols),
                             info.out.type.element_type)  # type: ignore[attr-defined]
        runs_core, rows_core = shape.outer // self.split.gm, shape.run // self.split.gn
        run0 = self.mul(x, self.const(runs_core))
        row0 = self.mul(y, self.const(rows_core))
        lead = lead_shape(info.out) or (1,)
        d0, d1 = AffineExpr.dimension(0), AffineExpr.dimension(1)
        src_origin = info.source.map.origin([*head_indices(lead, d0), d1])
        element = info.out.type.element_type  # type: ignore[attr-defined]
        tm = self.tiling.tm

        def store(rows: SSAValue, run: SSAValue, row: SSAValue) -> None:
            self.b.insert(StoreOp(rows, self.tile_at(
                out_view, [run, row], (mul(d0, shape.run) + d1, const(0)), (tm, cols))))

        if shape.shared_runs:
            # every run reads the same stored rows: load a tile once, store it to each run
            def shared_body(j: SSAValue) -> None:
                row = self.add(row0, j)
                rows = self.load_at(source, [run0, row], src_origin, (tm, cols), element)
                self.loop(runs_core, 1, lambda i: store(rows, self.add(run0, i), row))

            self.loop(rows_core, tm, shared_body)
            return self.finish(shape.flops, shape.min_offchip_bytes)

        def run_body(i: SSAValue) -> None:
            run = self.add(run0, i)

            def rows_body(j: SSAValue) -> None:
                row = self.add(row0, j)
                store(self.load_at(source, [run, row], src_origin, (tm, cols), element), run, row)

            self.loop(rows_core, tm, rows_body)

        self.loop(runs_core, 1, run_body)
        return self.finish(shape.flops, shape.min_offchip_bytes)
