"""Core-batched execution computes the same bytes as instruction-by-instruction execution."""

import numpy as np
import pytest
import torch
from runtime_helpers import HOST, linear_relu_binary, pipelined_binary

from spyrec.runtime.emulator import Emulator
from spyrec.target.container import SpyreBinary


def both_ways(binary: SpyreBinary, inputs: list[np.ndarray]) -> tuple[list, list, Emulator]:
    batched = Emulator(binary)
    (out_batched, profile_batched) = batched.run(inputs)
    out_single, profile_single = Emulator(binary, batch_cores=False).run(inputs)
    assert profile_batched.to_dict() == profile_single.to_dict()
    return out_batched, out_single, batched


def actions_and_instructions(emulator: Emulator) -> tuple[int, int]:
    kernels = emulator._kernels.values()  # how many calls the batching saved
    return (sum(len(k.ordered_actions) for k in kernels),
            sum(len(p) for k in kernels for p in k.programs.values()))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_linear_relu(dtype: str) -> None:
    binary = linear_relu_binary(cores=4, dtype=dtype)
    x = np.random.default_rng(1).standard_normal((64, 128)).astype(HOST[dtype])
    batched, single, emulator = both_ways(binary, [x])
    assert batched[0].tobytes() == single[0].tobytes()
    actions, instructions = actions_and_instructions(emulator)
    assert actions < instructions  # the batched path ran


def test_pipelined_gelu() -> None:
    binary = pipelined_binary(cores=8, tiles=4)
    x = np.random.default_rng(2).standard_normal((8 * 4 * 64, 128)).astype(np.float16)
    batched, single, _ = both_ways(binary, [x])
    assert batched[0].tobytes() == single[0].tobytes()


def test_a_kernel_with_a_hazard_runs_in_schedule_order() -> None:
    binary = linear_relu_binary(drop_dep=True)
    emulator = Emulator(binary)
    actions, instructions = actions_and_instructions(emulator)
    assert actions == instructions


def test_compiled_decoder() -> None:
    from spyrec.api import to_numpy
    from spyrec.demo import DemoDecoder
    from spyrec.driver import compile_program

    torch.manual_seed(0)
    model = DemoDecoder(128, layers=1).to(torch.float16).eval()
    x = torch.randn(2, 16, 128).to(torch.float16)
    result = compile_program(torch.export.export(model, (x,)))
    assert result.binary is not None
    batched, single, emulator = both_ways(result.binary, [to_numpy(x)])
    assert batched[0].tobytes() == single[0].tobytes()
    actions, instructions = actions_and_instructions(emulator)
    assert actions < instructions


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32], ids=["fp16", "fp32"])
def test_ring_shared_kernels_batch_their_compute(dtype: torch.dtype) -> None:
    """Kernels whose cores share operand tiles over the ring run in start order with each
    PT or SFU instruction of several cores in one call, and the ring copies of one geometry
    between cores equally far apart in one strided copy, each held back until an action
    touches its bytes: the same bytes as running every instruction alone, in fewer calls."""
    from spyrec.api import to_numpy
    from spyrec.demo import DemoMLP
    from spyrec.driver import compile_program

    torch.manual_seed(0)
    model = DemoMLP(256).to(dtype).eval()
    x = torch.randn(64, 256).to(dtype)
    result = compile_program(torch.export.export(model, (x,)))
    assert result.binary is not None
    batched, single, emulator = both_ways(result.binary, [to_numpy(x)])
    assert batched[0].tobytes() == single[0].tobytes()
    kernels = list(emulator._kernels.values())
    assert any(k.rendezvous.members for k in kernels)  # ring-shared: not the pc-order path
    actions, instructions = actions_and_instructions(emulator)
    assert actions < 0.6 * instructions
    copies = [a for k in kernels for a in k.ordered_actions
              if getattr(a, "func", None) is np.copyto and a.args[0].ndim == 3]
    assert copies  # ring copies of several cores in one call


def test_progressions_cover_the_cores_once() -> None:
    from spyrec.runtime.batched import _progressions

    assert _progressions([0, 4, 5, 8, 9, 12]) == [(0, 4, 4), (5, 4, 2)]
    assert _progressions([3]) == [(3, 1, 1)]
    runs = _progressions([0, 1, 2, 5, 7, 9, 30])
    assert sorted(c for f, s, n in runs for c in range(f, f + s * n, s)) == [0, 1, 2, 5, 7, 9, 30]
