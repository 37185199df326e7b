"""`spyrec demo`: the embedded default model, end to end, with a short report.

Builds a model of the zoo (`spyrec.zoo`) with random weights — by default a two-layer
Llama-shaped decoder (RMS norms, causal grouped-query attention, SwiGLU feed-forward,
residuals), defined here with the other small demo models: its FFN blocks alone, the MLP of
the Foundation issue, a small ResNet-style conv net (`DemoConvNet`) — exports it with
torch.export, compiles it, runs it on the emulator and compares with PyTorch eager.
"""

from __future__ import annotations

import time

import torch
from rich.console import Console
from rich.table import Table

from spyrec.api import Executable


class DemoMLP(torch.nn.Module):
    """The demo model."""

    def __init__(self, features: int):
        super().__init__()
        self.fc1 = torch.nn.Linear(features, features)
        self.fc2 = torch.nn.Linear(features, features)
        self.fc3 = torch.nn.Linear(features, features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.fc1(x))
        x = torch.nn.functional.gelu(self.fc2(x))
        return self.fc3(x)


class RMSNorm(torch.nn.Module):
    """The Llama form: normalise in fp32, scale by a learned weight."""

    def __init__(self, features: int, eps: float = 1e-6):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(features) + 0.1 * torch.randn(features))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        variance = x.float().pow(2).mean(-1, keepdim=True)
        return self.weight * (x.float() * torch.rsqrt(variance + self.eps)).to(x.dtype)


class FFNBlock(torch.nn.Module):
    """x + down(silu(gate(norm(x))) * up(norm(x)))."""

    def __init__(self, features: int):
        super().__init__()
        hidden = 2 * features
        self.norm = RMSNorm(features)
        self.gate = torch.nn.Linear(features, hidden, bias=False)
        self.up = torch.nn.Linear(features, hidden, bias=False)
        self.down = torch.nn.Linear(hidden, features, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm(x)
        return x + self.down(torch.nn.functional.silu(self.gate(h)) * self.up(h))


class DemoDecoderFFN(torch.nn.Module):
    """Two decoder FFN blocks and a final norm, on [batch, sequence, features]."""

    def __init__(self, features: int, layers: int = 2):
        super().__init__()
        self.blocks = torch.nn.ModuleList(FFNBlock(features) for _ in range(layers))
        self.norm = RMSNorm(features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return self.norm(x)


class Attention(torch.nn.Module):
    """Causal grouped-query self-attention with head dim 64 (one fp16 stick)."""

    def __init__(self, features: int, head_dim: int = 64, kv_groups: int = 2):
        super().__init__()
        self.heads = features // head_dim
        self.kv_heads = max(1, self.heads // kv_groups)
        self.head_dim = head_dim
        self.q = torch.nn.Linear(features, self.heads * head_dim, bias=False)
        self.k = torch.nn.Linear(features, self.kv_heads * head_dim, bias=False)
        self.v = torch.nn.Linear(features, self.kv_heads * head_dim, bias=False)
        self.o = torch.nn.Linear(self.heads * head_dim, features, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        q = self.q(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.k(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        o = torch.nn.functional.scaled_dot_product_attention(
            q, k, v, is_causal=True, enable_gqa=self.kv_heads != self.heads)
        return self.o(o.transpose(1, 2).reshape(b, s, self.heads * self.head_dim))


class DecoderLayer(torch.nn.Module):
    """Llama-shaped: x + attn(norm(x)), then x + ffn(norm(x))."""

    def __init__(self, features: int):
        super().__init__()
        self.attn_norm = RMSNorm(features)
        self.attn = Attention(features)
        self.ffn = FFNBlock(features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.attn_norm(x))
        return self.ffn(x)


class DemoDecoder(torch.nn.Module):
    """A small Llama-shaped decoder stack (no embedding or LM head) and a final norm."""

    def __init__(self, features: int, layers: int = 2):
        super().__init__()
        self.layers = torch.nn.ModuleList(DecoderLayer(features) for _ in range(layers))
        self.norm = RMSNorm(features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)


# ---- the conv net (Conv2d, BatchNorm2d, ReLU, MaxPool2d, AdaptiveAvgPool2d, Linear) ---------


def _conv_bn(cin: int, cout: int, kernel: int, stride: int) -> torch.nn.Sequential:
    """Conv2d without bias and an eval-mode BatchNorm2d with non-trivial statistics."""
    bn = torch.nn.BatchNorm2d(cout)
    assert bn.running_mean is not None and bn.running_var is not None  # tracked by default
    with torch.no_grad():
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.normal_(0, 0.1)
        bn.running_mean.normal_(0, 0.1)
        bn.running_var.uniform_(0.5, 1.5)
    return torch.nn.Sequential(
        torch.nn.Conv2d(cin, cout, kernel, stride, kernel // 2, bias=False), bn)


class BasicBlock(torch.nn.Module):
    """ResNet's basic block: relu(bn(conv(relu(bn(conv(x))))) + shortcut(x))."""

    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = _conv_bn(cin, cout, 3, stride)
        self.conv2 = _conv_bn(cout, cout, 3, 1)
        self.shortcut = (_conv_bn(cin, cout, 1, stride) if stride != 1 or cin != cout
                         else torch.nn.Identity())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv2(torch.relu(self.conv1(x)))
        return torch.relu(y + self.shortcut(x))


class DemoConvNet(torch.nn.Module):
    """A small ResNet on [N, 3, 32, 32] images: stem conv-bn-relu, 3x3/2 max pool, a basic
    block, a downsampling block, global average pool, linear classifier."""

    def __init__(self, width: int = 16, classes: int = 10):
        super().__init__()
        self.stem = _conv_bn(3, width, 3, 1)
        self.pool = torch.nn.MaxPool2d(3, 2, 1)
        self.layer1 = BasicBlock(width, width, 1)
        self.layer2 = BasicBlock(width, 2 * width, 2)
        self.avgpool = torch.nn.AdaptiveAvgPool2d(1)
        self.fc = torch.nn.Linear(2 * width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(torch.relu(self.stem(x)))
        x = self.layer2(self.layer1(x))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def run_demo(dtype: str, features: int, batch: int, model_name: str = "decoder") -> bool:
    """Run the demo on a model of the zoo (`spyrec.zoo.ZOO`); print the report; True when the
    results match eager."""
    from spyrec.cli import compare_outputs
    from spyrec.driver import compile_program
    from spyrec.zoo import ZOO

    console = Console(stderr=False)
    torch_dtype = getattr(torch, dtype)
    torch.manual_seed(0)
    with console.status(f"building {model_name}"):
        model, inputs = ZOO[model_name].build(torch_dtype, features, batch)
    times: dict[str, float] = {}
    with console.status("exporting with torch.export"):
        start = time.perf_counter()
        ep = torch.export.export(model, inputs)
        times["export"] = time.perf_counter() - start
    with console.status("compiling") as status:
        def on_stage(stage: str, seconds: float) -> None:
            times[stage] = seconds
            status.update(f"compiling: {stage} done")

        def on_progress(stage: str, what: str, done: int, total: int) -> None:
            status.update(f"compiling: {stage}: {what} {done}/{total}")
        result = compile_program(ep, on_stage=on_stage, on_progress=on_progress)
    assert result.binary is not None
    exe = Executable(result.binary)
    with console.status("running on the Spyre emulator"):
        start = time.perf_counter()
        out = exe(*inputs)
        times["emulate"] = time.perf_counter() - start
    with torch.no_grad():
        expected = model(*inputs)
    shape = "x".join(str(d) for d in inputs[0].shape)
    table = Table(title=f"spyrec demo: {model_name} {shape} {dtype}")
    table.add_column("stage")
    table.add_column("host time", justify="right")
    for stage, seconds in times.items():
        table.add_row(stage, f"{seconds * 1000:.1f} ms")
    console.print(table)
    ok = compare_outputs(expected, out, exe)
    prof = exe.last_profile.to_dict()
    ratio = prof["roofline_us"] / prof["emulated_us"] if prof["emulated_us"] else 0.0
    console.print(f"kernels: {len(result.binary.kernels)}, cores used: "
                  f"{', '.join(str(k.num_cores) for k in result.binary.kernels)}")
    console.print(f"emulated time {prof['emulated_us']:.2f} us; roofline {prof['roofline_us']:.2f} "
                  f"us; roofline ratio {ratio:.2f}")
    console.print("[green]match[/green]" if ok else "[red]MISMATCH[/red]")
    return ok
