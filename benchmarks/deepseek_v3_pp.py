"""Where DualPipe's pipeline sends sit beside its overlapped pairs, and what each reading of the
source moves on the example (issue 20 item 3, 44th session, pp44). A diagnostic: no src change
rests on it.

    python benchmarks/deepseek_v3_pp.py [--format json]

What trainsim does (src/trainsim/pipeline.py ``ScheduledPipeline._pair``; the example sets
``overlap_p2p_comm``, so the sends do not block): a pair is one compute task; its forward's and
its backward's sends follow it on the rank's ``pp`` stream, one after the other, each priced by
``pipeline_send_s`` (PP peers sit 128 ranks, 16 nodes, apart: the NIC's rate); the neighbour's
next pass waits for the send. Nothing on the compute stream waits for the rank's own sends.

What the source does (deepseek-ai/DualPipe@3da1bbe dualpipe/dualpipe.py):
``_forward_backward_chunk`` (L205-L214) queues the pair's receives (``_recv_forward``,
``_recv_backward``: ``comm.append_irecv`` into ``self.comm_ops``, L238 / L266), then
``_commit_and_wait_comm`` (L285-L292) issues every queued op in one ``dist.batch_isend_irecv``
and calls ``req.wait()`` on each (the compute stream waits on NCCL's) before the pair's compute
(``_forward_backward_compute_chunk``); the pair's own sends (``_send_forward``,
``_send_backward``, L213-L214; ``comm.append_isend``, L251 / L283) are only queued after the
compute, so they go out in the next chunk's batch with that chunk's receives and are waited on
there. ``_forward_chunk``, ``_backward_chunk`` and ``_weight_chunk`` commit and wait the same
way (L188, L198, L220). For a pair (0, 1) on the first half of the ranks both receives come
from ``prev_rank`` and both sends go to ``next_rank``. So (1) no PP transfer runs beside a
pair's compute: NCCL's send channels take no SMs from it and share no NIC with DeepEP's RDMA
during it; (2) a chunk waits for its own previous sends as well as its receives; (3) a timer
around ``_forward_backward_chunk`` counts the commit-and-wait in the pair.

``simulate(patch)`` patches the schedule in this process only: ``own_sends``, every compute
step of a rank also waits for the sends its previous step queued (reading (2));
``two_channels``, each send at NCCL's 2 channels per network peer (``collectives.p2p_channels``
notes, NCCL up to 2.28) at ``P2P_CHANNEL_Bps`` each instead of the NIC's rate (not priced in
src: it made the held-out CP rows worse). ``summary`` gives rank 0's and a middle rank's pair
waits and phases with the wait before each pair counted in the pair (reading (3)).

Figures (RESULTS.md, "44th session, pp44"): one send 1.246 ms; a middle rank waits 2.39 ms
before each pair (its neighbour's two sends, one after the other), rank 0 6.05 ms (0 before its
45 F c0 & B c1 pairs, 11.3 before its 52 F c1 & B c0, which wait on rank 1's chain to the
head); ``own_sends`` +0.008 s a step, ``two_channels`` +0.21 s; reading (3) moves rank 0's 1F1B
12.48 -> 13.07 s (13.95 measured) and its bubble 1.65 -> 1.06 s (2.06 measured), the step
unchanged.
"""

from __future__ import annotations

import argparse
import json
import sys
from itertools import pairwise
from pathlib import Path

import trainsim
from trainsim import pipeline as pl
from trainsim.collectives.p2p_channels import P2P_CHANNEL_Bps

sys.path.insert(0, str(Path(__file__).resolve().parent))
try:
    import deepseek_v3 as d
    import deepseek_v3_phases as ph
finally:
    sys.path.pop(0)

NET_PEER_CHANNELS = 2
"""NCCL 2.18-2.28: channels a network peer's send runs on (src/graph/paths.cc
``ncclTopoGetNchannels``; collectives/p2p_channels.py's notes)."""


def simulate(patch: str = ""):
    cfg = trainsim.load_run_config(d.CONFIG, d.SETTINGS["dualpipe"])
    saved = (pl.ScheduledPipeline._try, pl.ScheduledPipeline._upstream, pl.pipeline_send_s)
    if patch == "own_sends":
        def upstream(self, s, p):
            u = saved[1](self, s, p)
            return None if u is None else u + self.__dict__.setdefault("pending", {}).get(s, [])

        def try_(self, s, step):
            g = self.g
            n = len(g.tasks)
            ok = saved[0](self, s, step)
            if ok:
                self.pending[s] = [i for i in range(n, len(g.tasks))
                                   if g.tasks[i].stream == (s, "pp")]
            return ok
        pl.ScheduledPipeline._upstream, pl.ScheduledPipeline._try = upstream, try_
    elif patch == "two_channels":
        def send_s(cfg, pricer, size_bytes):
            return max(saved[2](cfg, pricer, size_bytes),
                       size_bytes / (NET_PEER_CHANNELS * P2P_CHANNEL_Bps))
        pl.pipeline_send_s = send_s
    try:
        return cfg, trainsim.simulate(cfg, keep_timeline=True)
    finally:
        pl.ScheduledPipeline._try, pl.ScheduledPipeline._upstream, pl.pipeline_send_s = saved


def pair_waits(r, s: int) -> dict:
    """Rank ``s``'s pairs: count, mean span, and the mean wait of its compute stream before
    each pair (from the previous compute task's end)."""
    tl = r.timeline
    comp = sorted((tl.start_s[i], tl.end_s[i], t.label) for i, t in enumerate(tl.tasks)
                  if t.stream == (s, "compute"))
    spans, waits = [], []
    for prev, cur in pairwise(comp):
        if "&" in cur[2]:
            spans.append(cur[1] - cur[0])
            waits.append(max(0.0, cur[0] - prev[1]))
    return {"pairs": len(spans), "pair_ms": 1e3 * sum(spans) / len(spans),
            "wait_ms": 1e3 * sum(waits) / len(waits), "wait_s": sum(waits),
            "pair_with_wait_ms": 1e3 * (sum(spans) + sum(waits)) / len(spans)}


def summary(cfg, r) -> dict:
    tl, pp = r.timeline, cfg.parallel.pp
    rows = ph.rank_phases(tl.tasks, tl.start_s, tl.end_s, pp, r.iteration_time_s)
    out = {"iteration_s": r.iteration_time_s,
           "gpu_hours": r.run_estimate()["gpu_hours"]}
    for s in (0, pp // 2 - 1):
        w = pair_waits(r, s)
        out[f"rank{s}"] = {**w, "1F1B_s": rows[s]["1F1B"], "bubble_s": rows[s]["bubble"],
                           "1F1B_with_wait_s": rows[s]["1F1B"] + w["wait_s"],
                           "bubble_less_wait_s": rows[s]["bubble"] - w["wait_s"]}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--format", choices=("table", "json"), default="table")
    args = ap.parse_args()
    cfg, base = simulate()
    from trainsim.pricing import Pricer
    from trainsim.simulator import _TaskGraph
    send = _TaskGraph(cfg, Pricer(cfg), None).send.duration_s
    out = {"send_ms": 1e3 * send, "measured": {k: ph.TABLE4["MPFT"][k] for k in
                                                ("time_per_step_s", "1F1B", "bubble")},
           "measured_pair_ms": 1e3 * ph.TABLE4["MPFT"]["1F1B"] / 97,
           "base": summary(cfg, base)}
    for patch in ("own_sends", "two_channels"):
        c, r = simulate(patch)
        out[patch] = summary(c, r)
    if args.format == "json":
        print(json.dumps(out, indent=1))
        return
    print(f"one PP send {out['send_ms']:.3f} ms; measured step {out['measured']}")
    for k in ("base", "own_sends", "two_channels"):
        o = out[k]
        print(f"{k:13s} iteration {o['iteration_s']:.3f} s  gpu_hours {o['gpu_hours'] / 1e6:.3f}M")
        for s in ("rank0", "rank7"):
            x = o[s]
            print(f"   {s}: {x['pairs']} pairs {x['pair_ms']:.1f} ms + wait {x['wait_ms']:.2f} ms"
                  f"; 1F1B {x['1F1B_s']:.2f} s ({x['1F1B_with_wait_s']:.2f} with waits), "
                  f"bubble {x['bubble_s']:.2f} s ({x['bubble_less_wait_s']:.2f} less waits)")


if __name__ == "__main__":
    main()
