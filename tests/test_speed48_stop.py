"""A run told the time it must beat (speed48): the event loop stops only where the last of its
end tasks provably ends at that time or later, and otherwise gives the timeline it gives
without it, to the bit; ``simulate_to_beat`` gives ``simulate``'s Result or None; the
validator's tuner, stopping its losing simulations, chooses and predicts as without."""

from __future__ import annotations

import math
import random
import warnings

import pytest
from test_loop_reference import _graph

from trainsim.engine.loop import _run, run, runs_shared


def _ends(rng: random.Random, tasks: list) -> list[int]:
    """A few end tasks: the last task of some streams, or any task."""
    last: dict = {}
    for i, t in enumerate(tasks):
        last[t.stream] = i
    pool = list(last.values()) if rng.random() < 0.6 else list(range(len(tasks)))
    return sorted(rng.sample(pool, k=rng.randint(1, min(3, len(pool)))))


@pytest.mark.parametrize("seed", range(3))
def test_a_run_stops_only_where_its_last_end_is_at_the_beat_or_later(seed):
    rng = random.Random(4800 + seed)
    stopped = early = ran = 0
    for k in range(60):
        tasks = _graph(rng, rng.randint(1, 160) if k % 3 else rng.randint(300, 800))
        ends = _ends(rng, tasks)
        full = _run(tasks, True)
        last = max(full.end_s[e] for e in ends)
        for f in (0.3, 0.9, 0.99, 0.999, 1.0, 1.0 + 1e-12, 1.001, 1.5):
            for prefix in (True, False):
                got = _run(tasks, prefix, last * f, ends)
                if got is None:
                    assert last >= last * f
                    stopped += 1
                else:
                    assert got.start_s == full.start_s and got.end_s == full.end_s
                    assert got.queues == full.queues
                    ran += 1
        # no beat, or one never reached: as without
        assert _run(tasks, True, math.inf, ends).end_s == full.end_s
        assert _run(tasks, True, None, ends).end_s == full.end_s
        early += _run(tasks, False, 0.3 * last, ends) is None
    assert stopped > 250 and early > 50 and ran > 250  # both ways, often


def test_a_stop_within_the_loop_before_its_end():
    """A chain of 400 one-second tasks on one stream, at half rate while a 300 s gather beside
    it runs: 550 s, of which the uncontended chain shows 400; past the gather's start the clock
    and the chain's remaining work prove 500 lost before the end (549 too), 551 runs through."""
    from trainsim.engine import Task

    tasks = [Task((0, "dp"), 300.0, [], slows=((0, "compute"), 0.5))]
    tasks += [Task((0, "compute"), 1.0, [i] if i else []) for i in range(400)]
    full = _run(tasks, True)
    last = full.end_s[-1]
    assert last == pytest.approx(550.0)
    for prefix in (True, False):
        assert _run(tasks, prefix, 399.0, [400]) is None  # at the start
        assert _run(tasks, prefix, 500.0, [400]) is None
        assert _run(tasks, prefix, 549.0, [400]) is None
        assert _run(tasks, prefix, 551.0, [400]).end_s == full.end_s
        assert _run(tasks, prefix, 400.5, [0]).end_s == full.end_s  # only the gather counts


def test_a_stopped_run_is_not_kept_for_the_next():
    rng = random.Random(7)
    tasks = _graph(rng, 400)
    ends = [len(tasks) - 1]
    full = _run(tasks, True)
    with runs_shared() as (kept, _):
        assert run(tasks, beat=0.0, ends=ends) is None
        assert not kept
        assert run(tasks).end_s == full.end_s
        assert len(kept) == 1
        # a kept graph is handed back whatever the beat: its times are known
        assert run(tasks, beat=0.0, ends=ends).end_s == full.end_s


def _public_rows() -> list[dict[str, str]]:
    from trainsim.validate import read_rows
    kind, rows = read_rows("../shared/validation/training_public.csv")
    assert kind == "training"
    return rows


def test_simulate_to_beat_is_simulate_or_none():
    from trainsim.simulator import simulate, simulate_to_beat
    from trainsim.validate.training import predict_training_row, row_config
    from trainsim.validate.training import row_passes as training_passes

    rows = [r for r in _public_rows() if training_passes(r) <= 512][:6]
    assert rows
    stopped = 0
    for row in rows:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cfg = row_config(row, predict_training_row(row).chosen)
            whole = simulate(cfg)
            t = whole.iteration_time_s
            assert simulate_to_beat(cfg, t) is None or \
                simulate_to_beat(cfg, t).iteration_time_s == t  # shortcut runs to its end
            half = simulate_to_beat(cfg, 0.5 * t)
            assert half is None or whole.simulation["method"] != "full"
            stopped += half is None
            got = simulate_to_beat(cfg, 1.01 * t)
        assert got is not None and got.iteration_time_s == t
        assert got.breakdown == whole.breakdown and got.memory == whole.memory
        assert got.simulation == whole.simulation
    assert stopped >= 3


def test_the_stopping_tuner_chooses_and_predicts_as_without(monkeypatch):
    """The public rows of up to 128 passes (55 rows, 10 stops) with their losing simulations
    stopped and without: the same choices, predictions and breakdowns; stops happen."""
    from trainsim import simulator
    from trainsim.validate import training

    rows = [r for r in _public_rows() if training.row_passes(r) <= 128]
    stops = []
    real = simulator.simulate_to_beat

    def counted(cfg, beat, **kw):
        got = real(cfg, beat, **kw)
        stops.append(got is None)
        return got

    def answers() -> list:
        out = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for row in rows:
                r = training.predict_training_row(row)
                out.append((r.to_dict(), r.extra))
        return out

    monkeypatch.setattr(training, "simulate_to_beat", counted)
    stopping = answers()
    tune = training.tune
    monkeypatch.setattr(training, "tune", lambda *a, **kw: tune(*a[:5], **kw))  # no to_beat
    stops_before = len(stops)
    plain = answers()
    assert len(stops) == stops_before  # none asked
    assert stopping == plain
    assert sum(stops) >= 5
