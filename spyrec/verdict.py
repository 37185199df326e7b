"""How device results are compared with a reference (PyTorch eager, or the KTIR interpreter).

`check_outputs(expected, actual, exe)` returns a `Verdict`: one `OutputVerdict` per output,
each judged by three criteria (docs/numerics.md states the rule and its calibration):

* **class**: NaN where the reference has NaN, the same infinity (with its sign) where it has
  one, a finite value where it is finite. One exception, stated by the format: DL16 has no
  infinity, so an fp16 or bf16 output under "dl16" numerics that is +-inf in eager comes
  back as NaN; that NaN matches the infinity. fp32 outputs and "ieee" numerics match
  classes exactly.
* **element**: every finite element within its own bound,
      |a_i - e_i| <= ELEMENT_FACTOR * noise * (|e_i| + rms(e)) + tiny
  where `noise` is the output's own error unit (below), rms(e) the reference's root mean
  square over its finite elements (the magnitude of the terms a rounding error is relative
  to: an element that cancels to near zero still carries the rounding of its terms), and
  `tiny` the smallest normal of the output's dtype (DL16 and eager differ on subnormals).
* **aggregate**: rms(a - e) <= AGGREGATE_FACTOR * unit * rms(e) * sample_tail(n), with
  `unit` the output's unit roundoff (below, without the random walk over rounding points)
  and `sample_tail(n)` the factor by which the rms of n independent errors may exceed its
  expectation (chi-square's 0.999 quantile: 2.7 for n = 2, 1.02 for n = 8192). Rounding
  errors are unbiased and independent, so they average out; a systematic error (a scale
  off by 1 %, a dropped bias, a stale tile) does not, and shows here even when every
  element is within its own bound. Measured, the rms error of correct programs does not
  grow with their number of rounding points (normalisations rescale earlier errors,
  residual adds dilute them): at most 2.6 storage units on 4-5 kernel programs, 2.0 on
  37-kernel ones.

An output's error units come from its cone, the kernels that feed it (traced through the
dataflow the compiler records in the binary, not summed over the whole program):

    noise = u_storage * sqrt(steps) + u_accumulate * sqrt(depth)     (per element)
    unit  = u_storage + u_accumulate * sqrt(depth)                   (aggregate)

with u_storage the unit roundoff of the coarsest format any kernel of the cone reads or
writes (fp16 under DL16 2^-10, under IEEE 2^-11; bf16 2^-8 as eager rounds it; fp32 2^-24),
steps the rounding points on the way (each kernel of the cone rounds its results once,
attention its probabilities once more, and the inputs are rounded on the way in),
u_accumulate = 2^-24 (the PT and the SFU accumulate in fp32) and depth the summed reduction
depth of the cone's kernels (their matmuls' K, their row reductions' width, attention's
scores). Independent rounding errors add like a random walk, hence the square roots; the
largest of many elements sits in the walk's tail, so the element bound keeps sqrt(steps).
fp32 programs are so held near fp32 precision. Integer and boolean outputs must match
exactly.

**Against the float64 truth** (`truth=`: the same program run in float64 on the same
half-precision weights and inputs, which a caller holding the module can compute): eager
fp16 is itself an approximation, and where its own rounding error is larger than the error
model allows (a program that amplifies rounding), the device and eager can differ by more
than the bounds while the device is as accurate as eager. A half-precision output that
failed the element or aggregate criterion (never the class one) against eager then passes
when, against the truth t, every finite element satisfies
    |a_i - t_i| <= bound_i + TRUTH_MULTIPLIER * |e_i - t_i|
and rms(a - t) <= max(TRUTH_MULTIPLIER * rms(e - t), aggregate bound * rms(t)): the device
is no further from exact arithmetic than twice eager's own error. 2 is DL16's unit roundoff
over IEEE fp16's (2^-10 / 2^-11), and the multiplier PyTorch's own accuracy checks
(`torch._dynamo.utils.same` with an fp64 reference) use between two implementations.
For fp16 under DL16 a caller may also give `format_reference`, the program run by PyTorch
with fp16 held in DL16 (`spyrec.format_reference`): the device then also passes within
FORMAT_MULTIPLIER of that run's error, |f_i - t_i| per element and rms(f - t), since the
format, not the compiler, sets how far the device can be from exact arithmetic
(docs/numerics.md, "Eager in the device's format").
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

# Calibrated on every correct model and op case the tests run (docs/numerics.md,
# "Calibration"). The largest element ratio error / (noise * (|e| + rms)) was 3.1 on the
# models and 8.6 on the op cases (fp32 gelu: the SFU's function approximation; fp16 cos at
# |x| up to 4.5: its input's rounding amplified by x tan x), which the error model does not
# describe; the largest rms error / (unit * rms) was 2.6. The factors leave a margin of 2.3x
# over each.
ELEMENT_FACTOR = 20.0
AGGREGATE_FACTOR = 6.0
TRUTH_MULTIPLIER = 2.0  # the device's error against float64 over eager's (module docstring)
# ... over eager's in the device's storage format (spyrec.format_reference; module docstring)
FORMAT_MULTIPLIER = 1.25

TAIL_Z = 3.0902  # the standard normal's 0.999 quantile (`sample_tail`)
ACCUMULATION_UNIT = 2.0**-24  # fp32 sums on the PT and the SFU
# unit roundoff of each host dtype as the device stores it ("dl16") or IEEE does ("ieee");
# bf16 keeps eager's own 2^-8 either way (the device's DL16 is finer than bf16)
STORAGE_UNIT = {
    "dl16": {"float16": 2.0**-10, "bfloat16": 2.0**-8, "float32": 2.0**-24},
    "ieee": {"float16": 2.0**-11, "bfloat16": 2.0**-8, "float32": 2.0**-24},
}
HALF_DTYPES = ("float16", "bfloat16")


@dataclass(frozen=True)
class OutputModel:
    """What one output went through: its dtype, the coarsest storage unit, reduction depth
    and rounding points of the kernels (or ops) that feed it."""

    name: str
    dtype: str
    unit: float
    depth: int
    steps: int

    @property
    def noise(self) -> float:
        """The error unit of one element, relative to the magnitude of its terms."""
        return self.unit * math.sqrt(max(self.steps, 1)) + \
            ACCUMULATION_UNIT * math.sqrt(max(self.depth, 1))

    @property
    def aggregate_unit(self) -> float:
        """The error unit of the rms error relative to the rms of the reference."""
        return self.unit + ACCUMULATION_UNIT * math.sqrt(max(self.depth, 1))


@dataclass(frozen=True)
class ModelInfo:
    """The error model of a program's outputs and the numerics it ran with."""

    outputs: list[OutputModel]
    numerics: str = "dl16"


@dataclass
class OutputVerdict:
    """The comparison of one output. `worst_*` describe the element with the largest
    error / bound ratio (its index in the output's shape); `aggregate` is rms(error) /
    rms(reference) against `aggregate_bound`; `class_mismatches` counts elements whose
    class (NaN, +inf, -inf, finite) differs, `first_class_mismatch` the first of them."""

    name: str
    ok: bool
    failed: list[str] = field(default_factory=list)  # the criteria that failed
    worst_index: tuple[int, ...] | None = None
    worst_expected: float = 0.0
    worst_actual: float = 0.0
    worst_bound: float = 0.0
    element_ratio: float = 0.0  # the worst element's error / its bound
    aggregate: float = 0.0
    aggregate_bound: float = 0.0
    class_mismatches: int = 0
    first_class_mismatch: tuple[int, ...] | None = None
    first_class_expected: float = 0.0
    first_class_actual: float = 0.0
    note: str = ""  # why the output could not be compared (shapes, integer elements)
    truth_note: str = ""  # set when the output passed against the float64 truth
    shape_note: str = ""  # shapes that differ only in size-1 dims, compared as one

    @property
    def aggregate_ratio(self) -> float:
        return self.aggregate / self.aggregate_bound if self.aggregate_bound else (
            0.0 if self.aggregate == 0 else math.inf)

    def __str__(self) -> str:
        head = f"{self.name}: {'ok' if self.ok else 'FAILED (' + ', '.join(self.failed) + ')'}"
        if self.note:
            return f"{head}; {self.note}"
        lines = [head + (f" ({self.shape_note})" if self.shape_note else "")]
        if self.worst_index is not None:
            lines.append(f"  worst element {list(self.worst_index)}: expected "
                         f"{self.worst_expected:.6g}, got {self.worst_actual:.6g}, error "
                         f"{abs(self.worst_actual - self.worst_expected):.3g}, bound "
                         f"{self.worst_bound:.3g} (ratio {self.element_ratio:.3g})")
        lines.append(f"  rms error / rms expected {self.aggregate:.3g}, bound "
                     f"{self.aggregate_bound:.3g} (ratio {self.aggregate_ratio:.3g})")
        if self.truth_note:
            lines.append(f"  {self.truth_note}")
        if self.class_mismatches:
            lines.append(f"  {self.class_mismatches} element(s) of another class (NaN/inf/"
                         f"finite), first {list(self.first_class_mismatch or ())}: expected "
                         f"{self.first_class_expected}, got {self.first_class_actual}")
        return "\n".join(lines)


@dataclass
class Verdict:
    """All outputs' verdicts; `ok` when every one passed."""

    outputs: list[OutputVerdict]

    @property
    def ok(self) -> bool:
        return all(o.ok for o in self.outputs)

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        return "\n".join(str(o) for o in self.outputs)


# ---- error models -------------------------------------------------------------------------

def kernel_depth(program: Sequence[Any]) -> int:
    """The reduction depth of one kernel from a core's program: the K of its matmul chain
    (an output tile's first pt.matmul and the ones accumulating into it), or the width of its
    widest row reduction, whichever is larger; an attention kernel adds its scores' K
    (pt.matmul_nt) in front of the softmax and P @ V."""
    reduced = [i.arg("cols") for i in program if i.op == "sfu.reduce"]
    scores = next((i.arg("k") for i in program if i.op == "pt.matmul_nt"), 0)
    matmuls = [i for i in program if i.op == "pt.matmul"]
    contraction = 0
    if matmuls:
        tile_c = matmuls[0].arg("c")
        chain = [matmuls[0]]
        for instr in matmuls[1:]:
            if instr.arg("c") == tile_c and instr.arg("accumulate"):
                chain.append(instr)
            elif instr.arg("c") == tile_c:
                break
        contraction = sum(i.arg("k") for i in chain)
    return scores + max([contraction, *reduced])


def kernel_steps(program: Sequence[Any]) -> int:
    """Rounding points of one kernel: its outputs, and attention's probabilities once more."""
    return 2 if any(i.op == "pt.matmul_nt" for i in program) else 1


def binary_model_info(binary: Any, numerics: str = "dl16") -> ModelInfo:
    """Each output's cone of kernels from the dataflow the compiler recorded in the binary
    (`spyre-emit-spyrecode`); a binary without it (an older file) charges every output with
    every kernel, which can only loosen the bounds."""
    units = STORAGE_UNIT[numerics]
    programs = [next(iter(k.programs.values()), []) for k in binary.kernels]
    depths = [kernel_depth(p) for p in programs]
    steps = [kernel_steps(p) for p in programs]
    # spyre_emit_spyrecode.DATAFLOW_KEY, spelled out: this module imports no xDSL
    recorded = binary.provenance.get("dataflow")
    if recorded:
        flow = json.loads(recorded)
        reads = [k["reads"] for k in flow["kernels"]]
        dtypes = [k["dtypes"] for k in flow["kernels"]]
        producers = flow["outputs"]
    else:
        every = list(range(len(binary.kernels)))
        reads = [every[:k] for k in every]
        dtypes = [[b.layout.host_dtype for b in binary.inputs + binary.outputs]] * len(every)
        producers = [every[-1:]] * len(binary.outputs)
    outputs = []
    for binding, made_of in zip(binary.outputs, producers):
        cone = _cone(made_of, reads)
        types = {binding.layout.host_dtype, *(d for k in cone for d in dtypes[k])}
        unit = max((units.get(d, 0.0) for d in types), default=0.0)
        outputs.append(OutputModel(binding.name, binding.layout.host_dtype, unit,
                                   sum(depths[k] for k in cone),
                                   1 + sum(steps[k] for k in cone)))
    return ModelInfo(outputs, numerics)


def _cone(start: list[int], reads: list[list[int]]) -> set[int]:
    """The kernels `start` and every kernel they read from, transitively."""
    cone: set[int] = set()
    stack = list(start)
    while stack:
        k = stack.pop()
        if k not in cone:
            cone.add(k)
            stack.extend(reads[k])
    return cone


def model_info_of(source: Any) -> ModelInfo:
    """A ModelInfo as is, or that of an `Executable` (its binary and numerics)."""
    if isinstance(source, ModelInfo):
        return source
    return binary_model_info(source.binary, getattr(source, "numerics", "dl16"))


# ---- the comparison ---------------------------------------------------------------------------

def _as_list(value: Any) -> list[torch.Tensor]:
    if isinstance(value, (tuple, list)):
        return [v if isinstance(v, torch.Tensor) else torch.as_tensor(v) for v in value]
    return [value if isinstance(value, torch.Tensor) else torch.as_tensor(value)]


def check_outputs(expected: Any, actual: Any, exe_or_model_info: Any,
                  names: Sequence[str] | None = None, truth: Any = None,
                  format_reference: Any = None) -> Verdict:
    """Compare `actual` (device results) with `expected` (the reference) output by output
    under the rule of this module. Both may be a tensor or a tuple/list of tensors; the
    error model comes from an `Executable` or a `ModelInfo`; `names` label the outputs
    (default: the model's output names); `truth`, shaped like `expected`, is the program
    run in float64 (the second look of the module docstring); `format_reference`, shaped
    like `expected`, the program run by PyTorch in the device's storage format
    (`spyrec.format_reference.run_in_device_format`), the second look's yardstick for fp16
    outputs under DL16 beside eager."""
    info = model_info_of(exe_or_model_info)
    exp, act = _as_list(expected), _as_list(actual)
    truths: list[torch.Tensor | None] = list(_as_list(truth)) if truth is not None else []
    formats: list[torch.Tensor | None] = (list(_as_list(format_reference))
                                          if format_reference is not None else [])
    verdicts = []
    if len(exp) != len(act):
        return Verdict([OutputVerdict("outputs", False, ["count"],
                                      note=f"{len(act)} output(s), expected {len(exp)}")])
    for i, (e, a) in enumerate(zip(exp, act)):
        model = info.outputs[i] if i < len(info.outputs) else None
        name = (names[i] if names is not None and i < len(names)
                else model.name if model is not None else f"output{i}")
        verdicts.append(compare_output(e, a, model, info.numerics, name,
                                       truths[i] if i < len(truths) else None,
                                       formats[i] if i < len(formats) else None))
    return Verdict(verdicts)


def sample_tail(count: int) -> float:
    """How far the rms of `count` independent errors may exceed their true rms: the square
    root of the 0.999 quantile of chi-square with `count` degrees of freedom over `count`
    (Wilson-Hilferty's approximation, within 2 % of it from one element up). 3.3 for one
    element, 2.7 for two, 1.4 for 32, 1.02 for 8192: the aggregate bound was calibrated on
    outputs of thousands of elements, where the rms error is its own expectation; on a few
    elements (a classifier's logits) it is a sample of a few, and one in a thousand
    correct results would lie beyond this factor."""
    c = 2.0 / (9.0 * max(count, 1))
    return math.sqrt((1.0 - c + TAIL_Z * math.sqrt(c)) ** 3)


def compare_output(expected: torch.Tensor, actual: torch.Tensor, model: OutputModel | None,
                   numerics: str, name: str, truth: torch.Tensor | None = None,
                   format_reference: torch.Tensor | None = None) -> OutputVerdict:
    """One output's verdict (see the module docstring)."""
    e, a = expected.detach().cpu(), actual.detach().cpu()
    shape_note = ""
    if tuple(e.shape) != tuple(a.shape):
        squeezed = [n for n in e.shape if n != 1] == [n for n in a.shape if n != 1]
        if not squeezed:
            return OutputVerdict(name, False, ["shape"],
                                 note=f"shape {list(a.shape)}, expected {list(e.shape)}")
        # the same elements with size-1 dims added or dropped (a 0-d result comes back as
        # [1]): compared element by element, and said in the report
        shape_note = f"shape {list(a.shape)}, expected {list(e.shape)}"
        a = a.reshape(e.shape)
    # the device output's dtype (a caller may have widened either side to fp32)
    dtype = model.dtype if model is not None else str(a.dtype).removeprefix("torch.")
    if dtype not in STORAGE_UNIT[numerics] or not (e.dtype.is_floating_point
                                                    or a.dtype.is_floating_point):
        return _exact(e, a, name)
    e64, a64 = e.double(), a.double()
    verdict = OutputVerdict(name, True)
    _classes(verdict, e64, a64, dtype in HALF_DTYPES and numerics == "dl16")
    finite = torch.isfinite(e64) & torch.isfinite(a64)
    if model is None:  # no error model: hold it to the output dtype's own rounding
        model = OutputModel(name, dtype, STORAGE_UNIT[numerics][dtype], 0, 1)
    noise = model.noise
    ef, af = e64[finite], a64[finite]
    if ef.numel():
        rms = float(ef.square().mean().sqrt())
        tiny = torch.finfo(getattr(torch, dtype)).smallest_normal
        error = (a64 - e64).abs().where(finite, torch.zeros((), dtype=torch.float64))
        bound = ELEMENT_FACTOR * noise * (e64.abs().where(finite, torch.zeros(
            (), dtype=torch.float64)) + rms) + tiny
        ratio = error / bound
        flat = int(ratio.argmax())
        index = tuple(int(x) for x in torch.unravel_index(torch.tensor(flat), e.shape)) \
            if e.dim() else ()
        verdict.worst_index = index
        verdict.worst_expected = float(e64.reshape(-1)[flat])
        verdict.worst_actual = float(a64.reshape(-1)[flat])
        verdict.worst_bound = float(bound.reshape(-1)[flat])
        verdict.element_ratio = float(ratio.reshape(-1)[flat])
        verdict.aggregate = (float((af - ef).square().mean().sqrt()) / rms if rms
                             else (0.0 if bool((af == ef).all()) else math.inf))
        verdict.aggregate_bound = (AGGREGATE_FACTOR * model.aggregate_unit
                                   * sample_tail(int(ef.numel())))
        if verdict.element_ratio > 1.0:
            verdict.failed.append("element")
        if verdict.aggregate > verdict.aggregate_bound:
            verdict.failed.append("aggregate")
        if (verdict.failed and "class" not in verdict.failed and truth is not None
                and dtype in HALF_DTYPES and truth.numel() == e.numel()):
            f = (format_reference.detach().cpu().double().reshape(e.shape)
                 if format_reference is not None and dtype == "float16" and numerics == "dl16"
                 and format_reference.numel() == e.numel() else None)
            _against_truth(verdict, e64, a64, truth.detach().cpu().double().reshape(e.shape),
                           bound, finite, f)
    verdict.ok = not verdict.failed
    verdict.shape_note = shape_note
    return verdict


def _against_truth(verdict: OutputVerdict, e: torch.Tensor, a: torch.Tensor, t: torch.Tensor,
                   bound: torch.Tensor, finite: torch.Tensor,
                   f: torch.Tensor | None = None) -> None:
    """The second look against the float64 truth `t` (module docstring): clears the failed
    element and aggregate criteria when the device is within TRUTH_MULTIPLIER of eager's
    own error, or of the error of eager in the device's format `f` where given (its
    non-finite elements fall back to eager's), and says so in `truth_note`."""
    finite = finite & torch.isfinite(t)
    if not bool(finite.any()):
        return
    zero = torch.zeros((), dtype=torch.float64)
    device_error = (a - t).abs().where(finite, zero)
    eager_error = (e - t).abs().where(finite, zero)
    allowed = TRUTH_MULTIPLIER * eager_error
    if f is not None:
        format_error = (f - t).abs().where(finite & torch.isfinite(f), eager_error)
        allowed = torch.maximum(allowed, FORMAT_MULTIPLIER * format_error)
    if bool((device_error > bound + allowed).any()):
        return
    tf = t[finite]
    scale = float(tf.square().mean().sqrt())
    device_rms = float(device_error[finite].square().mean().sqrt())
    eager_rms = float(eager_error[finite].square().mean().sqrt())
    format_rms = (float(format_error[finite].square().mean().sqrt()) if f is not None
                  else 0.0)
    if device_rms > max(TRUTH_MULTIPLIER * eager_rms, FORMAT_MULTIPLIER * format_rms,
                        verdict.aggregate_bound * scale):
        return
    relative = 100.0 / scale if scale else 0.0
    in_format = (f", {format_rms * relative:.3g} % in eager with fp16 held in DL16 (held to "
                 f"{FORMAT_MULTIPLIER:g}x that)" if f is not None else "")
    verdict.truth_note = (
        f"passed against the float64 truth: rms error {device_rms * relative:.3g} % of rms "
        f"on the device, {eager_rms * relative:.3g} % in eager (held to "
        f"{TRUTH_MULTIPLIER:g}x that){in_format}; failed against eager: "
        f"{', '.join(verdict.failed)}")
    verdict.failed.clear()


def _classes(verdict: OutputVerdict, e: torch.Tensor, a: torch.Tensor, dl16_half: bool) -> None:
    """Record elements whose class differs: NaN, +inf, -inf or finite. Under DL16 an fp16 or
    bf16 infinity comes back as NaN (the format has none), which matches."""
    same = (torch.isnan(e) & torch.isnan(a)) | (torch.isfinite(e) & torch.isfinite(a)) | \
        (torch.isinf(e) & (e == a))
    if dl16_half:
        same |= torch.isinf(e) & torch.isnan(a)
    bad = ~same
    count = int(bad.sum())
    if count:
        first = int(bad.reshape(-1).nonzero()[0])
        verdict.class_mismatches = count
        verdict.first_class_mismatch = tuple(
            int(x) for x in torch.unravel_index(torch.tensor(first), e.shape)) if e.dim() else ()
        verdict.first_class_expected = float(e.reshape(-1)[first])
        verdict.first_class_actual = float(a.reshape(-1)[first])
        verdict.failed.append("class")


def _exact(e: torch.Tensor, a: torch.Tensor, name: str) -> OutputVerdict:
    """Integer and boolean outputs: every element equal."""
    differ = e.to(torch.int64) != a.to(torch.int64)
    verdict = OutputVerdict(name, not bool(differ.any()))
    if not verdict.ok:
        flat = int(differ.reshape(-1).nonzero()[0])
        verdict.failed.append("element")
        verdict.worst_index = tuple(
            int(x) for x in torch.unravel_index(torch.tensor(flat), e.shape)) if e.dim() else ()
        verdict.worst_expected = float(e.reshape(-1)[flat])
        verdict.worst_actual = float(a.reshape(-1)[flat])
        verdict.element_ratio = math.inf
        verdict.note = (f"{int(differ.sum())} of {e.numel()} integer element(s) differ, first "
                        f"{list(verdict.worst_index)}: expected {verdict.worst_expected:g}, "
                        f"got {verdict.worst_actual:g}")
    return verdict
