"""Ring transfers, ring reductions, barriers and counted loops: numerics, time, deadlocks."""

import numpy as np
import pytest
from runtime_helpers import F32, barrier, load, recv, send, store, two_tensor_binary

from spyrec.runtime.emulator import Emulator
from spyrec.runtime.memory import DeviceFault
from spyrec.runtime.timing import DeadlockError
from spyrec.target import DEFAULT_TARGET, GIB
from spyrec.target.container import build_init_bin
from spyrec.target.isa import (
    DType,
    Instr,
    ProgramError,
    decode_program,
    encode_program,
    expand_loops,
)
from spyrec.target.timing import ring_hops

T = DEFAULT_TARGET
ROW = 128  # one fp32 stick per row: a (64, 32) fp32 tensor has 128-byte rows
OUT = 1 * GIB


def x_of(shape: tuple[int, ...] = (64, 32)) -> np.ndarray:
    return np.random.default_rng(5).standard_normal(shape).astype(np.float32)


def relay(sender: int, receiver: int, rows: int = 64) -> dict[int, list[Instr]]:
    """`sender` loads x and sends it over the ring; `receiver` stores what it gets to out."""
    return {sender: [load(0, 0, rows, ROW), send(0, rows, ROW, receiver, deps=(0,))],
            receiver: [recv(0x1000, rows, ROW, sender), store(0x1000, OUT, rows, ROW, deps=(0,))]}


def test_ring_hops_go_the_short_way_round() -> None:
    assert [ring_hops(0, b, 32) for b in (1, 3, 16, 17, 31)] == [1, 3, 16, 15, 1]


@pytest.mark.parametrize(("sender", "receiver"), [(0, 1), (0, 3), (2, 31)])
def test_send_recv_moves_the_tile_and_costs_hops_and_bytes(sender: int, receiver: int) -> None:
    x = x_of()
    emulator = Emulator(two_tensor_binary(relay(sender, receiver)))
    (out,), profile = emulator.run([x])
    np.testing.assert_array_equal(out, x)
    events = {(e.core, e.op): e for e in profile.events()}
    sent, received = events[(sender, "ring.send")], events[(receiver, "ring.recv")]
    # 64 rows of one stick: 8 KiB at 128 B/cycle is 64 cycles, plus 4 cycles per hop
    hops = ring_hops(sender, receiver, T.num_cores)
    assert received.end - received.start == hops * T.ring_hop_cycles + 64 * ROW // 128
    assert (sent.start, sent.end) == (received.start, received.end)
    # the transfer starts when the send may: after the load, the recv having waited for it
    assert sent.start == events[(sender, "dma.load")].end
    assert (received.track, received.args["from"], received.args["hops"]) == ("ring_rx", sender,
                                                                              hops)


def test_ring_shift_does_not_deadlock() -> None:
    # Every core sends to its right neighbour and receives from its left one: send and
    # receive run on separate engines, so the shift completes.
    cores = 4
    programs = {}
    for core in range(cores):
        rows = 16
        programs[core] = [
            load(core * rows * ROW, 0, rows, ROW),
            send(0, rows, ROW, (core + 1) % cores, deps=(0,)),
            recv(0x1000, rows, ROW, (core - 1) % cores),
            store(0x1000, OUT + core * rows * ROW, rows, ROW, deps=(2,)),
        ]
    x = x_of()
    (out,), _ = Emulator(two_tensor_binary(programs)).run([x])
    np.testing.assert_array_equal(out, np.roll(x.reshape(cores, 16, 32), 1, axis=0).reshape(64, 32))


@pytest.mark.parametrize("root", [2, -1])
def test_ring_reduce_sums_in_fp32_in_group_order(root: int) -> None:
    # Cores 0, 1, 2, 3 each hold 16 rows of x; the sum lands on core 2 (or on every core).
    rows = 16
    programs = {}
    for core in range(4):
        programs[core] = [
            load(core * rows * ROW, 0, rows, ROW),
            Instr.make("ring.reduce", deps=(0,), src=0, dst=0x2000, rows=rows, cols=32,
                       src_pitch=ROW, dst_pitch=ROW, dtype=F32, first=0, count=4, stride=1,
                       root=root, tag=0),
        ]
        if root in (-1, core):
            programs[core].append(store(0x2000, OUT + core * rows * ROW, rows, ROW, deps=(1,)))
    x = x_of()
    (out,), profile = Emulator(two_tensor_binary(programs)).run([x])
    parts = x.reshape(4, rows, 32)
    expected = ((parts[0] + parts[1]) + parts[2]) + parts[3]
    for core in range(4):
        got = out[core * rows:(core + 1) * rows]
        if root in (-1, core):
            np.testing.assert_array_equal(got, expected)
        else:
            assert not got.any()
    reduce = next(e for e in profile.events() if e.op == "ring.reduce")
    # 2 KiB over the reduce ring (16 cycles) plus 3 hops along the chain 0-1-2-3 (12 cycles);
    # to all cores the result flows back too
    assert reduce.end - reduce.start == (16 + 12) * (2 if root == -1 else 1)
    assert reduce.track == "ring_reduce"


def test_barrier_holds_every_member_until_the_last_arrives() -> None:
    programs = {
        0: [load(0, 0, 64, ROW), barrier(0, 2, deps=(0,)), store(0, OUT, 1, ROW, deps=(1,))],
        1: [barrier(0, 2), store(0, OUT + ROW, 1, ROW, deps=(0,))],
    }
    _, profile = Emulator(two_tensor_binary(programs), mode="timing").run()
    events = {(e.core, e.op): e for e in profile.events()}
    load_end = events[(0, "dma.load")].end
    # one hop between the members, there and back
    assert events[(1, "sync.barrier")].start == load_end
    assert events[(1, "sync.barrier")].end == load_end + 2 * T.ring_hop_cycles
    assert events[(1, "dma.store")].start >= events[(0, "dma.load")].end


def copy_program(tiles: int, looped: bool) -> list[Instr]:
    """Copy x to out in `tiles` tiles of 8 rows, double-buffered, as a loop or unrolled."""
    rows, size = 8, 8 * ROW
    if not looped:
        program: list[Instr] = []
        for i in range(tiles):
            slot = (i % 2) * size
            load_deps = (len(program) - 3,) if i >= 2 else ()
            program.append(load(i * size, slot, rows, ROW, deps=load_deps))
            program.append(store(slot, OUT + i * size, rows, ROW, deps=(len(program) - 1,)))
        return program
    # two tiles per iteration: pcs 3 and 6 load into the two slots, 4 and 7 store them; each
    # load waits for the previous iteration's store of its slot (a later pc of the body), and
    # loop.incr advances the DDR addresses (field 0 of a load, field 1 of a store)
    return [
        Instr.make("loop.begin", trips=tiles // 2),
        Instr.make("loop.incr", pc=3, field=0, step=2 * size),
        Instr.make("loop.incr", pc=4, field=1, step=2 * size),
        load(0, 0, rows, ROW, deps=(4,)),
        store(0, OUT, rows, ROW, deps=(3,)),
        Instr.make("loop.incr", pc=6, field=0, step=2 * size),
        load(size, size, rows, ROW, deps=(7,)),
        store(size, OUT + size, rows, ROW, deps=(6,)),
        Instr.make("loop.incr", pc=7, field=1, step=2 * size),
        Instr.make("loop.end"),
    ]


def test_a_counted_loop_runs_like_its_unrolled_program() -> None:
    tiles = 8
    looped = copy_program(tiles, looped=True)
    unrolled = copy_program(tiles, looped=False)
    assert expand_loops(looped).instrs == unrolled
    assert decode_program(encode_program(looped)) == looped
    assert len(encode_program(looped)) < len(encode_program(unrolled)) / 2
    x = x_of()
    results = []
    for program in (looped, unrolled):
        (out,), profile = Emulator(two_tensor_binary({0: program})).run([x])
        results.append((out, profile.emulated_cycles))
    np.testing.assert_array_equal(results[0][0], x)
    np.testing.assert_array_equal(results[1][0], x)
    assert results[0][1] == results[1][1]


def test_a_loop_of_zero_trips_is_skipped() -> None:
    program = [Instr.make("loop.begin", trips=0), load(0, 0, 1, ROW), Instr.make("loop.end"),
               store(0, OUT, 1, ROW, deps=(1,))]
    flat = expand_loops(program)
    assert [i.op for i in flat.instrs] == ["dma.store"]
    assert flat.instrs[0].deps == ()


def test_a_fault_inside_a_loop_names_the_pc_and_the_iteration() -> None:
    # x is 64 rows of 128 bytes (8 KiB); iteration 5 reads 2 KiB from 5 * 1536 = 0x1e00
    program = [Instr.make("loop.begin", trips=6), Instr.make("loop.incr", pc=2, field=0,
                                                             step=1536),
               load(0, 0, 16, ROW), Instr.make("loop.end")]
    with pytest.raises(DeviceFault) as info:
        Emulator(two_tensor_binary({0: program}), mode="timing")
    fault = info.value
    assert (fault.core, fault.pc) == (0, 2)
    assert str(fault).startswith("core 0, pc 2 (dma.load u0 ddr=7680 ")
    assert str(fault).endswith("LPDDR range [0x1e00, 0x2600) runs past the end of allocation "
                               "'x' [0x0, 0x2000) (loop iteration 5)")


def test_binary_encoding_of_ring_and_loop_instructions_round_trips() -> None:
    programs = relay(0, 1)
    programs[1] = [Instr.make("loop.begin", trips=1), recv(0x1000, 64, ROW, 0),
                   store(0x1000, OUT, 64, ROW, deps=(1,)), Instr.make("loop.end")]
    binary = two_tensor_binary(programs)
    init = build_init_bin(binary)
    assert init.data  # encodes
    x = x_of()
    (out,), _ = Emulator(binary).run([x])
    np.testing.assert_array_equal(out, x)


def test_cores_waiting_for_each_other_deadlock_with_a_report() -> None:
    # Each core receives before it sends, and its send waits for its receive.
    programs = {
        0: [recv(0, 1, ROW, 1), send(0, 1, ROW, 1, deps=(0,))],
        1: [recv(0, 1, ROW, 0), send(0, 1, ROW, 0, deps=(0,))],
    }
    with pytest.raises(DeadlockError) as info:
        Emulator(two_tensor_binary(programs), mode="timing").run()
    message = str(info.value)
    assert message.startswith("deadlock in kernel 'k': core 0: pc 0 (ring.recv u0 ")
    assert ("core 0: pc 0 (ring.recv u0 dst=0 rows=1 row_bytes=128 dst_pitch=128 src_core=1 "
            "tag=0) waits for core 1 pc 1 (ring.send), which core 1 never reaches") in message
    assert "core 1: pc 0 (ring.recv" in message
    assert "core 1: pc 1 (ring.send u0 src=0 rows=1 row_bytes=128 src_pitch=128 dst_core=0 " \
           "tag=0 deps=[0]) waits for pc 0 (ring.recv)" in message


def test_a_send_without_a_recv_is_a_deadlock() -> None:
    programs = {0: [send(0, 1, ROW, 1, tag=3)], 1: [recv(0, 1, ROW, 0, tag=4)]}
    with pytest.raises(DeadlockError, match=r"core 0: pc 0 .* waits for a ring.recv on core 1 "
                                            r"from core 0 with tag 3, which core 1's program "
                                            "does not have"):
        Emulator(two_tensor_binary(programs), mode="timing").run()


def test_a_barrier_one_member_skips_is_a_deadlock() -> None:
    programs = {0: [barrier(0, 3)], 1: [barrier(0, 3)], 2: [load(0, 0, 1, ROW)]}
    with pytest.raises(DeadlockError, match=r"core 0: pc 0 .* waits for core 2's matching "
                                            r"sync.barrier, which its program does not have"):
        Emulator(two_tensor_binary(programs), mode="timing").run()


@pytest.mark.parametrize(
    ("instr", "message"),
    [
        (send(0, 1, ROW, 0), "dst_core=0 is this core; a ring transfer goes to another core"),
        (send(0, 1, ROW, 40), "dst_core=40 is not a core (the target has 32)"),
        (barrier(1, 2), "core 0 is not in its group [1, 2]"),
        (Instr.make("ring.reduce", src=0, dst=0, rows=1, cols=32, src_pitch=ROW, dst_pitch=ROW,
                    dtype=F32, first=0, count=2, stride=1, root=5, tag=0),
         "root=5 is neither -1 (all) nor in the group [0, 1]"),
        (Instr.make("ring.reduce", src=0, dst=0, rows=1, cols=32, src_pitch=ROW, dst_pitch=ROW,
                    dtype=2, first=0, count=2, stride=1, root=-1, tag=0),
         "dtype=2: ring.reduce sums DL16 or F32 tiles"),
    ],
)
def test_invalid_ring_instructions_fault(instr: Instr, message: str) -> None:
    with pytest.raises(DeviceFault) as info:
        Emulator(two_tensor_binary({0: [instr], 1: [load(0, 0, 1, ROW)]}), mode="timing")
    assert str(info.value).startswith(f"core 0, pc 0 ({instr.disassemble()}): ")
    assert message in str(info.value)


def test_matching_transfers_must_agree_on_their_size() -> None:
    programs = {0: [send(0, 2, ROW, 1)], 1: [recv(0, 1, 2 * ROW, 0)]}
    with pytest.raises(DeviceFault, match=r"core 1, pc 0 \(ring.recv .*\): ring.recv of 1 rows x "
                                          r"256 bytes, but its matching ring.send \(core 0, pc "
                                          r"0\) has 2 rows x 128 bytes"):
        Emulator(two_tensor_binary(programs), mode="timing")


def test_a_negative_trip_count_cannot_be_encoded() -> None:
    program = [Instr.make("loop.begin", trips=-1), load(0, 0, 1, ROW), Instr.make("loop.end")]
    with pytest.raises(ProgramError, match=r"instruction 0: loop.begin trips=-1 must not be "
                                           r"negative"):
        encode_program(program)


def test_a_loop_too_large_to_unroll_is_refused() -> None:
    # 2^23 iterations of a one-instruction body
    program = [Instr.make("loop.begin", trips=1 << 23), load(0, 0, 1, ROW),
               Instr.make("loop.end")]
    with pytest.raises(DeviceFault, match=r"core 0, pc 0 \(loop.begin u0 trips=8388608\): the "
                                          r"loops unroll to 8388608 instructions, more than "
                                          r"the 4194304 the emulator runs per core"):
        Emulator(two_tensor_binary({0: program}), mode="timing")


def test_ring_reduce_of_dl16_tiles_rounds_the_fp32_sum_once() -> None:
    # fp16 x of 64 rows of 64 elements (one stick): cores 0 and 2 (stride 2) add their
    # 32-row halves; the fp32 sum of the DL16 inputs is rounded to DL16 once, on core 0.
    from spyrec.runtime.dl16 import round_dl16

    rows = 32
    programs = {}
    for index, core in enumerate((0, 2)):
        programs[core] = [
            load(index * rows * ROW, 0, rows, ROW),
            Instr.make("ring.reduce", deps=(0,), src=0, dst=0x2000, rows=rows, cols=64,
                       src_pitch=ROW, dst_pitch=ROW, dtype=int(DType.DL16), first=0, count=2,
                       stride=2, root=0, tag=5),
        ]
    programs[0].append(store(0x2000, OUT, rows, ROW, deps=(1,)))
    x = (np.random.default_rng(9).standard_normal((64, 64)) * 100).astype(np.float16)
    binary = two_tensor_binary(programs, shape=(64, 64), dtype="float16")
    (out,), profile = Emulator(binary).run([x])
    halves = round_dl16(x.astype(np.float32)).reshape(2, rows, 64)
    expected = round_dl16(halves[0] + halves[1]).astype(np.float16)
    assert out[:rows].tobytes() == expected.tobytes()
    reduce = next(e for e in profile.events() if e.op == "ring.reduce")
    # 4 KiB over the reduce ring (32 cycles), the chain 0-2 is 2 hops (8 cycles)
    assert reduce.end - reduce.start == 32 + 8
