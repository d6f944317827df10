"""robust62: the forty-second fuzz round's classes (``benchmarks/fuzz62.py``) and the leads of
collfab61 / robust61 (a forced ``cluster.nccl_algo`` over the context-parallel, HSDP, expert and
tied-embedding groups; the service's search / sweep checks; ``trainsim collective --nvls /
--in-network-reduction``). Each test but the controls (named so) fails on the previous src."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest
from helpers import SMALL_RUN, cli, one_error_line
from helpers import service_problem as _service

from trainsim.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
MOE = {"num_experts": 8, "moe_router_topk": 2, "moe_ffn_hidden_size": 256}
PADDED = {**MOE, "moe_capacity_factor": 1.0, "moe_pad_expert_input_to_capacity": True}


def _raw(model=None, parallel=None, gpus=16, gpn=8, **cluster):
    raw = copy.deepcopy(SMALL_RUN)
    raw["model"].update(model or {})
    raw["parallel"].update(parallel or {})
    raw["training"].update(global_batch_size=32)
    raw["cluster"].update(num_gpus=gpus, gpus_per_node=gpn, **cluster)
    return raw


def _cfg(raw):
    from trainsim.catalog import run_config_from_dict

    return run_config_from_dict(copy.deepcopy(raw))


# ------------------------------------------ a forced nccl_algo over the groups collfab61 skipped

GROUPS = {  # name: (model, parallel, gpus, gpus a node, algorithm, the group's shape)
    "cp": ({}, {"cp": 2}, 8, 8, "tree", "(8 ranks, 8 per node)"),
    "hsdp replicas": ({}, {"dp_replicate": 2, "zero_stage": 3, "data_parallel_impl": "fsdp2"},
                      16, 8, "nvls", "(2 ranks, 1 per node)"),
    "unsharded all-reduce": ({}, {}, 16, 1, "pat", "(16 ranks, 1 per node)"),
    "expert tp": (MOE, {"etp": 2}, 16, 8, "tree", "(2 ranks, 2 per node)"),
    "expert counts gather": (MOE, {"ep": 8}, 16, 8, "nvls_tree", "(8 ranks, 8 per node)"),
    "expert dp": (PADDED, {"ep": 8}, 16, 8, "nvls_tree", "(2 ranks, 1 per node)"),
    "tied embedding": ({"tied_embeddings": True}, {"pp": 2}, 16, 4, "nvls_tree",
                       "(2 ranks, 1 per node)"),
    # collfab61 lead 1 (a kind one group cannot run beside one it can): sequence parallelism's
    # all-gather over two nodes under tree; the vocab-parallel loss's all-reduce under PAT
    "sequence-parallel gather": ({}, {"tp": 2, "sequence_parallel": True}, 4, 1, "tree",
                                 "cannot run all_gather on this group (2 ranks, 1 per node)"),
    "loss all-reduce": ({}, {"tp": 2}, 4, 1, "pat",
                        "cannot run all_reduce on this group (2 ranks, 1 per node)"),
}


@pytest.mark.parametrize("name", list(GROUPS))
def test_a_forced_algorithm_a_group_cannot_run_is_refused_before_queueing(name):
    """main checked the tensor-parallel group and, without cp or HSDP, the data-parallel one
    for any of three kinds: these were queued by the service and refused once priced."""
    from trainsim.simulator import _simulate, simulate

    model, parallel, gpus, gpn, algo, shape = GROUPS[name]
    raw = _raw(model, parallel, gpus, gpn, nccl_algo=algo)
    refused = _service("simulate", raw)
    assert refused is not None and refused[0] == 422
    assert refused[2].startswith(f"cluster.nccl_algo={algo}: algorithm '{algo}' cannot run ")
    assert shape in refused[2]
    with pytest.raises(ConfigError) as exc:
        simulate(_cfg(raw))
    assert str(exc.value) == refused[2]
    with pytest.raises(ConfigError) as priced:  # the pricer refuses it in the same words
        _simulate(_cfg(raw), False, None, None)
    assert str(priced.value) == refused[2]


@pytest.mark.parametrize("algo", ["tree", "nvls", "nvls_tree", "pat", "collnet"])
@pytest.mark.parametrize(("model", "parallel", "gpus", "gpn"), [
    ({}, {"cp": 2}, 16, 8), ({}, {"cp": 2, "tp": 2}, 16, 4),
    ({}, {"dp_replicate": 2, "zero_stage": 3, "data_parallel_impl": "fsdp2"}, 32, 8),
    ({}, {"dp_replicate": 2, "zero_stage": 3, "data_parallel_impl": "fsdp2", "tp": 2}, 16, 2),
    ({}, {"distributed_optimizer": True}, 16, 8), ({}, {"zero_stage": 3}, 16, 1),
    (MOE, {"ep": 2, "etp": 2, "tp": 2, "sequence_parallel": True}, 16, 8),
    (MOE, {"ep": 4}, 16, 2), (PADDED, {"ep": 4}, 16, 4),
    (MOE, {"ep": 2, "moe_token_dispatcher_type": "allgather"}, 16, 1),
    ({"tied_embeddings": True}, {"pp": 2}, 16, 8), ({"tied_embeddings": True}, {"pp": 2}, 32, 4),
])
def test_control_nothing_the_pricer_runs_is_refused_up_front(algo, model, parallel, gpus, gpn):
    """Control: every up-front refusal is one the pricer gives (``_simulate`` skips the check);
    where the pricer runs the run, nothing is refused."""

    cluster = {"nccl_algo": algo, "in_network_reduction": algo == "collnet"}
    cfg = _cfg(_raw(model, parallel, gpus, gpn, **cluster))
    from helpers import load_script

    grid = load_script(Path(__file__).resolve().parents[1] / "benchmarks" / "forced_grid62.py")
    grid.assert_refused_alike(cfg, algo)


# ------------------------------------------ search and sweep with what their points cannot run

SEARCH = ["search", "gpt3-350m", "--global-batch", "16", "--seq", "512", "--workers", "1",
          "--max-micro-batch", "1", "--overlap", "off", "--format", "json", "--top", "1"]


def test_search_skips_the_layouts_a_forced_algorithm_cannot_run():
    """collfab61 lead 2: the search stopped at the first candidate (tp 8 inside a node) that
    tree cannot run, though tp 1 across the two nodes runs it."""
    r = cli(*SEARCH, "--gpus", "16", "--set", "cluster.nccl_algo=tree")
    assert r.exit_code == 0, r.output
    top = json.loads(r.stdout)["top"][0]["parallel"]
    assert top["tensor_model_parallel_size"] < 8


def test_search_refuses_in_one_line_and_the_service_alike():
    """main: a 'search: refined bound unavailable (ConfigError(...))' line before the error,
    and the service's search check queued it."""
    r = cli(*SEARCH, "--gpus", "8", "--tp", "1", "--pp", "1", "--zero", "0", "--set",
            "cluster.nccl_algo=pat")
    line = one_error_line(r).removeprefix("error: ")
    assert "refined bound" not in r.output
    assert line.startswith("no parallel configuration of gpt3-350m is valid on 8 GPUs: every "
                           "split the sizes allow is refused, e.g. TP1 PP1 DP8 mb1: "
                           "cluster.nccl_algo=pat: ")
    job = _service("search", {}, {"model": "gpt3-350m", "gpus": 8, "global_batch": 16,
                                  "seq": 512, "tp": "1", "pp": "1", "zero": "0",
                                  "max_micro_batch": 1, "overlap": "off",
                                  "set": ["cluster.nccl_algo=pat"]})
    assert job is not None and job[2] == line


def test_control_the_service_queues_a_search_some_layout_runs():
    assert _service("search", {}, {"model": "gpt3-350m", "gpus": 16, "global_batch": 16,
                                   "seq": 512, "max_micro_batch": 1, "overlap": "off",
                                   "set": ["cluster.nccl_algo=tree"]}) is None


@pytest.mark.parametrize(("cluster", "vary"), [
    ({"nccl_algo": "pat"}, "parallel.tp=1,2"), ({}, "parallel.tp=3,5")])
def test_the_service_refuses_a_sweep_no_point_of_which_is_valid(tmp_path, cluster, vary):
    """main: the sweep job was queued and failed ('no point of the sweep is a valid config')."""
    raw = _raw(**cluster)
    path = tmp_path / "run.json"
    path.write_text(json.dumps(raw))
    line = one_error_line(cli("sweep", str(path), "--vary", vary)).removeprefix("error: ")
    assert line.startswith("no point of the sweep is a valid config; first error: ")
    job = _service("sweep", raw, {"vary": [vary]})
    assert job is not None and job[2] == line


def test_control_the_service_queues_a_sweep_one_point_of_which_runs():
    assert _service("sweep", _raw(nccl_algo="pat"), {"vary": ["cluster.nccl_algo=pat,ring"]}) \
        is None


# ------------------------------------------ trainsim collective: SHARP, NVLS off, option names

def _collective(*args):
    return cli("collective", "--sizes", "16M:16M", "--gpus", "16", "--format", "json", *args)


def test_collective_prices_collnet_with_in_network_reduction_and_nvls_off():
    """collfab61 lead 5: neither could be priced from the CLI."""
    row = json.loads(_collective("--in-network-reduction", "--algorithm", "collnet").stdout)[0]
    assert row["algorithm"] == "collnet"
    plain = json.loads(_collective().stdout)[0]
    off = json.loads(_collective("--no-nvls").stdout)[0]
    assert plain["algorithm"].startswith("nvls") and not off["algorithm"].startswith("nvls")
    assert off["time_us"] > plain["time_us"]


@pytest.mark.parametrize(("args", "start"), [
    (("--fabric", "efa", "--in-network-reduction"),
     "--in-network-reduction but --fabric=efa has no switch that reduces"),
    (("--backend", "flow", "--in-network-reduction"),
     "--in-network-reduction is priced by the analytical network backend only"),
    (("--algorithm", "pat"), "--algorithm=pat: algorithm 'pat' cannot run all_reduce"),
    (("--algorithm", "pat", "--backend", "flow"), "--algorithm=pat: algorithm 'pat' cannot run"),
    (("--topology", "bogus"), "--topology='bogus' is unknown"),
    (("--topology", "torus", "--fabric", "efa"), "--fabric=efa is priced by the analytical"),
    (("--gpus-per-node", "3"), "--gpus=16 is not a multiple of --gpus-per-node=3"),
])
def test_collective_refusals_name_its_options(args, start):
    """main: no --in-network-reduction option; the rest named cluster.* fields or nothing."""
    assert one_error_line(_collective(*args)).removeprefix("error: ").startswith(start)


def test_control_the_config_path_keeps_its_field_names():
    with pytest.raises(ConfigError) as exc:
        _cfg(_raw(fabric="efa", in_network_reduction=True))
    assert str(exc.value) == ("cluster.in_network_reduction=true but cluster.fabric=efa has no "
                              "switch that reduces (SHARP, NCCL's CollNet, needs an InfiniBand "
                              "fabric); set in_network_reduction false")


# ------------------------------------------ refusals that named no field

@pytest.mark.parametrize(("model", "parallel", "start"), [
    ({}, {"pp": 2, "pipeline_schedule": "interleaved_zb"},
     "parallel.pipeline_schedule=interleaved_zb needs parallel.virtual_pipeline_model"),
    ({}, {"pp": 2, "vpp": 2, "pipeline_schedule": "gpipe"},
     "parallel.pipeline_schedule=gpipe runs one model chunk per rank; parallel.virtual"),
    ({}, {"pp": 2, "pipeline_schedule": "zbv", "vpp": 3},
     "parallel.pipeline_schedule=zb_v places two chunks per rank as a V: parallel.virtual"),
    ({"num_layers": 6}, {"pp": 2, "vpp": 2},
     "layers per pipeline stage [3] (model.num_layers=6 over parallel.pp=2) are not divisible"),
    ({"num_layers": 8}, {"pp": 4, "decoder_first_pipeline_num_layers": 1},
     ("parallel.decoder_first_pipeline_num_layers=1 leaves 7 layers of model.num_layers=8 for "
      "3 middle stages of pp=4, which do not split evenly")),
    (MOE, {"ep": 8, "etp": 4}, "parallel.ep*etp=8*4 must divide tp*cp*dp="),
])
def test_a_layout_refusal_names_its_fields(model, parallel, start):
    """main: 'pipeline_schedule=...', 'ep*etp=...', 'the 7 layers left for the 3 middle stages
    do not split evenly' named no section (or no field at all)."""
    with pytest.raises(ConfigError) as exc:
        _cfg(_raw(model, parallel))
    assert str(exc.value).startswith(start)


@pytest.mark.parametrize(("item", "start"), [
    ("PARALLEL.TP=2", ("--set PARALLEL.TP: unknown section 'PARALLEL' (did you mean "
                      "'parallel'?); a --set names a field of model, parallel, training or "
                      "cluster")),
    ("bogus.tp=2", "--set bogus.tp: unknown section 'bogus'"),
    (".parallel.tp=2", "--set .parallel.tp: unknown section ''"),
])
def test_a_set_of_an_unknown_section_names_the_set(tmp_path, item, start):
    """main: "unknown section 'bogus'; expected ... (a key that holds YAML anchors starts with
    x-, e.g. x-bogus)": a config file's hint, no --set named."""
    path = tmp_path / "run.json"
    path.write_text(json.dumps(_raw()))
    line = one_error_line(cli("simulate", str(path), "--set", item))
    assert line.removeprefix("error: ").startswith(start)


# ------------------------------------------ goodput jobs with a window of days

def _goodput(**options):
    raw = _raw()
    raw["training"]["train_tokens"] = 1e9
    return _service("goodput", raw, {"trials": 3, **options})


def test_the_service_refuses_a_window_shorter_than_one_iteration():
    """main: queued (the check read no window of days), then refused when run."""
    job = _goodput(days=1e-9)
    assert job is not None and job[1] == "options.days"
    assert job[2].startswith("days=1e-09 (options.days) is a window of 8.64e-05 s, shorter than "
                             "one iteration (")


def test_the_service_refuses_a_window_of_too_many_trial_rounds():
    job = _goodput(days=1e9)
    assert job is not None and job[1] == "options.days"
    assert job[2].startswith("goodput trial-rounds (trials x interruptions per run): about ")


def test_control_the_service_queues_a_window_of_one_day():
    assert _goodput(days=1) is None


# ------------------------------------------ activation CPU offloading where the trainer has none

def _offload(framework):
    raw = _raw({"num_layers": 8}, {"cpu_offloading_num_layers": 2}, gpus=8)
    raw["training"]["framework"] = framework
    return raw


def test_torchtitan_has_no_activation_cpu_offloading():
    """robust61 lead 2: taken under torchtitan and priced as Megatron-core's offload; its
    trainer has none (only FSDP2's parameter offload; experiments/graph_trainer's pass aside)."""
    with pytest.raises(ConfigError) as exc:
        _cfg(_offload("torchtitan"))
    assert str(exc.value).startswith("parallel.cpu_offloading_num_layers=2 but torchtitan ")
    assert "has no activation CPU offloading" in str(exc.value)


def test_control_megatron_core_offloads():
    assert _cfg(_offload("megatron-core")).parallel.cpu_offloading_num_layers == 2


# ------------------------------------------ the round

@pytest.mark.slow
def test_the_whole_round_finds_no_class():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import fuzz62

    assert fuzz62.main([]) == 0
