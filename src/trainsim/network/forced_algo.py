"""A forced ``cluster.nccl_algo`` that a group of the run cannot run, refused from the config
alone (collfab61, robust61's Lead 1).

NCCL_ALGO binds every collective of the job (``network.analytical.AnalyticalNetwork.collective``
refuses the run at the first collective a group cannot run it on), but a refusal that depends
on a group's shape (tree, PAT or NVLS-Tree inside one node; NVLS across nodes; PAT with more
than one rank a node) came only when that collective was priced, so the service queued the
job and failed it later. Here the run's groups are placed as the pricer places them
(``pricing.Pricer.spans``: the tensor-parallel group ``span(tp, 1)``, the data-parallel group
``span(dp, tp)``) and a forced algorithm is refused where it can run none of all_reduce,
all_gather and reduce_scatter on a group that prices one of them every step: tensor
parallelism's all-reduce or all-gather / reduce-scatter, data parallelism's gradient
all-reduce or reduce-scatter. Only those two groups, and the data-parallel one without context
parallelism or HSDP replicas (whose gradient group is another span), so nothing the pricer
takes is refused; a group whose shape lets the algorithm run one of the three kinds (tree
across nodes: all_reduce only) is left to the pricer, which knows the kind. The message is the
pricer's own, from the same call."""

from __future__ import annotations

from trainsim.config import RunConfig
from trainsim.errors import ConfigError
from trainsim.network import network_for

KINDS = ("all_reduce", "all_gather", "reduce_scatter")
"""The collectives NCCL_ALGO picks an algorithm for that tensor and data parallelism run."""
SHARDED = ("all_gather", "reduce_scatter", "all_reduce")
"""The same, in the order a sharded group meets them (sequence parallelism's all-gather first;
a sharded optimizer's parameter all-gather), so the refusal names the kind the pricer names."""


def forced_algo_problem(cfg: RunConfig) -> str | None:
    """The pricer's refusal of ``cluster.nccl_algo`` on the first of the run's tensor- and
    data-parallel groups that can run it for none of ``KINDS``, or None."""
    c, p = cfg.cluster, cfg.parallel
    if str(c.nccl_algo).strip().lower() in ("auto", "ring") or c.network_backend == "flow":
        return None  # ring runs every kind on every group; flow takes ring only (fabric_rules)
    net = network_for(c)
    groups = [(p.tp, 1, SHARDED if p.sequence_parallel else KINDS)]
    if p.cp == 1 and p.dp_replicate == 1:
        groups.append((cfg.dp, p.tp, SHARDED if p.shards_optimizer else KINDS))
    for size, stride, kinds in groups:
        if size <= 1:
            continue
        span = net.span(size, stride)
        first: str | None = None
        for kind in kinds:
            try:
                net.collective(kind, 1.0, span)
            except ConfigError as exc:
                first = first or str(exc)
                continue
            first = None
            break
        if first is not None:
            return first
    return None
