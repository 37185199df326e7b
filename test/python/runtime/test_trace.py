"""The Perfetto trace: engine tracks (ring ones included) and LX occupancy counters."""

import json

from runtime_helpers import load, recv, send, store, two_tensor_binary

from spyrec.runtime.emulator import Emulator
from spyrec.runtime.occupancy import lx_live_bytes
from spyrec.target import DEFAULT_TARGET, GIB

T = DEFAULT_TARGET
ROW, OUT = 128, 1 * GIB


def relay_profile():
    programs = {0: [load(0, 0, 64, ROW), send(0, 64, ROW, 3, deps=(0,))],
                3: [recv(0x1000, 64, ROW, 0), store(0x1000, OUT, 64, ROW, deps=(0,))]}
    _, profile = Emulator(two_tensor_binary(programs), mode="timing").run()
    return profile


def test_ring_transfers_are_slices_on_the_ring_tracks() -> None:
    profile = relay_profile()
    trace = profile.trace_events()
    json.dumps(trace)
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in trace
               if e["ph"] == "M" and e["name"] == "thread_name"}
    ring = [e for e in trace if e["ph"] == "X" and e["name"].startswith("ring.")]
    assert [(threads[(e["pid"], e["tid"])], e["pid"] - 1) for e in ring] == [("ring_tx", 0),
                                                                              ("ring_rx", 3)]
    sent, received = ring
    assert sent["args"] == {"kernel": "k", "pc": 1, "to": 3, "bytes": 8192, "tag": 0, "hops": 3}
    assert received["args"]["from"] == 0
    assert (sent["ts"], sent["dur"]) == (received["ts"], received["dur"])
    # 3 hops at 4 cycles and 8 KiB at 128 bytes per cycle
    assert received["dur"] == T.cycles_to_us(3 * 4 + 64)


def counter(trace: list[dict], core: int) -> list[tuple[float, int]]:
    return [(e["ts"], e["args"]["bytes"]) for e in trace
            if e["ph"] == "C" and e["name"] == "LX live bytes" and e["pid"] == core + 1]


def test_lx_live_bytes_follow_each_buffer_from_its_write_to_its_last_read() -> None:
    profile = relay_profile()
    trace = profile.trace_events()
    events = {(e.core, e.op): e for e in profile.events()}
    us = T.cycles_to_us
    kernel = profile.kernels[0]
    # core 0: the loaded 8 KiB are live from the end of the load to the end of the send
    assert counter(trace, 0) == [(us(kernel.start_cycle), 0),
                                 (us(events[(0, "dma.load")].end), 8192),
                                 (us(events[(0, "ring.send")].end), 0),
                                 (us(kernel.end_cycle), 0)]
    # core 3: the received tile is live until the store that reads it finishes
    assert counter(trace, 3)[1:3] == [(us(events[(3, "ring.recv")].end), 8192),
                                      (us(events[(3, "dma.store")].end), 0)]


def test_a_value_never_read_is_not_live_and_an_overwrite_ends_the_old_one() -> None:
    # pc 0 writes sticks 0-1, pc 1 overwrites stick 1 before anyone reads it, pc 2 reads both
    program = [load(0, 0, 2, ROW), load(0, ROW, 1, ROW), store(0, OUT, 2, ROW, deps=(0, 1))]
    start = [0.0, 0.0, 20.0]
    end = [10.0, 15.0, 30.0]
    times, live = lx_live_bytes(program, 0, start, end, T.lx_bytes, T.stick_bytes)
    # stick 0 lives 10..30, the overwritten value of stick 1 never, its new one 15..30
    assert times.tolist() == [10.0, 15.0, 30.0]
    assert live.tolist() == [128, 256, 0]


def test_cli_inspect_and_profile_a_binary_with_ring_and_loop_instructions(tmp_path) -> None:
    from click.testing import CliRunner

    from spyrec.cli import main
    from spyrec.target.container import write_spyre
    from spyrec.target.isa import Instr

    programs = {0: [Instr.make("loop.begin", trips=2),
                    Instr.make("loop.incr", pc=2, field=0, step=ROW),
                    load(0, 0, 1, ROW, deps=(3,)), send(0, 1, ROW, 1, deps=(2,)),
                    Instr.make("loop.end")],
                1: [Instr.make("loop.begin", trips=2), recv(0, 1, ROW, 0, deps=(2,)),
                    store(0, OUT, 1, ROW, deps=(1,)),
                    Instr.make("loop.incr", pc=2, field=1, step=ROW), Instr.make("loop.end")]}
    path = tmp_path / "ring.spyre"
    write_spyre(two_tensor_binary(programs), path)
    runner = CliRunner()
    shown = runner.invoke(main, ["inspect", str(path)])
    assert shown.exit_code == 0, shown.output
    assert "   0: loop.begin u0 trips=2\n" in shown.output
    assert "   1:   loop.incr u0 pc=2 field=0 step=128  ; dma.load ddr\n" in shown.output
    assert "   3:   ring.send u0 src=0 rows=1 row_bytes=128 src_pitch=128 dst_core=1 tag=0 " \
           "deps=[2]\n" in shown.output
    assert "   4: loop.end u0\n" in shown.output
    trace = tmp_path / "trace.json"
    profiled = runner.invoke(main, ["profile", str(path), "--json", "--trace", str(trace)])
    assert profiled.exit_code == 0, profiled.output
    summary = json.loads(profiled.output)
    assert {"emulated_us", "roofline_us", "flops", "offchip_bytes", "min_offchip_bytes",
            "lx_peak_bytes", "kernels"} <= set(summary)
    assert summary["kernels"][0]["instructions"] == 8  # two iterations of two, per core
    events = json.loads(trace.read_text())["traceEvents"]
    assert sum(e["ph"] == "X" and e["name"] == "ring.recv" for e in events) == 2
