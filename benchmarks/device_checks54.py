"""The 54th session's prepared GPU run: attention with and without dropout by implementation at
GQA shapes, and one-kernel grouped GEMMs against a per-expert loop by group size.

    python3 benchmarks/device_checks54.py --out $OUT --budget-s 240   # the run tool
    python benchmarks/device_checks54.py --dry-run                    # the plan; no GPU needed

Sections (each guarded as in ``device_checks.py``, whose timer and row helpers it reuses):

``packages``   which of Transformer Engine, flash-attn, DeepSpeed, apex, Triton the image holds (their
    versions), so the attention section says which implementations it could time.
``attn_dropout`` causal attention at b 1, 16 query heads, 16 or 4 KV heads, head dim 128, 4,096 and
    8,192 tokens, dropout 0 and 0.1, forward and forward + backward: SDPA's FlashAttention-2, cuDNN and
    memory-efficient backends, and Transformer Engine's ``DotProductAttention`` (fused = cuDNN, flash)
    and flash-attn's ``flash_attn_func`` where the image has them; the profiler's kernel names of the
    cuDNN case with and without dropout. flagperf53's lead (TransformerEngine #3312 measured 1.03x on
    an H200 where trainsim charges ~1.4x) and dropout40's open FA2 backward factor.
``grouped``    bf16 ``torch._grouped_mm`` (one CUTLASS kernel over every expert) against a loop of
    ``torch.mm`` a group and one dense ``torch.mm`` of the same rows, at five MoE models' expert shapes
    (fc1 gated and fc2), 8-128 groups of 128-2,048 rows: ``grouped.GROUPED_OF_GEMM['cutlass']`` (0.76,
    fitted to two published H100 rows) and the per-expert ``loop`` against the dense rate.
``grouped_graph`` the ``grouped`` cases as CUDA graphs (no host): ``torch._grouped_mm``, one ``torch.mm`` a
    group on one stream (``loop``) and round-robin on 4 (``multi_stream``, Transformer Engine's GroupedLinear).
``grouped_ragged`` uneven groups from top-8 routing of random logits (expert skew 0, 0.5, 1) against equal ones.
``attn_grid``  cuDNN and FA2 through SDPA, causal, dropout 0 and 0.1, batch 1-4 x 4-32 heads x 2,048-16,384
    tokens x head dims 64, 128 and MLA's 192 (q, k) / 128 (v): small-head grids below a wave of SMs (SimuMax's
    4-8-head rows) and the dropout factor's spread.
``moe_block``  a dropless MoE layer's forward after its router with one grouped kernel a projection (torchtitan's
    way), at seven layer shapes incl. VeOmni's and Liger's published ones: eager and as a CUDA graph.
``grouped_wgrad`` the weight gradient as one ``torch._grouped_mm`` with the groups along the reduction.
``grouped_fp8`` ``torch._scaled_grouped_mm`` with row-wise scales, fast accumulation off and on, at
    three of those shapes: ``grouped.FP8_SERIAL_PROMOTION``'s claim that the slow-accumulation kernel
    runs at the 16-bit fraction stretched by its promotion.

Writes ``kernels.csv`` (rows in validation/README.md's kernels format) and ``device_checks54.json``.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from device_checks import sectioned_main
from device_checks47 import _kernel_times

ATTN_CASES = ((4096, 16, 16), (4096, 16, 4), (8192, 16, 16), (8192, 16, 4))  # (seq, heads, kv heads)
HEAD_DIM, DROPOUTS = 128, (0.0, 0.1)
SDPA_BACKENDS = {"FLASH_ATTENTION": "flash2", "CUDNN_ATTENTION": "cudnn", "EFFICIENT_ATTENTION": "sdpa_efficient"}
EXPERT_SHAPES = {  # model: (hidden, expert ffn) from each model's published config
    "qwen3-30b-a3b": (2048, 768), "qwen3-235b-a22b": (4096, 1536), "deepseek-v3": (7168, 2048),
    "mixtral-8x7b": (4096, 14336), "gpt-oss-120b": (2880, 2880)}
GROUPS, ROWS = (8, 32, 128), (128, 512, 2048)
MAX_ROWS = 65536
FP8_MODELS = ("qwen3-30b-a3b", "deepseek-v3", "mixtral-8x7b")
PACKAGES = ("transformer_engine", "flash_attn", "deepspeed", "apex", "triton", "transformers")
MOE_CASES = (  # (label, tokens, hidden, expert ffn, experts, top k)
    ("qwen3-30b-a3b-t4096", 4096, 2048, 768, 128, 8), ("qwen3-30b-a3b-t16384", 16384, 2048, 768, 128, 8),
    ("qwen3-30b-a3b-t32768", 32768, 2048, 768, 128, 8), ("veomni-e512-t32768", 32768, 2048, 512, 512, 10),
    ("deepseek-v3-ep8-t8192", 8192, 7168, 2048, 32, 8), ("mixtral-8x7b-t8192", 8192, 4096, 14336, 8, 2),
    ("gpt-oss-120b-ep4-t8192", 8192, 2880, 2880, 32, 4))
START_S = 25
SECTIONS = {"packages": (2, "versions of " + ", ".join(PACKAGES)),
            "attn_dropout": (45, (f"{len(ATTN_CASES)} GQA cases x SDPA/TE/flash-attn x dropout {DROPOUTS}, "
                                  "fwd and fwd + bwd, cuDNN kernel names")),
            "grouped": (70, (f"{len(EXPERT_SHAPES)} models x fc1/fc2 x groups {GROUPS} x rows {ROWS}: "
                             "_grouped_mm / loop / dense")),
            "grouped_fp8": (25, f"{len(FP8_MODELS)} models x fc1/fc2 x groups x rows, fast accum off / on"),
            "grouped_graph": (40, "the grouped cases as CUDA graphs: _grouped_mm, a mm a group on 1 and 4 streams"),
            "grouped_ragged": (15, "top-8 routed (skew 0/0.5/1) vs equal groups, 2 models x 32/128 experts"),
            "attn_grid": (90, "cuDNN / FA2 x dropout 0 / 0.1 over batch x heads x seq x head dims (MLA 192/128)"),
            "grouped_fp8_graph": (40, "grouped_fp8 as CUDA graphs; cuobjdump's registers / local memory"),
            "attn_grid_graph": (90, "attn_grid with CUDA-graph replays (no host)"),
            "moe_block": (40, f"{len(MOE_CASES)} MoE layer shapes: permute, grouped fc1/fc2, unpermute; eager, graph"),
            "grouped_wgrad": (30, "weight gradients as one _grouped_mm (groups along M) vs one dense GEMM")}


def packages(torch, ctx, res):
    from importlib import metadata
    res["versions"] = {}
    for name in PACKAGES:
        try:
            mod = importlib.import_module(name)
            res["versions"][name] = str(getattr(mod, "__version__", None) or metadata.version(name))
        except Exception as exc:  # noqa: BLE001
            res["versions"][name] = f"absent: {exc!r}"[:160]


def _te_attention(torch, heads, kv, p):
    """A Transformer Engine ``DotProductAttention`` callable on (s, b, h, d) tensors, or None."""
    try:
        import transformer_engine.pytorch as te
    except Exception:  # noqa: BLE001
        return None
    mod = te.DotProductAttention(num_attention_heads=heads, kv_channels=HEAD_DIM, num_gqa_groups=kv,
                                 attention_dropout=p, qkv_format="sbhd", attn_mask_type="causal")
    return lambda q, k, v: mod(q, k, v)


def _attn_impls(torch, heads, kv, p):
    """{implementation: (layout, callable)}: layout ``bhsd`` for SDPA, ``sbhd`` for TE, ``bshd`` for
    flash-attn."""
    import os

    from torch.nn.attention import SDPBackend, sdpa_kernel
    sdpa = torch.nn.functional.scaled_dot_product_attention
    impls = {}
    for backend, name in SDPA_BACKENDS.items():
        def call(q, k, v, backend=backend):
            with sdpa_kernel([getattr(SDPBackend, backend)]):
                if kv != heads:
                    try:
                        return sdpa(q, k, v, is_causal=True, dropout_p=p, enable_gqa=True)
                    except RuntimeError:  # a backend without GQA: the expanded heads it would need
                        k, v = (t.repeat_interleave(heads // kv, dim=1) for t in (k, v))
                return sdpa(q, k, v, is_causal=True, dropout_p=p)
        impls[name] = ("bhsd", call)
    for env, name in (({"NVTE_FUSED_ATTN": "1", "NVTE_FLASH_ATTN": "0"}, "te_fused"),
                      ({"NVTE_FUSED_ATTN": "0", "NVTE_FLASH_ATTN": "1"}, "te_flash")):
        os.environ.update(env)
        te_call = _te_attention(torch, heads, kv, p)
        if te_call is not None:
            impls[name] = ("sbhd", lambda q, k, v, c=te_call, env=env: (os.environ.update(env), c(q, k, v))[1])
    try:
        from flash_attn import flash_attn_func
    except Exception:  # noqa: BLE001 - the packages section records its absence
        return impls
    impls["flash_attn"] = ("bshd", lambda q, k, v: flash_attn_func(q, k, v, dropout_p=p, causal=True))
    return impls


def _qkv(torch, layout, s, heads, kv):
    shape = {"bhsd": lambda h: (1, h, s, HEAD_DIM), "sbhd": lambda h: (s, 1, h, HEAD_DIM),
             "bshd": lambda h: (1, s, h, HEAD_DIM)}[layout]
    return tuple(torch.randn(*shape(h), device="cuda", dtype=torch.bfloat16, requires_grad=True)
                 for h in (heads, kv, kv))


def attn_dropout(torch, ctx, res):
    tm = ctx["timer"]
    res.update(failed=[], times={}, ratio={}, kernels={})
    for s, heads, kv in ATTN_CASES:
        flops = 4 * s * s * heads * HEAD_DIM * 0.5
        for p in DROPOUTS:
            for impl, (layout, call) in _attn_impls(torch, heads, kv, p).items():
                case = f"{impl}-s{s}-h{heads}-kv{kv}-p{p}"
                if ctx["over"]():
                    res["failed"].append(f"{case}: budget spent")
                    continue
                try:
                    qkv = _qkv(torch, layout, s, heads, kv)
                    go = torch.randn_like(call(*qkv))
                    tf = tm.warm(lambda c=call, x=qkv: c(*x).detach(), reps=5)
                    tfb = tm.warm(lambda c=call, x=qkv, g=go: torch.autograd.grad(c(*x), x, g), reps=5)
                    if impl == "cudnn" and s == 8192 and kv == 4:
                        res["kernels"][case] = _kernel_times(
                            torch, lambda c=call, x=qkv, g=go: torch.autograd.grad(c(*x), x, g), steps=2)
                except Exception as exc:  # noqa: BLE001
                    res["failed"].append(f"{case}: {exc!r}"[:300])
                    continue
                res["times"][case] = {"fwd_ms": round(tf * 1e3, 4), "fwd_bwd_ms": round(tfb * 1e3, 4),
                                      "bwd_ms": round((tfb - tf) * 1e3, 4),
                                      "fwd_tflops": round(flops / tf / 1e12, 1),
                                      "bwd_tflops": round(2.5 * flops / (tfb - tf) / 1e12, 1) if tfb > tf else None}
                cells = {"implementation": impl, "dtype": "bf16", "batch": 1, "seq_len": s, "heads": heads,
                         "kv_heads": kv, "head_dim": HEAD_DIM, "causal": 1, "measured_unit": "TFLOP/s"}
                how = f"causal, dropout {p}, layout {layout}, eager calls between two events, median of 3 x 5"
                if p == 0.0:
                    ctx["add"](id=f"{ctx['tag']}-{case}-fwd", kind="attention_fwd",
                               measured_value=f"{flops / tf / 1e12:.5g}", note=f"{how}; {tf * 1e3:.3f} ms", **cells)
                    if tfb > tf:
                        ctx["add"](id=f"{ctx['tag']}-{case}-bwd", kind="attention_bwd",
                                   measured_value=f"{2.5 * flops / (tfb - tf) / 1e12:.5g}",
                                   note=f"{how}; forward + backward minus forward, {(tfb - tf) * 1e3:.3f} ms",
                                   **cells)
    for case, t in res["times"].items():
        if case.endswith("-p0.1") and (base := res["times"].get(case[:-len("0.1")] + "0.0")):
            res["ratio"][case[:-len("-p0.1")]] = {f: round(t[f] / base[f], 4)
                                                  for f in ("fwd_ms", "bwd_ms", "fwd_bwd_ms") if base[f] > 0}


def _grouped_inputs(torch, groups, rows, k, n, dtype):
    a = torch.randn(groups * rows, k, device="cuda").to(dtype)
    b = torch.randn(groups, n, k, device="cuda").to(dtype).transpose(-2, -1)  # nn.Linear weights, (k, n) views
    offs = torch.arange(rows, groups * rows + 1, rows, device="cuda", dtype=torch.int32)
    return a, b, offs


def _expert_gemms():
    """(model, projection, groups, rows, k, n) of every grouped case within ``MAX_ROWS`` rows."""
    out = []
    for model, (h, f) in EXPERT_SHAPES.items():
        for proj, (k, n) in (("fc1", (h, 2 * f)), ("fc2", (f, h))):
            out += [(model, proj, g, r, k, n) for g in GROUPS for r in ROWS if g * r <= MAX_ROWS]
    return out


def _time_grouped(torch, tm, g, r, k, n, reps):
    """Seconds of one bf16 ``torch._grouped_mm`` over ``g`` groups of ``r`` rows, of a loop of one
    ``torch.mm`` a group, and of one dense ``torch.mm`` of all the rows."""
    a, b, offs = _grouped_inputs(torch, g, r, k, n, torch.bfloat16)
    dense_b, chunks = b[0].contiguous(), a.split(r)
    t_grp = tm.warm(lambda: torch._grouped_mm(a, b, offs=offs), reps=reps)
    t_loop = tm.warm(lambda: [torch.mm(c, b[i]) for i, c in enumerate(chunks)], reps=max(2, reps // 4))
    return t_grp, t_loop, tm.warm(lambda: torch.mm(a, dense_b), reps=reps)


def _time_scaled_grouped(torch, tm, g, r, k, n, fast, graph=False):
    """Seconds of one fp8 ``torch._scaled_grouped_mm`` with row-wise (unit) scales (eager calls, or one
    CUDA graph's replays)."""
    a, b, offs = _grouped_inputs(torch, g, r, k, n, torch.float8_e4m3fn)
    sa = torch.ones(g * r, device="cuda", dtype=torch.float32)
    sb = torch.ones(g, n, device="cuda", dtype=torch.float32)
    return tm.warm(lambda: torch._scaled_grouped_mm(a, b, sa, sb, offs=offs, out_dtype=torch.bfloat16,
                                                    use_fast_accum=fast), reps=10, graph=graph)


def grouped(torch, ctx, res):
    tm = ctx["timer"]
    res.update(failed=[], cases={})
    for model, proj, g, r, k, n in _expert_gemms():
        case = f"{model}-{proj}-g{g}-r{r}"
        if ctx["over"]():
            res["failed"].append(f"{case}: budget spent")
            continue
        flops = 2.0 * g * r * k * n
        try:
            t_grp, t_loop, t_dense = _time_grouped(torch, tm, g, r, k, n, max(3, min(20, int(2e12 / flops))))
        except Exception as exc:  # noqa: BLE001
            res["failed"].append(f"{case}: {exc!r}"[:300])
            continue
        res["cases"][case] = {"groups": g, "rows": r, "k": k, "n": n,
                              "grouped_us": round(t_grp * 1e6, 2), "loop_us": round(t_loop * 1e6, 2),
                              "dense_us": round(t_dense * 1e6, 2),
                              "grouped_of_dense": round(t_dense / t_grp, 4), "loop_of_dense": round(t_dense / t_loop, 4)}
        for impl, t in (("cutlass", t_grp), ("loop", t_loop)):
            ctx["add"](id=f"{ctx['tag']}-{case}-{impl}", kind="gemm_grouped", implementation=impl, dtype="bf16",
                       m=g * r, n=n, k=k, groups=g, measured_value=f"{flops / t / 1e12:.5g}", measured_unit="TFLOP/s",
                       note=f"{'torch._grouped_mm' if impl == 'cutlass' else 'torch.mm a group'}, {model} {proj}, "
                            f"{r} rows a group, L2 warm; {t * 1e6:.1f} us; dense torch.mm {t_dense * 1e6:.1f} us")


def grouped_fp8_graph(torch, ctx, res):
    """``grouped_fp8`` timed as CUDA-graph replays (run 1's eager fp8 rows under ~100 us were the host's),
    and the resource use cuobjdump reports for the image's grouped-GEMM kernels where the image has it."""
    grouped_fp8(torch, ctx, res, graph=True)
    res["resource_usage"] = _grouped_kernel_resources(torch)


def _grouped_kernel_resources(torch):
    """Lines of ``cuobjdump --dump-resource-usage`` on libtorch_cuda.so for the grouped-GEMM kernels
    (registers, stack, local memory: a spill shows as LOCAL > 0), or why there are none."""
    import glob
    import os
    import shutil
    import subprocess
    tool = shutil.which("cuobjdump") or next(iter(glob.glob("/usr/local/cuda*/bin/cuobjdump")), None)
    if tool is None:
        return "no cuobjdump in the image"
    lib = os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cuda.so")
    try:
        out = subprocess.run([tool, "--dump-resource-usage", lib], check=False, capture_output=True, text=True,
                             timeout=120).stdout
    except Exception as exc:  # noqa: BLE001
        return f"cuobjdump failed: {exc!r}"[:300]
    lines = out.splitlines()
    keep = [(lines[i - 1] if i else "")[:400] + " || " + ln.strip()[:300] for i, ln in enumerate(lines)
            if "REG:" in ln and i and any(t in lines[i - 1] for t in ("GroupMM", "grouped", "Grouped", "PtrArray"))]
    return keep[:400] or f"{len(lines)} lines, none for a grouped kernel"


def grouped_fp8(torch, ctx, res, graph=False):
    tm = ctx["timer"]
    res.update(failed=[], cases={})
    for model, proj, g, r, k, n in _expert_gemms():
        if model not in FP8_MODELS or r == 128:
            continue
        flops = 2.0 * g * r * k * n
        try:
            times = {}
            for fast in (False, True):
                case = f"{model}-{proj}-g{g}-r{r}-fast{int(fast)}"
                if ctx["over"]():
                    res["failed"].append(f"{case}: budget spent")
                    continue
                times[fast] = _time_scaled_grouped(torch, tm, g, r, k, n, fast, graph)
                ctx["add"](id=f"{ctx['tag']}-{case}{'-graph' if graph else ''}", kind="gemm_grouped", implementation="cutlass", dtype="fp8",
                           m=g * r, n=n, k=k, groups=g, measured_value=f"{flops / times[fast] / 1e12:.5g}",
                           measured_unit="TFLOP/s",
                           note=f"torch._scaled_grouped_mm, row-wise scales, use_fast_accum={fast}, {model} {proj}, "
                                f"{r} rows a group, L2 warm{', one CUDA graph' if graph else ''}; "
                                f"{times[fast] * 1e6:.1f} us")
        except Exception as exc:  # noqa: BLE001
            res["failed"].append(f"{model}-{proj}-g{g}-r{r}: {exc!r}"[:300])
            continue
        res["cases"][f"{model}-{proj}-g{g}-r{r}"] = {f"fast{int(f)}_us": round(t * 1e6, 2) for f, t in times.items()}


def _streams_loop(torch, a_chunks, b, outs, streams):
    """One ``torch.mm`` a group issued round-robin on ``streams`` (Transformer Engine's ``GroupedLinear``
    with its 4 compute streams), forked from and joined to the current stream."""
    cur = torch.cuda.current_stream()
    for s in streams:
        s.wait_stream(cur)
    for i, c in enumerate(a_chunks):
        with torch.cuda.stream(streams[i % len(streams)]):
            torch.mm(c, b[i], out=outs[i])
    for s in streams:
        cur.wait_stream(s)


def grouped_graph(torch, ctx, res):
    """The per-group GEMMs without the host: one graph of a ``torch.mm`` a group on one stream, and on
    4 streams round-robin, against ``torch._grouped_mm``'s graph, at every ``grouped`` case."""
    tm = ctx["timer"]
    res.update(failed=[], cases={})
    streams = [torch.cuda.Stream() for _ in range(4)]
    for model, proj, g, r, k, n in _expert_gemms():
        case = f"{model}-{proj}-g{g}-r{r}"
        if ctx["over"]():
            res["failed"].append(f"{case}: budget spent")
            continue
        flops = 2.0 * g * r * k * n
        try:
            a, b, offs = _grouped_inputs(torch, g, r, k, n, torch.bfloat16)
            chunks, outs = a.split(r), [torch.empty(r, n, device="cuda", dtype=torch.bfloat16) for _ in range(g)]
            reps = max(2, min(10, int(1e12 / flops)))
            t = {"grouped": tm.warm(lambda a=a, b=b, o=offs: torch._grouped_mm(a, b, offs=o), reps=reps, graph=True),
                 "loop": tm.warm(lambda c=chunks, b=b, o=outs: _streams_loop(torch, c, b, o, streams[:1]), reps=reps,
                                 graph=True),
                 "multi_stream": tm.warm(lambda c=chunks, b=b, o=outs: _streams_loop(torch, c, b, o, streams),
                                         reps=reps, graph=True)}
        except Exception as exc:  # noqa: BLE001
            res["failed"].append(f"{case}: {exc!r}"[:300])
            continue
        res["cases"][case] = {f"{i}_us": round(v * 1e6, 2) for i, v in t.items()}
        for impl in ("loop", "multi_stream"):
            ctx["add"](id=f"{ctx['tag']}-{case}-{impl}-graph", kind="gemm_grouped", implementation=impl, dtype="bf16",
                       m=g * r, n=n, k=k, groups=g, measured_value=f"{flops / t[impl] / 1e12:.5g}",
                       measured_unit="TFLOP/s",
                       note=f"one torch.mm a group on {1 if impl == 'loop' else 4} stream(s), one CUDA graph, "
                            f"{model} {proj}, {r} rows a group, L2 warm; {t[impl] * 1e6:.1f} us; "
                            f"torch._grouped_mm graphed {t['grouped'] * 1e6:.1f} us")


def _routed_sizes(torch, tokens, groups, skew, top_k=1):
    """Rows each of ``groups`` experts receives when ``tokens`` tokens pick their top ``top_k`` of
    random logits plus a per-expert bias of standard deviation ``skew`` (0: uniform routing)."""
    gen = torch.Generator(device="cuda").manual_seed(54)
    logits = torch.randn(tokens, groups, device="cuda", generator=gen)
    logits += skew * torch.randn(groups, device="cuda", generator=gen)
    picks = logits.topk(top_k, dim=1).indices.flatten()
    return torch.bincount(picks, minlength=groups)


def grouped_ragged(torch, ctx, res):
    """``torch._grouped_mm`` over the uneven groups of top-8 routing (skew 0, 0.5, 1.0) against equal groups
    of the same rows, at Qwen3-30B-A3B's and DeepSeek-V3's expert shapes, 32 and 128 experts."""
    tm = ctx["timer"]
    res.update(failed=[], cases={})
    for model in ("qwen3-30b-a3b", "deepseek-v3"):
        h, f = EXPERT_SHAPES[model]
        for g, tokens in ((32, 2048), (128, 8192)):
            for skew in (0.0, 0.5, 1.0):
                case = f"{model}-fc1-g{g}-t{tokens}-skew{skew}"
                if ctx["over"]():
                    res["failed"].append(f"{case}: budget spent")
                    continue
                try:
                    sizes = _routed_sizes(torch, tokens, g, skew, top_k=8)
                    m = int(sizes.sum())
                    a = torch.randn(m, h, device="cuda").to(torch.bfloat16)
                    b = torch.randn(g, 2 * f, h, device="cuda").to(torch.bfloat16).transpose(-2, -1)
                    offs = sizes.cumsum(0).to(torch.int32)
                    even = torch.arange(m // g, m + 1, m // g, device="cuda", dtype=torch.int32)[:g]
                    t_r = tm.warm(lambda a=a, b=b, o=offs: torch._grouped_mm(a, b, offs=o), reps=10, graph=True)
                    t_e = tm.warm(lambda a=a, b=b, o=even: torch._grouped_mm(a, b, offs=o), reps=10, graph=True)
                except Exception as exc:  # noqa: BLE001
                    res["failed"].append(f"{case}: {exc!r}"[:300])
                    continue
                sz = sizes.tolist()
                res["cases"][case] = {"rows": m, "max_rows": max(sz), "min_rows": min(sz), "sizes": sz,
                                      "ragged_us": round(t_r * 1e6, 2), "even_us": round(t_e * 1e6, 2)}
                ctx["add"](id=f"{ctx['tag']}-{case}-ragged", kind="gemm_grouped", implementation="cutlass",
                           dtype="bf16", m=m, n=2 * f, k=h, groups=g,
                           measured_value=f"{2.0 * m * h * 2 * f / t_r / 1e12:.5g}", measured_unit="TFLOP/s",
                           note=f"torch._grouped_mm, top-8 routing with expert skew {skew}: groups of {min(sz)}-"
                                f"{max(sz)} rows (ragged), one CUDA graph; {t_r * 1e6:.1f} us; equal groups "
                                f"{t_e * 1e6:.1f} us")


def grouped_wgrad(torch, ctx, res):
    """An MoE layer's weight gradient as one kernel: ``torch._grouped_mm`` of x^T (k, M) and dy (M, n) with
    the groups along M, out (groups, k, n), against one dense (k, M) x (M, n) GEMM, at the ``grouped``
    cases with 512 and 2,048 rows a group."""
    tm = ctx["timer"]
    res.update(failed=[], cases={})
    for model, proj, g, r, k, n in _expert_gemms():
        if r == 128:
            continue
        case = f"{model}-{proj}-g{g}-r{r}"
        if ctx["over"]():
            res["failed"].append(f"{case}: budget spent")
            continue
        flops = 2.0 * g * r * k * n
        try:
            x = torch.randn(g * r, k, device="cuda").to(torch.bfloat16)
            dy = torch.randn(g * r, n, device="cuda").to(torch.bfloat16)
            offs = torch.arange(r, g * r + 1, r, device="cuda", dtype=torch.int32)
            reps = max(2, min(10, int(1e12 / flops)))
            t_w = tm.warm(lambda x=x, d=dy, o=offs: torch._grouped_mm(x.t(), d, offs=o), reps=reps, graph=True)
            t_d = tm.warm(lambda x=x, d=dy: torch.mm(x.t(), d), reps=reps, graph=True)
        except Exception as exc:  # noqa: BLE001
            res["failed"].append(f"{case}: {exc!r}"[:300])
            continue
        res["cases"][case] = {"wgrad_us": round(t_w * 1e6, 2), "dense_us": round(t_d * 1e6, 2),
                              "grouped_of_dense": round(t_d / t_w, 4)}
        ctx["add"](id=f"{ctx['tag']}-{case}-wgrad", kind="gemm_grouped", implementation="cutlass", dtype="bf16",
                   m=g * k, n=n, k=r, groups=g, measured_value=f"{flops / t_w / 1e12:.5g}", measured_unit="TFLOP/s",
                   note=f"torch._grouped_mm weight gradient, groups along the reduction ({r} rows each), "
                        f"{model} {proj}, one CUDA graph; {t_w * 1e6:.1f} us; dense (k, M) x (M, n) "
                        f"{t_d * 1e6:.1f} us; {g} GEMMs of {k} x {n} over {r} rows each (m = groups x {k})")
        # the kernels format's grouped convention (m: every group's rows; benchmarks/grouped63_rows.py)


GRID_SEQS, GRID_HEADS, GRID_BATCHES = (2048, 4096, 16384), (4, 8, 16, 32), (1, 2, 4)
GRID_DIMS = ((64, 64), (128, 128), (192, 128))  # (qk head dim, v head dim); 192 / 128 is MLA's


def _grid_cases():
    """(batch, seq, heads, d_qk, d_v) of ``attn_grid``: at most 32k tokens and 64 batch x heads."""
    return [(b, s, h, dq, dv) for s in GRID_SEQS for h in GRID_HEADS for b in GRID_BATCHES for dq, dv in GRID_DIMS
            if b * s <= 32768 and b * h <= 64]


def _time_sdpa(torch, tm, backend, qkv, p, graph=False):
    """Seconds of a causal SDPA call on ``backend`` with dropout ``p``: forward, and forward + backward
    (eager calls, or replays of one CUDA graph of them: the GPU's time without the host's)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def fwd():
        with sdpa_kernel([getattr(SDPBackend, backend)]):
            return sdpa(*qkv, is_causal=True, dropout_p=p)
    go = torch.randn_like(fwd())
    return (tm.warm(lambda: fwd().detach(), reps=5, graph=graph),
            tm.warm(lambda: torch.autograd.grad(fwd(), qkv, go), reps=5, graph=graph))


def attn_grid_graph(torch, ctx, res):
    """``attn_grid`` with each timing a CUDA graph's replays: run 3's eager small grids were the host's
    time (SDPA's dispatch, ~20-100 us a call), not the kernels'."""
    attn_grid(torch, ctx, res, graph=True)


def attn_grid(torch, ctx, res, graph=False):
    """SDPA's cuDNN and FA2 backends, causal, dropout 0 and 0.1, over batch x heads x sequence x head dims
    (small grids below one wave of SMs; MLA's 192 / 128 where the backend takes it): each call's time."""
    tm = ctx["timer"]
    res.update(failed=[], times={})
    for b, s, h, dq, dv in _grid_cases():
        qkv = tuple(torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                    for d in (dq, dq, dv))
        for backend, impl in (("CUDNN_ATTENTION", "cudnn"), ("FLASH_ATTENTION", "flash2")):
            for p in DROPOUTS:
                case = f"{impl}-b{b}-s{s}-h{h}-d{dq}x{dv}-p{p}"
                if ctx["over"]():
                    res["failed"].append(f"{case}: budget spent")
                    continue
                try:
                    tf, tfb = _time_sdpa(torch, tm, backend, qkv, p, graph)
                except Exception as exc:  # noqa: BLE001
                    res["failed"].append(f"{case}: {exc!r}"[:200])
                    continue
                res["times"][case] = {"fwd_us": round(tf * 1e6, 2), "fwd_bwd_us": round(tfb * 1e6, 2)}
                if p == 0.0:
                    flops = 2 * b * s * s * h * (dq + dv) * 0.5
                    cells = {"implementation": impl, "dtype": "bf16", "batch": b, "seq_len": s, "heads": h,
                             "kv_heads": h, "head_dim": dq, "causal": 1, "measured_unit": "TFLOP/s"}
                    how = (f"SDPA, causal, v head dim {dv}, "
                           f"{'one CUDA graph of 5 calls' if graph else 'eager calls'} between two events, median of 3")
                    case = case + ("-graph" if graph else "")
                    ctx["add"](id=f"{ctx['tag']}-{case}-fwd", kind="attention_fwd",
                               measured_value=f"{flops / tf / 1e12:.5g}", note=f"{how}; {tf * 1e6:.1f} us", **cells)
                    if tfb > tf:
                        ctx["add"](id=f"{ctx['tag']}-{case}-bwd", kind="attention_bwd",
                                   measured_value=f"{2.5 * flops / (tfb - tf) / 1e12:.5g}",
                                   note=f"{how}; forward + backward minus forward, {(tfb - tf) * 1e6:.1f} us", **cells)


def _moe_forward(torch, x, experts, weights, w1, w2):
    """A dropless MoE layer's forward after its router, as torchtitan writes it with one grouped kernel:
    sort the (token, choice) pairs by expert, gather the rows, gated fc1 and fc2 as ``torch._grouped_mm``
    over the experts' row counts, and sum each token's weighted outputs back."""
    flat = experts.flatten()
    order = flat.argsort(stable=True)
    counts = torch.zeros(w1.shape[0], device=flat.device, dtype=torch.int64).index_add_(0, flat, torch.ones_like(flat))
    offs = counts.cumsum(0).to(torch.int32)  # no bincount: its output size is a host sync, which a graph refuses
    rows = x.index_select(0, order // experts.shape[1])
    gate, up = torch._grouped_mm(rows, w1, offs=offs).chunk(2, dim=-1)
    out = torch._grouped_mm(torch.nn.functional.silu(gate) * up, w2, offs=offs)
    out = out * weights.flatten()[order].unsqueeze(1).to(out.dtype)
    return torch.zeros_like(x).index_add_(0, order // experts.shape[1], out)


def _moe_reference(torch, x, experts, weights, w1, w2, n=256):
    """The first ``n`` tokens' MoE outputs in fp32, one (token, choice) at a time: the numerics check
    (each token gathers its experts' weights, so ``n`` stays small for wide experts)."""
    x, experts, weights = x[:n].float(), experts[:n], weights[:n]
    out = torch.zeros_like(x)
    for j in range(experts.shape[1]):
        gate, up = torch.bmm(x.unsqueeze(1), w1[experts[:, j]].float()).squeeze(1).chunk(2, dim=-1)
        act = (torch.nn.functional.silu(gate) * up).unsqueeze(1)
        out += weights[:, j:j + 1] * torch.bmm(act, w2[experts[:, j]].float()).squeeze(1)
    return out


def moe_block(torch, ctx, res):
    """``_moe_forward`` at five MoE models' layer shapes (a rank's experts), top-k of random logits
    (uniform routing), bf16: eager calls, one CUDA graph's replays, and the profiler's kernels."""
    tm = ctx["timer"]
    res.update(failed=[], cases={})
    for label, t, h, f, e, k in MOE_CASES:
        if ctx["over"]():
            res["failed"].append(f"{label}: budget spent")
            continue
        try:
            x = torch.randn(t, h, device="cuda", dtype=torch.bfloat16)
            w1 = (torch.randn(e, 2 * f, h, device="cuda", dtype=torch.bfloat16) * 0.02).transpose(-2, -1)
            w2 = (torch.randn(e, h, f, device="cuda", dtype=torch.bfloat16) * 0.02).transpose(-2, -1)
            weights, experts = torch.randn(t, e, device="cuda").softmax(-1).topk(k, dim=-1)

            def block(x=x, ex=experts, wt=weights, w1=w1, w2=w2):
                return _moe_forward(torch, x, ex, wt, w1, w2)
            ref = _moe_reference(torch, x, experts, weights, w1, w2, n=max(8, min(256, 2 ** 29 // (h * f))))
            err = float((block()[:len(ref)].float() - ref).abs().max() / ref.abs().max())
            t_eager = tm.warm(block, reps=5)
            t_graph = tm.warm(block, reps=5, graph=True)
            kern = _kernel_times(torch, block, steps=2)
        except Exception as exc:  # noqa: BLE001
            res["failed"].append(f"{label}: {exc!r}"[:300])
            continue
        flops = 2.0 * t * k * h * 3 * f
        res["cases"][label] = {"eager_us": round(t_eager * 1e6, 2), "graph_us": round(t_graph * 1e6, 2),
                               "rel_err": err, "tflops_graph": round(flops / t_graph / 1e12, 1), "kernels_us": kern}
        ctx["add"](id=f"{ctx['tag']}-moe-{label}", kind="moe_block", implementation="cutlass", dtype="bf16",
                   tokens=t, hidden=h, ffn=f, experts=e, top_k=k, measured_value=f"{t_graph * 1e3:.5g}",
                   measured_unit="ms",
                   note=f"torch._grouped_mm dropless forward (argsort permute, gated fc1, silu, fc2, weighted "
                        f"index_add), top-k of random logits, one CUDA graph; eager {t_eager * 1e6:.1f} us")


FUNCS = {"packages": packages, "grouped_fp8_graph": grouped_fp8_graph, "attn_grid": attn_grid, "moe_block": moe_block, "attn_grid_graph": attn_grid_graph, "attn_dropout": attn_dropout, "grouped": grouped, "grouped_fp8": grouped_fp8,
         "grouped_graph": grouped_graph, "grouped_ragged": grouped_ragged, "grouped_wgrad": grouped_wgrad}


def _digest(report: dict) -> dict:
    secs = report["sections"]
    grp = secs.get("grouped", {}).get("cases", {})
    return {"packages": secs.get("packages", {}).get("versions"),
            "dropout_ratio": secs.get("attn_dropout", {}).get("ratio"),
            "grouped_of_dense": {c: v["grouped_of_dense"] for c, v in grp.items() if "-r2048" in c or "-r512" in c},
            "fp8_cases": len(secs.get("grouped_fp8", {}).get("cases", {})),
            "graph_cases": len(secs.get("grouped_graph", {}).get("cases", {})),
            "ragged": {c: (v["ragged_us"], v["even_us"]) for c, v in secs.get("grouped_ragged", {}).get("cases", {}).items()},
            "wgrad": {c: v["grouped_of_dense"] for c, v in secs.get("grouped_wgrad", {}).get("cases", {}).items()}}


def main(argv: list[str] | None = None) -> int:
    return sectioned_main(__doc__, "device_checks54", "dc54", SECTIONS, FUNCS, START_S, 240.0, argv, _digest)


if __name__ == "__main__":
    sys.exit(main())
