"""How the data-parallel gradient reduction is cut into buckets (ParallelConfig.dp_buckets)."""

from __future__ import annotations

import pytest

from tests.helpers import mirror_source
from trainsim import run_config_from_dict, simulate
from trainsim.catalog.frameworks import framework_profile
from trainsim.errors import ConfigError


def cfg(training=(), **parallel):
    return run_config_from_dict({
        "model": {"name": "tiny", "hidden_size": 1024, "num_layers": 8, "num_attention_heads": 16,
                  "vocab_size": 32000, "activation": "swiglu", "normalization": "rmsnorm",
                  "position_embedding": "rope", "tied_embeddings": False,
                  "add_bias_linear": False},
        "parallel": {"tp": 2, "pp": 2, "vpp": 2, "sequence_parallel": True,
                     "distributed_optimizer": True, "overlap_grad_reduce": True,
                     "overlap_param_gather": True, **parallel},
        "training": {"global_batch_size": 256, "micro_batch_size": 1, "seq_length": 2048,
                     **dict(training)},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 256, "gpus_per_node": 8,
                    "nic_gbit_s_per_gpu": 400},
    })


def _tasks(c, prefix):
    tl = simulate(c, keep_timeline=True).timeline
    return [(t.stream, t.label, t.duration_s) for t in tl.tasks if t.label.startswith(prefix)]


def test_fixed_buckets_pay_one_latency_per_bucket():
    """Apex's fixed buckets: a chunk's gradients go out as one collective per bucket, each with
    its own ring latency, so smaller buckets make the same bytes take longer."""
    per_chunk = {}
    for mode, size in (("every_chunk", 10_000_000), ("fixed", 10_000_000), ("fixed", 2_000_000)):
        grads = _tasks(cfg(dp_buckets=mode, ddp_bucket_size=size), "grad reduce_scatter")
        gathers = _tasks(cfg(dp_buckets=mode, ddp_bucket_size=size), "param all-gather")
        per_chunk[(mode, size)] = (sum(d for *_, d in grads), sum(d for *_, d in gathers))
    one = per_chunk[("every_chunk", 10_000_000)]
    big = per_chunk[("fixed", 10_000_000)]
    small = per_chunk[("fixed", 2_000_000)]
    assert big[0] > one[0] and big[1] > one[1]
    assert small[0] > big[0] and small[1] > big[1]


def test_megatron_core_buckets_only_the_first_chunk_of_the_first_stage():
    """Megatron-core DDP splits only pipeline rank 0's first model chunk into buckets; every
    other chunk is one bucket (disable_bucketing for chunks after the first, bucket_size None
    on pipeline ranks > 0)."""
    every = _tasks(cfg(dp_buckets="every_chunk", ddp_bucket_size=2_000_000), "B last")
    first = _tasks(cfg(dp_buckets="first_chunk", ddp_bucket_size=2_000_000), "B last")
    split = {(stream[0], label.split()[2]) for stream, label, _ in every if "part1" in label}
    assert split == {(0, "c0"), (0, "c1"), (1, "c0"), (1, "c1")}
    split = {(stream[0], label.split()[2]) for stream, label, _ in first if "part1" in label}
    assert split == {(0, "c0")}


def test_profiles_select_the_bucketing_of_their_optimizer():
    """MLPerf's NeMo runs Apex DistributedFusedAdam (100 MiB buckets in 3.1, 200 MiB from 4.0,
    of bf16 gradients); Megatron-core buckets the first chunk from its first release (0.4), of
    max(40M, 1M x dp) from 0.7."""
    v31, v40 = framework_profile("mlperf-nemo", "3.1"), framework_profile("mlperf-nemo", "4.0")
    assert v31.defaults["dp_buckets"] == v40.defaults["dp_buckets"] == "fixed"
    assert v31.defaults["ddp_bucket_size"] == 100 * 2**20 // 2
    assert v40.defaults["ddp_bucket_size"] == 200 * 2**20 // 2
    core = framework_profile("megatron-core", "0.8")
    assert core.defaults["dp_buckets"] == "first_chunk"
    assert core.defaults["ddp_bucket_size"] is None
    for version in ("0.4", "0.5", "0.6"):
        first = framework_profile("megatron-core", version)
        assert first.defaults["dp_buckets"] == "first_chunk"
        assert first.defaults["ddp_bucket_size"] == 40_000_000


def test_megatron_lm_buckets_the_first_chunk_from_its_ddp_rewrite():
    """Megatron-LM's DDP turns bucketing off on pipeline ranks > 0 and for model chunks after the
    first from 3f554d97f1 (2023-10-24): its runs bucket as Megatron-core 0.7 does, so the
    parameter gathers of --overlap-param-gather (2023-11-17) go bucket by bucket; before that
    merge every chunk was bucketed."""
    assert framework_profile("megatron-lm", "2023-10").defaults.get("dp_buckets") is None
    for version in ("2023-10-24", "2023-12", "2024-06"):
        assert framework_profile("megatron-lm", version).defaults["dp_buckets"] == "first_chunk"


def test_the_megatron_lm_rule_is_the_one_in_its_source():
    """Where the Megatron-LM mirror is at hand: get_model's disable_bucketing for chunks after
    the first at 3f554d97f1 and at the 2023-12 release the nemotron4 rows name (e9b61f78c7), whose
    distributed optimizer gathers one bucket ahead from its forward pre-hooks (skipped without
    the mirror)."""
    import re

    for rev in ("3f554d97f1", "e9b61f78c7", "core_v0.4.0"):  # core_v0.4.0: Megatron-core 0.4
        training = mirror_source("NVIDIA+Megatron-LM", rev, "megatron/training.py")
        assert re.search(r"disable_bucketing=\(model_chunk_idx > 0\)", training)
        ddp = mirror_source("NVIDIA+Megatron-LM", rev,
                            "megatron/core/distributed/distributed_data_parallel.py")
        assert re.search(r"if disable_bucketing:\s*\n\s*bucket_size = None", ddp)
    ddp = mirror_source("NVIDIA+Megatron-LM", "3f554d97f1",
                        "megatron/core/distributed/distributed_data_parallel.py")
    assert re.search(r"get_pipeline_model_parallel_rank\(\) > 0:\s*\n\s*bucket_size = None", ddp)
    opt = mirror_source("NVIDIA+Megatron-LM", "e9b61f78c7", "megatron/optimizer/distrib_optimizer.py")
    assert "self._dispatch_gather_model_params(next_all_gather_handle_index)" in opt


def test_unknown_bucketing_is_refused():
    with pytest.raises(ConfigError, match="dp_buckets"):
        cfg(dp_buckets="per_layer")


def test_megatron_core_gathers_the_first_chunk_one_bucket_ahead():
    """overlap_param_gather on the bucketed chunk: the first forward waits for the first
    bucket, the others are gathered one ahead under the layers (distrib_optimizer.py
    _finish_param_sync_helper), not the whole chunk before the first layer runs."""
    # 13 M elements: five buckets (at 2 M, eighteen: their 18 ring latencies over 128 ranks
    # expose more than one bucket's reduction does, since buckets close where Megatron's do)
    c = cfg(pp=1, vpp=1, dp_buckets="first_chunk", ddp_bucket_size=13_000_000)
    whole = cfg(pp=1, vpp=1, dp_buckets="first_chunk", ddp_bucket_size=10**12)
    tl = simulate(c, keep_timeline=True).timeline
    first = next(t for t in tl.tasks if t.label == "F mb0 c0")
    wait = sum(d for _, d, name in first.detail.segments if name == "param all-gather wait")
    gathers = [t for t in tl.tasks if t.label.startswith("param all-gather")]
    assert len(gathers) > 1 and 0 < wait < sum(t.duration_s for t in gathers)
    assert simulate(c).exposed_comm["dp"] < simulate(whole).exposed_comm["dp"]



def _core(version, **parallel):
    return cfg({"framework": "megatron-core", "framework_version": version},
               dp_buckets="first_chunk", ddp_bucket_size=13_000_000, **parallel)


@pytest.mark.parametrize("version, vpp, bucketed", [("0.8", 2, True), ("0.12", 1, True),
                                                    ("0.12", 2, False)])
def test_aligned_gathers_wait_for_the_whole_first_chunk(version, vpp, bucketed):
    """Megatron-core >= 0.9 with the interleaved schedule aligns the parameter gathers: the
    schedule starts chunk 0's (every bucket group at once, the first layers' last) before the
    first forward, which waits for all of it; without interleaving (align off) or before 0.9
    (--delay-param-gather off) the buckets go one ahead of the forward pre-hooks."""
    c = _core(version, pp=2, vpp=vpp)
    assert c.parallel.dp_buckets == "first_chunk" and c.parallel.vpp == vpp
    tl = simulate(c, keep_timeline=True).timeline
    gathers = [i for i, t in enumerate(tl.tasks) if t.label.startswith("param all-gather")
               and t.stream[0] == 0 and " chunk 0" in t.label]
    first = next(i for i, t in enumerate(tl.tasks) if t.label == "F mb0 c0")
    wait = sum(d for _, d, name in tl.tasks[first].detail.segments
               if name == "param all-gather wait")
    if bucketed:
        assert len(gathers) > 1 and wait > 0
    else:
        assert len(gathers) == 1 and wait == 0
        assert tl.start_s[first] >= tl.end_s[gathers[0]] > 0

#: Megatron-Bridge tag behind each container release of its profile (the profile's sources)
BRIDGE_TAGS = {"25.09": "v0.1.0rc3", "25.11": "v0.2.0", "26.04": "v0.4.0", "26.06": "v0.5.0",
               "26.08": "v0.6.0"}
#: CommOverlapConfig._get_optimizer_overlap_cfgs' bucket where data_parallel_size > 1
BRIDGE_BUCKET = 128 * 1024 * 1024


def _bridge_run(version: str):
    raw = {"model": {"name": "tiny", "hidden_size": 1024, "num_layers": 8,
                     "num_attention_heads": 16, "vocab_size": 32000, "activation": "swiglu",
                     "normalization": "rmsnorm", "position_embedding": "rope",
                     "tied_embeddings": False, "add_bias_linear": False},
           "parallel": {"tp": 2, "pp": 2, "vpp": 2, "sequence_parallel": True},
           "training": {"global_batch_size": 256, "micro_batch_size": 1, "seq_length": 2048,
                        "framework": "megatron-bridge", "framework_version": version},
           "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 256, "gpus_per_node": 8}}
    return run_config_from_dict(raw)


@pytest.mark.parametrize("version", sorted(BRIDGE_TAGS))
def test_megatron_bridge_buckets_like_megatron_core(version):
    """Megatron-Bridge wraps every model chunk in Megatron-core's DDP with disable_bucketing
    for chunks after the first (model_provider.py / unimodal.py / the pinned Megatron-LM's
    dist_utils.py), and its perf recipes' CommOverlapConfig sets 128 Mi-parameter buckets:
    a Bridge run splits only pipeline rank 0's first chunk, in buckets of that size."""
    from trainsim.workload.sharding import dp_bucket_count

    c = _bridge_run(version)
    assert c.parallel.dp_buckets == "first_chunk"
    assert c.parallel.ddp_bucket_size == BRIDGE_BUCKET
    big = 10 * BRIDGE_BUCKET
    assert dp_bucket_count(c, 4, big, 0, 0) == 4
    assert dp_bucket_count(c, 4, big, 0, 1) == dp_bucket_count(c, 4, big, 1, 0) == 1


@pytest.mark.parametrize("tag,path", [
    ("v0.1.0rc3", "src/megatron/bridge/models/model_provider.py"),
    ("v0.2.0", "src/megatron/bridge/models/model_provider.py"),
    ("v0.4.0", "src/megatron/bridge/models/common/unimodal.py"),
])
def test_the_bridge_rule_is_the_one_in_its_source(tag, path):
    """Where the Megatron-Bridge mirror is at hand, the facts the profile cites are read from
    it: the DDP wrap's disable_bucketing for chunks after the first, and CommOverlapConfig's
    bucket where data_parallel_size > 1 (skipped without the mirror)."""
    import re

    wrap = mirror_source("NVIDIA-NeMo+Megatron-Bridge", tag, path)
    overlap = mirror_source("NVIDIA-NeMo+Megatron-Bridge", tag,
                            "src/megatron/bridge/training/comm_overlap.py")
    assert re.search(r"disable_bucketing=\(model_chunk_idx > 0\)", wrap)
    size = re.search(r"data_parallel_size > 1:\s*\n\s*comm_overlap_cfg\.bucket_size = "
                     r"(\d+) \* (\d+) \* (\d+)", overlap)
    assert size and int(size[1]) * int(size[2]) * int(size[3]) == BRIDGE_BUCKET
    assert framework_profile("megatron-bridge", {v: k for k, v in BRIDGE_TAGS.items()}[tag]
                             ).defaults["dp_buckets"] == "first_chunk"


# ------------------------------------------- Megatron's greedy bucket pass (ddp_buckets)
# Hand calculation for ``cfg`` with ffn 4096: a rank's (tp 2) layer tensors in reverse
# registration order: fc2 2,097,152, fc1 4,194,304, two RMSNorms of 512, output projection
# 524,288, QKV 1,572,864 (a layer: 8,389,632); the word embedding and the output layer
# 16,384,000 each; the final norm 512. Chunks of 2 layers (pp 2, vpp 2).

def _greedy_cfg(**parallel):
    c = cfg(ddp_bucket_size=10_000_000, **parallel)
    import dataclasses
    return dataclasses.replace(c, model=dataclasses.replace(c.model, ffn_hidden_size=4096))


def test_buckets_close_at_the_tensor_that_fills_them():
    """Megatron's ``_ParamAndGradBuffer`` walks the chunk's parameters in reverse and closes a
    bucket after the tensor that brings it to bucket_size or more: the middle chunk closes
    after layer 2's fc2 (8,389,632 + 2,097,152 = 10,486,784) and keeps 6,292,480 for a second
    bucket; the first chunk's embedding joins that second bucket; the last chunk's output
    layer fills one alone, then the final norm and 10,487,296 elements, then the rest."""
    from trainsim.workload.ddp_buckets import ddp_buckets
    c = _greedy_cfg()
    assert [r for r in c.virtual_stage_layers()] == [range(2), range(2, 4), range(4, 6),
                                                     range(6, 8)]
    assert ddp_buckets(c, range(2, 4), False, False) == 2
    assert ddp_buckets(c, range(2), True, False) == 2
    assert ddp_buckets(c, range(6, 8), False, True) == 3
    import dataclasses
    one = dataclasses.replace(c, parallel=dataclasses.replace(c.parallel,
                                                              ddp_bucket_size=10**9))
    assert ddp_buckets(one, range(6, 8), False, True) == 1


def test_a_shared_embedding_gets_its_own_bucket_under_the_distributed_optimizer():
    """A tied embedding split over pipeline stages is ``shared_embedding``: under the
    distributed optimizer it is bucketed alone (``_does_param_require_new_bucket``), closing
    the 6,292,480 elements before it: three buckets on the first chunk, two without it."""
    import dataclasses

    from trainsim.workload.ddp_buckets import ddp_buckets
    c = _greedy_cfg()
    tied = dataclasses.replace(c, model=dataclasses.replace(c.model, tied_embeddings=True))
    assert ddp_buckets(tied, range(2), True, False) == 3
    plain = dataclasses.replace(tied, parallel=dataclasses.replace(
        tied.parallel, distributed_optimizer=False))
    assert ddp_buckets(plain, range(2), True, False) == 2


# ------------------------------------------- where each bucket becomes ready (bucket_ready)

PHI3 = {"parallel": {"tp": 8, "cp": 2, "sequence_parallel": False},
        "training": {"global_batch_size": 4, "micro_batch_size": 1, "seq_length": 2048,
                     "framework": "deepspeed", "dtype": "fp8"},
        "cluster": {"gpu": "b200-sxm-180gb", "num_gpus": 16}}


def _phi3(layers: int):
    return run_config_from_dict({**PHI3, "model": {"preset": "phi-3-mini",
                                                   "num_layers": layers}})


def test_one_more_layer_never_makes_the_iteration_faster_at_a_bucket_boundary():
    """33 -> 34 layers of Phi-3-mini on TP8 x CP2 take a rank's gradients from 491 M to
    506 M elements, past DeepSpeed's 500 M reduce bucket. Megatron's buckets close after the
    tensor that fills them: the only one closes with the embedding, at the end of the backward.
    The equal split of ceil(506 / 500) = 2 buckets put half the reduction under the second
    half of the backward: 34 layers ran 2.5 % faster than 33 (0.2203 against 0.2260 s)."""
    times = [simulate(_phi3(n)).iteration_time_s for n in (32, 33, 34, 35)]
    assert times == sorted(times), times


def test_a_bucket_is_ready_when_the_backward_has_made_its_elements():
    """The tiny model on 64 GPUs (64 M-element buckets, 168 M elements): the output layer and
    three layers fill the first bucket, the other five layers the second and the embedding the
    third, both at the end of the backward; an equal split of three cut after the third and the
    fifth layer and gave each a third of the elements."""
    from trainsim.workload.ddp_buckets import bucket_ready, ddp_buckets
    from trainsim.workload.sharding import bucket_params

    tiny = {"name": "tiny", "hidden_size": 1024, "num_layers": 8, "num_attention_heads": 16,
            "vocab_size": 32000, "activation": "swiglu", "normalization": "rmsnorm",
            "position_embedding": "rope", "tied_embeddings": False, "add_bias_linear": False}
    c = run_config_from_dict({"model": tiny, "parallel": {"distributed_optimizer": True},
                              "training": {"global_batch_size": 64, "seq_length": 2048},
                              "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 64}})
    assert bucket_params(c) == 64_000_000 and ddp_buckets(c, range(8), True, True) == 3
    bounds, shares = bucket_ready(c, range(8), True, True)
    assert bounds == (0, 3, 8, 8)
    dense = [d * 168_313_856 / 1e6 for d, _ in shares]  # millions of elements
    assert dense == pytest.approx([67.11, 64.24, 36.96], abs=0.01)
    assert all(e == 0.0 for _, e in shares)


# ------------------------------------------- one bucket without overlap_grad_reduce

def _framework_run(framework: str, version: str, overlap: bool, **parallel):
    c = cfg(dp_buckets=None, overlap_grad_reduce=overlap, overlap_param_gather=False,
            ddp_bucket_size=2_000_000, **parallel)
    import dataclasses
    return dataclasses.replace(c, training=dataclasses.replace(
        c.training, framework=framework, framework_version=version))


@pytest.mark.parametrize("framework,version", [("megatron-core", "0.4"),
                                               ("megatron-core", "0.14"),
                                               ("megatron-lm", "2022-06")])
def test_megatron_ddp_reduces_each_buffer_whole_without_the_overlap(framework, version):
    """Without overlap_grad_reduce Megatron's DDP sets bucket_size to None (core_v0.4.0 -
    core_v0.19.0 distributed_data_parallel.py; the 2022 local DDP and distributed optimizer
    reduce each dtype's buffer whole): each model chunk's gradients go out as one
    collective after the backward, not one per 2 M-element bucket. With the overlap the
    buckets hold."""
    off = _tasks(_framework_run(framework, version, False), "grad reduce_scatter")
    on = _tasks(_framework_run(framework, version, True), "grad reduce_scatter")
    per_chunk = {(stream[0], label.split()[3]) for stream, label, _ in off}
    assert len(off) == len(per_chunk) == 4  # 2 stages x 2 chunks, one each
    assert len(on) > 4 * 2
    assert sum(d for *_, d in off) < sum(d for *_, d in on)  # fewer latencies


def test_torch_ddp_keeps_its_buckets_without_the_overlap():
    """nanotron's ZeRO-0 is torch DDP (bucket_cap_mb): its buckets do not depend on an
    overlap flag; a run naming no framework keeps them too."""
    from trainsim.workload.sharding import dp_bucket_count, unbucketed_without_overlap

    c = _framework_run("nanotron", None, False, distributed_optimizer=False)
    assert not unbucketed_without_overlap(c)
    assert dp_bucket_count(c, 4, 50e6, 0, 0) == 4
    bare = cfg(dp_buckets=None, overlap_grad_reduce=False, ddp_bucket_size=2_000_000)
    assert not unbucketed_without_overlap(bare)
    assert dp_bucket_count(bare, 4, 50e6, 0, 0) == 4


@pytest.mark.parametrize("tag,line", [
    ("core_v0.4.0", r"if not self\.overlap_grad_reduce:\s*\n\s*bucket_size = None"),
    ("core_v0.14.0", r"if not ddp_config\.overlap_grad_reduce:\s*\n\s*ddp_config\.bucket_size = None"),
    ("core_v0.19.0", r"if not ddp_config\.overlap_grad_reduce:\s*\n\s*ddp_config\.bucket_size = None"),
])
def test_the_one_bucket_rule_is_the_one_in_its_source(tag, line):
    """Where the Megatron-LM mirror is at hand: DistributedDataParallel.__init__ drops the
    bucket size without overlap_grad_reduce (skipped without the mirror)."""
    import re

    src = mirror_source("NVIDIA+Megatron-LM", tag,
                        "megatron/core/distributed/distributed_data_parallel.py")
    assert re.search(line, src)


# ------------------------------------------- fp8 parameters: the bucket groups of case 3

def _fp8_tiny(fp8: bool, version: str = "0.14"):
    tiny = {"name": "tiny", "hidden_size": 1024, "num_layers": 8, "num_attention_heads": 16,
            "vocab_size": 32000, "activation": "swiglu", "normalization": "rmsnorm",
            "position_embedding": "rope", "tied_embeddings": False, "add_bias_linear": False}
    return run_config_from_dict({
        "model": tiny,
        "parallel": {"distributed_optimizer": True, "overlap_grad_reduce": True,
                     "ddp_bucket_size": 10_000_000},
        "training": {"global_batch_size": 64, "seq_length": 2048,
                     "framework": "megatron-core", "framework_version": version,
                     "dtype": "fp8" if fp8 else "bf16", "fp8_param_gather": fp8},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 64}})


def test_fp8_parameters_reduce_the_other_buffer_with_the_first_layers():
    """The tiny model on one stage, 10 M-element buckets. bf16: the output layer (32.8 M) is
    a bucket ready at the head, each layer one, the embedding one at the end (10 buckets).
    fp8 parameters (core_v0.9.0+): the layers' weights are bucketed in their own buffer, one
    bucket per layer; the rest (output layer, norms, embedding) in another, whose buckets join
    the fp8 buffer's last group (``partition_buckets`` case 3), ready only at the end with the
    first layer: 8 groups, none ready before the first layer's backward is done."""
    from trainsim.workload.ddp_buckets import bucket_ready, ddp_buckets, fp8_bucket_groups

    plain, fp8 = _fp8_tiny(False), _fp8_tiny(True)
    assert not fp8_bucket_groups(plain) and fp8_bucket_groups(fp8)
    assert ddp_buckets(plain, range(8), True, True) == 10
    assert bucket_ready(plain, range(8), True, True)[0] == (0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 8)
    assert ddp_buckets(fp8, range(8), True, True) == 8
    bounds, shares = bucket_ready(fp8, range(8), True, True)
    assert bounds == (0, 1, 2, 3, 4, 5, 6, 7, 8)
    assert sum(d for d, _ in shares) == pytest.approx(1.0)
    layer = shares[0][0]
    assert shares[-1][0] > layer + 2 * 32_768_000 / 168_313_856  # + output layer, embedding
    # before bucket groups (core_v0.8.0) fp8 weights share the bf16 buffer
    assert not fp8_bucket_groups(_fp8_tiny(True, "0.8"))


def test_the_fp8_bucket_group_rule_is_the_one_in_its_source():
    """Where the Megatron-LM mirror is at hand: ``partition_buckets`` case 3 merges the
    non-fp8 buckets into the last fp8 bucket group (core_v0.9.0, core_v0.14.0); core_v0.8.0
    has no bucket groups (skipped without the mirror)."""
    import re

    for tag in ("core_v0.9.0", "core_v0.14.0"):
        src = mirror_source("NVIDIA+Megatron-LM", tag,
                            "megatron/core/distributed/param_and_grad_buffer.py")
        assert re.search(r"if len\(bucket_groups\) == len\(fp8_buffer\.buckets\) - 1:\s*\n"
                         r"(\s*#.*\n)*\s*group_buckets = \[bucket\] \+ non_fp8_buckets", src)
    old = mirror_source("NVIDIA+Megatron-LM", "core_v0.8.0",
                        "megatron/core/distributed/param_and_grad_buffer.py")
    assert "def partition_buckets" not in old

