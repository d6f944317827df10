"""What ``training.framework`` does to a run config as it is read
(``catalog.run_config_from_dict``): the dropouts and MTP layers its model class builds, the
fp8-only settings a 16-bit run states and ignores, the output-layer deferral settings a run
states where nothing defers or its framework cannot, graph scopes its framework lacks, and a
dense model's MoE-only settings refused."""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import warnings
from typing import Any

from trainsim.catalog.defaults import apply_framework, framework_dropouts
from trainsim.catalog.raw_values import given as _given
from trainsim.config import ModelConfig, RunConfig, TrainingConfig
from trainsim.config._build import build
from trainsim.config.training import FP8_ONLY_SETTINGS, fp8_recipe_ignored
from trainsim.errors import ConfigError, TrainsimError


def dense_moe_settings(cfg: RunConfig, parallel_raw: dict[str, Any],
                        training_raw: dict[str, Any], gpu_name: Any) -> None:
    """Refuse a dense model's own MoE-only parallel settings (``validity.moe_dense_problem``)."""
    from trainsim.config.validity import MOE_ONLY_PARALLEL, moe_dense_problem

    given = {k: getattr(cfg.parallel, k) for k in MOE_ONLY_PARALLEL if k in parallel_raw}
    if not given or not moe_dense_problem(given, {}):
        return  # (a row writes its switches off for every run: the profile read only here)
    filled: dict[str, Any] = {}
    with contextlib.suppress(ConfigError), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        apply_framework(filled, copy.deepcopy(training_raw), gpu_name)
    if problem := moe_dense_problem(given, filled):
        raise ConfigError(problem)


def fp8_settings_ignored(parallel_raw: dict[str, Any], training_raw: dict[str, Any],
                         gpu_name: Any, training: TrainingConfig) -> list[str]:
    """The warnings for the fp8-only settings (``FP8_ONLY_SETTINGS``) a 16-bit run's config
    states (``training_raw``, before a framework fills it; ``training``, the section built):
    the recipe where stated, the others where they ask for something (a switch on, a count
    above 0). One stated at the value the run would hold had its config not stated it (the
    framework's default, else ``TrainingConfig``'s) changes nothing and is not warned of
    (robust52: every resolved config of a 16-bit run states the recipe it holds, and a
    torchtitan one ``fp8_param_gather: true``)."""
    if training.dtype == "fp8":
        return []
    stated = {k: training_raw[k] for k in FP8_ONLY_SETTINGS if _given(training_raw.get(k))
              and (k == "fp8_recipe" or getattr(training, k))}
    if not stated:
        return []
    return [msg for k, v in stated.items()
            if getattr(training, k) != _unstated(parallel_raw, training_raw, gpu_name, k)
            and (msg := fp8_recipe_ignored(v, training.dtype, k)) is not None]


def stated_deferral_problem(defer: object, training: TrainingConfig) -> str | None:
    """Why a stated ``parallel.defer_embedding_wgrad_compute`` (``defer``) cannot be, or None:
    on where the framework has no such deferral (profile feature ``output_wgrad_deferral``
    false: torchtitan, DeepSpeed, Megatron releases before it; robust58 lead 1: it was priced
    as Megatron-core's), or beside ``training.gradient_accumulation_fusion: false`` (Megatron-LM
    7094270c6f model_parallel_config.py L372-376 refuses the pair, whatever the pipeline: the
    drain accumulates into main_grad with the fused wgrad GEMM; robust58 lead 2: refused only
    when priced). Read by the config loader (:func:`deferral_settings`) and by ``search`` for
    a --set value (``search.cli_inputs``)."""
    if defer is not True:
        return None
    if training.framework:
        from trainsim.catalog.frameworks import framework_profile

        profile = framework_profile(training.framework, training.framework_version)
        if profile.supports("output_wgrad_deferral") is False:
            return ("parallel.defer_embedding_wgrad_compute=true but "
                    f"{profile.name} {training.framework_version or profile.version} has no "
                    "output-layer weight-gradient deferral (Megatron-core's, from Megatron-LM "
                    "f16be74ff3, 2024-04-03; profile feature output_wgrad_deferral: false); "
                    "set it false")
    if training.gradient_accumulation_fusion is False:
        return ("parallel.defer_embedding_wgrad_compute=true needs gradient accumulation "
                "fusion, and training.gradient_accumulation_fusion is false (Megatron-core "
                "refuses the pair); set one of them the other way")
    return None


def deferral_settings(parallel_raw: dict[str, Any], cfg: RunConfig) -> list[str]:
    """Check Megatron-core's output-layer deferral settings as a config is read
    (``parallel_raw``: the parallel section as written): a stated deferral refused where
    :func:`stated_deferral_problem` says why, and a deferral the profile's rule makes
    (``framework_rules.deferred_microbatches``) beside the fusion stated off. Returned:
    warnings for settings that change nothing, ``defer_embedding_wgrad_compute: true``
    without pipeline parallelism (Megatron-core's ``__post_init__`` refuses it: "Cannot defer
    embedding wgrad compute when pipeline model parallel is not used"; nothing defers there),
    and a ``wgrad_deferral_limit`` where no micro-batch defers (robust58: both taken without a
    word)."""
    from trainsim.catalog.framework_rules import deferred_microbatches

    p, t, out = cfg.parallel, cfg.training, []
    stated = p.defer_embedding_wgrad_compute and "defer_embedding_wgrad_compute" in parallel_raw
    if stated and (problem := stated_deferral_problem(True, t)):
        raise ConfigError(problem)
    deferred = deferred_microbatches(cfg, cfg.num_microbatches)
    if deferred and t.gradient_accumulation_fusion is False:  # the profile's rule defers
        raise ConfigError(f"{t.framework} {t.framework_version or ''}".rstrip() + "'s recipe "
                          "defers the output-layer weight gradient here (parallel."
                          "defer_embedding_wgrad_compute unset), which needs gradient "
                          "accumulation fusion, and training.gradient_accumulation_fusion is "
                          "false; set parallel.defer_embedding_wgrad_compute=false")
    if stated and p.pp == 1:
        out.append("parallel.defer_embedding_wgrad_compute=true is ignored: it defers the last "
                   "pipeline stage's output-layer weight gradient, and parallel.pp=1 runs no "
                   "pipeline (Megatron-core refuses it there)")
    if p.wgrad_deferral_limit and "wgrad_deferral_limit" in parallel_raw and not deferred:
        out.append(f"parallel.wgrad_deferral_limit={p.wgrad_deferral_limit} is ignored: the run "
                   "defers no output-layer weight gradient (set "
                   "parallel.defer_embedding_wgrad_compute=true, with parallel.pp > 1)")
    return out


#: the scopes Megatron-core's ``CudaGraphScope`` brought (NVIDIA/Megatron-LM@2b343d739f,
#: 2025-12-30, first in core_v0.16.0): core_v0.15.0 asserts a TE-graphed scope is full or attn
#: (transformer/cuda_graphs.py L1357-1360); profile feature ``moe_graph_scopes``
LATE_GRAPH_SCOPES = ("mlp", "moe", "moe_router", "moe_preprocess", "mamba")


def graph_scopes_problem(raw: Any, profile: Any, where: str) -> None:
    """Refuse a stated ``training.cuda_graph_scope`` (``raw``, as written: text or a list)
    that ``profile`` cannot run: any scope where the framework has no Megatron-core
    ``cuda_graph_scope`` at all (profile feature ``graph_scopes`` false: DeepSpeed, torchtitan,
    Megatron-core before 0.12; robust59 lead 1: ``attn`` under DeepSpeed was priced as
    Megatron-core's layer scope), ``full_iteration`` where ``full_iteration_graph`` is false
    (core 0.12-0.13, NeMo 25.04-25.07: robust60 lead 1, priced as whole-layer graphs) and the
    later scopes (``LATE_GRAPH_SCOPES``) before ``moe_graph_scopes``. A name that is not text or not a scope is left to
    ``config.graph_scope``'s refusal, which lists the names."""
    items = raw.replace(";", ",").split(",") if isinstance(raw, str) else \
        raw if isinstance(raw, (list, tuple)) else ()
    names = list(dict.fromkeys(s.strip().lower() for s in items
                               if isinstance(s, str) and s.strip()))
    if not names:
        return
    from trainsim.catalog.frameworks import feature_source

    if profile.supports("graph_scopes") is False:
        raise ConfigError(f"training.cuda_graph_scope={','.join(names)} but {where} has no "
                          "cuda_graph_scope (Megatron-core's CUDA graphs of parts of a layer, "
                          "first in NVIDIA/Megatron-LM@a606486ece, 2025-03-18, core_v0.12.0; "
                          "profile feature graph_scopes: false); leave it unset")
    if "full_iteration" in names and profile.supports("full_iteration_graph") is False:
        raise ConfigError("training.cuda_graph_scope=full_iteration but "
                          f"{where} has no whole-iteration CUDA graph (it arrived in "
                          "Megatron-LM@e7c55de99e, 2025-08-01, first in core_v0.14.0; profile "
                          "feature full_iteration_graph: false); use full, or leave it unset")
    late = [s for s in names if s in LATE_GRAPH_SCOPES]
    if late and profile.supports("moe_graph_scopes") is False:
        raise ConfigError(f"training.cuda_graph_scope={','.join(names)} but {where} has no "
                          f"{', '.join(late)} graph scope (it arrived in Megatron-LM@2b343d739f, "
                          "2025-12-30, first in core_v0.16.0; source: "
                          f"{feature_source(profile, 'moe_graph_scopes')})")


def settings_ignored(parallel_raw: dict[str, Any], cfg: RunConfig) -> list[str]:
    """The warnings (and refusals) for a run's stated settings as its config is read: the
    output-layer deferral's (:func:`deferral_settings`), graph scopes that capture nothing
    (:func:`graph_scopes_ignored`) and a JAX remat policy outside JAX
    (:func:`remat_policy_ignored`)."""
    return [*deferral_settings(parallel_raw, cfg), *graph_scopes_ignored(cfg),
            *remat_policy_ignored(cfg)]


def remat_policy_ignored(cfg: RunConfig) -> list[str]:
    """The warning for a stated ``parallel.remat_policy`` (a JAX remat policy) under a framework
    whose recompute is not JAX's ``jax.checkpoint`` (profile feature ``remat_dce``), which
    ignores it (``workload.remat_policy.remat_policy``): a JAX row predicted under another
    framework's profile (``catalog.fallback``) recomputes as that framework does."""
    from trainsim.catalog.frameworks import profile_supports

    p, t = cfg.parallel, cfg.training
    if p.remat_policy is None or profile_supports(cfg, "remat_dce"):
        return []
    where = f"{t.framework} {t.framework_version or ''}".rstrip() if t.framework else \
        "a run without a framework"
    return [(f"parallel.remat_policy={p.remat_policy} is ignored: it names a JAX remat policy, "
             f"and {where} recomputes by modules (profile feature remat_dce off); "
             f"recompute={p.recompute} runs as its modules say")]


def graph_scopes_ignored(cfg: RunConfig) -> list[str]:
    """A warning where ``training.cuda_graph_scope`` names a layer kind the model lacks:
    ``mamba`` on a model with no Mamba layer (no ``M`` in ``model.hybrid_layer_pattern``),
    ``attn`` on a hybrid model with no attention layer. Megatron-core takes such a scope and
    graphs nothing under it (core_v0.16.0 transformer/cuda_graphs.py L1645-1647 graphs a
    ``MambaLayer`` whole under ``mamba``; a ``TransformerLayer`` graphs only the parts its
    scope names, transformer_layer.py), so a run that names only those runs eager (robust59:
    ``mamba`` on a GPT model was taken without a word, priced as the eager run). Scopes a
    model cannot take at all (``moe`` without experts) are refused (``config.graph_scope``)."""
    from trainsim.config.hybrid import ATTENTION, MAMBA

    scope, pattern = cfg.training.cuda_graph_scope, cfg.model.hybrid_layer_pattern
    if not scope or not cfg.training.cuda_graphs:
        return []
    kinds = {"mamba": (MAMBA, "Mamba"), "attn": (ATTENTION, "attention")}
    empty = [s for s in scope if s in kinds and (
        MAMBA not in (pattern or "") if s == "mamba" else
        pattern is not None and ATTENTION not in pattern.split("/")[0])]
    if not empty:
        return []
    rest = [s for s in scope if s not in empty]
    what = " and ".join(f"no {kinds[s][1]} layer" for s in empty)
    return [f"training.cuda_graph_scope names {', '.join(empty)}, which captures nothing here: "
            f"the model has {what} (model.hybrid_layer_pattern); "
            + (f"only {', '.join(rest)} is graphed" if rest else
               "no layer is graphed, the run is eager")]


def _unstated(parallel_raw: dict[str, Any], training_raw: dict[str, Any], gpu_name: Any,
              name: str) -> Any:
    """The value of training field ``name`` in the run built without the config's own (the
    rest as stated: the profile's fp8_param_gather follows the stated recipe); None where
    that run is refused."""
    rest = {k: v for k, v in training_raw.items() if k != name}
    with warnings.catch_warnings(), contextlib.suppress(TrainsimError):
        warnings.simplefilter("ignore")
        apply_framework(dict(parallel_raw), rest, gpu_name)
        return getattr(build(TrainingConfig, rest, "training"), name)
    return None


def framework_model(m: ModelConfig, raw: Any, training: dict[str, Any]) -> ModelConfig:
    """The model as ``training.framework`` builds it: with the dropouts the framework sets for
    its family where the run writes none (``defaults.framework_dropouts``); a framework whose
    model class has no multi-token-prediction module (profile feature ``mtp: false``) drops a
    preset's MTP layers; MTP layers the user asked for by name are a contradiction."""
    name = training.get("framework")
    if not _given(name):  # blank text is no framework (catalog.defaults.apply_framework)
        return m
    from trainsim.catalog.frameworks import framework_profile

    version = training.get("framework_version")
    profile = framework_profile(str(name), str(version) if _given(version) else None)
    m = framework_dropouts(m, raw, profile)
    if not m.mtp_num_layers or profile.supports("mtp") is not False:
        return m
    if isinstance(raw, dict) and "mtp_num_layers" in raw:
        raise ConfigError(f"model.mtp_num_layers={m.mtp_num_layers} but {profile.name} "
                          f"{profile.version} builds no multi-token-prediction layers (its "
                          "framework profile: mtp false)")
    return dataclasses.replace(m, mtp_num_layers=0)
