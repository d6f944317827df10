"""Inputs the frameworks refuse, refused at the input edge in one line (and skipped by the
search): MXFP8 outside compute capability 10.x (Transformer Engine check_mxfp8_support), tp
not dividing the KV heads where the framework splits them (Megatron-core before core_v0.16.0),
ZeRO-2/3 with DeepSpeed's pipeline engine (PipelineEngine asserts stage < 2), and the flex
dispatcher on fewer than 2 expert ranks where the profile says so (MoEFlexTokenDispatcher:
deepep and hybridep, deepep only from core_v0.18.0)."""

from __future__ import annotations

import dataclasses

import pytest
from helpers import TINY_MODEL, cli, make_base, one_error_line

from trainsim.catalog import run_config_from_dict
from trainsim.config import RunConfig
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
        with pytest.raises(ConfigError, match=r"fp8_recipe=mxfp8 needs compute capability 10\.x "
                                              r".*h100-sxm-80gb is 9\.0"):
            _cfg(dtype="fp8", fp8_recipe="mxfp8", gpu=gpu)
    else:  # A100 has no fp8 at all: the dtype's own check speaks first
        with pytest.raises(ConfigError, match="training.dtype=fp8 needs fp8 tensor cores"):
            _cfg(dtype="fp8", fp8_recipe="mxfp8", gpu=gpu)
    # the recipe is read only with fp8; other recipes run on Hopper; MXFP8 runs on Blackwell
    _cfg(dtype="bf16", fp8_recipe="mxfp8", gpu=gpu)
    if gpu.startswith("h100"):
        _cfg(dtype="fp8", fp8_recipe="blockwise", gpu=gpu)
    _cfg(dtype="fp8", fp8_recipe="mxfp8", gpu="b200-sxm-180gb")


def test_mxfp8_from_compute_capability_12_is_refused():
    """TE check_mxfp8_support: 'not supported on 12.0+ architectures yet' (sm120 has fp4 and
    fp8 cores, so only this rule stops it); the message names the capability, no family."""
    cfg = _cfg(gpu="b200-sxm-180gb")
    for cc, ok in ((100, True), (103, True), (110, True), (120, False), (121, False)):
        gpu = dataclasses.replace(cfg.cluster.gpu, compute_capability=cc)
        parts = (cfg.model, cfg.parallel,
                 dataclasses.replace(cfg.training, dtype="fp8", fp8_recipe="mxfp8"),
                 dataclasses.replace(cfg.cluster, gpu=gpu))
        if ok:
            RunConfig(*parts)
            continue
        with pytest.raises(ConfigError, match=rf"compute capability 10\.x .*from 12\.0.*is "
                                              rf"{cc / 10:.1f}") as err:
            RunConfig(*parts)
        assert "Blackwell" not in str(err.value)


def test_mxfp8_on_hopper_is_one_cli_line():
    line = one_error_line(cli("simulate", "examples/llama3-8b-h100.yaml", "--set",
                              "training.dtype=fp8", "--set", "training.fp8_recipe=mxfp8"))
    assert "training.fp8_recipe=mxfp8" in line and "10.x" in line


# ---------------------------------------------------------------------------- KV heads and tp


def test_tp_beyond_the_kv_heads_is_refused_where_the_framework_splits_them():
    # 4 KV heads, tp 8: Megatron-core divides num_query_groups by tp up to core_v0.15
    with pytest.raises(ConfigError, match=r"parallel.tp=8 does not divide model.num_kv_heads=4: "
                                          r"megatron-core 0.15 splits the KV heads over tp.*"
                                          r"core_v0.16.0.*multiple of 4"):
        _cfg(parallel={"tp": 8}, framework="megatron-core", framework_version="0.15")
    with pytest.raises(ConfigError, match="splits the KV heads over tp"):
        _cfg(parallel={"tp": 8, "kv_heads_split": True})
    # a framework with no release that lifts the split is not pointed at one (NeMo 24.07)
    with pytest.raises(ConfigError, match=r"nemo 24.07 splits the KV heads over tp; choose a "
                                          r"tp dividing 4$"):
        _cfg(parallel={"tp": 8}, framework="nemo", framework_version="24.07")
    # a framework that does not split them replicates the 4 heads over 8 ranks, as before
    assert _cfg(parallel={"tp": 8}).parallel.kv_heads_split is False
    assert _cfg(parallel={"tp": 4}, framework="megatron-core",
                framework_version="0.15").parallel.kv_heads_split is True
    with pytest.raises(ConfigError, match="one must divide the other; choose a tp dividing 6 "
                                          "or a multiple of it"):
        _cfg(model={**TINY_MODEL, "hidden_size": 1536, "num_attention_heads": 24,
                    "num_kv_heads": 6},
             parallel={"tp": 4})


@pytest.mark.parametrize("version", ["0.1", "0.5"])
def test_automodel_tp_must_divide_the_kv_heads(version):
    """NeMo Automodel's validate_tp_mesh asserts num_key_value_heads % tp == 0 before its TP
    plan shards k_proj and v_proj column-wise (parallelizer.py, v0.1.0 to v0.5.0): tp 8 over 4
    KV heads is refused naming the field, with no later release to point at; tp 4 splits
    them."""
    with pytest.raises(ConfigError, match=r"parallel.tp=8 does not divide model.num_kv_heads=4: "
                                          rf"automodel {version} splits the KV heads over tp; "
                                          r"choose a tp dividing 4$"):
        _cfg(parallel={"tp": 8}, framework="automodel", framework_version=version)
    cfg = _cfg(parallel={"tp": 4}, framework="automodel", framework_version=version)
    assert cfg.parallel.kv_heads_split is True


@pytest.mark.parametrize("framework, refused, accepted", [
    ("megatron-core", "0.15", "0.16"),           # f7dfb99795 first in core_v0.16.0
    ("megatron-bridge", "25.11", "26.02"),       # v0.3.0's pin b0cc2706 holds it
    ("megatron-lm", "2025-12-06", "2025-12-07"),  # the commit's date
])
def test_tp_a_multiple_of_the_kv_heads_from_core_v0_16(framework, refused, accepted):
    """Megatron-core core_v0.16.0 (PR #2565): one query group per rank when they are fewer
    than tp; TransformerConfig then requires a multiple or divisor: tp 8 over 4 KV heads
    runs, tp 8 over 6 (neither) does not."""
    with pytest.raises(ConfigError, match="splits the KV heads over tp"):
        _cfg(parallel={"tp": 8}, framework=framework, framework_version=refused)
    cfg = _cfg(parallel={"tp": 8}, framework=framework, framework_version=accepted)
    assert cfg.parallel.kv_heads_split is False
    with pytest.raises(ConfigError, match="one must divide the other"):
        _cfg(model={**TINY_MODEL, "hidden_size": 1536, "num_attention_heads": 24,
                    "num_kv_heads": 6}, parallel={"tp": 8}, framework=framework,
             framework_version=accepted)


def test_search_skips_a_tp_the_kv_heads_cannot_split_over():
    base = make_base()  # 4 KV heads, 16 GPUs, no framework: replication allowed
    tps = {k.tp for k in SearchSpace(recompute=("none",), max_micro_batch=1, pp=(1,), cp=(1,))
           .memory_keys(base, 16)}
    assert 8 in tps
    split = dataclasses.replace(base, fixed=(("kv_heads_split", True),))
    assert split.kv_heads_split
    tps = {k.tp for k in SearchSpace(recompute=("none",), max_micro_batch=1, pp=(1,), cp=(1,))
           .memory_keys(split, 16)}
    assert tps == {1, 2, 4}


def test_search_set_tp_beyond_the_kv_heads_is_one_line():
    args = ("search", "llama3-8b", "--gpus", "16", "--global-batch", "16", "--seq", "4096",
            "--recompute", "none", "--zero", "1", "--max-micro-batch", "1", "--workers", "1")
    line = one_error_line(cli(*args, "--set", "training.framework=megatron-core",
                              "--set", "training.framework_version=0.15",
                              "--set", "parallel.tp=16"))
    # one wording with simulate's (config.validity.kv_heads_problem)
    assert "--set parallel.tp=16 does not divide model.num_kv_heads=8: megatron-core " \
        "0.15 splits the KV heads over tp" in line and "multiple of 8" in line
    with pytest.raises(ConfigError, match="tp=3 and model.num_kv_heads=8: one must divide the "
                                          "other; choose a tp dividing 8 or a multiple of it"):
        build_base("llama3-8b", "h100-sxm-80gb", 24, 24, 4096, 8, 400.0, "bf16",
                   ("parallel.tp=3",))


# ---------------------------------------------------------------------------- DeepSpeed ZeRO + PP


@pytest.mark.parametrize("zero", [2, 3])
def test_deepspeed_pipeline_with_zero_2_or_3_is_refused(zero):
    p = {"pp": 2, "zero_stage": zero, "data_parallel_impl": "deepspeed"}
    with pytest.raises(ConfigError, match=rf"zero_stage={zero} with parallel.pp=2: DeepSpeed's "
                                          r"pipeline engine allows zero_stage 0 or 1 only "
                                          r"\(since v0.3.16\)"):
        _cfg(parallel=p)
    _cfg(parallel={**p, "zero_stage": 1})
    _cfg(parallel={**p, "pp": 1})
    # FSDP under a pipeline (torchtitan, Llama 3) is not DeepSpeed's engine
    _cfg(parallel={**p, "data_parallel_impl": "fsdp2"})


def test_search_skips_zero_2_and_3_under_deepspeed_pipelines():
    base = dataclasses.replace(make_base(), fixed=(("data_parallel_impl", "deepspeed"),))
    keys = list(SearchSpace(recompute=("none",), max_micro_batch=1, tp=(1,), cp=(1,))
                .memory_keys(base, 16))
    assert {k.zero for k in keys if k.pp == 1} == {0, 1, 2, 3}
    assert {k.zero for k in keys if k.pp > 1} == {0, 1}


def test_search_on_megatron_deepspeed_skips_pipelined_zero_2_and_builds_its_engine():
    """No --set of the engine: the profile's default (data_parallel_impl deepspeed) is what the
    skip reads and what each candidate is built with, as simulate builds it."""
    base = build_base("llama3-8b", "h100-sxm-80gb", 16, 16, 4096, 8, 400.0, "bf16",
                      ("training.framework=megatron-deepspeed",))
    assert base.data_parallel_impl == "deepspeed"
    space = SearchSpace(recompute=("none",), max_micro_batch=1, tp=(1,), cp=(1,))
    keys = list(space.memory_keys(base, 16))
    assert {k.zero for k in keys if k.pp > 1} == {0, 1}
    assert {k.zero for k in keys if k.pp == 1} == {0, 1, 2, 3}
    cands = [c for k in keys if k.pp > 1 for c in space.variants(k)]
    assert cands and {c.to_config(base).parallel.data_parallel_impl for c in cands} == \
        {"deepspeed"}
    megatron = build_base("llama3-8b", "h100-sxm-80gb", 16, 16, 4096, 8, 400.0, "bf16",
                          ("training.framework=megatron-core",))
    assert megatron.data_parallel_impl == "megatron"
    # Megatron: DDP, the distributed optimizer and Megatron-FSDP (config.validity.ZERO_STAGES)
    assert {k.zero for k in space.memory_keys(megatron, 16) if k.pp > 1} == {0, 1, 3}


# ---------------------------------------------------------------------------- flex dispatcher


@pytest.mark.parametrize("version, disp, refused", [
    ("0.17", "deepep", True), ("0.17", "hybridep", True),
    ("0.18", "deepep", True), ("0.18", "hybridep", False),  # 8c5cf05ece: deepep only
])
def test_flex_dispatcher_on_one_expert_rank_is_refused_by_megatron(version, disp, refused):
    p = {"ep": 1, "moe_token_dispatcher_type": disp}
    kw = {"framework": "megatron-core", "framework_version": version}
    if refused:
        with pytest.raises(ConfigError, match=rf"moe_token_dispatcher_type={disp} needs ep\*"
                                              rf"expert_tensor_parallel_size >= 2 in "
                                              rf"megatron-core {version}, not 1\*1"):
            _cfg(model=TINY_MOE, parallel=p, **kw)
    else:
        _cfg(model=TINY_MOE, parallel=p, **kw)
    _cfg(model=TINY_MOE, parallel={**p, "ep": 2}, **kw)
    _cfg(model=TINY_MOE, parallel={**p, "moe_token_dispatcher_type": "alltoall"}, **kw)


def test_flex_dispatcher_rule_is_megatron_s_only():
    """NeMo Automodel runs its own MoE: its dispatcher copy (assert ep > 1) is built only by
    apply_ep on an EP mesh > 1, and layers.py falls back to GroupedExperts on one GPU; no
    source refuses DeepEP on one expert rank there. A run naming no framework: unchecked."""
    p = {"ep": 1, "moe_token_dispatcher_type": "deepep"}
    assert _cfg(model=TINY_MOE, parallel=p, framework="automodel").parallel.flex_two_ranks == ()
    assert _cfg(model=TINY_MOE, parallel=p).parallel.flex_two_ranks == ()
    assert _cfg(model=TINY_MOE, parallel={"ep": 2}, framework="megatron-bridge"
                ).parallel.flex_two_ranks == ("deepep", "hybridep")


def test_search_skips_the_flex_dispatcher_without_expert_ranks():
    base = make_base(model=TINY_MOE)
    space = SearchSpace(recompute=("none",), max_micro_batch=1, tp=(1,), pp=(1,), cp=(1,),
                        ep=(1, 2), etp=(1,), dispatcher=("alltoall", "hybridep"))
    pairs = {(k.ep, k.dispatcher) for k in space.memory_keys(base, 16)}
    assert (1, "hybridep") in pairs  # no framework: nothing refuses it
    old = dataclasses.replace(base, training=dataclasses.replace(
        base.training, framework="megatron-core", framework_version="0.17"))
    pairs = {(k.ep, k.dispatcher) for k in space.memory_keys(old, 16)}
    assert pairs == {(1, "alltoall"), (2, "alltoall"), (2, "hybridep")}
    new = dataclasses.replace(old, training=dataclasses.replace(old.training,
                                                                framework_version="0.18"))
    assert (1, "hybridep") in {(k.ep, k.dispatcher) for k in space.memory_keys(new, 16)}


def test_search_set_flex_dispatcher_on_one_expert_rank_is_one_line(tmp_path):
    import json
    path = tmp_path / "tiny-moe.json"
    path.write_text(json.dumps({"model": TINY_MOE}))
    line = one_error_line(cli("search", str(path), "--gpus", "8", "--global-batch", "16",
                              "--seq", "1024", "--workers", "1", "--set", "parallel.ep=1",
                              "--set", "training.framework=megatron-core",
                              "--set", "training.framework_version=0.17",
                              "--set", "parallel.moe_token_dispatcher_type=hybridep"))
    assert "moe_token_dispatcher_type=hybridep needs ep*expert_tensor_parallel_size >= 2 in " \
        "megatron-core 0.17" in line


# ---------------------------------------------------------------------------- ZeRO per engine


@pytest.mark.parametrize("impl, zero, dist_opt, allowed", [
    ("ddp", 2, False, "0, 1"), ("ddp", 3, False, "0, 1"),
    ("fsdp2", 0, False, "2, 3"), ("fsdp2", 1, False, "2, 3"), ("fsdp1", 0, True, "2, 3"),
    ("megatron", 2, False, "0, 1, 3"),
])
def test_a_zero_stage_the_engine_does_not_run_is_refused(impl, zero, dist_opt, allowed):
    """Plain DDP shards nothing (0), or the optimizer with ZeroRedundancyOptimizer (1); FSDP
    is FULL_SHARD / reshard_after_forward=True (3) or
    SHARD_GRAD_OP / False (2); Megatron is DDP, the distributed optimizer or Megatron-FSDP."""
    p = {"data_parallel_impl": impl, "zero_stage": zero, "distributed_optimizer": dist_opt}
    with pytest.raises(ConfigError, match=rf"parallel.zero_stage={zero}.* under parallel."
                                          rf"data_parallel_impl={impl}: that engine runs "
                                          rf"zero_stage {allowed} only"):
        _cfg(parallel=p)


@pytest.mark.parametrize("impl, zeros", [
    ("ddp", (0, 1)), ("fsdp1", (2, 3)), ("fsdp2", (2, 3)), ("megatron", (0, 1, 3)),
    ("deepspeed", (0, 1, 2, 3)),
])
def test_every_stage_the_engine_runs_is_accepted(impl, zeros):
    for z in zeros:
        assert _cfg(parallel={"data_parallel_impl": impl, "zero_stage": z}
                    ).parallel.effective_zero_stage == z


@pytest.mark.parametrize("framework, dense, moe", [
    ("pytorch", {0, 1, 2, 3}, {0, 1, 2, 3}), ("torchtitan", {2, 3}, {2, 3}),
    ("automodel", {2, 3}, {2, 3}),
    ("megatron-core", {0, 1, 3}, {1}), ("deepspeed", {0, 1, 2, 3}, {1}),
])
def test_search_enumerates_the_engine_s_zero_stages(framework, dense, moe):
    """The search builds each candidate with the engine the loader picks for its stage (the
    profile's, or its ``zero_stage_engines``: a plain PyTorch loop's DDP at 0, DDP with
    ZeroRedundancyOptimizer at 1 and FSDP at 2 and 3), so it tries only the stages those
    engines run (the MoE default, the distributed optimizer, where the engine has it), and a single data-parallel rank gets the default
    engine's least (FSDP: 2)."""
    space = SearchSpace(recompute=("none",), max_micro_batch=1, tp=(1,), pp=(1,), cp=(1,))
    for model, want in ((TINY_MODEL, dense), (TINY_MOE, moe)):
        base = make_base(model=model)
        base = dataclasses.replace(base, training=dataclasses.replace(
            base.training, framework=framework))
        keys = list(space.memory_keys(base, 16))
        assert {k.zero for k in keys} == want
        held = space.held_by(base)  # the overlap switches where the framework has them
        cands = [c for k in keys for c in held.variants(k)]
        for c in cands[:4]:
            c.to_config(base)  # RunConfig accepts what the search built
    # 8 KV heads: torchtitan's tp must divide them (fuzz7: apply_tp's n_kv_heads // tp)
    kv8 = {**TINY_MODEL, "num_kv_heads": 8}
    one = dataclasses.replace(make_base(kv8, gpus=8, batch=8), training=dataclasses.replace(
        make_base(kv8, gpus=8, batch=8).training, framework="torchtitan"))
    single = SearchSpace(recompute=("none",), max_micro_batch=1, tp=(8,), pp=(1,), cp=(1,))
    assert {k.zero for k in single.memory_keys(one, 8)} == {2}


def test_search_set_zero_stage_the_engine_does_not_run_is_one_line():
    line = one_error_line(cli("search", "llama3-8b", "--gpus", "16", "--global-batch", "16",
                              "--seq", "1024", "--workers", "1",
                              "--set", "training.framework=torchtitan",
                              "--set", "parallel.distributed_optimizer=true"))
    assert "parallel.zero_stage=0 with distributed_optimizer=true under parallel." \
        "data_parallel_impl=fsdp2: that engine runs zero_stage 2, 3 only" in line
    line = one_error_line(cli("search", "llama3-8b", "--gpus", "16", "--global-batch", "16",
                              "--seq", "1024", "--workers", "1",
                              "--set", "training.framework=pytorch",
                              "--set", "training.framework_version=1.7",
                              "--set", "parallel.zero_stage=1"))
    # the loader's rule (catalog.defaults.zero_engine): a plain PyTorch loop runs 2 and 3 as
    # FSDP (zero_stage=3 is searched, tests/test_search_public.py), 1 as DDP with
    # ZeroRedundancyOptimizer from torch 1.8 (profile zero_stage_releases)
    assert "--set parallel.zero_stage=1 under pytorch 1.7" in line
    assert "ZeRO stage 1 first shipped in pytorch 1.8" in line


def test_search_set_zero_stage_is_checked_against_the_profile_s_engine():
    """--set parallel.zero_stage=2 is FSDP's SHARD_GRAD_OP under torchtitan, not refused as
    if the engine were ParallelConfig's default (Megatron)."""
    base = build_base("llama3-8b", "h100-sxm-80gb", 16, 16, 1024, 8, 400.0, "bf16",
                      ("training.framework=torchtitan", "parallel.zero_stage=2"))
    assert ("zero_stage", 2) in base.fixed and base.data_parallel_impl == "fsdp2"
    space = SearchSpace(recompute=("none",), max_micro_batch=1, tp=(1,), pp=(1,), cp=(1,))
    assert {k.zero for k in space.fixed_by(base.fixed).memory_keys(base, 16)} == {2}
    for fw in ("torchtitan", "automodel", "pytorch"):  # no --set: each runs its own stages
        plain = build_base("llama3-8b", "h100-sxm-80gb", 16, 16, 1024, 8, 400.0, "bf16",
                           (f"training.framework={fw}",))
        assert not [k for k, _ in plain.fixed if k in ("zero_stage", "distributed_optimizer")]


def test_set_flex_two_ranks_empty_switches_the_rule_off():
    """``--set parallel.flex_two_ranks=[]`` is read for its presence, not its truth."""
    base = make_base(model=TINY_MOE)
    old = dataclasses.replace(base, training=dataclasses.replace(
        base.training, framework="megatron-core", framework_version="0.17"))
    assert old.flex_two_ranks == ("deepep", "hybridep")
    off = dataclasses.replace(old, fixed=(("flex_two_ranks", ()),))
    assert off.flex_two_ranks == ()
    space = SearchSpace(recompute=("none",), max_micro_batch=1, tp=(1,), pp=(1,), cp=(1,),
                        ep=(1,), etp=(1,), dispatcher=("hybridep",))
    assert not list(space.memory_keys(old, 16))
    assert {(k.ep, k.dispatcher) for k in space.memory_keys(off, 16)} == {(1, "hybridep")}


# ---------------------------------------------------------------------------- NVIDIA-only kernels


@pytest.mark.parametrize("attention", ["cudnn", "flash3", "flash4"])
def test_an_nvidia_only_attention_kernel_on_an_amd_gpu_is_refused(attention):
    # the list names ROCm TE's ck and no NVIDIA-only kernel (flash3, Hopper's CUDA, included)
    with pytest.raises(ConfigError, match=rf"training.attention={attention} runs on NVIDIA GPUs "
                                          r"only, not cluster.gpu mi300x \(amd\); use one of "
                                          r"ck, eager, flash1, flash2, flex, mem_efficient"):
        _cfg(gpu="mi300x", attention=attention)
    _cfg(gpu="mi300x", attention="flash2")
    _cfg(gpu="h100-sxm-80gb", attention="cudnn")
