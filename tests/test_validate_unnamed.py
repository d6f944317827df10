"""A training row that names no framework (validate.unnamed): the settings frameworks differ on
are tuned like any other empty cell, and the table says what each empty cell was taken as."""
from __future__ import annotations

import pytest
from rich.console import Console

from trainsim.memo import stage_memory
from trainsim.report.table import render_validation
from trainsim.validate.assumed import assumed_cells
from trainsim.validate.common import RowResult
from trainsim.validate.row_settings import row_profile, unknowns
from trainsim.validate.training import predict_training_row, row_config

# Llama 2 7B on 32 H100 with TP 2, PP 2 interleaved twice: DP 8, every overlap can act
ROW = {"id": "u", "model": "llama2-7b", "gpu": "h100-sxm-80gb", "num_gpus": "32",
       "gpus_per_node": "8", "tp": "2", "pp": "2", "vpp": "2", "cp": "1",
       "global_batch_size": "128", "micro_batch_size": "1", "seq_length": "4096",
       "dtype": "bf16", "sequence_parallel": "1", "recompute": "none",
       "distributed_optimizer": "1", "measured_iteration_s": "1.0"}


def test_a_row_naming_no_framework_tunes_the_overlaps_and_the_gradient_reduce_dtype():
    unknown = unknowns(ROW, None)
    for key in ("dp_overlap", "tp_comm_overlap", "overlap_p2p_comm"):
        assert unknown[key] == [False, True]
    assert unknown["grad_reduce_dtype"] == ["fp32", "bf16"]
    assert unknowns({**ROW, "dtype": "fp16"}, None)["grad_reduce_dtype"] == ["fp32", "fp16"]
    assert unknowns({**ROW, "dtype": "fp8"}, None)["grad_reduce_dtype"] == ["fp32", "bf16"]


def test_each_overlap_is_tuned_only_where_it_can_act():
    alone = unknowns({**ROW, "num_gpus": "4", "vpp": "1", "tp": "2", "pp": "2"}, None)
    assert not {"dp_overlap", "overlap_p2p_comm"} & set(alone)  # DP 1, no interleaving
    assert "tp_comm_overlap" in alone
    assert "tp_comm_overlap" not in unknowns({**ROW, "tp": "1", "num_gpus": "16"}, None)


def test_stated_cells_and_a_named_framework_are_not_tuned_over():
    stated = unknowns({**ROW, "options": "dp_overlap", "grad_reduce_dtype": "fp32"}, None)
    assert not {"dp_overlap", "tp_comm_overlap", "overlap_p2p_comm", "grad_reduce_dtype"} & \
        set(stated)
    named = {**ROW, "framework": "megatron-lm", "framework_version": "2023-09"}
    assert "grad_reduce_dtype" not in unknowns(named, row_profile(named))  # its fp32 default


def test_a_16_bit_gradient_reduce_halves_the_gradient_buffer():
    """Megatron's main-grad buffer holds the reduce dtype (fp32 under grad_reduce_in_fp32):
    the tuned bf16 frees the bytes that let a NeMo recipe run without recompute."""
    fp32, bf16 = (row_config(ROW, {"grad_reduce_dtype": d}, compute_db=None)
                  for d in ("fp32", "bf16"))
    assert fp32.training.grad_reduce_in_fp32 and not bf16.training.grad_reduce_in_fp32
    assert stage_memory(bf16, 0).gradients == pytest.approx(stage_memory(fp32, 0).gradients / 2)


def test_the_empty_cells_the_tuner_left_are_reported_as_assumed():
    row = {**ROW, "dtype": "fp8"}
    cfg = row_config(row, {}, compute_db=None)
    got = assumed_cells(row, cfg, {})
    assert got["framework"].startswith("none")
    assert got["grad_reduce_dtype"] == "fp32" and got["fp8_recipe"] == "delayed"
    assert got["model shape"].startswith("llama2-7b preset (h 4096, 32 layers")
    assert got["options"] == "none" and got["attention"] == cfg.training.attention
    assert "gpus_per_node" not in got and got["nic_gbps_per_gpu"] == "400"
    nemo = {**row, "framework": "nemo", "framework_version": "24.07", "grad_reduce_dtype": "",
            "hidden_size": "4096", "num_layers": "32", "num_attention_heads": "32",
            "ffn_hidden_size": "11008", "vocab_size": "32000", "nic_gbps_per_gpu": "400"}
    chosen = {"tp_comm_overlap": True}
    got = assumed_cells(nemo, row_config(nemo, chosen, compute_db=None), chosen)
    # the profile's run options and fp8 gradient reduce; the tuned switch is the tuner's
    assert got == {"grad_reduce_dtype": "bf16", "fp8_recipe": "delayed",
                   "attention": "flash2", "options": "dp_overlap;pp_overlap"}


def test_the_table_lists_what_was_assumed_after_the_choices():
    res = RowResult(id="r", measured=1.0, predicted=1.1, chosen={"recompute": "none"},
                    fits_in_memory=True, extra={"assumed": {"framework": "none (its choices "
                                                            "tuned)", "attention": "flash2"}})
    console = Console(width=250, record=True)
    console.print(render_validation("training", [res], "s/iteration"))
    text = console.export_text()
    assert "recompute=none, assumed framework=none (its choices tuned), attention=flash2" in text


def test_a_nemo_recipe_row_without_its_framework_is_tuned_to_the_recipe():
    """NeMo 24.07's Llama 3 8B on 8 H100 (CP 2, seq 8192), every recipe cell empty: with fp32
    gradients only full recompute fit (+28.6 %); the tuned bf16 reduce runs it without
    recompute, as the NeMo-Framework-Launcher 24.07 recipe does (within 5 % of 10.68 s)."""
    row = {"id": "r", "model": "llama3-8b", "seq_length": "8192", "gpu": "h100-sxm-80gb",
           "num_gpus": "8", "gpus_per_node": "8", "nic_gbps_per_gpu": "400", "tp": "1",
           "pp": "1", "cp": "2", "ep": "1", "vpp": "1", "global_batch_size": "128",
           "micro_batch_size": "1", "dtype": "fp8", "measured_iteration_s": "10.6797"}
    res = predict_training_row(row)
    assert res.chosen["recompute"] == "none" and res.chosen["grad_reduce_dtype"] == "bf16"
    assert res.ape < 0.05
    assert res.extra["assumed"]["framework"].startswith("none")
