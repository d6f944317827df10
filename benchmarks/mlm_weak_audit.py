"""Megatron-LM's H100 weak-scaling table read back, and where trainsim's error on its rows lives
(a check, not an input: nothing here feeds trainsim).

    PYTHONPATH=src python benchmarks/mlm_weak_audit.py            # reading check only (fast)
    PYTHONPATH=src python benchmarks/mlm_weak_audit.py --simulate # + each row's breakdown
    PYTHONPATH=src python benchmarks/mlm_weak_audit.py --simulate --what-if net-share=1.0
    PYTHONPATH=src python benchmarks/mlm_weak_audit.py --simulate --what-if dp-channels
    PYTHONPATH=src python benchmarks/mlm_weak_audit.py --pairs    # Korthikanti 2022 pairs
    PYTHONPATH=src python benchmarks/mlm_weak_audit.py --cross    # the same work, 2021 vs 2022
    PYTHONPATH=src python benchmarks/mlm_weak_audit.py --what-if dp-channels --validate FILE

**Reading.** ``TABLE`` is NVIDIA/Megatron-LM README.md's model table (images/model_table.png)
at f2e5db402c44 (2024-07-15, "New scaling figures on H100 GPUs"; the weak-scaling figure's
legend says Megatron-Core r0.8.0). Per row it checks the public file's cells (heads, hidden,
layers, TP, PP, GPUs, batch; data-parallel size = GPUs / (TP x PP) = the table's 48) and its
iteration time: Megatron logs ``throughput per GPU (TFLOP/s/GPU)`` as
``num_floating_point_operations(args, batch) / (iteration time x 1e12 x world size)``
(core_v0.8.0 megatron/training/training.py L73-108, L817-837), so the time is that count over
the table's TFLOP/s x GPUs. Two more checks on the table itself: TFLOP/s x GPUs is the
aggregate column, and TFLOP/s / 989 (the H100 SXM dense 16-bit peak) rounded half-up is the MFU
column in all nine rows (against the fp8 peak, 1979, they would read 21-25 %): bf16.

**Breakdown** (``--simulate``): each row as ``trainsim validate`` prices it (empty cells
tuned), from one simulated iteration: rank 0's compute stream, split into the categories its
tasks carry (compute, the TP communication left exposed inside the passes, ...), the time other
streams' kernels stretched it (data-parallel collectives holding SMs, ``Pricer.sm_share``), and
the exposed TP share of the predicted time.

**What-ifs** (none of them in trainsim): ``net-share=X`` sets
``collectives.nccl.ONE_RANK_PER_NODE_NET_SHARE`` (0.71, from HDR A100); ``dp-channels`` lets a
data-parallel collective whose group has one rank per node hold NCCL's network channel count of
SMs instead of ``COMM_SMS`` (16): NCCL v2.21.5 src/graph/search.cc finds one ring channel at the
NIC's speed (``sm90SpeedArrayInter`` 48 GB/s on NDR 400; 24 on HDR 200), ``ncclTopoDupChannels``
doubles it only at >= 25 GB/s, and src/graph/connect.cc ``ncclTopoPostset`` doubles the count
again: 4 on H100 with NDR, 2 on A100 with HDR ("2 is the minimum", NVIDIA/nccl#689).

**Pairs** (``--pairs``): Korthikanti et al. 2022's full-recompute and SP + selective rows of one
model differ only in recompute and SP; their measured time ratio against trainsim's at the tuned
settings and with both rows at one interleaving depth.

**Cross** (``--cross``): with ``benchmarks/training_errata.csv`` applied (the SC21 scripts'
micro-batch and interleaving; the 1T rows at vpp 1), Narayanan et al. 2021's and Korthikanti et
al. 2022's runs of one model with the same micro-batches a pipeline (``CROSS``: 530B on PP 35 at
vpp 3, 280 a pipeline; 1T on PP 64 at vpp 1, 512), and each paper's 1T against its own 530B.
"""

from __future__ import annotations

import csv
import sys
from collections import defaultdict

from trainsim.validate import BUNDLED_DIR

PUBLIC = str(BUNDLED_DIR / "training_public.csv")
H100_BF16_PEAK_TFLOPS = 989.0
VOCAB, SEQ = 131072, 4096
TABLE = (  # heads, hidden, layers, TP, PP, DP, GPUs, batch, TFLOP/s/GPU, MFU %, PFLOP/s
    (16, 2048, 24, 1, 1, 48, 48, 192, 408.8, 41, 19.6),
    (32, 4096, 30, 2, 1, 48, 96, 192, 465.9, 47, 44.7),
    (48, 6144, 32, 4, 1, 48, 192, 192, 489.1, 49, 93.9),
    (56, 7168, 48, 8, 1, 48, 384, 192, 459.6, 46, 176.5),
    (64, 8192, 84, 8, 2, 48, 768, 384, 419.7, 42, 322.3),
    (80, 10240, 92, 8, 4, 48, 1536, 768, 420.5, 43, 645.9),
    (96, 12288, 96, 8, 6, 48, 2304, 1152, 432.8, 44, 997.2),
    (128, 16384, 96, 8, 8, 48, 3072, 1536, 474.4, 48, 1457.4),
    (144, 18432, 112, 8, 16, 48, 6144, 3072, 459.9, 47, 2825.6),
)
"""Megatron-LM README.md model table at f2e5db402c44ae309aa6448bcb4ae87e8ae0f5f4."""


def megatron_flops(batch: int, layers: int, hidden: int, ffn: int, seq: int = SEQ,
                   vocab: int = VOCAB) -> float:
    """core_v0.8.0 ``num_floating_point_operations`` for a GELU, multi-head-attention GPT."""
    return 12 * batch * seq * layers * hidden * hidden * (
        (2 + seq / hidden) + ffn / hidden + vocab / (2 * layers * hidden))


def _rows(path: str = PUBLIC) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def weak_rows(path: str = PUBLIC) -> list[dict[str, str]]:
    return [r for r in _rows(path) if r["id"].startswith("mlm-weak-")]


def reading(rows: list[dict[str, str]]) -> list[tuple[str, list[str]]]:
    """Per table row: the public row it matches (by GPU count) and what disagrees (empty: all
    cells and the iteration time agree)."""
    by_gpus = {int(r["num_gpus"]): r for r in rows}
    out = []
    for heads, hidden, layers, tp, pp, dp, gpus, batch, tflops, mfu, agg in TABLE:
        r = by_gpus.get(gpus)
        if r is None:
            out.append((f"{gpus} GPUs", ["no row"]))
            continue
        bad = [f"{k} {r[k]} != {v}" for k, v in (
            ("num_attention_heads", heads), ("hidden_size", hidden), ("num_layers", layers),
            ("tp", tp), ("pp", pp), ("global_batch_size", batch),
            ("vocab_size", VOCAB), ("seq_length", SEQ)) if int(r[k]) != v]
        if gpus // (tp * pp) != dp:
            bad.append(f"dp {gpus // (tp * pp)} != {dp}")
        t = megatron_flops(batch, layers, hidden, int(r["ffn_hidden_size"])) / (
            tflops * 1e12 * gpus)
        if abs(float(r["measured_iteration_s"]) / t - 1) > 5e-4:
            bad.append(f"iteration {r['measured_iteration_s']} != {t:.4f}")
        if abs(tflops * gpus / 1e3 - agg) > 0.11:
            bad.append(f"aggregate {tflops * gpus / 1e3:.1f} != {agg}")
        if int(100 * tflops / H100_BF16_PEAK_TFLOPS + 0.5) != mfu:
            bad.append(f"MFU {100 * tflops / H100_BF16_PEAK_TFLOPS:.1f} != {mfu}")
        out.append((r["id"], bad))
    return out


def _what_if(name: str) -> None:
    """Apply one what-if of the module docstring to this process (never to trainsim)."""
    if name.startswith("net-share="):
        from trainsim.collectives import nccl
        nccl.ONE_RANK_PER_NODE_NET_SHARE = float(name.split("=", 1)[1])
    elif name == "dp-channels":
        from trainsim import pricing
        init = pricing.Pricer.__init__

        def patched(self, *a, **k):
            init(self, *a, **k)
            span, gpu = self.spans["dp"], self.cfg.cluster.gpu
            if span.nodes > 1 and span.per_node == 1:
                self.sm_share["dp"] = (4 if gpu.sm_arch >= 90 else 2) / gpu.num_sms

        pricing.Pricer.__init__ = patched
    else:
        raise SystemExit(f"unknown what-if {name!r}")


def breakdown(row: dict[str, str]) -> dict[str, object]:
    """Rank 0's compute stream of one simulated iteration of the row as validated."""
    from trainsim.simulator import simulate
    from trainsim.validate.training import predict_training_row, row_config

    res = predict_training_row(row)
    result = simulate(row_config(row, res.chosen), keep_timeline=True)
    tl = result.timeline
    segs: dict[str, float] = defaultdict(float)
    stretch = 0.0
    for i, task in enumerate(tl.tasks):
        if task.stream == (0, "compute"):
            for cat, s in task.segments:
                segs[cat] += s
            stretch += tl.stretch_s(i)
    pred = result.iteration_time_s
    return {"id": row["id"], "chosen": res.chosen, "measured": res.measured,
            "predicted": pred, "error": pred / res.measured - 1, "compute_s": segs["compute"],
            "tp_s": segs["tp_comm"], "stretch_s": stretch, "tp_share": segs["tp_comm"] / pred,
            "exposed_s": result.breakdown["exposed_comm_s"]}


def pairs(path: str = PUBLIC) -> list[dict[str, object]]:
    """Korthikanti et al. 2022's (full, SP + selective) pairs: measured and predicted ratio at
    the tuned settings and with the SP row at the full row's tuned interleaving."""
    from trainsim.validate.training import predict_training_row

    rows = {r["id"]: r for r in _rows(path)}
    out = []
    for size in ("22B", "175B", "530B", "1T"):
        full, sel = rows[f"korthikanti22-{size}-full"], rows[f"korthikanti22-{size}-sp-selective"]
        rf, rs = predict_training_row(full), predict_training_row(sel)
        vpp = rf.chosen.get("vpp", int(full["vpp"] or 1))
        same = predict_training_row({**sel, "vpp": str(vpp)}) if sel["vpp"] == "" else rs
        out.append({"size": size, "vpp_full": vpp, "vpp_sel": rs.chosen.get("vpp", sel["vpp"]),
                    "measured": rs.measured / rf.measured, "tuned": rs.predicted / rf.predicted,
                    "same_vpp": same.predicted / rf.predicted,
                    "err_full": rf.predicted / rf.measured - 1,
                    "err_sel": rs.predicted / rs.measured - 1,
                    "err_sel_same": same.predicted / rs.measured - 1})
    return out


CROSS = (("megatron21-t1-529.6B", "korthikanti22-530B-full"),
         ("megatron21-t1-1008.0B", "korthikanti22-1T-full"),
         ("megatron21-t1-1008.0B", "korthikanti22-1T-sp-selective"))
"""(Narayanan 2021, Korthikanti 2022) rows of one model and one pipeline's micro-batch count."""


def _errata_rows(path: str = PUBLIC) -> dict[str, dict[str, str]]:
    import tempfile
    from pathlib import Path

    from trainsim.validate.errata import corrected_file
    here = Path(__file__).resolve().parent
    fixed, _ = corrected_file(path, here / "training_errata.csv", tempfile.mkdtemp())
    return {r["id"]: r for r in _rows(str(fixed))}


def cross(path: str = PUBLIC) -> list[dict[str, object]]:
    """Measured and predicted time ratio of each ``CROSS`` pair (2022 over 2021), each row's
    error, errata applied."""
    from trainsim.validate.training import predict_training_row

    rows = _errata_rows(path)
    out = []
    for old, new in CROSS:
        a, b = predict_training_row(rows[old]), predict_training_row(rows[new])
        out.append({"old": old, "new": new, "measured": b.measured / a.measured,
                    "predicted": b.predicted / a.predicted,
                    "err_old": a.predicted / a.measured - 1,
                    "err_new": b.predicted / b.measured - 1,
                    "vpp": (a.chosen.get("vpp", rows[old]["vpp"]),
                            b.chosen.get("vpp", rows[new]["vpp"]))})
    return out


def main(argv: list[str]) -> int:
    bad = 0
    for rid, problems in reading(weak_rows()):
        bad += bool(problems)
        print(f"{rid:22s} {'reads as published' if not problems else '; '.join(problems)}")
    for i, arg in enumerate(argv):
        if arg == "--what-if":
            _what_if(argv[i + 1])
    if "--simulate" in argv:
        for row in weak_rows():
            b = breakdown(row)
            print(f"{b['id']:22s} {b['chosen']} {100 * b['error']:+6.1f} %  compute "
                  f"{b['compute_s']:.3f}  tp exposed {b['tp_s']:.3f} ({b['tp_share']:.3f})  "
                  f"stretch {b['stretch_s']:.3f}  exposed comm {b['exposed_s']:.3f} s")
    if "--pairs" in argv:
        for p in pairs():
            print(f"korthikanti22-{p['size']:5s} vpp full {p['vpp_full']} sel {p['vpp_sel']}: "
                  f"sel/full measured {p['measured']:.3f} predicted {p['tuned']:.3f} "
                  f"(sel at vpp {p['vpp_full']}: {p['same_vpp']:.3f}); errors full "
                  f"{100 * p['err_full']:+.1f} sel {100 * p['err_sel']:+.1f} "
                  f"(at vpp {p['vpp_full']}: {100 * p['err_sel_same']:+.1f}) %")
    if "--cross" in argv:
        for c in cross():
            print(f"{c['new']:31s} / {c['old']:22s} (vpp {c['vpp'][1]} / {c['vpp'][0]}): "
                  f"measured {c['measured']:.3f} predicted {c['predicted']:.3f}; errors "
                  f"{100 * c['err_new']:+.1f} / {100 * c['err_old']:+.1f} %")
    if "--validate" in argv:  # trainsim validate FILE under the what-if, in this process
        import runpy
        sys.argv = ["trainsim", "validate", argv[argv.index("--validate") + 1]]
        runpy.run_module("trainsim", run_name="__main__")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
