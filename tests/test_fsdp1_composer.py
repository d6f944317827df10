"""PyTorch FSDP1 under MosaicML Composer, as llm-foundry ran it (issue 17, framework mechanisms):
the optimizer loops over the tensors of each rank's shard, reading a step count from the GPU
for each."""

from __future__ import annotations

from trainsim import simulate
from trainsim.catalog import run_config_from_dict
from trainsim.model.counts import layer_params
from trainsim.workload.ops import Elementwise
from trainsim.workload.sharding import (
    _module_order,
    _pieces_by_rank,
    fsdp_optimizer_pieces,
    per_tensor_optimizer,
)


def cfg(gpus=8, framework=("llm-foundry", "2024-01"), model="mpt-1b", zero=3, impl=None,
        **training):
    parallel = {"zero_stage": zero, "recompute": "none"}
    if impl:
        parallel["data_parallel_impl"] = impl
    raw = {"model": {"preset": model},
           "parallel": parallel,
           "training": {"global_batch_size": gpus * 4, "micro_batch_size": 4, "seq_length": 2048,
                        "dtype": "bf16", **training},
           "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": gpus, "gpus_per_node": 8}}
    if framework:
        raw["training"].update(framework=framework[0], framework_version=framework[1])
    return run_config_from_dict(raw)


def test_module_order_holds_the_whole_layer():
    c = cfg()
    assert sum(_module_order(c, 0)) == layer_params(c.model, 0)
    # MPT's block: norm_1 (w, b), Wqkv (w, b), out_proj (w, b), norm_2 (w, b), up, down (w, b)
    assert len(_module_order(c, 0)) == 12


def test_a_shard_holds_each_tensor_it_overlaps():
    # tensors of 10, 1, 1, 10 elements over 2 ranks of 11: rank 0 holds 10 and 1, rank 1 the
    # other 1 and the 10 (a boundary between tensors cuts none)
    assert _pieces_by_rank((10.0, 1.0, 1.0, 10.0), 2) == ((10.0, 1.0), (1.0, 10.0))
    # a tensor cut by a boundary counts on both ranks
    assert _pieces_by_rank((6.0, 6.0), 3) == ((4.0,), (2.0, 2.0), (4.0,))


def test_sharded_views_give_each_rank_a_few_tensors_of_every_unit():
    one = fsdp_optimizer_pieces(cfg(8, zero=0), 0)
    sharded = fsdp_optimizer_pieces(cfg(128), 0)
    layers = cfg().model.num_layers
    assert len(one) == 12 * layers + 4  # every tensor: blocks, wte, wpe, final norm (w, b)
    # 128 shards of a block: the busiest rank takes the out_proj/norm_2 junction (5 tensors)
    assert layers < len(sharded) <= 6 * layers
    assert abs(sum(sharded) - sum(one) / 128) < 0.01 * sum(one) / 128


def test_the_step_waits_for_the_gpu_once_per_tensor():
    ops = per_tensor_optimizer([1e6, 10.0], "dp_cp")
    assert sum(isinstance(op, Elementwise) and op.host_sync for op in ops) == 2


def test_composer_step_costs_host_time_beyond_the_fused_step():
    base = simulate(cfg(128, framework=None, impl="fsdp1"))
    foundry = simulate(cfg(128))
    # the same model and batch per GPU: the fused multi-tensor step is ~nothing on 1/128 of
    # 1.3B parameters; the per-tensor loop is ~100 tensors, each a sync and 8 launches
    assert base.breakdown["optimizer_s"] < 2e-3
    assert foundry.breakdown["optimizer_s"] > 0.02
