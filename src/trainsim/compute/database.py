"""Measured kernel times: exact hits, interpolation in shape space, cross-GPU scaling.

The database is the JSON written by ``trainsim profile`` (format ``trainsim-kernel-db/1``).
A lookup tries, in order:

1. an exact hit (same op kind and shape);
2. interpolation among measured ops of the same kind and dtype: the achieved rate (FLOP/s for
   GEMMs and attention, bytes/s for memory-bound ops) is interpolated linearly in log(work)
   between the nearest smaller and larger measured ops; outside the measured range the nearest
   point's rate is used, never extrapolated upward;
3. otherwise the next model in the chain (the roofline).

When the database was measured on another GPU, each hit is scaled as SimAI does: an op that
is compute-bound on the measured GPU (arithmetic intensity above its ridge point) by the ratio
of sustained matmul FLOP/s, a memory-bound one by the ratio of HBM bandwidth
(Wang et al. 2025, SimAI, §4.2).
"""

from __future__ import annotations

import bisect
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainsim.config import GPUSpec
from trainsim.errors import ConfigError
from trainsim.workload.ops import Attention, Elementwise, Gemm

FORMAT = "trainsim-kernel-db/1"
ComputeOp = Gemm | Attention | Elementwise


def _key(op: ComputeOp) -> tuple:
    if isinstance(op, Gemm):
        return ("gemm", op.m, op.n, op.k, op.dtype, op.batch)
    if isinstance(op, Attention):
        return ("attention", op.batch, op.heads, op.kv_heads, op.q_len, op.kv_len, op.head_dim,
                op.causal, op.backward)
    return ("elementwise", op.name.split(".")[0], round(op.bytes))


def _family(op: ComputeOp) -> tuple:
    if isinstance(op, Gemm):
        return ("gemm", op.dtype)
    if isinstance(op, Attention):
        return ("attention", op.head_dim, op.backward)
    return ("elementwise",)


def _work(op: ComputeOp) -> float:
    return op.bytes if isinstance(op, Elementwise) else op.flops


@dataclass
class KernelDatabase:
    gpu: str
    meta: dict[str, Any]
    exact: dict[tuple, float] = field(default_factory=dict)
    curves: dict[tuple, list[tuple[float, float]]] = field(default_factory=dict)
    """family -> sorted (log work, rate) points."""

    @classmethod
    def load(cls, path: str | Path) -> KernelDatabase:
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read kernel database {path}: {exc}") from None
        if data.get("format") != FORMAT:
            raise ConfigError(f"{path}: not a {FORMAT} kernel database")
        db = cls(gpu=data["gpu"], meta={k: v for k, v in data.items() if k != "kernels"})
        for row in data.get("kernels", []):
            db.add(_op_from_row(row), float(row["time_s"]))
        return db

    def add(self, op: ComputeOp, time_s: float) -> None:
        if time_s <= 0:
            raise ConfigError(f"kernel database entry {_key(op)} has a non-positive time")
        self.exact[_key(op)] = time_s
        pts = self.curves.setdefault(_family(op), [])
        bisect.insort(pts, (math.log(_work(op)), _work(op) / time_s))

    def lookup(self, op: ComputeOp) -> tuple[float, str] | None:
        """(seconds on the database's GPU, 'exact' | 'interpolated'), or None."""
        t = self.exact.get(_key(op))
        if t is not None:
            return t, "exact"
        pts = self.curves.get(_family(op))
        work = _work(op)
        if not pts or work <= 0:
            return None
        x = math.log(work)
        i = bisect.bisect_left(pts, (x, -math.inf))
        if i == 0:
            rate = pts[0][1]
        elif i == len(pts):
            rate = pts[-1][1]
        else:
            (x0, r0), (x1, r1) = pts[i - 1], pts[i]
            w = 0.0 if x1 == x0 else (x - x0) / (x1 - x0)
            rate = r0 + w * (r1 - r0)
        return work / rate, "interpolated"


def _op_from_row(row: dict[str, Any]) -> ComputeOp:
    kind = row.get("op")
    try:
        if kind == "gemm":
            return Gemm("db", int(row["m"]), int(row["n"]), int(row["k"]), row.get("dtype", "bf16"),
                        int(row.get("batch", 1)))
        if kind == "attention":
            return Attention("db", int(row["batch"]), int(row["heads"]), int(row["kv_heads"]),
                             int(row["q_len"]), int(row["kv_len"]), int(row["head_dim"]),
                             bool(row.get("causal", True)), backward=bool(row.get("backward", False)))
        if kind == "elementwise":
            return Elementwise(str(row["name"]), float(row["bytes"]))
    except KeyError as exc:
        raise ConfigError(f"kernel database row {row} lacks {exc}") from None
    raise ConfigError(f"kernel database row has unknown op {kind!r}")


def cross_gpu_scale(op: ComputeOp, measured: GPUSpec, target: GPUSpec) -> float:
    """Factor to turn a time measured on ``measured`` into one on ``target`` (SimAI §4.2)."""
    if measured.name == target.name:
        return 1.0
    dtype = op.dtype if isinstance(op, Gemm) else "bf16"
    ridge = measured.gemm_ceiling(dtype) / measured.hbm_bw_Bps
    intensity = (op.flops / op.bytes) if op.bytes else math.inf
    if not isinstance(op, Elementwise) and intensity >= ridge:
        return measured.gemm_ceiling(dtype) / target.gemm_ceiling(dtype)
    return measured.hbm_bw_Bps / target.hbm_bw_Bps
