"""torchtitan's MoE layer's memory in each era (``memory.moe_titan``) against the one
measurement of it its history states: pytorch/torchtitan#1974 ("remove scatter_add in MoE
implementation", e1f7f318a, 2025-11-21), "Memory: for DSv3 16B layer fwd + bwd",
``moe_memory.py`` (the PR branch at 14cd817e4, torchtitan/moe_bench_and_test/moe_memory.py):
``moe_old`` peak_stats.max_active_gib 5.926029682159424, ``moe`` 5.051033020019531.

    PYTHONPATH=src:benchmarks python benchmarks/titanmoe56_memory.py

The script builds ``MoE(moe_args, dim=2048, hidden_dim=1408)`` in bf16 on one GPU (weights,
``expert_bias`` and counters), a 4 x 4096 x 2048 bf16 input without ``requires_grad``, resets
the peak (``DeviceMemoryMonitor.__init__``) and runs ``moe(inputs).sum().backward()`` once:
the peak is the weights and the input, the saved tensors, and the larger of the forward's
locals and the combine's backward temporaries (no input gradient is made; the ``sum``'s
gradient is an expanded scalar). Not modelled: cuBLAS workspaces, the routing counters, the
allocator's 512-byte rounding (together the few tens of MiB both eras share).
"""

from __future__ import annotations

import sys

from titan55_moe import dsv3_16b

from trainsim.config import RunConfig
from trainsim.memory import moe_titan
from trainsim.workload.moe_block import titan_style

GiB = 2**30
MEASURED_GIB = {"2025-11": 5.926029682159424, "2025-12": 5.051033020019531}
"""#1974's ``max_active_gib`` of ``moe_old`` (the scatter_add era) and ``moe`` (index-put)."""


def static_bytes(cfg: RunConfig) -> float:
    """The module's bf16 weights (routed w1, w2, w3; the shared FeedForward; the gate) and the
    input, allocated before the peak is reset."""
    m, tr = cfg.model, cfg.training
    h, E = m.hidden_size, m.num_experts or 1
    shared = m.moe_shared_expert_intermediate_size or 0
    weights = 3 * E * h * m.expert_ffn_size + 3 * h * shared + E * h
    return 2.0 * weights + 2.0 * tr.micro_batch_size * tr.seq_length * h


def layer_peak_bytes(version: str) -> dict[str, float]:
    """The peak of #1974's run by part (bytes) under torchtitan at ``version``."""
    cfg = dsv3_16b(version, "h100-sxm-80gb")
    style = titan_style(cfg)
    shape = moe_titan.shape_of(cfg)
    return {"weights and input": static_bytes(cfg),
            "saved for backward": moe_titan.saved_bytes(style, shape),
            "forward locals": moe_titan.forward_extra_bytes(style, shape),
            "combine backward": moe_titan.combine_backward_bytes(style, shape),
            "peak": static_bytes(cfg) + moe_titan.saved_bytes(style, shape)
            + moe_titan.layer_extra_bytes(style, shape)}


def main() -> int:
    peaks = {}
    for version in ("2025-11", "2025-12", "2026-04"):
        parts = layer_peak_bytes(version)
        peaks[version] = parts["peak"]
        meas = MEASURED_GIB.get(version)
        err = f", measured {meas:.3f} GiB ({100 * (parts['peak'] / GiB / meas - 1):+.1f} %)" \
            if meas else ""
        print(f"{version} {titan_style(dsv3_16b(version, 'h100-sxm-80gb')):24s} "
              f"peak {parts['peak'] / GiB:.3f} GiB{err}")
        print("    " + ", ".join(f"{k} {v / GiB:.3f}" for k, v in parts.items() if k != "peak"))
    drop = (peaks["2025-11"] - peaks["2025-12"]) / GiB
    meas = MEASURED_GIB["2025-11"] - MEASURED_GIB["2025-12"]
    print(f"scatter_add -> index_put: {drop:.3f} GiB less, measured {meas:.3f} GiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
