"""What a multi-latent-attention block (DeepSeek-V2/V3) keeps for its backward, per local token.

Megatron-core builds MLA from Transformer Engine modules (megatron/core/models/gpt/
gpt_layer_specs.py ``get_gpt_layer_with_transformer_engine_spec``, NVIDIA/Megatron-LM@2edffadb,
the commit Megatron-Bridge v0.4.2 pins; the same since core_v0.14): unless
``mla_down_proj_fusion`` (default False) is set, the query and the key/value down-projections are
two ``TELinear`` modules that read the same normed hidden state, and with ``qk_layernorm`` (the
DeepSeek models) the two up-projections are ``TELayerNormColumnParallelLinear`` modules whose norm
is the latent's RMSNorm (multi_latent_attention.py ``MLASelfAttention``). What Transformer Engine
saves for each (TransformerEngine@v2.14 transformer_engine/pytorch/module/linear.py and
layernorm_linear.py ``prepare_for_saving(inputmat, ..., ln_out, mu, rsigma)``):

- each down-projection its own quantized copy of the normed hidden state under fp8 (in 16-bit
  training both save the one norm output, which the layer already counts once);
- each up-projection its 16-bit input (the latent, for its norm's backward) and its norm's output
  ``ln_out`` (the weight-gradient GEMM's input: the 8-bit cast under fp8, else 16-bit);
- core attention the per-head query and key (with their rotary parts) and value.

Selective recompute changes that (megatron/core/transformer/transformer_layer.py and
multi_latent_attention.py at the same commit): ``layernorm`` checkpoints the input norm and, under
fp8, makes both down-projections save the discarded norm output instead of their casts
(``set_for_recompute_input_layernorm`` -> ``set_save_original_input``), so neither copy stays;
``mla_up_proj`` checkpoints the up-projections and RoPE (``CheckpointWithoutOutput``), keeping only
the latents it takes as inputs.
"""

from __future__ import annotations

from trainsim.catalog.frameworks import profile_supports
from trainsim.config import RunConfig


def mla_attention_bytes(cfg: RunConfig, recompute: str, x: float, shared_div: int) -> float:
    """Bytes per local token that the MLA block's projections and core attention keep, beyond
    the input norm's input and the first down-projection's input (counted with the layer's
    GEMM inputs), before selective recompute frees the per-head tensors (``mla_up_proj`` in
    ``layer_activations._selective_savings``). ``x``: bytes per element of a saved GEMM input;
    ``shared_div``: the sequence-parallel split of tensors that are not head-sharded."""
    m, t = cfg.model, cfg.parallel.tp
    latents = (m.q_lora_rank or 0) + (m.kv_lora_rank or 0)
    # per-head Q, K (rotary parts included) and V as core attention saves them, and the 16-bit
    # latents the up-projections' norms keep, split over the sequence under sequence
    # parallelism ("q_compressed: [s / TP, b, q_lora_rank]", "kv_compressed: [s / TP, b,
    # kv_lora_rank]": Megatron-LM@2edffadb multi_latent_attention.py _qkv_down_projection)
    out = 2 * (2 * m.qk_dim + m.v_dim) / t + 2 * latents / shared_div
    if not profile_supports(cfg, "recompute_modules"):  # not Megatron-core's TE modules
        return out
    modules = set(cfg.parallel.recompute_modules or ("core_attn",)) \
        if recompute == "selective" else set()
    if "mla_up_proj" not in modules:  # the up-projections' normed latents (``ln_out``)
        out += x * latents / shared_div
    if x != 2 and "layernorm" not in modules:  # the second down-projection's own 8-bit cast
        out += x * m.hidden_size / shared_div
    return out
