"""Model state per data-parallel implementation, against hand calculations from each
framework's source, and what the allocator and driver add (issue 16, acceptance 3)."""

from __future__ import annotations

import pytest

import trainsim
from trainsim.memory import estimate_stage_memory
from trainsim.memory.allocator import (
    CUDA_CONTEXT_BYTES,
    NCCL_GROUP_COMM_BYTES,
    NCCL_PAIR_COMM_BYTES,
)
from trainsim.memory.estimate import activation_bytes_per_layer
from trainsim.memory.params import stage_params
from trainsim.memory.state import model_state
from trainsim.model.counts import layer_params


def cfg_of(*, impl="megatron", zero=0, do=False, dp=8, tp=1, pp=1, dtype="bf16",
           fp32_grads=True, gpu="h100-sxm-80gb", fp8_param_gather=False, recipe="delayed",
           expandable=False, recompute="none", recompute_num_layers=None, b=1):
    return trainsim.run_config_from_dict({
        "model": {"preset": "llama3-8b"},
        "parallel": {"tp": tp, "pp": pp, "zero_stage": zero, "distributed_optimizer": do,
                     "data_parallel_impl": impl, "recompute": recompute,
                     "recompute_num_layers": recompute_num_layers},
        "training": {"global_batch_size": 8 * dp * b, "micro_batch_size": b, "seq_length": 4096,
                     "dtype": dtype, "grad_reduce_in_fp32": fp32_grads, "fp8_recipe": recipe,
                     "fp8_param_gather": fp8_param_gather, "expandable_segments": expandable},
        "cluster": {"gpu": gpu, "num_gpus": tp * pp * dp, "gpus_per_node": 8},
    })


def persistent(cfg):
    s = model_state(cfg, 0)
    return s.weights + s.gradients + s.optimizer


@pytest.mark.parametrize("dp", [2, 8, 64])
def test_megatron_distributed_optimizer_is_6_plus_12_over_d(dp):
    """Megatron-LM docs/source/api-guide/dist_optimizer.md: bf16 parameters with fp32
    gradients take 6 + 12/d bytes per parameter under the distributed optimizer (bf16 param
    buffer 2, fp32 grad buffer 4, fp32 main parameter and two moments sharded)."""
    cfg = cfg_of(do=True, dp=dp)
    assert persistent(cfg) == pytest.approx(stage_params(cfg, 0) * (6 + 12 / dp), rel=1e-12)


def test_megatron_ddp_without_distributed_optimizer_is_18_bytes():
    """Same table: 18 bytes per parameter without the distributed optimizer; 16-bit gradients
    save 2 and need an fp32 main-gradient copy at the step."""
    cfg = cfg_of()
    assert persistent(cfg) == pytest.approx(18 * stage_params(cfg, 0), rel=1e-12)
    half = cfg_of(fp32_grads=False)
    assert persistent(half) == pytest.approx(16 * stage_params(half, 0), rel=1e-12)
    assert dict(model_state(half, 0).step)["fp32 main gradients"] == \
        pytest.approx(4 * stage_params(half, 0))


def test_deepspeed_zero1_fp16_layout():
    """DeepSpeed v0.5.10-v0.6.0 stage_1_and_2.py with fp16: flat fp16 parameters 2P, full fp16
    gradients 2P until the boundary, fp32 master and Adam moments 12P/dp; at the step a flat
    fp16 partition 2P/dp and its fp32 cast 4P/dp, and the boundary bucket of
    reduce_bucket_size (5e8) fp16 elements."""
    dp = 8
    cfg = cfg_of(impl="deepspeed", zero=1, dp=dp, dtype="fp16", fp32_grads=False)
    P = stage_params(cfg, 0)
    s = model_state(cfg, 0)
    assert (s.weights, s.gradients, s.optimizer) == pytest.approx((2 * P, 2 * P, 12 * P / dp))
    step = dict(s.step)
    assert step["fp32 gradient partition"] == pytest.approx(4 * P / dp)
    assert step["flat 16-bit gradient partition"] == pytest.approx(2 * P / dp)
    assert step["reduce bucket"] == pytest.approx(2 * 5e8)
    zero2 = model_state(cfg_of(impl="deepspeed", zero=2, dp=dp, dtype="fp16"), 0)
    assert zero2.gradients == pytest.approx(2 * P / dp)  # stage 2 keeps its partition only
    assert dict(zero2.persistent)["reduce bucket"] == pytest.approx(2 * 5e8)


@pytest.mark.parametrize("impl", ["fsdp1", "fsdp2"])
def test_fsdp_keeps_16_bytes_per_parameter_over_d(impl):
    """PyTorch FSDP (FULL_SHARD) with mixed precision: fp32 parameter shard 4, fp32 gradient
    shard 4, Adam moments 8, all over d; one layer gathered in 16 bits for its compute plus
    the prefetched one, and its unsharded gradient."""
    dp = 8
    cfg = cfg_of(impl=impl, zero=3, dp=dp)
    assert persistent(cfg) == pytest.approx(16 * stage_params(cfg, 0) / dp, rel=1e-12)
    layer = layer_params(cfg.model, 0)
    backward = dict(model_state(cfg, 0).backward)
    assert backward["gathered layer parameters (current + prefetched)"] == pytest.approx(4 * layer)
    assert backward["unsharded layer gradients"] == pytest.approx((2 + 4) * layer)


def test_pytorch_ddp_keeps_fp32_everything_and_a_bucket_copy():
    """torch DistributedDataParallel around an autocast model: fp32 parameters 4, gradients 4,
    Adam 8, and the reducer's fp32 bucket copy of the gradients 4 (gradient_as_bucket_view is
    False by default)."""
    cfg = cfg_of(impl="ddp")
    P = stage_params(cfg, 0)
    s = model_state(cfg, 0)
    assert persistent(cfg) == pytest.approx(16 * P)
    assert dict(s.persistent)["DDP gradient buckets"] == pytest.approx(4 * P)
    assert "DDP gradient buckets" not in dict(model_state(cfg_of(impl="ddp", dp=1), 0).persistent)


def test_fp8_weight_copies_and_fp8_param_gather():
    """Transformer Engine caches fp8 weights and their transposes (1 + 1 bytes) beside the bf16
    parameters on Hopper; Blackwell keeps no transpose for per-tensor recipes; with
    fp8_param_gather the matmul weights exist only in fp8."""
    bf16 = model_state(cfg_of(do=True), 0).weights
    hopper = model_state(cfg_of(do=True, dtype="fp8"), 0).weights
    gathered = model_state(cfg_of(do=True, dtype="fp8", fp8_param_gather=True), 0).weights
    blackwell = model_state(cfg_of(do=True, dtype="fp8", gpu="b200-sxm-180gb"), 0).weights
    linear = hopper - bf16  # the fp8 copies: 2 bytes per matmul weight
    assert 0.8 * bf16 < linear < bf16  # most parameters are matmul weights
    assert blackwell - bf16 == pytest.approx(linear / 2)
    # the bf16 copy of the matmul weights is gone: 1 byte of fp8 plus its 1-byte transpose
    assert gathered == pytest.approx(hopper - linear)


def test_fp8_saves_gemm_inputs_in_one_byte():
    """Under fp8 the QKV, out-projection, FC1 and FC2 inputs are saved as 1-byte casts; the
    out-projection's cast sits beside the 16-bit output the fused attention kernel keeps for
    its own backward: for a SwiGLU layer without dropout that is (2h + f - v) bytes per token
    less than in bf16."""
    bf16, fp8 = cfg_of(), cfg_of(dtype="fp8")
    m = bf16.model
    tokens = 4096
    saved = activation_bytes_per_layer(bf16) - activation_bytes_per_layer(fp8)
    assert saved == pytest.approx(tokens * (2 * m.hidden_size - m.v_dim + m.ffn_size))


def test_partial_recompute_sums_whole_and_recomputed_layers():
    """recompute_num_layers=k keeps k layers' inputs only and the rest whole (Megatron's block
    method), so the in-flight bytes are k * full + (L - k) * none per micro-batch."""
    L = 32
    none = activation_bytes_per_layer(cfg_of(), recompute="none")
    full = activation_bytes_per_layer(cfg_of(), recompute="full")
    for k in (1, 5, 31):
        cfg = cfg_of(recompute="full", recompute_num_layers=k)
        mem = estimate_stage_memory(cfg, 0)
        # llama keeps nothing else on its one stage but the head's two 16-bit inputs (final
        # norm, output GEMM): no embedding dropout, no embedding norm
        t = cfg.training
        head = 4 * t.micro_batch_size * t.seq_length * cfg.model.hidden_size
        assert mem.activations == pytest.approx(k * full + (L - k) * none + head, rel=1e-12)


def test_allocated_reserved_device_order_and_expandable_segments():
    """reserved >= allocated (the step's large buffers do not fit in freed activation blocks
    without expandable segments) and device = reserved + context; with expandable segments
    the freed pages serve the step."""
    ds = cfg_of(impl="deepspeed", zero=1, dtype="fp16", fp32_grads=False)
    m = estimate_stage_memory(ds, 0)
    assert m.allocated < m.reserved < m.device
    assert m.cached == pytest.approx(sum(b for _, b in model_state(ds, 0).step))
    exp = estimate_stage_memory(cfg_of(impl="deepspeed", zero=1, dtype="fp16", fp32_grads=False,
                                       expandable=True), 0)
    assert exp.reserved == exp.allocated == m.allocated
    assert m.peak_at.startswith("backward") and m.temporaries


def test_context_counts_the_cuda_context_and_each_nccl_communicator():
    """nvidia-smi's extra: the measured CUDA context plus one NCCL communicator per group of
    more than one rank (world, tp, dp here; 2-rank ones are smaller, NVIDIA/nccl#964)."""
    one = estimate_stage_memory(cfg_of(dp=1), 0)
    assert one.context == CUDA_CONTEXT_BYTES
    m = estimate_stage_memory(cfg_of(tp=2, dp=4), 0)
    assert m.context == pytest.approx(CUDA_CONTEXT_BYTES + NCCL_GROUP_COMM_BYTES * 2
                                      + NCCL_PAIR_COMM_BYTES)


def test_framework_profiles_select_the_layout():
    """A framework profile picks the data-parallel implementation; a user's value wins."""
    base = {"model": {"preset": "llama3-8b"}, "parallel": {},
            "training": {"global_batch_size": 64, "seq_length": 2048},
            "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8}}
    for fw, impl in (("megatron-core", "megatron"), ("deepspeed", "deepspeed"),
                     ("llm-foundry", "fsdp1"), ("torchtitan", "fsdp2"), ("pytorch", "ddp")):
        raw = {k: dict(v) for k, v in base.items()}
        raw["training"]["framework"] = fw
        assert trainsim.run_config_from_dict(raw).parallel.data_parallel_impl == impl
    raw = {k: dict(v) for k, v in base.items()}
    raw["training"]["framework"] = "deepspeed"
    raw["parallel"]["data_parallel_impl"] = "fsdp2"
    raw["parallel"]["zero_stage"] = 3  # FSDP has no unsharded stage (config.validity)
    assert trainsim.run_config_from_dict(raw).parallel.data_parallel_impl == "fsdp2"
    with pytest.raises(trainsim.ConfigError, match="data_parallel_impl"):
        trainsim.run_config_from_dict({**base, "parallel": {"data_parallel_impl": "zero"}})


def test_validate_compares_the_memory_kind_a_row_measured():
    """A published figure is compared as its memory_kind says: allocated < reserved < device
    for the same run, and an unknown kind is a row error, not a crash."""
    import csv
    from importlib import resources

    from trainsim.validate.training import predict_training_row

    path = resources.files("trainsim") / "data" / "validation" / "training_public.csv"
    with path.open() as f:
        row = next(r for r in csv.DictReader(f) if r["id"] == "bloom-sweep-181B-tp8-pp12-dp4-mb1")
    got = {k: predict_training_row({**row, "memory_kind": k}).predicted_memory_gib
           for k in ("allocated", "reserved", "device")}
    assert got["allocated"] < got["reserved"] < got["device"]
    bad = predict_training_row({**row, "memory_kind": "smi"})
    assert bad.error and "memory_kind" in bad.error
    # and the row fails as any bad cell does: no time left in the MAPE (fuzz9, 22nd session:
    # it kept its predicted time while its JSON named the error and the table showed none)
    assert bad.predicted is None
    assert predict_training_row({**row, "memory_kind": " Device "}).error is None



def _dsv3_pp4(schedule: str, vpp: int):
    return trainsim.run_config_from_dict({
        "model": {"preset": "deepseek-v3", "num_layers": 64},
        "parallel": {"tp": 1, "pp": 4, "ep": 8, "vpp": vpp, "pipeline_schedule": schedule},
        "training": {"global_batch_size": 128, "micro_batch_size": 1, "seq_length": 4096,
                     "dtype": "bf16"},
        "cluster": {"node": "hgx-h800", "num_gpus": 64}})


@pytest.mark.parametrize("schedule,vpp,with_mtp", [("dualpipe", 1, (0, 3)),
                                                   ("dualpipe_v", 2, (0,)), ("1f1b", 1, (3,))])
def test_mtp_layers_sit_on_the_ranks_that_hold_the_last_chunk(schedule, vpp, with_mtp):
    """DeepSeek-V3 cut to 64 layers (3 dense, 61 MoE) on pp 4, ep 8: the multi-token-prediction
    layer is counted among the layer parameters (those fp8 GEMMs read and the optimizer
    gathers) of the ranks that hold the output layer: both ends of DualPipe (two copies of the
    stages; rank 0's reverse copy ends with stage 3), rank 0 of DualPipeV (its chunk 1 is
    virtual stage 7), rank 3 of 1F1B. Hand: each held layer's dense part plus its experts / 8,
    and the MTP block's the same way where the rank holds the last chunk."""
    from trainsim.memory.params import holds_last_chunk, stage_layer_params
    from trainsim.model.counts import layer_expert_params, mtp_params
    from trainsim.workload.pipeline_schedules import rank_chunks

    c = _dsv3_pp4(schedule, vpp)
    m = c.model

    def on_rank(total: float, experts: float) -> float:
        return total - experts + experts / 8

    mtp = on_rank(mtp_params(m), layer_expert_params(m, 63))
    assert [s for s in range(4) if holds_last_chunk(c, s)] == list(with_mtp)
    for s in range(4):
        layers = [i for v in rank_chunks(schedule, s, 4, vpp) for i in c.virtual_ranges[v]]
        hand = sum(on_rank(layer_params(m, i), layer_expert_params(m, i)) for i in layers)
        hand += mtp if s in with_mtp else 0.0
        assert stage_layer_params(c, s) == pytest.approx(hand, rel=1e-9)


def test_an_empty_memory_kind_is_warned_once_a_file(tmp_path):
    """fuzz31b: a measured peak beside an empty memory_kind is compared with the allocated peak
    plus the CUDA context (``StageMemory.total``), none of the README's kinds: one warning a
    file names the column and what was assumed; the comparison is unchanged."""
    import csv
    import warnings
    from importlib import resources

    from trainsim.validate import validate_file
    from trainsim.validate.training import predict_training_row

    path = resources.files("trainsim") / "data" / "validation" / "training_public.csv"
    with path.open() as f:
        reader = csv.DictReader(f)
        row = next(r for r in reader if r["id"] == "bloom-sweep-181B-tp8-pp12-dp4-mb1")
        columns = reader.fieldnames
    rows = [{**row, "memory_kind": ""}, {**row, "id": "b", "memory_kind": " "},
            {**row, "id": "c", "memory_kind": "device"}]
    out = tmp_path / "rows.csv"
    with out.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _, results = validate_file(out)
    said = [str(w.message) for w in caught if "memory_kind empty" in str(w.message)]
    assert len(said) == 1 and "2 row(s)" in said[0] and "allocated peak plus the CUDA context" \
        in said[0], said
    unnamed = predict_training_row({**row, "memory_kind": ""})
    assert results[0].predicted_memory_gib == unnamed.predicted_memory_gib \
        > predict_training_row({**row, "memory_kind": "allocated"}).predicted_memory_gib
    # a file whose every measured peak names its kind says nothing
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from trainsim.validate import _unnamed_memory_kind
        _unnamed_memory_kind(out, [rows[2], {**row, "measured_peak_memory_gib": "",
                                             "memory_kind": ""}])
    assert not caught
