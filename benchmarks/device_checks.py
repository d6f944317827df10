"""One short prepared script for a session lent one GPU: the measurements open leads need.

    python benchmarks/device_checks.py --out $OUT --budget-s 420   # the run tool, timeout_s 540
    python benchmarks/device_checks.py --dry-run                   # the plan; no GPU needed

Sections (``SECTIONS``; each guarded: its error goes into the JSON and the next one runs; one
that would start past ``--budget-s`` is skipped): ``launch_queue`` (host time of each of N
launches of a ~150 us kernel: where it jumps to a kernel's time is ``compute.host.LAUNCH_QUEUE``),
``gemm_by_k`` (gemm34's k swing: warm / cold L2, eager / CUDA graph), ``sdpa`` (cuDNN and FA2
at the FA3 paper's shapes, cudnn34), ``head_gemm`` (Llama 3 70B TP 4 logits, bf16 / fp8,
head34) and ``host_costs`` (host us per call of the small ops ``compute.host``'s constants are
built from). Writes ``kernels.csv`` (validation/README.md's kernels format: ``trainsim validate
OUT/kernels.csv``), ``launch_queue.csv`` and ``device_checks.json``. Stdlib and torch only;
torch is imported lazily.
"""

from __future__ import annotations

import argparse
import csv
import ctypes
import itertools
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path

COLUMNS = ["id", "source", "gpu", "kind", "implementation", "dtype", "m", "n", "k", "groups",
           "batch", "seq_len", "heads", "kv_heads", "head_dim", "causal", "tokens", "hidden",
           "ffn", "experts", "top_k", "bytes", "measured_value", "measured_unit", "note"]
LAUNCHES = 3000
KERNEL_US = 150.0
GEMM_M, GEMM_N, GEMM_KS = 1024, 8192, (3584, 4096, 7168, 8192, 28672)
SDPA_TOKENS, SDPA_HIDDEN = 16384, 2048
SDPA_HEAD_DIMS, SDPA_SEQS = (64, 128, 256), (512, 1024, 2048, 4096, 8192, 16384)
HEAD_SHAPES = {"fwd": (8192, 32064, 8192), "dgrad": (8192, 8192, 32064),
               "wgrad": (32064, 8192, 8192)}
HOST_CALLS, HOST_BATCH = 10_000, 100
FLUSH_BYTES = 256 << 20
SECTIONS = {  # name: (estimated seconds on an H100, what it measures)
    "launch_queue": (10, f"{LAUNCHES} launches/stream, ~{KERNEL_US:.0f} us: _sleep x1, x2 streams; mm"),
    "gemm_by_k": (40, f"fp16/bf16 {GEMM_M}x{GEMM_N}x{GEMM_KS}, nn/nt, warm/cold, eager/graph: 80"),
    "sdpa": (150, f"cudnn/flash2, hd {SDPA_HEAD_DIMS}, seq {SDPA_SEQS}, causal 0/1: 144 rows"),
    "head_gemm": (20, f"bf16, fp8 fast accum on/off x {list(HEAD_SHAPES.values())}"),
    "host_costs": (30, f"17 small ops, median of {HOST_CALLS} calls, batches of {HOST_BATCH}"),
}
HARNESS = {
    "warm-eager": "50 back-to-back eager calls between two events",
    "warm-graph": "one CUDA graph of 50 calls between two events",
    "cold-eager": "256 MB buffer zeroed before each call, events around each call, median of 50 "
                  "(triton.testing.do_bench's method)",
    "cold-graph": "a CUDA graph of 50 (256 MB zero, call) pairs less one of the 50 zeroings"}
START_S = 20  # torch import, CUDA context, cuBLAS / cuDNN handles


def catalog_gpu(name: str) -> str:
    """trainsim's catalog name of a CUDA device name ('' where none is sure)."""
    n = name.upper()
    for key, gpu in (("H200", "h200-sxm-141gb"), ("H100 NVL", "h100-nvl-94gb"),
                     ("H100 PCIE", "h100-pcie-80gb"), ("H100", "h100-sxm-80gb"),
                     ("H800", "h800-sxm-80gb"), ("B200", "b200-sxm-180gb"),
                     ("A100-SXM4-80GB", "a100-sxm-80gb"), ("A100-SXM4-40GB", "a100-sxm-40gb")):
        if key in n:
            return gpu
    return ""


def kernel_row(gpu: str, source: str, **cells: object) -> dict[str, str]:
    """One kernels-format row (every column, blanks where a cell does not apply)."""
    row = dict.fromkeys(COLUMNS, "")
    row.update(gpu=gpu, source=source)
    row.update({k: "" if v is None else str(v) for k, v in cells.items()})
    unknown = set(row) - set(COLUMNS)
    if unknown:
        raise ValueError(f"not a kernels column: {sorted(unknown)}")
    return row


def write_kernels(path: Path, rows: list[dict[str, str]]) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)


def queue_depth(dt_ns: list[int], kernel_us: float, window: int = 20) -> int | None:
    """The first launch whose host time, and the median of ``window`` from it, sit past halfway
    between the early launches' cost and one kernel's time: the queue is full from there."""
    if len(dt_ns) < 200 + window:
        return None
    base = statistics.median(dt_ns[:200]) / 1e3
    cut = base + 0.5 * (kernel_us - base)
    for i in range(len(dt_ns) - window):
        if dt_ns[i] / 1e3 > cut and statistics.median(dt_ns[i:i + window]) / 1e3 > cut:
            return i
    return None


def nvidia_smi() -> str:
    q = "name,driver_version,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu"
    try:
        return subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"],
                              check=False, capture_output=True, text=True, timeout=10).stdout.strip()
    except Exception as exc:  # noqa: BLE001 - a missing tool is recorded, not fatal
        return f"unavailable: {exc!r}"


def cublas_version() -> str:
    """cublasLt's version from the library this process loaded (after a matmul)."""
    try:
        with open("/proc/self/maps") as fh:
            libs = sorted({ln.split()[-1] for ln in fh if "libcublasLt" in ln})
        for lib in libs:
            f = ctypes.CDLL(lib).cublasLtGetVersion
            f.restype = ctypes.c_size_t
            return f"{f()} ({lib})"
        return "libcublasLt not loaded"
    except Exception as exc:  # noqa: BLE001
        return f"unknown: {exc!r}"


class Timer:
    """CUDA-event timings; ``torch`` passed in so the module imports without it."""

    def __init__(self, torch):
        self.t = torch
        self.flush = torch.empty(FLUSH_BYTES, dtype=torch.int8, device="cuda")

    def _warm(self, fn, n=3):
        t = self.t
        s = t.cuda.Stream()
        s.wait_stream(t.cuda.current_stream())
        with t.cuda.stream(s):
            for _ in range(n):
                fn()
        t.cuda.current_stream().wait_stream(s)
        t.cuda.synchronize()

    def _pair(self):
        return self.t.cuda.Event(enable_timing=True), self.t.cuda.Event(enable_timing=True)

    def _batch(self, run, reps):
        """Median over 3 batches of seconds per call, ``run`` doing ``reps`` calls."""
        out = []
        for _ in range(3):
            a, b = self._pair()
            a.record()
            run()
            b.record()
            self.t.cuda.synchronize()
            out.append(a.elapsed_time(b) * 1e-3 / reps)
        return statistics.median(out)

    def _graph(self, body, reps):
        g = self.t.cuda.CUDAGraph()
        with self.t.cuda.graph(g):
            for _ in range(reps):
                body()
        return g

    def warm(self, fn, reps=20, graph=False):
        """Seconds per call, L2 warm: ``reps`` back-to-back calls (eager or one graph)."""
        self._warm(fn)
        if graph:
            g = self._graph(fn, reps)
            return self._batch(g.replay, reps)

        def run():
            for _ in range(reps):
                fn()
        return self._batch(run, reps)

    def cold(self, fn, reps=20, graph=False):
        """Seconds per call behind an L2 flush. Eager: events around each call after the buffer
        is zeroed (triton.testing.do_bench's method), median; graph: a graph of (zero, call)
        pairs less a graph of the zeroing alone."""
        t, flush = self.t, self.flush
        self._warm(fn)
        if graph:
            both = self._graph(lambda: (flush.zero_(), fn()), reps)
            alone = self._graph(flush.zero_, reps)
            return self._batch(both.replay, reps) - self._batch(alone.replay, reps)
        ev = [self._pair() for _ in range(reps)]
        for a, b in ev:
            flush.zero_()
            a.record()
            fn()
            b.record()
        t.cuda.synchronize()
        return statistics.median(a.elapsed_time(b) for a, b in ev) * 1e-3


def launch_queue(torch, ctx, res):
    sleep = torch.cuda._sleep
    a, b = ctx["timer"]._pair()
    sleep(1000)
    a.record()
    sleep(200_000)
    b.record()
    torch.cuda.synchronize()
    cycles = int(200_000 * KERNEL_US / (a.elapsed_time(b) * 1e3))
    x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    y = torch.empty_like(x)
    mm_s = ctx["timer"].warm(lambda: torch.matmul(x, x, out=y), reps=10)
    kern = {"sleep": (lambda: sleep(cycles), KERNEL_US), "matmul": (
        lambda: torch.matmul(x, x, out=y), mm_s * 1e6)}
    res.update(sleep_cycles=cycles, matmul_4096_bf16_us=round(mm_s * 1e6, 1), runs={})
    lines = []
    for label, kname, nstreams in (("sleep-1stream", "sleep", 1), ("sleep-2streams", "sleep", 2),
                                   ("matmul-1stream", "matmul", 1)):
        fn, kus = kern[kname]
        streams = [torch.cuda.Stream() for _ in range(nstreams)]
        n = LAUNCHES * nstreams
        dt = [0] * n
        torch.cuda.synchronize()
        wall = time.perf_counter()
        for i in range(n):
            torch.cuda.set_stream(streams[i % nstreams])
            t0 = time.perf_counter_ns()
            fn()
            dt[i] = time.perf_counter_ns() - t0
        torch.cuda.set_stream(torch.cuda.default_stream())
        torch.cuda.synchronize()
        depth = queue_depth(dt, kus)
        res["runs"][label] = {
            "kernel_us": round(kus, 1), "launches": n, "queue_depth_total": depth,
            "queue_depth_per_stream": None if depth is None else depth / nstreams,
            "early_launch_us_median": round(statistics.median(dt[:200]) / 1e3, 2),
            "late_launch_us_median": round(statistics.median(dt[-500:]) / 1e3, 2),
            "wall_s": round(time.perf_counter() - wall, 3)}
        lines += [(label, i, v) for i, v in enumerate(dt)]
    with open(ctx["out"] / "launch_queue.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["run", "launch", "host_ns"])
        w.writerows(lines)


def gemm_by_k(torch, ctx, res):
    tm = ctx["timer"]
    for (dt_name, dt), k in itertools.product((("fp16", torch.float16),
                                               ("bf16", torch.bfloat16)), GEMM_KS):
        if ctx["over"]():
            res["stopped_at"] = f"{dt_name} k={k}"
            return
        a, b, bt = (torch.randn(*sh, device="cuda", dtype=dt)
                    for sh in ((GEMM_M, k), (k, GEMM_N), (GEMM_N, k)))
        for layout, fn in (("nn", lambda a=a, b=b: torch.matmul(a, b)),
                           ("nt", lambda a=a, bt=bt: torch.matmul(a, bt.t()))):
            for mode, harness in HARNESS.items():
                how = tm.warm if mode.startswith("warm") else tm.cold
                s = how(fn, reps=50, graph=mode.endswith("graph"))
                if s <= 0:
                    res.setdefault("failed", []).append(f"{dt_name} k={k} {layout} {mode}: {s}")
                    continue
                ctx["add"](id=f"{ctx['tag']}-gemm-{dt_name}-m{GEMM_M}-n{GEMM_N}-k{k}-{layout}-"
                              f"{mode}", kind="gemm", implementation="cublas", dtype=dt_name,
                           m=GEMM_M, n=GEMM_N, k=k, measured_unit="TFLOP/s",
                           measured_value=f"{2 * GEMM_M * GEMM_N * k / s / 1e12:.5g}",
                           note=f"torch.matmul layout {layout}; {harness}; time "
                                f"{s * 1e6:.2f} us; random normal data")


def sdpa(torch, ctx, res):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    attn, tm = torch.nn.functional.scaled_dot_product_attention, ctx["timer"]
    res.update(cudnn_version=torch.backends.cudnn.version(), failed=[])
    backends = (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash2", SDPBackend.FLASH_ATTENTION))
    for (impl, be), d, s, causal in itertools.product(backends, SDPA_HEAD_DIMS, SDPA_SEQS,
                                                      (False, True)):
        case = f"{impl} d={d} s={s} causal={causal}"
        if ctx["over"]():
            res["stopped_at"] = case
            return
        b, h = SDPA_TOKENS // s, SDPA_HIDDEN // d
        try:
            qkv = torch.randn(b, s, 3, h, d, device="cuda", dtype=torch.bfloat16,
                              requires_grad=True)

            def fwd(qkv=qkv, causal=causal):
                q, k, v = (x.transpose(1, 2) for x in qkv.unbind(2))
                return attn(q, k, v, is_causal=causal)

            with sdpa_kernel([be]):
                go = torch.randn_like(fwd())
                reps = max(3, min(20, 8192 // s * 2))
                tf = tm.warm(lambda: fwd().detach(), reps=reps)
                tfb = tm.warm(lambda q=qkv, g=go: torch.autograd.grad(fwd(), q, g),
                              reps=max(2, reps // 2))
            del qkv, go
        except Exception as exc:  # noqa: BLE001 - one shape's failure is a finding
            res["failed"].append(f"{case}: {exc!r}"[:300])
            continue
        flops, tb = 4 * b * s * s * h * d * (0.5 if causal else 1), tfb - tf
        if min(tf, tb) <= 0:
            res["failed"].append(f"{case}: times {tf:.3g} / {tb:.3g} s")
            continue
        for kind, secs, fl, how in (("attention_fwd", tf, flops, "forward"),
                                    ("attention_bwd", tb, 2.5 * flops,
                                     "backward = (fwd+bwd) - fwd")):
            ctx["add"](id=f"{ctx['tag']}-attn-{impl}-{kind[10:]}-hd{d}-s{s}-c{int(causal)}",
                       kind=kind, implementation=impl, dtype="bf16", batch=b, seq_len=s,
                       heads=h, kv_heads=h, head_dim=d, causal=int(causal),
                       measured_unit="TFLOP/s", measured_value=f"{fl / secs / 1e12:.5g}",
                       note=f"F.scaled_dot_product_attention under sdpa_kernel({be.name}), cuDNN "
                            f"{res['cudnn_version']}; Q/K/V strided views of one packed (b, s, "
                            f"3, h, d) bf16 buffer (BSHD, the FA3 paper harness's layout), "
                            f"grad on; {how}; eager calls between two events, median of 3 "
                            f"batches; time {secs * 1e6:.1f} us")


def head_gemm(torch, ctx, res):
    res["scaled_mm"] = hasattr(torch, "_scaled_mm")
    for op, (m, n, k) in HEAD_SHAPES.items():
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        cases = [("bf16", "", "torch.matmul(x, w.t())", lambda a=a, w=w: torch.matmul(a, w.t()))]
        if res["scaled_mm"]:
            a8, w8 = a.to(torch.float8_e4m3fn), w.to(torch.float8_e4m3fn)
            one = torch.ones((), device="cuda")
            for fast in (True, False):
                how = f"torch._scaled_mm e4m3, per-tensor scales, bf16 out, use_fast_accum={fast}"
                cases.append(("fp8", "fast" if fast else "split", how,
                              lambda f=fast, a8=a8, w8=w8, one=one: torch._scaled_mm(
                                  a8, w8.t(), scale_a=one, scale_b=one,
                                  out_dtype=torch.bfloat16, use_fast_accum=f)))
        for dt_name, tag, how, fn in cases:
            try:
                s = ctx["timer"].warm(fn, reps=10, graph=True)
            except Exception as exc:  # noqa: BLE001
                res.setdefault("failed", []).append(f"{op} {how}: {exc!r}"[:300])
                continue
            ctx["add"](id=f"{ctx['tag']}-head-{op}-{dt_name}{tag}", kind="gemm",
                       implementation="cublas", dtype=dt_name, m=m, n=n, k=k,
                       measured_unit="TFLOP/s", measured_value=f"{2 * m * n * k / s / 1e12:.5g}",
                       note=f"Llama 3 70B TP 4 logits {op}; {how}; one CUDA graph of 10 calls "
                            f"between two events, median of 3; time {s * 1e6:.1f} us")


def host_costs(torch, ctx, res):
    x, cpu1, cpu8 = torch.ones(16, device="cuda"), torch.ones(1), torch.ones(8, 8)
    ev, side, cur = torch.cuda.Event(), torch.cuda.Stream(), torch.cuda.current_stream()
    ctx["timer"]._warm(lambda: x.add_(1.0))
    graph = ctx["timer"]._graph(lambda: x.add_(1.0), 1)
    w = torch.randn(128, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    out = torch.randn(128, 128, device="cuda", dtype=torch.bfloat16) @ w
    gout = torch.ones_like(out)

    def in_ctx(make):
        def call():
            with make():
                pass
        return call

    cases = [  # (name, call, calls, the constant it informs)
        ("python_call_noop", lambda: None, HOST_CALLS, "the timing loop's own cost"),
        ("torch.empty(16, device=cuda)", lambda: torch.empty(16, device="cuda"), HOST_CALLS,
         "caching-allocator hit"),
        ("x.view(-1)", lambda: x.view(-1), HOST_CALLS, "PY_VIEW_S 2.26 us"),
        ("x.detach()", x.detach, HOST_CALLS, "PY_VIEW_S (NODE_PASS_S's detach)"),
        ("x.narrow(0, 0, 8)", lambda: x.narrow(0, 0, 8), HOST_CALLS, "PY_VIEW_S"),
        ("cpu 8x8 .split(4)", lambda: cpu8.split(4), HOST_CALLS, "PY_VIEW_S's pytorch#32194"),
        ("cpu x + 1.0", lambda: cpu1 + 1.0, HOST_CALLS, "CPP_OP_S 5.13 + PY_BINDING_S 1 us"),
        ("cuda x + 1.0 (16 elements)", lambda: x + 1.0, HOST_CALLS, "PY_LAUNCH_S 9.13 us"),
        ("cuda x.add_(1.0)", lambda: x.add_(1.0), HOST_CALLS, "PY_LAUNCH_S, no allocation"),
        ("torch.cuda._sleep(0)", lambda: torch.cuda._sleep(0), HOST_CALLS, "LAUNCH_S 3 us"),
        ("event.record()", ev.record, HOST_CALLS, "PY_BINDING_S + LAUNCH_S (NODE_PASS_S)"),
        ("stream.wait_event(ev)", lambda: cur.wait_event(ev), HOST_CALLS,
         "PY_BINDING_S + LAUNCH_S (NODE_PASS_S)"),
        ("torch.cuda.current_stream()", torch.cuda.current_stream, HOST_CALLS,
         "STREAM_CONTEXT_S's 4.4 us (pytorch#78066)"),
        ("with torch.cuda.stream(s): pass", in_ctx(lambda: torch.cuda.stream(side)), HOST_CALLS,
         "STREAM_CONTEXT_S 8.2 us"),
        ("with torch.cuda.device(0): pass", in_ctx(lambda: torch.cuda.device(0)), HOST_CALLS,
         "STREAM_CONTEXT_S's 3.8 us (pytorch#91045)"),
        ("graph.replay() of one add", graph.replay, HOST_CALLS, "GRAPH_REPLAY_LAUNCHES 2"),
        ("out.backward(g, retain_graph=True), one 128^2 bf16 matmul",
         lambda: out.backward(gout, retain_graph=True), 2000,
         "ENGINE_CALL_S 103.5 + 4 CPP_LAUNCH_S = 136 us (pytorch#157407)")]
    res["ops"] = {}
    for name, fn, calls, informs in cases:
        try:
            for _ in range(200):
                fn()
            torch.cuda.synchronize()
            per = []
            for _ in range(calls // HOST_BATCH):
                t0 = time.perf_counter_ns()
                for _ in range(HOST_BATCH):
                    fn()
                per.append((time.perf_counter_ns() - t0) / HOST_BATCH / 1e3)
                torch.cuda.synchronize()
            q = statistics.quantiles(per, n=10)
            res["ops"][name] = {"median_us": round(statistics.median(per), 3), "p10_us":
                                round(q[0], 3), "p90_us": round(q[-1], 3), "calls": calls,
                                "informs": informs}
        except Exception as exc:  # noqa: BLE001
            res["ops"][name] = {"error": repr(exc)[:300], "informs": informs}


def cuda_device(gpu: str = ""):
    """(torch, the CUDA device's name, its catalog name or ``gpu``) after one small matmul has
    made the context and the cuBLAS handle; torch is imported here, not at module import."""
    import torch
    if not torch.cuda.is_available():
        raise RuntimeError("no CUDA device (use --dry-run for the plan)")
    name = torch.cuda.get_device_name()
    torch.matmul(*[torch.ones(64, 64, device="cuda", dtype=torch.bfloat16)] * 2)
    torch.cuda.synchronize()
    return torch, name, gpu or catalog_gpu(name) or name.lower().replace(" ", "-")


def open_run(out: Path, script: str, tag: str, budget_s: float, gpu: str = ""):
    """(torch, ctx, report, save) of a prepared run that writes ``{script}.json`` and
    ``kernels.csv`` under ``out``: the environment, the source cell of its kernel rows, the
    section context (timer, budget, row adder; ``tag`` prefixes row ids). Without CUDA, ``torch``
    and ``ctx`` are None and the saved JSON holds the traceback."""
    t_start = time.time()
    out.mkdir(parents=True, exist_ok=True)
    report: dict = {"argv": sys.argv, "started_utc": time.strftime("%FT%TZ", time.gmtime()),
                    "host": platform.node(), "python": sys.version.split()[0], "sections": {}}
    rows: list[dict[str, str]] = []

    def save():
        report["elapsed_s"] = round(time.time() - t_start, 1)
        (out / f"{script}.json").write_text(json.dumps(report, indent=1))
        write_kernels(out / "kernels.csv", rows)

    try:
        torch, name, gpu = cuda_device(gpu)
        sms = torch.cuda.get_device_properties(0).multi_processor_count
        report["env"] = {"device": name, "gpu": gpu, "torch": torch.__version__, "sms": sms,
                         "cuda": torch.version.cuda, "cublasLt": cublas_version(),
                         "cudnn": torch.backends.cudnn.version(), "nvidia_smi": nvidia_smi(),
                         "capability": list(torch.cuda.get_device_capability())}
        source = (f"measured on {name}, torch {torch.__version__}, CUDA {torch.version.cuda}, "
                  f"cuDNN {torch.backends.cudnn.version()}, CUDA events, benchmarks/"
                  f"{script}.py, {time.strftime('%Y-%m-%d', time.gmtime())}")
        ctx = {"out": out, "rows": rows, "gpu": gpu, "sms": sms, "source": source,
               "tag": f"{tag}-" + gpu.split("-")[0], "timer": Timer(torch),
               "over": lambda: time.time() - t_start > budget_s,
               "add": lambda **cells: rows.append(kernel_row(gpu, source, **cells))}
    except Exception:  # noqa: BLE001 - the JSON says why nothing ran
        report["error"] = traceback.format_exc()
        save()
        print(report["error"], file=sys.stderr)
        return None, None, report, save
    return torch, ctx, report, save


def wanted_sections(parser, spec: str, sections) -> list[str]:
    """The comma-separated ``--sections`` of a sectioned script, each checked against
    ``sections`` (an unknown one ends in the parser's one-line error)."""
    wanted = [s for s in spec.split(",") if s]
    bad = [s for s in wanted if s not in sections]
    if bad:
        parser.error(f"unknown sections {bad}; known: {list(sections)}")
    return wanted


def section_plan(script: str, sections: dict, wanted: list[str], start_s: int, budget_s: float,
                 out: str) -> str:
    """The dry run's plan of a sectioned script: each section's estimate and the total."""
    lines = [f"{script} plan: start ~{start_s} s"]
    lines += [f"  {s:11s} ~{sections[s][0]:3d} s  {sections[s][1]}" for s in wanted]
    lines.append(f"  total ~{start_s + sum(sections[s][0] for s in wanted)} s; budget {budget_s:.0f} s; "
                 f"out {out}")
    return "\n".join(lines)


def run_sections(torch, ctx, wanted, funcs, sections: dict, save, after=None) -> None:
    """Run each wanted section in turn into ``sections[name]``, guarded: one past the budget
    (``ctx["over"]``) is skipped, one that raises keeps its traceback and the next one runs (a
    sticky CUDA error is recorded at the synchronise); ``after(res)`` adds to each result, and
    ``save()`` writes the files after each section, should a later one hang."""
    for sec in wanted:
        res: dict = {}
        sections[sec] = res
        if ctx["over"]():
            res["skipped"] = "budget spent"
            continue
        t0 = time.time()
        try:
            funcs[sec](torch, ctx, res)
        except Exception:  # noqa: BLE001 - one section's failure keeps the rest
            res["error"] = traceback.format_exc()[-3000:]
            try:
                torch.cuda.synchronize()
            except Exception as exc:  # noqa: BLE001 - a sticky CUDA error ends the run
                res["sync_error"] = repr(exc)
        res["seconds"] = round(time.time() - t0, 1)
        if after:
            after(res)
        print(f"{sec}: {res['seconds']} s, {len(ctx['rows'])} rows"
              f"{' ERROR' if 'error' in res else ''}", flush=True)
        save()


def sectioned_main(doc: str, script: str, tag: str, sections: dict, funcs: dict, start_s: int,
                   budget_s: float, argv: list[str] | None, digest) -> int:
    """The command line a sectioned script shares (``--out``, ``--budget-s``, ``--sections``,
    ``--dry-run``): the plan, or the guarded run of each wanted section and one JSON line of
    ``digest(report)`` (a dict; its ``failed`` entry is added here)."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--out", default=os.environ.get("OUT", f"{script}_out"))
    p.add_argument("--budget-s", type=float, default=budget_s)
    p.add_argument("--sections", default=",".join(sections))
    p.add_argument("--dry-run", action="store_true")
    args = p.parse_args(argv)
    wanted = wanted_sections(p, args.sections, sections)
    if args.dry_run:
        print(section_plan(script, sections, wanted, start_s, args.budget_s, args.out))
        return 0
    torch, ctx, report, save = open_run(Path(args.out), script, tag, args.budget_s)
    if torch is None:
        return 1
    run_sections(torch, ctx, wanted, funcs, report["sections"], save)
    secs = report["sections"]
    out = {"env": report["env"], **digest(report),
           "failed": {k: (v.get("failed") or v.get("error", "")[-600:] or None) for k, v in secs.items()
                      if isinstance(v, dict)}}
    print(json.dumps(out)[:10000])
    return 0


def plan(wanted: list[str]) -> str:
    lines = [f"device_checks plan: start ~{START_S} s"]
    total = START_S
    for name in wanted:
        est, what = SECTIONS[name]
        total += est
        lines.append(f"  {name:13s} ~{est:4d} s  {what}")
    lines.append(f"  total ~{total} s on an H100 (cuDNN graph builds dominate sdpa's share)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.environ.get("OUT", "device_checks_out"))
    p.add_argument("--budget-s", type=float, default=420.0)
    p.add_argument("--sections", default=",".join(SECTIONS), help="comma-separated subset")
    p.add_argument("--gpu", default="", help="catalog name (default: from the device name)")
    p.add_argument("--dry-run", action="store_true")
    args = p.parse_args(argv)
    wanted = wanted_sections(p, args.sections, SECTIONS)
    if args.dry_run:
        print(plan(wanted))
        print(f"  sections run: {wanted}; budget {args.budget_s:.0f} s; out {args.out}")
        return 0
    torch, ctx, report, save = open_run(Path(args.out), "device_checks", "dc", args.budget_s, args.gpu)
    if torch is None:
        return 1
    funcs = {"launch_queue": launch_queue, "gemm_by_k": gemm_by_k, "sdpa": sdpa,
             "head_gemm": head_gemm, "host_costs": host_costs}
    run_sections(torch, ctx, wanted, funcs, report["sections"], save,
                 after=lambda res: res.update(nvidia_smi_after=nvidia_smi()))
    save()
    secs = report["sections"]  # a digest for the run's output tail, should the files not come back
    print(json.dumps({"env": report["env"], "queue": secs.get("launch_queue", {}).get("runs"),
                      "host_us": {k: v.get("median_us") for k, v in
                                  secs.get("host_costs", {}).get("ops", {}).items()},
                      "failed": {k: v.get("failed") or v.get("error", "")[-300:] or None
                                 for k, v in secs.items()}}, indent=0)[:8000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
