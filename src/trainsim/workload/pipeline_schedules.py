"""Pipeline schedules beyond 1F1B: the order of passes on every pipeline rank.

A pass is ``F`` (forward), ``B`` (whole backward), or, where a schedule splits the backward
(Qi et al., ICLR 2024, "Zero Bubble Pipeline Parallelism" §2), ``I`` (the gradient of the
input, the paper's *B*: what the previous stage waits for) and ``W`` (the gradient of the
weights, free to run any time before the optimizer step). DualPipe's overlapped pairs are an
:class:`Overlapped` (DeepSeek-V3 report §3.2.1: the forward of one micro-batch and the backward
of another run together so that each one's all-to-alls hide behind the other's compute).

The orders only say *which* pass a rank runs next; the event engine times them, with every
pass waiting for its input from the neighbouring stage. Where a published implementation
exists the order is its order, cited at each function:

- ``gpipe``: every forward, then every backward (torch ``ScheduleGPipe``; Huang et al. 2019).
- ``zb_h1`` / ``zb_h2``: the handcrafted schedules of Qi et al. §2 (Figure 3). ZB-H1 is 1F1B
  with the backward split and rank i (1-based) delaying its W passes by i-1 backward passes,
  so that it holds (p-i+1) M_B + (i-1) M_W (§2.3); ZB-H2 warms up with 2(p-i) forwards and
  delays W by 2(i-1), holding (2p-2i+1) M_B + (2i-2) M_W (§2.3). ``zb_1p`` is ZB-H1: the
  paper's automatic search at a p M_B limit finds ZB-H1's bubble in every setting (Table 5).
- ``zb_2p``: the paper's heuristic (§3.1) at a 2p M_B activation limit, from the priced pass
  times, as the code base's runtime runs it (``zb_search``).
- ``zb_v``: ZB-V (§6), torch's ``ScheduleZBVZeroBubble`` order; the model in 2p chunks placed
  as a V (rank r holds chunks r and 2p-1-r).
- ``interleaved_zb``: torch's ``ScheduleInterleavedZeroBubble``: the interleaved order with one
  warm-up forward a hop (not two), the backward split and W delayed by the rank's index.
- ``dualpipe`` / ``dualpipe_v``: the eight steps of deepseek-ai/DualPipe ``dualpipe.py`` and
  ``dualpipev.py`` (the figures of the DeepSeek-V3 report §3.2.1 and of that repository).
- ``looped_bfs``: torch's ``ScheduleLoopedBFS`` (breadth-first, Lamy-Poirier 2022), every
  forward of each chunk in turn, then the backwards in reverse (``pipeline_schedules_bfs``).
"""

from __future__ import annotations

import functools
from collections import deque
from fractions import Fraction

from trainsim.errors import ConfigError
from trainsim.workload.pipeline_schedules_bfs import looped_bfs
from trainsim.workload.schedule import (
    W_MEMORY_FRACTION,
    Overlapped,
    Pass,
    _passes,
    _warmup_pairs_cooldown,
    interleaved_one_f_one_b,
    one_f_one_b,
)

Step = Pass | Overlapped


def gpipe(stage: int, pp: int, m: int) -> list[Step]:
    """Every forward, then every backward, both in micro-batch order (torch ``ScheduleGPipe``)."""
    return [Pass("F", i, 0) for i in range(m)] + [Pass("B", i, 0) for i in range(m)]


def _delayed_w(order: list[Pass], delay: int) -> list[Step]:
    """Split every backward into I and W; the W of the k-th backward runs right after the
    (k + delay)-th one (torch ``_get_1f1b_rank_ops`` with ``num_1f1b_microbatches = delay``);
    the W passes still pending at the end follow in order."""
    out: list[Step] = []
    pending: deque[Pass] = deque()
    seen = 0
    for p in order:
        if p.kind != "B":
            out.append(p)
            continue
        out.append(Pass("I", p.microbatch, p.chunk))
        pending.append(Pass("W", p.microbatch, p.chunk))
        seen += 1
        if seen > delay:
            out.append(pending.popleft())
    out.extend(pending)
    return out


def _one_f_one_b(stage: int, warmup: int, m: int) -> list[Pass]:
    warmup = min(warmup, m)
    order = [Pass("F", i, 0) for i in range(warmup)]
    for i in range(m - warmup):
        order += [Pass("F", warmup + i, 0), Pass("B", i, 0)]
    return order + [Pass("B", i, 0) for i in range(m - warmup, m)]


def zb_h1(stage: int, pp: int, m: int) -> list[Step]:
    """ZB-H1 (Qi et al. §2.1): 1F1B's warm-up, W delayed by the rank's index."""
    return _delayed_w(_one_f_one_b(stage, pp - stage - 1, m), stage)


def zb_h2(stage: int, pp: int, m: int) -> list[Step]:
    """ZB-H2 (Qi et al. §2.2): 2(p-1-s) warm-up forwards, W delayed by 2s."""
    return _delayed_w(_one_f_one_b(stage, 2 * (pp - stage - 1), m), 2 * stage)


def interleaved_zb(stage: int, pp: int, vpp: int, m: int) -> list[Step]:
    """torch's ``ScheduleInterleavedZeroBubble`` (v2.13.0 schedules.py L3072-L3127, the
    paper's ZB-1P on interleaved stages): ``max(1, m // pp)`` rounds of ``m / rounds``
    micro-batches, each round through the chunks in turn (the interleaved order's groups);
    ``(vpp - 1) m / rounds + (pp - 1 - s)`` warm-up forwards, capped at ``m vpp``
    (``_get_warmup_ops`` with ``multiply_factor=1``, L2872-L2888: one more a hop from the last
    rank where the interleaved 1F1B keeps two); then (F, I) pairs and the I's of the cool-down,
    each W delayed by the rank's index (``_get_1f1b_rank_ops`` with ``enable_zero_bubble`` and
    ``num_1f1b_microbatches = rank``, L2735-L2870). torch refuses an ``m`` that is no multiple
    of its rounds."""
    rounds = max(1, m // pp)
    if m % rounds:
        raise ConfigError(f"parallel.pipeline_schedule=interleaved_zb runs {rounds} rounds of "
                          f"micro-batches at pp={pp} and needs a multiple of them, not {m} "
                          "(torch's ScheduleInterleavedZeroBubble)")
    per_round = m // rounds
    warmup = min((vpp - 1) * per_round + pp - 1 - stage, m * vpp)
    return _delayed_w(_warmup_pairs_cooldown(warmup, *_passes(pp, vpp, m, per_round)), stage)


def zb_v(stage: int, pp: int, m: int) -> list[Step]:
    """ZB-V (Qi et al. §6, Figure 8) as torch's ``ScheduleZBVZeroBubble`` orders it: chunk 0
    is virtual stage ``stage``, chunk 1 is ``2pp - 1 - stage``. Orders are built for at least
    2pp - 1 micro-batches and the passes of missing ones dropped, as torch does."""
    n = max(2 * pp - 1, m)
    r = stage
    out: list[Step] = []
    f, b = [0, 0], [0, 0]

    def fwd(c: int) -> None:
        out.append(Pass("F", f[c], c))
        f[c] += 1

    def i_and_w(c: int) -> None:
        out.extend((Pass("I", b[c], c), Pass("W", b[c], c)))
        b[c] += 1

    for _ in range(2 * (pp - r) - 1):
        fwd(0)
    for _ in range(r):
        fwd(1)
        fwd(0)
    for _ in range(pp - r):
        fwd(1)
        i_and_w(1)
    while f[1] < f[0] or f[0] < n:
        if f[0] < n:
            fwd(0)
        i_and_w(0)
        fwd(1)
        i_and_w(1)
    w = list(b)
    for _ in range(r):
        for c in (0, 1):
            out.append(Pass("I", b[c], c))
            b[c] += 1
    for _ in range(pp - r):
        out.append(Pass("I", b[0], 0))
        b[0] += 1
        out.append(Pass("W", w[0], 0))
        w[0] += 1
    for c in (1, 0):
        out.extend(Pass("W", k, c) for k in range(w[c], b[c]))
    return [p for p in out if p.microbatch < m]


class _Dual:
    """Builds one rank's DualPipe(V) order: per-direction micro-batch counters and the FIFO of
    weight gradients an input-only backward leaves (DualPipe's ``WeightGradStore``)."""

    def __init__(self, first_mb: tuple[int, int], flip: bool) -> None:
        self.out: list[Step] = []
        self.f = list(first_mb)
        self.b = list(first_mb)
        self.flip = flip  # DualPipe's second half of ranks swaps the meaning of the phases
        self.wq: deque[Pass] = deque()

    def _chunk(self, phase: int) -> int:
        return phase ^ self.flip

    def fwd(self, phase: int) -> Pass:
        c = self._chunk(phase)
        p = Pass("F", self.f[c], c)
        self.f[c] += 1
        return p

    def bwd(self, phase: int, zb: bool = False) -> Pass:
        c = self._chunk(phase)
        p = Pass("I" if zb else "B", self.b[c], c)
        if zb:
            self.wq.append(Pass("W", self.b[c], c))
        self.b[c] += 1
        return p

    def add(self, *steps: Step) -> None:
        self.out.extend(steps)

    def weight(self) -> None:
        self.out.append(self.wq.popleft())


def _dual_steps(d: _Dual, n: int, rank: int, last: bool, chunks: int) -> list[Step]:
    """The eight steps of DualPipe's ``step`` for a rank at distance ``rank`` from its end of
    the pipeline, ``n`` ranks in that half (DualPipeV: the whole pipeline), ``chunks``
    micro-batches per direction (DualPipeV: all of them); ``last``: the middle rank, whose
    first steady pair does not overlap."""
    for _ in range((n - rank - 1) * 2):  # 1: nF0
        d.add(d.fwd(0))
    for _ in range(rank + 1):  # 2: nF0F1
        d.add(d.fwd(0), d.fwd(1))
    for _ in range(n - rank - 1):  # 3: nB1W1F1 (zero bubble)
        d.add(d.bwd(1, zb=True))
        d.weight()
        d.add(d.fwd(1))
    for i in range(chunks - 2 * n + rank + 1):  # 4: nF0B1F1B0
        if i == 0 and last:
            d.add(d.fwd(0), d.bwd(1))
        else:
            d.add(Overlapped(d.fwd(0), d.bwd(1)))
        d.add(Overlapped(d.fwd(1), d.bwd(0)))
    for _ in range(n - rank - 1):  # 5: nB1F1B0
        d.add(d.bwd(1))
        d.add(Overlapped(d.fwd(1), d.bwd(0)))
    zb = False
    steps6 = rank + 1
    for i in range(steps6):  # 6: nB1B0, the second half with zero bubble
        if i == steps6 // 2 and rank % 2 == 1:
            zb = True
        d.add(d.bwd(1, zb))
        if i == steps6 // 2 and rank % 2 == 0:
            zb = True
        d.add(d.bwd(0, zb))
    for _ in range(n - rank - 1):  # 7: nWB0 (zero bubble)
        d.weight()
        d.add(d.bwd(0, zb=True))
    for _ in range(rank + 1):  # 8: nW
        d.weight()
    return d.out


def dualpipe(stage: int, pp: int, m: int) -> list[Step]:
    """DualPipe (deepseek-ai/DualPipe ``dualpipe.py``): ``pp`` (even) ranks, m/2 micro-batches
    entering at each end. Chunk 0 is the direction entering at rank 0 (micro-batches 0..m/2-1,
    rank r runs its stage r), chunk 1 the one entering at rank pp-1 (micro-batches m/2..m-1,
    rank r runs its stage pp-1-r)."""
    half = pp // 2
    hr = min(stage, pp - 1 - stage)
    second = stage >= half
    d = _Dual((0, m // 2), second)
    return _dual_steps(d, half, hr, hr == half - 1, m // 2)


def dualpipe_v(stage: int, pp: int, m: int) -> list[Step]:
    """DualPipeV (deepseek-ai/DualPipe ``dualpipev.py``, Sea AI Lab's "cut-in-half"): the model
    in 2pp chunks placed as a V; chunk 0 is virtual stage ``stage``, chunk 1 ``2pp-1-stage``."""
    d = _Dual((0, 0), False)
    return _dual_steps(d, pp, stage, stage == pp - 1, m)


def zb_w_fraction(hidden_size: int, num_heads: int, seq_length: int) -> Fraction:
    """Share of a micro-batch's activations the zero-bubble scheduler counts as held from a
    stage's I pass until its W pass: Qi et al. 2024 Table 1, M_W = 32sbh against M_B =
    sb(34h + 5as), the attention-score term included. The code base's scheduler budgets its
    memory limit with exactly these per-layer figures whatever the attention kernel
    (sail-sg/zero-bubble-pipeline-parallelism, branch ``arxiv``, zb_schedules.py
    ``get_zero_bubble_forward_backward_func``: ``f_mem = 34h + 5as``, ``w_mem = -32h``,
    ``max_mem = limit * f_mem``), so its ZB-2p keeps more forwards in flight than a 32/34
    share (``W_MEMORY_FRACTION``, FlashAttention's) would allow. Exact (a Fraction), as the
    code base counts these in integers."""
    h = hidden_size
    return Fraction(32 * h, 34 * h + 5 * num_heads * seq_length)


@functools.lru_cache(maxsize=1024)
def stage_order(name: str, stage: int, pp: int, vpp: int, m: int) -> tuple[Step, ...]:
    """One rank's order (``zb_2p`` with equal pass times), cached: memory estimates ask for
    the same orders again and again."""
    if name == "zb_2p":
        return _equal_zb_2p(pp, m)[stage]
    return tuple(_ONE_RANK[name](stage, pp, vpp, m))


@functools.lru_cache(maxsize=64)
def _equal_zb_2p(pp: int, m: int) -> tuple[tuple[Step, ...], ...]:
    """Every rank's ``zb_2p`` order with equal pass times: one search serves all ``pp``
    ranks' memory estimates (robust48: each rank ran the whole search again, pp + 1 searches
    an iteration, 8.8 CPU s at pp=4 and 4,096 micro-batches)."""
    return tuple(tuple(order) for order in orders("zb_2p", pp, 1, m))


@functools.lru_cache(maxsize=64)
def equal_zb_2p_peak_orders(pp: int, m: int) -> tuple[tuple[Step, ...], ...]:
    """Every rank's order whose in-flight peak is that of :func:`_equal_zb_2p`'s for ``m``
    micro-batches, in passes independent of ``m``: the same variant's search for ``base =
    from_m + (m - from_m) % rounds`` micro-batches where the search for ``m`` settles from
    ``from_m`` in periods of ``rounds`` (``Searched.settled_from`` / ``settled_rounds``), else
    ``m``'s own orders (nothing proven: the walk).

    Why the peak is the same. ``zb_search.Settled``: the search for ``m`` is the one for
    ``base`` with ``(m - base) / rounds`` copies of rounds ``r + 1`` to ``r + rounds`` inserted
    after them, proven by the builder's state repeating bit for bit (integer times, memory in
    integers). A rank's passes placed within those rounds are a contiguous block of its order,
    so its order for ``m`` is ``A X^(n+1) C`` against ``A X C`` for ``base`` (kinds and chunks;
    only micro-batch numbers differ). The state counts every kind placed relative to the round,
    so ``X`` holds ``rounds`` F, I and W passes of the one chunk: their weights sum to zero
    (F adds w, I frees ``w (1 - W_MEMORY_FRACTION)``, W the rest), every copy of ``X`` starts
    at the live weight ``A`` leaves and reaches the same values, and ``C`` starts there too.
    The peak is the same for any non-negative or negative weight, up to the rounding of the
    running sum, which the walk of ``m``'s order accumulates over the inserted copies."""
    settled_from, rounds = _chosen(*_search_key(pp, m, None, W_MEMORY_FRACTION))[1:]
    if settled_from is None or m < settled_from + rounds:
        return _equal_zb_2p(pp, m)
    base = settled_from + (m - settled_from) % rounds
    return tuple(tuple(order) for order in zb_2p(pp, base, None, m_total=m))


def orders(name: str, pp: int, vpp: int, m: int,
           times: tuple[list[float], list[float], list[float], float] | None = None,
           w_fraction: float = W_MEMORY_FRACTION, m_total: int | None = None
           ) -> list[list[Step]]:
    """Every rank's order under schedule ``name``. ``times`` (per-stage F, I and W seconds and
    the send time) feed ``zb_2p``'s search; without them its passes count as equal (1 s each,
    no send). ``m_total``: the iteration's micro-batches where ``m`` is a truncated run's."""
    if name == "zb_2p":
        return zb_2p(pp, m, times, w_fraction, m_total)
    one = _ONE_RANK[name]
    return [list(one(s, pp, vpp, m)) for s in range(pp)]


_ONE_RANK = {
    "gpipe": lambda s, pp, vpp, m: gpipe(s, pp, m),
    "1f1b": lambda s, pp, vpp, m: one_f_one_b(s, pp, m),
    "interleaved_1f1b": lambda s, pp, vpp, m: interleaved_one_f_one_b(s, pp, vpp, m),
    "zb_h1": lambda s, pp, vpp, m: zb_h1(s, pp, m),
    "zb_h2": lambda s, pp, vpp, m: zb_h2(s, pp, m),
    "zb_v": lambda s, pp, vpp, m: zb_v(s, pp, m),
    "interleaved_zb": lambda s, pp, vpp, m: interleaved_zb(s, pp, vpp, m),
    "dualpipe": lambda s, pp, vpp, m: dualpipe(s, pp, m),
    "dualpipe_v": lambda s, pp, vpp, m: dualpipe_v(s, pp, m),
    "looped_bfs": looped_bfs,
}
"""Schedules whose rank orders are built one rank at a time."""


def virtual_stage(name: str | None, stage: int, chunk: int, pp: int) -> int:
    """The virtual stage a rank's chunk runs: Megatron's ``chunk * pp + stage``; a V puts
    chunk 1 on ``2pp - 1 - stage``; DualPipe's chunk 1 (the reverse direction) runs stage
    ``pp - 1 - stage`` of a pp-stage model."""
    if name in ("zb_v", "dualpipe_v"):
        return stage if chunk == 0 else 2 * pp - 1 - stage
    if name == "dualpipe":
        return stage if chunk == 0 else pp - 1 - stage
    return chunk * pp + stage


def rank_of(name: str | None, v: int, chunk: int, pp: int) -> int:
    """The rank that runs virtual stage ``v`` for a micro-batch of ``chunk``'s direction."""
    if name in ("zb_v", "dualpipe_v"):
        return v if v < pp else 2 * pp - 1 - v
    if name == "dualpipe":
        return v if chunk == 0 else pp - 1 - v
    return v % pp


@functools.lru_cache(maxsize=4096)
def rank_chunks(name: str | None, stage: int, pp: int, vpp: int) -> tuple[int, ...]:
    """The virtual stage of each chunk a rank holds (DualPipe: two copies of pp stages); once
    per process (a search's memory checks ask ~10^5 times)."""
    chunks = 2 if name == "dualpipe" and pp > 1 else vpp
    return tuple(virtual_stage(name, stage, c, pp) for c in range(chunks))


def pass_starts(plan: list[list[Step]], t_f: list[float], t_i: list[float], t_w: list[float],
                comm_s: float) -> tuple[list[list[float]], list[float]]:
    """Each rank's pass start times of a one-chunk plan and when each rank is free at the end,
    each pass starting when its rank is free and its input has arrived (``comm_s`` after the
    neighbour's pass); a rank stops where its next pass waits on one never placed."""
    pp = len(plan)
    end: dict[tuple[str, int, int], float] = {}
    starts: list[list[float]] = [[] for _ in range(pp)]
    free = [0.0] * pp
    cursor = [0] * pp
    progressed = True
    while progressed:
        progressed = False
        for s in range(pp):
            while cursor[s] < len(plan[s]):
                p = plan[s][cursor[s]]
                assert isinstance(p, Pass)
                if p.kind == "F":
                    dep = ("F", p.microbatch, s - 1) if s > 0 else None
                    dur = t_f[s]
                elif p.kind == "W":
                    dep, dur = None, t_w[s]
                else:
                    dep = ("I", p.microbatch, s + 1) if s < pp - 1 else None
                    dur = t_i[s] + (t_w[s] if p.kind == "B" else 0.0)
                if dep is not None and dep not in end:
                    break
                ready = end[dep] + comm_s if dep is not None else 0.0
                start = max(free[s], ready)
                starts[s].append(start)
                free[s] = start + dur
                end[("I" if p.kind in "IB" else p.kind, p.microbatch, s)] = free[s]
                cursor[s] += 1
                progressed = True
    return starts, free


def stage_span_s(plan: list[list[Step]], t_f: list[float], t_i: list[float], t_w: list[float],
                 comm_s: float) -> float:
    """The longest stage's execution time (its first pass's start to its last pass's end) of
    a one-chunk plan (:func:`pass_starts`): the cost by which Qi et al. §5.3 score a schedule
    and from which their bubble rates are computed."""
    starts, free = pass_starts(plan, t_f, t_i, t_w, comm_s)
    return max(f - (x[0] if x else 0.0) for f, x in zip(free, starts))


class Searched(list):
    """``zb_2p``'s orders, from how many micro-batches on its searches are one another with
    periods inserted (``zb_search.choose``; None where not proven), and the micro-batches of
    that period (``settled_rounds``)."""

    settled_from: int | None = None
    settled_rounds: int = 1


def to_microseconds(t_s: float) -> int:
    """A time as the code base feeds its search: truncated to whole microseconds (its
    ``ScheduleTimers.conclusion``, ``int(elapsed / count * 1000000)``), at least 1 (its
    ``update_schedule`` passes ``max(c, 1)``: sail-sg/zero-bubble-pipeline-parallelism@0a01bcb7
    megatron/core/pipeline_parallel/zb_schedules.py)."""
    return max(int(t_s * 1e6), 1)


def zb_2p(pp: int, m: int, times: tuple[list[float], list[float], list[float], float] | None,
          w_fraction: float = W_MEMORY_FRACTION, m_total: int | None = None
          ) -> list[list[Step]]:
    """ZB-2p: the zero-bubble code base's search (``zb_search.search``, its
    auto_schedule.py ``initial_solution``) at a 2p M_B activation limit, fed the upper medians
    of the stages' F, I and W times and the send time as its runtime feeds it, a pending W
    counted as ``w_fraction`` of a micro-batch (``zb_w_fraction``). With the paper's profiled
    pass times it gives the paper's ZB-2p bubble rates (tests/test_pipeline_schedules.py).
    The times are fed in whole microseconds as the code base feeds them (:func:`to_microseconds`)
    and the memory counted exactly (``w_fraction`` a Fraction): the search's ties fall as the
    code base's do, and a search that settles into a period does so bit for bit
    (``zb_settle.settle``), so the variant kept for an iteration of ``m_total`` micro-batches
    (``m`` by default) is found without searching all of them, and a truncated run's orders
    (``m`` < ``m_total``) are that variant's, the iteration's with rounds taken out
    (``Searched.settled_from``)."""
    from trainsim.workload.zb_search import build_order

    key = _search_key(pp, m_total or m, times, w_fraction)
    variant, out_from, rounds = _chosen(*key)
    out = Searched(build_order(pp, m, key[2], key[3], 2.0 * pp, key[4], variant)[0])
    out.settled_from, out.settled_rounds = out_from, rounds
    return out


def zb_2p_settled_from(pp: int, m_total: int,
                       times: tuple[list[float], list[float], list[float], float],
                       w_fraction: float = W_MEMORY_FRACTION) -> tuple[int | None, int]:
    """``Searched.settled_from`` and ``settled_rounds`` of :func:`zb_2p`'s orders for an
    iteration of ``m_total`` micro-batches, from the priced pass times alone: the variant's
    choice (``_chosen``, cached, the one every truncated run's orders then take), no order
    built."""
    return _chosen(*_search_key(pp, m_total, times, w_fraction))[1:]


def _search_key(pp: int, m_total: int,
                times: tuple[list[float], list[float], list[float], float] | None,
                w_fraction: float) -> tuple:
    """:func:`_chosen`'s arguments: the upper medians of the pass times and the send in whole
    microseconds (equal passes, no send, without ``times``: every comparison scales, 1 unit
    each), the W memory share as an exact fraction."""
    from trainsim.workload.zb_search import upper_median

    if times is None:
        cost, comm_us = (1, 1, 1), 0
    else:
        cost = tuple(to_microseconds(upper_median(t)) for t in times[:3])
        comm_us = to_microseconds(times[3])
    wf = Fraction(w_fraction).limit_denominator(10**9)  # 32/34 as a float -> 16/17
    return pp, m_total, cost, comm_us, wf


@functools.lru_cache(maxsize=256)
def _chosen(pp: int, m: int, cost: tuple, comm: int, w_fraction: Fraction) -> tuple:
    """``zb_search.choose`` at a 2p M_B limit, cached: a shortcut's truncated runs ask again."""
    from trainsim.workload.zb_search import choose
    return choose(pp, m, cost, comm, 2.0 * pp, w_fraction)
