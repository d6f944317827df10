"""Activations of one layer for one micro-batch on one rank, following Korthikanti et al. 2022
(arXiv:2205.05198): :func:`activation_bytes_per_layer` and the expert block's, the MLP's and
selective recompute's terms it is made of.

16-bit tensors and 1-byte dropout masks are written out tensor by tensor so that GQA, SwiGLU,
FlashAttention and dropout-free models are covered; for a GPT layer with dropout and unfused
attention it reduces to Table 2 of the paper: ``s b h (34 + 5 a s / h)`` without parallelism,
``s b h (10 + 24/t + 5 a s/(h t))`` with tensor parallelism, ``s b h / t (34 + 5 a s / h)``
with sequence parallelism, the ``5 a s / h`` term dropped by selective recompute and
``2 s b h`` (``/t`` with SP) under full recompute. How many layers' worth a stage keeps at its
peak is ``memory.estimate``'s.
"""

from __future__ import annotations

from trainsim.catalog.frameworks import profile_supports
from trainsim.config import RunConfig
from trainsim.config.hybrid import MAMBA, MLP, MOE
from trainsim.memory import hf, moe_titan
from trainsim.memory.graph_outputs import moe_graph_output_bytes, pre_mlp_norm_recomputed
from trainsim.memory.mla import mla_attention_bytes
from trainsim.memory.saved_inputs import E5M6_SAVED_BYTES, gemm_input_bytes
from trainsim.memory.scores import score_bytes
from trainsim.memory.te_spec import input_norm_fused, pre_mlp_norm_fused, qkv_copies
from trainsim.model.mamba import in_proj_width, inner
from trainsim.workload.hf_activations import gated_saved_beyond_fused, saved_bytes_per_element
from trainsim.workload.moe_block import titan_style
from trainsim.workload.ops import MATERIALIZED_SCORES
from trainsim.workload.recompute import per_op_sac_reruns_attention, per_op_sac_saves_no_gemm
from trainsim.workload.remat_policy import kept_bytes_per_token, remat_policy
from trainsim.workload.shard import separate_projections


def activation_bytes_per_layer(cfg: RunConfig, recompute: str | None = None,
                               moe: bool | str = False, separate_qkv: bool | None = None) -> float:
    """Bytes one layer keeps for backward, per micro-batch, on one rank (``moe``: a layer with
    routed experts in place of the dense MLP, or a hybrid layer's symbol, ``hybrid_layer_bytes``;
    ``separate_qkv``: whether Q, K and V come from three projections, by default as
    ``workload.shard.separate_projections`` says)."""
    m, p, tr = cfg.model, cfg.parallel, cfg.training
    recompute = recompute or p.recompute
    if isinstance(moe, str) and recompute != "full":
        return hybrid_layer_bytes(cfg, recompute, moe)
    if hf.applies(cfg, recompute, moe):  # Hugging Face's modules, as autograd saves them
        # plus the scores an eager attention keeps (memory.scores): the per-token sums were
        # measured under SDPA, whose rotated Q, output and GQA copies the eager path saves
        # alike (its QK^T matmul keeps Q and the repeated K, its PV matmul the repeated V, the
        # out-projection the transposed copy of PV's output), while the s x s probabilities
        # exist only here
        scores = 0.0
        if tr.attention in MATERIALIZED_SCORES:
            scores = score_bytes(cfg, tr.micro_batch_size, m.num_attention_heads / p.tp,
                                 tr.seq_length / p.cp, tr.seq_length, False)
        return hf.hf_layer_bytes(cfg) + scores
    t, sp = p.tp, p.sequence_parallel
    T = tr.micro_batch_size * tr.seq_length / p.cp  # local tokens
    b, q_len, kv_len = tr.micro_batch_size, tr.seq_length / p.cp, tr.seq_length
    h, q, kv, f = m.hidden_size, m.q_size, m.kv_size, m.ffn_size
    kv_loc = max(kv / t, m.kv_channels)
    mask = 1.0 if m.hidden_dropout > 0 else 0.0
    shared_div = t if sp else 1
    if not moe and remat_policy(cfg) is not None and recompute != "none":
        # a JAX remat policy: the layer's input and the outputs it keeps (everything: as none)
        kept = kept_bytes_per_token(cfg)
        return T * kept if kept is not None else activation_bytes_per_layer(cfg, "none")
    if recompute == "full":  # the checkpoint keeps the layer's input: fp32 under autocast
        # with fp32 parameters (memory.hf.AUTOCAST_PER_TOKEN: the residual stream is fp32)
        return (4.0 if hf.autocast_fp32_params(cfg) else 2.0) * T * h / shared_div
    if recompute == "selective" and not moe and not m.is_mla and profile_supports(cfg, "per_op_sac"):
        return _per_op_sac_bytes(cfg)
    x = gemm_input_bytes(cfg)
    # replicated over TP unless sequence parallel: two norm inputs, QKV and FC1 inputs, masks
    # (a parallel block has one norm whose output feeds both QKV and FC1, and one mask)
    per_token = (2 + x + mask) if m.parallel_block else (2 + x + mask + 2 + x + mask)
    if m.post_sublayer_norm:  # each post-sublayer norm keeps its 16-bit input (Gemma 2/3)
        per_token += 2 * 2
    shared = T * h * per_token / shared_div
    # sharded over TP: Q, K, V, attention output (out-proj input), MLP intermediates
    mlp_inner = _inner_bytes(cfg, f)
    # Q, K, V as attention's backward keeps them (measured with saved_tensors_hooks on
    # Megatron-style layers, tests/test_memory_torch.py): slices of the fused QKV output stay
    # views of it; RoPE writes new rotated Q and K; Megatron's unfused attention expands K and V
    # to one head per query head for GQA (repeat_interleave), so those are copies too.
    fused = 2 * (q / t + 2 * kv_loc)
    rope = m.position_embedding == "rope"
    if m.is_mla:  # Q, K (with rotary parts), V per head, the latents, projections' copies
        qkv = mla_attention_bytes(cfg, recompute, x, shared_div)
    elif cfg.training.attention in MATERIALIZED_SCORES and kv_loc < q / t:
        qkv = 2 * q / t * 3 if rope else fused + 2 * 2 * q / t
    elif rope and (separate_projections(cfg) if separate_qkv is None else separate_qkv):
        # three projections (workload.shard.separate_projections): nothing keeps the unrotated Q and K
        # (RoPE's backward needs only its cos/sin tables), so only rotated Q and K and the V
        # projection's output stay: as many bytes as one fused QKV buffer
        qkv = fused
    elif rope and cfg.training.attention not in MATERIALIZED_SCORES and qkv_copies(cfg, recompute):
        # Transformer Engine's attention copies Q, K and V contiguous and saves the copies:
        # the rotated Q and K and V's copy, no fused buffer (memory.te_spec)
        qkv = fused
    else:
        qkv = fused + (2 * (q / t + kv_loc) if rope else 0.0)
    if cfg.training.attention not in MATERIALIZED_SCORES and not m.is_mla and not (
            recompute == "selective" and "core_attn" in (p.recompute_modules or ("core_attn",))):
        qkv += hf.repeated_kv_bytes(cfg, q / t, kv_loc)  # SDPA keeps the copies it was given
    if m.qk_layernorm:  # the per-head q/k norms keep their 16-bit inputs
        qkv += 2 * (q / t + kv_loc)
    # the attention output, the out-projection's GEMM input: under fp8 that GEMM saves its own
    # 8-bit cast (x), while a fused attention kernel also keeps the 16-bit output it wrote for
    # its own backward (TransformerEngine dot_product_attention/backends.py FusedAttnFunc
    # saves ``out`` beside q, k, v unless fp8_dpa; flash-attn saves ``out`` with the
    # log-sum-exp); in 16-bit both save the same tensor. Recomputing core attention keeps only
    # the projection's copy; DeepSeek-V3's one E5M6 copy serves both (attention_output_e5m6)
    out = x
    if x != 2 and tr.attention_output_e5m6:
        out = E5M6_SAVED_BYTES
    elif x != 2 and cfg.training.attention not in MATERIALIZED_SCORES and not (
            recompute == "selective" and "core_attn" in (p.recompute_modules or ("core_attn",))):
        out += 2
    sharded = T * (qkv + out * m.v_dim / t) + T * mlp_inner / t
    heads = m.num_attention_heads / t
    scores = score_bytes(cfg, b, heads, q_len, kv_len, recompute == "selective")
    total = shared + sharded + scores
    if moe:  # swap the dense MLP's tensors for the expert block's
        total += _moe_block_bytes(cfg) - _mlp_block_bytes(cfg, f, shared_div)
        total += moe_graph_output_bytes(cfg)  # a partial CUDA graph's outputs (graph_outputs)
    if recompute == "selective":
        total -= _selective_savings(cfg, moe, T, shared_div)
    return total


def hybrid_layer_bytes(cfg: RunConfig, recompute: str, symbol: str) -> float:
    """Bytes a hybrid layer (``config.hybrid``: one pre-norm and one block) keeps for backward
    under Megatron-core, without full recompute (which keeps the layer's input, as any layer).

    ``M`` (``workload.mamba_block``): the fused norm's input and ``in_proj``'s GEMM input
    (TE's LayerNormLinear, as the QKV's), the dropout mask; the fused scan's ``zxBCdt`` and
    its ungated output (state-spaces/mamba@e9594ce1 ssd_combined.py line 888: neither the conv
    output nor the chunk states, which its backward recomputes), the gated RMSNorm's input and
    fp32 rstd per group (mamba_ssm layernorm_gated.py), and ``out_proj``'s GEMM input (the
    norm's output). Selective recompute changes nothing in a Mamba layer: neither
    megatron/core/ssm/mamba_layer.py nor mamba_mixer.py reads ``recompute_granularity`` or
    ``recompute_modules`` (NVIDIA/Megatron-LM@d98e8a64; only hybrid_block.py line 360 checkpoints
    whole layers under ``full``). ``*``: a transformer layer's bytes less its MLP half; ``-``
    that half; ``E`` the expert block's with its dropout mask (each with what selective
    recompute frees of it)."""
    m, p, tr = cfg.model, cfg.parallel, cfg.training
    t, sp = p.tp, p.sequence_parallel
    T = tr.micro_batch_size * tr.seq_length / p.cp
    h, shared_div = m.hidden_size, (t if sp else 1)
    mask = 1.0 if m.hidden_dropout > 0 else 0.0
    x = gemm_input_bytes(cfg)
    if symbol == MAMBA:
        d, groups = inner(m), m.mamba_num_groups
        per = 2 * in_proj_width(m) + 2 * d + 2 * d + x * d + 4 * groups
        return T * h * (2 + x + mask) / shared_div + T * per / t
    selective = recompute == "selective"
    modules = set(p.recompute_modules or ("core_attn",)) if selective else set()
    # the MLP half's share of _selective_savings: its inner tensors, the FC1 input
    mlp_freed = (T * _inner_bytes(cfg, m.ffn_size) / t + _mlp_fused_norm_freed(cfg, T, shared_div)
                 if "mlp" in modules else 0.0)
    if "layernorm" in modules and not pre_mlp_norm_fused(cfg):
        mlp_freed += T * h * x / shared_div
    if symbol == MOE:
        freed = _selective_savings(cfg, True, T, shared_div) if selective else 0.0
        if "layernorm" in modules and not input_norm_fused(cfg):
            freed -= T * h * x / shared_div  # the attention's QKV input: not in this layer
        return (_moe_block_bytes(cfg) + moe_graph_output_bytes(cfg)
                + T * h * mask / shared_div - freed)
    mlp = _mlp_block_bytes(cfg, m.ffn_size, shared_div) - mlp_freed
    if symbol == MLP:
        return mlp
    return activation_bytes_per_layer(cfg, recompute, False) - mlp


def _per_op_sac_bytes(cfg: RunConfig) -> float:
    """Bytes a block keeps under per-op selective checkpointing (torchtitan's ``selective_ac_
    option = 'op'``, parallelize_llama.py): the checkpoint's input, then by the policy the
    outputs of the 1st, 3rd, 5th and 7th ``aten.mm`` of the block (wq, wv, w1, w2 in the order
    the Llama block runs wq, wk, wv, wo, w1, w3, w2), the SDPA output with its fp32
    log-sum-exp, and under sequence parallelism the reduce-scatter outputs of wo and w2; norms,
    RoPE, SiLU and the other matmuls are recomputed. The row-parallel w2's mm output is its
    partial sum over the whole hidden size. Float8 linears save the same: torchao's
    Float8Linear calls ``torch.mm`` on its float8 tensor subclass, and a dispatch mode (the
    checkpoint policy) sees that ``aten.mm`` before the subclass turns it into
    ``_scaled_mm``; the output stays 16-bit.

    Eager, the policy's dispatch mode stores every MUST_SAVE output until the recomputation
    replays it (torch/utils/checkpoint.py ``_CachingTorchDispatchMode``), needed or not; under
    torch.compile the policy only tags the graph, and the min-cut partitioner
    (torch/_functorch/partitioners.py) saves no tensor the backward does not read: the w2
    output (and under SP its reduce-scatter), which only the residual add consumes, is not
    kept (measured, tests/test_memory_torchtitan.py: 3616 -> 3104 B per token). A cuDNN
    attention the save list does not name (``workload.recompute.per_op_sac_reruns_attention``)
    keeps neither its output nor its log-sum-exp: it runs again from the saved wq and wv outputs
    and the recomputed wk. Under NVFP4 (``workload.recompute.per_op_sac_saves_no_gemm``) the
    block keeps no matmul output, only its input, the attention's output and log-sum-exp (and
    the reduce-scatters')."""
    m, p, tr = cfg.model, cfg.parallel, cfg.training
    t, sp = p.tp, p.sequence_parallel
    T = tr.micro_batch_size * tr.seq_length / p.cp
    h, q, f = m.hidden_size, m.q_size / t, m.ffn_size / t
    kv = max(m.kv_size / t, m.kv_channels)
    w2_out = 0.0 if tr.compile else 2 * h  # the last block matmul's (partial-sum) output
    attn_out = 0.0 if per_op_sac_reruns_attention(cfg) else 2 * q + 4 * m.num_attention_heads / t
    mm_outs = 2 * (q + kv + f) + w2_out
    if per_op_sac_saves_no_gemm(cfg):  # TorchAO's NVFP4 linears run no aten.mm: none is kept
        mm_outs = 0.0
    per = 2 * h / (t if sp else 1) + mm_outs + attn_out
    if t > 1 and sp:  # the reduce-scatter outputs of wo and (eager) w2
        per += 2 * h / t * (1 if tr.compile else 2)
    return T * per


def _selective_savings(cfg: RunConfig, moe: bool, T: float, shared_div: int) -> float:
    """Bytes that Megatron-core's ``--recompute-modules`` frees per layer: each checkpointed
    module keeps its input and drops what it saved inside (``core_attn``'s scores: the attention
    term above). Files cited are Megatron-LM's megatron/core at d98e8a64 (2026-08-22)."""
    m, p = cfg.model, cfg.parallel
    modules = set(p.recompute_modules or ("core_attn",))
    h, t = m.hidden_size, p.tp
    x = gemm_input_bytes(cfg)
    out = 0.0
    if "layernorm" in modules:  # what the norms' outputs fed; the norms' inputs stay
        # (transformer_layer.py: CheckpointWithoutOutput over input_layernorm and
        # pre_mlp_layernorm; under fp8 the linears they feed save the original, discarded,
        # input: set_for_recompute_input_layernorm, set_save_original_input(linear_fc1), and
        # for MoE the shared experts' fc1, moe_layer.py set_for_recompute_pre_mlp_layernorm)
        # the QKV (MLA: down-projection) input; none where the norm is fused into the linear
        # it feeds, which keeps it (memory.te_spec: the FC1 input of a dense layer neither,
        # MLA's too: its input norm is a TENorm, its dense pre-MLP norm fused)
        per = 0.0 if input_norm_fused(cfg) else x
        if moe and "moe" in modules:
            # the MoE layer's 16-bit input, the pre-MLP norm's output its checkpoint saved: the
            # norm's CheckpointWithoutOutput frees that storage after the layer
            # (transformer_layer.py discard_output_and_register_recompute); never fused, an MoE
            # layer's pre-MLP norm is a TENorm (core_r0.18.0 d0b3b775 L486-491)
            per += 2 if pre_mlp_norm_recomputed(cfg) else 0
        elif moe:
            # the router's 16-bit input (moe_utils.py RouterGatingLinearFunction
            # ``ctx.save_for_backward(inp, weight, bias)``), the shared experts' fp8 copy; not
            # where a router graph keeps the norm (graph_outputs.pre_mlp_norm_recomputed)
            per += (2 + (x if x != 2 and m.moe_shared_expert_intermediate_size else 0)
                    if pre_mlp_norm_recomputed(cfg) else 0)
        elif not m.parallel_block and not pre_mlp_norm_fused(cfg):
            per += x  # the FC1 input
        out += T * h * per / shared_div
    if "mla_up_proj" in modules and m.is_mla:  # per-head Q, K, V; the latents stay
        out += T * 2 * (2 * m.qk_dim + m.v_dim) / t
    if "mlp" in modules and not moe:  # the MLP's inner tensors; its input stays
        out += T * _inner_bytes(cfg, m.ffn_size) / t + _mlp_fused_norm_freed(cfg, T, shared_div)
    if moe and "moe" in modules:  # the whole expert block but its inputs: the pre-MLP norm's
        # (saved by the norm) and the norm's output, the MoE layer's input, which its checkpoint
        # saves (moe_layer.py te_checkpoint / tensor_parallel.checkpoint over custom_forward,
        # core_r0.18.0 d0b3b775 L642-703: everything inside runs under no_grad)
        out += _moe_block_bytes(cfg) - 2 * T * h * 2 / shared_div
    elif moe:
        if "moe_act" in modules:  # the activation's output (the FC2 input) of every copy
            f = m.expert_ffn_size / p.etp
            freed = x * f
            if (profile_supports(cfg, "recompute_modules") and m.activation == "swiglu"
                    and cfg.training.activation_func_fp8_input_store):
                # Megatron-core's checkpoint keeps its input, the 16-bit FC1 output
                # (random.py CheckpointWithoutOutputFunction: ``_save_args_to_ctx(ctx, args)``;
                # the SwiGLU runs under no_grad, so its fp8 input store saves nothing), and
                # FC2 saves the discarded original (experts.py set_save_original_input)
                freed -= (2 - 1) * 2 * f
            out += _moe_recv(cfg) * p.etp * freed
        if "shared_experts" in modules and m.moe_shared_expert_intermediate_size:
            out += T * _inner_bytes(cfg, m.moe_shared_expert_intermediate_size) / t
    return out


def _mlp_fused_norm_freed(cfg: RunConfig, T: float, shared_div: int) -> float:
    """The FC1 input an ``mlp`` checkpoint frees where the pre-MLP norm is fused into
    ``linear_fc1`` (``pre_mlp_norm_fused``, MLA's dense layers too): the checkpoint saves its
    input, the norm's (core_r0.18.0
    d0b3b775 transformer_layer.py L824-840, ``pre_mlp_layernorm`` an ``IdentityOp``), which
    LayerNormLinear keeps anyway, and drops the norm's output LayerNormLinear saved for the GEMM
    (``ln_out``, its fp8 copy under fp8: memory.te_spec); with a separate norm that output is
    the checkpoint's input and stays."""
    if not pre_mlp_norm_fused(cfg) or cfg.model.parallel_block:
        return 0.0
    return T * cfg.model.hidden_size * gemm_input_bytes(cfg) / shared_div


def _inner_bytes(cfg: RunConfig, width: float) -> float:
    """Saved bytes per token of an MLP of inner ``width``: the activation's 16-bit input (both
    halves for SwiGLU; one fp8 byte each with ``activation_func_fp8_input_store``, as
    megatron/core/fusions/fused_bias_swiglu.py saves ``input.to(torch.float8_e4m3fn)``) and its
    output, which is FC2's GEMM input."""
    x = gemm_input_bytes(cfg)
    if cfg.model.activation == "swiglu":
        a = 1.0 if cfg.training.activation_func_fp8_input_store else 2.0
        return (a * 2 + _gate_chain_bytes(cfg)) * width + x * width
    return _gelu_saved_bytes(cfg) * width + x * width


def _gate_chain_bytes(cfg: RunConfig) -> float:
    """Bytes a gated MLP keeps per gate element beyond a one-kernel gate's where the run prices
    a Hugging Face ``hidden_act`` gate as its eager chain (the model's own modules, not
    compiled: ``workload.layers``' MLP): the chain's saved tensors and its output, which the
    product keeps, less the gate and the one kernel's output
    (``workload.hf_activations.gated_saved_beyond_fused``: ``gelu_new`` under autocast 20 - 6,
    ``relu2`` plain 0: relu's output is what ``pow`` keeps); 0 elsewhere."""
    t = cfg.training
    if cfg.model.hidden_act is None or t.modules != "eager" or t.compile:
        return 0.0
    return gated_saved_beyond_fused(cfg.model.hidden_act, _autocast(cfg))


def _autocast(cfg: RunConfig) -> bool:
    """Whether the eager modules run under ``torch.autocast`` with 16-bit activations (a plain
    PyTorch loop: DistributedDataParallel over fp32 parameters)."""
    return cfg.parallel.data_parallel_impl == "ddp" and cfg.training.dtype != "fp8"


def _gelu_saved_bytes(cfg: RunConfig) -> float:
    """Bytes a GELU keeps per element of its input: the fused kernel's 16-bit input, or, where
    the run prices a Hugging Face ``hidden_act`` as its eager chain (the model's own modules,
    not compiled: ``workload.layers``' MLP), the tensors that chain's autograd saves
    (``workload.hf_activations.saved_bytes_per_element``: ``gelu_new`` under a plain PyTorch
    loop's autocast 14 bytes, its fp32 ``pow`` input, tanh output and ``1 + tanh``)."""
    t = cfg.training
    if cfg.model.hidden_act is None or t.modules != "eager" or t.compile:
        return 2.0
    return saved_bytes_per_element(cfg.model.hidden_act, _autocast(cfg))


def _moe_recv(cfg: RunConfig) -> float:
    """Token copies the busiest expert rank receives per micro-batch (dropless: the imbalance;
    token dropping: at most the capacity, exactly it when padded)."""
    m, p, tr = cfg.model, cfg.parallel, cfg.training
    T = tr.micro_batch_size * tr.seq_length / p.cp
    routed = (T / p.tp if p.sequence_parallel else T) * m.moe_router_topk
    return routed * m.moe_recv_factor()


def _mlp_block_bytes(cfg: RunConfig, width: float, shared_div: int) -> float:
    """A TP-parallel MLP's saved tensors: norm input, FC1 input, dropout mask, inner tensors."""
    m, p, tr = cfg.model, cfg.parallel, cfg.training
    T = tr.micro_batch_size * tr.seq_length / p.cp
    mask = 1.0 if m.hidden_dropout > 0 else 0.0
    x = gemm_input_bytes(cfg)
    return T * m.hidden_size * (2 + x + mask) / shared_div + T * _inner_bytes(cfg, width) / p.tp


def _probs_in_expert(cfg: RunConfig) -> bool:
    """Whether the framework applies the routing probabilities inside the expert. A named
    framework says so in its profile; with none named, the MoE block is the one trainsim prices
    (workload/moe_block.py ``MOE_KERNELS``: Megatron-core 0.13's weighted SwiGLU, experts.py
    ``weighted_bias_swiglu_impl(intermediate_parallel, bias_parallel, permuted_probs, ...)``),
    so its memory is that block's too: the probabilities are applied in the expert."""
    return not cfg.training.framework or profile_supports(cfg, "moe_probs_in_expert")


def _moe_block_bytes(cfg: RunConfig) -> float:
    """Saved tensors of the expert block: norm input, router input and probabilities, the
    permuted tokens each expert GEMM saves, the expert inner tensors and the permuted
    probabilities. Since Megatron-core 0.12.1 ("memory efficient token permutation", MR 2668)
    the routing probabilities multiply the expert activation's output inside the expert
    (megatron/core/transformer/moe/experts.py ``weighted_bias_swiglu_impl``, which saves the
    fp32 ``permuted_probs``) and the combine is a plain unpermute that saves no token copies
    (token_dispatcher.py calls ``unpermute`` without probs): the framework profile's
    ``moe_probs_in_expert``. Elsewhere (older Megatron-core, Hugging Face's loop over experts)
    the combine weighs each expert's output by its probability and keeps those copies.
    torchtitan's own layer (``workload.moe_block.titan_style``) in 16-bit keeps what
    ``memory.moe_titan`` counts."""
    m, p, tr = cfg.model, cfg.parallel, cfg.training
    T = tr.micro_batch_size * tr.seq_length / p.cp
    tokens = T / p.tp if p.sequence_parallel else T
    h = m.hidden_size
    recv = _moe_recv(cfg)
    x = gemm_input_bytes(cfg)
    style = titan_style(cfg)
    if style and x == 2:  # torchtitan's own layer, 16-bit (memory.moe_titan)
        return tokens * h * 2 * 2 + moe_titan.saved_bytes(
            style, moe_titan.shape_of(cfg), profile_supports(cfg, "moe_gate_fp32"))
    inner = _inner_bytes(cfg, m.expert_ffn_size / p.etp)
    out = tokens * h * 2 * 2 + tokens * (m.num_experts or 0) * 4  # norm + router in, probs
    d = m.expert_input_size  # the experts' width: a latent MoE's latent
    if m.moe_latent_size:  # fc1_latent_proj's input (the router's; under fp8 its own copy),
        out += tokens * (h * (x if x != 2 else 0.0) + d * x)  # fc2_latent_proj's input
    out += recv * p.etp * (x * d + inner + 4)  # expert inputs and inner tensors, probs
    if not _probs_in_expert(cfg):
        out += recv * p.etp * 2 * d  # the combine's weighted copies of the expert outputs
    if m.moe_shared_expert_intermediate_size:
        shared = m.moe_shared_expert_intermediate_size
        sp = p.tp if p.sequence_parallel else 1
        # its FC1 input is the router's input in 16-bit; under fp8 its own quantized copy
        out += T * h * (x if x != 2 else 0.0) / sp + T * _inner_bytes(cfg, shared) / p.tp
    return out


__all__ = ["activation_bytes_per_layer"]
