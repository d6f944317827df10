"""FSDP over a model cast to 16 bits (framework profile ``params_16bit``, NeMo AutoModel):
16-bit parameter shards and gradients, no fp32 master copy, Adam's moments in 16 bits."""

from __future__ import annotations

import pytest

import trainsim
from trainsim.catalog.frameworks import framework_profile
from trainsim.memory.state import model_state


def _cfg(framework: str, version: str, *, optimizer: str = "adam", pp: int = 1):
    return trainsim.run_config_from_dict({
        "model": {"preset": "llama3-8b"},
        "parallel": {"tp": 1, "pp": pp, "zero_stage": 3, "data_parallel_impl": "fsdp2"},
        "training": {"global_batch_size": 8 * pp, "micro_batch_size": 1, "seq_length": 4096,
                     "dtype": "bf16", "optimizer": optimizer, "grad_reduce_in_fp32": False,
                     "framework": framework,
                     "framework_version": version},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8},
    })


def test_automodel_profile_has_16bit_parameters():
    """AutoModel casts its models to bf16 before FSDP2 shards them; torchtitan keeps fp32."""
    assert framework_profile("automodel", "0.1").supports("params_16bit") is True
    assert framework_profile("torchtitan", "2024-12").supports("params_16bit") is None


@pytest.mark.parametrize("optimizer,moments", [("adam", 4.0), ("sgd", 2.0)])
def test_16bit_shards_halve_every_model_state_term(optimizer, moments):
    """Per sharded parameter: 2 bytes of weight, 2 of gradient and the optimizer's moments at
    half their fp32 size, where fp32 FSDP keeps 4, 4 and twice the moments."""
    fp32 = model_state(_cfg("torchtitan", "2024-12", optimizer=optimizer), 0)
    bf16 = model_state(_cfg("automodel", "0.1", optimizer=optimizer), 0)
    assert bf16.weights == pytest.approx(fp32.weights / 2)
    assert bf16.gradients == pytest.approx(fp32.gradients / 2)
    assert bf16.optimizer == pytest.approx(fp32.optimizer / 2)
    sharded = bf16.weights / 2.0
    assert bf16.optimizer == pytest.approx(moments * sharded)


def test_16bit_shards_under_pipelining_keep_the_gathered_copies():
    """With PP both keep the stage's gathered 16-bit parameters; torchtitan accumulates
    unsharded gradients until the last micro-batch, AutoModel (sync on every micro-batch,
    ``fsdp_pp_sync_every_microbatch``) keeps only its 16-bit gradient shard."""
    fp32 = model_state(_cfg("torchtitan", "2024-12", pp=2), 0)
    bf16 = model_state(_cfg("automodel", "0.1", pp=2), 0)
    shard_fp32 = fp32.step_gradients / 4.0
    assert fp32.weights - bf16.weights == pytest.approx(2.0 * shard_fp32)
    assert bf16.gradients == pytest.approx(2.0 * shard_fp32)
    assert fp32.gradients > 2 * bf16.gradients  # unsharded (4 ranks: 4x the shard)
