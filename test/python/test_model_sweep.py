"""The model-coverage sweep's machinery (`benchmarks/model_sweep.py`) on a fixed small sample.

Two torch.nn idioms of the catalogue that compile today are measured and must match eager
with every field recorded; the same models with their outputs corrupted through the
harness's hook (one element off; a 1 % scale) must be recorded as numerics failures; a model
torch.export rejects is recorded as `export`, a program spyrec refuses as `refused` with the
reason; the per-process runner records a timeout for every variant it did not finish, runs a
model in its own process and parses its records, `--resume` skips what the results file
holds, and the report counts what the records say.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import types
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch
from torch import nn

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


catalogue = _load("sweep_models")
sweep = _load("model_sweep")
CASES = {c.name: c for c in catalogue.all_cases()}


class DataDependent(torch.nn.Module):
    """Python control flow on a tensor's value: torch.export cannot trace it."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2 if x.sum() > 0 else x - 1


class Float64(torch.nn.Module):
    """A float64 program: spyrec refuses the dtype (Spyre has no 64-bit floats)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x.double()) + 1


@pytest.fixture
def extra_idioms(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Two test-only idioms in the catalogue, as `nn:data-dependent` and `nn:float64`."""
    idioms = {**catalogue.IDIOMS,
              "data-dependent": ("nn-seq", ("fp32",), (DataDependent,
                                                       lambda: (torch.ones(4, 64),))),
              "float64": ("nn-seq", ("fp32",), (Float64, lambda: (torch.ones(4, 64),)))}
    monkeypatch.setattr(catalogue, "IDIOMS", idioms)
    return idioms


def _check_measured(record: dict[str, Any]) -> None:
    assert record["status"] == "ok", record
    assert 0 <= record["element_ratio"] <= 1 and 0 <= record["aggregate_ratio"] <= 1
    assert record["emulated_us"] > 0 and 0 < record["roofline_ratio"] <= 1.05
    assert record["offchip_bytes"] > 0 and record["min_offchip_bytes"] > 0
    assert record["kernels"] >= 1 and record["compile_s"] > 0 and record["export_s"] > 0


def _scaled(out: torch.Tensor) -> torch.Tensor:
    """1 % too large everywhere: each element within its loose bound, the aggregate not."""
    return out * 1.01


def _one_off(out: torch.Tensor) -> torch.Tensor:
    """One element far off, the rest exact."""
    out = out.clone()
    out.view(-1)[3] += 10 * out.abs().max() + 1
    return out


# the sample that runs on the emulator (a few seconds each): heavy tier
@pytest.mark.heavy
@pytest.mark.parametrize(("name", "variant", "corrupt", "ratio"), [
    ("nn:multihead-attention", "fp32", _one_off, "element_ratio"),
    ("nn:resnet", "fp16", _scaled, "aggregate_ratio")])
def test_sample_matches_eager_and_a_corrupted_output_is_caught(
        name: str, variant: str, corrupt: Any, ratio: str) -> None:
    record = sweep.measure(CASES[name], variant)
    _check_measured(record)
    assert record["model"] == name and record["variant"] == variant
    bad = sweep.measure(CASES[name], variant, corrupt=corrupt)  # the harness's hook
    assert bad["status"] == "mismatch" and bad[ratio] > 1 and "FAILED" in bad["error"], bad


def test_export_failure_and_refusal_are_recorded(extra_idioms: dict[str, Any]) -> None:
    export = sweep.measure(catalogue.Case("nn:data-dependent", "nn-seq", ("fp32",)), "fp32")
    assert export["status"] == "export" and "error" in export and "compile_s" not in export
    refused = sweep.measure(catalogue.Case("nn:float64", "nn-seq", ("fp32",)), "fp32")
    assert refused["status"] == "refused", refused
    assert "float64" in refused["error"] and refused["ops"] and refused["compile_s"] >= 0


def test_a_pass_failure_is_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    """A PassFailure wraps an exception a pass raised: a compiler bug, not a refusal."""
    from spyrec import api
    from spyrec.diagnostics import PassFailure

    def failing(*args: Any, **kwargs: Any) -> Any:
        try:
            return 1 // 0
        except ZeroDivisionError as exc:
            raise PassFailure("pass spyre-x failed: ZeroDivisionError") from exc

    monkeypatch.setattr(api, "compile", failing)
    record = sweep.measure(CASES["nn:multihead-attention"], "fp32")
    assert record["status"] == "crash" and "ZeroDivisionError" in record["error"], record
    assert record["where"].startswith("test/python/test_model_sweep.py:")


def test_refused_ops_are_named_per_entry() -> None:
    from spyrec.diagnostics import CompileError, UnsupportedOpsError

    error = UnsupportedOpsError("m.pt2", [
        "m.py:3: aten.gather.default (node gather): no Spyre lowering",
        "m.py:4: aten.gather.default (node gather_1): no Spyre lowering",
        "program output y: a boolean tensor that is not a predicate"])
    assert sweep.refused_ops(error) == ["aten.gather.default", "aten.gather.default",
                                        "a boolean tensor that is not a predicate"]
    assert sweep.refused_ops(CompileError("node x: aten.cat.default reads padding")) == [
        "aten.cat.default"]
    # a reason is compared across models without its source line, node, shapes and numbers
    assert sweep.refusal("CompileError: <memory>: m.py:7: node cat (aten.cat.default): it "
                         "indexes symbolic dim -1. A symbolic size runs ...") == (
        "aten.cat.default", "it indexes symbolic dim -N")
    assert sweep.refusal("a.py:2: aten.view.default (node view_3): [1, 24, 1, 1] -> [1, 24] "
                         "changes the innermost dim; see") == (
        "aten.view.default", "[..] -> [..] changes the innermost dim")


def test_a_constant_reference_is_degenerate_not_ok() -> None:
    """An output eager gives as one value repeated (hf:efficientnet's tiny build: all zeros)
    matches a wrong program that gives the same constant: recorded as `degenerate`."""
    assert sweep.degenerate(torch.zeros(2, 8))
    assert sweep.degenerate((torch.full((3,), 2.5), torch.ones(4)))
    assert not sweep.degenerate((torch.zeros(2, 8), torch.arange(4.0)))
    assert not sweep.degenerate(torch.tensor([7.0]))  # one element: nothing to vary


def test_timeout_resume_and_report(tmp_path: Path) -> None:
    case = CASES["nn:multihead-attention"]
    records = sweep.run_case(case, timeout=0.5)  # killed while importing torch
    assert [r["variant"] for r in records] == list(case.variants)
    assert {r["status"] for r in records} == {"timeout"}
    results = tmp_path / "results.jsonl"
    ok = {"status": "ok", "element_ratio": 0.1, "aggregate_ratio": 0.2, "emulated_us": 5.0,
          "roofline_ratio": 0.5, "offchip_bytes": 200, "min_offchip_bytes": 100, "kernels": 1,
          "compile_s": 1.0}
    lines = [{"model": case.name, "family": case.family, "variant": v, **ok}
             for v in case.variants]
    results.write_text("".join(json.dumps(r) + "\n" for r in lines) + '{"truncat')
    assert sweep.read_results(results) == lines
    sweep.sweep([case], results, timeout=0.5, jobs=1, resume=True)  # done: nothing runs
    assert sweep.read_results(results) == lines
    refused = {"model": "nn:lstm", "family": "nn-seq", "variant": "fp32", "status": "refused",
               "ops": ["aten.lstm.input", "aten.lstm.input"], "compile_s": 1.0,
               "entries": ["m.py:3: aten.lstm.input (node lstm): no Spyre lowering",
                           "m.py:9: aten.lstm.input (node lstm_1): no Spyre lowering"]}
    newer = {**lines[0], "status": "mismatch", "commit": "abc1234"}
    with results.open("a") as f:  # a re-run appends: the newest row per variant counts
        f.write("\n" + json.dumps(refused) + "\n" + json.dumps(newer) + "\n")
    assert sweep.read_results(results) == [*lines[1:], refused, newer]
    sweep.sweep([case], results, timeout=0.5, jobs=1, resume=False)  # re-measures the case
    again = sweep.read_results(results)
    assert again[0] == refused  # another model's rows stay
    assert [r["status"] for r in again[1:]] == ["timeout"] * len(case.variants)
    assert all(r["commit"] for r in again[1:])  # stamped with the tree measured
    (only_fp16,) = sweep.select([case.name], [], None, ["fp16"])
    assert only_fp16.variants == ("fp16",)
    again[1:] = [{**r, "status": "ok"} for r in again[1:]]
    results.write_text("".join(json.dumps(r) + "\n" for r in again))
    sweep.sweep([only_fp16], results, timeout=0.5, jobs=1, resume=False)  # --variant fp16
    statuses = {r["variant"]: r["status"] for r in sweep.read_results(results)
                if r["model"] == case.name}
    assert statuses == {"fp32": "ok", "fp16": "timeout", "dynamic": "ok"}  # the rest stay
    text = sweep.report([case, CASES["nn:lstm"], CASES["nn:gru"]], [*lines, refused],
                        "model_sweep.py --test", 60)
    assert "**3 architectures enumerated**" in text and "**2 measured**" in text
    assert "1 compile refusals" in text and "**1 compiled**, **1 match eager**" in text
    assert "| aten.lstm.input | no Spyre lowering | 1 | nn:lstm |" in text
    assert "| nn:multihead-attention | fp32 | ok | 0.20 | 5.0 | 0.50 | 2.00 | 1.0 |" in text
    assert text.rstrip().endswith("nn:gru")  # not run, listed


@pytest.mark.heavy
def test_one_model_per_process() -> None:
    case = CASES["nn:multihead-attention"]
    records = sweep.run_case(case, timeout=240)
    assert [r["variant"] for r in records] == list(case.variants)
    for record in records[:2]:  # fp32, fp16
        _check_measured(record)
    assert records[2]["status"] in sweep.STATUSES and records[2]["process_s"] > 0


def test_shrink_keeps_every_kind_of_layer_and_consistent_sizes() -> None:
    """Per-layer lists, per_layer_config and layer-count segments follow the layers kept, which
    show every kind the lists name; MLA and Mamba sizes stay consistent; None head sizes are
    made explicit."""
    config = {"num_hidden_layers": 8, "hidden_size": 1024, "num_attention_heads": 16,
              "num_key_value_heads": 16, "first_k_dense_replace": 3,
              "layer_types": ["linear"] * 3 + ["full"] + ["linear"] * 4,
              "per_layer_config": {"03": {"head_dim": 512}},
              "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_rope_head_dim": 64,
              "qk_nope_head_dim": 128, "qk_head_dim": 192, "head_dim": 64}
    assert catalogue.kept_layers(config, 8, 2) == [0, 3]  # dense + linear, MoE + full
    tiny = catalogue.shrink_config(config)
    assert tiny["num_hidden_layers"] == 2 and tiny["layer_types"] == ["linear", "full"]
    assert tiny["first_k_dense_replace"] == 1  # layer 0 dense, layer 1 MoE
    assert tiny["per_layer_config"] == {"01": {"head_dim": 64}}
    assert (tiny["kv_lora_rank"], tiny["q_lora_rank"]) == (64, 64)
    assert tiny["qk_head_dim"] == tiny["qk_rope_head_dim"] + tiny["qk_nope_head_dim"] == 64
    assert tiny["head_dim"] == tiny["qk_rope_head_dim"]  # deepseek: the rope dim
    assert tiny["num_key_value_heads"] == tiny["num_attention_heads"] == 2  # MLA: every head
    mamba = catalogue.shrink_config({"hidden_size": 4096, "num_heads": 128, "head_dim": 64,
                                     "expand": 2, "n_groups": 8})
    assert mamba["num_heads"] * mamba["head_dim"] == mamba["expand"] * mamba["hidden_size"]
    assert mamba["num_heads"] % mamba["n_groups"] == 0
    unset = catalogue.shrink_config({"num_attention_heads": 32, "head_dim": None,
                                     "num_key_value_heads": None})
    assert unset["head_dim"] == 64 and unset["num_key_value_heads"] == 2


def test_build_only_records_built_and_build(extra_idioms: dict[str, Any]) -> None:
    """--build-only stops after eager ran; a model eager refuses is `build`, listed with its
    error; an HF model's record says when transformers' default config fails too."""
    built = sweep.measure(CASES["nn:lstm"], "fp32", build_only=True)
    assert built == {"model": "nn:lstm", "family": "nn-seq", "variant": "fp32",
                     "status": "built"}
    broken = catalogue.Case("nn:float64", "nn-seq", ("fp32",))
    extra_idioms["float64"] = ("nn-seq", ("fp32",), (Float64, lambda: (torch.ones(2, 3, 4),)))
    failed = sweep.measure(broken, "fp32", build_only=True)
    assert failed["status"] == "built"  # eager runs it: only the compiler refuses float64
    extra_idioms["float64"] = ("nn-seq", ("fp32",), (Float64, lambda: ("not a tensor",)))
    failed = sweep.measure(broken, "fp32", build_only=True)
    assert failed["status"] == "build" and "default_error" not in failed, failed
    text = sweep.build_failures([CASES["nn:lstm"], broken], [built, failed])
    assert text.splitlines()[0] == "built: fp32 1/2"
    assert "nn:float64 [fp32] build: " in text


@pytest.mark.parametrize("name", ["hf:deepseek_v3", "hf:olmo_hybrid"])
def test_hf_architectures_the_shrink_used_to_break_build(name: str) -> None:
    """MLA + grouped MoE after dense layers (deepseek_v3) and a hybrid whose first layers are
    all linear attention (olmo_hybrid): tiny, each kind of layer kept, eager runs."""
    pytest.importorskip("transformers")
    built = catalogue.build(CASES[name], "fp32")
    with torch.no_grad():
        assert torch.isfinite(built.module(*built.run)).all()
    config = built.module.model.config
    assert config.num_hidden_layers == 2 and config.hidden_size == 128
    if name == "hf:deepseek_v3":
        assert config.first_k_dense_replace == 1 and config.num_key_value_heads == 2
    else:
        assert len(set(config.layer_types)) == 2, config.layer_types


def test_staged_nets_shrink_consistently() -> None:
    """A staged net's widths and norm groups are divided by one power of two when a group
    count, per-stage heads or a channel list depends on them (the groups still divide every
    width, the stem's 3 input channels kept); per-block stage lists follow the depths; a Swin
    window divides the last stage's patch grid; expert counts are never raised; per-layer
    key/value heads keep their ratio; a sub-config's width of a sibling follows it."""
    bit = catalogue.shrink_config({"depths": [3, 4, 6, 3], "hidden_sizes": [256, 512, 1024, 2048],
                                   "embedding_size": 64, "num_groups": 32,
                                   "stem_channels": [3, 32, 48]})
    assert bit["hidden_sizes"] == [64, 128, 256, 512] and bit["stem_channels"] == [3, 8, 12]
    groups = bit["num_groups"]  # divides each width and bottleneck (width / 4) it divided
    assert all(w % groups == 0 for w in [*bit["hidden_sizes"], bit["embedding_size"]]), bit
    assert all(w // 4 % groups == 0 for w in bit["hidden_sizes"]), bit
    pvt = catalogue.shrink_config({"depths": [2, 2, 2, 2], "hidden_sizes": [64, 128, 320, 512],
                                   "num_attention_heads": [1, 2, 5, 8]})
    assert all(w % h == 0 for w, h in zip(pvt["hidden_sizes"], pvt["num_attention_heads"]))
    plain = catalogue.shrink_config({"depths": [3, 3], "hidden_sizes": [96, 768]})
    assert plain["hidden_sizes"] == [32, 64]  # nothing depends on them: capped per stage
    text = catalogue.shrink_config({"depths": [3, 2], "conv_layer_strides": [[1, 2, 1], [2, 1]],
                                    "image_size": [640, 640]})
    assert text["conv_layer_strides"] == [[1], [2]] and text["image_size"] == [64, 64]
    swin = catalogue.shrink_config({"depths": [2, 2, 6, 2], "image_size": 224, "patch_size": 4,
                                    "window_size": 7})
    grid = swin["image_size"] // swin["patch_size"] >> 3  # the last stage's grid
    assert grid % swin["window_size"] == 0 and swin["window_size"] > 1
    dense = catalogue.shrink_config({"num_experts": 1, "num_experts_per_tok": 1,
                                     "num_hidden_layers": 24, "num_attention_heads": 16,
                                     "num_key_value_heads_per_layer": [16] * 12 + [8] * 12})
    assert (dense["num_experts"], dense["num_experts_per_tok"]) == (1, 1)
    assert sorted(dense["num_key_value_heads_per_layer"]) == [1, 2]
    composite = catalogue.shrink_config({"audio_config": {"model_type": "a", "hidden_size": 512},
                                         "head_config": {"model_type": "h",
                                                         "audio_hidden_size": 512}})
    assert composite["head_config"]["audio_hidden_size"] == 128
    assert catalogue._merged({"a": {"b": 1, "c": 2}, "d": 3}, {"a": {"c": 4}}) == {
        "a": {"b": 1, "c": 4}, "d": 3}


class SamplesWithChannel(nn.Module):
    """A raw-audio model wanting [B, 1, samples], as fairseq-style encoders do."""

    main_input_name = "input_values"

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv1d(1, 4, 10, stride=5)

    def forward(self, input_values: torch.Tensor) -> torch.Tensor:
        return self.conv(input_values).transpose(1, 2)


class Features(nn.Module):
    """A speech encoder over [B, frames, 48] features, its argument not the main input."""

    main_input_name = "input_ids"

    def __init__(self) -> None:
        super().__init__()
        self.input_linear = nn.Linear(48, 8)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.input_linear(hidden_states)


class ImageOnly(nn.Conv2d):
    """A model named an audio one that runs on no audio shape."""

    main_input_name = "input_values"

    def __init__(self) -> None:
        super().__init__(3, 4, 3)


def test_signal_inputs_take_the_shape_the_model_runs_on() -> None:
    """Raw audio the model wants with a channel dim gets one; features get the width of the
    input linear layer under the forward's own argument name; a model refusing every shape
    raises the most likely shape's error (a `build` record, never a guess)."""
    config = types.SimpleNamespace()
    names, (audio,) = catalogue._signal_inputs(SamplesWithChannel(), config)
    assert names == ["input_values"] and audio.shape == (1, 1, catalogue.AUDIO_SAMPLES)
    names, (features,) = catalogue._signal_inputs(Features(), config)
    assert names == ["hidden_states"] and features.shape[-1] == 48
    with pytest.raises(RuntimeError, match="channels"):
        catalogue._signal_inputs(ImageOnly(), config)


@pytest.mark.parametrize("name", ["hf:bit", "hf:omniasr_ctc"])
def test_hf_architectures_the_shrink_and_inputs_used_to_break_build(name: str) -> None:
    """Group norm over stage widths (bit) and raw audio with a channel dim (omniasr_ctc)."""
    pytest.importorskip("transformers")
    built = catalogue.build(CASES[name], "fp32")
    with torch.no_grad():
        assert torch.isfinite(built.module(*built.run)).all()


def test_a_conv_net_whose_output_vanishes_is_given_fan_in_scaled_kernels() -> None:
    """PP-LCNet's init (std 0.02 whatever the fan-in) shrinks the signal ~30x a layer: the
    tiny net's fp32 logits were 1e-16 and its fp16 ones all zero (status `degenerate`)."""

    def net(std: float) -> torch.nn.Module:
        torch.manual_seed(0)
        layers = [torch.nn.Conv2d(16, 16, 3, padding=1, bias=False) for _ in range(8)]
        for conv in layers:
            torch.nn.init.normal_(conv.weight, std=std)
        return torch.nn.Sequential(*layers).eval()

    x = (torch.randn(1, 16, 8, 8),)
    fading = net(0.002)
    assert fading(*x).abs().max() < catalogue.VANISHING
    notes = catalogue._revive_vanishing_convolutions(fading, x)
    assert notes and "8 convolution weights redrawn" in notes[0]
    assert fading(*x).abs().max() > 1e-2
    healthy = net(0.2)
    before = healthy(*x)
    assert catalogue._revive_vanishing_convolutions(healthy, x) == []
    assert torch.equal(healthy(*x), before)  # a model whose output lives is left alone
