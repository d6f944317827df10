"""Full-wave norm kernels beside an exchange (``Elementwise.full_wave``,
``compute.roofline.full_wave_extra``) and benchmarks/deepseek_v3_norms.py's kept launch figures
of DeepSeek's profiled DualPipe pair (deepseek-ai/profile-data@4496024 train.json)."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

import trainsim
from trainsim.compute.roofline import full_wave_extra
from trainsim.pricing import COMPUTE, EP, Pricer
from trainsim.workload.elementwise import full_wave_norm
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.moe_dispatch import EXCHANGE_SMS
from trainsim.workload.ops import Elementwise
from trainsim.workload.shard import shard_of

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))
try:
    import deepseek_v3_norms as dn
finally:
    sys.path.remove(str(BENCH))

KEPT = json.loads(dn.KEPT.read_text())
NORMS = ("attn_norm", "mlp_norm", "q_norm", "kv_norm")


def test_full_wave_extra_counts_whole_waves():
    """A grid of k CTAs on each of 132 SMs fits k x (132 - held) at a time: one extra wave for
    DeepEP's 20 SMs and up to half the GPU, two past it; none with nothing held."""
    assert full_wave_extra(132, 0) == 0
    assert full_wave_extra(132, EXCHANGE_SMS["deepep"]) == 1
    assert full_wave_extra(132, 66) == 1
    assert full_wave_extra(132, 67) == 2
    assert full_wave_extra(132, 132) == 0  # nothing left to run on: no finite count


def test_kept_launches_norms_on_whole_waves():
    """Every norm kernel of the trace with a row loop (``ln_fwd``, ``ln_bwd``) launches a whole
    multiple of the H800's 132 SMs; beside DeepEP the 132-CTA backward over 4096 x 7168 takes
    1.6-2.1x its time alone (two waves on the 112 SMs left); DeepEP's kernels are resident over
    80 % of the pair."""
    sms = KEPT["num_sms"]
    assert sms == 132
    rows = [r for r in KEPT["launch_groups"] if r["family"] in ("ln_fwd_kernel", "ln_bwd_kernel")]
    assert sum(r["launches"] for r in rows) == 48  # dsv3k43's 32 ln_fwd + 16 ln_bwd
    assert all(r["ctas"] % sms == 0 for r in rows)
    waves = {(w["family"], w["ctas"]): w for w in dn.norm_waves(KEPT)}
    assert 1.6 < waves[("ln_bwd_kernel", 132)]["beside_over_alone"] < 2.1
    assert KEPT["deepep_resident_share"] > 0.8


@pytest.fixture(scope="module")
def moe_layer():
    cfg = trainsim.load_run_config(dn.dsv3.CONFIG, dn.dk.DUALPIPE)
    pc = replace(cfg, parallel=replace(cfg.parallel, moe_overlap_ep_comm=True))
    return pc, layer_forward(pc, shard_of(pc), moe=True)


def test_the_frameworks_fused_norms_launch_a_full_wave(moe_layer):
    """The example's norms (the framework's fused modules) are full-wave, forward and
    backward; a compiled or eager model's norms are not (Inductor's block per row, torch's
    native kernels); nothing else in the layer is."""
    cfg, ops = moe_layer
    sh = shard_of(cfg)
    waved = {o.name for o in ops + backward_of(ops, sh)
             if isinstance(o, Elementwise) and o.full_wave}
    assert waved == set(NORMS) | {f"{n}.bwd" for n in NORMS}
    assert full_wave_norm("fused", compiled=False)
    assert not full_wave_norm("fused", compiled=True)
    assert not full_wave_norm("two_pass", compiled=False)
    for sets in (["training.compile=true"], ["training.modules=eager"]):
        c = trainsim.load_run_config(dn.dsv3.CONFIG, dn.dk.DUALPIPE + sets)
        assert not any(getattr(o, "full_wave", False)
                       for o in layer_forward(c, shard_of(c), moe=True) if o.name == "attn_norm")


def test_a_full_wave_norm_beside_the_exchange_pays_a_wave(moe_layer):
    """The pooled exchange's charge: with the norms full-wave it exceeds the same layer priced
    with them as grids sized by the data by (extra wave - SM share) x the norms' share of
    the layer's compute (every all-to-all hidden in full); no compute op's own time moves."""
    cfg, ops = moe_layer
    plain = [replace(o, full_wave=False) if isinstance(o, Elementwise) else o for o in ops]
    waved, order = Pricer(cfg).price_ops(ops)
    base, _ = Pricer(cfg).price_ops(plain)
    compute = sum(t for c, t, _ in waved.segments if c == COMPUTE)
    grid = sum(t for (c, t, _), o in zip(waved.segments, order)
               if c == COMPUTE and dn.dk.on_grid(o))
    norms = sum(t for (c, t, _), o in zip(waved.segments, order)
                if c == COMPUTE and isinstance(o, Elementwise) and o.full_wave)
    held = EXCHANGE_SMS["deepep"] / 132
    assert [t for c, t, _ in waved.segments if c == COMPUTE] == \
        [t for c, t, _ in base.segments if c == COMPUTE]
    ratio = (held * (1 - (grid + norms) / compute) + norms / compute) \
        / (held * (1 - grid / compute))
    eps = [(t, tw) for (c, t, _), (_, tw, _) in zip(base.segments, waved.segments) if c == EP]
    assert len(eps) >= 2
    for t, tw in eps:
        assert tw == pytest.approx(t * ratio, rel=1e-9) and tw > t


def test_a_layer_without_an_exchange_is_unchanged():
    """Without an exchange beside compute (the lone passes' blocking all-to-alls) a full-wave
    norm is priced as before: the mechanism only acts beside SM-holding kernels."""
    cfg = trainsim.load_run_config(dn.dsv3.CONFIG, dn.dk.DUALPIPE)
    assert not cfg.parallel.moe_overlap_ep_comm
    ops = layer_forward(cfg, shard_of(cfg), moe=True)
    plain = [replace(o, full_wave=False) if isinstance(o, Elementwise) else o for o in ops]
    assert Pricer(cfg).price_ops(ops)[0].segments == Pricer(cfg).price_ops(plain)[0].segments
