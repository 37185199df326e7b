"""`torch.compile(model, backend="spyrec")`: run Dynamo-captured graphs on the Spyre emulator.

Dynamo hands the backend an FX GraphModule and example inputs; the backend exports it with
torch.export (so the same frontend and pipeline as `spyrec compile` apply), compiles it and
returns a callable that runs the compiled program on the emulator. The module's parameters
are captured as weights when the graph is compiled (later in-place updates of them are not
seen). Graphs with ops spyrec
cannot lower yet fall back to eager for that graph, with a warning naming the ops, unless
`options={"fallback": False}` asks for the compile error instead.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch

from spyrec.diagnostics import CompileError


def spyrec_backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any],
                   **kwargs: Any) -> Callable[..., Any]:
    """A torch.compile backend (registered under the name "spyrec")."""
    from spyrec.api import Executable
    from spyrec.cache import resolve_cache
    from spyrec.driver import compile_program

    options = kwargs.get("options") or {}
    if not all(isinstance(t, torch.Tensor) for t in example_inputs):
        return _fallback(gm, "the graph takes non-tensor inputs", options)
    # Dynamo passes the module's parameters as graph inputs; they become compile-time weights
    weights = [i for i, t in enumerate(example_inputs) if isinstance(t, torch.nn.Parameter)]
    user = [i for i in range(len(example_inputs)) if i not in weights]
    module = _WithWeights(gm, list(example_inputs), weights)
    try:
        ep = torch.export.export(module, tuple(example_inputs[i] for i in user), strict=False)
        result = compile_program(ep, cache=resolve_cache(options.get("cache")))
    except CompileError as exc:
        return _fallback(gm, str(exc), options)
    assert result.binary is not None
    exe = Executable(result.binary, numerics=options.get("numerics", "dl16"))
    single = len(result.binary.outputs) == 1

    def run(*args: torch.Tensor) -> Any:
        out = exe(*(args[i] for i in user))
        # Dynamo expects the graph's outputs as a tuple or list
        return (out,) if single else out

    return run


class _WithWeights(torch.nn.Module):
    """The captured graph with its parameter inputs held as the module's own weights."""

    def __init__(self, gm: torch.fx.GraphModule, inputs: list[Any], weights: list[int]):
        super().__init__()
        self.gm = gm
        self.count = len(inputs)
        self.slots = {index: f"w{n}" for n, index in enumerate(weights)}
        for index, name in self.slots.items():
            self.register_parameter(name, inputs[index])

    def forward(self, *user: torch.Tensor) -> Any:
        rest = iter(user)
        args = [getattr(self, self.slots[i]) if i in self.slots else next(rest)
                for i in range(self.count)]
        return self.gm(*args)


def _fallback(gm: torch.fx.GraphModule, reason: str, options: dict[str, Any]) -> Callable[..., Any]:
    if options.get("fallback", True) is False:
        raise CompileError(reason)
    warnings.warn(f"spyrec: running this graph in eager PyTorch: {reason}", stacklevel=2)
    return gm.forward
