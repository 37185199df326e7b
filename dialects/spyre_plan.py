"""The planning vocabulary of the spyre dialect: every attribute a pass decides with, declared.

The graph passes write their decisions into the IR as attributes (design note 15: a user
overrides one by writing it, e.g. `grid = [2, 4]` on a `spyre.kernel`). Each key is declared
here once, as a `PlanAttr`: its key, where it lives, whether it is a *decision* (read back
by later passes, typed) or a *ledger* (explains a decision to people and `spyrec explain`;
no pass reads a decision out of it), the xDSL constraint its builtin encoding satisfies,
and the words an error gives for a bad value. The printed IR is the builtin form
(`grid = [2 : i64, 4 : i64]`, `resident = "b"`); no new syntax.

Guarantees: `PlanAttr.get` returns a Python value (`tuple[int, ...]` for a grid, `str`
for `resident`) or None when the key is absent, and raises `PlanError`, naming the op, the key and
the values allowed, when the attribute breaks its constraint; `PlanAttr.set` writes the encoding
every pass wrote before this module (so binaries stay byte-identical). `verify_plan` checks every
planning attribute of a module (the driver and spyre-opt run it after each pass), and the
`spyre.kernel` op declares the kernel's keys with the same constraints (`KERNEL_ATTRS`).
`is_kernel` is the one test of whether a function is a kernel (it has a `grid`) and
`graph_func` finds the graph function.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Generic, TypeVar

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    i64,
)
from xdsl.ir import Attribute, Operation
from xdsl.irdl import AttrConstraint
from xdsl.utils.exceptions import VerifyException

from spyrec.diagnostics import CompileError
from spyrec.dialects.spyre_symbolic import SymbolicSignature
from spyrec.target import DEFAULT_TARGET, TARGETS, SpyreTarget, target_named

T = TypeVar("T")

DECISION = "decision"
"""Read back by later passes: typed, verified, set by a pass or by the user."""
LEDGER = "ledger"
"""Explains a decision (the reason, the runners-up, predicted cycles); never read back."""


class PlanError(CompileError):
    """A planning attribute whose value is not one its key allows (a bad user override)."""


def _ints(attr: Attribute) -> list[int] | None:
    """The values of an array of integers (`[2, 4]` or `array<i64: 2, 4>`), else None."""
    if isinstance(attr, DenseArrayBase) and isinstance(attr.elt_type, IntegerType):
        return [int(v) for v in attr.get_values()]
    if isinstance(attr, ArrayAttr) and all(isinstance(a, IntegerAttr) for a in attr.data):
        return [a.value.data for a in attr.data if isinstance(a, IntegerAttr)]
    return None


@dataclass(frozen=True)
class PlanConstraint(AttrConstraint):
    """An xDSL constraint on the builtin encoding of planning attribute `key`: `test` of
    the attribute; the failure says which values are allowed (`allowed`)."""

    key: str
    test: Callable[[Attribute], bool]
    allowed: str

    def problem(self, attr: Attribute) -> str | None:
        """What is wrong with `attr`, None if it is allowed."""
        if self.test(attr):
            return None
        return f"`{self.key} = {attr}` is not allowed: {self.key} must be {self.allowed}"

    def verify(self, attr: Attribute, constraint_context: object = None) -> None:
        problem = self.problem(attr)
        if problem is not None:
            raise VerifyException(problem)

    def mapping_type_vars(self, type_var_mapping: Mapping) -> PlanConstraint:
        return self


@dataclass(frozen=True)
class PlanAttr(Generic[T]):
    """One declared planning attribute: its `constraint` (with the key), whether it is a
    DECISION or a LEDGER, the ops it lives `on` ("kernel": a `spyre.kernel`; "kernel
    func": a KTIR `func.func`; "launch": a `spyre.launch`; "module": the module), the pass that
    writes it (`by`), and its Python value's `decode` / `encode`."""

    constraint: PlanConstraint
    kind: str
    on: tuple[str, ...]
    by: str
    decode: Callable[[Attribute], T]
    encode: Callable[[T], Attribute]

    @property
    def key(self) -> str:
        return self.constraint.key

    def check(self, op: Operation) -> Attribute | None:
        """The attribute on `op` (None if absent); `PlanError` if it breaks the constraint."""
        attr = op.attributes.get(self.key)
        problem = None if attr is None else self.constraint.problem(attr)
        if problem is not None:
            fix = ("correct it in the kernel's KTIR" if isinstance(op, func.FuncOp) else
                   f"correct it, or remove it and {self.by} decides it" if self.kind == DECISION
                   else f"it is the ledger {self.by} writes: remove it")
            raise PlanError(f"{where(op)}: {problem}; {fix}")
        return attr

    def get(self, op: Operation) -> T | None:
        """The Python value on `op`, None when absent."""
        attr = self.check(op)
        return None if attr is None else self.decode(attr)

    def set(self, op: Operation, value: T) -> None:
        op.attributes[self.key] = self.encode(value)

    def copy(self, source: Operation, dest: Operation) -> None:
        """Copy the attribute from `source` to `dest`, if `source` has it."""
        attr = self.check(source)
        if attr is not None:
            dest.attributes[self.key] = attr


def where(op: Operation) -> str:
    """How an error names `op`: the kernel (or launch) and the function it is in."""
    if isinstance(op, func.FuncOp):
        return f"func @{op.sym_name.data}"
    if isinstance(op, ModuleOp):
        return "the module"
    name = op.properties.get("sym_name")
    callee = op.properties.get("callee")
    label = (f"kernel @{name.data}" if isinstance(name, StringAttr) else
             f"launch of {callee}" if isinstance(callee, SymbolRefAttr) else op.name)
    parent = op.parent_op()
    inside = f" in func @{parent.sym_name.data}" if isinstance(parent, func.FuncOp) else ""
    return label + inside


# ---- encodings -------------------------------------------------------------------------


def _int_array(values: Iterable[int]) -> ArrayAttr:
    return ArrayAttr([IntegerAttr(v, i64) for v in values])


def _ints_of(attr: Attribute) -> tuple[int, ...]:
    values = _ints(attr)
    assert values is not None  # checked by the constraint
    return tuple(values)


def _ints_test(length: int | None, low: int) -> Callable[[Attribute], bool]:
    def test(attr: Attribute) -> bool:
        values = _ints(attr)
        return values is not None and (length is None or len(values) == length) \
            and all(v >= low for v in values)
    return test


def _int_test(low: int) -> Callable[[Attribute], bool]:
    return lambda attr: isinstance(attr, IntegerAttr) and attr.value.data >= low


def _int_of(attr: Attribute) -> int:
    assert isinstance(attr, IntegerAttr)
    return attr.value.data


def _string_test(values: frozenset[str] | None) -> Callable[[Attribute], bool]:
    return lambda attr: isinstance(attr, StringAttr) and (values is None or attr.data in values)


def _string_of(attr: Attribute) -> str:
    assert isinstance(attr, StringAttr)
    return attr.data


def _strings_test(attr: Attribute) -> bool:
    return isinstance(attr, ArrayAttr) and all(isinstance(a, StringAttr) for a in attr.data)


def _strings_of(attr: Attribute) -> tuple[str, ...]:
    assert isinstance(attr, ArrayAttr)
    return tuple(a.data for a in attr.data if isinstance(a, StringAttr))


def _dict_of(attr: Attribute) -> Mapping[str, Attribute]:
    assert isinstance(attr, DictionaryAttr)
    return attr.data


LAYOUT_FIELDS = {"stick_dim": IntegerAttr, "padded_shape": DenseArrayBase,
                 "device_dtype": StringAttr, "pad": StringAttr}


def _layout_test(attr: Attribute) -> bool:
    layouts = attr.data if isinstance(attr, ArrayAttr) else (attr,)
    return all(isinstance(a, DictionaryAttr)
               and all(isinstance(a.data.get(k), t) for k, t in LAYOUT_FIELDS.items())
               and _string_of(a.data["pad"]) in ("zero", "undef") for a in layouts)


def _layout_of(attr: Attribute) -> tuple[DictionaryAttr, ...]:
    layouts = attr.data if isinstance(attr, ArrayAttr) else (attr,)
    return tuple(a for a in layouts if isinstance(a, DictionaryAttr))


def _layout_attr(layouts: tuple[DictionaryAttr, ...]) -> Attribute:
    return layouts[0] if len(layouts) == 1 else ArrayAttr(layouts)


# ---- the vocabulary --------------------------------------------------------------------

KERNEL, FUNC, LAUNCH, MODULE = "kernel", "kernel func", "launch", "module"


def _plan(key: str, kind: str, on: tuple[str, ...], by: str, test: Callable[[Attribute], bool],
          allowed: str, decode: Callable[[Attribute], T],
          encode: Callable[[T], Attribute]) -> PlanAttr[T]:
    return PlanAttr(PlanConstraint(key, test, allowed), kind, on, by, decode, encode)


GRID: PlanAttr[tuple[int, ...]] = _plan(
    "grid", DECISION, (KERNEL, FUNC), "spyre-partition-cores", _ints_test(2, 1),
    "[gm, gn], two positive integers (gm cores over rows, gn over output sticks; core "
    "= y * gm + x), e.g. `grid = [2, 4]`", _ints_of, _int_array)
"""The core split; copied onto the kernel's KTIR func by convert-spyre-to-ktir. A func with
a grid is a kernel (`is_kernel`)."""

TILE: PlanAttr[tuple[int, ...]] = _plan(
    "tile", DECISION, (KERNEL,), "spyre-tile", _ints_test(3, 0),
    "[tm, tn, tk], three non-negative integers (the per-core tile in elements; tk = 0 "
    "without a matmul), e.g. `tile = [64, 64, 0]`", _ints_of, _int_array)

RESIDENCIES = frozenset({"a", "b", "acc"})
RESIDENT: PlanAttr[str] = _plan(
    "resident", DECISION, (KERNEL,), "spyre-tile", _string_test(RESIDENCIES),
    '"a" (the row block of A kept in LX), "b" (the column block of B) or "acc" (K '
    "blocked, the accumulator kept)", _string_of, StringAttr)
"""A matmul's loop order (note 29)."""

SHARINGS = frozenset({"ring", "none"})
SHARE: PlanAttr[str] = _plan(
    "share", DECISION, (KERNEL, FUNC), "spyre-tile", _string_test(SHARINGS),
    '"ring" (operand tiles several cores load are read once and forwarded over the ring) '
    'or "none"', _string_of, StringAttr)
"""Ring sharing (note 38); copied onto the KTIR func for spyre-schedule-dataflow."""

TAIL: PlanAttr[int] = _plan(
    "tail", DECISION, (KERNEL,), "spyre-tile", _int_test(1),
    "an integer >= 1 (the last column tile in that many row pieces; 1: whole)",
    _int_of, lambda n: IntegerAttr(n, i64))
"""Note 57."""

STORE_PIECES: PlanAttr[int] = _plan(
    "store_pieces", DECISION, (KERNEL,), "spyre-tile", _int_test(1),
    "an integer >= 1 (each output tile stored in that many row pieces paced over the next "
    "tile; 1: whole)", _int_of, lambda n: IntegerAttr(n, i64))
"""Note 54; read by convert-spyre-to-ktir."""

LX_RESULTS: PlanAttr[tuple[int, ...]] = _plan(
    "spyre.lx_results", DECISION, (KERNEL, LAUNCH), "spyre-partition-cores",
    _ints_test(None, 0), "an `array<i64: ...>` of result indices (the results kept in the "
    "cores' LX for the next kernel)", _ints_of,
    lambda values: DenseArrayBase.from_list(i64, list(values)))
"""Note 61; copied onto the launch by convert-spyre-to-ktir."""

INPLACE: PlanAttr[tuple[int, ...]] = _plan(
    "spyre.inplace", DECISION, (KERNEL, LAUNCH), "spyre-fuse", _ints_test(None, 0),
    "an array of operand indices, one per leading result (the operand whose storage the "
    "result is: the updated table)",
    _ints_of, _int_array)
"""Scatter kernels (note 28b); copied onto the launch."""

LAYOUT: PlanAttr[tuple[DictionaryAttr, ...]] = _plan(
    "spyre.layout", DECISION, (KERNEL, LAUNCH), "spyre-stickify", _layout_test,
    'a layout dictionary {stick_dim, padded_shape, device_dtype, pad = "zero" or '
    '"undef"}, or an array of them (one per result)', _layout_of, _layout_attr)
"""Set on each value's op by spyre-stickify (`spyre_stickify.Layout`); the results'
layouts copied onto the kernel by spyre-fuse and onto its launch by convert-spyre-to-ktir."""

FUSED: PlanAttr[tuple[str, ...]] = _plan(
    "fused", DECISION, (KERNEL,), "spyre-fuse", _strings_test,
    "an array of strings (the member ops' FX names)", _strings_of,
    lambda names: ArrayAttr([StringAttr(n) for n in names]))
"""The kernel's members; the binary's provenance of each kernel."""

REASON: PlanAttr[str] = _plan(
    "reason", LEDGER, (KERNEL,), "spyre-fuse", _string_test(None),
    "a string (the kernel's kind)", _string_of, StringAttr)

FUSION: PlanAttr[tuple[str, ...]] = _plan(
    "spyre.fusion", LEDGER, (KERNEL,), "spyre-fuse", _strings_test,
    "an array of strings (each priced join, note 50)", _strings_of,
    lambda lines: ArrayAttr([StringAttr(s) for s in lines]))


def _ledger(key: str, on: tuple[str, ...], by: str,
            what: str) -> PlanAttr[Mapping[str, Attribute]]:
    return _plan(key, LEDGER, on, by, lambda a: isinstance(a, DictionaryAttr),
                 f"a dictionary ({what})", _dict_of, lambda entries: DictionaryAttr(dict(entries)))


PARTITION = _ledger("spyre.partition", (KERNEL,), "spyre-partition-cores",
                    "choice, reason, predicted cycles, off-chip bytes, alternatives")
TILING = _ledger("spyre.tiling", (KERNEL,), "spyre-tile", "choice, reason, LX bytes and "
                 "budget, predicted cycles, off-chip bytes, alternatives")
DECISIONS = _ledger("spyre.decisions", (FUNC,), "convert-spyre-to-ktir", "the kernel's "
                    "ledgers and decisions, copied for spyrec explain and the binary")

PLAN_ATTRS: tuple[PlanAttr, ...] = (GRID, TILE, RESIDENT, SHARE, TAIL, STORE_PIECES,
                                    LX_RESULTS, INPLACE, LAYOUT, FUSED, REASON, FUSION,
                                    PARTITION, TILING, DECISIONS)
KERNEL_ATTRS = tuple(a for a in PLAN_ATTRS if KERNEL in a.on)
FUNC_ATTRS = tuple(a for a in PLAN_ATTRS if FUNC in a.on)
LAUNCH_ATTRS = tuple(a for a in PLAN_ATTRS if LAUNCH in a.on)


# ---- the user's options ------------------------------------------------------------------


@dataclass(frozen=True)
class PlanningOptions:
    """The compile switches (`spyrec.compile(fuse=..., double_buffer=..., ...)`, the flags of
    `spyrec compile`), one record every planning pass reads (`OPTIONS`, `spyre.options` on
    the module, written by spyre-set-options), so spyre-fuse prices the kernels it weighs as
    spyre-partition-cores and spyre-tile will plan them, and spyre-place-memory allocates
    what they planned. A pass's own option of the same name, when given (spyre-opt), wins
    for that pass alone. `spyrec.pipelines.compile_options` documents each switch."""

    fuse: bool = True
    double_buffer: bool = True
    resident: str = ""  # "" (cheapest), or every matmul's loop order: one of RESIDENCIES
    share: str = ""  # "" (cheapest), or every split matmul's: one of SHARINGS
    tail: int = 0  # 0 (cheapest); 1: no tails; N >= 2: N-piece tails where legal
    ring_reduce: bool = True
    keep_in_lx: bool = True
    target: str = DEFAULT_TARGET.name  # the target description's name (spyrec.target.TARGETS)

    @property
    def buffers(self) -> int:
        """LX slots per streamed tile buffer: two (ping-pong) or one."""
        return 2 if self.double_buffer else 1

    def override(self, **given: object) -> PlanningOptions:
        """These options with a pass's own options that were given (not None)."""
        return replace(self, **{k: v for k, v in given.items() if v is not None})


OPTION_FIELDS = {f.name: type(f.default) for f in fields(PlanningOptions)}
OPTION_RULES = {"resident": frozenset({"", *RESIDENCIES}), "share": frozenset({"", *SHARINGS})}


def _options_test(attr: Attribute) -> bool:
    if not isinstance(attr, DictionaryAttr):
        return False
    for key, value in attr.data.items():
        kind = OPTION_FIELDS.get(key)
        if kind is bool:
            ok = isinstance(value, IntegerAttr) and value.type == IntegerType(1)
        elif kind is int:  # an integer, not a boolean (`tail = true` is refused)
            ok = isinstance(value, IntegerAttr) and value.type != IntegerType(1) \
                and value.value.data >= 0
        elif key == "target":
            ok = isinstance(value, StringAttr) and value.data in TARGETS
        else:
            ok = isinstance(value, StringAttr) and value.data in OPTION_RULES.get(key, ())
        if not ok:
            return False
    return True


def _options_of(attr: Attribute) -> PlanningOptions:
    assert isinstance(attr, DictionaryAttr)
    values: dict[str, object] = {}
    for key, value in attr.data.items():
        if isinstance(value, StringAttr):
            values[key] = value.data
        elif isinstance(value, IntegerAttr):
            values[key] = bool(value.value.data) if OPTION_FIELDS[key] is bool \
                else value.value.data
    return PlanningOptions(**values)  # type: ignore[arg-type]


def _options_attr(options: PlanningOptions) -> DictionaryAttr:
    """The options that differ from the defaults (an empty record: every default)."""
    default = PlanningOptions()
    entries: dict[str, Attribute] = {}
    for key in OPTION_FIELDS:
        value = getattr(options, key)
        if value == getattr(default, key):
            continue
        entries[key] = (IntegerAttr(int(value), IntegerType(1)) if isinstance(value, bool) else
                        IntegerAttr(value, i64) if isinstance(value, int) else StringAttr(value))
    return DictionaryAttr(entries)


OPTIONS: PlanAttr[PlanningOptions] = _plan(
    "spyre.options", DECISION, (MODULE,), "spyre-set-options", _options_test,
    "a dictionary of compile switches: fuse, double_buffer, ring_reduce, keep_in_lx "
    '(true / false), resident ("", "a", "b", "acc"), share ("", "ring", "none"), tail (an '
    "integer >= 0), target (the name of a known target description: "
    f"{', '.join(sorted(TARGETS))}); a switch left out has its default", _options_of,
    _options_attr)
"""The user's options for every planning pass; absent: every default."""


def _symbols_test(attr: Attribute) -> bool:
    """A `SymbolicSignature` record: symbols with 0 <= lower <= upper, and per input and
    output a dictionary of dim -> one of those symbols; `made`, when present, one entry
    per input, "" or one of those symbols."""
    if not isinstance(attr, DictionaryAttr) or \
            set(attr.data) - {"made"} != {"symbols", "inputs", "outputs"}:
        return False
    names = set()
    entries = attr.data["symbols"]
    if not isinstance(entries, ArrayAttr):
        return False
    for entry in entries.data:
        if not isinstance(entry, ArrayAttr) or len(entry.data) != 3:
            return False
        name, lower, upper = entry.data
        if not (isinstance(name, StringAttr) and isinstance(lower, IntegerAttr)
                and isinstance(upper, IntegerAttr) and 0 <= lower.value.data <= upper.value.data):
            return False
        names.add(name.data)
    for key in ("inputs", "outputs"):
        per_value = attr.data[key]
        if not isinstance(per_value, ArrayAttr) or not all(
                isinstance(dims, DictionaryAttr) and all(
                    dim.isdigit() and isinstance(symbol, StringAttr) and symbol.data in names
                    for dim, symbol in dims.data.items())
                for dims in per_value.data):
            return False
    made, inputs = attr.data.get("made"), attr.data["inputs"]
    return made is None or (isinstance(made, ArrayAttr) and isinstance(inputs, ArrayAttr)
                            and len(made.data) == len(inputs.data)
                            and all(isinstance(s, StringAttr) and s.data in names | {""}
                                    for s in made.data))


def _symbols_of(attr: Attribute) -> SymbolicSignature:
    assert isinstance(attr, DictionaryAttr)
    return SymbolicSignature.from_attr(attr)


SYMBOLS: PlanAttr[SymbolicSignature] = _plan(
    "spyre.symbols", DECISION, (MODULE,), "the frontend (a torch.export Dim)", _symbols_test,
    "{symbols = [[name, lower, upper], ...], inputs = [{dim = symbol}, ...], outputs = "
    "[...], made = [symbol or \"\", ...] (optional, per input)} with 0 <= lower <= upper "
    "and every dim's and made input's symbol among the symbols",
    _symbols_of, SymbolicSignature.to_attr)
"""The program's symbolic sizes (dialects/spyre_symbolic.py, notes 32 and 49): the program
is compiled at their upper bounds; spyre-partition-cores keeps nothing in LX for it,
spyre-place-guards guards its loops, the emitter writes the symbols into the binary."""


MODULE_ATTRS: tuple[PlanAttr, ...] = (OPTIONS, SYMBOLS)  # the module's records


def record_symbols(module: ModuleOp, signature: SymbolicSignature) -> None:
    """Mark `module` as a program with symbolic sizes (the frontend's record)."""
    SYMBOLS.set(module, signature)


def symbolic_signature(module: ModuleOp) -> SymbolicSignature | None:
    """The symbols `module` was compiled for, or None for a program of static sizes."""
    return SYMBOLS.get(module)


def options_of(module: ModuleOp) -> PlanningOptions:
    """The module's `PlanningOptions` (the defaults when it records none)."""
    return OPTIONS.get(module) or PlanningOptions()


def target_of(module: ModuleOp) -> SpyreTarget:
    """The target description the module is compiled for (its `target` option)."""
    return target_named(options_of(module).target)


# ---- kernels and the graph -------------------------------------------------------------


def is_kernel(fn: func.FuncOp) -> bool:
    """Whether `fn` is a kernel (a KTIR func, with a `grid`) rather than the graph."""
    return GRID.key in fn.attributes


def graph_func(module: ModuleOp) -> func.FuncOp | None:
    """The module's graph function: the defined function that is not a kernel."""
    return next((f for f in module.body.block.ops if isinstance(f, func.FuncOp)
                 and not is_kernel(f) and f.body.blocks.first is not None), None)


def grid(op: Operation) -> tuple[int, int] | None:
    """The `[gm, gn]` of a kernel or KTIR func, None when it has none."""
    values = GRID.get(op)
    return None if values is None else (values[0], values[1])


KTIR_GRID_RULE = "one to three positive integers [X, Y(, Z)]"


def ktir_grid(fn: func.FuncOp) -> tuple[int, ...]:
    """A KTIR kernel's grid as the KTIR interpreter runs it: one to three extents (KTIR's
    default is one tile, `(1,)`); `PlanError` for any other value."""
    attr = fn.attributes.get(GRID.key)
    if attr is None:
        return (1,)
    values = _ints(attr)
    if values is None or not 1 <= len(values) <= 3 or min(values) < 1:
        raise PlanError(f"{where(fn)}: `grid = {attr}` is not a valid grid: a KTIR grid must "
                        f"be {KTIR_GRID_RULE}")
    return tuple(values)


def record_decisions(kernel: Operation, fn: func.FuncOp,
                     explained: tuple[PlanAttr, ...]) -> None:
    """`spyre.decisions` on a kernel's KTIR func (convert-spyre-to-ktir): the kernel's
    `explained` attributes that it has, for `spyrec explain` and the binary."""
    DECISIONS.set(fn, {spec.key: attr for spec in explained
                       if (attr := spec.check(kernel)) is not None})


def recorded(op: Operation, spec: PlanAttr[T]) -> T | None:
    """`spec` as `record_decisions` copied it into the `spyre.decisions` of a KTIR func (or
    of its spyrecode program): what the binary's provenance shows; None if not recorded."""
    decisions = op.attributes.get(DECISIONS.key)
    attr = decisions.data.get(spec.key) if isinstance(decisions, DictionaryAttr) else None
    return None if attr is None or not spec.constraint.test(attr) else spec.decode(attr)


def ring_shared(op: Operation) -> bool:
    """Whether spyre-tile chose to share the kernel's operand tiles over the ring."""
    return SHARE.get(op) == "ring"


# ---- verification ----------------------------------------------------------------------


def verify_plan(module: ModuleOp) -> None:
    """Check every planning attribute of `module` against its declaration: on each kernel
    func, and on each `spyre.kernel` and `spyre.launch` of the graph (the ops' bodies are
    not walked: planning attributes live on these). Raises `PlanError` for the first bad
    one, naming the op, the key and the values allowed."""
    for spec in MODULE_ATTRS:
        spec.check(module)
    for fn in module.body.block.ops:
        if not isinstance(fn, func.FuncOp):
            continue
        if is_kernel(fn):
            for spec in FUNC_ATTRS:
                spec.check(fn)
            continue
        if fn.body.blocks.first is None:
            continue
        for op in fn.body.block.ops:
            specs = (KERNEL_ATTRS if op.name == "spyre.kernel" else
                     LAUNCH_ATTRS if op.name == "spyre.launch" else ())
            for spec in specs:
                spec.check(op)
