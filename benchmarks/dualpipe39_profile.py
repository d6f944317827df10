"""DeepSeek's measured DualPipe pair against trainsim's (issue 20 item 3, 39th session).

    python benchmarks/dualpipe39_profile.py [--trace train.json] [--write] [--format json]

deepseek-ai/profile-data@4496024 ``train.json`` is a PyTorch-profiler trace of one overlapped
pair of DualPipe: the forward of one 4-MoE-layer chunk and the backward of another, on one
H800 of an EP64 TP1 run with 4K sequences (its README: "Each chunk contains 4 MoE layers. The
parallel configuration aligns with DeepSeek-V3 pretraining settings ... the PP communication is
not included"; routing "absolutely balanced"). ``--trace`` reads it (default: the fetched
mirror, ``git --git-dir /work/.mirror/deepseek-ai+profile-data/repo show HEAD:train.json``)
and ``--write`` keeps what this script reads of it in ``dualpipe39_profile_pair.json``
(measured figures only, no trace text): the GPU span of the pair, each stream's busy time,
the compute kernels by the CPU-side annotation that launched them (``attn(F)``, ``mlp(F)``,
``attn(B)``, ``mlp(B)``, ``attn(W)``, ``mlp(W)``; the exchange kernels under ``dispatch(*)``
and ``combine(*)``), the DeepEP kernels' grid (blocks = SMs held) and the attention kernel's
grid (sequence tiles x heads, which fixes the micro-batch at one 4,096-token sequence).

It then prices the same pair in trainsim: the middle stage of examples/deepseek-v3-h800.yaml
under DualPipe (four MoE layers, as in the trace), its forward, input-gradient (I) and
weight-gradient (W) passes' compute, the expert exchange, and the pair F&B as
``pipeline.pair_pricer`` prices it (the all-to-alls' 20 SMs charged only while an all-to-all
runs beside compute) and as trainsim priced it before the 39th session (the pair's whole
compute on 112 of 132 SMs), recomputed here for the comparison.
"""

from __future__ import annotations

import argparse
import bisect
import json
import subprocess
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

MIRROR = Path("/work/.mirror/deepseek-ai+profile-data/repo")
SOURCE = "deepseek-ai/profile-data@4496024:train.json"
KEPT = Path(__file__).resolve().parent / "dualpipe39_profile_pair.json"
CONFIG = Path(__file__).resolve().parents[1] / "examples" / "deepseek-v3-h800.yaml"
DUALPIPE = ["parallel.pipeline_schedule=dualpipe", "parallel.moe_overlap_ep_comm=false"]
PARTS = ("attn(F)", "mlp(F)", "attn(B)", "mlp(B)", "attn(W)", "mlp(W)")


def load_trace(path: str | None) -> dict:
    if path:
        return json.loads(Path(path).read_text())
    out = subprocess.run(["git", "--git-dir", str(MIRROR), "show", "HEAD:train.json"],
                         check=True, capture_output=True).stdout
    return json.loads(out)


def measure(trace: dict) -> dict:
    """The pair's figures from the trace (module docstring), in seconds."""
    ev = trace["traceEvents"]
    gpu = [e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    ann = sorted((e for e in ev if e.get("cat") == "user_annotation"
                  and e["name"] != "1F1B" and not e["name"].startswith("ProfilerStep")),
                 key=lambda e: e["ts"])
    launches = {e["args"]["correlation"]: e for e in ev
                if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
    exchange = {e["tid"] for e in gpu if "::ep::" in e["name"]}
    starts = [a["ts"] for a in ann]
    by_part: dict[str, float] = defaultdict(float)
    unplaced = 0.0
    for e in gpu:
        if e["tid"] in exchange:
            continue
        r = launches.get(e.get("args", {}).get("correlation"))
        i = bisect.bisect_right(starts, r["ts"]) - 1 if r else -1
        if i >= 0 and r["ts"] <= ann[i]["ts"] + ann[i]["dur"]:
            by_part[ann[i]["name"]] += e["dur"] * 1e-6
        else:
            unplaced += e["dur"] * 1e-6
    streams: dict[str, float] = defaultdict(float)
    for e in gpu:
        streams[str(e["tid"])] += e["dur"] * 1e-6
    deepep = [e for e in gpu if "::ep::internode::dispatch<" in e["name"]
              or "::ep::internode::combine<" in e["name"]]
    attn = next(e for e in gpu if "compute_attn" in e["name"])
    return {
        "source": SOURCE,
        "gpu": trace["deviceProperties"][0]["name"],
        "num_sms": trace["deviceProperties"][0]["numSms"],
        "world_size": trace["distributedInfo"]["world_size"],
        "span_s": (max(e["ts"] + e["dur"] for e in gpu) - min(e["ts"] for e in gpu)) * 1e-6,
        "stream_busy_s": dict(streams),
        "exchange_stream": sorted(exchange),
        "compute_by_part_s": {k: by_part[k] for k in PARTS},
        "compute_unplaced_s": unplaced,
        "deepep_kernels": len(deepep),
        "deepep_kernel_s": sum(e["dur"] for e in deepep) * 1e-6,
        "deepep_blocks": sorted({e["args"]["grid"][0] for e in deepep}),
        "attention_fwd_grid": attn["args"]["grid"],
    }


def simulated() -> dict:
    """trainsim's middle-stage passes of the DualPipe example (seconds)."""
    import trainsim
    from trainsim.chunks import chunks as priced_chunks
    from trainsim.pipeline import ScheduledPipeline
    from trainsim.pricing import COMPUTE, Pricer
    from trainsim.simulator import _TaskGraph
    from trainsim.workload.shard import shard_of

    cfg = trainsim.load_run_config(CONFIG, DUALPIPE)
    g = _TaskGraph(cfg, Pricer(cfg), None)
    s = ScheduledPipeline(g)
    v = cfg.parallel.pp // 2

    def compute(p) -> float:
        return sum(t for c, t, _ in p.segments if c == COMPUTE)

    # before the 39th session: the pair's whole compute on the 112 SMs the exchange leaves
    pc = replace(cfg, parallel=replace(cfg.parallel, moe_overlap_ep_comm=True))
    old = priced_chunks(pc, Pricer(pc, sm_share={"dp": 0.0, "ep": 0.0}), shard_of(pc),
                        g.layer_source)[v]
    sms = cfg.cluster.gpu.num_sms
    slow = sms / (sms - 20)
    old_fb = sum(t * slow if c == COMPUTE else t
                 for c, t, _ in old.fwd.segments + old.bwd.segments)
    return {"layers": cfg.stage_layer_counts[v],
            "F_compute_s": compute(s.fwd[v]), "I_compute_s": compute(s.split[v][0]),
            "W_compute_s": compute(s.split[v][1]),
            "exchange_s": sum(t for c, t, _ in s.fwd[v].segments + s.bwd[v].segments
                              if c == "ep_comm"),
            "pair_s": s.pair_fwd[v].duration_s + s.pair_bwd[v].duration_s,
            "pair_before_39_s": old_fb}


def compare(m: dict, sim: dict) -> list[tuple[str, float, float]]:
    """(figure, measured, simulated) rows, seconds."""
    part = m["compute_by_part_s"]
    f = part["attn(F)"] + part["mlp(F)"]
    i = part["attn(B)"] + part["mlp(B)"]
    w = part["attn(W)"] + part["mlp(W)"]
    return [("forward compute (attn(F) + mlp(F))", f, sim["F_compute_s"]),
            ("input-gradient compute (attn(B) + mlp(B))", i, sim["I_compute_s"]),
            ("weight-gradient compute (attn(W) + mlp(W))", w, sim["W_compute_s"]),
            ("all compute of the pair", f + i + w,
             sim["F_compute_s"] + sim["I_compute_s"] + sim["W_compute_s"]),
            ("pair F&B (span; trainsim: pair_pricer)", m["span_s"], sim["pair_s"]),
            ("pair F&B, trainsim before the 39th session", m["span_s"],
             sim["pair_before_39_s"])]


def measured_figures(doc: str, kept: Path, measure_trace) -> tuple[argparse.Namespace, dict]:
    """The command line (``--trace``, ``--write``, ``--format``) of a script that reads the
    trace, and its measured figures: from the trace given or the mirror when asked for or when
    ``kept`` is absent (written to ``kept`` with ``--write``), else the kept ones."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--trace", help="train.json (default: the fetched mirror; else the kept "
                    "figures)")
    ap.add_argument("--write", action="store_true", help=f"keep the figures in {kept.name}")
    ap.add_argument("--format", choices=("table", "json"), default="table")
    args = ap.parse_args()
    if args.trace or args.write or not kept.exists():
        m = measure_trace(load_trace(args.trace))
        if args.write:
            kept.write_text(json.dumps(m, indent=1) + "\n")
        return args, m
    return args, json.loads(kept.read_text())


def main() -> None:
    args, m = measured_figures(__doc__, KEPT, measure)
    sim = simulated()
    rows = compare(m, sim)
    if args.format == "json":
        print(json.dumps({"measured": m, "simulated": sim,
                          "rows": [{"figure": a, "measured_s": b, "simulated_s": c}
                                   for a, b, c in rows]}, indent=1))
        return
    print(f"{m['source']}: {m['gpu']}, EP{m['world_size']}, DeepEP kernels on "
          f"{m['deepep_blocks']} blocks of {m['num_sms']} SMs, attention grid "
          f"{m['attention_fwd_grid']}; trainsim middle stage: {sim['layers']} layers")
    print("| figure | measured ms | trainsim ms | trainsim / measured |")
    print("| --- | --- | --- | --- |")
    for name, a, b in rows:
        print(f"| {name} | {a * 1e3:.1f} | {b * 1e3:.1f} | {b / a - 1:+.1%} |")
    print(f"exchange kernels: measured {m['deepep_kernel_s'] * 1e3:.1f} ms in "
          f"{m['deepep_kernels']} DeepEP dispatch/combine kernels (beside compute); trainsim "
          f"{sim['exchange_s'] * 1e3:.1f} ms of all-to-all")


if __name__ == "__main__":
    main()
