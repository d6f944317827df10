"""table49: the CPU of validate's closing table, the step the parent runs serially after the last
row (``cli._validate_one``: ``out.print(render_validation(...))``).

    PYTHONPATH=src python benchmarks/table49_render.py --rows /tmp/rows.pkl   # predicts once, keeps the rows
    PYTHONPATH=OLD/src python benchmarks/table49_render.py --rows /tmp/rows.pkl --out old.txt
    PYTHONPATH=src python benchmarks/table49_render.py --rows /tmp/rows.pkl --out new.txt; cmp old.txt new.txt

Each run renders the kept rows into a 160-column file console (as validate does into a file or a
pipe; ``--terminal``: a 200-column colour terminal) ``--reps`` times in a fresh process and prints
the first render's CPU (the command renders once) and the median's. Alternate the two trees.
"""

from __future__ import annotations

import argparse
import io
import pickle
import statistics
import time
from pathlib import Path

from rich.console import Console

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", required=True, help="pickle of (kind, rows, summary); made if missing")
    ap.add_argument("--csv", default=str(ROOT.parent / "shared/validation/training_public.csv"))
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--terminal", action="store_true")
    ap.add_argument("--out", help="write the last render here")
    a = ap.parse_args()
    rows = Path(a.rows)
    if not rows.exists():
        from trainsim.validate import summarize, validate_file

        kind, results = validate_file(a.csv, workers=2, compute_db="auto")
        rows.write_bytes(pickle.dumps((kind, results, summarize(results))))
    kind, results, summary = pickle.loads(rows.read_bytes())
    from trainsim.report import render_validation

    unit = {"training": "s/iteration", "collectives": "busbw GB/s", "kernels": ""}[kind]
    cpu = []
    for _ in range(a.reps):
        buf = io.StringIO()
        con = (Console(width=200, file=buf, force_terminal=True, color_system="truecolor")
               if a.terminal else Console(width=160, file=buf))
        t0 = time.process_time()
        con.print(render_validation(kind, results, unit, summary))
        cpu.append(time.process_time() - t0)
    if a.out:
        Path(a.out).write_text(buf.getvalue())
    print(f"{len(results)} rows: first {cpu[0] * 1e3:.1f} ms, median {statistics.median(cpu) * 1e3:.1f} ms, "
          f"min {min(cpu) * 1e3:.1f} ms CPU a render")


if __name__ == "__main__":
    main()
