"""What adopting each H200-host measurement (``host_measured.candidates``) would do to the board.

    PYTHONPATH=src:benchmarks python benchmarks/host_measured_board.py [group ...]

Groups: ``queue`` (``LAUNCH_QUEUE`` at the measured 1033 instead of the 2018 forum's 1000),
``view`` (``PY_VIEW_S`` at a measured ``narrow``), ``node`` (``STREAM_CONTEXT_S``,
``NODE_PASS_S``, ``ENGINE_CALL_S`` at their measured builds), ``dummy`` (``DUMMY_WGRAD_S``).
Prints the time MAPE of the public file, the held-out file and the check files a host constant
reaches, as ``compute.host`` stands and with each group swapped in (several at once with
``a+b``). Nothing is fitted; the module's constants are restored after each group.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

from host_measured import candidates

from trainsim.compute import host
from trainsim.validate.training import predict_training_row

ROOT = Path(__file__).resolve().parents[1]
FILES = [ROOT.parent / "shared" / "validation" / "training_public.csv",
         *(ROOT / "benchmarks" / f"training_{n}.csv" for n in (
             "heldout", "nanotron", "moe_modelzoo", "mcore_dsv3_gb200", "deepspeed",
             "dgxc2505", "zeropp", "dsazure"))]
GROUPS = {"queue": ["LAUNCH_QUEUE"], "view": ["PY_VIEW_S"],
          "node": ["STREAM_CONTEXT_S", "NODE_PASS_S", "ENGINE_CALL_S"],
          "dummy": ["DUMMY_WGRAD_S"]}


def swapped(groups: list[str]) -> dict[str, float]:
    """The constants a set of groups changes, with their new values."""
    values = candidates()
    return {n: values[n] for g in groups for n in GROUPS[g]}


def mape_by_file(groups: list[str]) -> dict[str, float]:
    kept = {n: getattr(host, n) for n in swapped(groups)}
    try:
        for n, v in swapped(groups).items():
            setattr(host, n, v)
        out = {}
        for path in FILES:
            if not path.exists():
                continue
            with path.open(newline="") as fh:
                errs = [abs(r.predicted / r.measured - 1.0) for r in
                        map(predict_training_row, csv.DictReader(fh)) if r.predicted]
            out[path.stem.replace("training_", "")] = 100.0 * sum(errs) / len(errs)
        return out
    finally:
        for n, v in kept.items():
            setattr(host, n, v)


def main(argv: list[str] | None = None) -> int:
    wanted = (argv if argv is not None else sys.argv[1:]) or [*GROUPS]
    for label in ["as is", *wanted]:
        groups = [] if label == "as is" else label.split("+")
        r = mape_by_file(groups)
        print(f"{label:18}", "  ".join(f"{f} {v:.3f}" for f, v in r.items()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
