"""Model architecture: the shape of a dense decoder-only transformer (Megatron naming)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

from trainsim.config._build import check_fields, require_positive, type_name
from trainsim.config.hybrid import MAMBA_ONLY_FIELDS, MOE, check_hybrid
from trainsim.errors import ConfigError

MAX_LAYERS = 100_000
"""Most transformer layers a model may have (the deepest published LLMs have ~200): the
pipeline-layout search and per-layer accounting loop over them."""


MAX_EXPERTS = 100_000
"""Most routed experts an MoE layer may have (the largest published have 384, Kimi K2): the
parameter layout lists every expert's tensors (fuzz: 2**53 experts ran out of memory)."""


MOE_ONLY_FIELDS = ("moe_router_topk", "moe_ffn_hidden_size", "moe_shared_expert_intermediate_size",
                   "moe_layer_freq", "moe_first_dense_layers", "moe_router_group_topk",
                   "moe_capacity_factor", "moe_pad_expert_input_to_capacity",
                   "moe_token_imbalance", "moe_latent_size")
"""Model fields that only an MoE model (``num_experts`` set) reads; ``moe_router`` is left out:
a framework profile may pick its benchmark gate for every run."""


HF_GELU_ACTIVATIONS = ("gelu", "gelu_10", "gelu_accurate", "gelu_fast", "gelu_new",
                       "gelu_python", "gelu_python_tanh", "gelu_pytorch_tanh", "quick_gelu")
"""The GELU-family names of Hugging Face transformers' ``ACT2FN`` (transformers 5.24.0
activations.py ``ACT2CLS``)."""
HF_EAGER_ACTIVATIONS = (*HF_GELU_ACTIVATIONS, "relu2")
"""The values of ``ModelConfig.hidden_act``: the GELU family and squared ReLU (``relu2``)."""


@dataclass(frozen=True)
class ModelConfig:
    """A decoder-only transformer. Field names follow Megatron-LM's arguments."""

    name: str = "custom"
    hidden_size: int = 4096
    """Model width h."""
    num_layers: int = 32
    """Transformer layers l."""
    num_attention_heads: int = 32
    """Query heads a."""
    num_kv_heads: int | None = None
    """Key/value heads (GQA); None means MHA (= num_attention_heads)."""
    head_dim: int | None = None
    """Per-head width; None means hidden_size / num_attention_heads."""
    ffn_hidden_size: int | None = None
    """MLP inner width; None means 4h (gelu) or Llama's 8h/3 rounded to 256 (swiglu)."""
    vocab_size: int = 32000
    max_position_embeddings: int = 4096
    activation: Literal["gelu", "swiglu"] = "gelu"
    """`gelu`: 2-matrix MLP; `swiglu`: gated MLP with 3 matrices."""
    hidden_act: Literal["gelu", "gelu_10", "gelu_accurate", "gelu_fast", "gelu_new",
                        "gelu_python", "gelu_python_tanh", "gelu_pytorch_tanh",
                        "quick_gelu", "relu2"] | None = None
    """The MLP's activation as Hugging Face transformers' ``ACT2FN`` names it (the config's
    ``hidden_act`` / ``activation_function``; GPT-2's default ``gelu_new``, Nemotron's
    ``relu2``; a gated MLP's gate, Gemma's ``gelu_pytorch_tanh``), for a run that executes the
    model's own eager modules: most are Python formulas, one kernel per PyTorch op
    (``workload.hf_activations``). None = the framework's own GELU or SiLU (one kernel);
    compiled or fused modules run one kernel whatever the name."""
    activation_clamp: float | None = None
    """A gated MLP's inputs clamped before the activation (gate <= c, -c <= up <= c): gpt-oss's
    ``swiglu_limit`` 7.0, Megatron-core's ``activation_func_clamp_value``; None = none."""
    glu_linear_offset: float = 0.0
    """Added to a gated MLP's linear half before the product, ``act(gate) * (up + offset)``:
    gpt-oss's 1 (Hugging Face's ``(up + 1)``; Megatron-Bridge v0.6.0 gpt_oss_bridge.py sets
    ``glu_linear_offset = 1.0`` with ``activation_func = quick_gelu``), Megatron-core's
    ``glu_linear_offset``. With bias-activation fusion Megatron-core allows a non-zero offset
    only for quick-GELU (core_v0.15.0 transformer_config.py), so it marks the quick-GEGLU."""
    normalization: Literal["layernorm", "rmsnorm"] = "layernorm"
    position_embedding: Literal["learned", "rope", "alibi", "none"] = "learned"
    """``learned`` (a position table added after the word embedding), ``rope`` (rotary, on Q
    and K), ``alibi`` (Press et al. 2022: a per-head linear bias added to the attention scores,
    no table; BLOOM) or ``none`` (no position signal at all: the attention layers of Mamba
    hybrids, Megatron-core ``position_embedding_type='none'``; NVIDIA-NeMo/Megatron-Bridge@067f987d
    src/megatron/bridge/models/nemotronh/nemotron_h_bridge.py line 294 sets it for Nemotron-H)."""
    rope_scaling: Literal["yarn"] | None = None
    """RoPE frequencies rescaled for long context (HF ``rope_scaling.rope_type``; gpt-oss and
    Megatron-core ``position_embedding_type='yarn'``); None = plain RoPE."""
    tied_embeddings: bool = True
    """Share the input embedding with the output projection."""
    embedding_norm: bool = False
    """A norm right after the word embedding (BLOOM's ``--embed-layernorm``, Hugging Face
    ``BloomModel.word_embeddings_layernorm``)."""
    add_bias_linear: bool = True
    """Biases on every linear of the layers (Megatron's ``--add-bias-linear``); the three
    switches below override it for one group of linears each."""
    add_qkv_bias: bool | None = None
    """Biases of the Q, K and V projections; None = ``add_bias_linear`` (Megatron's
    ``--add-qkv-bias``; Hugging Face ``attention_bias``; Qwen2's q/k/v_proj ``bias=True``)."""
    add_proj_bias: bool | None = None
    """The attention output projection's bias; None = ``add_bias_linear`` (Hugging Face
    ``attention_bias``; Qwen2's o_proj has none)."""
    add_mlp_bias: bool | None = None
    """Biases of the MLP's (and every expert's) fc1 and fc2; None = ``add_bias_linear``
    (Hugging Face Llama's ``mlp_bias``)."""
    fused_gate_up: bool = True
    """A gated MLP's gate and up projections held as one parameter tensor (Megatron's fc1,
    ``linear_fc1``); False: two tensors, as InternLM's FeedForward holds ``w1`` and ``w2``
    (InternLM/InternEvo@c18bec9 internlm/model/linear.py L146-158). Only the tensor count
    changes (what a framework that moves parameters tensor by tensor issues: ZeRO-3 gathers,
    InternEvo's broadcast owners, bucket boundaries), not the FLOPs, bytes or kernels."""
    attention_dropout: float = 0.0
    hidden_dropout: float = 0.0
    qk_layernorm: bool = False
    """Norms of the queries and keys before RoPE (Megatron ``--qk-layernorm``; Qwen3's and
    OLMo 2's ``q_norm``/``k_norm``), over the width ``qk_norm_span`` says."""
    qk_norm_span: Literal["head", "full"] = "head"
    """What a q/k norm's weight covers: ``head``, each head normed over ``head_dim`` by one
    weight vector shared by the heads (Megatron-core's ``q_layernorm`` built with
    ``hidden_size=self.hidden_size_per_attention_head``; Qwen3's and Gemma 3's ``q_norm``); or
    ``full``, a weight per element of the whole query (heads x head_dim) and key (kv_heads x
    head_dim) widths: OLMo 2's and OLMoE's ``Olmo2RMSNorm(num_attention_heads * head_dim)`` and
    ``(num_key_value_heads * head_dim)`` (transformers 5.24.0 modeling_olmo2.py lines 213-214,
    modeling_olmoe.py lines 222-223) and Command R+'s ``CohereLayerNorm((heads, head_dim))``
    (normed per head, weighed per element). Counts weights only: the step prices the norm
    kernel over the rank's queries and keys either way."""
    norm_bias: bool = True
    """Whether a LayerNorm has a bias beside its weight (Megatron's and torch's LayerNorm do);
    Cohere's ``CohereLayerNorm`` has a weight only (transformers 5.24.0 modeling_cohere.py
    ``CohereLayerNorm.__init__``: ``self.weight`` and no bias). RMSNorm has none either way."""
    post_sublayer_norm: bool = False
    """A norm on the output of each sublayer too, before its residual add: four hidden-size
    norms per layer (input, post-attention, pre-MLP, post-MLP) where a pre-norm layer has two.
    Gemma 2 and 3 (Hugging Face transformers 5.24.0 models/gemma2/modeling_gemma2.py
    ``Gemma2DecoderLayer.__init__`` lines 291-295: ``input_layernorm``,
    ``post_attention_layernorm``, ``pre_feedforward_layernorm``, ``post_feedforward_layernorm``;
    gemma3/modeling_gemma3.py lines 367-370 the same); Megatron-Bridge runs the two extra ones
    as a norm after the row-parallel output projection and fc2
    (NVIDIA-NeMo/Megatron-Bridge@355cef45 src/megatron/bridge/models/gemma/gemma3_provider.py
    ``gemma3_layer_spec``: ``linear_proj=TERowParallelLinearLayerNorm  # post attn RMSNorm``,
    ``linear_fc2=TERowParallelLinearLayerNorm  # post mlp RMSNorm``)."""
    parallel_block: bool = False
    """Attention and MLP computed from the same input (GPT-J/PaLM/MegaScale); later issue."""
    parallel_block_norms: int = 2
    """Hidden-size norms of a parallel block's layer: 1 where attention and MLP read one
    norm's output (Hugging Face transformers 5.24.0 ``GPTJBlock.ln_1``,
    ``CohereDecoderLayer.input_layernorm``, Falcon-7B's ``FalconDecoderLayer.input_layernorm``
    without ``new_decoder_architecture``), 2 where each reads its own (GPT-NeoX/Pythia's
    ``input_layernorm`` and ``post_attention_layernorm`` with ``use_parallel_residual``,
    Falcon-40B/180B's ``ln_attn`` and ``ln_mlp``). Counts the weights, and the step prices a
    norm kernel (and its backward) per norm: with 2, the MLP's own ``parallel_mlp_norm``
    (workload.layers)."""
    sliding_window: int | None = None
    """Sliding-window attention span in tokens; None = full causal attention."""
    attn_logit_softcapping: float | None = None
    """Attention logits soft-capped to ``c * tanh(scores / c)`` before the softmax (Gemma 2: 50,
    Hugging Face ``Gemma2Config.attn_logit_softcapping``; Megatron-Bridge's
    ``Gemma2ModelProvider.attn_logit_softcapping``); None = no cap. Where the scores are in
    memory (unfused, eager) the cap is three elementwise passes over them; a framework whose
    profile names a ``softcap_attention`` kernel runs that one for such a model."""
    attention_chunk_size: int | None = None
    """Chunked attention (Llama 4's ``attention_chunk_size``, 8192): a token attends only
    within its chunk of this many positions on the chunked layers. A sequence no longer than
    the chunk is one chunk, attended as by full causal attention, which is how trainsim runs
    it; a longer one is refused (``RunConfig``): chunked attention is not modelled. None =
    no chunking."""
    window_attn_skip_freq: int | None = None
    """With a sliding window, every N-th layer keeps full attention (Megatron-core's
    ``window_attn_skip_freq``: N-1 windowed layers, then a full one). GPT-OSS alternates, N=2;
    None = every layer is windowed."""
    softmax_type: Literal["vanilla", "off-by-one", "learnable"] = "vanilla"
    """The attention softmax's denominator (Megatron-core ``TransformerConfig.softmax_type``,
    Transformer Engine ``DotProductAttention(softmax_type=...)``): ``vanilla``; ``off-by-one``
    (a 1 added to it, a sink logit fixed at 0); ``learnable`` (a learned sink logit per head:
    gpt-oss, Hugging Face modeling_gpt_oss ``GptOssAttention.sinks``, which Megatron-Bridge's
    gpt_oss_bridge.py maps to ``softmax_type = "learnable"``). One more logit per query row is
    too little work to price; what it changes is which kernels can run the attention
    (``config.training.SINK_ATTENTION``)."""
    # --- multi-head latent attention (DeepSeek-V2/V3; Megatron-core MLATransformerConfig names)
    q_lora_rank: int | None = None
    """Rank of the query down-projection; None = full-rank queries."""
    kv_lora_rank: int | None = None
    """Rank of the joint key/value compression; set it to turn MLA on."""
    qk_head_dim: int = 128
    """MLA: per-head query/key width without the rotary part (DeepSeek's qk_nope_head_dim)."""
    qk_pos_emb_head_dim: int = 64
    """MLA: per-head rotary query/key width (DeepSeek's qk_rope_head_dim)."""
    v_head_dim: int = 128
    """MLA: per-head value width."""
    mtp_num_layers: int = 0
    """Multi-token-prediction modules (DeepSeek-V3): each a transformer layer plus a logit
    head on the last pipeline stage."""
    # --- mixture of experts (Megatron-core names)
    num_experts: int | None = None
    """Routed experts per MoE layer; None = dense model."""
    moe_router_topk: int = 2
    """Experts each token is routed to."""
    moe_ffn_hidden_size: int | None = None
    """Inner width of one routed expert; None = ffn_hidden_size."""
    moe_shared_expert_intermediate_size: int | None = None
    """Total inner width of the shared expert(s) every token goes through; None = none."""
    moe_latent_size: int | None = None
    """Latent MoE (Megatron-core ``moe_latent_size``; Nemotron 3 Super 1024): the routed
    experts run on this width, between a ``fc1_latent_proj`` (h -> latent) before the dispatch
    and a ``fc2_latent_proj`` (latent -> h) after the combine, both TP-duplicated; the router
    and shared experts stay on h (NVIDIA/Megatron-LM@d98e8a64 megatron/core/transformer/moe/
    moe_layer.py lines 266-300 and 476-491, 591-593; experts.py 219, 241). None = none."""
    moe_layer_freq: int = 1
    """Every n-th layer (after the dense ones) is an MoE layer."""
    moe_first_dense_layers: int = 0
    """Leading layers that stay dense (DeepSeek's first_k_dense_replace)."""
    moe_router_group_topk: int | None = None
    """Node-limited routing: a token's experts lie on at most this many nodes, and it crosses
    the network once per node (DeepSeek-V3 §2.1.2: M = 4); None = unrestricted."""
    moe_capacity_factor: float | None = None
    """Tokens an expert accepts, relative to a uniform share; None = dropless."""
    moe_pad_expert_input_to_capacity: bool = False
    """Pad every expert's input to its capacity (static shapes, no token counts to the host),
    Megatron-core's flag of that name (core_v0.14.0 transformer_config.py, default False;
    token_dispatcher.py ``self.drop_and_pad``). Without it a capacity factor only drops tokens
    and the shapes stay dynamic. Megatron-Bridge's token-drop helper sets it
    (training/utils/moe_token_drop.py ``apply_moe_token_drop``, default True)."""
    moe_token_imbalance: float = 1.0
    """Tokens on the busiest expert-parallel rank over the mean (1.0 = uniform routing, as
    SimAI assumes); the slowest rank sets the pace of every all-to-all."""
    moe_router: Literal["learned", "fake_balanced"] = "learned"
    """How tokens pick their experts: ``learned`` (a router; the experts of a token are taken
    as spread uniformly) or ``fake_balanced``, the gate NeMo Automodel's performance runs use
    (``FakeBalancedGate``, nemo_automodel/components/moe/layers.py @ 89e3a9fd): token t goes to
    experts t*k ... t*k+k-1 modulo the experts, k contiguous experts on as few ranks as the
    contiguous expert blocks of expert parallelism allow, every expert equally loaded."""

    # --- hybrid stacks (Megatron-core names; config.hybrid)
    hybrid_layer_pattern: str | None = None
    """One mixer per layer, Megatron-core's ``hybrid_layer_pattern`` (Hugging Face
    ``hybrid_override_pattern``): ``M`` Mamba-2, ``*`` attention, ``-`` MLP, ``E`` MoE, a
    norm before each; None = every layer attention + MLP (or MoE). Parameters and model FLOPs
    are counted; simulating such a run is refused (``RunConfig``) until the step prices it."""
    mamba_num_heads: int | None = None
    """Mamba-2 heads; None = 2 x hidden_size / mamba_head_dim (Megatron-core's default)."""
    mamba_head_dim: int = 64
    """Width of a Mamba-2 head (P in Dao & Gu 2024 §7); Megatron-core ``mamba_head_dim``."""
    mamba_state_dim: int = 128
    """State size N of the SSM; Megatron-core ``mamba_state_dim``, HF ``ssm_state_size``."""
    mamba_num_groups: int = 8
    """Groups sharing one B and C projection (Megatron-core ``mamba_num_groups``, HF
    ``n_groups``); tensor parallelism splits them like the heads."""
    mamba_conv_kernel: int = 4
    """Width of the depthwise causal conv1d (Megatron-core MambaMixer ``d_conv``, HF
    ``conv_kernel``)."""
    mamba_chunk_size: int = 128
    """Chunk length Q of the SSD scan (MambaMixer ``chunk_size``, HF ``chunk_size``)."""

    def __post_init__(self) -> None:
        check_fields(self, "model")
        require_positive("model", hidden_size=self.hidden_size, num_layers=self.num_layers,
                         num_attention_heads=self.num_attention_heads, vocab_size=self.vocab_size,
                         num_kv_heads=self.num_kv_heads, head_dim=self.head_dim,
                         ffn_hidden_size=self.ffn_hidden_size,
                         max_position_embeddings=self.max_position_embeddings,
                         sliding_window=self.sliding_window,
                         window_attn_skip_freq=self.window_attn_skip_freq,
                         attention_chunk_size=self.attention_chunk_size,
                         activation_clamp=self.activation_clamp,
                         attn_logit_softcapping=self.attn_logit_softcapping)
        # latent attention (MLA) sets its heads' widths itself (qk_head_dim, v_head_dim):
        # GLM-4.7-Flash has 20 heads on a 2048 width (zai-org/GLM-4.7-Flash config.json)
        if self.head_dim is None and self.kv_lora_rank is None \
                and self.hidden_size % self.num_attention_heads:
            raise ConfigError(
                f"model.num_attention_heads={self.num_attention_heads} does not divide "
                f"model.hidden_size={self.hidden_size}; set model.head_dim explicitly")
        if self.num_attention_heads % self.kv_heads:
            raise ConfigError(
                f"model.num_kv_heads={self.kv_heads} must divide "
                f"model.num_attention_heads={self.num_attention_heads}")
        require_positive("model", q_lora_rank=self.q_lora_rank, kv_lora_rank=self.kv_lora_rank,
                         qk_head_dim=self.qk_head_dim, v_head_dim=self.v_head_dim)
        # window_attn_skip_freq without sliding_window is accepted and ignored, as
        # Megatron-core does (core_v0.19.0 transformer/utils.py is_layer_window_attention:
        # the skip pattern is read only when window_size is set); a preset's value must not
        # make `sliding_window=null` fail.
        if self.qk_pos_emb_head_dim < 0:  # was accepted: a negative rope width under MLA
            raise ConfigError(f"model.qk_pos_emb_head_dim={self.qk_pos_emb_head_dim} must be "
                              ">= 0")
        if self.mtp_num_layers < 0:
            raise ConfigError(f"model.mtp_num_layers={self.mtp_num_layers} must be >= 0")
        if self.num_layers > MAX_LAYERS or self.mtp_num_layers > self.num_layers:
            raise ConfigError(f"model.num_layers={self.num_layers} (mtp_num_layers="
                              f"{self.mtp_num_layers}) is out of range: at most {MAX_LAYERS:,} "
                              "layers, and no more prediction modules than layers")
        if self.num_experts is not None:
            if self.moe_latent_size is not None and not self.moe_latent_size > 0:
                raise ConfigError(f"model.moe_latent_size={self.moe_latent_size} must be a "
                                  "positive whole number (the routed experts' latent width; "
                                  "Nemotron 3 Super's is 1024), or left out for experts on "
                                  "hidden_size")
            require_positive("model", num_experts=self.num_experts, moe_router_topk=self.moe_router_topk,
                             moe_ffn_hidden_size=self.moe_ffn_hidden_size,
                             moe_layer_freq=self.moe_layer_freq,
                             moe_capacity_factor=self.moe_capacity_factor,
                             moe_router_group_topk=self.moe_router_group_topk,
                             moe_shared_expert_intermediate_size=(
                                 self.moe_shared_expert_intermediate_size),
                             moe_latent_size=self.moe_latent_size)
            if self.moe_latent_size is not None and self.hybrid_layer_pattern is None:
                raise ConfigError(f"model.moe_latent_size={self.moe_latent_size} is priced in a "
                                  "hybrid model's E layers (model.hybrid_layer_pattern) only; "
                                  "leave it out")
            if self.num_experts > MAX_EXPERTS:
                raise ConfigError(f"model.num_experts={self.num_experts} is out of range: at "
                                  f"most {MAX_EXPERTS:,} routed experts")
            if not 0 <= self.moe_first_dense_layers <= self.num_layers:
                raise ConfigError(f"model.moe_first_dense_layers={self.moe_first_dense_layers} "
                                  f"must be from 0 to model.num_layers={self.num_layers}")
            if self.moe_router_topk > self.num_experts:
                raise ConfigError(f"model.moe_router_topk={self.moe_router_topk} exceeds "
                                  f"model.num_experts={self.num_experts}")
            if not 1.0 <= self.moe_token_imbalance <= self.num_experts:
                raise ConfigError(f"model.moe_token_imbalance={self.moe_token_imbalance} must be "
                                  f"from 1 to model.num_experts={self.num_experts} (busiest rank "
                                  "over the mean: at most every token on one rank)")
            if self.moe_capacity_factor is not None and \
                    self.moe_capacity_factor > self.num_experts:
                raise ConfigError(f"model.moe_capacity_factor={self.moe_capacity_factor} exceeds "
                                  f"model.num_experts={self.num_experts}: an expert's capacity "
                                  "is then more than every token of the batch; leave it empty "
                                  "for dropless routing")
            if self.moe_pad_expert_input_to_capacity and self.moe_capacity_factor is None:
                # core_v0.14.0 transformer_config.py: "moe_expert_capacity_factor must be set
                # to use moe_pad_expert_input_to_capacity"
                raise ConfigError("model.moe_pad_expert_input_to_capacity needs "
                                  "model.moe_capacity_factor")
        else:
            dense_default = {f.name: f.default for f in dataclasses.fields(self)
                             if f.name in MOE_ONLY_FIELDS}
            given = [n for n, d in dense_default.items() if getattr(self, n) != d]
            if given:  # nothing prices them on a dense model: refused, not ignored
                raise ConfigError(f"model.{given[0]}={getattr(self, given[0])!r} is a "
                                  "mixture-of-experts setting but the model is dense; set "
                                  "model.num_experts too, or leave it out")
        check_hybrid(self, _MAMBA_DEFAULTS)
        if self.parallel_block_norms not in (1, 2):
            raise ConfigError(f"model.parallel_block_norms={self.parallel_block_norms!r} must be "
                              "1 or 2")
        if self.parallel_block_norms != 2 and not self.parallel_block:
            raise ConfigError("model.parallel_block_norms=1 needs model.parallel_block: a "
                              "sequential layer has an input and a pre-MLP norm")
        if self.post_sublayer_norm and self.parallel_block:
            raise ConfigError("model.post_sublayer_norm needs sequential sublayers: a parallel "
                              "block (model.parallel_block) adds attention and MLP outputs "
                              "from one norm; set one of them false")
        for name in ("attention_dropout", "hidden_dropout"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ConfigError(f"model.{name}={getattr(self, name)} must be in [0, 1)")

    @property
    def moe_padded_to_capacity(self) -> bool:
        """Whether the experts' inputs are padded to the capacity: static shapes (Megatron-core
        ``drop_and_pad``); a capacity factor alone only drops tokens."""
        return self.moe_capacity_factor is not None and self.moe_pad_expert_input_to_capacity

    def moe_recv_factor(self) -> float:
        """Token copies the busiest expert rank takes over those it routes: the capacity when
        padded to it, else the imbalance, capped at the capacity when tokens are dropped."""
        if self.moe_padded_to_capacity:
            return self.moe_capacity_factor
        if self.moe_capacity_factor is not None:
            return min(self.moe_token_imbalance, self.moe_capacity_factor)
        return self.moe_token_imbalance

    @property
    def qkv_bias(self) -> bool:
        """Whether the Q, K and V projections have biases."""
        return self.add_bias_linear if self.add_qkv_bias is None else self.add_qkv_bias

    @property
    def proj_bias(self) -> bool:
        """Whether the attention output projection has a bias."""
        return self.add_bias_linear if self.add_proj_bias is None else self.add_proj_bias

    @property
    def mlp_bias(self) -> bool:
        """Whether the MLP's and the experts' fc1 and fc2 have biases."""
        return self.add_bias_linear if self.add_mlp_bias is None else self.add_mlp_bias

    @property
    def any_linear_bias(self) -> bool:
        """Whether any linear of a layer has a bias."""
        return self.qkv_bias or self.proj_bias or self.mlp_bias

    @property
    def kv_heads(self) -> int:
        return self.num_kv_heads or self.num_attention_heads

    @property
    def kv_channels(self) -> int:
        """Per-head width d (Megatron's --kv-channels)."""
        return self.head_dim or self.hidden_size // self.num_attention_heads

    @property
    def ffn_size(self) -> int:
        if self.ffn_hidden_size is not None:
            return self.ffn_hidden_size
        if self.activation == "gelu":
            return 4 * self.hidden_size
        return 256 * ((int(8 * self.hidden_size / 3) + 255) // 256)

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None

    @property
    def qk_dim(self) -> int:
        """Total query (= key) width over all heads, as attention scores use it."""
        if self.is_mla:
            return self.num_attention_heads * (self.qk_head_dim + self.qk_pos_emb_head_dim)
        return self.q_size

    @property
    def v_dim(self) -> int:
        """Total value (= attention output) width over all heads."""
        return self.num_attention_heads * self.v_head_dim if self.is_mla else self.q_size

    @property
    def is_moe(self) -> bool:
        return self.num_experts is not None

    @property
    def expert_ffn_size(self) -> int:
        return self.moe_ffn_hidden_size or self.ffn_size

    @property
    def expert_input_size(self) -> int:
        """Width the routed experts read and write and the dispatch carries:
        ``moe_latent_size``, else ``hidden_size``."""
        return self.moe_latent_size or self.hidden_size

    def is_moe_layer(self, index: int) -> bool:
        """Whether global layer ``index`` (0-based) has routed experts (a hybrid pattern's
        ``E`` layers)."""
        if self.hybrid_layer_pattern is not None:
            return self.hybrid_layer_pattern[index] == MOE
        return (self.num_experts is not None and index >= self.moe_first_dense_layers
                and (index - self.moe_first_dense_layers) % self.moe_layer_freq == 0)

    def layer_window(self, index: int) -> int | None:
        """Attention span of global layer ``index`` (0-based); None = full causal attention."""
        if self.sliding_window is None:
            return None
        freq = self.window_attn_skip_freq
        return None if freq and (index + 1) % freq == 0 else self.sliding_window

    @property
    def num_moe_layers(self) -> int:
        return sum(self.is_moe_layer(i) for i in range(self.num_layers))

    @property
    def q_size(self) -> int:
        return self.num_attention_heads * self.kv_channels

    @property
    def kv_size(self) -> int:
        return self.kv_heads * self.kv_channels


_MAMBA_DEFAULTS = {f.name: f.default for f in dataclasses.fields(ModelConfig)
                   if f.name in MAMBA_ONLY_FIELDS}


def check_model_source(raw: dict) -> None:
    """Refuse the keys of a model section that say where its fields come from (``preset``,
    ``hf_config``) where they cannot be read. fuzz46: both given read as "unknown field
    model.hf_config"; ``preset: ~`` or a list as "unknown model 'None'"; an empty
    ``hf_config`` as the config file's folder ("Is a directory")."""
    if "preset" in raw and "hf_config" in raw:
        raise ConfigError("model.preset and model.hf_config both give the model's fields; give "
                          "one (the other fields of the section override either)")
    preset = raw.get("preset", "")
    if not isinstance(preset, str) or "preset" in raw and not preset.strip():
        shown = "nothing" if preset is None else f"{type_name(preset)} {str(preset)!r}"
        raise ConfigError(f"model.preset must be a preset name such as llama3-8b, got {shown}")
    hf = raw.get("hf_config")
    if isinstance(hf, str) and not hf.strip():
        raise ConfigError("model.hf_config is empty; give the path to a Hugging Face config.json")
