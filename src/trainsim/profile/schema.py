"""The kernel database format written by ``trainsim profile`` (``trainsim-kernel-db/3``).

One JSON object::

    {"format": "trainsim-kernel-db/3", "gpu": "h100-sxm-80gb", "device_name": "NVIDIA H100 ...",
     "driver": "550.54.15", "torch": "2.13.0", "cuda": "12.8", "created": "2025-...",
     "command": "trainsim profile ...", "compile": false, "notes": ["..."],
     "kernels": [{"op": "gemm", "m", "n", "k", "dtype", "batch", ["fp8_fast_accum"], "time_s",
                  "repeats"},
                 {"op": "attention", "impl", "batch", "heads", "kv_heads", "q_len", "kv_len",
                  "head_dim", "causal", "backward", "time_s", "repeats"},
                 {"op": "elementwise", "name", "kernel", "impl", "bytes", "time_s", "repeats"}],
     "layers": [{"model", "tp", "seq_length", "micro_batch_size", "dtype", "granularity",
                 "fwd_s", "bwd_s", "peak_memory_bytes", "compile",
                 "submodules": {"attention": {"fwd_s", "bwd_s"}, "mlp": {...}},
                 "kernels": [{"name", "time_s", "calls"}]}]}

Kernel records carry the simulator op's own shape fields (``trainsim.workload.ops``), so a
database lookup for an op is an exact match on :func:`kernel_key`. Attention records name the
backend that ran (``impl``: ``cudnn``, ``sdpa`` (until the 63rd session written ``flash2``,
read as ``sdpa``: ``compute.database.SDPA_RECORD_IMPL``), ``mem_efficient``; format 2 wrote
``flash1`` for the memory-efficient backend, read as ``mem_efficient``:
``compute.database.LEGACY_IMPL``); elementwise records name their kernel family (``rmsnorm.bwd``; the simulator op's
``Elementwise.kernel``) and the implementation the profiler ran (``fused``, ``eager``), with
the bytes that implementation moves. An fp8 GEMM record run without cuBLAS's split
accumulator (``torch._scaled_mm(use_fast_accum=True)``, the simulator's forward fp8 GEMMs)
says ``"fp8_fast_accum": true``; absent, it ran with it. Format 1 (no ``impl``) is still read by
``trainsim.compute.database``. Times are
medians in seconds; ``driver`` and ``cuda`` are null on a CPU dry run. This module does not
import torch.
"""

from __future__ import annotations

from typing import Any

from trainsim.compute.database import FORMAT, record_impl
from trainsim.errors import TrainsimError

UPGRADABLE = "trainsim-kernel-db/2"
"""A format whose records differ from this one's only in naming the memory-efficient backend
``flash1``: a database of it is merged into after renaming them."""

TOP_KEYS = ("format", "gpu", "device_name", "driver", "torch", "cuda", "created", "command",
            "compile", "kernels", "layers")
KERNEL_KEYS = {
    "gemm": ("m", "n", "k", "dtype", "batch"),
    "attention": ("impl", "batch", "heads", "kv_heads", "q_len", "kv_len", "head_dim", "causal",
                  "backward"),
    "elementwise": ("kernel", "impl", "bytes"),
}
LAYER_KEYS = ("model", "tp", "seq_length", "micro_batch_size", "dtype", "granularity", "fwd_s",
              "bwd_s", "peak_memory_bytes", "compile", "submodules", "kernels")


class ProfileError(TrainsimError):
    """The profiler cannot run (no device, bad option) or produced an invalid database."""


def kernel_key(record: dict[str, Any]) -> tuple[Any, ...]:
    """Identity of a kernel record: its op kind and shape fields (not its time)."""
    op = record["op"]
    optional = (bool(record.get("fp8_fast_accum", False)),) if op == "gemm" else ()
    return (op, *(record[k] for k in KERNEL_KEYS[op]), *optional)


LAYER_ID_KEYS = ("model", "tp", "seq_length", "micro_batch_size", "dtype", "compile")


def layer_key(record: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(record[k] for k in LAYER_ID_KEYS)


def _positive(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0


def validate_db(db: Any) -> list[str]:
    """Problems with a database object (empty list when it is valid)."""
    if not isinstance(db, dict):
        return ["the database is not a JSON object"]
    errors = [f"missing top-level key '{k}'" for k in TOP_KEYS if k not in db]
    if db.get("format") != FORMAT:
        errors.append(f"format is {db.get('format')!r}, expected {FORMAT!r}")
    if not isinstance(db.get("compile"), bool):
        errors.append("compile must be true or false")
    for key in ("kernels", "layers"):  # robust50: a string or a number here raised
        if not isinstance(db.get(key) or [], list):
            errors.append(f"{key} must be a list of records, not {type(db[key]).__name__}")
            return errors
    for i, rec in enumerate(db.get("kernels") or []):
        where = f"kernels[{i}]"
        op = rec.get("op") if isinstance(rec, dict) else None
        if not isinstance(op, str) or op not in KERNEL_KEYS:
            errors.append(f"{where}.op={op!r} is not one of {list(KERNEL_KEYS)}")
            continue
        errors += [f"{where} ({op}) lacks '{k}'" for k in KERNEL_KEYS[op] if k not in rec]
        errors += [f"{where}.{k}={rec[k]!r} must be a number, a word or true / false"
                   for k in KERNEL_KEYS[op] if isinstance(rec.get(k), (list, dict))]
        if not _positive(rec.get("time_s")):
            errors.append(f"{where}.time_s={rec.get('time_s')!r} must be a positive number")
    for i, rec in enumerate(db.get("layers") or []):
        where = f"layers[{i}]"
        if not isinstance(rec, dict):
            errors.append(f"{where} is not an object")
            continue
        errors += [f"{where} lacks '{k}'" for k in LAYER_KEYS if k not in rec]
        errors += [f"{where}.{k}={rec[k]!r} must be a number, a word or true / false"
                   for k in LAYER_ID_KEYS if isinstance(rec.get(k), (list, dict))]
        for k in ("fwd_s", "bwd_s"):
            if k in rec and not _positive(rec[k]):
                errors.append(f"{where}.{k}={rec[k]!r} must be a positive number")
        mem = rec.get("peak_memory_bytes")
        if not isinstance(mem, int) or mem < 0:
            errors.append(f"{where}.peak_memory_bytes={mem!r} must be an integer >= 0")
        subs, kernels = rec.get("submodules") or {}, rec.get("kernels") or []
        if not isinstance(subs, dict) or not isinstance(kernels, list):  # robust50: raised
            errors.append(f"{where}: submodules must be an object and kernels a list")
            continue
        for name, sub in subs.items():
            if not (isinstance(sub, dict) and _positive(sub.get("fwd_s"))
                    and _positive(sub.get("bwd_s"))):
                errors.append(f"{where}.submodules.{name} needs positive fwd_s and bwd_s")
        for j, k in enumerate(kernels):
            if not (isinstance(k, dict) and isinstance(k.get("name"), str)
                    and _positive(k.get("time_s"))):
                errors.append(f"{where}.kernels[{j}] needs a name and a positive time_s")
    return errors


def upgraded(old: dict[str, Any]) -> dict[str, Any]:
    """``old`` in this format's words (an UPGRADABLE database's attention records renamed as
    the loader reads them); any other database as it is."""
    if old.get("format") != UPGRADABLE:
        return old
    return {**old, "format": FORMAT, "kernels": [
        {**r, "impl": record_impl(r, UPGRADABLE)} if isinstance(r, dict)
        and r.get("op") == "attention" and r.get("impl") is not None else r
        for r in old.get("kernels") or []]}


def check_device(old: dict[str, Any], device_name: str) -> None:
    """Refuse to merge records measured on ``device_name`` into ``old`` measured on another
    device (the catalog's GPU names a family; the device's own name tells, e.g., H100 SXM
    from PCIe)."""
    if old.get("device_name") != device_name:
        raise ProfileError(f"cannot merge: the database was measured on {old.get('device_name')!r}, "
                           f"this device is {device_name!r}")


def merge(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """``new`` with the records of ``old`` (same GPU) that ``new`` did not re-measure."""
    old = upgraded(old)
    if old.get("format") != FORMAT or old.get("gpu") != new["gpu"]:
        raise ProfileError(f"cannot merge into a database of format {old.get('format')!r} for "
                           f"gpu {old.get('gpu')!r}; profiling {new['gpu']!r}")
    check_device(old, new["device_name"])
    out = dict(new)
    seen = {kernel_key(r) for r in new["kernels"]}
    out["kernels"] = [r for r in old.get("kernels", []) if kernel_key(r) not in seen] + new["kernels"]
    seen_l = {layer_key(r) for r in new["layers"]}
    out["layers"] = [r for r in old.get("layers", []) if layer_key(r) not in seen_l] + new["layers"]
    out["command"] = f"{old.get('command', '')} && {new['command']}".lstrip(" &")
    out["notes"] = list(dict.fromkeys([*old.get("notes", []), *new.get("notes", [])]))
    out["compile"] = bool(old.get("compile")) or bool(new["compile"])
    return out
