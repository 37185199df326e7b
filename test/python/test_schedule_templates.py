"""Schedule templates give exactly the programs of the plain per-core interpreter.

spyre-schedule-dataflow interprets each structurally distinct kernel once with symbolic
addresses and core coordinates and instantiates it per launch and core
(`passes/spyrecode/schedule_templates.py`). These tests compile the model suite's programs to the
KTIR stage, schedule them both ways and compare every core's instruction stream field by
field, and check that the templates are really used (a silent fallback to the plain
interpreter would pass the equality but lose the speed).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import assert_matches_eager
from xdsl.dialects.builtin import ModuleOp

from spyrec.demo import DemoDecoder, DemoDecoderFFN, DemoMLP
from spyrec.dialects.spyrecode import ProgramOp
from spyrec.driver import compile_program, make_context
from spyrec.passes.spyrecode.schedule_templates import Affine, Symbolic, kernel_key
from spyrec.passes.spyrecode.spyre_schedule_dataflow import SpyreScheduleDataflow


class CausalAttention(torch.nn.Module):
    """q/k/v projections of 4 heads of 64 over 2 KV heads, causal SDPA, output projection."""

    def __init__(self, features: int = 256):
        super().__init__()
        self.q = torch.nn.Linear(features, features, bias=False)
        self.k = torch.nn.Linear(features, features // 2, bias=False)
        self.v = torch.nn.Linear(features, features // 2, bias=False)
        self.o = torch.nn.Linear(features, features, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, f = x.shape
        q = self.q(x).view(b, s, 4, 64).transpose(1, 2)
        k = self.k(x).view(b, s, 2, 64).transpose(1, 2)
        v = self.v(x).view(b, s, 2, 64).transpose(1, 2)
        o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                             enable_gqa=True)
        return self.o(o.transpose(1, 2).reshape(b, s, f))


MODELS = {
    "mlp": (lambda: DemoMLP(256), (64, 256)),
    "decoder_ffn": (lambda: DemoDecoderFFN(256, 3), (2, 32, 256)),
    "decoder": (lambda: DemoDecoder(256, 2), (2, 32, 256)),
    "attention": (CausalAttention, (2, 48, 256)),
}


def _placed(name: str) -> ModuleOp:
    torch.manual_seed(0)
    make, shape = MODELS[name]
    model = make().half().eval()
    ep = torch.export.export(model, (torch.randn(*shape).half(),))
    module = compile_program(ep, stop_after="ktir").module
    assert module is not None
    return module


def _programs(module: ModuleOp, templates: bool, packed: bool = False) -> dict[str, ProgramOp]:
    scheduled = module.clone()
    SpyreScheduleDataflow(templates=templates, packed=packed).apply(make_context(), scheduled)
    scheduled.verify()
    return {p.kernel.data: p for p in scheduled.body.block.ops if isinstance(p, ProgramOp)}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_templates_match_the_plain_interpreter(name: str) -> None:
    module = _placed(name)
    plain = _programs(module, templates=False)
    fast = _programs(module, templates=True)
    # packed: the templates' encodings patched per core, decoded back
    packed = _programs(module, templates=True, packed=True)
    for scheduled in (fast, packed):
        assert scheduled.keys() == plain.keys()
        for kernel, program in plain.items():
            expected = {c.id.value.data: c.instrs() for c in program.cores()}
            got = {c.id.value.data: c.instrs() for c in scheduled[kernel].cores()}
            assert got.keys() == expected.keys(), kernel
            for core, instrs in expected.items():
                assert got[core] == instrs, f"{name}: @{kernel} core {core} differs"
    # every kernel is affine in its addresses; all but attention also in the core
    # coordinates (its head index is a floor division of one, so it is templated per core)
    # and but rows split over cores (their ring.reduce group depends on the core, note 59)
    how = {k: p.attributes["spyre.schedule"].data for k, p in fast.items()}  # type: ignore[attr-defined]
    per_core = {k for k, h in how.items() if h == "per-core"}
    assert per_core == {k for k in how if _is_attention(module, k)
                        or _reduces_over_the_ring(module, k)}, how
    assert "plain" not in how.values(), how


def _kernel(module: ModuleOp, kernel: str):  # a func.FuncOp
    return next(op for op in module.body.block.ops if getattr(op, "sym_name", None) is not None
                and op.sym_name.data == kernel)  # type: ignore[attr-defined]


def _reduces_over_the_ring(module: ModuleOp, kernel: str) -> bool:
    return any(op.name == "ktdp.inter_tile_reduce" for op in _kernel(module, kernel).walk())


def _is_attention(module: ModuleOp, kernel: str) -> bool:
    fn = _kernel(module, kernel)
    return any(op.attributes.get("spyre.fn") is not None
               and op.attributes["spyre.fn"].data == "matmul_nt" for op in fn.walk())  # type: ignore[attr-defined]


def test_identical_layers_share_templates() -> None:
    """Three FFN layers and a final norm: every kernel of layers 2 and 3 reuses a template
    made for an earlier layer (the first layer's norm differs: it reads the input), but the
    last layer's down projection: its result, read by the final norm alone, is kept in LX
    for it (note 61), where the earlier layers' also feed the next residual add."""
    fast = _programs(_placed("decoder_ffn"), templates=True)
    per_layer = (len(fast) - 1) // 3
    shared = [k for k, p in fast.items() if p.attributes["spyre.template"].data != k]  # type: ignore[attr-defined]
    assert len(shared) >= 2 * per_layer - 1, sorted(shared)


def test_kernel_key_ignores_names_but_not_structure() -> None:
    module = _placed("decoder_ffn")
    kernels = [op for op in module.body.block.ops if "grid" in op.attributes]
    keys = [kernel_key(fn) for fn in kernels]  # type: ignore[arg-type]
    assert len(set(keys)) < len(keys)  # the layers repeat
    assert len(set(keys)) > 1  # norm, projections and the final norm differ


def test_affine_arithmetic_is_exact_or_refused() -> None:
    a, x = Affine.symbol(0), Affine.symbol(1)
    form = (a + 3 * x) * 2 + 128
    assert (form.const, form.terms) == (128, {0: 2, 1: 6})  # type: ignore[union-attr]
    assert (form - 2 * a) - 6 * x == 128  # back to a plain int when no symbol is left
    # dividing a form whose coefficients are multiples of the divisor is exact whatever the
    # symbols are (a narrow tile's block and in-block column, ktir_blocks)
    blocked = form // 2
    assert (blocked.const, blocked.terms) == (64, {0: 1, 1: 3})  # type: ignore[union-attr]
    assert (64 * a + 7) // 32 - 2 * a == 0 and (64 * a + 37) % 32 == 5
    for a_value, x_value in ((0, 0), (5, -3), (-7, 11)):
        value = 128 + 2 * a_value + 6 * x_value
        assert (value // 2, value % 2) == (64 + a_value + 3 * x_value, 0)
    for refused in (lambda: a * x, lambda: a // 2, lambda: a % 128, lambda: a < 3,
                    lambda: bool(a), lambda: int(a), lambda: range(a)):  # type: ignore[arg-type]
        with pytest.raises(Symbolic):
            refused()


def test_core_dependent_control_flow_falls_back_per_core() -> None:
    """A loop whose trip count depends on the core cannot be one template: the kernel is
    scheduled per core, and still equals the plain interpreter."""
    from xdsl.dialects import arith, scf

    module = _placed("mlp")
    kernel = next(op for op in module.body.block.ops if "grid" in op.attributes)
    loop = next(op for op in kernel.walk() if isinstance(op, scf.ForOp))
    tile_id = next(op for op in kernel.walk() if op.name == "ktdp.get_compute_tile_id")
    # upper bound = ub + core x: core 0 keeps its trip count, every other core would not
    bound = arith.AddiOp(loop.ub, tile_id.results[0])
    bound.detach() if bound.parent else None
    loop.parent_block().insert_op_before(bound, loop)  # type: ignore[union-attr]
    loop.operands[1] = bound.result
    fast = _programs(module, templates=True)
    plain = _programs(module, templates=False)
    name = kernel.sym_name.data  # type: ignore[attr-defined]
    assert fast[name].attributes["spyre.schedule"].data == "per-core"  # type: ignore[attr-defined]
    for a, b in zip(fast[name].cores(), plain[name].cores(), strict=True):
        assert a.instrs() == b.instrs()


def test_a_module_reused_by_every_layer_stores_its_weights_once() -> None:
    """One FFN block applied three times: its weights are lifted under three names but are
    one tensor, so the program holds them once (each transposed once), and runs right."""
    import spyrec
    from spyrec.demo import FFNBlock

    class Tied(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = torch.nn.ModuleList([FFNBlock(128)] * 3)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for layer in self.layers:
                x = layer(x)
            return x

    torch.manual_seed(0)
    model = Tied().half().eval()
    x = torch.randn(1, 32, 128).half()
    exe = spyrec.compile(torch.export.export(model, (x,)))
    names = [b.name for b, _ in exe.binary.weights]
    assert len(names) == 4, names  # the norm weight and the three transposed projections
    assert_matches_eager(exe, model, x)


def test_a_packed_core_is_verified_like_an_expanded_one() -> None:
    """Packed cores decode and keep the dependence rule: only earlier instructions."""
    import struct

    from xdsl.utils.exceptions import VerifyException

    from spyrec.dialects.spyrecode import program_from_encoded, program_from_instrs
    from spyrec.target.isa import Instr, encode_program

    def load(*deps: int) -> Instr:
        return Instr.make("dma.load", deps=deps, ddr=128, lx=0, rows=1, row_bytes=128,
                          ddr_pitch=128, lx_pitch=128)

    good = [load(), load(0), load(0, 1)]
    program = program_from_instrs("k0", {0: good}, 1, packed=True)
    program.verify()
    assert program.cores()[0].instrs() == good
    # instruction 0 waits for instruction 1 (encode_program itself refuses to write that)
    header, fields = struct.Struct("<BBH"), struct.Struct("<6q")
    forward = (header.pack(1, 0, 1) + fields.pack(*good[0].args) + struct.pack("<I", 1)
               + header.pack(1, 0, 0) + fields.pack(*good[0].args))
    with pytest.raises(VerifyException, match="instruction 0: depends on a later"):
        program_from_encoded("k0", {0: forward}, 1).verify()
    with pytest.raises(VerifyException, match="does not decode"):
        program_from_encoded("k0", {0: encode_program(good)[:-3]}, 1).verify()

    # the check remembers a program that passed by its header and dependence words: an
    # instance at other addresses passes by one comparison, a changed dependence does not
    moved = [Instr.make("dma.load", deps=i.deps, ddr=4096, lx=256, rows=1, row_bytes=128,
                        ddr_pitch=128, lx_pitch=128) for i in good]
    program_from_encoded("k0", {0: encode_program(moved)}, 1).verify()
    code = bytearray(encode_program(good))
    at = 2 * (header.size + fields.size)  # instruction 1's dependence word
    assert struct.unpack_from("<I", code, at) == (0,)
    struct.pack_into("<I", code, at, 2)
    with pytest.raises(VerifyException, match="instruction 1: depends on a later"):
        program_from_encoded("k0", {0: bytes(code)}, 1).verify()


def test_shared_launches_relocate_the_first_launchs_sharing(monkeypatch: pytest.MonkeyPatch,
                                                            ) -> None:
    """Ring sharing runs once per kernel structure; every later launch of it is relocated
    from per-core templates (and equals the plain path: the test above compares them)."""
    from spyrec.passes.spyrecode import schedule_templates

    calls: list[int] = []
    share = schedule_templates.share_loads

    def counted(programs, origins=None):
        calls.append(len(programs))
        return share(programs, origins)

    monkeypatch.setattr(schedule_templates, "share_loads", counted)
    fast = _programs(_placed("decoder_ffn"), templates=True, packed=True)
    ring = {k: p for k, p in fast.items() if "spyre.ring" in p.attributes
            and "tiles shared" in p.attributes["spyre.ring"].data}  # type: ignore[attr-defined]
    structures = {p.attributes["spyre.template"].data for p in ring.values()}  # type: ignore[attr-defined]
    assert len(ring) > len(structures) >= 1, sorted(ring)
    assert len(calls) == len(structures), (calls, structures)


def test_load_partition_sees_aliased_addresses() -> None:
    """Two loads of different arguments are different tiles until a launch passes the same
    address for both; the partition tells those launches apart, so a relocated sharing is
    never reused for them."""
    from spyrec.passes.spyrecode.schedule_templates import Template
    from spyrec.target.isa import Instr

    def load(ddr: Affine | int) -> Instr:
        return Instr("dma.load", (ddr, 0, 1, 128, 128, 128), 0, ())  # type: ignore[arg-type]

    template = Template.build([load(Affine.symbol(0)), load(Affine.symbol(1) + 0)], 4)
    def relocated(a: int, b: int) -> np.ndarray:
        fields = template._relocated(np.array([[a, a], [b, b], [0, 1], [0, 0]]))  # two cores
        assert fields is not None
        return fields
    apart = template.load_partition(relocated(0, 1024))
    assert apart == template.load_partition(relocated(4096, 8192))
    assert apart != template.load_partition(relocated(4096, 4096))
