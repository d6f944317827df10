"""The 59th session's prepared GPU run (moe58's Lead 1): is Grok-1's expert GEMM really 1.92x
faster in fp8 than in bf16 on one Hopper GPU, as trainsim prices it?

    python3 benchmarks/device_checks59.py --out $OUT --budget-s 150   # the run tool, timeout_s 240
    python benchmarks/device_checks59.py --dry-run                    # the plan; no GPU needed

trainsim prices the 8,192 x 16,384 x 6,144 expert GEMM (Grok-1, NeMo 24.09 / 24.12 on H100) in
bf16 from the bundled H100 database (interpolated, 634 TFLOP/s) and in fp8 by the roofline
(1,217): a ratio of 1.92. The one-H100 kernels csv measures neighbours at bf16 ~700 and fp8
1,204-1,239 (8,192 x 12,288 x 6,144: 1.72; 16,384 x 12,288 x 6,144: 1.77). One section:

``grok_gemm`` the shape and its two neighbours, as the forward (tokens x out x in), dgrad and
    wgrad see them, bf16 (``torch.mm``) and fp8 (``torch._scaled_mm`` e4m3, per-tensor scales,
    bf16 out; fast accumulation in the forward only, as Transformer Engine's fprop), each pair
    timed back to back in one CUDA graph of 10 calls (median of 3), with the SM / memory clocks,
    power and temperature that ``nvidia-smi`` reads before and after each pair (read only: no
    setting is changed), so a clock that drops under fp8 shows.

Writes ``kernels.csv`` (validation/README.md's kernels format: ``trainsim validate
OUT/kernels.csv``) and ``device_checks59.json``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from device_checks import sectioned_main

SHAPES = ((8192, 16384, 6144), (8192, 12288, 6144), (16384, 12288, 6144))
"""(tokens, out features, in features) of the forward GEMM: Grok-1's expert fc1 and the two
neighbours the one-H100 csv measured."""
START_S = 20
SECTIONS = {"grok_gemm": (60, f"bf16 vs fp8 at {len(SHAPES)} shapes x fwd/dgrad/wgrad, clocks logged")}


def gemm_shape(tokens: int, out_f: int, in_f: int, kind: str) -> tuple[int, int, int]:
    """(m, n, k) of C[m x n] = A[m x k] B[k x n] (validation/README.md) for one pass: fprop
    tokens x out x in, dgrad tokens x in x out, wgrad out x in x tokens."""
    return {"fwd": (tokens, out_f, in_f), "dgrad": (tokens, in_f, out_f),
            "wgrad": (out_f, in_f, tokens)}[kind]


def clocks() -> str:
    """SM and memory clocks (MHz), power (W) and temperature (C) as nvidia-smi reads them."""
    try:
        return subprocess.run(
            ["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu",
             "--format=csv,noheader,nounits"], check=False, capture_output=True, text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unread: {exc!r}"[:120]


def ratio(bf16_s: float, fp8_s: float) -> float:
    """How many times faster the fp8 GEMM runs than the bf16 one."""
    return bf16_s / fp8_s


def _mm(torch, a, b):
    return lambda: torch.mm(a, b.t())


def _scaled(torch, a, b, one, fast):
    return lambda: torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16,
                                    use_fast_accum=fast)


def grok_gemm(torch, ctx, res):
    res.update(cases={}, failed=[])
    for tokens, out_f, in_f in SHAPES:
        for kind in ("fwd", "dgrad", "wgrad"):
            if ctx["over"]():
                res["failed"].append("budget")
                return
            m, n, k = gemm_shape(tokens, out_f, in_f, kind)
            fast = kind == "fwd"
            case = f"{tokens}x{out_f}x{in_f}-{kind}"
            try:
                a16 = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
                b16 = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
                a8, b8 = a16.to(torch.float8_e4m3fn), b16.to(torch.float8_e4m3fn)
                one = torch.ones((), device="cuda")
                before = clocks()
                s16 = ctx["timer"].warm(_mm(torch, a16, b16), reps=10, graph=True)
                s8 = ctx["timer"].warm(_scaled(torch, a8, b8, one, fast), reps=10, graph=True)
                after = clocks()
            except Exception as exc:  # noqa: BLE001 - the next shape runs
                res["failed"].append(f"{case}: {exc!r}"[:300])
                continue
            res["cases"][case] = {"bf16_us": round(s16 * 1e6, 2), "fp8_us": round(s8 * 1e6, 2),
                                  "fp8_over_bf16": round(ratio(s16, s8), 3),
                                  "clocks_before": before, "clocks_after": after}
            scaled = f"torch._scaled_mm e4m3, per-tensor scales, bf16 out, use_fast_accum={fast}"
            for dtype, s, how in (("bf16", s16, "torch.mm"), ("fp8", s8, scaled)):
                ctx["add"](id=f"{ctx['tag']}-grok-{case}-{dtype}", kind="gemm",
                           implementation="cublas", dtype=dtype, m=m, n=n, k=k,
                           measured_unit="TFLOP/s", measured_value=f"{2 * m * n * k / s / 1e12:.5g}",
                           note=f"Grok-1 expert GEMM {case}; {how}; one CUDA graph of 10 calls "
                                f"between two events, median of 3; time {s * 1e6:.1f} us; clocks "
                                f"(sm MHz, mem MHz, W, C) {before} -> {after}")


FUNCS = {"grok_gemm": grok_gemm}


def _digest(report: dict) -> dict:
    cases = report["sections"].get("grok_gemm", {}).get("cases", {})
    return {"fp8_over_bf16": {c: v["fp8_over_bf16"] for c, v in cases.items()}}


def main(argv: list[str] | None = None) -> int:
    return sectioned_main(__doc__, "device_checks59", "dc59", SECTIONS, FUNCS, START_S, 150.0, argv,
                          _digest)


if __name__ == "__main__":
    sys.exit(main())
