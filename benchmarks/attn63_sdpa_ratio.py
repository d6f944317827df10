"""The rate of PyTorch SDPA's flash backend over the flash-attn package's on one GPU
(``compute.attention.SDPA_FLASH_OF_FLASH_ATTN``), from the one published same-GPU, same-harness
pair: NVIDIA/cudnn-frontend @bb37575d benchmark/sdpa_benchmark_training/artifacts/
sdpa_bf16_benchmark_results_NVIDIA_B200.csv, backends ``pyt_flash_attention`` (torch 2.9.0a0
nv25.09 SDPA's FLASH_ATTENTION: FlashAttention-2's sm80 kernels, vendored under
aten/src/ATen/native/transformers/cuda/flash_attn/) and ``flash_attention`` (flash-attn
2.7.4.post1 ``flash_attn_func``), Llama 3.1 405B heads (128 / 8 KV, head dim 128), causal,
batch 1, 4k-128k tokens, forward and backward (``benchmarks/kernels_blackwell.csv``, rows
``cudnnfe-b200-llama405b-s*-{fwd,bwd}-{sdpaflash,fa2}``).

    python benchmarks/attn63_sdpa_ratio.py

Prints each pair's SDPA-flash / flash-attn rate and the geometric mean per direction.
"""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path

FILE = Path(__file__).resolve().parent / "kernels_blackwell.csv"
ROW = re.compile(r"cudnnfe-b200-llama405b-s(\d+)-(fwd|bwd)-(sdpaflash|fa2)$")


def pairs(path: Path = FILE) -> dict[str, list[tuple[int, float]]]:
    """{direction: [(tokens, SDPA-flash rate / flash-attn rate)]} of the file's B200 pairs."""
    rate: dict[tuple[int, str, str], float] = {}
    for r in csv.DictReader(path.open()):
        m = ROW.match(r["id"])
        if m:
            rate[(int(m[1]), m[2], m[3])] = float(r["measured_value"])
    out: dict[str, list[tuple[int, float]]] = {"fwd": [], "bwd": []}
    for (s, d, lib), v in sorted(rate.items()):
        if lib == "sdpaflash" and (s, d, "fa2") in rate:
            out[d].append((s, v / rate[(s, d, "fa2")]))
    return out


def geometric_mean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def main() -> None:
    for d, rows in pairs().items():
        for s, r in rows:
            print(f"{d} s{s:6d}: SDPA flash / flash-attn {r:.3f}")
        print(f"{d}: geometric mean {geometric_mean([r for _, r in rows]):.3f} over {len(rows)} pairs")


if __name__ == "__main__":
    main()
