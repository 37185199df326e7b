"""The Spyre emulator: runs a SpyreBinary's plans on emulated memory with a cycle model.

Construction performs the job preparation plan (allocations, init.bin into the program area,
weights converted to device format) and loads every kernel the execution plan launches: its
programs are decoded from the emulated program area and their loops unrolled, each
instruction is validated against the target, the allocations and the per-core span rule (a
bad one raises DeviceFault naming core, pc, loop iteration and instruction), the ring and
sync instructions are matched into groups, the LX hazard checker runs and the discrete-event
model (timing.py) schedules the kernel, which depends on nothing but its programs. So a
binary that would fault or deadlock is refused before anything runs.

Programs that differ only in their DMAs' LPDDR addresses (the cores of a kernel, the kernels
of the layers of a model) are loaded once (relocate.py): a core program equal to a loaded
one but for those addresses reuses its unrolled instructions, LX accesses, costs and hazard
check, and a kernel equal to a loaded one reuses all of that and its ring groups and
schedule; only the addresses are checked per instance, with NumPy over all its DMAs. A
check that fails sends the kernel through the full load, so the fault is the same either
way. Programs with LX hazards are never reused.

`run` then follows the execution plan: inputs are checked against the signature and copied in,
each kernel's instructions are executed (in "full" mode) and its profile assembled from the
schedule, and outputs are copied out. Instructions execute in the order the schedule started
them, so a missing dependency shows up in the numbers as it would on hardware; a hazard-free
kernel without ring or sync instructions runs batched over its cores instead (batched.py),
which gives the same bytes. Kernels run one after another: a launch waits for the previous
kernel to finish on all cores.

Mode "timing" keeps no memory contents: addresses are still checked and the schedule is the
same, so it reports the same emulated time as "full", but it needs neither inputs nor time for
data work.
"""

from __future__ import annotations

import bisect
import copy
import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from spyrec.diagnostics import RunError
from spyrec.runtime import dl16, ops, ring
from spyrec.runtime.batched import (
    START_ORDER_BATCH_LIMIT,
    instruction_touches,
    pc_order_actions,
    start_order_actions,
)
from spyrec.runtime.blas import single_threaded_blas
from spyrec.runtime.constant_tiles import ConstantTiles, ConstantWalk
from spyrec.runtime.dl16 import half_codec
from spyrec.runtime.hazards import Access, check_core, check_kernel, reported
from spyrec.runtime.layout import HOST_DTYPE, check_int32, from_device, to_device
from spyrec.runtime.memory import ALIGNMENT, DeviceFault, DeviceMemory, LocalMemory
from spyrec.runtime.profile import KernelProfile, Profile, Timeline
from spyrec.runtime.relocate import BytePattern, FlatDmas, ddr_field_offsets, relocated
from spyrec.runtime.span import SpanChecker, TensorTable
from spyrec.runtime.timing import Cost, DeadlockError, Schedule, instr_cost, schedule
from spyrec.target import SpyreTarget, round_up, target_named
from spyrec.target.container import (
    D2H,
    H2D,
    INIT_BIN,
    ContainerError,
    InitBin,
    KernelImage,
    SpyreBinary,
    build_job,
    decode_job_binary,
    job_binary_table,
)
from spyrec.target.isa import (
    DType,
    EncodingError,
    Engine,
    Expanded,
    Instr,
    ProgramError,
    check_program,
    ddr_region,
    decode_program,
    expand_loops,
    matmul_flops,
)
from spyrec.target.rendezvous import RENDEZVOUS_OPS, Rendezvous
from spyrec.target.rendezvous import match as match_rendezvous

MODES = ("full", "timing")


class InputError(RunError, ValueError):
    """Inputs that do not match the binary's signature (a RunError: reported without a
    traceback)."""


def _check_no_infinity(name: str, array: np.ndarray) -> None:
    """DL16 has one pattern for NaN, both infinities and overflow (NINF, read back as NaN),
    so a 16-bit input holding +-inf, or a bf16 value beyond DL16's largest finite magnitude
    (about 8.57e9), would reach the kernels as NaN: exp(-inf) would give NaN where eager
    gives 0. Refused, naming the first one; NaN itself is kept (NINF is NaN)."""
    values = array.astype(np.float32)
    with np.errstate(invalid="ignore"):
        lost = (dl16.encode(values) & np.uint16(dl16.NINF)) == dl16.NINF
        lost &= ~np.isnan(values)
    if not lost.any():
        return
    first = tuple(int(i) for i in np.argwhere(lost)[0])
    value = float(values[first])
    what = "an infinity" if math.isinf(value) else "a value beyond its largest finite 8.57e9"
    raise InputError(
        f"input '{name}' holds {value} at {list(first)} ({int(lost.sum())} such values): its "
        "16-bit values live on Spyre as DL16, which has no infinity (NaN, +-inf and overflow "
        f"share one pattern), so {what} would reach the program as NaN and the result would "
        "not be eager's. Use a large finite value instead (an attention mask: "
        "torch.finfo(torch.float16).min, not -inf), or pass the input as float32")


def _check_int_limit(name: str, array: np.ndarray, limit: int) -> None:
    """The program computes integers from this input in f32 (design note 28c): from an
    integer input's values, or from a float input's through a cast to an integer. They are
    exact only while every integer it computes stays within 2^24; spyre-legalize derived
    the largest input magnitude that guarantees it. Refused beyond it, naming the first
    such value (a NaN passes: its cast to an integer is undefined in PyTorch too)."""
    floats = array.dtype.kind not in "iub"  # f16, f32 and bfloat16 (kind V)
    over = np.abs(array.astype(np.float64 if floats else np.int64)) > limit
    if not over.any():
        return
    first = tuple(int(i) for i in np.argwhere(over)[0])
    value = float(array[first]) if floats else int(array[first])
    how = ("converts values computed from this float input to integers and computes with "
           "them" if floats else "computes with this integer input")
    fix = ("compute the integers on the host and pass them as an input" if floats else
           "compute with them in float in the model (`.float()` before the arithmetic)")
    raise InputError(
        f"input '{name}' holds {value} at {list(first)} ({int(over.sum())} such values): "
        f"the program {how} as f32, exact only while |value| <= {limit} here (the "
        "integers it computes from it must stay within 2^24 = 16777216), so the result "
        f"would not be eager's. Pass smaller values, or {fix}")


class HazardError(RuntimeError):
    """An LX hazard found in strict mode."""


@dataclass
class _Kernel:
    """A kernel as loaded from the program area: validated, costed and hazard-checked.

    In timing mode a kernel reused from another of the same template (relocate.py) keeps
    that kernel's `programs`, whose DMAs have the other kernel's LPDDR addresses: the
    profile's timeline reads their engines and LX operands only.
    """

    image: KernelImage
    programs: dict[int, list[Instr]]  # loops unrolled
    expanded: dict[int, Expanded]  # where each instruction of `programs` comes from
    costs: dict[int, list[Cost]]
    hazards: list[str]
    lx_peak_bytes: int
    pt_flops: int
    timed: Schedule  # from cycle 0
    rendezvous: Rendezvous
    ordered_actions: list[Callable[[], None]]  # full mode: what to run, in order

    def __post_init__(self) -> None:
        # what every run's profile needs, computed once
        self.instructions = sum(len(p) for p in self.programs.values())
        self.origins = {core: e.origin for core, e in self.expanded.items()}
        self.tracks = {core: [c.track for c in costs] for core, costs in self.costs.items()}


@dataclass(frozen=True)
class _CoreTemplate:
    """A hazard-free core program as loaded once, for the programs equal to it but for
    their DMAs' LPDDR addresses (`pattern`)."""

    pattern: BytePattern  # its encoding with every DMA's `ddr` zeroed
    core: int | None  # the one core it serves if it has ring or sync instructions, else None
    expanded: Expanded  # unrolled, with the LPDDR addresses of the first program
    accesses: list[Access]
    lx_peak: int
    costs: list[Cost]
    dmas: FlatDmas


@dataclass(frozen=True)
class _KernelTemplate:
    """A hazard-free kernel as loaded once, for the kernels whose job binary equals its but
    for the DMAs' LPDDR addresses (`pattern`); `kernel` is the first one."""

    pattern: BytePattern  # the job binary with every DMA's `ddr` zeroed
    kernel: _Kernel
    cores: dict[int, tuple[FlatDmas, int, int]]  # core -> its DMAs, their span in the arrays
    slot: np.ndarray  # every flat DMA of every core, in core order: its `pattern` field
    delta: np.ndarray  # ... what loop iterations add to it
    extent: np.ndarray  # ... its LPDDR region's size
    core_of: np.ndarray  # ... its core


class Emulator:
    """Runs a SpyreBinary on an emulated Spyre card.

    numerics: "dl16" (the device) or "ieee" (16-bit data held as IEEE fp16, for debugging).
    mode: "full" (numerics and timing) or "timing" (timing only, no memory contents).
    strict: raise HazardError on LX hazards instead of reporting them as profile warnings.
    check_hazards: run the hazard checker at all (it costs about as much as timing a kernel).
    batch_cores: in full mode, run a hazard-free kernel without ring or sync instructions pc
    by pc, each instruction once for all its cores (batched.py; same results, less time);
    otherwise, and for every other kernel, instructions run one by one in the schedule's
    start order.
    reuse: load programs that differ only in their LPDDR addresses once (relocate.py); off,
    every kernel is loaded instruction by instruction (the reference the tests hold it to).
    keep_constants: in full mode, decode the operands that hold weights on every call only
    on the first call, and keep the float32 arrays (constant_tiles.py; same results).
    """

    def __init__(
        self,
        binary: SpyreBinary,
        target: SpyreTarget | None = None,
        numerics: str = "dl16",
        mode: str = "full",
        *,
        strict: bool = False,
        check_hazards: bool = True,
        batch_cores: bool = True,
        reuse: bool = True,
        keep_constants: bool = True,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown emulator mode '{mode}' (expected one of {MODES})")
        if target is None:  # the description the binary was compiled for
            try:
                target = target_named(binary.target)
            except ValueError as error:
                raise ContainerError(f"the binary was compiled for an unknown target: {error}; "
                                     "register it, or pass the Emulator a target") from None
        self.binary = binary
        self.target = target
        self.numerics = numerics
        self.codec = half_codec(numerics)
        self.mode = mode
        self.strict = strict
        self.check_hazards = check_hazards
        self.batch_cores = batch_cores
        self.reuse = reuse
        job = build_job(binary, target)
        self.prep_plan, self.exec_plan = job.prep_plan, job.exec_plan
        backed = mode == "full"
        self.memory = DeviceMemory(target, backed=backed)
        # every core's LX is a row of one array, so a kernel can run batched over its cores
        self._lx_all = np.zeros((target.num_cores, target.lx_bytes), dtype=np.uint8) \
            if backed else None
        self.lx = [LocalMemory(target.lx_bytes, backed=backed,
                               buffer=None if self._lx_all is None else self._lx_all[core])
                   for core in range(target.num_cores)]
        self.warnings: list[str] = []
        if binary.target != target.name:
            self.warnings.append(
                f"the binary was compiled for target '{binary.target}', emulating '{target.name}'")
        self._prepare(job.init)
        self._tensors = [
            (b.name, b.addr, b.addr + round_up(max(b.layout.nbytes, 1), ALIGNMENT))
            for b in [*binary.inputs, *binary.outputs, *binary.intermediates,
                      *(w for w, _ in binary.weights)]]
        self._tensor_table = TensorTable(self._tensors, self.memory)
        self._core_templates: dict[int, list[_CoreTemplate]] = {}  # by encoded size
        self._kernel_templates: dict[tuple[int, ...], list[_KernelTemplate]] = {}
        self._patched: dict[tuple[int, tuple[int, ...]], _Kernel] = {}
        self._constants = ConstantTiles(
            [(w.addr, w.addr + w.layout.nbytes) for w, _ in binary.weights], target.lx_bytes
        ) if keep_constants and mode == "full" else None
        self._kernels = {
            step["job_bin_ptr"]: self._load(step["job_bin_ptr"], binary.kernels[step["kernel"]])
            for step in self.exec_plan if step["op"] == "ComputeOnDevice"
        }
        if self._constants is not None:  # a weight some kernel writes is not constant
            self._constants.finalize([p for k in self._kernels.values()
                                      for p in k.programs.values()])

    # ---- job preparation ---------------------------------------------------------------------

    def _prepare(self, init: InitBin) -> None:
        weights = {f"weights/{i}": w for i, w in enumerate(self.binary.weights)}
        for step in self.prep_plan:
            if step["op"] == "Allocate":
                # The program area is always backed: kernels are decoded from it.
                is_program = step["dev_ptr"] == self.prep_plan[0]["dev_ptr"]
                self.memory.allocate(step["dev_ptr"], step["size"], step["name"],
                                     backed=True if is_program else None)
            elif step["src"] == INIT_BIN:
                self.memory.write(step["dev_ptr"], np.frombuffer(init.data, dtype=np.uint8))
            elif self.mode == "full":
                binding, array = weights[step["src"]]
                self.memory.write(step["dev_ptr"], to_device(binding.layout, array, self.numerics))

    def _load(self, job_bin_ptr: int, image: KernelImage) -> _Kernel:
        """The kernel whose job binary is at `job_bin_ptr`: an instance of a kernel template
        if one matches and its addresses check, else loaded core by core (core templates
        where they match), else, if a check failed there, by the full load that names the
        fault."""
        data = self.memory.contents_from(job_bin_ptr)
        if not self.reuse:
            return self._load_exact(image, decode_job_binary(data))
        table, size = job_binary_table(data)
        job = data[:size]
        key = (size, *(x for core in sorted(table) for x in (core, *table[core])))
        for template in self._kernel_templates.get(key, []):
            fields = template.pattern.fields(job)
            if fields is not None:
                kernel = self._instance(template, fields, image)
                if kernel is not None:
                    return kernel
                break
        try:
            return self._load_new(job, table, key, image)
        except (DeviceFault, EncodingError, DeadlockError, HazardError, _AddressCheckFailed):
            return self._load_exact(image, decode_job_binary(data))

    def _instance(
        self, template: _KernelTemplate, fields: np.ndarray, image: KernelImage
    ) -> _Kernel | None:
        """`template`'s kernel at the LPDDR addresses `fields`, None if one fails a check."""
        bases = fields[template.slot] + template.delta
        ends = bases + template.extent
        spans = SpanChecker(self._tensor_table, self.target.per_core_span_bytes)
        if not (self.memory.dma_bases_valid(bases, ends)
                and spans.fits(template.core_of, bases, ends)):
            return None
        kernel = copy.copy(template.kernel)  # what the profile needs is computed once
        kernel.image = image
        if self.mode == "full":
            kernel.programs = {core: relocated(kernel.programs[core], dmas, bases[start:stop])
                               for core, (dmas, start, stop) in template.cores.items()}
            kernel.ordered_actions = self._actions(kernel.programs, kernel.rendezvous, False,
                                                   kernel.timed)
        return kernel

    def _load_new(
        self, job: memoryview, table: dict[int, tuple[int, int]], key: tuple[int, ...],
        image: KernelImage,
    ) -> _Kernel:
        """Load a kernel core by core, reusing core templates; registers the kernel as a
        template if it has no hazards. _AddressCheckFailed if a reused program's addresses
        fail a check (the caller then loads it in full, for the fault)."""
        spans = SpanChecker(self._tensor_table, self.target.per_core_span_bytes)
        templates: dict[int, _CoreTemplate] = {}
        programs: dict[int, list[Instr]] = {}
        expanded: dict[int, Expanded] = {}
        costs: dict[int, list[Cost]] = {}
        found: list[str] = []
        pieces: list[tuple[int, np.ndarray, int]] = []  # per core: fields, and their byte offset
        for core in sorted(table):
            if core >= self.target.num_cores:
                raise _AddressCheckFailed  # the full load names it
            offset, size = table[core]
            raw = job[offset: offset + size]
            template, fields = self._core_template(core, raw)
            if template is None:
                program = decode_program(bytes(raw))
                flat, accesses, peak = self._validate_core(image, core, program, spans)
                core_costs = [instr_cost(i, self.target, core) for i in flat.instrs]
                hazards = (check_core(core, flat.instrs, core_costs, accesses, self.target, flat)
                           if self.check_hazards else [])
                found += hazards
                offsets = ddr_field_offsets(program)
                fields = np.asarray([i.arg("ddr") for i in program
                                     if i.spec.engine is Engine.DMA], dtype=np.int64)
                rendezvous = any(i.op in RENDEZVOUS_OPS for i in program)
                template = _CoreTemplate(BytePattern.of(raw, offsets),
                                         core if rendezvous else None, flat, accesses, peak,
                                         core_costs, FlatDmas.of(flat, fields))
                if not hazards:
                    self._core_templates.setdefault(size, []).append(template)
                instrs = flat.instrs
            else:
                assert fields is not None  # a matching template has its fields' values
                bases = template.dmas.bases(fields)
                ends = bases + template.dmas.extent
                cores = np.full(bases.size, core, dtype=np.int64)
                if not (self.memory.dma_bases_valid(bases, ends)
                        and spans.fits(cores, bases, ends)):
                    raise _AddressCheckFailed
                instrs = relocated(template.expanded.instrs, template.dmas, bases)
            templates[core] = template
            programs[core] = instrs
            expanded[core] = Expanded(instrs, template.expanded.origin, template.expanded.program)
            costs[core] = template.costs
            pieces.append((core, fields, offset))
        rendezvous = match_rendezvous(programs)
        ring.check_agreement(rendezvous, programs)
        hazards = reported(found, image.name)
        kernel = self._finish(image, programs, expanded, costs, rendezvous, hazards,
                              max((t.lx_peak for t in templates.values()), default=0))
        if not hazards:
            self._kernel_templates.setdefault(key, []).append(
                _kernel_template(job, kernel, templates, pieces))
        return kernel

    def _core_template(
        self, core: int, raw: memoryview
    ) -> tuple[_CoreTemplate | None, np.ndarray | None]:
        """A core template `raw` matches, with the values of its `ddr` fields."""
        for template in self._core_templates.get(len(raw), []):
            if template.core not in (None, core):
                continue
            fields = template.pattern.fields(raw)
            if fields is not None:
                return template, fields
        return None, None

    def _load_exact(self, image: KernelImage, encoded: dict[int, list[Instr]]) -> _Kernel:
        """Load a kernel instruction by instruction, without templates: the reference the
        template path must agree with, and where its faults are raised."""
        expanded, accesses, lx_peak = self._validated(image, encoded)
        programs = {core: flat.instrs for core, flat in expanded.items()}
        costs = {core: [instr_cost(instr, self.target, core) for instr in program]
                 for core, program in programs.items()}
        rendezvous = match_rendezvous(programs)
        ring.check_agreement(rendezvous, programs)
        hazards = (check_kernel(programs, costs, accesses, self.target, image.name, expanded)
                   if self.check_hazards else [])
        return self._finish(image, programs, expanded, costs, rendezvous, hazards, lx_peak)

    def _finish(
        self, image: KernelImage, programs: dict[int, list[Instr]],
        expanded: dict[int, Expanded], costs: dict[int, list[Cost]],
        rendezvous: Rendezvous, hazards: list[str], lx_peak: int,
    ) -> _Kernel:
        """A validated kernel's hazard verdict, schedule and (full mode) actions."""
        if hazards and self.strict:
            more = f" (and {len(hazards) - 1} more)" if len(hazards) > 1 else ""
            raise HazardError(hazards[0] + more)
        # The schedule depends on the programs alone, so it is computed once, from cycle 0.
        timed = schedule(programs, self.target, 0.0, costs, image.name, rendezvous, expanded)
        actions = (self._actions(programs, rendezvous, bool(hazards), timed)
                   if self.mode == "full" else [])
        pt_flops = sum(matmul_flops(i) for program in programs.values() for i in program)
        return _Kernel(image, programs, expanded, costs, hazards, lx_peak, pt_flops, timed,
                       rendezvous, actions)

    def _validated(
        self, image: KernelImage, encoded: dict[int, list[Instr]]
    ) -> tuple[dict[int, Expanded], dict[int, list[Access]], int]:
        """Unroll and validate every core's program (DeviceFault naming core, pc, iteration
        and instruction); returns the unrolled programs, their LX accesses and the LX peak."""
        expanded: dict[int, Expanded] = {}
        accesses: dict[int, list[Access]] = {}
        lx_peak = 0
        spans = SpanChecker(self._tensor_table, self.target.per_core_span_bytes)
        for core, program in sorted(encoded.items()):
            expanded[core], accesses[core], peak = self._validate_core(image, core, program,
                                                                        spans)
            lx_peak = max(lx_peak, peak)
        return expanded, accesses, lx_peak

    def _validate_core(
        self, image: KernelImage, core: int, program: list[Instr], spans: SpanChecker
    ) -> tuple[Expanded, list[Access], int]:
        """One core's program unrolled and validated, its LX accesses and LX peak."""
        if core >= self.target.num_cores:
            raise DeviceFault(f"kernel '{image.name}' has a program for core {core}, the "
                              f"target has {self.target.num_cores} cores")
        try:
            check_program(program)  # loops and dependencies (a file's programs come encoded)
            flat = expand_loops(program)
        except ProgramError as error:
            raise DeviceFault(error.reason).at(core, error.pc, program[error.pc]) from None
        accesses: list[Access] = []
        lx_peak = 0
        for index, instr in enumerate(flat.instrs):
            try:
                reads, writes, end = ops.validate(instr, self.target, self.memory,
                                                  self.lx[core], core)
                ddr = ddr_region(instr)
                if ddr is not None:
                    spans.check(core, ddr)
            except DeviceFault as fault:
                raise _located(fault, core, flat, index) from None
            accesses.append((reads, writes))
            lx_peak = max(lx_peak, end)
        return flat, accesses, lx_peak

    def _actions(
        self, programs: dict[int, list[Instr]], rendezvous: Rendezvous, hazards: bool,
        timed: Schedule,
    ) -> list[Callable[[], None]]:
        """What a full-mode run executes for a kernel, in order: batched over cores where
        that gives the same bytes (batched.py), else every instruction in start order.
        Operands that are the same on every call are decoded once (constant_tiles.py)."""
        if self.batch_cores and self.check_hazards and not hazards and not rendezvous.members:
            assert self._lx_all is not None
            length = {len(p) for p in programs.values()}
            if len(length) == 1:
                pc_order = [(core, pc) for pc in range(length.pop()) for core in sorted(programs)]
                memos_of = self._memos_of(programs, pc_order, rendezvous)
                batched = pc_order_actions(programs, self.memory, self.lx, self._lx_all,
                                           self.codec, memos_of)
                if batched is not None:
                    return batched
        order = _start_order(timed.start)
        memos_of = self._memos_of(programs, order, rendezvous)
        between = ring.bind(rendezvous, programs, self.lx, self.codec)
        actions = {core: [between[(core, pc)] if (core, pc) in between
                          else ops.bind(i, self.memory, self.lx[core], self.codec,
                                        where=(core, pc), memos=memos_of([(core, pc)]))
                          for pc, i in enumerate(program)]
                   for core, program in programs.items()}
        if self.batch_cores and self.check_hazards and not hazards \
                and len(order) <= START_ORDER_BATCH_LIMIT:
            assert self._lx_all is not None

            def touches(core: int, pc: int) -> list[tuple[int, int, int, bool]]:
                gid = rendezvous.group.get(core, {}).get(pc)
                partners = None if gid is None else rendezvous.members[gid]
                return instruction_touches(programs, core, pc, partners)

            ordered = start_order_actions(programs, actions, order, touches, self.memory,
                                          self._lx_all, self.codec, memos_of,
                                          lambda core, pc: _sender(programs, rendezvous,
                                                                   core, pc))
        else:
            ordered = [actions[core][pc] for core, pc in order]
        return [action for action in ordered if action is not ring.noop]

    def _memos_of(
        self, programs: dict[int, list[Instr]], order: list[tuple[int, int]],
        rendezvous: Rendezvous,
    ) -> Callable[[list[tuple[int, int]]], ops.Memos]:
        """Which operands of the kernel's actions are the same on every call, from a walk of
        its instructions in the `order` they run (constant_tiles.py)."""
        table = self._constants
        if table is None or not any(
                i.op == "dma.load" and (region := ddr_region(i)) is not None
                and table.weight_of(region) is not None
                for p in programs.values() for i in p):
            return lambda sites: None
        walk = ConstantWalk(table)
        for core, pc in order:
            instr = programs[core][pc]
            sender = _sender(programs, rendezvous, core, pc) if instr.op == "ring.recv" \
                else None
            walk.step(core, pc, instr,
                      None if sender is None else (sender[0], programs[sender[0]][sender[1]]))
        return walk.memos

    # ---- execution ---------------------------------------------------------------------------

    def _check_inputs(self, inputs: Sequence[np.ndarray]
                      ) -> tuple[list[np.ndarray], dict[str, int]]:
        """The inputs as arrays and the value of each symbolic size, read from their shapes;
        a wrong count, dtype or static size, a symbol out of its bounds or bound to two
        values is an InputError. `inputs` are the caller's (`user_inputs`); the arrays
        returned are every input's, the key masks the host makes among them."""
        bindings = self.binary.user_inputs
        if len(inputs) != len(bindings):
            names = ", ".join(b.name for b in bindings)
            raise InputError(f"expected {len(bindings)} inputs ({names}), got {len(inputs)}")
        arrays = []
        values: dict[str, int] = {}
        for binding, value in zip(bindings, inputs, strict=True):
            array = np.asarray(value)
            layout = binding.layout
            expected = tuple(binding.symbolic.get(d, n) for d, n in enumerate(layout.shape))
            if (array.ndim != len(layout.shape) or array.dtype != HOST_DTYPE[layout.host_dtype]
                    or any(a != e for a, e in zip(array.shape, expected) if isinstance(e, int))):
                raise InputError(
                    f"input '{binding.name}': expected shape {_shown(expected)} "
                    f"{layout.host_dtype}, got shape {tuple(array.shape)} {array.dtype}")
            for dim, name in binding.symbolic.items():
                size = array.shape[dim]
                lower, upper = self.binary.symbols[name]
                if not lower <= size <= upper:
                    raise InputError(
                        f"input '{binding.name}' dim {dim}: size {size} is outside the range "
                        f"[{lower}, {upper}] of symbolic size '{name}' the program was compiled "
                        "for; recompile with a wider torch.export.Dim")
                if values.setdefault(name, size) != size:
                    raise InputError(
                        f"input '{binding.name}' dim {dim}: size {size}, but symbolic size "
                        f"'{name}' is {values[name]} in an earlier input")
            if layout.host_dtype == "int64":  # int32 on device: refuse what would wrap
                try:
                    check_int32(array)
                except ValueError as error:
                    raise InputError(f"input '{binding.name}': {error}") from None
            if binding.int_limit is not None:
                _check_int_limit(binding.name, array, binding.int_limit)
            if self.numerics == "dl16" and layout.device_dtype is DType.DL16:
                _check_no_infinity(binding.name, array)
            arrays.append(array)
        return self.binary.made_inputs(arrays, values), values

    def _pad_inputs(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        """Program correction, before the run: zero-pad every symbolic dim to its upper bound."""
        out = []
        for binding, array in zip(self.binary.inputs, arrays, strict=True):
            widths = [(0, full - size) for size, full in zip(array.shape, binding.layout.shape)]
            out.append(np.pad(array, widths) if any(w for _, w in widths) else array)
        return out

    def _crop_outputs(self, outputs: list[np.ndarray], values: dict[str, int]) -> list[np.ndarray]:
        """Program correction, after the run: cut each symbolic output dim to its value."""
        out = []
        for binding, array in zip(self.binary.outputs, outputs, strict=True):
            index = tuple(slice(0, values.get(binding.symbolic[d], n)) if d in binding.symbolic
                          else slice(None) for d, n in enumerate(array.shape))
            out.append(np.ascontiguousarray(array[index]))
        return out

    def run(self, inputs: Sequence[np.ndarray] | None = None,
            sizes: Mapping[str, int] | None = None) -> tuple[list[np.ndarray], Profile]:
        """Run the execution plan once; returns the outputs (none in timing mode) and a profile.

        Inputs are host arrays in signature order (dtype float16, ml_dtypes.bfloat16, float32
        or int32); in timing mode they may be omitted, and `sizes` gives the symbolic sizes
        (default: their upper bounds) that the program correction patches the guards for.
        """
        if inputs is None and self.mode == "full":
            raise InputError("full emulation needs the inputs")
        arrays, values = self._check_inputs(inputs) if inputs is not None else ([], {})
        if inputs is None and sizes:
            values = self._check_sizes(sizes)
        launched = dict(self._kernels)
        at = {name: upper for name, (_, upper) in self.binary.symbols.items()}
        profile = Profile(self.target, warnings=list(self.warnings),
                          program=self.binary.program_cost, sizes={**at, **values})
        outputs: list[np.ndarray] = []
        cycle = 0.0
        with np.errstate(all="ignore"), single_threaded_blas():
            for step in self.exec_plan:
                if step["op"] == "ComputeOnDevice":
                    kernel = launched[step["job_bin_ptr"]]
                    kernel_profile = self._compute(kernel, cycle)
                    profile.kernels.append(kernel_profile)
                    profile.warnings += kernel.hazards
                    cycle = kernel_profile.end_cycle
                elif step["op"] == "ComputeOnHost" and step["fn"] == "patch_trips":
                    launched.update(self._patch_trips(step["patches"], values))
                elif self.mode != "full":
                    continue
                elif step["op"] == "ComputeOnHost":
                    if step["fn"] == "pad_inputs":
                        arrays = self._pad_inputs(arrays)
                    elif step["fn"] == "crop_outputs":
                        outputs = self._crop_outputs(outputs, values)
                elif step["dirn"] == H2D:
                    index = int(step["host_handle"].split(":")[1])
                    binding = self.binary.inputs[index]
                    self.memory.write(step["dev_ptr"],
                                      to_device(binding.layout, arrays[index], self.numerics))
                elif step["dirn"] == D2H:
                    index = int(step["host_handle"].split(":")[1])
                    binding = self.binary.outputs[index]
                    raw = self.memory.read(step["dev_ptr"], step["size"])
                    outputs.append(from_device(binding.layout, raw, self.numerics))
        profile.warnings += _roofline_warnings(profile)
        return outputs, profile

    def _check_sizes(self, sizes: Mapping[str, int]) -> dict[str, int]:
        """Symbolic sizes given by name (a timing run without inputs), checked like the
        inputs' sizes."""
        for name, size in sizes.items():
            if name not in self.binary.symbols:
                known = ", ".join(self.binary.symbols) or "none"
                raise InputError(f"no symbolic size '{name}' (the binary has: {known})")
            lower, upper = self.binary.symbols[name]
            if not lower <= size <= upper:
                raise InputError(f"size {size} is outside the range [{lower}, {upper}] of "
                                 f"symbolic size '{name}' the program was compiled for")
        return dict(sizes)

    def _patch_trips(self, patches: list[dict], values: Mapping[str, int]) -> dict[int, _Kernel]:
        """The program correction's patch table (design note 49): write each loop's trips (how
        many of its thresholds the symbol reaches) into the program area, and return the
        kernels as patched, by job_bin_ptr. A kernel is loaded once per distinct set of
        trips; one whose trips are all as compiled is the kernel loaded at construction."""
        by_kernel: dict[int, list[int]] = {}
        full: dict[int, list[int]] = {}
        for patch in patches:
            thresholds = patch["thresholds"]
            value = values.get(patch["symbol"])
            trips = len(thresholds) if value is None else bisect.bisect_right(thresholds, value)
            self.memory.write(patch["dev_ptr"], np.asarray([trips], dtype="<i8").view(np.uint8))
            by_kernel.setdefault(patch["kernel"], []).append(trips)
            full.setdefault(patch["kernel"], []).append(len(thresholds))
        ptrs = {step["kernel"]: step["job_bin_ptr"] for step in self.exec_plan
                if step["op"] == "ComputeOnDevice"}
        out = {}
        for index, trips in by_kernel.items():
            if trips == full[index]:
                continue
            key = (ptrs[index], tuple(trips))
            if key not in self._patched:
                kernel = self._load(ptrs[index], self.binary.kernels[index])
                # the compiler's flops and least traffic are the full kernel's: scale them
                # by what the patched one does, so the roofline stays a bound
                whole = self._kernels[ptrs[index]]
                share = kernel.pt_flops / whole.pt_flops if whole.pt_flops else 1.0
                moved = (kernel.timed.lpddr_bytes / whole.timed.lpddr_bytes
                         if whole.timed.lpddr_bytes else 1.0)
                image = kernel.image
                kernel.image = dataclasses.replace(
                    image, flops=int(image.flops * min(share, moved)),
                    min_offchip_bytes=int(image.min_offchip_bytes * moved))
                self._patched[key] = kernel
            out[ptrs[index]] = self._patched[key]
        return out

    def _compute(self, kernel: _Kernel, start_cycle: float) -> KernelProfile:
        image, timed = kernel.image, kernel.timed
        self.memory.scattered_rows.clear()  # cross-core scatter races: per kernel
        try:
            for action in kernel.ordered_actions:
                action()
        except DeviceFault as fault:  # a data-dependent fault (dma.gather's index check)
            origin = f" (from {', '.join(image.provenance)})" if image.provenance else ""
            raise DeviceFault(f"{fault.reason}; in kernel '{image.name}'{origin}", fault.address,
                              fault.core, fault.pc, fault.instr) from None
        return KernelProfile(
            name=image.name, cores=image.num_cores, start_cycle=start_cycle,
            end_cycle=start_cycle + timed.end_cycle, flops=image.flops,
            pt_flops=kernel.pt_flops, offchip_bytes=timed.lpddr_bytes,
            min_offchip_bytes=image.min_offchip_bytes, lx_peak_bytes=kernel.lx_peak_bytes,
            instructions=kernel.instructions, busy_cycles=dict(timed.busy),
            timeline=Timeline(kernel.programs, timed, start_cycle, kernel.origins,
                              kernel.tracks),
        )


class _AddressCheckFailed(Exception):
    """A reused program's LPDDR addresses failed a check: load the kernel in full."""


def _kernel_template(
    job: memoryview, kernel: _Kernel, templates: dict[int, _CoreTemplate],
    pieces: list[tuple[int, np.ndarray, int]],
) -> _KernelTemplate:
    """`kernel`, loaded from `job` core by core (`templates`; per core the values of its
    `ddr` fields and its program's offset in `job`), as a template for its relocations."""
    offsets, slot, delta, extent, core_of = [], [], [], [], []
    cores: dict[int, tuple[FlatDmas, int, int]] = {}
    fields_before = flat_before = 0
    for core, fields, offset in pieces:
        dmas = templates[core].dmas
        offsets.append(templates[core].pattern.offsets + offset)
        slot.append(dmas.slot + fields_before)
        # this kernel's own loop steps and extents: those of its core template
        delta.append(dmas.delta)
        extent.append(dmas.extent)
        core_of.append(np.full(dmas.slot.size, core, dtype=np.int64))
        cores[core] = (dmas, flat_before, flat_before + dmas.slot.size)
        fields_before += fields.size
        flat_before += dmas.slot.size
    joined = [np.concatenate(x) if x else np.zeros(0, dtype=np.int64)
              for x in (offsets, slot, delta, extent, core_of)]
    return _KernelTemplate(BytePattern.of(job, joined[0]), kernel, cores, *joined[1:])


def _located(fault: DeviceFault, core: int, flat: Expanded, index: int) -> DeviceFault:
    """A fault of an unrolled instruction, attributed to its pc (and loop iteration)."""
    pc, iteration = flat.origin[index]
    reason = fault.reason if iteration < 0 else f"{fault.reason} (loop iteration {iteration})"
    return DeviceFault(reason, fault.address, core, pc, flat.shown(index))


def _sender(programs: dict[int, list[Instr]], rendezvous: Rendezvous, core: int,
            pc: int) -> tuple[int, int] | None:
    """The (core, pc) of the ring.send matched to the ring.recv at (core, pc), if any."""
    gid = rendezvous.group.get(core, {}).get(pc)
    if gid is None or len(rendezvous.members[gid]) != rendezvous.expected[gid]:
        return None
    for m, q in rendezvous.members[gid]:
        if programs[m][q].op == "ring.send":
            return m, q
    return None


def _start_order(starts: dict[int, list[float]]) -> list[tuple[int, int]]:
    """Every instruction as (core, pc), in the order the schedule started them (ties by
    core, pc)."""
    cores = sorted(starts)
    if not cores:
        return []
    start = np.concatenate([np.asarray(starts[c], dtype=np.float64) for c in cores])
    core_of = np.concatenate([np.full(len(starts[c]), c) for c in cores])
    pc_of = np.concatenate([np.arange(len(starts[c])) for c in cores])
    order = np.lexsort((pc_of, core_of, start))
    return list(zip(core_of[order].tolist(), pc_of[order].tolist(), strict=True))


def _roofline_warnings(profile: Profile) -> list[str]:
    """A kernel faster than its own roofline: the compiler's per-kernel flops or least
    traffic overstate what the kernel does (a compiler bug in those figures). The program's
    roofline is not checked so: the source program as written may do more than the
    compiled one needs to (constants folded at compile time, masked blocks skipped), so a
    program ratio above 1 is a finding, not a fault (design note 70)."""
    warnings = []
    for kernel in profile.kernels:
        emulated = kernel.emulated_us(profile.target)
        roofline = kernel.roofline_us(profile.target)
        if roofline > emulated * (1 + 1e-9):
            warnings.append(
                f"kernel '{kernel.name}': roofline {roofline:.3f} us exceeds the emulated "
                f"{emulated:.3f} us; its declared flops or min_offchip_bytes overstate the program")
    return warnings


def _shown(shape: tuple[int | str, ...]) -> str:
    """A shape with its symbolic sizes by name: (2, x.dim1, 128)."""
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"
