"""spyre-legalize-ktir: engine selection for hand-written KTIR.

Expects: KTIR kernels (`func.func` with a `grid`) as people write them: tensor-level
`arith`/`math` ops, `linalg.generic` with bodies of several scalar ops and broadcasting
indexing maps, `linalg.reduce` (region or short form), `linalg.matmul`, `linalg.broadcast`,
`tensor.splat` / `linalg.fill` constants, `arith.extf` / `arith.truncf` casts, `scf.for`
with `iter_args`. Guarantees: every tensor computation is a `linalg.generic` tagged with
the Spyre engine operation it is (`spyre.fn`: an SFU unary, binary, scalar or row
reduction, a PT matmul) — the form convert-spyre-to-ktir produces and
spyre-place-memory / spyre-schedule-dataflow take — with the same meaning, so the KTIR
interpreter gives the same results before and after. Decisions:

- a generic body of n scalar ops becomes n single-op generics, one SFU instruction each;
  body constants and splat tensors become the immediate of an `sfu.scalar`;
- a scalar op on elements extracted from one-element tensors (a row statistic's `/ N`,
  `+ eps`, `rsqrt`) is that op on the tensors, its result extracted again, so a splat of it
  broadcasts a computed column along the row (design note 89);
- a broadcasting indexing map becomes the SFU's row broadcast (a map onto the last dim)
  or per-row broadcast (a map dropping the last dim); `linalg.broadcast` is folded into its
  users' maps;
- `spyre.tile = [rows, cols]` records the 2-D LX shape of every result the SFU sees as
  2-D: a row reduction's rank-1 result is a column (one value per stick);
- a reduction starts from a fresh fill of its identity (the SFU reduce writes, it does not
  accumulate) and is combined with a non-identity init by one more SFU op; a combiner
  written `arith.cmpf` ogt / oge / olt / ole + `arith.select` of the element is a max /
  min that skips NaN elements (`ktir_combiners.selected_max`, design note 94);
- a broadcast stored as it is (a splat of a row statistic, a `linalg.broadcast` of a row,
  a column or a rank-0 `tensor.collapse_shape` of one element) is written whole into a
  tile of its own first, an SFU copy through the broadcast map (`materialise`, note 94);
- `linalg.add` / `sub` / `mul` / `div` of two inputs is the arith op;
- a `linalg.fill` shared by several matmuls is cloned per matmul, because each matmul
  accumulates in place in its init's LX slot;
- `spyre.cost` gets the kernel's FLOPs and least off-chip bytes for the roofline;
- a 2-D `linalg.transpose` read as a matmul's B is no instruction: the matmul becomes a
  `matmul_nt` of its source as stored (any other use is refused); a cast of it is the
  transpose of the cast (the cast runs on the source as stored, note 108);
- a `tensor.collapse_shape` / `tensor.expand_shape` that only merges or splits the leading
  dims of a tile (the last dim kept whole, with size-1 dims at most) is no instruction: LX
  holds the same rows either way; the op keeps its place with the tile's `spyre.tile`, and
  spyre-schedule-dataflow reads it where its source is (note 108);
- an `arith.bitcast` of an i32 constant to f32 (Triton's -inf) is the float it spells;
- the views a hand-written kernel builds on its arguments get the strides of the device's
  padded layout, rows in whole 128-byte sticks (`_padded_rows`; sizes unchanged);
- an inter-tile combiner written `linalg.add` of its two arguments becomes `arith.addf`;
- an inter-tile sum, a `ktdp.inter_tile_produce` whose region only yields one f32 or f16
  partial computed before it and a `ktdp.inter_tile_reduce` whose combiner is one
  `arith.addf` and whose identity is zero, keeps its ops and types:
  spyre-schedule-dataflow makes the pair one `ring.reduce` per core, in place in the
  partial's LX slot, an all-reduce when the consumers are the producers, else a reduce to
  the one consumer (design note 59). The reduce gets the partial's `spyre.tile` (a
  row reduction's partial stays a column for the ops that read the sum), its identity
  becomes a zero fill of that tile before the produce, and the reduce moves right after
  the produce, the pair together as convert-spyre-to-ktir builds it. The ops of both
  regions are not legalized; `scf.if` bodies are, like loop bodies (a reduce-to-one's
  result is only defined on its consumer). A partial read again (by another op, or by the
  next iteration of a loop it was computed before) is reduced as a copy (note 94).

- a generic whose body reads `linalg.index` and selects its input (or a value computed from
  it, made a generic of its own first) or a float constant by a condition of integer ops on
  the row, the column and index values is an `index_mask`: its outside index values become
  operands through () -> () and spyre-schedule-dataflow evaluates the condition per core
  into sfu.mask runs (`index_mask.py`, design note 109);
- a float constant a loop carries (`tensor.splat`, dense splat, `linalg.fill`) is a fill in
  LX before the loop, a rank-1 row statistic (`column_values`) laid out as a column.

Anything else on tensors (other index-dependent bodies, selects, slices, other reshapes, other
inter-tile communication: `inter_tile_consume`, other combiners, partial reductions by
`producer_dependency_per_consumer`; indirect tiles, distributed views, runtime arguments)
is refused with an error that names the op.

    %s = arith.addf %a, %b : tensor<128xf32>                                   // before
    %s = linalg.generic {...} ins(%a, %b ...) outs(%e ...) {spyre.fn = "add"}  // after
"""

from __future__ import annotations

import math as pymath
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import ml_dtypes
import numpy as np
from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith, func, math, scf, tensor
from xdsl.dialects.builtin import (
    AffineMapAttr,
    AnyFloat,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    Float32Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
    bf16,
    f16,
    f32,
    i64,
)
from xdsl.dialects.linalg import ops as linalg
from xdsl.dialects.linalg.attrs import IteratorTypeAttr
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineConstantExpr, AffineDimExpr, AffineExpr, AffineMap
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint

from spyrec.diagnostics import CompileError
from spyrec.dialects.ktdp import (
    ConstructAccessTileOp,
    ConstructDistributedMemoryViewOp,
    ConstructMemoryViewOp,
    LoadOp,
    StoreOp,
)
from spyrec.dialects.ktdp_affine import is_box
from spyrec.dialects.ktdp_intertile import InterTileProduceOp, InterTileReduceOp
from spyrec.dialects.ktdp_values import set_bounds
from spyrec.dialects.spyre_plan import is_kernel, ktir_grid
from spyrec.dialects.std_ext_arith import SelectOp
from spyrec.passes.graph.spyre_stickify import DEVICE_DTYPE, DEVICE_ITEMSIZE
from spyrec.passes.ktir.ktir_bounds import check_tile_bounds
from spyrec.passes.ktir.ktir_builder import BINARY_BODIES, convert
from spyrec.passes.ktir.ktir_combiners import SELECTED, named_sum_as_addf, selected_max
from spyrec.passes.ktir.ktir_indirect import indirect_view_bytes
from spyrec.passes.ktir.ktir_tiles import default_tile_dims, tile_dims, transposed_load
from spyrec.passes.ktir.ktir_tiles import tensor_shape as _shape
from spyrec.target.isa import bits_f32
from spyrec.target.layout import STICK_BYTES

BINARY = {"arith.addf": "add", "arith.subf": "sub", "arith.mulf": "mul", "arith.divf": "div",
          "arith.maximumf": "maximum", "arith.minimumf": "minimum",
          "spyre.keep": "keep"}  # the last one only built here, by `number_op`
# IEEE maxNum / minNum: a NaN operand is dropped (the SFU's MAX / MIN propagate it)
NUMBER = {"arith.maxnumf": "maximum", "arith.minnumf": "minimum"}
# elementwise named ops: the arith op on their two inputs (their init is only a shape)
NAMED = {"linalg.add": "arith.addf", "linalg.sub": "arith.subf", "linalg.mul": "arith.mulf",
         "linalg.div": "arith.divf"}
FLOAT32_MAX = float(np.finfo(np.float32).max)
FINITE_MAX = {"f16": float(np.finfo(np.float16).max),
              "bf16": float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)}
UNARY = {"math.exp": "exp", "math.rsqrt": "rsqrt", "math.sqrt": "sqrt", "math.tanh": "tanh",
         "math.absf": "abs", "arith.negf": "neg", "math.log": "log", "math.erf": "erf"}
CASTS = ("arith.extf", "arith.truncf")
REDUCE = {"add": ("sum", 0.0), "maximum": ("max", float("-inf")),
          "minimum": ("min", float("inf"))}
COMMUTATIVE = {"add", "mul", "maximum", "minimum"}
# the integer ops of a mask's condition (`index_mask`), evaluated per core by the walk
INDEX_OPS = frozenset({
    "linalg.index", "arith.constant", "arith.addi", "arith.subi", "arith.muli",
    "arith.divui", "arith.divsi", "arith.floordivsi", "arith.ceildivsi", "arith.remui",
    "arith.remsi", "arith.minui", "arith.minsi", "arith.maxui", "arith.maxsi", "arith.andi",
    "arith.ori", "arith.xori", "arith.cmpi", "arith.index_cast"})
REFUSED = ("ktdp.inter_tile_consume",
           "ktdp.construct_distributed_memory_view", "ktdp.runtime_arg_extract")
NOT_TAKEN = ("the compiler does not take this op yet; run the kernel in the KTIR interpreter "
             "(spyrec run kernel.mlir --function ...)")
SELECTS = (SelectOp, arith.SelectOp)  # spyrec's tensor-aware select, and xDSL's
RING_PARTIALS = (f32, f16)  # the element types ring.reduce sums (fp16 as DL16 on the device)

_BINARY_OPS: dict[str, Callable[[SSAValue, SSAValue], Operation]] = {
    "add": arith.AddfOp, "sub": arith.SubfOp, "mul": arith.MulfOp, "div": arith.DivfOp,
    "maximum": arith.MaximumfOp, "minimum": arith.MinimumfOp,
}
_UNARY_OPS: dict[str, Callable[[SSAValue], Operation]] = {
    "exp": math.ExpOp, "rsqrt": math.RsqrtOp, "sqrt": math.SqrtOp, "tanh": math.TanhOp,
    "abs": math.AbsFOp, "neg": arith.NegfOp, "log": math.LogOp, "erf": math.ErfOp,
}


@dataclass(frozen=True)
class Arg:
    """A tensor operand over an iteration space: the value and its indexing map."""

    value: SSAValue
    map: AffineMap


Operand = Arg | float  # a tensor, or a scalar (a constant, an immediate on the SFU)


def _splat_float(op: arith.ConstantOp) -> float | None:
    """The one value of a dense tensor constant whose elements are all that float, else None."""
    values = set(op.value.get_values()) if isinstance(op.value, DenseIntOrFPElementsAttr) \
        else set()
    one = values.pop() if len(values) == 1 else None
    return one if isinstance(one, float) else None


def _tensor_type(value: SSAValue) -> TensorType | None:
    return value.type if isinstance(value.type, TensorType) else None


class _Kernel:
    """Rewrites one kernel's tensor computations into tagged single-op generics."""

    def __init__(self, fn: func.FuncOp):
        self.fn = fn
        self.name = fn.sym_name.data
        self.scalars: dict[SSAValue, float] = {}
        self.broadcasts: dict[SSAValue, Arg] = {}  # result -> source with its map
        self.extracted: dict[SSAValue, tensor.ExtractOp] = {}  # scalar -> its extract
        self.transposed: dict[SSAValue, SSAValue] = {}  # 2-D transpose result -> its source

    def error(self, op: Operation, what: str) -> CompileError:
        results = ", ".join(f"%{r.name_hint}" for r in op.results if r.name_hint)
        named = f" ({results})" if results else ""
        return CompileError(f"kernel @{self.name}: {op.name}{named}: {what}")

    # -- walking ----------------------------------------------------------------------
    def run(self) -> None:
        self.loop_inits()
        self.block(self.fn.body.block)
        self.fold_narrowing()
        self.cleanup()

    def loop_inits(self) -> None:
        """A constant (`tensor.splat`, dense splat or `linalg.fill` of a float) a loop carries
        is a fill written into LX before the loop, laid out as the values the loop yields: a
        rank-1 value that is a row statistic (`column_values`) is a column, one value per
        row, so `max(M, rowmax(S))` reads both the same way (Triton's online softmax, note
        109). A zero fill already in LX (a matmul's accumulator) is left as it is."""
        columns = column_values(self.fn)
        for loop in [o for o in self.fn.walk() if isinstance(o, scf.ForOp)]:
            for i, init in enumerate(loop.iter_args):
                owner = init.owner
                if _tensor_type(init) is None or not isinstance(
                        owner, (tensor.SplatOp, arith.ConstantOp, linalg.FillOp)):
                    continue
                if isinstance(owner, tensor.SplatOp | linalg.FillOp):
                    try:
                        value = self.constant(owner.operands[0], owner)
                    except CompileError:
                        continue  # not a float constant: legalized (or refused) where it is
                else:
                    one = _splat_float(owner)
                    if one is None:
                        continue  # refused where the constant is legalized
                    value = one
                shape = _shape(init)
                if isinstance(owner, linalg.FillOp | arith.ConstantOp) and value == 0.0 \
                        and len(shape) >= 2 and not pymath.copysign(1.0, value) < 0:
                    continue
                tile = (shape[0], 1) if len(shape) == 1 and init in columns \
                    else default_tile_dims(shape)
                element = _element(init)
                fill = self.fill(loop, shape, value, tile, element)
                fill.name_hint = init.name_hint
                loop.operands[3 + i] = fill

    def fold_narrowing(self) -> None:
        """A narrowing copy (truncf) of an SFU result nothing else reads becomes that op's
        destination type: the SFU computes in fp32 and rounds once to its destination."""
        for copy in [o for o in self.fn.walk() if isinstance(o, linalg.GenericOp)
                     and _is_fn(o, "copy") and _element(o.results[0]) != f32]:
            producer = copy.inputs[0].owner
            fn = producer.attributes.get("spyre.fn") if isinstance(producer, Operation) else None
            if (not isinstance(producer, linalg.GenericOp) or not isinstance(fn, StringAttr)
                    or fn.data in ("copy", "matmul", "matmul_nt") or fn.data.startswith("reduce")
                    or not copy.inputs[0].has_one_use() or _element(copy.inputs[0]) != f32
                    or copy.indexing_maps.data[0].data != AffineMap.identity(
                        len(_shape(copy.inputs[0])))):
                continue
            element = _element(copy.results[0])
            old = producer.body.block
            block = Block(arg_types=[a.type for a in old.args[:-1]] + [element])
            mapping: dict[SSAValue, SSAValue] = dict(zip(old.args, block.args))
            for inner in old.ops:
                if isinstance(inner, linalg.YieldOp):
                    narrow = arith.TruncFOp(mapping[inner.operands[0]], element)
                    block.add_ops([narrow, linalg.YieldOp(narrow.result)])
                    break
                block.add_op(inner.clone(value_mapper=mapping))
            b = Builder(InsertPoint.before(producer))
            empty = b.insert(tensor.EmptyOp([], copy.results[0].type)).tensor
            new = b.insert(linalg.GenericOp(
                list(producer.inputs), [empty], Region(block), producer.indexing_maps,
                producer.iterator_types, [copy.results[0].type]))
            new.attributes.update({k: v for k, v in producer.attributes.items()
                                   if k not in ("indexing_maps", "iterator_types",
                                                "operandSegmentSizes")})
            new.results[0].name_hint = copy.results[0].name_hint
            copy.results[0].replace_all_uses_with(new.results[0])
            _erase(copy)
            _erase(producer)

    def block(self, block: Block) -> None:
        for op in list(block.ops):
            if isinstance(op, scf.ForOp):
                self.block(op.body.block)
            elif isinstance(op, scf.IfOp):
                if any(_tensor_type(r) is not None for r in op.results):
                    raise self.error(op, "an scf.if yielding tensors has no LX placement; "
                                     "use the value (store it) inside the branch")
                for region in op.regions:
                    for inner in region.blocks:
                        self.block(inner)
            elif "spyre.fn" in op.attributes:
                continue
            elif op.name in CASTS and op.operands[0] in self.transposed:
                self.cast_before_transpose(op)
            elif op.name in BINARY or op.name in UNARY or op.name in CASTS or op.name in NUMBER:
                if _tensor_type(op.results[0]) is not None:
                    self.replace(op, [self.scalar_op(op, op.name, [
                        self.operand(v, op, len(_shape(op.results[0])))
                        for v in op.operands], op.results[0].type, op)])
                elif any(v in self.extracted for v in op.operands):
                    self.element_op(op)
            elif isinstance(op, tensor.ExtractOp):
                self.extracted[op.result] = op
            elif isinstance(op, tensor.SplatOp):
                self.splat(op)
            elif isinstance(op, linalg.FillOp):
                self.scalars[op.results[0]] = self.constant(op.inputs[0], op)
            elif isinstance(op, arith.ConstantOp) and _tensor_type(op.result) is not None:
                self.dense(op)
            elif isinstance(op, linalg.BroadcastOp):
                self.broadcast(op)
            elif isinstance(op, tensor.CollapseShapeOp) and not _shape(op.result):
                self.scalar_tensor(op)
            elif isinstance(op, (tensor.CollapseShapeOp, tensor.ExpandShapeOp)):
                self.regroup_rows(op)
            elif isinstance(op, StoreOp) and op.value in self.broadcasts:
                self.materialise(op)
            elif isinstance(op, linalg.TransposeOp):
                self.transpose(op)
            elif isinstance(op, linalg.GenericOp):
                self.generic(op)
            elif op.name == "linalg.reduce":
                self.reduce(op)
            elif op.name in NAMED:
                self.named(op)
            elif isinstance(op, linalg.MatmulOp):
                self.matmul(op, op.inputs[0], op.inputs[1], op.outputs[0])
            elif isinstance(op, InterTileProduceOp):
                self.produce(op)
            elif isinstance(op, InterTileReduceOp):
                self.inter_tile_reduce(op)
            elif isinstance(op, ConstructDistributedMemoryViewOp) and all(
                    isinstance(p.owner, ConstructMemoryViewOp)
                    and p.owner.memory_space.kind == "global" for p in op.parts):
                continue  # LPDDR tensors addressed as one: a DMA per part (the walk)
            elif op.name.startswith("ktdp.inter_tile") or op.name in REFUSED:
                raise self.error(op, NOT_TAKEN)
            elif any(_tensor_type(r) is not None for r in op.results) and not isinstance(
                    op, (tensor.EmptyOp,)) and not op.name.startswith("ktdp."):
                raise self.error(op, "no Spyre engine operation implements this tensor op yet")

    def cleanup(self) -> None:
        """Erase the constants and broadcasts folded into their users."""
        dead = [op for op in self.fn.walk()
                if isinstance(op, (tensor.SplatOp, linalg.FillOp, linalg.BroadcastOp,
                                   linalg.TransposeOp, tensor.CollapseShapeOp))
                and "spyre.tile" not in op.attributes]
        for op in reversed(dead):
            zero_fill = isinstance(op, linalg.FillOp) and self.scalars.get(op.results[0]) == 0.0
            if zero_fill and op.results[0].uses:  # a zero accumulator carried by a loop: in LX
                continue
            if any(r.uses for r in op.results):
                user = next(iter(op.results[0].uses)).operation
                if isinstance(op, linalg.TransposeOp):
                    raise self.error(op, f"its value is used by {user.name}; the compiler "
                                     "takes a 2-D transpose only as a matmul's B operand (the "
                                     "PT reads B^T as stored: pt.matmul_nt) and inserts no "
                                     "transpose of its own")
                raise self.error(op, f"its value is used by {user.name}, which needs it in LX; "
                                 "constants and broadcasts can only feed elementwise ops, "
                                 "reductions and matmul accumulators")
            _erase(op)
        for op in reversed(list(self.fn.walk())):
            if isinstance(op, linalg.GenericOp) and _is_fn(op, "copy") and not op.results[0].uses:
                _erase(op)  # a widening copy every user now reads through
        for op in reversed(list(self.fn.walk())):
            if isinstance(op, tensor.EmptyOp) and not op.tensor.uses:
                _erase(op)
            elif isinstance(op, arith.BitcastOp) and not op.result.uses:
                _erase(op)  # a float constant spelled as bits, now the SFU's immediate
        for scalar, extract in self.extracted.items():
            if scalar.uses:
                user = next(iter(scalar.uses)).operation
                raise self.error(extract, f"its element is used by {user.name}; the compiler "
                                 "takes an extracted element only as the value of a "
                                 "tensor.splat")
            _erase(extract)

    # -- operands ---------------------------------------------------------------------
    def constant(self, value: SSAValue, op: Operation) -> float:
        owner = value.owner
        if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, FloatAttr):
            return float(owner.value.value.data)
        if isinstance(owner, arith.BitcastOp) and isinstance(value.type, Float32Type) and \
                isinstance(const := owner.input.owner, arith.ConstantOp) and \
                isinstance(const.value, IntegerAttr):
            # Triton spells -inf and NaN as the bits of an i32 constant
            return bits_f32(const.value.value.data)
        raise self.error(op, f"%{value.name_hint} is not a float constant; the SFU takes "
                         "scalar operands as immediates")

    def operand(self, value: SSAValue, op: Operation, rank: int,
                through: AffineMap | None = None) -> Operand:
        """`value` as an operand over a `rank`-d iteration space (`through` its map)."""
        through = through or AffineMap.identity(rank)
        if value in self.scalars:
            return self.scalars[value]
        if value in self.broadcasts:
            source = self.broadcasts[value]
            return Arg(source.value, source.map.compose(through))
        if _tensor_type(value) is None:
            return self.constant(value, op)
        return Arg(value, through)

    def dense(self, op: arith.ConstantOp) -> None:
        """A dense tensor constant of one value is a `linalg.fill` of it (an immediate, or a
        zero accumulator a loop carries in LX); other dense tensors are refused."""
        ttype = op.result.type
        assert isinstance(ttype, TensorType)
        one = _splat_float(op)
        if one is None or not isinstance(ttype.element_type, AnyFloat):
            raise self.error(op, "a dense tensor constant of differing (or integer) elements "
                             "has no SFU immediate; pass it as an argument (load it from "
                             "memory), or use one value (a splat)")
        b = Builder(InsertPoint.before(op))
        scalar = b.insert(arith.ConstantOp(FloatAttr(one, ttype.element_type))).result
        empty = b.insert(tensor.EmptyOp([], ttype)).tensor
        fill = b.insert(linalg.FillOp([scalar], [empty], [ttype]))
        self.replace(op, list(fill.results))
        self.scalars[fill.results[0]] = self.constant(scalar, fill)

    def element_op(self, op: Operation) -> None:
        """A scalar op on extracted elements (and constants) is the same op on the tensors
        they were extracted from, one SFU operation on that one-element tile rounded to the
        op's type as the interpreter rounds the scalar; its result is the element of the
        new tensor, extracted at the same index, so a later splat broadcasts it as it
        would broadcast the source's element. Each tensor must hold one element (a row
        statistic), all of one shape, so the op computes that element and nothing else."""
        sources = [self.extracted[v].tensor for v in op.operands if v in self.extracted]
        shape = _shape(sources[0])
        if any(_shape(t) != shape or pymath.prod(_shape(t)) != 1 for t in sources):
            names = ", ".join(f"%{t.name_hint} ({t.type})" for t in sources)
            raise self.error(op, f"it computes on elements extracted from {names}; the "
                             "compiler computes on the element of a one-element tensor (a "
                             "row statistic), one shape for all operands: compute on the "
                             "tensors before extracting")
        rank = len(shape)
        identity = AffineMap.identity(rank)
        operands: list[Operand] = [
            Arg(self.extracted[v].tensor, identity) if v in self.extracted
            else self.constant(v, op) for v in op.operands]
        computed = self.scalar_op(op, op.name, operands,
                                  TensorType(op.results[0].type, shape), op)
        extract = self.extracted[next(v for v in op.operands if v in self.extracted)]
        element = tensor.ExtractOp(computed, list(extract.indices), op.results[0].type)
        assert op.parent is not None
        op.parent.insert_op_before(element, op)
        self.extracted[element.result] = element
        self.replace(op, [element.result])

    def splat(self, op: tensor.SplatOp) -> None:
        """A splat of a constant is an immediate; a splat of the one element of a rank-r
        tensor extracted (`tensor.extract`, Triton's row statistics) over a rank r + 1
        tensor of one row per element is that tensor broadcast along the row."""
        extract = self.extracted.get(op.input)
        if extract is None:
            self.scalars[op.result] = self.constant(op.input, op)
            return
        source, shape = extract.tensor, _shape(op.result)
        rank = len(shape)
        if any(_index_constant(i) != 0 for i in extract.indices):
            raise self.error(extract, f"it reads %{source.name_hint} ({source.type}) at an "
                             "index that is not the constant 0, its one element")
        if any(n != 1 for n in _shape(source)) or len(_shape(source)) != rank - 1 or any(
                n != 1 for n in shape[:-1]):
            raise self.error(op, f"it broadcasts an element of %{source.name_hint} "
                             f"({source.type}) over {op.result.type}; the compiler takes a "
                             "splat of the one element of a tensor of 1s over one row (a row "
                             "statistic): broadcast other values with linalg.broadcast")
        kept = tuple(AffineExpr.dimension(i) for i in range(rank - 1))
        arg = self.operand(source, op, rank, AffineMap(rank, 0, kept))
        if isinstance(arg, Arg):
            self.broadcasts[op.result] = arg
        else:
            self.scalars[op.result] = arg

    def broadcast(self, op: linalg.BroadcastOp) -> None:
        result = op.results[0]
        rank = len(_shape(result))
        added = set(op.dimensions.get_values())
        kept = tuple(AffineExpr.dimension(i) for i in range(rank) if i not in added)
        source = self.operand(op.operands[0], op, rank, AffineMap(rank, 0, kept))
        if isinstance(source, Arg):
            self.broadcasts[result] = source
        else:
            self.scalars[result] = source

    def regroup_rows(self, op: tensor.CollapseShapeOp | tensor.ExpandShapeOp) -> None:
        """A collapse or expand that only regroups the leading dims (the last dim, with
        size-1 dims at most, is one group on both sides) is no instruction: LX holds a tile
        of rank >= 2 as rows of its last dim, its leading dims merged into rows, so both
        sides are the same rows in the same slot. The result gets that tile (`spyre.tile`)
        and spyre-schedule-dataflow reads it where the source is (design note 108); any
        other reshape is refused."""
        src, dst = _shape(op.src), _shape(op.result)
        groups = [[i.value.data for i in g.data] for g in op.reassociation.data]
        merged = src if isinstance(op, tensor.CollapseShapeOp) else dst  # the finer side
        last = groups[-1] if groups else []
        rows = tile_dims(op.src)
        # a block loaded transposed holds its transpose in LX; merging only unit dims into
        # its rows keeps it that block (the matmul reading it as B reads it as stored)
        flipped = isinstance(op.src.owner, LoadOp) and transposed_load(op.src.owner) and \
            all(n == 1 for n in merged[:-2])
        plain = (pymath.prod(src[:-1]), src[-1])
        if min(len(src), len(dst)) == 1 and max(len(src), len(dst)) == 2:
            # between rank 1 and 2 (a tile of a tensor whose last dim is stored in blocks,
            # spyrec.frontend.ktir_blocks): the same rows when the rank-2 side is the LX
            # tile as it is, a row of a rank-1 source or a column of a reduction's result
            two = dst if len(dst) == 2 else src
            if rows != (two[0], two[1]) or (len(dst) == 1 and rows[0] != 1):
                raise self.error(op, f"it reshapes {op.src.type} ({rows[0]} x {rows[1]} in "
                                 f"LX) to {op.result.type}; between rank 1 and 2 the "
                                 "compiler takes a reshape that keeps the rows in LX: "
                                 "reshape the access tile instead")
            op.attributes["spyre.tile"] = DenseArrayBase.from_list(i64, list(rows))
            return
        if len(src) < 2 or len(dst) < 2 or src[-1] != dst[-1] or not last or \
                any(merged[i] != 1 for i in last[:-1]) or last[-1] != len(merged) - 1 or \
                rows != (plain[::-1] if flipped else plain):
            raise self.error(op, f"it reshapes {op.src.type} to {op.result.type}; the "
                             "compiler takes a reshape that only merges or splits the "
                             "leading dims of a tile (the last dim kept whole): reshape "
                             "the access tile instead")
        op.attributes["spyre.tile"] = DenseArrayBase.from_list(i64, list(rows))

    def scalar_tensor(self, op: tensor.CollapseShapeOp) -> None:
        """A collapse of a one-element tensor to rank 0 (Triton's scalar broadcast source)
        is that element: a broadcast of the source through a map of constants 0."""
        shape = _shape(op.src)
        if pymath.prod(shape) != 1:
            raise self.error(op, f"it collapses %{op.src.name_hint} ({op.src.type}) to rank 0; "
                             "only a tensor of one element has a rank-0 form")
        zeros = AffineMap(0, 0, (AffineExpr.constant(0),) * len(shape))
        source = self.operand(op.src, op, 0, zeros)
        if isinstance(source, Arg):
            self.broadcasts[op.result] = source
        else:
            self.scalars[op.result] = source

    def named(self, op: Operation) -> None:
        """`linalg.add ins(%a, %b) outs(%init)` (sub, mul, div likewise) is `arith.addf %a,
        %b`: a named elementwise op writes every element of its init, so the init is only
        the result's shape; operands and result of one float type, as the arith op has."""
        if len(op.operands) != 3 or len({v.type for v in op.operands}) != 1 \
                or op.results[0].type != op.operands[2].type:
            raise self.error(op, "a named elementwise op computes on two inputs and an init "
                             "of one tensor type here; cast the inputs first (arith.extf / "
                             "truncf)")
        rank = len(_shape(op.results[0]))
        self.replace(op, [self.scalar_op(op, NAMED[op.name], [
            self.operand(v, op, rank) for v in op.operands[:2]], op.results[0].type, op)])

    def materialise(self, store: StoreOp) -> None:
        """A broadcast stored as it is (a splat of a row statistic, a `linalg.broadcast` of
        a loaded element) is first written whole into a tile of its own in LX: one SFU copy
        reading the source through the broadcast map (spyre-schedule-dataflow:
        `spyrecode.sfu_fill`), so the store moves computed values as every store does. The
        store alone reads the copy; other users keep reading the broadcast source."""
        value = store.value
        tile = self.scalar_op(store, "arith.extf", [self.broadcasts[value]], value.type,
                              store, fill=True)
        tile.name_hint = value.name_hint
        store.operands[0] = tile

    def transpose(self, op: linalg.TransposeOp) -> None:
        """A 2-D transpose is no instruction: a matmul reading it as B reads its source as
        stored (`matmul_nt`); any other use is refused by `cleanup`."""
        source = op.operands[0]
        if list(op.permutation.get_values()) != [1, 0] or source in self.scalars \
                or source in self.broadcasts or source in self.transposed:
            raise self.error(op, f"it permutes %{source.name_hint} ({source.type}) by "
                             f"{list(op.permutation.get_values())}; the compiler takes the "
                             "2-D transpose [1, 0] of a tile in LX, as a matmul's B operand")
        self.transposed[op.results[0]] = source

    def cast_before_transpose(self, op: Operation) -> None:
        """A cast of a transposed tile is the transpose of the cast tile (a cast is
        elementwise): the cast runs on the tile as stored, and a matmul reads its result as
        B^T (paged attention's `extf` of its transposed key block)."""
        source = self.transposed[op.operands[0]]
        stype, rtype = _tensor_type(source), _tensor_type(op.results[0])
        assert stype is not None and rtype is not None
        cast = self.scalar_op(op, op.name, [self.operand(source, op, 2)],
                              TensorType(rtype.element_type, stype.get_shape()), op)
        b = Builder(InsertPoint.before(op))
        empty = b.insert(tensor.EmptyOp([], rtype)).tensor
        flipped = b.insert(linalg.TransposeOp(cast, empty, DenseArrayBase.from_list(i64, [1, 0]),
                                              rtype))
        self.replace(op, list(flipped.results))
        self.transpose(flipped)

    # -- building ---------------------------------------------------------------------
    def scalar_op(self, op: Operation, name: str, operands: list[Operand],
                  result_type: Attribute, before: Operation, fill: bool = False) -> SSAValue:
        """One SFU operation `name` (an arith/math op name) on `operands` (maxnumf / minnumf:
        several, `number_op`); `fill`: a copy broadcasting one element over its tile."""
        if name in NUMBER:
            return self.number_op(op, name, operands, result_type, before)
        assert isinstance(result_type, TensorType)
        shape = list(result_type.get_shape())
        element = result_type.element_type
        args = [o for o in operands if isinstance(o, Arg)]
        if not args:
            raise self.error(op, "every operand is a constant; fold it before the kernel")
        build: Callable[..., SSAValue]
        if name in CASTS:
            fn, build = "copy", _cast(element)
        elif name in UNARY:
            fn = UNARY[name]
            build = _unary(_UNARY_OPS[fn])
        else:
            fn = BINARY[name]
            build = BINARY_BODIES[fn]
        if fn != "copy":  # the SFU reads 16-bit sources and computes in fp32: no widening copy
            operands = [_unwiden(o) if isinstance(o, Arg) else o for o in operands]
            args = [o for o in operands if isinstance(o, Arg)]
        out_tile = self.result_tile(op, args, shape)
        for arg in args:
            self.check_broadcast(op, arg, out_tile, len(shape), fill)
        attrs: dict[str, Attribute] = {"spyre.fn": StringAttr(fn)}
        scalars = [o for o in operands if isinstance(o, float)]
        if scalars:
            attrs["spyre.scalar"] = FloatAttr(scalars[0], f32)
            if isinstance(operands[0], float) and fn not in COMMUTATIVE:
                attrs["spyre.reverse"] = UnitAttr()

        compute = element if fn != "copy" else None  # the type the scalar op works in

        def body(b: Builder, block_args: tuple[SSAValue, ...]) -> SSAValue:
            it = iter(block_args)
            values = []
            for o in operands:
                if isinstance(o, float):
                    values.append(b.insert(arith.ConstantOp(FloatAttr(o, compute or f32))).result)
                else:  # an unwidened 16-bit source is widened inside the body
                    arg = next(it)
                    values.append(convert(b, arg, compute) if compute else arg)
            return build(b, *values)

        return self.generic_op(before, args, shape, element, body, attrs, out_tile)

    def result_tile(self, op: Operation, args: list[Arg], shape: list[int]) -> tuple[int, int]:
        for arg in args:
            if arg.map == AffineMap.identity(len(shape)):
                return tile_dims(arg.value)
        if len(shape) < 2:
            raise self.error(op, "a rank-1 result needs an operand of its own shape")
        return default_tile_dims(shape)

    def check_broadcast(self, op: Operation, arg: Arg, out: tuple[int, int], rank: int,
                        fill: bool = False) -> None:
        """The SFU broadcasts one row over all rows or one value per row along its row; a
        `fill` copy also one element over the whole tile (a map of constants 0)."""
        rows, cols = out
        dims = list(arg.map.results)
        identity = list(AffineMap.identity(rank).results)
        if dims == identity:
            expected = out
        elif fill and rank >= 2 and all(isinstance(d, AffineConstantExpr) and d.value == 0
                                        for d in dims):
            expected = (1, 1)
        elif rank >= 2 and dims == identity[:-1]:
            expected = (rows, 1)
        elif rank >= 2 and dims == identity[-1:]:
            expected = (1, cols)
        else:
            raise self.error(op, f"operand %{arg.value.name_hint} is read through {arg.map}; "
                             "the SFU broadcasts along rows or columns only")
        if tile_dims(arg.value) != expected:
            raise self.error(op, f"operand %{arg.value.name_hint} is a {tile_dims(arg.value)} "
                             f"tile read as {expected}; broadcasting it that way needs a "
                             "transpose the compiler does not insert")

    def generic_op(self, before: Operation, args: list[Arg], shape: list[int],
                   element: Attribute, body: Callable[[Builder, tuple[SSAValue, ...]], SSAValue],
                   attrs: dict[str, Attribute], tile: tuple[int, int],
                   init: SSAValue | None = None,
                   iterators: Sequence[Attribute] | None = None,
                   out_map: AffineMap | None = None) -> SSAValue:
        b = Builder(InsertPoint.before(before))
        rank = len(shape) if out_map is None else out_map.num_dims
        result_type = TensorType(element, shape)
        if init is None:
            init = b.insert(tensor.EmptyOp([], result_type)).tensor
        block = Block(arg_types=[_element(a.value) for a in args] + [element])
        inner = Builder(InsertPoint.at_end(block))
        inner.insert(linalg.YieldOp(body(inner, tuple(block.args))))
        maps = [AffineMapAttr(a.map) for a in args] + [
            AffineMapAttr(out_map or AffineMap.identity(rank))]
        new = b.insert(linalg.GenericOp(
            [a.value for a in args], [init], Region(block), maps,
            iterators or [IteratorTypeAttr.parallel()] * rank, [result_type]))
        new.attributes.update(attrs)
        if tile != default_tile_dims(shape):
            new.attributes["spyre.tile"] = DenseArrayBase.from_list(i64, list(tile))
        return new.results[0]

    def fill(self, before: Operation, shape: list[int], value: float,
             tile: tuple[int, int], element: Attribute = f32) -> SSAValue:
        b = Builder(InsertPoint.before(before))
        ttype = TensorType(element, shape)
        empty = b.insert(tensor.EmptyOp([], ttype)).tensor
        constant = FloatAttr(value, element)  # type: ignore[arg-type]
        scalar = b.insert(arith.ConstantOp(constant)).result
        op = b.insert(linalg.FillOp([scalar], [empty], [ttype]))
        op.attributes["spyre.tile"] = DenseArrayBase.from_list(i64, list(tile))
        return op.results[0]

    def replace(self, op: Operation, values: list[SSAValue]) -> None:
        for old, new in zip(op.results, values, strict=True):
            if new.name_hint is None:
                new.name_hint = old.name_hint
            old.replace_all_uses_with(new)
        _erase(op)

    # -- the op kinds -----------------------------------------------------------------
    def generic(self, op: linalg.GenericOp) -> None:
        """A parallel generic: one SFU op per scalar op of its body."""
        if any(str(it.data) != "parallel" for it in op.iterator_types):
            raise self.error(op, "a generic with reduction iterators has no engine mapping; "
                             "write the reduction as linalg.reduce")
        if any(isinstance(inner, linalg.IndexOp) for inner in op.body.block.ops):
            self.index_mask(op)
            return
        shape = _shape(op.outputs[0])
        rank = len(shape)
        maps = [m.data for m in op.indexing_maps]
        block = op.body.block
        env: dict[SSAValue, Operand] = {}
        for arg, value, amap in zip(block.args, op.inputs, maps):
            env[arg] = self.operand(value, op, rank, amap)
        for out_arg in block.args[len(op.inputs):]:
            if out_arg.uses:
                raise self.error(op, "its body reads the output operand; only pure "
                                 "elementwise bodies map to the SFU")
        for inner in block.ops:
            if isinstance(inner, linalg.YieldOp):
                values = []
                for y, result in zip(inner.operands, op.results):
                    value = env.get(y)
                    if value is None:
                        value = self.operand(y, op, rank)  # a value from outside the body
                    if not isinstance(value, Arg) or value.map != AffineMap.identity(rank):
                        raise self.error(op, "its body yields a constant or a broadcast value; "
                                         "the SFU writes whole tiles of computed values")
                    if _element(value.value) != _element(result):
                        value = Arg(self.scalar_op(op, "arith.extf", [value], result.type, op),
                                    value.map)
                    values.append(value.value)
                self.replace(op, values)
                return
            if isinstance(inner, arith.ConstantOp):
                env[inner.result] = self.constant(inner.result, inner)
                continue
            if inner.name not in BINARY and inner.name not in UNARY and inner.name not in CASTS \
                    and inner.name not in NUMBER:
                raise self.error(op, f"its body holds {inner.name}, which no SFU operation "
                                 "implements")
            operands = [env[v] if v in env else self.operand(v, op, rank)
                        for v in inner.operands]
            if all(isinstance(o, float) for o in operands):
                raise self.error(op, f"{inner.name} in its body has only constant operands")
            result_type = TensorType(inner.results[0].type, shape)
            env[inner.results[0]] = Arg(self.scalar_op(op, inner.name, operands, result_type, op),
                                        AffineMap.identity(rank))

    def index_mask(self, op: linalg.GenericOp) -> None:
        """A generic whose body reads `linalg.index` is taken as a mask: it yields
        `arith.select %keep, %x, %c` (or `%drop, %c, %x`), %x an input read whole or a value
        the body computes from its inputs (made a generic of its own first, `computed_value`),
        %c a float constant, the condition computed from the row and column indices and
        index values of the kernel by integer arithmetic and `arith.cmpi` (Triton's causal
        mask of a paged attention: `j * 16 + col <= context_len + pid * 2 + row / 4`). The generic
        keeps those ops, its outside index values become operands read through () -> (),
        and spyre-schedule-dataflow evaluates the condition for the core's tile: each row
        must keep a prefix of its columns, one `sfu.mask` per run of rows whose limits step
        by one (note 109)."""
        shape = _shape(op.outputs[0])
        block = op.body.block
        maps = [m.data for m in op.indexing_maps]
        yielded = block.last_op
        assert yielded is not None
        select = yielded.operands[0].owner if len(yielded.operands) == 1 else None
        form = ("the compiler takes a body that reads linalg.index only as a mask: "
                "`arith.select %cond, %x, %c` (or `%cond, %c, %x`), %x an input of the "
                "generic or a value computed from them, %c a float constant and %cond "
                "integer arithmetic and arith.cmpi on linalg.index and index values")
        if len(shape) != 2 or not isinstance(select, SELECTS) or \
                select.parent_block() is not block:
            raise self.error(op, form)
        inputs: dict[SSAValue, int] = {
            arg: k for k, arg in enumerate(block.args[:len(op.inputs)])}

        def kept(v: SSAValue) -> int | None:
            k = inputs.get(v)
            return k if k is not None and maps[k] == AffineMap.identity(2) else None

        def constant(v: SSAValue) -> float | None:
            try:
                return self.constant(v, op)
            except CompileError:
                return None

        on_false, on_true = constant(select.rhs), constant(select.lhs)
        if on_false is not None:
            kept_value, value, keep_true = select.lhs, on_false, True
        elif on_true is not None:
            kept_value, value, keep_true = select.rhs, on_true, False
        else:
            raise self.error(op, form)
        # the ops computing the kept value from the inputs (a scale of the scores): a
        # generic of their own before the mask, legalized as any elementwise body
        computed: list[Operation] = []
        todo = [kept_value]
        while todo:
            v = todo.pop()
            owner = v.owner
            if isinstance(owner, Operation) and owner.parent_block() is block \
                    and owner not in computed:
                if isinstance(owner, linalg.IndexOp) or owner.name in INDEX_OPS - {
                        "arith.constant"}:
                    raise self.error(op, f"the value it keeps reads {owner.name}; {form}")
                computed.append(owner)
                todo.extend(owner.operands)
        computed.sort(key=block.get_operation_index)
        index_ops = [inner for inner in block.ops if inner not in (select, yielded)
                     and inner not in computed and not (isinstance(inner, arith.ConstantOp)
                                                        and isinstance(inner.value, FloatAttr))]
        captured: list[SSAValue] = []
        for inner in index_ops:
            if inner.name not in INDEX_OPS:
                raise self.error(op, f"its body holds {inner.name}; {form}")
            for v in inner.operands:
                if isinstance(v.owner, Block) and v.owner is block:
                    raise self.error(op, f"{inner.name} in its body reads an input element; "
                                     f"{form}")
                if not isinstance(v.owner, Block) and v.owner.parent_block() is block:
                    continue
                if not isinstance(v.type, IndexType | IntegerType):
                    raise self.error(op, f"{inner.name} in its body reads %{v.name_hint} "
                                     f"({v.type}); {form}")
                if v not in captured:
                    captured.append(v)
        pre: linalg.GenericOp | None = None
        k = kept(kept_value)
        if kept_value.owner is not block and kept_value.owner not in computed:
            raise self.error(op, f"the value it keeps (%{kept_value.name_hint}) is defined "
                             f"outside its body, not a tile; {form}")
        if k is not None:
            x = self.operand(op.inputs[k], op, 2)
        else:
            pre = self.computed_value(op, computed, kept_value)
            x = Arg(pre.results[0], AffineMap.identity(2))
        if not isinstance(x, Arg) or x.map != AffineMap.identity(2) or \
                _element(x.value) != _element(op.results[0]):
            raise self.error(op, f"the value it keeps (%{kept_value.name_hint}) is not a "
                             "plain tile of the result's type; compute it in a generic of "
                             "its own first")
        element = _element(op.results[0])
        new_block = Block(arg_types=[element] + [v.type for v in captured] + [element])
        mapping: dict[SSAValue, SSAValue] = {kept_value: new_block.args[0]}
        mapping.update(zip(captured, new_block.args[1:len(captured) + 1]))
        for inner in index_ops:
            new_block.add_op(inner.clone(value_mapper=mapping))
        b = Builder(InsertPoint.at_end(new_block))
        fill = b.insert(arith.ConstantOp(FloatAttr(value, element))).result  # type: ignore[arg-type]
        x_arg, cond = new_block.args[0], mapping[select.cond]
        chosen = b.insert(SelectOp(cond, x_arg, fill) if keep_true
                          else SelectOp(cond, fill, x_arg)).result
        b.insert(linalg.YieldOp(chosen))
        outer = Builder(InsertPoint.before(op))
        empty = outer.insert(tensor.EmptyOp([], op.results[0].type)).tensor
        new = outer.insert(linalg.GenericOp(
            [x.value, *captured], [empty], Region(new_block),
            [AffineMapAttr(AffineMap.identity(2))] + [AffineMapAttr(AffineMap(2, 0, ()))]
            * len(captured) + [AffineMapAttr(AffineMap.identity(2))],
            [IteratorTypeAttr.parallel()] * 2, [op.results[0].type]))
        new.attributes.update({"spyre.fn": StringAttr("index_mask"),
                               "spyre.scalar": FloatAttr(value, f32)})
        if keep_true:
            new.attributes["spyre.keep_true"] = UnitAttr()
        if tile_dims(x.value) != default_tile_dims(shape):
            new.attributes["spyre.tile"] = DenseArrayBase.from_list(i64, list(tile_dims(x.value)))
        self.replace(op, [new.results[0]])
        if pre is not None:  # legalized now: its SFU ops then feed the mask
            self.generic(pre)

    def computed_value(self, op: linalg.GenericOp, ops: list[Operation],
                       value: SSAValue) -> linalg.GenericOp:
        """A generic of `op`'s inputs and maps whose body is `ops` of `op`'s body, yielding
        `value` (not legalized yet), before `op`."""
        block = op.body.block
        element = value.type
        new_block = Block(arg_types=[a.type for a in block.args[:-1]] + [element])
        mapping: dict[SSAValue, SSAValue] = dict(zip(block.args, new_block.args))
        for inner in ops:
            new_block.add_op(inner.clone(value_mapper=mapping))
        new_block.add_op(linalg.YieldOp(mapping[value]))
        result_type = TensorType(element, _shape(op.outputs[0]))
        b = Builder(InsertPoint.before(op))
        empty = b.insert(tensor.EmptyOp([], result_type)).tensor
        return b.insert(linalg.GenericOp(
            list(op.inputs), [empty], Region(new_block),
            [AffineMapAttr(m.data) for m in list(op.indexing_maps)[:-1]] + [
                AffineMapAttr(AffineMap.identity(2))],
            op.iterator_types, [result_type]))

    def number_op(self, op: Operation, name: str, operands: list[Operand],
                  result_type: Attribute, before: Operation) -> SSAValue:
        """maxnumf / minnumf (IEEE maxNum: a NaN operand is dropped; both NaN give NaN) from
        the SFU's NaN-propagating MAX / MIN and the exact select KEEP (design note 63): each
        NaN tensor operand is replaced by the other operand, then MAX / MIN. A NaN test
        that leaves infinities alone: c = clamp(v, -FLT_MAX, FLT_MAX) is finite or NaN, and
        keep(1, c - c) is 1 exactly where v is NaN. Constant operands are numbers."""
        x, y = operands
        x = self.nan_replaced(op, x, y, result_type, before)
        y = self.nan_replaced(op, y, x, result_type, before)
        combine = "arith.maximumf" if NUMBER[name] == "maximum" else "arith.minimumf"
        return self.scalar_op(op, combine, [x, y], result_type, before)

    def nan_replaced(self, op: Operation, v: Operand, by: Operand, result_type: Attribute,
                     before: Operation) -> Operand:
        """`v` with its NaN elements replaced by `by` (exact: two KEEPs and an add)."""
        if not isinstance(v, Arg):
            return v
        identity = AffineMap.identity(len(result_type.get_shape()))  # type: ignore[attr-defined]

        def sfu(fn: str, *args: Operand) -> Arg:
            return Arg(self.scalar_op(op, fn, list(args), result_type, before), identity)

        # the result type's largest finite value: a clamp to FLT_MAX rounds back to inf in
        # a 16-bit result (and 65504 is an f16 constant where FLT_MAX is not one)
        big = FINITE_MAX.get(str(result_type.element_type), FLOAT32_MAX)  # type: ignore[attr-defined]
        c = sfu("arith.minimumf", sfu("arith.maximumf", v, -big), big)
        nan = sfu("spyre.keep", 1.0, sfu("arith.subf", c, c))
        return sfu("arith.addf", sfu("spyre.keep", v, sfu("arith.subf", 1.0, nan)),
                   sfu("spyre.keep", by, nan))

    def reduce(self, op: Operation) -> None:
        source, init = op.operands[0], op.operands[1]
        dims = list(op.properties["dimensions"].get_values())  # type: ignore[attr-defined]
        shape = _shape(source)
        if len(op.operands) != 2 or dims != [len(shape) - 1]:
            raise self.error(op, "only single-input reductions over the last dim map to the "
                             "SFU's row reduction")
        body_ops = [o for o in op.regions[0].block.ops if not isinstance(o, linalg.YieldOp)]
        name = body_ops[0].name if len(body_ops) == 1 else selected_max(op.regions[0].block)
        combiner = BINARY.get(name) or NUMBER.get(name) or SELECTED.get(name)
        if combiner not in REDUCE:
            raise self.error(op, "its combiner is not one of addf, maximumf/maxnumf, "
                             "minimumf/minnumf, or a max / min written out as `%c = "
                             "arith.cmpf ogt|oge|olt|ole, %in, %acc` and `arith.select %c, "
                             "%in, %acc` (an unordered predicate, or a select that keeps the "
                             "accumulator when the comparison holds, treats NaN otherwise: "
                             "write arith.maxnumf / minnumf %in, %acc to skip NaN elements, "
                             "or arith.maximumf / minimumf to propagate them)")
        kind, identity = REDUCE[combiner]
        rows = pymath.prod(shape[:-1])
        out_shape = shape[:-1]
        acc = self.fill(op, out_shape, identity, (rows, 1))
        d = [AffineExpr.dimension(i) for i in range(len(shape))]
        arg = self.operand(source, op, len(shape))
        arg = _unwiden(arg) if isinstance(arg, Arg) else arg
        if not isinstance(arg, Arg) or tile_dims(source) != default_tile_dims(shape):
            raise self.error(op, f"its input %{source.name_hint} is not a plain tile")
        if name in NUMBER or name in SELECTED:  # a NaN element counts as the identity
            arg = self.nan_replaced(op, arg, identity, TensorType(f32, shape), op)
            assert isinstance(arg, Arg)

        def body(b: Builder, args: tuple[SSAValue, ...]) -> SSAValue:
            x = convert(b, args[0], f32)
            return b.insert(_BINARY_OPS[combiner](args[1], x)).results[0]

        result = self.generic_op(
            op, [arg], out_shape, f32, body,
            {"spyre.fn": StringAttr(f"reduce_{kind}"),
             "spyre.valid_cols": IntegerAttr(shape[-1], IndexType())},
            (rows, 1), init=acc,
            iterators=[IteratorTypeAttr.parallel()] * (len(shape) - 1)
            + [IteratorTypeAttr.reduction()],
            out_map=AffineMap(len(shape), 0, tuple(d[:-1])))
        if _element(init) not in (f32, f16, bf16):
            raise self.error(op, f"its accumulator is {init.type}; the SFU reduces into f32 "
                             "(rounded once to an f16 or bf16 accumulator)")
        start = self.operand(init, op, len(out_shape))
        if name in NUMBER and start != identity and (
                not isinstance(start, float) or pymath.isnan(start)):
            # maxnumf from an init that may be NaN: the interpreter's fold drops the NaN
            # init for the first element that is not NaN, which the SFU's row MAX combined
            # with the init cannot tell from a row of NaN elements
            raise self.error(op, f"{name} from an init that is not a number constant "
                             f"(%{init.name_hint}): a NaN init is dropped by the fold "
                             "unless every element is NaN, which the device cannot tell; "
                             "reduce from the identity constant and combine the result "
                             f"with the init by {name} after the reduction")
        # a 16-bit accumulator gets the f32 reduction rounded once, where it is combined
        # with the init: the interpreter's semantics of a 16-bit fold
        column = Arg(result, AffineMap.identity(len(out_shape)))
        if start != identity:
            result = self.scalar_op(op, f"arith.{_COMBINE[combiner]}", [column, start],
                                    init.type, op)
        elif _element(init) != f32:
            result = self.scalar_op(op, "arith.truncf", [column], init.type, op)
        self.replace(op, [result])

    def produce(self, op: InterTileProduceOp) -> None:
        """Its region only names the partial: the tile computes it before, as compute the
        pass legalizes; the ops of a produce region are never legalized."""
        delivery = next(iter(op.future.uses)).operation
        if not isinstance(delivery, InterTileReduceOp):
            raise self.error(delivery, NOT_TAKEN)
        *ops, _ = list(op.body.block.ops)
        if ops:
            raise self.error(op, f"its region computes ({', '.join(o.name for o in ops)}); "
                             "compute the partial before the ktdp.inter_tile_produce and have "
                             "the region only yield it")

    def inter_tile_reduce(self, op: InterTileReduceOp) -> None:
        """A sum of one partial over each group of tiles: spyre-schedule-dataflow makes it
        one `ring.reduce` per core (note 59), in place in the partial's LX slot. The result
        gets the partial's LX tile (`spyre.tile`), so its users read it as they would read
        the partial (a row reduction's rank-1 result is a column); the identity becomes a
        zero `linalg.fill` of that tile, as convert-spyre-to-ktir builds it."""
        produce = op.future.owner
        assert isinstance(produce, InterTileProduceOp)  # the verifier's R2: its one use
        if op.producer_dependency_per_consumer is not None:
            raise self.error(op, "a partial reduction (producer_dependency_per_consumer) has "
                             "no ring.reduce form: ring.reduce folds every producer of the "
                             "group; drop the set, or run the kernel in the KTIR interpreter")
        partials = list(op.future_type.partials)
        if len(partials) != 1:
            raise self.error(op, f"it folds {len(partials)} partials; ring.reduce sums one: "
                             "use one inter_tile_produce / inter_tile_reduce pair per partial")
        named_sum_as_addf(op)
        if not op.sums_its_arguments:
            names = [o.name for o in op.combiner.block.ops]
            raise self.error(op, f"its combiner is ({', '.join(names)}); ring.reduce only "
                             "adds: the combiner must be one arith.addf of its two arguments "
                             "(a max or min over tiles has no ring form; run the kernel in the "
                             "KTIR interpreter)")
        yielded = produce.body.block.last_op
        assert yielded is not None
        partial = yielded.operands[0]
        if _element(partial) not in RING_PARTIALS:
            raise self.error(op, f"its partial %{partial.name_hint} is a {partial.type}; "
                             "ring.reduce sums f32 or f16 tiles")
        if partial in self.scalars or partial in self.broadcasts:
            raise self.error(op, f"its partial %{partial.name_hint} is a constant or a "
                             "broadcast; ring.reduce sums a tile computed in LX")
        partial = self.reduced_copy(op, produce, partial)
        yielded.operands[0] = partial
        identity = op.identity[0]
        if self.scalars.get(identity) != 0.0:
            raise self.error(op, f"its identity %{identity.name_hint} is not a zero constant; "
                             "ring.reduce sums the partials alone: add a non-zero start after "
                             "the reduce")
        if produce.parent_block() is not op.parent_block():
            raise self.error(op, "it is not in the block of its ktdp.inter_tile_produce; "
                             "keep the pair together")
        # the reduce sums in the partial's LX slot (spyre-place-memory keeps the partial
        # live until its delivery); the pair stays together as convert-spyre-to-ktir builds
        # it, with the identity (no instruction, only a slot) before the produce
        tile = tile_dims(partial)
        op.operands[1] = self.fill(produce, _shape(partial), 0.0, tile, _element(partial))
        op.detach()
        produce.parent_block().insert_op_after(op, produce)  # type: ignore[union-attr]
        if tile != default_tile_dims(_shape(partial)):
            op.attributes["spyre.tile"] = DenseArrayBase.from_list(i64, list(tile))

    def reduced_copy(self, op: InterTileReduceOp, produce: InterTileProduceOp,
                     partial: SSAValue) -> SSAValue:
        """The tile the ring reduces: `partial` itself when nothing reads it again, else an
        SFU copy of it made before the produce. The sum overwrites the reduced tile's slot,
        so a partial read by another op, or by the next iteration of a loop it was computed
        before (ring_reduce_inner_loop), must not be the one reduced."""
        home = partial.owner if isinstance(partial.owner, Block) else partial.owner.parent_block()
        if home is produce.parent_block() and partial.has_one_use():
            return partial
        identity = AffineMap.identity(len(_shape(partial)))
        return self.scalar_op(op, "arith.extf", [Arg(partial, identity)], partial.type, produce)

    def matmul(self, op: Operation, a: SSAValue, b: SSAValue, init: SSAValue) -> None:
        nt = b in self.transposed  # B^T as stored: [n, k]
        b = self.transposed.get(b, b)
        for v in (a, b):
            if v in self.scalars or v in self.broadcasts or len(_shape(v)) != 2:
                raise self.error(op, f"operand %{v.name_hint} must be a 2-D tile in LX")
        result_type = init.type
        # a 16-bit init: the PT array sums in f32 from zero and the sum is rounded once,
        # where it is combined with the init (an empty init is zero, as in the interpreter)
        start: SSAValue | None = None
        if isinstance(init.owner, tensor.EmptyOp) and _element(init) != f32:
            init = self.fill(op, _shape(init), 0.0, default_tile_dims(_shape(init)))
        elif _element(init) in (f16, bf16) and init not in self.scalars:
            start, init = init, self.fill(op, _shape(init), 0.0, default_tile_dims(_shape(init)))
        if init in self.scalars:
            if self.scalars[init] != 0.0:
                raise self.error(op, "a matmul init filled with a non-zero value is not "
                                 "supported; add the constant after the matmul")
            init = self.fill(op, _shape(init), 0.0, default_tile_dims(_shape(init)))
        if _element(init) != f32:
            raise self.error(op, f"its init is {result_type}; the PT array accumulates in f32 "
                             "(rounded once to an f16 or bf16 init)")
        d0, d1, d2 = (AffineExpr.dimension(i) for i in range(3))

        def body(bb: Builder, args: tuple[SSAValue, ...]) -> SSAValue:
            x, y, acc = (convert(bb, v, f32) for v in args)
            prod = bb.insert(arith.MulfOp(x, y)).result
            return bb.insert(arith.AddfOp(acc, prod)).result

        result = self.generic_op(
            op, [Arg(a, AffineMap(3, 0, (d0, d2))),
                 Arg(b, AffineMap(3, 0, (d1, d2) if nt else (d2, d1)))],
            _shape(init), f32, body, {"spyre.fn": StringAttr("matmul_nt" if nt else "matmul")},
            default_tile_dims(_shape(init)), init=init,
            iterators=[IteratorTypeAttr.parallel()] * 2 + [IteratorTypeAttr.reduction()],
            out_map=AffineMap(3, 0, (d0, d1)))
        identity = AffineMap.identity(2)
        if start is not None:
            result = self.scalar_op(op, "arith.addf", [Arg(result, identity),
                                                       Arg(start, identity)], result_type, op)
        elif _element(result) != _element(op.results[0]):
            result = self.scalar_op(op, "arith.truncf", [Arg(result, identity)], result_type,
                                    op)
        self.replace(op, [result])


_COMBINE = {"add": "addf", "maximum": "maximumf", "minimum": "minimumf"}


def _unary(make: Callable[[SSAValue], Operation]) -> Callable[[Builder, SSAValue], SSAValue]:
    """The body applying one elementwise op to its one input."""
    def build(b: Builder, value: SSAValue) -> SSAValue:
        return b.insert(make(value)).results[0]
    return build


def _cast(element: Attribute) -> Callable[[Builder, SSAValue], SSAValue]:
    """A copy converting to `element` (extf to f32, truncf to a 16-bit type)."""
    def build(b: Builder, value: SSAValue) -> SSAValue:
        if value.type == element:
            return value
        if element == f32:
            return b.insert(arith.ExtFOp(value, element)).result
        if value.type == f32:
            return b.insert(arith.TruncFOp(value, element)).result
        wide = b.insert(arith.ExtFOp(value, f32)).result  # f16 <-> bf16 through f32
        return b.insert(arith.TruncFOp(wide, element)).result
    return build


def _index_constant(value: SSAValue) -> int | None:
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def _unwiden(arg: Arg) -> Arg:
    """The 16-bit source of a widening copy (extf to f32), read through the same map."""
    copy = arg.value.owner
    if (isinstance(copy, linalg.GenericOp) and _is_fn(copy, "copy") and len(copy.inputs) == 1
            and _element(copy.results[0]) == f32 and _element(copy.inputs[0]) != f32
            and copy.indexing_maps.data[0].data == AffineMap.identity(len(_shape(arg.value)))):
        return Arg(copy.inputs[0], arg.map)
    return arg


def _erase(op: Operation) -> None:
    op.detach()
    op.erase()


def _element(value: SSAValue) -> Attribute:
    ttype = value.type
    assert isinstance(ttype, TensorType)
    return ttype.element_type


def kernel_cost(fn: func.FuncOp) -> DictionaryAttr:
    """FLOPs of the kernel's matmuls and the bytes of every tensor it views, once, or twice
    for a view both loaded and stored (an argument updated in place is read and written)."""
    grid = pymath.prod(ktir_grid(fn))
    flops = 0
    for op in fn.walk():
        if isinstance(op, linalg.GenericOp) and (_is_fn(op, "matmul") or _is_fn(op, "matmul_nt")):
            m, k = _shape(op.inputs[0])
            n = _shape(op.outputs[0])[1]
            flops += 2 * m * n * k * _trips(op) * grid
    viewed = 0
    for op in fn.walk():
        if isinstance(op, ConstructMemoryViewOp):
            mtype = op.result.type
            assert isinstance(mtype, MemRefType)
            itemsize = DEVICE_ITEMSIZE[DEVICE_DTYPE[str(mtype.element_type)]]
            if (rows := indirect_view_bytes(op.result, itemsize, grid, _trips)) is not None:
                viewed += rows  # a gathered or scattered table: the rows moved
                continue
            accesses = {type(a.operation) for t in op.result.uses
                        for r in t.operation.results for a in r.uses}
            viewed += pymath.prod(mtype.get_shape()) * itemsize * max(
                1, len(accesses & {LoadOp, StoreOp}))
    return DictionaryAttr({"flops": IntegerAttr(flops, i64),
                           "min_offchip_bytes": IntegerAttr(viewed, i64)})


def _is_fn(op: Operation, name: str) -> bool:
    attr = op.attributes.get("spyre.fn")
    return isinstance(attr, StringAttr) and attr.data == name


def column_values(fn: func.FuncOp) -> set[SSAValue]:
    """The rank-1 tensors of `fn` that are row statistics, one value per row of a 2-D tile:
    the result (and init) of a `linalg.reduce` over the last dim of a rank-2 tensor, a
    rank-1 input a rank-2 generic reads through (d0, d1) -> (d0), and every rank-1 value
    joined to one of those by an elementwise op, a rank-1 generic of identity maps or a
    loop (init, iteration argument, yielded value, result). LX holds them as columns."""
    parent: dict[SSAValue, SSAValue] = {}
    seen: set[SSAValue] = set()

    def find(v: SSAValue) -> SSAValue:
        while parent.get(v, v) is not v:
            v = parent[v]
        return v

    def join(values: Sequence[SSAValue]) -> None:
        ranked = [v for v in values if (t := _tensor_type(v)) is not None
                  and len(t.get_shape()) == 1]
        seen.update(ranked)
        for v in ranked[1:]:
            a, b = find(ranked[0]), find(v)
            if a is not b:
                parent[b] = a

    seeds: list[SSAValue] = []
    for op in fn.walk():
        if op.name == "linalg.reduce" and len(op.operands) == 2 \
                and len(_shape(op.operands[0])) == 2:
            seeds.extend([op.results[0], op.operands[1]])
            join([op.results[0], op.operands[1]])
        elif isinstance(op, linalg.GenericOp):
            maps = [m.data for m in op.indexing_maps]
            if maps and maps[-1].num_dims == 2:
                row = AffineMap(2, 0, (AffineExpr.dimension(0),))
                seeds.extend(v for v, m in zip(op.inputs, maps) if m == row)
            elif maps and all(m == AffineMap.identity(1) for m in maps):
                join([*op.inputs, *op.outputs, *op.results])
        elif isinstance(op, scf.ForOp):
            yielded = op.body.block.last_op
            assert yielded is not None
            for k, init in enumerate(op.iter_args):
                join([init, op.body.block.args[k + 1], yielded.operands[k], op.results[k]])
        elif op.name in BINARY or op.name in UNARY or op.name in CASTS or op.name in NUMBER:
            join([*op.operands, *op.results])
    roots = {find(v) for v in seeds}
    return {v for v in [*seen, *seeds] if find(v) in roots}


def _trips(op: Operation) -> int:
    """How often `op` runs per core: the product of its enclosing static loop trip counts."""
    trips = 1
    parent = op.parent_op()
    while isinstance(parent, scf.ForOp):
        bounds = [v.owner for v in (parent.lb, parent.ub, parent.step)]
        if all(isinstance(o, arith.ConstantOp) for o in bounds):
            lb, ub, step = (o.value.value.data for o in bounds)  # type: ignore[union-attr]
            trips *= max(0, -(-(ub - lb) // step))
        parent = parent.parent_op()
    return trips


def _check_whole_tiles(fn: func.FuncOp) -> None:
    """Every access tile's set is its whole block from the base: the box [0, n - 1] per dim
    of the tile's shape. The scheduler moves a tile as that block from its base map's
    coordinate; a set starting elsewhere, smaller than the block (a masked tail) or not a
    box would read or write other elements than the kernel names, so it is refused."""
    for op in fn.walk():
        if not isinstance(op, ConstructAccessTileOp):
            continue
        tile_set = op.access_tile_set.data
        shape = list(op.result.type.get_shape())
        order = op.access_tile_order.data  # the type's dim k is the view's dim order[k]
        dims = [e.position for e in order.results if isinstance(e, AffineDimExpr)]
        if sorted(dims) == list(range(len(shape))):
            shape = [shape[dims.index(d)] for d in range(len(shape))]
        whole = [(0, n - 1) for n in shape]
        if tile_set.num_symbols == 0 and is_box(tile_set) and set_bounds(tile_set) == whole:
            continue
        name = f" %{op.result.name_hint}" if op.result.name_hint else ""
        box = " x ".join(f"[0, {n - 1}]" for n in shape)
        raise CompileError(
            f"kernel @{fn.sym_name.data}: ktdp.construct_access_tile{name}: its "
            f"access_tile_set {tile_set} is not the whole {list(shape)} block {box}; the "
            "back end moves a tile as the block of its type from its base coordinate, so it "
            "would access other elements than the set names. Move an offset into the base "
            "subscript and write the set from 0, or make the tile's type the set's extent "
            "(the KTIR interpreter runs the kernel as written: spyrec.ktir.execute)")


def _padded_rows(fn: func.FuncOp) -> None:
    """The views a hand-written kernel builds on its arguments (`spyre.dense_views`) address
    the device's copy of the tensor, whose rows are padded to whole 128-byte sticks (the
    host writes and reads the padding, as for every unaligned tensor of the model path):
    a view whose rows are not whole sticks gets the strides of that padded layout. The
    view's sizes, and so every tile and bound, stay the kernel's; only the pitch between
    rows changes, so a tile moves the same elements."""
    if "spyre.dense_views" not in fn.attributes:
        return
    for op in fn.walk():
        if not isinstance(op, ConstructMemoryViewOp) or op.offset.owner is not fn.body.block:
            continue
        mtype = op.result.type
        assert isinstance(mtype, MemRefType)
        sizes = [int(v) for v in op.static_sizes.get_values()]
        per_stick = STICK_BYTES // DEVICE_ITEMSIZE[DEVICE_DTYPE[str(mtype.element_type)]]
        padded = [*sizes[:-1], -(-sizes[-1] // per_stick) * per_stick]
        strides = [pymath.prod(padded[i + 1:]) for i in range(len(padded))]
        op.properties["static_strides"] = DenseArrayBase.from_list(i64, strides)


@dataclass(frozen=True)
class SpyreLegalizeKtir(ModulePass):
    """Map hand-written KTIR tensor computations onto Spyre engine operations."""

    name = "spyre-legalize-ktir"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in [f for f in op.body.block.ops
                   if isinstance(f, func.FuncOp) and is_kernel(f)]:
            check_tile_bounds(fn)  # before rewriting: the errors name the kernel's own ops
            _check_whole_tiles(fn)
            _padded_rows(fn)
            _Kernel(fn).run()
            if "spyre.cost" not in fn.attributes:
                fn.attributes["spyre.cost"] = kernel_cost(fn)
