"""DeepSpeed ZeRO-3's persistent parameters gathered again after each step
(``workload.zero3_persistent``) and the host price of ProcessGroupNCCL's C++-issued per-rank
copies (``compute.host.CPP_LAUNCH_S``)."""

from __future__ import annotations

import math

import pytest

from trainsim.catalog import run_config_from_dict
from trainsim.compute.host import (
    CPP_LAUNCH_S,
    HOST_S_PER_KERNEL,
    PY_LAUNCH_S,
    PY_VIEW_S,
    exposed_s,
    launches,
)
from trainsim.workload.ops import Comm, Elementwise
from trainsim.workload.sharding import list_all_gather_ops
from trainsim.workload.zero3_persistent import (
    persistent_tensors,
    ranks_holding,
    zero3_persistent_regather,
)


def cfg(gpus=384, version="2021-03", framework="deepspeed", zero=3):
    return run_config_from_dict({
        "model": {"preset": "gpt3-175b", "num_layers": 4},
        "parallel": {"zero_stage": zero, "recompute": "full"},
        "training": {"global_batch_size": gpus, "micro_batch_size": 1, "seq_length": 2048,
                     "dtype": "fp16", "framework": framework, "framework_version": version},
        "cluster": {"gpu": "a100-sxm-80gb", "num_gpus": gpus, "gpus_per_node": 8}})


def test_a_gpt_layer_keeps_its_biases_and_norms():
    """Two LayerNorms (weight, bias), the QKV, projection, fc1 and fc2 biases: 8 a layer under
    1e5 elements at hidden 12288 (fc1's bias 49152); the final norm's 2 on the last stage."""
    c = cfg()
    h = c.model.hidden_size
    assert sorted(persistent_tensors(c, range(1), False)) == sorted([h] * 6 + [3 * h, 4 * h])
    assert len(persistent_tensors(c, range(4), True)) == 4 * 8 + 2


@pytest.mark.parametrize("numel, ranks, holding", [
    (20480, 2240, 2048),   # 10 elements a rank: the last 192 ranks hold padding only
    (12288, 1536, 1536),   # 8 a rank, all full
    (61440, 2240, 2195),   # 28 a rank
    (100, 384, 100),       # fewer elements than ranks: one each
])
def test_ranks_holding_a_slice(numel, ranks, holding):
    assert ranks_holding(numel, ranks) == holding
    part = math.ceil(numel / ranks)
    assert (holding - 1) * part < numel <= holding * part


def test_python_loop_copies_per_parameter_and_rank():
    """DeepSpeed 2021-03 (v0.3.13 _allgather_params): one Python copy_ per (parameter, rank
    holding a slice), one list all_gather with ProcessGroupNCCL's C++ copies out per rank."""
    c = cfg(gpus=1536)
    ops = zero3_persistent_regather(c, range(4), True)
    sizes = persistent_tensors(c, range(4), True)
    comms = [op for op in ops if isinstance(op, Comm)]
    assert len(comms) == 1 and comms[0].kind == "all_gather"
    copies = next(op for op in ops if op.name == "zero3_persist_copies")
    assert copies.kernels == sum(ranks_holding(n, 1536) for n in sizes) == 34 * 1536
    # issued from a bare Python loop, each after three views (two narrows and a view)
    assert copies.cpp_kernels == 0 and copies.py_kernels == copies.kernels
    assert copies.py_views == 3 * copies.kernels
    unflatten = next(op for op in ops if op.name == "zero3_persist_unflatten")
    assert unflatten.kernels == unflatten.cpp_kernels == 1536


def test_coalesced_gathers_one_small_collective_per_parameter():
    """From c0eeb69df (2021-10-31, v0.5.5) and in v0.6.2: one _all_gather_base per persistent
    parameter, then torch.cuda.synchronize(); no copies."""
    c = cfg(version="0.6.2")
    ops = zero3_persistent_regather(c, range(4), True)
    comms = [op for op in ops if isinstance(op, Comm)]
    assert len(comms) == 34
    assert not any(isinstance(op, Elementwise) and op.kernels for op in ops)
    assert isinstance(ops[-1], Elementwise) and ops[-1].host_sync


@pytest.mark.parametrize("kw", [{"zero": 2}, {"gpus": 1}])
def test_nothing_for_other_stages_or_one_rank(kw):
    assert zero3_persistent_regather(cfg(**kw), range(4), True) == []


def test_nothing_for_fsdp():
    assert zero3_persistent_regather(cfg(framework="pytorch", version="2.4"), range(4), True) == []


def test_a_cpp_issued_copy_costs_the_host_less_than_an_eager_op():
    """Copies a C++ loop issues each cost CPP_LAUNCH_S of host time (op from C++ plus its
    launch), not HOST_S_PER_KERNEL; with the GPU faster than either, the host's time shows."""
    n = 1000
    cpp = Elementwise("unflatten", bytes=0.0, kernels=n, cpp_kernels=n)
    eager = Elementwise("copies", bytes=0.0, kernels=n)
    lead = Elementwise("lead", bytes=0.0, kernels=1)  # launched ahead
    assert launches(cpp) == 0 and launches(eager) == n
    gpu = 1e-7 * n
    cpp_s = exposed_s([lead, cpp], [0.0, gpu], HOST_S_PER_KERNEL)
    eager_s = exposed_s([lead, eager], [0.0, gpu], HOST_S_PER_KERNEL)
    assert cpp_s == pytest.approx(n * CPP_LAUNCH_S)  # the op waits for all its launches
    assert eager_s == pytest.approx(n * HOST_S_PER_KERNEL)
    assert exposed_s([lead, cpp], [0.0, gpu], HOST_S_PER_KERNEL, blocking=True) == \
        pytest.approx(HOST_S_PER_KERNEL + n * CPP_LAUNCH_S)


def test_a_bare_python_loop_costs_its_copies_and_views_not_an_eager_modules_price():
    """A loop of n copy_ calls, each after three views, costs the host n x (PY_LAUNCH_S + 3
    PY_VIEW_S) (measured per-op figures, ~15.9 us an iteration), less than n eager module
    kernels at HOST_S_PER_KERNEL and more than the same copies from C++."""
    n = 1000
    loop = Elementwise("copies", bytes=0.0, kernels=n, py_kernels=n, py_views=3 * n)
    lead = Elementwise("lead", bytes=0.0, kernels=1)  # launched ahead
    assert launches(loop) == 0
    loop_s = exposed_s([lead, loop], [0.0, 1e-7 * n], HOST_S_PER_KERNEL)
    assert loop_s == pytest.approx(n * (PY_LAUNCH_S + 3 * PY_VIEW_S))
    assert n * CPP_LAUNCH_S < loop_s < n * HOST_S_PER_KERNEL


def test_a_list_all_gather_narrows_once_per_rank_after_the_wait():
    """DeepSpeed 2021's ``_allgather_param`` builds its list of per-rank views in a Python loop
    after ``torch.cuda.synchronize()``: one narrow a rank, host time the idle GPU waits for."""
    sync = Elementwise("sync", bytes=0.0, kernels=0, host_sync=True)
    ops = list_all_gather_ops("g", 1e6, 640, "dp_cp", before_gather=[sync])
    names = [op.name for op in ops]
    assert names.index("sync") < names.index("g_views") < names.index("g_all_gather")
    views = ops[names.index("g_views")]
    assert (views.py_views, views.kernels) == (640, 0)
    busy = [1e-3 if isinstance(op, Comm) else 0.0 for op in ops]
    lead = Elementwise("lead", bytes=0.0, kernels=1)
    waited = exposed_s([lead, *ops], [1e-3, *busy], HOST_S_PER_KERNEL)
    assert waited >= 640 * PY_VIEW_S
