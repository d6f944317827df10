"""What frameworks do with the gradients after a sharded backward: FSDP1's flatten and shard
copies per wrapped module, and DeepSpeed ZeRO-3's reduce bucket (its copies and the collective
it reduces with). Split from ``workload.sharding``; op lists only."""

from __future__ import annotations

from trainsim.catalog.frameworks import framework_supports
from trainsim.config import RunConfig
from trainsim.model.counts import attention_matrices, layer_norms, norm_tensors
from trainsim.workload.ops import ACT_BYTES as ACT
from trainsim.workload.ops import Elementwise, Op
from trainsim.workload.sharding import end_matrices, rank_tensors
from trainsim.workload.vocab import rank_vocab


def _module_order(cfg: RunConfig, i: int) -> list[float]:
    """Elements of layer ``i``'s parameter tensors on this rank in the order the module
    registers them, as a FlatParameter lays them end to end: the first norm, the QKV weight and
    bias, the output projection's, the second norm, fc1's, fc2's (GPT-2, MPT, Megatron's
    ``TransformerLayer``). Other layers (MoE, MLA, QK or post-sublayer norms) keep
    ``layer_tensors``' order."""
    m, tp = cfg.model, cfg.parallel.tp
    if m.is_mla or m.is_moe_layer(i) or m.qk_layernorm or m.post_sublayer_norm or \
            m.hybrid_layer_pattern is not None:
        return [n for n, _ in rank_tensors(cfg, [i])]
    h, f = m.hidden_size, m.ffn_size
    mats = 3 if m.activation == "swiglu" else 2
    mlp_bias = m.mlp_bias
    norm = [float(h)] * norm_tensors(m)
    second = norm if layer_norms(m) == 2 else []  # a parallel block of one norm has none
    qkv = attention_matrices(m) - m.v_dim * h
    out = [*norm, qkv / tp, *([(m.q_size + 2 * m.kv_size) / tp] if m.qkv_bias else []),
           m.v_dim * h / tp, *([float(h)] if m.proj_bias else []), *second,
           (mats - 1) * h * f / tp, *([(mats - 1) * f / tp] if mlp_bias else []),
           f * h / tp, *([float(h)] if mlp_bias else [])]
    return [n for n in out if n > 0]


def fsdp1_grad_copies(cfg: RunConfig, layers: range | list[int], first: bool,
                      last: bool) -> tuple[list[Op], list[Op]]:
    """What FSDP1 (torch 2.1) does to the gradients of a virtual stage's units after each
    backward pass, beyond the reduce-scatter: (ops on the compute stream, ops on FSDP's side
    streams). On the compute stream, inside the backward: autograd's backward of the ``split``
    that made the parameters views of the unsharded flat parameter (``_use_unsharded_views``)
    concatenates their 16-bit gradients into one flat gradient (read, write). The rest runs in
    ``_post_backward_hook`` under ``_post_backward_stream``, after that stream waits for the
    compute stream, so it overlaps the backward of the units still to go, serialised with the
    reduce-scatter it feeds: the cast to the reduce dtype when that differs (Composer's mixed
    precision DEFAULT reduces in fp32: read 2, write 4 bytes), the in-place pre-divide (read,
    write in the reduce dtype; the factor exceeds 1 on two ranks or more:
    ``_get_gradient_predivide_factor``), and on the local shard the post-divide, the cast back
    to fp32 after a 16-bit reduction and the sum into the saved gradient shard; each gather's
    cast of the fp32 shard to 16 bits (twice under FULL_SHARD: the forward and the backward
    gather) runs on the pre-unshard stream. torch/distributed/fsdp/_runtime_utils.py
    (``_post_backward_hook``, ``_reduce_grad``, ``_div_if_needed``, ``_unshard``) and
    flat_param.py (``_use_unsharded_views``, ``_use_low_precision_shard``), torch 2.1."""
    p, t = cfg.parallel, cfg.training
    world = cfg.shard_ranks
    if world == 1:
        return [], []
    n = sum(x for x, _ in rank_tensors(cfg, layers))
    n += rank_vocab(cfg) * cfg.model.hidden_size * end_matrices(cfg, first, last)
    rb = 4 if t.grad_reduce_in_fp32 else ACT
    side_per_param = (ACT + rb if rb != ACT else 0) + 2 * rb
    gathers = 2 if p.zero_stage >= 3 else 1
    per_shard = 2 * rb + (ACT + 4 if rb != 4 else 0) + 3 * 4 + gathers * (4 + ACT)
    return ([Elementwise("fsdp_grad_flatten", bytes=n * 2 * ACT)],
            [Elementwise("fsdp_grad_cast_divide", bytes=n * side_per_param,
                         kernels=1 + int(rb != ACT)),
             Elementwise("fsdp_shard_casts", bytes=n / world * per_shard, kernels=3 + gathers)])


def zero3_reduce_bucket_ops(cfg: RunConfig, layers: range | list[int], first: bool,
                            last: bool) -> list[Op]:
    """What DeepSpeed's 2021 stage 3 does to a virtual stage's 16-bit gradients around its
    per-parameter reduce-scatters, after every backward pass (microsoft/DeepSpeed v0.3.13 -
    v0.5.10 deepspeed/runtime/zero/stage3.py). Gradients arrive one tensor at a time, in
    reverse module order (``reduce_independent_p_g_buckets_and_remove_grads``). When the next
    one would overflow the reduce bucket (``reduce_bucket_size``, the profile's
    ``ddp_bucket_size``), the bucket is flushed (``reduce_ipg_grads``). A tensor of up to the
    bucket size is copied into the bucket buffer (``contiguous_gradients``: read 2, write 2
    bytes per element). A larger one stays where it is and goes with the next flush. Every
    flush runs ``average_tensor``, which divides the whole bucket buffer in place (all
    ``reduce_bucket_size`` elements, however full) and the large tensor with it: read 2,
    write 2 bytes per element, one kernel each. The per-rank reduce-scatters are priced by
    the task graph. Empty for other data-parallel implementations.

    From v0.6.0 (profile feature ``zero3_avg_scatter_grads``) the same buckets fill and flush
    (``__add_grad_to_ipg_bucket``, now on the reduce stream), but each flush runs
    ``__avg_scatter_grads`` -> ``runtime/comm/coalesced_collectives.py``
    ``reduce_scatter_coalesced``: the bucket's gradients interleaved into one buffer by
    ``torch.cat`` (skipped for a lone tensor) and that buffer divided in place (``div_``, the
    pre-divide): only the gradients the bucket holds, then one reduce-scatter.

    Before v0.6 without ``contiguous_gradients`` (``zero3_grad_collective`` 'all_reduce') the
    same buckets fill and flush, but nothing is copied into a bucket buffer: each flush runs
    ``buffered_reduce_fallback`` -> ``allreduce_and_copy`` on the reduction stream, which
    flattens the bucket's gradients into one tensor (``_flatten_dense_tensors``: a ``torch.cat``,
    none for a lone tensor), divides it (``allreduce_bucket``: the bucket's own gradients),
    all-reduces it and copies each gradient back out of it (one copy per tensor of a bucket of
    several; a lone tensor is reduced in place)."""
    p, m, t = cfg.parallel, cfg.model, cfg.training
    bucket = p.ddp_bucket_size
    scatter = framework_supports(t.framework, t.framework_version, "zero3_avg_scatter_grads")
    deepspeed = p.zero3_gather == "per_parameter" or (scatter and p.data_parallel_impl
                                                      == "deepspeed")
    if not deepspeed or p.zero_stage < 3 or not bucket or cfg.shard_ranks == 1:
        return []
    order = [n for i in reversed(list(layers)) for n in reversed(_module_order(cfg, i))]
    order += [rank_vocab(cfg) * m.hidden_size] * end_matrices(cfg, first, last)
    fallback = zero3_grad_collective(cfg) == "all_reduce"
    copied = divided = interleaved = 0.0
    copies = flushes = cats = backs = 0
    filled, large, held = 0.0, 0.0, 0
    for n in [*order, None]:  # None: the epilogue's flush after the backward
        if filled and (n is None or filled + n > bucket):
            if scatter or fallback:  # the bucket's own: one cat (unless alone), one divide
                flushes += 1
                divided += filled
                cats += int(held > 1)
                interleaved += filled if held > 1 else 0.0
            else:  # average_tensor: the whole buffer, and the large tensor apart
                flushes += 1 + int(large > 0)
                divided += bucket + large
            filled, large, held = 0.0, 0.0, 0
        if n is None:
            break
        if n > bucket:
            large = n
        elif not fallback:
            copied += n
            copies += 1
        filled += n
        held += 1
        backs += int(held == 2) + int(held > 1)  # each tensor of a bucket of several
    if fallback:
        return [Elementwise("zero3_bucket_flatten", bytes=2 * ACT * interleaved, kernels=cats),
                Elementwise("zero3_bucket_divide", bytes=2 * ACT * divided, kernels=flushes),
                Elementwise("zero3_bucket_copy_back", bytes=2 * ACT * interleaved,
                            kernels=backs)]
    ops = [Elementwise("zero3_grad_to_bucket", bytes=2 * ACT * copied, kernels=copies),
           Elementwise("zero3_bucket_divide", bytes=2 * ACT * divided, kernels=flushes)]
    if cats:
        ops.append(Elementwise("zero3_bucket_interleave", bytes=2 * ACT * interleaved,
                               kernels=cats))
    return ops


def zero3_grad_collective(cfg: RunConfig) -> str:
    """The collective that reduces a ZeRO-3 / FSDP backward's gradients: ``all_reduce`` for
    DeepSpeed's stage 3 before v0.6 without ``contiguous_gradients``
    (``parallel.zero3_grad_reduce``; stage3.py ``reduce_ipg_grads`` ->
    ``buffered_reduce_fallback``, v0.3.13 - v0.5.10), else ``reduce_scatter``."""
    p, t = cfg.parallel, cfg.training
    if p.zero3_grad_reduce == "all_reduce" and p.data_parallel_impl == "deepspeed" and \
            not framework_supports(t.framework, t.framework_version, "zero3_avg_scatter_grads"):
        return "all_reduce"
    return "reduce_scatter"
