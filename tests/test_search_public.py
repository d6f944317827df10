"""What `trainsim search` ranks is what `trainsim simulate` runs: each candidate, written as
the config a user would give ``simulate`` (the search's model, batch and hardware, its --set
fields and the candidate's parallel fields), is accepted by the config loader and simulated
to the same iteration time; a --set value that leaves no valid candidate is refused in one
line naming the rule; and HSDP's replica all-reduce is in the search's lower bound."""

from __future__ import annotations

import random
import warnings

import pytest

from trainsim.catalog import apply_overrides, run_config_from_dict
from trainsim.catalog.frameworks import uneven_split
from trainsim.errors import ConfigError
from trainsim.search import evaluation, layout_costs
from trainsim.search.cli_inputs import build_base, nothing_found
from trainsim.search.core import search
from trainsim.search.evaluation import Bounds, evaluate
from trainsim.search.space import Candidate, SearchSpace
from trainsim.simulator import simulate

GPU, GPN, NIC, DTYPE = "h100-sxm-80gb", 8, 400.0, "bf16"


def _base(model: str, gpus: int, batch: int, seq: int, sets: tuple[str, ...]):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the loader's 'attention X -> Y' notes
        return build_base(model, GPU, gpus, batch, seq, GPN, NIC, DTYPE, sets)


def _public(c, model: str, batch: int, seq: int, sets: tuple[str, ...], base):
    """The candidate as a config file for ``simulate``: its parallel fields (those it leaves
    unset left out) over the --set ones, and the framework's uneven layout where the search
    placed the layers by it (``Candidate.to_config``)."""
    parallel = {**dict(base.fixed),
                **{k: v for k, v in c.parallel_fields().items() if v is not None}}
    if uneven_split(base.layout_rule, base.model.num_layers, c.mem.pp, c.mem.vpp):
        parallel["pipeline_model_parallel_layout"] = base.layout_rule
    raw = {"model": model, "parallel": parallel,
           "training": {"global_batch_size": batch, "micro_batch_size": c.mem.micro_batch,
                        "seq_length": seq, "dtype": DTYPE},
           "cluster": {"gpu": GPU, "num_gpus": c.mem.num_gpus, "gpus_per_node": GPN,
                       "nic_gbit_s_per_gpu": NIC}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run_config_from_dict(apply_overrides(raw, list(sets)))


CASES = [  # (model, GPUs, batch, seq, --set, space)
    ("llama2-7b", 16, 64, 4096, ("training.framework=megatron-core",), {}),
    # sliding window + soft-capping, on the framework that runs its own attention and on one
    # that windows with Transformer Engine's
    ("gemma-2-9b", 16, 64, 8192, ("training.framework=megatron-bridge",), {}),
    ("gemma-2-9b", 16, 64, 8192, ("training.framework=megatron-core",), {}),
    ("mixtral-8x7b", 32, 64, 4096, ("training.framework=megatron-core",),
     {"ep": (8,), "max_micro_batch": 1}),
    ("llama2-7b", 16, 64, 4096, ("training.framework=megatron-bridge",
                                 "parallel.dp_replicate=2", "parallel.zero_stage=3"), {}),
    ("llama2-7b", 16, 64, 4096, ("training.framework=megatron-core",),
     {"zero": (3,), "pp": (2, 4)}),
    # frameworks without sequence parallelism, virtual stages or TP overlap (profile
    # features false), with their own DDP and ZeRO defaults
    ("llama2-7b", 16, 64, 4096, ("training.framework=deepspeed",), {}),
    ("llama2-7b", 16, 64, 4096, ("training.framework=llm-foundry",), {}),
    ("llama2-7b", 16, 64, 4096, ("training.framework=torchtitan",), {}),
    ("llama2-7b", 16, 64, 4096, ("training.framework=automodel",), {"pp": (2,)}),
]


@pytest.mark.parametrize("model,gpus,batch,seq,sets,dims", CASES,
                         ids=[f"{c[0]}-{'-'.join(s.split('=')[1] for s in c[4])}-{i}"
                              for i, c in enumerate(CASES)])
def test_every_candidate_simulates_as_the_config_given_to_simulate(model, gpus, batch, seq,
                                                                   sets, dims):
    """The ranked candidates and a random draw of the simulated ones, written as configs,
    load without a refusal and simulate to the search's own iteration time (before the fix
    the search built its candidates without the framework's parallel defaults and offered
    sequence parallelism, virtual stages and TP overlap to frameworks that refuse them)."""
    base = _base(model, gpus, batch, seq, sets)
    space = SearchSpace(**{"max_micro_batch": 2, **dims}).fixed_by(base.fixed)
    result = search(base, [gpus], space, top_k=3, cache=None)
    assert result.top
    drawn = [r.evaluation for r in result.top] + random.Random(0).sample(
        list(result.evaluated), min(5, len(result.evaluated)))
    for e in drawn:
        cfg = _public(e.candidate, model, batch, seq, sets, base)
        assert cfg == e.candidate.to_config(base), e.candidate.label()
        t = simulate(cfg).iteration_time_s
        assert t == pytest.approx(e.iteration_time_s, rel=1e-9), e.candidate.label()


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
    def kept(k) -> bool:  # the groups the search keeps (HSDP needs a sharded replica)
        try:
            Candidate(k).to_config(base)
        except ConfigError:
            return False
        return True
    keys = [k for k in space.memory_keys(base, 16) if kept(k)]
    cands = [space.variants(k)[0] for k in random.Random(1).sample(keys, 10)]
    with_replicas = [Bounds(base).refined(c) for c in cands]
    for c, b in zip(cands, with_replicas):
        assert b <= evaluate(c, base).iteration_time_s, c.label()

    def plain(pricer, cfg, name, kind, size, group):
        from trainsim.workload.ops import Comm
        return pricer.comm_time(Comm(name, kind, size, group))
    monkeypatch.setattr(layout_costs, "dp_comm_time", plain)
    monkeypatch.setattr(evaluation, "dp_comm_time", plain)
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
