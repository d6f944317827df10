"""What the llm.c A100 rows' kernels are priced at, beside the public A100 evidence (62nd session, llmc62).

Three tables, nothing fitted, nothing written:

1. The GEMMs and attention of one step of each A100 ``training_llmc.csv`` row under the ``llm-c``
   profile (the ops ``llmc61_parts.step_parts`` prices), grouped by shape: TFLOP/s as priced and
   the step's seconds; attention also as the ``flash2`` kernel would be priced (the same op with
   ``impl="flash2"``), the what-if a "cuDNN on Ampere runs FA2-like kernels" change would give.
2. The model's cuDNN / FlashAttention-2 rate ratio on the A100 at the FA2 paper's head-dim-64
   shapes (``kernels_published.csv``'s ``fa2paper-a100-*`` rows re-priced as ``cudnn``), beside
   the published A100 ratios (``PUBLISHED_CUDNN_OVER_FLASH``).
3. The A100 GEMM rows of ``kernels_published.csv`` with k <= 2,048 (all vidur's, fp16, m <= 4,096):
   measured / predicted time by k, the only published A100 GEMM evidence at the llm.c rows' k.

    PYTHONPATH=src:benchmarks python benchmarks/llmc62_evidence.py
"""
from __future__ import annotations

import csv
import dataclasses
import sys
from collections import defaultdict
from pathlib import Path

from llmc61_parts import FILE

from trainsim.pricing import Pricer
from trainsim.validate.kernels import predict_kernel_row
from trainsim.validate.training import predict_training_row, row_config
from trainsim.workload.head import head_backward, head_forward
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.ops import Attention, Gemm
from trainsim.workload.shard import shard_of

KERNELS = Path("/work/shared/validation/kernels_published.csv")
if not KERNELS.exists():  # the worktree's ../shared link, as board.sh reads it
    KERNELS = Path(__file__).resolve().parents[2] / "shared" / "validation" / "kernels_published.csv"
A100_ROWS = ("llmc-gpt2-124m-a100-8", "llmc-gpt3-125m-a100-8")

PUBLISHED_CUDNN_OVER_FLASH = (
    # (source, shapes, cuDNN rate over SDPA-flash (FA2) rate on sm80, what was timed)
    ("pytorch/pytorch#126122 (drisspg, 2024-05, 'A100 Numbers')", "b1 s4096 h32 d64", 0.956, "one pass"),
    ("pytorch/pytorch#126122", "b1 s4096 h16 d128", 0.930, "one pass"),
    ("pytorch/pytorch#126122", "b1 s8192 h32 d64", 0.993, "one pass"),
    ("pytorch/pytorch#192799 (gderossi, 2026-08, sm80 medians)", "its grid's median", 1.051, "fwd"),
    ("pytorch/pytorch#192799", "its grid's median", 1.008, "fwd+bwd"),
    ("huggingface/transformers#48163 (2026-08, PR text)", "training shapes", 0.82, "fwd+bwd"),
)
"""Published cuDNN-over-FlashAttention-2 speed ratios on the A100 (time of flash / time of cuDNN;
#192799's from its median times, 1.472 / 1.401 ms forward and 13.615 / 13.508 ms fwd+bwd). Read
from the threads' text (search corpus 'issues'); evidence, never fed to a prediction."""


def step_ops(row: dict[str, str]):
    """(config, [(op, count a step)]) for ``row`` under its named profile: one pass of each
    layer section times its layers and micro-batches, and the head (pp 1 rows)."""
    res = predict_training_row(row)
    cfg = row_config(row, res.chosen)
    sh = shard_of(cfg)
    lf = layer_forward(cfg, sh, moe=False)
    lb = backward_of(lf, sh)
    hf = head_forward(cfg, sh)
    micro = cfg.training.global_batch_size // (cfg.training.micro_batch_size * cfg.dp)
    layers = cfg.model.num_layers
    out = [(op, layers * micro) for op in lf + lb] + [(op, micro) for op in hf + head_backward(cfg, sh, hf)]
    return cfg, res, out


def kernel_table(row: dict[str, str]) -> list[str]:
    cfg, res, ops = step_ops(row)
    pricer = Pricer(cfg)
    groups: dict[tuple, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])
    for op, n in ops:
        if isinstance(op, Gemm):
            key = ("gemm", f"m={op.m} n={op.n} k={op.k}" + (f" x{op.batch}" if op.batch > 1 else ""))
        elif isinstance(op, Attention):
            key = ("attention " + ("bwd" if op.backward else "fwd"),
                   f"{op.impl} b={op.batch} h={op.heads} s={op.q_len} d={op.head_dim}")
        else:
            continue
        t = pricer.compute.explain(op)[0]
        g = groups[key]
        g[0] += op.flops * n
        g[1] += t * n
        if isinstance(op, Attention):
            g[2] += pricer.compute.explain(dataclasses.replace(op, impl="flash2"))[0] * n
        g[3] += n
    lines = [(f"{row['id']}: measured {float(row['measured_iteration_s']):.3f} s, "
             f"predicted {res.predicted:.4f} s ({100 * (res.predicted / res.measured - 1):+.1f} %)"),
             "| kind | shape | calls a step | TFLOP/s priced | ms a step | as flash2: TFLOP/s, ms |",
             "|---|---|---|---|---|---|"]
    for (kind, shape), (fl, t, t2, n) in sorted(groups.items(), key=lambda kv: -kv[1][1]):
        alt = f"{fl / t2 / 1e12:.0f}, {t2 * 1e3:.1f}" if t2 else ""
        lines.append(f"| {kind} | {shape} | {n:.0f} | {fl / t / 1e12:.0f} | {t * 1e3:.1f} | {alt} |")
    return lines


def _kernel_rows() -> list[dict[str, str]]:
    with open(KERNELS, newline="") as fh:
        return list(csv.DictReader(fh))


def attention_ratio_table() -> list[str]:
    rows = [r for r in _kernel_rows()
            if r["id"].startswith("fa2paper-a100-fwdbwd-hd64") and r["id"].endswith("-fa2")]
    lines = [("| shape (FA2 paper Fig. 4, fwd+bwd, TFLOP/s) | FA2 measured | model flash2 | model cudnn |"
              " cudnn / flash2 (model) | cudnn model / FA2 measured |"), "|---|---|---|---|---|---|"]
    for r in rows:
        rate = {}
        for impl in ("flash2", "cudnn"):  # the row re-priced as each kernel (its note's impl= dropped)
            q = dict(r, implementation=impl, note=r["note"].replace("impl=fa2;", ""))
            rate[impl] = predict_kernel_row(q).predicted
        meas = float(r["measured_value"])
        shape = f"b{r['batch']} s{r['seq_len']} h{r['heads']} d{r['head_dim']}"
        lines.append(f"| {shape} {'causal' if r['causal'] == '1' else 'non-causal'} | {meas:.0f} | "
                     f"{rate['flash2']:.0f} | {rate['cudnn']:.0f} | {rate['cudnn'] / rate['flash2']:.2f} | "
                     f"{rate['cudnn'] / meas:.2f} |")
    lines += ["", "| published (sm80) | shapes | cuDNN / flash | timed |", "|---|---|---|---|"]
    lines += [f"| {s} | {sh} | {r:.3f} | {w} |" for s, sh, r, w in PUBLISHED_CUDNN_OVER_FLASH]
    return lines


def gemm_small_k_table() -> list[str]:
    rows = [r for r in _kernel_rows()
            if r["gpu"] == "a100-sxm-80gb" and r["kind"] == "gemm" and r["k"] and int(r["k"]) <= 2048]
    by_k: dict[int, list[float]] = defaultdict(list)
    for r in rows:
        res = predict_kernel_row(r)
        by_k[int(r["k"])].append(res.predicted / res.measured)  # time (ms) rows: > 1 priced slow
    lines = ["| k | rows | predicted / measured time, mean (min..max) |", "|---|---|---|"]
    for k in sorted(by_k):
        v = by_k[k]
        lines.append(f"| {k} | {len(v)} | {sum(v) / len(v):.3f} ({min(v):.3f}..{max(v):.3f}) |")
    return lines


def main(argv: list[str]) -> int:
    with open(FILE, newline="") as fh:
        rows = {r["id"]: r for r in csv.DictReader(fh)}
    for rid in argv or A100_ROWS:
        print("\n".join(kernel_table(rows[rid])), end="\n\n")
    print("\n".join(attention_ratio_table()), end="\n\n")
    print("\n".join(gemm_small_k_table()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
