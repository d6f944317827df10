"""The 40th session's prepared GPU run: what the DualPipe W pass and the long-GEMM leads need.

    python3 benchmarks/device_checks40.py --out $OUT --budget-s 240   # the run tool
    python benchmarks/device_checks40.py --dry-run                    # the plan; no GPU needed

Sections (each guarded as in ``device_checks.py``, whose timer and row helpers it reuses):

``dsv3_gemms``  DeepSeek-V3's per-layer GEMMs (one MoE layer of deepseek-ai/profile-data@4496024
    ``train.json``: 4,096 tokens a micro-batch, ~8,700 routed tokens per local expert) as forward,
    input-gradient and weight-gradient products, in bf16, fp8 with per-tensor scales and fp8 with
    DeepSeek's 1x128-by-1x128 (wgrad) / 1x128-by-128x128 (fwd, dgrad) block scales, each on all
    SMs and on the 112 that DeepEP's 20 leave (cuBLASLt's SM-count target through
    ``torch._C._set_sm_carveout_experimental``). wgrad39 found DeepSeek's W kernels at 0.77 of
    trainsim's rate where the same trace's F and I GEMMs ran at 0.98 / 1.07.
``sustained``   one long bf16 (then fp8) GEMM looped for ``SUSTAIN_S`` seconds, its rate per
    chunk beside nvidia-smi's SM clock and power every 100 ms, against the first second's rate:
    gemm39's question whether training's long GEMMs run below the looped records' rate.
``fa_dropout``  FlashAttention-2 through SDPA with dropout 0 and 0.1 (MLPerf GPT-3's FA with
    dropout, attn39's unmeasured case) at GPT-3 175B TP 8 and Llama shapes.

Writes ``kernels.csv`` (full-SM, no-dropout rows in validation/README.md's kernels format),
``device_checks40.json`` (every figure, the carveout and dropout ratios, nvidia-smi's samples).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from device_checks import (
    kernel_row,
    open_run,
    run_sections,
    section_plan,
    wanted_sections,
    write_kernels,
)

TOKENS, EXPERT_TOKENS = 4096, 8704  # a micro-batch; 34,688 routed rows / 4 local experts, to 128
DSV3_LINEARS = {  # name: (in_features, out_features, tokens) of one MoE layer (DeepSeek-V3 config)
    "q_down": (7168, 1536, TOKENS), "kv_down": (7168, 576, TOKENS),
    "q_up": (1536, 24576, TOKENS), "kv_up": (512, 32768, TOKENS),
    "out_proj": (16384, 7168, TOKENS), "shared_fc1": (7168, 4096, TOKENS),
    "shared_fc2": (2048, 7168, TOKENS), "expert_fc1": (7168, 4096, EXPERT_TOKENS),
    "expert_fc2": (2048, 7168, EXPERT_TOKENS)}
CARVEOUTS = (0, 20)  # SMs left out: all 132, and the 112 DeepSeek's GEMMs ran on
SUSTAIN_S, MIX_S, SUSTAIN_SHAPE, CHUNK = 8.0, 5.0, (8192, 8192, 8192), 20
DUTIES = (0.6, 0.7, 0.8, 0.9)
FA_SHAPES = ((1, 2048, 12, 128), (2, 2048, 12, 128), (1, 4096, 32, 128), (1, 8192, 8, 128))
FA_CASES2 = ((4, 2048, 12, 128, True), (4, 2048, 12, 128, False), (2, 4096, 16, 64, True),
             (2, 4096, 16, 64, False))
DROPOUTS = (0.0, 0.1)
SWEEP_MN, SWEEP_KS = ((4096, 7168), (7168, 2048), (7168, 16384)), (1024, 2048, 4096, 8704, 16384, 32768)
SECTIONS = {"dsv3_gemms": (60, "9 linears x fwd/dgrad/wgrad x bf16/fp8 tensor/fp8 block x 2 SM counts"),
            "sustained": (25, f"bf16 and fp8 {SUSTAIN_SHAPE} for {SUSTAIN_S:.0f} s each + smi"),
            "power_mix": (30, f"fp8 block wgrad/fwd, bf16 half duty / beside an add, {5} s each"),
            "duty_sweep": (30, "bf16 GEMM at duty 0.6-0.9 (a spin after each), 5 s each"),
            "layer_loop": (15, "4 Llama 3 8B layers fwd+bwd, 8k tokens, 8 s"),
            "fa_dropout": (20, f"FA2 fwd, fwd+bwd, dropout {DROPOUTS}, {len(FA_SHAPES)} shapes"),
            "fa_dropout2": (15, f"the same, {len(FA_CASES2)} more cases (hd 64, no mask)"),
            "power_classes": (45, "add alone, FA2 alone, GEMM + adds at duty 0.6/0.8, host idle 0.8"),
            "power_side": (25, "bf16 GEMM with a 1 GiB copy beside it; layer loop after a warm-up"),
            "cudnn_dropout": (20, "the FA2 dropout cases through SDPA's cuDNN backend"),
            "block_k_sweep": (15, "fp8 block / per-tensor rate vs k: 3 (m, n) x 6 k x wgrad, fwd")}
START_S = 20


def products(name: str) -> dict[str, tuple[int, int, int]]:
    """(m, n, k) of a linear's three GEMMs, the output's rows first (TN for fp8 on Hopper)."""
    fin, fout, t = DSV3_LINEARS[name]
    return {"fwd": (t, fout, fin), "dgrad": (t, fin, fout), "wgrad": (fout, fin, t)}


def fp8_cases(torch, m: int, n: int, k: int, op: str):
    """(label, fn) of the fp8 products of an (m, k) by (n, k) pair: per-tensor scales, then
    DeepSeek's block scales (1x128 both for wgrad, 1x128 by 128x128 otherwise)."""
    a = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
    b = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn)
    one = torch.ones((), device="cuda")
    cases = [("fp8-tensor", lambda: torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one,
                                                      out_dtype=torch.bfloat16,
                                                      use_fast_accum=True))]
    kb, nb = -(-k // 128), -(-n // 128)
    sa_opts = (torch.rand(kb, m, device="cuda").t(), torch.rand(m, kb, device="cuda"))
    sb_opts = ((torch.rand(kb, n, device="cuda"), torch.rand(n, kb, device="cuda").t())
               if op == "wgrad" else
               (torch.rand(nb, kb, device="cuda").t(), torch.rand(kb, nb, device="cuda")))
    errors = []
    for sa, sb in ((x, y) for x in sa_opts for y in sb_opts):  # the layout cuBLAS accepts
        def fn(sa=sa, sb=sb):
            return torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
        try:
            fn()
            torch.cuda.synchronize()
        except Exception as exc:  # noqa: BLE001 - try the next layout
            errors.append(repr(exc)[:200])
            continue
        cases.append(("fp8-block", fn))
        break
    else:
        cases.append(("fp8-block", lambda: (_ for _ in ()).throw(RuntimeError(errors[-1]))))
    return cases


LABEL_HOW = {"bf16": "torch.matmul(x, w.t())",
             "fp8-tensor": "torch._scaled_mm e4m3, per-tensor scales, use_fast_accum=True",
             "fp8-block": "torch._scaled_mm e4m3, block scales {}, fp32 promotion by cuBLASLt"}
BLOCKS = {"wgrad": "1x128 by 1x128 (DeepSeek-V3's wgrad: both operands scaled per 128 tokens)",
          "fwd": "1x128 by 128x128 (activations per 1x128, weights per 128x128)",
          "dgrad": "1x128 by 128x128 (output gradient per 1x128, weights per 128x128)"}


def gemm_cells(tag: str, name: str, op: str, label: str, m: int, n: int, k: int,
               s: float) -> dict:
    """The kernels-format cells of one full-SM DeepSeek-V3 GEMM timing (also rebuilt from a
    saved JSON: ``--from-json``)."""
    return {"id": f"{tag}-dsv3-{name}-{op}-{label}", "kind": "gemm", "implementation": "cublas",
                "dtype": label.split("-")[0], "m": m, "n": n, "k": k, "measured_unit": "TFLOP/s",
                "measured_value": f"{2 * m * n * k / s / 1e12:.5g}",
                "note": f"DeepSeek-V3 {name} {op}, an (m,k) by (n,k)^T product; "
                     f"{LABEL_HOW[label].format(BLOCKS[op])}; one CUDA graph of 10 calls between "
                     f"two events, median of 3; time {s * 1e6:.2f} us"}


def rows_from_json(path: Path) -> list[dict[str, str]]:
    """The full-SM GEMM rows of a saved ``device_checks40.json`` (its ``rates``)."""
    rep = json.loads(Path(path).read_text())
    env, rates = rep["env"], rep["sections"]["dsv3_gemms"]["rates"]
    source = (f"measured on {env['device']}, torch {env['torch']}, CUDA {env['cuda']}, CUDA "
              f"events, benchmarks/device_checks40.py, {rep['started_utc'][:10]}")
    tag, full = "dc40-" + env["gpu"].split("-")[0], f"sm{env['sms']}"
    out = []
    for key, r in rates.items():
        name, op, label, sms = key.split("/")
        if sms == full:
            out.append(kernel_row(env["gpu"], source, **gemm_cells(
                tag, name, op, label, r["m"], r["n"], r["k"], r["us"] * 1e-6)))
    return out


def dsv3_gemms(torch, ctx, res):
    tm, setc = ctx["timer"], getattr(torch._C, "_set_sm_carveout_experimental", None)
    res.update(carveout_api=setc is not None, failed=[], rates={})
    try:
        torch.backends.cuda.preferred_blas_library("cublaslt")  # the carveout is a cuBLASLt knob
        res["blas"] = "cublaslt"
    except Exception as exc:  # noqa: BLE001
        res["blas"] = f"default ({exc!r})"[:200]
    for name in DSV3_LINEARS:
        for op, (m, n, k) in products(name).items():
            if ctx["over"]():
                res["stopped_at"] = f"{name} {op}"
                return
            x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
            w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
            cases = [("bf16", lambda x=x, w=w: torch.matmul(x, w.t()))]
            cases += fp8_cases(torch, m, n, k, op)
            for label, fn in cases:
                for carve in CARVEOUTS if setc else (0,):
                    key = f"{name}/{op}/{label}/sm{ctx['sms'] - carve}"
                    try:
                        if setc:
                            setc(carve or None)
                        s = tm.warm(fn, reps=10, graph=True)
                    except Exception as exc:  # noqa: BLE001 - an unsupported recipe is a finding
                        res["failed"].append(f"{key}: {exc!r}"[:300])
                        continue
                    finally:
                        if setc:
                            setc(None)
                    tf = 2 * m * n * k / s / 1e12
                    res["rates"][key] = {"m": m, "n": n, "k": k, "us": round(s * 1e6, 2),
                                         "tflops": round(tf, 1)}
                    if carve == 0:
                        ctx["add"](**gemm_cells(ctx["tag"], name, op, label, m, n, k, s))
            del x, w
    r, full = res["rates"], f"/sm{ctx['sms']}"
    res["t_sm112_over_t_full"] = {key.rsplit("/", 1)[0]:
                                  round(r[key]["us"] / r[key.rsplit("/", 1)[0] + full]["us"], 4)
                                  for key in r if key.endswith("/sm112")
                                  and key.rsplit("/", 1)[0] + full in r}

def smi_logger(path: Path):
    q = "timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu"
    try:
        return subprocess.Popen(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader",
                                 "-lms", "100", "-f", str(path)])
    except Exception:  # noqa: BLE001 - no logger, the rates still stand
        return None


def sustain(torch, ctx, label: str, flops: float, gemm, filler=None, seconds=SUSTAIN_S,
            chunk=CHUNK) -> dict:
    """``gemm`` (then ``filler``, untimed, if any) back to back for ``seconds`` after 2 s idle:
    each GEMM's own events, the median per chunk of ``CHUNK``, beside nvidia-smi's samples."""
    time.sleep(2.0)  # idle first, as a profiler's isolated call finds the GPU
    log = Path(tempfile.gettempdir()) / f"smi_{label}.csv"  # its lines go in the JSON
    proc = smi_logger(log)
    t_end, chunks, t0 = time.time() + seconds, [], time.time()
    while time.time() < t_end:
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(chunk)]
        for a, b in ev:
            a.record()
            gemm()
            b.record()
            if filler:
                filler()
        ev[-1][1].synchronize()
        chunks.append((round(time.time() - t0, 3),
                       statistics.median(a.elapsed_time(b) for a, b in ev) * 1e-3))
    perf = subprocess.run(["nvidia-smi", "-q", "-d", "PERFORMANCE"], check=False,
                          capture_output=True, text=True, timeout=10).stdout
    if proc:
        proc.terminate()
        proc.wait(timeout=5)
    tf = [flops / sec / 1e12 for _, sec in chunks]
    first = [v for (t, _), v in zip(chunks, tf) if t < 1.0] or tf[:1]
    last = [v for (t, _), v in zip(chunks, tf) if t > seconds - 2.0] or tf[-1:]
    return {"chunks": len(chunks), "first_chunk_tflops": round(tf[0], 1),
            "first_s_tflops": round(statistics.median(first), 1),
            "last_2s_tflops": round(statistics.median(last), 1),
            "ratio_last_over_first_chunk": round(statistics.median(last) / tf[0], 4),
            "per_chunk": [(t, round(v, 1)) for (t, _), v in zip(chunks, tf)],
            "smi": log.read_text().splitlines() if log.exists() else [],
            "perf_at_end": [ln for ln in perf.splitlines() if ":" in ln][-16:]}


def sustained(torch, ctx, res):
    m, n, k = SUSTAIN_SHAPE
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    x8, w8 = x.to(torch.float8_e4m3fn), w.to(torch.float8_e4m3fn)
    one = torch.ones((), device="cuda")
    fns = {"bf16": lambda: torch.matmul(x, w.t()),
           "fp8": lambda: torch._scaled_mm(x8, w8.t(), scale_a=one, scale_b=one,
                                           out_dtype=torch.bfloat16, use_fast_accum=True)}
    for label, fn in fns.items():
        res[label] = sustain(torch, ctx, label, 2 * m * n * k, fn)


def power_mix(torch, ctx, res):
    """The sustained clock of kernels that draw less power than a dense GEMM: DeepSeek's block
    scaled fp8 (expert fc1 wgrad 1x128 x 1x128, fwd 1x128 x 128x128), and a bf16 GEMM at half
    duty (a spin of its own length after each) or beside a memory-bound 1 GiB add."""
    m, n, k = SUSTAIN_SHAPE
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    buf = torch.zeros(1 << 29, device="cuda", dtype=torch.bfloat16)
    tm = ctx["timer"]
    bf16 = lambda: torch.matmul(x, w.t())
    t_gemm = tm.warm(bf16, reps=10, graph=True)
    cycles = int(t_gemm * 1.98e9)
    work = {"bf16_duty50": (2 * m * n * k, bf16, lambda: torch.cuda._sleep(cycles)),
            "bf16_with_add": (2 * m * n * k, bf16, lambda: buf.add_(1.0))}
    for op in ("wgrad", "fwd"):
        bm, bn, bk = products("expert_fc1")[op]
        label, fn = fp8_cases(torch, bm, bn, bk, op)[1]
        work[f"fp8_block_{op}"] = (2 * bm * bn * bk, fn, None)
    for label, (flops, fn, filler) in work.items():
        try:
            res[label] = sustain(torch, ctx, label, flops, fn, filler, seconds=MIX_S)
        except Exception as exc:  # noqa: BLE001
            res[label] = {"error": repr(exc)[:300]}


def duty_sweep(torch, ctx, res):
    """The power-limited clock against the share of time a dense bf16 GEMM runs: after each
    GEMM a one-SM spin (``torch.cuda._sleep``) of (1 / duty - 1) GEMM times."""
    m, n, k = SUSTAIN_SHAPE
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    bf16 = lambda: torch.matmul(x, w.t())
    cycles = ctx["timer"].warm(bf16, reps=10, graph=True) * 1.98e9
    for duty in DUTIES:
        spin = int(cycles * (1.0 / duty - 1.0))
        res[f"duty{duty:g}"] = sustain(torch, ctx, f"duty{duty:g}", 2 * m * n * k, bf16,
                                       lambda s=spin: torch.cuda._sleep(s), seconds=MIX_S)


def layer_loop(torch, ctx, res, burst: bool = False):
    """Forward and backward of four Llama 3 8B decoder layers (RMSNorm, GQA attention through
    SDPA, SwiGLU; bf16, 8,192 tokens) looped for ``SUSTAIN_S``: a training step's own mix of
    GEMMs, attention and memory-bound kernels, its time per pass burst vs sustained."""
    F, h, heads, kv, d, ffn, s = torch.nn.functional, 4096, 32, 8, 128, 14336, 8192
    lin = lambda i, o: torch.nn.Linear(i, o, bias=False, device="cuda", dtype=torch.bfloat16)
    layers = [torch.nn.ModuleDict({"qkv": lin(h, (heads + 2 * kv) * d), "o": lin(heads * d, h),
                                   "up": lin(h, 2 * ffn), "down": lin(ffn, h)}) for _ in range(4)]

    def fwd_bwd(x0):
        x = x0
        for ly in layers:
            q, kk, v = ly["qkv"](F.rms_norm(x, (h,))).split((heads * d, kv * d, kv * d), -1)
            q, kk, v = (t.view(1, s, -1, d).transpose(1, 2) for t in (q, kk, v))
            a = F.scaled_dot_product_attention(q, kk, v, is_causal=True, enable_gqa=True)
            x = x + ly["o"](a.transpose(1, 2).reshape(1, s, heads * d))
            g, u = ly["up"](F.rms_norm(x, (h,))).chunk(2, -1)
            x = x + ly["down"](F.silu(g) * u)
        x.float().square().mean().backward()

    x0 = torch.randn(1, s, h, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    flops = 4 * 3 * 2 * s * h * ((heads + 2 * kv) * d + heads * d + 3 * ffn)  # GEMMs only
    if burst:  # warm every kernel first, so the loop's first pass runs at the idle board's clock
        fwd_bwd(x0)
        torch.cuda.synchronize()
    res["loop"] = sustain(torch, ctx, "layer_loop", flops, lambda: fwd_bwd(x0), seconds=SUSTAIN_S,
                          chunk=1 if burst else 2)
    res["note"] = "tflops = the layers' GEMM FLOPs (fwd + bwd) over the pass's time"


def power_side(torch, ctx, res):
    """What a multi-GPU step adds to a loop: the bf16 GEMM with a 1 GiB device copy on a second
    stream after each (HBM traffic beside the tensor cores, as NCCL's kernels make), and the
    layer loop warmed first so its first pass gives the burst reference."""
    m, n, k = SUSTAIN_SHAPE
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    src, dst = (torch.empty(1 << 29, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    side = torch.cuda.Stream()

    def copy_beside():
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            dst.copy_(src)

    res["bf16_copy_beside"] = sustain(torch, ctx, "bf16_copy_beside", 2 * m * n * k,
                                      lambda: torch.matmul(x, w.t()), copy_beside, seconds=MIX_S)
    layer_loop(torch, ctx, res, burst=True)


def fa_dropout(torch, ctx, res, cases=tuple((*c, True) for c in FA_SHAPES),
               backend="FLASH_ATTENTION"):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    attn, tm = torch.nn.functional.scaled_dot_product_attention, ctx["timer"]
    res.update(failed=[], times={})
    for (b, s, h, d, causal) in cases:
        qkv = torch.randn(b, s, 3, h, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        mask = "causal" if causal else "full"
        for p in DROPOUTS:
            case = f"b{b}-s{s}-h{h}-d{d}-p{p}" if causal else f"{mask}-b{b}-s{s}-h{h}-d{d}-p{p}"
            try:
                def fwd(qkv=qkv, p=p, causal=causal):
                    q, kk, v = (t.transpose(1, 2) for t in qkv.unbind(2))
                    return attn(q, kk, v, is_causal=causal, dropout_p=p)

                with sdpa_kernel([getattr(SDPBackend, backend)]):
                    go = torch.randn_like(fwd())
                    tf = tm.warm(lambda: fwd().detach(), reps=10)
                    tfb = tm.warm(lambda g=go, x=qkv: torch.autograd.grad(fwd(), x, g), reps=5)
            except Exception as exc:  # noqa: BLE001
                res["failed"].append(f"{case}: {exc!r}"[:300])
                continue
            res["times"][case] = {"fwd_us": round(tf * 1e6, 1), "fwd_bwd_us": round(tfb * 1e6, 1)}
            if p == 0.0:
                flops = 4 * b * s * s * h * d * (0.5 if causal else 1.0)
                impl = "flash2" if backend == "FLASH_ATTENTION" else "cudnn"
                tag = f"{ctx['tag']}-{'fa2' if impl == 'flash2' else impl}"
                ctx["add"](id=f"{tag}-causal-{case}" if causal else f"{tag}-{case}",
                           kind="attention_fwd_bwd", implementation=impl, dtype="bf16", batch=b, seq_len=s, heads=h,
                           kv_heads=h, head_dim=d, causal=int(causal), measured_unit="TFLOP/s",
                           measured_value=f"{3.5 * flops / tfb / 1e12:.5g}",
                           note=f"SDPA {backend}, {mask}, dropout 0; forward + backward, "
                                f"eager calls between two events, median of 3; {tfb * 1e6:.1f} us")
        del qkv
    t = res["times"]
    base = {c: c.rsplit("-p", 1)[0] + "-p0.0" for c in t if c.endswith("-p0.1")}
    res["dropout_ratio"] = {c: {f: round(t[c][f + "_us"] / t[b][f + "_us"], 4)
                                for f in ("fwd", "fwd_bwd")} for c, b in base.items() if b in t}


def fa_dropout2(torch, ctx, res):
    """More dropout cases: GPT-3 175B at TP 8 with 4 sequences, head dim 64, no mask."""
    fa_dropout(torch, ctx, res, cases=FA_CASES2)


def cudnn_dropout(torch, ctx, res):
    """The dropout cases of ``fa_dropout`` and ``fa_dropout2`` through cuDNN's fused attention."""
    fa_dropout(torch, ctx, res, cases=tuple((*c, True) for c in FA_SHAPES) + FA_CASES2,
               backend="CUDNN_ATTENTION")


def power_classes(torch, ctx, res):
    """What else holds the board at its power limit: a memory-bound add alone ("tflops" here is
    TB/s moved), FlashAttention-2 forward + backward alone, a bf16 GEMM with memory-bound adds
    after it at duty 0.6 / 0.8, and with the host idle (synchronise, sleep) at duty 0.8."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    m, n, k = SUSTAIN_SHAPE
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    big, small = (torch.zeros(1 << e, device="cuda", dtype=torch.bfloat16) for e in (29, 27))
    tm = ctx["timer"]
    bf16 = lambda: torch.matmul(x, w.t())
    t_gemm, t_add = tm.warm(bf16, reps=10, graph=True), tm.warm(lambda: small.add_(1.0), reps=20)
    res.update(t_gemm_us=round(t_gemm * 1e6, 1), t_small_add_us=round(t_add * 1e6, 1))
    b, s, h, d = 2, 4096, 32, 128
    qkv = torch.randn(b, s, 3, h, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    go = torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16)

    def fa2():
        q, kk, v = (t.transpose(1, 2) for t in qkv.unbind(2))
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            torch.autograd.grad(torch.nn.functional.scaled_dot_product_attention(
                q, kk, v, is_causal=True), qkv, go)

    work = {"add_only": (2 * big.numel() * 2, lambda: big.add_(1.0), None),
            "fa2_fwd_bwd": (3.5 * 4 * b * s * s * h * d * 0.5, fa2, None)}
    for duty in (0.6, 0.8):
        reps = max(1, round(t_gemm * (1.0 / duty - 1.0) / t_add))
        work[f"duty{duty:g}_add"] = (2 * m * n * k, bf16,
                                     lambda r=reps: [small.add_(1.0) for _ in range(r)])
    gap = t_gemm * (1.0 / 0.8 - 1.0)
    work["duty0.8_host_idle"] = (2 * m * n * k, bf16,
                                 lambda: (torch.cuda.synchronize(), time.sleep(gap)))
    for label, (flops, fn, filler) in work.items():
        try:
            res[label] = sustain(torch, ctx, label, flops, fn, filler, seconds=MIX_S,
                                 chunk=CHUNK if label != "fa2_fwd_bwd" else 5)
        except Exception as exc:  # noqa: BLE001
            res[label] = {"error": repr(exc)[:300]}


def block_ratios(torch, ctx, res, shapes) -> None:
    """Block-scaled over per-tensor fp8 time of each (m, n, k) of ``shapes`` as a weight gradient
    (1x128 by 1x128) and a forward (1x128 by 128x128), into ``res["ratios"]``."""
    res.update(failed=[], ratios={})
    for (m, n, k), op in ((mnk, op) for mnk in shapes for op in ("wgrad", "fwd")):
        key = f"m{m}-n{n}-k{k}-{op}"
        try:
            (_, tensor), (_, block) = fp8_cases(torch, m, n, k, op)
            t_t = ctx["timer"].warm(tensor, reps=10, graph=True)
            t_b = ctx["timer"].warm(block, reps=10, graph=True)
        except Exception as exc:  # noqa: BLE001
            res["failed"].append(f"{key}: {exc!r}"[:300])
            continue
        res["ratios"][key] = {"tensor_us": round(t_t * 1e6, 2), "block_us": round(t_b * 1e6, 2),
                              "block_rate_of_tensor": round(t_t / t_b, 4)}


def block_k_sweep(torch, ctx, res):
    """Block-scaled over per-tensor fp8 rate against the depth k (``SWEEP_KS``) for three output
    shapes: a cost per 128-deep k block (the promotion) keeps the ratio flat in k, a fixed cost
    per tile (prologue, epilogue, scale loads) lets it rise with k."""
    block_ratios(torch, ctx, res, [(m, n, k) for (m, n) in SWEEP_MN for k in SWEEP_KS])


FUNCS = {"dsv3_gemms": dsv3_gemms, "sustained": sustained, "power_mix": power_mix,
         "duty_sweep": duty_sweep, "layer_loop": layer_loop, "fa_dropout": fa_dropout,
         "fa_dropout2": fa_dropout2, "power_classes": power_classes,
         "block_k_sweep": block_k_sweep, "power_side": power_side, "cudnn_dropout": cudnn_dropout}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.environ.get("OUT", "device_checks40_out"))
    p.add_argument("--budget-s", type=float, default=240.0)
    p.add_argument("--sections", default=",".join(SECTIONS))
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("--from-json", metavar="JSON", help="write OUT's kernels rows from a saved "
                   "device_checks40.json (no GPU) and stop")
    args = p.parse_args(argv)
    if args.from_json:
        write_kernels(Path(args.out), rows_from_json(Path(args.from_json)))
        return 0
    wanted = wanted_sections(p, args.sections, SECTIONS)
    if args.dry_run:
        print(section_plan("device_checks40", SECTIONS, wanted, START_S, args.budget_s, args.out))
        return 0
    torch, ctx, report, save = open_run(Path(args.out), "device_checks40", "dc40", args.budget_s)
    if torch is None:
        return 1
    run_sections(torch, ctx, wanted, FUNCS, report["sections"], save)
    secs = report["sections"]
    digest = {"env": report["env"],
              "sm112": secs.get("dsv3_gemms", {}).get("t_sm112_over_t_full"),
              "sustained": {k: {kk: v[kk] for kk in ("first_chunk_tflops", "first_s_tflops",
                                                     "last_2s_tflops",
                                                     "ratio_last_over_first_chunk")}
                            for sec in ("sustained", "power_mix", "duty_sweep", "layer_loop", "power_classes",
                                        "power_side")
                            for k, v in secs.get(sec, {}).items()
                            if isinstance(v, dict) and "first_s_tflops" in v},
              "block_k": {k: v["block_rate_of_tensor"] for k, v in
                          secs.get("block_k_sweep", {}).get("ratios", {}).items()},
              "dropout": {**secs.get("fa_dropout", {}).get("dropout_ratio", {}),
                          **secs.get("fa_dropout2", {}).get("dropout_ratio", {}),
                          **{f"cudnn-{k}": v for k, v in
                             secs.get("cudnn_dropout", {}).get("dropout_ratio", {}).items()}},
              "failed": {k: (v.get("failed") or v.get("error", "")[-400:] or None)
                         for k, v in secs.items()}}
    print(json.dumps(digest)[:9000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
