"""End-to-end behaviour of simulate(): invariants a user relies on."""

from __future__ import annotations

import itertools
import json

import pytest

import trainsim
from trainsim import run_config_from_dict, simulate
from trainsim.compute import host


def cfg(**over):
    base = {
        "model": {"name": "tiny", "hidden_size": 1024, "num_layers": 8, "num_attention_heads": 16,
                  "vocab_size": 32000, "activation": "swiglu", "normalization": "rmsnorm",
                  "position_embedding": "rope", "tied_embeddings": False, "add_bias_linear": False},
        "parallel": {"tp": 2, "pp": 2, "sequence_parallel": True},
        "training": {"global_batch_size": 32, "micro_batch_size": 1, "seq_length": 2048},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 16, "gpus_per_node": 8,
                    "nic_gbps_per_gpu": 400},
    }
    for key, value in over.items():
        section, field = key.split("__")
        base[section][field] = value
    return run_config_from_dict(base)


def test_breakdown_sums_to_iteration_time():
    """compute + exposed comm + bubble + optimizer + other equals the iteration time."""
    r = simulate(cfg())
    parts = ["compute_s", "exposed_comm_s", "pipeline_bubble_s", "optimizer_s", "other_s"]
    assert sum(r.breakdown[k] for k in parts) == pytest.approx(r.iteration_time_s, rel=1e-9)
    assert r.breakdown["exposed_comm_s"] == pytest.approx(sum(r.exposed_comm.values()))


def test_json_has_the_stable_keys():
    """The JSON output carries every key DESIGN.md promises."""
    d = simulate(cfg()).to_dict()
    for key in ("iteration_time_s", "tokens_per_s", "tokens_per_s_per_gpu", "model_tflops_per_gpu",
                "mfu", "hfu", "peak_memory_bytes", "breakdown", "config"):
        assert key in d
    assert d["config"]["parallel"]["tensor_model_parallel_size"] == 2


def test_same_input_gives_byte_identical_json():
    """Two runs of the same config print the same bytes."""
    a = json.dumps(simulate(cfg()).to_dict(), sort_keys=True)
    b = json.dumps(simulate(cfg()).to_dict(), sort_keys=True)
    assert a == b


def test_pipeline_bubble_shrinks_with_more_microbatches():
    """More micro-batches per pipeline amortise the fill and drain (1F1B)."""
    few = simulate(cfg(training__global_batch_size=8))
    many = simulate(cfg(training__global_batch_size=64))
    assert few.breakdown["pipeline_bubble_s"] / few.iteration_time_s > \
        many.breakdown["pipeline_bubble_s"] / many.iteration_time_s


def test_bubble_matches_1f1b_theory_for_uniform_stages(monkeypatch):
    """With equal stages and free sends the bubble is (p-1)/m of the ideal time (Narayanan §2.2).
    (A free host too: this small model's passes would otherwise wait for kernel launches.)"""
    monkeypatch.setattr(host, "HOST_S_PER_KERNEL", 0.0)
    c = cfg(parallel__tp=1, parallel__pp=4, parallel__sequence_parallel=False,
            cluster__num_gpus=4, cluster__gpus_per_node=8, training__global_batch_size=16,
            parallel__overlap_p2p_comm=True, model__num_layers=32, model__vocab_size=1024)
    r = simulate(c)
    m, p = c.num_microbatches, 4
    bubble_fraction = r.breakdown["pipeline_bubble_s"] / r.breakdown["compute_s"]
    # the first and last stages also hold the embedding and the head: a small imbalance
    assert bubble_fraction == pytest.approx((p - 1) / m, rel=0.15)


def test_interleaving_reduces_the_bubble():
    """Interleaved 1F1B (vpp=2) has a smaller bubble than plain 1F1B at the same batch."""
    plain = simulate(cfg(parallel__pp=4, cluster__num_gpus=8, training__global_batch_size=8))
    inter = simulate(cfg(parallel__pp=4, parallel__vpp=2, cluster__num_gpus=8,
                         training__global_batch_size=8))
    assert inter.breakdown["pipeline_bubble_s"] < plain.breakdown["pipeline_bubble_s"]


def test_faster_nvlink_is_never_slower():
    """Doubling NVLink bandwidth cannot make an iteration slower."""
    slow = simulate(cfg(cluster__nvlink_gbps=450))
    fast = simulate(cfg(cluster__nvlink_gbps=900))
    assert fast.iteration_time_s <= slow.iteration_time_s
    assert fast.exposed_comm["tp"] < slow.exposed_comm["tp"]


def test_overlapping_grad_reduce_is_never_slower():
    """Bucketed gradient reduction overlapped with backward hides DP communication."""
    base = simulate(cfg(parallel__pp=1, cluster__num_gpus=64, training__global_batch_size=64))
    over = simulate(cfg(parallel__pp=1, cluster__num_gpus=64, training__global_batch_size=64,
                        parallel__overlap_grad_reduce=True))
    assert over.iteration_time_s <= base.iteration_time_s
    assert over.exposed_comm["dp"] < base.exposed_comm["dp"]


def test_interleaved_grad_reduce_runs_in_the_order_buckets_become_ready():
    """With virtual stages, the last chunk finishes its backward first; its gradients are
    reduced while the other chunks' last backward passes still run (DDP reduces buckets as
    their hooks fire), so only the first chunk's reduction is left after the backward."""
    c = cfg(parallel__vpp=2, parallel__distributed_optimizer=True, cluster__num_gpus=64,
            training__global_batch_size=64, parallel__overlap_grad_reduce=True)
    tl = simulate(c, keep_timeline=True).timeline
    for stage in range(c.parallel.pp):
        reduces = [i for i, t in enumerate(tl.tasks)
                   if t.stream == (stage, "dp") and t.label.startswith("grad ")]
        backward_end = max(tl.end_s[i] for i, t in enumerate(tl.tasks)
                           if t.stream == (stage, "compute") and t.label.startswith("B"))
        chunks = [tl.tasks[i].label.split()[3] for i in reduces]
        assert chunks[0] == "c1" and chunks[-1] == "c0", chunks
        assert tl.start_s[reduces[0]] < backward_end
        assert all(tl.start_s[i] <= tl.start_s[j] for i, j in itertools.pairwise(reduces))


def test_full_recompute_costs_about_one_extra_forward():
    """Full recomputation adds roughly a third to compute (4 passes instead of 3)."""
    none = simulate(cfg(parallel__recompute="none"))
    full = simulate(cfg(parallel__recompute="full"))
    ratio = full.breakdown["compute_s"] / none.breakdown["compute_s"]
    assert 1.2 < ratio < 1.4
    assert full.hfu > full.mfu
    assert full.peak_memory_bytes < none.peak_memory_bytes


def test_context_parallel_runs_and_splits_activations():
    """A CP=2 run simulates and holds fewer activation bytes than CP=1 on the same GPUs."""
    one = simulate(cfg(parallel__pp=1, cluster__num_gpus=8, training__seq_length=8192,
                       training__global_batch_size=8))
    two = simulate(cfg(parallel__pp=1, parallel__cp=2, cluster__num_gpus=8,
                       training__seq_length=8192, training__global_batch_size=8))
    assert two.memory[0].activations < one.memory[0].activations
    assert two.iteration_time_s > 0


def test_config_that_does_not_fit_is_still_simulated_and_flagged():
    """An over-memory config still returns a result, marked as not fitting."""
    big = run_config_from_dict({"model": "llama3-70b", "parallel": {"tp": 1},
                                "training": {"global_batch_size": 8, "seq_length": 8192},
                                "cluster": {"node": "dgx-h100", "num_gpus": 8}})
    r = simulate(big)
    assert not r.fits_in_memory
    assert r.iteration_time_s > 0


def test_twelve_thousand_gpus_simulate_quickly():
    """A 175B GPT iteration on 12,288 A100s is simulated in well under a second."""
    import time

    c = run_config_from_dict({"model": "gpt-175b",
                              "parallel": {"tp": 8, "pp": 8, "vpp": 6, "sequence_parallel": True,
                                           "recompute": "selective"},
                              "training": {"global_batch_size": 6144, "seq_length": 2048},
                              "cluster": {"node": "dgx-a100", "num_gpus": 12288}})
    t0 = time.perf_counter()
    r = simulate(c)
    assert time.perf_counter() - t0 < 1.0
    assert 0.2 < r.mfu < 0.7


def test_public_api_is_importable():
    """The notebook API exposes simulate, the configs and the errors."""
    assert callable(trainsim.simulate) and issubclass(trainsim.ConfigError, trainsim.TrainsimError)


def test_parallel_block_halves_tp_communication():
    """A parallel attention+MLP block (MegaScale PTB) has one TP entry and exit per layer, not
    two, so half the TP collectives and about half the exposed TP time."""
    from trainsim.workload.layers import backward_of, layer_forward
    from trainsim.workload.ops import Comm
    from trainsim.workload.shard import shard_of

    def tp_comms(c) -> int:
        fwd = layer_forward(c, shard_of(c))
        return sum(isinstance(op, Comm) and op.group == "tp" for op in fwd + backward_of(fwd, shard_of(c)))

    assert tp_comms(cfg(model__parallel_block=True)) * 2 == tp_comms(cfg(model__parallel_block=False))
    serial = simulate(cfg(model__parallel_block=False))
    parallel = simulate(cfg(model__parallel_block=True))
    assert parallel.exposed_comm["tp"] == pytest.approx(serial.exposed_comm["tp"] / 2, rel=0.15)
    assert parallel.iteration_time_s < serial.iteration_time_s
    assert parallel.memory[0].activations < serial.memory[0].activations


def test_lamb_costs_more_optimizer_time_than_adam_and_the_same_memory():
    """LAMB keeps Adam's two moments (same memory) and moves 70 bytes per parameter in its step
    against Adam's 50 (two more passes for the per-tensor norms and the trust-ratio update); a
    sharded LAMB also all-reduces its per-tensor norms over the data-parallel group."""
    # the analytic model alone: a kernel database prices Adam's step from its measured kernel
    over = {"parallel__pp": 1, "parallel__distributed_optimizer": True, "cluster__num_gpus": 64,
            "training__global_batch_size": 64, "cluster__compute_db": None}
    adam = simulate(cfg(**over), keep_timeline=True)
    lamb = simulate(cfg(training__optimizer="lamb", **over), keep_timeline=True)
    assert lamb.memory[0].optimizer == adam.memory[0].optimizer
    # memory-bound step: time follows bytes (the bandwidth reached grows a little with size)
    assert lamb.breakdown["optimizer_s"] / adam.breakdown["optimizer_s"] == pytest.approx(70 / 50,
                                                                                      rel=0.03)
    norms = [t for t in lamb.timeline.tasks if t.label.startswith("LAMB")]
    assert len(norms) == 2 and all(t.stream[1] == "dp" for t in norms)
    assert not any(t.label.startswith("LAMB") for t in adam.timeline.tasks)
    sgd = simulate(cfg(training__optimizer="sgd", **over))
    assert sgd.memory[0].optimizer == pytest.approx(adam.memory[0].optimizer * 8 / 12)
