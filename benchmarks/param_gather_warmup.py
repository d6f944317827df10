"""The distributed optimizer's overlapped parameter all-gathers in one validated row's first
forwards, as trainsim's timeline places them, beside the dispatch rule of the Megatron-core the
row's framework runs (a check, not an input: nothing here feeds trainsim).

    PYTHONPATH=src python benchmarks/param_gather_warmup.py ROW_ID [TRAINING.csv]
    # default file: benchmarks/training_nemo_perf.csv; prints the row with bf16 and fp8 gathers

For each gather task on pipeline rank 0 (the critical one: later ranks' first forwards wait
for rank 0's activations anyway): elements per rank gathered (the output buffer), bytes at the
gather width, duration, bus bandwidth ((n - 1) / n x bytes / time), start and end; for each
chunk, the first forward's start and the time the compute stream sat idle before it.

Megatron-core (core_v0.9.0 to core_v0.12.0, distributed_data_parallel.py ``start_param_sync``,
param_and_grad_buffer.py ``finish_param_sync``; pipeline_parallel/schedules.py
``forward_backward_pipelining_with_interleaving``) with ``align_param_gather`` (NeMo 2's
MegatronCommOverlapCallback sets it where pp > 1 and vp > 1; Megatron-LM's default) dispatches
chunks 0 and 1 at the start of the schedule and chunk c + 1 at the forward of chunk c's first
micro-batch, every bucket group of a chunk at once on the data-parallel communicator (one NCCL
stream: in order). ``megatron_dispatch_s`` is that moment read off trainsim's own timeline (the
start of chunk c - 1's first forward): a gather trainsim starts no later than it, at the end of the
one before, exposes no more than Megatron would. Without interleaving (vpp 1) align is off
(arguments.py) and buckets go one after another from the forward pre-hooks, the first on demand.
"""

from __future__ import annotations

import csv
import re
import sys
from dataclasses import replace

from trainsim.pricing import Pricer
from trainsim.simulator import build_graph, simulate
from trainsim.validate.training import predict_training_row, row_config

GATHER = re.compile(r"param all-gather (\S+) chunk (\d+)(?: bucket (\d+))?")
FORWARD = re.compile(r"F mb0 c(\d+)$")


def report(cfg, label: str) -> None:
    graph = build_graph(cfg, Pricer(cfg))
    result = simulate(cfg, keep_timeline=True)
    tl = result.timeline
    sizes = {group: size for _, group, size in graph.groups[0]}
    params = {group: p for p, group, _ in graph.groups[0]}
    print(f"{label}: iteration {result.iteration_time_s:.4f} s, "
          + ", ".join(f"{k} {v:.4f}" for k, v in result.breakdown.items() if v))
    first_fwd, prev_end = {}, 0.0
    for i, t in enumerate(tl.tasks):
        if t.stream != (0, "compute"):
            continue
        m = FORWARD.match(t.label)
        if m and int(m.group(1)) not in first_fwd:
            first_fwd[int(m.group(1))] = (tl.start_s[i], tl.start_s[i] - prev_end)
        prev_end = tl.end_s[i]
    vpp, idle = cfg.parallel.vpp, 0.0
    print("  gather                      elements/rank  GB      ms     busbw GB/s  start  end   "
          "| chunk first fwd  idle ms  megatron_dispatch_s")
    for i, t in enumerate(tl.tasks):
        m = GATHER.match(t.label)
        if t.stream[0] != 0 or not m:
            continue
        group, chunk, bucket = m.group(1), int(m.group(2)), m.group(3)
        n = sizes[group]
        share = 1 / vpp if bucket is None else None
        elems = params[group] * share if share else float("nan")
        gbytes = elems * graph.gather_width[0][group] / 1e9
        busbw = (n - 1) / n * gbytes / t.duration_s if share else float("nan")
        fwd, gap = first_fwd.get(chunk, (float("nan"), 0.0))
        dispatch = 0.0 if chunk < 2 else first_fwd.get(chunk - 1, (float("nan"),))[0]
        if bucket is None:
            idle += gap
        print(f"  {group:5s} chunk {chunk:2d}{'' if bucket is None else ' b' + bucket:5s}"
              f" {elems / 1e6:10.1f} M {gbytes:6.3f} {1e3 * t.duration_s:7.2f} {busbw:8.1f}"
              f"  {tl.start_s[i]:.4f} {tl.end_s[i]:.4f} | {fwd:.4f}  {1e3 * gap:7.2f}"
              f"  {dispatch if vpp > 1 else float('nan'):.4f}")
    print(f"  compute idle before the chunks' first forwards on pipeline rank 0: {1e3 * idle:.1f} ms")


def main(argv: list[str]) -> None:
    rid = argv[0]
    path = argv[1] if len(argv) > 1 else "benchmarks/training_nemo_perf.csv"
    with open(path, newline="") as f:
        row = next(r for r in csv.DictReader(f) if r["id"] == rid)
    res = predict_training_row(row)
    cfg = row_config(row, res.chosen)
    print(f"{rid}: measured {res.measured} s, predicted {res.predicted:.4f} s; tp "
          f"{cfg.parallel.tp} pp {cfg.parallel.pp} vpp {cfg.parallel.vpp} dp_buckets "
          f"{cfg.parallel.dp_buckets} fp8_param_gather {cfg.training.fp8_param_gather}")
    for fp8 in (False, True):
        report(replace(cfg, training=replace(cfg.training, fp8_param_gather=fp8)),
               f" fp8_param_gather {fp8}")


if __name__ == "__main__":
    main(sys.argv[1:])
