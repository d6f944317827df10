"""The periodic steady-state shortcut on the zero-bubble, DualPipeV and DualPipe schedules
(``steady_state.NAMED``) against the full simulation."""

from __future__ import annotations

import random

import pytest
from helpers import assert_same_simulation, random_config

import trainsim.steady_state as steady
from trainsim import run_config_from_dict, simulate
from trainsim.errors import ConfigError
from trainsim.workload.schedule import Pass, schedule

N_CONFIGS = 240  # 40 a schedule
DEFAULT_CONFIGS = 24  # the default suite's share of them (the slow test runs all; 30 until
# ss50, whose GPipe and zb_2p samples took the time)
CHUNKS = {"zb_v": 2, "dualpipe_v": 2, "interleaved_zb": 2}  # chunks per rank (V: two)


def _configs(n: int):
    """Random configs (``helpers.random_config``) with a pipeline, each under the next
    schedule of ``steady_state.NAMED`` (no ZeRO-3: those schedules do not place its
    gathers), with 8 pp + 16 to 12 pp + 64 micro-batches (interleaved: 20 to 32 groups of pp,
    2 or 3 chunks)."""
    rng = random.Random(48)
    out = []
    while len(out) < n:
        raw = random_config(rng)
        par, train = raw["parallel"], raw["training"]
        pp, name = par["pp"], steady.NAMED[len(out) % len(steady.NAMED)]
        if pp == 1:
            continue
        vpp = rng.choice([2, 3]) if name == "interleaved_zb" else CHUNKS.get(name, 1)
        raw["model"]["num_layers"] = pp * vpp * rng.randint(1, 3)
        par.update(pipeline_schedule=name, vpp=vpp if vpp > 1 else None,
                   zero_stage=rng.choice([0, 1, 2]))
        dp = raw["cluster"]["num_gpus"] // (par["tp"] * pp * par["cp"])
        micro = (pp * rng.randint(20, 32) if name == "interleaved_zb"
                 else rng.randint(8 * pp + 16, 12 * pp + 64))
        micro += micro % 2 if name == "dualpipe" else 0  # m/2 a direction
        train["global_batch_size"] = micro * train["micro_batch_size"] * dp
        try:
            out.append(run_config_from_dict(raw))
        except ConfigError:
            continue
    return out


def _agree(monkeypatch, n_configs: int) -> None:
    monkeypatch.setattr(steady, "MIN_TASKS", 0)  # take the shortcut on small runs too
    proven = {name: 0 for name in steady.NAMED}
    for cfg in _configs(n_configs):
        full = simulate(cfg, keep_timeline=True)  # a timeline asked for: every micro-batch
        fast = simulate(cfg)
        proven[cfg.parallel.pipeline_schedule] += fast.simulation["method"] == "steady-state"
        assert_same_simulation(fast, full)
    # the shortcut is taken on every schedule (not a test of the fallback alone)
    assert all(n >= 0.5 * n_configs / len(steady.NAMED) for n in proven.values()), proven


def test_named_steady_state_agrees_with_the_full_simulation(monkeypatch):
    """Over the first 24 random configs (four of each schedule) the extrapolated steady state
    and the full simulation agree to 1e-9 on the iteration time and every breakdown entry."""
    _agree(monkeypatch, DEFAULT_CONFIGS)


@pytest.mark.slow
def test_named_steady_state_agrees_with_the_full_simulation_on_all_configs(monkeypatch):
    """The same over all 240 random configs."""
    _agree(monkeypatch, N_CONFIGS)


@pytest.mark.parametrize("name", steady.NAMED)
@pytest.mark.parametrize("pp", [2, 3, 4, 8])
def test_named_cut_inserts_one_period(name, pp):
    """B's orders are A's with one period of ``shift`` steps inserted at the cut, every later
    micro-batch one period (``q``) on, on every rank (what the counterpart matching assumes).
    DualPipe (even pp) per direction: its second direction's micro-batches counted from m/2,
    one of each direction a period."""
    if name == "dualpipe" and pp % 2:
        pytest.skip("DualPipe needs an even pipeline")
    vpp, q = CHUNKS.get(name, 1), steady._named_q(name, pp)
    m_a, cut, shift = steady.named_plan(name, pp, vpp, q)
    step = 1 if name == "dualpipe" else q

    def per_direction(order, m):
        if name != "dualpipe":
            return order
        return [steady._per_direction(x, m) for x in order]

    for s in range(pp):
        a = per_direction(schedule(s, pp, vpp, m_a, name), m_a)
        b = per_direction(schedule(s, pp, vpp, m_a + q, name), m_a + q)
        assert b[:cut] == a[:cut]
        assert b[cut:] == [steady._bump(x, step) for x in a[cut - shift:]]
        assert len(b) - len(a) == shift
        ends = steady._end_passes(m_a, 2 if name == "dualpipe" else vpp, name)
        assert ends.isdisjoint(steady._passes(schedule(s, pp, vpp, m_a, name)[cut - shift:cut]))


def test_dualpipe_per_direction_labels():
    """DualPipe's second direction runs micro-batches m/2 to m - 1 (chunk 1): counted from 0
    per direction, its end passes are each direction's first forward and last backward."""
    order = schedule(0, 2, 1, 6, "dualpipe")
    assert {p.microbatch for p in steady._passes(order) if p.chunk == 1} == {3, 4, 5}
    assert {p.microbatch for p in steady._passes([steady._per_direction(x, 6) for x in order])
            if p.chunk == 1} == {0, 1, 2}
    ends = steady._end_passes(6, 2, "dualpipe")
    assert {p for p in ends if p.kind == "F"} == {Pass("F", 0, 0), Pass("F", 3, 1)}
    assert {p.microbatch for p in ends if p.kind == "B"} == {2, 5}


def test_zb_2p_and_gpipe_plan_truncated_runs():
    """zb_2p (an order searched on the priced pass times, ``test_steady_zb2p``) and GPipe (two
    phases, ``test_steady_gpipe``) plan truncated runs too: 8 pp and 3 micro-batches (GPipe:
    2 pp before settle60)."""
    for name, m_a in (("zb_2p", 32), ("gpipe", 3)):
        cfg = run_config_from_dict({
            "model": {"name": "tiny", "hidden_size": 1024, "num_layers": 8,
                      "num_attention_heads": 16, "vocab_size": 32000},
            "parallel": {"pp": 4, "pipeline_schedule": name},
            "training": {"global_batch_size": 512, "micro_batch_size": 1, "seq_length": 1024},
            "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 4, "compute_db": None}})
        assert steady.plan(cfg) == (steady.Plan(m_a, 1, 0, 1), "")
