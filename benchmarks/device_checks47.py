"""The 47th session's prepared GPU run: PyTorch's embedding backward kernel by kernel, fused norms and
per-token fp8 casts beside a kernel that holds SMs, and FlashAttention-2 at llm-foundry's long sequences.

    python3 benchmarks/device_checks47.py --out $OUT --budget-s 200   # the run tool
    python benchmarks/device_checks47.py --dry-run                    # the plan; no GPU needed

Sections (each guarded as in ``device_checks.py``, whose timer and row helpers it reuses):

``emb_bwd``   ``aten.embedding_dense_backward`` (what ``nn.Embedding``'s backward calls) for vocabularies
    32,000-151,936, hidden 2,048-8,192 and 2,048-32,768 tokens, ids uniform or Zipf(1.1)-drawn (text's
    repeats), bf16: the whole op, the table's ``at::zeros`` fill alone, and the profiler's kernels by
    name (the sort, the segment sums, the fill): emb46's lead (the sort / segment part ran 4-5x the
    roofline in the bundled H100 record, and every other GPU prices it at the roofline).
``norm_cast``  a fused RMSNorm forward (one program a row, and a persistent grid of 2 CTAs an SM as
    Transformer Engine / apex launch it), a per-token 1x128 fp8 cast (amax, scale, e4m3 store), and the
    eager multi-kernel RMSNorm of Hugging Face's ``LlamaRMSNorm``, at DeepSeek-V3's hidden 7,168: alone,
    and beside a persistent spin kernel of 20 or 32 programs that each fill an SM's register file (so no
    other CTA shares their SMs; DeepEP's 20-SM budget): the memory-bound price beside an exchange
    (dsv3n44's `full_wave`: a persistent grid runs a second wave when SMs are held).
``emb_tp``     the backward of Megatron-core's vocab-parallel lookup (masked ids in one segment) at TP 1-8.
``attn_packed`` two attn_long cases with q, k, v as views of one packed tensor, with the backward's kernels.
``attn_long``  SDPA FlashAttention-2 and cuDNN, causal, forward and forward + backward, at llm-foundry's
    long rows' shapes (MPT-7B 32 x 128 at 32k / 64k tokens, MPT-30B 64 x 112 and MPT-760M 12 x 128 at
    8k): the kernels the public file's most-missed rows spend their time in.

Writes ``kernels.csv`` (rows in validation/README.md's kernels format) and ``device_checks47.json``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from device_checks import sectioned_main

EMB_VOCABS, EMB_HIDDENS, EMB_TOKENS = (32000, 50304, 128256, 151936), (2048, 4096, 8192), (2048, 8192, 32768)
ZIPF_S = 1.1
NORM_SHAPES = ((4096, 7168), (16384, 7168), (8192, 2048))
SPIN_PROGS = (20, 32)
ATTN_CASES = (("mpt7b-s65536", 1, 65536, 32, 128), ("mpt7b-s32768", 1, 32768, 32, 128),
              ("mpt30b-s8192", 1, 8192, 64, 112), ("mpt760m-s8192", 6, 8192, 12, 128))
BACKENDS = {"FLASH_ATTENTION": "flash2", "CUDNN_ATTENTION": "cudnn"}
START_S = 25
EMB_N = len(EMB_VOCABS) * len(EMB_HIDDENS) * len(EMB_TOKENS)
SECTIONS = {"emb_bwd": (45, f"{EMB_N} shapes x 2 id draws, op / fill / profiler kernels"),
            "norm_cast": (50, f"{len(NORM_SHAPES)} shapes x 4 kernels x alone / beside {SPIN_PROGS} spin programs"),
            "attn_long": (40, f"{len(ATTN_CASES)} long causal cases x 2 backends, fwd and fwd + bwd"),
            "emb_tp": (15, "4 shapes x TP 1/2/4/8, Megatron's masked ids, op / fill / kernels"),
            "attn_packed": (15, "2 cases x 2 backends, packed qkv, fwd + bwd and kernels")}


def _kernel_times(torch, fn, steps=3):
    """{kernel name: microseconds a call} of ``fn`` by torch.profiler, over ``steps`` calls."""
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            fn()
        torch.cuda.synchronize()
    out: dict[str, float] = {}
    for e in prof.events():
        if e.device_type.name == "CUDA":
            out[e.name[:110]] = out.get(e.name[:110], 0.0) + e.time_range.elapsed_us() / steps
    return {k: round(v, 2) for k, v in sorted(out.items(), key=lambda kv: -kv[1])}


def _ids(torch, vocab, tokens, draw):
    if draw == "uniform":
        return torch.randint(0, vocab, (tokens,), device="cuda")
    p = 1.0 / torch.arange(1, vocab + 1, device="cuda", dtype=torch.float32) ** ZIPF_S
    perm = torch.randperm(vocab, device="cuda")  # frequent ids spread over the table
    return perm[torch.multinomial(p, tokens, replacement=True)]


def emb_bwd(torch, ctx, res):
    tm, op = ctx["timer"], torch.ops.aten.embedding_dense_backward
    res.update(failed=[], cases={})
    for v in EMB_VOCABS:
        for h in EMB_HIDDENS:
            for t in EMB_TOKENS:
                g = torch.randn(t, h, device="cuda", dtype=torch.bfloat16)
                for draw in ("uniform", "zipf"):
                    case = f"v{v}-h{h}-t{t}-{draw}"
                    if ctx["over"]():
                        res["failed"].append(f"{case}: budget spent")
                        continue
                    try:
                        ids = _ids(torch, v, t, draw)
                        unique = int(torch.unique(ids).numel())

                        def bwd(g=g, ids=ids, v=v):
                            return op(g, ids, v, -1, False)
                        t_op = tm.warm(bwd, reps=10)
                        t_fill = tm.warm(lambda v=v, h=h: torch.zeros(v, h, device="cuda", dtype=torch.bfloat16),
                                         reps=10)
                        kern = _kernel_times(torch, bwd) if h == 4096 or t == 32768 else None
                    except Exception as exc:  # noqa: BLE001
                        res["failed"].append(f"{case}: {exc!r}"[:300])
                        continue
                    res["cases"][case] = {"vocab": v, "hidden": h, "tokens": t, "draw": draw, "unique_ids": unique,
                                          "op_us": round(t_op * 1e6, 2), "fill_us": round(t_fill * 1e6, 2),
                                          "kernels_us": kern}
                del g


def _spin():
    import triton
    import triton.language as tl

    @triton.jit
    def spin_kernel(out, iters, WIDTH: tl.constexpr):
        acc = tl.arange(0, WIDTH).to(tl.float32) * 1e-6
        for _ in range(iters):
            acc = acc * 0.9999999 + 1e-7
        tl.store(out + tl.program_id(0) * WIDTH + tl.arange(0, WIDTH), acc)
    return spin_kernel


def _norm_kernels():
    import triton
    import triton.language as tl

    @triton.jit
    def rmsnorm_rows(x, w, y, rows, cols, eps, STRIDE_PROGS: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        mask = offs < cols
        wt = tl.load(w + offs, mask=mask, other=0.0).to(tl.float32)
        for r in range(tl.program_id(0), rows, STRIDE_PROGS):
            xr = tl.load(x + r * cols + offs, mask=mask, other=0.0).to(tl.float32)
            inv = 1.0 / tl.sqrt(tl.sum(xr * xr, axis=0) / cols + eps)
            tl.store(y + r * cols + offs, (xr * inv * wt).to(tl.bfloat16), mask=mask)

    @triton.jit
    def cast_1x128(x, q, s, cols, groups, GP2: tl.constexpr):
        r = tl.program_id(0)
        g = tl.arange(0, GP2)
        offs = g[:, None] * 128 + tl.arange(0, 128)[None, :]
        mask = offs < cols
        xr = tl.load(x + r * cols + offs, mask=mask, other=0.0).to(tl.float32)
        scale = tl.maximum(tl.max(tl.abs(xr), axis=1), 1e-4) / 448.0
        tl.store(q + r * cols + offs, (xr / scale[:, None]).to(tl.float8e4nv), mask=mask)
        tl.store(s + r * groups + g, scale, mask=g < groups)
    return rmsnorm_rows, cast_1x128


def norm_cast(torch, ctx, res):
    rms, cast = _norm_kernels()
    spin = _spin()
    spin_width = 32 * 32 * 64  # 1,024 threads x 64 live floats: a whole register file
    sink = torch.empty(max(SPIN_PROGS) * spin_width, device="cuda", dtype=torch.float32)
    res.update(failed=[], cases={})
    compiled = spin[(1,)](sink, 10, WIDTH=spin_width, num_warps=32)  # Triton returns the compiled kernel
    for iters in (16, 17, 20000):  # compile each integer specialisation before anything is timed
        spin[(1,)](sink, iters, WIDTH=spin_width, num_warps=32)
    torch.cuda.synchronize()
    res["spin_regs"] = getattr(compiled, "n_regs", None)
    res["spin_spills"] = getattr(compiled, "n_spills", None)
    side, main = torch.cuda.Stream(), torch.cuda.current_stream()

    def events_around(fn, stream):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        with torch.cuda.stream(stream):
            a.record()
            fn()
            b.record()
        return a, b

    a, b = events_around(lambda: spin[(1,)](sink, 20000, WIDTH=spin_width, num_warps=32), side)
    torch.cuda.synchronize()
    spin_us_per_iter = a.elapsed_time(b) * 1e3 / 20000
    res["spin_us_per_iter"] = round(spin_us_per_iter, 5)
    for rows, cols in NORM_SHAPES:
        _norm_shape(torch, ctx, res, (rms, cast), (spin, sink, spin_width, spin_us_per_iter, side, main),
                    events_around, rows, cols)


def _norm_shape(torch, ctx, res, kernels2, spinning, events_around, rows, cols):
    """One (rows, cols) shape's four kernels, alone and beside the spin."""
    import triton
    rms, cast = kernels2
    spin, sink, spin_width, spin_us_per_iter, side, main = spinning
    sms = ctx["sms"]
    x = torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(cols, device="cuda", dtype=torch.bfloat16)
    y = torch.empty_like(x)
    q = torch.empty(rows, cols, device="cuda", dtype=torch.float8_e4m3fn)
    s = torch.empty(rows, cols // 128, device="cuda", dtype=torch.float32)
    block, gp2 = triton.next_power_of_2(cols), triton.next_power_of_2(cols // 128)
    kernels = {
        "rmsnorm_rows": lambda: rms[(rows,)](x, w, y, rows, cols, 1e-6, STRIDE_PROGS=rows, BLOCK=block, num_warps=8),
        "rmsnorm_persistent": lambda: rms[(2 * sms,)](x, w, y, rows, cols, 1e-6, STRIDE_PROGS=2 * sms,
                                                      BLOCK=block, num_warps=8),
        "cast_1x128": lambda: cast[(rows,)](x, q, s, cols, cols // 128, GP2=gp2, num_warps=8),
        "eager_rmsnorm": lambda: (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6)
                                  ).to(torch.bfloat16) * w,
    }
    moved = {"rmsnorm_rows": 4 * rows * cols, "rmsnorm_persistent": 4 * rows * cols,
             "cast_1x128": 3 * rows * cols + 4 * rows * cols // 128, "eager_rmsnorm": 4 * rows * cols}
    reps = 50
    for name, fn in kernels.items():
        case = f"{name}-{rows}x{cols}"
        if ctx["over"]():
            res["failed"].append(f"{case}: budget spent")
            continue
        try:
            alone = ctx["timer"].warm(fn, reps=20)
            entry = {"alone_us": round(alone * 1e6, 2), "bytes": moved[name],
                     "GBps_alone": round(moved[name] / alone / 1e9, 1)}
            for nprog in SPIN_PROGS:
                iters = int(1.5 * reps * alone * 1e6 / spin_us_per_iter) + 100
                torch.cuda.synchronize()
                sa, sb = events_around(lambda n=nprog, i=iters: spin[(n,)](sink, i, WIDTH=spin_width, num_warps=32),
                                       side)  # queued first; the main stream's loop follows
                ka, kb = events_around(lambda f=fn: [f() for _ in range(reps)], main)
                torch.cuda.synchronize()
                beside = ka.elapsed_time(kb) * 1e-3 / reps
                entry[f"beside{nprog}_us"] = round(beside * 1e6, 2)
                entry[f"beside{nprog}_slowdown"] = round(beside / alone, 4)
                entry[f"spin{nprog}_ms"] = round(sa.elapsed_time(sb), 3)
                entry[f"spin{nprog}_outlasts"] = sa.elapsed_time(sb) > ka.elapsed_time(kb)
            entry["sm_share_slowdown"] = {n: round(sms / (sms - n), 4) for n in SPIN_PROGS}
            res["cases"][case] = entry
            if name != "eager_rmsnorm":
                ctx["add"](id=f"{ctx['tag']}-{case}", kind="memory_bound", implementation="triton",
                           dtype="bf16", tokens=rows, hidden=cols, bytes=moved[name],
                           measured_value=f"{alone * 1e3:.5g}", measured_unit="ms",
                           note=f"{name}: a Triton kernel of benchmarks/device_checks47.py, alone, L2 warm "
                                f"({rows * cols * 2 / 1e6:.0f} MB input), 20 calls between two events, median of 3")
        except Exception as exc:  # noqa: BLE001
            res["failed"].append(f"{case}: {exc!r}"[:300])


def attn_long(torch, ctx, res):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    attn, tm = torch.nn.functional.scaled_dot_product_attention, ctx["timer"]
    res.update(failed=[], times={})
    for label, b, s, h, d in ATTN_CASES:
        qkv = tuple(torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                    for _ in range(3))
        flops = 4 * b * s * s * h * d * 0.5
        for backend, impl in BACKENDS.items():
            case = f"{impl}-{label}"
            if ctx["over"]():
                res["failed"].append(f"{case}: budget spent")
                continue
            try:
                def fwd(qkv=qkv):
                    return attn(*qkv, is_causal=True)
                with sdpa_kernel([getattr(SDPBackend, backend)]):
                    go = torch.randn_like(fwd())
                    reps = 2 if s > 16384 else 5
                    tf = tm.warm(lambda: fwd().detach(), reps=reps)
                    tfb = tm.warm(lambda g=go, x=qkv: torch.autograd.grad(fwd(), x, g), reps=reps)
            except Exception as exc:  # noqa: BLE001
                res["failed"].append(f"{case}: {exc!r}"[:300])
                continue
            res["times"][case] = {"fwd_ms": round(tf * 1e3, 3), "fwd_bwd_ms": round(tfb * 1e3, 3),
                                  "fwd_tflops": round(flops / tf / 1e12, 1),
                                  "bwd_tflops": round(2.5 * flops / (tfb - tf) / 1e12, 1) if tfb > tf else None}
            cells = {"implementation": impl, "dtype": "bf16", "batch": b, "seq_len": s, "heads": h, "kv_heads": h,
                     "head_dim": d, "causal": 1, "measured_unit": "TFLOP/s"}
            how = "SDPA, causal, q, k, v separate leaves, eager calls between two events, median of 3"
            ctx["add"](id=f"{ctx['tag']}-{case}-fwd", kind="attention_fwd", measured_value=f"{flops / tf / 1e12:.5g}",
                       note=f"{how}; {tf * 1e3:.3f} ms", **cells)
            if tfb > tf:
                ctx["add"](id=f"{ctx['tag']}-{case}-bwd", kind="attention_bwd",
                           measured_value=f"{2.5 * flops / (tfb - tf) / 1e12:.5g}",
                           note=f"{how}; forward + backward minus forward, {(tfb - tf) * 1e3:.3f} ms", **cells)
        del qkv


def emb_tp(torch, ctx, res):
    """Megatron-core's vocab-parallel lookup at TP 1-8: a rank's table holds vocab / tp rows, the
    ids outside it are masked to row 0 (``VocabParallelEmbedding.forward``), so the backward scatters
    every token, (1 - 1/tp) of them into one segment; ids Zipf(1.1)-drawn."""
    tm, op = ctx["timer"], torch.ops.aten.embedding_dense_backward
    res.update(failed=[], cases={})
    for v, h, t in ((128256, 4096, 8192), (128256, 8192, 16384), (50304, 12288, 2048), (151936, 4096, 32768)):
        g = torch.randn(t, h, device="cuda", dtype=torch.bfloat16)
        ids = _ids(torch, v, t, "zipf")
        for tp in (1, 2, 4, 8):
            case = f"v{v}-h{h}-t{t}-tp{tp}"
            if ctx["over"]():
                res["failed"].append(f"{case}: budget spent")
                continue
            part = v // tp
            local = torch.where(ids < part, ids, torch.zeros_like(ids))  # rank 0's slice; the rest masked
            try:
                t_op = tm.warm(lambda g=g, i=local, p=part: op(g, i, p, -1, False), reps=10)
                t_fill = tm.warm(lambda p=part, h=h: torch.zeros(p, h, device="cuda", dtype=torch.bfloat16), reps=10)
                kern = _kernel_times(torch, lambda g=g, i=local, p=part: op(g, i, p, -1, False))
            except Exception as exc:  # noqa: BLE001
                res["failed"].append(f"{case}: {exc!r}"[:300])
                continue
            res["cases"][case] = {"vocab": v, "hidden": h, "tokens": t, "tp": tp,
                                  "in_slice": int((ids < part).sum()), "op_us": round(t_op * 1e6, 2),
                                  "fill_us": round(t_fill * 1e6, 2), "kernels_us": kern}
        del g


def attn_packed(torch, ctx, res):
    """FA2 / cuDNN forward + backward with q, k, v as views of one packed (b, s, 3, h, d) tensor (the
    backward then stacks the three gradients) against separate leaves, at two of attn_long's cases."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    attn, tm = torch.nn.functional.scaled_dot_product_attention, ctx["timer"]
    res.update(failed=[], times={})
    for label, b, s, h, d in (ATTN_CASES[1], ATTN_CASES[3]):
        packed = torch.randn(b, s, 3, h, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        for backend, impl in BACKENDS.items():
            case = f"{impl}-{label}-packed"
            try:
                def fwd(x=packed):
                    q, k, v = (t.transpose(1, 2) for t in x.unbind(2))
                    return attn(q, k, v, is_causal=True)
                with sdpa_kernel([getattr(SDPBackend, backend)]):
                    go = torch.randn_like(fwd())
                    tf = tm.warm(lambda: fwd().detach(), reps=3)
                    tfb = tm.warm(lambda g=go, x=packed: torch.autograd.grad(fwd(), x, g), reps=3)
                    kern = _kernel_times(torch, lambda g=go, x=packed: torch.autograd.grad(fwd(), x, g), steps=1)
            except Exception as exc:  # noqa: BLE001
                res["failed"].append(f"{case}: {exc!r}"[:300])
                continue
            res["times"][case] = {"fwd_ms": round(tf * 1e3, 3), "fwd_bwd_ms": round(tfb * 1e3, 3), "kernels_us": kern}
        del packed


FUNCS = {"emb_bwd": emb_bwd, "norm_cast": norm_cast, "attn_long": attn_long, "emb_tp": emb_tp,
         "attn_packed": attn_packed}


def _digest(report: dict) -> dict:
    secs = report["sections"]
    norm = secs.get("norm_cast", {})
    return {"norm_cast": {k: {f: v[f] for f in v if "slowdown" in f or f == "alone_us"}
                          for k, v in norm.get("cases", {}).items()},
            "spin": {k: norm.get(k) for k in ("spin_regs", "spin_spills", "spin_us_per_iter")},
            "attn_long": secs.get("attn_long", {}).get("times"),
            "emb_n": len(secs.get("emb_bwd", {}).get("cases", {}))}


def main(argv: list[str] | None = None) -> int:
    return sectioned_main(__doc__, "device_checks47", "dc47", SECTIONS, FUNCS, START_S, 200.0, argv, _digest)

if __name__ == "__main__":
    sys.exit(main())
