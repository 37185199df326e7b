"""spyre-place-memory: LPDDR addresses for tensors, LX offsets for tiles.

Expects: the graph function with `spyre.launch` ops and their KTIR kernels (after
convert-spyre-to-ktir). Guarantees:
- every graph tensor has `spyre.addr`, a 128-byte aligned device virtual address: inputs,
  outputs and intermediates in segment 0, weights in segment 1, never segment 7 (reserved
  for programs). Intermediates are placed by liveness with first-fit reuse: a buffer whose
  last reader has run is free for later launches, so peak scratch follows the live set.
- every tile-producing op of a KTIR kernel (`ktdp.load`, `linalg.fill`, `linalg.generic`)
  has `lx_slots = array<i64: a, b>`: two 128-byte aligned LX offsets (ping-pong buffers, so
  the next tile's DMA can fill one while compute reads the other); a load that runs once
  per core (a resident matmul block whose loops have one trip) gets one slot (a = b), and
  so does every buffer with `double_buffer=false`. Elementwise steps that
  keep the element type reuse their input's slots in place when the input has no other use
  and is defined in the same loop body;
  the matmul and the row reductions accumulate in place in their `linalg.fill` buffer, and
  a `ktdp.inter_tile_reduce` sums its partial in place (ring.reduce, note 59); any
  other computed tile takes the slots of a dead computed tile of the same loop body and
  geometry (liveness reuse; loads always get their own, so prefetches never wait). The kernel's LX
  total is recorded as `spyre.lx_bytes` and checked against the target's usable LX.
- a load or store through an indirect access tile also has `lx_index_slots`: two slots for
  the sticks holding its int32 indices (dma.gather / dma.scatter read them from LX).
- a launch with `spyre.inplace` (an in-place scatter into a buffer) gets its operand's
  address for its result: the KV cache is updated where it lives.
- a result kept in LX (`spyre.lx_results`, note 61) gets no LPDDR buffer: its `spyre.addr`
  is the LX byte offset of its slices; a kernel with `spyre.lx_reserved` keeps its tiles
  below that offset, and its loads of the kept tensor get no slots (they read it in place).

    %t = ktdp.load %tile : ... -> tensor<64x128xf16>                   // before
    %t = ktdp.load %tile {lx_slots = array<i64: 0, 16384>} : ...       // after
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.traits import SymbolTable

from spyrec.diagnostics import CompileError
from spyrec.dialects import spyre_plan as plan
from spyrec.dialects.ktdp import (
    ConstructAccessTileOp,
    ConstructDistributedMemoryViewOp,
    ConstructMemoryViewOp,
    LoadOp,
    StoreOp,
)
from spyrec.dialects.ktdp_indirect import ConstructIndirectAccessTileOp
from spyrec.dialects.ktdp_intertile import InterTileProduceOp, InterTileReduceOp, YieldPartialOp
from spyrec.dialects.spyre import LaunchOp, ParamOp, ReshapeOp
from spyrec.passes.graph.spyre_stickify import DEVICE_ITEMSIZE, layout_of
from spyrec.passes.ktir.ktir_indirect import index_slot_bytes
from spyrec.passes.ktir.ktir_tiles import tile_dims
from spyrec.passes.planning.kernel_analysis import kept_in_lx, lx_tile_bytes
from spyrec.target import SpyreTarget, round_up

ACTIVATION_SEGMENT = 0
WEIGHT_SEGMENT = 1


def device_bytes(value: SSAValue, target: SpyreTarget) -> int:
    """Bytes of the stick-padded device copy of a graph tensor."""
    layout = layout_of(value)
    size = DEVICE_ITEMSIZE[layout.device_dtype]
    for d in layout.padded_shape:
        size *= d
    return round_up(size, target.stick_bytes)


def tile_bytes(value: SSAValue, target: SpyreTarget) -> int:
    """LX bytes of a tile (`kernel_analysis.lx_tile_bytes`)."""
    ttype = value.type
    assert isinstance(ttype, TensorType)
    return lx_tile_bytes(str(ttype.element_type), *tile_dims(value), target)


class FirstFit:
    """A first-fit allocator over one segment with 128-byte alignment."""

    def __init__(self, base: int, limit: int, align: int):
        self.base, self.limit, self.align = base, limit, align
        self.live: dict[int, int] = {}  # offset -> size
        self.high = 0

    def alloc(self, size: int, what: str) -> int:
        size = round_up(size, self.align)
        offset = 0
        for start, length in sorted(self.live.items()):
            if offset + size <= start:
                break
            offset = max(offset, start + length)
        if offset + size > self.limit:
            raise CompileError(f"{what}: {size} B does not fit the {self.limit} B segment")
        self.live[offset] = size
        self.high = max(self.high, offset + size)
        return self.base + offset

    def free(self, addr: int) -> None:
        del self.live[addr - self.base]


def _addr_attr(addr: int) -> IntegerAttr:
    return IntegerAttr(addr, i64)


@dataclass(frozen=True)
class SpyrePlaceMemory(ModulePass):
    """Place graph tensors in LPDDR and kernel tiles in LX."""

    name = "spyre-place-memory"

    double_buffer: bool | None = None
    """Two LX slots per streamed tile buffer (ping-pong); false: one, nothing overlaps.
    Unset: the module's `double_buffer` option (`spyre.options`), as the kernels were
    planned."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = plan.target_of(op)
        buffers = plan.options_of(op).override(double_buffer=self.double_buffer).buffers
        for fn in [o for o in op.body.block.ops if isinstance(o, func.FuncOp)]:
            if plan.is_kernel(fn):
                _place_lx(fn, target, buffers)
            elif fn.body.blocks.first is not None:
                _place_lpddr(fn, target)


def _place_lpddr(fn: func.FuncOp, target: SpyreTarget) -> None:
    seg = target.segment_bytes
    acts = FirstFit(ACTIVATION_SEGMENT * seg, seg, target.stick_bytes)
    weights = FirstFit(WEIGHT_SEGMENT * seg, seg, target.stick_bytes)
    block = fn.body.block
    outputs = set(block.last_op.operands) if block.last_op else set()
    addr: dict[SSAValue, int] = {}
    arg_attrs = []
    for arg in block.args:
        addr[arg] = acts.alloc(device_bytes(arg, target), f"input %{arg.name_hint}")
        old = fn.arg_attrs.data[arg.index].data if fn.arg_attrs else {}
        arg_attrs.append(DictionaryAttr({**old, "spyre.addr": _addr_attr(addr[arg])}))
    fn.arg_attrs = ArrayAttr(arg_attrs)
    # a reshape aliases its operand: uses of it are uses of the buffer it views
    root: dict[SSAValue, SSAValue] = {}
    for inner in block.ops:
        if isinstance(inner, ReshapeOp):
            root[inner.result] = root.get(inner.input, inner.input)
    returned = {root.get(v, v) for v in outputs}
    last_use: dict[SSAValue, Operation] = {}
    for inner in block.ops:
        for operand in inner.operands:
            last_use[root.get(operand, operand)] = inner
    for inner in block.ops:
        if isinstance(inner, ParamOp):
            a = weights.alloc(device_bytes(inner.result, target), f"weight {inner.param_name.data}")
            inner.attributes["spyre.addr"] = _addr_attr(a)
            addr[inner.result] = a  # a reshape of a weight views it
        elif isinstance(inner, ReshapeOp):
            addr[inner.result] = addr[root[inner.result]]
            inner.attributes["spyre.addr"] = _addr_attr(addr[inner.result])
        elif isinstance(inner, LaunchOp):
            aliased = inplace_results(inner)
            for r in inner.results:
                if r.index in aliased:  # an in-place update: the operand's own storage
                    addr[r] = addr[root.get(aliased[r.index], aliased[r.index])]
                    continue
                if kept_in_lx(r):  # in its cores' LX until its one reader has run (note 61)
                    addr[r] = lx_offset(inner)
                    continue
                addr[r] = acts.alloc(device_bytes(r, target), f"result of @{inner.callee}")
            inner.attributes["spyre.addr"] = ArrayAttr([_addr_attr(addr[r]) for r in inner.results])
            for buffer in {root.get(v, v) for v in inner.operands}:
                intermediate = (isinstance(buffer.owner, LaunchOp) and buffer not in returned
                                and isinstance(buffer, OpResult)
                                and buffer.index not in inplace_results(buffer.owner)
                                and not kept_in_lx(buffer))
                if intermediate and last_use[buffer] is inner:
                    acts.free(addr[buffer])
    fn.attributes["spyre.lpddr_bytes"] = DictionaryAttr({
        "activations": IntegerAttr(acts.high, i64), "weights": IntegerAttr(weights.high, i64)})


def reads_lx(load: LoadOp) -> bool:
    """Whether `load` reads a tensor kept in LX (a distributed view of ct_local parts)."""
    tile = load.tile.owner
    if not isinstance(tile, ConstructAccessTileOp) or \
            not isinstance(tile.base.owner, ConstructDistributedMemoryViewOp):
        return False
    # a distributed view of LPDDR tensors (a hand-written kernel's) is loaded by DMA
    return all(isinstance(p.owner, ConstructMemoryViewOp) and
               p.owner.memory_space.kind == "ct_local" for p in tile.base.owner.parts)


def lx_reserved(fn: func.FuncOp) -> tuple[int, int] | None:
    """(LX byte offset, bytes) a KTIR kernel reserves for the slices of a tensor kept in LX
    (`spyre.lx_reserved`, note 61), None when it keeps none."""
    reserved = fn.attributes.get("spyre.lx_reserved")
    if not isinstance(reserved, DenseArrayBase):
        return None
    offset, size = (int(v) for v in reserved.get_values())
    return offset, size


def lx_offset(launch: LaunchOp) -> int:
    """The LX byte offset of the slices a launch keeps in LX: its kernel's reservation."""
    module = launch.get_toplevel_object()
    assert isinstance(module, Operation)
    kernel = SymbolTable.lookup_symbol(module, launch.callee)
    assert isinstance(kernel, func.FuncOp)
    reserved = lx_reserved(kernel)
    assert reserved is not None
    return reserved[0]


def executions(op: Operation) -> int | None:
    """How often `op` runs on one core: the product of the trip counts of the `scf.for`
    loops around it (None when a bound is not a constant)."""
    count = 1
    parent = op.parent_op()
    while isinstance(parent, scf.ForOp):
        bounds = []
        for value in (parent.lb, parent.ub, parent.step):
            owner = value.owner
            if not isinstance(owner, arith.ConstantOp) or not isinstance(owner.value, IntegerAttr):
                return None
            bounds.append(owner.value.value.data)
        lb, ub, step = bounds
        count *= max(0, -(-(ub - lb) // step))
        parent = parent.parent_op()
    return count


def _place_lx(fn: func.FuncOp, target: SpyreTarget, buffers: int = 2) -> None:
    """Place `fn`'s tiles in LX (`assign_lx_slots`) and refuse a kernel that overflows. A
    kernel whose tiles fit only with one slot per tile buffer (a hand-written kernel's own
    tiling: a 512 KB row of a wide softmax) gets one (`spyre.single_buffered`): the next
    tile's DMA then waits for this one's compute, slower but the same result."""
    total = assign_lx_slots(fn, target, buffers)
    top, why = target.lx_usable_bytes, ""
    if (reserved := lx_reserved(fn)) is not None:  # a tensor's slices kept in LX (note 61)
        top, size = reserved
        why = f" below the {size} B slice of a tensor kept in LX at {top}"
    if total > top and buffers == 2:
        double = total
        total = assign_lx_slots(fn, target, 1)
        if total <= top:
            fn.attributes["spyre.single_buffered"] = UnitAttr()
        else:
            raise CompileError(
                f"kernel @{fn.sym_name.data}: its tiles need {double} B of LX with double "
                f"buffering ({total} B with one buffer each) but only {top} B are "
                f"usable{why}{_largest_tiles(fn, target)}; use smaller tiles (rerun "
                "spyre-tile, or tile the kernel's loads more finely)")
    if total > top:
        raise CompileError(
            f"kernel @{fn.sym_name.data}: its tiles need {total} B of LX"
            f"{' with double buffering' if buffers == 2 else ''} but only {top} B are "
            f"usable{why}{_largest_tiles(fn, target)}; use smaller tiles (rerun spyre-tile, "
            "or tile the kernel's loads more finely)")
    fn.attributes["spyre.lx_bytes"] = IntegerAttr(total, i64)


def _largest_tiles(fn: func.FuncOp, target: SpyreTarget) -> str:
    """The three largest tiles given LX slots, for the overflow message."""
    tiles = sorted(((tile_bytes(op.results[0], target), op) for op in fn.walk()
                    if "lx_slots" in op.attributes), key=lambda t: -t[0])[:3]
    named = [f"%{op.results[0].name_hint or op.name} ({op.results[0].type}, {size} B)"
             for size, op in tiles]
    return f" (largest: {', '.join(named)})" if named else ""


def assign_lx_slots(fn: func.FuncOp, target: SpyreTarget, buffers: int = 2) -> int:
    """Two slots per tile buffer (one when `buffers` is 1, and for a load that runs once per
    core: a resident block outside every loop), in place for elementwise steps and
    accumulation, and reused by liveness: a computed tile (`linalg.fill`/`linalg.generic`
    result) takes the slots of a computed tile of the same loop body and the same geometry
    (rows and LX row pitch) whose last reader has run, if it is not carried to the next
    iteration. The same geometry keeps the corelets' row halves where they were, so
    spyre-schedule-dataflow's dependences, kept per slot and half, still see every reuse. Loads
    neither take nor give slots, so the DMA of the next tile never waits for this one's temporaries.
    Sets `lx_slots` and returns the LX bytes used."""
    slots: dict[SSAValue, tuple[int, int]] = {}
    next_free = 0
    live = _LiveRanges(fn)
    owners: dict[tuple[int, int], list[SSAValue]] = {}  # a slot pair's values (aliases)
    shapes: dict[tuple[int, int], tuple[int, int]] = {}

    def fresh(value: SSAValue, copies: int = buffers) -> tuple[int, int]:
        nonlocal next_free
        size = tile_bytes(value, target)
        pair = (next_free, next_free + size) if copies == 2 else (next_free, next_free)
        next_free += copies * size
        shapes[pair] = _geometry(value, target)
        return pair

    def reuse(value: SSAValue, at: Operation) -> tuple[int, int]:
        """A dead pair of `at`'s block with `value`'s geometry, else fresh slots."""
        geometry, block = _geometry(value, target), at.parent_block()
        if not live.local(value):
            return fresh(value)
        for pair, vals in owners.items():  # insertion order: deterministic
            if shapes[pair] == geometry and all(
                    live.end(v) < live.pos[at] and v.owner.parent_block() is block for v in vals):
                del owners[pair]  # its old values are dead: the pair starts a new life
                return pair
        return fresh(value)

    for inner in fn.walk():
        pair: tuple[int, int] | None = None
        if isinstance(inner, LoadOp):
            if reads_lx(inner):  # read where it is kept, in the core's LX (note 61)
                continue
            pair = fresh(inner.results[0], 1 if executions(inner) == 1 else buffers)
        elif isinstance(inner, linalg.FillOp):
            pair = reuse(inner.results[0], inner)
        elif isinstance(inner, linalg.GenericOp):
            init, src = inner.outputs[0], inner.inputs[0]
            if init in slots:  # matmul and reductions accumulate into their init
                pair = slots[init]
            elif src.type == inner.results[0].type and src.has_one_use() and src in slots \
                    and src.owner.parent_block() is inner.parent_block():
                # elementwise, same shape and type: in place; not over a tile of an outer
                # body (a row operand loaded once before the loops), which the next
                # iteration reads again
                pair = slots[src]
            else:
                pair = reuse(inner.results[0], inner)
        elif isinstance(inner, InterTileReduceOp):
            # summed in place by ring.reduce (note 59): the result lives in the partial's
            # slots, which stay taken while either is live
            produce = inner.future.owner
            assert isinstance(produce, InterTileProduceOp)
            yielded = produce.body.block.last_op
            assert yielded is not None
            pair = slots[yielded.operands[0]]
        elif isinstance(inner, scf.ForOp):
            for init, res, barg in zip(inner.iter_args, inner.results, inner.body.block.args[1:]):
                slots[res] = slots[barg] = slots[init]
                owners.setdefault(slots[init], []).extend([res, barg])
            continue
        if pair is None:
            continue
        slots[inner.results[0]] = pair
        if not isinstance(inner, LoadOp):  # a load's slots wait for the next tile's DMA
            owners.setdefault(pair, []).append(inner.results[0])
        inner.attributes["lx_slots"] = DenseArrayBase.from_list(i64, list(pair))
        if isinstance(inner, LoadOp) and (index_bytes := gather_index_bytes(inner, target)):
            inner.attributes["lx_index_slots"] = DenseArrayBase.from_list(
                i64, [next_free, next_free + index_bytes])
            next_free += 2 * index_bytes
    for store in [o for o in fn.walk() if isinstance(o, StoreOp)]:  # dma.scatter's indices
        if index_bytes := gather_index_bytes(store, target):
            store.attributes["lx_index_slots"] = DenseArrayBase.from_list(
                i64, [next_free, next_free + index_bytes])
            next_free += 2 * index_bytes
    return next_free


def _geometry(value: SSAValue, target: SpyreTarget) -> tuple[int, int]:
    """A tile's rows and LX row pitch."""
    rows = tile_dims(value)[0]
    return rows, tile_bytes(value, target) // max(rows, 1)


class _LiveRanges:
    """Program positions of a kernel's ops (pre-order walk) and where each tile value's
    life ends in the block that defines it: a use nested in a loop of that block keeps the
    value live to the loop's end; a use outside the block (a loop result, the next
    iteration through `scf.yield`) keeps it live for good. Uses through ops that get no
    slots of their own (views, casts) count as uses of the value."""

    FOREVER = 1 << 62

    def __init__(self, fn: func.FuncOp):
        self.pos: dict[Operation, int] = {}
        self.last: dict[Operation, int] = {}
        for i, op in enumerate(fn.walk()):
            self.pos[op] = i
        for op in reversed(list(fn.walk())):  # an op's last position covers its body
            self.last[op] = max([self.pos[op]] + [self.last[o] for r in op.regions
                                                  for b in r.blocks for o in b.ops])
        self._end: dict[SSAValue, int] = {}

    def _uses(self, value: SSAValue) -> list[Operation]:
        out, todo, seen = [], [value], set()
        while todo:
            v = todo.pop()
            for use in v.uses:
                op = use.operation
                if op in seen:
                    continue
                seen.add(op)
                out.append(op)
                if isinstance(op, YieldPartialOp):
                    # a partial lives until its delivery op, whose result (summed in place,
                    # note 59) is the same slot: the future's uses are the partial's
                    produce = op.parent_op()
                    assert produce is not None
                    todo.extend(produce.results)
                elif not isinstance(op, (LoadOp, StoreOp, linalg.FillOp, linalg.GenericOp,
                                         scf.ForOp, scf.YieldOp)):
                    todo.extend(op.results)  # a view or cast of the tile
        return out

    def end(self, value: SSAValue) -> int:
        if value not in self._end:
            block = value.owner.parent_block() if isinstance(value.owner, Operation) else None
            end = self.pos[value.owner] if isinstance(value.owner, Operation) else self.FOREVER
            for op in self._uses(value):
                anc = op
                while anc is not None and anc.parent_block() is not block:
                    anc = anc.parent_op()
                if anc is None or isinstance(op, (scf.YieldOp, scf.ForOp)):
                    end = self.FOREVER
                    break
                end = max(end, self.last[anc])
            self._end[value] = end
        return self._end[value]

    def local(self, value: SSAValue) -> bool:
        """The value dies within its block's iteration (it is not carried or returned)."""
        return self.end(value) < self.FOREVER


def gather_index_bytes(access: LoadOp | StoreOp, target: SpyreTarget) -> int:
    """LX bytes for the index sticks of a load or store through an indirect tile (0 for a
    direct one): `ktir_indirect.index_slot_bytes`."""
    tile = access.tile.owner
    if not isinstance(tile, ConstructIndirectAccessTileOp):
        return 0
    return index_slot_bytes(tile, target.stick_bytes)


def inplace_results(launch: LaunchOp) -> dict[int, SSAValue]:
    """{result index: operand} of a launch whose results are stored in place of operands
    (`spyre.inplace`, one operand index per result: the in-place scatter of a KV cache)."""
    return {i: launch.operands[a] for i, a in enumerate(plan.INPLACE.get(launch) or ())}


def _is(attr: object, name: str) -> bool:
    return isinstance(attr, StringAttr) and attr.data == name
