"""Framework rules read off a profile for one run: whether a flex dispatcher backend runs on a
GPU, whether pipeline sends overlap, and where layers that do not split evenly over the pipeline
stages go. Queries over ``catalog.frameworks``' profiles; split from that module to keep it short.
"""

from __future__ import annotations

import functools
from typing import Any

from trainsim.catalog.frameworks import framework_feature, framework_profile, profile_supports


def flex_backend_runs(framework: str | None, version: str | None, dispatcher: str,
                      gpu_name: str, sm_arch: int | None) -> bool:
    """Whether the framework at ``version`` lets the flex dispatcher's ``dispatcher`` backend
    (``deepep``, ``hybridep``) run on this GPU: profile ``flex_backend_gpus`` maps a backend to
    the GPUs its release accepts, each a catalog GPU name or a compute-capability major
    (``cc9``: every sm_9x); a backend it does not list, or a profile without the feature, is
    not restricted here (``config.validity.dispatcher_runs_on`` still asks for the kernels'
    architecture). Megatron-Bridge checks the device before it builds the model
    (src/megatron/bridge/training/flex_dispatcher_backend.py
    ``validate_flex_dispatcher_backend``, raising ValueError)."""
    if not framework:
        return True
    allowed = (framework_feature(framework, version, "flex_backend_gpus") or {}).get(dispatcher)
    if allowed is None:
        return True
    major = None if sm_arch is None else f"cc{sm_arch // 10}"
    return gpu_name in allowed or (major is not None and major in allowed)


def sends_overlap(cfg: Any) -> bool:
    """Whether the run's pipeline sends go on a stream of their own (``overlap_p2p_comm``) as
    its framework runs them: Megatron's schedule without interleaving sends blocking whatever
    the flag says (profile feature ``p2p_overlap_interleaved_only``: Megatron-core's
    forward_backward_pipelining_without_interleaving raises on the flag, Megatron-LM's
    arguments.py turns it off). Other schedules (zero bubble, DualPipe) keep the flag;
    ``parallel.vpp`` is the resolved count (a layout's virtual stages included)."""
    p = cfg.parallel
    return p.overlap_p2p_comm and not sends_block(
        p.vpp, p.pipeline_schedule, profile_supports(cfg, "p2p_overlap_interleaved_only"))


def sends_block(vpp: int, schedule: str | None, interleaved_only: bool) -> bool:
    """Whether pipeline sends block whatever overlap_p2p_comm says: Megatron's schedule
    without interleaving (``vpp`` 1, ``schedule`` None, "" or 1f1b: the search's and the
    config's spellings of the default) on a framework whose profile has
    ``p2p_overlap_interleaved_only`` (``interleaved_only``; see ``sends_overlap``)."""
    return interleaved_only and vpp <= 1 and schedule in (None, "", "1f1b")


@functools.cache
def uneven_layout(framework: str | None, version: str | None, mtp: bool = False) -> str:
    """The ``pipeline_model_parallel_layout`` rule that places layers which do not split
    evenly over the (virtual) pipeline stages of a run on ``framework`` at ``version``:
    ``front_loaded`` where the profile's ``uneven_pipeline`` says so (NeMo Automodel; the
    same stages as the even split where the layers divide); for a model with MTP layers
    (``mtp``) the profile's ``mtp_uneven_pipeline`` where it names one (Megatron-Bridge's
    ``filled``: ``config.layout.filled_layout``); else ``balanced`` (the hand-written
    layouts of Megatron recipes, and a run that names no framework)."""
    if not framework:
        return "balanced"
    features = framework_profile(framework, version).features
    if features.get("uneven_pipeline") == "front_loaded":
        return "front_loaded"
    if mtp and features.get("mtp_uneven_pipeline"):
        return str(features["mtp_uneven_pipeline"])
    return "balanced"


def uneven_split(rule: str, num_layers: int, pp: int, vpp: int) -> bool:
    """Whether ``num_layers`` need the uneven ``rule`` over pp*vpp (virtual) stages: the
    front-loaded split handles every count of virtual stages, so it is needed wherever they
    do not divide the layers; a balanced layout only where the pipeline stages do not."""
    return bool(num_layers % (pp * vpp if rule == "front_loaded" else pp))


def deferred_microbatches(cfg: Any, m: int) -> int:
    """How many of a step's ``m`` micro-batches leave their output-layer weight gradient (and
    its sequence-parallel re-gather) to the last stage's drain after the schedule: Megatron-core's
    ``defer_embedding_wgrad_compute``, the first ``wgrad_deferral_limit`` micro-batches (0: all;
    Megatron-LM 24.09-alpha.rc0 tensor_parallel/layers.py L426-428 appends a backward's
    output gradient while the buffer is under the limit). Where the run does not set it, the
    profile's rule (``embedding_wgrad_deferral``); none without pipeline parallelism (NeMo
    skips it there, Megatron-core refuses it)."""
    p = cfg.parallel
    on = p.defer_embedding_wgrad_compute
    if p.pp == 1 or on is False:
        return 0
    if on is None:
        t = cfg.training
        rule = framework_feature(t.framework, t.framework_version,
                                 "embedding_wgrad_deferral") if t.framework else None
        if not rule or t.micro_batch_size != rule["micro_batch_size"] or \
                t.global_batch_size // cfg.dp > rule["max_local_batch"]:
            return 0
    return m if p.wgrad_deferral_limit == 0 else min(p.wgrad_deferral_limit, m)
