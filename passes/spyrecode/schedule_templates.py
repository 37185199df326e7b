"""Schedule once, relocate: per-core programs from one symbolic interpretation of a kernel.

spyre-schedule-dataflow unrolls a KTIR kernel into one instruction stream per core. Every
core of a launch, and every launch of a structurally identical kernel (the layers of a
decoder stack), runs the same control flow on the same LX slots; only addresses differ,
and those are affine in the kernel's address arguments and the core's coordinates. So the
kernel is interpreted once with those as symbols (`Affine`), giving a `Template` whose
instruction fields are affine forms; a launch instantiates it for all its cores at once with
one NumPy product.

Exactness: symbolic values support only exact affine arithmetic (sums, products by a
constant). Anything that would need a symbol's value — a loop bound, a floor division or
modulo, a comparison, `int()` — raises `Symbolic`, and the kernel falls back to the next
level: first the core coordinates become concrete (one template per core, still shared by
identical launches), then everything (the plain per-core interpreter). The one check the
interpreter makes on an address value, 128-byte alignment of a DMA's LPDDR address, is
applied to the instantiated values, and a failure reruns the plain interpreter so the error
is its own. So a template never yields a program the plain interpreter would not.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.ir import Attribute, Operation, SSAValue

from spyrec.diagnostics import CompileError
from spyrec.dialects.ktdp_values import core_coords
from spyrec.passes.spyrecode.ring_sharing import SharingReport, share_loads
from spyrec.progress import report as report_progress
from spyrec.target.isa import SPECS_BY_NAME, Instr, encode_program
from spyrec.target.layout import STICK_BYTES

# the fields of a dma.load that decide which loads of a launch are the same LPDDR tile
_LOAD_KEY = ("ddr", "rows", "row_bytes", "ddr_pitch")


class Symbolic(Exception):
    """A value the interpretation needs concretely depends on a symbol."""


class Affine:
    """const + sum(coeff * symbol): a kernel argument or a core coordinate, symbolically.

    Arithmetic that stays affine returns an `Affine` (or a plain int when no symbol is
    left); anything else raises `Symbolic`, never a guess.
    """

    __slots__ = ("const", "terms")

    def __init__(self, const: int, terms: dict[int, int]):
        self.const = const
        self.terms = terms  # symbol index -> nonzero coefficient

    @staticmethod
    def symbol(index: int) -> Affine:
        return Affine(0, {index: 1})

    @staticmethod
    def _make(const: int, terms: dict[int, int]) -> Affine | int:
        terms = {s: c for s, c in terms.items() if c}
        return Affine(const, terms) if terms else const

    def __add__(self, other: object) -> Affine | int:
        if isinstance(other, Affine):
            terms = dict(self.terms)
            for s, c in other.terms.items():
                terms[s] = terms.get(s, 0) + c
            return Affine._make(self.const + other.const, terms)
        if isinstance(other, int):
            return Affine(self.const + other, self.terms)
        return NotImplemented

    __radd__ = __add__

    def __neg__(self) -> Affine:
        return Affine(-self.const, {s: -c for s, c in self.terms.items()})

    def __sub__(self, other: object) -> Affine | int:
        if isinstance(other, (Affine, int)):
            return self + (-other)
        return NotImplemented

    def __rsub__(self, other: object) -> Affine | int:
        return (-self) + other

    def __mul__(self, other: object) -> Affine | int:
        if isinstance(other, Affine):
            raise Symbolic("product of two symbolic values")
        if isinstance(other, int):
            return Affine._make(self.const * other, {s: c * other for s, c in self.terms.items()})
        return NotImplemented

    __rmul__ = __mul__

    def _concrete(self, *_: object) -> object:
        raise Symbolic("a symbolic value is used where its value is needed")

    def _multiple(self, divisor: object) -> int:
        """`divisor` when every coefficient is a multiple of it (so the symbols' part of the
        value is too, whatever their values); else the value is needed."""
        if isinstance(divisor, int) and divisor > 0 and \
                all(c % divisor == 0 for c in self.terms.values()):
            return divisor
        raise Symbolic("a symbolic value is divided by what its terms are not multiples of")

    def __floordiv__(self, other: object) -> Affine | int:
        # (const + d * k) // d == const // d + k for any integer k: exact, not a guess
        d = self._multiple(other)
        return Affine._make(self.const // d, {s: c // d for s, c in self.terms.items()})

    def __mod__(self, other: object) -> int:
        return self.const % self._multiple(other)

    __int__ = __index__ = __bool__ = __hash__ = _concrete  # type: ignore[assignment]
    __rfloordiv__ = __rmod__ = __truediv__ = _concrete
    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = _concrete  # type: ignore[assignment]

    def __repr__(self) -> str:
        return " + ".join([str(self.const)] + [f"{c}*s{s}" for s, c in sorted(self.terms.items())])


def index_value(value: object) -> Affine | int:
    """An index operand as the interpreter keeps it: an int, or an affine form."""
    return value if isinstance(value, Affine) else int(value)  # type: ignore[call-overload]


# --- structural identity of kernels --------------------------------------------------------

# attributes that describe a kernel to the user and never change what it computes
_DESCRIPTIVE = frozenset({"sym_name", "spyre.decisions", "spyre.cost", "spyre.partition",
                          "spyre.tiling"})


def _attr_key(attr: Attribute) -> object:
    try:
        hash(attr)
    except TypeError:
        return str(attr)
    return attr


def kernel_key(fn: func.FuncOp) -> tuple[object, ...]:
    """A hashable description of `fn` that is equal for structurally identical kernels.

    Covers every op's name, operand wiring (by position), result and block-argument types,
    properties and attributes, and the function's own attributes except its name and its
    descriptive ledger entries. Two kernels with equal keys schedule to the same template.
    """
    numbering: dict[SSAValue, int] = {}
    items: list[object] = [tuple((k, _attr_key(v)) for k, v in sorted(fn.attributes.items())
                                 if k not in _DESCRIPTIVE),
                           fn.function_type]

    def number(value: SSAValue) -> None:
        numbering[value] = len(numbering)

    def walk(op: Operation) -> None:
        items.append((
            op.name,
            tuple(numbering[v] for v in op.operands),
            tuple(r.type for r in op.results),
            tuple((k, _attr_key(v)) for k, v in sorted(op.properties.items())),
            tuple((k, _attr_key(v)) for k, v in sorted(op.attributes.items())
                  if k not in _DESCRIPTIVE),
            len(op.regions),
        ))
        for r in op.results:
            number(r)
        for region in op.regions:
            for block in region.blocks:
                items.append(("block", tuple(a.type for a in block.args)))
                for a in block.args:
                    number(a)
                for inner in block.ops:
                    walk(inner)

    for a in fn.body.block.args:
        number(a)
    for op in fn.body.block.ops:
        walk(op)
    return tuple(items)


# --- templates -----------------------------------------------------------------------------

@dataclass
class Template:
    """A core's program with its fields affine in the symbols (arguments, then x, y).

    `ops`, `units` and `deps` are shared by every instance; field values are
    `consts + coeffs @ symbols` at the flat positions `positions` of the field vector.
    """

    ops: list[str]
    units: list[int]
    deps: list[tuple[int, ...]]
    offsets: list[int]  # where each instruction's fields start in the flat field vector
    consts: np.ndarray  # int64 [fields]
    positions: np.ndarray  # int64 [relocated fields]
    coeffs: np.ndarray  # int64 [relocated fields, symbols]
    aligned: np.ndarray  # int64: positions (into `positions`) that must be 128-byte aligned
    _layout: np.ndarray | None = None  # the encoding, built on the first `encode`
    _field_bytes: np.ndarray | None = None
    _loads: tuple[np.ndarray, np.ndarray, np.ndarray | None] | None = None  # see load_partition

    @staticmethod
    def build(program: Sequence[Instr], symbols: int) -> Template:
        ops, units, deps, offsets = [], [], [], []
        consts: list[int] = []
        positions: list[int] = []
        rows: list[list[int]] = []
        aligned: list[int] = []
        for instr in program:
            ops.append(instr.op)
            units.append(instr.unit)
            deps.append(instr.deps)
            offsets.append(len(consts))
            names = SPECS_BY_NAME[instr.op].fields
            for name, value in zip(names, instr.args):
                if isinstance(value, Affine):
                    if name == "ddr":
                        aligned.append(len(positions))
                    positions.append(len(consts))
                    row = [0] * symbols
                    for s, c in value.terms.items():
                        row[s] = c
                    rows.append(row)
                    consts.append(value.const)
                else:
                    consts.append(int(value))
        offsets.append(len(consts))
        return Template(ops, units, deps, offsets, np.array(consts, dtype=np.int64),
                        np.array(positions, dtype=np.int64),
                        np.array(rows, dtype=np.int64).reshape(len(rows), symbols),
                        np.array(aligned, dtype=np.int64))

    def _relocated(self, symbols: np.ndarray) -> np.ndarray | None:
        """The relocated fields [relocated fields, instances] for the symbol columns, or
        None when a DMA's LPDDR address is not 128-byte aligned (the caller reruns the
        plain interpreter, whose error names the op)."""
        relocated = self.consts[self.positions][:, None] + self.coeffs @ symbols
        if len(self.aligned) and (relocated[self.aligned] % STICK_BYTES).any():
            return None
        return relocated

    def instantiate(self, symbols: np.ndarray) -> list[list[Instr]] | None:
        """Programs for each column of `symbols` [symbols, instances] (None: see
        `_relocated`)."""
        relocated = self._relocated(symbols)
        if relocated is None:
            return None
        values = np.repeat(self.consts[:, None], symbols.shape[1], axis=1)
        values[self.positions] = relocated
        columns = values.T.tolist()
        offsets, ops, units, deps = self.offsets, self.ops, self.units, self.deps
        return [[Instr(ops[i], tuple(col[offsets[i]:offsets[i + 1]]), units[i], deps[i])
                 for i in range(len(ops))] for col in columns]

    def encode(self, symbols: np.ndarray) -> list[bytes] | None:
        """`isa.encode_program` of each instance, made by patching the relocated fields
        into the encoding of the template's constant parts (None: see `_relocated`)."""
        relocated = self._relocated(symbols)
        if relocated is None:
            return None
        if self._layout is None:
            self._layout, self._field_bytes = self._encoding_layout()
        count = symbols.shape[1]
        out = np.repeat(self._layout[None, :], count, axis=0)
        if len(self.positions):
            patch = np.ascontiguousarray(relocated.T.astype("<i8")).view(np.uint8)
            out[:, self._field_bytes] = patch.reshape(count, -1)
        return [row.tobytes() for row in out]

    def relocates_addresses_only(self) -> bool:
        """Whether every relocated field is a DMA's LPDDR address (`ddr`): then nothing in
        the program but those addresses differs between its instances."""
        names = [n for op in self.ops for n in SPECS_BY_NAME[op].fields]
        return all(names[p] == "ddr" for p in self.positions.tolist())

    def load_partition(self, relocated: np.ndarray) -> bytes:
        """Which dma.loads of the instances (columns of `relocated`, see `_relocated`) read
        the same LPDDR block: a label per (instance, load), numbered by first occurrence.
        Ring sharing decides from this partition alone (and from constant fields), so two
        launches with equal partitions are shared alike."""
        if self._loads is None:
            loads = [i for i, op in enumerate(self.ops) if op == "dma.load"]
            names = SPECS_BY_NAME["dma.load"].fields
            flat = np.array([[self.offsets[i] + names.index(n) for n in _LOAD_KEY]
                             for i in loads], dtype=np.int64).reshape(len(loads), 4)
            row_of = np.full(len(self.consts), -1, dtype=np.int64)
            row_of[self.positions] = np.arange(len(self.positions))
            shape = None  # the block shape's number per load, when no instance changes it
            if len(loads) and (row_of[flat[:, 1:]] < 0).all():
                _, shape = np.unique(self.consts[flat[:, 1:]], axis=0, return_inverse=True)
                shape = shape.reshape(-1)
            self._loads = (flat, row_of[flat], shape)
        flat, rows, shape = self._loads
        if not len(flat):
            return b""
        values = np.where((rows >= 0)[..., None], relocated[np.maximum(rows, 0)],
                          self.consts[flat][..., None])  # [loads, 4, instances]
        ddr = values[:, 0, :].T.reshape(-1)  # instance-major, as the 2-D keys below
        shapes = 0 if shape is None else int(shape.max()) + 1
        if shape is not None and ddr.min() >= 0 and ddr.max() < (1 << 62) // shapes:
            keys = ddr * shapes + np.tile(shape, relocated.shape[1])  # one int per block
            _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        else:
            keys = values.transpose(2, 0, 1).reshape(-1, len(_LOAD_KEY))
            _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        rank = np.empty_like(first)
        rank[np.argsort(first, kind="stable")] = np.arange(len(first))
        return rank[inverse.reshape(-1)].astype(np.int32).tobytes()

    def derived(self, program: Sequence[Instr], origin: Sequence[int],
                symbols: np.ndarray) -> Template:
        """The template of `program`, a rewrite of this template's instance at the symbol
        column `symbols` in which instruction i stands for instruction `origin[i]`: a field
        of the same op and name as a relocated field of its origin is relocated with it (its
        value differs from the origin's by a constant), every other field is constant.
        Exact when the rewrite depends on the relocated fields only through
        `load_partition` (ring sharing; the caller checks the partition per launch)."""
        relocated = self.consts[self.positions] + self.coeffs @ symbols
        row_of = {p: r for r, p in enumerate(self.positions.tolist())}
        affine: list[Instr] = []
        for instr, pc in zip(program, origin):
            args: list[Affine | int] = list(instr.args)
            if instr.op == self.ops[pc]:
                for j, value in enumerate(instr.args):
                    r = row_of.get(self.offsets[pc] + j)
                    if r is not None:
                        coeffs = self.coeffs[r].tolist()
                        args[j] = Affine._make(value - int(relocated[r]) + int(self.consts[
                            self.positions[r]]), dict(enumerate(coeffs)))
            affine.append(Instr(instr.op, tuple(args), instr.unit, instr.deps))  # type: ignore[arg-type]
        return Template.build(affine, len(symbols))

    def _encoding_layout(self) -> tuple[np.ndarray, np.ndarray]:
        """The encoded constant program and the byte index of every relocated field's 8
        bytes (the encoding: a 4-byte header, one i64 per field, one u32 per dependence)."""
        consts = self.consts.tolist()
        program = [Instr(op, tuple(consts[self.offsets[i]:self.offsets[i + 1]]), unit, deps)
                   for i, (op, unit, deps) in enumerate(zip(self.ops, self.units, self.deps))]
        layout = np.frombuffer(encode_program(program), dtype=np.uint8)
        field_byte = np.empty(len(consts), dtype=np.int64)  # byte offset of each field
        start = 0
        for i, deps in enumerate(self.deps):
            first, end = self.offsets[i], self.offsets[i + 1]
            field_byte[first:end] = start + 4 + 8 * np.arange(end - first)
            start += 4 + 8 * (end - first) + 4 * len(deps)
        assert start == len(layout)
        index = field_byte[self.positions][:, None] + np.arange(8)
        return layout, index.reshape(-1)


Interpret = Callable[[func.FuncOp, tuple[object, object], list[object]], list[Instr]]


@dataclass
class TemplateStats:
    """What the template cache did, for the pass's ledger and the compile-time benchmark."""

    launches: int = 0
    templates: int = 0  # kernels interpreted symbolically in the core coordinates
    per_core_templates: int = 0  # (kernel, core) pairs interpreted with concrete coordinates
    plain_cores: int = 0  # cores scheduled by the plain interpreter
    shared_relocated: int = 0  # ring-shared launches instantiated from per-core templates


@dataclass
class TemplateCache:
    """Templates by kernel structure, shared by all launches of one module.

    `interpret(fn, core, args)` is the scheduler's interpreter followed by its prefetch
    ordering: it runs on ints or on `Affine` values alike.
    """

    interpret: Interpret
    stats: TemplateStats = field(default_factory=TemplateStats)
    _by_key: dict[object, Template | None] = field(default_factory=dict)
    _ids: dict[tuple[object, ...], int] = field(default_factory=dict)
    # ring-shared launches: (structure, load partition) -> a template per core, or None when
    # sharing left the programs as they were; and the sharing report
    _shared: dict[tuple[object, bytes],
                  tuple[dict[int, Template] | None, SharingReport]] = field(default_factory=dict)

    def structure(self, fn: func.FuncOp) -> int:
        """A small id of `fn`'s `kernel_key`: equal for structurally identical kernels.
        (The key is a long tuple of attributes, and tuples do not cache their hash.)"""
        return self._ids.setdefault(kernel_key(fn), len(self._ids))

    def _template(self, key: object, fn: func.FuncOp, core: tuple[object, object],
                  nargs: int) -> Template | None:
        if key in self._by_key:
            return self._by_key[key]
        symbols: list[object] = [Affine.symbol(i) for i in range(nargs)]
        try:
            template: Template | None = Template.build(self.interpret(fn, core, symbols),
                                                       nargs + 2)
        except (Symbolic, CompileError):
            template = None  # the fallback reproduces a genuine error with its own message
        self._by_key[key] = template
        return template

    def programs(self, fn: func.FuncOp, grid: tuple[int, int], args: list[int],
                 key: object | None = None, packed: bool = False,
                 ) -> tuple[dict[int, list[Instr]] | dict[int, bytes], str]:
        """Per-core programs of `fn` on `grid` launched on `args` (packed: encoded with
        `isa.encode_program`), and how they were made: "symbolic" (one template for all
        cores), "per-core" (a template per core) or "plain" (some core interpreted
        directly)."""
        self.stats.launches += 1
        key = self.structure(fn) if key is None else key
        gm, gn = grid
        nargs = len(args)
        ids = list(range(gm * gn))
        cores = [core_coords(core, grid) for core in ids]  # (x, y): core = y * gm + x

        def make(template: Template, columns: list[tuple[int, ...]]) -> list | None:
            symbols = np.array([[*args, x, y] for x, y in columns], dtype=np.int64).T
            return template.encode(symbols) if packed else template.instantiate(symbols)

        built = key not in self._by_key
        xy = (Affine.symbol(nargs), Affine.symbol(nargs + 1))
        template = self._template(key, fn, xy, nargs)
        if template is not None:
            self.stats.templates += built
            made = make(template, cores)
            if made is not None:
                return dict(zip(ids, made)), "symbolic"
        programs: dict = {}
        how = "per-core"
        for core_id, (x, y) in zip(ids, cores):
            core_key = (key, x, y)
            built = core_key not in self._by_key
            per_core = self._template(core_key, fn, (x, y), nargs)
            made = None
            if per_core is not None:
                self.stats.per_core_templates += built
                made = make(per_core, [(x, y)])
            if made is None:
                self.stats.plain_cores += 1
                how = "plain"
                program = self.interpret(fn, (x, y), list(args))
                programs[core_id] = encode_program(program) if packed else program
            else:
                programs[core_id] = made[0]
        return programs, how

    def shared_programs(self, fn: func.FuncOp, grid: tuple[int, int], args: list[int],
                        key: object | None = None, packed: bool = False,
                        ) -> tuple[dict[int, list[Instr]] | dict[int, bytes], str, SharingReport]:
        """`programs` with the operand tiles several cores load shared over the ring
        (`ring_sharing.share_loads`, note 38), and the sharing report.

        Sharing rewrites each core's program differently (the chain's first core loads,
        the others receive and forward), but only from which loads read the same LPDDR block
        (`Template.load_partition`) and from fields that are constant in the template. So
        the first launch of a structure with a given partition is shared instruction by
        instruction and gives a template per core (`Template.derived`); every later launch
        with the same partition instantiates those, one NumPy product per core. Kernels
        without a symbolic template, or whose template relocates more than LPDDR
        addresses, are shared launch by launch."""
        key = self.structure(fn) if key is None else key
        gm, gn = grid
        nargs = len(args)
        ids = list(range(gm * gn))
        cores = [core_coords(core, grid) for core in ids]  # (x, y): core = y * gm + x
        built = key not in self._by_key
        template = self._template(key, fn, (Affine.symbol(nargs), Affine.symbol(nargs + 1)),
                                  nargs)
        symbols = np.array([[*args, x, y] for x, y in cores], dtype=np.int64).T
        relocated = None
        if template is not None and template.relocates_addresses_only():
            relocated = template._relocated(symbols)
        if template is None or relocated is None:
            programs, how = self.programs(fn, grid, args, key)
            shared, report = share_loads(programs)
            return ({c: encode_program(p) for c, p in shared.items()} if packed else shared,
                    how, report)
        self.stats.launches += 1
        self.stats.templates += built
        entry_key = (key, template.load_partition(relocated))
        entry = self._shared.get(entry_key)
        if entry is not None:
            per_core, report = entry
            if per_core is None:
                # the same relocation passed the alignment check: neither is None
                self.stats.shared_relocated += 1
                if packed:
                    encoded = template.encode(symbols)
                    assert encoded is not None
                    return dict(zip(ids, encoded)), "symbolic", report
                made = template.instantiate(symbols)
                assert made is not None
                return dict(zip(ids, made)), "symbolic", report
            programs: dict = {}
            for i, core_id in enumerate(ids):
                column = symbols[:, i:i + 1]
                one = (per_core[core_id].encode(column) if packed
                       else per_core[core_id].instantiate(column))
                if one is None:
                    break
                programs[core_id] = one[0]
            else:
                self.stats.shared_relocated += 1
                return programs, "symbolic", report
        instances = template.instantiate(symbols)
        assert instances is not None
        origins: dict[int, list[int]] = {}
        unshared = dict(zip(ids, instances))
        shared, report = share_loads(unshared, origins)
        if entry is None:
            per_core = None
            if shared is not unshared:
                per_core = {}
                for i, core_id in enumerate(ids):
                    per_core[core_id] = template.derived(shared[core_id], origins[core_id],
                                                         symbols[:, i])
                    report_progress("cores' templates derived", i + 1, len(ids))
            self._shared[entry_key] = (per_core, report)
            if packed and per_core is not None:
                # the templates' encodings are made anyway; patching them is the encoding
                encoded = []
                for i, c in enumerate(ids):
                    encoded.append(per_core[c].encode(symbols[:, i:i + 1]))
                    report_progress("cores' programs encoded", i + 1, len(ids))
                if all(e is not None for e in encoded):
                    return {c: e[0] for c, e in zip(ids, encoded)}, "symbolic", report
        return ({c: encode_program(p) for c, p in shared.items()} if packed else shared,
                "symbolic", report)


# ---- building the distinct kernels' templates in parallel processes ---------------------------

# (cache, first launch of each structure: fn, grid, args, key, ring-shared; packed) of the
# prebuild in progress: forked workers inherit it with the module's memory
_PREBUILD: tuple[TemplateCache, list[tuple[Any, tuple[int, int], list[int], object, bool]],
                 bool] | None = None


def default_jobs() -> int:
    """Processes for the template prebuild: `$SPYREC_JOBS`, else one per CPU (at most 8)."""
    configured = os.environ.get("SPYREC_JOBS", "")
    if configured.strip().isdigit():
        return max(1, int(configured))
    return max(1, min(8, os.cpu_count() or 1))


def prebuild(cache: TemplateCache,
             firsts: list[tuple[Any, tuple[int, int], list[int], object, bool]],
             packed: bool, jobs: int) -> int:
    """Build the templates of every distinct kernel structure (`firsts`: its first launch)
    in `jobs` forked processes and merge them into `cache`; the pass then finds every
    template built. Returns the processes used (1: nothing done here).

    Templates are pure functions of the kernel and its launch, so a worker builds exactly
    what the pass would have built itself, and the `.spyre` is byte for byte the same
    (tested). A worker that fails leaves its structures to the pass, which reports the
    error with its own message. Skipped where `fork` is not available, for one job, or for
    fewer than two structures."""
    global _PREBUILD  # noqa: PLW0603 - forked workers inherit it: how they get their inputs
    jobs = min(jobs, len(firsts))
    if jobs < 2 or "fork" not in multiprocessing.get_all_start_methods():
        return 1
    _PREBUILD = (cache, firsts, packed)
    try:
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            chunks = [list(range(i, len(firsts), jobs)) for i in range(jobs)]
            for by_key, shared, (templates, per_core) in pool.map(_prebuild_worker, chunks):
                cache._by_key.update(by_key)
                cache._shared.update(shared)
                cache.stats.templates += templates
                cache.stats.per_core_templates += per_core
    finally:
        _PREBUILD = None
    return jobs


def _prebuild_worker(indices: list[int]) -> tuple[dict, dict, tuple[int, int]]:
    assert _PREBUILD is not None
    cache, firsts, packed = _PREBUILD
    known, known_shared = set(cache._by_key), set(cache._shared)
    templates, per_core = cache.stats.templates, cache.stats.per_core_templates
    for i in indices:
        fn, grid, args, key, share = firsts[i]
        try:
            if share:
                cache.shared_programs(fn, grid, args, key, packed)
            else:
                cache.programs(fn, grid, args, key, packed)
        except Exception:  # noqa: BLE001 - the pass meets it again and reports it
            continue
    return ({k: v for k, v in cache._by_key.items() if k not in known},
            {k: v for k, v in cache._shared.items() if k not in known_shared},
            (cache.stats.templates - templates, cache.stats.per_core_templates - per_core))
