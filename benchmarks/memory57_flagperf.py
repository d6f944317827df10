"""FlagPerf's memory rows taken apart (57th session, memory57): each row's nvidia-smi figure
beside trainsim's device figure at the stage whose figure is largest, by part, and the
allocator's reserve Megatron-core leaves above its allocated peak where a source measured both
(MooreThreads/SimuMax's B200 runs, per rank), which bounds what fragmentation can add.

    PYTHONPATH=src:benchmarks python benchmarks/memory57_flagperf.py            # the rows
    PYTHONPATH=src:benchmarks python benchmarks/memory57_flagperf.py --simumax  # + SimuMax gaps

FlagPerf's figure: training/nvidia/nvidia_monitor.py (FlagOpen/FlagPerf@1b5a0303) L78 runs
``nvidia-smi |grep 'Default'|awk '{print $3,$5,$9,$11,$13}'`` every 5 s (``rate=5``, L35) for
every GPU of the host; $9 is the 'Memory-Usage' used MiB; each case README's 'mem' is that
figure in GiB ("通常称为“显存”,单位为GiB", training/nvidia/llama3_8B-megatron/README.md L50)
over the card's 80: the CUDA context, NCCL's buffers and the caching allocator's reserve
included (memory_kind device).
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GiB = 2**30
SIMUMAX = next((d / ".mirror" / "MooreThreads+SimuMax" / "repo" for d in ROOT.parents
                if (d / ".mirror" / "MooreThreads+SimuMax" / "repo").exists()), Path("/nonexistent"))
SIMUMAX_FILE = "docs/b200/b200_release_v1.2_summary.json"  # @4dcaae5


def flagperf_rows() -> list[str]:
    from trainsim.validate import training as T
    from trainsim.validate.row_settings import counts_checked
    from trainsim.validate.vocab import normalized_training_row

    out = [("| row | measured GiB | device GiB | error | stage | weights | grads | optimizer | "
            "activations | buffers | context + NCCL | peak at |"), "|" + "---|" * 12]
    for row in csv.DictReader((ROOT / "benchmarks" / "training_flagperf.csv").open()):
        r, _ = normalized_training_row(row, 0)
        _cfg, _choice, res = T._tuned_layout(counts_checked(r), "auto")
        kind = row["memory_kind"]
        i = max(range(len(res.memory)), key=lambda k: res.memory[k].of_kind(kind))
        m = res.memory[i]
        meas, pred = float(row["measured_peak_memory_gib"]), m.of_kind(kind) / GiB
        parts = (m.weights, m.gradients, m.optimizer, m.activations, m.buffers, m.context)
        out.append(f"| {row['id'][9:]} | {meas:.0f} | {pred:.1f} | {100 * (pred / meas - 1):+.1f} % "
                   f"| {i}/{len(res.memory)} | " + " | ".join(f"{x / GiB:.1f}" for x in parts)
                   + f" | {m.peak_at} |")
    return out


def simumax_gaps() -> list[str]:
    """Per case of SimuMax's formal table with per-rank memory: max over ranks of
    ``max_memory_reserved`` and of ``max_memory_allocated`` (Megatron-LM core_r0.14.0, TE 2.11,
    torch 2.10, no PYTORCH_CUDA_ALLOC_CONF in its scripts), and the reserve in GiB."""
    if not SIMUMAX.exists():
        return ["(SimuMax mirror absent: skipped)"]
    text = subprocess.run(["git", f"--git-dir={SIMUMAX}", "show", f"HEAD:{SIMUMAX_FILE}"],
                          capture_output=True, text=True, check=True).stdout
    out = [("| memory group | max allocated GiB | max reserved GiB | reserve GiB (ranks min-max) "
            "| reserved / allocated |"), "|---|---|---|---|---|"]
    seen = set()
    for r in json.loads(text)["rows"]:
        ranks = r.get("peak_memory_by_rank_mb") or {}
        group = r.get("memory_group_name", r["case"])
        if not ranks or group in seen:
            continue
        seen.add(group)
        a = [v["max_allocated_mb"] / 1024 for v in ranks.values()]
        s = [v["max_reserved_mb"] / 1024 for v in ranks.values()]
        gaps = [y - x for x, y in zip(a, s)]
        out.append(f"| {group} | {max(a):.1f} | {max(s):.1f} | {min(gaps):.2f}-{max(gaps):.2f} "
                   f"| {max(s) / max(a):.3f} |")
    return out


if __name__ == "__main__":
    print("\n".join(flagperf_rows()))
    if "--simumax" in sys.argv:
        print()
        print("\n".join(simumax_gaps()))
