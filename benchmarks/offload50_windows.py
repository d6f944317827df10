"""Activation offloading's copies against their windows on the rows that offload (offload50).

For each row, at the offloaded-layer count the tuner chose in trainsim's baseline output (the
recipe's count, or the row's column): the Transformer Engine schedule (the profile's
``te_version``), one layer's copy over the host link, the shortest window in layers and its
priced forward and backward (``chunks``: the passes the engine places), the stall
``memory.offload.copy_stalls`` prices per micro-batch, and the host-link rate below which the
shortest window's copy would be late. Prints a table; fits nothing.

usage, from the repository root: PYTHONPATH=src python benchmarks/offload50_windows.py
"""

from __future__ import annotations

import csv
from pathlib import Path

from trainsim.catalog.frameworks import framework_feature
from trainsim.chunks import chunks
from trainsim.memory.offload import (
    copy_stalls,
    copy_windows,
    offloaded_bytes,
    window_ends,
    windowed,
)
from trainsim.pricing import Pricer
from trainsim.validate.training import row_config
from trainsim.workload.shard import shard_of

ROOT = Path(__file__).resolve().parents[1]
ROWS = (  # (file, row id, offloaded layers: None = the row's own column)
    ("benchmarks/training_bridge_archive.csv", "bridgearch2511-llama3-70b-gb300-64-fp8cs", 20),
    ("benchmarks/training_bridge_archive.csv", "bridgearch2511-llama3-70b-gb200-64-fp8cs", 40),
    ("../shared/validation/training_public.csv", "bridge2604p1-llama3-70b-gb200-64-fsdp", 40),
    ("benchmarks/training_nemo_perf.csv", "nemo2507-llama31-405b-gb200-128", None),
)


def main() -> None:
    print("| row | TE | N of L | copy ms | shortest window (layers) | its fwd / bwd ms | "
          "stall ms / micro-batch | late below GB/s |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for path, rid, n in ROWS:
        with open(ROOT / path, newline="") as fh:
            row = next(r for r in csv.DictReader(fh) if r["id"] == rid)
        over = {"recompute": "none", "cpu_offloading_num_layers": str(n)} if n else {}
        cfg = row_config({**row, **over})
        n, layers = cfg.parallel.cpu_offloading_num_layers, cfg.model.num_layers
        t = cfg.training
        te = framework_feature(t.framework, t.framework_version, "te_version")
        ch = chunks(cfg, Pricer(cfg), shard_of(cfg))[0]
        # the layers' passes without the waits (one kind of layer in these dense models)
        fwd = [p.duration_s - sum(s[1] for s in p.segments if s[0] == "offload_wait")
               for p in ch.fwd_parts[2:-1]]
        bwd = [p.duration_s - sum(s[1] for s in p.segments if s[0] == "offload_wait")
               for p in reversed(ch.bwd_layers)]
        nbytes = offloaded_bytes(cfg) / n
        copy = nbytes / cfg.cluster.gpu.host_link_bw_Bps
        ends = window_ends(layers, n)
        starts = [1] + [e + 1 for e in ends[:-1]]
        w_f = min(sum(fwd[a:e + 1]) for a, e in zip(starts, ends))
        w_b = min(sum(bwd[a:e + 1]) for a, e in zip(starts, ends))
        sf, sb = copy_stalls(cfg, fwd, bwd)
        if not windowed(cfg):  # TE >= 2.10: no windows; copies gated (copies_hidden)
            print(f"| {rid} | {te} | {n} of {layers} | {copy * 1e3:.2f} | 2.10's schedule | "
                  f"{fwd[0] * 1e3:.2f} / {bwd[0] * 1e3:.2f} (a layer) | not priced | |")
            continue
        print(f"| {rid} | {te} | {n} of {layers} | {copy * 1e3:.2f} | {min(copy_windows(layers, n))}"
              f" | {w_f * 1e3:.2f} / {w_b * 1e3:.2f} | {(sum(sf) + sum(sb)) * 1e3:.2f} | "
              f"{nbytes / min(w_f, w_b) / 1e9:.0f} |")


if __name__ == "__main__":
    main()
