"""torchtitan's own MoE layer, as its profile selects it (``moe_experts``), op by op.

Megatron-core's MoE (``moe_block``'s default) routes with its unfused top-k and auxiliary loss,
permutes with Transformer Engine's fused kernels and waits for the tokens per expert on every
layer. torchtitan's (pytorch/torchtitan, read at the commits below) runs eager PyTorch ops
around ``torch._grouped_mm``, in three eras (``STYLES``):

``torchtitan_scatter_add`` (dbb34ccbd "[llama4] add Grouped GEMM support for MoE", 2025-04-10,
to e1f7f318a, 2025-11-21; read at a9aa50696 torchtitan/models/moe.py and
torchtitan/distributed/expert_parallel.py):
  * router (``TokenChoiceTopKRouter.forward`` L190-L236): the gate GEMM, ``scores.to(float32)``,
    sigmoid or softmax, ``scores + expert_bias`` (auxiliary-loss-free balancing, 5ae50d0fb), a
    ``torch.topk``, ``scores.gather``, ``* route_scale``, ``torch.histc`` of the expert ids and,
    in ``MoE.forward`` L315-L317, ``tokens_per_expert.add_``: no auxiliary loss (``ROUTER``);
  * reorder: ``torch.argsort(stable=True)`` of the ``tokens x top_k`` expert ids, the scores
    gathered in that order, ``// top_k`` (``REORDER``);
  * the tokens copied in expert order by ``torch.gather`` of an expanded index (L320-L327),
    whose backward is a ``scatter_add``;
  * the padding permutation (``expert_parallel`` wrapper L331-L361): ``generate_permute_indices``
    (a Triton kernel, its token counts on the device), ``torch.vstack`` with a zero row,
    ``x[permuted_indices]``; after the experts ``out_unpermuted[permuted_indices, :] = out``:
    ``moe_experts.pad_permute`` / ``pad_unpermute``. It also orders the rows of an EP exchange by
    local expert, and needs no host value: with one EP rank nothing waits for the GPU;
  * experts: ``torch._grouped_mm`` for w1 and w3 apart, ``F.silu`` and the product, w2
    (``_run_experts_grouped_mm`` L110-L138);
  * combine: the routing scores applied to the outputs in fp32 (``score_before_experts`` False,
    the DeepSeek-V3 and Qwen3 configurations: ``(routed_output.to(float32) * top_scores).to(
    x.dtype)``, three kernels over ``rows x dim``), then ``out.scatter_add(0, token_indices,
    routed_output)`` onto zeros (or the shared experts' output): one atomic add per element
    (``scatter_add`` is priced by its bytes, as ``moe_permute`` prices Megatron-core's: no rate of
    that kernel was measured); its backward is a ``gather``.

``torchtitan_index_put`` (e1f7f318a "remove scatter_add in MoE implementation", 2025-11-21, to
fe80b63cf, 2026-04-02; read at 0646ba46a torchtitan/models/common/moe/moe.py L430-L586):
  * the tokens copied by ``x[token_indices_experts_sorted // top_k]`` (advanced indexing), whose
    backward is ``index_put_(accumulate=True)``: on CUDA a sort of the indices and a kernel that
    sums each destination row's sources in order, no atomics (``SORTED_INDEX_PUT``);
  * combine: ``torch.zeros((bs*slen*top_k, dim))``, the index-put ``routed_output_unsorted[
    token_indices_experts_sorted] = routed_output``, then with ``score_before_experts`` False
    ``torch.bmm(top_scores, routed_output_unsorted.float()).to(x.dtype)`` (five kernels, no
    atomics; the backward a gather and the bmm's two products).

``torchtitan_sorted`` (fe80b63cf "remove unnecessary padding in MoE", 2026-04-02, and
8bc267dea "change torch.bmm back to scatter add", 2026-04-06, on; read at b5bcd76c6
torchtitan/models/common/token_dispatcher.py L70-L169, L245-L560 and torchtitan/ops/
scatter_add.py):
  * no padding permutation; with EP the received rows are put in expert order by ``_permute``
    (an index computation and ``routed_input[permuted_indices, :]``) and back by ``_unpermute``
    (an index-put);
  * combine: ``torch.zeros_like(x)``, the scores applied in fp32 as above, and
    ``deterministic_scatter_add``: ``scatter_add`` under ``torch.use_deterministic_algorithms``,
    which CUDA runs as ``index_put_(accumulate=True)``, sort-based (``SORTED_INDEX_PUT``);
    backward a ``gather``.

In every era the EP exchange (``ExpertParallel._token_dispatch``, later
``AllToAllTokenDispatcher``) first sends the tokens per expert by an ``all_to_all_single`` and
copies the split sizes to the host (``.tolist()``, "this would incur a device-to-host sync"):
the layer waits for the GPU only there, where EP > 1 (``exchange_ops``), and in the for-loop
experts of GPUs below SM90 (``.tolist()`` of the counts, ``_run_experts_for_loop``). The routing
scores stay on the source rank (no exchange of probabilities).

Shared experts beside the combine (profile ``moe_shared_combine_overlap``, 476a965f9 "Implicit
overlap of shared expert compute and token combine communication", #1741, 2025-09-23, to
963c20cba, #3386, 2026-05-20; ``shared_beside_combine``): the combine's
``all_to_all_single_autograd`` (a functional collective, waited at its output's first use) is
issued, then the shared experts run, then the score product reads the exchanged rows
(a9aa50696 torchtitan/models/moe.py L417-L437; from 09ea7d8e7 inside
``AllToAllTokenDispatcher.combine``: "shared_experts overlaps with the async all-to-all
combine", 963c20cba^ token_dispatcher.py L399-L478). In the backward, autograd runs the
shared experts' nodes (later in the forward, higher sequence numbers) before the exchange's:
its gradient's all-to-all is issued after them, with nothing left to hide it. 963c20cba moves
the shared experts after the combine ("Removes async overlap between shared_experts and the
all-to-all combine"). Not Megatron-core's side stream (``moe_block._beside``), which hides both
passes; a run's ``moe_shared_expert_overlap`` (Megatron-core's flag) does not apply here.
Under DeepEP (whose layer trainsim still builds in Megatron-core's structure) the same forward
overlap runs from e215f4f32 (2026-02-05: ``DeepEPMoE.forward`` starts the combine
asynchronously, runs the shared experts, then ``sync_combine()``) to 4a93ee4e4 (2026-08-11:
the combine syncs before it returns), from 963c20cba only where the tokens are not split
over TP; the profile lists the dispatchers per month.

Kernels and bytes are counted from the code, not profiled (no torchtitan MoE step was measured
here); the grouped GEMMs, SwiGLU and padding copies are ``moe_experts``' (run 6's H200 forwards
and VeOmni's torchtitan copy, benchmarks/RESULTS.md 54th session, moe54).
"""

from __future__ import annotations

from trainsim.workload.moe_experts import pad_permute, pad_unpermute
from trainsim.workload.ops import ACT_BYTES, Comm, Elementwise, Gemm, Op

STYLES = ("torchtitan_scatter_add", "torchtitan_index_put", "torchtitan_sorted")
"""torchtitan's MoE eras (this module's docstring), the values of the profile's
``moe_experts``."""

F32 = 4
"""Bytes of the router's scores and of the fp32 score product."""
INDEX = 8
"""Expert ids, sorted indices and token counts are int64."""

ROUTER_KERNELS = (8, 5)
"""(forward, backward) launches of the router after its gate GEMM: cast to fp32, sigmoid or
softmax, the expert-bias add, ``topk``, ``gather``, ``* route_scale``, ``histc``,
``tokens_per_expert.add_``; backward: the scale's product, the gather's zeros and
``scatter_add_``, the score function's and the cast's. A ``route_norm`` configuration adds a
sum, an add and a division (not modelled)."""

SORT_KERNELS = 10
"""Launches of one ``torch.argsort`` / sort of int64 keys with their int64 indices: the index
``arange`` and CUB's one-sweep radix sort pairs, a histogram and one pass per 8 bits of the
64-bit keys (``SORT_PASSES``)."""
SORT_PASSES = 8
"""Radix passes over the keys and values of that sort: each reads and writes both."""

SORTED_INDEX_PUT_KERNELS = SORT_KERNELS + 3
"""``index_put_(accumulate=True)`` on CUDA (``index_put_with_sort_kernel``): the zero fill of
the destination, the sort of the linearised indices, the sort's index copy and the kernel that
adds each destination row's sources in sorted order (no atomics)."""


def sort_bytes(n: int) -> float:
    """Bytes one radix sort of ``n`` int64 keys with int64 values moves."""
    return float(SORT_PASSES * n * 2 * INDEX * 2)


def router_ops(tokens: int, experts: int, hidden: int, topk: int, fp32_gate: bool = False
               ) -> list[Op]:
    """The gate GEMM and ``ROUTER``'s element-wise work on ``tokens x experts`` fp32 scores: the
    cast (read 2, write 4), the score function and the bias add (read 4, write 4 each), topk's
    read; on the ``tokens x top_k`` choices: topk's values and ids written, the gather, the
    scale and the histogram. Backward: the gather's zero fill and scatter, the score function
    (two reads, a write) and the cast back (read 4, write 2).

    ``fp32_gate`` (profile ``moe_gate_fp32``, ab5ed59f8 2026-03-04): the gate runs under
    ``torch.autocast(dtype=float32)``: autocast casts the input and the weight up (read 2, write
    4 each), the GEMM runs in fp32 (TF32 off), its output needs no cast; backward the two
    gradients are cast back (read 4, write 2 each)."""
    te, tk = tokens * experts, tokens * topk
    cast = 0 if fp32_gate else 1  # the scores' .to(float32) and its backward
    fwd = cast * te * (ACT_BYTES + F32) + te * (2 * F32 + 2 * F32 + F32) \
        + tk * (F32 + INDEX) + tk * (INDEX + 2 * F32) + tk * 2 * F32 + tk * INDEX
    bwd = tk * 2 * F32 + te * F32 + tk * (INDEX + F32) + te * 3 * F32 \
        + cast * te * (F32 + ACT_BYTES)
    ops: list[Op] = []
    if fp32_gate:
        moved = float((tokens + experts) * hidden * (ACT_BYTES + F32))
        ops.append(Elementwise("router_fp32_casts", bytes=moved, kernels=2, bwd_bytes=moved,
                               bwd_kernels=2))
    ops.append(Gemm("router", m=tokens, n=experts, k=hidden,
                    dtype="fp32" if fp32_gate else "bf16"))
    ops.append(Elementwise("router_topk_softmax", bytes=float(fwd),
                           kernels=ROUTER_KERNELS[0] - 1 + cast, bwd_bytes=float(bwd),
                           bwd_kernels=ROUTER_KERNELS[1] - 1 + cast))
    return ops


def reorder_op(style: str, tokens: int, topk: int) -> Elementwise:
    """The reorder: the stable argsort of the ``tokens x top_k`` expert ids, the scores gathered
    in that order (read the indices and the scores, write 4) and ``// top_k`` (read, write).
    Its backward: only where the sorted scores weigh the outputs (``torchtitan_sorted``'s
    combine: the gather's ``index_put_(accumulate=True)``); the index-put era's bmm takes the
    unsorted scores, and the scatter-add era's product its sorted ones through a ``gather``
    whose backward is a scatter (two kernels)."""
    n = tokens * topk
    fwd = sort_bytes(n) + n * (INDEX + 2 * F32) + n * 2 * INDEX
    if style == "torchtitan_sorted":
        bwd, bwd_k = sort_bytes(n) + n * (INDEX + 3 * F32), SORTED_INDEX_PUT_KERNELS
    elif style == "torchtitan_scatter_add":
        bwd, bwd_k = n * (INDEX + 3 * F32), 2
    else:
        bwd, bwd_k = 0.0, 0
    return Elementwise("permute.argsort", bytes=fwd, kernels=SORT_KERNELS + 2,
                       bwd_bytes=bwd, bwd_kernels=bwd_k)


def gather_op(style: str, tokens: int, routed: int, hidden: int) -> Elementwise:
    """The tokens copied in expert order: ``routed`` rows read and written with their indices.
    Backward into the ``tokens x hidden`` input gradient: the ``torch.gather``'s
    ``scatter_add`` (zero fill, then each routed row added: read, read-modify-write; priced by
    bytes) in the first era, else advanced indexing's sorted ``index_put_(accumulate=True)``
    (zero fill, the index sort, each routed row read once and each token row read and
    written once)."""
    rows = routed * hidden * ACT_BYTES
    fwd = 2.0 * rows + routed * INDEX
    zeros = tokens * hidden * ACT_BYTES
    if style == "torchtitan_scatter_add":
        return Elementwise("permute", bytes=fwd, kernels=1,
                           bwd_bytes=zeros + 3.0 * rows + routed * INDEX, bwd_kernels=2)
    return Elementwise("permute", bytes=fwd, kernels=1,
                       bwd_bytes=zeros + sort_bytes(routed) + rows + 2.0 * zeros
                       + routed * INDEX, bwd_kernels=SORTED_INDEX_PUT_KERNELS)


def score_product(routed: int, hidden: int) -> Elementwise:
    """``(out.to(float32) * scores).to(dtype)`` on ``routed x hidden``: the cast (read 2,
    write 4), the product (read 4, write 4), the cast back (read 4, write 2). Backward: the
    gradient cast up (6), its product with the scores (8), the scores' gradient (the product with
    the fp32 input, 12, and its sum over ``hidden``, 4), the cast down (6): five kernels."""
    n = routed * hidden
    return Elementwise("expert_score_fp32", bytes=float(n * (ACT_BYTES + F32) * 2 + n * 2 * F32),
                       kernels=3, bwd_bytes=float(n * 36), bwd_kernels=5)


def exchange_ops(ep: int, experts: int, loop: bool) -> list[Op]:
    """Before an EP exchange (``ep`` ranks): the ``all_to_all_single`` of the tokens per expert
    (int64, one per expert) and the split sizes' copy to the host, which waits (sums, copies:
    four kernels). None with one EP rank: nothing leaves the GPU, and the padding permutation
    keeps its counts on the device, except under the for-loop experts (``loop``: their
    ``.tolist()`` of the counts)."""
    ops: list[Op] = []
    if ep > 1:
        ops.append(Comm("moe.tokens_per_expert_all_to_all", "all_to_all", experts * INDEX, "ep"))
    if ep > 1 or loop:
        ops.append(Elementwise("moe_tokens_to_host", bytes=experts * INDEX * 2.0,
                               host_sync=True, kernels=4))
    return ops


def shared_beside_combine(ep: int, dispatcher: str, overlapped: tuple[str, ...], titan: bool,
                          tp_split: bool) -> bool:
    """Whether torchtitan's shared experts run beside the combine's exchange, forward only
    (``Comm.beside_in_backward`` False): where there is one (EP > 1) and its dispatcher is one
    of ``overlapped`` (the profile's ``moe_shared_combine_overlap``): the all-to-all under
    torchtitan's own layer (``titan``; this module's docstring), DeepEP's async combine where
    the tokens are not split over TP (``tp_split``: 963c20cba "Overlaps with DeepEP async
    combine when sp_size == 1"; e215f4f32 2026-02-05 to 4a93ee4e4 2026-08-11, its backward a
    dispatch synced in its op). HybridEP's combine is synchronous."""
    if ep <= 1 or dispatcher not in overlapped:
        return False
    return titan if dispatcher == "alltoall" else dispatcher == "deepep" and not tp_split


def expert_entry(style: str, rows: int, hidden: int, ep: int) -> list[Op]:
    """Before the grouped GEMMs: the padding permutation of the first two eras; in the last, with
    EP, ``_permute``'s index computation (cumsums, transposes, ``repeat_interleave``, two
    ``arange``s and the index arithmetic: 10 kernels) and its gather of the received rows."""
    if style != "torchtitan_sorted":
        return [pad_permute(rows, hidden)]
    if ep <= 1:
        return []
    n = rows * hidden * ACT_BYTES
    return [Elementwise("expert_ep_permute", bytes=2.0 * n + rows * INDEX * 4, kernels=11,
                        bwd_bytes=sort_bytes(rows) + 3.0 * n + rows * INDEX,
                        bwd_kernels=SORTED_INDEX_PUT_KERNELS)]


def expert_exit(style: str, rows: int, hidden: int, ep: int) -> list[Op]:
    """After them: the padding's index-put back, or ``_unpermute``'s (its backward a gather)."""
    if style != "torchtitan_sorted":
        return [pad_unpermute(rows, hidden)]
    if ep <= 1:
        return []
    n = rows * hidden * ACT_BYTES
    return [Elementwise("expert_ep_unpermute", bytes=2.0 * n + rows * INDEX, kernels=1,
                        bwd_bytes=2.0 * n + rows * INDEX, bwd_kernels=1)]


def combine_ops(style: str, tokens: int, routed: int, hidden: int, topk: int) -> list[Op]:
    """The combine on the source rank, after the return exchange (this module's docstring)."""
    rows = routed * hidden * ACT_BYTES
    out = tokens * hidden * ACT_BYTES
    gather_back = 2.0 * rows + routed * INDEX  # a gather of the rows' gradient
    if style == "torchtitan_index_put":
        # zeros (write), index-put (read, write), .float() (read 2, write 4), the bmm (read the
        # fp32 rows, write tokens x hidden fp32), .to (read 4, write 2)
        n = routed * hidden
        fwd = rows + 2.0 * rows + routed * INDEX + n * (ACT_BYTES + F32) + n * F32 \
            + tokens * hidden * F32 + tokens * hidden * (F32 + ACT_BYTES)
        # .to's backward (6), the bmm's two products (read the fp32 rows and the gradient,
        # write the rows' gradient), .float()'s (read 4, write 2), the index-put's gather
        bwd = tokens * hidden * (ACT_BYTES + F32) + n * F32 + 2.0 * tokens * hidden * F32 \
            + n * F32 + n * (F32 + ACT_BYTES) + gather_back
        return [Elementwise("unpermute", bytes=fwd, kernels=5, bwd_bytes=bwd, bwd_kernels=5)]
    product = score_product(routed, hidden)
    if style == "torchtitan_scatter_add":
        # zeros (write), the out-of-place scatter_add: a copy of the destination (read,
        # write), each routed row read and added (read-modify-write): priced by its bytes
        fwd = 3.0 * out + 3.0 * rows + routed * INDEX
        return [product, Elementwise("unpermute", bytes=fwd, kernels=3, bwd_bytes=gather_back,
                                     bwd_kernels=1)]
    fwd = out + sort_bytes(routed) + rows + 2.0 * out + routed * INDEX
    return [product, Elementwise("unpermute", bytes=fwd, kernels=SORTED_INDEX_PUT_KERNELS,
                                 bwd_bytes=gather_back, bwd_kernels=1)]


__all__ = ["F32", "INDEX", "ROUTER_KERNELS", "SORTED_INDEX_PUT_KERNELS", "SORT_KERNELS",
           "SORT_PASSES", "STYLES", "combine_ops", "exchange_ops", "expert_entry", "expert_exit",
           "gather_op", "reorder_op", "router_ops", "score_product", "shared_beside_combine",
           "sort_bytes"]
