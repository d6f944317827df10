"""The 63rd session's prepared GPU run (gemm63, issue 17 item 1): does a dense GEMM's measured rate
on one H200 depend on what the board ran just before it (its power state), and how fast does the
clock fall once a loop starts?

    python3 benchmarks/device_checks63_gemm63.py --out $OUT --budget-s 60   # the run tool
    python benchmarks/device_checks63_gemm63.py --dry-run                   # the plan; no GPU needed

``benchmarks/gemm63.py`` finds the same 1 ms layer GEMMs (Llama 3 70B TP 2, 8,192 tokens) timed by
two harnesses of the same kind (a CUDA graph of 10-30 calls, median of 3 replays) 10-15 % apart:
``benchmarks/kernels_h200_measured.csv`` (27 Nov, shapes run back to back: ~690 TFLOP/s bf16 at
every length) against ``benchmarks/h200_2026-11-29_s63/layer_gemms_heat`` (29 Nov, an nvidia-smi
query between shapes: 770-810 at 1 ms, ~690 at 5 ms). trainsim's validator prices both as one
loop starting at the burst clock (``roofline.loop_clock_factor``: the slowdown grows with each
call's length, tau 4.7 ms per call). Two sections, read only (no clock, power or application
setting is changed):

``history`` two 1 ms sites (70B TP 2 out and qkv forward) in bf16 and fp8, each timed as one
    CUDA graph of 10 calls (median of 3) twice: after the board idled 2 s, and right after
    ``HEAT_S`` of back-to-back calls of the 70B fc1 forward in the same dtype (the board at its
    power limit). Equal rates say the 27 Nov / 29 Nov gap is not the board's state.
``ramp`` from a board idle for 2 s, one graph of 10 calls of the 70B out forward replayed
    without pause for ``RAMP_S``, each replay timed by its own events: the rate against the
    seconds since the loop began (the power limiter's time course in wall time, beside the
    per-call law the validator uses).

Writes ``kernels.csv`` (validation/README.md's kernels format; the hot rows' notes say MSMF, so the
validator prices them at the sustained clock) and ``device_checks63_gemm63.json``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from device_checks import sectioned_main
from device_checks59 import clocks
from device_checks62_bw import _calls, _how, gemm_shape, tflops

SHORT = (("70b-tp2-out", 8192, 8192, 4096), ("70b-tp2-qkv", 8192, 5120, 8192))
"""(site, tokens, out features, in features): the forward GEMMs timed on an idle and a hot board."""
HEATER = ("70b-tp2-fc1", 8192, 28672, 8192)
"""The long GEMM (5.5 ms bf16) whose back-to-back calls heat the board."""
HEAT_S = 4.0
"""Seconds of back-to-back heater calls before a hot timing (device_checks62_bw's heat section
saw the fc1 rate settle within its 8 s; 4 s keeps this run under a minute)."""
RAMP_S = 3.0
START_S = 20
SECTIONS = {
    "history": (27, f"{len(SHORT)} sites x bf16/fp8, idle board vs after {HEAT_S:.0f} s of fc1 calls"),
    "ramp": (11, f"70b out fwd bf16/fp8: {RAMP_S:.0f} s of graph replays from idle, each timed"),
}


def _heat(torch, fn, seconds: float) -> None:
    end = time.time() + seconds
    while time.time() < end:
        for _ in range(10):
            fn()
        torch.cuda.synchronize()


def history(torch, ctx, res):
    res.update(cases={}, failed=[])
    _, ht, hout, hin = HEATER
    hm, hn, hk = gemm_shape(ht, hout, hin, "fwd")
    heaters = _calls(torch, hm, hn, hk, True)
    for site, tokens, out_f, in_f in SHORT:
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
                _heat(torch, heaters[dt], HEAT_S)
                hot = ctx["timer"].warm(fn, reps=10, graph=True)
                hot_clk = clocks()
            except Exception as exc:  # noqa: BLE001 - the next case runs
                res["failed"].append(f"{case}: {exc!r}"[:300])
                continue
            res["cases"][case] = {"idle_tflops": round(tflops(m, n, k, idle), 1),
                                  "hot_tflops": round(tflops(m, n, k, hot), 1),
                                  "hot_over_idle": round(idle / hot, 3),
                                  "clocks_idle": idle_clk, "clocks_hot": hot_clk}
            for regime, secs, note in (
                    ("idle", idle, f"timed after the board idled 2 s; clocks before {idle_clk}"),
                    ("hot", hot, (f"MSMF regime: timed right after {HEAT_S:.0f} s of "
                                  f"back-to-back {HEATER[0]} forward calls (the board at its "
                                  f"power limit); clocks after {hot_clk}"))):
                ctx["add"](id=f"{ctx['tag']}-{regime}-{case}", kind="gemm", implementation="cublas",
                           dtype=dt, m=m, n=n, k=k, measured_unit="TFLOP/s",
                           measured_value=f"{tflops(m, n, k, secs):.5g}",
                           note=f"{note}; {_how(dt, True)}; one CUDA graph of 10 calls between "
                                f"two events, median of 3; {secs * 1e6:.1f} us")


def ramp(torch, ctx, res):
    res.update(cases={}, failed=[])
    site, tokens, out_f, in_f = SHORT[0]
    m, n, k = gemm_shape(tokens, out_f, in_f, "fwd")
    for dt, fn in _calls(torch, m, n, k, True).items():
        if ctx["over"]():
            res["failed"].append("budget")
            return
        case = f"{site}-fwd-{dt}"
        try:
            for _ in range(3):
                fn()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                for _ in range(10):
                    fn()
            torch.cuda.synchronize()
            time.sleep(2.0)
            before = clocks()
            events, t0 = [], time.time()
            while time.time() - t0 < RAMP_S and len(events) < 2000:
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                g.replay()
                b.record()
                events.append((a, b))
                if len(events) % 50 == 0:
                    torch.cuda.synchronize()
            torch.cuda.synchronize()
            after = clocks()
            first = events[0][0]
            rows = [(first.elapsed_time(a) / 1e3, a.elapsed_time(b) / 1e3 / 10) for a, b in events]
        except Exception as exc:  # noqa: BLE001 - the next dtype runs
            res["failed"].append(f"{case}: {exc!r}"[:300])
            continue
        res["cases"][case] = {
            "clocks_before": before, "clocks_after": after, "replays": len(rows),
            "elapsed_s_and_tflops": [(round(t, 4), round(tflops(m, n, k, s), 1)) for t, s in rows]}


FUNCS = {"history": history, "ramp": ramp}


def _digest(report: dict) -> dict:
    secs = report["sections"]
    out = {"history": {c: {k: v for k, v in d.items() if not k.startswith("clocks")}
                       for c, d in secs.get("history", {}).get("cases", {}).items()}}
    for c, d in secs.get("ramp", {}).get("cases", {}).items():
        pts = d.get("elapsed_s_and_tflops") or []
        out[f"ramp {c}"] = [p for i, p in enumerate(pts) if i in (0, 1, 2, 5, 10, 20, 50, 100)
                            or i == len(pts) - 1]
    return out


def main(argv: list[str] | None = None) -> int:
    return sectioned_main(__doc__, "device_checks63_gemm63", "dc63g", SECTIONS, FUNCS, START_S,
                          60.0, argv, _digest)


if __name__ == "__main__":
    sys.exit(main())
