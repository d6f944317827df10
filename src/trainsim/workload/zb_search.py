"""The zero-bubble code base's schedule search, as its runtime builds ZB-1p / ZB-2p orders.

Ported from sail-sg/zero-bubble-pipeline-parallelism, branch ``arxiv`` ("for arxiv paper",
2023-11-29, the code the paper's runs used), megatron/core/pipeline_parallel/auto_schedule.py:
``Graph.manual_order`` (the §3.1 heuristic) and ``initial_solution`` (the best of its eight
flag combinations by the longest stage's span). ``auto_schedule`` runs only this (its ILP is
disabled: ``if graph.nnodes < 0``), and zb_schedules.py ``update_schedule`` feeds it one F,
B and W time for all stages, the upper medians over ranks, and the measured send time;
``ilp_results`` then orders each stage's passes by their planned start, which is the order
``manual_order`` places them in. Memory counts in micro-batches: an F adds 1, a B frees
1 - ``w_fraction`` and its W the rest (the code base's ``f_mem = 34h + 5as``,
``w_mem = -32h``: ``pipeline_schedules.zb_w_fraction``); the limit is ``limit`` micro-batches
(``max_mem = mem * f_mem``, mem = p or 2p for ZB-1p and ZB-2p).
"""

from __future__ import annotations

from trainsim.workload.schedule import Pass

EPS = 1e-9
"""Slack on memory comparisons: the code base counts in integers, this port in fractions."""


def manual_order(pp: int, m: int, cost: tuple[float, float, float], comm: float, limit: float,
                 w_fraction: float, allow_bubble_before_first_b: bool, prioritize_b: bool,
                 no_bubble_greedy: bool) -> tuple[list[list[Pass]], float]:
    """One flag combination of ``Graph.manual_order``: every stage's order and the longest
    stage's span (first F's start to last W's end)."""
    mem_of = (1.0, -(1.0 - w_fraction), -w_fraction)
    f, b, w = [0] * pp, [0] * pp, [0] * pp
    e = [0.0] * pp
    mem = [0.0] * pp
    bubble = [0.0] * pp
    t: dict[tuple[int, int, int], float] = {}
    order: list[list[Pass]] = [[] for _ in range(pp)]
    count = (f, b, w)

    def max_bubble() -> float:
        return max(bubble)

    def put(j: int, k: int) -> None:
        i = count[k][j]
        tmp = e[j] + cost[k]
        no_bubble = tmp
        # a pass not placed yet reads 0, as in the code base's zero-filled list (in the first
        # micro-batch's warm-up stage j's extra forwards go in before stage j - 1's; the F
        # chain's own delay keeps them after their inputs, which the code base asserts)
        if j > 0 and k == 0:
            tmp = max(tmp, t.get((0, j - 1, i), 0.0) + comm + cost[k])
        if j < pp - 1 and k == 1:
            tmp = max(tmp, t.get((1, j + 1, i), 0.0) + comm + cost[k])
        if f[j] > 0:
            bubble[j] += tmp - no_bubble
        e[j] = t[k, j, i] = tmp
        mem[j] += mem_of[k]
        order[j].append(Pass("FIW"[k], i, 0))
        count[k][j] += 1

    def fill_w_before(j: int, ready: float) -> None:
        """W passes while they fit before the input at ``ready`` arrives, and one more to
        cover the wait unless the wait is within the largest bubble so far."""
        while w[j] < b[j] and e[j] + cost[2] <= ready:
            put(j, 2)
        if w[j] < b[j] and e[j] < ready:
            if ready - e[j] <= max_bubble() - bubble[j]:
                if no_bubble_greedy:
                    put(j, 2)
            else:
                put(j, 2)

    def free_for(j: int, k: int) -> None:
        while mem[j] + mem_of[k] > limit + EPS:
            if w[j] >= b[j]:
                raise ValueError("zero-bubble search: cannot fit the memory limit")
            put(j, 2)

    for i in range(m):
        if i == 0:
            for j in range(pp):
                put(j, 0)
            need = [0] * pp
            last_t = 0.0
            for j in range(pp - 1, -1, -1):
                if j == pp - 1:
                    last_t = t[0, j, i] + cost[1]
                    continue
                held, busy = mem[j], e[j]
                while f[j] + need[j] < m and held + mem_of[0] <= limit + EPS:
                    if allow_bubble_before_first_b:
                        if busy + cost[0] > last_t + comm:
                            break
                    elif busy >= last_t + comm:
                        break
                    held += mem_of[0]
                    busy += cost[0]
                    need[j] += 1
                last_t = max(busy, last_t + comm) + cost[1]
            for j in range(pp):
                while j > 0 and 0 < need[j] and need[j] >= need[j - 1] and f[j] + need[j] < m:
                    need[j] -= 1
            for j in range(pp - 1, -1, -1):
                for _ in range(need[j]):
                    put(j, 0)
                put(j, 1)
            continue
        need = [0] * pp
        for j in range(pp):
            if f[j] >= m:
                continue
            if j + 1 < pp and f[j] >= f[j + 1] + 2 and prioritize_b:
                next_plus_fw = e[j + 1] + cost[0] + cost[1] + comm
                if e[j] >= next_plus_fw:
                    continue
                w_cost, w_cnt, with_w = 0.0, 0, mem[j] + mem_of[0]
                while with_w > limit + EPS and w[j] + w_cnt < b[j]:
                    w_cost += cost[2]
                    with_w += mem_of[2]
                    w_cnt += 1
                if e[j] + cost[0] + w_cost <= next_plus_fw:
                    need[j] = 1
                    continue
                if next_plus_fw - e[j] <= max_bubble() - bubble[j]:
                    continue
            need[j] = 1
        for j in range(pp - 2, -1, -1):
            need[j] = min(need[j], need[j + 1])
        for j in range(pp):
            if need[j] == 0:
                continue
            free_for(j, 0)
            if j > 0:
                fill_w_before(j, t[0, j - 1, f[j]] + comm)
            put(j, 0)
        for j in range(pp - 1, -1, -1):
            free_for(j, 1)
            if j + 1 < pp:
                fill_w_before(j, t[1, j + 1, i] + comm)
            if j == 0 and f[j] == m:
                while w[j] < b[j]:
                    put(j, 2)
            put(j, 1)
    for j in range(pp):
        while w[j] < m:
            put(j, 2)
    span = max(t[2, j, m - 1] - t[0, j, 0] + cost[0] for j in range(pp))
    return order, span


def search(pp: int, m: int, cost: tuple[float, float, float], comm: float, limit: float,
           w_fraction: float) -> list[list[Pass]]:
    """``initial_solution``: the orders of the flag combination with the shortest span (the
    first one found among equals, in the code base's loop order)."""
    best: tuple[float, list[list[Pass]]] | None = None
    for allow in (True, False):
        for prioritize in (True, False):
            for greedy in (True, False):
                order, span = manual_order(pp, m, cost, comm, limit, w_fraction, allow,
                                           prioritize, greedy)
                if best is None or span < best[0]:
                    best = (span, order)
    assert best is not None
    return best[1]


def upper_median(xs: list[float]) -> float:
    """zb_schedules.py ``update_schedule``: ``sorted(x)[len(x) // 2]`` over the ranks."""
    return sorted(xs)[len(xs) // 2]
