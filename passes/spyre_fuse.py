"""spyre-fuse: form kernels so intermediates stay in LX.

Expects: stickified `spyre` compute ops in a `func.func`. Guarantees: every compute op sits
in exactly one `spyre.kernel`; a kernel is at most one matmul (its first op) followed by a
graph of tile ops — elementwise, scalar, casts and reductions over the stick dimension — all
on one row block: each value is the kernel's full rows x cols tile, one row of it (a bias or
norm weight) or one column of it (a row reduction). An op joins the kernel of its producers
when they all sit in one kernel, its shapes fit that kernel's tile, and joining cannot make
two kernels wait for each other; its intermediates then never leave LX. Values used outside
become kernel results (a kernel may have several). Each kernel records `fused` (the FX nodes
it holds) and `reason`.

A `spyre.attention` gets a kernel of its own, together with the row moves around it that can
be folded: the single-use reshapes, `spyre.permute_rows` and `spyre.expand_rows` in front of
q, k and v (the head transposes and a repeat_interleave of key/value heads) and the
permutation after it, whenever the reads and the write stay strided runs of stored rows
(`row_maps.fit`). Those moves then cost no kernel and no LPDDR round trip. Any other
`spyre.permute_rows` / `spyre.expand_rows` is a DMA-only kernel of its own, and so are
`spyre.gather` and `spyre.scatter` (the scatter's kernel is marked `spyre.inplace`: its
result is its table operand's storage). A group that another group already reads takes no
more ops: it is outlined at its last op, which must stay before that reader.

    %a = spyre.matmul %x, %w bias %b ...     // before: two ops, %a goes through LPDDR
    %r = spyre.relu %a ...
    %r = spyre.kernel "k0"(%x, %w, %b) ... { // after: one kernel, %a stays in LX
      ^bb0(...): %a = spyre.matmul ... ; %r = spyre.relu %a ... ; spyre.yield %r }
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from spyrec.dialects.spyre import (
    DATA_MOVES,
    AttentionOp,
    BatchMatmulOp,
    GatherOp,
    KernelOp,
    ScatterOp,
    MatmulOp,
    WindowRowsOp,
    ReshapeOp,
    YieldOp,
)
from spyrec.passes.kernel_analysis import (
    classify,
    foldable_reads,
    foldable_writes,
    rows_cols,
    stored_operands,
    tile_op_kind,
)


def is_compute(op: Operation) -> bool:
    return isinstance(op, (MatmulOp, AttentionOp, BatchMatmulOp, *DATA_MOVES, WindowRowsOp, GatherOp,
                           ScatterOp)) or tile_op_kind(op) is not None



@dataclass(eq=False)
class _Group:
    ops: list[Operation]
    start: int
    end: int
    full: tuple[int, int]  # rows x cols of the kernel's full tile
    kind: str = "tile"  # "tile" (matmul / tile graph), "attention" or "move"
    read: bool = False  # another group reads a value of this one: it is outlined before
    # that reader, so no op after the reader may join it


def _single_use(value: SSAValue) -> bool:
    return value.has_one_use()


def attention_group(op: AttentionOp | BatchMatmulOp,
                    claimed: set[Operation] | None = None) -> list[Operation]:
    """The attention op (or batch matmul) with the row moves it folds: the single-use
    reshapes, permutations and broadcasts in front of q, k and v (lhs and rhs) and the
    permutation after it, as far as the reads and the write stay strided runs of stored
    rows. Moves already `claimed` by an earlier group's write (a batch matmul's) are not
    read again."""
    taken = claimed or set()
    reads = [foldable_reads(op, which, lambda v: not _single_use(v) or v.owner in taken)[0]
             for which in range(stored_operands(op))]
    writes, _ = foldable_writes(op, lambda v: False)
    return [o for chain in reads for o in chain] + [op] + writes


def _root(value: SSAValue) -> SSAValue:
    """Look through reshapes, which alias their operand."""
    while isinstance(value.owner, ReshapeOp):
        value = value.owner.input
    return value


@dataclass(frozen=True)
class SpyreFuse(ModulePass):
    """Group a matmul with its tile-op epilogue, and tile-op DAGs, into kernels."""

    name = "spyre-fuse"

    enabled: bool = True
    """false: every compute op becomes a kernel of its own (attention keeps its folded row
    moves), so every intermediate goes through LPDDR; to measure what fusion gains."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        counter = 0
        for fn in [o for o in op.walk() if isinstance(o, func.FuncOp)]:
            if fn.body.blocks.first is None or "grid" in fn.attributes:
                continue
            for group in self._groups(fn.body.block, self.enabled):
                _outline(group.ops, f"k{counter}")
                counter += 1

    @staticmethod
    def _groups(block: Block, enabled: bool = True) -> list[_Group]:
        groups: list[_Group] = []
        group_of: dict[Operation, _Group] = {}
        position = {op: index for index, op in enumerate(block.ops)}
        plans: dict[Operation, list[Operation]] = {}
        claimed: set[Operation] = set()
        for a in block.ops:
            if isinstance(a, (AttentionOp, BatchMatmulOp)):
                plans[a] = attention_group(a, claimed)
                claimed.update(plans[a])
        folded = {o for members in plans.values() for o in members}
        for index, op in enumerate(block.ops):
            if op in folded and op not in plans:
                continue  # placed with its attention op
            if not is_compute(op):
                continue
            if isinstance(op, (AttentionOp, BatchMatmulOp, *DATA_MOVES, WindowRowsOp, GatherOp,
                               ScatterOp)):
                members = plans.get(op, [op])  # type: ignore[call-overload]
                group = _Group(members, position[members[0]], position[members[-1]],
                               rows_cols(op.results[0]),
                               "attention" if op in plans else "move")
                groups.append(group)
                group_of.update((o, group) for o in members)
                for v in (v for o in members for v in o.operands):
                    if v.owner in group_of and group_of[v.owner] is not group:  # type: ignore[index]
                        group_of[v.owner].read = True  # type: ignore[index]
                continue
            target = None
            if enabled and not isinstance(op, MatmulOp):
                # values of move and attention kernels are inputs to a tile kernel like
                # any stored tensor (the window gathers of a max pool feed one maximum chain)
                owners = {group_of[v.owner] for v in op.operands if v.owner in group_of
                          and group_of[v.owner].kind == "tile"}
                if len(owners) == 1:
                    candidate = owners.pop()
                    if candidate.kind == "tile" and _can_join(op, candidate, group_of):
                        target = candidate
            if target is None:
                # a matmul's tile is its result; a tile op's is its largest value
                values = op.results if isinstance(op, MatmulOp) else [*op.operands, *op.results]
                big = max(values, key=lambda v: math.prod(rows_cols(v)))
                target = _Group([], index, index, rows_cols(big))
                groups.append(target)
            target.ops.append(op)
            target.end = index
            group_of[op] = target
            for v in op.operands:
                if v.owner in group_of and group_of[v.owner] is not target:  # type: ignore[index]
                    group_of[v.owner].read = True  # type: ignore[index]
        return groups


def _can_join(op: Operation, group: _Group, group_of: dict[Operation, _Group]) -> bool:
    """`op` may join `group` without creating a cycle and with a compatible tile shape."""
    if group.read or any(classify(v, group.full) is None for v in [*op.operands, *op.results]):
        return False
    for operand in op.operands:
        root = _root(operand)
        producer = root.owner
        if producer in group_of:
            other = group_of[producer]  # type: ignore[index]
            if other is group:
                if root is not operand:
                    return False  # a reshape of our own value would go through LPDDR
                continue
            if other.end >= group.start:
                return False  # that group may depend on this one
    return True


def _outline(group: list[Operation], name: str) -> None:
    """Move `group` into a new spyre.kernel placed where its last op was."""
    members = set(group)
    inputs: list[SSAValue] = []
    for op in group:
        for operand in op.operands:
            if operand.owner not in members and operand not in inputs:
                inputs.append(operand)
    outputs = [r for op in group for r in op.results
               if any(use.operation not in members for use in r.uses)]
    block = Block(arg_types=[v.type for v in inputs])
    body = Region(block)
    kernel = KernelOp(name, inputs, [r.type for r in outputs], body)
    kernel.attributes["fused"] = ArrayAttr(
        [op.attributes.get("fx_node", StringAttr(op.name)) for op in group])
    has_matmul = isinstance(group[0], MatmulOp)
    if any(isinstance(op, AttentionOp) for op in group):
        reason = ("attention" if len(group) == 1 else
                  "attention with its row moves folded into its reads and write")
    elif any(isinstance(op, BatchMatmulOp) for op in group):
        reason = ("batch matmul" if len(group) == 1 else
                  "batch matmul with its row moves folded into its reads and write")
    elif isinstance(group[0], DATA_MOVES):
        reason = "row move (DMA only)"
    elif isinstance(group[0], WindowRowsOp):
        reason = "window rows (im2col by DMA)"
    elif isinstance(group[0], GatherOp):
        reason = "row gather by index (dma.gather)"
    elif isinstance(group[0], ScatterOp):
        reason = "in-place row update by index (dma.scatter)"
        # the result is the table's own storage (spyre-place-memory aliases them)
        kernel.attributes["spyre.inplace"] = ArrayAttr([IntegerAttr(0, i64)])
    else:
        reason = ("single op" if len(group) == 1 else
                  "matmul with tile-op epilogue" if has_matmul else "tile-op graph")
    kernel.attributes["reason"] = StringAttr(reason)
    Rewriter.insert_op(kernel, InsertPoint.before(group[-1]))
    for out, res in zip(outputs, kernel.results):
        for use in list(out.uses):
            if use.operation not in members:
                use.operation.operands[use.index] = res
        res.name_hint = out.name_hint
    for op in group:
        op.detach()
        block.add_op(op)
    for value, arg in zip(inputs, block.args):
        for use in list(value.uses):
            if use.operation in members:
                use.operation.operands[use.index] = arg
        arg.name_hint = value.name_hint
    block.add_op(YieldOp(outputs))
    layouts = [out.owner.attributes.get("spyre.layout") for out in outputs]  # type: ignore[union-attr]
    if all(layouts):
        kernel.attributes["spyre.layout"] = (
            layouts[0] if len(layouts) == 1 else ArrayAttr(layouts))  # type: ignore[arg-type]
