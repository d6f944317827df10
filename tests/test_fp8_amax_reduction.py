"""Transformer Engine's delayed scaling max-reduces the amaxes of a model chunk over the
tensor-and-data-parallel group once per forward and once per backward of the chunk, with the
compute stream waiting on it: a cost that grows with the stage's rank count, not with the
model (``workload.elementwise.fp8_amax_reductions``); with CUDA-graphed layers too, and over
the TP (and CP) ranks alone under Megatron-core's ``tp_only_amax_red``."""

from __future__ import annotations

import pytest
from helpers import fp8_slice_cfg

from trainsim.chunks import chunks
from trainsim.config import RunConfig
from trainsim.pricing import Pricer
from trainsim.workload.shard import shard_of


def _cfg(gpus: int, dtype: str = "fp8", recipe: str = "delayed",
         graphs: bool = False, version: str = "4.0") -> RunConfig:
    """The ``FP8_SLICE`` model on ``gpus`` GPUs, TP 4 with SP and PP 2, four sequences per
    data-parallel rank."""
    return fp8_slice_cfg(recipe, version=version, gpus=gpus, pp=2, batch=4 * (gpus // 8),
                         dtype=dtype, cuda_graphs=graphs)


def _chunk(cfg: RunConfig):
    """The first priced chunk of ``cfg``."""
    return chunks(cfg, Pricer(cfg), shard_of(cfg))[0]


def _passes(cfg: RunConfig) -> tuple[float, float]:
    ch = _chunk(cfg)
    return ch.fwd.duration_s, ch.bwd.duration_s


def _amax(cfg: RunConfig) -> list[float]:
    """Seconds of the chunk's amax reductions, forward then backward."""
    ch = _chunk(cfg)
    return [s for part in (ch.fwd, ch.bwd) for _, s, label in part.segments
            if label.startswith("fp8_amax_reduce")]


def test_delayed_scaling_reduces_once_per_chunk_pass():
    """One reduction in the chunk's forward and one in its backward."""
    assert len(_amax(_cfg(64))) == 2


def test_reduction_grows_with_the_stage_ranks():
    """The group is every rank of a pipeline stage: 32 ranks on 4 nodes reduce faster than
    1,024 on 128 nodes (a deeper tree of network hops), and the passes take longer by that."""
    small, large = sum(_amax(_cfg(64))), sum(_amax(_cfg(2048)))
    assert 0 < small < large
    assert sum(_passes(_cfg(2048))) - sum(_passes(_cfg(64))) > 0.5 * (large - small)


def test_no_reduction_without_delayed_scaling():
    """bf16 and current scaling (no amax history to share) add none."""
    assert _amax(_cfg(64, dtype="bf16")) == []
    assert _amax(_cfg(64, recipe="current")) == []


def test_cuda_graphed_layers_reduce_as_eager_ones():
    """A graphed layer's replay hands its amaxes to the chunk's fp8_autocast exit and the
    first module's backward replay reduces after it (TE v1.6rc1 graph.py; Megatron-core
    cuda_graphs.py ``_CudagraphFunc``): the same two reductions as without graphs."""
    graphed, eager = _amax(_cfg(64, graphs=True)), _amax(_cfg(64))
    assert len(graphed) == 2 and graphed == pytest.approx(eager)


def test_tp_only_amax_reduction_stays_inside_the_tp_group():
    """MLPerf v5.0's custom.yaml keeps Megatron-core's ``tp_only_amax_red`` default True:
    the reduction spans the 4 TP ranks of one node, not the stage's 512 ranks on 64 nodes,
    and no longer grows with the data-parallel size."""
    v40, v50 = _amax(_cfg(2048, version="4.0")), _amax(_cfg(2048, version="5.0"))
    assert len(v50) == 2 and sum(v50) < 0.5 * sum(v40)
    assert _amax(_cfg(64, version="5.0")) == pytest.approx(v50)


def test_mlperf_v31_keeps_the_reduction_to_tp_and_async():
    """NVIDIA's MLPerf v3.1 code (TE 09ba842) set NVTE_DP_AMAX_REDUCE_INTERVAL=0 and
    NVTE_ASYNC_AMAX_REDUCTION=1: no stage-wide blocking reduction; v4.0's TE reads neither."""
    assert _amax(_cfg(64, version="3.1")) == []
    assert len(_amax(_cfg(64, version="4.0"))) == 2
