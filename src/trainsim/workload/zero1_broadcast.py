"""ZeRO-1 parameters shared after the step by broadcasts, one per owner rank
(``parallel.zero1_param_sync = "broadcast"``), as InternEvo's HybridZeroOptimizer does it.

InternLM/InternEvo@c18bec9 (2023-07-08) internlm/solver/optimizer/hybrid_zero_optim.py:

* ``_partition_param_list`` (L272-297) owns whole tensors: the parameter group's tensors sorted
  by size, largest first, each given to the rank of the zero1 group that holds the fewest
  elements so far (``numel_per_rank.index(min(numel_per_rank))``, the lowest such rank); a
  rank given none is recorded in ``no_params_ranks`` (more ranks than tensors);
* each rank's tensors are flattened into one 16-bit buffer (L204-212);
* ``_step`` (L606-622) updates the rank's own buffer, then ``broadcast_params(overlap=False)``
  (L629-649): for every rank of the group that owns parameters, ``dist.broadcast`` of its flat
  buffer from that rank over the zero1 group, ``async_op=True``, then every handle waited on
  before the step returns ("TODO: support broadcast overlap"). The broadcasts run one after
  another on the group's one NCCL communicator, nothing of the next forward beside them.

So a group of ``n`` ranks runs ``min(n, tensors)`` broadcasts, each of one owner's elements:
beyond as many ranks as tensors, each tensor is a broadcast of its own.

torch's ``ZeroRedundancyOptimizer`` (torch.distributed.optim, since 1.8; read at the installed
torch 2.13, torch/distributed/optim/zero_redundancy_optimizer.py), PyTorch's own ZeRO-1 beside
DistributedDataParallel (``data_parallel_impl`` ddp, zero_stage 1): DDP all-reduces the whole
gradient as at stage 0; ``step`` (L1124-1150) runs the wrapped optimizer over the rank's own
whole tensors (``_local_step``; the same greedy partition, :func:`owner_tensors`), then
``_sync_params`` (L813-826): for every rank, ``dist.broadcast(param.data, src=rank,
async_op=True)`` of each of its parameters (``_broadcast_params_from_rank`` L760-811, with
``parameters_as_bucket_view=False``, the default; one bucket per rank where it is True), all
waited on before ``step`` returns: one fp32 broadcast per tensor, in series on the group's
communicator, after the step. ``overlap_with_ddp`` (off by default, L383) would move the step
into DDP's communication hook: not modelled.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable

from trainsim.config import RunConfig
from trainsim.model.counts import norm_tensors
from trainsim.workload.pipeline_schedules import rank_chunks
from trainsim.workload.sharding import end_matrices, rank_tensors
from trainsim.workload.vocab import rank_vocab


def owner_tensors(tensors: Iterable[float], ranks: int) -> list[list[float]]:
    """The tensors (elements) each rank of a group of ``ranks`` owns under the greedy rule
    (largest tensor first, to the least-loaded rank, the lowest on a tie), per rank in rank
    order, each rank's in the order it was given them. InternEvo's ``_partition_param_list``
    and torch's ``ZeroRedundancyOptimizer._partition_parameters`` (torch 2.13
    torch/distributed/optim/zero_redundancy_optimizer.py L681-697: ``sorted(..., key=numel,
    reverse=True)``, ``_get_min_index(sizes)``, the first least-loaded rank) both so."""
    if ranks < 1:
        raise ValueError(f"a zero1 group has at least one rank, got {ranks}")
    owned: list[list[float]] = [[] for _ in range(ranks)]
    loads = [0.0] * ranks
    heap = [(0.0, r) for r in range(ranks)]  # (elements held, rank): the least-loaded first
    for n in sorted((float(t) for t in tensors if t > 0), reverse=True):
        held, r = heapq.heappop(heap)
        loads[r] = held + n
        owned[r].append(n)
        heapq.heappush(heap, (loads[r], r))
    return owned


def owner_loads(tensors: Iterable[float], ranks: int) -> list[float]:
    """Elements each rank of a group of ``ranks`` owns under ``_partition_param_list``'s greedy
    rule (:func:`owner_tensors`), for the ranks that own any, in rank order."""
    return [sum(own) for own in owner_tensors(tensors, ranks) if own]


def stage_tensors(cfg: RunConfig, layers: Iterable[int], first: bool, last: bool
                  ) -> tuple[list[float], list[float]]:
    """(non-expert, routed-expert) parameter tensors a rank of a pipeline stage holds, in
    elements: its layers' (``sharding.rank_tensors``, TP-sharded, as the model's
    ``fused_gate_up`` and biases lay them out), the vocabulary matrices of the first and last
    stage and the last stage's final norm (replicated over TP; InternLM-7B: 32 x 9 + 3 = 291
    tensors, the embedding, the final norm and the head), with a learned position table on
    the first (GPT-2's ``wpe``, whole on every TP rank)."""
    m = cfg.model
    tensors = rank_tensors(cfg, list(layers))
    ends = [float(rank_vocab(cfg) * m.hidden_size)] * end_matrices(cfg, first, last)
    if first and m.position_embedding == "learned":
        ends.append(float(m.max_position_embeddings * m.hidden_size))
    ends += [float(m.hidden_size)] * (norm_tensors(m) if last else 0)
    return [n for n, e in tensors if not e] + ends, [n for n, e in tensors if e]


def busiest_owner(cfg: RunConfig, stage: int) -> tuple[float, int]:
    """(share of the stage's parameter elements, tensors) of the rank that owns the most under
    the greedy rule (:func:`owner_tensors`) over the ``dp_cp`` sharding ranks: what
    ``ZeroRedundancyOptimizer``'s step and state hold on its busiest rank (1.0 and every tensor
    over one rank)."""
    p = cfg.parallel
    chunks = rank_chunks(p.pipeline_schedule, stage, p.pp, p.vpp)
    layers = [i for v in chunks for i in cfg.virtual_ranges[v]]
    dense, experts = stage_tensors(cfg, layers, 0 in chunks, p.pp * p.vpp - 1 in chunks)
    tensors = dense + experts
    busiest = max(owner_tensors(tensors, max(cfg.shard_ranks, 1)), key=sum)
    return sum(busiest) / max(sum(tensors), 1.0), len(busiest)
