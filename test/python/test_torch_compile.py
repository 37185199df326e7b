"""torch.compile(model, backend="spyrec"): Dynamo graphs compiled by spyrec, run on the emulator."""

from __future__ import annotations

import pytest
import torch
from conftest import assert_close

from spyrec.demo import DemoDecoderFFN, DemoMLP
from spyrec.verdict import STORAGE_UNIT, ModelInfo, OutputModel


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.mark.parametrize("model,x", [
    (DemoMLP(100), torch.randn(64, 100)),
    (DemoDecoderFFN(128), torch.randn(2, 16, 128)),
], ids=["mlp", "decoder-ffn"])
def test_backend_matches_eager(model, x, recwarn):
    torch.manual_seed(0)
    model = model.half().eval()
    x = x.half()
    compiled = torch.compile(model, backend="spyrec")
    out = compiled(x)
    with torch.no_grad():
        expected = model(x)
    # the backend hides its executables: a generous error model for these models (at most
    # 7 kernels, each contracting over at most 256)
    info = ModelInfo([OutputModel("out", "float16", STORAGE_UNIT["dl16"]["float16"],
                                  depth=3 * 256, steps=8)])
    assert_close(info, expected, out)
    assert not [w for w in recwarn if "running this graph in eager" in str(w.message)]
    # eager PyTorch would be bit-exact with itself: a nonzero difference shows DL16 ran
    assert not torch.equal(out, expected)


class _Unsupported(torch.nn.Module):
    def forward(self, x):
        return torch.cumprod(x, dim=1)


def test_unsupported_graph_falls_back_with_a_warning():
    x = torch.randn(4, 64)
    with pytest.warns(UserWarning, match=r"(?s)running this graph in eager PyTorch: .*cumprod"):
        out = torch.compile(_Unsupported(), backend="spyrec")(x)
    assert torch.equal(out, torch.cumprod(x, dim=1))


def test_no_fallback_option_raises():
    x = torch.randn(4, 64)
    compiled = torch.compile(_Unsupported(), backend="spyrec", options={"fallback": False})
    with pytest.raises(Exception, match="cumprod"):
        compiled(x)
