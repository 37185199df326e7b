"""Every kind of model of the suite through the command line: `spyrec compile` of the saved
.pt2, then `spyrec run --check`, which compares with eager by `spyrec.verdict` (on
the .pt2's own example inputs: token ids stay inside the vocabulary). The Python API's
tests of the same models are test_models.py, test_convnet.py, test_gpt.py,
test_hf_models.py and test_granite.py (which also runs the Granite layer's prefill and
decode step through the command line)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from click.testing import CliRunner
from test_gpt import GPT

from spyrec.cli import main
from spyrec.zoo import ZOO


def _zoo(name: str) -> Callable[[], tuple[torch.nn.Module, tuple[torch.Tensor, ...]]]:
    return lambda: ZOO[name].build(torch.float16, 256, 64)


def _gpt() -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return GPT().eval(), (torch.randint(0, 512, (2, 32),
                                        generator=torch.Generator().manual_seed(1)),)


def _hf(name: str, wrapper: str) -> Callable[[], tuple[torch.nn.Module, tuple[torch.Tensor, ...]]]:
    def build() -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
        pytest.importorskip("transformers")
        import test_hf_models as hf

        return getattr(hf, wrapper)(hf._build(name, torch.float32)), (hf._ids(),)
    return build


MODELS = {
    "mlp": _zoo("mlp"),
    "decoder": _zoo("decoder"),
    "convnet": _zoo("convnet"),
    "gpt-torch-nn": _gpt,
    "hf-llama": _hf("llama", "TokenLogits"),
    "hf-gpt2": _hf("gpt2", "TokenLogits"),
    "hf-bert": _hf("bert", "TokenHidden"),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_compile_and_check_through_the_cli(name, tmp_path):
    model, inputs = MODELS[name]()
    pt2, out = tmp_path / f"{name}.pt2", tmp_path / f"{name}.spyre"
    torch.export.save(torch.export.export(model, inputs), pt2)
    runner = CliRunner()
    res = runner.invoke(main, ["compile", str(pt2), "-o", str(out)])
    assert res.exit_code == 0, res.output
    res = runner.invoke(main, ["run", str(out), "--check", str(pt2)])
    assert res.exit_code == 0, res.output
    assert "worst element" in res.output and "FAILED" not in res.output
    assert f"the example inputs saved in {pt2}" in res.output
