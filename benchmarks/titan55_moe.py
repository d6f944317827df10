"""torchtitan's MoE layer priced op by op in each of its eras (``workload.moe_titan``), against
the one timing of that layer its own history states: pytorch/torchtitan#1974 ("remove
scatter_add in MoE implementation", merged as e1f7f318a, 2025-11-21), "triton do_bench for DSv3
16B layer fwd + bwd", seqlen 4096, bsz 4: ``moe_old`` (the scatter_add combine) 19.71 ms,
``moe`` (the index-put + bmm combine) 19.03 ms. The PR names no GPU: both Hopper parts are
printed.

    PYTHONPATH=src python benchmarks/titan55_moe.py [--ops]

DSv3 16B at that commit (torchtitan/models/deepseek_v3/__init__.py @ e1f7f318a L78-L102): dim
2048, moe_inter_dim 1408, 64 experts, top 6, 2 shared experts (one FeedForward of 2 x 1408),
softmax scores, score_before_experts False. One GPU: no EP, no TP.
"""

from __future__ import annotations

import argparse
import sys

from trainsim.catalog import gpu
from trainsim.config import ClusterConfig, ModelConfig, ParallelConfig, RunConfig, TrainingConfig
from trainsim.validate.kernels import _model
from trainsim.workload.layers import backward_of
from trainsim.workload.moe_block import moe_block
from trainsim.workload.shard import shard_of

MEASURED_MS = {"2025-11": 19.71, "2025-12": 19.03}
"""pytorch/torchtitan#1974's description: ``moe_time_ms`` of ``moe_old`` and ``moe``."""
ERAS = {"2025-11": "scatter_add (moe_old)", "2025-12": "index_put + bmm (moe)",
        "2026-04": "deterministic scatter_add, no padding", "": "Megatron-core's structure"}


def dsv3_16b(version: str, gpu_name: str) -> RunConfig:
    """One DSv3-16B MoE layer of 4 x 4096 tokens under torchtitan at ``version`` ('' = none)."""
    model = ModelConfig(name="dsv3-16b-moe", hidden_size=2048, num_layers=1,
                        num_attention_heads=16, ffn_hidden_size=10944, activation="swiglu",
                        num_experts=64, moe_router_topk=6, moe_ffn_hidden_size=1408,
                        moe_shared_expert_intermediate_size=2 * 1408, add_bias_linear=False)
    training = TrainingConfig(global_batch_size=4, micro_batch_size=4, seq_length=4096,
                              attention="unfused",
                              framework="torchtitan" if version else None,
                              framework_version=version or None)
    return RunConfig(model=model, parallel=ParallelConfig(), training=training,
                     cluster=ClusterConfig(gpu=gpu(gpu_name), num_gpus=1, gpus_per_node=1))


PARTS = (("router", "router"), ("reorder+gather", "permute"), ("padding/EP order", "expert_pad"),
         ("padding/EP order", "expert_ep"), ("grouped GEMMs", "expert_fc"),
         ("SwiGLU", "expert_act"), ("fp32 scores", "expert_score"), ("combine", "unpermute"),
         ("shared experts", "shared_"))
"""(part, op-name prefix): the parts the summary line adds up, forward and backward."""


def layer_parts(version: str, gpu_name: str, show: bool = False) -> dict[str, float]:
    """Forward and backward of the layer by part (ms), each op priced alone and summed (a
    benchmark loop on one GPU: kernels back to back, no communication)."""
    cfg = dsv3_16b(version, gpu_name)
    sh = shard_of(cfg)
    ops: list = []
    moe_block(ops, cfg, sh)
    ops += backward_of(ops, sh)
    model = _model(gpu_name)
    parts: dict[str, float] = {}
    for op in ops:
        ms = model.explain(op)[0] * 1e3
        part = next((p for p, prefix in PARTS if op.name.startswith(prefix)), "other")
        parts[part] = parts.get(part, 0.0) + ms
        if show:
            print(f"    {op.name:32s} {ms:7.3f} ms")
    return parts


def layer_ms(version: str, gpu_name: str, show: bool = False) -> float:
    """The layer's forward and backward in total (ms)."""
    return sum(layer_parts(version, gpu_name, show).values())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", action="store_true", help="list every op's price")
    args = ap.parse_args(argv)
    for gpu_name in ("h100-sxm-80gb", "h200-sxm-141gb"):
        print(gpu_name)
        for version, what in ERAS.items():
            parts = layer_parts(version, gpu_name, args.ops)
            ms = sum(parts.values())
            meas = MEASURED_MS.get(version)
            err = f", measured {meas:.2f} ms ({100 * (ms / meas - 1):+.1f} %)" if meas else ""
            print(f"  {version or '-':8s} {what:42s} {ms:6.2f} ms{err}")
            print("           " + ", ".join(f"{p} {v:.2f}" for p, v in parts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
