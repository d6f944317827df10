"""The rate of mamba_ssm's Triton SSD kernels (the Mamba-2 chunked scan, forward and backward).

The kernels are neither compute- nor bandwidth-bound: the one published chunk-scan row runs at
0.20-0.25 of the bf16 ceiling (52nd session, ``benchmarks/ssd52_audit.py``), and NVIDIA's own
profile reports the forward chunk scan at 12.5 % theoretical occupancy, register- and shared-
memory-limited (NVIDIA/TensorRT-LLM#11345). Measured against the bytes each kernel must move
(every tensor read or written once; ``workload.mamba_block``), they sustain a fixed share of the
GPU's HBM bandwidth: the whole forward (``mamba_chunk_scan_combined``) at 0.29-0.30 on five H200
shapes timed in one run (tile-ai/TileOPs@01d0496d, PR #1675) and the chunk scan alone at
0.27-0.34 on an H800 (tile-ai/tilelang@4f3523dc, PR #1131: the HBM share, not the rate per SM
clock, is what the two GPUs share: 1.41 against 0.92-1.12 TB/s, 1.4x, their HBM ratio 1.43x, at
the same 132 SMs). Each Triton SSD kernel is therefore priced at its moved bytes over
``SSD_HBM_FRACTION`` of HBM, or its FLOPs at the bf16 ceiling where that is longer (it never is at
the fraction's value). The backward kernels are priced at the forward's share: no published
measurement times them, and they hold more registers (state-spaces/mamba#502), so the share is
an upper bound on their rate.
"""

from __future__ import annotations

SSD_HBM_FRACTION = 0.300
"""Share of HBM bandwidth mamba_ssm's Triton SSD kernels move their bytes at. Fitted by
``benchmarks/fit_ssd56.py`` (minimum MAPE, golden section) to the five ``tileops1675`` rows of
``benchmarks/kernels_ssd_h200.csv`` (H200, batch 8, seqlen 2048, 24-128 heads); held out: the
twenty ``tileops1557`` rows of the same file and the six H800 chunk-scan rows of
``benchmarks/kernels_ssd.csv`` (the script prints both): fit MAPE 1.0 %; H800 chunk scan 9.1 %
(signed +1.0 %); the 1557 rows 12.4 % at batch 1 and 16.3 % at batch 8, but -42 / -48 % at
batch 32 and at 32k tokens x 4, the larger shapes of a run whose configs its smallest shape chose
(the 2.7B batch-8 shape ran 1.69 ms there, 1.21 ms in the 1675 run: 1.39x)."""


def ssd_bandwidth(hbm_bw_Bps: float) -> float:
    """The rate (B/s) a Triton SSD kernel moves its bytes at on a GPU of ``hbm_bw_Bps``."""
    return hbm_bw_Bps * SSD_HBM_FRACTION
