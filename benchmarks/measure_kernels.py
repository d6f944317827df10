"""Measure GEMM, attention and memory-bound kernels on one GPU; write rows in the kernels_*.csv
format of shared/validation/README.md (ground truth for trainsim's compute model).

Timing: CUDA events around REPS back-to-back calls after WARM warm-up calls; for short kernels the
calls are captured in a CUDA graph first so host launch cost is excluded. Median of 3 such
batches. Run: python3 benchmarks/measure_kernels.py OUTDIR [--quick]

shared/validation/measure_kernels.py (bundled unchanged as src/trainsim/data/validation/), which took
kernels_h100_measured.csv, with two edits for the 36th session's H200 run: row ids prefixed by the
device (h100m / h200m) and the date of the run. Took benchmarks/h200_2026-11-27/kernels_measured_raw.csv
(BUDGET_S=290; benchmarks/mark_l2_resident.py marks its L2-resident rows).
"""
import csv, math, os, statistics, sys, time, traceback

import torch
import torch.nn.functional as F

OUT = sys.argv[1]
QUICK = "--quick" in sys.argv
os.makedirs(OUT, exist_ok=True)
dev = torch.device("cuda")
NAME = torch.cuda.get_device_name()
SRC = f"measured on {NAME}, torch {torch.__version__}, CUDA events, {time.strftime('%Y-%m-%d')}"
GPU = "h100-sxm-80gb" if "H100" in NAME else ("h200-sxm-141gb" if "H200" in NAME else NAME)
PFX = "h200m" if "H200" in NAME else "h100m"
COLS = ["id", "source", "gpu", "kind", "implementation", "dtype", "m", "n", "k", "groups", "batch",
        "seq_len", "heads", "kv_heads", "head_dim", "causal", "tokens", "hidden", "ffn", "experts",
        "top_k", "bytes", "measured_value", "measured_unit", "note"]
fh = open(os.path.join(OUT, "kernels_measured.csv"), "w", newline="")
W = csv.DictWriter(fh, fieldnames=COLS)
W.writeheader()
T0 = time.time()
BUDGET = float(os.environ.get("BUDGET_S", "420"))


def row(**kw):
    r = {c: "" for c in COLS}
    r.update(source=SRC, gpu=GPU)
    r.update(kw)
    W.writerow(r)
    fh.flush()


def timed(fn, reps=20, warm=3, graph=True):
    """Median seconds per call of fn (GPU time)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(warm):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = None
    if graph:
        try:
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                for _ in range(reps):
                    fn()
        except Exception:
            g = None
            torch.cuda.synchronize()
    out = []
    for _ in range(3):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        if g is not None:
            g.replay()
        else:
            for _ in range(reps):
                fn()
        b.record()
        torch.cuda.synchronize()
        out.append(a.elapsed_time(b) / 1e3 / reps)
    del g
    return statistics.median(out)


def over():
    return time.time() - T0 > BUDGET


# ---------------------------------------------------------------- GEMMs
def gemms():
    # (label, K_in, N_out) of a Linear y = x @ W^T, from real models, TP-sliced
    layers = []
    # model: hidden, attention width (heads*head_dim), qkv out, fc1 out (gate+up), ffn
    for model, h, att, qkv, fc1, ffn in [("llama3-8b", 4096, 4096, 6144, 28672, 14336),
                                         ("llama3-70b", 8192, 8192, 10240, 57344, 28672),
                                         ("gpt3-175b", 12288, 12288, 36864, 49152, 49152)]:
        for tp in (1, 2, 4, 8):
            if model == "gpt3-175b" and tp < 4:
                continue
            layers += [(f"{model}-tp{tp}-qkv", h, qkv // tp), (f"{model}-tp{tp}-proj", att // tp, h),
                       (f"{model}-tp{tp}-fc1", h, fc1 // tp), (f"{model}-tp{tp}-fc2", ffn // tp, h)]
    Ms = (2048, 8192) if QUICK else (1024, 4096, 8192, 16384)
    dtypes = ("bf16", "fp8")
    odd = [("odd", 128, 2112, 7168), ("odd", 257, 4096, 4096), ("odd", 1000, 5120, 5120), ("odd", 4096, 4096, 512),
           ("odd", 4096, 4096, 65536), ("odd", 8192, 8192, 8192), ("odd", 16384, 16384, 16384), ("odd", 3000, 3000, 3000),
           ("odd", 64, 8192, 8192), ("odd", 8192, 8192, 1024), ("odd", 8192, 8192, 2048), ("odd", 8192, 8192, 4096),
           ("odd", 8192, 8192, 16384), ("odd", 8192, 8192, 32768), ("odd", 6144, 6144, 6144), ("odd", 2048, 2048, 2048)]
    cases = []
    for (lab, K, N) in layers:
        for M in Ms:
            # forward x[M,K] W[N,K]^T ; dgrad dy[M,N] W[N,K] ; wgrad dy^T[N,M] x[M,K]
            cases += [(f"{lab}-fwd-m{M}", M, N, K), (f"{lab}-dgrad-m{M}", M, K, N), (f"{lab}-wgrad-m{M}", N, K, M)]
    cases += [(f"odd-m{m}-n{n}-k{k}", m, n, k) for _, m, n, k in odd]
    seen = set()
    for dt in dtypes:
        for name, m, n, k in cases:
            if over():
                return
            key = (dt, m, n, k)
            if key in seen:
                continue
            seen.add(key)
            try:
                if dt == "bf16":
                    a = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
                    b = torch.randn(n, k, device=dev, dtype=torch.bfloat16)
                    fn = lambda: torch.matmul(a, b.t())
                else:
                    if m % 16 or n % 16 or k % 16:
                        continue
                    a = torch.randn(m, k, device=dev).to(torch.float8_e4m3fn)
                    b = torch.randn(n, k, device=dev).to(torch.float8_e4m3fn)
                    one = torch.ones((), device=dev)
                    fn = lambda: torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
                t = timed(fn, reps=10 if m * n * k > 2e12 else 30)
                row(id=f"{PFX}-gemm-{dt}-{name}", kind="gemm", implementation="cublas", dtype=dt, m=m, n=n, k=k,
                    measured_value=f"{2 * m * n * k / t / 1e12:.1f}", measured_unit="TFLOP/s",
                    note=f"{name}; time {t * 1e6:.1f} us; torch.matmul / torch._scaled_mm (per-tensor scales), random normal data")
                del a, b
            except Exception as e:
                print("gemm fail", dt, name, repr(e)[:200], flush=True)


# ---------------------------------------------------------------- attention
def attention():
    from torch.nn.attention import SDPBackend, sdpa_kernel
    backs = {"flash2": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
             "mem_efficient": SDPBackend.EFFICIENT_ATTENTION}
    seqs = (1024, 4096, 16384) if QUICK else (512, 1024, 2048, 4096, 8192, 16384, 32768)
    heads = [(32, 8, 128), (8, 8, 128), (64, 8, 128), (16, 16, 64), (4, 1, 128), (128, 128, 64)]
    for impl, be in backs.items():
        for (hq, hkv, d) in heads:
            for s in seqs:
                for causal in (True, False):
                    if over():
                        return
                    if not causal and (s not in (2048, 8192) or (hq, hkv) not in ((32, 8), (16, 16))):
                        continue
                    b = max(1, 16384 // s)
                    if hq * b * s > 128 * 16384 * 2:
                        b = max(1, b // 2)
                    try:
                        q = torch.randn(b, hq, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
                        k = torch.randn(b, hkv, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
                        v = torch.randn(b, hkv, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
                        gqa = hq != hkv
                        with sdpa_kernel([be]):
                            fwd = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)
                            o = fwd()
                            go = torch.randn_like(o)
                            tf = timed(lambda: fwd().detach(), reps=10, graph=False)

                            def fb():
                                out = fwd()
                                torch.autograd.grad(out, (q, k, v), go)
                            tfb = timed(fb, reps=5, graph=False)
                        flops = 4 * b * s * s * hq * d * (0.5 if causal else 1)
                        tb = max(tfb - tf, 1e-9)
                        base = dict(kind="", implementation=impl, dtype="bf16", batch=b, seq_len=s, heads=hq, kv_heads=hkv,
                                    head_dim=d, causal=int(causal), measured_unit="TFLOP/s")
                        row(id=f"{PFX}-attn-{impl}-fwd-b{b}-s{s}-h{hq}-kv{hkv}-d{d}-c{int(causal)}", **{**base, "kind": "attention_fwd"},
                            measured_value=f"{flops / tf / 1e12:.1f}", note=f"F.scaled_dot_product_attention; time {tf * 1e6:.1f} us")
                        row(id=f"{PFX}-attn-{impl}-bwd-b{b}-s{s}-h{hq}-kv{hkv}-d{d}-c{int(causal)}", **{**base, "kind": "attention_bwd"},
                            measured_value=f"{2.5 * flops / tb / 1e12:.1f}", note=f"backward = (fwd+bwd) - fwd; time {tb * 1e6:.1f} us")
                        del q, k, v, o, go
                    except Exception as e:
                        print("attn fail", impl, hq, hkv, d, s, causal, repr(e)[:160], flush=True)


# ---------------------------------------------------------------- memory-bound
def memory_bound():
    bf = torch.bfloat16
    def rms_eager(x, w):
        v = x.float().pow(2).mean(-1, keepdim=True)
        return (x.float() * torch.rsqrt(v + 1e-5)).to(bf) * w
    rms_comp = torch.compile(rms_eager)
    for tokens in (4096, 16384):
        for h in (2048, 4096, 8192):
            if over():
                return
            x = torch.randn(tokens, h, device=dev, dtype=bf)
            w = torch.randn(h, device=dev, dtype=bf)
            nbytes = 2 * x.numel() * 2
            ops = {
                "rmsnorm-eager": (lambda: rms_eager(x, w), "torch"),
                "rmsnorm-F.rms_norm": (lambda: F.rms_norm(x, (h,), w, 1e-5), "torch"),
                "rmsnorm-compiled": (lambda: rms_comp(x, w), "triton"),
                "layernorm": (lambda: F.layer_norm(x, (h,), w, w), "torch"),
                "gelu": (lambda: F.gelu(x, approximate="tanh"), "torch"),
                "residual-add": (lambda: x + x, "torch"),
                "copy": (lambda: x.clone(), "torch"),
            }
            for name, (fn, impl) in ops.items():
                try:
                    t = timed(fn, reps=30)
                    row(id=f"{PFX}-mem-{name}-t{tokens}-h{h}", kind="memory_bound", implementation=impl, dtype="bf16", tokens=tokens,
                        hidden=h, bytes=nbytes, measured_value=f"{t * 1e3:.4f}", measured_unit="ms",
                        note=f"{name}; minimal bytes = read + write of a [tokens, hidden] bf16 tensor")
                except Exception as e:
                    print("mem fail", name, repr(e)[:160], flush=True)
            for ffn in (h * 2, h * 7 // 2):
                g = torch.randn(tokens, 2 * ffn, device=dev, dtype=bf)
                def swiglu():
                    a, b = g.chunk(2, -1)
                    return F.silu(a) * b
                try:
                    t = timed(swiglu, reps=30)
                    row(id=f"{PFX}-mem-swiglu-eager-t{tokens}-f{ffn}", kind="memory_bound", implementation="torch", dtype="bf16",
                        tokens=tokens, ffn=ffn, bytes=3 * tokens * ffn * 2, measured_value=f"{t * 1e3:.4f}", measured_unit="ms",
                        note="swiglu eager: silu(a) * b on a chunked [tokens, 2*ffn] input (two kernels)")
                except Exception as e:
                    print("swiglu fail", repr(e)[:160], flush=True)
    for tokens in (4096, 16384):
        for vocab in (32000, 128256, 151936):
            if over():
                return
            try:
                logits = torch.randn(tokens, vocab, device=dev, dtype=bf, requires_grad=True)
                tgt = torch.randint(0, vocab, (tokens,), device=dev)
                def ce():
                    return F.cross_entropy(logits.float(), tgt)
                tf = timed(lambda: ce().detach(), reps=10, graph=False)
                def cefb():
                    l = ce()
                    torch.autograd.grad(l, (logits,))
                tfb = timed(cefb, reps=5, graph=False)
                row(id=f"{PFX}-mem-crossentropy-fp32-t{tokens}-v{vocab}", kind="memory_bound", implementation="torch", dtype="bf16",
                    tokens=tokens, hidden=vocab, bytes=tokens * vocab * 2 * 2, measured_value=f"{tf * 1e3:.4f}", measured_unit="ms",
                    note="cross-entropy forward with fp32 upcast of bf16 logits (hidden column = vocab)")
                row(id=f"{PFX}-mem-crossentropy-fp32-fwdbwd-t{tokens}-v{vocab}", kind="memory_bound", implementation="torch", dtype="bf16",
                    tokens=tokens, hidden=vocab, bytes=tokens * vocab * 2 * 4, measured_value=f"{tfb * 1e3:.4f}", measured_unit="ms",
                    note="cross-entropy forward+backward with fp32 upcast (hidden column = vocab)")
                del logits
            except Exception as e:
                print("ce fail", repr(e)[:160], flush=True)
    # optimizer steps: fused AdamW over N fp32 params
    for n in (10**8, 10**9):
        for impl in ("fused", "foreach"):
            if over():
                return
            try:
                p = torch.nn.Parameter(torch.randn(n, device=dev))
                p.grad = torch.randn(n, device=dev)
                opt = torch.optim.AdamW([p], lr=1e-4, **{impl: True})
                opt.step()
                t = timed(opt.step, reps=5, graph=False)
                row(id=f"{PFX}-mem-adamw-{impl}-p{n}", kind="memory_bound", implementation="torch", dtype="fp32", tokens=n,
                    bytes=n * 4 * 7, measured_value=f"{t * 1e3:.4f}", measured_unit="ms",
                    note=f"torch.optim.AdamW({impl}=True).step() on one fp32 tensor of n params (tokens column = params); bytes = read p,g,m,v + write p,m,v")
                del p, opt
                torch.cuda.empty_cache()
            except Exception as e:
                print("adam fail", repr(e)[:160], flush=True)


for part in (gemms, attention, memory_bound):
    t = time.time()
    try:
        part()
    except Exception:
        traceback.print_exc()
    print(f"{part.__name__}: {time.time() - t:.1f} s", flush=True)
fh.close()
print("rows:", sum(1 for _ in open(os.path.join(OUT, "kernels_measured.csv"))) - 1)
