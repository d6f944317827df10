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
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable

from trainsim.config import RunConfig
from trainsim.model.counts import norm_tensors
from trainsim.workload.sharding import end_matrices, rank_tensors
from trainsim.workload.vocab import rank_vocab


def owner_loads(tensors: Iterable[float], ranks: int) -> list[float]:
    """Elements each rank of a group of ``ranks`` owns under ``_partition_param_list``'s greedy
    rule (largest tensor first, to the least-loaded rank, the lowest on a tie), for the ranks
    that own any, in rank order."""
    if ranks < 1:
        raise ValueError(f"a zero1 group has at least one rank, got {ranks}")
    loads = [0.0] * ranks
    heap = [(0.0, r) for r in range(ranks)]  # (elements held, rank): the least-loaded first
    for n in sorted((float(t) for t in tensors if t > 0), reverse=True):
        held, r = heapq.heappop(heap)
        loads[r] = held + n
        heapq.heappush(heap, (loads[r], r))
    return [x for x in loads if x > 0]


def stage_tensors(cfg: RunConfig, layers: Iterable[int], first: bool, last: bool
                  ) -> tuple[list[float], list[float]]:
    """(non-expert, routed-expert) parameter tensors a rank of a pipeline stage holds, in
    elements: its layers' (``sharding.rank_tensors``, TP-sharded, as the model's
    ``fused_gate_up`` and biases lay them out), the vocabulary matrices of the first and last
    stage and the last stage's final norm (replicated over TP; InternLM-7B: 32 x 9 + 3 = 291
    tensors, the embedding, the final norm and the head)."""
    m = cfg.model
    tensors = rank_tensors(cfg, list(layers))
    ends = [float(rank_vocab(cfg) * m.hidden_size)] * end_matrices(cfg, first, last)
    ends += [float(m.hidden_size)] * (norm_tensors(m) if last else 0)
    return [n for n, e in tensors if not e] + ends, [n for n, e in tensors if e]
