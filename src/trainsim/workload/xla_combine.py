"""XLA's all-reduce combiner over an unscanned layer stack's HSDP replica all-reduces.

A JAX step whose decoder layers are separate parameters (MaxText ``scan_layers=false``: one
``layers_{i}`` module per layer, AI-Hypercomputer/maxtext@efb6d9e4a MaxText/layers/models.py)
is one HLO module with no layer loop. Its SPMD partitioner reduces each weight gradient where
the dot makes it: over the fsdp axis (an all-reduce plus dynamic-slice, a reduce-scatter once
XLA's ReduceScatterCreator matches it), then over the data axis, a bf16 all-reduce of the
shard (``benchmarks/jax62_hlo.py`` reads both off the partitioned module of a MaxText-shaped
step on JAX 0.4.26). XLA's ``AllReduceCombiner`` then joins those all-reduces
(openxla/xla xla/service/collective_combiner_utils.h ``CombineInstructionsByKey``, 2021-2024:
"Instructions are combined in topological post-order", a group closed where the next
instruction would pass ``combine_threshold_bytes``, one over it never combined) up to the run's
``--xla_gpu_all_reduce_combine_threshold_bytes``. The post order of those all-reduces is the
order the step reads the gradients in: the global-norm clip (``optax.clip_by_global_norm``)
sums the leaves in pytree order, and JAX flattens a dict by its sorted keys, so ``layers_10``
comes before ``layers_2`` (``benchmarks/jax62_hlo.py`` prints that order from a 12-layer
module). A combined all-reduce starts when its last operand is ready: a group that holds an
early layer waits for the end of the backward.
"""

from __future__ import annotations

from trainsim.config import RunConfig
from trainsim.workload.sharding import rank_grad_elements

XLA_ALL_REDUCE_COMBINE_BYTES = 30 * 2**20
"""XLA's GPU default of ``xla_gpu_all_reduce_combine_threshold_bytes`` where a run sets none
(openxla/xla xla/debug_options_flags.cc, ``30 * 1024 * 1024``)."""
XLA_COMBINE_COUNT = 256
"""Operands one combined all-reduce may take (``combine_threshold_count`` 256, the
AllReduceCombiner openxla/xla xla/service/gpu/gpu_compiler.cc builds)."""


def layer_tensor_shares(cfg: RunConfig) -> list[float]:
    """Each weight tensor of a decoder layer as a share of the layer's matrices, in the
    layer's sorted-key order (MaxText's ``mlp`` {``wi_0``, ``wi_1``, ``wo``} before
    ``self_attention`` {``key``, ``out``, ``query``, ``value``}; a non-gated MLP's ``wi``,
    ``wo``)."""
    m = cfg.model
    h, f = m.hidden_size, m.ffn_size
    q, kv = m.q_size, m.kv_size
    mlp = [h * f] * (3 if m.activation == "swiglu" else 2)
    sizes = [*mlp, h * kv, q * h, h * q, h * kv]
    total = sum(sizes)
    return [s / total for s in sizes]


def applies(cfg: RunConfig) -> bool:
    """Whether the run's replica all-reduces are combined across layers: an unscanned layer
    stack (``training.unscanned_layers``) under HSDP (``dp_replicate`` > 1) with ZeRO-3."""
    return bool(cfg.training.unscanned_layers) and cfg.parallel.dp_replicate > 1 and \
        cfg.parallel.zero_stage == 3


def threshold_bytes(cfg: RunConfig) -> int:
    """The run's all-reduce combine threshold, else XLA's default."""
    return cfg.parallel.all_reduce_combine_bytes or XLA_ALL_REDUCE_COMBINE_BYTES


def combined_replica_reduces(cfg: RunConfig, layers: list[int], first: bool, last: bool,
                             width: float) -> list[list[float]]:
    """The combined replica all-reduces of a backward over ``layers`` (in backward order: part
    k runs ``layers[k]``; the root parameters, embedding and output layer, reduced with the
    last part as FSDP's root post-backward is): for each part, the bytes of every combined
    all-reduce whose last operand that part's backward makes, in the combiner's order.
    ``width``: bytes of a gradient element in the reduction. Each layer's gradient is its
    tensors (``layer_tensor_shares``) of the rank's shard (``rank_grad_elements`` over the
    sharding group, then divided by its ranks as the replica all-reduce takes it)."""
    ranks = max(1, cfg.shard_ranks)
    part = {layer: k for k, layer in enumerate(layers)}
    shares = layer_tensor_shares(cfg)
    tensors: list[tuple[float, int]] = []  # (bytes, part), post order
    for layer in sorted(layers, key=lambda i: f"layers_{i}"):
        elements = rank_grad_elements(cfg, [layer], False, False)[0][0]
        tensors += [(elements * s * width / ranks, part[layer]) for s in shares]
    if layers and (first or last):  # decoder.logits_dense and token_embedder sort last
        root = rank_grad_elements(cfg, [layers[-1]], first, last)[0][0] - \
            rank_grad_elements(cfg, [layers[-1]], False, False)[0][0]
        if root > 0:
            tensors.append((root * width / ranks, len(layers) - 1))
    limit, out = threshold_bytes(cfg), [[] for _ in layers]
    group: list[tuple[float, int]] = []

    def close() -> None:
        if group:
            out[max(k for _, k in group)].append(sum(b for b, _ in group))
            group.clear()
    for size, k in tensors:
        if size > limit:  # never combined: its own all-reduce
            out[k].append(size)
            continue
        if sum(b for b, _ in group) + size > limit or len(group) >= XLA_COMBINE_COUNT:
            close()
        group.append((size, k))
    close()
    return out
