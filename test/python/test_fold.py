"""Constant folding in the frontend: input-independent subgraphs become weights.

A model whose buffers feed a host-style computation (arange, cos/sin tables, a causal mask
built from comparisons) compiles although none of those ops has a device lowering, runs
with the same results as eager, keeps the folded node's name on the constant, and stores
each parameter once.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F
from conftest import assert_close

import spyrec
from spyrec.dialects.spyre import ParamOp
from spyrec.driver import compile_program
from spyrec.frontend.fold import MASKED, fold_constants
from spyrec.frontend.importer import decompose


class Rotary(nn.Module):
    """x * cos(table) + linear(x), where the table comes from a buffer and arange."""

    inv_freq: torch.Tensor  # a buffer

    def __init__(self, d: int = 64, rows: int = 16):
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / (100.0 ** (torch.arange(d) / d)),
                             persistent=False)
        self.fc = nn.Linear(d, d)
        self.rows = rows

    def forward(self, x):
        positions = torch.arange(self.rows, dtype=torch.float32)
        table = torch.outer(positions, self.inv_freq)
        return x * torch.cos(table) + self.fc(x)


class MaskedAttention(nn.Module):
    """Attention with a boolean causal mask built from arange and comparisons."""

    def forward(self, q, k, v):
        rows = torch.arange(q.shape[-2])
        mask = rows[:, None] >= rows[None, :]
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask[None, None])


def _compile_and_compare(model, *inputs):
    ep = torch.export.export(model, inputs)
    result = compile_program(ep)
    assert result.binary is not None
    exe = spyrec.api.Executable(result.binary)
    with torch.no_grad():
        expected = model(*inputs)
    assert_close(exe, expected, exe(*inputs))
    return result


def test_rotary_table_is_folded_and_matches_eager():
    torch.manual_seed(0)
    result = _compile_and_compare(Rotary().eval(), torch.randn(2, 16, 64))
    assert result.binary is not None and result.program is not None
    names = [b.name for b, _ in result.binary.weights]
    # the cos table is one constant named after its node; the linear weight is stored once
    # (its transpose is folded into the layout, not copied by the folder)
    folded = [n for n in names if n.endswith(".folded")]
    assert folded == ["cos.folded"]
    assert sorted(n.removesuffix("^T") for n in names if not n.endswith(".folded")) == [
        "fc.bias", "fc.weight"]
    params = [o for o in result.program.module.walk() if isinstance(o, ParamOp)]
    cos = next(p for p in params if p.param_name.data == "cos.folded")
    assert cos.attributes["fx_node"].data == "cos"  # type: ignore[attr-defined]
    assert "test_fold.py" in cos.attributes["source"].data  # type: ignore[attr-defined]


def test_boolean_mask_becomes_an_additive_constant():
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 32, 64) for _ in range(3))
    result = _compile_and_compare(MaskedAttention(), q, k, v)
    assert result.binary is not None
    [(_binding, data)] = result.binary.weights
    # one [32, 32] mask shared by batch and heads: 0 on and below the diagonal, MASKED above
    expected = torch.where(torch.ones(32, 32, dtype=torch.bool).tril(), 0.0, MASKED)
    assert torch.equal(torch.from_numpy(data).reshape(32, 32), expected)


def test_nodes_that_depend_on_inputs_are_not_folded():
    ep = decompose(torch.export.export(Rotary(), (torch.randn(2, 16, 64),)))
    sig = ep.graph_signature
    params = {**sig.inputs_to_parameters, **sig.inputs_to_buffers,
              **sig.inputs_to_lifted_tensor_constants}
    state = {**ep.state_dict, **ep.constants}
    folding = fold_constants(ep.graph, {node: state[name] for node, name in params.items()})
    folded = {n.name for n in folding.folded}
    device = {n.name for n in ep.graph.nodes if n.op == "call_function"} - folded
    assert {"arange", "cos"} <= folded
    assert {"mul_1", "linear", "add"} <= device  # every op that reads x stays on the device
    assert not any(n.name == "permute" for n in folding.folded)  # a weight transpose: no copy
    assert [n.name for n in folding.constants] == ["cos"]


def test_random_ops_are_not_folded():
    class Noise(nn.Module):
        def forward(self, x):
            return x + torch.rand(4, 64) * torch.arange(64.0)

    ep = decompose(torch.export.export(Noise(), (torch.randn(4, 64),)))
    folding = fold_constants(ep.graph, {})
    folded = {str(n.target) for n in folding.folded}
    # arange is a constant and folds; the random draw and everything after it stay
    assert any("arange" in t for t in folded)
    assert not any("rand" in t for t in folded)


class _PartlyWritten(nn.Module):
    """An int64 buffer made with `torch.empty` (unspecified values), half of it written."""

    def forward(self, x):
        table = torch.empty(16, dtype=torch.int64)
        table[:8] = torch.arange(8)
        return x + table[None, :].float()


def test_uninitialized_tensors_fold_as_zeros():
    """`torch.empty` and its kind return whatever memory held; folded, they are zeros, so the
    compile is deterministic and an integer range analysis never reads leftover memory as
    values (hf:zaya's inverse permutation `inv = empty_like(perm); inv[perm] = arange`)."""
    ep = decompose(torch.export.export(_PartlyWritten(), (torch.zeros(4, 16),)))
    folding = fold_constants(ep.graph, {})
    assert any("empty" in str(n.target) for n in folding.folded)
    (table,) = folding.constants.values()  # the float table x is added to
    assert table.flatten().tolist() == [*range(8), *[0] * 8]


class MaskReadTwice(nn.Module):
    """LASR's encoder: one folded boolean mask read as SDPA's attn_mask and, negated, as a
    `masked_fill` condition: stored as a 0/1 predicate both readers take (it was left a
    boolean constant, which SDPA refused as "a i1 attn_mask")."""

    def forward(self, q: torch.Tensor) -> torch.Tensor:
        n = q.shape[-2]
        keep = (torch.arange(n)[None, :] <= torch.arange(n)[:, None] + 2).expand(1, 1, n, n)
        attn = F.scaled_dot_product_attention(q, q, q, attn_mask=keep)
        return attn.masked_fill(~keep[..., :1], 0.0) + 1


def test_a_boolean_mask_read_by_sdpa_and_a_logical_op_is_a_predicate():
    torch.manual_seed(3)
    q = torch.randn(1, 2, 13, 64)
    exe = spyrec.compile(torch.export.export(MaskReadTwice(), (q,)), cache=False)
    assert_close(exe, MaskReadTwice()(q), exe(q))
