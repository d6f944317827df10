"""Predict published measurements: training iterations and collective bandwidths.

The file kind is told by its columns (see shared ``validation/README.md``). Empty cells in a
training row are settings the authors tuned: we choose the fastest setting that fits in
memory and report the choice ("unknown means tuned").
"""

from __future__ import annotations

import csv
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainsim.catalog import gpu as catalog_gpu
from trainsim.catalog import model_dict, run_config_from_dict
from trainsim.collectives import BUS_FACTOR
from trainsim.config import ClusterConfig, RunConfig
from trainsim.errors import ConfigError, TrainsimError
from trainsim.memory import estimate_stage_memory
from trainsim.network import AnalyticalNetwork
from trainsim.simulator import simulate

GiB = 2**30

TRAINING_REQUIRED = ["id", "model", "gpu", "num_gpus", "gpus_per_node", "tp", "pp",
                     "global_batch_size", "seq_length", "measured_iteration_s"]
COLLECTIVE_REQUIRED = ["id", "gpu", "num_gpus", "gpus_per_node", "nic_gbps_per_gpu", "collective",
                       "message_bytes", "measured_busbw_GBps"]
SHAPE_COLUMNS = ["hidden_size", "num_layers", "num_attention_heads", "num_kv_heads", "head_dim",
                 "ffn_hidden_size", "vocab_size", "activation"]
OPTION_FIELDS = {"tp_overlap": ("tp_comm_overlap",), "pp_overlap": ("overlap_p2p_comm",),
                 # DP overlap "including the first all-gather and last reduce-scatter" (MegaScale
                 # §3.2): gradients reduce under the backward, parameters gather ahead of forward
                 "dp_overlap": ("overlap_grad_reduce", "overlap_param_gather")}
KNOWN_OPTIONS = set(OPTION_FIELDS) | {"parallel_block", "sliding_window", "fused_kernels", "lamb"}


@dataclass
class RowResult:
    id: str
    measured: float
    predicted: float | None = None
    error: str | None = None
    chosen: dict[str, Any] = field(default_factory=dict)
    measured_memory_gib: float | None = None
    predicted_memory_gib: float | None = None
    fits_in_memory: bool | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ape(self) -> float | None:
        if self.predicted is None or not self.measured:
            return None
        return abs(self.predicted - self.measured) / self.measured

    @property
    def memory_ape(self) -> float | None:
        if self.predicted_memory_gib is None or not self.measured_memory_gib:
            return None
        return abs(self.predicted_memory_gib - self.measured_memory_gib) / self.measured_memory_gib

    def to_dict(self) -> dict[str, Any]:
        d = {"id": self.id, "predicted": self.predicted, "measured": self.measured,
             "ape": self.ape, "chosen": self.chosen, "error": self.error}
        if self.fits_in_memory is not None:
            d["fits_in_memory"] = self.fits_in_memory
            d["predicted_peak_memory_gib"] = self.predicted_memory_gib
        if self.measured_memory_gib is not None:
            d["measured_peak_memory_gib"] = self.measured_memory_gib
            d["memory_ape"] = self.memory_ape
        d.update(self.extra)
        return d


def read_rows(path: str | Path) -> tuple[str, list[dict[str, str]]]:
    """Read a validation CSV; returns its kind ('training' or 'collectives') and rows."""
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            columns = reader.fieldnames or []
            rows = list(reader)
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    if "measured_iteration_s" in columns:
        kind, required = "training", TRAINING_REQUIRED
    elif "measured_busbw_GBps" in columns:
        kind, required = "collectives", COLLECTIVE_REQUIRED
    else:
        raise ConfigError(f"{path}: neither a training file (needs measured_iteration_s) nor a "
                          "collectives file (needs measured_busbw_GBps)")
    missing = [c for c in required if c not in columns]
    if missing:
        raise ConfigError(f"{path}: missing column(s) {', '.join(missing)}")
    return kind, rows


def _cell(row: dict[str, str], key: str) -> str | None:
    v = (row.get(key) or "").strip()
    return v or None


def _training_base(row: dict[str, str]) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    """Raw config of a row plus the candidate values of each unknown (empty) cell."""
    model: dict[str, Any] = {"preset": row["model"]}
    try:
        model_dict(row["model"])
    except ConfigError as exc:  # not a preset: the shape columns must describe the model
        needed = ["hidden_size", "num_layers", "num_attention_heads", "vocab_size"]
        missing = [c for c in needed if _cell(row, c) is None]
        if missing:
            raise ConfigError(f"{exc}; or give the shape columns {', '.join(missing)}") from None
        model = {"name": row["model"]}
    for col in SHAPE_COLUMNS:
        if _cell(row, col) is not None:
            model[col] = _cell(row, col)
    for col, fieldname in (("num_experts", "num_experts"), ("moe_top_k", "moe_router_topk"),
                           ("moe_ffn_hidden_size", "moe_ffn_hidden_size")):
        if _cell(row, col) is not None:
            model[fieldname] = _cell(row, col)
    options = {o.strip() for o in (_cell(row, "options") or "").split(";") if o.strip()}
    unknown_opts = options - KNOWN_OPTIONS
    if unknown_opts:
        raise ConfigError(f"unknown option(s) {sorted(unknown_opts)}")
    if "parallel_block" in options:
        model["parallel_block"] = True
    if "sliding_window" in options and _preset_window(model) is None:
        # The file has no column for the window: take half the sequence, the common choice
        # (Mistral 7B and Gemma 2: 4,096 of 8,192 tokens). MegaScale (Jiang et al. 2024) does not
        # state its window; its Table 2 MFU-to-speed ratios imply attention work near 60 % of full
        # causal, which a window of s/2 (75 %) to s/3 gives.
        model["sliding_window"] = int(row["seq_length"]) // 2
    parallel: dict[str, Any] = {"tp": row["tp"], "pp": row["pp"], "cp": _cell(row, "cp") or 1,
                                "ep": _cell(row, "ep") or 1}
    for opt, fieldnames in OPTION_FIELDS.items():
        for fieldname in fieldnames:
            parallel[fieldname] = opt in options
    training: dict[str, Any] = {"global_batch_size": row["global_batch_size"],
                                "seq_length": row["seq_length"],
                                "dtype": _cell(row, "dtype") or "bf16",
                                # The file lists the features a run used. FP8 training runs on
                                # Transformer Engine, whose attention is fused; otherwise, without
                                # fused kernels, attention is Megatron's unfused QK^T/softmax/AV.
                                "attention": "flash" if ("fused_kernels" in options or
                                                         _cell(row, "dtype") == "fp8")
                                else "unfused"}
    if "lamb" in options:
        training["optimizer"] = "lamb"
    cluster: dict[str, Any] = {"gpu": row["gpu"], "num_gpus": row["num_gpus"],
                               "gpus_per_node": row["gpus_per_node"]}
    if _cell(row, "nic_gbps_per_gpu"):
        cluster["nic_gbps_per_gpu"] = row["nic_gbps_per_gpu"]
    raw = {"model": model, "parallel": parallel, "training": training, "cluster": cluster}
    unknown: dict[str, list[Any]] = {}
    known = {"vpp": ("parallel", "vpp"), "sequence_parallel": ("parallel", "sequence_parallel"),
             "recompute": ("parallel", "recompute"), "zero_stage": ("parallel", "zero_stage"),
             "distributed_optimizer": ("parallel", "distributed_optimizer"),
             "micro_batch_size": ("training", "micro_batch_size")}
    for col, (sec, key) in known.items():
        v = _cell(row, col)
        if v is not None:
            raw[sec][key] = v
    tp = int(row["tp"])
    # Candidate values, the usual first choice first (the search starts from it).
    if _cell(row, "micro_batch_size") is None:
        unknown["micro_batch_size"] = [1, 2, 4, 8]
    if _cell(row, "vpp") is None:
        unknown["vpp"] = [1, 2, 3, 4, 6, 8]
    if _cell(row, "sequence_parallel") is None:
        unknown["sequence_parallel"] = [True, False] if tp > 1 else [False]
    if _cell(row, "recompute") is None:
        unknown["recompute"] = ["none", "selective", "full"]
    if _cell(row, "distributed_optimizer") is None and _cell(row, "zero_stage") in (None, "0"):
        unknown["distributed_optimizer"] = [True, False]
    if _cell(row, "zero_stage") is None:
        raw["parallel"]["zero_stage"] = 0
    return raw, unknown


def _preset_window(model: dict[str, Any]) -> int | None:
    """The sliding window a row's model already has (its preset's), if any."""
    if "preset" not in model:
        return None
    return model_dict(model["preset"]).get("sliding_window")


def _with(raw: dict[str, Any], choice: dict[str, Any]) -> dict[str, Any]:
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in raw.items()}
    for key, value in choice.items():
        sec = "training" if key == "micro_batch_size" else "parallel"
        out[sec][key] = value
    return out


def _fits(cfg: RunConfig) -> bool:
    hbm = cfg.cluster.gpu.hbm_bytes
    return all(estimate_stage_memory(cfg, s).total <= hbm for s in range(cfg.parallel.pp))


def tune(raw: dict[str, Any], unknown: dict[str, list[Any]],
         evaluate: Callable[[RunConfig], float]) -> tuple[RunConfig, dict[str, Any]]:
    """Fastest setting of the unknown fields among those that fit in memory.

    Memory is checked for every combination (cheap, no simulation); the time is minimised by
    coordinate descent over the feasible set, one field at a time, until no single change
    helps. If nothing fits, the least-memory setting is returned (and flagged by the caller).
    """
    names = list(unknown)
    feasible: dict[tuple, RunConfig] = {}
    fallback: tuple[float, tuple, RunConfig] | None = None
    first_error: str | None = None
    for values in itertools.product(*(unknown[n] for n in names)):
        try:
            cfg = run_config_from_dict(_with(raw, dict(zip(names, values))))
        except ConfigError as exc:
            first_error = first_error or str(exc)
            continue
        mem = max(estimate_stage_memory(cfg, s).total for s in range(cfg.parallel.pp))
        if mem <= cfg.cluster.gpu.hbm_bytes:
            feasible[values] = cfg
        elif fallback is None or mem < fallback[0]:
            fallback = (mem, values, cfg)
    if not feasible:
        if fallback is None:
            raise ConfigError(first_error or "no valid setting")
        return fallback[2], dict(zip(names, fallback[1]))
    times: dict[tuple, float] = {}

    def cost(values: tuple) -> float:
        if values not in times:
            times[values] = evaluate(feasible[values])
        return times[values]

    current = next(iter(feasible))
    improved = True
    while improved:
        improved = False
        for d, name in enumerate(names):
            for value in unknown[name]:
                cand = current[:d] + (value,) + current[d + 1:]
                if cand != current and cand in feasible and cost(cand) < cost(current):
                    current, improved = cand, True
    return feasible[current], dict(zip(names, current))


def predict_training_row(row: dict[str, str]) -> RowResult:
    res = RowResult(id=row.get("id", "?"), measured=float(row["measured_iteration_s"]))
    if _cell(row, "measured_peak_memory_gib"):
        res.measured_memory_gib = float(row["measured_peak_memory_gib"])
    try:
        raw, unknown = _training_base(row)
        cfg, choice = tune(raw, unknown, lambda c: simulate(c).iteration_time_s)
        result = simulate(cfg)
    except (TrainsimError, ValueError, KeyError) as exc:
        res.error = str(exc)
        return res
    res.predicted = result.iteration_time_s
    res.chosen = {k: v for k, v in choice.items()}
    res.predicted_memory_gib = result.peak_memory_bytes / GiB
    res.fits_in_memory = result.fits_in_memory
    res.extra = {"mfu": result.mfu, "breakdown": result.breakdown}
    return res


def predict_collective_row(row: dict[str, str]) -> RowResult:
    res = RowResult(id=row.get("id", "?"), measured=float(row["measured_busbw_GBps"]))
    try:
        spec = catalog_gpu(row["gpu"])
        cluster = ClusterConfig(gpu=spec, num_gpus=int(row["num_gpus"]),
                                gpus_per_node=int(row["gpus_per_node"]),
                                nic_bw_Bps=float(row["nic_gbps_per_gpu"]) * 1e9 / 8)
        net = AnalyticalNetwork(cluster)
        kind = row["collective"].strip()
        algo = (_cell(row, "algorithm") or "auto").lower()
        size = float(row["message_bytes"])
        n = cluster.num_gpus
        span = net.span(n, 1)
        cost = net.collective(kind, size, span, algo)
        t, algo_used = cost.time_s, f"{cost.algorithm}/{cost.protocol}"
        busbw = BUS_FACTOR[kind](n) * size / t
    except (TrainsimError, ValueError, KeyError) as exc:
        res.error = str(exc)
        return res
    res.chosen = {"algorithm": algo_used}
    if _per_nic(row) and span.nodes > 1:
        # The published figure is the bus bandwidth each NIC carries (how NCCL's maintainers
        # quote network expectations); a rail-optimized node gives each of its ranks one NIC.
        busbw /= span.per_node
        res.chosen["unit"] = "busbw per NIC"
    res.predicted = busbw / 1e9
    res.extra = {"time_s": t}
    return res


_PER_NIC = re.compile(r"\bper[- ]?nic\b", re.IGNORECASE)


def _per_nic(row: dict[str, str]) -> bool:
    """A row states a per-NIC figure by a ``unit`` cell of ``per_nic`` or by saying "per NIC"
    in its note (nccl-tests issue #290: "46-48 GB/s per NIC")."""
    unit = (_cell(row, "unit") or "").lower().replace("-", "_")
    return unit == "per_nic" or bool(_PER_NIC.search(row.get("note") or ""))


def validate_file(path: str | Path, progress: Callable[[int, int], None] | None = None
                  ) -> tuple[str, list[RowResult]]:
    kind, rows = read_rows(path)
    predict = predict_training_row if kind == "training" else predict_collective_row
    out = []
    for i, row in enumerate(rows):
        out.append(predict(row))
        if progress:
            progress(i + 1, len(rows))
    return kind, out


def summarize(results: list[RowResult]) -> dict[str, Any]:
    apes = [r.ape for r in results if r.ape is not None]
    mem = [r.memory_ape for r in results if r.memory_ape is not None]
    return {
        "n": len(results),
        "mape": sum(apes) / len(apes) if apes else None,
        "max_ape": max(apes) if apes else None,
        "failed": sum(1 for r in results if r.predicted is None),
        "memory_n": len(mem),
        "memory_mape": sum(mem) / len(mem) if mem else None,
        "memory_max_ape": max(mem) if mem else None,
    }


def summary_line(s: dict[str, Any]) -> str:
    def pct(x: float | None) -> str:
        return "n/a" if x is None else f"{100 * x:.1f}%"

    line = f"{s['n']} rows, MAPE {pct(s['mape'])}, max {pct(s['max_ape'])}"
    if s["failed"]:
        line += f" ({s['failed']} failed)"
    if s["memory_n"]:
        line += (f"; memory: {s['memory_n']} rows, MAPE {pct(s['memory_mape'])}, "
                 f"max {pct(s['memory_max_ape'])}")
    return line


__all__ = ["RowResult", "predict_collective_row", "predict_training_row", "read_rows",
           "summarize", "summary_line", "tune", "validate_file"]
