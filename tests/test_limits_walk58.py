"""What ``limits.check_simulation`` charges a long non-Megatron pipeline (zbpeak57 lead 1): the
memory estimate's walk of its period's base order and zb_2p's settled searches, not every
micro-batch, so the charge follows the CPU the simulation takes, flat in the micro-batches
(``benchmarks/limits_cost58.py``)."""

from __future__ import annotations

import functools
import sys
import time
from pathlib import Path

import pytest
from helpers import load_script

from trainsim import simulate
from trainsim.limits import WorkLimitError, check_simulation, simulation_work

_COST = load_script(Path(__file__).resolve().parents[1] / "benchmarks" / "limits_cost58.py")
PERIODIC = ("zb_2p", "zb_h1", "zb_h2", "zb_v", "interleaved_zb", "dualpipe_v", "dualpipe", "gpipe")
V_SHAPED = _COST.V_SHAPED
_charged_s = _COST.charged_s  # the script's figure is the test's


def _cfg(schedule: str, m: int, pp: int = 8):
    """The script's small model (one layer a virtual stage) on ``pp`` GPUs, ``m`` micro-batches."""
    return _COST.config(schedule, pp, m)


@pytest.mark.parametrize("schedule", PERIODIC)
def test_the_charge_is_flat_in_the_micro_batches_where_a_period_is_proven(schedule):
    """From 1,024 to 65,536 micro-batches the walk, the searches and the shortcut's runs are
    the same (main charged 2 m vpp pp positions walked and two zb_2p searches of m)."""
    short, long = _charged_s(_cfg(schedule, 1024)), _charged_s(_cfg(schedule, 65_536))
    assert long == short


def test_orders_shorter_than_their_period_base_are_walked_whole():
    """Below the base (interleaved ZB's 4 pp, zb_2p's twice its first probe) the walk is of
    every position, and grows with the micro-batches up to the base."""
    for schedule, m, vpp in (("interleaved_zb", 24, 2), ("zb_2p", 96, 1)):
        assert simulation_work(_cfg(schedule, m))[1] == 2.0 * m * vpp * 8 / 20, schedule
    assert simulation_work(_cfg("zb_2p", 152))[1] == simulation_work(_cfg("zb_2p", 8192))[1]


def _clear_caches() -> None:
    """trainsim's functools caches (the searches and orders), as a fresh process has them."""
    for name, module in list(sys.modules.items()):
        if name.startswith("trainsim"):
            for value in list(vars(module).values()):
                if isinstance(value, functools._lru_cache_wrapper):
                    value.cache_clear()


FACTOR = 10.0
"""The charge (tasks' worth x ``TASK_US``) against the CPU measured, either way: on the 2-core
box 0.4-4.6 x over m = 64..16,384 for the six schedules (``benchmarks/limits_cost58.py``;
main's charge reached 29 x for zb_2p and 13 x for ZB-H1 at 16,384)."""


@pytest.mark.parametrize("schedule", ["zb_2p", "zb_h1", "zb_v"])
def test_the_charge_tracks_the_cpu_measured(schedule):
    simulate(_cfg(schedule, 64))  # the catalogs loaded
    for m in (64, 1024, 16_384):
        cfg = _cfg(schedule, m)
        _clear_caches()
        t0 = time.process_time()
        simulate(cfg)
        cpu = max(time.process_time() - t0, 1e-3)
        charged = _charged_s(cfg)
        assert cpu / FACTOR <= charged <= FACTOR * cpu, (m, charged, cpu)


def test_a_million_micro_batches_of_zb_2p_are_not_refused():
    """pp 8 x 1,000,000: the searches settle, the shortcut proves the period (~0.1 CPU s);
    main refused it (2.9M positions of searches counted, 52k tasks' worth of walk a 1,000
    micro-batches). Simulated in full it is refused."""
    cfg = _cfg("zb_2p", 1_000_000)
    result = simulate(cfg)
    assert result.simulation["method"] == "steady-state"
    with pytest.raises(WorkLimitError, match="simulated tasks"):
        check_simulation(cfg)
