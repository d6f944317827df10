"""ZB-1p / ZB-2p orders: the greedy construction of Qi et al., "Zero Bubble Pipeline
Parallelism" (ICLR 2024, §3.1), run as the paper's own runtime runs it.

The idea. Splitting a backward into I (the gradient for the layer's input, which the previous
stage waits for) and W (the gradient for the weights, needed only by the optimizer step) lets a
stage run W whenever it would otherwise wait for a neighbour. Under a cap on the activations a
stage may hold, the schedule is built one micro-batch at a time:

1. warm-up: every stage runs micro-batch 0's forward; then, last stage first, each stage runs
   as many more forwards as fit (under the cap) before micro-batch 0's input gradient reaches
   it, fewer than the stage before it, and then that gradient's I pass;
2. a steady round per further micro-batch: the forwards, stage 0 first, then the I passes,
   last stage first. Before each pass a stage runs the W passes it needs to get under the cap,
   and W passes that fit into its wait for the neighbour's output;
3. drain: each stage's remaining W passes.

Three yes/no choices (``Variant``) shape the heuristic; all eight are built and the one whose
longest stage span (first forward's start to last W's end) is shortest is kept.

Reference for behaviour, cited not copied: sail-sg/zero-bubble-pipeline-parallelism, branch
``arxiv`` (f68d3879, the code of the paper's runs), megatron/core/pipeline_parallel/
auto_schedule.py ``Graph.manual_order`` (one variant) and ``initial_solution`` (the best of
eight). ``auto_schedule`` runs only that search (its ILP is disabled: ``if graph.nnodes < 0``),
fed by zb_schedules.py ``update_schedule`` one F, B and W time for all stages (the upper
medians over ranks, ``upper_median``) and the measured send time. Its ``ilp_results`` orders
each stage's passes by planned start, which is the order they are placed in here.

Memory counts in micro-batches of activations: a forward adds 1, its I frees all but the
``w_fraction`` its W still needs, and the W frees the rest (the code base's ``f_mem = 34h +
5as``, ``w_mem = -32h``: ``pipeline_schedules.zb_w_fraction``); the cap is ``limit``
micro-batches (its ``max_mem = mem * f_mem``, mem = p for ZB-1p, 2p for ZB-2p).

Times are floats in the caller's unit (seconds in trainsim, ms in the paper's profile),
compared exactly. The code base compares integers: ``update_schedule`` truncates each time to
whole microseconds (at least 1), so its sums are exact and exact ties are common (equal waits,
equal spans of two variants), and ``<=`` settles them; in floats the same sums round, and such
a tie falls by an ulp either way. This does change the orders: fed the paper's profile
(benchmarks/zero_bubble_profile.csv) as integer microseconds instead of float ms, single
variants' orders differ in 23 of the 24 settings and the chosen order in 19 (the chosen
variant in 5), yet the chosen order's span, counted exactly in microseconds, is the same in
all 24, so the bubble rates are too (tests/test_pipeline_schedules.py checks them from the
float times). On trainsim's own pass times, quantizing zb_2p's inputs to whole microseconds
moves 6 of benchmarks/zero_bubble.py's 12 ZB-2p speed-ups by 0.2-0.4 points (either way; the
table's max 3.1 -> 3.3 points off). Since ss50, trainsim feeds it as the code base does
(``pipeline_schedules.zb_2p``: whole microseconds, memory counted exactly): its ties fall as
the code base's do, and a search that settles into a period repeats bit for bit
(``zb_settle.settle``), which proves the order for any longer iteration without searching it (the
periodic steady state, ``steady_state``). Fed the simulated pass times that moves 7 of
benchmarks/zero_bubble.py's 12 ZB-2p speed-ups by 0.05-0.33 points (max ZB-2p miss 2.94 ->
2.91 points). Float times still work here, searched as before (the paper-profile test's).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from itertools import product

from trainsim.limits import check_zb_search, zb_first_probe, zb_search_positions
from trainsim.workload.schedule import Pass

_new_pass = tuple.__new__
"""``Pass(kind, microbatch, chunk)`` without the named tuple's argument parsing (the search
makes one a placed pass: 3M at pp 16 x 4,096 micro-batches)."""

EPS = 1e-9
"""Slack on memory comparisons: the code base counts memory in integers, this module in
fractions of a micro-batch, whose sums round."""


@dataclass(frozen=True)
class Variant:
    """The three choices of the heuristic (the code base's flag for each in brackets)."""

    idle_before_first_backward: bool
    """Warm-up: a stage stops adding forwards once the next would end after micro-batch 0's
    input gradient arrives, accepting idle time; otherwise it adds them while it is still busy
    before the arrival, so the last may delay that gradient (``allow_bubble_before_first_b``)."""
    backward_first: bool
    """Steady rounds: a stage two or more forwards ahead of its successor skips its forward
    when the forward would delay the successor's next input gradient and the wait for it is
    affordable (``prioritize_b``)."""
    fill_short_waits: bool
    """A wait for a neighbour that the stage can afford as idle time (see ``bubble_budget``)
    also gets a W; a longer wait always does (``no_bubble_greedy``)."""


VARIANTS = tuple(Variant(*choice) for choice in product((True, False), repeat=3))
"""All eight, in the order the code base tries them (equal spans go to the first)."""


class _Builder:
    """Places one variant's passes, tracking per stage how many of each kind it has run, when
    it is next free, the activations it holds, its idle time since its first forward, and its
    order."""

    def __init__(self, pp: int, m: int, cost: tuple[float, float, float], comm: float,
                 limit: float, w_fraction: float, variant: Variant) -> None:
        self.pp, self.m, self.comm, self.limit, self.variant = pp, m, comm, limit, variant
        self.duration = dict(zip("FIW", cost))
        if isinstance(w_fraction, Fraction) and float(limit).is_integer():
            # counted exactly in 1 / denominator of a micro-batch, as the code base counts
            # memory in integers (f_mem = 34h + 5as, w_mem = -32h): a state that repeats
            # repeats bit for bit (``settle``); the float sums' EPS slack decides the same
            # wherever the denominator is under 1e9
            unit, w = w_fraction.denominator, w_fraction.numerator
            self.memory_change = {"F": unit, "I": -(unit - w), "W": -w}
            self.limit, self.unit = int(limit) * unit, unit
        else:
            self.memory_change = {"F": 1.0, "I": -(1.0 - w_fraction), "W": -w_fraction}
            self.unit = 1
        self.placed = [dict.fromkeys("FIW", 0) for _ in range(pp)]
        self.free_at = [0.0] * pp
        self.held = [0] * pp
        self.idle = [0.0] * pp
        # when each pass ends, per kind, stage and micro-batch (0 until placed): lists, not a
        # dict of tuples (robust49: the search placed 3M passes at pp 16 x 4,096, 16 CPU s)
        self.end = {kind: [[0.0] * m for _ in range(pp)] for kind in "FIW"}
        self.orders: list[list[Pass]] = [[] for _ in range(pp)]

    # ---------------------------------------------------------------- state

    def finished(self, kind: str, stage: int, microbatch: int) -> float:
        """When a pass ends; 0 for one not placed yet. The code base reads a zero-filled table
        the same way, which matters once: in the warm-up a stage's extra forwards are placed
        before the previous stage's, so only the stage's own chain of forwards times them."""
        return self.end[kind][stage][microbatch] if 0 <= microbatch < self.m else 0.0

    def pending_w(self, stage: int) -> bool:
        return self.placed[stage]["W"] < self.placed[stage]["I"]

    def bubble_budget(self, stage: int) -> float:
        """Idle time a stage can still take without idling longer than the idlest stage so far;
        the heuristic treats a wait within it as free (the span is set by the idlest stage)."""
        return max(self.idle) - self.idle[stage]

    # ---------------------------------------------------------------- placing

    def place(self, stage: int, kind: str) -> None:
        """Run the stage's next pass of ``kind``: it starts when the stage is free and its input
        has arrived; any wait after the stage's first forward counts as idle time."""
        change = self.memory_change[kind]
        if not self.held[stage] + change <= self.limit + EPS:  # fits the cap (the hot path)
            # The code base asserts this. It holds by construction for a cap of at least one
            # micro-batch: forwards are placed only after make_room or under the warm-up's own
            # cap check, and I and W free memory; a cap under 1 trips it at the first forward.
            raise ValueError(f"zero-bubble search: stage {stage} would hold "
                             f"{(self.held[stage] + change) / self.unit:.3f} micro-batches, "
                             f"over its limit of {self.limit / self.unit}")
        placed = self.placed[stage]
        microbatch = placed[kind]
        duration = self.duration[kind]
        unhindered_end = self.free_at[stage] + duration
        end = unhindered_end
        # a forward's input comes from the stage before, an I's from the one after (a W's is
        # its own stage's I, which ran before it)
        if kind == "F" and stage > 0:
            ready = self.end["F"][stage - 1][microbatch] + self.comm + duration
            end = ready if ready > end else end  # noqa: FURB136 - max() is a call
        elif kind == "I" and stage < self.pp - 1:
            ready = self.end["I"][stage + 1][microbatch] + self.comm + duration
            end = ready if ready > end else end  # noqa: FURB136 - max() is a call
        if placed["F"] > 0:
            self.idle[stage] += end - unhindered_end
        self.free_at[stage] = self.end[kind][stage][microbatch] = end
        self.held[stage] += change
        self.orders[stage].append(_new_pass(Pass, (kind, microbatch, 0)))
        placed[kind] += 1

    def make_room(self, stage: int, kind: str) -> None:
        """Run W passes until the next pass of ``kind`` fits under the cap."""
        change, cap, placed = self.memory_change[kind], self.limit + EPS, self.placed[stage]
        while not self.held[stage] + change <= cap:  # until it fits the cap
            if not placed["W"] < placed["I"]:  # pending_w()
                raise ValueError("zero-bubble search: cannot fit the memory limit")
            self.place(stage, "W")

    def fill_wait_with_w(self, stage: int, arrival: float) -> None:
        """Before a pass whose input arrives at ``arrival``: W passes while each ends by then;
        if the stage would still wait, one more W (ending a little after the arrival), unless
        the wait fits the bubble budget and the variant leaves such waits idle."""
        placed, w = self.placed[stage], self.duration["W"]
        while placed["W"] < placed["I"] and self.free_at[stage] + w <= arrival:  # pending_w()
            self.place(stage, "W")
        if placed["W"] < placed["I"] and self.free_at[stage] < arrival:
            affordable = arrival - self.free_at[stage] <= self.bubble_budget(stage)
            if not affordable or self.variant.fill_short_waits:
                self.place(stage, "W")

    def drain_w(self, stage: int) -> None:
        while self.pending_w(stage):
            self.place(stage, "W")

    def shorten(self, m: int) -> None:
        """Run on as the search for ``m`` micro-batches (fewer than built for): the same
        search while no stage has placed more than ``m - 2`` forwards, the count read only
        through ``self.m`` (the ends' lists stay longer; no pass past ``m`` is placed)."""
        assert max(placed["F"] for placed in self.placed) <= m - 2 <= self.m - 2
        self.m = m

    # ---------------------------------------------------------------- warm-up

    def warm_up(self) -> None:
        """Micro-batch 0 through the pipeline and back, with the extra forwards each stage
        runs before its first I."""
        for stage in range(self.pp):
            self.place(stage, "F")
        extra = self.staggered(self.forwards_before_first_backward())
        for stage in reversed(range(self.pp)):
            for _ in range(extra[stage]):
                self.place(stage, "F")
            self.place(stage, "I")

    def forwards_before_first_backward(self) -> list[int]:
        """How many more forwards each stage can run before micro-batch 0's input gradient
        reaches it, estimated last stage first: that gradient leaves a stage when its I ends,
        one I after the later of the stage's forwards and the gradient's arrival."""
        extra = [0] * self.pp
        gradient_sent = self.finished("F", self.pp - 1, 0) + self.duration["I"]
        for stage in range(self.pp - 2, -1, -1):
            arrival = gradient_sent + self.comm
            held, busy_until = self.held[stage], self.free_at[stage]
            while (self.placed[stage]["F"] + extra[stage] < self.m
                   and held + self.memory_change["F"] <= self.limit + EPS):
                if self.variant.idle_before_first_backward:
                    if busy_until + self.duration["F"] > arrival:
                        break
                elif busy_until >= arrival:
                    break
                held += self.memory_change["F"]
                busy_until += self.duration["F"]
                extra[stage] += 1
            gradient_sent = max(busy_until, arrival) + self.duration["I"]
        return extra

    def staggered(self, extra: list[int]) -> list[int]:
        """Each stage runs fewer warm-up forwards than the one before it, unless trimming would
        stop it short of running every remaining micro-batch."""
        extra = list(extra)
        for stage in range(1, self.pp):
            while (extra[stage] > 0 and extra[stage] >= extra[stage - 1]
                   and self.placed[stage]["F"] + extra[stage] < self.m):
                extra[stage] -= 1
        return extra

    # ---------------------------------------------------------------- steady rounds

    def steady_round(self, microbatch: int) -> None:
        """One forward per stage that wants one (and whose later stages all do), then the I
        passes of ``microbatch`` from the last stage back."""
        runs_forward = [self.wants_forward(stage) for stage in range(self.pp)]
        for stage in range(self.pp - 2, -1, -1):
            runs_forward[stage] = runs_forward[stage] and runs_forward[stage + 1]
        for stage in range(self.pp):
            if runs_forward[stage]:
                self.make_room(stage, "F")
                if stage > 0:
                    next_forward = self.placed[stage]["F"]
                    self.fill_wait_with_w(stage, self.end["F"][stage - 1][next_forward]
                                          + self.comm)
                self.place(stage, "F")
        for stage in reversed(range(self.pp)):
            self.make_room(stage, "I")
            if stage < self.pp - 1:
                self.fill_wait_with_w(stage, self.end["I"][stage + 1][microbatch]
                                      + self.comm)
            if stage == 0 and self.placed[stage]["F"] == self.m:
                self.drain_w(stage)
            self.place(stage, "I")

    def wants_forward(self, stage: int) -> bool:
        """Whether a stage runs a forward this round. With ``backward_first``, a stage two or
        more forwards ahead of its successor holds its forward back when the successor's next
        gradient is due before the forward (and any W needed to make room for it) would end,
        and waiting for that gradient is within its bubble budget."""
        if self.placed[stage]["F"] >= self.m:
            return False
        if not (self.variant.backward_first and stage + 1 < self.pp
                and self.placed[stage]["F"] >= self.placed[stage + 1]["F"] + 2):
            return True
        # earliest the successor's next gradient arrives: after its own forward and I
        gradient_due = (self.free_at[stage + 1] + self.duration["F"] + self.duration["I"]
                        + self.comm)
        if self.free_at[stage] >= gradient_due:
            return False
        if self.free_at[stage] + self.duration["F"] + self.w_time_to_fit_forward(stage) \
                <= gradient_due:
            return True
        return gradient_due - self.free_at[stage] > self.bubble_budget(stage)

    def w_time_to_fit_forward(self, stage: int) -> float:
        """Time of the W passes the stage would run before its next forward fits the cap."""
        time, waiting, held = 0, 0, self.held[stage] + self.memory_change["F"]
        while (held > self.limit + EPS
               and self.placed[stage]["W"] + waiting < self.placed[stage]["I"]):
            time += self.duration["W"]
            held += self.memory_change["W"]
            waiting += 1
        return time

    # ---------------------------------------------------------------- result

    def span(self) -> float:
        """The longest stage's first forward's start to its last W's end."""
        return max(self.finished("W", stage, self.m - 1) - self.finished("F", stage, 0)
                   + self.duration["F"] for stage in range(self.pp))


def build_order(pp: int, m: int, cost: tuple[float, float, float], comm: float, limit: float,
                w_fraction: float, variant: Variant) -> tuple[list[list[Pass]], float]:
    """One variant's per-stage orders of F, I and W passes and its longest stage span, for
    ``pp`` stages and ``m`` micro-batches with pass times ``cost`` (F, I, W), send time
    ``comm`` and a cap of ``limit`` micro-batches of activations."""
    kept = _KEPT.pop((pp, m, cost, comm, limit, w_fraction, variant), None)
    if kept is not None:
        return kept
    builder = _Builder(pp, m, cost, comm, limit, w_fraction, variant)
    builder.warm_up()
    for microbatch in range(1, m):
        builder.steady_round(microbatch)
    for stage in range(pp):
        builder.drain_w(stage)
    return builder.orders, builder.span()


_KEPT: dict[tuple, tuple[list[list[Pass]], float]] = {}
"""The orders and span of the variant :func:`choose` kept, where it built them for the whole
``m`` (a variant that does not settle at a probe), by :func:`build_order`'s arguments: taken
(removed) by the first :func:`build_order` asked for them (``pipeline_schedules.zb_2p``, right
after its choice), in place of a second build (speed63: 0.5 CPU s of PP64 x 2,048's first
call). At most two kept (an iteration's two searches: the pipeline's and the memory
estimate's)."""


def _keep(key: tuple, orders: list[list[Pass]], span: float) -> None:
    while len(_KEPT) >= 2:
        del _KEPT[next(iter(_KEPT))]
    _KEPT[key] = orders, span


def search(pp: int, m: int, cost: tuple[float, float, float], comm: float, limit: float,
           w_fraction: float) -> list[list[Pass]]:
    """The orders of the variant with the shortest span (the first tried among equals)."""
    built = (build_order(pp, m, cost, comm, limit, w_fraction, v) for v in VARIANTS)
    orders, _ = min(built, key=lambda result: result[1])
    return orders


def _state(b: _Builder, r: int) -> tuple:
    """The builder's state after round ``r`` (micro-batch ``r``'s I passes placed) as the
    rounds after it read it, every count less ``r``, every time less stage 0's next free
    moment, every idle time less stage 0's: per stage what it has placed, when it is free, what
    it holds, its idle time, and the ends of the forwards its predecessor ran that it has not
    (it reads them as its next forwards' inputs); and that reference. Two rounds with equal
    states run alike, the later ``P`` later (times are compared, never read absolutely: the
    ends of the passes not placed yet, 0, are read in the warm-up alone, where every stage
    waits on an unplaced forward's input)."""
    ref, idle0 = b.free_at[0], b.idle[0]
    ends, free_at, held, idle = b.end["F"], b.free_at, b.held, b.idle
    per_stage, ahead = [], 0
    for s, placed in enumerate(b.placed):
        f, window = placed["F"], ()
        if s:
            if ahead < f:
                return (None, ref)  # a stage ahead of its predecessor: not steady
            if ahead > f:
                window = tuple([e - ref for e in ends[s - 1][f:ahead]])
        per_stage.append((f - r, placed["I"] - r, placed["W"] - r, free_at[s] - ref, held[s],
                          idle[s] - idle0, window))
        ahead = f
    return tuple(per_stage), ref


@dataclass(frozen=True)
class Settled:
    """A variant's search settled into a period: after round ``r`` every further ``rounds``
    rounds run as the ``rounds`` before them, ``period`` later, placing ``rounds`` more of each
    pass on every stage, in every search of at least ``from_m`` micro-batches (none of its
    checks of the micro-batch count binds up to round ``r + rounds`` there). So the search for
    ``m`` is the one for ``from_m + j`` (``j = (m - from_m) % rounds``) with ``(m - from_m) //
    rounds`` copies of rounds ``r + 1`` to ``r + rounds`` inserted after it, every later
    micro-batch ``rounds`` on and every later time ``period`` later: where ``j`` is 0 its span
    is ``span_from`` (the span for ``from_m``) plus ``(m - from_m) / rounds`` periods. Most
    searches settle into a period of one round; some into two, four or eight (their state
    alternates: 18 of tests/test_steady_zb2p.py's 200 random configs' chosen variants, RESULTS.md
    settle56), whose searches a period of one round never proves."""

    r: int
    from_m: int
    period: float
    span_from: float
    rounds: int = 1


def _repeat(b: _Builder, microbatch: int, seen: dict) -> tuple | None:
    """After round ``microbatch``: (the earlier round after which the builder's state
    (:func:`_state`) was this one, the time between them, the rounds between them, the least
    count from which it holds), recording the state in ``seen``; None where it is new (or not
    steady)."""
    key, ref = _state(b, microbatch)
    if key is None:
        return None
    earlier = seen.setdefault(key, (microbatch, ref))
    if earlier[0] == microbatch:
        return None
    return (earlier[0], ref - earlier[1], microbatch - earlier[0],
            max(placed["F"] for placed in b.placed) + 2)


def settled_span(settled: Settled, m: int, pp: int, cost: tuple[float, float, float],
                 comm: float, limit: float, w_fraction: float, variant: Variant
                 ) -> tuple[float, int]:
    """The span of ``variant``'s search for ``m`` >= ``settled.from_m`` micro-batches from its
    settled period, and the count of the shorter search built for it (0 where none: ``m`` is
    ``from_m`` plus whole periods; else the one for ``from_m + j``, ``Settled``)."""
    j = (m - settled.from_m) % settled.rounds
    base, span = settled.from_m + j, settled.span_from
    if j:
        span = build_order(pp, base, cost, comm, limit, w_fraction, variant)[1]
    return span + (m - base) // settled.rounds * settled.period, base if j else 0


def _probed(pp: int, m: int, cost: tuple[int, int, int], comm: int, limit: float,
            w_fraction: Fraction, variant: Variant, placed: float, built: dict
            ) -> tuple[float, int | None, int, float]:
    """What :func:`choose`'s doubling probes and, where none settles, its watched search of
    ``m`` (``zb_settle.settle_at``) give for one variant, on one search: its span for ``m``, the
    least count from which its searches settle (None where none), the rounds of the period,
    and ``placed`` with the probes counted (the same increments, checked in the same order);
    where it built the whole search of ``m``, its orders go into ``built`` by variant.

    Why one search serves them all. A search for ``q`` micro-batches runs as the one for ``m``
    > ``q`` while no stage has placed more than ``q - 2`` forwards (the count is read only by
    the warm-up's and the rounds' tests against it, ``finished``, stage 0's drain and the
    span), and ``zb_settle.settle`` stops watching the probe ``q`` exactly when that binds. So the
    search for ``m`` watched round by round is every probe's: a probe fails when its count
    could bind before the first repeat of a state (the next probe is counted and watched on),
    and the first probe that sees the repeat (``from_m <= q``) is finished as ``q``'s own
    search (``_Builder.shorten``) for its span, as ``zb_settle.settle`` finishes it. Where every
    probe failed, the search for ``m`` runs on, as ``zb_settle.settle_at``. The probes that failed
    are not rebuilt from scratch (speed63: PP64 x 2,048 zb_2p's four variants that do not
    settle ran probes of 520 and 1,040 micro-batches before their search of 2,048)."""
    first = zb_first_probe(pp)
    probes = []
    q = first
    while q < m:
        probes.append(q)
        q *= 2
    k = 0  # the probe watched: probes[k]; every one failed once k is len(probes)

    def failed() -> None:  # the watched probe did not settle: count the next, or m
        nonlocal k, placed
        k += 1
        placed += (probes[k] if k < len(probes) else m) * pp
        check_zb_search(placed, pp, m)

    b = _Builder(pp, m, cost, comm, limit, w_fraction, variant)
    b.warm_up()
    seen: dict[tuple, tuple[int, float]] = {}
    found, watching = None, True
    for microbatch in range(1, m):
        b.steady_round(microbatch)
        if not watching:
            continue
        top = max(done["F"] for done in b.placed)
        # a probe fails where its count could bind, or its rounds ended, before a repeat
        while k < len(probes) and (top > probes[k] - 2 or microbatch >= probes[k]):
            failed()
        if top > m - 2:
            watching = False
            continue
        found = _repeat(b, microbatch, seen)
        if found is None:
            continue
        watching = False
        if not found[1] > 0:
            found = None  # no probe settles on it, nor the search of m
        elif k < len(probes):  # the probe probes[k] settles: finished as its own search
            probe, (r, period, rounds, from_m) = probes[k], found
            b.shorten(probe)
            for later in range(microbatch + 1, probe):
                b.steady_round(later)
            for stage in range(pp):
                b.drain_w(stage)
            if (probe - from_m) % rounds:
                span_from = build_order(pp, from_m, cost, comm, limit, w_fraction, variant)[1]
            else:
                span_from = b.span() - (probe - from_m) // rounds * period
            settled = Settled(r, from_m, period, span_from, rounds)
            if rounds > 1:  # shorter searches built for it
                placed += (2 * probe + rounds) * pp
                check_zb_search(placed, pp, m)
            span, _ = settled_span(settled, m, pp, cost, comm, limit, w_fraction, variant)
            return span, from_m, rounds, placed
    while k < len(probes):
        failed()
    if not probes and m >= first:
        placed += m * pp
        check_zb_search(placed, pp, m)
    for stage in range(pp):
        b.drain_w(stage)
    built[variant] = b.orders
    if found is None:
        return b.span(), None, 1, placed
    return b.span(), found[3], found[2], placed


def choose(pp: int, m: int, cost: tuple[float, float, float], comm: float, limit: float,
           w_fraction: float) -> tuple[Variant, int | None, int]:
    """The variant :func:`search` keeps for ``m`` micro-batches (the shortest span, the first
    among equals), with its spans worked out from ``zb_settle.settle`` where the search settles, the
    least micro-batch count from which that variant's searches are one another with periods
    inserted (None where it does not settle: then only ``m`` itself is its search), and the
    rounds (micro-batches) of its period (1 where it does not settle). Each variant's probes
    and its search of ``m`` run as one search (:func:`_probed`)."""
    best: tuple[float, Variant, int | None, int] | None = None
    exact = isinstance(w_fraction, Fraction) and all(isinstance(x, int) for x in (*cost, comm))
    placed = zb_search_positions(pp, m, 0)  # its probes: counted by limits.check_simulation
    built: dict[Variant, list[list[Pass]]] = {}
    for variant in VARIANTS:
        if exact:
            span, from_m, rounds, placed = _probed(pp, m, cost, comm, limit, w_fraction,
                                                   variant, placed, built)
        else:
            if m >= zb_first_probe(pp):  # counted where it would settle: it did not
                placed += m * pp
                check_zb_search(placed, pp, m)
            span, from_m, rounds = (build_order(pp, m, cost, comm, limit, w_fraction,
                                                variant)[1], None, 1)
        if best is None or span < best[0]:
            best = span, variant, from_m, rounds
            built = {variant: built[variant]} if variant in built else {}
        else:
            built.pop(variant, None)
    assert best is not None
    if best[1] in built:
        _keep((pp, m, cost, comm, limit, w_fraction, best[1]), built[best[1]], best[0])
    return best[1], best[2], best[3]


def upper_median(xs: list[float]) -> float:
    """The value the code base's ``update_schedule`` feeds the search for a pass time measured
    on every rank: ``sorted(x)[len(x) // 2]``."""
    return sorted(xs)[len(xs) // 2]
