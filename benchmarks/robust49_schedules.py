"""robust49: the CPU time of each pipeline schedule at thousands of micro-batches (robust48's
lead 5: zero-bubble and DualPipe orders at 4,096 micro-batches cost 3-5 CPU s a draw).

Each schedule is simulated on fuzz_checks' small dense model (8 layers a stage's multiple) at
``--pp`` stages and ``--micro`` micro-batches per replica; a line per run: CPU seconds, the
iteration time, whether the steady-state shortcut proved its period, and the simulated tasks.
Anything over 10 CPU s is a hang class of the robustness briefs.

    PYTHONPATH=src python benchmarks/robust49_schedules.py [--pp 2,4,8] [--micro 4096,16384]
        [--schedules zb_h1,...]
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fuzz_checks import BASES

from trainsim.catalog import run_config_from_dict
from trainsim.errors import TrainsimError
from trainsim.simulator import simulate

VPP = {"interleaved_1f1b": 2, "zb_v": 2, "interleaved_zb": 2, "dualpipe_v": 2}
ALL = ("1f1b", "interleaved_1f1b", "zb_h1", "zb_h2", "zb_2p", "zb_v", "interleaved_zb",
       "dualpipe", "dualpipe_v")


def config(schedule: str, pp: int, micro: int) -> dict:
    cfg = copy.deepcopy(BASES["dense"])
    vpp = VPP.get(schedule)
    cfg["model"]["num_layers"] = 2 * pp * (vpp or 1)
    cfg["parallel"] = {"pp": pp, "pipeline_schedule": schedule, **({"vpp": vpp} if vpp else {})}
    gpus = pp * (2 if schedule == "dualpipe" else 1)
    cfg["training"].update(global_batch_size=micro * gpus // pp, micro_batch_size=1,
                           seq_length=256)
    cfg["cluster"].update(num_gpus=gpus, gpus_per_node=min(gpus, 8))
    return cfg


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pp", default="2,4,8")
    ap.add_argument("--micro", default="4096,16384")
    ap.add_argument("--schedules", default=",".join(ALL))
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    for micro in (int(m) for m in args.micro.split(",")):
        for pp in (int(p) for p in args.pp.split(",")):
            for name in args.schedules.split(","):
                start = time.process_time()
                try:
                    r = simulate(run_config_from_dict(config(name, pp, micro)))
                    what = f"{r.iteration_time_s:.6f} s"
                except TrainsimError as exc:
                    what = f"refused: {str(exc)[:110]}"
                print(f"{name:16s} pp{pp} m{micro:6d}: {time.process_time() - start:6.2f} CPU s"
                      f"  {what}", flush=True)


if __name__ == "__main__":
    main()
