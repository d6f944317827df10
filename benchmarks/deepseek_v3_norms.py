"""DeepSeek's memory-bound framework kernels (norms, fp8 casts) read launch by launch, against
the example's pricing (issue 20 item 3, 44th session, dsv3n44).

    python benchmarks/deepseek_v3_norms.py [--trace train.json] [--write] [--format json]

deepseek-ai/profile-data@4496024 ``train.json`` (one overlapped DualPipe pair of a middle rank,
one H800, 132 SMs; read from the fetched mirror as benchmarks/deepseek_v3_kernels.py does) is
read here for the kernels of the class ``other`` that are norms or casts: each launch's grid,
its registers, its duration, and how much of it runs beside a DeepEP kernel (which holds 20
SMs: DeepSeek-V3 §3.2.2; ``workload.moe_dispatch.EXCHANGE_SMS``). A launch is *alone* with no
DeepEP kernel overlapping it, *beside* with one overlapping over 95 % of it. ``--write`` keeps
the figures in ``deepseek_v3_norms_trace.json`` (figures and kernel family names only).

What the launches show (the kept file; tests/test_deepseek_v3_norms.py):

* **Every norm kernel launches a whole multiple of the SMs** (132, 396, 528, 660, 924 CTAs:
  1, 3, 4, 5, 7 a SM), whatever its rows: the grid Transformer Engine's and apex contrib's
  norm kernels size by ``multiprocessorCount * ctas_per_sm`` (``Elementwise.full_wave``).
  Beside DeepEP such a grid runs a second wave on the 112 SMs left: the 132-CTA ``ln_bwd``
  over 4096 x 7168 takes 1.84x its time alone, the 396-CTA ``ln_fwd`` over 4096 x 7168 1.1-2.3x
  (a second compute stream's GEMM sometimes shares the GPU even with no DeepEP kernel beside).
  Priced since dsv3n44: ``compute.roofline.full_wave_extra`` (one extra wave) on the share of
  a pass's compute that trainsim places beside the exchange.
* **The casts slow beside the exchange only as the SMs it holds**: their grids are sized by the
  data (a CTA a row or a 128 x 128 block), and the 17 (family, grid) groups launched both ways
  run beside DeepEP at a median 1.21x their time alone (``cast_ratios``; 0.82-2.83x), about
  132/112 = 1.18x, what trainsim charges compute beside the exchange. Where the casts are
  short is their count: the compute streams launch 272 cast and transpose kernels in the pair
  (280 with the exchange stream's) where the example prices 88 (the trace's separate
  transposes, the fp8 tokens' casts back to bf16, the per-token casts of the dispatched
  tokens), and 80 % of their time runs beside DeepEP, where trainsim places about half of a
  pair's compute beside the exchange (the all-to-alls' transfer time).
* **DeepEP's kernels are resident most of the pair** (``deepep_resident_share``): their union
  covers ~88 % of the pair's span, where trainsim holds the exchange's SMs only for the
  all-to-alls' transfer time (``Pricer._price_ops``' pooled charge). The what-if prices the
  pair's norms and off-grid compute beside an exchange resident that share of the pair.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import trainsim
from trainsim.pricing import COMPUTE

sys.path.insert(0, str(Path(__file__).resolve().parent))
try:
    import deepseek_v3 as dsv3
    import deepseek_v3_kernels as dk
finally:
    sys.path.pop(0)

SOURCE = dk.SOURCE
KEPT = Path(__file__).resolve().parent / "deepseek_v3_norms_trace.json"
BESIDE = 0.95
"""A launch is beside DeepEP when a DeepEP kernel overlaps more than this share of it."""


def family(name: str) -> str:
    """A norm or cast kernel's family: ``ln_fwd`` / ``ln_bwd`` (the norms' kernels), else the
    cast family (``deepseek_v3_kernels.cast_family``); empty for any other kernel."""
    if dk.kernel_class(name) != "other":
        return ""
    fam = dk.other_family(name)
    if fam == "norms":
        return dk.cast_family(name.replace("void ", ""))
    return dk.cast_family(name.replace("void ", "")) if fam == "casts" else ""


def measure(trace: dict) -> dict:
    """Launch figures of the pair's norm and cast kernels (module docstring), microseconds."""
    gpu = [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]
    ep = sorted((e["ts"], e["ts"] + e["dur"]) for e in gpu if dk.kernel_class(e["name"]) == "deepep")
    t0 = min(e["ts"] for e in gpu)
    span = max(e["ts"] + e["dur"] for e in gpu) - t0
    sms = trace["deviceProperties"][0]["numSms"]

    def beside(e: dict) -> float:
        a, b = e["ts"], e["ts"] + e["dur"]
        return dk._union_s([(max(a, x), min(b, y)) for x, y in ep if x < b and y > a]) \
            / e["dur"] if e["dur"] else 0.0

    groups: dict[tuple[str, int, int], list[tuple[float, float]]] = defaultdict(list)
    for e in gpu:
        fam = family(e["name"])
        if fam:
            g = e["args"]["grid"]
            ctas = g[0] * g[1] * g[2]
            groups[(fam, ctas, e["args"]["registers per thread"])].append((e["dur"], beside(e)))
    rows = []
    for (fam, ctas, regs), v in sorted(groups.items()):
        alone = [d for d, b in v if b < 1.0 - BESIDE]
        near = [d for d, b in v if b > BESIDE]
        rows.append({"family": fam, "ctas": ctas, "ctas_per_sm": ctas / sms, "registers": regs,
                     "launches": len(v), "us": sum(d for d, _ in v),
                     "beside_us": sum(d * b for d, b in v),
                     "alone_us": sorted(alone), "beside_only_us": sorted(near)})
    return {"source": SOURCE, "num_sms": sms, "span_us": span,
            "deepep_resident_us": dk._union_s(ep),
            "deepep_resident_share": dk._union_s(ep) / span, "launch_groups": rows}


def norm_waves(m: dict) -> list[dict]:
    """The norm groups' grids in SMs and, where both exist, median time beside over alone."""
    out = []
    for r in m["launch_groups"]:
        if not r["family"].startswith("ln_"):
            continue
        ratio = statistics.median(r["beside_only_us"]) / statistics.median(r["alone_us"]) \
            if r["alone_us"] and r["beside_only_us"] else None
        out.append({"family": r["family"], "ctas": r["ctas"], "ctas_per_sm": r["ctas_per_sm"],
                    "launches": r["launches"], "alone_us": r["alone_us"],
                    "beside_us": r["beside_only_us"], "beside_over_alone": ratio})
    return out


def cast_ratios(m: dict) -> dict:
    """The cast groups (family, grid) launched both alone and beside DeepEP: their median time
    beside over alone (min, median, max over the groups), and the launches of every cast."""
    r = sorted(statistics.median(g["beside_only_us"]) / statistics.median(g["alone_us"])
               for g in m["launch_groups"] if not g["family"].startswith("ln_")
               and g["alone_us"] and g["beside_only_us"])
    casts = [g for g in m["launch_groups"] if not g["family"].startswith("ln_")]
    return {"groups": len(r), "min": r[0], "median": statistics.median(r), "max": r[-1],
            "launches": sum(g["launches"] for g in casts),
            "ms": sum(g["us"] for g in casts) / 1e3,
            "beside_share": sum(g["beside_us"] for g in casts) / sum(g["us"] for g in casts)}


def priced() -> dict:
    """The middle pair of the example under DualPipe by class (``deepseek_v3_kernels.pair``),
    its norms and compute split by how the exchange slows them, and the exchange's charge."""
    cfg = trainsim.load_run_config(dsv3.CONFIG, dk.DUALPIPE)
    from trainsim.pipeline import ScheduledPipeline
    from trainsim.pricing import Pricer
    from trainsim.simulator import _TaskGraph
    s = ScheduledPipeline(_TaskGraph(cfg, Pricer(cfg), None))
    v = cfg.parallel.pp // 2
    pair = s.pair_fwd[v] + s.pair_bwd[v]
    cls = dk.pair_classes(pair)
    compute = sum(t for c, t, _ in pair.segments if c == COMPUTE)
    return {"pair_s": pair.duration_s, "by_class_s": cls, "compute_s": compute,
            "norms_s": cls.get("other.norms", 0.0), "grid_s": cls.get("gemm_fp8", 0.0),
            "exchange_charge_s": cls.get("ep_comm", 0.0)}


def _child(flag: str) -> dict:
    """``priced`` in a child process (``--no-waves``: ``full_wave_extra`` taken back)."""
    out = subprocess.run([sys.executable, __file__, "--priced", *([flag] if flag else [])],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def resident_what_if(p: dict, share: float, held: float = 20 / 132) -> dict:
    """The pair's exchange charge were its SMs held for ``share`` of the pair (the trace's
    DeepEP residency) rather than the transfer time: off-grid compute loses ``held`` of its
    time there, full-wave norms one wave, the fixed-grid fp8 GEMMs nothing."""
    off = p["compute_s"] - p["grid_s"] - p["norms_s"]
    charge = share * (held * off + 1.0 * p["norms_s"])
    return {"resident_share": share, "charge_s": charge,
            "pair_s": p["pair_s"] - p["exchange_charge_s"] + charge}


def run(m: dict) -> dict:
    after, before = _child(""), _child("--no-waves")
    return {"measured": m, "norm_waves": norm_waves(m), "priced": after,
            "priced_without_waves": before, "casts": cast_ratios(m),
            "what_if_resident": resident_what_if(after, m["deepep_resident_share"])}


def main() -> None:
    ap = dk.trace_parser(__doc__.splitlines()[0], KEPT)
    ap.add_argument("--priced", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--no-waves", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.priced:
        if args.no_waves:
            import trainsim.pricing
            # a full-wave kernel slowed as the SMs held, as any other (the pricing before)
            trainsim.pricing.full_wave_extra = lambda sms, held: held / sms
        print(json.dumps(priced()))
        return
    m = dk.trace_figures(args, measure, KEPT)
    res = run(m)
    if args.format == "json":
        print(json.dumps(res, indent=1))
        return
    print(f"{m['source']}: span {m['span_us'] / 1e3:.1f} ms, DeepEP kernels resident "
          f"{m['deepep_resident_us'] / 1e3:.1f} ms ({100 * m['deepep_resident_share']:.0f} %)")
    print("| norm kernel | CTAs (a SM) | launches | alone us | beside DeepEP us | beside/alone |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in res["norm_waves"]:
        rng = (lambda x: f"{min(x):.0f}-{max(x):.0f}" if x else "-")
        ratio = f"{r['beside_over_alone']:.2f}" if r["beside_over_alone"] else "-"
        print(f"| {r['family']} | {r['ctas']} ({r['ctas_per_sm']:.0f}) | {r['launches']} | "
              f"{rng(r['alone_us'])} | {rng(r['beside_us'])} | {ratio} |")
    c = res["casts"]
    print(f"casts: {c['launches']} launches, {c['ms']:.1f} ms, {100 * c['beside_share']:.0f} % "
          f"of it beside DeepEP; {c['groups']} groups launched both ways run beside at "
          f"{c['min']:.2f}-{c['max']:.2f}x (median {c['median']:.2f}) their time alone")
    print("| middle pair, ms | norms | casts | exchange charge | pair |")
    print("| --- | --- | --- | --- | --- |")
    for name, p in (("without full-wave pricing", res["priced_without_waves"]),
                    ("full-wave norms (dsv3n44)", res["priced"])):
        c = p["by_class_s"]
        print(f"| {name} | {1e3 * c.get('other.norms', 0):.2f} | "
              f"{1e3 * c.get('other.casts', 0):.2f} | {1e3 * p['exchange_charge_s']:.2f} | "
              f"{1e3 * p['pair_s']:.1f} |")
    w = res["what_if_resident"]
    print(f"| what-if: exchange SMs held {100 * w['resident_share']:.0f} % of the pair | - | - | "
          f"{1e3 * w['charge_s']:.2f} | {1e3 * w['pair_s']:.1f} |")


if __name__ == "__main__":
    main()
