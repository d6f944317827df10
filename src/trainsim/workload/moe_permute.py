"""Megatron-core's MoE token permutation without Transformer Engine's fused kernels.

With ``moe_permute_fusion`` off, ``permute``, ``unpermute`` and ``sort_chunks_by_idxs``
(core_v0.14.0-core_v0.16.0 megatron/core/transformer/moe/moe_utils.py, dropless branch) run as
PyTorch ops, each a kernel of its own:

- ``permute``: the routing map's ``.T.contiguous()``, an ``arange`` of token ids, their
  ``masked_select`` by the map (the sorted indices), with probabilities the probs'
  ``.T.contiguous()`` and their ``masked_select``, then ``index_select`` of the tokens;
- ``unpermute``: with probabilities the map's and the probs' ``.T.contiguous()``, the probs'
  ``masked_select`` and the product of tokens and probs; then ``torch.zeros`` of the output and
  its ``scatter_add_``;
- ``sort_chunks_by_idxs``: ``torch.split`` (views) and one ``torch.cat`` per tensor, its split
  sizes and order on the host already (the dispatcher copies ``num_global_tokens_per_local_expert``
  to the host when unfused, and keeps ``sort_input_by_local_experts`` on the CPU:
  core_v0.16.0 token_dispatcher.py ``permute_idx_device``), so it does not wait.

``index_select``'s backward (autograd's ``index_select_backward``: ``index_add_`` into zeros)
adds each element into a bf16 tensor atomically, the kernel the H200 profiled in run6
(``indexFuncLargeIndex``): priced by its adds at the L2's atomic rate (``Elementwise.
bwd_atomic_adds``, ``compute.atomics``). ``scatter_add_`` issues one atomic per element too
(ScatterGatherKernel.cu ``ReduceAdd``: ``fastAtomicAdd``) but through another kernel whose rate
nobody here measured: it stays priced by its bytes (its adds at ``index_add_``'s rate would put
Megatron-Bridge's unfused Qwen3-30B-A3B step, ``benchmarks/ep_overlap_pairs.py``, at +11.0 %
from +7.5 % without overlap, -0.8 % from -5.4 % with it).

``masked_select`` yields a data-dependent size: PyTorch counts the mask's true elements and
copies the count to the host before it can allocate the output, so each call makes Python wait
for the GPU (``Elementwise.host_sync``, ``compute.host``). Which tensors carry probabilities
follows the dispatcher (core_v0.16.0 token_dispatcher.py): ``alltoall`` permutes and unpermutes
with them; DeepEP's manager permutes with them and unpermutes without; the all-gather
dispatcher does neither (its probs' own ``masked_select`` runs whatever the fusion setting).
HybridEP's kernels permute by themselves (no unfused path, ``config.parallel``)."""

from __future__ import annotations

from trainsim.config import RunConfig
from trainsim.errors import ConfigError
from trainsim.workload.ops import ACT_BYTES as ACT
from trainsim.workload.ops import Elementwise, Op

MASKED_SELECT_KERNELS = 4
"""Launches of one CUDA ``masked_select``: its ``nonzero`` (the mask's count, the count's copy
to the host, the selection of indices; counted as ``workload.unpad`` counts ``nonzero``) and
the gather of the selected elements. Counted from the code, not profiled."""

MASKED_SELECT_BWD_KERNELS = 3
"""Launches of ``masked_select``'s backward: ``zeros_like`` of the input and ``masked_scatter_``
(a prefix sum of the mask, the scatter); it does not wait for the GPU."""

INDEX_BYTES = 8
"""``arange`` token ids and the sorted indices are int64."""

PROB_BYTES = ACT
"""Routing probabilities in the activations' 16-bit type (``moe_router_dtype`` unset)."""


def fused(cfg: RunConfig) -> bool:
    """Whether the run permutes with Transformer Engine's fused kernels (``parallel.
    moe_permute_fusion``; None: fused). HybridEP permutes inside its own kernels either way."""
    return cfg.parallel.moe_permute_fusion is not False


def _masked_select(name: str, tokens: int, experts: int, selected: int, elem: int) -> Elementwise:
    """One ``masked_select`` of a (experts x tokens) tensor by the transposed routing map: reads
    the map (one byte) and the values, writes the ``selected`` elements; the host waits."""
    return Elementwise(name, bytes=tokens * experts * (1 + elem) + selected * elem,
                       kernels=MASKED_SELECT_KERNELS, host_sync=True)


def unfused_ops(cfg: RunConfig, dispatcher: str, tokens: int, routed: int, sort_chunks: bool
                ) -> tuple[list[Op], list[Op]]:
    """(permute ops, unpermute ops) of the unfused path for ``tokens`` routed as ``routed``
    copies; ``sort_chunks``: the all-to-all dispatcher also sorts the received tokens by local
    expert and back (``moe_dispatch.sorts_chunks``), one ``torch.cat`` per tensor each way,
    added to the permute and unpermute (backward: ``split``'s backward, one ``cat`` each) as
    kernels only: their bytes are left out as on the fused path (``moe_dispatch.
    permute_extra_kernels``), so the two paths differ by the mechanism alone.
    The map transposes and ``arange`` are counted as kernels and their bytes; the backward
    of ``index_select`` is a zero fill and an ``index_add_``, of the product two products and a
    sum (tokens' and probs' gradients), of ``scatter_add_`` a ``gather``; the map transposes
    and ``arange`` carry no gradient, and the probs' transpose's is a view (no kernel)."""
    m = cfg.model
    if m.moe_padded_to_capacity:
        raise ConfigError("parallel.moe_permute_fusion=false with experts padded to capacity "
                          "(moe_utils.py drop_and_pad's argsort path) is not modelled")
    h, E = m.expert_input_size, m.num_experts or 1
    permute_probs = dispatcher in ("alltoall", "deepep")
    unpermute_probs = dispatcher == "alltoall"
    map_t = tokens * E * 2  # the bool routing map read and written transposed
    probs_t = tokens * E * PROB_BYTES * 2
    sort_fwd = (1 + int(permute_probs)) if sort_chunks else 0
    unsort = int(sort_chunks)
    permute: list[Op] = [
        Elementwise("permute.maps", bytes=map_t + tokens * E * INDEX_BYTES, kernels=2,
                    bwd_bytes=0.0, bwd_kernels=0),
        _masked_select("permute.masked_select_indices", tokens, E, routed, INDEX_BYTES)]
    if permute_probs:
        permute.append(Elementwise("permute.probs_transpose", bytes=probs_t, kernels=1,
                                   bwd_bytes=0.0, bwd_kernels=0))
        permute.append(_masked_select("permute.masked_select_probs", tokens, E, routed,
                                      PROB_BYTES))
    rows = routed * h * ACT  # one pass over the permuted tokens
    permute.append(Elementwise(  # backward: a zero fill and index_add_'s atomic adds
        "permute", bytes=2 * rows + routed * INDEX_BYTES, kernels=1 + sort_fwd,
        bwd_bytes=tokens * h * ACT, bwd_atomic_adds=float(routed * h),
        bwd_kernels=2 + sort_fwd + (MASKED_SELECT_BWD_KERNELS if permute_probs else 0)))
    unpermute: list[Op] = []
    out = 2 * rows + tokens * h * ACT  # scatter_add_ (read, write) + zeros
    bwd = 1 + unsort  # gather (+ split's backward)
    bwd_bytes = 2 * rows  # the gather (read, write)
    if unpermute_probs:
        unpermute.append(Elementwise("unpermute.maps", bytes=map_t + probs_t, kernels=2,
                                     bwd_bytes=0.0, bwd_kernels=0))
        unpermute.append(_masked_select("unpermute.masked_select_probs", tokens, E, routed,
                                        PROB_BYTES))
        out += 2 * rows  # tokens x probs (read, write)
        bwd += 3 + MASKED_SELECT_BWD_KERNELS
        bwd_bytes += 2 * rows + 4 * rows  # tokens' gradient; probs' (two reads, write, sum)
    unpermute.append(Elementwise("unpermute", bytes=out + routed * INDEX_BYTES,
                                 kernels=2 + int(unpermute_probs) + unsort,
                                 bwd_bytes=bwd_bytes, bwd_kernels=bwd))
    return permute, unpermute


__all__ = ["INDEX_BYTES", "MASKED_SELECT_BWD_KERNELS", "MASKED_SELECT_KERNELS", "PROB_BYTES",
           "fused", "unfused_ops"]
