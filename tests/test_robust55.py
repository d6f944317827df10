"""robust55: the thirty-fifth fuzz round's classes (``benchmarks/fuzz55.py``): MoE-only parallel
settings on a dense model dropped in silence, a failure profile's mistyped ``observed`` key read
as left out, and the service's number options read otherwise than the CLI's flags."""

from __future__ import annotations

import copy
import json
import random
import sys
import warnings
from pathlib import Path

import pytest

from trainsim.errors import CatalogError, ConfigError

DENSE = {"model": {"hidden_size": 256, "num_layers": 4, "num_attention_heads": 4,
                   "vocab_size": 1024},
         "parallel": {}, "training": {"global_batch_size": 16, "seq_length": 512},
         "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8,
                     "compute_db": None}}
MOE_MODEL = {"num_experts": 8, "moe_router_topk": 2, "moe_ffn_hidden_size": 256}
MOE_SETTINGS = [("moe_token_dispatcher_type", "deepep"), ("moe_token_dispatcher_type", "allgather"),
                ("moe_overlap_ep_comm", True), ("moe_dispatch_fp8", True),
                ("moe_deepep_num_sms", 20), ("moe_hybridep_num_sms", 16),
                ("moe_router_dtype", "fp64"), ("moe_permute_fusion", True),
                ("moe_shared_expert_overlap", True), ("fp8_gemm_grid_excludes_exchange", True),
                ("flex_two_ranks", ["deepep"])]


def _fuzz55():
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import fuzz55
    return fuzz55


def _run(parallel: dict, model: dict | None = None, training: dict | None = None):
    from trainsim.catalog import run_config_from_dict

    cfg = copy.deepcopy(DENSE)
    cfg["parallel"].update(parallel)
    cfg["model"].update(model or {})
    cfg["training"].update(training or {})
    return run_config_from_dict(cfg)


# ------------------------------------------------------------ MoE-only settings, dense model

@pytest.mark.parametrize("name,value", MOE_SETTINGS)
def test_a_moe_only_parallel_setting_on_a_dense_model_is_refused(name, value):
    """fuzz55 clash: ``moe_token_dispatcher_type: deepep`` (and nine more MoE-only parallel
    fields) on a dense model built and simulated as if not given, while the model's own MoE
    fields (``moe_router_topk``) are refused: refused alike now, naming the field."""
    with pytest.raises(ConfigError, match=rf"parallel.{name}=.* is a mixture-of-experts "
                                          "setting but the model is dense"):
        _run({name: value})


@pytest.mark.parametrize("name,value", MOE_SETTINGS)
def test_the_same_setting_on_a_moe_model_builds(name, value):
    """The refusal is the dense model's: a MoE model takes each (with the dispatcher the
    setting needs where it needs one)."""
    parallel = {name: value, "ep": 2}
    if name in ("moe_deepep_num_sms", "flex_two_ranks"):
        parallel["moe_token_dispatcher_type"] = "deepep"
    if name == "moe_hybridep_num_sms":
        parallel["moe_token_dispatcher_type"] = "hybridep"
    if name == "moe_dispatch_fp8":
        parallel["moe_token_dispatcher_type"] = "deepep"
    training = {"dtype": "fp8", "fp8_recipe": "blockwise"} if "fp8" in name else {}
    got = _run(parallel, MOE_MODEL, training).parallel
    want = tuple(value) if isinstance(value, list) else value
    assert getattr(got, name) == want


@pytest.mark.parametrize("parallel", [{"moe_shared_expert_overlap": False},
                                      {"moe_overlap_ep_comm": False},
                                      {"moe_token_dispatcher_type": "alltoall"},
                                      {"moe_permute_fusion": False}, {"flex_two_ranks": []}])
def test_a_dense_model_takes_a_moe_switch_left_off_or_at_its_default(parallel):
    """A validation row writes every option switch (``moe_shared_expert_overlap: false`` where
    its options cell lacks it): a switch left off or a default asks nothing of a dense run."""
    assert not _run(parallel).model.is_moe


def test_a_dense_runs_resolved_config_reads_back_under_every_framework_entry():
    """A framework profile fills its MoE defaults for every run (Megatron-Bridge's
    ``moe_router_dtype: fp32``, torchtitan's dispatcher): a dense run's resolved config states
    them and must read back (robust52's contract), the profile's value not refused."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from fuzz_combos_draw import FRAMEWORKS, _versions

    from trainsim.catalog import run_config_from_dict
    from trainsim.config._build import to_dict
    from trainsim.errors import TrainsimError

    read = 0
    warnings.simplefilter("ignore")
    for fw in FRAMEWORKS:
        for version in [None, *_versions(fw)]:
            training = {"framework": fw, **({"framework_version": version} if version else {})}
            try:
                rc = _run({}, training=training)
            except TrainsimError:
                continue
            resolved = json.loads(json.dumps(to_dict(rc)))
            assert run_config_from_dict(resolved).parallel == rc.parallel, (fw, version)
            read += 1
    assert read > 100


def test_search_refuses_a_moe_only_set_on_a_dense_model():
    """``trainsim search --set parallel.moe_token_dispatcher_type=deepep`` on a dense model
    ranked its candidates as if not given (each candidate dropped it); refused in one line."""
    from trainsim.search.cli_inputs import build_base

    model = "llama3-8b"
    with pytest.raises(ConfigError, match=r"--set parallel.moe_token_dispatcher_type='deepep' "
                                          "is a mixture-of-experts setting"):
        build_base(model, "h100-sxm-80gb", 8, 16, 512, 8, 400.0, "bf16",
                   ("parallel.moe_token_dispatcher_type=deepep",))
    base = build_base(model, "h100-sxm-80gb", 8, 16, 512, 8, 400.0, "bf16",
                      ("parallel.moe_shared_expert_overlap=false",))
    assert not base.model.is_moe


# ------------------------------------------------------------ a user's failure profile

PROFILE = {"name": "mine", "observed": {"gpus_per_node": 8},
           "modes": {"node": {"per_1000_component_days": 6.5, "component": "node"}}}


@pytest.mark.parametrize("key", ["gpus-per-node", "gpus_per_nod", "GPUS_PER_NODE", "gpu"])
def test_a_mistyped_observed_key_of_a_failure_profile_is_refused(key):
    """fuzz55 usercatalog: ``observed: {gpus-per-node: 8}`` answered as if the key were left
    out (the rates per component-day never read it); unknown now, with the near name."""
    from trainsim.reliability.config import profile_from_dict

    data = copy.deepcopy(PROFILE)
    data["observed"] = {key: 8}
    with pytest.raises(CatalogError, match=r"unknown field failures.observed\.") as exc:
        profile_from_dict(data)
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize("value", ["x", -1, 0, 1.5, True])
def test_an_observed_value_is_checked_where_given(value):
    from trainsim.reliability.config import profile_from_dict

    data = copy.deepcopy(PROFILE)
    data["observed"] = {"gpus_per_node": value}
    with pytest.raises(CatalogError, match="observed.gpus_per_node"):
        profile_from_dict(data)


def test_the_catalogs_failure_profiles_still_load():
    from trainsim.reliability.config import load_profile, profile_names

    for name in profile_names():
        assert load_profile(name).modes


# ------------------------------------------------------------ the service's number options

def _problem(kind: str, **options):
    from trainsim.service.jobs import problem
    from trainsim.service.settings import Settings

    base = _fuzz55().SERVICE_BASE[kind]
    return problem(kind, DENSE if kind == "goodput" else {}, {**base, **options},
                   Settings(workers=0))


@pytest.mark.parametrize("value", [True, False, "\uff12", "\u0662", "1_0", [2]])
@pytest.mark.parametrize("kind,option", [("plan", "price"), ("plan", "grid"),
                                         ("search", "pareto_slowdown"), ("goodput", "days")])
def test_a_service_number_option_reads_text_as_the_cli_does(kind, option, value):
    """fuzz55 service: ``options.price: true`` was 1.0, ``'\uff12'`` and ``'\u0662'`` were
    2 and ``'1_0'`` 10, where the CLI's flag refuses each (ASCII digits, underscores in threes,
    no bool): refused naming the option."""
    got = _problem(kind, **{option: value})
    assert got is not None and got[1] == f"options.{option}", got


@pytest.mark.parametrize("option,value", [("pue", 1000), ("pue", 0.5), ("grid", 1e5),
                                          ("node_overhead", 100), ("gpu_idle_fraction", 2),
                                          ("nic_gbps", 0)])
def test_a_service_plan_option_beyond_the_cli_flags_range_is_refused(option, value):
    """``trainsim plan --pue 1000`` is refused (1..10) while a plan job took it."""
    got = _problem("plan", **{option: value})
    assert got is not None and got[1] == f"options.{option}", got


@pytest.mark.parametrize("option,value", [("pue", 1.5), ("pue", "1.5"), ("grid", "1_000"),
                                          ("price", " 2 "), ("node_overhead", 0)])
def test_a_service_number_option_the_cli_reads_is_taken(option, value):
    assert _problem("plan", **{option: value}) is None


# ------------------------------------------------------------ the round itself

@pytest.mark.parametrize("surface,count", [("clash", 300), ("usercatalog", 120),
                                           ("service", 0), ("cliopts", 30), ("v2edges", 8)])
def test_a_seeded_sample_of_each_surface_finds_no_class(surface, count):
    """A seeded sample of each surface (all of ``service``; a few of the costly ones)."""
    fuzz55 = _fuzz55()
    import tempfile

    import fuzz_checks

    rng = random.Random(55)
    warnings.simplefilter("ignore")
    with tempfile.TemporaryDirectory() as workdir:
        surfaces = fuzz55.surfaces(workdir, rng)
        out = fuzz_checks.timed_sweep(surfaces, {surface}, count, rng, {}, 60.0)
    assert out["failures"] == {}, out["failures"]
    assert out["counts"][surface] == (count or 211)


@pytest.mark.slow
def test_the_whole_round_finds_no_class():
    assert _fuzz55().main([]) == 0


# ------------------------------------------------------------ --set reliability.* unread

@pytest.mark.parametrize("args", [
    ["simulate", "RUN"], ["sweep", "RUN", "--vary", "parallel.tp=1,2"],
    ["export", "RUN", "--simai", "OUT"],
    ["search", "llama3-8b", "--gpus", "8", "--global-batch", "16", "--seq", "512"],
    ["plan", "llama3-8b", "--tokens", "1e9", "--days", "1", "--max-gpus", "8"]])
def test_a_set_of_the_reliability_section_is_refused_where_nothing_reads_it(args, tmp_path):
    """fuzz55 cliopts: ``simulate --set reliability.checkpoint.mode=nan`` answered (one
    iteration ignores the section), as did sweep, export, search and plan: refused in one line
    naming the field; goodput, which reads it, still takes it."""
    from click.testing import CliRunner

    from trainsim.cli import main

    run = tmp_path / "run.json"
    run.write_text(json.dumps(DENSE))
    args = [str(run) if a == "RUN" else str(tmp_path / "w.txt") if a == "OUT" else a
            for a in args]
    r = CliRunner().invoke(main, [*args, "--set", "reliability.checkpoint.mode=nan"])
    assert r.exit_code == 2, r.output
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "--set reliability.checkpoint.mode: only trainsim goodput" \
        in lines[0], r.stderr
    ok = CliRunner().invoke(main, ["goodput", str(run), "--tokens", "1e9", "--trials", "5",
                                   "--set", "reliability.checkpoint.mode=blocking"])
    assert ok.exit_code == 0, ok.output


@pytest.mark.parametrize("command", [
    ["search", "llama3-8b", "--gpus", "8", "--global-batch", "16", "--seq", "512"],
    ["plan", "llama3-8b", "--tokens", "1e9", "--days", "1", "--max-gpus", "8"]])
@pytest.mark.parametrize("sets", [["training.framework={}"], ["training.framework=[]"],
                                  ["training.framework=megatron-lm",
                                   "training.framework_version={}"]])
def test_a_framework_set_as_a_mapping_or_list_is_refused_in_one_line(command, sets):
    """fuzz55 cliopts: ``search --set training.framework_version={}`` was "internal error:
    TypeError: unhashable type: 'dict'" (the search read the framework's profile with a
    cached lookup before the config check); one line now, as simulate says it."""
    from click.testing import CliRunner

    from trainsim.cli import main

    args = [*command, "--workers", "1"]
    for s in sets:
        args += ["--set", s]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 2 and not isinstance(r.exception, TypeError), r.output
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "framework" in lines[0] and "internal error" not in lines[0]
