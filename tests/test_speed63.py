"""speed63 (issue 21 item 2): ``zb_search.choose`` runs each variant's doubling probes and,
where none settles, its watched search of ``m`` as one search (``zb_search._probed``), in place
of rebuilding every probe from scratch. Same answer (variant, settled count, rounds), same
positions counted against the work limit in the same order, on random searches and on
tests/test_steady_zb2p.py's configs' own search inputs."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest
from test_steady_zb2p import _shapes

from trainsim.limits import WorkLimitError, check_zb_search, zb_first_probe, zb_search_positions
from trainsim.workload import zb_search, zb_settle


def _choose_probe_by_probe(pp, m, cost, comm, limit, w_fraction):
    """``zb_search.choose`` as it ran before speed63 (main 6a5b28b2, zb_search.py L455-L488):
    every probe a search of its own (``settle``), the search of ``m`` another (``settle_at``)."""
    best = None
    exact = isinstance(w_fraction, Fraction) and all(isinstance(x, int) for x in (*cost, comm))
    placed = zb_search_positions(pp, m, 0)
    for variant in zb_search.VARIANTS:
        settled, probe = None, zb_first_probe(pp)
        while exact and settled is None and probe < m:
            if probe > zb_first_probe(pp):
                placed += probe * pp
                zb_search.check_zb_search(placed, pp, m)
            settled = zb_settle.settle(pp, cost, comm, limit, w_fraction, variant, probe)
            if settled is not None and settled.rounds > 1:
                placed += (2 * probe + settled.rounds) * pp
                zb_search.check_zb_search(placed, pp, m)
            probe *= 2
        if settled is not None and settled.from_m <= m:
            span, _ = zb_search.settled_span(settled, m, pp, cost, comm, limit, w_fraction,
                                             variant)
            from_m, rounds = settled.from_m, settled.rounds
        else:
            if m >= zb_first_probe(pp):
                placed += m * pp
                zb_search.check_zb_search(placed, pp, m)
            from_m, rounds, span = zb_settle.settle_at(pp, cost, comm, limit, w_fraction,
                                                       variant, m)
        if best is None or span < best[0]:
            best = span, variant, from_m, rounds
    return best[1], best[2], best[3]


def _both(monkeypatch, pp, m, cost, comm, wf):
    """Both choices and the positions each counted, check by check."""
    out = []
    for fn in (zb_search.choose, _choose_probe_by_probe):
        counted: list[float] = []

        def spy(positions, pp_, m_, counted=counted):
            counted.append(positions)
            check_zb_search(positions, pp_, m_)

        monkeypatch.setattr(zb_search, "check_zb_search", spy)
        out.append((fn(pp, m, cost, comm, 2.0 * pp, wf), counted))
    return out


def _cases(n: int, seed: int):
    rng = random.Random(seed)
    for pp, cost, comm, wf in _shapes(n, seed):
        # short of the first probe, at it, past one and several doublings
        first = zb_first_probe(pp)
        yield pp, rng.choice([first - 1, first, first + 1, rng.randint(2 * pp, 40 * pp)]), \
            cost, comm, wf


@pytest.mark.parametrize("seed", [63, 64])
def test_one_search_per_variant_is_the_probes_answer(monkeypatch, seed):
    """The same (variant, from_m, rounds) and the same positions checked, in order, as the
    probe-by-probe choice, on random searches that settle at their first probe, at a later
    one, past every probe, and not at all."""
    seen = set()
    for case in _cases(12, seed):
        (new, new_counted), (old, old_counted) = _both(monkeypatch, *case)
        assert new == old, case
        assert new_counted == old_counted, case
        seen.add((new[1] is None, len(new_counted) > 0))
    assert len(seen) >= 2


# search inputs (pp, m, F / I / W and send in us, W share) from tests/test_steady_zb2p.py's
# configs: #28 and #27 settle past their last probe (test_zb2p62.LATE), #9 never within m, #75
# settles from 108 of 210
CONFIGS = [(8, 369, (735, 735, 197), 33, Fraction(16, 97)),
           (8, 574, (931, 1041, 317), 66, Fraction(16, 97)),
           (4, 210, (1355, 3164, 881), 66, Fraction(16, 97))]


@pytest.mark.parametrize("case", CONFIGS)
def test_late_and_never_settling_searches(monkeypatch, case):
    (new, new_counted), (old, old_counted) = _both(monkeypatch, *case)
    assert new == old and new_counted == old_counted


def test_the_search_is_refused_at_the_same_count(monkeypatch):
    """A limit between two of the probe-by-probe choice's checks refuses both at the same
    check (the same positions in the message), the one search before building past it."""
    pp, m, cost, comm, wf = CONFIGS[1]
    (_, counted), _ = _both(monkeypatch, pp, m, cost, comm, wf)
    monkeypatch.setattr(zb_search, "check_zb_search", check_zb_search)
    from trainsim.limits import TASK_US, ZB_SEARCH_US

    other = zb_search_positions(pp, m)
    mid = (counted[len(counted) // 2] + counted[len(counted) // 2 + 1]) / 2
    monkeypatch.setenv("TRAINSIM_MAX_TASKS", str(int((mid + other) * ZB_SEARCH_US / TASK_US)))
    messages = []
    for fn in (zb_search.choose, _choose_probe_by_probe):
        with pytest.raises(WorkLimitError) as err:
            fn(pp, m, cost, comm, 2.0 * pp, wf)
        messages.append(str(err.value))
    assert messages[0] == messages[1]


def test_a_shortened_search_is_the_shorter_search():
    """``_Builder.shorten``: a search for ``m`` cut to ``q`` while no stage has placed past
    ``q - 2`` forwards builds ``q``'s orders and span."""
    for pp, cost, comm, wf in _shapes(4, 65):
        q, m = 10 * pp + 3, 30 * pp
        for variant in zb_search.VARIANTS[::3]:
            b = zb_search._Builder(pp, m, cost, comm, 2.0 * pp, wf, variant)
            b.warm_up()
            r = 1
            while max(p["F"] for p in b.placed) <= q - 2 and r < q:
                b.steady_round(r)
                r += 1
            # the last round may have run past q - 2: cut at the round before it
            b = zb_search._Builder(pp, m, cost, comm, 2.0 * pp, wf, variant)
            b.warm_up()
            for microbatch in range(1, r - 1):
                b.steady_round(microbatch)
            b.shorten(q)
            for microbatch in range(r - 1, q):
                b.steady_round(microbatch)
            for stage in range(pp):
                b.drain_w(stage)
            orders, span = zb_search.build_order(pp, q, cost, comm, 2.0 * pp, wf, variant)
            assert b.orders == orders and b.span() == span
