"""A weight-gradient GEMM that accumulates into Megatron's ``main_grad`` (gradient
accumulation fusion: Transformer Engine's ``fuse_wgrad_accumulation``) reads and writes that
buffer in its epilogue: priced as traffic (``Gemm.accumulate_bytes``,
``workload.shard.wgrad_accumulates``). An expert's wgrad with a few hundred rows is bound by
it; a dense layer's wgrad (k = the micro-batch's tokens) is not."""

from __future__ import annotations

import csv
from dataclasses import replace
from pathlib import Path

from trainsim.catalog import gpu as get_gpu
from trainsim.compute.roofline import RooflineModel
from trainsim.validate.training import row_config
from trainsim.workload.layers import backward_of
from trainsim.workload.ops import Gemm
from trainsim.workload.shard import shard_of, wgrad_accumulates

ROOT = Path(__file__).resolve().parents[1]
ZOO = ROOT / "benchmarks" / "training_moe_modelzoo.csv"
EP8 = "mzoo2505-qwen3-235b-a22b-h100-256-tp4pp8vpp4ep8"


def _zoo_config():
    row = next(r for r in csv.DictReader(ZOO.open()) if r["id"] == EP8)
    return row_config(row)


def test_accumulating_output_is_read_and_written_in_the_buffer_dtype():
    plain = Gemm("x.wgrad", 3072, 4096, 512, batch=16)
    fp32 = replace(plain, accumulate_bytes=4)
    assert fp32.bytes - plain.bytes == 16 * 3072 * 4096 * (8 - 2)
    assert replace(plain, accumulate_bytes=2).bytes - plain.bytes == 16 * 3072 * 4096 * 2


def test_megatron_ddp_accumulates_in_its_grad_dtype_others_do_not():
    cfg = _zoo_config()
    assert cfg.parallel.data_parallel_impl == "megatron" and cfg.training.grad_reduce_in_fp32
    assert wgrad_accumulates(cfg) == 4
    assert shard_of(cfg).main_grad_bytes == 4
    bf16 = replace(cfg, training=replace(cfg.training, grad_reduce_in_fp32=False))
    assert wgrad_accumulates(bf16) == 2
    # one stage: DeepSpeed's pipeline engine runs no interleaving (TrainSchedule)
    deepspeed = replace(cfg, parallel=replace(
        cfg.parallel, data_parallel_impl="deepspeed", pipeline_model_parallel_size=1,
        pipeline_model_parallel_layout=None, virtual_pipeline_model_parallel_size=None))
    assert wgrad_accumulates(deepspeed) == 0
    zero3 = replace(cfg, parallel=replace(cfg.parallel, zero_stage=3))
    assert wgrad_accumulates(zero3) == 0


def test_only_the_wgrad_accumulates_and_only_small_k_feels_it():
    sh = replace(shard_of(_zoo_config()), main_grad_bytes=4)
    experts = Gemm("expert_fc1", 512, 3072, 4096, batch=16, grouped="multi_stream", ragged=True)
    dense = Gemm("fc1", 4096, 3072, 4096)
    bwd = {op.name: op for op in backward_of([experts, dense], sh) if isinstance(op, Gemm)}
    assert bwd["expert_fc1.wgrad"].accumulate_bytes == 4
    assert bwd["expert_fc1.dgrad"].accumulate_bytes == 0
    model = RooflineModel(get_gpu("h100-sxm-80gb"))
    slow = model.time(bwd["expert_fc1.wgrad"])
    fresh = model.time(replace(bwd["expert_fc1.wgrad"], accumulate_bytes=0))
    assert slow > 1.2 * fresh  # 512 rows an expert: bound by the fp32 read and write
    assert model.time(bwd["fc1.wgrad"]) == model.time(replace(bwd["fc1.wgrad"],
                                                               accumulate_bytes=0))


def test_megatron_lm_fusing_into_fp32_only_accumulates_there():
    """Megatron-LM from 2022-02-13 (unfused_grad_accumulation 16bit) fuses the wgrad into an
    fp32 main_grad and adds 16-bit gradients apart: its GEMM accumulates in the former case
    only, as workload.grad_accumulation adds a kernel in the latter only; before it ("all")
    never."""
    cfg = _zoo_config()
    fused = {"framework": "megatron-lm", "framework_version": "2022-03"}
    fp32 = replace(cfg, training=replace(cfg.training, grad_reduce_in_fp32=True, **fused))
    bf16 = replace(cfg, training=replace(cfg.training, grad_reduce_in_fp32=False, **fused))
    assert wgrad_accumulates(fp32) == 4 and wgrad_accumulates(bf16) == 0
    old = replace(fp32, training=replace(fp32.training, framework_version="2021-09"))
    assert wgrad_accumulates(old) == 0
