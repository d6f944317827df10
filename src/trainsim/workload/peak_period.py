"""The in-flight peak of the schedules whose orders grow with the micro-batches, in steps
independent of their count: each order, from some length on, is the shorter one with one
period's steps inserted next to a copy of themselves, so its peak is the shorter one's.

The argument (the same for every schedule here). Say a rank's order for ``m + q`` micro-batches
is, in kinds and chunks, its order for ``m`` with the block ``X`` its steps hold just before
position ``c`` inserted again at ``c`` (``a[:c] + a[c - len(X):c] + a[c:]``). Longer by ``q``
micro-batches and by nothing else, ``X`` holds ``q`` forwards of each chunk and their
backwards (one B, or an I and a W, each), so its weights sum to zero: the copy starts at the
live weight its original starts at, walks the same values, and leaves the walk after it where
it was. The weighted peak (:func:`workload.schedule.peak_in_flight`, any weights) is the same
for both, and by induction for every ``m + k q``: ``peak(m) = peak(base)`` with ``base = m_a +
(m - m_a) % q``. Each schedule's ``(m_a, q)`` below is read off its construction in
``workload.pipeline_schedules`` (one loop of it takes one period a turn; ``m_a`` leaves that
loop at least one whole turn on every rank); tests/test_peak_period.py checks the peaks against
the walk of the whole order. The float walk of a long order rounds its running sum once per
inserted copy; the base's walk does not, so the two agree to rounding (1e-12 relative at 16,384
micro-batches), not bit for bit.

- ``zb_h1`` / ``zb_h2`` (q 1): 1F1B's order with ``w`` warm-up forwards (``pp - s - 1``, or
  twice that), its backwards split into I and W and each W delayed by ``d`` backwards (``s``,
  or ``2s``). Once ``m - w > d`` every rank's (forward, backward) pairs end in an F, I, W
  triple, and a micro-batch more adds one such triple after the last (the cool-down's I and W
  and the pending W's keep their kinds): ``m_a = 2 pp`` (``m - w >= pp + s + 1 > d`` for ZB-H1,
  ``2s + 2 > 2s`` for ZB-H2).
- ``interleaved_zb`` (q = pp): Megatron's interleaved order (groups of pp micro-batches) with
  W delayed by ``s``. Where pp divides m (else walked) the k-th forward's chunk and the k-th
  backward's repeat every ``pp vpp`` (``workload.schedule._passes``), so ``pp`` micro-batches
  more add ``pp vpp`` pairs (each F, I and the W of the backward ``s`` before) after as many
  like them, once the pairs number at least ``pp vpp + s`` (warm-up under ``(vpp + 2) pp``):
  ``m_a = 4 pp`` (and past ``m == pp``, Megatron's all-forwards-first order).
- ``zb_v`` (q 1): from ``2 pp - 1`` micro-batches no pass is dropped, and its steady loop (F0,
  I0, W0, F1, I1, W1) turns ``m - 2 pp + s + 1`` times: ``m_a = 2 pp``.
- ``dualpipe_v`` (q 1) / ``dualpipe`` (q 2, one micro-batch a direction, m even, else walked):
  DualPipe's step 4 (two overlapped pairs: F0 with B1, F1 with B0) turns ``m' - 2n + r + 1``
  times (``m'`` micro-batches a direction, ``n`` ranks in a half, ``r`` the rank's distance
  from its end), its other steps fixed; the middle rank's first turn runs its first pair apart,
  the same passes in the same order: ``m_a = 2 pp``.
- ``gpipe``: every forward, then every backward: the peak is all forwards, ``m`` times the one
  chunk's weight (no period: it grows with ``m``).
- ``zb_2p``: its settled search (``pipeline_schedules.equal_zb_2p_peak_orders``).
"""

from __future__ import annotations

PERIODIC = {"zb_h1": (2, 1), "zb_h2": (2, 1), "zb_v": (2, 1), "dualpipe_v": (2, 1),
            "dualpipe": (2, 2), "interleaved_zb": (4, 0)}
"""Schedule -> (``m_a`` in pipeline stages, ``q``; 0: ``pp``), as the module docstring derives
them."""


def peak_base(name: str, pp: int, m: int) -> int:
    """The micro-batch count whose order has the in-flight peak of ``name``'s order for ``m``
    (module docstring): ``m`` itself where no period is proven for it."""
    if name not in PERIODIC:
        return m
    stages, q = PERIODIC[name]
    m_a, q = stages * pp, q or pp
    if m <= m_a or m % q:  # m_a is a multiple of q: DualPipe's odd m, a short last group
        return m
    return m_a + (m - m_a) % q


def named_peak(name: str, stage: int, pp: int, vpp: int, m: int,
               weight: dict[int, float] | None) -> float | None:
    """The in-flight peak of a schedule of ``workload.pipeline_schedules`` by the module
    docstring's argument, walking an order of at most ``m_a + q`` micro-batches; None for a
    schedule not covered here (the caller walks it)."""
    from trainsim.workload.pipeline_schedules import equal_zb_2p_peak_orders, stage_order
    from trainsim.workload.schedule import peak_in_flight

    if name == "gpipe":
        return max(0.0, float(m) * (1.0 if weight is None else weight[0]))
    if name == "looped_bfs":  # every forward of every chunk first: no period, a closed form
        from trainsim.workload.pipeline_schedules_bfs import looped_bfs_peak
        return looped_bfs_peak(m, weight, vpp)
    if name == "zb_2p":
        return peak_in_flight(list(equal_zb_2p_peak_orders(pp, m)[stage]), weight)
    if name not in PERIODIC:
        return None
    return peak_in_flight(list(stage_order(name, stage, pp, vpp, peak_base(name, pp, m))), weight)
