"""zbproof61: why zb_2p's order search leaves 11 of tests/test_steady_zb2p.py's 200 random configs
simulated in full (issue 21 item 2; settle60 Lead 3). For each: the search's inputs (pp, F / I /
W and send in whole microseconds, the W memory share, the variant ``zb_search.choose`` keeps)
and, round by round of that variant's search (``zb_search._Builder``): after which round the
whole state first repeats one it had after an earlier round (``zb_settle.settle``'s criterion)
and, before that earlier round, the least number of
rounds P after which every round's decisions (the passes each stage places, in order) and every
stage's next free moment relative to stage 0's repeat to the end of the window, with how the
stages' W backlogs (I passes less W passes) and idle-time differences change over P rounds.

    PYTHONPATH=src:tests python benchmarks/zbproof61_zb_drift.py [--ids 3,9,...] [--rounds 2400]
"""

from __future__ import annotations

import argparse

from helpers import pipelined_configs

import trainsim.workload.pipeline_schedules as ps
from trainsim.pipeline import ScheduledPipeline
from trainsim.pricing import Pricer
from trainsim.simulator import _TaskGraph
from trainsim.workload.zb_search import _Builder, _state

FALLBACKS = "3,9,22,27,28,41,55,75,122,149,194"


def search_inputs(cfg) -> tuple[tuple, tuple]:
    """The search key ``pipeline_schedules._search_key`` gives for ``cfg`` and ``_chosen``'s
    answer (variant, settled from, rounds)."""
    seen: list[tuple] = []
    real = ps._search_key

    def keep(*args, **kw):
        seen.append(real(*args, **kw))
        return seen[-1]

    ps._search_key = keep
    try:
        ScheduledPipeline(_TaskGraph(cfg, Pricer(cfg), None, 1)).settled_from()
    finally:
        ps._search_key = real
    return seen[0], ps._chosen(*seen[0])


def rounds_of(key: tuple, variant, n: int) -> list[tuple]:
    """Per round 1..n of ``variant``'s search: (decisions, relative free times, W backlogs,
    idle differences, the earlier round after which the whole state was the same or None)."""
    pp, _, cost, comm, wf = key
    b = _Builder(pp, n + 4 * pp, cost, comm, 2.0 * pp, wf, variant)
    placed: list[tuple[int, str]] = []
    real = b.place

    def place(stage: int, kind: str) -> None:
        placed.append((stage, kind))
        real(stage, kind)

    b.place = place
    b.warm_up()
    out, states = [], {}
    for r in range(1, n + 1):
        placed.clear()
        b.steady_round(r)
        state = _state(b, r)[0]
        repeated = states.setdefault(state, r) if state is not None else None
        repeated = repeated if repeated != r else None
        out.append((tuple(placed), tuple(f - b.free_at[0] for f in b.free_at),
                    tuple(b.placed[s]["I"] - b.placed[s]["W"] for s in range(pp)),
                    tuple(x - b.idle[0] for x in b.idle), repeated))
    return out


def drift(rows: list[tuple], end: int) -> str:
    """The least period of rounds whose decisions and relative times repeat over the window's
    last stretch before round ``end`` (at least two periods and 60 rounds), and what drifts."""
    n = end - 1
    for p in range(1, 300):
        r = n - p
        while r > 0 and rows[r - 1][:2] == rows[r - 1 + p][:2]:
            r -= 1
        if n - r >= 2 * p and n - r > 60:
            back = [b - a for a, b in zip(rows[r][2], rows[r + p][2])]
            idle = [round(b - a) for a, b in zip(rows[r][3], rows[r + p][3])]
            return (f"every {p} rounds over rounds {r + 1}..{n}: W backlog {rows[r][2]} -> "
                    f"{rows[n - 1][2]} ({back} a period), idle differences {idle} a period")
    changes = sum(rows[i][0] != rows[i - 1][0] for i in range(1, n))
    return (f"no period: {changes} changes of a round's decisions in {n} rounds, W backlog "
            f"{rows[min(100, n - 1)][2]} at round {min(101, n)} -> {rows[n - 1][2]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ids", default=FALLBACKS)
    ap.add_argument("--rounds", type=int, default=2400)
    args = ap.parse_args()
    configs = pipelined_configs(200, "zb_2p", lambda pp: (40 * pp + 8, 80 * pp))
    for i in map(int, args.ids.split(",")):
        key, (variant, from_m, rounds) = search_inputs(configs[i])
        rows = rounds_of(key, variant, args.rounds)
        settled, first = next(((r + 1, row[4]) for r, row in enumerate(rows) if row[4]),
                              (None, None))
        flags = "".join("TF"[not x] for x in (variant.idle_before_first_backward,
                                               variant.backward_first,
                                               variant.fill_short_waits))
        print(f"#{i}: pp {key[0]}, m {key[1]}, F/I/W {key[2]} us, send {key[3]} us, W share "
              f"{key[4]}, variant {flags}; choose: settled from {from_m} ({rounds} rounds); "
              f"whole state after round {settled} first the same as after {first}", flush=True)
        print(f"    before round {first or args.rounds}: {drift(rows, first or args.rounds)}",
              flush=True)


if __name__ == "__main__":
    main()
