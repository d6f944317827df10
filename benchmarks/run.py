"""Reproduce trainsim's benchmark figures: simulator speed and accuracy on published runs.

    python benchmarks/run.py            # print a dated markdown block
    python benchmarks/run.py --write    # also append it to benchmarks/RESULTS.md

Speed: wall time of the whole `trainsim validate` process on a one-row CSV (175B GPT, TP8 x PP8,
vpp 6, global batch 6144, on 12,288 A100s; every setting given) and of simulate() alone.
Accuracy: the summary lines of `trainsim validate` on the public CSVs in ../shared/validation.
"""

from __future__ import annotations

import datetime
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = HERE.parent.parent / "shared" / "validation"


def wall(cmd: list[str], repeats: int = 3) -> tuple[float, str]:
    times, out = [], ""
    for _ in range(repeats):
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
        times.append(time.perf_counter() - t0)
        out = proc.stdout.strip().splitlines()[-1]
    return statistics.median(times), out


def main() -> None:
    import trainsim
    from trainsim.validate import predict_training_row, read_rows

    lines = [(f"## {datetime.date.today().isoformat()} "
              f"({platform.processor() or platform.machine()}, "
              f"{platform.python_version()}, trainsim {trainsim.__version__})"), ""]
    exe = [sys.executable, "-m", "trainsim.cli"]
    t, _ = wall(exe + ["validate", str(HERE / "gpt175b_12288.csv")])
    _, rows = read_rows(HERE / "gpt175b_12288.csv")
    t0 = time.perf_counter()
    for _ in range(5):
        predict_training_row(rows[0])
    sim = (time.perf_counter() - t0) / 5
    lines += ["| benchmark | figure |", "| --- | --- |",
              f"| `trainsim validate benchmarks/gpt175b_12288.csv` (12,288 GPUs, whole process, median of 3) | {t:.2f} s |",
              f"| simulate() of that iteration, in process | {sim * 1e3:.0f} ms |"]
    for name in ("training_public.csv", "collectives_public.csv"):
        path = SHARED / name
        if path.exists():
            t, summary = wall(exe + ["validate", str(path)], repeats=1)
            lines.append(f"| `trainsim validate {name}` ({t:.1f} s) | {summary} |")
    block = "\n".join(lines) + "\n"
    print(block)
    if "--write" in sys.argv:
        with open(HERE / "RESULTS.md", "a") as f:
            f.write("\n" + block)


if __name__ == "__main__":
    main()
