# RUN: %python %s | filecheck %s
# Trip-count guards of a symbolic size (design note 49). `x * 2 + 1` on x: [seq, 128] fp16,
# seq = Dim(max=64), is compiled at 64 rows. The 64 x 128 tile splits over the 32 cores as
# 16 row blocks x 2 column halves: core c (c < 16) and core c + 16 hold rows 4c .. 4c+3.
# A row r is a real row from seq = r + 1 on, so core c's work is needed from seq = 4c + 1:
# core 0 and core 16 (rows 0-3: needed at every size >= 1, the lower bound) run unguarded,
# every other core's program is wrapped in `loop.begin trips=1 ... loop.end`, and the patch
# table says core 1 runs from 5, core 15 from 4 * 15 + 1 = 61, core 17 (rows 4-7) from 5.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "passes", "Inputs"))

from symbolic_affine import exported

import spyrec
from spyrec.runtime.emulator import Emulator

ep = exported()
binary = spyrec.compile(ep).binary
kernel = binary.kernels[0]

# CHECK: patch table: 30 entries
print(f"patch table: {len(binary.patches)} entries")
for p in binary.patches:
    if p.core in (1, 15, 17):
        print(f"core {p.core} pc {p.pc}: {p.symbol} >= {list(p.thresholds)}")
# CHECK-NEXT: core 1 pc 0: x.dim0 >= [5]
# CHECK-NEXT: core 15 pc 0: x.dim0 >= [61]
# CHECK-NEXT: core 17 pc 0: x.dim0 >= [5]

for core in (0, 1):
    print(f"core {core}:")
    for instr in kernel.programs[core]:
        print("  " + instr.disassemble().split(" lx=")[0].split(" fn=")[0])
# CHECK-LABEL: core 0:
# CHECK-NEXT:   dma.load u0 ddr=0
# CHECK-NEXT:   sfu.scalar u0
# CHECK-NEXT:   sfu.scalar u0
# CHECK-NEXT:   sfu.unary u0
# CHECK-NEXT:   dma.store u0
# CHECK-LABEL: core 1:
# CHECK-NEXT:   loop.begin u0 trips=1
# Rows 4-7 start 4 x 256 B (a 128-element fp16 row is two sticks) into x.
# CHECK-NEXT:   dma.load u0 ddr=1024
# CHECK-NEXT:   sfu.scalar u0
# CHECK-NEXT:   sfu.scalar u0
# CHECK-NEXT:   sfu.unary u0
# CHECK-NEXT:   dma.store u0
# CHECK-NEXT:   loop.end u0

# Per call the host sets each guard's trips: at seq = 5 the cores holding rows 0-7 run
# (0, 1, 16, 17: 4 cores); at 6 the same (rows 4-7 hold row 5); at 64 all 32. A skipped
# core still appears in the profile, with no instructions.
emulator = Emulator(binary, mode="timing")
for size in (1, 5, 6, 64):
    _, profile = emulator.run(sizes={"x.dim0": size})
    instructions = profile.kernels[0].instructions
    print(f"seq {size}: {instructions} instructions, {instructions // 5} cores ran")
# CHECK: seq 1: 10 instructions, 2 cores ran
# CHECK-NEXT: seq 5: 20 instructions, 4 cores ran
# CHECK-NEXT: seq 6: 20 instructions, 4 cores ran
# CHECK-NEXT: seq 64: 160 instructions, 32 cores ran
