"""Input fuzzing at the edges (config files, --set values, the Python API): every bad input
ends in one clean error line (or a ConfigError naming the field), never a traceback, a silently
ignored setting or a non-finite result. One regression test per crash class found, then the
fuzzer that found them (fast by default; ``-m slow`` runs more examples). Validation files:
``test_fuzz_validate.py``."""

from __future__ import annotations

import json
import re

import pytest
from helpers import BASE, FAST, SLOW, cli, one_error_line
from hypothesis import given
from hypothesis import strategies as st

# ---------------------------------------------------------------------------- config files



@pytest.mark.parametrize("name, text, key", [
    ("dup.yaml", BASE.replace("num_layers: 4", "num_layers: 4, num_layers: 8"), "num_layers"),
    ("dup.yaml", BASE + "parallel: {tp: 2}\nparallel: {tp: 4}\n", "parallel"),
    ("dup.json", '{"model": "llama3-8b", "model": "llama3-70b"}', "model"),
])
def test_a_key_given_twice_is_refused_not_silently_overwritten(tmp_path, name, text, key):
    """YAML and JSON loaders keep the last of two equal keys: the first setting was ignored."""
    (tmp_path / name).write_text(text)
    line = one_error_line(cli("simulate", name, cwd=tmp_path))
    assert f"'{key}' is given twice" in line


def test_a_yaml_merge_key_may_still_be_overridden(tmp_path):
    """``<<: *base`` then a key of the base is YAML's override, not a duplicate."""
    from trainsim.config.safe_load import parse

    data = parse("a: &x {n: 8, g: h}\nb: {<<: *x, n: 16}\n", "t")
    assert data["b"] == {"n": 16, "g": "h"}


@pytest.mark.parametrize("override", ["model.moe_router_topk=4", "model.moe_ffn_hidden_size=128",
                                      "model.moe_capacity_factor=1.25",
                                      "model.moe_first_dense_layers=1"])
def test_a_moe_setting_on_a_dense_model_is_refused_not_ignored(tmp_path, override):
    """Nothing prices an expert setting on a dense model: it was silently ignored."""
    (tmp_path / "run.yaml").write_text(BASE)
    line = one_error_line(cli("simulate", "run.yaml", "--set", override, cwd=tmp_path))
    assert override.split("=")[0] in line and "dense" in line
    ok = cli("simulate", "run.yaml", "--set", override, "--set", "model.num_experts=8",
             "--format", "json", cwd=tmp_path)
    assert ok.exit_code == 0, ok.output


# ---------------------------------------------------------------------------- Python API

def _api_cases():
    import dataclasses

    from trainsim import (
        ModelConfig,
        ParallelConfig,
        RunConfig,
        TrainingConfig,
        load_run_config,
        run_config_from_dict,
        simulate,
    )
    from trainsim.catalog import apply_overrides
    from trainsim.config.safe_load import parse

    raw = parse(BASE, "base")
    cfg = run_config_from_dict(raw)
    model = {"name": "x", "hidden_size": 256, "num_layers": 4, "num_attention_heads": 4,
             "vocab_size": 1024}
    return [
        (lambda: simulate(raw), "simulate() takes a RunConfig"),  # AttributeError
        (lambda: simulate("llama3-8b"), "simulate() takes a RunConfig"),
        (lambda: run_config_from_dict(None), "must be a mapping"),  # TypeError
        (lambda: run_config_from_dict("x"), "must be a mapping"),  # ValueError (dict("x"))
        (lambda: load_run_config(None), "needs the path"),  # TypeError
        (lambda: apply_overrides(raw, [5]), "an override must be text"),  # TypeError
        (lambda: ModelConfig(**{**model, "hidden_size": "256"}), "model.hidden_size='256'"),
        (lambda: ModelConfig(**{**model, "hidden_size": None}), "model.hidden_size is required"),
        (lambda: ParallelConfig(tensor_model_parallel_size="2"), "tensor_model_parallel_size"),
        (lambda: TrainingConfig(global_batch_size=8, seq_length=512, dtype="int8"),
         "training.dtype='int8' must be one of"),  # accepted, then mispriced
        (lambda: dataclasses.replace(cfg.model, num_experts=8, moe_token_imbalance=float("nan")),
         "moe_token_imbalance=nan"),  # accepted: nan < 1.0 is False
        (lambda: dataclasses.replace(cfg.training, data_prep_s_per_sample=float("nan")),
         "data_prep_s_per_sample=nan"),
        (lambda: RunConfig(cfg.model, cfg.parallel, cfg.training, None), "RunConfig.cluster"),
    ]


@pytest.mark.parametrize("case", range(len(_api_cases())))
def test_the_python_api_refuses_bad_values_with_a_config_error(case):
    """The public functions and config classes built directly: a ConfigError naming the
    field, not an AttributeError / TypeError from deep inside, nor a value silently kept."""
    from trainsim.errors import ConfigError

    call, match = _api_cases()[case]
    with pytest.raises(ConfigError, match=re.escape(match)):
        call()


def test_one_override_given_as_text_is_one_override(tmp_path):
    """load_run_config(path, 'parallel.tp=2') applied 'p', 'a', ... as overrides."""
    from trainsim import load_run_config

    (tmp_path / "run.yaml").write_text(BASE)
    assert load_run_config(tmp_path / "run.yaml", "parallel.tp=2").parallel.tp == 2


@pytest.mark.parametrize("override, option", [("training.seq_length=99", "--seq"),
                                              ("cluster.num_gpus=4", "--gpus"),
                                              ("training.global_batch_size=32", "--global-batch"),
                                              ("cluster.nic_gbps_per_gpu=100", "--nic-gbit-s")])
def test_search_refuses_a_set_that_its_own_option_sets(tmp_path, override, option):
    """search --seq 512 --set training.seq_length=99 searched one of the two silently."""
    (tmp_path / "m.yaml").write_text(BASE.splitlines()[0] + "\n")
    line = one_error_line(cli("search", "m.yaml", "--gpus", "8", "--global-batch", "16", "--seq",
                              "512", "--workers", "1", "--set", override, cwd=tmp_path))
    assert override.split("=")[0] in line and option in line


def test_plan_refuses_a_global_batch_set_beside_its_own():
    """plan's batch is --global-batch (default about 4M tokens); --set training.global_batch_size
    equal to the validation placeholder (the node's GPU count) slipped through and was dropped."""
    from trainsim.errors import ConfigError
    from trainsim.search.cli import build_base

    with pytest.raises(ConfigError, match="--global-batch"):
        build_base("llama3-8b", "h100-sxm-80gb", 8, 512, 8192, 8, 400.0, "bf16",
                   ("training.global_batch_size=8",))
    assert build_base("llama3-8b", "h100-sxm-80gb", 8, 512, 8192, 8, 400.0, "bf16",
                      ("training.global_batch_size=512",)).training.global_batch_size == 512
    for varied in ("cluster.num_gpus=8", "training.micro_batch_size=1"):  # varied: never kept
        with pytest.raises(ConfigError, match="sets it"):
            build_base("llama3-8b", "h100-sxm-80gb", 8, 512, 8192, 8, 400.0, "bf16", (varied,))



@pytest.mark.parametrize("vpp", ["full", "nan", "1e400", "[1]"])
def test_a_framework_run_with_a_vpp_that_is_no_number_names_the_field(tmp_path, vpp):
    """training.framework + parallel.vpp=full: 'could not convert string to float' (a
    ValueError from the framework defaults, before the field's own check)."""
    (tmp_path / "run.yaml").write_text(BASE)
    line = one_error_line(cli("simulate", "run.yaml", "--set", "training.framework=megatron-core",
                              "--set", f"parallel.vpp={vpp}", cwd=tmp_path))
    assert "virtual_pipeline_model_parallel_size" in line



HF = {"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
      "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 1024, "hidden_act": "silu",
      "rms_norm_eps": 1e-5}


@pytest.mark.parametrize("change, match", [
    ({"rope_scaling": "yarn"}, "rope_scaling must be a mapping"),  # AttributeError: 'str'.get
    ({"rope_scaling": [1]}, "rope_scaling must be a mapping"),
    ({"num_hidden_layers": None}, "no num_hidden_layers"),  # silently the default 32 layers
    ({"vocab_size": None}, "no vocab_size"),  # silently 32,000
    ({"model_type": "deepseek_v3", "n_routed_experts": 8, "first_k_dense_replace": -1},
     "first_k_dense_replace=-1"),  # a Llama's class has no experts (n_routed_experts ignored)
])
def test_a_bad_hugging_face_config_is_one_error_naming_the_field(tmp_path, change, match):
    from trainsim.catalog import model_from_hf_config
    from trainsim.errors import ConfigError

    (tmp_path / "config.json").write_text(json.dumps({**HF, **change}))
    with pytest.raises(ConfigError, match=match):
        model_from_hf_config(tmp_path / "config.json")


@pytest.mark.parametrize("override", ["model.moe_router_group_topk=0",
                                      "model.moe_shared_expert_intermediate_size=-1",
                                      "model.moe_first_dense_layers=99"])
def test_impossible_moe_sizes_are_refused(tmp_path, override):
    (tmp_path / "run.yaml").write_text(BASE)
    line = one_error_line(cli("simulate", "run.yaml", "--set", "model.num_experts=8", "--set",
                              override, cwd=tmp_path))
    assert override.split("=")[0] in line



@pytest.mark.parametrize("override, match", [
    ("cluster.extra.nic_latency_s=1", "cluster.extra.nic_latency_s is not read"),
    ("training.framework_version=2024-01", "framework_version='2024-01' needs training.framework"),
])
def test_a_setting_nothing_reads_is_refused_not_ignored(tmp_path, override, match):
    """cluster.extra (a skeleton placeholder no model reads) and a framework_version without
    a framework were accepted and silently ignored."""
    (tmp_path / "run.yaml").write_text(BASE)
    assert match in one_error_line(cli("simulate", "run.yaml", "--set", override, cwd=tmp_path))


# ---------------------------------------------------------------------------- --set fuzz

SET_KEYS = {
    "model": ["hidden_size", "num_layers", "num_attention_heads", "num_kv_heads", "head_dim",
              "ffn_hidden_size", "vocab_size", "activation", "num_experts", "moe_router_topk",
              "moe_ffn_hidden_size", "moe_capacity_factor", "sliding_window", "mtp_num_layers",
              "kv_lora_rank", "tied_embeddings", "attention_dropout", "preset", "parallel_block",
              "max_position_embeddings", "moe_router", "bogus"],
    "parallel": ["tp", "pp", "cp", "ep", "vpp", "etp", "sequence_parallel", "recompute",
                 "recompute_num_layers", "recompute_modules", "zero_stage", "cp_comm_type",
                 "pipeline_schedule", "pipeline_model_parallel_layout", "tp_comm_overlap",
                 "overlap_grad_reduce", "distributed_optimizer", "moe_token_dispatcher_type",
                 "cpu_offloading_num_layers", "bogus"],
    "training": ["global_batch_size", "micro_batch_size", "seq_length", "dtype", "fp8_recipe",
                 "attention", "optimizer", "framework", "framework_version", "grad_reduce_dtype",
                 "train_tokens", "cuda_graphs", "compile", "bogus"],
    "cluster": ["gpu", "num_gpus", "gpus_per_node", "nic_gbit_s_per_gpu", "nvlink_gbyte_s",
                "network_backend", "nccl_algo", "topology", "oversubscription", "nodes_per_leaf",
                "pue", "price_per_gpu_hour", "gpu_overrides.hbm_gib", "gpu_overrides.num_sms",
                "node", "bogus"],
    "bogus": ["x"], "": ["tp"],
}
SET_VALUES = st.one_of(
    st.sampled_from(["1", "2", "3", "4", "8", "16", "0", "-1", "7", "1.5", "1e400", "nan",
                     "-inf", "", " ", "true", "null", "[]", "{}", "[1, 2]", "x", "ü", "∞",
                     "fp8", "bf16", "a100-sxm-80gb", "b200-sxm-180gb", "mi300x", "llama3-8b",
                     "full", "selective", "a2a", "p2p", "zb_v", "dualpipe", "deepep", "flow",
                     "torus", "nvl72", "megatron-core", "torchtitan", "2024-01", "1T", "0.5",
                     "Et|tL", "first:1,last:1", "mxfp8", "blockwise", "fake_balanced"]),
    st.text(max_size=6))
PLAUSIBLE = {k: list(v) for k, v in {
    "tp": "1248", "pp": "124", "cp": "12", "ep": "1248", "vpp": "12", "etp": "12",
    "zero_stage": "0123", "num_experts": "48", "moe_router_topk": "12", "num_gpus": "8",
    "gpus_per_node": "48", "micro_batch_size": "12", "global_batch_size": "8", "num_layers": "248",
    "num_kv_heads": "124", "recompute_num_layers": "12", "mtp_num_layers": "01",
    "cpu_offloading_num_layers": "012", "nodes_per_leaf": "12",
    **dict.fromkeys(["sequence_parallel", "tp_comm_overlap", "overlap_grad_reduce",
                     "distributed_optimizer", "cuda_graphs", "compile", "parallel_block",
                     "tied_embeddings"], "01"),
}.items()} | {
    "recompute": ["none", "selective", "full"], "dtype": ["bf16", "fp16", "fp8"],
    "fp8_recipe": ["delayed", "current", "blockwise", "mxfp8"],
    "cp_comm_type": ["p2p", "a2a", "all_gather"], "attention": ["flash2", "cudnn", "unfused"],
    "pipeline_schedule": ["1f1b", "interleaved", "zb_v", "dualpipe", "gpipe"],
    "gpu": ["h100-sxm-80gb", "a100-sxm-80gb", "b200-sxm-180gb", "mi300x", "gb200"],
    "network_backend": ["analytical", "flow"], "topology": ["spine-leaf", "torus", "nvl72"],
    "framework": ["megatron-core", "torchtitan", "deepspeed", "nemo", "megatron-lm"],
    "moe_token_dispatcher_type": ["alltoall", "allgather", "deepep", "flex"],
    "seq_length": ["512", "1024", "4096"], "activation": ["gelu", "swiglu"],
    "oversubscription": ["1", "2"], "sliding_window": ["128", "4096"],
}
"""Values that often make a valid config (so the fuzz reaches the simulator)."""


@st.composite
def set_items(draw) -> str:
    section = draw(st.sampled_from(["model", "parallel", "parallel", "training", "cluster"] * 4
                                   + ["bogus", ""]))
    key = draw(st.sampled_from(SET_KEYS[section]))
    if key in PLAUSIBLE and draw(st.integers(0, 2)):
        value = draw(st.sampled_from(PLAUSIBLE[key]))
    else:
        value = draw(SET_VALUES)
    return f"{section}.{key}={value}" if section else f"{key}={value}"


SET_ITEMS = set_items()


def assert_sane_json(text: str) -> None:
    """A simulated iteration: every number finite, times and counts not negative, MFU in (0, 1],
    the breakdown summing to the iteration."""
    import math

    d = json.loads(text)
    t = d["iteration_time_s"]
    assert 0 < t < math.inf and 0 < d["mfu"] <= 1 and d["peak_memory_bytes"] > 0, d
    assert d["tokens_per_s"] > 0
    parts = d["breakdown"]
    assert all(0 <= v < math.inf or abs(v) < 1e-12 for v in parts.values()), parts
    assert sum(parts.values()) == pytest.approx(t, rel=1e-6)

    def walk(v):
        if isinstance(v, float):
            assert math.isfinite(v), v
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
    walk({k: v for k, v in d.items() if k != "config"})


def check_sets(items: list[str], cwd) -> None:
    args = ["simulate", "run.yaml", "--format", "json"]
    for item in items:
        args += ["--set", item]
    result = cli(*args, cwd=cwd)
    if result.exit_code:
        one_error_line(result)
    else:
        assert_sane_json(result.stdout)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("sets")
    (d / "run.yaml").write_text(BASE)
    return d


@FAST
@given(items=st.lists(SET_ITEMS, min_size=1, max_size=4))
def test_any_set_overrides_simulate_sanely_or_fail_in_one_line(run_dir, items):
    """simulate with random --set pairs: a sane JSON result, or one error line."""
    check_sets(items, run_dir)


@pytest.mark.slow
@SLOW
@given(items=st.lists(SET_ITEMS, min_size=1, max_size=4))
def test_any_set_overrides_slow(run_dir, items):
    check_sets(items, run_dir)
