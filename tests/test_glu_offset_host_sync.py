"""Megatron-core's fused quick-GEGLU (gpt-oss's clamped experts) copies its linear offset to the
GPU with ``torch.tensor(..., device=...)`` on every call: the host waits for the experts' fc1
before it issues the activation (core_v0.15.0-core_v0.19.0 fused_bias_geglu.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from trainsim.catalog import gpu
from trainsim.compute import host
from trainsim.config import ClusterConfig, ModelConfig, ParallelConfig, RunConfig, TrainingConfig
from trainsim.pricing import Pricer
from trainsim.workload.layers import backward_of
from trainsim.workload.moe_block import moe_block
from trainsim.workload.ops import Comm
from trainsim.workload.recompute import layer_recompute
from trainsim.workload.shard import shard_of

VERSIONS = {"megatron-bridge": "26.04", "megatron-core": "0.15", "automodel": "0.1"}


def _cfg(framework: str | None, clamp: float | None = 7.0, version: str | None = None,
         recompute: str = "none", offset: float | None = None) -> RunConfig:
    """gpt-oss's experts by default: the clamp and an offset of 1 (none without the clamp)."""
    model = ModelConfig(name="m", hidden_size=1024, num_layers=1, num_attention_heads=8,
                        ffn_hidden_size=512, activation="swiglu", num_experts=8,
                        moe_router_topk=2, moe_ffn_hidden_size=512, activation_clamp=clamp,
                        glu_linear_offset=(1.0 if clamp else 0.0) if offset is None else offset,
                        add_bias_linear=True)
    cluster = ClusterConfig(gpu=gpu("h100-sxm-80gb"), num_gpus=1, gpus_per_node=1)
    training = TrainingConfig(global_batch_size=1, micro_batch_size=1, seq_length=1024,
                              framework=framework,
                              framework_version=version or VERSIONS.get(framework or ""))
    parallel = ParallelConfig(recompute=recompute,
                              recompute_modules=("moe_act",) if recompute == "selective" else None)
    return RunConfig(model=model, parallel=parallel, training=training, cluster=cluster)


def _fwd(cfg: RunConfig) -> list:
    ops: list = []
    moe_block(ops, cfg, shard_of(cfg))
    return ops


@pytest.mark.parametrize("framework", ["megatron-bridge", "megatron-core"])
def test_megatron_syncs_between_the_clamp_and_the_activation(framework):
    ops = _fwd(_cfg(framework))
    names = [op.name for op in ops]
    sync = ops[names.index("expert_act_offset")]
    assert sync.host_sync and sync.kernels == 1
    assert names.index("expert_act_clamp") < names.index("expert_act_offset") \
        < names.index("expert_act")
    # its backward reads the saved offset: no copy, no wait
    assert not any(op.name.startswith("expert_act_offset")
                   for op in backward_of(ops, shard_of(_cfg(framework))))


@pytest.mark.parametrize("cfg", [_cfg("automodel"), _cfg(None), _cfg("megatron-bridge", None),
                                 _cfg("megatron-core", version="0.14"),
                                 _cfg("megatron-bridge", offset=0.0)],
                         ids=["automodel", "no-framework", "no-clamp-no-offset", "core-0.14",
                              "clamp-without-offset"])
def test_no_sync_elsewhere(cfg):
    assert "expert_act_offset" not in [op.name for op in _fwd(cfg)]


def test_the_offset_not_the_clamp_marks_the_quick_geglu():
    """An offset without a clamp still runs Megatron-core's fused quick-GEGLU (and its copy);
    a clamp without an offset clamps eagerly but copies nothing."""
    names = [op.name for op in _fwd(_cfg("megatron-bridge", clamp=None, offset=1.0))]
    assert "expert_act_offset" in names and "expert_act_clamp" not in names
    names = [op.name for op in _fwd(_cfg("megatron-bridge", offset=0.0))]
    assert "expert_act_clamp" in names and "expert_act_offset" not in names


def test_the_gpt_oss_presets_and_hf_configs_carry_the_offset(tmp_path):
    import json

    from trainsim.catalog import model, model_from_hf_config
    assert model("gpt-oss-20b").glu_linear_offset == 1.0
    assert model("gpt-oss-120b").glu_linear_offset == 1.0
    assert model("qwen3-30b-a3b").glu_linear_offset == 0.0
    path = tmp_path / "config.json"
    hf = {"hidden_size": 2880, "num_hidden_layers": 2, "num_attention_heads": 64,
          "vocab_size": 1000, "hidden_act": "silu", "swiglu_limit": 7.0}
    for model_type, offset in (("gpt_oss", 1.0), ("qwen3_moe", 0.0)):
        path.write_text(json.dumps({**hf, "model_type": model_type}))
        assert model_from_hf_config(path).glu_linear_offset == offset


def test_moe_act_recompute_copies_the_offset_again():
    cfg = _cfg("megatron-bridge", recompute="selective")
    again = [op.name for op in layer_recompute(cfg, shard_of(cfg), _fwd(cfg))]
    assert again.index("recompute.expert_act_clamp") < again.index("recompute.expert_act_offset")


def test_the_sync_exposes_host_time():
    """Priced as compute.host prices every sync: the drained queue waits for the launches after
    it, so the same ops cost the GPU more idle time than with an asynchronous copy."""
    cfg = _cfg("megatron-bridge")
    pricer = Pricer(cfg)
    ops = [op for op in _fwd(cfg) if not isinstance(op, Comm)]
    without = [replace(op, host_sync=False) if op.name == "expert_act_offset" else op
               for op in ops]
    assert without != ops

    def exposed(some: list) -> float:
        return host.exposed_s(some, [pricer.compute.time(op) for op in some],
                              host.HOST_S_PER_KERNEL)

    assert exposed(ops) > exposed(without) + 10e-6
