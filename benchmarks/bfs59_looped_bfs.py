"""Looped BFS (torch's ScheduleLoopedBFS) beside the other schedules torchtitan runs, on one small
case: iteration, pipeline bubble and peak memory, and when each chunk's gradient reduction starts
against its last backward (benchmarks/RESULTS.md, 59th session, bfs59).

usage, from the repository root: PYTHONPATH=src python benchmarks/bfs59_looped_bfs.py (~10 s)
"""

from __future__ import annotations

import trainsim

EXAMPLE = "examples/llama3-8b-h100.yaml"
BASE = ["parallel.tp=1", "training.micro_batch_size=1", "model.num_layers=8",
        "training.global_batch_size=16"]


def _row(schedule: str, vpp: int, *extra: str) -> str:
    cfg = trainsim.load_run_config(EXAMPLE, BASE + [f"parallel.pipeline_schedule={schedule}",
                                                    f"parallel.vpp={vpp}", *extra])
    r = trainsim.simulate(cfg)
    return (f"| {schedule} | {vpp} | {r.iteration_time_s * 1e3:.1f} | "
            f"{r.breakdown['pipeline_bubble_s'] * 1e3:.1f} | {r.peak_memory_bytes / 2**30:.1f} |")


def _reductions() -> list[str]:
    """Rank 0's chunks: when the chunk's other backwards end, when its backward of micro-batch
    0 (its last, split where Megatron's gradient buckets become ready) starts, and when its
    first bucket's reduce-scatter starts, pp 2 x dp 2, vpp 2."""
    cfg = trainsim.load_run_config(EXAMPLE, BASE + [
        "parallel.pp=2", "cluster.num_gpus=4", "parallel.vpp=2",
        "parallel.pipeline_schedule=LoopedBFS", "parallel.distributed_optimizer=true",
        "parallel.overlap_grad_reduce=true"])
    tl = trainsim.simulate(cfg, keep_timeline=True).timeline
    out = []
    for c in (1, 0):
        on = [(t, tl.start_s[i], tl.start_s[i] + t.duration_s) for i, t in enumerate(tl.tasks)
              if t.stream[0] == 0]
        others = max(e for t, _, e in on if t.stream[1] == "compute"
                     and t.label.startswith("B mb") and t.label.endswith(f" c{c}"))
        last = min(b for t, b, _ in on if t.label.startswith(f"B last c{c} "))
        reduce = min(b for t, b, _ in on if t.stream[1] == "dp" and "grad" in t.label
                     and f" c{c} " in t.label)
        out.append(f"| {c} | {others * 1e3:.1f} | {last * 1e3:.1f} | {reduce * 1e3:.1f} |")
    return out


def main() -> None:
    print("llama3-8b, 8 layers, pp 4 on 4 H100, 16 micro-batches, torchtitan (dp 1)")
    print("| schedule | vpp | iteration ms | bubble ms | peak GiB |\n|---|---|---|---|---|")
    for schedule, vpp in [("Interleaved1F1B", 2), ("LoopedBFS", 2), ("LoopedBFS", 1),
                          ("GPipe", 1), ("1F1B", 1), ("ZBVZeroBubble", 2)]:
        print(_row(schedule, vpp, "parallel.pp=4", "cluster.num_gpus=4",
                   "training.framework=torchtitan"))
    print("\npp 2 x dp 2 on 4 H100, torchtitan FSDP2 (window of 3 gathered stages from torch 2.10)")
    print("| schedule | vpp | iteration ms | bubble ms | peak GiB |\n|---|---|---|---|---|")
    for schedule, vpp in [("Interleaved1F1B", 2), ("LoopedBFS", 2), ("Interleaved1F1B", 4),
                          ("LoopedBFS", 4), ("1F1B", 1), ("LoopedBFS", 1)]:
        print(_row(schedule, vpp, "parallel.pp=2", "cluster.num_gpus=4",
                   "training.framework=torchtitan"))
    print("\nLoopedBFS, pp 2 x dp 2 (distributed optimizer, overlapped reduce), rank 0")
    print("| chunk | its other backwards end ms | its last (mb 0) starts ms | "
          "its first reduce-scatter starts ms |\n|---|---|---|---|")
    print("\n".join(_reductions()))


if __name__ == "__main__":
    main()
