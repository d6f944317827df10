"""Operations of a per-rank workload: what runs, with its shapes, before any pricing.

Ops are small frozen records: a compute kernel (GEMM, attention, memory-bound elementwise) or
a communication (collective over a named process group, or pipeline point-to-point).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Union, get_args

DTYPE_BYTES = {"fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 1}
ACT_BYTES = 2  # a 16-bit activation element
NVFP4_BLOCK = 16
"""Elements per NVFP4 scale block (an E4M3 scale each; Transformer Engine's
``NVFP4BlockScaling``, TransformerEngine@d0067d0d transformer_engine/common/recipe/__init__.py
L489-506: "each group of 16 consecutive values is scaled together")."""
NVFP4_ELEMENT_BYTES = 0.5 + 1 / NVFP4_BLOCK
"""Bytes per element of one NVFP4 layout: the 4-bit E2M1 value and its share of the 1-byte E4M3
scale of its 16-element block (the per-tensor fp32 scale is negligible)."""

AttentionImpl = Literal["unfused", "eager", "flash1", "flash2", "flash3", "flash4", "cudnn",
                        "sdpa", "triton", "flex", "mem_efficient", "ck"]
"""Attention kernels, each priced as its own kernel: ``unfused`` is Megatron's QK^T / softmax /
AV with the s*s score matrix in memory; ``eager`` is the same in plain PyTorch ops (matmul, a
mask add when causal, softmax, dropout, matmul, with the head-layout copies ``einsum`` makes:
the FlashAttention papers' "PyTorch" baseline); ``flash1``-``flash4`` are Dao-AILab's FlashAttention
generations (FA3 is Hopper's, FA4 Blackwell's); ``cudnn`` is cuDNN's fused attention as
Transformer Engine calls it; ``sdpa`` is PyTorch's scaled_dot_product_attention (its flash
backend for 16-bit inputs without a mask); ``triton`` is llm-foundry's Triton FlashAttention
(its default ``attn_impl``, priced at the first FlashAttention's rate); ``flex`` is torch's
FlexAttention (torchtitan); ``mem_efficient`` is PyTorch SDPA's memory-efficient backend
(xFormers' CUTLASS kernels), priced at the first FlashAttention's rate but without its
key-block-outer loop (``compute.attention.flash1_pass_bytes``); ``ck`` is Transformer Engine's
fused attention on ROCm, its Composable Kernel backend (AMD GPUs only: ``compute.attention``
prices it in the FlashAttention-2 family)."""
ATTENTION_IMPLS: tuple[str, ...] = get_args(AttentionImpl)
MATERIALIZED_SCORES = frozenset({"unfused", "eager"})
"""Implementations that write the s*s score matrix to memory (and keep it for backward)."""
FUSED_ATTENTION = frozenset(ATTENTION_IMPLS) - MATERIALIZED_SCORES
GQA_EXPANDED_BWD = frozenset({"flash2", "sdpa", "ck"})
"""Kernels whose grouped-query backward writes dK and dV per *query* head and sums each group
after, in two more kernels (``compute.attention.gqa_group_sum_bytes``); a model that repeats
K and V before any other kernel pays that sum in the repeat's own backward
(``workload.context_parallel.sdpa_repeat_kv_op``). ROCm Transformer Engine's CK backward does
the same: a ``dkv_expanded`` workspace of 2 x b x h x s_kv x d, then its ``dk_dv_reduce``
kernel (ROCm/TransformerEngine@ac80527d transformer_engine/common/fused_attn_rocm/
fused_attn_ck.cpp L232-233, common/ck_fused_attn/src/ck_fused_attn_bwd.cpp L19-64)."""

Group = Literal["tp", "cp", "dp", "dp_cp", "dp_rep", "tp_dp_cp", "tp_cp", "pp", "embd", "ep",
                "etp", "edp"]
"""Process groups, Megatron naming: dp_cp is data-parallel including context-parallel ranks
(with HSDP, ``parallel.dp_replicate`` > 1: one replica's, over which the state is sharded);
dp_rep joins the HSDP replicas of one shard (the outer data-parallel ranks); embd joins the
first and last pipeline stages (tied embedding gradients); tp_cp joins the tensor- and
context-parallel ranks of one data-parallel index; ep / etp are the
expert-parallel and expert-tensor-parallel groups, edp the expert data-parallel group."""

GroupedImpl = Literal["", "multi_stream", "loop", "cutlass", "triton", "triton_max_m", "deepgemm",
                      "userbuffers"]
"""Grouped-GEMM implementations: ``multi_stream`` is Transformer Engine's ``GroupedLinear``
(one cuBLAS GEMM per group on a pool of streams, TE ``multi_stream_cublas_gemm``); ``loop``
one GEMM per group in turn (tgale96/grouped_gemm's cuBLAS mode, Hugging Face's expert loop);
``cutlass`` one persistent kernel over every group's tiles (CUTLASS grouped GEMM, PyTorch's
``torch._grouped_mm``, cuBLASLt grouped GEMM); ``triton`` a Triton grouped kernel (Liger's and
vLLM's fused MoE); ``triton_max_m`` one launched over a worst-case grid, every group given
as many row blocks as all groups' rows fill, the rest exiting at once (VeOmni's
``group_gemm_same_nk``: ``compute.grouped.empty_programs``); ``deepgemm`` DeepSeek's DeepGEMM m-grouped kernels; ``userbuffers`` the
chunks of one GEMM that Transformer Engine's TP overlap runs on its own streams
(``pricing.Pricer``)."""
GROUPED_IMPLS: tuple[str, ...] = get_args(GroupedImpl)
FULL_GRID: dict[str, GroupedImpl] = {"triton_max_m": "triton"}
"""The kernel a worst-case-grid implementation runs for its weight gradients, whose grid is
each group's full output (VeOmni's ``group_gemm_same_mn``, ByteDance-Seed/VeOmni@bfe4b650
veomni/ops/group_gemm/kernel/group_gemm.py L357-383): ``workload.layers.backward_of``."""

Fp8BlockScales = Literal["", "overlapped", "serial", "outer", "mma", "nvfp4"]
"""How an fp8 GEMM with a scale per block of k applies it (``Gemm.fp8_block_scales``)."""

Collective = Literal["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast",
                     "send_recv"]


@dataclass(frozen=True)
class Gemm:
    """C[m, n] = A[m, k] @ B[k, n], ``batch`` times."""

    name: str
    m: int
    n: int
    k: int
    dtype: str = "bf16"
    batch: int = 1
    shares_input: bool = False
    """Reads the same input as the GEMM before it (Hugging Face's separate q/k/v and gate/up
    projections): autograd sums the input gradients, one add kernel per extra consumer."""
    grouped: GroupedImpl = ""
    """How the ``batch`` groups run when they are a grouped GEMM (an MoE layer's experts):
    ``""`` one batched kernel whose tiles fill the GPU together (cuBLAS strided-batched);
    otherwise the implementation (``GROUPED_IMPLS``), priced by ``compute.roofline``."""
    ragged: bool = False
    """The groups' row counts (``m``) vary around ``m`` (dropless routing, random offsets):
    each group's last row tile is on average half full."""
    fp8_fast_accum: bool = False
    """An fp8 GEMM whose kernel does without cuBLAS's split accumulator (its default, and
    ``torch._scaled_mm``'s): it accumulates in the tensor cores' registers (TileLang, CUTLASS
    fast-accumulation schedules) or promotes on the CUDA cores beside them (DeepGEMM), priced
    by ``compute.roofline.gemm_rate``."""
    seq_parallel: str = ""
    """Which operand sequence parallelism all-gathers (``workload.shard.linear``'s argument):
    ``gather`` its input, ``scatter`` its output gradient; where fp8 is cast on local rows
    before the gather (``Shard.fp8_local_cast``) the backward prices the casts and transposes
    around those gathers, and MXFP8 scale swizzles read it (``workload.shard.activation_kind``).
    Not read by pricing."""
    fp8_block_scales: Fp8BlockScales = ""
    """fp8 operands scaled per 128-wide block of k (DeepSeek-V3's 1x128 activation and 128x128
    weight tiles, report §3.3.1) instead of per tensor: the kernel multiplies each block's
    partial sums by their scales and adds them into fp32 accumulators on the CUDA cores, in its
    main loop. ``overlapped``: while the tensor cores run the next block (DeepGEMM's two math
    warpgroups); ``serial``: between blocks, the tensor cores idle (CUTLASS's SM90
    ``KernelTmaWarpSpecializedCooperativeFP8BlockScaledAccum``, vLLM's block-fp8 kernel);
    ``outer``: ``serial`` with both operands scaled per 1x128 along k, so each output element's
    scale is a row's times a column's (the blockwise recipe's weight gradient, output gradient
    and input both scaled per 128 tokens: DeepSeek-V3 §3.3.1; DeepGEMM's ``sm90_fp8_gemm_1d1d``,
    cuBLASLt's 1x128-by-1x128 mode): a scale product and an FFMA per element and block
    (``compute.roofline.PROMOTION_OPS``);
    ``mma``: MXFP8's E8M0 scale per 32 elements of k, which the tensor cores apply in the MMA
    itself (Blackwell's block-scaled ``tcgen05.mma``; Transformer Engine's ``MXFP8BlockScaling``
    recipe, ``workload.shard.linear``); ``nvfp4``: the operands are not fp8 but NVFP4 (E2M1
    with an E4M3 scale per 16 elements of k, ``NVFP4_ELEMENT_BYTES``), the tensor cores
    applying the scales in the MMA at the GPU's fp4 rate (Transformer Engine's
    ``NVFP4BlockScaling`` recipe, ``training.fp8_recipe=nvfp4``); ``""``: per-tensor scales,
    applied in the epilogue.
    Priced by ``compute.roofline``."""
    accumulate_bytes: int = 0
    """Bytes per element of the buffer the GEMM adds its output into, read and written by its
    epilogue (beta 1): a weight-gradient GEMM accumulating into Megatron's ``main_grad``
    (``workload.shard.Shard.main_grad_bytes``); 0: a fresh 16-bit output."""
    param_hooks: int = 0
    """Parameters whose gradient this weight-gradient GEMM hands to Megatron's DDP with the
    accumulation fused (each one's placeholder gradient and DDP's backward post-hook,
    ``workload.layers.backward_of``): ``compute.host.PARAM_GRAD_S`` of host time each, no
    kernel, beside its launches."""
    dummy_cached: bool = False
    """Its placeholder gradients come from Transformer Engine's cache (``get_dummy_wgrad``: a
    ``detach`` each, ``compute.host.PY_VIEW_S``) instead of a ``torch.empty`` each."""
    ssd_bytes: float = 0.0
    """Bytes a mamba_ssm Triton SSD matmul kernel moves (each tensor once, ``workload.
    mamba_block``): above 0 the kernel is priced at ``compute.ssd``'s share of HBM over them
    (or its FLOPs at the bf16 ceiling, whichever is longer), not as a grouped GEMM."""

    @property
    def flops(self) -> float:
        return 2.0 * self.batch * self.m * self.n * self.k

    @property
    def bytes(self) -> float:
        e = NVFP4_ELEMENT_BYTES if self.fp8_block_scales == "nvfp4" else DTYPE_BYTES[self.dtype]
        # outputs are written in 16 bits (fp8 GEMMs too, as Transformer Engine does), or read
        # and written in the accumulating buffer's dtype
        out = 2 * self.accumulate_bytes if self.accumulate_bytes else 2
        return self.batch * ((self.m * self.k + self.k * self.n) * e + self.m * self.n * out)


@dataclass(frozen=True)
class Attention:
    """Scaled-dot-product attention core of one micro-batch on one rank.

    ``q_len`` local queries attend to ``kv_len`` keys; ``causal`` skips the masked half
    (FlashAttention computes only needed blocks); ``window`` limits the span.
    """

    name: str
    batch: int
    heads: int
    kv_heads: int
    q_len: int
    kv_len: int
    head_dim: int
    causal: bool = True
    window: int | None = None
    backward: bool = False
    impl: AttentionImpl = "flash2"
    dropout: bool = False
    masked_window: bool = False
    """An unfused ``impl`` masks a sliding window after computing every score (the profile's
    ``masked_window_scores``) instead of computing only the window's."""
    megatron_ops: bool = False
    """An unfused ``impl`` issues Megatron's ``CoreAttention`` ops, one launch each (the
    profile's ``megatron_unfused_ops``; ``compute.host.MEGATRON_UNFUSED_LAUNCHES``), as
    Transformer Engine's ``UnfusedDotProductAttention`` issues the same ops (the profile's
    ``te_unfused_attention``; its own mask and fallback: ``workload.te_unfused``); False:
    counted as one launch."""
    qk_head_dim: int | None = None
    """Width of a query/key head where it differs from the value head's (MLA: 192 against
    128); ``head_dim`` is then the mean of the two, which the FLOPs and bytes count. A fused
    kernel is chosen by this width (``compute.attention_head_dims.kernel_head_dims``). None: equal."""

    @property
    def pairs(self) -> float:
        """Query-key pairs computed per head."""
        if self.impl in MATERIALIZED_SCORES and self.masked_window:
            # the framework's unfused attention computes every score and masks the future and
            # the keys outside a sliding window afterwards: Megatron-Bridge's Gemma 2 attention
            # runs the full baddbmm and applies get_swa's mask in the softmax
            # (NVIDIA-NeMo/Megatron-Bridge@2394d359 models/gemma/gemma2_provider.py),
            # Hugging Face's eager_attention_forward adds its windowed mask to the full matmul
            return float(self.q_len) * self.kv_len
        w = self.kv_len if self.window is None else min(self.window, self.kv_len)
        if self.impl in MATERIALIZED_SCORES or not self.causal:
            # unfused kernels compute every score in a query's span and mask the future after
            return float(self.q_len) * w
        # Causal: query i sees min(i + 1, window) keys. Local queries are a balanced share
        # of the sequence (load-balanced CP sharding), so take that share of the total.
        total = self.kv_len * w - w * (w - 1) / 2.0
        return total * self.q_len / self.kv_len

    @property
    def flops(self) -> float:
        fwd = 4.0 * self.batch * self.heads * self.pairs * self.head_dim
        if not self.backward:
            return fwd
        # FlashAttention backward: 5 matmuls to forward's 2 (Dao 2023, FlashAttention-2 §3.1),
        # the fifth recomputing the scores it did not keep. A kernel that keeps the scores runs
        # the 4 of ``score_gemms``: autograd's gradients of QK^T (baddbmm, Megatron's legacy
        # CoreAttention) and of PV (bmm) are two batched matmuls each (PyTorch
        # tools/autograd/derivatives.yaml, ``bmm`` and ``baddbmm``: self and mat2 / batch1 and
        # batch2), twice the forward's.
        return fwd * (2.0 if self.impl in MATERIALIZED_SCORES else 2.5)

    @property
    def bytes(self) -> float:
        qo = 2 * self.batch * self.q_len * self.heads * self.head_dim * 2
        kv = 2 * self.batch * self.kv_len * self.kv_heads * self.head_dim * 2
        if self.impl not in MATERIALIZED_SCORES:
            return (qo + kv) * (2 if self.backward else 1)
        # Q, K, V and O once forward (QK^T reads Q and K, PV reads V and writes O); backward
        # the 4 score matmuls read dO twice, V, K and Q and write dV, dQ and dK: twice that
        if self.backward:
            qo, kv = 2 * qo, 2 * kv
        scores = self.batch * self.heads * self.pairs
        if self.impl == "eager":
            # per score: QK^T writes it (2), the causal mask add reads it and the mask and
            # writes it (6), softmax reads and writes (4), dropout as below (5), AV reads (2);
            # backward: dP written (2), P read for dV (2), dropout (5), softmax backward (6), dS
            # read by the dQ and dK matmuls (4). einsum copies Q, K, V and the output to and
            # from the head-major layout (read + write, 16 bits): 4 tensors each way.
            drop = 5.0 if self.dropout else 0.0
            per = 14.0 + drop if self.backward else 8.0 + drop + (6.0 if self.causal else 0.0)
            copies = 4 * 2 * ACT_BYTES * self.batch * self.q_len * self.heads * self.head_dim
            return qo + kv + copies + scores * per
        # Unfused (Megatron's baddbmm + fused scale-mask-softmax + dropout + bmm), bytes per
        # score element: forward writes scores (2), softmax reads/writes (4), dropout reads,
        # writes and stores its mask (5), AV reads (2); backward: d(probs) written (2) and the
        # dropout output read for dV (2), dropout backward (5), softmax backward (6), dS read by
        # the dQ and dK matmuls (4), as for eager. Without attention dropout its 5 bytes drop
        # out of each direction.
        per = (19.0 if self.backward else 13.0) - (0.0 if self.dropout else 5.0)
        return qo + kv + scores * per

    def score_gemms(self) -> list[Gemm]:
        """The batched matmuls of an implementation that materializes the scores, one batch per
        (sequence, head): QK^T and PV forward; dP = dO V^T, dV = P^T dO, dQ = dS K and
        dK = dS^T Q backward (K and V shared by a GQA group are read per query head)."""
        b, s, kv, d = self.batch * self.heads, self.q_len, self.kv_len, self.head_dim
        if not self.backward:
            return [Gemm("qk", s, kv, d, batch=b), Gemm("pv", s, d, kv, batch=b)]
        return [Gemm("dp", s, kv, d, batch=b), Gemm("dv", kv, d, s, batch=b),
                Gemm("dq", s, d, kv, batch=b), Gemm("dk", kv, d, s, batch=b)]


@dataclass(frozen=True)
class Elementwise:
    """A memory-bound kernel (norm, activation, dropout, residual, casts, optimizer)."""

    name: str
    bytes: float
    flops: float = 0.0
    kernels: int = 1
    """Kernel launches the op stands for (an eager multi-kernel norm, a copy per rank): each
    pays its launch cost (``compute.roofline.LAUNCH_S``) and the host's (``compute.host``)."""
    cpp_kernels: int = 0
    """Of ``kernels``, those a C++ loop issues with no Python around them (ProcessGroupNCCL's
    per-rank copies after a list ``all_gather``): each costs the host ``compute.host.
    CPP_LAUNCH_S`` instead of an eager op's ``HOST_S_PER_KERNEL``."""
    py_kernels: int = 0
    """Of ``kernels``, those a bare Python loop issues (a tensor method such as ``copy_`` called
    in a ``for`` loop, no module, hook or autograd record around it): each costs the host
    ``compute.host.PY_LAUNCH_S`` instead of ``HOST_S_PER_KERNEL``, an eager module's."""
    bwd_py_kernels: int = 0
    """Of its backward's kernels, those the Python of an autograd Function's ``backward`` issues
    as bare tensor methods (grad mode off: no autograd record), ``PY_LAUNCH_S`` each (mamba_ssm's
    gated norm: the ``dw`` partials' ``sum`` and cast)."""
    py_views: int = 0
    """View ops (``narrow``, ``view``, a slice) the same bare Python loop calls beside its
    kernels: no kernel, ``compute.host.PY_VIEW_S`` of host time each."""
    engine_calls: int = 0
    """Calls into the autograd engine this op stands for (``Variable._execution_engine.
    run_backward`` on a sub-graph): no kernel of their own, ``compute.host.ENGINE_CALL_S`` of
    host time each (the kernels the sub-graph runs are counted with their ops)."""
    bwd_engine_calls: int = 0
    """``engine_calls`` of its backward (``workload.layers.backward_of``)."""
    node_passes: int = 0
    """Passes of a schedule node (Megatron-core's combined 1F1B) this op stands for: the
    node's stream context and event wait and record around its work, ``compute.host.
    NODE_PASS_S`` of host time each, no kernel."""
    bwd_node_passes: int = 0
    """``node_passes`` of its backward (``workload.layers.backward_of``)."""
    host_sync: bool = False
    """The host waits for this op's result before issuing the next (a device-to-host copy of
    values Python needs, e.g. dropless MoE's tokens per expert): see ``compute.host``."""
    kernel: str = ""
    """The kernel family it runs (``rmsnorm``, ``layernorm``, ``residual_add``, ``swiglu``,
    ``gelu``, ``rope``, ``cross_entropy``, ``embedding``, ``fp8_cast_transpose``, ``adamw``;
    ``.bwd`` for a backward): what a measured-kernel database keys it by (``compute.database``).
    Empty: an op no database prices (routing, framework bookkeeping)."""
    bwd_bytes: float | None = None
    """Bytes of its backward where the generic rule does not hold (a cast's backward casts the
    gradient back: as many bytes); None: ``workload.elementwise.backward_bytes``."""
    bwd_kernels: int | None = None
    """Kernels of its backward where they differ from the forward's (Megatron's router: 28
    forward, ~12 backward); None: as the forward (``workload.elementwise.backward_bytes``)."""
    impl: str = "fused"
    """How that family is implemented: ``fused`` (one kernel, one pass: Transformer Engine,
    Megatron's fused kernels), ``two_pass`` (a norm reading each row twice: torch's native
    norms), ``eager`` (one kernel per PyTorch op, e.g. Hugging Face's modules), ...; see
    ``workload.elementwise``."""
    elem_bytes: int = ACT_BYTES
    """Bytes of one element of the tensor it runs over (2 for 16-bit, 4 for fp32): what a
    per-element byte formula of ``workload.elementwise`` is evaluated at."""
    full_wave: bool = False
    """The kernel launches one full wave of the GPU: a fixed number of CTAs on every SM, each
    looping over rows, whatever the tensor's size (Transformer Engine's and apex contrib's
    norm kernels: ``ctas_per_col = multiprocessorCount * ctas_per_sm / ctas_per_row``,
    NVIDIA/TransformerEngine@d0067d0 common/normalization/rmsnorm/rmsnorm_fwd_cuda_kernel.cu
    L24-L29, rmsnorm_bwd_semi_cuda_kernel.cu L24-L29; the general kernels L76-L81 cap the
    grid at the same count). Beside a kernel that holds SMs its last CTAs wait for a second
    wave (``compute.roofline.full_wave_extra``); False: a grid sized by the data."""
    scatter: tuple[float, ...] = ()
    """A scatter-add of token rows into a table (PyTorch's dense embedding backward, ``kernel``
    ``embedding.bwd``): (tokens, row width, distinct ids, partial segments, largest id's share
    of the tokens, distinct ids among 32 in a row), ``workload.token_ids``; priced by ``compute.embedding_bwd`` from how its
    kernels are written instead of by its bytes. Empty: priced by its bytes."""
    atomic_adds: float = 0.0
    """16-bit atomic adds into global memory its scatter kernel issues (PyTorch's ``index_add_``
    or ``scatter_add_`` on a bf16/fp16 tensor: one per source element), that kernel priced by
    their count at the GPU's atomic rate (``compute.atomics``, whose fitted rate includes the
    kernel's reads); ``bytes`` are the op's other kernels'."""
    bwd_atomic_adds: float = 0.0
    """``atomic_adds`` of its backward (``index_select``'s: an ``index_add_``)."""


@dataclass(frozen=True)
class Comm:
    """A collective over a process group, or a pipeline send/recv (``send_recv`` on ``pp``)."""

    name: str
    kind: Collective
    bytes: float
    group: Group
    overlap_with_previous: bool = False
    """Runs concurrently with the preceding compute op (ring attention KV exchange, the async
    backward TP collectives under dgrad/wgrad): only the part longer than that op is exposed,
    plus the SMs it takes from it (``Pricer.hidden_behind``)."""
    beside_next: int = 0
    """Runs beside the next this many compute ops, which the host issues after it on another
    stream (Megatron-core's shared experts on their side stream beside an expert all-to-all,
    ``workload.moe_block``): only the part longer than them is exposed, plus the SMs it takes
    from them (``Pricer.hidden_behind``); 0 = none."""
    beside_in_backward: bool = True
    """With ``beside_next``: whether its conjugate also runs beside that compute's backward
    (Megatron-core's side stream, ``layers.backward_of``). False: the overlap is the forward's
    alone (torchtitan's async combine, whose gradient autograd issues after that compute's
    backward): the conjugate is a plain exchange where the backward meets it."""
    grad_bytes: float | None = None
    """Bytes of its conjugate in the backward pass; None = ``bytes``. (Transformer Engine's fp8
    gathers move 1-byte tensors while the gradients they pair with reduce in 16 bits.)"""
    domain_fanout: float = 0.0
    """A two-stage exchange across NVLink domains (DeepEP's and HybridEP's internode dispatch
    and combine): bytes each rank forwards inside its NVLink domain, per byte of ``bytes``,
    beside the network stage (``Pricer.comm_time``); 0 = a plain collective."""
    p2p_ranks: int = 0
    """Ranks of the NCCL communicator a send runs on where it is not its group's: a lone
    ``isend``/``irecv`` outside ``batch_isend_irecv`` gets a two-rank communicator of its own
    from PyTorch's ``ProcessGroupNCCL::pointToPoint`` (key ``getKeySendRecv(rank, peer)``, "for
    single P2P, preserve the old two-rank behavior"; still so in pytorch/pytorch#160342,
    2025-08, at c8205cb3). 0 = the group's communicator."""
    waited: bool = False
    """The compute stream waits for it as soon as it is issued, the TP overlap included
    (Transformer Engine's amax all-reduce, ``workload.shard.FP8_AMAX_BYTES``)."""
    in_tp_overlap: bool = True
    """A TP collective the run's ``tp_comm_overlap`` can take over (False: outside it, priced
    as without the overlap). The overlap is a decoder-layer mechanism: Megatron-core builds the
    output layer from its own ``tensor_parallel.ColumnParallelLinear`` (core_v0.14.0
    models/gpt/gpt_model.py L213), whose ``LinearWithGradAccumulationAndAsyncCommunication``
    (tensor_parallel/layers.py L440-620) all-gathers the SP input with a blocking
    ``dist_all_gather_func`` before the logits matmul and runs its backward re-gather and
    input-gradient reduce-scatter as async NCCL collectives beside the dgrad and wgrad GEMMs;
    Transformer Engine's userbuffers serve only TE's modules; the vocab-parallel embedding
    and cross-entropy are plain NCCL collectives too; torchtitan's async TP exists only where
    Inductor compiles, and ``apply_compile`` (torchtitan/distributed/compile.py) compiles each
    TransformerBlock alone."""


Op = Union[Gemm, Attention, Elementwise, Comm]  # noqa: UP007 - get_args reads it
