"""SimuMax's B200 node, part by part: where trainsim's step of a training_simumax_b200 row is
shorter than the measured one, compared with SimuMax's own model of the same run (its
configs/system/b200_bf16_ceperm.json: the node's measured GEMM, attention, bandwidth and NCCL
efficiencies) and with trainsim's GEMMs repriced at the node's measured rates (a diagnostic:
nothing here feeds trainsim; issue 17 items 1-2, 55th session).

    python benchmarks/simumax_b200_parts.py --simumax   # re-run SimuMax from the mirror -> .json
    PYTHONPATH=src python benchmarks/simumax_b200_parts.py            # the parts table
    PYTHONPATH=src python benchmarks/simumax_b200_parts.py --slopes   # ms per micro-batch / fixed
    python benchmarks/simumax_b200_parts.py --check    # the .json against a re-run

``--simumax`` extracts MooreThreads/SimuMax @ 4dcaae5 from the mirror (/work/.mirror) into a
temporary folder and runs its own estimator (``PerfLLM.run_estimate`` / ``analysis_cost``, as
its tools/b200/run_megatron_perf_real_batch.py ``run_perf`` does, straggler model off) on each
case below; its report-only imports (pandas, matplotlib, tabulate, tqdm) are stubbed, the
estimate needs numpy and sympy. The DeepSeek-V3 cases have no entry in SimuMax's tools: they
are its DeepSeek-V2 case with configs/models/deepseekv3.json and ``dense_layers`` 1 (the
summary's note: 'DeepSeekV3 formal rows use dense_layers=1'). SimuMax's parts are written to
benchmarks/simumax_b200_parts.json; the table reads that file, so it runs without the mirror.
"""

from __future__ import annotations

import copy
import csv
import io
import json
import re
import subprocess
import sys
import tarfile
import tempfile
import types
from contextlib import redirect_stdout
from pathlib import Path

HERE = Path(__file__).resolve().parent
MIRROR = Path("/work/.mirror/MooreThreads+SimuMax/repo")
COMMIT = "4dcaae5"
SYSTEM = "configs/system/b200_bf16_ceperm.json"
SUMMARY = "docs/b200/b200_release_v1.2_summary.json"
PARTS = HERE / "simumax_b200_parts.json"
ROWS = HERE / "training_simumax_b200.csv"
GEMM_KEY = re.compile(r"b=(\d+), m=(\d+), k=(\d+), n=(\d+), layout=(\w+)")
# SimuMax case (its summary's name without '_cef') -> the check file's row id
CASES = {
    "llama3_70b_l12_tp1_pp2_dp4_mbc4": "simumax-b200-llama3-70b-l12-tp1-pp2-dp4-mbc4",
    "llama3_70b_tp2_pp1_dp4_l12_mbc4": "simumax-b200-llama3-70b-tp2-pp1-dp4-l12-mbc4",
    "llama3_70b_l12_tp4_pp1_dp2_mbc4": "simumax-b200-llama3-70b-l12-tp4-pp1-dp2-mbc4",
    "llama3_70b_l12_tp8_pp1_dp1_mbc4": "simumax-b200-llama3-70b-l12-tp8-pp1-dp1-mbc4",
    "llama3_70b_l12_tp8_pp1_dp1_mbc32": "simumax-b200-llama3-70b-l12-tp8-pp1-dp1-mbc32",
    "llama3_405b_l4_tp1_pp2_dp4_mbc4": "simumax-b200-llama3-405b-l4-tp1-pp2-dp4-mbc4",
    "llama3_405b_l4_tp8_pp1_dp1_mbc4": "simumax-b200-llama3-405b-l4-tp8-pp1-dp1-mbc4",
    "deepseekv2_tp1_ep8_pp1_dp8_l4_mbc4": "simumax-b200-deepseekv2-tp1-ep8-pp1-dp8-l4-mbc4",
    "deepseekv3_l4_tp1_ep8_pp1_dp8_mbc4": "simumax-b200-deepseekv3-l4-tp1-ep8-pp1-dp8-mbc4",
    "deepseekv3_l4_tp1_ep4_pp2_dp4_mbc4": "simumax-b200-deepseekv3-l4-tp1-ep4-pp2-dp4-mbc4",
}
V3_FROM_V2 = (("deepseekv3_l4_tp1_ep8_pp1_dp8", "deepseekv2_tp1_ep8_pp1_dp8_l4"),
              ("deepseekv3_l4_tp1_ep4_pp2_dp4", "deepseekv2_tp1_ep4_pp2_dp4_l4"))


UNIT_MS = {"s": 1e3, "ms": 1.0, "us": 1e-3}


def _ms(text: object) -> float:
    """SimuMax's report strings ('260.1568 ms', '2.0131 s') in milliseconds."""
    parts = str(text).split()
    return float(parts[0]) * UNIT_MS[parts[1] if len(parts) > 1 else "ms"]


def show(path: str) -> str:
    return subprocess.run(["git", f"--git-dir={MIRROR}", "show", f"{COMMIT}:{path}"],
                          check=True, capture_output=True, text=True).stdout


def simumax_parts() -> dict[str, dict[str, float]]:
    """SimuMax's own estimate of each case, re-run from the mirror: ms per iteration by part."""
    out: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", f"--git-dir={MIRROR}", "archive", COMMIT],
                                 check=True, capture_output=True).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        saved = dict(sys.modules)
        for name in ("pandas", "matplotlib", "matplotlib.pyplot", "matplotlib.patches",
                     "tabulate", "tqdm"):
            sys.modules[name] = types.ModuleType(name)
        sys.path.insert(0, tmp)
        try:
            from tools.b200 import run_megatron_perf_real_batch as batch
            with redirect_stdout(io.StringIO()):
                active = {c["record_case_name"]: c for c in batch.build_active_cases()}
            for name in CASES:
                base = name
                for v3, v2 in V3_FROM_V2:
                    base = base.replace(v3, v2)
                if base not in active:  # SimuMax's tools define no Llama 3 405B case
                    continue
                case = copy.deepcopy(active[base])
                if base != name:
                    case["model_rel"] = "configs/models/deepseekv3.json"
                    case["model_overrides"]["dense_layers"] = 1
                with redirect_stdout(io.StringIO()):
                    perf = batch.configure_perf(case, SYSTEM)
                    perf.strategy.enable_straggler_model = False
                    perf.strategy.cross_entropy_loss_fusion = True  # the cases' '_cef'
                    perf.run_estimate()
                    cost = perf.analysis_cost().data
                b = cost["breakdown_result"]
                stages = cost["all_chunk_times"]
                out[name] = {
                    "total_ms": _ms(cost["duration_time_per_iter"]),
                    "fwd_compute_ms": _ms(b["fwd_compute_time"]),
                    "bwd_compute_ms": _ms(b["bwd_compute_time"]),
                    "optimizer_ms": _ms(b["optim_time"]),
                    "intra_node_exposed_ms": _ms(b["intra_exposed_time"]),
                    "pp_exposed_ms": _ms(b["inter_exposed_time"]),
                    "dp_exposed_ms": _ms(b["dp_exposed_time"]),
                    "bubble_ms": max(_ms(s["bubble_time"]) for s in stages.values()),
                    "chunk_ms": max(_ms(s["chunk_time(fwd+bwd)"]) for s in stages.values()),
                }
        finally:
            sys.path.remove(tmp)
            for name in list(sys.modules):
                if name not in saved:
                    del sys.modules[name]
            sys.modules.update(saved)
    return out


def node_gemm_table() -> dict[tuple[int, int, int], float]:
    """The node's measured bf16 GEMMs (benchmarks/kernels_simumax_b200.csv, read from its system
    config by simumax_b200_gemms.py): (m, k, n) -> TFLOPS, the mean over the layouts measured
    (TN forward, NN dgrad, NT wgrad accumulating into fp32 or not)."""
    rates: dict[tuple[int, int, int], list[float]] = {}
    path = HERE / "kernels_simumax_b200.csv"
    with open(path, newline="") as fh:
        for r in csv.DictReader(fh):
            if r["kind"] != "gemm" or r["batch"] not in ("", "1"):
                continue
            key = (int(r["m"]), int(r["k"]), int(r["n"]))
            rates.setdefault(key, []).append(float(r["measured_value"]))
    return {k: sum(v) / len(v) for k, v in rates.items()}


def trainsim_parts(row_id: str) -> dict[str, float]:
    """trainsim's step of the row by part (ms), and its dense GEMMs' time at trainsim's price
    and at the node's measured rate (the shapes the node's sweep has)."""
    from trainsim.catalog import gpu
    from trainsim.compute import compute_model_for
    from trainsim.simulator import simulate
    from trainsim.validate.training import predict_training_row, row_config
    from trainsim.workload.layers import backward_of, layer_forward
    from trainsim.workload.ops import Gemm
    from trainsim.workload.shard import shard_of

    with open(ROWS, newline="") as fh:
        row = next(r for r in csv.DictReader(fh) if r["id"] == row_id)
    res = predict_training_row(row)
    cfg = row_config(row, res.chosen)
    out = simulate(cfg)
    b, t = out.breakdown, cfg.training
    got = {"measured_ms": 1e3 * res.measured, "predicted_ms": 1e3 * out.iteration_time_s,
           "compute_ms": 1e3 * b["compute_s"], "bubble_ms": 1e3 * b["pipeline_bubble_s"],
           "optimizer_ms": 1e3 * b["optimizer_s"], "host_ms": 1e3 * b["other_s"]}
    for g in ("tp", "ep", "dp", "pp", "cp"):
        got[f"x{g}_ms"] = 1e3 * out.exposed_comm.get(g, 0.0)
    # the dense layers' GEMMs, per micro-batch and layer, at trainsim's price and the node's
    table = node_gemm_table()
    model = compute_model_for(gpu("b200-sxm-180gb"), None, gpu)
    sh = shard_of(cfg)
    micro = t.global_batch_size // (t.micro_batch_size * cfg.dp)
    layers = cfg.model.num_layers // cfg.parallel.pp
    priced = node = matched = total = 0.0
    if not cfg.model.is_moe:
        fwd = layer_forward(cfg, sh)
        for op in fwd + backward_of(fwd, sh):
            if not isinstance(op, Gemm) or op.batch != 1 or op.grouped:
                continue
            s = model.time(op)
            total += s
            rate = table.get((op.m, op.k, op.n))
            if rate is None:
                continue
            matched += s
            priced += s
            node += 2.0 * op.m * op.n * op.k / (rate * 1e12)
    scale = 1e3 * micro * layers
    got.update(gemm_ms=scale * total, gemm_matched_ms=scale * matched,
               gemm_at_node_ms=scale * node, gemm_delta_ms=scale * (node - priced))
    return got


def slopes() -> list[str]:
    """Each layout's measured and predicted step against its micro-batches (4, 8, 32): the
    least-squares slope (ms a micro-batch: compute and the communication each micro-batch
    issues) and intercept (ms a step: optimizer, data-parallel, bubble, host); then, per layer
    of a pipeline stage, the slope's gap against trainsim's slope over the dense layouts, fitted
    as gap = a x trainsim + c (a diagnostic of how the gap scales: with the work, or per layer)."""
    from trainsim.validate.training import predict_training_row

    with open(ROWS, newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if re.search(r"-mbc(4|8|32)$", r["id"])]
    groups: dict[str, list[tuple[int, float, float]]] = {}
    depth: dict[str, int] = {}
    for r in rows:
        layout = re.sub(r"-mbc(4|8|32)$", "", r["id"]).removeprefix("simumax-b200-")
        res = predict_training_row(r)
        m = int(r["id"].rsplit("mbc", 1)[1])
        groups.setdefault(layout, []).append((m, 1e3 * res.measured, 1e3 * res.predicted))
        depth[layout] = int(r["num_layers"]) // int(r["pp"])
    lines = [("| layout | measured ms/mb | trainsim ms/mb | ratio | measured fixed ms | "
              "trainsim fixed ms | layers a stage | gap ms / layer / mb |"),
             "|---|---|---|---|---|---|---|---|"]
    per_layer: list[tuple[float, float]] = []
    tp1: dict[str, bool] = {}
    for layout, pts in groups.items():
        if len(pts) < 3:
            continue
        (ms_m, fix_m), (ms_t, fix_t) = (_line([p[0] for p in pts], [p[i] for p in pts])
                                        for i in (1, 2))
        gap = (ms_m - ms_t) / depth[layout]
        if layout.startswith("llama"):
            per_layer.append((ms_t / depth[layout], gap))
            tp1[layout] = "-tp1-" in layout
        lines.append(f"| {layout} | {ms_m:.1f} | {ms_t:.1f} | {ms_m / ms_t:.3f} | {fix_m:.1f} | "
                     f"{fix_t:.1f} | {depth[layout]} | {gap:.2f} |")
    a, c = _line([x for x, _ in per_layer], [y for _, y in per_layer])
    lines.append(f"\ndense layouts ({len(per_layer)}): gap a layer and micro-batch = {a:.3f} x "
                 f"trainsim's + {c:.2f} ms")
    flags = list(tp1.values())
    a1 = sum(y for (_, y), f in zip(per_layer, flags) if f) / \
        sum(x for (x, _), f in zip(per_layer, flags) if f)
    lines.append(f"tp 1 layouts alone (no tensor-parallel collectives): gap = {a1:.3f} x "
                 "trainsim's; what that leaves a layer and micro-batch at tp > 1 (ms): " + ", ".join(
                     f"{name} {y - a1 * x:+.2f}"
                     for name, (x, y), f in zip(tp1, per_layer, flags) if not f))
    return lines


def _line(xs: list, ys: list[float]) -> tuple[float, float]:
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return slope, my - slope * mx


def table() -> list[str]:
    sm = json.loads(PARTS.read_text())
    published = {r["case"].removesuffix("_cef"): r["perf_ms"]
                 for r in json.loads(show(SUMMARY))["rows"]} if MIRROR.exists() else {}
    lines = [("| case | measured | trainsim | SimuMax (published / re-run) | compute ts / sm | "
             "exposed comm ts (tp+ep) / sm (intra) | dp+pp ts / sm | optimizer ts / sm | "
             "bubble ts / sm | host ts | dense GEMMs ts -> at node rate |"),
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for case, row_id in CASES.items():
        p = trainsim_parts(row_id)
        s = sm.get(case, dict.fromkeys(("total_ms", "fwd_compute_ms", "bwd_compute_ms",
                                        "intra_node_exposed_ms", "dp_exposed_ms",
                                        "pp_exposed_ms", "optimizer_ms", "bubble_ms"),
                                       float("nan")))
        gemm = (f"{p['gemm_ms']:.0f} -> {p['gemm_ms'] + p['gemm_delta_ms']:.0f} "
                f"({100 * p['gemm_matched_ms'] / p['gemm_ms']:.0f} % of the time matched, "
                f"x{1 + p['gemm_delta_ms'] / p['gemm_matched_ms']:.3f})"
                if p["gemm_matched_ms"] else "-")
        lines.append(
            f"| {case} | {p['measured_ms']:.1f} | {p['predicted_ms']:.1f} | "
            f"{published.get(case, float('nan')):.1f} / {s['total_ms']:.1f} | "
            f"{p['compute_ms']:.1f} / {s['fwd_compute_ms'] + s['bwd_compute_ms']:.1f} | "
            f"{p['xtp_ms'] + p['xep_ms']:.1f} / {s['intra_node_exposed_ms']:.1f} | "
            f"{p['xdp_ms'] + p['xpp_ms']:.1f} / {s['dp_exposed_ms'] + s['pp_exposed_ms']:.1f} | "
            f"{p['optimizer_ms']:.1f} / {s['optimizer_ms']:.1f} | "
            f"{p['bubble_ms']:.1f} / {s['bubble_ms']:.1f} | {p['host_ms']:.1f} | {gemm} |")
    return lines


def main(argv: list[str]) -> int:
    if argv == ["--simumax"]:
        PARTS.write_text(json.dumps(simumax_parts(), indent=1, sort_keys=True) + "\n")
        return 0
    if argv == ["--check"]:
        fresh = simumax_parts()
        ok = fresh == json.loads(PARTS.read_text())
        print("simumax_b200_parts.json: " + ("as re-run" if ok else "DIFFERS from a re-run"))
        return 0 if ok else 1
    if argv and argv not in (["--slopes"],):
        print("usage: simumax_b200_parts.py [--simumax | --check | --slopes]", file=sys.stderr)
        return 2
    if argv == ["--slopes"]:
        print("\n".join(slopes()))
        return 0
    print("\n".join(table()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
