"""The checks of ``config.run.RunConfig`` that are whole functions of its parts: those before
the first that reads the micro-batch size or the GPU count (``RunConfig._field_checks``), and
Megatron-core's check of the interleaved schedule's micro-batch groups (from
``RunConfig._scaled_checks``). Split from ``config/run.py`` (split63), the code unchanged."""

from __future__ import annotations

from typing import get_args, get_type_hints

from trainsim.config.cluster import ClusterConfig
from trainsim.config.gpu_rules import attention_problem, dtype_problem
from trainsim.config.graph_scope import graph_scope_problem
from trainsim.config.hybrid import check_hybrid_run
from trainsim.config.model import ModelConfig
from trainsim.config.parallel import ParallelConfig
from trainsim.config.training import (
    AMD_ONLY_ATTENTION,
    NVIDIA_ONLY_ATTENTION,
    SINK_ATTENTION,
    TrainingConfig,
)
from trainsim.config.validity import (
    dropout_attention_problem,
    head_dim_problem,
    kv_heads_fit,
    kv_heads_problem,
    te_ring_window_problem,
)
from trainsim.errors import ConfigError

_ONE_VENDOR = NVIDIA_ONLY_ATTENTION | AMD_ONLY_ATTENTION
"""Attention kernels one vendor's GPUs run (the others' refused in ``RunConfig``)."""


def field_checks(m: ModelConfig, p: ParallelConfig, t: TrainingConfig, c: ClusterConfig) -> None:
    """``RunConfig._field_checks`` past its type checks: the checks before the first that reads
    the micro-batch size or the GPU count, in their order (each reads the model, the parallel
    config, the training but for its micro-batch size and the cluster's GPU alone)."""
    if m.hybrid_layer_pattern is not None:  # config.hybrid: what the step prices
        check_hybrid_run(m, p, t)
    if m.num_attention_heads % p.tp:
        raise ConfigError(
            f"parallel.tp={p.tp} does not divide model.num_attention_heads="
            f"{m.num_attention_heads}; choose a tp that divides it")
    if not kv_heads_fit(m.kv_heads, p.tp, p.kv_heads_split):
        # config.validity.kv_heads_fit: Megatron-core splits the query groups
        where = f"{t.framework} {t.framework_version or ''}".strip() if t.framework \
            else "this run"
        raise ConfigError("parallel." + str(kv_heads_problem(
            p.tp, m.kv_heads, p.kv_heads_split, where, t.framework)))
    if m.attention_chunk_size is not None and t.seq_length > m.attention_chunk_size:
        raise ConfigError(f"training.seq_length={t.seq_length} exceeds model."
                          f"attention_chunk_size={m.attention_chunk_size}: chunked "
                          "attention (Llama 4) over more than one chunk is not modelled; "
                          "use a seq_length up to the chunk (one chunk: full causal "
                          "attention), or attention_chunk_size=null for full attention")
    if t.cuda_graph_scope:
        problem = graph_scope_problem(
            t.cuda_graph_scope, m.is_moe,
            any(not m.is_moe_layer(i) for i in range(m.num_layers)),
            m.moe_padded_to_capacity, capacity_factor=m.moe_capacity_factor,
            dispatcher=p.moe_token_dispatcher_type, recompute=p.recompute,
            recompute_modules=p.recompute_modules,
            moe_overlap_ep_comm=p.moe_overlap_ep_comm)
        if problem:
            raise ConfigError(problem)
    if "mla_up_proj" in (p.recompute_modules or ()) and not m.is_mla:
        # Megatron-core transformer_config.py __post_init__ (since MR 2207, core_v0.13.0):
        # "mla_up_proj in recompute_modules is only supported with multi_latent_attention"
        raise ConfigError(f"parallel.recompute_modules mla_up_proj recomputes multi-latent "
                          f"attention's up-projections, but model {m.name} has none (no "
                          "model.kv_lora_rank); Megatron-core refuses it: drop mla_up_proj")
    problem = te_ring_window_problem(p.cp, p.cp_comm_type, t.attention, p.cp_te_ring,
                                     m.sliding_window)
    if problem:
        raise ConfigError(problem)
    if t.attention == "flash1" and m.qk_dim // m.num_attention_heads > 128:
        # flash-attention v1.0.9 fmha_api.cpp: TORCH_CHECK(... head_size <= 128)
        raise ConfigError(f"training.attention=flash1 runs head dims up to 128, not "
                          f"{m.qk_dim // m.num_attention_heads}; use flash2 or later")
    problem = head_dim_problem(t.attention, m.qk_dim // m.num_attention_heads,
                               m.v_dim // m.num_attention_heads, c.gpu.sm_arch)
    if problem:  # config.validity: FUSED_MAX_HEAD_DIM, flash4's and ck's heads
        raise ConfigError(problem)
    problem = dropout_attention_problem(t.attention, m.attention_dropout)
    if problem:  # FlashAttention-3 and -4 take no dropout
        raise ConfigError(problem)
    # config.training.NVIDIA_ONLY_ATTENTION (cuDNN, FlashAttention-3/4) and
    # AMD_ONLY_ATTENTION (ROCm Transformer Engine's CK): the other vendor's are refused,
    # naming only kernels this GPU runs
    only = {"NVIDIA": NVIDIA_ONLY_ATTENTION, "AMD": AMD_ONLY_ATTENTION}
    foreign = {k for vendor, kernels in only.items() if vendor.lower() != c.gpu.vendor
               for k in kernels} if t.attention in _ONE_VENDOR else ()
    if t.attention in foreign:
        vendor = next(v for v, kernels in only.items() if t.attention in kernels)
        what = (" (Transformer Engine's ROCm Composable Kernel attention)"
                if t.attention in AMD_ONLY_ATTENTION else "")
        runs = sorted(k for k in set(get_args(get_type_hints(TrainingConfig)["attention"]))
                      - foreign - {"flash"} if attention_problem(k, c.gpu) is None)
        raise ConfigError(f"training.attention={t.attention}{what} runs on {vendor} GPUs "
                          f"only, not cluster.gpu {c.gpu.name} ({c.gpu.vendor}); use one of "
                          f"{', '.join(runs)}")
    if m.softmax_type != "vanilla" and t.attention not in SINK_ATTENTION:
        # those this GPU's vendor runs (a config from the catalog was refused before, naming
        # only its framework's: catalog.defaults.sink_attention)
        usable = SINK_ATTENTION if c.gpu.vendor == "nvidia" else \
            SINK_ATTENTION - NVIDIA_ONLY_ATTENTION
        raise ConfigError(f"training.attention={t.attention} cannot add model.softmax_type="
                          f"{m.softmax_type}'s sink to the softmax; use one of "
                          f"{', '.join(sorted(usable))}")
    if m.vocab_size < p.tp:
        raise ConfigError(f"model.vocab_size={m.vocab_size} is smaller than parallel.tp="
                          f"{p.tp}: every tensor-parallel rank holds a slice of the vocabulary")
    if m.ffn_size % p.tp:
        raise ConfigError(f"parallel.tp={p.tp} does not divide model.ffn_hidden_size={m.ffn_size}")
    shared = m.moe_shared_expert_intermediate_size
    if m.is_moe and shared and shared % p.tp:
        # Megatron-core moe/shared_experts.py: SharedExpertMLP is an MLP over the tp group
        raise ConfigError(f"parallel.tp={p.tp} does not divide model."
                          f"moe_shared_expert_intermediate_size={shared}")
    for name in ("moe_deepep_num_sms", "moe_hybridep_num_sms"):
        sms = getattr(p, name)
        if sms is not None and sms > c.gpu.num_sms:
            raise ConfigError(f"parallel.{name}={sms} is more than the {c.gpu.num_sms} SMs "
                              f"of cluster.gpu {c.gpu.name}")
        if sms == c.gpu.num_sms and p.fp8_gemm_grid_excludes_exchange and \
                name == f"moe_{p.moe_token_dispatcher_type}_num_sms":
            # DeepGEMM's grid is the SMs the exchange leaves (gemm_overlap.fixed_grid_scale)
            raise ConfigError(f"parallel.{name}={sms} leaves no SM of cluster.gpu "
                              f"{c.gpu.name} for the fp8 GEMMs' grid "
                              "(parallel.fp8_gemm_grid_excludes_exchange=true)")
    if t.seq_length % (2 * p.cp) and p.cp > 1:  # before SP's check: it divides by cp
        raise ConfigError(f"training.seq_length={t.seq_length} must be divisible by "
                          f"2*cp={2 * p.cp} (load-balanced causal sharding)")
    if p.sequence_parallel and p.tp > 1 and (t.seq_length // p.cp) % p.tp:
        # Megatron-core tensor_parallel/mappings.py _split_along_first_dim asserts it
        raise ConfigError(f"parallel.sequence_parallel splits each sequence's "
                          f"seq_length/cp={t.seq_length // p.cp} tokens over tp={p.tp}; "
                          "training.seq_length must be divisible by tp*cp")
    if t.dtype == "fp8" and "fp8" not in c.gpu.peak_flops:
        raise ConfigError(f"training.dtype=fp8 needs fp8 tensor cores; cluster.gpu "
                          f"{c.gpu.name} has none (peaks: {', '.join(c.gpu.peak_flops)}); "
                          "use bf16 or a GPU with fp8 matrix units (NVIDIA Ada, Hopper "
                          "or later, AMD MI300 or later)")
    per_stage = m.num_layers // p.pp
    for name in ("num_layers_at_start_in_bf16", "num_layers_at_end_in_bf16"):
        if t.dtype == "fp8" and getattr(t, name) > per_stage:
            # Megatron-LM@d98e8a64 transformer_config.py L1533-1556
            raise ConfigError(f"training.{name}={getattr(t, name)} must be between 0 and "
                              f"the layers per pipeline stage ({m.num_layers} // pp {p.pp} "
                              f"= {per_stage}), as Megatron-core checks")
    problem = dtype_problem(t.dtype, t.fp8_recipe, c.gpu) or \
        attention_problem(t.attention, c.gpu)
    if problem:  # config.gpu_rules: bf16 before Ampere, fused attention kernels by arch
        raise ConfigError(problem)
    arch = c.gpu.sm_arch or 100
    if t.dtype == "fp8" and t.fp8_recipe == "mxfp8" and not 100 <= arch < 120:
        # Transformer Engine check_mxfp8_support (v2.6 transformer_engine/pytorch/fp8.py;
        # HEAD quantization.py _compute_mxfp8_support): "Device compute capability 10.0 or
        # higher required for MXFP8 execution", and on 12.0 and later "MXFP8 (for all gemm
        # layouts) is not supported on 12.0+ architectures yet" (NVIDIA GPUs; another
        # vendor's is not checked)
        raise ConfigError(f"training.fp8_recipe=mxfp8 needs compute capability 10.x "
                          f"(Transformer Engine refuses below 10.0 and from 12.0); "
                          f"cluster.gpu {c.gpu.name} is {arch / 10:.1f}; use delayed, "
                          "current or blockwise")
    if t.dtype == "fp8" and t.fp8_recipe == "mxfp8" and c.gpu.sm_arch is None \
            and not c.gpu.block_scaled_mma:
        # another vendor's MX formats come with its fp4 generation (GPUSpec.block_scaled_mma):
        # AMD's CDNA 4 (gfx950, MI350X / MI355X) added them, CDNA 3 (MI300X, MI325X) has
        # fp8 matrix cores only (AMD Primus-Turbo's MXFP8 quantize, 2026: "MXFP8 is only
        # supported on gfx950+")
        raise ConfigError(f"training.fp8_recipe=mxfp8 needs MX-format matrix instructions, "
                          f"which cluster.gpu {c.gpu.name} lacks (AMD's come with CDNA 4, "
                          "MI350X / MI355X); use delayed, current or blockwise")


def check_microbatch_group(p: ParallelConfig, m: int) -> None:
    """Megatron-core's checks of the interleaved schedule's group size N (schedules.py
    ``forward_backward_pipelining_with_interleaving``, core_v0.10.0-core_v0.15.0); the
    ``flexible`` rule also runs m < pp micro-batches as one group; without N and a rule,
    m % pp == 0 as before 0.10."""
    n = p.microbatch_group_size_per_vp_stage
    where = "parallel.microbatch_group_size_per_vp_stage"
    if p.microbatch_group_rule == "flexible" and m < p.pp:
        if n is not None and n != m:
            raise ConfigError(f"{where}={n}: with fewer micro-batches ({m}) than pp={p.pp} "
                              f"they run as one group, N = {m}")
        return
    if n is None and p.microbatch_group_rule is None:
        if m % p.pp:
            raise ConfigError(
                f"interleaved 1F1B needs the number of micro-batches ({m}) to be a multiple "
                f"of pipeline_model_parallel_size={p.pp} (or set {where}, Megatron-core "
                ">= 0.10)")
        return
    if n is None and m < p.pp:  # the default N = pp, a field the user never named (edge45)
        raise ConfigError(f"interleaved 1F1B (parallel.vpp={p.vpp}) needs at least pp={p.pp} "
                          f"micro-batches a step, not {m} (training.global_batch_size / "
                          "(micro_batch_size*dp)): Megatron-core's group of pp micro-batches "
                          "must fit in them; raise global_batch_size or set vpp=1")
    n = n or p.pp
    if not p.pp <= n <= m:
        raise ConfigError(f"{where}={n} must lie in [pp={p.pp}, micro-batches={m}] "
                          "(Megatron-core schedules.py)")
    if 0 < m % n < p.pp:
        raise ConfigError(f"{where}={n} leaves a last group of {m % n} micro-batches, fewer "
                          f"than pp={p.pp}: Megatron-core needs m % N = 0 or >= pp")
