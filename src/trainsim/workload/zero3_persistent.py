"""DeepSpeed ZeRO-3's persistent parameters gathered again after every optimizer step. Op lists
only; ``optimizer_tasks`` runs them after the step.

Parameters of fewer than ``stage3_param_persistence_threshold`` elements (the biases and norms
of any sizeable model: ``sharding.ZERO3_PERSISTENCE_THRESHOLD``) stay gathered through the
forward and backward, but not through the step: after the backward (``_partition_all_parameters``,
v0.3.13 stage3.py ``backward``; from v0.6.0 at the start of ``step``) every parameter is
partitioned, and ``_post_step`` gathers the persistent ones again
(``self.persistent_parameters[0].all_gather(self.persistent_parameters)``: microsoft/DeepSpeed
v0.3.13 stage3.py L2344, v0.6.2 L2253, v0.9.2 L1747, v0.10.0 L1817). The GPU has nothing else to
do then: the next forward waits for the host. How the gather runs (profile feature
``zero3_persistent_regather``):

* ``python_loop`` (v0.3.13 - v0.5.4): partition_parameters.py ``_allgather_params`` flattens the
  rank's partitions into one buffer (a ``copy_`` per parameter), runs one list ``all_gather``
  (ProcessGroupNCCL's per-rank copies out of its flat buffer, ``sharding.list_all_gather_ops``)
  and then, in Python, for every parameter and every rank whose slice starts inside the
  parameter, narrows the gathered partition and copies it into the parameter's new tensor: per
  (parameter, rank) two ``narrow``, a ``view`` and a ``copy_`` (v0.3.13 L638-695), a bare
  Python loop priced per op (``Elementwise.py_kernels`` / ``py_views``, ``compute.host.
  loop_host_s``: 15.9 us an iteration), not at an eager module's ``HOST_S_PER_KERNEL``.
* ``coalesced`` (from c0eeb69df, 2021-10-31, #1188, first in v0.5.5): ``_allgather_params_coalesced``
  launches one ``_all_gather_base`` per parameter into its own buffer (no copies), then
  ``torch.cuda.synchronize()``: one small collective per parameter, each paying the ring's
  latency over the data-parallel group.
"""

from __future__ import annotations

import math

from trainsim.catalog.frameworks import framework_feature
from trainsim.config import RunConfig
from trainsim.model.counts import norm_tensors
from trainsim.workload.ops import ACT_BYTES as ACT
from trainsim.workload.ops import Comm, Elementwise, Op
from trainsim.workload.sharding import ZERO3_PERSISTENCE_THRESHOLD, rank_tensors


def persistent_tensors(cfg: RunConfig, layers: range | list[int], last: bool) -> list[float]:
    """Elements of each dense parameter tensor of ``layers`` (and the final norm on the last
    stage) that ZeRO-3 keeps gathered: those under ``ZERO3_PERSISTENCE_THRESHOLD``."""
    m = cfg.model
    sizes = [n for n, expert in rank_tensors(cfg, layers) if not expert]
    sizes += [m.hidden_size] * (norm_tensors(m) if last else 0)
    return [n for n in sizes if 0 < n < ZERO3_PERSISTENCE_THRESHOLD]


def ranks_holding(numel: float, ranks: int) -> int:
    """Ranks whose partition starts inside a tensor of ``numel`` elements: DeepSpeed pads a
    tensor to a multiple of the ranks (``_aligned_size``) and gives each ``aligned / ranks``
    elements, so the last ranks may hold padding only (``_allgather_params`` skips them)."""
    part = math.ceil(numel / ranks)
    return math.ceil(numel / part)


def zero3_persistent_regather(cfg: RunConfig, layers: range | list[int], last: bool) -> list[Op]:
    """What DeepSpeed's ZeRO-3 ``_post_step`` runs on one stage after its optimizer step, as the
    run's profile has it (``zero3_persistent_regather``); empty where it does not, or for other
    engines, stages, or one data-parallel rank."""
    p, t = cfg.parallel, cfg.training
    ranks = cfg.shard_ranks
    if p.data_parallel_impl != "deepspeed" or p.zero_stage < 3 or ranks <= 1 \
            or not t.framework:
        return []
    how = framework_feature(t.framework, t.framework_version, "zero3_persistent_regather")
    sizes = persistent_tensors(cfg, layers, last)
    if how not in ("python_loop", "coalesced") or not sizes:
        return []
    parts = [math.ceil(n / ranks) for n in sizes]
    if how == "coalesced":
        sync = Elementwise("zero3_persist_synchronize", bytes=0.0, kernels=0, host_sync=True)
        return [*(Comm("zero3_persist_all_gather", "all_gather", part * ranks * ACT, "dp_cp")
                  for part in parts), sync]
    flat = sum(parts) * ranks * ACT
    copies = sum(ranks_holding(n, ranks) for n in sizes)
    return [
        # a narrow per rank for the list, a narrow and a copy_ per parameter into its slot
        Elementwise("zero3_persist_flatten", bytes=2 * sum(parts) * ACT, kernels=len(parts),
                    py_kernels=len(parts), py_views=ranks + len(parts)),
        Comm("zero3_persist_all_gather", "all_gather", flat, "dp_cp"),
        Elementwise("zero3_persist_unflatten", bytes=2 * flat, kernels=ranks, cpp_kernels=ranks),
        # per (parameter, rank): partitions[i].narrow, replicated.view(-1).narrow, copy_
        Elementwise("zero3_persist_copies", bytes=2 * sum(sizes) * ACT, kernels=copies,
                    py_kernels=copies, py_views=3 * copies),
    ]
