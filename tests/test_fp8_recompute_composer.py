"""llm-foundry's fp8 under activation checkpointing (issue 17, framework mechanisms): Composer
enters Transformer Engine's fp8 context for the forward only, and torch's checkpoint re-runs
each block in the backward, where TE v0.10 reads fp8 as off: the recompute and the backward
GEMMs run in bf16."""

from __future__ import annotations

from trainsim.catalog import run_config_from_dict
from trainsim.chunks import chunks
from trainsim.pricing import Pricer
from trainsim.workload.recompute import recompute_drops_fp8
from trainsim.workload.shard import shard_of


def cfg(dtype="fp8", recompute="full", framework="llm-foundry"):
    training = {"global_batch_size": 16, "micro_batch_size": 2, "seq_length": 2048,
                "dtype": dtype, "framework": framework}
    if framework == "llm-foundry":
        training["framework_version"] = "2024-01"
    return run_config_from_dict({
        "model": {"preset": "mpt-1b"}, "parallel": {"zero_stage": 3, "recompute": recompute},
        "training": training, "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8,
                                          "gpus_per_node": 8}})


def layer_passes(c):
    chunk = chunks(c, Pricer(c), shard_of(c))[0]
    return chunk.fwd_parts[-2].duration_s, chunk.bwd_layers[0].duration_s  # the last layer


def test_only_a_full_recompute_of_an_fp8_llm_foundry_run_drops_fp8():
    assert recompute_drops_fp8(cfg())
    assert not recompute_drops_fp8(cfg(recompute="none"))
    assert not recompute_drops_fp8(cfg(dtype="bf16"))
    assert not recompute_drops_fp8(cfg(framework="megatron-core"))


def test_the_recomputed_backward_is_the_bf16_one_and_the_forward_stays_fp8():
    fwd8, bwd8 = layer_passes(cfg())
    fwd16, bwd16 = layer_passes(cfg(dtype="bf16"))
    assert bwd8 == bwd16  # recompute + backward built from the bf16 block
    assert fwd8 < fwd16  # the first forward runs TE's fp8 GEMMs
    # without checkpointing the backward differentiates the fp8 forward: faster than bf16
    assert layer_passes(cfg(recompute="none"))[1] < layer_passes(cfg("bf16", "none"))[1]


def test_no_backward_amax_reduction_when_every_layer_recomputes_in_bf16():
    """TE v0.10 ``_prepare_backward`` reduces amaxes only for a module that ran fp8: with
    every layer recomputed in bf16 the chunk's backward all-reduce is gone."""
    def tail(c):
        return chunks(c, Pricer(c), shard_of(c))[0].bwd_tail.duration_s
    assert tail(cfg()) < tail(cfg(recompute="none"))
