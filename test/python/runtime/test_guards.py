"""Trip-count patches of a counted loop (design note 49): a tile loop over the rows of a
symbolic dim gets one threshold per iteration, and the host runs the prefix of its tiles
that the actual size needs."""

from __future__ import annotations

import numpy as np
from runtime_helpers import DL16, bind, load, store

from spyrec.passes.spyrecode.spyre_place_guards import GuardInput, place_guards
from spyrec.runtime.emulator import Emulator
from spyrec.target import DEFAULT_TARGET, GIB
from spyrec.target.container import KernelImage, Patch, SpyreBinary
from spyrec.target.isa import Instr, UnaryFn

ROWS, TILE, PITCH = 64, 16, 256  # a 128-element fp16 row is two sticks


def _relu_loop(extra: list[Instr] | None = None) -> SpyreBinary:
    """relu(x) on x: [seq, 128] fp16, seq = 1..64, one core: a loop of 4 tiles of 16 rows."""
    x = bind("x", (ROWS, 128), "float16", 0)
    out = bind("out", (ROWS, 128), "float16", 1 * GIB)
    x.symbolic, out.symbolic = {0: "x.dim0"}, {0: "x.dim0"}
    program = [
        Instr.make("loop.begin", trips=ROWS // TILE),
        load(x.addr, 0, TILE, PITCH, deps=(3,)),  # waits for the last iteration's relu
        Instr.make("loop.incr", pc=1, field=0, step=TILE * PITCH),
        Instr.make("sfu.unary", deps=(1, 4), fn=UnaryFn.RELU, src=0, dst=0x10000, rows=TILE,
                   cols=128, src_pitch=PITCH, dst_pitch=PITCH, src_dtype=DL16, dst_dtype=DL16),
        store(0x10000, out.addr, TILE, PITCH, deps=(3,)),
        Instr.make("loop.incr", pc=4, field=1, step=TILE * PITCH),
        Instr.make("loop.end"),
        *(extra or []),
    ]
    kernel = KernelImage("relu", 1, {0: program}, provenance=["test: relu loop"])
    return SpyreBinary(DEFAULT_TARGET.name, [x], [out], [], [], [kernel],
                       {"source": "test_guards"}, symbols={"x.dim0": (1, ROWS)})


def _place_guards(binary: SpyreBinary) -> None:
    """spyre-place-guards' analysis on a hand-written binary: its programs guarded, its
    patch table set."""
    placed = place_guards(GuardInput(
        binary.symbols, binary.outputs, binary.inputs + binary.outputs + binary.intermediates,
        [(b.addr, b.layout.nbytes) for b, _ in binary.weights],
        [k.programs for k in binary.kernels]))
    for k, core, program, _ in placed:
        binary.kernels[k].programs[core] = program  # type: ignore[index]
    binary.patches = [Patch(k, *entry) for k, _, _, entries in placed for entry in entries]


def test_a_tile_loop_runs_the_prefix_of_tiles_the_size_needs():
    binary = _relu_loop()
    _place_guards(binary)
    # tile t holds rows 16t .. 16t+15: a real row from seq = 16t + 1 on
    assert binary.patches == [Patch(0, 0, 0, "x.dim0", (1, 17, 33, 49))]
    emulator = Emulator(binary, numerics="ieee")  # relu is exact in IEEE fp16
    rng = np.random.default_rng(0)
    counts = {}
    for size in (1, 16, 17, 20, 64):
        x = rng.standard_normal((size, 128)).astype(np.float16)
        (out,), profile = emulator.run([x])
        assert np.array_equal(out, np.maximum(x, 0))
        counts[size] = profile.kernels[0].instructions
    # 3 instructions a tile: 1 tile up to 16 rows, 2 from 17 on, 4 at 64
    assert counts == {1: 3, 16: 3, 17: 6, 20: 6, 64: 12}


def test_work_after_a_loop_is_guarded_around_it():
    """An instruction after the loop that only padded rows need gets its own guard; the
    loop's incr keeps naming its body instruction after the pcs move."""
    # a second pass over the last tile (rows 48..63), in place: needed from seq = 49
    extra = [load(GIB + 3 * TILE * PITCH, 0x20000, TILE, PITCH),
             store(0x20000, GIB + 3 * TILE * PITCH, TILE, PITCH, deps=(7,))]
    binary = _relu_loop(extra)
    _place_guards(binary)
    assert [(p.pc, p.thresholds) for p in binary.patches] == [(0, (1, 17, 33, 49)),
                                                              (7, (49,))]
    program = binary.kernels[0].programs[0]
    assert [i.op for i in program[7:]] == ["loop.begin", "dma.load", "dma.store", "loop.end"]
    assert program[9].deps == (8,)
    x = np.random.default_rng(1).standard_normal((40, 128)).astype(np.float16)
    (out,), profile = Emulator(binary, numerics="ieee").run([x])
    assert np.array_equal(out, np.maximum(x, 0))
    assert profile.kernels[0].instructions == 9  # three tiles, no second pass


def test_a_write_to_a_buffer_runs_at_every_size():
    """A buffer (a weight binding written by the program: state that outlives the call) is
    needed at every size, even where it lies between activations and the rows written are
    padding: copying x's last tile into it is not guarded; relu's tiles still are."""
    binary = _relu_loop()
    state = bind("state", (TILE, 128), "float16", GIB // 2)
    binary.weights.append((state, np.zeros((TILE, 128), dtype=np.float16)))
    binary.kernels[0].programs[0].extend([load(3 * TILE * PITCH, 0x20000, TILE, PITCH),
                                          store(0x20000, state.addr, TILE, PITCH, deps=(7,))])
    _place_guards(binary)
    assert [(p.pc, p.thresholds) for p in binary.patches] == [(0, (1, 17, 33, 49))]
