"""A NeMo 24.07 row that states no options gets what the launcher recipes turn on."""

from __future__ import annotations

from helpers import overlaps  # the validator's overlap flags of a row

from trainsim.validate.row_settings import training_base

ROW = {"id": "r", "model": "llama2-70b", "gpu": "h100-sxm-80gb", "num_gpus": "64",
       "gpus_per_node": "8", "tp": "4", "pp": "4", "vpp": "20", "global_batch_size": "128",
       "micro_batch_size": "1", "seq_length": "4096", "dtype": "fp8", "fp8_recipe": "delayed",
       "framework": "nemo", "framework_version": "24.07", "measured_iteration_s": "1",
       "options": ""}


def test_nemo_recipes_overlap_the_data_parallel_sync_and_interleaved_sends():
    # distributed_fused_adam overlap_grad_sync / overlap_param_sync in every recipe;
    # overlap_p2p_comm in the interleaved ones
    assert overlaps(ROW) == (True, True, True, False)
    assert overlaps(ROW, vpp="1") == (True, True, False, False)
    assert overlaps(ROW, options="pp_overlap") == (False, False, True, False)  # stated: kept


def test_nemo_tp_overlap_is_the_recipes_choice():
    # ub_tp_comm_overlap is True in some recipes and False in others: tuned where unstated
    assert training_base(ROW)[1]["tp_comm_overlap"] == [False, True]
    assert "tp_comm_overlap" not in training_base({**ROW, "options": "dp_overlap"})[1]
