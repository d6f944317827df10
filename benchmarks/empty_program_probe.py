"""One short GPU check for a session lent a GPU: what an early-exiting program of a Triton grouped
GEMM costs (the 35th session's lead for VeOmni #460's Triton MoE rows, ``veomni_grid.py``).

    python benchmarks/empty_program_probe.py --dry-run                # the plan; no GPU needed
    python benchmarks/empty_program_probe.py --out $OUT --budget-s 240  # the run tool, timeout 360

Written without a GPU (35th session, grouped35); run once on one H200 (36th session, device
tool): ``benchmarks/h200_2026-11-27/empty_program_probe.json``, read back and checked by
``empty_program_check.py``, priced as ``compute.grouped.EMPTY_PROGRAM_SM_S``.

The kernel is written here, after the structure of VeOmni's ``group_gemm_same_nk`` (bfe4b650):
a grid of ``cdiv(max_m, BM) * (N / BN)`` programs on axis 0 and one group per program on axis 1;
each program loads its group's row range from an offsets array and returns at once when its row
block lies past the group's rows, else it computes one output tile (``tl.dot`` over K in BK
steps). Its tile and launch settings are VeOmni's ``pretuned`` fallback (BM = BN = 128, BK = 32,
4 warps, 3 stages), so its registers and shared memory, and hence the programs an SM holds at
once, are those of the kernel the rows timed.

Plan (``plan()``): (1) every group empty, grids of 0.05 to 21 M programs: the least-squares slope
of time over programs is the cost of one empty program (s, GPU-wide; times the SM count it is the
time one SM spends a program); (2) the two VeOmni shapes' three GEMMs with their routed rows spread
evenly over the experts, once over VeOmni's grid (``max_m`` = every routed row) and once over a
grid of the real row blocks only: the difference over the empty programs is the same cost in
place. Writes ``empty_program_probe.json``. ``veomni_grid.py`` says which costs take the held-out
MoE-block cell under 15 % (0.33-0.92 ns GPU-wide with the shipped model).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

BM, BN, BK, WARPS, STAGES = 128, 128, 32, 4, 3
EMPTY_SWEEP = (  # groups, max_m, N: every group empty
    (128, 8192, 768), (128, 65536, 768), (128, 262144, 768), (128, 262144, 2048),
    (512, 327680, 512), (512, 327680, 2048))
VEOMNI = (  # tokens, top_k, hidden, ffn, experts: kernels_published.csv's two Triton rows
    (32768, 8, 2048, 768, 128), (32768, 10, 2048, 512, 512))


def programs(groups: int, max_m: int, n: int) -> int:
    return math.ceil(max_m / BM) * math.ceil(n / BN) * groups


def plan() -> list[dict]:
    """Every launch the probe times, with its program count (no GPU needed)."""
    out = [{"part": "empty", "groups": g, "max_m": m, "n": n, "k": 2048,
            "programs": programs(g, m, n)} for g, m, n in EMPTY_SWEEP]
    for tokens, top_k, hidden, ffn, experts in VEOMNI:
        routed = tokens * top_k
        per = math.ceil(routed / experts)
        for n, k in ((ffn, hidden), (ffn, hidden), (hidden, ffn)):
            for grid, max_m in (("veomni", routed), ("real", per)):
                out.append({"part": f"veomni-{experts}e-{grid}", "groups": experts,
                            "max_m": max_m, "rows": routed, "n": n, "k": k,
                            "programs": programs(experts, max_m, n)})
    return out


def _kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def grouped_tile(a, b, c, offsets, max_m, N: tl.constexpr, K: tl.constexpr,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
        pid = tl.program_id(0)
        g = tl.program_id(1)
        m = pid // (N // BLOCK_N)
        n = pid % (N // BLOCK_N)
        first = tl.load(offsets + g)
        rows = tl.load(offsets + g + 1) - first
        if m * BLOCK_M >= rows:
            return
        rm = m * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = n * BLOCK_N + tl.arange(0, BLOCK_N)
        rk = tl.arange(0, BLOCK_K)
        a_ptr = a + (first + rm)[:, None].to(tl.int64) * K + rk[None, :]
        b_ptr = b + g.to(tl.int64) * N * K + rn[None, :] * K + rk[:, None]
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for _ in range(K // BLOCK_K):
            x = tl.load(a_ptr, mask=rm[:, None] < rows, other=0.0)
            w = tl.load(b_ptr)
            acc = tl.dot(x, w, acc)
            a_ptr += BLOCK_K
            b_ptr += BLOCK_K
        c_ptr = c + (first + rm)[:, None].to(tl.int64) * N + rn[None, :]
        tl.store(c_ptr, acc.to(c.dtype.element_ty), mask=rm[:, None] < rows)

    return grouped_tile


def _time(fn, reps: int = 10) -> float:
    import torch

    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e-3)
    return statistics.median(times)


def run(out: Path, budget_s: float) -> dict:
    import torch

    kernel = _kernel()
    dev = torch.device("cuda")
    t0 = time.monotonic()
    result: dict = {"device": torch.cuda.get_device_name(),
                    "sms": torch.cuda.get_device_properties(dev).multi_processor_count,
                    "config": {"BM": BM, "BN": BN, "BK": BK, "warps": WARPS, "stages": STAGES},
                    "launches": []}
    for item in plan():
        if time.monotonic() - t0 > budget_s:
            item["skipped"] = "budget"
            result["launches"].append(item)
            continue
        g, n, k = item["groups"], item["n"], item["k"]
        rows = item.get("rows", BM)
        offsets = torch.zeros(g + 1, dtype=torch.int32, device=dev)
        if item["part"] != "empty":
            offsets = torch.linspace(0, rows, g + 1, device=dev).round().to(torch.int32)
        a = torch.randn(rows, k, dtype=torch.bfloat16, device=dev)
        b = torch.randn(g, n, k, dtype=torch.bfloat16, device=dev)
        c = torch.empty(rows, n, dtype=torch.bfloat16, device=dev)
        grid = (math.ceil(item["max_m"] / BM) * (n // BN), g)

        def launch(a=a, b=b, c=c, offsets=offsets, grid=grid, item=item, n=n, k=k):
            kernel[grid](a, b, c, offsets, item["max_m"], N=n, K=k, BLOCK_M=BM, BLOCK_N=BN,
                         BLOCK_K=BK, num_warps=WARPS, num_stages=STAGES)

        try:
            item["seconds"] = _time(launch)
        except Exception as exc:  # noqa: BLE001 - recorded, and the next launch runs
            item["error"] = f"{type(exc).__name__}: {exc}"
        result["launches"].append(item)
        del a, b, c
        torch.cuda.empty_cache()
    empty = [(x["programs"], x["seconds"]) for x in result["launches"]
             if x["part"] == "empty" and "seconds" in x]
    if len(empty) >= 2:
        mx = statistics.fmean(p for p, _ in empty)
        my = statistics.fmean(t for _, t in empty)
        slope = (sum((p - mx) * (t - my) for p, t in empty)
                 / sum((p - mx) ** 2 for p, _ in empty))
        result["empty_program_s"] = slope
        result["empty_program_s_per_sm"] = slope * result["sms"]
    out.mkdir(parents=True, exist_ok=True)
    (out / "empty_program_probe.json").write_text(json.dumps(result, indent=1))
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dry-run", action="store_true", help="print the plan; no GPU")
    ap.add_argument("--out", type=Path, default=Path("."))
    ap.add_argument("--budget-s", type=float, default=240.0)
    args = ap.parse_args(argv)
    if args.dry_run:
        for item in plan():
            print(json.dumps(item))
        return 0
    res = run(args.out, args.budget_s)
    print(json.dumps({k: v for k, v in res.items() if k != "launches"}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
