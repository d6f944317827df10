"""RunConfig: model + parallel + training + cluster, with the cross-field checks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import get_args, get_type_hints

from trainsim.config._build import fields_state
from trainsim.config.cached import cached
from trainsim.config.cluster import ClusterConfig
from trainsim.config.layout import (
    balanced_layout,
    check_layout,
    even_layout,
    filled_layout,
    front_loaded_layout,
    parse_layout,
)
from trainsim.config.model import ModelConfig
from trainsim.config.parallel import ANY_CHUNKS, V_SCHEDULES, ParallelConfig
from trainsim.config.run_checks import _ONE_VENDOR, check_microbatch_group, field_checks
from trainsim.config.training import TrainingConfig
from trainsim.config.validity import DISPATCHER_MIN_SM, dispatcher_fits, dispatcher_runs_on
from trainsim.errors import ConfigError

__all__ = ["_ONE_VENDOR", "RunConfig", "check_microbatch_group", "field_checks", "text_field"]
# config.run_checks (split63): the checks that are whole functions of the parts, re-exported


@dataclass(frozen=True)
class RunConfig:
    model: ModelConfig
    parallel: ParallelConfig
    training: TrainingConfig
    cluster: ClusterConfig

    def __post_init__(self) -> None:
        self._field_checks()
        self._scaled_checks()

    @classmethod
    def fields_checked(cls, model: ModelConfig, parallel: ParallelConfig,
                       training: TrainingConfig, cluster: ClusterConfig) -> RunConfig:
        """The RunConfig of these parts with only the checks from the first that reads the
        micro-batch size or the GPU count on (:meth:`_scaled_checks`), for a caller that has
        built a RunConfig of the same ``model`` and ``parallel`` whose training and cluster
        differ from these in ``micro_batch_size`` and ``num_gpus`` at most (a search's memory
        groups of one parallel config): :meth:`_field_checks` and the checks after it that read
        neither passed for that config, so they pass for these, and whatever these parts fail,
        the same first check refuses them (the others run in their order). The 22B search's
        13,248 groups have 3,416 parallel configs."""
        cfg = object.__new__(cls)
        d = cfg.__dict__  # a frozen dataclass's fields (as its __init__ sets them)
        d["model"], d["parallel"], d["training"], d["cluster"] = model, parallel, training, cluster
        cfg._scaled_checks(fields=False)
        return cfg

    def _field_checks(self) -> None:
        """The checks before the first that reads the micro-batch size or the GPU count (all of
        them read the model, the parallel config, the training but for its micro-batch size and
        the cluster's GPU alone: :meth:`fields_checked`)."""
        m, p, t, c = self.model, self.parallel, self.training, self.cluster
        if not (isinstance(m, ModelConfig) and isinstance(p, ParallelConfig)
                and isinstance(t, TrainingConfig) and isinstance(c, ClusterConfig)):
            for name, cls in (("model", ModelConfig), ("parallel", ParallelConfig),
                              ("training", TrainingConfig), ("cluster", ClusterConfig)):
                if not isinstance(getattr(self, name), cls):
                    raise ConfigError(f"RunConfig.{name} must be a {cls.__name__}, got "
                                      f"{type(getattr(self, name)).__name__}")
        field_checks(m, p, t, c)

    def _scaled_checks(self, fields: bool = True) -> None:
        """The checks from the first that reads the micro-batch size or the GPU count on, in
        their order; ``fields=False``: without those among them that read neither (for
        :meth:`fields_checked`, whose caller's config passed them)."""
        m, p, t, c = self.model, self.parallel, self.training, self.cluster
        model_ranks = p.tp * p.pp * p.cp
        if c.num_gpus % model_ranks:
            raise ConfigError(
                f"cluster.num_gpus={c.num_gpus} is not divisible by tp*pp*cp="
                f"{p.tp}*{p.pp}*{p.cp}={model_ranks}; change the GPU count or the parallel sizes")
        # Megatron-core (core_r0.11.0 and later parallel_state.py initialize_model_parallel:
        # "(data_parallel_size * context_parallel_size) % num_distributed_optimizer_instances
        # == 0"; core_r0.10.0 asserted dp alone) splits the dp x cp group into instances;
        # FSDP's and torchtitan's meshes split the data-parallel ranks (torchtitan
        # parallel_dims.py: dp_replicate * dp_shard * cp * tp * pp = world). One exception is
        # not modelled: Megatron-core core_r0.10.0 asserted dp % instances alone, so a 0.10 run
        # whose instances divide dp*cp but not dp passes here though that release refused it
        # (the config holds no framework release to key the rule by)
        megatron = p.data_parallel_impl == "megatron"
        if fields and t.use_precision_aware_optimizer and not (megatron and p.shards_optimizer):
            # Megatron-LM@2edffadb optimizer_config.py L394-399: "--use-precision-aware-optimizer
            # only supported with distributed optimizer" (Megatron-core's own, TE FusedAdam)
            raise ConfigError("training.use_precision_aware_optimizer needs Megatron-core's "
                              "distributed optimizer (parallel.data_parallel_impl=megatron, "
                              "distributed_optimizer=true)")
        if (fields and t.use_precision_aware_optimizer and t.dtype == "fp8"
                and t.fp8_recipe == "delayed" and t.fp8_param_gather):
            # Megatron-LM@2edffadb distrib_optimizer.py L366-370/L451-454 hand the Float8Tensor
            # shards to TE FusedAdam, whose nominal dtype bf16 makes it keep int16 remainders
            # (TE v2.14 fused_adam.py L611); adam.cu L808 wants an fp32 master for fp8 params
            raise ConfigError("training.use_precision_aware_optimizer with fp8_recipe=delayed and "
                              "fp8_param_gather fails at the first step (TE FusedAdam keeps int16 "
                              "remainders of the fp8 weights; transformer_engine/common/"
                              "multi_tensor/adam.cu L808 needs an fp32 master); drop one of them")
        split, what = ((self.dp * p.cp, "dp*cp") if megatron else (self.dp, "dp"))
        if split % p.dp_replicate:
            raise ConfigError(f"parallel.dp_replicate={p.dp_replicate} does not divide "
                              f"{what}={split} (dp = num_gpus / (tp*pp*cp)); each replica "
                              f"shards the state over {what} / dp_replicate ranks")
        if p.dp_replicate > 1 and self.shard_ranks == 1:
            raise ConfigError(f"parallel.dp_replicate={p.dp_replicate} leaves one rank per "
                              "replica, nothing sharded: that is plain data parallelism: use "
                              "zero_stage 0 and dp_replicate 1")
        if fields and p.dp_replicate > 1 and m.is_moe:
            raise ConfigError(f"parallel.dp_replicate={p.dp_replicate} with an MoE model: how "
                              "HSDP shards the routed experts (torchtitan's dp_shard_mod_ep, "
                              "Megatron's expert instances) is not modelled; use dp_replicate=1")
        per_step = t.micro_batch_size * self.dp
        if t.global_batch_size % per_step:
            raise ConfigError(
                f"training.global_batch_size={t.global_batch_size} is not divisible by "
                f"micro_batch_size*dp={t.micro_batch_size}*{self.dp}={per_step}")
        if fields and p.cp > 1 and p.cp_comm_type == "a2a" and \
                m.num_attention_heads % (p.tp * p.cp):
            raise ConfigError(f"cp_comm_type=a2a (Ulysses) shards attention heads over tp*cp="
                              f"{p.tp}*{p.cp}: model.num_attention_heads={m.num_attention_heads} "
                              "must be divisible by it; use p2p (ring attention) instead")
        stage_layers = self.stage_layer_counts if fields else ()  # validates the split
        if p.vpp > 1 and fields and self._layout is None and any(n % p.vpp for n in stage_layers):
            raise ConfigError(
                f"layers per pipeline stage {sorted(set(stage_layers))} (model.num_layers="
                f"{m.num_layers} over parallel.pp={p.pp}) are not divisible by "
                f"parallel.virtual_pipeline_model_parallel_size={p.vpp}")
        local = t.local_batch_size
        if local is not None and (local % t.micro_batch_size or
                                  (t.global_batch_size // self.dp) % local):
            raise ConfigError(
                f"training.local_batch_size={local} must be a multiple of micro_batch_size="
                f"{t.micro_batch_size} dividing the {t.global_batch_size // self.dp} sequences "
                "of each data-parallel rank")
        m_ = self.schedule_microbatches
        if p.pipeline_schedule in ("dualpipe", "dualpipe_v") and p.pp > 1:
            need = 2 * p.pp
            if m_ < need or (p.pipeline_schedule == "dualpipe" and m_ % 2):
                raise ConfigError(
                    f"parallel.pipeline_schedule={p.pipeline_schedule} needs at least 2*pp={need} "
                    f"micro-batches{' (an even number)' if p.pipeline_schedule == 'dualpipe' else ''}"
                    f", not {m_} (deepseek-ai/DualPipe asserts it); raise the global batch or "
                    "lower the micro-batch size")
        if p.vpp > 1 and p.pipeline_schedule in (None, "interleaved_1f1b"):
            check_microbatch_group(p, m_)
        elif p.vpp > 1 and p.pipeline_schedule not in V_SCHEDULES + ANY_CHUNKS and m_ % p.pp:
            raise ConfigError(
                f"interleaved 1F1B needs the number of micro-batches ({self.num_microbatches}) to be "
                f"a multiple of pipeline_model_parallel_size={p.pp}")
        if fields and p.cpu_offloading_num_layers >= m.num_layers:
            raise ConfigError(f"parallel.cpu_offloading_num_layers={p.cpu_offloading_num_layers}"
                              f" must be below model.num_layers={m.num_layers} (Megatron-core)")
        if fields and p.cpu_offloading_num_layers and self.training.cuda_graphs:
            # megatron/core/transformer/transformer_config.py: first in core_v0.11.0 L822-824
            # (enable_cuda_graph; core_v0.16.0 L1716-1723 any cuda_graph_impl). core_v0.7.0 to
            # core_v0.10.0 had enable_cuda_graph without this check: trainsim refuses the pair
            # for them too (graphs over offloaded layers are not modelled)
            raise ConfigError("parallel.cpu_offloading_num_layers needs training.cuda_graphs="
                              "false (Megatron-core core_v0.11.0 on: CUDA graphs are not "
                              "supported with CPU offloading; not modelled for older releases)")
        if fields and not m.is_moe and (p.ep > 1 or p.etp > 1):
            raise ConfigError("parallel.ep / expert_tensor_parallel_size > 1 need a mixture-of-"
                              "experts model (model.num_experts)")
        if m.is_moe:
            if fields and m.parallel_block:
                raise ConfigError("model.parallel_block with mixture-of-experts layers is not "
                                  "modelled; set parallel_block=false")
            if fields and m.moe_pad_expert_input_to_capacity and \
                    p.moe_token_dispatcher_type == "deepep":
                # Megatron-core transformer_config.py (core_v0.14.0-core_v0.19.0): "Flex token
                # dispatcher with deepep backend does not support moe_pad_expert_input_to_capacity"
                # (HybridEP accepts it from core_v0.16.0, its first release)
                raise ConfigError("model.moe_pad_expert_input_to_capacity is not supported by "
                                  "parallel.moe_token_dispatcher_type='deepep' (Megatron-core "
                                  "refuses it); use alltoall, allgather or hybridep")
            if fields and not dispatcher_fits(p.moe_token_dispatcher_type, p.ep * p.etp,
                                              p.flex_two_ranks):
                # Megatron-core transformer/moe/token_dispatcher.py MoEFlexTokenDispatcher:
                # assert tp_size * ep_size > 1, "Flex token dispatcher requires TPxEP > 1" (its
                # tp the expert TP; group tp_ep); from core_v0.18.0 (8c5cf05ece, 2026-04-28)
                # for the deepep and ncclep backends only, after deepseek-ai/DeepEP hybrid-ep
                # a0d27f1 (2026-03-31) dropped HybridEPBuffer's "at least 2 ranks". The
                # profile's feature flex_dispatchers_two_ranks names them (config.validity).
                where = f"{t.framework} {t.framework_version or ''}".strip()
                raise ConfigError(f"parallel.moe_token_dispatcher_type={p.moe_token_dispatcher_type}"
                                  f" needs ep*expert_tensor_parallel_size >= 2 in {where}, not "
                                  f"{p.ep}*{p.etp}; use alltoall or allgather")
            if fields and not dispatcher_runs_on(p.moe_token_dispatcher_type,
                                                 self.cluster.gpu.sm_arch):
                # DeepEP hybrid-ep's TMA kernels (config.validity.DISPATCHER_MIN_SM)
                raise ConfigError(f"parallel.moe_token_dispatcher_type={p.moe_token_dispatcher_type}"
                                  f" needs an NVIDIA GPU of sm_"
                                  f"{DISPATCHER_MIN_SM[p.moe_token_dispatcher_type]} or newer, not "
                                  f"{self.cluster.gpu.name}; use alltoall, allgather or deepep")
            if fields and m.num_experts % p.ep:
                raise ConfigError(f"parallel.ep={p.ep} does not divide model.num_experts="
                                  f"{m.num_experts}")
            if (p.tp * p.cp * self.dp) % (p.ep * p.etp):
                raise ConfigError(f"parallel.ep*etp={p.ep}*{p.etp} must divide tp*cp*dp="
                                  f"{p.tp}*{p.cp}*{self.dp} (experts are spread over those ranks)")
            if fields and m.expert_ffn_size % p.etp:
                raise ConfigError(f"parallel.expert_tensor_parallel_size={p.etp} does not divide "
                                  f"model.moe_ffn_hidden_size={m.expert_ffn_size}")
            if fields and p.tp > 1 and not p.sequence_parallel:
                raise ConfigError("MoE with tp > 1 needs parallel.sequence_parallel=true "
                                  "(as Megatron-core requires)")

    __getstate__ = fields_state  # what the cached properties keep is not pickled

    @cached
    def dp(self) -> int:  # kept once read: a config is frozen
        p = self.parallel
        return self.cluster.num_gpus // (p.tp * p.pp * p.cp)

    @property
    def shard_ranks(self) -> int:
        """Ranks the non-expert model state is sharded over (the ``dp_cp`` group): one
        replica's share of the dp x cp ranks (torchtitan's dp_shard_cp mesh, Megatron's
        intra-partial data-parallel group with CP: dp*cp / num_distributed_optimizer_instances)."""
        return self.dp * self.parallel.cp // self.parallel.dp_replicate

    @property
    def num_microbatches(self) -> int:
        """Micro-batches per pipeline per iteration (gradient-accumulation steps)."""
        return self.training.global_batch_size // (self.training.micro_batch_size * self.dp)

    @property
    def schedule_steps(self) -> int:
        """Pipeline schedule steps per iteration: the rank's batch over
        ``training.local_batch_size`` where that is given and the run is pipelined, else 1."""
        t = self.training
        if t.local_batch_size is None or self.parallel.pp == 1:
            return 1
        return max(1, t.global_batch_size // self.dp // t.local_batch_size)

    @property
    def schedule_microbatches(self) -> int:
        """Micro-batches per pipeline schedule step: ``num_microbatches`` over
        ``schedule_steps`` (all of them where the schedule runs once per iteration). What one
        step holds in flight, and so the memory peak, depends on this count, not the
        iteration's."""
        return self.num_microbatches // self.schedule_steps

    @cached
    def _layout(self) -> tuple[str, ...] | None:
        """Slots of each virtual stage when a layout places the layers, else None."""
        p, m = self.parallel, self.model
        if p.pipeline_model_parallel_layout == "balanced":
            return balanced_layout(m.num_layers, m.mtp_num_layers, p.pp, p.vpp)
        if p.pipeline_model_parallel_layout == "front_loaded":
            return front_loaded_layout(m.num_layers, m.mtp_num_layers, p.pp, p.vpp)
        if p.pipeline_model_parallel_layout == "filled":
            return filled_layout(m.num_layers, m.mtp_num_layers, p.pp, p.vpp)
        if p.pipeline_model_parallel_layout is not None:
            stages = parse_layout(p.pipeline_model_parallel_layout)
            check_layout(stages, p.pipeline_model_parallel_layout, m.num_layers,
                         m.mtp_num_layers, p.pp, p.vpp)
            return stages
        if p.account_for_embedding_in_pipeline_split or p.account_for_loss_in_pipeline_split:
            return even_layout(m.num_layers, m.mtp_num_layers, p.pp, p.vpp,
                               p.account_for_embedding_in_pipeline_split,
                               p.account_for_loss_in_pipeline_split)
        return None

    @property
    def stage_layer_counts(self) -> tuple[int, ...]:
        """Transformer layers on each pipeline stage (Megatron's uneven-split options)."""
        p, n = self.parallel, self.model.num_layers
        if self._layout is not None:
            counts = [0] * p.pp
            for v, slots in enumerate(self._layout):
                counts[v % p.pp] += slots.count("t")
            return tuple(counts)
        first, last = p.decoder_first_pipeline_num_layers, p.decoder_last_pipeline_num_layers
        middle_stages = p.pp - (first is not None) - (last is not None)
        rest = n - (first or 0) - (last or 0)
        # Megatron-core transformer_config.py (core_v0.19.0, "Uneven PP"): the layers left
        # after the first/last stage's must fill the middle stages, or there are neither
        # (pp 1 with first = num_layers is accepted, an empty middle stage is not)
        if rest < 0 or middle_stages < 0 or bool(rest) != bool(middle_stages):
            given = ", ".join(f"decoder_{k}_pipeline_num_layers={v}" for k, v in
                              (("first", first), ("last", last)) if v is not None)
            raise ConfigError(f"parallel.{given} (or pipeline_model_parallel_layout first:N,"
                              f"last:M) leaves {rest} layers of model.num_layers={n} for "
                              f"{middle_stages} middle stages of pp={p.pp}; give each stage "
                              "at least one layer")
        if p.pp == 1:
            return (n,)
        if middle_stages and rest % middle_stages:
            if first is None and last is None:
                raise ConfigError(
                    f"parallel.pp={p.pp} does not divide model.num_layers={n}; set "
                    "pipeline_model_parallel_layout (or decoder_first_pipeline_num_layers / "
                    "decoder_last_pipeline_num_layers, or account_for_embedding/"
                    "loss_in_pipeline_split) for an uneven split")
            given = ", ".join(f"decoder_{k}_pipeline_num_layers={v}" for k, v in
                              (("first", first), ("last", last)) if v is not None)
            raise ConfigError(f"parallel.{given} leaves {rest} layers of model.num_layers={n} "
                              f"for {middle_stages} middle stages of pp={p.pp}, which do not "
                              "split evenly; change it or the layer count")
        each = rest // middle_stages if middle_stages else 0
        counts = [each] * p.pp
        if first is not None:
            counts[0] = first
        if last is not None:
            counts[-1] = last
        return tuple(counts)

    @property
    def edp(self) -> int:
        """Expert data-parallel size: ranks holding the same experts (Megatron-core)."""
        p = self.parallel
        return p.tp * p.cp * self.dp // (p.ep * p.etp)

    def virtual_stage_layers(self) -> list[range]:
        """Global layer indices of each virtual stage v = chunk * pp + stage (Megatron order:
        chunk 0 of every stage, then chunk 1, ...)."""
        return list(self.virtual_ranges)

    @cached
    def virtual_ranges(self) -> tuple[range, ...]:
        """:meth:`virtual_stage_layers` as a tuple, computed once per config (hashable: a
        cache key for what depends only on where the layers are). It reads the parallel config
        and the model only: kept in the parallel config's ``__dict__`` beside the model it was
        worked out for (not a field: not compared, not pickled, ``fields_state``), so the
        configs that share both (a search's groups of one parallel config over micro-batches
        and GPU counts: 5,789 configs, 3,416 parallel configs in the 22B one) work it out once."""
        p = self.parallel
        kept = p.__dict__.get("_virtual_ranges")
        if kept is not None and kept[0] is self.model:
            return kept[1]
        if self._layout is not None:
            sizes = [slots.count("t") for slots in self._layout]
        else:
            counts = self.stage_layer_counts
            # a V (zb_v, dualpipe_v) puts virtual stage v >= pp on rank 2pp - 1 - v
            v_shape = p.pipeline_schedule in ("zb_v", "dualpipe_v")
            sizes = [counts[2 * p.pp - 1 - v if v_shape and v >= p.pp else v % p.pp] // p.vpp
                     for v in range(p.pp * p.vpp)]
        out, start = [], 0
        for n in sizes:
            out.append(range(start, start + n))
            start += n
        ranges = tuple(out)
        p.__dict__["_virtual_ranges"] = (self.model, ranges)
        return ranges

    @cached
    def recomputed_layers(self) -> frozenset[int]:
        """Layers whose whole forward is re-run before their backward (full recompute: the
        first ``recompute_num_layers`` of every model chunk, or all of them)."""
        p = self.parallel
        if p.recompute != "full":
            return frozenset()
        n = p.recompute_num_layers
        return frozenset(i for r in self.virtual_ranges for i in (r if n is None else r[:n]))

    @cached
    def bf16_layers(self) -> frozenset[int]:
        """Global indices of the transformer layers kept in 16 bits under fp8 or NVFP4
        (``training.num_layers_at_start_in_bf16`` / ``num_layers_at_end_in_bf16``, Megatron-core's
        ``is_first_last_bf16_layer``); empty without fp8."""
        t, n = self.training, self.model.num_layers
        if t.dtype != "fp8":
            return frozenset()
        start, end = t.num_layers_at_start_in_bf16, t.num_layers_at_end_in_bf16
        return frozenset(i for i in range(n) if i < start or i >= n - end)

    @property
    def mtp_recomputed(self) -> bool:
        """Whether full recompute re-runs the MTP modules (their ``eh_proj`` and layer): only
        under Megatron-core's uniform method, here every layer recomputed (``recompute_num_layers``
        None); the block method skips them ("recompute_method == 'block' is not supported for
        MTP yet. Skipping recompute.", core_v0.14.0 megatron/core/transformer/
        multi_token_prediction.py ``_checkpointed_forward`` of ``_proj_and_transformer_layer``)."""
        return self.parallel.recompute == "full" and self.parallel.recompute_num_layers is None

    @property
    def tokens_per_iteration(self) -> int:
        return self.training.global_batch_size * self.training.seq_length


def text_field(path: str) -> bool:
    """Whether ``path`` (``section.field``, as ``--set`` and ``--vary`` take it) is a field
    of text only (``training.framework_version``: ``str | None``), so a value written as a
    number there is its text (0.10 is Megatron-core 0.10, not the number 0.1)."""
    section, _, name = path.partition(".")
    hints = get_type_hints(RunConfig)
    kind = hints.get(section)
    if kind is None or "." in name or not hasattr(kind, "__dataclass_fields__"):
        return False
    field = get_type_hints(kind).get(name)
    if field is None:
        return False
    kinds = set(get_args(field)) or {field}
    return str in kinds and not kinds & {int, float, bool}

