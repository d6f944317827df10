"""The 41st session's prepared GPU run: attention per implementation, GPT-3 175B's TP 8 GEMMs,
the fp8 block-scaled rate against the output shape, and the host's cost of an eager op.

    python3 benchmarks/device_checks41.py --out $OUT --budget-s 240   # the run tool
    python benchmarks/device_checks41.py --dry-run                    # the plan; no GPU needed

Sections (each guarded as in ``device_checks.py``, whose timer and row helpers it reuses):

``attn_grid``   FlashAttention-3 paper Fig. 5's grid (16k tokens, hidden 2,048, head dim 64 /
    128 / 256, causal or not, sequence 512-16k) through SDPA's FLASH_ATTENTION (FA2) and
    CUDNN_ATTENTION backends, forward and forward + backward: the published H100 cuDNN forward
    rows are priced 18 % fast (kernels_published, attention_fwd/cudnn), and Transformer Engine's
    fused attention is cuDNN's.
``attn_grid_hd`` the same grid at head dims 96 / 160 / 192 with q, k, v as separate leaves.
``gpt3_gemms``  GPT-3 175B's four linears at TP 8 (2,048 tokens a micro-batch, sequence parallel)
    as forward, input-gradient and weight-gradient products in bf16 and fp8 (per-tensor): the
    MLPerf GPT-3 rows' per-micro-batch compute (mlperf40: v3.1 priced 3.2 ms a micro-batch fast).
``wgrad_mn``    fp8 1x128-by-1x128 (wgrad) and 1x128-by-128x128 (fwd) block-scaled over per-tensor
    rate for output shapes from 512 to 16k a side at k 8,192 (block_k_sweep found it flat in k).
``vidur_twins`` the 128 H100 fp16 GEMM shapes of ``kernels_published.csv`` (microsoft/vidur's Llama
    profiles, Kineto kernel times) through ``F.linear`` on this GPU: the same cuBLAS kernels on a twin
    chip (132 SMs, 700 W), to tell the rows' harness from trainsim's shape model.
``attn_kernels`` torch.profiler's per-kernel CUDA times of SDPA FA2 / cuDNN forward and backward with q,
    k, v as separate leaves (no stack of the gradients), head dim 64 / 128 / 256, causal, s 512 / 2k / 8k:
    the backward's main kernel against its helpers (dq conversion, dot(dO, O)).
``sm_contention`` a bf16 GEMM (DeepSeek-V3's expert fc1, 8,704 x 4,096 x 7,168) beside a persistent Triton
    copy kernel of 20 or 32 programs (DeepEP's SM budget) on a second stream, the copy launched before or
    after the GEMM: the GEMM's slowdown against the SM share trainsim charges (bridge41's lead 2).
``wgrad_tiles`` the kernel cuBLAS picks (name, so its tile) and the time of small models' weight-gradient
    GEMMs as autograd lays them out (dY^T @ X: (out, tokens) by (tokens, in)) for hidden 768-2,560, FFN
    4x, 16k / 48k tokens: gemm41's lead 1 (the database's traced tiles over-speed these).
``eager_ops``   host microseconds a call of small eager ops launched back to back (add, mul, a view,
    linear, layer_norm, gelu, a Python-level module): the per-op host cost priced in
    ``compute.host``.

Writes ``kernels.csv`` (rows in validation/README.md's kernels format) and ``device_checks41.json``.
"""

from __future__ import annotations

import csv
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from device_checks import sectioned_main
from device_checks40 import block_ratios, fp8_cases

ATTN_TOKENS, ATTN_HIDDEN = 16384, 2048
ATTN_SEQS, ATTN_HDS = (512, 1024, 2048, 4096, 8192, 16384), (64, 128, 256)
ATTN_HDS2 = (96, 160, 192)
BACKENDS = {"FLASH_ATTENTION": "flash2", "CUDNN_ATTENTION": "cudnn"}
GPT3_TOKENS = 2048
GPT3_LINEARS = {"qkv": (12288, 4608), "proj": (1536, 12288), "fc1": (12288, 6144), "fc2": (6144, 12288)}
WGRAD_MN, WGRAD_K = ((512, 512), (1024, 1024), (2048, 2048), (4096, 4096), (8192, 8192), (16384, 16384),
                     (1536, 7168), (576, 7168), (24576, 1536), (4096, 7168), (7168, 2048), (2048, 16384)), 8192
EAGER_N = 2000
EXCLUSIVE_PROGS = (2, 4, 8, 16, 24, 32)
WGRAD_HIDDEN, WGRAD_TOKENS = (768, 1536, 2048, 2560), (16384, 49152)
KERNELS_CSV = Path(__file__).resolve().parents[1].parent / "shared" / "validation" / "kernels_published.csv"
SHAPES = Path(__file__).resolve().parent / "h200_2026-11-27_s41" / "vidur_h100_shapes.csv"  # the device has no shared/
ATTN_KERNEL_CASES = tuple((d, s) for d in ATTN_HDS for s in (512, 2048, 8192))
SECTIONS = {"attn_grid": (70, f"{len(ATTN_SEQS)} seqs x {len(ATTN_HDS)} head dims x 2 masks x 2 backends"),
            "attn_grid_hd": (60, f"the grid at head dims {ATTN_HDS2}, q, k, v separate leaves"),
            "gpt3_gemms": (15, "4 linears x fwd/dgrad/wgrad x bf16/fp8 tensor"),
            "wgrad_mn": (25, f"{len(WGRAD_MN)} (m, n) x wgrad/fwd, fp8 block over tensor"),
            "vidur_twins": (20, "128 fp16 linears of the H100 vidur rows"),
            "attn_kernels": (30, f"{len(ATTN_KERNEL_CASES)} causal cases x 2 backends, profiler kernel times"),
            "sm_contention": (30, "GEMM beside a 20 / 32-program copy, launched before / after"),
            "sm_exclusive": (40, "3 GEMMs beside 2-32 exclusive (32-warp) copy programs, copy first"),
            "wgrad_tiles": (20, "32 weight-gradient GEMMs, kernel names by profiler"),
            "eager_ops": (10, f"{EAGER_N} back-to-back calls of 7 small eager ops")}
START_S = 20


def attn_grid(torch, ctx, res, head_dims=ATTN_HDS, leaves=False):
    """The grid through both backends; ``leaves``: q, k, v as three separate leaf tensors (no
    stack of their gradients in the backward) instead of views of one packed ``qkv``."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    attn, tm = torch.nn.functional.scaled_dot_product_attention, ctx["timer"]
    res.update(failed=[], times={})
    for d in head_dims:
        h = ATTN_HIDDEN // d
        for s in ATTN_SEQS:
            b = ATTN_TOKENS // s
            if leaves:
                qkv = tuple(torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                            for _ in range(3))
            else:
                qkv = torch.randn(b, s, 3, h, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
            for causal in (False, True):
                flops = 4 * b * s * s * h * d * (0.5 if causal else 1.0)
                for backend, impl in BACKENDS.items():
                    case = f"{impl}-hd{d}-{'causal' if causal else 'nc'}-s{s}"
                    if ctx["over"]():
                        res["failed"].append(f"{case}: budget spent")
                        continue
                    try:
                        def fwd(qkv=qkv, causal=causal):
                            q, kk, v = qkv if leaves else (t.transpose(1, 2) for t in qkv.unbind(2))
                            return attn(q, kk, v, is_causal=causal)

                        with sdpa_kernel([getattr(SDPBackend, backend)]):
                            go = torch.randn_like(fwd())
                            tf = tm.warm(lambda: fwd().detach(), reps=10)
                            tfb = tm.warm(lambda g=go, x=qkv: torch.autograd.grad(fwd(), x, g), reps=5)
                    except Exception as exc:  # noqa: BLE001 - a backend may refuse a head dim
                        res["failed"].append(f"{case}: {exc!r}"[:300])
                        continue
                    res["times"][case] = {"fwd_us": round(tf * 1e6, 1), "fwd_bwd_us": round(tfb * 1e6, 1)}
                    cells = {"implementation": impl, "dtype": "bf16", "batch": b, "seq_len": s, "heads": h, "kv_heads": h,
                                 "head_dim": d, "causal": int(causal), "measured_unit": "TFLOP/s"}
                    how = (f"SDPA {backend}, {'causal' if causal else 'no mask'}, "
                           f"{'q, k, v separate leaves' if leaves else 'views of one packed qkv'}, eager calls between two "
                           f"events, median of 3; FLOPs = 4*b*s^2*h*d (/2 causal), bwd 2.5x")
                    ctx["add"](id=f"{ctx['tag']}-{case}-fwd", kind="attention_fwd",
                               measured_value=f"{flops / tf / 1e12:.5g}", note=f"{how}; {tf * 1e6:.1f} us", **cells)
                    tb = tfb - tf
                    if tb > 0:
                        ctx["add"](id=f"{ctx['tag']}-{case}-bwd", kind="attention_bwd",
                                   measured_value=f"{2.5 * flops / tb / 1e12:.5g}",
                                   note=f"{how}; forward + backward minus forward, {tb * 1e6:.1f} us", **cells)
            del qkv


def attn_grid_hd(torch, ctx, res):
    """Head dims between the grid's (``ATTN_HDS2``: DeepSeek-V3's MLA 192, Nemotron-4's 192 among
    them), heads = 2,048 // head dim, q, k, v as separate leaves (attn41's lead: FA2 at hd 192)."""
    attn_grid(torch, ctx, res, head_dims=ATTN_HDS2, leaves=True)


def gpt3_gemms(torch, ctx, res):
    res.update(failed=[], rates={})
    for name, (fin, fout) in GPT3_LINEARS.items():
        t = GPT3_TOKENS
        for op, (m, n, k) in {"fwd": (t, fout, fin), "dgrad": (t, fin, fout), "wgrad": (fout, fin, t)}.items():
            a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
            b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
            cases = [("bf16", lambda a=a, b=b: torch.matmul(a, b.t()))] + fp8_cases(torch, m, n, k, op)[:1]
            for label, fn in cases:
                key = f"{name}-{op}-{label}"
                try:
                    s = ctx["timer"].warm(fn, reps=10, graph=True)
                except Exception as exc:  # noqa: BLE001
                    res["failed"].append(f"{key}: {exc!r}"[:300])
                    continue
                res["rates"][key] = {"m": m, "n": n, "k": k, "us": round(s * 1e6, 2),
                                     "tflops": round(2 * m * n * k / s / 1e12, 1)}
                ctx["add"](id=f"{ctx['tag']}-gpt3tp8-{key}", kind="gemm", implementation="cublas",
                           dtype=label.split("-")[0], m=m, n=n, k=k, measured_unit="TFLOP/s",
                           measured_value=f"{2 * m * n * k / s / 1e12:.5g}",
                           note=f"GPT-3 175B TP 8 {name} {op}, an (m,k) by (n,k)^T product; "
                                f"{'torch.matmul' if label == 'bf16' else 'torch._scaled_mm e4m3, per-tensor scales, fast accum'}; "
                                f"one CUDA graph of 10 calls between two events, median of 3; time {s * 1e6:.2f} us")


def wgrad_mn(torch, ctx, res):
    block_ratios(torch, ctx, res, [(m, n, WGRAD_K) for (m, n) in WGRAD_MN])


def vidur_shapes(path: Path = KERNELS_CSV) -> list[tuple[str, int, int, int]]:
    """(id, m, n, k) of the published H100 fp16 GEMM rows (empty where the file is absent)."""
    if not path.exists():
        return []
    return [(r["id"], int(r["m"]), int(r["n"]), int(r["k"])) for r in csv.DictReader(path.open())
            if r["kind"] == "gemm" and r["gpu"] == "h100-sxm-80gb" and r["dtype"] == "fp16"]


def vidur_twins(torch, ctx, res):
    res.update(failed=[], times={})
    shapes = vidur_shapes() or [(r["id"], int(r["m"]), int(r["n"]), int(r["k"])) for r in csv.DictReader(SHAPES.open())]
    for rid, m, n, k in shapes:
        x = torch.randn(m, k, device="cuda", dtype=torch.float16)
        w = torch.randn(n, k, device="cuda", dtype=torch.float16)
        try:
            s = ctx["timer"].warm(lambda x=x, w=w: torch.nn.functional.linear(x, w), reps=10, graph=True)
        except Exception as exc:  # noqa: BLE001
            res["failed"].append(f"{rid}: {exc!r}"[:300])
            continue
        res["times"][rid] = round(s * 1e6, 2)
        ctx["add"](id=f"{ctx['tag']}-twin-{rid}", kind="gemm", implementation="cublas", dtype="fp16", m=m, n=n,
                   k=k, measured_unit="ms", measured_value=f"{s * 1e3:.5g}",
                   note=f"twin of {rid} (H100, Kineto): F.linear fp16, one CUDA graph of 10 calls between two "
                        f"events, median of 3")


def attn_kernels(torch, ctx, res):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.profiler import ProfilerActivity, profile
    attn = torch.nn.functional.scaled_dot_product_attention
    res.update(failed=[], cases={})
    for (d, s), (backend, impl) in ((c, b) for c in ATTN_KERNEL_CASES for b in BACKENDS.items()):
        h, b = ATTN_HIDDEN // d, ATTN_TOKENS // s
        q, kk, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                    for _ in range(3))
        case = f"{impl}-hd{d}-causal-s{s}"
        try:
            with sdpa_kernel([getattr(SDPBackend, backend)]):
                out = attn(q, kk, v, is_causal=True)
                go = torch.randn_like(out)
                for _ in range(3):
                    torch.autograd.grad(attn(q, kk, v, is_causal=True), (q, kk, v), go)
                torch.cuda.synchronize()
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    for _ in range(5):
                        torch.autograd.grad(attn(q, kk, v, is_causal=True), (q, kk, v), go)
                    torch.cuda.synchronize()
        except Exception as exc:  # noqa: BLE001
            res["failed"].append(f"{case}: {exc!r}"[:300])
            continue
        kernels: dict[str, list[float]] = {}
        for e in prof.events():
            if e.device_type.name == "CUDA":
                kernels.setdefault(e.name[:120], []).append(e.time_range.elapsed_us())
        res["cases"][case] = {name: {"calls": len(t), "us_per_step": round(sum(t) / 5, 2)}
                              for name, t in sorted(kernels.items(), key=lambda kv: -sum(kv[1]))}
        del q, kk, v


def _persistent_copy():
    import triton
    import triton.language as tl

    @triton.jit
    def copy_kernel(src, dst, n, iters, BLOCK: tl.constexpr, NPROG: tl.constexpr):
        pid = tl.program_id(0)
        for _ in range(iters):
            for start in range(pid * BLOCK, n, NPROG * BLOCK):
                offs = start + tl.arange(0, BLOCK)
                tl.store(dst + offs, tl.load(src + offs, mask=offs < n), mask=offs < n)

    return copy_kernel


def _contention(torch, kernel, shape, nprogs, num_warps=4, orders=("copy_first", "gemm_first")):
    """A bf16 GEMM of ``shape`` looped beside the persistent copy of ``nprogs`` programs of
    ``num_warps`` warps on a second stream, sized to outlast the GEMMs, in each launch order."""
    m, n, k = shape
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    src = torch.randn(1 << 26, device="cuda", dtype=torch.bfloat16)  # 128 MiB, beyond L2
    dst = torch.empty_like(src)
    gemm_reps = 20
    side, main = torch.cuda.Stream(), torch.cuda.current_stream()

    def gemms():
        for _ in range(gemm_reps):
            torch.matmul(x, w.t())

    def timed(fn, stream):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        with torch.cuda.stream(stream):
            a.record()
            fn()
            b.record()
        return a, b

    gemms()
    torch.cuda.synchronize()
    a, b = timed(gemms, main)
    torch.cuda.synchronize()
    t_gemm = a.elapsed_time(b) / gemm_reps
    res = {"gemm_alone_us": round(t_gemm * 1e3, 1), "num_warps": num_warps}
    for nprog in nprogs:
        def copy(iters, nprog=nprog):
            kernel[(nprog,)](src, dst, src.numel(), iters, BLOCK=4096, NPROG=nprog, num_warps=num_warps)
        copy(1)
        torch.cuda.synchronize()
        a, b = timed(lambda: copy(1), side)
        torch.cuda.synchronize()
        t_copy1 = a.elapsed_time(b)
        iters = max(2, round(1.3 * t_gemm * gemm_reps / t_copy1))  # outlasts the GEMMs
        copy(iters)  # Triton specialises an int argument equal to 1: compile the timed variant here
        torch.cuda.synchronize()
        case = {"copy_alone_ms_per_iter": round(t_copy1, 3), "iters": iters,
                "copy_GBps_alone": round(2 * src.numel() * 2 / t_copy1 / 1e6, 1)}
        for order in orders:
            torch.cuda.synchronize()
            if order == "copy_first":
                ca, cb = timed(lambda i=iters: copy(i), side)
                ga, gb = timed(gemms, main)
            else:
                ga, gb = timed(gemms, main)
                ca, cb = timed(lambda i=iters: copy(i), side)
            torch.cuda.synchronize()
            t_g = ga.elapsed_time(gb) / gemm_reps
            case[order] = {"gemm_us": round(t_g * 1e3, 1), "gemm_slowdown": round(t_g / t_gemm, 4),
                           "copy_ms": round(ca.elapsed_time(cb), 3),
                           "copy_slowdown": round(ca.elapsed_time(cb) / (iters * t_copy1), 4)}
        case["sm_share_slowdown"] = round(132 / (132 - nprog), 4)
        res[f"copy{nprog}"] = case
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        torch.matmul(x, w.t())
        torch.cuda.synchronize()
    res["gemm_kernels"] = sorted({e.name[:160] for e in prof.events() if e.device_type.name == "CUDA"})
    return res


def sm_contention(torch, ctx, res):
    res.update(_contention(torch, _persistent_copy(), (8704, 4096, 7168), (20, 32)))


def sm_exclusive(torch, ctx, res):
    """The same with 32-warp copy programs (1,024 threads: the register file left is too small for
    a Hopper GEMM's 384-thread CTA, so no GEMM CTA shares their SMs), launched first, 2-32 programs,
    for DeepSeek-V3's expert fc1 and GPT-3 175B TP 8's fc1 / proj forward (mlperf41's lead 0: is a
    GEMM beside an SM-holding kernel a static tile schedule's up-to-2x or its SM share?)."""
    kernel = _persistent_copy()
    for shape in ((8704, 4096, 7168), (2048, 6144, 12288), (2048, 12288, 1536)):
        res["x".join(map(str, shape))] = _contention(torch, kernel, shape, EXCLUSIVE_PROGS, num_warps=32,
                                                     orders=("copy_first",))


def wgrad_tiles(torch, ctx, res):
    from torch.profiler import ProfilerActivity, profile
    res.update(failed=[], gemms={})
    for d, t in ((d, t) for d in WGRAD_HIDDEN for t in WGRAD_TOKENS):
        for name, (fin, fout) in {"qkv": (d, 3 * d), "proj": (d, d), "fc1": (d, 4 * d), "fc2": (4 * d, d)}.items():
            key = f"d{d}-t{t}-{name}"
            dy = torch.randn(t, fout, device="cuda", dtype=torch.bfloat16)
            x = torch.randn(t, fin, device="cuda", dtype=torch.bfloat16)
            try:
                s = ctx["timer"].warm(lambda dy=dy, x=x: torch.matmul(dy.t(), x), reps=10, graph=True)
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    torch.matmul(dy.t(), x)
                    torch.cuda.synchronize()
            except Exception as exc:  # noqa: BLE001
                res["failed"].append(f"{key}: {exc!r}"[:300])
                continue
            kernels = sorted({e.name[:160] for e in prof.events() if e.device_type.name == "CUDA"})
            res["gemms"][key] = {"m": fout, "n": fin, "k": t, "us": round(s * 1e6, 2),
                                 "tflops": round(2 * fout * fin * t / s / 1e12, 1), "kernels": kernels}
            ctx["add"](id=f"{ctx['tag']}-wgrad-{key}", kind="gemm", implementation="cublas", dtype="bf16", m=fout,
                       n=fin, k=t, measured_unit="TFLOP/s", measured_value=f"{2 * fout * fin * t / s / 1e12:.5g}",
                       note=f"weight gradient dY^T @ X ((out, tokens) by (tokens, in)), torch.matmul; one CUDA graph "
                            f"of 10 calls between two events, median of 3; {s * 1e6:.2f} us; kernel {'; '.join(kernels)}")


def eager_ops(torch, ctx, res):
    """Host seconds a call with the GPU never the bottleneck (tiny tensors): the launch queue
    stays short, so the loop's wall time is the host's."""
    x = torch.randn(64, 64, device="cuda", dtype=torch.bfloat16)
    lin = torch.nn.Linear(64, 64, device="cuda", dtype=torch.bfloat16)
    ln = torch.nn.LayerNorm(64, device="cuda", dtype=torch.bfloat16)
    ops = {"add_": lambda: x.add_(0.0), "mul": lambda: x * 1.0, "view": lambda: x.view(-1),
           "F.linear": lambda: torch.nn.functional.linear(x, lin.weight), "nn.Linear": lambda: lin(x),
           "nn.LayerNorm": lambda: ln(x), "gelu": lambda: torch.nn.functional.gelu(x)}
    for name, fn in ops.items():
        for _ in range(50):
            fn()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(EAGER_N):
            fn()
        host = time.perf_counter() - t0
        torch.cuda.synchronize()
        res[name] = {"host_us_per_call": round(host / EAGER_N * 1e6, 3),
                     "wall_us_per_call": round((time.perf_counter() - t0) / EAGER_N * 1e6, 3)}


FUNCS = {"attn_grid": attn_grid, "attn_grid_hd": attn_grid_hd, "gpt3_gemms": gpt3_gemms, "wgrad_mn": wgrad_mn,
         "vidur_twins": vidur_twins, "attn_kernels": attn_kernels, "sm_contention": sm_contention,
         "sm_exclusive": sm_exclusive, "wgrad_tiles": wgrad_tiles, "eager_ops": eager_ops}


def _digest(report: dict) -> dict:
    secs = report["sections"]
    return {"eager": secs.get("eager_ops"), "sm_contention": secs.get("sm_contention"),
            "sm_exclusive": {sh: {c: v[c]["copy_first"]["gemm_slowdown"] for c in v if c.startswith("copy")}
                             for sh, v in secs.get("sm_exclusive", {}).items() if isinstance(v, dict)},
            "wgrad_mn": {k: v["block_rate_of_tensor"] for k, v in secs.get("wgrad_mn", {}).get("ratios", {}).items()},
            "gpt3": {k: v["tflops"] for k, v in secs.get("gpt3_gemms", {}).get("rates", {}).items()},
            "attn_n": len(secs.get("attn_grid", {}).get("times", {}))}


def main(argv: list[str] | None = None) -> int:
    return sectioned_main(__doc__, "device_checks41", "dc41", SECTIONS, FUNCS, START_S, 240.0, argv, _digest)

if __name__ == "__main__":
    sys.exit(main())
