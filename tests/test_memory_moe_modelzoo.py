"""Issue 16 item 2 (every run that ran is predicted to fit), on the Megatron MoE Model Zoo's
Qwen3-235B-A22B H100 rows (benchmarks/training_moe_modelzoo.csv, code of May 2025: main
1e057005 and moe_dev, read as Megatron-core 0.12.1). Megatron-core 0.12.1 already weighs the
routing probabilities inside the expert, so its combine keeps no weighted copies of the expert
outputs; counting them (the 0.12.0 block) put two rows that ran at 79.9 and 84.4 GiB. Hand
counts, citing NVIDIA/Megatron-LM at core_v0.12.1 (2025-05-20)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

import trainsim
from trainsim.memory.estimate import estimate_stage_memory
from trainsim.memory.layer_activations import _moe_block_bytes
from trainsim.validate.training import row_config

ROOT = Path(__file__).resolve().parents[1]
FILE = ROOT / "benchmarks" / "training_moe_modelzoo.csv"
GiB = 2**30


def qwen3(version: str, framework: str = "megatron-core"):
    """Qwen3-235B-A22B as the zoo's PP 32 row splits it: TP 2 with sequence parallelism, EP 8,
    micro-batch 1 of 4096 tokens, forced-balanced routing (each rank's 2048 tokens x top-8)."""
    return trainsim.run_config_from_dict({
        "model": {"preset": "qwen3-235b-a22b"},
        "parallel": {"tp": 2, "pp": 2, "ep": 8, "sequence_parallel": True},
        "training": {"global_batch_size": 64, "micro_batch_size": 1, "seq_length": 4096,
                     "framework": framework, "framework_version": version},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 256, "gpus_per_node": 8},
    })


def test_core_0121_weighs_the_probabilities_in_the_expert():
    """core_v0.12.1 took main's MR 2668 through MR 3310 (d5d00fdc87, 2025-05-16):
    megatron/core/transformer/moe/experts.py line 768 ``weighted_bias_swiglu_impl(...,
    permuted_probs)``, and token_dispatcher.py unpermutes without probs (line 640, the
    all-to-all dispatcher; line 899, DeepEP's ``get_restored_hidden_states_by_experts``);
    core_v0.12.0 line 641 still passes ``probs=self.probs``. Per rank: the pre-MLP norm's and
    the router's 16-bit inputs (2048 x 4096 x (2 + 2)), the fp32 router scores (2048 x 128 x
    4) and per routed copy (2048 x 8) the grouped GEMM's input (2 x 4096), the SwiGLU's two
    halves and output (2 x 2 x 1536 + 2 x 1536) and its fp32 probability (4); 0.12.0 adds
    the combine's 16-bit weighted copy of each expert output (2 x 4096)."""
    tokens, routed, h, f = 2048, 2048 * 8, 4096, 1536
    want = tokens * h * 4 + tokens * 128 * 4 + routed * (2 * h + 2 * 2 * f + 2 * f + 4)
    for version in ("0.12.1", "0.12.2", "0.12.3", "0.13"):
        assert _moe_block_bytes(qwen3(version)) == pytest.approx(want), version
    assert _moe_block_bytes(qwen3("0.12.0")) == pytest.approx(want + routed * 2 * h)
    # Megatron-LM's main by date: MR 2668 landed as 2659630721 on 2025-04-09 (experts.py line 745)
    assert _moe_block_bytes(qwen3("2025-04-09", "megatron-lm")) == pytest.approx(want)
    assert _moe_block_bytes(qwen3("2025-04-08", "megatron-lm")) == pytest.approx(
        want + routed * 2 * h)


def test_recompute_modules_from_core_0120_and_main_of_2025_04_05():
    """--recompute-modules came with MR 2207 (3b141a2471, 2025-04-05; core_v0.12.0
    arguments.py line 1568, transformer_config.py lines 726-732 allowing core_attn, moe_act,
    layernorm, mla_up_proj, mlp, moe): the tuner tries its MoE sets from there, not before."""
    from trainsim.catalog.frameworks import framework_profile
    from trainsim.validate.row_settings import selective_sets

    row = {"num_experts": "128"}
    for name, old, new in (("megatron-core", "0.11", "0.12"),
                           ("megatron-lm", "2025-04-04", "2025-04-05")):
        assert selective_sets(row, {}, framework_profile(name, old)) == []
        assert "selective:layernorm;moe_act" in selective_sets(row, {}, framework_profile(name, new))


def zoo_row(key: str) -> dict[str, str]:
    rows = [r for r in csv.DictReader(FILE.open()) if r["id"].endswith(key)]
    assert len(rows) == 1, key
    return rows[0]


def peak(row: dict[str, str], version: str | None = None) -> tuple[float, float]:
    """(the busiest rank's peak, the GPU's memory) of ``row`` read as ``version``."""
    cfg = row_config({**row, "framework_version": version or row["framework_version"]})
    top = max(estimate_stage_memory(cfg, s).total for s in range(cfg.parallel.pp))
    return top, cfg.cluster.gpu.hbm_bytes


@pytest.mark.parametrize("key, layers", [
    # interleaved 1F1B (megatron/core/pipeline_parallel/schedules.py
    # forward_backward_pipelining_with_interleaving): rank 1 runs (pp - 2) x 2 + (vpp - 1) x pp
    # warm-up forwards and one more before its first backward
    ("h100-256-tp2pp8vpp4ep32", (6 * 2 + 3 * 8 + 1) * 3),  # 37 chunks of 3 layers
    ("h100-256-tp2pp32vpp3ep8-a2a", 30 * 2 + 2 * 32 + 1),  # 125 chunks of 1 layer
])
def test_the_zoo_runs_that_ran_fit_an_h100(key, layers):
    """The rows' peak (rank 1's, in the 1F1B steady state) falls by one weighted copy of each
    in-flight layer's routed tokens (2048 x 8 x 4096 x 2 bytes = 128 MiB) from 0.12.0's block
    (79.4 and 84.4 GiB: the second over the H100's 80 GiB) and fits with room to spare."""
    row = zoo_row(key)
    (now, hbm), (old, _) = peak(row), peak(row, "0.12.0")
    assert old - now == pytest.approx(layers * 2048 * 8 * 4096 * 2, rel=1e-6)
    assert now < hbm - 10 * GiB
