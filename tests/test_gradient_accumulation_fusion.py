"""mllama58: a run's stated weight-gradient accumulation fusion (``training.
gradient_accumulation_fusion``, the validation column of the same name). Megatron's
``--no-gradient-accumulation-fusion`` makes each linear's backward write a fresh bf16 gradient
that the DDP hook adds into the fp32 ``main_grad`` (alibaba/Megatron-LLaMA@d2e05b8
megatron/core/tensor_parallel/layers.py L308-L321, megatron/model/distributed.py L179-L188):
10 bytes an element, a kernel a tensor, every micro-batch."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import training_rows

from trainsim import run_config_from_dict, simulate
from trainsim.errors import ConfigError
from trainsim.validate.row_settings import training_base
from trainsim.validate.training import predict_training_row
from trainsim.workload import megatron_fsdp
from trainsim.workload.grad_accumulation import FP32_GRAD_ADD, fp32_grad_accumulation
from trainsim.workload.shard import wgrad_accumulates
from trainsim.workload.sharding import _grad_tensors
from trainsim.workload.wgrad_fusion import unfused_grad_accumulation

FILE = Path(__file__).resolve().parents[1] / "benchmarks" / "training_megatron_llama.csv"


def _cfg(fusion=None, framework="megatron-lm", version="2023-05", zero=None, overlap=False,
         gbs=64, old=False, **training):
    parallel = {"tp": 2, "pp": 1, "sequence_parallel": True, "distributed_optimizer": True,
                "overlap_grad_reduce": overlap, "overlap_param_gather": False}
    if zero is not None:
        parallel = {"tp": 2, "pp": 1, "sequence_parallel": True, "zero_stage": zero}
    if old:  # Megatron-LM of 2021 (DeepSpeed): no sequence parallelism, distributed optimizer
        parallel = {"tp": 2, "pp": 1}
    t = {"global_batch_size": gbs, "micro_batch_size": 2, "seq_length": 2048, "dtype": "bf16",
         "attention": "flash1", "framework": framework, "framework_version": version, **training}
    if fusion is not None:
        t["gradient_accumulation_fusion"] = fusion
    return run_config_from_dict({
        "model": "llama2-7b", "parallel": parallel, "training": t,
        "cluster": {"gpu": "a100-sxm-80gb", "num_gpus": 16, "gpus_per_node": 8,
                    "nic_gbit_s_per_gpu": 100}})


def test_stated_off_adds_main_grad_every_backward():
    """Megatron-LM of 2023 fuses by default (nothing added, the wgrad GEMM accumulates into
    the 4-byte main_grad); stated off, each backward adds every weight gradient into fp32:
    read 2 + 4, write 4 bytes an element, one kernel a tensor, the GEMM writing bf16."""
    layers = range(32)
    on, off = _cfg(), _cfg(False)
    assert fp32_grad_accumulation(on, layers, True, True) == []
    assert wgrad_accumulates(on) == 4 and wgrad_accumulates(off) == 0
    (op,) = fp32_grad_accumulation(off, layers, True, True)
    tensors = _grad_tensors(off, layers, True, True)
    assert op.name == FP32_GRAD_ADD and op.kernels == len(tensors)
    assert op.bytes == pytest.approx(10.0 * sum(tensors))
    assert unfused_grad_accumulation(_cfg(True)) == "none" == unfused_grad_accumulation(on)


def test_off_costs_the_adds_of_every_micro_batch():
    """More micro-batches, more adds: unfused, the iteration grows with the micro-batches by
    at least the adds' memory traffic at the HBM's bandwidth (7B / TP 2 x 10 bytes)."""
    def gap(gbs):
        return simulate(_cfg(False, gbs=gbs)).iteration_time_s - \
            simulate(_cfg(gbs=gbs)).iteration_time_s
    cfg = _cfg(False)
    elements = sum(_grad_tensors(cfg, range(32), True, True))
    floor = 10.0 * elements / cfg.cluster.gpu.hbm_bw_Bps
    few, many = gap(32), gap(64)  # 2 and 4 micro-batches a rank
    assert few > 0 and many > few
    assert many - few >= 2 * floor * 0.8  # two more adds, priced near the HBM roofline


def test_refused_where_it_cannot_be():
    """On a release before the fusion (Megatron-LM 2021), on DeepSpeed's engine and without a
    framework the stated switch is refused, naming the field."""
    with pytest.raises(ConfigError, match="gradient_accumulation_fusion=true.*no gradient"):
        _cfg(True, version="2021-06", old=True)
    _cfg(False, version="2021-06", old=True)  # off is what it ran anyway
    with pytest.raises(ConfigError, match="gradient_accumulation_fusion is Megatron's"):
        _cfg(False, framework="deepspeed", version="2023-09", old=True)
    with pytest.raises(ConfigError, match="needs training.framework"):
        run_config_from_dict({"model": "llama2-7b", "training": {
            "gradient_accumulation_fusion": False}, "cluster": {"gpu": "a100-sxm-80gb",
                                                                "num_gpus": 8}})


def test_megatron_llama_overlapped_optimizer_copies_instead():
    """Megatron-LLaMA's overlapped optimizer turns the fusion off itself (arguments.py
    L187-189) and copies each gradient into its bucket (priced as the copy-in): no main_grad
    add, no accumulating GEMM, whatever the row states; its DistributedOptimizer adds."""
    for fusion in (None, False, True):
        odo = _cfg(fusion, framework="megatron-llama", version="2023-09", overlap=True)
        assert unfused_grad_accumulation(odo) == "optimizer"
        assert wgrad_accumulates(odo) == 0
        assert fp32_grad_accumulation(odo, range(32), True, True) == []
    do = _cfg(False, framework="megatron-llama", version="2023-09")
    assert [o.name for o in fp32_grad_accumulation(do, range(32), True, True)] == [FP32_GRAD_ADD]


def test_megatron_fsdp_reads_the_stated_switch():
    """Megatron-FSDP copies its unfused gradients into the unit's bucket where the run states
    the fusion off, and not where it states it on, whatever the recipe's default."""
    base = {"framework": "megatron-core", "version": "0.12.0", "zero": 3}
    assert megatron_fsdp.applies(_cfg(False, **base))
    assert not megatron_fsdp.applies(_cfg(True, **base))
    assert not megatron_fsdp.applies(_cfg(**base))  # megatron-core's recipes fuse


def test_rows_state_the_script_flag():
    """Every Megatron-LLaMA row states the script's --no-gradient-accumulation-fusion (the
    DeepSpeed baseline leaves the cell empty), read into the training section."""
    rows = training_rows(FILE)
    for r in rows:
        want = "0" if r["framework"] == "megatron-llama" else ""
        assert r["gradient_accumulation_fusion"] == want, r["id"]
        raw, _ = training_base(r)
        assert raw["training"].get("gradient_accumulation_fusion") == (want or None)


def test_distributed_optimizer_rows_pay_the_adds():
    """The DistributedOptimizer rows (4 and 2 micro-batches a rank) price the adds: slower
    than with the fusion, by more at 256 GPUs than at 512; the measured times are slower
    still (the rows under-predict: RESULTS mllama58)."""
    rows = {r["id"]: r for r in training_rows(FILE)}
    gaps = {}
    for gpus in (256, 512):
        row = rows[f"mllama2309-llama-13b-a100-{gpus}-do"]
        off = predict_training_row(row)
        fused = predict_training_row({**row, "gradient_accumulation_fusion": ""})
        gaps[gpus] = off.predicted - fused.predicted
        assert fused.predicted < off.predicted < off.measured
    assert gaps[256] > gaps[512] > 0


def test_shared_chunks_tell_the_two_optimizers_apart():
    """A tuned row's candidates share priced chunks by ``memo.chunk_key``, which leaves the
    overlap switches out: under Megatron-LLaMA the overlap picks the optimizer (the
    DistributedOptimizer adds into main_grad in its chunks, the overlapped one copies into
    buckets on its side stream), so each simulates inside the shared block as alone."""
    from trainsim.memo import chunks_shared

    do = _cfg(False, framework="megatron-llama", version="2023-09")
    odo = _cfg(False, framework="megatron-llama", version="2023-09", overlap=True)
    alone = [simulate(c).iteration_time_s for c in (do, odo)]
    with chunks_shared():
        shared = [simulate(c).iteration_time_s for c in (do, odo)]
    with chunks_shared():
        shared_rev = [simulate(c).iteration_time_s for c in (odo, do)][::-1]
    assert shared == alone == shared_rev
