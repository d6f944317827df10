"""torch's looped BFS on the periodic shortcut (``steady_bfs``: a period in every chunk's run of
passes, two phases, copies affine in their number) against the full simulation."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest
from helpers import assert_same_simulation, counted_graphs, random_config

import trainsim.steady_state as steady
from trainsim import run_config_from_dict, simulate
from trainsim.errors import ConfigError
from trainsim.limits import simulation_work, walk_positions
from trainsim.optimizer_tasks import AFTER, BEFORE
from trainsim.steady_bfs import COPY0, COPY1, PLAIN, _b_to_a, _pairs_hold
from trainsim.workload.pipeline_schedules_bfs import looped_bfs

N_CONFIGS = 200
DEFAULT_CONFIGS = 6  # the default suite's share of them (the slow test runs all)


def _configs(n: int, seed: int = 60) -> list:
    """Random looped BFS configs (``helpers.random_config``, pp > 1, torchtitan): 1-4 chunks a
    rank, 1-2 layers a virtual stage, ZeRO 0-3 (FSDP's gathers and reduce-scatters in the
    passes), overlapped sends or not, 4 pp + 8 to 12 pp + 64 micro-batches."""
    rng, out = random.Random(seed), []
    while len(out) < n:
        raw = random_config(rng)
        par, train = raw["parallel"], raw["training"]
        pp = par["pp"]
        if pp == 1:
            continue
        vpp = rng.choice([1, 1, 2, 3, 4])
        raw["model"]["num_layers"] = pp * vpp * rng.randint(1, 2)
        par.update(pipeline_schedule="looped_bfs", vpp=vpp)
        train["framework"] = "torchtitan"
        dp = raw["cluster"]["num_gpus"] // (par["tp"] * pp * par["cp"])
        train["global_batch_size"] = (rng.randint(4 * pp + 8, 12 * pp + 64)
                                      * train["micro_batch_size"] * dp)
        try:
            out.append(run_config_from_dict(raw))
        except ConfigError:
            continue
    return out


def _agree(monkeypatch, configs) -> Counter:
    """Each config in full and by the shortcut, held equal to 1e-9; methods taken, by whether
    the config overlaps its sends (a send slowing the next pass, every period)."""
    monkeypatch.setattr(steady, "MIN_TASKS", 0)  # take the shortcut on small runs too
    methods: Counter = Counter()
    for cfg in configs:
        full = simulate(cfg, keep_timeline=True)
        fast = simulate(cfg)
        assert_same_simulation(fast, full)
        methods[fast.simulation["method"], cfg.parallel.overlap_p2p_comm] += 1
    return methods


def test_looped_bfs_steady_state_agrees_with_the_full_simulation(monkeypatch):
    """Over the first 6 random looped BFS configs the extrapolated steady state and the full
    simulation agree to 1e-9 on the iteration time and every breakdown entry, and the
    shortcut is taken on every one, overlapped sends and FSDP among them."""
    configs = _configs(DEFAULT_CONFIGS)
    methods = _agree(monkeypatch, configs)
    assert methods["steady-state", True] >= 1, methods
    assert methods["steady-state", True] + methods["steady-state", False] == DEFAULT_CONFIGS
    assert any(c.parallel.zero_stage == 3 and c.dp > 1 for c in configs)
    assert any(c.parallel.vpp > 1 for c in configs) and any(c.parallel.vpp == 1 for c in configs)


@pytest.mark.slow
def test_looped_bfs_steady_state_agrees_with_the_full_simulation_on_all_configs(monkeypatch):
    """The same over all 200 random configs, every one proven (overlapped sends or not;
    settle60: 199, zbproof61's ladder ending at the longest run it affords the last)."""
    methods = _agree(monkeypatch, _configs(N_CONFIGS))
    proven = methods["steady-state", True] + methods["steady-state", False]
    assert proven == N_CONFIGS, methods
    assert methods["steady-state", True] >= N_CONFIGS // 4, methods


def test_a_micro_batch_more_inserts_a_period_in_every_run():
    """B's positions against A's (m_a = 4, 2 chunks): each chunk's forward run gets copy 1 of
    A's last forward after copy 0; each backward run copy 1 of A's second-to-last backward (the
    first, TE's, and the last, the reduction's, stay plain)."""
    m_a, vpp = 4, 2
    order_a, order_b = looped_bfs(0, 2, vpp, m_a), looped_bfs(0, 2, vpp, m_a + 1)
    got = [_b_to_a(k, m_a, vpp) for k in range(len(order_b))]
    assert [cls for _, cls, _ in got] == (
        [PLAIN] * 3 + [COPY0, COPY1]) * 2 + ([PLAIN] * 2 + [COPY0, COPY1, PLAIN]) * 2
    for k, (tag, cls, forward) in enumerate(got):
        pass_b, pass_a = order_b[k], order_a[tag]
        assert (pass_b.kind, pass_b.chunk) == (pass_a.kind, pass_a.chunk)
        assert forward == (pass_b.kind == "F")
        if pass_b.kind == "F" or cls == PLAIN and pass_b.microbatch == 0:
            # forwards keep their micro-batch (copy 1: the one inserted), the last backward too
            assert pass_a.microbatch == min(pass_b.microbatch, m_a - 1)
    assert _b_to_a(BEFORE, m_a, vpp) == (BEFORE, PLAIN, True)
    assert _b_to_a(AFTER, m_a, vpp) == (AFTER, PLAIN, False)


def _pair(x_times, y_times, x_copy, y_copy, sigma, tau, tol=1e-9):
    """``_pairs_hold`` for one slowed family x (A's start and end) against one slowing y."""
    start = np.array([x_times[0], y_times[0]])
    end = np.array([x_times[1], y_times[1]])
    return _pairs_hold(np.array([0]), 1, start, end, np.array([x_copy, y_copy]),
                       np.asarray(sigma, float), np.asarray(tau, float), tol)


def test_contention_is_proven_pair_by_pair_of_families():
    """A send (y) slowing a pass (x): where copy 0 of a period is slowed by the plain send
    before it and its copies move away, the same in every G_k; where copy 1 is slowed, its
    copies 2..k would not be as their representative is: refused. A period's sends slowing
    the next copy (one pace, one copy apart) hold; slowing the copy before (d = -1) does not."""
    # x = copies of a pass [1, 2] + j, y = a plain send [0.5, 1.2]: only copy 0 overlaps
    assert _pair((1.0, 2.0), (0.5, 1.2), True, False, [0.0, 0.0], [1.0, 0.0])
    # the send [1.5, 2.2] overlaps copy 1 ([2, 3]) too: copies 2.. are not slowed
    assert not _pair((1.0, 2.0), (1.5, 2.2), True, False, [0.0, 0.0], [1.0, 0.0])
    # the plain send moving at another pace than the copy it overlaps
    assert not _pair((1.0, 2.0), (0.5, 1.2), True, False, [0.0, 0.5], [1.0, 0.0])
    # a period's send [2, 2.1] + j (after its pass [1, 2] + j) slowing the next copy: d = +1,
    # one pace; copy j's pass beside sends j and j - 1 ([0.9, 1.1] + j) holds too
    assert _pair((1.0, 2.0), (2.0, 2.1), True, True, [0.0, 0.0], [1.0, 1.0])
    assert _pair((0.0, 1.0), (0.9, 1.1), True, True, [0.0, 0.0], [1.0, 1.0])
    # sends [-0.1, 0.1] + j: copy 0's pass beside send 1 (d = -1), which B's copy 1 does not
    # show for copies 1..k-1 of G_k (beside send j + 1)
    assert not _pair((0.0, 1.0), (-0.1, 0.1), True, True, [0.0, 0.0], [1.0, 1.0])
    # never overlapping: a plain send before the copies, moving no faster; one moving faster
    # reaches copy 1
    assert _pair((5.0, 6.0), (0.0, 1.0), True, False, [0.0, 0.0], [1.0, 0.0])
    assert not _pair((5.0, 6.0), (4.0, 4.5), True, False, [0.0, 2.0], [1.0, 0.0])


def test_iteration_cost_does_not_grow_with_the_micro_batches():
    """pp 8, 2 chunks a rank, 256 to 16,384 micro-batches: the same graphs built (two runs of
    10 and 11 micro-batches), the same charge, no memory walk (a closed form)."""
    def cfg(m: int):
        return run_config_from_dict({
            "model": {"hidden_size": 256, "num_layers": 16, "num_attention_heads": 4,
                      "vocab_size": 1024},
            "parallel": {"pp": 8, "vpp": 2, "pipeline_schedule": "LoopedBFS"},
            "training": {"global_batch_size": m, "seq_length": 256, "framework": "torchtitan"},
            "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8,
                        "compute_db": None}})
    built, charged = [], []
    for m in (256, 16_384):
        with counted_graphs() as graphs:
            result = simulate(cfg(m))
        assert result.simulation["method"] == "steady-state"
        assert "10 and 11 micro-batches" in result.simulation["reason"]
        built.append(graphs)
        charged.append(simulation_work(cfg(m), steady.simulated_tasks(cfg(m))))
        assert walk_positions(cfg(m)) == 0.0
    assert built[0] == built[1] and len(built[0]) == 2
    assert charged[0] == charged[1]
