"""The program's roofline against the compiled kernels' own (design note 70).

For a few models it prints, from one emulator run (timing mode) of the default compile: the
source program's least off-chip bytes (each input, weight and output moved once, unpadded;
`spyrec.frontend.program_cost`) and the bytes the compiled kernels declare as their own
least traffic, the bytes the DMAs moved, and the roofline ratio against each figure (the
kernels' ratio is what `spyrec profile` reported before note 70):

    .venv/bin/python benchmarks/program_roofline.py [--skip-granite]

Models: the demo convnet (`spyrec.zoo` convnet, fp16), a depthwise-separable conv net
(depthwise 3x3 and pointwise 1x1 convolutions, as in MobileNet), a causal decoder attention
(SDPA with is_causal=True), a sliding-window attention (a banded additive mask passed as
data, as Mistral-style models build it) and the Granite-3.3-8B-shaped layer of the zoo
(prefill of 128 tokens).
"""

from __future__ import annotations

import argparse
import time

import torch

from spyrec.driver import compile_program
from spyrec.runtime.emulator import Emulator
from spyrec.zoo import ZOO

F16 = torch.float16


class DepthwiseSeparable(torch.nn.Module):
    """Two MobileNet blocks: depthwise 3x3 (groups = channels), ReLU, pointwise 1x1."""

    def __init__(self, channels: int = 128):
        super().__init__()
        layers: list[torch.nn.Module] = []
        for _ in range(2):
            layers += [torch.nn.Conv2d(channels, channels, 3, padding=1, groups=channels),
                       torch.nn.ReLU(), torch.nn.Conv2d(channels, channels, 1)]
        self.body = torch.nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


class Attention(torch.nn.Module):
    """Self-attention over [1, heads, tokens, 64] with a causal or sliding-window mask."""

    band: torch.Tensor

    def __init__(self, tokens: int, window: int | None):
        super().__init__()
        self.window = window
        if window is not None:
            i = torch.arange(tokens)
            band = (i[None, :] <= i[:, None]) & (i[:, None] - i[None, :] < window)
            # additive, as spyrec lowers masks: 0 where allowed, -30000 where not
            self.register_buffer("band", torch.where(band, 0.0, -30000.0).to(F16))

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        if self.window is None:
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=self.band)


def models(skip_granite: bool) -> list[tuple[str, torch.nn.Module, tuple[torch.Tensor, ...]]]:
    qkv = tuple(torch.randn(1, 8, 512, 64, dtype=F16) for _ in range(3))
    out = [
        ("demo convnet", *ZOO["convnet"].build(F16, 256, 64)),
        ("depthwise-separable 128ch 32x32", DepthwiseSeparable().to(F16).eval(),
         (torch.randn(1, 128, 32, 32, dtype=F16),)),
        ("causal attention h8 L512 d64", Attention(512, None).eval(), qkv),
        ("sliding-window 128 attention h8 L512 d64", Attention(512, 128).eval(), qkv),
    ]
    if not skip_granite:
        out.append(("granite-8b layer prefill 128", *ZOO["granite-8b-layer"].build(F16, 256, 64)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--skip-granite", action="store_true")
    args = parser.parse_args()
    print("| model | program min B | kernels' min B | moved B | moved / program min "
          "| moved / kernels' min | roofline ratio (program) | roofline ratio (kernels) "
          "| program Gflop | kernels' Gflop | uncounted ops |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, module, inputs in models(args.skip_granite):
        torch.manual_seed(0)
        start = time.perf_counter()
        result = compile_program(torch.export.export(module, inputs))
        assert result.binary is not None
        _, profile = Emulator(result.binary, mode="timing").run()
        d = profile.to_dict()
        uncounted = ", ".join(f"{op} x{n}" for op, n in d["program_uncounted_ops"].items())
        print(f"| {name} | {d['program_min_offchip_bytes']} | {d['min_offchip_bytes']} "
              f"| {d['offchip_bytes']} | {d['bytes_ratio']:.2f} "
              f"| {d['offchip_bytes'] / d['min_offchip_bytes']:.2f} "
              f"| {d['roofline_ratio']:.3f} | {d['kernel_roofline_ratio']:.3f} "
              f"| {d['program_flops'] / 1e9:.3f} | {d['flops'] / 1e9:.3f} | {uncounted or '-'} |",
              flush=True)
        print(f"<!-- {name}: {time.perf_counter() - start:.0f} s -->", flush=True)


if __name__ == "__main__":
    main()
