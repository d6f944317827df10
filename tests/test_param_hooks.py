"""Under Megatron's DDP with the weight-gradient accumulation fused into the GEMM, every weight
a backward finishes costs the host Transformer Engine's placeholder gradient (``torch.empty``)
and DDP's backward post-hook (``compute.host.PARAM_GRAD_S``): one per expert where each expert
has its own weight (TE ``GroupedLinear``), one per stacked weight otherwise."""

from __future__ import annotations

import csv
from dataclasses import replace
from pathlib import Path

from helpers import PUBLIC_TRAINING

from trainsim.compute import host
from trainsim.validate.training import row_config
from trainsim.workload.layers import backward_of, weights_of
from trainsim.workload.ops import Gemm
from trainsim.workload.shard import shard_of

ROOT = Path(__file__).resolve().parents[1]
ZOO = ROOT / "benchmarks" / "training_moe_modelzoo.csv"
EP8 = "mzoo2505-qwen3-235b-a22b-h100-256-tp4pp8vpp4ep8"


def _shard():
    row = next(r for r in csv.DictReader(ZOO.open()) if r["id"] == EP8)
    return shard_of(row_config(row))


def test_constants_are_built_from_the_measured_ones():
    assert host.DUMMY_WGRAD_S == 2 * host.PY_BINDING_S + host.CPP_OP_S
    assert host.DDP_HOOK_S == 3 * host.PY_BINDING_S
    assert abs(host.PARAM_GRAD_S - 10.13e-6) < 1e-9


def test_each_expert_weight_gets_a_hook_a_stacked_weight_one():
    sh = _shard()
    assert sh.main_grad_bytes == 4
    te = Gemm("expert_fc1", 512, 3072, 4096, batch=16, grouped="multi_stream", ragged=True)
    unnamed = replace(te, grouped="")
    stacked = replace(te, grouped="cutlass")
    dense = Gemm("fc1", 4096, 3072, 4096)
    assert [weights_of(g) for g in (te, unnamed, stacked, dense)] == [16, 16, 1, 1]
    bwd = backward_of([te, dense], sh)
    wgrads = {op.name: op for op in bwd if isinstance(op, Gemm)}
    assert wgrads["expert_fc1.wgrad"].param_hooks == 16 and wgrads["fc1.wgrad"].param_hooks == 1
    assert wgrads["expert_fc1.dgrad"].param_hooks == 0
    assert len(bwd) == len(backward_of([te, dense], replace(sh, main_grad_bytes=0)))
    # host only: the GPU's time is the GEMM's; blocking launches add 16 hooks' host time
    ex = wgrads["expert_fc1.wgrad"]
    bare = replace(ex, param_hooks=0)
    extra = host.exposed_s([ex], [1e-6], 30e-6, blocking=True) - \
        host.exposed_s([bare], [1e-6], 30e-6, blocking=True)
    assert abs(extra - 16 * host.PARAM_GRAD_S) < 1e-12


def test_no_hooks_without_the_fused_accumulation():
    sh = replace(_shard(), main_grad_bytes=0)
    bwd = backward_of([Gemm("fc1", 4096, 3072, 4096)], sh)
    assert not any(isinstance(op, Gemm) and op.param_hooks for op in bwd)


def test_a_cached_placeholder_costs_a_detach():
    g = Gemm("expert_fc1.wgrad", 3072, 4096, 512, batch=16, param_hooks=16)
    cached = replace(g, dummy_cached=True)
    assert abs(host.hooks_host_s(g) - 16 * host.PARAM_GRAD_S) < 1e-12
    assert abs(host.hooks_host_s(cached) - 16 * (host.DDP_HOOK_S + host.PY_VIEW_S)) < 1e-12
    sh = replace(_shard(), cached_dummy_wgrad=True)
    bwd = backward_of([Gemm("fc1", 4096, 3072, 4096)], sh)
    assert [op.dummy_cached for op in bwd if op.name == "fc1.wgrad"] == [True]


def test_bridge_caches_the_placeholder_from_its_te_v2_12_pin():
    rows = {r["id"]: r for r in csv.DictReader(PUBLIC_TRAINING.open())}
    old = shard_of(row_config(rows["bridge2511-qwen3-30b-a3b-16"]))
    new = shard_of(row_config(rows["bridge2604p1-qwen3-30b-a3b-b200-8"]))
    assert old.main_grad_bytes and not old.cached_dummy_wgrad_grouped
    assert old.cached_dummy_wgrad  # TE 2.9: Linear's placeholder cached since v2.3
    assert new.main_grad_bytes and new.cached_dummy_wgrad_grouped and new.cached_dummy_wgrad
    zoo = _shard()  # the Model Zoo's Megatron-core of 2025-05: TE release_v2.2
    assert not zoo.cached_dummy_wgrad and not zoo.cached_dummy_wgrad_grouped


def test_te_version_gates_each_module_by_its_release():
    """TE ba5dc5dde (#1651, v2.3): Linear's cached placeholder; d2945c6a5 (#2305, v2.10):
    GroupedLinear's. Each profile entry's ``te_version`` from the NeMo container tables."""
    from trainsim.catalog.frameworks import framework_feature, te_at_least
    assert framework_feature("megatron-core", "0.8", "te_version") == "1.8"
    cases = {("megatron-core", "0.8"): (False, False), ("megatron-core", "0.14"): (True, False),
             ("megatron-core", "0.16"): (True, True), ("nemo", "25.07"): (True, False),
             ("nemo", "24.09"): (False, False), ("mlperf-nemo", "5.1"): (True, False),
             ("megatron-core", "0.11"): (False, False), ("pytorch", None): (False, False)}
    for (fw, v), want in cases.items():
        assert (te_at_least(fw, v, "2.3"), te_at_least(fw, v, "2.10")) == want, (fw, v)
    assert te_at_least("megatron-core", "0.16", "2.12") and not te_at_least("megatron-core", "0.16", "2.13")
    sh = replace(_shard(), cached_dummy_wgrad=True)  # Linear cached, GroupedLinear not
    te = Gemm("expert_fc1", 512, 3072, 4096, batch=16, grouped="multi_stream", ragged=True)
    loop = replace(te, name="loop_fc1", grouped="loop")
    dense = Gemm("fc1", 4096, 3072, 4096)
    cached = {op.name: op.dummy_cached for op in backward_of([te, loop, dense], sh)
              if op.name.endswith(".wgrad")}
    assert cached == {"expert_fc1.wgrad": False, "loop_fc1.wgrad": True, "fc1.wgrad": True}
