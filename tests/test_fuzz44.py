"""Failure classes of fuzz44 (benchmarks/fuzz_inputs44.py): FlashAttention-4 and CK heads no
kernel trains priced (``config.validity.head_dim_problem``), DeepGEMM's fixed grid left with no
SM (a ZeroDivisionError), a layers record nested past the recursion limit (a RecursionError)
and a CSV header of many columns read in quadratic time. Each test fails on the previous src."""

from __future__ import annotations

import copy
import json
import os
import sys
import time
import warnings
from pathlib import Path

import pytest
from helpers import cli, one_error_line

from trainsim.catalog import run_config_from_dict
from trainsim.errors import ConfigError
from trainsim.simulator import simulate

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))

BASE = {"model": {"hidden_size": 2048, "num_layers": 4, "num_attention_heads": 8,
                  "vocab_size": 32000},
        "parallel": {}, "training": {"global_batch_size": 16, "seq_length": 2048},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8}}
MOE = {"model": {"hidden_size": 256, "num_layers": 4, "num_attention_heads": 4,
                 "vocab_size": 1024, "num_experts": 8, "moe_router_topk": 2,
                 "moe_ffn_hidden_size": 256},
       "parallel": {"tp": 2, "pp": 2, "ep": 2, "sequence_parallel": True,
                    "moe_token_dispatcher_type": "hybridep",
                    "fp8_gemm_grid_excludes_exchange": True},
       "training": {"global_batch_size": 16, "seq_length": 512, "dtype": "fp8"},
       "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8}}


def _raw(gpu="h100-sxm-80gb", model=None, training=None, base=BASE):
    cfg = copy.deepcopy(base)
    cfg["model"].update(model or {})
    cfg["training"].update(training or {})
    cfg["cluster"]["gpu"] = gpu
    return cfg


def _mla(qk, v, rope=0):
    return {"kv_lora_rank": 512, "qk_head_dim": qk, "v_head_dim": v,
            "qk_pos_emb_head_dim": rope, "position_embedding": "rope"}


@pytest.mark.parametrize("width", [264, 320, 512])
def test_flash4_on_hopper_refuses_heads_wider_than_256(width):
    with pytest.raises(ConfigError, match=r"flash4 trains on Hopper .* 8 to 256 each"):
        run_config_from_dict(_raw(model={"head_dim": width}, training={"attention": "flash4"}))


@pytest.mark.parametrize("model", [{"head_dim": 160}, {"head_dim": 192}, {"head_dim": 320},
                                   _mla(128, 256, 64), {"head_dim": 100}])
def test_flash4_on_blackwell_refuses_heads_outside_its_kernels(model):
    with pytest.raises(ConfigError, match=r"flash4 trains on Blackwell .* 8 to 128 each"):
        run_config_from_dict(_raw("b200-sxm-180gb", model, {"attention": "flash4"}))


@pytest.mark.parametrize("model", [{"head_dim": 64}, {"head_dim": 128}, {"head_dim": 256},
                                   {"head_dim": 512}, _mla(128, 128, 64), _mla(64, 512)])
def test_flash4_on_blackwell_trains_its_kernels_heads(model):
    cfg = run_config_from_dict(_raw("b200-sxm-180gb", model, {"attention": "flash4"}))
    assert cfg.training.attention == "flash4"
    assert simulate(cfg).iteration_time_s > 0


def test_flash4_on_hopper_trains_256():
    cfg = run_config_from_dict(_raw(model={"head_dim": 256}, training={"attention": "flash4"}))
    assert simulate(cfg).iteration_time_s > 0


def test_ck_refuses_heads_of_512_and_wider_and_trains_narrower():
    with pytest.raises(ConfigError, match="attention=ck trains heads narrower than 512, not 576"):
        run_config_from_dict(_raw("mi300x", {"head_dim": 576}, {"attention": "ck"}))
    cfg = run_config_from_dict(_raw("mi300x", {"head_dim": 320}, {"attention": "ck"}))
    assert simulate(cfg).iteration_time_s > 0


def test_a_framework_default_ck_at_a_512_head_is_refused_in_one_line(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ConfigError, match="set training.attention to unfused"):
            run_config_from_dict(_raw("mi300x", {"head_dim": 512},
                                      {"framework": "megatron-core"}))


def test_simulate_cli_refuses_flash4_head_in_one_line(tmp_path):
    p = tmp_path / "c.json"
    p.write_text(json.dumps(_raw("b200-sxm-180gb", {"head_dim": 192}, {"attention": "flash4"})))
    assert "flash4 trains on Blackwell" in one_error_line(cli("simulate", str(p)))


@pytest.mark.parametrize("dispatcher,field", [("hybridep", "moe_hybridep_num_sms"),
                                              ("deepep", "moe_deepep_num_sms")])
def test_the_fixed_grid_with_every_sm_held_by_the_exchange_is_refused(dispatcher, field):
    raw = _raw(base=MOE)
    raw["parallel"].update({"moe_token_dispatcher_type": dispatcher, field: 132})
    with pytest.raises(ConfigError, match=f"{field}=132 leaves no SM"):
        run_config_from_dict(raw)
    raw["parallel"][field] = 130
    assert simulate(run_config_from_dict(raw)).iteration_time_s > 0


def test_a_stated_sm_count_of_another_dispatcher_is_not_refused():
    raw = _raw(base=MOE)
    raw["parallel"].update({"moe_token_dispatcher_type": "alltoall", "moe_deepep_num_sms": 132})
    assert simulate(run_config_from_dict(raw)).iteration_time_s > 0


def test_the_fixed_grid_on_a_gpu_of_as_few_sms_as_the_default_exchange_is_refused():
    gpu = {"name": "tiny", "peak_tflops": {"bf16": 100, "fp8": 200}, "hbm_gib": 80,
           "hbm_gbyte_s": 2000, "nvlink_gbyte_s": 450, "num_sms": 16}
    cfg = run_config_from_dict(_raw(gpu, base=MOE))  # hybridep's default holds 16 SMs
    with pytest.raises(ConfigError, match="leaves the fp8 GEMMs no SM: the hybridep exchange "
                                          "holds 16 of cluster.gpu tiny's 16"):
        simulate(cfg)


def test_a_layers_record_nested_past_the_recursion_limit_is_one_line(tmp_path):
    p = tmp_path / "layers.jsonl"
    p.write_text('{"kind": "layer", "label": "x", "fwd_bwd_ms": 1}\n'
                 + "[" * 100_000 + "]" * 100_000 + "\n")
    assert "nests its brackets too deep" in one_error_line(cli("validate", str(p)))


def test_a_header_of_many_columns_is_read_in_linear_time(tmp_path):
    from trainsim.validate import _table
    columns = ["id", *(f"c{i}" for i in range(20_000))]
    start = time.process_time()
    assert _table(tmp_path / "x.csv", columns, [["a"]]) == [{"id": "a",
                                                             **dict.fromkeys(columns[1:], "")}]
    assert time.process_time() - start < 2  # 20,000 columns counted one by one: ~25 s
    with pytest.raises(ConfigError, match="column 'c7' is given twice"):
        _table(tmp_path / "x.csv", [*columns, "c7"], [["a"]])


def test_a_training_file_of_20000_columns_reads_in_a_few_seconds(tmp_path):
    from helpers import PUBLIC_TRAINING

    from trainsim.validate import read_rows
    lines = Path(PUBLIC_TRAINING).read_text(encoding="utf-8").splitlines()[:2]
    p = tmp_path / "wide.csv"
    p.write_text(lines[0] + "," + ",".join(f"c{i}" for i in range(20_000)) + "\n"
                 + lines[1] + "\n")
    start = time.process_time()
    kind, rows = read_rows(p)
    assert (kind, len(rows)) == ("training", 1)
    assert time.process_time() - start < 4  # 8.5 s on 6d6709d1: each column's near-name
    # search normalised every known name again


@pytest.mark.slow
def test_the_whole_fuzz44_run_finds_no_failure_class():
    import fuzz_inputs44
    assert fuzz_inputs44.main([]) == 0
