"""robust61: the forty-first fuzz round's classes (``benchmarks/fuzz61.py``) and robust60's
leads 1 and 3 (``full_iteration`` before Megatron-core 0.14 taken; the graph-scope comments).
Each test but the controls (named so) fails on the previous src."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest
from helpers import SMALL_RUN, cli, one_error_line

from trainsim.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]


def _raw(cluster=None, parallel=None, training=None, gpus=16):
    raw = copy.deepcopy(SMALL_RUN)
    raw["cluster"].update(num_gpus=gpus, **(cluster or {}))
    raw["parallel"].update(parallel or {})
    raw["training"].update(global_batch_size=32, **(training or {}))
    return raw


def _load(raw):
    from trainsim.catalog import run_config_from_dict

    return run_config_from_dict(copy.deepcopy(raw))


def _simulate(raw):
    from trainsim.simulator import simulate

    return simulate(_load(raw))


# ------------------------------------------------------------------ what a fabric runs

@pytest.mark.parametrize(("cluster", "words"), [
    ({"fabric": "tcpx", "nccl_proto": "LL128"}, "nccl_proto=LL128 but cluster.fabric=tcpx"),
    ({"fabric": "TCPX", "nccl_proto": "ll"}, "nccl_proto=LL but cluster.fabric=tcpx"),
    ({"fabric": "tcpx", "nccl_algo": "tree"}, "nccl_algo=tree but cluster.fabric=tcpx"),
    ({"node": "a3-highgpu-8g", "nccl_algo": "nvls_tree"}, "cluster.fabric=tcpx runs NCCL's ring"),
    ({"fabric": "efa", "in_network_reduction": True}, "in_network_reduction=true but cluster.fabric=efa"),
    ({"fabric": "tcpx", "in_network_reduction": True}, "cluster.fabric=tcpx has no switch"),
])
def test_what_gpudirect_tcpx_or_efa_cannot_run_is_refused_naming_the_field(cluster, words):
    """GPUDirect-TCPX runs ring / Simple only ('TCPX only supports Ring algorithm'); SHARP needs
    InfiniBand switches. main priced a forced LL128 on TCPX faster than its ring."""
    raw = _raw(cluster)
    if "node" in cluster:
        raw["cluster"] = {"node": cluster["node"], "num_gpus": 16, "compute_db": None,
                          "nccl_algo": cluster["nccl_algo"]}
    with pytest.raises(ConfigError, match=words.replace("(", r"\(")):
        _load(raw)


def test_control_tcpx_spelt_as_it_runs_answers_as_auto():
    auto = _simulate(_raw({"fabric": "tcpx"})).iteration_time_s
    assert _simulate(_raw({"fabric": "tcpx", "nccl_algo": "Ring", "nccl_proto": "simple"})
                     ).iteration_time_s == auto
    assert _simulate(_raw({"fabric": "infiniband", "in_network_reduction": True})).iteration_time_s


def test_a_tcpx_cluster_binds_no_nvls_buffers():
    """GPUDirect-TCPX runs with NCCL_NVLS_ENABLE=0; main counted NCCL's NVLS buffers (1.6 GB
    here) on an A3 High run that stated its NCCL release."""
    def peak(**cluster):
        return _simulate(_raw({"nccl_version": "2.21.5", **cluster})).peak_memory_bytes

    assert peak(fabric="tcpx") == peak(fabric="tcpx", nvls=False) < peak(fabric="infiniband")


@pytest.mark.parametrize(("cluster", "words"), [
    ({"nccl_algo": "tree"}, "nccl_algo=tree is priced by the analytical"),
    ({"nccl_algo": "collnet", "in_network_reduction": True}, "nccl_algo=collnet is priced"),
    ({"in_network_reduction": True}, "in_network_reduction=true is priced by the analytical"),
])
def test_what_the_flow_backend_does_not_read_is_refused(cluster, words):
    """FlowNetwork prices its own ring and no SHARP: main answered these as the plain run."""
    with pytest.raises(ConfigError, match=words):
        _load(_raw({"network_backend": "flow", **cluster}))


def test_control_the_flow_backend_takes_ring():
    assert _simulate(_raw({"network_backend": "flow", "nccl_algo": "ring"})).iteration_time_s > 0


@pytest.mark.parametrize(("cluster", "words"), [
    ({"nccl_algo": "collnet"}, "nccl_algo=collnet needs cluster.in_network_reduction=true"),
    ({"nccl_algo": "nvls", "gpu": "a100-sxm-80gb"}, "nccl_algo=nvls needs NVLink SHARP"),
    ({"nccl_algo": "nvls_tree", "nvls": False}, "nccl_algo=nvls_tree needs NVLink SHARP"),
    ({"nccl_algo": "direct"}, "nccl_algo=direct is no algorithm NCCL_ALGO picks"),
    ({"nccl_algo": "pat", "nccl_proto": "ll128"}, "nccl_proto=LL128 cannot run cluster.nccl_algo=pat"),
])
def test_a_forced_algorithm_no_group_can_run_is_refused_as_the_cluster_is_read(cluster, words):
    """main refused these only when the first collective was priced, without naming the
    field, so the service queued them."""
    from trainsim.service import Settings
    from trainsim.service.jobs import problem

    raw = _raw(cluster)
    with pytest.raises(ConfigError, match=words):
        _load(raw)
    refused = problem("simulate", copy.deepcopy(raw), {}, Settings(workers=0, checkers=0))
    assert refused is not None and words in refused[2]


@pytest.mark.parametrize(("algo", "gpus"), [("tree", 8), ("pat", 16), ("nvls", 16)])
def test_a_forced_algorithm_a_group_cannot_run_names_cluster_nccl_algo(algo, gpus):
    with pytest.raises(ConfigError, match=rf"^cluster.nccl_algo={algo}: algorithm '{algo}' "
                                          r"cannot run .*leave it auto"):
        _simulate(_raw({"nccl_algo": algo}, gpus=gpus))


# ------------------------------------------------------------------ remat_policy spellings

@pytest.mark.parametrize(("spelt", "plain"), [
    ("custom: qkv_proj; out_proj", "custom:qkv_proj;out_proj"),
    ("custom:qkv_proj out_proj", "custom:qkv_proj;out_proj"),
    ("custom:QKV_PROJ,,out_proj", "custom:qkv_proj;out_proj"),
])
def test_a_custom_remat_policy_spelt_with_spaces_answers_as_its_names(spelt, plain):
    """main refused ' qkv_proj' (the names split on ';' and ',' only, kept with their spaces)."""
    cfg = {"recompute": "full", "remat_policy": spelt}
    run = _raw(parallel=cfg, training={"framework": "maxtext"})
    got = _simulate(run)
    assert got.config.parallel.remat_policy == plain
    run["parallel"]["remat_policy"] = plain
    assert got.iteration_time_s == _simulate(run).iteration_time_s


def test_an_unknown_custom_name_is_refused_by_its_own_name():
    with pytest.raises(ConfigError, match="unknown checkpoint name 'mlp_out'"):
        _load(_raw(parallel={"recompute": "full", "remat_policy": "custom:qkv_proj mlp_out"}))


# ------------------------------------------------------------------ search --set recompute-bound

SEARCH = ["search", "gpt3-350m", "--gpus", "8", "--global-batch", "16", "--seq", "512",
          "--workers", "1", "--max-micro-batch", "1", "--tp", "1", "--pp", "1", "--overlap",
          "off", "--zero", "0", "--format", "json", "--top", "1"]


@pytest.mark.parametrize(("setting", "recompute", "want"), [
    ("parallel.recompute_modules=mlp", None, "selective"),
    ("parallel.recompute_num_layers=2", "full", "full"),
    ("parallel.remat_policy=minimal", "none,full", "full"),
])
def test_search_tries_the_recompute_a_fixed_field_needs(setting, recompute, want):
    """main checked the fixed field at recompute none and refused it, whatever --recompute said."""
    r = cli(*SEARCH, "--set", setting, *(["--recompute", recompute] if recompute else []))
    assert r.exit_code == 0, r.output
    best = json.loads(r.stdout)["top"][0]["config"]
    assert best["recompute"] == want


def test_search_refuses_a_fixed_field_no_listed_recompute_runs_naming_both():
    r = cli(*SEARCH, "--set", "parallel.recompute_modules=mlp", "--recompute", "none,full")
    line = one_error_line(r)
    assert "parallel.recompute_modules is fixed" in line and "--recompute none,full" in line


# ------------------------------------------------------------------ sweep --vary a text field

def test_sweep_varies_a_text_field_whose_values_hold_a_colon(tmp_path):
    """main read 'custom:qkv_proj' as LO:HI and refused the list as no number."""
    config = tmp_path / "run.json"
    config.write_text(json.dumps(_raw()))
    r = cli("sweep", str(config), "--vary", "parallel.remat_policy=minimal,custom:qkv_proj",
            "--set", "parallel.recompute=full", "--set", "training.framework=maxtext",
            "--format", "json")
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)["rows"]
    assert [p["parallel.remat_policy"] for p in rows] == ["minimal", "custom:qkv_proj"]
    assert all(p["error"] is None for p in rows)


# ------------------------------------------------------------------ full_iteration (lead 1)

@pytest.mark.parametrize(("framework", "lacks", "has"), [
    ("megatron-core", "0.13", "0.14"),              # e7c55de99e (2025-08-01), core_v0.14.0
    ("megatron-lm", "2025-07-29", "2025-08-01"),
])
def test_full_iteration_arrives_with_megatron_core_0_14(framework, lacks, has):
    def run(version):
        return _raw(training={"framework": framework, "framework_version": version,
                              "cuda_graphs": True, "cuda_graph_scope": "full_iteration"})

    with pytest.raises(ConfigError, match="has no whole-iteration CUDA graph.*e7c55de99e"):
        _load(run(lacks))
    assert _simulate(run(has)).iteration_time_s > 0


def test_nemo_25_07_pins_a_megatron_lm_before_full_iteration():
    with pytest.raises(ConfigError, match="nemo 25.07 has no whole-iteration CUDA graph"):
        _load(_raw(training={"framework": "nemo", "framework_version": "25.07",
                             "cuda_graphs": True, "cuda_graph_scope": "full_iteration"}))


def test_every_entry_recording_full_iteration_has_graph_scopes():
    from trainsim.catalog.frameworks import _files, _load, framework_profile

    seen = 0
    for name in _files():
        for entry in _load(name).entries:
            profile = framework_profile(name, entry.since)
            if profile.supports("full_iteration_graph") is not None:
                seen += 1
                assert profile.supports("graph_scopes") is True, (name, entry.since)
    assert seen > 10


def test_the_graph_scope_comments_name_every_later_scope():
    """robust60 lead 3: the comments beside ``moe_graph_scopes`` named moe_router /
    moe_preprocess only; the check covers mlp, moe and mamba too."""
    import trainsim

    folder = Path(trainsim.__file__).parent / "catalog" / "frameworks"
    lines = [ln for f in folder.glob("*.yaml") for ln in f.read_text().splitlines()
             if "moe_graph_scopes:" in ln and "#" in ln]
    assert lines and all("mlp" in ln and "mamba" in ln for ln in lines)


@pytest.mark.slow
def test_the_whole_round_finds_no_class():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import fuzz61

    assert fuzz61.main([]) == 0
