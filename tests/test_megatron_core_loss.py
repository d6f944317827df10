"""Megatron-core's default loss: the unfused vocab-parallel cross-entropy."""

from __future__ import annotations

from trainsim import run_config_from_dict, simulate


def cfg(**training):
    return run_config_from_dict({
        "model": {"name": "tiny", "hidden_size": 1024, "num_layers": 4, "num_attention_heads": 16,
                  "vocab_size": 131072, "activation": "gelu"},
        "parallel": {"tp": 1, "pp": 1},
        "training": {"global_batch_size": 8, "micro_batch_size": 1, "seq_length": 4096,
                     "framework": "megatron-core", **training},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8},
    })


def test_megatron_core_runs_the_unfused_cross_entropy_unless_told():
    # --cross-entropy-loss-fusion is off by default in every release (no flag before 0.10)
    for version in ("0.4", "0.8", "0.15"):
        assert cfg(framework_version=version).training.cross_entropy == "unfused"
    fused = cfg(framework_version="0.8", cross_entropy="fused")
    assert fused.training.cross_entropy == "fused"
    # a 131k vocabulary on a 1k-wide model: the fp32 passes over the logits cost time
    assert simulate(cfg(framework_version="0.8")).iteration_time_s > \
        simulate(fused).iteration_time_s
