"""Activation CPU offloading as Megatron-core runs it through Transformer Engine.

Megatron-core's ``--cpu-offloading --cpu-offloading-num-layers N``
(megatron/core/transformer/transformer_block.py, core_r0.16) wraps each transformer layer in
Transformer Engine's ``get_cpu_offload_context(enabled, N, num_layers, ...)``. From TE 2.10
(transformer_engine/pytorch/cpu_offload.py, ``_init_offload_synchronization_dicts``) the
default schedule offloads layers 0..N-1: each saved tensor of layer i is copied to pinned host
memory on a side stream as soon as it is saved; the forward of layer L-N+i waits until layer
i's copy has finished and frees it; in the backward the reload of layer i starts after the
backward of layer L-1-N+i. So at most L-N layers' activations are on the GPU at once
(``memory.estimate`` drops the first N layers from a micro-batch's activations), and the
copies overlap the compute as long as each fits in the window the schedule gives it.

Megatron-core allows it only without pipeline parallelism and without recomputation
(transformer_config.py, core_v0.5.0 to core_v0.16.0), which ``ParallelConfig`` enforces, and
without CUDA graphs (``RunConfig``); Megatron-core before 0.5 has no offloading (its profile).

Transformer Engine before 2.10 (NeMo 25.04 / 25.07 pin 2.2 / 2.5, Megatron-Bridge 25.09 /
25.11 pin 2.7 / release_v2.9 70f53666: cpu_offload.py ``AsyncDoubleBufferGroupOffloadHandler``
L303-350, L490-551; 2.10 kept it as cpu_offload_v1.py behind ``NVTE_CPU_OFFLOAD_V1``) schedules
the same copies in windows: copy 0 starts when layer 0's forward ends; when layer
``layer_window_map[k]`` (((L // N) * (k + 1)) - 1, plus k + 1 for the first L % N groups and
L % N after) ends, the compute stream waits for copy k, frees it and starts copy k + 1. So
copy k has the forward of the layers between two window ends to hide behind, L // N (one
more for the first L % N), and copy 0 one layer fewer when N divides L. The peak is the same
within one layer (the L - N kept layers and one copy in flight). :func:`copies_hidden` takes
the schedule of the framework's Transformer Engine (the profile's ``te_version``; 2.10's
where none is recorded).
Megatron-core's fine-grained offloading (core_v0.16.0
``fine_grained_activation_offloading``, ``offload_modules``) is another mechanism, not modelled.

The copies are not priced by the event engine: :func:`copies_hidden` says whether they fit in
their windows at the fastest rate trainsim runs the layer's kernels (:func:`layer_forward_floor_s`,
a lower bound on the compute they hide behind); the tuner considers offloading only where they do.
"""

from __future__ import annotations

import itertools

from trainsim.catalog.frameworks import framework_feature, te_at_least
from trainsim.config import RunConfig
from trainsim.model.counts import model_flops_per_token


def offloaded_bytes(cfg: RunConfig) -> float:
    """Bytes one micro-batch's offloaded layers copy to the host (and back) on one rank."""
    from trainsim.memory.estimate import activation_bytes_per_layer

    m, n = cfg.model, cfg.parallel.cpu_offloading_num_layers
    per = {moe: activation_bytes_per_layer(cfg, recompute="none", moe=moe) for moe in (False, True)}
    return sum(per[m.is_moe_layer(i)] for i in range(n))


def layer_forward_floor_s(cfg: RunConfig) -> float:
    """The shortest a layer's forward can take for one micro-batch on one rank in trainsim's
    compute model: its model FLOPs (the logit layer's spread over the layers) with the matmuls
    at the fastest GEMM rate (``compute.roofline.gemm_rate``: the GEMM ceiling; in fp8 the
    larger of the fp8 ceiling and the fast-accumulating kernels' 16-bit fraction of the fp8
    peak) and the attention core (score and context matmuls, causal not halved) at the
    fastest a fused attention kernel runs (``compute.attention.attention_fraction``: at most
    1 / mamf_fraction of the 16-bit ceiling)."""
    m, p, t = cfg.model, cfg.parallel, cfg.training
    gpu = cfg.cluster.gpu
    tokens = t.micro_batch_size * t.seq_length / (p.tp * p.cp)
    per_token = model_flops_per_token(m, t.seq_length) / 3 / m.num_layers
    attn = 2.0 * (m.qk_dim + m.v_dim) * sum(
        t.seq_length if (w := m.layer_window(i)) is None else min(t.seq_length, w)
        for i in range(m.num_layers)) / m.num_layers
    gemm = gpu.gemm_ceiling(t.dtype)
    if t.dtype == "fp8" and "fp8" in gpu.peak_flops:
        gemm = max(gemm, gpu.gemm_ceiling("bf16") * gpu.flops("fp8") / gpu.flops("bf16"))
    fused = gpu.gemm_ceiling("bf16") / gpu.mamf_fraction
    return tokens * ((per_token - attn) / gemm + attn / fused)


def copy_windows(layers: int, n: int) -> list[int]:
    """Layers of forward each of the ``n`` copies has to hide behind under Transformer Engine
    before 2.10 (``layer_window_map``, module docstring): copy 0 from the end of layer 0, copy
    k from the end of the layer that closed copy k - 1."""
    ends = [(layers // n) * (k + 1) - 1 + (k + 1 if k < layers % n else layers % n)
            for k in range(n)]
    return [ends[0]] + [b - a for a, b in itertools.pairwise(ends)]


def copies_hidden(cfg: RunConfig) -> bool:
    """Whether Transformer Engine's schedule can hide the offload copies behind the forward.
    From 2.10 (or where the framework records no TE version): layer i's copy must end before
    layer L-N+i starts, and the copies run one after another on one stream, so copy i+1 of the
    N finishes (i+1) copies after the first starts, within L-N+i layers' forward. Before 2.10:
    each copy within its window (:func:`copy_windows`). The reloads get the same windows in
    the backward, which is longer. False when the GPU's host link bandwidth is not known."""
    bw = cfg.cluster.gpu.host_link_bw_Bps
    n, layers = cfg.parallel.cpu_offloading_num_layers, cfg.model.num_layers
    if n == 0:
        return True
    if bw is None:
        return False
    copy_s = offloaded_bytes(cfg) / n / bw
    layer_s = layer_forward_floor_s(cfg)
    t = cfg.training
    if t.framework and framework_feature(t.framework, t.framework_version, "te_version") and \
            not te_at_least(t.framework, t.framework_version, "2.10"):
        return all(copy_s <= w * layer_s for w in copy_windows(layers, n))
    return all((i + 1) * copy_s <= (layers - n + i) * layer_s for i in range(n))
