"""Apex DistributedFusedAdam's state as NeMo 1.x sets it up (NVIDIA/NeMo@v2.0.0
megatron_base_model.py L790-812 setup_optimization; NVIDIA/apex distributed_fused_adam.py
StateBucket), by hand per sharded parameter."""

from __future__ import annotations

import pytest

import trainsim
from trainsim.errors import ConfigError
from trainsim.memory.state import model_state


def cfg_of(framework="nemo", version="24.09", **training):
    return trainsim.run_config_from_dict({
        "model": {"preset": "llama3-8b"},
        "parallel": {"distributed_optimizer": True},
        "training": {"global_batch_size": 64, "seq_length": 4096, "framework": framework,
                     "framework_version": version, **training},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8},
    })


@pytest.mark.parametrize(("training", "state_bytes"), [
    # fp32 state on a bf16 model: store_param_remainders (int16) + two fp32 moments
    ({}, 2 + 4 + 4),
    # optim.dtype bf16 == the model's dtype: store_params False, two bf16 moments
    ({"optimizer_dtype": "bf16"}, 2 + 2),
    # fp8 compute keeps bf16 parameters: remainders as in bf16
    ({"dtype": "fp8", "fp8_recipe": "delayed"}, 2 + 4 + 4),
])
def test_nemo1_apex_state_by_hand(training, state_bytes):
    bf16 = model_state(cfg_of(), 0)
    params = bf16.weights / 2
    st = model_state(cfg_of(**training), 0)
    assert st.optimizer == pytest.approx(state_bytes * params / 8)


def test_nemo2_keeps_megatron_cores_state():
    """NeMo 2 (25.02 on) runs Megatron-core's distributed optimizer: fp32 master + moments."""
    st = model_state(cfg_of(version="25.02"), 0)
    assert st.optimizer == pytest.approx(12 * st.weights / 2 / 8)


def test_optimizer_dtype_only_where_the_optimizer_is_apexs():
    with pytest.raises(ConfigError, match="apex_distributed_adam"):
        cfg_of(version="25.02", optimizer_dtype="bf16")
    with pytest.raises(ConfigError, match="framework"):
        trainsim.run_config_from_dict({
            "model": {"preset": "llama3-8b"}, "parallel": {"distributed_optimizer": True},
            "training": {"global_batch_size": 64, "seq_length": 4096, "optimizer_dtype": "bf16"},
            "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8}})
