"""Model state of NeMo 2 performance-script runs as their recipes set it (issue 16 item 2): the
validation row's ``precision_aware_optimizer`` option and ``grad_reduce_dtype`` cell against a
hand count of Megatron-core's buffers."""

from __future__ import annotations

import pytest

from trainsim.memory.estimate import GiB, estimate_stage_memory
from trainsim.memory.state import model_state
from trainsim.validate.row_settings import OPTION_FIELDS
from trainsim.validate.training import row_config

ROW = {  # dgxc2505-nemotron4-15b-bf16-h100-16 (benchmarks/training_dgxc2505.csv), cells as stated
    "id": "nemotron4-15b", "model": "nemotron4-15b", "seq_length": "4096",
    "gpu": "h100-sxm-80gb", "num_gpus": "16", "gpus_per_node": "8", "nic_gbps_per_gpu": "400",
    "tp": "2", "pp": "1", "cp": "1", "ep": "1", "sequence_parallel": "1", "recompute": "none",
    "distributed_optimizer": "1", "global_batch_size": "64", "micro_batch_size": "2",
    "dtype": "bf16", "framework": "nemo", "framework_version": "25.04",
    "attention_dropout": "0", "hidden_dropout": "0", "measured_iteration_s": "2.746",
}
H, FFN, VOCAB, LAYERS, KV = 6144, 24576, 256_000, 32, 1024  # Nemotron-4 15B: 8 KV heads of 128


def _matrices_per_rank(tp: int) -> float:
    """Matmul weights of one tensor-parallel rank: untied embedding and output layer, and per
    layer QKV (GQA), the output projection and the 2-matrix squared-ReLU MLP."""
    layer = H * (H + 2 * KV) + H * H + 2 * H * FFN
    return (2 * VOCAB * H + LAYERS * layer) / tp


def test_precision_aware_option_sets_megatron_cores_switch():
    assert OPTION_FIELDS["precision_aware_optimizer"] == (
        "training", ("use_precision_aware_optimizer",))
    cfg = row_config({**ROW, "options": "tp_overlap;dp_overlap;precision_aware_optimizer"})
    assert cfg.training.use_precision_aware_optimizer
    assert not row_config({**ROW, "options": "tp_overlap;dp_overlap"}) \
        .training.use_precision_aware_optimizer


def test_nemo_perf_recipe_state_by_hand():
    """Megatron-core at the NeMo 25.04 perf scripts' commit: the parameter buffer in bf16
    (2 bytes), the gradient buffer in the reduce dtype (bf16 where the recipe's performance mode
    sets grad_reduce_in_fp32 = False: 2 bytes; param_and_grad_buffer.py), and the distributed
    optimizer's shard over the 8 data-parallel ranks: TE FusedAdam's int16 master remainders
    plus two fp32 moments (2 + 4 + 4 bytes) with use_precision_aware_optimizer, Megatron's fp32
    master plus moments (4 + 4 + 4) without."""
    stated = {**ROW, "options": "tp_overlap;dp_overlap;precision_aware_optimizer",
              "grad_reduce_dtype": "bf16"}
    cfg = row_config(stated)
    st = model_state(cfg, 0)
    params = st.weights / 2
    # the hand count of matmul weights is within 0.1 % (norms and biases are the rest)
    assert params == pytest.approx(_matrices_per_rank(2), rel=1e-3)
    dp = 16 // 2
    assert st.gradients == pytest.approx(2 * params)
    assert st.optimizer == pytest.approx((2 + 4 + 4) * params / dp)
    fp32 = model_state(row_config({**ROW, "options": "tp_overlap;dp_overlap"}), 0)
    assert fp32.gradients == pytest.approx(4 * params)
    assert fp32.optimizer == pytest.approx((4 + 4 + 4) * params / dp)
    # the run trained on 80 GB GPUs: with its recipe's state it is predicted to fit, with
    # 4-byte gradients and a 12-byte optimizer shard it was not
    hbm = cfg.cluster.gpu.hbm_bytes
    assert estimate_stage_memory(cfg, 0).total < hbm
    saved = (st.gradients + st.optimizer) - (fp32.gradients + fp32.optimizer)
    assert saved / GiB == pytest.approx(-(2 + 2 / dp) * params / GiB)
