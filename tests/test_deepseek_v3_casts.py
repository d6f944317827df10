"""Megatron-core's ``activation_func_fp8_input_store`` priced as its casts
(``workload.shard.fp8_input_store``) and benchmarks/deepseek_v3_casts.py's kept launch figures of
DeepSeek's profiled DualPipe pair (deepseek-ai/profile-data@4496024 train.json)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import trainsim
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.recompute import layer_recompute
from trainsim.workload.shard import FP8_INPUT_STORE_BYTES, shard_of

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))
try:
    import deepseek_v3_casts as dc
finally:
    sys.path.remove(str(BENCH))

KEPT = json.loads(dc.KEPT.read_text())


@pytest.fixture(scope="module")
def dsv3():
    return trainsim.load_run_config(dc.dsv3.CONFIG, dc.dk.DUALPIPE)


def _stores(ops):
    return {o.name: o for o in ops if "fp8_store_cast" in o.name}


def test_the_swiglu_input_store_casts_each_way(dsv3):
    """Each fused SwiGLU (the routed experts', the shared expert's, a dense layer's) casts its
    16-bit input, both halves, to fp8 in the forward (read 2, write 1) and back in the
    backward (read 1, write 2); the routed experts' re-run by ``moe_act`` casts again."""
    cfg, sh = dsv3, shard_of(dsv3)
    m = cfg.model
    fwd = layer_forward(cfg, sh, moe=True)
    s = _stores(fwd)
    assert set(s) == {"expert_act.fp8_store_cast", "shared_act.fp8_store_cast"}
    act = next(o for o in fwd if o.name == "expert_act")
    rows_f = act.bytes / (2 * 3)  # expert_act moves 3 x 16 bits per output element
    assert s["expert_act.fp8_store_cast"].bytes == pytest.approx(rows_f * 2 * FP8_INPUT_STORE_BYTES)
    assert s["shared_act.fp8_store_cast"].bytes == \
        sh.tokens * m.moe_shared_expert_intermediate_size * 2 * 3
    bwd = _stores(backward_of(fwd, sh))
    assert {n: o.bytes for n, o in bwd.items()} == \
        {f"{n}.bwd": o.bytes for n, o in s.items()}
    assert set(_stores(layer_recompute(cfg, sh, fwd))) == {"recompute.expert_act.fp8_store_cast"}
    assert set(_stores(layer_forward(cfg, sh, moe=False))) == {"swiglu.fp8_store_cast"}


def test_without_the_option_no_cast(dsv3):
    """The option off (every board row): no op, the layer as before."""
    cfg = trainsim.load_run_config(dc.dsv3.CONFIG, dc.dk.DUALPIPE
                                   + ["training.activation_func_fp8_input_store=false"])
    sh = shard_of(cfg)
    for moe in (True, False):
        fwd = layer_forward(cfg, sh, moe=moe)
        assert not _stores(fwd) and not _stores(backward_of(fwd, sh))


def test_kept_casts_by_role():
    """The trace's 272 compute-stream cast / transpose launches (15.6 ms) by role: the recipe's
    operand casts made as separate rowwise and columnwise kernels (144), the fp8 weights
    transposed every micro-batch (100, grids their 128 x 128 tile counts), the E5M6 round
    trip, the SwiGLU input's fp8 store and cast back."""
    roles = dc.by_role(KEPT)
    assert sum(r["launches"] for r in roles.values()) == 272
    assert sum(r["ms"] for r in roles.values()) == pytest.approx(15.58, abs=0.02)
    assert roles["rowwise"]["launches"] == roles["columnwise"]["launches"] == 72
    assert roles["weight_transpose"]["launches"] == 100
    tiles = set(dc.weight_tiles().values())
    grids = {g["grid"][0] for g in KEPT["groups"] if g["family"] == "batched_transpose"}
    assert grids <= tiles
    # the mlp(F) per-token casts cannot be 7168 wide (past the H800's HBM), 4096 can
    rate = dc.implied_tb_s(KEPT)
    assert rate["7168"] > dc.H800_HBM_TB_S > rate["4096"]


def test_kept_deepep_residency():
    """DeepEP's dispatch / combine kernels outlast the example's transfer times (their
    receivers wait on the peers), and the notify kernels hold SMs beside them."""
    p = dc.priced()
    d = dc.deepep_residency(KEPT, p)
    assert 1.05 < d["kernels_over_transfer"] < 1.3
    assert d["notify_ms"] > 25
    assert p["casts"]["activation_cache"]["launches"] == 12  # 4 routed + 4 shared + 4 re-run
    assert p["casts"]["cast_back"]["launches"] == 8
