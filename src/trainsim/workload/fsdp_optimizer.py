"""The optimizer step as Composer + PyTorch FSDP (``use_orig_params=True``) run it, tensor by
tensor: the pieces of each parameter tensor a rank's shard holds (a flat parameter cut into
equal shards) and the kernels, host syncs and all-reduce of the per-tensor step. Op lists only;
``optimizer_tasks`` prices and places them."""

from __future__ import annotations

import functools

from trainsim.config import RunConfig
from trainsim.model.counts import norm_tensors
from trainsim.workload.ops import Comm, Elementwise, Op
from trainsim.workload.sharding_grads import _module_order
from trainsim.workload.vocab import rank_vocab


@functools.lru_cache(maxsize=256)
def _pieces_by_rank(tensors: tuple[float, ...], world: int) -> tuple[tuple[float, ...], ...]:
    """Per rank, the pieces of ``tensors`` its shard holds when they are laid end to end in one
    flat parameter, padded to a multiple of ``world`` and cut into ``world`` equal shards."""
    shard = -(-sum(tensors) // world)
    pieces: list[list[float]] = [[] for _ in range(world)]
    start = 0.0
    for n in tensors:
        end = start + n
        first, last = int(start // shard), int((end - 1) // shard)
        for r in range(first, min(last, world - 1) + 1):
            pieces[r].append(min(end, (r + 1) * shard) - max(start, r * shard))
        start = end
    return tuple(tuple(p) for p in pieces)


def fsdp_optimizer_pieces(cfg: RunConfig, stage: int) -> list[float]:
    """Elements of each parameter tensor the optimizer of pipeline stage ``stage`` steps on the
    rank that steps the most of them. FSDP with ``use_orig_params=True`` (Composer's default)
    hands the optimizer each original parameter as a view of this rank's shard: a tensor
    outside the shard has no gradient and is skipped, one cut by a shard boundary counts on
    both ranks (torch/distributed/fsdp/flat_param.py ``_use_sharded_views``,
    ``_use_sharded_grad_views``, torch 2.1). Units: the root (word and position embeddings,
    final norm, an untied output layer) and one per transformer block, each sharded over the
    data-parallel ranks (all of a rank's tensors where nothing is sharded)."""
    m, p = cfg.model, cfg.parallel
    world = cfg.shard_ranks if p.zero_stage >= 1 else 1
    ranges = cfg.virtual_stage_layers()
    units: list[tuple[float, ...]] = []
    for v in range(stage, len(ranges), p.pp):
        units += [tuple(_module_order(cfg, i)) for i in ranges[v]]
    if stage in (0, p.pp - 1):
        h = m.hidden_size
        root = [rank_vocab(cfg) * h] if stage == 0 else []
        if stage == 0 and m.position_embedding == "learned":
            root.append(float(m.max_position_embeddings * h))
        if stage == p.pp - 1:
            root += [float(h)] * norm_tensors(m)
            if not m.tied_embeddings:
                root.append(rank_vocab(cfg) * h)
        units.append(tuple(root))
    per_rank = [0] * world
    for unit in set(units):
        counts = [len(x) for x in _pieces_by_rank(unit, world)]
        k = units.count(unit)
        per_rank = [a + k * b for a, b in zip(per_rank, counts)]
    busiest = per_rank.index(max(per_rank))
    return [n for unit in units for n in _pieces_by_rank(unit, world)[busiest]]


PER_TENSOR_ADAMW = (8, 8 + 12 + 8 + 12 + 8 + 8 + 8 + 16)
"""(kernels, bytes per fp32 element) of Composer's ``DecoupledAdamW.adamw`` for one tensor
(mosaicml/composer v0.17.2 composer/optim/decoupled_weight_decay.py): ``exp_avg.mul_`` and
``.add_`` (8 + 12), ``exp_avg_sq.mul_`` and ``.addcmul_`` (8 + 12), ``sqrt`` (8), the division by
the bias correction (8), ``+ eps`` (8), ``param.addcdiv_`` (16). The decay ``param.mul_`` runs
only with a weight decay, which llm-foundry's pretrain YAMLs set to 0."""


def per_tensor_optimizer(pieces: list[float], group: str) -> list[Op]:
    """The step as Composer + FSDP issue it on one rank, in issue order, for the parameter
    tensors ``pieces`` (elements each): gradient clipping by norm (Composer's
    ``gradient_clipping`` algorithm in every llm-foundry YAML calls FSDP's ``clip_grad_norm_``:
    a ``vector_norm`` per gradient, the stacked norms' norm, an all-reduce, the clip
    coefficient, a ``mul_`` per gradient), then ``DecoupledAdamW.step``: ``state['step'] += 1``
    per tensor (a GPU tensor), then per tensor ``state_steps[i].item()`` (the host waits for
    the GPU) and the update's kernels (``PER_TENSOR_ADAMW``)."""
    kernels, per = PER_TENSOR_ADAMW
    ops: list[Op] = [Elementwise("clip_grad_norm", bytes=4 * n) for n in pieces]
    ops.append(Elementwise("clip_grad_total_norm", bytes=8 * len(pieces), kernels=2))
    ops.append(Comm("clip_grad_norm_all_reduce", "all_reduce", 4, group))
    ops.append(Elementwise("clip_coef", bytes=16, kernels=3))
    ops += [Elementwise("clip_grad_scale", bytes=8 * n) for n in pieces]
    ops += [Elementwise("adamw_step_count", bytes=8) for _ in pieces]
    for n in pieces:
        ops.append(Elementwise("adamw_step_to_host", bytes=4, host_sync=True))
        ops.append(Elementwise("adamw_update", bytes=per * n, kernels=kernels))
    return ops
