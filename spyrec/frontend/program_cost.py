"""The source program's own cost: its least off-chip traffic and its flops as written.

The roofline a run is measured against must not depend on what the compiler chose to emit:
a depthwise convolution run as a dense one, or a weight read once per tile, has to show up
as time and traffic above the program's minimum, not raise the minimum with it (design
note 70). So the minimum is computed here, from the ExportedProgram before any spyrec pass,
and recorded in the `.spyre` beside the compiled kernels' own figures
(`spyrec.target.container.ProgramCost`).

**Bytes.** Every parameter, buffer and constant the graph uses and every user input is read
once, every output is written once (a buffer updated in place by an index assignment, a KV
cache's `cache[:, :, pos] = k`, writes only the assigned values), at its device storage size
(`target.layout.DEVICE_DTYPE`: fp16/bf16 2 B, fp32 4 B, int64 ids as int32 4 B, a bool
predicate as fp32 4 B) and unpadded.
The tensors are recorded with their shapes (a symbolic dim by its symbol's name), so a run at
any size in range gets its own exact figure, and the stick-padded figure (each tensor
row-sticked in its source shape) can be shown beside the minimum.

**Flops**, counted on the program after torch's core-ATen decomposition (the one the importer
applies, which keeps linear, attention, softmax, the norms and the activations whole), each
op as written, never guessed:

    mm, bmm, matmul, linear      2 * out elements * K          (+ out elements for a bias)
    addmm, baddbmm               2 * out elements * K + out elements
    convolution (any groups,     2 * out elements * Cin/groups * kernel size (+ bias)
      depthwise, 1-3 D)          transposed: 2 * in elements * Cout/groups * kernel size
    scaled_dot_product_attention per (query, key) pair computed: 2E + 2Ev (the two products)
                                 + 1 (scale) + 5 (softmax) (+ 1 for an additive mask); every
                                 pair is computed except with is_causal=True, whose contract
                                 excludes the masked pairs (query i sees keys 0..i): only
                                 those are counted. A mask passed as a tensor (attn_mask, a
                                 masked_fill'ed score matrix, a sliding window) is data: every
                                 pair counts, as the op as written computes it
    softmax, log_softmax         5 per element (max, subtract, exp, sum, divide/log)
    logsumexp                    4 per input element (max, subtract, exp, sum) + 1 (log)
                                 per output element
    layer_norm, group_norm       5 per element (mean, centre, square, variance, scale)
                                 + 1 per element each for a weight and a bias
    rms_norm                     3 per element + 1 for a weight
    batch_norm (inference)       2 per element (centre, scale) + 1 each for weight, bias
    reductions (sum, mean, amax, 1 per input element (+ 1 per output element for a mean)
      cumsum, var, ...)          var/std: 3 per input element
    max/avg pooling              window size per output element (the window's compares or
                                 adds); adaptive average pooling as a mean
    elementwise (torch's         1 per output element per op (an activation is one op)
      pointwise tag and the
      activations kept whole)
    scatter_add, index_add,      1 per source element (index_put without accumulate: 0)
      index_put(accumulate)
    data movement (views, casts, 0
      cat, slice, gather, pad,
      scatter, embedding,
      factories)

Any other op counts 0 and is listed (`ProgramCost.uncounted`), so a reader sees what the
figure leaves out. A KTIR input program has no source program: its binary carries no
program cost and the profile's roofline is the kernels' own (`runtime/profile.py`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

import sympy
import torch

from spyrec.target.container import ProgramCost, ProgramTensor
from spyrec.target.layout import DEVICE_DTYPE

Expr = sympy.Expr

_A = torch.ops.aten

_PRODUCTS = {_A.mm.default, _A.bmm.default, _A.matmul.default}
_PRODUCTS_PLUS = {_A.addmm.default, _A.baddbmm.default}
_CONVOLUTIONS = {_A.convolution.default, _A.conv1d.default, _A.conv2d.default,
                 _A.conv3d.default, _A.conv_transpose1d.default, _A.conv_transpose2d.input,
                 _A.conv_transpose3d.input}
_SOFTMAX = {_A.softmax.int, _A._softmax.default, _A.log_softmax.int, _A._log_softmax.default}
_LOGSUMEXP = _A.logsumexp.default
_LAYER_NORMS = {_A.layer_norm.default, _A.native_layer_norm.default,
                _A.group_norm.default, _A.native_group_norm.default}
_BATCH_NORMS = {_A._native_batch_norm_legit_no_training.default,
                _A.batch_norm.default}
_REDUCTIONS = {_A.sum.default, _A.sum.dim_IntList, _A.amax.default, _A.amin.default,
               _A.max.default, _A.min.default, _A.max.dim, _A.min.dim, _A.argmax.default,
               _A.argmin.default, _A.prod.default, _A.prod.dim_int, _A.any.default,
               _A.any.dim, _A.any.dims, _A.all.default, _A.all.dim, _A.cumsum.default}
_POOLS = {_A.max_pool1d.default, _A.max_pool2d.default, _A.max_pool2d_with_indices.default,
          _A.max_pool3d.default, _A.max_pool3d_with_indices.default, _A.avg_pool1d.default,
          _A.avg_pool2d.default, _A.avg_pool3d.default}
_ADAPTIVE_POOLS = {_A.adaptive_avg_pool1d.default, _A.adaptive_avg_pool2d.default,
                   _A._adaptive_avg_pool2d.default, _A.adaptive_avg_pool3d.default,
                   _A._adaptive_avg_pool3d.default}
_MEANS = {_A.mean.default, _A.mean.dim}
_VARIANCES = {_A.var.correction, _A.var.dim, _A.std.correction, _A.std.dim,
              _A.var_mean.correction}
# activations spyrec keeps whole that torch does not tag pointwise
_ELEMENTWISE = {_A.hardswish.default, _A.hardsigmoid.default, _A.mish.default,
                _A.elu.default, _A.hardtanh.default}
# ops that move or make data without arithmetic (views are found by their schema)
_MOVES = {_A._to_copy.default, _A.to.dtype, _A.clone.default, _A.copy.default,
          _A.contiguous.default, _A.cat.default, _A.stack.default, _A.slice_scatter.default,
          _A.select_scatter.default, _A.index.Tensor, _A.index_select.default,
          _A.gather.default, _A.embedding.default, _A.constant_pad_nd.default,
          _A.pad.default, _A.repeat.default, _A.flip.default, _A.roll.default,
          _A.full.default, _A.full_like.default, _A.zeros.default, _A.zeros_like.default,
          _A.ones.default, _A.ones_like.default, _A.empty.memory_format,
          _A.empty_like.default, _A.arange.default, _A.arange.start,
          _A.arange.start_step, _A.scalar_tensor.default, _A.lift_fresh_copy.default,
          _A.dropout.default, _A.tril.default, _A.triu.default, _A.split.Tensor,
          _A.split_with_sizes.default, _A.chunk.default, _A.unbind.int,
          _A.alias.default, _A.detach.default, _A.scatter.src, _A.scatter.value,
          _A.index_copy.default}
# accumulating scatters: one add per source element (index_put only with accumulate=True)
_SCATTER_ADDS = {_A.scatter_add.default: (3, "src"), _A.index_add.default: (3, "source"),
                 _A.index_put.default: (2, "values")}


def _expr(size: Any) -> Expr:
    return sympy.sympify(size.node.expr if isinstance(size, torch.SymInt) else int(size))


def _val(value: Any) -> Any:
    """The example tensor of a node (the first of a tuple-valued op's results)."""
    val = value.meta.get("val") if isinstance(value, torch.fx.Node) else None
    if isinstance(val, (tuple, list)):
        val = next((v for v in val if isinstance(v, torch.Tensor)), None)
    return val if isinstance(val, torch.Tensor) else None


def _shape(value: Any) -> list[Expr]:
    val = _val(value)
    return [] if val is None else [_expr(d) for d in val.shape]


def _numel(value: Any) -> Expr:
    return sympy.Mul(*_shape(value))


def _arg(node: torch.fx.Node, index: int, name: str, default: Any = None) -> Any:
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def _causal_pairs(queries: Expr, keys: Expr) -> Expr | None:
    """The (query, key) pairs a causal mask keeps (query i sees keys 0..i), or None when
    the count has no closed form here (two different symbolic lengths)."""
    if queries.is_Integer and keys.is_Integer:
        q, k = int(queries), int(keys)
        below = min(q, k)
        return sympy.Integer(below * (below + 1) // 2 + (q - below) * k)
    if sympy.simplify(queries - keys) == 0:
        return queries * (queries + 1) / 2
    return None


def _attention(node: torch.fx.Node) -> Expr | None:
    q, k, v = (_shape(node.args[i]) for i in range(3))
    batch = sympy.Mul(*q[:-2])
    queries, keys = q[-2], k[-2]
    pairs = queries * keys
    if _arg(node, 5, "is_causal", False):
        causal = _causal_pairs(queries, keys)
        if causal is None:
            return None
        pairs = causal
    per_pair = 2 * q[-1] + 2 * v[-1] + 1 + 5
    if _arg(node, 3, "attn_mask") is not None:
        per_pair += 1
    return batch * pairs * per_pair


def _convolution(node: torch.fx.Node) -> Expr:
    source, weight = node.args[0], node.args[1]
    w = _shape(weight)
    transposed = bool(_arg(node, 6, "transposed", False)) if node.target is \
        _A.convolution.default else "transpose" in str(node.target)
    per_element = 2 * w[1] * sympy.Mul(*w[2:])
    flops = per_element * (_numel(source) if transposed else _numel(node))
    if _arg(node, 2, "bias") is not None:
        flops += _numel(node)
    return flops


def _norm(node: torch.fx.Node, per_element: int, affine: Sequence[tuple[int, str]]) -> Expr:
    """`per_element` flops per input element, plus one per element for each affine
    argument (its position and name) that is given."""
    count = per_element + sum(1 for index, name in affine if _arg(node, index, name) is not None)
    return count * _numel(node.args[0])


def node_flops(node: torch.fx.Node) -> Expr | None:
    """The flops of one call_function node as written (the table in the module docstring);
    None for an op the table does not count."""
    target = node.target
    if not isinstance(target, torch._ops.OpOverload):
        return sympy.Integer(0)  # getitem, symbolic-size arithmetic, asserts
    if _val(node) is None or target in _MOVES or target.is_view:
        return sympy.Integer(0)
    if target in _PRODUCTS:
        return 2 * _numel(node) * _shape(node.args[0])[-1]
    if target in _PRODUCTS_PLUS:
        return 2 * _numel(node) * _shape(node.args[1])[-1] + _numel(node)
    if target is _A.linear.default:
        bias = _numel(node) if _arg(node, 2, "bias") is not None else 0
        return 2 * _numel(node) * _shape(node.args[0])[-1] + bias
    if target in _CONVOLUTIONS:
        return _convolution(node)
    if target is _A.scaled_dot_product_attention.default:
        return _attention(node)
    if target in _SOFTMAX:
        return 5 * _numel(node)
    if target is _LOGSUMEXP:
        return 4 * _numel(node.args[0]) + _numel(node)
    if target in _LAYER_NORMS:
        first = 1 if target is _A.native_group_norm.default else 2
        return _norm(node, 5, ((first, "weight"), (first + 1, "bias")))
    if target is _A.rms_norm.default:
        return _norm(node, 3, ((2, "weight"),))
    if target in _BATCH_NORMS:
        return _norm(node, 2, ((1, "weight"), (2, "bias")))
    if target in _REDUCTIONS:
        return _numel(node.args[0])
    if target in _SCATTER_ADDS:
        if target is _A.index_put.default and not _arg(node, 3, "accumulate", False):
            return sympy.Integer(0)
        return _numel(_arg(node, *_SCATTER_ADDS[target]))
    if target in _POOLS:
        window = _arg(node, 1, "kernel_size")
        return _numel(node) * math.prod(window)
    if target in _ADAPTIVE_POOLS:
        return _numel(node.args[0]) + _numel(node)
    if target in _MEANS:
        return _numel(node.args[0]) + _numel(node)
    if target in _VARIANCES:
        return 3 * _numel(node.args[0]) + _numel(node)
    if torch.Tag.pointwise in target.tags or target in _ELEMENTWISE:
        return _numel(node)
    return None


def _symbol_names(users: list[torch.fx.Node]) -> dict[Expr, str]:
    """Each symbolic size by its name in the `.spyre` (`<input>.dim<k>` of its first use,
    as `frontend.symbolic.specialize` names it)."""
    names: dict[Expr, str] = {}
    for node in users:
        for d, size in enumerate(_shape(node)):
            if isinstance(size, sympy.Symbol) and size not in names:
                names[size] = f"{node.name}.dim{d}"
    return names


def _tensor(node: torch.fx.Node, kind: str, names: dict[Expr, str]) -> ProgramTensor:
    val = _val(node)
    assert val is not None, node  # every placeholder and output of an exported program
    dtype = str(val.dtype).removeprefix("torch.")
    itemsize = DEVICE_DTYPE[dtype].itemsize if dtype in DEVICE_DTYPE else val.element_size()
    shape = tuple(int(d) if d.is_Integer else names[d] for d in _shape(node))
    return ProgramTensor(node.name, kind, shape, dtype, itemsize)


def _written(value: torch.fx.Node, names: dict[Expr, str],
             ep: torch.export.ExportedProgram) -> ProgramTensor:
    """An output written once; a buffer updated in place by index assignment (a KV cache's
    `cache[:, :, pos] = k`, exported as `index_put` of the buffer and its write-back) writes
    only the assigned values."""
    mutated = ep.graph_signature.buffers_to_mutate
    placeholder = ep.graph_signature.inputs_to_buffers
    if (value.name in mutated and value.target is _A.index_put.default
            and isinstance(value.args[0], torch.fx.Node)
            and placeholder.get(value.args[0].name) == mutated[value.name]
            and not _arg(value, 3, "accumulate", False)):
        return _tensor(value.args[2], "update", names)  # type: ignore[arg-type]
    return _tensor(value, "output", names)


def _polynomial(total: Expr, names: dict[Expr, str]
                ) -> tuple[tuple[int, int, dict[str, int]], ...]:
    """`total` as terms (numerator, denominator, symbol name -> power)."""
    symbols = sorted(names, key=lambda s: names[s])
    if not symbols:
        return ((int(total), 1, {}),) if total != 0 else ()
    terms = []
    for powers, coefficient in sympy.Poly(sympy.expand(total), *symbols).terms():
        if coefficient == 0:
            continue
        numerator, denominator = sympy.fraction(coefficient)
        terms.append((int(numerator), int(denominator),
                      {names[s]: int(p) for s, p in zip(symbols, powers, strict=True) if p}))
    return tuple(terms)


def program_cost(ep: torch.export.ExportedProgram) -> ProgramCost:
    """The cost of `ep` as written (see the module docstring): its tensors read or written
    once and its flops by the table, with every op the table does not count listed.
    `ep` is the program as the importer decomposes it, symbolic sizes still symbolic."""
    sig = ep.graph_signature
    kinds = {**dict.fromkeys(sig.inputs_to_parameters, "parameter"),
             **dict.fromkeys(sig.inputs_to_buffers, "buffer"),
             **dict.fromkeys(sig.inputs_to_lifted_tensor_constants, "constant")}
    placeholders = [n for n in ep.graph.nodes if n.op == "placeholder"]
    user_inputs = [n for n in placeholders if n.name not in kinds]
    names = _symbol_names(user_inputs)
    tensors = [_tensor(n, kinds.get(n.name, "input"), names)
               for n in placeholders if n.users and _val(n) is not None]
    output = next(n for n in ep.graph.nodes if n.op == "output")
    tensors += [_written(v, names, ep) for v in output.args[0]
                if isinstance(v, torch.fx.Node) and _val(v) is not None]
    total: Expr = sympy.Integer(0)
    uncounted: Counter[str] = Counter()
    for node in ep.graph.nodes:
        if node.op != "call_function":
            continue
        flops = node_flops(node)
        if flops is None or not _polynomial_in(flops, names):
            uncounted[str(node.target)] += 1
            continue
        total += flops
    return ProgramCost(tuple(tensors), _polynomial(total, names), dict(sorted(uncounted.items())))


def _polynomial_in(flops: Expr, names: dict[Expr, str]) -> bool:
    """Whether `flops` is a polynomial in the program's symbols (a size derived otherwise,
    e.g. by a floor division, has no exact closed form here)."""
    if flops.is_Integer:
        return True
    if not flops.free_symbols <= set(names):
        return False
    try:
        sympy.Poly(sympy.expand(flops), *sorted(names, key=str))
    except sympy.PolynomialError:
        return False
    return True

