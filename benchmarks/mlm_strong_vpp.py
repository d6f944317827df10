"""How deep the Megatron-core 0.8 177B runs of the Megatron-LM README interleaved: the strong-scaling
figure's MFU ratios (README text: 47 % at 96 GPUs, 42 % at 4608; the weak table: 432.8 TFLOP/s at
2304) against trainsim's at each vpp, micro-batch 1 (TP8 PP6, batch 1152 at every size).

    python benchmarks/mlm_strong_vpp.py

The ratio to the 96-GPU run is set by the schedule (bubble, data-parallel exposure), not by the
compute rate, which the 96-GPU run measures almost alone (576 micro-batches per rank). A check,
not an input: nothing here feeds trainsim.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

from trainsim.simulator import simulate
from trainsim.validate.training import row_config

HERE = Path(__file__).resolve().parent
PEAK = 989.4e12  # H100 SXM dense BF16, the README's MFU denominator (432.8 / 989.4 = 44 %)
MEASURED = {96: 0.47 * PEAK, 2304: 432.8e12, 4608: 0.42 * PEAK}


def main(argv: list[str]) -> int:
    with open(HERE / "training_mlm_strong.csv", newline="") as fh:
        row = next(csv.DictReader(fh))
    flops = float(row["measured_iteration_s"]) * MEASURED[96] * int(row["num_gpus"])
    print("vpp " + " ".join(f"{g:>7d}" for g in MEASURED) + "   ratios to 96 GPUs")
    print("meas " + " ".join(f"{MEASURED[g] / 1e12:7.1f}" for g in MEASURED) + "   "
          + " ".join(f"{MEASURED[g] / MEASURED[96]:.3f}" for g in MEASURED if g != 96))
    for vpp in (1, 2, 4, 8, 16):
        rate = {}
        for gpus in MEASURED:
            cfg = row_config(dict(row, num_gpus=str(gpus), vpp=str(vpp), micro_batch_size="1"),
                             {"recompute": "none"})
            rate[gpus] = flops / simulate(cfg).iteration_time_s / gpus
        print(f"{vpp:>3d}  " + " ".join(f"{rate[g] / 1e12:7.1f}" for g in MEASURED) + "   "
              + " ".join(f"{rate[g] / rate[96]:.3f}" for g in MEASURED if g != 96))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
