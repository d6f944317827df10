"""Which parameters a run all-gathers in fp8 (one byte an element) and at what mean width: the
one home of the rule that FSDP's unit gathers (``workload.sharding.fsdp_unit_gathers``) and the
distributed optimizer's parameter gathers (``param_gather_width``: the simulator's task graph and
the search's bounds, ``search.layout_costs``) both read."""

from __future__ import annotations

from collections.abc import Iterable

from trainsim.catalog.frameworks import profile_supports
from trainsim.config import RunConfig
from trainsim.config.hybrid import ATTENTION, MAMBA, layer_kind, layer_symbol
from trainsim.model.mamba import in_proj_width, inner
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
    if cfg.training.dtype != "fp8" or not cfg.training.fp8_param_gather:
        return False
    # torchao carries an FSDP all-gather in fp8 for one scale per tensor only (profile feature
    # ``fp8_gather_per_tensor_only``): pytorch/torchtitan@6fc499f6 (2025-08-14)
    # components/quantization/float8.py L76-L98, a ``float8.recipe_name`` (rowwise, ...) asserts
    # ``not enable_fsdp_float8_all_gather`` ("... is not supported"), only the default tensorwise
    # ``Float8LinearConfig(enable_fsdp_float8_all_gather=...)`` gathers in fp8; mx.py builds
    # ``MXLinearConfig.from_recipe_name`` and job_config.py ``class MX`` has no all-gather
    # option: MX- and block-scaled weights gather in bf16
    if cfg.training.fp8_recipe not in AMAX_PER_TENSOR_RECIPES and \
            profile_supports(cfg, "fp8_gather_per_tensor_only"):
        return False
    p = cfg.parallel
    if p.zero_stage >= 3 and p.data_parallel_impl == "megatron" and \
            profile_supports(cfg, "megatron_fsdp_16bit_params"):
        return False  # Megatron-FSDP with 16-bit weights (NeMo 25.04: nemo.yaml)
    # torchtitan's Float8Handler asks torchao for the fp8 all-gather only with a sharded
    # data-parallel dimension: ``enable_fsdp_float8_all_gather = parallel_dims.dp_shard_enabled
    # and ...`` (pytorch/torchtitan@2a25f4d78 2024-09-12 torchtitan/float8.py L51-54, still at
    # 9dec370a and at 820504e2 components/quantization/float8.py L79-82; before it
    # ``dp_enabled and dp_type == "fsdp"``): FSDP sharded over CP alone gathers 16-bit weights
    return not (profile_supports(cfg, "fp8_gather_needs_dp_shard")
                and cfg.dp // cfg.parallel.dp_replicate <= 1)


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


NVFP4_PACKED_BYTES = 0.5
"""Bytes per NVFP4 weight element in Megatron-core's parameter buffer: two E2M1 values a byte
(param_and_grad_buffer.py@d98e8a64 L1088-1126, ``nvfp4_packed_numel``: "numel // 2" for NVFP4
tensors). The E4M3 tile scales are not gathered: every rank computes all of them after the
step from the all-reduced tile amaxes (:func:`amax_all_reduce_bytes`)."""


def param_gather_width(cfg: RunConfig, params: float, fp8_params: float) -> float:
    """Mean bytes per element of the distributed optimizer's parameter all-gather over
    ``params`` elements of which ``fp8_params`` are matmul weights (``FP8_BUFFER_RECIPES``; NVFP4
    weights at ``NVFP4_PACKED_BYTES`` where the framework packs them, profile feature
    ``nvfp4_param_buffer``): 16-bit unless the run keeps its weights in fp8
    (``training.fp8_param_gather``); 4 under DistributedDataParallel, whose ZeRO-1
    (``ZeroRedundancyOptimizer``) broadcasts the fp32 parameters themselves (``param.data``,
    ``workload.zero_redundancy``)."""
    if cfg.parallel.data_parallel_impl == "ddp":
        return 4.0
    recipe = cfg.training.fp8_recipe
    if not fp8_weights_gathered(cfg) or params <= 0:
        return float(ACT)
    if recipe in FP8_BUFFER_RECIPES:
        width = 1.0
    elif recipe == "nvfp4" and profile_supports(cfg, "nvfp4_param_buffer"):
        width = NVFP4_PACKED_BYTES
    else:
        return float(ACT)
    fp8 = min(max(fp8_params, 0.0), params)
    return (fp8 * width + (params - fp8) * ACT) / params


AMAX_BYTES = 4
"""One fp32 amax per quantized weight tensor or block (``packed_amaxes``, ``torch.float32``)."""

AMAX_PER_TENSOR_RECIPES = frozenset({"delayed", "current"})
"""Recipes with one amax per weight tensor (per-tensor delayed and current scaling)."""

AMAX_BLOCK = 128
"""Side of a blockwise-scaled weight's square block (Transformer Engine ``Float8BlockQuantizer``
``block_len``, 128 x 128 blocks for weights: ``block_scaling_dim == 2``)."""


NVFP4_TILE = 16
"""Side of an NVFP4 weight's square scaling tile (TE ``NVFP4_BLOCK_SCALING_SIZE``, 2D 16 x 16
quantization of weights under ``NVFP4BlockScaling``)."""


def amax_blocks(rows: int, cols: int) -> int:
    """Amaxes of one blockwise-scaled ``rows x cols`` weight: its rowwise scale shape,
    ``ceil(rows / 128)`` by ``ceil(cols / 128)`` rounded up to a multiple of 4 (cuBLAS wants
    the inner dimension padded; TE v2.8 40c69e75 tensor/float8_blockwise_tensor.py
    ``get_scale_shape`` L137-L145), which ``_cast_master_weights_to_fp8_blockwise_scaling``
    packs whole."""
    inner = -(-cols // AMAX_BLOCK)
    return -(-rows // AMAX_BLOCK) * (-(-inner // 4) * 4)


def fp8_weight_shapes(cfg: RunConfig, index: int) -> list[tuple[int, int, float, bool]]:
    """The fp8 weights of layer ``index`` as one rank holds them, as (rows, columns, copies,
    routed expert), Megatron's (output, input) layout: the attention's QKV (column-parallel) and
    output projection (row-parallel), or MLA's query, key/value down and up projections (all
    TEColumnParallelLinear, Megatron-LM core_v0.12.0 gpt_layer_specs.py L116-L124,
    multi_latent_attention.py L252-L313) and output projection; a dense MLP's or the shared
    experts' fc1 (gate and up fused) and fc2 over TP; each of the ``num_experts / ep`` local
    experts' fc1 and fc2 over expert TP (TE GroupedLinear keeps a weight per GEMM). The router,
    norms and biases are not quantized."""
    m, p = cfg.model, cfg.parallel
    h, tp = m.hidden_size, p.tp

    def cut(n: int, by: int) -> int:
        return -(-n // by)

    if m.is_mla:
        heads = m.num_attention_heads
        q_head = m.qk_head_dim + m.qk_pos_emb_head_dim
        q = [(cut(heads * q_head, tp), h)] if not m.q_lora_rank else \
            [(cut(m.q_lora_rank, tp), h), (cut(heads * q_head, tp), m.q_lora_rank)]
        attn = q + [(cut(m.kv_lora_rank + m.qk_pos_emb_head_dim, tp), h),
                    (cut(heads * (m.qk_head_dim + m.v_head_dim), tp), m.kv_lora_rank)]
    else:
        attn = [(cut(m.q_size + 2 * m.kv_size, tp), h)]
    out = [(r, c, 1.0, False) for r, c in attn] + [(h, cut(m.v_dim, tp), 1.0, False)]
    gates = 2 if m.activation == "swiglu" else 1

    def mlp(width: int, by: int, copies: float, expert: bool) -> list:
        return [(cut(gates * width, by), h, copies, expert), (h, cut(width, by), copies, expert)]

    symbol = layer_symbol(m, index)  # a hybrid layer holds one of these blocks
    if symbol == MAMBA:  # in_proj (column-parallel) and out_proj (row-parallel)
        return [(cut(in_proj_width(m), tp), h, 1.0, False), (h, cut(inner(m), tp), 1.0, False)]
    if symbol == ATTENTION:
        return out
    if symbol:
        out = []
    if not m.is_moe_layer(index):
        return out + mlp(m.ffn_size, tp, 1.0, False)
    if m.moe_shared_expert_intermediate_size:
        out += mlp(m.moe_shared_expert_intermediate_size, tp, 1.0, False)
    d = m.moe_latent_size
    if d:  # the latent projections (TP-duplicated), the experts on the latent width
        out += [(d, h, 1.0, False), (h, d, 1.0, False)]
        f, experts = cut(m.expert_ffn_size, p.etp), (m.num_experts or 0) / p.ep
        return out + [(cut(gates * m.expert_ffn_size, p.etp), d, experts, True), (d, f, experts, True)]
    return out + mlp(m.expert_ffn_size, p.etp, (m.num_experts or 0) / p.ep, True)


def amax_all_reduce_bytes(cfg: RunConfig, layers: Iterable[int]) -> tuple[float, float]:
    """Bytes of the amax all-reduce that Megatron-core's distributed optimizer runs after every
    step under ``fp8_param_gather`` (profile feature ``fp8_param_amax_all_reduce``), for a rank
    holding the transformer layers ``layers`` (global indices): (over the data-parallel group
    with CP, over the expert-data-parallel group), 0.0 where the run keeps no weights in fp8.

    After the step ``step_with_ready_grads`` calls ``_update_fp8_scale_inv_and_amax``, which
    packs one amax per fp8 weight into a float32 buffer all-reduced with MAX over
    ``self.data_parallel_group`` (NVIDIA/Megatron-LM core_v0.9.0 1afee592
    megatron/core/optimizer/distrib_optimizer.py L1773-L1812, called L1824; core_v0.11.0
    aa6207e2 L1862-L1903, called L1915): the dense optimizer's group is the data-parallel group
    with CP, the expert optimizer's the expert-data-parallel one (core_v0.9.0
    optimizer/__init__.py L402, L431). From core_v0.12 fp8_utils.py ``quantize_param_shard``
    calls Transformer Engine's ``cast_master_weights_to_fp8`` (25.09-alpha.rc1 d3391901
    fp8_utils.py L151-L175, distrib_optimizer.py L2424), whose current-scaling path packs
    ``len(params)`` amaxes and all-reduces them (TE release_v2.8 40c69e75
    transformer_engine/pytorch/tensor/utils.py L250-L279; delayed scaling L201-L206) and whose
    blockwise path packs every weight's block amaxes (``amax_blocks``) into one buffer and
    all-reduces it in one call (L335-L409). Every fp8 weight of the rank counts, not only those
    of its shard (a weight or block outside the shard adds an amax of 0); the weights are
    ``fp8_weight_shapes``'s, each layer's by its own kind (a stage of dense first layers has
    no expert amaxes). MXFP8 sends nothing (TE v2.8 utils.py L122-L125 raises
    NotImplementedError for it). NVFP4 weights in Megatron-core's packed buffer (profile
    ``nvfp4_param_buffer``; fp4_utils.py@d98e8a64 ``quantize_nvfp4_param_shard`` -> TE
    ``quantize_master_weights``) all-reduce one amax per 16 x 16 tile and one per weight
    (TransformerEngine@d0067d0d pytorch/tensor/utils.py L752-848
    ``_cast_master_weights_to_nvfp4_2d``: ``packed_amaxes`` then ``global_amaxes``, MAX over the
    group; counted here as one)."""
    recipe = cfg.training.fp8_recipe
    nvfp4 = recipe == "nvfp4" and bool(profile_supports(cfg, "nvfp4_param_buffer"))
    if not fp8_weights_gathered(cfg) or (
            recipe not in AMAX_PER_TENSOR_RECIPES and recipe != "blockwise" and not nvfp4):
        return 0.0, 0.0
    kinds: dict[bool | str, tuple[float, float]] = {}
    dense = experts = 0.0
    for i in layers:
        moe = layer_kind(cfg.model, i)
        if moe not in kinds:
            n = [0.0, 0.0]
            for rows, cols, copies, expert in fp8_weight_shapes(cfg, i):
                if nvfp4:  # the tiles' amaxes and the weight's global one
                    tiles = -(-rows // NVFP4_TILE) * -(-cols // NVFP4_TILE)
                    n[expert] += copies * (tiles + 1)
                else:
                    n[expert] += copies * (amax_blocks(rows, cols) if recipe == "blockwise" else 1)
            kinds[moe] = (n[0], n[1])
        dense, experts = dense + kinds[moe][0], experts + kinds[moe][1]
    return dense * AMAX_BYTES, experts * AMAX_BYTES


__all__ = ["AMAX_BLOCK", "AMAX_BYTES", "AMAX_PER_TENSOR_RECIPES", "FP8_BUFFER_RECIPES",
           "FP8_GATHER_MIN_ELEMENTS", "NVFP4_PACKED_BYTES", "NVFP4_TILE",
           "amax_all_reduce_bytes", "amax_blocks",
           "fp8_weight_shapes", "fp8_weights_gathered", "param_gather_width"]
