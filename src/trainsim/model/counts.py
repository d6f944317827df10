"""Parameter counts and FLOPs.

Symbols follow Narayanan et al. 2021 (arXiv:2104.04473) §5.1: h hidden size, l layers,
s sequence length, V vocabulary, a heads; plus d head width, g KV heads (GQA), f MLP width.
"""

from __future__ import annotations

from trainsim.config import ModelConfig, RunConfig
from trainsim.config.hybrid import ATTENTION, MAMBA, MLP, layer_symbol, mtp_layer_indices
from trainsim.model import mamba


def attention_matrices(m: ModelConfig) -> int:
    """Weights of the attention projections (no biases or norms)."""
    h = m.hidden_size
    if m.is_mla:  # DeepSeek-V2 §2.1: low-rank query and joint key/value compression
        heads, rope = m.num_attention_heads, m.qk_pos_emb_head_dim
        q = (h * m.q_lora_rank + m.q_lora_rank * m.qk_dim) if m.q_lora_rank else h * m.qk_dim
        kv = h * (m.kv_lora_rank + rope) + m.kv_lora_rank * heads * (m.qk_head_dim + m.v_head_dim)
        return q + kv + m.v_dim * h
    q, kv = m.q_size, m.kv_size
    return h * (q + 2 * kv) + q * h


def attention_params(m: ModelConfig) -> int:
    if m.is_mla:  # plus the RMSNorms of the compressed query and key/value
        return attention_matrices(m) + (m.q_lora_rank or 0) + (m.kv_lora_rank or 0)
    q, kv = m.q_size, m.kv_size
    bias = (q + 2 * kv if m.qkv_bias else 0) + (m.hidden_size if m.proj_bias else 0)
    return attention_matrices(m) + bias


def mlp_params(m: ModelConfig, width: int | None = None) -> int:
    """A dense MLP of inner ``width`` (default: the model's ffn_hidden_size)."""
    h, f = m.hidden_size, width or m.ffn_size
    mats = 3 if m.activation == "swiglu" else 2
    bias = ((mats - 1) * f + h) if m.mlp_bias else 0
    return mats * h * f + bias


def norm_params(m: ModelConfig) -> int:
    """Weights of one hidden-size norm: RMSNorm's weight, LayerNorm's weight and bias
    (``norm_bias``; Cohere's LayerNorm has no bias)."""
    return m.hidden_size * norm_tensors(m)


def norm_tensors(m: ModelConfig) -> int:
    """Tensors of one norm: weight, and a LayerNorm's bias unless ``norm_bias`` is off."""
    return 2 if m.normalization == "layernorm" and m.norm_bias else 1


def layer_norms(m: ModelConfig) -> int:
    """Hidden-size norms of one transformer layer: the input and pre-MLP norms; with
    ``post_sublayer_norm`` the post-attention and post-MLP ones too (Gemma 2/3: four); a
    parallel block's ``parallel_block_norms`` (Cohere, GPT-J, Falcon-7B: one)."""
    if m.parallel_block:
        return m.parallel_block_norms
    return 4 if m.post_sublayer_norm else 2


def expert_mlp_params(m: ModelConfig) -> int:
    """One routed expert: an MLP of inner ``expert_ffn_size`` on ``expert_input_size`` (the
    latent width of a latent MoE, Megatron-core experts.py lines 219, 241)."""
    d, f = m.expert_input_size, m.expert_ffn_size
    mats = 3 if m.activation == "swiglu" else 2
    return mats * d * f + (((mats - 1) * f + d) if m.mlp_bias else 0)


def latent_proj_params(m: ModelConfig) -> int:
    """A latent MoE's ``fc1_latent_proj`` (h -> latent) and ``fc2_latent_proj`` (latent -> h),
    biased with the linears (moe_layer.py lines 266-300); 0 without one."""
    d, h = m.moe_latent_size, m.hidden_size
    return 2 * h * d + ((d + h) if m.mlp_bias else 0) if d else 0


def expert_params(m: ModelConfig) -> int:
    """Routed-expert parameters of one MoE layer (all experts)."""
    return (m.num_experts or 0) * expert_mlp_params(m)


def moe_dense_params(m: ModelConfig) -> int:
    """Non-expert parameters of an MoE block: router, shared expert(s), latent projections."""
    shared = m.moe_shared_expert_intermediate_size
    return m.hidden_size * (m.num_experts or 0) + (mlp_params(m, shared) if shared else 0) \
        + latent_proj_params(m)


def qk_norm_params(m: ModelConfig) -> int:
    """Weights of the query and key norms (``qk_layernorm``). Per head
    (``qk_norm_span`` "head"): one norm over the head width each, shared by the heads
    (Megatron-core's ``q_layernorm``/``k_layernorm``, built with
    ``hidden_size=self.hidden_size_per_attention_head`` in NVIDIA/Megatron-LM
    megatron/core/transformer/attention.py ``SelfAttention.__init__``; Qwen3's and Gemma 3's
    ``q_norm``/``k_norm`` over ``head_dim``, transformers 5.24.0 modeling_qwen3.py lines
    229-230, modeling_gemma3.py lines 310-311). Full (``"full"``): a weight per element of the
    query and key widths, heads x head_dim and kv_heads x head_dim (OLMo 2, modeling_olmo2.py
    lines 213-214; OLMoE, modeling_olmoe.py lines 222-223; Command R+'s
    ``CohereLayerNorm((heads, head_dim))``). Each times ``norm_tensors`` (a LayerNorm's bias).
    MLA's latent norms are in ``attention_params``."""
    if not m.qk_layernorm or m.is_mla:
        return 0
    return sum(w for w, _ in qk_norm_tensors(m))


def qk_norm_tensors(m: ModelConfig) -> list[tuple[int, bool]]:
    """The q and k norms' tensors (weight, and bias for a LayerNorm with ``norm_bias``) as
    (elements, routed expert)."""
    if not m.qk_layernorm or m.is_mla:
        return []
    widths = (m.q_size, m.kv_size) if m.qk_norm_span == "full" else (m.kv_channels,) * 2
    return [(w, False) for w in widths for _ in range(norm_tensors(m))]


_LAYER_PARAMS: dict[tuple[int, bool | str], tuple[ModelConfig, int]] = {}
"""layer_params by (model identity, routed experts or hybrid symbol), each kept with its (frozen) model so an
identity is never reused while kept: a search asks it of one model ~50,000 times."""


def layer_params(m: ModelConfig, index: int = 0) -> int:
    """Parameters of transformer layer ``index`` (its norms, attention, MLP or MoE block)."""
    moe = m.is_moe_layer(index)
    key = layer_symbol(m, index) or moe
    hit = _LAYER_PARAMS.get((id(m), key))
    if hit is not None and hit[0] is m:
        return hit[1]
    if len(_LAYER_PARAMS) >= 4096:
        _LAYER_PARAMS.clear()
    if m.hybrid_layer_pattern is not None:
        n = sum(t[0] for t in _layer_tensor_kinds(m, index))
    else:
        ffn = moe_dense_params(m) + expert_params(m) if moe else mlp_params(m)
        n = attention_params(m) + ffn + layer_norms(m) * norm_params(m) + qk_norm_params(m)
    _LAYER_PARAMS[(id(m), key)] = (m, n)
    return n


def layer_expert_params(m: ModelConfig, index: int) -> int:
    """The routed-expert part of layer ``index`` (0 for a dense layer)."""
    return expert_params(m) if m.is_moe_layer(index) else 0


def layer_tensors(m: ModelConfig, index: int = 0) -> list[tuple[int, bool]]:
    """Parameter tensors of layer ``index`` as Megatron lays them out, as (elements, routed
    expert): fused QKV, output projection, fc1 (gate and up fused for SwiGLU, apart where
    ``fused_gate_up`` is False), fc2, their biases and the norms; for an MoE layer the router, shared experts and every routed
    expert's fc1 and fc2. Frameworks that gather parameters one tensor at a time (DeepSpeed
    ZeRO-3) issue one collective per tensor. Their sum is ``layer_params``."""
    return [(n, expert) for n, expert, _ in _layer_tensor_kinds(m, index)]


def layer_matrices(m: ModelConfig, index: int = 0) -> list[bool]:
    """For each of ``layer_tensors(m, index)``, whether it is a linear layer's weight (QKV,
    output projection, fc1, fc2 of the MLP and of every expert: the weights Transformer
    Engine's modules hold, kept in fp8 under fp8 parameters), not a bias, norm or router."""
    return [matrix for *_, matrix in _layer_tensor_kinds(m, index)]


def _layer_tensor_kinds(m: ModelConfig, index: int) -> list[tuple[int, bool, bool]]:
    """``layer_tensors`` with each tensor's ``layer_matrices`` flag."""
    if m.hybrid_layer_pattern is not None:
        return _hybrid_tensor_kinds(m, index)
    h = m.hidden_size
    mats = 3 if m.activation == "swiglu" else 2
    proj_bias, mlp_bias = m.proj_bias, m.mlp_bias
    norms = [(h, False, False)] * norm_tensors(m)
    attn = attention_params(m)
    qkv = attention_matrices(m) - m.v_dim * h
    out: list[tuple[int, bool, bool]] = [(qkv, False, True), (m.v_dim * h, False, True),
                                         *norms * layer_norms(m)]
    out += [(n, e, False) for n, e in qk_norm_tensors(m)]  # q_norm, k_norm (and biases)
    rest = attn - qkv - m.v_dim * h  # biases (QKV's, the output projection's) and MLA's norms
    if rest:
        out.append((rest - (h if proj_bias else 0), False, False))
        if proj_bias:
            out.append((h, False, False))

    # fc1 (gate and up fused under SwiGLU), or gate and up apart (``fused_gate_up``)
    fc1 = [mats - 1] if m.fused_gate_up else [1] * (mats - 1)

    def mlp(width: int, expert: bool) -> list[tuple[int, bool, bool]]:
        t = [(j * h * width, expert, True) for j in fc1] + [(width * h, expert, True)]
        if mlp_bias:
            t += [(j * width, expert, False) for j in fc1] + [(h, expert, False)]
        return t

    if m.is_moe_layer(index):
        out.append((h * (m.num_experts or 0), False, False))
        if m.moe_shared_expert_intermediate_size:
            out += mlp(m.moe_shared_expert_intermediate_size, False)
        out += mlp(m.expert_ffn_size, True) * (m.num_experts or 0)
    else:
        out += mlp(m.ffn_size, False)
    return [t for t in out if t[0] > 0]


def _hybrid_tensor_kinds(m: ModelConfig, index: int) -> list[tuple[int, bool, bool]]:
    """The tensors of hybrid layer ``index`` (``config.hybrid``): its one pre-norm, then its
    mixer: the Mamba-2 mixer's (``model.mamba``), attention's (fused QKV, output projection,
    q/k norms, biases), an MLP's, or an MoE block's (router, shared experts, routed experts).
    Megatron-core's hybrid layers hold one mixer each (NVIDIA/Megatron-LM@d98e8a64
    megatron/core/models/hybrid/hybrid_layer_specs.py lines 110-240: ``mamba_layer`` a
    MambaLayer, ``attention_layer`` a TransformerLayer with attention only, ``mlp_layer`` an
    MLPLayer, ``moe_layer`` a TransformerLayer with the MoE block only)."""
    symbol, h = layer_symbol(m, index), m.hidden_size
    out: list[tuple[int, bool, bool]] = [(h, False, False)] * norm_tensors(m)
    if symbol == MAMBA:
        return out + [(n, False, matrix) for n, matrix in mamba.mixer_tensors(m)]
    if symbol == ATTENTION:
        qkv = attention_matrices(m) - m.v_dim * h
        out += [(qkv, False, True), (m.v_dim * h, False, True)]
        out += [(n, e, False) for n, e in qk_norm_tensors(m)]
        if m.qkv_bias:
            out.append((m.q_size + 2 * m.kv_size, False, False))
        if m.proj_bias:
            out.append((h, False, False))
        return out
    mats = 3 if m.activation == "swiglu" else 2

    def mlp(width: int, expert: bool) -> list[tuple[int, bool, bool]]:
        t = [((mats - 1) * h * width, expert, True), (width * h, expert, True)]
        if m.mlp_bias:
            t += [((mats - 1) * width, expert, False), (h, expert, False)]
        return t
    if symbol == MLP:
        return out + mlp(m.ffn_size, False)
    out.append((h * (m.num_experts or 0), False, False))
    if m.moe_shared_expert_intermediate_size:
        out += mlp(m.moe_shared_expert_intermediate_size, False)
    d, f = m.expert_input_size, m.expert_ffn_size
    if m.moe_latent_size:  # fc1_latent_proj, fc2_latent_proj (and their biases)
        out += [(h * d, False, True), (d * h, False, True)]
        if m.mlp_bias:
            out += [(d, False, False), (h, False, False)]
    expert = [((mats - 1) * d * f, True, True), (f * d, True, True)]
    if m.mlp_bias:
        expert += [((mats - 1) * f, True, False), (d, True, False)]
    return out + expert * (m.num_experts or 0)


def _hybrid_matmul_params(m: ModelConfig, index: int) -> int:
    """Matmul weights one token passes through in hybrid layer ``index`` (MoE: router,
    shared experts and its top-k routed experts)."""
    symbol, h = layer_symbol(m, index), m.hidden_size
    mats = 3 if m.activation == "swiglu" else 2
    if symbol == MAMBA:
        return mamba.matmul_params(m)
    if symbol == ATTENTION:
        return attention_matrices(m)
    if symbol == MLP:
        return mats * h * m.ffn_size
    return h * (m.num_experts or 0) + mats * h * (m.moe_shared_expert_intermediate_size or 0) \
        + 2 * h * (m.moe_latent_size or 0) \
        + m.moe_router_topk * mats * m.expert_input_size * m.expert_ffn_size


def _hybrid_mixer_work(m: ModelConfig, seq_length: int, index: int) -> float:
    """Forward FLOPs per token of hybrid layer ``index`` outside its weights: the attention
    core (``2 (qk + v) span``) of an attention layer, the SSD scan of a Mamba layer."""
    symbol = layer_symbol(m, index)
    if symbol == ATTENTION:
        return 2.0 * (m.qk_dim + m.v_dim) * _span(m, seq_length, index)
    return mamba.scan_flops(m, seq_length) if symbol == MAMBA else 0.0


def embedding_params(m: ModelConfig) -> int:
    """Input word embedding plus learned position embedding and embedding norm (if any)."""
    pos = m.max_position_embeddings * m.hidden_size if m.position_embedding == "learned" else 0
    return m.vocab_size * m.hidden_size + pos + (norm_params(m) if m.embedding_norm else 0)


def output_layer_params(m: ModelConfig) -> int:
    """Final norm plus the output projection when it is not tied to the embedding."""
    return norm_params(m) + (0 if m.tied_embeddings else m.vocab_size * m.hidden_size)


def mtp_params(m: ModelConfig) -> int:
    """Multi-token-prediction modules (DeepSeek-V3 §2.2): a transformer layer like the last one,
    a 2h -> h projection and two RMSNorms each; embedding and output head are shared."""
    per = sum(layer_params(m, i) for i in mtp_layer_indices(m)) + \
        2 * m.hidden_size * m.hidden_size + 2 * norm_params(m)
    return m.mtp_num_layers * per


def total_params(m: ModelConfig) -> int:
    layers = sum(layer_params(m, i) for i in range(m.num_layers))
    return layers + embedding_params(m) + output_layer_params(m) + mtp_params(m)


def active_params(m: ModelConfig) -> int:
    """Parameters one token passes through (routed experts: only its top-k)."""
    moe_layers = m.num_moe_layers + m.mtp_num_layers * sum(
        m.is_moe_layer(i) for i in mtp_layer_indices(m))
    idle = expert_params(m) - m.moe_router_topk * expert_mlp_params(m)
    return total_params(m) - moe_layers * idle


def _matmul_params(m: ModelConfig) -> int:
    """Parameters that take part in a matmul per token: the layers' matrices (for MoE layers
    the router, shared experts and top-k routed experts) plus the logit layer."""
    h = m.hidden_size
    if m.hybrid_layer_pattern is not None:  # MTP depths: their layers, eh_proj, the head
        per_mtp = sum(_hybrid_matmul_params(m, i) for i in mtp_layer_indices(m)) + \
            2 * h * h + m.vocab_size * h
        return sum(_hybrid_matmul_params(m, i) for i in range(m.num_layers)) + \
            m.vocab_size * h + m.mtp_num_layers * per_mtp
    mats = 3 if m.activation == "swiglu" else 2
    attn = attention_matrices(m)
    dense = mats * h * m.ffn_size
    shared = mats * h * (m.moe_shared_expert_intermediate_size or 0)
    moe = h * (m.num_experts or 0) + shared + m.moe_router_topk * mats * h * m.expert_ffn_size
    n_moe = m.num_moe_layers
    per_mtp = attn + (moe if m.is_moe_layer(m.num_layers - 1) else dense) + 2 * h * h + m.vocab_size * h
    return (m.num_layers * attn + (m.num_layers - n_moe) * dense + n_moe * moe + m.vocab_size * h
            + m.mtp_num_layers * per_mtp)


def _attention_work(m: ModelConfig, seq_length: int) -> int:
    """Score (QK^T) plus context (AV) matmul width times the keys each query sees, summed over
    layers: 2 l a d s for MHA/GQA; a windowed layer sees min(s, window) keys. MTP modules
    repeat the last layer."""
    if m.hybrid_layer_pattern is not None:  # attention layers only (the MTP depths' too)
        layers = [*range(m.num_layers), *mtp_layer_indices(m) * m.mtp_num_layers]
        return (m.qk_dim + m.v_dim) * sum(_span(m, seq_length, i) for i in layers
                                          if layer_symbol(m, i) == ATTENTION)
    spans = sum(_span(m, seq_length, i) for i in range(m.num_layers)) + \
        m.mtp_num_layers * _span(m, seq_length, m.num_layers - 1)
    return (m.qk_dim + m.v_dim) * spans


def _span(m: ModelConfig, seq_length: int, i: int) -> int:
    """Keys a query of layer ``i`` sees: the sequence, or the window of a windowed layer."""
    w = m.layer_window(i)
    return seq_length if w is None else min(seq_length, w)


def _layer_forward_flops(m: ModelConfig, seq_length: int, i: int) -> float:
    """Forward FLOPs per token of transformer layer ``i``: its matmuls (attention projections;
    dense MLP, or router, shared and top-k routed experts) and its attention core (not halved)."""
    h = m.hidden_size
    if m.hybrid_layer_pattern is not None:
        return 2.0 * _hybrid_matmul_params(m, i) + _hybrid_mixer_work(m, seq_length, i)
    mats = 3 if m.activation == "swiglu" else 2
    if m.is_moe_layer(i):
        ffn = h * (m.num_experts or 0) + mats * h * (m.moe_shared_expert_intermediate_size or 0) \
            + m.moe_router_topk * mats * h * m.expert_ffn_size
    else:
        ffn = mats * h * m.ffn_size
    return 2.0 * (attention_matrices(m) + ffn) + \
        2.0 * (m.qk_dim + m.v_dim) * _span(m, seq_length, i)


def model_flops_per_token(m: ModelConfig, seq_length: int) -> float:
    """Model FLOPs per token for forward + backward, without recomputation.

    ``6 N`` (N: matmul parameters, including the logit layer) plus ``12 l (a d) s`` for the
    attention score and context matmuls, causal masking *not* halved — the convention of
    PaLM (Chowdhery et al. 2022, App. B) and Megatron (Narayanan et al. 2021, eq. 3 without
    the recompute pass). This is what MFU divides by. A hybrid model (``config.hybrid``)
    counts each layer's own mixer: its matmul weights, the attention core of its ``*`` layers
    and the SSD chunk scan of its ``M`` layers (``model.mamba.scan_flops``), three times the
    forward, as the attention core.
    """
    hit = _MODEL_FLOPS.get((id(m), seq_length))
    if hit is not None and hit[0] is m:
        return hit[1]
    if len(_MODEL_FLOPS) >= 256:
        _MODEL_FLOPS.clear()
    if m.hybrid_layer_pattern is not None:  # the attention cores and the SSD scans
        layers = [*range(m.num_layers), *mtp_layer_indices(m) * m.mtp_num_layers]
        out = 6.0 * _matmul_params(m) + 3.0 * sum(
            _hybrid_mixer_work(m, seq_length, i) for i in layers)
    else:
        out = 6.0 * _matmul_params(m) + 6.0 * _attention_work(m, seq_length)
    _MODEL_FLOPS[(id(m), seq_length)] = (m, out)
    return out


_MODEL_FLOPS: dict[tuple[int, int], tuple[ModelConfig, float]] = {}
""":func:`model_flops_per_token` by (model identity, sequence length), kept with the model (an
identity is never reused while kept; a config is frozen): every simulation asks it twice, a
search's ~10^3 of one model (a loop over the layers each time)."""


SCORES_IN_MEMORY = ("unfused", "eager")
"""Attention kernels that keep the score matrix (``workload.ops.MATERIALIZED_SCORES``, which
the model layer may not import; a test keeps the two equal)."""


def _per_op_sac_params(m: ModelConfig, split: bool, every: bool = False) -> int:
    """Matmul parameters per token of a dense (not MLA) layer that torchtitan's per-op
    selective checkpointing re-runs (``workload.recompute.per_op_sac_recompute``: the policy
    saves every other ``aten.mm``, the 1st, 3rd, ...), in the order the layer runs them: with
    ``split`` projections (``workload.shard.separate_projections``; torchtitan's Llama block:
    wq, wk, wv, wo, w1, w3, w2, torchtitan/models/llama/model.py) wk, wo and w3, else of a fused
    QKV and a fused gate/up the output projection and the down projection; ``every``: all of
    them (TorchAO's NVFP4 linears run no ``aten.mm``: ``workload.recompute.
    per_op_sac_saves_no_gemm``)."""
    h, f, q, kv = m.hidden_size, m.ffn_size, m.q_size, m.kv_size
    gated = m.activation == "swiglu"
    if split:
        gemms = [h * q, h * kv, h * kv, q * h] + ([h * f, h * f] if gated else [h * f])
    else:
        gemms = [h * (q + 2 * kv), q * h, (2 if gated else 1) * h * f]
    return sum(gemms + [f * h]) if every else sum((gemms + [f * h])[1::2])


def _per_op_layer(m: ModelConfig, i: int) -> bool:
    """Whether per-op checkpointing re-runs layer ``i``'s matmuls by :func:`_per_op_sac_params`
    (a dense layer; the time path keeps the module rule for grouped-GEMM MoE layers)."""
    return not m.is_mla and not m.is_moe_layer(i)


def _rerun_matmul_params(m: ModelConfig, modules: tuple[str, ...],
                         per_op_sac: bool | None = None,
                         every: frozenset[int] = frozenset()) -> int:
    """Matmul parameters per token whose forward selective recompute re-runs, over all layers
    (the MTP modules' like the last layer): the Megatron-core ``--recompute-modules`` with
    matmuls, the pieces ``workload.recompute.RECOMPUTED_OPS`` re-runs. ``mlp``: a dense layer's
    MLP (transformer_layer.py ``recompute_mlp``, not in an MoE layer); ``moe``: the MoE layer's
    router, top-k routed experts and shared experts (moe_layer.py ``custom_forward``);
    ``shared_experts``: the shared experts; ``mla_up_proj``: MLA's query and key/value
    up-projections, the query's whole projection without a query LoRA (``linear_q_proj``;
    multi_latent_attention.py ``qkv_up_proj_and_rope_apply``). ``layernorm``
    and ``moe_act`` re-run no matmul; ``core_attn`` is counted apart. ``every``: the layers
    whose per-op checkpointing keeps no matmul output (NVFP4 layers), which re-run them all."""
    h = m.hidden_size
    mats = 3 if m.activation == "swiglu" else 2
    shared = mats * h * (m.moe_shared_expert_intermediate_size or 0)
    moe = h * (m.num_experts or 0) + 2 * h * (m.moe_latent_size or 0) + \
        m.moe_router_topk * mats * m.expert_input_size * m.expert_ffn_size
    up = 0
    if m.is_mla and "mla_up_proj" in modules:
        heads = m.num_attention_heads
        up = (m.q_lora_rank if m.q_lora_rank else h) * m.qk_dim + \
            m.kv_lora_rank * heads * (m.qk_head_dim + m.v_head_dim)

    def layer(i: int) -> int:
        if per_op_sac is not None and _per_op_layer(m, i):
            return _per_op_sac_params(m, per_op_sac, i in every)
        if not m.is_moe_layer(i):
            return up + (mats * h * m.ffn_size if "mlp" in modules else 0)
        # a selected shared_experts checkpoint nested in moe's re-runs twice (recompute.py)
        return up + (moe if "moe" in modules else 0) + \
            shared * (("moe" in modules) + ("shared_experts" in modules))
    return sum(layer(i) for i in range(m.num_layers)) + \
        m.mtp_num_layers * sum(layer(i) for i in mtp_layer_indices(m))


def _no_mm_layers(cfg: RunConfig, per_op_sac: bool | None) -> frozenset[int]:
    """Layers whose linears per-op checkpointing saves no output of: NVFP4 layers (TorchAO's
    NVFP4 linears, ``workload.recompute.per_op_sac_saves_no_gemm``), not those kept in bf16."""
    t = cfg.training
    if per_op_sac is None or t.dtype != "fp8" or t.fp8_recipe != "nvfp4":
        return frozenset()
    return frozenset(range(cfg.model.num_layers)) - cfg.bf16_layers


def hardware_flops_per_iteration(cfg: RunConfig, checkpointed_fused_attention: bool = False,
                                 per_op_sac: bool | None = None,
                                 per_op_sac_attention: bool = False,
                                 remat_dce: bool = False,
                                 remat_kept: tuple[float, ...] | None = None) -> float:
    """FLOPs the GPUs execute in one iteration, recomputation included (for HFU).

    Full recompute adds one more forward of every recomputed layer (Narayanan et al. 2021,
    eq. 3: factor 4 instead of 3 on the layer terms): ``RunConfig.recomputed_layers``, the first
    ``recompute_num_layers`` of each model chunk or all, and the MTP modules' layers and
    ``eh_proj`` where ``RunConfig.mtp_recomputed``, as the time path re-runs them (``chunks``);
    selective recompute adds the forward matmuls of
    the checkpointed modules (``_rerun_matmul_params``) and of the attention core (Korthikanti
    et al. 2022 §4.2) where it is re-run: always for an attention
    keeping the score matrix; for a fused (flash, cuDNN) kernel only where the framework
    checkpoints it too (``checkpointed_fused_attention``, which the caller reads from the
    run's profile with ``workload.recompute.core_attn_rerun``, the rule the time path uses:
    Megatron-core re-runs it, legacy Megatron-LM under flash does not). ``per_op_sac``: under the
    profile's per-op selective checkpointing (torchtitan), whether the layer projects Q, K, V
    (and gate, up) separately (None: no per-op checkpointing); its dense layers re-run every
    other matmul (:func:`_per_op_sac_params`) and keep the attention's output, unless
    ``per_op_sac_attention`` (``workload.recompute.per_op_sac_reruns_attention``: a cuDNN
    attention the policy's save list does not name), which re-runs its forward. ``remat_dce``
    (``workload.recompute.remat_dce``: JAX's jax.checkpoint): a dense layer re-run in full or
    for its ``mlp`` module leaves out the MLP's output projection, whose output no gradient
    reads. ``remat_kept`` (``workload.remat_policy.kept_matmul_params``): under a stated JAX
    remat policy, the matmul parameters a dense layer and an MoE layer do not re-run; every
    other forward FLOP of each layer, the attention core's included, runs again (``()``: the
    policy keeps everything, nothing runs again).
    """
    m, tokens = cfg.model, cfg.tokens_per_iteration
    s = cfg.training.seq_length
    base = model_flops_per_token(m, s) * tokens
    full = 0.0
    if cfg.parallel.recompute == "full":
        redo = cfg.recomputed_layers
        full = sum(_layer_forward_flops(m, s, i) for i in redo)
        if cfg.mtp_recomputed:  # the MTP layer and its eh_proj (2h -> h)
            full += m.mtp_num_layers * (sum(_layer_forward_flops(m, s, i)
                                            for i in mtp_layer_indices(m)) +
                                        2.0 * 2 * m.hidden_size * m.hidden_size)
    modules = cfg.parallel.recompute_modules or ("core_attn",)
    rerun = (cfg.training.attention in SCORES_IN_MEMORY or checkpointed_fused_attention) and \
        "core_attn" in modules
    if per_op_sac is not None and all(_per_op_layer(m, i) for i in range(m.num_layers)):
        rerun = per_op_sac_attention  # else the policy saves the attention's output
    selective = (2.0 * _attention_work(m, s) if rerun else 0.0) + \
        2.0 * _rerun_matmul_params(m, modules, per_op_sac, _no_mm_layers(cfg, per_op_sac))
    if remat_dce and m.hybrid_layer_pattern is None:
        fc2 = 2.0 * m.hidden_size * m.ffn_size  # forward FLOPs per token of a dense layer's fc2
        if cfg.parallel.recompute == "full":
            full -= fc2 * sum(not m.is_moe_layer(i) for i in cfg.recomputed_layers)
        elif "mlp" in modules and per_op_sac is None:
            selective -= fc2 * sum(not m.is_moe_layer(i) for i in range(m.num_layers))
    if remat_kept is not None and cfg.parallel.recompute != "none":
        s_ = cfg.training.seq_length
        full = selective = sum(_layer_forward_flops(m, s_, i) - 2.0 * remat_kept[
            1 if m.is_moe_layer(i) else 0] for i in range(m.num_layers)) if remat_kept else 0.0
    extra = {"none": 0.0, "full": full, "selective": selective}[cfg.parallel.recompute]
    return base + extra * tokens
