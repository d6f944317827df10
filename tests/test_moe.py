"""Mixture-of-experts: parameter counts, memory by hand, expert parallelism, bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainsim import ConfigError, run_config_from_dict, simulate
from trainsim.catalog import model, model_from_hf_config
from trainsim.memory import estimate_stage_memory
from trainsim.model import active_params, total_params

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.mark.parametrize("name,total,active", [
    ("mixtral-8x7b", 46.7e9, 12.9e9),      # Mixtral paper: 47B total, 13B active
    ("mixtral-8x22b", 141e9, 39e9),         # Mistral: 141B total, 39B active
    ("qwen3-30b-a3b", 30.5e9, 3.3e9),       # Qwen3 report Table 1
    ("qwen3-235b-a22b", 235e9, 22e9),
])
def test_moe_presets_match_published_sizes(name, total, active):
    """Total and activated parameters of MoE presets are within 2% of the published counts."""
    m = model(name)
    assert total_params(m) == pytest.approx(total, rel=0.02)
    assert active_params(m) == pytest.approx(active, rel=0.02)


def cfg(**parallel):
    par = {"tp": 2, "ep": 4, "sequence_parallel": True, "distributed_optimizer": True}
    par.update(parallel)
    return run_config_from_dict({"model": "mixtral-8x7b", "parallel": par,
                                 "training": {"global_batch_size": 32, "seq_length": 4096},
                                 "cluster": {"node": "dgx-h100", "num_gpus": 8}})


def test_memory_by_hand_calculation():
    """Weights, gradients and optimizer bytes per rank equal a hand calculation (EP 4, TP 2,
    expert TP 1, distributed optimizer over DP 4 for dense and expert-DP 2 for experts)."""
    h, layers, vocab, experts, ffn = 4096, 32, 32000, 8, 14336
    attention = h * (4096 + 2 * 1024) + 4096 * h            # QKV (GQA, 8 KV heads) + output
    dense_layer = attention + h * experts + 2 * h            # + router + two RMSNorm weights
    expert_layer = experts * 3 * h * ffn                     # SwiGLU experts
    dense = (layers * dense_layer + vocab * h + vocab * h + h) / 2      # embed, head, final norm
    expert = layers * expert_layer / (4 * 1)                 # EP 4 x expert TP 1
    mem = estimate_stage_memory(cfg(), 0)
    assert mem.weights == pytest.approx(2 * (dense + expert), rel=1e-12)
    assert mem.gradients == pytest.approx(4 * (dense + expert), rel=1e-12)
    assert mem.optimizer == pytest.approx(12 * (dense / 4 + expert / 2), rel=1e-12)


def test_expert_parallel_all_to_all_is_priced():
    """EP > 1 adds exposed all-to-all time; EP 1 has none."""
    assert simulate(cfg(ep=4)).exposed_comm["ep"] > 0
    assert simulate(cfg(ep=1)).exposed_comm["ep"] == 0


def test_token_imbalance_slows_the_step():
    """A skewed router (busiest rank 1.5x the mean) makes the iteration slower."""
    base = simulate(cfg())
    skewed = run_config_from_dict({"model": {"preset": "mixtral-8x7b", "moe_token_imbalance": 1.5},
                                   "parallel": {"tp": 2, "ep": 4, "sequence_parallel": True},
                                   "training": {"global_batch_size": 32, "seq_length": 4096},
                                   "cluster": {"node": "dgx-h100", "num_gpus": 8}})
    assert simulate(skewed).iteration_time_s > base.iteration_time_s


def test_mfu_counts_only_activated_experts():
    """Model FLOPs of an MoE use its activated parameters (~6 x 12.9B per token for Mixtral)."""
    r = simulate(cfg())
    per_token = r.model_flops / r.config.tokens_per_iteration
    assert 6 * 12.9e9 < per_token < 6 * 12.9e9 * 1.15  # plus attention


def test_hf_mixtral_config_loads_as_moe():
    """A Hugging Face Mixtral config.json becomes the same shape as the preset."""
    m = model_from_hf_config(EXAMPLES / "hf" / "mixtral-8x7b" / "config.json")
    assert (m.num_experts, m.moe_router_topk) == (8, 2)
    assert total_params(m) == total_params(model("mixtral-8x7b"))


def test_bad_moe_settings_are_clear_errors():
    """EP not dividing the experts, EP on a dense model, or MoE TP without SP are rejected."""
    with pytest.raises(ConfigError, match="does not divide model.num_experts"):
        cfg(ep=3)
    with pytest.raises(ConfigError, match="sequence_parallel"):
        cfg(sequence_parallel=False)
    with pytest.raises(ConfigError, match="mixture-of-experts"):
        run_config_from_dict({"model": "llama3-8b", "parallel": {"ep": 2},
                              "cluster": {"node": "dgx-h100", "num_gpus": 8},
                              "training": {"global_batch_size": 8}})


def test_deepseek_v3_sizes_match_the_report():
    """DeepSeek-V3: 671B main-model parameters, ~37B activated per token (report §1)."""
    from trainsim.model import mtp_params

    m = model("deepseek-v3")
    assert total_params(m) - mtp_params(m) == pytest.approx(671e9, rel=0.01)
    assert active_params(m) == pytest.approx(37e9, rel=0.05)


def test_deepseek_v3_run_simulates_and_dispatch_tricks_help():
    """The report's 2,048-H800 setting simulates; fp8 dispatch, node-limited routing and
    overlapping the all-to-alls each reduce exposed expert-parallel time."""
    from trainsim import load_run_config

    path = EXAMPLES / "deepseek-v3-h800.yaml"
    plain = simulate(load_run_config(path, ["parallel.moe_overlap_ep_comm=false",
                                            "parallel.moe_dispatch_fp8=false",
                                            "model.moe_router_group_topk=null"]))
    fp8 = simulate(load_run_config(path, ["parallel.moe_overlap_ep_comm=false",
                                          "model.moe_router_group_topk=null"]))
    limited = simulate(load_run_config(path, ["parallel.moe_overlap_ep_comm=false"]))
    hidden = simulate(load_run_config(path))
    assert plain.exposed_comm["ep"] > fp8.exposed_comm["ep"] > limited.exposed_comm["ep"] \
        > hidden.exposed_comm["ep"]
    assert hidden.iteration_time_s < limited.iteration_time_s


def test_gpt_oss_sizes_match_the_model_card():
    """gpt-oss model card Table 1: 116.83B / 20.91B total; 5.13B / 3.61B active. The card
    counts the unembedding but not the embedding lookup among active parameters."""
    from trainsim.model.counts import embedding_params
    for name, total, active in (("gpt-oss-120b", 116.83e9, 5.13e9), ("gpt-oss-20b", 20.91e9, 3.61e9)):
        m = model(name)
        assert total_params(m) == pytest.approx(total, rel=0.005)
        assert active_params(m) - embedding_params(m) == pytest.approx(active, rel=0.01)


def test_gpt_oss_alternates_windowed_and_full_attention():
    """Layers 0, 2, 4... attend to 128 tokens, layers 1, 3, 5... to the whole sequence (HF
    layer_types); the HF config imports to the same model, and a windowed layer is cheaper."""
    m = model("gpt-oss-120b")
    assert [m.layer_window(i) for i in range(4)] == [128, None, 128, None]
    hf = model_from_hf_config(EXAMPLES / "hf" / "gpt-oss-120b" / "config.json")
    assert (hf.sliding_window, hf.window_attn_skip_freq) == (128, 2)
    run = {"model": "gpt-oss-120b", "parallel": {"pp": 4, "ep": 8, "distributed_optimizer": True},
           "training": {"global_batch_size": 64, "seq_length": 8192},
           "cluster": {"node": "dgx-h100", "num_gpus": 64}}
    alternating = simulate(run_config_from_dict(run)).iteration_time_s
    run["model"] = {"preset": "gpt-oss-120b", "window_attn_skip_freq": 1}  # every layer full
    all_full = simulate(run_config_from_dict(run)).iteration_time_s
    run["model"] = {"preset": "gpt-oss-120b", "window_attn_skip_freq": None}  # every layer windowed
    all_windowed = simulate(run_config_from_dict(run)).iteration_time_s
    assert all_windowed < alternating < all_full
