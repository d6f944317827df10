"""Training hyper-parameters that change the work of one iteration."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

from trainsim.config._build import SI_SUFFIXED, check_fields, require_positive, require_rate
from trainsim.config.graph_scope import graph_scope_checked
from trainsim.errors import ConfigError

OPTIMIZER_STATE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}
"""Bytes per element of an optimizer state in each dtype Megatron-core's precision-aware
optimizer takes (megatron/core/optimizer/optimizer_config.py, core_r0.16)."""

AttentionName = Literal["unfused", "eager", "flash1", "flash2", "flash3", "flash4", "cudnn",
                        "sdpa", "triton", "flex", "mem_efficient", "ck", "flash"]
"""The attention kernels ``TrainingConfig.attention`` names (``ParallelConfig.cp_te_ring``
lists some of them)."""

SINK_ATTENTION = frozenset({"cudnn", "flex", "flash4", "unfused", "eager"})
"""Attention kernels that can add a sink to the softmax (``ModelConfig.softmax_type`` other
than vanilla). Transformer Engine never runs FlashAttention for it (v2.8-v2.16
transformer_engine/pytorch/attention/dot_product_attention/utils.py
``get_attention_backend``, "Filter: Softmax type"); its FusedAttention does from cuDNN 9.13.1
(common/fused_attn/fused_attn.cpp ``nvte_get_fused_attn_backend``: F16_arbitrary_seqlen with
``cudnn_runtime_version >= 91301``, cuDNN's ``set_sink_token``), beside its unfused softmax.
FlexAttention returns the log-sum-exp and the sink rescales the output after it (NeMo
Automodel components/attention/flex_attention.py @ 89e3a9fd: ``out * sigmoid(lse - sink)``);
FlashAttention-4 takes ``learnable_sink`` (Dao-AILab/flash-attention 0251105a
flash_attn/cute/interface.py). FlashAttention 1-3 (csrc and hopper flash_api.cpp: no sink
logit; hopper's ``sink_token_length`` keeps leading keys in a window), PyTorch SDPA and the
Triton and memory-efficient kernels take none."""
SINK_FALLBACK = ("cudnn", "flex", "eager", "unfused")
"""The kernel a framework runs a sink model on when its default kernel takes no sink: the
first of these its profile lists (``attention_kernels``). Transformer Engine prefers
FusedAttention to its unfused path (utils.py: FlashAttention, then FusedAttention, then
UnfusedDotProductAttention), so a framework on TE takes cuDNN; a PyTorch one FlexAttention
(Automodel's gpt-oss asserts ``backend.attn == "flex"``, models/gpt_oss/layers.py @ 89e3a9fd),
else plain ops. Without a framework or a list: cuDNN, the fused kernel that takes a sink, on
an NVIDIA GPU (``NVIDIA_ONLY_ATTENTION``); elsewhere FlexAttention, which PyTorch generates as
Triton kernels on ROCm too (torch/_inductor/kernel/flex_attention.py)."""
NVIDIA_ONLY_ATTENTION = frozenset({"cudnn", "flash3", "flash4"})
"""Kernels that run only on NVIDIA GPUs: cuDNN is NVIDIA's library (Transformer Engine's
FusedAttention calls it; its ROCm build calls CK instead, ``AMD_ONLY_ATTENTION``);
FlashAttention-3 is CUDA for Hopper (Dao-AILab/flash-attention 0251105a README L31
"optimized for Hopper GPUs", hopper/: wgmma and TMA); FlashAttention-4 is written in CUTLASS's
CuTe DSL for Hopper and Blackwell (flash_attn/cute). The same README's ROCm section (L149-166)
offers FlashAttention-2 only, on its CK and Triton backends (``flash2``, ``ck``). cuDNN and
FA4 take a sink (``SINK_ATTENTION``), FA3 does not."""
AMD_ONLY_ATTENTION = frozenset({"ck"})
"""Kernels that run only on AMD GPUs: ``ck``, Transformer Engine's FusedAttention as its ROCm
build runs it, on AMD's Composable Kernel FMHA (ROCm/TransformerEngine@ac80527d
transformer_engine/common/fused_attn_rocm/fused_attn.cpp L69-116 ``nvte_get_fused_attn_backend``:
CK first, AOTriton where CK declines; HIP code, no CUDA build)."""


@dataclass(frozen=True)
class TrainingConfig:
    global_batch_size: int = 512
    """Sequences per optimizer step (across all data-parallel ranks)."""
    micro_batch_size: int = 1
    """Sequences per forward/backward pass on one rank."""
    local_batch_size: int | None = None
    """Sequences one rank's pipeline schedule takes per step, where the training loop steps the
    schedule several times per optimizer step (gradient accumulation outside the schedule:
    NeMo Automodel's step_scheduler.local_batch_size, recipes/llm/benchmark.py calling
    ``schedule.step`` once per local batch): each step fills and drains the pipeline. None:
    one schedule of all the iteration's micro-batches (Megatron, torchtitan). Read only with
    pipeline parallelism (``RunConfig.schedule_steps``)."""
    seq_length: int = 2048
    """Tokens per sequence."""
    dtype: Literal["fp16", "bf16", "fp8"] = "bf16"
    """Compute precision of GEMMs; fp8 as Transformer Engine (fp8 GEMMs, bf16 elsewhere)."""
    optimizer: Literal["adam", "lamb", "sgd"] = "adam"
    """adam; lamb (layer-wise adaptive, You et al. 2020, as MegaScale trains with at 3x the
    batch): Adam's state plus per-tensor norms; sgd: with momentum."""
    grad_reduce_in_fp32: bool = True
    """Accumulate and reduce gradients in fp32 (Megatron-LM's default for bf16; its fp16 default
    and NeMo's distributed Adam with grad_sync_dtype=bf16 keep them in 16 bits)."""
    gradient_accumulation_fusion: bool | None = None
    """Whether the weight-gradient GEMMs accumulate into the gradient buffer themselves
    (Megatron's ``gradient_accumulation_fusion``, on by default; ``--no-gradient-accumulation-
    fusion`` turns it off): off, a kernel a tensor adds each micro-batch's 16-bit gradients into
    ``main_grad`` after its backward (``workload.wgrad_fusion``). Megatron's data parallelism
    only (DDP, the distributed optimizer, Megatron-FSDP). None: the framework's default at its
    version (profile ``unfused_grad_accumulation``, ``megatron_fsdp_unfused_wgrad``)."""
    attention: AttentionName = "flash2"
    """The attention kernel (``workload.ops.AttentionImpl``): unfused (Megatron's QK^T / fused
    softmax / V with the score matrix in memory), eager (the same in plain PyTorch ops: matmul,
    mask add, softmax, dropout, matmul), flash1 (the first FlashAttention, Megatron-LM's
    --use-flash-attn from January 2023), flash2, flash3 (Hopper), flash4 (Blackwell), cudnn
    (Transformer Engine's fused attention), sdpa (PyTorch's scaled_dot_product_attention),
    triton (llm-foundry's Triton FlashAttention, pre-MLIR Triton), flex (torch FlexAttention),
    mem_efficient (xFormers' memory-efficient attention, e.g. LLaMA-1's training, or PyTorch
    SDPA's EFFICIENT_ATTENTION backend that runs it), ck (Transformer Engine's fused attention on
    ROCm, its Composable Kernel backend: AMD GPUs only). ``flash`` is read as flash2."""
    fp8_recipe: Literal["delayed", "current", "blockwise", "mxfp8", "nvfp4"] = "delayed"
    """How fp8 tensors are scaled (Transformer Engine recipes): ``delayed`` per-tensor scale
    from an amax history (the cast reads its input once); ``current`` per-tensor scale from this
    tensor's amax (one more read of the input before the cast); ``blockwise`` 1x128 / 128x128
    block scales (DeepSeek-V3 §3.3.1); ``mxfp8`` Blackwell's MX format, one 8-bit scale per 32
    elements; ``nvfp4`` Transformer Engine's ``NVFP4BlockScaling``: the linears' three GEMMs in
    4-bit E2M1 with an E4M3 scale per 16 elements and a per-tensor fp32 scale, on the fp4 tensor
    cores (Megatron-core ``--fp4-format e2m1 --fp4-recipe nvfp4``, which TE runs through the
    same ``fp8_autocast``: Megatron-LM@d98e8a64 megatron/core/fp4_utils.py L219-290;
    ``workload.shard.NVFP4_ELEMENT_BYTES``). Used only when dtype is fp8."""
    fp8_param_gather: bool = False
    """Keep the matmul weights only in fp8 and all-gather them in fp8 (Megatron
    --fp8-param-gather, Megatron-Bridge's fp8 mixed-precision recipes): no 16-bit copy of them.
    Used only when dtype is fp8."""
    tp_only_amax_red: bool = False
    """Reduce delayed scaling's amaxes over the tensor-and-context-parallel ranks only, not the
    whole pipeline stage (Megatron-core TransformerConfig ``tp_only_amax_red``, core_v0.9.0
    transformer_block.py L435-441 -> parallel_state.py L977-989 ``get_amax_reduction_group``;
    NeMo's GPT-3 175B performance script sets it, NVIDIA/NeMo v2.2.0
    scripts/llm/performance/pretrain_gpt3_175b.py L101, v2.3.0 scripts/performance/llm/
    pretrain_gpt3_175b.py L114). False: the framework profile's ``fp8_amax_tp_only``. Used only
    when dtype is fp8 with delayed scaling."""
    num_layers_at_start_in_bf16: int = 0
    """Transformer layers at the start of the model whose linears run in 16 bits under fp8 (and
    NVFP4): Megatron-core ``--first-last-layers-bf16`` with ``--num-layers-at-start-in-bf16``
    (Megatron-LM@d98e8a64 megatron/core/fp8_utils.py L711-728 ``is_first_last_bf16_layer``,
    fp4_utils.py L246-263: no fp8/fp4 autocast for a layer whose global index is below it).
    0: none. Used only when dtype is fp8."""
    num_layers_at_end_in_bf16: int = 0
    """The same for the last layers (``--num-layers-at-end-in-bf16``; torchtitan's NVFP4 recipe
    keeps its last ~15 % of decoder blocks bf16, Megatron-Bridge's Nemotron 3 Super NVFP4 recipe
    the last 14). 0: none. Used only when dtype is fp8."""
    activation_func_fp8_input_store: bool = False
    """Keep the SwiGLU input saved for the backward in fp8, one byte per element, and cast it
    back for the backward (Megatron-core --activation-func-fp8-input-store,
    megatron/core/fusions/fused_bias_swiglu.py; DeepSeek-V3 report §3.3.3 caches the SwiGLU
    inputs of the MoE in fp8). SwiGLU only."""
    attention_output_e5m6: bool = False
    """Cache the attention output (the out-projection's input) once, in 12-bit E5M6 with the
    1x128 tile scales of the other fp8 activations, and let the attention's backward read that
    copy too (DeepSeek-V3 report §3.3.3, "Low-Precision Activation" (1): the inputs of the
    Linear after the attention operator "are also used in the backward pass of the attention
    operator", hence E5M6 for them alone). Without it the out-projection saves its 8-bit cast
    and the attention kernel its own 16-bit output. Memory only; used only when dtype is fp8."""
    use_precision_aware_optimizer: bool = False
    """Let the optimizer keep its states in lower precision (Megatron-core
    --use-precision-aware-optimizer: Transformer Engine's FusedAdam); needed for the moment
    dtypes below to be other than fp32."""
    exp_avg_dtype: Literal["fp32", "bf16", "fp16", "fp8"] = "fp32"
    """dtype of Adam's first moment (Megatron-core --exp-avg-dtype; DeepSeek-V3 §3.3.3: bf16)."""
    exp_avg_sq_dtype: Literal["fp32", "bf16", "fp16", "fp8"] = "fp32"
    """dtype of Adam's second moment (Megatron-core --exp-avg-sq-dtype)."""
    optimizer_dtype: Literal["fp32", "bf16", "fp16"] = "fp32"
    """dtype of the whole optimizer state of Apex's DistributedFusedAdam (NeMo 1.x
    ``optim.dtype``: both moments, and the master copy where one is kept); only for a framework
    whose optimizer that is (profile feature ``apex_distributed_adam``)."""
    cuda_graphs: bool = False
    """Capture each layer's kernels in CUDA graphs (Megatron-core --enable-cuda-graph, NeMo
    ``enable_cuda_graph``; Megatron-core ``cuda_graph_impl`` other than "none"): kernels launch
    without the host's per-kernel cost (the parts ``cuda_graph_scope`` names, else all)."""
    cuda_graph_scope: tuple[str, ...] = ()
    """With ``cuda_graphs``: the parts of each layer captured (Megatron-core
    ``cuda_graph_scope``, core_v0.16.0 transformer/enums.py ``CudaGraphScope``; Megatron-Bridge
    ``cfg.model.cuda_graph_scope``): ``attn`` (input norm, attention, its residual add),
    ``mlp`` (a dense layer's MLP block), ``moe`` (a drop-and-pad MoE block), ``moe_router``
    (pre-MLP norm, router, shared experts unless overlapped), ``moe_preprocess`` (the token
    dispatcher's metadata and first permutation; needs ``moe_router``), ``mamba`` (a hybrid
    model's Mamba layers, whole). Empty, ``full`` or
    ``full_iteration``: the whole layer. The rest runs eagerly (``workload.graph_scope``)."""
    no_grad_clip: bool = False
    """The loop steps the optimizer without clipping gradients by norm: the optimizer step's
    frame reads and scales no gradient (``workload.elementwise.CLIP_BYTES``), as a bare
    ``loss.backward(); opt.step()`` loop (benchmarks/step_probe.py) runs. The ``no_grad_clip``
    option of a validation row. Off: the loop clips, as Megatron (``--clip-grad`` 1.0), the
    Hugging Face Trainer (``max_grad_norm`` 1.0) and the frameworks here do by default."""
    onehot_embedding: bool = False
    """The model looks the tokens (and learned positions) up as a one-hot matrix times the
    table, a GEMM forward and a weight-gradient GEMM backward, not a gather and a scatter-add
    (``workload.head.onehot_lookup``): MaxText's ``use_iota_embed=true``, the
    ``onehot_embedding`` option of a validation row. Off: the framework's own lookup, which its
    profile's ``onehot_embedding`` may make one-hot (Praxis's ``lookup_style 'matmul'``)."""
    xla_layers: bool = False
    """The model runs its framework's own layers as XLA compiles them where the framework's
    recipes run Transformer Engine's: a Paxml run with ``ENABLE_TE=0`` (Praxis's
    ``DotProductAttention``: a materialized attention's softmax in fp32 as XLA's reduction
    fusions, ``workload.xla_layers``). Only where the framework's profile has ``xla_layers``;
    the ``xla_layers`` option of a validation row."""
    unscanned_layers: bool = False
    """A JAX step whose decoder layers are separate parameters, not one stacked scan (MaxText
    ``scan_layers=false``): no layer loop, so XLA's all-reduce combiner joins the HSDP replica
    all-reduces of many layers, in the parameters' sorted-name order
    (``workload.xla_combine``). Only where the framework's profile has ``unscanned_layers``;
    the ``unscanned_layers`` option of a validation row."""
    sdpa_enable_gqa: bool = False
    """SDPA receives GQA's K and V heads as they are (``enable_gqa=True``, torch >= 2.5): the
    model copies nothing before it even where its framework profile's models repeat K and V
    (``sdpa_repeat_kv``), as transformers from v4.54.0 does without an attention mask
    (huggingface/transformers#39412, integrations/sdpa_attention.py ``use_gqa_in_sdpa``).
    The ``enable_gqa`` option of a validation row."""
    cuda_launch_blocking: bool = False
    """Run with ``CUDA_LAUNCH_BLOCKING=1``: every kernel launch (NCCL's included) returns only
    when the kernel has finished, so the host's per-kernel cost adds to the GPU's instead of
    hiding behind queued kernels, and no collective overlaps compute (modelled for the
    collectives inside a pass and the gradient reduction; the parameter all-gathers of ZeRO-3 /
    FSDP and of the distributed optimizer are still priced as overlapped). A debugging switch
    that some runs kept as a workaround (BigScience's BLOOM-176B launch script: "do not remove
    or the training will hang")."""
    expandable_segments: bool = False
    """PyTorch's caching allocator with ``PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True``
    (torch >= 2.1): segments grow in place, so freed blocks are not stranded between fixed
    segments and reserved memory stays close to allocated (``memory.allocator``)."""
    compile: bool = False
    """torch.compile the model (torchtitan ``compile.enable``): fused elementwise kernels."""
    modules: Literal["fused", "eager"] = "fused"
    """How the model's norms, activations, rotary embedding and loss run: ``fused`` kernels
    (Megatron, Transformer Engine, apex; ``norm`` says how their norms run) or ``eager``, one
    kernel per PyTorch op as Hugging Face's modules are written (``LlamaRMSNorm``, rotate-half
    RoPE, ``act_fn(gate) * up``, the loss on logits upcast to fp32); ``compile`` fuses them
    again.
    A framework profile sets it (``pytorch``: eager); a validation row's ``hf_modules`` option
    sets eager where a framework that builds no model runs a Hugging Face one (DeepSpeed)."""
    norm: Literal["fused", "two_pass", "scalar_two_pass"] = "fused"
    """How the norms of ``fused`` modules run: ``fused``, one pass holding the row in registers
    (Transformer Engine, apex contrib's FastLayerNorm, Liger), ``two_pass``, reading each row
    twice (torch's native ``F.layer_norm``), or ``scalar_two_pass``, twice with one 16-bit load
    per thread (apex's FusedLayerNorm, Megatron's MixedFusedLayerNorm; ``workload.elementwise``).
    A framework profile sets it."""
    cross_entropy: Literal["fused", "unfused", "te", "flash_attn"] = "fused"
    """How the vocab-parallel cross-entropy of ``fused`` modules runs: ``fused``, one pass that
    reads the 16-bit logits and keeps the fp32 softmax (Megatron-core's
    ``cross_entropy_loss_fusion``, Transformer Engine's parallel cross-entropy), or
    ``unfused``, Megatron's ``mpu/cross_entropy.py`` on logits cast to fp32 with ``.float()``:
    max, subtract, exp, sum and divide as separate PyTorch ops over the [tokens, vocab / tp]
    matrix (``workload.elementwise``); or ``te``, Transformer Engine's Triton
    ``parallel_cross_entropy`` (Megatron-core ``cross_entropy_fusion_impl="te"``), which writes
    the logits' gradient into the 16-bit logits in its forward and scales it in place in the
    backward, keeping no fp32 softmax; or ``flash_attn``, flash-attn's Triton cross-entropy
    (llm-foundry's ``fused_crossentropy``), one read of the logits forward keeping only the
    log-sum-exp, and a read and a 16-bit gradient write backward. Eager modules run PyTorch's
    ``F.cross_entropy`` whatever this says. A framework profile sets it."""
    framework: str | None = None
    """The training software (``trainsim catalog frameworks``): its profile fills the settings a
    config leaves out, as that framework did by default at ``framework_version``."""
    framework_version: str | None = None
    """Release or date of the framework (e.g. ``24.07``, ``2022-03``); None = its newest."""
    vocab_divisible_by: int | None = None
    """The run's Megatron ``--make-vocab-size-divisible-by`` (NeMo and Megatron-Bridge
    ``make_vocab_size_divisible_by``): the embedding, output layer and logits are built with
    ``model.vocab_size`` rounded up to a multiple of this x TP (``workload.vocab``). None: the
    framework profile's ``vocab_divisible_by`` (128 for the Megatron family; no padding where
    the framework does not pad). 1 pads to a multiple of TP only, which is also what a
    Megatron-Bridge model without ``should_pad_vocab`` builds (a vocabulary TP divides)."""
    train_tokens: float | None = field(default=None, metadata={SI_SUFFIXED: True})
    """Tokens of the whole run, for days/cost (None: per-iteration results only); in a file,
    ``--set`` or the service also as ``15T`` / ``300B`` (``config._build.si_float``)."""
    # --- data loading (MegaScale §3.5): reading token files and collating micro-batches
    data_read_bw_Bps: float | None = None
    """Storage read bandwidth one node gets for training data, bytes/s (None: free reads)."""
    data_prep_s_per_sample: float = 0.0
    """CPU time of a loader worker to fetch and collate one sequence."""
    num_workers: int = 2
    """Loader worker processes per rank (Megatron --num-workers)."""
    data_loader_async: bool = True
    """Workers prefetch the next step's batches while this one computes; only what does not
    fit in a step is exposed. False: loading blocks the step's start."""
    data_loader_per_node: bool = False
    """One shared loader per node whose GPUs take their slices from shared memory (MegaScale's
    redundant-dataloader elimination); False: every rank reads its own copy, so the tensor-
    and context-parallel ranks of a node read the same samples again."""

    def __post_init__(self) -> None:
        if self.attention == "flash":  # the name before implementations were told apart
            object.__setattr__(self, "attention", "flash2")
        check_fields(self, "training")
        for name in ("num_layers_at_start_in_bf16", "num_layers_at_end_in_bf16"):
            if getattr(self, name) < 0:
                raise ConfigError(f"training.{name}={getattr(self, name)} must be >= 0 (layers "
                                  "kept in bf16 under fp8)")
        if self.dtype == "fp8" and self.fp8_recipe == "delayed" and (
                self.num_layers_at_start_in_bf16 or self.num_layers_at_end_in_bf16):
            # Megatron-LM@d98e8a64 transformer_config.py L1529-1530
            raise ConfigError("training.num_layers_at_start_in_bf16 / num_layers_at_end_in_bf16 "
                              "with fp8_recipe=delayed: Megatron-core refuses it (\"Delayed "
                              "scaling does not support first / last layer in BF16\"); use "
                              "current, mxfp8 or nvfp4")
        require_positive("training", global_batch_size=self.global_batch_size,
                         micro_batch_size=self.micro_batch_size, seq_length=self.seq_length,
                         local_batch_size=self.local_batch_size,
                         train_tokens=self.train_tokens, data_read_bw_Bps=self.data_read_bw_Bps,
                         num_workers=self.num_workers, vocab_divisible_by=self.vocab_divisible_by)
        require_rate("training", data_read_bw_Bps=self.data_read_bw_Bps)  # as the cluster's
        if self.optimizer_dtype not in ("fp32", "bf16", "fp16"):
            raise ConfigError(f"training.optimizer_dtype={self.optimizer_dtype!r} is unknown; "
                              "known: fp32, bf16, fp16")
        if self.optimizer_dtype != "fp32" and self.framework is None:
            raise ConfigError("training.optimizer_dtype needs training.framework: it is the state "
                              "dtype of Apex's DistributedFusedAdam as NeMo 1.x sets it up")
        if self.gradient_accumulation_fusion is not None and self.framework is None:
            raise ConfigError("training.gradient_accumulation_fusion needs training.framework: "
                              "it is Megatron's switch, read against the framework's release")
        if self.optimizer_dtype != "fp32" and self.use_precision_aware_optimizer:
            raise ConfigError("training.optimizer_dtype is Apex DistributedFusedAdam's state dtype; "
                              "Megatron-core's precision-aware optimizer takes exp_avg_dtype and "
                              "exp_avg_sq_dtype instead")
        moments = {"exp_avg_dtype": self.exp_avg_dtype, "exp_avg_sq_dtype": self.exp_avg_sq_dtype}
        for name, value in moments.items():
            if value not in OPTIMIZER_STATE_BYTES:
                raise ConfigError(f"training.{name}={value!r} is unknown; known: "
                                  f"{', '.join(OPTIMIZER_STATE_BYTES)}")
            if value != "fp32" and not self.use_precision_aware_optimizer:
                raise ConfigError(f"training.{name}={value} needs use_precision_aware_optimizer"
                                  "=true (Megatron-core: only TE's FusedAdam keeps them below fp32)")
            if value != "fp32" and self.optimizer != "adam":
                raise ConfigError(f"training.{name}={value} needs optimizer=adam (Megatron-core's "
                                  "precision-aware optimizer is Adam only)")
        object.__setattr__(self, "cuda_graph_scope", graph_scope_checked(
            self.cuda_graph_scope, self.cuda_graphs))
        if self.train_tokens is not None:
            check_run_tokens(self, self.train_tokens, "training.train_tokens")
        if not 0 <= self.data_prep_s_per_sample < math.inf:
            raise ConfigError(f"training.data_prep_s_per_sample={self.data_prep_s_per_sample} "
                              "must be >= 0")

    @property
    def compute_dtype_bytes(self) -> int:
        """Bytes of an activation element (fp8 runs keep bf16 activations, as TE does)."""
        return 2


def check_run_tokens(training: TrainingConfig, tokens: float, name: str) -> None:
    """Refuse a run of fewer tokens than one global batch of ``training`` (``name``: the option
    or field that gave them, ``--tokens``, ``options.tokens``, ``training.train_tokens``): less
    than one iteration is no training run, and its days, cost and energy came out as a
    fraction of one step's (``plan --tokens 1e-9`` reported 0 MWh). The caller refuses tokens
    that are not a positive finite number first."""
    per_batch = training.global_batch_size * training.seq_length
    if tokens < per_batch:
        raise ConfigError(f"{name}={tokens:g} is fewer tokens than one global batch "
                          f"({per_batch:,}: global_batch_size {training.global_batch_size} x "
                          f"seq_length {training.seq_length}); a run trains at least one "
                          "iteration")


FP8_ONLY_SETTINGS = ("fp8_recipe", "fp8_param_gather", "num_layers_at_start_in_bf16",
                     "num_layers_at_end_in_bf16", "attention_output_e5m6")
"""Training fields read only when ``dtype`` is fp8: the recipe scales fp8 GEMMs; the fp8 weight
gather, the first / last layers kept in 16 bits and the E5M6 attention output change an fp8
run only (``RunConfig.bf16_layers`` is empty without fp8; ``workload.layers`` casts to E5M6
under fp8 alone). Megatron-core reads them the same way: its first / last-layer checks sit
under ``if self.fp8:`` (NVIDIA/Megatron-LM@d98e8a64 transformer_config.py L1527-1556) and
``--fp8-param-gather`` is checked against the optimizer only (arguments.py L1095-1097).
``activation_func_fp8_input_store`` is not one: its SwiGLU casts its saved input to fp8 in a
16-bit run too (fused_bias_swiglu.py; transformer_config.py L2467-2469 checks SwiGLU only)."""


def fp8_recipe_ignored(stated: Any, dtype: str, name: str = "fp8_recipe") -> str | None:
    """The warning for an fp8-only setting ``name`` (``FP8_ONLY_SETTINGS``) a config states
    (``stated``, as written, before a framework's default fills it) with a ``dtype`` that is not
    fp8, or None: the recipe scales fp8 GEMMs only (Transformer Engine's
    ``fp8_autocast(enabled=False)`` runs the 16-bit GEMMs and reads no recipe), and the others
    change an fp8 run only, so the run prices ``dtype`` and ignores it."""
    if stated is None or (isinstance(stated, str) and not stated.strip()) or dtype == "fp8":
        return None
    shown = str(stated).lower() if isinstance(stated, bool) else stated
    what = "the recipe" if name == "fp8_recipe" else "it"
    return (f"training.{name}={shown} is ignored: training.dtype={dtype} runs no fp8 "
            f"GEMMs (set training.dtype=fp8 to use {what})")
