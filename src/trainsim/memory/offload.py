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
within one layer (the L - N kept layers and one copy in flight). :func:`windowed` tells the
two schedules apart by the framework's Transformer Engine (the profile's ``te_version``; 2.10's
where none is recorded).
Megatron-core's fine-grained offloading (core_v0.16.0
``fine_grained_activation_offloading``, ``offload_modules``) is another mechanism, not modelled.

Under Transformer Engine before 2.10 a copy that outlasts its window is priced, not refused
(:func:`copy_stalls`): ``synchronize_on_group_commit_forward`` (release_v2.9 70f53666
cpu_offload.py L516-520) makes the compute stream wait for the d2h stream
(``current_stream().wait_stream(d2h_stream)``, L520) when layer ``layer_window_map[k]``'s
forward commits, and only then issues copy k + 1 (L536), behind a ``d2h_stream.wait_stream`` on
the compute stream (L519; copy 0 behind layer 0's commit, L497 / L512);
``on_group_commit_backward`` (L641-648) does the same with the h2d stream before the backward
of layer ``layer_window_map[k]`` and issues reload k, and the backward of layer 0 waits for the
last reload (L653-655). So the compute stream of each micro-batch's forward waits
max(0, copy k - its window's forward) after layer ``layer_window_map[k]``, and its backward the
same for reload k before the backward of layer ``layer_window_map[k - 1]`` (layer 0 for k = 0),
the windows being the priced layers' passes (``chunks``; not lengthened by collectives running
beside them, and the copies' own HBM traffic not charged to the compute). From 2.10 (or where no TE version is
recorded) the copies are still gated: :func:`copies_hidden` says whether they fit at the fastest
rate trainsim runs the layer's kernels (:func:`layer_forward_floor_s`, a lower bound on the
compute they hide behind); the tuner considers offloading only where they do
(:func:`offload_admitted`).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from trainsim.catalog.frameworks import framework_feature, te_at_least
from trainsim.compute.roofline import nvfp4_rate
from trainsim.config import RunConfig
from trainsim.model.counts import model_flops_per_token

OFFLOAD_WAIT = "offload_wait"
"""Priced category of the compute stream's wait for a late offload copy or reload (reported in
the breakdown's other_s, as the wait for the host's launches is)."""


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
    peak, under NVFP4 the NVFP4 kernels' rate where faster) and the attention core (score and context matmuls, causal not halved) at the
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
    if t.dtype == "fp8" and t.fp8_recipe == "nvfp4":  # the NVFP4 kernels' rate (gemm_rate)
        gemm = max(gemm, nvfp4_rate(gpu))
    fused = gpu.gemm_ceiling("bf16") / gpu.mamf_fraction
    return tokens * ((per_token - attn) / gemm + attn / fused)


def window_ends(layers: int, n: int) -> list[int]:
    """``layer_window_map``: the layer whose forward closes each of the ``n`` copies' windows
    under Transformer Engine before 2.10 (module docstring)."""
    return [(layers // n) * (k + 1) - 1 + (k + 1 if k < layers % n else layers % n)
            for k in range(n)]


def copy_windows(layers: int, n: int) -> list[int]:
    """Layers of forward each of the ``n`` copies has to hide behind under Transformer Engine
    before 2.10 (``layer_window_map``, module docstring): copy 0 from the end of layer 0, copy
    k from the end of the layer that closed copy k - 1."""
    ends = window_ends(layers, n)
    return [ends[0]] + [b - a for a, b in itertools.pairwise(ends)]


def windowed(cfg: RunConfig) -> bool:
    """Whether the framework's Transformer Engine schedules the copies in windows (a recorded
    ``te_version`` before 2.10)."""
    t = cfg.training
    return bool(t.framework and framework_feature(t.framework, t.framework_version, "te_version")
                and not te_at_least(t.framework, t.framework_version, "2.10"))


def copy_stalls(cfg: RunConfig, fwd_s: Sequence[float], bwd_s: Sequence[float]
                ) -> tuple[list[float], list[float]]:
    """Per layer (forward order, from ``fwd_s`` / ``bwd_s``: each layer's priced forward and
    backward, recomputation included), the compute stream's wait for a late copy after that
    layer's forward, and for a late reload after that layer's backward, under Transformer
    Engine before 2.10 (module docstring): copy k (layer k's offloaded activations over the
    host link) runs beside the forward of the layers after ``window_ends[k - 1]`` (after layer
    0 for k = 0) up to ``window_ends[k]``, whose commit waits for it; reload k beside the
    backward of the same layers, from ``window_ends[k]`` down, and the backward of the layer
    before them waits for it. All zero without offloading, from TE 2.10 (gated instead:
    :func:`copies_hidden`) or where the host link's bandwidth is not known."""
    layers, n = len(fwd_s), cfg.parallel.cpu_offloading_num_layers
    fwd, bwd = [0.0] * layers, [0.0] * layers
    bw = cfg.cluster.gpu.host_link_bw_Bps
    if n == 0 or bw is None or not windowed(cfg):
        return fwd, bwd
    from trainsim.memory.estimate import activation_bytes_per_layer

    m = cfg.model
    copy = {moe: activation_bytes_per_layer(cfg, recompute="none", moe=moe) / bw
            for moe in (False, True)}
    first = 1
    for k, end in enumerate(window_ends(layers, n)):
        c = copy[m.is_moe_layer(k)]
        fwd[end] += max(0.0, c - sum(fwd_s[first:end + 1]))
        bwd[first] += max(0.0, c - sum(bwd_s[first:end + 1]))
        first = end + 1
    return fwd, bwd


def offload_admitted(cfg: RunConfig) -> bool:
    """Whether the tuner may consider the setting's offloading: its copies priced in the
    engine's timeline (before TE 2.10, the host link's bandwidth known: :func:`copy_stalls`)
    or hidden by 2.10's schedule (:func:`copies_hidden`)."""
    if cfg.parallel.cpu_offloading_num_layers == 0:
        return True
    if cfg.cluster.gpu.host_link_bw_Bps is None:
        return False
    return windowed(cfg) or copies_hidden(cfg)


def copies_hidden(cfg: RunConfig) -> bool:
    """Whether Transformer Engine's schedule from 2.10 (or where the framework records no TE
    version) hides the offload copies behind the forward: layer i's copy must end before
    layer L-N+i starts, and the copies run one after another on one stream, so copy i+1 of the
    N finishes (i+1) copies after the first starts, within L-N+i layers' forward. The reloads
    get the same windows in the backward, which is longer. False when the GPU's host link
    bandwidth is not known. Before 2.10 the copies are not gated but priced in their windows
    (:func:`copy_stalls`; robust51: a windowed gate here was reached by no caller), so asking
    it of such a setting is an error."""
    bw = cfg.cluster.gpu.host_link_bw_Bps
    n, layers = cfg.parallel.cpu_offloading_num_layers, cfg.model.num_layers
    if n == 0:
        return True
    if windowed(cfg):
        raise ValueError("copies_hidden is Transformer Engine 2.10's gate; before 2.10 the "
                         "copies are priced in their windows (copy_stalls)")
    if bw is None:
        return False
    copy_s = offloaded_bytes(cfg) / n / bw
    layer_s = layer_forward_floor_s(cfg)
    return all((i + 1) * copy_s <= (layers - n + i) * layer_s for i in range(n))
