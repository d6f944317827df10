"""The 56th session's prepared GPU run (mbsplit56): does one MLPerf GPT-3 175B TP-4 rank's work
cost more per sequence at micro-batch 1 than at 2 beyond what trainsim prices?

    python3 benchmarks/device_checks56.py --out $OUT --budget-s 240   # the run tool, timeout_s 330
    python benchmarks/device_checks56.py --dry-run                    # the plan; no GPU needed

At 512 H100 NVIDIA's v3.1 code (micro-batch 1, vpp 12) spends 86.5 ms per sequence and pipeline,
its v4.0 / v4.1 code (micro-batch 2, vpp 4 / 6) 76.3 / 74.5 ms; trainsim prices the micro-batch
alone at -3.6..-5.2 % (``benchmarks/mbsplit56_parts.py``). One GPU measures the rank's own work
by token count; the pipeline's and userbuffers' parts need a node. Sections (each guarded as in
``device_checks.py``, whose timer and row helpers it reuses):

``gemm_tokens`` the layer's fp8 GEMMs at TP 4 (qkv 12288 -> 9216, proj 3072 -> 12288, fc1 and
    fc2 12288 -> 12288) at 512-8,192 tokens: forward with fast accumulation (Transformer Engine's
    fprop), dgrad and wgrad without (its ``_2X_ACC_DGRAD`` / ``_2X_ACC_WGRAD``),
    ``torch._scaled_mm`` with per-tensor scales, one CUDA graph of 10 calls: the per-token rate
    at 2,048 (micro-batch 1) against 4,096 (2) and the 512 / 1,024-row chunks of a TP-4 ring.
``gemm_chunks`` each forward GEMM of 2,048 and 4,096 tokens as four GEMMs of a quarter of the
    rows issued round-robin on 3 streams (Transformer Engine@09ba842 module/base.py L44
    ``_NUM_MAX_UB_STREAMS = 3``; csrc/comm_gemm_overlap.h L571 the ring's min(3, tp) compute
    streams), without the exchange, against the one GEMM: what chunking costs at each size.
``te_chunk`` (Transformer Engine installed) one chunk of one layer as the TP-4 rank holds it:
    ``LayerNormLinear`` 12288 -> 9216, ``DotProductAttention`` 24 heads x 128 causal, ``Linear``
    3072 -> 12288, ``LayerNormMLP`` 12288 -> 12288 (gelu), sequence 2,048, micro-batch 1 and 2,
    fp8 delayed scaling (HYBRID, amax history 1,024, max: MLPerf's config_fp8.sh) in one
    ``fp8_autocast`` per pass, forward + backward; ``is_first_microbatch`` False (weights cached,
    NeMo's later micro-batches) and None (cast every pass); wall time over back-to-back passes
    and the profiler's kernel time: per sequence at micro-batch 2 over 1, and the host's share.

Writes ``kernels.csv`` (validation/README.md's kernels format) and ``device_checks56.json``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from device_checks import sectioned_main
from device_checks47 import _kernel_times

HIDDEN, SEQ, HEADS_TP4, HEAD_DIM, TP = 12288, 2048, 24, 128, 4
LAYER_GEMMS = {  # site: (out features, in features) of one TP-4 rank's weight
    "qkv": (3 * HEADS_TP4 * HEAD_DIM, HIDDEN), "proj": (HIDDEN, HEADS_TP4 * HEAD_DIM),
    "fc1": (4 * HIDDEN // TP, HIDDEN), "fc2": (HIDDEN, 4 * HIDDEN // TP)}
TOKENS = (512, 1024, 2048, 4096, 8192)
CHUNK_TOKENS, CHUNKS, CHUNK_STREAMS = (2048, 4096), TP, 3
MICRO_BATCHES, TE_PASSES = (1, 2), 8
START_S = 20
SECTIONS = {"gemm_tokens": (45, f"fp8 {list(LAYER_GEMMS)} x fwd/dgrad/wgrad x tokens {TOKENS}, graphs"),
            "gemm_chunks": (20, (f"fwd GEMMs at {CHUNK_TOKENS} tokens: one vs {CHUNKS} chunks on "
                                f"{CHUNK_STREAMS} streams")),
            "te_chunk": (60, (f"TE layer slice, mbs {MICRO_BATCHES}, fp8 delayed, weights cached / cast, "
                             "wall and kernel time"))}


def gemm_shape(site: str, kind: str, tokens: int) -> tuple[int, int, int]:
    """(m, n, k) of one TP-4 rank's ``site`` GEMM at ``tokens`` (validation/README.md's C[m x n]
    = A[m x k] B[k x n]): fprop tokens x out x in, dgrad tokens x in x out, wgrad out x in x
    tokens (the token dimension moves to k)."""
    out_f, in_f = LAYER_GEMMS[site]
    return {"fwd": (tokens, out_f, in_f), "dgrad": (tokens, in_f, out_f),
            "wgrad": (out_f, in_f, tokens)}[kind]


def per_sample_ratio(t1_s: float, t2_s: float) -> float:
    """Time per sequence at micro-batch 2 over micro-batch 1 (each ``t`` one pass of its
    micro-batch)."""
    return (t2_s / 2.0) / t1_s


def _fp8_pair(torch, m, n, k):
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16).to(torch.float8_e4m3fn)
    b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16).to(torch.float8_e4m3fn)
    return a, b, torch.ones((), device="cuda")


def _scaled(torch, a, b, one, fast):
    return lambda: torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one,
                                    out_dtype=torch.bfloat16, use_fast_accum=fast)


def gemm_tokens(torch, ctx, res):
    res.update(cases={}, failed=[])
    for site in LAYER_GEMMS:
        for kind in ("fwd", "dgrad", "wgrad"):
            for tokens in TOKENS:
                if ctx["over"]():
                    res["failed"].append("budget")
                    return
                m, n, k = gemm_shape(site, kind, tokens)
                fast = kind == "fwd"
                try:
                    a, b, one = _fp8_pair(torch, m, n, k)
                    s = ctx["timer"].warm(_scaled(torch, a, b, one, fast), reps=10, graph=True)
                except Exception as exc:  # noqa: BLE001 - the next shape runs
                    res["failed"].append(f"{site} {kind} {tokens}: {exc!r}"[:300])
                    continue
                res["cases"][f"{site}-{kind}-t{tokens}"] = round(s * 1e6, 2)
                how = f"torch._scaled_mm e4m3, per-tensor scales, bf16 out, use_fast_accum={fast}"
                ctx["add"](id=f"{ctx['tag']}-gpt3-tp4-{site}-{kind}-t{tokens}", kind="gemm",
                           implementation="cublas", dtype="fp8", m=m, n=n, k=k,
                           measured_unit="TFLOP/s", measured_value=f"{2 * m * n * k / s / 1e12:.5g}",
                           note=f"GPT-3 175B TP 4 {site} {kind}, {tokens} tokens; {how}; one CUDA "
                                f"graph of 10 calls between two events, median of 3; time {s * 1e6:.1f} us")
    res["ns_per_token"] = {t: round(sum(v for c, v in res["cases"].items() if c.endswith(f"-t{t}"))
                                    * 1e3 / t, 2) for t in TOKENS}


def gemm_chunks(torch, ctx, res):
    res.update(cases={}, failed=[])
    streams = [torch.cuda.Stream() for _ in range(CHUNK_STREAMS)]
    for site in LAYER_GEMMS:
        for tokens in CHUNK_TOKENS:
            m, n, k = gemm_shape(site, "fwd", tokens)
            try:
                a, b, one = _fp8_pair(torch, m, n, k)
                whole = ctx["timer"].warm(_scaled(torch, a, b, one, True), reps=10, graph=True)
                parts = [_scaled(torch, c, b, one, True) for c in a.chunk(CHUNKS)]

                def chunked(parts=parts):
                    main = torch.cuda.current_stream()
                    for i, fn in enumerate(parts):
                        s = streams[i % CHUNK_STREAMS]
                        s.wait_stream(main)
                        with torch.cuda.stream(s):
                            fn()
                    for s in streams:
                        main.wait_stream(s)
                split = ctx["timer"].warm(chunked, reps=10, graph=True)
            except Exception as exc:  # noqa: BLE001
                res["failed"].append(f"{site} {tokens}: {exc!r}"[:300])
                continue
            res["cases"][f"{site}-t{tokens}"] = {"one_us": round(whole * 1e6, 2),
                                                 "chunked_us": round(split * 1e6, 2),
                                                 "chunked_over_one": round(split / whole, 4)}


def _te_slice(torch, te):
    kw = {"params_dtype": torch.bfloat16}
    qkv = te.LayerNormLinear(HIDDEN, LAYER_GEMMS["qkv"][0], **kw).cuda()
    attn = te.DotProductAttention(HEADS_TP4, HEAD_DIM, attention_dropout=0.0,
                                  attn_mask_type="causal")
    proj = te.Linear(HEADS_TP4 * HEAD_DIM, HIDDEN, **kw).cuda()
    mlp = te.LayerNormMLP(HIDDEN, LAYER_GEMMS["fc1"][0], activation="gelu", **kw).cuda()

    def forward(x, first):
        s, b = x.shape[0], x.shape[1]
        q, k, v = qkv(x, is_first_microbatch=first).view(s, b, 3, HEADS_TP4, HEAD_DIM).unbind(2)
        a = attn(q.contiguous(), k.contiguous(), v.contiguous()).view(s, b, -1)
        h = x + proj(a, is_first_microbatch=first)
        return h + mlp(h, is_first_microbatch=first)
    return forward


def te_chunk(torch, ctx, res):
    try:
        import transformer_engine.pytorch as te
        from transformer_engine.common.recipe import DelayedScaling, Format
    except Exception as exc:  # noqa: BLE001 - the image has no Transformer Engine
        res["skipped"] = f"transformer_engine: {exc!r}"[:300]
        return
    import time

    res.update(cases={}, failed=[], te=getattr(te, "__version__", "?"))
    recipe = DelayedScaling(fp8_format=Format.HYBRID, amax_history_len=1024, amax_compute_algo="max")
    forward = _te_slice(torch, te)
    for first in (False, None):
        for mbs in MICRO_BATCHES:
            x = torch.randn(SEQ, mbs, HIDDEN, device="cuda", dtype=torch.bfloat16, requires_grad=True)
            grad = torch.randn_like(x)

            def one_pass(x=x, grad=grad, first=first):
                with te.fp8_autocast(enabled=True, fp8_recipe=recipe):
                    y = forward(x, first)
                y.backward(grad)
            label = f"mbs{mbs}-{'cached' if first is False else 'cast'}"
            try:
                one_pass()  # the first pass casts and fills the caches
                torch.cuda.synchronize()
                a, b = ctx["timer"]._pair()
                t0 = time.perf_counter()
                a.record()
                for _ in range(TE_PASSES):
                    one_pass()
                host_s = (time.perf_counter() - t0) / TE_PASSES
                b.record()
                torch.cuda.synchronize()
                wall_s = a.elapsed_time(b) * 1e-3 / TE_PASSES
                kernels = _kernel_times(torch, one_pass, steps=2)
            except Exception as exc:  # noqa: BLE001
                res["failed"].append(f"{label}: {exc!r}"[:300])
                continue
            res["cases"][label] = {"wall_ms": round(wall_s * 1e3, 3), "host_ms": round(host_s * 1e3, 3),
                                   "kernel_ms": round(sum(kernels.values()) / 1e3, 3),
                                   "top_kernels_us": dict(list(kernels.items())[:12])}
    c = res["cases"]
    for kind in ("cached", "cast"):
        one, two = c.get(f"mbs1-{kind}"), c.get(f"mbs2-{kind}")
        if one and two:
            res[f"per_sample_mbs2_over_mbs1_{kind}"] = {
                "wall": round(per_sample_ratio(one["wall_ms"], two["wall_ms"]), 4),
                "kernel": round(per_sample_ratio(one["kernel_ms"], two["kernel_ms"]), 4)}


FUNCS = {"gemm_tokens": gemm_tokens, "gemm_chunks": gemm_chunks, "te_chunk": te_chunk}


def _digest(report: dict) -> dict:
    secs = report["sections"]
    te_res = secs.get("te_chunk", {})
    return {"ns_per_token": secs.get("gemm_tokens", {}).get("ns_per_token"),
            "chunked_over_one": {c: v["chunked_over_one"]
                                 for c, v in secs.get("gemm_chunks", {}).get("cases", {}).items()},
            "te": te_res.get("te") or te_res.get("skipped"),
            "te_per_sample": {k: v for k, v in te_res.items() if k.startswith("per_sample")}}


def main(argv: list[str] | None = None) -> int:
    return sectioned_main(__doc__, "device_checks56", "dc56", SECTIONS, FUNCS, START_S, 240.0, argv,
                          _digest)


if __name__ == "__main__":
    sys.exit(main())
