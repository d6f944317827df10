"""Activation CPU offloading (Megatron-core --cpu-offloading-num-layers through Transformer
Engine >= 2.10) and the tuner's use of it (issue 16, acceptance 2)."""

from __future__ import annotations

import pytest

import trainsim
from trainsim.errors import ConfigError
from trainsim.memory import estimate_stage_memory
from trainsim.memory.estimate import activation_bytes_per_layer
from trainsim.memory.offload import copies_hidden, layer_forward_floor_s, offloaded_bytes
from trainsim.validate.row_settings import unknowns


def cfg_of(n=0, pp=1, recompute="none", gpu="gb200", b=1, dtype="bf16"):
    return trainsim.run_config_from_dict({
        "model": {"preset": "llama3-8b"},
        "parallel": {"pp": pp, "recompute": recompute, "cpu_offloading_num_layers": n},
        "training": {"global_batch_size": 64 * b, "micro_batch_size": b, "seq_length": 8192,
                     "dtype": dtype},
        "cluster": {"gpu": gpu, "num_gpus": 8 * pp, "gpus_per_node": 8},
    })


def test_offloading_keeps_the_activations_of_the_layers_not_offloaded():
    """TE's default schedule keeps at most L - N layers' activations on the GPU: offloading N
    of llama3-8b's 32 layers removes exactly N layers' worth from the peak."""
    base, off = cfg_of(0), cfg_of(12)
    layer = activation_bytes_per_layer(base)
    saved = estimate_stage_memory(base, 0).activations - estimate_stage_memory(off, 0).activations
    assert saved == pytest.approx(12 * layer)
    assert offloaded_bytes(off) == pytest.approx(12 * layer)


@pytest.mark.parametrize("kwargs", [{"n": 4, "pp": 2}, {"n": 4, "recompute": "full"},
                                    {"n": 4, "recompute": "selective"}, {"n": 32}, {"n": -1}])
def test_megatron_core_refuses_what_it_cannot_run(kwargs):
    """Megatron-core's transformer_config.py: no offloading with pipeline parallelism or with
    recomputation, and fewer offloaded layers than the model has."""
    with pytest.raises(ConfigError, match="cpu_offloading_num_layers"):
        cfg_of(**kwargs)


def test_copies_are_hidden_only_where_the_host_link_carries_them_in_time():
    """On GB200's NVLink-C2C a quarter of the layers' copies fit inside the forward at peak;
    offloading all but one layer leaves no window; a GPU whose host link is not stated is
    never assumed to hide them."""
    assert copies_hidden(cfg_of(8))
    assert not copies_hidden(cfg_of(31))
    assert not copies_hidden(cfg_of(8, gpu="h100-sxm-80gb"))
    assert copies_hidden(cfg_of(0, gpu="h100-sxm-80gb"))


def test_layer_forward_floor_is_its_model_flops_at_peak():
    cfg = cfg_of(0)
    from trainsim.model.counts import model_flops_per_token
    flops = model_flops_per_token(cfg.model, 8192) / 3 / 32 * 8192
    assert layer_forward_floor_s(cfg) == pytest.approx(flops / cfg.cluster.gpu.peak_flops["bf16"])


def _row(framework="megatron-bridge", version="26.04", pp="1", recompute=""):
    return {"model": "llama3-70b", "pp": pp, "tp": "1", "recompute": recompute,
            "framework": framework, "framework_version": version, "micro_batch_size": "2",
            "sequence_parallel": "0", "distributed_optimizer": "1", "vpp": "1"}


def test_tuner_offers_offloading_where_the_recipes_use_it():
    """Megatron-Bridge 26.04's perf recipes offload layers (llama3 70B GB200 FSDP); the tuner
    considers it only with pp 1 and an empty recompute cell, and not for other frameworks."""
    from trainsim.catalog.frameworks import framework_profile

    bridge = framework_profile("megatron-bridge", "26.04")
    assert unknowns(_row(), bridge)["cpu_offloading_num_layers"] == [0, 20, 40, 60]
    assert "cpu_offloading_num_layers" not in unknowns(_row(pp="4"), bridge)
    assert "cpu_offloading_num_layers" not in unknowns(_row(recompute="full"), bridge)
    nemo = framework_profile("nemo", "24.07")
    assert "cpu_offloading_num_layers" not in unknowns(_row("nemo", "24.07"), nemo)
