"""Context parallelism as torch's experimental ``context_parallel`` runs it (torchtitan)."""

from __future__ import annotations

import pytest

from trainsim import run_config_from_dict, simulate
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.ops import Attention, Comm, Elementwise
from trainsim.workload.shard import shard_of


def cfg(framework="torchtitan", version="2024-12", cp=4, comm="all_gather", compile=True):
    training = {"global_batch_size": 8, "seq_length": 32768, "dtype": "bf16", "compile": compile}
    if framework:
        training |= {"framework": framework, "framework_version": version}
    return run_config_from_dict({
        "model": "llama3-8b",
        "parallel": {"tp": 1, "pp": 1, "cp": cp, "cp_comm_type": comm},
        "training": training,
        "cluster": {"node": "dgx-h100", "num_gpus": 8}})


def ops_of(c):
    sh = shard_of(c)
    fwd = layer_forward(c, sh)
    return sh, fwd, backward_of(fwd, sh)


def attention(ops):
    return [op for op in ops if isinstance(op, Attention)]


def test_one_sdpa_per_ring_step_causal_only_on_the_diagonal():
    """Step 0 is causal on the local chunks; the cp-1 others are non-causal on half the pairs
    (load-balanced chunks): all local queries against half the keys on the pacing rank."""
    c = cfg()
    sh, fwd, bwd = ops_of(c)
    steps = attention(fwd)
    assert len(steps) == 4 and len(attention(bwd)) == 4
    assert steps[0].causal and (steps[0].q_len, steps[0].kv_len) == (sh.q_len, sh.q_len)
    assert all(not s.causal and (s.q_len, s.kv_len) == (sh.q_len, sh.q_len // 2)
               for s in steps[1:])
    assert all(s.backward for s in attention(bwd))


def test_the_ring_does_the_same_attention_work_as_one_call():
    """The split changes the kernels, not the causal FLOPs of the rank's queries."""
    def flops(c):
        _, fwd, bwd = ops_of(c)
        return sum(op.flops for op in attention(fwd + bwd))
    assert flops(cfg()) == pytest.approx(flops(cfg(framework=None)), rel=1e-3)


def test_kv_exchange_moves_every_query_head_while_the_model_repeats_kv():
    """torchtitan's repeat_kv (until ff0829c10, 2026-01) hands SDPA, and so the all-gather,
    K and V of all 32 query heads; after it, the 8 KV heads."""
    def gathered(version):
        c = cfg(version=version)
        sh, fwd, _ = ops_of(c)
        ag = [op for op in fwd if isinstance(op, Comm) and op.kind == "all_gather"]
        assert len(ag) == 1 and ag[0].group == "cp"
        return ag[0].bytes / (sh.cp * sh.tokens * 2 * 2 * c.model.kv_channels)
    assert gathered("2024-12") == 32
    assert gathered("2026-02") == 8


def test_backward_passes_fp32_dkv_around_the_ring_the_last_exposed():
    """dK/dV go to the next rank every step in fp32; eager, each hides under the next step's
    SDPA backward except the last, waited on after the loop."""
    sh, _, bwd = ops_of(cfg(compile=False))
    dkv = [op for op in bwd if isinstance(op, Comm) and op.kind == "send_recv"]
    assert len(dkv) == sh.cp
    assert all(op.bytes == sh.tokens * 2 * 32 * 128 * 4 for op in dkv)
    assert [op.overlap_with_previous for op in dkv] == [True] * (sh.cp - 1) + [False]
    assert any(isinstance(op, Comm) and op.kind == "all_gather" for op in bwd)
    assert not any(isinstance(op, Comm) and op.kind == "reduce_scatter" for op in bwd)


def test_compiled_ring_waits_each_collective_where_it_is_issued():
    """Traced functional collectives are waited at once (``_maybe_wrap_tensor``) and Inductor
    does not sink the waits by default: compiled, no ring collective hides under an SDPA, so
    the same ring costs more exposed CP time than eager, whose waits come at first use."""
    def cp_comm(compile):
        c = cfg(compile=compile)
        _, fwd, bwd = ops_of(c)
        ring = [op for op in fwd + bwd if isinstance(op, Comm) and op.group == "cp"]
        assert ring
        hidden = [op.overlap_with_previous for op in ring]
        return hidden, simulate(c).breakdown
    hidden, compiled = cp_comm(True)
    assert not any(hidden)
    hidden, eager = cp_comm(False)
    assert sum(hidden) == len(hidden) - 1
    assert compiled["exposed_comm_s"] > 2 * eager["exposed_comm_s"]


def test_eager_merges_move_more_bytes_than_compiled():
    """Uncompiled, the fp32 log-sum-exp merge runs kernel by kernel."""
    def merge_bytes(compile):
        _, fwd, bwd = ops_of(cfg(compile=compile))
        return sum(op.bytes for op in fwd + bwd
                   if isinstance(op, Elementwise) and op.name.startswith("attn_core.ring"))
    assert merge_bytes(False) > 2 * merge_bytes(True) > 0


def test_other_frameworks_keep_one_attention_call():
    """Without the profile's cp_sdpa_ring (Megatron's all-gather CP, Llama 3) attention stays
    one call over the gathered sequence, its gradient reduce-scattered."""
    sh, fwd, bwd = ops_of(cfg(framework=None))
    (core,) = attention(fwd)
    assert core.kv_len == sh.seq
    assert any(isinstance(op, Comm) and op.kind == "reduce_scatter" and op.group == "cp"
               for op in bwd)


def test_more_cp_ranks_cost_more_at_equal_tokens_per_rank():
    """At 32k tokens per rank, doubling CP doubles each rank's attention and its exchanges."""
    def time(cp):
        c = run_config_from_dict({
            "model": "llama3-8b", "parallel": {"tp": 1, "pp": 1, "cp": cp,
                                               "cp_comm_type": "all_gather"},
            "training": {"global_batch_size": 8 // cp, "seq_length": 32768 * cp,
                         "dtype": "bf16", "framework": "torchtitan",
                         "framework_version": "2024-12"},
            "cluster": {"node": "dgx-h100", "num_gpus": 8}})
        return simulate(c).iteration_time_s
    assert time(2) < time(4) < time(8)


def test_all_to_all_rotater_moves_each_step_kv_under_the_step_before():
    """rotate_method 'alltoall': the KV of step i+1 is sent before step i's SDPA and hides
    under it; cp-1 sends forward, and in the backward they ride with the dK/dV sends."""
    sh, fwd, bwd = ops_of(cfg(comm="p2p", compile=False))
    sends = [i for i, op in enumerate(fwd) if isinstance(op, Comm) and op.group == "cp"]
    assert len(sends) == sh.cp - 1
    assert all(isinstance(fwd[i - 1], Attention) and fwd[i].overlap_with_previous for i in sends)
    assert not any(isinstance(op, Comm) and op.kind == "all_gather" for op in fwd + bwd)
    kv = sh.tokens * 2 * 32 * 128
    assert sum(op.bytes for op in bwd if isinstance(op, Comm)) == (sh.cp - 1) * kv * 2 \
        + sh.cp * kv * 4


def test_repeated_kv_leaves_each_ring_step_without_group_sums():
    """torchtitan's repeat_kv hands every ring step's SDPA 32 K/V heads (Llama 3 8B: 8 KV
    heads), so no backward call sums KV-head groups (FA2's dk_expanded); the repeat's own
    backward sums the layer's dK and dV once: compiled, in the casts' kernel, which writes the
    8 KV heads (fp32 32-head read, 16-bit 8-head write) instead of 32."""
    from trainsim.compute.attention import gqa_group_sum_bytes
    sh, fwd, bwd = ops_of(cfg())
    assert attention(fwd)[0].kv_heads == 8  # the layer's op: the backward reads its KV heads
    assert all(op.kv_heads == 32 for op in attention(fwd)[1:] + attention(bwd))
    assert sum(gqa_group_sum_bytes(op) for op in attention(bwd)) == 0
    (casts,) = [op for op in bwd if op.name == "attn_core.ring_grad_casts"]
    out = sh.tokens * 32 * 128  # the dQ / output elements
    assert casts.bytes == out * 6 + sh.tokens * 2 * 32 * 128 * 4 + sh.tokens * 2 * 8 * 128 * 2
    # without the repeat (torchtitan from 2026-01, enable_gqa): SDPA's own GQA, no repeat op
    _, fwd, bwd = ops_of(cfg(version="2026-02"))
    assert all(op.kv_heads == 8 for op in attention(fwd + bwd))
    assert not any(op.name.startswith("attn_core.ring_repeat_kv") for op in fwd + bwd)


def test_repeat_kv_copies_by_hand():
    """Forward, per token and head of 128 16-bit elements (256 B): compiled, the RoPE kernel
    writes K at 32 heads instead of 8 and V is copied from 8 heads to 32 (24 + 40 = 64 head
    rows, i.e. 2 x 32); eager, repeat_kv reads 8 and writes 32 heads of K and of V (80) and the
    ring's key/value .contiguous() read and write 32 heads of each (128): 208. Eager, the
    backward repeats the contiguous copies (128) and sums the groups after the casts (read 32,
    write 8 heads of dK and dV: 80)."""
    row = 128 * 2
    sh, fwd, _ = ops_of(cfg())
    (rep,) = [op for op in fwd if op.name == "attn_core.ring_repeat_kv"]
    assert rep.bytes == sh.tokens * row * 64 and rep.kernels == 1
    assert fwd.index(rep) < fwd.index(attention(fwd)[0])
    sh, fwd, bwd = ops_of(cfg(compile=False))
    (rep,) = [op for op in fwd if op.name == "attn_core.ring_repeat_kv"]
    assert rep.bytes == sh.tokens * row * 208
    byname = {op.name: op for op in bwd}
    assert byname["attn_core.ring_kv_contiguous.bwd"].bytes == sh.tokens * row * 128
    assert byname["attn_core.ring_repeat_kv.bwd"].bytes == sh.tokens * row * 80
    assert byname["attn_core.ring_grad_casts"].bytes == \
        sh.tokens * 32 * 128 * 6 + sh.tokens * 2 * 32 * 128 * 6


def test_per_op_sac_saves_the_ring_with_the_sdpa_output():
    """torchtitan's per-op policy sees one _scaled_dot_product_flash_attention (the ring runs
    inside its dispatch) and saves its output: under selective 'op' checkpointing nothing of
    the ring re-runs but the model's repeat_kv copy before it."""
    from trainsim.workload.recompute import per_op_sac_recompute
    _, fwd, _ = ops_of(cfg())
    again = [op.name for op in per_op_sac_recompute(fwd)]
    assert "recompute.attn_core.ring_repeat_kv" in again
    assert not any(n.startswith("recompute.attn_core.ring") and not n.endswith("repeat_kv")
                   for n in again)


def test_repeat_kv_copies_at_cp_1_too():
    """torchtitan's repeat_kv runs before SDPA at every CP size: at cp 1 (no ring) eager reads 8
    and writes 32 heads of K and of V (80 head rows per token, no .contiguous() copies, two
    kernels), compiled writes 2 x 32 (64, one kernel); nothing without the repeat (2026-02),
    and the op adds no backward of its own (the group sum is the kernel's)."""
    row = 128 * 2
    for compile_, heads, kernels in ((False, 80, 2), (True, 64, 1)):
        sh, fwd, bwd = ops_of(cfg(cp=1, compile=compile_))
        (rep,) = [op for op in fwd if op.name == "attn_core.repeat_kv"]
        assert rep.bytes == sh.tokens * row * heads and rep.kernels == kernels
        assert fwd.index(rep) < fwd.index(attention(fwd)[0])
        assert all(op.bytes == 0 and op.kernels == 0 for op in bwd if "repeat_kv" in op.name)
    _, fwd, _ = ops_of(cfg(cp=1, version="2026-02"))
    assert not any("repeat_kv" in op.name for op in fwd)
