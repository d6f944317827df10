"""DeepSeek-V3's DualPipe step replayed with the source's communication calls: where rank 0's
waits come from, and what each reading of ``dualpipe.py``'s commit-and-wait moves (issue 20
item 3, 45th session, pp45). A diagnostic: no src change rests on it.

    python benchmarks/deepseek_v3_commit.py [--format json]

What trainsim does (src/trainsim/pipeline.py ``ScheduledPipeline``; the example sets
``overlap_p2p_comm``): a pass waits for its inputs; each pass's sends follow it on the rank's
``pp`` stream, one after the other, each ``pipeline_send_s`` (1.246 ms: PP peers are 16 nodes
apart, the NIC's rate), whenever the pass ends, whatever the receiver is doing.

What the source does (deepseek-ai/DualPipe@3da1bbe dualpipe/dualpipe.py): every chunk call
(``_forward_chunk`` L185-L193, ``_backward_chunk`` L195-L203, ``_forward_backward_chunk``
L205-L214, ``_weight_chunk`` L216-L223, and the step's end, L427) first issues every
queued operation in one ``dist.batch_isend_irecv`` and waits on each request
(``_commit_and_wait_comm`` L285-L292); a chunk's sends are only queued after its compute
(``_send_forward`` / ``_send_backward``), so they go out with the next chunk's batch. Two
consequences trainsim leaves out, each a toggle of ``replay`` here:

* ``rendezvous``: a send is a two-sided NCCL transfer: it moves once the receiver's batch that
  holds the matching receive has been issued (a 58.7 MB tensor does not fit NCCL's p2p buffers,
  so the sender cannot finish ahead of the receiver), and the sender's next compute waits for
  it (``req.wait()`` on the send's request as well). So a rank whose neighbour has not yet
  reached the chunk that consumes its output waits for the neighbour.
* ``source_recvs``: the source queues some receives one chunk early, so that chunk waits for
  them too: step 2 queues the next forward's receive (``self._recv_forward(0)``, L365 and L368)
  before the phase-1 forward chunk commits, and step 3 queues the phase-1 forward's receive
  (L377) before the weight chunk commits (L378).

``replay`` runs one step of every rank through those calls (its own transcription of
``step()``, L358-L427: the same order of compute as ``workload.pipeline_schedules.dualpipe``,
which the script checks), pricing each compute as the simulator prices it
(``ScheduledPipeline``'s lone, split and paired passes) and each transfer ``send_s`` on its
link (two transfers on one link in one batch one after the other). ``trainsim`` mode (all
toggles off, each rank's sends one after the other on its ``pp`` stream) is the simulator's
own placement, and reproduces its pipeline part; the modes add the source's semantics one at a
time. A batch starts on the GPU when the compute before it ends (ProcessGroupNCCL orders its
stream after the current one).

Table 4's phases (arXiv:2505.09343; ``deepseek_v3_phases.TABLE4``) are read two ways on every
rank: compute only (the chunk's compute span; trainsim's reading) and chunk calls (each call
from the end of the compute before it, which is where a CUDA event recorded before the call
fires, to the end of its compute: the commit-and-wait inside the call counted in its phase).

Two what-ifs on the end ranks' work, priced in this process only: ``end_pairs_alone``, rank 0's
and rank 15's pairs as their two passes alone (dualpipe.py L23 / L126-L129: the overlap needs
both modules of a rank to be of one type; whether DeepSeek's end stages are is not published);
``dense_embedding_grad``, the full-table passes of a PyTorch embedding's backward
(``dense_embedding_grad_s``) on stage 0 and, for the MTP module's own embedding lookup, on
stage 15. ``splits`` replays the three layer splits of ``deepseek_v3.split_table``.

Figures: RESULTS.md, "45th session, pp45".
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import deque
from pathlib import Path

import trainsim
from trainsim.pipeline import ScheduledPipeline
from trainsim.pricing import Pricer
from trainsim.simulator import _TaskGraph
from trainsim.workload.pipeline_schedules import dualpipe
from trainsim.workload.schedule import Overlapped, Pass

sys.path.insert(0, str(Path(__file__).resolve().parent))
try:
    import deepseek_v3 as d
    import deepseek_v3_phases as ph
finally:
    sys.path.pop(0)

MODES = {
    "trainsim": {},
    "own_sends": {"wait_own": True},
    "source_recvs": {"wait_own": True, "source_recvs": True},
    "source": {"wait_own": True, "source_recvs": True, "rendezvous": True},
}
"""The readings replayed: ``trainsim`` the simulator's placement; ``own_sends`` a chunk also
waits for the sends its batch carries (pp44's reading 2); ``source_recvs`` the source's early
receives; ``source`` both and the rendezvous, the source's semantics. The rendezvous without
the early receives deadlocks (the middle ranks' sends held back in step 2 and the
phase-1 forward's receive before the W are what keep the two directions from waiting on each
other), so it is no reading of its own."""


def program(s: int, pp: int, m: int) -> list[tuple]:
    """Rank ``s``'s calls in ``dualpipe.py``'s ``step()`` as a list of ("recv", key),
    ("send", key, peer), ("commit",) and ("compute", step) items. A transfer's key is
    (kind, chunk, micro-batch, sending virtual stage); chunk 0 is the direction entering at
    rank 0 (micro-batches 0..m/2-1), chunk 1 the other (m/2..m-1), as trainsim labels them."""
    half, n = m // 2, pp // 2
    hr = min(s, pp - 1 - s)
    flip = s >= n
    middle = hr == n - 1
    out: list[tuple] = []
    nxt = {"f": [0, half], "b": [0, half], "rf": [0, half], "rb": [0, half],
           "sf": [0, half], "sb": [0, half]}
    wq: deque[Pass] = deque()

    def stage(c: int) -> int:
        return s if c == 0 else pp - 1 - s

    def ahead(c: int) -> int:  # the rank of the next stage of chunk c's direction
        return s + 1 if c == 0 else s - 1

    def take(k: str, c: int) -> int:
        x = nxt[k][c]
        nxt[k][c] += 1
        return x

    def recv_f(p: int) -> None:
        c = p ^ flip
        if stage(c) > 0:
            out.append(("recv", ("F", c, take("rf", c), stage(c) - 1)))

    def recv_b(p: int) -> None:
        c = p ^ flip
        if stage(c) < pp - 1:
            out.append(("recv", ("B", c, take("rb", c), stage(c) + 1)))

    def send_f(p: int) -> None:
        c = p ^ flip
        if stage(c) < pp - 1:
            out.append(("send", ("F", c, take("sf", c), stage(c)), ahead(c)))

    def send_b(p: int) -> None:
        c = p ^ flip
        if stage(c) > 0:
            out.append(("send", ("B", c, take("sb", c), stage(c)), 2 * s - ahead(c)))

    def commit() -> None:
        out.append(("commit",))

    def fwd(p: int) -> Pass:
        c = p ^ flip
        return Pass("F", take("f", c), c)

    def bwd(p: int, zb: bool = False) -> Pass:
        c = p ^ flip
        x = Pass("I" if zb else "B", take("b", c), c)
        if zb:
            wq.append(Pass("W", x.microbatch, c))
        return x

    def f_chunk(p: int, recv: bool = True, send: bool = True) -> None:
        if recv:
            recv_f(p)
        commit()
        out.append(("compute", fwd(p)))
        if send:
            send_f(p)

    def b_chunk(p: int, zb: bool = False, recv: bool = True, send: bool = True) -> None:
        if recv:
            recv_b(p)
        commit()
        out.append(("compute", bwd(p, zb)))
        if send:
            send_b(p)

    def fb_chunk(p0: int, p1: int, recv0: bool = True) -> None:
        if recv0:
            recv_f(p0)
        recv_b(p1)
        commit()
        out.append(("compute", Overlapped(fwd(p0), bwd(p1))))
        send_f(p0)
        send_b(p1)

    def w_chunk() -> None:
        commit()
        out.append(("compute", wq.popleft()))

    for _ in range((n - hr - 1) * 2):  # step 1: nF0
        f_chunk(0)
    recv_f(0)  # step 2: nF0F1, the next phase-0 forward's receive queued ahead
    for i in range(hr + 1):
        f_chunk(0, recv=False, send=middle)
        recv_f(0)
        f_chunk(1, send=not middle or i < hr)
        if not middle:
            send_f(0)
    for _ in range(n - hr - 1):  # step 3: nB1W1F1, the forward's receive before the W
        b_chunk(1, zb=True)
        recv_f(1)
        w_chunk()
        f_chunk(1, recv=False)
    for i in range(half - pp + hr + 1):  # step 4: nF0B1F1B0
        if i == 0 and middle:
            f_chunk(0, recv=False, send=False)
            send_f(1)
            b_chunk(1, send=False)
            send_f(0)
            send_b(1)
        else:
            fb_chunk(0, 1, recv0=i > 0)
        fb_chunk(1, 0)
    for _ in range(n - hr - 1):  # step 5: nB1F1B0
        b_chunk(1)
        fb_chunk(1, 0)
    zb = False
    for i in range(hr + 1):  # step 6: nB1B0
        if i == (hr + 1) // 2 and hr % 2 == 1:
            zb = True
        b_chunk(1, zb)
        if i == (hr + 1) // 2 and hr % 2 == 0:
            zb = True
        b_chunk(0, zb)
    for _ in range(n - hr - 1):  # step 7: nWB0
        w_chunk()
        b_chunk(0, zb=True)
    for _ in range(hr + 1):  # step 8: nW
        w_chunk()
    commit()
    return out


def move_recvs(prog: list[tuple]) -> list[tuple]:
    """``prog`` with every receive moved into the batch of the compute that consumes it (the
    trainsim placement: a pass waits only for its own inputs)."""
    recvs: dict[tuple, set[tuple]] = {}  # (chunk, micro-batch) -> the receives of that pass
    for x in prog:
        if x[0] == "recv":
            recvs.setdefault((x[1][1], x[1][2]), set()).add(x[1])
    out = [x for x in prog if x[0] != "recv"]
    res: list[tuple] = []
    for x in out:
        if x[0] == "compute":
            step = x[1]
            parts = step if isinstance(step, Overlapped) else (step,)
            # only a receive of a part's own (chunk, micro-batch) can be consumed by it
            # (``_consumes``), so each part reads its own few, not every receive of the step
            needed = {k for p in parts for k in recvs.get((p.chunk, p.microbatch), ())
                      if _consumes(p, k)}
            # put them right before this compute's commit
            j = len(res) - 1
            while j >= 0 and res[j][0] != "commit":
                j -= 1
            res[j:j] = [("recv", k) for k in sorted(needed)]
        res.append(x)
    return res


def _consumes(p: Pass, key: tuple) -> bool:
    kind, c, mb, _ = key
    if p.chunk != c or p.microbatch != mb:
        return False
    return (kind == "F" and p.kind == "F") or (kind == "B" and p.kind in "BI")


def pass_seconds(sched: ScheduledPipeline, s: int, step, alone: bool = False,
                 extra_bwd: dict[int, float] | None = None) -> float:
    """The simulator's price of a compute step on rank ``s`` (``deepseek_v3.replay``'s); with
    ``alone`` a pair is its forward then its backward as lone passes (dualpipe.py L126-L129,
    the path taken where a rank's two modules are not of one type, L23); ``extra_bwd`` adds
seconds to every backward (B, I or a pair's) of the virtual stages it names."""
    from trainsim.workload.pipeline_schedules import virtual_stage
    pp = sched.pp
    if isinstance(step, Overlapped):
        vf = virtual_stage("dualpipe", s, step.f.chunk, pp)
        vb = virtual_stage("dualpipe", s, step.b.chunk, pp)
        more = (extra_bwd or {}).get(vb, 0.0)
        if alone:
            return sched.fwd[vf].duration_s + sched.bwd[vb].duration_s + more
        return sched.pair_fwd[vf].duration_s + sched.pair_bwd[vb].duration_s + more
    v = virtual_stage("dualpipe", s, step.chunk, pp)
    more = (extra_bwd or {}).get(v, 0.0) if step.kind in "BI" else 0.0
    return more + {"F": sched.fwd[v].duration_s, "B": sched.bwd[v].duration_s,
                   "I": sched.split[v][0].duration_s, "W": sched.split[v][1].duration_s}[step.kind]


def replay(sched: ScheduledPipeline, m: int, send_s: float, wait_own: bool = False,
           source_recvs: bool = False, rendezvous: bool = False,
           alone: tuple[int, ...] = (), extra_bwd: dict[int, float] | None = None) -> dict:
    """One step of every rank through its ``program``; returns per rank the list of
    (step, end of the compute before it, compute start, compute end) and the makespan. The
    pairs of the ranks in ``alone`` run as their two passes alone, and ``extra_bwd`` lengthens
    the backwards of the stages it names (``pass_seconds``)."""
    pp = sched.pp
    progs = [program(s, pp, m) for s in range(pp)]
    if not source_recvs:
        progs = [move_recvs(p) for p in progs]
    posted: dict[tuple, float] = {}  # key -> the receiver's batch start
    issued: dict[tuple, float] = {}  # key -> the sender's batch start
    done: dict[tuple, float] = {}  # key -> transfer end
    batch_of: dict[tuple, tuple[int, int]] = {}  # send key -> (rank, batch index)
    batches: list[list[list[tuple]]] = [[] for _ in range(pp)]  # the sends of each batch
    pp_free = [0.0] * pp  # trainsim: the rank's sends on one stream, one after the other
    cursor = [0] * pp
    free = [0.0] * pp  # end of the rank's last compute
    queue: list[list[tuple]] = [[] for _ in range(pp)]
    open_batch: list[tuple[float, list[tuple]] | None] = [None] * pp
    rows: list[list[tuple]] = [[] for _ in range(pp)]

    def transfer_end(key: tuple) -> float | None:
        if key in done:
            return done[key]
        if key not in issued or (rendezvous and key not in posted):
            return None
        r, b = batch_of[key]
        t = issued[key]
        if rendezvous:
            t = max(t, posted[key])
        if not rendezvous and not wait_own:  # the simulator's pp stream
            t = max(t, pp_free[r])
            done[key] = pp_free[r] = t + send_s
            return done[key]
        peer = key_peer[key]
        for other in batches[r][b]:  # earlier sends of this batch on the same link
            if other == key:
                break
            if key_peer[other] == peer:
                e = transfer_end(other)
                if e is None:
                    return None
                t = max(t, e)
        done[key] = t + send_s
        return done[key]

    key_peer: dict[tuple, int] = {}
    progressed = True
    while progressed:
        progressed = False
        for s in range(pp):
            prog = progs[s]
            while cursor[s] < len(prog) or open_batch[s] is not None:
                if open_batch[s] is not None:
                    start, ops = open_batch[s]
                    ends = []
                    for op in ops:
                        if op[0] == "recv" or wait_own:
                            e = transfer_end(op[1])
                        else:
                            continue
                        if e is None:
                            break
                        ends.append(e)
                    else:
                        open_batch[s] = None
                        free[s] = max([start, *ends])
                        progressed = True
                        continue
                    break
                x = prog[cursor[s]]
                cursor[s] += 1
                progressed = True
                if x[0] in ("recv", "send"):
                    queue[s].append(x)
                elif x[0] == "commit":
                    start = free[s]
                    sends = [op[1] for op in queue[s] if op[0] == "send"]
                    batches[s].append(sends)
                    for op in queue[s]:
                        if op[0] == "send":
                            issued[op[1]] = start
                            batch_of[op[1]] = (s, len(batches[s]) - 1)
                            key_peer[op[1]] = op[2]
                            if not wait_own and not rendezvous:
                                transfer_end(op[1])
                        else:
                            posted[op[1]] = start
                    open_batch[s] = (start, list(queue[s]))
                    queue[s] = []
                else:
                    t0 = free[s]
                    dur = pass_seconds(sched, s, x[1], s in alone, extra_bwd)
                    rows[s].append((x[1], t0, t0 + dur))
                    free[s] = t0 + dur
    if any(cursor[s] < len(progs[s]) or open_batch[s] is not None for s in range(pp)):
        raise RuntimeError("the replay deadlocked")
    out = []
    for s in range(pp):  # a chunk call's span starts where the compute before it ended
        ends = [0.0] + [t1 for _, _, t1 in rows[s][:-1]]
        out.append([(step, e, t0, t1) for (step, t0, t1), e in zip(rows[s], ends)])
    return {"ranks": out, "makespan_s": max(free)}


def phases(calls: list[tuple], makespan: float, chunk_calls: bool) -> dict:
    """Table 4's phases of one rank's replayed step (no optimizer): compute spans, or chunk
    calls from the previous compute's end; ``bubble`` is the rest of the makespan."""
    out = {k: 0.0 for k in ("1F", "1B", "1W", "1F1B")}
    for step, prev_end, t0, t1 in calls:
        if isinstance(step, Overlapped):
            k = "1F1B"
        else:
            k = {"F": "1F", "B": "1B", "I": "1B", "W": "1W"}[step.kind]
        out[k] += t1 - (prev_end if chunk_calls else t0)
    out["bubble"] = makespan - sum(out.values())
    return out


def check_order(pp: int, m: int) -> bool:
    """Whether ``program``'s compute order is ``workload.pipeline_schedules.dualpipe``'s."""
    return all([x[1] for x in program(s, pp, m) if x[0] == "compute"] == dualpipe(s, pp, m)
               for s in range(pp))


def pair_waits(calls: list[tuple]) -> list[float]:
    """Seconds each pair of a rank waits before its compute, in order."""
    return [t0 - prev_end for step, prev_end, t0, _ in calls if isinstance(step, Overlapped)]


def dense_embedding_grad_s(cfg, pricer: Pricer) -> float:
    """Seconds of the full-table passes a PyTorch embedding's backward adds to the scatter-add
    trainsim prices (``workload.head.embedding_backward``): ``embedding_backward_cuda_kernel``
    allocates the weight gradient with ``at::zeros({num_weights, dim})`` (pytorch
    aten/src/ATen/native/cuda/EmbeddingBackwardKernel.cu; the small-index path of Embedding.cu
    the same), a 16-bit write of the whole vocab x hidden table, and Megatron-core's DDP hook
    then adds that 16-bit gradient into the fp32 ``main_grad`` (``param.main_grad.add_``, the
    embedding having no fused wgrad accumulation): read 2 + 4, write 4 bytes an element. Only
    a what-if here: whether DeepSeek's own framework runs it so is not published, and
    workload/head.py is not this script's to change."""
    from trainsim.workload.ops import Elementwise
    n = cfg.model.vocab_size // cfg.parallel.tp * cfg.model.hidden_size
    return pricer.price([Elementwise("embedding.grad_zeros", bytes=2.0 * n, kernel="copy"),
                         Elementwise("embedding.main_grad_add", bytes=10.0 * n,
                                     kernel="copy")]).duration_s


def distance(row: dict, table: dict) -> float:
    """Sum over Table 4's five pipeline phases (the optimizer left out: the replay has none)
    of |replayed - measured| seconds."""
    return sum(abs(row[k] - table[k]) for k in ("1F", "1B", "1W", "1F1B", "bubble"))


def reading(r: dict, table: dict, chunk_calls: bool) -> dict:
    """Rank 0's phases under one reading of the timers, its distance to the table, and the
    closest rank's."""
    mk = r["makespan_s"]
    rows = [phases(calls, mk, chunk_calls) for calls in r["ranks"]]
    dist = [distance(x, table) for x in rows]
    best = min(range(len(rows)), key=dist.__getitem__)
    return {"rank0": rows[0], "rank0_distance_s": dist[0], "closest_rank": best,
            "closest": rows[best], "closest_distance_s": dist[best],
            "max_bubble_s": max(x["bubble"] for x in rows)}


def run_all() -> dict:
    cfg = trainsim.load_run_config(d.CONFIG, d.SETTINGS["dualpipe"])
    graph = _TaskGraph(cfg, Pricer(cfg), None)
    sched = ScheduledPipeline(graph)
    m, send = cfg.schedule_microbatches, graph.send.duration_s
    pp = cfg.parallel.pp
    table = ph.TABLE4["MPFT"]
    out = {"order_matches_trainsim": check_order(pp, m), "send_ms": 1e3 * send,
           "measured": {k: table[k] for k in ("1F", "1B", "1W", "1F1B", "bubble", "opt")},
           "modes": {}}
    emb = dense_embedding_grad_s(cfg, graph.pricer)
    out["dense_embedding_grad_ms"] = 1e3 * emb
    extra = {0: emb, pp - 1: emb * (cfg.model.mtp_num_layers or 0)}
    for name, opts in MODES.items():
        for ends in ("overlapped", "end_pairs_alone", "dense_embedding_grad"):
            alone = (0, pp - 1) if ends == "end_pairs_alone" else ()
            if ends != "overlapped" and name not in ("trainsim", "source"):
                continue
            r = replay(sched, m, send, alone=alone,
                       extra_bwd=extra if ends == "dense_embedding_grad" else None, **opts)
            row = {"makespan_s": r["makespan_s"]}
            for s in (0, pp // 2 - 1):
                w = pair_waits(r["ranks"][s])
                row[f"rank{s}_pair_waits"] = {
                    "pairs": len(w), "total_s": sum(w), "first_ms": 1e3 * w[0],
                    "second_ms": 1e3 * w[1], "median_even_ms": 1e3 * _median(w[0::2]),
                    "median_odd_ms": 1e3 * _median(w[1::2]), "last_ms": 1e3 * w[-1]}
            row["compute"] = reading(r, table, False)
            row["chunk_calls"] = reading(r, table, True)
            out["modes"][f"{name}/{ends}"] = row
    out["splits"] = []
    for k in range(3):  # the three splits deepseek_v3.split_table simulates, source semantics
        sets = d.SETTINGS["dualpipe"] + [
            "parallel.decoder_first_pipeline_num_layers=null",
            "parallel.decoder_last_pipeline_num_layers=null",
            f"parallel.pipeline_model_parallel_layout={d.split_layout(k)}"]
        c = trainsim.load_run_config(d.CONFIG, sets)
        g = _TaskGraph(c, Pricer(c), None)
        r = replay(ScheduledPipeline(g), m, send, **MODES["source"])
        out["splits"].append({"layout": d.split_layout(k), "makespan_s": r["makespan_s"],
                              "compute": reading(r, table, False)})
    base = out["modes"]["trainsim/overlapped"]["makespan_s"]
    for row in out["modes"].values():
        row["added_s"] = row["makespan_s"] - base
    return out


def _median(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[len(xs) // 2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--format", choices=("table", "json"), default="table")
    args = ap.parse_args()
    out = run_all()
    if args.format == "json":
        print(json.dumps(out, indent=1))
        return
    print(f"compute order = trainsim's dualpipe(): {out['order_matches_trainsim']}; "
          f"one send {out['send_ms']:.3f} ms; measured {out['measured']}; a dense embedding "
          f"gradient {out['dense_embedding_grad_ms']:.2f} ms")
    ks = ("1F", "1B", "1W", "1F1B", "bubble")
    for row in out["splits"]:
        x = row["compute"]
        print(f"split {row['layout']:22s} (source) makespan {row['makespan_s']:.3f} s; rank 0 "
              + " ".join(f"{k} {x['rank0'][k]:.2f}" for k in ks)
              + f"  | {x['rank0_distance_s']:.2f} s off")
    for name, row in out["modes"].items():
        w = row["rank0_pair_waits"]
        print(f"{name:28s} makespan {row['makespan_s']:.3f} s (+{row['added_s']:.3f}); rank 0 "
              f"waits {w['total_s']:.3f} s before its {w['pairs']} pairs (2nd {w['second_ms']:.1f}"
              f" ms, then {w['median_even_ms']:.2f} / {w['median_odd_ms']:.2f}, last "
              f"{w['last_ms']:.1f})")
        for rd in ("compute", "chunk_calls"):
            x = row[rd]
            print(f"   {rd:11s} rank 0 " + " ".join(f"{k} {x['rank0'][k]:.2f}" for k in ks)
                  + f"  | {x['rank0_distance_s']:.2f} s off; closest rank {x['closest_rank']}"
                  f" {x['closest_distance_s']:.2f} s off; most bubble {x['max_bubble_s']:.2f} s")


if __name__ == "__main__":
    main()
