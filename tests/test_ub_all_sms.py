"""Transformer Engine's userbuffer pipeline and bulk overlaps with ``set_sm_margin`` 0 (TE
``initialize_ub`` defaults through v1.13, which Megatron-core takes when no
``--tp-comm-overlap-cfg`` is given): the GEMM is launched for all SMs beside communication
kernels already holding 16, so on Hopper (static persistent tile schedule) its workers on the
held SMs start only when the communication frees them (profile feature ``ub_gemm_all_sms``,
``pricing.beside_all_sms``)."""

from __future__ import annotations

import pytest

from trainsim.catalog import run_config_from_dict
from trainsim.catalog.frameworks import framework_feature
from trainsim.pricing import UB_COMM_SMS, Pricer, beside_all_sms
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.ops import Gemm
from trainsim.workload.shard import shard_of


def _cfg(version: str | None, gpu: str = "h100-sxm-80gb"):
    training = {"global_batch_size": 64, "micro_batch_size": 1, "seq_length": 2048}
    if version:
        training |= {"framework": "megatron-core", "framework_version": version}
    return run_config_from_dict({
        "model": {"preset": "gpt3-175b"},
        "parallel": {"tp": 8, "sequence_parallel": True, "tp_comm_overlap": True,
                     "tp_comm_overlap_method": "userbuffers"},
        "training": training,
        "cluster": {"gpu": gpu, "num_gpus": 64, "compute_db": None}})


def test_bulk_by_hand():
    # communication first, then a GEMM of 8 for all SMs: the held SMs' workers start at 4
    assert beside_all_sms(4.0, 8.0, 1, 1.0) == pytest.approx(4.0)
    # comm 12 > GEMM 8: the late workers start when the others are done, at 8 -> 16
    assert beside_all_sms(12.0, 8.0, 1, 1.0) == pytest.approx(8.0)
    # comm 20: the communication itself ends last
    assert beside_all_sms(20.0, 8.0, 1, 1.0) == pytest.approx(12.0)
    # share 0 (no SM held): the bulk overlap's old rule max(0, comm - gemm)
    assert beside_all_sms(4.0, 8.0, 1, 0.0) == pytest.approx(0.0)


def test_pipeline_by_hand():
    # 4 chunks, GEMM 8 (2 a chunk), comm 4 (1 a chunk): G1 0-2, R1 2-3 beside G2 2-5,
    # R2 5-6 beside G3 5-8, R3 8-9 beside G4 8-11, R4 11-12: 4 past the 8 of GEMM
    assert beside_all_sms(4.0, 8.0, 4, 1.0) == pytest.approx(4.0)
    # comm 12 (3 a chunk): G2 2-6 (R1 2-5), R2 6-9, G3 6-10, R3 10-13, G4 10-14, R4 14-17
    assert beside_all_sms(12.0, 8.0, 4, 1.0) == pytest.approx(9.0)
    # share 0: the margin rule's figure (pipeline_rs_exposed: one chunk after the GEMM)
    assert beside_all_sms(4.0, 8.0, 4, 0.0) == pytest.approx(1.0)


def test_profile_dates_the_default_by_transformer_engine_release():
    assert framework_feature("megatron-core", "0.8", "ub_gemm_all_sms") is True
    assert framework_feature("megatron-core", "0.11", "ub_gemm_all_sms") is True
    assert framework_feature("megatron-core", "0.12", "ub_gemm_all_sms") is False


def _layer(cfg):
    pricer, sh = Pricer(cfg), shard_of(cfg)
    fwd = layer_forward(cfg, sh)
    gemms, comms = {}, {}
    for ops in (fwd, backward_of(fwd, sh)):
        priced, order = pricer.price_ops(ops)
        for (cat, t, name), op in zip(priced.segments, order):
            (gemms if isinstance(op, Gemm) else comms)[name] = t
    return pricer, gemms, comms


def test_gemms_keep_all_sms_and_the_communication_is_not_hidden_on_hopper():
    old, g8, c8 = _layer(_cfg("0.8"))
    new, g12, c12 = _layer(_cfg("0.12"))
    assert old.ub_all_sms and not new.ub_all_sms and old.ub_gemm_share == 1.0
    margin = 132 / (132 - UB_COMM_SMS)
    for name in ("out_proj", "fc2", "qkv_proj.dgrad", "fc1.wgrad"):
        assert g12[name] == pytest.approx(g8[name] * margin), name
    # the forward reduce-scatters: the whole communication after the GEMM (comm < GEMM)
    for name in ("attn.reduce_scatter", "mlp.reduce_scatter"):
        assert c8[name] > c12[name] > 0, name
    assert sum(g8.values()) + sum(c8.values()) > sum(g12.values()) + sum(c12.values())


def test_unnamed_framework_and_blackwell_keep_their_rules():
    assert not Pricer(_cfg(None)).ub_all_sms
    b200 = Pricer(_cfg("0.8", "b200-sxm-180gb"))
    assert b200.ub_all_sms and b200.ub_gemm_share == pytest.approx(UB_COMM_SMS / 148)
