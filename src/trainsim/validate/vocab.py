"""The words a published table may use for a kernel library or a setting, read as trainsim's.

Validation files from other sources name the same thing in other ways: a kernels table says
``flashinfer`` or ``te`` where trainsim prices a kernel family (``workload.ops.AttentionImpl``,
``GroupedImpl``); a training table writes ``BF16``, ``Megatron-LM``, ``ring`` or ``tensorwise``
where the shared ``validation/README.md`` documents ``bf16``, ``megatron-lm``, ``p2p`` and
``current``. Each reading here is what that library or framework itself runs (cited); a word
whose kernel or mechanism is not known, or that names kernels of different speed (``flash_attn``
was FlashAttention-1 before v2.0), stays a one-line error naming the accepted ones.
"""

from __future__ import annotations

import re
from typing import Any

from trainsim.catalog.fallback import FALLBACK_MARK
from trainsim.catalog.frameworks import version_reading
from trainsim.config._build import DTYPE_SYNONYMS
from trainsim.errors import ConfigError
from trainsim.validate.framework_names import framework_key, unprofiled, written_version
from trainsim.workload.ops import ATTENTION_IMPLS

CONFIG_FLASH = "flash"
"""The one attention word trainsim's own config accepts beyond the kernels' names (read as
flash2, ``config.training.TrainingConfig.attention``): a training cell means by it what a config
file does, as the validator read it before the synonyms; kernel rows, which time one library's
kernel, still name it (``AMBIGUOUS_ATTENTION``)."""

# ---------------------------------------------------------------------------------------------
# Kernel libraries (kernels_*.csv ``implementation``)

ATTENTION_IMPL = {
    "unfused": "unfused", "eager": "eager", "flash1": "flash1", "flash2": "flash2",
    "flash3": "flash3", "flash4": "flash4", "cudnn": "cudnn", "sdpa": "sdpa",
    # PyTorch SDPA's memory-efficient backend is xFormers' CUTLASS kernel, which runs at about
    # the first FlashAttention's rate (Dao 2023, FlashAttention-2, Figs. 4-6: "xformers" beside
    # "FlashAttention"); both issue Ampere's mma.sync.
    "mem_efficient": "mem_efficient", "xformers": "mem_efficient",
    # the FlashAttention papers' figure labels; their "PyTorch" bars are standard attention in
    # PyTorch ops, matmul-softmax-matmul (kernels_published.csv's fa2paper-*-pytorch rows)
    "fa1": "flash1", "fa2": "flash2", "fa3": "flash3", "fa4": "flash4", "pytorch": "eager",
    # FlexAttention (torch.nn.attention.flex_attention): its own impl (FLEX_OF_FLASH2)
    "flex": "flex", "flex_attention": "flex", "flexattention": "flex",
    # names that carry the FlashAttention generation (Hugging Face attn_implementation's
    # flash_attention_2/_3; FA3 is the separate ``flash_attn_interface`` of hopper/)
    "flashattention2": "flash2", "flashattention_2": "flash2", "flash_attention_2": "flash2",
    "flashattention3": "flash3", "flashattention_3": "flash3", "flash_attention_3": "flash3",
    "flash_attn_3": "flash3",
    "cudnn_attention": "cudnn",
    # PyTorch SDPA's FLASH_ATTENTION backend (its vendored FlashAttention-2 kernels) apart from
    # the flash-attn package (``flash2``): cudnn-frontend's benchmark names it
    # pyt_flash_attention (benchmark/sdpa_benchmark_training, @bb37575d); priced as ``sdpa``,
    # which the kernel databases' SDPA records answer (compute.database.SDPA_RECORD_IMPL)
    "sdpa_flash": "sdpa", "pyt_flash_attention": "sdpa",
}
"""Kernel library named in a kernels row or a training row's ``attention`` cell -> the
simulator's ``AttentionImpl``, on every GPU."""

ATTENTION_BY_ARCH: dict[str, tuple[dict[str, str], str]] = {
    # flashinfer/utils.py determine_attention_backend (flashinfer-ai/flashinfer@004bad51):
    # "fa3" when is_sm90a_supported (compute capability major == 9), else "fa2" -- its
    # FA3-derived Hopper template, its FA2-style mma.sync template on other NVIDIA GPUs; both
    # are CUDA kernels (is_sm90a_supported reads the CUDA compute capability and
    # torch.version.cuda): no AMD entry
    "flashinfer": ({"sm80": "flash2", "sm90": "flash3", "sm100": "flash2"},
                   ("FlashInfer prefill: FA3 template on sm90, FA2 template elsewhere "
                   "(flashinfer/utils.py determine_attention_backend)")),
    # HazyResearch/ThunderKittens kernels/attn/h100/h100.cu (producer warpgroup issuing TMA
    # loads, consumer warpgroups on wgmma: FA3's structure), kernels/attn/b200/b200.cu
    # (tcgen05), kernels/attn/demo/a100.cu (mma.sync); no AMD kernel in that repository
    "thunderkittens": ({"sm80": "flash2", "sm90": "flash3", "sm100": "flash3"},
                       ("ThunderKittens: warp-specialised TMA + wgmma/tcgen05 kernel on "
                       "Hopper/Blackwell, mma.sync on Ampere")),
    # Transformer Engine DotProductAttention (transformer_engine/pytorch/attention/
    # dot_product_attention/utils.py get_attention_backend, v2.18 L1554-1560): FusedAttention
    # (cuDNN) on compute capability >= 9.0, flash-attn before Hopper when installed (the
    # frameworks' attention_by_arch {sm80: flash2} reads it the same way)
    # ROCm/TransformerEngine@ac80527d: its get_attention_backend sets _NVTE_FLASH_ATTN = 0
    # under IS_HIP_EXTENSION (transformer_engine/pytorch/attention.py L294-297) and
    # FusedAttention takes CK first (common/fused_attn_rocm/fused_attn.cpp L69-116)
    "te": ({"sm80": "flash2", "sm90": "cudnn", "sm100": "cudnn", "amd": "ck"},
           ("Transformer Engine DotProductAttention: cuDNN fused attention on Hopper and later, "
           "flash-attn 2 before; its ROCm build's Composable Kernel attention on AMD")),
    # Dao-AILab/flash-attention README (v2.8.3, "AMD ROCm Support"): the ROCm build's default
    # backend is composable_kernel (ck), "an implementation of FlashAttention-2"
    # Transformer Engine's ROCm build runs the same CK FMHA as its fused attention
    # (``AttentionImpl`` ck, priced in the flash2 family: compute.attention.ATTENTION_FAMILY)
    "ck": ({"amd": "ck"}, ("AMD Composable Kernel FMHA: FlashAttention-2 (flash-attention's "
           "ROCm backend)")),
    # vllm/v1/attention/backends/fa_utils.py get_flash_attn_version: vllm_flash_attn FA3 when
    # device_capability.major == 9, else FA2 (on Blackwell later releases pick FA4: not read)
    "vllm": ({"sm80": "flash2", "sm90": "flash3"},
             ("vLLM FLASH_ATTN backend: vllm_flash_attn FA3 on sm90, FA2 on sm80 "
             "(fa_utils.get_flash_attn_version)")),
}
"""Libraries whose attention kernel depends on the GPU generation (``kernel_arch``: sm80, sm90,
sm100, or amd) -> (AttentionImpl by generation, what the library runs). A generation the library
has no kernel for is an error."""

LIBRARY_SYNONYMS = {"transformer_engine": "te", "transformerengine": "te",
                    "composable_kernel": "ck", "tk": "thunderkittens", "cublaslt": "cublas",
                    "hipkittens": None, "flash_infer": "flashinfer"}
"""Other spellings of one library (None: a library that is not this one, left unknown)."""

FORWARD_ONLY = frozenset({"flashinfer", "vllm"})
"""Inference libraries: no attention backward kernel to price."""

NOT_A_KERNEL = {
    "deepep": "DeepEP is an expert-parallel dispatch/combine (all-to-all) library with no expert "
              "GEMM (deepseek-ai/DeepEP README); name the grouped-GEMM library the block ran",
}
"""Names of libraries that do not run the kind of kernel a row prices."""

_FA1_OR_FA2 = ("FlashAttention-1 or -2 (the FA2 paper's figures, which kernels_published.csv "
               "transcribes, label FA1 'FlashAttention'; Dao-AILab/flash-attention@v1.0.9 "
               "setup.py installs FA1 as flash_attn too): write fa1 or fa2")
AMBIGUOUS_ATTENTION = {
    # the FA2 paper's 'FlashAttention Triton' bars time triton.ops.flash_attention, the
    # tutorial's kernel (Dao-AILab/flash-attention@4f285b35 benchmarks/benchmark_causal.py L16,
    # L192-203), not Dao's flash_attn_triton.py
    "triton": "Triton attention kernels differ in kind and speed: Dao's flash_attn_triton.py "
              "(llm-foundry's attn_impl triton, FA1's rate: write flash1) or Triton's "
              "06-fused-attention tutorial (triton.ops.flash_attention, the FA2 paper's "
              "'FlashAttention Triton'; FA2's algorithm, wgmma on Hopper)",
    # llm-foundry's attn_impl 'flash' is whichever flash-attn is installed: 1.0.9 with .[gpu],
    # 2.3.2 with .[gpu-flash2] (mosaicml/llm-foundry@v0.4.0 setup.py L95, L100-101)
    "flash": _FA1_OR_FA2, "flash_attn": _FA1_OR_FA2, "flashattention": _FA1_OR_FA2,
    "flash_attention": _FA1_OR_FA2,
    # torch's attention is F.scaled_dot_product_attention or plain ops, several times apart
    # (the FA2 paper's Fig. 4 on an A100, kernels_published.csv fa2paper-a100-fwdbwd-hd64-nc-*:
    # PyTorch 36-40 TFLOP/s, FlashAttention-2 132-176)
    "torch": "PyTorch attention is scaled_dot_product_attention or plain matmul-softmax-matmul "
             "ops, several times apart: write sdpa or eager",
}
"""Attention library names that stand for kernels of different speed: pricing one is a guess
(a training row may still write ``triton``: llm-foundry's own kernel, an ``AttentionImpl``)."""

GROUPED_IMPL = {
    "cublas": "loop", "te": "multi_stream",
    "cutlass": "cutlass", "torch": "cutlass", "triton": "triton", "liger": "triton",
    "vllm": "triton", "deepgemm": "deepgemm", "loop": "loop", "multi_stream": "multi_stream",
}
"""Kernel library of a grouped-GEMM or MoE-block row -> ``workload.ops.GroupedImpl``: cuBLAS
runs one GEMM per group (cuBLASLt is cuBLAS's matmul API, read as cuBLAS); ``torch._grouped_mm``
is PyTorch's CUTLASS grouped kernel (aten GroupMM.cu); Liger's and vLLM's fused MoE are Triton
kernels; ``loop`` and ``multi_stream`` name the per-group cuBLAS schemes themselves (one GEMM a
group on one stream, or on 4 in turn), as a harness that issues them without a library does."""

GROUPED_IMPL_VIA = {
    # tgale96/grouped_gemm README: "By default, the installed package runs in conservative
    # (cuBLAS) mode: it launches one GEMM kernel per batch element"
    "grouped_gemm": "loop",
    # databricks/megablocks megablocks/layers/arguments.py: mlp_impl = 'sparse' by default,
    # the block-sparse products of stanford-futuredata/stk (Triton kernels over every expert's
    # blocks in one launch)
    "megablocks": "triton",
    # sgl-project/sglang python/sglang/srt/layers/moe/fused_moe_triton/fused_moe.py: the fused
    # MoE Triton kernel (vLLM's, adapted)
    "sglang": "triton",
    # ByteDance-Seed/VeOmni@bfe4b650 veomni/ops/fused_moe/group_gemm.py: the Triton fused MoE
    # runs group_gemm_same_nk with max_M = every routed row (ops/group_gemm/kernel/group_gemm.py)
    "veomni": "triton_max_m",
}
"""Packages whose grouped GEMM is another library's kernel -> that kernel's ``GroupedImpl`` (a
row naming one reports how it was read)."""

GEMM_LIBRARIES = frozenset({"cublas", "cutlass", "deepgemm", "tilelang", "triton", "torch",
                            "vllm", "te", "hipblaslt", "rocblas", "hipblas", "jax", "liger"})
"""Libraries a dense GEMM row may name: priced at the GPU's GEMM rate (its vendor BLAS's
measured maximum), their own promotion of fp8 sums apart (``kernels.FP8_FAST_ACCUM``). Any
other name is an error: a typo or an unknown library is not priced as a guess."""

MEMORY_LIBRARIES = frozenset({"liger", "vllm", "torch", "triton", "cub", "cute", "causal_conv1d"})
"""Libraries of the memory-bound rows whose kernel structure ``kernels.MEMORY_VARIANTS`` reads;
any other name is an error."""

SSD_LIBRARIES = frozenset({"triton"})
"""Libraries of an ``ssd_fwd`` row: mamba_ssm's Triton kernels (``kernels._ssd_forward``)."""

UNITS = {"tflop/s": "TFLOP/s", "tflops": "TFLOP/s", "s": "s", "sec": "s", "ms": "ms",
         "msec": "ms", "us": "us", "\u00b5s": "us", "\u03bcs": "us", "usec": "us"}
"""A kernel row's unit as written, lower case -> the README's."""

_SEPARATORS = re.compile(r"[\s\-_]+")


def word(text: str | None, sep: str = "_") -> str:
    """A vocabulary cell as the tables here spell it: lower case, no surrounding spaces, each
    run of spaces, '-' and '_' as ``sep``."""
    return _SEPARATORS.sub(sep, (text or "").strip().lower())


def library_key(name: str) -> str:
    """A library name as the tables here spell it (``word``), another spelling of one library
    read as its usual one (``LIBRARY_SYNONYMS``)."""
    key = word(name)
    return LIBRARY_SYNONYMS.get(key, key) or key


def kernel_arch(gpu: str) -> str:
    """The generation a library's kernels are chosen by on catalog GPU ``gpu``: sm80, sm90 or
    sm100 (``catalog.defaults.gpu_arch``), amd for an AMD GPU; the catalog's one-line error
    for a GPU it does not know."""
    from trainsim.catalog import gpu as catalog_gpu
    from trainsim.catalog.defaults import gpu_arch

    spec = catalog_gpu(gpu.strip().lower())  # the one-line error for an unknown GPU
    return gpu_arch(spec.name) or spec.vendor


def _opened(library: str, label: str | None, why: str) -> str:
    """A message that opens with the library: named by ``label`` (default its repr; '' for
    the reason alone, where the caller names it)."""
    name = repr(library) if label is None else label
    return f"{name}: {why}" if name else why


def attention_impl(library: str, gpu: str, backward: bool,
                   label: str | None = None) -> tuple[str, str | None]:
    """(``AttentionImpl``, how the library was read or None) for a kernel row's library on
    catalog GPU ``gpu``; a ConfigError naming the known libraries otherwise (``label``: how a
    message that opens with the library names it, ``_opened``)."""
    key = library_key(library)
    if key in ATTENTION_IMPL:
        return ATTENTION_IMPL[key], None
    if key in AMBIGUOUS_ATTENTION:
        raise ConfigError(_opened(library, label, AMBIGUOUS_ATTENTION[key]))
    if key in ATTENTION_BY_ARCH:
        by_arch, what = ATTENTION_BY_ARCH[key]
        if backward and key in FORWARD_ONLY:
            raise ConfigError(f"{library!r} is an inference library with no attention backward "
                              "kernel")
        arch = kernel_arch(gpu)
        impl = by_arch.get(arch)
        if impl is None:
            raise ConfigError(f"no {library!r} attention kernel is known here for "
                              f"{'an AMD' if arch == 'amd' else 'an ' + arch} GPU ({what})")
        return impl, f"{impl} ({what})"
    known = sorted(set(ATTENTION_IMPL) | set(ATTENTION_BY_ARCH))
    raise ConfigError(f"unknown attention implementation {library!r}; known: {', '.join(known)}")


def grouped_impl_of(library: str, label: str | None = None) -> str:
    """The ``GroupedImpl`` of a grouped-GEMM library, or a ConfigError naming the known ones
    (``label`` as for ``attention_impl``)."""
    key = library_key(library)
    if key in NOT_A_KERNEL:
        raise ConfigError(_opened(library, label, NOT_A_KERNEL[key]))
    impl = GROUPED_IMPL.get(key) or GROUPED_IMPL_VIA.get(key)
    if impl is None:
        raise ConfigError(f"unknown grouped-GEMM implementation {library!r}; known: "
                          f"{', '.join(sorted({*GROUPED_IMPL, *GROUPED_IMPL_VIA}))}")
    return impl


def known_library(library: str, known: frozenset[str], what: str) -> None:
    """A ConfigError naming the ``known`` libraries of a ``what`` row unless ``library`` is one."""
    if library_key(library) not in known:
        raise ConfigError(f"unknown {what} implementation {library!r}; known: "
                          f"{', '.join(sorted(known))}")


# ---------------------------------------------------------------------------------------------
# Training rows (training_*.csv)

VALUE_SYNONYMS: dict[str, dict[str, str]] = {
    "moe_dispatcher": {
        # Megatron-core transformer_config.py (core_v0.19.0 L869): the flex dispatcher's
        # moe_flex_dispatcher_backend defaults to "deepep"; HybridEP is its other backend
        "flex": "deepep",
        # Megatron-core moe/README.md (core_v0.11.0 L73, L369): "alltoall_seq" is the original
        # implementation of "alltoall", kept when that was upgraded in place in MCore v0.9
        "alltoall_seq": "alltoall", "all_to_all": "alltoall", "all_gather": "allgather",
    },
    # README: p2p (ring attention), a2a (Ulysses)
    "cp_comm_type": {"ring": "p2p", "ulysses": "a2a", "allgather": "all_gather"},
    "dtype": DTYPE_SYNONYMS, "grad_reduce_dtype": DTYPE_SYNONYMS, "optimizer_dtype": DTYPE_SYNONYMS,
    # Megatron-core transformer_config.py fp8_recipe (core_v0.19.0 L573-577): "'tensorwise'
    # uses per tensor current scaling recipe" (Transformer Engine Float8CurrentScaling)
    "fp8_recipe": {"tensorwise": "current",
                   # Transformer Engine's recipe classes (transformer_engine/common/recipe/
                   # __init__.py: DelayedScaling, Float8CurrentScaling, Float8BlockScaling,
                   # MXFP8BlockScaling) and the words papers write for them
                   "delayed_scaling": "delayed", "delayedscaling": "delayed",
                   "current_scaling": "current", "float8currentscaling": "current",
                   "block": "blockwise", "block_scaling": "blockwise",
                   "blockwise_scaling": "blockwise", "float8blockscaling": "blockwise",
                   "mxfp8blockscaling": "mxfp8", "mx": "mxfp8",
                   "nvfp4blockscaling": "nvfp4", "fp4": "nvfp4"},
    # the 2-matrix or gated 3-matrix MLP the README's two words stand for: GeGLU and ReGLU are
    # gated like SwiGLU (Shazeer 2020, arXiv:2002.05202, eqs. 5-6); tanh GELU and squared ReLU
    # (Nemotron-4, whose presets here read 'gelu': the 2-matrix MLP) are not. Hugging Face's
    # GELU-family names (GPT-2's gelu_new, gelu_fast, quick_gelu, ...) are read as themselves:
    # a 2-matrix MLP whose eager module is that formula (validate.row_settings, ModelConfig.
    # hidden_act)
    "activation": {"geglu": "swiglu", "reglu": "swiglu", "gated_gelu": "swiglu",
                   "gated_silu": "swiglu", "silu_glu": "swiglu", "swi_glu": "swiglu",
                   "gelu_tanh": "gelu_pytorch_tanh", "relu": "gelu",
                   "squared_relu": "gelu", "relu2": "gelu", "relu_squared": "gelu"},
    # Megatron's and NeMo's recompute switches written as other frameworks' words: whole-layer
    # activation checkpointing (Hugging Face gradient_checkpointing, torchtitan
    # activation_checkpoint.mode full, FSDP's checkpoint_wrapper) is Megatron's full
    "recompute": {"no": "none", "off": "none", "false": "none", "0": "none",
                  "disabled": "none", "full_ac": "full", "activation_checkpointing": "full",
                  "gradient_checkpointing": "full", "full_activation_checkpointing": "full",
                  "selective_ac": "selective", "selective_activation_checkpointing": "selective"},
    "memory_kind": {"max_memory_allocated": "allocated", "torch_allocated": "allocated",
                    "max_memory_reserved": "reserved", "torch_reserved": "reserved",
                    "nvidia_smi": "device", "nvml": "device"},
    # the ZeRO stage a sharding scheme is (DeepSpeed ZeRO-N; FSDP FULL_SHARD shards parameters,
    # gradients and optimizer states as ZeRO-3, SHARD_GRAD_OP gradients and states as ZeRO-2:
    # torch/distributed/fsdp/api.py ShardingStrategy; FSDP2 fully_shard is FULL_SHARD's)
    "zero_stage": {"zero_0": "0", "zero0": "0", "ddp": "0", "none": "0", "no": "0",
                   "zero_1": "1", "zero1": "1", "zero_stage_1": "1", "zero_2": "2",
                   "zero2": "2", "zero_stage_2": "2", "shard_grad_op": "2", "zero_3": "3",
                   "zero3": "3", "zero_stage_3": "3", "fsdp": "3", "fsdp1": "3", "fsdp2": "3",
                   "full_shard": "3", "fully_shard": "3", "3_(fsdp)": "3", "3_fsdp": "3"},
}
"""A training column's other spellings -> the value the shared README documents (``attention``:
the kernel libraries' table, ``ATTENTION_IMPL``)."""

_RECOMPUTE_SWITCH = ("a yes/no recompute switch does not say which: write full (whole layers: "
                     "Hugging Face gradient_checkpointing, FSDP activation checkpointing) or "
                     "selective (Megatron's --recompute-activations)")
UNMODELLED = {
    ("cp_comm_type", "a2a+p2p"): "Megatron-core's hierarchical context parallelism (a2a inside "
    "--hierarchical-context-parallel-sizes groups, p2p across) is not modelled; give p2p, a2a "
    "or all_gather",
    **{("recompute", w): _RECOMPUTE_SWITCH for w in ("yes", "true", "on", "1", "enabled")},
    **{("activation", w): "the activation's name does not say whether the MLP is gated: write "
       "swiglu (gated, 3 matrices, as Llama's silu) or gelu (2 matrices)"
       for w in ("silu", "swish")},
    ("zero_stage", "hybrid_shard"): "HSDP (FSDP HYBRID_SHARD) is zero_stage 3 with the "
    "replicas in column dp_replicate: give both",
    ("dtype", "bf16_true"): "pure bf16 (bf16 weights, no fp32 master copy) is not modelled: "
    "dtype bf16 keeps fp32 master weights and optimizer states",
    ("dtype", "fp32"): "fp32/tf32 training is not modelled; give bf16, fp16 or fp8",
    ("dtype", "tf32"): "fp32/tf32 training is not modelled; give bf16, fp16 or fp8",
}
"""Documented framework values with no mechanism here: a one-line error says so."""

LOWER_COLUMNS = ("attention", "moe_dispatcher", "cp_comm_type", "recompute", "dtype",
                 "fp8_recipe", "grad_reduce_dtype", "optimizer_dtype", "memory_kind", "activation", "gpu",
                 "framework", "sequence_parallel", "distributed_optimizer", "tied_embeddings",
                 "zero_stage")
"""Training columns holding a word from a fixed vocabulary, read without regard to case."""
SWITCH_COLUMNS = ("sequence_parallel", "distributed_optimizer", "tied_embeddings")
"""Of those, the true/false ones (``config._build.switch``), read lower-case only."""


_MAJOR_ONLY = re.compile(r"^v?(\d+)\.[xX*]$")
"""A version written as its major release line ("2.x", "0.X"): read as that line's first."""


def normalized_training_row(row: dict[str, str], fallback: int = 0
                           ) -> tuple[dict[str, str], dict[str, str]]:
    """(``row`` with its vocabulary cells in the README's spelling, {column: 'as written ->
    as read'} for each cell read as a synonym). Case and surrounding spaces never matter;
    ``options`` tokens are read lower-case, '-' as '_', ',' as a separator; an attention
    library is the kernel it runs on the row's GPU (``attention_impl``, backward included)."""
    from trainsim.validate.written import written_numbers

    out, read = written_numbers(row)
    out.pop(FALLBACK_MARK, None)  # written by ``_fallback`` alone, never read from a file
    stranger = None
    for col in LOWER_COLUMNS:
        text = (row.get(col) or "").strip()
        if not text:
            continue
        # a switch is a word or a number: '-' kept ('-1' shown as '_1' in its error before)
        value = text.lower() if col in ("gpu", *SWITCH_COLUMNS) else framework_key(text) \
            if col == "framework" else word(text)
        if (col, value) in UNMODELLED:
            raise ConfigError(f"{col}={text!r}: {UNMODELLED[(col, value)]}")
        if col == "framework" and text.isprintable() and unprofiled(value):
            # no profile: mechanisms chosen from the row's own cells after this loop
            # (``_fallback``); the version belongs to that framework
            stranger = (text, value)
            continue
        if col == "framework" and value != word(text, "-"):  # an alias, a vendor dropped
            read[col] = f"{text} -> {value}"
            versioned = written_version(word(text, "-"))
            if versioned and not (row.get("framework_version") or "").strip():
                # the release written after the name is the row's version
                out["framework_version"] = versioned[1]
                read[col] += f", framework_version {versioned[1]}"
        if col == "gpu":
            value = _gpu_name(text, read)
        if col == "dtype" and value in PRECISIONS:  # a precision recipe's name: dtype, recipe
            value = _precision(text, value, row, out, read)
            continue
        synonym = _training_attention(value, row) if col == "attention" else \
            VALUE_SYNONYMS.get(col, {}).get(value)
        if synonym is not None and synonym != value:
            read[col] = f"{text} -> {synonym}"
            value = synonym
        elif col == "zero_stage":
            continue  # a number, checked as written ('-1' named as '-1')
        out[col] = value
    if stranger is not None:
        _fallback(*stranger, out, read, fallback)
    version = (out.get("framework_version") or "").strip()
    if (major := _MAJOR_ONLY.match(version)) and out.get("framework"):
        out["framework_version"] = major.group(1)
        read["framework_version"] = f"{version} -> {major.group(1)} (the line's first release)"
        version = major.group(1)
    if version and out.get("framework"):  # a release read as its date, a date as a release, ...
        note = version_reading(out["framework"], version)
        if note:
            read["framework_version"] = f"{read.get('framework_version', version)}; {note}" \
                if "framework_version" in read else f"{version} -> {note}"
    options = row.get("options") or ""
    if options.strip():
        tokens = [word(t) for t in re.split(r"[;,]", options)]
        out["options"] = ";".join(t for t in tokens if t)
    return out, read


def _fallback(text: str, key: str, out: dict[str, str], read: dict[str, str],
              attempt: int = 0) -> None:
    """A row on framework ``key`` (written ``text``) with no profile here is predicted with the
    mechanisms of the profile its own cells select (``catalog.fallback.fallback_framework``:
    its ZeRO stage and attention, already read in ``out``, HSDP replicas, option
    ``enable_gqa``) and its date (a ``framework_version`` written as a date: the stacks that
    existed then, each at its entry of that date), else at that profile's newest entry: a
    release is its own framework's.
    Its empty cells are then tuned as that profile's (README "Unknown cells"); the note says
    which mechanisms and why. ``attempt`` k > 0: the k-th of ``catalog.fallback.fallback_order``
    instead, the profiles before it having refused the row."""
    from trainsim.catalog.fallback import fallback_choice, fallback_order, run_date

    options = {word(t) for t in re.split(r"[;,]", out.get("options") or "")}
    sdpa = out.get("attention") == "sdpa" or "enable_gqa" in options
    date = run_date(out.get("framework_version"))  # when the run was, if it says
    name, version, why = fallback_choice(out.get("zero_stage"), out.get("dp_replicate"), sdpa,
                                         date, out.get("attention") or "",
                                         fp8=out.get("dtype") == "fp8",
                                         compiled="compile" in options,
                                         distributed_optimizer=out.get("distributed_optimizer"))
    if attempt:
        order = fallback_order(first := name, date)
        name, version = order[attempt]
        also = ", ".join(p for p, _ in order[1:attempt])
        why = f"{first}, which its cells select ({why}), refuses it" + \
            (f", and so do {also}" if also else "") + f": {name}'s mechanisms"
    out["framework"], out["framework_version"] = name, version
    out[FALLBACK_MARK] = key  # its empty cells are the authors' choices (row_unknowns)
    at = f"at its entry of {date}" if version and version == date else \
        f"at its {version} entry" if version else "at its newest entry"
    read["framework"] = f"{text} -> {name} (no profile of {key} here; {why}, {at}, " + \
        ("the row's version read as the run's date)" if date else "the row's version not read)")


PRECISIONS: dict[str, tuple[str, str | None]] = {
    # PyTorch Lightning / NeMo 2 precision plugins ("bf16-mixed", "16-mixed"), MosaicML
    # Composer's (llm-foundry) "amp_bf16", "amp_fp8": mixed precision with fp32 master weights,
    # what the README's bf16 and fp16 are
    "bf16_mixed": ("bf16", None), "fp16_mixed": ("fp16", None), "16_mixed": ("fp16", None),
    "amp_bf16": ("bf16", None), "amp_fp16": ("fp16", None), "amp_fp8": ("fp8", None),
    # Transformer Engine's Format.HYBRID (E4M3 forward, E5M2 gradients; NeMo 1.x ``fp8_hybrid``):
    # fp8 GEMMs, the recipe not said
    "fp8_hybrid": ("fp8", None), "fp8_e4m3": ("fp8", None),
    "mxfp8": ("fp8", "mxfp8"),
    # Megatron-Bridge / NeMo 2 mixed-precision recipe names (Megatron-Bridge v0.2.0
    # src/megatron/bridge/training/mixed_precision.py; NeMo v2.3.0 recipes/precision/
    # mixed_precision.py: bf16_with_fp8_mixed is delayed scaling, "subchannel" the 128x128
    # blockwise recipe) and the performance scripts' --compute_dtype words (fp8_ds, fp8_cs,
    # fp8_mx, fp8_sc)
    "bf16_with_fp8_mixed": ("fp8", "delayed"),
    "bf16_with_fp8_delayed_scaling_mixed": ("fp8", "delayed"),
    "bf16_with_fp8_current_scaling_mixed": ("fp8", "current"),
    "bf16_with_mxfp8_mixed": ("fp8", "mxfp8"),
    "bf16_with_fp8_subchannel_scaling_mixed": ("fp8", "blockwise"),
    "fp8_ds": ("fp8", "delayed"), "fp8_cs": ("fp8", "current"), "fp8_mx": ("fp8", "mxfp8"),
    "fp8_sc": ("fp8", "blockwise"),
    # NVFP4: Transformer Engine runs it as one more recipe of fp8_autocast (Megatron-LM@d98e8a64
    # megatron/core/fp4_utils.py L219-290, ``--fp4-format e2m1 --fp4-recipe nvfp4``);
    # Megatron-Bridge's ``bf16_with_nvfp4_mixed`` and --compute_dtype ``nvfp4``, the tables'
    # "NVFP4", torchtitan's NVFP4 converter
    "nvfp4": ("fp8", "nvfp4"), "fp4": ("fp8", "nvfp4"), "bf16_with_nvfp4_mixed": ("fp8", "nvfp4"),
    "nvfp4_mixed": ("fp8", "nvfp4"),
    # "fp8 (delayed)", "FP8 (current scaling)": the recipe written beside the dtype
    **{f"fp8_({w})": ("fp8", r) for w, r in (
        ("delayed", "delayed"), ("delayed_scaling", "delayed"), ("current", "current"),
        ("current_scaling", "current"), ("tensorwise", "current"), ("blockwise", "blockwise"),
        ("block_scaling", "blockwise"), ("mxfp8", "mxfp8"), ("hybrid", None))},
}
"""A dtype cell that names a precision recipe -> (the README's dtype, its fp8 recipe or None)."""


def _precision(text: str, value: str, row: dict[str, str], out: dict[str, str],
               read: dict[str, str]) -> str:
    """Read the precision recipe ``value`` (``PRECISIONS``) of dtype cell ``text`` into
    ``out``'s dtype and fp8_recipe; a ConfigError where the row's own fp8_recipe says another."""
    dtype, recipe = PRECISIONS[value]
    out["dtype"] = dtype
    read["dtype"] = f"{text} -> {dtype}" + (f", fp8_recipe {recipe}" if recipe else "")
    if recipe is None:
        return dtype
    stated = word(row.get("fp8_recipe"))
    stated = VALUE_SYNONYMS["fp8_recipe"].get(stated, stated)
    if stated and stated != recipe:
        raise ConfigError(f"dtype={text!r} is fp8 with the {recipe} recipe but column "
                          f"fp8_recipe says {row.get('fp8_recipe', '').strip()!r}")
    out["fp8_recipe"] = recipe
    return dtype


def _gpu_name(text: str, read: dict[str, str]) -> str:
    """The catalog name of GPU cell ``text`` (its reading said in ``read`` where the text is
    another spelling: "H100 SXM5 80GB" -> h100-sxm-80gb); the text lower-cased where it names
    none, for the config's one-line error."""
    from trainsim.catalog import gpu
    from trainsim.errors import TrainsimError

    try:
        name = gpu(text).name
    except TrainsimError:
        return text.lower()
    if name != text.lower():
        read["gpu"] = f"{text} -> {name}"
    return name


def _training_attention(value: str, row: dict[str, str]) -> str | None:
    """The ``AttentionImpl`` a training row's attention library runs on its GPU (None: the
    simulator's own name, or a word no table here knows, left to the config's check)."""
    if value == CONFIG_FLASH:
        return "flash2"  # as the config reads it, and said in the row's read_as
    if value in ATTENTION_IMPLS:
        return None
    key = library_key(value)
    if not any(key in table for table in (ATTENTION_IMPL, AMBIGUOUS_ATTENTION,
                                          ATTENTION_BY_ARCH)):
        return None
    try:
        # the name once, not twice: the message names the column, not the library again
        return attention_impl(value, row.get("gpu") or "", backward=True, label="")[0]
    except ConfigError as exc:
        raise ConfigError(f"attention={row.get('attention')!r}: {exc}") from None


def read_as(read: dict[str, str]) -> dict[str, Any]:
    """What a result reports of the cells read as synonyms (empty where none were), each
    character that is not printable written as its escape (``errors.escaped``)."""
    from trainsim.errors import escaped

    return {"read_as": {k: escaped(v) for k, v in read.items()}} if read else {}
