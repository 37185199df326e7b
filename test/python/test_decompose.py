"""The frontend's decomposition to core ATen with torch's operator walk cached and its
override of the CompositeImplicitAutograd operators trimmed to those not decomposed by their
own kernel (spyrec/frontend/decompose.py): the same graph as torch's own call, and a custom
operator registered between two compiles seen by the second."""

from __future__ import annotations

import torch

from spyrec.frontend import decompose as dec
from spyrec.frontend.importer import KEEP_WHOLE


class _Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(32, 32)
        self.norm = torch.nn.LayerNorm(32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.nn.functional.gelu(self.fc(self.norm(x)))
        return torch.softmax(y.transpose(0, 1) @ y, dim=-1).mean(dim=0)


def test_the_cached_walk_gives_torchs_graph():
    ep = torch.export.export(_Block(), (torch.randn(8, 32),))
    table = torch.export.default_decompositions()
    for op in KEEP_WHOLE:
        table.pop(op, None)
    expected = ep.run_decompositions(table)
    got = dec.decompose(ep, KEEP_WHOLE)
    assert got.graph_module.code == expected.graph_module.code
    assert "aten.linear" in got.graph_module.code  # kept whole
    # the torch functions are restored after the call
    assert getattr(dec.exported_program, dec._LOOKUP) is dec._UNCACHED
    assert getattr(dec.exported_program, dec._OVERRIDE) is dec._UNTRIMMED


class _Composites(torch.nn.Module):
    """Composite operators of every kind: decomposed by their own kernel (einsum, flatten,
    dropout, group_norm), kept whole (linear, SDPA, upsampling), with a custom
    decomposition of torch's table (the upsampling's)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)
        self.norm = torch.nn.GroupNorm(2, 4)

    def forward(self, x: torch.Tensor, img: torch.Tensor) -> tuple[torch.Tensor, ...]:
        q = self.fc(x).view(2, 4, 8, 16)
        a = torch.nn.functional.scaled_dot_product_attention(q, q, q)
        b = torch.einsum("bhld,bhmd->bhlm", q, q).flatten(2)
        c = torch.nn.functional.interpolate(self.norm(img), scale_factor=2.0)
        return a, torch.nn.functional.dropout(b, 0.1, training=False), c


def test_the_trimmed_override_gives_torchs_graph_for_every_kind_of_composite():
    ep = torch.export.export(_Composites().eval(), (torch.randn(8, 8, 16),
                                                    torch.randn(1, 4, 6, 6)))
    table = torch.export.default_decompositions()
    for op in KEEP_WHOLE:
        table.pop(op, None)
    expected = ep.run_decompositions(table)  # torch's own call: every CIA op overridden
    got = dec.decompose(ep, KEEP_WHOLE)
    assert got.graph_module.code == expected.graph_module.code
    assert "aten.einsum" not in got.graph_module.code and "aten.bmm" in got.graph_module.code
    assert "scaled_dot_product_attention" in got.graph_module.code


def test_a_custom_operator_registered_later_changes_the_key():
    before = dec._registry_key()
    assert not any("spyrec_decompose_test" in str(op) for op in dec._cached_cia_ops())
    lib = torch.library.Library("spyrec_decompose_test", "DEF")
    lib.define("twice(Tensor x) -> Tensor")
    lib.impl("twice", lambda x: x * 2, "CompositeImplicitAutograd")
    assert dec._registry_key() != before
    assert torch.ops.spyrec_decompose_test.twice.default in dec._cached_cia_ops()
