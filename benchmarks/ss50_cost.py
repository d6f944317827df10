"""ss50: simulation CPU cost against the global batch for the two schedules the periodic
shortcut gained (GPipe: two phases with paces per stream, ``steady_gpipe``; zb_2p: its order
search settled into a period, ``zb_search.settle``), and the shortcut against the full
simulation (llama3-70b example, 64 H100, PP 4). Each time is the best of 3 in-process CPU ms
with zb_2p's cached variant choice cleared before each (the search is part of the cost).

    PYTHONPATH=src python benchmarks/ss50_cost.py
"""

from __future__ import annotations

from zbss48_cost import cpu_ms

from trainsim import load_run_config

SCHEDULES = ("gpipe", "zb_2p")
BATCHES = (256, 2048)


def config(schedule: str, batch: int):
    return load_run_config("examples/llama3-70b-h100-64.yaml", (
        f"parallel.pipeline_schedule={schedule}", "parallel.vpp=1",
        f"training.global_batch_size={batch}"))


def main() -> None:
    print(f"{'case':18s} {'ms':>8s} {'full ms':>8s} {'rel diff':>9s}  method")
    for name in SCHEDULES:
        for batch in BATCHES:
            cfg = config(name, batch)
            ms, fast = cpu_ms(cfg)
            full_ms, full = cpu_ms(cfg, keep_timeline=True)
            diff = abs(fast.iteration_time_s / full.iteration_time_s - 1)
            print(f"{name + ' ' + str(batch):18s} {ms:8.1f} {full_ms:8.1f} {diff:9.1e}  "
                  f"{fast.simulation['method']}: {fast.simulation['reason']}")


if __name__ == "__main__":
    main()
