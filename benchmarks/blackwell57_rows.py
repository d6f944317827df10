"""Every B200 / GB200 (sm100) training row of the check files, the public and the held-out
file, and one question: does one physical mechanism explain why the NeMo 25.0x / dgxc 25.05
rows are priced fast? (issue 17 item 2, 57th session; a diagnostic: nothing here feeds
trainsim.)

    PYTHONPATH=src python benchmarks/blackwell57_rows.py --out DIR    # ~3-10 min on 2 busy cores
    PYTHONPATH=src python benchmarks/blackwell57_rows.py --report DIR # reprint from DIR's JSON
    PYTHONPATH=src python benchmarks/blackwell57_rows.py --report DIR --check 0.136  # part 6

Each row is priced as ``trainsim validate`` prices it (``base``) and again with one kind of
sm100 work made ``STEP`` slower at a time: ``memory`` (memory-bound kernels), ``comm``
(collectives and sends), ``gemm`` (dense GEMMs alone: what a slower GEMM library
would cost) and ``clock`` (every tensor-core kernel, dense and grouped GEMMs, fused attention
and its exponentials: what a lower SM clock under the board's power limit would cost; HBM-bound
kernels and NVLink keep their speed). The step's rise over ``STEP`` is the kind's share ``s`` of
the row's critical path. A mechanism that makes that work slower by a fraction ``a`` on every
row leaves a gap ``measured / predicted - 1 = a * s``; ``a`` is fitted by least squares with each
source (file) left out in turn and the left-out source scored at the fold's ``a`` (linear in
``a``: ``predicted * (1 + a * s)``). H100 / H200 rows of the same files are the control: both
mechanisms are sm100-only, so those rows are unchanged by construction and listed only to show
what the same releases measure on Hopper.

Printed: (1) every sm100 row: source, GPU, dtype and fp8 recipe, framework and release, dense or
MoE, micro-batch shape (micro-batch x sequence / CP tokens, TP), CUDA graphs, signed error, both
shares; (2) the mean signed error by (framework release, GPU) beside the Hopper rows of the same
release; (3) each mechanism's leave-one-source-out fit; (4) same-work pairs across GPUs, releases
and models; (5) fp8 over bf16 at one layout; (6) with ``--check A``, the linear estimate of
part 3 against a real re-pricing with dense sm100 GEMMs ``A`` slower.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections import defaultdict
from multiprocessing import Pool
from pathlib import Path

from blackwell_work import _predict, is_moe

HERE = Path(__file__).resolve().parent
STEP = 0.10
SM100 = ("b200-sxm-180gb", "b200-sxm-180gb-750w", "gb200")
HOPPER = ("h100", "h200", "h800")
VARIANTS = ("base", "gemm", "clock", "memory", "comm")


def files() -> list[Path]:
    from trainsim.validate import BUNDLED_DIR
    out = [BUNDLED_DIR / "training_public.csv", HERE / "training_heldout.csv"]
    return out + sorted(p for p in HERE.glob("training_*.csv")
                        if p.stem not in ("training_heldout", "training_errata"))


def sm100(gpu: str) -> bool:
    return gpu.lower() in SM100


def patch(variant: str, step: float = STEP) -> None:
    """Make one kind of sm100 work ``step`` slower in this process."""
    from trainsim import pricing
    from trainsim.compute import chain
    from trainsim.workload.ops import Attention, Elementwise, Gemm
    if variant == "base":
        return
    if variant == "comm":  # collectives and sends (only sm100 rows are priced in a variant)
        orig_c = pricing.Pricer._comm_time
        pricing.Pricer._comm_time = lambda self, op: orig_c(self, op) * (1 + step)
        return
    orig = chain.ChainModel.explain

    def explain(self, op):
        t, how = orig(self, op)
        if (self.gpu.sm_arch or 0) != 100:
            return t, how
        dense = isinstance(op, Gemm) and (not op.grouped or op.grouped == "userbuffers")
        hit = {"gemm": dense, "clock": isinstance(op, (Gemm, Attention)),
               "memory": isinstance(op, Elementwise)}[variant]
        return (t * (1 + step) if hit else t), how
    chain.ChainModel.explain = explain


def rows() -> list[dict[str, str]]:
    """sm100 rows, and Hopper rows of the files that hold an sm100 row."""
    out = []
    for f in files():
        with open(f, newline="") as fh:
            rs = [r for r in csv.DictReader(fh) if r.get("measured_iteration_s")]
        if not any(sm100(r["gpu"]) for r in rs):
            continue
        for r in rs:
            hop = r["gpu"].lower().startswith(HOPPER)
            if sm100(r["gpu"]) or hop:
                out.append({**r, "_key": f"{f.stem.removeprefix('training_')}:{r['id']}",
                            "_src": f.stem.removeprefix("training_"), "_moe": is_moe(r),
                            "_gen": "sm100" if sm100(r["gpu"]) else "hopper"})
    return out


def run(variant: str, rs: list[dict[str, str]], step: float = STEP) -> dict[str, list[float]]:
    todo = rs if variant == "base" else [r for r in rs if r["_gen"] == "sm100"]
    with Pool(2, initializer=patch, initargs=(variant, step)) as pool:
        return {k: [m, p] for k, m, p in pool.map(_predict, todo, chunksize=2)}


def shape(r: dict[str, str]) -> str:
    cp = int(r.get("cp") or 1)
    tokens = int(r["micro_batch_size"] or 1) * int(r["seq_length"] or 0) // cp \
        if r.get("seq_length") else 0
    return f"{tokens}t/tp{r.get('tp') or 1}"


def release(r: dict[str, str]) -> str:
    return f"{r['framework']} {r['framework_version']}"


def fit(pairs: list[tuple[float, float]]) -> float:
    """Least-squares a in gap = a * share."""
    num = sum(s * g for s, g in pairs)
    den = sum(s * s for s, _ in pairs)
    return num / den if den else 0.0


def report(out: Path, rs: list[dict[str, str]]) -> None:
    res = {v: json.loads((out / f"{v}.json").read_text()) for v in VARIANTS}
    base = res["base"]
    by = {r["_key"]: r for r in rs}

    def err(k: str) -> float:
        m, p = base[k]
        return (p / m - 1) * 100

    def share(v: str, k: str) -> float:
        return (res[v][k][1] / base[k][1] - 1) / STEP

    def implied(k: str) -> float:
        """The GEMM deficit this row alone asks for: gap / GEMM share."""
        s = share("gemm", k)
        return (base[k][0] / base[k][1] - 1) / s if s > 0.05 else float("nan")

    ok = [k for k in base if base[k][1] == base[k][1] and base[k][0] > 0]
    bw = [k for k in ok if by[k]["_gen"] == "sm100" and k in res["gemm"]]
    print("1. every sm100 row (signed % = predicted / measured - 1; s_gemm, s_clock: shares)")
    print(f"  {'source:id':66s} {'gpu':6s} {'dtype':11s} {'release':22s} {'kind':5s} "
          f"{'mb shape':12s} cg  {'signed':>7s} {'s_gemm':>6s} {'s_clk':>6s} {'s_mem':>6s} "
          f"{'s_comm':>6s} {'a_gemm':>6s}")
    for k in sorted(bw, key=lambda k: (by[k]["_src"], release(by[k]), k)):
        r = by[k]
        dt = r["dtype"] + (f"/{r['fp8_recipe']}" if r.get("fp8_recipe") else "")
        gpu = {"b200-sxm-180gb": "B200", "gb200": "GB200"}.get(r["gpu"], "B200@750")
        cg = "y" if "cuda_graphs" in (r.get("options") or "") else "-"
        print(f"  {k[:66]:66s} {gpu:6s} {dt:11s} {release(r)[:22]:22s} "
              f"{'moe' if r['_moe'] else 'dense':5s} {shape(r):12s} {cg:3s} {err(k):+7.1f} "
              f"{share('gemm', k):6.2f} {share('clock', k):6.2f} {share('memory', k):6.2f} "
              f"{share('comm', k):6.2f} {implied(k):+6.2f}")
    bad = sorted(k for k in base if k not in ok)
    if bad:
        print(f"  refused: {', '.join(bad)}")

    print("\n2. mean signed % by release and GPU (n); Hopper rows of the same files beside")
    groups: dict[tuple[str, str], list[float]] = defaultdict(list)
    for k in ok:
        r = by[k]
        gpu = r["gpu"].split("-")[0].upper() if r["_gen"] == "sm100" else "Hopper"
        groups[(release(r), gpu)].append(err(k))
    for rel in sorted({g[0] for g in groups}):
        cells = [f"{g} {sum(v) / len(v):+6.1f} ({len(v)})" for (r2, g), v in sorted(groups.items())
                 if r2 == rel]
        print(f"  {rel:28s} " + "   ".join(cells))

    print("\n3. one sm100 mechanism, fitted with each source left out (dense rows within 40 %)")
    dense = [k for k in bw if not by[k]["_moe"] and abs(err(k)) < 40]
    srcs = sorted({by[k]["_src"] for k in bw})  # MoE-only sources are scored, never fitted
    for v in ("gemm", "clock"):
        allpairs = [(share(v, k), base[k][0] / base[k][1] - 1) for k in dense]
        a_all = fit(allpairs)
        print(f"  {v}: a fitted on all {len(dense)} rows {a_all:+.3f} (work {1 / (1 + a_all):.3f}x "
              f"as fast as priced)")
        print(f"    {'left out':22s} {'n':>3s} {'a (others)':>10s} {'MAPE before':>11s} "
              f"{'after':>6s} {'signed before':>13s} {'after':>6s}")
        for src in srcs:
            a = fit([(share(v, k), base[k][0] / base[k][1] - 1) for k in dense
                     if by[k]["_src"] != src])
            ks = [k for k in bw if by[k]["_src"] == src]
            before = [base[k][1] / base[k][0] - 1 for k in ks]
            after = [base[k][1] * (1 + a * share(v, k)) / base[k][0] - 1 for k in ks]
            print(f"    {src:22s} {len(ks):3d} {a:+10.3f} {mean_abs(before):10.1f}% "
                  f"{mean_abs(after):5.1f}% {mean(before):+12.1f}% {mean(after):+5.1f}%")
        rels: dict[str, list[str]] = defaultdict(list)
        for k in dense:
            rels[release(by[k])].append(k)
        cells = []
        for rel, ks in sorted(rels.items()):
            a = fit([(share(v, k), base[k][0] / base[k][1] - 1) for k in ks])
            cells.append(f"{rel} {a:+.3f} ({len(ks)})")
        print("    a per release alone: " + "; ".join(cells))
    pairs(base, by)
    dtype_pairs({k: v for k, v in base.items() if k in ok}, by)


# Same-work pairs: (label, key a, key b). Per-GPU seconds per sequence (step x GPUs / global
# batch) measured and predicted for each, and b over a.
PAIRS = (
    ("405B tp4 pp8 cp2 vp8, MLPerf 5.0 code (ngc25.04): H200 Nebius -> GB200 NVIDIA",
     "mlperf5:mlperf50-nebius-llama3.1-405b-h200-512", "mlperf5:mlperf50-nvidia-llama3.1-405b-gb200-512"),
    ("405B GB200: MLPerf 5.0 tp4 pp8 cp2 (ngc25.04) -> Bridge 26.04 tp4 pp16 cp1",
     "mlperf5:mlperf50-nvidia-llama3.1-405b-gb200-512", "public:bridge2604p1-llama3.1-405b-gb200-256"),
    ("405B GB200: NeMo 25.04 perf summary -> dgxc 25.05 (nemo:25.04, same layout, delayed)",
     "nemo_perf:nemo2504-llama3-405b-gb200-128", "dgxc2505:dgxc2505-llama3.1-405b-fp8-gb200-128"),
    ("405B B200 tp4 pp8 cp2 GBS 64: NeMo 25.02 -> Bridge 25.11",
     "nemo_perf:nemo2502-llama3-405b-b200-128", "public:bridge2511-llama3.1-405b-b200-128"),
    ("UF DGX B200, MLPerf 5.1 (ngc25.09, air-cooled, 1000 W): 8B on 8 -> 405B on 256",
     "mlperf5:mlperf51-uf-llama3.1-8b-b200-8", "mlperf5:mlperf51-uf-llama3.1-405b-b200-256"),
    ("Llama 3 8B on 8: NeMo 25.02 B200 -> Bridge 25.11 B200",
     "nemo_perf:nemo2502-llama3-8b-b200-8", "public:bridge2511-llama3-8b-b200-8"),
    ("Llama 3 8B on 8: NeMo 25.04 GB200 -> Bridge 25.11 GB200 (fp8 cs)",
     "nemo_perf:nemo2504-llama3-8b-gb200-8", "bridge_archive:bridgearch2511-llama3-8b-gb200-8-fp8cs"),
)


def pairs(base: dict[str, list[float]], by: dict[str, dict[str, str]]) -> None:
    print("\n4. same-work pairs: per-GPU seconds per sequence, measured / predicted (signed %), "
          "and the second over the first")
    for label, a, b in PAIRS:
        if a not in base or b not in base:
            print(f"  {label}: row missing")
            continue
        per = []
        for k in (a, b):
            r = by[k]
            f = int(r["num_gpus"]) / int(r["global_batch_size"])
            per.append((base[k][0] * f, base[k][1] * f))
        (ma, pa), (mb, pb) = per
        print(f"  {label}\n    {ma:7.3f} / {pa:7.3f} ({(pa / ma - 1) * 100:+5.1f} %) -> {mb:7.3f} / "
              f"{pb:7.3f} ({(pb / mb - 1) * 100:+5.1f} %); ratio measured {mb / ma:.3f}, "
              f"predicted {pb / pa:.3f}")


def dtype_pairs(base: dict[str, list[float]], by: dict[str, dict[str, str]]) -> None:
    """Rows of one file, model, GPU and layout in bf16 and in fp8: the fp8 step over the bf16
    one, measured and predicted (what fp8 alone buys; the miss both dtypes share cancels)."""
    print("\n5. fp8 / bf16 at one layout (same file, model, GPUs, parallel sizes, batch, sequence)")
    cells = ("model", "gpu", "num_gpus", "tp", "pp", "cp", "ep", "vpp", "micro_batch_size",
             "global_batch_size", "seq_length")
    groups: dict[tuple[str, ...], dict[str, str]] = defaultdict(dict)
    for k in base:
        r = by[k]
        dt = r["dtype"] + (f"/{r['fp8_recipe']}" if r.get("fp8_recipe") else "")
        groups[(r["_src"],) + tuple(r.get(c) or "" for c in cells)][dt] = k
    for key, ks in sorted(groups.items()):
        if "bf16" not in ks or len(ks) < 2:
            continue
        mb, pb = base[ks["bf16"]]
        for dt, k in sorted(ks.items()):
            if dt == "bf16":
                continue
            m, p = base[k]
            print(f"  {key[0]:18s} {key[1]:18s} {key[2][:6]:6s} {key[3]:>5s} {dt:12s} measured "
                  f"{m / mb:.3f} predicted {p / pb:.3f} (bf16 {(pb / mb - 1) * 100:+5.1f} %, "
                  f"{dt} {(p / m - 1) * 100:+5.1f} %)")


def mean(xs: list[float]) -> float:
    return 100 * sum(xs) / len(xs) if xs else float("nan")


def mean_abs(xs: list[float]) -> float:
    return 100 * sum(abs(x) for x in xs) / len(xs) if xs else float("nan")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--out", type=Path, help="price every variant into DIR, then report")
    g.add_argument("--report", type=Path, help="report from DIR's JSON")
    ap.add_argument("--check", type=float, metavar="A",
                    help="re-price the sm100 rows with dense GEMMs A slower and set the step's "
                         "MAPE per source beside the linear estimate (DIR holds the base run)")
    ns = ap.parse_args(argv)
    rs = rows()
    out = ns.out or ns.report
    if ns.out:
        out.mkdir(parents=True, exist_ok=True)
        for v in VARIANTS:
            if not (out / f"{v}.json").exists():
                (out / f"{v}.json").write_text(json.dumps(run(v, rs)))
                print(f"priced {v}", file=sys.stderr)
    report(out, rs)
    if ns.check is not None:
        check(out, rs, ns.check)
    return 0


def check(out: Path, rs: list[dict[str, str]], a: float) -> None:
    """The linear estimate of part 3 against a real re-pricing at one ``a``."""
    base = json.loads((out / "base.json").read_text())
    gemm = json.loads((out / "gemm.json").read_text())
    path = out / f"gemm_{a:g}.json"
    if not path.exists():
        path.write_text(json.dumps(run("gemm", rs, a)))
    real = json.loads(path.read_text())
    by = {r["_key"]: r for r in rs}
    print(f"\n6. dense sm100 GEMMs {a:+.3f} slower, re-priced: MAPE (signed) per source, linear "
          "estimate -> re-priced")
    srcs: dict[str, list[str]] = defaultdict(list)
    for k in real:
        if k in base and base[k][1] == base[k][1] and real[k][1] == real[k][1]:
            srcs[by[k]["_src"]].append(k)
    for src, ks in sorted(srcs.items()):
        lin = [base[k][1] * (1 + a * (gemm[k][1] / base[k][1] - 1) / STEP) / base[k][0] - 1
               for k in ks]
        new = [real[k][1] / real[k][0] - 1 for k in ks]
        old = [base[k][1] / base[k][0] - 1 for k in ks]
        print(f"  {src:22s} {len(ks):3d}  {mean_abs(old):5.1f} ({mean(old):+5.1f}) -> linear "
              f"{mean_abs(lin):5.1f} ({mean(lin):+5.1f}), re-priced {mean_abs(new):5.1f} "
              f"({mean(new):+5.1f})")


if __name__ == "__main__":
    sys.exit(main())
