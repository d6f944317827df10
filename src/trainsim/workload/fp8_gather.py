"""Which parameters a run all-gathers in fp8 (one byte an element) and at what mean width: the
one home of the rule that FSDP's unit gathers (``workload.sharding.fsdp_unit_gathers``) and the
distributed optimizer's parameter gathers (``param_gather_width``: the simulator's task graph and
the search's bounds, ``search.layout_costs``) both read."""

from __future__ import annotations

from trainsim.config import RunConfig
from trainsim.workload.ops import ACT_BYTES as ACT

FP8_GATHER_MIN_ELEMENTS = 16
"""A block's tensor of at least this many times ``hidden_size`` elements is a matmul weight
(the smallest, a K or V projection, has ``hidden_size * head_dim``); norms and biases have a
few ``hidden_size`` at most and stay 16-bit. FSDP's per-unit gathers sort each tensor so; the
distributed optimizer's bucket width (``param_gather_width``) takes a stage's whole block
parameters as fp8 (``memory.params.stage_layer_params``: norms, a 1e-4 share, and a router
counted in), from which tensors it does not sort."""


def fp8_weights_gathered(cfg: RunConfig) -> bool:
    """Whether the run keeps its blocks' matmul weights in fp8 and all-gathers them at one byte
    (fp8 GEMMs and ``training.fp8_param_gather``): the one switch FSDP's unit gathers and the
    distributed optimizer's parameter gathers both read (the latter also needs a uint8 buffer,
    ``FP8_BUFFER_RECIPES``)."""
    return cfg.training.dtype == "fp8" and cfg.training.fp8_param_gather


FP8_BUFFER_RECIPES = frozenset({"delayed", "current", "blockwise"})
"""fp8 recipes whose weights Megatron-core's distributed optimizer gathers at one byte each.

With ``--fp8-param-gather`` the matmul weights are Transformer Engine quantized tensors; DDP
keeps them in a parameter buffer of their own, ``torch.uint8`` ("data is stored in the form of a
torch uint8 tensor within the Float8Tensor's '.data' attribute", Megatron-LM core_v0.14.0
megatron/core/distributed/distributed_data_parallel.py L226-L233; core_v0.8.0 the same), and
``_ParamAndGradBucketGroup.start_param_sync`` all-gathers each bucket's ``param_data``: one
byte per element (``is_float8tensor``: TE 1.x ``Float8Tensor``, TE 2.x any
``QuantizedTensor``, so per-tensor and blockwise scaling alike; fp8_utils.py L82-L90). MXFP8
weights are the exception: under the distributed optimizer their bucket's ``param_data`` is a
view of the gradient buffer in bf16 (param_and_grad_buffer.py L684-L697, "Create a shared
buffer for param AG and grad RS"), two bytes per element. NeMo's Apex-based distributed Adam
(the MLPerf v4.x NeMo code) does the same for its fp8 parameters (NVIDIA/NeMo
nemo/core/optim/distributed_adam.py ``MegatronDistributedFusedAdam.init_params``:
``param_sync_dtype=torch.uint8``; ``_param_copy_fragments``: "Expected FP8 params to perform
param sync in UINT8"). Norms, biases, the embedding and the output layer are not quantized and
stay in the 16-bit buffer."""


def param_gather_width(cfg: RunConfig, params: float, fp8_params: float) -> float:
    """Mean bytes per element of the distributed optimizer's parameter all-gather over
    ``params`` elements of which ``fp8_params`` are matmul weights (``FP8_BUFFER_RECIPES``):
    16-bit unless the run keeps its weights in fp8 (``training.fp8_param_gather``)."""
    if not fp8_weights_gathered(cfg) or cfg.training.fp8_recipe not in FP8_BUFFER_RECIPES \
            or params <= 0:
        return float(ACT)
    fp8 = min(max(fp8_params, 0.0), params)
    return (fp8 + (params - fp8) * ACT) / params


AMAX_BYTES = 4
"""One fp32 amax per quantized weight tensor (``packed_amaxes``, ``torch.float32``)."""

AMAX_PER_TENSOR_RECIPES = frozenset({"delayed", "current"})
"""Recipes with one amax per weight tensor (per-tensor delayed and current scaling)."""


def amax_all_reduce_bytes(cfg: RunConfig, layers: int) -> tuple[float, float]:
    """Bytes of the amax all-reduce that Megatron-core's distributed optimizer runs after every
    step under ``fp8_param_gather`` (profile feature ``fp8_param_amax_all_reduce``), for a rank
    holding ``layers`` transformer layers: (over the data-parallel group with CP, over the
    expert-data-parallel group), 0.0 where the run keeps no weights in fp8.

    Once the step has updated the fp32 main shards, ``_copy_main_params_to_model_params``
    quantizes them into the fp8 weights and packs one amax per fp8 weight into a float32 buffer,
    all-reduced with MAX over ``self.data_parallel_group`` (NVIDIA/Megatron-LM core_v0.9.0
    86197976 megatron/core/optimizer/distrib_optimizer.py L1805-L1812, core_v0.11.0 a272a9ab
    L1896-L1903; from core_v0.12 fp8_utils.py ``quantize_param_shard`` calls Transformer
    Engine's ``cast_master_weights_to_fp8``, 25.09-alpha.rc1 d3391901 fp8_utils.py L151-L175 and
    distrib_optimizer.py L2424, whose current-scaling path packs ``len(params)`` amaxes and
    all-reduces them, TE release_v2.8 40c69e75 transformer_engine/pytorch/tensor/utils.py
    L250-L279; delayed scaling L201-L206). Every fp8 weight of the rank counts, not only those
    of its shard (a weight outside the shard adds an amax of 0). Expert weights belong to the
    expert optimizer, whose data-parallel group is the expert one. A layer's fp8 weights: the
    attention's QKV and output projections, a dense MLP's fc1 and fc2 (or an MoE layer's shared
    experts' two), and fc1 and fc2 of each local expert (TE GroupedLinear keeps a weight per
    GEMM); MLA's extra projections are not counted (a few bytes of a latency-bound message).
    Per-tensor recipes only: blockwise scaling all-reduces an amax per 128 x 128 block (the same
    file L368-L409), not priced here."""
    if not fp8_weights_gathered(cfg) or cfg.training.fp8_recipe not in AMAX_PER_TENSOR_RECIPES:
        return 0.0, 0.0
    m = cfg.model
    moe = m.num_moe_layers / m.num_layers if m.is_moe else 0.0
    shared = 2 if m.moe_shared_expert_intermediate_size else 0
    dense = layers * (2 + 2 * (1 - moe) + shared * moe)
    experts = layers * moe * 2 * (m.num_experts or 0) / cfg.parallel.ep
    return dense * AMAX_BYTES, experts * AMAX_BYTES


__all__ = ["AMAX_BYTES", "AMAX_PER_TENSOR_RECIPES", "FP8_BUFFER_RECIPES", "FP8_GATHER_MIN_ELEMENTS", "amax_all_reduce_bytes",
           "fp8_weights_gathered", "param_gather_width"]
