"""ss51: simulation CPU cost against the micro-batch count for the cases the periodic shortcut
left to the full simulation before the 51st session: GPipe with overlapped sends (each send
slowing its stage's next pass), zb_2p whose order search settles late, and DualPipe at pp 2;
the shortcut against the full simulation (llama3-70b example, 64 H100, PP 4 and dp 2: a global
batch of 2 b is b micro-batches; DualPipe at PP 2 with 40 layers, dp 4: b / 4 micro-batches).
Best of 3 in-process CPU ms, zb_2p's cached variant choice cleared before each run
(``zbss48_cost.cpu_ms``).

    PYTHONPATH=src python benchmarks/ss51_cost.py [--schedules gpipe_overlap,zb_2p,...]
        [--batches 64,512,2048,8192]
"""

from __future__ import annotations

import argparse

import zbss48_cost

from trainsim import load_run_config

CASES = {
    "gpipe_overlap": ("parallel.pipeline_schedule=gpipe", "parallel.vpp=1",
                      "parallel.overlap_p2p_comm=true"),
    "zb_2p": ("parallel.pipeline_schedule=zb_2p", "parallel.vpp=1"),
    "dualpipe_pp2": ("parallel.pipeline_schedule=dualpipe", "parallel.vpp=1", "parallel.pp=2",
                     "model.num_layers=40"),
    "dualpipe_pp2_overlap": ("parallel.pipeline_schedule=dualpipe", "parallel.vpp=1",
                             "parallel.pp=2", "model.num_layers=40",
                             "parallel.overlap_p2p_comm=true"),
}
BATCHES = (64, 512, 2048, 8192)


def config(case: str, batch: int):
    return load_run_config("examples/llama3-70b-h100-64.yaml",
                           (*CASES[case], f"training.global_batch_size={batch}"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--schedules", default=",".join(CASES))
    ap.add_argument("--batches", default=",".join(map(str, BATCHES)))
    args = ap.parse_args()
    zbss48_cost.main(args.schedules.split(","), [int(b) for b in args.batches.split(",")],
                     config)


if __name__ == "__main__":
    main()
