"""How long DeepEP's kernels hold their SMs in DeepSeek's profiled DualPipe pair, launch by
launch, and what a price for the hold could move on the example (issue 20 item 3, 44th
session, hold44). A diagnostic: no src change rests on it.

    python benchmarks/deepseek_v3_hold.py [--trace train.json] [--write] [--format json]

deepseek-ai/profile-data@4496024 ``train.json`` (one DualPipe pair of a middle rank, 4 MoE
layers' forward beside 4 layers' backward, EP64 over 8 nodes, one H800, 132 SMs; its README:
"we simulate an absolutely balanced MoE routing strategy for profiling" and "the PP
communication is not included") is read for every DeepEP launch: its kind, the DualPipe
phase whose host range launched it, its place among that phase's launches of its kind (1-4:
the pair's layers in launch order), its start, duration and grid, the exchange stream's idle
time before it, and the compute stream's idle time beside it. ``--write`` keeps the figures in
``deepseek_v3_hold_trace.json`` (figures and kernel names only).

What the source says the notify kernels hold (deepseek-ai/DeepEP@dd758caf
csrc/kernels/legacy/internode.cu): ``notify_dispatch`` is launched on ``1 + num_rdma_ranks``
blocks (L436; 9 for 8 nodes) and ``cached_notify`` on ``num_channels * 2`` (L1523; 20); only
block 0 waits: it quiets the rank's in-flight RDMA writes (``nvshmemi_ibgda_quiet``, L139-L143
/ L1346-L1351), then syncs with the same-GPU-index rank of every node
(``nvshmem_sync_with_same_gpu_idx``) and with the node's 8 GPUs (``barrier_block``, L147-L149 /
L1354-L1357), twice in ``cached_notify`` (L1371-L1373); the other blocks compute the channel
prefix sums or fix the combine heads over the rank's own tokens and leave (L297-L340,
L1378-L1430). So the notify hold is the wait for the last of the 64 EP ranks to arrive, on one
SM, not on the 20 the exchange is given (``workload.moe_dispatch.EXCHANGE_SMS``).

Figures (the kept file; tests/test_deepseek_v3_hold.py):

* the exchange stream runs back to back (``back_to_back``): 28 of its 39 launches after the
  first (36 DeepEP kernels, 4 casts) start within 0.1 ms of the previous one's end, 12 of the 16
  notify kernels; it is busy 114.5 of the pair's 129.0 ms. The other notify kernels wait
  0.3-1.9 ms for this rank's own compute and still hold 1.0-3.6 ms: the peers come later still;
* the notify holds grow through the pair (``by_place``: 1.1 ms a launch at the first layer,
  3.0 at the fourth) while the dispatch / combine kernels after them stay flat (``spread``):
  the EP group's peers arrive later and later at the barriers under balanced routing, and the
  exchange after each barrier runs in step. Every EP peer of a DualPipe rank is the same
  pipeline stage running the same pair in the same order, so the pair's own compute order
  sets no arrival spread; the spread is run-time skew, which one rank's trace cannot price;
* the compute stream idles 8.4 ms of the pair (gaps over 50 us), 1.2 ms of it beside a
  notify kernel: the hold reaches the pair's span mostly through the exchange it delays.

``what_if`` prices the SMs held as the source says on the example's middle pair (as
deepseek_v3_norms.py's ``resident_what_if``): the dispatch / combine kernels' residency at
20 SMs, the notify kernels' at one (the norms losing a wave there, or not), against
dsv3n44's reading of the whole residency at 20. ``step`` sizes the most a hold price inside the
pair can move: rank 0's pairs (the example's ``phases``) times the what-if's change, against the
measured step's 1F1B phase (arXiv:2505.09343 Table 4), whose pairs run ~144 ms, not 129.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from itertools import pairwise
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
try:
    import deepseek_v3_kernels as dk
    import deepseek_v3_norms as dn
finally:
    sys.path.pop(0)

SOURCE = dk.SOURCE
KEPT = Path(__file__).resolve().parent / "deepseek_v3_hold_trace.json"
NOTIFY = ("notify_dispatch", "cached_notify")
EXCHANGE = ("dispatch", "combine")
WAITING_BLOCKS = 1
"""Blocks of a notify kernel that wait on the EP group (block 0; module docstring, source)."""
GAP_US = 50.0
"""Compute-stream gaps counted as idle (a launch gap on a busy stream is a few microseconds)."""
BACK_TO_BACK_US = 100.0


def _kind(name: str) -> str:
    return dk.cast_family(name.replace("void ", ""))


def measure(trace: dict) -> dict:
    """Every DeepEP launch of the pair (module docstring), microseconds from the pair's start."""
    ev = trace["traceEvents"]
    ann = sorted((e for e in ev if e.get("cat") == "user_annotation" and e["name"] != "1F1B"
                  and not e["name"].startswith("ProfilerStep")), key=lambda e: e["ts"])
    runtime = {e["args"]["correlation"]: e for e in ev
               if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
    gpu = sorted((e for e in ev if e.get("cat") == "kernel"), key=lambda e: e["ts"])
    t0 = gpu[0]["ts"]
    span = max(e["ts"] + e["dur"] for e in gpu) - t0
    streams: dict[int, list[dict]] = defaultdict(list)
    for e in gpu:
        streams[e["args"]["stream"]].append(e)
    ep_stream = {e["args"]["stream"] for e in gpu if dk.kernel_class(e["name"]) == "deepep"}
    (xs,) = ep_stream
    compute = max((s for s in streams if s != xs), key=lambda s: len(streams[s]))
    c = [(e["ts"], e["ts"] + e["dur"]) for e in streams[compute]]
    gaps = [(a[1], b[0]) for a, b in pairwise(c) if b[0] - a[1] > GAP_US]

    def phase(e: dict) -> str:
        r = runtime.get(e["args"].get("correlation"))
        hits = [a["name"] for a in ann if r and a["ts"] <= r["ts"] <= a["ts"] + a["dur"]]
        return hits[0] if hits else ""

    launches, seen, prev_end = [], defaultdict(int), None
    for e in streams[xs]:
        a, b = e["ts"], e["ts"] + e["dur"]
        kind, ph = _kind(e["name"]), phase(e)
        seen[(ph, kind)] += 1
        launches.append({
            "kind": kind, "phase": ph, "place": seen[(ph, kind)], "start_us": a - t0,
            "us": e["dur"], "blocks": e["args"]["grid"][0] * e["args"]["grid"][1]
            * e["args"]["grid"][2],
            "idle_before_us": None if prev_end is None else max(0.0, a - prev_end),
            "compute_idle_beside_us": sum(max(0.0, min(b, y) - max(a, x)) for x, y in gaps)})
        prev_end = b
    busy = (lambda s: dk._union_s([(e["ts"], e["ts"] + e["dur"]) for e in streams[s]]))
    return {"source": SOURCE, "gpu": trace["deviceProperties"][0]["name"],
            "sms": trace["deviceProperties"][0]["numSms"], "span_us": span,
            "exchange_stream_busy_us": busy(xs), "compute_stream_busy_us": busy(compute),
            "compute_gaps": len(gaps), "compute_gaps_us": sum(y - x for x, y in gaps),
            "launches": launches}


def by_place(m: dict) -> dict:
    """Mean launch time (ms) of the notify and of the dispatch / combine kernels by the place
    of their layer in the pair (1-4)."""
    out: dict[str, dict[int, list[float]]] = {"notify": defaultdict(list),
                                              "exchange": defaultdict(list)}
    for r in m["launches"]:
        group = "notify" if r["kind"] in NOTIFY else "exchange" if r["kind"] in EXCHANGE else ""
        if group:
            out[group][r["place"]].append(r["us"] / 1e3)
    return {g: {p: sum(v) / len(v) for p, v in sorted(d.items())} for g, d in out.items()}


def spread(m: dict) -> dict:
    """Each (phase, kind)'s launches across the pair's four layers: max / min."""
    d: dict[str, list[float]] = defaultdict(list)
    for r in m["launches"]:
        if r["kind"] in NOTIFY + EXCHANGE:
            d[f"{r['phase']} {r['kind']}"].append(r["us"])
    return {k: max(v) / min(v) for k, v in sorted(d.items())}


def residency(m: dict) -> dict:
    """The kernels' time (ms) and share of the pair by kind, the SM-milliseconds each holds
    (dispatch / combine: all their blocks, one an SM; notify: the one waiting block), and the
    exchange stream's back-to-back launches."""
    span = m["span_us"]
    ms = {g: sum(r["us"] for r in m["launches"] if r["kind"] in k) / 1e3
          for g, k in (("notify", NOTIFY), ("exchange", EXCHANGE))}
    blocks = {g: sorted({r["blocks"] for r in m["launches"] if r["kind"] in k})
              for g, k in (("notify", NOTIFY), ("exchange", EXCHANGE))}
    follow = [r for r in m["launches"] if r["idle_before_us"] is not None]
    return {"ms": ms, "share": {g: 1e3 * v / span for g, v in ms.items()}, "blocks": blocks,
            "sm_ms": {"notify_as_launched": sum(r["us"] * r["blocks"] for r in m["launches"]
                                                if r["kind"] in NOTIFY) / 1e3,
                      "notify_waiting": ms["notify"] * WAITING_BLOCKS,
                      "exchange": sum(r["us"] * r["blocks"] for r in m["launches"]
                                      if r["kind"] in EXCHANGE) / 1e3},
            "back_to_back": sum(r["idle_before_us"] < BACK_TO_BACK_US for r in follow),
            "notify_back_to_back": sum(r["idle_before_us"] < BACK_TO_BACK_US for r in follow
                                       if r["kind"] in NOTIFY),
            "notify_launches": sum(r["kind"] in NOTIFY for r in m["launches"]),
            "launches": len(m["launches"]),
            "compute_idle_beside_notify_ms": sum(r["compute_idle_beside_us"] for r in
                                                 m["launches"] if r["kind"] in NOTIFY) / 1e3}


def what_if(p: dict, m: dict, held: float) -> dict:
    """The example's middle pair (``deepseek_v3_norms.priced``) with its exchange charge
    replaced by the SMs the source says are held: the dispatch / combine residency at
    ``held`` of the SMs, the notify residency at one SM, the full-wave norms losing a wave under
    either (``upper``) or only under the dispatch / combine kernels (``lower``); beside
    dsv3n44's whole residency at ``held``."""
    r = residency(m)
    s_x, s_n = r["share"]["exchange"], r["share"]["notify"]
    one = WAITING_BLOCKS / m["sms"]
    base = dn.resident_what_if(p, s_x, held)["pair_s"]
    off = p["compute_s"] - p["grid_s"] - p["norms_s"]
    lower = base + s_n * one * off
    upper = lower + s_n * p["norms_s"]
    whole = dn.resident_what_if(p, s_x + s_n, held)["pair_s"]
    return {"priced_pair_s": p["pair_s"], "lower_s": lower, "upper_s": upper,
            "whole_residency_at_exchange_sms_s": whole}


def step(w: dict, measured_pair_s: float) -> dict:
    """The most a hold price inside the pair moves rank 0's 1F1B phase (its pairs times the
    what-if's change), against that phase's gap to the measured step (the example's
    ``phases``)."""
    out = subprocess.run([sys.executable, str(Path(__file__).resolve().parent / "deepseek_v3.py"),
                          "--format", "json"], check=True, capture_output=True, text=True).stdout
    ph = json.loads(out)["settings"]["dualpipe"]["phases"]
    r0, meas = ph["ranks"][0], ph["measured"]
    pairs = r0["passes"]["1F1B"]
    d = w["upper_s"] - w["priced_pair_s"]
    d_whole = w["whole_residency_at_exchange_sms_s"] - w["priced_pair_s"]
    return {"rank0_pairs": pairs, "rank0_1F1B_s": r0["1F1B"], "measured_1F1B_s": meas["1F1B"],
            "priced_pair_mean_ms": 1e3 * r0["1F1B"] / pairs,
            "measured_pair_mean_ms": 1e3 * meas["1F1B"] / pairs,
            "profiled_pair_ms": 1e3 * measured_pair_s,
            "rank0_bubble_s": r0["bubble"], "measured_bubble_s": meas["bubble"],
            "iteration_vs_table4": ph["iteration_vs_table4"],
            "hold_on_1F1B_s": pairs * d, "whole_residency_on_1F1B_s": pairs * d_whole,
            "gap_1F1B_s": meas["1F1B"] - r0["1F1B"]}


def run(m: dict) -> dict:
    p = dn._child("")
    held = 20 / m["sms"]
    w = what_if(p, m, held)
    return {"residency": residency(m), "by_place_ms": by_place(m), "spread": spread(m),
            "what_if": w, "step": step(w, m["span_us"] * 1e-6)}


def main() -> None:
    args = dk.trace_parser(__doc__.splitlines()[0], KEPT).parse_args()
    m = dk.trace_figures(args, measure, KEPT)
    res = run(m)
    if args.format == "json":
        print(json.dumps(res, indent=1))
        return
    r = res["residency"]
    print(f"{m['source']} ({m['gpu']}): span {m['span_us'] / 1e3:.1f} ms; exchange stream busy "
          f"{m['exchange_stream_busy_us'] / 1e3:.1f} ms, {r['back_to_back']} of "
          f"{r['launches'] - 1} launches back to back ({r['notify_back_to_back']} of "
          f"{r['notify_launches']} notify); compute stream busy "
          f"{m['compute_stream_busy_us'] / 1e3:.1f} ms, {m['compute_gaps']} gaps "
          f"{m['compute_gaps_us'] / 1e3:.1f} ms ({r['compute_idle_beside_notify_ms']:.1f} beside "
          f"a notify kernel)")
    print(f"notify {r['ms']['notify']:.1f} ms (blocks {r['blocks']['notify']}, one waits: "
          f"{r['sm_ms']['notify_waiting']:.1f} SM-ms, not {r['sm_ms']['notify_as_launched']:.0f});"
          f" dispatch / combine {r['ms']['exchange']:.1f} ms on {r['blocks']['exchange']} blocks")
    print("| layer place in the pair | 1 | 2 | 3 | 4 |")
    print("| --- | --- | --- | --- | --- |")
    for g, v in res["by_place_ms"].items():
        print(f"| {g} kernels, mean ms | " + " | ".join(f"{x:.2f}" for x in v.values()) + " |")
    print("max/min across the layers:",
          {k: round(v, 2) for k, v in res["spread"].items()})
    w, s = res["what_if"], res["step"]
    print(f"middle pair: priced {1e3 * w['priced_pair_s']:.1f} ms; holds as the source says "
          f"{1e3 * w['lower_s']:.1f}-{1e3 * w['upper_s']:.1f} ms; whole residency at 20 SMs "
          f"{1e3 * w['whole_residency_at_exchange_sms_s']:.1f} ms; profiled "
          f"{s['profiled_pair_ms']:.1f}")
    print(f"rank 0: {s['rank0_pairs']} pairs, 1F1B {s['rank0_1F1B_s']:.2f} s "
          f"({s['priced_pair_mean_ms']:.1f} ms a pair) vs measured {s['measured_1F1B_s']} s "
          f"({s['measured_pair_mean_ms']:.1f} ms a pair); the source's holds move it "
          f"{s['hold_on_1F1B_s']:+.2f} s, the whole residency at 20 SMs "
          f"{s['whole_residency_on_1F1B_s']:+.2f} s, of the {s['gap_1F1B_s']:.2f} s gap; bubble "
          f"{s['rank0_bubble_s']:.2f} vs {s['measured_bubble_s']} s")


if __name__ == "__main__":
    main()
