"""Kernel rows: one kernel's time or FLOP rate on one GPU, priced by the simulator's compute model.

A row becomes the simulator's own op records (``workload.ops``: ``Gemm``, ``Attention``,
``Elementwise``; an MoE block is built by the workload's own MoE builder) and is priced by the
compute chain a simulation uses (``compute_model_for(gpu, "auto", ...)``: a bundled measured
database for that GPU where one exists, else the roofline), so this check tests the real path.

Rates are compared in the row's unit with the source's FLOP convention (shared
``validation/README.md``): a GEMM does 2mnk FLOPs; attention 4*b*s^2*h*d forward, halved when
causal, backward 2.5x forward. That is the benchmark convention, not the simulator's exact
count of causal query-key pairs (s(s+1)/2): the predicted rate is the source's FLOPs over the
predicted time, so the two differ only by the time.

A row is priced under the conditions its harness measured (the source's and note's words): a
benchmark loop's falling clock, the burst (``BURST``) or sustained (``SUSTAINED``) clock, a cold
call (``COLD_CALL``), and a rate that won a shape search (``best_shape``: the model's own best
over the finder's grid, not the winning shape the row names).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re

from trainsim.catalog import gpu as catalog_gpu
from trainsim.compute import ChainModel, compute_model_for, roofline
from trainsim.compute.roofline import FP8_OWN_PROMOTION
from trainsim.config import (
    ClusterConfig,
    ModelConfig,
    ParallelConfig,
    RunConfig,
    TrainingConfig,
)
from trainsim.config.validity import attention_row_problem
from trainsim.errors import ConfigError, TrainsimError
from trainsim.validate.best_shape import BEST_SHAPE, searched_best
from trainsim.validate.common import RowResult, _cell, measured_cell, positive_cell
from trainsim.validate.kernel_accumulate import accumulate_bytes
from trainsim.validate.kernel_cells import (  # noqa: F401 - block_scales re-exported
    _causal,
    _dtype,
    _int,
    activation_quant,
    block_scales,
    implementation,
    implementation_as_written,
    implementation_label,
    measured_unit,
)
from trainsim.validate.kernel_notes import fast_accum_note
from trainsim.validate.vocab import (
    GEMM_LIBRARIES,
    GROUPED_IMPL,
    MEMORY_LIBRARIES,
    SSD_LIBRARIES,
    attention_impl,
    grouped_impl_of,
    known_library,
    library_key,
    word,
)
from trainsim.workload.elementwise import memory_op, norm_impl
from trainsim.workload.mamba_block import chunk_scan_forward
from trainsim.workload.moe_block import moe_block
from trainsim.workload.ops import (
    DTYPE_BYTES,
    Attention,
    Elementwise,
    Gemm,
    GroupedImpl,
    Op,
)
from trainsim.workload.shard import shard_of

KERNEL_REQUIRED = ["id", "gpu", "kind", "implementation", "dtype", "measured_value",
                   "measured_unit"]
KERNEL_COLUMNS = frozenset([*KERNEL_REQUIRED, "source", "note", "m", "n", "k", "groups",
                            "batch", "seq_len", "heads", "kv_heads", "head_dim", "v_head_dim",
                            "causal", "tokens", "hidden", "ffn", "experts", "top_k", "bytes"])
"""Every column a kernel row is read from (shared validation/README.md, kernels_*.csv)."""
KINDS = ("gemm", "gemm_grouped", "attention_fwd", "attention_bwd", "attention_fwd_bwd",
         "memory_bound", "moe_block", "ssd_fwd")
TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6}
RATE_UNIT = "TFLOP/s"

_GROUPED_MM = re.compile(r"torch\._grouped_mm")
"""A note naming ``torch._grouped_mm`` overrides the column (VeOmni's rows compare it with its
Triton kernel under one implementation)."""
_INDEX_ADD = re.compile(r"\bindex_add")
"""A ``torch._grouped_mm`` MoE-block row whose note names ``index_add``: one gated grouped GEMM
and an ``index_add_`` combine (``workload.moe_experts`` ``index_add``); another runs torchtitan's
padded experts (``padded``)."""
_RAGGED = re.compile(r"unequal|random offsets|skew", re.IGNORECASE)
"""A grouped-GEMM row whose groups differ in size (the ``groups`` column gives equal ones)."""


def grouped_impl(row: dict[str, str]) -> str:
    """The grouped-GEMM implementation a ``gemm_grouped`` or ``moe_block`` row measured."""
    if _GROUPED_MM.search(row.get("note") or ""):
        return "cutlass"
    return grouped_impl_of(implementation(row), label=implementation_label(row))

L2_RESIDENT = re.compile(r"\bL2-resident\b")
"""A note marking a memory-bound measurement whose working set stayed in L2 (shared
``validation/README.md``): priced, but left out of the errors."""

MOE_ROUTER_OPS = ("router", "router_topk_softmax")
"""Ops of the workload's MoE block that a kernels row excludes (README: router excluded)."""


SUSTAINED = re.compile(r"\bMSMF\b")
"""A note naming the *maximum sustained* matmul FLOP/s (Bekman's MSMF: the GEMM repeated until
the board sits at its power limit and the clock has dropped) marks a row measured at the
sustained rate a training GPU runs at, not at the burst clock."""


BURST = re.compile(r"\bMAMF\b")
"""A row naming Bekman's *maximum achievable* matmul FLOP/s (the v2 finder and later) ran at the
boost clock with the board far from its power limit: the finder clears a 256 MB buffer and
resets C before every timed call (stas00/ml-engineering compute/accelerator/benchmarks/
mamf-finder.py, ``benchmark_version = 2``, ``time_it``), and its fast-mamf table records the
MAMF at ~172-295 W and 1965-1980 MHz beside the MSMF at ~693-994 W and 1331-1465 MHz. Its
GEMMs get no loop clock (``roofline.loop_clock_factor``); the 2024 v1 table, which repeated the
GEMM without that reset, does not name it."""


COLD_CALL = re.compile(r"\bdo_bench\b|\bnvbench\b[^;]*\bcold\b")
"""A source or note naming a harness that times one call at a time behind an L2 flush
(``triton.testing.do_bench``, not ``do_bench_cudagraph``; nvbench's cold measurement): the row's
time gets ``roofline.COLD_CALL_S`` once, a condition of the measurement as ``SUSTAINED`` and
``BURST`` are."""


PROFILER_SUMMED = re.compile(r"\bKineto\b|\btorch\.profiler\b|\bdevice_time_total\b")
"""A source or note naming a harness that sums the kernels' own durations (the PyTorch
profiler's Kineto kernel events, ``key_averages()``' ``device_time_total``): the gaps between
kernels are not in such a measurement (vidur's 272 rows; tgale96/grouped_gemm #37 through its
erratum's note)."""

UNTIMED_GAPS: re.Pattern[str] | None = None
"""Where set (``PROFILER_SUMMED``), a matching row's roofline-priced ops get no ``LAUNCH_S``
(``roofline.kernel_launches``; a kernel database's records exclude the gaps already). Not
shipped (32nd session, timer32): it takes the tgale96 pair with its errata 16.4 -> 7.0 % and
A100 GEMMs 7.46 -> 7.02 %, but H100 GEMMs 10.41 -> 13.00 %, and ``fit_kernels.py`` refits
``GEMM_TILE_OVERHEAD_K`` to the shipped 219 (vidur's H100 rows are held out; no value from 160
to 340 takes them under 11.3 %): on H100 the 3 us are a cost inside vidur's kernels the model
does not price otherwise. ``benchmarks/gemm_hypotheses.py`` scores it."""


@functools.cache
def _model(gpu_name: str, compute_db: str | None = "auto", sustained: bool = False,
           burst: bool = False) -> ChainModel:
    """A kernel benchmark runs one GPU alone, not power-saturated beside seven others as in
    training (``GPUSpec.sustained_of_burst``), unless it ran the GPU to its power limit
    (``SUSTAINED``): at the burst clock, falling toward the sustained one over a loop of long
    GEMMs (``roofline.loop_clock_factor``) unless it idled between calls (``BURST``)."""
    gpu = catalog_gpu(gpu_name)
    if sustained:
        return compute_model_for(gpu, compute_db, catalog_gpu)
    loop = None if burst else gpu.sustained_of_burst * gpu.power_scale
    return compute_model_for(dataclasses.replace(gpu, sustained_of_burst=1.0), compute_db,
                             catalog_gpu, loop)


DROPOUT_NOTE = re.compile(r"\bdropout(?:_p)?\s*[=:]?\s*(\d*\.?\d+)(?![\d.])", re.IGNORECASE)
"""An attention row's dropout probability, stated in its note ("dropout 0.1", "dropout_p=0.1");
a row that states none, or 0, ran without dropout (the kernels files have no dropout column)."""


def attention_dropout(row: dict[str, str]) -> bool:
    """Whether an attention row's kernel ran with dropout (``DROPOUT_NOTE``)."""
    found = DROPOUT_NOTE.search(row.get("note") or "")
    # 'dropout 2' was priced as dropout on (fuzz43)
    if found is not None and float(found.group(1)) > 1:
        raise ConfigError(f"the note's dropout {found.group(1)} is not a probability (0 to 1)")
    return found is not None and float(found.group(1)) > 0


def _attention(row: dict[str, str], backward: bool) -> Attention:
    impl, _ = attention_impl(implementation(row), row["gpu"], backward,
                             label=implementation_label(row))
    s, heads = _int(row, "seq_len"), _int(row, "heads")
    kv = _int(row, "kv_heads") if _cell(row, "kv_heads") else heads
    # GQA: each key/value head serves heads / kv_heads query heads; FlashAttention's mha_fwd
    # refuses the rest (csrc/flash_attn/flash_api.cpp: TORCH_CHECK(num_heads % num_heads_k
    # == 0)); priced before (fuzz43)
    if heads % kv:
        raise ConfigError(f"column 'kv_heads'={kv} must divide heads={heads} (each key/value "
                          "head serves heads / kv_heads query heads)")
    # a dtype, GPU or head the kernel does not run was priced as a 16-bit kernel (edge45)
    problem = attention_row_problem(impl, _dtype(row), _int(row, "head_dim"),
                                    catalog_gpu(row["gpu"].strip().lower()), backward)
    if problem:
        raise ConfigError(problem)
    qk, v = head_dims(row)
    return Attention("attn", batch=_int(row, "batch"), heads=heads, kv_heads=kv, q_len=s,
                     kv_len=s, head_dim=(qk + v) // 2, causal=_causal(row),
                     backward=backward, impl=impl,  # type: ignore[arg-type]
                     dropout=attention_dropout(row), qk_head_dim=qk if qk != v else None)


def head_dims(row: dict[str, str]) -> tuple[int, int]:
    """(query/key, value) head widths: ``head_dim``, ``v_head_dim`` where the value head differs
    (MLA's 192 / 128); the op counts their mean (``Attention.qk_head_dim``): an even sum."""
    qk = _int(row, "head_dim")
    v = _int(row, "v_head_dim") if _cell(row, "v_head_dim") else qk
    if (qk + v) % 2:
        raise ConfigError(f"columns 'head_dim'={qk} and 'v_head_dim'={v} must sum to an even width")
    return qk, v


UNBOUND_QKV = re.compile(r"\bqkv\.unbind\b", re.IGNORECASE)
"""An attention row whose harness took Q, K and V as views of one packed tensor ("qkv.unbind"
in its note: benchmarks/device_checks41.py ``attn_grid``, ``qkv.unbind(2)``): its timed backward
also runs autograd's ``UnbindBackward``, a ``torch.stack`` of dQ, dK and dV into the packed
gradient (``unbind_stack``; pytorch/pytorch tools/autograd/derivatives.yaml ``unbind.int``:
``unbind_backward(grads, dim)``, torch/csrc/autograd/FunctionsManual.cpp ``unbind_backward``:
``return at::stack(grads_tensors, dim)``)."""


def unbind_stack(row: dict[str, str], op: Attention) -> list[Op]:
    """The copy a backward timed through ``qkv.unbind`` adds (``UNBOUND_QKV``): dQ, dK and dV
    read and the packed gradient written, 16-bit; none for another row."""
    if not op.backward or not UNBOUND_QKV.search(row.get("note") or ""):
        return []
    elements = op.batch * op.q_len * (op.heads + 2 * op.kv_heads) * op.head_dim
    return [Elementwise("unbind_backward_stack", bytes=2.0 * 2 * elements)]


def _moe_ops(row: dict[str, str]) -> list[Op]:
    """The forward of one MoE block without its router, from the workload's own builder: a
    one-GPU model (no EP, no TP) whose one micro-batch is the row's tokens. Experts are SwiGLU,
    as in every MoE-block source in the kernels files: gate and up in one GEMM and a fused
    activation, except where the row measured ``torch._grouped_mm`` experts, which run as
    torchtitan's eager ``GroupedExperts`` (``workload.moe_experts`` ``padded``: padding
    permutation, gate and up as two grouped GEMMs, SwiGLU in two kernels, an index-put and sum
    combine) or, where the note names ``index_add``, as ``moe_experts`` ``index_add`` (one gated
    grouped GEMM, chunked SwiGLU, an atomic ``index_add_`` combine)."""
    tokens, dtype = _int(row, "tokens"), _dtype(row)
    model = ModelConfig(name="moe-block", hidden_size=_int(row, "hidden"), num_layers=1,
                        num_attention_heads=1, ffn_hidden_size=_int(row, "ffn"),
                        activation="swiglu", num_experts=_int(row, "experts"),
                        moe_router_topk=_int(row, "top_k"), moe_ffn_hidden_size=_int(row, "ffn"))
    # its one attention head (hidden wide) is never built: unfused, which takes any width
    training = TrainingConfig(global_batch_size=1, micro_batch_size=1, seq_length=tokens,
                              dtype=dtype, attention="unfused")  # type: ignore[arg-type]
    cfg = RunConfig(model=model, parallel=ParallelConfig(), training=training,
                    cluster=ClusterConfig(gpu=catalog_gpu(row["gpu"]), num_gpus=1,
                                          gpus_per_node=1))
    ops: list[Op] = []
    note = row.get("note") or ""
    style = "" if not _GROUPED_MM.search(note) else \
        "index_add" if _INDEX_ADD.search(note) else "padded"
    moe_block(ops, cfg, shard_of(cfg), grouped=grouped_impl(row),  # type: ignore[arg-type]
               experts=style)
    return [op for op in ops if op.name not in MOE_ROUTER_OPS]


MEMORY_VARIANTS: tuple[tuple[str, str, str], ...] = (
    # (pattern in the row's id or note, family, implementation), first match wins
    (r"cross-?entropy.*(fp32|upcast)", "cross_entropy", "eager"),
    (r"cross-?entropy", "cross_entropy", "fused"),
    (r"adamw.*foreach", "adamw", "foreach"),
    (r"adamw", "adamw", "fused"),
    (r"llamarmsnorm.*(weight (bf16|fp16)|(bf16|fp16) weight)", "rmsnorm", "eager"),
    (r"llamarmsnorm \(eager, several kernels", "rmsnorm", "eager_f32_weight"),
    (r"rmsnorm-eager", "rmsnorm", "eager"),
    (r"rmsnorm.*(compiled|torch\.compile)", "rmsnorm", "inductor"),
    (r"rmsnorm.*(vllm|library=vllm$)", "rmsnorm", "scalar_two_pass"),
    (r"rmsnorm.*(torch\.nn\.rmsnorm|f\.rms_norm|library=torch$)", "rmsnorm", "two_pass"),
    (r"rmsnorm", "rmsnorm", "fused"),
    (r"(layernorm|layer_norm).*(torch\.nn\.layernorm|f\.layer_norm|library=(torch|vllm)$)",
     "layernorm", "two_pass"),
    (r"layernorm|layer_norm", "layernorm", "fused"),
    (r"swiglu.*bias_swiglu_impl", "swiglu", "inductor_dynamic"),
    (r"swiglu.*chunked", "swiglu", "eager_chunked"),
    (r"swiglu.*(eager|two kernels)", "swiglu", "eager"),
    (r"(swiglu|siluandmul|mlp_act).*library=vllm$", "swiglu", "scalar"),
    (r"swiglu|siluandmul|mlp_act", "swiglu", "fused"),
    (r"(rope|rotary).*library=vllm$", "rope", "scalar"),
    (r"gelu", "gelu", "fused"),
    (r"residual-add", "residual_add", "fused"),
    (r"\bcopy\b", "copy", "fused"),
)
"""How a memory-bound row's description names its op and kernel structure (the kernels file
has no column for it): a multi-kernel eager RMSNorm ('rmsnorm-eager'; Hugging Face's
LlamaRMSNorm module, whose weight is fp32 as the module builds it, ``eager_f32_weight``, unless
the note names a 16-bit weight), a two-pass norm (PyTorch's native ``nn.LayerNorm``/``F.rms_norm`` kernels and
vLLM's RMSNorm read the row once for its statistics and again to normalise it; the row's
library, ``library=...``, counts), vLLM's early kernels with one 16-bit load per thread at a
time (``scalar``), a cross-entropy on logits upcast to fp32, a foreach AdamW,
an eager SwiGLU (silu, then the product), Megatron's ``bias_swiglu_impl`` compiled once per
width of a sweep (``inductor_dynamic``: the file's rows of it are Liger-Kernel's sweep over the
width in one process), a ``torch.compile``d RMSNorm (``inductor``:
``INDUCTOR_PERSISTENT_MAX``). Anything else is priced as one fused pass over the row's bytes."""

def _memory_bound(row: dict[str, str]) -> list[Op]:
    if _cell(row, "bytes") is None:
        raise ConfigError("a memory_bound row needs the 'bytes' column")
    bytes_ = positive_cell(row, "bytes")
    known_library(implementation(row), MEMORY_LIBRARIES, "memory_bound")
    text = f"{row.get('id', '')} {row.get('note', '')} library={implementation(row)}".lower()
    e = DTYPE_BYTES.get(_dtype(row), 2)
    for pattern, family, impl in MEMORY_VARIANTS:
        if not re.search(pattern, text):
            continue
        if family == "rope":  # queries and keys: their count is in the row's minimal bytes
            return [memory_op(family, family, impl, float(bytes_) / (2 * e), e)]
        tokens = _cell(row, "tokens")  # parameters, for an optimizer
        width = "1" if family == "adamw" else _cell(row, "ffn" if family == "swiglu" else "hidden")
        if tokens is None or width is None:
            break  # no element count: priced by the row's bytes below
        n = _int(row, "tokens") * (1.0 if family == "adamw" else _int(
            row, "ffn" if family == "swiglu" else "hidden"))
        if impl == "inductor":
            impl = norm_impl(family, _int(row, "hidden"), False, True, "")
        if family == "adamw":
            return [memory_op("adamw", family, impl, n, 4)]
        ops = [memory_op(family, family, impl, n, e)]
        if family == "cross_entropy" and re.search(r"fwdbwd|forward\+backward", text):
            ops.append(memory_op("cross_entropy.bwd", "cross_entropy.bwd", impl, n, e))
        return ops
    return [Elementwise("memory_bound", float(bytes_))]


FP8_FAST_ACCUM = FP8_OWN_PROMOTION | {"tilelang"}
"""Kernel libraries whose fp8 GEMMs do without cuBLAS's split accumulator
(``Gemm.fp8_fast_accum``): those that promote on their own (``compute.roofline``) and TileLang,
whose ``T.gemm`` keeps the sums in the tensor cores' fp32 fragments."""


_ATTENTION_COLUMNS = ("batch", "seq_len", "heads", "kv_heads", "head_dim", "v_head_dim", "causal")
KIND_COLUMNS: dict[str, tuple[str, ...]] = {
    "gemm": ("m", "n", "k"), "gemm_grouped": ("m", "n", "k", "groups"),
    **dict.fromkeys(("attention_fwd", "attention_bwd", "attention_fwd_bwd"), _ATTENTION_COLUMNS),
    "memory_bound": ("bytes", "tokens", "hidden", "ffn"),
    "moe_block": ("tokens", "hidden", "ffn", "experts", "top_k"),
    "ssd_fwd": ("batch", "seq_len", "heads", "kv_heads", "head_dim", "m", "n")}
"""The shape columns each kind reads (``kernel_ops``; shared validation/README.md). An
``ssd_fwd`` row is mamba_ssm's Mamba-2 chunked scan forward (``mamba_chunk_scan_combined``):
``heads`` heads of width ``head_dim`` whose B and C are shared in ``kv_heads`` groups (as GQA
shares K and V), chunk ``m``, state ``n``."""
SHAPE_COLUMNS = tuple(dict.fromkeys(c for cols in KIND_COLUMNS.values() for c in cols))


def _misfit_cells(row: dict[str, str], kind: str) -> None:
    """Refuse a shape cell the row's kind does not read (``groups`` or ``causal`` on a plain
    GEMM, ``m`` on an attention row): left unread, it priced another kernel than the one the
    row states, silently."""
    own = KIND_COLUMNS.get(kind)
    if own is None:
        return  # an unknown kind is refused by kernel_ops, naming the kinds
    for col in SHAPE_COLUMNS:
        if col not in own and _cell(row, col) is not None:
            raise ConfigError(f"column '{col}'={row[col]!r} does not apply to a {kind} row "
                              f"(it reads {', '.join(own)}); leave it empty")


def kernel_ops(row: dict[str, str]) -> tuple[list[Op], float | None]:
    """(ops of the row, its FLOPs by the source's convention or None where it has none)."""
    kind = word(row["kind"])
    _misfit_cells(row, kind)
    dtype = _dtype(row)
    if kind in ("gemm", "gemm_grouped"):
        m, n, k = _int(row, "m"), _int(row, "n"), _int(row, "k")
        fast = dtype == "fp8" and (implementation(row) in FP8_FAST_ACCUM
                                   or fast_accum_note(row.get("note") or ""))
        blocks = block_scales(row)
        if kind == "gemm":
            known_library(implementation(row), GEMM_LIBRARIES, "dense GEMM")
            return [Gemm(kind, m, n, k, dtype, fp8_fast_accum=fast, fp8_block_scales=blocks,
                         accumulate_bytes=accumulate_bytes(row.get("note") or "")),
                    *activation_quant(row, m, k)], 2.0 * m * n * k
        # m counts the rows of all groups, equal unless the note says they differ
        groups = _int(row, "groups")
        if groups > m:  # ceil(m / groups) rows each priced 2*m*n*k FLOPs as ~m/groups GEMMs
            raise ConfigError(f"column 'groups'={groups} is more than m={m}: m counts the rows "
                              "of all groups, each group needs at least one")
        ragged = bool(_RAGGED.search(row.get("note") or ""))
        impl: GroupedImpl = grouped_impl(row)  # type: ignore[assignment]
        op = Gemm(kind, math.ceil(m / groups), n, k, dtype, groups, grouped=impl, ragged=ragged,
                  fp8_fast_accum=fast, fp8_block_scales=blocks,
                  accumulate_bytes=accumulate_bytes(row.get("note") or ""))
        return [op], 2.0 * m * n * k
    if kind.startswith("attention_"):
        b, s, h = _int(row, "batch"), _int(row, "seq_len"), _int(row, "heads")
        fwd_flops = 2.0 * b * s * s * h * sum(head_dims(row)) * (0.5 if _causal(row) else 1.0)
        if kind == "attention_fwd":
            return [_attention(row, False)], fwd_flops
        bwd = _attention(row, True)
        if kind == "attention_bwd":
            return [bwd, *unbind_stack(row, bwd)], 2.5 * fwd_flops
        if kind == "attention_fwd_bwd":
            return [_attention(row, False), bwd, *unbind_stack(row, bwd)], 3.5 * fwd_flops
    if kind == "memory_bound":
        return _memory_bound(row), None
    if kind == "moe_block":
        ops = _moe_ops(row)
        return ops, sum(op.flops for op in ops if isinstance(op, Gemm))
    if kind == "ssd_fwd":
        return _ssd_forward(row), None
    raise ConfigError(f"unknown kernel kind {kind!r}; known: {', '.join(KINDS)}")


def _ssd_forward(row: dict[str, str]) -> list[Op]:
    """An ``ssd_fwd`` row's five Triton kernels (``mamba_block.chunk_scan_forward``, the training
    step's ops) without conv1d or z; dt in fp32, as a standalone call takes it."""
    known_library(implementation(row), SSD_LIBRARIES, "ssd_fwd")
    heads, groups = _int(row, "heads"), _int(row, "kv_heads")
    if heads % groups:
        raise ConfigError(f"column 'kv_heads'={groups} (B/C groups) must divide heads={heads}")
    return chunk_scan_forward(_int(row, "batch"), _int(row, "seq_len"), heads, groups,
                              _int(row, "m"), _int(row, "head_dim"), _int(row, "n"),
                              dt_bytes=DTYPE_BYTES["fp32"], z=False)


def library_reading(row: dict[str, str]) -> str | None:
    """How a row's library was priced where the column does not name the simulator's own
    kernel: a library read as a kernel family (``vocab.ATTENTION_BY_ARCH``, a grouped-GEMM
    package's or another spelling's ``GroupedImpl``); None otherwise."""
    lib = implementation(row)
    key, kind = library_key(lib), word(row.get("kind"))
    if kind.startswith("attention_"):
        return attention_impl(lib, row["gpu"], kind == "attention_bwd")[1]
    if kind in ("gemm_grouped", "moe_block") and not _GROUPED_MM.search(row.get("note") or ""):
        return None if key == lib and key in GROUPED_IMPL else \
            f"{grouped_impl(row)} grouped GEMM ({lib} read as {key})" if key != lib else \
            f"{grouped_impl(row)} grouped GEMM"
    return None


def predict_kernel_row(row: dict[str, str], compute_db: str | None = "auto") -> RowResult:
    """The row's kernel priced by the compute chain (with the kernel database ``compute_db``:
    'auto', None or a path), in the row's unit."""
    unit = measured_unit(row)
    try:
        measured = measured_cell(row, "measured_value")
    except ConfigError as exc:
        return RowResult(id=row.get("id", "?"), measured=0.0, error=str(exc))
    res = RowResult(id=row.get("id", "?"), measured=measured)
    impl = implementation(row)
    res.extra = {"kind": word(row.get("kind")),
                 "implementation": impl,
                 "gpu": (row.get("gpu") or "").strip(), "dtype": _dtype(row),
                 "unit": unit, "source_key": impl}
    try:
        if unit not in TIME_UNITS and unit != RATE_UNIT:
            raise ConfigError(f"unknown measured_unit {unit!r}; known: {RATE_UNIT}, "
                              f"{', '.join(TIME_UNITS)}")
        ops, flops = kernel_ops(row)
        harness = f"{row.get('source') or ''} {row.get('note') or ''}"
        model = _model(row["gpu"].strip(), compute_db, bool(SUSTAINED.search(row.get("note") or "")),
                       bool(BURST.search(harness)))
        priced = [model.explain(op) for op in ops]
        best = None
        if unit == RATE_UNIT and flops is not None and len(ops) == 1 \
                and isinstance(ops[0], Gemm) and not ops[0].grouped \
                and BEST_SHAPE.search(row.get("note") or ""):
            best = searched_best(model, ops[0])  # a rate that won a shape search
            priced = [(flops / best[0], model.explain(best[1])[1])]
        time_s = sum(t for t, _ in priced)
        cold = bool(COLD_CALL.search(harness))
        if cold:
            time_s += roofline.COLD_CALL_S
        gaps = (sum(roofline.kernel_launches(op) for op, (_, how) in zip(ops, priced)
                    if how == "roofline")
                if UNTIMED_GAPS is not None and UNTIMED_GAPS.search(harness) else 0)
        time_s -= gaps * roofline.LAUNCH_S
        if unit == RATE_UNIT:
            if flops is None:
                raise ConfigError(f"a {res.extra['kind']} row has no FLOP convention; "
                                  "give its time (ms or s)")
            res.predicted = flops / time_s / 1e12
        else:
            res.predicted = time_s / TIME_UNITS[unit]
    except (TrainsimError, ValueError, KeyError) as exc:
        res.error = str(exc)  # library messages name its column (implementation_label)
        return res
    res.chosen = {"model": "+".join(sorted({how for _, how in priced}))}
    if cold:
        res.chosen["harness"] = f"cold call +{roofline.COLD_CALL_S * 1e6:g} us"
    if gaps:
        res.chosen["harness"] = f"kernel durations summed, {gaps} launch gap(s) not timed"
    if best is not None:
        g = best[1]
        res.chosen["harness"] = f"best of a shape search (model's best: {g.m}x{g.n}x{g.k})"
    attn = next((op.impl for op in ops if isinstance(op, Attention)), None)
    if attn is not None:
        res.chosen["attention"] = attn
    reading = library_reading(row)
    if reading:
        res.chosen["implementation"] = reading
    res.extra["time_s"] = time_s
    if L2_RESIDENT.search(row.get("note") or ""):
        res.extra["excluded"] = "L2-resident: reused from cache call after call, not an HBM figure"
    return res

