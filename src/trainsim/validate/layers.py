"""Whole decoder layers measured alone on one GPU (``layers_*.jsonl``, shared validation README):
forward plus backward time and the activation bytes a layer keeps for its backward.

Each record is a Hugging Face transformers layer (bf16 weights, SDPA) run eagerly or under
``torch.compile``: a one-layer model of the record's shape (``-tpN`` labels are the per-GPU
slice, measured without communication) built as the ``pytorch`` framework profile builds it at
the record's torch release (its modules eager, SDPA dispatched to the kernel that release
picks on that GPU), priced op by op like a training step (compute chain, launch overhead of
the host) on one GPU alone at its boost clock. ``compile`` fuses the memory-bound modules.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import warnings
from pathlib import Path
from typing import Any

from trainsim.catalog import gpu as catalog_gpu
from trainsim.catalog.defaults import gpu_arch
from trainsim.catalog.frameworks import framework_profile
from trainsim.config import ClusterConfig, ModelConfig, ParallelConfig, RunConfig, TrainingConfig
from trainsim.config.records import MIN_MEASURED, positive_value, record_count, shown
from trainsim.config.safe_load import read_text
from trainsim.errors import ConfigError, TrainsimError, TrainsimWarning
from trainsim.memory.estimate import activation_bytes_per_layer
from trainsim.validate.common import GiB, RowResult
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.ops import Elementwise, Gemm
from trainsim.workload.shard import shard_of

FAMILIES: dict[str, dict[str, Any]] = {
    # Hugging Face modelling files: LlamaDecoderLayer, Qwen3DecoderLayer (q_norm, k_norm),
    # GPTNeoXLayer (use_parallel_residual, LayerNorm, biases, GeLU), Qwen3MoeDecoderLayer
    "llama": {"normalization": "rmsnorm", "activation": "swiglu"},
    "qwen3": {"normalization": "rmsnorm", "activation": "swiglu", "qk_layernorm": True},
    "qwen3moe": {"normalization": "rmsnorm", "activation": "swiglu", "qk_layernorm": True},
    "neox": {"normalization": "layernorm", "activation": "gelu", "parallel_block": True,
             "add_bias_linear": True},
}
"""Architecture of each record ``family``: what the shape does not say."""

DEVICES = {"H100 80GB HBM3": "h100-sxm-80gb", "H200": "h200-sxm-141gb", "H100": "h100-sxm-80gb",
           "B200": "b200-sxm-180gb", "A100-SXM4-80GB": "a100-sxm-80gb"}
"""CUDA device names -> catalog GPUs (first match wins)."""
SHAPE_KEYS = ("h", "ffn", "heads", "kv", "hd", "experts", "topk", "moe_ffn")
"""The keys of a record's ``shape`` (shared validation README, layers_h100_measured.jsonl)."""
MODES = {"eager": False, "compile": True}
"""A record's ``mode``: run as written, or under ``torch.compile``."""


def json_int(text: str) -> int | float:
    """A JSON integer as ``json`` reads it, but one longer than Python's integer-conversion
    limit (``sys.get_int_max_str_digits``, 4,300 digits) as the float it stands for (inf):
    refused by its field's check, naming the field (robust52: a 5,001-digit ``seq`` raised
    "Exceeds the limit (4300 digits) for integer string conversion", and on a file's first
    record told "no layer record")."""
    limit = sys.get_int_max_str_digits()
    return int(text) if not limit or len(text.lstrip("-")) <= limit else float(text)


def is_layers_file(path: str | Path) -> bool:
    """A JSON-lines file of layer records (its first record has ``kind: layer``; blank lines
    before it and a UTF-8 byte-order mark, as Windows editors write, are passed over, as
    ``validate_layers`` and ``read_rows`` pass them)."""
    try:
        with open(path, "rb") as fh:
            for _ in range(64):
                head = fh.readline(65536).decode("utf-8", "replace").removeprefix("\ufeff")
                if head.strip() or not head:
                    break
        return json.loads(head, parse_int=json_int).get("kind") == "layer"
    except (OSError, ValueError, AttributeError, RecursionError):
        return False


def _gpu(rec: dict[str, Any]) -> str:
    if rec.get("gpu"):
        return str(rec["gpu"])
    device = str(rec.get("device", ""))
    for key, name in DEVICES.items():
        if key in device:
            return name
    raise ConfigError(f"unknown device {device!r}; give a 'gpu' catalog name")


def _measurement(rec: dict[str, Any], key: str, path: Any, line: int) -> float | None:
    """An optional measured value of a record: positive and finite where given (the errors
    are relative to it), else the file is refused naming the line, as for the required one."""
    value = rec.get(key)
    if value is None:
        return None
    x = positive_value(value)
    if x is None:
        raise ConfigError(f"{path} line {line}: {key}={shown(value)} must be a positive number "
                          f"(>= {MIN_MEASURED:g}): the error is relative to it")
    return x


def layer_config(rec: dict[str, Any], compute_db: str | None = "auto") -> RunConfig:
    """A one-layer, one-GPU run of the record's shape, as the pytorch profile runs it, its
    kernels priced with the kernel database ``compute_db`` (``ClusterConfig.compute_db``)."""
    family = str(rec.get("family", "llama"))
    if family not in FAMILIES:
        raise ConfigError(f"unknown layer family {family!r}; known: {', '.join(FAMILIES)}")
    sh = rec.get("shape")
    if not isinstance(sh, dict):
        raise ConfigError(f"shape={shown(sh)} must be an object with h, heads, ffn (and kv, hd, "
                          "experts, topk, moe_ffn)")
    # a key or mode read by name: another spelling ('kv_heads', 'Compile') was left unread and
    # the layer priced as MHA or eager, silently
    unknown = sorted(k for k in sh if k not in SHAPE_KEYS)
    if unknown:
        raise ConfigError(f"shape.{unknown[0]} is not a shape key; known: "
                          f"{', '.join(SHAPE_KEYS)} (h hidden, kv key/value heads, hd head width)")
    mode = rec.get("mode", "eager")
    if mode not in MODES:
        raise ConfigError(f"mode={shown(mode)} must be eager or compile (torch.compile)")
    seq, mbs = record_count(rec, "seq"), record_count(rec, "mbs", 1)
    moe = {}
    if "experts" in sh:
        moe = {"num_experts": record_count(sh, "experts", where="shape."),
               "moe_router_topk": record_count(sh, "topk", where="shape."),
               "moe_ffn_hidden_size": record_count(sh, "moe_ffn", where="shape.")}
    heads = record_count(sh, "heads", where="shape.")
    model = ModelConfig(name=str(rec.get("label", "layer")),
                        hidden_size=record_count(sh, "h", where="shape."), num_layers=1,
                        num_attention_heads=heads, num_kv_heads=record_count(sh, "kv", heads, "shape."),
                        head_dim=record_count(sh, "hd", where="shape.") if "hd" in sh else None,
                        ffn_hidden_size=record_count(sh, "ffn", where="shape."), vocab_size=32000,
                        position_embedding="rope", **FAMILIES[family], **moe)
    gpu_name = _gpu(rec)
    spec = dataclasses.replace(catalog_gpu(gpu_name), sustained_of_burst=1.0)  # alone
    profile = framework_profile("pytorch", str(rec.get("torch", "")).split("+")[0] or None)
    attention = str(rec.get("attn", "sdpa"))
    if attention == "sdpa":
        attention = (profile.defaults.get("sdpa_by_arch") or {}).get(gpu_arch(gpu_name), "sdpa")
    compiled = MODES[mode]
    return RunConfig(
        model=model, parallel=ParallelConfig(),
        training=TrainingConfig(global_batch_size=mbs, micro_batch_size=mbs, seq_length=seq,
                                dtype=str(rec.get("dtype", "bf16")),  # type: ignore[arg-type]
                                attention=attention,  # type: ignore[arg-type]
                                modules=profile.defaults.get("modules") or "eager",
                                compile=compiled),
        cluster=ClusterConfig(gpu=spec, num_gpus=1, gpus_per_node=1, compute_db=compute_db))


def _grad_accumulation(fwd: list) -> list[Elementwise]:
    """The records' protocol: after the first repeat each weight gradient is added into the
    existing ``.grad`` by autograd's AccumulateGrad, one add kernel per weight (read both,
    write: 3 x 2 bytes per 16-bit parameter), which no fused GEMM epilogue hides."""
    return [Elementwise(f"{op.name}.grad_accumulate", bytes=3 * 2 * op.batch * op.n * op.k,
                        kernel="residual_add") for op in fwd if isinstance(op, Gemm)]


def predict_layer(rec: dict[str, Any], compute_db: str | None = "auto"
                  ) -> tuple[float, float, float]:
    """(forward s, forward + backward s, activation bytes kept) of one layer record."""
    from trainsim.pricing import Pricer

    cfg = layer_config(rec, compute_db)
    sh = shard_of(cfg)
    fwd = layer_forward(cfg, sh, moe=cfg.model.is_moe)
    pricer = Pricer(cfg)
    t_fwd = pricer.price_ops(fwd)[0].duration_s
    t_bwd = pricer.price_ops(backward_of(fwd, sh) + _grad_accumulation(fwd))[0].duration_s
    # what the layer keeps for its backward, plus its output (the record's memory delta)
    output = sh.tokens * cfg.model.hidden_size * 2
    kept = activation_bytes_per_layer(cfg, moe=cfg.model.is_moe) + output
    return t_fwd, t_fwd + t_bwd, kept


def validate_layers(path: str | Path, compute_db: str | None = "auto") -> list[RowResult]:
    """Every record of a layers file, priced with the kernel database ``compute_db`` ('auto':
    the one bundled for the record's GPU; None: the analytic model alone; or a path)."""
    out: list[RowResult] = []
    seen: dict[str, int] = {}
    text = read_text(path, "layers file").removeprefix("\ufeff")
    for i, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line, parse_int=json_int)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path} line {i} is not JSON: {exc}") from None
        except RecursionError:  # json's decoder recurses once a bracket (fuzz44)
            raise ConfigError(f"{path} line {i} nests its brackets too deep to read; a layer "
                              "record is one flat JSON object") from None
        if not isinstance(rec, dict):
            raise ConfigError(f"{path} line {i} is not a layer record (a JSON object)")
        rid = f"{rec.get('label')}-s{rec.get('seq')}-b{rec.get('mbs', 1)}-{rec.get('mode', 'eager')}"
        if rid in seen:  # as read_rows' _check_ids warns of a CSV row id given twice
            warnings.warn(f"{path} lines {seen[rid]} and {i} are both record {rid!r} (label, "
                          "seq, mbs, mode); each counts in the summary", TrainsimWarning,
                          stacklevel=2)
        seen.setdefault(rid, i)
        if rec.get("fwd_bwd_ms") is None:
            raise ConfigError(f"{path} line {i}: fwd_bwd_ms=None must be a positive number: the "
                              "error is relative to it")
        measured = _measurement(rec, "fwd_bwd_ms", path, i) * 1e-3  # type: ignore[operator]
        saved = _measurement(rec, "saved_activation_bytes", path, i)
        fwd_ms = _measurement(rec, "fwd_ms", path, i)
        res = RowResult(id=rid, measured=measured)
        res.extra = {"kind": "layer", "implementation": str(rec.get("mode", "eager")),
                     "dtype": str(rec.get("dtype", "bf16")), "unit": "s",
                     "source_key": f"{rec.get('family')}/{rec.get('mode', 'eager')}"}
        if saved:
            res.measured_memory_gib = saved / GiB
        try:
            t_fwd, t_total, kept = predict_layer(rec, compute_db)
        except (TrainsimError, KeyError, TypeError, ValueError, AttributeError,
                ArithmeticError) as exc:
            res.error = f"{type(exc).__name__}: {exc}"
            out.append(res)
            continue
        res.predicted = t_total
        res.predicted_memory_gib = kept / GiB
        res.extra.update(fwd_s=t_fwd, measured_fwd_s=(fwd_ms or 0.0) * 1e-3)
        out.append(res)
    return out
