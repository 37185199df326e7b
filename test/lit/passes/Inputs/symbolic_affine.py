"""`x * 2 + 1` on x: [seq, 128] fp16, seq = Dim(min=1, max=64): the program of the lit tests
of the trip-count guards (passes/spyre-place-guards.mlir, tools/spyrec-symbolic-guards.py).
Run as a script, it prints the module as the compile driver has it before
spyre-schedule-dataflow (with the frontend's spyre.symbols)."""
import os

os.environ["SPYREC_CACHE"] = "0"

import torch


class Affine(torch.nn.Module):
    def forward(self, x):
        return x * 2.0 + 1.0


def exported() -> torch.export.ExportedProgram:
    seq = torch.export.Dim("seq", min=1, max=64)
    return torch.export.export(Affine(), (torch.randn(16, 128).half(),),
                               dynamic_shapes=({0: seq},))


if __name__ == "__main__":
    from spyrec.driver import compile_program, module_text

    module = compile_program(exported(), stop_after="ktir").module
    assert module is not None  # only a whole binary comes from the cache
    print(module_text(module), end="")
