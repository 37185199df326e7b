"""NumPy references for the kernels of a ktir-cpu checkout, written for spyrec's conformance
command (`ktir_conformance.py`); nothing here is copied from ktir-cpu.

Each entry is keyed by (the example's path under `examples/`, the function name) and gives:
the values of the kernel's scalar parameters (as Triton's constexprs and launch arguments
would be: `BLOCK_SIZE`, `n_rows`, ...), the arrays whose shape the kernel's views do not
fix, and the reference: the kernel's computation in NumPy from the inputs, rounding to the
storage type where the kernel's own ops round (an f16 `arith.addf` rounds its result; a
reduction or contraction of f16 values accumulates in f32 and rounds once, as KTIR's
declared semantics say, docs/ktir.md §4). The reference receives every input array by
parameter name (pointer arrays as the harness drew them, scalars as given) and returns the
expected contents of the arrays the kernel writes.

Inputs the harness draws itself: every pointer parameter viewed as one dense row-major
tensor gets standard-normal values of the view's element type from a seeded generator
(`draw`). A kernel not listed here runs in the interpreter and is reported "no reference".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

Arrays = Mapping[str, Any]
Reference = Callable[[Arrays], dict[str, np.ndarray]]


@dataclass(frozen=True)
class Case:
    """What the harness needs beyond the kernel to check one kernel against NumPy."""

    reference: Reference
    scalars: dict[str, int | float] = field(default_factory=dict)
    # arrays the harness cannot shape from the views: name -> (shape, dtype, "normal" | "zeros"
    # | "index:N" for integers in [0, N))
    arrays: dict[str, tuple[tuple[int, ...], str, str]] = field(default_factory=dict)
    # for kernels that take no pointers but hard-code their tensors' addresses: name -> (byte
    # address in LPDDR, shape, dtype, how), placed there before the run and read back after
    image: dict[str, tuple[int, tuple[int, ...], str, str]] = field(default_factory=dict)
    # the launch grid, for a kernel without a `grid` attribute whose text says what it needs
    grid: tuple[int, ...] | None = None
    # error bound, in units of the output type's roundoff, relative to |reference| plus
    # 1/16 of the output's largest magnitude (boundary flips of the f16 roundings the
    # reference mirrors, and f32 summation order)
    ulps: float = 4.0
    # a second run of a kernel listed in VARIANTS: how the table names it, and whether every
    # access tile is masked (Triton's masked tails, docs/ktir.md §7)
    variant: str = ""
    masked_tails: bool = False


def h(x: Any) -> np.ndarray:
    """Round to f16, as an f16 op of the kernel does."""
    return np.asarray(x, dtype=np.float32).astype(np.float16)


def f32(x: Any) -> np.ndarray:
    return np.asarray(x, dtype=np.float32)


def draw(shape: tuple[int, ...], dtype: np.dtype[Any], how: str,
         rng: np.random.Generator) -> np.ndarray:
    """An input array: standard normal (floats; `normal:S` scaled by S), zeros, or integers
    in [0, N) (`index:N`)."""
    if how == "zeros":
        return np.zeros(shape, dtype=dtype)
    if how.startswith("index:"):
        return rng.integers(0, int(how.removeprefix("index:")), size=shape).astype(dtype)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(0, 16, size=shape).astype(dtype)
    scale = float(how.removeprefix("normal:")) if how.startswith("normal:") else 1.0
    return (scale * rng.standard_normal(shape)).astype(dtype)


# ---- the computations --------------------------------------------------------------------


def _add(a: str, b: str, out: str) -> Reference:
    return lambda x: {out: h(f32(x[a]) + f32(x[b]))}


def _softmax_rows(x: np.ndarray) -> np.ndarray:
    """Row softmax as the Triton kernels write it in f16: max, subtract, exp, f32-summed
    row total rounded once, divide."""
    m = x.max(axis=-1, keepdims=True)
    e = h(np.exp(f32(h(f32(x) - f32(m)))))
    s = h(f32(e).sum(axis=-1, keepdims=True))
    return h(f32(e) / f32(s))


def _softmax(inp: str, out: str) -> Reference:
    return lambda x: {out: _softmax_rows(x[inp])}


def _blocked_matmul(a: np.ndarray, b: np.ndarray, bm: int, bn: int, bk: int) -> np.ndarray:
    """C tile by tile: each K block's product summed in f32 and rounded to f16, added to an
    f16 accumulator (the kernel's `iter_args`), rounding at each step."""
    m, k = a.shape
    n = b.shape[1]
    c = np.zeros((m, n), dtype=np.float16)
    for i in range(0, m, bm):
        for j in range(0, n, bn):
            acc = np.zeros((bm, bn), dtype=np.float16)
            for kk in range(0, k, bk):
                part = h(f32(a[i:i + bm, kk:kk + bk]) @ f32(b[kk:kk + bk, j:j + bn]))
                acc = h(f32(acc) + f32(part))
            c[i:i + bm, j:j + bn] = acc
    return c


def _matmul(bm: str, bn: str, bk: str) -> Reference:
    return lambda x: {"c_ptr": _blocked_matmul(x["a_ptr"], x["b_ptr"], x[bm], x[bn], x[bk])}


def _block_sums(x: np.ndarray, block: int, square: bool) -> np.ndarray:
    """An f16 (rows, block) accumulator of x (or x*x) over column blocks, rounding at each
    add, then its row sums in f32 rounded once: the Triton kernels' two-level reduction."""
    acc = np.zeros((x.shape[0], block), dtype=np.float16)
    for col in range(0, x.shape[1], block):
        part = x[:, col:col + block]
        part = h(f32(part) * f32(part)) if square else part
        acc = h(f32(acc) + f32(part))
    return h(f32(acc).sum(axis=1))


def _fold(parts: list[np.ndarray]) -> np.ndarray:
    """An f16 inter-tile sum: the zero identity, then each part in tile order, each add
    rounded (`linalg.add` in the combiner)."""
    acc = np.zeros_like(parts[0])
    for part in parts:
        acc = h(f32(acc) + f32(part))
    return acc


def _rmsnorm(x: Arrays, shards: int = 1) -> dict[str, np.ndarray]:
    """RMSNorm over rows, the hidden dim in `shards` column shards whose partial sums of
    squares are all-reduced in f16."""
    n = h(x["N"])
    width = x["X"].shape[1] // shards
    partials = [_block_sums(x["X"][:, k * width:(k + 1) * width], x["BLOCK_SIZE"], square=True)
                for k in range(shards)]
    total = (_fold(partials) if shards > 1 else partials[0])[:, None]
    mean = h(f32(total) / f32(n))
    rstd = h(1.0 / np.sqrt(f32(h(f32(mean) + f32(x["eps"])))))
    return {"Y": h(f32(h(f32(x["X"]) * f32(rstd))) * f32(x["W"]))}


def _layernorm(x: Arrays) -> dict[str, np.ndarray]:
    data, block = x["X"], x["BLOCK_SIZE"]
    n = h(x["N"])
    mean = h(f32(_block_sums(data, block, square=False)) / f32(n))
    centred = h(f32(data) - f32(mean)[:, None])
    var = h(f32(_block_sums(centred, block, square=True)) / f32(n))
    rstd = h(1.0 / f32(h(np.sqrt(f32(h(f32(var) + f32(x["eps"])))))))
    y = h(f32(h(f32(h(f32(centred) * f32(rstd)[:, None])) * f32(x["W"]))) + f32(x["B"]))
    return {"Y": y, "Mean": mean, "Rstd": rstd}


def _rope(x: Arrays) -> dict[str, np.ndarray]:
    data = x["x_ptr"]
    seq = x["cos_ptr"].shape[0]
    half = data.shape[1] // 2
    heads = data.reshape(-1, seq, data.shape[1])
    first, second = f32(heads[..., :half]), f32(heads[..., half:])
    cos, sin = f32(x["cos_ptr"]), f32(x["sin_ptr"])
    y1 = h(f32(h(first * cos)) - f32(h(second * sin)))
    y2 = h(f32(h(first * sin)) + f32(h(second * cos)))
    return {"out_ptr": np.concatenate([y1, y2], axis=-1).reshape(data.shape)}


def _swiglu_part(inp: np.ndarray, w_gate: np.ndarray, w_up: np.ndarray, w_down: np.ndarray
                 ) -> np.ndarray:
    """(silu(x @ Wg) * (x @ Wu)) @ Wd with the f16 roundings of the ffn examples."""
    gate = h(f32(inp) @ f32(w_gate))
    up = h(f32(inp) @ f32(w_up))
    sigmoid = h(1.0 / f32(h(1.0 + f32(h(np.exp(-f32(gate)))))))
    fused = h(f32(h(f32(gate) * f32(sigmoid))) * f32(up))
    return h(f32(fused) @ f32(w_down))


def _ffn_swiglu(x: Arrays, shards: int = 1) -> dict[str, np.ndarray]:
    """x + the SwiGLU FFN, its hidden dim in `shards` shards all-reduced in f16."""
    inp, width = x["x_ptr"], x["w_gate_ptr"].shape[1] // shards
    parts = [_swiglu_part(inp, x["w_gate_ptr"][:, k * width:(k + 1) * width],
                          x["w_up_ptr"][:, k * width:(k + 1) * width],
                          x["w_down_ptr"][k * width:(k + 1) * width])
             for k in range(shards)]
    out = _fold(parts) if shards > 1 else parts[0]
    return {"out_ptr": h(f32(inp) + f32(out))}


def _ring_sum(x: Arrays) -> dict[str, np.ndarray]:
    """Each core's row, all-reduced in f16; core 0 stores the sum."""
    return {"out_ptr": _fold(list(x["in_ptr"]))[None, :]}


def _group_sums(x: Arrays) -> dict[str, np.ndarray]:
    """Rows in groups of 4 cores, each group all-reduced in f16; row g of out_ptr is group
    g's sum (stored by the group's first core)."""
    rows = list(x["in_ptr"])
    return {"out_ptr": np.stack([_fold(rows[g:g + 4]) for g in range(0, len(rows), 4)])}


def _looped_ring_sum(x: Arrays) -> dict[str, np.ndarray]:
    """The 4 cores' rows all-reduced in f16 once per iteration, each sum added to an f16
    accumulator; core 0 stores it after the loop."""
    total = _fold(list(x["in_ptr"]))
    acc = np.zeros_like(total)
    for _ in range(int(x["n_iters"])):
        acc = h(f32(acc) + f32(total))
    return {"out_ptr": acc[None, :]}


def _sdpa_2d(x: Arrays) -> dict[str, np.ndarray]:
    """softmax(Q K^T / 8) V in f16, the row max exact, the row sum and both products in
    f32 rounded once."""
    scores = h(f32(h(f32(x["q_ptr"]) @ f32(x["k_ptr"]).T)) * 0.125)
    p = h(np.exp(f32(h(f32(scores) - f32(scores.max(axis=1, keepdims=True))))))
    total = h(f32(p).sum(axis=1, keepdims=True))
    return {"output_ptr": h(f32(h(f32(p) / f32(total))) @ f32(x["v_ptr"]))}


def _paged_attention(x: Arrays) -> dict[str, np.ndarray]:
    """Causal attention of each query token over a paged KV cache (vLLM's unified
    attention, one sequence): token t (its absolute position `context_len + t`) of query
    head q reads key / value head q // 4 at positions 0 .. num_tiles * 16 - 1, page j of
    which is cache block `block_tables[0, block_table_offset + j]`; keys past the token's
    position are masked. All in f32 from the f16 inputs (the kernel's online softmax is
    the same sum in another order), the output rounded to f16 once."""
    q, kc, vc, tables = (x[n] for n in ("query_ptr", "key_cache_ptr", "value_cache_ptr",
                                        "block_tables_ptr"))
    start, offset, tiles = (int(x[n]) for n in ("cur_batch_start_index", "block_table_offset",
                                                "num_tiles"))
    context, scale = int(x["context_len"]), float(x["scale"])
    pages = [int(tables[0, offset + j]) for j in range(tiles)]
    keys = f32(np.concatenate([kc[b] for b in pages]))  # [tiles * 16, kv heads, head]
    values = f32(np.concatenate([vc[b] for b in pages]))
    out = np.zeros_like(x["output_ptr"])
    group = q.shape[1] // kc.shape[2]
    positions = np.arange(keys.shape[0])
    for t in range(out.shape[0] - start):
        visible = positions <= context + t
        for head in range(q.shape[1]):
            kv = head // group
            scores = f32(scale) * (keys[:, kv] @ f32(q[start + t, head]))
            scores = np.where(visible, scores, -np.inf)
            p = np.exp(scores - scores.max())
            out[start + t, head] = h((p @ values[:, kv]) / p.sum())
    return {"output_ptr": out}


def _pv_ksplit(x: Arrays) -> dict[str, np.ndarray]:
    """C = A B with K in 16 slices of 512, each slice's product rounded to f16 and the
    slices all-reduced in f16 (ascending core order), per 64-column output block."""
    a, b = x["a_ptr"], x["b_ptr"]
    blocks = [_fold([h(f32(a[:, k:k + 512]) @ f32(b[k:k + 512, j:j + 64]))
                     for k in range(0, a.shape[1], 512)])
              for j in range(0, b.shape[1], 64)]
    return {"c_ptr": np.concatenate(blocks, axis=1)}


def _row_reduce_splat(combine: Callable[[np.ndarray], Any]) -> Reference:
    def ref(x: Arrays) -> dict[str, np.ndarray]:
        data = x["arg0"]
        return {"arg0": np.full_like(data, h(combine(f32(data))))}
    return ref


def _concat(axis: int) -> Reference:
    return lambda x: {"b_ptr": np.concatenate([x["a0_ptr"], x["a1_ptr"]], axis=axis)}


def _gather(x: Arrays) -> dict[str, np.ndarray]:
    return {"Y": x["X"][x["IDX1"], x["IDX2"]]}


def _scatter(x: Arrays) -> dict[str, np.ndarray]:
    """Y[IDX1, IDX2] = X, a repeated index keeping the last value in tile order."""
    y = np.zeros_like(x["X"])
    y[x["IDX1"].reshape(-1), x["IDX2"].reshape(-1)] = x["X"].reshape(-1)
    return {"Y": y}


# RFC 0682's indirect examples: X, IDX1, IDX2, Y at element offsets 0, 64, 128, 192 of their
# views' types (64x64 each; the examples' comments count them in 128-byte sticks)
_INDIRECT_IMAGE = {"X": (0, (64, 64), "float16", "normal"),
                   "IDX1": (64 * 4, (64, 64), "int32", "index:64"),
                   "IDX2": (128 * 4, (64, 64), "int32", "index:64"),
                   "Y": (192 * 2, (64, 64), "float16", "zeros")}


def _indexed_add(x: Arrays) -> dict[str, np.ndarray]:
    """out[g0, s:s+32, g1, :] = x[idx[g0], s:s+32, g1, :] + y[g0, s:s+32, g1, :] for each of the
    2x8 tiles; the rest of out is left as it was (zeros)."""
    start = int(x["dim1_start"])
    out = np.zeros_like(x["output_ptr"])
    rows = slice(start, start + 32)
    for g0 in range(2):
        gathered = x["x_ptr"][int(x["index_ptr"][g0]), rows]
        out[g0, rows] = h(f32(gathered) + f32(x["y_ptr"][g0, rows]))
    return {"output_ptr": out}


REFERENCES: dict[tuple[str, str], Case] = {
    ("triton-ktir/vector_add_ktir.mlir", "add_kernel"):
        Case(_add("x_ptr", "y_ptr", "output_ptr"), scalars={"BLOCK_SIZE": 128}),
    ("triton-ktir/vector_add_dynamic_ktir.mlir", "add_kernel_dynamic"):
        Case(_add("x_ptr", "y_ptr", "output_ptr"), scalars={"n_elements": 1024},
             arrays={"x_ptr": ((1024,), "float32", "normal"),
                     "y_ptr": ((1024,), "float32", "normal"),
                     "output_ptr": ((1024,), "float32", "zeros")}),
    ("triton-ktir/softmax_fwd_ktir.mlir", "softmax_kernel"):
        Case(_softmax("input_ptr", "output_ptr"), scalars={"n_rows": 4096}),
    ("latency/softmax_small.mlir", "softmax_kernel_small"):
        Case(_softmax("input_ptr", "output_ptr"), scalars={"n_rows": 64}),
    ("latency/softmax_small_explicit.mlir", "softmax_kernel_small_explicit"):
        Case(_softmax("input_ptr", "output_ptr"), scalars={"n_rows": 64}),
    ("ktir/softmax_wide.mlir", "softmax_kernel"):
        Case(_softmax("input_ptr", "output_ptr")),
    ("triton-ktir/matmul_fwd_ktir.mlir", "matmul_kernel"):
        Case(_matmul("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K"),
             scalars={"K": 2048, "BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 512, "BLOCK_SIZE_K": 128}),
    ("latency/matmul_small.mlir", "matmul_kernel_small"):
        Case(_matmul("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K"),
             scalars={"K": 64, "BLOCK_SIZE_M": 8, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32}),
    ("latency/rmsnorm_4core_4x1.mlir", "rmsnorm_4x1"):
        Case(_rmsnorm, scalars={"N": 4096, "eps": 1e-5, "BLOCK_SIZE": 1024}),
    ("triton-ktir/layernorm_fwd_ktir.mlir", "_layer_norm_fwd_fused"):
        Case(_layernorm, scalars={"N": 8192, "eps": 1e-5, "BLOCK_SIZE": 1024}),
    ("latency/rope_fwd_4x2.mlir", "rope_fwd_kernel"):
        Case(_rope),
    ("ktir/ffn_swiglu.mlir", "ffn_swiglu"):
        Case(_ffn_swiglu),
    ("ktir/ffn_swiglu_4core.mlir", "ffn_swiglu_4core"):
        # the four partials (up to the output's magnitude) are rounded to f16 before the
        # fold: one rounding flip there is an ulp at the output's scale, 32 in this bound
        Case(lambda x: _ffn_swiglu(x, shards=4), ulps=32,
             arrays={"w_gate_ptr": ((256, 1024), "float16", "normal:0.125"),
                     "w_up_ptr": ((256, 1024), "float16", "normal:0.125"),
                     "w_down_ptr": ((1024, 256), "float16", "normal:0.125")}),
    ("latency/rmsnorm_4core_2x2.mlir", "rmsnorm_2x2"):
        Case(lambda x: _rmsnorm(x, shards=2),
             scalars={"N": 4096, "eps": 1e-5, "BLOCK_SIZE": 1024},
             arrays={name: ((256, 4096), "float16", "zeros" if name == "Y" else "normal")
                     for name in ("X", "Y", "W")}),
    ("triton-ktir/sdpa_2d.mlir", "sdpa_kernel_2d"):
        Case(_sdpa_2d),
    ("triton-ktir/paged_attention.mlir", "kernel_unified_attention_spyre_2d"):
        # the translation's own parameters (its header): 8 tokens after 120 of context,
        # 8 pages of 16 from a 64-block cache
        Case(_paged_attention,
             scalars={"cur_batch_start_index": 0, "block_table_offset": 0, "num_tiles": 8,
                      "context_len": 120, "scale": 128 ** -0.5},
             arrays={"block_tables_ptr": ((1, 16), "int32", "index:64")}),
    ("sdsc/sdpa_pv_ksplit.mlir", "sdpa_pv_ksplit"):
        Case(_pv_ksplit),
    ("ktir/ring_reduce.mlir", "ring_reduce"):
        Case(_ring_sum, arrays={"in_ptr": ((4, 128), "float16", "normal"),
                                "out_ptr": ((1, 128), "float16", "zeros")}),
    ("ktir/ring_reduce_inner_loop.mlir", "ring_reduce_inner_loop"):
        Case(_looped_ring_sum, scalars={"n_iters": 3},
             arrays={"in_ptr": ((4, 128), "float16", "normal"),
                     "out_ptr": ((1, 128), "float16", "zeros")}),
    ("latency/ring_reduce_multi_group.mlir", "ring_reduce_multi_group"):
        Case(_group_sums, arrays={"in_ptr": ((16, 128), "float16", "normal"),
                                  "out_ptr": ((4, 128), "float16", "zeros")}),
    ("ktir/reduce_generic.mlir", "reduce_explicit_region"):
        Case(_row_reduce_splat(np.sum)),
    ("ktir/reduce_multiop.mlir", "reduce_multiop"):
        Case(_row_reduce_splat(np.max)),
    ("ktir/scalar_broadcast.mlir", "scalar_broadcast"):
        Case(lambda x: {"out_ptr": np.full((4, 64), x["in_ptr"][0, 0], dtype=np.float16)}),
    ("ktir/nested_yield.ktir", "nested_yield"):
        Case(lambda x: {"out": np.full(4, 2.0, dtype=np.float32)}, ulps=0),
    ("rfc/add-with-control-flow.mlir", "add"):
        # no grid attribute; the example's comment: 32 compute tiles of 3 rows
        Case(_add("A", "B", "C"), grid=(32,),
             image={"A": (1024 * 2, (96, 64), "float16", "normal"),
                    "B": (12288 * 2, (96, 64), "float16", "normal"),
                    "C": (18432 * 2, (96, 64), "float16", "zeros")}),
    ("rfc/indirect-access-copy.mlir", "indirect_access_copy"):
        Case(_gather, image=_INDIRECT_IMAGE, ulps=0),
    ("rfc/indirect-scatter.mlir", "indirect_scatter"):
        Case(_scatter, image=_INDIRECT_IMAGE, ulps=0),
    ("rfc/distributed-view-copy-dynamic.mlir", "distributed_view_copy_dynamic"):
        Case(_concat(axis=1), scalars={"s0_in": 16}, ulps=0,
             arrays={"a0_ptr": ((64, 16), "float16", "normal"),
                     "a1_ptr": ((64, 16), "float16", "normal"),
                     "b_ptr": ((64, 32), "float16", "zeros")}),
    ("rfc/distributed-view-copy-rowmerge-dynamic.mlir", "distributed_view_copy_rowmerge_dynamic"):
        Case(_concat(axis=0), scalars={"s0_in": 32}, ulps=0,
             arrays={"a0_ptr": ((64, 32), "float16", "normal"),
                     "a1_ptr": ((64, 32), "float16", "normal"),
                     "b_ptr": ((128, 32), "float16", "zeros")}),
    ("triton-ktir/indexed_add.mlir", "indexed_add_kernel"):
        Case(_indexed_add, scalars={"dim1_start": 0},
             arrays={"index_ptr": ((2,), "int64", "index:128")}),
}


def _vector_add_tail(n: int) -> Case:
    """Triton's masked tail: the 1024-lane tile over n elements, lanes past n dropped."""
    return Case(_add("x_ptr", "y_ptr", "output_ptr"), scalars={"n_elements": n},
                arrays={"x_ptr": ((n,), "float32", "normal"), "y_ptr": ((n,), "float32", "normal"),
                        "output_ptr": ((n,), "float32", "zeros")},
                variant=f"n_elements={n}, masked tails", masked_tails=True)


# further runs of a kernel, reported as rows of their own after the kernel as written
VARIANTS: dict[tuple[str, str], list[Case]] = {
    ("triton-ktir/vector_add_dynamic_ktir.mlir", "add_kernel_dynamic"):
        [_vector_add_tail(256), _vector_add_tail(512)],
}


def case_of(rel: str, function: str, variant: int) -> Case | None:
    """The kernel as written (variant 0) or its `variant`-th extra run."""
    if variant == 0:
        return REFERENCES.get((rel, function))
    return VARIANTS[(rel, function)][variant - 1]
