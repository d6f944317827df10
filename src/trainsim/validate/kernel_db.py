"""A kernel database checked against itself: its layer records against its kernel records.

``trainsim profile`` times whole decoder layers beside the kernels they are made of. Here each
layer record is rebuilt as the simulator's ops for that layer (``workload.layers``, one TP
slice alone: no communication), each op priced by the database (exact records, neighbours, or
the analytic model calibrated on it), and the sum is compared with the layer's measured forward
plus backward. Memory-bound ops are priced as the profiler implements them
(``compute.database.PROFILED_IMPL``: eager SwiGLU and RoPE, fused norms), because that is what
the layer ran; the residual's backward without dropout runs no kernel. The disagreement is
what composing kernels misses: launch gaps, the kernels no record covers, caching effects.
"""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path
from typing import Any

from trainsim.catalog import gpu as catalog_gpu
from trainsim.catalog import model as catalog_model
from trainsim.compute.chain import ChainModel
from trainsim.compute.database import FORMATS, KernelDatabase, _read_json, as_profiled, record_impl
from trainsim.config import GPUSpec, RunConfig
from trainsim.config.records import MIN_MEASURED, positive_value, record_count
from trainsim.errors import ConfigError, NotAMeasurement, TrainsimError
from trainsim.validate.common import RowResult
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.ops import Attention, Elementwise, Gemm, Op
from trainsim.workload.shard import shard_of


def is_kernel_db(path: str | Path) -> bool:
    """A JSON file in a kernel database format (told by its first bytes, without parsing)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096).decode("utf-8", "replace")
    except OSError:
        return False
    return head.lstrip().startswith("{") and any(f'"{f}"' in head for f in FORMATS)


def layer_count(path: str | Path) -> int:
    """The layer records of a kernel database (each one row of :func:`validate_kernel_db` at
    most), counted without pricing them."""
    layers = _read_json(path).get("layers")
    return len(layers) if isinstance(layers, list) else 0


def _as_profiled(op: Op, dropout: bool) -> Op | None:
    """The op as the profiler's layer runs it (None: it launches no kernel)."""
    if not isinstance(op, Elementwise) or not op.kernel:
        return op
    if op.kernel == "residual_add.bwd" and not dropout:
        return None
    if op.impl != "fused":
        return op
    _, impl, nbytes = as_profiled(op.kernel, op.bytes)
    return dataclasses.replace(op, impl=impl, bytes=nbytes)


def _time(rec: dict[str, Any], key: str, path: Any, i: int) -> float:
    """A measured time of a layer record: positive and finite (the error is relative to it),
    else the file is refused naming the record, as a CSV with a bad measured value."""
    value = rec.get(key)
    t = positive_value(value)
    if t is None:
        raise ConfigError(f"{path}: layers[{i}].{key}={value!r} must be a positive number of "
                          f"seconds (>= {MIN_MEASURED:g}): the error is relative to it")
    return t


def _layer_config(rec: dict[str, Any], spec: GPUSpec, attention: str) -> RunConfig:
    """The run the profiler built for this layer record (``profile.shapes.run_config``)."""
    from trainsim.profile.shapes import quick_model, run_config

    if "model" not in rec:
        raise ConfigError("the layer record names no model")
    name = str(rec["model"])
    model = catalog_model(name.removesuffix("-quick"))
    if name.endswith("-quick"):  # a --quick dry run's tiny model
        model = quick_model(model)
    return run_config(model, record_count(rec, "tp"), 1, False, record_count(rec, "seq_length"),
                      record_count(rec, "micro_batch_size"), str(rec.get("dtype", "bf16")), spec,
                      attention)


def _priced(ops: list[Op], chain: ChainModel, dropout: bool) -> tuple[float, dict[str, int]]:
    total, sources = 0.0, {}
    for op in ops:
        op = _as_profiled(op, dropout)
        if isinstance(op, (Gemm, Attention, Elementwise)):
            t, how = chain.explain(op)
            total += t
            sources[how] = sources.get(how, 0) + 1
    return total, sources


def validate_kernel_db(path: str | Path) -> list[RowResult]:
    """One row per layer record: measured forward + backward against the composed kernels."""
    skipped: list[str] = []  # records no GPU could measure: left out, said once
    db = KernelDatabase.load(path, catalog_gpu, skipped)  # checked: a mapping with records
    if skipped:
        warnings.warn(f"{len(skipped)} kernel record(s) left out of the check, the first: "
                      f"{skipped[0]}", NotAMeasurement, stacklevel=2)
    data = _read_json(path)
    chain = ChainModel(db.spec, db)  # the measured GPU alone, at its boost clock
    fmt = str(data.get("format"))
    impls = {record_impl(k, fmt) for k in data.get("kernels") or [] if k.get("op") == "attention"}
    attention = impls.pop() if len(impls) == 1 and None not in impls else "cudnn"
    out = []
    for i, rec in enumerate(db.layers):
        if rec.get("compile"):
            continue  # torch.compile fuses kernels the records measured apart
        rid = f"{rec.get('model')}-tp{rec.get('tp')}-s{rec.get('seq_length')}-mbs{rec.get('micro_batch_size')}"
        res = RowResult(id=rid, measured=sum(_time(rec, key, path, i)
                                             for key in ("fwd_s", "bwd_s")))
        res.extra = {"kind": "layer", "implementation": "composed", "source_key": "layer",
                     "dtype": rec.get("dtype", "bf16"), "unit": "s"}
        try:
            cfg = _layer_config(rec, db.spec, attention)
        except TrainsimError as exc:  # the record's own fields: that row fails, with the reason
            res.error = str(exc)
            out.append(res)
            continue
        fwd = layer_forward(cfg, shard_of(cfg))
        dropout = cfg.model.hidden_dropout > 0
        t_fwd, src_f = _priced(fwd, chain, dropout)
        t_bwd, src_b = _priced(backward_of(fwd, shard_of(cfg)), chain, dropout)
        res.predicted = t_fwd + t_bwd
        res.chosen = {"attention": attention}
        res.extra.update(fwd_s=t_fwd, bwd_s=t_bwd, measured_fwd_s=rec["fwd_s"],
                         measured_bwd_s=rec["bwd_s"],
                         sources={k: src_f.get(k, 0) + src_b.get(k, 0)
                                  for k in sorted({*src_f, *src_b})})
        out.append(res)
    if not out:
        raise ConfigError(f"{path}: the kernel database has no eager layer records to check")
    return out
