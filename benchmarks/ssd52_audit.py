"""Audit of the Mamba-2 conv1d + SSD kernels' pricing against what the kernels move and what
the published measurements say (52nd session, mamba52).

    PYTHONPATH=src python benchmarks/ssd52_audit.py [--file CSV --row ID ...]

Three parts, all from published figures and source, nothing fitted into the simulator:

1. The one published measurement of a Triton SSD kernel (``benchmarks/kernels_ssd.csv``,
   tile-ai/tilelang PR #1131, H800, ``_chunk_scan_fwd``): the bytes the simulator prices the
   kernel by (``workload.mamba_block`` prices it as a grouped GEMM with one problem per
   (sequence, chunk, head), so each head's problem re-reads its group's [C B^T | C] operand)
   against the bytes the kernel moves at least (``moved_bytes``: each tensor read or written
   once, the group operands once per group), and the rate the measurement implies.
2. Each conv1d + SSD kernel of a hybrid row's Mamba layer (forward, and the fused function's
   backward with its recomputation) on one rank: priced time, priced bytes, moved bytes, FLOPs;
   then the layer's kernels under the alternative reading of part 1 (moved bytes at
   ``HBM_EFFICIENCY``, the matmul kernels at the rate part 1 implies), beside the time the
   row's gap would need.
3. Dao-AILab/causal-conv1d PR #88's published ``causal_conv1d_bwd`` times (NVIDIA RTX PRO 6000
   Blackwell Workstation Edition, batch 4, 4128 channels, width 4, bf16, contiguous layout; the
   rows of ``kernels_ssd.csv``): the bandwidth they imply against the card's 1792 GB/s.

Moved bytes follow state-spaces/mamba@e9594ce1 mamba_ssm/ops/triton: ``ssd_combined.py``
``_mamba_chunk_scan_combined_fwd`` (lines 343-395) and ``_mamba_chunk_scan_combined_bwd``
(397-516), ``MambaSplitConv1dScanCombinedFn`` (820-981); states in fp32 where the code keeps
them so (``states_in_fp32=True``; ``_state_passing_fwd`` writes fp32 when no ``out_dtype`` is
given, as in the backward's recomputation; ``_chunk_scan_bwd_dstates`` in the states' dtype),
C B^T in fp32 (``output_dtype=torch.float32``), the split kernels' fp32 partials (``dB``,
``dC``, ``dcb`` over ``nsplits``) and their torch ``sum``.
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
E, F32 = 2, 4  # 16-bit activations, fp32 states / partials


@dataclass(frozen=True)
class SsdShape:
    """One rank's SSD problem: b sequences of L tokens, H heads of width P in G groups, state N,
    chunk Q; conv1d over the d_inner + 2 G N channels."""

    b: int
    L: int
    H: int
    G: int
    P: int
    N: int
    Q: int

    @property
    def T(self) -> int:  # tokens: the paper's symbol
        return self.b * self.L

    @property
    def chunks(self) -> int:
        return self.b * math.ceil(self.L / self.Q)

    @property
    def states(self) -> int:
        """Elements of the chunk states (chunks x H x P x N)."""
        return self.chunks * self.H * self.P * self.N

    @property
    def cb(self) -> int:
        """Elements of C B^T (chunks x G x Q x Q)."""
        return self.chunks * self.G * self.Q * self.Q

    @property
    def conv_channels(self) -> int:
        return self.H * self.P + 2 * self.G * self.N


def nsplits(s: SsdShape, sms: int) -> int:
    """``nheads / nheads_per_program`` of the split backward kernels (ssd_chunk_state.py
    ``_chunk_state_bwd_db``, ssd_chunk_scan.py ``_chunk_scan_bwd_dC`` / ``_chunk_scan_bwd_dcb``:
    ``nheads_per_program = max(min(ceil(batch * nchunks * nheads / sm_count), nheads_ngroups_ratio),
    1)``, ``nsplits = ceil(nheads_ngroups_ratio / nheads_per_program)``)."""
    ratio = s.H // s.G
    per = max(min(math.ceil(s.chunks * s.H / sms), ratio), 1)
    return math.ceil(ratio / per)


def moved_bytes(s: SsdShape, sms: int) -> dict[str, float]:
    """Bytes each kernel reads and writes at least (every tensor once), by the workload's op
    names (``workload.mamba_block``): forward, then the backward's."""
    T, H, P, N, G = s.T, s.H, s.P, s.N, s.G
    x = T * H * P * E  # x, z, out, dout, dx: one each
    bc = T * G * N * E  # B or C
    dts = T * H * F32  # dt or dA_cumsum (fp32, chunked)
    k = nsplits(s, sms)
    conv = 2 * T * s.conv_channels * E
    fwd = {
        "conv1d": conv,
        "chunk_cumsum": T * H * E + 2 * dts,
        "chunk_state": bc + x + 2 * dts + s.states * F32,
        "state_passing": s.states * (F32 + E),
        "bmm_chunk": 2 * bc + s.cb * F32,
        # CB, x, C, the states (16-bit), dt, dA, z, D; writes out and the ungated out_x
        "chunk_scan": s.cb * F32 + x + bc + s.states * E + 2 * dts + x + 2 * x,
    }
    bwd = {
        "conv1d.recompute": conv,
        "dt_clone": 2 * T * H * E,
        "chunk_cumsum.recompute": fwd["chunk_cumsum"],
        "bmm_chunk.recompute": fwd["bmm_chunk"],
        "chunk_state.recompute": fwd["chunk_state"],
        "state_passing.recompute": s.states * 2 * F32,  # fp32 out: no out_dtype given
        "chunk_scan_bwd_dz": 6 * x,
        "chunk_scan_bwd_dstates": bc + x + dts + s.states * F32,
        "state_passing_bwd": s.states * 2 * (F32 + E),
        "chunk_scan_chunk_state_bwd_dx": x + bc + s.cb * F32 + x + s.states * E + 2 * dts + x + dts,
        "chunk_state_bwd_db": x + s.states * E + bc + 2 * dts + T * k * G * N * F32 + dts,
        "chunk_scan_bwd_dc": s.states * E + x + dts + bc + T * k * G * N * F32 + dts,
        "chunk_scan_bwd_dcb": 2 * x + 2 * dts + k * s.cb * F32,
        # dB, dC and dcb: their nsplits fp32 partials summed into fp32
        "split_sums": 2 * (T * k * G * N * F32 + T * G * N * F32) + (k + 1) * s.cb * F32,
        # 3 zeroed (token, head) fp32 buffers, a cumsum of one, ddA's partial sum (Q / 32 rows)
        "workspace": T * H * F32 * (3 + 2 + math.ceil(s.Q / 32) + 1),
        "bmm_chunk_bwd_db": bc + s.cb * F32 + T * G * N * F32 + bc,
        "bmm_chunk_bwd_dc": bc + s.cb * F32 + T * G * N * F32 + bc,
        "ddA_reverse_cumsum": 5 * 2 * dts,
        "chunk_scan_bwd_ddacs": 2 * x + 2 * dts + s.cb * F32 + dts,
        "chunk_cumsum_bwd": 2 * dts + 2 * T * H * E,
        "conv1d.bwd": 3 * T * s.conv_channels * E,
    }
    return {**{f"ssd.{n}": v for n, v in fwd.items()}, **{f"ssd.{n}": v for n, v in bwd.items()}}


# -- part 1: the published chunk-scan rows -----------------------------------------------------

TILELANG = SsdShape(b=8, L=0, H=80, G=1, P=64, N=128, Q=256)
"""tile-ai/tilelang benchmark/mamba2/README.md: batch 8, 80 heads, 1 group, chunk 256, head dim
64, state 128 (L per row)."""


def tilelang_chunk_scan_bytes(s: SsdShape) -> float:
    """Bytes the benchmarked Triton call moves at least: tile-ai/tilelang@4f3523dc
    benchmark/mamba2/benchmark_mamba_chunk_scan.py ``chunk_scan_triton`` runs
    ``_chunk_scan_fwd(cb, x, dt, dA_cumsum, C, states, D)`` on fp16 tensors (line 73; the
    inputs all ``dtype`` fp16, lines 205-219): no z, so one output; C B^T, dt and dA in fp16."""
    x = s.T * s.H * s.P * E
    return s.cb * E + x + s.T * s.G * s.N * E + s.states * E + 2 * s.T * s.H * E + x


def chunk_scan_rows(path: Path = HERE / "kernels_ssd.csv") -> list[dict[str, float]]:
    """Per published row: measured seconds, the FLOPs and bytes the simulator prices, the bytes
    the kernel moves at least (``chunk_scan`` of ``moved_bytes``), what both imply."""
    from trainsim.catalog import gpu as catalog_gpu
    from trainsim.compute.roofline import HBM_EFFICIENCY, RooflineModel
    from trainsim.workload.ops import Gemm

    out = []
    with open(path) as f:
        for row in csv.DictReader(f):
            if row["implementation"] != "triton":
                continue
            g = catalog_gpu(row["gpu"])
            groups, m = int(row["groups"]), int(row["m"])
            seq = groups // (TILELANG.b * TILELANG.H) * TILELANG.Q  # problems are (b, chunk, h)
            s = SsdShape(TILELANG.b, seq, TILELANG.H, TILELANG.G, TILELANG.P, TILELANG.N,
                         TILELANG.Q)
            op = Gemm("x", m=m // groups, n=int(row["n"]), k=int(row["k"]), batch=groups,
                      grouped="triton")
            t = float(row["measured_value"]) * 1e-3
            moved = tilelang_chunk_scan_bytes(s)
            out.append({"seq": seq, "measured_s": t, "priced_s": RooflineModel(g).time(op),
                        "priced_bytes": op.bytes, "moved_bytes": moved, "flops": op.flops,
                        "rate": op.flops / t, "hbm_share": moved / t / g.hbm_bw_Bps,
                        "peak_share": op.flops / t / (g.gemm_ceiling("bf16")),
                        "moved_s": moved / (g.hbm_bw_Bps * HBM_EFFICIENCY)})
    return out


# -- part 2: a hybrid row's Mamba layer ------------------------------------------------------------

def layer_audit(path: str, row_id: str | None) -> None:
    from trainsim.catalog import gpu as catalog_gpu
    from trainsim.compute.roofline import HBM_EFFICIENCY, LAUNCH_S, kernel_launches
    from trainsim.config.hybrid import layer_kind, mamba_heads
    from trainsim.model.mamba import inner
    from trainsim.pricing import Pricer
    from trainsim.validate.training import predict_training_row, row_config
    from trainsim.workload.layers import backward_of, layer_forward
    from trainsim.workload.mamba_block import SSD
    from trainsim.workload.ops import Gemm
    from trainsim.workload.shard import shard_of

    with open(path) as f:
        rows = list(csv.DictReader(f))
    row = next(r for r in rows if row_id in (None, r["id"]))
    res = predict_training_row(row)
    cfg = row_config(row, res.chosen)
    m, sh, pricer = cfg.model, shard_of(cfg), Pricer(cfg)
    g = catalog_gpu(row["gpu"])
    t = sh.tp
    s = SsdShape(sh.batch, sh.q_len, mamba_heads(m) // t, m.mamba_num_groups // t,
                 m.mamba_head_dim, m.mamba_state_dim, min(m.mamba_chunk_size, sh.q_len))
    assert s.H * s.P == inner(m) // t
    moved = moved_bytes(s, g.num_sms)
    # the published chunk scan's share of the bf16 ceiling (median of the rows), on this GPU
    rows1 = chunk_scan_rows()
    rate = statistics.median(r["peak_share"] for r in rows1) * g.gemm_ceiling("bf16")
    # ... or its H800 rate per SM-clock, on this GPU's SMs and clock (a latency-bound kernel)
    h800 = catalog_gpu("h800-sxm-80gb")
    sm_rate = (statistics.median(r["rate"] for r in rows1) * g.num_sms * (g.max_sm_clock_mhz or 0)
               / (h800.num_sms * (h800.max_sm_clock_mhz or 1)))
    lf = layer_forward(cfg, sh, "M")
    print(f"\n{row['id']} ({row['gpu']}): predicted {res.predicted:.3f} s, measured "
          f"{res.measured:.3f} s; rank shape b {s.b} L {s.L} H {s.H} G {s.G} P {s.P} N {s.N} "
          f"Q {s.Q}, nsplits {nsplits(s, g.num_sms)}")
    print(f"{'kernel':34s} {'priced us':>9s} {'priced MB':>9s} {'moved MB':>9s} {'GFLOP':>7s} "
          f"{'alt us':>7s} {'per-SM us':>9s}")
    total = {"priced": 0.0, "alt": 0.0, "sm": 0.0}
    seen: set[str] = set()
    for ops in (lf, backward_of(lf, sh)):
        priced = pricer.price(ops)
        by_name = {op.name: op for op in ops}
        for _, sec, name in priced.segments:
            if not name.startswith(SSD):
                continue
            op = by_name.get(name)
            mv = moved[name]
            seen.add(name)
            flops = op.flops if isinstance(op, Gemm) else 0.0
            mem, launch = mv / (g.hbm_bw_Bps * HBM_EFFICIENCY), kernel_launches(op) * LAUNCH_S
            alt = max(mem, flops / rate) + launch
            per_sm = max(mem, flops / sm_rate) + launch if sm_rate else float("nan")
            total["priced"] += sec
            total["alt"] += alt
            total["sm"] += per_sm
            print(f"{name:34s} {sec * 1e6:9.1f} {getattr(op, 'bytes', 0.0) / 1e6:9.1f} "
                  f"{mv / 1e6:9.1f} {flops / 1e9:7.2f} {alt * 1e6:7.1f} {per_sm * 1e6:9.1f}")
    missing = sorted(set(moved) - seen)
    assert not missing, f"kernels the audit counts and the workload has no op for: {missing}"
    layers = sum(layer_kind(m, i) == "M" for i in range(m.num_layers))
    per_iter = layers * cfg.num_microbatches * cfg.parallel.vpp / cfg.parallel.pp
    gap = res.measured - res.predicted
    print(f"conv1d + SSD per layer and micro-batch: priced {total['priced'] * 1e3:.3f} ms; "
          f"alt (moved bytes at {HBM_EFFICIENCY} of HBM, matmuls at the published chunk scan's "
          f"share of the bf16 ceiling, {rate / 1e12:.0f} TFLOP/s here, launches as priced) "
          f"{total['alt'] * 1e3:.3f} ms; per-SM (its H800 rate scaled by SMs x clock, "
          f"{sm_rate / 1e12:.0f} TFLOP/s here) {total['sm'] * 1e3:.3f} ms; the row's gap needs "
          f"{total['priced'] * 1e3 + gap / per_iter * 1e3:.3f} ms")


# -- part 3: causal-conv1d PR #88 ----------------------------------------------------------------

RTX_PRO_6000_BW = 1792e9
"""GDDR7 bandwidth of the RTX PRO 6000 Blackwell (512-bit, 28 Gb/s: 1792 GB/s; the catalog's
``rtx-pro-6000-blackwell``)."""


def conv1d_rows(path: Path = HERE / "kernels_ssd.csv") -> list[tuple[int, float, float]]:
    """(seqlen, bytes, share of the card's bandwidth) of each causal-conv1d PR #88 row of
    ``kernels_ssd.csv`` (``kernels_ssd_rows.conv1d_rows``: x and dout read, dx written)."""
    out = []
    with open(path) as f:
        for row in csv.DictReader(f):
            if row["implementation"] == "causal_conv1d":
                nbytes, t = float(row["bytes"]), float(row["measured_value"]) * 1e-3
                out.append((int(row["id"].rsplit("-s", 1)[1]), nbytes, nbytes / t / RTX_PRO_6000_BW))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", action="append")
    ap.add_argument("--row", action="append")
    a = ap.parse_args()
    print("1. tile-ai/tilelang PR #1131, H800, Triton _chunk_scan_fwd (benchmarks/kernels_ssd.csv)")
    print(f"{'seq':>6s} {'meas ms':>8s} {'priced ms':>9s} {'priced GB':>9s} {'moved GB':>8s} "
          f"{'TFLOP/s':>7s} {'of bf16':>7s} {'of HBM':>6s} {'moved-bytes ms':>14s}")
    for r in chunk_scan_rows():
        print(f"{r['seq']:6d} {r['measured_s'] * 1e3:8.4f} {r['priced_s'] * 1e3:9.4f} "
              f"{r['priced_bytes'] / 1e9:9.3f} {r['moved_bytes'] / 1e9:8.3f} "
              f"{r['rate'] / 1e12:7.1f} {r['peak_share']:7.3f} {r['hbm_share']:6.3f} "
              f"{r['moved_s'] * 1e3:14.4f}")
    files = a.file or [str(HERE / "training_nemotronh.csv"), str(HERE / "training_nemotron3.csv"),
                       str(HERE / "training_nemotron3.csv")]
    rows = a.row or [None, "bridgearch2604p1-nemotron-3-nano-30b-a3b-h100-16-fp8",
                     "bridgearch2604p1-nemotron-3-nano-30b-a3b-b200-8-mxfp8"]
    print("\n2. A hybrid row's Mamba layer, one rank: each conv1d + SSD kernel")
    for path, rid in zip(files, rows, strict=True):
        layer_audit(path, rid)
    print("\n3. Dao-AILab/causal-conv1d PR #88, RTX PRO 6000 Blackwell, causal_conv1d_bwd")
    for L, nbytes, share in conv1d_rows():
        print(f"   seqlen {L:6d}: {nbytes / 1e6:7.1f} MB, {share:.2f} of 1792 GB/s")


if __name__ == "__main__":
    main()
