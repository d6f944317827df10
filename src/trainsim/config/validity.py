"""Rules that tie two fields together the way a framework refuses them, in one place: ``RunConfig``
raises on them, and the search (``search.rules``, ``search.cli_inputs._check_fixed``) skips or
refuses a ``--set`` with the same functions, so the two cannot drift.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trainsim.config.cluster import GPUSpec

ZERO_STAGES = {"megatron": (0, 1, 3), "deepspeed": (0, 1, 2, 3), "fsdp1": (2, 3),
               "fsdp2": (2, 3), "ddp": (0, 1)}
"""The ZeRO stages (``ParallelConfig.effective_zero_stage``) each data-parallel engine runs, as
``memory.state`` lays them out. ``megatron``: 0 = Megatron-core DDP, 1 = its distributed
optimizer (--use-distributed-optimizer), 3 = Megatron-FSDP (--use-custom-fsdp, later
--use-megatron-fsdp, with --data-parallel-sharding-strategy optim_grads_params: Megatron-LM
megatron/core/distributed/custom_fsdp/README.md, "ZeRO-3");
Megatron-FSDP's ``optim_grads`` (stage 2) is not modelled (``_megatron`` would price it as the
distributed optimizer). ``deepspeed``: ZeRO stages 0-3 (deepspeed/runtime/zero/config.py
ZeroStageEnum). ``fsdp1``: ShardingStrategy FULL_SHARD = 3 and SHARD_GRAD_OP = 2
(torch/distributed/fsdp/api.py; NO_SHARD is not modelled; the hybrid strategies HYBRID_SHARD and
_HYBRID_SHARD_ZERO2 are these stages with ``parallel.dp_replicate`` > 1); ``fsdp2``:
fully_shard(reshard_after_forward=True) = 3, False = 2
(torch/distributed/fsdp/_fully_shard/_fully_shard.py; torchtitan's reshard_after_forward policy
``always`` / ``never``). ``ddp``: torch DistributedDataParallel, 0: it shards nothing
(torch/nn/parallel/distributed.py: every rank holds the whole model and optimizer); 1: with
torch.distributed.optim.ZeroRedundancyOptimizer, which shards the optimizer state by whole
tensors and broadcasts each updated tensor from its owner after the step
(torch/distributed/optim/zero_redundancy_optimizer.py, ``workload.zero_redundancy``).
A framework profile names the engine its runs use (``data_parallel_impl``) and, where it runs a
stage that engine does not, the engine for it (``zero_stage_engines``: a plain PyTorch loop
runs ZeRO-2 and ZeRO-3 as FSDP); ``catalog.defaults.zero_engine`` applies both and refuses, in
one line naming the framework, a stage none of them runs."""


def zero_stages(data_parallel_impl: object) -> tuple[int, ...]:
    """The ZeRO stages ``data_parallel_impl`` runs (``ZERO_STAGES``; None: ParallelConfig's
    default engine, megatron; all four for an engine the table does not name, which
    ``ParallelConfig`` refuses by itself)."""
    return ZERO_STAGES.get(str(data_parallel_impl or "megatron"), (0, 1, 2, 3))


def deepspeed_pipeline_problem(parallel: Any) -> str | None:
    """Why ``parallel`` (a ``ParallelConfig``) describes no DeepSpeed pipeline run, or None.
    With ``data_parallel_impl`` deepspeed and pp > 1 the stages are DeepSpeed's PipelineEngine,
    which runs one schedule, ``TrainSchedule`` (microsoft/DeepSpeed v0.5.10, 3293cf72,
    deepspeed/runtime/pipe/engine.py ``train_batch`` builds ``schedule.TrainSchedule``, as it
    still does in later releases, beside ``_aggregate_total_losses``): Megatron's 1F1B order
    with one model chunk per stage
    (``workload.pipe_engine.train_schedule``). Interleaving or another order is no DeepSpeed
    run; the Megatron-DeepSpeed profile is BigScience's, whose model is GPTModelPipe on that
    engine whenever pp > 1 (catalog/frameworks/megatron-deepspeed.yaml)."""
    if parallel.data_parallel_impl != "deepspeed" or parallel.pp == 1:
        return None
    name = parallel.pipeline_schedule
    if name in (None, "1f1b") and parallel.vpp == 1:
        return None
    interleaved = 'interleaved_1f1b' if parallel.vpp > 1 else '1f1b'
    return (f"parallel.pipeline_schedule={name or interleaved} with vpp={parallel.vpp} under "
            f"data_parallel_impl=deepspeed and pp={parallel.pp}: DeepSpeed's PipelineEngine "
            "runs one schedule (TrainSchedule: 1F1B, one chunk per stage); use "
            "pipeline_schedule=1f1b and vpp=1")


def kv_heads_fit(kv_heads: int, tp: int, split: bool) -> bool:
    """Whether ``tp`` ranks can hold ``kv_heads`` KV heads (query groups).

    ``split`` (``ParallelConfig.kv_heads_split``, profile feature ``kv_heads_split``): every
    rank holds its own share, so tp must divide them (Megatron-core before core_v0.16.0,
    transformer/attention.py ``num_query_groups_per_partition = divide(num_query_groups,
    tp)``, which asserts). Otherwise one must divide the other: tp divides them, or is a
    multiple of them and each group is held by tp / groups ranks (core_v0.16.0, f7dfb99795 of
    2025-12-07, PR #2565: TransformerConfig requires num_query_groups to be a multiple or a
    divisor of tp, one query group per rank when they are fewer; the same rule where a
    framework replicates the KV heads)."""
    if not kv_heads % tp:
        return True
    return not split and not tp % kv_heads


KV_SPLIT_LIFTED = {"megatron-core": "core_v0.16.0", "megatron-bridge": "26.02",
                   "megatron-lm": "2025-12-07"}
"""The first release of each framework whose Megatron-core takes a tp beyond the KV heads
(f7dfb99795, PR #2565; Megatron-Bridge 26.02 pins b0cc2706, which holds it): named in the
refusal only where the run's framework has one (the profiles' ``kv_heads_split: false``)."""


def kv_heads_problem(tp: int, kv_heads: int, split: bool, where: str,
                     framework: str | None) -> str | None:
    """Why ``tp`` ranks cannot hold ``kv_heads`` KV heads (``kv_heads_fit``), as the end of a
    one-line refusal that starts with the field as the user gave it; None when they can.
    ``where``: the run's framework and version as the user reads them."""
    if kv_heads_fit(kv_heads, tp, split):
        return None
    if not split:
        return (f"tp={tp} and model.num_kv_heads={kv_heads}: one must divide the other; "
                f"choose a tp dividing {kv_heads} or a multiple of it")
    later = KV_SPLIT_LIFTED.get(framework or "")
    tail = f", or {framework} from {later}, which also takes a multiple of {kv_heads}" \
        if later else ""
    return (f"tp={tp} does not divide model.num_kv_heads={kv_heads}: {where} splits the KV "
            f"heads over tp; choose a tp dividing {kv_heads}{tail}")


def dispatcher_fits(dispatcher: str, expert_ranks: int, two_ranks: tuple[str, ...]) -> bool:
    """Whether ``dispatcher`` runs on ``expert_ranks`` (ep x expert tp) ranks: those of
    ``two_ranks`` (``ParallelConfig.flex_two_ranks``, the profile's feature
    ``flex_dispatchers_two_ranks``) need at least 2 (Megatron-core token_dispatcher.py
    MoEFlexTokenDispatcher: ``assert tp_size * ep_size > 1``, kept for DeepEP only from
    core_v0.18.0)."""
    return dispatcher not in two_ranks or expert_ranks > 1


DISPATCHER_MIN_SM = {"hybridep": 90}
"""The oldest NVIDIA architecture (compute capability x 10) each MoE dispatcher's kernels run
on. ``hybridep``: DeepEP's hybrid-ep kernels move tokens with TMA bulk copies
(csrc/hybrid_ep/backend/hybrid_ep_backend.cuh ``cuda::ptx::cp_async_bulk``; PTX
``cp.async.bulk`` needs sm_90), and Megatron-core builds them for sm 9.0, 10.0 and 12.0 only
(core_v0.16.0 docker/Dockerfile.ci.dev: DeepEP hybrid-ep eb9cee7 with TORCH_CUDA_ARCH_LIST
"9.0 10.0 12.0"): Hopper or newer, no AMD GPU. Nothing is stated for the others."""


def dispatcher_runs_on(dispatcher: str, sm_arch: int | None) -> bool:
    """Whether ``dispatcher``'s kernels run on a GPU of architecture ``sm_arch``
    (``GPUSpec.sm_arch``: None for another vendor's GPU): ``DISPATCHER_MIN_SM``."""
    need = DISPATCHER_MIN_SM.get(dispatcher)
    return need is None or (sm_arch is not None and sm_arch >= need)


MOE_ONLY_PARALLEL = ("moe_token_dispatcher_type", "moe_overlap_ep_comm", "moe_shared_expert_overlap",
                     "moe_permute_fusion", "moe_router_dtype", "moe_deepep_num_sms",
                     "moe_hybridep_num_sms", "fp8_gemm_grid_excludes_exchange",
                     "moe_dispatch_fp8", "flex_two_ranks")
"""Parallel fields that only a mixture-of-experts model reads (its token dispatcher, the
expert all-to-all's overlap, the router's dtype, the SMs of DeepEP / HybridEP, the fp8 GEMMs'
grid beside them): on a dense model nothing prices them (``moe_dense_problem``)."""


def moe_dense_problem(given: Mapping[str, Any], filled: Mapping[str, Any]) -> str | None:
    """Why a dense model cannot take the MoE-only parallel settings its run gave, or None:
    ``given`` maps the fields the run's own parallel section set to their values as the
    parallel config holds them; a field of ``MOE_ONLY_PARALLEL`` whose value is neither the
    field's default, a switch turned off, nor what the framework profile fills for it
    (``filled``: a resolved config states the profile's value for every run, dense ones too,
    and reads back) is refused, not
    ignored, as the model's MoE fields are (``ModelConfig.MOE_ONLY_FIELDS``; robust55 found
    them dropped in silence)."""
    from trainsim.config.parallel import ParallelConfig

    defaults = {f.name: f.default for f in dataclasses.fields(ParallelConfig)}
    for name in MOE_ONLY_PARALLEL:
        if name not in given:
            continue
        value = _built(given[name])
        if value is False or value == defaults[name] or \
                (name in filled and value == _built(filled[name])):
            continue  # a switch left off asks nothing of a dense model (a row's options cell)
        shown = list(value) if isinstance(value, tuple) else value
        return (f"parallel.{name}={shown!r} is a mixture-of-experts setting but the model is "
                "dense; set model.num_experts too, or leave it out")
    return None


def _built(value: Any) -> Any:
    """A profile's raw value as the parallel config holds it (a list as a tuple)."""
    return tuple(value) if isinstance(value, list) else value


__all__ = ["DISPATCHER_MIN_SM", "KV_SPLIT_LIFTED", "MOE_ONLY_PARALLEL", "ZERO_STAGES",
           "dispatcher_fits", "dispatcher_runs_on", "kv_heads_fit", "kv_heads_problem",
           "moe_dense_problem", "zero_stages"]


def te_ring_window_problem(cp: int, cp_comm_type: str, attention: str,
                           te_ring: tuple[str, ...], window: int | None) -> str | None:
    """Why a run cannot put a sliding window on Transformer Engine's p2p ring, or None: TE
    asserts "The context parallel running configs cannot support sliding window attetnion!"
    unless cp_comm_type is a2a or all_gather (v2.8 attention/dot_product_attention/
    context_parallel.py attn_forward_func_with_cp, L3742); ``te_ring`` is
    ``ParallelConfig.cp_te_ring``."""
    if cp > 1 and cp_comm_type == "p2p" and attention in te_ring and window:
        return ("parallel.cp_comm_type=p2p (Transformer Engine's ring attention) does not "
                "support the model's sliding-window attention; use a2a or all_gather")
    return None


FUSED_MAX_HEAD_DIM = 256
"""The widest head (query/key or value) the fused attention kernels train: FlashAttention-2
(Dao-AILab/flash-attention@0251105a csrc/flash_attn/flash_api.cpp L416 ``mha_fwd`` and L868
``mha_bwd``: ``TORCH_CHECK(head_size <= 256, "FlashAttention backward only supports head
dimension at most 256")``), FlashAttention-3 (hopper/flash_api.cpp L473-L475
``get_max_headdim``: 256, L1352 ``mha_bwd``: ``std::max(head_size, head_size_v) <=
max_headdim``; its forward's wider value heads of L783 have no backward), PyTorch SDPA's flash
backend (the FlashAttention-2 kernel) and Transformer Engine's cuDNN fused attention in
training (NVIDIA/TransformerEngine@d0067d0d transformer_engine/common/fused_attn/fused_attn.cpp
L314-L319: heads above 128 up to 256 on Hopper with cuDNN >= 9.5, ``is_training``; on
Blackwell at most 128 but 192/128 and 256: L330-L335, ``catalog.te_attention``)."""
HEAD_DIM_FALLBACK = {"flash2": "unfused or mem_efficient", "flash3": "unfused or mem_efficient",
                     "sdpa": "mem_efficient (the backend PyTorch SDPA runs instead)",
                     "cudnn": "unfused (what Transformer Engine runs instead)"}
"""What runs a head wider than ``FUSED_MAX_HEAD_DIM`` (``head_dim_problem``): PyTorch SDPA
falls back to its memory-efficient backend, Transformer Engine past its fused and flash
backends to ``UnfusedDotProductAttention`` (te_attention's module docstring)."""


FLASH4_BLACKWELL_HEADS = ((192, 128), (256, 256), (64, 512), (512, 512))
"""The (query/key, value) head widths FlashAttention-4 trains on Blackwell (compute capability
10.x / 11.x) beside those of 8 to 128 each: DeepSeek's MLA, its dedicated 256 kernel and the
512-wide value heads (Dao-AILab/flash-attention@0251105a flash_attn/cute/interface.py L112-L132
``_validate_head_dims``, called by the forward L685 and the backward L2085). On Hopper it trains
8 to 256 each; both need widths that are a multiple of 16 bytes (8 16-bit elements), unpadded."""
CK_HEAD_DIM_BELOW = 512
"""The Composable Kernel attention (``ck``) trains heads narrower than this: ROCm's Transformer
Engine keeps its CK backend for them (ROCm/TransformerEngine@006edee9
transformer_engine/common/fused_attn_rocm/fused_attn_ck.cpp ``is_ck_backend_supported``:
"AITER/CK fused attn does not support head dim >=512"); flash-attention's own CK build stops at
256 (Dao-AILab/flash-attention@0251105a csrc/flash_attn_ck/mha_fwd.cpp L208, mha_bwd.cpp L266),
so this is the widest either runs."""
CK_FALLBACK_SOURCE = (
    "ROCm/TransformerEngine@ac80527d transformer_engine/common/fused_attn_rocm/fused_attn.cpp "
    "L89-L117 (CK first, then AOTriton, else no fused backend); @023deb45 fused_attn_aotriton.cpp "
    "L55-L85 is_aotriton_backend_supported (L71 equal query/key and value widths, L76-L79 no "
    "window, L83 no GQA, no bias); @030b7921 pytorch/attention/dot_product_attention/utils.py "
    "get_attention_backend (FlashAttention 2 off above 256 and for MLA: unfused)")
"""Where ROCm's Transformer Engine goes when CK refuses heads of ``CK_HEAD_DIM_BELOW`` or wider:
AOTriton's fused attention for multi-head attention of equal widths with no window or bias
(AOTriton is on by default, README ``NVTE_FUSED_ATTN_AOTRITON``), else
``UnfusedDotProductAttention`` (``catalog.te_attention.ck_wide_head_attention``)."""


def ck_head_fallback(qk: int, v: int, grouped: bool, windowed_everywhere: bool,
                     biased: bool) -> str:
    """What ROCm's Transformer Engine runs for heads (``qk``, ``v``) CK refuses
    (``CK_FALLBACK_SOURCE``): ``aotriton`` (which trainsim does not price) where AOTriton's
    filter passes, else ``unfused``. ``grouped``: fewer key/value heads than query heads;
    ``windowed_everywhere``: every layer has a sliding window; ``biased``: ALiBi scores."""
    if qk != v or grouped or windowed_everywhere or biased:
        return "unfused"
    return "aotriton"


FLASH4_SM120_SMEM_BYTES = (100 - 1) * 1024
"""Shared memory one block of FlashAttention-4's 12.x kernels (consumer / workstation Blackwell,
DGX Spark) may take: "SM120 has 99 KB shared memory (vs 163 KB on SM80)"
(Dao-AILab/flash-attention@0251105a flash_attn/cute/flash_fwd_sm120.py L55-L57 and
flash_bwd_sm120.py L51-L53, ``get_smem_capacity_in_bytes("sm_120")``; the CuTe DSL's
``SMEM_CAPACITY_MAP["sm_120"] = (100 - 1) * 1024``)."""


def flash4_sm120_smem_bytes(qk: int, v: int) -> tuple[int, int]:
    """(forward, backward) shared-memory bytes FlashAttention-4's 12.x kernels take at heads
    (``qk``, ``v``), counted as their ``can_implement`` counts them (16-bit operands): forward
    Q tile + K and V tiles (flash_fwd_sm120.py L48-L54; tile 128 x 128 up to a 64-wide head,
    128 x 64 above it: interface.py L320-L325; one stage, Q not in registers: L1366-L1378);
    backward Q and dO tiles per stage + K and V tiles (flash_bwd_sm120.py L43-L50; 64 x 64
    blocks, two stages up to a 64-wide head, one above it: interface.py L1891-L1900). The
    interface calls neither check ("TODO: check @can_implement", L1387, L2548) and skips its
    head-width check on 12.x (L684, L2084), so a head past them fails when its kernel is
    compiled, not before."""
    n_fwd = 128 if qk <= 64 else 64
    forward = 2 * (128 * qk + n_fwd * qk + n_fwd * v)
    stages = 2 if qk <= 64 else 1
    backward = 2 * (64 * qk * stages + 64 * v * stages + 64 * qk + 64 * v)
    return forward, backward


def flash4_sm120_problem(qk: int, v: int, field: str = "training.attention") -> str | None:
    """Why FlashAttention-4 cannot train heads (``qk``, ``v``) on a 12.x GPU, or None: widths
    a multiple of 8 (``can_implement``: ``head_dim % 8``) whose forward and backward tiles fit
    ``FLASH4_SM120_SMEM_BYTES`` (``flash4_sm120_smem_bytes``): equal widths up to 192."""
    forward, backward = flash4_sm120_smem_bytes(qk, v)
    if qk % 8 == 0 and v % 8 == 0 and max(forward, backward) <= FLASH4_SM120_SMEM_BYTES:
        return None
    return (f"{field}=flash4 on compute capability 12.x runs heads (query/key, value) "
            f"that are multiples of 8 and whose tiles fit its {FLASH4_SM120_SMEM_BYTES} bytes of "
            f"shared memory (up to 192 wide), not ({qk}, {v}): they take {forward} bytes forward, "
            f"{backward} backward; set {field} to flash2 or unfused")


def flash4_head_problem(qk: int, v: int, sm_arch: int | None,
                        field: str = "training.attention") -> str | None:
    """Why FlashAttention-4 cannot train heads (``qk``, ``v``) on a GPU of ``sm_arch``, or None
    (``FLASH4_BLACKWELL_HEADS``; on 12.x its shared memory, ``flash4_sm120_problem``; Ampere is
    refused by ``config.gpu_rules``, as another vendor's GPU)."""
    if sm_arch is not None and 120 <= sm_arch < 130:
        return flash4_sm120_problem(qk, v, field)
    if sm_arch is None or not 90 <= sm_arch < 120:
        return None
    if sm_arch < 100:
        ok, allowed = 8 <= qk <= 256 and 8 <= v <= 256, "8 to 256 each"
    else:
        ok = (8 <= qk <= 128 and 8 <= v <= 128) or (qk, v) in FLASH4_BLACKWELL_HEADS
        allowed = ("8 to 128 each, or " + ", ".join(f"({a}, {b})" for a, b in
                                                   FLASH4_BLACKWELL_HEADS))
    if ok and qk % 8 == 0 and v % 8 == 0:
        return None
    where = "Hopper" if sm_arch < 100 else "Blackwell"
    return (f"{field}=flash4 trains on {where} heads (query/key, value) of "
            f"{allowed}, multiples of 8, not ({qk}, {v}); set {field} to "
            f"{'flash3 or cudnn' if sm_arch < 100 else 'cudnn'} or unfused")


def head_dim_problem(attention: str, qk: int, v: int, sm_arch: int | None = None,
                     field: str = "training.attention") -> str | None:
    """Why ``attention`` cannot train heads of query/key width ``qk`` and value width ``v`` on a
    GPU of ``sm_arch``, or None: the fused kernels of ``HEAD_DIM_FALLBACK`` take at most
    ``FUSED_MAX_HEAD_DIM``, FlashAttention-4 ``flash4_head_problem``'s, CK below
    ``CK_HEAD_DIM_BELOW``."""
    widest = max(qk, v)
    if attention == "flash4":
        return flash4_head_problem(qk, v, sm_arch, field)
    if attention == "ck" and widest >= CK_HEAD_DIM_BELOW:
        return (f"{field}=ck trains heads narrower than {CK_HEAD_DIM_BELOW}, not "
                f"{widest} (query/key {qk}, value {v}); ROCm Transformer Engine runs AOTriton "
                "(multi-head, equal widths, no window or bias; not priced) or else unfused: "
                f"set {field} to unfused")
    if attention not in HEAD_DIM_FALLBACK or widest <= FUSED_MAX_HEAD_DIM:
        return None
    return (f"{field}={attention} trains heads at most {FUSED_MAX_HEAD_DIM} wide, "
            f"not {widest} (query/key {qk}, value {v}); set {field} to "
            f"{HEAD_DIM_FALLBACK[attention]}")


NO_DROPOUT_ATTENTION = {
    "flash3": "hopper/flash_attn_interface.py L809 flash_attn_func",
    "flash4": "flash_attn/cute/interface.py L3371 flash_attn_func",
}
"""Fused kernels that take no attention dropout: FlashAttention-3's and -4's ``flash_attn_func``
have no ``dropout_p`` (Dao-AILab/flash-attention@0251105a, the lines named; FA4's dropout is
PR #2597, open). Transformer Engine turns both off when the attention has dropout and runs its
cuDNN fused attention on Hopper and later (NVIDIA/TransformerEngine@d0067d0d
pytorch/attention/dot_product_attention/utils.py L1104-L1111, "Disabling FlashAttention 3 for
dropout"; L1647-L1653, FusedAttention preferred on Hopper+), or FlashAttention-2."""


def dropout_attention_problem(attention: str, dropout: float,
                              field: str = "training.attention") -> str | None:
    """Why ``attention`` cannot run the model's attention dropout ``dropout``, or None
    (``NO_DROPOUT_ATTENTION``)."""
    if dropout <= 0 or attention not in NO_DROPOUT_ATTENTION:
        return None
    return (f"{field}={attention} takes no attention dropout ({NO_DROPOUT_ATTENTION[attention]} "
            f"has no dropout_p), but model.attention_dropout={dropout:g}; Transformer Engine "
            f"runs cuDNN instead: set {field} to cudnn (or flash2), or model.attention_dropout "
            "to 0")


ATTENTION_ROW_DTYPES = ("bf16", "fp16")
"""The dtypes of the attention kernels trainsim prices (``compute.attention``'s rates are those
of 16-bit kernels; a training run's attention is 16-bit even under fp8 GEMMs): a kernel row in
another dtype is refused (``attention_row_problem``), not priced as a 16-bit one."""
FP8_ATTENTION = {
    "flash2": "FlashAttention-2 runs fp16 and bf16 only",
    "sdpa": "PyTorch SDPA's flash backend (FlashAttention-2) runs fp16 and bf16 only",
    "flash3": "FlashAttention-3 runs fp8 in its forward only, at heads a multiple of 16",
    "flash4": "FlashAttention-4 runs fp8 in its forward only, on 10.x, at heads a multiple of 16",
}
"""What each fused kernel does with an 8-bit input (``attention_row_problem``'s message):
Dao-AILab/flash-attention@0251105a csrc/flash_attn/flash_api.cpp L397 / L843 ("FlashAttention
only support fp16 and bf16 data type", forward / backward); hopper/flash_api.cpp L715-L716
(forward: fp16, bf16, fp8 e4m3), L854-L856 (``alignment = fp8 ? 16 : 8`` on both head widths),
L1302 (backward fp16 and bf16 only); flash_attn/cute/interface.py L683-L685 (alignment
``16 // element_size``), L698-L699 ("FA4 CuTe FP8 backward is not supported yet
(forward-only)"), L765 ("FP8 is only supported on SM100")."""


def attention_row_problem(impl: str, dtype: str, head_dim: int, gpu: GPUSpec,
                          backward: bool) -> str | None:
    """Why a kernel row's attention (``impl`` at ``dtype``, ``head_dim`` wide, on ``gpu``;
    ``backward``: the row times a backward) is not priced, or None: a dtype not in
    ``ATTENTION_ROW_DTYPES``; an NVIDIA-only kernel on another vendor's GPU
    (``config.training.NVIDIA_ONLY_ATTENTION``, as ``RunConfig`` refuses it); a kernel the
    GPU's architecture does not run (``gpu_rules.attention_problem``; FlashAttention-4's
    forward also runs on 8.x: flash_attn/cute/interface.py L681, its backward from 9.x only:
    L1854); a head the kernel refuses (``head_dim_problem``: FlashAttention-2/3/4 and CK,
    whose forwards check it too, and every kernel's backward)."""
    from trainsim.config.gpu_rules import attention_problem

    field = "column 'implementation'"
    if dtype not in ATTENTION_ROW_DTYPES:
        what = FP8_ATTENTION.get(impl, "") if dtype == "fp8" else ""
        return (f"column 'dtype'={dtype!r}: only 16-bit (bf16, fp16) attention kernels are "
                f"priced{'; ' + what if what else ''}")
    from trainsim.config.training import NVIDIA_ONLY_ATTENTION

    if impl in NVIDIA_ONLY_ATTENTION and gpu.vendor != "nvidia":
        return (f"{field}={impl} runs on NVIDIA GPUs only, not column 'gpu' {gpu.name} "
                f"({gpu.vendor}); set {field} to flash2 or ck")
    arch = gpu.sm_arch
    forward_on_ampere = impl == "flash4" and not backward and arch is not None and arch >= 80
    problem = None if forward_on_ampere else attention_problem(impl, gpu, field)
    if problem is None and (backward or impl in ("flash2", "flash3", "flash4", "ck")):
        problem = head_dim_problem(impl, head_dim, head_dim, arch, field)
    return problem
