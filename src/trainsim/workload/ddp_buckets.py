"""Megatron DDP's gradient buckets over a model chunk's parameter tensors: the greedy pass of
``_ParamAndGradBuffer`` (how many buckets, so how many collectives and per-bucket passes), and
where the backward makes each ready (``bucket_ready``)."""

from __future__ import annotations

from trainsim.catalog.frameworks import profile_supports
from trainsim.config import RunConfig
from trainsim.model.counts import layer_matrices, layer_tensors, norm_tensors
from trainsim.workload.fp8_gather import fp8_weights_gathered
from trainsim.workload.sharding import bucket_params, end_matrices, rank_tensors
from trainsim.workload.vocab import rank_vocab


def _bucket_order(cfg: RunConfig, layers: range | list[int], first: bool, last: bool
                  ) -> tuple[list[tuple[float, bool]], list[float]]:
    """A model chunk's parameter tensors on this rank in reverse registration order (Megatron
    iterates ``params[::-1]``, roughly the backward's order), split as DDP splits them: the
    dense buffer's (elements, shared embedding) and the routed experts' buffer elements. The
    chunk holds the word (and learned position) embedding when ``first``, the final norm and
    the output layer (a tied model's copy of the embedding) when ``last``."""
    m = cfg.model
    vocab = rank_vocab(cfg) * m.hidden_size
    # a tied embedding split over pipeline stages is marked ``shared_embedding`` on both ends
    shared = m.tied_embeddings and cfg.parallel.pp > 1
    fwd: list[tuple[float, bool, bool]] = []  # (elements, expert, shared embedding)
    if first:
        fwd.append((vocab, False, shared))
        if m.position_embedding == "learned":
            fwd.append((float(m.max_position_embeddings * m.hidden_size), False, False))
    fwd += [(n, expert, False) for n, expert in rank_tensors(cfg, layers)]
    if last:
        fwd += [(float(m.hidden_size), False, False)] * norm_tensors(m)
        if end_matrices(cfg, first, last) > int(first):
            fwd.append((vocab, False, shared))
    rev = fwd[::-1]
    return ([(n, sh) for n, expert, sh in rev if not expert],
            [n for n, expert, _ in rev if expert])


def ddp_buckets(cfg: RunConfig, layers: range | list[int], first: bool, last: bool) -> int:
    """Megatron DDP's gradient buckets over one model chunk holding ``layers`` (with the word
    embedding when ``first``, the final norm and output layer when ``last``): Megatron-LM
    core_v0.6.0 (L282-L320), core_v0.8.0, core_v0.12.0 (L574-L598), core_v0.14.0 (L628-L647)
    megatron/core/distributed/param_and_grad_buffer.py
    ``_ParamAndGradBuffer.__init__`` walks the chunk's parameters in reverse
    (``for param in params[::-1]``) and closes a bucket after the parameter that brings it to
    ``bucket_size`` elements or more (``bucket_params``), so never more buckets than tensors;
    a ``shared_embedding`` parameter (a tied embedding split over pipeline stages,
    ``LanguageModule.setup_embeddings_and_output_layer``) gets its own bucket under the
    distributed optimizer (``_does_param_require_new_bucket``). distributed_data_parallel.py
    builds separate buffers, each bucketed alike, for the dense and the routed-expert
    parameters (``allreduce`` False). The padding of each parameter start to 64 elements and of
    bucket ends to the data-parallel size (distributed optimizer) moves bucket ends by far less
    than a tensor and is left out, as is core_v0.5.0's grad_buffer.py rule that a bucket
    never closes on a lone parameter (``len(bucket_params) > 1``)."""
    return max(1, len(_buckets(cfg, layers, first, last)[0]))


def bucket_ready(cfg: RunConfig, layers: range | list[int], first: bool, last: bool
                 ) -> tuple[tuple[int, ...], tuple[tuple[float, float], ...]]:
    """Where a model chunk's gradient buckets become ready in its last backward, and what each
    reduces: (``n + 1`` bounds, each a count of the chunk's layers whose backward is done, from
    0 to all; per bucket its share of the chunk's dense buffer and of its routed-expert buffer).

    The buckets are ``ddp_buckets``' (``_ParamAndGradBuffer.__init__``: ``params[::-1]``, a
    bucket closed after the tensor that brings it to ``bucket_params``, dense and expert
    buffers apart, a shared embedding alone under the distributed optimizer). Each bucket is
    its own group (core_v0.14.0 param_and_grad_buffer.py ``partition_buckets``, case 2: no fp8
    parameter buffer), whose reduction starts once every parameter in it has its gradient
    (``_ParamAndGradBucketGroup.register_grad_ready``, last micro-batch only). The backward
    makes the gradients in the buffer's order: the output layer and final norm in the last
    chunk's head, each layer's at the end of that layer, the word embedding in the first
    chunk's tail, so a bucket is ready at the end of the layer holding its last tensor
    (buckets ready after the same layer, of either buffer, one after the other). DeepSpeed's
    ZeRO-1/2 bucket (stage_1_and_2.py ``reduce_independent_p_g_buckets_and_remove_grads``)
    flushes before the tensor that would overflow it instead, one tensor later: the same
    layer, or the next."""
    closed, totals = _buckets(cfg, layers, first, last)
    n = len(layers)
    closed.sort()
    if not closed or closed[-1][0] != n:  # a chunk without parameters
        closed.append((n, len(closed), 0, 0.0))
    return (0, *(c[0] for c in closed)), tuple(
        (e / totals[0], 0.0) if slot == 0 else (0.0, e / totals[1]) for _, _, slot, e in closed)


def _buckets(cfg: RunConfig, layers: range | list[int], first: bool, last: bool
             ) -> tuple[list[tuple[int, int, int, float]], tuple[float, float]]:
    """:func:`_bucketed`, kept per process by what it reads of ``cfg`` (``_BUCKETS``); a new
    list of the kept buckets each time (``bucket_ready`` sorts and extends it)."""
    p, m = cfg.parallel, cfg.model
    key = (id(m), p.tp, p.etp, p.ep, p.pp > 1, bucket_params(cfg), p.shards_optimizer,
           fp8_bucket_groups(cfg), layers if type(layers) is range else tuple(layers), first,
           last)
    hit = _BUCKETS.get(key)
    if hit is None or hit[0] is not m:
        closed, totals = _bucketed(cfg, layers, first, last)
        if len(closed) > _BUCKETS_HELD_MOST:  # one pathological chunk: not kept
            return closed, totals
        if not _BUCKETS:  # emptied from outside too (a test's clear())
            _HELD[0] = 0
        if len(_BUCKETS) >= _BUCKETS_KEPT or _HELD[0] + len(closed) > _BUCKETS_HELD_MOST:
            _BUCKETS.clear()
            _HELD[0] = 0
        if hit is not None:  # a stale model's entry under a reused identity
            _HELD[0] -= len(hit[1])
        hit = _BUCKETS[key] = (m, tuple(closed), totals)
        _HELD[0] += len(closed)
    return list(hit[1]), hit[2]


_BUCKETS: dict[tuple, tuple[object, tuple[tuple[int, int, int, float], ...],
                            tuple[float, float]]] = {}
""":func:`_bucketed`'s answers by (model identity, tp, etp, ep, whether pp > 1,
``bucket_params``, ``shards_optimizer``, ``fp8_bucket_groups``, the layers, first, last):
everything it reads of the config (``_bucket_order``, ``rank_tensors``, ``end_matrices``,
``_rank_matrices``), each kept with its (frozen) model so an identity is never reused while
kept. A search asks it for every layout's buckets in its bounds and again for every task
graph's split backward with the same inputs (the 22B search: 6,306 calls, ~6 % of its CPU);
the same tuples of the same floats."""
_BUCKETS_KEPT = 4096
_BUCKETS_HELD_MOST = 131_072
"""Most buckets ``_BUCKETS`` holds over all its entries (about 130 bytes each, so ~17 MB): a
bound on its size, not only its entries. A chunk of a model with many routed experts and a tiny
``ddp_bucket_size`` closes a bucket per tensor (512 experts x 256 layers: 526,596 buckets, 70
MB as one entry), so such a chunk is worked out each time rather than kept."""
_HELD = [0]
"""Buckets ``_BUCKETS`` holds now (the sum of its entries' lengths)."""


def _bucketed(cfg: RunConfig, layers: range | list[int], first: bool, last: bool
              ) -> tuple[list[tuple[int, int, int, float]], tuple[float, float]]:
    """The greedy pass of ``_ParamAndGradBuffer`` over the chunk's dense buffer, then its
    routed-expert buffer: each bucket as (the chunk's layers whose backward is done when its
    last tensor's gradient is, its index, 0 dense / 1 expert, elements), and the two buffers'
    elements."""
    m = cfg.model
    order = list(layers)[::-1]
    dense, experts = _bucket_order(cfg, layers, first, last)
    # each tensor's place, in ``_bucket_order``'s order: the head's matrix and norms (0), each
    # layer's tensors (the layers done with it), the embeddings (all)
    head = (end_matrices(cfg, first, last) > int(first)) + (
        norm_tensors(m) if last else 0)
    per_layer = [rank_tensors(cfg, [i]) for i in order]
    places: list[int] = [0] * head
    for j, tensors in enumerate(per_layer):
        places += [j + 1] * sum(not e for _, e in tensors)
    places += [len(order)] * (len(dense) - len(places))
    expert_places = [j + 1 for j, tensors in enumerate(per_layer) for _, e in tensors if e]
    size = bucket_params(cfg)
    # which tensors are fp8 weights, in the same reversed order (``_bucket_order``)
    rev = list(zip(_rank_matrices(cfg, layers), rank_tensors(cfg, layers), strict=True)
               )[::-1] if fp8_bucket_groups(cfg) else []
    dense_fp8 = [False] * head + [f for f, (_, e) in rev if not e]
    dense_fp8 += [False] * (len(dense) - len(dense_fp8))
    expert_fp8 = [f for f, (_, e) in rev if e] or [False] * len(experts)
    closed: list[tuple[int, int, int, float]] = []
    for sizes, at, slot, split, kinds in (
            (dense, places, 0, cfg.parallel.shards_optimizer, dense_fp8),
            ([(n, False) for n in experts], expert_places, 1, False, expert_fp8)):
        # the fp8 weights' buffer and the rest's, each bucketed alone; every bucket of the
        # rest joins the fp8 buffer's last bucket group (``partition_buckets``, case 3)
        parts = [_greedy([(t, w) for t, w, k in zip(sizes, at, kinds, strict=True) if k == f],
                         size, split) for f in ((True, False) if any(kinds) else (False,))]
        if len(parts) == 2 and parts[0] and parts[1]:
            *front, (where, n) = parts[0]
            parts = [front + [(max([where] + [w for w, _ in parts[1]]),
                               n + sum(e for _, e in parts[1]))]]
        for where, n in (b for part in parts for b in part):
            closed.append((where, len(closed), slot, n))
    return closed, (sum(n for n, _ in dense) or 1.0, sum(experts) or 1.0)


def _greedy(tensors: list[tuple[tuple[float, bool], int]], size: float, split: bool
            ) -> list[tuple[int, float]]:
    """``_ParamAndGradBuffer``'s pass over one buffer's tensors, each ((elements, shared
    embedding), layers done when its gradient is made): its buckets as (where the last
    tensor's gradient is made, elements)."""
    out: list[tuple[int, float]] = []
    filled, last_at = 0.0, 0
    for (n, shared), where in tensors:
        if shared and split and filled > 0:  # the shared embedding starts a bucket
            out.append((last_at, filled))
            filled = 0.0
        filled, last_at = filled + n, where
        if filled >= size or (shared and split):
            out.append((where, filled))
            filled = 0.0
    if filled > 0:
        out.append((last_at, filled))
    return out


def fp8_bucket_groups(cfg: RunConfig) -> bool:
    """Whether Megatron-core's DDP keeps the run's fp8 weights in a buffer of their own and
    groups the other buffer's buckets with its last bucket: fp8 parameters
    (``fp8_weights_gathered``: Transformer Engine quantized weights, ``is_float8tensor``,
    bucketed as ``torch.uint8``, distributed_data_parallel.py ``_allocate_buffers_for_
    parameters`` from core_v0.9.0) under Megatron's DDP, and a profile with bucket groups
    (``ddp_fp8_bucket_groups``: core_v0.9.0 - core_v0.19.0 param_and_grad_buffer.py
    ``partition_buckets``, case 3: "merge all non-fp8 buckets into the last fp8 bucket
    group", so biases, norms, routers, the embedding and the output layer are reduced with
    the chunk's first layers, once all of them have their gradients)."""
    p = cfg.parallel
    return p.data_parallel_impl == "megatron" and p.zero_stage < 3 and \
        fp8_weights_gathered(cfg) and profile_supports(cfg, "ddp_fp8_bucket_groups")


def _rank_matrices(cfg: RunConfig, layers: range | list[int]) -> list[bool]:
    """``layer_matrices`` of each tensor ``rank_tensors`` lists (per layer a rank's dense
    tensors, then its experts' share)."""
    m, ep = cfg.model, cfg.parallel.ep
    out: list[bool] = []
    for i in layers:
        kinds = list(zip(layer_tensors(m, i), layer_matrices(m, i), strict=True))
        experts = [f for (_, e), f in kinds if e]
        out += [f for (_, e), f in kinds if not e] + experts[:len(experts) // ep]
    return out
