"""A zero-bubble search watched for its period: the probe-by-probe proofs that a variant's
search settles (``settle``, ``settle_at``), kept beside ``zb_search.choose``, which runs the
same watch inside one search (``zb_search._probed``, speed63), as the reference the tests and
benchmarks compare it with (tests/test_speed63.py, test_zb2p62.py, test_steady_zb2p*.py).
Moved out of ``workload.zb_search`` unchanged (63rd session, to keep that file under ~600 lines).
"""

from __future__ import annotations

from trainsim.workload.zb_search import (
    Settled,
    Variant,
    _Builder,
    _repeat,
    build_order,
)


def _watched(pp: int, cost: tuple[float, float, float], comm: float, limit: float,
             w_fraction: float, variant: Variant, m: int, to_end: bool
             ) -> tuple[_Builder, tuple | None]:
    """``variant``'s search for ``m`` micro-batches, built to its drain, watching for the first
    round after which its state (:func:`_state`) is one it had after an earlier round before
    the micro-batch count could bind (a stage within two forwards of ``m``): the builder and
    (that earlier round, the time between them, the rounds between them, the least count from
    which it holds), or None (``to_end`` False: it stops building there)."""
    b = _Builder(pp, m, cost, comm, limit, w_fraction, variant)
    b.warm_up()
    seen: dict[tuple, tuple[int, float]] = {}  # a state -> the round after which it held
    found, watching = None, True
    for microbatch in range(1, m):
        b.steady_round(microbatch)
        if watching and found is None:
            if max(placed["F"] for placed in b.placed) > m - 2:
                if not to_end:
                    return b, None  # the count could bind from here on
                watching = False
                continue
            found = _repeat(b, microbatch, seen)
    for stage in range(pp):
        b.drain_w(stage)
    return b, found


def settle_at(pp: int, cost: tuple[float, float, float], comm: float, limit: float,
              w_fraction: float, variant: Variant, m: int) -> tuple[int | None, int, float]:
    """``variant``'s whole search for the iteration's ``m`` micro-batches, watched as
    :func:`settle` watches a probe: from how many micro-batches on its searches are one another
    with periods inserted (None where its state does not repeat before the count could bind),
    the rounds of that period (1 where none), and its span. :func:`choose`'s last probe, in
    place of the build of ``m`` it ran where no shorter probe settled (zbproof61 Lead 5: its
    probes doubled and stopped below ``m``, so a search settling past the last of them, as
    tests/test_steady_zb2p.py's #27 and #28 do from 335 of 574 and 290 of 369 micro-batches,
    was not known to settle)."""
    b, found = _watched(pp, cost, comm, limit, w_fraction, variant, m, True)
    if found is None or not found[1] > 0:
        return None, 1, b.span()
    return found[3], found[2], b.span()


def settle(pp: int, cost: tuple[float, float, float], comm: float, limit: float,
           w_fraction: float, variant: Variant, m_probe: int) -> Settled | None:
    """Run ``variant``'s search for ``m_probe`` micro-batches until its state after a round
    (:func:`_state`) is one it had after an earlier round (the first such round: the least
    period of rounds, from the earliest round it holds); None where that does not happen before
    the micro-batch count could bind (a stage within two forwards of ``m_probe``). Exact only
    where the times are integers and the memory counted exactly (``w_fraction`` a Fraction): a
    state equal up to a shift of time then repeats bit for bit. Where the period is of several
    rounds and ``m_probe`` is not ``from_m`` plus whole periods, the span for ``from_m`` is
    searched (``from_m`` placed on each stage, :func:`choose` counts it)."""
    b, found = _watched(pp, cost, comm, limit, w_fraction, variant, m_probe, False)
    if found is None:
        return None
    r, period, rounds, from_m = found
    if not period > 0:
        return None
    # the search for from_m runs as this one up to round r + rounds: its span, from this one's
    if (m_probe - from_m) % rounds:
        span_from = build_order(pp, from_m, cost, comm, limit, w_fraction, variant)[1]
    else:
        span_from = b.span() - (m_probe - from_m) // rounds * period
    return Settled(r, from_m, period, span_from, rounds)
