"""Plain PyTorch around Hugging Face models (issue 24, scopes 4 and 5): eager modules, separate
projections, autocast's weight casts, SDPA's kernel by torch release, and whole HF layers
measured on an H100 (``layers_h100_measured.jsonl``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from trainsim import run_config_from_dict
from trainsim.cli import main
from trainsim.validate import BUNDLED_DIR
from trainsim.workload.elementwise import IMPLEMENTATIONS, backward_bytes, norm_op
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.ops import Elementwise, Gemm
from trainsim.workload.shard import shard_of

LAYERS = BUNDLED_DIR / "layers_h100_measured.jsonl"


def cfg(framework="pytorch", version=None, gpu="h100-sxm-80gb", **training):
    t = {"global_batch_size": 4, "micro_batch_size": 1, "seq_length": 2048,
         "framework": framework, **training}
    if version:
        t["framework_version"] = version
    return run_config_from_dict({"model": "llama3-8b", "parallel": {"tp": 1}, "training": t,
                                 "cluster": {"gpu": gpu, "num_gpus": 4, "gpus_per_node": 8}})


def test_sdpa_runs_cudnn_on_hopper_from_torch_2_11():
    """torch 2.11 bundles a cuDNN above check_prefer_cudnn_attention's threshold: SDPA runs
    cuDNN's fused attention on sm90; earlier releases ran the flash backend; an A100 has no
    cuDNN preference."""
    assert cfg(version="2.11", attention="sdpa").training.attention == "cudnn"
    assert cfg(version="2.5", attention="sdpa").training.attention == "sdpa"
    assert cfg(version="2.11", attention="sdpa", gpu="a100-sxm-80gb").training.attention == "sdpa"


def test_pytorch_runs_hugging_face_modules():
    """The pytorch profile runs the models' own eager modules: HF's LlamaRMSNorm (8 kernels,
    9x a fused norm's bytes), separate q/k/v and gate/up projections, the loss on fp32
    logits, and autocast's per-matmul weight casts; Megatron runs none of these."""
    c = cfg()
    sh = shard_of(c)
    assert sh.eager and sh.split_projections and sh.autocast
    ops = layer_forward(c, sh)
    names = [op.name for op in ops]
    assert {"q_proj", "k_proj", "v_proj", "gate_proj", "up_proj"} <= set(names)
    norm = next(op for op in ops if op.name == "attn_norm")
    assert norm.impl == "eager" and norm.kernels == 8
    casts = [op for op in ops if op.name.endswith("autocast_weight")]
    assert len(casts) == sum(isinstance(op, Gemm) for op in ops)
    mega = layer_forward(cfg("megatron-core"), shard_of(cfg("megatron-core")))
    assert "qkv_proj" in [op.name for op in mega]
    assert not any(isinstance(op, Elementwise) and op.impl == "eager" for op in mega)


def test_compile_fuses_modules_but_keeps_projections():
    c = cfg(compile=True)
    sh = shard_of(c)
    assert not sh.eager and sh.split_projections
    ops = layer_forward(c, sh)
    # Llama 3 8B's 4096-wide rows exceed Inductor's persistent reduction: its norms loop twice
    assert all(op.impl == ("two_pass" if op.name.endswith("_norm") else "fused")
               for op in ops if isinstance(op, Elementwise))
    assert "k_proj" in [op.name for op in ops]


def _norm_bytes(c, name="attn_norm"):
    sh = shard_of(c)
    return next(op for op in layer_forward(c, sh) if op.name == name), sh.tokens


def test_norm_bytes_follow_each_frameworks_kernel():
    """Bytes per element of each framework's forward norm over bf16 rows, as its source runs it:
    Transformer Engine's tuned kernel and apex contrib's FastLayerNorm hold the row in registers
    (read 2, write 2: 4); torch's F.layer_norm (llm-foundry's LPLayerNorm) and apex's /
    Megatron's MixedFusedLayerNorm read the row for its statistics, then again to write y (6); HF's eager LlamaRMSNorm, 8 kernels
    (36); a compiled norm over rows longer than 1024, Inductor's looped reduction (6)."""
    def per_element(c, name="attn_norm"):
        op, tokens = _norm_bytes(c, name)
        return op.bytes / (tokens * c.model.hidden_size)

    def run(framework, version=None, model="gpt3-175b", **training):
        t = {"global_batch_size": 8, "micro_batch_size": 1, "seq_length": 2048,
             "framework": framework, "dtype": "bf16", **training}
        if version:
            t["framework_version"] = version
        return run_config_from_dict({"model": model, "parallel": {"tp": 8}, "training": t,
                                     "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8,
                                                 "gpus_per_node": 8}})
    assert per_element(run("megatron-core", "0.10")) == pytest.approx(4)
    assert per_element(run("megatron-lm", "2022-05")) == pytest.approx(4)  # FastLayerNorm
    for apex in (run("megatron-lm", "2021-04"), run("megatron-deepspeed", "2022-02"),
                 run("deepspeed", "2021-03")):  # two passes of one 16-bit load per thread
        assert per_element(apex) == pytest.approx(6)
        assert _norm_bytes(apex)[0].impl == "scalar_two_pass"
    assert per_element(run("llm-foundry", "2024-01")) == pytest.approx(6)
    assert per_element(run("llm-foundry", "2024-01"), "mlp_norm") == pytest.approx(6)
    # nn.LayerNorm under autocast: torch DDP's fp32 residual stream, read twice, written once
    assert per_element(run("pytorch")) == pytest.approx(12)
    # Llama 3 8B under torch DDP's autocast, fp32 rows: LlamaRMSNorm's 8 kernels, then compiled
    assert per_element(cfg()) == pytest.approx((4 + 4) + 8 + 4 + 8 + (4 + 4) + 2 * 4)
    assert per_element(cfg(compile=True)) == pytest.approx(3 * 4)
    # their backward is the library's one backward kernel, sized as the fused norm's
    op, _ = _norm_bytes(run("llm-foundry", "2024-01"))
    assert backward_bytes(op) == (pytest.approx(op.bytes), 1)


def test_torchtitan_runs_its_own_eager_modules_until_compiled():
    """torchtitan's Llama: eager RMSNorm, complex RoPE and SwiGLU, separate projections, no
    autocast (FSDP2 casts the parameters); compile.enable fuses the modules and is faster."""
    from trainsim.simulator import simulate
    eager, compiled = cfg("torchtitan", "2024-12"), cfg("torchtitan", "2024-12", compile=True)
    sh = shard_of(eager)
    assert sh.eager and sh.split_projections and not sh.autocast
    assert not shard_of(compiled).eager
    assert simulate(compiled).iteration_time_s < simulate(eager).iteration_time_s


def test_split_projections_sum_their_input_gradients():
    """k_proj and v_proj read q_proj's input, up_proj gate_proj's: autograd adds each extra
    input gradient (one add kernel each: three 16-bit tensors of the input's size)."""
    c = cfg(compile=True)
    sh = shard_of(c)
    bwd = backward_of(layer_forward(c, sh), sh)
    sums = [op for op in bwd if op.name.endswith("grad_sum")]
    assert sorted(op.name for op in sums) == ["k_proj.grad_sum", "up_proj.grad_sum",
                                              "v_proj.grad_sum"]
    assert all(op.bytes == 3 * 2 * sh.tokens * c.model.hidden_size for op in sums)


def test_eager_rmsnorm_backward_counts_its_kernels():
    """HF LlamaRMSNorm's backward moves 68 B per element in 16 kernels (36 and 8 forward):
    more than the generic 1.5x of the forward."""
    n = 1e6
    fwd = norm_op("n", "rmsnorm", n, "eager")
    assert fwd.bytes == pytest.approx(36 * n)
    nbytes, kernels = backward_bytes(fwd)
    assert nbytes == pytest.approx(68 * n) and kernels == 16
    fused = norm_op("n", "rmsnorm", n, "fused")
    assert backward_bytes(fused) == (pytest.approx(1.5 * fused.bytes), 1)
    assert ("rmsnorm", "eager") in IMPLEMENTATIONS


def _kernels(ops, name):
    return next(op.kernels for op in ops if op.name == name)


def test_eager_layer_counts_each_pytorch_op():
    """An eager layer launches what its PyTorch code dispatches: HF's rotate-half RoPE five
    kernels per call, called for Q and for K (14 in the backward), torchtitan's complex RoPE
    three per call (8 back); SwiGLU's backward three kernels on separate gate/up outputs, four
    on one fused fc1's chunk halves (the cat); compiled or fused modules stay one kernel."""
    for c, rope in ((cfg(), (10, 14)), (cfg("torchtitan", "2024-12"), (6, 8))):
        sh = shard_of(c)
        fwd = layer_forward(c, sh)
        bwd = backward_of(fwd, sh)
        assert (_kernels(fwd, "rope"), _kernels(bwd, "rope.bwd")) == rope
        assert (_kernels(fwd, "swiglu"), _kernels(bwd, "swiglu.bwd")) == (2, 3)
        assert _kernels(bwd, "attn_norm.bwd") == 16
    from trainsim.workload.elementwise import activation_op
    chunked = activation_op(True, 1e6, eager=True, fused_fc1=True)
    assert chunked.impl == "eager_chunked" and backward_bytes(chunked)[1] == 4
    c = cfg("torchtitan", "2024-12", compile=True)
    sh = shard_of(c)
    bwd = backward_of(layer_forward(c, sh), sh)
    assert _kernels(bwd, "rope.bwd") == 1 and _kernels(bwd, "swiglu.bwd") == 1


@pytest.mark.skipif(not LAYERS.exists(), reason="layers file not bundled")
def test_hugging_face_layers_within_ten_percent():
    """Acceptance 3 of issue 24 (time): the 33 HF layers measured on an H100, forward plus
    backward, each predicted from the pytorch profile; MAPE within 10 %."""
    r = CliRunner().invoke(main, ["validate", str(LAYERS), "--format", "json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["summary"]["n"] == 33 and out["summary"]["failed"] == 0
    assert out["summary"]["mape"] < 0.10
    dense = [row for row in out["rows"] if "a3b" not in row["id"]]
    assert max(row["ape"] for row in dense) < 0.15
    # activation bytes as autograd saves them in HF's modules (memory/hf.py); the per-token
    # counts were checked on these same records, so this guards them rather than tests them
    assert max(row["memory_ape"] for row in dense) < 0.02


def test_eager_layers_keep_more_than_compiled_ones():
    """Eager LlamaRMSNorm keeps an fp32 copy of its input; Inductor recomputes it."""
    from trainsim.memory.estimate import activation_bytes_per_layer

    eager, compiled = cfg(), cfg(compile=True)
    assert activation_bytes_per_layer(eager) > 1.3 * activation_bytes_per_layer(compiled)
    mega = cfg("megatron-core")
    assert activation_bytes_per_layer(mega) < activation_bytes_per_layer(eager)


def test_layers_file_is_told_by_its_records(tmp_path):
    from trainsim.validate.layers import is_layers_file

    p = tmp_path / "x.jsonl"
    p.write_text('{"kind": "layer"}\n')
    assert is_layers_file(p) and not is_layers_file(Path(__file__))


def test_plain_loop_optimizer_step_has_no_master_copy():
    """fp32 parameters step in place: fused AdamW (28 B per parameter) and the gradient
    clipping's read and scale (12); no master-to-16-bit copy, no gradient-buffer zeroing."""
    from trainsim.workload.elementwise import OPTIMIZER_BYTES_PER_PARAM, optimizer_step

    assert optimizer_step(1.0, "adam", master_weights=False).bytes == 28 + 12
    assert optimizer_step(1.0, "adam").bytes == OPTIMIZER_BYTES_PER_PARAM["adam"] == 50


def test_qwen3_normalizes_queries_and_keys():
    """Qwen3's attention norms q and k per head (modeling_qwen3 q_norm/k_norm, Megatron
    --qk-layernorm): one more norm in the layer, and its 16-bit input kept for the backward."""
    from dataclasses import replace

    from trainsim.memory.estimate import activation_bytes_per_layer

    c = run_config_from_dict({"model": "qwen3-30b-a3b", "parallel": {"ep": 8},
                              "training": {"global_batch_size": 8, "seq_length": 4096},
                              "cluster": {"node": "dgx-h100", "num_gpus": 8}})
    assert c.model.qk_layernorm
    names = [op.name for op in layer_forward(c, shard_of(c), moe=True)]
    assert "qk_norm" in names
    plain = replace(c, model=replace(c.model, qk_layernorm=False))
    assert "qk_norm" not in [op.name for op in layer_forward(plain, shard_of(plain), moe=True)]
    extra = activation_bytes_per_layer(c, moe=True) - activation_bytes_per_layer(plain, moe=True)
    assert extra == pytest.approx(4096 * 2 * (c.model.q_size + c.model.kv_size))
