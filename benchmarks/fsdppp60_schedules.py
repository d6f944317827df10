"""Every pipeline schedule torchtitan runs, with FSDP2 on dp > 1 (issue 20, "express every run"):
iteration, pipeline bubble and peak memory of one small case, and GPipe / interleaved zero-bubble
without sharding, where this session moved them (benchmarks/RESULTS.md, 60th session, fsdppp60).

usage, from the repository root: PYTHONPATH=src python benchmarks/fsdppp60_schedules.py (~20 s);
PYTHONPATH=/work/main/src python benchmarks/fsdppp60_schedules.py gives main's column.
"""

from __future__ import annotations

import trainsim
from trainsim.errors import ConfigError

EXAMPLE = "examples/llama3-8b-h100.yaml"
BASE = ["parallel.tp=1", "training.micro_batch_size=1", "training.global_batch_size=16"]


def _row(schedule: str, vpp: int, pp: int, *extra: str) -> str:
    try:
        cfg = trainsim.load_run_config(EXAMPLE, BASE + [
            f"parallel.pipeline_schedule={schedule}", f"parallel.vpp={vpp}", f"parallel.pp={pp}",
            f"model.num_layers={4 * pp}", f"cluster.num_gpus={2 * pp}", *extra])
        r = trainsim.simulate(cfg)
    except ConfigError as err:
        return f"| {schedule} | {vpp} | refused: {str(err)[:60]}... | | |"
    return (f"| {schedule} | {vpp} | {r.iteration_time_s * 1e3:.1f} | "
            f"{r.breakdown['pipeline_bubble_s'] * 1e3:.1f} | {r.peak_memory_bytes / 2**30:.1f} |")


def main() -> None:
    head = "| schedule | vpp | iteration ms | bubble ms | peak GiB |\n|---|---|---|---|---|"
    print("llama3-8b cut to 8 layers, pp 2 x dp 2 on 4 H100, 8 micro-batches, torchtitan FSDP2")
    print(head)
    for schedule, vpp in [("1F1B", 1), ("GPipe", 1), ("ZBVZeroBubble", 2),
                          ("InterleavedZeroBubble", 2), ("DualPipeV", 2), ("Interleaved1F1B", 2),
                          ("zb_h1", 1), ("zb_h2", 1), ("zb_2p", 1), ("dualpipe", 1)]:
        print(_row(schedule, vpp, 2, "training.framework=torchtitan", "parallel.zero_stage=3"))
    print("\nthe same before the runtime window (torchtitan 2025-12: torch < 2.10)")
    print(head)
    for schedule, vpp in [("ZBVZeroBubble", 2), ("InterleavedZeroBubble", 2), ("DualPipeV", 2)]:
        print(_row(schedule, vpp, 2, "training.framework=torchtitan", "parallel.zero_stage=3",
                   "training.framework_version=2025-12"))
    print("\nno framework profile, distributed optimizer (ZeRO-1), pp 2 / pp 4 x dp 2")
    print(head)
    for pp in (2, 4):
        for schedule, vpp in [("gpipe", 1), ("1f1b", 1), ("interleaved_zb", 2)]:
            print(_row(schedule, vpp, pp, "parallel.zero_stage=1"))
    print("\nno framework profile (Megatron-FSDP's per-micro-batch gathers), zero 3")
    print(head)
    print(_row("zb_h1", 1, 2, "parallel.zero_stage=3"))


if __name__ == "__main__":
    main()
