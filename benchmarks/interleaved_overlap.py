"""Megatron's interleaved 1F1B with overlapped p2p, replayed op by op (issue 20 acceptance 2).

    python benchmarks/interleaved_overlap.py [--model 1.5B ...]

The zero-bubble paper's 1F1B-I rows ran Megatron-LM's interleaved schedule as the code base's
``arxiv`` branch had it (sail-sg/zero-bubble-pipeline-parallelism@f68d3879, "for arxiv paper",
2023-11-29). Its examples/pretrain_zero_bubble.sh there passes no
``--no-overlap-p2p-communication`` (that line came with 064369d6, 2024-10-02), so
megatron/arguments.py leaves ``overlap_p2p_comm`` at its default, True (line 1158, store_false),
for interleaved runs and sets ``batch_p2p_comm = not overlap_p2p_comm`` (line 477): each
exchange is ``_p2p_ops`` (p2p_communication.py 168-227), one ``torch.distributed.isend`` or
``irecv`` per tensor on the pipeline group, even ranks sending first, odd ranks receiving first,
with no ``torch.cuda.synchronize``; the schedule waits on the handles just before the next pass
in the same direction (schedules.py ``forward_backward_pipelining_with_interleaving``, 650-960).
1F1B without interleaving, and the zero-bubble schedules, run batched (arguments.py 186 turns
the flag off without virtual stages).

This script replays that host program on every rank, with the pass times trainsim prices
(``chunks``) and trainsim's send of one pair (``pipeline.pipeline_send_s`` with the overlap on),
to see what the overlapped exchanges cost the schedule:

- every NCCL op runs on its pair communicator's stream (PyTorch's ProcessGroupNCCL keys a lone
  send or receive by the two ranks), in order, after the compute issued before it (the stream
  waits on the current stream);
- a send is matched with its peer's receive in order; a transfer of ``send_s`` starts when the
  sender runs (``eager``: NCCL's per-channel buffer takes it) or when both run (``rendezvous``);
- the compute stream waits on the handles where the schedule waits;
- ``one_queue``: ``CUDA_DEVICE_MAX_CONNECTIONS=1`` (the example script exports it): every item
  leaves one hardware queue in the order the host issued it, so an NCCL op whose stream is busy
  holds back everything behind it; otherwise streams are independent.

It prints the replay's pipeline span with sends free and priced in each mode, trainsim's own
iteration with the exchanges blocking (as zero_bubble.py runs the rows) and overlapped, the
speed-ups over 1F1B, and how long NCCL kernels stay resident on the busiest rank (launched and
waiting for a peer) with the SMs such kernels would have to take from the passes to account for
the published 1F1B-I speed-up. Findings: benchmarks/RESULTS.md, 20th session, zb.
"""

from __future__ import annotations

import argparse
import csv
from typing import NamedTuple

PAIR_ORDER = {0: ("send_next", "recv_prev", "send_prev", "recv_next"),
              1: ("recv_prev", "send_next", "recv_next", "send_prev")}
"""``_p2p_ops``' issue order on even and odd pipeline ranks (p2p_communication.py 178-226)."""


def chunk_of(k: int, p: int, v: int, forward: bool) -> int:
    """Megatron's ``get_model_chunk_id``: the model chunk of the k-th forward or backward."""
    c = (k % (p * v)) // p
    return c if forward else v - 1 - c


def host_program(s: int, p: int, v: int, m: int) -> list[tuple]:
    """Rank ``s``'s items in issue order: ("C", "F"|"B", k) a pass, ("P", ops, h) p2p ops
    posted as handle h (ops: (send|recv, next|prev)), ("W", h) the compute stream waits on h.
    Transcribed from forward_backward_pipelining_with_interleaving with overlap_p2p_comm."""
    total = m * v
    warmup = min(total, (p - s - 1) * 2 + (v - 1) * p)
    steady = total - warmup
    first, last = s == 0, s == p - 1
    prog: list[tuple] = []
    handles = iter(range(10 ** 9))

    def post(ops: list[tuple[str, str]], wait: bool = False) -> int | None:
        if not ops:
            return None
        order = PAIR_ORDER[s % 2]
        h = next(handles)
        prog.append(("P", sorted(ops, key=lambda o: order.index(f"{o[0]}_{o[1]}")), h))
        if wait:  # _communicate(wait_on_reqs=True)
            prog.append(("W", h))
            return None
        return h

    def wait(h: int | None) -> None:
        if h is not None:
            prog.append(("W", h))

    def sends_fwd(k: int) -> bool:  # the last virtual stage sends nothing on
        return not (last and chunk_of(k, p, v, True) == v - 1)

    def sends_bwd(k: int) -> bool:  # the first virtual stage sends nothing back
        return not (first and chunk_of(k, p, v, False) == 0)

    if not first:
        post([("recv", "prev")], wait=True)  # recv_forward before the warm-up
    fwd_h = bwd_h = None
    for k in range(warmup):
        wait(fwd_h)
        prog.append(("C", "F", k))
        recv_prev = not (first and chunk_of(k + 1, p, v, True) == 0) and k != total - 1
        fwd_h = post([("send", "next")] * sends_fwd(k) + [("recv", "prev")] * recv_prev)
        if k == warmup - 1 and steady and not last:
            bwd_h = post([("recv", "next")])
    for j in range(steady):
        fk = j + warmup
        wait(fwd_h)
        prog.append(("C", "F", fk))
        recv_prev = not (first and chunk_of(fk - (p - 1), p, v, True) == v - 1) \
            and j != steady - 1
        fwd_h = post([("send", "next")] * sends_fwd(fk) + [("recv", "prev")] * recv_prev)
        wait(bwd_h)
        prog.append(("C", "B", j))
        recv_next = not (last and chunk_of(j - (p - 1), p, v, False) == 0)
        bwd_h = post([("send", "prev")] * sends_bwd(j) + [("recv", "next")] * recv_next)
    wait(bwd_h)
    if not steady and not last:
        post([("recv", "next")], wait=True)
    for k in range(steady, total):  # cool-down: send_backward_recv_backward, waited at once
        prog.append(("C", "B", k))
        recv_next = not (last and chunk_of(k + 1, p, v, False) == v - 1) and k != total - 1
        post([("send", "prev")] * sends_bwd(k) + [("recv", "next")] * recv_next, wait=True)
    return prog


class Replay(NamedTuple):
    span_s: float
    """First pass to last pass or transfer, any rank."""
    resident_s: tuple[float, ...]
    """Per rank: time some NCCL kernel of it is running (launched, waiting or moving data)."""


def replay(p: int, v: int, m: int, fwd_s: list[list[float]], bwd_s: list[list[float]],
           send_s: float, one_queue: bool = True, rendezvous: bool = True) -> Replay:
    """Times every rank's :func:`host_program`; ``fwd_s[s][c]``, ``bwd_s[s][c]``: seconds of
    chunk c's passes on rank s."""
    progs = [host_program(s, p, v, m) for s in range(p)]
    cursor = [0] * p
    head = [0.0] * p  # one_queue: when the next item can leave the queue
    compute = [0.0] * p  # when the compute stream is free
    stream_last: dict[tuple[int, int], int] = {}  # (rank, peer): its stream's last op
    start: dict[int, float] = {}
    end: dict[int, float] = {}
    meta: dict[int, tuple[int, str, int, int]] = {}  # op -> (rank, send|recv, peer, index)
    queue: dict[tuple[str, int, int], list[int]] = {}  # (kind, src, dst) -> ops in order
    posted: dict[tuple[int, int], list[int]] = {}

    def done(o: int) -> bool:
        """Whether op ``o``'s end is known (its peer op posted); sets it."""
        if o in end:
            return True
        s, kind, peer, i = meta[o]
        other_kind, src, dst = ("recv", s, peer) if kind == "send" else ("send", peer, s)
        mates = queue.get((other_kind, src, dst), [])
        if i >= len(mates):
            return False
        other = mates[i]
        sender = o if kind == "send" else other
        both = max(start[o], start[other])
        if kind == "send":
            end[o] = (both if rendezvous else start[o]) + send_s
        else:
            end[o] = max(start[o], (both if rendezvous else start[sender]) + send_s)
        return True

    progressed = True
    while progressed:
        progressed = False
        for s in range(p):
            prog = progs[s]
            while cursor[s] < len(prog):
                item = prog[cursor[s]]
                if item[0] == "C":
                    _, kind, k = item
                    c = chunk_of(k, p, v, kind == "F")
                    t0 = max(head[s], compute[s]) if one_queue else compute[s]
                    compute[s] = t0 + (fwd_s if kind == "F" else bwd_s)[s][c]
                    if one_queue:  # its last kernel leaves the queue as the one before ends
                        head[s] = compute[s]
                elif item[0] == "W":
                    ops = posted[(s, item[1])]
                    if not all(done(o) for o in ops):
                        break
                    t = max(end[o] for o in ops)
                    compute[s] = max(compute[s], t)
                    if one_queue:
                        head[s] = max(head[s], t)
                else:
                    _, ops, h = item
                    peers = [(s + 1) % p if side == "next" else (s - 1) % p for _, side in ops]
                    before = [stream_last.get((s, q)) for q in peers]
                    if not all(o is None or done(o) for o in before):
                        break
                    ids = []
                    for (kind, _), q in zip(ops, peers):
                        prev = stream_last.get((s, q))
                        ready = max(compute[s], 0.0 if prev is None else end[prev])
                        t0 = max(head[s], ready) if one_queue else ready
                        if one_queue:
                            head[s] = t0
                        o = len(meta)
                        key = (kind, s, q) if kind == "send" else (kind, q, s)
                        queue.setdefault(key, []).append(o)
                        meta[o] = (s, kind, q, len(queue[key]) - 1)
                        start[o] = t0
                        stream_last[(s, q)] = o
                        ids.append(o)
                    posted[(s, h)] = ids
                cursor[s] += 1
                progressed = True
    if any(cursor[s] < len(progs[s]) for s in range(p)):
        raise RuntimeError("the replayed schedule deadlocks")
    for o in meta:
        if not done(o):
            raise RuntimeError("a send without its receive")
    resident = []
    for s in range(p):
        spans = sorted((start[o], end[o]) for o, (r, *_) in meta.items() if r == s)
        total, lo, hi = 0.0, None, None
        for a, b in spans:
            if hi is None or a > hi:
                total += 0.0 if hi is None else hi - lo
                lo, hi = a, b
            else:
                hi = max(hi, b)
        resident.append(total + (0.0 if hi is None else hi - lo))
    return Replay(max(max(compute), max(end.values(), default=0.0)), tuple(resident))


def main() -> None:
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import zero_bubble as zb

    from trainsim.chunks import chunks
    from trainsim.pipeline import pipeline_send_s
    from trainsim.pricing import Pricer
    from trainsim.simulator import simulate
    from trainsim.workload.shard import shard_of

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", action="append", help="only this model (repeatable): 1.5B, ...")
    args = ap.parse_args()
    with zb.ROWS.open() as f:
        rows = [r for r in csv.DictReader(f) if not args.model or r["model"] in args.model]
    pub = {(r["model"], r["num_microbatches"], r["schedule"]): r for r in rows}
    print("| model | m | send, ms (blocking batched / pair) | replay span, ms: sends free / "
          "eager, streams / rendezvous, one queue | trainsim iteration, ms: 1F1B / 1F1B-I "
          "blocking / overlapped | speed-up published / blocking / overlapped | NCCL resident "
          "on the busiest rank, ms | SMs it would take for the published speed-up |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        if r["schedule"] != "1F1B-I":
            continue
        cfg, over = zb.config(r), zb.config(r, overlap_interleaved=True)
        pricer = Pricer(over)
        ch = chunks(over, pricer, shard_of(over), None)
        p, v, m = cfg.parallel.pp, cfg.parallel.vpp, cfg.num_microbatches
        fwd = [[ch[c * p + s].fwd.duration_s for c in range(v)] for s in range(p)]
        bwd = [[ch[c * p + s].bwd.duration_s for c in range(v)] for s in range(p)]
        size = shard_of(cfg).tokens * cfg.model.hidden_size * 2
        pair, batched = pipeline_send_s(over, pricer, size), pipeline_send_s(cfg, Pricer(cfg), size)
        free = replay(p, v, m, fwd, bwd, 0.0).span_s
        eager = replay(p, v, m, fwd, bwd, pair, one_queue=False, rendezvous=False).span_s
        full = replay(p, v, m, fwd, bwd, pair)
        base = pub[(r["model"], r["num_microbatches"], "1F1B")]
        t1 = simulate(zb.config(base)).iteration_time_s
        tb, to = simulate(cfg).iteration_time_s, simulate(over).iteration_time_s
        published = float(r["samples_per_gpu_per_s"]) / float(base["samples_per_gpu_per_s"])
        need = t1 / published - to  # seconds the overlapped iteration lacks
        busiest = max(full.resident_s)
        sms = cfg.cluster.gpu.num_sms
        print(f"| {r['model']} | {m} | {batched * 1e3:.3f} / {pair * 1e3:.3f} | "
              f"{free * 1e3:.1f} / {eager * 1e3:.1f} / {full.span_s * 1e3:.1f} | "
              f"{t1 * 1e3:.0f} / {tb * 1e3:.0f} / {to * 1e3:.0f} | {published:.3f} / "
              f"{t1 / tb:.3f} / {t1 / to:.3f} | {busiest * 1e3:.0f} | "
              f"{sms * need / busiest:.1f} of {sms} |")


if __name__ == "__main__":
    main()
