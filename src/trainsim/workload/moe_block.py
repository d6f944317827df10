"""The MoE block of one layer on one rank: router, token dispatch over expert parallelism, the
local experts' grouped GEMMs, combine, and the shared experts (Megatron-core's MoE layer).

Its stages' own mechanisms live beside it: ``moe_router`` (the gating's extra launches),
``moe_dispatch`` (what each token dispatcher does), ``moe_experts`` (torchtitan's eager experts).
"""

from __future__ import annotations

import functools
import math
from dataclasses import replace

from trainsim.catalog.frameworks import framework_feature, profile_supports
from trainsim.config import RunConfig
from trainsim.workload import moe_balance, moe_experts, moe_permute, moe_router, moe_titan
from trainsim.workload import moe_dispatch as disp
from trainsim.workload.elementwise import (
    clamp_op,
    expert_fc1_bias,
    expert_fc2_bias,
    glu_offset_sync_op,
)
from trainsim.workload.ops import ACT_BYTES as ACT
from trainsim.workload.ops import Comm, Elementwise, GroupedImpl, Op
from trainsim.workload.shard import Shard, fp8_input_store, linear, tp_enter, tp_exit

MOE_KERNELS = {
    "router": (28, 12),
    "preprocess": (10, 0),
    "permute": (3, 2),
    "expert_act": (1, 2),
    "unpermute": (2, 1),
}
"""Kernel launches (forward, backward) of the MoE layer's memory-bound stages as Megatron-core
issues them (core_v0.13.0, c550cf6, megatron/core/transformer/moe/, with Transformer Engine
2.5's fused permutation, ``moe_permute_fusion``): the router's top-k and softmax with its
probability and routing-map scatters (``moe_utils.topk_softmax_with_capacity``: 13) and the
load-balancing loss (``router.aux_loss_load_balancing``, ``switch_load_balancing_loss_func``
and its tracker: 15), about 12 backward; the all-to-all dispatcher's ``preprocess`` (6
reductions) and the device-to-host copies of the split sizes (4); TE's
``moe_permute_with_probs`` (3, backward 2); the weighted SwiGLU (1, backward 2);
``unpermute_with_mask_map`` (2, backward 1). The all-to-all dispatcher's chunk sort and unsort,
and Transformer Engine >= 2.6's extra maps, are added by ``moe_dispatch.permute_extra_kernels``.
Counted from the code, not profiled: per-expert GEMMs are counted by ``compute.host.launches``."""


SHARED_EXPERT_PREFIX = "shared_"
"""Every op of the shared experts' block, and only those, is named with this prefix: Megatron-
core runs the block in its own schedule node (``ep_pairs`` reads it)."""


def moe_block(ops: list[Op], cfg: RunConfig, sh: Shard, grouped: GroupedImpl | None = None,
               experts: str = "") -> None:
    """Routed experts with Megatron-core's all-to-all token dispatcher (Megatron-core MoE docs):
    router -> permute -> all-to-all over EP -> grouped GEMMs of the local experts -> all-to-all
    back -> unpermute; shared experts run as a TP-parallel dense MLP. Under SP each TP rank
    routes its own s/t tokens; expert TP all-gathers tokens inside the expert-TP group. The
    grouped GEMMs run as ``grouped`` implements them (default: the framework's,
    ``grouped_gemm_impl``); dropless routing leaves each expert a varying row count.
    ``experts``: how the routed experts and their combine run (``moe_experts.STYLES``: ``""``
    Megatron-core's; ``padded``, ``index_add``: eager ``torch._grouped_mm`` experts); left
    empty, the framework's (profile ``moe_experts``: torchtitan's own layer, ``moe_titan``)."""
    m, p = cfg.model, cfg.parallel
    impl = grouped_gemm_impl(cfg) if grouped is None else grouped
    titan = titan_style(cfg) if not experts else ""
    ragged = not m.moe_padded_to_capacity
    k, E = m.moe_router_topk, m.num_experts or 1
    h = m.expert_input_size  # what the dispatch carries: a latent MoE's latent width
    tokens = sh.norm_tokens  # tokens this rank routes (s/t under SP)
    shared = _shared_experts(cfg, sh)
    # Megatron-core's SharedExpertMLP on its side stream (core_v0.16.0 token_dispatcher.py
    # MoEAlltoAllTokenDispatcher): its TP entry (pre_forward_comm) issued before the
    # permutation (dispatch_preprocess L625-626), fc1 and the activation after the dispatch's
    # all-to-all (dispatch_postprocess L688-689), fc2 and its TP exit (post_forward_comm) after
    # the combine's (combine_postprocess L828-830), its output waited for after the
    # unpermutation (get_output, L846-847)
    beside = shared is not None and p.moe_token_dispatcher_type == "alltoall" \
        and shared_expert_overlap(cfg) and not titan  # torchtitan has no side stream
    # torchtitan's shared experts between its async combine and the combine's first use, in
    # the forward only (moe_titan.shared_beside_combine)
    titan_beside = shared is not None and moe_titan.shared_beside_combine(
        p.ep, p.moe_token_dispatcher_type, _shared_overlapped(cfg), bool(titan),
        p.tp > 1 and p.sequence_parallel)
    if titan:
        ops.extend(moe_titan.router_ops(tokens, E, m.hidden_size, k,
                                        bool(profile_supports(cfg, "moe_gate_fp32"))))
    else:
        ops.extend(moe_router.router_ops(cfg, tokens, MOE_KERNELS["router"]))
    if m.moe_latent_size:  # preprocess: h -> latent on the rank's own tokens, before the permute
        latent_proj(ops, sh, "moe_fc1_latent", tokens, h, m.hidden_size)
    routed = tokens * k  # token copies leaving this rank
    dispatcher = p.moe_token_dispatcher_type
    local = E // p.ep
    extra = disp.permute_extra_kernels(cfg, dispatcher, local)
    permute = Elementwise("permute", bytes=routed * h * ACT * 2,
                          kernels=MOE_KERNELS["permute"][0] + extra[0][0],
                          bwd_kernels=MOE_KERNELS["permute"][1] + extra[0][1])
    unpermute = Elementwise("unpermute", bytes=routed * h * ACT * 2 + tokens * h * ACT,
                            kernels=MOE_KERNELS["unpermute"][0] + extra[1][0],
                            bwd_kernels=MOE_KERNELS["unpermute"][1] + extra[1][1])
    permute_ops: list[Op] = [permute]
    unpermute_ops: list[Op] = [unpermute]
    if titan:  # its reorder and copy before the exchange, its combine after the return
        permute_ops = [moe_titan.reorder_op(titan, tokens, k),
                       moe_titan.gather_op(titan, tokens, routed, h)]
        unpermute_ops = moe_titan.combine_ops(titan, tokens, routed, h, k)
    elif not moe_permute.fused(cfg) and dispatcher != "hybridep":  # PyTorch ops, host waits
        permute_ops, unpermute_ops = moe_permute.unfused_ops(
            cfg, dispatcher, tokens, routed, disp.sorts_chunks(dispatcher, local))
    if disp.permute_before_exchange(dispatcher):
        if shared is not None and beside:  # the TP entry beside the permutation
            ops.extend(_beside(c, permute_ops) for c in shared[0])
        ops.extend(permute_ops)
    counts = disp.split_sizes_gather(cfg) if not titan else None
    if counts is not None:
        ops.append(counts)
    padded_counts = disp.capacity_counts_op(cfg) if not titan else None
    if padded_counts is not None:
        ops.append(padded_counts)
    hybrid = dispatcher == "hybridep" and p.ep > 1
    if hybrid:  # its Torch API's own preprocessing, staging and permutes
        api_before, api_after = disp.hybridep_api_ops(cfg, tokens, "dispatch")
        ops.extend(api_before)
    elif titan:  # the counts' exchange and the host's wait, where EP > 1 only
        ops.extend(moe_titan.exchange_ops(p.ep, E, impl == "loop"))
    elif not m.moe_padded_to_capacity:
        # dropless, or dropping without padding (dynamic shapes): the host needs the tokens per
        # expert (all-to-all split sizes, the grouped GEMM's m_splits) and waits for them
        # (compute.host), after the reductions that count them and the copies that bring them over
        ops.append(Elementwise("moe_tokens_to_host", bytes=E * 8, host_sync=True,
                               kernels=MOE_KERNELS["preprocess"][0]))
    # a random-score router's busiest rank (moe_balance): every NCCL all-to-all waits for it
    busiest = moe_balance.sampled_imbalance(cfg, tokens)
    exchanged = moe_balance.sampled_imbalance(cfg, tokens, exchange=True) \
        if dispatcher == "alltoall" else 1.0  # its EP group's only; DeepEP/HybridEP: none
    wire = tokens * moe_wire_copies(cfg) * exchanged
    fanout = domain_fanout(cfg)
    elem = disp.dispatch_element_bytes(dispatcher, p.moe_dispatch_fp8, ACT)
    if p.ep > 1 and dispatcher == "allgather":  # every token of the EP group on every rank
        ops.append(Comm("moe.dispatch_all_gather", "all_gather", p.ep * tokens * h * elem, "ep"))
    elif p.ep > 1:
        dispatch = Comm("moe.dispatch_all_to_all", "all_to_all", wire * h * elem, "ep",
                        domain_fanout=fanout)
        ops.append(_beside(dispatch, shared[1]) if shared is not None and beside else dispatch)
    probs = disp.probs_all_to_all(cfg, wire)
    if probs is not None:
        ops.append(probs)
    if shared is not None and beside:  # fc1 and the activation, issued after the exchanges
        ops.extend(shared[1])
    if disp.permute_after_exchange(dispatcher):
        # DeepEP delivers tokens in source order: sorted here, back before the combine
        ops.extend(permute_ops)
    if hybrid:
        ops.extend(api_after)
    # Dropless: with uniform routing each rank receives as many copies as it sent, the busiest
    # moe_token_imbalance times that (a random-score router's sampled busiest rank at least,
    # moe_balance); a capacity factor caps it. Padding every expert to its
    # capacity makes the shapes static (Megatron-core --moe-pad-expert-input-to-capacity).
    recv = math.ceil(routed * max(m.moe_recv_factor(), busiest))
    if p.etp > 1:
        ops.append(Comm("moe.etp_all_gather", "all_gather", recv * p.etp * h * ACT, "etp"))
    rows = math.ceil(recv * p.etp / local)
    f = m.expert_ffn_size // p.etp
    gated = m.activation == "swiglu"
    style = moe_experts.check_style(experts) if gated else ""  # eager experts: moe_experts
    eager = style == "padded" or bool(titan)  # torchtitan's experts: w1 and w3 apart
    if style:  # their combine replaces the fused un-permute (moe_experts)
        unpermute_ops = [moe_experts.padded_combine(tokens, routed, h)] if eager else \
            moe_experts.index_add_combine(tokens, routed, h)
    fp8_pad = disp.fp8_padding_ops(rows * local, h) if disp.fp8_padding(cfg, dispatcher) else None
    if fp8_pad:
        ops.append(fp8_pad[0])
    if titan:
        ops.extend(moe_titan.expert_entry(titan, rows * local, h, p.ep))
    elif eager:
        ops.append(moe_experts.pad_permute(rows * local, h))
    for name in ("expert_fc1", "expert_fc3") if eager else ("expert_fc1",):
        linear(ops, sh, name, rows, f * (2 if gated and not eager else 1), h, batch=local,
              grouped=impl, ragged=ragged)
    # Automodel's GroupedExpertsDeepEP only: GroupedExperts (the all-gather path) adds both
    # biases inside its @torch.compile'd swiglu / quick_geglu with the matmuls
    # (nemo_automodel/components/moe/layers.py @ 89e3a9fd), no bias kernels of its own
    loop_profile = profile_supports(cfg, "moe_bias_loop")
    bias_loop = m.mlp_bias and loop_profile and dispatcher == "deepep"
    if bias_loop:  # a grouped GEMM without a bias epilogue: fc1's bias added expert by expert
        ops.append(expert_fc1_bias(rows, f * (2 if gated and not eager else 1), local))
    compiled_act = profile_supports(cfg, "moe_act_compiled")
    if gated and m.activation_clamp is not None and not compiled_act:
        # Megatron-core's eager clamp before its fused quick-GEGLU; a compiled activation
        # clamps inside its one kernel
        ops.append(clamp_op("expert_act_clamp", rows * local, f))
    if gated and m.glu_linear_offset and profile_supports(cfg, "glu_offset_host_sync"):
        # a GLU offset: Megatron-core's fused quick-GEGLU (ModelConfig.glu_linear_offset)
        ops.append(glu_offset_sync_op("expert_act_offset"))
    if titan:  # its scores weigh the outputs in the combine
        ops.append(moe_experts.eager_swiglu(rows * local, f))
    elif eager:
        ops.extend(moe_experts.eager_swiglu_ops(rows * local, f))
    elif style == "index_add":  # chunked halves; the weights after fc2 (moe_experts)
        ops.append(moe_experts.eager_swiglu(rows * local, f, chunked=True))
    else:
        ops.append(Elementwise("expert_act", bytes=rows * local * f * ACT * (3 if gated else 2),
                               bwd_kernels=MOE_KERNELS["expert_act"][1]))
        ops.extend(fp8_input_store(cfg, "expert_act", rows * local * 2 * f))
    linear(ops, sh, "expert_fc2", rows, h, f, batch=local, grouped=impl, ragged=ragged)
    if style == "index_add":
        ops.append(moe_experts.probs_mul(rows * local, h))
    if titan:
        ops.extend(moe_titan.expert_exit(titan, rows * local, h, p.ep))
    elif eager:
        ops.append(moe_experts.pad_unpermute(rows * local, h))
    if fp8_pad:
        ops.append(fp8_pad[1])
    if bias_loop or m.mlp_bias and impl == "multi_stream" and not loop_profile:
        ops.append(expert_fc2_bias(rows, h, local, disp.expert_prob_bytes(cfg, dispatcher)))
    if p.etp > 1:
        ops.append(Comm("moe.etp_reduce_scatter", "reduce_scatter", recv * p.etp * h * ACT, "etp"))
    if disp.permute_after_exchange(dispatcher):
        ops.extend(unpermute_ops)
    if hybrid:
        api_combine_before, api_combine_after = disp.hybridep_api_ops(cfg, tokens, "combine")
        ops.extend(api_combine_before)
    if p.ep > 1 and dispatcher == "allgather":
        ops.append(Comm("moe.combine_reduce_scatter", "reduce_scatter", p.ep * tokens * h * ACT,
                        "ep"))
    elif p.ep > 1:
        combine = Comm("moe.combine_all_to_all", "all_to_all", wire * h * ACT, "ep",
                       domain_fanout=fanout)
        if shared is not None and beside:  # fc2 beside the combine, its TP exit beside the
            ops.extend([_beside(combine, shared[2]), *shared[2]])  # unpermutation
            ops.extend(_beside(c, unpermute_ops) for c in shared[3])
        elif shared is not None and titan_beside:  # the whole block, then the combine's ops
            ops.append(replace(_beside(combine, shared[1] + shared[2]),
                               beside_in_backward=False))
            ops.extend(shared[0] + shared[1] + shared[2] + shared[3])
        else:
            ops.append(combine)
    if hybrid:
        ops.extend(api_combine_after)
    if disp.permute_before_exchange(dispatcher):
        ops.extend(unpermute_ops)
    if m.moe_latent_size:  # postprocess: latent -> h after the combine, before the shared add
        latent_proj(ops, sh, "moe_fc2_latent", tokens, m.hidden_size, h)
    if shared is not None and not beside and not titan_beside:
        ops.extend(shared[0] + shared[1] + shared[2] + shared[3])


def latent_proj(ops: list[Op], sh: Shard, name: str, tokens: int, n: int, k: int) -> None:
    """A latent MoE's ``fc1_latent_proj`` / ``fc2_latent_proj``: a TELinear with
    ``parallel_mode="duplicated"`` (NVIDIA/Megatron-LM@d98e8a64 moe_layer.py lines 266-300):
    whole weights on every TP rank, applied to the rank's own tokens (under SP its s/t), no TP
    collective; ``preprocess`` runs fc1 before ``dispatch_preprocess`` (lines 489-491),
    ``postprocess`` fc2 after ``combine_postprocess`` (lines 591-593)."""
    linear(ops, sh, name, tokens, n, k)


def _shared_experts(cfg: RunConfig, sh: Shard) -> tuple[list[Comm], list[Op], list[Op],
                                                         list[Comm]] | None:
    """The shared experts' ops (a TP-parallel dense MLP) in four parts: the entry (TP
    all-gather under SP); fc1 and the activation; fc2; the exit (TP reduction). None for a
    model without shared experts."""
    m = cfg.model
    shared = m.moe_shared_expert_intermediate_size
    if not shared:
        return None
    h, gated, pre = m.hidden_size, m.activation == "swiglu", SHARED_EXPERT_PREFIX
    entry: list[Op] = []
    tp_enter(entry, sh, h, f"{pre}expert")
    first: list[Op] = []
    linear(first, sh, f"{pre}fc1", sh.tokens, shared // sh.tp * (2 if gated else 1), h,
           seq_parallel="gather")
    first.append(Elementwise(f"{pre}act", bytes=sh.tokens * shared // sh.tp * ACT * 3))
    first.extend(fp8_input_store(cfg, f"{pre}act", sh.tokens * shared // sh.tp * 2))
    second: list[Op] = []
    linear(second, sh, f"{pre}fc2", sh.tokens, h, shared // sh.tp, seq_parallel="scatter")
    exit_: list[Op] = []
    tp_exit(exit_, sh, h, f"{pre}expert")
    return [c for c in entry if isinstance(c, Comm)], first, second, \
        [c for c in exit_ if isinstance(c, Comm)]


def _beside(exchange: Comm, part: list[Op]) -> Comm:
    """``exchange`` running beside ``part``, the compute the host issues after it on the other
    stream (an expert exchange beside the shared experts on Megatron-core's side stream, or
    their TP collective on the side stream beside the main stream's permutation;
    ``Comm.beside_next``: only what the part's compute cannot cover is exposed;
    ``layers.backward_of`` keeps the conjugate before the part's backward)."""
    return replace(exchange, beside_next=sum(not isinstance(op, Comm) for op in part))


def shared_expert_overlap(cfg: RunConfig) -> bool:
    """Whether the shared experts run beside the expert all-to-alls (Megatron-core
    ``moe_shared_expert_overlap``, ``parallel.moe_shared_expert_overlap``): only where the run
    states it; left out, off, Megatron-core's default (core_v0.16.0 transformer_config.py L550
    ``moe_shared_expert_overlap: bool = False``). Megatron-Bridge's DeepSeek, GLM-4.5, Kimi and
    Nemotron-H providers set it, but which provider a run used is not a framework's default
    (and its flex dispatcher clears it), so a run on them states it. Only a model with shared
    experts and expert parallelism has exchanges to hide."""
    m, p = cfg.model, cfg.parallel
    if not m.moe_shared_expert_intermediate_size or p.ep <= 1:
        return False
    return bool(p.moe_shared_expert_overlap)


def titan_style(cfg: RunConfig) -> str:
    """The run's framework's own MoE layer (profile ``moe_experts``, one of
    ``moe_titan.STYLES``), or ``""`` for Megatron-core's structure: also where the layer is not
    the one torchtitan builds (experts without SwiGLU, with gpt-oss's clamp and offset (its own
    module), a dispatcher other than the all-to-all, a capacity factor (torchtitan drops no
    token), a latent MoE)."""
    m, p = cfg.model, cfg.parallel
    framework = getattr(cfg.training, "framework", None)
    if not framework or m.activation != "swiglu" or m.moe_capacity_factor is not None \
            or m.moe_latent_size or m.activation_clamp is not None or m.glu_linear_offset \
            or p.moe_token_dispatcher_type != "alltoall":
        return ""
    return _profile_experts(str(framework), getattr(cfg.training, "framework_version", None))


def _shared_overlapped(cfg: RunConfig) -> tuple[str, ...]:
    """The dispatchers whose combine the run's framework hides behind its shared experts
    (profile ``moe_shared_combine_overlap``)."""
    framework = getattr(cfg.training, "framework", None)
    if not framework:
        return ()
    return framework_feature(str(framework), getattr(cfg.training, "framework_version", None),
                             "moe_shared_combine_overlap") or ()


@functools.cache
def _profile_experts(framework: str, version: str | None) -> str:
    from trainsim.catalog.frameworks import framework_profile  # data, read once per version

    return str(framework_profile(framework, version).defaults.get("moe_experts") or "")


@functools.cache
def _profile_grouped(framework: str, version: str | None, arch: str | None) -> GroupedImpl:
    from trainsim.catalog.frameworks import framework_profile  # data, read once per version

    return framework_profile(framework, version).grouped_gemm_for(arch) or ""


def grouped_gemm_impl(cfg: RunConfig) -> GroupedImpl:
    """How the run's framework runs the experts' GEMMs on the run's GPU (its profile's
    ``grouped_gemm``, or ``grouped_gemm_by_arch`` for the GPU's architecture: e.g.
    Megatron-core's ``TEGroupedMLP`` is Transformer Engine's per-expert ``multi_stream``);
    none named: one batched kernel (``""``)."""
    t = cfg.training
    framework = getattr(t, "framework", None)
    if not framework:
        return ""
    gpu = cfg.cluster.gpu
    arch = "amd" if gpu.vendor == "amd" else (f"sm{gpu.sm_arch}" if gpu.sm_arch else None)
    return _profile_grouped(str(framework), getattr(t, "framework_version", None), arch)


def moe_wire_copies(cfg: RunConfig) -> float:
    """Copies of one token the dispatch sends over EP. Node-limited routing sends a token once to
    each of at most M nodes, which fan it out over NVLink (DeepSeek-V3 §3.2.2); DeepEP does the
    same for any routing: one copy per distinct destination node, expected
    ``N (1 - (1 - 1/N)^k)`` for k experts spread uniformly over the N nodes of the EP group."""
    m, p, c = cfg.model, cfg.parallel, cfg.cluster
    k = m.moe_router_topk
    if m.moe_router == "fake_balanced" and disp.dedups_per_node(p.moe_token_dispatcher_type):
        return disp.fake_balanced_destinations(cfg)
    if not disp.dedups_per_node(p.moe_token_dispatcher_type):
        return float(k)  # one permuted copy per routed expert, whatever node it lies on
    nodes = max(1, p.ep * p.etp // c.gpus_per_domain)
    if nodes == 1:  # one NVLink domain: DeepEP's intranode kernel, a copy per destination rank
        return disp.destination_ranks(cfg)
    copies = float(min(k, m.moe_router_group_topk or k))
    return min(copies, nodes * (1 - (1 - 1 / nodes) ** k))


def domain_fanout(cfg: RunConfig) -> float:
    """Bytes a rank forwards inside its NVLink domain per byte its exchange sends across
    domains (``Comm.domain_fanout``): the node copies it sends arrive, by symmetry, as many
    at its own forwarder, which delivers each to the destination ranks of its node
    (``disp.destination_ranks`` copies of a token in all, DeepEP v1.2.1 csrc/kernels/
    internode.cu). 0 for a one-stage exchange: another dispatcher, a single domain, or the
    fake-balanced gate (whose copies ``moe_wire_copies`` counts per rank already)."""
    m, p, c = cfg.model, cfg.parallel, cfg.cluster
    if not disp.dedups_per_node(p.moe_token_dispatcher_type) or m.moe_router == "fake_balanced":
        return 0.0
    if p.ep * p.etp <= c.gpus_per_domain:
        return 0.0
    return disp.destination_ranks(cfg) / moe_wire_copies(cfg)
