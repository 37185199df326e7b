"""Roofline suite: emulated time and off-chip traffic of single ops against the target's limits.

One command measures fp16 GEMMs from 128 to 4096 (with sizes that are not multiples of 64),
the memory-bound chain add -> gelu -> mul on 4096 x 4096, softmax / layer norm / RMS norm
over rows, SDPA prefill and decode, and a Granite-3.3-8B-shaped decoder layer of the zoo
(prefill of 512 tokens; a decode step over a KV cache of 2048), each compiled several ways:
as spyrec compiles it, with fusion off (`fuse=False`), with double buffering off
(`double_buffer=False`), for GEMMs, attention and the layer with ring sharing off
(`share="none"`, design note 38), for GEMMs and the layer without tails (`tail=1`: no last
column tile computed in row pieces, design note 57; not run by default) and, for the row
reductions and the layer, with every reduced row on one core (`ring_reduce=False`: no
partial sums combined by ring.reduce, design note 59) and, for the layer, with no kernel's
result kept in LX for the next kernel (`keep_in_lx=False`, design note 61):

    .venv/bin/python benchmarks/roofline.py [--quick] [--only gemm|chain|norm|sdpa|granite|NAME]
                                            [--variants default,nofuse,nobuf,noring,notail,
                                                        noreduce,nokeep]

Per case and variant it prints emulated µs (the emulator in timing-only mode: the schedule
and the profile, no data), the roofline bound of the whole program (max(flops / 98.3 TFLOPS,
minimum bytes / 204.8 GB/s)), their ratio (1.0 = at the hardware's limit), off-chip bytes
against the minimum (each input and weight read once, each output written once, unpadded),
both the source program's figures of the profile (`program_flops`,
`program_min_offchip_bytes`, design note 70: the flops of every op as written, not only the
matmuls'),
the LX peak of any core, and for a GEMM the core split, tile and resident operand chosen
and the best time any blocking could reach without sharing operands between cores over the
ring (`split_bound_us`), as a ratio to the emulated time.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IntegerAttr, StringAttr

from spyrec.driver import compile_program
from spyrec.pipelines import compile_options
from spyrec.runtime.emulator import Emulator
from spyrec.target import DEFAULT_TARGET
from spyrec.zoo import Chain, Gemm, RowSum, Sdpa, Softmax

VARIANTS: dict[str, dict[str, object]] = {
    "default": {},
    "nofuse": {"fuse": False},
    "nobuf": {"double_buffer": False},
    "noring": {"share": "none"},
    "notail": {"tail": 1},
    "noreduce": {"ring_reduce": False},
    "nokeep": {"keep_in_lx": False},
}


class Norm(torch.nn.Module):
    def __init__(self, kind: str, n: int):
        super().__init__()
        self.norm = torch.nn.LayerNorm(n) if kind == "layernorm" else torch.nn.RMSNorm(n)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


@dataclass(frozen=True)
class Case:
    group: str
    name: str
    build: Callable[[], tuple[torch.nn.Module, tuple[torch.Tensor, ...]]]
    split_bound_us: float = 0.0  # a GEMM's best time with no operand shared between cores


def gemm(m: int, k: int, n: int) -> Case:
    return Case("gemm", f"gemm {m}x{k}x{n}",
                lambda: (Gemm(k, n), (torch.randn(m, k),)), split_bound_us(m, k, n))


def rows(name: str, module: Callable[[], torch.nn.Module], m: int, n: int,
         inputs: int = 1, group: str = "norm") -> Case:
    return Case(group, f"{name} {m}x{n}",
                lambda: (module(), tuple(torch.randn(m, n) for _ in range(inputs))))


def sdpa(heads: int, q_len: int, kv_len: int, dim: int = 64) -> Case:
    kind = "decode" if q_len == 1 else "prefill"
    return Case("sdpa", f"sdpa {kind} h{heads} L{q_len} S{kv_len} d{dim}",
                lambda: (Sdpa(), (torch.randn(1, heads, q_len, dim),
                                  torch.randn(1, heads, kv_len, dim),
                                  torch.randn(1, heads, kv_len, dim))))


def granite(kind: str, tokens: int) -> Case:
    """The zoo's Granite-3.3-8B-shaped layer: a causal prefill of `tokens` (the program's
    flops count each row's (tokens + 1) / 2 keys on average), or one decode step over a cache
    of `tokens` entries (the masked attention reads all of them)."""
    from spyrec.zoo import granite_decode, granite_prefill

    if kind == "prefill":
        build = partial(granite_prefill, torch.float16, tokens)
    else:
        build = partial(granite_decode, torch.float16, tokens, tokens // 2)
    name = f"granite-8b layer prefill S{tokens}" if kind == "prefill" else \
        f"granite-8b layer decode cache {tokens}"
    return Case("granite", name, build)


QUICK_GEMMS = [(128, 128, 128), (256, 1000, 320), (1000, 1500, 1000), (1024, 1024, 1024)]
GEMMS = [(128, 128, 128), (256, 256, 256), (512, 512, 512), (256, 1000, 320),
         (1000, 1500, 1000), (1024, 1024, 1024), (1500, 1000, 1500), (1024, 2048, 2048),
         (2048, 2048, 2048), (128, 4096, 4096), (4096, 128, 4096), (4096, 4096, 4096)]


def cases(quick: bool) -> list[Case]:
    size = 1024 if quick else 4096
    out = [gemm(*s) for s in (QUICK_GEMMS if quick else GEMMS)]
    out.append(rows("add->gelu->mul", Chain, size, size, inputs=3, group="chain"))
    out += [rows("softmax", Softmax, size, size),
            rows("layernorm", lambda: Norm("layernorm", size), size, size),
            rows("rmsnorm", lambda: Norm("rmsnorm", size), size, size)]
    # few long rows: fewer rows than cores, so each row is split over a grid row and its
    # partial sums are all-reduced with ring.reduce (design note 59)
    long = 1 if quick else 4
    out += [rows("rowsum", RowSum, 4, 16384 * long),
            rows("rmsnorm", lambda: Norm("rmsnorm", 16384 * long), 4, 16384 * long),
            rows("layernorm", lambda: Norm("layernorm", 8192 * long), 2, 8192 * long)]
    out += [sdpa(8, 256, 256) if quick else sdpa(8, 1024, 1024),
            sdpa(8, 1, 1024) if quick else sdpa(8, 1, 2048)]
    if not quick:  # 400 MB of weights each: about a minute per variant
        out += [granite("prefill", 512), granite("decode", 2048)]
    return out


def split_bound_us(m: int, k: int, n: int) -> float:
    """The best time any blocking can reach when every core reads its own operands from
    LPDDR (no sharing over the ring): over all core grids gm x gn <= 32, each core reading
    its rows of A and columns of B exactly once, max(traffic / bandwidth, flops / the cores'
    peak). Traffic is gn |A| + gm |B| + |C|: A is read by every core column, B by every row."""
    target = DEFAULT_TARGET
    a, b, c = 2 * m * k, 2 * k * n, 2 * m * n
    best = float("inf")
    for gm in range(1, target.num_cores + 1):
        for gn in range(1, target.num_cores // gm + 1):
            traffic = gn * a + gm * b + c
            compute = 2 * m * k * n / (gm * gn * target.peak_flops_per_core)
            best = min(best, max(traffic / target.lpddr_bytes_per_s, compute))
    return best * 1e6


def _decisions(module) -> str:  # an xDSL ModuleOp
    """The matmul kernels' split, tile and resident operand, from the decision ledger."""
    found = []
    for op in module.walk():
        if not isinstance(op, func.FuncOp):
            continue
        ledger = op.attributes.get("spyre.decisions")
        grid = op.attributes.get("grid")
        if not isinstance(ledger, DictionaryAttr) or not isinstance(grid, ArrayAttr):
            continue
        resident = ledger.data.get("resident")
        if not isinstance(resident, StringAttr):
            continue
        tile = ledger.data["tile"]
        assert isinstance(tile, ArrayAttr)
        dims = "x".join(str(t.value.data) for t in tile.data)
        cores = "x".join(str(g.value.data) for g in grid.data)
        tiling = ledger.data["spyre.tiling"]
        assert isinstance(tiling, DictionaryAttr)
        share = tiling.data.get("share")
        ring = "+ring" if isinstance(share, StringAttr) and share.data == "ring" else ""
        tail = tiling.data.get("tail")
        ring += f"+tail{tail.value.data}" if isinstance(tail, IntegerAttr) else ""
        found.append(f"{cores} / {dims} / {resident.data}{ring}")
    return ", ".join(found) or "-"


def measure(case: Case, variant: dict[str, object]) -> dict[str, object]:
    torch.manual_seed(0)
    module, inputs = case.build()
    module = module.to(torch.float16).eval()
    inputs = tuple(t.to(torch.float16) if t.is_floating_point() else t for t in inputs)
    ep = torch.export.export(module, inputs)
    start = time.perf_counter()
    result = compile_program(ep, pass_options=compile_options(**variant))  # type: ignore[arg-type]
    compile_s = time.perf_counter() - start
    assert result.binary is not None
    _, prof = Emulator(result.binary, mode="timing").run()
    emulated = prof.emulated_us
    return {
        "compile_s": compile_s, "kernels": len(result.binary.kernels), "us": emulated,
        "roofline": prof.roofline_us, "ratio": prof.roofline_ratio, "bytes": prof.bytes_ratio,
        "lx": prof.lx_peak_bytes, "blocking": _decisions(result.module),
        "split_bound": case.split_bound_us / emulated if case.split_bound_us else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes only (about a minute)")
    parser.add_argument("--only", action="append",
                        help="a group (gemm, chain, norm, sdpa, granite) or part of a case name; "
                        "repeatable")
    parser.add_argument("--variants", default="default,nofuse,nobuf,noring,noreduce,nokeep",
                        help="comma-separated subset of " + ",".join(VARIANTS))
    args = parser.parse_args()
    variants = args.variants.split(",")
    print("| case | variant | kernels | emulated µs | roofline µs | ratio | off-chip / min "
          "| LX peak KiB | split / tile / resident | no-sharing bound / emulated | compile s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for case in cases(args.quick):
        if args.only and not any(o == case.group or o in case.name for o in args.only):
            continue
        for name in variants:
            if name == "nofuse" and case.group == "gemm":
                continue  # one op: nothing to fuse
            if name == "noring" and case.group not in ("gemm", "sdpa", "granite"):
                continue  # nothing shared over the ring
            if name == "notail" and case.group not in ("gemm", "granite"):
                continue  # no matmul tiles
            if name == "noreduce" and case.group not in ("norm", "granite"):
                continue  # no reduced rows
            if name == "nokeep" and case.group != "granite":
                continue  # one kernel, or no pair that reads a result elementwise
            try:
                r = measure(case, VARIANTS[name])
            except Exception as exc:  # noqa: BLE001 - a row that failed says why
                print(f"| {case.name} | {name} | failed: {type(exc).__name__}: "
                      f"{str(exc).splitlines()[0][:120]} ||||||||")
                continue
            bound = f"{r['split_bound']:.2f}" if r["split_bound"] else "-"
            print(f"| {case.name} | {name} | {r['kernels']} | {r['us']:.1f} | {r['roofline']:.1f} "
                  f"| {r['ratio']:.2f} | {r['bytes']:.2f} | {r['lx'] / 1024:.0f} "  # type: ignore[operator]
                  f"| {r['blocking']} | {bound} | {r['compile_s']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
