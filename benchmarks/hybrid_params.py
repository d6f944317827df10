"""Parameter counts of the hybrid (Mamba-2 / attention / MLP / MoE) presets against the model
Hugging Face builds from the same shapes (transformers' ``NemotronHForCausalLM`` on the meta
device: no weights are allocated), and against the sizes the model cards publish.

usage: PYTHONPATH=src python benchmarks/hybrid_params.py   (needs torch and transformers; ~20 s)
The exact counts it prints are the ones tests/test_hybrid_layers.py holds.
"""

from __future__ import annotations

from trainsim import catalog
from trainsim.config.hybrid import mamba_heads
from trainsim.model.counts import active_params, total_params

PRESETS = ("nemotron-h-8b", "nemotron-h-47b", "nemotron-h-56b", "nemotron-3-nano-30b-a3b")


def hf_config(name: str):
    """transformers' NemotronHConfig of a trainsim preset (the fields a hub config.json has)."""
    from transformers import NemotronHConfig
    m = catalog.model(name)
    kw = {"vocab_size": m.vocab_size, "hidden_size": m.hidden_size,
          "hybrid_override_pattern": m.hybrid_layer_pattern,
          "num_attention_heads": m.num_attention_heads, "num_key_value_heads": m.kv_heads,
          "head_dim": m.kv_channels, "intermediate_size": m.ffn_size, "mlp_hidden_act": "relu2",
          "tie_word_embeddings": m.tied_embeddings, "mamba_num_heads": mamba_heads(m),
          "mamba_head_dim": m.mamba_head_dim, "ssm_state_size": m.mamba_state_dim,
          "n_groups": m.mamba_num_groups, "conv_kernel": m.mamba_conv_kernel,
          "chunk_size": m.mamba_chunk_size, "use_bias": False, "mlp_bias": False,
          "attention_bias": False, "mamba_proj_bias": False}
    if m.num_experts:
        kw.update(n_routed_experts=m.num_experts, num_experts_per_tok=m.moe_router_topk,
                  moe_intermediate_size=m.expert_ffn_size,
                  moe_shared_expert_intermediate_size=m.moe_shared_expert_intermediate_size)
    return NemotronHConfig(**kw)


def hf_count(name: str) -> int:
    import torch
    from transformers import AutoModelForCausalLM
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(hf_config(name))
    return sum(p.numel() for p in model.parameters())


def main() -> None:
    for name in PRESETS:
        m = catalog.model(name)
        ours, hf = total_params(m), hf_count(name)
        print(f"{name:26s} trainsim {ours:>15,} transformers {hf:>15,} diff {ours - hf:+,} "
              f"active {active_params(m):,}")


if __name__ == "__main__":
    main()
