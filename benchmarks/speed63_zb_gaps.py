"""speed63: why PP64 x 2,048 zb_2p (benchmarks/pp64_speed.py's shape) has no periodic steady
state to prove. Its kept variant's order search (``zb_search.choose``; search inputs as
``pipeline_schedules._search_key`` gives them for the shape) places one forward, one I and
usually one W per stage a round; the rounds in which a stage places no W (its W backlog grows
by one) come at gaps that grow through the iteration, so no round pattern repeats: no state
(``zb_search._state``) repeats, and neither does any stage's own sequence of W counts.
Prints, per stage listed, the rounds without a W past the warm-up and the gaps between them,
and the stages' W backlogs and memory held (in micro-batches, cap 128) at a few rounds.

    PYTHONPATH=src python benchmarks/speed63_zb_gaps.py [--stages 0,32,63]
"""

from __future__ import annotations

import argparse
from fractions import Fraction
from itertools import pairwise

from trainsim.workload import zb_search

# pp, m, F / I / W and send in whole microseconds, W memory share: the search inputs of
# pp64_speed.py's shape under zb_2p (llama3-70b 128 layers, tp 8, pp 64, 2,048 x 4,096 tokens)
PP64 = (64, 2048, (5087, 6417, 2808), 197, Fraction(16, 97))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stages", default="0,32,63")
    args = ap.parse_args()
    pp, m, cost, comm, wf = PP64
    variant, from_m, rounds = zb_search.choose(pp, m, cost, comm, 2.0 * pp, wf)
    print(f"kept variant {variant}, settles from {from_m} (rounds {rounds})")
    b = zb_search._Builder(pp, m, cost, comm, 2.0 * pp, wf, variant)
    b.warm_up()
    w_counts, snapshots = [], {}
    for microbatch in range(1, m):
        before = [placed["W"] for placed in b.placed]
        b.steady_round(microbatch)
        w_counts.append([placed["W"] - w for placed, w in zip(b.placed, before)])
        if microbatch in (300, 1000, 1900):
            snapshots[microbatch] = ([p["I"] - p["W"] for p in b.placed],
                                     max(b.held) / b.unit)
    for stage in map(int, args.stages.split(",")):
        no_w = [r + 1 for r in range(200, m - 64) if w_counts[r][stage] == 0]
        gaps = [b_ - a for a, b_ in pairwise(no_w)]
        print(f"stage {stage}: {len(no_w)} rounds without a W in rounds 201-{m - 64}; "
              f"gaps {gaps}")
    for r, (backlog, held) in snapshots.items():
        print(f"after round {r}: W backlog of stages 0, 16, 32, 48, 63: "
              f"{[backlog[s] for s in (0, 16, 32, 48, 63)]}; most held {held:.2f} of 128")


if __name__ == "__main__":
    main()
