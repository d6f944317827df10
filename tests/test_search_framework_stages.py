"""The ZeRO stages a framework runs, in the loader and in the search: nanotron runs ZeRO-0
(DDP) and its own ZeRO-1 (``zero_stage: 1``, ZeroDistributedOptimizer; no Megatron switch,
no ZeRO-2 or -3) and overlaps the gradient reduction at stage 0 only (huggingface/nanotron
@ e24d2483 helpers.py init_optimizer, trainer.py init_model). The search offers what
``simulate`` accepts, the search's and plan's JSON say how to reproduce a result, and the
search's list of switches a framework may lack is the loader's."""

from __future__ import annotations

import json
import warnings

import pytest
from click.testing import CliRunner

from trainsim.catalog import apply_overrides, run_config_from_dict
from trainsim.catalog.defaults import SEARCH_SWITCHES, apply_framework
from trainsim.catalog.frameworks import framework_profile
from trainsim.cli import main
from trainsim.errors import ConfigError
from trainsim.search.cli_inputs import build_base
from trainsim.search.core import search
from trainsim.search.space import Candidate, SearchSpace, lacked

GPU, GPN, NIC, DTYPE = "h100-sxm-80gb", 8, 400.0, "bf16"
NANOTRON = ("training.framework=nanotron",)


def _base(model: str, gpus: int, batch: int, seq: int, sets: tuple[str, ...]):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build_base(model, GPU, gpus, batch, seq, GPN, NIC, DTYPE, sets)


def _loaded(parallel: dict) -> dict:
    raw = dict(parallel)
    apply_framework(raw, {"framework": "nanotron"})
    return raw


@pytest.mark.parametrize("stage", [2, 3])
def test_nanotron_refuses_the_stages_it_does_not_run(stage):
    """ZeroDistributedOptimizer is built for any zero_stage > 0 and shards the optimizer
    state only: a stage 2 or 3 would be priced as an engine nanotron does not have."""
    with pytest.raises(ConfigError, match=f"zero_stage={stage} under nanotron.*0, 1 only"):
        _loaded({"zero_stage": stage})


def test_nanotron_runs_stage_1_without_overlap_and_stage_0_with_it():
    assert _loaded({"zero_stage": 1})["zero_stage"] == 1
    assert _loaded({"zero_stage": 0, "overlap_grad_reduce": True})["overlap_grad_reduce"]
    with pytest.raises(ConfigError, match="at zero_stage 0 only, not at 1") as err:
        _loaded({"zero_stage": 1, "overlap_grad_reduce": True})
    # ZeRO-1 drops DDP only with fp32 accumulation (trainer.py L786-787 @ e24d2483)
    assert str(err.value).endswith("(accumulate_grad_in_fp32, the benchmarks' setting)")
    # ZeroDistributedOptimizer.step gathers after the step: no overlap; at stage 0 (the
    # validation rows' dp_overlap turns both on) there is no gather, so nothing refused
    with pytest.raises(ConfigError, match="overlap_param_gather=true.*at no stage, not at 1"):
        _loaded({"zero_stage": 1, "overlap_param_gather": True})
    assert _loaded({"zero_stage": 0, "overlap_grad_reduce": True,
                    "overlap_param_gather": True})["overlap_param_gather"]


def test_the_search_offers_nanotron_its_zero1_as_stage_1_and_no_zero3():
    """Before: stages [0, 3] (ZeRO-1 written as Megatron's switch, which nanotron lacks,
    was dropped; ZeRO-3 kept, as the megatron engine runs it)."""
    base = _base("llama3.2-1b", 16, 256, 4096, NANOTRON)
    space = SearchSpace(max_micro_batch=2).held_by(base)
    keys = list(space.memory_keys(base, 16))
    assert sorted({k.zero for k in keys}) == [0, 1]
    for k in keys:
        for c in space.variants(k):
            if k.zero == 1:
                assert not c.overlap_grad_reduce and not c.overlap_param_gather, c.label()
                cfg = c.to_config(base)  # as simulate builds it: no refusal
                p = cfg.parallel
                assert (p.zero_stage, p.distributed_optimizer, p.effective_zero_stage) == \
                    (1, False, 1)
    assert any(c.overlap_grad_reduce for k in keys if k.zero == 0 and k.dp > 1
               for c in space.variants(k))


def test_a_nanotron_zero1_result_reproduces_under_simulate():
    """The JSON's parallel section of a stage-1 result is accepted by the loader and gives
    the candidate's own config; and the JSON says ``refused`` (null here)."""
    base = _base("llama3.2-1b", 16, 256, 4096, NANOTRON)
    result = search(base, [16], SearchSpace(max_micro_batch=2, zero=(1,)), top_k=3, cache=None)
    out = json.loads(json.dumps(result.to_dict()))
    assert "refused" in out and out["refused"] is None
    entry, ranked = out["top"][0], result.top[0]
    assert entry["parallel"]["zero_stage"] == 1 and not entry["parallel"]["distributed_optimizer"]
    # review 6: the label says the stage the JSON writes, not Megatron's distributed optimizer
    assert entry["config"]["optimizer_sharding"] == "zero1", entry["config"]
    assert " zero1" in entry["label"] and "distopt" not in entry["label"]
    raw = {"model": "llama3.2-1b", "parallel": entry["parallel"],
           "training": {"global_batch_size": 256, "seq_length": 4096, "dtype": DTYPE,
                        "micro_batch_size": entry["config"]["micro_batch_size"]},
           "cluster": {"gpu": GPU, "num_gpus": 16, "gpus_per_node": GPN,
                       "nic_gbit_s_per_gpu": NIC}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cfg = run_config_from_dict(apply_overrides(raw, list(NANOTRON)))
    assert cfg == ranked.evaluation.candidate.to_config(base)


def test_refused_is_in_the_search_json():
    base = _base("llama2-7b", 16, 64, 4096, ("training.framework=megatron-bridge",
                                             "parallel.dp_replicate=3", "parallel.zero_stage=3"))
    result = search(base, [16], SearchSpace(max_micro_batch=1).fixed_by(base.fixed), cache=None)
    assert not result.top and "dp_replicate=3 does not divide" in result.to_dict()["refused"]


def test_the_search_lacks_what_the_loader_refuses():
    """One list (catalog.defaults.SEARCH_SWITCHES): each field it names is refused by the
    loader under a framework lacking its feature, and the search holds it (DeepSpeed: no
    sequence parallelism, interleaved pipeline or TP overlap)."""
    base = _base("llama2-7b", 16, 64, 4096, ("training.framework=deepspeed",))
    profile = framework_profile("deepspeed", None)
    lacks = lacked(base)
    assert lacks == {k for k, f in SEARCH_SWITCHES if profile.supports(f) is False}
    assert {"sequence_parallel", "virtual_pipeline_model_parallel_size",
            "tp_comm_overlap"} <= lacks
    for key in lacks:
        value = 2 if key.startswith("virtual") else True
        with pytest.raises(ConfigError, match="deepspeed"):
            apply_framework({key: value}, {"framework": "deepspeed"})
    assert ("tp_comm_overlap", False) in SearchSpace().held_by(base).pinned


def test_plan_json_best_carries_its_parallel_section():
    """`trainsim plan --format json`: the best configuration with the parallel section that
    reproduces it, as the search's JSON prints it."""
    res = CliRunner().invoke(main, ["plan", "llama3.2-1b", "--tokens", "1e9", "--days", "30",
                                    "--max-gpus", "8", "--seq", "4096", "--global-batch", "64",
                                    "--max-micro-batch", "1", "--workers", "1", "--format",
                                    "json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    best = out["best"]
    assert best["parallel"]["tensor_model_parallel_size"] == best["config"]["tp"]
    assert best["parallel"]["pipeline_model_parallel_size"] == best["config"]["pp"]


def test_nanotron_zero1_reduces_its_whole_gradient_buffer_in_one_collective():
    """Stage 0: DDP buckets of ddp_bucket_size (bucket_cap_mb 25 over bf16, 13,107,200
    parameters); stage 1: one all-reduce of the contiguous fp32 buffer
    (FP32GradientAccumulator.sync_gradients_across_dp), whatever the bucket size."""
    from trainsim.workload.sharding import dp_bucket_count

    def cfg(stage: int):
        raw = {"model": "llama2-7b", "parallel": {"zero_stage": stage},
               "training": {"global_batch_size": 64, "micro_batch_size": 1,
                            "seq_length": 4096, "dtype": DTYPE, "framework": "nanotron"},
               "cluster": {"gpu": GPU, "num_gpus": 16, "gpus_per_node": GPN}}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return run_config_from_dict(raw)

    zero0, zero1 = cfg(0), cfg(1)
    assert (zero0.parallel.dp_buckets, zero1.parallel.dp_buckets) == ("every_chunk", "whole")
    assert zero0.parallel.ddp_bucket_size == zero1.parallel.ddp_bucket_size == 13_107_200
    params = 6.7e9  # llama2-7b's ~6.7B parameters on one rank: ~512 buckets, capped at 32 layers
    assert dp_bucket_count(zero0, 32, params, 0, 0) == 32
    assert dp_bucket_count(zero0, 32, 13_107_200 * 3, 0, 0) == 3
    assert dp_bucket_count(zero1, 32, params, 0, 0) == 1


def test_a_pytorch_search_tries_fsdp_stages_as_simulate_runs_them():
    """A plain PyTorch loop runs 0 as DDP, 1 as DDP with ZeroRedundancyOptimizer and 2, 3 as
    FSDP (profile zero_stage_engines, the loader's zero_engine): the search tries all four,
    each with its engine (before: DDP only), and a stage-2 result's parallel section reproduces under simulate."""
    base = _base("llama3.2-1b", 16, 64, 4096, ("training.framework=pytorch",))
    space = SearchSpace(max_micro_batch=2).held_by(base)
    keys = list(space.memory_keys(base, 16))
    assert sorted({k.zero for k in keys if k.dp > 1}) == [0, 1, 2, 3]
    engines = {k.zero: Candidate(k).to_config(base).parallel.data_parallel_impl
               for k in keys if k.dp > 1 and k.pp == 1}
    assert engines == {0: "ddp", 1: "ddp", 2: "fsdp1", 3: "fsdp1"}
    result = search(base, [16], SearchSpace(max_micro_batch=1, zero=(2,), pp=(1,)), top_k=1,
                    cache=None)
    entry = json.loads(json.dumps(result.to_dict()))["top"][0]
    assert "data_parallel_impl" not in entry["parallel"]  # the loader picks it from the stage
    raw = {"model": "llama3.2-1b", "parallel": entry["parallel"],
           "training": {"global_batch_size": 64, "seq_length": 4096, "dtype": DTYPE,
                        "micro_batch_size": entry["config"]["micro_batch_size"],
                        "framework": "pytorch"},
           "cluster": {"gpu": GPU, "num_gpus": 16, "gpus_per_node": GPN,
                       "nic_gbit_s_per_gpu": NIC}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cfg = run_config_from_dict(raw)
    assert cfg == result.top[0].evaluation.candidate.to_config(base)
    assert cfg.parallel.data_parallel_impl == "fsdp1"


def test_a_fixed_gradient_overlap_keeps_nanotron_at_stage_0():
    """--set parallel.overlap_grad_reduce=true: every candidate has it, so the search tries
    the stages that overlap it only (not stage 1 with the fixed switch dropped)."""
    sets = (*NANOTRON, "parallel.overlap_grad_reduce=true")
    base = _base("llama3.2-1b", 16, 256, 4096, sets)
    space = SearchSpace(max_micro_batch=1).fixed_by(base.fixed).held_by(base)
    keys = [k for k in space.memory_keys(base, 16) if k.dp > 1]
    assert keys and {k.zero for k in keys} == {0}
    with pytest.raises(ConfigError, match="zero_stage 0 only"):
        SearchSpace(zero=(1,)).fixed_by(base.fixed).held_by(base)
    sets = (*NANOTRON, "parallel.overlap_param_gather=true")  # moot at 0, refused at 1
    base = _base("llama3.2-1b", 16, 256, 4096, sets)
    space = SearchSpace(max_micro_batch=1).fixed_by(base.fixed).held_by(base)
    assert {k.zero for k in space.memory_keys(base, 16) if k.dp > 1} == {0}


def test_one_reading_of_a_frameworks_zero_stages():
    """Review 7: catalog.defaults.zero_stages_run reads feature ``zero_stages`` for the loader
    and the search alike; stages_phrase words the overlap refusals of both."""
    from trainsim.catalog.defaults import stages_phrase, zero_stages_run
    from trainsim.catalog.frameworks import framework_profile

    assert zero_stages_run(framework_profile("nanotron", None)) == (0, 1)
    assert zero_stages_run(framework_profile("torchtitan", None)) is None
    assert stages_phrase((0,)) == "zero_stage 0 only" and stages_phrase(()) == "no stage"
    base = _base("llama3.2-1b", 16, 256, 4096, NANOTRON)
    assert base.zero_runs == (0, 1) and base.zero1_as_stage


def test_the_search_offers_no_size_the_framework_lacks():
    """olmo-core 2024-11 has no TP, CP or PP (TP from d6981b34c, CP from 7f7c4894d): the
    search tries size 1 only (catalog.defaults.SEARCH_SIZES, the loader's list). Before:
    2,634 memory groups, each with tp, pp or cp > 1 refused by the loader, and the JSON's
    ``refused`` naming ``parallel.cp=2``."""
    from trainsim.catalog.defaults import SEARCH_SIZES
    from trainsim.search.space import lacked_sizes

    sets = ("training.framework=olmo-core", "training.framework_version=2024-11")
    base = _base("llama2-7b", 16, 64, 4096, sets)
    assert lacked_sizes(base) == {"tp", "pp", "cp"}
    space = SearchSpace().held_by(base)
    assert {(k.tp, k.pp, k.cp) for k in space.memory_keys(base, 16)} == {(1, 1, 1)}
    result = search(base, [16], SearchSpace(max_micro_batch=2), top_k=3, cache=None)
    assert result.top and result.to_dict()["refused"] is None
    for short, _, words in SEARCH_SIZES:  # each is refused by the loader at this release
        with pytest.raises(ConfigError, match=f"no {words}"):
            apply_framework({short: 2}, {"framework": "olmo-core",
                                         "framework_version": "2024-11"})
    # a later release offers what it has (TP and CP from 2025-03)
    later = _base("llama2-7b", 16, 64, 4096, ("training.framework=olmo-core",))
    assert {"tp", "cp"}.isdisjoint(lacked_sizes(later))


@pytest.mark.parametrize("flag, words", [("--tp", "tensor"), ("--pp", "pipeline"),
                                         ("--cp", "context")])
def test_an_asked_for_size_the_framework_lacks_is_refused_in_the_loaders_words(flag, words):
    """``--tp 2`` for olmo-core 2024-11 said "tp must divide the heads ... widen --tp" once the
    search dropped the sizes the framework lacks; a size asked for stays in the space, so the
    loader's refusal (the release, its source) is the error again."""
    r = CliRunner().invoke(main, ["search", "llama2-7b", "--gpus", "16", "--global-batch", "64",
                                  "--seq", "4096", "--set", "training.framework=olmo-core",
                                  "--set", "training.framework_version=2024-11", flag, "2",
                                  "--workers", "1"])
    assert r.exit_code != 0 and f"has no {words} parallelism" in r.output, r.output
