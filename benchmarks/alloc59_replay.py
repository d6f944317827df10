"""Where the caching allocator's reserve comes from in a Megatron-core run: SimuMax's per-rank
figures beside ``trainsim.memory.megatron_step``'s replay of every optimizer shard (59th session,
alloc59; MoE and MLA cases and one replay, megatron_step's, since alloc60).

MooreThreads/SimuMax's B200 runs of Megatron-LM core_r0.14.0 (23e00ed; no ``expandable_segments``,
the distributed optimizer, no overlapped reductions, ``empty_unused_memory_level`` 0:
simu_tools/megatron_scripts/scripts/run_pretrain_llama3.sh and run_pretrain_deepseekv2.sh @4dcaae5)
log ``max_memory_allocated`` and ``max_memory_reserved`` since the start on every rank
(docs/b200/b200_release_v1.2_summary.json ``peak_memory_by_rank_mb``, copied per rank into
``alloc59_simumax_ranks.csv``; ``--check`` compares it with the mirror). Each case's shapes are
trainsim's config of its row in training_simumax_b200.csv; ``memory.megatron_step`` replays one
rank of a stage through ``memory.caching_allocator`` in two ways:

- *activations only*: the step's activation-sized tensors, scheduled 1F1B with every warm-up
  forward (``persistent=False``);
- *with construction and optimizer state*: first the weights, Megatron's DDP buffers (the
  dense one, then the routed experts' own), each weight moved in and freed, the distributed
  optimizers' fp32 main shards and, at the first step, Adam's moments (megatron_step's
  docstring). Here every optimizer shard, the case's micro-batches and three steps; trainsim
  itself replays three shards and at most four micro-batches in flight.

    PYTHONPATH=src:benchmarks python benchmarks/alloc59_replay.py            # per stage
    PYTHONPATH=src:benchmarks python benchmarks/alloc59_replay.py --ranks    # per optimizer shard
    PYTHONPATH=src:benchmarks python benchmarks/alloc59_replay.py --trainsim # reserved, SimuMax rows
    PYTHONPATH=src:benchmarks python benchmarks/alloc59_replay.py --flagperf # device, FlagPerf rows
    PYTHONPATH=src:benchmarks python benchmarks/alloc59_replay.py --check    # the CSV vs the mirror
"""

from __future__ import annotations

import csv
import json
import re
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import mirror_rows

from trainsim.config import RunConfig
from trainsim.memory import megatron_step as M

GiB = 2**30
SIMUMAX = ("MooreThreads+SimuMax", "4dcaae5")
SUMMARY = "docs/b200/b200_release_v1.2_summary.json"
HERE = Path(__file__).resolve().parent
RANKS_CSV = HERE / "alloc59_simumax_ranks.csv"
STEPS = 3


def mirror_ranks() -> list[dict[str, str]]:
    """Per case (the first of each memory group; ``mbc`` does not change memory) and rank, the
    measured figures, from the SimuMax mirror: the Llama 3 and the DeepSeek-V2 / V3 cases."""
    summary = json.loads(mirror_rows.show(*SIMUMAX, SUMMARY))
    out, seen = [], set()
    for r in summary["rows"]:
        key = re.sub(r"_mbc\d+", "", r["case"])
        if not r["case"].startswith(("llama3_", "deepseek")) or key in seen:
            continue
        seen.add(key)
        for rank, v in sorted(r["peak_memory_by_rank_mb"].items(), key=lambda kv: int(kv[0])):
            out.append({"case": r["case"], "layer_num": str(r["layer_num"]), "rank": rank,
                        "max_allocated_mb": f"{v['max_allocated_mb']:.4f}",
                        "max_reserved_mb": f"{v['max_reserved_mb']:.1f}"})
    return out


@dataclass(frozen=True)
class Case:
    """A SimuMax case: its name, trainsim's config of its row in training_simumax_b200.csv,
    and the measured (max allocated, max reserved) MiB by rank."""

    name: str
    cfg: RunConfig
    ranks: dict[int, tuple[float, float]]
    result: Any = None

    @property
    def pp(self) -> int:
        return self.cfg.parallel.pp

    @property
    def shard_ranks(self) -> int:
        """Optimizer shards: the distributed optimizer shards over data- and context-parallel
        ranks."""
        return self.cfg.dp * self.cfg.parallel.cp


def config_of(row: dict[str, str]) -> tuple[RunConfig, Any]:
    """trainsim's resolved config of a training row and its result (the layout validation
    runs)."""
    from trainsim.validate import training as T
    from trainsim.validate.row_settings import counts_checked
    from trainsim.validate.vocab import normalized_training_row

    r, _ = normalized_training_row(row, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cfg, _choice, res = T._tuned_layout(counts_checked(r), "auto")
    return cfg, res


def cases() -> list[Case]:
    """The SimuMax cases with a memory figure, their rank figures from the CSV."""
    by: dict[str, list[dict[str, str]]] = {}
    for row in csv.DictReader(RANKS_CSV.open()):
        by.setdefault(row["case"], []).append(row)
    out = []
    for row in csv.DictReader((HERE / "training_simumax_b200.csv").open()):
        name = re.search(r"case '([^']+)'", row["source"]).group(1)
        if not row["measured_peak_memory_gib"] or name not in by:
            continue
        cfg, res = config_of(row)
        out.append(Case(name, cfg, {
            int(r["rank"]): (float(r["max_allocated_mb"]), float(r["max_reserved_mb"]))
            for r in by[name]}, res))
    return out


def shape(cfg: RunConfig, stage: int, microbatches: int) -> M.Shape:
    """``memory.megatron_step``'s shape of ``stage`` with ``microbatches`` micro-batches a step
    and every warm-up forward of 1F1B (no cap on those in flight)."""
    warmup = min(cfg.parallel.pp - stage - 1, microbatches)
    return replace(M.shape_of(cfg, stage), microbatches=microbatches, warmup=warmup)


def replay(sh: M.Shape, rank: int, persistent: bool = True) -> float:
    """Reserved minus allocated (GiB) of one optimizer shard's replay, three steps."""
    return M._Replay(sh).run(rank, steps=STEPS, persistent=persistent) / GiB


def measured_by_shard(c: Case, stage: int) -> dict[int, list[float]]:
    """Measured reserve (GiB) of stage ``stage``'s ranks by optimizer shard (Megatron's rank
    order tp-cp-dp-pp on one node of 8)."""
    tp, pp = c.cfg.parallel.tp, c.pp
    out: dict[int, list[float]] = {}
    for rank, (a, r) in c.ranks.items():
        if rank // (8 // pp) == stage:
            out.setdefault((rank // tp) % c.shard_ranks, []).append((r - a) / 1024)
    return out


def replayed(c: Case, stage: int) -> tuple[float, list[float]]:
    """(activations-only reserve, with-construction reserve by optimizer shard), GiB, with the
    case's micro-batches."""
    sh = shape(c.cfg, stage, c.cfg.schedule_microbatches)
    return replay(sh, 0, persistent=False), [replay(sh, d) for d in range(c.shard_ranks)]


def main() -> None:
    print("| case | stage | measured reserve GiB (min-max over ranks) | replay: activations only |"
          " replay: with construction and optimizer state (min-max over shards) |")
    print("|---|---|---|---|---|")
    for c in cases():
        for stage in range(c.pp):
            meas = [x for v in measured_by_shard(c, stage).values() for x in v]
            act, shards = replayed(c, stage)
            print(f"| {c.name} | {stage} | {min(meas):.2f}-{max(meas):.2f} | {act:.2f} | "
                  f"{min(shards):.2f}-{max(shards):.2f} |")


def by_shard() -> None:
    print("| case | stage | measured / replayed reserve GiB by optimizer shard |")
    print("|---|---|---|")
    for c in cases():
        for stage in range(c.pp):
            meas = measured_by_shard(c, stage)
            _, shards = replayed(c, stage)
            cells = " ".join(f"{d}: {min(meas[d]):.2f} / {x:.2f}" for d, x in enumerate(shards))
            print(f"| {c.name} | {stage} | {cells} |")


def trainsim_rows() -> list[tuple[str, float, float, float, float]]:
    """(case, measured largest reserved, trainsim's allocated, trainsim's reserved, trainsim's
    allocated + this script's largest replayed reserve over stages and shards), GiB, for each
    row of training_simumax_b200.csv with memory. Before alloc59 (dense) and alloc60 (MoE)
    trainsim's reserved was its allocated on these rows."""
    out = []
    for c in cases():
        m = max(c.result.memory, key=lambda x: x.allocated)
        measured = max(r for _, r in c.ranks.values()) / 1024  # the summary's real_reserved_gib
        extra = max(max(replayed(c, s)[1]) for s in range(c.pp))
        pa, pr = m.allocated / GiB, m.reserved / GiB
        out.append((c.name, measured, pa, pr, pa + extra))
    return out


def trainsim() -> None:
    print("| case | measured reserved GiB | trainsim allocated (its reserved before alloc59/60) | "
          "trainsim reserved | allocated + this replay's reserve |")
    print("|---|---|---|---|---|")
    rows = trainsim_rows()

    def cell(p: float, m: float) -> str:
        return f"{p:.1f} ({100 * (p / m - 1):+.1f} %)"

    for name, m, pa, pr, rep in rows:
        print(f"| {name} | {m:.1f} | {cell(pa, m)} | {cell(pr, m)} | {cell(rep, m)} |")
    for label, sel in (("dense", lambda r: not r[0].startswith("deepseek")),
                       ("MoE", lambda r: r[0].startswith("deepseek")), ("all", lambda r: True)):
        part = [r for r in rows if sel(r)]
        n = len(part)
        mape = [100 * sum(abs(r[k] / r[1] - 1) for r in part) / n for k in (2, 3, 4)]
        print(f"| MAPE, {n} {label} rows | | {mape[0]:.1f} % | {mape[1]:.1f} % | {mape[2]:.1f} % |")


def check() -> list[str]:
    """Differences between alloc59_simumax_ranks.csv and the mirror."""
    have = list(csv.DictReader(RANKS_CSV.open()))
    want = mirror_ranks()
    return [f"row {i}: {a} != {b}" for i, (a, b) in enumerate(zip(have, want)) if a != b] + (
        [f"{len(have)} rows, the mirror gives {len(want)}"] if len(have) != len(want) else [])


def replay_reserve(cfg: RunConfig) -> float:
    """The largest reserved-minus-allocated (GiB) of the replay over the stages and the first
    eight optimizer shards, up to 2 pp + 2 micro-batches a step."""
    p = cfg.parallel
    mb = min(cfg.schedule_microbatches, 2 * p.pp + 2)
    return max(replay(shape(cfg, stage, mb), d) for stage in range(p.pp)
               for d in range(min(cfg.dp * p.cp, 8)))


def flagperf() -> None:
    """FlagPerf's Megatron-core rows (nvidia-smi, ``device``): trainsim's figure without the
    replayed reserve (before alloc59), with it (``memory.megatron_step``), and with this
    script's replay (more shards and micro-batches) in its place."""
    path = HERE / "training_flagperf.csv"
    print("| row | measured GiB | trainsim without the reserve | trainsim | + this replay's reserve |")
    print("|---|---|---|---|---|")
    err = [0.0, 0.0, 0.0]
    n = 0
    for row in csv.DictReader(path.open()):
        if row["framework"] != "megatron-core" or not row["measured_peak_memory_gib"]:
            continue
        cfg, res = config_of(row)
        base = max(m.allocated + m.cached + m.context for m in res.memory) / GiB
        now = max(m.device for m in res.memory) / GiB
        mine = base + (replay_reserve(cfg) if M.applies(cfg) else 0.0)
        meas = float(row["measured_peak_memory_gib"])
        n += 1
        cells = []
        for k, p in enumerate((base, now, mine)):
            err[k] += abs(p / meas - 1)
            cells.append(f"{p:.1f} ({100 * (p / meas - 1):+.1f} %)")
        print(f"| {row['id']} | {meas:.0f} | " + " | ".join(cells) + " |")
    print(f"| MAPE, {n} rows | | " + " | ".join(f"{100 * e / n:.1f} %" for e in err) + " |")


if __name__ == "__main__":
    import sys

    if "--check" in sys.argv:
        bad = check()
        print("\n".join(bad) or "alloc59_simumax_ranks.csv matches the mirror")
        sys.exit(1 if bad else 0)
    if "--write-ranks" in sys.argv:
        w = csv.DictWriter(sys.stdout, ["case", "layer_num", "rank", "max_allocated_mb",
                                        "max_reserved_mb"], lineterminator="\n")
        w.writeheader()
        w.writerows(mirror_ranks())
    else:
        {"--ranks": by_shard, "--trainsim": trainsim, "--flagperf": flagperf}.get(
            next((a for a in sys.argv[1:] if a.startswith("--")), ""), main)()
