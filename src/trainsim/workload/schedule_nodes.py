"""The autograd engine calls Megatron-core's combined 1F1B makes per layer backward.

With ``--overlap-moe-expert-parallel-comm`` a layer runs as schedule nodes
(megatron/core/models/common/model_chunk_schedule_plan.py ``_build_callable_nodes``): an MoE
layer's ``attn``, ``post_attn`` (core_v0.14.0-core_v0.15.0 and the pins 0d8e0714, cba6b0ed;
merged into ``attn`` from core_v0.16.0 and the pins b0cc2706, d7288711), ``moe_dispatch``,
``mlp`` and ``moe_combine``; a dense layer's ``attn`` and ``mlp`` (its dispatch and combine are
``NoopScheduleNode``). Each node's backward is a call into the autograd engine of its own
(megatron/core/pipeline_parallel/utils.py ``ScheduleNode.default_backward_func``:
``Variable._execution_engine.run_backward`` on the node's outputs, core_v0.14.0-core_v0.17.0),
where without the overlap one call runs a whole chunk's backward. Each call costs the host
``compute.host.ENGINE_CALL_S`` beyond the kernels it runs (op ``schedule_nodes``, a backward of
no kernel with ``engine_calls``); the profile says how many nodes an MoE layer has (feature
``ep_overlap_moe_nodes``; none known: nothing is added). Each pass of a node, forward and
backward, also costs the host its stream context and event wait and record
(``compute.host.NODE_PASS_S``: ``ScheduleNode._forward`` / ``_backward`` under
``stream_acquire_context``, the same at every pin above) and the forward the ``detach`` of its
input (``py_views``, ``compute.host.PY_VIEW_S``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainsim.catalog.frameworks import framework_feature
from trainsim.workload.ops import Comm, Elementwise, Op
from trainsim.workload.schedule import combined_1f1b

if TYPE_CHECKING:
    from trainsim.config import RunConfig

SCHEDULE_NODES = "schedule_nodes"


def _call() -> Elementwise:
    return Elementwise(SCHEDULE_NODES, bytes=0.0, kernels=0, bwd_bytes=0.0, bwd_kernels=0,
                       bwd_engine_calls=1, node_passes=1, bwd_node_passes=1, py_views=1)


def _exchange(op: Op) -> bool:
    """An expert all-to-all: the dispatch and combine nodes' communication."""
    return isinstance(op, Comm) and op.group in ("ep", "etp") and op.kind == "all_to_all"


def with_schedule_nodes(ops: list[Op], cfg: RunConfig, moe: bool) -> list[Op]:
    """A layer's forward ``ops`` with an engine-call op at the end of each schedule node's
    forward, so that its backward opens that node's backward: the attention node ends before
    the pre-MLP norm (a dense layer, and an MoE layer with ``post_attn``) or before the first
    dispatch exchange (4 nodes: ``post_attn`` merged into ``attn``), ``post_attn`` before the
    dispatch exchange, the dispatch node after it, the MLP node before the combine exchange,
    the combine node (or a dense layer's MLP) at the end. ``ops`` unchanged without the
    overlap or where the run's profile does not say how many nodes an MoE layer has."""
    t = cfg.training
    if not t.framework or not combined_1f1b(cfg):
        return ops
    moe_nodes = framework_feature(t.framework, t.framework_version, "ep_overlap_moe_nodes")
    if not moe_nodes:
        return ops
    names = [op.name for op in ops]
    ends: list[int] = []  # insert a call before each of these positions
    xs = [i for i, op in enumerate(ops) if _exchange(op)]
    if moe and xs:
        first = xs[0]
        dispatch_end = next(i for i in range(first, len(ops)) if not _exchange(ops[i]))
        combine_start = max(i for i in xs if i == first or not _exchange(ops[i - 1]))
        if moe_nodes >= 5 and "mlp_norm" in names[:first]:
            ends.append(names.index("mlp_norm"))
        ends += [first, dispatch_end, combine_start] if combine_start > first else [first]
    elif "mlp_norm" in names:
        ends.append(names.index("mlp_norm"))
    out = list(ops)
    for i in sorted(ends, reverse=True):
        out.insert(i, _call())
    out.append(_call())
    return out


__all__ = ["SCHEDULE_NODES", "with_schedule_nodes"]
