"""Three attention misses taken apart against their kernels' sources (issue 17 item 1):
PyTorch SDPA's flash backward at short sequences, FlashAttention-2 at head dim 256, and
whether attention dropout slows a query row's fixed work.

    PYTHONPATH=src python benchmarks/attention_gaps.py            # all three tables
    PYTHONPATH=src python benchmarks/attention_gaps.py --backward # one of them
    PYTHONPATH=src python benchmarks/attention_gaps.py --hd256
    PYTHONPATH=src python benchmarks/attention_gaps.py --dropout

1. ``--backward``: each measured file's causal backward rows up to 8k tokens (the H100 file,
   ``kernels_h100_measured.csv``, fitted; the H200 file, never fitted; both timed by
   ``measure_kernels.py``: 16k tokens a call, ``(fwd + bwd) - fwd``), the time the model does
   not price (measured - priced) per head layout, and a least-squares split of it into a fixed
   cost per call and a cost per query element, beside what the backward's memory-bound side
   kernels would take (``SIDE_BYTES_PER_ELEMENT`` at HBM bandwidth) and the main kernel's CTA
   waves (one CTA per key block, batch and query head: the grid ``(num_n_block, b, h)`` of
   ``run_flash_bwd_seqk_parallel``, pytorch/pytorch@08e43ed5
   aten/src/ATen/native/transformers/cuda/flash_attn/flash_bwd_launch_template.h, as in
   Dao-AILab/flash-attention@0251105a csrc/flash_attn/src/flash_bwd_launch_template.h). cuDNN's
   backward, timed by the same harness in the same process, is the control: a cost the harness
   adds to every backward would show in both.
2. ``--hd256``: FA2's forward at head dim 256 against 64 and 128: shared-memory bytes each warp
   reads per ``m16n8k16`` MMA for the tile its launch template picks (``fa2_tile``,
   ``fa2_fwd_warps``; each warp owns ``block_m / warps`` query rows and reads the whole K and
   V tile and its own Q rows from shared memory every key block: kernel_traits.h L74-L77;
   flash_fwd_kernel.h L326 ``gemm<A_in_regs=Is_Q_in_regs>``, false in every traits the
   template launches, so utils.h L150-L155 copies Q from shared memory each k step; L374
   ``gemm_rs``, P from registers and V from shared memory), and the measured rate at
   256 over 128 (the FA3 paper's FA2 2.5.8 bars on H100, the H200 device checks) against the
   priced one under three forms: as shipped, the main loop bounded by shared memory
   (``max``) and shared-memory time added to it (``add``, the main loop's rate rescaled so
   head dim 128 keeps its shipped time).
3. ``--dropout``: FlashAttention-4's measured dropout cost (Dao-AILab/flash-attention PR #2597,
   GB200, bf16, 16 heads, ~32k tokens a call, p 0.125: "fwd ~ 75-85%, bwd ~ 60-70% of no-drop
   TFLOPS", "roughly constant across seqlen") against the priced no-dropout / dropout rate as
   shipped (dropout slows every matmul of the kernel, ``ATTN_DROPOUT_FWD``/``_BWD``) and with
   the 36th session's proposed fix (benchmarks/candidates/attention_bwd_side_kernels.patch:
   dropout slows the tiles' scores only, not each query row's fixed work
   ``ATTN_ROW_OVERHEAD_KEYS``), over sequence lengths 512-32k.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import fit_kernels
from kernel_rows import load

from trainsim.catalog import gpu as catalog_gpu
from trainsim.compute import attention, roofline
from trainsim.workload.ops import Attention

H100_FILE = fit_kernels.BUNDLED_DIR / "kernels_h100_measured.csv"
H200_FILE = HERE / "kernels_h200_measured.csv"
PUBLISHED = fit_kernels.BUNDLED_DIR / "kernels_published.csv"
DEVICE_CHECKS = HERE / "h200_2026-11-27" / "device_checks_kernels.csv"
MAX_SEQ = 8192
"""Sequence lengths up to which a backward row's gap is split (``backward_gaps``): beyond, the
model's long-sequence rate error (the shipped fit prices 16-32k 3-9 % slow) dominates it."""
SIDE_BYTES_PER_ELEMENT = 14
"""HBM bytes per query element of the backward's side kernels: ``flash_bwd_dot_do_o_kernel``
reads O and dO (2 + 2) and clears the fp32 dQ accumulator (4); ``flash_bwd_convert_dq_kernel``
reads it (4) and writes dQ (2) (flash_bwd_launch_template.h L60, L88-L93; the 36th session's
``backward_side_bytes``). 4 bytes per row (rowsum(dO * O)) are left out."""


def _gpu_file_rows(path: Path, kind: str, impl: str) -> list:
    return [r for r in load([path]) if r.kind == kind and fit_kernels.attention_impl(r) == impl]


def backward_gaps(path: Path, impl: str) -> tuple[list[tuple[str, int, float, float, float]],
                                                   float, float, float]:
    """(layout 'hd/heads/kv_heads', rows, mean gap us, mean side-kernel us, mean CTA waves) per
    head layout of ``path``'s causal ``impl`` backward rows up to ``MAX_SEQ`` tokens (gap =
    measured - priced time), then the least-squares split of the gap into a fixed cost per call
    (us) and a cost per million query elements (batch x heads x queries x head dim, us), and
    what the side kernels' HBM bytes (``SIDE_BYTES_PER_ELEMENT``) take per million elements."""
    rows = [r for r in _gpu_file_rows(path, "attention_bwd", impl)
            if r.ops[-1].causal and r.ops[-1].q_len <= MAX_SEQ]
    priced = fit_kernels.predict(rows)
    groups: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    xs, ys = [], []
    bw = 0.0
    for r, p in zip(rows, priced):
        op = r.ops[-1]
        gpu = catalog_gpu(r.gpu)
        bw = gpu.hbm_bw_Bps * roofline.HBM_EFFICIENCY
        elements = op.batch * op.heads * op.q_len * op.head_dim
        _, block_n = attention.attention_tile(op.impl, op.head_dim, True, True,
                                              arch=gpu.sm_arch)
        waves = math.ceil(op.kv_len / block_n) * op.batch * op.heads / gpu.num_sms
        gap = r.measured_s - float(p)
        groups[f"{op.head_dim}/{op.heads}/{op.kv_heads}"].append(
            (gap, elements * SIDE_BYTES_PER_ELEMENT / bw, waves))
        xs.append((1.0, elements / 1e6))
        ys.append(gap)
    (fixed, per_melement), *_ = np.linalg.lstsq(np.array(xs), np.array(ys), rcond=None)
    table = [(k, len(v), 1e6 * float(np.mean([g for g, _, _ in v])),
              1e6 * float(np.mean([s for _, s, _ in v])), float(np.mean([w for _, _, w in v])))
             for k, v in sorted(groups.items(), key=lambda kv: kv[1][0][2])]
    return (table, 1e6 * float(fixed), 1e6 * float(per_melement),
            1e6 * 1e6 * SIDE_BYTES_PER_ELEMENT / bw)


SMEM_BYTES_PER_SM_CLOCK = 128
"""Shared-memory bytes an SM delivers a clock on Ampere and Hopper (32 banks x 4 bytes: CUDA C++
Programming Guide, "Shared Memory", compute capabilities 8.x and 9.0)."""
MMA_SYNC_FLOPS_PER_SM_CLOCK = 2048
"""Dense 16-bit FLOPs an SM's ``mma.sync`` issues a clock on Ampere and Hopper alike
(``attention.TENSOR_FLOPS_PER_SM_CLOCK``'s note: A100 312 TFLOP/s = 108 x 2048 x 1.41 GHz)."""


def fa2_fwd_warps(head_dim: int, arch: int) -> int:
    """Warps of FlashAttention-2's forward CTA without dropout (``Flash_fwd_kernel_traits``'
    kNWarps), Dao-AILab/flash-attention@0251105a csrc/flash_attn/src/
    flash_fwd_launch_template.h: 8 at head dim 192 (L286) and at 256 where the 128 x 64 tile
    runs (A100-like shared memory, L316), else 4 (L198, L210, L231-L236, L257-L262, L318)."""
    hd = next((d for d in (32, 64, 96, 128, 192) if head_dim <= d), 256)
    if hd == 192:
        return 8
    if hd == 256:
        return 8 if attention.fa2_tile(256, False, False, arch=arch)[0] == 128 else 4
    return 4


def fa2_fwd_smem_bytes_per_mma(head_dim: int, arch: int) -> float:
    """Shared-memory bytes a FlashAttention-2 forward warp reads per ``m16n8k16`` MMA (4,096
    FLOPs) on a GPU of compute capability ``arch``: each warp owns ``block_m / warps`` query
    rows and takes every key of the tile (kernel_traits.h L74-L77), so for each key block
    S = Q K^T reads its Q rows and the whole K tile (``Is_Q_in_regs`` false), O += P V the
    whole V tile (P stays in registers): 2 d (rows + 2 block_n) bytes over rows x block_n x d
    / 1024 MMAs. Causal or not, the tile is the same on sm80/sm90 (``fa2_tile``)."""
    block_m, block_n = attention.fa2_tile(head_dim, False, False, arch=arch)
    rows = block_m / fa2_fwd_warps(head_dim, arch)
    return 2 * head_dim * (rows + 2 * block_n) / (rows * block_n * head_dim / 1024)


def _priced_parts(r) -> tuple[float, float]:
    """(the roofline's compute time of a forward row's kernel, the shared-memory time of its
    whole tiles' MMAs at ``SMEM_BYTES_PER_SM_CLOCK`` and the clock the GPU's 16-bit peak is
    quoted at), burst clock."""
    op = r.ops[-1]
    gpu = dataclasses.replace(catalog_gpu(r.gpu), sustained_of_burst=1.0)
    work = attention.fused_attention_work(gpu, op)
    arch = gpu.sm_arch or 80
    per_clock = attention.TENSOR_FLOPS_PER_SM_CLOCK[90] if arch >= 90 else \
        MMA_SYNC_FLOPS_PER_SM_CLOCK
    clock = gpu.flops("bf16") / (per_clock * gpu.num_sms)
    block_m, block_n = attention.attention_tile(op.impl, op.head_dim, op.causal, False,
                                                arch=arch)
    tiles = attention.tile_scores(op.q_len, op.kv_len, op.causal, block_m, block_n)
    mmas = op.batch * op.heads * tiles * 4 * op.head_dim / 4096  # whole tiles, two GEMMs
    smem = (mmas * fa2_fwd_smem_bytes_per_mma(op.head_dim, arch)
            / (SMEM_BYTES_PER_SM_CLOCK * gpu.num_sms * clock))
    return work, smem


def hd256_ratios(rows: list) -> dict[str, float]:
    """Geometric means over shapes timed at both head dims (same sequence, mask and FLOPs per
    call) of the rate at head dim 256 over the rate at 128: measured, and priced as shipped,
    with the main loop bounded by shared memory (max) and with shared-memory time added to a
    main loop rescaled so head dim 128 keeps its shipped time (add)."""
    keyed = {(r.ops[-1].head_dim, r.ops[-1].q_len, int(r.ops[-1].causal)): r for r in rows}
    logs: dict[str, list[float]] = defaultdict(list)
    for (hd, s, c), r256 in sorted(keyed.items()):
        r128 = keyed.get((128, s, c))
        if hd != 256 or r128 is None:
            continue
        flops = r256.ops[-1].flops / r128.ops[-1].flops
        (w256, m256), (w128, m128) = _priced_parts(r256), _priced_parts(r128)
        scale = (w128 - m128) / w128
        times = {"measured": (r256.measured_s, r128.measured_s), "shipped": (w256, w128),
                 "max": (max(w256, m256), max(w128, m128)),
                 "add": (scale * w256 + m256, scale * w128 + m128)}
        for form, (t256, t128) in times.items():
            logs[form].append(math.log(flops * t128 / t256))
    return {form: math.exp(float(np.mean(v))) for form, v in logs.items()}


def hd256_table() -> list[tuple[str, int, dict[str, float]]]:
    """(source, pairs, ``hd256_ratios``) for FA2's forward in the FA3 paper's bars (FA2 2.5.8,
    H100) and in the H200 device checks (torch 2.11's copy)."""
    out = []
    for name, path in (("FA3 paper (FA2 2.5.8), H100", PUBLISHED),
                       ("device checks (torch 2.11), H200", DEVICE_CHECKS)):
        rows = [r for r in load([path]) if r.kind == "attention_fwd"
                and fit_kernels.attention_impl(r) == "flash2" and r.gpu.startswith("h")]
        pairs = sum(1 for r in rows if r.ops[-1].head_dim == 256)
        out.append((name, pairs, hd256_ratios(rows)))
    return out


def dropout_table(gpu_name: str = "gb200") -> list[tuple[str, int, int, float, float]]:
    """(direction, head dim, sequence, priced dropout/no-dropout rate as shipped, with the fix)
    for FlashAttention-4 on ``gpu_name`` at PR #2597's shapes (16 heads, 32k tokens a call,
    causal), burst clock."""
    gpu = dataclasses.replace(catalog_gpu(gpu_name), sustained_of_burst=1.0)
    out = []
    for backward in (False, True):
        drop = attention.ATTN_DROPOUT_BWD if backward else attention.ATTN_DROPOUT_FWD
        for hd in (64, 128):
            for s in (512, 1024, 2048, 4096, 8192, 16384, 32768):
                op = Attention("attn", max(1, 32768 // s), 16, 16, s, s, hd, True,
                               backward=backward, impl="flash4")
                base = attention.fused_attention_work(gpu, op)
                frac = attention.attention_fraction(op.impl, op.backward, gpu)
                scores = attention.computed_scores(op, gpu.sm_arch)
                block_m, _ = attention.attention_tile(op.impl, hd, True, backward,
                                                      arch=gpu.sm_arch)
                row = (attention.ATTN_ROW_OVERHEAD_KEYS[attention.ATTENTION_FAMILY[op.impl]]
                       [backward] * math.ceil(s / block_m) * block_m)
                mma = op.flops * scores / op.pairs / (gpu.gemm_ceiling("bf16") * frac)
                # as the model prices it (dropout slows every matmul of the kernel), and the
                # fix: the tiles' scores only (a causal forward's tail multiplies both alike)
                shipped = attention.fused_attention_work(
                    gpu, dataclasses.replace(op, dropout=True))
                tail = 1.0 if backward else attention.causal_forward_tail(
                    op.batch * op.heads, math.ceil(s / block_m), gpu.num_sms)
                fixed = base + tail * mma * (scores - row) / scores * (1 / drop - 1)
                out.append(("bwd" if backward else "fwd", hd, s, base / shipped, base / fixed))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    only = ap.add_mutually_exclusive_group()
    only.add_argument("--backward", action="store_true")
    only.add_argument("--hd256", action="store_true")
    only.add_argument("--dropout", action="store_true")
    args = ap.parse_args(argv)
    every = not (args.backward or args.hd256 or args.dropout)
    if every or args.backward:
        print("| file | impl | layout hd/h/kv | rows | gap (us) | side kernels (us) | CTA waves |"
              "\n|---|---|---|---|---|---|---|")
        fits = []
        for label, path in (("H100", H100_FILE), ("H200", H200_FILE)):
            for impl in ("flash2", "cudnn"):
                table, fixed, per_m, side_m = backward_gaps(path, impl)
                fits.append((label, impl, fixed, per_m, side_m))
                for layout, n, gap, side, waves in table:
                    print(f"| {label} | {impl} | {layout} | {n} | {gap:.0f} | {side:.0f} | "
                          f"{waves:.1f} |")
        print("\n| file | impl | gap: fixed per call (us) | per M query elements (us) | "
              "side kernels per M elements (us) |\n|---|---|---|---|---|")
        for label, impl, fixed, per_m, side_m in fits:
            print(f"| {label} | {impl} | {fixed:.0f} | {per_m:.2f} | {side_m:.2f} |")
    if every or args.hd256:
        print("\n| FA2 forward | smem B per MMA hd64 / 128 / 256 |\n|---|---|")
        for name, arch in (("A100 (sm80)", 80), ("H100 (sm90)", 90)):
            per = " / ".join(f"{fa2_fwd_smem_bytes_per_mma(hd, arch):.0f}" for hd in (64, 128, 256))
            print(f"| {name} | {per} (mma.sync's 4,096 FLOPs take "
                  f"{4096 / MMA_SYNC_FLOPS_PER_SM_CLOCK * SMEM_BYTES_PER_SM_CLOCK:.0f} B of "
                  f"shared-memory time) |")
        print("\n| source | rate hd256 / hd128 measured | shipped | max(mma, smem) | mma + smem |"
              "\n|---|---|---|---|---|")
        for name, pairs, ratios in hd256_table():
            print(f"| {name} ({pairs} pairs) | " + " | ".join(
                f"{ratios[f]:.3f}" for f in ("measured", "shipped", "max", "add")) + " |")
    if every or args.dropout:
        print("\n| FA4 GB200 | hd | seq | priced dropout / no-dropout rate, shipped | fix |"
              "\n|---|---|---|---|---|")
        for direction, hd, s, shipped, fixed in dropout_table():
            print(f"| {direction} | {hd} | {s} | {shipped:.3f} | {fixed:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
