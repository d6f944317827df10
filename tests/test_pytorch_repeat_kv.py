"""The pytorch profile's GQA copy before SDPA: transformers' ``repeat_kv`` (v4.36 until
huggingface/transformers#39412, 2025-07) and ibm-fms's expand+flatten copy K and V to every
query head; from torch 2.8 the profile passes ``enable_gqa`` instead (issue 17)."""

from __future__ import annotations

from trainsim import run_config_from_dict
from trainsim.catalog.frameworks import framework_supports
from trainsim.workload.layers import layer_forward
from trainsim.workload.shard import shard_of


def _cfg(version: str, model: str = "llama3-8b"):
    return run_config_from_dict({
        "model": model, "parallel": {"tp": 1},
        "training": {"global_batch_size": 4, "micro_batch_size": 1, "seq_length": 2048,
                     "framework": "pytorch", "framework_version": version, "attention": "sdpa"},
        "cluster": {"gpu": "a100-sxm-80gb", "num_gpus": 4, "gpus_per_node": 8}})


def _repeats(version: str, model: str = "llama3-8b"):
    c = _cfg(version, model)
    return [op for op in layer_forward(c, shard_of(c)) if op.name == "attn_core.repeat_kv"]


def test_profile_repeats_kv_from_sdpa_until_torch_2_8():
    assert not framework_supports("pytorch", "2.0", "sdpa_repeat_kv")
    assert framework_supports("pytorch", "2.1.1", "sdpa_repeat_kv")
    assert framework_supports("pytorch", "2.4", "sdpa_repeat_kv")
    assert not framework_supports("pytorch", "2.8", "sdpa_repeat_kv")
    assert not framework_supports("pytorch", "2.11", "sdpa_repeat_kv")


def test_eager_repeat_copies_by_hand():
    """Llama 3 8B, 2048 tokens, head dim 128 (one head's K over the tokens: 2048 x 128 x 2 B
    = 524,288 B): K and V each read at 8 KV heads and written at 32 query heads, two kernels:
    2 x 524,288 x (8 + 32) = 41,943,040 B; none at torch 2.11 (enable_gqa) and none for an
    MHA model (Llama 2 7B: as many KV heads as query heads)."""
    (rep,) = _repeats("2.4")
    assert rep.bytes == 2 * 2048 * 128 * 2 * (8 + 32) == 41_943_040
    assert rep.kernels == 2
    assert _repeats("2.11") == []
    assert _repeats("2.4", "llama2-7b") == []
