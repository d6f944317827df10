"""ss50: simulation CPU cost against the global batch for the two schedules the periodic
shortcut gained (GPipe: two phases with paces per stream, ``steady_gpipe``; zb_2p: its order
search settled into a period, ``zb_settle.settle``), and the shortcut against the full
simulation (llama3-70b example, 64 H100, PP 4). Each time is the best of 3 in-process CPU ms
with zb_2p's cached variant choice cleared before each (the search is part of the cost).

    PYTHONPATH=src python benchmarks/ss50_cost.py
"""

from __future__ import annotations

import zbss48_cost

from trainsim import load_run_config

SCHEDULES = ("gpipe", "zb_2p")
BATCHES = (256, 2048)


def config(schedule: str, batch: int):
    return load_run_config("examples/llama3-70b-h100-64.yaml", (
        f"parallel.pipeline_schedule={schedule}", "parallel.vpp=1",
        f"training.global_batch_size={batch}"))


def main() -> None:
    zbss48_cost.main(SCHEDULES, BATCHES, config)


if __name__ == "__main__":
    main()
