"""The plain-loop allocator replay's cost, for its work limit (2026-11-27, 43rd session, fuzz43).

``memory.plain_step`` replays a plain PyTorch step's allocations through the caching allocator
over 8 steps; a 2,000-layer model took 28 s of CPU (fuzz_inputs43: a hang). This counts the
allocations a layer makes per step (SDPA, eager attention, full recompute) and times the
replay at growing layer counts, the data behind ``limits.REPLAY_ALLOCATIONS_PER_LAYER_STEP``
and ``limits.REPLAY_ALLOCATION_US`` (cost = 5 us + 0.005 us per layer, a line through the
timed points; it prints the line's prediction beside each).

    PYTHONPATH=src python benchmarks/replay_limit43.py [--layers 300,600,1000,2000]
"""
from __future__ import annotations

import argparse
import time

from trainsim.catalog import run_config_from_dict
from trainsim.limits import REPLAY_ALLOCATION_US
from trainsim.memory import caching_allocator
from trainsim.memory.plain_step import TIMED_STEPS, WARM_STEPS, _Replay, applies, shape_of

BASE = {"model": {"hidden_size": 2048, "num_layers": 16, "num_attention_heads": 16,
                  "num_kv_heads": 4, "ffn_hidden_size": 8192, "vocab_size": 32000,
                  "activation": "swiglu", "normalization": "rmsnorm",
                  "position_embedding": "rope"},
        "parallel": {}, "training": {"global_batch_size": 4, "micro_batch_size": 4,
                                     "seq_length": 2048, "framework": "pytorch"},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 1, "gpus_per_node": 1}}


def _cfg(layers: int, recompute: str = "none", attention: str = "sdpa"):
    d = {k: dict(v) for k, v in BASE.items()}
    d["model"]["num_layers"] = layers
    d["parallel"]["recompute"] = recompute
    d["training"]["attention"] = attention
    cfg = run_config_from_dict(d)
    assert applies(cfg), "the replay does not apply"
    return cfg


def allocations(cfg) -> int:
    """Allocations the replay makes (the allocator's malloc counted)."""
    count = [0]
    orig = caching_allocator.CachingAllocator.malloc

    def counted(self, size):
        count[0] += 1
        return orig(self, size)

    caching_allocator.CachingAllocator.malloc = counted
    try:
        _Replay(shape_of(cfg)).run()
    finally:
        caching_allocator.CachingAllocator.malloc = orig
    return count[0]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", default="300,600,1000,2000")
    args = ap.parse_args()
    steps = WARM_STEPS + TIMED_STEPS
    print("allocations a layer a step (64 layers):")
    for rc, att in (("none", "sdpa"), ("none", "eager"), ("full", "sdpa")):
        n = allocations(_cfg(64, rc, att))
        print(f"  recompute={rc:4s} attention={att:5s} {n:8d}  {n / 64 / steps:6.1f}")
    base, per_layer = REPLAY_ALLOCATION_US
    print("CPU per allocation (SDPA, no recompute):  measured   line")
    for layers in (int(x) for x in args.layers.split(",")):
        cfg = _cfg(layers)
        n = allocations(cfg)
        t0 = time.process_time()
        _Replay(shape_of(cfg)).run()
        dt = time.process_time() - t0
        print(f"  {layers:6d} layers {n:9d} allocations {dt:7.2f} s  {dt / n * 1e6:6.1f} us"
              f"  {base + per_layer * layers:5.1f} us")


if __name__ == "__main__":
    main()
