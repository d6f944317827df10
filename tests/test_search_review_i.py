"""Review I of the search (offload, searchfix2): the search JSON reproduces every entry from
the JSON alone (its ``base`` with the framework and the non-parallel --set fields), ZeRO-3's
link floor stays under the simulated time, and the smaller mends (tests fail before fixj)."""

from __future__ import annotations

import copy
import json
import random
import warnings

from trainsim.catalog import run_config_from_dict
from trainsim.errors import ConfigError
from trainsim.search import Candidate, SearchSpace, search
from trainsim.search.cli_inputs import build_base
from trainsim.search.evaluation import Bounds, evaluate
from trainsim.search.layout_costs import link_floor

GPU, GPN, NIC, DTYPE = "h100-sxm-80gb", 8, 400.0, "bf16"


def _base(model: str, gpus: int, batch: int, seq: int, sets: tuple[str, ...], nic: float = NIC):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build_base(model, GPU, gpus, batch, seq, GPN, nic, DTYPE, sets)


def test_every_search_entry_reproduces_from_the_json_alone():
    """Review I finding 1: a pytorch HSDP search's entries simulate as ranked only with the
    framework, which the JSON never recorded (llama2-7b: 1.821 s ranked, 1.582 s without
    it). Now the JSON's ``base`` (model, training with the framework, cluster) extended with
    an entry's micro batch, GPU count and ``parallel`` section is that entry's config."""
    sets = ("training.framework=pytorch", "parallel.dp_replicate=2", "training.dtype=bf16")
    base = _base("llama3.2-1b", 16, 64, 4096, sets)
    result = search(base, [16], SearchSpace(max_micro_batch=1, pp=(1,)), top_k=3, cache=None)
    out = json.loads(json.dumps(result.to_dict()))
    assert out["base"]["training"]["framework"] == "pytorch"
    assert out["base"]["training"]["global_batch_size"] == 64
    entries = list(zip(out["top"], (r.evaluation for r in result.top)))
    entries += list(zip(out["pareto"], result.pareto))
    assert len(entries) >= 2
    for entry, ev in entries:
        raw = copy.deepcopy(out["base"])
        raw["training"]["micro_batch_size"] = entry["config"]["micro_batch_size"]
        raw["cluster"]["num_gpus"] = entry["config"]["num_gpus"]
        raw["parallel"] = entry["parallel"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cfg = run_config_from_dict(raw)
        assert cfg == ev.candidate.to_config(base)
        assert cfg.training.framework == "pytorch" and cfg.parallel.dp_replicate == 2


def test_the_zero3_link_floor_by_hand():
    """One stage, no pipelining: the floor per micro-batch is every unit's gather for the
    forward, the blocks' again for the backward, and each block's reduction, as priced."""
    from trainsim.pricing import Pricer
    from trainsim.sharded_passes import block_reduce_s
    from trainsim.workload.sharding import fsdp_unit_gathers

    base = _base("llama3.2-1b", 16, 64, 4096, ("training.framework=pytorch",))
    cfg = Candidate(next(k for k in SearchSpace(max_micro_batch=1).held_by(base)
                         .memory_keys(base, 16) if k.zero == 3 and k.pp == 1 and k.tp == 1
                         and k.cp == 1)).to_config(base)
    pricer = Pricer(cfg)
    layers = cfg.virtual_stage_layers()[0]
    units = fsdp_unit_gathers(cfg, layers, True, True)
    per_unit = [sum(pricer.comm_time(c) for c in u) for u in units]
    gathers = sum(per_unit) + sum(per_unit[1:])  # the root unit stays gathered
    reduces = sum(block_reduce_s(cfg, pricer, i) for i in layers)
    [(g, r)] = link_floor(cfg, pricer, (layers,))
    assert abs(g - gathers) < 1e-12 and abs(r - reduces) < 1e-12 and g > 0 and r > 0


def test_the_zero3_bound_stays_under_sampled_simulations():
    """The refined bound with the link floor stays under the simulated time over sampled
    ZeRO-3 / FSDP candidates (Megatron, torchtitan, pytorch FSDP1 and HSDP, DeepSpeed; two
    NIC speeds); fixj's sampling: 431 candidates, worst 0.986."""
    rng = random.Random(5)
    cases = [("gpt-22b", 16, 64, 2048, ()),
             ("llama3-8b", 32, 64, 4096, ("training.framework=torchtitan",)),
             ("llama3.2-1b", 16, 64, 4096, ("training.framework=pytorch",
                                            "parallel.dp_replicate=2")),
             ("llama2-7b", 16, 32, 4096, ("training.framework=deepspeed",))]
    n = 0
    for model, gpus, batch, seq, sets in cases:
        base = _base(model, gpus, batch, seq, sets, rng.choice((100.0, 400.0)))
        bounds = Bounds(base)
        keys = [k for k in SearchSpace(max_micro_batch=2).held_by(base).memory_keys(base, gpus)
                if k.zero == 3 and k.dp > 1]
        for k in rng.sample(keys, min(6, len(keys))):
            c = Candidate(k, overlap_grad_reduce=rng.random() < .5,
                          overlap_param_gather=rng.random() < .5)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    t = evaluate(c, base).iteration_time_s
                except ConfigError:  # refused (HSDP's one rank per replica), as the search does
                    continue
            assert bounds.refined(c) < t, (model, k)
            n += 1
    assert n >= 20


def test_a_layout_fixed_with_set_is_shown_with_each_candidate():
    """Review I finding 7: with the layout fixed by --set the JSON config, the CSV column and
    the table's label were blank (``placed_layout`` is None there): now each shows the layout
    the candidate runs with, as written (``first:N,last:M`` for the decoder fields)."""
    from rich.console import Console

    from trainsim.search.render import render_search, search_csv, search_json

    for given, shown in (("first:12,last:10", "first:12,last:10"),):
        sets = ("training.framework=automodel", f"parallel.pipeline_model_parallel_layout={given}",
                "parallel.pp=3")
        base = _base("llama2-7b", 24, 48, 4096, sets)
        result = search(base, [24], SearchSpace(max_micro_batch=1, pp=(3,)), top_k=2, cache=None)
        d = json.loads(search_json(result))
        assert d["top"]
        for entry in d["top"] + d["pareto"]:
            assert entry["config"]["pipeline_model_parallel_layout"] == shown
        assert f",{shown}," in search_csv(result) or f',"{shown}",' in search_csv(result)
        console = Console(width=300, record=True)
        console.print(render_search(result))
        assert f"layout={shown}" in console.export_text()


def _megatron(framework: str, version: str, parallel: dict):
    raw = {"model": "llama3.2-1b", "parallel": parallel,
           "training": {"global_batch_size": 16, "micro_batch_size": 1, "seq_length": 2048,
                        "framework": framework, "framework_version": version},
           "cluster": {"gpu": GPU, "num_gpus": 16, "gpus_per_node": GPN}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run_config_from_dict(raw)


def test_megatron_runs_the_zero_stages_its_version_has():
    """fixg's leads: Megatron-LM before the distributed optimizer (d07d29df, 2022-06) took
    zero_stage 1, and Megatron-FSDP's stage 3 was taken before it existed (custom_fsdp:
    d165a854, 2025-02-26; first released in core_v0.12.0). Now the loader refuses them in
    one line and the search offers the same stages as simulate takes."""
    import pytest

    for fw, version, stage in (("megatron-lm", "2021-06", 1), ("megatron-lm", "2024-06", 3),
                               ("megatron-core", "0.11", 3)):
        with pytest.raises(ConfigError, match=f"zero_stage={stage} under {fw} {version}"):
            _megatron(fw, version, {"zero_stage": stage})
    assert _megatron("megatron-lm", "2022-07", {"zero_stage": 1}).parallel.effective_zero_stage == 1
    assert _megatron("megatron-lm", "2025-03", {"zero_stage": 3}).parallel.zero_stage == 3
    assert _megatron("megatron-core", "0.12", {"zero_stage": 3}).parallel.zero_stage == 3
    for version, stages in (("0.11", [0, 1]), ("0.12", [0, 1, 3])):
        base = _base("llama3.2-1b", 16, 64, 4096, ("training.framework=megatron-core",
                                                   f"training.framework_version={version}"))
        keys = SearchSpace(max_micro_batch=1).held_by(base).memory_keys(base, 16)
        assert sorted({k.zero for k in keys if k.dp > 1}) == stages


def test_the_replicas_line_names_the_stages_the_search_tries():
    """Review I finding 4: with --zero 0,2 (pytorch, dp_replicate=2) two lines were printed,
    one saying 'stages 2, 3' though only 2 was searched; with --zero 0 the warning was followed
    by an error naming 'stages []'. Now one line with the stages tried, and the refusal names
    the user's --zero and the stages the framework shards at."""
    import pytest

    from trainsim.errors import TrainsimWarning
    from trainsim.search.cli_inputs import search_space

    sets = ("training.framework=pytorch", "parallel.dp_replicate=2")
    for zero, said in (("0,2", "runs its fsdp1 engine at stages 2 only (not 0)"),
                       (None, "runs its fsdp1 engine at stages 2, 3 only (not 0, 1)")):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            base = build_base("llama2-7b", GPU, 16, 64, 4096, GPN, NIC, DTYPE, sets)
            space = search_space(None, None, None, 8, 1, "none", zero, "search", base=base)
        lines = [str(w.message) for w in seen if issubclass(w.category, TrainsimWarning)
                 and "dp_replicate" in str(w.message)]
        assert len(lines) == 1 and said in lines[0], lines
        assert space.zero == ((2,) if zero else (2, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        base = build_base("llama2-7b", GPU, 16, 64, 4096, GPN, NIC, DTYPE, sets)
        with pytest.raises(ConfigError) as refused:
            search_space(None, None, None, 8, 1, "none", "0", "search", base=base)
    assert "searched (0)" in str(refused.value) and "2, 3 (fsdp1)" in str(refused.value)


def test_overlap_is_read_case_insensitively_as_the_cli_reads_it():
    """Review I finding 5 (part): the CLI's --overlap ON is 'on' (click, case_sensitive=False);
    the service's search options go through ``search_space`` and were refused (422)."""
    from trainsim.search.cli_inputs import search_space

    assert search_space(None, None, None, 8, 1, "none", None, "ON").overlap == "on"
    assert search_space(None, None, None, 8, 1, "none", None, "Search").overlap == "search"


def test_the_memory_check_refuses_by_the_tasks_the_simulator_runs(monkeypatch):
    """Review I finding 10: a group was refused when its full iteration's tasks were over
    TRAINSIM_MAX_TASKS, though the simulator runs only the steady-state shortcut's truncated
    iterations (and checks those): a long ZeRO-3 run was dropped that simulates."""
    import sys

    sys.path.insert(0, "tests")
    from helpers import make_base

    from trainsim import steady_state
    from trainsim.limits import simulation_tasks
    from trainsim.search import MemoryKey
    from trainsim.search.memory_check import check_memory

    base = make_base("gpt-22b", gpus=16, batch=256)
    key = MemoryKey(16, 4, 1, 2, 1, 1, "none", False, 3)
    cfg = Candidate(key).to_config(base)
    short, full = steady_state.simulated_tasks(cfg), simulation_tasks(cfg)
    assert short < full
    monkeypatch.setenv("TRAINSIM_MAX_TASKS", repr((short + full) / 2))
    assert check_memory(key, base, cfg) is not None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert evaluate(Candidate(key), base).iteration_time_s > 0  # the simulator runs it
    monkeypatch.setenv("TRAINSIM_MAX_TASKS", repr(short / 2))
    assert check_memory(key, base, cfg) is None
