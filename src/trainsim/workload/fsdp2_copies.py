"""The copies FSDP2 (``fully_shard``) runs on the compute stream around its collectives, beside
the all-gathers and reduce-scatters themselves (``workload.sharding``).

* **All-gather copy-out.** ``FSDPParamGroup.wait_for_unshard`` calls
  ``foreach_all_gather_copy_out`` on the current stream: ``torch.ops.fsdp.split_with_sizes_copy``
  reads the unit's all-gather output (every rank's shard, the whole unit) and writes each
  unsharded parameter (torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py and
  _fsdp_collectives.py, read in the installed torch 2.13.0, "FSDP::all_gather_copy_out"; the
  same call in the earlier ``torch/distributed/_composable/fsdp/_fsdp_param_group.py``,
  pytorch/pytorch@012c62d6). Per
  gathered byte one read and one write; one kernel per unit gathered (a block's dense tensors
  and its routed experts are two FSDP groups, two copies).
* **Reduce-scatter copy-in.** ``foreach_reduce`` allocates the reduce-scatter input in the
  reduce dtype and fills it with ``foreach_reduce_scatter_copy_in`` (``torch.ops.fsdp.chunk_cat``
  of the unsharded gradients, cast on the way): per gradient element the 16-bit gradient read
  and the reduce-dtype element written, one kernel per group. Since pytorch/pytorch#129721
  (2024-06-27) it runs on the current stream before ``reduce_scatter_stream.wait_stream``
  (the profile line ``fsdp2_reduce_scatter_wait`` marks the same change); before it, on the
  reduce-scatter stream.

What FSDP2 does on the sharded side (the all-gather copy-in of this rank's shard, the post-
reduce divide and cast of the output shard) moves 1/world of these bytes, on side streams: not
priced. Op lists only; ``sharded_passes`` places them.
"""

from __future__ import annotations

from trainsim.catalog.frameworks import profile_supports
from trainsim.config import RunConfig
from trainsim.workload.ops import ACT_BYTES as ACT
from trainsim.workload.ops import Comm, Elementwise, Op

COPY_OUT = "fsdp2_all_gather_copy_out"
COPY_IN = "fsdp2_reduce_scatter_copy_in"


def applies(cfg: RunConfig) -> bool:
    """Whether the run shards with torch's ``fully_shard``: ``parallel.data_parallel_impl``
    fsdp2 under a framework profile with ``fsdp2_copies`` (torchtitan, NeMo Automodel; not
    Meta's own FSDP-style sharding of Llama 3, which its profile also names fsdp2), at zero
    stage 3 (reshard_after_forward True) and 2 (False: the same copies, the unit kept gathered
    from its forward to its backward)."""
    return cfg.parallel.data_parallel_impl == "fsdp2" and profile_supports(cfg, "fsdp2_copies")


def copy_out(units: list[list[Comm]]) -> list[Op]:
    """The copy-out after each of ``units``' all-gathers (one list of gathers per unit, as
    ``sharding.fsdp_unit_gathers`` gives them): the gathered bytes read and written again."""
    gathered = [c.bytes for unit in units for c in unit if c.kind == "all_gather"]
    if not gathered:
        return []
    return [Elementwise(COPY_OUT, bytes=2.0 * sum(gathered), kernels=len(gathered),
                        bwd_bytes=0.0, bwd_kernels=0)]


def copy_in(dense: tuple[float, int], experts: tuple[float, int], reduce_bytes: dict[str, int],
            world: dict[str, int], share: float = 1.0,
            read_bytes: dict[str, int] | None = None) -> list[Op]:
    """The copy-in before the reduce-scatters of one backward of a virtual stage: ``dense``
    (elements, units) of its non-expert parameters as the rank holds them (each block's, and
    the root unit's vocabulary matrices), ``experts`` the same for its routed experts (one unit
    per MoE block); ``reduce_bytes`` per group (``dp_cp`` dense, ``edp`` experts) the reduce
    dtype's width, ``world`` each group's size (a group of one reduces nothing); ``share`` the
    part of the copy this backward carries (a stage that reduces once per step spreads it over
    its micro-batches). Per element the gradient read and the reduce-dtype element written;
    ``read_bytes`` per group the width read, by default the 16-bit gradient autograd wrote.
    A unit whose earlier backward passes did not reduce (the pipeline stage's no-sync, profile
    ``fsdp_pp_unsharded``) reads instead the gradient it accumulated in the reduce dtype:
    ``FSDPParamGroup.post_backward`` passes ``unsharded_accumulated_grad_data`` to
    ``foreach_reduce`` when it holds one (``to_accumulated_grad_if_needed`` made it with
    ``.to(reduce_dtype)`` when that dtype differs from the gradient's; torch 2.13.0
    _fully_shard/_fsdp_param_group.py post_backward, _fsdp_param.py)."""
    moved, kernels = 0.0, 0
    for group, (elements, units) in (("dp_cp", dense), ("edp", experts)):
        if elements > 0 and units and world[group] > 1:
            read = read_bytes[group] if read_bytes else ACT
            moved += elements * (read + reduce_bytes[group])
            kernels += units
    if not kernels:
        return []
    return [Elementwise(COPY_IN, bytes=moved * share, kernels=max(1, round(kernels * share)),
                        bwd_bytes=0.0, bwd_kernels=0)]
