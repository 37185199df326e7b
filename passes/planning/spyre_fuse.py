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

Beyond that (design note 50): a reshape that only merges or splits leading dims is a row
view, the same tile of a row-tiled kernel, so an op reading a row view of a kernel's value
joins that kernel with the reshape (a linear's [S, N] result viewed as [1, S, N] keeps its
epilogue). An op whose producers sit in several kernels joins the latest of them and reads
the others' results as input tiles (silu(gate) * up in the up matmul's epilogue, a residual
add in the down projection's); a tile-op kernel that no other kernel reads and only that op
uses is absorbed (an RMS norm's second cast of its input). Those joins, and a row reduction
after a matmul (which would make the matmul's tile span whole rows), are decided by the
cost model: the fused kernel's predicted cycles against the kernels it replaces, recorded
in the kernel's `spyre.fusion`. A reduction that loses moves, with the single-use
elementwise chain feeding it, into a kernel of its own.

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
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import DictionaryAttr, ModuleOp, StringAttr
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from spyrec.diagnostics import CompileError
from spyrec.dialects import spyre_plan as plan
from spyrec.dialects.spyre import (
    DATA_MOVES,
    AttentionOp,
    BatchMatmulOp,
    ExpandRowsOp,
    GatherOp,
    KernelOp,
    MatmulOp,
    ReshapeOp,
    ScatterOp,
    WindowRowsOp,
    YieldOp,
)
from spyrec.passes.planning.kernel_analysis import (
    Kind,
    analyze,
    classify,
    foldable_reads,
    foldable_writes,
    is_row_view,
    reshape_root,
    rows_cols,
    stored_operands,
    tile_op_kind,
)
from spyrec.passes.planning.scoring import scored_splits
from spyrec.target import target_named


def is_compute(op: Operation) -> bool:
    """Ops that belong to a kernel (a reshape is a view: it joins a kernel only as the row
    view of a value inside it)."""
    return isinstance(op, (MatmulOp, AttentionOp, BatchMatmulOp, *DATA_MOVES, WindowRowsOp,
                           GatherOp, ScatterOp)) \
        or (tile_op_kind(op) is not None and not isinstance(op, ReshapeOp))



@dataclass(eq=False)
class _Group:
    ops: list[Operation]
    start: int
    end: int
    full: tuple[int, int]  # rows x cols of the kernel's full tile
    kind: str = "tile"  # "tile" (matmul / tile graph), "attention" or "move"
    read: bool = False  # another group reads a value of this one: it is outlined before
    # that reader, so no op after the reader may join it
    decisions: list[str] = field(default_factory=list)  # the cost model's fusion decisions


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


def _views_after_their_kernels(block: Block) -> None:
    """A kernel is placed where its last op was, so a view outside it of one of its
    results that stood between its ops (a reshape of an intermediate the kernel also
    returns, as the importer's collapsed view chains make) would read the kernel before it
    runs: each such view moves to just after its kernel (a view computes nothing; its
    readers are after the kernel, since any among the kernel's ops would have joined it)."""
    position = {op: i for i, op in enumerate(block.ops)}
    for op in list(block.ops):
        if not isinstance(op, ReshapeOp):
            continue
        owner = op.operands[0].owner
        if isinstance(owner, Operation) and owner.parent is block \
                and position[owner] > position[op]:
            op.detach()
            block.insert_op_after(op, owner)
            position = {o: i for i, o in enumerate(block.ops)}
            late = [u.operation for u in op.results[0].uses
                    if u.operation.parent is block and position[u.operation] < position[op]]
            if late:
                raise CompileError(f"spyre-fuse: {late[0].name} reads a view of "
                                   f"{owner.name} before it runs")


def _private_broadcasts(block: Block) -> None:
    """Give each attention or batch matmul operand read through a shared `expand_rows` its
    own copy of the broadcast, so every reader folds it into its reads (a broadcast read
    once per batch) instead of one kernel materialising it for all of them: a device
    transpose's identity expanded over 1,024 batches and read by three batch matmuls was a
    1 GiB tensor written and read three times (hf:pegasus_x)."""
    shared: set[ExpandRowsOp] = set()
    for op in list(block.ops):
        if not isinstance(op, (AttentionOp, BatchMatmulOp)):
            continue
        for which in range(stored_operands(op)):
            expand = op.operands[which].owner
            if isinstance(expand, ExpandRowsOp) and not expand.result.has_one_use():
                copy = expand.clone()
                Rewriter.insert_op(copy, InsertPoint.before(op))
                copy.result.name_hint = expand.result.name_hint
                op.operands[which] = copy.result
                shared.add(expand)
    for expand in shared:
        if not expand.result.uses:  # every reader has its own now
            expand.detach()
            expand.erase()


@dataclass(frozen=True)
class SpyreFuse(ModulePass):
    """Group a matmul with its tile-op epilogue, and tile-op DAGs, into kernels."""

    name = "spyre-fuse"

    enabled: bool | None = None
    """false: every compute op becomes a kernel of its own (attention keeps its folded row
    moves), so every intermediate goes through LPDDR; to measure what fusion gains. Unset:
    the module's `fuse` option (`spyre.options`, spyre-set-options)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        options = plan.options_of(op).override(fuse=self.enabled)
        counter = 0
        for fn in [o for o in op.walk() if isinstance(o, func.FuncOp)]:
            if fn.body.blocks.first is None or plan.is_kernel(fn):
                continue
            _private_broadcasts(fn.body.block)
            position = {o: i for i, o in enumerate(fn.body.block.ops)}
            for group in self._groups(fn.body.block, options):
                # program order (absorbed groups and row views join out of order), the
                # matmul first
                ordered = sorted(group.ops, key=lambda o: (not isinstance(o, MatmulOp),
                                                           position[o]))
                kernel = _outline(ordered, f"k{counter}")
                if group.decisions:
                    plan.FUSION.set(kernel, tuple(group.decisions))
                counter += 1
            _views_after_their_kernels(fn.body.block)

    @staticmethod
    def _groups(block: Block, options: plan.PlanningOptions) -> list[_Group]:
        groups: list[_Group] = []
        group_of: dict[Operation, _Group] = {}
        position = {op: index for index, op in enumerate(block.ops)}
        plans: dict[Operation, list[Operation]] = {}
        claimed: set[Operation] = set()
        costs = _Costs(options)
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
                members = plans.get(op, [op])
                group = _Group(members, position[members[0]], position[members[-1]],
                               rows_cols(op.results[0]),
                               "attention" if op in plans else "move")
                groups.append(group)
                group_of.update((o, group) for o in members)
                for v in (v for o in members for v in o.operands):
                    owner = reshape_root(v).owner  # a reshape outside kernels reads its operand
                    if owner in group_of and group_of[owner] is not group:  # type: ignore[index]
                        group_of[owner].read = True  # type: ignore[index]
                continue
            target = None
            if options.fuse and not isinstance(op, MatmulOp):
                target = _join(op, groups, group_of, position, costs)
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
                owner = reshape_root(v).owner
                if owner in group_of and group_of[owner] is not target:  # type: ignore[index]
                    group_of[owner].read = True  # type: ignore[index]
        return groups


class _Costs:
    """Predicted cycles of candidate kernels (the cost model's best split and tiling under
    the user's options, as spyre-partition-cores and spyre-tile will plan them), by the
    kernel's shape; a probe kernel is built from clones of the ops and dropped."""

    def __init__(self, options: plan.PlanningOptions) -> None:
        self.options = options
        self.by_shape: dict[object, float] = {}

    def cycles(self, ops: list[Operation]) -> float:
        members = set(ops)
        inputs = _external_inputs(ops)
        outputs = [r for op in ops for r in op.results
                   if not r.uses or any(u.operation not in members for u in r.uses)]
        block = Block(arg_types=[v.type for v in inputs])
        mapping: dict[SSAValue, SSAValue] = dict(zip(inputs, block.args))
        for op in ops:
            clone = op.clone(value_mapper=mapping)
            block.add_op(clone)
            mapping.update(zip(op.results, clone.results))
        block.add_op(YieldOp([mapping[o] for o in outputs]))
        probe = KernelOp("probe", inputs, [o.type for o in outputs], Region(block))
        try:
            shape = analyze(probe).shape()
        except CompileError:
            return math.inf  # not a kernel the back end can build
        finally:
            probe.erase(safe_erase=False)
        if shape not in self.by_shape:
            ranked = scored_splits(shape, target_named(self.options.target), self.options)
            self.by_shape[shape] = ranked[0][0] if ranked else math.inf
        return self.by_shape[shape]


def _views_to(value: SSAValue, group: _Group,
              group_of: dict[Operation, _Group]) -> list[Operation] | None:
    """The reshapes between `value` and a value of `group` it views, when each only merges
    or splits leading dims (a row view: the same tile of a row-tiled kernel) and has no
    other use; None when `value` does not view such a value."""
    chain: list[Operation] = []
    while isinstance(value.owner, ReshapeOp):
        reshape = value.owner
        if not is_row_view(reshape) or reshape in group_of or not value.has_one_use():
            return None
        chain.insert(0, reshape)
        value = reshape.input
    return chain if value.owner in group_of and group_of[value.owner] is group else None  # type: ignore[index]


def _absorbable(other: _Group, op: Operation, target: _Group,
                group_of: dict[Operation, _Group]) -> bool:
    """May `other` (a tile group no other group reads, without matmul) move into `target`
    at `op`? Its results must be used by `op` or `target` alone (through row views), and
    nothing it reads may come from `target`: then placing it later changes no order."""
    if other.kind != "tile" or other.read or isinstance(other.ops[0], MatmulOp):
        return False
    members = set(other.ops)
    for o in other.ops:
        for v in o.operands:
            owner = reshape_root(v).owner
            if owner in group_of and group_of[owner] is target:  # type: ignore[index]
                return False
        for r in o.results:
            for use in r.uses:
                user = use.operation
                while isinstance(user, ReshapeOp) and is_row_view(user) and \
                        user.results[0].has_one_use():
                    user = next(iter(user.results[0].uses)).operation
                if user is not op and user not in members:
                    return False
    return True


def _join(op: Operation, groups: list[_Group], group_of: dict[Operation, _Group],
          position: dict[Operation, int], costs: _Costs) -> _Group | None:
    """The tile group `op` joins (taking the row views and absorbed groups along), or None.

    `op` joins the latest of its producers' tile groups. The other producers' groups must
    end before it starts (their values are kernel inputs) or be absorbed: a group of tile
    ops no other kernel reads moves in whole (an RMS norm's cast of its input joins its
    reduction). When the join reads another kernel's full tensor beside a matmul (a SwiGLU
    product or a residual add in a matmul's epilogue), absorbs a group, or puts a row
    reduction after a matmul, the cost model decides: the fused kernel's predicted cycles
    against the kernels it replaces (recorded in the kernel's `spyre.fusion`)."""
    owners = {group_of[reshape_root(v).owner] for v in op.operands  # type: ignore[index]
              if reshape_root(v).owner in group_of
              and group_of[reshape_root(v).owner].kind == "tile"}  # type: ignore[index]
    if not owners:
        return None
    target = max(owners, key=lambda g: g.end)
    absorbed = [g for g in owners if g is not target and _absorbable(g, op, target, group_of)]
    views: list[Operation] = []
    for v in op.operands:
        root = reshape_root(v)
        if root.owner in group_of and group_of[root.owner] in (target, *absorbed) and root is not v:  # type: ignore[index]
            chain = _views_to(v, group_of[root.owner], group_of)  # type: ignore[index]
            if chain is None:
                return None  # a reshape of our own value that is not a row view
            views.extend(o for o in chain if o not in views)
    if target.read or any(classify(v, target.full) is None
                          for v in [*op.operands, *op.results]):
        return None
    for g in absorbed:
        if any(classify(v, target.full) is None for o in g.ops for v in (*o.operands, *o.results)):
            return None
    for operand in op.operands:
        producer = reshape_root(operand).owner
        if producer in group_of:
            other = group_of[producer]  # type: ignore[index]
            if other is not target and other not in absorbed and other.end >= target.start \
                    and _depends(other, target, position):
                return None  # that group reads this one: joining would make a cycle
    has_matmul = isinstance(target.ops[0], MatmulOp)
    reads_other = any(reshape_root(v).owner in group_of
                      and group_of[reshape_root(v).owner]  # type: ignore[index]
                      not in (target, *absorbed)
                      and classify(v, target.full) is Kind.FULL for v in op.operands)
    reduce = tile_op_kind(op) is not None and tile_op_kind(op)[0] == "reduce"  # type: ignore[index]
    if absorbed or (has_matmul and (reads_other or reduce)):
        verdict = _worth_it(op, views, target, absorbed, groups, group_of, position, costs)
        if verdict is None:
            return None
        target = verdict
    for g in absorbed:
        target.ops.extend(g.ops)
        target.start = min(target.start, g.start)
        group_of.update((o, target) for o in g.ops)
        groups.remove(g)
    for reshape in views:
        target.ops.append(reshape)
        group_of[reshape] = target
    return target


def _depends(other: _Group, target: _Group, position: dict[Operation, int]) -> bool:
    """Does an op of `other` read, directly or through other ops, a value of `target`?"""
    members = set(target.ops)
    seen: set[Operation] = set()
    stack = [v.owner for o in other.ops for v in o.operands]
    while stack:
        producer = stack.pop()
        if not isinstance(producer, Operation) or producer in seen:
            continue
        seen.add(producer)
        if producer in members:
            return True
        if position.get(producer, -1) > target.start:
            stack.extend(v.owner for v in producer.operands)
    return False


def _prefix(op: Operation, target: _Group, group_of: dict[Operation, _Group]) -> list[Operation]:
    """The ops of `target` that feed the row reduction `op` through one-operand elementwise
    functions (casts, views, unary and scalar ops, x * x) and are used by no other kernel's
    op: moved with the reduction when it becomes a kernel of its own (an RMS norm's cast
    and square after a residual add stay with the norm)."""
    chain: list[Operation] = []
    value = op.operands[0]
    while True:
        producer = value.owner
        if not isinstance(producer, Operation) or producer not in target.ops or \
                producer is target.ops[0]:
            break
        kind = tile_op_kind(producer)
        distinct = set(producer.operands)
        if kind is None or not (kind[0] in ("cast", "view", "unary", "scalar")
                                or (kind[0] == "binary" and len(distinct) == 1)):
            break
        if any(u.operation not in chain and u.operation is not op
               and u.operation in group_of for r in producer.results for u in r.uses):
            break  # another kernel op reads it: it is stored anyway
        chain.insert(0, producer)
        value = producer.operands[0]
    return chain


def _worth_it(op: Operation, views: list[Operation], target: _Group, absorbed: list[_Group],
              groups: list[_Group], group_of: dict[Operation, _Group],
              position: dict[Operation, int], costs: _Costs) -> _Group | None:
    """The cost model's decision on a join: the fused kernel's predicted cycles against the
    kernels it replaces. A row reduction after a matmul is weighed against moving it, with
    the single-use elementwise chain feeding it, into a kernel of its own (the matmul
    kernel's tile would otherwise span whole rows). Records the decision on the group `op`
    joins (`target`, or the reduction's own group) and returns it; None: `op` starts one."""
    fused = costs.cycles([*target.ops, *(o for g in absorbed for o in g.ops), *views, op])
    name = _fx_name(op)
    prefix: list[Operation] = []
    if tile_op_kind(op)[0] == "reduce" and isinstance(target.ops[0], MatmulOp):  # type: ignore[index]
        prefix = _prefix(op, target, group_of)
        rest = [o for o in target.ops if o not in prefix]
        split = costs.cycles(rest) + costs.cycles([*prefix, *views, op])
    else:
        split = costs.cycles(target.ops) + sum(costs.cycles(g.ops) for g in absorbed) + \
            costs.cycles([*views, op])
    if fused <= split:
        target.decisions.append(
            f"joined {name}: {fused:.0f} predicted cycles fused against {split:.0f} as "
            f"{1 + len(absorbed) + 1} kernels")
        return target
    if prefix:  # the reduction and its feeding chain become a kernel of their own
        for o in prefix:
            target.ops.remove(o)
        target.end = max(position[o] for o in target.ops)
        new = _Group(prefix, position[prefix[0]], position[prefix[-1]], target.full)
        new.decisions.append(
            f"row reduction {name} kept out of the matmul kernel: {split:.0f} predicted "
            f"cycles as two kernels against {fused:.0f} fused")
        groups.append(new)
        group_of.update((o, new) for o in prefix)
        target.read = True
        return new
    target.decisions.append(
        f"did not join {name}: {fused:.0f} predicted cycles fused against {split:.0f} apart")
    return None


def _external_inputs(ops: list[Operation]) -> list[SSAValue]:
    """The values `ops` read that none of them defines, in first-use order."""
    members = set(ops)
    inputs: list[SSAValue] = []
    for op in ops:
        for operand in op.operands:
            if operand.owner not in members and operand not in inputs:
                inputs.append(operand)
    return inputs


def _outline(group: list[Operation], name: str) -> KernelOp:
    """Move `group` into a new spyre.kernel placed where its last op was."""
    members = set(group)
    inputs = _external_inputs(group)
    outputs = [r for op in group for r in op.results
               if any(use.operation not in members for use in r.uses)]
    block = Block(arg_types=[v.type for v in inputs])
    body = Region(block)
    kernel = KernelOp(name, inputs, [r.type for r in outputs], body)
    plan.FUSED.set(kernel, tuple(_fx_name(op) for op in group))
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
        plan.INPLACE.set(kernel, (0,))
    else:
        reason = ("single op" if len(group) == 1 else
                  "matmul with tile-op epilogue" if has_matmul else "tile-op graph")
    plan.REASON.set(kernel, reason)
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
    layouts = [out.op.attributes.get(plan.LAYOUT.key) for out in outputs]
    if all(isinstance(a, DictionaryAttr) for a in layouts):  # the results' (spyre-stickify)
        plan.LAYOUT.set(kernel, tuple(a for a in layouts if isinstance(a, DictionaryAttr)))
    return kernel


def _fx_name(op: Operation) -> str:
    """The FX node an op came from (its op name for ops the compiler made)."""
    name = op.attributes.get("fx_node")
    return name.data if isinstance(name, StringAttr) else op.name
