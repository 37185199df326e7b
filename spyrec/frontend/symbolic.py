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
  one symbol) it is the row-major merge of. Views regroup factors (`[2, s, 128]` ->
  `[2*s, 128]` is the dim `(2, s)`), and a view must keep each symbol a whole factor, so the
  padded positions of a merged dim stay where the padding put them;
- ops that only combine elements at the same position (pointwise ops, casts, views) are safe;
- reductions (sum, softmax, norms, ...) and contractions (the K of a matmul) over a symbolic
  dim are not: the padding would be summed in;
- attention whose key length is symbolic is safe when it is causal and its query and key
  lengths are the same symbol (a real query row never sees a later, padded key);
- slices along a symbolic dim are safe when they keep a prefix; a select, a cat or a split
  along one is not (x[:, -1] would read the padding);
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

from spyrec.diagnostics import CompileError
from spyrec.dialects.spyre_symbolic import SymbolicSignature

Factor = int | sympy.Symbol
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
    inputs: list[dict[int, str]] = field(default_factory=list)  # per user input: dim -> symbol
    outputs: list[dict[int, str]] = field(default_factory=list)  # per output: dim -> symbol

    def signature(self) -> SymbolicSignature:
        """What the module records (`spyre.symbols`): the symbols' bounds and which input
        and output dims they size, as the host's program correction needs them."""
        return SymbolicSignature({b.name: (b.lower, b.upper) for b in self.symbols},
                                 tuple(dict(d) for d in self.inputs),
                                 tuple(dict(d) for d in self.outputs))


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
    "aten.hardsigmoid.default", "aten.full.default", "aten.zeros.default", "aten.ones.default",
    "aten.full_like.default", "aten.zeros_like.default", "aten.ones_like.default",
    "aten.arange.default", "aten.arange.start", "aten.arange.start_step", "aten.where.self",
}
# op -> the argument holding its reduced dims (None: every dim but the leading ones given)
_REDUCTIONS = {
    "aten.sum.dim_IntList": "dim", "aten.mean.dim": "dim", "aten.amax.default": "dim",
    "aten.amin.default": "dim", "aten.var.correction": "dim", "aten.std.correction": "dim",
    "aten.logsumexp.default": "dim", "aten.linalg_vector_norm.default": "dim",
    "aten.softmax.int": "dim", "aten._softmax.default": "dim", "aten._log_softmax.default": "dim",
    "aten.log_softmax.int": "dim", "aten.max.dim": "dim", "aten.min.dim": "dim",
    "aten.argmax.default": "dim", "aten.argmin.default": "dim", "aten.cumsum.default": "dim",
    "aten.prod.dim_int": "dim", "aten.sum.default": "dim", "aten.mean.default": "dim",
}
_NORMS = {"aten.layer_norm.default", "aten.native_layer_norm.default", "aten.rms_norm.default"}
_SKIPPED = {"aten._assert_tensor_metadata.default", "aten.sym_size.int",
            "aten._assert_scalar.default", "aten.sym_constrain_range_for_size.default"}


def _name(target: Any) -> str:
    return str(target).removeprefix("torch.ops.")


def _expr(dim: Any) -> sympy.Expr:
    return dim.node.expr if isinstance(dim, torch.SymInt) else sympy.Integer(int(dim))


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
    """Walks the graph once, giving each tensor node a factor structure."""

    def __init__(self, ep: torch.export.ExportedProgram, source: str,
                 locate: Callable[[torch.fx.Node], str]):
        self.ep = ep
        self.source = source
        self.locate = locate
        self.structure: dict[torch.fx.Node, Structure] = {}

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

    def run(self) -> None:
        for node in self.ep.graph.nodes:
            val = node.meta.get("val")
            if node.op == "placeholder":
                if isinstance(val, torch.Tensor):
                    self.structure[node] = self.leaf(val)
                continue
            if node.op != "call_function" or not isinstance(val, (torch.Tensor, tuple, list)):
                continue
            name = _name(node.target)
            if name in _SKIPPED:
                continue
            inputs = [n for n in node.all_input_nodes if n in self.structure]
            touched = any(_symbols_of(n.meta.get("val")) for n in inputs) or any(
                _symbols_of(v) for v in (val if isinstance(val, (tuple, list)) else [val]))
            self.structure_of(node, name, touched)

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
        elif name in {"aten.mm.default", "aten.bmm.default", "aten.addmm.default",
                      "aten.linear.default", "aten.matmul.default"}:
            self.contraction(node, name)
        elif name == "aten.scaled_dot_product_attention.default":
            self.attention(node)
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
        out = []
        rank = val.dim()
        for i, dim in enumerate(val.shape):
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
            arg = node.args[1] if len(node.args) > 1 else node.kwargs.get(_REDUCTIONS[name])
            if arg is None:
                dims = list(range(rank))
            else:
                dims = [_int(d) % rank
                        for d in (arg if isinstance(arg, (list, tuple)) else [arg])]
        for d in dims:
            if self._symbolic(src[d]):
                raise self.refuse(node, f"it reduces over dim {d}, which holds a symbolic size")
        val = node.meta["val"]
        vals = val if isinstance(val, (tuple, list)) else [val]
        self.structure[node] = self.positional(node, vals[0], [x])

    def contraction(self, node: torch.fx.Node, name: str) -> None:
        a, b = ((node.args[1], node.args[2]) if name == "aten.addmm.default"
                else (node.args[0], node.args[1]))
        k = self.of(a)[-1]  # type: ignore[arg-type]
        if self._symbolic(k):
            raise self.refuse(node, "its contraction (K) dim holds a symbolic size")
        b_struct = self.of(b) if b in self.structure else ()
        if name in {"aten.bmm.default", "aten.matmul.default"} and len(b_struct) >= 2 and \
                self._symbolic(b_struct[-2]):
            raise self.refuse(node, "its contraction (K) dim holds a symbolic size")
        self.structure[node] = self.positional(node, node.meta["val"], [a, b])

    def attention(self, node: torch.fx.Node) -> None:
        q, k = node.args[0], node.args[1]
        q_rows, k_rows = self.of(q)[-2], self.of(k)[-2]  # type: ignore[arg-type]
        if self._symbolic(k_rows):
            causal = bool(node.kwargs.get("is_causal", node.args[5] if len(node.args) > 5
                                          else False))
            mask = node.kwargs.get("attn_mask", node.args[3] if len(node.args) > 3 else None)
            if not causal or mask is not None or k_rows != q_rows:
                raise self.refuse(node, "its key length is symbolic and it is not causal "
                                        "attention over the same length (padded keys would "
                                        "be attended)")
        self.structure[node] = self.positional(node, node.meta["val"], [q])

    def slice(self, node: torch.fx.Node) -> None:
        x = node.args[0]
        src = self.of(x)  # type: ignore[arg-type]
        dim = _int(node.args[1] if len(node.args) > 1 else 0) % len(src)
        start = node.args[2] if len(node.args) > 2 else 0
        step = node.args[4] if len(node.args) > 4 else 1
        out_dim = _expr(node.meta["val"].shape[dim])
        in_sym = self._symbolic(src[dim])
        if in_sym and len(src[dim]) > 1:
            raise self.refuse(node, f"it slices dim {dim}, which merges a symbolic size")
        if (in_sym or out_dim.free_symbols) and (start not in (0, None) or step != 1):
            raise self.refuse(node, f"it slices symbolic dim {dim} other than as a prefix")
        if in_sym and out_dim.is_Integer:
            lower = self.lower(src[dim][0])  # type: ignore[arg-type]
            if int(out_dim) > lower:
                raise self.refuse(node, f"it keeps {out_dim} rows of symbolic dim {dim}, more "
                                        f"than its lower bound {lower}")
        structure = list(src)
        structure[dim] = (out_dim,) if isinstance(out_dim, sympy.Symbol) else (
            (int(out_dim),) if out_dim.is_Integer else src[dim])
        self.structure[node] = tuple(structure)

    def along(self, node: torch.fx.Node, name: str) -> None:
        x = node.args[0]
        sources = list(x) if isinstance(x, (list, tuple)) else [x]
        dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)
        if name in {"aten.split.Tensor", "aten.split_with_sizes.default"}:
            dim = node.args[2] if len(node.args) > 2 else node.kwargs.get("dim", 0)
        if name in {"aten.flip.default", "aten.roll.default"}:
            raise self.refuse(node, "it reorders positions")
        for s in sources:
            assert isinstance(s, torch.fx.Node)
            structure = self.of(s)
            if self._symbolic(structure[dim % len(structure)]):  # type: ignore[operator]
                raise self.refuse(node, f"it indexes symbolic dim {dim}")
        val = node.meta["val"]
        if not isinstance(val, (list, tuple)):
            self.structure[node] = self.positional(node, val, sources)

    def lower(self, symbol: sympy.Symbol) -> int:
        return max(int(self.ep.range_constraints[symbol].lower), MIN_SIZE)


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
    _Checker(ep, source, locate).run()
    output_node = next(n for n in ep.graph.nodes if n.op == "output")
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
    at_upper: Mapping[sympy.Basic | complex, int] = {s: b.upper for s, b in symbols.items()}
    examples = []
    for node in user_inputs:
        val = node.meta["val"]
        shape = [int(_expr(d).subs(at_upper)) for d in val.shape]
        examples.append(torch.zeros(shape, dtype=val.dtype))
    try:
        program = torch.export.export(ep.module(), tuple(examples))
    except Exception as exc:
        raise CompileError(f"{source}: specialising at the upper bounds "
                           f"({', '.join(f'{b.name}={b.upper}' for b in symbols.values())}) "
                           f"failed: {exc}") from exc
    return Specialization(program, list(symbols.values()), inputs, outputs)

