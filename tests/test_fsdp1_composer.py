"""PyTorch FSDP1 under MosaicML Composer, as llm-foundry ran it (issue 17, framework mechanisms):
the optimizer loops over the tensors of each rank's shard, reading a step count from the GPU
for each."""

from __future__ import annotations

from trainsim import simulate
from trainsim.catalog import run_config_from_dict
from trainsim.model.counts import layer_params
from trainsim.workload.fsdp_optimizer import (
    _pieces_by_rank,
    fsdp_optimizer_pieces,
    per_tensor_optimizer,
)
from trainsim.workload.ops import Elementwise
from trainsim.workload.sharding_grads import _module_order


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
    one = fsdp_optimizer_pieces(cfg(1), 0)  # one rank: every tensor whole
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


def test_fsdp1_copies_each_gradient_and_casts_it_for_an_fp32_reduction():
    from trainsim.workload.sharding_grads import fsdp1_grad_copies

    n = layer_params(cfg().model, 0)
    # DEFAULT (reduce in fp32): concatenate 2+2 bytes per parameter on the compute stream;
    # cast 2+4 and divide 4+4 on the post-backward stream
    (concat,), (cast, _) = fsdp1_grad_copies(cfg(grad_reduce_dtype="fp32"), range(1), False,
                                             False)
    assert concat.bytes == 4 * n and cast.bytes == 14 * n
    # PURE (reduce in bf16): no cast, the division in 16 bits
    (concat,), (divide, _) = fsdp1_grad_copies(cfg(grad_reduce_dtype="bf16"), range(1), False,
                                               False)
    assert concat.bytes == 4 * n and divide.bytes == 4 * n
    assert fsdp1_grad_copies(cfg(1, zero=3), range(1), False, False) == ([], [])


def test_fsdp1_backward_pays_for_its_gradient_copies():
    from trainsim.workload import fsdp2_copies

    # the reference: the same run sharded as FSDP2 without torch's FSDP2 copies around its
    # collectives (a run naming no framework has no ``fsdp2_copies`` profile line;
    # tests/test_fsdp2_copies.py), so only FSDP1's gradient copies differ
    assert not fsdp2_copies.applies(cfg(8, framework=None, impl="fsdp2"))
    one = {impl: simulate(cfg(8, framework=None, impl=impl)) for impl in ("fsdp1", "fsdp2")}
    extra = one["fsdp1"].breakdown["compute_s"] - one["fsdp2"].breakdown["compute_s"]
    # the concatenation on the compute stream, ~1.3e9 parameters x 4 bytes at ~3 TB/s: ~2 ms
    # per micro-batch; the cast and divide beside the compute cost only the SMs they take
    assert 1e-3 < extra < 6e-3


def test_fsdp1_casts_and_divides_on_the_post_backward_stream():
    from trainsim.pricing import Pricer
    from trainsim.simulator import build_graph

    c = cfg(8, framework=None, impl="fsdp1")
    tasks = build_graph(c, Pricer(c)).tasks
    casts = [t for t in tasks if t.label.startswith("grad prep")]
    # torch 2.1 _post_backward_hook: the cast and _reduce_grad's divides run on
    # _post_backward_stream, before the reduce-scatter that waits for them, not in the backward
    assert casts and all(t.stream[1] == "dp" for t in casts)
    scatter = next(i for i, t in enumerate(tasks) if "reduce-scatter" in t.label)
    assert tasks.index(casts[0]) in tasks[scatter].deps


def test_shard_grad_op_gathers_each_unit_for_the_forward_only():
    from trainsim.pricing import Pricer
    from trainsim.simulator import build_graph

    labels = {}
    for z in (2, 3):
        c = cfg(16, framework=None, impl="fsdp1", zero=z)
        labels[z] = [t.label for t in build_graph(c, Pricer(c)).tasks]
    # FSDP's SHARD_GRAD_OP reduce-scatters each unit after its backward, as FULL_SHARD does,
    # and gathers in the forward only: no Megatron-style gather after the step
    for z in (2, 3):
        assert any("grad reduce-scatter" in x for x in labels[z])
        assert not any(x.startswith("param all-gather") for x in labels[z])
    sgo, full = (simulate(cfg(16, framework=None, impl="fsdp1", zero=z)) for z in (2, 3))
    assert sgo.iteration_time_s < full.iteration_time_s
