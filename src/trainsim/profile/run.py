"""The profiling pipeline: grid -> distinct kernels and layers -> measurements -> database."""

from __future__ import annotations

import contextlib
import datetime
import json
import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainsim.errors import TrainsimError
from trainsim.profile.schema import FORMAT, ProfileError, check_device, merge, upgraded, validate_db
from trainsim.profile.shapes import distinct_cases, layer_cases, sweep_configs

log = logging.getLogger(__name__)

Progress = Callable[[str], None]
"""Called once per finished measurement with a short description."""


@dataclass(frozen=True)
class ProfileOptions:
    gpu: str
    """Catalog name of the GPU being measured (the database's ``gpu``)."""
    models: tuple[str, ...] = ("llama3-8b", "llama3-70b")
    tps: tuple[int, ...] = (1, 2, 4, 8)
    seqs: tuple[int, ...] = (4096, 8192)
    cps: tuple[int, ...] = (1,)
    micro_batch_size: int = 1
    device: str = "cuda"
    quick: bool = False
    """Tiny shapes and 3 repeats: a dry run of every code path (CI), not data."""
    compile: bool = False
    """Also time each layer under torch.compile."""
    kernels: bool = True
    layers: bool = True
    command: str = ""


@dataclass
class Plan:
    """What a run will measure (torch-free: the grid expanded against the simulator)."""

    cases: list[Any]
    layers: list[Any]
    notes: list[str]

    @property
    def total(self) -> int:
        return len(self.cases) + len(self.layers)


def plan(opts: ProfileOptions, fp8: bool = False) -> Plan:
    notes: list[str] = []
    dtypes = ("bf16", "fp8") if fp8 else ("bf16",)
    cfgs = sweep_configs(list(opts.models), list(opts.tps), list(opts.seqs), opts.gpu,
                         cps=opts.cps, micro_batch_size=opts.micro_batch_size, dtypes=dtypes,
                         quick=opts.quick)
    cases = distinct_cases(cfgs, notes) if opts.kernels else []
    layers = layer_cases([c for c in cfgs if c.training.dtype == "bf16"]) if opts.layers else []
    return Plan(cases, layers, notes)


@contextlib.contextmanager
def _cpu_threads(dev: Any) -> Iterator[None]:
    """One intra-op thread on a CPU dry run: tiny kernels and a shared CI machine make
    OpenMP's spinning threads the slowest thing in the run."""
    import torch

    n = torch.get_num_threads()
    if dev.kind == "cpu":
        torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(n)


def _numerics(dev: Any, notes: list[str]) -> None:
    """Our layer against Hugging Face's LlamaDecoderLayer (fp32, tiny), noted either way."""
    try:
        import transformers

        from trainsim.profile.layer import check_against_hf
    except ImportError:
        notes.append("numerics check skipped: transformers is not installed")
        return
    ok, diff = check_against_hf(device=dev.torch_device)
    verdict = "matches" if ok else "MISMATCH: differs from"
    notes.append(f"numerics: layer {verdict} transformers {transformers.__version__} "
                 f"LlamaDecoderLayer (fp32, max |diff| {diff:.2g})")
    if not ok:
        log.error("the profiler's Llama layer differs from Hugging Face's (max |diff| %.3g)", diff)


def run_profile(opts: ProfileOptions, progress: Progress | None = None,
                on_plan: Callable[[Plan], None] | None = None,
                checkpoint: Callable[[dict[str, Any]], None] | None = None,
                base: dict[str, Any] | None = None) -> dict[str, Any]:
    """Measure the grid on the device and return the database object.

    ``checkpoint`` receives the partial database (marked incomplete in its notes) after every
    layer and every 50 kernels, so an interrupted run keeps what it measured. ``base``: the
    ``--merge`` database the records will join, whose device is checked as soon as the device
    is open (robust50 lead 1: another device's database was refused only at the first partial
    write, after 50 kernels had been measured)."""
    try:
        import torch
    except ImportError:
        if opts.device == "cpu":  # the dry run needs PyTorch too: no other device to point at
            raise ProfileError('--device cpu needs PyTorch (a CPU build), which is not '
                               'installed: pip install -e ".[torch]"') from None
        raise ProfileError("needs a CUDA GPU and PyTorch; use --device cpu to dry-run") from None
    from trainsim.profile.device import Budget, open_device
    from trainsim.profile.kernels import fp8_supported, time_kernel
    from trainsim.profile.layer import time_layer
    from trainsim.profile.work import check_cpu_work, fitting

    dev = open_device(opts.device)
    if base is not None:
        check_device(upgraded(base), dev.name)
    fp8, fp8_note = fp8_supported(dev)
    work = plan(opts, fp8)
    over: list[str] = []  # before any measurement (fuzz33): a CPU dry run is refused whole,
    if dev.memory_bytes is None:  # a GPU skips what cannot fit its memory
        check_cpu_work(work.cases, work.layers, opts.micro_batch_size)
    else:
        work.cases, work.layers, over = fitting(work.cases, work.layers, dev.cache_bytes,
                                                dev.memory_bytes, opts.micro_batch_size)
    notes = ([fp8_note] if fp8_note else []) + work.notes + over
    if opts.quick:
        notes.insert(0, "--quick: tiny shapes and 3 repeats, a dry run; not data for prediction")
    if on_plan:
        on_plan(work)
    budget = Budget.quick() if opts.quick else Budget()
    kernels: list[dict[str, Any]] = []
    layers: list[dict[str, Any]] = []
    versions = dev.versions()

    def snapshot(done: int) -> dict[str, Any]:
        partial = [] if done == work.total else [f"incomplete: {done} of {work.total} measured"]
        return {"format": FORMAT, "gpu": opts.gpu, "device_name": dev.name, **versions,
                "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "command": opts.command, "compile": opts.compile, "notes": notes + partial,
                "kernels": list(kernels), "layers": list(layers)}

    with _cpu_threads(dev):
        if work.layers:
            _numerics(dev, notes)
        for n, case in enumerate(work.cases):
            label = case.kernel.label()
            try:
                t = time_kernel(case.kernel, dev, budget)
            except (RuntimeError, ValueError, TypeError, NotImplementedError) as exc:
                notes.append(f"failed: {label}: {str(exc).splitlines()[0][:200]}")
                log.warning("kernel %s failed: %s", label, exc)
            else:
                for r in case.records:
                    why = unphysical(r, t.median_s, opts.gpu)
                    if why:  # e.g. a backward that launched no kernel
                        notes.append(f"not a measurement, dropped: {label}: {why}")
                        continue
                    kernels.append({**r, "time_s": t.median_s, "repeats": t.repeats})
            _free(torch, dev)
            if progress:
                progress(label)
            if checkpoint and (n + 1) % 50 == 0:
                checkpoint(snapshot(n + 1))
        for n, lc in enumerate(work.layers):
            label = f"layer {lc.model.name} tp={lc.tp} seq={lc.seq_length}"
            for compiled in (False, True) if opts.compile else (False,):
                try:
                    layers.append(time_layer(lc, dev, budget, compiled=compiled))
                except Exception as exc:  # noqa: BLE001 - torch.compile raises many kinds
                    what = "torch.compile failed for" if compiled else "failed:"
                    notes.append(f"{what} {label}: {str(exc).splitlines()[0][:200]}")
                    log.warning("%s %s: %s", what, label, exc)
                _free(torch, dev)
            if progress:
                progress(label)
            if checkpoint:
                checkpoint(snapshot(len(work.cases) + n + 1))
    return snapshot(work.total)


def unphysical(record: dict[str, Any], time_s: float, gpu_name: str) -> str | None:
    """Why a record cannot be a measurement on ``gpu_name`` (faster than its peak FLOP/s or
    HBM bandwidth: ``compute.database.physical_violation``), or None."""
    from trainsim.catalog import gpu as catalog_gpu
    from trainsim.compute.database import op_from_record, physical_violation

    return physical_violation(op_from_record(record), time_s, catalog_gpu(gpu_name))


def _free(torch: Any, dev: Any) -> None:
    if dev.kind == "cuda":
        torch.cuda.empty_cache()


def read_db(path: str | Path) -> dict[str, Any]:
    """A kernel database, read up to safe_load's size limit (``--merge --out /dev/full`` read
    the device's endless bytes until the process ran out of memory)."""
    from trainsim.config.safe_load import read_text

    try:
        return json.loads(read_text(path, "kernel database"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ProfileError(f"cannot read kernel database {path}: {exc}") from None


def check_base(base: Any, gpu: str, out: str | Path) -> None:
    """Refuse, before anything is measured, a ``--merge`` database that this run's records
    cannot join. robust50: a foreign format or GPU was found only when the first partial
    database was written, after the measurements had begun, and a JSON list or a string
    ``notes`` raised an internal error there."""
    if not isinstance(base, dict):
        errors = ["it is not a JSON object"]
    elif (base := upgraded(base)).get("format") != FORMAT or base.get("gpu") != gpu:
        errors = [(f"it is format {base.get('format')!r} for gpu {base.get('gpu')!r}; this "
                   f"run writes {FORMAT!r} for {gpu!r}")]
    else:
        notes = base.get("notes", [])
        errors = validate_db(base) + ([] if isinstance(notes, list) and all(
            isinstance(n, str) for n in notes) else ["notes must be a list of strings"])
        for i, r in enumerate(base.get("kernels") or [] if not errors else []):
            try:
                why = unphysical(r, r["time_s"], gpu)
            except TrainsimError as exc:  # a record the loader cannot read
                why = str(exc)
            if why:
                errors.append(f"kernels[{i}]: {why}")
    if errors:
        raise ProfileError(f"--merge: {out} cannot take this run's records: "
                           f"{'; '.join(errors[:3])}; move it aside or drop --merge")


def write_db(db: dict[str, Any], out: str | Path, base: dict[str, Any] | None = None
             ) -> dict[str, Any]:
    """Validate and write ``db`` (merged over the records of ``base``, if given)."""
    out = Path(out)
    if base is not None:
        db = merge(base, db)
    errors = validate_db(db) + [
        f"kernels[{i}]: {why}" for i, r in enumerate(db.get("kernels") or [])
        if (why := unphysical(r, r["time_s"], db["gpu"]))]
    if errors:
        raise ProfileError("the measured database is invalid: " + "; ".join(errors[:5]))
    out.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(db, indent=1) + "\n"
    if out.exists() and not out.is_file():  # a device or a pipe (/dev/full): write through it;
        out.write_text(text)                # replacing it would destroy the device node
        return db
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, out)
    return db
