"""A forced ``cluster.nccl_algo`` that a group of the run cannot run, refused from the config
alone (collfab61, robust61's Lead 1; robust62: the context-parallel, HSDP-replica and expert
groups).

NCCL_ALGO binds every collective of the job (``network.analytical.AnalyticalNetwork.collective``
refuses the run at the first collective a group cannot run it on), but a refusal that depends
on a group's shape (tree, PAT or NVLS-Tree inside one node; NVLS across nodes; PAT with more
than one rank a node) came only when that collective was priced, so the service queued the
job and failed it later. Here the run's groups are placed as the pricer places them
(``pricing.Pricer.spans``) and a forced algorithm is refused where a group that prices a
collective every step cannot run it:

- the tensor-parallel group ``span(tp, 1)``: the vocab-parallel loss's all-reduce and, under
  sequence parallelism, each layer's all-gather (robust62: collfab61 checked any of three);
- the gradient group ``dp_cp`` = ``span(shard_ranks, tp)`` (dp x cp, one HSDP replica's share):
  the gradient all-reduce or reduce-scatter (collfab61 checked it only without cp or HSDP);
- HSDP's replica group ``dp_rep`` = ``span(dp_replicate, tp * shard_ranks)``: the all-reduce of
  each shard's gradient across replicas (``sharded_passes.grad_reduce``'s ``_replicas`` op);
- the expert-parallel group ``span(ep, moe_dispatch.ep_stride)``: the allgather dispatcher's
  all-gather of every token, the all-to-all dispatcher's of the routing counts
  (``gathers_over_ep``); the expert tensor-parallel group ``span(etp, 1)``:
  its all-gather / reduce-scatter (``workload.moe_block``); and the expert data-parallel group
  ``span(edp, etp * ep)``: the expert gradients' reduction;
- the tied embedding's two stages (``span(2, tp * cp * dp * (pp - 1))``, ``pricing``'s
  ``embd``): its gradient all-reduce (``optimizer_tasks``).

A group is refused where the algorithm cannot run a kind the group prices every step (for the
expert tensor-parallel group: neither of its two), so nothing the pricer takes is refused
(``tests/test_robust62.py`` holds a grid of the controls). What some runs price and others
do not (a sharded optimizer's parameter all-gather, the broadcasts of some engines, a
gradient-norm all-reduce) is left to the pricer, which knows the run. The
all-to-alls of the expert-parallel group and the context-parallel ring's sends are
point-to-point, which NCCL_ALGO does not bind. The message is the pricer's own, from the same
call."""

from __future__ import annotations

from trainsim.config import ClusterConfig, RunConfig
from trainsim.errors import ConfigError
from trainsim.network import network_for
from trainsim.workload.moe_block import titan_style
from trainsim.workload.moe_dispatch import ep_stride
from trainsim.workload.sharding_grads import zero3_grad_collective

GATHERS = ("all_gather", "reduce_scatter")
"""Expert tensor parallelism's collectives (``moe.etp_all_gather`` / ``etp_reduce_scatter``)."""


Need = tuple[tuple[str, ...], ...]
"""What a group prices every step: kind sets, each set's kinds alternatives (the group prices
one of them), every set needed."""


def _groups(cfg: RunConfig) -> list[tuple[int, int, Need]]:
    """(size, stride, what the group prices: ``Need``, in the order the pricer meets it) of
    each group checked."""
    p, zero = cfg.parallel, cfg.parallel.effective_zero_stage
    whole = zero == 1 and p.zero1_grad_reduce == "all_reduce"
    # the gradient reduction's one kind (``optimizer_tasks``: all-reduce unsharded or under
    # ZeRO-1's whole-gradient reduction, else reduce-scatter; ZeRO-3 / FSDP's per unit:
    # ``sharding_grads.zero3_grad_collective``)
    reduce = "all_reduce" if zero == 0 or whole or (
        zero == 3 and zero3_grad_collective(cfg) == "all_reduce") else "reduce_scatter"
    grads: Need = ((reduce,),)
    # tensor parallelism: the vocab-parallel loss's all-reduce of each token's max, sum and
    # target logit (``workload.head``, tp > 1), after sequence parallelism's all-gather of
    # each layer's input (``workload.layers``)
    tp: Need = (("all_gather",), ("all_reduce",)) if p.sequence_parallel else (("all_reduce",),)
    groups = [(p.tp, 1, tp)]
    if p.dp_replicate > 1 and whole:  # InternEvo's zero1: the whole gradient over every dp rank
        groups.append((cfg.dp, p.tp * p.cp, (("all_reduce",),)))
    else:
        groups.append((cfg.shard_ranks, p.tp, grads))
        if p.dp_replicate > 1:  # each shard's gradient all-reduced over the replicas
            groups.append((p.dp_replicate, p.tp * cfg.shard_ranks, (("all_reduce",),)))
    if cfg.model.tied_embeddings and p.pp > 1:  # the first and last stages' embedding gradient
        groups.append((2, p.tp * p.cp * cfg.dp * (p.pp - 1), (("all_reduce",),)))
    if cfg.model.is_moe:
        if gathers_over_ep(cfg):
            groups.append((p.ep, ep_stride(cfg), (("all_gather",),)))
        groups.append((p.etp, 1, (GATHERS,)))
        groups.append((cfg.edp, p.etp * p.ep, grads))
    return groups


def gathers_over_ep(cfg: RunConfig) -> bool:
    """Whether every MoE layer all-gathers over the expert-parallel group: the allgather
    dispatcher's tokens (``moe.dispatch_all_gather``), or the all-to-all dispatcher's routing
    counts before its exchange (``moe_dispatch.split_sizes_gather``: dropless or unpadded, not
    torchtitan's own MoE layer, whose counts go by all-to-all)."""
    p, m = cfg.parallel, cfg.model
    if p.ep <= 1:
        return False
    return p.moe_token_dispatcher_type == "allgather" or (
        p.moe_token_dispatcher_type == "alltoall" and not m.moe_padded_to_capacity
        and not titan_style(cfg))


def forces_algo(cluster: ClusterConfig) -> bool:
    """Whether ``cluster.nccl_algo`` may leave a group unable to run a collective: neither auto
    nor ring (ring runs every kind on every group), on the analytical backend (flow takes ring
    only: ``config.fabric_rules``)."""
    return str(cluster.nccl_algo).strip().lower() not in ("auto", "ring") and \
        cluster.network_backend != "flow"


def forced_algo_problem(cfg: RunConfig) -> str | None:
    """The pricer's refusal of ``cluster.nccl_algo`` on the first of the run's groups
    (``_groups``) that can run it for none of the kinds it prices there, or None."""
    if not forces_algo(cfg.cluster):
        return None
    net = network_for(cfg.cluster)
    for size, stride, need in _groups(cfg):
        if size <= 1:
            continue
        span = net.span(size, stride)
        for kinds in need:
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
