"""Where HybridEP is a dispatcher choice (issue 16 item 2, issue 20): the validate tuner and the
search offer it only where the framework's version has it (Megatron-core's flex dispatcher
backend ``hybridep`` from core_v0.16.0, Megatron-Bridge from v0.2.0 = 25.11) and on a GPU its
TMA kernels run on (sm_90 or newer); a run asking for it elsewhere is refused in one line."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from helpers import moe_layer_cfg

from trainsim.catalog import gpu
from trainsim.catalog.frameworks import framework_profile
from trainsim.config.validity import dispatcher_runs_on
from trainsim.errors import ConfigError
from trainsim.search import SearchSpace
from trainsim.search.cli import build_base
from trainsim.search.space import MemoryKey
from trainsim.validate.row_settings import unknowns

TINY_MOE = {"name": "tiny-moe", "hidden_size": 1024, "num_layers": 4, "num_attention_heads": 16,
            "num_kv_heads": 4, "vocab_size": 32000, "activation": "swiglu",
            "position_embedding": "rope", "normalization": "rmsnorm", "tied_embeddings": False,
            "add_bias_linear": False, "num_experts": 16, "moe_router_topk": 2,
            "moe_ffn_hidden_size": 1024}
SPACE = SearchSpace(recompute=("none",), max_micro_batch=1, tp=(1,), pp=(1,), cp=(1,),
                    sequence_parallel=(False,))


def test_hybridep_needs_hopper_or_newer():
    """DeepEP hybrid-ep's kernels use TMA bulk copies (sm_90+): not on A100 nor an AMD GPU;
    DeepEP's own kernels have no such rule here."""
    arch = {name: gpu(name).sm_arch for name in ("a100-sxm-80gb", "h100-sxm-80gb", "gb200",
                                                 "mi300x")}
    assert arch == {"a100-sxm-80gb": 80, "h100-sxm-80gb": 90, "gb200": 100, "mi300x": None}
    assert [dispatcher_runs_on("hybridep", arch[n]) for n in arch] == [False, True, True, False]
    assert all(dispatcher_runs_on(d, 80) for d in ("alltoall", "allgather", "deepep"))


def test_run_config_refuses_hybridep_on_a100():
    """A run on A100 GPUs with the HybridEP dispatcher is one ConfigError naming the GPU; the
    same run on H100 is valid."""
    h100 = moe_layer_cfg("hybridep", ep=8, gpus=8)
    a100 = replace(h100.cluster, gpu=gpu("a100-sxm-80gb"))
    with pytest.raises(ConfigError, match=r"hybridep needs an NVIDIA GPU of sm_90 or newer, "
                                          r"not a100-sxm-80gb"):
        replace(h100, cluster=a100)
    replace(h100, parallel=replace(h100.parallel, moe_token_dispatcher_type="deepep"),
            cluster=a100)  # DeepEP runs there


@pytest.mark.parametrize(("framework", "without", "with_"), [
    ("megatron-core", "0.15", "0.16"), ("megatron-bridge", "25.09", "25.11")])
def test_profiles_offer_hybridep_from_the_release_that_ships_it(framework, without, with_):
    """core_v0.15.3 has no moe_flex_dispatcher_backend; core_v0.16.0 offers deepep and hybridep.
    Megatron-Bridge v0.2.0 (25.11) runs core's _HybridEPManager; 25.09 lists no hybridep."""
    assert framework_profile(framework, without).supports("hybridep") is False
    assert framework_profile(framework, with_).supports("hybridep") is True
    assert framework_profile(framework, with_).supports("deepep") is True


def _row(framework, version, gpu_name="h100-sxm-80gb", **cells):
    row = {"model": "qwen3-30b-a3b", "gpu": gpu_name, "num_gpus": "16", "tp": "1", "pp": "1",
           "ep": "8", "cp": "1", "vpp": "1", "framework": framework, "framework_version": version,
           "micro_batch_size": "1", "recompute": "none", "sequence_parallel": "0",
           "distributed_optimizer": "1", "global_batch_size": "64", "seq_length": "4096"}
    return {**row, **cells}


@pytest.mark.parametrize(("framework", "version", "gpu_name", "expected"), [
    ("megatron-bridge", "26.04", "h100-sxm-80gb", ["alltoall", "deepep", "hybridep"]),
    # Bridge's validate_flex_dispatcher_backend: DeepEP on cc 8/9 or B200/B300 only (every tag
    # v0.2.0-v0.6.0), HybridEP on GB200/GB300 only in v0.2.x (25.11)
    ("megatron-bridge", "26.04", "gb200", ["alltoall", "hybridep"]),
    ("megatron-bridge", "25.11", "h100-sxm-80gb", ["alltoall", "deepep"]),
    ("megatron-bridge", "25.11", "b200-sxm-180gb", ["alltoall", "deepep"]),
    ("megatron-bridge", "25.11", "gb200", ["alltoall", "hybridep"]),
    ("megatron-bridge", "26.02", "b200-sxm-180gb", ["alltoall", "deepep", "hybridep"]),
    ("megatron-bridge", "26.04", "a100-sxm-80gb", ["alltoall", "deepep"]),
    ("megatron-bridge", "25.09", "h100-sxm-80gb", ["alltoall", "deepep"]),
    ("megatron-core", "0.16", "h100-sxm-80gb", ["allgather", "deepep", "hybridep"]),
    ("megatron-core", "0.15", "h100-sxm-80gb", ["allgather", "deepep"]),
])
def test_tuner_tries_hybridep_where_the_version_and_gpu_have_it(framework, version, gpu_name,
                                                                expected):
    """An empty dispatcher cell with ep > 1: the profile's default first, then the flex
    backends the version ships, HybridEP only on sm_90+."""
    profile = framework_profile(framework, version)
    got = unknowns(_row(framework, version, gpu_name, moe_dispatcher=""), profile)
    assert got["moe_token_dispatcher_type"] == expected
    stated = unknowns(_row(framework, version, gpu_name, moe_dispatcher="alltoall"), profile)
    assert "moe_token_dispatcher_type" not in stated
    one_rank = unknowns(_row(framework, version, gpu_name, ep="1", moe_dispatcher=""), profile)
    assert "moe_token_dispatcher_type" not in one_rank


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("moe") / "tiny-moe.json"
    path.write_text(json.dumps({"model": TINY_MOE}))
    return str(path)


def _dispatchers(model_file, gpu_name, *overrides):
    base = build_base(model_file, gpu_name, 16, 64, 1024, 8, 400.0, "bf16", overrides)
    return base, {(k.ep, k.dispatcher) for k in SPACE.memory_keys(base, 16)}


@pytest.mark.parametrize(("gpu_name", "overrides", "hybridep"), [
    ("h100-sxm-80gb", ("training.framework=megatron-core", "training.framework_version=0.16"),
     True),
    ("h100-sxm-80gb", ("training.framework=megatron-core", "training.framework_version=0.15"),
     False),
    ("a100-sxm-80gb", ("training.framework=megatron-core", "training.framework_version=0.16"),
     False),
    ("h100-sxm-80gb", (), False),  # no framework named: not known to offer it
])
def test_search_tries_hybridep_where_the_framework_and_gpu_have_it(model_file, gpu_name,
                                                                   overrides, hybridep):
    """The search adds hybridep beside alltoall (and deepep across nodes) for every EP > 1,
    inside the NVLink domain too; never for EP 1, an older version, A100 or no framework."""
    base, pairs = _dispatchers(model_file, gpu_name, *overrides)
    assert base.hybridep is hybridep
    assert {d for _, d in pairs} == {"alltoall", "deepep"} | ({"hybridep"} if hybridep else set())
    with_hybridep = {ep for ep, d in pairs if d == "hybridep"}
    assert with_hybridep == ({2, 4, 8, 16} if hybridep else set())
    assert {ep for ep, d in pairs if d == "deepep"} == {16}  # across the 8-GPU nodes only


@pytest.mark.parametrize(("version", "gpu_name", "dispatcher", "refused"), [
    ("25.11", "h100-sxm-80gb", "hybridep", True), ("25.11", "gb200", "hybridep", False),
    ("26.02", "h100-sxm-80gb", "hybridep", False), ("26.04", "gb200", "deepep", True),
    ("26.04", "b200-sxm-180gb", "deepep", False), ("25.09", "gb200", "deepep", False),
])
def test_bridge_refuses_a_flex_backend_its_release_rejects_on_the_gpu(version, gpu_name,
                                                                      dispatcher, refused):
    """Megatron-Bridge v0.2.0's ConfigContainer.validate raises for HybridEP off GB200/GB300
    and, in every tag, for DeepEP on GB200/GB300; v0.1.0rc3 (25.09) has no such check."""
    from trainsim.catalog.defaults import apply_framework
    parallel = {"moe_token_dispatcher_type": dispatcher}
    training = {"framework": "megatron-bridge", "framework_version": version}
    if refused:
        with pytest.raises(ConfigError, match=rf"{dispatcher} but megatron-bridge {version} "
                                              rf"accepts it on .* only, not {gpu_name}"):
            apply_framework(parallel, training, gpu_name)
    else:
        apply_framework(parallel, training, gpu_name)


def test_search_tries_no_flex_backend_the_bridge_release_rejects(model_file):
    """The search's Base: no HybridEP on H100 for Bridge 25.11 (26.02 has it), no DeepEP on
    GB200 for Bridge 26.04."""
    old, _ = _dispatchers(model_file, "h100-sxm-80gb", "training.framework=megatron-bridge",
                          "training.framework_version=25.11")
    new, _ = _dispatchers(model_file, "h100-sxm-80gb", "training.framework=megatron-bridge",
                          "training.framework_version=26.02")
    rack, pairs = _dispatchers(model_file, "gb200", "training.framework=megatron-bridge",
                               "training.framework_version=26.04")
    assert (old.hybridep, old.deepep, new.hybridep, new.deepep) == (False, True, True, True)
    assert (rack.hybridep, rack.deepep) == (True, False)
    assert "deepep" not in {d for _, d in pairs}


def test_search_overlaps_the_exchange_under_hybridep():
    """Megatron-core takes --overlap-moe-expert-parallel-comm with the flex dispatcher whatever
    its backend (core_v0.16.0 transformer_config.py: alltoall or flex), not with allgather."""
    def key(disp):
        return MemoryKey(16, 1, 1, 1, 1, 1, "none", False, 1, 8, 1, disp, "")
    assert SPACE.switches(key("hybridep"))["moe_overlap_ep_comm"]
    assert not SPACE.switches(key("allgather"))["moe_overlap_ep_comm"]


def test_search_refuses_fixed_hybridep_on_a100_in_one_line(model_file):
    """--set parallel.moe_token_dispatcher_type=hybridep on A100: refused before searching."""
    with pytest.raises(ConfigError, match="hybridep needs an NVIDIA GPU of sm_90 or newer"):
        build_base(model_file, "a100-sxm-80gb", 16, 64, 1024, 8, 400.0, "bf16",
                   ("parallel.moe_token_dispatcher_type=hybridep",))
