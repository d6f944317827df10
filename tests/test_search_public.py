"""What `trainsim search` ranks is what `trainsim simulate` runs: each candidate, written as
the config a user would give ``simulate`` (the search's model, batch and hardware, its --set
fields and the candidate's parallel fields), is accepted by the config loader and simulated
to the same iteration time; a --set value that leaves no valid candidate is refused in one
line naming the rule; and HSDP's replica all-reduce is in the search's lower bound."""

from __future__ import annotations

import json
import random
import re
import warnings

import pytest
from helpers import loadable_keys

from trainsim.catalog import apply_overrides, run_config_from_dict
from trainsim.errors import ConfigError, TrainsimWarning
from trainsim.search import layout_costs, lower_bounds
from trainsim.search.cli_inputs import build_base, nothing_found, search_space
from trainsim.search.core import search
from trainsim.search.evaluation import Bounds, evaluate
from trainsim.search.render import render_search, search_json
from trainsim.search.space import SearchSpace
from trainsim.simulator import simulate

GPU, GPN, NIC, DTYPE = "h100-sxm-80gb", 8, 400.0, "bf16"


def _base(model: str, gpus: int, batch: int, seq: int, sets: tuple[str, ...]):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the loader's 'attention X -> Y' notes
        return build_base(model, GPU, gpus, batch, seq, GPN, NIC, DTYPE, sets)


def _public(entry: dict, model: str, batch: int, seq: int, sets: tuple[str, ...]):
    """A ranked (or simulated) candidate as the search's JSON output prints it
    (``Evaluation.to_dict(base)``, read back from JSON text), written as a config file for
    ``simulate``: the entry's ``parallel`` section as it is (the --set parallel fields and an
    uneven layout in it), its micro batch and GPU count, and the --set fields of the other
    sections."""
    entry = json.loads(json.dumps(entry))
    raw = {"model": model, "parallel": entry["parallel"],
           "training": {"global_batch_size": batch,
                        "micro_batch_size": entry["config"]["micro_batch_size"],
                        "seq_length": seq, "dtype": DTYPE},
           "cluster": {"gpu": GPU, "num_gpus": entry["config"]["num_gpus"], "gpus_per_node": GPN,
                       "nic_gbit_s_per_gpu": NIC}}
    others = [s for s in sets if not s.startswith("parallel.")]  # the JSON holds the parallel ones
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run_config_from_dict(apply_overrides(raw, others))


def _space(base, dims: dict) -> SearchSpace:
    """The space `trainsim search` builds with these flags' values (``search_space``)."""
    text = {k: ",".join(map(str, v)) for k, v in dims.items() if isinstance(v, tuple)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the replicas' 'sharded stages only' line
        return search_space(text.get("tp"), text.get("pp"), text.get("cp"), 8,
                            dims.get("max_micro_batch", 2), "none,selective,full",
                            text.get("zero"), "search", text.get("ep"), base=base)


CASES = [  # (model, GPUs, batch, seq, --set, space)
    ("llama2-7b", 16, 64, 4096, ("training.framework=megatron-core",), {}),
    # sliding window + soft-capping, on the framework that runs its own attention and on one
    # that windows with Transformer Engine's
    ("gemma-2-9b", 16, 64, 8192, ("training.framework=megatron-bridge",), {}),
    ("gemma-2-9b", 16, 64, 8192, ("training.framework=megatron-core",), {}),
    pytest.param("mixtral-8x7b", 32, 64, 4096, ("training.framework=megatron-core",),
                 {"ep": (8,), "max_micro_batch": 1}, marks=pytest.mark.slow),
    ("llama2-7b", 16, 64, 4096, ("training.framework=megatron-bridge",
                                 "parallel.dp_replicate=2", "parallel.zero_stage=3"), {}),
    ("llama2-7b", 16, 64, 4096, ("training.framework=megatron-core",),
     {"zero": (3,), "pp": (2, 4)}),
    # frameworks without sequence parallelism, virtual stages or TP overlap (profile
    # features false), with their own DDP and ZeRO defaults
    ("llama2-7b", 16, 64, 4096, ("training.framework=deepspeed",), {}),
    ("llama2-7b", 16, 64, 4096, ("training.framework=llm-foundry",), {}),
    ("llama2-7b", 16, 64, 4096, ("training.framework=torchtitan",), {}),
    # (slow: Automodel's FSDP2 under PP re-gathers every micro-batch, ~30 s a search here)
    pytest.param("llama2-7b", 16, 64, 4096, ("training.framework=automodel",), {"pp": (2,)},
                 marks=pytest.mark.slow),
    # 32 layers on 3 stages: every candidate's layers placed by Automodel's front-loaded split
    pytest.param("llama2-7b", 24, 48, 4096, ("training.framework=automodel",), {"pp": (3,)},
                 marks=pytest.mark.slow),
    # a plain PyTorch loop runs ZeRO-3 as FSDP (profile zero_stage_engines), as simulate does
    ("llama2-7b", 16, 64, 4096, ("training.framework=pytorch", "parallel.zero_stage=3"), {}),
    # replicas alone: the sharded stages only (FSDP's for pytorch, Megatron's 1 and 3)
    ("llama2-7b", 16, 64, 4096, ("training.framework=pytorch", "parallel.dp_replicate=2"), {}),
    ("llama2-7b", 16, 64, 4096, ("training.framework=megatron-bridge",
                                 "parallel.dp_replicate=2"), {}),
]


NARROW = {"tp": (1, 2), "pp": (1, 2), "cp": (1,)}
"""The default run's space for each case (under the case's own dimensions): TP 2 keeps sequence
parallelism and TP overlap on offer, PP 2 the virtual stages, and the micro batch up to 2, every
recompute, ZeRO stage and overlap switch are searched as in the whole space. The 11 default
searches' CPU 21.7 -> 14.9 s (2026-11-28, this 2-core host, one process); the whole space of
each case runs under ``-m slow`` (``-full``)."""


def _sized(cases):
    """Each default case twice: in the NARROW space by default and in the whole one under
    ``-m slow``; a case already slow runs in its whole space only."""
    for i, c in enumerate(cases):
        values, marks = (c.values, list(c.marks)) if hasattr(c, "values") else (c, [])
        name = f"{values[0]}-{'-'.join(s.split('=')[1] for s in values[4])}-{i}"
        slow = any(m.name == "slow" for m in marks)
        if not slow:
            yield pytest.param(*values, NARROW, id=name)
        yield pytest.param(*values, {}, id=f"{name}-full",
                           marks=marks if slow else [*marks, pytest.mark.slow])


@pytest.mark.parametrize("model,gpus,batch,seq,sets,dims,narrow", list(_sized(CASES)))
def test_every_candidate_simulates_as_the_config_given_to_simulate(model, gpus, batch, seq,
                                                                   sets, dims, narrow):
    """The ranked candidates and a random draw of the simulated ones, written as configs,
    load without a refusal and simulate to the search's own iteration time (before the fix
    the search built its candidates without the framework's parallel defaults and offered
    sequence parallelism, virtual stages and TP overlap to frameworks that refuse them)."""
    base = _base(model, gpus, batch, seq, sets)
    space = _space(base, {"max_micro_batch": 2, **narrow, **dims})
    result = search(base, [gpus], space, top_k=3, cache=None)
    assert result.top
    printed = json.loads(search_json(result))["top"]  # what `trainsim search --format json` prints
    sample = random.Random(0).sample(list(result.evaluated), min(5, len(result.evaluated)))
    drawn = [(p, r.evaluation) for p, r in zip(printed, result.top, strict=True)] + \
        [(e.to_dict(base), e) for e in sample]
    for entry, e in drawn:
        cfg = _public(entry, model, batch, seq, sets)
        assert cfg == e.candidate.to_config(base), e.candidate.label()
        t = simulate(cfg).iteration_time_s
        assert t == pytest.approx(e.iteration_time_s, rel=1e-9), e.candidate.label()
        assert entry["iteration_time_s"] == e.iteration_time_s


def test_lacking_features_are_never_offered():
    """A framework whose profile has no sequence parallelism, interleaved pipeline or TP
    overlap gets no candidate with one (DeepSpeed's: each refused by the loader)."""
    base = _base("llama2-7b", 16, 64, 4096, ("training.framework=deepspeed",))
    space = SearchSpace(max_micro_batch=1, overlap="on").held_by(base)
    keys = list(space.memory_keys(base, 16))
    assert keys and any(k.tp > 1 for k in keys) and any(k.pp > 1 for k in keys)
    assert not any(k.sequence_parallel or k.vpp > 1 for k in keys)
    assert not any(c.tp_comm_overlap for k in keys for c in space.variants(k))


@pytest.mark.parametrize("sets,dims,says", [
    # Gemma 2 on Megatron-Bridge: Gemma2DotProductAttention asserts cp == 1 (the loader's
    # catalog.defaults.softcap_attention refusal)
    (("training.framework=megatron-bridge", "parallel.cp=2"), {}, "takes no context parallelism"),
    (("training.framework=megatron-bridge",), {"cp": (2,)}, "--cp 2: parallel.cp=2"),
    (("training.framework=deepspeed", "parallel.vpp=2"), {}, "has no interleaved pipeline"),
    (("training.framework=deepspeed", "parallel.tp_comm_overlap=true"), {},
     "has no tp comm overlap"),
])
def test_a_fixed_value_no_candidate_takes_is_refused_with_its_rule(sets, dims, says):
    """Not "no parallel configuration is valid": the rule that refuses the value, in the
    loader's words."""
    model = "gemma-2-9b" if "megatron-bridge" in sets[0] else "llama2-7b"
    with pytest.raises(ConfigError, match=says):
        base = _base(model, 16, 64, 8192, sets)
        search(base, [16], SearchSpace(max_micro_batch=1, **dims).fixed_by(base.fixed),
               cache=None)


def test_every_split_refused_says_the_first_refusal():
    """A fixed field that every split's config refuses (dp_replicate=3 divides no data-parallel
    size of 16 GPUs) is reported with RunConfig's reason."""
    base = _base("llama2-7b", 16, 64, 4096, ("training.framework=megatron-bridge",
                                             "parallel.dp_replicate=3", "parallel.zero_stage=3"))
    result = search(base, [16], SearchSpace(max_micro_batch=1).fixed_by(base.fixed), cache=None)
    assert not result.top and result.refused
    assert "dp_replicate=3 does not divide" in str(nothing_found(result))


def test_hsdp_bound_counts_the_replica_all_reduce(monkeypatch):
    """Under HSDP each gradient reduce-scatter is followed by the all-reduce of its shard over
    the replicas (simulator._TaskGraph.comm): the refined bound counts it (higher than without
    it where the data-parallel tail or ZeRO-3 floor sets the bound) and stays
    below the simulated time."""
    sets = ("training.framework=megatron-bridge", "parallel.dp_replicate=2",
            "parallel.zero_stage=3")
    base = _base("llama2-7b", 16, 64, 4096, sets)
    space = SearchSpace(max_micro_batch=2).fixed_by(base.fixed)
    keys = loadable_keys(space, base, 16)  # HSDP needs a sharded replica
    cands = [space.variants(k)[0] for k in random.Random(1).sample(keys, 10)]
    with_replicas = [Bounds(base).refined(c) for c in cands]
    for c, b in zip(cands, with_replicas):
        assert b <= evaluate(c, base).iteration_time_s, c.label()

    def plain(pricer, cfg, name, kind, size, group):
        from trainsim.workload.ops import Comm
        return pricer.comm_time(Comm(name, kind, size, group))
    monkeypatch.setattr(layout_costs, "dp_comm_time", plain)
    monkeypatch.setattr(lower_bounds, "dp_comm_time", plain)
    without = [Bounds(base).refined(c) for c in cands]
    assert all(a >= b for a, b in zip(with_replicas, without))
    assert any(a > b for a, b in zip(with_replicas, without))


def test_replica_all_reduce_is_the_shard_over_the_replicas():
    """dp_comm_time of a reduce-scatter of S bytes on a replica's ranks = its own time + an
    all-reduce of S / (ranks of a replica) on the replica group; other collectives unchanged."""
    from trainsim.pricing import Pricer
    from trainsim.workload.ops import Comm

    base = _base("llama2-7b", 16, 64, 4096, ("training.framework=megatron-bridge",
                                             "parallel.dp_replicate=2", "parallel.zero_stage=3"))
    space = SearchSpace(max_micro_batch=1, tp=(1,), pp=(1,), cp=(1,)).fixed_by(base.fixed)
    cfg = space.variants(next(iter(space.memory_keys(base, 16))))[0].to_config(base)
    assert cfg.shard_ranks == 8 and cfg.parallel.dp_replicate == 2
    pricer, size = Pricer(cfg), 1e9
    rs = pricer.comm_time(Comm("g", "reduce_scatter", size, "dp_cp"))
    ar = pricer.comm_time(Comm("g", "all_reduce", size / 8, "dp_rep"))
    assert ar > 0
    assert layout_costs.dp_comm_time(pricer, cfg, "g", "reduce_scatter", size, "dp_cp") == \
        pytest.approx(rs + ar)
    ag = pricer.comm_time(Comm("g", "all_gather", size, "dp_cp"))
    assert layout_costs.dp_comm_time(pricer, cfg, "g", "all_gather", size, "dp_cp") == ag


@pytest.mark.slow  # an Automodel PP search (~20 s here)
def test_an_uneven_layout_is_printed_with_its_candidate():
    """Automodel's front-loaded split of 32 layers over 3 stages is in every printed candidate
    (the JSON's config and parallel section, the table, the CSV): without it the printed
    candidate is refused by the config loader (before, the output left it out)."""
    base = _base("llama2-7b", 24, 48, 4096, ("training.framework=automodel",))
    result = search(base, [24], _space(base, {"pp": (3,), "max_micro_batch": 1}), top_k=2,
                    cache=None)
    d = json.loads(search_json(result))
    assert d["top"] and d["pareto"]
    for entry in d["top"] + d["pareto"]:
        assert entry["config"]["pipeline_model_parallel_layout"] == "front_loaded"
        assert entry["parallel"]["pipeline_model_parallel_layout"] == "front_loaded"
    entry = d["top"][0]
    del entry["parallel"]["pipeline_model_parallel_layout"]
    with pytest.raises(ConfigError):
        _public(entry, "llama2-7b", 48, 4096, ("training.framework=automodel",))
    from rich.console import Console

    from trainsim.search.render import search_csv

    console = Console(width=300, record=True)
    console.print(render_search(result))
    assert "layout=front_loaded" in console.export_text()
    assert ",front_loaded," in search_csv(result)


def test_a_fixed_zero_stage_takes_the_loaders_engine_rule():
    """--set parallel.zero_stage=3 on a plain PyTorch loop runs FSDP (the loader's
    ``catalog.defaults.zero_engine``, profile ``zero_stage_engines``), not a refusal by DDP;
    a stage no engine of it runs (ZeroRedundancyOptimizer's 1 before torch 1.8) is refused in
    the loader's words."""
    base = _base("llama2-7b", 16, 64, 4096, ("training.framework=pytorch",
                                             "parallel.zero_stage=3"))
    assert base.data_parallel_impl == "fsdp1"
    sets = ("training.framework=pytorch", "training.framework_version=1.7",
            "parallel.zero_stage=1")
    with pytest.raises(ConfigError) as searched:
        _base("llama2-7b", 16, 64, 4096, sets)
    raw = {"model": "llama2-7b", "training": {"global_batch_size": 64, "seq_length": 4096},
           "cluster": {"gpu": GPU, "num_gpus": 16}}
    with pytest.raises(ConfigError) as loaded:
        run_config_from_dict(apply_overrides(raw, list(sets)))
    assert "ZeRO stage 1 first shipped in pytorch 1.8" in str(loaded.value)
    # the same refusal, the loader's naming the profile entry it read
    assert str(searched.value).split(": ", 1)[1] == str(loaded.value).split(": ", 1)[1]


@pytest.mark.parametrize("framework,engine,stages,says", [
    ("megatron-bridge", "megatron", (1, 3), "tries megatron's sharded stages 1, 3 only (not 0)"),
    ("pytorch", "fsdp1", (2, 3), "runs its fsdp1 engine at stages 2, 3"),
])
def test_replicas_alone_try_the_sharded_stages_and_say_so(framework, engine, stages, says):
    """--set parallel.dp_replicate=2 with no stage: HSDP shards within each replica, so the
    search tries the sharded stages the framework runs (and says so), not a refusal."""
    sets = (f"training.framework={framework}", "parallel.dp_replicate=2")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        base = build_base("llama2-7b", GPU, 16, 64, 4096, GPN, NIC, DTYPE, sets)
        space = search_space(None, None, None, 8, 1, "none", None, "search", base=base)
    said = [str(w.message) for w in seen if issubclass(w.category, TrainsimWarning)]
    assert any(re.search(re.escape(says), m) for m in said), said
    assert base.data_parallel_impl in (engine, None if engine == "megatron" else engine)
    keys = list(space.memory_keys(base, 16))
    assert keys and {k.zero for k in keys if k.dp * k.cp > 1} == set(stages)
