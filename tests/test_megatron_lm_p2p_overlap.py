"""Megatron-LM overlaps an interleaved pipeline's sends by default from 2023-10
(NVIDIA/Megatron-LM@4eeff55d, merged with 3f554d97 on 2023-10-24: --no-overlap-p2p-communication,
store_false; validate_args turns it off without virtual pipeline stages)."""

from __future__ import annotations

from helpers import overlaps  # the validator's overlap flags of a row

ROW = {"id": "r", "model": "llama2-70b", "gpu": "h100-sxm-80gb", "num_gpus": "64",
       "gpus_per_node": "8", "tp": "4", "pp": "4", "vpp": "5", "global_batch_size": "128",
       "micro_batch_size": "1", "seq_length": "4096", "dtype": "bf16",
       "framework": "megatron-lm", "framework_version": "2023-10", "measured_iteration_s": "1",
       "options": ""}


def test_interleaved_megatron_lm_overlaps_sends_from_2023_10():
    assert overlaps(ROW)[2] is True
    assert overlaps(ROW, framework_version="2024-06")[2] is True


def test_no_send_overlap_before_2023_10_or_without_interleaving():
    assert overlaps(ROW, framework_version="2023-09")[2] is False
    assert overlaps(ROW, vpp="1")[2] is False        # validate_args: overlap_p2p_comm = False
    assert overlaps(ROW, vpp="")[2] is False
    assert overlaps(ROW, options="dp_overlap")[2] is False  # a row that states options keeps them
