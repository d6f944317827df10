"""ss51: why DualPipe at pp 2 with overlapped sends does not take the periodic shortcut -- its two
ranks' alternating steps settle geometrically, by the send's SM share each period.

Random pp-2 DualPipe configs (``helpers.random_config`` from ``--seed``, ZeRO 0-2, 8 pp + 16
to 12 pp + 64 micro-batches, as tests/test_steady_named.py draws them) are simulated with the
shortcut; for each that falls back to the full simulation, one rank's compute-stream gap after
one of its two steady steps is read over a ``--long`` micro-batch run, and the ratio of its
change from one period to the next (fitted over the run) is printed beside ``1 - s``, ``s`` the
send's SM share (``pricing.P2P_SMS / num_sms``), with the periods it needs to come within 1e-11
of the makespan (what the proofs compare to).

    PYTHONPATH=src:tests python benchmarks/ss51_dualpipe_pp2.py [--n 40] [--seed 51] [--long 600]
"""

from __future__ import annotations

import argparse
import math
from itertools import pairwise

from helpers import pp2_dualpipe_configs

import trainsim.steady_state as steady
from trainsim import simulate
from trainsim.engine import run
from trainsim.pricing import Pricer
from trainsim.simulator import build_graph


def configs(n: int, seed: int) -> list:
    """The draw above: ``helpers.pp2_dualpipe_configs`` (tests/test_steady_affine.py's)."""
    return pp2_dualpipe_configs(n, seed)


def decay(cfg, m: int) -> tuple[float, float, float]:
    """(fitted ratio per period, 1 - s, periods to 1e-11 of the makespan) on a run of ``m``."""
    pricer = Pricer(cfg)
    tl = run(build_graph(cfg, pricer, None, m).tasks)
    starts = [tl.start_s[i] for i in tl.queues[(0, "compute")]]
    gaps = [b - a for a, b in pairwise(starts)]
    step = gaps[10:len(gaps) - 40:2]  # one of the two steady steps' gap, every period
    change = [b - a for a, b in pairwise(step)]
    first, last = abs(change[5]), abs(change[-1])
    rho = (last / first) ** (1 / (len(change) - 6))
    need = math.log(1e-11 * tl.makespan_s / first) / math.log(rho) if rho < 1 else math.inf
    return rho, 1 - pricer.sm_share["pp"], need


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--seed", type=int, default=51)
    ap.add_argument("--long", type=int, default=600)
    args = ap.parse_args()
    steady.MIN_TASKS = 0  # take the shortcut on these small runs too
    cfgs = configs(args.n, args.seed)
    failed = 0
    print(f"{'#':>3} {'m':>4} {'overlap':>7} {'ratio':>7} {'1 - s':>7} {'periods':>8}")
    for i, cfg in enumerate(cfgs):
        if simulate(cfg).simulation["method"] != "full":
            continue
        failed += 1
        rho, damp, need = decay(cfg, args.long)
        print(f"{i:3d} {cfg.num_microbatches:4d} {cfg.parallel.overlap_p2p_comm!s:>7} "
              f"{rho:7.4f} {damp:7.4f} {need:8.0f}")
    overlapped = sum(c.parallel.overlap_p2p_comm for c in cfgs)
    print(f"{failed} of {len(cfgs)} in full ({overlapped} overlap their sends)")


if __name__ == "__main__":
    main()
