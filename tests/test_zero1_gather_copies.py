"""nanotron's ZeRO-1 gathers the updated parameters through a list all_gather: a cat of each
rank's slices, ProcessGroupNCCL's copy out of its flat buffer per rank, one copy back per rank
and tensor (``workload.sharding.zero1_gather_copies``)."""

from __future__ import annotations

import pytest

from trainsim import run_config_from_dict, simulate
from trainsim.compute.host import CPP_LAUNCH_S, PY_LAUNCH_S, PY_VIEW_S, launches, loop_host_s
from trainsim.compute.roofline import LAUNCH_S
from trainsim.model.counts import total_params
from trainsim.workload import sharding
from trainsim.workload.sharding import zero1_gather_copies

LLAMA_LAYER_TENSORS = 6
"""A Llama layer's parameter tensors in nanotron: fused qkv_proj, o_proj, two RMSNorm weights,
fused gate_up_proj, down_proj (no biases)."""


def cfg(framework: str = "nanotron", version: str = "2024-12", zero: int = 1, dp: int = 8):
    return run_config_from_dict({
        "model": {"preset": "llama2-7b", "num_layers": 4},
        "parallel": {"tp": 1, "pp": 1, "zero_stage": zero},
        "training": {"global_batch_size": max(8, dp), "micro_batch_size": 1, "seq_length": 1024,
                     "dtype": "bf16", "framework": framework, "framework_version": version},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": dp, "gpus_per_node": 8}})


def test_copies_per_rank_and_tensor():
    """Four Llama layers with the embedding and the untied output layer on one stage over 8
    ranks: 8 x (4 x 6 + 3 tensors + a cat and a copy-out a rank) kernels; three 16-bit passes
    (read and write) over the stage's parameters, which are the model's (the final norm's
    among them since torcheager61: nanotron gathers every parameter of its ZeRO groups)."""
    c = cfg()
    op = zero1_gather_copies(c, range(4), True, True, 8)
    assert op is not None
    assert op.kernels == 8 * (4 * LLAMA_LAYER_TENSORS + 3 + 2)
    assert op.bytes == pytest.approx(12 * total_params(c.model))


def test_none_with_one_rank_or_another_framework():
    """One data-parallel rank gathers nothing (nanotron returns before the call); Megatron-core's
    distributed optimizer gathers into its flat buffer with no copies."""
    assert zero1_gather_copies(cfg(), range(4), True, True, 1) is None
    assert zero1_gather_copies(cfg("megatron-core", "0.12"), range(4), True, True, 8) is None


def _without_copies(monkeypatch):
    real = sharding.profile_supports
    monkeypatch.setattr(sharding, "profile_supports",
                        lambda c, f: False if f == "zero1_gather_copies" else real(c, f))


def test_zero1_step_pays_the_copies(monkeypatch):
    """Wired into the step after the gather: ZeRO-1 on DP 8 takes longer with the copies than
    without, by at least their per-kernel costs and at most that plus 12 bytes a parameter at
    1 TB/s (a floor under any H100's HBM rate)."""
    c = cfg()
    op = zero1_gather_copies(c, range(4), True, True, 8)
    with_copies = simulate(c).iteration_time_s
    _without_copies(monkeypatch)
    without = simulate(c).iteration_time_s
    floor = op.kernels * LAUNCH_S
    assert floor <= with_copies - without < floor + 12 * total_params(c.model) / 1e12


def test_the_copy_loop_is_priced_on_the_host():
    """The copies back are a bare Python loop (``update_output``) after a slice per tensor and
    rank (``_all_gather_params``): one copy_ and one view per (rank, tensor) and a cat per rank
    from Python, ProcessGroupNCCL's copy-out per rank from C++."""
    op = zero1_gather_copies(cfg(), range(4), True, True, 8)
    assert op is not None
    loop = 8 * (4 * LLAMA_LAYER_TENSORS + 3)  # the embedding, the final norm, the head
    assert (op.py_kernels, op.py_views, op.cpp_kernels) == (loop + 8, loop, 8)
    assert launches(op) == 0
    assert loop_host_s(op) == pytest.approx((loop + 8) * PY_LAUNCH_S + loop * PY_VIEW_S
                                            + 8 * CPP_LAUNCH_S)


def test_the_step_waits_for_the_loop_on_a_wide_group(monkeypatch):
    """On 64 ranks the loop's host time (~11 us an iteration) outlasts the copies' GPU time:
    the step grows by at least the loop's host seconds."""
    c = cfg(dp=64)
    op = zero1_gather_copies(c, range(4), True, True, 64)
    with_copies = simulate(c).iteration_time_s
    _without_copies(monkeypatch)
    assert with_copies - simulate(c).iteration_time_s >= loop_host_s(op) * (1 - 1e-9)


def test_zero0_has_no_gather_to_copy(monkeypatch):
    """ZeRO-0 (torch DDP) keeps whole parameters: no gather after the step, nothing moves."""
    c = cfg(zero=0)
    before = simulate(c).iteration_time_s
    _without_copies(monkeypatch)
    assert simulate(c).iteration_time_s == before
