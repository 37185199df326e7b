"""Symbolic sizes: compile once at the upper bound, correct on the host per call.

A dim exported with `torch.export.Dim("seq", min=.., max=..)` is a sympy symbol in the FX
graph. spyrec compiles the program once, with every symbol at its upper bound, and records
in the `.spyre` which input and output dims are symbolic and their bounds. At run time the
host's program-correction step (`ComputeOnHost`) reads each symbol's value from the inputs,
refuses values out of range, zero-pads every symbolic input dim to the compiled size and
crops the outputs back.

That is only correct when no real element of an output depends on a padded element. This
module proves it per node before anything is compiled, and names the node when it cannot:

- every dim of every value has a *factor structure*: the tuple of factors (static sizes or
  one symbolic *extent*) it is the row-major merge of. An extent is a symbol or a symbol
  plus a constant (`s + 1` after a cat puts one static position in front); its real
  positions are a prefix of that length, the padding after them. Views regroup factors
  (`[2, s, 128]` -> `[2*s, 128]` is the dim `(2, s)`), and a view must keep each extent a
  whole factor, so the padded positions of a merged dim stay where the padding put them;
- ops that only combine elements at the same position (pointwise ops, casts, views) are safe;
- reductions (sum, softmax, norms, ...) and contractions (the K of a matmul) over a symbolic
  dim are not: the padding would be summed in. A prefix scan (cumsum, cummax) along an
  unmerged extent is: position p reads positions <= p, real when p is. A softmax,
  log_softmax, logsumexp, amax or max over one symbol's length reads the host's key mask
  (-inf at every padded position, `key_mask.py`, note 81), and a sum over a dim whose
  padding is provably 0 (`pads`: a masked softmax's weights) adds nothing (note 93);
- top-k, sort and the other ranks along a static dim (an MoE router's experts per token)
  read only their own position of the other dims: safe; along a symbolic dim refused. The
  proof is made on the graph with its routing rewritten as the importer will (`routed`:
  `spyrec.frontend.moe`'s dense dispatch, exact), where each token's row is its own;
- attention whose key length is symbolic is safe when a real query never sees a padded key:
  causal attention over the same length; a mask computed from the sizes alone (no input
  values; transformers' causal masks) that, evaluated at the upper bound, masks (False or
  -inf) every key column a padded position can hold for every query row real with it; or a
  mask whose padded key columns are known to be False (`pads`: the host pads inputs with
  zeros, and casts, views, indexing at an arange and `&` carry that, as transformers builds
  its mask from an attention_mask input sized by the same symbol);
- slices along a symbolic dim are safe when every position they keep reads a real one at
  every size (a prefix, or `[c:]` of an extent `s + c`); a cat along one is safe when the
  static pieces come first and one symbolic piece last; a select or a split along one is
  not (x[:, -1] would read the padding). n equal symbolic pieces (a cat, a repeat) make the
  merged dim (n, ...), each block padded at its own end, and a slice of whole blocks of it
  gets them back (the dense MoE dispatch's rows per expert). Static pieces after one extent
  make a TAIL (attention sinks: `cat([scores, sinks], -1)`): the key mask leaves its static
  positions as they are, and only the slice back to the extent reads it;
- a 1-D causal convolution along a symbolic length (stride 1, dilation 1, padding at least
  kernel - 1: output t reads inputs up to t) whose every use is the slice back to that
  length (`conv1d(x, padding=k - 1)[..., :L]`, Mamba's and LFM's short convolutions) keeps
  real positions only; its positions past the length are a TAIL only that slice reads
  (note 111). A window reaching forward is refused;
- slice_scatter / select_scatter along a static dim write each position of the other dims
  from the same one (`key[..., :64].copy_(k)` into a `new_empty`); along a symbolic dim
  refused;
- an index (gather, advanced indexing) into a symbolic dim is safe when its indices' values
  at real positions are provably below the extent: an `arange` of the symbol and its views
  (`bounded`); indices into a static dim may be anything (the padded ones land in padded
  results);
- any other op touching a symbolic dim is refused: it has no padding rule yet.

Alternative that lost: one compiled program per size. A `.spyre` must run every size in range,
and a program per size multiplies compile time and binary size by the range.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import sympy
import torch
from torch.fx.node import map_arg

from spyrec.diagnostics import CompileError
from spyrec.dialects.spyre_symbolic import SymbolicSignature
from spyrec.frontend.key_mask import add_key_masks
from spyrec.frontend.moe import rewrite_routing

Factor = int | sympy.Expr  # a static size, or an extent: a symbol, or a symbol plus a constant
# TAIL(e, c): an extent e, its padding, then c static real positions (attention sinks'
# `cat([scores, sinks], -1)`: the sinks sit after the padding, at the bound)
TAIL = sympy.Function("tail")


def _tail(factor: Factor) -> tuple[sympy.Expr, int] | None:
    """(e, c) of a TAIL(e, c) factor; None for any other."""
    if not isinstance(factor, TAIL):
        return None
    prefix, count = factor.args
    assert isinstance(prefix, sympy.Expr) and isinstance(count, sympy.Integer)
    return prefix, int(count)
Structure = tuple[tuple[Factor, ...], ...]  # per dim, the factors it merges (outer first)


@dataclass(frozen=True)
class SymbolBound:
    """One symbolic size: its name in the .spyre (`<input>.dim<k>` of its first use) and
    its inclusive bounds."""

    name: str
    lower: int
    upper: int


@dataclass
class Specialization:
    """A program with symbolic sizes, specialised at their upper bounds."""

    program: torch.export.ExportedProgram  # the static program to compile
    symbols: list[SymbolBound]
    inputs: list[dict[int, str]] = field(default_factory=list)  # per program input: dim -> symbol
    outputs: list[dict[int, str]] = field(default_factory=list)  # per output: dim -> symbol
    # per program input: "" for the user's, the symbol for a key mask the host makes
    # (`key_mask.py`; those follow the user's inputs)
    made: list[str] = field(default_factory=list)

    def signature(self) -> SymbolicSignature:
        """What the module records (`spyre.symbols`): the symbols' bounds, which input
        and output dims they size, and which inputs the host makes, as the host's program
        correction needs them."""
        return SymbolicSignature({b.name: (b.lower, b.upper) for b in self.symbols},
                                 tuple(dict(d) for d in self.inputs),
                                 tuple(dict(d) for d in self.outputs),
                                 tuple(self.made) if any(self.made) else ())


_VIEWS = {"aten.view.default", "aten._unsafe_view.default", "aten.reshape.default",
          "aten.flatten.using_ints", "aten.unsqueeze.default", "aten.squeeze.dim",
          "aten.squeeze.dims", "aten.squeeze.default"}
_SAME_POSITION = {
    "aten.clone.default", "aten.alias.default", "aten._to_copy.default", "aten.to.dtype",
    "aten.contiguous.default", "aten.detach.default", "aten.dropout.default",
    "aten.lift_fresh_copy.default", "aten.expand.default", "aten.embedding.default",
    "aten.tril.default", "aten.triu.default", "aten.gelu.default", "aten.silu.default",
    "aten.hardtanh.default", "aten.leaky_relu.default", "aten.elu.default",
    "aten.softplus.default", "aten.mish.default", "aten.hardswish.default",
    "aten.hardsigmoid.default", "aten.empty.memory_format", "aten.copy.default",
    "aten.full.default", "aten.zeros.default", "aten.ones.default",
    "aten.full_like.default", "aten.zeros_like.default", "aten.ones_like.default",
    "aten.arange.default", "aten.arange.start", "aten.arange.start_step", "aten.where.self",
    "aten.to.dtype_layout", "aten.where.ScalarOther", "aten.where.ScalarSelf",
    "aten.where.Scalar",
}
# ops whose result holds only values of their first operand: indices stay below their bound
_KEEPS_VALUES = _VIEWS | {
    "aten.permute.default", "aten.transpose.int", "aten.t.default", "aten.expand.default",
    "aten.clone.default", "aten.alias.default", "aten._to_copy.default", "aten.to.dtype",
    "aten.contiguous.default", "aten.slice.Tensor", "aten.select.int",
    "aten.lift_fresh_copy.default", "aten.detach.default"}
_ARANGES = {"aten.arange.default", "aten.arange.start", "aten.arange.start_step"}
# op -> the argument holding its reduced dims (None: every dim but the leading ones given)
_REDUCTIONS = {
    "aten.sum.dim_IntList": "dim", "aten.mean.dim": "dim", "aten.amax.default": "dim",
    "aten.amin.default": "dim", "aten.var.correction": "dim", "aten.std.correction": "dim",
    "aten.logsumexp.default": "dim", "aten.linalg_vector_norm.default": "dim",
    "aten.softmax.int": "dim", "aten._softmax.default": "dim", "aten._log_softmax.default": "dim",
    "aten.log_softmax.int": "dim", "aten.max.dim": "dim", "aten.min.dim": "dim",
    "aten.argmax.default": "dim", "aten.argmin.default": "dim",
    "aten.prod.dim_int": "dim", "aten.sum.default": "dim", "aten.mean.default": "dim",
}
# why bidirectional attention over a symbolic key length is refused, and what would serve
_BIDIRECTIONAL = ("(padded keys would be attended: pass the attention mask as an input sized by "
                  "the same symbolic dim, e.g. transformers' attention_mask, whose zero "
                  "padding masks them, or make the attention causal)")
# reductions the host's key mask serves (-inf at the padded positions, `key_mask.py`) -> what
# their result holds at a padded position of the reduced dim (None: they reduce it away)
_MASKED: dict[str, float | None] = {
    "aten.softmax.int": 0.0, "aten._softmax.default": 0.0,
    "aten.log_softmax.int": float("-inf"), "aten._log_softmax.default": float("-inf"),
    "aten.logsumexp.default": None, "aten.amax.default": None, "aten.max.dim": None}
_SUMS = {"aten.sum.dim_IntList", "aten.sum.default"}  # padded zeros add nothing
# position p reads positions <= p
_SCANS = {"aten.cumsum.default", "aten.cumprod.default", "aten.cummax.default",
          "aten.cummin.default", "aten.logcumsumexp.default"}
# op -> (the position of its dim argument, the default dim): ops that rank or select along
# one dim, each other position on its own (MoE routers' top-k over the experts per token)
_RANKS = {"aten.topk.default": (2, -1), "aten.sort.default": (1, -1),
          "aten.sort.stable": (2, -1), "aten.argsort.default": (1, -1),
          "aten.argsort.stable": (2, -1), "aten.kthvalue.default": (2, -1),
          "aten.mode.default": (1, -1), "aten.median.dim": (1, None)}
_NORMS = {"aten.layer_norm.default", "aten.native_layer_norm.default", "aten.rms_norm.default"}
_SKIPPED = {"aten._assert_tensor_metadata.default", "aten.sym_size.int",
            "aten._assert_scalar.default", "aten.sym_constrain_range_for_size.default"}


def _name(target: Any) -> str:
    return str(target).removeprefix("torch.ops.")


def _expr(dim: Any) -> sympy.Expr:
    return dim.node.expr if isinstance(dim, torch.SymInt) else sympy.Integer(int(dim))


def _size(arg: Any) -> sympy.Expr:
    """A size argument of an FX node (an int, a SymInt, or a node computing one) as sympy."""
    return _expr(arg.meta["val"] if isinstance(arg, torch.fx.Node) else arg)


def _symbols_of(value: Any) -> set[sympy.Symbol]:
    if not isinstance(value, torch.Tensor):
        return set()
    out: set[sympy.Symbol] = set()
    for dim in value.shape:
        out |= {s for s in _expr(dim).free_symbols if isinstance(s, sympy.Symbol)}
    return out


def _int(arg: object) -> int:
    """An int argument of an FX node (a dim, a position)."""
    assert isinstance(arg, int)
    return arg


class _Checker:
    """Walks the graph once, giving each tensor node a factor structure, and each node whose
    values are indices below a bound that bound (`bounded`)."""

    def __init__(self, ep: torch.export.ExportedProgram, graph: torch.fx.Graph, source: str,
                 locate: Callable[[torch.fx.Node], str],
                 upper: Mapping[sympy.Basic | complex, int]):
        self.ep = ep
        self.graph = graph  # ep's graph, its routing rewritten (`routed`)
        self.source = source
        self.locate = locate
        self.upper = upper
        self.structure: dict[torch.fx.Node, Structure] = {}
        # node -> B: at every size, its values at real positions lie in [0, B)
        self.bounded: dict[torch.fx.Node, sympy.Expr] = {}
        # nodes computed from the sizes, parameters and constants alone (no input's values)
        self.independent: set[torch.fx.Node] = set()
        self.values: dict[torch.fx.Node, Any] = {}  # independent nodes at the upper bounds
        # node -> {dim: v}: every element at a padded position of `dim` is v (the host pads
        # the inputs with zeros), and node -> dim: every element is its position along dim
        self.pads: dict[torch.fx.Node, dict[int, Any]] = {}
        self.iota: dict[torch.fx.Node, int] = {}
        # attentions and softmaxes whose padded keys the host's key mask hides
        # (`key_mask.py`): node -> (the symbol, the dim of the operand it sizes, the static
        # positions after its padding: a TAIL's)
        self.keyed: dict[torch.fx.Node, tuple[sympy.Symbol, int, int]] = {}

    def refuse(self, node: torch.fx.Node, why: str) -> CompileError:
        line = self.locate(node)
        return CompileError(
            f"{self.source}: {line + ': ' if line else ''}node {node.name} "
            f"({_name(node.target)}): {why}. A symbolic size "
            "runs as one program compiled at its upper bound with the padding cropped off, "
            "which this op would read; export this dim with a static size (or keep the op "
            "off the symbolic dim)")

    def of(self, node: torch.fx.Node) -> Structure:
        return self.structure[node]

    def leaf(self, value: Any) -> Structure:
        """Structure of a value no view produced: each dim its own factor."""
        out = []
        for dim in value.shape:
            e = _expr(dim)
            if e.is_Integer:
                out.append((int(e),))
            elif e.is_Symbol:
                out.append((e,))
            else:
                return ()  # a merged dim of unknown order: resolved by the caller
        return tuple(out)

    def run(self, user_inputs: set[str]) -> None:
        for node in self.graph.nodes:
            val = node.meta.get("val")
            if node.op == "placeholder":
                if node.name not in user_inputs:
                    self.independent.add(node)
                elif isinstance(val, torch.Tensor):
                    self.pads[node] = {d: 0 for d, n in enumerate(val.shape)
                                       if not _expr(n).is_Integer}
                if isinstance(val, torch.Tensor):
                    self.structure[node] = self.leaf(val)
                continue
            if node.op != "call_function":
                continue
            name = _name(node.target)
            if name == "aten.sym_size.int" or all(n in self.independent
                                                  for n in node.all_input_nodes):
                self.independent.add(node)
            if not isinstance(val, (torch.Tensor, tuple, list)):
                continue
            if name in _SKIPPED:
                continue
            inputs = [n for n in node.all_input_nodes if n in self.structure]
            touched = any(_symbols_of(n.meta.get("val")) for n in inputs) or any(
                _symbols_of(v) for v in (val if isinstance(val, (tuple, list)) else [val]))
            self.structure_of(node, name, touched)
            bound = self.bound_of(node, name)
            if bound is not None:
                self.bounded[node] = bound
            if isinstance(val, torch.Tensor):
                self.padding_facts(node, name, val)

    def structure_of(self, node: torch.fx.Node, name: str, touched: bool) -> None:
        val = node.meta["val"]
        if node.target is operator.getitem:
            if node not in self.structure and isinstance(val, torch.Tensor):
                # one result of a multi-result op: positions follow that op's operands
                self.structure[node] = self.positional(node, val, node.args[0].all_input_nodes)  # type: ignore[union-attr]
            return
        if not touched:
            if isinstance(val, torch.Tensor):
                self.structure[node] = self.leaf(val) or tuple((d,) for d in val.shape)
            elif isinstance(val, (tuple, list)):
                self.structure[node] = ()
            return
        if name in _VIEWS:
            self.structure[node] = self.view(node, self.of(node.args[0]), val)  # type: ignore[arg-type]
        elif name == "aten.permute.default":
            src = self.of(node.args[0])  # type: ignore[arg-type]
            perm = node.args[1]
            assert isinstance(perm, list | tuple)
            self.structure[node] = tuple(src[_int(p)] for p in perm)
        elif name in {"aten.transpose.int", "aten.t.default"}:
            src = list(self.of(node.args[0]))  # type: ignore[arg-type]
            a, b = (_int(node.args[1]), _int(node.args[2])) if len(node.args) > 2 else (0, 1)
            a, b = a % len(src), b % len(src)
            src[a], src[b] = src[b], src[a]
            self.structure[node] = tuple(src)
        elif name in _REDUCTIONS or name in _NORMS:
            self.reduction(node, name)
        elif name in _SCANS:
            self.scan(node)
        elif name in _RANKS:
            self.rank(node, name)
        elif name == "aten.repeat.default":
            self.repeat(node)
        elif name in {"aten.slice_scatter.default", "aten.select_scatter.default"}:
            self.scatter_along(node)
        elif name == "aten.gather.default":
            self.gather(node)
        elif name == "aten.index.Tensor":
            self.index(node)
        elif name in {"aten.mm.default", "aten.bmm.default", "aten.addmm.default",
                      "aten.linear.default", "aten.matmul.default"}:
            self.contraction(node, name)
        elif name == "aten.scaled_dot_product_attention.default":
            self.attention(node)
        elif name == "aten.convolution.default":
            self.convolution(node)
        elif name == "aten.slice.Tensor":
            self.slice(node)
        elif name in {"aten.select.int", "aten.cat.default", "aten.split.Tensor",
                      "aten.split_with_sizes.default", "aten.narrow.default",
                      "aten.index_select.default", "aten.flip.default", "aten.roll.default"}:
            self.along(node, name)
        elif name in _SAME_POSITION or torch.Tag.pointwise in getattr(node.target, "tags", ()):
            self.structure[node] = self.positional(node, val, node.all_input_nodes)
        else:
            raise self.refuse(node, "it has no rule for a symbolic dim")

    # ---- rules -------------------------------------------------------------------------------

    def positional(self, node: torch.fx.Node, val: Any, sources: list[Any]) -> Structure:
        """Each result dim takes the structure of an operand dim of the same size, aligned
        from the right (broadcasting)."""
        if not isinstance(val, torch.Tensor):
            return ()
        return self.align(node, list(val.shape), sources)

    def align(self, node: torch.fx.Node, shape: list[Any], sources: list[Any]) -> Structure:
        """The structure of dims `shape`, each an operand dim of the same size aligned from
        the right (see `positional`)."""
        out = []
        rank = len(shape)
        for i, dim in enumerate(shape):
            e = _expr(dim)
            found: tuple[Factor, ...] | None = (int(e),) if e.is_Integer else None
            for src in sources:
                s_val = src.meta.get("val") if isinstance(src, torch.fx.Node) else None
                if found is not None or not isinstance(s_val, torch.Tensor) \
                        or src not in self.structure:
                    continue
                j = s_val.dim() - rank + i
                structure = self.structure[src]
                if 0 <= j < len(structure) and _expr(s_val.shape[j]) == e:
                    found = structure[j]
            if found is None and isinstance(e, sympy.Symbol):
                found = (e,)
            if found is None:
                raise self.refuse(node, f"its dim {i} ({e}) merges a symbolic size in an order "
                                        "spyrec cannot follow")
            out.append(found)
        return tuple(out)

    def view(self, node: torch.fx.Node, src: Structure, val: Any) -> Structure:
        """Regroup the operand's factors, outer first, into the result's dims. A static
        factor may be split or merged freely; a symbol must stay one whole factor."""
        factors: list[Factor] = [f for dim in src for f in dim if f != 1]
        out: list[tuple[Factor, ...]] = []
        splits = self.refuse(node, f"the view to {list(val.shape)} splits or reorders a "
                                   "symbolic dim")
        for dim in val.shape:
            rest: sympy.Expr = _expr(dim)
            group: list[Factor] = []
            while rest != 1:
                if not factors:
                    raise splits
                f = factors.pop(0)
                if not isinstance(f, int):
                    if f not in rest.free_symbols:
                        raise splits
                    group.append(f)
                    rest = rest / f
                    continue
                coeff = int(rest.as_coeff_Mul()[0])
                if coeff % f == 0:
                    group.append(f)
                    rest = rest / f
                elif rest.is_Integer and f % coeff == 0:
                    group.append(coeff)  # the rest of this static factor opens the next dim
                    factors.insert(0, f // coeff)
                    rest = sympy.Integer(1)
                else:
                    raise splits
            out.append(tuple(group) or (1,))
        if factors:
            raise splits
        return tuple(out)

    def _symbolic(self, structure: tuple[Factor, ...]) -> bool:
        return any(not isinstance(f, int) for f in structure)

    def reduction(self, node: torch.fx.Node, name: str) -> None:
        x = node.args[0]
        src = self.of(x)  # type: ignore[arg-type]
        rank = len(src)
        if name in _NORMS:
            shape = node.args[1]
            dims = list(range(rank - len(shape), rank))  # type: ignore[arg-type]
        else:
            at = 2 if name == "aten.linalg_vector_norm.default" else 1  # after its `ord`
            arg = node.args[at] if len(node.args) > at else node.kwargs.get(_REDUCTIONS[name])
            if arg is None:
                dims = list(range(rank))
            else:
                dims = [_int(d) % rank
                        for d in (arg if isinstance(arg, (list, tuple)) else [arg])]
        zeros = {d for d, v in self.pads.get(x, {}).items() if v == 0}  # type: ignore[arg-type]
        for d in dims:
            if not self._symbolic(src[d]) or (name in _SUMS and d in zeros):
                continue
            if name in _MASKED and len(dims) == 1:
                self.mask_keys(node, src[d], d)
                at_padding = _MASKED[name]  # exp(-inf): a padded position's weight is 0
                if at_padding is not None:
                    self.pads[node] = {d: at_padding}
            else:
                raise self.refuse(node, f"it reduces over dim {d}, which holds a symbolic size "
                                        "(only a softmax, log_softmax, logsumexp, amax or max "
                                        "over it, whose padding the host masks to -inf, or a "
                                        "sum of an operand provably 0 there are safe)")
        val = node.meta["val"]
        vals = val if isinstance(val, (tuple, list)) else [val]
        self.structure[node] = self.positional(node, vals[0], [x])

    def contraction(self, node: torch.fx.Node, name: str) -> None:
        a, b = ((node.args[1], node.args[2]) if name == "aten.addmm.default"
                else (node.args[0], node.args[1]))
        k = self.of(a)[-1]  # type: ignore[arg-type]
        # the padded K positions add nothing when the lhs is exactly 0 there (a masked
        # softmax's weights): 0 times the rhs's padded rows, as in causal attention
        zero = self.pads.get(a, {}).get(len(self.of(a)) - 1)  # type: ignore[arg-type]
        zero_padded = zero is not None and not isinstance(zero, bool) and zero == 0
        if self._symbolic(k) and not zero_padded:
            raise self.refuse(node, "its contraction (K) dim holds a symbolic size")
        b_struct = self.of(b) if b in self.structure else ()
        if name in {"aten.bmm.default", "aten.matmul.default"} and len(b_struct) >= 2 and \
                self._symbolic(b_struct[-2]) and not (zero_padded and b_struct[-2] == k):
            raise self.refuse(node, "its contraction (K) dim holds a symbolic size")
        self.structure[node] = self.positional(node, node.meta["val"], [a, b])

    def attention(self, node: torch.fx.Node) -> None:
        q, k = node.args[0], node.args[1]
        q_rows, k_rows = self.of(q)[-2], self.of(k)[-2]  # type: ignore[arg-type]
        if self._symbolic(k_rows):
            causal = bool(node.kwargs.get("is_causal", node.args[5] if len(node.args) > 5
                                          else False))
            mask = node.kwargs.get("attn_mask", node.args[3] if len(node.args) > 3 else None)
            if mask is not None:
                assert isinstance(mask, torch.fx.Node)
                self.key_mask(node, mask, q_rows, k_rows)
            elif causal and k_rows != q_rows:
                raise self.refuse(node, "its key length is symbolic and it is causal attention "
                                        f"over a different query length {_BIDIRECTIONAL}")
            elif not causal:
                self.mask_keys(node, k_rows, len(self.of(k)) - 2, q_rows)  # type: ignore[arg-type]
        self.structure[node] = self.positional(node, node.meta["val"], [q])

    def key_mask(self, node: torch.fx.Node, mask: torch.fx.Node, q_rows: tuple[Factor, ...],
                 k_rows: tuple[Factor, ...]) -> None:
        """Attention over a symbolic key length with a mask: safe when the mask is computed
        from the sizes alone (its real block is the one the program at the actual size
        computes, by the structure rules) and, at the upper bound, masks every key column
        a padded position can hold for every query row that is real with it; one that does
        not has the host's key mask added (`mask_keys`). A mask that depends on the inputs
        must hide the padded keys itself (`pads`)."""
        m_rows, m_cols = self.of(mask)[-2:] if len(self.of(mask)) >= 2 else ((1,), (1,))
        if len(k_rows) != 1 or not isinstance(k_rows[0], sympy.Symbol) or m_cols != k_rows \
                or m_rows not in (q_rows, (1,)):
            raise self.refuse(node, "its key length is symbolic and its mask's last two dims "
                                    "are not the queries' and the keys' positions")
        dtype = mask.meta["val"].dtype
        at_padding = self.pads.get(mask, {}).get(mask.meta["val"].dim() - 1)
        if (dtype == torch.bool and at_padding is False) or \
                (dtype.is_floating_point and at_padding == float("-inf")):
            return  # every padded key column is masked for every query row
        if mask not in self.independent:
            raise self.refuse(node, "its key length is symbolic and its mask depends on the "
                                    "inputs' values without provably hiding the padded keys "
                                    f"{_BIDIRECTIONAL}")
        value = self.evaluate(mask)
        allowed = value if value.dtype == torch.bool else value != float("-inf")
        keys = allowed.shape[-1]
        rows = keys if q_rows == k_rows else allowed.shape[-2]
        allowed = allowed.expand(*allowed.shape[:-2], rows, keys)
        padded = torch.arange(keys) >= self.lower(k_rows[0])  # a column padded at some size
        if q_rows == k_rows:  # row i is real with column j padded when i < j
            seen = torch.arange(rows)[:, None] < torch.arange(keys)[None, :]
        elif not self._symbolic(q_rows):
            seen = torch.ones(rows, keys, dtype=torch.bool)
        else:
            raise self.refuse(node, "its query and key lengths are different symbolic sizes")
        if bool((allowed & seen & padded).any()):
            self.mask_keys(node, k_rows, len(self.of(node.args[1])) - 2, q_rows,  # type: ignore[arg-type]
                           allowed)

    def mask_keys(self, node: torch.fx.Node, keys: tuple[Factor, ...], d: int,
                  rows: tuple[Factor, ...] = (), allowed: torch.Tensor | None = None) -> None:
        """Hide the padded positions of dim `d` (factors `keys`) of an attention's keys or a
        softmax's operand behind the host's key mask (`spyrec.frontend.key_mask`): per call,
        ones over the symbol's value, zero-padded to the bound like every input, which the
        program turns into -inf (False) at every padded position for every row. A padded
        key's weight is then exactly 0, and the real block is the softmax eager computes
        at that size. It needs the dim to be the symbol itself (the mask is a prefix of
        its length) and, under a mask of the sizes alone (`allowed`, at the bound), every
        row to see a key below the lower bound: no row, real or padded, is left all -inf
        (NaN in softmax, zeros in SDPA, where eager has weights)."""
        extent = keys[0] if len(keys) == 1 else None
        tail = 0
        after = _tail(extent) if extent is not None else None
        if after is not None:  # the mask keeps the c positions after the padding
            if node.target is torch.ops.aten.scaled_dot_product_attention.default:
                raise self.refuse(node, f"its key dim {d} holds static positions after the "
                                        "padding, which the host's mask of the padded keys "
                                        "does not cover in attention")
            extent, tail = after
        if not isinstance(extent, sympy.Symbol):
            raise self.refuse(node, f"its key dim {d} holds the symbolic extent "
                                    f"{' * '.join(map(str, keys))}, not one symbol's length, "
                                    "so the host's mask of the padded keys cannot cover it "
                                    f"{_BIDIRECTIONAL}")
        if self._symbolic(rows) and rows != keys:
            raise self.refuse(node, "its query and key lengths are different symbolic sizes")
        if allowed is not None and not bool(allowed[..., :self.lower(extent)].any(-1).all()):
            raise self.refuse(node, "its mask leaves a query row without a key among the "
                                    f"first {self.lower(extent)} (the lower bound), which the "
                                    "padded keys, masked, cannot fill")
        self.keyed[node] = (extent, d, tail)

    def slice(self, node: torch.fx.Node) -> None:
        """A slice along a symbolic dim keeps positions [start, end): safe when each position
        it keeps is real at every size (the real positions of an extent are a prefix)."""
        x = node.args[0]
        src = self.of(x)  # type: ignore[arg-type]
        dim = _int(node.args[1] if len(node.args) > 1 else 0) % len(src)
        start = node.args[2] if len(node.args) > 2 else 0
        step = node.args[4] if len(node.args) > 4 else 1
        out_dim = _expr(node.meta["val"].shape[dim])
        in_sym = self._symbolic(src[dim])
        if in_sym and len(src[dim]) > 1:
            block = self.block(src[dim], start, node.args[3] if len(node.args) > 3 else None,
                               step)
            if block is None:
                raise self.refuse(node, f"it slices dim {dim}, which merges a symbolic size, "
                                        "other than as one whole block of its outer factor")
            self.structure[node] = (*src[:dim], block, *src[dim + 1:])
            return
        after = _tail(src[dim][0])
        if in_sym and after is not None:
            prefix = after[0]
            if step != 1 or (start or 0) != 0 or sympy.expand(out_dim - prefix) != 0:
                raise self.refuse(node, f"it slices symbolic dim {dim}, whose static positions "
                                        "sit after the padding, other than to the positions "
                                        "before them")
            self.structure[node] = (*src[:dim], (prefix,), *src[dim + 1:])
            return
        if in_sym:  # (a static dim sliced to a symbolic length reads static data only)
            first = start or 0
            if step != 1 or not isinstance(first, int) or first < 0:
                raise self.refuse(node, f"it slices symbolic dim {dim} other than as a prefix")
            extent = src[dim][0]
            assert isinstance(extent, sympy.Expr)
            if out_dim.is_Integer:
                if first + int(out_dim) > self.lower(extent):
                    raise self.refuse(node, f"it keeps rows up to {first + int(out_dim)} of "
                                            f"symbolic dim {dim}, more than its lower bound "
                                            f"{self.lower(extent)}")
            else:
                spare = sympy.expand(extent - first - out_dim)
                if not spare.is_Integer or int(spare) < 0:
                    raise self.refuse(node, f"it keeps positions [{first}, {first + out_dim}) of "
                                            f"symbolic dim {dim}, whose real positions are "
                                            f"[0, {extent})")
        structure = list(src)
        structure[dim] = (int(out_dim),) if out_dim.is_Integer else (
            (out_dim,) if out_dim.free_symbols else src[dim])
        self.structure[node] = tuple(structure)

    def block(self, dim: tuple[Factor, ...], start: Any, end: Any, step: Any
              ) -> tuple[Factor, ...] | None:
        """The factors of blocks [e, e + m) of a merged dim `dim` = (*outer, *rest), static
        outer factors, when [start, end) is [e * |rest|, (e + m) * |rest|) (a dense MoE
        dispatch's rows of expert e): its positions, padding included, are the positions of
        m blocks of `rest`, (m, *rest) (`rest` itself for one)."""
        if step != 1:
            return None
        for k in range(1, len(dim)):
            outer, rest = dim[:k], dim[k:]
            if not all(isinstance(f, int) for f in outer):
                return None
            size = sympy.expand(math.prod(rest))
            total = math.prod(outer)
            first = _size(start or 0)
            stop = total * size if end is None or (isinstance(end, int) and end >= 2**62) \
                else _size(end)  # x[a:]
            e, m = sympy.simplify(first / size), sympy.simplify((stop - first) / size)
            if e.is_Integer and m.is_Integer and int(e) >= 0 and int(m) >= 1 \
                    and int(e) + int(m) <= total:
                return rest if int(m) == 1 else (int(m), *rest)
        return None

    def along(self, node: torch.fx.Node, name: str) -> None:
        x = node.args[0]
        sources = list(x) if isinstance(x, (list, tuple)) else [x]
        dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)
        if name in {"aten.split.Tensor", "aten.split_with_sizes.default"}:
            dim = node.args[2] if len(node.args) > 2 else node.kwargs.get("dim", 0)
        if name in {"aten.flip.default", "aten.roll.default"}:
            raise self.refuse(node, "it reorders positions")
        structures = []
        for s in sources:
            assert isinstance(s, torch.fx.Node)
            structures.append(self.of(s))
        rank = len(structures[0])
        d = _int(dim) % rank
        val = node.meta["val"]
        if name == "aten.cat.default":
            self.cat(node, structures, d)
            return
        if any(self._symbolic(structure[d]) for structure in structures):
            raise self.refuse(node, f"it indexes symbolic dim {dim}")
        if not isinstance(val, (list, tuple)):
            self.structure[node] = self.positional(node, val, sources)

    def cat(self, node: torch.fx.Node, structures: list[Structure], d: int) -> None:
        """A cat keeps each piece's positions when its pieces agree on every other dim; along
        a symbolic dim, static pieces and then one piece of an extent `s + c` make the
        extent `s + c` plus the static sizes (the padding stays at the end)."""
        others = {tuple(f for i, f in enumerate(st) if i != d) for st in structures}
        if len(others) > 1 and any(self._symbolic(f) for o in others for f in o):
            raise self.refuse(node, "its pieces merge a symbolic size differently")
        *front, last = structures
        if front and all(st == last for st in front) and self._symbolic(last[d]):
            # equal pieces: n blocks of one symbolic structure, each padded at its own end,
            # as a view [n, ...] -> [n * ...] merges them
            out = list(last)
            out[d] = (len(structures), *last[d])
            if sympy.expand(math.prod(out[d]) - _expr(node.meta["val"].shape[d])) != 0:
                raise self.refuse(node, f"its dim {d} is not the sum of its pieces' sizes")
            self.structure[node] = tuple(out)
            return
        first, *rest = structures
        if rest and len(first[d]) == 1 and self._symbolic(first[d]) \
                and not isinstance(first[d][0], TAIL) \
                and not any(self._symbolic(st[d]) for st in rest):
            # an extent, then static pieces: they sit after its padding (a TAIL)
            tail = sum(math.prod(st[d]) for st in rest)
            if sympy.expand(first[d][0] + tail - _expr(node.meta["val"].shape[d])) != 0:
                raise self.refuse(node, f"its dim {d} is not the sum of its pieces' sizes")
            out = list(first)
            out[d] = (TAIL(first[d][0], tail),)
            self.structure[node] = tuple(out)
            return
        if any(self._symbolic(st[d]) for st in front):
            raise self.refuse(node, f"it concatenates along symbolic dim {d} with a piece "
                                    "after a symbolic one (that piece would sit after the "
                                    "padding)")
        out = list(last)
        if self._symbolic(last[d]):
            if len(last[d]) > 1:
                raise self.refuse(node, f"it concatenates along dim {d}, which merges a "
                                        "symbolic size")
            extent = last[d][0] + sum(math.prod(st[d]) for st in front)
            if sympy.expand(extent - _expr(node.meta["val"].shape[d])) != 0:
                raise self.refuse(node, f"its dim {d} is not the sum of its pieces' sizes")
            out[d] = (extent,)
        else:
            out[d] = (_int(node.meta["val"].shape[d]),)
        self.structure[node] = tuple(out)

    def scan(self, node: torch.fx.Node) -> None:
        """cumsum / cumprod: position p reads positions <= p, real when p is, unless the dim
        merges a symbolic size (its padding then sits between real positions)."""
        x = node.args[0]
        src = self.of(x)  # type: ignore[arg-type]
        d = _int(node.args[1]) % len(src)
        if self._symbolic(src[d]) and len(src[d]) > 1:
            raise self.refuse(node, f"it scans dim {d}, which merges a symbolic size")
        self.structure[node] = self.positional(node, node.meta["val"], [x])

    def rank(self, node: torch.fx.Node, name: str) -> None:
        """topk / sort / argsort / kthvalue / mode / median along dim d: each result reads
        only the positions of d at its own position along every other dim, so it is safe
        when d is static (the padded positions of the others land in padded results); along
        a symbolic d the padding would be ranked with the real positions."""
        x = node.args[0]
        src = self.of(x)  # type: ignore[arg-type]
        at, default = _RANKS[name]
        arg = node.args[at] if len(node.args) > at else node.kwargs.get("dim", default)
        d = _int(arg) % len(src) if src else 0
        if src and self._symbolic(src[d]):
            raise self.refuse(node, f"it ranks along dim {d}, which holds a symbolic size "
                                    "(the padding would be ranked with the real positions)")
        val = node.meta["val"]
        vals = val if isinstance(val, (tuple, list)) else [val]
        self.structure[node] = self.positional(node, vals[0], [x])

    def convolution(self, node: torch.fx.Node) -> None:
        """A 1-D convolution along a symbolic length with stride 1, dilation 1 and padding of
        at least kernel - 1 (a causal convolution: output t reads inputs up to t), every use
        of which is a slice back to the input's length (`conv1d(x, padding=k - 1)[..., :L]`,
        Mamba's and LFM's short convolutions): each position kept reads real positions only.
        Its output is the extent, its padding, then the positions past it (TAIL), which only
        that slice may read. Batch positions are each their own; any other convolution over
        a symbolic dim (a window reaching forward, a symbolic channel dim) is refused."""
        args: list[Any] = list(node.args)
        src = self.of(args[0])
        stride, padding, dilation, transposed = args[3:7]
        taps = int(args[1].meta["val"].shape[-1])
        if len(src) != 3 or transposed or list(stride) != [1] or list(dilation) != [1] \
                or self._symbolic(src[1]) or len(src[2]) != 1:
            raise self.refuse(node, "it convolves over a symbolic dim other than as a 1-D "
                                    "causal convolution (stride 1, dilation 1, padding of at "
                                    "least kernel - 1, static channels)")
        (length,), pad = src[2], _int(padding[0])
        if self._symbolic(src[2]):
            after = 2 * pad - (taps - 1)
            if pad < taps - 1:
                raise self.refuse(node, f"its window reaches {taps - 1 - pad} positions "
                                        "forward along the symbolic length (padding "
                                        f"{pad} for a kernel of {taps}), into the padding")
            for use in node.users if after else ():  # a kernel of 1 is pointwise
                sliced: list[Any] = [*use.args, None, None, None, None][:5]
                if use.target is not torch.ops.aten.slice.Tensor or _int(sliced[1]) % 3 != 2 \
                        or sliced[2] not in (0, None) or sliced[4] not in (1, None) \
                        or sliced[3] is None or sympy.expand(
                            _expr(use.meta["val"].shape[2]) - length) != 0:
                    raise self.refuse(node, "it convolves over a symbolic length, and "
                                            f"{use.name} reads it other than as the slice back "
                                            "to that length, which a causal convolution's "
                                            "positions past it would feed")
            out = (TAIL(length, after),) if after else (length,)
        else:
            out = (int(node.meta["val"].shape[2]),)
        self.structure[node] = (src[0], (int(node.meta["val"].shape[1]),), out)

    def repeat(self, node: torch.fx.Node) -> None:
        """x.repeat(r...): a dim repeated once keeps its factors, a static dim repeated r
        times is static, a symbolic one is r blocks of its factors, each padded at its own
        end (as a cat of equal pieces); new leading dims are static."""
        src = self.of(node.args[0])  # type: ignore[arg-type]
        reps = [_int(r) for r in node.args[1]]  # type: ignore[union-attr]
        lead = len(reps) - len(src)
        out: list[tuple[Factor, ...]] = [(r,) for r in reps[:lead]]
        for r, dim in zip(reps[lead:], src, strict=True):
            out.append(dim if r == 1 else (r, *dim) if self._symbolic(dim)
                       else (r * math.prod(dim),))
        self.structure[node] = tuple(out)

    def scatter_along(self, node: torch.fx.Node) -> None:
        """slice_scatter / select_scatter(base, src, dim, ...): writes src into positions of
        base along a static dim (`key[..., :64].copy_(k)`), each other position from the
        same position of src (aligned from the right): the positions of base. Along a
        symbolic dim the written positions would land among the padding."""
        base = node.args[0]
        src = self.of(base)  # type: ignore[arg-type]
        d = _int(node.args[2] if len(node.args) > 2 else node.kwargs.get("dim", 0)) % len(src)
        if self._symbolic(src[d]):
            raise self.refuse(node, f"it writes along dim {d}, which holds a symbolic size")
        self.structure[node] = self.positional(node, node.meta["val"], node.all_input_nodes)

    def gather(self, node: torch.fx.Node) -> None:
        """gather(x, dim, index): the result has the index's positions; it reads x along
        `dim` at the index's values (checked by `check_index` when that dim is symbolic)
        and along every other dim at the index's own position."""
        x, dim, index = node.args[0], node.args[1], node.args[2]
        assert isinstance(x, torch.fx.Node) and isinstance(index, torch.fx.Node)
        xs, ids = self.of(x), self.of(index)
        d = _int(dim) % len(xs)
        for i, f in enumerate(xs):
            if i == d and self._symbolic(f):
                self.check_index(node, f, index, d)
            elif i != d and self._symbolic(f) and (i >= len(ids) or ids[i] != f):
                raise self.refuse(node, f"it reads symbolic dim {i} at positions its index "
                                        "does not share")
        self.structure[node] = self.positional(node, node.meta["val"], [index])

    def index(self, node: torch.fx.Node) -> None:
        """x[i0, i1, ...] (aten.index.Tensor with an integer index for each leading dim):
        the leading result dims are the indices' broadcast positions, the rest x's own."""
        x, indices = node.args[0], node.args[1]
        assert isinstance(x, torch.fx.Node) and isinstance(indices, (list, tuple))
        xs = self.of(x)
        if any(not isinstance(i, torch.fx.Node) or i.meta["val"].dtype == torch.bool
               for i in indices):
            raise self.refuse(node, "it indexes with a boolean mask or a slice among its "
                                    "indices")
        for d, idx in enumerate(indices):
            if self._symbolic(xs[d]):
                self.check_index(node, xs[d], idx, d)  # type: ignore[arg-type]
        val = node.meta["val"]
        lead = val.dim() - (len(xs) - len(indices))
        self.structure[node] = (*self.align(node, list(val.shape[:lead]), list(indices)),
                                *xs[len(indices):])

    def check_index(self, node: torch.fx.Node, dim: tuple[Factor, ...], index: torch.fx.Node,
                    d: int) -> None:
        """Reading symbolic dim `d` (factors `dim`) at `index`'s values is safe when those
        values, at every real position, are below the dim's real extent at every size."""
        bound = self.bounded.get(index)
        if len(dim) == 1 and bound is not None and not isinstance(dim[0], TAIL):
            extent = dim[0]
            assert isinstance(extent, sympy.Expr)
            spare = sympy.expand(extent - bound)
            if (spare.is_Integer and int(spare) >= 0) or \
                    (bound.is_Integer and int(bound) <= self.lower(extent)):
                return
        raise self.refuse(node, f"it indexes symbolic dim {d} with indices spyrec cannot prove "
                                "below its size (an arange of the size, or a view of one, is)")

    def bound_of(self, node: torch.fx.Node, name: str) -> sympy.Expr | None:
        """B when the values of `node` at real positions lie in [0, B) at every size: an
        arange(0, B) and what keeps only its values."""
        args = node.args
        if name in _ARANGES:
            start, end, step = ((0, args[0], 1) if name == "aten.arange.default" else
                                (args[0], args[1], args[2] if len(args) > 2 else 1))
            if start == 0 and step == 1:
                val = end.meta.get("val") if isinstance(end, torch.fx.Node) else end
                if isinstance(val, (int, torch.SymInt)):
                    return _expr(val)
            return None
        adds_zero = name in {"aten.add.Tensor", "aten.sub.Tensor"} and len(args) > 1 \
            and args[1] == 0
        if name in _KEEPS_VALUES or adds_zero:
            return self.bounded.get(args[0])  # type: ignore[arg-type]
        return None

    def padding_facts(self, node: torch.fx.Node, name: str, val: torch.Tensor) -> None:
        """What `node` holds at padded positions (`pads`) and whether it is an arange along a
        dim (`iota`): an input is 0 there (a softmax the key mask hides, `reduction`, is 0
        along its dim); casts convert that value; unsqueeze, expand, dropout and copies move
        dims, and a view that keeps the last dim whole keeps it there; an index at an
        arange along an input's dim reads that dim's padded positions at its own; `a & b`
        is False wherever either operand is."""
        args = node.args
        x = args[0] if args and isinstance(args[0], torch.fx.Node) \
            and isinstance(args[0].meta.get("val"), torch.Tensor) else None
        shift = val.dim() - x.meta["val"].dim() if x is not None else 0
        if name in _ARANGES and self.bounded.get(node) is not None:
            self.iota[node] = 0
        elif x is None:
            return
        elif name in {"aten.add.Tensor", "aten.sub.Tensor"} and args[1] == 0 and x in self.iota:
            self.iota[node] = self.iota[x]
        elif name in _VIEWS - {"aten.unsqueeze.default"} and x in self.pads and val.dim() \
                and x.meta["val"].dim() and self.of(node)[-1] == self.of(x)[-1]:  # kept whole
            last = self.pads[x].get(x.meta["val"].dim() - 1)
            self.pads[node] = {} if last is None else {val.dim() - 1: last}
        elif name in {"aten.unsqueeze.default", "aten.expand.default", "aten.clone.default",
                      "aten.alias.default", "aten.contiguous.default", "aten.dropout.default"}:
            at = _int(args[1]) % val.dim() if name == "aten.unsqueeze.default" else 0
            def moved(d: int) -> int:
                return d + shift if d >= at else d
            if x in self.iota:
                self.iota[node] = moved(self.iota[x])
            if x in self.pads:
                self.pads[node] = {moved(d): v for d, v in self.pads[x].items()}
        elif name == "aten.slice.Tensor" and x in self.pads and \
                (args[4] if len(args) > 4 else 1) == 1:  # the kept padded positions' values
            self.pads[node] = dict(self.pads[x])
        elif name in {"aten._to_copy.default", "aten.to.dtype"} and x in self.pads:
            self.pads[node] = {d: torch.tensor(v).to(val.dtype).item()
                               for d, v in self.pads[x].items()}
        elif name == "aten.index.Tensor" and x in self.pads:
            out = {}
            for k, idx in enumerate(args[1]):  # type: ignore[arg-type]
                if isinstance(idx, torch.fx.Node) and idx in self.iota and k in self.pads[x]:
                    out[val.dim() - len(x.meta["val"].shape) + len(args[1])  # type: ignore[arg-type]
                        - idx.meta["val"].dim() + self.iota[idx]] = self.pads[x][k]
            self.pads[node] = out
        elif name in {"aten.bitwise_and.Tensor", "aten.logical_and.default"}:
            out = {}
            for operand in args[:2]:
                if not isinstance(operand, torch.fx.Node):
                    continue
                lead = val.dim() - operand.meta["val"].dim()
                out.update({d + lead: False for d, v in self.pads.get(operand, {}).items()
                            if v is False and _expr(operand.meta["val"].shape[d]) != 1})
            self.pads[node] = out

    def evaluate(self, node: torch.fx.Node) -> Any:
        """An independent node's value at the upper bounds, computed with torch."""
        if node in self.values:
            return self.values[node]
        val = node.meta.get("val")
        if isinstance(val, (int, torch.SymInt)):  # a size (sym_size, sums of sizes)
            value: Any = int(_expr(val).subs(self.upper))
        elif node.op == "placeholder":
            value = _constant(self.ep, node.name)
        else:
            args, kwargs = map_arg((node.args, node.kwargs), self.evaluate)
            value = node.target(*args, **kwargs)  # type: ignore[operator]
        self.values[node] = value
        return value

    def lower(self, extent: sympy.Expr) -> int:
        """The least value of an extent (a symbol, or a symbol plus a constant); of a TAIL,
        its prefix's (the positions below it are real at every size)."""
        after = _tail(extent)
        if after is not None:
            extent = after[0]
        return int(extent.subs({s: max(int(self.ep.range_constraints[s].lower), MIN_SIZE)
                                for s in extent.free_symbols if isinstance(s, sympy.Symbol)}))


def _constant(ep: torch.export.ExportedProgram, placeholder: str) -> torch.Tensor:
    """The parameter, buffer or lifted constant behind a placeholder of `ep`."""
    sig = ep.graph_signature
    target = {**sig.inputs_to_parameters, **sig.inputs_to_buffers,
              **sig.inputs_to_lifted_tensor_constants}[placeholder]
    value = ep.state_dict[target] if target in ep.state_dict else ep.constants[target]
    assert isinstance(value, torch.Tensor)
    return value


# The smallest size a compiled program runs: torch.export.Dim's default min is 0, but an
# empty tensor has nothing to compute, so a Dim without `min` runs 1..max.
MIN_SIZE = 1


def _bounds(ep: torch.export.ExportedProgram, symbol: sympy.Symbol, where: str,
            source: str) -> tuple[int, int]:
    ranges = ep.range_constraints.get(symbol)
    upper = getattr(ranges, "upper", None)
    if ranges is None or upper is None or not math.isfinite(float(upper)) or int(upper) > 2**20:
        raise CompileError(
            f"{source}: {where} is symbolic without an upper bound; spyrec compiles a symbolic "
            "size at its maximum: give it one, e.g. torch.export.Dim('seq', max=2048)")
    lower = max(int(ranges.lower), MIN_SIZE)
    if lower > int(upper):
        raise CompileError(
            f"{source}: {where} is symbolic with the range [{int(ranges.lower)}, {int(upper)}], "
            f"which holds no size spyrec can run (sizes start at {MIN_SIZE}); export it with a "
            "torch.export.Dim whose max is at least its min, e.g. "
            "torch.export.Dim('seq', min=1, max=2048)")
    return lower, int(upper)


def routed(graph: torch.fx.Graph) -> torch.fx.Graph:
    """A copy of `graph` with its top-k routing and expert dispatch rewritten as the importer
    will (`spyrec.frontend.moe`, exact): the dense dispatch computes each token's row on its
    own, where the grouped one sorts all tokens' expert ids together, so the proof is made
    on the program as it will be compiled. The copy's nodes keep their names; `graph`
    (whose cost is the program's as written) is left as it was."""
    copy = torch.fx.Graph()
    out = copy.graph_copy(graph, {})
    copy.output(out)
    rewrite_routing(copy)
    return copy


def specialize(ep: torch.export.ExportedProgram, source: str,
               locate: Callable[[torch.fx.Node], str] = lambda node: "") -> Specialization | None:
    """The program at the upper bounds of its symbolic sizes, with what the host needs to
    correct a call; None when every size is static. `locate` gives a node's source line."""
    sig = ep.graph_signature
    params = {*sig.inputs_to_parameters, *sig.inputs_to_buffers,
              *sig.inputs_to_lifted_tensor_constants}
    placeholders = [n for n in ep.graph.nodes if n.op == "placeholder"]
    user_inputs = [n for n in placeholders if n.name not in params]
    symbols: dict[sympy.Symbol, SymbolBound] = {}
    inputs: list[dict[int, str]] = []
    for node in user_inputs:
        dims: dict[int, str] = {}
        for d, size in enumerate(getattr(node.meta.get("val"), "shape", ())):
            e = _expr(size)
            if e.is_Integer:
                continue
            where = f"input '{node.name}' dim {d}"
            if not isinstance(e, sympy.Symbol):
                raise CompileError(f"{source}: {where} has the derived size {e}; give each "
                                   "symbolic input dim its own torch.export.Dim")
            if e not in symbols:
                lower, upper = _bounds(ep, e, where, source)
                symbols[e] = SymbolBound(f"{node.name}.dim{d}", lower, upper)
            dims[d] = symbols[e].name
        inputs.append(dims)
    if not symbols:
        return None
    at_upper: Mapping[sympy.Basic | complex, int] = {s: b.upper for s, b in symbols.items()}
    graph = routed(ep.graph)
    checker = _Checker(ep, graph, source, locate, at_upper)
    checker.run({n.name for n in user_inputs})
    output_node = next(n for n in graph.nodes if n.op == "output")
    outputs: list[dict[int, str]] = []
    for value in output_node.args[0]:
        dims = {}
        for d, size in enumerate(getattr(value.meta.get("val"), "shape", ())):
            e = _expr(size)
            if e.is_Integer:
                continue
            if not isinstance(e, sympy.Symbol) or e not in symbols:
                raise CompileError(
                    f"{source}: output '{value.name}' dim {d} has the size {e}; an output's "
                    "symbolic dims must each be one input dim's size (reshape it back)")
            dims[d] = symbols[e].name
        outputs.append(dims)
    examples = []
    for node in user_inputs:
        val = node.meta["val"]
        shape = [int(_expr(d).subs(at_upper)) for d in val.shape]
        examples.append(torch.zeros(shape, dtype=val.dtype))
    module = ep.module()
    for node in module.graph.nodes:  # views of the decomposed graph may follow a permute
        if node.target is torch.ops.aten.view.default:  # whose copy it dropped: same values
            node.target = torch.ops.aten.reshape.default
    module.recompile()
    made = add_key_masks(module, {node.name: (symbols[symbol].name, d, tail)
                                  for node, (symbol, d, tail) in checker.keyed.items()}) \
        if checker.keyed else []
    by_name = {b.name: b for b in symbols.values()}
    for name in made:  # the host's key masks: ones of the symbol's value, padded
        inputs.append({0: name})
        examples.append(torch.ones(by_name[name].upper, dtype=torch.int64))
    try:
        program = torch.export.export(module, tuple(examples))
    except Exception as exc:
        raise CompileError(f"{source}: specialising at the upper bounds "
                           f"({', '.join(f'{b.name}={b.upper}' for b in symbols.values())}) "
                           f"failed: {exc}") from exc
    return Specialization(program, list(symbols.values()), inputs, outputs,
                          ["" for _ in user_inputs] + made)

