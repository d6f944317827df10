"""Write benchmarks/kernels_ssd.csv: published times of mamba_ssm's Triton SSD kernels.

Source: tile-ai/tilelang@4f3523dc (2025-10-22, PR #1131) benchmark/mamba2/mamba_benchmark_result.png,
"Comparison For Mamba-2-chunk-scan (NVIDIA H800)": TFLOP/s of TileLang's chunk-scan kernel, of
mamba_ssm 2.2.6.post3's Triton ``_chunk_scan_fwd`` (the kernel Megatron-core's Mamba layers run in
``mamba_split_conv1d_scan_combined``) and of Helion's, Triton 3.5.0, at the README's six configs
(benchmark/mamba2/README.md: batch 8, 80 heads, 1 group, chunk 256, head dim 64, state 128, fp16,
seq_len 1024-32768 = CC0-CC5). The figure gives no numbers, so the bars are read off the image:
``BAR_TOP_Y`` is the first row of each bar's colour (``--image`` measures them again), the axis is
the two grid lines (150 TFLOP/s at y 154.5, 100 at y 294.5). The reading is checked on the
TileLang bars, whose values the README prints: ``TILELANG_README`` against ``reading(...)``.

Each TFLOP/s figure is turned into milliseconds with the benchmark's own FLOP count
(benchmark_mamba_chunk_scan.py ``total_flops``: 2 b L Q H P / 2 + 2 b L H P N) and written as a
``gemm_grouped`` row the way ``workload.mamba_block`` prices the kernel: one problem per
(sequence, chunk, head), [C B^T * decay | C] (Q x (Q + N)) by [x ; states] ((Q + N) x P).

A second source gives the conv1d the fused function runs before the scan: Dao-AILab/causal-conv1d
PR #88 (paul-gibbons, merged 2025-12-12), "Determinism Benchmarks", prints the default
(non-deterministic) ``causal_conv1d_bwd`` time on an NVIDIA RTX PRO 6000 Blackwell Workstation
Edition at batch 4, dim 4128, width 4, bf16, bias, silu, contiguous layout, seqlen 128-16384
(``CONV1D_PR88``). Each is a ``memory_bound`` row of the bytes the backward must move: x and dout
read, dx written (the weight and bias gradients are 4128 x 5 values). The rows at seqlen <= 1024
are left out: 1024 moves 101 MB in 27 us, 3.7 TB/s against the card's 1.79, so that harness
reuses its tensors from the 128 MB L2; 2048 (203 MB) is marked ``L2-resident`` (1.69 TB/s: part
of it served from L2, the validator leaves it out of the errors); 4096 and 16384 are HBM figures.

Run: ``python benchmarks/kernels_ssd_rows.py > benchmarks/kernels_ssd.csv``
(``--image PNG`` re-reads the bar tops from the figure, e.g. one written by
``git -C tilelang show 4f3523dc:benchmark/mamba2/mamba_benchmark_result.png``).
"""

from __future__ import annotations

import argparse
import csv
import sys

SEQ_LENS = (1024, 2048, 4096, 8192, 16384, 32768)
BATCH, HEADS, GROUPS, CHUNK, HEAD_DIM, STATE = 8, 80, 1, 256, 64, 128
GRID_Y = {150.0: 154.5, 100.0: 294.5}
"""TFLOP/s -> pixel row of the figure's two upper grid lines (each two pixels thick)."""
BAR_TOP_Y = {"tilelang": (220, 210, 202, 198, 194, 196),
             "triton": (274, 266, 278, 320, 320, 322)}
"""First pixel row of each bar (CC0..CC5), as ``bar_tops`` measures it on the figure."""
TILELANG_README = (126.477, 130.195, 133.054, 134.362, 135.711, 135.379)
"""README.md's 'Throughput (TFLOPs)' column: the check on the reading."""
COLOURS = {"tilelang": lambda r, g, b: b > 200 and r < 100,
           "triton": lambda r, g, b: r > 200 and g < 90 and b < 80}
SOURCE = ("tile-ai/tilelang benchmark/mamba2/mamba_benchmark_result.png @4f3523dc (2025-10-22, "
          "PR #1131) 'Comparison For Mamba-2-chunk-scan (NVIDIA H800)' Triton bars, CC0-CC5 = "
          "README.md seq_len 1024-32768; Triton 3.5.0, mamba-ssm 2.2.6.post3 _chunk_scan_fwd, "
          "fp16, tilelang.profiler do_bench")
COLUMNS = ["id", "source", "gpu", "kind", "implementation", "dtype", "m", "n", "k", "groups",
           "batch", "seq_len", "heads", "kv_heads", "head_dim", "causal", "tokens", "hidden",
           "ffn", "experts", "top_k", "bytes", "measured_value", "measured_unit", "note"]


def reading(y: float) -> float:
    """TFLOP/s at pixel row ``y`` (linear between the grid lines)."""
    (v1, y1), (v2, y2) = sorted(GRID_Y.items())
    return v1 + (y1 - y) * (v2 - v1) / (y1 - y2)


def flops(seq: int) -> float:
    """The benchmark's FLOPs: the causal intra-chunk product halved, plus C by the states."""
    return (2 * BATCH * seq * CHUNK * HEADS * HEAD_DIM * 0.5
            + 2 * BATCH * seq * HEADS * HEAD_DIM * STATE)


def bar_tops(path: str) -> dict[str, list[int]]:
    """First row of each bar of each colour, left to right (needs Pillow)."""
    from PIL import Image

    img = Image.open(path).convert("RGB")
    px, (w, _) = img.load(), img.size
    out: dict[str, list[int]] = {}
    for name, is_colour in COLOURS.items():
        tops: dict[int, int] = {}
        for x in range(150, w - 20):
            ys = [y for y in range(130, 600) if is_colour(*px[x, y])]
            if len(ys) > 20:
                tops[x] = min(ys)
        bars: list[list[int]] = []
        for x in sorted(tops):
            if not bars or x - 1 not in tops:
                bars.append([])
            bars[-1].append(tops[x])
        out[name] = [min(b) for b in bars]
    return out


CONV1D_PR88 = {2048: 0.120, 4096: 0.275, 16384: 1.085}
"""Dao-AILab/causal-conv1d PR #88's contiguous-layout table, column 'ms' (seqlen -> ms)."""
CONV1D_BATCH, CONV1D_DIM = 4, 4128
CONV1D_SOURCE = ("Dao-AILab/causal-conv1d PR #88 (2025-12-12, merged) 'Determinism Benchmarks', "
                 "Contiguous Layout table, column ms (default, non-deterministic backward); GPU "
                 "NVIDIA RTX PRO 6000 Blackwell Workstation Edition; python "
                 "tests/benchmark_determinism_kernels.py --seqlen L")


def conv1d_rows() -> list[dict[str, str]]:
    out = []
    for seq, ms in CONV1D_PR88.items():
        nbytes = 3 * CONV1D_BATCH * CONV1D_DIM * seq * 2
        row = dict.fromkeys(COLUMNS, "")
        l2 = "; L2-resident: 203 MB against a 128 MB L2, faster than HBM" if seq == 2048 else ""
        row.update(
            id=f"causal-conv1d-pr88-rtxpro6000-bwd-s{seq}", source=CONV1D_SOURCE,
            gpu="rtx-pro-6000-blackwell", kind="memory_bound", implementation="causal_conv1d",
            dtype="bf16", bytes=str(nbytes), measured_value=f"{ms:.3f}", measured_unit="ms",
            note=(f"causal_conv1d_bwd (Dao-AILab causal-conv1d CUDA kernel, the conv1d of "
                  f"mamba_split_conv1d_scan_combined): batch {CONV1D_BATCH}, dim {CONV1D_DIM}, "
                  f"width 4, seqlen {seq}, bias, silu; bytes = x and dout read, dx written, "
                  f"3 x {CONV1D_BATCH} x {CONV1D_DIM} x {seq} x 2{l2}"))
        out.append(row)
    return out


def rows(tops: dict[str, tuple[int, ...]] | None = None) -> list[dict[str, str]]:
    tops = tops or BAR_TOP_Y
    out = []
    for seq, y in zip(SEQ_LENS, tops["triton"], strict=True):
        rate = round(reading(y), 1)
        problems = BATCH * (seq // CHUNK) * HEADS
        row = dict.fromkeys(COLUMNS, "")
        row.update(
            id=f"tilelang-h800-triton-ssd-chunk-scan-fwd-s{seq}", source=SOURCE,
            gpu="h800-sxm-80gb", kind="gemm_grouped", implementation="triton", dtype="fp16",
            m=str(problems * CHUNK), n=str(HEAD_DIM), k=str(CHUNK + STATE), groups=str(problems),
            measured_value=f"{flops(seq) / (rate * 1e12) * 1e3:.4f}", measured_unit="ms",
            note=(f"mamba_ssm _chunk_scan_fwd (the SSD chunk-scan kernel): batch {BATCH}, {HEADS} "
                  f"heads, {GROUPS} group, chunk {CHUNK}, head dim {HEAD_DIM}, state {STATE}, "
                  f"seq_len {seq}; m = the rows of all {problems} (sequence, chunk, head) "
                  f"problems, k = chunk + state ([C B^T * decay | C] by [x ; states]); {rate} "
                  f"TFLOP/s read off the bar's top pixel row {y}, in ms by the benchmark's FLOP "
                  f"count 2 b L Q H P / 2 + 2 b L H P N = {flops(seq) / 1e9:.2f} GFLOP"))
        out.append(row)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--image", help="re-read the bar tops from this PNG/JPEG and print them")
    args = ap.parse_args()
    if args.image:
        print(bar_tops(args.image))
        return
    w = csv.DictWriter(sys.stdout, COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerows(rows() + conv1d_rows())


if __name__ == "__main__":
    main()
