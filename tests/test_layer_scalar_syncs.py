"""Megatron-DeepSpeed's ParallelTransformerLayer.forward makes ``moe_loss`` and ``mlp_bias`` with
``torch.tensor(0.0, device=...)`` on every call (microsoft/Megatron-DeepSpeed@50b32515, 2022-06-07):
two synchronising host-to-device copies between the post-attention norm and the MLP."""

from __future__ import annotations

import pytest

from trainsim.catalog import gpu
from trainsim.compute import host
from trainsim.config import ClusterConfig, ModelConfig, ParallelConfig, RunConfig, TrainingConfig
from trainsim.pricing import Pricer
from trainsim.workload.elementwise import LAYER_SCALAR_SYNCS
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.ops import Comm
from trainsim.workload.recompute import layer_recompute
from trainsim.workload.shard import shard_of


def _cfg(framework: str | None, version: str | None, recompute: str = "none",
         hidden: int = 768) -> RunConfig:
    model = ModelConfig(name="m", hidden_size=hidden, num_layers=2, num_attention_heads=12,
                        ffn_hidden_size=4 * hidden, activation="gelu", add_bias_linear=True)
    cluster = ClusterConfig(gpu=gpu("a100-sxm-40gb"), num_gpus=1, gpus_per_node=1)
    training = TrainingConfig(global_batch_size=2, micro_batch_size=2, seq_length=2048,
                              framework=framework, framework_version=version, dtype="fp16")
    return RunConfig(model=model, parallel=ParallelConfig(recompute=recompute),
                     training=training, cluster=cluster)


def test_two_syncs_between_the_norm_and_the_mlp():
    cfg = _cfg("megatron-deepspeed", "2023-07-12")
    ops = layer_forward(cfg, shard_of(cfg))
    names = [op.name for op in ops]
    syncs = [op for op in ops if op.name in LAYER_SCALAR_SYNCS]
    assert [op.name for op in syncs] == list(LAYER_SCALAR_SYNCS)
    assert all(op.host_sync and op.kernels == 1 for op in syncs)
    assert names.index("mlp_norm") < names.index(LAYER_SCALAR_SYNCS[0]) \
        < names.index(LAYER_SCALAR_SYNCS[1]) < names.index("fc1")
    # no backward of their own; a full recompute re-runs the forward and its copies
    assert not any(op.name.split(".")[0] in LAYER_SCALAR_SYNCS
                   for op in backward_of(ops, shard_of(cfg)))
    full = _cfg("megatron-deepspeed", "2023-07-12", recompute="full")
    rerun = layer_recompute(full, shard_of(full), layer_forward(full, shard_of(full)))
    assert sum(getattr(op, "host_sync", False) for op in rerun) == 2


@pytest.mark.parametrize("framework,version", [
    ("megatron-deepspeed", "2022-03"),  # BigScience's fork before Microsoft's MoE support
    ("megatron-lm", None), ("megatron-core", None), (None, None)])
def test_no_syncs_elsewhere(framework, version):
    cfg = _cfg(framework, version)
    assert not any(op.name in LAYER_SCALAR_SYNCS for op in layer_forward(cfg, shard_of(cfg)))


def test_the_waits_expose_host_time_on_a_small_layer():
    """After each drained queue the GPU waits for the next launch: the layer's forward takes
    longer with the copies than the same ops without them would, and never less."""
    cfg = _cfg("megatron-deepspeed", "2023-07-12")
    ops = layer_forward(cfg, shard_of(cfg))
    pricer = Pricer(cfg)
    gpu_s = [0.0 if isinstance(op, Comm) else pricer.compute.time(op) for op in ops]
    plain = [(op, t) for op, t in zip(ops, gpu_s) if op.name not in LAYER_SCALAR_SYNCS]
    with_syncs = host.exposed_s(ops, gpu_s, host.HOST_S_PER_KERNEL)
    without = host.exposed_s([o for o, _ in plain], [t for _, t in plain],
                             host.HOST_S_PER_KERNEL)
    assert with_syncs > without + host.HOST_S_PER_KERNEL
