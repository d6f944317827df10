"""Op lists of one micro-batch on one rank: a transformer layer, the embedding, the head.

Follows Megatron-LM's tensor parallelism (Shoeybi et al. 2019, Fig. 3: column- then row-
parallel GEMMs, one all-reduce after attention and one after the MLP in each direction) and
sequence parallelism (Korthikanti et al. 2022 §4.2.2: all-gather before and reduce-scatter
after each block; norms and dropout on s/t tokens).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

from trainsim.catalog.frameworks import framework_supports
from trainsim.config import RunConfig
from trainsim.workload import moe_dispatch as disp
from trainsim.workload import moe_experts, moe_router
from trainsim.workload.context_parallel import is_ring_op, ring_backward, ring_forward
from trainsim.workload.elementwise import (
    BACKWARD_IMPL,
    EXPERT_BIAS_BYTES,  # noqa: F401 (re-export)
    EXPERT_BIAS_KERNELS,  # noqa: F401 (re-export)
    activation_op,
    backward_bytes,
    clamp_op,
    expert_fc2_bias,
    fp8_scale_update_op,
    norm_impl,
    norm_op,
    rope_op,
)
from trainsim.workload.ops import (
    ACT_BYTES,
    MATERIALIZED_SCORES,
    Attention,
    Comm,
    Elementwise,
    Gemm,
    GroupedImpl,
    Op,
)
from trainsim.workload.recompute import RECOMPUTED_OPS, layer_recompute  # noqa: F401 (re-export)
from trainsim.workload.softmax import fused_softmax_runs, torch_softmax_fallback
from trainsim.workload.unpad import pad_op, triton_grad_op, unpad_ops

ACT = ACT_BYTES  # bytes of a 16-bit activation element


@dataclass(frozen=True)
class Shard:
    """Per-rank sizes of one micro-batch."""

    tokens: int  # b * s / cp: tokens whose activations this rank holds (before TP sharding)
    batch: int
    q_len: int  # local sequence length (s / cp)
    seq: int  # full sequence length
    tp: int
    sp: bool
    cp: int
    dtype: str  # GEMM dtype
    attention_impl: str
    parallel_block: bool = False
    cp_comm: str = "p2p"  # parallel.cp_comm_type
    cp_ring: bool = False
    """CP is PyTorch's experimental ``context_parallel``: one SDPA per ring step, merged by
    log-sum-exp (``workload.context_parallel``); the framework profile's ``cp_sdpa_ring``."""
    scaled_rope_unfused: bool = False  # the profile's ``scaled_rope_unfused``
    complex_rope: bool = False  # the profile's ``complex_rope`` (elementwise.rope_op)
    softmax_args_swapped: bool = False  # the profile's ``softmax_args_swapped`` (workload.softmax)
    kv_repeat: bool = False
    """The model repeats GQA's K and V heads to every query head before SDPA (the profile's
    ``sdpa_repeat_kv``): what a CP exchange moves."""
    fp8_recipe: str = "delayed"  # training.fp8_recipe
    eager: bool = False  # training.modules == "eager" and not compiled: one kernel per op
    split_projections: bool = False  # separate q/k/v and gate/up GEMMs (separate_projections)
    autocast: bool = False  # fp32 weights cast to 16 bits for each matmul (torch.autocast)
    flash_unpad: bool = False  # MPT's varlen FlashAttention (``workload.unpad``)
    fp8_module_scale_update: bool = False
    """Each fp8 module updates its delayed-scaling state at the start of its forward and of
    its backward (TE <= 1.5, the profile's ``fp8_module_scale_update``; ``fp8_scale_update_op``)."""
    norm: str = "fused"  # training.norm: how the framework's own norms run
    compiled: bool = False
    """torch.compile'd: AOTAutograd's common-subexpression pass (torch/_functorch/
    compile_utils.py ``fx_graph_cse``, on by default) merges the identical fp8 casts that
    separate projections make of their shared input into one."""

    @property
    def stream_bytes(self) -> int:
        """Bytes of a residual-stream element: under autocast the embedding (not an autocast
        op) returns fp32 and ``fp32 + bf16`` stays fp32, so norms and residual adds run in
        fp32; 16 bits otherwise."""
        return 4 if self.autocast else ACT

    @property
    def fp8_cast_bytes(self) -> float:
        """Bytes per element of casting a 16-bit GEMM input to fp8 under this shard's recipe."""
        return FP8_CAST_TRANSPOSE_BYTES + FP8_RECIPE_EXTRA_BYTES[self.fp8_recipe]

    @property
    def fp8_cast_kernels(self) -> int:
        """Kernels that cast one tensor to fp8 under this shard's recipe."""
        return FP8_RECIPE_KERNELS[self.fp8_recipe]

    @property
    def norm_tokens(self) -> int:
        """Tokens a norm/dropout kernel touches on this rank (SP shards them over TP)."""
        return self.tokens // self.tp if self.sp else self.tokens


def separate_projections(cfg: RunConfig) -> bool:
    """The model's own modules project Q, K and V (and a gated MLP's gate and up) with separate
    weights: Hugging Face's and torchtitan's Llama-family modules (RMSNorm models run eagerly:
    ``q_proj``/``k_proj``/``v_proj``, ``gate_proj``/``up_proj``) and frameworks whose profile
    says so (``separate_qkv``: Meta's released Llama 3, ``wq``/``wk``/``wv`` and ``w1``/``w3``);
    GPT-2's ``c_attn``, GPT-NeoX's ``query_key_value`` and Megatron's fused QKV are one GEMM.
    Time (three GEMMs) and memory (no unrotated Q and K kept) both read it."""
    t = cfg.training
    return t.modules == "eager" and cfg.model.normalization == "rmsnorm" or \
        bool(framework_supports(t.framework, t.framework_version, "separate_qkv"))


def shard_of(cfg: RunConfig) -> Shard:
    t, p = cfg.training, cfg.parallel
    q_len = t.seq_length // p.cp
    return Shard(tokens=t.micro_batch_size * q_len, batch=t.micro_batch_size, q_len=q_len,
                 seq=t.seq_length, tp=p.tp, sp=p.sequence_parallel, cp=p.cp, dtype=t.dtype,
                 attention_impl=t.attention, parallel_block=cfg.model.parallel_block,
                 cp_comm=p.cp_comm_type, fp8_recipe=t.fp8_recipe,
                 eager=t.modules == "eager" and not t.compile,
                 split_projections=separate_projections(cfg),
                 autocast=p.data_parallel_impl == "ddp" and t.dtype != "fp8",
                 compiled=t.compile, norm=t.norm,
                 fp8_module_scale_update=t.dtype == "fp8" and t.fp8_recipe == "delayed"
                 and framework_supports(t.framework, t.framework_version,
                                        "fp8_module_scale_update"),
                 flash_unpad=t.attention in ("flash1", "flash2") and framework_supports(
                     t.framework, t.framework_version, "flash_unpad"),
                 cp_ring=p.cp > 1 and framework_supports(t.framework, t.framework_version,
                                                       "cp_sdpa_ring"),
                 kv_repeat=p.cp > 1 and framework_supports(t.framework, t.framework_version,
                                                         "sdpa_repeat_kv"),
                 scaled_rope_unfused=framework_supports(t.framework, t.framework_version,
                                                      "scaled_rope_unfused"),
                 complex_rope=framework_supports(t.framework, t.framework_version,
                                                 "complex_rope"),
                 softmax_args_swapped=framework_supports(t.framework, t.framework_version,
                                                       "softmax_args_swapped"))


FP8_CAST_TRANSPOSE_BYTES = ACT + 2
"""Transformer Engine's cast_transpose per element: read 16 bits, write fp8 and its fp8
transpose (Hopper fp8 GEMMs take only the TN layout, so wgrad/dgrad need the transpose)."""
CAST_KERNEL = "fp8_cast_transpose"
FP8_RECIPE_EXTRA_BYTES = {"delayed": 0.0, "current": ACT, "blockwise": 2 * 4 / 128,
                          "mxfp8": 2 * 1 / 32}
"""What each Transformer Engine recipe adds per element to that cast: delayed scaling takes its
scale from the amax history, so one pass casts; current scaling needs this tensor's amax first,
one more read of the 16-bit input (TE ``Float8CurrentScaling``); blockwise writes an fp32 scale
per 128 elements for each of the two layouts; MXFP8 an 8-bit scale per 32 elements for each."""
FP8_RECIPE_KERNELS = {"delayed": 1, "current": 3, "blockwise": 1, "mxfp8": 1}
"""Kernels per cast: current scaling computes the amax, then the scale from it, then casts
(TransformerEngine pytorch/csrc quantizer.cpp ``Float8CurrentScalingQuantizer::quantize_impl``:
``nvte_compute_amax``, ``nvte_compute_scale_from_amax``, ``nvte_quantize_v2``); the other
recipes cast with the scale in one kernel."""


LAYERNORM_MLP = ("fc1", "fc2")
"""The MLP's GEMMs, one Transformer Engine module (``LayerNormMLP`` in TE's ``TransformerLayer``,
which NeMo's GPT runs with ``transformer_engine: True``): one fp8 scaling update for both, before
fc1 in the forward and before fc2 in the backward."""


AUTOCAST_CAST_BYTES = 4 + ACT
"""torch.autocast casts an fp32 weight to 16 bits for each matmul (read 4, write 2 bytes per
parameter; cached for the forward, so once per micro-batch), and the backward of that cast
turns the 16-bit weight gradient back into fp32 (read 2, write 4)."""


def _gemm(ops: list[Op], sh: Shard, name: str, m: int, n: int, k: int, batch: int = 1,
          shares_input: bool = False, grouped: GroupedImpl = "", ragged: bool = False) -> None:
    """A forward (fprop) linear: its fp8 GEMM runs without cuBLAS's split accumulator, as
    Transformer Engine runs it (pytorch/module/base.py ``_2X_ACC_FPROP = False``, passed as
    ``use_split_accumulator`` by Linear, LayerNormLinear, LayerNormMLP and GroupedLinear) and
    torchao's float8 training (float8/config.py ``gemm_config_output =
    Float8GemmConfig(use_fast_accum=True)``); ``backward_of`` clears it for dgrad and wgrad."""
    if sh.autocast:
        cast = batch * n * k * AUTOCAST_CAST_BYTES
        ops.append(Elementwise(f"{name}.autocast_weight", bytes=cast, kernel="copy",
                               bwd_bytes=cast))
    if sh.fp8_module_scale_update and not grouped and name != LAYERNORM_MLP[1]:
        ops.append(fp8_scale_update_op(name))
    if sh.dtype == "fp8" and not (shares_input and sh.compiled):
        # the activation input is cast (with amax) to fp8 and transposed, split per expert for
        # a grouped GEMM (Transformer Engine's GroupedLinear); compiled, siblings share one
        ops.append(Elementwise(f"{name}.cast_transpose",
                               bytes=batch * m * k * sh.fp8_cast_bytes,
                               kernels=batch * sh.fp8_cast_kernels, kernel=CAST_KERNEL))
    ops.append(Gemm(name, m=m, n=n, k=k, dtype=sh.dtype, batch=batch, shares_input=shares_input,
                    grouped=grouped, ragged=ragged, fp8_fast_accum=sh.dtype == "fp8"))


def tp_enter(ops: list[Op], sh: Shard, h: int, name: str, gemm_dtype: str | None = None) -> None:
    """Forward entry of a TP region (column-parallel GEMMs): all-gather the sequence-sharded
    input under SP. Transformer Engine casts the input to fp8 before gathering it when the
    GEMM runs in fp8 (``LayerNormLinear`` writes its norm output in fp8), so the gather moves
    one byte per element; the input gradient it pairs with is reduced in 16 bits."""
    if sh.tp > 1 and sh.sp:
        elem = 1 if (gemm_dtype or sh.dtype) == "fp8" else ACT
        ops.append(Comm(f"{name}.all_gather", "all_gather", sh.tokens * h * elem, "tp",
                        grad_bytes=sh.tokens * h * ACT))


def tp_exit(ops: list[Op], sh: Shard, h: int, name: str, gemm_dtype: str | None = None) -> None:
    """Forward exit of a TP region (row-parallel GEMMs): all-reduce (or reduce-scatter under SP)
    the 16-bit partial sums. In backward, SP all-gathers the output gradient, in fp8 when the
    GEMM runs in fp8 (Transformer Engine casts it before the gather)."""
    if sh.tp > 1:
        kind = "reduce_scatter" if sh.sp else "all_reduce"
        elem = 1 if (gemm_dtype or sh.dtype) == "fp8" else ACT
        ops.append(Comm(f"{name}.{kind}", kind, sh.tokens * h * ACT, "tp",
                        grad_bytes=sh.tokens * h * elem))


def layer_forward(cfg: RunConfig, sh: Shard, moe: bool = False) -> list[Op]:
    """Forward ops of one layer; ``moe`` swaps the dense MLP for the expert block."""
    m = cfg.model
    h, T, nt, t = m.hidden_size, sh.tokens, sh.norm_tokens, sh.tp
    kv_loc = max(m.kv_size // t, m.kv_channels)  # KV heads are replicated when kv_heads < tp
    q_loc = m.q_size // t
    f_loc = m.ffn_size // t
    dropout_mask = 1 if m.hidden_dropout > 0 else 0
    # x + dropout(y): one fused kernel (Megatron's bias-dropout-add) reads both and writes; the
    # eager dropout is a kernel of its own (read, write and its mask) before the add
    split = sh.eager and dropout_mask > 0
    residual_bytes = 3 * sh.stream_bytes + dropout_mask * (1 + (2 * ACT if split else 0))

    def residual(name: str) -> Elementwise:
        return Elementwise(name, bytes=nt * h * residual_bytes, kernels=2 if split else 1,
                           kernel="residual_add", impl="eager" if split else "fused")
    ops: list[Op] = []
    parallel = m.parallel_block and not moe
    gated = m.activation == "swiglu"

    def mlp() -> None:
        if gated and sh.split_projections:  # LlamaMLP: gate_proj and up_proj
            _gemm(ops, sh, "gate_proj", T, f_loc, h)
            _gemm(ops, sh, "up_proj", T, f_loc, h, shares_input=True)
        else:
            _gemm(ops, sh, "fc1", T, f_loc * (2 if gated else 1), h)
        ops.append(activation_op(gated, T * f_loc, sh.eager, not sh.split_projections))
        _gemm(ops, sh, "fc2", T, h, f_loc)

    # --- attention block (with the MLP beside it in a parallel block: one norm, one TP entry
    # and one TP exit for both, as GPT-J / PaLM / MegaScale compute y = x + attn(n) + mlp(n))
    norm = norm_impl(m.normalization, h, sh.eager, sh.compiled, sh.norm)
    ops.append(norm_op("attn_norm", m.normalization, nt * h, norm, sh.stream_bytes))
    tp_enter(ops, sh, h, "attn")
    if m.is_mla:
        _mla_projections(ops, cfg, sh)
        head_dim = (m.qk_dim + m.v_dim) // (2 * m.num_attention_heads)  # mean of QK and V widths
        kv_heads = m.num_attention_heads // t
    else:
        if sh.split_projections:  # q_proj, k_proj, v_proj
            _gemm(ops, sh, "q_proj", T, q_loc, h)
            _gemm(ops, sh, "k_proj", T, kv_loc, h, shares_input=True)
            _gemm(ops, sh, "v_proj", T, kv_loc, h, shares_input=True)
        else:
            _gemm(ops, sh, "qkv_proj", T, q_loc + 2 * kv_loc, h)
        if m.qk_layernorm:  # per-head norms of queries and keys (Qwen3, OLMo 2)
            ops.append(norm_op("qk_norm", m.normalization, T * (q_loc + kv_loc),
                               norm_impl(m.normalization, m.kv_channels, sh.eager,
                                         sh.compiled, sh.norm)))
        if m.position_embedding == "rope":
            ops.append(rope_op("rope", T * (q_loc + kv_loc), sh.eager,
                               unfused=m.rope_scaling is not None and sh.scaled_rope_unfused,
                               complex_rope=sh.complex_rope))
        head_dim, kv_heads = m.kv_channels, max(m.kv_heads // t, 1)
    heads, q_len = m.num_attention_heads // t, sh.q_len
    kv_width = 2 * kv_heads * head_dim if m.is_mla else kv_loc * 2  # K and V per token
    if sh.kv_repeat and not m.is_mla:  # torchtitan's repeat_kv: SDPA gets every query head's
        kv_width = 2 * heads * head_dim
    ring = sh.cp_ring and sh.cp_comm in ("all_gather", "p2p")
    ulysses = sh.cp > 1 and sh.cp_comm == "a2a"
    if ulysses:  # all-to-all Q, K, V from sequence shards to head shards (DeepSpeed-Ulysses)
        q_width = heads * (m.qk_dim // m.num_attention_heads)
        ops.append(Comm("attn_core.cp_a2a_qkv", "all_to_all", T * (q_width + kv_width) * ACT, "cp"))
        heads, kv_heads = heads // sh.cp, max(kv_heads // sh.cp, 1)
        q_len = sh.seq
    elif sh.cp > 1 and sh.cp_comm == "all_gather" and not ring:  # whole-sequence K, V (Llama 3)
        ops.append(Comm("attn_core.cp_kv_all_gather", "all_gather", sh.cp * T * kv_width * ACT, "cp"))
    core = Attention("attn_core", batch=sh.batch, heads=heads, kv_heads=kv_heads, q_len=q_len,
                     kv_len=q_len if ring else sh.seq, head_dim=head_dim,
                     window=m.sliding_window, impl=sh.attention_impl,  # type: ignore[arg-type]
                     dropout=m.attention_dropout > 0)
    if ring:  # torch's context_parallel: one SDPA per ring step
        ops.extend(ring_forward(core, sh.cp_comm, sh.cp, T, sh.kv_repeat, sh.compiled))
    elif sh.flash_unpad:
        ops += [*unpad_ops(T, q_loc, kv_loc), core, pad_op(T, m.v_dim // t)]
    elif core.impl == "triton":  # llm-foundry's Triton kernel: dq, dk, dv concatenated after
        ops += [core, triton_grad_op(T, q_loc, kv_loc)]
    else:
        if m.position_embedding == "alibi" and core.impl in MATERIALIZED_SCORES:
            # Megatron-DeepSpeed's ALiBi (bigscience megatron/model/transformer.py): the scores
            # are torch.baddbmm(alibi, Q, K^T, beta=...) on the [b*np, 1, sk] bias, so PyTorch
            # first copies the broadcast bias into the [b*np, sq, sk] output (write 2 bytes a
            # score) and the GEMM reads it back for beta (2); no backward (the bias is constant)
            ops.append(Elementwise("alibi_bias", bytes=4 * core.batch * core.heads * core.pairs,
                                   kernel="copy", bwd_bytes=0.0, bwd_kernels=0))
        ops.append(core)
        if sh.softmax_args_swapped and core.impl == "unfused" and not fused_softmax_runs(
                core.batch, core.heads, core.q_len, core.kv_len, args_swapped=True):
            ops.append(torch_softmax_fallback(core.batch * core.heads * core.pairs))
    if sh.cp > 1 and sh.cp_comm == "p2p" and not ring:
        # ring attention: (cp-1) KV blocks pass each rank, hidden behind attention
        ops.append(Comm("attn_core.cp_kv_exchange", "send_recv", (sh.cp - 1) * T * kv_width * ACT,
                        "cp", overlap_with_previous=True))
    if ulysses:  # and the context back from head shards to sequence shards
        ops.append(Comm("attn_core.cp_a2a_out", "all_to_all", T * (m.v_dim // t) * ACT, "cp"))
    _gemm(ops, sh, "out_proj", T, h, m.v_dim // t)
    if parallel:
        mlp()
    tp_exit(ops, sh, h, "attn")
    ops.append(residual("attn_bias_dropout_add"))
    if parallel:
        return ops
    # --- MLP block
    ops.append(norm_op("mlp_norm", m.normalization, nt * h, norm, sh.stream_bytes))
    if moe:
        _moe_block(ops, cfg, sh)
        ops.append(residual("mlp_bias_dropout_add"))
        return ops
    tp_enter(ops, sh, h, "mlp")
    mlp()
    tp_exit(ops, sh, h, "mlp")
    ops.append(residual("mlp_bias_dropout_add"))
    return ops


def _mla_projections(ops: list[Op], cfg: RunConfig, sh: Shard) -> None:
    """Multi-head latent attention's projections (DeepSeek-V2 §2.1, Megatron-core MLA): the
    down-projections of the query and of the joint key/value (plus the shared rotary key) are
    replicated over TP ranks; their up-projections are column-parallel over heads."""
    m = cfg.model
    h, T, t = m.hidden_size, sh.tokens, sh.tp
    heads, rope = m.num_attention_heads // t, m.qk_pos_emb_head_dim
    if m.q_lora_rank:
        _gemm(ops, sh, "q_down_proj", T, m.q_lora_rank, h)
        ops.append(Elementwise("q_norm", bytes=T * m.q_lora_rank * ACT * 2,
                               kernel=m.normalization))
        _gemm(ops, sh, "q_up_proj", T, heads * (m.qk_head_dim + rope), m.q_lora_rank)
    else:
        _gemm(ops, sh, "q_proj", T, heads * (m.qk_head_dim + rope), h)
    kv_lora = m.kv_lora_rank or 0
    _gemm(ops, sh, "kv_down_proj", T, kv_lora + rope, h)
    ops.append(Elementwise("kv_norm", bytes=T * kv_lora * ACT * 2, kernel=m.normalization))
    _gemm(ops, sh, "kv_up_proj", T, heads * (m.qk_head_dim + m.v_head_dim), kv_lora)
    ops.append(Elementwise("rope", bytes=T * heads * 2 * rope * ACT * 2, kernel="rope"))


MOE_KERNELS = {
    "router": (28, 12),
    "preprocess": (10, 0),
    "permute": (4, 3),
    "expert_act": (1, 2),
    "unpermute": (3, 2),
}
"""Kernel launches (forward, backward) of the MoE layer's memory-bound stages as Megatron-core
issues them (core_v0.13.0, c550cf6, megatron/core/transformer/moe/, with Transformer Engine
2.5's fused permutation, ``moe_permute_fusion``): the router's top-k and softmax with its
probability and routing-map scatters (``moe_utils.topk_softmax_with_capacity``: 13) and the
load-balancing loss (``router.aux_loss_load_balancing``, ``switch_load_balancing_loss_func``
and its tracker: 15), about 12 backward; the all-to-all dispatcher's ``preprocess`` (6
reductions) and the device-to-host copies of the split sizes (4); TE's
``moe_permute_with_probs`` (3) and ``sort_chunks_by_idx`` (1), backward 3; the weighted SwiGLU
(1, backward 2); the unsort and ``unpermute_with_mask_map`` (3, backward 2). Counted from the
code, not profiled: per-expert GEMMs are counted by ``compute.host.launches``."""


def _moe_block(ops: list[Op], cfg: RunConfig, sh: Shard, grouped: GroupedImpl | None = None,
               eager_experts: bool = False) -> None:
    """Routed experts with Megatron-core's all-to-all token dispatcher (Megatron-core MoE docs):
    router -> permute -> all-to-all over EP -> grouped GEMMs of the local experts -> all-to-all
    back -> unpermute; shared experts run as a TP-parallel dense MLP. Under SP each TP rank
    routes its own s/t tokens; expert TP all-gathers tokens inside the expert-TP group. The
    grouped GEMMs run as ``grouped`` implements them (default: the framework's,
    ``grouped_gemm_impl``); dropless routing leaves each expert a varying row count.
    ``eager_experts``: torchtitan's eager ``torch._grouped_mm`` experts (``moe_experts``)."""
    m, p = cfg.model, cfg.parallel
    impl = grouped_gemm_impl(cfg) if grouped is None else grouped
    ragged = m.moe_capacity_factor is None
    h, k, E = m.hidden_size, m.moe_router_topk, m.num_experts or 1
    tokens = sh.norm_tokens  # tokens this rank routes (s/t under SP)
    ops.extend(moe_router.router_ops(cfg, tokens, MOE_KERNELS["router"]))
    routed = tokens * k  # token copies leaving this rank
    dispatcher = p.moe_token_dispatcher_type
    local = E // p.ep
    extra = disp.te_map_sort_extra(cfg, dispatcher, local)
    permute = Elementwise("permute", bytes=routed * h * ACT * 2,
                          kernels=MOE_KERNELS["permute"][0] + extra[0],
                          bwd_kernels=MOE_KERNELS["permute"][1])
    unpermute = Elementwise("unpermute", bytes=routed * h * ACT * 2 + tokens * h * ACT,
                            kernels=MOE_KERNELS["unpermute"][0] + extra[1],
                            bwd_kernels=MOE_KERNELS["unpermute"][1])
    if disp.permute_before_exchange(dispatcher):
        ops.append(permute)
    counts = disp.split_sizes_gather(cfg)
    if counts is not None:
        ops.append(counts)
    if m.moe_capacity_factor is None:
        # dropless: the host needs the tokens per expert (all-to-all split sizes, the grouped
        # GEMM's m_splits) and waits for them (compute.host), after the reductions that count
        # them and the copies that bring them over
        ops.append(Elementwise("moe_tokens_to_host", bytes=E * 8, host_sync=True,
                               kernels=MOE_KERNELS["preprocess"][0]))
    wire = tokens * moe_wire_copies(cfg)
    elem = disp.dispatch_element_bytes(dispatcher, p.moe_dispatch_fp8, ACT)
    if p.ep > 1 and dispatcher == "allgather":  # every token of the EP group on every rank
        ops.append(Comm("moe.dispatch_all_gather", "all_gather", p.ep * tokens * h * elem, "ep"))
    elif p.ep > 1:
        ops.append(Comm("moe.dispatch_all_to_all", "all_to_all", wire * h * elem, "ep"))
    probs = disp.probs_all_to_all(cfg, wire)
    if probs is not None:
        ops.append(probs)
    if disp.permute_after_exchange(dispatcher):
        # DeepEP delivers tokens in source order: sorted here, back before the combine
        ops.append(permute)
    # Dropless: with uniform routing each rank receives as many copies as it sent, the busiest
    # moe_token_imbalance times that. Token dropping pads every expert to its capacity, so the
    # shapes are static (Megatron-core --moe-pad-expert-input-to-capacity).
    if m.moe_capacity_factor is not None:
        recv = routed * m.moe_capacity_factor
    else:
        recv = routed * m.moe_token_imbalance
    recv = math.ceil(recv)
    if p.etp > 1:
        ops.append(Comm("moe.etp_all_gather", "all_gather", recv * p.etp * h * ACT, "etp"))
    rows = math.ceil(recv * p.etp / local)
    f = m.expert_ffn_size // p.etp
    gated = m.activation == "swiglu"
    eager = eager_experts and gated  # torch._grouped_mm experts run eagerly (moe_experts)
    fp8_pad = disp.fp8_padding_ops(rows * local, h) if disp.fp8_padding(cfg, dispatcher) else None
    if fp8_pad:
        ops.append(fp8_pad[0])
    if eager:
        ops.append(moe_experts.pad_permute(rows * local, h))
    for name in ("expert_fc1", "expert_fc3") if eager else ("expert_fc1",):
        _gemm(ops, sh, name, rows, f * (2 if gated and not eager else 1), h, batch=local,
              grouped=impl, ragged=ragged)
    if gated and m.activation_clamp is not None:
        ops.append(clamp_op("expert_act_clamp", rows * local, f))
    if eager:
        ops.extend(moe_experts.eager_swiglu(rows * local, f))
    else:
        ops.append(Elementwise("expert_act", bytes=rows * local * f * ACT * (3 if gated else 2),
                               bwd_kernels=MOE_KERNELS["expert_act"][1]))
    _gemm(ops, sh, "expert_fc2", rows, h, f, batch=local, grouped=impl, ragged=ragged)
    if eager:
        ops.append(moe_experts.pad_unpermute(rows * local, h))
    if fp8_pad:
        ops.append(fp8_pad[1])
    if m.add_bias_linear and impl == "multi_stream":
        ops.append(expert_fc2_bias(rows, h, local))
    if p.etp > 1:
        ops.append(Comm("moe.etp_reduce_scatter", "reduce_scatter", recv * p.etp * h * ACT, "etp"))
    if disp.permute_after_exchange(dispatcher):
        ops.append(unpermute)
    if p.ep > 1 and dispatcher == "allgather":
        ops.append(Comm("moe.combine_reduce_scatter", "reduce_scatter", p.ep * tokens * h * ACT,
                        "ep"))
    elif p.ep > 1:
        ops.append(Comm("moe.combine_all_to_all", "all_to_all", wire * h * ACT, "ep"))
    if disp.permute_before_exchange(dispatcher):
        ops.append(unpermute)
    shared = m.moe_shared_expert_intermediate_size
    if shared:
        tp_enter(ops, sh, h, "shared_expert")
        _gemm(ops, sh, "shared_fc1", sh.tokens, shared // sh.tp * (2 if gated else 1), h)
        ops.append(Elementwise("shared_act", bytes=sh.tokens * shared // sh.tp * ACT * 3))
        _gemm(ops, sh, "shared_fc2", sh.tokens, h, shared // sh.tp)
        tp_exit(ops, sh, h, "shared_expert")


@functools.cache
def _profile_grouped(framework: str, version: str | None) -> GroupedImpl:
    from trainsim.catalog.frameworks import framework_profile  # data, read once per version

    return framework_profile(framework, version).defaults.get("grouped_gemm") or ""


def grouped_gemm_impl(cfg: RunConfig) -> GroupedImpl:
    """How the run's framework runs the experts' GEMMs (its profile's ``grouped_gemm``: e.g.
    Megatron-core's ``TEGroupedMLP`` is Transformer Engine's per-expert ``multi_stream``);
    none named: one batched kernel (``""``)."""
    t = cfg.training
    framework = getattr(t, "framework", None)
    if not framework:
        return ""
    return _profile_grouped(str(framework), getattr(t, "framework_version", None))


def moe_wire_copies(cfg: RunConfig) -> float:
    """Copies of one token the dispatch sends over EP. Node-limited routing sends a token once to
    each of at most M nodes, which fan it out over NVLink (DeepSeek-V3 §3.2.2); DeepEP does the
    same for any routing: one copy per distinct destination node, expected
    ``N (1 - (1 - 1/N)^k)`` for k experts spread uniformly over the N nodes of the EP group."""
    m, p, c = cfg.model, cfg.parallel, cfg.cluster
    k = m.moe_router_topk
    if m.moe_router == "fake_balanced" and disp.dedups_per_node(p.moe_token_dispatcher_type):
        return disp.fake_balanced_destinations(cfg)
    if not disp.dedups_per_node(p.moe_token_dispatcher_type):
        return float(k)  # one permuted copy per routed expert, whatever node it lies on
    copies = float(min(k, m.moe_router_group_topk or k))
    nodes = max(1, p.ep * p.etp // c.gpus_per_node)
    if nodes > 1:
        copies = min(copies, nodes * (1 - (1 - 1 / nodes) ** k))
    return copies


def backward_of(fwd: list[Op], sh: Shard) -> list[Op]:
    """Backward ops of a forward op list, in reverse order (dgrad + wgrad per GEMM).

    TP communication follows Megatron's ``LinearWithGradAccumulationAndAsyncCommunication``
    and Transformer Engine's column-parallel linears (Korthikanti et al. 2022 Fig. 5 for the
    conjugates): a row-parallel GEMM's output gradient is all-gathered before its dgrad under
    SP (blocking); a column-parallel GEMM re-gathers its saved input shard while its dgrad
    runs, then reduces the input gradient (reduce-scatter under SP, all-reduce without)
    while its wgrad runs, both asynchronously on the communication stream.
    """
    ops: list[Op] = []
    dgrad_at: int | None = None  # index in ``ops`` of the last GEMM's dgrad
    ring = sh.cp > 1 and sh.cp_ring and sh.cp_comm in ("all_gather", "p2p")
    for op in reversed(fwd):
        if ring and is_ring_op(op):
            continue  # ring_backward below replaces the ring's forward ops
        if ring and isinstance(op, Attention) and op.name == "attn_core":
            ops.extend(ring_backward(op, sh.cp_comm, sh.cp, sh.tokens, sh.kv_repeat, sh.compiled))
            continue
        if isinstance(op, Gemm):
            if sh.fp8_module_scale_update and not op.grouped and op.name != LAYERNORM_MLP[0]:
                update = fp8_scale_update_op(op.name)  # the module's backward starts here
                ops.append(replace(update, name=f"{update.name}.bwd"))
            if op.dtype == "fp8":  # the output gradient is cast and transposed as well
                ops.append(Elementwise(f"{op.name}.grad_cast_transpose",
                                       bytes=op.batch * op.m * op.n * sh.fp8_cast_bytes,
                                       kernels=op.batch * sh.fp8_cast_kernels, kernel=CAST_KERNEL))
            # dgrad and wgrad keep cuBLAS's split accumulator: Transformer Engine
            # ``_2X_ACC_DGRAD = _2X_ACC_WGRAD = True``, torchao ``gemm_config_grad_input`` and
            # ``gemm_config_grad_weight`` default ``use_fast_accum=False``
            ops.append(replace(op, name=f"{op.name}.dgrad", n=op.k, k=op.n, fp8_fast_accum=False))
            dgrad_at = len(ops) - 1
            if op.shares_input:  # its input gradient is added to its siblings'
                ops.append(Elementwise(f"{op.name}.grad_sum", bytes=3 * ACT * op.batch * op.m * op.k,
                                       kernel="residual_add"))
            # the wgrad's ragged dimension is its k (tokens), not its rows
            ops.append(replace(op, name=f"{op.name}.wgrad", m=op.k, k=op.m, ragged=False,
                               fp8_fast_accum=False))
        elif isinstance(op, Attention):
            ops.append(replace(op, name=f"{op.name}.bwd", backward=True))
        elif isinstance(op, Elementwise):
            if op.name.endswith(("cast_transpose", "fp8_scale_update")) or op.host_sync:
                continue  # no backward of its own; the gradient's cast and update are added above
            nbytes, kernels = backward_bytes(op)
            ops.append(Elementwise(f"{op.name}.bwd", bytes=nbytes, flops=op.flops,
                                   kernels=kernels, kernel=op.kernel and f"{op.kernel}.bwd",
                                   impl=BACKWARD_IMPL.get(op.impl, op.impl),
                                   elem_bytes=op.elem_bytes))
        elif isinstance(op, Comm):
            if op.group == "cp" and op.kind == "send_recv":  # dKV goes around the ring too
                ops.append(Comm(f"{op.name}.bwd", op.kind, 2 * op.bytes, op.group,
                                op.overlap_with_previous))
                # keep it after the attention backward it overlaps with
                ops[-1], ops[-2] = ops[-2], ops[-1]
                continue
            grad = op.bytes if op.grad_bytes is None else op.grad_bytes
            if grad == 0:
                continue  # an integer tensor's collective (routing counts): no gradient
            if op.group == "tp" and op.kind == "all_gather" and dgrad_at is not None:
                # column-parallel entry: re-gather the saved input under the consumer's dgrad,
                # reduce-scatter the input gradient under its wgrad (just emitted)
                ops.insert(dgrad_at + 1, Comm(f"{op.name}.bwd_regather", "all_gather", op.bytes,
                                              "tp", overlap_with_previous=True))
                ops.append(Comm(f"{op.name}.bwd", "reduce_scatter", grad, "tp",
                                overlap_with_previous=True))
                continue
            conj = {"all_gather": "reduce_scatter", "reduce_scatter": "all_gather",
                    "all_to_all": "all_to_all"}
            if op.kind in conj:  # all-reduce (g) has the identity as its conjugate
                ops.append(Comm(f"{op.name}.bwd", conj[op.kind], grad, op.group))  # type: ignore[arg-type]
        else:  # pragma: no cover - exhaustive
            raise TypeError(op)
    if sh.tp > 1 and not sh.sp:
        # The f operator (identity forward) all-reduces input gradients of the QKV and FC1 GEMMs
        # (once for both in a parallel block, where they share their input), under the wgrad.
        first = next(op.name for op in fwd if isinstance(op, Gemm))  # qkv_proj, or MLA's first
        names = (first,) if sh.parallel_block else (first, "fc1")
        _insert_after_dgrad(ops, tuple(f"{n}.dgrad" for n in names), sh)
    return ops


def _insert_after_dgrad(ops: list[Op], names: tuple[str, ...], sh: Shard) -> None:
    for name in names:
        for i, op in enumerate(ops):
            if isinstance(op, Gemm) and op.name == name:  # all-reduce its input gradient (T x k)
                ops.insert(i + 2, Comm(f"{name}.all_reduce", "all_reduce", sh.tokens * op.n * ACT,
                                       "tp", overlap_with_previous=True))
                break
