"""benchmarks/speed43_parts.py: its wrapped search gives the answer of the unwrapped one and puts
every function back; its parts nest as the search calls them; its ceilings add up (issue 21
item 4's rate is S / (M + E): its inverse is the sum of the two ceilings' inverses)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from helpers import load_script

from trainsim.search import SearchSpace

ROOT = Path(__file__).resolve().parent.parent
# a 22B model on 16 A100-40GB, TP 8, ZeRO-1 and ZeRO-3 (split backwards): ~0.3 s a search
SMALL = {"model": "gpt-22b", "gpu": "a100-sxm-40gb", "gpus": 16, "global_batch": 32, "seq": 2048}


@pytest.fixture(scope="module")
def script():
    return load_script(ROOT / "benchmarks" / "speed43_parts.py")


def _space() -> SearchSpace:
    return SearchSpace(recompute=("full",), zero=(1, 3), max_micro_batch=1, tp=(8,), pp=(1, 2))


def _answer(r) -> dict:
    d = r.to_dict()
    d.pop("stats")  # elapsed seconds
    return d


@pytest.fixture(scope="module")
def measured(script):
    from trainsim.engine import loop
    from trainsim.pipeline_passes import PipelineTasks
    from trainsim.search import evaluation

    before = (loop._run, PipelineTasks.pipeline, evaluation.evaluate)
    wrapped = script.measure(**SMALL, space=_space())
    after = (loop._run, PipelineTasks.pipeline, evaluation.evaluate)
    plain = script.measure(**SMALL, plain=True, space=_space())
    return wrapped, plain, before, after


def test_the_wrapped_search_answers_as_the_plain_one_and_restores_every_function(measured):
    wrapped, plain, before, after = measured
    assert after == before
    assert _answer(wrapped["result"]) == _answer(plain["result"])
    assert wrapped["result"].stats.simulated == plain["result"].stats.simulated > 0
    assert plain["parts"] == {}
    assert wrapped["loop tasks"] == plain["loop tasks"] > 0
    assert wrapped["placed tasks"] == plain["placed tasks"] > 0


def test_the_parts_nest_as_the_search_calls_them(measured):
    m = measured[0]
    parts, total = m["parts"], m["total"]
    assert parts["evaluate"][1] == m["result"].stats.simulated
    assert parts["simulate"][1] == parts["evaluate"][1]
    assert parts["run_waves"][1] == 1
    assert parts["simulate"][0] <= parts["evaluate"][0] <= parts["run_waves"][0] <= total
    assert parts["backward"][0] <= parts["pipeline"][0]
    assert parts["_run"][1] >= 1 and parts["pipeline"][1] >= 1 and parts["backward"][1] >= 1


def test_the_ceilings_add_up(script, measured):
    m = measured[0]
    c = script.ceilings(m)
    assert c["simulated"] == m["result"].stats.simulated
    assert c["rate"] < min(c["simulations free"], c["branch and bound free"])
    assert math.isclose(1 / c["rate"], 1 / c["simulations free"] + 1 / c["branch and bound free"],
                        rel_tol=1e-12)
    assert math.isclose(c["ms per simulation"] + c["ms of the rest per simulation"],
                        1e3 * m["total"] / c["simulated"], rel_tol=1e-12)
