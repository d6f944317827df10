"""What a service request holds and may ask, before any job runs: the job kinds, each kind's
options (the CLI command's flags, with their defaults), the refusals of names that would make
the server read its own files, and the readers of one option (``options.<name>`` named in each
refusal). ``service.jobs`` runs the kinds on them."""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainsim.config import safe_load
from trainsim.errors import TrainsimError
from trainsim.service.settings import Limits

KINDS = ("simulate", "search", "validate", "sweep", "goodput", "plan")

Progress = Callable[[float, str], None]
"""progress(fraction done in [0, 1], phase)."""


class RequestError(TrainsimError):
    """A request the server will not run: ``field`` names the part of the request at fault."""

    def __init__(self, field: str, message: str, status: int = 422) -> None:
        super().__init__(message)
        self.field = field
        self.status = status


@dataclass(frozen=True)
class Output:
    result: str
    """Exactly what the CLI prints to stdout with ``--format json`` (newline included)."""
    trace: str | None = None
    """Chrome/Perfetto trace JSON (simulate with ``options.trace``)."""
    plot: bytes | None = None
    """The PNG the CLI writes with ``--plot`` (simulate, sweep, validate of one file, search and
    goodput with ``options.plot``)."""


def _dumps(obj: Any, sort_keys: bool = True) -> str:
    # click.echo's newline included: the stored text is the CLI's stdout
    return json.dumps(obj, indent=2, sort_keys=sort_keys) + "\n"


# ------------------------------------------------------------------------------ options

_COMMON_SEARCH = {"model": None, "gpu": None, "gpus_per_node": None, "nic_gbps": None,
                  "dtype": None, "set": [], "tp": None, "pp": None, "cp": None, "max_vpp": None,
                  "max_micro_batch": 8, "recompute": "none,selective,full", "zero": None,
                  "overlap": "search", "ep": None, "etp": None, "dispatcher": None,
                  "schedules": None}
"""The options of search and plan jobs, with the defaults of ``trainsim search``'s flags."""
OPTIONS: dict[str, dict[str, Any]] = {
    "simulate": {"set": [], "trace": False, "plot": False},
    "sweep": {"vary": [], "steps": 5, "set": [], "plot": False},
    "goodput": {"tokens": None, "days": None, "gpus": None, "failures": None, "interval": None,
                "seed": 0, "trials": 1000, "set": [], "sweep": False, "plot": False},
    "validate": {"file": None, "csv": None, "plot": False},
    "search": {**_COMMON_SEARCH, "gpus": None, "global_batch": None, "seq": None, "top": 10,
               "rank_by": "split", "reference": None, "exhaustive": False,
               "pareto_slowdown": 1.25, "plot": False},
    "plan": {**_COMMON_SEARCH, "tokens": None, "days": None, "global_batch": None, "seq": None,
             "max_gpus": 65536, "price": None, "pue": None, "grid": 400.0,
             "gpu_idle_fraction": 0.15, "node_overhead": 0.5},
}


def _options(kind: str, options: dict[str, Any]) -> dict[str, Any]:
    known = OPTIONS[kind]
    for key in options:
        if key not in known:
            raise RequestError(f"options.{key}", f"options.{key}: not an option of {kind}; "
                               f"known: {', '.join(known)}")
    for key, value in options.items():
        if isinstance(value, str) and not value.strip() and key != "csv":
            # as the CLI's ``--reference ''`` (cli_guard._refuse_blank): '' was taken as the
            # option left out (dispatcher, schedules, reference, failures, global_batch)
            raise RequestError(f"options.{key}", f"options.{key}={value!r}: an empty value; "
                               "leave the option out (or null) for its default")
    out = {**known, **{k: v for k, v in options.items() if v is not None}}
    for key in ("set", "vary"):
        if key in out:
            v = out[key]
            v = [v] if isinstance(v, str) else v
            if not isinstance(v, list) or not all(isinstance(s, str) for s in v):
                raise RequestError(f"options.{key}", f"options.{key}: expected a list of strings")
            out[key] = list(v)
    return out


def _no_server_files(config: dict[str, Any]) -> None:
    """A client may not make the server read its own files (hf_config, failure profile paths)."""
    model = config.get("model")
    if isinstance(model, dict) and "hf_config" in model:
        raise RequestError("config.model.hf_config", "config.model.hf_config: the server does "
                           "not read files; give the model's fields instead")
    rel = config.get("reliability")
    failures = rel.get("failures") if isinstance(rel, dict) else None
    if isinstance(failures, str) and ("/" in failures or "\\" in failures):
        raise RequestError("config.reliability.failures", "config.reliability.failures: give "
                           "a catalog profile name, not a path")
    cluster = config.get("cluster")
    if isinstance(cluster, dict):
        _no_kernel_db(cluster.get("compute_db"), "config.cluster.compute_db")
        _no_gpu_file(cluster.get("gpu"), "config.cluster.gpu")


def _no_gpu_file(value: Any, field: str) -> None:
    """cluster.gpu as a path: a config reads a GPU spec file there (``catalog.gpu_file_path``),
    which on the server would be the server's file; a catalog name is taken."""
    from trainsim import catalog
    from trainsim.errors import CatalogError

    if not isinstance(value, str) or not _looks_like_file(value):
        return
    try:
        catalog.gpu(value)
        return
    except CatalogError:
        pass
    raise RequestError(field, f"{field}={value!r}: the server does not read files; give a "
                       "catalog name or the GPU's fields as a mapping")


DB_WORDS = ("auto", "none", "null", "")
"""cluster.compute_db values that name no file: the bundled database, or none."""


def _no_kernel_db(value: Any, field: str) -> None:
    """cluster.compute_db names a file on the server unless it is one of ``DB_WORDS``."""
    if isinstance(value, str) and value.strip().lower() not in DB_WORDS:  # (not text: the
        # config's own refusal, in simulate's words)
        raise RequestError(field, f"{field}: the server does not read files; give auto (the "
                           "kernel database bundled for the GPU) or none")


def _looks_like_file(text: str) -> bool:
    """A name a search/plan option would read as a file on the server (``search.cli``'s
    ``model_spec`` and ``_gpu_spec`` read an existing path, or name a missing one)."""
    path = Path(text)
    return path.suffix.lower() in (".json", ".yaml", ".yml") or "/" in text or "\\" in text \
        or path.exists()


def _no_server_paths(kind: str, config: dict[str, Any], opts: dict[str, Any]) -> None:
    """The flags' own ways of naming a server file: ``set``/``vary`` of a field read as a path,
    and search/plan's model and GPU, which the CLI reads from a file when one exists."""
    from trainsim import catalog
    from trainsim.errors import CatalogError

    for key in ("set", "vary"):
        for i, item in enumerate(opts.get(key) or ()):
            name, _, value = item.partition("=")
            name = name.strip()
            field = f"options.{key}[{i}]"
            if name == "cluster.compute_db":
                for v in (value.split(",") if key == "vary" else [value]):
                    _no_kernel_db(v, field)
            elif name == "cluster.gpu":
                for v in (value.split(",") if key == "vary" else [value]):
                    _no_gpu_file(v.strip(), field)
            elif name == "model.hf_config":
                raise RequestError(field, f"{field}: the server does not read files; give the "
                                   "model's fields instead")
            elif name == "reliability.failures" and ("/" in value or "\\" in value):
                raise RequestError(field, f"{field}: give a catalog profile name, not a path")
    if kind not in ("search", "plan"):
        return
    cluster = config.get("cluster") if isinstance(config.get("cluster"), dict) else {}
    for field, value, known in (
            ("options.model", opts.get("model"), lambda v: catalog.model_name(v) is not None),
            ("config.model", config.get("model"), lambda v: catalog.model_name(v) is not None),
            ("options.gpu", opts.get("gpu"), catalog.gpu),
            ("config.cluster.gpu", cluster.get("gpu"), catalog.gpu)):
        if not isinstance(value, str) or not _looks_like_file(value):
            continue
        try:
            if known(value):
                continue
        except CatalogError:
            pass
        raise RequestError(field, f"{field}={value!r}: the server does not read files; give a "
                           "catalog name or the fields as a mapping")


@contextmanager
def _workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="trainsim-job-") as d:
        yield Path(d)


def _write(path: Path, data: Any) -> str:
    """``data`` as a JSON file the CLI's loaders read; a number keeps the text it was sent as
    (``"framework_version": 0.10`` is Megatron-core 0.10, not 0.1). A number that is not finite
    (YAML ``.nan``, ``-.inf``) has no JSON form: it is refused here, naming its field as the
    CLI's loader does, not by the loader reading the server's temporary file back."""
    _finite(data, "config")
    path.write_text(safe_load.dumps(data))
    return str(path)


def _finite(data: Any, where: str) -> None:
    """RequestError at the first number in ``data`` that is NaN or infinite."""
    if isinstance(data, float) and not math.isfinite(data):
        raise RequestError(where, f"{where.removeprefix('config.')} must be a finite number, "
                           f"got {data!s}")
    items = data.items() if isinstance(data, dict) else enumerate(data) \
        if isinstance(data, (list, tuple)) else ()
    for key, value in items:
        _finite(value, f"{where}.{key}")


def _int(opts: dict[str, Any], key: str, least: int = 0) -> int:
    """Option ``key`` as a whole number at least ``least``: an int, or a whole number however
    written (``8.0``, ``"8"``), as a config's count and the CLI's flag read it (robust57: 8.0
    was refused here, taken as 8 in the job's config)."""
    from trainsim.config._build import OUT_OF_RANGE, beyond_max_int, whole_number

    v = opts[key]
    if beyond_max_int(v):  # as a config's count and the CLI's flag (robust57 lead 4)
        raise RequestError(f"options.{key}", f"options.{key}={v!r} {OUT_OF_RANGE}")
    n = whole_number(v)
    if n is None or n < least:
        raise RequestError(f"options.{key}", f"options.{key}={v!r}: expected an integer >= {least}")
    return n


def _float(opts: dict[str, Any], key: str, optional: bool = False, least: float | None = None,
           above: float | None = None, most: float | None = None) -> float | None:
    """Option ``key`` as a finite number within the CLI flag's range (None stays None if
    ``optional``), or a RequestError naming it."""
    from trainsim.config import ascii_float

    v = opts[key]
    if v is None and optional:
        return None
    try:  # as the CLI's flag reads its text (cli_guard.FiniteFloat): a bool is no number, and
        # text holds ASCII digits only ('\uff11\uff12' and '1_0' were 12 and 10; robust55)
        if isinstance(v, bool) or not isinstance(v, (int, float, str)):
            raise TypeError(v)
        x = ascii_float(v)
    except (TypeError, ValueError):
        raise RequestError(f"options.{key}", f"options.{key}={v!r}: expected a number") from None
    bounds = [f">= {least:g}" for b in [least] if b is not None and not x >= b]
    bounds += [f"> {above:g}" for b in [above] if b is not None and not x > b]
    bounds += [f"<= {most:g}" for b in [most] if b is not None and not x <= b]
    if not math.isfinite(x) or bounds:
        want = " and ".join(bounds) or "finite"
        raise RequestError(f"options.{key}", f"options.{key}={v!r}: expected a number {want}")
    return x


def _bound_gpus(n: int, field: str, limits: Limits) -> None:
    """Refuse a GPU count over the server's ``max_gpus``."""
    if n > limits.max_gpus:
        raise RequestError(field, f"{field}={n} is more GPUs than this server simulates "
                           f"(max_gpus={limits.max_gpus})")


def _flag(opts: dict[str, Any], key: str) -> bool:
    """A switch (the CLI's flag): true or false only; bool() read "no" and 0.5 as true."""
    v = opts[key]
    if not isinstance(v, bool):
        raise RequestError(f"options.{key}", f"options.{key}={v!r}: expected true or false")
    return v


def _choice(opts: dict[str, Any], key: str, choices: tuple[str, ...]) -> str:
    v = opts[key]
    if not isinstance(v, str) or v.lower() not in choices:
        raise RequestError(f"options.{key}", f"options.{key}={v!r}: expected one of "
                           f"{', '.join(choices)}")
    return v.lower()


def _text(v: Any) -> str | None:
    """An option the CLI takes as text ('8,16', '15T'): numbers and lists become that text."""
    return None if v is None else _given_text(v)


def _given_text(v: Any) -> str:
    """``_text`` of an option that is given (not None)."""
    return ",".join(str(x) for x in v) if isinstance(v, list) else str(v)
