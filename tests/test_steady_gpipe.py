"""GPipe's periodic steady state (``steady_gpipe``: two phases, paces per stream) against the
full simulation."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from helpers import assert_same_simulation, counted_graphs, pipelined_configs

import trainsim.steady_state as steady
from trainsim import run_config_from_dict, simulate
from trainsim.engine import Task, Timeline
from trainsim.steady_gpipe import _Rigid

N_CONFIGS = 200
DEFAULT_CONFIGS = 4  # the default suite's share of them (the slow test runs all)


def _configs(n: int):
    """Random GPipe configs (``helpers.pipelined_configs``), 4 pp + 8 to 12 pp + 64 micro-batches."""
    return pipelined_configs(n, "gpipe", lambda pp: (4 * pp + 8, 12 * pp + 64))


def _agree(monkeypatch, n_configs: int) -> Counter:
    """Each config in full and by the shortcut, held equal; methods taken, by whether the
    config overlaps its sends (every pass slowed by the send before it)."""
    monkeypatch.setattr(steady, "MIN_TASKS", 0)  # take the shortcut on small runs too
    methods: Counter = Counter()
    for cfg in _configs(n_configs):
        full = simulate(cfg, keep_timeline=True)
        fast = simulate(cfg)
        assert_same_simulation(fast, full)
        methods[fast.simulation["method"], cfg.parallel.overlap_p2p_comm] += 1
    return methods


def test_gpipe_steady_state_agrees_with_the_full_simulation(monkeypatch):
    """Over the first 4 random GPipe configs the extrapolated steady state and the full
    simulation agree to 1e-9 on the iteration time and every breakdown entry, and the
    shortcut is taken on every one, overlapped sends among them."""
    methods = _agree(monkeypatch, DEFAULT_CONFIGS)
    assert methods["steady-state", True] >= 1, methods
    assert methods["steady-state", True] + methods["steady-state", False] == DEFAULT_CONFIGS


@pytest.mark.slow
def test_gpipe_steady_state_agrees_with_the_full_simulation_on_all_configs(monkeypatch):
    """The same over all 200 random configs, 9 in 10 of those with overlapped sends proven."""
    methods = _agree(monkeypatch, N_CONFIGS)
    overlapped = methods["steady-state", True] + methods["full", True]
    assert overlapped >= N_CONFIGS // 4, methods
    assert methods["steady-state", True] >= 0.9 * overlapped, methods
    assert methods["steady-state", False] >= 0.9 * (N_CONFIGS - overlapped), methods


# ----------------------------------------------- _Rigid: contention inside the periods, by hand
SIGMA = 1.1  # the pace of the stage's copies


def _rigid(times: dict[str, tuple[float, float]], kinds: dict[str, str],
           local: dict[str, float] | None = None, dev: dict[str, float] | None = None):
    """A one-stage forward phase of B by hand: ``x*`` tasks on the compute stream, ``y*``
    sends on the pipeline stream slowing it; ``kinds``: prefix P, copy 0 C0, copy 1 C1 (the
    copy 0 of the same name with a ``'``), tail T. Returns the proof and the task indices."""
    names = list(times)
    index = {name: i for i, name in enumerate(names)}
    pairs = {}  # copy 0 and copy 1 share a counterpart
    counterpart, after = [], []
    for name in names:
        kind = kinds[name]
        key = name.rstrip("'") if kind in ("C0", "C1") else name
        counterpart.append(pairs.setdefault(key, len(pairs)))
        after.append(kind in ("C1", "T"))
    tasks = [Task((0, "compute" if n[0] == "x" else "pp"), 0.1,
                  slows=((0, "compute"), 0.5) if n[0] == "y" else None) for n in names]
    queues = {}
    for i, t in enumerate(tasks):
        queues.setdefault(t.stream, []).append(i)
    tb = Timeline(tasks, [times[n][0] for n in names], [times[n][1] for n in names], queues)
    slope = [0.0 if kinds[n] == "P" else (local or {}).get(n, SIGMA) for n in names]
    deviation = [(dev or {}).get(n, 0.0) for n in names]
    proof = _Rigid(tb, counterpart, after, np.ones(len(names), dtype=bool), np.asarray(slope),
                   np.asarray(deviation), 1e-12, 1e-14 * tb.makespan_s)
    return proof, index


# a send slows the next forward, one copy later (d = -1), as GPipe's overlapped sends do
_STEADY = {"x0": (0.0, 1.0), "x1": (1.0, 2.1), "x1'": (2.1, 3.2), "xt": (3.2, 4.0),
           "y0": (1.0, 1.3), "y1": (2.1, 2.4), "y1'": (3.2, 3.5)}
_KINDS = {"x0": "P", "x1": "C0", "x1'": "C1", "xt": "T", "y0": "P", "y1": "C0", "y1'": "C1"}


def test_sends_slowing_the_next_pass_at_one_pace_are_proven():
    """Each send slowing the next copy's pass, the stage's streams at one pace, the last
    copy's send slowing the tail: every slowing task is accepted."""
    proof, at = _rigid(_STEADY, _KINDS)
    assert all(proof.holds(at[y]) for y in ("y0", "y1", "y1'"))


def test_a_slower_overlapping_the_copy_before_it_is_refused():
    """A copy-1 send overlapping copy 0's pass would slow every middle copy by the next
    one's send, which B's copy 1 (next to the tail) never shows."""
    proof, at = _rigid({**_STEADY, "y1": (0.9, 1.2), "y1'": (2.0, 2.3)}, _KINDS)
    assert not proof.holds(at["y1'"])


def test_a_tail_slower_overlapping_the_last_copy_is_refused():
    """A tail task slowing copy 1 slows only the last copy of a longer run."""
    proof, at = _rigid({**_STEADY, "yt": (3.0, 3.6)}, {**_KINDS, "yt": "T"})
    assert not proof.holds(at["yt"])


def test_a_prefix_slower_reaching_copy_1_is_refused():
    """A prefix task (the same in every run) overlapping copy 1, which moves on."""
    proof, at = _rigid({**_STEADY, "y0": (1.0, 2.5)}, _KINDS)
    assert not proof.holds(at["y0"])


def test_streams_at_two_paces_are_refused():
    """A send whose copies move at another pace than the passes they slow drifts across
    them."""
    proof, at = _rigid(_STEADY, _KINDS, local={"y1": 1.2 * SIGMA, "y1'": 1.2 * SIGMA})
    assert not proof.holds(at["y1"])


def test_a_deviation_contention_could_widen_is_refused():
    """A slowed copy off its place by more than the growth floor (within REL_TOL)."""
    proof, at = _rigid(_STEADY, _KINDS, dev={"x1'": 1e-12})
    assert not proof.holds(at["y1"])
    assert _rigid(_STEADY, _KINDS, dev={"x1'": 1e-16})[0].holds(at["y1"])


def test_pp64_gpipe_costs_two_short_runs_whatever_its_micro_batches():
    """settle60 (issue 21 item 2): GPipe's first truncated runs are 3 and 4 micro-batches, not
    2 pp and 2 pp + 1 (128 and 129 at pp 64): PP64 at 2,048 and 16,384 micro-batches builds
    the same two graphs and is proven on them."""
    def cfg(m: int):
        return run_config_from_dict({
            "model": {"hidden_size": 256, "num_layers": 64, "num_attention_heads": 4,
                      "vocab_size": 1024},
            "parallel": {"pp": 64, "pipeline_schedule": "gpipe"},
            "training": {"global_batch_size": m, "seq_length": 256},
            "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 64, "gpus_per_node": 8,
                        "compute_db": None}})
    built = []
    for m in (2048, 16_384):
        with counted_graphs() as graphs:
            result = simulate(cfg(m))
        assert "truncated runs of 3 and 4 micro-batches" in result.simulation["reason"]
        built.append(graphs)
    assert built[0] == built[1] and len(built[0]) == 2
