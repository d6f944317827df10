"""What DeepSeek's weight-gradient (W) pass is made of, kernel by kernel, against trainsim's W
ops for the same chunk (39th session, wgrad39).

    python benchmarks/wgrad39_parts.py [--trace train.json] [--write] [--format json]

deepseek-ai/profile-data@4496024 ``train.json`` (one DualPipe pair on one H800, EP64, 4K
sequence, two 4-MoE-layer chunks; benchmarks/dualpipe39_profile.py reads the same trace) labels
its host ranges ``attn(W)`` and ``mlp(W)``; every kernel launched inside one is counted under it
(as dualpipe39_profile.py counts them). Per MoE layer the W ranges launch, in this order:

- ``attn(W)``: five ``fp8_dptp128c_acc`` GEMMs, the MLA projections' weight gradients (their
  durations follow the projections' FLOPs: out_proj 16384x7168, kv_up 512x32768, q_up
  1536x24576, kv_down 7168x576, q_down 7168x1536, each times 4,096 tokens);
- ``mlp(W)``: one GEMM (the shared expert's fc2), a ``per_channel_cast_and_transpose`` of a
  34,688 x 7,168 tensor (the routed tokens' output gradient, re-quantized along the token axis
  and transposed for the GEMM's K-major operand), four GEMMs (the four local experts' fc2, two
  streams), a second cast-and-transpose (the routed tokens' inputs), four GEMMs (the experts'
  fc1, 7168 x 4096, alternating streams), and one GEMM (the shared expert's fc1).

The W GEMM kernel (``fp8_dptp128c_acc``) scales both operands per 128 elements of k (the token
axis) and accumulates into the fp32 gradient (``_acc``); the forward and input-gradient GEMMs
(``fp8_ptp128c``, ``m_grouped_fp8_ptp128c``) scale one operand per 128 x 128 block. DeepSeek-V3
report §3.3.1 (Wgrad in FP8), §3.3.3 (activations cached in FP8) and §3.4.2 ("activations ...
quantized into 1x128 FP8 tiles ... During the backward pass, the matrix needs to be read out,
dequantized, transposed, re-quantized into 128x1 tiles"). DeepGEMM's open wgrad kernel of the
same scaling (deepseek-ai/DeepGEMM@d5470d3b deep_gemm/include/deep_gemm/fp8_wgrad_gemm.cuh,
math warpgroups) waits for its WGMMAs (``warpgroup_wait<0>``) and then promotes each 128-deep
k block with both scales, ``final += scale_a * scale_b * accum``, one product more per element
than the forward kernel's promotion.

``--write`` keeps what the script reads in ``wgrad39_parts.json`` (figures only, no trace text).
"""

from __future__ import annotations

import bisect
import json
import math
from collections import defaultdict
from pathlib import Path

from dualpipe39_profile import (  # the trace's reader, its mirror and the run it profiles
    CONFIG,
    DUALPIPE,
    MIRROR,
    SOURCE,
    load_trace,
    measured_figures,
)

__all__ = ["MIRROR", "load_trace", "main", "measure", "simulated"]

KEPT = Path(__file__).resolve().parent / "wgrad39_parts.json"
WGRAD_KERNEL = "fp8_dptp128c_acc"
FWD_KERNELS = ("fp8_ptp128c::", "m_grouped_fp8_ptp128c::")
CAST_T = "per_channel_cast_and_transpose"
# the order of one mlp(W) range's GEMMs (module docstring)
MLP_W_ORDER = (("shared_fc2",) + ("expert_fc2",) * 4 + ("expert_fc1",) * 4 + ("shared_fc1",))
ATTN_W_ORDER = ("out_proj", "kv_up_proj", "q_up_proj", "kv_down_proj", "q_down_proj")
CATEGORIES = (
    ("MLA projections (attn(W))", ATTN_W_ORDER),
    ("shared expert fc1 + fc2", ("shared_fc1", "shared_fc2")),
    ("routed experts fc2 (4 experts, 2 streams)", ("expert_fc2",)),
    ("routed experts fc1 (4 experts)", ("expert_fc1",)),
    ("router (bf16; DeepSeek: under attn(B))", ("router",)),
)


def _union_s(spans: list[tuple[float, float]]) -> float:
    """Seconds covered by the (start, end) spans, in microseconds in, seconds out."""
    total, end = 0.0, float("-inf")
    for a, b in sorted(spans):
        if b > end:
            total += b - max(a, end)
            end = b
    return total * 1e-6


def measure(trace: dict) -> dict:
    """The W pass's kernels by category (module docstring), with the forward and input-gradient
    passes' fp8 GEMM kernels for comparison. Seconds."""
    ev = trace["traceEvents"]
    gpu = sorted((e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")),
                 key=lambda e: e["ts"])
    ann = sorted((e for e in ev if e.get("cat") == "user_annotation"
                  and e["name"] != "1F1B" and not e["name"].startswith("ProfilerStep")),
                 key=lambda e: e["ts"])
    launches = {e["args"]["correlation"]: e for e in ev
                if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
    starts = [a["ts"] for a in ann]
    by_range: dict[int, list[dict]] = defaultdict(list)
    for e in gpu:
        r = launches.get(e.get("args", {}).get("correlation"))
        i = bisect.bisect_right(starts, r["ts"]) - 1 if r else -1
        if i >= 0 and r["ts"] <= ann[i]["ts"] + ann[i]["dur"]:
            by_range[i].append(e)
    op_s: dict[str, float] = defaultdict(float)
    op_kernels: dict[str, int] = defaultdict(int)
    op_spans: dict[str, list[tuple[float, float]]] = defaultdict(list)
    casts: list[float] = []
    w_spans: list[tuple[float, float]] = []
    w_streams: set[int] = set()
    other_gemm = {"F": [0.0, 0], "B": [0.0, 0]}
    router_b = 0.0
    layers = 0
    for i, kernels in sorted(by_range.items()):
        name = ann[i]["name"]
        if name in ("attn(W)", "mlp(W)"):
            gemms = [e for e in kernels if WGRAD_KERNEL in e["name"]]
            order = ATTN_W_ORDER if name == "attn(W)" else MLP_W_ORDER
            if len(gemms) != len(order) or len(gemms) + sum(CAST_T in e["name"]
                                                            for e in kernels) != len(kernels):
                raise ValueError(f"{name} range {i}: {len(kernels)} kernels, not the expected "
                                 f"{len(order)} GEMMs and casts")
            for op, e in zip(order, gemms):
                op_s[op] += e["dur"] * 1e-6
                op_kernels[op] += 1
                op_spans[op].append((e["ts"], e["ts"] + e["dur"]))
            casts += [e["dur"] * 1e-6 for e in kernels if CAST_T in e["name"]]
            w_spans += [(e["ts"], e["ts"] + e["dur"]) for e in kernels]
            w_streams |= {e["tid"] for e in kernels}
            layers += name == "mlp(W)"
        elif name.endswith(("(F)", "(B)")) and not name.startswith(("dispatch", "combine")):
            side = name[-2]
            for e in kernels:
                if any(k in e["name"] for k in FWD_KERNELS):
                    other_gemm[side][0] += e["dur"] * 1e-6
                    other_gemm[side][1] += 1
                if side == "B" and "xmma_gemm_bf16f32_bf16f32_f32_nt" in e["name"]:
                    router_b += e["dur"] * 1e-6  # MatmulToFP32Backward: the router's wgrad
    return {
        "source": SOURCE,
        "gpu": trace["deviceProperties"][0]["name"],
        "moe_layers": layers,
        "wgrad_s": dict(op_s),
        "wgrad_wall_s": {op: _union_s(s) for op, s in op_spans.items()},
        "wgrad_kernels": dict(op_kernels),
        "gemm_ctas": sorted({math.prod(e["args"]["grid"]) for e in gpu
                             if "grouped_gemm::cuda::" in e["name"] and "Gemm" in e["name"]}),
        "wgrad_grids": sorted({str(e["args"]["grid"]) for k in by_range.values() for e in k
                               if WGRAD_KERNEL in e["name"]}),
        "cast_transpose_s": casts,
        "router_wgrad_in_attn_b_s": router_b,
        "w_kernel_sum_s": sum(op_s.values()) + sum(casts),
        "w_wall_s": _union_s(w_spans),
        "w_streams": sorted(w_streams),
        "fp8_gemm_F_s": other_gemm["F"][0], "fp8_gemm_F_kernels": other_gemm["F"][1],
        "fp8_gemm_B_s": other_gemm["B"][0], "fp8_gemm_B_kernels": other_gemm["B"][1],
    }


def simulated() -> dict:
    """trainsim's ops of one MoE layer of the example's middle stage under DualPipe, priced one
    by one: the W pass's (``pipeline.is_weight_grad``), the forward's and the I pass's GEMMs,
    and the casts and transposes trainsim prices for the routed experts' wgrad operands
    (outside W). Seconds per layer, FLOPs per layer."""
    import trainsim
    from trainsim.pipeline import is_weight_grad
    from trainsim.pricing import Pricer
    from trainsim.workload.layers import backward_of, layer_forward
    from trainsim.workload.moe_dispatch import EXCHANGE_SMS
    from trainsim.workload.ops import Elementwise, Gemm
    from trainsim.workload.recompute import layer_recompute
    from trainsim.workload.shard import shard_of

    cfg = trainsim.load_run_config(CONFIG, DUALPIPE)
    pricer, sh = Pricer(cfg), shard_of(cfg)
    lf = layer_forward(cfg, sh, moe=True)
    lb = layer_recompute(cfg, sh, lf) + backward_of(lf, sh)
    v = cfg.parallel.pp // 2

    def t(op) -> float:
        return pricer.price([op]).duration_s

    w = [op for op in lb if is_weight_grad(op)]
    fwd_gemms = [op for op in lf if isinstance(op, Gemm) and op.dtype == "fp8"]
    i_gemms = [op for op in lb if isinstance(op, Gemm) and not is_weight_grad(op)
               and op.dtype == "fp8"]
    expert_casts = [op for op in lf + lb if isinstance(op, Elementwise)
                    and op.name in ("expert_fc1.cast_transpose", "expert_fc2.grad_cast_transpose")]
    return {
        "stage_layers": cfg.stage_layer_counts[v],
        "num_sms": cfg.cluster.gpu.num_sms, "exchange_sms": EXCHANGE_SMS["deepep"],
        "wgrad_s": {op.name.removesuffix(".wgrad"): t(op) for op in w},
        "wgrad_flops": {op.name.removesuffix(".wgrad"): op.flops for op in w},
        "wgrad_ops": [op.name for op in w],
        "w_pass_s": pricer.price(w).duration_s,
        "fwd_gemm_s": sum(map(t, fwd_gemms)), "fwd_gemm_flops": sum(o.flops for o in fwd_gemms),
        "i_gemm_s": sum(map(t, i_gemms)), "i_gemm_flops": sum(o.flops for o in i_gemms),
        "expert_casts_outside_w_s": {op.name: t(op) for op in expert_casts},
    }


def rows(m: dict, sim: dict) -> list[tuple[str, float, float, float, str]]:
    """(category, measured kernel-sum s per chunk, measured wall s (the union of the
    category's kernels' spans), trainsim s per chunk, kernels) for the W pass."""
    n = sim["stage_layers"]
    out = []
    for name, ops in CATEGORIES:
        meas = sum(m["wgrad_s"].get(op, 0.0) for op in ops)
        wall = sum(m["wgrad_wall_s"].get(op, 0.0) for op in ops)
        kern = sum(m["wgrad_kernels"].get(op, 0) for op in ops)
        if ops == ("router",):
            meas = wall = m["router_wgrad_in_attn_b_s"]
            kern = m["moe_layers"]
        priced = n * sum(sim["wgrad_s"].get(op, 0.0) for op in ops)
        out.append((name, meas, wall, priced, f"{kern} GEMMs"))
    casts = m["cast_transpose_s"]
    out.append(("cast + transpose of the experts' wgrad operands", sum(casts), sum(casts),
                0.0, (f"{len(casts)} {CAST_T} (trainsim: "
                      f"{n * sum(sim['expert_casts_outside_w_s'].values()) * 1e3:.1f} ms, "
                      "in F and I)")))
    out.append(("fp32 gradient accumulation", 0.0, 0.0, 0.0,
                "fused in the GEMMs' epilogue (_acc); trainsim: no separate op"))
    return out


def rates(m: dict, sim: dict) -> list[tuple[str, float, float, float]]:
    """(pass, TFLOP/s measured, TFLOP/s priced, FLOPs per chunk) of the fp8 GEMMs of each pass
    over trainsim's FLOPs of the same GEMMs (the I pass's include the MLA up-projections'
    recompute in both)."""
    n = sim["stage_layers"]
    wf = n * sum(f for k, f in sim["wgrad_flops"].items() if k != "router")
    ws = sum(m["wgrad_s"].values())
    wp = n * sum(s for k, s in sim["wgrad_s"].items() if k != "router")
    ww = sum(m["wgrad_wall_s"].values())
    return [("forward (fp8_ptp128c, m_grouped)", n * sim["fwd_gemm_flops"] / m["fp8_gemm_F_s"],
             sim["fwd_gemm_flops"] / sim["fwd_gemm_s"], n * sim["fwd_gemm_flops"]),
            ("input gradient + recompute (same kernels)",
             n * sim["i_gemm_flops"] / m["fp8_gemm_B_s"],
             sim["i_gemm_flops"] / sim["i_gemm_s"], n * sim["i_gemm_flops"]),
            ("weight gradient (fp8_dptp128c_acc; kernel sum)", wf / ws, wf / wp, wf),
            ("weight gradient (fp8_dptp128c_acc; wall)", wf / ww, wf / wp, wf)]


def main() -> None:
    args, m = measured_figures(__doc__, KEPT, measure)
    sim = simulated()
    table, speed = rows(m, sim), rates(m, sim)
    if args.format == "json":
        print(json.dumps({"measured": m, "simulated": sim,
                          "rows": [dict(zip(("category", "measured_s", "measured_wall_s", "priced_s",
                                                    "kernels"), r))
                                   for r in table],
                          "rates": [dict(zip(("pass", "measured_flops", "priced_flops",
                                              "flop"), r)) for r in speed]}, indent=1))
        return
    n = sim["stage_layers"]
    print(f"{m['source']}: {m['gpu']}, {m['moe_layers']} MoE layers' W ranges; trainsim: "
          f"{n} layers of the example's middle stage, W priced {n * sim['w_pass_s'] * 1e3:.1f} ms")
    print("| W category | measured ms (kernel sum) | measured ms (wall) | trainsim ms | "
          "wall / trainsim | kernels |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, a, w, b, k in table:
        ratio = f"{w / b:.2f}" if w and b else "-"
        print(f"| {name} | {a * 1e3:.1f} | {w * 1e3:.1f} | {b * 1e3:.1f} | {ratio} | {k} |")
    total_p = n * sim["w_pass_s"]
    print(f"| **W pass** | **{m['w_kernel_sum_s'] * 1e3:.1f}** | **{m['w_wall_s'] * 1e3:.1f}** | "
          f"**{total_p * 1e3:.1f}** | {m['w_wall_s'] / total_p:.2f} | streams {m['w_streams']}"
          " (the experts' GEMMs on two) |")
    print()
    sms, held = sim["num_sms"], sim["exchange_sms"]
    print(f"| fp8 GEMMs of the pass | measured TFLOP/s | trainsim TFLOP/s | trainsim x "
          f"{sms - held}/{sms} | measured / (trainsim x {sms - held}/{sms}) | GFLOP per chunk |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, a, b, f in speed:
        b112 = b * (sms - held) / sms
        print(f"| {name} | {a / 1e12:.0f} | {b / 1e12:.0f} | {b112 / 1e12:.0f} | {a / b112:.2f} "
              f"| {f / 1e9:.0f} |")
    print(f"every GEMM of the pair runs {m['gemm_ctas']} CTAs (grids {m['wgrad_grids']} in W), "
          f"the SMs DeepEP's {held} leave, whether or not an exchange runs beside it")


if __name__ == "__main__":
    main()
