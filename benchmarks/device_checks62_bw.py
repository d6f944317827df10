"""The 62nd session's prepared GPU run (bw62, issue 17): do the Blackwell training rows' layer
GEMMs run at the rate trainsim prices them, once the board sits at its power limit?

    python3 benchmarks/device_checks62_bw.py --out $OUT --budget-s 150   # the run tool, timeout_s 240
    python benchmarks/device_checks62_bw.py --dry-run                    # the plan; no GPU needed

``benchmarks/bw62_parts.py`` finds that only the dense GEMMs can carry the Blackwell-only deficit
of the rows it splits (GB200 405B bf16: +7 % beyond its H100 twin; A4 B200 70B fp8 NeMo: +28 %,
MaxText: +13 %); every other part would need to be 1.4-40x slower. trainsim prices those GEMMs
by the roofline at ~0.94-0.99 of the sm100 ceiling (the MAMF fraction x ``sustained_of_burst``
0.82): 1,378-1,480 TFLOP/s bf16 on GB200, 2,520-2,810 fp8 on B200. Two sections, both read
only (no clock, power or application setting is changed):

``layer_gemms`` the rows' layer GEMM sites (405B TP 4 CP 2: m 4,096; 70B TP 2: m 8,192) as
    forward, dgrad and wgrad, bf16 (``torch.mm``) and fp8 (``torch._scaled_mm`` e4m3,
    per-tensor scales, bf16 out, fast accumulation in the forward only, as Transformer
    Engine's fprop / dgrad / wgrad ``use_split_accumulator``), each timed as one CUDA graph of
    10 calls (median of 3) with the clocks, power and temperature nvidia-smi reads before and
    after: the rate at the shapes, near the burst clock.
``heat`` the two largest sites (405B fc1 forward, 70B fc1 forward) in bf16 and fp8, timed
    first on a board that has idled 2 s, then after ``HEAT_S`` of back-to-back replays (the
    board at its power limit), clocks read at each: the sustained / burst ratio at a
    training shape (trainsim's 0.82 on B200 / GB200 is Bekman's best-shape MSMF / MAMF).

On a B200 / GB200 the rows settle the brief's question (a rate at the shapes under the
priced one by the deficit says the GEMM library of the day; on it, something else). On an
H200 the same shapes check the H200 database and its 0.85 sustained fraction (the twins'
side). Writes ``kernels.csv`` (validation/README.md's kernels format: ``trainsim validate
OUT/kernels.csv``; the hot rows' notes say MSMF, so the validator prices them at the sustained
clock) and ``device_checks62_bw.json``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from device_checks import sectioned_main
from device_checks59 import clocks

SITES = (
    ("405b-tp4-qkv", 4096, 4608, 16384), ("405b-tp4-out", 4096, 16384, 4096),
    ("405b-tp4-fc1", 4096, 26624, 16384), ("405b-tp4-fc2", 4096, 16384, 13312),
    ("70b-tp2-qkv", 8192, 5120, 8192), ("70b-tp2-out", 8192, 8192, 4096),
    ("70b-tp2-fc1", 8192, 28672, 8192), ("70b-tp2-fc2", 8192, 8192, 14336),
)
"""(site, tokens, out features, in features) of the forward GEMM of one decoder layer:
Llama 3.1 405B at TP 4 / CP 2 / micro-batch 1 (8,192 / 2 tokens a rank) and Llama 3.1 70B at
TP 2 / micro-batch 1, as ``benchmarks/bw62_parts.py`` lists them."""
HOT = ("405b-tp4-fc1", "70b-tp2-fc1")
HEAT_S = 8.0
"""Seconds of back-to-back replays before the hot timing: Bekman's MSMF loop settles the board
at its power limit in a few seconds (stas00/ml-engineering, branch fast-mamf)."""
START_S = 20
SECTIONS = {
    "layer_gemms": (60, f"{len(SITES)} sites x fwd/dgrad/wgrad x bf16/fp8, graphs of 10, clocks logged"),
    "heat": (50, f"{len(HOT)} sites x bf16/fp8 idle-board vs after {HEAT_S:.0f} s of replays"),
}


def gemm_shape(tokens: int, out_f: int, in_f: int, kind: str) -> tuple[int, int, int]:
    """(m, n, k) of C[m x n] = A[m x k] B[k x n] (validation/README.md) for one pass: fprop
    tokens x out x in, dgrad tokens x in x out, wgrad out x in x tokens."""
    return {"fwd": (tokens, out_f, in_f), "dgrad": (tokens, in_f, out_f),
            "wgrad": (out_f, in_f, tokens)}[kind]


def fast_accum(kind: str) -> bool:
    """Transformer Engine's fp8 GEMMs: fast accumulation in fprop only (module/linear.py
    ``_2X_ACC_FPROP`` False, ``_2X_ACC_DGRAD`` / ``_2X_ACC_WGRAD`` True)."""
    return kind == "fwd"


def tflops(m: int, n: int, k: int, seconds: float) -> float:
    return 2 * m * n * k / seconds / 1e12


def _operands(torch, m: int, n: int, k: int):
    a16 = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b16 = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    return a16, b16, a16.to(torch.float8_e4m3fn), b16.to(torch.float8_e4m3fn), \
        torch.ones((), device="cuda")


def _calls(torch, m, n, k, fast):
    a16, b16, a8, b8, one = _operands(torch, m, n, k)
    return {"bf16": lambda: torch.mm(a16, b16.t()),
            "fp8": lambda: torch._scaled_mm(a8, b8.t(), scale_a=one, scale_b=one,
                                            out_dtype=torch.bfloat16, use_fast_accum=fast)}


def _how(dtype: str, fast: bool) -> str:
    return "torch.mm" if dtype == "bf16" else \
        f"torch._scaled_mm e4m3, per-tensor scales, bf16 out, use_fast_accum={fast}"


def layer_gemms(torch, ctx, res):
    res.update(cases={}, failed=[])
    for site, tokens, out_f, in_f in SITES:
        for kind in ("fwd", "dgrad", "wgrad"):
            if ctx["over"]():
                res["failed"].append("budget")
                return
            m, n, k = gemm_shape(tokens, out_f, in_f, kind)
            fast, case = fast_accum(kind), f"{site}-{kind}"
            try:
                calls = _calls(torch, m, n, k, fast)
                before = clocks()
                secs = {dt: ctx["timer"].warm(fn, reps=10, graph=True) for dt, fn in calls.items()}
                after = clocks()
            except Exception as exc:  # noqa: BLE001 - the next shape runs
                res["failed"].append(f"{case}: {exc!r}"[:300])
                continue
            res["cases"][case] = {f"{dt}_tflops": round(tflops(m, n, k, s), 1) for dt, s in secs.items()}
            res["cases"][case].update(clocks_before=before, clocks_after=after)
            for dt, s in secs.items():
                ctx["add"](id=f"{ctx['tag']}-{case}-{dt}", kind="gemm", implementation="cublas",
                           dtype=dt, m=m, n=n, k=k, measured_unit="TFLOP/s",
                           measured_value=f"{tflops(m, n, k, s):.5g}",
                           note=f"layer GEMM {case} ({tokens} tokens x {out_f} out x {in_f} in); "
                                f"{_how(dt, fast)}; one CUDA graph of 10 calls between two events, "
                                f"median of 3; {s * 1e6:.1f} us; clocks (sm MHz, mem MHz, W, C) "
                                f"{before} -> {after}")


def heat(torch, ctx, res):
    res.update(cases={}, failed=[])
    for site, tokens, out_f, in_f in SITES:
        if site not in HOT:
            continue
        m, n, k = gemm_shape(tokens, out_f, in_f, "fwd")
        for dt, fn in _calls(torch, m, n, k, True).items():
            if ctx["over"]():
                res["failed"].append("budget")
                return
            case = f"{site}-fwd-{dt}"
            try:
                torch.cuda.synchronize()
                time.sleep(2.0)
                idle_clk = clocks()
                idle = ctx["timer"].warm(fn, reps=10, graph=True)
                end = time.time() + HEAT_S
                while time.time() < end:
                    for _ in range(20):
                        fn()
                    torch.cuda.synchronize()
                hot = ctx["timer"].warm(fn, reps=10, graph=True)
                hot_clk = clocks()
            except Exception as exc:  # noqa: BLE001 - the next case runs
                res["failed"].append(f"{case}: {exc!r}"[:300])
                continue
            res["cases"][case] = {"idle_tflops": round(tflops(m, n, k, idle), 1),
                                  "hot_tflops": round(tflops(m, n, k, hot), 1),
                                  "hot_over_idle": round(idle / hot, 3),
                                  "clocks_idle": idle_clk, "clocks_hot": hot_clk}
            ctx["add"](id=f"{ctx['tag']}-heat-{case}", kind="gemm", implementation="cublas",
                       dtype=dt, m=m, n=n, k=k, measured_unit="TFLOP/s",
                       measured_value=f"{tflops(m, n, k, hot):.5g}",
                       note=f"MSMF regime: {case} timed after {HEAT_S:.0f} s of back-to-back calls "
                            f"(the board at its power limit); {_how(dt, True)}; one CUDA graph "
                            f"of 10 calls, median of 3; idle-board rate "
                            f"{tflops(m, n, k, idle):.1f}; clocks {idle_clk} -> {hot_clk}")


FUNCS = {"layer_gemms": layer_gemms, "heat": heat}


def _digest(report: dict) -> dict:
    secs = report["sections"]
    return {sec: {c: {k: v for k, v in d.items() if not k.startswith("clocks")}
                  for c, d in secs.get(sec, {}).get("cases", {}).items()} for sec in FUNCS}


def main(argv: list[str] | None = None) -> int:
    return sectioned_main(__doc__, "device_checks62_bw", "dc62bw", SECTIONS, FUNCS, START_S, 150.0,
                          argv, _digest)


if __name__ == "__main__":
    sys.exit(main())
