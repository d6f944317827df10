"""``compute.host``'s constants against the host costs one H200 machine measured (2026-11-27).

    PYTHONPATH=src:benchmarks python benchmarks/host_measured.py            # the table
    PYTHONPATH=src:benchmarks python benchmarks/host_measured.py --markdown # as RESULTS.md rows

Reads ``benchmarks/h200_2026-11-27/device_checks.json`` (sections ``launch_queue`` and
``host_costs``, written by ``benchmarks/device_checks.py``: median host microseconds per call of
17 small ops, 10,000 calls in batches of 100 with a synchronize between batches, torch
2.11.0+cu130, Python 3.12; the host CPU is not recorded, the machine has 16 x86 cores) and
``launch_queue.csv`` (every launch's host nanoseconds). Nothing is fitted here.

Launch queue. The host's launches return in ~5 us until the stream's queue is full; from then
on each returns when one queued operation finishes. The launches counted before the first
blocked one over-count what the queue holds by the kernels that finished meanwhile: the host
took ``T`` (the blocked launch's predecessors' host time) and the stream finished about ``T``
over one kernel's time, where that time is the mean host time of the 100 launches after the
queue filled (each waits out one kernel; on two streams in step, one kernel per stream every
two launches). What the stream held when it blocked is the rest.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from collections import defaultdict
from functools import cache
from pathlib import Path

from device_checks import LAUNCHES

from trainsim.compute import host, roofline

DIR = Path(__file__).resolve().parent / "h200_2026-11-27"
US = 1e-6
DRAIN = 100  # launches after the queue fills whose host time gives one kernel's time


@cache
def checks() -> dict:
    """``device_checks.json`` as written on the device."""
    return json.loads((DIR / "device_checks.json").read_text())


def host_s(name: str) -> float:
    """Median host seconds per call of one ``host_costs`` op, by its name in the JSON."""
    return checks()["sections"]["host_costs"]["ops"][name]["median_us"] * US


@cache
def launch_times() -> dict[str, list[float]]:
    """Host seconds of every launch, by run (``launch_queue.csv``)."""
    out: dict[str, list[float]] = defaultdict(list)
    with (DIR / "launch_queue.csv").open(newline="") as fh:
        for row in csv.DictReader(fh):
            out[row["run"]].append(int(row["host_ns"]) * 1e-9)
    return dict(out)


def first_blocked(dt: list[float], window: int = 20) -> int:
    """The first launch whose host time, and the median of ``window`` from it, sit past halfway
    between the first 200 launches' median and the last 500's (the queue full: each launch
    waits for a slot). Past halfway to the late launches', not to one kernel's time as
    ``device_checks.queue_depth`` puts it: on two streams a blocked launch waits half a kernel
    on average, which that cut never sees (its JSON reports no depth for that run)."""
    early, late = statistics.median(dt[:200]), statistics.median(dt[-500:])
    cut = early + 0.5 * (late - early)
    return next(i for i in range(len(dt) - window)
                if dt[i] > cut and statistics.median(dt[i:i + window]) > cut)


def queue_held(run: str) -> dict[str, float]:
    """What one stream held when the host first blocked, for a run of ``launch_queue``."""
    meta = checks()["sections"]["launch_queue"]["runs"][run]
    dt = launch_times()[run]
    streams = meta["launches"] // LAUNCHES
    b = first_blocked(dt)
    took = sum(dt[:b])
    kernel = streams * sum(dt[b:b + DRAIN]) / DRAIN  # one kernel's time on one stream
    finished = took / kernel
    return {"streams": streams, "launches_before_block": b, "host_s": took,
            "kernel_s": kernel, "finished_per_stream": finished,
            "held_per_stream": b / streams - finished}


def measured() -> dict[str, float]:
    """This file's measured figures (seconds, counts) that ``compute.host``'s constants are
    compared with."""
    sleep, mm = queue_held("sleep-1stream"), queue_held("matmul-1stream")
    return {
        "LAUNCH_QUEUE": round(sleep["held_per_stream"]),
        "GEMM_QUEUE_ENTRIES": sleep["held_per_stream"] / mm["held_per_stream"],
        "STREAM_CONTEXT_S": host_s("with torch.cuda.stream(s): pass"),
        "EVENT_WAIT_S": host_s("stream.wait_event(ev)"),
        # Event.record() without a stream reads current_stream() first (torch/cuda/streams.py)
        "EVENT_RECORD_S": host_s("event.record()") - host_s("torch.cuda.current_stream()"),
        "PY_VIEW_S": host_s("x.narrow(0, 0, 8)"),
        "PY_DETACH_S": host_s("x.detach()"),
        "EMPTY_S": host_s("torch.empty(16, device=cuda)"),
        # one GEMM (the weight's gradient; the other operand takes none) and AccumulateGrad's
        # in-place add, both issued by the engine's C++
        "ENGINE_CALL_S": host_s("out.backward(g, retain_graph=True), one 128^2 bf16 matmul")
        - 2 * host.CPP_LAUNCH_S,
    }


def candidates() -> dict[str, float]:
    """What each host constant would be, built the way its docstring builds it, from this
    file's measurements (seconds): the figures the table compares."""
    m = measured()
    return {
        "PY_VIEW_S": m["PY_VIEW_S"],
        "STREAM_CONTEXT_S": m["STREAM_CONTEXT_S"],
        "NODE_PASS_S": m["STREAM_CONTEXT_S"] + m["EVENT_WAIT_S"] + m["EVENT_RECORD_S"],
        "ENGINE_CALL_S": m["ENGINE_CALL_S"],
        "DUMMY_WGRAD_S": m["EMPTY_S"] + host.PY_BINDING_S,
        "PY_LAUNCH_S": host_s("cuda x.add_(1.0)"),
        "LAUNCH_QUEUE": m["LAUNCH_QUEUE"],
    }


def table() -> list[tuple[str, float, float, str]]:
    """(constant, its value in ``compute.host``, the measurement, what was measured), seconds
    or counts."""
    m, c = measured(), candidates()
    return [
        ("LAUNCH_QUEUE", host.LAUNCH_QUEUE, m["LAUNCH_QUEUE"],
         "sleep kernel, 1 stream: held when the host blocked"),
        ("  per stream of 2", host.LAUNCH_QUEUE, queue_held("sleep-2streams")["held_per_stream"],
         "sleep kernel, 2 streams"),
        ("  entries a cuBLAS GEMM takes", 1, m["GEMM_QUEUE_ENTRIES"],
         "1-stream sleep held / matmul held (4096^3 bf16)"),
        ("roofline.LAUNCH_S + PY_BINDING_S", roofline.LAUNCH_S + host.PY_BINDING_S,
         host_s("torch.cuda._sleep(0)"), "torch.cuda._sleep(0): binding + one launch"),
        ("CPP_OP_S + PY_BINDING_S", host.CPP_OP_S + host.PY_BINDING_S,
         host_s("cpu x + 1.0"), "cpu x + 1.0"),
        ("PY_LAUNCH_S", host.PY_LAUNCH_S, c["PY_LAUNCH_S"], "cuda x.add_(1.0)"),
        ("PY_VIEW_S", host.PY_VIEW_S, c["PY_VIEW_S"], "x.narrow(0, 0, 8)"),
        ("  (a view)", host.PY_VIEW_S, host_s("x.view(-1)"), "x.view(-1)"),
        ("  (a detach)", host.PY_VIEW_S, m["PY_DETACH_S"], "x.detach()"),
        ("  (pytorch#32194's split)", host.PY_VIEW_S, host_s("cpu 8x8 .split(4)"),
         "cpu 8x8 .split(4)"),
        ("STREAM_CONTEXT_S", host.STREAM_CONTEXT_S, c["STREAM_CONTEXT_S"],
         "with torch.cuda.stream(s): pass"),
        ("  its current_stream() (pytorch#78066)", 4.4 * US,
         host_s("torch.cuda.current_stream()"), "torch.cuda.current_stream()"),
        ("  device context (pytorch#91045)", 3.8 * US, host_s("with torch.cuda.device(0): pass"),
         "with torch.cuda.device(0): pass"),
        ("NODE_PASS_S", host.NODE_PASS_S, c["NODE_PASS_S"],
         "stream context + wait_event + (record() - current_stream())"),
        ("  event wait + record", host.NODE_PASS_S - host.STREAM_CONTEXT_S,
         m["EVENT_WAIT_S"] + m["EVENT_RECORD_S"], "wait_event + (record() - current_stream())"),
        ("ENGINE_CALL_S", host.ENGINE_CALL_S, c["ENGINE_CALL_S"],
         "128^2 bf16 matmul backward - 2 CPP_LAUNCH_S"),
        ("DUMMY_WGRAD_S", host.DUMMY_WGRAD_S, c["DUMMY_WGRAD_S"],
         "torch.empty(16, device=cuda) + a binding"),
        ("GRAPH_REPLAY_LAUNCHES x HOST_S_PER_KERNEL",
         host.GRAPH_REPLAY_LAUNCHES * host.HOST_S_PER_KERNEL,
         host_s("graph.replay() of one add") + host_s("cuda x.add_(1.0)"),
         "graph.replay() + one in-place copy (add_)"),
        ("HOST_S_PER_KERNEL", host.HOST_S_PER_KERNEL, host_s("cuda x + 1.0 (16 elements)"),
         "cuda x + 1.0, no autograd: a floor, not the module figure"),
    ]


def _fmt(v: float, count: bool) -> str:
    if count:
        return f"{v:.0f}" if v == int(v) or v >= 100 else f"{v:.2f}"
    return f"{v:.2f}" if v < 10 else f"{v:.1f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args(argv)
    env = checks()["env"]
    print(f"# {env['device']}, torch {env['torch']}, CUDA {env['cuda']}; host CPU not recorded")
    for run in ("sleep-1stream", "sleep-2streams", "matmul-1stream"):
        q = queue_held(run)
        print(f"{run:15} blocked at launch {q['launches_before_block']}, host "
              f"{q['host_s'] * 1e3:.2f} ms, kernel {q['kernel_s'] / US:.1f} us, finished "
              f"{q['finished_per_stream']:.1f}/stream, held {q['held_per_stream']:.1f}/stream")
    if a.markdown:
        print("\n| constant | value | measured | measured / value | what was measured |"
              "\n|---|---|---|---|---|")
    for name, value, meas, how in table():
        count = any(w in name for w in ("QUEUE", "entries", "stream of"))
        v, m = (x if count else x / US for x in (value, meas))
        f = [_fmt(x, count) for x in (v, m)]
        if a.markdown:
            print(f"| {name} | {f[0]} | {f[1]} | {m / v:.2f} | {how} |")
        else:
            print(f"{name:42} {f[0]:>6} {f[1]:>6}  x{m / v:4.2f}  {how}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
