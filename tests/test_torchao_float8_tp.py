"""torchtitan's float8 tensor parallelism runs torchao's Float8ColwiseParallel,
Float8RowwiseParallel and PrepareFloat8ModuleInput (torchao/float8/float8_tensor_parallel.py
@ 986019488 and 624304080): the attention and feed-forward inputs are cast to fp8 on the
rank's sequence shard and all-gathered in fp8 once for all their projections, eager or
compiled; every tensorwise (current) cast of a TP-sharded DTensor reduces its amax over TP.

The slice: a Llama-like block, h 4096, ffn 14336 (SwiGLU), 32 heads, 8 KV heads, TP 8 with
SP, one sequence of 8192 tokens: 1024 rows per rank before the gather, 8192 after."""

from __future__ import annotations

import pytest
from helpers import layer_ops

from trainsim.catalog import gpu
from trainsim.config import ClusterConfig, ModelConfig, ParallelConfig, RunConfig, TrainingConfig

H, F, T, TP = 4096, 14336, 8192, 8
LOCAL = T // TP
PROJECTIONS = ("q_proj", "k_proj", "v_proj", "out_proj", "gate_proj", "up_proj", "fc2")


def _cfg(compile_: bool = True, version: str = "2025-06") -> RunConfig:
    model = ModelConfig(name="m", hidden_size=H, num_layers=8, num_attention_heads=32,
                        num_kv_heads=8, ffn_hidden_size=F, activation="swiglu",
                        normalization="rmsnorm", position_embedding="rope", vocab_size=32768)
    training = TrainingConfig(global_batch_size=8, micro_batch_size=1, seq_length=T,
                              dtype="fp8", fp8_recipe="current", framework="torchtitan",
                              framework_version=version, compile=compile_, modules="eager")
    parallel = ParallelConfig(tensor_model_parallel_size=TP, sequence_parallel=True)
    cluster = ClusterConfig(gpu=gpu("h100-sxm-80gb"), num_gpus=8, gpus_per_node=8)
    return RunConfig(model=model, parallel=parallel, training=training, cluster=cluster)


@pytest.mark.parametrize("compile_", [False, True])
def test_module_input_is_cast_once_on_the_sequence_shard_then_gathered_in_fp8(compile_):
    """PrepareFloat8ModuleInput casts before the Shard(1) -> Replicate redistribute: one cast
    of 1024 x 4096 elements (read 2 bytes for the amax, read 2 and write 1 for the cast), the
    gather moves 8192 x 4096 bytes, and wk/wv (w3) find their input already in fp8."""
    fwd, _ = layer_ops(_cfg(compile_))
    for first, siblings in (("q_proj", ("k_proj", "v_proj")), ("gate_proj", ("up_proj",))):
        assert fwd[f"{first}.fp8_cast"].bytes == LOCAL * H * (2 + 2 + 1)
        assert f"{first}.cast_transpose" not in fwd
        for s in siblings:
            assert not [n for n in fwd if n.startswith(f"{s}.") and "cast" in n]
    assert fwd["attn.all_gather"].bytes == T * H
    assert fwd["mlp.all_gather"].bytes == T * H


def test_every_cast_of_a_tp_sharded_tensor_all_reduces_its_amax():
    """Per layer and micro-batch: four forward casts (the two gathered inputs, wo's and w2's
    Shard(-1) inputs) and seven gradient casts (one per projection's output gradient), each an
    all-reduce of one fp32 amax over TP that the stream waits on."""
    fwd, bwd = layer_ops(_cfg())
    amax = [op for op in [*fwd.values(), *bwd] if "amax_all_reduce" in op.name]
    assert sorted(op.name for op in amax) == sorted(
        [f"{p}.amax_all_reduce" for p in ("q_proj", "out_proj", "gate_proj", "fc2")]
        + [f"{p}.grad_amax_all_reduce" for p in PROJECTIONS])
    assert all(op.kind == "all_reduce" and op.group == "tp" and op.bytes == 4 and op.waited
               for op in amax)


def test_row_parallel_input_keeps_its_local_cast_after_the_amax():
    """wo reads its own 8192 x 512 shard: amax all-reduce, then the cast (and its transpose)
    of that shard, read 2 + 2 bytes and write 1 + 1 per element."""
    fwd, _ = layer_ops(_cfg())
    names = list(fwd)
    assert names.index("out_proj.amax_all_reduce") + 1 == names.index("out_proj.cast_transpose")
    assert fwd["out_proj.cast_transpose"].bytes == T * (H // TP) * (2 + 2 + 2)


@pytest.mark.parametrize("compile_, transposed", [
    (False, ("q_proj", "k_proj", "v_proj", "gate_proj", "up_proj")),
    (True, ("q_proj", "gate_proj"))])
def test_gathered_input_is_transposed_for_each_wgrad_unless_compiled(compile_, transposed):
    """Each wgrad's ``preprocess_addmm`` copies the gathered fp8 input to column-major (read 1,
    write 1 byte on 8192 x 4096); compiled, the identical copies of siblings are one."""
    _, bwd = layer_ops(_cfg(compile_))
    got = {op.name.split(".")[0]: op.bytes for op in bwd if op.name.endswith("input_fp8_transpose")}
    assert got == {p: T * H * 2 for p in transposed}


def test_row_parallel_output_gradient_is_cast_on_its_shard_and_gathered_in_fp8():
    _, bwd = layer_ops(_cfg())
    by = {op.name: op for op in bwd}
    for p, region in (("out_proj", "attn"), ("fc2", "mlp")):
        assert by[f"{p}.grad_fp8_cast"].bytes == LOCAL * H * (2 + 2 + 1)
        assert by[f"{region}.reduce_scatter.bwd"].bytes == T * H


def test_before_float8_tp_styles_the_gathered_rows_are_cast_per_projection():
    """torchtitan before 2024-07 had no float8 TP styles: each projection casts the gathered
    16-bit rows (eager), with no TP amax reduction."""
    fwd, bwd = layer_ops(_cfg(compile_=False, version="2024-04"))
    for p in ("q_proj", "k_proj", "v_proj"):
        assert fwd[f"{p}.cast_transpose"].bytes == T * H * (2 + 2 + 2)
    assert not [op for op in [*fwd.values(), *bwd] if "amax" in op.name]


def test_each_dgrad_copies_its_fp8_weight_to_column_major():
    """grad_input = mm(grad_output, weight_t.t()) hands _scaled_mm the (out, in) row-major fp8
    weight, which preprocess_addmm copies (read 1, write 1 byte per local weight element):
    wq 512 x 4096, wk 128 x 4096, wo 4096 x 512, w1 1792 x 4096, w2 4096 x 1792."""
    _, bwd = layer_ops(_cfg())
    got = {op.name: op.bytes for op in bwd if op.name.endswith("weight_fp8_transpose")}
    local = {"q_proj": H // TP * H, "k_proj": 1024 // TP * H, "v_proj": 1024 // TP * H,
             "out_proj": H * (H // TP), "gate_proj": F // TP * H, "up_proj": F // TP * H,
             "fc2": H * (F // TP)}
    assert got == {f"{p}.weight_fp8_transpose": n * 2 for p, n in local.items()}
    names = [op.name for op in bwd]
    assert names.index("fc2.weight_fp8_transpose") < names.index("fc2.dgrad")


def test_transformer_engine_keeps_no_weight_copy():
    """Transformer Engine's fp8 weights carry their own transpose (no copy per dgrad)."""
    cfg = _cfg()
    te = RunConfig(model=cfg.model, parallel=cfg.parallel, cluster=cfg.cluster,
                   training=TrainingConfig(global_batch_size=8, micro_batch_size=1,
                                           seq_length=T, dtype="fp8", fp8_recipe="current",
                                           framework="megatron-lm"))
    _, bwd = layer_ops(te)
    assert not [op for op in bwd if "weight_fp8_transpose" in op.name]
