"""Two inputs fuzz43 left accepted silently: fused attention kernels at head dims above the 256
they train (``config.validity.head_dim_problem``), and an ``fp8_recipe`` stated with a 16-bit
dtype (``config.training.fp8_recipe_ignored``). Each test fails on the previous src."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import warnings

import pytest
import yaml
from helpers import PUBLIC_TRAINING, cli, one_error_line

from trainsim.catalog import run_config_from_dict
from trainsim.errors import ConfigError, SettingReplaced, TrainsimWarning

PUBLIC = PUBLIC_TRAINING  # the shared file, else the copy bundled with the package
BASE = {"model": {"hidden_size": 2048, "num_layers": 4, "num_attention_heads": 8,
                  "vocab_size": 32000},
        "parallel": {}, "training": {"global_batch_size": 16, "seq_length": 2048},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8}}


def _raw(model=None, training=None):
    return {"model": {**BASE["model"], **(model or {})}, "parallel": {},
            "training": {**BASE["training"], **(training or {})}, "cluster": dict(BASE["cluster"])}


@pytest.mark.parametrize("kernel", ["flash2", "flash3", "cudnn"])
@pytest.mark.parametrize("width", [300, 576, 4096])
def test_fused_kernels_refuse_heads_wider_than_256(kernel, width):
    with pytest.raises(ConfigError, match=f"at most 256 wide, not {width}"):
        run_config_from_dict(_raw({"head_dim": width}, {"attention": kernel}))


def test_a_run_config_built_in_python_refuses_sdpa_at_a_wide_head():
    # the catalog replaces SDPA by its memory-efficient backend; a RunConfig built directly
    # names the fix
    cfg = run_config_from_dict(_raw({"head_dim": 128}, {"attention": "sdpa"}))
    with pytest.raises(ConfigError, match="attention=sdpa trains heads at most 256.*mem_efficient"):
        dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, head_dim=320))


@pytest.mark.parametrize("kernel", ["flash2", "flash3", "cudnn", "sdpa"])
def test_fused_kernels_take_256(kernel):
    cfg = run_config_from_dict(_raw({"head_dim": 256}, {"attention": kernel}))
    assert cfg.model.kv_channels == 256


@pytest.mark.parametrize("kernel", ["unfused", "mem_efficient"])
def test_what_runs_instead_takes_wide_heads(kernel):
    assert run_config_from_dict(_raw({"head_dim": 320}, {"attention": kernel})).model.kv_channels \
        == 320


def test_mla_heads_stay_accepted_and_a_wide_value_head_is_refused():
    mla = {"kv_lora_rank": 512, "q_lora_rank": 1536, "qk_head_dim": 128,
           "qk_pos_emb_head_dim": 64, "v_head_dim": 128}
    run_config_from_dict(_raw(mla, {"attention": "flash3"}))  # 192 / 128
    # FA3's forward takes a value head of 512 beside a 64-wide query/key, its backward not
    with pytest.raises(ConfigError, match=r"not 512 \(query/key 64, value 512\)"):
        run_config_from_dict(_raw({**mla, "qk_head_dim": 32, "qk_pos_emb_head_dim": 32,
                                   "v_head_dim": 512}, {"attention": "flash3"}))


def _replaced(model, training, gpu="h100-sxm-80gb"):
    raw = _raw(model, training)
    raw["cluster"]["gpu"] = gpu
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cfg = run_config_from_dict(raw)
    return cfg.training.attention, [str(w.message) for w in caught
                                    if issubclass(w.category, SettingReplaced)]


@pytest.mark.parametrize("framework", ["megatron-lm", "megatron-core", "nemo"])
def test_a_te_frameworks_default_cudnn_runs_unfused_for_wide_heads(framework):
    # Transformer Engine: fused backend and FlashAttention filters refuse, UnfusedDPA runs
    kernel, notes = _replaced({"head_dim": 320}, {"framework": framework})
    assert kernel == "unfused" and notes == [(
        "attention cudnn -> unfused: Transformer Engine's fused and flash attention train heads "
        "of at most 256 (query/key 320, value 320)")]
    assert _replaced({"head_dim": 256}, {"framework": framework}) == ("cudnn", [])
    with pytest.raises(ConfigError, match="attention=cudnn trains heads at most 256"):
        run_config_from_dict(_raw({"head_dim": 320}, {"framework": framework,
                                                       "attention": "cudnn"}))


def test_sdpa_runs_its_memory_efficient_backend_for_wide_heads():
    # the dispatcher named, with or without a framework, and the pytorch profile's own SDPA
    # (resolved to cuDNN on Hopper by sdpa_by_arch) all fall back
    for training in ({"attention": "sdpa"}, {"attention": "sdpa", "framework": "pytorch"},
                     {"framework": "pytorch"}):
        kernel, notes = _replaced({"head_dim": 320}, training)
        assert kernel == "mem_efficient", training
        assert len(notes) == 1 and "-> mem_efficient: PyTorch SDPA" in notes[0]
    assert _replaced({"head_dim": 128}, {"framework": "pytorch"})[0] == "cudnn"
    with pytest.raises(ConfigError, match="attention=flash2 trains heads at most 256"):
        run_config_from_dict(_raw({"head_dim": 320}, {"framework": "pytorch",
                                                       "attention": "flash2"}))


def test_simulate_refuses_a_wide_head_in_one_line(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(_raw({"head_dim": 320}, {"attention": "cudnn"})))
    line = one_error_line(cli("simulate", str(path)))
    assert "at most 256" in line and "unfused" in line


def test_validate_fails_the_wide_row_and_prices_the_others(tmp_path):
    rows = list(csv.DictReader(PUBLIC.open()))
    row = next(r for r in rows if r.get("attention") in ("flash2", "cudnn", "sdpa", "")
               and not r.get("head_dim"))
    wide = {**row, "id": "wide", "head_dim": "320", "attention": "flash2"}
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(row))
    writer.writeheader()
    writer.writerows([row, wide])
    path = tmp_path / "rows.csv"
    path.write_text(out.getvalue())
    result = cli("validate", str(path), "--format", "json")
    data = json.loads(result.stdout)
    got = {r["id"]: r for r in (data["rows"] if isinstance(data, dict) else data)}
    assert "at most 256" in (got["wide"].get("error") or "")
    assert got[row["id"]].get("error") is None and got[row["id"]]["predicted"] > 0


def _warned(raw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_config_from_dict(raw)
    return [str(w.message) for w in caught if issubclass(w.category, TrainsimWarning)
            and "fp8_recipe" in str(w.message)]


def test_a_stated_recipe_with_bf16_is_a_warning():
    (msg,) = _warned(_raw(training={"fp8_recipe": "current"}))
    assert msg.startswith("training.fp8_recipe=current is ignored: training.dtype=bf16")


@pytest.mark.parametrize("training", [
    {"fp8_recipe": "current", "dtype": "fp8"},  # used
    {},  # not stated
    {"framework": "nemo"},  # the profile's default recipe (delayed) with bf16: not the user's
])
def test_no_warning_where_the_recipe_is_used_or_not_stated(training):
    assert _warned(_raw(training=training)) == []


def test_simulate_warns_in_one_line_and_prices_bf16(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(_raw(training={"fp8_recipe": "blockwise"})))
    result = cli("simulate", str(path))
    assert result.exit_code == 0
    lines = [ln for ln in result.stderr.splitlines() if "fp8_recipe" in ln]
    assert lines == [("warning: training.fp8_recipe=blockwise is ignored: training.dtype=bf16 "
                      "runs no fp8 GEMMs (set training.dtype=fp8 to use the recipe)")]
