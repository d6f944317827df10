"""Issue 17 item 1, 45th session: what holds the MI300X (9.76 %) and A100 (7.41 %) dense GEMM cells
of kernels_published.csv above 7 %, and which of the brief's mechanisms could move them.

    PYTHONPATH=src python benchmarks/gemm45_mi300x_a100.py                      # ~1 min, 2 cores
    PYTHONPATH=src python benchmarks/gemm45_mi300x_a100.py --vidur DIR          # + vidur's A100 profile

Diagnostic only: nothing in trainsim reads it and no constant is fitted. Sections:

1. *MI300X rows*: the cell is two rows, both the winners of Bekman's shape search, so the validator
   prices each as the model's best over the finder's grid (``validate.best_shape``). What each row's
   statistic is (the finder version that produced it), how long one call ran at the measured rate,
   and the engine clock each rate implies at AMD's own MAF software efficiency (94 %: ROCm blog
   "Measuring Max-Achievable FLOPs - Part 2", 2025-02-28, footnote 2: 708 TFLOP/s at a 1207 MHz
   median clock, 751 at that clock = 1207 MHz x 304 CUs x 2048 FLOP a clock).
2. *The Infinity Cache reading* of the v1 row (kernels_errata.csv withdraws it as "ran from its
   Infinity Cache"): the power its compute dies would need, by the project's own CDNA 3 power law
   (``config.cluster.POWER_EXPONENT``, fitted on AMD's MI300X 750 W / MI325X 1000 W MAF), for the v1
   rate over the v2 one, against what an HBM busy for the cold call's operand traffic could free.
3. *Per-XCD wave quantization*: hipBLASLt's workgroups go round-robin over MI300X's 8 XCDs of 38
   CUs; ceil(ceil(T / 8) / 38) = ceil(T / 304) for every tile count T, so whole-wave counts are the
   ones the model already takes over 304 CUs.
4. *Variants*, each the shipped model with one reading changed, scored per GPU as ``trainsim
   validate`` scores the file (``gemm_hypotheses.cells``): the v1 rows read as the fastest of 100
   timed iterations (at the burst clock, the highest the loop can reach); A100 / CDNA 3 tile menus.
5. ``--vidur DIR``: vidur's whole A100 profile (microsoft/vidur@7d47513, as gemm44) around 1,000
   tokens: the per-token time of each GEMM op step by step, where cuBLAS changes kernel.
"""

from __future__ import annotations

import argparse
import csv
import math
import re
import statistics
import sys
from pathlib import Path

import gemm_hypotheses as gh

from trainsim.catalog import gpu as catalog_gpu
from trainsim.compute import roofline
from trainsim.config.cluster import POWER_EXPONENT
from trainsim.validate import kernels as vk
from trainsim.validate import validate_file

AMD_MAF_EFFICIENCY = 0.94
"""Software efficiency of AMD's own bf16 MAF kernel: 708 of the 751 TFLOP/s its 1207 MHz median
clock allows (ROCm blog, Max-Achievable FLOPs Part 2, footnote 2). A quoted figure, used only to
turn each row's rate into the clock it implies."""
AMD_MAF = {"mi300x": (708.0, 1207.0), "mi325x": (843.0, 1447.0)}
"""bf16 MAF TFLOP/s and median engine clock (MHz), the same blog's Table 1: hipblaslt-bench at
4096 x 4864 x 32896, ``--rotating 512`` (cold operands every call), 431 timed iterations after 87
cold ones, about a second of GEMMs (a sustained, power-limited figure by its method)."""
BEKMAN_V2 = {"mi300x": 668.4, "mi325x": 784.9}
"""The v2 MAMF table's bf16 rows (stas00/ml-engineering compute/accelerator/README.md @744d01e)."""
STATISTIC = {
    "mamf-mi300x-bf16-v2": "mean of 100 after 50 warm-up, 256 MB flush + C reset before each call "
                           "(mamf-finder.py v2)",
    "mamf-mi300x-bf16-v1": "fastest single call of 100 after 50 warm-up, no flush (mamf-finder.py "
                           "@2fefa8e L193 `np.amin(times)  # want the fastest`)",
}
"""What each MI300X row's number is. The v1 value was 731.0 (4352x14336x3840), then 758.3
(4352x13568x3840) in Aug 2024 (ml-engineering 249778b), then 781.9 (4096x10240x4864 MxKxN) in
8deeddd (2024-10-11, "rocm is slowly improving"), all ROCm 6.2; the finder then was 2fefa8e
(2024-08-12) and its README said "fastest result is picked (not the average)"."""
V1_SOURCE = re.compile(r"'v1' table")
"""The v1 rows' source cell in kernels_published.csv (A100, H100, MI300X)."""
XCDS, CUS_PER_XCD = 8, 38
"""MI300X: 304 CUs in 8 XCDs of 38 (AMD CDNA 3 white paper; ``mi300x.yaml`` num_sms 304)."""


def results_by_id(path: Path = gh.PUBLISHED) -> dict[str, object]:
    vk._model.cache_clear()
    _, results = validate_file(path)
    return {r.id: r for r in results}


def mi300x_rows(results: dict[str, object]) -> list[dict[str, object]]:
    """Each MI300X GEMM row: measured, predicted, the call's duration at the measured rate and the
    clock the measured rate implies at ``AMD_MAF_EFFICIENCY``."""
    gpu = catalog_gpu("mi300x")
    per_clock = gpu.num_sms * 2048  # CDNA 3 bf16 FLOP per CU per clock (1307.4 TFLOP/s / 2.1 GHz)
    rows = []
    for rid, res in results.items():
        if res.extra.get("gpu") != "mi300x" or res.extra.get("kind") != "gemm":
            continue
        row = gh_row(rid)
        m, n, k = (int(row[c]) for c in ("m", "n", "k"))
        rows.append({"id": rid, "shape": f"{m}x{n}x{k}", "measured": res.measured,
                     "predicted": res.predicted, "ape": res.ape,
                     "call_ms": 2 * m * n * k / (res.measured * 1e12) * 1e3,
                     "clock_mhz": res.measured * 1e12 / AMD_MAF_EFFICIENCY / per_clock / 1e6,
                     "statistic": STATISTIC.get(rid, "?"), "m": m, "n": n, "k": k})
    return sorted(rows, key=lambda r: r["id"], reverse=True)


_ROWS: dict[str, dict[str, str]] = {}


def gh_row(rid: str) -> dict[str, str]:
    if not _ROWS:
        with open(gh.PUBLISHED, newline="") as fh:
            _ROWS.update({r["id"]: r for r in csv.DictReader(fh)})
    return _ROWS[rid]


def cache_power_bound(m: int, n: int, k: int, rate: float, base_rate: float) -> dict[str, float]:
    """What the cache-resident reading of a ``rate`` over ``base_rate`` (TFLOP/s) asks of power.
    A cold call reads A and B and writes C once through the HBM (2 bytes an element; re-reads of
    A and B by other tiles hit the 256 MB Infinity Cache either way), busy for ``bytes / (0.85 x
    HBM)`` of the call; a hot one skips that. By rate ~ P^a (``POWER_EXPONENT``) the compute dies
    need ``P x ((rate / base)^(1/a) - 1)`` more watts; divided by the HBM's busy share that is
    what the HBM would have to draw while busy for its idling to free them."""
    gpu = catalog_gpu("mi300x")
    moved = 2.0 * (m * k + k * n + m * n)
    call_s = 2.0 * m * n * k / (rate * 1e12)
    busy = moved / (gpu.hbm_bw_Bps * roofline.HBM_EFFICIENCY) / call_s
    need_w = gpu.tdp_w * ((rate / base_rate) ** (1.0 / POWER_EXPONENT) - 1.0)
    return {"bytes_mb": moved / 1e6, "call_ms": call_s * 1e3, "hbm_busy": busy,
            "watts_needed": need_w, "hbm_watts_while_busy": need_w / busy,
            "board_w": gpu.tdp_w}


def xcd_waves(tiles: int, xcds: int = XCDS, per_xcd: int = CUS_PER_XCD) -> int:
    """Waves of ``tiles`` dealt round-robin over ``xcds`` XCDs of ``per_xcd`` CUs: the busiest
    XCD's tiles over its CUs."""
    return math.ceil(math.ceil(tiles / xcds) / per_xcd)


def xcd_identity(limit: int = 100_000) -> int:
    """Tile counts up to ``limit`` where the per-XCD wave count differs from ceil(T / 304)."""
    return sum(xcd_waves(t) != math.ceil(t / (XCDS * CUS_PER_XCD)) for t in range(1, limit + 1))


def fastest_iteration() -> gh.contextlib.AbstractContextManager[None]:
    """The v1 rows priced at the burst clock: a fastest single call is the one that ran at the
    highest clock the loop reached, at most the burst one (``validate.kernels.BURST``)."""
    return gh.patched(vk, BURST=re.compile(vk.BURST.pattern + "|" + V1_SOURCE.pattern))


def tiles_for(pick, tiles: tuple[tuple[int, int, float], ...]):
    shipped = roofline.gemm_tiles

    def gemm_tiles(gpu):
        return tiles if pick(gpu) else shipped(gpu)
    return gh.patched(roofline, gemm_tiles=gemm_tiles)


VARIANTS = {
    "shipped": gh.contextlib.ExitStack,
    "v1 rows read as the fastest of 100 calls (burst clock)": fastest_iteration,
    "Ampere: 128x256 tiles only (cuBLAS's big Ampere tile)": lambda: tiles_for(
        lambda g: g.sm_arch == 80, ((128, 256, 1.0),)),
    "Ampere: best of 128x128 / 128x256 / 256x128": lambda: tiles_for(
        lambda g: g.sm_arch == 80, ((128, 128, 1.0), (128, 256, 1.0), (256, 128, 1.0))),
    "CDNA 3: 256x256 tiles only (hipBLASLt's largest macro tile)": lambda: tiles_for(
        lambda g: g.name == "mi300x", ((256, 256, 1.0),)),
}


def variant_cells() -> dict[str, dict[str, float]]:
    out = {}
    for name, make in VARIANTS.items():
        with make():
            out[name] = gh.cells(gh.PUBLISHED)
    return out


def vidur_steps(vidur: Path, pairs=((960, 976), (976, 992), (992, 1000), (1000, 1008),
                                    (1008, 1016), (1016, 1024), (1024, 1040), (1536, 1568),
                                    (2016, 2048), (4064, 4096))
                ) -> list[tuple[int, int, int, float, float, int]]:
    """vidur's A100 GEMM ops (down projections left out: all-zero activations): per-token time at
    m2 over m1 for each (model, op, TP): (m1, m2, ops, median, max, ops over 1.08)."""
    import gemm44_vidur_profile as g44
    data = g44.load(vidur, "a100")
    keys = {k[:3] for k in data if k[1] != "mlp_down_proj"}
    out = []
    for m1, m2 in pairs:
        ratios = [(data[(*key, m2)][0][1] / m2) / (data[(*key, m1)][0][1] / m1)
                  for key in keys if (*key, m1) in data and (*key, m2) in data]
        if ratios:
            out.append((m1, m2, len(ratios), statistics.median(ratios), max(ratios),
                        sum(r > 1.08 for r in ratios)))
    return out


SWITCH = 1.05
"""A published vidur row runs on a kernel switch when its time per useful row exceeds its m - 32
neighbour's (the same 128-row tile grid: the same tile work) by more than this: the library picked
a slower kernel at m than at m - 32. A threshold on the data, not on the model."""
VIDUR_ID = re.compile(r"vidur-a100-(.+)-tp(\d+)-t(\d+)-(.+)$")


def a100_jumps(vidur: Path, results: dict[str, object]) -> list[tuple[str, float, float]]:
    """(row id, per-row time over its m - 32 neighbour's, the model's signed time error) of each
    published vidur A100 row, the model's worst first."""
    import gemm44_vidur_profile as g44
    data = g44.load(vidur, "a100")
    models = {k[0].split("/")[-1].lower().removesuffix("-hf"): k[0] for k in data}
    out = []
    for rid, res in results.items():
        hit = VIDUR_ID.match(rid)
        if hit is None or res.extra.get("kind") != "gemm":
            continue
        model, tp, m, op = models.get(hit.group(1)), int(hit.group(2)), int(hit.group(3)), hit.group(4)
        here, below = data.get((model, op, tp, m)), data.get((model, op, tp, m - 32))
        if here and below:
            jump = (here[0][1] / m) / (below[0][1] / (m - 32)) * m / (m - 32)
            out.append((rid, jump, res.predicted / res.measured - 1))
    return sorted(out, key=lambda x: x[2])


def a100_by_m(results: dict[str, object]) -> dict[int, tuple[int, float, float]]:
    """A100 GEMM rows by m: (rows, MAPE, mean signed time error)."""
    groups: dict[int, list[float]] = {}
    for rid, res in results.items():
        if res.extra.get("gpu") != "a100-sxm-80gb" or res.extra.get("kind") != "gemm":
            continue
        signed = res.measured / res.predicted - 1 if res.extra["unit"] == "TFLOP/s" \
            else res.predicted / res.measured - 1
        groups.setdefault(int(gh_row(rid)["m"]), []).append(signed)
    return {m: (len(v), statistics.mean(abs(x) for x in v), statistics.mean(v))
            for m, v in sorted(groups.items())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vidur", type=Path, help="a microsoft/vidur clone (work tree or bare git)")
    args = ap.parse_args(argv)
    results = results_by_id()

    print("## 1. MI300X GEMM rows (kernels_published.csv)\n")
    print("| row | shape | measured | predicted | error | one call | clock at 94 % | statistic |")
    print("|---|---|---|---|---|---|---|---|")
    rows = mi300x_rows(results)
    for r in rows:
        print(f"| {r['id']} | {r['shape']} | {r['measured']:.1f} | {r['predicted']:.1f} | "
              f"{100 * (r['predicted'] / r['measured'] - 1):+.1f} % | {r['call_ms']:.2f} ms | "
              f"{r['clock_mhz']:.0f} MHz | {r['statistic']} |")
    for g, (maf, mhz) in AMD_MAF.items():
        print(f"| AMD MAF {g} (Table 1) | 4096x4864x32896 | {maf:.1f} | | | | {mhz:.0f} MHz "
              f"(measured median) | mean of 431, cold operands; Bekman v2 = "
              f"{BEKMAN_V2[g] / maf:.3f} of it |")

    v1 = next(r for r in rows if r["id"].endswith("-v1"))
    b = cache_power_bound(v1["m"], v1["n"], v1["k"], v1["measured"], BEKMAN_V2["mi300x"])
    print("\n## 2. The v1 row as a cache-resident rate\n")
    print(f"cold call: {b['bytes_mb']:.0f} MB through the HBM in a {b['call_ms']:.3f} ms call, "
          f"the HBM busy {100 * b['hbm_busy']:.1f} % of it; {v1['measured']:.1f} over "
          f"{BEKMAN_V2['mi300x']} TFLOP/s at rate ~ P^{POWER_EXPONENT} needs "
          f"{b['watts_needed']:.0f} W more on the compute dies of a {b['board_w']:.0f} W board, "
          f"i.e. an HBM drawing {b['hbm_watts_while_busy']:.0f} W while busy.")

    print("\n## 3. Per-XCD wave quantization (8 XCDs x 38 CUs, round-robin)\n")
    print(f"tile counts 1..100,000 where ceil(ceil(T/8)/38) != ceil(T/304): {xcd_identity()}")

    print("\n## 4. Variants: dense GEMM MAPE per GPU (kernels_published.csv)\n")
    cells = variant_cells()
    gpus = sorted(g for g in cells["shipped"] if g != "all") + ["all"]
    print("| variant | " + " | ".join(gpus) + " |\n|---|" + "---|" * len(gpus))
    for name, c in cells.items():
        print(f"| {name} | " + " | ".join(f"{100 * c[g]:.2f}" for g in gpus) + " |")

    print("\n## 5. A100 rows by m (vidur's tokens)\n")
    print("| m | rows | MAPE | signed (time) |\n|---|---|---|---|")
    for m, (n, mape, signed) in a100_by_m(results).items():
        print(f"| {m} | {n} | {100 * mape:.1f} % | {100 * signed:+.1f} % |")
    if args.vidur:
        print("\n| vidur A100, per-token time m2 / m1 | ops | median | max | ops > 1.08 | "
              "same 128-row grid's ratio |\n|---|---|---|---|---|---|")
        for m1, m2, n, med, mx, over in vidur_steps(args.vidur):
            grid = math.ceil(m2 / 128) / math.ceil(m1 / 128) * m1 / m2
            print(f"| {m1} -> {m2} | {n} | {med:.3f} | {mx:.3f} | {over} | {grid:.3f} |")
        jumps = a100_jumps(args.vidur, results)
        print("\n| per-row time over the m - 32 row's | rows | MAPE | signed (time) |\n|---|---|---|---|")
        for lo, hi in ((0.0, 0.95), (0.95, 1.0), (1.0, SWITCH), (SWITCH, math.inf)):
            v = [s for _, j, s in jumps if lo < j <= hi]
            if v:
                print(f"| {lo:g} .. {hi:g} | {len(v)} | {100 * statistics.mean(abs(x) for x in v):.1f} % "
                      f"| {100 * statistics.mean(v):+.1f} % |")
        switched = [j for j in jumps if j[1] > SWITCH]
        ids = {rid for rid, _, _ in switched}
        a100 = [r for r in results.values()
                if r.extra.get("gpu") == "a100-sxm-80gb" and r.extra.get("kind") == "gemm"]
        rest = [r.ape for r in a100 if r.id not in ids]
        on = [r.ape for r in a100 if r.id in ids]
        print(f"\npublished A100 rows on a kernel switch (per-row time > {SWITCH} x the m - 32 "
              f"row's, same tile grid): {len(on)} of {len(a100)}, MAPE {100 * statistics.mean(on):.1f} %, "
              f"signed {100 * statistics.mean(s for _, _, s in switched):+.1f} %; the cell "
              f"without them {100 * statistics.mean(rest):.2f} % ({len(rest)} rows)")
        for rid, jump, signed in switched:
            print(f"- {rid}: x{jump:.3f}, model {100 * signed:+.1f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
