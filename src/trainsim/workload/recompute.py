"""Which forward ops a layer re-runs before its backward (activation recomputation).

Megatron's granularities: ``full`` re-runs the whole forward of a recomputed layer;
``selective`` the ops of the checkpointed ``--recompute-modules`` (``RECOMPUTED_OPS``).
torchtitan's ``selective`` is per-op selective checkpointing instead (its profile's
``per_op_sac``): autograd keeps the outputs of a fixed set of ops and re-runs the rest.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from trainsim.catalog.frameworks import profile_supports
from trainsim.config import RunConfig
from trainsim.workload.context_parallel import REPEAT_KV, is_ring_op
from trainsim.workload.ops import MATERIALIZED_SCORES, Attention, Comm, Gemm, Op
from trainsim.workload.remat_policy import kept_ops, policy_recompute, remat_policy
from trainsim.workload.shard import separate_projections
from trainsim.workload.te_unfused import CORE_ATTENTION_OPS
from trainsim.workload.xla_layers import XLA_CORE_OPS

if TYPE_CHECKING:
    from trainsim.workload.shard import Shard

CORE_OPS = CORE_ATTENTION_OPS | XLA_CORE_OPS
"""Ops inside the core attention, beside it: re-run with it."""

_SHARED_EXPERT = frozenset({"shared_fc1", "shared_act", "shared_fc2", "shared_expert"})

RECOMPUTED_OPS = {
    "layernorm": frozenset({"attn_norm", "mlp_norm", "parallel_mlp_norm"}),
    "mla_up_proj": frozenset({"q_norm", "q_up_proj", "mla_q_proj", "kv_norm", "kv_up_proj",
                              "rope"}),
    "mlp": frozenset({"fc1", "gate_proj", "up_proj", "swiglu", "gelu", "fc2"}),
    # bias_act_func: the clamp and the linear offset's copy (glu_offset_sync_op) included
    "moe_act": frozenset({"expert_act_clamp", "expert_act_offset", "expert_act"}),
    "moe": frozenset({"router_fp32_casts", "router", "router_random_logits",
                      "router_topk_softmax", "router_fake_balanced", "moe_fc1_latent", "permute",
                      "moe_tokens_to_host", "moe_capacity_counts", "moe",
                      "expert_fc1", "expert_act_clamp", "expert_act_offset", "expert_act",
                      "expert_fc2",
                      "unpermute", "expert_fp8_pad", "expert_fp8_unpad",
                      "hybridep_stage_in", "moe_fc2_latent"}) | _SHARED_EXPERT,
    "shared_experts": _SHARED_EXPERT,
}
"""Forward ops (by name before any '.') each Megatron-core ``--recompute-modules`` entry re-runs
(``transformer/transformer_layer.py`` and ``multi_latent_attention.py`` checkpoint these
submodules); ``core_attn`` is the attention op itself; ``mlp`` includes a gated MLP's separate
gate and up projections (``shard.separate_projections``), which stand for its fc1. ``mla_up_proj`` checkpoints
``qkv_up_proj_and_rope_apply``, which runs ``linear_q_proj`` where the query has no LoRA, and
the latents' norms ``q_layernorm`` / ``kv_layernorm`` (separate modules in the local spec, fused
into the up-projections' ``TELayerNormColumnParallelLinear`` in the TE spec) before the
up-projections (core_v0.14.0 multi_latent_attention.py L654-677); ``layernorm`` checkpoints only
the layer's ``input_layernorm`` and ``pre_mlp_layernorm`` (transformer_layer.py L402-420), never
those latent norms. ``moe`` checkpoints the MoE layer's
whole ``custom_forward``, whose ``experts_compute`` runs the shared experts too (core_v0.14.0
megatron/core/transformer/moe/moe_layer.py), every op from the router to the shared experts'
sum: the router's fp32 casts and a forced-balance run's random logits (router.py), a latent
MoE's ``fc1_latent_proj`` / ``fc2_latent_proj`` (``preprocess`` / ``postprocess``), the token
dispatch and combine with their communication and host sync (HybridEP's
``dispatch_with_permute`` blocks on the token count again: ``_HybridEPManager.combine`` resets
``num_permuted_tokens``), the shared experts' tensor-parallel gather and reduction
(core_r0.18.0 d0b3b775 moe_layer.py L642-703 ``custom_forward`` under ``te_checkpoint`` /
``tensor_parallel.checkpoint``, token_dispatcher.py L1036-1140); only the pre-MLP norm and the
residual add lie outside. A module checkpointed inside ``moe`` and
selected too re-runs twice: ``shared_experts`` (``tensor_parallel.checkpoint`` around the shared
experts inside ``custom_forward``: the outer re-run runs its forward once, its own backward
again) and ``moe_act`` (experts.py ``CheckpointWithoutOutput``: run again by the outer re-run,
then by its hook). ``model.counts.hardware_flops_per_iteration``
counts the matmuls of the same re-runs."""


def layer_recompute(cfg: RunConfig, sh: Shard, fwd: list[Op], whole: bool = True) -> list[Op]:
    """Ops re-run before a layer's backward (Megatron's recompute granularity): the whole
    forward under full recompute (``whole``: this layer is among the recomputed ones), else the
    selective modules' ops, or what per-op checkpointing did not save; under JAX's remat
    (:func:`remat_dce`) without the ops whose outputs no gradient reads, or as its stated policy
    says (``workload.remat_policy``)."""
    if remat_policy(cfg) is not None:  # a stated JAX remat policy (workload.remat_policy)
        return policy_recompute(cfg, fwd) if whole or cfg.parallel.recompute != "full" else []
    out = _layer_recompute(cfg, fwd, whole)
    if out and remat_dce(cfg) and not any(op.name.split(".")[0] == "router" for op in fwd):
        out = [op for op in out if op.name.removeprefix("recompute.") not in REMAT_DCE_OPS]
    return out


REMAT_DCE_OPS = frozenset({"fc2", "mlp_bias_dropout_add"})
"""A dense layer's ops whose outputs no gradient reads: the MLP's last projection and the
residual add after it, whose sum is the layer's output (the next layer's input, which the
backward holds). Linear in what they take, their backward needs their inputs and the incoming
gradient, never their outputs; the fp8 cast of the projection's input (``fc2.cast_transpose``),
which its weight gradient reads, still runs again."""


def remat_dce(cfg: RunConfig) -> bool:
    """Whether the run's recompute is JAX's ``jax.checkpoint`` (profile ``remat_dce``: MaxText,
    Paxml), whose backward re-runs only the forward values the gradients read: partial
    evaluation splits the checkpointed function into what the policy saves and a staged part,
    and DCEs the staged part to the outputs the backward uses (jax-ml/jax@2ff90382
    jax/_src/ad_checkpoint.py ``remat_partial_eval`` L536-540, ``pe.dce_jaxpr(jaxpr_staged,
    out_inst_unknown)``). In a dense pre-norm layer the MLP's output projection and the
    residual add after it feed only the layer's output, held as the next layer's input (the
    carry of MaxText's and Paxml's scan over layers), so whatever the remat policy
    (``save_dot_except_mlpwi``, ``save_qkv_proj``, nothing saveable) they are not re-run
    (``REMAT_DCE_OPS``); Megatron's checkpoint of the MLP module re-runs its whole forward. An
    MoE layer is left as its modules say (the combine's backward reads the experts' outputs)."""
    return cfg.parallel.recompute != "none" and bool(profile_supports(cfg, "remat_dce"))


def _layer_recompute(cfg: RunConfig, fwd: list[Op], whole: bool) -> list[Op]:
    p = cfg.parallel
    if p.recompute == "full":
        return [_renamed(op, "recompute.") for op in fwd] if whole else []
    if p.recompute != "selective":
        return []
    if profile_supports(cfg, "per_op_sac") and not any(isinstance(op, Gemm) and op.grouped
                                                        for op in fwd):
        return per_op_sac_recompute(fwd, per_op_sac_reruns_attention(cfg))
    modules = p.recompute_modules or ("core_attn",)
    fused_rerun = core_attn_rerun(cfg, fused=True)
    sets = [RECOMPUTED_OPS[x] for x in modules if x in RECOMPUTED_OPS]
    if "layernorm" in modules:
        # the spec's IdentityOp norms are not checkpointed: the input norm where fused into the
        # QKV linear, the pre-MLP norm of a layer without a router where fused into fc1
        moe = any(op.name.split(".")[0] == "router" for op in fwd)
        kept = ({"attn_norm"} if input_norm_fused(cfg) else set()) | \
            (set() if moe or not pre_mlp_norm_fused(cfg) else {"mlp_norm"})
        sets = [ops - kept if ops is RECOMPUTED_OPS["layernorm"] else ops for ops in sets]
    if "mlp" in modules and not remat_dce(cfg):
        sets.append(mlp_module_extra(cfg, fwd))
    out = []
    for op in fwd:
        if isinstance(op, Attention):
            if "core_attn" in modules and (op.impl in MATERIALIZED_SCORES or fused_rerun):
                out.append(_renamed(op, "recompute."))
            continue
        if op.name == "attn_softcap" or op.name.split(".")[0] in CORE_OPS:
            # inside core_attention (Gemma2DotProductAttention; Transformer Engine's unfused)
            out += [_renamed(op, "recompute.")] if "core_attn" in modules else []
            continue
        # a module checkpointed inside another (shared_experts, moe_act inside moe) re-runs
        # once per checkpoint around it
        name = op.name.split(".")[0]
        out += [_renamed(op, "recompute.")] * sum(name in ops for ops in sets)
    return out


def mlp_module_extra(cfg: RunConfig, fwd: list[Op]) -> frozenset[str]:
    """What Megatron-core's ``mlp`` checkpoint re-runs beyond fc1, the activation and fc2: it
    wraps the dense layer's whole ``self.mlp`` forward (NVIDIA/Megatron-LM core_r0.18.0 d0b3b775
    transformer_layer.py L501-503 ``recompute_mlp`` for a layer without a router, L824-840
    ``te_checkpoint`` / ``tensor_parallel.checkpoint(apply_module(self.mlp), ...)``), so the
    tensor-parallel communication inside its linears (``ColumnParallelLinear`` /
    ``TELayerNormColumnParallelLinear``'s sequence-parallel all-gather, ``RowParallelLinear``'s
    reduce-scatter or all-reduce: the ops named ``mlp.*``) runs again, and under the Transformer
    Engine spec (:func:`pre_mlp_norm_fused`, MLA included) the pre-MLP norm too, fused into
    ``linear_fc1`` (the layer's ``pre_mlp_layernorm`` an ``IdentityOp``). The bias-dropout-add
    lies outside. An MoE layer's
    ``mlp`` is not checkpointed (``is_moe_layer``). JAX's remat (:func:`remat_dce`) is left as
    its policy names: not Megatron's module."""
    if any(op.name.split(".")[0] == "router" for op in fwd):
        return frozenset()
    return frozenset({"mlp"} | ({"mlp_norm"} if pre_mlp_norm_fused(cfg) else set()))


def recompute_drops_fp8(cfg: RunConfig) -> bool:
    """A full recompute whose Transformer Engine linears run in 16 bits, and so their
    backward (profile ``fp8_recompute_16bit``): Composer enters TE's ``fp8_autocast`` around
    the forward and the loss only, never the backward (mosaicml/composer v0.17.2
    composer/trainer/trainer.py ``_train_microbatch``: ``_get_precision_context`` around
    ``self.state.model(...)`` and the loss, ``microbatch_loss.backward()`` outside it;
    composer/core/precision.py ``get_precision_context`` amp_fp8), and the blocks are
    checkpointed by torch's ``checkpoint_wrapper`` (composer/trainer/dist_strategy.py
    ``prepare_fsdp_module``), not TE's ``checkpoint``. Torch's recompute, run by the backward,
    restores torch's autocast state but not TE's global fp8 flag, and TE v0.10's
    ``TransformerEngineBaseModule.prepare_forward`` -> ``fp8_init`` reads ``self.fp8 =
    is_fp8_enabled()`` on every forward (NVIDIA/TransformerEngine v0.10
    transformer_engine/pytorch/module/base.py, fp8.py ``_FP8_ENABLED``): the recomputed
    forward's GEMMs run in 16 bits and save 16-bit inputs, so the dgrad and wgrad GEMMs of
    its graph, the one the backward differentiates, do too. Only the first forward runs fp8."""
    return (cfg.training.dtype == "fp8" and cfg.parallel.recompute == "full"
            and bool(profile_supports(cfg, "fp8_recompute_16bit")))


def input_norm_fused(cfg: RunConfig) -> bool:
    """Whether the layer's input norm is fused into the linear it feeds (profile
    ``te_layer_spec``, not MLA): Megatron-core's Transformer Engine spec makes
    ``input_layernorm`` an IdentityOp and ``linear_qkv`` a ``TELayerNormColumnParallelLinear``
    (gpt_layer_specs.py core_v0.12.1 L136-166, core_v0.19.0 L138-157); its MLA spec keeps a
    ``TENorm`` before the two ``TELinear`` down-projections (core_r0.10.0 L81-102, core_v0.14.0
    L123-155 ``input_layernorm=backend.layer_norm()``; fused only under
    ``mla_down_proj_fusion``, core_r0.18.0 d0b3b775, default False, not modelled). The
    ``layernorm`` recompute module checkpoints only norms that are not IdentityOp
    (transformer_layer.py core_v0.14.0 L406-415, core_v0.19.0 L450-502), so a fused norm is
    neither re-run nor freed (memory.te_spec)."""
    return bool(profile_supports(cfg, "te_layer_spec")) and not cfg.model.is_mla


def pre_mlp_norm_fused(cfg: RunConfig) -> bool:
    """Whether a dense layer's (no router) pre-MLP norm is fused into ``linear_fc1`` (profile
    ``te_layer_spec``, MLA included): every Transformer Engine layer spec of Megatron-core,
    the MLA one too, sets ``pre_mlp_layernorm=TENorm if num_experts else IdentityOp``
    (gpt_layer_specs.py core_r0.10.0 L102 / L129, core_v0.14.0 L155 / L181, core_r0.18.0
    d0b3b775 L157), and the dense MLP's ``linear_fc1`` is then
    ``column_parallel_layer_norm_linear()`` (core_v0.14.0 ``get_mlp_module_spec_for_backend``);
    a DeepSeek model's first dense layers are built with ``num_experts=None``
    (``get_gpt_decoder_block_spec``: ``dense_layer_spec``). An MoE layer's pre-MLP norm is a
    ``TENorm``."""
    return bool(profile_supports(cfg, "te_layer_spec"))


def reruns_nothing(cfg: RunConfig) -> bool:
    """Whether :func:`layer_recompute` re-runs no op of any layer the analytical builder
    (``workload.layers.layer_forward``) gives ``cfg``: recompute none, or selective recompute
    whose modules checkpoint nothing those ops run again. That is: no per-op checkpointing
    (``per_op_sac``), no module with ops of its own (``RECOMPUTED_OPS``), and the attention
    core a fused kernel (its op's ``impl`` is ``training.attention``: ``workload.layers``,
    ``context_parallel.ring_forward`` keeps it) that the framework does not checkpoint
    (:func:`core_attn_rerun`): selective recompute of ``core_attn`` beside FlashAttention,
    whose backward recomputes the scores anyway. Such a config's layer passes are recompute
    none's (``twin_graphs.kept_chunks`` keys them as one)."""
    p = cfg.parallel
    if p.recompute == "none":
        return True
    if remat_policy(cfg) is not None:
        return kept_ops(cfg) is None
    if p.recompute != "selective" or profile_supports(cfg, "per_op_sac"):
        return False
    if any(x in RECOMPUTED_OPS for x in p.recompute_modules or ("core_attn",)):
        return False
    return cfg.training.attention not in MATERIALIZED_SCORES and \
        not core_attn_rerun(cfg, fused=True)


def core_attn_rerun(cfg: RunConfig, fused: bool | None = None) -> bool:
    """Whether selective recompute re-runs the attention core's forward before its backward.

    ``fused``: the attention is a fused kernel (flash, cuDNN), not one keeping the score matrix
    (None: the run's ``training.attention``). An unfused attention is re-run wherever
    ``core_attn`` is checkpointed (Korthikanti et al. 2022 §4.2). A fused one is re-run only
    where the framework checkpoints it too (profile feature ``checkpointed_fused_attention``:
    Megatron-core's attention.py ``_checkpointed_attention_forward`` wraps whatever backend,
    core_v0.4.0 .. core_v0.15.0); legacy Megatron-LM skips the checkpoint under flash
    (megatron/model/transformer.py ``if not self.use_flash_attn``), and a run without a profile
    keeps that rule. ``model.counts.hardware_flops_per_iteration`` counts the same re-run."""
    p = cfg.parallel
    if p.recompute != "selective" or "core_attn" not in (p.recompute_modules or ("core_attn",)):
        return False
    if fused is None:
        fused = cfg.training.attention not in MATERIALIZED_SCORES
    return not fused or profile_supports(cfg, "checkpointed_fused_attention")


def per_op_sac_layout(cfg: RunConfig) -> bool | None:
    """For ``model.counts.hardware_flops_per_iteration``: None without per-op selective
    checkpointing, else whether the layer's projections are separate GEMMs
    (``separate_projections``), which sets the matmuls :func:`per_op_sac_recompute` re-runs."""
    if cfg.parallel.recompute != "selective" or not profile_supports(cfg, "per_op_sac"):
        return None
    return separate_projections(cfg)


def per_op_sac_reruns_attention(cfg: RunConfig) -> bool:
    """Whether per-op selective checkpointing re-runs the attention forward: the run's SDPA
    dispatches to cuDNN (``training.attention`` cudnn, as the profile's ``sdpa_by_arch`` sets
    it) and the policy's save list does not name ``_scaled_dot_product_cudnn_attention``
    (profile ``per_op_sac_reruns_cudnn``: torchtitan before b39377f9f, 2025-12-01), so the
    op is PREFER_RECOMPUTE like any other; torch.compile's partitioner
    (torch/_functorch/partitioners.py ``must_recompute``) treats PREFER_RECOMPUTE as recompute
    too. Its output and log-sum-exp are then not kept (``memory.layer_activations``)."""
    return (cfg.parallel.recompute == "selective" and cfg.training.attention == "cudnn"
            and bool(profile_supports(cfg, "per_op_sac"))
            and bool(profile_supports(cfg, "per_op_sac_reruns_cudnn")))


def per_op_sac_saves_no_gemm(cfg: RunConfig) -> bool:
    """Whether per-op selective checkpointing keeps no matmul output of a layer: its linears are
    TorchAO's NVFP4 ones (``fp8_recipe`` nvfp4 under the profile's ``per_op_sac``: torchtitan's
    NVFP4LinearConverter, torchtitan@b5bcd76c6 components/quantization/nvfp4.py). Their
    autograd function (pytorch/ao@cb76f29 torchao/prototype/moe_training/nvfp4_training/
    nvfp4_linear.py ``nvfp4_mm_triton``) runs the custom ops ``torchao::triton_rht_amax``,
    ``triton_rht_quantize_row_col`` and ``triton_weight_quantize_2d`` and
    ``torch.nn.functional.scaled_mm``, which calls ``aten._scaled_mm_v2`` (torch 2.13
    nn/functional.py L7207): no ``aten.mm``, which the policy counts and keeps every other of,
    and none of them in its save list (torchtitan distributed/activation_checkpoint.py
    ``_get_default_save_ops``: the partitioner's compute-intensive ops name ``aten._scaled_mm``,
    not ``_scaled_mm_v2``, torch 2.13 _functorch/partitioners.py L2971-2983). So every one is
    PREFER_RECOMPUTE, which the compiled partitioner recomputes (``must_recompute``, L166-170,
    L2360-2372): the FP4 copies the function saves for its backward are made again, from the
    block's input and the attention's kept output."""
    t = cfg.training
    return (cfg.parallel.recompute == "selective" and t.dtype == "fp8"
            and t.fp8_recipe == "nvfp4" and bool(profile_supports(cfg, "per_op_sac")))


def per_op_sac_recompute(fwd: list[Op], rerun_attention: bool = False) -> list[Op]:
    """What torchtitan's per-op selective checkpointing re-runs (``selective_ac_option = 'op'``,
    parallelize_llama.py: ``_save_list`` and its policy): it keeps the output of every other
    ``aten.mm`` (the 1st, 3rd, 5th and 7th of a Llama block: wq, wv, w1, w2), the attention's
    output and the tensor-parallel reduce-scatters'; norms, RoPE, casts, the activation, the
    other matmuls (wk, wo, w3) and the sequence-parallel all-gathers run again. Under
    torch's context parallelism the policy sees one ``_scaled_dot_product_flash_attention``
    call (its dispatch runs the ring inside: ``workload.context_parallel``), so the ring's
    exchanges and merges are saved with its output; the model's ``repeat_kv`` before it runs
    again. ``rerun_attention`` (:func:`per_op_sac_reruns_attention`): an attention kernel the
    save list does not name runs again too (a ring's exchanges stay saved). An NVFP4 GEMM
    (:func:`per_op_sac_saves_no_gemm`) is no ``aten.mm``: it is not counted and runs again."""
    out, mm = [], 0
    for op in fwd:
        if isinstance(op, Gemm) and op.fp8_block_scales == "nvfp4":
            pass
        elif isinstance(op, Gemm):
            mm += 1
            if mm % 2 == 1:
                continue
        elif isinstance(op, Attention) and rerun_attention:
            pass
        elif isinstance(op, Attention) or (isinstance(op, Comm) and op.kind == "reduce_scatter") \
                or (is_ring_op(op) and op.name != REPEAT_KV):
            continue
        out.append(_renamed(op, "recompute."))
    return out


def _renamed(op: Op, prefix: str) -> Op:
    return replace(op, name=prefix + op.name)
