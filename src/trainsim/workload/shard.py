"""One rank's share of a micro-batch (``Shard``, built from the run by ``shard_of``) and the
tensor-parallel pieces every block is made of: a forward linear with the casts around its GEMM
(fp8 cast-transpose, autocast weight copies, Transformer Engine's fp8 scaling updates), and the
entry and exit of a tensor-parallel region.

Follows Megatron-LM's tensor parallelism (Shoeybi et al. 2019, Fig. 3: column- then row-
parallel GEMMs, one all-reduce after attention and one after the MLP in each direction) and
sequence parallelism (Korthikanti et al. 2022 §4.2.2: all-gather before and reduce-scatter
after each block; norms and dropout on s/t tokens).
"""

from __future__ import annotations

from dataclasses import dataclass

from trainsim.catalog.frameworks import (
    framework_default,
    framework_feature,
    profile_supports,
    te_at_least,
)
from trainsim.config import RunConfig
from trainsim.workload.act_epilogue import gelu_in_epilogue
from trainsim.workload.elementwise import fp8_scale_update_op
from trainsim.workload.fp8_casts import (  # noqa: F401 - re-exported for the workload
    CAST_KERNEL,
    FP8_AMAX_BYTES,
    FP8_CAST_BYTES,
    FP8_CAST_TRANSPOSE_BYTES,
    FP8_GATHER_CAST_KERNEL,
    FP8_INPUT_STORE_BYTES,
    FP8_RECIPE_EXTRA_BYTES,
    FP8_RECIPE_KERNELS,
    FP8_ROWWISE_GATHER_RECIPES,
    FP8_TRANSPOSE_BYTES,
    FP8_TRANSPOSE_KERNEL,
    MXFP8_SCALE_BYTES,
    MXFP8_SWIZZLE_FEATURES,
    MXFP8_SWIZZLE_KERNEL,
    NVFP4_CAST_BYTES,
    activation_kind,
    amax_all_reduce,
    fp8_input_store,
    mxfp8_swizzle,
    wgrad_block_scales,
)
from trainsim.workload.ops import ACT_BYTES as ACT
from trainsim.workload.ops import (
    MATERIALIZED_SCORES,
    NVFP4_ELEMENT_BYTES,
    Comm,
    Elementwise,
    Gemm,
    GroupedImpl,
    Op,
)
from trainsim.workload.wgrad_fusion import unfused_grad_accumulation
from trainsim.workload.xla_layers import xla_norms

TE_CACHED_DUMMY_WGRAD = "2.3"
"""First Transformer Engine release whose ``Linear`` / ``LayerNormLinear`` / ``LayerNormMLP``
backward hands Megatron's DDP a cached placeholder weight gradient (``module/base.py``
``get_dummy_wgrad``: one ``torch.empty`` per shape, a ``detach`` per call): NVIDIA/
TransformerEngine ba5dc5dde (#1651, 2025-04-08, first tagged v2.3); v1.8 ``linear.py`` L591-601
allocates ``torch.empty`` per call."""
TE_GROUPED_CACHED_DUMMY_WGRAD = "2.10"
"""The same for ``GroupedLinear``'s expert weights: d2945c6a5 (#2305, 2025-10-27, first tagged
v2.10); release_v2.9 ``grouped_linear.py`` L442-470 still allocates per expert weight."""


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
    num_sms: int = 0  # the GPU's SMs (a kernel whose grid or splits follow them); 0: unknown
    cp_comm: str = "p2p"  # parallel.cp_comm_type
    cp_ring: bool = False
    """CP is PyTorch's experimental ``context_parallel``: one SDPA per ring step, merged by
    log-sum-exp (``workload.context_parallel``); the framework profile's ``cp_sdpa_ring``."""
    cp_te_ring: bool = False
    """CP over p2p is Transformer Engine's ring attention, cp calls a layer
    (``context_parallel.te_ring_forward``): the run's kernel in ``parallel.cp_te_ring``."""
    scaled_rope_unfused: bool = False  # the profile's ``scaled_rope_unfused``
    complex_rope: bool = False  # the profile's ``complex_rope`` (elementwise.rope_op)
    eager_glu: bool = False  # the profile's ``eager_glu`` (elementwise.activation_op)
    qkv_relayout: bool = False  # the profile's ``qkv_relayout_copies`` (layers.qkv_relayout_op)
    softmax_args_swapped: bool = False  # the profile's ``softmax_args_swapped`` (workload.softmax)
    masked_window: bool = False  # the profile's ``masked_window_scores`` (ops.Attention.pairs)
    megatron_unfused: bool = False  # profile megatron_unfused_ops / te_unfused_attention
    kv_repeat: bool = False
    """The model repeats GQA's K and V heads to every query head before SDPA (the profile's
    ``sdpa_repeat_kv``), at every CP size: what a CP exchange moves, and a forward copy."""
    fp8_recipe: str = "delayed"  # training.fp8_recipe
    eager: bool = False  # training.modules == "eager" and not compiled: one kernel per op
    split_projections: bool = False  # separate q/k/v and gate/up GEMMs (separate_projections)
    autocast: bool = False  # fp32 weights cast to 16 bits for each matmul (torch.autocast)
    flash_unpad: bool = False  # MPT's varlen FlashAttention (``workload.unpad``)
    fp8_module_scale_update: bool = False
    """Each fp8 module updates its delayed-scaling state at the start of its forward and of
    its backward (TE <= 1.5, the profile's ``fp8_module_scale_update``; ``fp8_scale_update_op``)."""
    te_linear_mlp: bool = False
    """The MLP's two GEMMs are separate Transformer Engine ``Linear`` modules, each with its own
    fp8 scaling update (llm-foundry's MPT under ``fc_type: te``), not one ``LayerNormMLP``."""
    norm: str = "fused"  # training.norm: how the framework's own norms run
    own_norms: bool = False
    """The framework swaps its own norm modules into the model whose other modules run eagerly
    (the profile's ``fused_norm_modules``: Colossal-AI's shardformer puts apex's FusedRMSNorm
    in place of Hugging Face's LlamaRMSNorm); ``norm`` then says how they run."""
    gelu_epilogue: bool = False
    """The MLP's GELU runs in fc1's and fc2's GEMM epilogues (the profile's
    ``gelu_gemm_epilogue`` on this GPU; ``workload.act_epilogue``)."""
    fp8_local_cast: bool = False
    """Sequence parallelism all-gathers fp8 GEMM operands cast on the rank's own rows: the
    column-parallel input in the forward, the row-parallel output gradient in the backward
    (Transformer Engine; the profile's ``fp8_cast_before_gather``, ``FP8_GATHER_*``)."""
    fp8_row_cast_only: bool = False
    """Under SP a row-parallel linear's fp8 input is cast without its transpose and the
    backward transposes it for wgrad (Transformer Engine 1.x, ``te_row_cast_only``)."""
    fp8_dtensor_tp: bool = False
    """fp8 TP through DTensor casts (torchao's float8 TP styles; the profile's
    ``fp8_dtensor_tp``): a gathered module input is cast once for all its projections, eager
    or compiled, and every current-scaling cast of a TP-sharded activation or gradient
    all-reduces its amax over TP (``amax_all_reduce``)."""
    fp8_weight_transpose: bool = False
    """Each fp8 dgrad copies its row-major fp8 weight to column-major first (torchao's
    ``preprocess_addmm``; the profile's ``fp8_weight_transpose_copy``)."""
    main_grad_bytes: int = 0
    """Bytes per element of the gradient buffer each weight-gradient GEMM accumulates into
    (Megatron's ``gradient_accumulation_fusion``, ``wgrad_accumulates``: 4 for fp32 grads, 2
    for 16-bit); 0 where the wgrad GEMM writes a fresh gradient."""
    cached_dummy_wgrad: bool = False
    """Transformer Engine's ``Linear``, ``LayerNormLinear`` and ``LayerNormMLP`` return a cached
    placeholder weight gradient to Megatron's DDP (``get_dummy_wgrad``, from TE v2.3: the
    profile's ``te_version``, ``TE_CACHED_DUMMY_WGRAD``): ``Gemm.dummy_cached`` on their wgrads."""
    cached_dummy_wgrad_grouped: bool = False
    """The same for ``GroupedLinear``'s expert weights (from TE v2.10,
    ``TE_GROUPED_CACHED_DUMMY_WGRAD``)."""
    sp_gathered_saved: bool = False
    """A column-parallel GEMM keeps the all-gathered input it read for its wgrad, so the
    backward gathers nothing again (DTensor TP; the profile's ``sp_gathered_gemm_inputs``)."""
    mla_local_down: bool = False
    """Under SP, MLA's down-projections run on the rank's own rows and the up-projections
    gather the compressed latents (profile ``mla_down_proj_duplicated``): Megatron-core
    core_v0.14.0 multi_latent_attention.py 351-413 (TELinear ``parallel_mode='duplicated'``),
    509-552 (q_compressed and kv_compressed [s/TP, b, ...], k_pos_emb
    ``gather_from_sequence_parallel_region``); gpt_layer_specs.py 125-147 (the up-projections
    LayerNormColumnParallelLinear, which gather their normed input)."""
    fp8_tn_only: bool = True
    """fp8 GEMMs take only the TN layout, so wgrad and dgrad need transposed copies: False
    where the GPU's fp8 GEMMs take any layout (Blackwell: TE v2.8 utils.py 462-467
    ``is_non_tn_fp8_gemm_supported``) and the framework's per-tensor quantizers skip the
    transpose there (the profile's ``fp8_non_tn_layouts``)."""
    fp8_norm_quantize: bool = False
    """A norm fused with the GEMM after it (Transformer Engine's LayerNormLinear, LayerNormMLP)
    quantizes its own output (the profile's ``fp8_norm_quantize``; ``linear``'s ``norm_fused``):
    under delayed scaling the norm kernel writes fp8 itself (csrc/extensions/normalization.cpp@v2.8
    108-109 ``FULLY_FUSED``; v1.5 _common.py 46-69 ``fp8_out``), a transpose of it following
    where the GEMM needs one (common/normalization/layernorm/ln_api.cpp@v2.8 111-117
    ``nvte_transpose``; v1.5 layernorm_linear.py 480 ``fp8_transpose``); under current scaling
    the norm computes the amax as it writes 16 bits, and the cast skips its amax pass
    (normalization.cpp@v2.8 116-120, 184-191 ``FUSED_NORM_AMAX_FP8`` -> ``quantize_with_amax``;
    TE >= 2.7). MXFP8 and blockwise norm, then cast (``UNFUSED``)."""
    mxfp8_swizzled: frozenset[str] = frozenset()
    """MXFP8 GEMM operands whose scales Transformer Engine swizzles into cuBLASLt's layout at
    each GEMM (the profile's ``mxfp8_swizzle_*``): ``weight``, ``activation`` (every activation
    and gradient operand), ``gathered`` (those sequence parallelism all-gathers); see
    ``mxfp8_swizzle``."""
    mxfp8_mma: bool = False
    """fp8 GEMMs take MXFP8 operands on tensor cores that apply the block scales in the MMA
    (the mxfp8 recipe on a ``GPUSpec.block_scaled_mma`` GPU; ``Gemm.fp8_block_scales`` "mma")."""
    fp8_wgrad_outer: bool = False
    """Weight-gradient GEMMs take both operands scaled per 1x128 along the tokens and promote
    between k blocks with a scale product per element (the blockwise recipe on a GPU without
    block-scaled MMA; ``wgrad_block_scales``)."""
    bias_kernels: frozenset[str] = frozenset()
    """Linear roles (``catalog.schema_checks.LINEAR_ROLES``) whose bias is added by a kernel
    of its own, its gradient summed over the tokens by another (the profile's
    ``linear_bias_kernels``, for the linears that have one: ``ModelConfig.qkv_bias``,
    ``proj_bias``, ``mlp_bias``; ``workload.layers.bias_add``)."""
    bias_grad_kernels: frozenset[str] = frozenset()
    """Linear roles whose bias the GEMM adds but whose bias gradient is a kernel of its own (the
    profile's ``linear_bias_grad_kernels``)."""
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
        """Bytes per element of casting a 16-bit GEMM input to fp8 under this shard's recipe:
        per-tensor scaling writes no transpose where GEMMs take non-TN layouts (``fp8_tn_only``:
        TE v2.8 csrc/quantizer.cpp 126-137, 331-340 ``with_transpose = columnwise_usage &&
        !nvte_is_non_tn_fp8_gemm_supported()``); MXFP8 and blockwise write both layouts anyway."""
        if self.fp8_recipe == "nvfp4":
            return NVFP4_CAST_BYTES
        if not self.fp8_tn_only and self.fp8_recipe in FP8_ROWWISE_GATHER_RECIPES:
            return FP8_CAST_BYTES + FP8_RECIPE_EXTRA_BYTES[self.fp8_recipe]
        return FP8_CAST_TRANSPOSE_BYTES + FP8_RECIPE_EXTRA_BYTES[self.fp8_recipe]

    @property
    def fp8_cast_kernels(self) -> int:
        """Kernels that cast one tensor to fp8 under this shard's recipe."""
        return FP8_RECIPE_KERNELS[self.fp8_recipe]

    @property
    def fp8_gather_cast_bytes(self) -> float:
        """Bytes per element of casting a rank's own rows before an fp8 all-gather: per-tensor
        scaled fp8 (delayed, current) is gathered row-wise only, so the cast writes no
        transpose; MXFP8 and blockwise cast both layouts, as for a local GEMM."""
        if self.fp8_recipe in FP8_ROWWISE_GATHER_RECIPES:
            return FP8_CAST_BYTES + FP8_RECIPE_EXTRA_BYTES[self.fp8_recipe]
        return self.fp8_cast_bytes

    @property
    def fp8_gathered_transpose(self) -> bool:
        """A gathered fp8 operand is transposed after the gather for its wgrad (row-wise
        gathered data, TN-only fp8 GEMMs)."""
        return self.fp8_recipe in FP8_ROWWISE_GATHER_RECIPES and self.fp8_tn_only

    def fp8_gather_bytes(self, grad: bool = False) -> float:
        """Bytes per element an fp8 SP all-gather moves: the 1-byte data, plus under MXFP8
        (TE ``fp8_local_cast``) its 8-bit scale per 32 elements for each layout the quantizer
        is set to use (distributed.py@v2.8 1449-1563 ``_all_gather_mxfp8``): the forward input
        row-wise only (layernorm_linear.py@v2.8 253 ``set_usage(rowwise=True,
        columnwise=False)``), the output gradient both, for dgrad and wgrad (linear.py@v2.8
        567 ``set_usage(rowwise=True, columnwise=True)``; with userbuffers a second, column-wise
        gather, 775-804)."""
        if self.fp8_recipe == "nvfp4":  # both layouts where mxfp8 gathers both
            return (2 if grad and self.fp8_local_cast else 1) * NVFP4_ELEMENT_BYTES
        if not (self.fp8_local_cast and self.fp8_recipe == "mxfp8"):
            return 1
        return (2 if grad else 1) * (1 + 1 / 32)

    @property
    def fp8_sharded_amax(self) -> bool:
        """A current-scaling cast of a TP-local activation or gradient (a row-parallel GEMM's
        input, a column-parallel GEMM's output gradient) all-reduces its amax over TP."""
        return self.fp8_dtensor_tp and self.fp8_recipe == "current"

    @property
    def eager_norms(self) -> bool:
        """The model's norm modules run as eager PyTorch ops (``elementwise.norm_impl``)."""
        return self.eager and not self.own_norms

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
        bool(profile_supports(cfg, "separate_qkv"))


def sdpa_kernels(framework: str, version: str | None) -> tuple[str, ...]:
    """The kernels a framework runs only through PyTorch's SDPA: its own ``sdpa_kernel``
    list's backends (profile ``sdpa_backends``: torchtitan's cuDNN first from 2025-05 on
    sm100, 2025-10 on every GPU) that it does not also call directly (``attention_kernels``)."""
    backends = framework_feature(framework, version, "sdpa_backends") or ()
    direct = framework_feature(framework, version, "attention_kernels") or ()
    return tuple(k for k in backends if k not in direct)


def kv_repeated(cfg: RunConfig) -> bool:
    """Whether the model copies GQA's K and V to every query head before the attention kernel:
    before SDPA where the profile's models do (``sdpa_repeat_kv``: transformers' repeat_kv up
    to v4.53, ibm-fms's expand+flatten, torchtitan's repeat_kv) and the run does not pass
    ``enable_gqa`` (``training.sdpa_enable_gqa``); before eager attention where the profile's
    models do (``unfused_repeat_kv``: transformers' ``eager_attention_forward``, v4.53.3 and
    v4.54.0 models/llama/modeling_llama.py L177-L178 / L178-L179); never before another kernel
    (transformers' FlashAttention-2 path, integrations/flash_attention.py, passes the KV heads
    as they are). SDPA's kernel is ``sdpa``, the one this torch release dispatches it to on
    the run's GPU (profile ``sdpa_by_arch``, applied by ``catalog.defaults``), or one the
    framework reaches only through SDPA (``sdpa_kernels``)."""
    t = cfg.training
    if not t.framework:
        return False
    dispatched = framework_default(t.framework, t.framework_version, "sdpa_by_arch")
    if t.attention == "sdpa" or t.attention in (dispatched or {}).values() \
            or t.attention in sdpa_kernels(t.framework, t.framework_version):
        return not t.sdpa_enable_gqa and bool(profile_supports(cfg, "sdpa_repeat_kv"))
    return t.attention in MATERIALIZED_SCORES and bool(profile_supports(cfg, "unfused_repeat_kv"))


def wgrad_accumulates(cfg: RunConfig) -> int:
    """Bytes per element of the buffer a weight-gradient GEMM adds its result into, 0 where it
    writes a fresh 16-bit gradient. Megatron's DDP (``data_parallel_impl`` megatron, ZeRO 0-1)
    with its weight-gradient accumulation fused into the GEMM hands each GEMM the parameter's
    ``main_grad`` as its output with ``accumulate`` on: Transformer Engine's linears under
    ``fuse_wgrad_accumulation`` (TransformerEngine v2.3 pytorch/module/grouped_linear.py
    ``_GroupedLinear.backward`` L329 ``wgrad_list = main_grads``, L345 ``accumulate=
    accumulate_wgrad_into_param_main_grad``, one such GEMM per expert; module/linear.py L690 ``out=
    main_grad``), whose cuBLASLt call reads C, the same buffer in D's dtype, with beta 1
    (common/gemm/cublaslt_gemm.cu ``cublas_gemm`` L293 ``beta = accumulate ? one : zero``, L440
    ``Cdesc`` of ``D_type``), and
    Megatron's own ``wgrad_gemm_accum_fp32`` / ``_fp16`` (core/tensor_parallel/layers.py
    ``LinearWithGradAccumulationAndAsyncCommunication.backward``). The buffer is fp32 where
    gradients reduce in fp32, else the parameters' 16 bits (core/distributed/
    distributed_data_parallel.py: ``grad_dtype``). Frameworks that add gradients outside the
    GEMM (``unfused_grad_accumulation``, ``fp32_grad_add``: ``workload.grad_accumulation``)
    and sharded data parallelism (ZeRO 3) are left at 0. Every micro-batch is priced as
    accumulating (the first of an iteration overwrites, ``is_first_microbatch``). Where the
    GEMM is compute-bound (dense layers: k is the micro-batch's tokens) this changes nothing;
    an expert's wgrad with a few hundred rows is bound by this traffic."""
    t, p = cfg.training, cfg.parallel
    if p.data_parallel_impl != "megatron" or p.zero_stage > 1 or not t.framework:
        return 0
    unfused = unfused_grad_accumulation(cfg)  # the profile's, or the run's stated fusion
    # "optimizer": Megatron-LLaMA's overlapped optimizer turns the fusion off (wgrad_fusion);
    # "16bit": the fusion runs into fp32 main_grad only (Megatron-LM 2022-02-13 to 2022-09-27,
    # wgrad_gemm_accum_fp32); 16-bit gradients are added apart (workload.grad_accumulation)
    if unfused in ("all", "optimizer") or (unfused == "16bit" and not t.grad_reduce_in_fp32) or \
            profile_supports(cfg, "fp32_grad_add"):
        return 0
    return 4 if t.grad_reduce_in_fp32 else 2


TE_ROW_CAST_ONLY = "1.2"
"""The first Transformer Engine release whose ``Linear`` casts an input under sequence
parallelism without its transpose (d76118d9, PR #531, 2023-11-28, "Linear: fix computation for
wgrad if sequence_parallel=True"; v1.1 and 09ba842 cast-transpose every input)."""
TE_ROW_CAST_TRANSPOSE = "2.0"
"""The first Transformer Engine release whose ``Linear`` casts a row-parallel input under
sequence parallelism with its transpose in one kernel (v2.0 module/linear.py L115-147:
``with_input_all_gather_nccl`` is column-parallel only, every other input is quantized with
``columnwise=backward_needs_input``)."""


def te_row_cast_only(cfg: RunConfig) -> bool:
    """Whether the run's Transformer Engine casts a row-parallel fp8 input under SP to fp8 alone
    and transposes it in the backward. From v1.5 to v1.13 ``_Linear.forward`` fuses the
    cast with its transpose only ``and not sequence_parallel``, a flag Megatron-core's TE
    linears set from the config for the row-parallel ones too, so under SP the proj and fc2
    inputs take ``cast_to_fp8`` (read 16 bits, write fp8) and ``_Linear.backward`` makes
    ``tex.fp8_transpose(inputmat_total)`` before the wgrad GEMM (TransformerEngine v1.10,
    08a85d3b, module/linear.py L105-132, L493-500; v1.5 L116, v1.13 L120 the same condition).
    Only a recorded ``te_version`` from :data:`TE_ROW_CAST_ONLY` before
    :data:`TE_ROW_CAST_TRANSPOSE` (fp8 through TE's cast before the gather,
    ``fp8_cast_before_gather``; TE 1.x has per-tensor delayed scaling only)."""
    t, p = cfg.training, cfg.parallel
    if not (t.dtype == "fp8" and t.fp8_recipe == "delayed" and p.tp > 1 and p.sequence_parallel
            and profile_supports(cfg, "fp8_cast_before_gather")):
        return False
    return te_at_least(t.framework, t.framework_version, TE_ROW_CAST_ONLY) and \
        not te_at_least(t.framework, t.framework_version, TE_ROW_CAST_TRANSPOSE)


def shard_of(cfg: RunConfig) -> Shard:
    t, p = cfg.training, cfg.parallel
    cp_ring = p.cp > 1 and profile_supports(cfg, "cp_sdpa_ring")
    te_ring = not cp_ring and p.cp > 1 and p.cp_comm_type == "p2p" and t.attention in p.cp_te_ring
    q_len = t.seq_length // p.cp
    return Shard(tokens=t.micro_batch_size * q_len, batch=t.micro_batch_size, q_len=q_len,
                 seq=t.seq_length, tp=p.tp, sp=p.sequence_parallel, cp=p.cp, dtype=t.dtype,
                 attention_impl=t.attention, parallel_block=cfg.model.parallel_block,
                 num_sms=cfg.cluster.gpu.num_sms,
                 cp_comm=p.cp_comm_type, fp8_recipe=t.fp8_recipe,
                 eager=t.modules == "eager" and not t.compile,
                 split_projections=separate_projections(cfg),
                 autocast=p.data_parallel_impl == "ddp" and t.dtype != "fp8",
                 compiled=t.compile, norm="xla" if xla_norms(cfg) else t.norm,
                 own_norms=bool(profile_supports(cfg, "fused_norm_modules")),
                 gelu_epilogue=gelu_in_epilogue(cfg),
                 fp8_local_cast=t.dtype == "fp8" and p.tp > 1 and p.sequence_parallel
                 and profile_supports(cfg, "fp8_cast_before_gather"),
                 fp8_row_cast_only=te_row_cast_only(cfg),
                 fp8_dtensor_tp=t.dtype == "fp8" and p.tp > 1
                 and profile_supports(cfg, "fp8_dtensor_tp"),
                 fp8_weight_transpose=t.dtype == "fp8"
                 and profile_supports(cfg, "fp8_weight_transpose_copy"),
                 main_grad_bytes=wgrad_accumulates(cfg),
                 cached_dummy_wgrad=te_at_least(t.framework, t.framework_version,
                                                TE_CACHED_DUMMY_WGRAD),
                 cached_dummy_wgrad_grouped=te_at_least(t.framework, t.framework_version,
                                                        TE_GROUPED_CACHED_DUMMY_WGRAD),
                 sp_gathered_saved=p.tp > 1 and p.sequence_parallel
                 and profile_supports(cfg, "sp_gathered_gemm_inputs"),
                 mla_local_down=p.tp > 1 and p.sequence_parallel
                 and profile_supports(cfg, "mla_down_proj_duplicated"),
                 fp8_tn_only=not cfg.cluster.gpu.fp8_any_layout
                 or not profile_supports(cfg, "fp8_non_tn_layouts"),
                 fp8_norm_quantize=t.dtype == "fp8" and profile_supports(cfg, "fp8_norm_quantize"),
                 mxfp8_mma=t.dtype == "fp8" and t.fp8_recipe == "mxfp8"
                 and cfg.cluster.gpu.block_scaled_mma,
                 fp8_wgrad_outer=t.dtype == "fp8" and t.fp8_recipe == "blockwise"
                 and not cfg.cluster.gpu.block_scaled_mma,
                 mxfp8_swizzled=frozenset(
                     kind for kind, feature in MXFP8_SWIZZLE_FEATURES.items() if t.dtype == "fp8"
                     and t.fp8_recipe == "mxfp8" and profile_supports(cfg, feature)),
                 fp8_module_scale_update=t.dtype == "fp8" and t.fp8_recipe == "delayed"
                 and profile_supports(cfg, "fp8_module_scale_update"),
                 te_linear_mlp=profile_supports(cfg, "te_linear_mlp"),
                 flash_unpad=t.attention in ("flash1", "flash2")
                 and profile_supports(cfg, "flash_unpad"),
                 cp_ring=cp_ring, cp_te_ring=te_ring,
                 kv_repeat=kv_repeated(cfg),
                 scaled_rope_unfused=profile_supports(cfg, "scaled_rope_unfused"),
                 complex_rope=profile_supports(cfg, "complex_rope"),
                 eager_glu=profile_supports(cfg, "eager_glu") and not t.compile,
                 qkv_relayout=profile_supports(cfg, "qkv_relayout_copies") and not t.compile,
                 softmax_args_swapped=profile_supports(cfg, "softmax_args_swapped"),
                 masked_window=profile_supports(cfg, "masked_window_scores"),
                 megatron_unfused=profile_supports(cfg, "megatron_unfused_ops")
                 or profile_supports(cfg, "te_unfused_attention"),
                 bias_kernels=linear_bias_kernels(cfg),
                 bias_grad_kernels=linear_bias_kernels(cfg, "linear_bias_grad_kernels"))


def linear_bias_kernels(cfg: RunConfig, feature: str = "linear_bias_kernels") -> frozenset[str]:
    """The linear roles whose biases the run's framework adds in kernels of their own (the
    profile's ``linear_bias_kernels``), or whose bias gradients it sums in kernels of their
    own (``feature`` ``linear_bias_grad_kernels``). None for a model without linear biases, a
    run that names no framework, or fp8 GEMMs: these frameworks run fp8 only through
    Transformer Engine's linears, which fuse bias and bias gradient (Megatron-LM@e801b2bb
    megatron/model/transformer.py 1347-1349 asserts transformer_impl 'transformer_engine'
    under fp8; llm-foundry's submit_benchmarks.py sets fc_type te for fp8). MLA's projections
    and the experts are not among the roles."""
    t, m = cfg.training, cfg.model
    if not (m.any_linear_bias and t.framework) or t.dtype == "fp8":
        return frozenset()
    roles = framework_feature(t.framework, t.framework_version, feature)
    biased = {"qkv": m.qkv_bias, "proj": m.proj_bias, "fc1": m.mlp_bias, "fc2": m.mlp_bias}
    return frozenset(r for r in roles or () if biased.get(r, True))


LAYERNORM_MLP = ("fc1", "fc2")
"""The MLP's GEMMs, one Transformer Engine module (``LayerNormMLP`` in TE's ``TransformerLayer``,
which NeMo's GPT runs with ``transformer_engine: True``): one fp8 scaling update for both, before
fc1 in the forward and before fc2 in the backward."""


AUTOCAST_CAST_BYTES = 4 + ACT
"""torch.autocast casts an fp32 weight to 16 bits for each matmul (read 4, write 2 bytes per
parameter; cached for the forward, so once per micro-batch), and the backward of that cast
turns the 16-bit weight gradient back into fp32 (read 2, write 4)."""


def linear(ops: list[Op], sh: Shard, name: str, m: int, n: int, k: int, batch: int = 1,
          shares_input: bool = False, grouped: GroupedImpl = "", ragged: bool = False,
          seq_parallel: str = "", norm_fused: bool = False) -> None:
    """A forward (fprop) linear: its fp8 GEMM runs without cuBLAS's split accumulator, as
    Transformer Engine runs it (pytorch/module/base.py ``_2X_ACC_FPROP = False``, passed as
    ``use_split_accumulator`` by Linear, LayerNormLinear, LayerNormMLP and GroupedLinear) and
    torchao's float8 training (float8/config.py ``gemm_config_output =
    Float8GemmConfig(use_fast_accum=True)``); ``backward_of`` clears it for dgrad and wgrad.
    ``seq_parallel``: ``"gather"`` for a column-parallel GEMM whose input SP all-gathers,
    ``"scatter"`` for a row-parallel GEMM whose output SP reduce-scatters (its gradient is
    gathered); with ``Shard.fp8_local_cast`` the gathered operand is cast on local rows."""
    if sh.autocast:
        cast = batch * n * k * AUTOCAST_CAST_BYTES
        ops.append(Elementwise(f"{name}.autocast_weight", bytes=cast, kernel="copy",
                               bwd_bytes=cast))
    if sh.fp8_module_scale_update and not grouped and (sh.te_linear_mlp
                                                         or name != LAYERNORM_MLP[1]):
        ops.append(fp8_scale_update_op(name))
    gathered = sh.fp8_local_cast and seq_parallel == "gather"
    # the norm quantizes: delayed scaling writes fp8 in the norm, current drops the amax pass
    fused = norm_fused and sh.fp8_norm_quantize and sh.fp8_recipe in FP8_ROWWISE_GATHER_RECIPES
    amax_read = ACT if fused and sh.fp8_recipe == "current" else 0
    kernels = sh.fp8_cast_kernels - (1 if amax_read else 0)
    shared = shares_input and (sh.compiled or gathered and sh.fp8_dtensor_tp)
    if gathered and not shared:  # own rows, cast before the gather
        if sh.fp8_recipe == "current":
            ops.append(amax_all_reduce(f"{name}.amax_all_reduce"))
        if not (fused and sh.fp8_recipe == "delayed"):
            ops.append(Elementwise(f"{name}.fp8_cast", bytes=m // sh.tp * k * (
                sh.fp8_gather_cast_bytes - amax_read), kernels=kernels,
                kernel=FP8_GATHER_CAST_KERNEL))
    elif fused and sh.fp8_recipe == "delayed" and not gathered:  # the norm wrote fp8
        if sh.fp8_tn_only:
            ops.append(Elementwise(f"{name}.norm_fp8_transpose", bytes=m * k * FP8_TRANSPOSE_BYTES,
                                   kernel=FP8_TRANSPOSE_KERNEL))
    elif sh.fp8_row_cast_only and seq_parallel == "scatter" and not grouped and not shared:
        # TE 1.x under SP: the row-parallel input cast alone, transposed in the backward
        ops.append(Elementwise(f"{name}.fp8_cast", bytes=batch * m * k * FP8_CAST_BYTES,
                               kernels=batch * kernels, kernel=FP8_GATHER_CAST_KERNEL))
    elif sh.dtype == "fp8" and not gathered and not shared:
        # the activation input is cast (with amax) to fp8 and transposed, split per expert for
        # a grouped GEMM (Transformer Engine's GroupedLinear); compiled, siblings share one
        if sh.fp8_sharded_amax and not grouped:
            ops.append(amax_all_reduce(f"{name}.amax_all_reduce"))
        ops.append(Elementwise(f"{name}.cast_transpose",
                               bytes=batch * m * k * (sh.fp8_cast_bytes - amax_read),
                               kernels=batch * kernels, kernel=CAST_KERNEL))
    fp8 = sh.dtype == "fp8"
    gemm = Gemm(name, m=m, n=n, k=k, dtype=sh.dtype, batch=batch, shares_input=shares_input,
                grouped=grouped, ragged=ragged, fp8_fast_accum=fp8,
                seq_parallel=seq_parallel if fp8 else "",  # read for fp8 only
                fp8_block_scales="nvfp4" if fp8 and sh.fp8_recipe == "nvfp4"
                else "mma" if fp8 and sh.mxfp8_mma else "")
    swizzle = mxfp8_swizzle(sh, name, gemm, ((activation_kind(sh, gemm, "gather"), m * k),
                                             ("weight", n * k)))
    ops.extend([swizzle, gemm] if swizzle else [gemm])


def tp_enter(ops: list[Op], sh: Shard, h: int, name: str, gemm_dtype: str | None = None,
             in_tp_overlap: bool = True) -> None:
    """Forward entry of a TP region (column-parallel GEMMs): all-gather the sequence-sharded
    input under SP. Transformer Engine casts the input to fp8 before gathering it when the
    GEMM runs in fp8 (``LayerNormLinear`` writes its norm output in fp8), so the gather moves
    one byte per element; the input gradient it pairs with is reduced in 16 bits.
    ``in_tp_overlap``: see ``Comm.in_tp_overlap``."""
    if sh.tp > 1 and sh.sp:
        elem = sh.fp8_gather_bytes() if (gemm_dtype or sh.dtype) == "fp8" else ACT
        ops.append(Comm(f"{name}.all_gather", "all_gather", sh.tokens * h * elem, "tp",
                        grad_bytes=sh.tokens * h * ACT, in_tp_overlap=in_tp_overlap))


def tp_exit(ops: list[Op], sh: Shard, h: int, name: str, gemm_dtype: str | None = None) -> None:
    """Forward exit of a TP region (row-parallel GEMMs): all-reduce (or reduce-scatter under SP)
    the 16-bit partial sums. In backward, SP all-gathers the output gradient, in fp8 when the
    GEMM runs in fp8 (Transformer Engine casts it before the gather)."""
    if sh.tp > 1:
        kind = "reduce_scatter" if sh.sp else "all_reduce"
        elem = sh.fp8_gather_bytes(grad=sh.sp) if (gemm_dtype or sh.dtype) == "fp8" else ACT
        ops.append(Comm(f"{name}.{kind}", kind, sh.tokens * h * ACT, "tp",
                        grad_bytes=sh.tokens * h * elem))
