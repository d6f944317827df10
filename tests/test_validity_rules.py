"""Inputs the frameworks refuse, refused at the input edge in one line (and skipped by the
search): MXFP8 below compute capability 10.0 (Transformer Engine check_mxfp8_support), tp not
dividing the KV heads where the framework splits them (Megatron-core attention.py), ZeRO-2/3
with DeepSpeed's pipeline engine (PipelineEngine asserts stage < 2), and the flex dispatcher
(DeepEP, HybridEP) on fewer than 2 expert ranks (MoEFlexTokenDispatcher, HybridEPBuffer)."""

from __future__ import annotations

import pytest
from helpers import TINY_MODEL, cli, make_base, one_error_line

from trainsim.catalog import run_config_from_dict
from trainsim.errors import ConfigError
from trainsim.search import SearchSpace
from trainsim.search.cli import build_base

TINY_MOE = {**TINY_MODEL, "name": "tiny-moe", "num_layers": 4, "num_experts": 8,
            "moe_router_topk": 2, "moe_ffn_hidden_size": 1024}


def _cfg(model=TINY_MODEL, parallel=None, gpu="h100-sxm-80gb", gpus=8, **training):
    return run_config_from_dict({
        "model": model, "parallel": parallel or {},
        "training": {"global_batch_size": 16, "seq_length": 2048, **training},
        "cluster": {"gpu": gpu, "num_gpus": gpus, "gpus_per_node": 8}})


# ---------------------------------------------------------------------------- MXFP8


@pytest.mark.parametrize("gpu", ["h100-sxm-80gb", "a100-sxm-80gb"])
def test_mxfp8_below_blackwell_is_refused(gpu):
    dtype = "fp8" if gpu.startswith("h100") else "bf16"
    if dtype == "fp8":
        with pytest.raises(ConfigError, match=r"fp8_recipe=mxfp8 needs compute capability >= "
                                              r"10\.0.*h100-sxm-80gb is 9\.0"):
            _cfg(dtype="fp8", fp8_recipe="mxfp8", gpu=gpu)
    else:  # A100 has no fp8 at all: the dtype's own check speaks first
        with pytest.raises(ConfigError, match="training.dtype=fp8 needs fp8 tensor cores"):
            _cfg(dtype="fp8", fp8_recipe="mxfp8", gpu=gpu)
    # the recipe is read only with fp8; other recipes run on Hopper; MXFP8 runs on Blackwell
    _cfg(dtype="bf16", fp8_recipe="mxfp8", gpu=gpu)
    if gpu.startswith("h100"):
        _cfg(dtype="fp8", fp8_recipe="blockwise", gpu=gpu)
    _cfg(dtype="fp8", fp8_recipe="mxfp8", gpu="b200-sxm-180gb")


def test_mxfp8_on_hopper_is_one_cli_line():
    line = one_error_line(cli("simulate", "examples/llama3-8b-h100.yaml", "--set",
                              "training.dtype=fp8", "--set", "training.fp8_recipe=mxfp8"))
    assert "training.fp8_recipe=mxfp8" in line and "10.0" in line


# ---------------------------------------------------------------------------- KV heads and tp


def test_tp_beyond_the_kv_heads_is_refused_where_the_framework_splits_them():
    # 4 KV heads, tp 8: Megatron-core divides num_query_groups by tp (no replication)
    with pytest.raises(ConfigError, match=r"parallel.tp=8 does not divide model.num_kv_heads=4"):
        _cfg(parallel={"tp": 8}, framework="megatron-core")
    with pytest.raises(ConfigError, match="kv_heads_split"):
        _cfg(parallel={"tp": 8, "kv_heads_split": True})
    # a framework that does not split them replicates the 4 heads over 8 ranks, as before
    assert _cfg(parallel={"tp": 8}).parallel.kv_heads_split is False
    assert _cfg(parallel={"tp": 4}, framework="megatron-core").parallel.kv_heads_split is True
    with pytest.raises(ConfigError, match="one must divide the other"):
        _cfg(model={**TINY_MODEL, "hidden_size": 1536, "num_attention_heads": 24,
                    "num_kv_heads": 6},
             parallel={"tp": 4})


def test_search_skips_a_tp_the_kv_heads_cannot_split_over():
    base = make_base()  # 4 KV heads, 16 GPUs, no framework: replication allowed
    tps = {k.tp for k in SearchSpace(recompute=("none",), max_micro_batch=1, pp=(1,), cp=(1,))
           .memory_keys(base, 16)}
    assert 8 in tps
    import dataclasses
    split = dataclasses.replace(base, fixed=(("kv_heads_split", True),))
    assert split.kv_heads_split
    tps = {k.tp for k in SearchSpace(recompute=("none",), max_micro_batch=1, pp=(1,), cp=(1,))
           .memory_keys(split, 16)}
    assert tps == {1, 2, 4}


def test_search_set_tp_beyond_the_kv_heads_is_one_line():
    args = ("search", "llama3-8b", "--gpus", "16", "--global-batch", "16", "--seq", "4096",
            "--recompute", "none", "--zero", "1", "--max-micro-batch", "1", "--workers", "1")
    line = one_error_line(cli(*args, "--set", "training.framework=megatron-core",
                              "--set", "parallel.tp=16"))
    assert "--set parallel.tp=16 does not divide model.num_kv_heads=8" in line
    with pytest.raises(ConfigError, match="tp=3 does not divide"):
        build_base("llama3-8b", "h100-sxm-80gb", 24, 24, 4096, 8, 400.0, "bf16",
                   ("parallel.tp=3",))


# ---------------------------------------------------------------------------- DeepSpeed ZeRO + PP


@pytest.mark.parametrize("zero", [2, 3])
def test_deepspeed_pipeline_with_zero_2_or_3_is_refused(zero):
    p = {"pp": 2, "zero_stage": zero, "data_parallel_impl": "deepspeed"}
    with pytest.raises(ConfigError, match=rf"zero_stage={zero} with pipeline_model_parallel_size"
                                          r"=2: DeepSpeed's pipeline engine allows zero_stage 0 "
                                          "or 1 only"):
        _cfg(parallel=p)
    _cfg(parallel={**p, "zero_stage": 1})
    _cfg(parallel={**p, "pp": 1})
    # FSDP under a pipeline (torchtitan, Llama 3) is not DeepSpeed's engine
    _cfg(parallel={**p, "data_parallel_impl": "fsdp2"})


def test_search_skips_zero_2_and_3_under_deepspeed_pipelines():
    import dataclasses
    base = dataclasses.replace(make_base(), fixed=(("data_parallel_impl", "deepspeed"),))
    keys = list(SearchSpace(recompute=("none",), max_micro_batch=1, tp=(1,), cp=(1,))
                .memory_keys(base, 16))
    assert {k.zero for k in keys if k.pp == 1} == {0, 1, 2, 3}
    assert {k.zero for k in keys if k.pp > 1} == {0, 1}


# ---------------------------------------------------------------------------- flex dispatcher


@pytest.mark.parametrize("disp", ["deepep", "hybridep"])
def test_flex_dispatcher_on_one_expert_rank_is_refused(disp):
    p = {"ep": 1, "moe_token_dispatcher_type": disp}
    with pytest.raises(ConfigError, match=rf"moe_token_dispatcher_type={disp} needs ep\*expert_"
                                          r"tensor_parallel_size >= 2, not 1\*1"):
        _cfg(model=TINY_MOE, parallel=p)
    _cfg(model=TINY_MOE, parallel={**p, "ep": 2})
    _cfg(model=TINY_MOE, parallel={**p, "moe_token_dispatcher_type": "alltoall"})


def test_search_skips_the_flex_dispatcher_without_expert_ranks():
    base = make_base(model=TINY_MOE)
    space = SearchSpace(recompute=("none",), max_micro_batch=1, tp=(1,), pp=(1,), cp=(1,),
                        ep=(1, 2), etp=(1,), dispatcher=("alltoall", "hybridep"))
    pairs = {(k.ep, k.dispatcher) for k in space.memory_keys(base, 16)}
    assert pairs == {(1, "alltoall"), (2, "alltoall"), (2, "hybridep")}


def test_search_set_flex_dispatcher_on_one_expert_rank_is_one_line(tmp_path):
    import json
    path = tmp_path / "tiny-moe.json"
    path.write_text(json.dumps({"model": TINY_MOE}))
    line = one_error_line(cli("search", str(path), "--gpus", "8", "--global-batch", "16",
                              "--seq", "1024", "--workers", "1", "--set", "parallel.ep=1",
                              "--set", "parallel.moe_token_dispatcher_type=hybridep"))
    assert "moe_token_dispatcher_type=hybridep needs ep*expert_tensor_parallel_size >= 2" in line
