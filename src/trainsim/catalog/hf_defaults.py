"""Defaults of transformers 5.24.0 config classes for the config.json fields trainsim
reads, by ``model_type`` (written by ``benchmarks/hf_class_defaults.py``; each family's class is
``src/transformers/models/<family>/configuration_<family>.py``).

``NOT_NULL``: fields whose class type has no None: a missing field takes the default, an
explicit null is refused (transformers raises ``StrictDataclassFieldValidationError``).
``NULLABLE``: fields typed ``... | None`` with a default that is not None: a missing field takes
the default, a null keeps its meaning (no window, no rank...).
``ALIASES``: each class's ``attribute_map`` (another name -> the field it sets): a config.json
giving the field under another name takes no default for it.
``READS``: of ``READ_KEYS``, the names each family's config class or modeling file reads
(a family without transformers' modeling code has none listed); a name outside it in a file
of that family sets nothing in transformers and is ignored (``hf_families.unread``).
``ROTARY``: the families whose config class has ``rope_parameters`` or ``rotary_dim``: rotary
positions, whether the file writes a theta or not (Falcon's ALiBi is read apart).
``EXPERT_NAMES``: the routed-expert count names each family's class holds (its field, or an
``attribute_map`` name of it), for the families ``hf_families.EXPERT_COUNT_NAMES`` does not list.
``GATED_MLP``: whether each family's built MLP is gated (gate, up and down matrices) or plain
(two), whatever ``hidden_act`` says: its modeling file's MLP class fixes the matrices and the
activation only fills them (a family left out could not be built: its activation decides)."""

from __future__ import annotations

from typing import Any

TRANSFORMERS_VERSION = "5.24.0"

NOT_NULL: dict[str, dict[str, Any]] = {
    "apertus": {"intermediate_size": 14336, "hidden_act": "xielu",
               "max_position_embeddings": 65536, "rms_norm_eps": 1e-05,
               "tie_word_embeddings": False, "attention_bias": False, "attention_dropout": 0.0},
    "arcee": {"intermediate_size": 18432, "hidden_act": "relu2", "max_position_embeddings": 4096,
             "rms_norm_eps": 1e-05, "tie_word_embeddings": False, "attention_bias": False,
             "attention_dropout": 0.0, "mlp_bias": False},
    "bitnet": {"intermediate_size": 6912, "hidden_act": "relu2", "max_position_embeddings": 2048,
              "rms_norm_eps": 1e-05, "tie_word_embeddings": False, "attention_bias": False},
    "bloom": {"hidden_dropout": 0.0, "attention_dropout": 0.0, "tie_word_embeddings": True},
    "codegen": {"n_positions": 2048, "rotary_dim": 64, "activation_function": "gelu_new",
               "resid_pdrop": 0.0, "attn_pdrop": 0.0, "tie_word_embeddings": False},
    "cohere": {"intermediate_size": 22528, "hidden_act": "silu", "max_position_embeddings": 8192,
              "tie_word_embeddings": True, "attention_bias": False},
    "cohere2": {"intermediate_size": 22528, "hidden_act": "silu", "max_position_embeddings": 8192,
               "tie_word_embeddings": True, "attention_bias": False, "attention_dropout": 0.0},
    "dbrx": {"tie_word_embeddings": False},
    "deepseek_v2": {"intermediate_size": 11008, "hidden_act": "silu",
                   "max_position_embeddings": 2048, "rms_norm_eps": 1e-06,
                   "tie_word_embeddings": False, "attention_bias": False, "mlp_bias": False,
                   "first_k_dense_replace": 0, "kv_lora_rank": 512, "n_routed_experts": 64,
                   "n_shared_experts": 2, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
                   "v_head_dim": 128, "moe_intermediate_size": 1407},
    "deepseek_v3": {"intermediate_size": 18432, "moe_intermediate_size": 2048,
                   "n_shared_experts": 1, "n_routed_experts": 256, "kv_lora_rank": 512,
                   "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "hidden_act": "silu",
                   "max_position_embeddings": 4096, "rms_norm_eps": 1e-06,
                   "tie_word_embeddings": False, "attention_bias": False},
    "ernie4_5": {"intermediate_size": 3072, "hidden_act": "silu",
                "max_position_embeddings": 131072, "rms_norm_eps": 1e-05,
                "tie_word_embeddings": True},
    "exaone": {"intermediate_size": 14336, "hidden_act": "silu", "max_position_embeddings": 4096,
              "rms_norm_eps": 1e-05, "tie_word_embeddings": False, "attention_bias": False,
              "mlp_bias": False},
    "exaone4": {"intermediate_size": 16384, "num_key_value_heads": 32, "hidden_act": "silu",
               "max_position_embeddings": 2048, "rms_norm_eps": 1e-05,
               "tie_word_embeddings": False, "attention_dropout": 0.0},
    "falcon": {"max_position_embeddings": 2048, "tie_word_embeddings": True},
    "flex_olmo": {"intermediate_size": 11008, "hidden_act": "silu",
                 "max_position_embeddings": 4096, "rms_norm_eps": 1e-06,
                 "tie_word_embeddings": False, "attention_bias": False, "num_experts_per_tok": 5,
                 "num_experts": 7},
    "gemma": {"intermediate_size": 24576, "num_key_value_heads": 16, "head_dim": 256,
             "hidden_act": "gelu_pytorch_tanh", "max_position_embeddings": 8192,
             "rms_norm_eps": 1e-06, "tie_word_embeddings": True, "attention_bias": False,
             "attention_dropout": 0.0},
    "gemma2": {"intermediate_size": 9216, "num_key_value_heads": 4, "head_dim": 256,
              "max_position_embeddings": 8192, "rms_norm_eps": 1e-06, "tie_word_embeddings": True,
              "attention_bias": False},
    "gemma3_text": {"intermediate_size": 9216, "num_key_value_heads": 4, "head_dim": 256,
                   "max_position_embeddings": 131072, "rms_norm_eps": 1e-06,
                   "tie_word_embeddings": True, "attention_bias": False},
    "glm": {"intermediate_size": 13696, "hidden_act": "silu", "max_position_embeddings": 131072,
           "rms_norm_eps": 1.5625e-07, "tie_word_embeddings": False, "attention_bias": True},
    "glm4": {"intermediate_size": 13696, "num_key_value_heads": 2, "head_dim": 128,
            "hidden_act": "silu", "attention_dropout": 0.0, "max_position_embeddings": 131072,
            "rms_norm_eps": 1.5625e-07, "tie_word_embeddings": False, "attention_bias": True},
    "glm4_moe": {"intermediate_size": 10944, "num_key_value_heads": 8, "hidden_act": "silu",
                "max_position_embeddings": 131072, "rms_norm_eps": 1e-05,
                "tie_word_embeddings": False, "attention_bias": False, "attention_dropout": 0.0,
                "moe_intermediate_size": 1408, "num_experts_per_tok": 8, "n_shared_experts": 1,
                "n_routed_experts": 128, "first_k_dense_replace": 1, "use_qk_norm": False},
    "gpt2": {"n_positions": 1024, "activation_function": "gelu_new", "resid_pdrop": 0.1,
            "attn_pdrop": 0.1, "tie_word_embeddings": True},
    "gpt_bigcode": {"n_positions": 1024, "activation_function": "gelu_pytorch_tanh",
                   "resid_pdrop": 0.1, "attn_pdrop": 0.1, "multi_query": True,
                   "tie_word_embeddings": True},
    "gpt_neox": {"intermediate_size": 24576, "hidden_act": "gelu", "attention_dropout": 0.0,
                "hidden_dropout": 0.0, "max_position_embeddings": 2048,
                "tie_word_embeddings": False, "use_parallel_residual": True,
                "attention_bias": True},
    "gpt_oss": {"num_local_experts": 128, "intermediate_size": 2880, "head_dim": 64,
               "num_key_value_heads": 8, "tie_word_embeddings": False, "hidden_act": "silu",
               "max_position_embeddings": 131072, "rms_norm_eps": 1e-05, "attention_dropout": 0.0,
               "num_experts_per_tok": 4, "swiglu_limit": 7.0, "attention_bias": True},
    "gptj": {"n_positions": 2048, "rotary_dim": 64, "activation_function": "gelu_new",
            "resid_pdrop": 0.0, "attn_pdrop": 0.0, "tie_word_embeddings": False},
    "granite": {"intermediate_size": 11008, "hidden_act": "silu", "max_position_embeddings": 2048,
               "rms_norm_eps": 1e-06, "tie_word_embeddings": False, "attention_bias": False,
               "attention_dropout": 0.0, "mlp_bias": False},
    "granitemoe": {"intermediate_size": 11008, "hidden_act": "silu",
                  "max_position_embeddings": 2048, "rms_norm_eps": 1e-06,
                  "tie_word_embeddings": False, "attention_bias": False},
    "granitemoeshared": {"intermediate_size": 11008, "hidden_act": "silu",
                        "max_position_embeddings": 2048, "rms_norm_eps": 1e-06,
                        "tie_word_embeddings": False, "attention_bias": False},
    "helium": {"intermediate_size": 7040, "num_key_value_heads": 20, "head_dim": 128,
              "hidden_act": "silu", "attention_dropout": 0.0, "max_position_embeddings": 4096,
              "rms_norm_eps": 1e-08, "tie_word_embeddings": False, "attention_bias": False,
              "mlp_bias": False},
    "internlm3": {"intermediate_size": 10240, "hidden_act": "silu",
                 "max_position_embeddings": 32768, "rms_norm_eps": 1e-05,
                 "tie_word_embeddings": False, "attention_bias": False, "attention_dropout": 0.0,
                 "mlp_bias": False},
    "llama": {"intermediate_size": 11008, "hidden_act": "silu", "max_position_embeddings": 2048,
             "rms_norm_eps": 1e-06, "tie_word_embeddings": False, "attention_bias": False,
             "mlp_bias": False},
    "llama4_text": {"intermediate_size": 8192, "intermediate_size_mlp": 16384,
                   "num_key_value_heads": 8, "head_dim": 128, "hidden_act": "silu",
                   "max_position_embeddings": 131072, "rms_norm_eps": 1e-05,
                   "tie_word_embeddings": False, "attention_dropout": 0.0,
                   "num_experts_per_tok": 1, "num_local_experts": 16,
                   "interleave_moe_layer_step": 1, "use_qk_norm": True, "attention_bias": False},
    "minicpm3": {"intermediate_size": 6400, "hidden_act": "silu", "max_position_embeddings": 32768,
                "rms_norm_eps": 1e-05, "tie_word_embeddings": True, "attention_bias": False,
                "mlp_bias": False, "kv_lora_rank": 256, "qk_nope_head_dim": 64,
                "qk_rope_head_dim": 32},
    "minimax_m2": {"intermediate_size": 1536, "num_key_value_heads": 8, "head_dim": 128,
                  "hidden_act": "silu", "max_position_embeddings": 196608, "rms_norm_eps": 1e-06,
                  "tie_word_embeddings": False, "attention_dropout": 0.0, "num_experts_per_tok": 8,
                  "num_local_experts": 256},
    "ministral3": {"intermediate_size": 14336, "num_key_value_heads": 8, "head_dim": 128,
                  "hidden_act": "silu", "max_position_embeddings": 262144, "rms_norm_eps": 1e-05,
                  "tie_word_embeddings": False, "attention_dropout": 0.0},
    "mistral": {"intermediate_size": 14336, "num_key_value_heads": 8, "hidden_act": "silu",
               "max_position_embeddings": 131072, "rms_norm_eps": 1e-06,
               "tie_word_embeddings": False, "attention_dropout": 0.0},
    "mixtral": {"intermediate_size": 14336, "num_key_value_heads": 8, "hidden_act": "silu",
               "max_position_embeddings": 131072, "rms_norm_eps": 1e-05,
               "tie_word_embeddings": False, "attention_dropout": 0.0, "num_experts_per_tok": 2,
               "num_local_experts": 8},
    "mpt": {"expansion_ratio": 4, "max_seq_len": 2048, "resid_pdrop": 0.0, "learned_pos_emb": True,
           "no_bias": True, "tie_word_embeddings": True},
    "olmo": {"intermediate_size": 11008, "hidden_act": "silu", "max_position_embeddings": 2048,
            "tie_word_embeddings": False, "attention_bias": False, "attention_dropout": 0.0},
    "olmo2": {"intermediate_size": 11008, "hidden_act": "silu", "max_position_embeddings": 2048,
             "tie_word_embeddings": False, "attention_bias": False, "attention_dropout": 0.0,
             "rms_norm_eps": 1e-05},
    "olmo3": {"intermediate_size": 11008, "hidden_act": "silu", "max_position_embeddings": 2048,
             "tie_word_embeddings": False, "attention_bias": False, "attention_dropout": 0.0,
             "rms_norm_eps": 1e-05},
    "olmoe": {"intermediate_size": 2048, "hidden_act": "silu", "max_position_embeddings": 4096,
             "rms_norm_eps": 1e-05, "tie_word_embeddings": False, "attention_bias": False,
             "attention_dropout": 0.0, "num_experts_per_tok": 8, "num_experts": 64},
    "opt": {"ffn_dim": 3072, "max_position_embeddings": 2048, "attention_dropout": 0.0,
           "activation_function": "relu", "tie_word_embeddings": True},
    "persimmon": {"intermediate_size": 16384, "hidden_act": "relu2",
                 "max_position_embeddings": 16384, "tie_word_embeddings": False,
                 "qk_layernorm": True, "hidden_dropout": 0.0, "attention_dropout": 0.0},
    "phi": {"intermediate_size": 8192, "resid_pdrop": 0.0, "hidden_act": "gelu_new",
           "max_position_embeddings": 2048, "tie_word_embeddings": False, "qk_layernorm": False},
    "phi3": {"intermediate_size": 8192, "resid_pdrop": 0.0, "attention_dropout": 0.0,
            "hidden_act": "silu", "max_position_embeddings": 4096, "rms_norm_eps": 1e-05,
            "tie_word_embeddings": False},
    "phimoe": {"intermediate_size": 6400, "num_key_value_heads": 8, "hidden_act": "silu",
              "max_position_embeddings": 131072, "rms_norm_eps": 1e-05,
              "tie_word_embeddings": False, "attention_dropout": 0.0, "num_experts_per_tok": 2,
              "num_local_experts": 16, "attention_bias": False},
    "qwen2": {"intermediate_size": 22016, "hidden_act": "silu", "max_position_embeddings": 32768,
             "rms_norm_eps": 1e-06, "tie_word_embeddings": False, "use_sliding_window": False,
             "max_window_layers": 28, "attention_dropout": 0.0},
    "qwen2_moe": {"intermediate_size": 5632, "hidden_act": "silu",
                 "max_position_embeddings": 32768, "rms_norm_eps": 1e-06,
                 "tie_word_embeddings": False, "use_sliding_window": False,
                 "max_window_layers": 28, "attention_dropout": 0.0, "decoder_sparse_step": 1,
                 "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632,
                 "num_experts_per_tok": 4, "num_experts": 60, "qkv_bias": True},
    "qwen3": {"intermediate_size": 22016, "head_dim": 128, "hidden_act": "silu",
             "max_position_embeddings": 32768, "rms_norm_eps": 1e-06, "tie_word_embeddings": False,
             "attention_bias": False, "use_sliding_window": False, "max_window_layers": 28,
             "attention_dropout": 0.0},
    "qwen3_5_moe_text": {"num_key_value_heads": 2, "hidden_act": "silu",
                        "max_position_embeddings": 32768, "rms_norm_eps": 1e-06,
                        "tie_word_embeddings": False, "attention_bias": False,
                        "attention_dropout": 0.0, "head_dim": 256, "linear_conv_kernel_dim": 4,
                        "linear_key_head_dim": 128, "linear_value_head_dim": 128,
                        "linear_num_key_heads": 16, "linear_num_value_heads": 32,
                        "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512,
                        "num_experts_per_tok": 8, "num_experts": 256},
    "qwen3_5_text": {"intermediate_size": 12288, "num_key_value_heads": 4, "hidden_act": "silu",
                    "max_position_embeddings": 32768, "rms_norm_eps": 1e-06,
                    "tie_word_embeddings": False, "attention_bias": False,
                    "attention_dropout": 0.0, "head_dim": 256, "linear_conv_kernel_dim": 4,
                    "linear_key_head_dim": 128, "linear_value_head_dim": 128,
                    "linear_num_key_heads": 16, "linear_num_value_heads": 32},
    "qwen3_moe": {"intermediate_size": 6144, "num_key_value_heads": 4, "hidden_act": "silu",
                 "max_position_embeddings": 32768, "rms_norm_eps": 1e-06,
                 "tie_word_embeddings": False, "attention_bias": False,
                 "use_sliding_window": False, "attention_dropout": 0.0, "decoder_sparse_step": 1,
                 "moe_intermediate_size": 768, "num_experts_per_tok": 8, "num_experts": 128},
    "qwen3_next": {"intermediate_size": 5632, "num_key_value_heads": 2, "hidden_act": "silu",
                  "max_position_embeddings": 32768, "rms_norm_eps": 1e-06,
                  "tie_word_embeddings": False, "attention_bias": False, "attention_dropout": 0.0,
                  "head_dim": 256, "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128,
                  "linear_value_head_dim": 128, "linear_num_key_heads": 16,
                  "linear_num_value_heads": 32, "decoder_sparse_step": 1,
                  "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512,
                  "num_experts_per_tok": 10, "num_experts": 512},
    "sarvam_mla": {"intermediate_size": 16384, "moe_intermediate_size": 2048,
                  "n_shared_experts": 1, "n_routed_experts": 128, "kv_lora_rank": 512,
                  "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "hidden_act": "silu",
                  "max_position_embeddings": 4096, "rms_norm_eps": 1e-06,
                  "tie_word_embeddings": False, "attention_bias": False},
    "sarvam_moe": {"intermediate_size": 8192, "num_key_value_heads": 4, "hidden_act": "silu",
                  "max_position_embeddings": 131072, "rms_norm_eps": 1e-06,
                  "tie_word_embeddings": False, "attention_bias": False, "attention_dropout": 0.0,
                  "moe_intermediate_size": 1024, "num_experts_per_tok": 6, "n_shared_experts": 1,
                  "n_routed_experts": 128, "first_k_dense_replace": 1, "use_qk_norm": True,
                  "head_dim": 64},
    "seed_oss": {"intermediate_size": 27648, "hidden_act": "silu",
                "max_position_embeddings": 524288, "rms_norm_eps": 1e-06,
                "tie_word_embeddings": False, "attention_bias": True, "attention_out_bias": False,
                "attention_dropout": 0.1, "mlp_bias": False},
    "smollm3": {"intermediate_size": 11008, "hidden_act": "silu", "max_position_embeddings": 32768,
               "rms_norm_eps": 1e-06, "use_sliding_window": False, "attention_bias": False,
               "attention_dropout": 0.0, "mlp_bias": False, "tie_word_embeddings": True},
    "solar_open": {"num_key_value_heads": 8, "hidden_act": "silu",
                  "max_position_embeddings": 131072, "rms_norm_eps": 1e-05,
                  "tie_word_embeddings": False, "attention_bias": False, "attention_dropout": 0.0,
                  "moe_intermediate_size": 1280, "num_experts_per_tok": 8, "n_shared_experts": 1,
                  "n_routed_experts": 128, "head_dim": 128},
    "stablelm": {"intermediate_size": 6912, "num_key_value_heads": 32, "hidden_act": "silu",
                "max_position_embeddings": 4096, "tie_word_embeddings": False,
                "qk_layernorm": False, "use_parallel_residual": False, "hidden_dropout": 0.0,
                "attention_dropout": 0.0},
    "starcoder2": {"intermediate_size": 12288, "num_key_value_heads": 2,
                  "hidden_act": "gelu_pytorch_tanh", "max_position_embeddings": 4096,
                  "attention_dropout": 0.0, "tie_word_embeddings": True},
    "vaultgemma": {"intermediate_size": 9216, "num_key_value_heads": 4, "head_dim": 256,
                  "max_position_embeddings": 8192, "rms_norm_eps": 1e-06,
                  "tie_word_embeddings": True, "attention_bias": False},
    "youtu": {"intermediate_size": 6144, "num_key_value_heads": 16, "kv_lora_rank": 512,
             "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "hidden_act": "silu",
             "max_position_embeddings": 131072, "rms_norm_eps": 1e-06, "tie_word_embeddings": True,
             "attention_bias": False},
}

NULLABLE: dict[str, dict[str, Any]] = {
    "bitnet": {"num_key_value_heads": 5, "attention_dropout": 0.0},
    "cohere": {"attention_dropout": 0.0, "use_qk_norm": False},
    "cohere2": {"sliding_window": 4096},
    "dbrx": {"max_seq_len": 2048, "resid_pdrop": 0.0},
    "deepseek_v2": {"attention_dropout": 0.0, "q_lora_rank": 1536},
    "deepseek_v3": {"num_key_value_heads": 128, "q_lora_rank": 1536, "v_head_dim": 128,
                   "num_experts_per_tok": 8, "first_k_dense_replace": 3, "attention_dropout": 0.0},
    "ernie4_5": {"num_key_value_heads": 2, "head_dim": 128},
    "exaone": {"num_key_value_heads": 8, "attention_dropout": 0.0},
    "exaone4": {"sliding_window": 4096, "sliding_window_pattern": 4},
    "falcon": {"hidden_dropout": 0.0, "attention_dropout": 0.0, "alibi": False,
              "new_decoder_architecture": False, "multi_query": True, "parallel_attn": True,
              "bias": False, "activation": "gelu"},
    "flex_olmo": {"attention_dropout": 0.0},
    "gemma2": {"attention_dropout": 0.0, "sliding_window": 4096, "attn_logit_softcapping": 50.0},
    "gemma3_text": {"attention_dropout": 0.0, "sliding_window": 4096},
    "glm": {"num_key_value_heads": 2, "head_dim": 128, "attention_dropout": 0.0},
    "gpt_oss": {"sliding_window": 128},
    "granitemoe": {"attention_dropout": 0.0, "num_local_experts": 8, "num_experts_per_tok": 2},
    "granitemoeshared": {"attention_dropout": 0.0, "num_local_experts": 8,
                        "num_experts_per_tok": 2},
    "internlm3": {"num_key_value_heads": 2, "head_dim": 128},
    "llama": {"attention_dropout": 0.0},
    "llama4_text": {"attention_chunk_size": 8192},
    "minicpm3": {"num_key_value_heads": 40, "attention_dropout": 0.0, "q_lora_rank": 768},
    "mistral": {"sliding_window": 4096},
    "olmo3": {"sliding_window": 4096},
    "phi": {"attention_dropout": 0.0},
    "qwen2": {"num_key_value_heads": 32, "sliding_window": 4096},
    "qwen2_moe": {"num_key_value_heads": 16, "sliding_window": 4096},
    "qwen3": {"num_key_value_heads": 32, "sliding_window": 4096},
    "qwen3_moe": {"sliding_window": 4096},
    "sarvam_mla": {"v_head_dim": 128, "num_experts_per_tok": 8, "first_k_dense_replace": 1,
                  "attention_dropout": 0.0},
    "seed_oss": {"num_key_value_heads": 8, "head_dim": 128},
    "smollm3": {"num_key_value_heads": 4},
    "vaultgemma": {"attention_dropout": 0.0, "sliding_window": 4096,
                  "attn_logit_softcapping": 50.0},
    "youtu": {"q_lora_rank": 1536, "v_head_dim": 128, "attention_dropout": 0.0},
}

ALIASES: dict[str, dict[str, str]] = {
    "bloom": {"num_hidden_layers": "n_layer", "num_attention_heads": "n_head"},
    "codegen": {"max_position_embeddings": "n_positions",
               "hidden_size": "n_embd",
               "num_attention_heads": "n_head",
               "num_hidden_layers": "n_layer"},
    "dbrx": {"num_attention_heads": "n_heads",
            "hidden_size": "d_model",
            "num_hidden_layers": "n_layers",
            "max_position_embeddings": "max_seq_len"},
    "deepseek_v2": {"num_experts": "n_routed_experts"},
    "deepseek_v3": {"num_local_experts": "n_routed_experts",
                   "num_mtp_layers": "num_nextn_predict_layers"},
    "exaone": {"num_layers": "num_hidden_layers",
              "layer_norm_epsilon": "rms_norm_eps",
              "activation_function": "hidden_act"},
    "flex_olmo": {"num_local_experts": "num_experts"},
    "glm4_moe": {"num_local_experts": "n_routed_experts",
                "num_mtp_layers": "num_nextn_predict_layers"},
    "gpt2": {"hidden_size": "n_embd",
            "max_position_embeddings": "n_positions",
            "num_attention_heads": "n_head",
            "num_hidden_layers": "n_layer"},
    "gpt_bigcode": {"hidden_size": "n_embd",
                   "max_position_embeddings": "n_positions",
                   "num_attention_heads": "n_head",
                   "num_hidden_layers": "n_layer"},
    "gpt_oss": {"num_experts": "num_local_experts"},
    "gptj": {"max_position_embeddings": "n_positions",
            "hidden_size": "n_embd",
            "num_attention_heads": "n_head",
            "num_hidden_layers": "n_layer"},
    "internlm3": {"qkv_bias": "attention_bias", "bias": "mlp_bias"},
    "minimax_m2": {"num_experts": "num_local_experts"},
    "mixtral": {"num_experts": "num_local_experts"},
    "mpt": {"num_attention_heads": "n_heads",
           "hidden_size": "d_model",
           "num_hidden_layers": "n_layers"},
    "olmoe": {"num_local_experts": "num_experts"},
    "qwen3_moe": {"num_experts": "num_local_experts"},
    "sarvam_mla": {"num_local_experts": "n_routed_experts",
                  "num_mtp_layers": "num_nextn_predict_layers",
                  "num_experts": "n_routed_experts",
                  "num_shared_experts": "n_shared_experts"},
    "sarvam_moe": {"num_local_experts": "n_routed_experts",
                  "num_mtp_layers": "num_nextn_predict_layers",
                  "num_experts": "n_routed_experts",
                  "num_shared_experts": "n_shared_experts",
                  "use_qkv_bias": "attention_bias"},
    "solar_open": {"num_local_experts": "n_routed_experts"},
}

READ_KEYS = ("num_key_value_heads", "head_dim", "intermediate_size", "n_inner", "ffn_dim",
             "max_position_embeddings", "attention_dropout", "hidden_dropout", "attn_pdrop",
             "resid_pdrop", "use_sliding_window", "max_window_layers", "sliding_window_pattern",
             "attn_logit_softcapping", "swiglu_limit", "num_experts_per_tok", "moe_topk",
             "moe_intermediate_size", "shared_expert_intermediate_size", "n_shared_experts",
             "decoder_sparse_step", "moe_layer_freq", "first_k_dense_replace", "q_lora_rank",
             "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "attention_chunk_size",
             "use_qk_norm", "attention_bias", "attention_out_bias", "mlp_bias", "qkv_bias",
             "rms_norm_eps", "hidden_act", "activation_function", "use_parallel_residual",
             "interleave_moe_layer_step", "intermediate_size_mlp", "full_attention_interval",
             "qk_layernorm")

READS: dict[str, frozenset[str]] = {k: frozenset(v.split()) for k, v in {
    "apertus": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
               "attention_dropout attention_bias rms_norm_eps hidden_act",
    "arcee": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
             "attention_dropout attention_bias mlp_bias rms_norm_eps hidden_act",
    "bitnet": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
              "attention_dropout attention_bias rms_norm_eps hidden_act",
    "bloom": "attention_dropout hidden_dropout",
    "codegen": "n_inner max_position_embeddings attn_pdrop resid_pdrop activation_function",
    "cohere": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
              "attention_dropout use_qk_norm attention_bias hidden_act",
    "cohere2": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
               "attention_dropout sliding_window_pattern attention_bias hidden_act",
    "dbrx": "head_dim max_position_embeddings attn_pdrop resid_pdrop",
    "deepseek_v2": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
                   "attention_dropout num_experts_per_tok moe_intermediate_size n_shared_experts "
                   "first_k_dense_replace q_lora_rank qk_nope_head_dim qk_rope_head_dim "
                   "v_head_dim attention_bias mlp_bias rms_norm_eps hidden_act",
    "deepseek_v3": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
                   "attention_dropout num_experts_per_tok moe_intermediate_size n_shared_experts "
                   "first_k_dense_replace q_lora_rank qk_nope_head_dim qk_rope_head_dim "
                   "v_head_dim attention_bias rms_norm_eps hidden_act",
    "ernie4_5": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
                "rms_norm_eps hidden_act",
    "exaone4": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
               "attention_dropout sliding_window_pattern rms_norm_eps hidden_act",
    "falcon": "head_dim max_position_embeddings attention_dropout hidden_dropout",
    "flex_olmo": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
                 "attention_dropout num_experts_per_tok attention_bias rms_norm_eps hidden_act",
    "gemma": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
             "attention_dropout attention_bias rms_norm_eps hidden_act",
    "gemma2": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
              "attention_dropout attn_logit_softcapping attention_bias rms_norm_eps",
    "gemma3_text": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
                   "attention_dropout sliding_window_pattern attn_logit_softcapping "
                   "attention_bias rms_norm_eps",
    "glm": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
           "attention_dropout attention_bias rms_norm_eps hidden_act",
    "glm4": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
            "attention_dropout attention_bias rms_norm_eps hidden_act",
    "glm4_moe": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
                "attention_dropout num_experts_per_tok moe_intermediate_size n_shared_experts "
                "first_k_dense_replace use_qk_norm attention_bias rms_norm_eps hidden_act",
    "gpt2": "n_inner max_position_embeddings hidden_dropout attn_pdrop resid_pdrop "
            "activation_function",
    "gpt_bigcode": "n_inner max_position_embeddings hidden_dropout attn_pdrop resid_pdrop "
                   "activation_function",
    "gpt_neox": "head_dim intermediate_size max_position_embeddings attention_dropout "
                "hidden_dropout attention_bias hidden_act use_parallel_residual",
    "gpt_oss": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
               "attention_dropout swiglu_limit num_experts_per_tok attention_bias rms_norm_eps "
               "hidden_act",
    "gptj": "n_inner max_position_embeddings attn_pdrop resid_pdrop activation_function",
    "granite": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
               "attention_dropout attention_bias mlp_bias rms_norm_eps hidden_act",
    "granitemoe": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
                  "attention_dropout num_experts_per_tok attention_bias rms_norm_eps hidden_act",
    "granitemoeshared": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
                        "attention_dropout num_experts_per_tok attention_bias rms_norm_eps "
                        "hidden_act",
    "helium": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
              "attention_dropout attention_bias mlp_bias rms_norm_eps hidden_act",
    "llama": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
             "attention_dropout attention_bias mlp_bias rms_norm_eps hidden_act",
    "llama4_text": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
                   "attention_dropout num_experts_per_tok attention_chunk_size use_qk_norm "
                   "attention_bias rms_norm_eps hidden_act interleave_moe_layer_step "
                   "intermediate_size_mlp",
    "minicpm3": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
                "attention_dropout q_lora_rank qk_nope_head_dim qk_rope_head_dim v_head_dim "
                "attention_bias mlp_bias rms_norm_eps hidden_act",
    "minimax_m2": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
                  "attention_dropout num_experts_per_tok rms_norm_eps hidden_act",
    "ministral3": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
                  "attention_dropout rms_norm_eps hidden_act",
    "mistral": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
               "attention_dropout rms_norm_eps hidden_act",
    "mixtral": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
               "attention_dropout num_experts_per_tok rms_norm_eps hidden_act",
    "mpt": "hidden_dropout resid_pdrop",
    "olmo": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
            "attention_dropout attention_bias hidden_act",
    "olmo2": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
             "attention_dropout attention_bias rms_norm_eps hidden_act",
    "olmo3": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
             "attention_dropout attention_bias rms_norm_eps hidden_act",
    "olmoe": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
             "attention_dropout num_experts_per_tok attention_bias rms_norm_eps hidden_act",
    "opt": "ffn_dim max_position_embeddings attention_dropout activation_function",
    "persimmon": "head_dim intermediate_size max_position_embeddings attention_dropout "
                 "hidden_dropout hidden_act qk_layernorm",
    "phi": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
           "attention_dropout resid_pdrop hidden_act qk_layernorm",
    "phi3": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
            "attention_dropout resid_pdrop rms_norm_eps hidden_act",
    "phimoe": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
              "attention_dropout num_experts_per_tok attention_bias rms_norm_eps hidden_act",
    "qwen2": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
             "attention_dropout use_sliding_window max_window_layers rms_norm_eps hidden_act",
    "qwen2_moe": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
                 "attention_dropout use_sliding_window max_window_layers num_experts_per_tok "
                 "moe_intermediate_size shared_expert_intermediate_size decoder_sparse_step "
                 "qkv_bias rms_norm_eps hidden_act",
    "qwen3": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
             "attention_dropout use_sliding_window max_window_layers attention_bias rms_norm_eps "
             "hidden_act",
    "qwen3_5_moe_text": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
                        "attention_dropout num_experts_per_tok moe_intermediate_size "
                        "shared_expert_intermediate_size attention_bias rms_norm_eps hidden_act "
                        "full_attention_interval",
    "qwen3_5_text": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
                    "attention_dropout attention_bias rms_norm_eps hidden_act "
                    "full_attention_interval",
    "qwen3_moe": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
                 "attention_dropout use_sliding_window num_experts_per_tok moe_intermediate_size "
                 "decoder_sparse_step attention_bias rms_norm_eps hidden_act",
    "qwen3_next": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
                  "attention_dropout num_experts_per_tok moe_intermediate_size "
                  "shared_expert_intermediate_size decoder_sparse_step attention_bias "
                  "rms_norm_eps hidden_act full_attention_interval",
    "seed_oss": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
                "attention_dropout attention_bias attention_out_bias mlp_bias rms_norm_eps "
                "hidden_act",
    "smollm3": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
               "attention_dropout use_sliding_window attention_bias mlp_bias rms_norm_eps "
               "hidden_act",
    "solar_open": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
                  "attention_dropout num_experts_per_tok moe_intermediate_size n_shared_experts "
                  "attention_bias rms_norm_eps hidden_act",
    "stablelm": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
                "attention_dropout hidden_dropout hidden_act use_parallel_residual qk_layernorm",
    "starcoder2": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
                  "attention_dropout hidden_act",
    "vaultgemma": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
                  "attention_dropout attn_logit_softcapping attention_bias rms_norm_eps",
    "youtu": "num_key_value_heads head_dim intermediate_size max_position_embeddings "
             "attention_dropout q_lora_rank qk_nope_head_dim qk_rope_head_dim v_head_dim "
             "attention_bias rms_norm_eps hidden_act",
}.items()}

ROTARY = frozenset({"apertus", "arcee", "bitnet", "codegen", "cohere", "cohere2", "dbrx",
                    "deepseek_v2", "deepseek_v3", "ernie4_5", "exaone", "exaone4", "falcon",
                    "flex_olmo", "gemma", "gemma2", "gemma3_text", "glm", "glm4", "glm4_moe",
                    "gpt_neox", "gpt_oss", "gptj", "granite", "granitemoe", "granitemoeshared",
                    "helium", "internlm3", "llama", "llama4_text", "minicpm3", "minimax_m2",
                    "ministral3", "mistral", "mixtral", "olmo", "olmo2", "olmo3", "olmoe",
                    "persimmon", "phi", "phi3", "phimoe", "qwen2", "qwen2_moe", "qwen3",
                    "qwen3_5_moe_text", "qwen3_5_text", "qwen3_moe", "qwen3_next", "sarvam_mla",
                    "sarvam_moe", "seed_oss", "smollm3", "solar_open", "stablelm", "starcoder2",
                    "vaultgemma", "youtu"})

EXPERT_NAMES: dict[str, tuple[str, ...]] = {
    "deepseek_v2": ("num_experts", "n_routed_experts",),
    "deepseek_v3": ("num_local_experts", "n_routed_experts",),
    "flex_olmo": ("num_local_experts", "num_experts",),
    "glm4_moe": ("num_local_experts", "n_routed_experts",),
    "gpt_oss": ("num_local_experts", "num_experts",),
    "granitemoe": ("num_local_experts",),
    "granitemoeshared": ("num_local_experts",),
    "llama4_text": ("num_local_experts",),
    "minimax_m2": ("num_local_experts", "num_experts",),
    "mixtral": ("num_local_experts", "num_experts",),
    "olmoe": ("num_local_experts", "num_experts",),
    "phimoe": ("num_local_experts",),
    "qwen2_moe": ("num_experts",),
    "qwen3_5_moe_text": ("num_experts",),
    "qwen3_moe": ("num_experts",),
    "qwen3_next": ("num_experts",),
    "sarvam_mla": ("num_local_experts", "num_experts", "n_routed_experts",),
    "sarvam_moe": ("num_local_experts", "num_experts", "n_routed_experts",),
    "solar_open": ("num_local_experts", "n_routed_experts",),
}

GATED_MLP: dict[str, bool] = {
    **dict.fromkeys(("bitnet", "cohere", "cohere2", "deepseek_v2", "deepseek_v3", "ernie4_5",
                    "exaone", "exaone4", "flex_olmo", "gemma", "gemma2", "gemma3_text", "glm",
                    "glm4", "glm4_moe", "gpt_oss", "granite", "granitemoe", "granitemoeshared",
                    "helium", "internlm3", "llama", "llama4_text", "minicpm3", "minimax_m2",
                    "ministral3", "mistral", "mixtral", "olmo", "olmo2", "olmo3", "olmoe", "phi3",
                    "phimoe", "qwen2", "qwen2_moe", "qwen3", "qwen3_5_moe_text", "qwen3_5_text",
                    "qwen3_moe", "qwen3_next", "sarvam_mla", "sarvam_moe", "seed_oss", "smollm3",
                    "solar_open", "stablelm", "vaultgemma", "youtu"), True),
    **dict.fromkeys(("apertus", "arcee", "bloom", "codegen", "falcon", "gpt2", "gpt_bigcode",
                    "gpt_neox", "gptj", "mpt", "opt", "persimmon", "phi", "starcoder2"), False),
}
