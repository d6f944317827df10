"""ss49 diagnostic: is ZB-2p's searched order periodic in the middle?

For each setting (the paper's profiled pass times, benchmarks/zero_bubble_profile.csv, and
equal pass times), the zero-bubble search (``workload.zb_search``) is run for m and m + 1
micro-batches, m from 2 pp to ``--max-m``: per m, which of the eight variants it keeps, and
whether the kept orders for m + 1 are those for m with one period inserted at one position of
every rank (``steady_state.insertion_cut``, the test the named schedules' shortcut uses, end
passes excluded from the period). Per variant too (its own orders for m and m + 1), which
separates "the heuristic's state repeats" from "the choice among variants moves with m".

    PYTHONPATH=src python benchmarks/ss49_zb2p_period.py [--max-m 96]
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

from trainsim.steady_state import _end_passes, insertion_cut
from trainsim.workload.pipeline_schedules import W_MEMORY_FRACTION
from trainsim.workload.zb_search import VARIANTS, build_order, search

PROFILE = Path(__file__).with_name("zero_bubble_profile.csv")


def settings() -> list[tuple[str, int, tuple[float, float, float], float]]:
    """(name, pp, (F, I, W) ms, comm ms): the profile's rows (I = B less W, as the code base
    splits a backward), then equal times."""
    out = []
    for row in csv.DictReader(PROFILE.open()):
        f, b, w = float(row["f_ms"]), float(row["b_ms"]), float(row["w_ms"])
        out.append((f"{row['model']} p{row['num_gpus']} m{row['num_microbatches']}",
                    int(row["num_gpus"]), (f, b, w), float(row["comm_ms"])))
    out += [(f"equal p{pp}", pp, (1.0, 1.0, 1.0), 0.0) for pp in (2, 4, 8)]
    return out


def cut(a: list, b: list, m: int) -> tuple[int, int] | None:
    return insertion_cut(a, b, 1, [_end_passes(m, 1)] * len(a))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-m", type=int, default=96)
    args = ap.parse_args()
    seen = set()
    print("| setting | m with a cut (kept order) | kept variant changes at m | "
          "per variant: m with a cut |")
    print("|---|---|---|---|")
    for name, pp, cost, comm in settings():
        if (pp, cost, comm) in seen:
            continue
        seen.add((pp, cost, comm))
        limit = 2.0 * pp
        ms = range(2 * pp, args.max_m + 1)
        kept = {m: search(pp, m, cost, comm, limit, W_MEMORY_FRACTION) for m in
                range(2 * pp, args.max_m + 2)}
        chosen = {}
        for m in kept:
            spans = [build_order(pp, m, cost, comm, limit, W_MEMORY_FRACTION, v)
                     for v in VARIANTS]
            chosen[m] = min(range(len(VARIANTS)), key=lambda i: spans[i][1])
            for i, (o, _) in enumerate(spans):
                chosen.setdefault((m, i), o)
        good = [m for m in ms if cut(kept[m], kept[m + 1], m)]
        changes = [m + 1 for m in ms if chosen[m] != chosen[m + 1]]
        per = []
        for i in range(len(VARIANTS)):
            gi = [m for m in ms if cut(chosen[(m, i)], chosen[(m + 1, i)], m)]
            per.append(f"v{i}: {len(gi)}/{len(ms)}" + (f" from {gi[0]}" if gi else ""))
        print(f"| {name} | {len(good)}/{len(ms)}{' from ' + str(good[0]) if good else ''} "
              f"| {changes[:6]}{' ...' if len(changes) > 6 else ''} | {', '.join(per)} |")


if __name__ == "__main__":
    main()
