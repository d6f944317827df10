"""Where the Blackwell training rows miss, cell by cell (issue 17; a diagnostic: nothing here
feeds trainsim).

    python benchmarks/blackwell_gaps.py          # all four parts (~4 min on 2 cores)
    python benchmarks/blackwell_gaps.py rows     # or: pairs, cta, scale

1. ``rows``: every B200, GB200 and GB300 row of the training files (the public file and
   ``benchmarks/training_{heldout,nemo_perf,mlperf5,nemo_longseq}.csv``) as ``trainsim validate``
   predicts it, with the cells the misses line up with (framework release, CP size and the
   tokens a CP rank holds, CUDA graphs), and the mean signed error by framework release.
2. ``pairs``: rows whose work is the same (model and shape, sequence, GPUs, tp/pp/cp/ep/vpp,
   micro and global batch, dtype) on one GPU under two releases, or under one release on two
   GPUs: the measured ratio of their step times against the predicted one. trainsim has one
   kernel speed per GPU whatever the release, so a release pair it cannot follow is software
   drift at fixed cells; a GPU pair is what the hardware alone buys.
3. ``cta``: MLPerf Training v5.0 and v5.1 Llama 3.1 (405B and 8B, NVIDIA and every partner that
   reused the code) cap the CTAs of each NCCL communicator: ``NCCL_CFG_PATH`` ->
   ``conf/nccl/custom_communicator_cta.yaml`` (cp: min/max 1; dp, dp_cp, tp: max 8; pp, mp,
   embd: max 2), read by ``nccl_communicator_config_path`` (custom.yaml, pretrain.py
   ``MegatronStrategy``) into each process group's ``ncclConfig_t`` (NVIDIA/nccl v2.27.7-1
   src/graph/connect.cc: ``nChannels = min(..., config.maxCTAs)``; src/graph/paths.cc
   ``ncclTopoComputeP2pChannels``: ``p2pnChannels = min(nChannels, ...)``). So Transformer
   Engine's CP ring sends K/V (and dK/dV) on one channel. What that costs depends on what one
   channel carries over NVLink, which no public measurement gives for Hopper or Blackwell;
   trainsim's ``P2P_CHANNEL_Bps`` (14 GB/s) is NCCL's per-channel network figure, checked on
   A100 only. Here the CP sends of those rows are priced at one channel of R GB/s for a few R
   (everything else as shipped): a what-if, not a fit.
4. ``scale``: the rows of part 1 with one category of Blackwell kernel time scaled at a time
   (GEMMs, attention, memory-bound kernels; or a fixed cost added per kernel): how far each
   would go, and which rows it would break. Per-GPU factors like these are what DESIGN.md rules
   out as a model; here they only locate the gap.
"""

from __future__ import annotations

import csv
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from trainsim import pricing
from trainsim.collectives.p2p_channels import P2P_CHANNEL_Bps
from trainsim.compute import roofline
from trainsim.validate import BUNDLED_DIR
from trainsim.validate.training import predict_training_row
from trainsim.workload.ops import Attention, Elementwise, Gemm

HERE = Path(__file__).parent
FILES = {"public": BUNDLED_DIR / "training_public.csv",
         "heldout": HERE / "training_heldout.csv",
         "nemo_perf": HERE / "training_nemo_perf.csv",
         "mlperf5": HERE / "training_mlperf5.csv",
         "longseq": HERE / "training_nemo_longseq.csv"}
BLACKWELL = ("b200-sxm-180gb", "gb200", "gb300")
WORK = ("model", "hidden_size", "num_layers", "num_experts", "seq_length", "num_gpus", "tp",
        "pp", "cp", "ep", "vpp", "micro_batch_size", "global_batch_size", "dtype")
"""Cells that set the work of a step (a pair must agree on all of them)."""
SETTINGS = ("fp8_recipe", "options", "attention", "recompute")
"""Cells a pair may differ in (printed beside it): trainsim models each."""
CTA_RATES = (P2P_CHANNEL_Bps, 25e9, 30e9, 40e9)


def rows() -> list[tuple[str, dict[str, str]]]:
    out = []
    for name, path in FILES.items():
        with path.open(newline="") as fh:
            out += [(name, r) for r in csv.DictReader(fh) if r["gpu"] in BLACKWELL]
    return out


def _cell(row: dict[str, str], key: str, default: str = "") -> str:
    return (row.get(key) or "").strip() or default


def predicted(selection: list[tuple[str, dict[str, str]]]) -> dict[str, float]:
    """Signed error (%) of each row, as ``trainsim validate`` predicts it."""
    out = {}
    for _, r in selection:
        res = predict_training_row(dict(r))
        if res.predicted:
            out[r["id"]] = 100 * (res.predicted / res.measured - 1)
    return out


def show_rows(sel: list[tuple[str, dict[str, str]]], err: dict[str, float]) -> None:
    print(f"{'file':9s} {'row':46s} {'gpu':6s} {'release':11s} cp  s/cp graphs  error")
    groups: dict[str, list[float]] = defaultdict(list)
    for name, r in sel:
        if r["id"] not in err:
            continue
        cp = int(_cell(r, "cp", "1"))
        graphs = "yes" if "cuda_graphs" in _cell(r, "options") else "-"
        release = f"{r['framework'][:6]} {_cell(r, 'framework_version')[:5]}"
        print(f"{name:9s} {r['id'][:46]:46s} {r['gpu'][:6]:6s} {release:11s} {cp:2d} "
              f"{int(r['seq_length']) // cp:5d} {graphs:6s} {err[r['id']]:+6.1f}")
        groups[release].append(err[r["id"]])
    print("\nmean signed error by release (rows)")
    for release, es in sorted(groups.items()):
        print(f"  {release:12s} {sum(es) / len(es):+6.1f} % ({len(es)})")


def show_pairs(sel: list[tuple[str, dict[str, str]]]) -> None:
    """Same-work pairs: across releases on one GPU, across GPUs in one release."""
    by_work: dict[tuple[str, ...], list[dict[str, str]]] = defaultdict(list)
    for _, r in sel:
        by_work[tuple(_cell(r, k) for k in WORK)].append(r)
    print("\nsame work, two releases or two GPUs: step time of the second over the first "
          "(cells that differ besides the release or GPU)")
    print(f"{'first':44s} {'second':44s} measured predicted")
    seen = set()
    for group in by_work.values():
        for a in group:
            for b in group:
                release_pair = a["gpu"] == b["gpu"] and a["framework_version"] < b["framework_version"]
                gpu_pair = (a["framework"], a["framework_version"]) == \
                    (b["framework"], b["framework_version"]) and a["gpu"] < b["gpu"]
                if not (release_pair or gpu_pair) or (a["id"], b["id"]) in seen:
                    continue
                seen.add((a["id"], b["id"]))
                ra, rb = predict_training_row(dict(a)), predict_training_row(dict(b))
                differ = [f"{k} {_cell(a, k, '-')}/{_cell(b, k, '-')}" for k in SETTINGS
                          if _cell(a, k) != _cell(b, k)]
                print(f"{a['id'][:44]:44s} {b['id'][:44]:44s} "
                      f"x{rb.measured / ra.measured:6.3f}   x{rb.predicted / ra.predicted:6.3f}  "
                      + "; ".join(differ))


def cta_case(rate: float) -> None:
    """The MLPerf v5.x rows with CP, their CP sends on one channel of ``rate`` B/s (a fresh
    process: priced collectives are kept per config)."""
    comm_time = pricing.Pricer._comm_time

    def capped(self: pricing.Pricer, op) -> float:
        t = comm_time(self, op)
        train = self.cfg.training
        if op.kind == "send_recv" and op.group == "cp" and train.framework == "mlperf-nemo" \
                and str(train.framework_version) >= "5.0":
            t = max(t, op.bytes / rate)
        return t

    pricing.Pricer._comm_time = capped
    sel = [(n, r) for n, r in cta_rows()]
    err = predicted(sel)
    print(f"{rate / 1e9:5.0f} GB/s " + " ".join(f"{err[r['id']]:+6.1f}" for _, r in sel),
          flush=True)


def cta_rows() -> list[tuple[str, dict[str, str]]]:
    with FILES["mlperf5"].open(newline="") as fh:
        return [("mlperf5", r) for r in csv.DictReader(fh)
                if r["framework_version"] >= "5.0" and _cell(r, "cp", "1") != "1"]


def show_cta() -> None:
    sel = cta_rows()
    print("\nMLPerf v5.x rows with CP: signed error % with the CP sends on one NCCL channel")
    for i, (_, r) in enumerate(sel):
        print(f"  [{i:2d}] {r['id']}")
    base = predicted(sel)
    print("   shipped " + " ".join(f"{base[r['id']]:+6.1f}" for _, r in sel), flush=True)
    for rate in CTA_RATES:
        subprocess.run([sys.executable, __file__, "cta-case", str(rate)], check=True)


SCALES = [("as shipped", {}), ("GEMMs x1.1", {"gemm": 1.1}),
          ("attention x1.3", {"attention": 1.3}), ("memory-bound x1.5", {"memory": 1.5}),
          ("+3 us a kernel", {"per_kernel_s": 3e-6})]


def scale_case(index: int) -> None:
    """Part 1's rows with one Blackwell category scaled (a fresh process: prices are cached)."""
    label, change = SCALES[index]
    time = roofline.RooflineModel._time

    def scaled(self: roofline.RooflineModel, op) -> float:
        t = time(self, op)
        if (self.gpu.compute_capability or 0) < 100:
            return t
        key = "gemm" if isinstance(op, Gemm) else "attention" if isinstance(op, Attention) \
            else "memory"
        kernels = op.kernels if isinstance(op, Elementwise) else 1
        return t * change.get(key, 1.0) + change.get("per_kernel_s", 0.0) * kernels

    roofline.RooflineModel._time = scaled
    sel = rows()
    err = predicted(sel)
    es = list(err.values())
    worst = sorted(err.items(), key=lambda kv: -abs(kv[1]))[:3]
    print(f"{label:18s} MAPE {sum(map(abs, es)) / len(es):5.2f} %, signed {sum(es) / len(es):+6.2f}; "
          + ", ".join(f"{rid} {e:+.1f}" for rid, e in worst), flush=True)


def show_scale() -> None:
    print(f"\nBlackwell rows ({len(rows())}) with one category scaled on Blackwell only")
    for i in range(len(SCALES)):
        subprocess.run([sys.executable, __file__, "scale-case", str(i)], check=True)


if __name__ == "__main__":
    part = sys.argv[1] if len(sys.argv) > 1 else "all"
    if part == "cta-case":
        cta_case(float(sys.argv[2]))
        raise SystemExit(0)
    if part == "scale-case":
        scale_case(int(sys.argv[2]))
        raise SystemExit(0)
    selection = rows()
    if part in ("all", "rows"):
        show_rows(selection, predicted(selection))
    if part in ("all", "pairs"):
        show_pairs(selection)
    if part in ("all", "cta"):
        show_cta()
    if part in ("all", "scale"):
        show_scale()
