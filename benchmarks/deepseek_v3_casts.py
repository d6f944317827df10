"""DeepSeek's fp8 cast and transpose kernels sorted by what each is for, against what a
blockwise-fp8 recipe needs and what the example prices; DeepEP's residency split by kernel
(issue 20 item 3, 44th session, cast44).

    python benchmarks/deepseek_v3_casts.py [--trace train.json] [--write] [--format json]

deepseek-ai/profile-data@4496024 ``train.json`` (one DualPipe pair of a middle rank: 4 MoE
layers' forward beside 4 layers' backward, one H800, 132 SMs) is read launch by launch: each
cast / transpose kernel's family, grid and stream, and the DualPipe phase whose host range
launched it (``attn(F)``, ``mlp(B)``, ``mlp(W)``, ...: the trace's own annotations). ``--write``
keeps the figures in ``deepseek_v3_casts_trace.json`` (figures and kernel family names only).

Roles (``role``; by the kernel's family, and for one family its phase):

* ``weight_transpose``: ``transpose`` / ``batched_transpose`` of 128 x 128-block fp8 weights,
  every micro-batch. Their grids are the weights' 128 x 128 tile counts (out_proj
  16384 x 7168: 7168 tiles; kv_up 512 x 32768: 1024; the 4 local experts' fc1 7168 x 4096 x 4:
  7168; ``weight_tiles``). DeepGEMM takes only the NT layout, both operands K-major, and leaves
  transposes to the caller (deepseek-ai/DeepGEMM README, "Interfaces / Notices"); the dgrad
  GEMM needs the weight's other major. Transformer Engine quantises a weight with both usages
  once and keeps it across micro-batches (NVIDIA/TransformerEngine@d0067d0
  transformer_engine/pytorch/module/linear.py L479 ``update_ws = is_first_microbatch is None
  or is_first_microbatch``): a framework's choice, not the recipe's.
* ``e5m6``: the attention output kept in DeepSeek's E5M6 format and cast back (DeepSeek-V3
  §3.3.3 (1)); priced since dsv3k43 (``attn_out.e5m6_cast``).
* ``activation_cache``: the per-token casts launched in ``mlp(F)``: the SwiGLU inputs cached
  in fp8 and recomputed in the backward (DeepSeek-V3 §3.3.3 (2)). Their rows are the
  dispatched rows (and 4096 for the shared expert); over 7168 columns (a GEMM input) they would
  move 3.7 TB/s, past the H800's 3.35 (``implied_tb_s``), over 4096 (the SwiGLU input) 2.1.
* ``cast_back``: ``cast_back_impl``, fp8 back to bf16 for the backward's recompute.
  Both priced since cast44 as Megatron-core's ``activation_func_fp8_input_store``, the option
  the example sets for this storage (``workload.shard.fp8_input_store``: a cast to fp8 beside
  each fused SwiGLU, again in ``moe_act``'s re-run, and a cast back in the backward).
* ``rowwise`` / ``columnwise``: the recipe's own operand casts, made as two kernels: a
  per-token (1 x 128) cast for the fprop / dgrad operand, and a separate
  ``per_channel_cast_and_transpose`` (128 x 1, transposed, K-major for DeepGEMM) for the wgrad
  operand, launched in the backward (the wgrad of the dispatched tokens in ``mlp(W)``: a
  1 x 128-scaled fp8 tensor cannot give 128 x 1 scales without a requantisation). Transformer
  Engine's blockwise quantiser writes both from one read of the input
  (transformer_engine/common/transpose/quantize_transpose_vector_blockwise.cu L175-L186,
  ``return_rowwise`` / ``return_columnwise_gemm_ready``, Steps 2 and 3 at L334): the example's
  ``cast_transpose`` / ``grad_cast_transpose``, one kernel an operand and pass
  (``workload.shard.fp8_cast_kernels``).

DeepEP (``deepep_residency``): its kernels' time by kind against the example's transfer times
(``Pricer.comm_time`` of the layer's dispatch / combine). The dispatch and combine kernels'
receivers spin on the peers' tail index until their last token arrives
(deepseek-ai/DeepEP@f7fb36f csrc/kernels/intranode.cu ``dispatch``, "Workers for receiving":
``while (recv_thread_id_in_rank == 0) { ... ld_acquire_sys_global(channel_tail_idx ...``),
and ``notify_dispatch`` / ``cached_notify`` hold their CTAs through barriers across the EP
group (csrc/kernels/internode.cu ``cached_notify``): the SMs are held for the transfer plus
the wait for the last peer, and through the notify kernels, which move almost nothing.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

import trainsim
from trainsim.pricing import COMPUTE, Pricer
from trainsim.workload.ops import Comm

sys.path.insert(0, str(Path(__file__).resolve().parent))
try:
    import deepseek_v3 as dsv3
    import deepseek_v3_kernels as dk
finally:
    sys.path.pop(0)

SOURCE = dk.SOURCE
KEPT = Path(__file__).resolve().parent / "deepseek_v3_casts_trace.json"
ROLES = ("rowwise", "columnwise", "weight_transpose", "e5m6", "activation_cache", "cast_back")
RECIPE = ("rowwise", "columnwise")
"""The roles a blockwise recipe needs in general (one fused kernel in Transformer Engine)."""
H800_HBM_TB_S = 3.35
"""The H800's HBM3 bandwidth (NVIDIA H800 SXM datasheet), for ``implied_tb_s`` only."""


def role(fam: str, phase: str) -> str:
    """What a cast / transpose kernel of the trace is for (module docstring)."""
    if fam in ("transpose", "batched_transpose"):
        return "weight_transpose"
    if "special_fmt" in fam:
        return "e5m6"
    if fam == "cast_back_impl":
        return "cast_back"
    if fam == "per_token_cast_to_fp8_with_channels" and phase == "mlp(F)":
        return "activation_cache"
    if "per_channel_cast_and_transpose" in fam:
        return "columnwise"
    return "rowwise"


def measure(trace: dict) -> dict:
    """Every cast / transpose launch grouped by (phase, family, grid, stream), microseconds;
    the DeepEP kernels' time by kind."""
    ev = trace["traceEvents"]
    ann = sorted((e for e in ev if e.get("cat") == "user_annotation" and e["name"] != "1F1B"
                  and not e["name"].startswith("ProfilerStep")), key=lambda e: e["ts"])
    runtime = {e["args"]["correlation"]: e for e in ev
               if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
    gpu = [e for e in ev if e.get("cat") == "kernel"]
    exchange = {e["args"]["stream"] for e in gpu if dk.kernel_class(e["name"]) == "deepep"}

    def phase(e: dict) -> str:
        r = runtime.get(e["args"].get("correlation"))
        hits = [a["name"] for a in ann if r and a["ts"] <= r["ts"] <= a["ts"] + a["dur"]]
        return hits[0] if hits else ""

    groups: dict[tuple, list[float]] = defaultdict(list)
    deepep: dict[str, list[float]] = defaultdict(list)
    for e in gpu:
        name = e["name"].replace("void ", "")
        if dk.kernel_class(e["name"]) == "deepep":
            deepep[dk.cast_family(name)].append(e["dur"])
        elif dk.kernel_class(e["name"]) == "other" and dk.other_family(e["name"]) == "casts":
            g = e["args"]["grid"]
            key = (phase(e), dk.cast_family(name), g[0], g[1], g[2],
                   e["args"]["stream"] in exchange)
            groups[key].append(e["dur"])
    rows = [{"phase": p, "family": f, "grid": [x, y, z], "exchange_stream": xs,
             "launches": len(v), "us": sum(v)}
            for (p, f, x, y, z, xs), v in sorted(groups.items())]
    return {"source": SOURCE, "gpu": trace["deviceProperties"][0]["name"], "groups": rows,
            "deepep_us": {k: {"launches": len(v), "us": sum(v), "min": min(v), "max": max(v)}
                          for k, v in sorted(deepep.items())}}


def by_role(m: dict) -> dict:
    """The compute streams' cast launches and milliseconds by role."""
    out = {r: {"launches": 0, "ms": 0.0} for r in ROLES}
    for g in m["groups"]:
        if not g["exchange_stream"]:
            r = out[role(g["family"], g["phase"])]
            r["launches"] += g["launches"]
            r["ms"] += g["us"] / 1e3
    return out


def weight_tiles(h: int = 7168) -> dict[str, int]:
    """128 x 128 tiles of DeepSeek-V3's fp8 weights (config.json: hidden 7168, q_lora 1536,
    kv_lora 512 + rope 64, 128 heads of 128 + 64 (q) / 128 + 128 (kv), expert / shared
    intermediate 2048, 4 local experts at EP 64), against which the transposes' grids read."""
    t = lambda a, b: -(-a // 128) * -(-b // 128)
    return {"q_down": t(h, 1536), "kv_down": t(h, 576), "q_up": t(1536, 128 * 192),
            "kv_up": t(512, 128 * 256), "out_proj": t(128 * 128, h),
            "shared_fc1": t(h, 2 * 2048), "shared_fc2": t(2048, h),
            "experts_fc1": 4 * t(h, 2 * 2048), "experts_fc2": 4 * t(2048, h)}


def implied_tb_s(m: dict) -> dict[str, float]:
    """The mlp(F) per-token casts' rate over the dispatched rows were they 7168 columns wide (a
    GEMM input) or 4096 (the SwiGLU input): bf16 read, fp8 written (3 bytes an element)."""
    g = [x for x in m["groups"] if x["phase"] == "mlp(F)"
         and x["family"] == "per_token_cast_to_fp8_with_channels" and x["grid"][0] > 4096]
    rows = sum(x["grid"][0] * x["launches"] for x in g)
    us = sum(x["us"] for x in g)
    return {str(w): rows * w * 3 / (us * 1e-6) / 1e12 for w in (7168, 4096)}


PRICED_ROLES = ("fused_operand_cast", "e5m6", "activation_cache", "cast_back")


def priced_role(name: str) -> str:
    """The role of one of the example's cast segments: Transformer Engine's fused operand casts
    (``cast_transpose`` / ``grad_cast_transpose``), the E5M6 casts, the SwiGLU input's fp8
    store (``workload.shard.fp8_input_store``; again in a recompute) and its cast back."""
    if "e5m6" in name:
        return "e5m6"
    if "fp8_store_cast" in name:
        return "cast_back" if name.endswith(".bwd") else "activation_cache"
    return "fused_operand_cast"


def priced() -> dict:
    """The example's middle pair: its cast segments by role (fused operand casts, E5M6), and
    the layer's expert exchange transfer times."""
    from trainsim.pipeline import ScheduledPipeline
    from trainsim.simulator import _TaskGraph
    from trainsim.workload.layers import layer_forward
    from trainsim.workload.shard import shard_of
    cfg = trainsim.load_run_config(dsv3.CONFIG, dk.DUALPIPE)
    pricer = Pricer(cfg)
    s = ScheduledPipeline(_TaskGraph(cfg, pricer, None))
    v = cfg.parallel.pp // 2
    pair = s.pair_fwd[v] + s.pair_bwd[v]
    out = {r: {"launches": 0, "ms": 0.0} for r in PRICED_ROLES}
    for c, t, n in pair.segments:
        if c == COMPUTE and dk.other_family(n) == "casts":
            r = out[priced_role(n)]
            r["launches"] += 1
            r["ms"] += t * 1e3
    comms = {o.name: pricer.comm_time(o) * 1e3
             for o in layer_forward(cfg, shard_of(cfg), moe=True) if isinstance(o, Comm)}
    layers = sum(1 for c, _, n in pair.segments if n == "moe.dispatch_all_to_all")
    return {"casts": out, "transfer_ms": comms, "moe_layers": layers,
            "exchange_charge_ms": 1e3 * sum(t for c, t, _ in pair.segments if c == "ep_comm"),
            "pair_ms": pair.duration_s * 1e3}


def deepep_residency(m: dict, p: dict) -> dict:
    """DeepEP's kernel time by kind; the dispatch / combine kernels against the example's
    transfer times over the pair (each layer: forward dispatch and combine, their backwards
    the same sizes in bf16 both ways, the dispatch-direction one in bf16)."""
    d = m["deepep_us"]
    kernels = sum(v["us"] for k, v in d.items() if k in ("dispatch", "combine")) / 1e3
    notify = sum(v["us"] for k, v in d.items() if "notify" in k) / 1e3
    t = p["transfer_ms"]
    fp8, bf16 = t["moe.dispatch_all_to_all"], t["moe.combine_all_to_all"]
    transfer = p["moe_layers"] * (fp8 + 3 * bf16)
    return {"dispatch_combine_ms": kernels, "notify_ms": notify,
            "other_ms": sum(v["us"] for v in d.values()) / 1e3 - kernels - notify,
            "priced_transfer_ms": transfer, "kernels_over_transfer": kernels / transfer}


def run(m: dict) -> dict:
    p = priced()
    roles = by_role(m)
    recipe = {k: sum(roles[r][k] for r in RECIPE) for k in ("launches", "ms")}
    return {"measured_by_role": roles, "measured_recipe": recipe, "priced": p,
            "weight_tiles": weight_tiles(), "implied_tb_s": implied_tb_s(m),
            "deepep": deepep_residency(m, p)}


def main() -> None:
    ap = dk.trace_parser(__doc__.splitlines()[0], KEPT)
    args = ap.parse_args()
    m = dk.trace_figures(args, measure, KEPT)
    res = run(m)
    if args.format == "json":
        print(json.dumps(res, indent=1))
        return
    print(f"{m['source']} ({m['gpu']}): cast / transpose kernels of the compute streams")
    print("| role | launches | ms | priced launches | priced ms |")
    print("| --- | --- | --- | --- | --- |")
    pc = res["priced"]["casts"]
    for r, v in res["measured_by_role"].items():
        pr = pc.get(r, {"launches": "-", "ms": None})
        ms = f"{pr['ms']:.2f}" if pr["ms"] is not None else "-"
        print(f"| {r} | {v['launches']} | {v['ms']:.2f} | {pr['launches']} | {ms} |")
    rc, f = res["measured_recipe"], pc["fused_operand_cast"]
    print(f"| rowwise + columnwise (the recipe's) | {rc['launches']} | {rc['ms']:.2f} | "
          f"{f['launches']} (fused) | {f['ms']:.2f} |")
    print("implied rate of the mlp(F) per-token casts, TB/s by width:",
          {k: round(v, 2) for k, v in res["implied_tb_s"].items()}, f"(H800 {H800_HBM_TB_S})")
    d = res["deepep"]
    print(f"DeepEP: dispatch + combine kernels {d['dispatch_combine_ms']:.1f} ms against "
          f"{d['priced_transfer_ms']:.1f} ms priced transfer ({d['kernels_over_transfer']:.2f}x);"
          f" notify kernels {d['notify_ms']:.1f} ms; layout {d['other_ms']:.1f} ms")


if __name__ == "__main__":
    main()
