"""benchmarks/moe_parts.py: an MoE layer's ops sorted into parts, the Hopper hold bound counted by
hand, and the public Qwen3-235B H100 row taken apart (its experts' GEMM rows as priced)."""

from __future__ import annotations

from pathlib import Path

from helpers import load_script

from trainsim.workload.ops import Comm, Elementwise, Gemm

SCRIPT = load_script(Path(__file__).resolve().parents[1] / "benchmarks" / "moe_parts.py")


def test_parts_by_name_and_group():
    part = SCRIPT.part_of
    assert part(Gemm("expert_fc1", 4096, 3072, 4096, batch=4)) == "gemm"
    assert part(Gemm("expert_fc2.dgrad", 4096, 1536, 4096)) == "gemm"
    assert part(Gemm("recompute.expert_fc1", 4096, 3072, 4096)) == "gemm"
    assert part(Elementwise("expert_fc1.cast_transpose", 1e6)) == "quant"
    assert part(Elementwise("expert_fp8_pad.bwd", 1e6)) == "quant"
    assert part(Gemm("router.wgrad", 4096, 128, 2048)) == "router"
    assert part(Elementwise("router_topk_softmax", 1e6)) == "router"
    assert part(Elementwise("unpermute.bwd", 1e6)) == "perm"
    assert part(Elementwise("moe_tokens_to_host", 8.0, host_sync=True)) == "perm"
    assert part(Comm("moe.dispatch_all_to_all", "all_to_all", 1e8, "ep")) == "xchg"
    assert part(Comm("attn.all_gather", "all_gather", 1e7, "tp")) is None
    assert part(Gemm("shared_fc1", 4096, 2048, 7168)) is None
    assert part(Gemm("qkv_proj", 4096, 4608, 4096)) is None


class _Compute:
    def __init__(self, times):
        self.times = times

    def explain(self, op):
        return self.times[op.name], "test"


class _Pricer:
    """Prices each op by name (seconds), as ``Pricer`` would for the script."""

    def __init__(self, times):
        self.compute = _Compute(times)

    def comm_time(self, op):
        return 1.0  # exchanges are never counted in the bound


def test_hold_bound_is_the_four_first_kernels_by_hand():
    a2a = "all_to_all"
    lf = [Elementwise("attn_norm", 1.0), Gemm("qkv_proj", 8, 8, 8), Elementwise("permute", 1.0),
          Comm("moe.dispatch_all_to_all", a2a, 1.0, "ep"), Elementwise("expert_fp8_pad", 1.0),
          Gemm("expert_fc1", 8, 8, 8), Comm("moe.combine_all_to_all", a2a, 1.0, "ep"),
          Elementwise("unpermute", 1.0)]
    lb = [Elementwise("unpermute.bwd", 1.0),
          Comm("moe.combine_all_to_all.bwd", a2a, 1.0, "ep"),
          Elementwise("expert_fp8_unpad.bwd", 1.0), Gemm("expert_fc1.dgrad", 8, 8, 8),
          Comm("moe.dispatch_all_to_all.bwd", a2a, 1.0, "ep"),
          Comm("moe.tokens_per_expert_all_gather.bwd", "all_gather", 1.0, "ep"),
          Elementwise("permute.bwd", 1.0), Gemm("qkv_proj.dgrad", 8, 8, 8)]
    times = {"attn_norm": 15e-6, "qkv_proj": 140e-6, "permute": 112e-6, "expert_fp8_pad": 101e-6,
             "expert_fc1": 372e-6, "unpermute": 112e-6, "unpermute.bwd": 156e-6,
             "expert_fp8_unpad.bwd": 99e-6, "expert_fc1.dgrad": 424e-6, "permute.bwd": 150e-6,
             "qkv_proj.dgrad": 138e-6}
    # forward attention node's first (attn_norm), the MLP backward's first after the combine's
    # exchange (expert_fp8_unpad.bwd), the forward MLP's first after the dispatch's exchange
    # (expert_fp8_pad), the backward attention's first after the dispatch's exchange, a
    # collective skipped (permute.bwd): 15 + 99 + 101 + 150 us
    got = SCRIPT.first_kernels(_Pricer(times), lf, lb)
    assert abs(got - 365e-6) < 1e-12


def test_qwen3_235b_h100_row_taken_apart():
    row = next(r for r in SCRIPT._rows(SCRIPT.FILES["public"])
               if r["id"] == "bridge2511-qwen3-235b-a22b-h100-256-gbs2048")
    got = SCRIPT.parts(row)
    # 4 local experts of 128 at EP 32; the routed GEMMs of a layer's forward and backward
    # (fc1, fc2, and their dgrad and wgrad: six per expert batch) are all priced
    assert got["le"] == 4 and got["tpe"] > 4096  # forced-balance routing's spread on top of 4096
    assert 0.0 < got["gemm"] < got["xchg"]  # the recipe's 4 exchanges outweigh the experts
    assert got["gap"] > 0.0  # the row is predicted too fast
    # the hold bound is a small share of what the row misses per layer pass
    assert got["hold"] < 0.5 * got["gap"]
