"""The cycle model: costs from the target, the shared LPDDR channel, engines, deadlock, profile."""

import itertools
import json
import math

import numpy as np
import pytest
from runtime_helpers import DL16, bind, dma_only_binary, linear_relu_binary, load, pipelined_binary

from spyrec.runtime.emulator import Emulator
from spyrec.runtime.timing import DeadlockError, instr_cost, schedule
from spyrec.target import DEFAULT_TARGET
from spyrec.target.container import KernelImage, SpyreBinary
from spyrec.target.isa import Instr, UnaryFn

T = DEFAULT_TARGET
BW = T.lpddr_bytes_per_cycle  # 204.8e9 B/s at 1.5 GHz = 136.53 bytes per cycle


def matmul(m: int, k: int, n: int, unit: int = 0, deps: tuple[int, ...] = ()) -> Instr:
    return Instr.make("pt.matmul", unit=unit, deps=deps, a=0, b=0x10000, c=0x20000, m=m, k=k,
                      n=n, a_pitch=256, b_pitch=256, c_pitch=512, in_dtype=DL16, accumulate=0)


def unary(fn: UnaryFn, rows: int, cols: int, unit: int = 0) -> Instr:
    return Instr.make("sfu.unary", unit=unit, fn=fn, src=0, dst=0x40000, rows=rows, cols=cols,
                      src_pitch=256, dst_pitch=256, src_dtype=DL16, dst_dtype=DL16)


def timing_profile(binary: SpyreBinary):
    return Emulator(binary, mode="timing").run()[1]


def test_pt_cost_pads_to_the_8x8_array() -> None:
    # 2 * 64 * 128 * 64 = 1 MFLOP at 1024 FLOP/cycle = 1024 cycles.
    assert instr_cost(matmul(64, 128, 64), T).cycles == 1024
    # 3 x 5 x 7 still occupies one 8 x 8 x 8 block: 2 * 512 / 1024 = 1 cycle.
    assert instr_cost(matmul(3, 5, 7), T).cycles == 1
    # m = 9 needs two 8-row passes.
    assert instr_cost(matmul(9, 8, 8), T).cycles == 2


def test_sfu_cost_counts_sticks_and_transcendental_passes() -> None:
    # 64 rows x 64 DL16 = one stick per row: 64 sticks at one stick per cycle.
    assert instr_cost(unary(UnaryFn.RELU, 64, 64), T).cycles == 64
    # 65 DL16 columns need two sticks per row.
    assert instr_cost(unary(UnaryFn.RELU, 64, 65), T).cycles == 128
    assert instr_cost(unary(UnaryFn.EXP, 64, 64), T).cycles == 64 * T.sfu_transcendental_factor


def test_dma_cost_is_setup_plus_whole_sticks() -> None:
    cost = instr_cost(load(0, 0, 10, 100), T)
    assert (cost.cycles, cost.lpddr_bytes) == (T.dma_setup_cycles, 10 * 128)


def test_a_dma_bound_program_takes_bytes_over_bandwidth() -> None:
    # One core, 1 MiB in 16 DMAs of 64 KiB on one engine: each pays its set-up, then moves
    # its bytes at the full channel rate.
    profile = timing_profile(dma_only_binary(cores=1, nbytes_per_core=1 << 20))
    expected = 16 * T.dma_setup_cycles + (1 << 20) / BW
    assert profile.emulated_cycles >= (1 << 20) / BW
    assert profile.emulated_cycles == pytest.approx(expected)
    assert profile.offchip_bytes == 1 << 20


def test_cores_share_the_lpddr_channel() -> None:
    # Each core moves 1 MiB in one DMA. Alone, a core has the whole channel; 32 cores at once
    # get 1/32 each, so 32x the bytes take 32x the time (less the one shared set-up).
    alone = timing_profile(dma_only_binary(cores=1, nbytes_per_core=1 << 20, chunk=1 << 20))
    shared = timing_profile(dma_only_binary(cores=32, nbytes_per_core=1 << 20, chunk=1 << 20))
    assert shared.emulated_cycles >= 32 * (1 << 20) / BW
    assert shared.emulated_cycles == pytest.approx(T.dma_setup_cycles + 32 * (1 << 20) / BW)
    assert 31 < shared.emulated_cycles / alone.emulated_cycles <= 32
    assert shared.utilisation()["lpddr"] <= 1.0 + 1e-12


def test_fair_sharing_lets_a_small_transfer_finish_early() -> None:
    # Core 0 moves 1 MiB, core 1 moves 64 KiB at the same moment: processor sharing gives
    # each half the channel, so the small one ends after 2 * 64 KiB / BW, not after 1 MiB.
    programs = {0: [load(0, 0, 1, 1 << 20)], 1: [load(1 << 20, 0, 1, 1 << 16)]}
    timed = schedule(programs, T)
    setup = T.dma_setup_cycles
    assert timed.end[1][0] == pytest.approx(setup + 2 * (1 << 16) / BW)
    assert timed.end[0][0] == pytest.approx(setup + ((1 << 20) + (1 << 16)) / BW)


def test_corelets_run_in_parallel_and_an_engine_runs_in_order() -> None:
    parallel = schedule({0: [matmul(64, 128, 64, unit=0), matmul(64, 128, 64, unit=1)]}, T)
    serial = schedule({0: [matmul(64, 128, 64, unit=0), matmul(64, 128, 64, unit=0)]}, T)
    assert parallel.end_cycle == 1024 and serial.end_cycle == 2048
    dependent = schedule({0: [matmul(64, 128, 64, unit=0),
                              matmul(64, 128, 64, unit=1, deps=(0,))]}, T)
    assert dependent.start[0] == [0, 1024] and dependent.end_cycle == 2048


def test_kernels_run_one_after_another() -> None:
    first = KernelImage("first", 1, {0: [load(0, 0, 64, 256)]})
    second = KernelImage("second", 2, {1: [load(0, 0, 1, 128)]})
    x = bind("x", (64, 128), "float16", 0)
    profile = timing_profile(SpyreBinary(T.name, [x], [], [], [], [first, second]))
    k1, k2 = profile.kernels
    assert k1.start_cycle == 0 and k2.start_cycle == k1.end_cycle
    assert profile.emulated_cycles == k2.end_cycle


def test_forward_dependency_deadlock_is_reported() -> None:
    # pc 0 waits for pc 1, which is behind it on the same DMA engine.
    programs = {0: [load(0, 0, 1, 128)], 3: [load(0, 0, 1, 128), load(0, 0, 1, 128)]}
    programs[3][0] = Instr(programs[3][0].op, programs[3][0].args, 0, (1,))
    with pytest.raises(DeadlockError, match=r"deadlock in kernel 'k': core 3: pc 0 "
                                            r"\(dma.load u0 .* deps=\[1\]\) waits for pc 1 "
                                            r"\(dma.load\)"):
        schedule(programs, T, name="k")


def test_dependency_on_a_missing_instruction_is_reported() -> None:
    bad = Instr("sfu.unary", unary(UnaryFn.EXP, 1, 1).args, 0, (7,))
    with pytest.raises(DeadlockError, match="pc 7, which does not exist"):
        schedule({0: [bad]}, T)


def test_no_figure_exceeds_a_peak() -> None:
    binary = pipelined_binary(cores=32, tiles=4)
    profile = timing_profile(binary)
    seconds = profile.emulated_us * 1e-6
    assert profile.offchip_bytes / seconds <= T.lpddr_bytes_per_s * (1 + 1e-9)
    assert binary.kernels[0].flops / seconds <= T.peak_flops
    for value in profile.utilisation().values():
        assert 0 <= value <= 1 + 1e-12
    for value in profile.to_dict()["kernels"][0]["utilisation"].values():
        assert 0 <= value <= 1 + 1e-12
    assert 0 < profile.roofline_ratio <= 1
    assert profile.roofline_us <= profile.emulated_us


def test_profile_summary() -> None:
    binary = linear_relu_binary()
    _, profile = Emulator(binary).run([np.zeros((64, 128), np.float16)])
    summary = profile.to_dict()
    kernel = summary["kernels"][0]
    assert kernel["name"] == "linear_relu" and kernel["cores"] == 2
    assert kernel["flops"] == kernel["pt_flops"] == 2 * 64 * 128 * 64
    # each core loads its 32 rows of x (8 KiB), all of w (16 KiB), b (128 B); stores 4 KiB
    assert summary["offchip_bytes"] == 2 * (8192 + 16384 + 128 + 4096)
    assert summary["min_offchip_bytes"] == binary.kernels[0].min_offchip_bytes
    flops_us = kernel["flops"] / T.peak_flops * 1e6
    bytes_us = kernel["min_offchip_bytes"] / T.lpddr_bytes_per_s * 1e6
    assert summary["roofline_us"] == pytest.approx(max(flops_us, bytes_us))
    assert summary["emulated_us"] == pytest.approx(T.cycles_to_us(summary["emulated_cycles"]))
    assert summary["lx_peak_bytes"] == 0x50000 + 32 * 128  # the relu output tile ends last
    assert set(summary["utilisation"]) == {"dma", "pt", "sfu", "ring", "lpddr"}
    json.dumps(summary)  # plain data


def test_overstated_roofline_is_flagged() -> None:
    binary = linear_relu_binary()
    binary.kernels[0].flops = 10**15
    _, profile = Emulator(binary, mode="timing").run()
    assert any("roofline" in w and "overstate" in w for w in profile.warnings)


def test_trace_events() -> None:
    binary = linear_relu_binary()
    _, profile = Emulator(binary, mode="timing").run()
    events = profile.events()
    assert len(events) == 16
    assert {(e.core, e.track) for e in events} >= {(0, "dma"), (0, "pt0"), (1, "sfu0"),
                                                   (1, "sfu1")}
    # an engine never runs two instructions at once
    for core in (0, 1):
        for track in ("dma", "pt0", "sfu0", "sfu1"):
            spans = sorted((e.start, e.end) for e in events if (e.core, e.track) == (core, track))
            assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))
    trace = profile.trace_events()
    slices = [e for e in trace if e["ph"] == "X"]
    assert len(slices) == 17  # 16 instructions and the kernel
    names = {e["args"]["name"] for e in trace if e["ph"] == "M"}
    assert {"kernels", "core 0", "core 1", "dma", "pt0", "sfu1"} <= names
    assert all(isinstance(e["tid"], int) for e in slices)
    end = max(e["ts"] + e["dur"] for e in slices)
    assert end == pytest.approx(profile.emulated_us)


def test_timing_mode_handles_a_large_program_quickly() -> None:
    binary = pipelined_binary(cores=32, tiles=32, fn=UnaryFn.RELU)
    _, profile = Emulator(binary, mode="timing", check_hazards=False).run()
    assert profile.kernels[0].instructions == 32 * (1 + 4 * 32)
    # The pipeline is DMA bound: x and out stream through LPDDR once, w once per core.
    moved = profile.offchip_bytes
    assert profile.emulated_cycles >= moved / BW
    assert math.isclose(profile.utilisation()["lpddr"], moved / BW / profile.emulated_cycles)
