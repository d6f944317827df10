"""Where the caching allocator's reserve comes from in a Megatron-core run: a replay of one rank
through the allocator's rules (59th session, alloc59). The evidence behind
``trainsim.memory.megatron_step`` (the same mechanism, its layer sequence written again there,
three optimizer shards and at most four micro-batches in flight): this script replays every
optimizer shard of SimuMax's cases and prints them beside the measurement.

MooreThreads/SimuMax's B200 runs of Megatron-LM core_r0.14.0 (23e00ed; no ``expandable_segments``,
the distributed optimizer, no overlapped reductions, ``empty_unused_memory_level`` 0:
simu_tools/megatron_scripts/scripts/run_pretrain_llama3.sh @4dcaae5) log ``max_memory_allocated``
and ``max_memory_reserved`` since the start on every rank (docs/b200/b200_release_v1.2_summary.json
``peak_memory_by_rank_mb``, copied per rank into ``alloc59_simumax_ranks.csv``; ``--check``
compares it with the mirror). This script replays one rank through
``trainsim.memory.caching_allocator`` (c10/cuda/CUDACachingAllocator.cpp's rules, one stream,
frees effective at once) in two ways:

- *activations only*: a coarse sequence of a Transformer Engine layer's activation-sized 16-bit
  tensors (fused RoPE, attention and SwiGLU; weight gradients accumulated into the persistent
  fp32 buffer, so none is allocated in the step), scheduled 1F1B (``pp - stage - 1`` warm-up
  forwards);
- *with construction and optimizer state*: first the model's 16-bit weights one by one, then
  Megatron's DDP buffers (16-bit parameters, fp32 gradients), each weight moved into the buffer
  and its own storage freed (megatron/core/distributed/param_and_grad_buffer.py L731-736 at
  23e00ed; the same at core_v0.6.0, L361-365), the distributed optimizer's fp32 main shards
  (``shard_model_param.clone().float()``, distrib_optimizer.py L379) and, at the first step,
  Adam's two fp32 moments per shard (TransformerEngine v2.11 optimizers/fused_adam.py
  ``initialize_state`` L402-410). The freed weight blocks stay cached (no ``empty_cache``) and the
  activations split them; the shard sizes depend on where the data-parallel rank's range cuts
  the buffer (parameters in reverse order, starts padded to 64 elements, one bucket padded to
  lcm(dp, 128)), so the reserve differs by optimizer shard and not within a tensor-parallel group.

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
from dataclasses import dataclass
from pathlib import Path

import mirror_rows

from trainsim.memory.caching_allocator import CachingAllocator

GiB = 2**30
SIMUMAX = ("MooreThreads+SimuMax", "4dcaae5")
SUMMARY = "docs/b200/b200_release_v1.2_summary.json"
HERE = Path(__file__).resolve().parent
RANKS_CSV = HERE / "alloc59_simumax_ranks.csv"
MODELS = {  # hidden, ffn, query heads x 128, kv heads x 128, vocab (the run script's shapes)
    "llama3_70b": (8192, 28672, 8192, 1024, 128256),
    "llama3_405b": (16384, 53248, 16384, 2048, 128256),
}


@dataclass(frozen=True)
class Case:
    name: str
    h: int
    f: int
    q: int
    kv: int
    vocab: int
    layers: int
    tp: int
    pp: int
    cp: int
    seq: int
    microbatches: int

    @property
    def T(self) -> int:  # tokens of one micro-batch on this rank (micro-batch 1)
        return self.seq // self.cp


class Replay:
    """One rank of one pipeline stage: persistent state, then steps of 1F1B."""

    def __init__(self, c: Case, stage: int) -> None:
        self.c, self.stage, self.al = c, stage, CachingAllocator()
        self.first, self.last = stage == 0, stage == c.pp - 1

    def a(self, n: float) -> int:
        return self.al.malloc(int(n))

    def f(self, *hs: int | None) -> None:
        for h in hs:
            if h is not None:
                self.al.free(h)

    def layer_forward(self, x: int) -> tuple[list[int], int]:
        c = self.c
        T, h, f, q, kv, t = c.T, c.h, c.f, c.q, c.kv, c.tp
        loc = T // t if t > 1 else T  # sequence-parallel slice
        saved = [x]
        ln1 = self.a(2 * loc * h)
        saved.append(ln1)
        g = self.a(2 * T * h) if t > 1 else None  # all-gathered norm output
        qkv = self.a(2 * T * (q + 2 * kv) / t)
        self.f(g)
        qr, kr = self.a(2 * T * q / t), self.a(2 * T * kv / t)  # fused RoPE's outputs
        o = self.a(2 * T * q / t)
        saved += [qkv, qr, kr, o]
        p = self.a(2 * T * h)  # projection output (partial sums under TP)
        rs = self.a(2 * loc * h) if t > 1 else None
        self.f(p if t > 1 else None)
        r1 = self.a(2 * loc * h)  # residual add
        self.f(rs if t > 1 else p)
        saved.append(r1)
        ln2 = self.a(2 * loc * h)
        g = self.a(2 * T * h) if t > 1 else None
        fc1 = self.a(2 * T * 2 * f / t)
        self.f(g)
        sw = self.a(2 * T * f / t)
        saved += [ln2, fc1, sw]
        p = self.a(2 * T * h)
        rs = self.a(2 * loc * h) if t > 1 else None
        self.f(p if t > 1 else None)
        out = self.a(2 * loc * h)
        self.f(rs if t > 1 else p)
        return saved, out

    def layer_backward(self, saved: list[int], g: int) -> int:
        c = self.c
        T, h, f, q, kv, t = c.T, c.h, c.f, c.q, c.kv, c.tp
        loc = T // t if t > 1 else T
        x, ln1, qkv, qr, kr, o, r1, ln2, fc1, sw = saved
        gg = self.a(2 * T * h) if t > 1 else None  # gathered output gradient
        dsw = self.a(2 * T * f / t)
        self.f(gg, sw)
        dfc1 = self.a(2 * T * 2 * f / t)
        self.f(dsw, fc1)
        gl = self.a(2 * T * h) if t > 1 else None  # re-gathered norm output for the wgrad
        dln = self.a(2 * T * h)
        self.f(gl, dfc1)
        rs = self.a(2 * loc * h) if t > 1 else None
        self.f(dln if t > 1 else None)
        dx = self.a(2 * loc * h)  # norm backward
        self.f(rs if t > 1 else dln, ln2, r1)
        g2 = self.a(2 * loc * h)  # + residual gradient
        self.f(dx, g)
        gg = self.a(2 * T * h) if t > 1 else None
        do = self.a(2 * T * q / t)
        self.f(gg)
        dq, dk, dv = self.a(2 * T * q / t), self.a(2 * T * kv / t), self.a(2 * T * kv / t)
        self.f(do, o, qr, kr)
        dqkv = self.a(2 * T * (q + 2 * kv) / t)  # RoPE backward into the fused gradient
        self.f(dq, dk, dv, qkv)
        gl = self.a(2 * T * h) if t > 1 else None
        dln = self.a(2 * T * h)
        self.f(gl, dqkv)
        rs = self.a(2 * loc * h) if t > 1 else None
        self.f(dln if t > 1 else None)
        dx = self.a(2 * loc * h)
        self.f(rs if t > 1 else dln, ln1, x)
        g3 = self.a(2 * loc * h)
        self.f(dx, g2)
        return g3

    def forward(self) -> tuple[list[list[int]], int]:
        c = self.c
        loc = c.T // c.tp if c.tp > 1 else c.T
        x = self.a(2 * loc * c.h)  # embedding output or the received activation
        layers = []
        for _ in range(c.layers // c.pp):
            s, x = self.layer_forward(x)
            layers.append(s)
        if self.last:  # output layer: 16-bit logits; the fused loss keeps its gradient
            ln = self.a(2 * loc * c.h)
            logits = self.a(2 * c.T * c.vocab / c.tp)
            layers.append([x, ln, logits])
            return layers, -1
        return layers, x  # x: the activation sent to the next stage (freed once sent)

    def backward(self, layers: list[list[int]], out: int) -> None:
        c = self.c
        loc = c.T // c.tp if c.tp > 1 else c.T
        if self.last:
            x, ln, logits = layers.pop()
            g = self.a(2 * loc * c.h)
            self.f(logits, ln, x)
        else:
            self.f(out)
            g = self.a(2 * loc * c.h)  # received gradient
        for s in reversed(layers):
            g = self.layer_backward(s, g)
        self.f(g)

    def step(self) -> None:
        c = self.c
        warm = min(c.pp - self.stage - 1, c.microbatches)
        inflight = []
        for _ in range(warm):
            inflight.append(self.forward())
        for _ in range(c.microbatches - warm):
            inflight.append(self.forward())
            self.backward(*inflight.pop(0))
        while inflight:
            self.backward(*inflight.pop(0))

    def params(self) -> list[int]:
        """The stage's parameters (elements) in construction order: the embedding on the first
        stage, per layer the QKV norm and weight, the projection, the MLP norm and FC1, FC2,
        then the final norm and the output layer on the last (untied)."""
        c = self.c
        t = c.tp
        out = [c.vocab * c.h // t] if self.first else []
        for _ in range(c.layers // c.pp):
            out += [c.h, (c.q + 2 * c.kv) * c.h // t, c.h * c.q // t, c.h, 2 * c.f * c.h // t,
                    c.h * c.f // t]
        if self.last:
            out += [c.h, c.vocab * c.h // t]
        return out

    def shards(self, dp: int, rank: int) -> list[int]:
        """Elements of each parameter in data-parallel rank ``rank``'s range of the one bucket
        (Megatron-core param_and_grad_buffer.py @23e00ed: parameters laid out in reverse, each
        start padded to 64 elements, the bucket's end to lcm(dp, 128); rank r owns the r-th
        of dp equal contiguous ranges)."""
        import math
        spans, start = {}, 0
        ps = self.params()
        for i in reversed(range(len(ps))):
            start = -(-start // 64) * 64
            spans[i] = (start, start + ps[i])
            start += ps[i]
        div = math.lcm(dp, 128)
        numel = -(-start // div) * div
        lo, hi = rank * numel // dp, (rank + 1) * numel // dp
        return [max(0, min(hi, spans[i][1]) - max(lo, spans[i][0])) for i in range(len(ps))]

    def construct(self) -> None:
        """Model construction and the DDP buffers: the 16-bit weights one by one, then the
        16-bit parameter and fp32 gradient buffers, and each parameter moved in, its old storage
        freed (param_and_grad_buffer.py L731-736)."""
        ps = self.params()
        weights = [self.a(2 * n) for n in ps]
        total = sum(ps)
        self.a(2 * total)
        self.a(4 * total)
        self.f(*reversed(weights))

    def build(self, dp: int, rank: int) -> None:
        """:meth:`construct`, then the distributed optimizer's fp32 main shards
        (``shard_model_param.clone().float()``, distrib_optimizer.py L379)."""
        self.construct()
        self.sh = self.shards(dp, rank)
        for n in self.sh:
            if n:
                tmp = self.a(2 * n)
                self.a(4 * n)
                self.f(tmp)

    def run(self, steps: int = 3, dp: int = 1, rank: int = 0,
            persistent: bool = True) -> tuple[float, float]:
        """(peak allocated, peak reserved) GiB since the start, as Megatron's ``report_memory``
        logs them (no peak reset); ``persistent``: replay the model's construction and the
        optimizer's state too (Adam's two fp32 moments a shard, made at the first step: TE
        FusedAdam ``initialize_state`` v2.11 L402-410)."""
        if persistent:
            self.build(dp, rank)
        for k in range(steps):
            self.step()
            if k == 0 and persistent:
                for n in self.sh:
                    if n:
                        self.a(4 * n)
                        self.a(4 * n)
        return self.al.peak_allocated / GiB, self.al.peak_reserved / GiB


def mirror_ranks() -> list[dict[str, str]]:
    """Per case (the first of each memory group; ``mbc`` does not change memory) and rank, the
    measured figures, from the SimuMax mirror."""
    summary = json.loads(mirror_rows.show(*SIMUMAX, SUMMARY))
    out, seen = [], set()
    for r in summary["rows"]:
        key = re.sub(r"_mbc\d+", "", r["case"])
        if not r["case"].startswith("llama3_") or key in seen:
            continue
        seen.add(key)
        for rank, v in sorted(r["peak_memory_by_rank_mb"].items(), key=lambda kv: int(kv[0])):
            out.append({"case": r["case"], "layer_num": str(r["layer_num"]), "rank": rank,
                        "max_allocated_mb": f"{v['max_allocated_mb']:.4f}",
                        "max_reserved_mb": f"{v['max_reserved_mb']:.1f}"})
    return out


def cases() -> list[tuple[Case, dict[int, tuple[float, float]]]]:
    """The dense SimuMax cases with (max allocated, max reserved) MiB by rank, from the CSV."""
    by: dict[str, list[dict[str, str]]] = {}
    for row in csv.DictReader(RANKS_CSV.open()):
        by.setdefault(row["case"], []).append(row)
    out = []
    for name, rows in by.items():
        par = {k: int(v) for k, v in re.findall(r"(tp|pp|cp|dp)(\d+)", name)}
        seq = re.search(r"seq(\d+)", name)
        h, f, q, kv, v = MODELS[re.match(r"(llama3_\d+b)_", name).group(1)]
        c = Case(name, h, f, q, kv, v, int(rows[0]["layer_num"]), par["tp"], par["pp"],
                 par.get("cp", 1), int(seq.group(1)) if seq else 4096, 4)
        out.append((c, {int(r["rank"]): (float(r["max_allocated_mb"]),
                                         float(r["max_reserved_mb"])) for r in rows}))
    return out


def shard_ranks(c: Case) -> int:
    """Optimizer shards: the distributed optimizer shards over data- and context-parallel ranks."""
    return 8 // (c.tp * c.pp)


def measured_by_shard(c: Case, ranks: dict[int, tuple[float, float]], stage: int
                      ) -> dict[int, list[float]]:
    """Measured reserve (GiB) of stage ``stage``'s ranks by optimizer shard (Megatron's rank
    order tp-cp-dp-pp on one node of 8)."""
    out: dict[int, list[float]] = {}
    for rank, (a, r) in ranks.items():
        if rank // (8 // c.pp) == stage:
            out.setdefault((rank // c.tp) % shard_ranks(c), []).append((r - a) / 1024)
    return out


def replayed(c: Case, stage: int) -> tuple[float, list[float]]:
    """(activations-only reserve, with-construction reserve by optimizer shard), GiB."""
    a, r = Replay(c, stage).run(persistent=False)
    shards = []
    for d in range(shard_ranks(c)):
        a2, r2 = Replay(c, stage).run(dp=shard_ranks(c), rank=d)
        shards.append(r2 - a2)
    return r - a, shards


def main() -> None:
    print("| case | stage | measured reserve GiB (min-max over ranks) | replay: activations only |"
          " replay: with construction and optimizer state (min-max over shards) |")
    print("|---|---|---|---|---|")
    for c, ranks in cases():
        for stage in range(c.pp):
            meas = [x for v in measured_by_shard(c, ranks, stage).values() for x in v]
            act, shards = replayed(c, stage)
            print(f"| {c.name} | {stage} | {min(meas):.2f}-{max(meas):.2f} | {act:.2f} | "
                  f"{min(shards):.2f}-{max(shards):.2f} |")


def by_shard() -> None:
    print("| case | stage | measured / replayed reserve GiB by optimizer shard |")
    print("|---|---|---|")
    for c, ranks in cases():
        for stage in range(c.pp):
            meas = measured_by_shard(c, ranks, stage)
            _, shards = replayed(c, stage)
            cells = " ".join(f"{d}: {min(meas[d]):.2f} / {x:.2f}" for d, x in enumerate(shards))
            print(f"| {c.name} | {stage} | {cells} |")


def trainsim_rows() -> list[tuple[str, float, float, float, float]]:
    """(case, measured largest reserved, trainsim's allocated, trainsim's reserved, trainsim's
    allocated + this script's largest replayed reserve over stages and shards), GiB, for each
    dense row of training_simumax_b200.csv with memory. Before alloc59 trainsim's reserved was
    its allocated on these rows."""
    import memory58_reserve

    reps = {c.name: (c, ranks) for c, ranks in cases()}
    out = []
    for row in csv.DictReader((HERE / "training_simumax_b200.csv").open()):
        name = re.search(r"case '([^']+)'", row["source"]).group(1)
        if not row["measured_peak_memory_gib"] or name not in reps:
            continue
        c, ranks = reps[name]
        measured = max(r for _, r in ranks.values()) / 1024  # the summary's real_reserved_gib
        extra = max(max(replayed(c, s)[1]) for s in range(c.pp))
        pa, pr = memory58_reserve._predicted(row)
        out.append((name, measured, pa, pr, pa + extra))
    return out


def trainsim() -> None:
    print("| case | measured reserved GiB | trainsim allocated (its reserved before alloc59) | "
          "trainsim reserved | allocated + this replay's reserve |")
    print("|---|---|---|---|---|")
    rows = trainsim_rows()

    def cell(p: float, m: float) -> str:
        return f"{p:.1f} ({100 * (p / m - 1):+.1f} %)"

    for name, m, pa, pr, rep in rows:
        print(f"| {name} | {m:.1f} | {cell(pa, m)} | {cell(pr, m)} | {cell(rep, m)} |")
    n = len(rows)
    mape = [100 * sum(abs(r[k] / r[1] - 1) for r in rows) / n for k in (2, 3, 4)]
    print(f"| MAPE, {n} rows | | {mape[0]:.1f} % | {mape[1]:.1f} % | {mape[2]:.1f} % |")


def check() -> list[str]:
    """Differences between alloc59_simumax_ranks.csv and the mirror."""
    have = list(csv.DictReader(RANKS_CSV.open()))
    want = mirror_ranks()
    return [f"row {i}: {a} != {b}" for i, (a, b) in enumerate(zip(have, want)) if a != b] + (
        [f"{len(have)} rows, the mirror gives {len(want)}"] if len(have) != len(want) else [])


def case_of(cfg, name: str = "") -> Case:
    """The replay's shapes for a dense run of trainsim's (micro-batch folded into the tokens)."""
    from trainsim.workload.vocab import padded_vocab

    m, p, t = cfg.model, cfg.parallel, cfg.training
    return Case(name, m.hidden_size, m.ffn_size, m.q_size, m.kv_size, padded_vocab(cfg),
                m.num_layers, p.tp, p.pp, p.cp, t.micro_batch_size * t.seq_length,
                min(cfg.schedule_microbatches, 2 * p.pp + 2))


def replay_reserve(cfg) -> float:
    """The largest reserved-minus-allocated (GiB) of the replay over the stages and the first
    eight optimizer shards (data- and context-parallel ranks)."""
    c = case_of(cfg)
    dp = cfg.dp * cfg.parallel.cp
    return max(r - a for stage in range(c.pp) for d in range(min(dp, 8))
               for a, r in [Replay(c, stage).run(steps=2, dp=dp, rank=d)])


def flagperf() -> None:
    """FlagPerf's Megatron-core rows (nvidia-smi, ``device``): trainsim's figure without the
    replayed reserve (before alloc59), with it (``memory.megatron_step``), and with this
    script's replay (more shards and micro-batches) in its place."""
    import warnings

    from trainsim.validate import training as T
    from trainsim.validate.row_settings import counts_checked
    from trainsim.validate.vocab import normalized_training_row

    path = HERE / "training_flagperf.csv"
    print("| row | measured GiB | trainsim without the reserve | trainsim | + this replay's reserve |")
    print("|---|---|---|---|---|")
    err = [0.0, 0.0, 0.0]
    n = 0
    for row in csv.DictReader(path.open()):
        if row["framework"] != "megatron-core" or not row["measured_peak_memory_gib"]:
            continue
        r, _ = normalized_training_row(row, 0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cfg, _choice, res = T._tuned_layout(counts_checked(r), "auto")
        base = max(m.allocated + m.cached + m.context for m in res.memory) / GiB
        now = max(m.device for m in res.memory) / GiB
        mine = base + replay_reserve(cfg)
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
