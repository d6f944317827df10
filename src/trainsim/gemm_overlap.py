"""A GEMM beside communication kernels: Transformer Engine's userbuffer TP overlaps (``pipeline``
and ``bulk``: the SMs they take, the chunks they reduce-scatter in, the time they leave exposed
after the GEMM) and the static tile schedule of Hopper GEMMs, which loses a whole share of the
GEMM beside an exchange. Pure functions of times and counts; ``pricing.Pricer`` applies them.
"""

from __future__ import annotations

from typing import Any

from trainsim.catalog.frameworks import framework_feature
from trainsim.config import RunConfig
from trainsim.errors import ConfigError
from trainsim.workload.moe_dispatch import exchange_sms
from trainsim.workload.ops import Gemm, Op

UB_COMM_SMS = 16
"""SMs Transformer Engine's ``pipeline`` and ``bulk`` userbuffer overlaps give their
communication kernels, taken from the GEMM they overlap for the whole GEMM (TE ``initialize_ub``
defaults ``num_sm`` 16 with ``set_sm_margin``); its ``ring_exchange`` moves chunks with copy
engines and leaves the GEMM its SMs."""

TE_PIPELINE_SPLITS = 4
"""Chunks of a GEMM whose output Transformer Engine reduce-scatters with its ``pipeline``
userbuffer overlap (``num_splits`` default in ``initialize_ub``, pytorch/module/base.py)."""


def pipeline_rs_exposed(comm_s: float, gemm_s: float, splits: int) -> float:
    """Time a ``pipeline`` reduce-scatter overlap adds after its GEMM. Transformer Engine runs
    the GEMM in ``splits`` chunks and reduce-scatters chunk i once GEMM chunk i is done, the
    last chunk after the last GEMM chunk ("Last communication chunk with max SM": TE v1.7
    pytorch/csrc/comm_gemm_overlap.h ``UbufCommOverlap::split_overlap_rs`` L412-430 and
    L446-464; v2.8 common/comm_gemm_overlap/comm_gemm_overlap.cpp
    ``CommOverlapBase::split_overlap_rs`` L563-564): chunks r = comm/splits behind chunks
    g = gemm/splits end r after the GEMM if r <= g, else (splits - 1) g before the last."""
    return max(comm_s / splits, comm_s - gemm_s * (splits - 1) / splits)


def beside_all_sms(comm_s: float, gemm_s: float, splits: int, share: float) -> float:
    """Time a ``pipeline`` (``splits`` > 1) or ``bulk`` (``splits`` 1) userbuffer overlap adds
    after its GEMM where the GEMM is launched for all SMs (TE ``set_sm_margin`` 0, profile
    feature ``ub_gemm_all_sms``) beside communication kernels already holding some of them. A
    GEMM of g that starts beside a kernel with c left takes g + min(c, g) x ``share``: on a
    GPU whose GEMMs keep a static tile schedule (``static_tile_schedule``) the workers of the
    held SMs start when the kernel frees them and then run their whole share, ``share`` 1 (the
    derivation under ``STATIC_TILE_GEMM_SHARE``, whole here: under the one hardware queue
    Megatron runs sequence parallelism with, CUDA_DEVICE_MAX_CONNECTIONS=1 (else a
    RuntimeError: core_v0.8.0 megatron/training/arguments.py validate_args L476-480), each
    communication kernel is dispatched before the GEMM it overlaps and holds its SMs from the
    GEMM's start, where an expert exchange in a 1F1B pair starts anywhere in its GEMMs);
    elsewhere the SMs' share. Bulk: the communication is launched first and the GEMM after it
    (TE v1.8 comm_gemm_overlap.h ``bulk_overlap`` L227-L260). Pipeline: the reduce-scatter of
    GEMM chunk i is launched when that chunk is done and runs beside GEMM chunk i + 1; the last
    one after the last GEMM chunk (``split_overlap_rs`` L412-L534, as ``pipeline_rs_exposed``)."""
    g, r = gemm_s / splits, comm_s / splits
    if splits == 1:
        return max(r, g + min(r, g) * share) - g
    gemm_end = g
    comm_start = gemm_end
    for _ in range(splits - 1):
        comm_end = comm_start + r  # the previous chunk's reduce-scatter
        gemm_end += g + min(max(0.0, comm_end - gemm_end), g) * share
        comm_start = max(gemm_end, comm_end)
    return comm_start + r - gemm_s


STATIC_TILE_GEMM_SHARE = 0.5
"""Share of a GEMM's time lost beside an exchange when the GEMM is a persistent kernel with a
static tile schedule (Hopper, ``static_tile_schedule``): one worker block per SM owns an equal
share of the tiles, and the workers whose SMs an exchange holds start only when it frees them
or when the other workers are done, then run their whole share: a GEMM of T beside an
exchange with c left takes T + min(c, T), half speed while the exchange runs, whatever number
of SMs (> 0) it holds. Derived, not fitted (NVIDIA CUTLASS documentation,
media/docs/cpp/blackwell_cluster_launch_control.md "Static Scheduler": a GEMM beside a kernel
that holds 20 of 100 SMs; Megatron-Bridge v0.2.0 scripts/performance/perf_plugins.py L216-236:
on Hopper a "communication kernel will be pushed to the end of the GEMM kernel")."""


def static_tile_schedule(cfg: RunConfig) -> bool:
    """Whether the run's GEMMs are persistent kernels with a static tile schedule: NVIDIA
    Hopper (sm_arch 90; CUTLASS include/cutlass/gemm/kernel/sm90_tile_scheduler.hpp
    ``PersistentTileSchedulerSm90``, a ``StaticPersistentTileScheduler``). Blackwell's GEMMs
    take their tiles by cluster launch control (sm100_tile_scheduler.hpp
    ``PersistentTileSchedulerSm100``), which lets running workers take the tiles of SMs
    another kernel holds: they lose only those SMs' share (``sm_share``). That cuBLAS's
    Hopper kernels, which Transformer Engine calls, schedule as CUTLASS's do is assumed
    (cuBLAS is closed source)."""
    return cfg.cluster.gpu.sm_arch == 90


UB_RS_SITES = {"proj": "out_proj", "fc2": "fc2"}
"""Transformer Engine's ub_cfgs names of the two forward GEMMs whose output the TP overlap
reduce-scatters (``proj_fprop``, ``fc2_fprop``), and trainsim's names of those GEMMs."""

UB_RS_METHODS = ("pipeline", "atomic", "ring_exchange")


def ub_rs_sites(cfg: RunConfig) -> dict[str, tuple[str, int]]:
    """How the framework's ub_cfgs run each forward reduce-scatter overlap (profile feature
    ``ub_rs_overlap``): trainsim's GEMM name -> (method, SMs the communication takes from the
    GEMM under ``set_sm_margin`` 1). Empty where the profile states none: every such GEMM is
    then priced as TE's default ``pipeline`` on ``UB_COMM_SMS``. Methods (TE v1.x
    pytorch/csrc/comm_gemm_overlap.h): ``pipeline`` (``split_overlap_rs``: ``num_splits``
    GEMMs, chunk i reduce-scattered by communication kernels beside chunk i + 1); ``atomic``
    (``atomic_gemm_overlap_rs``: one GEMM kernel that raises a counter per finished chunk, the
    same communication kernels waiting on it); ``ring_exchange`` (``UbufP2PCommOverlap::
    split_overlap_rs``, v1.11 L1159-L1257: tp GEMM chunks, each chunk's partial output sent to
    its owner by the copy engines once done, then one kernel summing the tp partials)."""
    if cfg.parallel.tp_comm_overlap_method != "userbuffers":
        return {}
    t = cfg.training
    value: Any = framework_feature(t.framework, t.framework_version, "ub_rs_overlap") \
        if t.framework else None
    if not value:
        return {}
    return {UB_RS_SITES[site]: (str(v["method"]), int(v["num_sm"])) for site, v in value.items()}


def ring_rs_exposed(comm_s: float, gemm_s: float, tp: int) -> float:
    """Time Transformer Engine's ring-exchange reduce-scatter overlap adds after its GEMM
    (before the partials' sum): tp GEMM chunks of ``gemm_s / tp``, the rank's own chunk last;
    after each of the first tp - 1 chunks its partial output, ``comm_s / (tp - 1)``, is sent by
    the copy engines, one send after another on one stream (``_stream_send``), so the sends end
    at ``gemm_s / tp + comm_s`` against the GEMM's ``gemm_s``."""
    return max(0.0, gemm_s / tp + comm_s - gemm_s) if tp > 1 else 0.0


def on_fixed_grid(op: Op) -> bool:
    """Whether ``op`` runs on the fixed grid of ``parallel.fp8_gemm_grid_excludes_exchange``:
    an fp8 GEMM (DeepGEMM's dense and m-grouped kernels). DeepSeek's trace launches its
    16-bit GEMMs (the router's) on cuBLAS grids of other sizes ([28,4,1], [32,2,1])."""
    return isinstance(op, Gemm) and op.dtype == "fp8"


def fixed_grid_scale(cfg: RunConfig) -> float:
    """Time of an fp8 GEMM on the fixed grid over its time on all SMs: ``num_sms /
    (num_sms - exchange_sms)`` (132/112 on an H800 beside DeepEP's 20) under
    ``parallel.fp8_gemm_grid_excludes_exchange``, else 1. A persistent kernel's tiles are
    spread over its grid's CTAs, one per SM, so its compute-bound time goes as the SMs it
    has. An exchange beside it then holds SMs outside the grid: it slows only the compute
    off the grid (``pricing.Pricer._price_ops``' pooled charge times that compute's share)."""
    if not cfg.parallel.fp8_gemm_grid_excludes_exchange:
        return 1.0
    sms, held = cfg.cluster.gpu.num_sms, exchange_sms(cfg) or 0
    if held >= sms:  # no grid left (a GPU file of few SMs; RunConfig refuses a stated count)
        raise ConfigError(f"parallel.fp8_gemm_grid_excludes_exchange=true leaves the fp8 GEMMs "
                          f"no SM: the {cfg.parallel.moe_token_dispatcher_type} exchange holds "
                          f"{held} of cluster.gpu {cfg.cluster.gpu.name}'s {sms}")
    return sms / (sms - held)


__all__ = ["STATIC_TILE_GEMM_SHARE", "TE_PIPELINE_SPLITS", "UB_COMM_SMS", "UB_RS_METHODS",
           "UB_RS_SITES", "beside_all_sms", "fixed_grid_scale", "on_fixed_grid",
           "pipeline_rs_exposed", "ring_rs_exposed", "static_tile_schedule", "ub_rs_sites"]
