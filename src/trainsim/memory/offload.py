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

Transformer Engine before 2.10 (NeMo 25.04 / 25.07 pin 2.2 / 2.5: cpu_offload.py
``AsyncDoubleBufferGroupOffloadHandler``) schedules the same copies differently: layer i's
copy starts when copy i-1's window closes and must end by layer ``layer_window_map[i]``
(((L // N) * (i + 1)) - 1, plus i + 1 for the first L % N layers and L % N after), where it is
freed; the windows spread the N copies evenly over the L layers, at least L // N layers each.
The peak is the same within one layer (the L - N kept layers and one copy in flight); the
windows are a little narrower (L // N layers per copy, against (L - 1) / N at 2.10's last
copy). ``copies_hidden`` applies 2.10's rule to both: a setting whose copies hide under 2.10's
rule but not under the windows would need the TE version in the config (not modelled;
tests/test_memory_offload.py checks both rules for NeMo 25.07's 405B run, which both hide).
Megatron-core's fine-grained offloading (core_v0.16.0
``fine_grained_activation_offloading``, ``offload_modules``) is another mechanism, not modelled.

The copies are not priced by the event engine: :func:`copies_hidden` says whether they fit in
their windows at the GPU's peak FLOP/s (a lower bound on the compute they hide behind); the
tuner considers offloading only where they do.
"""

from __future__ import annotations

from trainsim.config import RunConfig
from trainsim.model.counts import model_flops_per_token


def offloaded_bytes(cfg: RunConfig) -> float:
    """Bytes one micro-batch's offloaded layers copy to the host (and back) on one rank."""
    from trainsim.memory.estimate import activation_bytes_per_layer

    m, n = cfg.model, cfg.parallel.cpu_offloading_num_layers
    per = {moe: activation_bytes_per_layer(cfg, recompute="none", moe=moe) for moe in (False, True)}
    return sum(per[m.is_moe_layer(i)] for i in range(n))


def layer_forward_floor_s(cfg: RunConfig) -> float:
    """The shortest a layer's forward can take for one micro-batch on one rank: its model
    FLOPs at the GPU's peak rate for the run's dtype."""
    m, p, t = cfg.model, cfg.parallel, cfg.training
    tokens = t.micro_batch_size * t.seq_length / (p.tp * p.cp)
    flops = model_flops_per_token(m, t.seq_length) / 3 / m.num_layers * tokens
    peaks = cfg.cluster.gpu.peak_flops
    return flops / peaks.get(t.dtype, peaks.get("bf16") or peaks["fp16"])


def copies_hidden(cfg: RunConfig) -> bool:
    """Whether TE's schedule can hide the offload copies behind the forward: layer i's copy
    must end before layer L-N+i starts, and the copies run one after another on one stream, so
    copy i+1 of the N finishes (i+1) copies after the first starts, within L-N+i layers'
    forward. The reloads get the same windows in the backward, which is longer. False when the
    GPU's host link bandwidth is not known."""
    bw = cfg.cluster.gpu.host_link_bw_Bps
    n, layers = cfg.parallel.cpu_offloading_num_layers, cfg.model.num_layers
    if n == 0:
        return True
    if bw is None:
        return False
    copy_s = offloaded_bytes(cfg) / n / bw
    layer_s = layer_forward_floor_s(cfg)
    return all((i + 1) * copy_s <= (layers - n + i) * layer_s for i in range(n))
