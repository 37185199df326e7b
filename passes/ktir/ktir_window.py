"""Window-row kernels: the KTIR of `spyre.window_rows` (im2col by DMA).

A window kernel is DMA only. Its input is a channels-last image [N, H, W, C] stored as
N*H*W rows of C (padded to whole sticks); its output has one row per output pixel and one
column block per tap. For a tap (kh, kw) the input row of pixel (n, ho, wo) is

    n*H*W + (ho*sh + kh*dh - ph)*W + (wo*sw + kw*dw - pw)

which, for a fixed (n, ho), is a run of stored rows `sw` apart: one strided DMA into the
tap's block. The pixels whose input row lies outside the image (the padding) get rows of
the kernel's `pad` operand instead: a constant loaded into LX once and stored wherever the
padding falls. Which output rows are padding is static per tap, so the kernel is

    per tap:  for n, ho with the input row inside:  load run, store run      (interior)
                                                      store pad [wo_lo rows]   (left edge)
                                                      store pad [Wo - wo_hi]   (right edge)
              for n, ho above or below the image:     store pad [Wo rows]      (top, bottom)

A run of rows `sw` apart is a box of the view [N*H*W / sw, sw * Cp] (as in
`row_maps.RowMap.view_shape`); when N*H*W, H*W or sh*W is not a multiple of sw, the run is
moved a row at a time. Cores split the images (grid [gm, 1], gm | N).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.dialects import func
from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, MemRefType
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.ir.affine import AffineExpr
from xdsl.rewriter import InsertPoint

from spyrec.dialects import spyre_plan as plan
from spyrec.dialects.ktdp import (
    ConstructMemoryViewOp,
    GetComputeTileIdOp,
    MemorySpaceAttr,
    StoreOp,
)
from spyrec.dialects.spyre import WindowRowsOp
from spyrec.passes.graph.spyre_stickify import layout_of
from spyrec.passes.ktir.ktir_builder import IDX, KtirBuilder, box_set
from spyrec.passes.planning.kernel_analysis import WindowInfo, itemsize, read_split
from spyrec.target.layout import stick_padded


@dataclass(frozen=True)
class _TapPlan:
    """Static bounds of one tap: output rows [ho_lo, ho_hi) and columns [wo_lo, wo_hi)
    read inside the image."""

    index: int
    kh: int
    kw: int
    ho_lo: int
    ho_hi: int
    wo_lo: int
    wo_hi: int


def _valid(out: int, size: int, offset: int, stride: int) -> tuple[int, int]:
    """[lo, hi) of output positions o with 0 <= o*stride + offset < size."""
    lo = max(0, -(offset // stride))
    hi = min(out, (size - 1 - offset) // stride + 1)
    return lo, max(lo, hi)


def tap_plans(op: WindowRowsOp) -> list[_TapPlan]:
    _, h, w, _ = op.input.type.get_shape()  # type: ignore[attr-defined]
    ho, wo = op.out_hw()
    sh, sw = op.pair("stride")
    ph, pw = op.pair("padding")
    dh, dw = op.pair("dilation")
    plans = []
    for t, (kh, kw) in enumerate(op.tap_list):
        ho_lo, ho_hi = _valid(ho, h, kh * dh - ph, sh)
        wo_lo, wo_hi = _valid(wo, w, kw * dw - pw, sw)
        plans.append(_TapPlan(t, kh, kw, ho_lo, ho_hi, wo_lo, wo_hi))
    return plans


class WindowBuilder(KtirBuilder):
    """Builds the KTIR function of one window kernel."""

    def __init__(self, info: WindowInfo, name: str):
        super().__init__()
        self.info = info
        self.name = name
        kernel = info.kernel
        self.inner = [*kernel.body.block.args, *info.outputs]
        self.outer = [*kernel.inputs, *kernel.results]
        self.block = Block(arg_types=[IDX] * len(self.inner))
        for arg, value in zip(self.block.args, self.outer):
            arg.name_hint = value.name_hint
        self.b = Builder(InsertPoint.at_end(self.block))

    def _pointer(self, value: SSAValue) -> SSAValue:
        return self.block.args[self.inner.index(value)]

    def _cols(self, value: SSAValue) -> int:
        return layout_of(self.outer[self.inner.index(value)]).padded_shape[-1]

    def build(self) -> func.FuncOp:
        gm = read_split(self.info.kernel).gm
        build = self._build_rows if self.info.by_rows else self._build_images
        return self._finish(build(gm), gm)

    def _build_images(self, gm: int) -> int:
        """Windows that may leave the image: core x handles images [x * Nc, (x + 1) * Nc),
        per tap the border rows, the left and right edges and the interior runs (see the
        module docstring); returns the input bytes."""
        op = self.info.op
        n, h, w, _ = op.input.type.get_shape()  # type: ignore[attr-defined]
        ho, wo = op.out_hw()
        sh, sw = op.pair("stride")
        ph, pw = op.pair("padding")
        dh, dw = op.pair("dilation")
        element = op.input.type.element_type  # type: ignore[attr-defined]
        block, cp = op.block_cols(), self._cols(op.input)
        per_core = n // gm
        x, _ = self.b.insert(GetComputeTileIdOp(2)).results
        image0 = self.mul(x, self.const(per_core))
        rows_in = n * h * w
        sigma = sw if sw > 1 and rows_in % sw == 0 and (h * w) % sw == 0 \
            and (sh * w) % sw == 0 else 1
        source = self.view(self._pointer(op.input), (rows_in // sigma, sigma * cp), element)
        out_view = self.view(self._pointer(op.result), (n * ho * wo, self._cols(op.result)),
                             element)
        pad_view = self.view(self._pointer(op.pad), (max(wo, 1), self._cols(op.pad)), element)
        size = itemsize(op.input)
        stick_bytes = stick_padded(block * size)
        plans = tap_plans(op)
        # the pad rows never change: each width of padding is loaded once, before the loops
        pads = {count: self.load(pad_view, self.const(0), self.const(0), (count, block), element)
                for count in sorted(_pad_widths(plans, ho, wo))}
        d0, d1 = AffineExpr.dimension(0), AffineExpr.dimension(1)
        for tap in plans:
            col = tap.index * block
            inside = tap.ho_hi - tap.ho_lo
            # rows of the image above and below: whole output rows of padding
            for lo, hi in ((0, tap.ho_lo), (tap.ho_hi, ho)):
                if hi > lo:
                    self._store_rows(out_view, image0, per_core, lo, hi, 0, wo, col, block,
                                     pads, ho, wo)
            if not inside:
                continue
            for lo, hi in ((0, tap.wo_lo), (tap.wo_hi, wo)):
                if hi > lo:
                    self._store_rows(out_view, image0, per_core, tap.ho_lo, tap.ho_hi, lo, hi,
                                     col, block, pads, ho, wo)
            count = tap.wo_hi - tap.wo_lo
            if count <= 0:
                continue
            # flat input row of (image i, output row ho_lo + j, first valid column)
            start = ((tap.ho_lo * sh + tap.kh * dh - ph) * w
                     + tap.wo_lo * sw + tap.kw * dw - pw)

            def image_body(i: SSAValue, tap: _TapPlan = tap, start: int = start,
                           count: int = count, col: int = col, inside: int = inside) -> None:
                image = self.add(image0, i)

                def row_body(j: SSAValue) -> None:
                    dst = (d0 * (ho * wo) + (d1 + tap.ho_lo) * wo + tap.wo_lo, _c(col))
                    if sigma == sw:
                        src = (d0 * (h * w // sigma) + d1 * (sh * w // sigma) + start // sigma,
                               _c((start % sigma) * cp))
                        rows = self.load_at(source, [image, j], src, (count, block), element)
                        self.b.insert(StoreOp(rows, self.tile_at(out_view, [image, j], dst,
                                                                 (count, block))))
                        return

                    def pixel_body(k: SSAValue) -> None:
                        d2 = AffineExpr.dimension(2)
                        src = (d0 * (h * w) + d1 * (sh * w) + d2 * sw + start, _c(0))
                        row = self.load_at(source, [image, j, k], src, (1, block), element)
                        self.b.insert(StoreOp(row, self.tile_at(
                            out_view, [image, j, k], (dst[0] + d2, _c(col)), (1, block))))

                    self.loop(count, 1, pixel_body)

                self.loop(inside, 1, row_body)

            self.loop(per_core, 1, image_body)
        return rows_in * stick_bytes

    def _build_rows(self, gm: int) -> int:
        """Windows inside the image: core x gathers output rows [x * R, (x + 1) * R) of
        all images (flat over n, ho) for every tap; returns the input bytes."""
        op = self.info.op
        n, h, w, _ = op.input.type.get_shape()  # type: ignore[attr-defined]
        ho, wo = op.out_hw()
        sh, sw = op.pair("stride")
        dh, dw = op.pair("dilation")
        element = op.input.type.element_type  # type: ignore[attr-defined]
        block, cp = op.block_cols(), self._cols(op.input)
        rows_in = n * h * w
        per_core = n * ho // gm
        x, _ = self.b.insert(GetComputeTileIdOp(2)).results
        row0 = self.mul(x, self.const(per_core))
        sigma = sw if sw > 1 and rows_in % sw == 0 and (h * w) % sw == 0 \
            and (sh * w) % sw == 0 else 1
        out_view = self.view(self._pointer(op.result), (n * ho * wo, self._cols(op.result)),
                             element)
        views: dict[int, SSAValue] = {}  # by the rows a load spans: the views it reads

        def source(span: int) -> SSAValue:
            if span not in views:
                views[span] = (self.view(self._pointer(op.input), (rows_in // sigma,
                                                                   sigma * cp), element)
                               if span == 1 else
                               self._overlap_view(op.input, rows_in - span + 1, span * cp, cp,
                                                  element))
            return views[span]

        d0, d1 = AffineExpr.dimension(0), AffineExpr.dimension(1)
        image, row = d0 // ho, d0 % ho
        taps = op.tap_list
        t = 0
        while t < len(taps):
            kh, kw = taps[t]
            span = _tap_run(taps, t) if sw == 1 and dw == 1 and block == cp else 1
            if span > 1:
                # taps (kh, kw) .. (kh, kw + span - 1) of a pixel are `span` consecutive
                # input rows, and their blocks are adjacent output columns: one DMA each
                # way moves them, reading rows `span` sticks long one stick apart (a view
                # whose rows overlap)
                wide = source(span)
                start = kh * dh * w + kw

                def run_body(r: SSAValue, start: int = start, col: int = t * block,
                             span: int = span, wide: SSAValue = wide) -> None:
                    flat = self.add(row0, r)
                    src = (image * (h * w) + row * (sh * w) + start, _c(0))
                    rows = self.load_at(wide, [flat], src, (wo, span * block), element)
                    self.b.insert(StoreOp(rows, self.tile_at(
                        out_view, [flat], (d0 * wo, _c(col)), (wo, span * block))))

                self.loop(per_core, 1, run_body)
                t += span
                continue
            start = kh * dh * w + kw * dw
            col = t * block
            t += 1
            rows_view = source(1)  # built here, outside the loops that read it

            def row_body(r: SSAValue, start: int = start, col: int = col,
                         rows_view: SSAValue = rows_view) -> None:
                flat = self.add(row0, r)
                dst = (d0 * wo, _c(col))
                if sigma == sw:
                    src = (image * (h * w // sigma) + row * (sh * w // sigma) + start // sigma,
                           _c((start % sigma) * cp))
                    rows = self.load_at(rows_view, [flat], src, (wo, block), element)
                    self.b.insert(StoreOp(rows, self.tile_at(out_view, [flat], dst,
                                                             (wo, block))))
                    return

                def pixel_body(k: SSAValue) -> None:
                    src = (image * (h * w) + row * (sh * w) + d1 * sw + start, _c(0))
                    one = self.load_at(rows_view, [flat, k], src, (1, block), element)
                    self.b.insert(StoreOp(one, self.tile_at(out_view, [flat, k],
                                                            (dst[0] + d1, _c(col)), (1, block))))

                self.loop(wo, 1, pixel_body)

            self.loop(per_core, 1, row_body)
        # the least input a gather reads: every input row once, or fewer if it skips some
        return min(rows_in, n * ho * wo * len(op.tap_list)) \
            * stick_padded(block * itemsize(op.input))

    def _overlap_view(self, value: SSAValue, rows: int, cols: int, pitch: int,
                      element: Attribute) -> SSAValue:
        """A [rows, cols] view of `value` whose rows start `pitch` elements apart."""
        shape = [rows, cols]
        return self.b.insert(ConstructMemoryViewOp(
            self._pointer(value), shape, [pitch, 1], MemRefType(element, shape),
            box_set(shape), MemorySpaceAttr.global_())).result

    def _finish(self, in_bytes: int, gm: int) -> func.FuncOp:
        """Close the function; its grid and the decisions and cost it records."""
        op = self.info.op
        n = op.input.type.get_shape()[0]  # type: ignore[attr-defined]
        ho, wo = op.out_hw()
        stick_bytes = stick_padded(op.block_cols() * itemsize(op.input))
        self.b.insert(func.ReturnOp())
        fn = func.FuncOp(self.name, ([IDX] * len(self.inner), []), Region(self.block))
        plan.GRID.set(fn, (gm, 1))
        plan.record_decisions(self.info.kernel, fn, (plan.FUSED, plan.REASON, plan.PARTITION,
                                                     plan.TILING, plan.TILE))
        out_bytes = n * ho * wo * len(op.tap_list) * stick_bytes
        fn.attributes["spyre.cost"] = DictionaryAttr({
            "flops": IntegerAttr(0, 64),
            "min_offchip_bytes": IntegerAttr(in_bytes + out_bytes, 64)})
        return fn

    def _store_rows(self, out_view: SSAValue, image0: SSAValue, per_core: int, ho_lo: int,
                    ho_hi: int, wo_lo: int, wo_hi: int, col: int, block: int,
                    pads: dict[int, SSAValue], ho: int, wo: int) -> None:
        """Store pad rows to output pixels [ho_lo, ho_hi) x [wo_lo, wo_hi) of every image of
        the core, in the tap's column block."""
        tile = pads[wo_hi - wo_lo]
        d0, d1 = AffineExpr.dimension(0), AffineExpr.dimension(1)

        def image_body(i: SSAValue) -> None:
            image = self.add(image0, i)

            def row_body(j: SSAValue) -> None:
                dst = (d0 * (ho * wo) + (d1 + ho_lo) * wo + wo_lo, _c(col))
                self.b.insert(StoreOp(tile, self.tile_at(out_view, [image, j], dst,
                                                         (wo_hi - wo_lo, block))))

            self.loop(ho_hi - ho_lo, 1, row_body)

        self.loop(per_core, 1, image_body)


def _tap_run(taps: list[tuple[int, int]], t: int) -> int:
    """How many taps from `t` on share its kernel row with consecutive columns."""
    kh, kw = taps[t]
    span = 1
    while t + span < len(taps) and taps[t + span] == (kh, kw + span):
        span += 1
    return span


def _c(value: int) -> AffineExpr:
    return AffineExpr.constant(value)


def _pad_widths(plans: list[_TapPlan], ho: int, wo: int) -> set[int]:
    """Row counts of the pad stores the taps need (whole rows, left and right edges)."""
    widths = set()
    for p in plans:
        if p.ho_lo > 0 or p.ho_hi < ho:
            widths.add(wo)
        if p.ho_hi > p.ho_lo:
            widths.update(c for c in (p.wo_lo, wo - p.wo_hi) if c > 0)
    return widths

