"""The power-limited clock as a function of what a GPU runs: a model fitted to the 40th session's
H200 loops, and what it does to the training board (issue 17, "power-limited GPUs").

    PYTHONPATH=src python benchmarks/fit_power40.py              # constants + table of loops
    PYTHONPATH=src python benchmarks/fit_power40.py --markdown   # the same for RESULTS.md
    PYTHONPATH=src python benchmarks/fit_power40.py --layer      # + the Llama 3 8B layer loop
    PYTHONPATH=src python benchmarks/fit_power40.py --board ../shared/validation/training_public.csv
                                      # flat sustained_of_burst vs the mix model on a CSV

**Model.** A board at its power limit lowers its SM clock until its average power fits. A dense
GEMM looped without pause settles at ``GPUSpec.sustained_of_burst`` of its burst rate; a GPU that
spends part of its time on kernels that draw less power keeps a higher clock for its GEMMs.
Board power in fractions of the limit, by kind of time:

* a large GEMM at rate ``r`` of its burst rate: ``p0 + g r^a``; an attention kernel: ``p0 +
  w g r^a`` (w: FlashAttention-2's measured share of a GEMM's dynamic power);
* memory-bound kernels (clock-independent time): ``p0 + m`` per second of HBM saturated (their
  bytes over the achievable HBM rate);
* anything else (a one-SM spin, the host's idle gap, an exposed collective): ``p0``;

``r`` is the largest rate <= 1 whose time-averaged power is at most the limit.
``g = (1 - p0) / s^a`` with ``s`` the GPU's own ``sustained_of_burst``, so a GEMM loop settles
at each GPU's measured full-load factor and only p0, a, m and w are global.

**Fit** (benchmarks/h200_2026-11-27_s40/run{1,2,3,4}_device_checks40.json: one H200 SXM, 700 W
limit; ``benchmarks/device_checks40.py`` sections ``sustained``, ``power_mix``, ``duty_sweep``,
``power_classes``): per loop, the median rate of each chunk and nvidia-smi's SM clock and power
every 100 ms; steady state = the last 2 s (rate: median chunk; clock, power: mean of the last 20
samples), burst = the first chunk. Duty ``d``: (1 / d - 1) GEMM times of filler after each GEMM:
one SM spinning (``torch.cuda._sleep``, a cycle count: it lasts 1980 / f longer at clock f),
256 MiB adds (run 4: as many as fill it at their own time), or the host idle (synchronise, sleep).
In fractions of the power the cap holds (the mean of the full-duty loops), each constant from the
one loop that isolates it:
1. the duty 0.5 and 0.6 spin loops stay below the cap (1980 / 1966 MHz): their powers give p0
   and the GEMM's uncapped dynamic power g (P = p0 + d g);
2. the full-duty bf16 loops' rate s (runs 1 and 2) gives the exponent: g s^a = 1 - p0;
3. a 1 GiB add looped alone (run 4: 4.3 TB/s, 1980 MHz, below the cap) gives m = P / limit - p0;
4. FlashAttention-2 forward + backward looped alone (run 4: at the cap, 0.995 of the boost clock,
   rate 1.000) gives w = (P / limit - p0) / g.
Every other loop is a prediction: duty 0.7, 0.8, 0.9 with the spin, 0.6 and 0.8 with adds, 0.8
with the host idle, the GEMM beside a 1 GiB add (its time from trainsim's roofline), fp8.

**Board** (``--board``): each row simulated in-process as trainsim does (``flat``) and with the
GPU's ``sustained_of_burst`` replaced by the model's rate for the mix of one decoder layer's
forward and backward as trainsim prices it, read three ways (``VARIANTS``). The power limit acts
over tens of milliseconds (the looped GEMM keeps its burst clock for its first 30-60 ms), so a
step's long phases, a data-parallel all-reduce or a pipeline's warm-up, do not lend their power
to its compute; a layer's own exposed TP communication and host waits do.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import math
import os
import statistics
import sys
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

DATA = Path(__file__).resolve().parent / "h200_2026-11-27_s40"
F0_MHZ = 1980.0
SHAPE = (8192, 8192, 8192)  # device_checks40.SUSTAIN_SHAPE
ADD_BYTES = 2.0 * 2 ** 30  # bf16 add_ on 2^29 elements: 1 GiB read, 1 GiB written
LAYER_LOOP_CLOCK = (1552.0, 1466.0)
"""The Llama 3 8B layer loop's steady SM clock (run 3, mean of its last 20 samples) and the
bf16 GEMM loop's (run 2), MHz: the one training-like mix measured (no burst reference)."""

# --------------------------------------------------------------------------------- the model


@dataclasses.dataclass(frozen=True)
class Mix:
    """What a stretch of GPU time runs, in seconds at the burst clock."""

    tensor_s: float
    """Tensor-core kernels (GEMMs, attention): this time stretches as 1 / rate."""
    other_s: float = 0.0
    """Every other second (memory-bound kernels, exposed communication, gaps): taken as
    independent of the SM clock."""
    work_s: float | None = None
    """The tensor-core seconds weighted by their kernels' dynamic power over a large GEMM's
    (attention: ``Constants.attention``); None: ``tensor_s``."""
    hbm_work_s: float = 0.0
    """The memory-bound kernels' bytes over the achievable HBM rate (part of ``other_s``)."""

    @property
    def work(self) -> float:
        return self.tensor_s if self.work_s is None else self.work_s


@dataclasses.dataclass(frozen=True)
class Constants:
    idle: float
    """p0: board power with the SMs idle or one spinning, at the boost clock, over the limit."""
    exponent: float
    """a: a GEMM's dynamic power grows as its rate to this power along the clock-voltage curve."""
    hbm: float
    """m: dynamic power of an HBM-saturating kernel over the limit."""
    attention: float = 1.0
    """Dynamic power of an attention kernel's second over a large GEMM's (FlashAttention-2)."""


def tensor_gain(full_load: float, c: Constants) -> float:
    """g: a large GEMM's dynamic power at the burst rate over the limit, such that GEMMs back
    to back settle at ``full_load`` of their burst rate."""
    return (1.0 - c.idle) / full_load ** c.exponent


def mean_power(rate: float, mix: Mix, full_load: float, c: Constants) -> float:
    """Time-averaged board power over the limit with the tensor-core kernels at ``rate``."""
    total = mix.tensor_s / rate + mix.other_s
    if total <= 0.0:
        return c.idle
    dyn = tensor_gain(full_load, c) * rate ** (c.exponent - 1.0) * mix.work + c.hbm * mix.hbm_work_s
    return c.idle + dyn / total


def sustained_rate(mix: Mix, full_load: float, c: Constants) -> float:
    """The tensor-core rate (of the burst rate, in [full_load, 1]) whose average power meets the
    limit; 1 where the mix stays below it. (Power above the limit times the time rises with the
    rate when a > 1, so the root is unique: bisection.)"""
    if not 0.0 < full_load <= 1.0:
        raise ValueError(f"full_load={full_load!r} must be in (0, 1]")
    if min(mix.tensor_s, mix.other_s, mix.work, mix.hbm_work_s) < 0.0:
        raise ValueError(f"{mix!r}: seconds must be non-negative")
    if mix.tensor_s <= 0.0 or full_load == 1.0 or mean_power(1.0, mix, full_load, c) <= 1.0:
        return 1.0
    if mean_power(full_load, mix, full_load, c) >= 1.0:
        return full_load  # memory-bound power alone over the limit: outside the model
    lo, hi = full_load, 1.0
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if mean_power(mid, mix, full_load, c) > 1.0 else (mid, hi)
    return lo


# ----------------------------------------------------------------------------------- the fit


def steady(entry: dict) -> dict:
    """One loop's burst and steady rates (TFLOP/s), steady clock (MHz) and power (W)."""
    chunks = entry["per_chunk"]
    end = chunks[-1][0]
    last = statistics.median(v for t, v in chunks if t > end - 2.0)
    smi = [ln.split(", ") for ln in entry.get("smi", [])]
    samples = [(float(a[1].split()[0]), float(a[3].split()[0])) for a in smi if len(a) >= 4]
    tail = samples[-20:]
    return {"burst": chunks[0][1], "steady": last, "ratio": last / chunks[0][1],
            "clock_mhz": statistics.mean(f for f, _ in tail),
            "power_w": statistics.mean(p for _, p in tail)}


def loops(data: Path = DATA) -> dict[str, dict]:
    """Every GEMM loop of the three runs by name (``run1/bf16``, ``run3/duty0.8``, ...)."""
    out = {}
    for run in (1, 2, 3, 4):
        doc = json.loads((data / f"run{run}_device_checks40.json").read_text())
        for sec in ("sustained", "power_mix", "duty_sweep", "power_classes"):
            for name, entry in doc["sections"].get(sec, {}).items():
                if isinstance(entry, dict) and entry.get("per_chunk"):
                    out[f"run{run}/{name}"] = steady(entry)
    return out


def add_seconds() -> float:
    """The 1 GiB add's time on an H200 by trainsim's roofline (HBM-bound)."""
    from trainsim.catalog import gpu as catalog_gpu
    from trainsim.compute.roofline import RooflineModel
    from trainsim.workload.ops import Elementwise

    return RooflineModel(catalog_gpu("h200-sxm-141gb")).time(Elementwise("add", ADD_BYTES))


def gemm_seconds(tflops: float) -> float:
    m, n, k = SHAPE
    return 2.0 * m * n * k / (tflops * 1e12)


def loop_mix(name: str, x: dict, add_s: float, small_add_s: float) -> tuple[float, Mix, str]:
    """(duty, mix, role in the fit) of one GEMM loop (``power_classes``' fillers: run 4)."""
    t = gemm_seconds(x["burst"])
    if name == "bf16_with_add":
        return 1.0, Mix(t, add_s, hbm_work_s=add_s), "predicted"
    duty = 0.5 if name == "bf16_duty50" else \
        float(name[4:].split("_")[0]) if name.startswith("duty") else 1.0
    role = "fit p0, g" if name in ("bf16_duty50", "duty0.6") else \
        "fit a" if name == "bf16" else "predicted"
    if name.endswith("_add"):  # round(t (1/d - 1) / t_add) adds of 256 MiB, HBM-bound
        adds = max(1, round(t * (1.0 / duty - 1.0) / small_add_s)) * small_add_s
        return duty, Mix(t, adds, hbm_work_s=adds), role
    if name.endswith("_host_idle"):  # synchronise, then sleep (1/d - 1) GEMM times
        return duty, Mix(t, (1.0 / duty - 1.0) * t), role
    spin = (1.0 / duty - 1.0) * t * F0_MHZ / x["clock_mhz"]
    return duty, Mix(t, spin), role


def fit(data: Path = DATA) -> dict:
    """The constants and each GEMM loop's measured and modelled steady rate."""
    lp = loops(data)
    doc4 = json.loads((data / "run4_device_checks40.json").read_text())["sections"]
    classes = doc4["power_classes"]
    limit_w = statistics.mean(x["power_w"] for k, x in lp.items() if k.endswith(("/bf16", "/fp8")))
    d50, d60 = lp["run2/bf16_duty50"], lp["run3/duty0.6"]
    g = (d60["power_w"] - d50["power_w"]) / (0.6 - 0.5) / limit_w
    p0 = d50["power_w"] / limit_w - 0.5 * g
    s = statistics.mean(lp[k]["ratio"] for k in ("run1/bf16", "run2/bf16"))
    exponent = math.log((1.0 - p0) / g) / math.log(s)
    add_alone, fa2 = lp.pop("run4/add_only"), lp.pop("run4/fa2_fwd_bwd")
    hbm = add_alone["power_w"] / limit_w - p0  # at 1980 MHz, HBM saturated all the time
    attention = (fa2["power_w"] / limit_w - p0) / g  # at the cap, its clock 0.995 of boost
    c = Constants(p0, exponent, hbm, attention)
    add_s, small_add_s = add_seconds(), classes["t_small_add_us"] * 1e-6
    rows = []
    for key, x in sorted(lp.items()):
        duty, mix, role = loop_mix(key.split("/", 1)[1], x, add_s, small_add_s)
        rows.append({"loop": key, "duty": duty, "role": role, "clock_mhz": x["clock_mhz"],
                     "power_w": x["power_w"], "measured": x["ratio"],
                     "model": sustained_rate(mix, s, c), "flat": s})
    return {"constants": dataclasses.asdict(c), "gain": g, "limit_w": limit_w, "full_load": s,
            "add_s": add_s, "add_alone": add_alone, "fa2_alone": fa2, "rows": rows}


def fitted() -> Constants:
    return Constants(**fit()["constants"])


def predicted_errors(res: dict) -> dict[str, tuple[float, float]]:
    """Mean and max |model / measured - 1| of the loops not fitted, for the model and flat."""
    pred = [r for r in res["rows"] if r["role"] == "predicted"]
    out = {}
    for key in ("model", "flat"):
        err = [abs(r[key] / r["measured"] - 1.0) for r in pred]
        out[key] = (statistics.mean(err), max(err))
    return out


def table(res: dict, markdown: bool) -> str:
    c = res["constants"]
    head = (f"limit {res['limit_w']:.0f} W; p0 {c['idle']:.3f}, g {res['gain']:.3f}, full-load "
            f"rate s {res['full_load']:.3f}, exponent a {c['exponent']:.2f}; m {c['hbm']:.3f} "
            f"(a 1 GiB add alone: {res['add_alone']['power_w']:.0f} W at "
            f"{res['add_alone']['clock_mhz']:.0f} MHz); attention {c['attention']:.3f} of a "
            f"GEMM's dynamic power (FA2 fwd+bwd alone: {res['fa2_alone']['power_w']:.0f} W at "
            f"{res['fa2_alone']['clock_mhz']:.0f} MHz, rate {res['fa2_alone']['ratio']:.3f})")
    lines = [head, ""]
    cols = ("loop", "duty", "SM MHz", "W", "measured", "model", "flat", "role")
    if markdown:
        lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in res["rows"]:
        vals = (r["loop"], f"{r['duty']:g}", f"{r['clock_mhz']:.0f}", f"{r['power_w']:.0f}",
                f"{r['measured']:.3f}", f"{r['model']:.3f}", f"{r['flat']:.3f}", r["role"])
        lines.append("| " + " | ".join(vals) + " |" if markdown else
                     "  ".join(f"{v:>16s}" for v in vals))
    for key, (mean, mx) in predicted_errors(res).items():
        lines.append(f"loops not fitted: {key} mean |error| {100 * mean:.1f} %, max {100 * mx:.1f} %")
    return "\n".join(lines)


# ------------------------------------------------------------------------- trainsim's mixes


VARIANTS = ("flat", "gemm", "class", "comm")
"""How a step's mix is read (``--board``): ``flat`` as trainsim does (no mix); ``gemm`` every
tensor-core second at a large GEMM's power; ``class`` attention at FlashAttention-2's measured
share of it; ``comm`` as ``class`` with exposed collectives drawing an HBM-bound kernel's power
(NVLink and NIC traffic through HBM) instead of idle power."""


def layer_mix(cfg, variant: str, c: Constants) -> Mix:
    """The mix of one decoder layer's forward and backward as trainsim prices it on ``cfg``'s
    GPU (at its ``sustained_of_burst``; tensor-core seconds brought to the burst clock), read
    as ``variant`` says (``VARIANTS``)."""
    from trainsim.compute.roofline import HBM_EFFICIENCY
    from trainsim.pricing import COMPUTE, CP, DP, EP, PP, TP, Pricer
    from trainsim.workload.layers import backward_of, layer_forward
    from trainsim.workload.ops import Attention, Elementwise, Gemm
    from trainsim.workload.shard import shard_of

    gpu = cfg.cluster.gpu
    sh = shard_of(cfg)
    fwd = layer_forward(cfg, sh, moe=cfg.model.num_experts is not None)
    priced, order = Pricer(cfg).price_ops(fwd + backward_of(fwd, sh))
    s, hbm_Bps = gpu.sustained_of_burst, gpu.hbm_bw_Bps * HBM_EFFICIENCY
    attn_w = 1.0 if variant == "gemm" else c.attention
    tensor = work = other = hbm = 0.0
    for (cat, sec, _), op in zip(priced.segments, order):
        if cat == COMPUTE and isinstance(op, (Gemm, Attention)):
            tensor += sec * s
            work += sec * s * (attn_w if isinstance(op, Attention) else 1.0)
        else:
            other += sec
            if cat == COMPUTE and isinstance(op, Elementwise):
                hbm += min(sec, op.bytes / hbm_Bps)
            elif variant == "comm" and cat in (TP, CP, EP, PP, DP):
                hbm += sec
    return Mix(tensor, other, work, hbm)


def powered(cfg, weighting: str, c: Constants):
    """``cfg`` with its GPU's ``sustained_of_burst`` set to the model's rate for its layer mix."""
    gpu = cfg.cluster.gpu
    if gpu.sustained_of_burst >= 1.0:
        return cfg
    r = sustained_rate(layer_mix(cfg, weighting, c), gpu.sustained_of_burst, c)
    return dataclasses.replace(cfg, cluster=dataclasses.replace(
        cfg.cluster, gpu=dataclasses.replace(gpu, sustained_of_burst=r)))


def layer_loop_check(c: Constants) -> list[str]:
    """The Llama 3 8B layer loop (4 layers, 8,192 tokens, bf16, SDPA) through the model."""
    from trainsim.catalog import gpu, model
    from trainsim.config import ClusterConfig, ParallelConfig, RunConfig, TrainingConfig

    full = [x for k, x in loops().items() if k.endswith(("/bf16", "/fp8"))]
    beta = statistics.mean(math.log(x["ratio"]) / math.log(x["clock_mhz"] / F0_MHZ) for x in full)
    implied = (LAYER_LOOP_CLOCK[0] / F0_MHZ) ** beta
    head = (f"layer loop: measured steady clock {LAYER_LOOP_CLOCK[0]:.0f} MHz vs the GEMM loop's "
            f"{LAYER_LOOP_CLOCK[1]:.0f} ({LAYER_LOOP_CLOCK[0] / LAYER_LOOP_CLOCK[1]:.3f}x); the "
            f"full-duty loops' rate ~ clock^{beta:.2f} makes that a GEMM rate of {implied:.3f}")
    out = [head]
    for attn in ("flash2", "cudnn"):
        cfg = RunConfig(model=dataclasses.replace(model("llama3-8b"), num_layers=4),
                        parallel=ParallelConfig(),
                        training=TrainingConfig(global_batch_size=1, micro_batch_size=1,
                                                seq_length=8192, dtype="bf16", attention=attn),
                        cluster=ClusterConfig(gpu=gpu("h200-sxm-141gb"), num_gpus=1,
                                              gpus_per_node=1, compute_db=None))
        for w in VARIANTS[1:3]:
            mix = layer_mix(cfg, w, c)
            r = sustained_rate(mix, cfg.cluster.gpu.sustained_of_burst, c)
            out.append(f"  {attn:6s} {w:5s}: tensor {mix.tensor_s * 1e3:.2f} ms (work "
                       f"{mix.work * 1e3:.2f}), other {mix.other_s * 1e3:.2f} ms -> rate {r:.3f}")
    return out


# ------------------------------------------------------------------------------- the board


def _row_errors(args: tuple[str, str]) -> dict[str, float]:
    """log(predicted / measured) of every row of ``path``, the GPU's rate set by ``weighting``
    ('flat': as trainsim does)."""
    path, weighting = args
    import trainsim.simulator as sim
    from trainsim.validate.training import predict_training_row

    if weighting != "flat":
        c, inner = fitted(), sim._simulate

        def patched(cfg, keep, source, pricer):
            new = powered(cfg, weighting, c)
            return inner(new, keep, source, None if new is not cfg else pricer)

        sim._simulate = patched
    out = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            r = predict_training_row(row)
            out[row["id"]] = math.log(r.predicted / r.measured) if r.predicted else math.nan
    return out


def board(path: str, weightings=VARIANTS) -> dict[str, dict[str, float]]:
    with ProcessPoolExecutor(max_workers=min(len(weightings), os.cpu_count() or 1)) as pool:
        return dict(zip(weightings, pool.map(_row_errors, [(path, w) for w in weightings])))


def scores(errs: dict[str, float], keep: Callable[[str], bool] = lambda rid: True) -> dict:
    v = [e for rid, e in errs.items() if keep(rid) and not math.isnan(e)]
    mape = lambda shift: 100.0 * statistics.mean(abs(math.exp(e + shift) - 1.0) for e in v)
    best = min((mape(k / 1000), k / 1000) for k in range(-150, 151))
    return {"rows": len(v), "mape": mape(0.0), "signed": 100.0 * statistics.mean(
        math.exp(e) - 1.0 for e in v), "log_sd": statistics.pstdev(v) if len(v) > 1 else 0.0,
            "best_shift_mape": best[0], "best_shift": best[1]}


def board_table(path: str, res: dict[str, dict[str, float]]) -> str:
    with open(path, newline="") as f:
        fw = {r["id"]: r.get("framework", "?") for r in csv.DictReader(f)}
    head = ("| rows | variant | MAPE | mean signed | sd of log error | MAPE at the best uniform "
            "rescale (shift) |")
    lines = [head, "|---|---|---|---|---|---|"]
    for w, errs in res.items():
        s = scores(errs)
        lines.append(f"| all {s['rows']} | {w} | {s['mape']:.3f} % | {s['signed']:+.2f} % | "
                     f"{s['log_sd']:.4f} | {s['best_shift_mape']:.3f} % ({s['best_shift']:+.3f}) |")
    lines += ["", "| framework | rows | " + " | ".join(f"{w} MAPE (signed)" for w in res) + " |",
              "|---|---|" + "---|" * len(res)]
    for name in sorted(set(fw.values())):
        cells = [scores(e, lambda rid, n=name: fw.get(rid) == n) for e in res.values()]
        lines.append(f"| {name} | {cells[0]['rows']} | " + " | ".join(
            f"{x['mape']:.2f} ({x['signed']:+.1f})" for x in cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--markdown", action="store_true")
    p.add_argument("--json", action="store_true")
    p.add_argument("--layer", action="store_true", help="the Llama 3 8B layer loop's mix")
    p.add_argument("--board", metavar="CSV", help="flat vs the mix model on a training CSV")
    a = p.parse_args(argv)
    if a.board and not Path(a.board).is_file():
        p.error(f"--board {a.board}: no such file")
    res = fit()
    out = [json.dumps(res, indent=1) if a.json else table(res, a.markdown)]
    if a.layer:
        out += layer_loop_check(Constants(**res["constants"]))
    if a.board:
        out.append(board_table(a.board, board(a.board)))
    sys.stdout.write("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
