"""How a TP overlap runs the GEMMs it hides communication behind (``tp_comm_overlap_method``):
Transformer Engine's userbuffers (``initialize_ub`` defaults) split an all-gather's consumer into
tp ring steps and a reduce-scatter's producer into 4 pipeline chunks on 3 streams, and run the
pipeline and bulk overlaps' GEMMs on the SMs their 16 communication SMs leave; PyTorch's async
TP splits both into tp chunks on copy engines; a fused kernel keeps the GEMM whole."""

from __future__ import annotations

from dataclasses import replace

import pytest

from trainsim.catalog import run_config_from_dict
from trainsim.errors import ConfigError
from trainsim.pricing import TE_PIPELINE_SPLITS, UB_COMM_SMS, Pricer, pipeline_rs_exposed
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.ops import Gemm
from trainsim.workload.shard import shard_of

RING = ("qkv_proj", "fc1", "out_proj.dgrad", "fc2.dgrad")
PIPELINE = ("out_proj", "fc2")
BULK = ("qkv_proj.dgrad", "qkv_proj.wgrad", "fc1.dgrad", "fc1.wgrad")


def _cfg(overlap: bool, method: str = "userbuffers", mbs: int = 1):
    return run_config_from_dict({
        "model": {"preset": "gpt3-175b"},
        "parallel": {"tp": 8, "sequence_parallel": True, "tp_comm_overlap": overlap,
                     "tp_comm_overlap_method": method},
        "training": {"global_batch_size": 64, "micro_batch_size": mbs, "seq_length": 2048},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 64, "compute_db": None}})


def _times(cfg):
    pricer, sh = Pricer(cfg), shard_of(cfg)
    fwd = layer_forward(cfg, sh)
    out = {}
    for ops in (fwd, backward_of(fwd, sh)):
        priced, order = pricer.price_ops(ops)
        for (_, t, name), op in zip(priced.segments, order):
            if isinstance(op, Gemm):
                out[name] = (t, op)
    return pricer, out


def _chunked(pricer, op, chunks):
    return pricer.compute.time(replace(op, m=-(-op.m // chunks), batch=chunks,
                                       grouped="userbuffers"))


def test_userbuffers_split_ring_and_pipeline_gemms_and_take_sms_from_pipeline_and_bulk():
    pricer, split = _times(_cfg(True))
    _, whole = _times(_cfg(False))
    margin = 132 / (132 - UB_COMM_SMS)
    for name in RING:  # copy engines: the GEMM keeps its SMs
        t, op = split[name]
        assert t == pytest.approx(_chunked(pricer, op, 8)), name
        assert whole[name][0] <= t < 1.1 * whole[name][0], name
    for name in PIPELINE:
        t, op = split[name]
        assert t == pytest.approx(_chunked(pricer, op, TE_PIPELINE_SPLITS) * margin), name
    for name in BULK:  # whole GEMMs, on fewer SMs
        assert split[name][0] == pytest.approx(whole[name][0] * margin), name


def test_async_tp_splits_both_kinds_into_tp_chunks_and_fused_keeps_gemms_whole():
    pricer, p2p = _times(_cfg(True, "p2p"))
    _, fused = _times(_cfg(True, "fused"))
    _, whole = _times(_cfg(False))
    for name in RING + PIPELINE:
        assert p2p[name][0] == pytest.approx(_chunked(pricer, p2p[name][1], 8)), name
    for name in RING + PIPELINE + BULK:
        assert fused[name][0] == whole[name][0], name


def test_chunks_on_one_stream_would_lose_their_wave_tails():
    """The streams matter: at one 2k-token micro-batch a tp-8 chunk is 256 rows, too few tiles
    for an H100 on its own; priced one after another the chunks cost more (1.13x since the
    24th session, when a lone chunk's 36 tiles of 128x256 split k three ways over 108 SMs,
    ``roofline.gemm_tiles``; 1.65x on 72 tiles of 128x128 before)."""
    pricer, split = _times(_cfg(True))
    t, op = split["qkv_proj"]
    assert 8 * pricer.compute.time(replace(op, m=op.m // 8)) > 1.1 * t


def test_unknown_method_is_one_clear_error():
    with pytest.raises(ConfigError, match="tp_comm_overlap_method"):
        _cfg(True, "magic")


def test_async_tp_sums_the_reduce_scatter_partials_on_the_compute_stream():
    """PyTorch's fused matmul-reduce-scatter (_symmetric_memory
    _fused_matmul_reduce_scatter_impl) sends each chunk's partial product to its owner and
    then sums the tp partials in one kernel: a memory-bound op after every reduce-scatter
    it overlaps, reading the rank's whole output and writing a 1/tp shard; userbuffers and
    a plain reduce-scatter have none."""
    from trainsim.workload.ops import Comm

    def sums(cfg):
        pricer, sh = Pricer(cfg), shard_of(cfg)
        fwd = layer_forward(cfg, sh)
        found = []
        for ops in (fwd, backward_of(fwd, sh)):
            priced, order = pricer.price_ops(ops)
            scatters = {op.name: op for op in ops
                        if isinstance(op, Comm) and op.kind == "reduce_scatter"}
            for (_, t, name), op in zip(priced.segments, order):
                if name.endswith(".partials_sum"):
                    rs = scatters[name.removesuffix(".partials_sum")]
                    assert op.bytes == pytest.approx(rs.bytes * (1 + 1 / 8))
                    assert t == pytest.approx(pricer.compute.time(op))
                    found.append(name)
        return found

    assert sums(_cfg(True, "p2p")) and {"attn.reduce_scatter.partials_sum",
                                        "mlp.reduce_scatter.partials_sum"} <= set(
        sums(_cfg(True, "p2p")))
    assert sums(_cfg(True, "userbuffers")) == []
    assert sums(_cfg(False, "p2p")) == []


def test_async_tp_copies_the_local_shard_before_the_first_chunk():
    """PyTorch's fused all-gather-matmul (_symmetric_memory
    _pipelined_multi_all_gather_and_consume) copies the rank's own shard into its
    symmetric-memory buffer and barriers before the first chunk's GEMM, not overlapped: a
    copy reading and writing 1/tp of the gathered bytes, on the compute stream just before
    the GEMM it feeds; userbuffers and a plain all-gather have none."""
    from trainsim.workload.ops import Comm

    def copies(cfg):
        pricer, sh = Pricer(cfg), shard_of(cfg)
        fwd = layer_forward(cfg, sh)
        found = []
        for ops in (fwd, backward_of(fwd, sh)):
            priced, order = pricer.price_ops(ops)
            gathers = {op.name: op for op in ops
                       if isinstance(op, Comm) and op.kind == "all_gather"}
            names = [name for _, _, name in priced.segments]
            for i, ((cat, t, name), op) in enumerate(zip(priced.segments, order)):
                if name.endswith(".symm_mem_copy"):
                    ag = gathers[name.removesuffix(".symm_mem_copy")]
                    assert op.bytes == pytest.approx(2 * ag.bytes / 8)
                    assert cat == "compute" and t == pytest.approx(pricer.compute.time(op))
                    assert isinstance(order[i + 1], Gemm)  # the consumer runs right after
                    assert names[i + 2] == ag.name  # then the gather's exposed rest
                    found.append(name)
        return found

    assert {"attn.all_gather.symm_mem_copy", "mlp.all_gather.symm_mem_copy"} <= set(
        copies(_cfg(True, "p2p")))
    assert copies(_cfg(True, "userbuffers")) == []
    assert copies(_cfg(False, "p2p")) == []


def test_pipeline_reduce_scatter_ends_one_chunk_after_its_gemm_by_hand():
    # TE split_overlap_rs (v1.7 pytorch/csrc/comm_gemm_overlap.h L412-430): chunk i's
    # reduce-scatter waits for GEMM chunk i; the last goes after the last GEMM chunk.
    # 4 chunks, GEMM 8 ms (2 a chunk), comm 4 ms (1 a chunk): R1 2-3, R2 4-5, R3 6-7, R4 8-9
    assert pipeline_rs_exposed(4.0, 8.0, 4) == pytest.approx(1.0)
    # comm 12 ms (3 a chunk): R1 2-5, R2 5-8, R3 8-11, R4 11-14: 6 ms past the GEMM
    assert pipeline_rs_exposed(12.0, 8.0, 4) == pytest.approx(6.0)


def test_userbuffers_pipeline_charges_its_last_reduce_scatter_chunk_bulk_does_not():
    cfg = _cfg(True)
    pricer, sh = Pricer(cfg), shard_of(cfg)
    fwd = layer_forward(cfg, sh)
    ops = {op.name: op for op in fwd}
    seen = set()
    for ops_list in (fwd, backward_of(fwd, sh)):
        priced, order = pricer.price_ops(ops_list)
        for (cat, t, name), op in zip(priced.segments, order):
            if cat != "tp_comm":
                continue
            comm = pricer.comm_time(op)
            if name in ("attn.reduce_scatter", "mlp.reduce_scatter"):  # after out_proj / fc2
                assert name in ops and t == pytest.approx(comm / TE_PIPELINE_SPLITS), name
                assert t > 0
                seen.add(name)
            elif op.overlap_with_previous:  # bulk: hidden while the GEMM outlasts it
                assert t == pytest.approx(0.0, abs=1e-12), name
    assert seen == {"attn.reduce_scatter", "mlp.reduce_scatter"}
