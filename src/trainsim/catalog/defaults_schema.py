"""The validator of every ``defaults`` key of a framework profile: the settings a framework
applies where a run states none (``catalog.defaults`` applies them). Importable from
``catalog.framework_schema`` too, beside the ``features`` keys' validators."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, get_args, get_type_hints

from trainsim.catalog.schema_checks import (
    ATTENTION,
    FP8_RECIPES,
    GROUPED_GEMM,
    MOE_DISPATCHERS,
    MOE_EXPERTS,
    TP_BACKWARD_ALLREDUCE,
    _bool,
    _bool_by_recipe,
    _by_arch_of,
    _by_stage,
    _enum,
    _grad_reduce,
    _int,
    _nullable,
    _option_list,
    _prob,
    _recipe_options,
    _str,
    _zero_engines,
)
from trainsim.config.model import ModelConfig
from trainsim.config.parallel import (
    DATA_PARALLEL_IMPLS,
    DP_BUCKETS,
    TP_OVERLAP_METHODS,
    ZERO3_GATHER,
)

POSITION_FAMILIES = get_args(get_type_hints(ModelConfig)["position_embedding"])
"""The model families a profile's dropout mapping is keyed by: ``ModelConfig``'s position
embeddings (``learned``, ``rope``, ``alibi``, ``none``)."""


def _dropout(v: Any) -> str | None:
    """A dropout probability below 1 (``ModelConfig`` refuses 1), or a mapping {position
    family: such a probability, or null for the model's own}."""
    if not isinstance(v, dict):
        problem = _prob(v)
        return problem or (None if v < 1 else "expected a probability below 1")
    for k, x in v.items():
        if k not in POSITION_FAMILIES:
            return f"key {k!r} is not a position-embedding family {list(POSITION_FAMILIES)}"
        problem = None if x is None else _dropout(x)
        if problem:
            return f"{k}: {problem}"
    return None


DEFAULTS: dict[str, Callable[[Any], str | None]] = {
    "attention": _nullable(_enum(ATTENTION)),
    "attention_by_arch": _nullable(_by_arch_of(ATTENTION, "attention")),  # overrides ``attention``
    "sdpa_by_arch": _nullable(_by_arch_of(ATTENTION, "attention")),  # torch SDPA's kernel
    "modules": _nullable(_enum(("fused", "eager"))),  # norms, activations, RoPE, loss
    # vocab-parallel CE of fused modules (training.cross_entropy): fused, unfused, te or
    # flash_attn
    "cross_entropy": _nullable(_enum(("fused", "unfused", "te", "flash_attn"))),
    "norm": _nullable(_enum(("fused", "two_pass", "scalar_two_pass"))),  # training.norm
    "grad_reduce_dtype": _nullable(_grad_reduce),
    "fp8_recipe": _nullable(_enum(FP8_RECIPES)),
    "moe_dispatcher": _nullable(_enum(MOE_DISPATCHERS)),
    "moe_router_dtype": _nullable(_enum(("fp32", "fp64"))),  # null: the run's 16-bit dtype
    "moe_hybridep_num_sms": _nullable(_int),  # null: Megatron-core's default (EXCHANGE_SMS)
    # parallel.delay_wgrad_compute where a run leaves it out: what the framework's recipes set
    # with Megatron-core's expert-parallel overlap (read by ep_pairs); null: off, Megatron-core's
    # own default
    "delay_wgrad_compute": _nullable(_bool),
    "account_for_embedding_in_pipeline_split": _nullable(_bool),
    "account_for_loss_in_pipeline_split": _nullable(_bool),
    "pipeline_partition_method": _nullable(_str),  # DeepSpeed PipelineModule partition_method
    "tp_backward_allreduce": _nullable(_enum(TP_BACKWARD_ALLREDUCE)),
    "ddp_bucket_size": _nullable(_int),  # parameters per data-parallel bucket
    "dp_max_ctas": _nullable(_int),  # NCCL maxCTAs of the dp / dp_cp communicators
    # which chunks are bucketed (ParallelConfig), or that by ZeRO stage {"0": ..., "1": ...}
    # (catalog.defaults.apply_framework picks the run's)
    "dp_buckets": _nullable(_by_stage(_enum(DP_BUCKETS))),
    "data_parallel_impl": _nullable(_enum(DATA_PARALLEL_IMPLS)),  # model-state memory layout
    "zero_stage": _nullable(_int),  # the engine's own sharding where a run states none
    # the engine the framework runs a stated ZeRO stage with where data_parallel_impl's does
    # not run it (a plain PyTorch loop: FSDP for 2 and 3; catalog.defaults.zero_engine)
    "zero_stage_engines": _nullable(_zero_engines),
    "expandable_segments": _nullable(_bool),  # PYTORCH_CUDA_ALLOC_CONF expandable_segments:True
    # matmul weights stored and gathered in fp8: a flag, or one per fp8 recipe
    "fp8_param_gather": _nullable(_bool_by_recipe),
    "overlap_grad_reduce": _nullable(_bool),
    "zero1_grad_reduce": _nullable(_enum(("reduce_scatter", "all_reduce"))),
    # ZeRO-1/2 parameters after the step: all-gathered, or broadcast by each owner rank
    "zero1_param_sync": _nullable(_enum(("all_gather", "broadcast"))),
    "zero3_grad_reduce": _nullable(_enum(("reduce_scatter", "all_reduce"))),  # DeepSpeed < 0.6
    "zero3_gather": _nullable(_enum(ZERO3_GATHER)),
    "tp_comm_overlap_method": _nullable(_enum(TP_OVERLAP_METHODS)),
    "zero3_prefetch": _nullable(_int),
    "cuda_graphs": _nullable(_bool),
    # the model's dropouts the framework sets: for every model, or by position-embedding
    # family (catalog.defaults.DROPOUTS)
    "attention_dropout": _nullable(_dropout),
    "hidden_dropout": _nullable(_dropout),
    # how the experts' GEMMs run (``workload.ops.GroupedImpl``): a mechanism, not a speed
    "grouped_gemm": _nullable(_enum(GROUPED_GEMM)),
    # overrides ``grouped_gemm`` on these GPUs (keys as ``attention_by_arch``'s)
    "grouped_gemm_by_arch": _nullable(_by_arch_of(GROUPED_GEMM, "grouped GEMM kernel")),
    # the framework's own MoE layer, op by op (``workload.moe_titan``); null: Megatron-core's
    "moe_experts": _nullable(_enum(MOE_EXPERTS)),
    # what the framework's performance recipes switch on for expert-parallel MoE runs, by the
    # run's NVLink domain (``NVLINK_SCOPES``) and fp8 recipe (or dtype): the run options where
    # a run states none (mechanisms only)
    "moe_recipe_options": _nullable(_recipe_options),
    # how context parallelism exchanges K/V where the run does not say (parallel.cp_comm_type):
    # torchtitan's rotate method defaults to all-gather, Megatron-core's to p2p
    "cp_comm_type": _nullable(_enum(("p2p", "a2a", "all_gather"))),
    # options the framework itself switches on for every run that states none, each where its
    # own condition holds (pp_overlap: interleaved pipelines only; dp_overlap: dp > 1), and
    # options it leaves to each recipe, which the tuner tries for a run that states none
    "run_options": _nullable(_option_list),
    "tuned_options": _nullable(_option_list),
    # micro-batches per step where the user sets none: "pp" = the pipeline degree (torchtitan's
    # pipeline_parallel_microbatches default before 2025-01)
    "pipeline_microbatches": _nullable(_enum(("pp",))),
    # model chunks per rank of a looped (interleaved) schedule whose split the user did not
    # give (torchtitan's generated split points)
    "pipeline_stages_per_rank": _nullable(_int),
}
