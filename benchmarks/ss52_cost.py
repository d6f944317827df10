"""ss52: simulation CPU cost of the cases the periodic shortcut left to the full simulation or to
a long ladder of truncated runs before the 52nd session: DualPipe at pp 2 with overlapped
sends (its ranks' phase settling by ``1 - s`` a period: now an affine orbit, or the ladder
ended after two attempts) and zb_2p whose order search settles late (its settling point read
before any graph, an attempt whose timeline is still in its transient stopped before its run
A). The shortcut against the full simulation, best of 3 in-process CPU ms
(``zbss48_cost.cpu_ms``).

Cases: ``pp2_random23`` is ``helpers.pp2_dualpipe_configs(40)[23]`` (ss51's
random config #23, an A100 pp-2 DualPipe run with overlapped sends), the batch column its
micro-batches; ``dualpipe_pp2_overlap`` and ``zb_2p`` are ss51_cost.py's (llama3-70b
example, the batch column its global batch).

    PYTHONPATH=src:tests:benchmarks python benchmarks/ss52_cost.py [--cases ...] [--batches ...]
"""

from __future__ import annotations

import argparse
import dataclasses

import ss51_cost
import zbss48_cost

CASES = ("pp2_random23", "dualpipe_pp2_overlap", "zb_2p")
BATCHES = (52, 416, 2048, 8192)


def config(case: str, batch: int):
    if case != "pp2_random23":
        return ss51_cost.config(case, batch)
    from helpers import pp2_dualpipe_configs
    cfg = pp2_dualpipe_configs(40)[23]
    per = cfg.training.global_batch_size // cfg.num_microbatches
    return dataclasses.replace(cfg, training=dataclasses.replace(
        cfg.training, global_batch_size=batch * per))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--batches", default=",".join(map(str, BATCHES)))
    args = ap.parse_args()
    zbss48_cost.main(args.cases.split(","), [int(b) for b in args.batches.split(",")], config)


if __name__ == "__main__":
    main()
