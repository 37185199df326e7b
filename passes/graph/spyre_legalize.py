"""spyre-legalize: op selection from imported ATen ops to Spyre ops.

Expects: a module from the frontend (`spyre.aten` and `spyre.param` ops in `func.func`s).
Guarantees: no `spyre.aten` op remains; every op is one the back end lowers. Transposes of
weights are folded into the weight (`spyre.param` with a `permutation`), so no data movement
kernel is spent on them. Permutations of an activation's leading dims become
`spyre.permute_rows` (a reshape when only size-1 dims move), `expand` of size-1 leading dims
`spyre.expand_rows`, and reshapes that keep the stick dim, or split / merge it in whole
sticks (heads of a multiple of 64 fp16 elements), `spyre.reshape`. Scaled dot-product
attention becomes `spyre.attention` (scale, causal, an additive [L, S] mask; grouped-query
attention by the operand shapes), and so does eager attention written out as bmm, scale,
mask add, softmax and bmm (matched strictly by `eager_attention`, before anything else is
selected). Slices and concatenations along the innermost dim (the half rotation of rotary
embeddings: `cat(-x[..., d/2:], x[..., :d/2])`) are linear maps of the columns: each chain
of slices and negations that feeds a concatenation folds into one constant 0/+-1 matrix per
source, so a concatenation is one matmul per distinct source. Gathers of table rows by
index (`embedding`, `index_select` along rows) become `spyre.gather`, and row writes into a
buffer at run-time positions (`index_put` with `[None, .., pos]`, `index_copy` along dim
-2: a KV-cache append) `spyre.scatter`, done in place. Comparisons of integers become f32 0/1
predicates (`spyre.predicate`), which `where`, `and`/`or`/`not` and boolean SDPA masks consume;
cumsum over the last dim is a matmul by a constant triangle; argmax / argmin a row reduction (design
note 28). If any op has no lowering, the pass fails once, listing every such op with its FX node,
source line and the reason (never just the first).

    %y = spyre.aten "aten.linear.default"(%x, %w, %b) ...        // before
    %wt = spyre.param {param_name = "fc.weight", permutation = array<i64: 1, 0>} ...
    %y = spyre.matmul %x, %wt bias %b ...                         // after

    %t = spyre.aten "aten.permute.default"(%q) {args = {dims = [0, 2, 1, 3]}} ...  // before
    %t = spyre.permute_rows %q {permutation = array<i64: 0, 2, 1, 3>} ...        // after

The patterns live in `passes/graph/legalize/`, one module per family of ops (elementwise,
reductions, normalization, matmul, attention, movement, columns, predicates, gather,
transcendental, with `base` shared by all); this module assembles their `SELECTORS` tables
and runs them in order. What one run remembers between ops (transposed weights, device
transposes, additive masks) lives in its `LegalizeRewriter`, made afresh by each `apply`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    AnyFloat,
    ArrayAttr,
    DenseArrayBase,
    Float32Type,
    FunctionType,
    IntegerType,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from spyrec.diagnostics import UnsupportedOpsError
from spyrec.dialects import spyre_plan as plan
from spyrec.dialects.spyre import REDUCE_OPS, AtenOp, CastOp, ParamOp, ReshapeOp, describe
from spyrec.passes.graph.conv import select_channels_last
from spyrec.passes.graph.eager_attention import match_eager_attention
from spyrec.passes.graph.graph_build import element as _element_name
from spyrec.passes.graph.graph_build import emit as _emit
from spyrec.passes.graph.graph_build import scalar_op, through
from spyrec.passes.graph.graph_build import shape as _shape
from spyrec.passes.graph.int_range import int_input_limit
from spyrec.passes.graph.legalize import (
    attention,
    columns,
    elementwise,
    gather,
    matmul,
    movement,
    normalization,
    predicates,
    reductions,
    transcendental,
)
from spyrec.passes.graph.legalize.attention import select_eager_attention
from spyrec.passes.graph.legalize.base import INT_ELEMENTS, LegalizeRewriter, Selector, Unsupported
from spyrec.passes.graph.legalize.elementwise import ATEN_BINARY, ATEN_UNARY
from spyrec.passes.graph.legalize.movement import erase_dead_moves
from spyrec.passes.graph.legalize.predicates import BOOL_INPUTS, PREDICATE_VIEWS, is_predicate
from spyrec.passes.graph.move_reduced_dim import move_reduced_dims_last

# every ATen overload with a lowering, by family
SELECTORS: dict[str, Selector] = {
    **elementwise.SELECTORS,
    **normalization.SELECTORS,
    **reductions.SELECTORS,
    **matmul.SELECTORS,
    **attention.SELECTORS,
    **movement.SELECTORS,
    **columns.SELECTORS,
    **gather.SELECTORS,
    **predicates.SELECTORS,
    **transcendental.SELECTORS,
}

# Hugging Face decoders given `position_ids` derive the attention mask from them: the packed
# sequence index cumsum(diff(pos) != 1) and each token's position as a column and as a row
# (`aten.index` by folded aranges), compared into a boolean mask. Integer tensors live on
# the device as int32; these ops run on them cast to f32 (exact below 2^24, positions and
# counts are far below) by the float lowering, and the result is cast back (`_select_via_f32`).
INT_VIA_F32 = {
    "aten.slice.Tensor", "aten.cat.default", "aten.cumsum.default", "aten.index.Tensor",
    "aten.gather.default",
    *(f"aten.{k}.{form}" for k in ("add", "sub", "mul") for form in ("Tensor", "Scalar")),
    "aten.rsub.Scalar", "aten.constant_pad_nd.default", "aten.expand.default",
    "aten.repeat.default", "aten.sum.dim_IntList", "aten.sum.default",
}


def _needs_f32(aten: AtenOp) -> bool:
    return (aten.target.data in INT_VIA_F32
            and any(_element_name(r) in INT_ELEMENTS for r in aten.results)
            and all(_element_name(v) in (*INT_ELEMENTS, "f32", "i1") for v in aten.operands)
            ) or _moves_predicates(aten)


def _moves_predicates(aten: AtenOp) -> bool:
    """Is `aten` a move of predicates (0.0 / 1.0 in f32) with a boolean result (a run-time
    padding mask concatenated with a constant prefix, padded, expanded)? It runs as the
    same move of f32 data, its result still a predicate (data moves are exact)."""
    if aten.target.data not in _MOVES | _BOOL_MOVES \
            or not any(_element_name(r) == "i1" for r in aten.results):
        return False
    names = [n.data for n in aten.operand_names.data]  # type: ignore[attr-defined]
    data = [v for name, v in zip(names, aten.operands) if not name.startswith(_INDEX_NAMES)]
    return bool(data) and all(is_predicate(v) and _element_name(v) == "f32" for v in data)


# moves with a lowering of float data beyond the views of `_MOVES`; their index operands
# (named by `_INDEX_NAMES`) are positions, not moved data
_BOOL_MOVES = {"aten.cat.default", "aten.constant_pad_nd.default", "aten.repeat.default",
               "aten.index.Tensor", "aten.gather.default", "aten.index_select.default",
               "aten.flip.default", "aten.roll.default"}
_INDEX_NAMES = ("indices", "index")


def _select_via_f32(aten: AtenOp, rewriter: LegalizeRewriter, failures: list[str]) -> None:
    """`aten` on integer operands as the same op on their f32 casts (the index operands of
    `aten.index` and `aten.gather` stay: they are read as constants or as row numbers), its
    integer results cast back."""
    names = [n.data for n in aten.operand_names.data]  # type: ignore[attr-defined]
    operands = []
    for name, operand in zip(names, aten.operands):
        v = operand
        if _element_name(v) in INT_ELEMENTS and not (
                aten.target.data in ("aten.index.Tensor", "aten.gather.default")
                and name != "self"):
            v = _emit(rewriter, aten, CastOp(v, TensorType(Float32Type(), _shape(v))))
        operands.append(v)
    moved = _moves_predicates(aten)
    result_types = [TensorType(Float32Type(), _shape(r)) if _element_name(r) in (
        *INT_ELEMENTS, "i1") else r.type for r in aten.results]
    clone = AtenOp.create(operands=operands, result_types=result_types,
                          properties=dict(aten.properties), attributes=dict(aten.attributes))
    rewriter.insert_op(clone, InsertPoint.before(aten))
    for old, new in zip(aten.results, clone.results):
        value = new
        if old.type != new.type and _element_name(old) != "i1":
            value = _emit(rewriter, aten, CastOp(new, old.type))
        old.replace_all_uses_with(value)
    rewriter.erase_op(aten)
    # a boolean result stays the f32 predicate the move makes
    _select(clone, rewriter, failures, predicate=moved)


# ops known to have no device lowering yet, with what to do instead
NOT_ON_DEVICE: dict[str, str] = {
    "aten.prod.dim_int": "a product reduction (not lowered: exp(sum(log|x|)) with a sign "
                         "count loses precision; multiply the factors explicitly)",
}


# the elementwise ops passes/graph/conv.py selects channels-last between its image ops
CHANNELS_LAST_ELEMENTWISE = {*ATEN_UNARY, *ATEN_BINARY, "aten.clone.default", "aten.gelu.default",
                             "aten.dropout.default"}


def supported_targets() -> list[str]:
    return sorted(SELECTORS)


@dataclass(frozen=True)
class SpyreLegalize(ModulePass):
    """Select Spyre ops for imported ATen ops; report every unsupported op at once."""

    name = "spyre-legalize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        rewriter = LegalizeRewriter(plan.target_of(op))
        failures: list[str] = []
        int_input_limit(op)  # before selection rewrites the integer ops into f32 ones
        # a reduction or softmax over a dim other than the last reduces the last dim of a
        # device transpose (see `move_reduced_dim`)
        move_reduced_dims_last(op)
        _bool_inputs(op)
        atens = [o for o in op.walk() if isinstance(o, AtenOp)]
        # eager attention first: its bmm, scale, mask add and softmax become one
        # spyre.attention (see `eager_attention`), and the matched chain is then dead
        for aten in [a for a in atens if a.target.data == "aten.bmm.default"]:
            if (match := match_eager_attention(aten)) is not None:
                select_eager_attention(match, rewriter)
        _erase_dead_atens(atens)
        # concatenations and copies first: they absorb the slices and negations feeding
        # them (see `columns._column_map`; a copy's destination, `columns._select_copy`),
        # which then have no uses left and are erased, not selected
        # (a concatenation of booleans waits for the comparisons it moves: `_moves_predicates`)
        tried = [a for a in atens if a.target.data in ("aten.cat.default", "aten.copy.default")
                 and _element_name(a.results[0]) != "i1"]
        for aten in tried:
            _select(aten, rewriter, failures)
        _erase_dead_atens(atens)
        # convolution, batch norm and pooling: channels-last, with the elementwise ops
        # between them (`passes/graph/conv.py`); what it reports is not selected again
        reported = select_channels_last(op, rewriter, CHANNELS_LAST_ELEMENTWISE, failures)
        # a concatenation or copy refused above is reported once
        atens = [o for o in op.walk() if isinstance(o, AtenOp) and o not in reported
                 and o not in tried]
        for aten in [a for a in atens if a.parent is not None]:
            _select(aten, rewriter, failures)
        _bool_outputs(op, failures)
        if failures:
            source = op.attributes.get("spyre.source")
            raise UnsupportedOpsError(
                source.data if isinstance(source, StringAttr) else "module", failures
            )
        _float_reduction_sources(op, rewriter)
        erase_dead_moves(op)
        _erase_dead_params(op)


def _float_reduction_sources(module: ModuleOp, rewriter: LegalizeRewriter) -> None:
    """A row reduction of integers cast to float (`mask.float().sum(-1)`, argmax of ids)
    reads an f32 tile of its own, x + 0.0: a kernel folds a cast into the op that reads it,
    and the SFU's reduce, unlike its elementwise ops, has no int32 source (the emulator
    faults on one)."""
    for reduce in [o for o in module.walk() if isinstance(o, tuple(REDUCE_OPS.values()))]:
        source = reduce.operands[0]
        behind = through(source, (CastOp, ReshapeOp))
        if isinstance(source.type, TensorType) and isinstance(source.type.element_type,
                                                              AnyFloat) \
                and isinstance(behind.type, TensorType) \
                and isinstance(behind.type.element_type, IntegerType):
            reduce.operands[0] = scalar_op(reduce, rewriter, "add", source, 0.0)


def _bool_inputs(module: ModuleOp) -> None:
    """Boolean inputs of the program live on the device as f32 0.0 / 1.0, the predicates
    comparisons make (design note 28c): the graph function takes them as f32 and lists
    them in `spyre.bool_inputs`, so op selection reads them as predicates and the host
    converts torch.bool to 0/1 on the way in."""
    for fn in [o for o in module.walk() if isinstance(o, func.FuncOp)]:
        if fn.body.blocks.first is None or plan.is_kernel(fn) or BOOL_INPUTS in fn.attributes:
            continue
        bools = []
        for arg in list(fn.body.block.args):
            if isinstance(arg.type, TensorType) and str(arg.type.element_type) == "i1":
                Rewriter.replace_value_with_new_type(
                    arg, TensorType(Float32Type(), arg.type.get_shape()))
                bools.append(arg.index)
        if bools:
            fn.function_type = FunctionType.from_lists(
                [a.type for a in fn.body.block.args], fn.function_type.outputs.data)
            fn.attributes[BOOL_INPUTS] = DenseArrayBase.from_list(i64, bools)


def _bool_outputs(module: ModuleOp, failures: list[str]) -> None:
    """Boolean program outputs leave the device as the f32 0/1 predicates they are there;
    the graph function returns them as f32 and names them in `spyre.bool_outputs`, so the
    host converts them to torch.bool. A boolean output that is not a predicate is refused."""
    for fn in [o for o in module.walk() if isinstance(o, func.FuncOp)]:
        if fn.body.blocks.first is None or plan.is_kernel(fn):
            continue
        ret = fn.body.block.last_op
        names_attr = fn.attributes.get("spyre.output_names")
        if not isinstance(ret, func.ReturnOp) or not isinstance(names_attr, ArrayAttr):
            continue
        names = [n.data for n in names_attr.data]
        # the leading results update mutated buffers; the named outputs come last
        first = len(ret.arguments) - len(names)
        outputs = list(fn.function_type.outputs.data)
        bools = []
        for i, (name, value) in enumerate(zip(names, ret.arguments[first:])):
            declared = outputs[first + i]
            if not isinstance(declared, TensorType) or str(declared.element_type) != "i1":
                continue
            if isinstance(value.owner, AtenOp):
                continue  # its op is reported unsupported already
            if _element_name(value) != "f32" or not is_predicate(value):
                failures.append(f"program output {name}: a boolean tensor that is not a "
                                "comparison result; return it as a float tensor (.float())")
                continue
            outputs[first + i] = value.type
            bools.append(StringAttr(name))
        if bools:
            fn.function_type = FunctionType.from_lists(fn.function_type.inputs.data, outputs)
            fn.attributes["spyre.bool_outputs"] = ArrayAttr(bools)


def _select(aten: AtenOp, rewriter: LegalizeRewriter, failures: list[str],
            predicate: bool = False) -> None:
    """Replace one ATen op by its Spyre ops, or record why it cannot be; `predicate`: its
    result is a moved predicate."""
    if aten.parent is None:
        return  # erased by the selection of its producer (see `reductions.kept_dim`)
    if not predicate and _needs_f32(aten):
        _select_via_f32(aten, rewriter, failures)
        return
    selector = SELECTORS.get(aten.target.data)
    if selector is None:
        reason = NOT_ON_DEVICE.get(aten.target.data, "no Spyre lowering")
        failures.append(f"{describe(aten)}: {reason}")
        return
    try:
        result = selector(aten, rewriter)
    except Unsupported as exc:
        failures.append(f"{describe(aten)}: {exc}")
        return
    except (ValueError, IndexError):  # a hand-written op short of operands, or a bug
        missing = _missing_tensor_operands(aten)
        if not missing:
            raise
        failures.append(f"{describe(aten)}: its schema's tensor argument(s) "
                        f"{', '.join(missing)} are not among its operands "
                        f"({', '.join(n.data for n in aten.operand_names.data)}); pass "  # type: ignore[attr-defined]
                        "every tensor argument as an operand, named in `operand_names`")
        return
    if predicate or (aten.target.data in _MOVES and all(is_predicate(v) for v in aten.operands)
                     and _element_name(aten.results[0]) == "i1"):
        _mark_moved_predicate(result)
    if isinstance(result, Operation):
        rewriter.replace_op(aten, result)
    elif isinstance(result, list):
        for old, new in zip(aten.results, result):
            if new is not None:
                old.replace_all_uses_with(new)
        rewriter.erase_op(aten)
    else:
        aten.results[0].replace_all_uses_with(result)
        rewriter.erase_op(aten)


def _missing_tensor_operands(aten: AtenOp) -> list[str]:
    """The required tensor arguments of `aten`'s torch schema that are not its operands."""
    import torch

    _, name, overload = [*aten.target.data.split("."), "default"][:3]
    packet = getattr(torch.ops.aten, name, None)
    schema = getattr(getattr(packet, overload, None), "_schema", None)
    if schema is None:
        return []
    given = {n.data for n in aten.operand_names.data}  # type: ignore[attr-defined]
    return [a.name for a in schema.arguments
            if str(a.type) == "Tensor" and a.name not in given]


# ops that move elements without computing: a predicate moved is still one (0.0 / 1.0
# exactly, data moves being exact: design note 63), whatever ops its move took
_MOVES = {"aten.view.default", "aten._unsafe_view.default", "aten.reshape.default",
          "aten.unsqueeze.default", "aten.squeeze.dim", "aten.squeeze.dims",
          "aten.permute.default", "aten.transpose.int", "aten.t.default",
          "aten.expand.default", "aten.slice.Tensor", "aten.select.int",
          "aten.clone.default", "aten.alias.default"}


def _mark_moved_predicate(result: object) -> None:
    """Mark the op that makes a moved predicate's new value (`predicates.is_predicate`)."""
    value = result.results[0] if isinstance(result, Operation) else result
    if isinstance(value, SSAValue) and not is_predicate(value):
        # the op `is_predicate` looks at: the one behind the move's reshapes and row moves
        owner = through(value, PREDICATE_VIEWS).owner
        if isinstance(owner, Operation):
            owner.attributes["spyre.predicate"] = UnitAttr()


def _erase_dead_atens(atens: list[AtenOp]) -> None:
    """Erase ATen ops whose results are all unused (imported ops are pure), users first."""
    for aten in reversed(atens):
        if aten.parent is not None and aten.results and not any(r.uses for r in aten.results):
            aten.detach()
            aten.erase()


def _erase_dead_params(module: ModuleOp) -> None:
    for param in [o for o in module.walk() if isinstance(o, ParamOp)]:
        if not param.result.uses:
            param.detach()
            param.erase()
