"""DeepSpeed's ZeRO-1 all-reduces the whole gradient, then each rank steps its shard."""

from __future__ import annotations

from trainsim import run_config_from_dict, simulate


def cfg(**parallel):
    return run_config_from_dict({
        "model": {"preset": "gpt3-175b", "num_layers": 8},
        "parallel": {"tp": 8, "pp": 2, "distributed_optimizer": True, **parallel},
        "training": {"global_batch_size": 64, "micro_batch_size": 1, "seq_length": 2048,
                     "dtype": "fp16", "framework": "megatron-deepspeed",
                     "framework_version": "2022-02"},
        "cluster": {"gpu": "a100-sxm-80gb", "num_gpus": 64, "gpus_per_node": 8}})


def _grad_tasks(c):
    tl = simulate(c, keep_timeline=True).timeline
    return [t for t in tl.tasks if t.label.startswith("grad ")]


def test_megatron_deepspeed_reduces_gradients_with_all_reduce():
    """The profile selects the all-reduce (stage_1_and_2.py buffered_reduce_fallback); the same
    run told to reduce-scatter moves half the bytes in its gradient reduction and is faster."""
    c = cfg()
    assert c.parallel.zero1_grad_reduce == "all_reduce"
    tasks = _grad_tasks(c)
    assert tasks and all("all_reduce" in t.label for t in tasks)
    scatter = cfg(zero1_grad_reduce="reduce_scatter")
    assert all("reduce_scatter" in t.label for t in _grad_tasks(scatter))
    assert sum(t.duration_s for t in tasks) > 1.8 * sum(t.duration_s for t in _grad_tasks(scatter))
    assert simulate(c).iteration_time_s > simulate(scatter).iteration_time_s


def test_megatron_core_keeps_its_reduce_scatter():
    """Megatron's distributed optimizer reduce-scatters (the default)."""
    c = run_config_from_dict({
        "model": {"preset": "gpt3-175b", "num_layers": 8},
        "parallel": {"tp": 8, "pp": 2, "distributed_optimizer": True},
        "training": {"global_batch_size": 64, "micro_batch_size": 1, "seq_length": 2048,
                     "dtype": "bf16"},
        "cluster": {"gpu": "a100-sxm-80gb", "num_gpus": 64, "gpus_per_node": 8}})
    assert c.parallel.zero1_grad_reduce == "reduce_scatter"
