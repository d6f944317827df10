"""Activation CPU offloading (Megatron-core --cpu-offloading-num-layers through Transformer
Engine's schedules, before 2.10 and from it) and the tuner's use of it (issue 16, acceptance
2); the validation files' ``cpu_offloading_num_layers`` column and the framework versions
that have it (issue 17)."""

from __future__ import annotations

import itertools

import pytest

import trainsim
from trainsim.errors import ConfigError
from trainsim.memory import estimate_stage_memory
from trainsim.memory.estimate import activation_bytes_per_layer
from trainsim.memory.offload import (
    OFFLOAD_WAIT,
    copies_hidden,
    copy_stalls,
    copy_windows,
    layer_forward_floor_s,
    offload_admitted,
    offloaded_bytes,
    window_ends,
)
from trainsim.validate.row_settings import unknowns


def _hidden_at_floor(cfg) -> bool:
    """Whether Transformer Engine < 2.10's windows hide every copy and reload at the fastest
    rate trainsim runs a layer (``layer_forward_floor_s`` for each pass): no stall priced."""
    layers = cfg.model.num_layers
    floor = [layer_forward_floor_s(cfg)] * layers
    fwd, bwd = copy_stalls(cfg, floor, floor)
    return not any(fwd) and not any(bwd)


def cfg_of(n=0, pp=1, recompute="none", gpu="gb200", b=1, dtype="bf16", **training):
    return trainsim.run_config_from_dict({
        "model": {"preset": "llama3-8b"},
        "parallel": {"pp": pp, "recompute": recompute, "cpu_offloading_num_layers": n},
        "training": {"global_batch_size": 64 * b, "micro_batch_size": b, "seq_length": 8192,
                     "dtype": dtype, **training},
        "cluster": {"gpu": gpu, "num_gpus": 8 * pp, "gpus_per_node": 8},
    })


def test_offloading_keeps_the_activations_of_the_layers_not_offloaded():
    """TE's default schedule keeps at most L - N layers' activations on the GPU: offloading N
    of llama3-8b's 32 layers removes exactly N layers' worth from the peak."""
    base, off = cfg_of(0), cfg_of(12)
    layer = activation_bytes_per_layer(base)
    saved = estimate_stage_memory(base, 0).activations - estimate_stage_memory(off, 0).activations
    assert saved == pytest.approx(12 * layer)
    assert offloaded_bytes(off) == pytest.approx(12 * layer)


@pytest.mark.parametrize("kwargs", [{"n": 4, "pp": 2}, {"n": 4, "recompute": "full"},
                                    {"n": 4, "recompute": "selective"}, {"n": 32}, {"n": -1}])
def test_megatron_core_refuses_what_it_cannot_run(kwargs):
    """Megatron-core's transformer_config.py: no offloading with pipeline parallelism or with
    recomputation, and fewer offloaded layers than the model has."""
    with pytest.raises(ConfigError, match="cpu_offloading_num_layers"):
        cfg_of(**kwargs)


def test_copies_are_hidden_only_where_the_host_link_carries_them_in_time():
    """On GB200's NVLink-C2C a quarter of the layers' copies fit inside the forward; offloading
    all but one layer leaves each copy one layer's forward, which a bf16 layer's (3.1 ms at
    the fastest rates) covers and an fp8 layer's (1.8 ms) does not (2.7 / 2.4 ms copies); a
    GPU whose host link is not stated is never assumed to hide them."""
    assert copies_hidden(cfg_of(8))
    assert copies_hidden(cfg_of(31))
    assert not copies_hidden(cfg_of(31, dtype="fp8"))
    assert copies_hidden(cfg_of(16, dtype="fp8"))
    assert not copies_hidden(cfg_of(8, gpu="h100-sxm-80gb"))
    assert copies_hidden(cfg_of(0, gpu="h100-sxm-80gb"))


def test_layer_forward_floor_is_its_flops_at_the_fastest_rates():
    """Matmuls at the GEMM ceiling (fp8: the fast-accumulating rate where it is higher),
    the attention core at a fused kernel's cap, 1 / mamf_fraction of the 16-bit ceiling."""
    from trainsim.model.counts import model_flops_per_token
    for dtype in ("bf16", "fp8"):
        cfg = cfg_of(0, dtype=dtype)
        gpu = cfg.cluster.gpu
        flops = model_flops_per_token(cfg.model, 8192) / 3 / 32 * 8192
        attn = 2 * (cfg.model.qk_dim + cfg.model.v_dim) * 8192 * 8192
        gemm = gpu.gemm_ceiling(dtype)
        if dtype == "fp8":
            gemm = max(gemm, 2 * gpu.gemm_ceiling("bf16"))
        fused = gpu.gemm_ceiling("bf16") / gpu.mamf_fraction
        assert layer_forward_floor_s(cfg) == pytest.approx((flops - attn) / gemm + attn / fused)
        # never below the layer at the dense peak (the floor before)
        assert layer_forward_floor_s(cfg) > flops / gpu.peak_flops[dtype]


def test_transformer_engine_before_2_10_has_windows():
    """TE release_v2.9 cpu_offload.py L345-350 layer_window_map: copy 0 has L // N - 1 layers
    when N divides L (one for 40 of 80), the others L // N, the first L % N one more."""
    assert copy_windows(80, 40) == [1] + [2] * 39
    assert copy_windows(80, 20) == [3] + [4] * 19
    assert copy_windows(126, 95) == [1] + [2] * 30 + [1] * 64
    assert all(sum(copy_windows(layers, n)) == layers - 1
               for layers in (32, 80, 126) for n in range(1, layers))


def _row(framework="megatron-bridge", version="26.04", pp="1", recompute=""):
    return {"model": "llama3-70b", "pp": pp, "tp": "1", "recompute": recompute,
            "framework": framework, "framework_version": version, "micro_batch_size": "2",
            "sequence_parallel": "0", "distributed_optimizer": "1", "vpp": "1"}


def test_tuner_offers_offloading_where_the_recipes_use_it():
    """Megatron-Bridge 26.04's perf recipes offload layers (llama3 70B GB200 FSDP); the tuner
    considers it only with pp 1 and an empty recompute cell, and not for other frameworks."""
    from trainsim.catalog.frameworks import framework_profile

    bridge = framework_profile("megatron-bridge", "26.04")
    assert unknowns(_row(), bridge)["cpu_offloading_num_layers"] == [0, 20, 40, 60]
    assert "cpu_offloading_num_layers" not in unknowns(_row(pp="4"), bridge)
    assert "cpu_offloading_num_layers" not in unknowns(_row(recompute="full"), bridge)
    nemo = framework_profile("nemo", "24.07")
    assert "cpu_offloading_num_layers" not in unknowns(_row("nemo", "24.07"), nemo)


@pytest.mark.parametrize("version", ["25.09", "25.11", "26.02", "26.04", "26.06"])
def test_bridge_recipes_offload_from_the_first_release(version):
    """Megatron-Bridge's perf scripts set cpu_offloading from v0.1.0rc3 (25.09, utils/helpers.py
    L131-135) and v0.2.0 (25.11, utils/helpers.py L165-173; Llama 3 70B GB300 FP8-CS 20, GB200
    40 layers), through TE's get_cpu_offload_context (release_v2.7 / v2.9)."""
    from trainsim.catalog.frameworks import framework_profile

    bridge = framework_profile("megatron-bridge", version)
    assert unknowns(_row(version=version), bridge)["cpu_offloading_num_layers"] == [0, 20, 40, 60]


def test_bridge_2511_llama3_70b_fsdp_rows_take_the_recipe_counts():
    """The 25.11 Llama 3 70B Megatron-FSDP FP8-CS rows (benchmarks/training_bridge_archive.csv):
    the tuner's choice is the recipe's (v0.2.0 configs/llama3/workload_base_configs.py L47 /
    L77), under TE 2.9's windows (copy 0 of 40 of 80 layers has one layer's forward: 8.7 ms
    against 11.7 ms at the fastest rates), with no recomputation."""
    import csv
    from pathlib import Path

    from trainsim.validate.training import predict_training_row, row_config

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "training_bridge_archive.csv"
    with open(path, newline="") as fh:
        rows = {r["id"]: r for r in csv.DictReader(fh)}
    for gpu, n in (("gb300", 20), ("gb200", 40)):
        row = rows[f"bridgearch2511-llama3-70b-{gpu}-64-fp8cs"]
        cfg = row_config({**row, "recompute": "none", "cpu_offloading_num_layers": str(n)})
        assert copy_windows(80, n)[0] == 80 // n - 1
        assert offloaded_bytes(cfg) / n / cfg.cluster.gpu.host_link_bw_Bps <= \
            copy_windows(80, n)[0] * layer_forward_floor_s(cfg)
        assert _hidden_at_floor(cfg)
        res = predict_training_row(row)
        assert res.chosen.get("cpu_offloading_num_layers") == n, res.chosen
        assert res.chosen.get("recompute") == "none"


def test_megatron_core_refuses_cuda_graphs_with_offloading():
    """transformer_config.py: "CUDA graphs not supported with CPU offloading" (first in
    core_v0.11.0 L822-824 for enable_cuda_graph; core_v0.16.0 any cuda_graph_impl); the message
    dates it; graphs without offloading run."""
    with pytest.raises(ConfigError, match="cuda_graphs=false.*core_v0.11.0"):
        cfg_of(4, cuda_graphs=True)
    assert cfg_of(0, cuda_graphs=True).training.cuda_graphs


def test_framework_versions_without_offloading_are_refused():
    """Megatron-core 0.4's TransformerConfig has no cpu_offloading (core_v0.5.0 adds it); NeMo's
    perf scripts set it from v2.3.0 (25.04). A version whose profile does not say stays allowed
    when stated, and the tuner offers offloading only where the profile says the recipes use it."""
    from trainsim.catalog.frameworks import framework_profile

    with pytest.raises(ConfigError, match="megatron-core 0.4 has no activation CPU offloading"):
        cfg_of(4, framework="megatron-core", framework_version="0.4")
    # the refusal cites the entry that brings the field (core_v0.5.0's transformer_config.py),
    # not the 0.4 entry's unrelated arguments.py reading
    with pytest.raises(ConfigError, match=r"first in megatron-core 0\.5: .*core_v0\.5\.0.*"
                       r"transformer_config\.py"):
        cfg_of(4, framework="megatron-core", framework_version="0.4")
    assert cfg_of(0, framework="megatron-core", framework_version="0.4")
    assert cfg_of(4, framework="megatron-core", framework_version="0.5")
    for version, offered in (("24.09", False), ("25.02", False), ("25.04", True),
                             ("25.07", True)):
        profile = framework_profile("nemo", version)
        assert ("cpu_offloading_num_layers" in unknowns(_row("nemo", version), profile)) == \
            offered, version


def _column_row(**cells):
    row = {"id": "t", "model": "llama3-8b", "gpu": "gb200", "num_gpus": "8",
           "gpus_per_node": "8", "tp": "1", "pp": "1", "global_batch_size": "64",
           "micro_batch_size": "1", "seq_length": "8192", "recompute": "none",
           "sequence_parallel": "0", "distributed_optimizer": "1", "vpp": "1", "dtype": "bf16",
           "measured_iteration_s": "1"}
    return {**row, **cells}


def test_column_sets_the_offloaded_layers_and_empty_keeps_none():
    from trainsim.validate.row_settings import counts_checked, training_base
    from trainsim.validate.training import row_config

    assert row_config(_column_row(cpu_offloading_num_layers="8")).parallel \
        .cpu_offloading_num_layers == 8
    assert row_config(_column_row(cpu_offloading_num_layers="8.0")).parallel \
        .cpu_offloading_num_layers == 8
    for empty in ("", " ", "0"):
        assert row_config(_column_row(cpu_offloading_num_layers=empty)).parallel \
            .cpu_offloading_num_layers == 0
    assert row_config(_column_row()).parallel.cpu_offloading_num_layers == 0
    # a stated count is not tuned, even where the framework's recipes offload
    row = counts_checked(_column_row(recompute="", framework="nemo", framework_version="25.07",
                                     cpu_offloading_num_layers="8"))
    assert "cpu_offloading_num_layers" not in training_base(row)[1]


@pytest.mark.parametrize("cell, message", [
    ("-1", "column 'cpu_offloading_num_layers' is '-1'; it must be a whole number >= 0"),
    ("2.5", "column 'cpu_offloading_num_layers' is '2.5'; it must be a whole number >= 0"),
    ("all", "column 'cpu_offloading_num_layers' is 'all'; it must be a whole number >= 0"),
    ("32", "parallel.cpu_offloading_num_layers=32 must be below model.num_layers=32"),
])
def test_bad_column_is_one_clear_error(cell, message):
    from trainsim.validate.training import predict_training_row

    res = predict_training_row(_column_row(cpu_offloading_num_layers=cell), compute_db=None)
    assert res.error is not None and res.error.startswith(message) and "\n" not in res.error


def test_column_header_is_case_insensitive(tmp_path):
    import csv

    from trainsim.validate import validate_file

    row = _column_row(cpu_offloading_num_layers="8", pp="2", num_gpus="16")
    path = tmp_path / "t.csv"
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=[k.upper() if k.startswith("cpu") else k for k in row])
        w.writeheader()
        w.writerow({(k.upper() if k.startswith("cpu") else k): v for k, v in row.items()})
    _, res = validate_file(path)
    assert "pipeline_model_parallel_size=1" in (res[0].error or "")


def test_nemo_2507_405b_offload_by_hand():
    """NeMo 25.07 Llama 3.1 405B on GB200 (benchmarks/training_nemo_perf.csv; v2.4.0
    model_configs_gb200.csv: TP 2, PP 1, Megatron FSDP, 95 of 126 layers offloaded). Offloading
    takes 95 layers' activations off the GPU, which is what lets the run fit (186 GB); each
    layer's copy (its saved activations over NVLink-C2C's 450 GB/s) is shorter than a layer's
    forward at peak, so both Transformer Engine schedules hide it: 2.10's, and 2.5's
    layer_window_map (the container's pin, transformer_engine/pytorch/cpu_offload.py
    L338-346), whose shortest window here is one layer: L // N = 1, the first L % N = 31
    offloaded layers get windows of 2."""
    import csv
    from pathlib import Path

    from trainsim.validate.training import row_config

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "training_nemo_perf.csv"
    with open(path, newline="") as fh:
        row = {r["id"]: r for r in csv.DictReader(fh)}["nemo2507-llama31-405b-gb200-128"]
    cfg = row_config(row)
    assert cfg.parallel.cpu_offloading_num_layers == 95 and cfg.parallel.pp == 1
    layer = activation_bytes_per_layer(cfg)
    assert offloaded_bytes(cfg) == pytest.approx(95 * layer)
    kept = estimate_stage_memory(cfg, 0)
    full = estimate_stage_memory(row_config({**row, "cpu_offloading_num_layers": "0"}), 0)
    assert full.activations - kept.activations == pytest.approx(95 * layer)
    assert kept.total <= cfg.cluster.gpu.hbm_bytes < full.total
    # TE 2.5: window of offloaded group i ends at layer ((L // N) * (i + 1)) - 1 (+ i + 1 for
    # the first L % N groups, + L % N after); copy i+1 starts when copy i's window closes
    n, L = 95, 126
    ends = [(L // n) * (i + 1) - 1 + (i + 1 if i < L % n else L % n) for i in range(n)]
    assert ends[0] == 1 and ends[30] == 61 and ends[31] == 62 and ends[-1] == L - 1
    shortest = min([ends[0]] + [b - a for a, b in itertools.pairwise(ends)])
    assert shortest == 1
    assert layer / cfg.cluster.gpu.host_link_bw_Bps <= shortest * layer_forward_floor_s(cfg)
    assert _hidden_at_floor(cfg)


def _bridge_cfg(n, version="25.11", link=45):
    """Llama 3 8B fp8 on a GB200 whose host link is a tenth of NVLink-C2C's, so that copies
    outlast their windows; Megatron-Bridge 25.11 pins TE 2.9, 26.04 a TE >= 2.10."""
    return trainsim.run_config_from_dict({
        "model": {"preset": "llama3-8b"},
        "parallel": {"pp": 1, "recompute": "none", "cpu_offloading_num_layers": n},
        "training": {"global_batch_size": 64, "micro_batch_size": 1, "seq_length": 8192,
                     "dtype": "fp8", "framework": "megatron-bridge", "framework_version": version},
        "cluster": {"gpu": "gb200", "num_gpus": 8, "gpus_per_node": 8,
                    "gpu_overrides": {"host_link_gbyte_s": link}},
    })


def test_late_copies_wait_where_transformer_engine_2_9_waits():
    """TE release_v2.9 cpu_offload.py L516-536: the commit of layer layer_window_map[k] makes the
    compute stream wait for copy k, which started after the previous window's commit (copy 0
    after layer 0, L497 / L512); L641-655: reload k starts before the backward of layer
    layer_window_map[k] and the backward of layer layer_window_map[k - 1] (layer 0) waits for
    it. 8 of 32 layers: windows end at layers 3, 7, ..., 31."""
    cfg = _bridge_cfg(8)
    assert window_ends(32, 8) == [3, 7, 11, 15, 19, 23, 27, 31]
    copy = activation_bytes_per_layer(cfg) / 45e9
    fwd, bwd = copy_stalls(cfg, [copy / 3.5] * 32, [copy / 5] * 32)
    assert fwd[3] == pytest.approx(copy - 3 * copy / 3.5)  # copy 0 beside layers 1-3
    assert sum(fwd) == pytest.approx(fwd[3])  # four layers' forward hide the others
    assert bwd[1] == pytest.approx(copy - 3 * copy / 5)  # before layer 0's backward
    assert all(bwd[4 * k] == pytest.approx(copy - 4 * copy / 5) for k in range(1, 8))
    assert sum(1 for s in bwd if s > 0) == 8
    # TE >= 2.10, no offloading, no host link: nothing priced
    for other in (_bridge_cfg(8, "26.04"), _bridge_cfg(0), cfg_of(8, gpu="h100-sxm-80gb")):
        assert copy_stalls(other, [copy] * 32, [copy] * 32) == ([0.0] * 32, [0.0] * 32)


def test_a_late_copy_costs_its_stall_instead_of_being_refused():
    """Under TE 2.9 the tuner may take a setting whose copies outlast their windows: each
    micro-batch's forward and backward wait for them on the compute stream (other_s)."""
    from trainsim.chunks import chunks
    from trainsim.pricing import Pricer
    from trainsim.simulator import simulate
    from trainsim.workload.shard import shard_of

    cfg, base = _bridge_cfg(8), _bridge_cfg(0)
    assert not _hidden_at_floor(cfg) and offload_admitted(cfg)
    assert not offload_admitted(_bridge_cfg(8, "26.04"))  # 2.10's schedule: still gated
    assert offload_admitted(_bridge_cfg(8, link=450))
    ch = chunks(base, Pricer(base), shard_of(base))[0]
    fwd, bwd = copy_stalls(cfg, [p.duration_s for p in ch.fwd_parts[2:-1]],
                           [p.duration_s for p in reversed(ch.bwd_layers)])
    stall = cfg.num_microbatches * (sum(fwd) + sum(bwd))
    assert stall > 0
    late, plain = simulate(cfg), simulate(base)
    assert late.iteration_time_s - plain.iteration_time_s == pytest.approx(stall, rel=1e-9)
    assert late.breakdown["other_s"] - plain.breakdown["other_s"] == pytest.approx(stall,
                                                                                  rel=1e-9)
    waits = [p for p in chunks(cfg, Pricer(cfg), shard_of(cfg))[0].fwd_parts
             if p.segments and p.segments[-1][0] == OFFLOAD_WAIT]
    assert len(waits) == sum(1 for s in fwd if s > 0)
