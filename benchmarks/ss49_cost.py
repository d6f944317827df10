"""ss49: simulation CPU cost against the global batch for the schedules the periodic shortcut
gained (DualPipe; one-stage pipelines at dp > 1) and those it still lacks (zb_2p, GPipe), and
the shortcut against the full simulation. DualPipe, zb_2p and GPipe: the llama3-70b example
(64 H100, PP 4); PP1: the llama3-8b example (TP 2, PP 1, DP 4) and plan --seq 1's TP1 PP1 DP8
mb8 llama3-8b candidate at 64 / 4,096 / 65,536 micro-batches.

    PYTHONPATH=src python benchmarks/ss49_cost.py [--no-full]
"""

from __future__ import annotations

import sys

from zbss48_cost import cpu_ms  # best of 3 in-process CPU ms, and the result

from trainsim import load_run_config

SCHEDULES = ("dualpipe", "zb_2p", "gpipe")
BATCHES = (256, 2048)


def pipeline(schedule: str, batch: int):
    return load_run_config("examples/llama3-70b-h100-64.yaml", (
        f"parallel.pipeline_schedule={schedule}", "parallel.vpp=1",
        f"training.global_batch_size={batch}"))


def one_stage(batch: int):
    return load_run_config("examples/llama3-8b-h100.yaml", (f"training.global_batch_size={batch}",))


def seq1(m: int):
    return load_run_config("examples/llama3-8b-h100.yaml", (
        "parallel.tp=1", "parallel.sequence_parallel=false", "training.seq_length=1",
        "training.micro_batch_size=8", f"training.global_batch_size={64 * m}"))


def main() -> None:
    full_too = "--no-full" not in sys.argv
    print(f"{'case':26s} {'ms':>8s} {'full ms':>8s} {'rel diff':>9s}  method")
    cases = [(f"{s} batch {b}", pipeline(s, b)) for s in SCHEDULES for b in BATCHES]
    cases += [(f"pp1 llama3-8b batch {b}", one_stage(b)) for b in BATCHES]
    cases += [(f"pp1 seq 1, {m:,} mb", seq1(m)) for m in (64, 4096, 65536)]
    for label, cfg in cases:
        ms, fast = cpu_ms(cfg)
        if full_too and cfg.num_microbatches <= 4096:
            full_ms, full = cpu_ms(cfg, keep_timeline=True)
            diff = f"{abs(fast.iteration_time_s / full.iteration_time_s - 1):9.1e}"
        else:
            full_ms, diff = float("nan"), f"{'':9s}"
        print(f"{label:26s} {ms:8.1f} {full_ms:8.1f} {diff}  "
              f"{fast.simulation['method']}: {fast.simulation['reason']}")


if __name__ == "__main__":
    main()
