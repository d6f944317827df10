"""DeepSeek's profiled DualPipe pair, kernel class by kernel class, against the example's pricing
(issue 20 item 3, 43rd session: what the -6.5 % is made of).

    python benchmarks/deepseek_v3_kernels.py [--trace train.json] [--write] [--format json]

deepseek-ai/profile-data@4496024 ``train.json`` (one overlapped pair of a middle DualPipe rank:
the forward of one 4-MoE-layer chunk beside the backward of another, one H800, EP64, 4K
sequences; the trace RESULTS "dualpipe39" and "wgrad39" read by host range) is read here by the
kernel itself: each GPU kernel sorted into fp8 GEMMs, 16-bit GEMMs, attention (forward; backward
with its pre- and post-processing kernels), DeepEP's exchange kernels and the rest, per stream;
the grid of every fp8 GEMM launch; how much fp8 GEMM time runs with no DeepEP kernel beside it;
and how long the compute stream waits inside the pair. ``--write`` keeps those figures in
``deepseek_v3_kernels_trace.json`` (figures and kernel family names only, no trace text).

What the kernels show (the kept file; tests/test_deepseek_v3_kernels.py):

* **The attention is FlashAttention-3.** The forward is ``flash::compute_attn_ws`` over
  ``Flash_fwd_kernel_traits<192, 128, 128, 12, 2, ...>`` and the backward
  ``flash::FlashAttnBwd<flash::CollectiveMainloopBwd<...>>`` with its ``FlashAttnBwdPreprocess``
  and ``FlashAttnBwdPostprocessConvertdQ`` kernels: FA3's Hopper kernels (Dao-AILab/
  flash-attention hopper/kernel_traits.h @d578cff1 ``Flash_fwd_kernel_traits``, hopper/
  flash_bwd_kernel.h @0eb8f680 ``class FlashAttnBwd``), at head dim 192. Until dsv3k43 the
  example priced ``training.attention`` flash2, the FA2 stand-in of
  ``compute.attention_head_dims``.
* **Every fp8 GEMM is launched on 112 CTAs** (132 less DeepEP's 20), also where no exchange
  kernel runs beside it: DeepGEMM-style persistent kernels whose grid is the SM count set for
  all GEMM kernels (deepseek-ai/DeepGEMM@5e365d30 deep_gemm/jit_kernels/utils.py ``set_num_sms``:
  "the maximum SM count for all GEMM kernels to use", one global). Without
  ``parallel.fp8_gemm_grid_excludes_exchange`` a GEMM keeps all 132 SMs where no all-to-all
  runs beside it (``pipeline.pair_pricer``).

Since the 43rd session (dsv3k43) the example runs both (``training.attention: flash3``,
``parallel.fp8_gemm_grid_excludes_exchange: true``, priced by ``gemm_overlap.fixed_grid_scale``
in every pass, the lone ones too); the variants price the same middle-stage pair, and the whole
DualPipe step, with either taken back: the FA2 stand-in (``training.attention=flash2``), and
fp8 GEMMs on all SMs where no exchange runs beside them.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

import trainsim
from trainsim.gemm_overlap import on_fixed_grid
from trainsim.pipeline import ScheduledPipeline
from trainsim.pricing import COMPUTE, Priced, Pricer
from trainsim.simulator import _TaskGraph
from trainsim.workload.ops import Op

sys.path.insert(0, str(Path(__file__).resolve().parent))
try:
    import deepseek_v3 as dsv3
    import deepseek_v3_phases as ph
    from dualpipe39_profile import load_trace  # the trace from the profile-data mirror
finally:
    sys.path.pop(0)

SOURCE = "deepseek-ai/profile-data@4496024:train.json"
KEPT = Path(__file__).resolve().parent / "deepseek_v3_kernels_trace.json"
DUALPIPE = dsv3.SETTINGS["dualpipe"]
FLASH2 = ["training.attention=flash2"]
ALL_SMS = ["parallel.fp8_gemm_grid_excludes_exchange=false"]
CLASSES = ("gemm_fp8", "gemm_16bit", "attention_fwd", "attention_bwd", "deepep", "other")
FA3_FAMILIES = ("flash::compute_attn_ws", "Flash_fwd_kernel_traits<192",
                "flash::FlashAttnBwd<flash::CollectiveMainloopBwd",
                "flash::FlashAttnBwdPreprocess", "flash::FlashAttnBwdPostprocessConvertdQ")
"""Kernel family names whose presence in the trace marks FlashAttention-3 (module docstring)."""


def kernel_class(name: str) -> str:
    """The class of one GPU kernel of the trace, by its name."""
    if "::ep::" in name:
        return "deepep"
    if "flash::" in name or "Flash" in name:
        return "attention_bwd" if "Bwd" in name else "attention_fwd"
    if "fp8" in name and "gemm" in name.lower() and "GemmKernel" in name:
        return "gemm_fp8"
    if "xmma_gemm" in name or "gemm_bf16" in name:
        return "gemm_16bit"
    return "other"


def other_family(name: str) -> str:
    """The family of a kernel of the class ``other`` (trace) or of an ``other`` segment
    (trainsim): fp8 casts, transposes and their inverses; normalizations; the rest."""
    if "cast" in name or "transpose" in name:
        return "casts"
    if "norm" in name:
        return "norms"
    return "rest"


def cast_family(name: str) -> str:
    """A cast or transpose kernel's family: its function name without template arguments
    (``per_token_cast_to_fp8_with_channels``, ``per_channel_cast_and_transpose``, ...)."""
    return name.split("<")[0].split("(")[0].split("::")[-1].strip()


def _union_s(spans: list[tuple[float, float]]) -> float:
    out, end = 0.0, float("-inf")
    for a, b in sorted(spans):
        if b > end:
            out += b - max(a, end)
            end = b
    return out


def measure(trace: dict) -> dict:
    """The pair's kernel figures (module docstring), seconds."""
    gpu = [e for e in trace["traceEvents"]
           if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    t0 = min(e["ts"] for e in gpu)
    span = (max(e["ts"] + e["dur"] for e in gpu) - t0) * 1e-6
    by: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for e in gpu:
        by[str(e["args"]["stream"])][kernel_class(e["name"])] += e["dur"] * 1e-6
    exchange = {s for s, c in by.items() if c.get("deepep")}
    compute = [e for e in gpu if str(e["args"]["stream"]) not in exchange]
    ep = [(e["ts"], e["ts"] + e["dur"]) for e in gpu if kernel_class(e["name"]) == "deepep"]
    fp8 = [e for e in gpu if kernel_class(e["name"]) == "gemm_fp8"]
    alone = 0.0  # fp8 GEMM time with no DeepEP kernel running
    for e in fp8:
        a, b = e["ts"], e["ts"] + e["dur"]
        beside = [(max(a, x), min(b, y)) for x, y in ep if x < b and y > a]
        alone += (b - a - _union_s(beside)) * 1e-6
    grids = sorted({e["args"]["grid"][0] * e["args"]["grid"][1] * e["args"]["grid"][2]
                    for e in fp8})
    names = " ".join(sorted({e["name"] for e in gpu}))
    families: dict[str, float] = defaultdict(float)
    for e in compute:
        if kernel_class(e["name"]) == "other":
            families[other_family(e["name"])] += e["dur"] * 1e-6
    casts: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for e in compute:
        if kernel_class(e["name"]) == "other" and other_family(e["name"]) == "casts":
            c = casts[cast_family(e["name"])]
            c[0] += 1
            c[1] += e["dur"] * 1e-6
    props = trace["deviceProperties"][0]
    return {
        "source": SOURCE, "gpu": props["name"], "num_sms": props["numSms"],
        "span_s": span,
        "by_stream_s": {s: {k: v for k, v in c.items()} for s, c in sorted(by.items())},
        "exchange_streams": sorted(exchange),
        "compute_union_s": _union_s([(e["ts"] * 1e-6, (e["ts"] + e["dur"]) * 1e-6)
                                     for e in compute]),
        "fp8_gemm_launches": len(fp8),
        "fp8_gemm_ctas": grids,
        "fp8_gemm_s": sum(e["dur"] for e in fp8) * 1e-6,
        "fp8_gemm_without_exchange_s": alone,
        "other_on_compute_streams_s": dict(sorted(families.items())),
        "cast_kernels": {k: {"launches": int(n), "s": t}
                         for k, (n, t) in sorted(casts.items(), key=lambda x: -x[1][1])},
        "fa3_families_present": [f for f in FA3_FAMILIES if f in names],
        "attention_launches": {c: sum(1 for e in gpu if kernel_class(e["name"]) == c)
                               for c in ("attention_fwd", "attention_bwd")},
    }


def totals(m: dict) -> dict[str, float]:
    """The kept figures summed over streams, by class."""
    out = dict.fromkeys(CLASSES, 0.0)
    for c in m["by_stream_s"].values():
        for k, v in c.items():
            out[k] += v
    return out


# -- the variants ----------------------------------------------------------------------------
def on_grid(op: Op) -> bool:
    """Whether ``op`` is one of the GEMMs the trace launches on the fixed grid: an fp8 GEMM
    (``gemm_overlap.on_fixed_grid``, the src mechanism since the 43rd session's dsv3k43)."""
    return on_fixed_grid(op)


GEMM_NAMES = re.compile(r"^(recompute\.)?(q_down|q_up|kv_down|kv_up|out)_proj(\.dgrad|\.wgrad)?$"
                        r"|^(recompute\.)?(expert_|shared_)?fc[12](\.dgrad|\.wgrad)?$"
                        r"|^(mtp_proj|router|logits)(\.dgrad|\.wgrad)?$")


def pair_classes(p: Priced) -> dict[str, float]:
    """A priced pass's seconds by class: compute by ``segment_class`` (GEMMs by name: a
    pass's segments keep names, not ops; the example's GEMMs are fp8 but the router and the
    output head, kept 16-bit), attention, the rest; the exchange's charge and the host's
    wait."""
    out: dict[str, float] = defaultdict(float)
    for c, t, n in p.segments:
        if c != COMPUTE:
            out[c] += t
        elif GEMM_NAMES.match(n):
            out["gemm_16bit" if n.split(".")[0] in ("router", "logits") else "gemm_fp8"] += t
        elif n.startswith("attn_core"):
            out["attention_bwd" if n.endswith(".bwd") else "attention_fwd"] += t
        else:
            out["other"] += t
            out["other." + other_family(n)] += t
    return dict(out)


def pair(cfg) -> dict:
    """The middle stage's pair (F of one chunk with B of another) and rank 0's two kinds,
    priced, by class (seconds)."""
    s = ScheduledPipeline(_TaskGraph(cfg, Pricer(cfg), None))
    pp, v = cfg.parallel.pp, cfg.parallel.pp // 2

    def fb(vf: int, vb: int) -> Priced:
        return s.pair_fwd[vf] + s.pair_bwd[vb]

    middle = fb(v, v)
    return {"middle_pair_s": middle.duration_s, "middle_by_class_s": pair_classes(middle),
            "rank0_pairs_s": [fb(0, pp - 1).duration_s, fb(pp - 1, 0).duration_s]}


def step(cfg) -> dict:
    """The DualPipe step of a variant, and rank 0's / the middle rank's phases against
    DeepSeek's measured step (benchmarks/deepseek_v3_phases.py)."""
    r = trainsim.simulate(cfg, keep_timeline=True)
    tl, pp = r.timeline, cfg.parallel.pp
    rows = ph.rank_phases(tl.tasks, tl.start_s, tl.end_s, pp, r.iteration_time_s)
    table = ph.TABLE4["MPFT"]
    hours = r.run_estimate()["gpu_hours"]
    return {"iteration_time_s": r.iteration_time_s, "gpu_hours": hours,
            "vs_reported": hours / dsv3.REPORTED_GPU_HOURS - 1,
            "vs_measured_step": r.iteration_time_s / table["time_per_step_s"] - 1,
            "gaps": {str(k): {g["phase"]: g["gap_s"] for g in ph.gap_table(rows[k], table)}
                     for k in (0, pp // 2 - 1)}}


VARIANTS = {"example (flash3, fp8 GEMMs on 112 SMs)": [],
            "flash3, fp8 GEMMs on all SMs": ALL_SMS,
            "FA2 stand-in, fp8 GEMMs on 112 SMs": FLASH2,
            "FA2 stand-in, all SMs (the example before dsv3k43)": FLASH2 + ALL_SMS}
"""The example as DeepSeek's trace names its kernels (examples/deepseek-v3-h800.yaml since the
43rd session: ``training.attention`` flash3, ``parallel.fp8_gemm_grid_excludes_exchange``),
and with either taken back."""


def run(m: dict) -> dict:
    out = {}
    for name, sets in VARIANTS.items():
        cfg = trainsim.load_run_config(dsv3.CONFIG, DUALPIPE + sets)
        out[name] = {**pair(cfg), **step(cfg)}
    return {"measured": m, "measured_totals_s": totals(m), "variants": out}


def trace_parser(description: str, kept: Path) -> argparse.ArgumentParser:
    """The options every script reading DeepSeek's trace takes: ``--trace``, ``--write`` (keep
    the figures in ``kept``) and ``--format``."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--trace", help="train.json (default: the fetched mirror)")
    ap.add_argument("--write", action="store_true", help=f"keep the figures in {kept.name}")
    ap.add_argument("--format", choices=("table", "json"), default="table")
    return ap


def trace_figures(args: argparse.Namespace, measure_fn, kept: Path) -> dict:
    """The trace's figures: measured from ``--trace`` (or the mirror with ``--write``, which
    keeps them in ``kept``), else read back from ``kept``."""
    if args.write or args.trace:
        m = measure_fn(load_trace(args.trace))
        if args.write:
            kept.write_text(json.dumps(m, indent=1) + "\n")
        return m
    return json.loads(kept.read_text())


def main() -> None:
    args = trace_parser(__doc__.splitlines()[0], KEPT).parse_args()
    m = trace_figures(args, measure, KEPT)
    res = run(m)
    if args.format == "json":
        print(json.dumps(res, indent=1))
        return
    tot = res["measured_totals_s"]
    print(f"measured pair ({m['source']}): span {m['span_s'] * 1e3:.1f} ms, compute streams' "
          f"union {m['compute_union_s'] * 1e3:.1f} ms; fp8 GEMMs {m['fp8_gemm_launches']} "
          f"launches on {m['fp8_gemm_ctas']} CTAs, {m['fp8_gemm_s'] * 1e3:.1f} ms, of which "
          f"{m['fp8_gemm_without_exchange_s'] * 1e3:.1f} ms with no DeepEP kernel beside; "
          f"FA3 families: {', '.join(m['fa3_families_present'])}")
    cls = ("gemm_fp8", "gemm_16bit", "attention_fwd", "attention_bwd", "other", "other.casts",
           "other.norms", "other.rest", "ep_comm", "host")
    tot = {**tot, **{"other." + k: v for k, v in m["other_on_compute_streams_s"].items()}}
    print("| middle pair, ms | " + " | ".join(cls) + " | pair |")
    print("| --- " * (len(cls) + 2) + "|")
    print("| measured (kernel time, all streams) | " + " | ".join(
        f"{tot.get(c, 0.0) * 1e3:.1f}" if c in tot else "-" for c in cls)
        + f" | {m['span_s'] * 1e3:.1f} (span) |")
    for name, v in res["variants"].items():
        b = v["middle_by_class_s"]
        print(f"| {name} | " + " | ".join(f"{b.get(c, 0.0) * 1e3:.1f}" for c in cls)
              + f" | {v['middle_pair_s'] * 1e3:.1f} |")
    print("| variant | step s | vs measured step | GPU-hours | rank 0 pairs ms | rank 0 gaps s "
          "(1F 1B 1W 1F1B bubble opt) | rank 7 gaps s |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, v in res["variants"].items():
        g0, g7 = (" ".join(f"{x:+.2f}" for x in v["gaps"][k].values()) for k in v["gaps"])
        print(f"| {name} | {v['iteration_time_s']:.3f} | {100 * v['vs_measured_step']:+.1f} % | "
              f"{v['gpu_hours'] / 1e6:.3f}M ({100 * v['vs_reported']:+.1f} %) | "
              + " / ".join(f"{x * 1e3:.1f}" for x in v["rank0_pairs_s"]) + f" | {g0} | {g7} |")


if __name__ == "__main__":
    main()
