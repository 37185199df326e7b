"""The KTIR reference interpreter: runs a kernel over its whole grid, all cores at once.

    run = run_kernel(text, "add", {"a": a, "b": b, "c": np.zeros_like(a)})
    run.outputs["c"]          # the array after the kernel ran
    run.latency.cycles        # estimated from spyrec's SpyreTarget

**Memory.** A `Device` has a flat byte-addressed LPDDR and a 2 MB LX per core. Arrays passed
to `run_kernel` for `index` parameters are placed in LPDDR at 128-byte boundaries and the
kernel receives their *element* offsets (KTIR view offsets count elements of the view's
dtype); ints are passed through, so a caller can place arrays itself with `Device.place`.
Views over `ct_local` memory must fit their core's LX.

**Concurrency.** Each core of the grid runs as a Python generator over its own xDSL
`Interpreter` (one `KtirFunctions` per core). A core pauses before every `ktdp.load`,
`ktdp.store` and inter-tile op; the scheduler resumes the cores round-robin, one step each
per round, so memory accesses of different cores interleave as they would on hardware and a
kernel that relies on core order (a race) misbehaves here too. Inter-tile delivery waits
until the producers it depends on have produced; if every unfinished core waits, that is a
deadlock and an error.

**Errors.** Arrays that do not fit the kernel's views of their parameters (dtype, shape,
reach) are refused before the run (`ktir_args.py`). Accesses outside a view, its coordinate
set, its memory or the array its view is built on, LX overflow, a consume with no single
source, deadlocks: all raise `KtirError` naming the core, the function, the op and (for
accesses) the coordinate.

**Latency.** Per core: LPDDR bytes (whole sticks) over the core's share of LPDDR bandwidth,
ring bytes over the ring bandwidth, matmul flops over the PT arrays' peak, and elementwise
bytes over the SFUs' throughput (transcendentals cost more), added up; the kernel takes as
long as its slowest core.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    IndexType,
    ModuleOp,
    TensorType,
)
from xdsl.dialects.func import FuncOp
from xdsl.interpreter import Interpreter
from xdsl.ir import Block, Operation, SSAValue
from xdsl.printer import Printer
from xdsl.traits import SymbolTable

from spyrec.dialects.ktdp import (
    InterTileConsumeOp,
    InterTileProduceOp,
    InterTileReduceOp,
    RuntimeArgType,
)
from spyrec.dialects.ktdp_parse import KtirSourceError, parse_ktir
from spyrec.dialects.ktdp_values import (
    MASKED_KERNEL,
    STICK_BYTES,
    KtirError,
    Lpddr,
    Lx,
    PlacedArray,
    Undefined,
    core_coords,
    group_tiles,
    numpy_dtype,
    tile_groups,
)
from spyrec.dialects.spyre_plan import PlanError, ktir_grid
from spyrec.runtime.ktir_args import check_array_argument
from spyrec.runtime.ktir_ops import CoreEnv, CoreStats, KtirFunctions, RuntimeArg, finish
from spyrec.runtime.ktir_races import Race, RaceDetector
from spyrec.target import DEFAULT_TARGET, SpyreTarget

__all__ = [
    "Device",
    "KernelRun",
    "KtirDeadlock",
    "KtirError",
    "KtirRace",
    "KtirSourceError",
    "LatencyEstimate",
    "execute",
    "parse_ktir",
    "run_kernel",
]


class KtirDeadlock(KtirError):
    """Every unfinished core waits for a delivery no core will produce."""


class KtirRace(KtirError):
    """Two cores accessed a byte, at least one writing, with no inter-tile op between."""


# ---- loading ------------------------------------------------------------------------


# ---- the device -----------------------------------------------------------------------


class Device:
    """A Spyre card as the interpreter sees it: LPDDR for the caller to fill, LX per core."""

    def __init__(self, target: SpyreTarget = DEFAULT_TARGET):
        self.target = target
        self.lpddr = Lpddr()
        self.lx = [Lx(core, target.lx_bytes) for core in range(target.num_cores)]

    def place(self, array: np.ndarray, align: int = STICK_BYTES, name: str | None = None) -> int:
        """Copy `array` into LPDDR at an `align`-byte boundary; return its byte address.

        An access through a view that starts in this array must stay in it; `name` is how
        errors call it (default: the array at its address).
        """
        return self.lpddr.place(array, align, name)

    def read(self, address: int, shape: Sequence[int], dtype: Any) -> np.ndarray:
        """A copy of what LPDDR holds at byte `address`."""
        return self.lpddr.read(address, shape, dtype)


# ---- results ------------------------------------------------------------------------


@dataclass
class LatencyEstimate:
    """Estimated kernel time; `per_core` holds each core's cycles by component."""

    cycles: float
    seconds: float
    bottleneck: str
    per_core: list[dict[str, float]]

    def __str__(self) -> str:
        return f"{self.cycles:.0f} cycles ({self.seconds * 1e6:.2f} us), bound by {self.bottleneck}"


@dataclass
class KernelRun:
    """What a run produced: arrays read back, per-core statistics and the estimate."""

    outputs: dict[str, np.ndarray]
    grid: tuple[int, ...]
    stats: list[CoreStats]
    latency: LatencyEstimate
    wall_seconds: float
    returned: list[tuple[Any, ...]] = field(default_factory=list)
    races: list[Race] = field(default_factory=list)


def estimate_latency(stats: Sequence[CoreStats], target: SpyreTarget) -> LatencyEstimate:
    """Serial sum of DMA, ring, PT and SFU time per core; the kernel waits for the slowest."""
    active = max(1, sum(1 for s in stats if s.lpddr_bytes))
    corelets = target.corelets_per_core
    per_core = [
        {
            "lpddr": s.lpddr_bytes / (target.lpddr_bytes_per_cycle / active),
            "ring": s.ring_bytes / target.ring_bytes_per_cycle,
            "pt": s.matmul_flops / (target.pt_flops_per_cycle_per_corelet * corelets),
            "sfu": s.vector_bytes / (target.sfu_bytes_per_cycle_per_corelet * corelets),
        }
        for s in stats
    ]
    totals = [sum(parts.values()) for parts in per_core]
    slowest = int(np.argmax(totals)) if totals else 0
    cycles = totals[slowest] if totals else 0.0
    bottleneck = max(per_core[slowest], key=per_core[slowest].__getitem__) if per_core else "-"
    return LatencyEstimate(cycles, cycles / target.clock_hz, bottleneck, per_core)


# ---- inter-tile communication -----------------------------------------------------------


@dataclass(frozen=True)
class FutureHandle:
    """The value of a `!ktdp.tile_future`: which produce op, and which of its executions."""

    produce: InterTileProduceOp
    instance: int


@dataclass
class _Wait:
    """A core blocked until `ready()`; `what` says on what, for deadlock reports."""

    ready: Callable[[], bool]
    what: str


@dataclass
class Exchange:
    """Partials deposited by producer tiles, per produce op execution."""

    num_tiles: int
    races: RaceDetector | None = None
    partials: dict[tuple[int, int], dict[int, tuple[Any, ...]]] = field(default_factory=dict)
    clocks: dict[tuple[int, int], dict[int, np.ndarray]] = field(default_factory=dict)
    _groups: dict[int, dict[int, list[int]]] = field(default_factory=dict)
    _members: dict[tuple[int, int], dict[int, int]] = field(default_factory=dict)

    def producers(self, produce: InterTileProduceOp) -> dict[int, list[int]]:
        """Group -> producer tiles, checked to lie on the grid and in one group each."""
        key = id(produce)
        if key not in self._groups:
            tile_set = produce.producer_tiles_per_group.data
            self._groups[key] = {
                group: group_tiles(tile_set, group, self.num_tiles, "producer")
                for group in tile_groups(produce.future_type.groups.data)
            }
        return self._groups[key]

    def group_of(
        self, op: Operation, tile_set: Any, groups: Sequence[int], tile: int
    ) -> int | None:
        """The group whose `tile_set` holds `tile` (None if none)."""
        key = (id(op), id(tile_set))
        if key not in self._members:
            members: dict[int, int] = {}
            for group in groups:
                for member in group_tiles(tile_set, group, self.num_tiles, "member"):
                    members.setdefault(member, group)
            self._members[key] = members
        return self._members[key].get(tile)


# ---- one core -------------------------------------------------------------------------

_EXITS = frozenset(
    {"func.return", "scf.yield", "scf.condition", "ktdp.yield_partial", "ktdp.yield_reduced"}
)
_SYNC = frozenset({"ktdp.load", "ktdp.store"})

Step = Generator[_Wait | None, None, tuple[Any, ...]]


class Core:
    """One compute tile: an xDSL interpreter driven as a generator by the scheduler."""

    def __init__(
        self,
        module: ModuleOp,
        func: FuncOp,
        env: CoreEnv,
        exchange: Exchange,
        names: Mapping[SSAValue, str],
    ):
        self.module = module
        self.func = func
        self.env = env
        self.exchange = exchange
        self.functions = KtirFunctions(env=env, names=names)
        self.interpreter = Interpreter(module)
        self.interpreter.register_implementations(self.functions)
        self.executions: dict[int, int] = {}
        self._control: dict[str, Callable[[Operation, tuple[Any, ...]], Step]] = {
            "scf.for": self._for,
            "scf.if": self._if,
            "scf.while": self._while,
            "func.call": self._call,
            "ktdp.inter_tile_produce": self._produce,
            "ktdp.inter_tile_reduce": self._deliver,
            "ktdp.inter_tile_consume": self._deliver,
        }

    @property
    def where(self) -> str:
        coords = ", ".join(f"{axis}={c}" for axis, c in zip("xyz", self.env.coords, strict=False))
        return f"core {self.env.core} ({coords}) in @{self.func.sym_name.data}"

    def run(self, args: Sequence[Any]) -> Step:
        return (yield from self._block(self.func.body.block, args))

    def _block(self, block: Block, args: Sequence[Any]) -> Step:
        interpreter = self.interpreter
        interpreter.push_scope()
        try:
            interpreter.set_values(zip(block.args, args, strict=True))
            for op in block.ops:
                inputs = interpreter.get_values(op.operands)
                if op.name in _EXITS:
                    return tuple(inputs)
                control = self._control.get(op.name)
                if control is not None:
                    results = yield from control(op, inputs)
                else:
                    if op.name in _SYNC:
                        yield None
                    results = self._leaf(op, inputs)
                interpreter.set_values(zip(op.results, results, strict=True))
            return ()
        finally:
            interpreter.pop_scope()

    def _leaf(self, op: Operation, inputs: tuple[Any, ...]) -> tuple[Any, ...]:
        for value, operand in zip(inputs, op.operands, strict=True):
            if isinstance(value, Undefined):
                raise KtirError(
                    f"{self.where}: {op.name} uses {self.functions.describe(operand)}, which is "
                    f"undefined here: {value.reason}"
                )
        try:
            return tuple(self.interpreter.run_op(op, inputs))
        except KtirError as error:
            raise self._located(error, op) from None
        except Exception as error:
            if hasattr(error, "__notes__"):
                error.__notes__.clear()  # xDSL attaches the whole module; the location says more
            raise KtirError(
                f"{self.where}: {self._op_str(op)}: {type(error).__name__}: {error}"
            ) from error

    def _op_str(self, op: Operation) -> str:
        if op.results:
            names = ", ".join(self.functions.describe(r) for r in op.results)
            return f"{op.name} ({names})"
        operands = ", ".join(self.functions.describe(v) for v in op.operands)
        return f"{op.name} {operands}"

    def _located(self, error: KtirError, op: Operation) -> KtirError:
        if hasattr(error, "__notes__"):
            error.__notes__.clear()
        located = type(error)(f"{self.where}: {self._op_str(op)}: {error}")
        return located

    # ---- control flow ----------------------------------------------------------------
    def _for(self, op: Operation, inputs: tuple[Any, ...]) -> Step:
        lower, upper, step, *carried = inputs
        if step <= 0:
            raise KtirError(f"{self.where}: scf.for with step {step}")
        for induction in range(lower, upper, step):
            carried = list((yield from self._block(op.regions[0].block, [induction, *carried])))
        return tuple(carried)

    def _if(self, op: Operation, inputs: tuple[Any, ...]) -> Step:
        region = op.regions[0] if bool(inputs[0]) else op.regions[1]
        if not region.blocks:
            return ()
        return (yield from self._block(region.block, []))

    def _while(self, op: Operation, inputs: tuple[Any, ...]) -> Step:
        values = tuple(inputs)
        while True:
            condition, *forwarded = yield from self._block(op.regions[0].block, values)
            if not bool(condition):
                return tuple(forwarded)
            values = yield from self._block(op.regions[1].block, forwarded)

    def _call(self, op: Operation, inputs: tuple[Any, ...]) -> Step:
        callee = SymbolTable.lookup_symbol(self.module, cast(Any, op).callee)
        if not isinstance(callee, FuncOp) or not callee.body.blocks:
            raise KtirError(f"{self.where}: func.call of an unknown or external function")
        return (yield from self._block(callee.body.block, inputs))

    # ---- inter-tile communication ----------------------------------------------------
    def _produce(self, op: Operation, inputs: tuple[Any, ...]) -> Step:
        produce = cast(InterTileProduceOp, op)
        yield None
        instance = self.executions.get(id(op), 0)
        self.executions[id(op)] = instance + 1
        producers = self._checked(lambda: self.exchange.producers(produce), op)
        groups = list(producers)
        group = self.exchange.group_of(
            op, produce.producer_tiles_per_group.data, groups, self.env.core
        )
        if group is not None:
            partials = yield from self._block(produce.body.block, [group])
            key = (id(op), instance)
            self.exchange.partials.setdefault(key, {})[self.env.core] = tuple(
                np.array(p, copy=True) for p in partials
            )
            if self.exchange.races is not None:
                published = self.exchange.races.release(self.env.core)
                self.exchange.clocks.setdefault(key, {})[self.env.core] = published
        return (FutureHandle(produce, instance),)

    def _deliver(self, op: Operation, inputs: tuple[Any, ...]) -> Step:
        delivery = cast(InterTileReduceOp | InterTileConsumeOp, op)
        yield None
        handle = inputs[0]
        if not isinstance(handle, FutureHandle):
            raise KtirError(f"{self.where}: {op.name} needs the future of an inter_tile_produce")
        producers = self._checked(lambda: self.exchange.producers(handle.produce), op)
        group = self.exchange.group_of(
            op, delivery.consumer_tiles_per_group.data, list(producers), self.env.core
        )
        if group is None:
            reason = (
                f"tile {self.env.core} is not in the consumer_tiles_per_group of {self._op_str(op)}"
            )
            return tuple(Undefined(reason) for _ in op.results)
        sources = delivery.dependencies(self.env.core, group, producers[group])
        if isinstance(delivery, InterTileConsumeOp) and len(sources) != 1:
            raise KtirError(
                f"{self.where}: {self._op_str(op)}: consumer tile {self.env.core} of group "
                f"{group} has {len(sources)} sources {sources}; inter_tile_consume needs one"
            )
        key = (id(handle.produce), handle.instance)
        exchange = self.exchange

        def ready() -> bool:
            arrived = exchange.partials.get(key, {})
            return all(source in arrived for source in sources)

        if not ready():
            yield _Wait(
                ready,
                f"{self.where} waits in {self._op_str(op)} for tiles {sources} of group {group}",
            )
        arrived = exchange.partials[key]
        if exchange.races is not None:
            for source in sources:
                exchange.races.acquire(self.env.core, exchange.clocks[key][source])
        for source in sources:
            if source != self.env.core:
                self.env.stats.ring_bytes += sum(int(np.asarray(p).nbytes) for p in arrived[source])
        if isinstance(delivery, InterTileConsumeOp):
            delivered = tuple(np.array(p, copy=True) for p in arrived[sources[0]])
        else:
            delivered = tuple(inputs[1:])
            for source in sources:
                delivered = yield from self._block(
                    delivery.combiner.block, [*delivered, *arrived[source]]
                )
        # a result may drop unit dims of its partial (`ktdp_intertile.rank_reduced`)
        return tuple(np.reshape(v, cast(TensorType, r.type).get_shape())
                     for v, r in zip(delivered, op.results))

    def _checked(self, compute: Callable[[], Any], op: Operation) -> Any:
        try:
            return compute()
        except KtirError as error:
            raise self._located(error, op) from None


# ---- the scheduler --------------------------------------------------------------------


def _schedule(cores: Sequence[Core], programs: Sequence[Step]) -> list[tuple[Any, ...]]:
    """Run all cores round-robin, one step each per round, until all finish."""
    returned: list[tuple[Any, ...]] = [()] * len(cores)
    waiting: dict[int, _Wait] = {}
    live = dict(enumerate(programs))
    while live:
        progressed = False
        for index in list(live):
            wait = waiting.get(index)
            if wait is not None:
                if not wait.ready():
                    continue
                del waiting[index]
            progressed = True
            try:
                event = next(live[index])
            except StopIteration as stop:
                returned[index] = stop.value
                del live[index]
                continue
            if isinstance(event, _Wait):
                waiting[index] = event
        if not progressed:
            blocked = "; ".join(waiting[i].what for i in sorted(waiting))
            raise KtirDeadlock(f"deadlock: {blocked}")
    return returned


# ---- launching ------------------------------------------------------------------------


def _grid_of(func: FuncOp, grid: Sequence[int] | None) -> tuple[int, ...]:
    """`grid` if given, else the function's own (`spyre_plan.ktir_grid`)."""
    if grid is not None:
        return tuple(int(g) for g in grid)
    try:
        return ktir_grid(func)
    except PlanError as exc:
        raise KtirError(str(exc)) from None


class _ValueNames(Mapping[SSAValue, str]):
    """The names the printed form of a function gives its values (`%12`, `%x`), for errors.

    Computed on first use: it takes a print of the function.
    """

    def __init__(self, func: FuncOp):
        self._func = func
        self._names: dict[SSAValue, str] | None = None

    def _table(self) -> dict[SSAValue, str]:
        if self._names is None:
            printer = Printer(stream=io.StringIO())
            printer.print_op(self._func)
            self._names = dict(printer._ssa_values)
        return self._names

    def __getitem__(self, value: SSAValue) -> str:
        return self._table()[value]

    def __iter__(self) -> Iterator[SSAValue]:
        return iter(self._table())

    def __len__(self) -> int:
        return len(self._table())


def _find_function(module: ModuleOp, name: str) -> FuncOp:
    func = SymbolTable.lookup_symbol(module, name)
    if not isinstance(func, FuncOp):
        available = [op.sym_name.data for op in module.ops if isinstance(op, FuncOp)]
        raise KtirError(f"no function @{name} in the module (functions: {available})")
    return func


def _parameter_names(func: FuncOp) -> list[str]:
    """The kernel's parameter names (`argN` for unnamed ones)."""
    return [arg.name_hint or f"arg{i}" for i, arg in enumerate(func.body.block.args)]


def _bind_arguments(
    func: FuncOp, args: Mapping[str, Any], device: Device
) -> tuple[list[Any], dict[str, tuple[int, np.ndarray]]]:
    """Kernel argument values in order, and where each array argument was placed."""
    block = func.body.block
    values: list[Any] = []
    placed: dict[str, tuple[int, np.ndarray]] = {}
    names = _parameter_names(func)
    unknown = set(args) - set(names) - {f"arg{i}" for i in range(len(names))}
    if unknown:
        raise KtirError(
            f"@{func.sym_name.data} has no parameters {sorted(unknown)} (parameters: {names})"
        )
    for position, (arg, name) in enumerate(zip(block.args, names, strict=True)):
        key = name if name in args else f"arg{position}"
        if key not in args:
            raise KtirError(f"@{func.sym_name.data}: no value for parameter %{name}")
        value = args[key]
        if isinstance(arg.type, RuntimeArgType):
            values.append(_runtime_arg(value, arg.type, name))
        elif isinstance(arg.type, TensorType):
            # a tensor is a value: other dtypes convert by value, but a wrong shape would
            # broadcast silently through elementwise ops
            array = np.asarray(value, dtype=numpy_dtype(arg.type.get_element_type()))
            declared = arg.type.get_shape()
            if len(declared) != array.ndim or any(
                d != DYNAMIC_INDEX and d != n for d, n in zip(declared, array.shape, strict=False)
            ):
                shape = "x".join(map(str, array.shape)) or "0-d"
                raise KtirError(
                    f"@{func.sym_name.data}: argument %{name} is a {shape} array, but its type "
                    f"is {arg.type}: pass an array of that shape"
                )
            values.append(array)
        elif isinstance(value, np.ndarray):
            if not isinstance(arg.type, IndexType):
                raise KtirError(f"parameter %{name} is {arg.type}; arrays go to index parameters")
            check_array_argument(func.sym_name.data, name, arg, value)
            address = device.place(value, name=f"argument %{name}")
            placed[name] = (address, value)
            values.append(address // value.dtype.itemsize)
        elif isinstance(value, bool | int | float | np.integer | np.floating):
            values.append(finish(value, arg.type))
        else:
            raise KtirError(
                f"@{func.sym_name.data}: argument %{name} is a {type(value).__name__}; pass a "
                "NumPy array for a pointer parameter (a torch tensor's `.numpy()`) or a Python "
                "number for a scalar one")
    return values, placed


def _runtime_arg(value: Any, arg_type: RuntimeArgType, name: str) -> RuntimeArg:
    granularity, upperbound = arg_type.granularity, arg_type.upperbound
    if granularity is not None and int(value) % granularity:
        raise KtirError(f"runtime argument %{name} = {value} is not a multiple of {granularity}")
    if upperbound is not None and value > upperbound:
        raise KtirError(f"runtime argument %{name} = {value} exceeds its upper bound {upperbound}")
    return RuntimeArg(finish(value, arg_type.value_type), granularity, upperbound)


def run_kernel(
    module_or_text: str | Path | ModuleOp,
    func_name: str,
    args: Mapping[str, Any],
    grid: Sequence[int] | None = None,
    *,
    device: Device | None = None,
    target: SpyreTarget | None = None,
    races: str = "report",
    masked_tails: bool = False,
) -> KernelRun:
    """Run `@func_name` on every core of its grid; return the arrays read back and stats.

    `args` maps parameter names (or `argN`) to values: NumPy arrays for `index` (pointer)
    parameters, which are placed in LPDDR, or ints and floats, passed as they are (an int for
    an index parameter is an element offset the caller computed, e.g. after `Device.place`).
    `races` is "report" (unordered cross-core accesses are listed in `KernelRun.races`),
    "error" (the first one raises `KtirRace` after the run) or "off".
    Each array must fit the views the kernel builds on its parameter (`ktir_args.py`:
    dtype, shape, reach), else `KtirError` before anything runs.
    Tensor parameters take arrays as values (handy for testing compute without memory); what
    each core's function returns is in `KernelRun.returned`. `grid` overrides the function's
    `grid` attribute. `masked_tails` masks every direct access tile, as the kernel attribute
    `ktdp.masked_tails` does: lanes outside the view are not read (0) and not written
    (docs/ktir.md, "Masked tails"); otherwise only tiles marked `ktdp.masked` are masked.
    """
    started = time.perf_counter()
    module = parse_ktir(module_or_text)
    func = _find_function(module, func_name)
    device = device or Device(target or DEFAULT_TARGET)
    shape = _grid_of(func, grid)
    num_tiles = int(np.prod(shape))
    if num_tiles > len(device.lx):
        raise KtirError(
            f"grid {list(shape)} has {num_tiles} tiles but the card has {len(device.lx)} cores"
        )
    values, placed = _bind_arguments(func, args, device)
    if races not in ("report", "error", "off"):
        raise ValueError(f"races must be 'report', 'error' or 'off', got {races!r}")
    names = _ValueNames(func)
    homes: dict[SSAValue, PlacedArray] = {
        param: home
        for param, name in zip(func.body.block.args, _parameter_names(func), strict=True)
        if name in placed and (home := device.lpddr.array_at(placed[name][0])) is not None
    }
    detector = None if races == "off" else RaceDetector(num_tiles)
    exchange = Exchange(num_tiles, detector)
    cores = [
        Core(
            module,
            func,
            CoreEnv(
                c,
                core_coords(c, shape),
                device.lpddr,
                device.lx,
                device.target.lx_bytes,
                detector,
                homes=homes,
                masked_tails=masked_tails or MASKED_KERNEL in func.attributes,
            ),
            exchange,
            names,
        )
        for c in range(num_tiles)
    ]
    returned = _schedule(cores, [core.run(values) for core in cores])
    outputs = {
        name: device.read(address, array.shape, array.dtype)
        for name, (address, array) in placed.items()
    }
    stats = [core.env.stats for core in cores]
    latency = estimate_latency(stats, device.target)
    found = detector.races if detector is not None else []
    if found and races == "error":
        raise KtirRace(f"@{func_name}: {found[0]}")
    return KernelRun(outputs, shape, stats, latency, time.perf_counter() - started, returned, found)


def execute(source: str | Path | ModuleOp, function: str, **args: Any) -> dict[str, np.ndarray]:
    """Run `@function` of `source` (a path or MLIR text); return every array argument after."""
    return run_kernel(source, function, args).outputs


def element_offset(address: int, dtype: Any) -> int:
    """The KTIR offset (in elements of `dtype`) of a byte address."""
    itemsize = np.dtype(dtype).itemsize
    if address % itemsize:
        raise KtirError(f"byte address {address} is not aligned to {itemsize}-byte elements")
    return address // itemsize
