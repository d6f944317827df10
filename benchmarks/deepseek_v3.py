"""DeepSeek-V3's pre-training cost, predicted (issue 5, acceptance 3).

    python benchmarks/deepseek_v3.py

Reported (arXiv:2412.19437 Table 1): 2.664M H800 GPU-hours for 14.8T tokens of pre-training.
Prints trainsim's prediction for examples/deepseek-v3-h800.yaml with the expert all-to-alls
hidden (DualPipe's intent) and exposed (plain 1F1B), and the iteration's breakdown.
"""

from __future__ import annotations

from pathlib import Path

import trainsim

REPORTED_GPU_HOURS = 2.664e6
CONFIG = Path(__file__).resolve().parents[1] / "examples" / "deepseek-v3-h800.yaml"


def main() -> None:
    print("| setting | s/iteration | tokens/s/GPU | MFU | GPU-hours (14.8T) | vs reported |")
    print("| --- | --- | --- | --- | --- | --- |")
    for label, overlap in (("EP all-to-all hidden (DualPipe-like)", "true"),
                           ("EP all-to-all exposed (1F1B)", "false")):
        cfg = trainsim.load_run_config(CONFIG, [f"parallel.moe_overlap_ep_comm={overlap}"])
        r = trainsim.simulate(cfg)
        hours = r.run_estimate()["gpu_hours"]
        print(f"| {label} | {r.iteration_time_s:.2f} | {r.tokens_per_s_per_gpu:,.0f} | "
              f"{100 * r.mfu:.1f}% | {hours / 1e6:.3f}M | {100 * (hours / REPORTED_GPU_HOURS - 1):+.1f}% |")


if __name__ == "__main__":
    main()
