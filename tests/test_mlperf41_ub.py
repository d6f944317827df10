"""NVIDIA's MLPerf GPT-3 userbuffer configs priced site by site (41st session, mlperf41): the
bulk overlaps' GEMMs on all SMs (``set_sm_margin`` 0, profile feature ``ub_bulk_all_sms``) and
the two forward reduce-scatter overlaps as each round's tp_overlap yaml runs them (profile
feature ``ub_rs_overlap``: proj_fprop / fc2_fprop method and communication SMs;
``gemm_overlap.ub_rs_sites``, ``gemm_overlap.ring_rs_exposed``)."""

from __future__ import annotations

import pytest

from trainsim.catalog import run_config_from_dict
from trainsim.catalog.framework_schema import FEATURES
from trainsim.catalog.frameworks import framework_feature
from trainsim.gemm_overlap import ring_rs_exposed, ub_rs_sites
from trainsim.pricing import UB_COMM_SMS, Pricer, beside_all_sms, pipeline_rs_exposed
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.ops import Gemm
from trainsim.workload.shard import shard_of


def _cfg(framework: str, version: str):
    return run_config_from_dict({
        "model": {"preset": "gpt3-175b"},
        "parallel": {"tp": 4, "sequence_parallel": True, "tp_comm_overlap": True,
                     "tp_comm_overlap_method": "userbuffers"},
        "training": {"global_batch_size": 64, "micro_batch_size": 1, "seq_length": 2048,
                     "framework": framework, "framework_version": version},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 64, "compute_db": None}})


def _plain(cfg) -> Pricer:
    """The same run priced with TE's defaults: every pipeline and bulk GEMM on the margin."""
    p = Pricer(cfg)
    p.ub_rs, p.ub_bulk_all_sms, p.ub_all_sms = {}, False, False
    return p


def _layer(pricer, cfg):
    """Seconds of each GEMM, and of every other segment, of one layer's forward and backward;
    and each op by name."""
    sh = shard_of(cfg)
    fwd = layer_forward(cfg, sh)
    gemms, rest, ops = {}, {}, {}
    for todo in (fwd, backward_of(fwd, sh)):
        ops |= {o.name: o for o in todo}
        priced, order = pricer.price_ops(todo)
        for (_, t, name), op in zip(priced.segments, order):
            (gemms if isinstance(op, Gemm) else rest)[name] = t
    return gemms, rest, ops


def test_profile_reads_each_rounds_tp_overlap_yaml():
    # v3.1 conf/tp_overlap/h100tp4pp8mbs1.yaml
    assert framework_feature("mlperf-nemo", "3.1", "ub_rs_overlap") == {
        "proj": {"method": "pipeline", "num_sm": 24}, "fc2": {"method": "pipeline", "num_sm": 4}}
    # v4.0 / v4.1 h100tp4mbs2.yaml defaults: atomic proj_fprop, ring-exchange fc2_fprop
    for version in ("4.0", "4.1"):
        assert framework_feature("mlperf-nemo", version, "ub_rs_overlap") == {
            "proj": {"method": "atomic", "num_sm": 24},
            "fc2": {"method": "ring_exchange", "num_sm": 1}}
        assert framework_feature("mlperf-nemo", version, "ub_bulk_all_sms") is True
    # the Llama 3.1 rounds: not read, TE's defaults
    assert framework_feature("mlperf-nemo", "5.0", "ub_rs_overlap") is None
    assert not framework_feature("mlperf-nemo", "5.0", "ub_bulk_all_sms")
    assert framework_feature("nemo", "24.07", "ub_rs_overlap") is None


def test_sites_by_gemm_name():
    assert ub_rs_sites(_cfg("mlperf-nemo", "3.1")) == {"out_proj": ("pipeline", 24),
                                                       "fc2": ("pipeline", 4)}
    assert ub_rs_sites(_cfg("mlperf-nemo", "4.1")) == {"out_proj": ("atomic", 24),
                                                       "fc2": ("ring_exchange", 1)}
    assert ub_rs_sites(_cfg("mlperf-nemo", "5.0")) == {}


def test_schema_rejects_an_unknown_site_method_or_count():
    check = FEATURES["ub_rs_overlap"]
    assert check({"fc2": {"method": "ring_exchange", "num_sm": 1}}) is None
    assert check(None) is None
    assert check({"qkv": {"method": "pipeline", "num_sm": 4}})
    assert check({"fc2": {"method": "bulk", "num_sm": 4}})
    assert check({"fc2": {"method": "pipeline", "num_sm": 0}})
    assert check({"fc2": {"method": "pipeline"}})


def test_ring_exchange_by_hand():
    # tp 4, GEMM 8 (2 a chunk), sends 3 in all (1 each) after chunks 1-3: the last send ends
    # at 2 + 3 = 5, before the GEMM's 8
    assert ring_rs_exposed(3.0, 8.0, 4) == pytest.approx(0.0)
    # sends 9 (3 each): 2 + 9 = 11, 3 past the GEMM
    assert ring_rs_exposed(9.0, 8.0, 4) == pytest.approx(3.0)
    assert ring_rs_exposed(9.0, 8.0, 1) == 0.0


def test_v31_margins_per_site_and_bulk_on_all_sms():
    cfg = _cfg("mlperf-nemo", "3.1")
    site, plain = Pricer(cfg), _plain(cfg)
    assert site.ub_bulk_all_sms and not site.ub_all_sms
    g, c, ops = _layer(site, cfg)
    g0, c0, _ = _layer(plain, cfg)
    margin = 132 / (132 - UB_COMM_SMS)
    assert g["out_proj"] == pytest.approx(g0["out_proj"] / margin * 132 / 108)
    assert g["fc2"] == pytest.approx(g0["fc2"] / margin * 132 / 128)
    # the forward reduce-scatters: TE's pipeline rule on each site's GEMM
    for comm, gemm in (("attn.reduce_scatter", "out_proj"), ("mlp.reduce_scatter", "fc2")):
        t = site.comm_time(ops[comm])
        assert c[comm] == pytest.approx(pipeline_rs_exposed(t, g[gemm], 4)), comm
        assert c0[comm] == pytest.approx(pipeline_rs_exposed(t, g0[gemm], 4)), comm
    # bulk: the GEMM keeps all SMs and, on Hopper, loses the communication's time beside it
    for comm, gemm in (("attn.all_gather.bwd_regather", "qkv_proj.dgrad"),
                       ("mlp.all_gather.bwd_regather", "fc1.dgrad"),
                       ("attn.all_gather.bwd", "qkv_proj.wgrad"),
                       ("mlp.all_gather.bwd", "fc1.wgrad")):
        assert g[gemm] == pytest.approx(g0[gemm] / margin), gemm
        t = site.comm_time(ops[comm])
        assert c[comm] == pytest.approx(beside_all_sms(t, g[gemm], 1, 1.0)), comm
        assert c0[comm] == pytest.approx(max(0.0, t - g0[gemm])), comm
    # the ring-exchange gathers' GEMMs are priced as before
    assert g["qkv_proj"] == pytest.approx(g0["qkv_proj"])
    assert g["fc1"] == pytest.approx(g0["fc1"])


def test_v41_atomic_proj_and_ring_exchange_fc2():
    cfg = _cfg("mlperf-nemo", "4.1")
    site, plain = Pricer(cfg), _plain(cfg)
    g, c, ops = _layer(site, cfg)
    g0, _, _ = _layer(plain, cfg)
    # atomic: one GEMM (TE_PIPELINE_SPLITS chunks before) on the 108 SMs 24 leave, TE's
    # pipeline rule for its reduce-scatter
    assert g["out_proj"] == pytest.approx(site.compute.time(ops["out_proj"]) * 132 / 108)
    t = site.comm_time(ops["attn.reduce_scatter"])
    assert c["attn.reduce_scatter"] == pytest.approx(pipeline_rs_exposed(t, g["out_proj"], 4))
    # ring exchange: tp chunks on the 131 SMs one leaves, the sends by copy engines, then the
    # tp partials summed on the compute stream
    assert g["fc2"] < g0["fc2"]
    t = site.comm_time(ops["mlp.reduce_scatter"])
    assert c["mlp.reduce_scatter"] == pytest.approx(ring_rs_exposed(t, g["fc2"], 4))
    summed = site._partials_sum(ops["mlp.reduce_scatter"])
    assert c["mlp.reduce_scatter.partials_sum"] == pytest.approx(site.compute.time(summed))
    assert "attn.reduce_scatter.partials_sum" not in c
