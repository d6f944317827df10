"""The 63rd session's prepared GPU run (grouped63, issue 17 acceptance 1): is the fp8 grouped GEMM's
shortfall on one H200 its own, or every fp8 GEMM's? And what does one ``torch._grouped_mm`` call
cost besides its GEMM kernel?

    python3 benchmarks/device_checks63_grouped63.py --out $OUT --budget-s 60   # the run tool
    python benchmarks/device_checks63_grouped63.py --dry-run                   # the plan; no GPU needed

``benchmarks/grouped63_fit.py`` finds fp8 ``torch._scaled_grouped_mm`` priced ~10 % fast on the
H200 in two independent runs (54th session eager, 63rd graphed): with fast accumulation ~8-9 % of
its priced time, without it ~1.3-1.5 us a wave of output tiles; bf16 ``torch._grouped_mm`` leaves
4-5 us a call unpriced beyond its two launches. Two sections, read only (no clock, power or
application setting is changed):

``fp8_twins`` at five expert shapes (the worst and the typical priced rows), bf16
    ``torch._grouped_mm`` and fp8 ``torch._scaled_grouped_mm`` (row-wise unit scales, fast
    accumulation off and on) over equal groups, and their dense twins: every group's rows against
    one group's weight as one ``torch.mm`` / ``torch._scaled_mm`` (row-wise scales, off and on):
    the same FLOPs, one GEMM. Each a CUDA graph of 10 calls, median of 3, clocks logged. fp8 over
    bf16 for the dense pair against the grouped pair says whose shortfall it is.
``kernel_split`` two of those shapes under ``torch.profiler`` (5 eager calls each): every kernel's
    name and mean device time (the setup kernel ``prepare_grouped_gemm_data`` beside the GEMM).

Writes ``kernels.csv`` (validation/README.md's kernels format) and ``device_checks63_grouped63.json``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from device_checks import sectioned_main
from device_checks59 import clocks

EXPERT = {"qwen3-30b-a3b": (2048, 768), "deepseek-v3": (7168, 2048), "mixtral-8x7b": (4096, 14336)}
"""Model: (hidden, expert ffn), as ``device_checks54.EXPERT_SHAPES``."""
CASES = (("qwen3-30b-a3b", "fc2", 8, 512), ("qwen3-30b-a3b", "fc1", 32, 512),
         ("deepseek-v3", "fc2", 8, 512), ("deepseek-v3", "fc2", 32, 512),
         ("mixtral-8x7b", "fc1", 8, 2048))
"""(model, projection, groups, rows a group): the fp8 rows priced worst (qwen3 fc2 g8, deepseek
fc2 g8: 30-40 % fast) and typical ones (~10 %)."""
SPLIT_CASES = (CASES[0], CASES[3])
START_S = 20
SECTIONS = {"fp8_twins": (25, f"{len(CASES)} expert shapes x grouped bf16/fp8 slow/fast and dense twins"),
            "kernel_split": (8, f"{len(SPLIT_CASES)} shapes: the kernels of one grouped call, profiler")}


def shape(model: str, proj: str) -> tuple[int, int]:
    """(k, n) of an expert projection: gated fc1 h -> 2f, fc2 f -> h."""
    h, f = EXPERT[model]
    return (h, 2 * f) if proj == "fc1" else (f, h)


def _operands(torch, g: int, r: int, k: int, n: int):
    a16 = torch.randn(g * r, k, device="cuda").to(torch.bfloat16)
    b16 = torch.randn(g, n, k, device="cuda").to(torch.bfloat16)
    offs = torch.arange(r, g * r + 1, r, device="cuda", dtype=torch.int32)
    return a16, b16, a16.to(torch.float8_e4m3fn), b16.to(torch.float8_e4m3fn), offs


def calls(torch, g: int, r: int, k: int, n: int) -> dict:
    """The six calls of one case: grouped bf16, fp8 slow / fast; dense bf16, fp8 slow / fast."""
    a16, b16, a8, b8, offs = _operands(torch, g, r, k, n)
    sa = torch.ones(g * r, device="cuda", dtype=torch.float32)
    sb = torch.ones(g, n, device="cuda", dtype=torch.float32)
    da, db = sa.unsqueeze(1), torch.ones(1, n, device="cuda", dtype=torch.float32)
    w16, w8 = b16[0].t(), b8[0].t()  # one group's weight, (k, n) column-major views
    out = {"grouped-bf16": lambda: torch._grouped_mm(a16, b16.transpose(-2, -1), offs=offs),
           "dense-bf16": lambda: torch.mm(a16, w16)}
    for fast in (False, True):
        tag = "fast" if fast else "slow"
        out[f"grouped-fp8-{tag}"] = (lambda f=fast: torch._scaled_grouped_mm(
            a8, b8.transpose(-2, -1), sa, sb, offs=offs, out_dtype=torch.bfloat16, use_fast_accum=f))
        out[f"dense-fp8-{tag}"] = (lambda f=fast: torch._scaled_mm(
            a8, w8, scale_a=da, scale_b=db, out_dtype=torch.bfloat16, use_fast_accum=f))
    return out


def _row(ctx, case: str, label: str, g: int, r: int, k: int, n: int, secs: float, clk: str) -> None:
    grouped, dtype = label.startswith("grouped"), label.split("-")[1]
    fast = label.endswith("fast")
    how = {"grouped-bf16": "torch._grouped_mm",
           "dense-bf16": "torch.mm of every group's rows against one group's weight"}.get(
        label, ("torch._scaled_grouped_mm" if grouped else
                "torch._scaled_mm of every group's rows against one group's weight")
        + f" e4m3, row-wise scales, bf16 out, use_fast_accum={fast}")
    ctx["add"](id=f"{ctx['tag']}-{case}-{label}", kind="gemm_grouped" if grouped else "gemm",
               implementation="cublas" if label == "dense-bf16" else "cutlass",  # row-wise
               dtype=dtype, m=g * r, n=n, k=k,  # _scaled_mm is aten's RowwiseScaledMM.cu CUTLASS kernel
               groups=g if grouped else "", measured_unit="TFLOP/s",
               measured_value=f"{2 * g * r * n * k / secs / 1e12:.5g}",
               note=f"{how}; {g} groups of {r} rows; one CUDA graph of 10 calls between two events, "
                    f"median of 3; {secs * 1e6:.1f} us; clocks (sm MHz, mem MHz, W, C) {clk}")


def fp8_twins(torch, ctx, res):
    res.update(cases={}, failed=[])
    for model, proj, g, r in CASES:
        k, n = shape(model, proj)
        case = f"{model}-{proj}-g{g}-r{r}"
        if ctx["over"]():
            res["failed"].append(f"{case}: budget")
            return
        try:
            fns = calls(torch, g, r, k, n)
        except Exception as exc:  # noqa: BLE001 - the next case runs
            res["failed"].append(f"{case}: {exc!r}"[:300])
            continue
        before, secs = clocks(), {}
        for lab, fn in fns.items():
            try:
                secs[lab] = ctx["timer"].warm(fn, reps=10, graph=True)
            except Exception as exc:  # noqa: BLE001 - the next call runs
                res["failed"].append(f"{case} {lab}: {exc!r}"[:300])
        after = clocks()
        del fns
        torch.cuda.empty_cache()
        res["cases"][case] = {**{f"{lab}_us": round(s * 1e6, 2) for lab, s in secs.items()},
                              "clocks": f"{before} -> {after}"}
        for lab, s in secs.items():
            _row(ctx, case, lab, g, r, k, n, s, f"{before} -> {after}")


def _device_us(event) -> float:
    total = getattr(event, "device_time_total", None)
    if total is None:
        total = getattr(event, "cuda_time_total", 0.0)
    return total / max(1, event.count)


def kernel_split(torch, ctx, res):
    from torch.profiler import ProfilerActivity, profile
    res.update(cases={}, failed=[])
    for model, proj, g, r in SPLIT_CASES:
        k, n = shape(model, proj)
        fns = calls(torch, g, r, k, n)
        for lab in ("grouped-bf16", "grouped-fp8-slow", "grouped-fp8-fast"):
            case = f"{model}-{proj}-g{g}-r{r}-{lab}"
            if ctx["over"]():
                res["failed"].append(f"{case}: budget")
                return
            try:
                for _ in range(3):
                    fns[lab]()
                torch.cuda.synchronize()
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    for _ in range(5):
                        fns[lab]()
                    torch.cuda.synchronize()
                kernels = [(e.key[:160], e.count, round(_device_us(e), 2))
                           for e in prof.key_averages() if _device_us(e) > 0]
            except Exception as exc:  # noqa: BLE001 - the next case runs
                res["failed"].append(f"{case}: {exc!r}"[:300])
                continue
            res["cases"][case] = {"kernels": kernels}


FUNCS = {"fp8_twins": fp8_twins, "kernel_split": kernel_split}


def _digest(report: dict) -> dict:
    secs = report["sections"]
    twins = {c: {k: v for k, v in d.items() if k != "clocks"}
             for c, d in secs.get("fp8_twins", {}).get("cases", {}).items()}
    split = {c: d["kernels"] for c, d in secs.get("kernel_split", {}).get("cases", {}).items()}
    return {"fp8_twins": twins, "kernel_split": split}


def main(argv: list[str] | None = None) -> int:
    return sectioned_main(__doc__, "device_checks63_grouped63", "dc63g", SECTIONS, FUNCS, START_S,
                          60.0, argv, _digest)


if __name__ == "__main__":
    sys.exit(main())
