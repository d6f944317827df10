"""Writes benchmarks/kernels_simumax_b200.csv: the 514 bf16 GEMMs, 108 grouped GEMMs and 64 attention
kernels SimuMax's authors measured on the B200 node of their training runs
(benchmarks/training_simumax_b200.csv), a kernels check file.

    python benchmarks/simumax_b200_gemms.py > benchmarks/kernels_simumax_b200.csv
    python benchmarks/simumax_b200_gemms.py --check   # the committed file against the mirror
    PYTHONPATH=src python benchmarks/simumax_b200_gemms.py --durations   # GEMM rate by call length

MooreThreads/SimuMax configs/system/b200_bf16_ceperm.json @ 4dcaae5 (as added in 1b8ca90,
2026-05-06): `accelerator.op.matmul.accurate_efficient_factor`, one entry a GEMM shape
('b=1, m=4096, k=8192, n=10240, layout=TN, accumulate=False, out_dtype=bf16'), each the
measured TFLOPS over the config's 2,250 (`tflops`). simu_tools/efficency_test/
test_gemm_efficiency.py wrote them: TransformerEngine's `general_gemm` in bf16 with the shape's
layout, accumulate flag and output dtype, 100 calls of which the first 25 warm up, host time
over the other 75 after a device synchronize, TFLOPS = 2 b m n k / time (a B200 of the node,
TE 2.11, CUDA 13.1: docs/b200/b200_real_repro_guide.md).
`group_matmul`: test_grouped_gemm_efficiency.py's TE `general_grouped_gemm` (one cuBLAS GEMM per
group on TE's stream pool: implementation `te`), ng groups of M rows each (DeepSeek-V2 / V3 experts
at an even top-k split, ep 1-8), bf16, 50 calls of which 10 warm up, host time over the other 40,
TFLOPS = 2 ng M N K / time; `stage=fwd` is X[M, K] W^T (m = ng M, n = N, k = K), `bwd_grad_act`
dY[M, N] W (m = ng M, n = K, k = N), `bwd_grad_w` dY^T X accumulated into the fp32 or bf16
`main_grad` (per group N x K over M: m = ng N, n = K, k = M). `sdp_fwd` / `sdp_bwd`: causal
attention through Megatron's TEDotProductAttention (TE's cuDNN fused attention on B200), bf16
inputs, timed as the span from the first to the last kernel of each iteration in a
torch.profiler trace (FA_TIMING_MODE trace_kernel, test_fa_efficiency.py, median of 19),
efficiency = FLOPs / time / 2,250 TFLOPS with FLOPs = 2 b s^2 h (d_qk + d_v) forward and
5 b s^2 h (d_qk + d_v) backward (not halved for the causal mask): the rows give the time,
t = FLOPs / (efficiency x 2,250e12). MLA's shapes (d_qk 192, d_v 128) fill the optional column
`v_head_dim` (head_dim the query/key width). The figures are read from the mirror (686 numbers
are not typed in); ``--check`` compares the committed file with them.
Nothing in trainsim was fitted to these rows.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mirror_rows

REPO_DIR = "MooreThreads+SimuMax"
COMMIT = "4dcaae5"
SYSTEM = "configs/system/b200_bf16_ceperm.json"
HEADER = ["id", "source", "gpu", "kind", "implementation", "dtype", "m", "n", "k", "groups",
          "batch", "seq_len", "heads", "kv_heads", "head_dim", "v_head_dim", "causal", "tokens", "hidden",
          "ffn", "experts", "top_k", "bytes", "measured_value", "measured_unit", "note"]
KEY = re.compile(r"b=(\d+), m=(\d+), k=(\d+), n=(\d+), layout=(TN|NN|NT), "
                 r"accumulate=(True|False), out_dtype=(bf16|fp32)$")
SDP = re.compile(r"batch=(\d+), seq_len=(\d+), head_num=(\d+), kv_head_num=(\d+), "
                 r"qk_head_dim=(\d+), v_head_dim=(\d+), qkv_contiguous=(True|False)$")
GROUPED = re.compile(r"ng=(\d+), M=(\d+), N=(\d+), K=(\d+), dtype=bf16, out_dtype=bf16, "
                     r"main_grad_dtype=(fp32|bf16), stage=(fwd|bwd_grad_act|bwd_grad_w), "
                     r"grad=(True|False), accumulate=(True|False), "
                     r"use_split_accumulator=(True|False), single_output=(True|False)$")
STAGE = {"fwd": "forward X W^T", "bwd_grad_act": "input gradient dY W",
         "bwd_grad_w": "weight gradient dY^T X"}
ROLE = {"TN": "forward (y = x W^T)", "NN": "input gradient (dx = dy W)",
        "NT": "weight gradient (dW = dy^T x)"}


def rows() -> list[dict[str, str]]:
    matmul = json.loads(mirror_rows.show(REPO_DIR, COMMIT, SYSTEM))["accelerator"]["op"]["matmul"]
    peak = float(matmul["tflops"])
    if peak != 2250.0:
        raise ValueError(f"{SYSTEM}: matmul tflops {peak}, not 2250")
    out = []
    for i, (key, eff) in enumerate(matmul["accurate_efficient_factor"].items()):
        match = KEY.match(key)
        if match is None:
            raise ValueError(f"{SYSTEM}: a GEMM key not as read: {key!r}")
        b, m, k, n = (int(v) for v in match.groups()[:4])
        layout, accumulate, out_dtype = match.groups()[4:]
        if b != 1:
            raise ValueError(f"{key}: batch {b}")
        row = {c: "" for c in HEADER}
        row.update(
            id=f"simumax-b200-gemm-{i:03d}-m{m}-n{n}-k{k}-{layout.lower()}"
               f"{'-acc' if accumulate == 'True' else ''}-{out_dtype}",
            source=(f"MooreThreads/SimuMax {SYSTEM} @ {COMMIT} (as added in 1b8ca90, 2026-05-06), "
                    f"matmul accurate_efficient_factor '{key}': {eff!r} x 2250 TFLOPS"),
            gpu="b200-sxm-180gb", kind="gemm", implementation="cublas", dtype="bf16", m=str(m),
            n=str(n), k=str(k), measured_value=f"{eff * peak:.3f}", measured_unit="TFLOP/s",
            note=(f"TE 2.11 general_gemm layout {layout} ({ROLE[layout]} in TE's use), "
                  f"{'accumulated into the ' + out_dtype + ' output (read and written)' if accumulate == 'True' else 'output ' + out_dtype}; 75 timed calls after 25 "
                  "warm-up, host time after a synchronize (test_gemm_efficiency.py); one B200 "
                  "of the 8-GPU node of training_simumax_b200.csv, its power limit not stated"))
        out.append(row)
    return out + grouped_rows() + attention_rows()


def grouped_rows() -> list[dict[str, str]]:
    """TE's grouped GEMMs of the node's MoE experts (module docstring), each stage's GEMM in the
    kernels file's terms: m the rows of all groups, n and k each group's."""
    op = json.loads(mirror_rows.show(REPO_DIR, COMMIT, SYSTEM))["accelerator"]["op"]["group_matmul"]
    peak = float(op["tflops"])
    if peak != 2250.0:
        raise ValueError(f"{SYSTEM}: group_matmul tflops {peak}, not 2250")
    out = []
    for i, (key, eff) in enumerate(op["accurate_efficient_factor"].items()):
        match = GROUPED.match(key)
        if match is None:
            raise ValueError(f"{SYSTEM}: a grouped-GEMM key not as read: {key!r}")
        ng, M, N, K = (int(v) for v in match.groups()[:4])
        main_grad, stage = match.groups()[4:6]
        m, n, k = {"fwd": (ng * M, N, K), "bwd_grad_act": (ng * M, K, N),
                   "bwd_grad_w": (ng * N, K, M)}[stage]
        into = (f"accumulated into the {main_grad} main_grad (read and written)"
                if stage == "bwd_grad_w" else
                f"output bf16 (run beside the {main_grad} main_grad case: a repeat)")
        row = {c: "" for c in HEADER}
        row.update(
            id=f"simumax-b200-ggemm-{i:03d}-g{ng}-m{M}-n{N}-k{K}-{stage.replace('_', '-')}-{main_grad}",
            source=(f"MooreThreads/SimuMax {SYSTEM} @ {COMMIT} (as added in 1b8ca90, 2026-05-06), "
                    f"group_matmul accurate_efficient_factor '{key}': {eff!r} x 2250 TFLOPS"),
            gpu="b200-sxm-180gb", kind="gemm_grouped", implementation="te", dtype="bf16",
            m=str(m), n=str(n), k=str(k), groups=str(ng), measured_value=f"{eff * peak:.3f}",
            measured_unit="TFLOP/s",
            note=(f"TE 2.11 general_grouped_gemm, {STAGE[stage]}: {ng} groups of M={M} token rows, "
                  f"N={N}, K={K} (test_grouped_gemm_efficiency.py), {into}; 40 timed calls after "
                  "10 warm-up, host time after a synchronize, TFLOPS = 2 ng M N K / time; one B200 "
                  "of the 8-GPU node of training_simumax_b200.csv, its power limit not stated"))
        out.append(row)
    return out


def attention_rows() -> list[dict[str, str]]:
    """The TE fused-attention forward and backward times, from the efficiency and SimuMax's FLOP
    convention (module docstring); MLA's (d_qk != d_v) with the value width in ``v_head_dim``."""
    op = json.loads(mirror_rows.show(REPO_DIR, COMMIT, SYSTEM))["accelerator"]["op"]
    out = []
    for kind, factor in (("sdp_fwd", 2), ("sdp_bwd", 5)):
        peak = float(op[kind]["tflops"])
        for key, eff in op[kind]["accurate_efficient_factor"].items():
            match = SDP.match(key)
            if match is None:
                raise ValueError(f"{SYSTEM}: an attention key not as read: {key!r}")
            b, s, h, kv, dqk, dv = (int(v) for v in match.groups()[:6])
            contiguous = match.groups()[6]
            ms = factor * b * s * s * h * (dqk + dv) / (eff * peak * 1e12) * 1e3
            row = {c: "" for c in HEADER}
            row.update(
                id=(f"simumax-b200-{kind.replace('sdp_', 'attn-')}-s{s}-h{h}-kv{kv}-d{dqk}"
                    f"{'' if dqk == dv else f'-dv{dv}'}{'' if contiguous == 'True' else '-strided'}"),
                source=(f"MooreThreads/SimuMax {SYSTEM} @ {COMMIT} (as added in 1b8ca90, "
                        f"2026-05-06), {kind} accurate_efficient_factor '{key}': {eff!r}"),
                gpu="b200-sxm-180gb", kind=f"attention_{kind[4:]}", implementation="cudnn",
                dtype="bf16", batch=str(b), seq_len=str(s), heads=str(h), kv_heads=str(kv),
                head_dim=str(dqk), v_head_dim="" if dqk == dv else str(dv), causal="1",
                measured_value=f"{ms:.4f}", measured_unit="ms",
                note=(f"Megatron TEDotProductAttention, causal, sbhd, q/k/v "
                      f"{'one contiguous buffer' if contiguous == 'True' else 'separate strided views'}"
                      f"; time = {factor} b s^2 h (d_qk + d_v) / ({eff:.4f} x 2250 TFLOPS) "
                      "(SimuMax's FLOP convention, not halved for the mask); kernel span a "
                      "profiled iteration (trace_kernel, test_fa_efficiency.py); one B200 of the "
                      "node of training_simumax_b200.csv"))
            out.append(row)
    return out


def _text() -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=HEADER, lineterminator="\n")
    w.writeheader()
    w.writerows(rows())
    return buf.getvalue()


def check() -> list[str]:
    path = Path(__file__).resolve().parent / "kernels_simumax_b200.csv"
    return [] if path.read_text() == _text() else [f"{path.name} differs from the mirror's figures"]


DURATION_BINS_MS = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, math.inf)


def durations() -> list[str]:
    """The committed file's dense GEMMs with m, n, k >= 2048 binned by the time of one call
    (2mnk over the measured rate), each bin's measured and trainsim-priced median TFLOPS: a
    node-wide power limit or clock would cap every bin, a loop's falling clock only the
    longer calls."""
    import statistics

    from trainsim.validate.kernels import predict_kernel_row

    path = Path(__file__).resolve().parent / "kernels_simumax_b200.csv"
    with open(path, newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["kind"] == "gemm"
                and min(int(r[c]) for c in ("m", "n", "k")) >= 2048]
    bins: dict[float, list[tuple[float, float]]] = {b: [] for b in DURATION_BINS_MS}
    for r in rows:
        rate = float(r["measured_value"])
        ms = 2 * int(r["m"]) * int(r["n"]) * int(r["k"]) / (rate * 1e12) * 1e3
        edge = next(b for b in DURATION_BINS_MS if ms < b)
        bins[edge].append((rate, predict_kernel_row(r).predicted))
    out = ["call < ms | rows | measured median | max | trainsim median | measured / trainsim"]
    for edge, pairs in bins.items():
        if pairs:
            meas = [m for m, _ in pairs]
            out.append(f"{edge:g} | {len(pairs)} | {statistics.median(meas):.0f} | {max(meas):.0f} | "
                       f"{statistics.median(p for _, p in pairs):.0f} | "
                       f"{statistics.median(m / p for m, p in pairs):.3f}")
    return out


def main() -> None:
    if sys.argv[1:] == ["--durations"]:
        print("\n".join(durations()))
        return
    if sys.argv[1:] == ["--check"]:
        bad = check()
        print("\n".join(bad) or "the file is the mirror's figures")
        sys.exit(1 if bad else 0)
    sys.stdout.write(_text())


if __name__ == "__main__":
    main()
