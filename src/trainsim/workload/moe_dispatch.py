"""What each MoE token dispatcher backend does around its exchange: where the tokens are sorted
by local expert, whether a token crosses to a remote NVLink domain once or once per expert, and
whether the dispatch may travel in fp8.

Megatron-core's dispatchers (megatron/core/transformer/moe/token_dispatcher.py, core_v0.16.0):

- ``alltoall`` (``MoEAlltoAllTokenDispatcher``) and ``allgather`` permute locally before the
  exchange and unpermute after it (TE ``moe_permute_with_probs`` / ``moe_unpermute``).
- ``deepep`` (flex dispatcher, ``_DeepepManager``): DeepEP's fused dispatch sends one copy per
  destination node and delivers tokens in source order; the manager then sorts them by local
  expert (``get_permuted_hidden_states_by_experts``) and restores the order before the combine
  (``get_restored_hidden_states_by_experts``), both TE permute kernels.
- ``hybridep`` (flex dispatcher with ``moe_flex_dispatcher_backend="hybridep"``,
  ``_HybridEPManager``, core >= 0.16): ``HybridEPBuffer.dispatch_with_permute`` and
  ``combine_with_unpermute`` (deepseek-ai/DeepEP ``hybrid-ep`` branch, called from
  megatron/core/transformer/moe/fused_a2a.py) sort the tokens by local expert themselves, so the
  manager's permute hooks return their input unchanged; the exchange is hierarchical like
  DeepEP's (NVLink inside the domain, one copy per remote domain) and the dispatch stays 16-bit
  (``init_hybrid_ep_buffer`` asserts ``not fp8_dispatch``). Its kernels hold
  ``moe_hybridep_num_sms`` SMs (16 by default, 32 in Megatron-Bridge's perf recipes since
  v0.3.0), the same order as a collective beside compute (``pricing.COMM_SMS``). Around its
  exchange kernels its Torch API runs more GPU work (``hybridep_api_ops``): the routing-map
  all-gather, the metadata preprocessing and its host wait, a staging copy across domains, and
  a standalone permute and unpermute kernel.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from trainsim.catalog.frameworks import profile_supports
from trainsim.workload.ops import ACT_BYTES, Comm, Elementwise, Op

if TYPE_CHECKING:
    from trainsim.config import RunConfig

#: dispatchers whose own API sorts tokens by local expert (no TE permute: ``hybridep_api_ops``)
FUSED_PERMUTE = frozenset({"hybridep"})
#: dispatchers that send a token once per destination NVLink domain and fan it out there
NODE_DEDUP = frozenset({"deepep", "hybridep"})
#: dispatchers that cannot send the dispatch in fp8
NO_FP8_DISPATCH = frozenset({"hybridep"})


def permute_before_exchange(dispatcher: str) -> bool:
    """The local permute runs before the exchange (``alltoall``, ``allgather``)."""
    return dispatcher not in FUSED_PERMUTE and dispatcher not in NODE_DEDUP


def permute_after_exchange(dispatcher: str) -> bool:
    """The local permute runs after the exchange, on tokens in source order (``deepep``)."""
    return dispatcher in NODE_DEDUP and dispatcher not in FUSED_PERMUTE


def fp8_padding(cfg: RunConfig, dispatcher: str) -> bool:
    """Whether fp8 experts copy their tokens in and out to pad each expert's rows to the fp8
    alignment (16 rows, 32 for MXFP8): Megatron-core's ``TEGroupedMLP`` runs Transformer
    Engine's ``Fp8Padding`` and ``Fp8Unpadding`` (``fused_multi_row_padding``: every row read
    and written, forward and backward) unless every expert's count is already aligned
    (profile ``moe_fp8_padding``). Dropless routing leaves the counts unaligned unless the
    dispatcher pads them: HybridEP's dispatch, DeepEP's permute from Megatron-core 0.17
    (``moe_deepep_permute_pads``); padding to the capacity (``moe_pad_expert_input_to_capacity``)
    leaves them static."""
    if cfg.training.dtype != "fp8" or cfg.model.moe_padded_to_capacity:
        return False
    if not profile_supports(cfg, "moe_fp8_padding") or dispatcher in FUSED_PERMUTE:
        return False
    return not (dispatcher == "deepep" and profile_supports(cfg, "moe_deepep_permute_pads"))


def fp8_padding_ops(rows: int, hidden: int) -> tuple[Elementwise, Elementwise]:
    """``Fp8Padding`` of the ``rows`` routed tokens (and of their probabilities: a second,
    tiny kernel) and ``Fp8Unpadding`` of the experts' output; each backward runs the other
    copy on the gradient."""
    copy = rows * hidden * ACT_BYTES * 2
    return (Elementwise("expert_fp8_pad", bytes=copy, kernels=2, bwd_bytes=copy),
            Elementwise("expert_fp8_unpad", bytes=copy, kernels=1, bwd_bytes=copy))


EXCHANGE_SMS = {"deepep": 20, "hybridep": 16}
"""SMs the fused exchange kernels of a dispatcher backend hold while they run: Megatron-core's
``moe_deepep_num_sms`` (20, core_v0.13.0-core_v0.17.0 transformer_config.py, passed to
``Buffer.set_num_sms``; DeepEP's own ``Buffer.num_sms`` default is 20 too, deepseek-ai/DeepEP
v1.2.1 deep_ep/buffer.py; a run may set another, ``parallel.moe_deepep_num_sms``) and
``moe_hybridep_num_sms`` (16, core_v0.16.0-core_v0.17.0, given to
``hybrid_ep_dispatch`` as ``num_sms_dispatch_api``/``num_sms_combine_api``; a run or its
profile may set another, ``parallel.moe_hybridep_num_sms``). DeepEP's normal
kernels run as one cooperative grid of that many blocks for the whole exchange (csrc/kernels/
internode.cu: a sender and a forwarder SM per channel); the NCCL all-to-all of the other
dispatchers takes its p2p channels' blocks (``collectives.ep_kernels.ep_a2a_sms``). Inside one NVLink domain
DeepEP's exchange is bound by these SMs (``collectives.ep_kernels``)."""


def exchange_sms(cfg: RunConfig) -> int | None:
    """SMs the run's dispatcher's exchange kernels hold beside compute (``EXCHANGE_SMS``, or
    as ``parallel.moe_deepep_num_sms`` / ``moe_hybridep_num_sms`` set it); None for a
    dispatcher whose exchange is an NCCL collective."""
    p = cfg.parallel
    if p.moe_token_dispatcher_type == "hybridep" and p.moe_hybridep_num_sms is not None:
        return p.moe_hybridep_num_sms
    if p.moe_token_dispatcher_type == "deepep" and p.moe_deepep_num_sms is not None:
        return p.moe_deepep_num_sms
    return EXCHANGE_SMS.get(p.moe_token_dispatcher_type)


def ep_stride(cfg: RunConfig) -> int:
    """Ranks between two neighbours of an expert-parallel group in the job's rank order.
    Megatron-core 0.9 builds every group from one ``RankGenerator`` over ``tp-cp-ep-dp-pp``,
    the expert group carved out of the data-parallel ranks: stride TP x CP (core_v0.9.0
    parallel_state.py L271-279 sizes, L362 the order, L832 ``generator_wrapper('ep',
    independent_ep=True)``; profile ``moe_ep_stride_tp_cp``). From core_v0.10.0 the experts
    have a generator of their own (tp = expert TP, cp = 1, the same order, L642-662): stride
    the expert TP, Megatron-core's etp-ep-edp-pp."""
    p = cfg.parallel
    return p.tp * p.cp if profile_supports(cfg, "moe_ep_stride_tp_cp") else p.etp


def dedups_per_node(dispatcher: str) -> bool:
    """A token crosses to each remote NVLink domain once, whatever experts it goes to there."""
    return dispatcher in NODE_DEDUP


def dispatch_element_bytes(dispatcher: str, fp8_dispatch: bool, act_bytes: int) -> int:
    """Bytes per element of the dispatched tokens."""
    return 1 if fp8_dispatch and dispatcher not in NO_FP8_DISPATCH else act_bytes


def fake_balanced_destinations(cfg: RunConfig) -> float:
    """Copies of a token a per-destination dispatcher (DeepEP: one copy per destination rank
    inside the NVLink domain, ``is_token_in_rank``; one per remote domain across it) sends under
    Automodel's ``FakeBalancedGate``: token t's experts are t*k ... t*k+k-1 modulo E, and
    expert parallelism gives each rank a contiguous block of E / ep experts, so a token meets
    the ranks (or NVLink domains) its k contiguous experts span, averaged over the E / gcd(E, k)
    tokens after which the pattern repeats."""
    m, p, c = cfg.model, cfg.parallel, cfg.cluster
    experts, k = m.num_experts or 1, m.moe_router_topk
    block = experts // p.ep  # experts of one rank
    ranks = p.ep * p.etp
    if ranks > c.gpus_per_domain:  # across domains: one copy per domain
        block *= max(1, c.gpus_per_domain // p.etp)
    period = experts // math.gcd(experts, k)
    spans = sum(len({(t * k + j) % experts // block for j in range(k)}) for t in range(period))
    return spans / period


def destination_ranks(cfg: RunConfig) -> float:
    """Distinct EP ranks a token's experts lie on, the copies a per-destination dispatcher
    delivers: DeepEP's kernels send a token once to each rank that holds one of its experts
    (``get_dispatch_layout`` -> ``is_token_in_rank``; intranode.cu copies a token per rank,
    internode.cu forwards it once per rank of the destination node; deepseek-ai/DeepEP v1.2.1
    csrc/kernels/), and the expert permute after the exchange makes the per-expert rows. For
    k experts spread uniformly over the r ranks a token can reach (its at most
    ``moe_router_group_topk`` nodes' ranks under node-limited routing), ``r (1 - (1 - 1/r)^k)``."""
    m, p, c = cfg.model, cfg.parallel, cfg.cluster
    k = m.moe_router_topk
    nodes = max(1, p.ep * p.etp // c.gpus_per_domain)
    reach = p.ep
    if nodes > 1 and m.moe_router_group_topk and m.moe_router_group_topk < nodes:
        reach = p.ep // nodes * m.moe_router_group_topk
    if reach <= 1:
        return 1.0
    return min(float(k), reach * (1 - (1 - 1 / reach) ** k))


def split_sizes_gather(cfg: RunConfig) -> Comm | None:
    """The all-to-all dispatcher's exchange of the routing counts before its exchange of tokens:
    ``MoEAlltoAllTokenDispatcher.preprocess`` all-gathers every rank's tokens per expert
    (``num_local_tokens_per_expert``, int64, one per expert) over the expert tensor-and-model
    parallel group (``gather_from_sequence_parallel_region(..., group=self.tp_ep_group)``,
    core_v0.13.0-core_v0.17.0 megatron/core/transformer/moe/token_dispatcher.py) on the compute
    stream, and the host then waits for the split sizes it yields (``before_ep_alltoall``).
    It runs whenever the group has more than one rank, dropless or dropping without padding;
    the tensor carries no gradient, so nothing runs in the backward. Padded to the capacity
    (``moe_pad_expert_input_to_capacity``) every count is the capacity, known on the host:
    ``preprocess`` returns before the gather in every release (``if self.drop_and_pad: ...
    return num_tokens_per_local_expert``, core_v0.9.0 L398-410, core_v0.10.0 L354-373,
    core_v0.13.0 L440-463, core_v0.17.1 L487-510; ``capacity_counts_op`` is what it runs). The
    flex dispatchers (DeepEP, HybridEP) count inside their own notify kernels instead."""
    p, m = cfg.parallel, cfg.model
    ranks = p.ep * p.etp
    if p.moe_token_dispatcher_type != "alltoall" or ranks < 2 or m.moe_padded_to_capacity:
        return None
    return Comm("moe.tokens_per_expert_all_gather", "all_gather",
                ranks * (m.num_experts or 1) * 8, "ep", grad_bytes=0)


def capacity_counts_op(cfg: RunConfig) -> Elementwise | None:
    """The one kernel the all-to-all dispatcher's ``preprocess`` launches when it pads every
    expert to its capacity, in place of the dropless path's counting, gather and copies
    (``moe_block.MOE_KERNELS['preprocess']``): core_v0.9.0-core_v0.11.0 count the tokens per
    expert before the padded branch returns (0.9 ``torch.histc`` of the indices,
    token_dispatcher.py L387-394, ``torch.bincount`` under ``deterministic_mode``; 0.10-0.11
    ``routing_map.sum(dim=0)``, core_v0.10.0 L352, core_v0.11.0 L355), and from core_v0.12.0
    the count moves after the return (L399) and the branch's only device work is ``torch.full`` of the per-rank counts on ``permute_idx_device`` (core_v0.13.0 L457-462:
    the GPU under ``moe_permute_fusion``, the host otherwise; core_v0.11.0 runs both). One
    kernel stands for each of these; its bytes are the counts it writes. No backward, no host
    wait (``cuda_sync_point`` stays ``no_sync``)."""
    m, p = cfg.model, cfg.parallel
    if not m.moe_padded_to_capacity or p.moe_token_dispatcher_type != "alltoall":
        return None
    return Elementwise("moe_capacity_counts", bytes=(m.num_experts or 1) * 8, kernels=1,
                       bwd_bytes=0.0, bwd_kernels=0)


def routing_map_gather(cfg: RunConfig, tokens: int) -> Comm | None:
    """HybridEP's exchange of the routing map before its first dispatch of a micro-batch's
    layer: ``dispatch_with_permute`` without a handle runs ``metadata_preprocessing``, which
    all-gathers every rank's boolean routing map (tokens x experts, one byte each) over the
    expert-parallel group (``Executor::allgather_routing_map``: ``torch.distributed.
    all_gather_into_tensor``; a custom NVLink all-gather inside one domain when enabled, off by
    default; deepseek-ai/DeepEP hybrid-ep a484936-17cfb81 csrc/hybrid_ep/executor/executor.cu,
    from c9f647d deep_ep/hybrid_ep_buffer.py) and builds the dispatch's maps from it. Megatron-core
    calls it so on every forward dispatch (core_v0.16.0 megatron/core/transformer/moe/fused_a2a.py
    ``HybridEPDispatch.forward``); the combine and both backwards reuse the handle. No gradient."""
    p, m = cfg.parallel, cfg.model
    ranks = p.ep * p.etp
    if p.moe_token_dispatcher_type != "hybridep" or ranks < 2:
        return None
    return Comm("moe.routing_map_all_gather", "all_gather",
                ranks * tokens * (m.num_experts or 1), "ep", grad_bytes=0)


INDEX_BYTES = 4
"""HybridEP's preprocessing writes its token maps as int32 (``sparse_to_dense_map``,
``dense_to_expert_map``: ``torch::kInt32`` in ``Executor::metadata_preprocess_core``)."""

PROB_BYTES = 4
"""HybridEP takes and returns the routing probabilities in fp32 (``_HybridEPManager.dispatch``
casts them: "HybridEP only supports float32 probs"; hybrid_ep.cu asserts ``kFloat32``)."""


def hybridep_api_ops(cfg: RunConfig, tokens: int, phase: str, permute: bool = True
                     ) -> tuple[list[Op], list[Op]]:
    """(before, after): what HybridEP's Torch API runs on the compute stream around its
    ``phase`` ("dispatch" or "combine") exchange kernel, for a rank routing ``tokens`` tokens
    (deepseek-ai/DeepEP hybrid-ep 1dddd19-94a9f8f deep_ep/hybrid_ep_buffer.py, csrc/hybrid_ep/
    hybrid_ep.cu and executor/executor.cu). ``permute``: Megatron-core's
    ``dispatch_with_permute``/``combine_with_unpermute`` (core_v0.16.0-core_v0.17.1 fused_a2a.py;
    core_v0.17.1's ``moe_permute_fusion_into_hybridep`` fuses the permute, default off); else the
    plain ``dispatch``/``combine`` the hybrid-ep README's "Torch API" figures time
    (tests/test_hybrid_ep.py @1dddd19: ``buffer.dispatch`` without a handle).

    Dispatch, before the kernel: the routing map's all-gather (``routing_map_gather``); the
    metadata preprocessing (``Executor::metadata_preprocess_core``: one kernel over the gathered
    map, ranks x tokens x experts bytes, which writes each rank's tokens x local-experts map (one
    byte each) and the int32 ``sparse_to_dense_map`` (ranks x tokens), and on the permute path
    the int32 ``dense_to_expert_map`` (ranks x tokens x local experts); the permute path adds a
    second kernel, ``pad_tokens_per_expert``: 17cfb81-94a9f8f; a0d27f1-1b8f467 ran a separate
    ``permute_preprocessing`` between them, a third), after which the
    host waits for the received-token count (``cudaStreamSynchronize`` on pinned memory when no
    ``num_permuted_tokens`` is given, Megatron's dropless case; ``.item()`` in the plain
    dispatch); across NVLink domains a staging copy of the tokens and fp32 probabilities into the
    registered buffer (``Executor::dispatch_preprocess``, ``cudaMemcpyAsync``). After it: the
    permute kernel, which reads each received token once per rank (``destination_ranks``) from
    the buffer and writes a row per local expert (``dispatch_postprocess``, ``permute_launcher``),
    or the plain API's device-to-device copy of the received tokens and their probabilities out
    of the buffer. Combine, before the kernel: the unpermute (a row per local expert read, one
    per rank written into the buffer; ``combine_preprocess``, ``unpermute_launcher``), or the
    plain API's copy into the buffer; the combine kernel writes its output itself."""
    m, p, c = cfg.model, cfg.parallel, cfg.cluster
    h, experts = m.expert_input_size, m.num_experts or 1
    ranks = p.ep * p.etp
    recv = tokens * destination_ranks(cfg)  # a copy per destination rank, by symmetry
    local = experts // p.ep
    per_domain = min(ranks, c.gpus_per_domain)  # the plain API returns a prob per domain expert
    staged = ranks > c.gpus_per_domain
    if phase == "combine":
        # its backward dispatches the gradient through the same staging (no probs): an op
        # after the combine, so that its backward runs before the gradient's dispatch
        after = [Elementwise("hybridep_stage_in_grad", bytes=0.0, kernels=0,
                             bwd_bytes=2 * tokens * h * ACT_BYTES, bwd_kernels=1)] \
            if staged else []
        if permute:
            rows = (tokens * m.moe_router_topk + recv) * h * ACT_BYTES
            return [Elementwise("unpermute", bytes=rows, bwd_bytes=rows)], after
        copy = 2 * recv * (h * ACT_BYTES + local * per_domain * PROB_BYTES)
        return [Elementwise("hybridep_copy_in", bytes=copy, kernels=2)], after
    before: list[Op] = []
    gather = routing_map_gather(cfg, tokens)
    if gather is not None:
        before.append(gather)
    sync = not permute or not m.moe_padded_to_capacity
    meta = ranks * tokens * (experts + local + INDEX_BYTES * (1 + (local if permute else 0)))
    before.append(Elementwise("moe_tokens_to_host", bytes=meta, kernels=2 if permute else 1,
                              host_sync=sync, bwd_bytes=0, bwd_kernels=0))
    if staged:  # the dispatch's backward (a combine) stages nothing
        stage = 2 * tokens * (h * ACT_BYTES + experts * PROB_BYTES)
        before.append(Elementwise("hybridep_stage_in", bytes=stage, kernels=2,
                                  bwd_bytes=0.0, bwd_kernels=0))
    if permute:
        rows = (recv + tokens * m.moe_router_topk) * h * ACT_BYTES
        return before, [Elementwise("permute", bytes=rows, bwd_bytes=rows)]
    copy = 2 * recv * (h * ACT_BYTES + local * per_domain * PROB_BYTES)
    return before, [Elementwise("hybridep_copy_out", bytes=copy, kernels=2)]


ROUTER_DTYPE_BYTES = {None: ACT_BYTES, "fp32": 4, "fp64": 8}
"""Bytes of a routing probability by ``parallel.moe_router_dtype``: the router computes its
logits in that dtype (``router_gating_linear(..., router_dtype)``, core_v0.13.0
megatron/core/transformer/moe/router.py ``gating``) and the dispatcher permutes and sends the
probabilities without a cast; None (Megatron-core's default) keeps them 16-bit."""


FLEX_DISPATCHERS = ("deepep", "hybridep")
"""Dispatchers that exchange the routing probabilities in fp32 whatever the router's dtype:
Megatron-core's ``_DeepepManager`` and ``_HybridEPManager`` (and NeMo Automodel's copies)
cast them, "DeepEP/HybridEP only supports float32 probs" (core_v0.17.0
megatron/core/transformer/moe/token_dispatcher.py L1033-1039, L1178-1184; Automodel
nemo_automodel/components/moe/megatron/token_dispatcher.py @ 89e3a9fd L164-170). Only
``_DeepepManager`` casts the permuted ones back to fp64 for an fp64 router (L1318-1319);
``_HybridEPManager`` hands the experts its fp32 ``dispatched_probs`` as they came (L1084-1085:
``get_permuted_hidden_states_by_experts`` returns them unchanged)."""


def expert_prob_bytes(cfg: RunConfig, dispatcher: str) -> int:
    """Bytes of one routing probability as the experts receive it: the router's dtype
    (``ROUTER_DTYPE_BYTES``); fp32 after HybridEP, whatever the router's (an fp64 router's
    probabilities cast down); at least fp32 after DeepEP, which casts fp64 back
    (``FLEX_DISPATCHERS``)."""
    router = ROUTER_DTYPE_BYTES[cfg.parallel.moe_router_dtype]
    if dispatcher == "hybridep":
        return 4
    return max(router, 4) if dispatcher == "deepep" else router


def probs_all_to_all(cfg: RunConfig, copies: float) -> Comm | None:
    """The all-to-all dispatcher's second exchange, of ``copies`` routing probabilities (one
    per token copy the rank sends): since Megatron-core 0.12.1 the probabilities travel with the
    tokens and weigh the expert's output inside the expert (profile ``moe_probs_in_expert``),
    so ``MoEAlltoAllTokenDispatcher.token_dispatch`` sends the permuted probabilities by an
    all-to-all of their own after the tokens' one (``global_probs = all_to_all(self.ep_group,
    permuted_probs, ...)``, core_v0.12.1 and core_v0.13.0-core_v0.16.0 megatron/core/transformer/moe/
    token_dispatcher.py); their gradient comes back the same way in the backward. The flex
    dispatchers (DeepEP, HybridEP) carry the probabilities inside their token exchange."""
    if cfg.parallel.moe_token_dispatcher_type != "alltoall" or cfg.parallel.ep < 2 or \
            not profile_supports(cfg, "moe_probs_in_expert"):
        return None
    probs_bytes = ROUTER_DTYPE_BYTES[cfg.parallel.moe_router_dtype]
    return Comm("moe.dispatch_probs_all_to_all", "all_to_all", copies * probs_bytes, "ep")


CHUNK_SORT_KERNELS = (1, 1)
"""Kernels (forward, backward) of one sort of the all-to-all dispatcher's received tokens by
local expert: Transformer Engine's ``moe_sort_chunks_by_index`` (v2.5 pytorch/permutation.py
``_moe_chunk_sort``: ``sort_chunks_by_idx`` forward, ``sort_chunks_by_map`` backward, the
probabilities in the same kernel)."""


def sorts_chunks(dispatcher: str, local_experts: int) -> bool:
    """Whether the dispatcher sorts the tokens it received by local expert after its exchange,
    and back before the combine: only Megatron-core's ``MoEAlltoAllTokenDispatcher``, where the
    rank holds more than one expert (core_v0.13.0-core_v0.15.0 megatron/core/transformer/moe/
    token_dispatcher.py ``dispatch_postprocess`` and ``combine_preprocess``, ``if
    self.num_local_experts > 1``: ``sort_chunks_by_idxs``). The all-gather dispatcher permutes
    the gathered tokens for its local experts in one ``permute`` (``dispatch_postprocess``), and
    the flex dispatcher's managers (DeepEP, HybridEP) permute the tokens DeepEP delivers
    (``get_permuted_hidden_states_by_experts``): neither sorts chunks."""
    return dispatcher == "alltoall" and local_experts > 1


def permute_extra_kernels(cfg: RunConfig, dispatcher: str, local_experts: int
                          ) -> tuple[tuple[int, int], tuple[int, int]]:
    """(forward, backward) kernels the permute and the unpermute add to the counts of
    ``workload.moe_block.MOE_KERNELS`` (Transformer Engine 2.5's ``moe_permute_with_probs`` and
    ``moe_unpermute``, no chunk sort):

    * the chunk sort and unsort (``sorts_chunks``): ``CHUNK_SORT_KERNELS`` each, or under token
      dropping padded to the capacity (``drop_and_pad``, core_v0.14.0 token_dispatcher.py,
      ``moe_pad_expert_input_to_capacity``) a ``transpose(0, 1).contiguous()`` copy each way, of the
      tokens and, on the dispatch side, of the probabilities that travel with them
      (Megatron-core >= 0.12.1, profile ``moe_probs_in_expert``);
    * Transformer Engine >= 2.6 (profile ``moe_te_permute_maps``) builds every permutation's
      row-id map in three passes, not two (transformer_engine/pytorch/triton/permutation.py
      ``make_row_id_map``: ``_row_id_map_pass_1/2/3_kernel``; v2.5 passes 1 and 2), and sorts
      chunks by first building a map and then sorting by it (pytorch/permutation.py
      ``_moe_chunk_sort.forward``: ``make_chunk_sort_map``, ``sort_chunks_by_map``). The
      backwards reuse the saved maps (unchanged)."""
    te_maps = profile_supports(cfg, "moe_te_permute_maps")
    sort = unsort = (0, 0)
    if sorts_chunks(dispatcher, local_experts):
        if cfg.model.moe_padded_to_capacity:  # drop_and_pad: plain copies
            probs = int(profile_supports(cfg, "moe_probs_in_expert"))
            sort, unsort = (1 + probs, 1 + probs), (1, 1)
        else:
            sort = unsort = (CHUNK_SORT_KERNELS[0] + int(te_maps), CHUNK_SORT_KERNELS[1])
    return (sort[0] + int(te_maps), sort[1]), unsort
