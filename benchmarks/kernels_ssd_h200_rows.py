"""Kernel rows of mamba_ssm's Mamba-2 chunked scan forward (``mamba_chunk_scan_combined``, its
five Triton kernels) timed on an H200 by tile-ai/TileOPs (56th session, nemotron56).

    python benchmarks/kernels_ssd_h200_rows.py > benchmarks/kernels_ssd_h200.csv
    PYTHONPATH=src python -m trainsim validate benchmarks/kernels_ssd_h200.csv

Sources (public commits of github.com/tile-ai/TileOPs; the PR text is the squash commit's message):

- c9f559f2 (PR #1557, 2026-06-09), message lines 26-51: "Benchmark results (H200 GPU1, 1830 MHz,
  bfloat16, chunk_size=256)", the ``mamba ms`` column of 20 rows (5 model sizes x 4 workloads).
  Shapes: ``workloads/mamba2_e2e.py`` at c9f559f2, lines 14-21 (heads, head dim 64, state 128,
  1 group per model label) and 52-58 (batch, seqlen per workload); dt in fp32 with a bias and
  softplus (lines 132-137). The baseline is ``mamba_chunk_scan_combined(x, dt, A, B, C,
  chunk_size, dt_bias=..., dt_softplus=True)`` (``benchmarks/ops/bench_mamba2_e2e.py``): no z,
  no D, no conv1d. Harness ``benchmarks/benchmark_base.py`` ``bench_kernel`` (lines 125-254):
  the L2 flushed before every call, the kernels' own CUPTI durations summed (Kineto events, the
  flush's fill kernel left out: lines 87-101), 50 calls x 3 trials, the median trial; SM clock
  locked at 1830 MHz (the card's boost is 1980).
- 01d0496d (PR #1675, 2026-07-14), message lines 64-74: "Benchmarked on NVIDIA H200 with batch=8,
  seqlen=2048, dtype=bfloat16", the ``mamba_ssm (ms)`` column, 5 rows at the same model shapes
  (``workloads/mamba2_e2e.py`` at 01d0496d lines 14-21 unchanged); the harness of that commit
  sums the kernels inside each timed call's profiler window (``benchmark_base.py`` lines 94-133),
  the clock not stated. An independent measurement of the ``serving`` shapes a month later.

Row columns for ``kind=ssd_fwd`` (``validate.kernels``): batch, seq_len, heads, kv_heads (the B/C
groups), head_dim, m (chunk), n (state).
"""

from __future__ import annotations

import csv
import sys

MODELS = {"130m": 24, "370m": 48, "780m": 64, "1.3b": 80, "2.7b": 128}
"""Model label -> heads (TileOPs workloads/mamba2_e2e.py lines 14-21 at c9f559f2 and 01d0496d);
each has head dim 64, state 128, 1 group."""
WORKLOADS = {"latency": (1, 2048), "serving": (8, 2048), "throughput": (32, 2048),
             "long-ctx": (4, 32768)}
"""Workload label -> (batch, seqlen): workloads/mamba2_e2e.py lines 52-58 at c9f559f2."""
HEAD_DIM, STATE, GROUPS, CHUNK = 64, 128, 1, 256

PR1557_MS = {
    "130m": (0.0426, 0.2267, 1.4055, 3.4685),
    "370m": (0.0640, 0.4125, 3.3191, 7.1387),
    "780m": (0.0816, 0.6468, 4.4721, 9.9299),
    "1.3b": (0.0966, 0.9137, 5.7969, 12.2623),
    "2.7b": (0.1476, 1.6876, 9.6147, 19.7326),
}
"""The ``mamba ms`` column of c9f559f2's message, per model in WORKLOADS order."""
PR1675_MS = {"130m": 0.2567, "370m": 0.4854, "780m": 0.6267, "1.3b": 0.7734, "2.7b": 1.2114}
"""The ``mamba_ssm (ms)`` column of 01d0496d's message (batch 8, seqlen 2048)."""

SRC_1557 = ("tile-ai/TileOPs c9f559f2 (PR #1557, 2026-06-09) message 'Benchmark results (H200 "
            "GPU1, 1830 MHz, bfloat16, chunk_size=256)', column 'mamba ms'; shapes "
            "workloads/mamba2_e2e.py lines 14-21 and 52-58; benchmarks/benchmark_base.py "
            "bench_kernel: L2 flushed before each call, CUPTI kernel durations summed")
SRC_1675 = ("tile-ai/TileOPs 01d0496d (PR #1675, 2026-07-14) message 'Benchmarked on NVIDIA H200 "
            "with batch=8, seqlen=2048, dtype=bfloat16', column 'mamba_ssm (ms)'; shapes "
            "workloads/mamba2_e2e.py lines 14-21; benchmarks/benchmark_base.py bench_kernel: L2 "
            "flushed before each call, CUPTI kernel durations in the call's window summed")
COLUMNS = ["id", "source", "gpu", "kind", "implementation", "dtype", "m", "n", "k", "groups",
           "batch", "seq_len", "heads", "kv_heads", "head_dim", "causal", "tokens", "hidden",
           "ffn", "experts", "top_k", "bytes", "measured_value", "measured_unit", "note"]


def rows() -> list[dict[str, str]]:
    out = []

    def row(rid: str, source: str, heads: int, batch: int, seq: int, ms: float, note: str) -> None:
        out.append({c: "" for c in COLUMNS} | {
            "id": rid, "source": source, "gpu": "h200-sxm-141gb", "kind": "ssd_fwd",
            "implementation": "triton", "dtype": "bf16", "m": str(CHUNK), "n": str(STATE),
            "batch": str(batch), "seq_len": str(seq), "heads": str(heads),
            "kv_heads": str(GROUPS), "head_dim": str(HEAD_DIM), "measured_value": f"{ms:.4f}",
            "measured_unit": "ms",
            "note": (f"mamba_ssm mamba_chunk_scan_combined forward (chunk_cumsum, chunk_state, "
                     f"state_passing, bmm_chunk, chunk_scan; no z, no D, no conv1d), dt fp32 "
                     f"with bias and softplus; batch {batch}, seqlen {seq}, {heads} heads of "
                     f"64, 1 group, state 128, chunk 256; {note}")})

    for model, heads in MODELS.items():
        for (label, (b, s)), ms in zip(WORKLOADS.items(), PR1557_MS[model], strict=True):
            row(f"tileops1557-h200-ssd-fwd-{model}-{label}", SRC_1557, heads, b, s, ms,
                "SM clock locked at 1830 MHz")
    for model, heads in MODELS.items():
        b, s = WORKLOADS["serving"]
        row(f"tileops1675-h200-ssd-fwd-{model}-serving", SRC_1675, heads, b, s, PR1675_MS[model],
            "clock not stated")
    return out


def main() -> None:
    w = csv.DictWriter(sys.stdout, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerows(rows())


if __name__ == "__main__":
    main()
