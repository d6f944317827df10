"""Megatron-FSDP (Megatron-core's ZeRO-3) under pipelining, by release (issue 17, sanity lead 1).

Sources (NVIDIA/Megatron-LM): ``megatron/core/distributed/custom_fsdp/`` arrived with
d165a8548b (2025-02-26, "MCore Customized FSDP"), not in core_v0.11.0, first tagged core_v0.12.0
(profile lines ``zero_stages`` by version, nemo's ``zero_stage_releases``; renamed ``fsdp/src/megatron_fsdp`` at core_v0.14.0);
NVIDIA/NeMo's MegatronStrategy(fsdp="megatron") arrived with 95c9edead4 (2025-04-06), absent at
v2.2.0, in v2.3.0 (the 25.04 container).
From core_v0.12.0 through core_v0.19.0, with data_parallel_sharding_strategy
``optim_grads_params`` every FSDP unit is all-gathered by its forward pre-hook, released by its
forward post-hook, gathered again by its backward pre-hook and its gradients reduce-scattered
after every backward (``grad_reduce_every_bprop``), whatever the micro-batch; the
``microbatch_count == 0`` test (megatron_fsdp.py L489 at core_v0.19.0) gates only HSDP's
outer-group gather. So under PP every micro-batch's forward and backward gather and every
backward reduces: ``fsdp_pp_mode`` "regather" (no ``fsdp_pp_*`` line in the profiles)."""

from __future__ import annotations

import pytest

from tests.helpers import mirror_source
from trainsim.catalog import run_config_from_dict
from trainsim.catalog.defaults import apply_framework
from trainsim.errors import ConfigError
from trainsim.pricing import DP, Pricer
from trainsim.simulator import build_graph
from trainsim.workload.sharding import fsdp_pp_mode

REPO = "NVIDIA+Megatron-LM"
OLD = "megatron/core/distributed/custom_fsdp/fully_sharded_data_parallel.py"
NEW = "megatron/core/distributed/fsdp/src/megatron_fsdp/megatron_fsdp.py"


def _apply(framework: str, version: str) -> dict:
    parallel = {"zero_stage": 3}
    apply_framework(parallel, {"framework": framework, "framework_version": version})
    return parallel


@pytest.mark.parametrize(("framework", "version", "first"), [
    # megatron-core / megatron-lm: zero_stages by version (fixj 3919b9a) names the stages run
    ("megatron-core", "0.4", None), ("megatron-core", "0.11", None),
    ("megatron-lm", "2024-06", None), ("megatron-lm", "2025-01", None),
    ("nemo", "24.07", "25.04"), ("nemo", "25.02", "25.04")])
def test_megatron_fsdp_before_its_release_is_refused(framework, version, first):
    with pytest.raises(ConfigError) as err:
        _apply(framework, version)
    text = str(err.value)
    assert "\n" not in text and "zero_stage=3" in text
    if first is not None:  # profile zero_stage_releases names the release
        assert f"{framework} {first}" in text


@pytest.mark.parametrize(("framework", "version"), [
    ("megatron-core", "0.12"), ("megatron-core", "0.16"), ("megatron-lm", "2025-02-26"),
    ("megatron-lm", "2025-06"), ("megatron-bridge", "25.09"), ("megatron-bridge", "26.04"),
    ("nemo", "25.04"), ("nemo", "25.07")])
def test_megatron_fsdp_from_its_release_runs(framework, version):
    assert _apply(framework, version)["zero_stage"] == 3


def _cfg(framework: str = "megatron-core", version: str = "0.16"):
    return run_config_from_dict({
        "model": {"preset": "llama3-8b", "num_layers": 8},
        "parallel": {"tp": 1, "pp": 2, "vpp": 2, "zero_stage": 3, "recompute": "full"},
        "training": {"global_batch_size": 16, "micro_batch_size": 1, "seq_length": 2048,
                     "dtype": "bf16", "framework": framework, "framework_version": version},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8},
    })


def _gather_s(task) -> float:
    return sum(d for cat, d, name in getattr(task.detail, "segments", ())
               if cat == DP and name == "FSDP unit all-gathers")


@pytest.mark.parametrize(("framework", "version"), [
    ("megatron-core", "0.12"), ("megatron-core", "0.19"), ("megatron-lm", "2025-12-30"),
    ("megatron-bridge", "26.04")])
def test_every_micro_batch_regathers_and_reduces(framework, version):
    """Hand count, PP 2 x VPP 2, 4 micro-batches: each of the 2 x 2 x 4 = 16 forward passes
    waits on its units' gathers, each of the 16 backward passes gathers its blocks again, and
    each backward reduce-scatters (micro-batches 0 to 3 alike, not only the last)."""
    c = _cfg(framework, version)
    assert fsdp_pp_mode(c) == "regather"
    g = build_graph(c, Pricer(c))
    passes = g.pp * g.vpp * g.m
    assert (g.pp, g.vpp, g.m) == (2, 2, 4) and passes == 16
    fwd = [t for t in g.tasks if t.stream[1] == "compute" and _gather_s(t) > 0]
    assert len(fwd) == passes and all(t.label.startswith("F") for t in fwd)
    bwd = {(t.stream[0], t.label.split(" part")[0]) for t in g.tasks
           if t.label.startswith("FSDP all-gather")}
    assert len(bwd) == passes
    reduces = [t.label for t in g.tasks
               if "ZeRO-3 grad reduce-scatter" in t.label and t.label.endswith("part0")]
    assert len(reduces) == passes
    assert {label.split(" mb")[1].split()[0] for label in reduces} == {"0", "1", "2", "3"}


def test_custom_fsdp_first_tagged_in_core_v0_12():
    with pytest.raises(pytest.skip.Exception):
        mirror_source(REPO, "core_v0.11.0", OLD)
    assert "def _register_fsdp_hooks" in mirror_source(REPO, "core_v0.12.0", OLD)


@pytest.mark.parametrize(("rev", "path"), [("core_v0.12.0", OLD), ("core_v0.13.0", OLD),
                                           ("core_v0.14.0", NEW), ("core_v0.19.0", NEW)])
def test_the_source_regathers_and_reduces_every_micro_batch(rev, path):
    text = mirror_source(REPO, rev, path)
    # ZeRO-3's strategy reduces after every backward
    every = text.index("grad_reduce_every_bprop = ")
    assert '"optim_grads_params"' in text[every:every + 200]
    # the forward post-hook releases the unit's parameters; the backward pre-hook gathers again
    post = text.index("def _post_forward(")
    assert "release_module_parameters(module" in text[post:post + 1500]
    pre = text.index("def _pre_backward_param_unshard(" if "def _pre_backward_param_unshard("
                     in text else "def _pre_backward(")
    assert "prefetch_order=PrefetchOrder.BACKWARD_PASS_ORDER" in text[pre:pre + 1500]
    # where a micro-batch counter exists it gates only HSDP's outer-group gather
    at = text.find("microbatch_count == 0")
    while at >= 0:
        assert "outer_fsdp_group_param_gather" in text[at - 800:at]
        at = text.find("microbatch_count == 0", at + 1)


def test_nemo_megatron_fsdp_first_in_v2_3():
    path = "nemo/lightning/pytorch/strategies/megatron_strategy.py"
    assert "FSDPLiteral" not in mirror_source("NVIDIA+NeMo", "v2.2.0", path)
    assert "FSDPLiteral = Literal[\"megatron\"" in mirror_source("NVIDIA+NeMo", "v2.3.0", path)
