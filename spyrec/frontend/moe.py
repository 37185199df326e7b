"""Top-k routing and mixture-of-experts dispatch, rewritten at import time (design note 76).

Rewrites of the decomposed FX graph, before constant folding, into ATen ops that
spyre-legalize already lowers exactly:

- `aten.topk` along the last dim (largest first) becomes k passes of a row maximum and a
  mask. Pass 1 is `argmax` (the first index of the row's maximum, NaN first, as torch);
  pass i > 1 replaces the positions taken so far by -inf, takes the row maximum m of the
  rest and picks the first position not yet taken whose value equals m (or is NaN when m
  is): value descending, NaN largest, the lowest index first among ties (the stable
  order; CPU eager's among ties is its selection algorithm's, note 76), exact for every
  value, infinities and NaN included (a taken -inf never shadows an untaken one).
  The value is the chosen element itself (a gather by the index), the index the
  `argmax` column; each pass's one-hot row (`column == index`) is what the
  dispatch below reads. Comparisons run in f32 (a 16-bit tensor holds no -inf on the
  device).
- The dispatch of Hugging Face's `grouped_mm` experts (transformers' `moe.py`: sort the
  flattened top-k expert ids, gather each token row once per choice, one grouped matmul per
  projection over the rows sorted by expert, a per-row routing weight, the inverse
  permutation and a sum over the k choices) becomes a dense dispatch: every expert runs on
  every token, the rows ordered expert-major (row e * T + t), each projection one matmul
  per expert by that expert's weight matrix (a folded constant), the routing weight of a
  row the token's weight for that expert (0 where the expert is not chosen: the sum over
  the k choices of `where(onehot_i, w[:, i], 0)`), and the combine a sum of the E row
  blocks. It adds exactly what eager adds (the chosen experts' weighted outputs, plus
  zeros), so which experts contribute is exact; it costs E / k times the expert flops
  (note 76 measures it). The ops between the projections (split, activation, gate) act row
  by row and are kept as they are, their values recomputed for the new row count.
- A `scatter` of a value at top-k indices along the last dim (DeepSeek-style group-limited
  routing marks the chosen groups so) becomes a `where` of the one-hot rows; a `scatter` of
  the top-k's values there (Llama 4's router) a `where` per choice (distinct indices).

A graph whose routing does not have this form is left alone: spyre-legalize then names the
ops it cannot lower (`aten.sort`, `aten.histc`, the custom `grouped_mm_fallback`, ...).
"""

from __future__ import annotations

import operator
from typing import Any

import torch
from torch.fx.node import map_arg

from spyrec.diagnostics import CompileError

aten = torch.ops.aten

_VIEWS = {aten.view.default, aten._unsafe_view.default, aten.reshape.default}
_SORTS = {aten.sort.default, aten.sort.stable}
_ASSERT = aten._assert_tensor_metadata.default
_GROUPED = "transformers.grouped_mm_fallback.default"
# ops a dense dispatch cannot keep between the projections: they see the row count
_ROW_SHAPED = {aten.view.default, aten._unsafe_view.default, aten.reshape.default,
               aten.expand.default, aten.index.Tensor, aten.permute.default, aten.t.default,
               aten.transpose.int}
# ops that see the row count unless they act along the last dim (a gate's `x[..., ::2]`):
# the position of their dim argument and its default
_ALONG_DIM = {aten.cat.default: (1, 0), aten.slice.Tensor: (1, 0), aten.select.int: (1, 0),
              aten.sum.dim_IntList: (1, None), aten.mean.dim: (1, None),
              aten.split_with_sizes.default: (2, 0), aten.split.Tensor: (2, 0)}
MAX_K = 16  # k passes of a row maximum: routing picks 1 to 8


class FxEmit:
    """Adds call_function nodes before `anchor`, each with the provenance (stack trace,
    module stack) of `like` (default: the anchor) and its fake value, so the importer types
    and names them; a `lazy` one leaves the value to `_refresh`, for operands whose values
    are about to change."""

    def __init__(self, graph: torch.fx.Graph, anchor: torch.fx.Node, lazy: bool = False,
                 like: torch.fx.Node | None = None):
        self.graph = graph
        self.anchor = anchor
        self.like = anchor if like is None else like
        self.lazy = lazy
        val = self.like.meta["val"]
        self.fake_mode = (val[0] if isinstance(val, tuple | list) else val).fake_mode

    def __call__(self, target: Any, *args: Any, **kwargs: Any) -> torch.fx.Node:
        with self.graph.inserting_before(self.anchor):
            node = self.graph.call_function(target, args, kwargs)
        node.meta = {k: v for k, v in self.like.meta.items() if k != "val"}
        if not self.lazy:
            node.meta["val"] = self.value(node)
        return node

    def value(self, node: torch.fx.Node) -> Any:
        """`node`'s fake value from its operands' fake values."""
        args, kwargs = map_arg((node.args, node.kwargs), lambda n: n.meta["val"])
        with self.fake_mode:
            return node.target(*args, **kwargs)  # type: ignore[operator]


def rewrite_routing(graph: torch.fx.Graph) -> None:
    """Rewrite every last-dim `topk` and every `grouped_mm` expert dispatch of `graph` (the
    module docstring); anything else is left for op selection to lower or refuse."""
    onehots: dict[torch.fx.Node, list[torch.fx.Node]] = {}
    for node in list(graph.nodes):
        if node.op == "call_function" and node.target == aten.topk.default:
            picked = _rewrite_topk(graph, node)
            if picked is not None:
                onehots[picked[0]] = picked[1]
    for node in list(graph.nodes):
        if node.op == "call_function" and node.target in (aten.scatter.value,
                                                          aten.scatter.src):
            _rewrite_scatter(graph, node, onehots)
    for node in list(graph.nodes):
        if node.op == "call_function" and node.target in _SORTS:
            made = _lookup_onehots(graph, node, onehots)
            _rewrite_dispatch(graph, node, onehots)
            if made and all(not _users(n) for n in made):  # not a dispatch after all
                _erase_dead(graph, made)


def _rewrite_scatter(graph: torch.fx.Graph, node: torch.fx.Node,
                     onehots: dict[torch.fx.Node, list[torch.fx.Node]]) -> None:
    """`scatter(base, -1, topk_indices, value)` (a mask of the chosen groups or experts) as
    `where(any one-hot row, value, base)`, or for a boolean mask the logical op it is: the
    same elements, set exactly. `scatter(base, -1, topk_indices, src)` (Llama 4's router
    scores: the top-k values written into a row of -inf) is a `where` per choice, of its
    one-hot row and its column of src: a row's top-k indices are distinct, so every
    element is written at most once and the order of the writes cannot matter."""
    base, dim, index, value = node.args
    # through casts between integer types (DeepSeek-V3.2's indexer: `.to(torch.int32)`
    # after the topk, `.long()` before the scatter): the same positions
    while isinstance(index, torch.fx.Node) and index.target == aten._to_copy.default \
            and index not in onehots and not _val(index).dtype.is_floating_point:
        index = index.args[0]
    picked = onehots.get(index)  # type: ignore[arg-type]
    shape = _val(node).shape
    if picked is None or not isinstance(dim, int) or dim % len(shape) != len(shape) - 1 \
            or _val(picked[0]).shape != shape:
        return
    emit = FxEmit(graph, node)
    if node.target == aten.scatter.src:
        if not isinstance(value, torch.fx.Node) or _val(value).shape[:-1] != shape[:-1] \
                or _val(value).shape[-1] < len(picked):
            return
        new: Any = base
        for i, onehot in enumerate(picked):
            column = emit(aten.slice.Tensor, value, -1, i, i + 1)
            new = emit(aten.where.self, onehot, column, new)
        node.replace_all_uses_with(new)
        graph.erase_node(node)
        return
    chosen = picked[0]
    for onehot in picked[1:]:
        chosen = emit(aten.logical_or.default, chosen, onehot)
    if _val(node).dtype == torch.bool and isinstance(value, bool | int):
        # a boolean mask stays a predicate: set to True is an or, set to False an and-not
        new = emit(aten.logical_or.default, chosen, base) if value else emit(
            aten.logical_and.default, emit(aten.logical_not.default, chosen), base)
    else:
        new = emit(aten.where.self, chosen, emit(
            aten.scalar_tensor.default, value, dtype=_val(node).dtype), base)
    node.replace_all_uses_with(new)
    graph.erase_node(node)


def _rewrite_topk(graph: torch.fx.Graph, node: torch.fx.Node
                  ) -> tuple[torch.fx.Node, list[torch.fx.Node]] | None:
    """`topk(x, k, -1)` as k passes of a row maximum (module docstring). Returns the new
    indices node and the one-hot rows of the k passes, or None when the topk is not of the
    lowered form (a dim other than the last, smallest first, a non-float input)."""
    x, k, dim, largest = (*node.args, *(-1, True)[len(node.args) - 2:])[:4]
    dim, largest = node.kwargs.get("dim", dim), node.kwargs.get("largest", largest)
    x_val = _val(x)
    rank = x_val.dim()
    if (not isinstance(k, int) or not 1 <= k <= min(MAX_K, x_val.shape[-1]) or not largest
            or rank == 0 or dim % rank != rank - 1 or not x_val.dtype.is_floating_point):
        return None
    emit = FxEmit(graph, node)
    xf = x if x_val.dtype == torch.float32 else emit(aten._to_copy.default, x,
                                                     dtype=torch.float32)
    columns = emit(aten.arange.start_step, 0, x_val.shape[-1], dtype=torch.int64)
    minus_inf = emit(aten.scalar_tensor.default, float("-inf"), dtype=torch.float32)
    taken: torch.fx.Node | None = None
    values, indices, onehots = [], [], []
    for _ in range(k):
        if taken is None:
            index = emit(aten.argmax.default, xf, -1, True)
        else:
            rest = emit(aten.where.self, taken, minus_inf, xf)
            best = emit(aten.amax.default, rest, [-1], True)
            match = emit(aten.logical_or.default, emit(aten.eq.Tensor, rest, best),
                         emit(aten.isnan.default, rest))
            match = emit(aten.logical_and.default, match, emit(aten.logical_not.default, taken))
            index = emit(aten.argmax.default, emit(aten._to_copy.default, match,
                                                   dtype=torch.float32), -1, True)
        onehot = emit(aten.eq.Tensor, columns, index)
        taken = onehot if taken is None else emit(aten.logical_or.default, taken, onehot)
        values.append(emit(aten.gather.default, x, -1, index))
        indices.append(index)
        onehots.append(onehot)
    joined = [emit(aten.cat.default, parts, -1) if k > 1 else parts[0]
              for parts in (values, indices)]
    for user in list(node.users):
        if user.target is not operator.getitem:
            return None  # not reached: topk's results are read through getitem
        user.replace_all_uses_with(joined[int(user.args[1])])  # type: ignore[arg-type]
        graph.erase_node(user)
    graph.erase_node(node)
    return joined[1], onehots


def _val(node: Any) -> Any:
    """The fake value of an FX node operand."""
    assert isinstance(node, torch.fx.Node)
    return node.meta["val"]


def _source(node: Any) -> Any:
    """`node` behind its reshapes."""
    while isinstance(node, torch.fx.Node) and node.target in _VIEWS:
        node = node.args[0]
    return node


def _users(node: torch.fx.Node) -> list[torch.fx.Node]:
    """`node`'s users other than metadata asserts."""
    return [u for u in node.users if u.target != _ASSERT]


class _Dispatch:
    """The nodes of one `grouped_mm` expert dispatch (transformers' moe.py), found from its
    `sort` of the flattened top-k ids; `ok` is False when the graph is not of that form."""

    def __init__(self, sort: torch.fx.Node, onehots: dict[torch.fx.Node, list[torch.fx.Node]]):
        self.sort = sort
        self.ok = False
        ids = _source(sort.args[0])
        if ids not in onehots or len(sort.args) > 1 or sort.kwargs.get("descending"):
            return
        self.onehots = onehots[ids]
        # the ids as [tokens, k], or with leading dims the experts' input flattens ([B, S, k]:
        # Zaya's router works per sequence)
        self.k = len(self.onehots)
        self.tokens = _val(ids).numel() // self.k
        self.experts = int(_val(self.onehots[0]).shape[-1])
        if _val(ids).shape[-1] != self.k or _val(ids).numel() != self.tokens * self.k or \
                _val(self.onehots[0]).shape != (self.tokens, self.experts):
            return
        parts = {u.args[1]: u for u in sort.users if u.target is operator.getitem}
        if set(parts) != {0, 1} or len(sort.users) != 2:
            return
        self.sorted_ids, self.perm = parts[0], parts[1]
        self.ok = self._match_perm() and self._match_counts() and self._match_combine() \
            and bool(self.grouped)

    def _match_perm(self) -> bool:
        """perm // k gathers the token rows, perm the routing weights, index_put inverts it."""
        self.row_gather: torch.fx.Node | None = None
        self.weight_gather: torch.fx.Node | None = None
        self.inverse: torch.fx.Node | None = None
        for user in _users(self.perm):
            if (user.target == aten.div.Tensor_mode and user.args[1] == self.k
                    and user.kwargs.get("rounding_mode") == "floor"):
                gathers = _users(user)
                if len(gathers) != 1 or gathers[0].target != aten.index.Tensor or \
                        gathers[0].args[1] != [user]:
                    return False
                self.row_gather = gathers[0]
            elif user.target == aten.index.Tensor and user.args[1] == [self.perm]:
                self.weight_gather = user
            elif user.target == aten.index_put.default and user.args[1] == [self.perm]:
                self.inverse = user
            else:
                return False
        if self.row_gather is None or self.weight_gather is None or self.inverse is None:
            return False
        weights = _source(self.weight_gather.args[0])
        self.weights = weights
        return (isinstance(weights, torch.fx.Node)
                and _val(weights).shape[-1] == self.k
                and _val(weights).numel() == self.tokens * self.k
                and tuple(_val(self.row_gather.args[0]).shape[:1]) == (self.tokens,))

    def _match_counts(self) -> bool:
        """The sorted ids feed only histc -> cumsum (the grouped matmuls' offsets) and
        per-row bias gathers `bias[ids]`."""
        self.grouped: list[torch.fx.Node] = []
        self.bias_gathers: list[torch.fx.Node] = []
        for user in _users(self.sorted_ids):
            if user.target == aten.index.Tensor and user.args[1] == [self.sorted_ids]:
                self.bias_gathers.append(user)
                continue
            chain = [user]
            while len(_users(chain[-1])) == 1 and chain[-1].target != aten.cumsum.default:
                chain.append(_users(chain[-1])[0])
            if [c.target for c in chain][-2:] != [aten.histc.default, aten.cumsum.default]:
                return False
            offsets = chain[-1]
            self.grouped = list(_users(offsets))
            if any(str(g.target) != _GROUPED or g.args[2] is not offsets for g in self.grouped):
                return False
        return True

    def _match_combine(self) -> bool:
        """inverse -> index(rows, [inverse]) -> view [T, k, D] -> sum over the k choices."""
        assert self.inverse is not None
        users = _users(self.inverse)
        if len(users) != 1 or users[0].target != aten.index.Tensor:
            return False
        self.unsort = users[0]
        views = _users(self.unsort)
        if len(views) != 1 or views[0].target not in _VIEWS:
            return False
        sums = _users(views[0])
        shape = tuple(_val(views[0]).shape)
        if len(sums) != 1 or sums[0].target != aten.sum.dim_IntList or shape[:2] != (
                self.tokens, self.k) or sums[0].args[1] not in ([1], [-2]) or \
                sums[0].kwargs.get("keepdim") or len(shape) != 3:
            return False
        self.combine = sums[0]
        return True

    def region(self) -> list[torch.fx.Node]:
        """The nodes between the row gathers and the combine, in graph order: their values
        have one row per (token, choice) and get one per (expert, token)."""
        assert self.row_gather is not None and self.weight_gather is not None
        seen: set[torch.fx.Node] = set()
        stack = [self.row_gather, self.weight_gather, *self.grouped, *self.bias_gathers]
        while stack:
            node = stack.pop()
            if node in seen or node is self.unsort:
                continue
            seen.add(node)
            stack.extend(u for u in node.users if u is not self.unsort)
        return [n for n in self.sort.graph.nodes if n in seen]


def _lookup_onehots(graph: torch.fx.Graph, sort: torch.fx.Node,
                    onehots: dict[torch.fx.Node, list[torch.fx.Node]]) -> list[torch.fx.Node]:
    """The one-hot rows of expert ids that no top-k chose: DeepSeek-V4's hash routing reads
    each token's k experts from a table (`tid2eid[input_ids]`). The expert count is the
    `histc` bins the dispatch counts them into (min 0, max bins - 1). Choice i's row is
    `ids[:, i:i+1] == arange(E)`; two choices of one expert (the table's rows need not be
    distinct) both weigh that expert's row, as eager's two rows of it add. Ids with leading
    dims ([B, S, k]) are viewed as [tokens, k] first. Returns the one-hot rows (none when the
    sort does not sort such ids)."""
    ids = _source(sort.args[0])
    if not isinstance(ids, torch.fx.Node) or ids in onehots or len(sort.args) > 1:
        return []
    val = _val(ids)
    if val.dim() < 2 or val.dtype.is_floating_point or val.dtype == torch.bool:
        return []
    histc, frontier = None, [u for u in sort.users if u.target is operator.getitem]
    for _ in range(4):  # sorted ids -> (cast) -> histc
        histc = next((n for n in frontier if n.target == aten.histc.default), None)
        frontier = [u for n in frontier for u in _users(n)]
        if histc is not None:
            break
    if histc is None:
        return []
    given = dict(zip(("bins", "min", "max"), histc.args[1:])) | histc.kwargs
    bins, low, high = given.get("bins", 100), given.get("min", 0), given.get("max", 0)
    if not isinstance(bins, int) or low != 0 or high != bins - 1:
        return []
    emit = FxEmit(graph, sort)
    k = int(val.shape[-1])
    # ids with leading dims ([B, S, k]: Zaya's router) as the [tokens, k] the dispatch sorts
    rows = ids if val.dim() == 2 else emit(aten.view.default, ids, [val.numel() // k, k])
    columns = emit(aten.arange.start_step, 0, bins, dtype=val.dtype)
    made = [emit(aten.eq.Tensor, columns, emit(aten.slice.Tensor, rows, 1, i, i + 1))
            for i in range(k)]
    onehots[ids] = made
    return made  # erasing them erases what only they read (`_erase_dead`)


def _rewrite_dispatch(graph: torch.fx.Graph, sort: torch.fx.Node,
                      onehots: dict[torch.fx.Node, list[torch.fx.Node]]) -> None:
    """A `grouped_mm` expert dispatch as a dense one (module docstring); a sort that does
    not start one is left alone."""
    d = _Dispatch(sort, onehots)
    if not d.ok:
        return
    assert d.row_gather is not None and d.weight_gather is not None
    region = d.region()
    starts = {d.row_gather, d.weight_gather, *d.grouped, *d.bias_gathers}
    for node in region:
        if node not in starts and not _row_wise(node):
            raise CompileError(
                f"node {node.name} ({node.target}): a mixture-of-experts dispatch whose "
                "expert computation changes the row layout between its grouped matmuls, or "
                "whose per-choice rows are read other than by its combine; the dense "
                "dispatch of design note 76 keeps only row-wise ops there. Use an expert MLP "
                "of projections, activations and gates.")
    tokens, experts = d.tokens, d.experts
    # the routing weight of each (expert, token) row: 0 where the expert is not chosen
    emit = FxEmit(graph, d.weight_gather, lazy=True)
    zero = emit(aten.scalar_tensor.default, 0.0, dtype=d.weights.meta["val"].dtype)
    weights = d.weights if _val(d.weights).dim() == 2 else emit(
        aten.view.default, d.weights, [tokens, d.k])
    dense: torch.fx.Node | None = None
    for i, onehot in enumerate(d.onehots):
        term = emit(aten.where.self, onehot, emit(aten.slice.Tensor, weights, 1, i, i + 1),
                    zero)
        dense = term if dense is None else emit(aten.add.Tensor, dense, term)
    expert_major = emit(aten.view.default, emit(aten.clone.default, emit(
        aten.permute.default, dense, [1, 0]), memory_format=torch.contiguous_format),
        [experts * tokens])
    d.weight_gather.replace_all_uses_with(expert_major)
    for gather in d.bias_gathers:  # bias[sorted ids]: each expert's bias row, T times
        emit = FxEmit(graph, gather, lazy=True)
        bias = gather.args[0]
        width = _val(bias).shape[-1]
        gather.replace_all_uses_with(emit(aten.cat.default, [emit(
            aten.expand.default, emit(aten.slice.Tensor, bias, 0, e, e + 1), [tokens, width])
            for e in range(experts)], 0))
    x = d.row_gather.args[0]
    for grouped in d.grouped:  # one matmul per expert on its block of T rows
        emit = FxEmit(graph, grouped, lazy=True)
        rows, weight, _ = grouped.args
        blocks = [x if rows is d.row_gather else emit(
            aten.slice.Tensor, rows, 0, e * tokens, (e + 1) * tokens) for e in range(experts)]
        grouped.replace_all_uses_with(emit(aten.cat.default, [
            emit(aten.mm.default, block, emit(aten.select.int, weight, 0, e))
            for e, block in enumerate(blocks)], 0))
    emit = FxEmit(graph, d.combine, lazy=True)
    weighted = d.unsort.args[0]
    total: torch.fx.Node | None = None
    for e in range(experts):
        block = emit(aten.slice.Tensor, weighted, 0, e * tokens, (e + 1) * tokens)
        total = block if total is None else emit(aten.add.Tensor, total, block)
    assert dense is not None and total is not None
    d.combine.replace_all_uses_with(total)
    _erase_dead(graph, [d.combine, *starts, sort])
    _refresh(graph, d.onehots[-1], total)


def _refresh(graph: torch.fx.Graph, first: torch.fx.Node, last: torch.fx.Node) -> None:
    """Recompute the fake values of the nodes from `first` to `last`, in graph order: the
    dispatch's values have one row per (expert, token) now."""
    inside, emit = False, FxEmit(graph, first)
    for node in graph.nodes:
        inside = inside or node is first
        if inside and node.op == "call_function" and node.target != _ASSERT:
            try:
                node.meta["val"] = emit.value(node)
            except Exception as exc:  # a shape the dense rows do not fit
                raise CompileError(
                    f"node {node.name} ({node.target}): the dense mixture-of-experts dispatch "
                    f"(design note 76) gives it operands it cannot take ({exc}).") from exc
        if node is last:
            return


def _row_wise(node: torch.fx.Node) -> bool:
    """Does `node` act on each row alone, whatever the row count (no reshape, no move
    across rows, a dim argument that is the last)?"""
    if node.op != "call_function" or node.target in _ROW_SHAPED:
        return False
    along = _ALONG_DIM.get(node.target)  # type: ignore[arg-type]
    if along is None:
        return True
    position, default = along
    first = node.args[0]
    rank = _val(first[0] if isinstance(first, list | tuple) else first).dim()
    dims = node.args[position] if len(node.args) > position else node.kwargs.get("dim",
                                                                                  default)
    dims = dims if isinstance(dims, list | tuple) else [dims]
    return all(isinstance(d, int) and d % rank == rank - 1 for d in dims)


def _erase_dead(graph: torch.fx.Graph, seeds: list[torch.fx.Node]) -> None:
    """Erase `seeds` and what only they read, once nothing but metadata asserts reads them."""
    work, erased = list(seeds), set()
    while work:
        node = work.pop()
        if node in erased or node.op != "call_function" or _users(node):
            continue
        for check in list(node.users):
            graph.erase_node(check)
        inputs = node.all_input_nodes
        graph.erase_node(node)
        erased.add(node)
        work.extend(inputs)
