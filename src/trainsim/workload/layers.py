"""Op lists of one micro-batch on one rank: a transformer layer's forward (the attention block,
then the dense MLP or ``workload.moe_block``) and the backward of any forward op list.

The rank's sizes and the tensor-parallel pieces (linears, TP entry and exit) are in
``workload.shard``; the embedding and the head in ``workload.head``.
"""

from __future__ import annotations

from trainsim.catalog.frameworks import profile_supports
from trainsim.config import RunConfig
from trainsim.config.hybrid import ATTENTION, MAMBA, MOE
from trainsim.workload.act_epilogue import epilogue_op
from trainsim.workload.context_parallel import (
    ring_forward,
    sdpa_repeat_kv_op,
    te_ring_forward,
)
from trainsim.workload.elementwise import (
    LAYER_SCALAR_SYNCS,
    QK_NORM_CALLS,
    activation_op,
    full_wave_norm,
    mla_eager_rope_op,
    norm_impl,
    norm_op,
    rope_op,
    scalar_tensor_sync_op,
)
from trainsim.workload.hf_eager_attention import hf_eager_score_ops
from trainsim.workload.layer_backward import (  # noqa: F401 - re-exported: callers import them here
    K_POS_EMB_GATHER,
    backward_of,
    weights_of,
)
from trainsim.workload.mamba_block import mamba_forward
from trainsim.workload.moe_block import moe_block
from trainsim.workload.ops import ACT_BYTES as ACT
from trainsim.workload.ops import (
    MATERIALIZED_SCORES,
    Attention,
    Comm,
    Elementwise,
    Op,
)
from trainsim.workload.qkv_split import mcore_qkv_split_ops
from trainsim.workload.relayout import attn_out_relayout_op, qkv_relayout_op
from trainsim.workload.schedule_nodes import with_schedule_nodes
from trainsim.workload.shard import (
    Shard,
    fp8_input_store,
    linear,
    tp_enter,
    tp_exit,
)
from trainsim.workload.softmax import (
    flex_sink_rescale,
    fused_softmax_runs,
    softcap_op,
    torch_softmax_fallback,
)
from trainsim.workload.te_unfused import te_unfused_ops
from trainsim.workload.unpad import pad_op, triton_grad_op, unpad_ops
from trainsim.workload.where_scores import where_score_ops
from trainsim.workload.xla_layers import xla_softmax_ops

PARALLEL_MLP_NORM = "parallel_mlp_norm"
"""The MLP's norm in a two-norm parallel block (``parallel_block_norms`` 2), beside
``attn_norm`` before either sublayer; not ``mlp_norm``, which opens a sequential layer's MLP
part (``graph_scope.layer_parts``)."""
E5M6_CAST_BYTES = ACT + 1.5 + 4 / 128
"""The E5M6 cast of the attention output (``training.attention_output_e5m6``), per element:
read 16 bits, write 12 and an fp32 scale per 1x128 tile; its cast back the same bytes."""


def layer_forward(cfg: RunConfig, sh: Shard, moe: bool | str = False) -> list[Op]:
    """Forward ops of one layer; ``moe`` swaps the dense MLP for the expert block, or names a
    hybrid layer's one block (``config.hybrid.layer_kind``). Under Megatron-core's combined
    1F1B each schedule node's backward is an autograd engine call of its own
    (``workload.schedule_nodes``)."""
    if isinstance(moe, str):
        return _hybrid_forward(cfg, sh, moe)
    return with_schedule_nodes(_layer_forward(cfg, sh, moe), cfg, moe)


def _hybrid_forward(cfg: RunConfig, sh: Shard, symbol: str) -> list[Op]:
    """A hybrid layer (Megatron-core's hybrid_layer_specs.py: one pre-norm and one mixer): the
    Mamba-2 block (``workload.mamba_block``), or the attention, MLP or MoE half of a
    transformer layer, cut at the attention's residual add (the halves share nothing else)."""
    if symbol == MAMBA:
        return mamba_forward(cfg, sh)
    ops = _layer_forward(cfg, sh, symbol == MOE)
    cut = next(i for i, op in enumerate(ops) if op.name == "attn_bias_dropout_add") + 1
    return ops[:cut] if symbol == ATTENTION else ops[cut:]


def _layer_forward(cfg: RunConfig, sh: Shard, moe: bool = False) -> list[Op]:
    m = cfg.model
    h, T, nt, t = m.hidden_size, sh.tokens, sh.norm_tokens, sh.tp
    # KV heads are replicated when kv_heads < tp (tp a multiple of them: config.validity).
    # Megatron-core from core_v0.16.0 (f7dfb99795) instead sub-shards the QKV weight and
    # all-gathers the QKV output over tp before slicing one group: that all-gather is not priced
    kv_loc = max(m.kv_size // t, m.kv_channels)
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
            linear(ops, sh, "gate_proj", T, f_loc, h, seq_parallel="gather")
            bias_add(ops, sh, "fc1", "gate_proj", T, f_loc)
            linear(ops, sh, "up_proj", T, f_loc, h, shares_input=True, seq_parallel="gather")
            bias_add(ops, sh, "fc1", "up_proj", T, f_loc)
        else:
            linear(ops, sh, "fc1", T, f_loc * (2 if gated else 1), h, seq_parallel="gather",
                   norm_fused=not parallel)
            bias_add(ops, sh, "fc1", "fc1", T, f_loc * (2 if gated else 1))
        if sh.gelu_epilogue and not gated:  # flash-attn's fused dense (workload.act_epilogue)
            ops.append(epilogue_op(T * f_loc))
        else:
            ops.append(activation_op(gated, T * f_loc, sh.eager or sh.eager_glu,
                                     not sh.split_projections,
                                     m.hidden_act if sh.eager else None, sh.autocast))
        if not (sh.eager or sh.eager_glu):  # Megatron-core's fused SwiGLU
            ops.extend(fp8_input_store(cfg, "swiglu", T * f_loc * 2))
        linear(ops, sh, "fc2", T, h, f_loc, seq_parallel="scatter")

    # --- attention block (with the MLP beside it in a parallel block: one norm, one TP entry
    # and one TP exit for both, as GPT-J / PaLM / MegaScale compute y = x + attn(n) + mlp(n))
    norm = norm_impl(m.normalization, h, sh.eager_norms, sh.compiled, sh.norm)
    wave = full_wave_norm(norm, sh.compiled)  # Transformer Engine's / apex's grid: all SMs

    def post_norm(name: str) -> None:
        # a sublayer's output normed before its residual add (Gemma 2/3, ``post_sublayer_norm``):
        # after the row-parallel reduction, on the rank's rows (Megatron-Bridge's
        # TERowParallelLinearLayerNorm; HF's post_attention/post_feedforward_layernorm); it
        # reads the linear's 16-bit output, not the (autocast fp32) residual stream
        if m.post_sublayer_norm:
            ops.append(norm_op(name, m.normalization, nt * h, norm, full_wave=wave))
    ops.append(norm_op("attn_norm", m.normalization, nt * h, norm, sh.stream_bytes, wave))
    if parallel and m.parallel_block_norms == 2:
        # the MLP's own norm of the same input (GPT-NeoX's post_attention_layernorm under
        # use_parallel_residual, Falcon-40B's ln_mlp: transformers 5.24.0 modeling_gpt_neox.py
        # ``GPTNeoXLayer.forward``, modeling_falcon.py ``FalconDecoderLayer.forward``); its
        # output feeds fc1 through the one TP entry priced below (under sequence parallelism
        # a second all-gather would be needed: not priced)
        ops.append(norm_op(PARALLEL_MLP_NORM, m.normalization, nt * h, norm, sh.stream_bytes,
                           wave))
    if not (m.is_mla and sh.mla_local_down):  # else the compressed latents are gathered
        tp_enter(ops, sh, h, "attn")
    if m.is_mla:
        _mla_projections(ops, cfg, sh)
        head_dim = (m.qk_dim + m.v_dim) // (2 * m.num_attention_heads)  # mean of QK and V widths
        qk_head_dim: int | None = m.qk_dim // m.num_attention_heads
        kv_heads = m.num_attention_heads // t
    else:
        if sh.split_projections:  # q_proj, k_proj, v_proj
            for name, width in (("q_proj", q_loc), ("k_proj", kv_loc), ("v_proj", kv_loc)):
                linear(ops, sh, name, T, width, h, shares_input=name != "q_proj",
                       seq_parallel="gather")
                bias_add(ops, sh, "qkv", name, T, width)
        else:
            linear(ops, sh, "qkv_proj", T, q_loc + 2 * kv_loc, h, seq_parallel="gather",
                   norm_fused=not parallel)
            bias_add(ops, sh, "qkv", "qkv_proj", T, q_loc + 2 * kv_loc)
            ops.extend(mcore_qkv_split_ops(cfg, T, q_loc, kv_loc))  # Megatron-core's TE split
        if sh.qkv_relayout:
            ops.append(qkv_relayout_op(T, q_loc, kv_loc))
        if m.qk_layernorm:  # per-head norms of queries and keys (Qwen3, OLMo 2)
            qk = norm_impl(m.normalization, m.kv_channels, sh.eager_norms, sh.compiled,
                           sh.norm)
            ops.append(norm_op("qk_norm", m.normalization, T * (q_loc + kv_loc), qk,
                               calls=1 if sh.compiled else QK_NORM_CALLS,
                               full_wave=full_wave_norm(qk, sh.compiled)))
        if m.position_embedding == "rope":
            ops.append(rope_op("rope", T * (q_loc + kv_loc), sh.eager,
                               unfused=m.rope_scaling is not None and sh.scaled_rope_unfused,
                               complex_rope=sh.complex_rope, compiled=sh.compiled))
        head_dim, kv_heads = m.kv_channels, max(m.kv_heads // t, 1)
        qk_head_dim = None
    heads, q_len = m.num_attention_heads // t, sh.q_len
    kv_width = 2 * kv_heads * head_dim if m.is_mla else kv_loc * 2  # K and V per token
    if sh.kv_repeat and not m.is_mla:  # torchtitan's repeat_kv: SDPA gets every query head's
        kv_width = 2 * heads * head_dim
    ring = sh.cp_ring and sh.cp_comm in ("all_gather", "p2p")
    # Transformer Engine's ring attention (context_parallel.te_ring_forward): cp fused calls
    te_ring = sh.cp_te_ring
    ulysses = sh.cp > 1 and sh.cp_comm == "a2a"
    if ulysses:  # all-to-all Q, K, V from sequence shards to head shards (DeepSpeed-Ulysses)
        q_width = heads * (m.qk_dim // m.num_attention_heads)
        ops.append(Comm("attn_core.cp_a2a_qkv", "all_to_all", T * (q_width + kv_width) * ACT, "cp"))
        heads, kv_heads = heads // sh.cp, max(kv_heads // sh.cp, 1)
        q_len = sh.seq
    elif sh.cp > 1 and sh.cp_comm == "all_gather" and not ring:  # whole-sequence K, V (Llama 3)
        ops.append(Comm("attn_core.cp_kv_all_gather", "all_gather", sh.cp * T * kv_width * ACT, "cp"))
    core = Attention("attn_core", batch=sh.batch, heads=heads, kv_heads=kv_heads, q_len=q_len,
                     kv_len=q_len if ring or te_ring else sh.seq, head_dim=head_dim,
                     qk_head_dim=qk_head_dim if qk_head_dim != head_dim else None,
                     window=m.sliding_window, impl=sh.attention_impl,  # type: ignore[arg-type]
                     dropout=m.attention_dropout > 0, masked_window=sh.masked_window,
                     megatron_ops=sh.megatron_unfused and sh.attention_impl == "unfused")
    if sh.kv_repeat and not (ring or te_ring or m.is_mla):  # the ring prices its own copies
        ops.extend(sdpa_repeat_kv_op(core, T, sh.compiled))
    if ring:  # torch's context_parallel: one SDPA per ring step
        ops.extend(ring_forward(core, sh.cp_comm, sh.cp, T, sh.kv_repeat, sh.compiled))
    elif te_ring:
        ops.extend(te_ring_forward(core, sh.cp, T))
    elif sh.flash_unpad:
        ops += [*unpad_ops(T, q_loc, kv_loc), core, pad_op(T, m.v_dim // t)]
    elif core.impl == "triton":  # llm-foundry's Triton kernel: dq, dk, dv concatenated after
        ops += [core, triton_grad_op(T, q_loc, kv_loc)]
    else:
        if m.position_embedding == "alibi" and core.impl in MATERIALIZED_SCORES:
            # Megatron-DeepSpeed's ALiBi (bigscience megatron/model/transformer.py): the scores
            # are torch.baddbmm(alibi, Q, K^T, beta=...) on the [b*np, 1, sk] bias, so PyTorch
            # first copies the broadcast bias into the [b*np, sq, sk] output (write 2 bytes a
            # score) and the GEMM reads it back for beta (2); no backward (the bias is constant).
            # The copy's source is the bias expanded over sq (a zero stride), so copy_ is not a
            # memcpy and its kernel takes PyTorch's non-vectorized path (``eager_broadcast``;
            # torch v1.11 aten/src/ATen/native/cuda/Copy.cu ``copy_device_to_device``: memcpy
            # only where the iterator is contiguous, else ``direct_copy_kernel_cuda``'s
            # gpu_kernel); the GEMM's read is cuBLAS's, inside the GEMM (no kernel of its own)
            scores = core.batch * core.heads * core.pairs
            ops.append(Elementwise("alibi_bias", bytes=2 * scores, kernel="copy",
                                   impl="eager_broadcast", bwd_bytes=0.0, bwd_kernels=0))
            ops.append(Elementwise("alibi_bias.beta_read", bytes=2 * scores, kernels=0,
                                   bwd_bytes=0.0, bwd_kernels=0))
        ops.append(core)
        if m.attn_logit_softcapping is not None and core.impl in MATERIALIZED_SCORES:
            # c * tanh(scores / c) between the scores' GEMM and the softmax (Gemma 2); a fused
            # kernel caps inside itself
            ops.append(softcap_op(core.batch * core.heads * core.pairs, sh.compiled))
        if m.softmax_type != "vanilla" and core.impl == "flex":  # the sink, after the kernel
            ops.append(flex_sink_rescale(core.batch * core.heads * core.q_len, core.head_dim,
                                         sh.compiled))
        if core.impl == "unfused" and profile_supports(cfg, "softmax_fp32_saved"):
            # Hugging Face's eager attention: scale, fp32 mask add, fp32 softmax, cast; or
            # Fast-LLM's: cast up, scale, where-mask, fp32 softmax, cast (mech63)
            chain = where_score_ops if profile_supports(cfg, "fp32_where_scores") \
                else hf_eager_score_ops
            ops.extend(chain(core.batch * core.heads * core.pairs))
        ops.extend(te_unfused_ops(cfg, core))  # Transformer Engine's mask and fp32 fallback
        ops.extend(xla_softmax_ops(cfg, core))  # Praxis's fp32 softmax as XLA's fusions
        if sh.softmax_args_swapped and core.impl == "unfused" and not fused_softmax_runs(
                core.batch, core.heads, core.q_len, core.kv_len, args_swapped=True):
            ops.extend(torch_softmax_fallback(core.batch * core.heads * core.pairs))
    if sh.cp > 1 and sh.cp_comm == "p2p" and not ring and not te_ring:
        # a p2p ring other than TE's (a framework whose profile has no ``cp_te_ring`` for this
        # kernel, or none named): (cp-1) KV blocks pass each rank, hidden behind one kernel over
        # the whole sequence; each pair on a communicator of its own above cp 2
        ops.append(Comm("attn_core.cp_kv_exchange", "send_recv", (sh.cp - 1) * T * kv_width * ACT,
                        "cp", overlap_with_previous=True, p2p_ranks=0 if sh.cp == 2 else 2))
    if ulysses:  # and the context back from head shards to sequence shards
        ops.append(Comm("attn_core.cp_a2a_out", "all_to_all", T * (m.v_dim // t) * ACT, "cp"))
    if sh.qkv_relayout and sh.batch > 1 and not m.is_mla:
        ops.append(attn_out_relayout_op(T, m.v_dim // t))
    if sh.dtype == "fp8" and cfg.training.attention_output_e5m6:
        # DeepSeek-V3 §3.3.3: the attention output cached in E5M6 for the backward, a cast of
        # its own beside the fp8 GEMM input's, cast back where the backward reads it
        # (profile-data@4496024 train.json: per_token_cast_to_fp8_with_fp8_special_fmt
        # forward, per_token_cast_back_special_fmt backward, one each a layer)
        ops.append(Elementwise("attn_out.e5m6_cast", bytes=T * m.v_dim // t * E5M6_CAST_BYTES,
                               bwd_bytes=T * m.v_dim // t * E5M6_CAST_BYTES, kernel="fp8_cast"))
    linear(ops, sh, "out_proj", T, h, m.v_dim // t, seq_parallel="scatter")
    if parallel:
        mlp()
    tp_exit(ops, sh, h, "attn")
    bias_add(ops, sh, "proj", "out_proj", nt, h)  # after the reduction (RowParallelLinear)
    if parallel:
        bias_add(ops, sh, "fc2", "fc2", nt, h)
    post_norm("post_attn_norm")
    ops.append(residual("attn_bias_dropout_add"))
    if parallel:
        return ops
    # --- MLP block
    ops.append(norm_op("mlp_norm", m.normalization, nt * h, norm, sh.stream_bytes, wave))
    if profile_supports(cfg, "layer_scalar_syncs"):  # Megatron-DeepSpeed's moe_loss, mlp_bias
        ops.extend(scalar_tensor_sync_op(name) for name in LAYER_SCALAR_SYNCS)
    if moe:
        moe_block(ops, cfg, sh)
        post_norm("post_mlp_norm")
        ops.append(residual("mlp_bias_dropout_add"))
        return ops
    tp_enter(ops, sh, h, "mlp")
    mlp()
    tp_exit(ops, sh, h, "mlp")
    bias_add(ops, sh, "fc2", "fc2", nt, h)
    post_norm("post_mlp_norm")
    ops.append(residual("mlp_bias_dropout_add"))
    return ops


def bias_add(ops: list[Op], sh: Shard, role: str, name: str, rows: int, width: int) -> None:
    """The bias of linear ``name`` (role ``role``) added by a kernel of its own where the
    framework runs one (``Shard.bias_kernels``): ``rows`` x ``width`` 16-bit outputs read and
    written; its backward sums the output gradient over the rows (read it, write ``width``).

    Megatron's local linears: ColumnParallelLinear without skip_bias_add passes the bias to
    ``LinearWithGradAccumulationAndAsyncCommunication``, whose forward runs ``output =
    torch.matmul(...)`` then ``output = output + bias`` and whose backward runs ``grad_bias =
    grad_output.sum(dim=0)`` (NVIDIA/Megatron-LM@55ba1f7b megatron/mpu/layers.py 233-235, 301;
    @e801b2bb megatron/core/tensor_parallel/layers.py 343-344, 435); before it, ``F.linear``
    on the 3-D [s, b, h] input (@a8d172b3 megatron/mpu/layers.py 284), which PyTorch < 1.12
    runs as ``matmul`` then ``add_`` (aten Linear.cpp; the fused addmm path for contiguous
    3-D inputs is pytorch/pytorch#72728, first in 1.12), the bias gradient autograd's sum.
    RowParallelLinear without skip_bias_add adds its bias after the reduction (``output_ +
    self.bias``), hence on the rank's ``nt`` rows under SP.

    ``Shard.bias_grad_kernels``: torch.nn.Linear's bias is addmm's (F.linear flattens a
    contiguous 3-D input, pytorch/pytorch#72728, torch >= 1.12; cuBLASLt's bias epilogue,
    aten/src/ATen/native/cuda/Blas.cpp ``useLtInterface``), but addmm's gradient for its
    broadcast ``self`` is the output gradient, which autograd reduces to the bias's shape
    (tools/autograd/derivatives.yaml addmm ``self: maybe_multiply(grad, beta)``; the engine's
    ``sum_to``): one sum kernel in the backward, nothing in the forward. The same sum follows
    a Megatron bias skipped into a fused consumer that returns a full-shape bias gradient
    (fused_bias_gelu.py GeLUFunction.backward ``tmp, tmp``) or that receives it as
    ``bias.expand_as(residual)`` (the local transformer.py bias-dropout-add): ``rows`` are then
    the rows the consumer sees (fc1: the gathered tokens; proj, fc2: the rank's SP rows)."""
    out = rows * width * ACT
    if role in sh.bias_kernels:
        ops.append(Elementwise(f"{name}.bias_add", bytes=2 * out, kernel="copy",
                               bwd_bytes=out + width * ACT, bwd_kernels=1))
    elif role in sh.bias_grad_kernels:  # in the GEMM's epilogue; only the gradient's sum
        ops.append(Elementwise(f"{name}.bias_grad", bytes=0.0, kernels=0,
                               bwd_bytes=out + width * ACT, bwd_kernels=1))



def _mla_projections(ops: list[Op], cfg: RunConfig, sh: Shard) -> None:
    """Multi-head latent attention's projections (DeepSeek-V2 §2.1, Megatron-core MLA): the
    down-projections of the query and of the joint key/value (plus the shared rotary key) are
    replicated over TP ranks; their up-projections are column-parallel over heads, each with
    its norm in one module (LayerNormColumnParallelLinear where qk_layernorm)."""
    m = cfg.model
    h, T, t = m.hidden_size, sh.tokens, sh.tp
    heads, rope = m.num_attention_heads // t, m.qk_pos_emb_head_dim
    local = sh.mla_local_down
    # the latents' norms: the framework's fused norm modules (``full_wave_norm``)
    wave = full_wave_norm(norm_impl(m.normalization, m.kv_lora_rank or 0,
                                    sh.eager_norms, sh.compiled, sh.norm), sh.compiled)
    rows, sp = (T // t, "gather") if local else (T, "")
    if m.q_lora_rank:
        linear(ops, sh, "q_down_proj", rows, m.q_lora_rank, h)
        ops.append(Elementwise("q_norm", bytes=rows * m.q_lora_rank * ACT * 2,
                               kernel=m.normalization, full_wave=wave))
        if local:
            tp_enter(ops, sh, m.q_lora_rank, "q_up_proj")
        linear(ops, sh, "q_up_proj", T, heads * (m.qk_head_dim + rope), m.q_lora_rank,
               seq_parallel=sp, norm_fused=True)
    else:
        # Megatron-core's linear_q_proj (no query LoRA): its own name, since mla_up_proj
        # re-runs it (``qkv_up_proj_and_rope_apply``) and no GQA q_proj
        if local:
            tp_enter(ops, sh, h, "mla_q_proj")
        linear(ops, sh, "mla_q_proj", T, heads * (m.qk_head_dim + rope), h, seq_parallel=sp)
    kv_lora = m.kv_lora_rank or 0
    linear(ops, sh, "kv_down_proj", rows, kv_lora + rope, h)
    if local:
        ops.append(Comm(K_POS_EMB_GATHER, "all_gather", T * rope * ACT, "tp"))
    ops.append(Elementwise("kv_norm", bytes=rows * kv_lora * ACT * 2, kernel=m.normalization,
                           full_wave=wave))
    if local:
        tp_enter(ops, sh, kv_lora, "kv_up_proj")
    linear(ops, sh, "kv_up_proj", T, heads * (m.qk_head_dim + m.v_head_dim), kv_lora,
           seq_parallel=sp, norm_fused=True)
    if profile_supports(cfg, "mla_eager_rope"):
        ops.append(mla_eager_rope_op(T, heads, m.qk_head_dim, rope, m.v_head_dim))
    else:
        ops.append(Elementwise("rope", bytes=T * heads * 2 * rope * ACT * 2, kernel="rope"))
