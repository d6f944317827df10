"""What to measure: the distinct compute ops trainsim's simulator asks for, per config.

The sweep walks the simulator's own op lists (``layer_forward``, ``backward_of``, the
embedding and the head) for every (model, TP, SP, CP, sequence, dtype) in the grid, so the
database hits exactly the shapes a simulation prices. Each distinct op becomes a
:class:`Kernel` (what to run, with the tensor sizes a PyTorch implementation needs) and one or
more database records (the op's identity as the database reader keys it). Torch-free.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from trainsim.catalog import gpu as catalog_gpu
from trainsim.catalog import model as catalog_model
from trainsim.compute.database import as_profiled
from trainsim.config import ClusterConfig, ModelConfig, ParallelConfig, RunConfig, TrainingConfig
from trainsim.errors import ConfigError
from trainsim.model.counts import layer_params
from trainsim.profile.schema import ProfileError, kernel_key
from trainsim.workload.head import (
    embedding_backward,
    embedding_forward,
    head_backward,
    head_forward,
)
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.ops import Attention, Elementwise, Gemm
from trainsim.workload.shard import FP8_CAST_TRANSPOSE_BYTES, Shard, shard_of
from trainsim.workload.vocab import rank_vocab

ADAM_BYTES_PER_PARAM = 4 + 3 * 8
"""Fused Adam on fp32 master weights: read the gradient, read and write the weight and both
moments (as in trainsim.simulator.OPTIMIZER_BYTES_PER_PARAM["adam"])."""

QUICK_SEQ_DIVISOR = 64
"""--quick shrinks sequence lengths by this factor (4096 -> 64)."""

_NORMS = ("attn_norm", "mlp_norm", "final_norm")
_RESIDUALS = ("attn_bias_dropout_add", "mlp_bias_dropout_add", "embedding_add_dropout")


@dataclass(frozen=True)
class Kernel:
    """One measurement: a kernel kind and the sizes its PyTorch implementation takes.

    ``kind`` is ``gemm``, ``attention`` or an elementwise family (``rmsnorm``, ``rope``, ...),
    with ``.bwd`` for the backward kernel; ``dims`` are keyword sizes (sorted pairs).
    """

    kind: str
    dims: tuple[tuple[str, Any], ...]

    @property
    def size(self) -> dict[str, Any]:
        return dict(self.dims)

    @property
    def backward(self) -> bool:
        return self.kind.endswith(".bwd") or bool(self.size.get("backward"))

    def label(self) -> str:
        return f"{self.kind} " + " ".join(f"{k}={v}" for k, v in self.dims)


@dataclass
class Case:
    """A kernel to measure and the database records (identities, no time) it answers."""

    kernel: Kernel
    records: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class LayerCase:
    """A decoder layer at a TP-slice shape (single GPU: no communication)."""

    model: ModelConfig
    tp: int
    seq_length: int
    micro_batch_size: int


def _k(kind: str, **dims: Any) -> Kernel:
    return Kernel(kind, tuple(sorted(dims.items())))


def kernel_name(op_name: str, model: ModelConfig) -> str | None:
    """The kernel family of a simulator elementwise op (``attn_norm.bwd`` -> ``rmsnorm.bwd``),
    or None for ops the profiler does not implement (MoE routing, ...)."""
    base = op_name.removeprefix("recompute.")
    bwd = base.endswith(".bwd")
    base = base.removesuffix(".bwd")
    if base.endswith("cast_transpose"):
        return "fp8_cast_transpose"
    if base == "embedding_grad":
        return "embedding.bwd"
    if base in _NORMS:
        family = model.normalization
    elif base in _RESIDUALS:
        family = "residual_add"
    elif base == "embedding_lookup":
        family = "embedding"
    elif base in ("rope", "swiglu", "gelu", "cross_entropy"):
        family = base
    else:
        return None
    return family + (".bwd" if bwd else "")


def _elementwise_dims(family: str, op: Elementwise, cfg: RunConfig, sh: Shard) -> dict[str, Any]:
    m, t = cfg.model, sh.tp
    h, d = m.hidden_size, m.kv_channels
    base = family.removesuffix(".bwd")
    if base in ("rmsnorm", "layernorm"):
        return {"rows": sh.norm_tokens, "cols": h}
    if base == "residual_add":
        return {"rows": sh.norm_tokens, "cols": h, "dropout": m.hidden_dropout}
    if base == "rope":
        kv_loc = max(m.kv_size // t, d)
        return {"tokens": sh.tokens, "heads": m.q_size // t // d, "kv_heads": kv_loc // d, "d": d}
    if base in ("swiglu", "gelu"):
        return {"rows": sh.tokens, "cols": m.ffn_size // t}
    if base == "cross_entropy":
        return {"rows": sh.tokens, "cols": int(rank_vocab(cfg))}  # the padded vocabulary's slice
    if base == "embedding":
        return {"tokens": sh.tokens, "vocab": int(rank_vocab(cfg)), "cols": h, "tp": t}
    if base == "fp8_cast_transpose":
        elems = round(op.bytes / FP8_CAST_TRANSPOSE_BYTES)
        rows = sh.tokens if elems % sh.tokens == 0 else 1
        return {"rows": rows, "cols": elems // rows}
    raise ProfileError(f"no sizes for elementwise kernel {family}")  # pragma: no cover


def _gemm_record(op: Gemm) -> dict[str, Any]:
    rec = {"op": "gemm", "m": op.m, "n": op.n, "k": op.k, "dtype": op.dtype, "batch": op.batch}
    if op.fp8_fast_accum and op.dtype == "fp8":
        rec["fp8_fast_accum"] = True
    return rec


PROFILED_ATTENTION = ("cudnn", "sdpa", "mem_efficient")
"""Attention kernels the profiler runs, each as one SDPA backend (``profile.kernels``): cuDNN's
fused attention, the FlashAttention-2 backend (``sdpa``: SDPA's vendored copy, not the
flash-attn package ``flash2``, which runs 5-7 % faster on one GPU:
benchmarks/attn63_sdpa_ratio.py) and the memory-efficient (xFormers) backend. No SDPA backend
runs the first FlashAttention (``flash1``), so it is not profiled."""


def _attention_record(op: Attention) -> dict[str, Any]:
    return {"op": "attention", "impl": op.impl, "batch": op.batch, "heads": op.heads, "kv_heads": op.kv_heads,
            "q_len": op.q_len, "kv_len": op.kv_len, "head_dim": op.head_dim,
            "causal": op.causal, "backward": op.backward}


def op_case(op: Any, cfg: RunConfig, sh: Shard) -> tuple[Kernel, dict[str, Any]] | str:
    """(kernel to run, database record) for a simulator op, or why it is not measured."""
    if isinstance(op, Gemm):
        fast = op.fp8_fast_accum and op.dtype == "fp8"
        return (_k("gemm", m=op.m, n=op.n, k=op.k, dtype=op.dtype, batch=op.batch,
                   **({"fp8_fast_accum": True} if fast else {})),
                _gemm_record(op))
    if isinstance(op, Attention):
        if op.impl not in PROFILED_ATTENTION or op.window is not None or op.dropout:
            return f"attention impl={op.impl} window={op.window} dropout={op.dropout}"
        ring = op.kv_len // op.q_len if op.causal and op.kv_len > op.q_len else 1
        return (_k("attention", impl=op.impl, batch=op.batch, heads=op.heads, kv_heads=op.kv_heads,
                   q_len=op.q_len, kv_len=op.kv_len, head_dim=op.head_dim, causal=op.causal,
                   backward=op.backward, ring=ring), _attention_record(op))
    if isinstance(op, Elementwise):
        family = kernel_name(op.name, cfg.model)
        if family is None:
            return f"elementwise '{op.name}'"
        dims = _elementwise_dims(family, op, cfg, sh)
        if family == "residual_add.bwd" and not dims["dropout"]:
            # the gradient of x + y is passed through by autograd: no kernel runs
            return "residual_add.bwd without dropout (autograd launches no kernel)"
        record = _elementwise_record(op.name, family, op.bytes)
        if family == "embedding.bwd":  # the table its at::zeros fills (database.without_fill)
            record["zeroed"] = {"rows": dims["vocab"], "cols": dims["cols"]}
            # the ids it scattered, drawn as the simulator counts them (database.record_scatter)
            record["scatter"] = list(op.scatter)
        return _k(family, **dims), record
    return type(op).__name__  # communication or an op kind added later


def adam_case(cfg: RunConfig) -> tuple[Kernel, dict[str, Any]]:
    """The optimizer step over one layer's local parameters (fused Adam, fp32 state)."""
    n = layer_params(cfg.model) // cfg.parallel.tp
    return _k("adam", params=n), _elementwise_record("adam", "adam", n * ADAM_BYTES_PER_PARAM)


def _elementwise_record(name: str, family: str, fused_bytes: float) -> dict[str, Any]:
    """A record of what the profiler runs for ``family`` (``compute.database.as_profiled``)."""
    kernel, impl, nbytes = as_profiled(family, fused_bytes)
    return {"op": "elementwise", "name": name, "kernel": kernel, "impl": impl, "bytes": nbytes}


def simulator_ops(cfg: RunConfig) -> list[Any]:
    """Every op of one micro-batch on one rank: a dense layer, the embedding and the head."""
    sh = shard_of(cfg)
    fwd = layer_forward(cfg, sh)
    head = head_forward(cfg, sh)
    return [*fwd, *backward_of(fwd, sh), *embedding_forward(cfg, sh),
            *embedding_backward(cfg, sh), *head, *head_backward(cfg, sh, head)]


def distinct_cases(cfgs: list[RunConfig], notes: list[str] | None = None) -> list[Case]:
    """Distinct kernels over all configs, each with the distinct records it answers."""
    cases: dict[Kernel, Case] = {}
    seen: set[tuple[Any, ...]] = set()
    skipped: set[str] = set()
    for cfg in cfgs:
        sh = shard_of(cfg)
        pairs = [op_case(op, cfg, sh) for op in simulator_ops(cfg)] + [adam_case(cfg)]
        for pair in pairs:
            if isinstance(pair, str):
                skipped.add(pair)
                continue
            kernel, record = pair
            case = cases.setdefault(kernel, Case(kernel))
            key = _reader_key(record)
            if key not in seen:
                seen.add(key)
                case.records.append(record)
    if notes is not None:
        notes += [f"not measured: {s}" for s in sorted(skipped)
                  if s not in ("Comm",)]  # communication is not a compute kernel
    return [c for c in cases.values() if c.records]


def _reader_key(record: dict[str, Any]) -> tuple[Any, ...]:
    """The key compute/database.py looks ops up by (elementwise: family, implementation,
    bytes and the scatter's ids, whichever simulator op it came from)."""
    if record["op"] == "elementwise":  # a scatter also by the ids it drew (``Elementwise.scatter``)
        return ("elementwise", record["kernel"], record["impl"], round(record["bytes"]),
                tuple(record.get("scatter", ())))
    return kernel_key(record)


def quick_model(m: ModelConfig) -> ModelConfig:
    """A tiny model of the same family (norm, activation, GQA ratio) for CPU dry runs.

    Sizes divide by TP up to 8 and stay multiples of 16 (fp8 GEMMs need that)."""
    heads = 8
    kv = max(1, heads * m.kv_heads // m.num_attention_heads)
    return dataclasses.replace(
        m, name=f"{m.name}-quick", hidden_size=256, num_attention_heads=heads, num_kv_heads=kv,
        head_dim=None, ffn_hidden_size=512, vocab_size=1024, num_layers=2)


def sweep_configs(models: list[str], tps: list[int], seqs: list[int], gpu: str,
                  cps: tuple[int, ...] = (1,), micro_batch_size: int = 1,
                  dtypes: tuple[str, ...] = ("bf16",), quick: bool = False,
                  attentions: tuple[str, ...] = ("cudnn", "sdpa")) -> list[RunConfig]:
    """Run configs of the grid; TP > 1 with and without sequence parallelism; attention by
    each backend in ``attentions``."""
    try:
        spec = catalog_gpu(gpu)
        mcfgs = [catalog_model(name) for name in models]
    except ConfigError as exc:
        raise ProfileError(str(exc)) from None
    out: list[RunConfig] = []
    for m in mcfgs:
        if getattr(m, "is_moe", False):
            raise ProfileError(f"model {m.name} is a mixture of experts; the profiler measures "
                               "dense decoder layers only")
        m = quick_model(m) if quick else m
        for tp in tps:
            for cp in cps:
                for seq in seqs:
                    s = max(16, seq // QUICK_SEQ_DIVISOR) if quick else seq
                    for dtype in dtypes:
                        for sp in ((False, True) if tp > 1 else (False,)):
                            for attn in attentions:
                                out.append(run_config(m, tp, cp, sp, s, micro_batch_size, dtype,
                                                   spec, attn))
    return out


def run_config(m: ModelConfig, tp: int, cp: int, sp: bool, seq: int, mbs: int, dtype: str,
               spec: Any, attention: str = "sdpa") -> RunConfig:
    """The one-node run the profiler measures a layer of (the database's layer records name
    its model, TP, sequence, micro-batch and dtype)."""
    try:
        return RunConfig(
            model=m,
            parallel=ParallelConfig(tensor_model_parallel_size=tp, context_parallel_size=cp,
                                    sequence_parallel=sp),
            training=TrainingConfig(global_batch_size=mbs, micro_batch_size=mbs,
                                    seq_length=seq, dtype=dtype,  # type: ignore[arg-type]
                                    attention=attention),  # type: ignore[arg-type]
            cluster=ClusterConfig(gpu=spec, num_gpus=tp * cp, gpus_per_node=max(8, tp * cp)))
    except ConfigError as exc:
        raise ProfileError(f"{m.name} tp={tp} cp={cp} seq={seq}: {exc}") from None


def layer_cases(cfgs: list[RunConfig]) -> list[LayerCase]:
    """Distinct (model, TP, sequence, micro-batch) layer shapes of the grid."""
    out = {LayerCase(c.model, c.parallel.tp, c.training.seq_length, c.training.micro_batch_size)
           for c in cfgs if c.parallel.cp == 1}
    return sorted(out, key=lambda c: (c.model.name, c.tp, c.seq_length))
