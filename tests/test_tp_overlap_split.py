"""Transformer Engine's userbuffer TP overlap runs the GEMMs it overlaps in chunks (TE
``initialize_ub`` defaults): tp ring steps for an all-gather's consumer, 4 pipeline splits for a
reduce-scatter's producer, whole GEMMs under bulk overlaps; the chunks share 3 streams."""

from __future__ import annotations

from dataclasses import replace

from trainsim.catalog import run_config_from_dict
from trainsim.pricing import TE_PIPELINE_SPLITS, Pricer
from trainsim.workload.layers import backward_of, layer_forward, shard_of
from trainsim.workload.ops import Gemm


def _cfg(overlap: bool, tp: int = 8, mbs: int = 1):
    return run_config_from_dict({
        "model": {"preset": "gpt3-175b"},
        "parallel": {"tp": tp, "sequence_parallel": True, "tp_comm_overlap": overlap},
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


def test_overlapped_gemms_run_in_ring_steps_and_pipeline_splits():
    pricer, split = _times(_cfg(True))
    _, whole = _times(_cfg(False))
    tp = 8
    for name, chunks in (("qkv_proj", tp), ("fc1", tp), ("out_proj.dgrad", tp),
                         ("fc2.dgrad", tp), ("out_proj", TE_PIPELINE_SPLITS),
                         ("fc2", TE_PIPELINE_SPLITS)):
        t, op = split[name]
        chunk = replace(op, m=-(-op.m // chunks), batch=chunks, grouped="userbuffers")
        assert t == pricer.compute.time(chunk), name
        # never faster than the whole GEMM; the streams keep the loss to the chunks' tails
        assert whole[name][0] <= t < 1.1 * whole[name][0], name
    for name in ("qkv_proj.dgrad", "qkv_proj.wgrad", "fc1.dgrad", "fc2.wgrad"):  # bulk
        assert split[name][0] == whole[name][0], name


def test_chunks_on_one_stream_would_lose_their_wave_tails():
    """The 3 streams matter: at one 2k-token micro-batch a tp-8 chunk is 256 rows, too few
    tiles for an H100 on its own; priced one after another the chunks cost far more."""
    pricer, split = _times(_cfg(True))
    t, op = split["qkv_proj"]
    serial = 8 * pricer.compute.time(replace(op, m=op.m // 8))
    assert serial > 1.3 * t
