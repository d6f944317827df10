"""A Grace host CPU as hardware data, tried on every Grace-hosted training row; the sliding-window
attention price against cuDNN's measured ratios (issue 17 item 2, 35th session; a diagnostic:
nothing here feeds trainsim).

    PYTHONPATH=src python benchmarks/blackwell_host.py           # ~2 min on 2 cores
    PYTHONPATH=src python benchmarks/blackwell_host.py swa       # the attention part alone (~2 s)
    PYTHONPATH=src python benchmarks/blackwell_host.py b200      # the x86 B200 rows' what-if
    PYTHONPATH=src python benchmarks/blackwell_host.py grace 1,1.07,2.75   # other factors

1. ``grace``: every GB200 / GB300 row (Grace host) of the public file, the held-out file and the
   check files, priced with *every* host CPU constant of ``trainsim.compute.host`` (the fitted
   ``HOST_S_PER_KERNEL`` and the measured C++ / Python / engine / schedule-node / hook costs)
   multiplied by one factor ``F`` on Grace: a host whose single thread is F times slower, as
   hardware data would make it (``F = 1``: the shipped model). The published figure for F is
   NVIDIA/TransformerEngine#2053 (2025-08-11): a bf16 ``torch.nn.Linear`` forward's CPU time
   37.08 us on GB200, 33.17 us on GH200, 13.48 us on an H100 DGX (Xeon Platinum 8480C), so
   ``GRACE_TORCH_RATIO`` = 2.75 (GH200 2.46); NeMo's CUDA-graph guide names the same cause
   ("systems with weak single-threaded CPU performance", GH200 +11.4 %). The two public
   Megatron-Bridge 26.04 GB200 MoE rows are also priced as their recipes ran them
   (``RECIPE``: TE CUDA graphs over attn, moe_router, moe_preprocess, cited per row), since
   the file's rows state no graph cells and the host cost of an eager layer is not what ran.
   Printed: each row's signed error per F, the F at which it would meet its measurement
   (``implied``, linear between grid points), MAPE per group, and F refitted with each
   framework left out (the other frameworks' Grace rows choose F; the left-out one is scored).
2. ``b200``: the public B200 rows (x86 host) with the same factor on their host, as a what-if:
   the factor each row would need for host time to close it.
3. ``swa``: cuDNN's sliding-window backward against its causal backward as trainsim prices
   them, beside the ratios NVIDIA/cudnn-frontend PR #505 (2026-08-07) measured for cuDNN's
   backend on SM120 (``CUDNN_SWA_BWD_US``). A window priced too cheaply would make
   gpt-oss-120b (every second layer windowed at 128) too fast.
"""

from __future__ import annotations

import csv
import itertools
import math
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from trainsim import pricing
from trainsim.compute import host

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[1] / "shared" / "validation" / "training_public.csv"
PUBLIC = SHARED if SHARED.exists() else (
    HERE.parent / "src" / "trainsim" / "data" / "validation" / "training_public.csv")
GRACE_GPUS = ("gb200", "gb300")
GRID = (1.0, 1.25, 1.5, 2.0, 2.75)

GRACE_TORCH_RATIO = 37.08 / 13.48
"""A bf16 ``torch.nn.Linear`` forward's CPU time on GB200 over an H100 DGX's (Xeon 8480C),
hidden 2048, 8192 tokens: NVIDIA/TransformerEngine#2053 (Marks101, 2025-08-11), table 1."""
GH200_TORCH_RATIO = 33.17 / 13.48
"""The same on GH200 (#2053)."""

SCALED = tuple(n for n in ("CPP_LAUNCH_S", "PY_LAUNCH_S", "PY_VIEW_S", "ENGINE_CALL_S",
                           "NODE_PASS_S", "DDP_HOOK_S", "DUMMY_WGRAD_S", "CPP_ALLOC_S",
                           "CPP_VIEW_S") if hasattr(host, n))
"""The measured host constants ``compute.host.exposed_s`` reads at call time (besides the
per-kernel cost it is passed): scaled with it. The last two exist only with
``candidates/host52_expert_allocs.patch`` applied (52nd session)."""

_BR = ("NVIDIA-NeMo/Megatron-Bridge v0.4.2 (26.04) scripts/performance/configs/")
RECIPE = {
    "bridge2604p1-qwen3-235b-a22b-gb200-256": (
        {"options": "dp_overlap;pp_overlap;cuda_graphs",
         "cuda_graph_scope": "attn;moe_router;moe_preprocess", "moe_dispatcher": "hybridep"},
        _BR + "qwen/qwen3_workload_base_configs.py QWEN3_235B_A22B_PRETRAIN_CONFIG_GB200_FP8_MX_V2"
        " <- FP8_CS_V2 <- FP8_CS_V1 (L96-105): hybridep, cuda_graph_impl transformer_engine, "
        "cuda_graph_scope [attn, moe_router, moe_preprocess]"),
    "bridge2604p1-deepseek-v3-gb200-256": (
        {"options": "dp_overlap;pp_overlap;cuda_graphs",
         "cuda_graph_scope": "attn;moe_router;moe_preprocess", "moe_dispatcher": "hybridep",
         "pipeline_layout": "Et*4|(t*4|)*14tmL", "recompute": "selective",
         "recompute_modules": "mlp"},
        _BR + "deepseek/deepseek_workload_base_configs.py DEEPSEEK_V3_PRETRAIN_CONFIG_GB200_V2 <- "
        "GB200_V1 (L72-84): hybridep, recompute_modules [mlp], cuda_graph_impl transformer_engine, "
        "cuda_graph_scope [attn, moe_router, moe_preprocess]; layout as training_errata.csv"),
}
"""The public 26.04 GB200 MoE rows as their recipes ran them: (cells, source)."""

CUDNN_SWA_BWD_US = {  # (seq, window): cuDNN backend column, B1 H16 D64 causal, bf16, SM120
    (4096, None): 558.2, (4096, 512): 171.0, (4096, 1024): 276.6,
    (16384, None): 6447.7, (16384, 512): 791.8, (16384, 1024): 1169.2,
}
"""NVIDIA/cudnn-frontend PR #505 (Adnios, 2026-08-07) "bwd+swa summary", cuDNN column (us
medians; the PR's W511 / W1023 are windows of 512 / 1024 keys counting the query's own)."""

_F = 1.0
_ON: tuple[str, ...] = GRACE_GPUS
"""The GPUs whose host the factor slows (``b200`` part: the DGX B200's x86 host, as a what-if)."""
_BASE = {n: getattr(host, n) for n in SCALED}
_exposed = host.exposed_s
_init = pricing.Pricer.__init__


def _scaled_exposed(ops, gpu_s, per_kernel_s, *args, **kw):  # type: ignore[no-untyped-def]
    """``host.exposed_s`` with the measured constants scaled as the per-kernel cost is."""
    r = per_kernel_s / host.HOST_S_PER_KERNEL if per_kernel_s > 0.0 else 1.0
    for n in SCALED:
        setattr(host, n, _BASE[n] * r)
    try:
        return _exposed(ops, gpu_s, per_kernel_s, *args, **kw)
    finally:
        for n in SCALED:
            setattr(host, n, _BASE[n])


def _grace_init(self, cfg, *args, **kw):  # type: ignore[no-untyped-def]
    """``Pricer.__init__`` with the per-kernel cost scaled on Grace before the pricer keys its
    shared prices by it (``Pricer._sig``)."""
    kept = host.HOST_S_PER_KERNEL
    if cfg.cluster.gpu.name in _ON:
        host.HOST_S_PER_KERNEL = kept * _F
    try:
        _init(self, cfg, *args, **kw)
    finally:
        host.HOST_S_PER_KERNEL = kept


def grace_factor(f: float, gpus: tuple[str, ...] = GRACE_GPUS) -> None:
    """Price the hosts of ``gpus`` (Grace: GB200, GB300) with every host constant ``f`` times
    the shipped one (1: off)."""
    global _F, _ON
    _F, _ON = f, gpus
    host.exposed_s = _scaled_exposed if f != 1.0 else _exposed
    pricing.Pricer.__init__ = _grace_init if f != 1.0 else _init


def _err(job: tuple[float, dict[str, str]] | tuple[float, dict[str, str], tuple[str, ...]]
         ) -> float:
    """The row's signed error with the factor on the hosts of the job's GPUs (Grace's)."""
    from trainsim.validate.training import predict_training_row

    f, row, *on = job
    grace_factor(f, on[0] if on else GRACE_GPUS)
    try:
        r = predict_training_row(row)
    finally:
        grace_factor(1.0)
    return r.predicted / r.measured - 1.0 if r.predicted else float("nan")


def grace_rows() -> list[tuple[str, dict[str, str]]]:
    """(group, row) of every Grace-hosted row with a measured time, then the recipe variants."""
    files = [PUBLIC, HERE / "training_heldout.csv"] + [
        p for p in sorted(HERE.glob("training_*.csv"))
        if p.stem not in ("training_heldout", "training_errata")]
    out = []
    for p in files:
        with p.open(newline="") as fh:
            for r in csv.DictReader(fh):
                if r.get("gpu", "").lower() in GRACE_GPUS and r.get("measured_iteration_s"):
                    out.append((p.stem.removeprefix("training_"), r))
    for group, r in list(out):
        if r["id"] in RECIPE:
            out.append(("public, recipe", {**r, **RECIPE[r["id"]][0], "id": r["id"] + "+recipe"}))
    return out


def implied(errs: dict[float, float]) -> float | None:
    """The factor at which the error crosses zero, linear between grid points; None where it
    does not cross inside the grid."""
    pts = sorted(errs.items())
    for (f0, e0), (f1, e1) in itertools.pairwise(pts):
        if e0 == 0.0:
            return f0
        if e0 < 0.0 <= e1 or e0 > 0.0 >= e1:
            return f0 + (f1 - f0) * e0 / (e0 - e1)
    return None


def mape(errs: list[float]) -> float:
    ok = [abs(e) for e in errs if not math.isnan(e)]
    return 100.0 * sum(ok) / len(ok) if ok else float("nan")


def leave_one_out(rows: list[tuple[str, str, dict[float, float]]]) -> list[tuple[str, int, float,
                                                                                   float, float]]:
    """(framework, rows, F refitted on the other frameworks' rows, its MAPE, the MAPE at F 1)
    over (framework, id, errors by F) rows."""
    out = []
    for fw in sorted({f for f, _, _ in rows}):
        rest = [e for f, _, e in rows if f != fw]
        mine = [e for f, _, e in rows if f == fw]
        refit = min(GRID, key=lambda g: (round(mape([e[g] for e in rest]), 6), g)) if rest \
            else 1.0
        out.append((fw, len(mine), refit, mape([e[refit] for e in mine]),
                    mape([e[1.0] for e in mine])))
    return out


def grace_table(workers: int = 2) -> dict[str, dict[float, float]]:
    rows = grace_rows()
    jobs = [(f, r) for f in GRID for _, r in rows]
    with ProcessPoolExecutor(workers) as ex:
        res = list(ex.map(_err, jobs, chunksize=4))
    errs: dict[str, dict[float, float]] = {}
    for (f, r), e in zip(jobs, res):
        errs.setdefault(r["id"], {})[f] = e
    print(f"Grace / x86 host CPU time per op, TE#2053 torch Linear fwd: GB200 "
          f"{GRACE_TORCH_RATIO:.2f}x, GH200 {GH200_TORCH_RATIO:.2f}x\n")
    print("| group | row | framework | " + " | ".join(f"F {f:g}" for f in GRID) +
          " | implied F |\n|---|---|---|" + "---|" * (len(GRID) + 1))
    for group, r in rows:
        e = errs[r["id"]]
        imp = implied(e)
        print(f"| {group} | {r['id']} | {r['framework']} | " +
              " | ".join(f"{100 * e[f]:+.1f}" for f in GRID) +
              f" | {'-' if imp is None else f'{imp:.2f}'} |")
    groups: dict[str, list[str]] = {}
    for group, r in rows:
        groups.setdefault(group, []).append(r["id"])
    print("\n| group (rows) | " + " | ".join(f"F {f:g}" for f in GRID) +
          " |\n|---|" + "---|" * len(GRID))
    for group, ids in groups.items():
        print(f"| {group} ({len(ids)}) | " +
              " | ".join(f"{mape([errs[i][f] for i in ids]):.1f}" for f in GRID) + " |")
    for label, swap in (("as written", False), ("public MoE rows as their recipes ran", True)):
        keep = [(r["framework"], r["id"], errs[r["id"]]) for g, r in rows
                if g != "public, recipe" and not (swap and r["id"] in RECIPE)]
        if swap:
            keep += [(r["framework"], r["id"], errs[r["id"]]) for g, r in rows
                     if g == "public, recipe"]
        print(f"\nLeave one framework out over every Grace row ({label}):\n\n"
              "| framework left out | rows | refit F | MAPE at refit | MAPE at F 1 |\n"
              "|---|---|---|---|---|")
        for fw, n, refit, m, m1 in leave_one_out(keep):
            print(f"| {fw} | {n} | {refit:g} | {m:.1f} | {m1:.1f} |")
    return errs


def b200_table(workers: int = 2) -> None:
    """The public file's B200 rows (a DGX B200's host: 2 x Xeon 8570, 2.1 / 4.0 GHz, the DGX
    B200 user guide; a DGX H100's 8480C runs 2.0 / 3.8 GHz) with the factor on their host: the
    per-launch cost each would need, as a what-if (their host is no slower than the H100
    rows' that set ``HOST_S_PER_KERNEL``)."""
    with PUBLIC.open(newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["gpu"] == "b200-sxm-180gb"]
    grid = GRID + (4.0,)
    jobs = [(f, r, ("b200-sxm-180gb",)) for f in grid for r in rows]
    with ProcessPoolExecutor(workers) as ex:
        res = list(ex.map(_err, jobs, chunksize=2))
    errs: dict[str, dict[float, float]] = {}
    for (f, r, _), e in zip(jobs, res):
        errs.setdefault(r["id"], {})[f] = e
    print("\nB200 public rows, the factor on their x86 host (what-if):\n\n| row | " +
          " | ".join(f"F {f:g}" for f in grid) + " | implied F |\n|---|" + "---|" * (len(grid) + 1))
    for r in rows:
        e = errs[r["id"]]
        imp = implied(e)
        print(f"| {r['id']} | " + " | ".join(f"{100 * e[f]:+.1f}" for f in grid) +
              f" | {'-' if imp is None else f'{imp:.2f}'} |")


def swa_ratios() -> list[tuple[int, int, float, float]]:
    """(seq, window, trainsim's window / causal backward on B200, cuDNN's measured on SM120)."""
    from trainsim.catalog import gpu as catalog_gpu
    from trainsim.compute import compute_model_for
    from trainsim.workload.ops import Attention

    model = compute_model_for(catalog_gpu("b200-sxm-180gb"), "auto", catalog_gpu)

    def t(seq: int, window: int | None) -> float:
        return model.time(Attention("swa", 1, 16, 16, seq, seq, 64, True, window, True, "cudnn"))

    out = []
    for (seq, window), us in CUDNN_SWA_BWD_US.items():
        if window is not None:
            out.append((seq, window, t(seq, window) / t(seq, None),
                        us / CUDNN_SWA_BWD_US[(seq, None)]))
    return out


def swa_table() -> None:
    print("\ncuDNN sliding-window backward over causal backward, B1 H16 D64:\n\n"
          "| seq | window | trainsim (B200) | cuDNN measured (SM120, cudnn-frontend#505) |\n"
          "|---|---|---|---|")
    for seq, window, ours, theirs in swa_ratios():
        print(f"| {seq} | {window} | {ours:.3f} | {theirs:.3f} |")


def main(argv: list[str]) -> int:
    global GRID
    if argv[1:] and argv[0] == "grace":  # grace 1,1.07,2.75: the factors tried (1 first)
        GRID = tuple(float(f) for f in argv[1].split(","))
    if not argv or argv[0] == "grace":
        grace_table()
    if not argv or argv[0] == "b200":
        b200_table()
    if not argv or argv[0] == "swa":
        swa_table()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
